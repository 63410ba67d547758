"""``dcx experiment FILE [--out DIR] [--workers N | --scheduler-address ADDRESS]`` and
``dcx experiment --report DIR``.

Exit codes: 0 every cell ran or was already stored; 1 the experiment file is not valid, an
input cannot be scheduled or a cell failed (the other cells still run and are kept); 2
usage (no FILE, Dask missing, a cluster that cannot be reached, an output folder that
cannot be written). Diagnostics and progress go to stderr, the summary table to stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only what the argument parser needs is imported here: every `dcx` call builds the
# parser; the scheduler, pyarrow and Dask load in run().
if TYPE_CHECKING:
    import pyarrow as pa

    from dcx.experiments.execute import Plan

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
DEFAULT_OUT = Path("build") / "experiments"


def add_parser(subparsers: Any) -> None:
    """Add the ``experiment`` subcommand to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "experiment",
        help="run a sweep of workloads x environments x schedulers x seeds on Dask",
        description="Run every cell of an experiment file (YAML or JSON, "
        "schemas/experiment.schema.json): the Cartesian product of its workloads, "
        "environments, schedulers, time models and seeds, less its exclusions. Cells run "
        "on a Dask LocalCluster of one single-threaded worker process per core, or on an "
        "existing Dask cluster (--scheduler-address). Results go to DIR/results.parquet, "
        "one row per run; cells already in it are not run again, so an interrupted sweep "
        "resumes where it stopped. Writes DIR/summary.md (also printed), summary.json and "
        "plots.",
    )
    parser.add_argument("file", nargs="?", metavar="FILE", help="the experiment file")
    parser.add_argument("--out", metavar="DIR", help="results folder (default: "
                        "build/experiments/NAME, NAME the experiment's name)")
    parser.add_argument("--workers", type=int, metavar="N", help="worker processes of the "
                        "local cluster (default: one per core); 0 runs every cell in this "
                        "process, without Dask")
    parser.add_argument("--scheduler-address", metavar="ADDRESS", help="run on an existing "
                        "Dask cluster (tcp://host:8786), e.g. one dask-jobqueue started on "
                        "Slurm or PBS")
    parser.add_argument("--report", metavar="DIR", help="without FILE: write the summary and "
                        "plots of DIR/results.parquet again (DIR may also name that file), "
                        "running nothing")
    parser.add_argument("--no-plots", dest="plots", action="store_false", help="write the "
                        "summary tables only (the figures take seconds each)")
    parser.add_argument("--dry-run", action="store_true", help="say how many cells would "
                        "run and how many are stored; run nothing")


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.file is None:
        if args.report is None:
            _say("dcx experiment: error: give an experiment FILE, or --report DIR")
            return EXIT_USAGE
        return report_only(Path(args.report), args.plots)
    if args.report is not None:
        _say("dcx experiment: error: --report renders a stored table; leave out FILE")
        return EXIT_USAGE
    if args.workers is not None and args.workers < 0:
        _say("dcx experiment: error: --workers must be 0 or more")
        return EXIT_USAGE
    if args.workers is not None and args.scheduler_address:
        _say("dcx experiment: error: --workers sizes the local cluster; an existing cluster "
             "(--scheduler-address) has its own workers")
        return EXIT_USAGE
    from dcx.experiments.spec import load_experiment

    experiment, diagnostics = load_experiment(Path(args.file))
    for diagnostic in diagnostics:
        _say(diagnostic.render())
    if experiment is None:
        return EXIT_INVALID
    out = Path(args.out) if args.out else DEFAULT_OUT / experiment.name
    try:
        return _sweep(experiment, out, args)
    except OSError as exc:
        _say(f"dcx experiment: error: cannot write to {out}: {exc.strerror or exc}")
        return EXIT_USAGE


def _sweep(experiment: Any, out: Path, args: argparse.Namespace) -> int:
    from dcx.converters.progress import Progress
    from dcx.experiments.execute import compile_pairs, plan
    from dcx.experiments.store import ResultStore

    store = ResultStore(out)
    store.results.compact()  # rows an interrupted run left in parts/
    store.jobs.compact()
    found = plan(experiment, store.stored_keys())
    status = EXIT_OK
    for diagnostic in found.unreadable:
        _say(diagnostic.render())
        status = EXIT_INVALID
    stored = len(found.keys) - found.pending_count
    if args.dry_run:
        _say(f"experiment {experiment.name}: {len(found.keys)} cell(s), {stored} stored, "
             f"{found.pending_count} to run")
        return status

    with Progress(len(found.pending), "reading inputs") as progress:
        problems, failed = compile_pairs(found, lambda d: progress.say(d.render()),
                                         progress.advance)
    if failed:
        status = EXIT_INVALID
    to_run = sum(len(cells) for pair, cells in found.pending.items() if pair in problems)
    where = _where(args, to_run)
    _say(f"experiment {experiment.name}: {len(found.keys)} cell(s), {stored} already stored, "
         f"{to_run} to run{where}")
    failures: list[str] = []
    if to_run:
        try:
            failures = _execute(found, problems, store, args, to_run)
        except _NoCluster as exc:
            _say(f"dcx experiment: error: {exc}")
            store.close()
            return EXIT_USAGE
        except KeyboardInterrupt:
            _say(f"dcx experiment: interrupted; {store.written} finished row(s) kept in "
                 f"{out / 'results.parquet'}: run the same command again to go on")
            raise
    if failures:
        status = EXIT_INVALID
        for line in failures[:20]:
            _say(line)
        if len(failures) > 20:
            _say(f"… and {len(failures) - 20} more failed cell(s)")
    table = store.results.read()
    _render(out, table, store.jobs.read(), experiment.name, set(found.keys), args.plots)
    kept = 0 if table is None else table.num_rows
    _say(f"experiment {experiment.name}: ran {store.written} cell(s)"
         + (f", {len(failures)} failed" if failures else "")
         + f"; {out / 'results.parquet'} holds {kept} row(s); summary in {out / 'summary.md'}")
    return status


def _where(args: argparse.Namespace, to_run: int) -> str:
    if not to_run:
        return ""
    if args.scheduler_address:
        return f" on {args.scheduler_address}"
    if args.workers == 0:
        return " in this process"
    from dcx.converters.partitions import default_workers

    return f" on a local cluster of {args.workers or default_workers()} worker(s)"


class _NoCluster(Exception):
    pass


def _execute(found: Plan, problems: dict[Any, Any], store: Any, args: argparse.Namespace,
             to_run: int) -> list[str]:
    """Run the pending cells, storing each row as it comes; the failures, as lines."""
    from dcx.converters.partitions import default_workers, local_client, remote_client
    from dcx.converters.progress import Progress
    from dcx.experiments.execute import run_dask, run_inline

    failures: list[str] = []
    with Progress(to_run, "running cells") as progress:
        def keep(result: Any) -> None:
            store.add(result.row, result.jobs)
            progress.advance()

        def fail(failure: Any) -> None:
            failures.append(f"dcx experiment: error: cell {failure.key[:12]} failed: "
                            f"{failure.message}")
            progress.advance()

        try:
            if args.workers == 0 and not args.scheduler_address:
                run_inline(found, problems, keep, fail)
                return failures
            try:
                import distributed  # noqa: F401
            except ImportError as exc:
                raise _NoCluster("Dask is not installed (pip install 'dcx[experiments]'); "
                                 "--workers 0 runs the cells in this process") from exc
            cluster = None
            try:
                if args.scheduler_address:
                    client = remote_client(args.scheduler_address)
                else:
                    cluster, client = local_client(args.workers or default_workers())
            except (OSError, TimeoutError) as exc:
                raise _NoCluster(f"cannot reach the Dask scheduler: {exc}") from exc
            try:
                run_dask(found, problems, client, keep, fail)
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()
        finally:
            store.close()  # flushed and compacted, even when interrupted
    return failures


def _render(out: Path, table: pa.Table | None, jobs: pa.Table | None, title: str,
            keys: set[str] | None, plots: bool) -> None:
    """summary.md (printed too), summary.json and plots, over the rows of ``keys`` (all
    rows when ``None``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from dcx.experiments.report import write_report

    if table is None or table.num_rows == 0:
        _say("dcx experiment: no rows to report")
        return
    if keys is not None:
        wanted = pa.array(sorted(keys), pa.string())
        table = table.filter(pc.is_in(table.column("cell_key"), value_set=wanted))
        if jobs is not None:
            jobs = jobs.filter(pc.is_in(jobs.column("cell_key"), value_set=wanted))
    write_report(out, table, jobs, f"Experiment {title}", plots)
    print((out / "summary.md").read_text(encoding="utf-8"), end="")


def report_only(target: Path, plots: bool) -> int:
    from dcx.experiments.store import ResultStore

    folder = target.parent if target.suffix == ".parquet" else target
    if not (folder / "results.parquet").is_file() and not (folder / "parts").is_dir():
        _say(f"dcx experiment: error: {folder} holds no results.parquet")
        return EXIT_USAGE
    store = ResultStore(folder)
    try:
        table = store.results.compact()
        jobs = store.jobs.compact()
    except OSError as exc:
        _say(f"dcx experiment: error: cannot read {folder}: {exc.strerror or exc}")
        return EXIT_USAGE
    except Exception as exc:  # pyarrow's ArrowInvalid: not a Parquet file
        _say(f"dcx experiment: error: {folder / 'results.parquet'} is not a results table: "
             f"{exc}")
        return EXIT_INVALID
    missing = [column for column in ("cell_key", "experiment", "workload", "scheduler")
               if table is not None and column not in table.column_names]
    if missing:
        _say(f"dcx experiment: error: {folder / 'results.parquet'} is not a results table "
             f"(no {', '.join(missing)} column)")
        return EXIT_INVALID
    names = sorted(set(table.column("experiment").to_pylist())) if table is not None else []
    _render(folder, table, jobs, ", ".join(map(str, names)) or folder.name, None, plots)
    return EXIT_OK
