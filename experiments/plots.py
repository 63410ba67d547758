"""Figures of one (workload, environment, time model) of a sweep, drawn from the results
table (and the per-job table, and each cell's schedule, when there are) with matplotlib, as
SVG: nothing here reruns a scheduler."""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dcx.scheduler import plots as scheduler_plots

if TYPE_CHECKING:
    import pyarrow as pa

    from dcx.experiments.groups import Group

PANELS = (("jms_s", "JMS [s]"), ("jwt_s", "JWT [s]"), ("njsl", "NJSL"), ("trt_s", "TRT [s]"),
          ("bounded_slowdown_mean", "bounded slowdown"), ("utilization", "utilization"))
STAGES = ("T1", "T2", "R4", "R5", "rest")


def _svg(figure: Any, caption: str) -> str:
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "dcx"
    plt.rcParams["svg.fonttype"] = "none"
    figure.text(0.01, 0.01, caption, fontsize=8, ha="left", va="bottom", wrap=True)
    with warnings.catch_warnings():  # long labels (a scheduler with its parameters) may not
        warnings.simplefilter("ignore", UserWarning)  # fit: the figure is drawn as it is
        figure.tight_layout(rect=(0, 0.07, 1, 1))
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(figure)
    return buffer.getvalue()


def means_svg(title: str, members: Sequence[Group], caption: str) -> str:
    """One panel per headline metric: a bar per scheduler at its mean, with the 95 %
    confidence interval as an error bar where the runs differ."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, grid = plt.subplots(2, 3, figsize=(10, 5.8))
    labels = [group.label for group in members]
    for axes, (column, label) in zip(grid.flat, PANELS, strict=True):
        means, errors = [], []
        for group in members:
            estimate = group.estimate(column)
            means.append(estimate.mean if estimate else 0.0)
            spread = (estimate.high - estimate.mean
                      if estimate and estimate.high is not None else 0.0)
            errors.append(spread)
        axes.bar(range(len(labels)), means, yerr=errors, capsize=3, color="#4c72b0")
        axes.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
        axes.set_title(label, fontsize=9)
        axes.grid(axis="y", alpha=0.3)
    figure.suptitle(title, fontsize=11)
    return _svg(figure, caption)


def curve_svg(name: str, members: Sequence[Group], caption: str) -> str:
    """The bounded slowdown against a swept parameter: one line per scheduler."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dcx.experiments.groups import CURVE_METRIC, curve

    column, label = CURVE_METRIC
    _, lines = curve(list(members), name)
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for line, groups in lines.items():
        xs, ys, errors = [], [], []
        for group in groups:
            estimate = group.estimate(column)
            if estimate is None:
                continue
            xs.append(float(group.parameter(name) or 0))
            ys.append(estimate.mean)
            errors.append(estimate.high - estimate.mean if estimate.high is not None else 0.0)
        axes.errorbar(xs, ys, yerr=errors, marker="o", capsize=3, label=line)
    axes.set_xlabel(name)
    axes.set_ylabel(label)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.suptitle(f"{label.capitalize()} by {name}", fontsize=11)
    return _svg(figure, caption)


def setting_figures(workload: str, environment: str, model: str, members: Sequence[Group],
                    jobs: dict[str, dict[str, list[float]]]) -> dict[str, str]:
    where = f"{workload} on {environment}, {model} time model"
    runs = sum(len(group.rows) for group in members)
    figures = {"metrics.svg": means_svg(
        f"Mean per scheduler ({where})", members,
        f"Mean over each scheduler's runs ({runs} in all); error bars: 95 % confidence "
        f"interval over seeds (Student's t), where the runs differ.")}
    from dcx.experiments.groups import swept

    for name in swept(list(members)):
        figures[f"{name}.svg"] = curve_svg(
            name, members, f"Mean over each scheduler's runs at each {name}; error bars: 95 % "
            f"confidence interval over seeds, where the runs differ ({where}).")
    for column, name, label in (("makespan_s", "jms.svg", "Job makespan (JMS) [s]"),
                                ("waiting_s", "jwt.svg", "Job waiting time (JWT) [s]")):
        series = [(group.label,
                   [value for row in group.rows
                    for value in jobs.get(str(row["cell_key"]), {}).get(column, [])])
                  for group in members]
        if any(values for _, values in series):
            figures[name] = scheduler_plots.cdf_svg(
                f"{label.split(' [')[0]} per scheduler ({workload})", label, series,
                f"Empirical CDF over the finished jobs of every run of each scheduler, "
                f"seeds pooled ({where}).")
    stages = []
    for group in members:
        totals = {stage: group.estimate(f"stage_{stage}_s") for stage in STAGES}
        if any(totals.values()):
            stages.append((group.label, {stage: estimate.mean * 1e3
                                             for stage, estimate in totals.items()
                                             if estimate is not None}))
    if stages:
        figures["stages.svg"] = scheduler_plots.stacked_bars_svg(
            f"Scheduler time per stage ({workload})", "wall time [ms]", STAGES, stages,
            f"Mean over runs of the wall time of each SC18 stage summed over a run's cycles "
            f"({where}).")
    return figures


def run_folder(group: Group, row: dict[str, Any]) -> str:
    """The folder of one run's own figures: its scheduler, parameters and seed."""
    import re

    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", _run_name(group, row)).strip("_")


def schedule_figures(workload: str, environment: str, model: str, members: Sequence[Group],
                     schedules: dict[str, pa.Table]) -> dict[str, str]:
    """From the cells' schedules: ``trt.svg`` (task response times per scheduler, runs
    pooled) and ``<run>/gantt.svg`` per run of up to ``GANTT_MAX_TASKS`` tasks. Runs whose
    schedules are the same (often most schedulers, on a small workload that never queues)
    share one drawing, which names them all."""
    from dcx.experiments.schedules import response_times

    where = f"{workload} on {environment}, {model} time model"
    figures: dict[str, str] = {}
    series = [(group.label, [value for row in group.rows
                             if (table := schedules.get(str(row["cell_key"]))) is not None
                             for value in response_times(table)])
              for group in members]
    if any(values for _, values in series):
        figures["trt.svg"] = scheduler_plots.cdf_svg(
            f"Task response time (TRT) per scheduler ({workload})", "TRT [s]", series,
            f"Empirical CDF over the finished tasks of every run of each scheduler of TRT = "
            f"finish - submit, seeds pooled ({where}).")
    for runs in _same_schedules(members, schedules).values():
        svg = _gantt(workload, where, runs)
        for group, row, _ in runs:
            figures[f"{run_folder(group, row)}/gantt.svg"] = svg
    return figures


Run = tuple["Group", dict[str, Any], "pa.Table"]
"""A run of a group (its results row) and its schedule."""


def _same_schedules(members: Sequence[Group], schedules: dict[str, pa.Table],
                    ) -> dict[tuple[Any, ...], list[Run]]:
    """The runs small enough for a Gantt chart, by what the chart shows of them."""
    found: dict[tuple[Any, ...], list[Run]] = {}
    for group in members:
        for row in group.rows:
            table = schedules.get(str(row["cell_key"]))
            if table is None or table.num_rows > scheduler_plots.GANTT_MAX_TASKS:
                continue
            drawn = table.select(["job_id", "start_s", "finish_s", "machines"]).to_pydict()
            key = tuple(tuple(tuple(value) if isinstance(value, list) else value
                              for value in column) for column in drawn.values())
            found.setdefault(key, []).append((group, row, table))
    return found


def _run_name(group: Group, row: dict[str, Any]) -> str:
    return group.label if row.get("seed") is None else f"{group.label}, seed {row['seed']}"


def _gantt(workload: str, where: str, runs: list[Run]) -> str:
    from dcx.experiments.schedules import gantt_bars

    table = runs[0][2]
    machines, bars = gantt_bars(table)
    names = [_run_name(group, row) for group, row, _ in runs]
    title = names[0] if len(names) == 1 else f"{names[0]} (and {len(names) - 1} more)"
    same = f" The same schedule: {', '.join(names)}." if len(names) > 1 else ""
    return scheduler_plots.gantt_svg(
        f"{title} on {workload}", machines, bars,
        f"Each bar is a task on one machine from its start to its finish (a task over "
        f"several machines has a bar on each); colours tell jobs apart. {table.num_rows} "
        f"tasks ({where}).{same}")
