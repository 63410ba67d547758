"""What a results table says: per (workload, environment, time model, parameters,
scheduler), the mean of each metric over the runs (seeds) with a 95 % confidence interval
(Student's t), a sentence per setting on how far the schedulers differ, a table per swept
parameter (bounded slowdown against its values, one row per scheduler), the paper's Tables
XI and XII beside the rows that reproduce them, and figures drawn from the table alone
(``dcx experiment --report DIR`` redraws them without running anything).

Files: ``summary.md``, ``summary.json`` and ``plots/<workload>--<environment>--<model>/``
``metrics.svg`` (means with their intervals), ``<parameter>.svg`` (bounded slowdown against
a swept parameter), ``jms.svg`` and ``jwt.svg`` (CDFs over jobs, when the per-job table
exists) and ``stages.svg`` (with ``measure_stages``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

GROUP = ("workload", "environment", "time_model", "parameters", "scheduler")
HEADLINE = (("jms_s", "JMS [s]"), ("njsl", "NJSL"), ("jwt_s", "JWT [s]"), ("trt_s", "TRT [s]"),
            ("wait_mean_s", "wait [s]"), ("bounded_slowdown_mean", "BSLD"),
            ("utilization", "util [%]"), ("wall_s", "wall [s]"))
"""The metrics the Markdown tables show; ``summary.json`` has every numeric column."""
PERCENT = frozenset({"utilization"})
"""Fractions of 1 in the table, shown as percentages (as ``dcx schedule`` shows them)."""
CURVE_METRIC = ("bounded_slowdown_mean", "bounded slowdown")
"""What the table and figure of a swept parameter show."""
COMPARED = (("bounded_slowdown_mean", "bounded slowdown"), ("wait_mean_s", "mean wait"),
            ("jms_s", "JMS"))
"""The metrics the sentence on how far the schedulers differ compares."""
NOT_METRICS = frozenset({"seed", "repetition", "cell_index"})

_T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
          2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074,
          2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
"""Two-sided 95 % quantiles of Student's t for 1 … 30 degrees of freedom."""


def t_975(degrees: int) -> float:
    """Student's t 0.975 quantile; past 30 degrees of freedom the Cornish-Fisher expansion
    around the normal quantile (error below 1e-4 there)."""
    if degrees <= len(_T_975):
        return _T_975[degrees - 1]
    z = 1.959964
    return (z + (z**3 + z) / (4 * degrees)
            + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * degrees**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * degrees**3))


@dataclass(frozen=True)
class Estimate:
    """Mean over runs and its 95 % confidence interval (``None`` from fewer than two
    runs, or when every run gives the same value the interval is that value)."""

    n: int
    mean: float
    low: float | None
    high: float | None
    minimum: float
    maximum: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Estimate | None:
        finite = [v for v in values if v is not None and not math.isnan(v)]
        if not finite:
            return None
        n = len(finite)
        mean = math.fsum(finite) / n
        if n < 2:
            return cls(n, mean, None, None, finite[0], finite[0])
        variance = math.fsum((v - mean) ** 2 for v in finite) / (n - 1)
        half = t_975(n - 1) * math.sqrt(variance / n)
        return cls(n, mean, mean - half, mean + half, min(finite), max(finite))

    def text(self, digits: int, scale: float = 1.0) -> str:
        shown = f"{self.mean * scale:,.{digits}f}"
        if self.low is not None and self.high is not None and self.high > self.low:
            shown += f" ± {(self.high - self.low) * scale / 2:,.{digits}f}"
        return shown

    def as_json(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "ci95": [self.low, self.high],
                "min": self.minimum, "max": self.maximum}


@dataclass(frozen=True)
class Group:
    workload: str
    environment: str
    time_model: str
    scheduler: str
    rows: list[dict[str, Any]]
    parameters: str = ""
    """The cell's parameters, ``load=0.5,requested_accuracy=trace`` (empty: none)."""

    @property
    def label(self) -> str:
        return f"{self.scheduler} ({self.parameters})" if self.parameters else self.scheduler

    def parameter(self, name: str) -> str | None:
        for item in self.parameters.split(","):
            key, _, value = item.partition("=")
            if key == name:
                return value
        return None

    def others(self, name: str) -> str:
        """Its parameters but ``name``."""
        return ",".join(item for item in self.parameters.split(",")
                        if item and item.partition("=")[0] != name)

    def values(self, column: str) -> list[float]:
        return [row[column] for row in self.rows if isinstance(row.get(column), int | float)
                and not isinstance(row.get(column), bool)]

    def estimate(self, column: str) -> Estimate | None:
        return Estimate.of(self.values(column))

    # dcx.scheduler.paper.Measured, for paper.verdict
    def mean(self, column: str) -> float:
        estimate = self.estimate(column)
        return estimate.mean if estimate else math.nan

    def spread(self, column: str) -> tuple[float, float]:
        values = self.values(column)
        return (min(values), max(values)) if values else (math.nan, math.nan)


def groups(table: pa.Table) -> list[Group]:
    """Rows grouped by (workload, environment, time model, scheduler), in the order of the
    experiment's cells (``cell_index``; rows are stored in the order they finished)."""
    collected: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    rows = table.to_pylist()
    rows.sort(key=lambda row: row.get("cell_index") or 0)
    for row in rows:
        collected.setdefault(tuple(str(row.get(key) or "") for key in GROUP), []).append(row)
    return [Group(workload, environment, model, scheduler, rows, parameters)
            for (workload, environment, model, parameters, scheduler), rows
            in collected.items()]


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


def swept(members: list[Group]) -> list[str]:
    """Parameters with two or more numeric values in these groups, in their order."""
    names: dict[str, set[float]] = {}
    for group in members:
        for item in filter(None, group.parameters.split(",")):
            name, _, value = item.partition("=")
            try:
                names.setdefault(name, set()).add(float(value))
            except ValueError:
                names.setdefault(name, set())
    return [name for name, values in names.items() if len(values) >= 2]


def curve(members: list[Group], name: str) -> tuple[list[float], dict[str, list[Group]]]:
    """A swept parameter's values, and per line (scheduler, with the other parameters) its
    groups in the order of the values."""
    values = sorted({float(value) for group in members
                     if (value := group.parameter(name)) is not None
                     and value.replace(".", "", 1).isdigit()})
    lines: dict[str, list[Group]] = {}
    for group in members:
        value = group.parameter(name)
        if value is None or not value.replace(".", "", 1).isdigit():
            continue
        others = group.others(name)
        lines.setdefault(f"{group.scheduler} ({others})" if others else group.scheduler,
                         []).append(group)
    for line in lines.values():
        line.sort(key=lambda group: float(group.parameter(name) or 0))
    return values, lines


def _curve_markdown(members: list[Group], name: str) -> list[str]:
    values, lines = curve(members, name)
    column, label = CURVE_METRIC
    out = [f"{label.capitalize()} by {name}:", "",
           "| scheduler | " + " | ".join(f"{name} {value:g}" for value in values) + " |",
           "|---|" + "---|" * len(values)]
    for line, groups in lines.items():
        by_value = {float(group.parameter(name) or 0): group for group in groups}
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
        write_plots(folder / "plots", found, jobs)
    return []


def write_plots(folder: Path, found: list[Group], jobs: pa.Table | None) -> list[Path]:
    from dcx.converters.atomic import write_atomic
    from dcx.experiments import plots

    job_rows = _jobs_by_key(jobs)
    written: list[Path] = []
    for (workload, environment, model), members in settings(found).items():
        target = folder / _slug(workload, environment, model)
        for name, text in plots.setting_figures(workload, environment, model, members,
                                                job_rows).items():
            write_atomic(target / name, text.encode())
            written.append(target / name)
    return written


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
