"""Flux R writing: the canonical R (R_lite entries grouped by identical children, one
compressed nodelist).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

from dcx.core.diagnostics import WriteResult
from dcx.core.groups import (
    MachineGroup,
    Window,
    has_groups,
    machine_parts,
    part_count,
    part_template,
)
from dcx.core.ids import required_machine_name
from dcx.core.model import Document, Environment, Machine, ProcessingUnit
from dcx.formats.flux_r.normaliser import (
    _all_host_names,
    _core_count,
    _gpu_ids_are_usable,
    _is_property_name,
    _rank_runs,
    _ranks_are_usable,
)
from dcx.formats.flux_r.vocabulary import (
    _KEPT_EXECUTION,
    _KEPT_TOP_LEVEL,
    CHILDREN,
    PREFIX,
)
from dcx.parsing.fluxion import TIMES, ShapeMemo
from dcx.parsing.hostlist import Hostlist, IdSet, IdsetError, is_host_name
from dcx.parsing.jsonio import dumps_canonical


def write(document: Document) -> WriteResult:
    environment = document.environment or Environment()
    if has_groups(environment):
        grouped = _write_groups(environment)
        if grouped is not None:
            return grouped
    machines = list(environment.machines())
    ranks = _assign_ranks(machines)
    order = sorted(range(len(machines)), key=lambda i: ranks[i])
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    properties: dict[str, list[int]] = {}
    hosts: list[str] = []
    shapes: ShapeMemo[tuple[tuple[str, str], ...]] = ShapeMemo(_children)
    for position in order:
        machine, rank = machines[position], ranks[position]
        children = shapes.get(machine.cpus, machine.gpus, machine.extras.get(PREFIX + "core"),
                              machine.extras.get(CHILDREN))
        groups.setdefault(children, []).append(rank)
        for feature in dict.fromkeys(machine.features):
            if _is_property_name(feature):
                properties.setdefault(feature, []).append(rank)
        hosts.append(required_machine_name(machine, position + 1, is_host_name))
    r_lite = [
        {"rank": IdSet.from_ids(group).encode(), "children": dict(children)}
        for children, group in sorted(groups.items(), key=lambda item: min(item[1]))
    ]
    # required_machine_name only returns names a hostlist can spell, so this cannot raise.
    execution: dict[str, Any] = {
        "R_lite": r_lite, "nodelist": [Hostlist.from_hosts(hosts).encode()] if hosts else []}
    if properties:
        # Sorted: R cannot hold each machine's own feature order, so pick a canonical one.
        execution["properties"] = {name: IdSet.from_ids(properties[name]).encode()
                                   for name in sorted(properties)}
    return WriteResult(dumps_canonical(_with_kept_keys(execution, environment)))


def _write_groups(environment: Environment) -> WriteResult | None:
    """``write`` from the groups: a group's ranks join the idsets as one range and its
    names the nodelist as they are, so a million ranks are never single machines. The same
    bytes as ``write`` on the expanded machines; ``None`` when some group's names must be
    filled in or its ranks are no range (then ``write`` takes machine by machine)."""
    parts = list(machine_parts(environment))
    runs = _rank_runs(parts)
    if runs is None or not _ranks_are_usable(parts):
        runs, start = [], 0  # renumbered 0..n-1 in topology order
        for part in parts:
            runs.append((start, start + part_count(part) - 1))
            start += part_count(part)
    elif len(runs) != len(parts):
        return None  # a group whose ranks are no range
    names: list[Sequence[str]] = []
    position = 0
    for part in parts:
        if isinstance(part, MachineGroup):
            if part.names is None or not _all_host_names(part.names):
                return None
            names.append(part.names)
        else:
            names.append((required_machine_name(part, position + 1, is_host_name),))
        position += part_count(part)
    order = sorted(range(len(parts)), key=lambda index: runs[index])
    shapes: ShapeMemo[tuple[tuple[str, str], ...]] = ShapeMemo(_children)
    groups: dict[tuple[tuple[str, str], ...], list[tuple[int, int]]] = {}
    properties: dict[str, list[tuple[int, int]]] = {}
    for index in order:
        machine, run = part_template(parts[index]), runs[index]
        children = shapes.get(machine.cpus, machine.gpus, machine.extras.get(PREFIX + "core"),
                              machine.extras.get(CHILDREN))
        groups.setdefault(children, []).append(run)
        for feature in dict.fromkeys(machine.features):
            if _is_property_name(feature):
                properties.setdefault(feature, []).append(run)
    r_lite = [{"rank": IdSet.from_runs(sorted(group)).encode(), "children": dict(children)}
              for children, group in sorted(groups.items(), key=lambda item: min(item[1]))]
    nodelist = _nodelist([names[index] for index in order])
    execution: dict[str, Any] = {"R_lite": r_lite, "nodelist": [nodelist] if position else []}
    if properties:
        execution["properties"] = {name: IdSet.from_runs(sorted(properties[name])).encode()
                                   for name in sorted(properties)}
    return WriteResult(dumps_canonical(_with_kept_keys(execution, environment)))


def _nodelist(names: list[Sequence[str]]) -> str:
    """The hostlist of ``names`` one after the other; windows that together are a whole
    decoded hostlist, in order, are that hostlist."""
    first = names[0] if names else None
    if isinstance(first, Window) and isinstance(first.base, Hostlist):
        base, expected = first.base, 0
        for window in names:
            if not isinstance(window, Window) or window.base is not base \
                    or window.start != expected:
                break
            expected = window.stop
        else:
            if expected == len(base):
                return base.encode()
    return Hostlist.from_hosts(chain.from_iterable(names)).encode()


def _with_kept_keys(execution: dict[str, Any], environment: Environment) -> dict[str, Any]:
    window = environment.validity
    for key, time in zip(TIMES, (window.start_s, window.end_s) if window else (), strict=False):
        if time is not None:
            execution[key] = time
    for key in _KEPT_EXECUTION:
        if PREFIX + key in environment.extras:
            execution[key] = environment.extras[PREFIX + key]
    value: dict[str, Any] = {"version": 1, "execution": execution}
    for key in _KEPT_TOP_LEVEL:
        if PREFIX + key in environment.extras:
            value[key] = environment.extras[PREFIX + key]
    return value


def _assign_ranks(machines: list[Machine]) -> list[int]:
    """The machines' own ranks when every machine has a distinct one; otherwise 0..n-1 in
    topology order."""
    given = [machine.rank for machine in machines]
    if all(rank is not None and rank >= 0 for rank in given) and len(set(given)) == len(given):
        return [rank for rank in given if rank is not None]
    return list(range(len(machines)))


def _children(cpus: tuple[ProcessingUnit, ...], gpus: tuple[ProcessingUnit, ...],
              kept_cores: Any, others: Any) -> tuple[tuple[str, str], ...]:
    """A machine's R_lite children; a pure function of the machine's parts, so the writer
    computes it once per distinct shape."""
    children: list[tuple[str, str]] = [("core", _ids_text(kept_cores, _core_count(cpus)))]
    gpu_ids = [gpu.id for gpu in gpus]
    if gpu_ids:
        if _gpu_ids_are_usable(gpus):
            children.append(("gpu", IdSet.from_ids(i for i in gpu_ids
                                                   if isinstance(i, int)).encode()))
        else:
            children.append(("gpu", _ids_text(None, len(gpu_ids))))
    if isinstance(others, dict):
        for kind, text in others.items():
            if kind not in ("core", "gpu") and isinstance(kind, str) and kind \
                    and isinstance(text, str):
                children.append((kind, _ids_text(text, None)))
    return tuple(children)


def _ids_text(kept: Any, count: int | None) -> str:
    """The idset the reader kept, when it is one and still has ``count`` members (any count
    when ``None``); else ``0-(count-1)``."""
    if isinstance(kept, str):
        try:
            ids = IdSet.decode(kept)
        except IdsetError:
            ids = IdSet.empty()
        if count is None or len(ids) == count:
            return ids.encode()
    return IdSet.from_range(0, (count or 0) - 1).encode()
