"""Fluxion JGF: edge forms, integrity checks, the model mapping, writer and round trips."""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from dcx.converters.losses import conversion_losses
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    MachineState,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
    Validity,
)
from dcx.formats import flux_r, jgf
from dcx.parsing import fluxion
from dcx.parsing.schemas import schema_diagnostics
from tests.strategies_flux import jgf_environments, r_environments


def small_graph() -> dict[str, Any]:
    def vertex(key: str, kind: str, path: str, **meta: Any) -> dict[str, Any]:
        return {"id": key, "metadata": {"type": kind, "paths": {"containment": path}, **meta}}

    return {"graph": {
        "nodes": [vertex("0", "cluster", "/c0"), vertex("1", "node", "/c0/n7", name="n7"),
                  vertex("2", "core", "/c0/n7/core0"), vertex("3", "gpu", "/c0/n7/gpu0", id=0)],
        "edges": [{"source": "0", "target": "1", "metadata": {"subsystem": "containment"}},
                  {"source": "1", "target": "2"},
                  {"source": "1", "target": "3"}],
    }}


def read_value(value: Any) -> Any:
    return jgf.read(json.dumps(value).encode())


def error_codes(result: Any) -> list[str]:
    return [d.code for d in result.diagnostics if d.is_error]


def test_compact_and_full_edges_read_without_warnings() -> None:
    result = read_value(small_graph())
    assert result.ok and result.diagnostics == ()
    (machine,) = result.document.environment.machines()
    assert (machine.name, machine.id, machine.core_count, machine.gpu_count) == ("n7", 7, 1, 1)
    assert machine.cpus[0].id is None  # cores directly under the node


def test_legacy_edges_warn_and_reverse_edges_are_skipped() -> None:
    value = small_graph()
    for edge in value["graph"]["edges"]:
        edge["metadata"] = {"name": {"containment": "contains"}}
    value["graph"]["edges"].append({"source": "1", "target": "0",
                                    "metadata": {"name": {"containment": "in"}}})
    result = read_value(value)
    assert result.ok
    assert [d.code for d in result.diagnostics] == ["jgf.legacy-edge"]


@pytest.mark.parametrize(("mutate", "code"), [
    (lambda g: g["nodes"].append(copy.deepcopy(g["nodes"][2])), "jgf.duplicate-vertex-id"),
    (lambda g: g["edges"].append({"source": "1", "target": "9"}), "jgf.edge-endpoint"),
    (lambda g: g["nodes"].append({"id": "9", "metadata": {
        "type": "cluster", "paths": {"containment": "/c1"}}}), "jgf.duplicate-root"),
    (lambda g: g["edges"].append({"source": "0", "target": "2"}), "jgf.edge-path"),
    (lambda g: g["nodes"].append({"id": "9", "metadata": {
        "type": "node", "paths": {"containment": "/c0/n7"}}}), "jgf.duplicate-path"),
    (lambda g: g["nodes"][1]["metadata"].update(properties={"x": 1}), "schema.type"),
    (lambda g: g["nodes"][1]["metadata"].update(status=2), "schema.enum"),
    (lambda g: g["nodes"][1].update(id="abc"), "jgf.uniq-id"),
    (lambda g: g["nodes"][0]["metadata"]["paths"].update(containment="/c0/x"), "jgf.no-root"),
    (lambda g: g["nodes"][1]["metadata"].pop("paths"), "schema.required"),
])
def test_integrity_checks(mutate: Any, code: str) -> None:
    value = small_graph()
    mutate(value["graph"])
    assert code in error_codes(read_value(value))


def test_two_vertices_of_one_containment_path_are_one_located_error() -> None:
    # the second n7 would share the first one's core: two machines of one core each, or
    # one of two; dcx cannot tell whose it is, and says where the second one is
    value = small_graph()
    value["graph"]["nodes"].append({"id": "9", "metadata": {
        "type": "node", "name": "n8", "paths": {"containment": "/c0/n7"}}})
    text = json.dumps(value, indent=1).encode()
    result = jgf.read(text)
    assert not result.ok
    (found,) = result.diagnostics
    assert found.code == "jgf.duplicate-path"
    assert found.pointer == "/graph/nodes/4/metadata/paths/containment"
    lines = text.decode().splitlines()
    assert found.line == max(number for number, line in enumerate(lines, start=1)
                             if '"containment": "/c0/n7"' in line)
    assert "as vertex '1' (index 1) does" in found.message


def test_a_subtree_outside_the_containment_tree_is_reported_once_with_its_size() -> None:
    # n8 and its core hang from /c0/rack9, which no vertex has: the walk from the root
    # never reaches them, so the machine vanishes from the model; the top of that subtree
    # is named once, with what is below it.
    value = small_graph()
    value["graph"]["nodes"] += [
        {"id": "4", "metadata": {"type": "node", "name": "n8",
                                 "paths": {"containment": "/c0/rack9/n8"}}},
        {"id": "5", "metadata": {"type": "core", "paths": {"containment": "/c0/rack9/n8/c0"}}}]
    result = read_value(value)
    assert result.ok
    (warning,) = result.diagnostics
    assert warning.code == "jgf.unreachable"
    assert warning.pointer == "/graph/nodes/4/metadata/paths/containment"
    assert "'/c0/rack9'" in warning.message and "or the vertex below it" in warning.message
    assert [m.name for m in result.document.environment.machines()] == ["n7"]


def test_the_declaration_names_the_schema_the_reader_checks() -> None:
    """The front spells the schema's name so that sniffing needs no parsing layer."""
    assert jgf.FORMAT.schema == jgf.SCHEMA == fluxion.SCHEMA


def test_writer_key_is_allowed_and_shorthand_recognised() -> None:
    value = small_graph()
    value["writer"] = "fluxion:jgf_shorthand"
    assert schema_diagnostics(jgf.SCHEMA, value) == []
    graph, problems = fluxion.check_graph(value)
    assert problems == [] and graph is not None and graph.shorthand


@pytest.mark.corpus
def test_tiny_graph_maps_racks_sockets_gpus_and_memory(corpus_dir: Path) -> None:
    data = (corpus_dir / "flux/flux-sched/t/data/resource/jgfs/tiny.json").read_bytes()
    environment = jgf.read(data).document.environment
    (datacenter,) = environment.datacenters
    assert datacenter.name == "tiny0"
    (rack,) = environment.racks()
    assert rack.name == "rack0"
    node0 = rack.machines[0]
    assert [cpu.cores for cpu in node0.cpus] == [18, 18]
    assert node0.gpu_count == 2
    assert node0.memory_mb == 8 * 2 * 1024  # eight 2 GB modules
    assert node0.rank == 0


@pytest.mark.corpus
def test_down_vertices_and_chassis_groupings(corpus_dir: Path) -> None:
    data = (corpus_dir / "flux/flux-sched/t/data/resource/jgfs/rabbit.json").read_bytes()
    environment = jgf.read(data).document.environment
    kinds = {rack.extras.get("jgf:type", "rack") for rack in environment.racks()
             if not rack.extras.get("jgf:implicit")}
    assert kinds == {"chassis"}
    machine = next(m for m in environment.machines() if m.name == "hetchy1001")
    assert machine.id == 1001  # inferred from the host name


def test_down_machine_is_status_one_and_failure() -> None:
    value = small_graph()
    value["graph"]["nodes"][1]["metadata"]["status"] = 1
    (machine,) = read_value(value).document.environment.machines()
    assert machine.state is MachineState.FAILURE
    written = json.loads(jgf.write(read_value(value).document).data)
    node = next(v for v in written["graph"]["nodes"] if v["metadata"]["type"] == "node")
    assert node["metadata"]["status"] == 1


def test_writer_emits_full_metadata_and_containment_edges() -> None:
    machine = Machine(id=3, name="node3", rank=0, cpus=(ProcessingUnit(cores=2, id=0),),
                      gpus=(ProcessingUnit(cores=1, id=0),),
                      memory=(StorageUnit(capacity_mb=2048),), features=("gpu=a100",))
    environment = Environment(datacenters=(Datacenter(name="cluster0", rooms=(Room(racks=(
        Rack(id=0, name="rack0", slots=(machine,)),)),)),))
    document = Document(environment=environment)
    assert conversion_losses(document, jgf.FORMAT) == ()
    written = jgf.write(document)
    value = json.loads(written.data)
    assert schema_diagnostics(jgf.SCHEMA, value) == []
    paths = [v["metadata"]["paths"]["containment"] for v in value["graph"]["nodes"]]
    assert paths == ["/cluster0", "/cluster0/rack0", "/cluster0/rack0/node3",
                     "/cluster0/rack0/node3/socket0", "/cluster0/rack0/node3/socket0/core0",
                     "/cluster0/rack0/node3/socket0/core1", "/cluster0/rack0/node3/gpu0",
                     "/cluster0/rack0/node3/memory0"]
    for vertex in value["graph"]["nodes"]:
        assert set(vertex["metadata"]) >= {"type", "basename", "name", "id", "uniq_id", "rank",
                                           "size", "unit", "exclusive", "properties", "paths"}
    node = value["graph"]["nodes"][2]["metadata"]
    assert node["properties"] == {"gpu": "a100"} and node["rank"] == 0
    assert value["graph"]["nodes"][-1]["metadata"]["size"] == 2
    assert value["graph"]["nodes"][-1]["metadata"]["unit"] == "GB"
    assert all(e["metadata"] == {"subsystem": "containment"} for e in value["graph"]["edges"])


def test_writer_lists_losses_and_renames_repeated_sibling_names() -> None:
    # SSS allows two nodes with one name; JGF paths cannot repeat, so the second is renamed
    # to its fill-in (node<N>, N its 1-based position, as in every format that needs names)
    # and the name is reported lost (normal_form says the same).
    machines = (Machine(name="a", state=MachineState.MAINTENANCE, os="linux",
                        storage=(StorageUnit(capacity_mb=1),)), Machine(name="a"),
                Machine(name="x/y"))
    environment = Environment(datacenters=(Datacenter(name="c", rooms=(Room(racks=(
        Rack(capacity_units=42, slots=machines),)),)),))
    document = Document(environment=environment)
    written = jgf.write(document)
    assert written.ok
    assert {loss.field for loss in conversion_losses(document, jgf.FORMAT)} >= {
        "machine.name", "machine.state", "machine.os", "machine.storage", "rack.capacity_units"}
    back = jgf.read(written.data).document
    assert back is not None and back.environment is not None
    assert [m.name for m in back.environment.machines()] == ["a", "node2", "node3"]
    assert back == jgf.normal_form(back)


@pytest.mark.parametrize(("data", "expected"), [
    (b'{"graph": {"nodes": [], "edges": []}}', True),
    (b'{"writer": "fluxion:jgf_shorthand", "graph": {"edges": [], "nodes": [}', True),
    (b'{"$schema": "x", "properties": {"graph": {"nodes": {}}}}', False),
    (b'{"version": 1, "execution": {}, "scheduling": {"graph": {"nodes": []}}}', False),
    (b'{"graphs": [{"nodes": []}]}', False),
])
def test_sniff(data: bytes, expected: bool) -> None:
    assert jgf.sniff(data) is expected


@settings(max_examples=60, deadline=None)
@given(jgf_environments())
def test_model_to_jgf_to_model_is_identity(environment: Environment) -> None:
    document = Document(environment=environment)
    written = jgf.write(document)
    assert written.ok and conversion_losses(document, jgf.FORMAT) == ()
    assert schema_diagnostics(jgf.SCHEMA, json.loads(written.data)) == []
    result = jgf.read(written.data)
    assert result.ok, result.diagnostics
    assert result.document.environment == environment
    assert jgf.write(result.document).data == written.data


@settings(max_examples=30, deadline=None)
@given(r_environments())
def test_r_to_jgf_to_r_keeps_hosts_ranks_cores_gpus_and_features(
        environment: Environment) -> None:
    """R → model → JGF → model → R: what both formats hold survives the trip."""
    plain = _without_sparse_ids(environment)
    r_model = flux_r.read(flux_r.write(Document(environment=plain)).data).document
    graph = jgf.write(r_model)
    assert graph.ok, graph.diagnostics
    back = jgf.read(graph.data).document
    kept = [_features_jgf_holds(m.features) for m in r_model.environment.machines()]
    before = [(m.name, m.rank, m.core_count, m.gpu_count, features)
              for m, features in zip(r_model.environment.machines(), kept, strict=True)]
    after = [(m.name, m.rank, m.core_count, m.gpu_count, m.features)
             for m in back.environment.machines()]
    assert after == before
    dropped = sum(len(m.features) for m in r_model.environment.machines()) - sum(map(len, kept))
    reported = {loss.field for loss in conversion_losses(r_model, jgf.FORMAT)}
    assert ("machine.features" in reported) == (dropped > 0)


def _features_jgf_holds(features: tuple[str, ...]) -> tuple[str, ...]:
    """JGF properties are name → value: ``a`` and ``a=1`` fit, ``=``, ``a=`` and a second
    feature with the same name do not."""
    kept: list[str] = []
    names: set[str] = set()
    for feature in features:
        name, separator, value = feature.partition("=")
        if name and (value or not separator) and name not in names:
            kept.append(feature)
            names.add(name)
    return tuple(kept)


def _without_sparse_ids(environment: Environment) -> Environment:
    """Unique host names (JGF paths need them) and GPU ids 0..n-1 (JGF numbers its own)."""
    machines = tuple(
        Machine(name=f"host{i}", rank=m.rank, cpus=m.cpus, features=m.features,
                gpus=tuple(ProcessingUnit(cores=1, id=j) for j in range(len(m.gpus))))
        for i, m in enumerate(environment.machines()))
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))


# ------------------------------------------------------------------ fidelity


def _fluxion_view(value: dict[str, Any]) -> tuple[dict[str, str], set[tuple[str, str, str]]]:
    """A graph as Fluxion reads it, independent of vertex numbering: every vertex's
    metadata with Fluxion's defaults applied, keyed by its paths, and every edge as
    (parent paths, child paths, subsystem)."""
    from dcx.parsing.fluxion import check_graph

    graph, problems = check_graph(value)
    assert graph is not None and not [d for d in problems if d.is_error]
    keys: dict[str, str] = {}
    vertices: dict[str, str] = {}
    for vertex in graph.vertices:
        key = json.dumps(vertex.paths, sort_keys=True)
        keys[vertex.key] = key
        vertices[key] = json.dumps({
            "type": vertex.type, "basename": vertex.basename, "name": vertex.name,
            "id": vertex.id, "rank": vertex.rank, "status": vertex.status,
            "exclusive": vertex.exclusive, "size": vertex.size, "unit": vertex.unit,
            "properties": vertex.properties, "other": vertex.unknown_metadata()},
            sort_keys=True)
    edges = set()
    for edge in value["graph"]["edges"]:
        meta = edge.get("metadata") or {}
        subsystem = meta.get("subsystem", "containment")
        edges.add((keys[edge["source"]], keys[edge["target"]], subsystem))
    return vertices, edges


FIDELITY_GRAPHS = ["power.json", "issue1260.json", "4node.rank0123.nid0123.orig.json",
                   "4node.rank1230.nid0123.mod.json", "tiny.json", "rabbit.json",
                   "tiny_storage.json", "dyn_explore.json", "hwloc_4core.json",
                   "elastic/node-widget-test.json"]


@pytest.mark.corpus
@pytest.mark.parametrize("name", FIDELITY_GRAPHS)
def test_real_fluxion_graphs_rewrite_faithfully(corpus_dir: Path, name: str) -> None:
    """Vertex count, types, names, ids, ranks, exclusive flags, sizes, properties,
    subsystems and placement survive JGF → model → JGF (vertex ids are renumbered)."""
    data = (corpus_dir / "flux/flux-sched/t/data/resource/jgfs" / name).read_bytes()
    result = jgf.read(data)
    assert result.ok, result.diagnostics
    written = jgf.write(result.document)
    assert written.ok, written.diagnostics
    original, rewritten = json.loads(data), json.loads(written.data)
    assert len(rewritten["graph"]["nodes"]) == len(original["graph"]["nodes"])
    assert _fluxion_view(rewritten) == _fluxion_view(original)
    again = jgf.read(written.data)
    assert again.ok and again.document == result.document
    assert conversion_losses(result.document, jgf.FORMAT) == ()


@pytest.mark.corpus
def test_power_graph_keeps_its_power_subsystem(corpus_dir: Path) -> None:
    data = (corpus_dir / "flux/flux-sched/t/data/resource/jgfs/power.json").read_bytes()
    written = json.loads(jgf.write(jgf.read(data).document).data)
    kinds = Counter(v["metadata"]["type"] for v in written["graph"]["nodes"])
    assert (kinds["pdu"], kinds["powerpanel"], kinds["power"]) == (4, 1, 504)
    subsystems = Counter((e.get("metadata") or {}).get("subsystem", "containment")
                         for e in written["graph"]["edges"])
    assert subsystems == {"containment": 3536, "power": 580}


@pytest.mark.corpus
def test_exclusive_flags_and_gpu_placement_survive(corpus_dir: Path) -> None:
    data = (corpus_dir / "flux/flux-sched/t/data/resource/jgfs/"
            "4node.rank0123.nid0123.orig.json").read_bytes()
    written = json.loads(jgf.write(jgf.read(data).document).data)
    original = json.loads(data)

    def exclusive_paths(value: dict[str, Any]) -> set[str]:
        return {v["metadata"]["paths"]["containment"] for v in value["graph"]["nodes"]
                if v["metadata"].get("exclusive")}

    assert len(exclusive_paths(original)) == 160
    assert exclusive_paths(written) == exclusive_paths(original)
    gpu_parents = {v["metadata"]["paths"]["containment"].rsplit("/", 2)[1]
                   for v in written["graph"]["nodes"] if v["metadata"]["type"] == "gpu"}
    assert all(parent.startswith("socket") for parent in gpu_parents)


def _rack_with_ssd() -> dict[str, Any]:
    """cluster → rack {exclusive, properties} → ssd, and rack → node → core."""
    def vertex(key: str, kind: str, path: str, **meta: Any) -> dict[str, Any]:
        return {"id": key, "metadata": {"type": kind, "paths": {"containment": path}, **meta}}

    return {"graph": {
        "nodes": [vertex("0", "cluster", "/c0", name="c0"),
                  vertex("1", "rack", "/c0/rack0", name="rack0", id=0, exclusive=True,
                         properties={"rabbit": "kind-worker2"}),
                  vertex("2", "ssd", "/c0/rack0/ssd0", name="ssd0", id=0, size=1024,
                         unit="GiB"),
                  vertex("3", "node", "/c0/rack0/n1", name="n1", rank=0),
                  vertex("4", "core", "/c0/rack0/n1/core0", name="core0", id=0, rank=0)],
        "edges": [{"source": "0", "target": "1"}, {"source": "1", "target": "2"},
                  {"source": "1", "target": "3"}, {"source": "3", "target": "4"}],
    }}


def test_a_rack_level_ssd_and_rack_flags_survive_jgf_and_are_reported_elsewhere() -> None:
    from dcx.converters.convert import convert

    value = _rack_with_ssd()
    data = json.dumps(value).encode()
    result = jgf.read(data)
    assert result.ok and result.diagnostics == ()
    (rack,) = result.document.environment.racks()
    assert rack.extras["jgf:vertex"] == {"exclusive": True,
                                         "properties": {"rabbit": "kind-worker2"}}
    assert [entry["type"] for entry in rack.extras["jgf:vertices"]] == ["ssd"]
    written = json.loads(jgf.write(result.document).data)
    assert _fluxion_view(written) == _fluxion_view(value)
    unnamed = _rack_with_ssd()
    for vertex in unnamed["graph"]["nodes"]:
        vertex["metadata"].pop("name")  # Fluxion's names (type + id) differ from the paths
    rewritten = json.loads(jgf.write(jgf.read(json.dumps(unnamed).encode()).document).data)
    assert _fluxion_view(rewritten) == _fluxion_view(unnamed)
    for target in ("environment", "flux-r", "sss"):
        from dcx.converters.registry import get

        lost = {loss.field for loss in conversion_losses(result.document, get(target))}
        assert "rack.extras" in lost, target
    converted = convert(data, "flux-r")
    assert converted.ok
    assert any(d.code == "convert.loss" and "rack.extras" in d.message
               for d in converted.diagnostics)


def test_racks_named_alike_in_two_rooms_are_renamed_and_the_loss_reported() -> None:
    """JGF paths must be unique; other formats repeat rack names across rooms."""
    machine = Machine(name="n0", cpus=(ProcessingUnit(cores=2),))
    rooms = tuple(Room(id=f"room{k}", racks=(Rack(name="rack4", slots=(
        Machine(name=f"n{k}", cpus=machine.cpus),)),)) for k in range(2))
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=rooms),)))
    assert "rack.name" in jgf.normal_form_losses(document)
    written = jgf.write(document)
    assert written.data, [d.render() for d in written.diagnostics]
    read = jgf.read(written.data)
    assert read.ok and read.document is not None and read.document.environment is not None
    assert [rack.name for rack in read.document.environment.racks()] == ["rack4", "rack4-1"]
    assert read.document == jgf.normal_form(read.document)


def test_losses_are_located_at_the_vertex_each_model_object_came_from(
        first_losses: Any) -> None:
    """The node directly below the root is the implicit rack 0 (located at the root); the
    rack vertex is rack 1, its second node that rack's slot 1."""
    text = ('{"graph": {"nodes": [\n'
            '{"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/c0"}}},\n'
            '{"id": "1", "metadata": {"type": "node", "name": "n0", "paths": {"containment": '
            '"/c0/n0"}}},\n'
            '{"id": "2", "metadata": {"type": "rack", "paths": {"containment": "/c0/rack0"}}},\n'
            '{"id": "3", "metadata": {"type": "node", "name": "n1", "paths": {"containment": '
            '"/c0/rack0/n1"}}},\n'
            '{"id": "4", "metadata": {"type": "node", "name": "n2", "properties": {"fast": ""},\n'
            '  "paths": {"containment": "/c0/rack0/n2"}}}],\n'
            ' "edges": [{"source": "0", "target": "1"}, {"source": "0", "target": "2"},\n'
            '  {"source": "2", "target": "3"}, {"source": "2", "target": "4"}]}}\n')
    firsts = first_losses(text, "haizea")
    rack = "/environment/datacenters/0/rooms/0/racks"
    assert firsts["datacenter.id"] == "in.json:2:1, /environment/datacenters/0"
    assert firsts["rack"] == f"in.json:2:1, {rack}/0"
    assert firsts["rack.name"] == f"in.json:4:1, {rack}/1"
    assert firsts["machine.id"] == f"in.json:3:1, {rack}/0/slots/0"
    assert firsts["machine.features"] == f"in.json:6:1, {rack}/1/slots/1"


def _fragment(reverse: bool) -> bytes:
    """A Fluxion partial graph (the shape of flux-sched's partial-cancel inputs): a node and
    its cores, below a rack and cluster the graph does not define, edges both ways."""
    nodes = [{"id": "2", "metadata": {"type": "node", "paths": {"containment": "/t0/r0/n0"}}}]
    edges = []
    for core in range(2):
        key = str(10 + core)
        nodes.append({"id": key, "metadata": {"type": "core", "paths": {
            "containment": f"/t0/r0/n0/core{core}"}}})
        edges.append({"source": "2", "target": key, "metadata": {"subsystem": "containment"}})
        if reverse:
            edges.append({"source": key, "target": "2",
                          "metadata": {"subsystem": "containment"}})
    return json.dumps({"graph": {"nodes": nodes, "edges": edges}}).encode()


def test_a_partial_graph_is_named_as_one_and_reverse_edges_are_one_warning() -> None:
    result = jgf.read(_fragment(reverse=True))
    assert [(d.code, d.severity.value) for d in result.diagnostics] == [
        ("jgf.partial-graph", "error"), ("jgf.reverse-edge", "warning")]
    assert "a partial graph, its 3 vertices hang below '/t0/r0'" in \
        result.diagnostics[0].message
    assert "2 containment edge(s)" in result.diagnostics[1].message
    assert [d.code for d in jgf.read(_fragment(reverse=False)).diagnostics] == [
        "jgf.partial-graph"]


def test_an_r_without_nodelist_names_its_machines_alike_in_r_and_jgf() -> None:
    from dcx.formats import flux_r

    data = b'{"version": 1, "execution": {"R_lite": [{"rank": "0-3", "children": ' \
        b'{"core": "0-7"}}]}}'
    document = flux_r.read(data).document
    assert document is not None
    via_r = flux_r.read(flux_r.write(document).data).document
    via_jgf = jgf.read(jgf.write(document).data).document
    assert via_r is not None and via_r.environment is not None
    assert via_jgf is not None and via_jgf.environment is not None
    expected = ["node1", "node2", "node3", "node4"]
    assert [m.name for m in via_r.environment.machines()] == expected
    assert [m.name for m in via_jgf.environment.machines()] == expected
    back = flux_r.read(flux_r.write(via_jgf).data).document
    assert back is not None and back.environment is not None
    assert [m.name for m in back.environment.machines()] == expected


_TIMED_R = (b'{"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": '
            b'{"core": "0-7"}}], "nodelist": ["n[0-1]"], "starttime": 1676560542, '
            b'"expiration": 1676562342.25}}')


def test_r_to_jgf_to_r_keeps_starttime_and_expiration() -> None:
    """R's validity window rides in the graph's metadata, so R -> JGF -> R writes it back as
    it was read (an integer stays an integer) and the trip reports no loss of it."""
    r_model = flux_r.read(_TIMED_R).document
    assert r_model is not None and r_model.environment is not None
    assert r_model.environment.validity == Validity(1676560542, 1676562342.25)
    assert "environment.validity" not in {
        loss.field for loss in conversion_losses(r_model, jgf.FORMAT)}
    graph = jgf.write(r_model)
    assert json.loads(graph.data)["graph"]["metadata"] == {
        "starttime": 1676560542, "expiration": 1676562342.25}
    back = flux_r.write(jgf.read(graph.data).document).data
    execution = json.loads(back)["execution"]
    assert (execution["starttime"], execution["expiration"]) == (1676560542, 1676562342.25)
    assert isinstance(execution["starttime"], int)


def test_a_format_without_a_validity_window_reports_it_lost() -> None:
    from dcx.formats import sss

    r_model = flux_r.read(_TIMED_R).document
    lost = {loss.field: loss.count for loss in conversion_losses(r_model, sss.FORMAT)}
    assert lost.get("environment.validity") == 1
    assert "environment.extras" not in lost  # no longer flux-r: extras


@pytest.mark.parametrize("times,code", [
    ({"starttime": 200, "expiration": 100}, "jgf.expiration"),
    ({"starttime": 100, "expiration": 100}, "jgf.expiration"),
    ({"starttime": -1}, "schema.minimum"),
    ({"expiration": "soon"}, "schema.type"),
])
def test_graph_times_are_checked_as_r_checks_them(times: dict[str, Any], code: str) -> None:
    value = json.loads(jgf.write(flux_r.read(_TIMED_R).document).data)
    value["graph"]["metadata"] = times
    result = jgf.read(json.dumps(value).encode())
    assert result.document is None
    assert [d.code for d in result.diagnostics if d.is_error] == [code]


def test_an_rs_graph_metadata_is_not_its_window() -> None:
    """Inside an R, the R's execution times are the window: its scheduling graph's metadata
    (which Fluxion never writes) is opaque, as the rest of ``scheduling`` is."""
    r_model = flux_r.read(_TIMED_R).document
    value = json.loads(_TIMED_R)
    value["scheduling"] = json.loads(jgf.write(r_model).data)
    value["scheduling"]["graph"]["metadata"] = {"starttime": 9, "expiration": 1}
    result = flux_r.read(json.dumps(value).encode())
    assert result.ok and result.diagnostics == ()
    assert result.document is not None and result.document.environment is not None
    assert result.document.environment.validity == Validity(1676560542, 1676562342.25)


def test_unset_and_zero_times_are_no_window() -> None:
    value = json.loads(jgf.write(flux_r.read(_TIMED_R).document).data)
    for metadata in ({}, {"starttime": 0, "expiration": 0}, None):
        value["graph"]["metadata"] = metadata
        result = jgf.read(json.dumps(value).encode())
        assert result.document is not None and result.document.environment is not None
        assert result.document.environment.validity is None
    value["graph"]["metadata"] = {"expiration": 5000}
    read = jgf.read(json.dumps(value).encode()).document
    assert read is not None and read.environment is not None
    assert read.environment.validity == Validity(None, 5000)
    assert b'"starttime"' not in flux_r.write(read).data


def test_a_window_r_cannot_write_is_a_loss_not_an_invalid_file() -> None:
    environment = flux_r.read(_TIMED_R).document.environment
    for window in (Validity(-5.0, 10.0), Validity(10.0, 10.0), Validity(0.0, None)):
        document = Document(environment=replace(environment, validity=window))
        for spec, module in ((flux_r.FORMAT, flux_r), (jgf.FORMAT, jgf)):
            assert "environment.validity" in {
                loss.field for loss in conversion_losses(document, spec)}
            normal = module.normal_form(document)
            assert normal.environment.validity is None


def _vertex(uniq: int, kind: str, path: str, **paths: str) -> dict[str, Any]:
    name = path.rsplit("/", 1)[1]
    return {"id": str(uniq), "metadata": {"type": kind, "name": name, "id": uniq,
                                          "paths": {"containment": path, **paths}}}


def test_vertices_r_cannot_hold_are_named_by_type_and_count_in_the_loss_lines() -> None:
    """A rack's SSDs and storage node and a power tree (the shapes of flux-sched's
    tiny_storage.json and power.json) are named with their counts, not as bare extras."""
    vertices = [_vertex(0, "cluster", "/c0"), _vertex(1, "rack", "/c0/rack0"),
                _vertex(2, "node", "/c0/rack0/node0", power="/panel0/node0"),
                _vertex(3, "core", "/c0/rack0/node0/core0"),
                _vertex(4, "storage_node", "/c0/rack0/rabbit0"),
                *[_vertex(5 + n, "ssd", f"/c0/rack0/rabbit0/ssd{n}") for n in range(3)],
                {"id": "8", "metadata": {"type": "powerpanel", "paths": {"power": "/panel0"}}}]
    edges = [{"source": "0", "target": "1"}, {"source": "1", "target": "2"},
             {"source": "2", "target": "3"}, {"source": "1", "target": "4"},
             *[{"source": "4", "target": str(5 + n)} for n in range(3)],
             {"source": "8", "target": "2", "metadata": {"subsystem": "power"}}]
    read = jgf.read(json.dumps({"graph": {"nodes": vertices, "edges": edges}}).encode())
    assert read.document is not None, read.diagnostics
    details = {loss.field: loss.detail for loss in conversion_losses(read.document,
                                                                     flux_r.FORMAT)}
    assert details["rack.extras"].endswith(
        "jgf:vertices (1 storage_node, 3 ssd)"), details["rack.extras"]
    assert details["environment.extras"].endswith("jgf:vertices (1 powerpanel)")
    assert "jgf:vertex (1 power paths)" in details["machine.extras"]


def test_two_sockets_with_one_id_are_two_sockets_with_their_cores() -> None:
    # setup.json's CPU ids are CPU types: a dual-socket machine gives both sockets one id,
    # which JGF would write as one path twice (and read as two sockets of all eight cores)
    cpus = (ProcessingUnit(cores=4, id=1), ProcessingUnit(cores=4, id=1),
            ProcessingUnit(cores=2))
    machine = Machine(id=1, name="node1", cpus=cpus)
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=(machine,)),)),)),)))
    written = jgf.write(document)
    graph = json.loads(written.data)["graph"]
    paths = [vertex["metadata"]["paths"]["containment"] for vertex in graph["nodes"]]
    assert len(paths) == len(set(paths))
    back = jgf.read(written.data).document
    assert back is not None and back.environment is not None
    (read_back,) = back.environment.machines()
    assert [(cpu.cores, cpu.id) for cpu in read_back.cpus] == [(4, 1), (4, 0), (2, 2)]
    assert "cpu.id" in jgf.normal_form_losses(document)
    assert "cpu.id" in {loss.field for loss in conversion_losses(document, jgf.FORMAT)}
