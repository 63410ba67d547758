"""Compact machine groups: identical machines held once, with a count.

A Flux R entry ``rank: "0-1048575"`` names a million ranks of one shape; a Haizea
``<node-set numnodes="64">`` and an environment definition used by many rack units say the
same. ``MachineGroup`` holds such machines as one ``template`` (everything they share) plus
what differs per member (id, name, rank), each as a compact sequence (a ``range``, a window
of a hostlist) or ``None`` when every member has the template's value.

A rack keeps its slots as ``Slots``: a sequence of ``Machine | None`` built from parts (single
slots and groups). It behaves as the tuple of slots it stands for (``len``, indexing,
iteration, equality with a tuple of the same machines) and expands itself once, on the first
request for single machines; code that only counts, or that handles a group as a whole
(``slot_parts``, ``machine_parts``, ``machine_count``), never expands it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from typing import Any, TypeAlias, TypeVar, overload

from dcx.core.model import Environment, Id, Machine, Rack

T = TypeVar("T")

MEMBER_FIELDS = ("id", "name", "rank")
"""The machine fields a group may vary per member."""


class Window(Sequence[T]):
    """``base[start:stop]`` without copying: a group's names within one hostlist."""

    __slots__ = ("base", "start", "stop")

    def __init__(self, base: Sequence[T], start: int, stop: int) -> None:
        if not 0 <= start <= stop <= len(base):
            raise ValueError(f"window {start}:{stop} outside a sequence of {len(base)}")
        self.base, self.start, self.stop = base, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.base[self.start + index]

    def __iter__(self) -> Iterator[T]:
        if self.start == 0 and self.stop == len(self.base):
            return iter(self.base)
        return map(self.base.__getitem__, range(self.start, self.stop))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Window) and other.base is self.base:
            return (self.start, self.stop) == (other.start, other.stop) or (
                len(self) == len(other) and list(self) == list(other))
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to any sequence of the same values

    def __repr__(self) -> str:
        return f"Window({self.base!r}, {self.start}, {self.stop})"


@dataclass(frozen=True, eq=False)
class MachineGroup:
    """``count`` machines equal to ``template`` except for the member fields given.

    Member ``i`` has ``ids[i]``, ``names[i]`` and ``ranks[i]``; a member sequence that is
    ``None`` gives every member the template's value. Sequences hold no ``None``."""

    template: Machine
    count: int
    ids: Sequence[Id] | None = None
    names: Sequence[str] | None = None
    ranks: Sequence[int] | None = None

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a machine group has at least one member, not {self.count}")
        for name in MEMBER_FIELDS:
            values = self.member_values(name)
            if values is not None and len(values) != self.count:
                raise ValueError(f"a group of {self.count} machines with {len(values)} {name}s")
            if values is not None and getattr(self.template, name) is not None:
                raise ValueError(f"a group's template has no {name} when its members have one")

    def member_values(self, name: str) -> Sequence[Any] | None:
        """The per-member sequence of ``id``, ``name`` or ``rank`` (``None``: the template's)."""
        values: Sequence[Any] | None = getattr(self, name + "s")
        return values

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Machine]:
        shared = self.template.__dict__
        columns = [self.member_values(name) or repeat(shared[name], self.count)
                   for name in MEMBER_FIELDS]
        new, set_state = object.__new__, object.__setattr__
        for identity, name, rank in zip(*columns, strict=False):
            values = shared.copy()
            values["id"], values["name"], values["rank"] = identity, name, rank
            member = new(Machine)
            set_state(member, "__dict__", values)
            yield member

    def member(self, index: int) -> Machine:
        if not 0 <= index < self.count:
            raise IndexError(index)
        changes = {name: values[index] for name in MEMBER_FIELDS
                   if (values := self.member_values(name)) is not None}
        return replace(self.template, **changes) if changes else self.template

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MachineGroup):
            return NotImplemented
        return (self.count == other.count and self.template == other.template
                and all(_same_values(self.member_values(name), other.member_values(name))
                        for name in MEMBER_FIELDS))

    __hash__ = None  # type: ignore[assignment]  # the template holds dicts


def _same_values(mine: Sequence[Any] | None, theirs: Sequence[Any] | None) -> bool:
    if mine is None or theirs is None:
        return mine is theirs
    if mine is theirs:
        return True
    if isinstance(mine, range) and isinstance(theirs, range):
        return mine == theirs
    return len(mine) == len(theirs) and all(a == b for a, b in zip(mine, theirs, strict=True))


Part: TypeAlias = Machine | MachineGroup | None
"""One part of a rack's slots: a machine, an explicit empty slot, or a group."""


class Slots(Sequence[Machine | None]):
    """A rack's slots held as parts; reads as the tuple of slots it stands for.

    Single machines are made on the first request for them (indexing, iteration,
    membership of a machine) and kept, so a machine read twice is the same object."""

    __slots__ = ("_expanded", "_length", "parts")

    def __init__(self, parts: Iterable[Part]) -> None:
        self.parts: tuple[Part, ...] = tuple(parts)
        self._length = sum(part.count if isinstance(part, MachineGroup) else 1
                           for part in self.parts)
        self._expanded: tuple[Machine | None, ...] | None = None

    def expanded(self) -> tuple[Machine | None, ...]:
        if self._expanded is None:
            slots: list[Machine | None] = []
            for part in self.parts:
                if isinstance(part, MachineGroup):
                    slots.extend(part)
                else:
                    slots.append(part)
            self._expanded = tuple(slots)
        return self._expanded

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Machine | None: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Machine | None, ...]: ...

    def __getitem__(self, index: int | slice) -> Machine | tuple[Machine | None, ...] | None:
        return self.expanded()[index]

    def __iter__(self) -> Iterator[Machine | None]:
        return iter(self.expanded())

    def __contains__(self, value: object) -> bool:
        if value is None:
            return any(part is None for part in self.parts)
        return value in self.expanded()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Slots):
            if len(self) != len(other):
                return False
            if len(self.parts) == len(other.parts) and all(
                    _same_part(a, b) for a, b in zip(self.parts, other.parts, strict=True)):
                return True
            return self.expanded() == other.expanded()
        if isinstance(other, tuple | list):
            return len(self) == len(other) and self.expanded() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.expanded())

    def __add__(self, other: Sequence[Machine | None]) -> Slots:
        return Slots((*self.parts, *slot_parts(other)))

    def __radd__(self, other: Sequence[Machine | None]) -> Slots:
        return Slots((*slot_parts(other), *self.parts))

    def __repr__(self) -> str:
        return f"Slots({self.parts!r})"


def _same_part(mine: Part, theirs: Part) -> bool:
    if mine is None or theirs is None:
        return mine is theirs
    if isinstance(mine, MachineGroup) != isinstance(theirs, MachineGroup):
        return False
    return mine == theirs


def slots_of(parts: Iterable[Part]) -> tuple[Machine | None, ...] | Slots:
    """The slots made of ``parts``: a plain tuple when no part is a group."""
    parts = tuple(parts)
    if any(isinstance(part, MachineGroup) for part in parts):
        return Slots(parts)
    return parts  # type: ignore[return-value,unused-ignore]  # no groups here


def slot_parts(slots: Sequence[Machine | None]) -> tuple[Part, ...]:
    """A rack's slots as parts, groups unexpanded."""
    if isinstance(slots, Slots):
        return slots.parts
    return tuple(slots)


def map_slots(slots: Sequence[Machine | None], machine: Callable[[Machine], Machine],
              group: Callable[[MachineGroup], MachineGroup],
              keep_empty: bool = True) -> tuple[Machine | None, ...] | Slots:
    """``slots`` with each machine and each group mapped (groups stay groups); explicit
    empty slots are dropped unless ``keep_empty``."""
    if not isinstance(slots, Slots):
        return tuple(None if slot is None else machine(slot) for slot in slots
                     if keep_empty or slot is not None)
    return slots_of(None if part is None else group(part) if isinstance(part, MachineGroup)
                    else machine(part)
                    for part in slots.parts if keep_empty or part is not None)


def concatenated_slots(racks: Iterable[Rack]) -> tuple[Machine | None, ...] | Slots:
    """The slots of ``racks`` one after the other, groups unexpanded."""
    return slots_of(part for rack in racks for part in slot_parts(rack.slots))


def rack_machine_count(rack: Rack) -> int:
    return sum(part.count if isinstance(part, MachineGroup) else 1
               for part in slot_parts(rack.slots) if part is not None)


def machine_parts(environment: Environment) -> Iterator[Machine | MachineGroup]:
    """The environment's machines in topology order, a group as one item."""
    for rack in environment.racks():
        for part in slot_parts(rack.slots):
            if part is not None:
                yield part


def machine_count(environment: Environment) -> int:
    """How many machines the environment has, without expanding groups."""
    return sum(rack_machine_count(rack) for rack in environment.racks())


def part_count(part: Machine | MachineGroup) -> int:
    return part.count if isinstance(part, MachineGroup) else 1


def part_template(part: Machine | MachineGroup) -> Machine:
    """What every machine of ``part`` shares (a machine is its own template)."""
    return part.template if isinstance(part, MachineGroup) else part


def has_groups(environment: Environment) -> bool:
    return any(isinstance(rack.slots, Slots) for rack in environment.racks())


class TooManyMachines(ValueError):
    """Expanding the groups would make more single machines than a caller allows."""


def expanded_machines(environment: Environment, most: int) -> Iterator[Machine]:
    """The environment's machines one by one, after checking that there are at most
    ``most`` of them (``TooManyMachines`` otherwise): for writers that need single
    machines."""
    count = machine_count(environment)
    if count > most:
        raise TooManyMachines(f"{count:,} machines, more than the {most:,} this writes "
                              "one by one")
    return environment.machines()


def compact(environment: Environment, least: int = 2, shared_parts: bool = False) -> Environment:
    """``environment`` with each run of at least ``least`` consecutive machines of a rack
    that differ only in id, name or rank held as one group (what a reader of a format that
    states such runs makes). Equal to ``environment``. ``shared_parts``: see
    ``_groupable``."""
    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(
            replace(rack, slots=_compact_slots(rack.slots, least, shared_parts))
            for rack in room.racks))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    return replace(environment, datacenters=datacenters)


def _compact_slots(slots: Sequence[Machine | None], least: int,
                   shared_parts: bool) -> tuple[Machine | None, ...] | Slots:
    parts: list[Part] = []
    run: list[Machine] = []

    def close() -> None:
        if len(run) >= least:
            parts.append(group_of(run))
        else:
            parts.extend(run)
        run.clear()

    for slot in slot_parts(slots):  # a group stays as it is, never expanded
        if slot is None or isinstance(slot, MachineGroup) or (
                run and not _groupable(run[-1], slot, shared_parts)):
            close()
        if slot is None or isinstance(slot, MachineGroup):
            parts.append(slot)
        else:
            run.append(slot)
    close()
    return slots_of(parts)


def _groupable(previous: Machine, machine: Machine, shared_parts: bool = False) -> bool:
    """Equal but for member fields, each of which is set on both or on neither. With
    ``shared_parts``, tuples (CPUs, memory, features …) count as equal only when they are
    the same object, as a reader that builds one machine kind's parts once makes them: a
    cheap test that may miss equal machines, never group unequal ones."""
    if shared_parts and (previous.cpus is not machine.cpus
                         or previous.memory is not machine.memory):
        return False  # the usual difference, found without walking every field
    theirs = machine.__dict__
    for name, value in previous.__dict__.items():
        other = theirs[name]
        if name in MEMBER_FIELDS:
            if (value is None) != (other is None):
                return False
        elif value is not other and (
                (shared_parts and value.__class__ is tuple) or value != other):
            return False
    return True


def group_of(machines: Sequence[Machine]) -> MachineGroup:
    """One group holding ``machines`` (equal but for member fields, set on all or none)."""
    columns = [None if getattr(machines[0], name) is None
               else [getattr(machine, name) for machine in machines] for name in MEMBER_FIELDS]
    return run_group(machines[0], len(machines), *columns)


def run_group(first: Machine, count: int, ids: list[Id] | None = None,
              names: list[str] | None = None, ranks: list[int] | None = None) -> MachineGroup:
    """The group of ``count`` machines a reader found equal but for member fields: ``first``
    as read, with every member's ids, names and ranks (``None`` where ``first`` has none),
    held compactly (``range`` for consecutive integers). The reader builds ``first`` alone
    and only reads the member values of the others."""
    return MachineGroup(replace(first, id=None, name=None, rank=None), count,
                        ids=None if ids is None else _compact_values(ids),
                        names=None if names is None else tuple(names),
                        ranks=None if ranks is None else _compact_values(ranks))


def _compact_values(values: list[Any]) -> Sequence[Any]:
    """A ``range`` for consecutive integers (not booleans), else a tuple."""
    first = values[0]
    if all(type(value) is int for value in values) and values == list(
            range(first, first + len(values))):
        return range(first, first + len(values))
    return tuple(values)
