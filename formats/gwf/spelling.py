"""How GWF spells what it writes, shared by the row writer (``codec``) and the column
writer (``columnar``), which both build on it: the two variants, the extras' prefix and keys,
the workflow variant's padded fields, the user and group texts the archive reads back."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from dcx.formats.gwf import WORKFLOW_COLUMNS
from dcx.formats.gwf.rules import ARCHIVE_CODES, ARCHIVE_MEASURES, ARCHIVE_TOKENS

Variant = Literal["workflow", "archive"]

EXTRA_PREFIX = "gwf:"
NPROCS_KEY = "gwf:NProcs"
REQNPROCS_KEY = "gwf:ReqNProcs"
STATUS_KEY = "gwf:Status"
"""A Status code the task's status does not give back (``dcx.parsing.traces.PLAIN_CODES``)."""
SECONDS = {"WaitTime": "wait_time_s", "AverageCPUTimeUsed": "cpu_time_s"}
"""Archive columns of recorded seconds, by their ``Task`` field."""
CODES = {"ExecutableID": "application", "QueueID": "queue", "PartitionID": "partition"}
"""Archive columns of integer codes, their decimal texts in these ``Task`` fields."""
RECORDED = frozenset({*SECONDS, *CODES, "UsedMemory", "Status"})
"""Archive columns the model has ``Task`` fields for (UsedMemory: ``used_memory_mb``, KB per
processor; Status: ``status``)."""
ARCHIVE_EXTRA_KEYS = frozenset(
    [EXTRA_PREFIX + name for name in ARCHIVE_MEASURES | ARCHIVE_CODES | ARCHIVE_TOKENS
     if name not in RECORDED] + [STATUS_KEY])
"""The ``gwf:`` extras keys of archive columns: those without a model field, and Status
codes the status does not give back."""

FIELD_WIDTH = 10

USER_TEXT = re.compile(r"0|[1-9]\d{0,17}")
"""A user or group the archive writes: UserID/GroupID are read back with ``str(int)``."""

_ROW = ", ".join([f"%-{FIELD_WIDTH}s"] * len(WORKFLOW_COLUMNS))


def pad(values: Sequence[str]) -> str:
    return _ROW % tuple(values)
