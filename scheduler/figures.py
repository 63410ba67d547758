"""The figures of scheduler runs written to a folder (``dcx schedule --out`` and the
``nox -s schedule`` sweep): CDFs, utilisation over time, time per stage and Gantt charts,
drawn by ``dcx.scheduler.plots`` when matplotlib (the ``plots`` extra) is installed."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dcx.scheduler.runs import Run


def write_plots(folder: Path, runs: list[Run], title: str) -> None:
    """Over all runs: CDFs of TRT, JMS, waiting time and bounded slowdown, utilisation over
    time and the time per stage; a Gantt chart per run of a small workload. SVG, drawn by
    matplotlib (the ``plots`` extra): without it a note on stderr says what was skipped."""
    from dcx.converters.atomic import write_atomic

    if not plots_available():  # said once before anything was written (PLOTS_MISSING)
        return
    from dcx.scheduler import plots
    from dcx.scheduler.engine import STAGES
    from dcx.scheduler.metrics import BOUNDED_SLOWDOWN_TAU_S
    from dcx.scheduler.report import stage_totals

    labels = [run.metrics.summary.policy for run in runs]
    named = list(zip(labels, runs, strict=True))
    model = runs[0].metrics.summary.time_model if runs else "event"
    where = f"{title}, {model} time model"

    figures = {
        "trt.svg": plots.cdf_svg(
            f"Task response time (TRT) per scheduler ({title})", "TRT [s]",
            [(label, run.metrics.turnaround_s) for label, run in named],
            f"Empirical CDF over finished tasks of TRT = finish - arrival ({where})."),
        "jms.svg": plots.cdf_svg(
            f"Job makespan (JMS) per scheduler ({title})", "JMS [s]",
            [(label, [row.makespan_s for row in run.metrics.jobs]) for label, run in named],
            f"Empirical CDF over finished jobs of JMS = last task finish - first task "
            f"arrival ({where})."),
        "wait.svg": plots.cdf_svg(
            f"Waiting time per scheduler ({title})", "waiting time [s]",
            [(label, _per_task(run, "wait")) for label, run in named],
            f"Empirical CDF over finished tasks of first start - arrival ({where})."),
        "bounded_slowdown.svg": plots.cdf_svg(
            f"Bounded slowdown per scheduler ({title})", "bounded slowdown [-]",
            [(label, _per_task(run, "bsld")) for label, run in named],
            f"Empirical CDF over finished tasks of max(1, response / max(run, "
            f"{BOUNDED_SLOWDOWN_TAU_S:g} s)) ({where})."),
    }
    utilisation = _utilisation(named)
    figures["utilisation.svg"] = plots.utilisation_svg(
        f"Utilisation over time ({title})", utilisation,
        f"Busy cores over all cores of the environment, per scheduler; runs with more than "
        f"{plots.UTILISATION_POINTS:,} changes are averaged over equal time bins ({where}).")
    stages = [(label, {stage: ns / 1e6 for stage, ns in stage_totals(run.schedule).items()})
              for label, run in named]
    figures["stages.svg"] = plots.stacked_bars_svg(
        f"Scheduler time per stage ({title})", "wall time [ms]", STAGES, stages,
        "Wall time of the SC18 planner's stages summed over the run's cycles: T1 task "
        "eligibility, T2 task ordering, R4 machine filtering, R5 machine selection; the "
        "queue planners (STRICT, EASY, CONSERVATIVE) record none.")
    for name, text in figures.items():
        write_atomic(folder / name, text.encode())
    for run in runs:
        gantt = gantt_for(run, title)
        if gantt is not None:
            from dcx.scheduler.report import run_folder_name

            write_atomic(folder / run_folder_name(run.metrics.summary) / "gantt.svg",
                         gantt.encode())


def _per_task(run: Run, kind: str) -> list[float]:
    """Each finished task's waiting time (``wait``) or bounded slowdown."""
    from dcx.scheduler.metrics import BOUNDED_SLOWDOWN_TAU_S

    schedule = run.schedule
    values = []
    for arrival, first, start, end in zip(schedule.arrival_s, schedule.first_start_s,
                                          schedule.start_s, schedule.finish_s, strict=True):
        if math.isnan(end):
            continue
        if kind == "wait":
            values.append(first - arrival)
        else:
            run_s = end - start
            values.append(max(1.0, (end - arrival) / max(run_s, BOUNDED_SLOWDOWN_TAU_S)))
    return values


def _utilisation(named: list[tuple[str, Run]]) -> list[tuple[str, list[float], list[float]]]:
    """Per run, busy cores over time from its first arrival (``plots.utilisation_series``)."""
    from dcx.scheduler import plots
    from dcx.scheduler.problem import CORE_UNITS

    utilisation = []
    for label, run in named:
        problem, schedule = run.metrics.problem, run.schedule
        cores = [problem.tasks.need[t] * problem.tasks.nodes[t] / CORE_UNITS
                 for t in range(len(problem.tasks))]
        times, levels = plots.utilisation_series(
            schedule.start_s, schedule.finish_s, cores,
            sum(problem.machines.capacity) / CORE_UNITS)
        origin = min(schedule.arrival_s, default=0.0)
        utilisation.append((label, [t - origin for t in times], levels))
    return utilisation


def gantt_for(run: Run, title: str) -> str | None:
    """A Gantt chart of one run, or ``None`` for a workload too large to draw one."""
    from dcx.scheduler import plots

    problem, schedule = run.metrics.problem, run.schedule
    if len(problem.tasks) > plots.GANTT_MAX_TASKS:
        return None
    bars = [(machine, schedule.start_s[task], schedule.finish_s[task], problem.tasks.job[task])
            for task, machines in enumerate(schedule.machines)
            if not math.isnan(schedule.finish_s[task]) for machine in machines]
    summary = run.metrics.summary
    return plots.gantt_svg(
        f"{summary.policy} on {title}", problem.machines.labels, bars,
        f"Each bar is a task on one machine from its start to its finish (a task over "
        f"several machines has a bar on each); colours tell jobs apart. {summary.tasks} "
        f"tasks, {summary.time_model} time model.")


PLOTS_MISSING = ("no plots: they need matplotlib, the plots extra (pip install "
                 "'dcx[plots]'); the other files are written")


def plots_available() -> bool:
    """Whether matplotlib, which draws the plots (the optional ``plots`` extra), imports."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
