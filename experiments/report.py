"""What a results table says: per (workload, environment, time model, parameters,
scheduler), the mean of each metric over the runs (seeds) with a 95 % confidence interval
(Student's t), a sentence per setting on how far the schedulers differ, a table per swept
parameter (bounded slowdown against its values, one row per scheduler), the paper's Tables
XI and XII beside the rows that reproduce them, and figures drawn from the table alone
(``dcx experiment --report DIR`` redraws them without running anything).

Files: ``summary.md``, ``summary.json`` and ``plots/<workload>--<environment>--<model>/``
``metrics.svg`` (means with their intervals), ``<parameter>.svg`` (bounded slowdown against
a swept parameter), ``jms.svg`` and ``jwt.svg`` (CDFs over jobs, when the per-job table
exists), ``stages.svg`` (with ``measure_stages``) and, with ``schedules``, ``trt.svg`` (CDFs
over tasks) and ``<run>/gantt.svg``, a Gantt chart per run (``<run>``: the scheduler, its
parameters and seed) of a workload of up to ``scheduler.plots.GANTT_MAX_TASKS`` tasks (runs
with the same schedule share one drawing).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dcx.experiments.groups import (
    CURVE_METRIC,
    Estimate,
    Group,
    curve,
    groups,
    swept,
    t_975,
)

__all__ = ["CURVE_METRIC", "Estimate", "Group", "curve", "groups", "swept", "t_975"]

if TYPE_CHECKING:
    import pyarrow as pa

HEADLINE = (("jms_s", "JMS [s]"), ("njsl", "NJSL"), ("jwt_s", "JWT [s]"), ("trt_s", "TRT [s]"),
            ("wait_mean_s", "wait [s]"), ("bounded_slowdown_mean", "BSLD"),
            ("utilization", "util [%]"), ("wall_s", "wall [s]"))
"""The metrics the Markdown tables show; ``summary.json`` has every numeric column."""
PERCENT = frozenset({"utilization"})
"""Fractions of 1 in the table, shown as percentages (as ``dcx schedule`` shows them)."""
COMPARED = (("bounded_slowdown_mean", "bounded slowdown"), ("wait_mean_s", "mean wait"),
            ("jms_s", "JMS"))
"""The metrics the sentence on how far the schedulers differ compares."""
NOT_METRICS = frozenset({"seed", "repetition", "cell_index"})

LEGACY_COLUMNS = {"utilisation": "utilization",
                  **{f"{name}_{stat}": f"{name}_{stat}_s" for name in ("wait", "response")
                     for stat in ("mean", "p50", "p90", "p99", "max")}}
"""Columns of tables written before the metric names were those of ``dcx schedule``."""


def current_names(table: pa.Table) -> pa.Table:
    """A stored table with its metric columns under today's names; where a table holds both
    (rows of an earlier version beside newer ones), each row's value from either."""
    import pyarrow.compute as pc

    for old, new in LEGACY_COLUMNS.items():
        if old not in table.column_names:
            continue
        values = table.column(old)
        if new in table.column_names:
            values = pc.coalesce(table.column(new), values)
            table = table.drop_columns([new])
        table = table.drop_columns([old]).append_column(new, values)
    return table


def numeric_columns(table: pa.Table) -> list[str]:
    import pyarrow.types as types

    return [item.name for item in table.schema
            if (types.is_integer(item.type) or types.is_floating(item.type))
            and item.name not in NOT_METRICS]


def _digits(column: str) -> int:
    return 3 if column == "wall_s" else 2 if column in (
        "njsl", "bounded_slowdown_mean") else 1


def shown(group: Group, column: str) -> str:
    """A metric's mean (± half its interval) as the tables show it; ``–`` when unmeasured."""
    estimate = group.estimate(column)
    if estimate is None:
        return "–"
    return estimate.text(_digits(column), 100.0 if column in PERCENT else 1.0)


def settings(found: list[Group]) -> dict[tuple[str, str, str], list[Group]]:
    by_setting: dict[tuple[str, str, str], list[Group]] = {}
    for group in found:
        by_setting.setdefault((group.workload, group.environment, group.time_model),
                              []).append(group)
    return by_setting


def difference_sentence(members: list[Group]) -> str:
    """How far the schedulers of one setting differ, or why they do not: the sentence under
    each table (over a swept parameter, which scheduler leads and trails at its values)."""
    if swept(members):
        return _ranking_sentence(members)
    sentences = []
    for parameters in dict.fromkeys(group.parameters for group in members):
        same = [group for group in members if group.parameters == parameters]
        where = f" at {parameters}" if parameters else ""
        if len({group.scheduler for group in same}) < 2:
            continue
        spread = []
        for column, label in COMPARED:
            means = [(group.mean(column), group.scheduler) for group in same]
            means = [(mean, name) for mean, name in means if not math.isnan(mean)]
            if not means:
                continue
            (low, best), (high, worst) = min(means), max(means)
            if high - low > 1e-9 * max(1.0, abs(high)):
                spread.append(f"{label} from {low:,.{_digits(column)}f} ({best}) to "
                              f"{high:,.{_digits(column)}f} ({worst})")
        if spread:
            sentences.append(f"The schedulers differ{where}: " + "; ".join(spread) + ".")
        elif all(group.mean("wait_mean_s") == 0 for group in same):
            sentences.append(f"Every scheduler gives the same result{where}: no task ever "
                             "waited (the machines were never all busy), so the queue order, "
                             "machine choice and backfilling had nothing to decide.")
        else:
            sentences.append(f"Every scheduler gives the same result{where}: tasks waited, "
                             "but every policy started them in the same order on machines "
                             "of the same speed.")
    return " ".join(sentences)


def _ranking_sentence(members: list[Group]) -> str:
    """Which scheduler has the lowest and the highest bounded slowdown at each set of
    parameters, said once when it is the same one at every set."""
    column, label = CURVE_METRIC
    lowest: dict[str, list[float]] = {}
    highest: dict[str, list[float]] = {}
    sets = 0
    for parameters in dict.fromkeys(group.parameters for group in members):
        means = [(group.mean(column), group.scheduler) for group in members
                 if group.parameters == parameters and not math.isnan(group.mean(column))]
        if len({name for _, name in means}) < 2:
            continue
        sets += 1
        (low, best), (high, worst) = min(means), max(means)
        if high - low > 1e-9 * max(1.0, abs(high)):
            lowest.setdefault(best, []).append(low)
            highest.setdefault(worst, []).append(high)
    if not sets:
        return ""
    if not lowest:
        return f"Every scheduler gives the same {label} at every parameter value."

    def ranked(found: dict[str, list[float]], which: str) -> str:
        parts = []
        for name, values in sorted(found.items(), key=lambda item: -len(item[1])):
            span = (f"{min(values):,.2f}" if len(values) == 1
                    else f"{min(values):,.2f} to {max(values):,.2f}")
            parts.append(f"{name} at {len(values)} of {sets} ({span})")
        return f"the {which} {label}: " + ", ".join(parts)

    return ("Over the parameter values, " + ranked(lowest, "lowest") + "; "
            + ranked(highest, "highest") + ".")


def _curve_markdown(members: list[Group], name: str) -> list[str]:
    values, lines = curve(members, name)
    column, label = CURVE_METRIC
    out = [f"{label.capitalize()} by {name}:", "",
           "| scheduler | " + " | ".join(f"{name} {value:g}" for value in values) + " |",
           "|---|" + "---|" * len(values)]
    for line, members_of_line in lines.items():
        by_value = {float(group.parameter(name) or 0): group for group in members_of_line}
        out.append(f"| {line} | " + " | ".join(
            shown(by_value[value], column) if value in by_value else "–" for value in values)
            + " |")
    return [*out, ""]


def summary_markdown(found: list[Group], title: str) -> str:
    lines = [f"# {title}", "",
             "Mean over the runs of each cell (one run per seed), ± the half-width of its "
             "95 % confidence interval (Student's t) where the runs differ.", ""]
    for (workload, environment, model), members in settings(found).items():
        lines += [f"## {workload} on {environment} ({model} time model)", "",
                  "| scheduler | runs | " + " | ".join(label for _, label in HEADLINE) + " |",
                  "|---|---|" + "---|" * len(HEADLINE)]
        for group in members:
            cells = [shown(group, column) for column, _ in HEADLINE]
            lines.append(f"| {group.label} | {len(group.rows)} | " + " | ".join(cells) + " |")
        lines.append("")
        sentence = difference_sentence(members)
        if sentence:
            lines += [sentence, ""]
        for name in swept(members):
            lines += _curve_markdown(members, name)
    return "\n".join(lines)


def summary_json(found: list[Group], columns: list[str]) -> dict[str, Any]:
    return {"groups": [
        {"workload": g.workload, "environment": g.environment, "time_model": g.time_model,
         "parameters": g.parameters, "scheduler": g.scheduler, "runs": len(g.rows),
         "metrics": {column: estimate.as_json() for column in columns
                     if (estimate := g.estimate(column)) is not None}}
        for g in found]}


# ------------------------------------------------------------------------ the paper


def paper_tables(found: list[Group]) -> tuple[str, list[dict[str, Any]]]:
    """Tables XI and XII beside the groups that run a paper trace under ``sc18`` (matched
    by file name), with the verdict the scheduler's own reproduction uses."""
    from dcx.scheduler.paper import TRACES, verdict

    lines: list[str] = []
    rows: list[dict[str, Any]] = []
    for trace in TRACES:
        matching = [g for g in found if g.time_model == "sc18" and g.scheduler in trace.table
                    and any(Path(str(row["workload_path"])).name == trace.file_name
                            for row in g.rows)]
        if not matching:
            continue
        lines += [f"## {trace.table_name}: {trace.name}, reproduced", "",
                  "| scheduler | runs | JMS [s] | paper | NJSL | paper | JWT [s] | paper | "
                  "verdict |", "|---|---|---|---|---|---|---|---|---|"]
        for group in matching:
            cell = trace.table[group.scheduler]
            randomised = len({row["seed"] for row in group.rows}) > 1 or any(
                row["seed"] is not None for row in group.rows)
            outcome = verdict(group, cell, randomised)
            shown = []
            for column in ("jms_s", "njsl", "jwt_s"):
                estimate = group.estimate(column)
                shown.append(estimate.text(_digits(column)) if estimate else "–")
            lines.append(f"| {group.scheduler} | {len(group.rows)} | {shown[0]} | "
                         f"{cell.jms_s:,g} | {shown[1]} | {cell.njsl:g} | {shown[2]} | "
                         f"{cell.jwt_s:,g} | {outcome} |")
            rows.append({"table": trace.table_name, "trace": trace.name,
                         "workload": group.workload, "scheduler": group.scheduler,
                         "runs": len(group.rows), "verdict": outcome,
                         "paper": {"jms_s": cell.jms_s, "njsl": cell.njsl,
                                   "jwt_s": cell.jwt_s},
                         "measured": {c: group.mean(c) for c in ("jms_s", "njsl", "jwt_s")}})
        lines += ["", "Deterministic schedulers: JMS and JWT within 0.5 % of the paper, NJSL "
                  "within 1. RANDOM: the paper's value inside the range of the seeds' runs, "
                  "widened by the paper's rounding.", ""]
    return "\n".join(lines), rows


# ------------------------------------------------------------------------------ files


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "--".join(parts)).strip("_")


def write_report(folder: Path, table: pa.Table, jobs: pa.Table | None, title: str,
                 plots: bool = True) -> list[str]:
    """``summary.md``, ``summary.json`` and (with ``plots``) the figures; notes for the
    user (figures that could not be drawn, and why)."""
    from dcx.converters.atomic import write_atomic

    table = current_names(table)
    found = groups(table)
    markdown = summary_markdown(found, title)
    paper_text, paper_rows = paper_tables(found)
    if paper_text:
        markdown += "\n" + paper_text
    report = summary_json(found, numeric_columns(table))
    if paper_rows:
        report["paper"] = paper_rows
    write_atomic(folder / "summary.md", markdown.encode())
    write_atomic(folder / "summary.json", (json.dumps(report, indent=2, allow_nan=False,
                                                      default=str) + "\n").encode())
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return ["no plots: matplotlib is not installed (pip install 'dcx[experiments]'); "
                    "--no-plots leaves them out"]
        from dcx.experiments.schedules import read_schedules

        keys = [str(key) for key in table.column("cell_key").to_pylist()]
        write_plots(folder / "plots", found, jobs, read_schedules(folder, keys))
    return []


PARALLEL_SETTINGS = 4
"""From this many settings, their figures are drawn by a pool of processes, one per core
(matplotlib holds the interpreter lock; each setting's figures take seconds)."""

Setting = tuple[str, str, str, list[Group], dict[str, dict[str, list[float]]],
                dict[str, "pa.Table"]]
"""What one setting's figures are drawn from: workload, environment, time model, its
groups, their job rows and their schedules."""


def setting_figures(setting: Setting) -> dict[str, str]:
    """One setting's figures by file name (relative to its folder)."""
    from dcx.experiments import plots

    workload, environment, model, members, job_rows, schedules = setting
    figures = plots.setting_figures(workload, environment, model, members, job_rows)
    if schedules:
        figures.update(plots.schedule_figures(workload, environment, model, members,
                                              schedules))
    return figures


def write_plots(folder: Path, found: list[Group], jobs: pa.Table | None,
                schedules: dict[str, pa.Table] | None = None,
                processes: int | None = None) -> list[Path]:
    """Each setting's figures; with ``schedules`` (per cell key), its TRT figure and a
    Gantt chart per run in a folder of its own. ``processes``: how many draw at once
    (default: one per core, from ``PARALLEL_SETTINGS`` settings on)."""
    from dcx.converters.atomic import write_atomic

    job_rows = _jobs_by_key(jobs)
    work: list[tuple[Path, Setting]] = []
    for (workload, environment, model), members in settings(found).items():
        keys = {str(row["cell_key"]) for group in members for row in group.rows}
        mine = {key: table for key, table in (schedules or {}).items() if key in keys}
        work.append((folder / _slug(workload, environment, model),
                     (workload, environment, model, members,
                      {key: rows for key, rows in job_rows.items() if key in keys}, mine)))
    written: list[Path] = []
    for (target, _), figures in zip(work, _drawn([setting for _, setting in work],
                                                 processes), strict=True):
        for name, text in figures.items():
            write_atomic(target / name, text.encode())
            written.append(target / name)
    return written


def _drawn(work: list[Setting], processes: int | None) -> list[dict[str, str]]:
    """``setting_figures`` of each, in this process or (many settings, several cores) in
    a pool of fresh processes: this one may hold threads (a Dask client's) that a fork
    would copy mid-work."""
    from dcx.converters.partitions import default_workers

    count = default_workers() if processes is None else processes
    if count < 2 or (processes is None and len(work) < PARALLEL_SETTINGS):
        return [setting_figures(setting) for setting in work]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(min(count, len(work)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(setting_figures, work))


def _jobs_by_key(jobs: pa.Table | None) -> dict[str, dict[str, list[float]]]:
    """Per cell key: the job makespans and waiting times of its run."""
    if jobs is None:
        return {}
    keys = jobs.column("cell_key").to_pylist()
    found: dict[str, dict[str, list[float]]] = {}
    for column in ("makespan_s", "waiting_s"):
        if column not in jobs.column_names:
            continue
        for key, value in zip(keys, jobs.column(column).to_pylist(), strict=True):
            if value is not None:
                found.setdefault(key, {}).setdefault(column, []).append(value)
    return found
