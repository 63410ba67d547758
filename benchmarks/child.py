"""One way to measure a benchmark step: in a child process of its own, so that its peak
resident memory (``os.wait4``) and CPU time are that step's alone, not the benchmark's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    wall_s: float
    cpu_s: float
    """User plus system time of the child: steadier than wall time on a shared machine."""
    peak_rss_mb: float


def run_child(argv: Sequence[str], what: str, quiet: bool = False) -> Usage:
    """Run ``argv``; a failure stops the benchmark with ``what`` named."""
    started = time.perf_counter()
    output = subprocess.DEVNULL if quiet else None
    child = subprocess.Popen(list(argv), stdout=output, stderr=output)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{what} failed")
    return Usage(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def run_code(code: str, *args: str, what: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of ``python -c code args``."""
    usage = run_child([sys.executable, "-c", code, *args], what)
    return usage.wall_s, usage.cpu_s, usage.peak_rss_mb
