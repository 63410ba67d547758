"""Ids and names shared by formats: ids read from text, and the ids and names a format that
requires them fills in."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from dcx.core.model import Document, Id, Job, Machine, Task

_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def id_from_text(text: str) -> Id:
    """An id read from text: the integer when ``text`` is its canonical decimal form
    (``7``, not ``07``, ``+7`` or ``٧``), else ``text`` itself."""
    return int(text) if _DECIMAL.fullmatch(text) else text


def job_holding(job: Job, tasks: tuple[Task, ...]) -> Job:
    """``job`` with ``tasks`` in place of its own (the same tasks, in a format's normal form).
    A job named by its only task, as formats whose job is one task line or lease name it,
    takes that task's new id when the normal form renumbers it."""
    renamed = len(tasks) == 1 and len(job.tasks) == 1 and job.id == job.tasks[0].id
    return replace(job, tasks=tasks, id=tasks[0].id if renamed else job.id)


def required_machine_id(machine: Machine, position: int) -> Id:
    """The machine's id, or the one a format that requires ids gives it (see Required machine
    ids); ``position`` is 1-based among the document's machines."""
    if machine.id is not None:
        return machine.id
    if machine.name is not None and machine.name.strip():
        return id_from_text(machine.name)
    return f"node{position}"


def required_ids(machines: Iterable[Machine]) -> list[Id]:
    """Each machine's id, filled in by ``required_machine_id`` where it has none; a filled-in
    id already taken (two machines of one name) becomes ``node<N>`` (``-2``, ``-3`` … while
    that is taken too), since a format that requires ids requires them unique."""
    return required_ids_of([(machine.id, machine.name) for machine in machines])


def required_ids_of(keys: Sequence[tuple[Id | None, str | None]]) -> list[Id]:
    """``required_ids`` of machines given as their ``(id, name)`` alone (a group's members
    without making a machine of each)."""
    names = [name for identity, name in keys if identity is None]
    if len(names) == len(keys) and None not in names and len(set(names)) == len(names) \
            and all(map(str.strip, names)):  # type: ignore[arg-type]  # None is not in names
        return list(map(id_from_text, names))  # type: ignore[arg-type]  # each name is free
    taken = {identity for identity, _ in keys if identity is not None}
    ids: list[Id] = []
    for position, (identity, name) in enumerate(keys, 1):
        if identity is not None:
            ids.append(identity)
            continue
        wanted: Id = id_from_text(name) if name is not None and name.strip() \
            else f"node{position}"  # required_machine_id's rule
        if wanted in taken:
            wanted = _free(f"node{position}", taken)
        taken.add(wanted)
        ids.append(wanted)
    return ids


def _free(name: str, taken: set[Id]) -> str:
    suffix, candidate = 1, name
    while candidate in taken:
        suffix += 1
        candidate = f"{name}-{suffix}"
    return candidate


def with_required_ids(document: Document) -> Document:
    """``document`` with every machine id filled in as ``required_ids`` does."""
    environment = document.environment
    if environment is None or all(m.id is not None for m in environment.machines()):
        return document
    ids = iter(required_ids(environment.machines()))

    def fill(slot: Machine | None) -> Machine | None:
        return None if slot is None else replace(slot, id=next(ids))

    datacenters = tuple(replace(dc, rooms=tuple(
        replace(room, racks=tuple(replace(rack, slots=tuple(fill(slot) for slot in rack.slots))
                                  for rack in room.racks))
        for room in dc.rooms)) for dc in environment.datacenters)
    return replace(document, environment=replace(environment, datacenters=datacenters))


def required_machine_name(machine: Machine, position: int,
                          can_spell: Callable[[str], bool]) -> str:
    """The machine's name, or the one a format that requires names gives it (see Required
    machine names): its id as text when the format ``can_spell`` it, else ``node<N>``
    (``position`` is 1-based among the document's machines, as for required ids). A name
    the format cannot spell is replaced the same way (a loss the format reports)."""
    if machine.name is not None and can_spell(machine.name):
        return machine.name
    if machine.id is not None and can_spell(str(machine.id)):
        return str(machine.id)
    return f"node{position}"


def with_required_names(document: Document, can_spell: Callable[[str], bool]) -> Document:
    """``document`` with every machine named by ``required_machine_name``."""
    environment = document.environment
    if environment is None:
        return document
    position = 0

    def fill(slot: Machine | None) -> Machine | None:
        nonlocal position
        if slot is None:
            return None
        position += 1
        name = required_machine_name(slot, position, can_spell)
        return slot if name == slot.name else replace(slot, name=name)

    datacenters = tuple(replace(dc, rooms=tuple(
        replace(room, racks=tuple(replace(rack, slots=tuple(fill(slot) for slot in rack.slots))
                                  for rack in room.racks))
        for room in dc.rooms)) for dc in environment.datacenters)
    return replace(document, environment=replace(environment, datacenters=datacenters))
