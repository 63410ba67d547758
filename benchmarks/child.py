"""One way to measure a benchmark step: in a child process of its own, so that its peak
resident memory and CPU time are that step's alone, not the benchmark's.

The step is started by a small launcher process that waits for it (``os.wait4``) and
reports its usage. Started straight from the benchmark, a child's peak RSS would count the
benchmark's own: Linux keeps the larger of the pages a child had before ``exec`` (the
benchmark's, shared at the fork) and after, so a benchmark that had built a large input
made every step look that large."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    wall_s: float
    cpu_s: float
    """User plus system time of the child: steadier than wall time on a shared machine."""
    peak_rss_mb: float


_LAUNCHER = """
import os, subprocess, sys, time
report = int(sys.argv[1])
started = time.perf_counter()
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - started
os.write(report, f"{wall} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}".encode())
sys.exit(0 if os.waitstatus_to_exitcode(status) == 0 else 1)
"""


def run_child(argv: Sequence[str], what: str, quiet: bool = False,
              stdin: Any = None) -> Usage:
    """Run ``argv`` (reading ``stdin`` when given: a pipe's reading end); a failure stops
    the benchmark with ``what`` named."""
    output = subprocess.DEVNULL if quiet else None
    readable, writable = os.pipe()
    try:
        launcher = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(writable), *argv],
                                    stdin=stdin, stdout=output, stderr=output,
                                    pass_fds=(writable,))
        os.close(writable)
        with os.fdopen(readable, "rb") as report:
            measured = report.read().split()
    except BaseException:
        os.close(readable)
        raise
    if launcher.wait() != 0 or len(measured) != 3:
        raise SystemExit(f"{what} failed")
    wall, cpu, peak_kb = (float(value) for value in measured)
    return Usage(wall, cpu, peak_kb / 1024)


def run_code(code: str, *args: str, what: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of ``python -c code args``."""
    usage = run_child([sys.executable, "-c", code, *args], what)
    return usage.wall_s, usage.cpu_s, usage.peak_rss_mb
