"""Sweeps on Dask against the same sweep in one process.

The SC18 sweep as the bench runs it: the paper's nine schedulers on the Askalon and Chronos
traces under the ``sc18`` time model, 32 seeds each (``repeat_deterministic``: the six
deterministic schedulers run 32 times too, 9 x 2 x 32 = 576 runs), through the code
``dcx experiment`` runs (plan, compile each trace once, store rows as Parquet parts), once
inline and once on a ``LocalCluster`` of two single-threaded worker processes. Printed: both
wall times, the cluster's start-up apart, and the ratio (goal: at most 0.6 on two cores).
Skipped with a message when the corpus traces are absent. ``DCX_BENCH_SEEDS`` scales the
seeds down (9 x 2 x seeds runs).

Per-cell overhead of the Dask path: 400 cells of a one-job workload, inline against the same
cells on the two-worker cluster; the Dask cost per cell is wall time x workers / cells, the
baseline a bare ``run_cell`` call.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dcx.converters.partitions import local_client
from dcx.experiments.execute import compile_pairs, plan, run_dask, run_inline
from dcx.experiments.spec import load_experiment
from dcx.experiments.store import ResultStore

WORKERS = 2
SEEDS = int(os.environ.get("DCX_BENCH_SEEDS", "32"))
OVERHEAD_CELLS = 400


def corpus() -> Path:
    root = os.environ.get("DCX_CORPUS")
    default = Path(__file__).resolve().parents[2] / "shared" / "corpus"
    return (Path(root) if root else default) / "gwf"


def sc18_experiment(folder: Path, gwf: Path) -> Path:
    schedulers = ", ".join(f"{order}-{fit}" for order in ("SRTF", "FIFO", "RANDOM")
                           for fit in ("BESTFIT", "FIRSTFIT", "WORSTFIT"))
    path = folder / "sc18.yaml"
    path.write_text(
        f"workloads: [{gwf / 'askalon_workload_ee.gwf'}, {gwf / 'chronos_exp_noscaler_ca.gwf'}]\n"
        f"environments: [{gwf / 'setup.json'}]\nschedulers: [{schedulers}]\n"
        f"time_models: [sc18]\nrepeat: {SEEDS}\noptions: {{repeat_deterministic: true}}\n")
    return path


def tiny_experiment(folder: Path) -> Path:
    (folder / "one.swf").write_text("; MaxProcs: 4\n1 0 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 1 "
                                    "-1 -1 -1\n")
    path = folder / "tiny.yaml"
    path.write_text(f"workloads: [one.swf]\nschedulers: [RANDOM-FIRSTFIT]\n"
                    f"repeat: {OVERHEAD_CELLS}\n")
    return path


def prepared(path: Path) -> tuple[Any, dict[Any, Any]]:
    experiment, diagnostics = load_experiment(path)
    if experiment is None:
        raise SystemExit("\n".join(d.render() for d in diagnostics))
    found = plan(experiment, set())
    problems, failed = compile_pairs(found, lambda diagnostic: None)
    assert not failed
    return found, problems


def sweep_inline(found: Any, problems: dict[Any, Any], out: Path) -> float:
    store = ResultStore(out)
    started = time.perf_counter()
    run_inline(found, problems, lambda r: store.add(r.row, r.jobs), _fail)
    store.close()
    return time.perf_counter() - started


def sweep_dask(found: Any, problems: dict[Any, Any], client: Any, out: Path) -> float:
    store = ResultStore(out)
    started = time.perf_counter()
    run_dask(found, problems, client, lambda r: store.add(r.row, r.jobs), _fail)
    store.close()
    return time.perf_counter() - started


def run_seconds(out: Path) -> float:
    """The runs' own wall times summed (measured inside ``run_cell``)."""
    import pyarrow.parquet as pq

    return float(sum(pq.read_table(out / "results.parquet").column("wall_s").to_pylist()))


def _fail(failure: Any) -> None:
    raise SystemExit(f"cell {failure.key} failed: {failure.message}")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        gwf = corpus()
        have_traces = all((gwf / name).is_file() for name in (
            "askalon_workload_ee.gwf", "chronos_exp_noscaler_ca.gwf", "setup.json"))
        big = prepared(sc18_experiment(folder, gwf)) if have_traces else None
        tiny = prepared(tiny_experiment(folder))

        inline_s = sweep_inline(*big, folder / "inline") if big else 0.0
        inline_runs_s = run_seconds(folder / "inline") if big else 0.0
        started = time.perf_counter()
        cluster, client = local_client(WORKERS)
        startup_s = time.perf_counter() - started
        try:
            dask_s = sweep_dask(*big, client, folder / "dask") if big else 0.0
            dask_runs_s = run_seconds(folder / "dask") if big else 0.0
            tiny_dask_s = sweep_dask(*tiny, client, folder / "tiny-dask")
        finally:
            client.close()
            cluster.close()
        tiny_inline_s = sweep_inline(*tiny, folder / "tiny-inline")

    if big:
        runs = big[0].pending_count
        print(f"SC18 sweep, 9 schedulers x 2 traces x {SEEDS} seeds = {runs} runs (sc18 "
              f"time model), {os.cpu_count()} cores:")
        print(f"  sequential, one process:        {inline_s:8.2f} s  "
              f"({inline_s / runs * 1e3:.1f} ms per run)")
        print(f"  LocalCluster, {WORKERS} workers:        {dask_s:8.2f} s  "
              f"(+ {startup_s:.2f} s cluster start-up)")
        print(f"  ratio Dask / sequential:        {dask_s / inline_s:8.2f}  (goal <= 0.6); "
              f"with start-up {(dask_s + startup_s) / inline_s:.2f}")
        print(f"  mean run inside run_cell:       inline {inline_runs_s / runs:.2f} s, on a "
              f"worker {dask_runs_s / runs:.2f} s; workers busy "
              f"{dask_runs_s / dask_s:.2f} of {WORKERS} (the rest: waiting for cells)")
    else:
        print(f"SC18 sweep skipped: the Askalon/Chronos traces and setup.json are not in {gwf} "
              "(set DCX_CORPUS)", file=sys.stderr)
    cells = tiny[0].pending_count
    bare_ms = tiny_inline_s / cells * 1e3
    dask_ms = tiny_dask_s * WORKERS / cells * 1e3
    print(f"Per-cell overhead, {cells} cells of a one-job workload:")
    print(f"  bare run_cell call (with row storage): {bare_ms:7.3f} ms per cell")
    print(f"  Dask path, {WORKERS} workers (wall x workers / cells): {dask_ms:7.3f} ms per cell")
    print(f"  overhead of the Dask path:             {dask_ms - bare_ms:7.3f} ms per cell")


if __name__ == "__main__":
    main()
