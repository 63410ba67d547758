"""``dcx schedule WORKLOAD [--env ENVIRONMENT] [--policy NAME[,…]] [--scheduler FILE …]``.

Exit codes: 0 the runs completed (a scheduler that cannot run the input says so on stderr
and the others still run), 1 the input cannot be scheduled by any of them (diagnostics say
where),
2 usage (unknown policy, bad option, a scheduler file that is not valid, no machines to
schedule on). Diagnostics go to stderr. ``--output json`` prints exactly one object::

    {"runs": [{"policy", "time_model", "seed", "tasks", "jobs",
               "metrics": {"trt_s", "jms_s", "njsl", "jwt_s", "makespan_s", "wait_mean_s",
                           "response_mean_s", "slowdown_mean", "bounded_slowdown_mean",
                           "utilization"}}]}
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only what the argument parser needs is imported here: every `dcx` call (the pre-commit
# hook included) builds this parser, so the engine, plots and readers load in run().
if TYPE_CHECKING:
    from collections.abc import Callable

    from dcx.scheduler.policies import Policy
    from dcx.scheduler.runs import Run

TIME_MODELS = ("sc18", "event")  # dcx.scheduler.engine.TIME_MODELS; a test keeps them equal

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``schedule`` subcommand to an argparse subparsers object (the caller adds the
    ``-q``/``-v`` options every subcommand shares)."""
    parser = subparsers.add_parser(
        "schedule",
        help="run the SC18 reference scheduler over a workload",
        description="Schedule WORKLOAD on the machines of ENVIRONMENT with one or more "
        "schedulers: the SC18 ones as T2-R5 (T2: SRTF, FIFO, RANDOM; R5: BESTFIT, FIRSTFIT, "
        "WORSTFIT), or FCFS, SJF, LJF with -EASY or -CONSERVATIVE backfilling (FCFS-EASY), "
        "or a scheduler file (stage -> policy, see schedulers/). Reports the paper's task "
        "response time (TRT), job makespan (JMS), normalised job schedule length (NJSL) and "
        "job waiting time (JWT), and makespan, waiting and response time, slowdown, bounded "
        "slowdown and utilisation. Any workload and topology format dcx reads is accepted.",
    )
    parser.add_argument("workload", metavar="WORKLOAD", help="workload file (GWF, SWF, "
                        "osp-workload JSON, Haizea LWF, …); '-' for stdin")
    parser.add_argument("--env", metavar="ENVIRONMENT", help="topology file (environment "
                        "JSON, OpenDC setup.json, …; '-' for stdin); optional when WORKLOAD "
                        "has machines (a Haizea site, an SWF MaxProcs/MaxNodes header)")
    parser.add_argument("--policy", action="append", metavar="NAME[,NAME…]",
                        help="comma-separated schedulers, and --policy may be repeated: "
                        "SRTF-BESTFIT (SC18), FCFS, "
                        "FCFS-EASY, FCFS-CONSERVATIVE, SJF-EASY, …, or the name a scheduler "
                        "file in schedulers/ declares (FCFS-EASY-PARTITION); a +STAGE-POLICY "
                        "suffix "
                        "sets a job or static-filter stage (FCFS-EASY+J3-SJF, "
                        "FIFO-FIRSTFIT+J2-WHOLE-JOB; +R3-MATCH places each task only on "
                        "machines with the os, arch and features it asks for, "
                        "+R2-PARTITION only on those of the partitions admitting its "
                        "group) (default "
                        "SRTF-BESTFIT unless "
                        "--scheduler is given)")
    parser.add_argument("--scheduler", action="append", default=[], metavar="FILE",
                        help="a scheduler declaration (JSON, schemas/scheduler.schema.json); "
                        "may be repeated")
    parser.add_argument("--time-model", choices=TIME_MODELS, default="event",
                        help="sc18: the paper's 10 s ticks and integer durations; event "
                        "(default): a cycle at every arrival, completion and state change")
    parser.add_argument("--seed", type=int, help="seed of the RANDOM policy (default: a "
                        "fresh seed, reported in the output)")
    parser.add_argument("--out", metavar="DIR", help="write per-task/per-job/per-stage CSV, "
                        "summary JSON and SVG plots here (plots need matplotlib, the plots extra: "
                        "pip install 'dcx[plots]'; without it a note says so first and "
                        "the other files are written)")
    parser.add_argument("--jobs-csv", metavar="FILE", help="write one CSV of every run's "
                        "jobs (policy, time model, seed, then submit, start, end, wait and "
                        "the machines each job ran on)")
    parser.add_argument("--output", dest="output_mode", choices=["text", "json"],
                        default="text", help="text: a table; json: one JSON object")
    return parser


def _policies(given: list[str] | None, files: list[str]) -> list[Policy]:
    from dcx.scheduler.declaration import load_declaration
    from dcx.scheduler.policies import parse_policy

    if given is None:
        given = [] if files else ["SRTF-BESTFIT"]
    names = [name for text in given for name in text.split(",") if name.strip()]
    if not names and not files:
        raise ValueError("--policy names no policy")
    chosen = [_named_policy(name, parse_policy) for name in names]
    for file_name in files:
        policy, diagnostics = load_declaration(Path(file_name))
        for diagnostic in diagnostics:
            print(diagnostic.render(), file=sys.stderr)
        if policy is None:
            raise ValueError(f"{file_name} is not a valid scheduler declaration")
        chosen.append(policy)
    return chosen


def _named_policy(name: str, parse: Callable[[str], Policy]) -> Policy:
    """``name`` as a policy name, or else the scheduler shipped in ``schedulers/`` that
    declares it (``FCFS-EASY-MATCH``); the policy name's error when neither."""
    try:
        return parse(name)
    except ValueError as unknown:
        from dcx.scheduler.declaration import shipped_declarations

        shipped = {key.upper(): policy for key, policy in shipped_declarations().items()}
        found = shipped.get(name.strip().upper())
        if found is None:
            close = difflib.get_close_matches(name.strip().upper(),
                                              [*_policy_names(), *shipped], n=1)
            if not close:
                raise
            known = str(unknown).split(": ", 1)[-1]  # what the names are made of
            raise ValueError(f"unknown policy {name!r} (did you mean {close[0]}?): "
                             f"{known}") from None
        return found


def _policy_names() -> list[str]:
    """The policy names without stage suffixes, for did-you-mean."""
    from dcx.scheduler.policies import BACKFILLING, MACHINE_SELECTIONS, TASK_ORDERS

    reserving = [f"{order}-{fill}" for order in TASK_ORDERS if order != "RANDOM"
                 for fill in BACKFILLING[2:]]
    return [*TASK_ORDERS, *reserving,
            *(f"{base}-{select}" for base in [*TASK_ORDERS, *reserving]
              for select in MACHINE_SELECTIONS)]


def _run_json(run: Run) -> dict[str, Any]:
    from dcx.scheduler.report import json_number

    summary = run.metrics.summary
    return {
        "policy": summary.policy,
        "time_model": summary.time_model,
        "seed": summary.seed,
        "tasks": summary.tasks,
        "jobs": summary.jobs,
        "metrics": {key: json_number(value) for key, value in summary.headline().items()},
    }


def _text_table(runs: list[Run]) -> str:
    # names with stage suffixes (FCFS-EASY+R3-REQUIRE[os=linux]) widen the first column
    width = max([18, *(len(run.metrics.summary.policy) + 2 for run in runs)])
    lines = [f"{'policy':<{width}}{'model':<7}{'seed':>11}{'TRT':>11}{'JMS':>11}{'NJSL':>9}"
             f"{'JWT':>11}{'wait':>11}{'BSLD':>9}{'util':>7}"]
    for run in runs:
        s = run.metrics.summary
        seed = "-" if s.seed is None else str(s.seed)
        headline = s.headline()
        lines.append(f"{s.policy:<{width}}{s.time_model:<7}{seed:>11}{s.trt_s:>11.1f}"
                     f"{s.jms_s:>11.1f}{s.njsl:>9.2f}{s.jwt_s:>11.1f}"
                     f"{headline['wait_mean_s']:>11.1f}{headline['bounded_slowdown_mean']:>9.2f}"
                     f"{s.utilisation:>7.1%}")
        if s.unfinished_tasks:
            lines.append(f"  {s.unfinished_tasks} task(s) never finished (no usable machine)")
        if s.deadline_tasks:
            lines.append(f"  {s.deadline_missed} of {s.deadline_tasks} deadline(s) missed")
        if s.killed:
            lines.append(f"  {s.killed} task(s) cut at their requested time")
        if s.lost_core_s:
            lines.append(f"  {s.requeued} requeue(s) after machine failures, "
                         f"{s.lost_core_s:g} core-s of work lost")
    return "\n".join(lines)


def write_outputs(folder: Path, runs: list[Run], title: str) -> None:
    """Per-run CSV/JSON folders plus the SVGs over all runs."""
    from dcx.scheduler.figures import write_plots
    from dcx.scheduler.report import write_run

    for run in runs:
        write_run(folder, run.schedule, run.metrics)
    write_plots(folder, runs, title)


def _say_what_stands_in(problem: Any, policies: list[Policy], workload: str,
                        quiet: bool) -> set[str]:
    """Once per invocation: which requested times the runtime stands in for, when a policy
    reads requested times (SJF, LJF, backfilling), and what the policies' R2/R3 filters make
    of what tasks ask of their machines (warnings unless ``quiet``). Returns the names of the
    policies that cannot run the problem, each said on stderr: one under whose filters a
    task could never start. The others still run."""
    from dcx.core.diagnostics import warning
    from dcx.scheduler.resource_stages import static_filter_diagnostics

    readers = [p for p in policies if p.reserves or p.task_order in ("SJF", "LJF")]
    missing = problem.tasks.requested_from_runtime
    if readers and missing and not quiet:
        print(warning(
            f"{missing} of {len(problem.tasks)} task(s) have no requested time; their "
            "runtime stands in (an exact estimate)", "schedule.runtime-as-requested",
        ).at(workload).render(), file=sys.stderr)
    found, blocked = static_filter_diagnostics(problem, policies)
    for diagnostic in found:
        if diagnostic.is_error or not quiet:
            print(diagnostic.at(workload).render(), file=sys.stderr)
    return blocked


def display_name(path: str) -> str:
    """How messages name an input: ``<stdin>`` for ``-``."""
    return "<stdin>" if path == "-" else path


class RunProgress:
    """How far one run is: a bar on a terminal (rich, through ``converters.progress``), else
    a line on stderr every ``LINE_EVERY_S`` seconds (a run shorter than that prints
    nothing). The engine reports how many tasks have arrived."""

    LINE_EVERY_S = 5.0
    STEPS = 100

    def __init__(self, label: str, total: int, enabled: bool,
                 clock: Callable[[], float] | None = None) -> None:
        import time

        from dcx.converters.progress import Progress

        self.label, self.total, self.enabled = label, total, enabled and total > 0
        self.clock = clock or time.monotonic
        self.bar = Progress(self.STEPS, f"scheduling with {label}", enabled=self.enabled)
        self.shown = 0
        self.started = self.clock()
        self.next_line = self.started + self.LINE_EVERY_S

    def __enter__(self) -> RunProgress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def __call__(self, arrived: int) -> None:
        if not self.enabled:
            return
        if self.bar.enabled:
            steps = arrived * self.STEPS // self.total
            while self.shown < steps:
                self.bar.advance()
                self.shown += 1
            return
        now = self.clock()
        if now >= self.next_line:
            self.next_line = now + self.LINE_EVERY_S
            print(f"dcx schedule: {self.label}: {arrived:,} of {self.total:,} task(s) "
                  f"arrived, {now - self.started:.0f} s", file=sys.stderr, flush=True)


def _run_all(problem: Any, policies: list[Policy], args: argparse.Namespace,
             quiet: bool) -> list[Run]:
    """Each policy over the problem, with its progress (``RunProgress``) unless quiet."""
    from dcx.scheduler.runs import run_policy

    runs: list[Run] = []
    for policy in policies:
        with RunProgress(policy.name, len(problem.tasks), not quiet) as progress:
            runs.append(run_policy(problem, policy, args.time_model, args.seed,
                                   progress=progress))
    return runs


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every run completed, 1 for unschedulable input, 2 for usage errors."""
    from dcx.core.limits import paused_gc

    # A million-job run builds tens of millions of objects and no reference cycles: the
    # collector would only rescan them (a second or two of a 1,000,000-job FCFS-EASY run).
    with paused_gc():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from dcx.scheduler.figures import PLOTS_MISSING, plots_available
    from dcx.scheduler.loading import load_problem

    try:
        policies = _policies(args.policy, args.scheduler)
    except ValueError as exc:
        print(f"dcx schedule: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    reserving = [policy.name for policy in policies if policy.reserves]
    if reserving and args.time_model != "event":
        print(f"dcx schedule: error: {', '.join(reserving)} run(s) under the event time "
              "model only; leave out --time-model sc18", file=sys.stderr)
        return EXIT_USAGE
    if args.workload == "-" and args.env == "-":
        print("dcx schedule: error: only one of WORKLOAD and --env can be '-' (stdin)",
              file=sys.stderr)
        return EXIT_USAGE
    quiet, verbose = bool(getattr(args, "quiet", False)), int(getattr(args, "verbose", 0) or 0)
    loaded = load_problem(Path(args.workload), Path(args.env) if args.env else None)
    if verbose and loaded.workload_format:
        where = (f" with the machines of {display_name(args.env)} ({loaded.environment_format})"
                 if args.env else "")
        print(f"{display_name(args.workload)}: read as {loaded.workload_format}{where}",
              file=sys.stderr)
    for diagnostic in loaded.diagnostics:
        if diagnostic.is_error or not quiet:
            print(diagnostic.render(), file=sys.stderr)
    if not loaded.ok or loaded.problem is None:
        if not loaded.diagnostics:
            print(f"{args.workload}: error: cannot be scheduled", file=sys.stderr)
        if any(d.code == "schedule.no-environment" for d in loaded.diagnostics):
            return EXIT_USAGE  # a missing --env is a usage error, not a bad workload
        return EXIT_INVALID
    refused = _say_what_stands_in(loaded.problem, policies, args.workload, quiet)
    policies = [policy for policy in policies if policy.name not in refused]
    if not policies:
        return EXIT_INVALID  # no scheduler could run it; each said why

    if args.out and not plots_available():
        print(f"dcx schedule: note: {args.out}: {PLOTS_MISSING}", file=sys.stderr)
    runs = _run_all(loaded.problem, policies, args, quiet)
    if args.jobs_csv:
        from dcx.converters.atomic import write_atomic
        from dcx.scheduler.report import runs_jobs_csv

        try:
            write_atomic(Path(args.jobs_csv),
                         runs_jobs_csv([item.metrics for item in runs]).encode())
        except OSError as exc:
            print(f"dcx schedule: error: cannot write {args.jobs_csv}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.out:
        try:
            write_outputs(Path(args.out), runs, display_name(args.workload).strip("<>")
                          if args.workload == "-" else Path(args.workload).name)
        except OSError as exc:
            print(f"dcx schedule: error: cannot write to {args.out}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.output_mode == "json":
        print(json.dumps({"runs": [_run_json(item) for item in runs]}))
    else:
        print(_text_table(runs))
    return EXIT_OK
