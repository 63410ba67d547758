"""The text scan of an LWF's requests (``haizea_scan``) and the factored XSD verdict
(``haizea_verdict``).

The scan must read exactly what lxml reads, or decline; the factored verdict must never call
a document valid that libxml2 calls invalid, and must prove valid the plain documents a
real workload is (else the benchmark would measure the fallback). Both are compared with
libxml2 and the checked path on documents whose requests repeat a few shapes with drawn
values, which is the case the factoring is for.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dcx.formats import haizea
from dcx.formats.haizea import fast
from dcx.formats.haizea import scan as haizea_scan
from dcx.formats.haizea import verdict as haizea_verdict
from dcx.formats.haizea.fast import read_clean_workload
from tests.test_haizea_clean_path import SITE, assert_contract, lease, lwf, request

KINDS = haizea_verdict.attribute_kinds()


def scan_of(data: bytes) -> tuple[fast.FastJobs, haizea_scan.Scan] | None:
    return fast._scanned_jobs(data)


def proven(data: bytes) -> bool:
    """The factored verdict alone (no jobs built: the builder stops at bad values)."""
    scan = haizea_scan.Scan(data, KINDS)
    for _ in scan.requests():
        pass
    return scan.proven_valid(fast._parses, fast._validates)


# --------------------------------------------------------------------------- the schema


def test_the_shipped_schema_factors() -> None:
    """If this fails, the XSD has left the argument of haizea_verdict: every LWF is then
    validated whole (correct, but the clean path loses most of its speed)."""
    assert KINDS is not None
    assert KINDS[("lease", "id")] == "xs:integer"
    assert KINDS[("node-set", "numnodes")] == "xs:positiveInteger"
    assert KINDS[("res", "type")] == "pattern:\\S+"
    assert KINDS[("lease-request", "arrival")] == "TimeText"


COMMON = (haizea_verdict.resources.files("dcx.xsd") / "haizea-common.xsd").read_text()


@pytest.mark.parametrize("edit", [
    ('<xs:attribute name="id" type="xs:integer"/>', '<xs:attribute name="id" type="xs:ID"/>'),
    ('<xs:attribute name="user" type="xs:integer"/>',
     '<xs:attribute name="user" type="xs:integer" fixed="1"/>'),
    ('<xs:attribute name="user" type="xs:integer"/>',
     '<xs:attribute name="user" type="xs:decimal"/>'),
    ('<xs:pattern value="\\S+"/>', '<xs:pattern value="[A-Z]+"/>'),
    ("", None),
    ('<xs:element name="lease-request" type="LeaseRequestType" minOccurs="0"\n'
     '                  maxOccurs="unbounded"/>',
     '<xs:element name="lease-request" type="LeaseRequestType" minOccurs="0"\n'
     '                  maxOccurs="1000"/>'),
    ('<xs:complexType name="LeaseType">', '<xs:complexType name="LeaseType" mixed="true">'),
    ('<xs:attribute name="arrival" type="TimeText" use="required"/>',
     '<xs:attribute name="arrival" type="TimeText" use="required"/>'
     '<xs:anyAttribute processContents="lax"/>'),
    ('<xs:minLength value="1"/>', '<xs:minLength value="2"/>'),
    ('<xs:element name="duration" type="TimeType"/>',
     '<xs:element name="duration" type="TimeType"/><xs:element name="start" type="TimeType"/>'),
    ('</xs:schema>', '<xs:element name="x"><xs:unique name="u"><xs:selector xpath="a"/>'
     '<xs:field xpath="@b"/></xs:unique></xs:element></xs:schema>'),
], ids=["id-type", "fixed", "other-type", "other-pattern", "noop", "bounded-requests",
        "mixed", "wildcard", "time-facet", "two-types", "identity"])
def test_a_schema_outside_the_argument_does_not_factor(edit: tuple[str, str | None]) -> None:
    old, new = edit
    assert old in COMMON, old
    text = COMMON if new is None else COMMON.replace(old, new)
    schema = haizea_verdict.etree.fromstring(text.encode())
    if new is None:
        assert haizea_verdict.derive_attribute_kinds(schema) == KINDS
    else:
        with pytest.raises(haizea_verdict._NotFactored):
            haizea_verdict.derive_attribute_kinds(schema)


# --------------------------------------------------------------------------- value checks

VALUE_SLOTS = {
    # kind -> how to place a value in an otherwise valid one-request LWF
    "xs:integer": lambda v: lwf(request("00:00:01.00", lease(id_attribute=b' id="' + v + b'"'))),
    "xs:nonNegativeInteger": lambda v: lwf(request("00:00:01.00", lease(
        software=b'<software><disk-image id="a" size="' + v + b'"/></software>'))),
    "xs:positiveInteger": lambda v: lwf(request("00:00:01.00", lease(
        nodes=b'<node-set numnodes="' + v + b'"><res type="CPU" amount="1"/></node-set>'))),
    "TimeText": lambda v: lwf(request(v.decode(), lease())),
    "pattern:\\S+": lambda v: lwf(request("00:00:01.00", lease(
        nodes=b'<node-set numnodes="1"><res type="' + v + b'" amount="1"/></node-set>'))),
}


def plain_xml_value(text: str) -> bool:
    """An attribute value the scan reads: XML characters only (the document is
    well-formed: checked whole, apart from these checks), no quote, markup, reference,
    tab or line break."""
    return not any(char in '"<&\t\n\r' or char < " " or "\ud800" <= char <= "\udfff"
                   or char in "\ufffe\uffff" for char in text)


@pytest.mark.parametrize("kind", sorted(haizea_verdict.LEXICAL))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_value_the_checks_accept_libxml2_accepts(kind: str, data: st.DataObject) -> None:
    form = re.compile(haizea_verdict.VALUE_FORMS[kind], re.ASCII)
    value = data.draw(st.from_regex(form, fullmatch=True).filter(plain_xml_value))
    assert haizea_verdict.column_holds(kind, [value])
    assert fast._validates(VALUE_SLOTS[kind](value.encode())), (kind, value)


@pytest.mark.parametrize(("kind", "value"), [
    ("xs:integer", "1" * 19), ("xs:integer", "+1"), ("xs:integer", " 1"), ("xs:integer", ""),
    ("xs:integer", "1_0"), ("xs:integer", "\u0661"), ("xs:nonNegativeInteger", "-0"),
    ("xs:nonNegativeInteger", "-1"), ("xs:positiveInteger", "0"),
    ("xs:positiveInteger", "000"), ("TimeText", ""), ("pattern:\\S+", "a b"),
    ("pattern:\\S+", ""),
])
def test_values_outside_the_checks_are_left_to_libxml2(kind: str, value: str) -> None:
    """Not proven is not invalid: libxml2 decides (some of these it accepts)."""
    assert not haizea_verdict.column_holds(kind, [value])


# --------------------------------------------------------------------------- verdicts

GOOD = {
    "id": ("1", "2", "-3", "0", "42", "007"),
    "size": ("0", "1024", "00"),
    "numnodes": ("1", "2", "010"),
    "amount": ("0", "100", "4096"),
    "time": ("00:10:00.00", "1h", "01:00:00.00", "2d 3h"),
    "type": ("CPU", "Memory"),
    "user": ("7", "-1"),
}
BAD = {
    "id": ("x", "1.5", "", "1 2", "1" * 30, "+", "--1"),
    "size": ("-1", "x", "", "1.0", "1" * 30),
    "numnodes": ("0", "-1", "x", "", "+0", "00"),
    "amount": ("-1", "x", "", "1e3"),
    "time": ("",),
    "type": ("", "a b", " CPU"),
    "user": ("x", "", "1.5"),
}
FIRST = {name: pool[0] for name, pool in GOOD.items()}
EDGE = {  # valid for libxml2, outside the checks: the verdict falls back to full validation
    "id": (" 5", "+5", "1" * 20),
    "size": ("-0", "+1", " 3 "),
    "numnodes": ("+1", " 2"),
    "amount": ("-0", "+7"),
    "time": (" ",),
    "type": ("\u00e9",),
    "user": ("+2",),
}


def shaped_request(values: dict[str, str], arrival: str, with_user: bool,
                   two_node_sets: bool) -> bytes:
    """One of four request shapes, filled with ``values``."""
    def v(name: str) -> bytes:
        return values[name].encode()

    node_set = (b'<node-set numnodes="' + v("numnodes") + b'"><res type="' + v("type") +
                b'" amount="' + v("amount") + b'"/></node-set>')
    return b"    " + request(arrival, lease(
        id_attribute=b' id="' + v("id") + b'"',
        nodes=node_set * (2 if two_node_sets else 1),
        duration=v("time"),
        software=b'<software><disk-image id="a.img" size="' + v("size") + b'"/></software>',
        attributes=b' user="' + v("user") + b'"' if with_user else b"")) + b"\n"


@st.composite
def shaped_workloads(draw: st.DrawFn) -> bytes:
    """Requests repeating a few shapes, their values drawn mostly good, some bad or edge."""
    noise = draw(st.sampled_from((0, 0, 2, 10)))
    requests = []
    for number in range(draw(st.integers(2, 12))):
        values = {}
        for name, good in GOOD.items():
            roll = draw(st.integers(0, 99))
            pool = BAD[name] if roll < noise else EDGE[name] if roll < 2 * noise else good
            values[name] = draw(st.sampled_from(pool))
        if values["id"] in GOOD["id"]:
            values["id"] = str(number + 1)  # distinct ids, unless the noise says otherwise
        requests.append(shaped_request(values, haizea.format_time(number * 10.0),
                                       draw(st.booleans()), draw(st.booleans())))
    site = SITE.replace(b'"CPU Memory Disk"', b'"CPU Memory Disk a&#32;b \xc3\xa9"')
    return lwf(*requests, head=site)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shaped_workloads())
@example(lwf(shaped_request(dict(FIRST, id="1"), "00:00:00.00", False, False),
             shaped_request(dict(FIRST, id="x"), "00:00:01.00", False, False)))
def test_the_factored_verdict_is_libxml2s(data: bytes) -> None:
    """Never proven valid when libxml2 says invalid; proven valid when every value is in
    the checks' forms and libxml2 says valid; and the clean path keeps its contract."""
    valid = fast._validates(data)
    is_proven = proven(data)
    assert not is_proven or valid
    ordinary = not any(f'="{value}"'.encode() in data
                       for name, pool in EDGE.items() for value in pool
                       if name not in ("time", "type"))
    if valid and ordinary and b'time=" "' not in data and "\u00e9".encode() not in data:
        assert is_proven
    assert_contract(data)


def test_a_large_workload_is_judged_from_one_request_per_shape() -> None:
    requests = [shaped_request(dict(FIRST, id=str(number + 1)),
                               haizea.format_time(float(number)), number % 2 == 0, False)
                for number in range(300)]
    scanned = scan_of(lwf(*requests))
    assert scanned is not None
    built, scan = scanned
    # two shapes, and the last request again: no line follows it, so its piece differs
    assert len(built.jobs) == 300 and len(scan.representatives) == 3
    assert scan.proven_valid(fast._parses, fast._validates)


def test_a_bad_value_outside_the_representatives_is_caught() -> None:
    requests = [shaped_request(dict(FIRST, id=str(number + 1)),
                               haizea.format_time(float(number)), False, False)
                for number in range(5)]
    requests[3] = requests[3].replace(b'size="0"', b'size="-5"')
    data = lwf(*requests)
    assert not fast._validates(data) and not proven(data)
    assert read_clean_workload(data) is None
    assert_contract(data)


# --------------------------------------------------------------------------- the scan


def plain(count: int = 3) -> bytes:
    return lwf(*(shaped_request(dict(FIRST, id=str(n + 1)), haizea.format_time(float(n)),
                                False, False) for n in range(count)))


@pytest.mark.parametrize("data", [
    plain().replace(b"<lease-requests>\n", b"<lease-requests>\n<!-- c -->"),
    plain().replace(b'size="0"', b'size="0"><![CDATA[x]]></disk-image><x y="'),
    plain().replace(b"<lease-requests>\n", b"<lease-requests>\n<?pi x?>"),
    plain().replace(b'id="a.img"', b'id="a&amp;b"'),
    plain().replace(b'id="a.img"', b"id='a.img'"),
    plain().replace(b'id="a.img"', b'id="a\tb"'),
    plain().replace(b'id="a.img"', b'id="a\nb"'),
    plain().replace(b"<lease-request ", b"<lease-request\n"),
    plain().replace(b"</lease-requests>", b"</lease-requests><!-- late -->"),
    plain().replace(b"<lease-workload", b"<!-- <lease-requests> --><lease-workload"),
    plain().replace(b'<lease id="2"', b'<lease xmlns="" id="2"'),
    plain().replace(b"<lease-requests>", b"<lease-requests >\n  x"),
], ids=["comment", "cdata", "pi", "reference", "single-quotes", "tab", "line-break",
        "split-tag", "after-requests", "hidden-holder", "namespace", "text-before"])
def test_text_the_scan_cannot_read_exactly_is_declined(data: bytes) -> None:
    assert scan_of(data) is None
    assert_contract(data)


def test_quotes_and_markup_characters_inside_values_are_read() -> None:
    data = plain().replace(b'id="a.img"', b"id=\"'a.img' > b\"")
    scanned = scan_of(data)
    assert scanned is not None
    assert {job.tasks[0].image for job in scanned[0].jobs} == {"'a.img' > b"}
    assert assert_contract(data) is not None


def test_too_many_shapes_decline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(haizea_scan, "MAX_RECIPES", 1)
    data = lwf(shaped_request(dict(FIRST, id="1"), "00:00:00.00", False, False),
               shaped_request(dict(FIRST, id="2"), "00:00:01.00", True, False))
    assert scan_of(data) is None
    assert assert_contract(data) is not None


@pytest.mark.parametrize("chunk", [1, 100, 700])
def test_chunks_end_where_requests_start(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = plain(20)
    whole = read_clean_workload(data)
    monkeypatch.setattr(haizea_scan, "CHUNK_BYTES", chunk)
    scanned = scan_of(data)
    assert scanned is not None and len(scanned[0].jobs) == 20
    assert read_clean_workload(data) == whole is not None


def test_the_corpus_lwfs_take_the_scan(corpus_dir: Path) -> None:
    """Real LWFs (indented, one shape per kind of lease) are what the scan is for."""
    corpus = corpus_dir / "haizea"
    read = 0
    for path in sorted(corpus.rglob("*.lwf")):
        data = path.read_bytes()
        if not data.lstrip().startswith(b"<?xml") or b"<lease-request " not in data \
                or b"<!--" in data:  # legacy text; traces/sample.lwf: requests commented out
            continue
        assert proven(data) == fast._validates(data), path  # and not declined
        assert read_clean_workload(data) == \
            read_clean_workload(data, scan=False), path
        read += 1
    assert read > 10
