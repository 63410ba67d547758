"""JGF's fast path (``dcx.formats.jgf.text_runs``: runs of node subtrees found in the text)
only accepts: whenever it gives a result, it is the checked path's (``codec.read_checked``)
document, diagnostics, places and written bytes. Generated graphs are written compact and
indented, with node metadata changed, and with digits changed anywhere in the text (the
only thing the fast path lets vary along a run); Fluxion's corpus graphs and the example
files are held to the same."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.core.diagnostics import ReadResult
from dcx.core.groups import MachineGroup, machine_parts
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
    Validity,
)
from dcx.formats import jgf
from dcx.formats.jgf import codec, text_runs
from dcx.parsing.jsonio import JsonLocator
from tests.strategies_flux import jgf_environments
from tests.test_read_runs import _NODE_CHANGES, _copied, _slot_pointers

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _fast(data: bytes) -> ReadResult | None:
    return text_runs.read(data, min_bytes=0)


def _agree_if_accepted(data: bytes) -> bool:
    """The fast path's result, if it gives one, is the checked path's; whether it gave one."""
    fast = _fast(data)
    if fast is None:
        return False
    checked = codec.read_checked(data)
    assert [repr(d) for d in fast.diagnostics] == [repr(d) for d in checked.diagnostics]
    assert fast.document == checked.document
    assert checked.document is not None and checked.document.environment is not None
    pointers = _pointers(checked.document.environment)
    # Asked out of order first: each line is counted from the nearest place asked before.
    for pointer in random.Random(len(data)).sample(pointers, len(pointers)) + pointers:
        assert fast.locate(pointer) == checked.locate(pointer), pointer
    assert jgf.write(fast.document).data == jgf.write(checked.document).data
    return True


def _pointers(environment: Environment) -> list[str]:
    """Every rack and slot (and one past the last of each), and places that are not one."""
    return [*_slot_pointers(environment), "/environment", "/environment/datacenters/0",
            "/environment/datacenters/0/rooms/0", "/environment/datacenters/0/rooms/0/racks/99",
            "/environment/datacenters/0/rooms/0/racks/0/slots/9999", "/workload",
            "/workload/jobs/0", "/environment/datacenters/0/rooms/0/racks/x", ""]


def _cluster(racks: int = 3, per_rack: int = 12, rank: bool = True) -> Document:
    template = Machine(cpus=(ProcessingUnit(cores=2, id=0), ProcessingUnit(cores=2, id=1)),
                       gpus=(ProcessingUnit(cores=1, id=0),),
                       memory=(StorageUnit(capacity_mb=16384.0),), features=("ib",))
    built = tuple(Rack(id=r, name=f"rack{r}", slots=tuple(
        replace(template, id=n, name=f"node{n}", rank=n if rank else None)
        for n in range(per_rack * r, per_rack * r + per_rack))) for r in range(racks))
    return Document(environment=Environment(datacenters=(Datacenter(
        id=0, name="c0", rooms=(Room(racks=built),)),)))


def _compact(data: bytes) -> bytes:
    return json.dumps(json.loads(data), separators=(",", ":")).encode()


def _groups(result: ReadResult) -> list[MachineGroup]:
    assert result.document is not None and result.document.environment is not None
    return [part for part in machine_parts(result.document.environment)
            if isinstance(part, MachineGroup)]


@pytest.mark.parametrize("layout", ["indented", "compact"])
@pytest.mark.parametrize("rank", [True, False])
def test_a_cluster_is_read_as_groups_by_the_fast_path(layout: str, rank: bool) -> None:
    data = jgf.write(_cluster(rank=rank)).data
    if layout == "compact":
        data = _compact(data)
    assert _agree_if_accepted(data)
    fast = _fast(data)
    assert fast is not None
    assert [group.count for group in _groups(fast)] == [12, 12, 12]


def test_small_files_and_other_layouts_are_left_to_the_checked_path() -> None:
    data = jgf.write(_cluster()).data
    assert text_runs.read(data) is None  # below MIN_BYTES
    value = json.loads(data)
    for changed in ({"writer": "fluxion:jgf", **value},
                    {"graph": {**value["graph"], "directed": True}},
                    {"graph": {"edges": value["graph"]["edges"],
                               "nodes": value["graph"]["nodes"]}}):
        assert _fast(json.dumps(changed).encode()) is None
    assert _fast(data.replace(b'"node1"', '"nöde1"'.encode())) is None  # not ASCII
    assert _agree_if_accepted(data.replace(b'"node1"', b'"n\\u00f6de1"'))


# Changes the fast path must see: each either breaks a run (it reads the rest as another
# run or vertex by vertex) or makes the file one the checked path reports.
_TEXT_CHANGES: tuple[tuple[bytes, bytes], ...] = (
    (b'"name":"node5"', b'"name":"node05"'),          # a leading zero in a name
    (b'"id":"60"', b'"id":"61"'),                     # a repeated vertex id
    (b'"target":"61"', b'"target":"9999"'),           # an edge to no vertex
    (b'"source":"48","target":"49"', b'"source":"47","target":"49"'),  # not the parent
    (b'/node5/socket1', b'/node6/socket1'),          # a vertex below another node
    (b'"containment":"/c0/rack0/node7"', b'"containment":"/c0/rack0/node6"'),
    (b'"uniq_id":70,', b'"uniq_id":70,"uniq_id":71,'),  # a repeated key
    (b'"size":16', b'"size":17'),                     # another memory size
    (b'"rank":8,', b'"rank":9,'),                     # another rank for one vertex
    (b'"name":"core3"', b'"name":"core33"'),          # another name below a node
    (b'{"id":"30",', b'{"id":"030",'),                # a vertex id with a leading zero
    (b'"subsystem":"containment"}},{', b'"subsystem":"power"}},{'),
    (b'"edges":[', b'"edges":[{"source":"0","target":"1"},'),  # an edge of another form
)


@pytest.mark.parametrize("change", _TEXT_CHANGES, ids=lambda change: change[1].decode())
def test_changed_text_is_read_as_the_checked_path_reads_it(change: tuple[bytes, bytes]
                                                           ) -> None:
    data = _compact(jgf.write(_cluster()).data)
    old, new = change
    assert old in data, old
    changed = data.replace(old, new, 1)
    _agree_if_accepted(changed)
    _agree_if_accepted(json.dumps(json.loads(changed), indent=1).encode()
                       if b'"uniq_id":70,"uniq_id"' not in changed else changed)


_EVERY_VERTEX: tuple[Any, ...] = (
    lambda metadata: metadata.pop("id", None),        # inferred from the vertex id
    lambda metadata: (metadata.pop("id", None), metadata.pop("uniq_id", None)),
    lambda metadata: metadata.pop("uniq_id", None),
    lambda metadata: metadata.pop("rank", None),
    lambda metadata: metadata.pop("name", None),
    lambda metadata: metadata.pop("basename", None),
    lambda metadata: metadata["paths"].update(power="/p" + metadata["paths"]["containment"]),
)


@pytest.mark.parametrize("change", range(len(_EVERY_VERTEX)))
@pytest.mark.parametrize("kinds", [("node",), ("socket", "core", "gpu", "memory")])
def test_metadata_left_to_defaults_is_read_as_the_checked_path_reads_it(
        change: int, kinds: tuple[str, ...]) -> None:
    value = json.loads(jgf.write(_cluster()).data)
    for vertex in value["graph"]["nodes"]:
        if vertex["metadata"]["type"] in kinds:
            _EVERY_VERTEX[change](vertex["metadata"])
    data = json.dumps(value, separators=(",", ":")).encode()
    _agree_if_accepted(data)


def test_a_repeated_key_in_every_edge_is_reported() -> None:
    data = _compact(jgf.write(_cluster()).data).replace(
        b'{"subsystem":"containment"}', b'{"subsystem":"containment","subsystem":"containment"}')
    assert _fast(data) is None
    assert [d.code for d in codec.read_checked(data).diagnostics] == ["json.duplicate-key"]


def _digit_changes(data: bytes, picks: list[tuple[int, int, int]]) -> bytes:
    """``data`` with digits replaced, dropped or added at the digit runs ``picks`` name."""
    text = bytearray(data)
    places = [index for index, byte in enumerate(text) if 48 <= byte <= 57]
    for pick, how, digit in sorted(picks, reverse=True):
        at = places[pick % len(places)]
        if how == 0:
            text[at] = 48 + digit
        elif how == 1:
            del text[at]
        else:
            text.insert(at, 48 + digit)
    return bytes(text)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jgf_environments(), st.lists(st.integers(1, 5), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 400), st.integers(0, len(_NODE_CHANGES) - 1)),
                max_size=3),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 2), st.integers(0, 9)),
                max_size=3),
       st.sampled_from([None, 0, 1]))
def test_generated_graphs_read_as_the_checked_path_reads_them(
        environment: Environment, times: list[int], changes: list[tuple[int, int]],
        digit_picks: list[tuple[int, int, int]], indent: int | None) -> None:
    written = jgf.write(Document(environment=_copied(environment, times)))
    assert written.ok
    value: Any = json.loads(written.data)
    vertices = value["graph"]["nodes"]
    nodes = [vertex for vertex in vertices if vertex["metadata"]["type"] == "node"]
    for position, change in changes:
        if position < len(vertices):
            target = nodes[position % len(nodes)] if nodes and change % 2 else vertices[position]
            _NODE_CHANGES[change](target["metadata"])
    data = json.dumps(value, indent=indent,
                      separators=(",", ":") if indent is None else None).encode()
    _agree_if_accepted(data)
    if digit_picks:
        _agree_if_accepted(_digit_changes(data, digit_picks))


def test_random_digit_changes_to_a_cluster() -> None:
    """Many single and double digit changes to one file: every result the fast path gives
    is the checked path's, and it still accepts most of them."""
    data = _compact(jgf.write(_cluster(racks=2, per_rack=6)).data)
    chooser = random.Random(18)
    accepted = 0
    for _ in range(150):
        picks = [(chooser.randrange(10**6), chooser.randrange(3), chooser.randrange(10))
                 for _ in range(chooser.randrange(1, 3))]
        accepted += _agree_if_accepted(_digit_changes(data, picks))
    assert accepted > 20


# ------------------------------------------------ runs across a change of digit count


def _numbered(first: int, per_rack: int, racks: int, rank: bool, sockets: int) -> Document:
    """Racks of nodes numbered from ``first`` (name, id and rank ``n``), ``sockets`` per
    node: a run's names, ids and ranks gain a digit where they cross 10, 100, 1000."""
    template = Machine(cpus=tuple(ProcessingUnit(cores=2, id=n) for n in range(sockets)),
                       memory=(StorageUnit(capacity_mb=4096.0),))
    built = tuple(Rack(id=r, name=f"rack{r}", slots=tuple(
        replace(template, id=n, name=f"node{n}", rank=n if rank else None)
        for n in range(first + per_rack * r, first + per_rack * (r + 1))))
        for r in range(racks))
    return Document(environment=Environment(datacenters=(Datacenter(
        id=0, name="c0", rooms=(Room(racks=built),)),)))


def _shifted(value: Any, shift: int) -> Any:
    """The graph with every vertex id and uniq_id ``shift`` higher (they too cross 100 or
    1000 inside a run)."""
    for vertex in value["graph"]["nodes"]:
        vertex["id"] = str(int(vertex["id"]) + shift)
        vertex["metadata"]["uniq_id"] += shift
    for edge in value["graph"]["edges"]:
        edge["source"], edge["target"] = (str(int(edge[end]) + shift)
                                          for end in ("source", "target"))
    return value


def _text(value: Any, indent: int | None) -> bytes:
    return json.dumps(value, indent=indent,
                      separators=(",", ":") if indent is None else None).encode()


def _walked(data: bytes) -> text_runs._Walk:
    """The fast path's walk of ``data``: the vertices it keeps and the runs it finds."""
    import numpy as np

    head = text_runs._HEAD.match(data)
    assert head is not None
    nodes_end, _, _ = text_runs._frame(data)
    return text_runs._walk(data, np.frombuffer(data, np.uint8), head.end(), nodes_end)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([1, 5, 93, 994, 9995]), st.integers(0, 6), st.integers(2, 14),
       st.integers(1, 2), st.booleans(), st.integers(1, 2),
       st.sampled_from([0, 85, 980, 9985]), st.integers(0, 12), st.sampled_from([None, 1]))
def test_a_run_continues_where_its_numbers_gain_a_digit(
        near: int, past: int, per_rack: int, racks: int, rank: bool, sockets: int,
        shift: int, shift_past: int, indent: int | None) -> None:
    """Node names, ids, ranks, vertex ids and uniq_ids that cross 10, 100, 1000 or 10000
    inside a rack: the rack's nodes are one run (the first node's block kept, every other
    node in the run), read as the checked path reads them."""
    written = jgf.write(_numbered(near + past, per_rack, racks, rank, sockets))
    data = _text(_shifted(json.loads(written.data), shift + shift_past), indent)
    assert _agree_if_accepted(data)
    walk = _walked(data)
    assert [run.values.shape[0] for run in walk.runs] == [per_rack - 1] * racks
    block = 1 + sockets * 3 + 1  # node, sockets with two cores each, memory
    assert len(walk.kept) == 1 + racks * (1 + block)


def _node_block(value: Any, name: str) -> list[Any]:
    """The vertices of node ``name`` and those below it."""
    vertices = value["graph"]["nodes"]
    node = next(vertex for vertex in vertices if vertex["metadata"]["name"] == name)
    path = node["metadata"]["paths"]["containment"]
    return [vertex for vertex in vertices
            if (vertex["metadata"]["paths"]["containment"] + "/").startswith(path + "/")]


def _renamed_to_leading_zero(block: list[Any]) -> None:
    for vertex in block:
        metadata = vertex["metadata"]
        metadata["paths"]["containment"] = metadata["paths"]["containment"].replace(
            "/node10", "/node010")
    block[0]["metadata"]["name"] = "node010"


def _dropped(value: Any, block: list[Any]) -> None:
    ids = {vertex["id"] for vertex in block}
    value["graph"]["nodes"] = [vertex for vertex in value["graph"]["nodes"]
                               if vertex["id"] not in ids]
    value["graph"]["edges"] = [edge for edge in value["graph"]["edges"]
                               if edge["target"] not in ids]


# Edits to node10's block, the first whose name has two digits.
_AT_THE_BOUNDARY: dict[str, Any] = {
    "another basename": lambda value, block: block[0]["metadata"].update(basename="nodx"),
    "another core name": lambda value, block: block[2]["metadata"].update(name="corf0"),
    "name node010": lambda value, block: block[0]["metadata"].update(name="node010"),
    "node010 in name and paths": lambda value, block: _renamed_to_leading_zero(block),
    "id 010": lambda value, block: block[0]["metadata"].update(id="010"),
    "a gap (no node10)": _dropped,
    "rank 9": lambda value, block: block[0]["metadata"].update(rank=9),
}


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("edit", list(_AT_THE_BOUNDARY))
def test_edits_where_the_numbers_gain_a_digit_read_as_the_checked_path_reads_them(
        edit: str, indent: int | None) -> None:
    value = json.loads(jgf.write(_numbered(3, 14, 1, True, 2)).data)
    _AT_THE_BOUNDARY[edit](value, _node_block(value, "node10"))
    data = _text(value, indent)
    if edit == "a gap (no node10)":
        assert _agree_if_accepted(data)
        assert [run.values.shape[0] for run in _walked(data).runs] == [12]
    else:
        _agree_if_accepted(data)
        assert len(_walked(data).runs) != 1  # node10 is not a member of node3's run


def test_an_unedited_rack_crossing_ten_is_one_run() -> None:
    data = _text(json.loads(jgf.write(_numbered(3, 14, 1, True, 2)).data), None)
    assert [run.values.shape[0] for run in _walked(data).runs] == [13]


# ------------------------------------------------------------------- places


@given(st.text(alphabet="ab\n", max_size=80), st.lists(st.integers(0, 80), max_size=12))
def test_lines_and_columns_are_the_json_locators(text: str, offsets: list[int]) -> None:
    lines = text_runs._Lines(text.encode())
    locator = JsonLocator(text)
    for offset in offsets:
        assert lines.line_col(min(offset, len(text))) == locator.line_col(
            min(offset, len(text)))


@pytest.mark.parametrize("indent", [None, 1])
def test_losses_are_listed_with_the_checked_paths_places(
        indent: int | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``dcx convert --losses`` of a file the fast path reads (its runs cross 10 and 100)
    prints what it prints when the checked path reads the file."""
    from dcx.cli.main import main

    value = json.loads(jgf.write(_numbered(7, 250, 2, True, 2)).data)
    source = tmp_path / "graph.json"
    source.write_bytes(_text(value, indent))
    assert source.stat().st_size >= text_runs.MIN_BYTES
    assert text_runs.read(source.read_bytes()) is not None
    printed = []
    for way in ("fast", "checked"):
        with pytest.MonkeyPatch.context() as monkeypatch:
            if way == "checked":
                monkeypatch.setattr(text_runs, "read", lambda data, min_bytes=0: None)
            target = tmp_path / f"{way}.xml"
            assert main(["convert", str(source), str(target), "--to", "sss", "--losses",
                         "--fill", "clock-rate=2.4GHz"]) == 0
        said = capsys.readouterr()
        printed.append((said.out, said.err.replace(target.name, "OUT"), target.read_bytes()))
    assert printed[0] == printed[1]
    assert "graph.json:" in printed[0][1]


@pytest.mark.corpus
def test_fluxion_graphs_read_as_the_checked_path_reads_them(corpus_dir: Path) -> None:
    graphs = sorted((corpus_dir / "flux/flux-sched/t/data/resource/jgfs").rglob("*.json"))
    assert graphs
    for path in graphs:
        data = path.read_bytes()
        _agree_if_accepted(data)
        _agree_if_accepted(_compact(data)) if _loads(data) else None


def _loads(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def test_example_files_read_as_the_checked_path_reads_them() -> None:
    examples = [path for path in EXAMPLES.rglob("*.json") if jgf.FORMAT.sniff(
        path.read_bytes()[:4096])]
    assert examples
    for path in examples:
        _agree_if_accepted(path.read_bytes())


@pytest.mark.parametrize("layout", ["indented", "compact"])
def test_a_validity_window_before_the_nodes_is_read_by_the_fast_path(layout: str) -> None:
    cluster = _cluster()
    assert cluster.environment is not None
    timed = Document(environment=replace(cluster.environment,
                                         validity=Validity(1676560542, 1676562342.5)))
    data = jgf.write(timed).data
    if layout == "compact":
        data = _compact(data)
    assert _agree_if_accepted(data)
    fast = _fast(data)
    assert fast is not None and fast.document is not None
    assert fast.document.environment is not None
    assert fast.document.environment.validity == Validity(1676560542, 1676562342.5)
    # a window the checks refuse is left to the checked path, which reports it
    backwards = data.replace(b"1676562342.5", b"1676560000")
    assert _fast(backwards) is None
    assert [d.code for d in codec.read_checked(backwards).diagnostics] == ["jgf.expiration"]
