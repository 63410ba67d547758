"""The SC18 paper's Tables XI (Askalon) and XII (Chronos): average JMS [s], NJSL and JWT [s]
per scheduler, as printed (rounded to units), and the tolerances the reproduction is held to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class PaperCell:
    jms_s: float
    njsl: float
    jwt_s: float


TABLE_XI_ASKALON: dict[str, PaperCell] = {
    "SRTF-BESTFIT": PaperCell(7929, 5, 3134),
    "SRTF-FIRSTFIT": PaperCell(7927, 5, 3134),
    "SRTF-WORSTFIT": PaperCell(7927, 5, 3135),
    "FIFO-BESTFIT": PaperCell(19751, 32, 2478),
    "FIFO-FIRSTFIT": PaperCell(19751, 32, 2480),
    "FIFO-WORSTFIT": PaperCell(19748, 32, 2478),
    "RANDOM-BESTFIT": PaperCell(23156, 206, 4789),
    "RANDOM-FIRSTFIT": PaperCell(23171, 197, 4808),
    "RANDOM-WORSTFIT": PaperCell(23132, 196, 4815),
}

TABLE_XII_CHRONOS: dict[str, PaperCell] = {
    "SRTF-BESTFIT": PaperCell(270, 25, 262),
    "SRTF-FIRSTFIT": PaperCell(270, 25, 262),
    "SRTF-WORSTFIT": PaperCell(270, 25, 262),
    "FIFO-BESTFIT": PaperCell(361, 50, 353),
    "FIFO-FIRSTFIT": PaperCell(361, 50, 353),
    "FIFO-WORSTFIT": PaperCell(362, 50, 354),
    "RANDOM-BESTFIT": PaperCell(363, 51, 355),
    "RANDOM-FIRSTFIT": PaperCell(363, 51, 355),
    "RANDOM-WORSTFIT": PaperCell(363, 51, 355),
}


@dataclass(frozen=True)
class Trace:
    """A paper trace: its corpus file name and its table."""

    name: str
    file_name: str
    table_name: str
    table: dict[str, PaperCell]


TRACES: tuple[Trace, ...] = (
    Trace("Askalon", "askalon_workload_ee.gwf", "Table XI", TABLE_XI_ASKALON),
    Trace("Chronos", "chronos_exp_noscaler_ca.gwf", "Table XII", TABLE_XII_CHRONOS),
)
SETUP_FILE_NAME = "setup.json"

RELATIVE_TOLERANCE = 0.005
"""JMS and JWT of deterministic policies must be within 0.5 % of the paper."""
NJSL_TOLERANCE = 1.0
"""NJSL is printed as an integer; the reproduction must be within 1 of it."""


def within_tolerance(measured: float, printed: float) -> bool:
    return abs(measured - printed) <= RELATIVE_TOLERANCE * abs(printed)


class Measured(Protocol):
    """One scheduler's runs on one trace: the mean of a metric over them and its range."""

    def mean(self, metric: str) -> float: ...

    def spread(self, metric: str) -> tuple[float, float]: ...


def verdict(measured: Measured, cell: PaperCell, random_policy: bool) -> str:
    """``reproduced`` or ``differs``. Deterministic: JMS/JWT within 0.5 %, NJSL within 1.
    RANDOM: the paper's value inside the seeds' range, widened by the paper's rounding
    (0.5 s; 1 for NJSL)."""
    checks = []
    for metric, printed in (("jms_s", cell.jms_s), ("njsl", cell.njsl), ("jwt_s", cell.jwt_s)):
        slack = NJSL_TOLERANCE if metric == "njsl" else 0.5
        if random_policy:
            low, high = measured.spread(metric)
            checks.append(low - slack <= printed <= high + slack)
        elif metric == "njsl":
            checks.append(abs(measured.mean(metric) - printed) <= NJSL_TOLERANCE)
        else:
            checks.append(within_tolerance(measured.mean(metric), printed))
    return "reproduced" if all(checks) else "differs"
