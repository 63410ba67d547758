"""What a lease becomes in the model, for both read paths (checked and fast): its resource
request, its node-sets, its ``<extra>`` attrs and its id."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace
from typing import Any

from dcx.core.model import (
    TRACE_FIELDS,
    Job,
    NamedResource,
    ResourceRequest,
    Task,
    direct_constructor,
)
from dcx.formats.haizea import rules
from dcx.formats.haizea.context import Context
from dcx.formats.haizea.site import NodeSet, named
from dcx.formats.haizea.vocabulary import CPU, CPU_PER_CORE, MEMORY, PREFIXED_EXTRA_KEY, Capacity

RequestCache = dict[tuple[int, Capacity], ResourceRequest]


# Both reading paths build every lease's Task and Job from dicts listing every field in the
# model's order (checked once by direct_constructor), without a check per lease.
new_task = direct_constructor(Task, (
    "id", "submit_time_s", "runtime_s", "requested_time_s", "request", "dependencies",
    "deadline_s", "start_mode", "start_time_s", "preemptible", "user", "group", "image",
    "image_size_mb", *TRACE_FIELDS, "extras"))
new_job = direct_constructor(Job, ("id", "tasks", "name", "user", "extras"))



def resource_request(count: int, capacity: Capacity, cache: RequestCache) -> ResourceRequest:
    """Identical requests share one frozen object (large LWFs repeat a few shapes)."""
    key = (count, capacity)
    found = cache.get(key)
    if found is not None:
        return found
    cores = 0.0
    memory_mb: float | None = None
    resources: list[NamedResource] = []
    for name, amount in capacity:
        if name == CPU:
            cores = (sum(amount) if isinstance(amount, tuple) else amount) / CPU_PER_CORE
            if isinstance(amount, tuple):
                resources.append(named(name, amount))
        elif name == MEMORY:
            memory_mb = float(sum(amount) if isinstance(amount, tuple) else amount)
            if isinstance(amount, tuple):
                resources.append(named(name, amount))
        else:
            resources.append(named(name, amount))
    request = ResourceRequest(nodes=count, cores=cores, memory_mb=memory_mb,
                              resources=tuple(resources))
    if len(cache) < 4096:
        cache[key] = request
    return request


def combined_node_sets(node_sets: list[NodeSet]) -> tuple[int, Capacity, list[Any] | None]:
    """A lease's node count and per-node capacity, plus the ``extras["haizea:node-sets"]``
    value when its node-sets differ (the first one is then the request)."""
    first_set = node_sets[0]
    if len(node_sets) == 1:
        return first_set.nodes, first_set.capacity, None
    if any(node_set.capacity != first_set.capacity for node_set in node_sets):
        stored = [[node_set.nodes, [[name, list(amount) if isinstance(amount, tuple) else amount]
                                    for name, amount in node_set.capacity]]
                  for node_set in node_sets]
        return first_set.nodes, first_set.capacity, stored
    return sum(node_set.nodes for node_set in node_sets), first_set.capacity, None


def unique_type_names(node_sets: list[NodeSet]) -> list[str]:
    if len(node_sets) == 1:
        return [name for name, _ in node_sets[0].capacity]
    return list(dict.fromkeys(name for node_set in node_sets for name, _ in node_set.capacity))


def lease_extras(attrs: dict[str, Any]) -> dict[str, Any]:
    """A lease's ``<extra>`` attrs as task extras: names with ':' are kept together under
    ``haizea:extra-attrs`` (see there); the writer puts them back as attrs."""
    if not any(":" in name for name in attrs):
        return attrs
    extras = {name: value for name, value in attrs.items() if ":" not in name}
    extras[PREFIXED_EXTRA_KEY] = {name: value for name, value in attrs.items() if ":" in name}
    return extras


def read_attrs(parent: Any, context: Context, what: str) -> dict[str, Any]:
    """The ``<attr>`` children of ``parent`` (``rules.attrs``), repeated names reported."""
    elements = list(parent)
    values, repeated = rules.attrs((attr.get("name"), attr.get("value")) for attr in elements)
    for position in repeated:
        attr = elements[position]
        context.warn(code="haizea.duplicate-attr",
                     message=rules.duplicate_attr_message(what, attr.get("name")), element=attr,
                     attribute="name")
    return values


def settle_assigned_ids(jobs: list[Job], explicit: Collection[int],
                        assigned: Iterable[int]) -> tuple[Job, ...]:
    """Leases without an id take their position, unless a lease of the file uses that id
    explicitly (Haizea 1.1 would take its global counter's next value): then the next
    number above every id of the file, so ids stay unique. ``assigned`` indexes the jobs
    whose id was assigned; they keep ``haizea:id-assigned``, so the writer still omits it."""
    clashes = [index for index in assigned if jobs[index].id in explicit]
    if not clashes:
        return tuple(jobs)
    next_id = max(int(job.id) for job in jobs) + 1
    for index in clashes:
        task = replace(jobs[index].tasks[0], id=next_id)
        jobs[index] = replace(jobs[index], id=next_id, tasks=(task,))
        next_id += 1
    return tuple(jobs)
