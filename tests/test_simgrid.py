"""SimGrid platform XML 4.1: the example, clusters and radicals, the DOCTYPE, located errors,
normal forms and hypothesis round trips model -> SimGrid -> model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.converters.cli import main
from dcx.converters.registry import detect
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
)
from dcx.core.restrict import restrict, without_empty_parts
from dcx.formats import simgrid
from tests.strategies import Domain, documents

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples" / "simgrid").glob("*.xml"))
HEAD = ('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        '<platform version="4.1">\n')


def platform(body: str, head: str = HEAD) -> bytes:
    return f"{head}{body}\n</platform>\n".encode()


def only_errors(data: bytes) -> list[tuple[str, str]]:
    return [(d.code, d.pointer) for d in simgrid.read(data).diagnostics if d.is_error]


# ------------------------------------------------------------------------------ examples


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_read_and_round_trip(path: Path) -> None:
    data = path.read_bytes()
    assert detect(data, str(path)) is simgrid.FORMAT
    result = simgrid.read(data)
    assert result.ok and {d.code for d in result.diagnostics} <= {"simgrid.not-held"}
    written = simgrid.write(result.document)
    again = simgrid.read(written.data)
    assert again.diagnostics == () and again.document == result.document


@pytest.mark.corpus
def test_simgrid_repository_platforms_read_and_round_trip(corpus_dir: Path) -> None:
    """SimGrid's examples/platforms/*.xml, when the corpus has them: each reads (or fails
    with located errors, as files with deprecated elements do) and rewrites exactly."""
    folder = corpus_dir / "simgrid"
    if not folder.is_dir():
        pytest.skip(f"no simgrid/ in {corpus_dir} (simgrid/simgrid examples/platforms)")
    paths = sorted(folder.rglob("*.xml"))
    for path in paths:
        result = simgrid.read(path.read_bytes())
        if result.document is None:
            assert all(d.line is not None for d in result.diagnostics), path.name
            continue
        again = simgrid.read(simgrid.write(result.document).data)
        assert again.document == simgrid.normal_form(result.document), path.name
    assert paths


def test_clusters_expand_their_radical_and_keep_their_attributes() -> None:
    result = simgrid.read(EXAMPLES[0].read_bytes())
    racks = {rack.id: rack for rack in result.document.environment.racks()}
    compute = racks["compute"]
    assert [m.id for m in compute.machines] == [f"cn{n}" for n in (*range(8), 10, 11)]
    first = compute.machines[0]
    assert first.core_count == 32 and first.clock_rate_hz == 2.4e9
    assert first.extras == {"simgrid:prop:wattage_per_state": "95.0:190.0"}
    assert compute.extras["simgrid:bb_lat"] == "500ns"
    assert [m.id for m in racks["gpu"].machines] == ["gpu1.lab", "gpu2.lab"]
    assert racks["control"].machines[0].extras == {"simgrid:prop:role": "master"}
    assert result.document.environment.extras == {"simgrid:root": "dc"}


def test_a_root_zone_of_hosts_is_one_rack_named_like_it() -> None:
    data = platform('<zone id="z" routing="Floyd"><host id="7" speed="98.095Mf" core="4"/>'
                    '<host id="b" speed="0f"/></zone>')
    result = simgrid.read(data)
    (rack,) = result.document.environment.racks()
    assert rack.id == "z" and [m.id for m in rack.machines] == [7, "b"]
    assert rack.machines[0].clock_rate_hz == 98.095e6 and rack.machines[1].clock_rate_hz is None
    assert result.document.environment.extras == {"simgrid:root": "z", "simgrid:routing": "Floyd"}
    assert simgrid.read(simgrid.write(result.document).data).document == result.document


@pytest.mark.parametrize("text,numbers", [
    ("0-3,7", [0, 1, 2, 3, 7]), (" 1 - 2 , 5 ", [1, 2, 5]), ("3-1", []), ("0", [0])])
def test_radicals(text: str, numbers: list[int]) -> None:
    assert simgrid.radical_numbers(text) == numbers


@pytest.mark.parametrize("text", ["1-2-3", "a", "", "0-4294967296", "0-99999999", "1;2"])
def test_radicals_simgrid_cannot_read_or_too_large_are_refused(text: str) -> None:
    assert isinstance(simgrid.radical_numbers(text), str)


def test_power_states_keep_the_selected_speed_with_a_warning() -> None:
    result = simgrid.read(platform('<zone id="z" routing="Full">'
                                   '<host id="h" speed="1Gf, 500Mf" pstate="1"/></zone>'))
    assert result.ok and [d.code for d in result.diagnostics] == ["simgrid.not-held"]
    assert next(result.document.environment.machines()).clock_rate_hz == 5e8


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize("body,code,pointer", [
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf"/><host id="a" speed="1Gf"/></zone>',
     "simgrid.duplicate-id", "/platform/zone/host[2]/@id"),
    ('<zone id="z" routing="Full"><host id="a" speed="2.4GF"/></zone>', "simgrid.unit",
     "/platform/zone/host/@speed"),
    ('<zone id="z" routing="Full"><host id="a" speed="1f"/><zone id="y" routing="Full"/></zone>',
     "simgrid.mixed-zone", "/platform/zone/zone"),
    ('<zone id="z" routing="Full"><cluster id="c" prefix="n" suffix="" radical="0-99999999" '
     'speed="1Gf" bw="1GBps" lat="1us"/></zone>', "simgrid.radical",
     "/platform/zone/cluster/@radical"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf" pstate="2"/></zone>',
     "simgrid.pstate", "/platform/zone/host/@pstate"),
    ('<zone id="z" routing="Full"><host id="a" speed="1Gf" pstate="inf"/></zone>',
     "simgrid.pstate", "/platform/zone/host/@pstate"),
    ('<zone id="z" routing="Full"/><zone id="y" routing="Full"/>', "simgrid.root-zones",
     "/platform/zone[2]"),
    ('<zone id="z" routing="Shortest"/>', "simgrid.routing", "/platform/zone/@routing"),
    ('<AS id="z" routing="Full"/>', "xsd.invalid", "/platform/AS"),
])
def test_bad_input_is_a_located_error(body: str, code: str, pointer: str) -> None:
    data = platform(body)
    result = simgrid.read(data)
    assert result.document is None
    (problem,) = [d for d in result.diagnostics if d.is_error]
    assert (problem.code, problem.pointer) == (code, pointer)
    assert problem.line == 4 and problem.column is not None


def test_the_unit_error_suggests_the_right_case() -> None:
    (problem,) = simgrid.read(platform('<zone id="z" routing="Full">'
                                       '<host id="a" speed="2.4GF"/></zone>')).diagnostics
    assert problem.hint == "did you mean 'Gf'?"


def test_old_versions_and_internal_dtds_are_refused() -> None:
    for version in ("3", "4.2", "inf", "nan", "x"):
        assert only_errors(platform('<zone id="z" routing="Full"/>',
                                    HEAD.replace("4.1", version))) == [("simgrid.version",
                                                                        "/platform/@version")]
    entity = HEAD.replace('simgrid.dtd">', 'simgrid.dtd" [<!ENTITY x "y">]>')
    assert [d.code for d in simgrid.read(platform("", entity)).diagnostics] == ["xml.dtd"]
    other = HEAD.replace("DOCTYPE platform", "DOCTYPE html")
    assert [d.code for d in simgrid.read(platform("", other)).diagnostics] == ["xml.dtd"]


# ------------------------------------------------------------------------------ normal form


def _environment(*racks: Rack, **extras: Any) -> Document:
    return Document(environment=Environment(
        datacenters=(Datacenter(rooms=(Room(racks=racks),)),), extras=extras))


def test_ids_are_filled_in_and_clashes_renamed() -> None:
    machines = (Machine(name="a", cpus=(ProcessingUnit(cores=2, clock_rate_hz=1e9),)),
                Machine(id="7", cpus=(ProcessingUnit(cores=2),)), Machine(id="k"))
    document = _environment(Rack(id="k", slots=machines), Rack())
    normal = simgrid.normal_form(document)
    racks = list(normal.environment.racks())
    assert [m.id for m in racks[0].machines] == ["a", "node2", "k"]
    assert [rack.id for rack in racks] == ["rack1", "rack2"]
    assert [m.name for m in racks[0].machines] == ["a", "node2", "k"]
    assert simgrid.normal_form_losses(document) == {"machine.id", "machine.cpus", "rack.id"}
    written = simgrid.read(simgrid.write(document).data).document
    assert written == restrict(normal, simgrid.HOLDS, "simgrid")


def test_a_rack_that_no_longer_fits_its_cluster_becomes_a_zone() -> None:
    result = simgrid.read(EXAMPLES[0].read_bytes())
    environment = result.document.environment
    racks = list(environment.racks())
    gpu = racks[2]
    odd = Machine(id="other", cpus=(ProcessingUnit(cores=1, clock_rate_hz=1e9),))
    changed = _environment(racks[0], racks[1], Rack(id=gpu.id, slots=(*gpu.slots, odd),
                                                    extras=gpu.extras), **environment.extras)
    assert simgrid.normal_form_losses(changed) == {"rack.extras"}
    assert b'<zone id="gpu" routing="Full">' in simgrid.write(changed).data


# ------------------------------------------------------------------------------ round trips


@st.composite
def cluster_environments(draw: Any) -> Environment:
    """Platforms of clusters and host zones in SimGrid's normal form."""
    racks = []
    for number in range(draw(st.integers(0, 4))):
        cores = draw(st.integers(1, 256))
        clock = draw(st.none() | st.integers(1, 10**10).map(float)
                     | st.floats(1e3, 1e12, allow_nan=False))
        props = draw(st.dictionaries(st.sampled_from(["simgrid:prop:role", "simgrid:prop:w:x"]),
                                     st.text("abc:. 019", max_size=5), max_size=2))
        if draw(st.booleans()):
            numbers = draw(st.lists(st.integers(0, 10**4), min_size=1, max_size=8, unique=True))
            prefix = f"c{number}-"
            machines = tuple(Machine(id=f"{prefix}{n}.x", name=f"{prefix}{n}.x", extras=dict(props),
                                     cpus=(ProcessingUnit(cores=cores, clock_rate_hz=clock),))
                             for n in numbers)
            extras = {"simgrid:prefix": prefix, "simgrid:suffix": ".x", "simgrid:bw": "1GBps",
                      "simgrid:lat": "1us"}
            racks.append(Rack(id=f"cluster{number}", slots=machines, extras=extras))
        else:
            machines = tuple(Machine(id=f"h{number}-{n}", name=f"h{number}-{n}", extras=dict(props),
                                     cpus=(ProcessingUnit(cores=cores, clock_rate_hz=clock),))
                             for n in range(draw(st.integers(0, 3))))
            routing = draw(st.sampled_from([{}, {"simgrid:routing": "Floyd"}]))
            racks.append(Rack(id=f"zone{number}", slots=machines, extras=routing))
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=tuple(racks)),)),),
                       extras={"simgrid:root": "top"})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_environments())
def test_model_to_simgrid_to_model_is_identity_on_its_normal_form(
        environment: Environment) -> None:
    document = Document(environment=environment)
    assert simgrid.normal_form(document) == document
    result = simgrid.read(simgrid.write(document).data)
    assert result.diagnostics == ()
    assert result.document == document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(Domain(holds=simgrid.HOLDS | {"machine.extras"},
                        whole_numbers=False)))
def test_any_document_reads_back_as_its_normal_form_restricted(document: Document) -> None:
    expected = restrict(simgrid.normal_form(document), simgrid.HOLDS, "simgrid")
    result = simgrid.read(simgrid.write(document).data)
    assert [d for d in result.diagnostics if d.code != "simgrid.not-held"] == []
    assert without_empty_parts(result.document, simgrid.HOLDS) == without_empty_parts(
        expected, simgrid.HOLDS)


# ------------------------------------------------------------------------------ docs


def test_the_format_page_shows_the_mapping_and_the_speed_choice() -> None:
    import sys

    sys.path.insert(0, str(REPO / "site" / "hooks"))
    from dcxdocs import formats_pages

    page = formats_pages.spec_page(simgrid.FORMAT)
    assert "## Model mapping" in page and "one flop per\ncycle" in page
    assert "\n\n| SimGrid | model |\n|---|---|\n| root `zone` |" in page
    assert "| `host speed` | the CPU's `clock_rate_hz` (see Speed); `0f` is no clock rate |" \
        in page


# ------------------------------------------------------------------------------ CLI


def test_environment_to_simgrid_and_back(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    there, back = tmp_path / "p.xml", tmp_path / "e.json"
    source = REPO / "examples/environment/small-cluster.json"
    assert main(["convert", str(source), str(there), "--to", "simgrid"]) == 0
    assert b'<host id="node001" speed="2.4Gf" core="16"/>' in there.read_bytes()
    assert main(["validate", "--strict", str(there)]) == 0
    assert main(["convert", str(there), str(back), "--to", "environment"]) == 0
    assert main(["validate", "--strict", str(back)]) == 0
    capsys.readouterr()


def test_losses_are_at_the_host_or_cluster_that_made_the_machine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--losses names where the element each first dropped value was read from starts: a
    host, or for any machine of a cluster the <cluster>; a rack is its zone or cluster.
    Elements are counted in the text in document order, those inside skipped elements (a
    <host> in an <actor>) and comments (not elements) too."""
    source = tmp_path / "in.xml"
    source.write_bytes(platform(
        '<config><host id="skipped"/></config>\n'
        '<zone id="AS0" routing="Full">\n'
        '  <!-- <host id="commented"/> -->\n'
        '  <zone id="small" routing="Full">\n'
        '    <host id="h1" speed="1Gf"/><host id="h2" speed="1Gf"/>\n'
        '  </zone>\n'
        '  <cluster id="big" prefix="c-" suffix="" radical="0-3" speed="1Gf" bw="125MBps"\n'
        '           lat="50us">\n'
        '    <prop id="role" value="compute"/>\n'
        '  </cluster>\n'
        '</zone>'))
    capsys.readouterr()
    assert main(["convert", str(source), str(tmp_path / "out.xml"), "--to", "sss",
                 "--losses"]) == 0
    lines = capsys.readouterr().err.splitlines()
    rack = "/environment/datacenters/0/rooms/0/racks"
    assert f"  machine.extras: 4 values (first: {source}:10:3, {rack}/1/slots/0): unknown " \
        "machine keys" in lines, lines
    assert f"  rack.id: 2 values (first: {source}:7:3, {rack}/0): rack id" in lines, lines
    located = simgrid.read(source.read_bytes())
    assert located.locate(f"{rack}/0/slots/1") == (8, 32)
    assert located.locate(f"{rack}/1/slots/3") == (10, 3)
    assert located.locate(f"{rack}/1/slots/4") == (None, None)
    assert located.locate("/environment") == (5, 1)
