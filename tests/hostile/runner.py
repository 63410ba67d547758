"""Run one command the way a user would, under the hostile-input budgets.

Each run gets a hard address-space cap (``RLIMIT_AS``), a wall-clock timeout, and its peak
resident memory read from the kernel (``wait4``, in the small launcher ``launch.py``), so a
case that blows any budget is a test failure with numbers rather than a stuck or swapping
machine. Output goes to files, not
pipes, so a chatty child can never block on a full pipe.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SANDBOX_DIR = Path(__file__).resolve().parent / "sandbox"
LAUNCHER = Path(__file__).resolve().parent / "launch.py"

CPU_BUDGET_S = 5.0
"""The issue's budget for one case, 5 s, checked as CPU time (user + system) so that a busy
CI machine cannot fail a case that is fast, nor hide one that is slow."""
MEMORY_BUDGET_MB = 500
"""The issue's budget for one case, checked against the child's peak resident memory."""
ADDRESS_SPACE_CAP_MB = 1024
"""The hard ``RLIMIT_AS`` stop, a safety net above the budget: address space counts every
mapped library and allocator arena, not only memory in use, so the 500 MB budget itself is
checked on the child's peak resident memory."""
HARD_TIMEOUT_S = 60.0
"""Kill a child after this long (a hang); generous because wall time on a loaded machine is
many times the CPU time, and the 5 s budget is asserted on CPU time."""


@dataclass(frozen=True)
class Outcome:
    command: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    """Wall-clock time, for the report only: it depends on how busy the machine is."""
    cpu_seconds: float
    """User plus system CPU time of the child: the budgeted figure, stable under load."""
    peak_rss_mb: float
    timed_out: bool

    @property
    def lines(self) -> list[str]:
        """Every non-blank output line, stdout first."""
        return [line for line in (self.stdout + self.stderr).splitlines() if line.strip()]

    def describe(self) -> str:
        return (f"{' '.join(self.command)} -> exit {self.returncode} "
                f"in {self.cpu_seconds:.2f} s CPU "
                f"({self.seconds:.2f} s wall), "
                f"{self.peak_rss_mb:.0f} MB{' (killed: timeout)' if self.timed_out else ''}\n"
                f"stdout: {self.stdout[:2000]!r}\nstderr: {self.stderr[-2000:]!r}")


def sandbox_environment(log_file: Path, canary_dir: Path,
                        base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a child: the audit-hook guard on ``PYTHONPATH``, no debug tracebacks,
    no proxy settings that could make a library reach for the network."""
    environment = dict(os.environ if base is None else base)
    for name in ("DCX_DEBUG", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        environment.pop(name, None)
    existing = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = str(SANDBOX_DIR) + (os.pathsep + existing if existing else "")
    environment["DCX_HOSTILE_LOG"] = str(log_file)
    environment["DCX_HOSTILE_CANARY_DIR"] = str(canary_dir.resolve())
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return environment


def run_limited(command: Sequence[str], environment: Mapping[str, str], cwd: Path,
                address_space_mb: int = ADDRESS_SPACE_CAP_MB,
                timeout_s: float = HARD_TIMEOUT_S) -> Outcome:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "usage.json"
        started = time.monotonic()
        launcher = subprocess.Popen(
            [sys.executable, str(LAUNCHER), str(report), str(address_space_mb), "--",
             *command],
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd,
            env=dict(environment), start_new_session=True)
        try:
            launcher.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
        seconds = time.monotonic() - started
        usage = json.loads(report.read_text()) if report.exists() else None
        returncode = (os.waitstatus_to_exitcode(usage["status"]) if usage
                      else launcher.returncode)
        out.seek(0)
        err.seek(0)
        return Outcome(tuple(command), returncode,
                       out.read().decode("utf-8", "replace"),
                       err.read().decode("utf-8", "replace"), seconds,
                       usage["cpu_seconds"] if usage else 0.0,
                       usage["peak_rss_kb"] / 1024 if usage else 0.0, timed_out)
