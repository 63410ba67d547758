"""``python -m dcx.scheduler.experiments --out build/schedule [WORKLOAD …]``

Runs the nine SC18 policies with the ``event`` time model over each WORKLOAD file (and, with
``--converted``, every workload a ``nox -s convert`` run wrote) on ``--env`` (default: a
Haizea LWF's own ``<site>``, else the corpus ``setup.json``) and writes their table
(``tables.md``, ``tables.json``) and TRT, JMS and stage-time SVGs under ``workloads/``.
Files that hold no workload (a converted ``<site>``) are skipped; workloads that read
without error but cannot run on that environment (a task larger than any machine) are
listed under "Workloads not scheduled", and workloads without jobs under "Workloads without
jobs" (no metric is defined on no jobs: no table rows, no plots).

The paper's Tables XI and XII are an experiment, not this script: ``nox -s schedule`` runs
``dcx experiment examples/experiments/sc18-tables.yaml``, whose summary sets them beside
the paper's values with ``paper.verdict``.

On stderr, one line per workload: run (on which machines), or skipped and why (those
skipped for want of any environment in one line). Exit status: 0; 1 when an input could not
be read (the others are still written) or when no workload could be scheduled.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcx.converters.atomic import write_atomic
from dcx.scheduler.figures import PLOTS_MISSING, plots_available, write_plots
from dcx.scheduler.loading import load_problem, read_document
from dcx.scheduler.paper import SETUP_FILE_NAME
from dcx.scheduler.policies import Policy, all_policies
from dcx.scheduler.problem import Problem
from dcx.scheduler.report import json_number
from dcx.scheduler.runs import Run, run_policy

METRICS = ("jms_s", "njsl", "jwt_s", "trt_s")


@dataclass(frozen=True)
class PolicyResult:
    """One table row: the mean over seeds (one run for deterministic policies) and the
    range over seeds."""

    policy: str
    runs: tuple[Run, ...]

    def values(self, metric: str) -> list[float]:
        return [getattr(run.metrics.summary, metric) for run in self.runs]

    def mean(self, metric: str) -> float:
        values = self.values(metric)
        return math.fsum(values) / len(values)

    def spread(self, metric: str) -> tuple[float, float]:
        values = self.values(metric)
        return min(values), max(values)


def default_corpus() -> Path:
    root = os.environ.get("DCX_CORPUS")
    return (Path(root) if root else Path("..") / "shared" / "corpus") / "gwf"


def run_all(problem: Problem, model: str, seeds: int,
            policies: Sequence[Policy] | None = None) -> list[PolicyResult]:
    results = []
    for policy in policies or all_policies():
        seed_list: Sequence[int | None] = range(seeds) if policy.is_random else [None]
        runs = tuple(run_policy(problem, policy, model, seed) for seed in seed_list)
        results.append(PolicyResult(policy.name, runs))
    return results


def _format(value: float, metric: str) -> str:
    return f"{value:,.2f}" if metric == "njsl" else f"{value:,.1f}"


def workload_table(name: str, results: list[PolicyResult]) -> tuple[str, list[dict]]:
    lines = [f"### {name} (event time model)", "",
             "| policy | JMS [s] | NJSL | JWT [s] | TRT [s] | utilisation |",
             "|---|---|---|---|---|---|"]
    rows: list[dict[str, Any]] = []
    for result in results:
        summary = result.runs[0].metrics.summary
        lines.append(f"| {result.policy} | {_format(result.mean('jms_s'), 'jms_s')} | "
                     f"{_format(result.mean('njsl'), 'njsl')} | "
                     f"{_format(result.mean('jwt_s'), 'jwt_s')} | "
                     f"{_format(result.mean('trt_s'), 'trt_s')} | {summary.utilisation:.1%} |")
        rows.append({"policy": result.policy,
                     "measured": {metric: json_number(result.mean(metric)) for metric in METRICS}})
    return "\n".join([*lines, ""]), rows


def _slug(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(path.parts[-3:])).strip("_")


def _first_runs(results: list[PolicyResult]) -> list[Run]:
    return [result.runs[0] for result in results]


def converted_workloads(folder: Path) -> list[Path]:
    """The outputs of a ``nox -s convert`` run whose format holds workloads, from its
    report (the formats are those the declarations say hold workloads)."""
    from dcx.converters.registry import BY_NAME

    report_file = folder / "report.json"
    if not report_file.is_file():
        print(f"experiments: {report_file} not found; run `nox -s convert` first",
              file=sys.stderr)
        return []
    report = json.loads(report_file.read_text(encoding="utf-8"))
    # a topology input converted to a format that holds both parts has no workload to run
    return sorted(Path(cell["output"]) for entry in report["inputs"]
                  if entry["format"] and BY_NAME[entry["format"]].kind != "topology"
                  for cell in entry["conversions"]
                  if cell["output"] and BY_NAME[cell["target"]].kind in ("workload", "both"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dcx.scheduler.experiments",
                                     description=__doc__.split("\n\n")[1] if __doc__ else None)
    parser.add_argument("workloads", nargs="*", type=Path, metavar="WORKLOAD")
    parser.add_argument("--converted", type=Path, metavar="DIR",
                        help="also run every workload the conversion pipeline wrote to DIR "
                        "(from DIR/report.json: outputs in a format that holds workloads)")
    parser.add_argument("--out", type=Path, default=Path("build/schedule"))
    parser.add_argument("--corpus", type=Path, default=default_corpus(),
                        help="folder with setup.json, the environment by default")
    parser.add_argument("--env", type=Path, help="environment for the extra workloads")
    args = parser.parse_args(argv)

    markdown = ["# Converted workloads, all nine SC18 schedulers", ""]
    report: dict[str, Any] = {"workloads": {}}
    setup = args.corpus / SETUP_FILE_NAME
    default_environment = args.env or (setup if setup.is_file() else None)
    workloads = list(args.workloads)
    if args.converted is not None:
        workloads += converted_workloads(args.converted)
    if args.out and workloads and not plots_available():
        print(f"experiments: note: {args.out}: {PLOTS_MISSING}", file=sys.stderr)
    outcomes = [_schedule_one(workload, default_environment, args, markdown, report)
                for workload in workloads]
    _say_skipped([outcome for outcome in outcomes if outcome.skipped],
                 default_environment, args.corpus)
    unreadable = [outcome for outcome in outcomes if outcome.unreadable]
    without_workload = [o.workload for o in outcomes if o.reason == NO_WORKLOAD]
    without_jobs = [o.workload for o in outcomes if o.reason == NO_JOBS]
    unscheduled = [o for o in outcomes if o.skipped and not o.unreadable
                   and o.reason not in (NO_WORKLOAD, NO_JOBS)]
    if without_workload:
        report["without_workload"] = [str(path) for path in without_workload]
    if without_jobs:
        markdown += ["### Workloads without jobs", "",
                     "Read without error, but they hold no job to schedule:", ""]
        markdown += [f"- `{path}`" for path in without_jobs]
        markdown.append("")
        report["without_jobs"] = [str(path) for path in without_jobs]
    if unscheduled:
        markdown += ["### Workloads not scheduled", "",
                     "Read without error, but they cannot run on the environment given:", ""]
        markdown += [f"- `{o.workload}`: {o.reason}" for o in unscheduled]
        markdown.append("")
        report["unscheduled"] = {str(o.workload): o.reason for o in unscheduled}
    write_atomic(args.out / "tables.md", "\n".join(markdown).encode())
    write_atomic(args.out / "tables.json", (json.dumps(report, indent=2) + "\n").encode())
    ran = sum(outcome.ran for outcome in outcomes)
    if not ran:
        print(f"experiments: error: none of {_plural(len(workloads), 'workload')} could be "
              f"scheduled (above, why); wrote {args.out}/tables.md", file=sys.stderr)
        return 1
    print(f"experiments: scheduled {_plural(ran, 'workload')} of {len(workloads):,} with the "
          f"nine SC18 policies; wrote {args.out}/tables.md and tables.json"
          + (" and SVG plots" if plots_available() else ""), file=sys.stderr)
    return 1 if unreadable else 0


NO_WORKLOAD = "holds no workload"
NO_JOBS = "holds no job to schedule"


@dataclass(frozen=True)
class Outcome:
    """What became of one workload: run, or skipped for ``reason``."""

    workload: Path
    ran: bool = False
    reason: str = ""
    unreadable: bool = False
    """It did not read (a bad input, not a workload this environment cannot run)."""
    no_environment: bool = False

    @property
    def skipped(self) -> bool:
        return not self.ran


def _schedule_one(workload: Path, default_environment: Path | None, args: argparse.Namespace,
                  markdown: list[str], report: dict[str, Any]) -> Outcome:
    """Run the nine policies over one workload (its table into ``markdown`` and ``report``,
    its plots under ``args.out``), or say why not; one line on stderr when it runs."""
    _, document, _ = read_document(workload)
    if document is not None and document.workload is None:
        return Outcome(workload, reason=NO_WORKLOAD)
    carries_machines = document is not None and document.environment is not None and \
        any(True for _ in document.environment.machines())
    # a Haizea LWF with a <site> runs on its own machines unless --env says otherwise
    environment = default_environment if args.env or not carries_machines else None
    loaded = load_problem(workload, environment)
    if loaded.problem is None:
        errors = [d for d in loaded.diagnostics if d.is_error]
        reason = errors[0].message if errors else "cannot be scheduled"
        if len(errors) > 1:
            reason += f" (and {len(errors) - 1} more)"
        # readable, but not runnable here (a task larger than any machine, …)
        runnable_elsewhere = bool(errors) and all(d.code.startswith("schedule.")
                                                  for d in errors)
        return Outcome(workload, reason=reason, unreadable=not runnable_elsewhere,
                       no_environment=any(d.code == "schedule.no-environment"
                                          for d in errors))
    if not loaded.problem.tasks.ids:
        return Outcome(workload, reason=NO_JOBS)  # no metric is defined on no jobs
    results = run_all(loaded.problem, "event", 1)
    text, rows = workload_table(str(workload), results)
    markdown.append(text)
    report["workloads"][str(workload)] = {"rows": rows}
    write_plots(args.out / "workloads" / _slug(workload), _first_runs(results), workload.name)
    where = "its own machines" if environment is None else str(environment)
    print(f"experiments: ran {workload} ({_plural(len(loaded.problem.tasks.ids), 'task')}, "
          f"on {where})", file=sys.stderr)
    return Outcome(workload, ran=True)


def _say_skipped(skipped: Sequence[Outcome], environment: Path | None, corpus: Path) -> None:
    """One line per workload skipped, and why; the workloads skipped for want of an
    environment (no ``--env``, no corpus ``setup.json``) in one line, as they share the
    reason and the remedy."""
    without_environment = [outcome for outcome in skipped if outcome.no_environment]
    for outcome in skipped:
        if not outcome.no_environment:
            label = "error" if outcome.unreadable else "skipped"
            print(f"experiments: {label}: {outcome.workload}: {outcome.reason}", file=sys.stderr)
    if without_environment:
        print(f"experiments: skipped {_plural(len(without_environment), 'workload')} without "
              f"machines of their own: no environment to run them on (give --env, or set "
              f"DCX_CORPUS: {corpus / SETUP_FILE_NAME} not found); tables.md lists them",
              file=sys.stderr)


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


if __name__ == "__main__":
    sys.exit(main())
