"""OpenDC topology JSON: units, host counts and OpenDC's host names, located diagnostics,
the normal form, conversions and hypothesis round trips."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.converters.convert import convert
from dcx.core.groups import MachineGroup, Slots, slot_parts
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
)
from dcx.core.restrict import restrict
from dcx.formats import opendc_topology
from dcx.parsing.schemas import schema_diagnostics
from tests.strategies_opendc_topology import topology_environments

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples" / "opendc-topology").glob("*.json"))
HOST: dict[str, Any] = {"name": "cn", "count": 4,
                        "cpu": {"coreCount": 32, "coreSpeed": "2400 MHz"},
                        "memory": {"memorySize": "192000 MiB"}}


def topology(*hosts: dict[str, Any], **cluster: Any) -> bytes:
    return json.dumps({"clusters": [{"name": "C1", **cluster, "hosts": list(hosts)}]},
                      indent=1).encode()


def host(**changes: Any) -> dict[str, Any]:
    changed = copy.deepcopy(HOST)
    changed.update(changes)
    return changed


def environment(*machines: Machine) -> Environment:
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))


def test_the_notes_example_is_four_machines_named_as_opendc_names_them() -> None:
    result = opendc_topology.read(topology(HOST))
    assert result.ok and result.diagnostics == ()
    (rack,) = next(iter(result.document.environment.datacenters)).rooms[0].racks
    assert rack.name == "C1"
    assert [m.name for m in rack.machines] == ["cn", "cn-0", "cn-1", "cn-2"]
    first = rack.machines[0]
    assert first.cpus == (ProcessingUnit(cores=32, clock_rate_hz=2.4e9),)
    assert first.memory == (StorageUnit(192000.0),)


def test_host_names_count_uses_across_clusters_and_default_to_host() -> None:
    data = json.dumps({"clusters": [
        {"hosts": [host(name="a", count=2), host(count=1, name=None)]},
        {"hosts": [host(name="a", count=1)]}]}).replace('"name": null, ', "").encode()
    result = opendc_topology.read(data)
    assert result.ok
    assert [m.name for m in result.document.environment.machines()] == [
        "a", "a-0", "Host", "a-1"]


@pytest.mark.parametrize(("text", "hz"), [
    ("2.4 GHz", 2.4e9), ("3300MHz", 3.3e9), (" 10 ghz ", 1e10), ("500 KHz", 5e5),
    ("1200 hertz", 1200.0)])
def test_frequencies_with_units(text: str, hz: float) -> None:
    assert opendc_topology.hertz(text) == (hz, False)


@pytest.mark.parametrize(("text", "mib"), [
    ("192 GiB", 196608.0), ("128 GB", 128e9 / 2**20), ("512 MiB", 512.0),
    ("1 TiB", 2.0**20), ("1048576 B", 1.0), ("8 Mib", 1.0), ("2 Bytes", 2 / 2**20)])
def test_sizes_with_units(text: str, mib: float) -> None:
    assert opendc_topology.mebibytes(text) == (mib, False)


def test_bare_numbers_are_mhz_and_mib_with_opendcs_warning() -> None:
    result = opendc_topology.read(topology(host(
        cpu={"coreCount": 16, "coreSpeed": 2100}, memory={"memorySize": 128000})))
    assert result.ok
    machine = next(result.document.environment.machines())
    assert machine.clock_rate_hz == 2.1e9 and machine.memory_mb == 128000.0
    assert [(d.code, d.pointer) for d in result.diagnostics] == [
        ("opendc-topology.bare-number", "/clusters/0/hosts/0/cpu/coreSpeed"),
        ("opendc-topology.bare-number", "/clusters/0/hosts/0/memory/memorySize")]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_read_cleanly_and_rewrite_to_the_same_model(path: Path) -> None:
    data = path.read_bytes()
    assert opendc_topology.sniff(data)
    result = opendc_topology.read(data)
    assert result.ok and result.diagnostics == ()
    assert opendc_topology.normal_form(result.document) == result.document
    written = opendc_topology.write(result.document)
    assert written.diagnostics == ()
    assert opendc_topology.read(written.data).document == result.document
    assert written.data.count(b'"count": 4') == data.count(b'"count": 4')  # grouped again


@pytest.mark.parametrize(("data", "code", "pointer"), [
    (topology(host(cpu={"coreCount": 8, "coreSpeed": "3 furlongs"})), "opendc-topology.unit",
     "/clusters/0/hosts/0/cpu/coreSpeed"),
    (topology(host(memory={"memorySize": "12 parsecs"})), "opendc-topology.unit",
     "/clusters/0/hosts/0/memory/memorySize"),
    (topology(host(cpu={"coreCount": 8})), "schema.required", "/clusters/0/hosts/0/cpu"),
    (topology(host(count=0)), "schema.minimum", "/clusters/0/hosts/0/count"),
    (topology(host(cpus=[{"coreCount": 8}])), "opendc-topology.unknown-key",
     "/clusters/0/hosts/0/cpus"),
    (topology(HOST, count=3), "opendc-topology.cluster-count", "/clusters/0/count"),
    (topology(host(count=2_000_000)), "opendc-topology.too-large", "/clusters/0/hosts/0/count"),
    (b'{"clusters": {}}', "schema.type", "/clusters"),
])
def test_bad_topologies_are_reported_where_they_are(data: bytes, code: str,
                                                    pointer: str) -> None:
    result = opendc_topology.read(data)
    first = next(d for d in result.diagnostics if d.code == code)
    assert first.pointer == pointer
    assert first.line is not None and first.column is not None
    assert (result.document is None) == first.is_error


def test_json_hazards_and_non_objects_are_refused() -> None:
    assert opendc_topology.read(b"[]").diagnostics[0].code == "opendc-topology.root"
    assert opendc_topology.read(b'{"clusters": [], "clusters": []}').diagnostics[0].code == \
        "json.duplicate-key"


def test_the_stale_upstream_shape_is_refused_with_its_key() -> None:
    stale = topology({"name": "h", "cpus": [{"coreCount": 8, "coreSpeed": 2000}],
                      "memory": {"memorySize": 1024}})
    result = opendc_topology.read(stale)
    assert result.document is None
    assert ("schema.required", "/clusters/0/hosts/0") in [
        (d.code, d.pointer) for d in result.diagnostics]


def test_the_sdk_spelling_is_read_and_written_back_and_repeats_clusters() -> None:
    sdk_host = {"name": "h", "count": 2, "cpu": {"coreCount": 8, "coreSpeed": "2 GHz",
                                                 "architecture": "aarch64"},
                "memory": {"size": "64 GiB"},
                "cpuPowerModel": {"type": "linear", "idlePower": "100 W", "maxPower": "200 W"}}
    result = opendc_topology.read(topology(sdk_host, count=2))
    assert result.ok and result.diagnostics == ()
    environment_read = result.document.environment
    assert environment_read.extras == {opendc_topology.DIALECT: opendc_topology.SDK_FILE}
    assert [m.name for m in environment_read.machines()] == ["h", "h-0", "h-1", "h-2"]
    assert next(environment_read.machines()).arch == "aarch64"
    written = opendc_topology.write(result.document)
    assert b'"size": "64 GiB"' in written.data and b"memorySize" not in written.data
    assert opendc_topology.read(written.data).document == result.document


def test_one_file_uses_one_spelling_and_imports_are_not_followed() -> None:
    mixed = json.dumps({"clusters": [{"hosts": [
        host(memory={"size": "1 GiB"}), host(name="b", memory={"memorySize": "1 GiB"})]}]})
    result = opendc_topology.read(mixed.encode())
    (found,) = [d for d in result.diagnostics if d.is_error]
    assert (found.code, found.pointer) == ("opendc-topology.dialect", "/clusters/0/hosts/1/memory")
    imported = opendc_topology.read(topology({"importFrom": "hosts/big.json", "count": 4}))
    assert [d.code for d in imported.diagnostics] == ["opendc-topology.import"]


def test_the_normal_form_names_merges_and_leaves_out_what_opendc_cannot_hold() -> None:
    xeon = ProcessingUnit(cores=8, clock_rate_hz=2.1e9, family="Xeon")
    other = ProcessingUnit(cores=4, clock_rate_hz=3.0e9)
    gpu = ProcessingUnit(cores=1, clock_rate_hz=1.5e9)
    machines = (Machine(id=7, cpus=(xeon, other), gpus=(gpu, gpu)),
                Machine(name="7", cpus=(xeon,), gpus=(ProcessingUnit(cores=1),)),
                Machine(name="nocpu"))
    document = Document(environment=environment(*machines))
    normal = opendc_topology.normal_form(document)
    first, second = normal.environment.machines()
    assert (first.name, second.name) == ("7", "7-2")
    assert first.cpus[0].cores == 12 and first.cpus[0].family is None
    assert first.cpus[0].clock_rate_hz == pytest.approx((8 * 2.1e9 + 4 * 3e9) / 12)
    assert second.gpus == ()
    assert opendc_topology.normal_form_losses(document) == {
        "machine.name", "machine.cpus", "machine.cpus.sockets", "cpu.vendor", "machine.gpus"}
    assert "1 of 3 machines" in opendc_topology.leaves_out(document)
    written = opendc_topology.write(document)
    assert written.diagnostics == ()
    assert opendc_topology.read(written.data).document == restrict(
        document, opendc_topology.HOLDS, "opendc-topology", target=opendc_topology.FORMAT)


def test_a_host_count_is_one_group_whose_names_are_made_when_asked_for() -> None:
    million = host(name="cn", count=1_000_000)
    data = json.dumps({"clusters": [{"hosts": [million]},
                                    {"hosts": [host(name="cn", count=2)]}]}).encode()
    result = opendc_topology.read(data)
    assert result.ok and result.diagnostics == ()
    first, second = result.document.environment.racks()
    assert isinstance(first.slots, Slots) and len(first.slots) == 1_000_000
    (group,) = slot_parts(first.slots)
    assert isinstance(group, MachineGroup) and group.count == 1_000_000
    assert group.template.cpus == (ProcessingUnit(cores=32, clock_rate_hz=2.4e9),)
    assert group.names is not None
    assert [group.names[0], group.names[1], group.names[-1]] == ["cn", "cn-0", "cn-999998"]
    assert list(second.slots[i].name for i in range(2)) == ["cn-999999", "cn-1000000"]
    assert first.slots._expanded is None  # nothing above made a million machines
    written = opendc_topology.write(result.document)
    assert first.slots._expanded is None
    clusters = json.loads(written.data)["clusters"]
    assert [[(h["name"], h.get("count")) for h in c["hosts"]] for c in clusters] == [
        [("cn", 1_000_000)], [("cn-999999", None), ("cn-1000000", None)]]
    assert opendc_topology.read(written.data).document == result.document


def _expanded(document: Document) -> Document:
    """``document`` with every group replaced by its members: the path every read took
    before groups."""
    assert document.environment is not None
    return Document(environment=Environment(
        datacenters=tuple(Datacenter(rooms=tuple(Room(racks=tuple(
            Rack(name=rack.name, slots=tuple(rack.slots), extras=rack.extras)
            for rack in room.racks)) for room in datacenter.rooms))
            for datacenter in document.environment.datacenters),
        extras=document.environment.extras))


_ENTRY_NAMES = st.sampled_from(["h", "h-0", "h-1", "h-2", "h-0-0", "g", None])


@given(st.lists(st.lists(st.tuples(_ENTRY_NAMES, st.integers(1, 4), st.integers(1, 2)),
                         min_size=1, max_size=4), min_size=1, max_size=3))
@settings(max_examples=150, deadline=None)
def test_groups_normalise_and_write_as_their_machines_one_by_one(
        clusters: list[list[tuple[str | None, int, int]]]) -> None:
    """Names OpenDC gives twice (an entry ``h-0`` beside an entry ``h`` of count 2), shapes
    that alternate: the group path gives what the machines one by one give."""
    data = json.dumps({"clusters": [{"hosts": [
        {**host(count=count, cpu={"coreCount": cores, "coreSpeed": "2 GHz"}),
         **({"name": name} if name is not None else {})}
        for name, count, cores in entries]} for entries in clusters]})
    data = data.replace('"name": "cn", ', "")
    document = opendc_topology.read(data.encode()).document
    assert document is not None
    one_by_one = _expanded(document)
    assert document == one_by_one
    assert opendc_topology.normal_form(document) == opendc_topology.normal_form(one_by_one)
    assert opendc_topology.normal_form_losses(document) == \
        opendc_topology.normal_form_losses(one_by_one)
    written = opendc_topology.write(document)
    assert written.data == opendc_topology.write(one_by_one).data
    again = opendc_topology.read(written.data).document
    assert again == opendc_topology.normal_form(document)


def test_identical_machines_with_their_own_names_are_separate_entries() -> None:
    unit = ProcessingUnit(cores=4, clock_rate_hz=2e9)
    document = Document(environment=environment(
        Machine(name="node001", cpus=(unit,)), Machine(name="node002", cpus=(unit,))))
    written = json.loads(opendc_topology.write(document).data)
    assert [h["name"] for h in written["clusters"][0]["hosts"]] == ["node001", "node002"]
    assert written["clusters"][0]["hosts"][0]["memory"] == {"memorySize": "0 MiB"}


@pytest.mark.parametrize("source", ["environment/small-cluster.json",
                                    "environment/two-sites.json"])
def test_seed_topologies_convert_to_opendc_and_back(source: str) -> None:
    data = (REPO / "examples" / source).read_bytes()
    there = convert(data, "opendc-topology", source)
    assert there.ok, [d.render() for d in there.diagnostics]
    assert opendc_topology.read(there.data).diagnostics == ()
    back = convert(there.data, "environment", "out.json")
    assert back.ok, [d.render() for d in back.diagnostics]


def test_topologies_without_clock_rates_are_refused_in_one_line() -> None:
    data = (REPO / "examples" / "flux" / "2node.R.json").read_bytes()
    conversion = convert(data, "opendc-topology", "2node.R.json")
    assert not conversion.ok and conversion.data == b""
    (refused,) = [d for d in conversion.diagnostics if d.is_error]
    assert refused.code == "convert.nothing-held" and "clock rate" in refused.message


@given(topology_environments())
@settings(max_examples=150, deadline=None)
def test_round_trip_is_identity_and_output_validates(topology_model: Environment) -> None:
    document = Document(environment=topology_model)
    assert opendc_topology.normal_form_losses(document) == frozenset()
    written = opendc_topology.write(document)
    assert written.diagnostics == ()
    assert schema_diagnostics(opendc_topology.SCHEMA, json.loads(written.data)) == []
    result = opendc_topology.read(written.data)
    assert result.ok and result.diagnostics == (), result.diagnostics
    assert result.document == document


@given(topology_environments(), st.booleans())
@settings(max_examples=60, deadline=None)
def test_many_entries_are_the_encoders_one_line_text(topology_model: Environment,
                                                     own_names: bool) -> None:
    """Past ``_INDENTED_ENTRIES`` host entries the writer joins each entry's text itself:
    exactly the encoder's one-line form of what the indented path writes."""
    from dcx.formats.opendc_topology import codec

    if own_names:  # every host its own entry, as hosts with their own names are
        topology_model = replace(topology_model, datacenters=tuple(
            replace(datacenter, rooms=tuple(replace(room, racks=tuple(
                replace(rack, slots=tuple(
                    None if machine is None else replace(machine, name=f"own{r}.{i}")
                    for i, machine in enumerate(slot_parts_expanded(rack.slots))))
                for r, rack in enumerate(room.racks))) for room in datacenter.rooms))
            for datacenter in topology_model.datacenters))
    document = Document(environment=topology_model)
    indented = opendc_topology.write(document)
    previous = codec._INDENTED_ENTRIES
    codec._INDENTED_ENTRIES = -1
    try:
        one_line = opendc_topology.write(document)
    finally:
        codec._INDENTED_ENTRIES = previous
    assert one_line.diagnostics == indented.diagnostics
    if indented.ok:
        assert one_line.data == (json.dumps(json.loads(indented.data), ensure_ascii=False)
                                 + "\n").encode()


def slot_parts_expanded(slots: Any) -> list[Machine | None]:
    """A rack's slots one machine per slot (a group's members made)."""
    machines: list[Machine | None] = []
    for part in slot_parts(slots):
        machines.extend(part if isinstance(part, MachineGroup) else [part])
    return machines


@pytest.mark.corpus
def test_opendc_topologies_in_the_corpus_read(corpus_dir: Path) -> None:
    """OpenDC's own topologies (corpus/upstream/opendc-topology, see its MANIFEST): all but
    the SDK demo's (speeds and sizes with units) give bare numbers somewhere (OpenDC reads
    them as MHz and MiB, with its warning), the one diagnostic each reads with; each is
    rewritten to the same model."""
    folder = corpus_dir / "upstream" / "opendc-topology"
    paths = sorted(path for path in folder.glob("*.json")
                   if opendc_topology.sniff(path.read_bytes()))
    if not paths:
        pytest.skip(f"no upstream OpenDC topologies under {folder}")
    for path in paths:
        data = path.read_bytes()
        result = opendc_topology.read(data)
        assert result.document is not None, (path, [d.render() for d in result.diagnostics])
        expected = set() if path.name.startswith("demo__") else {"opendc-topology.bare-number"}
        assert {d.code for d in result.diagnostics} == expected, path
        written = opendc_topology.write(result.document)
        assert opendc_topology.read(written.data).document == result.document, path


def test_losses_are_located_at_the_cluster_and_host_entries(first_losses: Any) -> None:
    """An SDK cluster of count 2 is racks 0 and 1, so rack 2 is the second cluster; a host
    entry of count 2 is two slots, so slot 2 there is the second entry."""
    host = '"cpu": {"coreCount": 8, "coreSpeed": "2 GHz"}, "memory": {"size": "16 GiB"}'
    text = ('{"clusters": [\n'
            ' {"name": "A", "count": 2, "hosts": [\n'
            f'  {{"name": "a", "count": 3, {host}}}]}},\n'
            ' {"name": "B", "hosts": [\n'
            f'  {{"name": "b", "count": 2, {host}}},\n'
            f'  {{"name": "g", "count": 2, {host},\n'
            '   "gpu": {"coreCount": 100, "coreSpeed": "1 GHz"}}]}]}\n')
    firsts = first_losses(text, "haizea")
    assert firsts["rack.name"] == "in.json:2:2, /environment/datacenters/0/rooms/0/racks/0"
    assert firsts["machine.gpus"] == (
        "in.json:6:3, /environment/datacenters/0/rooms/0/racks/2/slots/2")


# opendc-cli's composed files: a host (or any object) takes its other keys from the file
# named by importFrom, relative to the importing file; its own keys override each key whole.
def composed_folder(tmp_path: Path, imported: dict[str, str]) -> Path:
    for name, text in imported.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / "topology.json"


def read_composed(path: Path) -> Any:
    """What reading the topology at ``path`` from its folder gives (imports followed)."""
    read = convert(path.read_bytes(), "opendc-topology", str(path)).read
    assert read is not None
    return read


def test_an_imported_host_is_read_from_the_topologys_folder(tmp_path: Path) -> None:
    big = {k: v for k, v in HOST.items() if k != "count"}
    path = composed_folder(tmp_path, {
        "hosts/big.json": json.dumps(big),
        "topology.json": topology({"importFrom": "hosts/big.json", "count": 2}).decode()})
    result = read_composed(path)
    assert result.ok, [d.render() for d in result.diagnostics]
    machines = list(result.document.environment.machines())
    assert [m.name for m in machines] == ["cn", "cn-0"] and machines[0].core_count == 32


def test_nested_imports_are_relative_to_the_importing_file(tmp_path: Path) -> None:
    path = composed_folder(tmp_path, {
        "parts/cpu.json": json.dumps({"coreCount": 8, "coreSpeed": "3 GHz"}),
        "parts/host.json": json.dumps({"name": "h", "cpu": {"importFrom": "cpu.json"},
                                       "memory": {"memorySize": "1 GiB"}}),
        "topology.json": topology({"importFrom": "parts/host.json",
                                   "memory": {"memorySize": "2 GiB"}}).decode()})
    result = read_composed(path)
    assert result.ok, [d.render() for d in result.diagnostics]
    (machine,) = result.document.environment.machines()
    assert (machine.core_count, machine.memory_mb) == (8, 2048.0)  # its own memory wins


@pytest.mark.parametrize(("name", "said"), [
    ("../outside.json", "leads out of the topology's folder"),
    ("/etc/hostname", "not a path relative to the topology's folder"),
    ("https://example.invalid/h.json", "not a path relative to the topology's folder"),
    ("hosts/missing.json", "does not exist"),
    ("link.json", "leads out of the topology's folder"),
    ("topology.json", "imports itself"),
    ("hosts/list.json", "is a JSON object"),
])
def test_an_import_that_cannot_be_followed_is_a_located_error(tmp_path: Path, name: str,
                                                              said: str) -> None:
    inner = tmp_path / "inner"
    path = composed_folder(inner, {
        "hosts/list.json": "[]",
        "topology.json": topology(HOST, {"importFrom": name}).decode()})
    (tmp_path / "outside.json").write_text(json.dumps(HOST))
    (inner / "link.json").symlink_to(tmp_path / "outside.json")
    result = read_composed(path)
    assert result.document is None
    (found,) = [d for d in result.diagnostics if d.is_error]
    assert found.code == "opendc-topology.import" and said in found.message, found.message
    assert (found.pointer, found.line) == ("/clusters/0/hosts/1/importFrom", 18)


def test_an_import_from_standard_input_is_refused_with_why() -> None:
    result = opendc_topology.read(topology({"importFrom": "hosts/big.json", "count": 4}))
    (found,) = result.diagnostics
    assert found.code == "opendc-topology.import" and "standard input" in found.message
    assert found.pointer == "/clusters/0/hosts/0/importFrom"
