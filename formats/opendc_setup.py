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
1, 2 cores at 3.5 GHz → 2). A machine with any other CPU cannot be written: it is left out
(a ``machine.cpus`` loss), and so is a rack whose every machine was left out; a rack that had
no machines is written with ``"machines": []``, which the SC18 parser accepts. Vendor strings,
power or CPU ids that differ from the table's (including none given) are losses of
``cpu.vendor`` / ``cpu.energy_consumption_w`` / ``cpu.id``. A conversion that would leave out
every machine is refused (``convert.nothing-held``).

``normal_form`` states this value restriction (``dcx.core.restrict``, Value restrictions):
machines left out, every other CPU replaced by its table entry; ``normal_form_losses`` names
the fields that changes. The writer serialises the normal form and counts nothing.

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

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import (
    Diagnostic,
    ReadResult,
    WriteResult,
    warning,
)
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
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
    """A ``rooms`` array and machines listing CPU type ids, or no ``cpus`` at all (the empty
    setup dcx writes for a topology without machines, racks without machines)."""
    head = data[:4096]
    if b'"datacenters"' in head or b'"environment"' in head:
        return False
    return (re.search(rb'"rooms"\s*:\s*\[', head) is not None
            and (re.search(rb'"cpus"\s*:\s*\[\s*[\d\]]', head) is not None
                 or b'"cpus"' not in head))


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
    machines = list(document.environment.machines()) if document.environment else []
    left_out = [machine for machine in machines if not _writable(machine)]
    if not left_out:
        return ""
    types = "; ".join(f"{known.cores} cores at {known.clock_rate_hz / 1e9:g} GHz"
                      for known in CPU_TYPES.values())
    first = left_out[0].name or left_out[0].id or "the first"
    return (f"the SC18 simulator knows two CPU types ({types}); {len(left_out)} of "
            f"{len(machines)} machines have other CPUs (first: {first})")


def _writable(machine: Machine) -> bool:
    return all(cpu_type_of(cpu) is not None for cpu in machine.cpus)


def _emptied(rack: Rack) -> bool:
    """Whether leaving out machines leaves ``rack`` without any."""
    machines = rack.machines
    return bool(machines) and not any(map(_writable, machines))


def _writable_slots(slots: tuple[Machine | None, ...]) -> tuple[Machine | None, ...]:
    written: list[Machine | None] = []
    for slot in slots:
        if slot is None:
            written.append(None)
        elif _writable(slot):
            written.append(replace(slot, cpus=tuple(CPU_TYPES[cpu_type_of(cpu) or 0]
                                                    for cpu in slot.cpus)))
    return tuple(written)


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    changed: set[str] = set()
    if document.environment is not None:
        for machine in document.environment.machines():
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
        {"type": "RACK", "machines": [{"cpus": [cpu_type_of(cpu) for cpu in machine.cpus]}
                                      for machine in rack.machines]}
        for rack in room.racks]}
        for datacenter in environment.datacenters for room in datacenter.rooms]
    setup = {"name": environment.name if environment.name is not None else "", "rooms": rooms}
    return WriteResult(dumps_canonical(setup))


CODES = (
    Code("opendc-setup.unknown-cpu", "error",
         "A CPU type id is not one of the SC18 parser's two (1 = i7, 2 = i5)."),
    Code("opendc-setup.no-machines", "warning", "The setup has no machines."),
)

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
    leaves_out=leaves_out,
    codes=CODES,
)
