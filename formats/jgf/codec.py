"""JGF reading, normal form and writing; the package's docstring (``dcx.formats.jgf``) is
the format's reference text."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import chain, repeat
from operator import attrgetter
from typing import Any, TypeVar

from dcx.core.diagnostics import Diagnostic, ReadResult, WriteResult, error
from dcx.core.groups import (
    MachineGroup,
    Slots,
    machine_parts,
    part_count,
    part_template,
    run_group,
    slot_parts,
    slots_of,
)
from dcx.core.limits import paused_gc
from dcx.core.located import Place
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
    Validity,
)
from dcx.parsing.fluxion import (
    CONTAINMENT,
    KNOWN_METADATA,
    SCHEMA,
    TIMES,
    Graph,
    ShapeMemo,
    Vertex,
    basename_of,
    check_graph,
    descendants,
    lost_validity,
    trailing_number,
    writable_validity,
)
from dcx.parsing.jsonio import JsonLocator, dumps_canonical, model_locator
from dcx.parsing.schemas import loaded_against

PREFIX = "jgf:"
VERTEX = PREFIX + "vertex"
VERTICES = PREFIX + "vertices"

EMPTY_ROOT_NAME = "cluster0"
"""The root vertex of the empty topology (see Empty topology)."""

MAX_WRITE_VERTICES = 20_000_000
"""One vertex per core: bounds the output (about 5 GB of JSON) before any is built."""

_MB_PER_UNIT: dict[str, float] = {
    "B": 1 / 2**20, "KB": 1 / 1024, "KiB": 1 / 1024, "MB": 1.0, "MiB": 1.0,
    "GB": 1024.0, "GiB": 1024.0, "TB": 1024.0**2, "TiB": 1024.0**2, "PB": 1024.0**3,
    "PiB": 1024.0**3,
}

Entry = dict[str, Any]
"""A stored vertex (see Fidelity)."""


# --------------------------------------------------------------------------- stored vertices


def _entry(vertex: Vertex, path: str | None, rank: int) -> Entry:
    """``vertex`` as a stored vertex; ``rank`` is the one it is assumed to have."""
    entry: Entry = {"type": vertex.type, "name": vertex.name, "id": vertex.id}
    if path is not None:
        entry["path"] = path
    if vertex.basename != vertex.type:
        entry["basename"] = vertex.basename
    if vertex.rank != rank:
        entry["rank"] = vertex.rank
    if vertex.exclusive:
        entry["exclusive"] = True
    if vertex.unit:
        entry["unit"] = vertex.unit
    if vertex.size != 1:
        entry["size"] = vertex.size
    if vertex.properties:
        entry["properties"] = dict(vertex.properties)
    if vertex.status:
        entry["status"] = vertex.status
    if len(vertex.paths) > (CONTAINMENT in vertex.paths):
        entry["paths"] = {subsystem: other for subsystem, other in vertex.paths.items()
                          if subsystem != CONTAINMENT}
    unknown = vertex.unknown_metadata()
    if unknown:
        entry["other"] = unknown
    return entry


def _residual(vertex: Vertex, model_holds_state: bool) -> Entry:
    """The metadata of a root, rack or node vertex the writer would not write from the
    model object it maps to (see Fidelity: ``jgf:vertex``)."""
    residual: Entry = {}
    segment = vertex.paths[CONTAINMENT].rpartition("/")[2]
    if segment != vertex.name:
        residual["segment"] = segment
    if vertex.basename != basename_of(vertex.name, vertex.type):
        residual["basename"] = vertex.basename
    if vertex.exclusive:
        residual["exclusive"] = True
    if vertex.unit:
        residual["unit"] = vertex.unit
    if vertex.size != 1:
        residual["size"] = vertex.size
    if model_holds_state and vertex.id == -1:
        residual["id"] = -1
    if not model_holds_state:
        if vertex.rank != -1:
            residual["rank"] = vertex.rank
        if vertex.status:
            residual["status"] = vertex.status
        if vertex.properties:
            residual["properties"] = dict(vertex.properties)
    if len(vertex.paths) > 1:
        residual["paths"] = {subsystem: other for subsystem, other in vertex.paths.items()
                             if subsystem != CONTAINMENT}
    unknown = vertex.unknown_metadata()
    if unknown:
        residual["other"] = unknown
    return residual


_ENTRY_TYPES: dict[str, type | tuple[type, ...]] = {
    "type": str, "name": str, "id": int, "path": str, "basename": str, "rank": int,
    "exclusive": bool, "unit": str, "size": int, "properties": dict, "status": int,
    "paths": dict, "other": dict, "segment": str}


def _valid_entry(entry: Any, contained: bool) -> bool:
    if not isinstance(entry, dict) or not {"type", "name", "id"} <= entry.keys():
        return False
    if contained != ("path" in entry) or not entry.keys() <= _ENTRY_TYPES.keys():
        return False
    if not all(isinstance(value, _ENTRY_TYPES[key]) for key, value in entry.items()):
        return False
    if not _valid_extras(entry):
        return False
    return not contained or all(entry["path"].split("/"))


def _valid_extras(entry: Entry) -> bool:
    """Other subsystems' paths are absolute and name no containment path; other keys are
    not keys Fluxion reads."""
    other_paths = entry.get("paths", {})
    if CONTAINMENT in other_paths or not all(
            isinstance(path, str) and path.startswith("/") for path in other_paths.values()):
        return False
    return not entry.get("other", {}).keys() & KNOWN_METADATA


def _valid_tree(entries: Any) -> list[Entry] | None:
    """Stored vertices with relative paths whose parents come before them, or ``None``."""
    if not isinstance(entries, list):
        return None
    seen: set[str] = set()
    for entry in entries:
        if not _valid_entry(entry, contained=True):
            return None
        parent = entry["path"].rpartition("/")[0]
        if (parent and parent not in seen) or entry["path"] in seen:
            return None
        seen.add(entry["path"])
    return entries


# --------------------------------------------------------------------------- reading


def read_checked(data: bytes) -> ReadResult:
    """``read`` vertex by vertex: every file the fast path (``text_runs``) does not accept."""
    loaded, problems = loaded_against(SCHEMA, data, "a JGF document", "jgf.not-object")
    if loaded is None:
        return ReadResult(None, tuple(problems))
    with paused_gc():  # a vertex object per vertex, then the model: no cycles among them
        graph, found = check_graph(loaded.value)
        located = tuple(loaded.locator.diagnostic(d) for d in found)
        if graph is None or any(d.is_error for d in found):
            return ReadResult(None, located)
        environment = graph_to_environment(graph)
    return ReadResult(Document(environment=environment), located,
                      locator=model_locator(loaded.locator, _Sources(loaded.locator)))


@dataclass
class _Grouping:
    """A vertex whose machines the model holds together: a rack (or rack-like) vertex, or
    the root for the nodes directly below it; with the nodes and the other vertices
    directly below it, in document order."""

    vertex: Vertex
    parent_path: str
    nodes: list[Vertex] = field(default_factory=list)
    others: list[Vertex] = field(default_factory=list)


def _groupings(graph: Graph, root: Vertex) -> tuple[_Grouping, list[_Grouping]]:
    """The root's grouping, and the model's racks in order: the root's own nodes first
    (an implicit rack) when it has any, then each rack vertex before those inside it."""
    top = _Grouping(root, "")
    racks: list[_Grouping] = []

    def walk(grouping: _Grouping) -> None:
        path = grouping.vertex.paths[CONTAINMENT]
        for vertex in graph.children.get(path, ()):
            if vertex.type == "node":
                grouping.nodes.append(vertex)
            elif vertex.type == "rack" or _contains_nodes(graph, vertex.paths[CONTAINMENT]):
                inner = _Grouping(vertex, path)
                racks.append(inner)  # the parent before the groupings inside it
                walk(inner)
            else:
                grouping.others.append(vertex)

    walk(top)
    return top, [top, *racks] if top.nodes else racks


Layout = tuple[Vertex, list[_Grouping]]
"""A graph's root vertex and the groupings of the model's racks, in order."""

_Node = TypeVar("_Node")


def layout_of(graph: Graph) -> Layout | None:
    if graph.root is None:
        return None
    return graph.root, _groupings(graph, graph.root)[1]


def source_of(place: Place, layout: Callable[[], Layout | None],
              node: Callable[[_Grouping, int], _Node | None]) -> Vertex | _Node | str | None:
    """What the model object at ``place`` was read from: the document (``""``) for the
    environment, the root vertex for a datacenter or its room, a rack's vertex (the root's
    for the implicit rack), and for a machine what ``node`` gives for its grouping and slot
    (the reader knows which node vertex that is); ``None`` for none. ``layout`` is asked
    only for a place inside the environment."""
    if place.part != "environment" or place.kind == "events":
        return None
    if not place.levels:
        return ""
    found = layout()
    if found is None:
        return None
    root, racks = found
    rack, slot = place.index("racks"), place.index("slots")
    if rack is None:
        return root
    if rack >= len(racks):
        return None
    grouping = racks[rack]
    return grouping.vertex if slot is None else node(grouping, slot)


def _listed_node(grouping: _Grouping, slot: int) -> Vertex | None:
    return grouping.nodes[slot] if slot < len(grouping.nodes) else None


@dataclass
class _Sources:
    """The JSON Pointer a model object was read from (``source_of``): a vertex's place in
    the nodes array, or the document. The graph is decoded and walked again on the first
    question, from the text."""

    locator: JsonLocator

    def __call__(self, place: Place) -> str | None:
        found = source_of(place, lambda: self._layout, _listed_node)
        return found if found is None or isinstance(found, str) else (
            f"/graph/nodes/{found.index}")

    @cached_property
    def _layout(self) -> Layout | None:
        graph, _ = check_graph(self.locator.decoded())
        return None if graph is None else layout_of(graph)


Members = tuple[list[str], list[Any] | None, list[int] | None]
"""Names, ids and ranks of nodes that join a node's group right after it (``text_runs``)."""


def graph_to_environment(graph: Graph, members: dict[str, Members] | None = None
                         ) -> Environment:
    """The environment ``graph`` describes. ``members``: node vertex id → the nodes that
    follow it, equal to it but for name, id and rank, and are not in ``graph`` (the fast
    path's runs); each entry is removed once its node is read as the first, or a later
    member, of a group of its subtree's shape (``_Run``), so entries left were not."""
    environment = _topology(graph, members or {})
    return environment if graph.validity is None else replace(
        environment, validity=graph.validity)


def _topology(graph: Graph, members: dict[str, Members]) -> Environment:
    root = graph.root
    outside = [_entry(vertex, None, -1) for vertex in graph.vertices
               if CONTAINMENT not in vertex.paths]
    environment_extras: dict[str, Any] = {VERTICES: outside} if outside else {}
    if root is None:
        return Environment(extras=environment_extras)
    root_path = root.paths[CONTAINMENT]
    residual = _residual(root, model_holds_state=False)
    if (_is_bare_fill_in_root(root.type, root.name, root.id) and not residual
            and not outside and not graph.children.get(root_path)):
        return Environment(datacenters=(Datacenter(rooms=(Room(),)),))
    top, groupings = _groupings(graph, root)
    builder = _RackBuilder(graph, root_path, members)
    racks = [builder.rack(grouping) if grouping is not top else Rack(
        slots=builder.slots(top.nodes), extras={"jgf:implicit": True})
        for grouping in groupings]
    datacenter_extras: dict[str, Any] = {} if root.type == "cluster" else {"jgf:type": root.type}
    if residual:
        datacenter_extras[VERTEX] = residual
    leftovers = _leftovers(graph, top)
    if leftovers:
        datacenter_extras[VERTICES] = leftovers
    datacenter = Datacenter(id=root.id, name=root.name, rooms=(Room(racks=tuple(racks)),),
                            extras=datacenter_extras)
    return Environment(datacenters=(datacenter,), extras=environment_extras)


def _is_bare_fill_in_root(kind: str, name: str | None, vertex_id: int | None) -> bool:
    """The root the writer makes for a topology without machines or racks (its empty
    document, ``cluster0`` with id 0): read back as the empty topology, not a datacenter."""
    return kind == "cluster" and name == EMPTY_ROOT_NAME and vertex_id == 0


def _leftovers(graph: Graph, grouping: _Grouping) -> list[Entry]:
    """The vertices below a grouping that are neither nodes nor groupings, with everything
    below them, as stored vertices (paths relative to the grouping)."""
    base = len(grouping.vertex.paths[CONTAINMENT]) + 1
    leftovers: list[Entry] = []
    for vertex in grouping.others:
        vertex_path = vertex.paths[CONTAINMENT]
        leftovers.append(_entry(vertex, vertex_path[base:], -1))
        leftovers.extend(_entry(below, below.paths[CONTAINMENT][base:], -1)
                         for below in descendants(graph, vertex_path))
    return leftovers


class _RackBuilder:
    """Builds the racks and machines of the groupings below the root."""

    def __init__(self, graph: Graph, root_path: str, members: dict[str, Members]) -> None:
        self.graph = graph
        self.root_path = root_path
        self.members = members
        self.subtrees: ShapeMemo[_Plain] = ShapeMemo(_plain_subtree)

    def rack(self, grouping: _Grouping) -> Rack:
        vertex = grouping.vertex
        machines = self.slots(grouping.nodes)
        extras: dict[str, Any] = {} if vertex.type == "rack" else {"jgf:type": vertex.type}
        if grouping.parent_path != self.root_path:
            extras["jgf:parent"] = grouping.parent_path[len(self.root_path) + 1:]
        residual = _residual(vertex, model_holds_state=False)
        if residual:
            extras[VERTEX] = residual
        leftovers = _leftovers(self.graph, grouping)
        if leftovers:
            extras[VERTICES] = leftovers
        return Rack(id=vertex.id, name=vertex.name, slots=machines, extras=extras)

    def slots(self, nodes: list[Vertex]) -> tuple[Machine | None, ...] | Slots:
        """The machines of ``nodes``; consecutive nodes whose subtrees are the first's (the
        one the writer builds for its machine, or one stored in the same ``jgf:vertices``)
        and whose own metadata differs only in name, id and rank are one group (``_Run``)."""
        parts: list[Machine | MachineGroup] = []
        run: _Run | None = None
        members = self.members
        for node in nodes:
            if run is not None and run.admits(node, self.graph):
                if members and node.key in members and run.join(members[node.key]):
                    del members[node.key]
                continue
            if run is not None:
                parts.append(run.part())
            machine = self.machine(node)
            run = _Run.starting(node, machine, self.subtrees, self.graph)
            if run is None:
                parts.append(machine)
            elif members and node.key in members and run.join(members[node.key]):
                del members[node.key]
        if run is not None:
            parts.append(run.part())
        return slots_of(parts)

    def machine(self, node: Vertex) -> Machine:
        graph = self.graph
        node_path = node.paths[CONTAINMENT]
        below = descendants(graph, node_path)
        machine = _machine_from(node, below)
        extras: dict[str, Any] = {}
        residual = _residual(node, model_holds_state=True)
        if residual:
            extras[VERTEX] = residual
        base = len(node_path) + 1
        canonical = self.subtrees.get(machine.cpus, machine.gpus, machine.memory,
                                      machine.resources)
        rank = node.rank
        if not _is_plain_subtree(below, canonical, base, rank):
            extras[VERTICES] = [_entry(vertex, vertex.paths[CONTAINMENT][base:], rank)
                                for vertex in below]
        return replace(machine, extras=extras) if extras else machine


@dataclass
class _Run:
    """Node vertices read one after another as one machine group: the first read in full
    (``_RackBuilder.machine``, with no ``jgf:vertex`` residual), the others checked against
    it and read only for their name, id and rank."""

    first: Machine
    canonical: _Plain
    """The subtree the writer builds for ``first``: its own subtree when ``stored`` is
    ``None``."""
    stored: _StoredSubtree | None
    """``first``'s own subtree, when kept in ``jgf:vertices``."""
    ids: list[Any] | None
    names: list[str]
    ranks: list[int] | None

    @staticmethod
    def starting(node: Vertex, machine: Machine, subtrees: ShapeMemo[_Plain],
                 graph: Graph) -> _Run | None:
        if machine.name is None or not machine.extras.keys() <= {VERTICES}:
            return None
        stored = None
        if machine.extras:
            stored = _StoredSubtree.of(node, graph)
            if stored is None:
                return None
        canonical = subtrees.get(machine.cpus, machine.gpus, machine.memory, machine.resources)
        return _Run(machine, canonical, stored, None if machine.id is None else [machine.id],
                    [machine.name], None if machine.rank is None else [machine.rank])

    def admits(self, node: Vertex, graph: Graph) -> bool:
        """Whether ``node`` reads as ``first`` but for name, id and rank: its subtree is
        ``first``'s (so ``_machine_from`` builds the same parts, and the same vertices are
        stored), its features and state are the same, and it has no metadata of its own to
        store. Noted if so."""
        first, ranks, ids = self.first, self.ranks, self.ids
        if (node.id >= 0) != (ids is not None) or (node.rank >= 0) != (ranks is not None):
            return False
        if (node.status == 1) != (first.state is MachineState.FAILURE) or not isinstance(
                node.name, str):
            return False
        features = tuple(name if value == "" else f"{name}={value}"
                         for name, value in node.properties.items())
        if features != first.features or _residual(node, model_holds_state=True):
            return False
        node_path = node.paths[CONTAINMENT]
        below = descendants(graph, node_path)
        if self.stored is None:
            if not _is_plain_subtree(below, self.canonical, len(node_path) + 1, node.rank):
                return False
        elif not self.stored.matches(below, len(node_path) + 1, node.rank):
            return False
        self.names.append(node.name)
        if ids is not None:
            ids.append(node.id)
        if ranks is not None:
            ranks.append(node.rank)
        return True

    def join(self, members: Members) -> bool:
        """Add nodes that ``admits`` would admit after the last one (the fast path's
        members), when this group compares subtrees with the plain shape (whose test the
        fast path has made on its arrays); whether it did."""
        names, ids, ranks = members
        if self.stored is not None or (ids is None) != (self.ids is None) or (
                ranks is None) != (self.ranks is None):
            return False
        self.names.extend(names)
        if self.ids is not None and ids is not None:
            self.ids.extend(ids)
        if self.ranks is not None and ranks is not None:
            self.ranks.extend(ranks)
        return True

    def part(self) -> Machine | MachineGroup:
        if len(self.names) == 1:
            return self.first
        return run_group(self.first, len(self.names), self.ids, self.names, self.ranks)


_PROPERTIES = attrgetter("properties")
_RANK = attrgetter("rank")
_METADATA = attrgetter("metadata")


@dataclass
class _StoredSubtree:
    """A node's subtree as ``_entry`` stores it, to compare other nodes' with: equal
    fields, relative paths, properties and ranks give equal stored vertices (each vertex's
    rank is stored when it differs from its node's, so no vertex may have either node's
    rank unless the two nodes' ranks are equal). Only containment paths and metadata
    Fluxion reads."""

    fields: list[Any]
    paths: list[str]
    properties: list[dict[str, str]]
    ranks: list[int]
    node_rank: int

    @staticmethod
    def of(node: Vertex, graph: Graph) -> _StoredSubtree | None:
        node_path = node.paths[CONTAINMENT]
        below = descendants(graph, node_path)
        all_paths = list(map(_PATHS, below))
        if any(len(vertex_paths) != 1 for vertex_paths in all_paths) or not all(
                map(KNOWN_METADATA.issuperset, map(_METADATA, below))):
            return None
        base = len(node_path) + 1
        return _StoredSubtree(list(map(_FIELDS, below)),
                              [vertex_paths[CONTAINMENT][base:] for vertex_paths in all_paths],
                              list(map(_PROPERTIES, below)), list(map(_RANK, below)),
                              node.rank)

    def matches(self, below: list[Vertex], base: int, rank: int) -> bool:
        if len(below) != len(self.fields) or list(map(_FIELDS, below)) != self.fields:
            return False
        ranks = list(map(_RANK, below))
        if ranks != self.ranks or (rank != self.node_rank and (
                rank in ranks or self.node_rank in ranks)):
            return False
        if list(map(_PROPERTIES, below)) != self.properties:
            return False
        all_paths = list(map(_PATHS, below))
        if any(len(vertex_paths) != 1 for vertex_paths in all_paths):
            return False
        if [vertex_paths.get(CONTAINMENT, "")[base:] for vertex_paths in all_paths] != \
                self.paths:
            return False
        return all(map(KNOWN_METADATA.issuperset, map(_METADATA, below)))


_Plain = tuple[tuple[tuple[str, str, int, str, str, int, bool, int], ...], tuple[str, ...]]
"""The vertices the writer builds below a node: (type, name, id, basename, unit, size,
exclusive, status) of each, and their paths relative to the node. The rest of their
metadata takes the defaults (the node's rank, no properties, containment only, no keys
Fluxion does not read)."""

_FIELDS = attrgetter("type", "name", "id", "basename", "unit", "size", "exclusive", "status")
_PATHS = attrgetter("paths")


def _plain_subtree(*parts: Any) -> _Plain:
    entries = _canonical_subtree(*parts)
    return (tuple((entry["type"], entry["name"], entry["id"],
                   str(entry.get("basename", entry["type"])), entry.get("unit", ""),
                   entry.get("size", 1), False, 0) for entry in entries),
            tuple(entry["path"] for entry in entries))


def _is_plain_subtree(below: list[Vertex], canonical: _Plain, base: int, rank: int) -> bool:
    """Whether the vertices below a node are exactly what the writer builds for the
    machine (then nothing needs storing); C-level passes over the vertices."""
    fields, paths = canonical
    if len(below) != len(fields) or list(map(_FIELDS, below)) != list(fields):
        return False
    if any(vertex.rank != rank for vertex in below) or any(
            map(attrgetter("properties"), below)):
        return False
    all_paths = list(map(_PATHS, below))
    if any(len(vertex_paths) != 1 for vertex_paths in all_paths):
        return False
    if [vertex_paths.get(CONTAINMENT, "")[base:] for vertex_paths in all_paths] != list(paths):
        return False
    return all(map(KNOWN_METADATA.issuperset, map(attrgetter("metadata"), below)))


def _contains_nodes(graph: Graph, path: str) -> bool:
    return any(v.type == "node" for v in descendants(graph, path))


def _machine_from(node: Vertex, below: Iterable[Vertex]) -> Machine:
    """The machine a node vertex and the vertices below it (depth-first) describe."""
    cpus: list[ProcessingUnit] = []
    loose_cores = 0
    gpus: list[ProcessingUnit] = []
    memory: list[StorageUnit] = []
    resources: list[NamedResource] = []
    socket_cores: dict[int, int] = {}
    sockets: list[tuple[str, int]] = []
    for vertex in below:
        kind = vertex.type
        if kind == "core":
            path = vertex.paths.get(CONTAINMENT, "")
            if sockets and path.startswith(sockets[-1][0]):
                owner: int | None = sockets[-1][1]
            else:  # cores after a socket's subtree, or below a nested grouping
                owner = next((i for prefix, i in reversed(sockets)
                              if path.startswith(prefix)), None)
            if owner is None:
                loose_cores += 1
            else:
                socket_cores[owner] += 1
        elif kind == "socket":
            sockets.append((vertex.paths.get(CONTAINMENT, "") + "/", len(cpus)))
            socket_cores[len(cpus)] = 0
            cpus.append(ProcessingUnit(cores=0, id=vertex.id))
        elif kind == "gpu":
            gpus.append(ProcessingUnit(cores=1, id=vertex.id))
        elif kind == "memory" and vertex.unit in _MB_PER_UNIT:
            # A memory vertex's id only numbers it: the model's StorageUnit.id is
            # memory.details, which JGF does not hold.
            memory.append(StorageUnit(capacity_mb=vertex.size * _MB_PER_UNIT[vertex.unit]))
        else:
            resources.append(NamedResource(name=vertex.name, amount=float(vertex.size),
                                           type=vertex.type, unit=vertex.unit or None))
    cpus = [replace(cpu, cores=socket_cores[i]) for i, cpu in enumerate(cpus)]
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


def _stored_vertices(entries: Sequence[Entry], node_path: str, rank: int) -> list[Vertex]:
    """Stored vertices below a node as graph vertices (for ``_machine_from``)."""
    vertices = []
    for index, entry in enumerate(entries):
        paths = {CONTAINMENT: f"{node_path}/{entry['path']}", **entry.get("paths", {})}
        vertices.append(Vertex(
            "", entry["type"], str(entry.get("basename", entry["type"])), entry["name"],
            entry["id"], entry.get("rank", rank), entry.get("status", 0),
            entry.get("exclusive", False), entry.get("size", 1), entry.get("unit", ""),
            entry.get("properties", {}), paths, index, {}))
    return vertices


def _stored_subtree(machine: Machine) -> list[Entry] | None:
    """The machine's stored subtree when the writer may use it: well formed, and still
    describing exactly the machine's CPUs, GPUs, memory and resources."""
    entries = _valid_tree(machine.extras.get(VERTICES))
    if entries is None:
        return None
    node = Vertex("", "node", "node", "node", 0, -1, 0, False, 1, "", {}, {}, 0, {})
    described = _machine_from(node, _stored_vertices(entries, "", -1))
    if (described.cpus, described.gpus, described.memory, described.resources) != (
            machine.cpus, machine.gpus, machine.memory, machine.resources):
        return None
    return entries


# --------------------------------------------------------------------------- value restrictions


def normal_form(document: Document) -> Document:
    """What JGF makes of ``document`` before any field path applies (``converters.losses``,
    Value restrictions). Every vertex has a name and a non-negative integer id, so missing
    ones are filled in as the writer names them (``cluster<id>``, ``rack<id>``, ``node<i>``;
    an id from the name's trailing digits, else the position) and ids that are not such
    integers are replaced the same way; HALT and MAINTENANCE machines are down (FAILURE);
    features that give one property two values are kept once; GPU and socket ids follow the
    same rule; named resources that are not whole sizes, whose names are no path
    segment, or that repeat a name of the node's vertices (``_writable_resources``), are left
    out; memory sizes become whole numbers of KB, MB or GB; a machine's
    stored subtree that no longer describes it is dropped (see Fidelity)."""
    environment = document.environment
    if environment is None:
        return document
    rack_index = 0
    ids = machine_ids(environment)
    names = written_rack_names(_all_racks(environment))
    firsts = first_positions(_all_racks(environment))
    datacenters: list[Datacenter] = []
    for datacenter in environment.datacenters:
        name = _usable(datacenter.name) or f"cluster{_int_id(datacenter.id, 0)}"
        rooms: list[Room] = []
        for room in datacenter.rooms:
            racks: list[Rack] = []
            for rack in room.racks:
                racks.append(_normal_rack(rack, rack_index, ids, names[rack_index],
                                          firsts[rack_index]))
                rack_index += 1
            rooms.append(replace(room, racks=tuple(racks)))
        datacenters.append(replace(datacenter, name=name, id=_int_id(
            datacenter.id, trailing_number(name, 0)), rooms=tuple(rooms)))
    if datacenters and _writes_empty_root(environment):
        datacenters[0] = replace(datacenters[0], name=None, id=None)
    return replace(document, environment=replace(environment, datacenters=tuple(datacenters),
                                                  validity=writable_validity(
                                                      environment.validity)))


def _root(environment: Environment) -> tuple[Datacenter, str, str, int]:
    """The datacenter the root vertex stands for, and the root's type, name and id."""
    datacenter = environment.datacenters[0] if environment.datacenters else Datacenter()
    name = _usable(datacenter.name) or f"cluster{_int_id(datacenter.id, 0)}"
    return (datacenter, str(datacenter.extras.get("jgf:type", "cluster")), name,
            _int_id(datacenter.id, trailing_number(name, 0)))


def _writes_empty_root(environment: Environment) -> bool:
    """Whether the graph is the root alone, as ``cluster0`` with id 0: the empty topology's
    document, which reads back as the empty topology (see Empty topology)."""
    if any(not rack.extras.get("jgf:implicit") or any(True for _ in rack.machines)
           for datacenter in environment.datacenters for room in datacenter.rooms
           for rack in room.racks):
        return False
    datacenter, kind, name, vertex_id = _root(environment)
    if VERTICES in environment.extras or VERTEX in datacenter.extras \
            or VERTICES in datacenter.extras:
        return False
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


def written_rack_names(racks: list[Rack]) -> list[str | None]:
    """The name each rack is written with (``None`` for an implicit one): its own, else
    ``rack<id>``; a name a sibling already took gets ``-1``, ``-2``, … (JGF paths must be
    unique, and other formats repeat rack names across rooms and datacenters)."""
    taken: set[tuple[str, str]] = set()
    names: list[str | None] = []
    for index, rack in enumerate(racks):
        if rack.extras.get("jgf:implicit"):
            names.append(None)
            continue
        scope = str(rack.extras.get("jgf:parent"))
        base = _usable(rack.name) or f"rack{_int_id(rack.id, index)}"
        name, suffix = base, 0
        while (scope, name) in taken:
            suffix += 1
            name = f"{base}-{suffix}"
        taken.add((scope, name))
        names.append(name)
    return names


def _all_racks(environment: Environment) -> list[Rack]:
    return [rack for dc in environment.datacenters for room in dc.rooms for rack in room.racks]


def _normal_rack(rack: Rack, index: int, ids: dict[int, int], name: str | None,
                 first: int) -> Rack:
    slots: list[Machine | None] = []
    names = iter(machine_names(rack.machines, first))
    for slot in rack.slots:
        if slot is None:
            slots.append(None)
            continue
        slots.append(_normal_machine(slot, next(names)[0], ids[id(slot)]))
    if name is None:
        return replace(rack, slots=tuple(slots))
    return replace(rack, name=name, id=_int_id(rack.id, trailing_number(name, index)),
                   slots=tuple(slots))


def _normal_machine(machine: Machine, name: str, vertex_id: int) -> Machine:
    properties, _ = features_to_properties(machine.features)
    residual = machine.extras.get(VERTEX)
    written_id: int | None = vertex_id
    if machine.id is None and isinstance(residual, dict) and residual.get("id") == -1:
        written_id = None  # written as -1, read back as no id
    state = machine.state
    if state in (MachineState.HALT, MachineState.MAINTENANCE):
        state = MachineState.FAILURE
    extras = machine.extras
    if VERTICES in extras and _stored_subtree(machine) is None:
        extras = {key: value for key, value in extras.items() if key != VERTICES}
    return replace(
        machine, name=name, id=written_id, state=state, extras=extras,
        features=tuple(key if value == "" else f"{key}={value}"
                       for key, value in properties.items()),
        cpus=tuple(replace(cpu, id=unit_id) for cpu, unit_id in zip(
            machine.cpus, sibling_ids(machine.cpus), strict=True)),
        gpus=tuple(replace(gpu, id=unit_id) for gpu, unit_id in zip(
            machine.gpus, sibling_ids(machine.gpus), strict=True)),
        memory=tuple(replace(module, capacity_mb=_whole_memory_mb(module.capacity_mb))
                     for module in machine.memory),
        resources=tuple(replace(resource, type=resource.type or resource.name)
                        for resource in _writable_resources(machine)))


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    environment = document.environment
    if environment is None:
        return frozenset()
    found = _empty_root_losses(environment)
    if lost_validity(environment.validity):
        found.add("environment.validity")

    def bad_id(value: Any) -> bool:
        return value is not None and _int_id(value, -1) < 0

    def bad_name(name: str | None) -> bool:
        return name is not None and _usable(name) is None

    written_names = iter(written_rack_names(_all_racks(environment)))
    for datacenter in environment.datacenters:
        if bad_id(datacenter.id):
            found.add("datacenter.id")
        if bad_name(datacenter.name):
            found.add("datacenter.name")
        for room in datacenter.rooms:
            for rack in room.racks:
                written_name = next(written_names)
                if rack.extras.get("jgf:implicit"):
                    continue
                if bad_id(rack.id):
                    found.add("rack.id")
                if bad_name(rack.name) or (rack.name is not None
                                           and written_name != rack.name):
                    found.add("rack.name")
    racks = _all_racks(environment)
    renamed = {id(machine): name for rack, first in zip(racks, first_positions(racks),
                                                         strict=True)
               for machine, (name, _) in zip(rack.machines, machine_names(rack.machines, first),
                                             strict=True)}
    for machine in environment.machines():
        for path, bad in (
                ("machine.id", bad_id(machine.id)),
                ("machine.name", machine.name is not None and machine.name != renamed.get(
                    id(machine), machine.name)),
                ("machine.state", machine.state in (MachineState.HALT,
                                                    MachineState.MAINTENANCE)),
                ("machine.features", features_to_properties(machine.features)[1] > 0),
                ("cpu.id", any(bad_id(cpu.id) for cpu in machine.cpus)
                 or _repeats_ids(machine.cpus)),
                ("gpu.id", any(bad_id(gpu.id) for gpu in machine.gpus)
                 or _repeats_ids(machine.gpus)),
                ("machine.memory", any(_whole_memory_mb(m.capacity_mb) != m.capacity_mb
                                       for m in machine.memory)),
                ("machine.resources",
                 len(_writable_resources(machine)) != len(machine.resources))):
            if bad:
                found.add(path)
    return frozenset(found)


def _whole_memory_mb(capacity_mb: float) -> float:
    size, unit = _memory_size(capacity_mb)
    return size * _MB_PER_UNIT[unit]


def _is_whole_size(resource: NamedResource) -> bool:
    """A resource JGF can write: a vertex of whole size whose name is a path segment."""
    amount = resource.amount
    return amount == int(amount) and amount >= 0 and not resource.extras \
        and not resource.instances and _usable(resource.name) is not None


def _writable_resources(machine: Machine) -> list[NamedResource]:
    """The named resources JGF writes below a machine: whole sizes (``_is_whole_size``),
    each name once, and none named as a socket, GPU or memory vertex the writer names
    (``socket0``): two vertices of one path read back as an error (``jgf.duplicate-path``),
    so a later one of a name is left out."""
    taken = {f"{kind}{unit_id}" for kind, units in (
        ("socket", machine.cpus), ("gpu", machine.gpus), ("memory", machine.memory))
        for unit_id in sibling_ids(units)}
    kept = []
    for resource in machine.resources:
        if _is_whole_size(resource) and resource.name not in taken:
            taken.add(resource.name)
            kept.append(resource)
    return kept


# --------------------------------------------------------------------------- writing


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _escaped(text: str) -> str:
    """``text`` as the inside of a JSON string, with ``%`` doubled for a format string."""
    return _json_text(text)[1:-1].replace("%", "%%")


def _vertex_text(entry: Entry, path_tail: str | None) -> str:
    """One vertex as JSON text with ``%d`` slots for its uniq_id (twice) and rank and, when
    ``path_tail`` is given, a ``%s`` slot for its parent's escaped containment path; literal
    ``%`` are doubled."""
    kind = entry["type"]
    get = entry.get
    exclusive, unit, properties = get("exclusive"), get("unit"), get("properties")
    head = (f',"metadata":{{"type":{_json_text(kind)},'
            f'"basename":{_json_text(get("basename", kind))},'
            f'"name":{_json_text(entry["name"])},"id":{entry["id"]},')
    rest = (f'"exclusive":{"true" if exclusive else "false"},'
            f'"unit":{_json_text(unit) if unit else chr(34) * 2},"size":{get("size", 1)},'
            f'"properties":{_json_text(properties) if properties else "{}"},"paths":{{')
    paths = ([f'"{CONTAINMENT}":"%s{_escaped(path_tail)}"'] if path_tail is not None
             else [])
    other_paths, status, other = get("paths"), get("status"), get("other")
    if other_paths:
        paths += [f"{_json_text(subsystem)}:{_json_text(path)}".replace("%", "%%")
                  for subsystem, path in other_paths.items()]
    tail = "}"
    if status:
        tail += f',"status":{status}'
    if other:
        tail += "".join(f",{_json_text(key)}:{_json_text(value)}"
                        for key, value in other.items())
    return ('{"id":"%d"' + head.replace("%", "%%") + '"uniq_id":%d,"rank":%d,'
            + rest.replace("%", "%%") + ",".join(paths) + tail.replace("%", "%%") + "}}")


_EDGE_TEXT = '{"source":"%d","target":"%d","metadata":{"subsystem":"containment"}}'


@dataclass(frozen=True)
class _Template:
    """Vertices below an anchor (a node, rack or the root) as two format strings: vertices
    take (uniq_id, uniq_id, rank, escaped anchor path) per vertex, edges (parent, child);
    ``parents`` are offsets from the anchor (0 = the anchor). ``ranks`` are the vertices'
    own ranks (``None``: the anchor's)."""

    entries: tuple[Entry, ...]
    vertices: str
    edges: str
    parents: tuple[int, ...]
    ranks: tuple[int | None, ...] | None
    """Each vertex's own rank (``None``: the anchor's); ``None`` when all take the
    anchor's."""
    other_paths: tuple[tuple[int, dict[str, str]], ...]
    """(offset, paths) of vertices with paths in other subsystems."""
    bad_names: tuple[str, ...]
    """Names that cannot be path segments (reported when the template is used)."""


def _template(entries: Sequence[Entry], named_paths: bool = False) -> _Template:
    """Stored vertices (parents first) as a template; ``entries`` must be a valid tree.
    ``named_paths``: the paths were made from the names, so a name that cannot be a path
    segment is reported when the template is used."""
    position: dict[str, int] = {}
    texts: list[str] = []
    parents: list[int] = []
    others: list[tuple[int, dict[str, str]]] = []
    for offset, entry in enumerate(entries, start=1):
        path = entry["path"]
        parent, _, _ = path.rpartition("/")
        position[path] = offset
        parents.append(position.get(parent, 0) if parent else 0)
        texts.append(_vertex_text(entry, "/" + path))
        if entry.get("paths"):
            others.append((offset, entry["paths"]))
    ranks = tuple(entry.get("rank") for entry in entries)
    bad = tuple(name for name in dict.fromkeys(entry["name"] for entry in entries)
                if "/" in name or name == "") if named_paths else ()
    return _Template(tuple(entries), ",".join(texts), ",".join([_EDGE_TEXT] * len(texts)),
                     tuple(parents), ranks if any(r is not None for r in ranks) else None,
                     tuple(others), bad)


def _canonical_subtree(cpus: tuple[ProcessingUnit, ...], gpus: tuple[ProcessingUnit, ...],
                       memory: tuple[StorageUnit, ...],
                       resources: tuple[NamedResource, ...]) -> tuple[Entry, ...]:
    """The vertices the writer puts below a node for these parts: sockets with their
    cores, then GPUs, memory and resources."""
    entries: list[Entry] = []

    def add(kind: str, name: str, vertex_id: int, parent: str = "", *, size: int = 1,
            unit: str = "") -> str:
        entry: Entry = {"type": kind, "name": name, "id": vertex_id,
                        "path": f"{parent}/{name}" if parent else name}
        basename = basename_of(name, kind)
        if basename != kind:
            entry["basename"] = basename
        if unit:
            entry["unit"] = unit
        if size != 1:
            entry["size"] = size
        entries.append(entry)
        return str(entry["path"])

    core_number = 0
    for cpu, socket_id in zip(cpus, sibling_ids(cpus), strict=True):
        socket = add("socket", f"socket{socket_id}", socket_id)
        for _ in range(cpu.cores):
            add("core", f"core{core_number}", core_number, socket)
            core_number += 1
    for gpu_id in sibling_ids(gpus):
        add("gpu", f"gpu{gpu_id}", gpu_id)
    for module, memory_id in zip(memory, sibling_ids(memory), strict=True):
        size, unit = _memory_size(module.capacity_mb)
        add("memory", f"memory{memory_id}", memory_id, size=size, unit=unit)
    for resource in resources:
        if _is_whole_size(resource):
            add(resource.type or resource.name, resource.name,
                trailing_number(resource.name, 0), size=int(resource.amount),
                unit=resource.unit or "")
    return tuple(entries)


def _machine_template(cpus: tuple[ProcessingUnit, ...], gpus: tuple[ProcessingUnit, ...],
                      memory: tuple[StorageUnit, ...],
                      resources: tuple[NamedResource, ...]) -> _Template:
    return _template(_canonical_subtree(cpus, gpus, memory, resources), named_paths=True)


@dataclass
class _GraphWriter:
    """Writes vertices and containment edges as JSON text while they are produced, one
    chunk per machine; machines of one shape share a template (``ShapeMemo``)."""

    vertices: list[bytes] = field(default_factory=list)
    edges: list[bytes] = field(default_factory=list)
    count: int = 0
    problems: list[Diagnostic] = field(default_factory=list)
    templates: ShapeMemo[_Template] = field(
        default_factory=lambda: ShapeMemo(_machine_template))
    other_paths: list[tuple[str, str, int]] = field(default_factory=list)
    """(subsystem, path, uniq_id) of every vertex with a path outside containment."""

    def check_name(self, name: str) -> None:
        if _usable(name) is None:
            self.problems.append(error(f"name {name!r} cannot be a JGF path segment",
                                       "jgf.write-name"))

    def vertex(self, entry: Entry, parent: tuple[int, str] | None,
               rank: int = -1) -> tuple[int, str]:
        """Add a vertex under ``parent`` = (uniq_id, path); returns its own. Its path
        segment is its name unless it was read with another (``segment``)."""
        name = entry.get("segment") or entry["name"]
        self.check_name(name)
        uniq_id = self.count
        parent_path = parent[1] if parent else ""
        text = _vertex_text(entry, "/" + name)
        self.vertices.append(
            (text % (uniq_id, uniq_id, rank, _json_text(parent_path)[1:-1])).encode())
        if parent is not None:
            self.edges.append((_EDGE_TEXT % (parent[0], uniq_id)).encode())
        for subsystem, path in entry.get("paths", {}).items():
            self.other_paths.append((subsystem, path, uniq_id))
        self.count += 1
        return uniq_id, f"{parent_path}/{name}"

    def outside(self, entry: Entry) -> None:
        """A vertex with no containment path (see Fidelity)."""
        uniq_id = self.count
        text = _vertex_text(entry, None)
        self.vertices.append((text % (uniq_id, uniq_id, entry.get("rank", -1))).encode())
        for subsystem, path in entry.get("paths", {}).items():
            self.other_paths.append((subsystem, path, uniq_id))
        self.count += 1

    def below(self, anchor: tuple[int, str], rank: int, template: _Template) -> None:
        """The vertices of ``template`` under ``anchor``, numbered right after it: one
        string format per machine, its arguments interleaved at C level."""
        count = len(template.parents)
        if not count:
            return
        for name in template.bad_names:
            self.check_name(name)
        first = self.count
        numbers = range(first, first + count)
        escaped = _json_text(anchor[1])[1:-1]
        ranks: Iterable[int] = repeat(rank) if template.ranks is None else (
            rank if r is None else r for r in template.ranks)
        vertex_args = tuple(chain.from_iterable(
            zip(numbers, numbers, ranks, repeat(escaped))))
        self.vertices.append((template.vertices % vertex_args).encode())
        parents = (anchor[0] if offset == 0 else first + offset - 1
                   for offset in template.parents)
        self.edges.append((template.edges % tuple(chain.from_iterable(
            zip(parents, numbers, strict=True)))).encode())
        for offset, paths in template.other_paths:
            for subsystem, path in paths.items():
                self.other_paths.append((subsystem, path, first + offset - 1))
        self.count += count

    def document(self, validity: Validity | None) -> bytes:
        """The graph; a validity window in its metadata, first (see Validity window)."""
        edges = self.edges + self._other_edges()
        times = {key: time for key, time in zip(
            TIMES, (validity.start_s, validity.end_s) if validity else (), strict=False)
            if time is not None}
        metadata = b'"metadata":%s,' % _json_text(times).encode() if times else b""
        return b"".join((b'{"graph":{', metadata, b'"nodes":[', b",".join(self.vertices),
                         b'],"edges":[', b",".join(edges), b"]}}\n"))

    def _other_edges(self) -> list[bytes]:
        """One edge to every vertex from its parent path, in each subsystem but containment."""
        by_path = {(subsystem, path): uniq_id for subsystem, path, uniq_id in self.other_paths}
        edges = []
        for subsystem, path, uniq_id in self.other_paths:
            parent = by_path.get((subsystem, path[:path.rfind("/")]))
            if parent is not None:
                edges.append(_json_text({"source": str(parent), "target": str(uniq_id),
                                         "metadata": {"subsystem": subsystem}}).encode())
        return edges


def sibling_ids(units: Sequence[ProcessingUnit | StorageUnit]) -> list[int]:
    """The vertex id (and name number) of each unit below a node among the units of its
    kind: its own id when that is a non-negative integer, else its position; an id an
    earlier sibling has is replaced by the smallest no sibling has, since JGF paths must be
    unique (setup.json's CPU ids are CPU types: a dual-socket machine repeats one)."""
    wanted = [_int_id(unit.id, index) for index, unit in enumerate(units)]
    if len(set(wanted)) == len(wanted):
        return wanted
    taken: set[int] = set()
    ids = []
    for unit_id in wanted:
        if unit_id in taken:
            unit_id = next(number for number in range(len(wanted) + len(taken) + 1)
                           if number not in taken and number not in wanted)
        taken.add(unit_id)
        ids.append(unit_id)
    return ids


def _repeats_ids(units: Sequence[ProcessingUnit]) -> bool:
    """Whether ``sibling_ids`` renumbers a unit whose id the model gives (one an earlier
    sibling has)."""
    return any(unit.id is not None and unit_id != _int_id(unit.id, index)
               for index, (unit, unit_id) in enumerate(zip(units, sibling_ids(units),
                                                           strict=True)))


def _int_id(value: Any, fallback: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else fallback


def machine_names(machines: Sequence[Machine], first: int = 1) -> list[tuple[str, bool]]:
    """Each machine's vertex name among its siblings and whether its own name was replaced.
    JGF paths need unique sibling names, but other formats allow repeats (SSS names only
    have to exist): the first use of a name keeps it, a repeat or a name that cannot be a
    path segment is replaced by the fill-in ``node<N>`` (suffixed ``-k`` if that is taken),
    as is a missing name (a fill-in, not a loss). ``N`` is the machine's 1-based position
    among the document's machines (``first`` is the first of ``machines``), the rule every
    format that requires names follows (``dcx.core.ids.required_machine_name``): a nameless
    machine gets the same name in JGF as in R, SSS or Slurm."""
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
            name = candidate = f"node{first + index}"
            suffix = 1
            while name in taken:
                name = f"{candidate}-{suffix}"
                suffix += 1
            taken.add(name)
        result.append((name, was_replaced))
    return result


def first_positions(racks: Sequence[Rack]) -> list[int]:
    """The 1-based document position of each rack's first machine."""
    firsts: list[int] = []
    position = 1
    for rack in racks:
        firsts.append(position)
        position += sum(part_count(part) for part in slot_parts(rack.slots) if part is not None)
    return firsts


def _usable(name: str | None) -> str | None:
    """``name`` when it can be a JGF path segment (not empty, no ``/``); else ``None``, and
    the writer's fill-in name is used instead (a value restriction: ``normal_form``)."""
    return name if name and "/" not in name else None


def machine_ids(environment: Environment) -> dict[int, int]:
    """The vertex id of every machine (keyed by ``id(machine)``), unique in the document.
    Valid explicit ids are kept; a missing or unusable one becomes the name's trailing
    digits when that number is free, else the smallest free number. Fill-ins by position
    alone would repeat in every rack, and readers of other formats require unique ids."""
    racks = _all_racks(environment)
    machines = [(machine, name) for rack, first in zip(racks, first_positions(racks),
                                                        strict=True)
                for machine, (name, _) in zip(rack.machines, machine_names(rack.machines, first),
                                              strict=True)]
    used = {machine.id for machine, _ in machines if _int_id(machine.id, -1) >= 0}
    assigned: dict[int, int] = {}
    next_free = 0
    for machine, name in machines:
        explicit = _int_id(machine.id, -1)
        if explicit >= 0:
            assigned[id(machine)] = explicit
            continue
        candidate = trailing_number(name, -1)
        if candidate < 0 or candidate in used:
            while next_free in used:
                next_free += 1
            candidate = next_free
        used.add(candidate)
        assigned[id(machine)] = candidate
    return assigned


def _own_entry(kind: str, name: str, vertex_id: int, residual: Any,
               properties: dict[str, str] | None = None, status: int = 0) -> Entry:
    """A root, rack or node vertex: what the model says, then its ``jgf:vertex``."""
    entry: Entry = {"type": kind, "name": name, "id": vertex_id}
    basename = basename_of(name, kind)
    if basename != kind:
        entry["basename"] = basename
    if properties:
        entry["properties"] = properties
    if status:
        entry["status"] = status
    if isinstance(residual, dict):
        entry.update((key, value) for key, value in residual.items()
                     if key in _RESIDUAL_KEYS and isinstance(value, _ENTRY_TYPES[key]))
        if not _valid_extras(entry):
            entry.pop("paths", None)
            entry.pop("other", None)
    return entry


_RESIDUAL_KEYS = frozenset({"basename", "exclusive", "unit", "size", "rank", "status",
                            "properties", "paths", "other", "segment"})


def _stored_list(value: Any, contained: bool, owner: str) -> list[Entry]:
    """``jgf:vertices`` of a rack, the datacenter (``contained``) or the environment;
    raises ``_Unwritable`` when it is not a list of stored vertices."""
    entries = _valid_tree(value) if contained else (
        value if isinstance(value, list) and all(
            _valid_entry(entry, contained=False) for entry in value) else None)
    if entries is None:
        raise _Unwritable(f"{VERTICES} of {owner} is not a list of stored vertices "
                          "(see the jgf format's Fidelity section)")
    return entries


class _Unwritable(Exception):
    pass


def write(document: Document) -> WriteResult:
    environment = document.environment or Environment()
    try:
        return _write(environment)
    except _Unwritable as problem:
        return WriteResult(b"", diagnostics=(error(str(problem), "jgf.write-extras"),))


def _write(environment: Environment) -> WriteResult:
    writer = _GraphWriter()
    datacenter, cluster_type, cluster_name, cluster_id = _root(environment)
    root_extras = datacenter.extras
    cluster = writer.vertex(_own_entry(cluster_type, cluster_name, cluster_id,
                                       root_extras.get(VERTEX)), None,
                            _residual_rank(root_extras.get(VERTEX)))
    if VERTICES in root_extras:
        writer.below(cluster, -1, _template(_stored_list(root_extras[VERTICES], True,
                                                         "the datacenter")))
    racks = _all_racks(environment)
    names = written_rack_names(racks)
    firsts = first_positions(racks)
    # counted from the groups, before any of them is expanded into single machines
    vertex_count = sum(
        (m.core_count + len(m.gpus) + len(m.memory) + len(m.resources) + 1) * part_count(part)
        for part in machine_parts(environment) for m in (part_template(part),))
    if vertex_count > MAX_WRITE_VERTICES:
        return WriteResult(b"", diagnostics=(error(
            f"the graph would have {vertex_count:,} vertices; dcx writes at most "
            f"{MAX_WRITE_VERTICES:,}", "jgf.write-too-large"),))
    ids = machine_ids(environment)
    rack_names: set[tuple[str, str]] = set()
    written: dict[str, tuple[int, str]] = {}
    """Rack paths below the root → the written vertex, for groupings inside groupings."""
    for rack_index, rack in enumerate(racks):
        parent = cluster
        name = names[rack_index]
        if name is not None:
            grouping = written.get(str(rack.extras.get("jgf:parent")), cluster)
            _unique((grouping[1], name), rack_names, writer)
            residual = rack.extras.get(VERTEX)
            parent = writer.vertex(
                _own_entry(str(rack.extras.get("jgf:type", "rack")), name,
                           _int_id(rack.id, trailing_number(name, rack_index)), residual),
                grouping, _residual_rank(residual))
            written[parent[1][len(cluster[1]) + 1:]] = parent
            if VERTICES in rack.extras:
                writer.below(parent, -1, _template(_stored_list(
                    rack.extras[VERTICES], True, f"rack {name!r}")))
        for machine, (name, _) in zip(rack.machines,
                                      machine_names(rack.machines, firsts[rack_index]),
                                      strict=True):
            _write_machine(writer, machine, name, ids[id(machine)], parent)
    for entry in _stored_list(environment.extras.get(VERTICES, []), False, "the environment"):
        writer.outside(entry)
    if writer.problems:
        return WriteResult(b"", diagnostics=tuple(writer.problems))
    data = writer.document(writable_validity(environment.validity))
    if writer.count <= _INDENTED_VERTICES:
        data = dumps_canonical(json.loads(data), indent=2)
    return WriteResult(data)


def _residual_rank(residual: Any) -> int:
    rank = residual.get("rank", -1) if isinstance(residual, dict) else -1
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else -1


_INDENTED_VERTICES = 10_000
"""Indented output for readable small graphs; compact text for large ones (a third the
size), written directly without building the value."""


def _unique(name: tuple[str, str], seen: set[tuple[str, str]], writer: _GraphWriter) -> None:
    if name in seen:
        writer.problems.append(error(f"two siblings are both named {name[1]!r}; JGF paths "
                                     "must be unique", "jgf.write-duplicate-name"))
    seen.add(name)


def _write_machine(writer: _GraphWriter, machine: Machine, name: str, vertex_id: int,
                   parent: tuple[int, str]) -> None:
    rank = machine.rank if machine.rank is not None else -1
    properties, _ = features_to_properties(machine.features)
    residual = machine.extras.get(VERTEX)
    if machine.id is None and isinstance(residual, dict) and residual.get("id") == -1:
        vertex_id = -1  # the file said "no id" rather than leaving it to be inferred
    node = writer.vertex(
        _own_entry("node", name, vertex_id, residual, properties,
                   0 if machine.state is MachineState.ACTIVE else 1), parent, rank)
    stored = _stored_subtree(machine) if VERTICES in machine.extras else None
    if stored is not None:
        writer.below(node, rank, _template(stored))
        return
    template = writer.templates.get(machine.cpus, machine.gpus, machine.memory,
                                    machine.resources)
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
