"""The ``SWF_*`` ``<extra>`` attrs haizea-swf2lwf writes into each lease, as the model's
trace fields: both read paths take them out of the attrs, the writer writes them back from
the fields, and the normal form says what an attr can carry."""

from __future__ import annotations

import math
from typing import Any

from dcx.core.model import UNRECORDED
from dcx.parsing.traces import format_number

SECONDS_ATTRS: dict[str, str] = {"SWF_waittime": "wait_time_s", "SWF_avgcputime": "cpu_time_s"}
"""Attrs holding seconds (SWF's Wait Time and Average CPU Time Used), by ``Task`` field."""
TEXT_ATTRS: dict[str, str] = {"SWF_group": "group", "SWF_queue": "queue",
                              "SWF_execnumber": "application"}
"""Attrs holding SWF's codes (Group ID, Queue Number, Executable Number), kept as text."""
RECORDED_ATTRS: dict[str, str] = {**SECONDS_ATTRS, **TEXT_ATTRS}
"""Every attr a trace field is read from and written to, in the order the writer writes
them. ``SWF_runtime`` stays an attr: the lease's runtime is its ``realduration``, which
haizea-swf2lwf makes 1 s where SWF's Run Time is 0."""
UNKNOWN = "-1"
"""SWF's "not recorded", which haizea-swf2lwf copies as it is."""


def seconds_value(text: str) -> float | None:
    """The seconds an attr's text holds (not negative, finite), or ``None``."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def recorded_fields(attrs: dict[str, Any]) -> dict[str, Any]:
    """The ``Task`` fields ``attrs`` (a lease's ``<extra>`` attrs as task extras) give,
    each attr that gave one (or said ``-1``, not recorded) taken out of ``attrs``. An attr
    whose text is no such value stays an attr."""
    found: dict[str, Any] = {}
    if not attrs:
        return found
    for name, field in RECORDED_ATTRS.items():
        text = attrs.get(name)
        if not isinstance(text, str):
            continue
        if text == UNKNOWN:
            del attrs[name]
            continue
        value = seconds_value(text) if name in SECONDS_ATTRS else text
        if value is not None:
            found[field] = value
            del attrs[name]
    return found


def trace_values(found: dict[str, Any]) -> dict[str, Any]:
    """``UNRECORDED`` with the trace fields ``found`` gives, in the model's order (what the
    readers' ``direct_constructor`` of ``Task`` takes)."""
    if not found:
        return UNRECORDED
    return {name: found.get(name, default) for name, default in UNRECORDED.items()}


def recorded_attrs(task: Any) -> dict[str, str]:
    """The ``SWF_*`` attrs of ``task``'s trace fields that have a value (in normal form)."""
    attrs: dict[str, str] = {}
    for name, field in RECORDED_ATTRS.items():
        value = getattr(task, field)
        if value is not None:
            attrs[name] = format_number(value) if name in SECONDS_ATTRS else value
    return attrs


def normal_recorded(task: Any, extras: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The trace fields a lease keeps of ``task`` (changed ones only) and the field paths
    they change: seconds not negative and finite, codes other than ``-1``. A plain extras
    key of the same name as one of the attrs reads back as the field: it moves there when
    the field is unset, else it is dropped (from ``extras``, in place)."""
    changes: dict[str, Any] = {}
    lost: set[str] = set()
    for name, field in RECORDED_ATTRS.items():
        value = getattr(task, field)
        text = extras.get(name)
        if isinstance(text, str):
            probe = {name: text}
            found = recorded_fields(probe)
            if value is not None or name not in probe:  # the field wins, or it reads as one
                del extras[name]
                if value is None:
                    value = found.get(field)
        if name in SECONDS_ATTRS:
            kept = value if value is not None and seconds_value(format_number(value)) == value \
                else None
        else:
            kept = None if value == UNKNOWN else value
        if kept != getattr(task, field):
            changes[field] = kept
            lost.add(f"task.{field}")
    return changes, lost
