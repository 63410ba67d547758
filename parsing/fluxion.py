"""Fluxion resource graphs (RFC 40 as flux-sched's ``resource_reader_jgf.cpp`` reads them):
the vertex and graph structures and the integrity checks both Fluxion formats need, a bare
JGF file (``dcx.formats.jgf``) and the ``scheduling`` key of an R (``dcx.formats.flux_r``).

Vertex metadata needs only ``type`` and ``paths``; every other key takes Fluxion's default
(``basename`` = type, ``name`` = basename + id, ``id`` = the host name's trailing digits for
a node, else ``uniq_id``, else the vertex id's leading digits; rank -1, size 1, unit empty,
not exclusive, status 0 = up). Edges come in three forms: full (``metadata.subsystem``),
compact (no edge metadata: containment) and legacy (``metadata.name = {subsystem:
relation}``; a legacy ``in`` edge is the reverse of a ``contains`` edge and is skipped).

Checks: unique vertex ids, edge endpoints exist, one root per subsystem (exactly one in
containment), every edge joins a vertex to its child in the edge's subsystem, ``uniq_id``
inferable. Property values being strings is the schema's job (``schemas/jgf.schema.json``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from math import isfinite
from typing import Any, Generic, TypeVar

from dcx.core.codes import Code
from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.core.model import Validity

T = TypeVar("T")

SCHEMA = "jgf.schema.json"
CONTAINMENT = "containment"

KNOWN_METADATA = frozenset({
    "type", "basename", "name", "id", "uniq_id", "rank", "status", "exclusive", "unit",
    "size", "properties", "paths"})
"""Vertex metadata keys Fluxion reads; any other key (``uuid``, ``ephemeral``,
``agfilter``) is carried but not interpreted."""

CODES: tuple[Code, ...] = (
    Code("jgf.duplicate-vertex-id", "error", "Two vertices have the same id."),
    Code("jgf.uniq-id", "error",
         "A vertex has no uniq_id and its id does not start with digits to infer one from."),
    Code("jgf.duplicate-root", "error", "More than one root vertex in one subsystem."),
    Code("jgf.duplicate-path", "error",
         "Two vertices have one containment path: the vertices below it would belong to "
         "both (Fluxion tells them apart by rank; dcx's tree cannot)."),
    Code("jgf.no-root", "error", "No root vertex (a path of the form /name) in containment."),
    Code("jgf.partial-graph", "error",
         "A partial graph: no root, every vertex below one path the graph does not define (the "
         "fragment Fluxion's partial cancel and elastic updates read against the full graph "
         "it came from); dcx reads whole graphs."),
    Code("jgf.reverse-edge", "warning",
         "Edges run from a vertex to its parent, the reverse of containment edges (Fluxion's "
         "partial-cancel graphs carry both directions); they are not read."),
    Code("jgf.edge-endpoint", "error", "An edge names a vertex id that does not exist."),
    Code("jgf.edge-path", "error",
         "An edge does not join a vertex to its child in the edge's subsystem."),
    Code("jgf.unreachable", "warning",
         "A vertex's containment path hangs from a path no vertex has: the tree from the "
         "root does not reach it (nor what is below it), so no resources are read from it."),
    Code("jgf.expiration", "error",
         "The graph metadata's expiration is not after its starttime."),
    Code("jgf.legacy-edge", "warning",
         "Edges use the legacy form metadata.name = {subsystem: relation} (flux-sched "
         "before August 2024)."),
)
"""What ``check_graph`` reports; both Fluxion formats declare these codes."""

_TRAILING_DIGITS = re.compile(r"([0-9]+)$")


# --------------------------------------------------------------------------- graph


@dataclass(slots=True)
class Vertex:
    """One vertex with Fluxion's defaults applied; ``metadata`` is the file's own dict."""

    key: str
    type: str
    basename: str
    name: str
    id: int
    rank: int
    status: int
    exclusive: bool
    size: int
    unit: str
    properties: dict[str, str]
    paths: dict[str, str]
    index: int
    metadata: dict[str, Any]

    def unknown_metadata(self) -> dict[str, Any]:
        """Metadata keys Fluxion does not read, as the file gives them."""
        metadata = self.metadata
        if metadata.keys() <= KNOWN_METADATA:
            return {}
        return {key: value for key, value in metadata.items() if key not in KNOWN_METADATA}


@dataclass
class Graph:
    vertices: list[Vertex] = field(default_factory=list)
    by_path: dict[str, Vertex] = field(default_factory=dict)
    """Containment path → vertex."""
    children: dict[str, list[Vertex]] = field(default_factory=dict)
    """Containment path → child vertices, in document order."""
    root: Vertex | None = None
    shorthand: bool = False
    validity: Validity | None = None
    """``graph.metadata``'s ``starttime``/``expiration`` (see ``graph_validity``)."""


def basename_of(name: str, kind: str) -> str:
    """The basename Fluxion's writers give a vertex: its name without the trailing digits,
    or the type when nothing else is left."""
    match = _TRAILING_DIGITS.search(name)
    return name[: match.start()] if match and match.start() > 0 else kind


def trailing_number(name: str, fallback: int) -> int:
    match = _TRAILING_DIGITS.search(name)
    return int(match.group(1)) if match else fallback


def _vertex_from(key: str, meta: dict[str, Any], index: int) -> Vertex:
    kind = meta["type"]
    basename = meta.get("basename", kind)
    given_name: str | None = meta.get("name")
    vertex_id = meta.get("id")
    if vertex_id is None:
        vertex_id = _infer_id(kind, given_name, meta.get("uniq_id"), key)
    name = given_name if given_name is not None else f"{basename}{vertex_id}"
    return Vertex(key, kind, basename, name, vertex_id, meta.get("rank", -1),
                  meta.get("status", 0), meta.get("exclusive", False) is True,
                  meta.get("size", 1), meta.get("unit", ""), meta.get("properties") or {},
                  meta["paths"], index, meta)


def _infer_id(kind: str, name: str | None, uniq_id: int | None, key: str) -> int:
    if kind == "node" and name is not None:
        return trailing_number(name, -1)
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
            first_there = by_path.get(own_path)
            if first_there is not None:
                problems.append(error(
                    f"vertex {key!r} has containment path {own_path!r}, as vertex "
                    f"{first_there.key!r} (index {first_there.index}) does: what is below "
                    "that path would belong to both", "jgf.duplicate-path",
                    pointer=f"{base}/graph/nodes/{index}/metadata/paths/containment"))
                continue
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
        problems.append(_rootless(graph, base))
    elif CONTAINMENT in roots:
        graph.root = roots[CONTAINMENT][0]
        problems.extend(_unreachable(graph, base))
    problems.extend(_check_edges(document["graph"]["edges"], paths_of, base))
    if not base:  # an R's graph: the R's own execution times are the window
        graph.validity = _graph_validity(document["graph"].get("metadata"), problems)
    return graph, problems


TIMES = ("starttime", "expiration")
"""The keys of a resource set's validity window: R's ``execution`` keys (RFC 20), which a
bare graph carries in ``graph.metadata`` (JGF's place for data about the whole graph;
Fluxion's reader reads only ``nodes`` and ``edges``, and keeps the times in the R around
its graph)."""


def validity_of(holder: Any) -> Validity | None:
    """The window an R's ``execution`` or a graph's ``metadata`` gives (schema-checked
    numbers; ``0`` or absent is unset, as in R)."""
    if not isinstance(holder, dict):
        return None
    start, end = (holder.get(key) or None for key in TIMES)
    return None if start is None and end is None else Validity(start, end)


def _graph_validity(metadata: Any, problems: list[Diagnostic]) -> Validity | None:
    validity = validity_of(metadata)
    if validity is not None and validity.start_s is not None and validity.end_s is not None \
            and validity.end_s <= validity.start_s:
        problems.append(error(f"expiration {validity.end_s} is not after starttime "
                              f"{validity.start_s}", "jgf.expiration",
                              pointer="/graph/metadata/expiration"))
    return validity


def writable_validity(validity: Validity | None) -> Validity | None:
    """``validity`` as R and a graph's metadata can hold it: times above 0 (``0`` means
    unset) and the expiration after the starttime; otherwise no window (``None``)."""
    if validity is None:
        return None
    start, end = validity.start_s, validity.end_s
    times = [time for time in (start, end) if time is not None]
    usable = bool(times) and all(isfinite(time) and time > 0 for time in times) and (
        start is None or end is None or end > start)
    return validity if usable else None


def lost_validity(validity: Validity | None) -> bool:
    """Whether ``writable_validity`` leaves out a time ``validity`` sets."""
    return validity is not None and (validity.start_s, validity.end_s) != (None, None) \
        and writable_validity(validity) is None


def _rootless(graph: Graph, base: str) -> Diagnostic:
    """Why a graph has no containment root: a fragment of a larger graph (every top vertex
    hangs below one path the graph does not define), or a graph without its root."""
    above = {path[:path.rfind("/")] for vertex in graph.vertices
             if (path := vertex.paths.get(CONTAINMENT)) is not None
             and path[:path.rfind("/")] not in graph.by_path}
    # below a missing root alone ("/c0"), the graph only lacks its root
    if len(above) == 1 and (parent := next(iter(above))).count("/") >= 2:
        return error(f"no root vertex in the containment subsystem: a partial graph, its "
                     f"{len(graph.vertices):,} vertices hang below {parent!r}, which it does "
                     "not define (the fragment "
                     "Fluxion's partial cancel and elastic updates read against the full "
                     "graph it came from); dcx reads whole graphs: convert the full graph",
                     "jgf.partial-graph", pointer=f"{base}/graph/nodes")
    return error("no root vertex in the containment subsystem (no path of the form /name)",
                 "jgf.no-root", pointer=f"{base}/graph/nodes")


def _unreachable(graph: Graph, base: str) -> list[Diagnostic]:
    """A warning for each vertex whose parent path no vertex has: the top of a subtree the
    walk from the root never enters (its vertices would vanish without a word)."""
    problems: list[Diagnostic] = []
    for vertex in graph.vertices:
        path = vertex.paths.get(CONTAINMENT)
        cut = path.rfind("/") if path is not None else -1
        if path is None or cut <= 0 or path[:cut] in graph.by_path:
            continue
        below = len(descendants(graph, path))
        what = ("it" if not below else "it or the vertex below it" if below == 1
                else f"it or the {below} vertices below it")
        problems.append(warning(
            f"vertex {vertex.key!r} ({path}) is not in the containment tree: no vertex has "
            f"the path {path[:cut]!r}, so the walk from the root never reaches {what}, and "
            "no resources are read from there", "jgf.unreachable",
            pointer=f"{base}/graph/nodes/{vertex.index}/metadata/paths/{CONTAINMENT}"))
    return problems


def _check_edges(edges: list[dict[str, Any]], paths_of: dict[str, dict[str, str]],
                 base: str) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    legacy = reverse = 0
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
        elif subsystem == CONTAINMENT and parent.rfind("/") == len(child) \
                and parent.startswith(child):
            reverse += 1  # child -> parent: the other half of a bidirectional pair
        elif child.rfind("/") != len(parent) or not child.startswith(parent):
            problems.append(error(f"edge {source}->{target} disagrees with the paths: {child!r} "
                                  f"is not directly under {parent!r}", "jgf.edge-path",
                                  pointer=f"{base}/graph/edges/{index}"))
    if reverse:
        problems.append(warning(f"{reverse} containment edge(s) run from a vertex to its "
                                "parent, the reverse of a containment edge (Fluxion's "
                                "partial-cancel graphs carry both directions); not read",
                                "jgf.reverse-edge", pointer=f"{base}/graph/edges"))
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
        counts = Counter(v.type for v in descendants(graph, node_path))
        inventory[vertex.name] = (counts["core"], counts["gpu"])
    return inventory


def descendants(graph: Graph, path: str) -> list[Vertex]:
    """Every vertex below containment ``path``, in depth-first preorder, children in
    document order."""
    found: list[Vertex] = []
    children = graph.children
    stack = list(reversed(children.get(path, ())))
    while stack:
        vertex = stack.pop()
        found.append(vertex)
        below = children.get(vertex.paths[CONTAINMENT])
        if below:
            stack.extend(reversed(below))
    return found


# --------------------------------------------------------------------------- shapes


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
