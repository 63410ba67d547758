"""Scheduler speed on the SC18 traces: one Askalon run per policy and all 18 (policy, trace)
runs, with and without per-stage timing. Baseline measured in the same run: a bare heap
pass over the same Askalon tasks (push every task, pop every task), the floor any
event-driven simulator pays.

The cost of scheduling resources beyond cores: the same Askalon runs with a memory
dimension added (1,024 MB per core on every machine, 1,024 MB per requested core on every
task, so memory binds exactly where cores do and the schedule must not change), against
the cores-only runs.

The scheduler against an earlier version of itself, in the same run: the project as of
``DCX_BENCH_BASELINE`` (a git revision; default the last commit before one event loop
replaced the two engines) is unpacked from git, and the 18 SC18 runs are timed in a child
process importing it and in one importing the current package, interleaved, best of three
CPU times each.

Backfilling at scale: a generated, seeded SWF (``generate_swf.py``; 1,000,000 jobs) under
FCFS-EASY on its own 1,024-processor machine, and one of 100,000 jobs at a lower offered load
under FCFS-CONSERVATIVE. The FCFS-EASY trace is timed part by part as ``dcx schedule`` runs
it (read, compile, schedule, metrics, and writing what ``--out`` and ``--jobs-csv`` write),
then as ``dcx schedule TRACE --policy FCFS-EASY -q`` end to end in a child process (wall
and CPU), judged against issue 29's 30 s; the conservative one reading and scheduling apart.
Beside each, baselines measured on the same problem in the same run: the bare heap pass (the
floor), and for FCFS-CONSERVATIVE the FCFS-EASY run of its trace (conservative re-plans
every waiting job at each early finish, EASY only the head). The parts are CPU seconds,
which other processes on a shared machine inflate far less than wall time.
``DCX_BENCH_JOBS`` scales the large trace down (the conservative one is a tenth of it)."""

from __future__ import annotations

import heapq
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_swf import generate  # a script beside this one
from revision import unpacked  # a script beside this one

from dcx.core.limits import paused_gc
from dcx.scheduler.engine import simulate, time_model
from dcx.scheduler.loading import header_environment, load_problem, read_located
from dcx.scheduler.metrics import compute_metrics
from dcx.scheduler.paper import SETUP_FILE_NAME, TRACES
from dcx.scheduler.policies import all_policies, parse_policy
from dcx.scheduler.problem import CORE_UNITS, MEMORY_UNITS, Dimension, Problem, compile_problem
from dcx.scheduler.report import runs_jobs_csv, write_run


def corpus() -> Path:
    root = os.environ.get("DCX_CORPUS")
    default = Path(__file__).resolve().parents[2] / "shared" / "corpus"
    return (Path(root) if root else default) / "gwf"


def best_of(repeats: int, action) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def heap_baseline(problem: Problem) -> None:
    heap: list[tuple[float, int]] = []
    for index, submit in enumerate(problem.tasks.submit_s):
        heapq.heappush(heap, (submit + problem.tasks.runtime_s[index], index))
    while heap:
        heapq.heappop(heap)


def with_memory(problem: Problem) -> Problem:
    """``problem`` plus a memory dimension that binds exactly where cores do."""
    per_core = 1024 * MEMORY_UNITS
    machines = replace(
        problem.machines,
        dimensions=(Dimension("memory", "memory", MEMORY_UNITS),),
        extra_capacity=(tuple(cap * per_core // CORE_UNITS for cap in problem.machines.capacity),),
    )
    tasks = replace(problem.tasks,
                    demand=[((0, need * per_core // CORE_UNITS),) for need in problem.tasks.need])
    return replace(problem, machines=machines, tasks=tasks)


BASELINE_REVISION = os.environ.get("DCX_BENCH_BASELINE", "f5cd214")

_EIGHTEEN_RUNS = """
import os, sys, time
from pathlib import Path
from dcx.scheduler.loading import load_problem
from dcx.scheduler.paper import SETUP_FILE_NAME, TRACES
from dcx.scheduler.policies import all_policies
from dcx.scheduler.runs import run_policy
folder = Path(sys.argv[1])
problems = [load_problem(folder / trace.file_name, folder / SETUP_FILE_NAME).problem
            for trace in TRACES]
for timed in (False, True):
    started = time.process_time()
    for problem in problems:
        for policy in all_policies():
            run_policy(problem, policy, "sc18", 0, timed)
    print(time.process_time() - started)
"""
"""The 18 SC18 (policy, trace) runs through ``run_policy``, without and with stage timing:
CPU seconds of each pass, one line each. Runs against whichever ``dcx`` it imports."""


def eighteen_runs(source: Path | None, traces: Path) -> tuple[float, float]:
    """CPU seconds of the 18 SC18 runs without and with stage timing, in a child process
    importing ``dcx`` from ``source`` (the installed one when ``None``)."""
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = str(source)
    output = subprocess.run([sys.executable, "-c", _EIGHTEEN_RUNS, str(traces)],
                            env=environment, capture_output=True, text=True, check=True).stdout
    plain, timed = (float(line) for line in output.split())
    return plain, timed


def cpu_best_of(repeats: int, actions: list) -> list[float]:  # type: ignore[type-arg]
    """Best CPU time of each action over ``repeats`` rounds, the actions interleaved so
    that load from other processes hits them alike."""
    best = [float("inf")] * len(actions)
    for _ in range(repeats):
        for index, action in enumerate(actions):
            started = time.process_time()
            action()
            best[index] = min(best[index], time.process_time() - started)
    return best


def against_baseline(traces: Path) -> None:
    """The scheduler now against the scheduler at ``BASELINE_REVISION`` (default: the
    last commit with two event loops), whole packages each in a child process, best of
    three interleaved rounds."""
    with tempfile.TemporaryDirectory() as folder:
        source = unpacked(BASELINE_REVISION, Path(folder))
        if source is None:
            print(f"bench_scheduler: no project at {BASELINE_REVISION} (git); not compared")
            return
        best = {"baseline": [float("inf")] * 2, "now": [float("inf")] * 2}
        for _ in range(3):
            for name, where in (("baseline", source), ("now", None)):
                best[name] = [min(a, b) for a, b in
                              zip(best[name], eighteen_runs(where, traces), strict=True)]
    print(f"18 SC18 runs (run_policy), now against {BASELINE_REVISION}, best of 3, CPU s")
    for index, label in enumerate(("no stage timing", "stage timing")):
        before, after = best["baseline"][index], best["now"][index]
        print(f"  {label:<16}{before:>8.2f}{after:>8.2f}  ratio {after / before:.2f}")


BACKFILL_JOBS = int(os.environ.get("DCX_BENCH_JOBS", "1000000"))
BACKFILL_PROCESSORS = 1024
# Offered loads the schedulers can sustain on this job mix: above them the queue grows for
# the whole trace, and conservative backfilling, which re-plans every waiting job at each
# early finish, turns quadratic.
EASY_LOAD = 0.7
CONSERVATIVE_LOAD = 0.5
EASY_TARGET_S = 30.0
"""Issue 29: ``dcx schedule`` of the 1,000,000-job trace under FCFS-EASY, end to end, under
this on 2 cores."""


def backfilling_at_scale() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / f"synthetic-{BACKFILL_JOBS}.swf"
        trace.write_text(generate(BACKFILL_JOBS, BACKFILL_PROCESSORS, EASY_LOAD, seed=1))
        easy_end_to_end(trace, Path(folder) / "out")
        jobs = BACKFILL_JOBS // 10
        trace = Path(folder) / f"synthetic-{jobs}.swf"
        trace.write_text(generate(jobs, BACKFILL_PROCESSORS, CONSERVATIVE_LOAD, seed=1))
        conservative_at_scale(trace, jobs)


def _cpu_since(started: float) -> float:
    return time.process_time() - started


def easy_end_to_end(trace: Path, out: Path) -> None:
    """FCFS-EASY on ``trace``: each part ``dcx schedule`` goes through, CPU s, then the
    command itself in a child process."""
    policy = parse_policy("FCFS-EASY")
    parts: dict[str, float] = {}
    with paused_gc():  # as load_problem and dcx schedule run
        started = time.process_time()
        _, document, diagnostics, source_map = read_located(trace)
        parts["read"] = _cpu_since(started)
        if document is None or document.workload is None:
            sys.exit(f"bench_scheduler: cannot read the synthetic trace: "
                     f"{[d.render() for d in diagnostics]}")
        started = time.process_time()
        found = header_environment(document.workload)
        assert found is not None, "the generated trace has a MaxProcs header"
        problem = compile_problem(document.workload, found[0], source_map).problem
        parts["compile"] = _cpu_since(started)
        assert problem is not None
        started = time.process_time()
        schedule = simulate(problem, policy)
        parts["schedule"] = _cpu_since(started)
        if schedule.unfinished:
            sys.exit(f"bench_scheduler: FCFS-EASY left {schedule.unfinished} jobs unfinished")
        started = time.process_time()
        metrics = compute_metrics(problem, schedule)
        parts["metrics"] = _cpu_since(started)
        started = time.process_time()
        write_run(out, schedule, metrics)
        runs_jobs_csv([metrics])
        parts["write (--out, --jobs-csv)"] = _cpu_since(started)
    jobs = len(problem.tasks)
    print(f"FCFS-EASY on {BACKFILL_PROCESSORS} processors, {jobs:,} jobs at offered load "
          f"{EASY_LOAD}, CPU s by part: " + ", ".join(
              f"{name} {seconds:.2f}" for name, seconds in parts.items()))
    print(f"  schedule {jobs / parts['schedule']:,.0f} jobs/s")
    floor = cpu_best_of(3, [lambda p=problem: heap_baseline(p)])[0]
    print(f"  baseline heap pass over the same jobs: {floor:.2f} s "
          f"({jobs / floor:,.0f} jobs/s); FCFS-EASY {parts['schedule'] / floor:,.0f}x it")
    del document, problem, schedule, metrics
    wall, cpu = _dcx_schedule(trace)
    print(f"  dcx schedule --policy FCFS-EASY end to end: {wall:.1f} s wall, {cpu:.1f} s CPU")
    if jobs == 1_000_000:
        verdict = "met" if cpu < EASY_TARGET_S else "MISSED"
        print(f"  target: under {EASY_TARGET_S:.0f} s (CPU, 2 cores): {verdict}")


def _dcx_schedule(trace: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``dcx schedule TRACE --policy FCFS-EASY -q`` in a child
    process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dcx.cli", "schedule", str(trace), "--policy",
                    "FCFS-EASY", "-q"], check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def conservative_at_scale(trace: Path, jobs: int) -> None:
    """FCFS-CONSERVATIVE on ``trace``: reading and scheduling, against the heap pass and
    FCFS-EASY on the same problem."""
    name = "FCFS-CONSERVATIVE"
    started = time.process_time()
    loaded = load_problem(trace, None)
    read_s = time.process_time() - started
    if loaded.problem is None:
        sys.exit(f"bench_scheduler: cannot load the synthetic trace: "
                 f"{[d.render() for d in loaded.diagnostics]}")
    run_s = _reserving_run(loaded.problem, name)
    print(f"{name} on {BACKFILL_PROCESSORS} processors, {jobs:,} jobs at offered load "
          f"{CONSERVATIVE_LOAD}, CPU s: read + compile {read_s:.1f} s ({jobs / read_s:,.0f} "
          f"jobs/s), schedule {run_s:.1f} s ({jobs / run_s:,.0f} jobs/s), total "
          f"{read_s + run_s:.1f} s")
    floor = cpu_best_of(3, [lambda p=loaded.problem: heap_baseline(p)])[0]
    print(f"  baseline heap pass over the same jobs: {floor:.2f} s "
          f"({jobs / floor:,.0f} jobs/s); {name} {run_s / floor:,.0f}x it")
    easy_s = _reserving_run(loaded.problem, "FCFS-EASY")
    print(f"  baseline FCFS-EASY on the same trace: {easy_s:.1f} s "
          f"({jobs / easy_s:,.0f} jobs/s); {name} {run_s / easy_s:.1f}x it")


def _reserving_run(problem: Problem, name: str) -> float:
    """CPU seconds to schedule ``problem`` under the queue planner of ``name``."""
    started = time.process_time()
    schedule = simulate(problem, parse_policy(name))
    run_s = time.process_time() - started
    if schedule.unfinished:
        sys.exit(f"bench_scheduler: {name} left {schedule.unfinished} jobs unfinished")
    return run_s


def main() -> None:
    backfilling_at_scale()
    folder = corpus()
    if not (folder / SETUP_FILE_NAME).is_file():
        print(f"bench_scheduler: corpus not found at {folder}; nothing measured")
        return
    problems: dict[str, Problem] = {}
    for trace in TRACES:
        started = time.perf_counter()
        loaded = load_problem(folder / trace.file_name, folder / SETUP_FILE_NAME)
        if loaded.problem is None:
            sys.exit(f"bench_scheduler: cannot load {trace.file_name}")
        problems[trace.name] = loaded.problem
        print(f"load {trace.name}: {len(loaded.problem.tasks):,} tasks, "
              f"{time.perf_counter() - started:.3f} s (read + compile)")
    sc18 = time_model("sc18")
    askalon = problems["Askalon"]
    against_baseline(folder)
    baseline = best_of(3, lambda: heap_baseline(askalon))
    print(f"baseline heap pass over Askalon: {baseline * 1e3:.1f} ms")
    print(f"{'policy':<18}{'no stage timing':>16}{'stage timing':>14}{'x baseline':>12}")
    for policy in all_policies():
        plain = best_of(3, lambda p=policy: simulate(askalon, p, sc18, 0, False))
        timed = best_of(3, lambda p=policy: simulate(askalon, p, sc18, 0, True))
        print(f"{policy.name:<18}{plain:>15.3f}s{timed:>13.3f}s{plain / baseline:>11.1f}x")

    def all_runs() -> None:
        for problem in problems.values():
            for policy in all_policies():
                simulate(problem, policy, sc18, 0, True)

    total = best_of(1, all_runs)
    sys.stdout.flush()
    print(f"all 18 (policy, trace) runs with stage timing: {total:.2f} s "
          f"({total / baseline:.0f}x baseline)")

    memory = with_memory(askalon)
    print(f"{'policy + memory':<18}{'cores only':>16}{'with memory':>14}{'x cores only':>14}")
    for policy in all_policies():
        cores_only = simulate(askalon, policy, sc18, 0, False)
        both = simulate(memory, policy, sc18, 0, False)
        if both.start_s != cores_only.start_s:
            sys.exit(f"bench_scheduler: {policy.name} schedules differently with memory")
        plain = best_of(3, lambda p=policy: simulate(askalon, p, sc18, 0, False))
        extra = best_of(3, lambda p=policy: simulate(memory, p, sc18, 0, False))
        print(f"{policy.name:<18}{plain:>15.3f}s{extra:>13.3f}s{extra / plain:>13.2f}x")


if __name__ == "__main__":
    main()
