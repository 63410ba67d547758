"""Model pointers of the objects a source file can point at, in document order.

A *located object* is one a reader can give a line for: the environment, a datacenter, a
room, a rack, a slot's machine or machine group, an event, the workload, a job, a task, an
annotation. Everything else (a CPU, a memory module, a task's request) is located by the
located object that contains it. The model pointer names the object by the model's own
fields: ``/environment/datacenters/0/rooms/1/racks/2/slots/3`` (a group's pointer is the
slot of its first member; slots count machines, not groups), ``/workload/jobs/4/tasks/0``.

``located_objects`` walks them in document order: an object before what it contains, the
topology's datacenters before its events, the jobs before the annotations. A loss's first
dropped value (``dcx.core.restrict``) is named by such a pointer.

A reader finds a pointer's object in its source again with ``place_of`` (the pointer's
indexes, level by level) and, where one source entry stands for several model objects (a
``count`` of hosts, a range of ranks), ``run_holding``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import zip_longest
from typing import Any, Generic, TypeVar

from dcx.core.groups import MachineGroup, slot_parts
from dcx.core.model import Document, Environment, Job, Machine, Task, Workload


def located_objects(document: Document) -> Iterator[tuple[str, Any]]:
    """``(pointer, object)`` for every located object of ``document``, in document order."""
    if document.environment is not None:
        yield from _environment(document.environment)
    if document.workload is not None:
        yield from _workload(document.workload)


def _environment(environment: Environment) -> Iterator[tuple[str, Any]]:
    yield "/environment", environment
    for d, datacenter in enumerate(environment.datacenters):
        at_datacenter = f"/environment/datacenters/{d}"
        yield at_datacenter, datacenter
        for r, room in enumerate(datacenter.rooms):
            at_room = f"{at_datacenter}/rooms/{r}"
            yield at_room, room
            for k, rack in enumerate(room.racks):
                at_rack = f"{at_room}/racks/{k}"
                yield at_rack, rack
                slot = 0
                for part in slot_parts(rack.slots):
                    if part is not None:
                        yield f"{at_rack}/slots/{slot}", part
                    slot += part.count if isinstance(part, MachineGroup) else 1
    for e, event in enumerate(environment.events):
        yield f"/environment/events/{e}", event


def _workload(workload: Workload) -> Iterator[tuple[str, Any]]:
    yield "/workload", workload
    for j, job in enumerate(workload.jobs):
        yield f"/workload/jobs/{j}", job
        for t, task in enumerate(job.tasks):
            yield f"/workload/jobs/{j}/tasks/{t}", task
    for a, annotation in enumerate(workload.annotations):
        yield f"/workload/annotations/{a}", annotation


def located_at(document: Document, pointer: str) -> Any | None:
    """The located object ``located_objects`` names ``pointer`` in ``document`` (``None``
    when there is none), reached by following the pointer: a large document is not walked,
    and a workload held as columns builds only the job asked for."""
    tokens = pointer.split("/")[1:]
    if not tokens or tokens[0] not in ("environment", "workload"):
        return None
    found: Any = getattr(document, tokens[0])
    for name, position in zip(tokens[1::2], tokens[2::2], strict=False):
        if found is None or not position.isdigit() or name not in _LOCATED_CHILDREN.get(
                type(found).__name__, ()):
            return None
        index = int(position)
        if name == "slots":
            found = _part_at_slot(found, index)
            continue
        children = getattr(found, name)
        found = children[index] if index < len(children) else None
    return None if len(tokens) % 2 == 0 else found


def located_kind(document: Document, pointer: str) -> type | None:
    """The kind of located object ``pointer`` names in ``document``: a slot a group's member
    fills is a ``Machine`` as much as a slot of its own machine, so a normal form that expands
    or forms groups keeps its machines' pointers."""
    found = located_at(document, pointer)
    if isinstance(found, MachineGroup):
        return Machine
    if found is not None:
        return type(found)
    rack_pointer, _, slot = pointer.rpartition("/slots/")
    rack = located_at(document, rack_pointer) if slot.isdigit() else None
    if rack is None or not hasattr(rack, "slots"):
        return None
    start = 0
    for part in slot_parts(rack.slots):
        count = part.count if isinstance(part, MachineGroup) else 1
        if start <= int(slot) < start + count:
            return Machine if part is not None else None
        start += count
    return None


_LOCATED_CHILDREN = {"Environment": ("datacenters", "events"), "Datacenter": ("rooms",),
                     "Room": ("racks",), "Rack": ("slots",), "Workload": ("jobs", "annotations"),
                     "Job": ("tasks",)}


def _part_at_slot(rack: Any, slot: int) -> Machine | MachineGroup | None:
    """The machine or group whose first member fills ``slot`` (slots count machines)."""
    start = 0
    for part in slot_parts(rack.slots):
        if start == slot:
            return part
        start += part.count if isinstance(part, MachineGroup) else 1
        if start > slot:
            return None  # inside a group: located by the group's first slot
    return None


@dataclass(frozen=True)
class Place:
    """A located object's model pointer read back: the part of the document it is in and
    its index at each level, outermost first (``/workload/jobs/4/tasks/0``: ``workload``,
    ``(("jobs", 4), ("tasks", 0))``)."""

    part: str
    """``environment`` or ``workload``."""
    levels: tuple[tuple[str, int], ...]

    def index(self, collection: str) -> int | None:
        """The index at level ``collection`` (``slots``, ``jobs`` …), ``None`` when the
        pointer does not go that deep."""
        return next((index for name, index in self.levels if name == collection), None)

    def pointer(self, keys: Mapping[str, str]) -> str:
        """The JSON Pointer of the object in a source that nests as the model does under
        other names: each level named in ``keys`` becomes that key and the index
        (``{"racks": "/objects"}``: rack 2 is ``…/objects/2``); a level the source does not
        write (a file that is one datacenter) adds nothing."""
        return "".join(f"{keys[name]}/{index}" for name, index in self.levels if name in keys)

    @property
    def kind(self) -> str:
        """The innermost level named: ``slots`` for a machine, ``tasks`` for a task, the part
        itself for the environment or workload."""
        return self.levels[-1][0] if self.levels else self.part


def place_of(pointer: str) -> Place | None:
    """The place a located object's pointer names, or ``None`` for a pointer that names no
    located object (checked level by level, as ``located_at`` follows it)."""
    tokens = pointer.split("/")[1:]
    if not tokens or tokens[0] not in ("environment", "workload") or len(tokens) % 2 == 0:
        return None
    kind = "Environment" if tokens[0] == "environment" else "Workload"
    levels = []
    for name, position in zip(tokens[1::2], tokens[2::2], strict=True):
        if name not in _LOCATED_CHILDREN.get(kind, ()) or not position.isdigit():
            return None
        levels.append((name, int(position)))
        kind = _CHILD_KIND.get(name, "")
    return Place(tokens[0], tuple(levels))


_CHILD_KIND = {"datacenters": "Datacenter", "rooms": "Room", "racks": "Rack", "jobs": "Job"}
"""The kind of a located child that has located children of its own."""


def run_holding(counts: Iterable[int], position: int) -> int | None:
    """The index of the run holding member ``position`` when runs of ``counts`` members
    follow one another (a host entry's ``count`` of machines, a cluster's copies); ``None``
    past the last. A group's members are all located at the entry that wrote it."""
    start = 0
    for index, count in enumerate(counts):
        start += count
        if position < start:
            return index
    return None


def pointers_of(document: Document, objects: Iterable[object]) -> dict[int, str]:
    """``id(object)`` → the pointer of its first place in ``document``, for each of
    ``objects`` found there. The walk stops once every object is found, so objects near the
    start of a large document cost little."""
    wanted = {id(obj) for obj in objects}
    found: dict[int, str] = {}
    if not wanted:
        return found
    for pointer, obj in located_objects(document):
        key = id(obj)
        if key in wanted and key not in found:
            found[key] = pointer
            if len(found) == len(wanted):
                break
    return found


_COUNTED = {"Rack": "slots", "Job": "tasks"}
"""Containers whose number of children is part of what they say: a rack's slots (empty ones
too, which are no located objects) and a job's tasks."""

_CONTAINED = {"Environment": ("datacenters", "events"), "Datacenter": ("rooms",),
              "Room": ("racks",), "Workload": ("jobs", "annotations")}


def own_values(obj: Any) -> Any:
    """What a located object says itself, without the located objects it contains (each
    compared in its own place): a rack and a job keep only how many slots and tasks they
    have."""
    kind = type(obj).__name__
    if kind in _COUNTED:
        return replace(obj, **{_COUNTED[kind]: len(getattr(obj, _COUNTED[kind]))})
    if kind in _CONTAINED:
        return replace(obj, **{name: () for name in _CONTAINED[kind]})
    return obj


def first_difference(before: Document, after: Document) -> str | None:
    """The pointer of the first located object of ``before``, in document order, whose own
    values (``own_values``) differ in ``after`` or that ``after`` does not have; failing
    that, the first one only ``after`` has; ``None`` when the two agree."""
    theirs = {pointer: own_values(obj) for pointer, obj in located_objects(after)}
    for pointer, obj in located_objects(before):
        if pointer not in theirs or theirs.pop(pointer) != own_values(obj):
            return pointer
    return next(iter(theirs), None)


def first_changed(before: Document, after: Document, kind: type) -> str | None:
    """The pointer of the first located object of ``kind`` in ``before`` whose own values
    differ from the one at the same place in ``after`` (or that ``after`` lacks), walking
    the two side by side and stopping there: where a normal form that reshapes objects of
    one kind (regrouping tasks into jobs) first changes one."""
    mine = ((p, o) for p, o in located_objects(before) if type(o) is kind)
    theirs = ((p, o) for p, o in located_objects(after) if type(o) is kind)
    for one, other in zip_longest(mine, theirs):
        if one is None:
            return None  # only ``after`` has more: nothing of ``before`` changed
        if other is None or other[0] != one[0] or own_values(other[1]) != own_values(one[1]):
            return str(one[0])
    return None


# --------------------------------------------------------------- where a reader read them

Where = tuple[int | None, int | None]
"""A (line, column) of a source file; either is ``None`` where the reader cannot tell."""

NOWHERE: Where = (None, None)


def _nowhere(*_: int) -> Where:
    return NOWHERE


@dataclass(frozen=True)
class Places:
    """``ReadResult.locator`` of a format of one datacenter with one room (SSS, Haizea,
    SimGrid): where each kind of located object was read from, asked only for the object a
    pointer names (``place_of``). The datacenter and its room are where the environment
    is; a slot inside a group or a cluster is where that group's element is."""

    environment: Callable[[], Where] = _nowhere
    rack: Callable[[int], Where] = _nowhere
    slot: Callable[[int, int], Where] = _nowhere
    """(rack, slot) -> where the machine of that slot was read from."""
    workload: Callable[[], Where] = _nowhere
    job: Callable[[int], Where] = _nowhere
    task: Callable[[int, int], Where] = _nowhere
    """(job, task) -> where."""
    annotation: Callable[[int], Where] = _nowhere

    def locate(self, model_pointer: str) -> Where:
        place = place_of(model_pointer)
        if place is None:
            return NOWHERE
        kind = place.kind
        if place.part == "environment":
            if place.index("datacenters") not in (None, 0) or place.index("rooms") not in (
                    None, 0):
                return NOWHERE
            if kind in ("environment", "datacenters", "rooms"):
                return self.environment()
            rack = place.index("racks")
            if rack is None:  # an event
                return NOWHERE
            slot = place.index("slots")
            return self.rack(rack) if slot is None else self.slot(rack, slot)
        if kind == "workload":
            return self.workload()
        if kind == "annotations":
            return self.annotation(place.levels[0][1])
        job = place.levels[0][1]
        task = place.index("tasks")
        return self.job(job) if task is None else self.task(job, task)


Element = TypeVar("Element")


@dataclass(frozen=True)
class ElementPlaces(Generic[Element]):
    """Where an XML reader read the environment, each rack and each rack's machines: the
    element each came from, as the reader noted it while reading (its line, or its name and
    index in document order), and ``where`` such an element is, found only for the element
    a pointer names. A slot's element is its machine's, or the one that made several
    machines (a SimGrid cluster)."""

    where: Callable[[Element], Where]
    environment: Element
    racks: Sequence[Element] = ()
    slots: Sequence[Sequence[Element]] = ()
    """Per rack, the element of each slot's machine."""

    def rack(self, rack: int) -> Where:
        return self.where(self.racks[rack]) if rack < len(self.racks) else NOWHERE

    def slot(self, rack: int, slot: int) -> Where:
        if rack >= len(self.slots) or slot >= len(self.slots[rack]):
            return NOWHERE
        return self.where(self.slots[rack][slot])

    def places(self) -> Places:
        return Places(environment=lambda: self.where(self.environment), rack=self.rack,
                      slot=self.slot)


def line_only(line: int | None) -> Where:
    """``ElementPlaces.where`` of a reader that noted its elements' lines (lxml's
    ``sourceline``: the line where the start tag ends; no column)."""
    return line, None


def task_lines(jobs: Sequence[Job], line_of: Callable[[Task], int]
               ) -> dict[str, tuple[int, int | None]]:
    """``ReadResult.source_map`` of a reader of one task per line: each task at its line
    (column 1), each job at its first task's."""
    found: dict[str, tuple[int, int | None]] = {}
    for j, job in enumerate(jobs):
        for t, task in enumerate(job.tasks):
            found[f"/workload/jobs/{j}/tasks/{t}"] = (line_of(task), 1)
        if job.tasks:
            found[f"/workload/jobs/{j}"] = found[f"/workload/jobs/{j}/tasks/0"]
    return found
