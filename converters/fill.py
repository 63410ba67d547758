"""Facts a target needs that the source does not state, given by the user:
``dcx convert --fill FIELD=VALUE``.

Environment JSON needs a clock rate for every CPU; Flux R, JGF and Slurm state none, so their
machines cannot be written there until someone says what it is. A fill is a model transform
made before the conversion's checks: it puts the value into every machine (or CPU) of the
document that lacks it and leaves every value the source states alone. Machine groups stay
groups: a fill changes a group's template, so a million-rank Flux R allocation is filled in
one step and written as one definition.

Fields (a small vocabulary; units are required, so a value is never read in the wrong one):

* ``clock-rate``: each CPU without a clock rate; ``Hz``, ``kHz``, ``MHz`` or ``GHz``.
* ``gpu-clock-rate``: each GPU without a clock rate; the same units.
* ``memory``: each machine without memory; ``MiB``, ``GiB`` or ``TiB`` (the model's MB is
  2**20 bytes).
* ``cores``: each machine without a CPU gets one CPU of that many cores; a whole number, no
  unit (Slurm needs a CPU count for every node: without one, Slurm counts 1).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from dcx.core.groups import MachineGroup, map_slots, part_count, slot_parts
from dcx.core.model import (
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    StorageUnit,
    build,
)

_Model = TypeVar("_Model", Machine, ProcessingUnit)


class FillError(ValueError):
    """A ``--fill`` the command line cannot use; the message is one line for the user."""


@dataclass(frozen=True)
class FillField:
    name: str
    units: dict[str, float]
    """Unit (lower case) → factor to the model's unit."""
    model_unit: str
    fill: Callable[[Machine, float], Machine | None]
    """The machine with the value filled in, or ``None`` when it lacks nothing."""
    example: str
    """A value as a user writes it."""
    whole: bool = False
    """A count: a whole number, without a unit."""


def _rated(units: tuple[ProcessingUnit, ...], hz: float) -> tuple[ProcessingUnit, ...] | None:
    """``units`` with ``hz`` where a unit has no clock rate; ``None`` when none lacks one."""
    if not any(unit.clock_rate_hz is None for unit in units):
        return None
    return tuple(_changed(unit, clock_rate_hz=hz) if unit.clock_rate_hz is None else unit
                 for unit in units)


def _changed(value: _Model, **fields: Any) -> _Model:
    """``dataclasses.replace`` for a model dataclass, at ``build``'s speed (a Slurm node
    holds a unit per CPU: a large cluster makes millions of them)."""
    return build(type(value), {**value.__dict__, **fields})


def _with_clock_rate(machine: Machine, hz: float) -> Machine | None:
    cpus = _rated(machine.cpus, hz)
    return None if cpus is None else _changed(machine, cpus=cpus)


def _with_gpu_clock_rate(machine: Machine, hz: float) -> Machine | None:
    gpus = _rated(machine.gpus, hz)
    return None if gpus is None else _changed(machine, gpus=gpus)


def _with_memory(machine: Machine, mb: float) -> Machine | None:
    if machine.memory:
        return None
    return _changed(machine, memory=(StorageUnit(capacity_mb=mb),))


def _with_cores(machine: Machine, cores: float) -> Machine | None:
    if machine.cpus:
        return None
    return _changed(machine, cpus=(ProcessingUnit(cores=int(cores)),))


FIELDS: dict[str, FillField] = {
    # first: a CPU it adds may then lack a clock rate (a hint names both)
    "cores": FillField("cores", {"": 1.0}, "cores", _with_cores, "32", whole=True),
    "clock-rate": FillField("clock-rate", {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9},
                            "Hz", _with_clock_rate, "2.4GHz"),
    "gpu-clock-rate": FillField("gpu-clock-rate", {"hz": 1.0, "khz": 1e3, "mhz": 1e6,
                                                    "ghz": 1e9}, "Hz", _with_gpu_clock_rate,
                                "1.4GHz"),
    "memory": FillField("memory", {"mib": 1.0, "gib": 1024.0, "tib": 1024.0 ** 2},
                        "MB", _with_memory, "64GiB"),
}

_UNIT_NAMES = {"hz": "Hz", "khz": "kHz", "mhz": "MHz", "ghz": "GHz", "mib": "MiB",
               "gib": "GiB", "tib": "TiB"}
_VALUE = re.compile(r"\s*((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*")


@dataclass(frozen=True)
class Fill:
    """One ``--fill``: ``value`` in the model's unit of ``field``; ``text`` as reported."""

    field: str
    value: float
    text: str

    def apply(self, machine: Machine) -> Machine | None:
        return FIELDS[self.field].fill(machine, self.value)


@dataclass(frozen=True)
class Filled:
    """What a fill changed: how many machines got its value."""

    fill: Fill
    machines: int

    def render(self) -> str:
        noun = "machine" if self.machines == 1 else "machines"
        return f"filled {self.fill.field}={self.fill.text} into {self.machines:,} {noun}"


def parse_fill(text: str) -> Fill:
    """``FIELD=VALUE`` (``clock-rate=2.4GHz``, ``memory=64GiB``) as a fill, or ``FillError``
    saying what is wrong."""
    known = ", ".join(FIELDS)
    name, equals, given = text.partition("=")
    name = name.strip()
    if not equals:
        raise FillError(f"--fill {text!r}: expected FIELD=VALUE with FIELD one of {known}")
    spec = FIELDS.get(name)
    if spec is None:
        raise FillError(f"--fill {text!r}: unknown field {name!r}; fields are {known}")
    units = ", ".join(_UNIT_NAMES.get(unit, unit) for unit in spec.units)
    match = _VALUE.fullmatch(given)
    if spec.whole and (match is None or match.group(2) or not match.group(1).isdigit()):
        raise FillError(f"--fill {text!r}: {name} takes a positive whole number without a "
                        f"unit, such as {name}={spec.example}")
    if match is None or match.group(2).lower() not in spec.units:
        raise FillError(f"--fill {text!r}: {name} takes a positive number with a unit "
                        f"({units}), such as {name}={spec.example}")
    number = float(match.group(1))
    unit = match.group(2).lower()
    value = number * spec.units[unit]
    if not (value > 0 and math.isfinite(value)):
        raise FillError(f"--fill {text!r}: {name} must be positive and finite")
    shown = str(int(number)) if number.is_integer() and number < 1e15 else repr(number)
    if spec.whole:
        return Fill(name, value, shown)
    return Fill(name, value, f"{shown} {_UNIT_NAMES[unit]}")


def apply_fills(document: Document,
                fills: Sequence[Fill]) -> tuple[Document, tuple[Filled, ...]]:
    """``document`` with each fill's value in every machine that lacks it, and how many
    machines each fill changed (groups counted by their members, never expanded)."""
    environment = document.environment
    if not fills or environment is None:
        return document, tuple(Filled(fill, 0) for fill in fills)
    found: list[Filled] = []
    for fill in fills:
        environment, machines = _filled(environment, fill)
        found.append(Filled(fill, machines))
    return replace(document, environment=environment), tuple(found)


def _filled(environment: Environment, fill: Fill) -> tuple[Environment, int]:
    changed = 0
    # machines of one kind share their unit tuples: fill each tuple once, and give the
    # machines that share it one filled tuple
    done: dict[tuple[int, int, int], tuple[Machine, Machine | None]] = {}

    def machine(single: Machine) -> Machine:
        nonlocal changed
        key = (id(single.cpus), id(single.gpus), id(single.memory))
        seen = done.get(key)
        if seen is None:
            seen = done[key] = (single, fill.apply(single))
        sample, filled = seen
        if filled is None:
            return single
        changed += 1
        if sample is single:
            return filled
        return _changed(single, cpus=filled.cpus, gpus=filled.gpus, memory=filled.memory)

    def group(members: MachineGroup) -> MachineGroup:
        nonlocal changed
        filled = fill.apply(members.template)
        if filled is None:
            return members
        changed += part_count(members)
        return replace(members, template=filled)

    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(
            rack if not any(part is not None for part in slot_parts(rack.slots))
            else replace(rack, slots=map_slots(rack.slots, machine, group))
            for rack in room.racks))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    if not changed:
        return environment, 0
    return replace(environment, datacenters=datacenters), changed
