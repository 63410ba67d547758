"""A sweep of short cells on two local workers against the same sweep in one process, with
cells batched (as ``dcx experiment`` sends them) and one cell per Dask task (the baseline:
how cells went out before batching), in the same run.

The sweep: a 200-job SWF trace on its own 64 processors, five schedulers (FCFS, FCFS-EASY,
SJF-EASY, FCFS-CONSERVATIVE, SRTF-FIRSTFIT) x 20 loads (0.5 … 1.45) = 100 cells of tens of
milliseconds each, through the code ``dcx experiment`` runs (plan, compile the trace once,
transform it per cell on the worker, store rows as Parquet parts). Printed: each wall time
(the cluster's start-up apart, once), and the speed-up of two workers over one process
(goal: at least 1.8 with batching), each the best of two runs taken in turn while the
cluster is up. The rows of every run are checked equal.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
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
ROUNDS = 2


def experiment(folder: Path) -> Path:
    chooser = random.Random(7)
    lines = ["; MaxProcs: 64"]
    submit = 0
    for job in range(1, 201):
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


def timed(out: Path, sweep: Any) -> float:
    store = ResultStore(out)
    started = time.perf_counter()
    sweep(lambda result: store.add(result.row, result.jobs))
    store.close()
    return time.perf_counter() - started


def rows(out: Path) -> dict[str, dict[str, Any]]:
    import pyarrow.parquet as pq

    return {row["cell_key"]: {k: v for k, v in row.items() if k not in RUN_COLUMNS}
            for row in pq.read_table(out / "results.parquet").to_pylist()}


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        found, problems = prepared(experiment(folder))
        started = time.perf_counter()
        cluster, client = local_client(WORKERS)
        startup_s = time.perf_counter() - started
        best: dict[str, float] = {}
        try:
            client.run(lambda: None)  # the workers are up and have imported dcx

            def inline(keep: Any) -> None:
                run_inline(found, problems, keep, _fail)

            def batched(keep: Any) -> None:
                run_dask(found, problems, client, keep, _fail)

            def single(keep: Any) -> None:
                saved, execute.MAX_BATCH = execute.MAX_BATCH, 1
                try:
                    run_dask(found, problems, client, keep, _fail)
                finally:
                    execute.MAX_BATCH = saved

            # each way twice, interleaved, the best kept: the machine's other load comes
            # and goes, and the idle workers are there for all three
            for attempt in range(ROUNDS):
                for name, sweep in (("inline", inline), ("batched", batched),
                                    ("single", single)):
                    seconds = timed(folder / f"{name}-{attempt}", sweep)
                    best[name] = min(best.get(name, seconds), seconds)
        finally:
            client.close()
            cluster.close()
        expected = rows(folder / "inline-0")
        assert all(rows(folder / f"{name}-{attempt}") == expected
                   for name in ("inline", "batched", "single") for attempt in range(ROUNDS))
    cells = found.pending_count
    print(f"100-cell sweep (5 schedulers x 20 loads, a 200-job trace), {os.cpu_count()} "
          f"core(s), best of {ROUNDS}:")
    print(f"  one process:                       {best['inline']:7.2f} s "
          f"({best['inline'] / cells * 1e3:.1f} ms per cell)")
    print(f"  {WORKERS} workers, one cell per task:     {best['single']:7.2f} s  "
          f"speed-up {best['inline'] / best['single']:.2f}")
    print(f"  {WORKERS} workers, batched (dcx's way):   {best['batched']:7.2f} s  "
          f"speed-up {best['inline'] / best['batched']:.2f} (goal >= 1.8)")
    print(f"  cluster start-up, once:            {startup_s:7.2f} s")


if __name__ == "__main__":
    main()
