"""What Haizea makes of any document (losses: Value restrictions): the writer writes a
document's normal form, and ``dcx.core.restrict`` compares a document with it to derive what
a conversion to Haizea loses.

Nodes: one resource per type (the first given survives), types that are not single words
dropped, amounts whole and not negative, no resource type, unit or own extras; a ``CPU``
resource replaces the machine's CPUs and a ``Memory`` resource its memory; memory in whole MB.
Leases: in arrival order (see ``_in_arrival_order``); times on the 0.01 s grid; a duration
for every lease and a runtime; ``preemptible`` when unknown as haizea-lwf2xml sets it
(best-effort leases are); requests as a node-set reads back; ids kept when they are
distinct integers, else 1..n; users that are not integers dropped; ``<extra>`` values as
text; annotations only in a ``.lwfa``, which has no name or description.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any

from dcx.core.groups import MachineGroup, map_slots
from dcx.core.ids import job_holding
from dcx.core.model import (
    Annotation,
    Document,
    Environment,
    Id,
    Job,
    Machine,
    NamedResource,
    ProcessingUnit,
    ResourceRequest,
    StartMode,
    StorageUnit,
    Task,
)
from dcx.formats.haizea.leases import RequestCache, combined_node_sets, resource_request
from dcx.formats.haizea.recorded import normal_recorded
from dcx.formats.haizea.rules import lease_time_findings
from dcx.formats.haizea.site import NodeSet
from dcx.formats.haizea.vocabulary import (
    CPU,
    CPU_PER_CORE,
    EXTRA_PREFIX,
    ID_ASSIGNED_KEY,
    MEMORY,
    NODE_SETS_KEY,
    PREFIXED_EXTRA_KEY,
    STATE_KEY,
    SUBMIT_TIME_KEY,
    TYPE_NAME,
    Amount,
    Capacity,
)

USER_ID = re.compile(r"[+-]?\d+", re.ASCII)
SHORTEST_LEASE_S = 0.01
"""Haizea's time grid: the shortest duration a lease can ask for."""


# ------------------------------------------------------------------ nodes


def _whole_amount(value: float) -> int:
    """Haizea amounts are non-negative integers."""
    return max(0, round(value))


def _foreign_extras(extras: dict[str, Any]) -> dict[str, Any]:
    """Other formats' keys, left for ``restrict`` to drop (and report: losses, Extras)."""
    if not extras:
        return extras
    return {key: value for key, value in extras.items()
            if ":" in key and not key.startswith(EXTRA_PREFIX)}


def _carries_extras(extras: dict[str, Any]) -> bool:
    """Whether ``extras`` has keys a format holding them would keep: plain or Haizea's own
    (losses: Extras; other formats' keys are nobody's loss here)."""
    return any(":" not in key or key.startswith(EXTRA_PREFIX) for key in extras)


def _resource_normal_form(resource: NamedResource) -> tuple[NamedResource, bool]:
    """A ``<res>`` as Haizea reads it back (whole amounts; no type, unit or extras), and
    whether that changed anything a format holding named resources keeps."""
    foreign = _foreign_extras(resource.extras)
    if resource.instances:
        instances = tuple(float(_whole_amount(value)) for value in resource.instances)
        normal = NamedResource(resource.name, float(sum(instances)), instances=instances,
                               extras=foreign)
    else:
        normal = NamedResource(resource.name, float(_whole_amount(resource.amount)),
                               extras=foreign)
    changed = (normal.amount != resource.amount or normal.instances != resource.instances
               or resource.type is not None or resource.unit is not None
               or _carries_extras(resource.extras))
    return normal, changed


def _whole_cores(resource: NamedResource) -> tuple[int, ...] | None:
    """The per-instance core counts of a ``CPU`` resource, or ``None`` when some instance
    is not a whole number of cores (then it stays a named resource, as the reader keeps it)."""
    values = resource.instances or (resource.amount,)
    if all(value % CPU_PER_CORE == 0 for value in values):
        return tuple(int(value) // CPU_PER_CORE for value in values)
    return None


def _machine_normal_form(machine: Machine) -> tuple[Machine, frozenset[str]]:
    """What a Haizea node makes of ``machine``, and the held field paths that changed:
    one resource per type (the first given survives), types that are not single words
    dropped, amounts whole and not negative; a ``CPU`` resource replaces the machine's CPUs
    (as CPUs of whole cores, else as itself) and a ``Memory`` resource its memory."""
    lost: set[str] = set()
    named: dict[str, NamedResource] = {}
    for resource in machine.resources:
        if not TYPE_NAME.fullmatch(resource.name) or resource.name in named:
            lost.add("machine.resources")
            continue
        named[resource.name], changed = _resource_normal_form(resource)
        if changed:
            lost.add("machine.resources")
    cpus = machine.cpus
    cpu_resource = named.pop(CPU, None)
    leading: tuple[NamedResource, ...] = ()
    if cpu_resource is not None:
        if cpus:
            lost.add("machine.cpus")
        cores = _whole_cores(cpu_resource)
        if cores is None:
            cpus, leading = (), (cpu_resource,)
        else:
            cpus = tuple(ProcessingUnit(cores=count) for count in cores)
            lost.add("machine.resources")  # it comes back as CPUs, not as a resource
    memory_resource = named.pop(MEMORY, None)
    if memory_resource is not None:
        if machine.memory:
            lost.add("machine.memory")
        lost.add("machine.resources")  # it comes back as memory, not as a resource
        memory = tuple(StorageUnit(capacity_mb=value) for value in
                       memory_resource.instances or (memory_resource.amount,))
    else:
        memory = tuple(replace(unit, capacity_mb=float(_whole_amount(unit.capacity_mb)))
                       for unit in machine.memory)
        if memory != machine.memory:
            lost.add("machine.memory")
    normal = replace(machine, cpus=cpus, memory=memory,
                     resources=leading + tuple(named.values()))
    return normal, frozenset(lost)


def _environment_normal_form(environment: Environment) -> tuple[Environment, dict[str, int]]:
    """``environment`` with every machine in ``_machine_normal_form``, and field path -> how
    many machines changed there."""
    counts: dict[str, int] = {}

    def normal(slot: Machine, members: int = 1) -> Machine:
        machine, lost = _machine_normal_form(slot)
        for field_path in lost:
            counts[field_path] = counts.get(field_path, 0) + members
        return machine

    def normal_group(group: MachineGroup) -> MachineGroup:
        """A group's machines share their resources: normalised once, counted each."""
        return replace(group, template=normal(group.template, group.count))

    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(replace(rack, slots=map_slots(rack.slots, normal, normal_group))
                                  for rack in room.racks))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    return replace(environment, datacenters=datacenters), counts


# ------------------------------------------------------------------ leases


def _on_grid(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 100) / 100


def _positive(seconds: float | None) -> float | None:
    return seconds if seconds is not None and seconds > 0 else None


def _times(task: Task, lost: set[str]) -> dict[str, Any]:
    """Times on the 0.01 s grid; a duration for every lease (the requested time, else the
    runtime: what a user expects of the converted lease, else the shortest lease) and a
    runtime (a lease without <realduration> runs for its duration)."""
    for name, value in (("task.submit_time_s", task.submit_time_s),
                        ("task.runtime_s", task.runtime_s),
                        ("task.requested_time_s", task.requested_time_s),
                        ("task.deadline_s", task.deadline_s), ("task.start", task.start_time_s)):
        if value is not None and _on_grid(value) != value:
            lost.add(name)
    runtime = _positive(_on_grid(task.runtime_s))
    requested = _positive(_on_grid(task.requested_time_s))
    if runtime is None:  # not positive, or unknown: the requested time fills it in
        lost.add("task.runtime_s")
    if requested is None:  # filled in: SWF or Batsim read it back as the requested time
        lost.add("task.requested_time_s")
    requested = requested or runtime or SHORTEST_LEASE_S
    start, deadline = _on_grid(task.start_time_s), _on_grid(task.deadline_s)
    if deadline is not None and any(
            finding.code == "haizea.deadline-too-early" for finding in lease_time_findings(
                requested, None, task.start_mode, start, deadline)):
        deadline = None  # Haizea rejects a lease that cannot meet it: it has no such lease
        lost.add("task.deadline_s")
    return {"submit_time_s": round(task.submit_time_s * 100) / 100,
            "runtime_s": runtime or requested, "requested_time_s": requested,
            "deadline_s": deadline, "start_time_s": start}


def stored_node_sets(value: Any) -> list[NodeSet] | None:
    """``extras["haizea:node-sets"]`` as the reader writes it, or ``None`` when it is not
    one a Haizea lease can hold (then the writer writes the request)."""
    if not isinstance(value, list) or not value:
        return None
    node_sets: list[NodeSet] = []
    for item in value:
        if not isinstance(item, list | tuple) or len(item) != 2 or \
                not _whole_number(item[0], minimum=1) or not isinstance(item[1], list | tuple):
            return None
        capacity: list[tuple[str, Amount]] = []
        for entry in item[1]:
            if not isinstance(entry, list | tuple) or len(entry) != 2:
                return None
            name, amount = entry
            if not isinstance(name, str) or not TYPE_NAME.fullmatch(name) or \
                    name in dict(capacity):
                return None
            if isinstance(amount, list | tuple) and amount and \
                    all(_whole_number(part) for part in amount):
                capacity.append((name, tuple(int(part) for part in amount)))
            elif _whole_number(amount):
                capacity.append((name, int(amount)))
            else:
                return None
        node_sets.append(NodeSet(int(item[0]), tuple(capacity)))
    return node_sets


def _whole_number(value: Any, minimum: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _request(request: ResourceRequest, stored: list[NodeSet] | None,
             cache: RequestCache) -> tuple[ResourceRequest, Any]:
    """The request as its node-set reads back, and the ``haizea:node-sets`` value the reader
    keeps (``None``: none). Stored node-sets are what the writer writes."""
    if stored is not None:
        count, capacity, kept = combined_node_sets(stored)
        return replace(resource_request(count, capacity, cache), gpus=request.gpus), kept
    return replace(resource_request(max(1, request.nodes), request_capacity(request), cache),
                   gpus=request.gpus), None


def request_capacity(request: ResourceRequest) -> Capacity:
    """A request's per-node ``<res>`` list: a CPU or Memory resource replaces the cores or
    the memory; of a type given twice the last survives; types that are not single words are
    dropped; amounts are whole and not negative (CPU in hundredths of a core)."""
    named: dict[str, NamedResource] = {}
    for resource in request.resources:
        if TYPE_NAME.fullmatch(resource.name):
            named[resource.name] = resource
    items: list[tuple[str, Amount]] = []
    if CPU in named:
        items.append((CPU, _amount(named.pop(CPU))))
    elif request.cores:
        items.append((CPU, _whole_amount(request.cores * CPU_PER_CORE)))
    if MEMORY in named:
        items.append((MEMORY, _amount(named.pop(MEMORY))))
    elif request.memory_mb is not None:
        items.append((MEMORY, _whole_amount(request.memory_mb)))
    items.extend((name, _amount(resource)) for name, resource in named.items())
    return tuple(items)


def _amount(resource: NamedResource) -> Amount:
    if resource.instances:
        return tuple(_whole_amount(value) for value in resource.instances)
    return _whole_amount(resource.amount)


def _attr_text(value: Any) -> str | None:
    """An ``<attr>`` value as it reads back; ``None`` for values that are not text."""
    if value is None or isinstance(value, dict | list):
        return None
    return value if isinstance(value, str) else str(value)


def attr_values(values: dict[str, Any]) -> dict[str, str]:
    """``<attr>`` name/value pairs as they read back: values that are not text are left out."""
    texts = {name: _attr_text(value) for name, value in values.items()}
    return {name: text for name, text in texts.items() if text is not None}


def _extras(extras: dict[str, Any]) -> dict[str, Any]:
    """Task extras as the lease keeps them: plain keys as ``<extra>`` attrs, Haizea's own
    keys as what they stand for (``haizea:node-sets`` is the request's: see ``_request``),
    other formats' keys for ``restrict``."""
    if not extras:
        return extras
    normal: dict[str, Any] = {}
    for key, value in extras.items():
        if ":" not in key:
            text = _attr_text(value)
            if text is not None:
                normal[key] = text
        elif not key.startswith(EXTRA_PREFIX) or (
                key == STATE_KEY and _whole_number(value, minimum=-(1 << 62))):
            normal[key] = value
        elif key == SUBMIT_TIME_KEY and value is not None:
            normal[key] = str(value)
        elif key == ID_ASSIGNED_KEY and value:
            normal[key] = True
        elif key == PREFIXED_EXTRA_KEY and isinstance(value, dict):
            attrs = attr_values({name: text for name, text in value.items()
                                 if isinstance(name, str) and ":" in name})
            if attrs:
                normal[key] = attrs
    return normal


def _task_normal_form(task: Task, task_id: Id, requests: dict[int, Any],
                      cache: RequestCache) -> tuple[Task, set[str]]:
    """What a lease makes of ``task``, and the held field paths that changed."""
    lost: set[str] = set()
    changes = _times(task, lost)
    changes["id"] = task_id
    user = task.user if task.user is None or USER_ID.fullmatch(task.user) else None
    if user != task.user:
        lost.add("task.user")
    changes["user"] = user
    if task.preemptible is None:  # Haizea requires it: haizea-lwf2xml's convention, no loss
        changes["preemptible"] = task.start_mode is StartMode.ANY
    extras = _extras(task.extras)
    stored = stored_node_sets(task.extras.get(NODE_SETS_KEY))
    if stored is None:
        request = requests.get(id(task.request))
        if request is None:
            request = requests[id(task.request)] = _request(task.request, None, cache)[0]
    else:
        request, kept = _request(task.request, stored, cache)
        if kept is not None:
            extras[NODE_SETS_KEY] = kept
    recorded, changed = normal_recorded(task, extras)
    changes.update(recorded)
    lost |= changed
    if extras != task.extras:
        lost.add("task.extras")
    changes["extras"] = extras
    # (a lease asks for whole nodes: cores anywhere become nodes of their cores)
    for name in ("nodes", "cores", "memory_mb", "resources", "placement"):
        if getattr(request, name) != getattr(task.request, name):
            lost.add(f"task.request.{name}")
    changes["request"] = request
    size = None if task.image is None else float(_whole_amount(task.image_size_mb or 0.0))
    if size != task.image_size_mb:
        lost.add("task.image")
    changes["image_size_mb"] = size
    if all(getattr(task, name) == value for name, value in changes.items()):
        return task, lost  # already in normal form (any LWF read back): no copy
    return replace(task, **changes), lost


def _in_arrival_order(jobs: Sequence[Job]) -> tuple[Sequence[Job], bool]:
    """The jobs with their tasks in arrival order (on the 0.01 s grid, stable), and whether
    anything moved. Haizea runs leases in file order and dcx warns about a file whose
    arrivals go back (``haizea.arrival-order``), so a lease workload is in arrival order.
    The order is no field of the model: moving tasks loses nothing. When tasks move, the
    consecutive tasks of one job stay one job (so the grouping a target cannot hold is still
    reported as such)."""
    entries = [(job, task) for job in jobs for task in job.tasks]
    keys = [round(task.submit_time_s * 100) for _, task in entries]
    if all(earlier <= later for earlier, later in pairwise(keys)):
        return jobs, False
    regrouped: list[tuple[Job, list[Task]]] = []
    for index in sorted(range(len(entries)), key=keys.__getitem__):
        job, task = entries[index]
        if regrouped and regrouped[-1][0] is job:
            regrouped[-1][1].append(task)
        else:
            regrouped.append((job, [task]))
    return tuple(replace(job, tasks=tuple(tasks)) for job, tasks in regrouped), True


def _annotations_normal_form(annotations: tuple[Annotation, ...]) -> tuple[Annotation, ...]:
    """Annotations as a ``.lwfa`` reads back: ids all integers or all positional, offsets
    on the 0.01 s grid, image sizes whole, ``<extra>`` values as text."""
    targets = [annotation.target for annotation in annotations]
    positional = any(not _whole_number(target, minimum=-(1 << 62)) for target in targets)
    normal = []
    for annotation in annotations:
        image = None if annotation.software_none else annotation.image
        exact = annotation.start_mode is StartMode.EXACT
        normal.append(replace(
            annotation, target=None if positional else annotation.target, image=image,
            image_size_mb=None if image is None else float(_whole_amount(
                annotation.image_size_mb or 0.0)),
            start_offset_s=_on_grid(annotation.start_offset_s or 0.0) if exact else None,
            deadline_offset_s=_on_grid(annotation.deadline_offset_s),
            extras=attr_values(annotation.extras)))
    return tuple(normal)


def _integer_ids(tasks: list[Task]) -> bool:
    ids = [task.id for task in tasks]
    return all(isinstance(i, int) and not isinstance(i, bool) for i in ids) and \
        len(set(ids)) == len(ids)


def _workload_normal_form(document: Document) -> tuple[Document, dict[str, int]]:
    """``document`` with its leases in normal form, and field path -> how many tasks (or
    annotations) changed there."""
    workload = document.workload
    assert workload is not None
    counts: dict[str, int] = {}
    if is_annotation_document(document):
        for path, value in (("workload.name", workload.name),
                            ("workload.description", workload.description)):
            if value is not None:
                counts[path] = 1
        annotations = _annotations_normal_form(workload.annotations)
        if annotations != workload.annotations:
            counts["workload.annotations"] = 1
        attributes = attr_values(workload.attributes)
        if attributes != workload.attributes:
            counts["workload.attributes"] = 1
        return replace(document, workload=replace(
            workload, name=None, description=None, annotations=annotations,
            attributes=attributes)), counts
    if workload.annotations:
        counts["workload.annotations"] = len(workload.annotations)
    attributes = attr_values(workload.attributes)
    if attributes != workload.attributes:
        counts["workload.attributes"] = 1
    tasks = list(workload.tasks())
    keep_ids = _integer_ids(tasks)
    if not keep_ids and tasks:
        counts["task.id"] = len(tasks)
    jobs, moved = _in_arrival_order(workload.jobs)
    numbers: Iterator[int] = iter(range(1, len(tasks) + 1))
    position = 0
    requests: dict[int, Any] = {}
    cache: RequestCache = {}
    normal_jobs = []
    for job in jobs:
        normal_tasks = []
        for task in job.tasks:
            position += 1
            normal, lost = _task_normal_form(task, task.id if keep_ids else next(numbers),
                                             requests, cache)
            if moved and normal.extras.get(ID_ASSIGNED_KEY) and normal.id != position:
                # Read back, a lease without an id takes its position: write this one's.
                extras = {k: v for k, v in normal.extras.items() if k != ID_ASSIGNED_KEY}
                normal = replace(normal, extras=extras)
            for path in lost:
                counts[path] = counts.get(path, 0) + 1
            normal_tasks.append(normal)
        unchanged = all(new is old for new, old in zip(normal_tasks, job.tasks, strict=True))
        normal_jobs.append(job if unchanged else job_holding(job, tuple(normal_tasks)))
    normal_workload = replace(workload, jobs=tuple(normal_jobs), annotations=(),
                              attributes=attributes)
    return replace(document, workload=normal_workload), counts


def normal_form(document: Document) -> Document:
    """What Haizea makes of ``document`` beyond its field paths (see the module text)."""
    if document.environment is not None:
        environment, _ = _environment_normal_form(document.environment)
        document = replace(document, environment=environment)
    if document.workload is None:
        return document
    return _workload_normal_form(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes, or fills in from nothing, in ``document``."""
    counts: dict[str, int] = {}
    if document.environment is not None:
        counts.update(_environment_normal_form(document.environment)[1])
    if document.workload is not None:
        counts.update(_workload_normal_form(document)[1])
    return frozenset(counts)


def is_annotation_document(document: Document) -> bool:
    """Written as a ``.lwfa``: annotations without leases or a site."""
    workload = document.workload
    return workload is not None and not workload.jobs and bool(workload.annotations) \
        and document.environment is None
