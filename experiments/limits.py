"""Per-cell limits: how long a cell may run and how much memory it may add.

A cell with limits runs in a child process forked from the one that would have run it (the
``dcx experiment`` process, or a Dask worker): the compiled problem is already in memory, so
nothing is copied up front. The child caps its address space (``RLIMIT_AS``, the parent's size
plus the allowance) and sends its row back through a pipe; the parent stops it at the
timeout. A cell over either limit becomes a ``CellFailure`` of kind ``timeout`` or
``memory`` instead of holding the sweep. Without limits a cell runs in place, with no fork.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(s|sec|min|h)?\s*$")
_DURATION_UNITS = {None: 1.0, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B)?\s*$")
_SIZE_UNITS = {None: 2**20, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
               "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}

Result = TypeVar("Result")


@dataclass(frozen=True)
class Limits:
    timeout_s: float | None = None
    memory_bytes: int | None = None

    @property
    def any(self) -> bool:
        return self.timeout_s is not None or self.memory_bytes is not None

    def text(self) -> str:
        parts = []
        if self.timeout_s is not None:
            parts.append(f"timeout {self.timeout_s:g} s")
        if self.memory_bytes is not None:
            parts.append(f"memory {self.memory_bytes / 2**20:,.0f} MiB")
        return ", ".join(parts)


def parse_duration(value: object) -> float:
    """Seconds from ``90``, ``"90s"``, ``"5min"``, ``"2h"``; ``ValueError`` otherwise."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if match is None:
            raise ValueError(f"{value!r} is not a duration (seconds, or a number with s, min "
                             "or h: 90, 90s, 5min, 2h)")
        seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2)]
    if not seconds > 0:
        raise ValueError(f"a timeout must be above 0 s, not {value!r}")
    return seconds


def parse_size(value: object) -> int:
    """Bytes from ``512`` (MiB), ``"512MiB"``, ``"2GiB"``, ``"4GB"``; ``ValueError``
    otherwise."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        size = float(value) * 2**20
    else:
        match = _SIZE.match(str(value))
        if match is None:
            raise ValueError(f"{value!r} is not a memory size (MiB, or a number with KiB, MiB, "
                             "GiB, TiB, KB, MB, GB or TB: 512, 512MiB, 2GiB)")
        size = float(match.group(1)) * _SIZE_UNITS[match.group(2)]
    if not size > 0:
        raise ValueError(f"a memory limit must be above 0, not {value!r}")
    return int(size)


class LimitExceeded(Exception):
    """A cell ran past its timeout or its memory; ``kind`` is ``timeout`` or ``memory``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class ChildFailed(Exception):
    """The cell raised in its child process (the message is the child's)."""


def _address_space() -> int:
    """This process's virtual size in bytes (Linux ``/proc``; 0 where unknown)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_limited(work: Callable[[], Result], limits: Limits) -> Result:
    """``work()`` under ``limits``: in place without any, else in a forked child."""
    if not limits.any:
        return work()
    if not hasattr(os, "fork"):
        raise ChildFailed("per-cell limits need fork(), which this system does not have; "
                          "leave out timeout and memory")
    read_end, write_end = os.pipe()
    began = time.monotonic()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's lines run in the child
        os.close(read_end)
        _child(work, limits, write_end)
    os.close(write_end)
    try:
        return _await(child, read_end, limits, began)
    finally:
        os.close(read_end)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child, 0)


def _child(work: Callable[[], Any], limits: Limits,
           write_end: int) -> None:  # pragma: no cover - runs in the child
    status = 0
    try:
        if limits.memory_bytes is not None:
            import resource

            cap = _address_space() + limits.memory_bytes
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        try:
            outcome: tuple[str, Any] = ("ok", work())
        except MemoryError:
            outcome = ("memory", None)
        except Exception as exc:
            outcome = ("error", f"{type(exc).__name__}: {exc}")
        try:
            payload = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            payload = pickle.dumps(("memory", None))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def _await(child: int, read_end: int, limits: Limits, began: float) -> Any:
    chunks: list[bytes] = []
    while True:
        wait = None if limits.timeout_s is None else began + limits.timeout_s - time.monotonic()
        if wait is not None and wait <= 0:
            os.kill(child, signal.SIGKILL)
            raise LimitExceeded("timeout", f"ran longer than its timeout of "
                                f"{limits.timeout_s:g} s and was stopped")
        ready, _, _ = select.select([read_end], [], [], wait)
        if not ready:
            continue
        chunk = os.read(read_end, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    if not chunks:  # killed before it could answer (the kernel's OOM killer, a signal)
        _, status = os.waitpid(child, 0)
        reason = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                  else f"exit status {os.waitstatus_to_exitcode(status)}")
        if limits.memory_bytes is not None:
            raise LimitExceeded("memory", f"its process ended without a result ({reason}), "
                                "most likely for want of memory")
        raise ChildFailed(f"its process ended without a result ({reason})")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "memory":
        assert limits.memory_bytes is not None
        raise LimitExceeded("memory", f"needed more than its memory limit of "
                            f"{limits.memory_bytes / 2**20:,.0f} MiB and was stopped")
    if kind == "error":
        raise ChildFailed(value)
    return value
