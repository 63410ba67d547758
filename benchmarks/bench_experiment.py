"""A sweep of short cells on two local workers against the same sweep in one process, with
cells batched (as ``dcx experiment`` sends them: calls to a runner on each worker) and one
cell per Dask task (the baseline: the plain way to put cells on Dask, the problem scattered
once), in the same run; then the same sweep of longer cells.

The sweep: an SWF trace on its own 64 processors, five schedulers (FCFS, FCFS-EASY,
SJF-EASY, FCFS-CONSERVATIVE, SRTF-FIRSTFIT) x 20 loads (0.5 … 1.45) = 100 cells, through the
code ``dcx experiment`` runs (plan, compile the trace once, transform it per cell on the
worker, store the rows as Parquet). The short case (the goal's: at least 1.8 with
batching) has a 200-job trace, cells of a few milliseconds; the long case an 800-job
trace, cells about five times longer, batched only. Printed: each wall time (the cluster's
start-up apart, once), and the speed-up of two workers over one process, each the best of
several runs taken in turn with one-process runs while the cluster is up (one cell per task
in a series of its own, ``PLAIN_ROUNDS``). The rows of every run are checked equal.

The machine's other load takes cores from the workers, not from one process alone, so the
load average is printed with the ratio, and so is where the CPU time went in the best runs
(this process, which also holds the Dask scheduler, and each worker). The ratio the cores
would give when idle is, per round, the one-process CPU time of that round over the busier
of one worker and half of all the sweep's CPU time; its median over the rounds is printed
(with the lowest and highest), as a busy machine's CPU times vary from run to run. So is the
workers' CPU time over the one-process run's (median): the same cells cost more CPU when two
processes run them at once on a busy machine (about 1.2 at load 8, 1.0 with one worker),
which no batching removes. Last, the speed-up two independent processes give on this
machine with no Dask between them (``ceiling``): the most two workers could give here.
"""

from __future__ import annotations

import functools
import os
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcx.converters.partitions import local_client
from dcx.experiments import execute
from dcx.experiments.execute import compile_pairs, plan, run_dask, run_inline
from dcx.experiments.spec import load_experiment
from dcx.experiments.store import ResultStore

WORKERS = 2
LOADS = [round(0.5 + 0.05 * step, 2) for step in range(20)]
RUN_COLUMNS = ("wall_s", "finished_at")
SHORT_JOBS, SHORT_ROUNDS = 200, 8
PLAIN_ROUNDS = 4
"""One cell per task is measured in a series of its own, after dcx's way: it leaves a
hundred tasks' state on the scheduler and the workers, which would weigh on the rounds of
the other ways were they taken in turn with it."""
CEILING_ROUNDS = 8
LONG_JOBS, LONG_ROUNDS = 800, 2


def experiment(folder: Path, jobs: int = SHORT_JOBS) -> Path:
    chooser = random.Random(7)
    lines = ["; MaxProcs: 64"]
    submit = 0
    for job in range(1, jobs + 1):
        submit += chooser.randrange(0, 400)
        run = chooser.randrange(30, 3000)
        procs = chooser.choice((1, 2, 4, 8, 16, 32))
        lines.append(f"{job} {submit} -1 {run} {procs} -1 -1 {procs} {run * 3} -1 1 1 1 -1 1 "
                     "-1 -1 -1")
    (folder / "trace.swf").write_text("\n".join(lines) + "\n")
    path = folder / "sweep.yaml"
    path.write_text("workloads: [trace.swf]\n"
                    "schedulers: [FCFS, FCFS-EASY, SJF-EASY, FCFS-CONSERVATIVE, SRTF-FIRSTFIT]\n"
                    f"parameters: {{load: {LOADS}}}\n")
    return path


def prepared(path: Path) -> tuple[Any, dict[Any, Any]]:
    loaded, diagnostics = load_experiment(path)
    if loaded is None:
        raise SystemExit("\n".join(d.render() for d in diagnostics))
    found = plan(loaded, set())
    problems, failed = compile_pairs(found, lambda diagnostic: None)
    assert not failed and found.pending_count == 100
    return found, problems


def _fail(failure: Any) -> None:
    raise SystemExit(f"cell {failure.key} failed: {failure.message}")


def _cpu_s() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Timing:
    wall_s: float
    own_cpu_s: float
    worker_cpu_s: list[float]
    batches: int


SENT = [0]
"""Dask tasks or runner calls (batches) sent so far."""


def _counting(send: Any) -> Any:
    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        SENT[0] += 1
        return send(self, *args, **kwargs)

    return counted


def timed(out: Path, sweep: Any, client: Any) -> Timing:
    store = ResultStore(out)
    workers_before = client.run(_cpu_s)
    own_before = _cpu_s()
    sent_before = SENT[0]
    started = time.perf_counter()
    sweep(lambda result: store.add(result.row, result.jobs))
    store.close()
    wall_s = time.perf_counter() - started
    own_s = _cpu_s() - own_before
    workers_after = client.run(_cpu_s)
    return Timing(wall_s, own_s, [workers_after[name] - workers_before[name]
                                  for name in sorted(workers_before)], SENT[0] - sent_before)


def idle_ratio(timing: Timing, inline: Timing) -> float:
    """The speed-up idle cores would give: one process's CPU time over the busier of one
    worker and half of all the sweep's CPU time (this process's included)."""
    return inline.own_cpu_s / max(
        max(timing.worker_cpu_s), (timing.own_cpu_s + sum(timing.worker_cpu_s)) / WORKERS)


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _line(name: str, timing: Timing, inline: Timing, idle: list[tuple[float, float]]) -> str:
    workers = ", ".join(f"{seconds:.2f}" for seconds in timing.worker_cpu_s)
    ratios = [ratio for ratio, _ in idle]
    return (f"  {name:<36}{timing.wall_s:7.2f} s  speed-up {inline.wall_s / timing.wall_s:.2f}"
            f"  ({timing.batches} batches; CPU s: this process {timing.own_cpu_s:.2f}, workers "
            f"{workers}; on idle cores {_median(ratios):.2f}, {min(ratios):.2f} … "
            f"{max(ratios):.2f} over {len(ratios)} rounds; the workers' CPU "
            f"{_median([cells for _, cells in idle]):.2f}x one process's)")


def rows(out: Path) -> dict[str, dict[str, Any]]:
    import pyarrow.parquet as pq

    return {row["cell_key"]: {k: v for k, v in row.items() if k not in RUN_COLUMNS}
            for row in pq.read_table(out / "results.parquet").to_pylist()}


def _best_of(ways: dict[str, Any], rounds: int, folder: Path, client: Any,
             ) -> tuple[dict[str, Timing], dict[str, list[tuple[float, float]]]]:
    """Each way ``rounds`` times, interleaved, the best kept, and each Dask way's idle-core
    ratio and workers' CPU over one process's, per round (against that round's one-process
    run): the machine's other load comes and goes, and the idle workers are there for all of
    them. Every run's rows are equal."""
    best: dict[str, Timing] = {}
    idle: dict[str, list[tuple[float, float]]] = {}
    for attempt in range(rounds):
        timings = {name: timed(folder / f"{name}-{attempt}", sweep, client)
                   for name, sweep in ways.items()}
        for name, timing in timings.items():
            if name not in best or timing.wall_s < best[name].wall_s:
                best[name] = timing
            if name != "inline":
                idle.setdefault(name, []).append((
                    idle_ratio(timing, timings["inline"]),
                    sum(timing.worker_cpu_s) / timings["inline"].own_cpu_s))
    expected = rows(folder / "inline-0")
    assert all(rows(folder / f"{name}-{attempt}") == expected
               for name in ways for attempt in range(rounds))
    return best, idle


def one_task_per_cell(found: Any, problems: Any, client: Any, keep: Any) -> None:
    """Each problem scattered to every worker, then each cell a Dask task of its own."""
    from distributed import as_completed

    from dcx.experiments.cells import run_batch

    shipped = dict(zip(problems, client.scatter(list(problems.values()), broadcast=True,
                                                 hash=False), strict=True))
    futures = []
    for pair, task in execute.tasks_of(found, problems):
        futures.append(client.submit(run_batch, shipped[pair], [task], pure=False))
        SENT[0] += 1
    for future in as_completed(futures):
        for outcome in future.result():
            execute.deliver(outcome, keep, _fail)
        future.release()


def _ways(found: Any, problems: Any, client: Any, way: str) -> dict[str, Any]:
    """One process and ``way`` (``batched``, dcx's, or ``single``, one cell per task), to be
    run in turn."""
    def inline(keep: Any) -> None:
        run_inline(found, problems, keep, _fail)

    def batched(keep: Any) -> None:
        run_dask(found, problems, client, keep, _fail, stop_profilers=False)

    def one_per_task(keep: Any) -> None:
        one_task_per_cell(found, problems, client, keep)

    return {"inline": inline, way: {"batched": batched, "single": one_per_task}[way]}


Measured = tuple[dict[str, Timing], dict[str, list[tuple[float, float]]]]


def _report(title: str, batched: Measured, cells: int, rounds: int,
            single: tuple[Measured, int] | None = None) -> None:
    best, idle = batched
    inline = best["inline"]
    print(f"{title}, best of {rounds}:")
    print(f"  {'one process:':<36}{inline.wall_s:7.2f} s  "
          f"({inline.wall_s / cells * 1e3:.1f} ms per cell; CPU s {inline.own_cpu_s:.2f})")
    if single is not None:
        (plain, plain_idle), plain_rounds = single
        print(_line(f"{WORKERS} workers, one cell per task:", plain["single"],
                    plain["inline"], plain_idle["single"])
              + f" (a series of its own, best of {plain_rounds})")
    print(_line(f"{WORKERS} workers, batched (dcx's way):", best["batched"], inline,
                idle["batched"]) + (" goal >= 1.8" if single is not None else ""))


def _keep(store: ResultStore, result: Any) -> None:
    store.add(result.row, result.jobs)


def _inline_sweeps(folder: str, rounds: int) -> float:
    """Wall seconds of ``rounds`` one-process runs of the short sweep, in a process of its
    own (``ceiling``)."""
    path = Path(folder)
    found, problems = prepared(experiment(path, SHORT_JOBS))
    started = time.perf_counter()
    for attempt in range(rounds):
        store = ResultStore(path / f"ceiling-{attempt}")
        run_inline(found, problems, functools.partial(_keep, store), _fail)
        store.close()
    return time.perf_counter() - started


def ceiling(folder: Path, rounds: int = CEILING_ROUNDS) -> float:
    """The speed-up two independent processes give on this machine, no Dask between them:
    the short sweep run ``rounds`` times by one process alone, then by two at once (each its
    own copy); twice the first wall time over the second. Two workers cannot beat it: two
    busy processes share the machine's caches, memory bandwidth and whatever else the host
    gives its cores (on a VM, more than two cores' worth may be shared)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    folders = [folder / f"ceiling-{index}" for index in range(WORKERS)]
    for each in folders:
        each.mkdir()
    with ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_inline_sweeps, [str(each) for each in folders], [1] * WORKERS))  # warm
        alone = pool.submit(_inline_sweeps, str(folders[0]), rounds).result()
        started = time.perf_counter()
        list(pool.map(_inline_sweeps, [str(each) for each in folders], [rounds] * WORKERS))
        together = time.perf_counter() - started
    return WORKERS * alone / together


def main() -> None:
    execute._DaskSweep.send = _counting(execute._DaskSweep.send)  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "short").mkdir()
        (folder / "long").mkdir()
        (folder / "plain").mkdir()
        short = prepared(experiment(folder / "short", SHORT_JOBS))
        long = prepared(experiment(folder / "long", LONG_JOBS))
        started = time.perf_counter()
        cluster, client = local_client(WORKERS)
        startup_s = time.perf_counter() - started
        loads = [os.getloadavg()[0]]
        try:
            client.run(lambda: None)  # the workers are up and have imported dcx
            short_best = _best_of(_ways(*short, client, "batched"), SHORT_ROUNDS,
                                  folder / "short", client)
            plain_best = _best_of(_ways(*short, client, "single"), PLAIN_ROUNDS,
                                  folder / "plain", client)
            loads.append(os.getloadavg()[0])
            long_best = _best_of(_ways(*long, client, "batched"), LONG_ROUNDS,
                                 folder / "long", client)
            loads.append(os.getloadavg()[0])
        finally:
            client.close()
            cluster.close()
        machine = ceiling(folder)
    cells = short[0].pending_count
    print(f"{cells}-cell sweeps (5 schedulers x 20 loads), {os.cpu_count()} core(s); load "
          f"average (1 min) {loads[0]:.2f} before, {loads[1]:.2f} between, {loads[2]:.2f} "
          "after:")
    _report(f"short cells ({SHORT_JOBS}-job trace)", short_best, cells, SHORT_ROUNDS,
            (plain_best, PLAIN_ROUNDS))
    _report(f"long cells ({LONG_JOBS}-job trace)", long_best, cells, LONG_ROUNDS)
    print(f"  {'cluster start-up, once:':<36}{startup_s:7.2f} s")
    print(f"  {'two processes, no Dask:':<36}speed-up {machine:.2f}  (the short sweep "
          f"{CEILING_ROUNDS} times by one process alone, then by {WORKERS} at once: what "
          f"{WORKERS} workers could give at most on this machine)")


if __name__ == "__main__":
    main()
