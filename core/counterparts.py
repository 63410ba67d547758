"""Extras keys of two formats that hold one column both define, so that a conversion between
them carries the value instead of dropping the other format's key.

SWF and GWF (the GWA traces are SWF's sibling) both record the requested processor count
beside the allocated one, and both say when the allocated count is unknown; the model has
no field for either (the allocated count is the request), so each reader keeps them under
its own key, only where they say something: SWF's ``swf:RequestedProcessors`` (field 8)
and ``swf:AllocatedProcessors`` (field 5, -1), GWF's ``gwf:ReqNProcs`` and ``gwf:NProcs``
(-1). A normal form takes the other format's key as its own where the task has no value of
its own there (its own checks then decide what reads back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dcx.core.columns import ExtraColumn, WorkloadColumns
from dcx.core.model import Extras

Counterparts = Mapping[str, tuple[str, str]]
"""The other format's key → this format's key of the same column, and which of its values
this format holds there (``count``: an integer >= -1; ``unknown``: -1); the others stay
under their own key, a loss the target names."""

SWF_FROM_GWF: Counterparts = {"gwf:ReqNProcs": ("swf:RequestedProcessors", "count"),
                              "gwf:NProcs": ("swf:AllocatedProcessors", "unknown")}
"""GWF's keys → SWF's."""
GWF_FROM_SWF: Counterparts = {"swf:RequestedProcessors": ("gwf:ReqNProcs", "count"),
                              "swf:AllocatedProcessors": ("gwf:NProcs", "unknown")}
"""SWF's keys → GWF's (SWF's unknown allocation may also be 0, which GWF does not write)."""


def _holds(kind: str, value: Any) -> bool:
    return type(value) is int and (value == -1 if kind == "unknown" else value >= -1)


def with_counterparts(extras: Extras, counterparts: Counterparts) -> Extras:
    """``extras`` with each key of ``counterparts`` under its counterpart, where ``extras``
    has no value of its own there and the value is one it holds (``extras`` itself when
    nothing moves)."""
    def moves(key: str, value: Any) -> bool:
        found = counterparts.get(key)
        return found is not None and found[0] not in extras and _holds(found[1], value)

    if not any(moves(key, value) for key, value in extras.items()):
        return extras
    return {counterparts[key][0] if moves(key, value) else key: value
            for key, value in extras.items()}


def columns_with_counterparts(columns: WorkloadColumns, counterparts: Counterparts
                              ) -> WorkloadColumns | None:
    """``with_counterparts`` of every task's extras, a column at a time; ``None`` where a
    workload has both keys of a pair, or a value the counterpart does not hold (then each
    task decides: build the rows)."""
    extras = columns.extras
    moving = [key for key in extras if key in counterparts]
    if not moving:
        return columns
    for key in moving:
        own, kind = counterparts[key]
        if own in extras or not _column_holds(kind, extras[key]):
            return None
    return replace(columns, extras={counterparts[key][0] if key in counterparts else key:
                                    column for key, column in extras.items()})


def _column_holds(kind: str, column: ExtraColumn) -> bool:
    """``_holds`` of every present value of ``column``."""
    import numpy as np

    if column.texts is not None or column.values.dtype.kind not in "if":
        return False
    present = column.present
    values = column.values[present]
    integral = (np.ones(len(values), dtype=bool) if column.values.dtype.kind == "i"
                else np.zeros(len(values), dtype=bool) if column.integral is None
                else column.integral[present])
    wanted = values == -1 if kind == "unknown" else values >= -1
    return bool(np.all(integral & wanted))
