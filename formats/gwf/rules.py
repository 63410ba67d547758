"""What each GWF column accepts, stated once.

The exact (line by line) reader checks a token with ``read_token``. The vectorised accept
path (``dcx.formats.gwf.fast``) lets through only tokens that ``FAST_TOKENS`` matches (a
subset of what ``read_token`` reads) and then applies ``accepts``, the same range rule, to
whole arrays of values. ``tests/test_gwf_fast.py`` holds the two to the same verdicts and
values.
"""

from __future__ import annotations

from typing import Any, Literal

from dcx.parsing.traces import parse_id, parse_int, parse_number

Rule = Literal["id", "time", "measure", "processors", "code", "token"]
"""``id``: an integer >= 0 or a text id; ``time``: a number >= 0; ``measure``: a number
>= 0 or -1 (unknown); ``processors``: an integer >= 1 or -1; ``code``: an integer >= -1;
``token``: any non-blank token, kept as written."""

WORKFLOW_RULES: dict[str, Rule] = {
    "WorkflowID": "id", "JobID": "id", "SubmitTime": "time", "RunTime": "measure",
    "NProcs": "processors", "ReqNProcs": "processors", "Dependencies": "id",
}
"""The workflow variant's columns (Dependencies: each of its space-separated ids)."""

ARCHIVE_MEASURES = frozenset({
    "WaitTime", "AverageCPUTimeUsed", "UsedMemory", "UsedNetwork", "UsedLocalDiskSpace",
    "ReqNetwork", "ReqLocalDiskSpace",
})
ARCHIVE_CODES = frozenset({
    "Status", "ExecutableID", "QueueID", "PartitionID", "OrigSiteID", "LastRunSiteID",
})
ARCHIVE_TOKENS = frozenset({
    "JobStructure", "JobStructureParams", "UsedResources", "ReqPlatform", "ReqResources",
    "VOID", "ProjectID",
})


def _archive_rule(name: str) -> Rule:
    if name == "JobID":
        return "id"
    if name == "SubmitTime":
        return "time"
    if name in ("NProcs", "ReqNProcs"):
        return "processors"
    if name in ARCHIVE_CODES or name in ("UserID", "GroupID"):
        return "code"
    if name in ARCHIVE_TOKENS:
        return "token"
    return "measure"  # RunTime, ReqTime, ReqMemory and the measures kept as extras


def archive_rules(columns: tuple[str, ...]) -> dict[str, Rule]:
    return {name: _archive_rule(name) for name in columns}


def read_token(rule: Rule, token: str) -> tuple[Any, bool]:
    """The token's value (``None`` when it is not one of the rule's kind) and whether the
    column accepts it."""
    if rule == "token":
        return token, True
    if rule == "id":
        identifier = parse_id(token)
        return identifier, identifier is not None
    value = parse_int(token) if rule in ("processors", "code") else parse_number(token)
    return value, value is not None and bool(accepts(rule, value))


def accepts(rule: Rule, value: Any) -> Any:
    """The rule's range test, for one number or a numpy array of them (element-wise)."""
    if rule == "time":
        return value >= 0
    if rule == "measure":
        return (value >= 0) | (value == -1)
    if rule == "processors":
        return (value >= 1) | (value == -1)
    if rule == "code":
        return value >= -1
    return value == value  # id, token: any value read is accepted


_DIGITS = "[0-9]{1,15}"
_NUMBER = f"{_DIGITS}(?:\\.[0-9]{{1,15}})?"
FAST_TOKENS: dict[Rule, str] = {
    "id": _DIGITS,
    "time": _NUMBER,
    "measure": f"-1|{_NUMBER}",
    "processors": f"-1|{_DIGITS}",
    "code": f"-1|{_DIGITS}",
    "token": f"-1|{_DIGITS}",
}
"""Full-match patterns of the tokens the vectorised path reads: plain digits (at most 15, so
a float64 holds each exactly), a decimal fraction where the rule reads numbers, ``-1`` where
the rule allows it. Any other token is for the exact path."""
