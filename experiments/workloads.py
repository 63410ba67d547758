"""``python -m dcx.experiments.workloads --out DIR [WORKLOAD …] [--converted DIR]``

Writes ``DIR/experiment.json``, the experiment ``dcx experiment`` runs to put the nine SC18
schedulers (``event`` time model, RANDOM with seed 0) over each WORKLOAD file and, with
``--converted``, every workload a ``nox -s convert`` run wrote: each on its own machines
when it carries them (a Haizea LWF's ``<site>``), else on ``--env`` (default: the corpus
``setup.json``). ``nox -s schedule`` runs it with ``dcx experiment DIR/experiment.json --out
DIR``, which writes the tables (``summary.md``, ``summary.json``) and plots per workload,
with each run's schedule (the ``schedules`` option) and its Gantt chart and task response
times.

Only workloads that can run go in: a file without a workload, a workload without jobs, one
without machines and no environment to run on, and one that cannot run on the machines it
gets (a task larger than any machine) are left out, each with one line on stderr saying why
(those without an environment in one line), and listed in ``DIR/not-scheduled.md``.

Exit status: 0; 1 when an input could not be read (no experiment is written then) or when
no workload can be scheduled.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dcx.scheduler.paper import SETUP_FILE_NAME
from dcx.scheduler.policies import all_policies

EXPERIMENT_FILE = "experiment.json"
NOT_SCHEDULED_FILE = "not-scheduled.md"
NO_WORKLOAD = "holds no workload"
NO_JOBS = "holds no job to schedule"
OWN_MACHINES = "own"
PREFIX = "schedule"
"""How the lines on stderr begin."""


@dataclass(frozen=True)
class Outcome:
    """What becomes of one workload: it runs (on ``environment``, ``None`` for its own
    machines, with ``tasks`` tasks), or is left out for ``reason``."""

    workload: Path
    runs: bool = False
    environment: Path | None = None
    tasks: int = 0
    reason: str = ""
    unreadable: bool = False
    """It did not read (a bad input, not a workload this environment cannot run)."""
    no_environment: bool = False


def default_corpus() -> Path:
    root = os.environ.get("DCX_CORPUS")
    return (Path(root) if root else Path("..") / "shared" / "corpus") / "gwf"


def converted_workloads(folder: Path) -> list[Path]:
    """The outputs of a ``nox -s convert`` run whose format holds workloads, from its
    report (the formats are those the declarations say hold workloads)."""
    from dcx.converters.registry import BY_NAME

    report_file = folder / "report.json"
    if not report_file.is_file():
        print(f"{PREFIX}: {report_file} not found; run `nox -s convert` first",
              file=sys.stderr)
        return []
    report = json.loads(report_file.read_text(encoding="utf-8"))
    # a topology input converted to a format that holds both parts has no workload to run
    return sorted(Path(cell["output"]) for entry in report["inputs"]
                  if entry["format"] and BY_NAME[entry["format"]].kind != "topology"
                  for cell in entry["conversions"]
                  if cell["output"] and BY_NAME[cell["target"]].kind in ("workload", "both"))


def examine(workload: Path, default_environment: Path | None, env_given: bool) -> Outcome:
    """Whether ``workload`` can run, and on what: read and compiled as ``dcx experiment``
    compiles it, with the same checks of the SC18 schedulers' filters."""
    from dcx.scheduler.loading import load_problem, read_document
    from dcx.scheduler.resource_stages import static_filter_diagnostics

    _, document, _ = read_document(workload)
    if document is not None and document.workload is None:
        return Outcome(workload, reason=NO_WORKLOAD)
    carries_machines = document is not None and document.environment is not None and \
        any(True for _ in document.environment.machines())
    # a workload with machines of its own runs on them unless --env says otherwise
    environment = default_environment if env_given or not carries_machines else None
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
    _, blocked = static_filter_diagnostics(loaded.problem, all_policies())
    if blocked:
        return Outcome(workload, reason=f"{', '.join(sorted(blocked))} could never start "
                       "some of its tasks on these machines")
    return Outcome(workload, runs=True, environment=environment,
                   tasks=len(loaded.problem.tasks.ids))


def workload_names(paths: Sequence[Path]) -> dict[Path, str]:
    """A name per path, as an experiment names a workload: its file name, with as many of
    its folders before it (joined by ``--``) as keep the names apart."""
    for depth in range(1, max((len(path.parts) for path in paths), default=1) + 1):
        names = {path: re.sub(r"[^A-Za-z0-9_.-]+", "_", "--".join(path.parts[-depth:]))
                 for path in paths}
        if len(set(names.values())) == len(names):
            return names
    raise ValueError("two workloads are the same file")


def experiment_spec(outcomes: Sequence[Outcome], name: str = "workloads") -> dict[str, object]:
    """The experiment (as its file holds it) over the workloads that run: each on its own
    machines or on the one environment the others share."""
    running = [outcome for outcome in outcomes if outcome.runs]
    names = workload_names([outcome.workload for outcome in running])
    shared = sorted({str(o.environment) for o in running if o.environment is not None})
    assert len(shared) <= 1, shared  # one default environment for every workload
    environments: list[object] = []
    if any(o.environment is None for o in running):
        environments.append(OWN_MACHINES)
    if shared:
        environments.append({"path": os.path.abspath(shared[0]),
                             "name": Path(shared[0]).name})
    exclude = []
    if len(environments) == 2:
        own = [names[o.workload] for o in running if o.environment is None]
        others = [names[o.workload] for o in running if o.environment is not None]
        exclude = [{"workload": others, "environment": OWN_MACHINES},
                   {"workload": own, "environment": Path(shared[0]).name}]
    spec: dict[str, object] = {
        "name": name,
        "description": "The nine SC18 schedulers over each workload, on its own machines or "
                       "on the environment given.",
        "workloads": [{"path": os.path.abspath(o.workload), "name": names[o.workload]}
                      for o in running],
        "environments": environments,
        "schedulers": [policy.name for policy in all_policies()],
        "time_models": ["event"],
        "repeat": 1,
        # schedules: each run's Gantt chart and the task response times, as the per-run
        # plots of `nox -s schedule` have always been
        "options": {"per_job": True, "measure_stages": True, "schedules": True},
    }
    if exclude:
        spec["exclude"] = exclude
    return spec


def not_scheduled_markdown(outcomes: Sequence[Outcome]) -> str | None:
    """The workloads left out, by reason; ``None`` when every one runs."""
    sections = (
        ("Files without a workload", "They hold machines only:",
         [o for o in outcomes if o.reason == NO_WORKLOAD]),
        ("Workloads without jobs", "Read without error, but they hold no job to schedule:",
         [o for o in outcomes if o.reason == NO_JOBS]),
        ("Workloads not scheduled", "They cannot run on the machines they would get:",
         [o for o in outcomes if not o.runs and not o.unreadable
          and o.reason not in (NO_WORKLOAD, NO_JOBS)]),
        ("Workloads that did not read", "", [o for o in outcomes if o.unreadable]),
    )
    lines = ["# Workloads left out", ""]
    for title, lead, members in sections:
        if not members:
            continue
        lines += [f"## {title}", ""] + ([lead, ""] if lead else [])
        lines += [f"- `{o.workload}`" + ("" if o.reason in (NO_WORKLOAD, NO_JOBS)
                                         else f": {o.reason}") for o in members]
        lines.append("")
    return "\n".join(lines) if len(lines) > 2 else None


def _say_outcomes(outcomes: Sequence[Outcome], corpus: Path) -> None:
    """One line per workload: what it runs on, or why it is left out; those left out for
    want of an environment in one line, as they share the reason and the remedy."""
    for outcome in outcomes:
        if outcome.runs:
            where = ("its own machines" if outcome.environment is None
                     else str(outcome.environment))
            print(f"{PREFIX}: {outcome.workload}: {_plural(outcome.tasks, 'task')}, on "
                  f"{where}", file=sys.stderr)
        elif not outcome.no_environment:
            label = "error" if outcome.unreadable else "skipped"
            print(f"{PREFIX}: {label}: {outcome.workload}: {outcome.reason}", file=sys.stderr)
    without = [outcome for outcome in outcomes if outcome.no_environment]
    if without:
        print(f"{PREFIX}: skipped {_plural(len(without), 'workload')} without machines of "
              f"their own: no environment to run them on (give --env, or set DCX_CORPUS: "
              f"{corpus / SETUP_FILE_NAME} not found); {NOT_SCHEDULED_FILE} lists them",
              file=sys.stderr)


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def main(argv: Sequence[str] | None = None) -> int:
    from dcx.converters.atomic import write_atomic

    parser = argparse.ArgumentParser(prog="python -m dcx.experiments.workloads",
                                     description=__doc__.split("\n\n")[1] if __doc__ else None)
    parser.add_argument("workloads", nargs="*", type=Path, metavar="WORKLOAD")
    parser.add_argument("--converted", type=Path, metavar="DIR",
                        help="also every workload the conversion pipeline wrote to DIR "
                        "(from DIR/report.json: outputs in a format that holds workloads)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help=f"where {EXPERIMENT_FILE} (and {NOT_SCHEDULED_FILE}) go")
    parser.add_argument("--corpus", type=Path, default=default_corpus(),
                        help="folder with setup.json, the environment by default")
    parser.add_argument("--env", type=Path, help="the environment of workloads without "
                        "machines of their own (and of all, when given)")
    args = parser.parse_args(argv)

    setup = args.corpus / SETUP_FILE_NAME
    default_environment = args.env or (setup if setup.is_file() else None)
    workloads = list(dict.fromkeys(args.workloads))
    if args.converted is not None:
        workloads += [path for path in converted_workloads(args.converted)
                      if path not in workloads]
    outcomes = [examine(path, default_environment, args.env is not None) for path in workloads]
    _say_outcomes(outcomes, args.corpus)
    left_out = not_scheduled_markdown(outcomes)
    experiment = args.out / EXPERIMENT_FILE
    (args.out / NOT_SCHEDULED_FILE).unlink(missing_ok=True)
    experiment.unlink(missing_ok=True)
    if left_out is not None:
        write_atomic(args.out / NOT_SCHEDULED_FILE, left_out.encode())
    running = sum(outcome.runs for outcome in outcomes)
    if any(outcome.unreadable for outcome in outcomes) or not running:
        why = ("an input did not read" if running
               else f"none of {_plural(len(workloads), 'workload')} can be scheduled")
        print(f"{PREFIX}: error: {why} (above, why); no experiment written", file=sys.stderr)
        return 1
    spec = experiment_spec(outcomes)
    write_atomic(experiment, (json.dumps(spec, indent=2) + "\n").encode())
    print(f"{PREFIX}: {_plural(running, 'workload')} of {len(workloads):,} to schedule with "
          f"the nine SC18 policies: dcx experiment {experiment} --out {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
