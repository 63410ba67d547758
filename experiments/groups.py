"""Rows of a results table grouped by (workload, environment, time model, parameters,
scheduler), each group's metrics as a mean with a 95 % confidence interval over its runs,
and the curve of a swept parameter: what the summary (``report``) and the figures
(``plots``) both read."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

GROUP = ("workload", "environment", "time_model", "parameters", "scheduler")
CURVE_METRIC = ("bounded_slowdown_mean", "bounded slowdown")
"""What the table and figure of a swept parameter show."""

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
