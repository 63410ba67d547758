"""OpenDC setup.json reading, normal form and writing; the package's docstring
(``dcx.formats.opendc_setup``) is the format's reference text."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from itertools import groupby
from typing import Any

from dcx.core.diagnostics import Diagnostic, ReadResult, WriteResult, warning
from dcx.core.groups import (
    MachineGroup,
    Slots,
    machine_parts,
    part_count,
    part_template,
    slot_parts,
    slots_of,
)
from dcx.core.located import Place
from dcx.core.model import Datacenter, Document, Environment, Machine, ProcessingUnit, Rack, Room
from dcx.parsing.jsonio import dumps_canonical, load_json, model_locator
from dcx.parsing.schemas import schema_diagnostics

SCHEMA = "opendc-setup.schema.json"

CPU_TYPES: dict[int, ProcessingUnit] = {
    1: ProcessingUnit(cores=4, clock_rate_hz=4.1e9, id=1, manufacturer="Intel", family="i7",
                      generation="v6", model="6700k", energy_consumption_w=70.0),
    2: ProcessingUnit(cores=2, clock_rate_hz=3.5e9, id=2, manufacturer="Intel", family="i5",
                      generation="v6", model="6700k", energy_consumption_w=50.0),
}
"""The SC18 parser's hard-coded CPU types, by id."""

_CPU_POINTER = re.compile(r"/rooms/\d+/objects/\d+/machines/\d+/cpus/\d+$")


def read(data: bytes) -> ReadResult:
    loaded, problems = load_json(data)
    if loaded is None:
        return ReadResult(None, tuple(problems))
    found = [_unknown_cpu(d) if d.code == "schema.enum" and _CPU_POINTER.search(d.pointer)
             else d for d in schema_diagnostics(SCHEMA, loaded.value, loaded.locator)]
    if found:
        return ReadResult(None, tuple(found))
    root = loaded.value
    kinds: dict[tuple[int, ...], Machine] = {}
    rooms = tuple(
        Room(type=room["type"],
             racks=tuple(Rack(slots=_slots(rack["machines"], kinds)) for rack in room["objects"]))
        for room in root["rooms"]
    )
    diagnostics: list[Diagnostic] = []
    # SC18 needs a name; dcx writes "" for a model without one and reads "" back as none.
    environment = Environment(datacenters=(Datacenter(rooms=rooms),), name=root["name"] or None)
    if next(machine_parts(environment), None) is None:
        diagnostics.append(warning("the setup has no machines", "opendc-setup.no-machines",
                                   line=1, column=1))
    return ReadResult(Document(environment=environment), tuple(diagnostics),
                      locator=model_locator(loaded.locator, _source))


def _slots(machines: list[dict[str, Any]],
           kinds: dict[tuple[int, ...], Machine]) -> tuple[Machine | None, ...] | Slots:
    """A rack's machines: consecutive machines with the same CPU type ids are identical (the
    file gives a machine nothing else), so each run of them is one machine group; one
    ``Machine`` per list of ids serves every machine and group template that has it."""
    parts: list[Machine | MachineGroup] = []
    for cpus, run in groupby(tuple(machine["cpus"]) for machine in machines):
        machine = kinds.get(cpus)
        if machine is None:
            machine = kinds[cpus] = Machine(cpus=tuple(CPU_TYPES[cpu] for cpu in cpus))
        count = sum(1 for _ in run)
        parts.append(machine if count == 1 else MachineGroup(machine, count))
    return slots_of(parts)


_SOURCE_KEYS = {"rooms": "/rooms", "racks": "/objects", "slots": "/machines"}
"""The model's levels by the file's names for them (the file is one datacenter)."""


def _source(place: Place) -> str | None:
    """The JSON Pointer a model object was read from: rooms, rack objects and machines
    nest as the model's do; the environment and its datacenter are the document."""
    return place.pointer(_SOURCE_KEYS) if place.part == "environment" else None


def _unknown_cpu(diagnostic: Diagnostic) -> Diagnostic:
    known = "; ".join(f"{key} = {cpu.family} ({cpu.cores} cores, "
                      f"{(cpu.clock_rate_hz or 0) / 1e6:,.0f} MHz)"
                      for key, cpu in CPU_TYPES.items())
    return replace(diagnostic, code="opendc-setup.unknown-cpu",
                   message=f"unknown CPU type id; the SC18 parser knows only {known}")


# --------------------------------------------------------------------------- write


def cpu_type_of(cpu: ProcessingUnit) -> int | None:
    """The SC18 CPU type id whose cores and clock rate ``cpu`` has, if any."""
    for key, known in CPU_TYPES.items():
        if cpu.cores == known.cores and cpu.clock_rate_hz == known.clock_rate_hz:
            return key
    return None


def normal_form(document: Document) -> Document:
    """What a setup file makes of ``document``: machines with a CPU that is not an SC18 type
    are left out, every other CPU becomes its type's table entry, and a rack whose every
    machine was left out goes too (a rack that had no machines stays: the file can hold it)."""
    environment = document.environment
    if environment is None:
        return document
    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(replace(rack, slots=_writable_slots(rack.slots))
                                  for rack in room.racks if not _emptied(rack)))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    return replace(document, environment=replace(environment, datacenters=datacenters))


def leaves_out(document: Document) -> str:
    """Why a setup file cannot hold machines of ``document``, in one line."""
    parts = list(machine_parts(document.environment)) if document.environment else []
    # a group's members share their CPUs: judged once, counted with the group
    left_out = [part for part in parts if not _writable(part_template(part))]
    if not left_out:
        return ""
    types = "; ".join(f"{known.cores} cores at {(known.clock_rate_hz or 0) / 1e9:g} GHz"
                      for known in CPU_TYPES.values())
    first = left_out[0].member(0) if isinstance(left_out[0], MachineGroup) else left_out[0]
    return (f"the SC18 simulator knows two CPU types ({types}); "
            f"{sum(map(part_count, left_out))} of {sum(map(part_count, parts))} machines "
            f"have other CPUs (first: {first.name or first.id or 'the first'})")


def _writable(machine: Machine) -> bool:
    return all(cpu_type_of(cpu) is not None for cpu in machine.cpus)


def _emptied(rack: Rack) -> bool:
    """Whether leaving out machines leaves ``rack`` without any."""
    templates = [part_template(part) for part in slot_parts(rack.slots) if part is not None]
    return bool(templates) and not any(map(_writable, templates))


def _writable_slots(slots: Sequence[Machine | None]) -> tuple[Machine | None, ...] | Slots:
    """``slots`` without the machines left out, a group kept whole (its template
    normalised once)."""
    written: list[Machine | MachineGroup | None] = []
    for part in slot_parts(slots):
        if part is None:
            written.append(None)
        elif _writable(template := part_template(part)):
            normal = replace(template, cpus=tuple(CPU_TYPES[cpu_type_of(cpu) or 0]
                                                  for cpu in template.cpus))
            written.append(replace(part, template=normal) if isinstance(part, MachineGroup)
                           else normal)
    return slots_of(written)


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    changed: set[str] = set()
    if document.environment is not None:
        for machine in map(part_template, machine_parts(document.environment)):
            if not _writable(machine):
                changed.add("machine.cpus")
                continue
            for cpu in machine.cpus:
                changed.update(_cpu_changes(cpu, cpu_type_of(cpu) or 0))
    return frozenset(changed)


def _cpu_changes(cpu: ProcessingUnit, key: int) -> Iterator[str]:
    """The held CPU fields that become the SC18 table's values."""
    known = CPU_TYPES[key]
    vendor = (cpu.manufacturer, cpu.family, cpu.generation, cpu.model)
    if vendor != (known.manufacturer, known.family, known.generation, known.model):
        yield "cpu.vendor"
    if cpu.energy_consumption_w != known.energy_consumption_w:
        yield "cpu.energy_consumption_w"
    if cpu.id != key:
        yield "cpu.id"
    if cpu.extras:
        yield "machine.extras"


def write(document: Document) -> WriteResult:
    """Serialise the normal form: one setup, the rooms of every datacenter in order."""
    environment = normal_form(document).environment or Environment()
    rooms = [{"type": room.type, "objects": [
        {"type": "RACK", "machines": _written_machines(rack)} for rack in room.racks]}
        for datacenter in environment.datacenters for room in datacenter.rooms]
    setup = {"name": environment.name if environment.name is not None else "", "rooms": rooms}
    return WriteResult(dumps_canonical(setup))


def _written_machines(rack: Rack) -> list[dict[str, list[int | None]]]:
    """A rack's machines as the file lists them; a group's members are one object repeated
    (they differ in nothing the file holds)."""
    written: list[dict[str, list[int | None]]] = []
    for part in slot_parts(rack.slots):
        if part is not None:
            entry = {"cpus": [cpu_type_of(cpu) for cpu in part_template(part).cpus]}
            written.extend([entry] * part_count(part))
    return written
