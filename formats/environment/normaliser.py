"""Environment JSON's normal form: what the upstream jsspp-osp schema accepts of a document
(see "Upstream requirements" in the package docstring), and why it refuses machines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from itertools import repeat
from typing import Any, TypeVar
from urllib.parse import unquote

from dcx.core.groups import MachineGroup, Slots, machine_parts, part_count, part_template, slots_of
from dcx.core.ids import id_from_text
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Event,
    Id,
    Machine,
    MachineStateChange,
    ProcessingUnit,
    Rack,
    Room,
    SchedulerSpec,
    StorageUnit,
)

ROOM_TYPES = frozenset(("COOLING", "HALLWAY", "OFFICE", "POWER", "SERVER"))
DEFINITION_EXTRA = "environment:base"
"""Machine extra: the ``$base`` pointer into ``definitions`` a rack unit was read with. The
writer puts the machine's shared hardware back under that name, so a rewrite keeps the
user's definition names; formats other than environment JSON do not hold it."""
_DEFINITIONS_PREFIX = "#/definitions/"
GENERATED_DEFINITIONS = "dcx:machines"
"""Where the writer puts definitions of its own (``type-1``, …) for identical machines the
user named no definition for; the reader keeps no name under it, so they stay dcx's."""
_GENERATED_PREFIX = f"{_DEFINITIONS_PREFIX}{GENERATED_DEFINITIONS}/"
_ID_PATHS = {"datacenter": "datacenter.id", "room": "room.id", "rack": "rack.id",
             "machine": "machine.id"}


_UPSTREAM_NEEDS = {
    "machine.cpus": "a CPU with a positive clock rate and at least one core",
    "machine.gpus": "GPUs with a positive clock rate and at least one core",
    "machine.memory": "memory in whole MB",
    "machine.storage": "storage in whole MB",
}


def leaves_out(document: Document) -> str:
    """Why the upstream jsspp-osp schema refuses machines of ``document``, in one line."""
    parts = list(machine_parts(document.environment)) if document.environment else []
    # a group's members share their hardware: judged once, counted with the group
    refused = [(part, problems) for part in parts
               if (problems := upstream_problems(part_template(part)))]
    if not refused:
        return ""
    part, problems = refused[0]
    first = part.member(0) if isinstance(part, MachineGroup) else part
    name = first.name or first.id or "the first"
    needs = " and ".join(_UPSTREAM_NEEDS[problem] for problem in problems)
    lacking = sum(part_count(part) for part, _ in refused)
    return (f"the jsspp-osp schema needs {needs} for every machine; "
            f"{lacking} of {sum(map(part_count, parts))} machines lack it (first: {name})")


def upstream_problems(machine: Machine) -> tuple[str, ...]:
    """The held field paths for which the upstream jsspp-osp schema refuses ``machine``:
    no CPU, or a processing unit without a positive clock-rate or with fewer than one core
    (``machine.cpus``, ``machine.gpus``); a memory or storage unit whose capacity is not a
    positive whole number of MB (``machine.memory``, ``machine.storage``); a power draw or
    speed that is not positive (the unit's path)."""
    problems = []
    if not machine.cpus or not _upstream_processing_units(machine.cpus):
        problems.append("machine.cpus")
    if machine.gpus and not _upstream_processing_units(machine.gpus):
        problems.append("machine.gpus")
    if machine.memory and not _upstream_storage_units(machine.memory):
        problems.append("machine.memory")
    if machine.storage and not _upstream_storage_units(machine.storage):
        problems.append("machine.storage")
    return tuple(problems)


def _upstream_processing_units(units: tuple[ProcessingUnit, ...]) -> bool:
    for unit in units:  # a plain loop: this runs for every machine of a large cluster
        rate, energy = unit.clock_rate_hz, unit.energy_consumption_w
        if rate is None or rate <= 0 or unit.cores < 1 or (energy is not None and energy <= 0):
            return False
    return True


def _upstream_storage_units(units: tuple[StorageUnit, ...]) -> bool:
    for unit in units:
        capacity = unit.capacity_mb
        if capacity <= 0 or (capacity.__class__ is not int and not capacity.is_integer()):
            return False
        read, write, energy = unit.read_speed_mb_s, unit.write_speed_mb_s, unit.energy_consumption_w
        if ((read is not None and read <= 0) or (write is not None and write <= 0)
                or (energy is not None and energy <= 0)):
            return False
    return True


def _has_text_unit_ids(machine: Machine) -> bool:
    for units in (machine.cpus, machine.gpus, machine.memory, machine.storage):
        for unit in units:
            if unit.id.__class__ is str:
                return True
    return False


@lru_cache(maxsize=1024)
def definition_path(pointer: str) -> tuple[str, ...] | None:
    """The keys under ``definitions`` that a ``$base`` pointer names (RFC 6901, percent-
    decoded as the resolver reads it), or ``None`` when it does not point there."""
    if not pointer.startswith(_DEFINITIONS_PREFIX):
        return None
    tokens = unquote(pointer[1:]).split("/")[1:]
    if tokens[:1] != ["definitions"] or len(tokens) < 2:
        return None
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in tokens[1:])


@dataclass(frozen=True)
class Normalised:
    """What environment JSON makes of an environment, and the held paths that changes."""

    environment: Environment
    changed: frozenset[str]
    left_out_labels: tuple[Callable[[], Iterable[Id | str]], ...]
    """What lists the machines left out, a group's members by one callable."""

    @property
    def left_out(self) -> tuple[Id | str, ...]:
        """The machines left out (their id, name or position), in document order."""
        return tuple(label for labels in self.left_out_labels for label in labels())


class _Normaliser:
    """One pass over an environment: leaves out the machines the upstream schema refuses,
    keeps each entity kind's ids unique, maps room types outside the schema's list to
    SERVER, drops definition names it cannot write back and events about machines left
    out. Objects that need no change are kept as they are (the usual case costs a walk)."""

    def __init__(self) -> None:
        self.changed: set[str] = set()
        self.left_out: list[Callable[[], Iterable[Id | str]]] = []
        self.seen: dict[str, set[Id]] = {kind: set() for kind in _ID_PATHS}
        self.verdicts: dict[tuple[int, ...], tuple[tuple[str, ...], Any]] = {}
        self.judged: list[Machine] = []  # keeps the ids in ``verdicts`` from being reused
        self.claimed: set[tuple[str, ...]] = set()
        self.claimed_prefixes: set[tuple[str, ...]] = set()
        self.position = 0

    def environment(self, environment: Environment) -> Environment:
        datacenters = _same_or(environment.datacenters,
                               tuple(map(self.datacenter, environment.datacenters)))
        events = _same_or(environment.events, tuple(
            self.event(event) for event in environment.events if self.keeps(event)))
        if datacenters is environment.datacenters and events is environment.events:
            return environment
        return replace(environment, datacenters=datacenters, events=events)

    def keeps(self, event: Event) -> bool:
        if isinstance(event, MachineStateChange):
            if event.machine in self.seen["machine"]:
                return True
            self.changed.add("environment.events.machine_state")
            return False
        if event.datacenter in self.seen["datacenter"]:
            return True
        self.changed.add("environment.events.scheduler")
        return False

    def event(self, event: Event) -> Event:
        if isinstance(event, MachineStateChange):
            return event
        scheduler = self.scheduler(event.scheduler, "environment.events.scheduler")
        return event if scheduler is event.scheduler else replace(event, scheduler=scheduler)

    def scheduler(self, spec: SchedulerSpec, path: str) -> SchedulerSpec:
        """Options without the resolver's keywords: a ``$base`` or ``$merge`` key written into
        free-form options would be read back as a reference, not as the option."""
        options = _without_reference_keys(spec.options)
        if options is spec.options:
            return spec
        self.changed.add(path)
        return replace(spec, options=options)

    def unique(self, kind: str, value: Id | None) -> Id | None:
        """``value``, unless an earlier entity of ``kind`` has it or the schema's id
        (a string or a non-negative integer) cannot be it."""
        if value is None:
            return None
        seen = self.seen[kind]
        if value in seen or isinstance(value, bool) or (isinstance(value, int) and value < 0):
            self.changed.add(_ID_PATHS[kind])
            return None
        seen.add(value)
        return value

    def datacenter(self, datacenter: Datacenter) -> Datacenter:
        identity = self.unique("datacenter", datacenter.id)
        rooms = _same_or(datacenter.rooms, tuple(map(self.room, datacenter.rooms)))
        scheduler = datacenter.scheduler and self.scheduler(datacenter.scheduler,
                                                            "datacenter.scheduler")
        if identity == datacenter.id and rooms is datacenter.rooms \
                and scheduler is datacenter.scheduler:
            return datacenter
        return replace(datacenter, id=identity, rooms=rooms, scheduler=scheduler)

    def room(self, room: Room) -> Room:
        identity = self.unique("room", room.id)
        kind = room.type
        if kind not in ROOM_TYPES:
            self.changed.add("room.type")
            kind = "SERVER"  # the schema's kind for a room that holds racks
        racks = _same_or(room.racks, tuple(map(self.rack, room.racks)))
        if identity == room.id and kind == room.type and racks is room.racks:
            return room
        return replace(room, id=identity, type=kind, racks=racks)

    def rack(self, rack: Rack) -> Rack:
        identity = self.unique("rack", rack.id)
        if isinstance(rack.slots, Slots):
            parts = rack.slots.parts
            kept = [kept for part in parts for kept in self.part(part)]
            if len(kept) == len(parts) and all(a is b for a, b in zip(kept, parts, strict=True)):
                slots: Sequence[Machine | None] = rack.slots
            else:
                slots = slots_of(kept)
        else:
            slots = _same_or(rack.slots, tuple(
                slot for slot in map(self.slot, rack.slots) if slot is not _LEFT_OUT))
        if identity == rack.id and slots is rack.slots:
            return rack
        return replace(rack, id=identity, slots=slots)

    def part(self, part: Machine | MachineGroup | None) -> list[Machine | MachineGroup | None]:
        """A slot or a group as the normal form keeps it (a group whose member ids the
        schema cannot all keep is taken machine by machine)."""
        if not isinstance(part, MachineGroup):
            slot = self.slot(part)
            return [] if slot is _LEFT_OUT else [slot]  # type: ignore[list-item,unused-ignore]
        template = part.template
        problems, units = self.verdict(template)
        if problems:
            self.changed.update(problems)
            self.left_out.append(partial(_member_labels, part, self.position))
            self.position += part.count
            return []
        if template.id is not None or (part.ids is not None and not self.all_unique(part.ids)):
            kept = (self.slot(member) for member in part)
            return [machine for machine in kept  # type: ignore[misc,unused-ignore]
                    if machine is not _LEFT_OUT]
        self.position += part.count
        fixed = self.shared_parts(template, units)
        return [part if fixed is template else replace(part, template=fixed)]

    def all_unique(self, ids: Sequence[Id]) -> bool:
        """Whether ids unseen, distinct and writable; if so they are now seen."""
        seen = self.seen["machine"]
        if any(value in seen or isinstance(value, bool) or (isinstance(value, int) and value < 0)
               for value in ids) or len(set(ids)) != len(ids):
            return False
        seen.update(ids)
        return True

    def verdict(self, machine: Machine) -> tuple[tuple[str, ...], tuple[Any, ...] | None]:
        key = (id(machine.cpus), id(machine.gpus), id(machine.memory), id(machine.storage))
        verdict = self.verdicts.get(key)
        if verdict is None:
            verdict = self.verdicts[key] = self.judge(machine)
            self.judged.append(machine)
        return verdict

    def slot(self, machine: Machine | None) -> Machine | object | None:
        if machine is None:
            return None
        self.position += 1
        problems, units = self.verdict(machine)
        if problems:
            self.changed.update(problems)
            label = machine.id if machine.id is not None else machine.name or f"#{self.position}"
            self.left_out.append(partial(repeat, label, 1))
            return _LEFT_OUT
        identity = self.unique("machine", machine.id)
        if identity != machine.id:
            machine = replace(machine, id=identity)
        return self.shared_parts(machine, units)

    def shared_parts(self, machine: Machine, units: tuple[Any, ...] | None) -> Machine:
        """``machine`` with its definition name dropped when it cannot be written back and
        its units as they read back."""
        extras = machine.extras
        pointer = extras.get(DEFINITION_EXTRA) if extras else None
        if pointer is not None and not self.claim(pointer):
            self.changed.add("machine.extras")
            extras = {key: value for key, value in extras.items() if key != DEFINITION_EXTRA}
        if extras is machine.extras and units is None:
            return machine
        machine = replace(machine, extras=extras)
        if units is not None:
            cpus, gpus, memory, storage = units
            machine = replace(machine, cpus=cpus, gpus=gpus, memory=memory, storage=storage)
        return machine

    def judge(self, machine: Machine) -> tuple[tuple[str, ...], tuple[Any, ...] | None]:
        """What the upstream schema refuses in the machine's units, and the units with the
        ids they read back with when that differs (unit ids are text in the format: the
        text ``"7"`` reads back as the integer 7)."""
        problems = upstream_problems(machine)
        if problems or not _has_text_unit_ids(machine):
            return problems, None
        parts = []
        for units, path in ((machine.cpus, "cpu.id"), (machine.gpus, "gpu.id"),
                            (machine.memory, "memory.details"),
                            (machine.storage, "storage.details")):
            fixed = _same_or(units, tuple(
                unit if unit.id is None or id_from_text(str(unit.id)) == unit.id
                else replace(unit, id=id_from_text(str(unit.id))) for unit in units))
            if fixed is not units:
                self.changed.add(path)
            parts.append(fixed)
        originals = (machine.cpus, machine.gpus, machine.memory, machine.storage)
        if all(new is old for new, old in zip(parts, originals, strict=True)):
            return problems, None
        return problems, tuple(parts)

    def claim(self, pointer: Any) -> bool:
        """Whether the writer can put a definition where ``pointer`` points: a place under
        ``definitions`` that is neither inside nor above another machine definition."""
        path = definition_path(pointer) if isinstance(pointer, str) else None
        if path is None or path[0] == GENERATED_DEFINITIONS:
            return False
        if path in self.claimed:
            return True
        prefixes = {path[:end] for end in range(1, len(path))}
        if path in self.claimed_prefixes or not prefixes.isdisjoint(self.claimed):
            return False
        self.claimed.add(path)
        self.claimed_prefixes |= prefixes
        return True


_LEFT_OUT = object()
_Parts = TypeVar("_Parts", bound=Sequence[Any])


def _member_labels(group: MachineGroup, before: int) -> Iterator[Id | str]:
    """Each member's id, name or position (``before`` machines precede the group)."""
    template = group.template
    ids = group.ids if group.ids is not None else repeat(template.id, group.count)
    names = group.names if group.names is not None else repeat(template.name, group.count)
    for position, identity, name in zip(range(before + 1, before + group.count + 1), ids,
                                        names, strict=False):
        yield identity if identity is not None else name or f"#{position}"


_REFERENCE_KEYS = ("$base", "$merge")


def _without_reference_keys(value: Any) -> Any:
    """``value`` with every ``$base``/``$merge`` key removed at any depth (the very same
    object when it has none)."""
    if isinstance(value, dict):
        kept = {key: _without_reference_keys(item) for key, item in value.items()
                if key not in _REFERENCE_KEYS}
        same = len(kept) == len(value) and all(kept[key] is value[key] for key in kept)
        return value if same else kept
    if isinstance(value, list | tuple):
        items = [_without_reference_keys(item) for item in value]
        same = all(new is old for new, old in zip(items, value, strict=True))
        return value if same else type(value)(items)
    return value


def _same_or(old: _Parts, new: tuple[Any, ...]) -> _Parts | tuple[Any, ...]:
    """``old`` when ``new`` holds the very same objects (nothing changed below)."""
    if len(old) == len(new) and all(a is b for a, b in zip(old, new, strict=True)):
        return old
    return new


def normalise(environment: Environment) -> Normalised:
    normaliser = _Normaliser()
    result = normaliser.environment(environment)
    return Normalised(result, frozenset(normaliser.changed), tuple(normaliser.left_out))


def normal_form(document: Document) -> Document:
    """What environment JSON makes of ``document``: only what the upstream jsspp-osp schema
    accepts (see "Upstream requirements" in the package docstring)."""
    if document.environment is None:
        return document
    environment = normalise(document.environment).environment
    if environment is document.environment:
        return document
    return replace(document, environment=environment)


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    if document.environment is None:
        return frozenset()
    return normalise(document.environment).changed
