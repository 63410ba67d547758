"""The clean path of the LWF reader (no elements) against the checked path.

Contract: for any LWF, ``_read_clean_workload`` returns ``None`` whenever the checked path
(``_read_workload_stream``) reports something, and otherwise the checked path's very
document; it declines (``None``) a silent document only when a description, site or
attributes element follows ``<lease-requests>``. Both ways of the clean path keep it: the
text scan with the factored verdict (``haizea_scan``, ``haizea_verdict``) and the parser
target (``scan=False``; also where the scan declines the text). ``haizea.read`` uses the
clean path first, so its result is the checked path's either way. The LWFs here are written
from model strategies (clean ones) and assembled from raw pieces drawn from pools of good and
bad values (every diagnostic of the checked path, XSD errors, malformed XML).
"""

from __future__ import annotations

import gc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.core.diagnostics import Diagnostic, InputError
from dcx.core.model import Document, Job, Task
from dcx.formats import haizea
from dcx.formats.haizea.checked import read_workload_stream
from dcx.formats.haizea.context import Context
from dcx.formats.haizea.fast import read_clean_workload
from tests.strategies_haizea import lease_documents

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

SITE = (b'<site><resource-types names="CPU Memory Disk"/><nodes><node-set numnodes="2">'
        b'<res type="CPU" amount="400"/><res type="Memory" amount="4096"/></node-set>'
        b"</nodes></site>")


def checked(data: bytes) -> tuple[Document | None, list[Diagnostic]]:
    context = Context(data=data)
    try:
        document = read_workload_stream(data, context)
    except InputError as exc:  # malformed XML
        return None, [*context.diagnostics, exc.diagnostic]
    return document, context.diagnostics


def assert_contract(data: bytes, head_first: bool = True) -> Document | None:
    """The clean path's answer for ``data``, once both its ways are checked against the
    contract; ``head_first``: no description, site or attributes after ``<lease-requests>``."""
    clean = read_clean_workload(data)
    parsed = read_clean_workload(data, scan=False)
    expected, diagnostics = checked(data)
    for answer in (clean, parsed):
        if diagnostics:
            assert answer is None, [d.render() for d in diagnostics]
        else:
            if head_first:
                assert answer is not None, "a document without diagnostics left the clean path"
            if answer is not None:
                assert answer == expected
    if not diagnostics:
        result = haizea.read(data)
        assert result.diagnostics == () and result.document == expected
    return clean


# --------------------------------------------------------------------------- clean documents


@SETTINGS
@given(lease_documents())
def test_written_workloads_take_the_clean_path_when_nothing_is_reported(
        document: Document) -> None:
    written = haizea.write(document)
    assert written.ok
    assert_contract(written.data)


def test_every_lease_feature_takes_the_clean_path() -> None:
    data = lwf(
        request("00:00:01.00", lease(
            nodes=(b'<node-set numnodes="2"><res type="CPU"><instance amount="100"/>'
                   b'<instance amount="200"/></res><res type="Memory" amount="10"/>'
                   b'</node-set><node-set numnodes="1"><res type="CPU" amount="50"/>'
                   b"</node-set>"),
            extra=b'<extra><attr name="queue" value="fast"/><attr name="x" value=""/></extra>',
            attributes=b' user="7" state="2" submit-time="2007-01-01 00:00:00"'),
            realduration=b"00:10:00.00"),
        request("00:00:02.00", lease(id_attribute=b"", start=b"<start><now/></start>",
                                     software=b"<software><none/></software>")),
        request("00:00:02.00", lease(id_attribute=b' id="3"', preemptible=b"TRUE",
                                     start=b'<start><exact time="1d 2h"/></start>',
                                     deadline=b'<deadline time="2:00:00:00"/>')),
        request("1:00:00:02.50", lease(id_attribute=b' id="-4"', nodes=(
            b'<node-set numnodes="3"><res type="CPU" amount="100"/></node-set>'
            b'<node-set numnodes="4"><res type="CPU" amount="100"/></node-set>'))),
        head=b'<description> a &amp; b </description>' + SITE +
        b'<attributes><attr name="k" value="v"/></attributes>',
    )
    document = assert_contract(data)
    assert document is not None and document.workload is not None
    first, second, third, fourth = document.workload.tasks()
    assert first.request.resources[0].instances == (100.0, 200.0)
    assert first.extras["queue"] == "fast" and len(first.extras["haizea:node-sets"]) == 2
    assert second.id == 2 and second.extras == {"haizea:id-assigned": True}
    assert third.start_time_s == 93_600.0 and third.preemptible is True
    assert fourth.request.nodes == 7
    assert document.workload.description == " a & b "


@pytest.mark.parametrize("value", ["&amp;", "a&#38;b", "&#x26;#38;", "&amp;lt;", "&lt;&quot;",
                                   "&#38;#38;", "&#233;&#x3e;"])
def test_entity_references_in_attributes_read_as_in_the_tree(value: str) -> None:
    """libxml2 hands a parser target each ``&`` of an attribute as ``&#38;``."""
    text = value.encode()
    site = SITE.replace(b'"CPU Memory Disk"', b'"CPU Memory D' + text + b'"')
    data = lwf(request("00:00:01.00", lease(
        nodes=b'<node-set numnodes="1"><res type="D' + text + b'" amount="1"/></node-set>',
        software=b'<software><disk-image id="' + text + b'" size="1"/></software>',
        extra=b'<extra><attr name="' + text + b'" value="' + text + b'"/>'
              b'<attr name="' + text + b'x" value="1"/></extra>',
        attributes=b' submit-time="' + text + b'"')), head=site)
    assert assert_contract(data) is not None  # and equal to the checked path's


def test_the_clean_path_builds_what_the_constructors_build() -> None:
    data = lwf(request("00:00:01.00", lease()))
    document = read_clean_workload(data)
    assert document is not None and document.workload is not None
    job = document.workload.jobs[0]
    task = job.tasks[0]
    assert Job(**vars(job)) == job and vars(Job(**vars(job))) == vars(job)
    assert vars(Task(**vars(task))) == vars(task)


def test_cyclic_collection_is_back_as_it_was() -> None:
    data = lwf(request("00:00:01.00", lease()))
    assert gc.isenabled()
    read_clean_workload(data)
    assert gc.isenabled()
    gc.disable()
    try:
        read_clean_workload(data)
        assert not gc.isenabled()
    finally:
        gc.enable()


# --------------------------------------------------------------------------- raw documents


def lwf(*requests: bytes, head: bytes = SITE, tail: bytes = b"") -> bytes:
    return (b'<?xml version="1.0"?>\n<lease-workload name="w">' + head + b"<lease-requests>\n" +
            b"\n".join(requests) + b"</lease-requests>" + tail + b"</lease-workload>")


def request(arrival: str, lease_xml: bytes, realduration: bytes | None = None) -> bytes:
    real = b"" if realduration is None else b'<realduration time="' + realduration + b'"/>'
    return b'<lease-request arrival="' + arrival.encode() + b'">' + real + lease_xml + \
        b"</lease-request>"


def lease(id_attribute: bytes = b' id="1"', preemptible: bytes = b"false",
          nodes: bytes = b'<node-set numnodes="1"><res type="CPU" amount="100"/>'
                         b'<res type="Memory" amount="1024"/></node-set>',
          start: bytes = b"<start/>", duration: bytes = b"01:00:00.00",
          deadline: bytes = b"",
          software: bytes = b'<software><disk-image id="a.img" size="1024"/></software>',
          extra: bytes = b"", attributes: bytes = b"") -> bytes:
    return (b"<lease" + id_attribute + b' preemptible="' + preemptible + b'"' + attributes +
            b"><nodes>" + nodes + b"</nodes>" + start + b'<duration time="' + duration +
            b'"/>' + deadline + software + extra + b"</lease>")


GOOD_TIMES = ("00:10:00.00", "01:00:00.00", "1:00:00:00.00", "00:30", "1h", "2d 3h",
              "00:00:00.5", "+00:20:00.00", "01:00:00")
BAD_TIMES = ("00:00:00.00", "-00:00:05.00", "0", "abc", "2007-01-01 00:00:00", "",
             "99:99:99.99", "00:00:00.001")
GOOD_RES = (b'<res type="CPU" amount="100"/>', b'<res type="Memory" amount="1024"/>',
            b'<res type="Disk" amount="5"/>', b'<res type="CPU" amount=" 100 "/>',
            b'<res type="Memory"><instance amount="1"/><instance amount="2"/></res>',
            b'<res type="CPU"><instance amount="150"/></res>')
BAD_RES = (b'<res type="GPU" amount="1"/>', b'<res type="CPU"/>',
           b'<res type="CPU" amount="100"><instance amount="1"/></res>',
           b'<res type="CPU" amount="-1"/>', b'<res type="" amount="1"/>',
           b'<res type="CPU" amount="1.5"/>', b"<res/>")


@st.composite
def raw_leases(draw: st.DrawFn, number: int, noise: int) -> bytes:
    """A lease; each part is drawn from the bad pool with ``noise`` percent probability."""
    def pick(good: tuple[bytes, ...], bad: tuple[bytes, ...]) -> bytes:
        chosen = bad if bad and draw(st.integers(0, 99)) < noise else good
        return draw(st.sampled_from(chosen))

    def time_text() -> bytes:
        return pick(tuple(t.encode() for t in GOOD_TIMES), tuple(t.encode() for t in BAD_TIMES))

    node_sets = []
    with_nodes = pick((b"yes",), (b"no",)) == b"yes"
    for _ in range(draw(st.integers(1, 2)) if with_nodes else 0):
        res = list(dict.fromkeys(pick(GOOD_RES, BAD_RES)
                                 for _ in range(draw(st.integers(0, 3)))))
        if len({part.split(b">")[0].split(b" amount")[0] for part in res}) < len(res):
            res = res[:1]  # one type per node-set, unless the noise says otherwise
        count = pick((b"1", b"2", b" 3"), (b"0", b"x"))
        node_sets.append(b'<node-set numnodes="' + count + b'">' + b"".join(res) +
                         b"</node-set>")
    exact = b'<start><exact time="' + pick((b"+00:00:00.00", b"00:00:30.00", b"1:00:00:00"),
                                           tuple(t.encode() for t in BAD_TIMES)) + b'"/></start>'
    start = pick((b"<start/>", b"<start><now/></start>", exact),
                 (b"<start><bogus/></start>", b""))
    deadline = pick((b"", b'<deadline time="3:00:00:00.00"/>'),
                    (b'<deadline time="' + time_text() + b'"/>',))
    if b"exact" not in start and deadline:
        deadline = pick((b"",), (deadline,))  # a deadline needs an exact start
    software = pick((b'<software><disk-image id="a.img" size="1024"/></software>',
                     b"<software><none/></software>",
                     b'<software><disk-image id="" size="0"/></software>'),
                    (b'<software><disk-image id="a.img" size="x"/></software>',
                     b"<software/>"))
    extra = pick((b"", b'<extra><attr name="a" value="1"/><attr name="b" value=""/></extra>'),
                 (b'<extra><attr name="a" value="1"/><attr name="a" value="2"/></extra>',
                  b'<extra><attr name="a"/></extra>'))
    attributes = pick((b"", b' user=" 7"', b' state="3" submit-time="2007-01-01 10:00:00"'),
                      (b' user="x"', b' colour="red"'))
    return lease(
        id_attribute=pick((b' id="%d"' % number, b""), (b' id="1"', b' id="x"')),
        preemptible=pick((b"true", b"false", b"True", b" FALSE "), (b"yes", b"maybe")),
        nodes=b"".join(node_sets), start=start, duration=pick(
            (b"02:00:00.00", b"1d 1h", b"12:00:00"), tuple(t.encode() for t in BAD_TIMES)),
        deadline=deadline, software=software, extra=extra, attributes=attributes)


@st.composite
def raw_workloads(draw: st.DrawFn) -> bytes:
    noise = draw(st.sampled_from((0, 0, 3, 10, 40)))

    def pick(good: tuple[bytes, ...], bad: tuple[bytes, ...]) -> bytes:
        chosen = bad if draw(st.integers(0, 99)) < noise else good
        return draw(st.sampled_from(chosen))

    requests = []
    arrival = 0
    for number in range(1, draw(st.integers(1, 4)) + 1):
        arrival += draw(st.integers(0, 90_000))
        arrival_text = pick((haizea.format_time(arrival).encode(),), (b"00:00:00.00", b"abc"))
        realduration = pick((b"", b"00:00:10.00"), (b"02:00:00.00", b"0", b"abc"))
        requests.append(request(arrival_text.decode(), draw(raw_leases(number, noise)),
                                realduration or None))
    head = pick((SITE, SITE.replace(b'names="CPU', b'names="GPU CPU'),
                 b"<description>d</description>" + SITE +
                 b'<attributes><attr name="a" value="1"/></attributes>'),
                (b"", SITE.replace(b"CPU Memory Disk", b"CPU Memory"),
                 SITE.replace(b"CPU Memory Disk", b"CPU Disk"),
                 SITE.replace(b"CPU Memory Disk", b"CPU Memory Disk Disk"),
                 b'<attributes><attr name="a" value="1"/><attr name="a" value="2"/></attributes>',
                 b"<site/>"))
    tail = pick((b"",), (b"<description>late</description>", b"<lease-request/>"))
    return lwf(*requests, head=head, tail=tail)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_workloads())
def test_raw_workloads_keep_the_contract(data: bytes) -> None:
    late_head = any(b"</lease-requests>" + part in data
                    for part in (b"<site>", b"<description>", b"<attributes>"))
    assert_contract(data, head_first=not late_head)


def test_a_head_after_the_requests_is_left_to_the_checked_path() -> None:
    data = lwf(request("00:00:01.00", lease()), head=b"", tail=SITE)
    assert checked(data)[1] == []
    assert assert_contract(data, head_first=False) is None


@pytest.mark.parametrize("data", [
    lwf(),  # empty-workload warning
    lwf(request("00:00:01.00", lease()), request("00:00:00.50", lease(id_attribute=b""))),
    lwf(request("00:00:01.00", lease()), request("00:00:02.00", lease())),
    lwf(request("00:00:01.00", lease(nodes=b""))),
    lwf(request("00:00:01.00", lease(nodes=b'<node-set numnodes="1">'
                                          b'<res type="Ponies" amount="1"/></node-set>'))),
    lwf(request("00:00:01.00", lease()),
        head=SITE.replace(b'"CPU Memory Disk"', b'"CPU Memory"').replace(
            b'<res type="CPU" amount="400"/>', b'<res type="Disk" amount="1"/>'
            b'<res type="CPU" amount="400"/>')),
    lwf(request("00:00:01.00", lease()), head=b"<site><resource-types names=\"CPU Memory\"/>"
        b"<nodes/></site>"),
    lwf(request("00:00:01.00", lease(start=b'<start><exact time="01:00:00.00"/></start>',
                                     deadline=b'<deadline time="01:59:59.99"/>'))),
    lwf(request("00:00:01.00", lease(deadline=b'<deadline time="05:00:00.00"/>'))),
    lwf(request("00:00:01.00", lease(), realduration=b"01:00:00.01")),
    lwf(request("00:00:01.00", lease(preemptible=b"no"))),
    lwf(request("00:00:01.00", lease()).replace(b"<lease-request", b"<x/><lease-request")),
    lwf(request("00:00:01.00", lease(nodes=b'<node-set numnodes="1"><res type="CPU" '
                                          b'amount="1"/><res type="CPU" amount="2"/>'
                                          b"</node-set>"))),
    lwf(request("00:00:01.00", lease(nodes=b'<node-set numnodes="1"><res type="CPU" '
                                          b'amount="1"><instance amount="1"/></res>'
                                          b"</node-set>"))),
    lwf(request("00:00:01.00", lease(nodes=b'<node-set numnodes="1"><res type="CPU"/>'
                                          b"</node-set>"))),
    lwf(request("00:00:01.00", lease(duration=b"01:00:0x"))),
    lwf(request("00:00:01.00", lease(duration=b"3600"))),
    lwf(request("00:00:01.00", lease(extra=b'<extra><attr name="a" value="1"/>'
                                           b'<attr name="a" value="1"/></extra>'))),
    lwf(request("00:00:01.00", lease()), head=SITE + b'<attributes><attr name="a" value="1"/>'
        b'<attr name="a" value="2"/></attributes>'),
    lwf(request("00:00:01.00", lease())).replace(b"</lease-requests>",
                                                 b"</lease-requests><lease-requests/>"),
], ids=["empty", "arrival-order", "duplicate-id", "no-nodes", "unknown-type",
        "undeclared-site-type", "empty-site", "deadline-too-early", "deadline-ignored",
        "realduration-ignored", "preemptible-no", "foreign-element", "duplicate-resource",
        "amount-ignored", "res-missing-amount", "duration-syntax", "bare-number",
        "duplicate-extra", "duplicate-attribute", "two-holders"])
def test_each_reported_case_leaves_the_clean_path(data: bytes) -> None:
    assert read_clean_workload(data) is None
    assert checked(data)[1]
    assert_contract(data)


def test_a_lease_without_id_never_takes_an_id_another_lease_uses() -> None:
    """Lease 2 says id="1", the first lease's position: the id-less first lease moves above
    every id of the file, on both paths, and is still written without an id."""
    data = lwf(request("00:00:00.00", lease(b"")), request("00:00:01.00", lease(b' id="1"')),
               request("00:00:02.00", lease(b"")))
    clean = assert_contract(data)
    assert clean is not None and clean.workload is not None
    assert [job.id for job in clean.workload.jobs] == [4, 1, 3]
    assert [job.tasks[0].id for job in clean.workload.jobs] == [4, 1, 3]
    written = haizea.write(clean)
    assert written.data.count(b"<lease id=") == 1
    again = haizea.read(written.data).document
    assert again is not None and again.workload == clean.workload


def test_extra_attrs_with_colons_survive_a_round_trip() -> None:
    """A name with ':' would read as another format's key (or shadow haizea:state): such
    attrs are set aside together and written back as attrs, on both paths."""
    extra = (b'<extra><attr name="site:rack" value="r1"/><attr name="haizea:state" value="x"/>'
             b'<attr name="plain" value="p"/></extra>')
    data = lwf(request("00:00:00.00", lease(extra=extra)))
    clean = assert_contract(data)
    assert clean is not None and clean.workload is not None
    task = clean.workload.jobs[0].tasks[0]
    assert task.extras == {"plain": "p", "haizea:extra-attrs": {"site:rack": "r1",
                                                                "haizea:state": "x"}}
    written = haizea.write(clean)
    assert haizea.normal_form(clean) == clean
    assert b'<attr name="site:rack" value="r1"/>' in written.data
    assert b'state=' not in written.data  # not taken for the lease's state attribute
    again = haizea.read(written.data).document
    assert again is not None and again.workload == clean.workload


SWF_ATTRS = (b'<extra><attr name="SWF_waittime" value="12"/><attr name="SWF_runtime" value="0"/>'
             b'<attr name="SWF_avgcputime" value="95.5"/><attr name="SWF_queue" value="2"/>'
             b'<attr name="SWF_group" value="-1"/><attr name="SWF_execnumber" value="7"/>'
             b'<attr name="SWF_waittime_note" value="x"/></extra>')


def test_swf2lwf_attrs_are_the_trace_fields_on_both_paths() -> None:
    """haizea-swf2lwf's SWF_* attrs read as the model's trace fields, by the clean path as by
    the checked one (-1 is SWF's "not recorded"; SWF_runtime and other attrs stay attrs), and
    are written back from the fields."""
    data = lwf(request("00:00:00.00", lease(extra=SWF_ATTRS)))
    clean = assert_contract(data)
    assert clean is not None and clean.workload is not None
    task = clean.workload.jobs[0].tasks[0]
    assert (task.wait_time_s, task.cpu_time_s, task.queue, task.group, task.application) == (
        12.0, 95.5, "2", None, "7")
    assert task.extras == {"SWF_runtime": "0", "SWF_waittime_note": "x"}
    assert haizea.normal_form(clean) == clean
    written = haizea.write(clean).data
    assert b'<attr name="SWF_waittime" value="12"/>' in written
    assert b'<attr name="SWF_avgcputime" value="95.5"/>' in written
    assert b"SWF_group" not in written
    again = haizea.read(written).document
    assert again is not None and again.workload == clean.workload


@pytest.mark.parametrize("value", [b"-3", b"nan", b"soon"])
def test_an_swf_seconds_attr_that_is_no_duration_stays_an_attr(value: bytes) -> None:
    data = lwf(request("00:00:00.00", lease(
        extra=b'<extra><attr name="SWF_waittime" value="' + value + b'"/></extra>')))
    clean = assert_contract(data)
    assert clean is not None and clean.workload is not None
    task = clean.workload.jobs[0].tasks[0]
    assert task.wait_time_s is None and task.extras == {"SWF_waittime": value.decode()}
    assert haizea.normal_form(clean) == clean
