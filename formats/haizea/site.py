"""``<nodes>`` and ``<site>``: node-sets read from elements, and the machines they make."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from dcx.core.diagnostics import error, warning
from dcx.core.groups import MachineGroup, slots_of
from dcx.core.model import (
    Datacenter,
    Environment,
    Machine,
    NamedResource,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
)
from dcx.formats.haizea import rules
from dcx.formats.haizea.context import Context
from dcx.formats.haizea.vocabulary import (
    CPU,
    CPU_PER_CORE,
    MEMORY,
    RESOURCE_TYPES_KEY,
    Amount,
    Capacity,
)


class NodeSet(NamedTuple):
    """One ``<node-set>``: a tuple, as there is one per lease of a large LWF."""

    nodes: int
    capacity: Capacity


def read_capacity(node_set: Any, context: Context) -> Capacity:
    """A ``<node-set>``'s resources (``rules.capacity``), its findings reported."""
    res_elements = list(node_set)
    found, findings = rules.capacity([
        (res.get("type"), res.get("amount"),
         tuple([instance.get("amount") for instance in res]) if len(res) else ())
        for res in res_elements])
    for finding in findings:
        res = res_elements[finding.position]
        context.report(warning if finding.warning else error, finding.code, finding.message,
                       res, finding.attribute)
    return found


def read_node_sets(nodes: Any, context: Context) -> list[NodeSet]:
    """The ``<node-set>`` children of ``nodes`` (a lease's or the site's)."""
    return [NodeSet(int(node_set.get("numnodes")), read_capacity(node_set, context))
            for node_set in nodes]


def read_site(site: Any, context: Context) -> tuple[Environment, tuple[str, ...]]:
    """The site's machines and its declared resource types."""
    types_element = site.find("resource-types")
    names = tuple(types_element.get("names").split())
    declared: set[str] = set()
    for name in names:
        if name in declared:
            context.warn(code="haizea.duplicate-resource-type",
                         message=f"resource type {name!r} is listed twice",
                         element=types_element, attribute="names")
        declared.add(name)
    missing = [name for name in (CPU, MEMORY) if name not in declared]
    if missing:
        context.error(code="haizea.site-missing-cpu-memory",
                      message=f"the site must declare CPU and Memory; missing: "
                      f"{' '.join(missing)}", element=types_element, attribute="names")
    nodes = site.find("nodes")
    node_sets = read_node_sets(nodes, context)
    for node_set_element, node_set in zip(nodes, node_sets, strict=True):
        for kind, _ in node_set.capacity:
            if kind not in declared:
                context.error(code="haizea.undeclared-resource-type",
                              message=f"resource type {kind!r} is not in <resource-types>",
                              element=node_set_element)
    if not node_sets:
        context.warn(code="haizea.site-empty", message="the site has no nodes", element=nodes)
    return environment(node_sets, names), names


def environment(node_sets: list[NodeSet], names: tuple[str, ...] | None) -> Environment:
    """The site's machines: a node-set of several nodes is one group of identical
    machines (nodes are positional: no ids or names)."""
    parts: list[Machine | MachineGroup] = []
    templates: list[Machine] = []
    for node_set in node_sets:
        if node_set.nodes < 1:
            continue
        template = machine(node_set.capacity)
        templates.append(template)
        parts.append(template if node_set.nodes == 1 else MachineGroup(template, node_set.nodes))
    extras: dict[str, Any] = {}
    if names is not None and list(names) != derived_type_names(templates):
        extras[RESOURCE_TYPES_KEY] = list(names)
    rack = Rack(slots=slots_of(parts))
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),), extras=extras)


def named(name: str, amount: Amount) -> NamedResource:
    if isinstance(amount, tuple):
        return NamedResource(name, float(sum(amount)), instances=tuple(map(float, amount)))
    return NamedResource(name, float(amount))


def machine(capacity: Capacity) -> Machine:
    cpus: tuple[ProcessingUnit, ...] = ()
    memory: tuple[StorageUnit, ...] = ()
    resources: list[NamedResource] = []
    for name, amount in capacity:
        values = amount if isinstance(amount, tuple) else (amount,)
        if name == CPU and values and all(value % CPU_PER_CORE == 0 for value in values):
            cpus = tuple(ProcessingUnit(cores=value // CPU_PER_CORE) for value in values)
        elif name == MEMORY and values:
            memory = tuple(StorageUnit(capacity_mb=float(value)) for value in values)
        else:
            resources.append(named(name, amount))
    return Machine(cpus=cpus, memory=memory, resources=tuple(resources))


def derived_type_names(machines: Iterable[Machine]) -> list[str]:
    names = [CPU, MEMORY]
    for each in machines:
        for resource in each.resources:
            if resource.name not in names:
                names.append(resource.name)
    return names
