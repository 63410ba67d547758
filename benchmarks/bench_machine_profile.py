"""Conservative backfilling planned machine by machine (``planners/machine_profile.py``)
against the package at ``DCX_BENCH_PROFILE_BASELINE`` (a git revision; default f68c7ab, the
last commit before the profile was kept for the whole run), in the same run.

2,000 jobs of a seeded synthetic SWF trace (``generate_swf.py``, 256 processors, offered
load 0.9) on 64 four-core machines, every job asking for cores anywhere, FCFS-CONSERVATIVE:

* cores only, planned machine by machine (``backfilling._pooled`` answers no: what a trace
  on unlike machines, or with R2/R3 filters, goes through);
* with 1 GB of memory a core on machines and jobs (a problem with memory is never pooled).

CPU seconds of the scheduling alone, each run stopped after ``DCX_BENCH_CAP_S`` seconds of
wall time (default 300) and then printed with the CPU seconds it had spent by then (its
ratio then a lower bound). The
baseline runs in a child process that imports the package extracted with ``git archive``.

``python benchmarks/bench_machine_profile.py`` (``--child`` is the child's entry)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BASELINE = os.environ.get("DCX_BENCH_PROFILE_BASELINE", "f68c7ab")
CAP_S = int(os.environ.get("DCX_BENCH_CAP_S", "300"))
JOBS, MACHINES, CORES = 2000, 64, 4


class _Stopped(Exception):
    pass


def _stop(*_: object) -> None:
    raise _Stopped


def _timed(action: Any) -> float:
    """CPU seconds of ``action``; negated when it ran past the wall-time cap (what it had
    spent by then)."""
    signal.signal(signal.SIGALRM, _stop)
    signal.alarm(CAP_S)
    started = time.process_time()
    try:
        action()
    except _Stopped:
        return -(time.process_time() - started)
    finally:
        signal.alarm(0)
    return time.process_time() - started


def _problem(memory: bool) -> Any:
    sys.path.insert(0, str(HERE))
    from generate_swf import generate

    from dcx.core.model import (
        Datacenter,
        Environment,
        Machine,
        Placement,
        ProcessingUnit,
        Rack,
        Room,
        StorageUnit,
    )
    from dcx.scheduler.loading import read_document
    from dcx.scheduler.problem import compile_problem

    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "synthetic.swf"
        trace.write_text(generate(JOBS, MACHINES * CORES, 0.9, seed=1))
        _, document, _ = read_document(trace)
    assert document is not None and document.workload is not None
    machines = tuple(
        Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=CORES),),
                memory=(StorageUnit(capacity_mb=1024.0 * CORES),) if memory else ())
        for index in range(MACHINES))
    environment = Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))
    workload = document.workload
    workload = dataclasses.replace(workload, jobs=tuple(
        dataclasses.replace(job, tasks=tuple(dataclasses.replace(task, request=dataclasses.replace(
            task.request, placement=Placement.CORES, memory_mb=1024.0 if memory else None))
            for task in job.tasks)) for job in workload.jobs))
    problem = compile_problem(workload, environment).problem
    assert problem is not None
    return problem


def measure() -> dict[str, float]:
    """Both figures, with whatever ``dcx`` is importable."""
    from dcx.scheduler import backfilling
    from dcx.scheduler.declaration import shipped_declarations
    from dcx.scheduler.runs import run_policy

    policy = shipped_declarations()["FCFS-CONSERVATIVE"]
    figures: dict[str, float] = {}
    for label, memory in (("cores only", False), ("1 GB a core", True)):
        problem = _problem(memory)
        pooled = backfilling._pooled
        backfilling._pooled = lambda problem: False
        try:
            figures[f"{JOBS:,} jobs, {MACHINES} machines, {label}"] = _timed(
                lambda p=problem: run_policy(p, policy, "event", None, False))
        finally:
            backfilling._pooled = pooled
    return figures


def baseline() -> dict[str, float] | None:
    """``measure()`` run by the package at ``BASELINE`` in a child process."""
    sys.path.insert(0, str(HERE))
    from revision import measured_at

    result: dict[str, float] | None = measured_at(BASELINE, __file__)
    return result


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"> {-value:.0f} (cap)" if value < 0 else f"{value:.2f}"


def main() -> None:
    if "--child" in sys.argv:
        print(json.dumps(measure()))
        return
    before = baseline()
    now = measure()
    label = f"at {BASELINE}" if before is not None else "no baseline (git)"
    print(f"{'FCFS-CONSERVATIVE, CPU s':<46}{label:>14}{'now':>10}{'speed-up':>10}")
    for key, value in now.items():
        old = before.get(key) if before is not None else None
        if old is None or value <= 0:
            ratio = "-"
        else:
            ratio = f"{'> ' if old < 0 else ''}{abs(old) / value:.1f}x"
        print(f"{key:<46}{_cell(old):>14}{_cell(value):>10}{ratio:>10}")


if __name__ == "__main__":
    main()
