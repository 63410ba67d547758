"""Haizea XML: time grammar, manual examples, semantic checks, security, legacy text,
standalone leases, losses, and the shared corpus."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from lxml import etree

from dcx.converters.losses import conversion_losses
from dcx.core.diagnostics import Diagnostic, ReadResult
from dcx.core.fields import FIELDS
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Job,
    Machine,
    NamedResource,
    Placement,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StartMode,
    StorageUnit,
    Task,
    Workload,
    build,
    construction_plan,
)
from dcx.formats import haizea
from dcx.parsing import xmlio

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "haizea"


def codes(result: ReadResult) -> list[str]:
    return [d.code for d in result.diagnostics]


def only(result: ReadResult, code: str) -> Diagnostic:
    found = [d for d in result.diagnostics if d.code == code]
    assert len(found) == 1, [d.render() for d in result.diagnostics]
    return found[0]



def lost(document: Document) -> set[str]:
    """The field paths a conversion of ``document`` to Haizea loses (derived)."""
    return {loss.field for loss in conversion_losses(document, haizea.FORMAT)}

# --------------------------------------------------------------------------- time grammar


@pytest.mark.parametrize(("text", "seconds"), [
    ("00:00:00:00", 0.0),
    ("1:00:00:00", 86_400.0),
    ("5:00:00:00.00", 432_000.0),
    ("01:00:00", 3600.0),
    ("01:00:00.00", 3600.0),
    ("+01:00:00", 3600.0),
    ("+1:00:00.00", 3600.0),
    ("00:01:00.00", 60.0),  # the manual's "DD:HH:MM.SS" reading is really H:M:S.ss
    ("01:30", 5400.0),
    ("36:00:00", 129_600.0),
    ("00:90:00", 5400.0),
    ("-00:00:01.00", -1.0),
    ("2d 3h", 183_600.0),
    ("1h30m", 5400.0),
    ("45s", 45.0),
    ("1d 01:00:00", 90_000.0),
    ("00:00:01.5", 1.5),
    ("00:00:00.125", 0.125),
])
def test_time_grammar_accepts_haizea_forms(text: str, seconds: float) -> None:
    assert haizea.parse_time(text) == seconds
    assert haizea.parse_time_uncached(text) == seconds


@pytest.mark.parametrize(("text", "hint_word"), [
    ("3600", "0 s"),
    ("2006-11-25 14:00:00", "time of day"),
    ("PT1H", "0 s"),
    ("garbage", "0 s"),
    ("", "0 s"),
    ("1,5:00:00", "0 s"),
    ("01:00:00 extra", "0 s"),
])
def test_time_grammar_rejects_what_haizea_silently_zeroes(text: str, hint_word: str) -> None:
    for parse in (haizea.parse_time, haizea.parse_time_uncached):
        with pytest.raises(haizea.TimeSyntaxError) as caught:
            parse(text)
        assert hint_word in caught.value.hint


@pytest.mark.parametrize(("seconds", "text"), [
    (0.0, "00:00:00.00"),
    (3600.0, "01:00:00.00"),
    (86_400.0, "1:00:00:00.00"),
    (432_000.5, "5:00:00:00.50"),
    (-1.0, "-00:00:01.00"),
])
def test_times_are_written_as_haizea_writes_them(seconds: float, text: str) -> None:
    assert haizea.format_time(seconds) == text


# --------------------------------------------------------------------------- manual examples

MANUAL_NODES = b"""<nodes>
  <node-set numnodes="4">
    <res type="CPU" amount="100"/>
    <res type="Memory" amount="1024"/>
  </node-set>
  <node-set numnodes="8">
    <res type="CPU" amount="100"/>
    <res type="Memory" amount="2048"/>
  </node-set>
</nodes>"""

MANUAL_LEASE = b"""<lease id="1" preemptible="true">
  <nodes>
    <node-set numnodes="1">
      <res amount="100" type="CPU"/>
      <res amount="1024" type="Memory"/>
    </node-set>
  </nodes>
  <start/>
  <duration time="01:00:00"/>
  <software>
    <disk-image id="foobar1.img" size="1024"/>
  </software>
</lease>"""

MANUAL_SITE = b"""<site>
  <resource-types names="CPU Memory Ponies"/>
  <nodes>
    <node-set numnodes="4">
      <res type="CPU" amount="100"/>
      <res type="Memory" amount="1024"/>
      <res type="Ponies" amount="4"/>
    </node-set>
    <node-set numnodes="4">
      <res type="CPU" amount="100"/>
      <res type="Memory" amount="1024"/>
    </node-set>
  </nodes>
</site>"""

# The manual closes <start> with </exact>; fixed here as the issue asks.
MANUAL_STARTS = (
    b'<start>\n  <exact time="2006-11-25 14:00:00"/>\n</start>',
    b"<start>\n  <now/>\n</start>",
)


def test_manual_nodes_example_expands_to_twelve_machines() -> None:
    result = haizea.read(MANUAL_NODES)
    assert result.ok, codes(result)
    machines = list(result.document.environment.machines())
    assert all(m.id is None for m in machines)  # Haizea nodes are positional
    assert [m.memory_mb for m in machines] == [1024.0] * 4 + [2048.0] * 8
    assert all(m.core_count == 1 for m in machines)


def test_manual_site_example_keeps_ponies_as_named_capacity() -> None:
    result = haizea.read(MANUAL_SITE)
    assert result.ok, codes(result)
    machines = list(result.document.environment.machines())
    assert machines[0].resources == (NamedResource("Ponies", 4.0),)
    assert machines[4].resources == ()
    assert result.document.environment.extras == {}


def test_manual_lease_example_is_a_one_job_best_effort_workload() -> None:
    result = haizea.read(MANUAL_LEASE)
    assert result.ok, codes(result)
    (task,) = result.document.workload.tasks()
    assert task.start_mode is StartMode.ANY
    assert task.requested_time_s == 3600.0
    assert task.request == ResourceRequest(nodes=1, cores=1.0, memory_mb=1024.0)
    assert (task.image, task.image_size_mb, task.preemptible) == ("foobar1.img", 1024.0, True)


@pytest.mark.parametrize("start", MANUAL_STARTS)
def test_manual_start_examples_validate_inside_a_lease(start: bytes) -> None:
    lease = MANUAL_LEASE.replace(b"<start/>", start)
    tree = xmlio.parse_xml(lease)
    assert xmlio.xsd_diagnostics(xmlio.load_xsd("haizea-lease.xsd"), tree) == []
    assert haizea.read(lease).ok


def test_manual_start_example_as_printed_is_not_well_formed() -> None:
    printed = MANUAL_LEASE.replace(b"<start/>", b"<start>\n  <now/>\n</exact>")
    result = haizea.read(printed)
    assert result.document is None
    assert only(result, "xml.syntax").line == 10


# --------------------------------------------------------------------------- semantic checks

SITE = b"""<site>
    <resource-types names="CPU Memory"/>
    <nodes><node-set numnodes="4"><res type="CPU" amount="100"/>
      <res type="Memory" amount="1024"/></node-set></nodes>
  </site>"""


def lwf(*requests: bytes, site: bytes = SITE) -> bytes:
    return (b'<?xml version="1.0"?>\n<lease-workload name="t">\n  ' + site +
            b"\n  <lease-requests>\n" + b"\n".join(requests) +
            b"\n  </lease-requests>\n</lease-workload>\n")


def request(arrival: bytes = b"00:00:00.00", *, lease_id: bytes = b"1",
            preemptible: bytes = b"true", start: bytes = b"<start/>",
            duration: bytes = b"01:00:00.00", extra: bytes = b"",
            res: bytes = b'<res type="CPU" amount="100"/><res type="Memory" amount="1024"/>',
            before: bytes = b"") -> bytes:
    return (b'    <lease-request arrival="' + arrival + b'">' + before + b"\n"
            b'      <lease id="' + lease_id + b'" preemptible="' + preemptible + b'">\n'
            b'        <nodes><node-set numnodes="1">' + res + b"</node-set></nodes>\n"
            b"        " + start + b"\n"
            b'        <duration time="' + duration + b'"/>\n' + extra +
            b'        <software><none/></software>\n'
            b"      </lease>\n    </lease-request>")


def test_a_clean_workload_has_no_diagnostics() -> None:
    result = haizea.read(lwf(request(), request(b"00:10:00.00", lease_id=b"2")))
    assert result.ok
    assert result.diagnostics == ()


def test_bare_number_duration_is_an_error_with_line_and_xpath() -> None:
    result = haizea.read(lwf(request(), request(lease_id=b"2", duration=b"3600")))
    found = only(result, "haizea.time-syntax")
    assert found.is_error
    assert found.line == 21
    assert found.pointer == \
        "/lease-workload/lease-requests/lease-request[2]/lease/duration/@time"
    assert "0 s" in (found.hint or "")


def test_iso_timestamp_arrival_is_an_error() -> None:
    result = haizea.read(lwf(request(b"2006-11-25 14:00:00")))
    found = only(result, "haizea.time-syntax")
    assert found.pointer.endswith("lease-request[1]/@arrival")
    assert "time of day" in (found.hint or "")


@pytest.mark.parametrize(("value", "expected"), [(b"True", True), (b"FALSE", False),
                                                 (b"false", False)])
def test_preemptible_is_true_or_false_in_any_case(value: bytes, expected: bool) -> None:
    result = haizea.read(lwf(request(preemptible=value)))
    assert result.diagnostics == ()
    assert next(result.document.workload.tasks()).preemptible is expected


def test_preemptible_yes_is_a_warning() -> None:
    result = haizea.read(lwf(request(preemptible=b"yes")))
    assert result.ok
    assert only(result, "haizea.preemptible-yes-no").line == 10
    assert next(result.document.workload.tasks()).preemptible is True


def test_preemptible_other_values_are_errors() -> None:
    result = haizea.read(lwf(request(preemptible=b"1")))
    assert only(result, "haizea.preemptible").is_error


def test_lease_resource_type_must_exist_in_site() -> None:
    res = b'<res type="CPU" amount="100"/><res type="GPU" amount="1"/>'
    result = haizea.read(lwf(request(), request(lease_id=b"2", res=res),
                             request(lease_id=b"3", res=res)))
    found = only(result, "haizea.unknown-resource-type")
    assert found.line == 18
    assert "2 lease(s)" in found.message
    assert found.pointer == "/lease-workload/lease-requests/lease-request[2]/lease"


def test_unknown_resource_type_counts_leases_not_node_sets() -> None:
    two_sets = (b'<res type="GPU" amount="1"/></node-set><node-set numnodes="2">'
                b'<res type="GPU" amount="2"/>')
    one_set = b'<res type="GPU" amount="1"/>'
    result = haizea.read(lwf(request(res=two_sets),
                             request(b"00:01:00", lease_id=b"2", res=one_set)))
    found = only(result, "haizea.unknown-resource-type")
    assert "2 lease(s)" in found.message
    assert found.pointer == "/lease-workload/lease-requests/lease-request[1]/lease"


def test_site_must_have_cpu_and_memory() -> None:
    site = SITE.replace(b"CPU Memory", b"CPU").replace(
        b'<res type="Memory" amount="1024"/>', b"")
    result = haizea.read(lwf(request(res=b'<res type="CPU" amount="100"/>'), site=site))
    assert "Memory" in only(result, "haizea.site-missing-cpu-memory").message


def test_site_nodes_use_only_declared_types() -> None:
    site = SITE.replace(b"</node-set>", b'<res type="Ponies" amount="4"/></node-set>')
    result = haizea.read(lwf(request(), site=site))
    assert only(result, "haizea.undeclared-resource-type").line == 5


@pytest.mark.parametrize("duration", [b"00:00:00.00", b"-01:00:00.00"])
def test_durations_must_be_positive(duration: bytes) -> None:
    result = haizea.read(lwf(request(duration=duration)))
    assert only(result, "haizea.duration-not-positive").is_error


def test_realduration_must_be_positive_and_shorter_is_used() -> None:
    zero = haizea.read(lwf(request(before=b'<realduration time="00:00:00"/>')))
    assert only(zero, "haizea.duration-not-positive").pointer.endswith("/realduration/@time")
    longer = haizea.read(lwf(request(before=b'<realduration time="02:00:00"/>')))
    assert longer.ok
    assert not only(longer, "haizea.realduration-ignored").is_error
    equal = haizea.read(lwf(request(before=b'<realduration time="01:00:00"/>')))
    assert equal.diagnostics == ()  # ignored or used, the lease runs for its duration
    assert equal.document is not None and equal.document.workload is not None
    task = next(iter(equal.document.workload.tasks()))
    assert task.runtime_s == task.requested_time_s == 3600.0


def test_deadline_before_start_plus_duration_is_an_error() -> None:
    start = b'<start><exact time="01:00:00"/></start>'
    too_early = b'        <deadline time="01:30:00"/>\n'
    result = haizea.read(lwf(request(start=start, extra=too_early)))
    found = only(result, "haizea.deadline-too-early")
    assert "02:00:00.00" in found.message
    fine = haizea.read(lwf(request(start=start, extra=too_early.replace(b"01:30", b"02:00"))))
    assert fine.diagnostics == ()
    (task,) = fine.document.workload.tasks()
    assert (task.start_mode, task.start_time_s, task.deadline_s) == \
        (StartMode.EXACT, 3600.0, 7200.0)


def test_deadline_without_exact_start_is_a_warning() -> None:
    result = haizea.read(lwf(request(extra=b'        <deadline time="05:00:00"/>\n')))
    assert result.ok
    assert only(result, "haizea.deadline-ignored").line == 14


def test_lease_ids_are_unique() -> None:
    result = haizea.read(lwf(request(), request(b"00:01:00")))
    found = only(result, "haizea.duplicate-lease-id")
    assert found.line == 18
    assert "line 10" in found.message


def test_arrivals_out_of_order_are_one_warning() -> None:
    result = haizea.read(lwf(request(b"00:10:00"), request(b"00:05:00", lease_id=b"2"),
                             request(b"00:20:00", lease_id=b"3"),
                             request(b"00:00:00", lease_id=b"4")))
    assert result.ok
    found = only(result, "haizea.arrival-order")
    assert found.line == 17
    assert "2 request(s)" in found.message


def test_res_problems() -> None:
    missing = haizea.read(lwf(request(res=b'<res type="CPU"/>')))
    assert only(missing, "haizea.res-missing-amount").is_error
    both = b'<res type="CPU" amount="100"><instance amount="100"/><instance amount="100"/></res>'
    ignored = haizea.read(lwf(request(res=both)))
    assert only(ignored, "haizea.amount-ignored").pointer.endswith("/res/@amount")
    (task,) = ignored.document.workload.tasks()
    assert task.request.cores == 2.0
    assert task.request.resources == (NamedResource("CPU", 200.0, instances=(100.0, 100.0)),)
    twice = haizea.read(lwf(request(res=b'<res type="CPU" amount="100"/>'
                                         b'<res type="CPU" amount="200"/>')))
    only(twice, "haizea.duplicate-resource")
    assert next(twice.document.workload.tasks()).request.cores == 2.0


def test_structure_errors_come_from_the_xsd_with_request_positions() -> None:
    bad = request(lease_id=b"2").replace(b"<start/>", b"<start/><colour/>")
    result = haizea.read(lwf(request(), bad))
    assert result.document is None
    found = [d for d in result.diagnostics if d.code == "xsd.invalid"]
    assert found and found[0].line == 20
    assert found[0].pointer.startswith("/lease-workload/lease-requests/lease-request[2]/lease")
    fractional = haizea.read(lwf(request(res=b'<res type="CPU" amount="100.0"/>')))
    assert "xsd.invalid" in codes(fractional)


def test_missing_required_parts_are_xsd_errors() -> None:
    no_start = haizea.read(lwf(request(start=b"")))
    assert "xsd.invalid" in codes(no_start)
    no_preemptible = haizea.read(lwf(request().replace(b' preemptible="true"', b"")))
    assert "xsd.invalid" in codes(no_preemptible)
    skeleton = haizea.read(lwf(request()).replace(b"<lease-requests>", b"<lease-requests><x/>"))
    assert "xsd.invalid" in codes(skeleton)


def test_a_lease_without_nodes_is_an_error() -> None:
    result = haizea.read(lwf(request().replace(
        b'<node-set numnodes="1"><res type="CPU" amount="100"/><res type="Memory" '
        b'amount="1024"/></node-set>', b"")))
    assert only(result, "haizea.lease-no-nodes").is_error


def test_element_order_is_free_and_site_may_follow_requests() -> None:
    body = lwf(request(res=b'<res type="Disk" amount="5"/>'), site=b"")
    body = body.replace(b"</lease-requests>",
                        b"</lease-requests>" + SITE.replace(b"CPU Memory", b"CPU Memory Disk"))
    result = haizea.read(body)
    assert result.ok, [d.render() for d in result.diagnostics]
    assert result.document.environment is not None


def test_annotation_ids_all_or_none() -> None:
    data = (b"<lease-annotations>\n<lease-annotation id=\"1\"><start/></lease-annotation>\n"
            b"<lease-annotation><start/></lease-annotation>\n</lease-annotations>")
    found = only(haizea.read(data), "haizea.annotation-ids-mixed")
    assert found.line == 3


# --------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize("data", [
    b'<?xml version="1.0"?>\n<!DOCTYPE lease-workload [<!ENTITY x "y">]>\n<lease-workload/>',
    b'<!DOCTYPE site SYSTEM "file:///etc/passwd"><site/>',
])
def test_dtds_and_entities_are_refused(data: bytes) -> None:
    result = haizea.read(data)
    assert result.document is None
    assert codes(result) == ["xml.dtd"]


def test_malformed_xml_has_a_line_number() -> None:
    result = haizea.read(b"<lease-workload>\n<lease-requests>\n</lease-workload>")
    assert result.document is None
    assert only(result, "xml.syntax").line == 3


def test_unknown_root_is_an_error() -> None:
    result = haizea.read(b"<leases/>")
    assert only(result, "haizea.root").is_error


def test_a_declaration_after_whitespace_is_only_a_warning() -> None:
    data = b"  \n" + lwf(request())
    result = haizea.read(data)
    assert result.ok
    found = only(result, "haizea.xml-declaration")
    assert (found.line, found.column) == (2, 1)


def test_writer_refuses_characters_xml_cannot_hold() -> None:
    written = haizea.write(Document(workload=Workload(name="bad\x00name")))
    assert not written.ok
    assert written.data == b""
    assert written.diagnostics[0].code == "haizea.write.character"


# --------------------------------------------------------------------------- sniffing


@pytest.mark.parametrize(("data", "expected"), [
    (MANUAL_NODES, True),
    (MANUAL_SITE, True),
    (MANUAL_LEASE, True),
    (b"<?xml version='1.0'?>\n<!-- c -->\n<lease-annotations/>", True),
    (b"# comment\n0 -1 3600 3600 1 1 1024 0 'NONE.img' 600\n", True),
    (b"<Node><Id>x</Id></Node>", False),
    (b"1 0 10 100 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n", False),  # SWF: 18 fields
    (b'{"name": "x"}', False),
])
def test_sniff(data: bytes, expected: bool) -> None:
    assert haizea.sniff(data) is expected


# --------------------------------------------------------------------------- legacy text


def test_legacy_text_lines_become_leases() -> None:
    result = haizea.read((EXAMPLES / "legacy-text.lwf").read_bytes())
    assert result.ok and result.diagnostics == ()
    first, second, third = result.document.workload.tasks()
    assert (first.start_mode, first.preemptible, first.runtime_s) == (StartMode.ANY, True, 2700.0)
    assert (second.start_mode, second.start_time_s, second.preemptible) == \
        (StartMode.EXACT, 7200.0, False)
    assert second.request == ResourceRequest(nodes=4, cores=1.0, memory_mb=1024.0)
    assert (second.image, second.image_size_mb) == ("'NONE.img'", 600.0)
    assert [t.id for t in (first, second, third)] == [1, 2, 3]
    assert lost(result.document) == set()
    written = haizea.write(result.document)
    assert written.data.startswith(b"<?xml")
    assert haizea.read(written.data).document == result.document


def test_legacy_text_errors_name_the_line() -> None:
    result = haizea.read(b"0 -1 3600 3600 1 1 1024 0 a.img 600\n0 -1 3600 3600 1 1 1024 0 a\n"
                         b"0 -1 0 3600 1 1 1024 0 a.img 600\n")
    assert [(d.code, d.line) for d in result.diagnostics] == [
        ("haizea.legacy-fields", 2), ("haizea.duration-not-positive", 3)]


# --------------------------------------------------------------------------- standalone lease


def test_standalone_lease_absolute_times_use_the_submit_time_as_origin() -> None:
    lease = MANUAL_LEASE.replace(b'id="1"', b'id="1" submit-time="2006-11-25 13:00:00"').replace(
        b"<start/>", b'<start><exact time="2006-11-25 14:00:00"/></start>'
                     b'<deadline time="+03:00:00"/>')
    result = haizea.read(lease)
    assert result.ok, [d.render() for d in result.diagnostics]
    workload = result.document.workload
    assert workload.time_origin == "2006-11-25T13:00:00"
    (task,) = workload.tasks()
    assert (task.start_time_s, task.deadline_s, task.extras) == (3600.0, 10_800.0, {})


# --------------------------------------------------------------------------- writer


def test_haizea_ids_and_heterogeneous_leases_round_trip() -> None:
    data = lwf(request().replace(b' id="1"', b"").replace(
        b"</node-set></nodes>", b'</node-set><node-set numnodes="2"><res type="CPU" '
                                b'amount="200"/></node-set></nodes>'))
    result = haizea.read(data)
    assert result.ok
    (task,) = result.document.workload.tasks()
    assert task.extras["haizea:id-assigned"] is True
    assert task.extras["haizea:node-sets"] == [[1, [["CPU", 100], ["Memory", 1024]]],
                                               [2, [["CPU", 200]]]]
    written = haizea.write(result.document)
    assert b"<lease preemptible" in written.data
    assert written.data.count(b"<node-set") == 3  # the site's and the lease's two
    assert haizea.read(written.data).document == result.document


def test_identical_machines_group_into_node_sets_in_order() -> None:
    small = Machine(cpus=(ProcessingUnit(2),), memory=(StorageUnit(1024.0),))
    big = Machine(cpus=(ProcessingUnit(8), ProcessingUnit(8)), memory=(StorageUnit(8192.0),))
    machines = (small, small, big, small)
    environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=(Rack(
        slots=machines),)),)),))
    written = haizea.write(Document(environment=environment))
    tree = etree.fromstring(written.data)
    assert [n.get("numnodes") for n in tree.iter("node-set")] == ["2", "1", "1"]
    assert [i.get("amount") for i in tree.iter("instance")] == ["800", "800"]
    read_back = list(haizea.read(written.data).document.environment.machines())
    assert [m.core_count for m in read_back] == [2, 2, 16, 2]
    assert len(read_back[2].cpus) == 2


def test_writer_lists_what_a_site_cannot_hold() -> None:
    machine = Machine(id="node-7", name="node-7", cpus=(ProcessingUnit(
        4, clock_rate_hz=2.4e9, manufacturer="Intel"),), gpus=(ProcessingUnit(1),),
        memory=(StorageUnit(2048.0),), storage=(StorageUnit(1e6),), features=("ib",))
    rooms = (Room(id=1, name="hall", racks=(Rack(id=1, slots=(machine, None)),
                                            Rack(id=2, slots=(machine,)))),)
    environment = Environment(name="lab", datacenters=(Datacenter(id=1, name="dc", rooms=rooms),))
    written = haizea.write(Document(environment=environment))
    losses = lost(Document(environment=environment))
    assert losses == {
        "environment.name", "rack", "datacenter.id", "datacenter.name", "room.id", "room.name",
        "rack.id", "rack.empty_slots", "machine.id", "machine.name", "machine.features",
        "machine.gpus", "machine.storage", "cpu.clock_rate_hz", "cpu.vendor",
    }
    assert losses <= set(FIELDS)
    assert haizea.read(written.data).ok


def test_writer_lists_what_a_lease_cannot_hold() -> None:
    task = Task(id="job-a", submit_time_s=0.0, requested_time_s=60.0, user="alice",
                group="staff", dependencies=("job-0",), request=ResourceRequest(
                    nodes=1, cores=1.0, gpus=2, memory_mb=100.5))
    workload = Workload(jobs=(Job(id="job-a", name="a", tasks=(task, task)),),
                        time_origin="2020-01-01T00:00:00")
    written = haizea.write(Document(workload=workload))
    assert lost(Document(workload=workload)) == {
        "workload.time_origin", "job", "job.name", "task.id", "task.user", "task.request.gpus",
        "task.request.memory_mb", "task.dependencies",
        "task.runtime_s"}  # unknown: the lease runs for its duration
    read = haizea.read(written.data)
    assert read.ok and read.document is not None and read.document.workload is not None
    assert next(read.document.workload.tasks()).group == "staff"  # the SWF_group attr



def test_cores_anywhere_written_as_whole_nodes_is_a_placement_loss() -> None:
    """A lease asks for whole nodes: SWF's 64 processors (cores anywhere) become 64 nodes of
    one core, with a line that says the request's shape changed."""
    anywhere = Task(id=1, submit_time_s=0.0, requested_time_s=60.0, runtime_s=60.0,
                    request=ResourceRequest(nodes=64, placement=Placement.CORES))
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(anywhere,)),)))
    assert "task.request.placement" in haizea.normal_form_losses(document)
    losses = {loss.field: loss for loss in conversion_losses(document, haizea.FORMAT)}
    assert losses["task.request.placement"].count == 1
    assert "whole nodes" in losses["task.request.placement"].detail
    whole = dataclasses.replace(anywhere, request=ResourceRequest(nodes=64))
    assert lost(Document(workload=Workload(jobs=(Job(id=1, tasks=(whole,)),)))) == set()


def test_a_duration_filled_in_from_the_runtime_is_a_loss_line() -> None:
    """Every lease has a duration: one without a requested time gets its runtime, which SWF
    or Batsim then read back as the job's requested time; the line says so."""
    unrequested = Task(id=1, submit_time_s=0.0, runtime_s=60.0)
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(unrequested,)),)))
    assert next(haizea.normal_form(document).workload.tasks()).requested_time_s == 60.0
    losses = {loss.field: loss for loss in conversion_losses(document, haizea.FORMAT)}
    assert "runtime" in losses["task.requested_time_s"].detail
    assert losses["task.requested_time_s"].first == "/workload/jobs/0/tasks/0"


def site_of(*machines: Machine) -> Document:
    room = Room(racks=(Rack(slots=machines),))
    return Document(environment=Environment(datacenters=(Datacenter(rooms=(room,)),)))


def test_node_normal_form_is_what_a_node_reads_back_as() -> None:
    machine = Machine(
        cpus=(ProcessingUnit(2),), memory=(StorageUnit(1000.4),),
        resources=(NamedResource("Disk", 10.6, type="ssd", unit="GB", extras={"note": "x"}),
                   NamedResource("Disk", 99.0),  # the first Disk survives
                   NamedResource("Net card", 1.0),  # not a single word
                   NamedResource("Ports", -3.0, instances=(2.4, -1.0)),
                   NamedResource("CPU", 800.0, instances=(400.0, 400.0))))
    document = site_of(machine)
    normal = haizea.normal_form(document)
    expected = Machine(
        cpus=(ProcessingUnit(4), ProcessingUnit(4)), memory=(StorageUnit(1000.0),),
        resources=(NamedResource("Disk", 11.0), NamedResource("Ports", 2.0, instances=(2.0, 0.0))))
    assert list(normal.environment.machines()) == [expected]
    assert haizea.normal_form_losses(document) == {"machine.cpus", "machine.memory",
                                                   "machine.resources"}
    written = haizea.write(document)
    assert lost(document) == {"machine.cpus", "machine.memory", "machine.resources"}
    assert haizea.read(written.data).document == normal
    assert haizea.normal_form(normal) == normal
    assert haizea.normal_form_losses(normal) == frozenset()


def test_cpu_of_partial_cores_and_memory_resources_replace_the_machines_own() -> None:
    machine = Machine(cpus=(ProcessingUnit(8),), memory=(StorageUnit(512.0),),
                      resources=(NamedResource("Memory", 2048.0, instances=(1024.0, 1024.0)),
                                 NamedResource("CPU", 150.0)))
    document = site_of(machine)
    normal = list(haizea.normal_form(document).environment.machines())
    assert normal == [Machine(memory=(StorageUnit(1024.0), StorageUnit(1024.0)),
                              resources=(NamedResource("CPU", 150.0),))]
    written = haizea.write(document)
    assert list(haizea.read(written.data).document.environment.machines()) == normal
    assert lost(document) == {"machine.cpus", "machine.memory", "machine.resources"}


def test_other_formats_resource_extras_are_dropped_by_restrict_not_by_the_normal_form() -> None:
    disk = NamedResource("Disk", 5.0, extras={"sss:metric": "GB"})
    document = site_of(Machine(resources=(disk,)))
    written = haizea.write(document)
    assert haizea.normal_form_losses(document) == frozenset()
    assert lost(document) == {"machine.resources"}  # losses: Extras
    assert list(haizea.read(written.data).document.environment.machines()) == [
        Machine(resources=(NamedResource("Disk", 5.0),))]


def test_writer_keeps_plain_task_extras_and_drops_other_formats_keys() -> None:
    task = Task(id=1, submit_time_s=0.0, requested_time_s=60.0, runtime_s=60.0,
                extras={"queue": "fast", "swf:partition": 3, "sss:x": "y", "haizea:state": 2})
    written = haizea.write(Document(workload=Workload(jobs=(Job(id=1, tasks=(task,)),))))
    assert lost(Document(workload=Workload(jobs=(Job(id=1, tasks=(task,)),)))) == {
        "task.extras"}  # other formats' keys, dropped (losses: Extras)
    tree = etree.fromstring(written.data)
    assert [(a.get("name"), a.get("value")) for a in tree.iter("attr")] == [("queue", "fast")]
    back = next(haizea.read(written.data).document.workload.tasks())
    assert back.extras == {"queue": "fast", "haizea:state": 2}


def test_holds_names_only_known_fields() -> None:
    assert set(FIELDS) >= haizea.HOLDS


# --------------------------------------------------------------------------- streaming


def test_large_workload_streams_with_exact_positions() -> None:
    requests = [request(b"%02d:%02d:00" % divmod(i, 60), lease_id=str(i + 1).encode())
                for i in range(3000)]
    requests[2499] = request(b"41:39:00", lease_id=b"2500",
                             res=b'<res type="GPU" amount="1"/>')
    result = haizea.read(lwf(*requests))
    found = only(result, "haizea.unknown-resource-type")
    assert found.pointer == "/lease-workload/lease-requests/lease-request[2500]/lease"
    assert found.line == 9 + 2499 * 8 + 1
    assert len(result.document.workload.jobs) == 3000
    shapes = {id(task.request) for task in result.document.workload.tasks()}
    assert len(shapes) == 2  # identical requests share one object


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize("path", sorted(EXAMPLES.iterdir()), ids=lambda p: p.name)
def test_examples_read_cleanly_and_round_trip(path: Path) -> None:
    result = haizea.read(path.read_bytes())
    assert result.ok and result.diagnostics == (), [d.render() for d in result.diagnostics]
    assert lost(result.document) == set()
    written = haizea.write(result.document)
    assert haizea.read(written.data).document == result.document


def test_example_lwf_has_every_lease_type() -> None:
    result = haizea.read((EXAMPLES / "mixed-site.lwf").read_bytes())
    kinds = [lease_type(task) for task in result.document.workload.tasks()]
    assert kinds == ["best-effort", "AR", "deadline", "immediate"]
    machines = list(result.document.environment.machines())
    assert [len(m.cpus) for m in machines] == [1, 1, 1, 1, 2, 2]
    assert machines[0].resources == (NamedResource("Disk", 20000.0),)


def lease_type(task: Task) -> str:
    """Haizea's Lease.get_type, on the model."""
    if task.start_mode is StartMode.ANY:
        return "best-effort"
    if task.start_mode is StartMode.NOW:
        return "immediate"
    return "deadline" if task.deadline_s is not None else "AR"


# --------------------------------------------------------------------------- corpus

XML_FILES = "tests/*.lwf", "tests/*.lwfa", "traces/multi/*.lwf", "traces/sample.lwf"
LEGACY_FILES = "traces/blue/injected_leases/*/*.lwf", "traces/undocumented/*.lwf"


def corpus_files(corpus_dir: Path, patterns: tuple[str, ...]) -> list[Path]:
    files = sorted(path for pattern in patterns for path in (corpus_dir / "haizea").glob(pattern))
    assert files, "no Haizea files in the corpus"
    return files


@pytest.mark.corpus
def test_corpus_xml_reads_and_validates(corpus_dir: Path) -> None:
    failures = []
    for path in corpus_files(corpus_dir, XML_FILES):
        data = path.read_bytes()
        result = haizea.read(data)
        schema = haizea.ROOT_SCHEMAS[xmlio.root_name(data) or ""]
        invalid = xmlio.xsd_diagnostics(xmlio.load_xsd(schema), xmlio.parse_xml(data))
        if not result.ok or invalid:
            failures.append((path.name, [d.render() for d in (*result.diagnostics, *invalid)]))
    assert failures == []


@pytest.mark.corpus
def test_corpus_sample_is_an_empty_workload_with_a_warning(corpus_dir: Path) -> None:
    result = haizea.read((corpus_dir / "haizea/traces/sample.lwf").read_bytes())
    assert result.ok
    assert result.document.workload.jobs == ()
    assert codes(result) == ["haizea.empty-workload"]


@pytest.mark.corpus
def test_corpus_unsorted_arrivals_warn(corpus_dir: Path) -> None:
    result = haizea.read((corpus_dir / "haizea/tests/deadline15.lwf").read_bytes())
    assert result.ok
    assert codes(result) == ["haizea.arrival-order"]


@pytest.mark.corpus
def test_corpus_lease_types_match_the_reference_counts(corpus_dir: Path) -> None:
    counts: dict[str, int] = {}
    with_realduration = 0
    files = [p for p in corpus_files(corpus_dir, XML_FILES) if p.suffix == ".lwf"]
    for path in files:
        for task in haizea.read(path.read_bytes()).document.workload.tasks():
            counts[lease_type(task)] = counts.get(lease_type(task), 0) + 1
            assert task.runtime_s is not None  # the duration, without a realduration
            with_realduration += task.runtime_s != task.requested_time_s
    assert len(files) == 47
    assert counts == {"best-effort": 298, "AR": 38, "deadline": 91}
    assert with_realduration == 164


@pytest.mark.corpus
def test_corpus_annotations(corpus_dir: Path) -> None:
    result = haizea.read((corpus_dir / "haizea/tests/annotations1.lwfa").read_bytes())
    assert result.ok
    first, second = result.document.workload.annotations
    assert (first.target, first.start_mode, first.start_offset_s, first.deadline_offset_s) == \
        (1, StartMode.EXACT, 36_000.0, 72_000.0)
    assert first.software_none and first.extras == {"one": "1", "two": "2"}
    assert (second.start_mode, second.image, second.image_size_mb) == \
        (StartMode.ANY, "annotation.img", 4096.0)


@pytest.mark.corpus
def test_corpus_xml_round_trips_to_an_equivalent_valid_document(corpus_dir: Path) -> None:
    for path in corpus_files(corpus_dir, XML_FILES):
        original = haizea.read(path.read_bytes())
        written = haizea.write(original.document)
        assert written.ok and lost(original.document) == set(), path.name
        root = etree.fromstring(written.data)
        schema = xmlio.load_xsd(haizea.ROOT_SCHEMAS[root.tag])
        assert xmlio.xsd_diagnostics(schema, root.getroottree()) == [], path.name
        again = haizea.read(written.data)
        assert again.ok, path.name
        assert {d.code for d in again.diagnostics} <= {"haizea.empty-workload"}, path.name
        assert again.document == haizea.normal_form(original.document), path.name


@pytest.mark.corpus
def test_unsorted_arrivals_are_written_in_arrival_order(corpus_dir: Path) -> None:
    original = haizea.read((corpus_dir / "haizea/tests/deadline15.lwf").read_bytes()).document
    written = haizea.read(haizea.write(original).data)
    assert written.diagnostics == ()
    arrivals = [task.submit_time_s for task in written.document.workload.tasks()]
    assert arrivals == sorted(arrivals)
    assert sorted(job.id for job in written.document.workload.jobs) == \
        sorted(job.id for job in original.workload.jobs)  # the ids move with their leases


def test_leases_without_ids_that_move_keep_their_ids() -> None:
    def task(submit: float, number: int) -> Task:
        return Task(id=number, submit_time_s=submit, requested_time_s=60.0, runtime_s=60.0,
                    extras={"haizea:id-assigned": True})

    workload = Workload(jobs=tuple(Job(id=n, tasks=(task(s, n),))
                                   for n, s in ((1, 30.0), (2, 10.0), (3, 20.0))))
    document = Document(workload=workload)
    back = haizea.read(haizea.write(document).data)
    assert back.diagnostics == ()
    assert [job.id for job in back.document.workload.jobs] == [2, 3, 1]
    assert back.document == haizea.normal_form(document)
    assert lost(document) == set()


def test_a_job_whose_tasks_move_apart_is_still_reported_as_grouping() -> None:
    first = Task(id=1, submit_time_s=0.0, requested_time_s=60.0, runtime_s=60.0)
    second = Task(id=2, submit_time_s=20.0, requested_time_s=60.0, runtime_s=60.0)
    middle = Task(id=3, submit_time_s=10.0, requested_time_s=60.0, runtime_s=60.0)
    workload = Workload(jobs=(Job(id=1, tasks=(first, second)), Job(id=3, tasks=(middle,))))
    normal = haizea.normal_form(Document(workload=workload)).workload
    assert [[task.id for task in job.tasks] for job in normal.jobs] == [[1], [3], [2]]
    assert "job" in lost(Document(workload=workload))


@pytest.mark.corpus
def test_corpus_legacy_text_reads(corpus_dir: Path) -> None:
    for path in corpus_files(corpus_dir, LEGACY_FILES):
        data = path.read_bytes()
        assert haizea.sniff(data), path.name
        result = haizea.read(data)
        assert result.ok, (path.name, [d.render() for d in result.diagnostics])
        lines = [line for line in data.decode().splitlines() if line.strip()]
        assert len(result.document.workload.jobs) == len(lines), path.name
        assert {t.image for t in result.document.workload.tasks()} == {"'NONE.img'"}


@pytest.mark.corpus
def test_corpus_largest_legacy_file_has_unsorted_arrivals(corpus_dir: Path) -> None:
    path = corpus_dir / "haizea/traces/blue/injected_leases/60days/work_30-dur_1h-size_1small.lwf"
    result = haizea.read(path.read_bytes())
    assert codes(result) == ["haizea.arrival-order"]
    assert only(result, "haizea.arrival-order").line == 6


# --------------------------------------------------------------------------- fast construction


def test_fast_construction_equals_the_dataclass_constructor() -> None:
    values = {"id": 7, "submit_time_s": 1.5, "requested_time_s": 60.0,
              "request": ResourceRequest(nodes=2), "image": "a.img", "extras": {"k": "v"}}
    built = build(Task, values)
    assert built == Task(id=7, submit_time_s=1.5, requested_time_s=60.0,
                         request=ResourceRequest(nodes=2), image="a.img", extras={"k": "v"})
    assert build(Task, {"id": 1}).extras is not build(Task, {"id": 1}).extras
    assert build(Job, {"id": 1}) == Job(id=1)
    with pytest.raises(TypeError):
        build(Task, {"submit_time_s": 0.0})  # id is required
    with pytest.raises(TypeError):
        build(Task, {"id": 1, "colour": "red"})


def test_fast_construction_falls_back_to_the_constructor_when_it_cannot_apply() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        id: int
        extras: dict[str, str] = dataclasses.field(default_factory=dict)

    @dataclasses.dataclass(frozen=True)
    class Checked:
        id: int

        def __post_init__(self) -> None:
            if self.id < 0:
                raise ValueError("negative id")

    assert construction_plan(Slotted) is None
    assert construction_plan(Checked) is None
    assert construction_plan(Task) is not None


# --------------------------------------------------------------------------- large files

def _numbered_lwf(requests: int, edit: dict[bytes, bytes]) -> bytes:
    """An LWF of ``requests`` leases, one attribute per line (so it runs past line 65,535),
    with byte replacements applied."""
    lease = ('<lease-request arrival="00:00:{s:02d}.00">\n<lease id="{n}"\npreemptible="true">\n'
             '<nodes>\n<node-set numnodes="1">\n<res type="CPU" amount="100"/>\n'
             '<res type="Memory" amount="10"/>\n</node-set>\n</nodes>\n<start/>\n'
             '<duration time="00:10:00.00"/>\n<software>\n<none/>\n</software>\n</lease>\n'
             '</lease-request>\n')
    body = "".join(lease.format(n=n, s=0) for n in range(1, requests + 1)).encode()
    data = (b'<lease-workload name="big">\n<site>\n<resource-types names="CPU Memory"/>\n'
            b'<nodes>\n<node-set numnodes="1">\n<res type="CPU" amount="100"/>\n'
            b'<res type="Memory" amount="1024"/>\n</node-set>\n</nodes>\n</site>\n'
            b"<lease-requests>\n" + body + b"</lease-requests>\n</lease-workload>\n")
    for old, new in edit.items():
        assert old in data
        data = data.replace(old, new)
    return data


def test_streamed_diagnostics_past_line_65535_name_their_real_line() -> None:
    """libxml2 says 65,535 for every node of a streamed request past that line; the
    reader counts the requests in the bytes instead (XSD errors and its own checks)."""
    data = _numbered_lwf(5_000, {b'<lease id="4600"\n': b'<lease id="4600" bogus="1"\n',
                                 b'<lease id="4900"\n': b'<lease id="4700"\n'})
    lines = data.split(b"\n")
    result = haizea.read(data)
    found = {d.code: d for d in result.diagnostics}
    assert set(found) == {"xsd.invalid", "haizea.duplicate-lease-id"}
    bogus, duplicate = found["xsd.invalid"], found["haizea.duplicate-lease-id"]
    assert bogus.line is not None and bogus.line > 65_535
    assert lines[bogus.line - 1].startswith(b'<lease id="4600" bogus')
    assert duplicate.line is not None and lines[duplicate.line - 1] == b'<lease id="4700"'
    first = int(duplicate.message.rsplit("line ", 1)[1].rstrip(")"))
    assert first > 65_535 and lines[first - 1] == b'<lease id="4700"'
    assert first < duplicate.line


def test_schema_errors_are_capped_per_validation() -> None:
    attributes = " ".join(f'a{index}="x"' for index in range(10_000))
    data = (f'<nodes {attributes}><node-set numnodes="1"><res type="CPU" amount="100"/>'
            '<res type="Memory" amount="1"/></node-set></nodes>').encode()
    result = haizea.read(data)
    assert len(result.diagnostics) == xmlio.MAX_XSD_ERRORS + 1
    assert result.diagnostics[-1].code == "xsd.more-errors"
    assert "9,950 more" in result.diagnostics[-1].message


# ------------------------------------------------------------------- where losses are

LOCATED_LWF = """<lease-workload name="located">
  <!-- a <lease-request> and a <node-set> in a comment are not elements -->
  <site>
    <resource-types names="CPU Memory Disk"/>
    <nodes>
      <node-set numnodes="2"><res type="CPU" amount="100"/><res type="Memory" amount="1024"/>
      </node-set>
      <node-set numnodes="1">
        <res type="CPU" amount="100"/><res type="Memory" amount="1024"/>
        <res type="Disk" amount="10"/>
      </node-set>
    </nodes>
  </site>
  <lease-requests>
    <lease-request arrival="00:00:00"><lease id="1" preemptible="{preemptible}">
        <nodes><node-set numnodes="1"><res type="CPU" amount="100"/></node-set></nodes>
        <start/><duration time="00:10:00"/><software><none/></software></lease>
    </lease-request>
    <lease-request
        arrival="00:01:00">
      <lease id="2" preemptible="false">
        <nodes><node-set numnodes="1"><res type="CPU" amount="100"/></node-set></nodes>
        <start><exact time="00:05:00"/></start><duration time="00:10:00"/>
        <deadline time="01:00:00"/><software><none/></software></lease>
    </lease-request>
  </lease-requests>
</lease-workload>
"""


def losses_listed(source: Path, target: str, tmp_path: Path,
                  capsys: pytest.CaptureFixture[str], *options: str) -> list[str]:
    """The loss lines of ``dcx convert SOURCE OUT --to TARGET --losses [OPTIONS]``."""
    from dcx.cli.main import main

    capsys.readouterr()
    assert main(["convert", str(source), str(tmp_path / f"out.{target}"), "--to", target,
                 "--losses", *options]) == 0
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("  ")]


@pytest.mark.parametrize("preemptible", ["true", "yes"], ids=["fast-path", "checked-path"])
def test_losses_of_an_lwf_are_at_their_lease_and_node_set(
        preemptible: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A job is its <lease-request>, its task the <lease>, a machine its <node-set> (the
    third machine is the second node-set's), the environment the <site>: found again in the
    text, by either read (a yes/no preemptible sends it down the checked path)."""
    source = tmp_path / "in.lwf"
    source.write_text(LOCATED_LWF.replace("{preemptible}", preemptible))
    assert (haizea.read(source.read_bytes()).diagnostics == ()) is (preemptible == "true")
    to_swf = losses_listed(source, "swf", tmp_path, capsys)
    assert f"  environment: 1 value (first: {source}:3:3, /environment): the topology " \
        "(datacenters, racks, machines)" in to_swf
    assert f"  task.deadline_s: 1 value (first: {source}:21:7, /workload/jobs/1/tasks/0): " \
        "deadline (haizea: deadline" in "\n".join(to_swf)
    assert f"  workload.name: 1 value (first: {source}:1:1, /workload): workload name " \
        "(haizea: <lease-workload name>" in "\n".join(to_swf)
    # (SimGrid needs a speed for every host: LWF nodes state no clock rate)
    to_simgrid = losses_listed(source, "simgrid", tmp_path, capsys, "--fill", "clock-rate=2GHz")
    assert f"  machine.resources: 1 value (first: {source}:8:7, /environment/datacenters/0/" \
        "rooms/0/racks/0/slots/2): other named consumable resources (haizea: site <res> of " \
        "other types; " in "\n".join(to_simgrid)
    located = haizea.read(source.read_bytes())
    assert located.locate("/workload/jobs/1") == (19, 5)
    assert located.locate("/environment/datacenters/0/rooms/0/racks/0") == (5, 5)
    assert located.locate("/environment/datacenters/0/rooms/0/racks/0/slots/1") == (6, 7)
    assert located.locate("/workload/jobs/2") == (None, None)


def test_losses_of_a_legacy_lwf_are_at_their_line(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "old.lwf"
    source.write_text("# submit start duration realduration numnodes cpu mem disk image size\n"
                      "\n"
                      "  0 -1 600 600 1 1 1024 0 img.iso 100\n"
                      "60 120 600 600 1 1 1024 0 img.iso 100  # an AR\n")
    lines = losses_listed(source, "swf", tmp_path, capsys)
    assert f"  task.image: 4 values (first: {source}:3:3, /workload/jobs/0/tasks/0): " \
        "software image (haizea: <disk-image>)" in lines
    assert f"  task.start: 1 value (first: {source}:4:1, /workload/jobs/1/tasks/0): " \
        "start mode and exact start time (haizea: <start> (<now/>, <exact>))" in lines


def test_a_lease_file_and_annotations_are_located_at_their_elements() -> None:
    lease = haizea.read(b'<?xml version="1.0"?>\n<lease id="7" preemptible="true">'
                        b'<nodes><node-set numnodes="1"><res type="CPU" amount="100"/>'
                        b'</node-set></nodes><start/><duration time="00:10:00"/>'
                        b'<software><none/></software></lease>')
    assert lease.ok
    assert lease.locate("/workload/jobs/0") == lease.locate("/workload/jobs/0/tasks/0") == (2, 1)
    annotations = haizea.read(b'<lease-annotations>\n  <lease-annotation id="1"/>\n'
                              b'  <lease-annotation id="2"><start/></lease-annotation>\n'
                              b'</lease-annotations>')
    assert annotations.ok
    assert annotations.locate("/workload/annotations/1") == (3, 3)


@pytest.mark.parametrize("text", [
    b'<?xml version="1.0"?>\n<r><!-- <node-set/> --><node-set/><![CDATA[<node-set/>]]>'
    b'<?pi <node-set/>?><a:node-set xmlns:a="urn:a"/>\n<node-set\n  n="1">node-set </node-set>'
    b'<node-sets/><x node-set="1"/></r>',
    b'<r>\n\t<node-set/><!----><node-set/><?p?><node-set/></r>',
])
def test_start_tags_are_the_elements_in_document_order(text: bytes) -> None:
    """``xmlio.StartTags`` finds the elements of a name (any prefix) in the text, in the
    order lxml iterates them, skipping comments, CDATA and processing instructions."""
    found = xmlio.StartTags(text, "node-set")
    elements = list(etree.fromstring(text).iter("{*}node-set"))
    assert found.offset(len(elements)) is None
    for index, element in enumerate(elements):
        offset = found.offset(index)
        assert offset is not None
        assert text[offset:].startswith((b"<node-set", b"<a:node-set"))
        line, _ = found.place(index)
        tag_end = xmlio.source_line(element)  # lxml: where the tag ends
        assert line is not None and tag_end is not None and line <= tag_end
