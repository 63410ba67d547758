"""``dcx experiment FILE [--out DIR] [--workers N | --scheduler-address ADDRESS | --cluster
slurm|pbs]`` and ``dcx experiment --report DIR``.

Exit codes: 0 every cell ran or was already stored; 1 the experiment file is not valid, an
input cannot be read or scheduled, a stored table cannot be read, or a cell failed (now or
in an earlier run, not retried; the other cells still run and are kept); 2 usage (no FILE,
Dask missing, a scheduler address that is not one or cannot be reached, an output folder
that cannot be written); 130 interrupted (Ctrl-C). Diagnostics and progress go to stderr;
the closing lines (what ran, and where the results, the failures and the summary are) to
stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only what the argument parser needs is imported here: every `dcx` call builds the
# parser; the scheduler, pyarrow and Dask load in run().
if TYPE_CHECKING:
    import pyarrow as pa

    from dcx.experiments.execute import Plan
    from dcx.experiments.progress import SweepProgress
    from dcx.experiments.store import ResultStore

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_OUT = Path("build") / "experiments"
CONNECT_TIMEOUT_S = 5.0
"""How long reaching a scheduler may take before the sweep gives up."""
SHOWN_FAILURES = 20
"""Failed cells printed one per line; the rest are counted (all are in failures.parquet)."""
CLUSTERS = ("slurm", "pbs")


def add_parser(subparsers: Any) -> None:
    """Add the ``experiment`` subcommand to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "experiment",
        help="run a sweep of workloads x environments x parameters x schedulers x seeds on "
        "Dask",
        description="Run every cell of an experiment file (YAML or JSON, "
        "schemas/experiment.schema.json): the Cartesian product of its workloads, "
        "environments, parameters (workload transforms such as load and requested-time "
        "accuracy, and scheduler options), schedulers, time models and seeds, less its "
        "exclusions. Cells run on a Dask LocalCluster of one single-threaded worker process "
        "per core, on an existing Dask cluster (--scheduler-address) or on one started on "
        "Slurm or PBS (--cluster). Results go to DIR/results.parquet, one row per run, and "
        "failed cells to DIR/failures.parquet; cells already stored are not run again (nor "
        "failed ones, without --retry-failed), so an interrupted sweep resumes where it "
        "stopped. Writes DIR/summary.md, summary.json and plots, and ends with where "
        "they are.",
        epilog="Exit codes: 0 every cell ran or was stored; 1 invalid experiment file, an "
        "input that cannot be read or scheduled, or a failed cell; 2 usage; 130 interrupted.")
    parser.add_argument("file", nargs="?", metavar="FILE", help="the experiment file")
    parser.add_argument("--out", metavar="DIR", help="results folder (default: "
                        "build/experiments/NAME, NAME the experiment's name)")
    parser.add_argument("--workers", type=int, metavar="N", help="worker processes of the "
                        "local cluster (default: one per core); 0 runs every cell in this "
                        "process, without Dask; with --cluster, the batch jobs to keep up "
                        "(default 1), each one single-threaded worker")
    parser.add_argument("--scheduler-address", metavar="ADDRESS", help="run on an existing "
                        "Dask cluster (tcp://host:8786)")
    parser.add_argument("--cluster", choices=CLUSTERS, help="start a Dask cluster of batch "
                        "jobs with dask-jobqueue (pip install 'dcx[cluster]') and run on it")
    parser.add_argument("--walltime", metavar="HH:MM:SS", default="01:00:00", help="with "
                        "--cluster: each job's walltime (default 01:00:00); its worker "
                        "leaves a few minutes before, and a new job takes its place")
    parser.add_argument("--activate", metavar="COMMAND", help="with --cluster: a shell line "
                        "each job runs first so that its worker finds dcx (source "
                        "~/venv/bin/activate, module load …)")
    parser.add_argument("--queue", metavar="NAME", help="with --cluster: the partition or "
                        "queue")
    parser.add_argument("--account", metavar="NAME", help="with --cluster: the account "
                        "charged")
    parser.add_argument("--worker-memory", metavar="SIZE", default="4GiB", help="with "
                        "--cluster: memory of each job (default 4GiB)")
    parser.add_argument("--timeout", metavar="DURATION", help="stop a cell that runs longer "
                        "(90, 90s, 5min, 2h) and record it in DIR/failures.parquet; overrides "
                        "the file's timeout")
    parser.add_argument("--memory", metavar="SIZE", help="stop a cell that needs more memory "
                        "(512MiB, 2GiB; a number is MiB) and record it in "
                        "DIR/failures.parquet; overrides the file's memory")
    parser.add_argument("--retry-failed", action="store_true", help="run again the cells "
                        "DIR/failures.parquet holds (otherwise they are skipped)")
    parser.add_argument("--progress-every", type=float, metavar="SECONDS", default=10.0,
                        help="off a terminal, a progress line this often (default 10)")
    parser.add_argument("--report", metavar="DIR", help="without FILE: write the summary and "
                        "plots of DIR/results.parquet again (DIR may also name that file), "
                        "running nothing")
    parser.add_argument("--schedules", action="store_true", help="record each cell's "
                        "schedule (a row per task: job, submit, start, finish, machines) in "
                        "DIR/schedules/CELL_KEY.parquet and draw each run's Gantt chart and "
                        "task response times; as options: {schedules: true} in the file")
    parser.add_argument("--no-plots", dest="plots", action="store_false", help="write the "
                        "summary tables only (the figures take seconds each)")
    parser.add_argument("--dry-run", action="store_true", help="say how many cells would "
                        "run and how many are stored; run nothing")


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def _usage(args: argparse.Namespace) -> str | None:
    """What is wrong with the command line, or ``None``."""
    if args.file is None:
        return None if args.report is not None else "give an experiment FILE, or --report DIR"
    if args.report is not None:
        return "--report renders a stored table; leave out FILE"
    if args.workers is not None and args.workers < 0:
        return "--workers must be 0 or more"
    if args.scheduler_address and (args.workers is not None or args.cluster):
        return ("an existing cluster (--scheduler-address) has its own workers: leave out "
                "--workers and --cluster")
    if args.cluster and args.workers == 0:
        return "--cluster needs at least one worker (--workers N)"
    if args.progress_every <= 0:
        return "--progress-every must be above 0"
    return None


def run(args: argparse.Namespace) -> int:
    problem = _usage(args)
    if problem is not None:
        _say(f"dcx experiment: error: {problem}")
        return EXIT_USAGE
    try:
        if args.file is None:
            return report_only(Path(args.report), args.plots)
        return _run_file(args)
    except KeyboardInterrupt:
        _say("dcx experiment: interrupted")
        return EXIT_INTERRUPTED


def _run_file(args: argparse.Namespace) -> int:
    from dcx.experiments.limits import Limits, parse_duration, parse_size
    from dcx.experiments.spec import load_experiment

    try:
        limits = Limits(None if args.timeout is None else parse_duration(args.timeout),
                        None if args.memory is None else parse_size(args.memory))
    except ValueError as exc:
        _say(f"dcx experiment: error: {exc}")
        return EXIT_USAGE
    experiment, diagnostics = load_experiment(Path(args.file))
    for diagnostic in diagnostics:
        _say(diagnostic.render())
    if experiment is None:
        return EXIT_INVALID
    experiment = dataclasses.replace(experiment, limits=Limits(
        limits.timeout_s if limits.timeout_s is not None else experiment.limits.timeout_s,
        limits.memory_bytes if limits.memory_bytes is not None
        else experiment.limits.memory_bytes))
    if args.schedules:
        experiment = dataclasses.replace(experiment, options=dataclasses.replace(
            experiment.options, schedules=True))
    out = Path(args.out) if args.out else DEFAULT_OUT / experiment.name
    from dcx.experiments.store import StoreError

    try:
        return _sweep(experiment, out, args)
    except StoreError as exc:
        _say(f"dcx experiment: error: {exc}")
        return EXIT_INVALID
    except OSError as exc:
        _say(f"dcx experiment: error: cannot write to {out}: {exc.strerror or exc}")
        return EXIT_USAGE


def _counts(found: Plan, stored: int, to_run: int, where: str) -> str:
    text = f"experiment {found.experiment.name}: {found.total} cell(s)"
    if found.unreadable_cells:
        text += f", {found.unreadable_cells} with an input that cannot be read"
    text += f", {stored} already stored"
    if found.failed_before:
        text += (f", {found.failed_before} failed before (in failures.parquet; "
                 "--retry-failed runs them again)")
    return text + f", {to_run} to run{where}"


def _sweep(experiment: Any, out: Path, args: argparse.Namespace) -> int:
    from dcx.converters.progress import Progress
    from dcx.experiments.execute import compile_pairs, plan
    from dcx.experiments.progress import duration_text
    from dcx.experiments.store import ResultStore

    args.plots = _plots_wanted(out, args.plots)
    store = ResultStore(out)
    store.results.compact()  # rows an interrupted run left in parts/
    store.jobs.compact()
    store.failures.compact()
    found = plan(experiment, store.stored_keys(), store.failed_keys(), args.retry_failed)
    status = EXIT_OK
    for diagnostic in found.unreadable:
        _say(diagnostic.render())
        status = EXIT_INVALID
    stored = len(found.keys) - found.pending_count - found.failed_before
    if found.failed_before:
        status = EXIT_INVALID
    if args.dry_run:
        _say(_counts(found, stored, found.pending_count, ""))
        return status

    with Progress(len(found.pending), "reading inputs") as progress:
        problems, failed = compile_pairs(found, lambda d: progress.say(d.render()),
                                         progress.advance)
    if failed:
        status = EXIT_INVALID
    to_run = sum(len(cells) for pair, cells in found.pending.items() if pair in problems)
    _say(_counts(found, stored, to_run, _where(args, to_run)))
    if experiment.limits.any and to_run:
        _say(f"experiment {experiment.name}: each cell limited to {experiment.limits.text()}")
    started = time.monotonic()
    if to_run:
        try:
            _execute(found, problems, store, args, to_run)
        except _NoCluster as exc:
            _say(f"dcx experiment: error: {exc}")
            store.close()
            return EXIT_USAGE
        except KeyboardInterrupt:
            _say(f"dcx experiment: interrupted; {store.written} finished row(s) kept in "
                 f"{out / 'results.parquet'}: run the same command again to go on")
            return EXIT_INTERRUPTED
    if store.failed:
        status = EXIT_INVALID
    table = store.results.read()
    written = _render(out, table, store.jobs.read(), experiment.name, set(found.keys),
                      args.plots)
    ran = f"ran {store.written} cell(s) in {duration_text(time.monotonic() - started)}"
    if store.failed:
        ran += f", {store.failed} failed"
    _closing(out, f"experiment {experiment.name}: {ran}", table, store,
             written, args.plots)
    return status


def _plots_wanted(out: Path, plots: bool) -> bool:
    """Whether the figures are drawn; when wanted but matplotlib (the plots extra) is
    missing, one note says so and how to get it, before anything is written."""
    from dcx.scheduler.figures import PLOTS_MISSING, plots_available

    if plots and not plots_available():
        _say(f"dcx experiment: note: {out}: {PLOTS_MISSING}")
        return False
    return plots


def _closing(out: Path, head: str, table: pa.Table | None, store: ResultStore,
             summary: bool, plots: bool) -> None:
    """The end of the output, on stdout: what ran, and where the rows, the failures and the
    summary are (the summary itself stays in its file)."""
    rows = 0 if table is None else table.num_rows
    lines = [head, f"  results:  {out / 'results.parquet'} ({rows} row(s))"]
    failed = len(store.failed_keys()) if store.failures.file.is_file() else 0
    if failed:
        lines.append(f"  failures: {store.failures.file} ({failed} cell(s); --retry-failed "
                     "runs them again)")
    if summary:
        drawn = plots and (out / "plots").is_dir()
        beside = "summary.json and plots/" if drawn else "summary.json"
        lines.append(f"  summary:  {out / 'summary.md'} ({beside} beside it)")
    print("\n".join(lines))


def _where(args: argparse.Namespace, to_run: int) -> str:
    if not to_run:
        return ""
    if args.scheduler_address:
        return f" on {args.scheduler_address}"
    if args.cluster:
        return f" on {args.workers or 1} {args.cluster} job(s)"
    if args.workers == 0:
        return " in this process"
    from dcx.converters.partitions import default_workers

    return f" on a local cluster of {args.workers or default_workers()} worker(s)"


class _NoCluster(Exception):
    pass


def check_address(address: str) -> None:
    """A scheduler address that is one and answers, within ``CONNECT_TIMEOUT_S``;
    ``_NoCluster`` saying why not (Dask's own client would take 30 s to time out, and says
    "internal error"-like things about a bad scheme)."""
    import socket

    from distributed.comm.addressing import get_address_host_port, parse_address
    from distributed.comm.registry import backends

    try:
        scheme, _ = parse_address(address, strict=True)
        if scheme not in backends:
            raise ValueError(f"unknown address scheme {scheme!r} (known: "
                             f"{', '.join(sorted(backends))})")
        if scheme not in ("tcp", "tls", "ws", "wss"):
            return  # inproc, ucx: nothing to probe with a socket
        host, port = get_address_host_port(address)
    except (ValueError, TypeError) as exc:
        raise _NoCluster(f"--scheduler-address {address}: {exc} (a Dask scheduler's address "
                         "is tcp://HOST:PORT)") from None
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise _NoCluster(f"cannot reach the Dask scheduler at {address}: {reason}") from None


def jobqueue_cluster(args: argparse.Namespace) -> Any:
    """A dask-jobqueue cluster of single-worker batch jobs, kept at ``--workers`` jobs: a
    worker leaves five minutes before its walltime (``--lifetime``), and the adaptive
    cluster submits a new job in its place; cells that were running on it run again."""
    try:
        import dask_jobqueue
    except ImportError as exc:
        raise _NoCluster("--cluster needs dask-jobqueue: pip install 'dcx[cluster]'") from exc
    walltime_s = _walltime_s(args.walltime)
    lifetime_s = max(60.0, walltime_s - 300.0)
    kind = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[args.cluster]
    options: dict[str, Any] = {
        "cores": 1, "processes": 1, "memory": _jobqueue_memory(args.worker_memory),
        "walltime": args.walltime,
        "worker_extra_args": ["--lifetime", f"{int(lifetime_s)}s", "--lifetime-stagger",
                              "60s"],
        "job_script_prologue": [args.activate] if args.activate else [],
    }
    if args.queue:
        options["queue"] = args.queue
    if args.account:
        options["account"] = args.account
    cluster = kind(**options)
    jobs = args.workers or 1
    cluster.adapt(minimum_jobs=jobs, maximum_jobs=jobs)
    return cluster


def _walltime_s(text: str) -> float:
    parts = text.split(":")
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        numbers = []
    if not 1 <= len(numbers) <= 3 or any(number < 0 for number in numbers):
        raise _NoCluster(f"--walltime {text}: give it as HH:MM:SS, MM:SS or minutes")
    if len(numbers) == 1:
        return numbers[0] * 60
    seconds = 0.0
    for number in numbers:
        seconds = seconds * 60 + number
    return seconds


def _jobqueue_memory(text: str) -> str:
    from dcx.experiments.limits import parse_size

    try:
        return f"{parse_size(text) // 2**20}MiB"
    except ValueError as exc:
        raise _NoCluster(f"--worker-memory: {exc}") from None


def _client(args: argparse.Namespace) -> tuple[Any, Any]:
    """``(cluster to close or None, client)`` for the cluster the command names."""
    from dcx.converters.partitions import default_workers, local_client

    try:
        import distributed
    except ImportError as exc:
        raise _NoCluster("Dask is not installed (pip install 'dcx[experiments]'); "
                         "--workers 0 runs the cells in this process") from exc
    if args.scheduler_address:
        check_address(args.scheduler_address)
        try:
            return None, distributed.Client(args.scheduler_address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as exc:
            raise _NoCluster(f"cannot reach the Dask scheduler at {args.scheduler_address}: "
                             f"{exc}") from exc
    if args.cluster:
        cluster = jobqueue_cluster(args)
        return cluster, distributed.Client(cluster)
    try:
        return local_client(args.workers or default_workers())
    except (OSError, TimeoutError) as exc:
        raise _NoCluster(f"cannot start a local Dask cluster: {exc}") from exc


def _execute(found: Plan, problems: dict[Any, Any], store: ResultStore,
             args: argparse.Namespace, to_run: int) -> None:
    """Run the pending cells, storing each row (or failure) as it comes."""
    from dcx.experiments.execute import Watch, run_dask, run_inline
    from dcx.experiments.progress import SweepProgress

    with SweepProgress(to_run, f"experiment {found.experiment.name}",
                       every_s=args.progress_every) as progress:
        def keep(result: Any) -> None:
            store.add(result.row, result.jobs, result.schedule)
            progress.advance()

        def fail(failure: Any) -> None:
            store.add_failure(failure.row())
            if store.failed <= SHOWN_FAILURES:
                progress.say(f"dcx experiment: error: cell {failure.key[:12]} "
                             f"({_cell_label(failure.columns)}) failed: {failure.kind}: "
                             f"{failure.message}")
            progress.advance(failed=True)

        try:
            if args.workers == 0 and not args.scheduler_address and not args.cluster:
                run_inline(found, problems, keep, fail)
                return
            cluster, client = _client(args)
            try:
                run_dask(found, problems, client, keep, fail,
                         Watch(progress.workers, progress.tick),
                         # a local cluster's workers start without the profiler
                         stop_profilers=bool(args.scheduler_address or args.cluster))
            finally:
                client.close()
                if cluster is not None:
                    cluster.close()
        finally:
            store.close()  # flushed and compacted, even when interrupted
            _more_failures(store, progress)


def _more_failures(store: ResultStore, progress: SweepProgress) -> None:
    if store.failed > SHOWN_FAILURES:
        progress.say(f"… and {store.failed - SHOWN_FAILURES} more failed cell(s): every one "
                     f"is in {store.failures.file}")


def _cell_label(columns: dict[str, Any]) -> str:
    parts = [str(columns.get(key)) for key in ("workload", "environment", "scheduler",
                                                "time_model")]
    if columns.get("seed") is not None:
        parts.append(f"seed {columns['seed']}")
    return ", ".join(parts)


def _render(out: Path, table: pa.Table | None, jobs: pa.Table | None, title: str,
            keys: set[str] | None, plots: bool) -> bool:
    """summary.md, summary.json and plots, over the rows of ``keys`` (all
    rows when ``None``); whether they were written."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from dcx.experiments.report import write_report

    if table is not None and keys is not None:
        wanted = pa.array(sorted(keys), pa.string())
        table = table.filter(pc.is_in(table.column("cell_key"), value_set=wanted))
        if jobs is not None:
            jobs = jobs.filter(pc.is_in(jobs.column("cell_key"), value_set=wanted))
    if table is None or table.num_rows == 0:
        _say("dcx experiment: no rows to report: no summary written")
        return False
    notes = write_report(out, table, jobs, f"Experiment {title}", plots)
    for note in notes:
        _say(f"dcx experiment: {note}")
    return True


def report_only(target: Path, plots: bool) -> int:
    from dcx.experiments.store import ResultStore, StoreError

    folder = target.parent if target.suffix == ".parquet" else target
    if not (folder / "results.parquet").is_file() and not (folder / "parts").is_dir():
        _say(f"dcx experiment: error: {folder} holds no results.parquet")
        return EXIT_USAGE
    plots = _plots_wanted(folder, plots)
    store = ResultStore(folder)
    try:
        table = store.results.compact()
        jobs = store.jobs.compact()
    except StoreError as exc:
        _say(f"dcx experiment: error: {exc}")
        return EXIT_INVALID
    except OSError as exc:
        _say(f"dcx experiment: error: cannot read {folder}: {exc.strerror or exc}")
        return EXIT_USAGE
    missing = [column for column in ("cell_key", "experiment", "workload", "scheduler")
               if table is not None and column not in table.column_names]
    if missing:
        _say(f"dcx experiment: error: {folder / 'results.parquet'} is not a results table "
             f"(no {', '.join(missing)} column)")
        return EXIT_INVALID
    names = sorted(set(table.column("experiment").to_pylist())) if table is not None else []
    title = ", ".join(map(str, names)) or folder.name
    written = _render(folder, table, jobs, title, None, plots)
    _closing(folder, f"experiment {title}: summary written again from the stored rows, "
             "nothing run", table, store, written, plots)
    return EXIT_OK
