"""Fluxion JSON Graph Format (RFC 40 as flux-sched reads it): read, check, write.

Reading accepts the three edge forms Fluxion accepts: full (``metadata.subsystem``),
compact (no edge metadata: containment) and legacy (``metadata.name = {subsystem:
relation}``, read with a warning; legacy ``in`` edges are the reverse of ``contains`` and
are skipped). Vertex metadata needs only ``type`` and ``paths``; the other keys take
Fluxion's defaults. Integrity checks: unique vertex ids, edge endpoints exist, one root per
subsystem, containment edges agree with the paths, ``uniq_id`` inferable, property values are
strings (the schema).

Mapping (containment subsystem only):

* the root vertex is the ``Datacenter`` (name and id); the model's one ``Room`` is implicit;
* ``rack`` vertices, and any other vertex type that contains nodes (``chassis``), are
  ``Rack``\\ s (the type is kept in ``Rack.extras["jgf:type"]``); nodes with no such ancestor
  go into a rack marked ``Rack.extras["jgf:implicit"]`` that is not written back;
* ``node`` → ``Machine``: name, id, rank (``-1`` = none), ``status`` 1 (down) ↔
  ``MachineState.FAILURE`` (HALT and MAINTENANCE are written as down, with a loss);
  properties ↔ features (``name`` for an empty value, ``name=value`` otherwise, as Fluxion
  builds R properties);
* ``socket`` → one CPU per socket with its ``core`` descendants counted; cores directly under
  a node form one CPU with no id;
* ``gpu`` → a GPU (id = vertex id), ``memory`` → a memory module (size and unit converted to
  MB, binary multiples), any other type under a node → ``NamedResource`` (name, size,
  type, unit).

Vertices of other subsystems (power), and vertices that are neither under a node nor a
grouping of nodes, are checked but not mapped.

Writing emits full vertex metadata (type, basename, name, id, uniq_id, rank, size, unit,
exclusive, properties, paths), containment edges in the full form, and a cluster → rack →
node → socket → core tree with GPUs and memory under their node.

Empty topology
--------------
A topology without racks or machines is written as the root alone; when that root is the
fill-in ``cluster0`` with id 0 (no datacenter name or id, or exactly those), it reads back as
the empty topology (one datacenter, room and no racks, all unnamed), so environment → JGF →
environment keeps an empty topology empty. An explicit name ``cluster0`` or id 0 on such a
datacenter is therefore lost (``normal_form_losses``: ``datacenter.name``/``datacenter.id``).

Divergences
-----------
* Fluxion accepts more than one root per subsystem only if paths differ; dcx requires exactly
  one root in ``containment`` and at most one in every other subsystem.
* Fluxion reads any legacy edge as containment (even a legacy power edge); dcx uses the
  subsystem the legacy key names.
* Fluxion crashes or misbehaves on non-string property values; dcx rejects them (schema).
* The generic JGF v1 schema rejects the top-level ``writer`` key Fluxion writes; ours allows
  it, and ``free_ranks``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import chain, repeat
from operator import add
from typing import Any, Generic, TypeVar

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import (
    Diagnostic,
    LossCounter,
    ReadResult,
    WriteResult,
    error,
    warning,
)
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    MachineState,
    NamedResource,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
    Workload,
)
from dcx.parsing.jsonio import dumps_canonical, load_json_object
from dcx.parsing.schemas import schema_diagnostics

T = TypeVar("T")

SCHEMA = "jgf.schema.json"
CONTAINMENT = "containment"

HOLDS = frozenset({
    "datacenter.id", "datacenter.name", "rack", "rack.id", "rack.name",
    "machine.id", "machine.name", "machine.state", "machine.cpus", "machine.cpus.sockets",
    "cpu.id", "machine.gpus", "gpu.id", "machine.memory", "machine.memory.modules",
    "machine.features", "machine.resources", "machine.rank",
})

EMPTY_ROOT_NAME = "cluster0"
"""The root vertex of the empty topology (see Empty topology)."""

MAX_WRITE_VERTICES = 20_000_000
"""One vertex per core: bounds the output (about 5 GB of JSON) before any is built."""

_MB_PER_UNIT: dict[str, float] = {
    "B": 1 / 2**20, "KB": 1 / 1024, "KiB": 1 / 1024, "MB": 1.0, "MiB": 1.0,
    "GB": 1024.0, "GiB": 1024.0, "TB": 1024.0**2, "TiB": 1024.0**2, "PB": 1024.0**3,
    "PiB": 1024.0**3,
}
_TRAILING_DIGITS = re.compile(r"([0-9]+)$")


# --------------------------------------------------------------------------- sniffing


def top_level_keys(data: bytes, limit: int = 65536) -> dict[str, set[str]]:
    """Object keys at depth 1 and 2 of the first ``limit`` bytes, tolerant of bad JSON:
    enough to tell an R or a graph from a map of them or from a JSON Schema."""
    text = data[:limit].decode("utf-8", errors="replace")
    found: dict[str, set[str]] = {"1": set(), "2": set()}
    depth = 0
    position = 0
    length = len(text)
    while position < length:
        char = text[position]
        if char == '"':
            end = position + 1
            while end < length and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            token = text[position + 1:end]
            after = end + 1
            while after < length and text[after] in " \t\r\n":
                after += 1
            if after < length and text[after] == ":" and str(depth) in found:
                found[str(depth)].add(token)
            position = end + 1
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        position += 1
    return found


def sniff(data: bytes) -> bool:
    """A bare Fluxion graph: ``graph`` at the top level holding ``nodes``/``edges``."""
    if b'"graph"' not in data[:65536]:
        return False
    keys = top_level_keys(data)
    return "graph" in keys["1"] and bool(keys["2"] & {"nodes", "edges"}) \
        and not keys["1"] & {"$schema", "execution"}


# --------------------------------------------------------------------------- graph checks


@dataclass(slots=True)
class Vertex:
    key: str
    type: str
    name: str
    id: int
    rank: int
    status: int
    size: int
    unit: str
    properties: dict[str, str]
    paths: dict[str, str]
    index: int


@dataclass
class Graph:
    vertices: list[Vertex] = field(default_factory=list)
    by_path: dict[str, Vertex] = field(default_factory=dict)
    """Containment path → vertex."""
    children: dict[str, list[Vertex]] = field(default_factory=dict)
    """Containment path → child vertices, in document order."""
    root: Vertex | None = None
    shorthand: bool = False


def _vertex_from(key: str, meta: dict[str, Any], index: int) -> Vertex:
    kind = meta["type"]
    basename = meta.get("basename", kind)
    given_name: str | None = meta.get("name")
    vertex_id = meta.get("id")
    if vertex_id is None:
        vertex_id = _infer_id(kind, given_name, meta.get("uniq_id"), key)
    name = given_name if given_name is not None else f"{basename}{vertex_id}"
    return Vertex(key, kind, name, vertex_id, meta.get("rank", -1), meta.get("status", 0),
                  meta.get("size", 1), meta.get("unit", ""), meta.get("properties") or {},
                  meta["paths"], index)


def _infer_id(kind: str, name: str | None, uniq_id: int | None, key: str) -> int:
    if kind == "node" and name is not None:
        match = _TRAILING_DIGITS.search(name)
        return int(match.group(1)) if match else -1
    if uniq_id is not None:
        return uniq_id
    match = re.match(r"[0-9]+", key)
    return int(match.group()) if match else -1


def _edge_subsystem(edge: dict[str, Any]) -> tuple[str | None, bool]:
    """The edge's subsystem (None for a reverse legacy edge) and whether it is legacy."""
    meta = edge.get("metadata")
    if not meta:
        return CONTAINMENT, False
    if "subsystem" in meta:
        return meta["subsystem"], False
    legacy = meta.get("name")
    if isinstance(legacy, dict) and legacy:
        subsystem, relation = next(iter(legacy.items()))
        return (None if relation == "in" else subsystem), True
    return CONTAINMENT, False


def check_graph(document: dict[str, Any], base: str = "") -> tuple[Graph | None, list[Diagnostic]]:
    """Integrity checks on a schema-valid JGF document (bare, or an R ``scheduling`` value
    with ``base`` = ``/scheduling``). One pass over the vertices, one over the edges."""
    problems: list[Diagnostic] = []
    graph = Graph(shorthand=str(document.get("writer", "")).endswith("jgf_shorthand"))
    vertices, by_path, children = graph.vertices, graph.by_path, graph.children
    paths_of: dict[str, dict[str, str]] = {}
    """Vertex id → its paths, for the first vertex of each id."""
    roots: dict[str, list[Vertex]] = {}
    for index, node in enumerate(document["graph"]["nodes"]):
        key = node["id"]
        meta = node["metadata"]
        if key in paths_of:
            first = next(v.index for v in vertices if v.key == key)
            problems.append(error(f"duplicate vertex id {key!r} (first at index {first})",
                                  "jgf.duplicate-vertex-id",
                                  pointer=f"{base}/graph/nodes/{index}/id"))
            continue
        if "uniq_id" not in meta and not key[:1].isdigit():
            problems.append(error(f"uniq_id is missing and cannot be inferred from vertex id "
                                  f"{key!r}", "jgf.uniq-id",
                                  pointer=f"{base}/graph/nodes/{index}/metadata"))
        vertex = _vertex_from(key, meta, index)
        vertices.append(vertex)
        paths = vertex.paths
        paths_of[key] = paths
        for subsystem, path in paths.items():
            if path.rfind("/") == 0:
                roots.setdefault(subsystem, []).append(vertex)
        own_path = paths.get(CONTAINMENT)
        if own_path is not None:
            by_path[own_path] = vertex
            cut = own_path.rfind("/")
            if cut > 0:
                children.setdefault(own_path[:cut], []).append(vertex)
    for subsystem, found in roots.items():
        for extra in found[1:]:
            problems.append(error(f"more than one root vertex in subsystem {subsystem!r} "
                                  f"(first at index {found[0].index})", "jgf.duplicate-root",
                                  pointer=f"{base}/graph/nodes/{extra.index}/metadata/paths"))
    if vertices and CONTAINMENT not in roots:
        problems.append(error("no root vertex in the containment subsystem (no path of the "
                              "form /name)", "jgf.no-root", pointer=f"{base}/graph/nodes"))
    elif CONTAINMENT in roots:
        graph.root = roots[CONTAINMENT][0]
    problems.extend(_check_edges(document["graph"]["edges"], paths_of, base))
    return graph, problems


def _check_edges(edges: list[dict[str, Any]], paths_of: dict[str, dict[str, str]],
                 base: str) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    legacy = 0
    for index, edge in enumerate(edges):
        source, target = edge["source"], edge["target"]
        source_paths, target_paths = paths_of.get(source), paths_of.get(target)
        if source_paths is None or target_paths is None:
            missing = source if source_paths is None else target
            problems.append(error(f"edge endpoint {missing!r} is not a vertex id",
                                  "jgf.edge-endpoint", pointer=f"{base}/graph/edges/{index}"))
            continue
        subsystem = CONTAINMENT
        if edge.get("metadata"):
            named, is_legacy = _edge_subsystem(edge)
            legacy += is_legacy
            if named is None:
                continue  # the reverse half of a legacy pair
            subsystem = named
        parent, child = source_paths.get(subsystem), target_paths.get(subsystem)
        if parent is None or child is None:
            problems.append(error(f"edge in subsystem {subsystem!r} joins a vertex that has no "
                                  f"path in it", "jgf.edge-path",
                                  pointer=f"{base}/graph/edges/{index}"))
        elif child.rfind("/") != len(parent) or not child.startswith(parent):
            problems.append(error(f"edge {source}->{target} disagrees with the paths: {child!r} "
                                  f"is not directly under {parent!r}", "jgf.edge-path",
                                  pointer=f"{base}/graph/edges/{index}"))
    if legacy:
        problems.append(warning(f"{legacy} edge(s) use the legacy form metadata.name = "
                                "{subsystem: relation} (flux-sched before Aug 2024)",
                                "jgf.legacy-edge", pointer=f"{base}/graph/edges"))
    return problems


def node_inventory(graph: Graph) -> dict[str, tuple[int, int]]:
    """Host name → (cores, GPUs) under it, for comparing a graph with R_lite."""
    inventory: dict[str, tuple[int, int]] = {}
    for vertex in graph.vertices:
        node_path = vertex.paths.get(CONTAINMENT)
        if vertex.type != "node" or node_path is None:
            continue
        counts = Counter(v.type for v in _descendants(graph, node_path))
        inventory[vertex.name] = (counts["core"], counts["gpu"])
    return inventory


def _descendants(graph: Graph, path: str) -> list[Vertex]:
    found: list[Vertex] = []
    stack = list(graph.children.get(path, ()))
    while stack:
        vertex = stack.pop()
        found.append(vertex)
        stack.extend(graph.children.get(vertex.paths[CONTAINMENT], ()))
    return found


# --------------------------------------------------------------------------- reading


def read(data: bytes) -> ReadResult:
    loaded, problems = load_json_object(data, "a JGF document", "jgf.not-object")
    if loaded is None:
        return ReadResult(None, tuple(problems))
    value = loaded.value
    found = schema_diagnostics(SCHEMA, value, loaded.locator)
    if found:
        return ReadResult(None, tuple(found))
    graph, found = check_graph(value)
    located = tuple(loaded.locator.diagnostic(d) for d in found)
    if graph is None or any(d.is_error for d in found):
        return ReadResult(None, located)
    environment = graph_to_environment(graph)
    return ReadResult(Document(environment=environment), located)


def graph_to_environment(graph: Graph) -> Environment:
    root = graph.root
    if root is None:
        return Environment()
    if _is_bare_fill_in_root(root.type, root.name, root.id) and not graph.children.get(
            root.paths[CONTAINMENT]):
        return Environment(datacenters=(Datacenter(rooms=(Room(),)),))
    racks: list[Rack] = []
    loose: list[Machine] = []
    _collect(graph, root.paths[CONTAINMENT], racks, loose)
    if loose:
        racks.insert(0, Rack(slots=tuple(loose), extras={"jgf:implicit": True}))
    datacenter_extras: dict[str, Any] = {} if root.type == "cluster" else {"jgf:type": root.type}
    datacenter = Datacenter(id=root.id, name=root.name, rooms=(Room(racks=tuple(racks)),),
                            extras=datacenter_extras)
    return Environment(datacenters=(datacenter,))


def _is_bare_fill_in_root(kind: str, name: str | None, vertex_id: int | None) -> bool:
    """The root the writer makes for a topology without machines or racks (its empty
    document, ``cluster0`` with id 0): read back as the empty topology, not a datacenter."""
    return kind == "cluster" and name == EMPTY_ROOT_NAME and vertex_id == 0


def _collect(graph: Graph, path: str, racks: list[Rack], loose: list[Machine]) -> None:
    """Walk groupings below the root: nodes, racks (and rack-like types), other branches."""
    for vertex in graph.children.get(path, ()):
        vertex_path = vertex.paths[CONTAINMENT]
        if vertex.type == "node":
            loose.append(_machine(graph, vertex))
        elif vertex.type == "rack" or _contains_nodes(graph, vertex_path):
            machines: list[Machine] = []
            _collect(graph, vertex_path, racks, machines)
            extras: dict[str, Any] = {} if vertex.type == "rack" else {"jgf:type": vertex.type}
            racks.append(Rack(id=vertex.id, name=vertex.name, slots=tuple(machines),
                              extras=extras))


def _count_below(graph: Graph, path: str, kind: str) -> int:
    """How many vertices of type ``kind`` lie below ``path``; cores collapse to this count."""
    count = 0
    stack = [path]
    children = graph.children
    while stack:
        for vertex in children.get(stack.pop(), ()):
            if vertex.type == kind:
                count += 1
            below = vertex.paths[CONTAINMENT]
            if below in children:
                stack.append(below)
    return count


def _contains_nodes(graph: Graph, path: str) -> bool:
    return any(v.type == "node" for v in _descendants(graph, path))


def _machine(graph: Graph, node: Vertex) -> Machine:
    cpus: list[ProcessingUnit] = []
    loose_cores = 0
    gpus: list[ProcessingUnit] = []
    memory: list[StorageUnit] = []
    resources: list[NamedResource] = []
    stack = list(reversed(graph.children.get(node.paths[CONTAINMENT], ())))
    while stack:
        vertex = stack.pop()
        below = graph.children.get(vertex.paths[CONTAINMENT], ())
        if vertex.type == "socket":
            cores = _count_below(graph, vertex.paths[CONTAINMENT], "core")
            cpus.append(ProcessingUnit(cores=cores, id=vertex.id))
            stack.extend(v for v in reversed(below) if v.type != "core")
            continue
        if vertex.type == "core":
            loose_cores += 1
        elif vertex.type == "gpu":
            gpus.append(ProcessingUnit(cores=1, id=vertex.id))
        elif vertex.type == "memory" and vertex.unit in _MB_PER_UNIT:
            # A memory vertex's id only numbers it: the model's StorageUnit.id is
            # memory.details, which JGF does not hold.
            memory.append(StorageUnit(capacity_mb=vertex.size * _MB_PER_UNIT[vertex.unit]))
        else:
            resources.append(NamedResource(name=vertex.name, amount=float(vertex.size),
                                           type=vertex.type, unit=vertex.unit or None))
        stack.extend(reversed(below))
    if loose_cores:
        cpus.insert(0, ProcessingUnit(cores=loose_cores))
    features = tuple(name if value == "" else f"{name}={value}"
                     for name, value in node.properties.items())
    return Machine(
        id=node.id if node.id >= 0 else None, name=node.name,
        state=MachineState.FAILURE if node.status == 1 else MachineState.ACTIVE,
        cpus=tuple(cpus), gpus=tuple(gpus), memory=tuple(memory), features=features,
        resources=tuple(resources), rank=node.rank if node.rank >= 0 else None,
    )


# --------------------------------------------------------------------------- losses


_MACHINE_FIELD_PATHS: dict[str, str] = {
    "id": "machine.id", "name": "machine.name", "state_label": "machine.state_label",
    "memory": "machine.memory", "storage": "machine.storage", "features": "machine.features",
    "resources": "machine.resources", "os": "machine.os", "arch": "machine.arch",
    "description": "machine.description", "swap_mb": "machine.swap_mb",
    "network_mbit_s": "machine.network_mbit_s", "rank": "machine.rank",
    "available": "machine.available", "utilized": "machine.utilized",
    "extras": "machine.extras", "gpus": "machine.gpus",
}


def _is_set(value: Any) -> bool:
    return value is not None and value != () and value != {}


class ShapeMemo(Generic[T]):
    """The result of a pure function of some model parts, computed once per distinct shape.

    Machines built from one template share their part objects (the readers here do), so a
    shape is found by the parts' identity first; otherwise by equality with the previous
    shape, since inventories list machines of a kind together. A 10,000-node homogeneous
    inventory thus costs one computation instead of one per CPU, GPU and memory module."""

    def __init__(self, compute: Callable[..., T]) -> None:
        self._compute = compute
        self._by_identity: dict[tuple[int, ...], tuple[tuple[Any, ...], T]] = {}
        self._last: tuple[tuple[Any, ...], T] | None = None

    def get(self, *parts: Any) -> T:
        key = tuple(map(id, parts))
        found = self._by_identity.get(key)
        if found is not None:
            return found[1]
        last = self._last
        result = last[1] if last is not None and last[0] == parts else self._compute(*parts)
        self._by_identity[key] = (parts, result)  # holds the parts, so their ids stay theirs
        self._last = (parts, result)
        return result


RecordedLosses = tuple[tuple[str, int, str], ...]
"""``LossCounter.add`` arguments, replayed for every machine of one shape."""


class LossRecorder(LossCounter):
    """A ``LossCounter`` that keeps its calls, to replay them per machine of one shape."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int, str]] = []

    def add(self, field_path: str, count: int = 1, detail: str = "") -> None:
        if count > 0:
            self.calls.append((field_path, count, detail))


def replay(recorded: RecordedLosses, losses: LossCounter) -> None:
    for field_path, count, detail in recorded:
        losses.add(field_path, count, detail)


def _plain_keys(extras: dict[str, Any]) -> bool:
    """Free-form keys (no ``fmt:`` prefix): the only extras a field path carries."""
    return any(":" not in key for key in extras)


class MachineLosses:
    """Counts the machine fields a format without ``holds`` drops, each field path judged on
    its own as ``converters.losses.dropped_fields`` does (a dropped ``machine.storage`` does
    not hide a dropped ``storage.details``). The per-unit walk over CPUs, GPUs, memory and
    storage runs once per distinct shape (``ShapeMemo``). Extras keys with a ``fmt:`` prefix
    are no loss: only their own format holds them."""

    def __init__(self, holds: frozenset[str], own_prefix: str | None = None) -> None:
        self.holds = holds
        self.own_prefix = own_prefix
        self._dropped = tuple((name, path) for name, path in _MACHINE_FIELD_PATHS.items()
                              if path not in holds and name != "extras")
        self._units: ShapeMemo[RecordedLosses] = ShapeMemo(self._unit_losses)

    def count(self, machine: Machine, losses: LossCounter) -> None:
        for name, path in self._dropped:
            value = getattr(machine, name)
            if value is not None and value != () and value != {}:
                losses.add(path)
        if machine.state is not MachineState.ACTIVE and "machine.state" not in self.holds:
            losses.add("machine.state")
        if "machine.extras" not in self.holds and _plain_keys(machine.extras):
            losses.add("machine.extras")
        replay(self._units.get(machine.cpus, machine.gpus, machine.memory, machine.storage),
               losses)

    def _unit_losses(self, cpus: tuple[ProcessingUnit, ...], gpus: tuple[ProcessingUnit, ...],
                     memory: tuple[StorageUnit, ...],
                     storage: tuple[StorageUnit, ...]) -> RecordedLosses:
        recorder = LossRecorder()
        holds = self.holds
        for cpu in cpus:
            _unit_losses(cpu, "cpu", holds, recorder)
        if len(cpus) > 1 and "machine.cpus.sockets" not in holds:
            recorder.add("machine.cpus.sockets", detail="sockets merge into one CPU")
        for gpu in gpus:
            _unit_losses(gpu, "gpu", holds, recorder)
            if gpu.cores != 1 and "gpu.cores" not in holds:
                recorder.add("gpu.cores", detail="GPUs are written as devices")
        for units, kind in ((memory, "memory"), (storage, "storage")):
            if len(units) > 1 and f"machine.{kind}.{_SPLITS[kind]}" not in holds:
                recorder.add(f"machine.{kind}.{_SPLITS[kind]}", detail="units merge into one")
            for unit in units:
                if f"{kind}.details" not in holds and any(
                        _is_set(getattr(unit, f.name)) for f in fields(unit)
                        if f.name not in ("capacity_mb", "extras")):
                    recorder.add(f"{kind}.details")
                if "machine.extras" not in holds and _plain_keys(unit.extras):
                    recorder.add("machine.extras", detail=f"{kind} extras")
        return tuple(recorder.calls)


_SPLITS = {"memory": "modules", "storage": "devices"}


def _unit_losses(unit: ProcessingUnit, kind: str, holds: frozenset[str],
                 losses: LossCounter) -> None:
    for path, present in (
            (f"{kind}.clock_rate_hz", unit.clock_rate_hz is not None),
            (f"{kind}.vendor", any(_is_set(v) for v in (unit.manufacturer, unit.family,
                                                         unit.generation, unit.model))),
            (f"{kind}.energy_consumption_w", unit.energy_consumption_w is not None),
            (f"{kind}.id", unit.id is not None)):
        if present and path not in holds:
            losses.add(path)
    if "machine.extras" not in holds and _plain_keys(unit.extras):
        losses.add("machine.extras", detail=f"{kind} extras")


def workload_losses(document: Document, losses: LossCounter, detail: str) -> None:
    """A resource format drops the workload part as one loss; an empty one carries nothing."""
    if document.workload is not None and document.workload != Workload():
        losses.add("workload", detail=detail)


def topology_losses(environment: Environment, holds: frozenset[str], own_prefix: str,
                    losses: LossCounter) -> None:
    """Environment, datacenter, room and rack fields a format without ``holds`` drops.
    Extras keys starting with ``own_prefix`` are the format's own and not lost."""
    for name in ("name", "description"):
        if getattr(environment, name) is not None and f"environment.{name}" not in holds:
            losses.add(f"environment.{name}")
    foreign = [k for k in environment.extras if not k.startswith(own_prefix)]
    losses.add("environment.extras", len(foreign))
    for event in environment.events:
        kind = "machine_state" if hasattr(event, "machine") else "scheduler"
        losses.add(f"environment.events.{kind}")
    hierarchy_losses(environment, holds, losses)
    for datacenter in environment.datacenters:
        for name in ("id", "name", "location", "operator", "scheduler"):
            path = f"datacenter.{name}"
            if path not in holds and getattr(datacenter, name) is not None:
                losses.add(path)
        own = [k for k in datacenter.extras if not k.startswith(own_prefix)]
        losses.add("datacenter.extras", len(own))
        for room in datacenter.rooms:
            for name, path in (("id", "room.id"), ("name", "room.name")):
                if getattr(room, name) is not None:
                    losses.add(path)
            if room.type != "SERVER":
                losses.add("room.type")
            if room.location is not None or room.size is not None:
                losses.add("room.geometry")
            losses.add("room.extras", len(room.extras))
            for rack in room.racks:
                _rack_losses(rack, holds, own_prefix, losses)


def hierarchy_losses(environment: Environment, holds: frozenset[str],
                     losses: LossCounter) -> None:
    """The levels a format without them drops: several datacenters, several rooms in one
    datacenter or a room that is not a SERVER room, several racks in one room (one container
    with default attributes is what such a format reads back, so it loses nothing)."""
    datacenters = environment.datacenters
    if "datacenter" not in holds:
        losses.add("datacenter", len(datacenters) - 1, "machines of all datacenters are written")
    rooms = [room for datacenter in datacenters for room in datacenter.rooms]
    if "room" not in holds:
        losses.add("room", sum(max(len(dc.rooms) - 1, 0) for dc in datacenters)
                   or sum(room.type != "SERVER" for room in rooms), "rooms are not written")
    if "rack" not in holds:
        losses.add("rack", sum(max(len(room.racks) - 1, 0) for room in rooms),
                   "racks are not written; machines are listed by rank")


def _rack_losses(rack: Rack, holds: frozenset[str], own_prefix: str,
                 losses: LossCounter) -> None:
    for name in ("id", "name", "capacity_units", "power_capacity_w"):
        path = f"rack.{name}"
        if path not in holds and getattr(rack, name) is not None:
            losses.add(path)
    if "rack.empty_slots" not in holds:
        losses.add("rack.empty_slots", sum(1 for slot in rack.slots if slot is None))
    losses.add("rack.extras", sum(1 for k in rack.extras if not k.startswith(own_prefix)))


# --------------------------------------------------------------------------- value restrictions


def normal_form(document: Document) -> Document:
    """What JGF makes of ``document`` before any field path applies (``converters.losses``,
    Value restrictions). Every vertex has a name and a non-negative integer id, so missing
    ones are filled in as the writer names them (``cluster<id>``, ``rack<id>``, ``node<i>``;
    an id from the name's trailing digits, else the position) and ids that are not such
    integers are replaced the same way; HALT and MAINTENANCE machines are down (FAILURE);
    features that give one property two values are kept once; GPU and socket ids follow the
    same rule; named resources that are not whole sizes are left out; memory sizes become
    whole numbers of KB, MB or GB."""
    environment = document.environment
    if environment is None:
        return document
    rack_index = 0
    ids = machine_ids(environment)
    datacenters: list[Datacenter] = []
    for datacenter in environment.datacenters:
        name = _usable(datacenter.name) or f"cluster{_int_id(datacenter.id, 0)}"
        rooms: list[Room] = []
        for room in datacenter.rooms:
            racks: list[Rack] = []
            for rack in room.racks:
                racks.append(_normal_rack(rack, rack_index, ids))
                rack_index += 1
            rooms.append(replace(room, racks=tuple(racks)))
        datacenters.append(replace(datacenter, name=name, id=_int_id(
            datacenter.id, _name_id(name, 0)), rooms=tuple(rooms)))
    if datacenters and _writes_empty_root(environment):
        datacenters[0] = replace(datacenters[0], name=None, id=None)
    return replace(document, environment=replace(environment, datacenters=tuple(datacenters)))


def _root(environment: Environment) -> tuple[Datacenter, str, str, int]:
    """The datacenter the root vertex stands for, and the root's type, name and id."""
    datacenter = environment.datacenters[0] if environment.datacenters else Datacenter()
    name = _usable(datacenter.name) or f"cluster{_int_id(datacenter.id, 0)}"
    return (datacenter, str(datacenter.extras.get("jgf:type", "cluster")), name,
            _int_id(datacenter.id, _name_id(name, 0)))


def _writes_empty_root(environment: Environment) -> bool:
    """Whether the graph is the root alone, as ``cluster0`` with id 0: the empty topology's
    document, which reads back as the empty topology (see Empty topology)."""
    if any(not rack.extras.get("jgf:implicit") or any(True for _ in rack.machines)
           for datacenter in environment.datacenters for room in datacenter.rooms
           for rack in room.racks):
        return False
    _, kind, name, vertex_id = _root(environment)
    return _is_bare_fill_in_root(kind, name, vertex_id)


def _empty_root_losses(environment: Environment) -> set[str]:
    """The datacenter name and id the empty topology's document cannot tell from its
    fill-ins: ``cluster0`` and 0 given explicitly (an id that is not a non-negative integer
    is reported as such already)."""
    if not _writes_empty_root(environment):
        return set()
    datacenter = _root(environment)[0]
    return ({"datacenter.name"} if datacenter.name is not None else set()) | (
        {"datacenter.id"} if datacenter.id == 0 else set())


def _normal_rack(rack: Rack, index: int, ids: dict[int, int]) -> Rack:
    slots: list[Machine | None] = []
    names = iter(machine_names(rack.machines))
    for slot in rack.slots:
        if slot is None:
            slots.append(None)
            continue
        slots.append(_normal_machine(slot, next(names)[0], ids[id(slot)]))
    if rack.extras.get("jgf:implicit"):
        return replace(rack, slots=tuple(slots))
    name = _usable(rack.name) or f"rack{_int_id(rack.id, index)}"
    return replace(rack, name=name, id=_int_id(rack.id, _name_id(name, index)),
                   slots=tuple(slots))


def _normal_machine(machine: Machine, name: str, vertex_id: int) -> Machine:
    properties, _ = features_to_properties(machine.features)
    state = machine.state
    if state in (MachineState.HALT, MachineState.MAINTENANCE):
        state = MachineState.FAILURE
    return replace(
        machine, name=name, id=vertex_id, state=state,
        features=tuple(key if value == "" else f"{key}={value}"
                       for key, value in properties.items()),
        cpus=tuple(replace(cpu, id=_int_id(cpu.id, i)) for i, cpu in enumerate(machine.cpus)),
        gpus=tuple(replace(gpu, id=_int_id(gpu.id, i)) for i, gpu in enumerate(machine.gpus)),
        memory=tuple(replace(module, capacity_mb=_whole_memory_mb(module.capacity_mb))
                     for module in machine.memory),
        resources=tuple(replace(resource, type=resource.type or resource.name)
                        for resource in machine.resources if _is_whole_size(resource)))


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    environment = document.environment
    if environment is None:
        return frozenset()
    found = _empty_root_losses(environment)

    def bad_id(value: Any) -> bool:
        return value is not None and _int_id(value, -1) < 0

    def bad_name(name: str | None) -> bool:
        return name is not None and _usable(name) is None

    for datacenter in environment.datacenters:
        if bad_id(datacenter.id):
            found.add("datacenter.id")
        if bad_name(datacenter.name):
            found.add("datacenter.name")
        for room in datacenter.rooms:
            for rack in room.racks:
                if rack.extras.get("jgf:implicit"):
                    continue
                if bad_id(rack.id):
                    found.add("rack.id")
                if bad_name(rack.name):
                    found.add("rack.name")
    renamed = {id(machine): name for rack in environment.racks()
               for machine, (name, _) in zip(rack.machines, machine_names(rack.machines),
                                             strict=True)}
    for machine in environment.machines():
        for path, bad in (
                ("machine.id", bad_id(machine.id)),
                ("machine.name", machine.name is not None and machine.name != renamed.get(
                    id(machine), machine.name)),
                ("machine.state", machine.state in (MachineState.HALT,
                                                    MachineState.MAINTENANCE)),
                ("machine.features", features_to_properties(machine.features)[1] > 0),
                ("cpu.id", any(bad_id(cpu.id) for cpu in machine.cpus)),
                ("gpu.id", any(bad_id(gpu.id) for gpu in machine.gpus)),
                ("machine.memory", any(_whole_memory_mb(m.capacity_mb) != m.capacity_mb
                                       for m in machine.memory)),
                ("machine.resources", not all(map(_is_whole_size, machine.resources)))):
            if bad:
                found.add(path)
    return frozenset(found)


def _whole_memory_mb(capacity_mb: float) -> float:
    size, unit = _memory_size(capacity_mb)
    return size * _MB_PER_UNIT[unit]


def _is_whole_size(resource: NamedResource) -> bool:
    amount = resource.amount
    return amount == int(amount) and amount >= 0 and not resource.extras \
        and not resource.instances


# --------------------------------------------------------------------------- writing


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _vertex_text(kind: str, name: str, vertex_id: int, *, size: int = 1, unit: str = "",
                 properties: dict[str, str] | None = None, status: int = 0,
                 path_tail: str = "") -> str:
    """One vertex as JSON text with ``%d`` slots for its uniq_id (twice) and rank and a
    ``%s`` slot for its parent's escaped path; literal ``%`` in names are doubled."""
    match = _TRAILING_DIGITS.search(name)
    basename = name[: match.start()] if match and match.start() > 0 else kind
    tail = _json_text(f"{path_tail}/{name}")[1:-1]
    fixed = (f',"metadata":{{"type":{_json_text(kind)},"basename":{_json_text(basename)},'
             f'"name":{_json_text(name)},"id":{vertex_id},').replace("%", "%%")
    rest = (f'"exclusive":false,"unit":{_json_text(unit)},"size":{size},'
            f'"properties":{_json_text(properties or {})},').replace("%", "%%")
    status_text = f',"status":{status}' if status else ""
    return ('{"id":"%d"' + fixed + '"uniq_id":%d,"rank":%d,' + rest
            + '"paths":{"containment":"%s' + tail.replace("%", "%%") + '"}' + status_text
            + "}}")


_EDGE_TEXT = '{"source":"%d","target":"%d","metadata":{"subsystem":"containment"}}'


@dataclass(frozen=True)
class _Template:
    """The vertices below a node for one machine shape, as two format strings: vertices
    take (uniq_id, uniq_id, rank, escaped node path) per vertex, edges (parent, child);
    ``parents`` are offsets from the node (0 = the node). Also the losses the shape implies
    and its bad names."""

    vertices: str
    edges: str
    parents: tuple[int, ...]
    losses: RecordedLosses
    bad_names: tuple[str, ...]


def _machine_template(cpus: tuple[ProcessingUnit, ...], gpus: tuple[ProcessingUnit, ...],
                      memory: tuple[StorageUnit, ...],
                      resources: tuple[NamedResource, ...]) -> _Template:
    texts: list[str] = []
    parents: list[int] = []
    names: list[str] = []
    recorder = LossRecorder()

    def add(parent: int, kind: str, name: str, vertex_id: int, tail: str = "", *,
            size: int = 1, unit: str = "") -> int:
        texts.append(_vertex_text(kind, name, vertex_id, size=size, unit=unit, path_tail=tail))
        parents.append(parent)
        names.append(name)
        return len(texts)

    core_number = 0
    for kind, units in (("cpu", cpus), ("gpu", gpus)):
        if any(unit.id is not None and _int_id(unit.id, -1) < 0 for unit in units):
            recorder.add(f"{kind}.id", detail="JGF ids are non-negative integers")
    for socket_index, cpu in enumerate(cpus):
        socket_id = _int_id(cpu.id, socket_index)
        socket_name = f"socket{socket_id}"
        socket = add(0, "socket", socket_name, socket_id)
        for _ in range(cpu.cores):
            add(socket, "core", f"core{core_number}", core_number, f"/{socket_name}")
            core_number += 1
    for gpu_index, gpu in enumerate(gpus):
        gpu_id = _int_id(gpu.id, gpu_index)
        add(0, "gpu", f"gpu{gpu_id}", gpu_id)
    for memory_index, module in enumerate(memory):
        memory_id = _int_id(module.id, memory_index)
        size, unit = _memory_size(module.capacity_mb)
        if size * _MB_PER_UNIT[unit] != module.capacity_mb:
            recorder.add("machine.memory", detail="JGF sizes are whole numbers of a unit")
        add(0, "memory", f"memory{memory_id}", memory_id, size=size, unit=unit)
    for resource in resources:
        if not _is_whole_size(resource):
            recorder.add("machine.resources", detail="JGF sizes are whole numbers")
            continue
        add(0, resource.type or resource.name, resource.name, _name_id(resource.name, 0),
            size=int(resource.amount), unit=resource.unit or "")
    bad = tuple(name for name in dict.fromkeys(names) if "/" in name or name == "")
    return _Template(",".join(texts), ",".join([_EDGE_TEXT] * len(texts)), tuple(parents),
                     tuple(recorder.calls), bad)


class _GraphWriter:
    """Writes vertices and containment edges as JSON text while they are produced, one
    chunk per machine; machines of one shape share a template (``ShapeMemo``)."""

    def __init__(self) -> None:
        self.vertices: list[bytes] = []
        self.edges: list[bytes] = []
        self.count = 0
        self.problems: list[Diagnostic] = []
        self.templates: ShapeMemo[_Template] = ShapeMemo(_machine_template)

    def check_name(self, name: str) -> None:
        if "/" in name or name == "":
            self.problems.append(error(f"name {name!r} cannot be a JGF path segment",
                                       "jgf.write-name"))

    def vertex(self, kind: str, name: str, vertex_id: int, parent: tuple[int, str] | None,
               *, rank: int = -1, properties: dict[str, str] | None = None,
               status: int = 0) -> tuple[int, str]:
        """Add a vertex under ``parent`` = (uniq_id, path); returns its own."""
        self.check_name(name)
        uniq_id = self.count
        parent_path = parent[1] if parent else ""
        text = _vertex_text(kind, name, vertex_id, properties=properties, status=status)
        escaped_parent = _json_text(parent_path)[1:-1]
        self.vertices.append((text % (uniq_id, uniq_id, rank, escaped_parent)).encode())
        if parent is not None:
            self.edges.append((_EDGE_TEXT % (parent[0], uniq_id)).encode())
        self.count += 1
        return uniq_id, f"{parent_path}/{name}"

    def below(self, node: tuple[int, str], rank: int, template: _Template) -> None:
        """The vertices of ``template`` under ``node``, numbered right after it: one string
        format per machine, its arguments interleaved at C level."""
        for name in template.bad_names:
            self.check_name(name)
        count = len(template.parents)
        if not count:
            return
        if node[0] != self.count - 1:
            raise ValueError("a template's vertices must follow their node")
        first = self.count
        numbers = range(first, first + count)
        escaped = _json_text(node[1])[1:-1]
        vertex_args = tuple(chain.from_iterable(
            zip(numbers, numbers, repeat(rank), repeat(escaped))))
        self.vertices.append((template.vertices % vertex_args).encode())
        parents = map(add, template.parents, repeat(node[0]))
        self.edges.append((template.edges % tuple(chain.from_iterable(
            zip(parents, numbers, strict=True)))).encode())
        self.count += count

    def document(self) -> bytes:
        return b"".join((b'{"graph":{"nodes":[', b",".join(self.vertices), b'],"edges":[',
                         b",".join(self.edges), b"]}}\n"))


def _int_id(value: Any, fallback: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else fallback


def machine_names(machines: Sequence[Machine]) -> list[tuple[str, bool]]:
    """Each machine's vertex name among its siblings and whether its own name was replaced.
    JGF paths need unique sibling names, but other formats allow repeats (SSS names only
    have to exist): the first use of a name keeps it, a repeat or a name that cannot be a
    path segment is replaced by the fill-in ``node<i>`` (suffixed ``-k`` if that is taken),
    as is a missing name (a fill-in, not a loss)."""
    taken: set[str] = set()
    names: list[str | None] = []
    replaced: list[bool] = []
    for machine in machines:
        name = _usable(machine.name)
        keep = name is not None and name not in taken
        names.append(name if keep else None)
        replaced.append(machine.name is not None and not keep)
        if keep and name is not None:
            taken.add(name)
    result: list[tuple[str, bool]] = []
    for index, (name, was_replaced) in enumerate(zip(names, replaced, strict=True)):
        if name is None:
            name = candidate = f"node{index}"
            suffix = 1
            while name in taken:
                name = f"{candidate}-{suffix}"
                suffix += 1
            taken.add(name)
        result.append((name, was_replaced))
    return result


def _usable(name: str | None) -> str | None:
    """``name`` when it can be a JGF path segment (not empty, no ``/``); else ``None``, and
    the writer's fill-in name is used instead (a value restriction: ``normal_form``)."""
    return name if name and "/" not in name else None


def _name_id(name: str, fallback: int) -> int:
    match = _TRAILING_DIGITS.search(name)
    return int(match.group(1)) if match else fallback


def machine_ids(environment: Environment) -> dict[int, int]:
    """The vertex id of every machine (keyed by ``id(machine)``), unique in the document.
    Valid explicit ids are kept; a missing or unusable one becomes the name's trailing
    digits when that number is free, else the smallest free number. Fill-ins by position
    alone would repeat in every rack, and readers of other formats require unique ids."""
    machines = [(machine, name) for rack in environment.racks()
                for machine, (name, _) in zip(rack.machines, machine_names(rack.machines),
                                              strict=True)]
    used = {machine.id for machine, _ in machines if _int_id(machine.id, -1) >= 0}
    assigned: dict[int, int] = {}
    next_free = 0
    for machine, name in machines:
        explicit = _int_id(machine.id, -1)
        if explicit >= 0:
            assigned[id(machine)] = explicit
            continue
        candidate = _name_id(name, -1)
        if candidate < 0 or candidate in used:
            while next_free in used:
                next_free += 1
            candidate = next_free
        used.add(candidate)
        assigned[id(machine)] = candidate
    return assigned


def write(document: Document) -> WriteResult:
    losses = LossCounter()
    environment = document.environment or Environment()
    workload_losses(document, losses, "JGF describes resources only")
    topology_losses(environment, HOLDS, "jgf:", losses)
    writer = _GraphWriter()
    datacenter, cluster_type, cluster_name, cluster_id = _root(environment)
    cluster = writer.vertex(cluster_type, cluster_name, cluster_id, None)
    if datacenter.id is not None and _int_id(datacenter.id, -1) < 0:
        losses.add("datacenter.id", detail="JGF ids are non-negative integers")
    if datacenter.name is not None and _usable(datacenter.name) is None:
        losses.add("datacenter.name", detail="a JGF path segment cannot contain '/'")
    for field_path in sorted(_empty_root_losses(environment)):
        losses.add(field_path, detail="a lone cluster0 root is the empty topology")
    racks = [rack for dc in environment.datacenters for room in dc.rooms for rack in room.racks]
    vertex_count = sum(m.core_count + len(m.gpus) + len(m.memory) + len(m.resources) + 1
                       for rack in racks for m in rack.machines)
    if vertex_count > MAX_WRITE_VERTICES:
        return WriteResult(b"", losses.losses(), (error(
            f"the graph would have {vertex_count:,} vertices; dcx writes at most "
            f"{MAX_WRITE_VERTICES:,}", "jgf.write-too-large"),))
    machine_losses = MachineLosses(HOLDS)
    ids = machine_ids(environment)
    rack_names: set[str] = set()
    for rack_index, rack in enumerate(racks):
        parent = cluster
        if not rack.extras.get("jgf:implicit"):
            name = _usable(rack.name) or f"rack{_int_id(rack.id, rack_index)}"
            if rack.name is not None and _usable(rack.name) is None:
                losses.add("rack.name", detail="a JGF path segment cannot contain '/'")
            _unique(name, rack_names, writer)
            if rack.id is not None and _int_id(rack.id, -1) < 0:
                losses.add("rack.id", detail="JGF ids are non-negative integers")
            parent = writer.vertex(str(rack.extras.get("jgf:type", "rack")), name,
                                   _int_id(rack.id, _name_id(name, rack_index)), cluster)
        for machine, (name, replaced) in zip(rack.machines, machine_names(rack.machines),
                                             strict=True):
            if replaced:
                losses.add("machine.name", detail="JGF sibling names are unique path "
                           "segments without '/'")
            _write_machine(writer, machine, name, ids[id(machine)], parent, losses,
                           machine_losses)
    if writer.problems:
        return WriteResult(b"", losses.losses(), tuple(writer.problems))
    data = writer.document()
    if writer.count <= _INDENTED_VERTICES:
        data = dumps_canonical(json.loads(data), indent=2)
    return WriteResult(data, losses.losses())


_INDENTED_VERTICES = 10_000
"""Indented output for readable small graphs; compact text for large ones (a third the
size), written directly without building the value."""


def _unique(name: str, seen: set[str], writer: _GraphWriter) -> None:
    if name in seen:
        writer.problems.append(error(f"two siblings are both named {name!r}; JGF paths must be "
                                     "unique", "jgf.write-duplicate-name"))
    seen.add(name)


def _write_machine(writer: _GraphWriter, machine: Machine, name: str, vertex_id: int,
                   parent: tuple[int, str], losses: LossCounter,
                   machine_losses: MachineLosses) -> None:
    machine_losses.count(machine, losses)
    rank = machine.rank if machine.rank is not None else -1
    if machine.id is not None and _int_id(machine.id, -1) < 0:
        losses.add("machine.id", detail="JGF ids are non-negative integers")
    if machine.state in (MachineState.HALT, MachineState.MAINTENANCE):
        losses.add("machine.state", detail="written as down (status 1), read back as FAILURE")
    properties, dropped = features_to_properties(machine.features)
    losses.add("machine.features", dropped, "two features give one property different values")
    node = writer.vertex("node", name, vertex_id, parent,
                         rank=rank, properties=properties,
                         status=0 if machine.state is MachineState.ACTIVE else 1)
    template = writer.templates.get(machine.cpus, machine.gpus, machine.memory,
                                    machine.resources)
    replay(template.losses, losses)
    writer.below(node, rank, template)


def _memory_size(capacity_mb: float) -> tuple[int, str]:
    if capacity_mb >= 1024 and capacity_mb % 1024 == 0:
        return int(capacity_mb // 1024), "GB"
    if capacity_mb == int(capacity_mb):
        return int(capacity_mb), "MB"
    return round(capacity_mb * 1024), "KB"


def features_to_properties(features: tuple[str, ...]) -> tuple[dict[str, str], int]:
    """``name`` → ``{name: ""}``, ``name=value`` → ``{name: value}``; returns the mapping and
    how many features it could not hold (repeats and conflicting values)."""
    properties: dict[str, str] = {}
    dropped = 0
    for feature in features:
        name, separator, value = feature.partition("=")
        if name in properties or not name or (separator and not value):
            dropped += 1
            continue
        properties[name] = value
    return properties, dropped


FORMAT = FormatDeclaration(
    name="jgf",
    title="Fluxion JSON Graph Format (RFC 40)",
    family="flux",
    kind="topology",
    extensions=(".json",),
    content=frozenset({"json"}),
    schema="jgf.schema.json",
    description=("Fluxion resource graph: typed vertices in a containment tree."),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
)
