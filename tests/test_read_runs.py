"""Readers of formats that list machines one by one (SSS, OpenDC setup.json, JGF) read a run
of identical machines (equal but for id, name or rank) as one machine group: the same
document, diagnostics and source places as reading machine by machine, and every writable
format gets the same bytes, findings and losses (with their first places) from the group
as from its machines one by one."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.converters.convert import convert_document
from dcx.converters.losses import conversion_losses
from dcx.converters.registry import FORMATS
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import ReadResult
from dcx.core.groups import MachineGroup, compact, machine_count, machine_parts
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
from dcx.formats import jgf, opendc_setup, sss
from dcx.formats.jgf import codec as jgf_codec
from dcx.formats.opendc_setup import codec as opendc_codec
from dcx.formats.sss import reader as sss_reader
from dcx.formats.sss import text_runs as sss_text_runs
from tests.strategies_flux import jgf_environments
from tests.strategies_traces import setup_environments
from tests.test_groups import documents_with_runs

WRITABLE = [declaration for declaration in FORMATS if declaration.write is not None]


def _expanded(document: Document) -> Document:
    """``document`` with every group expanded into single machines."""
    environment = document.environment
    assert environment is not None
    datacenters = tuple(replace(datacenter, rooms=tuple(replace(room, racks=tuple(
        replace(rack, slots=tuple(rack.slots)) for rack in room.racks))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    return replace(document, environment=replace(environment, datacenters=datacenters))


def _groups(document: Document | None) -> list[MachineGroup]:
    assert document is not None and document.environment is not None
    return [part for part in machine_parts(document.environment)
            if isinstance(part, MachineGroup)]


def _slot_pointers(environment: Environment) -> list[str]:
    pointers = []
    for d, datacenter in enumerate(environment.datacenters):
        for r, room in enumerate(datacenter.rooms):
            for k, rack in enumerate(room.racks):
                at_rack = f"/environment/datacenters/{d}/rooms/{r}/racks/{k}"
                pointers += [at_rack] + [f"{at_rack}/slots/{slot}"
                                         for slot in range(len(rack.slots) + 1)]
    return pointers


def _agree(runs: ReadResult, single: ReadResult, source: FormatDeclaration) -> None:
    """The two reads give the same document, diagnostics, places and written bytes."""
    assert runs.document == single.document
    assert [repr(d) for d in runs.diagnostics] == [repr(d) for d in single.diagnostics]
    if runs.document is None or single.document is None:
        return
    assert runs.document.environment is not None
    for pointer in _slot_pointers(runs.document.environment):
        assert runs.locate(pointer) == single.locate(pointer), pointer
    assert source.write is not None
    assert source.write(runs.document).data == source.write(single.document).data


def _converts_as_its_machines(result: ReadResult, source: FormatDeclaration,
                              target: FormatDeclaration) -> None:
    assert result.ok and result.document is not None and _groups(result.document)
    expanded = _expanded(result.document)
    assert expanded == result.document
    grouped_output = convert_document(result.document, source, target, read=result)
    expanded_output = convert_document(expanded, source, target, read=result)
    assert grouped_output.data == expanded_output.data
    assert grouped_output.diagnostics == expanded_output.diagnostics
    assert grouped_output.losses == expanded_output.losses  # with their first pointers
    assert [loss.first_place(result, source.name) for loss in grouped_output.losses] == [
        loss.first_place(result, source.name) for loss in expanded_output.losses]


# ------------------------------------------------------------------------------ SSS

_SSS_NODES: tuple[Any, ...] = (
    lambda n: f"<Id>{n}</Id><Name>n{n}</Name><Configured><Processors>4</Processors>"
              "</Configured>",
    lambda n: f"<Id>x{n}</Id><Configured><Processors>4</Processors></Configured>",
    lambda n: f"<Id>{n}</Id><Name>n{n}</Name><State>Floating</State>",  # a warning
    lambda n: "<Id> </Id><Name>n</Name><Configured><Processors>4</Processors></Configured>",
    lambda n: "<Id>0</Id><Name>d</Name><Configured><Processors>4</Processors></Configured>",
    lambda n: f"<Id>{n}</Id><Name>n{n}</Name><Configured><Processors>8</Processors>"
              "</Configured>",
    lambda n: None,  # a node reference between node objects
    lambda n: f"<Id>{n}</Id><Name/><Configured><Processors>4</Processors></Configured>",
    lambda n: f"<Id>0{n}</Id><Name>a&amp;{n}</Name><Configured><Processors>4</Processors>"
              "</Configured>",
    lambda n: f"<Id>{n}</Id><Name>n{n}</Name><!-- c --><Configured><Processors>4"
              "</Processors></Configured>",
    lambda n: f"<Id>{n}</Id><Name>n{n}</Name><Feature>a,,b</Feature>",  # a warning
)


def _sss_document(choices: list[int]) -> bytes:
    nodes = []
    for index, choice in enumerate(choices):
        body = _SSS_NODES[choice](index + 1)
        nodes.append("<Node>n[1-2]</Node>" if body is None else f"<Node>{body}</Node>")
    return ("<Data>\n" + "\n".join(nodes) + "\n</Data>\n").encode()


def _sss_read_node_by_node(data: bytes, monkeypatch: pytest.MonkeyPatch) -> ReadResult:
    with monkeypatch.context() as patch:
        patch.setattr(sss_reader._Run, "member", lambda self, node: None)
        return sss.read(data)


def test_sss_nodes_of_one_shape_are_one_group_read_as_node_by_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    data = _sss_document([0] * 5 + [6] + [0] * 2 + [5] * 3 + [1, 1, 7, 7, 8, 8, 9, 9])
    runs = sss.read(data)
    _agree(runs, _sss_read_node_by_node(data, monkeypatch), sss.FORMAT)
    groups = _groups(runs.document)
    # an empty <Name/>, text ids and comments (dropped by the parser) keep a node's shape
    assert [group.count for group in groups] == [7, 3, 2, 6]
    assert groups[0].ids == (1, 2, 3, 4, 5, 7, 8) and groups[0].names == tuple(
        f"n{n}" for n in (1, 2, 3, 4, 5, 7, 8))  # across the node reference
    assert groups[1].ids == range(9, 12)
    assert groups[2].ids == ("x12", "x13") and groups[2].names is None
    assert groups[3].ids == (14, 15, "016", "017", 18, 19)
    assert groups[3].names == ("", "", "a&16", "a&17", "n18", "n19")
    assert runs.locate("/environment/datacenters/0/rooms/0/racks/0/slots/6") == (9, None)


def test_sss_findings_blank_and_repeated_ids_are_read_node_by_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for choices in ([0, 0, 2, 2, 0], [0, 0, 3, 0, 0], [0, 4, 0, 0], [10, 10, 0]):
        data = _sss_document(choices)
        _agree(sss.read(data), _sss_read_node_by_node(data, monkeypatch), sss.FORMAT)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(1, 30))
def test_generated_sss_files_read_as_node_by_node(seed: int, size: int) -> None:
    rng = random.Random(seed)
    weights = [8, 3, 1, 1, 1, 3, 1, 2, 2, 2, 1]
    choices: list[int] = []
    while len(choices) < size:
        choices += rng.choices(range(len(_SSS_NODES)), weights)[:1] * rng.choice((1, 2, 5))
    data = _sss_document(choices[:size])
    with pytest.MonkeyPatch.context() as monkeypatch:
        _agree(sss.read(data), _sss_read_node_by_node(data, monkeypatch), sss.FORMAT)


def _sss_text_runs_agree(data: bytes) -> bool:
    """The text-run path's result, when it gives one, is the checked path's; whether it
    gave one."""
    fast = sss_text_runs.read(data, min_bytes=0)
    if fast is None:
        return False
    _agree(fast, sss_reader.read_checked(data), sss.FORMAT)
    return True


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(1, 30))
def test_generated_sss_files_read_by_text_runs_as_the_checked_path_reads_them(
        seed: int, size: int) -> None:
    rng = random.Random(seed)
    choices = [rng.choice(range(len(_SSS_NODES)))] * size
    if rng.random() < 0.5:
        choices[rng.randrange(size)] = rng.choice(range(len(_SSS_NODES)))
    for data in (_sss_document(choices), _sss_document(choices).replace(b"\n", b"")):
        _sss_text_runs_agree(data)


_WRITTEN_GROUP = Machine(cpus=(ProcessingUnit(cores=32),), gpus=(ProcessingUnit(cores=1),) * 2,
                         memory=(StorageUnit(capacity_mb=4096.0),), features=("ib", "gpu"))


def _written(ids: list[Any], names: list[str]) -> bytes:
    machines = tuple(replace(_WRITTEN_GROUP, id=i, name=name) for i, name in zip(
        ids, names, strict=True))
    environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=machines),)),)),))
    return sss.write(Document(environment=compact(environment))).data


@pytest.mark.parametrize("edit", [
    None, (b"<Id>3</Id>", b"<Id>2</Id>"), (b"<Id>3</Id>", b"<Id> </Id>"),
    (b"<Name>n3</Name>", b"<Name>n&amp;3</Name>"), (b"<Name>n3</Name>", b"<Name/>"),
    (b"<Processors>32</Processors>", b"<Processors>16</Processors>"),
    (b"  </Node>\n  <Node>", b"  </Node>\n<!-- c -->\n  <Node>"),
    (b"  </Node>\n  <Node>", b"  </Node>\n    <Node>"), (b"<Id>3</Id>", b"<Id>x\xff</Id>"),
    (b"<Data>", b'<Data xmlns:d="urn:x">'), (b"</Data>", b"</Data>\n<!-- end -->"),
])
def test_dcxs_own_sss_group_output_is_read_by_text_runs_or_left_to_the_checked_path(
        edit: tuple[bytes, bytes] | None) -> None:
    data = _written([*range(1, 7), "x7", "08"], [f"n{n}" for n in range(1, 9)])
    if edit is None:
        assert _sss_text_runs_agree(data)
        fast = sss_text_runs.read(data, min_bytes=0)
        assert fast is not None and [group.count for group in _groups(fast.document)] == [8]
        return
    changed = data.replace(*edit, 1)
    assert changed != data
    accepted = _sss_text_runs_agree(changed)
    checked = sss_reader.read_checked(changed)
    assert not accepted or checked.diagnostics == ()  # it declines all it would report


@pytest.mark.parametrize("target", WRITABLE, ids=lambda declaration: declaration.name)
def test_an_sss_group_converts_in_every_target_as_its_machines_do(
        target: FormatDeclaration) -> None:
    body = ("<Name>n{n}</Name><State>Drained</State><Opsys>linux</Opsys><Feature>ib</Feature>"
            "<Configured><Processors>8</Processors><Memory units=\"GB\">16</Memory>"
            "<Resource name=\"GPU\" type=\"a100\">2</Resource></Configured>")
    nodes = [f"<Node><Id>{n}</Id>{body.format(n=n)}</Node>" for n in range(1, 41)]
    nodes.append("<Node><Id>x1</Id><Configured><Processors>2</Processors></Configured></Node>")
    result = sss.read(("<Data>\n" + "\n".join(nodes) + "\n</Data>\n").encode())
    assert result.document is not None and result.document.environment is not None
    assert machine_count(result.document.environment) == 41
    _converts_as_its_machines(result, sss.FORMAT, target)


# ------------------------------------------------------------------------------ OpenDC setup


def _setup_document(racks: list[list[list[int]]]) -> bytes:
    return json.dumps({"name": "s", "rooms": [{"type": "SERVER", "objects": [
        {"type": "RACK", "machines": [{"cpus": cpus} for cpus in rack]} for rack in racks]}]},
        indent=2).encode()


def _setup_read_machine_by_machine(data: bytes, monkeypatch: pytest.MonkeyPatch) -> ReadResult:
    def single(machines: list[dict[str, Any]], kinds: object) -> tuple[Machine, ...]:
        return tuple(Machine(cpus=tuple(opendc_codec.CPU_TYPES[cpu] for cpu in machine["cpus"]))
                     for machine in machines)

    with monkeypatch.context() as patch:
        patch.setattr(opendc_codec, "_slots", single)
        return opendc_setup.read(data)


def test_setup_machines_with_the_same_cpus_are_one_group_read_as_machine_by_machine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    data = _setup_document([[[1, 1]] * 4 + [[2]] + [[1, 1]] * 2 + [[]] * 3, [], [[2]]])
    runs = opendc_setup.read(data)
    _agree(runs, _setup_read_machine_by_machine(data, monkeypatch), opendc_setup.FORMAT)
    assert [(group.count, len(group.template.cpus)) for group in _groups(runs.document)] == [
        (4, 2), (2, 2), (3, 0)]
    assert runs.locate("/environment/datacenters/0/rooms/0/racks/0/slots/2") != runs.locate(
        "/environment/datacenters/0/rooms/0/racks/0/slots/1")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents_with_runs() | setup_environments().map(
    lambda environment: Document(environment=environment)))
def test_setup_normalises_and_writes_groups_as_their_machines(document: Document) -> None:
    if document.environment is None:
        return
    grouped = replace(document, environment=compact(document.environment))
    assert grouped == document
    normal = opendc_setup.normal_form(grouped)
    assert normal == opendc_setup.normal_form(document)
    assert opendc_setup.normal_form_losses(grouped) == opendc_setup.normal_form_losses(document)
    assert opendc_setup.leaves_out(grouped) == opendc_setup.leaves_out(document)
    assert opendc_setup.write(grouped).data == opendc_setup.write(document).data
    assert conversion_losses(grouped, opendc_setup.FORMAT) == conversion_losses(
        document, opendc_setup.FORMAT)


@pytest.mark.parametrize("target", WRITABLE, ids=lambda declaration: declaration.name)
def test_a_setup_group_converts_in_every_target_as_its_machines_do(
        target: FormatDeclaration) -> None:
    result = opendc_setup.read(_setup_document([[[1, 1]] * 30 + [[2]], [[2, 2]] * 5]))
    _converts_as_its_machines(result, opendc_setup.FORMAT, target)


# ------------------------------------------------------------------------------ JGF


def _jgf_read_node_by_node(data: bytes, monkeypatch: pytest.MonkeyPatch) -> ReadResult:
    with monkeypatch.context() as patch:
        patch.setattr(jgf_codec._Run, "admits", lambda self, node, graph: False)
        return jgf.read(data)


def _copied(environment: Environment, times: list[int]) -> Environment:
    """Each machine followed by copies that differ in name, id and rank (``times``, cycled)."""
    serial = iter(range(10**6))
    counts = iter(times * 100)

    def copies(machine: Machine) -> list[Machine]:
        return [replace(machine, name=f"{machine.name}c{copy}",
                        id=None if machine.id is None else 20_000 + next(serial),
                        rank=None if machine.rank is None else machine.rank + 2000 * copy)
                for copy in range(next(counts))]

    return replace(environment, datacenters=tuple(replace(dc, rooms=tuple(replace(
        room, racks=tuple(replace(rack, slots=tuple(
            copy for machine in rack.slots if machine is not None for copy in copies(machine)))
            for rack in room.racks)) for room in dc.rooms)) for dc in environment.datacenters))


_NODE_CHANGES: tuple[Any, ...] = (
    lambda metadata: metadata.update(status=1),
    lambda metadata: metadata.update(properties={"x": ""}),
    lambda metadata: metadata.update(exclusive=True),
    lambda metadata: metadata.update(colour="red"),
    lambda metadata: metadata.update(rank=-1),
    lambda metadata: metadata.update(id=-1),
    lambda metadata: metadata.update(basename="other"),
    lambda metadata: metadata.update(size=2),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jgf_environments(), st.lists(st.integers(1, 4), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 400), st.integers(0, len(_NODE_CHANGES) - 1)),
                max_size=4), st.sampled_from([None, -1, 0, 7]))
def test_generated_jgf_graphs_read_as_node_by_node(
        environment: Environment, times: list[int], changes: list[tuple[int, int]],
        rank_below: int | None) -> None:
    written = jgf.write(Document(environment=_copied(environment, times)))
    assert written.ok
    value = json.loads(written.data)
    vertices = value["graph"]["nodes"]
    if rank_below is not None:  # every node's subtree stored, as in Fluxion's tiny.json
        for vertex in vertices:
            if vertex["metadata"]["type"] not in ("cluster", "rack", "node"):
                vertex["metadata"]["rank"] = rank_below
    nodes = [vertex for vertex in vertices if vertex["metadata"]["type"] == "node"]
    for position, change in changes:
        if position < len(vertices):
            # a node's own metadata, or a vertex's below one (its subtree no longer plain)
            target = nodes[position % len(nodes)] if nodes and change % 2 else vertices[position]
            _NODE_CHANGES[change](target["metadata"])
    data = json.dumps(value).encode()
    with pytest.MonkeyPatch.context() as monkeypatch:
        _agree(jgf.read(data), _jgf_read_node_by_node(data, monkeypatch), jgf.FORMAT)


@pytest.mark.corpus
def test_fluxion_graphs_read_as_node_by_node(corpus_dir: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    graphs = sorted((corpus_dir / "flux/flux-sched/t/data/resource/jgfs").rglob("*.json"))
    assert graphs
    grouped = 0
    for path in graphs:
        data = path.read_bytes()
        runs = jgf.read(data)
        _agree(runs, _jgf_read_node_by_node(data, monkeypatch), jgf.FORMAT)
        grouped += runs.document is not None and bool(_groups(runs.document))
    assert grouped  # Fluxion's own graphs have runs of identical nodes


def _jgf_cluster() -> bytes:
    template = Machine(cpus=(ProcessingUnit(cores=4, id=0), ProcessingUnit(cores=4, id=1)),
                       gpus=(ProcessingUnit(cores=1, id=0),),
                       memory=(StorageUnit(capacity_mb=16384.0),), features=("ib",))
    racks = tuple(Rack(id=r, name=f"rack{r}", slots=tuple(
        replace(template, id=n, name=f"node{n}", rank=n) for n in range(20 * r, 20 * r + 20)))
        for r in range(2))
    odd = Machine(id=99, name="login", cpus=(ProcessingUnit(cores=2, id=0),))
    racks += (Rack(id=2, name="rack2", slots=(odd,)),)
    document = Document(environment=Environment(datacenters=(Datacenter(
        id=0, name="c0", rooms=(Room(racks=racks),)),)))
    return jgf.write(document).data


@pytest.mark.parametrize("target", WRITABLE, ids=lambda declaration: declaration.name)
def test_a_jgf_group_converts_in_every_target_as_its_machines_do(
        target: FormatDeclaration) -> None:
    result = jgf.read(_jgf_cluster())
    assert [group.count for group in _groups(result.document)] == [20, 20]
    _converts_as_its_machines(result, jgf.FORMAT, target)
