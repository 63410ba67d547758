"""OpenDC SC18 ``setup.json``: the topology file of the SC18 reference-architecture simulator.

Shape: ``{"name", "rooms": [{"type", "objects": [{"type": "RACK", "machines":
[{"cpus": [cpu type id, ...]}]}]}]}``. A file is one datacenter; machine order is file order
(rooms, racks, machines), which is the tie-break order of every placement policy.

CPU type ids are fixed by the SC18 parser (and the paper's appendix A-G):

==  =============================  =====  =========  =====
id  CPU                            cores  clock      power
==  =============================  =====  =========  =====
1   Intel i7 v6 6700k              4      4,100 MHz  70 W
2   Intel i5 v6 (model "6700k")    2      3,500 MHz  50 W
==  =============================  =====  =========  =====

Any other id is an error at its position. A machine's cores are the sum over its CPUs.

Model mapping: one :class:`Datacenter` without id or name; each room a :class:`Room` with its
``type``; each rack object a :class:`Rack`; each machine a :class:`Machine` with no id (the
file has none; its position is its identity) whose CPUs are the table's entries with
``id`` set to the type id. The file's ``name`` is ``Environment.name`` (``""`` stands for
no name, since the SC18 parser needs the key).

The writer maps each model CPU to a type id by its cores and clock rate (4 cores at 4.1 GHz →
1, 2 cores at 3.5 GHz → 2). A machine with any other CPU cannot be written: it is left out,
reported as a ``machine.cpus`` loss and a ``opendc-setup.unwritable-machine`` warning naming
it. Vendor strings, power or CPU ids that differ from the table's (including none given) are
losses of ``cpu.vendor`` / ``cpu.energy_consumption_w`` / ``cpu.id``.

``normal_form`` states this value restriction for the loss contract (``converters/losses.py``,
Value restrictions): machines left out, every other CPU replaced by its table entry;
``normal_form_losses`` names the fields that changes, as the writer reports them.

Divergences
-----------

1. The i5's model string in the SC18 code also says "6700k" (a copy slip: the i5 6th
   generation is a 6600k); dcx keeps the code's string so that machines round-trip exactly.
2. The SC18 parser accepts any ``type`` on rack objects and rooms; dcx requires ``"RACK"``
   for objects (the only kind the parser turns into machines) and keeps a room's type as
   given.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import (
    Diagnostic,
    LossCounter,
    ReadResult,
    WriteResult,
    warning,
)
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    MachineState,
    ProcessingUnit,
    Rack,
    Room,
    Workload,
)
from dcx.parsing.jsonio import dumps_canonical, load_json
from dcx.parsing.schemas import schema_diagnostics

SCHEMA = "opendc-setup.schema.json"

CPU_TYPES: dict[int, ProcessingUnit] = {
    1: ProcessingUnit(cores=4, clock_rate_hz=4.1e9, id=1, manufacturer="Intel", family="i7",
                      generation="v6", model="6700k", energy_consumption_w=70.0),
    2: ProcessingUnit(cores=2, clock_rate_hz=3.5e9, id=2, manufacturer="Intel", family="i5",
                      generation="v6", model="6700k", energy_consumption_w=50.0),
}
"""The SC18 parser's hard-coded CPU types, by id."""

HOLDS = frozenset({
    "environment.name", "room", "room.type", "rack", "machine.cpus", "machine.cpus.sockets",
    "cpu.clock_rate_hz", "cpu.vendor", "cpu.id", "cpu.energy_consumption_w",
})

_CPU_POINTER = re.compile(r"/rooms/\d+/objects/\d+/machines/\d+/cpus/\d+$")


def sniff(data: bytes) -> bool:
    head = data[:4096]
    return (b'"rooms"' in head and b'"machines"' in head
            and re.search(rb'"cpus"\s*:\s*\[\s*\d', head) is not None
            and b'"datacenters"' not in head)


def read(data: bytes) -> ReadResult:
    loaded, problems = load_json(data)
    if loaded is None:
        return ReadResult(None, tuple(problems))
    found = [_unknown_cpu(d) if d.code == "schema.enum" and _CPU_POINTER.search(d.pointer)
             else d for d in schema_diagnostics(SCHEMA, loaded.value, loaded.locator)]
    if found:
        return ReadResult(None, tuple(found))
    root = loaded.value
    rooms = tuple(
        Room(
            type=room["type"],
            racks=tuple(
                Rack(slots=tuple(
                    Machine(cpus=tuple(CPU_TYPES[cpu] for cpu in machine["cpus"]))
                    for machine in rack["machines"]
                ))
                for rack in room["objects"]
            ),
        )
        for room in root["rooms"]
    )
    diagnostics: list[Diagnostic] = []
    # SC18 needs a name; dcx writes "" for a model without one and reads "" back as none.
    environment = Environment(datacenters=(Datacenter(rooms=rooms),), name=root["name"] or None)
    if not any(True for _ in environment.machines()):
        diagnostics.append(warning("the setup has no machines", "opendc-setup.no-machines",
                                   line=1, column=1))
    return ReadResult(Document(environment=environment), tuple(diagnostics))


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
    are left out, every other CPU becomes its type's table entry."""
    environment = document.environment
    if environment is None:
        return document
    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(replace(rack, slots=_writable_slots(rack.slots))
                                  for rack in room.racks))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    return replace(document, environment=replace(environment, datacenters=datacenters))


def _writable_slots(slots: tuple[Machine | None, ...]) -> tuple[Machine | None, ...]:
    written: list[Machine | None] = []
    for slot in slots:
        if slot is None:
            written.append(None)
            continue
        keys = [cpu_type_of(cpu) for cpu in slot.cpus]
        if all(key is not None for key in keys):
            written.append(replace(slot, cpus=tuple(CPU_TYPES[key] for key in keys
                                                    if key is not None)))
    return tuple(written)


def normal_form_losses(document: Document) -> frozenset[str]:
    """The field paths ``normal_form`` changes in ``document`` (the writer's CPU losses)."""
    losses = LossCounter()
    if document.environment is not None:
        for machine in document.environment.machines():
            keys = [cpu_type_of(cpu) for cpu in machine.cpus]
            if any(key is None for key in keys):
                losses.add("machine.cpus")
                continue
            for cpu, key in zip(machine.cpus, keys, strict=True):
                assert key is not None
                _cpu_losses(cpu, key, losses)
    return frozenset(loss.field for loss in losses.losses())


def _unheld_machine_fields(machine: Machine) -> Iterator[str]:
    checks = (
        ("machine.id", machine.id is not None),
        ("machine.name", machine.name is not None),
        ("machine.state", machine.state is not MachineState.ACTIVE),
        ("machine.state_label", machine.state_label is not None),
        ("machine.gpus", bool(machine.gpus)),
        ("machine.memory", bool(machine.memory)),
        ("machine.storage", bool(machine.storage)),
        ("machine.features", bool(machine.features)),
        ("machine.resources", bool(machine.resources)),
        ("machine.os", machine.os is not None),
        ("machine.arch", machine.arch is not None),
        ("machine.description", machine.description is not None),
        ("machine.swap_mb", machine.swap_mb is not None),
        ("machine.network_mbit_s", machine.network_mbit_s is not None),
        ("machine.rank", machine.rank is not None),
        ("machine.available", machine.available is not None),
        ("machine.utilized", machine.utilized is not None),
        ("machine.extras", bool(machine.extras)),
    )
    return (name for name, present in checks if present)


def _cpu_losses(cpu: ProcessingUnit, key: int, losses: LossCounter) -> None:
    known = CPU_TYPES[key]
    vendor = (cpu.manufacturer, cpu.family, cpu.generation, cpu.model)
    if vendor != (known.manufacturer, known.family, known.generation, known.model):
        losses.add("cpu.vendor", detail="SC18 CPU types carry fixed vendor strings")
    if cpu.energy_consumption_w != known.energy_consumption_w:
        losses.add("cpu.energy_consumption_w", detail="SC18 CPU types carry a fixed power")
    if cpu.id != key:
        losses.add("cpu.id", detail="the CPU id is the SC18 type id")
    if cpu.extras:
        losses.add("machine.extras", detail="CPU extras")


def _environment_losses(environment: Environment, losses: LossCounter) -> None:
    if environment.description is not None:
        losses.add("environment.description")
    if environment.extras:
        losses.add("environment.extras")
    for event in environment.events:
        losses.add("environment.events.machine_state" if hasattr(event, "machine")
                   else "environment.events.scheduler")
    if len(environment.datacenters) > 1:
        losses.add("datacenter", len(environment.datacenters) - 1,
                   "the rooms of every datacenter are written into one setup")
    for datacenter in environment.datacenters:
        for name, present in (
            ("datacenter.id", datacenter.id is not None),
            ("datacenter.name", datacenter.name is not None),
            ("datacenter.location", datacenter.location is not None),
            ("datacenter.operator", datacenter.operator is not None),
            ("datacenter.scheduler", datacenter.scheduler is not None),
            ("datacenter.extras", bool(datacenter.extras)),
        ):
            if present:
                losses.add(name)
        for room in datacenter.rooms:
            for name, present in (
                ("room.id", room.id is not None), ("room.name", room.name is not None),
                ("room.geometry", room.location is not None or room.size is not None),
                ("room.extras", bool(room.extras)),
            ):
                if present:
                    losses.add(name)
            for rack in room.racks:
                for name, present in (
                    ("rack.id", rack.id is not None), ("rack.name", rack.name is not None),
                    ("rack.capacity_units", rack.capacity_units is not None),
                    ("rack.power_capacity_w", rack.power_capacity_w is not None),
                    ("rack.empty_slots", any(slot is None for slot in rack.slots)),
                    ("rack.extras", bool(rack.extras)),
                ):
                    if present:
                        losses.add(name)


def write(document: Document) -> WriteResult:
    environment = document.environment or Environment()
    losses = LossCounter()
    diagnostics: list[Diagnostic] = []
    _environment_losses(environment, losses)
    if document.workload is not None and document.workload != Workload():
        losses.add("workload", detail="a topology format holds no workload")
    rooms: list[dict[str, Any]] = []
    position = 0
    for datacenter in environment.datacenters:
        for room in datacenter.rooms:
            objects: list[dict[str, Any]] = []
            for rack in room.racks:
                machines: list[dict[str, Any]] = []
                for machine in rack.machines:
                    position += 1
                    written = _machine(machine, position, losses, diagnostics)
                    if written is not None:
                        machines.append(written)
                objects.append({"type": "RACK", "machines": machines})
            rooms.append({"type": room.type, "objects": objects})
    setup = {"name": environment.name if environment.name is not None else "", "rooms": rooms}
    return WriteResult(dumps_canonical(setup), losses.losses(), tuple(diagnostics))


def _machine(
    machine: Machine, position: int, losses: LossCounter, diagnostics: list[Diagnostic]
) -> dict[str, Any] | None:
    keys = [cpu_type_of(cpu) for cpu in machine.cpus]
    if any(key is None for key in keys):
        label = f"machine {machine.id!r}" if machine.id is not None else f"machine #{position}"
        odd = ", ".join(f"{cpu.cores} cores at {(cpu.clock_rate_hz or 0) / 1e6:,.0f} MHz"
                        for cpu, key in zip(machine.cpus, keys, strict=True) if key is None)
        losses.add("machine.cpus", detail="machines with CPUs other than the SC18 types "
                   "(4 cores at 4,100 MHz or 2 cores at 3,500 MHz) were left out")
        diagnostics.append(warning(
            f"{label} left out: its CPU ({odd}) is not an SC18 CPU type",
            "opendc-setup.unwritable-machine"))
        return None
    for name in _unheld_machine_fields(machine):
        losses.add(name)
    for cpu, key in zip(machine.cpus, keys, strict=True):
        assert key is not None
        _cpu_losses(cpu, key, losses)
    return {"cpus": keys}


FORMAT = FormatDeclaration(
    name="opendc-setup",
    title="OpenDC SC18 setup.json",
    family="trace",
    kind="topology",
    extensions=(".json",),
    content=frozenset({"json"}),
    schema="opendc-setup.schema.json",
    description=("The SC18 simulator's topology: rooms of racks of machines listing "
                 "hard-coded CPU type ids (1 = i7, 2 = i5)."),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
)
