"""Every shipped scheduler on a loaded trace, FCFS-CONSERVATIVE at scale and the 18 SC18
runs, against the engine as it was before the scheduler work of issue 29, in the same run.

The baseline is the package at ``DCX_BENCH_ENGINE_BASELINE`` (a git revision; default
a2c0529, the last commit before it), extracted with ``git archive`` into a temporary folder
and run in a child process that imports it instead of the working tree: the same
measurements, the same machine, the same moment. CPU seconds of the scheduling alone
(reading and compiling apart), each run stopped after ``DCX_BENCH_CAP_S`` seconds of wall
time (default 120) and then printed as not finished.

* First, FCFS-CONSERVATIVE on 300 jobs: the first run compiles the compiled compression
  (``scheduler/planners/pooled_kernel.py``) when Numba's cache is cold, or loads it; timed
  apart, so that the figures below are the schedulers' alone.
* 10,000 jobs of a seeded synthetic SWF (``generate_swf.py``) at offered load 1.2 on its
  1,024 single-core machines, every scheduler in ``schedulers/``; the jobs ask for cores
  anywhere (``Placement.CORES``, what SWF processors mean). The baseline cannot: it reads
  them as that many one-core whole nodes, as it did.
* 100,000 jobs at offered load 0.5 under FCFS-CONSERVATIVE.
* ``dcx schedule`` end to end (reading, scheduling, metrics, the table) of 1,000,000 jobs
  at offered load 0.7 under FCFS-EASY, as a user runs it: CPU seconds of the child process
  (``DCX_BENCH_EASY_JOBS`` scales it down).
* The nine SC18 policies on Askalon and Chronos (``sc18`` time model, stage timing on),
  when the corpus is there (``DCX_CORPUS``).

``python benchmarks/bench_scheduler_policies.py`` (``--child`` is the child's entry)."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = os.environ.get("DCX_BENCH_ENGINE_BASELINE", "a2c0529")
CAP_S = int(os.environ.get("DCX_BENCH_CAP_S", "120"))
EASY_JOBS = int(os.environ.get("DCX_BENCH_EASY_JOBS", "1000000"))
TARGETS_S = {"100k load 0.5 FCFS-CONSERVATIVE": 10.0, "10k load 1.2": 5.0,
             "dcx schedule": 30.0}
"""Issue 29's targets (CPU s on 2 cores), by the start of a figure's name."""


class _Stopped(Exception):
    pass


def _stop(*_: object) -> None:
    raise _Stopped


def _timed(action: Any) -> float | None:
    """CPU seconds of ``action``, ``None`` when it ran past the wall-time cap."""
    signal.signal(signal.SIGALRM, _stop)
    signal.alarm(CAP_S)
    started = time.process_time()
    try:
        action()
    except _Stopped:
        return None
    finally:
        signal.alarm(0)
    return time.process_time() - started


def _anywhere(workload: Any) -> Any:
    """The workload with every request asking for cores anywhere, when the model has it."""
    from dcx.core import model

    placement = getattr(model, "Placement", None)
    if placement is None:
        return workload
    return dataclasses.replace(workload, jobs=tuple(dataclasses.replace(job, tasks=tuple(
        dataclasses.replace(task, request=dataclasses.replace(
            task.request, placement=placement.CORES)) for task in job.tasks))
        for job in workload.jobs))


def measure() -> dict[str, float | None]:
    """Every figure of this benchmark, with whatever ``dcx`` is importable."""
    sys.path.insert(0, str(HERE))
    from generate_swf import generate

    from dcx.scheduler.declaration import shipped_declarations
    from dcx.scheduler.loading import header_environment, read_document
    from dcx.scheduler.problem import compile_problem
    from dcx.scheduler.runs import run_policy

    figures: dict[str, float | None] = {}
    folder = Path(tempfile.mkdtemp())

    def problem_of(jobs: int, load: float) -> Any:
        trace = folder / f"synthetic-{jobs}-{load}.swf"
        trace.write_text(generate(jobs, 1024, load, seed=1))
        _, document, _ = read_document(trace)
        assert document is not None and document.workload is not None
        found = header_environment(document.workload)
        workload = _anywhere(document.workload)
        assert found is not None
        compiled = compile_problem(workload, found[0]).problem
        assert compiled is not None
        return compiled

    conservative = shipped_declarations()["FCFS-CONSERVATIVE"]
    # conservative's compiled compression is compiled (or loaded from Numba's cache) at its
    # first use: timed apart, so that the figures below are the schedulers' alone
    small = problem_of(300, 1.2)
    figures["first conservative run, 300 jobs"] = _timed(
        lambda: run_policy(small, conservative, "event", 1, False))
    loaded = problem_of(10_000, 1.2)
    for name, policy in sorted(shipped_declarations().items()):
        figures[f"10k load 1.2 {name}"] = _timed(
            lambda p=policy: run_policy(loaded, p, "event", 1, False))
    large = problem_of(100_000, 0.5)
    figures["100k load 0.5 FCFS-CONSERVATIVE"] = _timed(
        lambda: run_policy(large, conservative, "event", None, False))
    figures[f"dcx schedule {EASY_JOBS // 1000}k FCFS-EASY"] = _schedule_end_to_end(
        folder, EASY_JOBS)
    figures.update(_sc18())
    return figures


_MAIN = ("try:\n    from dcx.cli.main import main\n"
         "except ImportError:  # a baseline from before the cli layer\n"
         "    from dcx.converters.cli import main\n"
         "main()")


def _schedule_end_to_end(folder: Path, jobs: int) -> float | None:
    """CPU seconds of ``dcx schedule TRACE --policy FCFS-EASY`` in a child process (the
    package it imports: this one's, or the baseline's through ``PYTHONPATH``)."""
    from generate_swf import generate

    trace = folder / f"synthetic-{jobs}-0.7.swf"
    trace.write_text(generate(jobs, 1024, 0.7, seed=1))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        subprocess.run([sys.executable, "-c", _MAIN,
                        "schedule", str(trace), "--policy", "FCFS-EASY", "-q"],
                       check=True, capture_output=True, timeout=CAP_S * 3)
    except subprocess.TimeoutExpired:
        return None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _sc18() -> dict[str, float | None]:
    from dcx.scheduler.loading import load_problem
    from dcx.scheduler.paper import SETUP_FILE_NAME, TRACES
    from dcx.scheduler.policies import all_policies
    from dcx.scheduler.runs import run_policy

    corpus = Path(os.environ.get("DCX_CORPUS", ROOT.parent / "shared" / "corpus")) / "gwf"
    if not (corpus / SETUP_FILE_NAME).is_file():
        return {}
    problems = []
    for trace in TRACES:
        problem = load_problem(corpus / trace.file_name, corpus / SETUP_FILE_NAME).problem
        assert problem is not None, trace.file_name
        problems.append(problem)

    def all_runs() -> None:
        for problem in problems:
            for policy in all_policies():
                run_policy(problem, policy, "sc18", 0, True)

    finished = [spent for spent in (_timed(all_runs) for _ in range(3)) if spent is not None]
    return {"18 SC18 runs": min(finished) if finished else None}


def baseline() -> dict[str, float | None] | None:
    """``measure()`` run by the package at ``BASELINE`` in a child process."""
    sys.path.insert(0, str(HERE))
    from revision import measured_at

    result: dict[str, float | None] | None = measured_at(BASELINE, __file__)
    return result


def _cell(value: float | None) -> str:
    return f"> {CAP_S} s" if value is None else f"{value:.2f}"


def main() -> None:
    if "--child" in sys.argv:
        print(json.dumps(measure()))
        return
    before = baseline()
    now = measure()
    label = f"engine at {BASELINE}" if before is not None else "no baseline (git)"
    print(f"{'CPU s':<40}{label:>22}{'now':>10}{'ratio':>8}")
    for key, value in now.items():
        old = before.get(key) if before is not None else None
        ratio = (f"{value / old:.2f}" if value is not None and old else
                 ("faster" if value is not None and before is not None else "-"))
        target = next((limit for prefix, limit in TARGETS_S.items()
                       if key.startswith(prefix)), None)
        verdict = ("" if target is None else
                   f"  (target < {target:.0f} s: "
                   f"{'met' if value is not None and value < target else 'MISSED'})")
        print(f"{key:<40}{_cell(old) if before is not None else '-':>22}{_cell(value):>10}"
              f"{ratio:>8}{verdict}")


if __name__ == "__main__":
    main()
