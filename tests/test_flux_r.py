"""Flux R v1: reading, the rules beyond the schema, the canonical writer, round trips."""

from __future__ import annotations

import json
import re
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
)
from dcx.formats import flux_r
from dcx.parsing.schemas import schema_diagnostics
from tests.strategies_flux import r_environments

SEED = Path(__file__).resolve().parent.parent.parent / "shared" / "seeds"


def r_document(**execution: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "R_lite": [{"rank": "0-3", "children": {"core": "0-47", "gpu": "0-7"}}],
        "nodelist": ["node[186-189]"],
    }
    base.update(execution)
    return {"version": 1, "execution": base}


def read_value(value: Any) -> Any:
    return flux_r.read(json.dumps(value, indent=1).encode())


def error_codes(result: Any) -> list[str]:
    return [d.code for d in result.diagnostics if d.is_error]


def test_rfc_example_maps_ranks_hosts_cores_and_gpus() -> None:
    value = r_document(R_lite=[{"rank": "19-22", "children": {"core": "0-47", "gpu": "0-7"}}],
                       nslots=32, starttime=1676560542, expiration=1676562342)
    result = read_value(value)
    assert result.ok, result.diagnostics
    machines = list(result.document.environment.machines())
    assert [m.name for m in machines] == ["node186", "node187", "node188", "node189"]
    assert [m.rank for m in machines] == [19, 20, 21, 22]
    assert {m.core_count for m in machines} == {48}
    assert {m.gpu_count for m in machines} == {8}
    assert result.document.environment.extras["flux-r:nslots"] == 32


@pytest.mark.corpus
def test_rfc_example_reencodes_to_its_canonical_form(corpus_dir: Path) -> None:
    data = (corpus_dir / "flux" / "rfc" / "data" / "spec_20" / "example1.json").read_bytes()
    result = flux_r.read(data)
    assert conversion_losses(result.document, flux_r.FORMAT) == ()
    written = flux_r.write(result.document)
    assert json.loads(written.data) == json.loads(data)
    assert flux_r.write(flux_r.read(written.data).document).data == written.data


def test_seed_rfc_example_reencodes_to_its_canonical_form() -> None:
    seeds = list(SEED.glob("004_*.txt"))
    if not seeds:
        pytest.skip("seed documents not found")
    text = seeds[0].read_text()
    example = re.search(r"\{\s*\"version\".*?\n\}", text, re.DOTALL)
    assert example is not None
    value = json.loads(example.group())
    written = flux_r.write(read_value(value).document)
    assert json.loads(written.data) == value


def test_out_of_order_entries_map_to_sorted_ranks() -> None:
    value = r_document(R_lite=[{"rank": "1", "children": {"core": "0-7"}},
                               {"rank": "0", "children": {"core": "0-1"}}], nodelist=["f[0-1]"])
    machines = list(read_value(value).document.environment.machines())
    assert [(m.name, m.rank, m.core_count) for m in machines] == [("f0", 0, 2), ("f1", 1, 8)]


def test_non_monotonic_nodelist_and_sparse_cores_are_kept() -> None:
    value = r_document(R_lite=[{"rank": "0,2-3", "children": {"core": "0-35"}},
                               {"rank": "1", "children": {"core": "1-35,100"}}],
                       nodelist=["node[3,0-2]"])
    result = read_value(value)
    machines = list(result.document.environment.machines())
    assert [m.name for m in machines] == ["node3", "node0", "node1", "node2"]
    assert machines[1].extras == {"flux-r:core": "1-35,100"}
    rewritten = json.loads(flux_r.write(result.document).data)
    assert rewritten["execution"]["R_lite"] == value["execution"]["R_lite"]
    assert rewritten["execution"]["nodelist"] == ["node[3,0-2]"]


def test_duplicate_ranks_merge_when_children_are_disjoint() -> None:
    value = r_document(R_lite=[{"rank": "0", "children": {"core": "0-23"}},
                               {"rank": "0", "children": {"core": "24-47", "gpu": "0"}}],
                       nodelist=["n0"])
    result = read_value(value)
    assert result.ok
    (machine,) = result.document.environment.machines()
    assert (machine.core_count, machine.gpu_count) == (48, 1)


def test_duplicate_ranks_with_overlapping_children_fail() -> None:
    value = r_document(R_lite=[{"rank": "0", "children": {"core": "0-23"}},
                               {"rank": "0", "children": {"core": "20-47"}}], nodelist=["n0"])
    assert error_codes(read_value(value)) == ["flux-r.rank-overlap"]


def test_idset_error_points_at_the_character() -> None:
    text = json.dumps(r_document(R_lite=[{"rank": "0-3", "children": {"core": "0-4,3"}}]),
                      indent=1)
    result = flux_r.read(text.encode())
    (problem,) = result.diagnostics
    assert problem.code == "flux-r.idset"
    assert problem.pointer == "/execution/R_lite/0/children/core"
    line = text.splitlines()[problem.line - 1]
    assert line[problem.column - 1:] .startswith('3"')


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"nodelist": ["node[186-188]"]}, "flux-r.nodelist-count"),
        ({"nodelist": ["node[186-189"]}, "flux-r.hostlist"),
        ({"nodelist": ["rack[1-2]node[1-2]"]}, "flux-r.hostlist"),
        ({"properties": {"debug": "7"}}, "flux-r.property-rank"),
        ({"properties": {"debug": "0-2147483646"}}, "flux-r.property-rank"),
        ({"properties": {"bad(name)": "0"}}, "schema.pattern"),
        ({"properties": {"wow!": "0"}}, "schema.pattern"),
        ({"properties": {"debug": 1}}, "schema.type"),
        ({"starttime": 100, "expiration": 100}, "flux-r.expiration"),
        ({"starttime": 200, "expiration": 100}, "flux-r.expiration"),
        ({"starttime": "100"}, "schema.type"),
        ({"expiration": -5}, "schema.minimum"),
        ({"nslots": 0}, "schema.minimum"),
        ({"R_lite": [{"rank": "0-4294967296", "children": {"core": "0"}}]}, "flux-r.idset"),
        ({"R_lite": [{"rank": 4, "children": {"core": "0"}}]}, "schema.type"),
        ({"R_lite": [{"rank": "0-2097151", "children": {"core": "0"}}]}, "flux-r.too-large"),
        ({"future": 1}, "schema.additionalProperties"),
    ],
)
def test_rules_beyond_the_schema(change: dict[str, Any], code: str) -> None:
    assert code in error_codes(read_value(r_document(**change)))


@pytest.mark.parametrize("version", [2, "1", 1.5, True])
def test_version_must_be_the_integer_one(version: Any) -> None:
    value = r_document()
    value["version"] = version
    assert error_codes(read_value(value)) == ["schema.const"]


def test_legacy_shapes_are_read_with_warnings() -> None:
    value = {"version": 1, "attributes": {"system": {"scheduler": {"queue": "batch"}}},
             "execution": {"R_lite": [{"rank": "0", "node": "corona116",
                                       "children": {"core": "0"}}]}}
    result = read_value(value)
    assert result.ok
    assert {d.code for d in result.diagnostics} == {"flux-r.legacy-node-key",
                                                    "flux-r.legacy-attributes"}
    (machine,) = result.document.environment.machines()
    assert machine.name == "corona116"
    rewritten = json.loads(flux_r.write(result.document).data)
    assert rewritten["attributes"] == value["attributes"]  # kept, as the reader warned
    assert rewritten["execution"]["nodelist"] == ["corona116"]
    assert "node" not in rewritten["execution"]["R_lite"][0]


def test_missing_core_and_extra_children_warn() -> None:
    value = r_document(R_lite=[{"rank": "0-3", "children": {"gpu": "0", "memory": "0-7"}}])
    result = read_value(value)
    assert result.ok
    assert {d.code for d in result.diagnostics} == {"flux-r.core-missing",
                                                    "flux-r.extra-child-type"}
    machine = next(result.document.environment.machines())
    assert machine.cpus == () and machine.resources == ()
    assert machine.extras == {"flux-r:children": {"memory": "0-7"}}
    rewritten = json.loads(flux_r.write(result.document).data)
    assert rewritten["execution"]["R_lite"] == [
        {"rank": "0-3", "children": {"core": "", "gpu": "0", "memory": "0-7"}}]


def test_partial_properties_become_features_of_their_ranks() -> None:
    value = r_document(properties={"debug": "3", "batch": "0-2", "amd@gpu": "0-3"})
    machines = list(read_value(value).document.environment.machines())
    assert [m.features for m in machines] == [("batch", "amd@gpu")] * 3 + [("debug", "amd@gpu")]


def _scheduling_graph(cores: int) -> dict[str, Any]:
    nodes = [{"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/c0"}}},
             {"id": "1", "metadata": {"type": "node", "name": "n0",
                                      "paths": {"containment": "/c0/n0"}}}]
    nodes += [{"id": str(2 + i), "metadata": {"type": "core", "id": i,
                                              "paths": {"containment": f"/c0/n0/core{i}"}}}
              for i in range(cores)]
    edges = [{"source": "0", "target": "1"}] + [
        {"source": "1", "target": str(2 + i)} for i in range(cores)]
    return {"writer": "fluxion:jgf", "graph": {"nodes": nodes, "edges": edges}}


def test_scheduling_graph_must_match_r_lite() -> None:
    value = r_document(R_lite=[{"rank": "0", "children": {"core": "0-1"}}], nodelist=["n0"])
    value["scheduling"] = _scheduling_graph(2)
    result = read_value(value)
    assert result.ok, result.diagnostics
    assert result.document.environment.extras["flux-r:scheduling"] == value["scheduling"]
    assert json.loads(flux_r.write(result.document).data)["scheduling"] == value["scheduling"]
    value["scheduling"] = _scheduling_graph(3)
    assert error_codes(read_value(value)) == ["flux-r.scheduling-mismatch"]


def test_scheduling_graph_is_validated_as_jgf() -> None:
    value = r_document(R_lite=[{"rank": "0", "children": {"core": "0"}}], nodelist=["n0"])
    value["scheduling"] = _scheduling_graph(1)
    value["scheduling"]["graph"]["edges"].append({"source": "1", "target": "99"})
    result = read_value(value)
    assert error_codes(result) == ["jgf.edge-endpoint"]
    assert result.diagnostics[0].pointer == "/scheduling/graph/edges/2"
    value["scheduling"] = {"writer": "other:thing", "opaque": [1, 2]}
    assert read_value(value).ok


@pytest.mark.parametrize("data", [
    b'{"version": 1, "execution": {"R_lite": "foo"}}',
    b'{"version": 1, "execution": {"R_lite": [], }',
    b'{"execution": {"R_lite": []}, "version": 999}',
    b'{"version": 1, "scheduling": {"graph": {}}}',
])
def test_sniff_accepts_broken_r(data: bytes) -> None:
    assert flux_r.sniff(data)


@pytest.mark.parametrize("data", [
    b'{"all": {"version": 1, "execution": {"R_lite": []}}}',
    b'{"$schema": "x", "properties": {"execution": {}}}',
    b'{"graph": {"nodes": [], "edges": []}}',
    b"<graphml/>",
    b'{"version": 1}',
])
def test_sniff_rejects_what_is_not_one_r(data: bytes) -> None:
    assert not flux_r.sniff(data)


def test_writer_groups_identical_children_into_one_entry() -> None:
    machines = tuple(Machine(name=f"node{i}", cpus=(ProcessingUnit(cores=4),),
                             features=("batch",) if i < 3 else ("debug",)) for i in range(5))
    environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=machines),)),)),))
    written = flux_r.write(Document(environment=environment))
    value = json.loads(written.data)
    assert value["execution"] == {
        "R_lite": [{"rank": "0-4", "children": {"core": "0-3"}}],
        "nodelist": ["node[0-4]"],
        "properties": {"batch": "0-2", "debug": "3-4"},
    }
    assert schema_diagnostics(flux_r.SCHEMA, value) == []


def test_writer_lists_what_r_cannot_hold() -> None:
    machine = Machine(id="m1", name="a1", state=MachineState.FAILURE, os="linux",
                      cpus=(ProcessingUnit(cores=2, clock_rate_hz=2e9),
                            ProcessingUnit(cores=2)),
                      memory=(StorageUnit(capacity_mb=1024),), features=("bad|name",))
    racks = (Rack(name="r1", slots=(machine,)), Rack(name="r2"))
    environment = Environment(name="dc", datacenters=(Datacenter(name="x", rooms=(
        Room(racks=racks),)),))
    document = Document(environment=environment)
    lost = {loss.field for loss in conversion_losses(document, flux_r.FORMAT)}
    assert lost >= {"machine.id", "machine.state", "machine.os", "cpu.clock_rate_hz",
                    "machine.cpus.sockets", "machine.memory", "machine.features", "rack",
                    "rack.name", "datacenter.name", "environment.name"}
    value = json.loads(flux_r.write(document).data)
    assert value["execution"]["R_lite"] == [{"rank": "0", "children": {"core": "0-3"}}]


def test_every_machine_gets_a_host_name_its_name_then_its_id_then_its_position() -> None:
    machines = (Machine(name="bad name", id="m-1"), Machine(name="x[", id="ü"),
                Machine(name="node7"), Machine(id=12), Machine())
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=(machines[0], None, *machines[1:])),)),)),)))
    written = flux_r.write(document)
    assert written.ok
    assert json.loads(written.data)["execution"]["nodelist"] == ["m-1,node[2,7],12,node5"]
    assert flux_r.normal_form_losses(document) == {"machine.name"}
    assert "machine.name" in {loss.field for loss in conversion_losses(document,
                                                                       flux_r.FORMAT)}
    read = flux_r.read(written.data)
    assert read.ok and read.diagnostics == ()
    names = [machine.name for machine in read.document.environment.machines()]
    assert names == ["m-1", "node2", "node7", "12", "node5"]
    assert names == [m.name for m in flux_r.normal_form(document).environment.machines()]
    assert flux_r.FORMAT.requires == {"machine.name"}


def test_a_topology_without_names_still_gets_the_nodelist_rfc_20_requires() -> None:
    machines = tuple(Machine(cpus=(ProcessingUnit(cores=2),)) for _ in range(3))
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=machines),)),)),)))
    value = json.loads(flux_r.write(document).data)
    assert value["execution"]["nodelist"] == ["node[1-3]"]
    assert conversion_losses(document, flux_r.FORMAT) == ()
    assert flux_r.read(flux_r.write(document).data).diagnostics == ()


def test_cpus_without_cores_read_back_as_no_cpu_and_are_reported() -> None:
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=(Machine(cpus=(ProcessingUnit(cores=0),)), Machine())),)),)),)))
    assert [loss.field for loss in conversion_losses(document, flux_r.FORMAT)] == [
        "machine.cpus"]
    read = flux_r.read(flux_r.write(document).data)
    assert read.document is not None
    assert [m.cpus for m in read.document.environment.machines()] == [(), ()]


def test_machines_out_of_rank_order_after_an_empty_datacenter_are_put_in_rank_order() -> None:
    """R lists machines by rank: the normal form reorders them into the one rack the
    restriction keeps, wherever the first room and rack are (here not in the first
    datacenter, which has none)."""
    machines = (Machine(name="n1", rank=1), Machine(name="n0", rank=0))
    document = Document(environment=Environment(datacenters=(
        Datacenter(name="empty"), Datacenter(rooms=(Room(), Room(racks=(
            Rack(name="r", slots=machines),)))))))
    normal = flux_r.normal_form(document).environment
    assert normal is not None
    assert [machine.name for machine in normal.machines()] == ["n0", "n1"]
    assert normal.datacenters[0].name == "empty"
    lost = {loss.field for loss in conversion_losses(document, flux_r.FORMAT)}
    assert "machine.rank" not in lost and "rack.name" in lost
    read = flux_r.read(flux_r.write(document).data)
    assert read.document is not None and read.document.environment is not None
    assert [(m.name, m.rank) for m in read.document.environment.machines()] == [
        ("n0", 0), ("n1", 1)]


@settings(max_examples=150, deadline=None)
@given(r_environments())
def test_model_to_r_to_model_is_identity(environment: Environment) -> None:
    document = Document(environment=environment)
    assert conversion_losses(document, flux_r.FORMAT) == ()
    written = flux_r.write(document)
    value = json.loads(written.data)
    assert schema_diagnostics(flux_r.SCHEMA, value) == []
    result = flux_r.read(written.data)
    assert result.ok, result.diagnostics
    assert result.document.environment == environment
    assert flux_r.write(result.document).data == written.data


@pytest.mark.parametrize("name", ["2node.R.json", "2node.jgf.json"])
def test_examples_read_cleanly_and_rewrite_identically(name: str) -> None:
    from dcx.converters.registry import detect

    data = (Path(__file__).resolve().parent.parent / "examples" / "flux" / name).read_bytes()
    spec = detect(data, name)
    assert spec is not None and spec.family == "flux"
    result = spec.read(data)
    assert result.ok and result.diagnostics == () and result.document is not None
    assert spec.write is not None and spec.write(result.document).data == data


def test_losses_are_located_at_the_r_lite_entry_listing_the_machines_rank(
        first_losses: Any) -> None:
    """Machines are in rank order: slot 1 is rank 1 (the second entry), slot 4 rank 4 (the
    first entry, which lists it in a range)."""
    text = ('{"version": 1, "execution": {\n'
            ' "R_lite": [\n'
            '  {"rank": "0,4-5", "children": {"core": "0-3"}},\n'
            '  {"rank": "1-3", "children": {"core": "0-3", "gpu": "0"}}],\n'
            ' "nodelist": ["n[0-5]"],\n'
            ' "properties": {"fast": "4"}}}\n')
    firsts = first_losses(text, "haizea")
    rack = "/environment/datacenters/0/rooms/0/racks/0"
    assert firsts["machine.gpus"] == f"in.json:4:3, {rack}/slots/1"
    assert firsts["machine.features"] == f"in.json:3:3, {rack}/slots/4"
