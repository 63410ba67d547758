"""The Haizea rules dcx checks beyond the XSD, each written once.

The checked path (``checked``) reports every finding at its element; the fast path
(``fast``) calls the same functions and gives up at the first finding, so the checked path
reads the document again and reports it. A rule returns its findings (``NO_FINDINGS`` when
there are none, which costs the fast path no allocation) or the value it read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Literal, NamedTuple

from dcx.core.model import StartMode
from dcx.formats.haizea.times import format_time
from dcx.formats.haizea.vocabulary import Amount, Capacity

Subject = Literal["request", "lease", "realduration", "duration", "deadline"]


class Finding(NamedTuple):
    """What one rule found, and where: ``subject`` names the element of the request it is
    about (with ``attribute``), which the checked path turns into a line and an XPath."""

    code: str
    message: str
    subject: Subject
    attribute: str | None = None
    warning: bool = False
    hint: str | None = None


NO_FINDINGS: tuple[Finding, ...] = ()


def realduration_findings(realduration: float) -> tuple[Finding, ...]:
    """A ``<realduration>`` is positive."""
    if realduration > 0:
        return NO_FINDINGS
    return (Finding(code="haizea.duration-not-positive",
                    message=f"realduration {format_time(realduration)} is not positive",
                    subject="realduration", attribute="time"),)


def lease_time_findings(duration: float | None, realduration: float | None,
                        start_mode: StartMode, start_time: float | None,
                        deadline: float | None) -> tuple[Finding, ...]:
    """A lease's times agree: a positive duration, a realduration not longer than it (1.1
    ignores a longer one; an equal one is no news: ignored or used, the lease runs for its
    duration), a deadline only with an exact start, and not before start + duration.
    ``None`` is a time that did not parse (reported as such) or is absent."""
    if duration is not None and duration > 0 and deadline is None and \
            (realduration is None or realduration <= duration):
        return NO_FINDINGS  # the usual lease, in one test
    findings: list[Finding] = []
    if duration is not None and duration <= 0:
        findings.append(Finding(code="haizea.duration-not-positive",
                                message=f"duration {format_time(duration)} is not positive",
                                subject="duration", attribute="time"))
    if realduration is not None and duration is not None and realduration > duration:
        findings.append(Finding(code="haizea.realduration-ignored",
                                message="realduration is longer than the duration; Haizea 1.1 "
                                "ignores it and the lease ends at its duration",
                                subject="lease", warning=True))
    if deadline is not None:
        if start_mode is not StartMode.EXACT:
            findings.append(Finding(code="haizea.deadline-ignored",
                                    message="a deadline without an <exact> start is ignored by "
                                    "Haizea", subject="deadline", warning=True))
        elif start_time is not None and duration is not None and \
                round(deadline * 100) < round((start_time + duration) * 100):  # 0.01 s grid
            findings.append(Finding(code="haizea.deadline-too-early",
                                    message=f"deadline {format_time(deadline)} is before start "
                                    f"+ duration ({format_time(start_time + duration)})",
                                    subject="deadline", attribute="time"))
    return tuple(findings)


PLAIN_PREEMPTIBLE: dict[str | None, bool] = {"true": True, "false": False,
                                             "True": True, "False": False}
"""The spellings of nearly every ``preemptible``, which ``preemptible`` reads without a
finding: a caller may look them up first."""


def preemptible(text: str) -> tuple[bool | None, Finding | None]:
    """``preemptible`` is true or false in any case; yes/no (the manual's and OpenNebula's
    spelling) is read with a warning, as Haizea keeps it as a truthy string."""
    known = PLAIN_PREEMPTIBLE.get(text)
    if known is not None:
        return known, None
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true", None
    if lowered in ("yes", "no"):
        return lowered == "yes", Finding(
            code="haizea.preemptible-yes-no", message=f"preemptible={text!r}: Haizea "
            "understands only true/false and keeps this as a (truthy) string", subject="lease",
            attribute="preemptible", warning=True, hint="write true or false")
    return None, Finding(code="haizea.preemptible",
                         message=f"preemptible={text!r} is not true or false", subject="lease",
                         attribute="preemptible")


class ResFinding(NamedTuple):
    """A finding about the ``<res>`` at ``position`` of its node-set."""

    position: int
    code: str
    message: str
    attribute: str | None = None
    warning: bool = False


RawRes = tuple[str, str | None, tuple[str, ...]]
"""A ``<res>`` as given: its type, its amount text (``None`` when absent) and the amount
texts of its ``<instance>`` children."""


def capacity(resources: Iterable[RawRes]) -> tuple[Capacity, list[ResFinding]]:
    """A node-set's resources: ``<instance>`` children make a multi-instance amount (an
    amount beside them is ignored), a ``<res>`` needs one or the other, and of a type given
    twice Haizea keeps the last. Amounts are valid integers (the XSD said so)."""
    amounts: dict[str, Amount] = {}
    findings: list[ResFinding] = []
    for index, (kind, text, instances) in enumerate(resources):
        amount: Amount
        if instances:
            if text is not None:
                findings.append(ResFinding(index, code="haizea.amount-ignored",
                                           message=f"<res type={kind!r}> has <instance> "
                                           "children, so Haizea ignores its amount",
                                           attribute="amount", warning=True))
            amount = tuple(int(value) for value in instances)
        elif text is None:
            findings.append(ResFinding(index, code="haizea.res-missing-amount",
                                       message=f"<res type={kind!r}> has neither an amount nor "
                                       "<instance> children"))
            continue
        else:
            amount = int(text)
        if kind in amounts:
            findings.append(ResFinding(index, code="haizea.duplicate-resource",
                                       message=f"resource type {kind!r} appears twice in one "
                                       "node-set; Haizea keeps the last", warning=True))
        amounts[kind] = amount
    return tuple(amounts.items()), findings


def attrs(pairs: Iterable[tuple[str, str]]) -> tuple[dict[str, str], list[int]]:
    """``<attr name value>`` pairs as a dict (the last of a name wins, as in Haizea) and the
    positions of the repeated names (``haizea.duplicate-attr``)."""
    values: dict[str, str] = {}
    repeated: list[int] = []
    for position, (name, value) in enumerate(pairs):
        if name in values:
            repeated.append(position)
        values[name] = value
    return values, repeated


def duplicate_attr_message(what: str, name: str) -> str:
    return f"{what} {name!r} is given twice; the last one wins"


class ArrivalOrder:
    """Requests arrive in file order (``haizea.arrival-order``): Haizea does not sort them."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last = float("-inf")

    def earlier_than(self, arrival: float) -> float | None:
        """The previous arrival when ``arrival`` comes before it, else ``None``."""
        previous = self.last
        self.last = arrival
        return previous if arrival < previous else None


def arrival_order_message(arrival: float, previous: float, count: int) -> str:
    return (f"arrival {format_time(arrival)} is earlier than the previous request's "
            f"({format_time(previous)}); {count} request(s) arrive out of order and Haizea "
            "does not sort them")


def duplicate_id_message(lease_id: int, first_line: int | None) -> str:
    """A lease id is used once (``haizea.duplicate-lease-id``)."""
    return f"lease id {lease_id} is already used (line {first_line})"


LEASE_WITHOUT_NODES = Finding(code="haizea.lease-no-nodes",
                              message="the lease asks for no node-set", subject="lease")
"""A lease asks for at least one node-set."""


def undeclared_types(used: Iterable[str], declared: Collection[str]) -> list[str]:
    """The resource types leases ask for that the site does not declare
    (``haizea.unknown-resource-type``)."""
    return [name for name in used if name not in declared]
