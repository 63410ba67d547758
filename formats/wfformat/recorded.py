"""What a WfFormat execution task records of its run, as the model's trace fields: its start
(``executedAt``) as the wait since the workflow's start, its peak memory (``memoryInBytes``,
the resident set size) as the memory used per core, and its program (``command.program``)
as the application. The reader, the normal form and the writer share these rules."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

BYTES_PER_MB = 2**20
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""What ``t = 0`` stands for in a workload without a time origin, which is written with
``executedAt`` 1970-01-01T00:00:00Z."""


def instant(text: str) -> datetime | None:
    """An ISO 8601 timestamp as a ``datetime``, or ``None``."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def origin_instant(time_origin: str | None) -> datetime | None:
    """The instant ``t = 0`` stands for (the Unix epoch without a time origin), or ``None``
    when the time origin is not ISO 8601."""
    return UNIX_EPOCH if time_origin is None else instant(time_origin)


def seconds_after(origin: datetime | None, text: Any) -> float | None:
    """Seconds from ``origin`` to the timestamp ``text``; ``None`` when either is unreadable,
    one has a time zone and the other not, or ``text`` is before ``origin`` (no wait)."""
    if origin is None or not isinstance(text, str):
        return None
    moment = instant(text)
    if moment is None or (moment.tzinfo is None) != (origin.tzinfo is None):
        return None
    seconds = (moment - origin).total_seconds()
    return seconds if seconds >= 0 else None


def start_text(origin: datetime, seconds: float) -> str | None:
    """The timestamp ``seconds`` after ``origin`` (microseconds, ``origin``'s time zone), or
    ``None`` where a timestamp cannot say it."""
    if not math.isfinite(seconds):
        return None
    try:
        return (origin + timedelta(seconds=seconds)).isoformat()
    except OverflowError:
        return None


def task_start(origin: datetime | None, submit_s: float, wait_s: float | None) -> str | None:
    """A task's ``executedAt``: its start, ``submit + wait`` after ``origin``."""
    if origin is None or wait_s is None:
        return None
    return start_text(origin, submit_s + wait_s)


def normal_wait(origin: datetime | None, submit_s: float, wait_s: float | None) -> float | None:
    """The wait a task's ``executedAt`` reads back as: its start after the workflow's (every
    task of a WfFormat file is submitted when the workflow starts), to the microsecond."""
    return seconds_after(origin, task_start(origin, submit_s, wait_s))


def per_core(cores: float) -> float:
    """What a task's memory is divided by to give the model's average per core."""
    return cores if cores > 0 and math.isfinite(cores) else 1.0


def used_memory_mb(memory_bytes: float, cores: float) -> float:
    """``memoryInBytes`` (the task's resident set size) as memory used per core, MB."""
    return memory_bytes / BYTES_PER_MB / per_core(cores)


def memory_bytes(used_mb: float, cores: float) -> int | None:
    """The whole bytes ``memoryInBytes`` gives for ``used_mb`` per core, or ``None`` where it
    is not a number."""
    total = used_mb * per_core(cores) * BYTES_PER_MB
    return round(total) if math.isfinite(total) else None


def normal_used_memory(used_mb: float | None, cores: float) -> float | None:
    """The memory used per core that a written ``memoryInBytes`` reads back as."""
    if used_mb is None:
        return None
    written = memory_bytes(used_mb, cores)
    return None if written is None else used_memory_mb(written, cores)
