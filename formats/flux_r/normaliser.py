"""Flux R's normal form: host names a hostlist can spell, usable ranks and GPU ids, property
names RFC 20 allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

from dcx.core.groups import MachineGroup, Slots, Window, machine_parts, part_template, slots_of
from dcx.core.ids import required_machine_name
from dcx.core.model import Document, Environment, Machine, ProcessingUnit, Rack
from dcx.formats.flux_r.vocabulary import FORBIDDEN_PROPERTY_CHARACTERS
from dcx.parsing.fluxion import lost_validity, writable_validity
from dcx.parsing.hostlist import Hostlist, is_host_name


def normal_form(document: Document) -> Document:
    """What R makes of ``document`` before any field path applies (``converters.losses``,
    Value restrictions): GPU ids that are not distinct non-negative integers become
    ``0..n-1``; features R cannot name are left out, repeated features kept once and
    features sorted (R lists properties by name); ranks that are missing or repeated become
    ``0..n-1`` in topology order, and usable ranks that do not rise in topology order put
    the machines in rank order (as R reads them back; the model has no field for the order,
    so no loss is reported); every machine is named after its host (see Required host
    names); a validity window R cannot write is left out (``writable_validity``). A
    machine group stays one group when its members' names are host names."""
    environment = document.environment
    if environment is None:
        return document
    renumber = not _ranks_are_usable(list(machine_parts(environment)))
    position = 0

    def normal(machine: Machine) -> Machine:
        nonlocal position
        index = position
        position += 1
        return replace(machine, gpus=_normal_gpus(machine.gpus),
                       rank=index if renumber else machine.rank,
                       name=required_machine_name(machine, index + 1, is_host_name),
                       cpus=machine.cpus if _core_count(machine.cpus) else (),
                       features=_normal_features(machine.features))

    def normal_group(group: MachineGroup) -> list[Machine | MachineGroup]:
        nonlocal position
        if group.names is None or not _all_host_names(group.names):
            return [normal(member) for member in group]  # names filled in one by one
        start = position
        position += group.count
        template = group.template
        template = replace(template, gpus=_normal_gpus(template.gpus),
                           cpus=template.cpus if _core_count(template.cpus) else (),
                           features=_normal_features(template.features))
        if not renumber:
            return [replace(group, template=template)]
        return [replace(group, template=replace(template, rank=None),
                        ranks=range(start, start + group.count))]

    def slots(rack: Rack) -> Sequence[Machine | None]:
        if not isinstance(rack.slots, Slots):
            return tuple(None if slot is None else normal(slot) for slot in rack.slots)
        parts: list[Machine | MachineGroup | None] = []
        for part in rack.slots.parts:
            if isinstance(part, MachineGroup):
                parts.extend(normal_group(part))
            else:
                parts.append(None if part is None else normal(part))
        return slots_of(parts)

    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(replace(rack, slots=slots(rack)) for rack in room.racks))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    normalized = replace(environment, datacenters=datacenters,
                         validity=writable_validity(environment.validity))
    if not renumber and not _ranks_ascend(list(machine_parts(environment))):
        normalized = _in_rank_order(normalized)
    return replace(document, environment=normalized)


def _ranks_ascend(parts: list[Machine | MachineGroup]) -> bool:
    """Whether the machines' ranks rise in topology order (R lists machines by rank)."""
    runs = _rank_runs(parts) or []
    return all(lo > previous_hi for (_, previous_hi), (lo, _) in pairwise(runs))


def _in_rank_order(environment: Environment) -> Environment:
    """The machines in rank order, as R reads them back, in one rack: the first datacenter,
    room and rack of the whole environment, the containers the restriction keeps (R holds
    no racks, rooms or datacenters: leaving them out is the restriction's loss, not this)."""
    parts: list[Machine | MachineGroup] = []
    for part in machine_parts(environment):
        if isinstance(part, MachineGroup) and not (
                isinstance(part.ranks, range) and part.ranks.step == 1):
            parts.extend(part)  # ranks that do not run: each machine finds its place
        else:
            parts.append(part)
    parts.sort(key=_first_rank)
    rooms = [room for datacenter in environment.datacenters for room in datacenter.rooms]
    racks = [rack for room in rooms for rack in room.racks]
    rack = replace(racks[0], slots=slots_of(parts))
    return replace(environment, datacenters=(replace(environment.datacenters[0], rooms=(
        replace(rooms[0], racks=(rack,)),)),))


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document`` (a group's shared parts
    judged once)."""
    environment = document.environment
    if environment is None:
        return frozenset()
    parts = list(machine_parts(environment))
    found: set[str] = set()
    if lost_validity(environment.validity):
        found.add("environment.validity")
    if not _ranks_are_usable(parts) and _ranks_move(parts):
        found.add("machine.rank")
    for part in parts:
        machine = part_template(part)
        if any(gpu.id is not None for gpu in machine.gpus) and not _gpu_ids_are_usable(
                machine.gpus):
            found.add("gpu.id")
        names = part.names if isinstance(part, MachineGroup) else None
        if (machine.name is not None and not is_host_name(machine.name)) or (
                names is not None and not _all_host_names(names)):
            found.add("machine.name")
        if machine.cpus and not _core_count(machine.cpus):
            found.add("machine.cpus")
        if not all(map(_is_property_name, machine.features)) or len(
                set(machine.features)) != len(machine.features):
            found.add("machine.features")
    return frozenset(found)


def _normal_features(features: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({feature for feature in features if _is_property_name(feature)}))


def _all_host_names(names: Sequence[str]) -> bool:
    """Whether every name is one a hostlist can spell (a window of a decoded hostlist
    is, by construction)."""
    if isinstance(names, Window) and isinstance(names.base, Hostlist):
        return True
    return all(map(is_host_name, names))


def _rank_runs(parts: list[Machine | MachineGroup]) -> list[tuple[int, int]] | None:
    """Each part's ranks as ascending runs ``(lo, hi)``, in topology order; ``None`` when a
    machine has no rank (or a group's members share one)."""
    runs: list[tuple[int, int]] = []
    for part in parts:
        if not isinstance(part, MachineGroup):
            if part.rank is None:
                return None
            runs.append((part.rank, part.rank))
            continue
        ranks = part.ranks
        if ranks is None:
            if part.template.rank is None or part.count > 1:
                return None
            runs.append((part.template.rank, part.template.rank))
        elif isinstance(ranks, range) and ranks.step == 1:
            runs.append((ranks.start, ranks.stop - 1))
        else:
            runs.extend((rank, rank) for rank in ranks)
    return runs


def _first_rank(part: Machine | MachineGroup) -> int:
    runs = _rank_runs([part])
    assert runs, "only parts with ranks are ordered"
    return runs[0][0]


def _ranks_are_usable(parts: list[Machine | MachineGroup]) -> bool:
    """Every machine has a rank of its own, none negative."""
    runs = _rank_runs(parts)
    if runs is None:
        return False
    ordered = sorted(runs)
    return (not ordered or ordered[0][0] >= 0) and all(
        lo > previous_hi for (_, previous_hi), (lo, _) in pairwise(ordered))


def _ranks_move(parts: list[Machine | MachineGroup]) -> bool:
    """Whether numbering the machines 0..n-1 changes a rank some machine has."""
    index = 0
    for part in parts:
        if isinstance(part, MachineGroup):
            ranks: Sequence[int | None] = (part.ranks if part.ranks is not None
                                           else [part.template.rank] * part.count)
            if isinstance(ranks, range) and ranks.step == 1:
                if ranks.start != index:
                    return True
            elif any(rank is not None and rank != index + offset
                     for offset, rank in enumerate(ranks)):
                return True
            index += part.count
            continue
        if part.rank is not None and part.rank != index:
            return True
        index += 1
    return False


def _core_count(cpus: tuple[ProcessingUnit, ...]) -> int:
    return sum(cpu.cores for cpu in cpus)


def _gpu_ids_are_usable(gpus: tuple[ProcessingUnit, ...]) -> bool:
    ids = [gpu.id for gpu in gpus]
    return all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids) \
        and len(set(ids)) == len(ids)


def _normal_gpus(gpus: tuple[ProcessingUnit, ...]) -> tuple[ProcessingUnit, ...]:
    if _gpu_ids_are_usable(gpus):
        return gpus
    return tuple(replace(gpu, id=index) for index, gpu in enumerate(gpus))


def _is_property_name(feature: str) -> bool:
    return bool(feature) and not FORBIDDEN_PROPERTY_CHARACTERS & set(feature)
