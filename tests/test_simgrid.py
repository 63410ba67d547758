"""SimGrid platform XML 4.1: the example, clusters and radicals, the DOCTYPE, located errors,
normal forms and hypothesis round trips model -> SimGrid -> model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main
from dcx.converters.registry import detect
from dcx.core.groups import MachineGroup
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
    assert result.ok and result.diagnostics == ()
    written = simgrid.write(result.document)
    again = simgrid.read(written.data)
    assert again.diagnostics == () and again.document == simgrid.normal_form(result.document)


@pytest.mark.corpus
def test_simgrid_repository_platforms_read_and_round_trip(corpus_dir: Path) -> None:
    """SimGrid's own platforms (examples/platforms, teshsuite/platforms and the version 3
    files of SimGrid 3.11): every one reads without an error, as SimGrid reads them (its
    tesh__bogus_* files are broken in their routes, which dcx does not keep), without a
    warning but for the version 3 ones SimGrid 3.32 refuses, and rewrites exactly."""
    folder = corpus_dir / "upstream" / "simgrid"
    if not folder.is_dir():
        pytest.skip(f"no upstream/simgrid/ in {corpus_dir} (simgrid/simgrid platforms)")
    paths = sorted(folder.glob("*.xml"))
    for path in paths:
        result = simgrid.read(path.read_bytes())
        assert result.ok, (path.name, [d.render() for d in result.diagnostics if d.is_error])
        if not path.name.startswith("v3_"):  # what SimGrid 3.32 loads passes validate --strict
            assert result.diagnostics == (), (path.name, result.diagnostics)
        else:
            assert {d.code for d in result.diagnostics} >= {"simgrid.old-version",
                                                             "simgrid.doctype"}
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
    assert result.document.environment.extras == {"simgrid:root": "dc",
                                                  "simgrid:not-kept": "<link>, <zoneRoute>"}


def test_a_root_zone_of_hosts_is_one_rack_named_like_it() -> None:
    data = platform('<zone id="z" routing="Floyd"><host id="7" speed="98.095Mf" core="4"/>'
                    '<host id="b" speed="0f"/></zone>')
    result = simgrid.read(data)
    (rack,) = result.document.environment.racks()
    assert rack.id == "z" and [m.id for m in rack.machines] == [7, "b"]
    assert rack.machines[0].clock_rate_hz == 98.095e6 and rack.machines[1].clock_rate_hz is None
    assert result.document.environment.extras == {"simgrid:root": "z", "simgrid:routing": "Floyd"}
    assert [d.code for d in result.diagnostics] == ["simgrid.no-speed"]
    again = simgrid.read(simgrid.write(result.document).data).document
    assert again == simgrid.normal_form(result.document)
    assert [m.id for m in again.environment.machines()] == [7]  # no host without speed


@pytest.mark.parametrize("text,numbers", [
    ("0-3,7", [0, 1, 2, 3, 7]), (" 1 - 2 , 5 ", [1, 2, 5]), ("3-1", []), ("0", [0])])
def test_radicals(text: str, numbers: list[int]) -> None:
    assert simgrid.radical_numbers(text) == numbers


@pytest.mark.parametrize("text", ["1-2-3", "a", "", "0-4294967296", "0-99999999", "1;2"])
def test_radicals_simgrid_cannot_read_or_too_large_are_refused(text: str) -> None:
    assert isinstance(simgrid.radical_numbers(text), str)


def test_power_states_are_kept_whole_with_the_selected_speed_as_clock() -> None:
    result = simgrid.read(platform('<zone id="z" routing="Full">'
                                   '<host id="h" speed="1Gf, 500Mf" pstate="1"/></zone>'))
    assert result.ok and result.diagnostics == ()
    machine = next(result.document.environment.machines())
    assert machine.clock_rate_hz == 5e8
    assert machine.extras == {"simgrid:speeds": "1Gf, 500Mf", "simgrid:pstate": "1"}
    written = simgrid.write(result.document).data
    assert b'<host id="h" speed="1Gf, 500Mf" pstate="1"/>' in written


ENERGY_HOST = ('<zone id="z" routing="Full"><host id="h" speed="100Mf,50Mf,20Mf">'
               '<prop id="wattage_per_state" value="95:200,93:170,90:150"/>'
               '<prop id="wattage_off" value="10"/></host></zone>')


def test_power_states_are_written_with_their_wattages_or_neither() -> None:
    """SimGrid's energy plugin aborts on "Found 3 energetic profiles for 1 pstates": dcx
    rewrote energy_boot.xml and energy_cluster.xml with one speed and three wattages."""
    document = simgrid.read(platform(ENERGY_HOST)).document
    assert simgrid.normal_form_losses(document) == frozenset()
    written = simgrid.write(document).data
    assert b'speed="100Mf,50Mf,20Mf"' in written and b'value="95:200,93:170,90:150"' in written
    # the clock changed (or came from elsewhere): one speed, so no three wattages either
    machine = next(document.environment.machines())
    faster = replace(machine, cpus=(replace(machine.cpus[0], clock_rate_hz=2e8),))
    changed = _environment(Rack(id="z", slots=(faster,)))
    assert simgrid.normal_form_losses(changed) == {"machine.extras"}
    written = simgrid.write(changed).data
    assert b'speed="200Mf"' in written and b"wattage_per_state" not in written
    assert b'<prop id="wattage_off" value="10"/>' in written
    # a wattage list of another length than the speeds is not written either
    one = _environment(Rack(id="z", slots=(Machine(
        id="h", name="h", cpus=(ProcessingUnit(cores=1, clock_rate_hz=1e8),),
        extras={"simgrid:prop:wattage_per_state": "95:200,93:170"}),)))
    assert b"wattage_per_state" not in simgrid.write(one).data


def test_a_cluster_keeps_its_power_states() -> None:
    body = ('<zone id="z" routing="Full"><cluster id="c" prefix="n" suffix="" radical="1-2" '
            'speed="100Mf,50Mf" core="4" bw="125MBps" lat="50us">'
            '<prop id="wattage_per_state" value="100:200, 93:170"/></cluster></zone>')
    document = simgrid.read(platform(body)).document
    written = simgrid.write(document).data
    assert b'radical="1-2" speed="100Mf,50Mf" core="4"' in written
    assert simgrid.read(written).document == simgrid.normal_form(document)


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
    ('<zone id="z" routing="Full"><include file="x.xml"/></zone>', "xsd.invalid",
     "/platform/zone/include"),
    ('<zone id="z" routing="Full"><host id="a" power="1Gf"/></zone>',
     "simgrid.speed-attribute", "/platform/zone/host/@power"),
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
    for version in ("2", "4.2", "inf", "nan", "x"):
        assert only_errors(platform('<zone id="z" routing="Full"/>',
                                    HEAD.replace("4.1", version))) == [("simgrid.version",
                                                                        "/platform/@version")]
    entity = HEAD.replace('simgrid.dtd">', 'simgrid.dtd" [<!ENTITY x "y">]>')
    assert [d.code for d in simgrid.read(platform("", entity)).diagnostics] == ["xml.dtd"]
    other = HEAD.replace("DOCTYPE platform", "DOCTYPE html")
    assert [d.code for d in simgrid.read(platform("", other)).diagnostics] == ["xml.dtd"]


# ------------------------------------------------------------------ versions 3 and 4, dialects

OLD_DTD = "http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd"


def machine_names(data: bytes) -> list[str]:
    result = simgrid.read(data)
    assert result.ok, result.diagnostics
    return [str(m.name) for rack in result.document.environment.racks()
            for m in rack.machines]


def test_the_old_dtd_url_is_never_fetched_and_a_blank_line_may_precede_the_declaration(
) -> None:
    """Batsim's and SimGrid's older platforms name the gforge DTD over http (libxml2 tried
    to fetch it: "Attempt to load network entity"); some start with a blank line."""
    head = HEAD.replace("https://simgrid.org/simgrid.dtd", OLD_DTD)
    body = '<zone id="z" routing="Full"><host id="a" speed="1Gf"/></zone>'
    for start in ("", "\n", "  \n\t"):
        data = platform(body, start + head)
        result = simgrid.read(data)
        assert result.ok and result.diagnostics == (), start
        lines = start.count("\n")
        assert result.locate("/environment/datacenters/0/rooms/0/racks/0/slots/0") == (
            4 + lines, 29)
    # elsewhere, XML's rule stands: a declaration after text is no declaration
    late = platform(body, "<!-- c -->" + head)
    assert [d.code for d in simgrid.read(late).diagnostics] == ["xml.syntax"]


def test_version_4_cabinets_in_as_zones_are_hosts() -> None:
    """SimGrid's meta_cluster shape: version 4, <AS> zones of routing Cluster whose hosts
    come from <cabinet>s, an <ASroute> between them: 60 hosts, one core each."""
    cabinets = "".join(
        f'<cabinet id="cab{n}" prefix="host-" suffix=".c{c}" speed="1Gf" bw="125MBps" '
        f'lat="100us" radical="{10 * n + 1}-{10 * n + 10}"/>'
        for c in (1, 2) for n in range(3)).replace('/><cabinet id="cab0" prefix="host-" '
                                                   'suffix=".c2"', '/>\n<cabinet id="cab0" '
                                                   'prefix="host-" suffix=".c2"')
    first, second = cabinets.split("\n")
    body = (f'<AS id="AS0" routing="Full"><AS id="c1" routing="Cluster">{first}'
            '<router id="r1"/><backbone id="b1" bandwidth="2.25GBps" latency="500us"/></AS>'
            f'<AS id="c2" routing="Cluster">{second}<router id="r2"/></AS>'
            '<link id="l" bandwidth="1GBps" latency="5us"/>'
            '<ASroute src="c1" dst="c2" gw_src="r1" gw_dst="r2"><link_ctn id="l"/></ASroute>'
            '</AS>')
    data = platform(body, HEAD.replace('"4.1"', '"4"').replace(
        "https://simgrid.org/simgrid.dtd", OLD_DTD))
    names = machine_names(data)
    assert len(names) == 60 and names[:2] == ["host-1.c1", "host-2.c1"]
    assert names[-1] == "host-30.c2"
    racks = list(simgrid.read(data).document.environment.racks())
    assert [r.id for r in racks] == ["c1", "c2"]
    assert racks[0].machines[0].core_count == 1 and racks[0].machines[0].clock_rate_hz == 1e9


def test_batsim_cluster_locality_cabinets_share_an_id_and_the_master_is_one() -> None:
    """Batsim's cluster_locality shape: cabinets of one zone reuse the id "cabinet1" (their
    hosts' names differ), and the master is a cabinet of radical 0-0."""
    cabinets = "".join(f'<cabinet id="cabinet1" prefix="{p}" suffix="" speed="3Gf" '
                       'bw="56Gbps" lat="1us" radical="10-25"/>' for p in ("algol", "boo"))
    body = ('<zone id="AS0" routing="Full"><zone id="cl" routing="Cluster">' + cabinets
            + '<cabinet id="cabinet1" prefix="master_host" suffix="" speed="3Gf" bw="56Gbps" '
            'lat="1us" radical="0-0"/><router id="r"/></zone></zone>')
    names = machine_names(platform("\n" + body))
    assert len(names) == 33 and names[-1] == "master_host0" and names[16] == "boo10"


def test_version_3_reads_power_as_speed_with_a_warning() -> None:
    body = ('<AS id="AS0" routing="Full"><AS id="h" routing="Full"><host id="a" power="2Gf"/>'
            '</AS><cluster id="c" prefix="n" suffix="" radical="0-1" power="1000000000" '
            'bw="1" lat="0"/></AS>')
    result = simgrid.read(platform(body, HEAD.replace('"4.1"', '"3"')))
    assert result.document is not None and not any(d.is_error for d in result.diagnostics)
    codes = [d.code for d in result.diagnostics]
    assert codes[0] == "simgrid.old-version" and "simgrid.unitless" in codes
    speeds = [m.clock_rate_hz for r in result.document.environment.racks() for m in r.machines]
    assert speeds == [2e9, 1e9, 1e9]
    assert only_errors(platform('<AS id="AS0" routing="Full"><host id="a" speed="2Gf"/></AS>',
                                HEAD.replace('"4.1"', '"3"'))) == [
        ("simgrid.speed-attribute", "/platform/AS/host/@speed")]


def test_peers_are_hosts_of_one_core() -> None:
    body = ('<zone id="z" routing="Vivaldi">'
            '<peer id="p1" coordinates="1 2 3" speed="730Mf" bw_in="13MBps" bw_out="1MBps" '
            'lat="500us"/><peer id="p2" speed="1Gf" bw_in="1MBps" bw_out="1MBps"/></zone>')
    result = simgrid.read(platform(body))
    rack, = result.document.environment.racks()
    assert [(m.name, m.core_count, m.clock_rate_hz) for m in rack.machines] == [
        ("p1", 1, 730e6), ("p2", 1, 1e9)]


# ------------------------------------------------------------------------------ normal form


def _environment(*racks: Rack, **extras: Any) -> Document:
    return Document(environment=Environment(
        datacenters=(Datacenter(rooms=(Room(racks=racks),)),), extras=extras))


def test_ids_are_filled_in_and_clashes_renamed() -> None:
    machines = (Machine(name="a", cpus=(ProcessingUnit(cores=2, clock_rate_hz=1e9),)),
                Machine(id="7", cpus=(ProcessingUnit(cores=2, clock_rate_hz=1e9),)),
                Machine(id="k", cpus=(ProcessingUnit(cores=0, clock_rate_hz=1e9),)))
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
                                                    extras=gpu.extras),
                           **{key: value for key, value in environment.extras.items()
                              if key != simgrid.NOT_KEPT_KEY})
    assert simgrid.normal_form_losses(changed) == {"rack.extras"}
    assert b'<zone id="gpu" routing="Full">' in simgrid.write(changed).data


# ------------------------------------------------------------------------------ round trips


@st.composite
def cluster_environments(draw: Any) -> Environment:
    """Platforms of clusters and host zones in SimGrid's normal form."""
    racks = []
    for number in range(draw(st.integers(0, 4))):
        cores = draw(st.integers(1, 256))
        clock = draw(st.integers(1, 10**10).map(float) | st.floats(1e3, 1e12, allow_nan=False))
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
    assert result.diagnostics == ()
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
        "machine keys: simgrid:prop:role" in lines, lines
    assert f"  rack.id: 2 values (first: {source}:7:3, {rack}/0): rack id (environment: rack " \
        "id; jgf: rack vertex id; simgrid: zone/@id)" in lines, lines
    located = simgrid.read(source.read_bytes())
    assert located.locate(f"{rack}/0/slots/1") == (8, 32)
    assert located.locate(f"{rack}/1/slots/3") == (10, 3)
    assert located.locate(f"{rack}/1/slots/4") == (None, None)
    assert located.locate("/environment") == (5, 1)


# ------------------------------------------------- validation judges the file; speeds needed


def test_what_the_model_does_not_keep_is_a_loss_of_convert_not_a_warning_of_validate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The example's link and zoneRoute are SimGrid's and valid: validate --strict passes;
    convert --losses says they are not kept, where the first of them is."""
    example = REPO / "examples/simgrid/two-clusters.xml"
    capsys.readouterr()
    assert main(["validate", "--strict", str(example)]) == 0
    result = simgrid.read(example.read_bytes())
    assert result.document.environment.extras[simgrid.NOT_KEPT_KEY] == "<link>, <zoneRoute>"
    for target in ("simgrid", "sss"):
        capsys.readouterr()
        assert main(["convert", str(example), str(tmp_path / f"out.{target}"), "--to", target,
                     "--losses"]) == 0
        lines = capsys.readouterr().err.splitlines()
        assert any(line.startswith("  environment.extras: ") for line in lines), lines


def test_a_host_without_speed_is_warned_of_unless_batsim_stores_on_it() -> None:
    body = ('<zone id="z" routing="Full"><host id="a" speed="0f"/>'
            '<host id="s" speed="0f"><prop id="role" value="storage"/></host>'
            '<host id="c" speed="1Gf"/></zone>')
    result = simgrid.read(platform(body))
    assert result.ok
    assert [(d.code, d.pointer) for d in result.diagnostics] == [
        ("simgrid.no-speed", "/platform/zone/host[1]/@speed")]
    cluster = ('<zone id="z" routing="Full"><cluster id="k" prefix="n" suffix="" radical="0-1" '
               'speed="0" bw="1GBps" lat="0s"/></zone>')
    assert [d.code for d in simgrid.read(platform(cluster)).diagnostics] == ["simgrid.no-speed"]


def test_validate_strict_flags_a_host_without_speed(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.xml"
    path.write_bytes(platform('<zone id="z" routing="Full"><host id="a" speed="0f"/></zone>'))
    assert main(["validate", str(path)]) == 0
    assert main(["validate", "--strict", str(path)]) == 1
    assert "simgrid" in capsys.readouterr().err


def test_machines_without_a_clock_are_not_written_and_the_conversion_hints_at_fill(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Slurm states no clock: SimGrid would get speed="0f" hosts, which never finish work."""
    storage = Machine(id="s", name="s", cpus=(ProcessingUnit(cores=1),),
                      extras={"simgrid:prop:role": "storage"})
    document = _environment(Rack(id="r", slots=(
        Machine(id="a", name="a", cpus=(ProcessingUnit(cores=4),)), storage,
        Machine(id="b", name="b", cpus=(ProcessingUnit(cores=4, clock_rate_hz=2e9),)))))
    kept = [m.id for m in simgrid.normal_form(document).environment.machines()]
    assert kept == ["s", "b"]
    assert "cpu.clock_rate_hz" in simgrid.normal_form_losses(document)
    assert b'speed="0f"' in simgrid.write(document).data  # the storage host only
    assert b'id="a"' not in simgrid.write(document).data
    assert "1 of 3 machines lack it (first: a)" in simgrid.leaves_out(document)
    source = tmp_path / "slurm.conf"
    source.write_text("NodeName=cn[1-4] CPUs=8 RealMemory=1000\n")
    capsys.readouterr()
    assert main(["convert", str(source), str(tmp_path / "p.xml"), "--to", "simgrid"]) == 1
    assert "--fill clock-rate=" in capsys.readouterr().err
    assert main(["convert", str(source), str(tmp_path / "p.xml"), "--to", "simgrid",
                 "--fill", "clock-rate=2GHz"]) == 0
    assert (tmp_path / "p.xml").read_bytes().count(b'speed="2Gf"') == 4


# ------------------------------------------------------------------------------ the peer


def _peer() -> Any:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("peer_simgrid",
                                                  REPO / "tests/peers/peer_simgrid.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("peer_simgrid", module)  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return sys.modules["peer_simgrid"]


def test_the_peer_compares_hosts_speeds_cores_and_finish_times_with_what_dcx_reads() -> None:
    """The SimGrid peer's comparison, on a report shaped like its child's (SimGrid itself
    is not needed here: nox -s peers runs it)."""
    peer = _peer()
    hosts, problem, energy = peer.dcx_hosts(platform(
        '<zone id="z" routing="Full"><host id="a" speed="2Gf" core="4"/>'
        '<host id="b" speed="1Gf"><prop id="wattage_per_state" value="90:100"/></host>'
        '</zone>'))
    assert problem is None and energy and hosts == {"a": (2e9, 4), "b": (1e9, 1)}
    agreeing = {"hosts": [{"name": "a", "speed": 2e9, "cores": 4},
                          {"name": "b", "speed": 1e9, "cores": 1}],
                "simulated": ["a", "b"], "finished": {"a": 0.5, "b": 1.0}, "links": {}}
    assert peer.disagreements(hosts, agreeing) == []
    differing = {"hosts": [{"name": "a", "speed": 2.4e9, "cores": 4},
                           {"name": "c", "speed": 1e9, "cores": 2}],
                 "simulated": ["a", "c"], "finished": {"a": 0.6}, "links": {}}
    found = peer.disagreements(hosts, differing)
    assert "hosts dcx does not read: c" in found and "hosts SimGrid does not have: b" in found
    assert any(line.startswith("host a: SimGrid speed 2400000000.0") for line in found)
    assert "host c: the actor never finished 1e+09 flops" in found
    assert any("finished at 0.6 s, not work / speed" in line for line in found)
    assert peer.dcx_hosts(b"<platform/>")[1].startswith("dcx cannot read it:")
    # a host without speed (what Slurm -> SimGrid wrote) fails; a Batsim storage host not
    hosts, _, _ = peer.dcx_hosts(platform(
        '<zone id="z" routing="Full"><host id="a" speed="0f"/>'
        '<host id="s" speed="0f"><prop id="role" value="storage"/></host></zone>'))
    report = {"hosts": [{"name": "a", "speed": 0.0, "cores": 1},
                        {"name": "s", "speed": 0.0, "cores": 1}],
              "simulated": [], "finished": {}, "links": {}}
    assert peer.disagreements(hosts, report) == ["host a: speed 0, work never finishes on it"]
    # the links dcx writes: a flat cluster's private links, with its bw and lat
    data = platform('<zone id="z" routing="Full"><cluster id="c" prefix="n" suffix="" '
                    'radical="0-3" speed="1Gf" bw="10Gbps" lat="50us"/></zone>')
    links = peer.cluster_links(data)
    assert sorted(links) == ["c_link_0", "c_link_3"]
    assert links["c_link_3"] == pytest.approx((1.25e9, 50e-6))
    hosts, _, _ = peer.dcx_hosts(data)
    link_report: dict[str, Any] = {
        "hosts": [{"name": f"n{i}", "speed": 1e9, "cores": 1} for i in range(4)],
        "simulated": [], "finished": {},
        "links": {"c_link_0": [1.25e9, 50e-6], "c_link_3": [1e9, 50e-6]}}
    (problem,) = peer.disagreements(hosts, link_report, links)
    assert problem.startswith("link c_link_3: SimGrid 1000000000.0 B/s")
    assert (peer.bandwidth("1GiBps"), peer.latency("2m")) == (2.0**30, 120.0)


# ------------------------------------------------------------------ groups and compact forms


def _grouped_and_expanded(*parts: Any) -> tuple[Document, Document]:
    """A document of one rack holding ``parts`` (machines and groups), and the same with
    every group expanded into single machines."""
    from dcx.core.groups import slots_of

    grouped = _environment(Rack(id="r", slots=slots_of(parts)))
    single = tuple(machine for part in parts for machine in (
        part if isinstance(part, MachineGroup) else (part,)))
    return grouped, _environment(Rack(id="r", slots=single))


def _cpu(clock: float | None = 2e9, cores: int = 4) -> tuple[ProcessingUnit, ...]:
    return (ProcessingUnit(cores=cores, clock_rate_hz=clock),)


@pytest.mark.parametrize("parts", [
    (MachineGroup(Machine(cpus=_cpu()), 5, names=tuple(f"n{i}" for i in range(5))),),
    (MachineGroup(Machine(cpus=_cpu()), 3, ids=range(7, 10)),),
    (MachineGroup(Machine(cpus=_cpu()), 3, names=("7", "08", "x y")),),
    (MachineGroup(Machine(cpus=_cpu(None)), 2, names=("a", "b")),
     Machine(id="c", name="c", cpus=_cpu())),
    (Machine(id="n1", name="n1", cpus=_cpu()),  # a clash: the exact path renames
     MachineGroup(Machine(cpus=_cpu()), 2, names=("n0", "n1"))),
    (MachineGroup(Machine(cpus=_cpu(), extras={"simgrid:prop:role": "x"}), 2,
                  ids=("a", "b"), names=("A", "B")),),
    (Machine(name="m", cpus=_cpu()),  # no id: filled in as with_required_ids does
     MachineGroup(Machine(cpus=_cpu()), 2, names=("m2", "m3"))),
])
def test_the_group_path_of_the_normal_form_equals_the_machine_path(parts: Any) -> None:
    """A fast path may only accept: the normal form of groups is the normal form of the
    same machines one by one (differential test)."""
    grouped, single = _grouped_and_expanded(*parts)
    fast, exact = simgrid.normal_form(grouped), simgrid.normal_form(single)
    assert list(fast.environment.machines()) == list(exact.environment.machines())
    assert [(r.id, r.extras) for r in fast.environment.racks()] == [
        (r.id, r.extras) for r in exact.environment.racks()]
    assert simgrid.normal_form_losses(grouped) == simgrid.normal_form_losses(single)
    assert simgrid.write(grouped).data == simgrid.write(single).data


def test_a_large_uniform_rack_is_one_cluster_and_a_small_one_hosts() -> None:
    big = MachineGroup(Machine(cpus=_cpu(2.4e9, 32)), simgrid.CLUSTER_LEAST + 6,
                       names=tuple(f"cn{i}.x" for i in range(3, simgrid.CLUSTER_LEAST + 9)))
    grouped, single = _grouped_and_expanded(big)
    for document in (grouped, single):
        written = simgrid.write(document).data
        assert written.count(b"<cluster ") == 1 and b"<host " not in written
        assert (f'prefix="cn" suffix=".x" radical="3-{simgrid.CLUSTER_LEAST + 8}" '
                'speed="2.4Gf" core="32" bw="1.25GBps" lat="0s"').encode() in written
        again = simgrid.read(written)
        assert [m.name for m in again.document.environment.machines()] == list(big.names or ())
        assert again.document == simgrid.normal_form(document)
    small = MachineGroup(Machine(cpus=_cpu()), simgrid.CLUSTER_LEAST - 1,
                         names=tuple(f"cn{i}" for i in range(simgrid.CLUSTER_LEAST - 1)))
    written = simgrid.write(_grouped_and_expanded(small)[0]).data
    assert b"<cluster " not in written and written.count(b"<host ") == small.count
    padded = MachineGroup(Machine(cpus=_cpu()), simgrid.CLUSTER_LEAST,
                          names=tuple(f"n{i:05d}" for i in range(simgrid.CLUSTER_LEAST)))
    written = simgrid.write(_grouped_and_expanded(padded)[0]).data  # n00000 … n01023
    assert b"<cluster " not in written and b'<host id="n00042"' in written


def test_a_cluster_reads_as_one_group_of_lazily_named_hosts() -> None:
    from dcx.core.groups import slot_parts

    data = platform('<zone id="z" routing="Full"><cluster id="c" prefix="" suffix="" '
                    'radical="0-2,5" speed="1Gf" bw="1GBps" lat="0s"/><cluster id="d" '
                    'prefix="n-" suffix=".lab" radical="1-3" speed="1Gf" bw="1GBps" '
                    'lat="0s"/></zone>')
    racks = list(simgrid.read(data).document.environment.racks())
    (numbers,) = slot_parts(racks[0].slots)
    assert isinstance(numbers, MachineGroup) and list(numbers.ids or ()) == [0, 1, 2, 5]
    assert [m.id for m in racks[1].machines] == ["n-1.lab", "n-2.lab", "n-3.lab"]
    assert simgrid.AffixedNumbers("n-", range(1, 4), ".lab") == ("n-1.lab", "n-2.lab",
                                                                 "n-3.lab")


@pytest.mark.parametrize("head,line", [
    ('<?xml version="1.0"?>\n<platform version="4.1">\n', 1),
    ('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "http://simgrid.gforge.inria.fr/'
     'simgrid.dtd">\n<platform version="4.1">\n', 2),
    ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'simgrid.dtd'>\n"
     '<platform version="4.1">\n', 2),
])
def test_a_doctype_simgrids_parser_refuses_is_a_warning(head: str, line: int) -> None:
    """SimGrid 3.32 loads only the two DTD URLs it knows ("Unexpected character `<' in
    prolog" without one, "Bad declaration" for SimGrid 3.11's gforge URL): dcx reads the
    file and says so."""
    result = simgrid.read(platform('<zone id="z" routing="Full"><host id="a" speed="1Gf"/>'
                                   '</zone>', head))
    assert result.ok
    ((code, where),) = [(d.code, d.line) for d in result.diagnostics]
    assert (code, where) == ("simgrid.doctype", line)


def test_sockets_merged_into_one_host_are_a_loss() -> None:
    from dcx.converters.losses import conversion_losses

    machine = Machine(id=2000, cpus=(ProcessingUnit(cores=4, clock_rate_hz=3.5e9),
                                     ProcessingUnit(cores=4, clock_rate_hz=3.5e9)))
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=(machine,)),)),)),)))
    back = simgrid.read(simgrid.write(document).data).document
    assert back is not None and back.environment is not None
    (host,) = back.environment.machines()
    assert [cpu.cores for cpu in host.cpus] == [8]  # one host of eight cores
    assert "machine.cpus.sockets" in {loss.field
                                      for loss in conversion_losses(document, simgrid.FORMAT)}
