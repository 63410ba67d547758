"""Fluxion JSON Graph Format (RFC 40 as flux-sched reads it): read, check, write.

Reading accepts what Fluxion accepts (``dcx.parsing.fluxion``: the three edge forms, vertex
metadata with only ``type`` and ``paths``, Fluxion's defaults for the rest) and checks the
graph's integrity there.

Mapping (containment subsystem):

* the root vertex is the ``Datacenter`` (name and id; a type other than ``cluster`` in
  ``Datacenter.extras["jgf:type"]``); the model's one ``Room`` is implicit;
* ``rack`` vertices, and any other vertex type that contains nodes (``chassis``), are
  ``Rack``\\ s (a type other than ``rack`` in ``Rack.extras["jgf:type"]``; a grouping inside
  another names its parent's path below the root in ``Rack.extras["jgf:parent"]``); nodes
  with no such ancestor go into a rack marked ``Rack.extras["jgf:implicit"]`` that is not
  written back;
* ``node`` → ``Machine``: name, id, rank (``-1`` = none), ``status`` 1 (down) ↔
  ``MachineState.FAILURE`` (HALT and MAINTENANCE are written as down); properties ↔ features
  (``name`` for an empty value, ``name=value`` otherwise, as Fluxion builds R properties);
* below a node: ``socket`` → one CPU per socket with its ``core`` descendants counted; cores
  outside sockets form one CPU with no id (written back, a CPU's socket is named and
  numbered by its id, else its position; an id an earlier CPU of the node has, as
  setup.json's CPU types, gets the smallest free number: a ``cpu.id`` loss, and GPUs
  alike); ``gpu`` → a GPU (id = vertex id); ``memory`` → a
  memory module (size and unit converted to MB, binary multiples); any other type → a
  ``NamedResource`` (name, size, type, unit);
* consecutive nodes of one grouping that differ only in name, id and rank, whose subtrees
  are the first's (the one the writer builds for its machine, or the same vertices kept in
  ``jgf:vertices``, as when the vertices below Fluxion's nodes have rank -1) and whose own
  metadata has nothing to keep, are one machine group (``dcx.core.groups``): the first
  node's subtree is read into a machine, the others' only compared with it. Nodes with
  paths in other subsystems (a ``power`` tree) are read one by one;
* a file of 1 MB or more in ASCII, ``{"graph": {"nodes": [...], "edges": [...]}}`` (any
  white space), is first read from its text (``text_runs``): a node and the vertices
  below it whose text repeats but for the digits that may vary in a group (vertex ids,
  uniq_ids, the node's name, id and rank, the name in the paths) are decoded and checked
  once, the repeats' digits read as arrays and checked there (ids and paths unique, each
  edge joining a vertex to its parent); a file with anything to report, or any text it
  does not recognise, is read vertex by vertex, with the same result.

Fidelity
--------
What the model has no field for is kept in ``jgf:`` extras, so a graph rewritten as JGF keeps
its vertices, subsystems, flags and placement, and a conversion to another format reports
the extras it drops as losses at their field paths, each line naming what they held
(``extras_contents``: stored vertices by type and count, ``jgf:vertices (1 powerpanel, 504
power)``; a vertex's own metadata by key, other subsystems' paths by subsystem):

* ``jgf:vertex`` (datacenter, rack, machine): the vertex's own metadata the writer would not
  otherwise write (``exclusive``, a ``basename`` other than the name's letters, ``size``,
  ``unit``, paths in other subsystems, keys Fluxion does not read, a path ``segment`` other
  than the name; for the root and racks also ``rank``, ``status`` and ``properties``; for a
  node an ``id`` of -1, which the model reads as no id);
* ``jgf:vertices`` on a machine: its whole subtree, when the subtree is not the one the writer
  builds from the machine's CPUs, GPUs, memory and resources (exclusive cores, GPUs under a
  socket, other names or ids); used only while it still describes the machine exactly;
* ``jgf:vertices`` on a rack or the datacenter: vertices below it that are neither nodes nor
  groupings of nodes (a rack's SSDs, a PDU), with their subtrees;
* ``jgf:vertices`` on the environment: vertices outside containment (the ``power`` tree).

Each stored vertex is ``{"path", "type", "name", "id"}`` plus the metadata that differs
from Fluxion's defaults (``path`` relative to its container, absent outside containment;
``rank`` only when it differs from its node's; other subsystems' paths under ``paths``; keys
Fluxion does not read under ``other``).

Writing emits full vertex metadata (type, basename, name, id, uniq_id, rank, exclusive,
unit, size, properties, paths) and, for each subsystem, one edge from every vertex to its
parent path (full form). Vertex ids are renumbered 0, 1, … in writing order.

Validity window
---------------
A resource set's start and expiration (an R's ``execution.starttime``/``expiration``,
``Environment.validity``) are written in ``graph.metadata`` under the same names, before
``nodes``, and read from there (``0`` or absent is unset; an expiration not after the
starttime is ``jgf.expiration``). JGF's graph metadata is its place for data about the
whole graph; Fluxion keeps the times in the R around its graph and does not read
``graph.metadata``, so it loads such a file as it loads the graph alone, and R → JGF → R
keeps the times.

Empty topology
--------------
A topology without racks or machines is written as the root alone; when that root is the
fill-in ``cluster0`` with id 0 (no datacenter name or id, or exactly those) and carries no
``jgf:`` vertices, it reads back as the empty topology (one datacenter, room and no racks,
all unnamed), so environment → JGF → environment keeps an empty topology empty. An explicit
name ``cluster0`` or id 0 on such a datacenter is therefore lost (``normal_form_losses``:
``datacenter.name``/``datacenter.id``).

Machine names
-------------
A node vertex needs a name (its path segment). A machine without a usable one (none, a
``/`` in it, or a name a sibling already took) is written as ``node<N>``, ``N`` its 1-based
position among the document's machines: the rule of every format that requires names
(``dcx.core.ids.required_machine_name``), so a Flux R without a nodelist gets the same host
names written as R, as JGF and back (``node1`` … ``nodeN``).

Partial graphs
--------------
Fluxion's partial cancel and elastic updates read a fragment of a graph against the full
graph it came from: vertices below a path the fragment does not define (``/tiny0/rack0``),
no root, and often each containment edge in both directions. dcx reads whole graphs: such a
fragment is one error (``jgf.partial-graph``, naming the path its vertices hang below)
rather than a missing root and an error per edge; an edge from a vertex to its parent, in
any graph, is one warning for all of them (``jgf.reverse-edge``) and is not read.

What dcx reads
--------------
* **Full JGF as flux-sched writes and reads it** (``resource_reader_jgf.cpp``,
  ``match_writers.cpp``, 2024–2026): vertex metadata with only ``type`` and ``paths``
  required, the full edge form (``metadata.subsystem``), the compact form (no edge
  metadata: containment) and the legacy form (``metadata.name``, flux-sched before August
  2024, with ``jgf.legacy-edge``); other subsystems (``power``); storage vertices
  (``rabbit``/``ssd`` under a chassis).
* **Shorthand JGF** (``writer: fluxion:jgf_shorthand``, flux-sched since 2025-11).
* **Partial graphs** (flux-sched's partial-cancel and elastic fragments: no root, often
  bidirectional edges): one ``jgf.partial-graph`` error (see Partial graphs).
* **A validity window in ``graph.metadata``** (``starttime``/``expiration``, dcx's place
  for an R's times; see Validity window).

Divergences
-----------
* Fluxion accepts more than one root per subsystem only if paths differ; dcx requires exactly
  one root in ``containment`` and at most one in every other subsystem.
* Fluxion keeps two vertices with one containment path (it tells them apart by rank when
  it looks one up); dcx's tree has one vertex per path, and what is below the path would
  belong to both, so it refuses the second with ``jgf.duplicate-path``.
* Fluxion reads any legacy edge as containment (even a legacy power edge); dcx uses the
  subsystem the legacy key names.
* Fluxion crashes or misbehaves on non-string property values; dcx rejects them (schema).
* The generic JGF v1 schema rejects the top-level ``writer`` key Fluxion writes; ours allows
  it, and ``free_ranks``.
* Edges are rewritten from the paths: a vertex whose path has no edge gets one, and
  duplicate or reverse edges are not repeated. Vertex ids and ``uniq_id``\\ s are renumbered.
"""

from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded

__all__ = ["CODES", "EMPTY_ROOT_NAME", "FORMAT", "HOLDS", "MAX_WRITE_VERTICES", "PREFIX",
           "SCHEMA", "VERTEX", "VERTICES", "Entry", "extras_contents", "features_to_properties",
           "graph_to_environment", "machine_ids", "machine_names", "normal_form",
           "normal_form_losses", "read", "sniff", "write", "written_rack_names"]

# The reader, the normal form, the writer and the parsing layer (Fluxion graphs, JSON,
# schemas) load on first use: the pre-commit hook imports every format's declaration to sniff.
_LAZY = dict.fromkeys({
    "SCHEMA", "PREFIX", "VERTEX", "VERTICES", "EMPTY_ROOT_NAME", "MAX_WRITE_VERTICES", "Entry",
    "graph_to_environment", "written_rack_names", "machine_names", "machine_ids",
    "features_to_properties",
}, "codec")


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


HOLDS = frozenset({
    "datacenter.id", "datacenter.name", "rack", "rack.id", "rack.name",
    "machine.id", "machine.name", "machine.state", "machine.cpus", "machine.cpus.sockets",
    "cpu.id", "machine.gpus", "gpu.id", "machine.memory", "machine.memory.modules",
    "machine.features", "machine.resources", "machine.rank", "environment.validity",
})


def sniff(data: bytes) -> bool:
    """A bare Fluxion graph: ``graph`` at the top level holding ``nodes``/``edges``."""
    if b'"graph"' not in data[:65536]:
        return False
    from dcx.parsing.json_head import top_level_keys

    keys = top_level_keys(data)
    return "graph" in keys["1"] and bool(keys["2"] & {"nodes", "edges"}) \
        and not keys["1"] & {"$schema", "execution"}


def extras_contents(path: str, key: str, value: Any) -> dict[str, int]:
    """What a ``jgf:`` extras value holds, for loss lines: stored vertices by type (a node's
    own subtree, whose cores, GPUs and memory the model holds too, as one layout), a
    vertex's own metadata by key (paths by subsystem), a grouping's vertex type."""
    counts: dict[str, int] = {}
    if key == "jgf:vertices" and isinstance(value, list):
        if path == "machine.extras":
            return {"node subtrees as laid out": 1}
        for entry in value:
            kind = str(entry.get("type")) if isinstance(entry, dict) else "unreadable"
            counts[kind] = counts.get(kind, 0) + 1
    elif key == "jgf:vertex" and isinstance(value, dict):
        for name, item in value.items():
            for label in ([f"{subsystem} paths" for subsystem in item]
                          if name == "paths" and isinstance(item, dict) else [name]):
                counts[label] = counts.get(label, 0) + 1
    elif key == "jgf:type":
        counts[str(value)] = 1
    return counts


read = deferred("dcx.formats.jgf.reader", "read")


write = deferred("dcx.formats.jgf.codec", "write")


normal_form = deferred("dcx.formats.jgf.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.jgf.codec", "normal_form_losses")


CODES: tuple[Code, ...] = (
    Code("jgf.not-object", "error", "The file is not one JSON object."),
    Code("jgf.write-name", "error",
         "A name the writer would use is empty or contains '/', so it cannot be a path "
         "segment."),
    Code("jgf.write-duplicate-name", "error", "Two racks under one parent have one name."),
    Code("jgf.write-too-large", "error", "The graph would have more vertices than dcx writes."),
    Code("jgf.write-extras", "error",
         "A jgf:vertices extra is not a list of stored vertices (edited by hand)."),
)


FIELD_NAMES: dict[str, str] = {
    "environment.validity": "graph metadata starttime / expiration",
    "datacenter.id": "cluster vertex id",
    "datacenter.name": "cluster vertex name",
    "rack": "rack vertices",
    "rack.id": "rack vertex id",
    "rack.name": "rack vertex name",
    "machine.id": "node vertex id",
    "machine.name": "node vertex name",
    "machine.rank": "node vertex rank",
    "machine.state": "node vertex status",
    "machine.features": "node vertex properties",
    "machine.cpus": "core vertices",
    "machine.cpus.sockets": "socket vertices",
    "cpu.id": "core vertex id",
    "machine.gpus": "gpu vertices",
    "gpu.id": "gpu vertex id",
    "machine.memory": "memory vertex size",
    "machine.memory.modules": "memory vertices",
    "machine.resources": "other vertices",
}
"""JGF's vertex metadata for the fields (``FormatDeclaration.field_names``)."""

FORMAT = FormatDeclaration(
    name="jgf",
    title="Fluxion JSON Graph Format (RFC 40)",
    family="flux",
    kind="topology",
    extensions=(".json",),
    content=frozenset({"json"}),
    schema="jgf.schema.json",  # dcx.parsing.fluxion.SCHEMA, not imported to sniff
    description=("Fluxion resource graph: typed vertices in a containment tree."),
    own_extras=frozenset({"environment.extras", "datacenter.extras", "rack.extras",
                          "machine.extras"}),
    extras_contents=extras_contents,
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    codes=CODES,
    field_names=FIELD_NAMES,
)
