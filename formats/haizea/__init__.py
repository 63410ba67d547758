"""Haizea 1.1 XML: ``<lease-workload>`` (LWF), ``<lease-annotations>`` (.lwfa), ``<site>``,
``<nodes>`` and ``<lease>``, plus the legacy pre-1.0 10-field text LWF (read only; written
back as XML).

Mapping to the model
--------------------

* A ``<site>`` (or a bare ``<nodes>``) becomes ``Environment(one Datacenter, one Room, one
  Rack)`` whose slots are the expanded machines in document order. Haizea numbers nodes by
  position only, so ``Machine.id`` is not held: the reader leaves it ``None`` and the writer
  reports any id as a loss. Per machine: ``CPU`` amount 100 = one core, so a
  scalar ``CPU 400`` is one ``ProcessingUnit(cores=4)``; a multi-instance ``CPU`` (one
  ``<instance>`` per CPU) is one ``ProcessingUnit`` per instance, which is how the model says
  "sockets". CPU amounts that are not whole cores stay a ``NamedResource("CPU")`` in Haizea
  units. ``Memory`` (MB) becomes one ``StorageUnit`` per instance. Every other type is a
  ``NamedResource(name=type, amount, instances)``. A ``resource-types`` list that says more
  than the nodes use is kept in ``Environment.extras["haizea:resource-types"]``.
* On write, consecutive machines with identical capacities form one ``<node-set>`` (order is
  kept, so a round trip restores the machines in the same order).
* A ``<lease-request>`` becomes a ``Job`` holding one ``Task``: ``arrival`` ->
  ``submit_time_s``, ``<duration>`` -> ``requested_time_s``, ``<realduration>`` ->
  ``runtime_s`` (without one a lease runs for its duration, in Haizea's simulator as in real
  mode, so ``runtime_s = requested_time_s``; the writer writes ``<realduration>`` only when
  the two differ), the node-set -> ``request.nodes`` x per-node amounts (``cores`` = CPU/100,
  ``memory_mb``, other types in ``request.resources``; multi-instance CPU and Memory are kept
  there too, with their ``instances``), ``<start/>``/``<now/>``/``<exact>`` -> ``start_mode``
  (+ ``start_time_s``), ``<deadline>`` -> ``deadline_s``, ``<disk-image>`` -> ``image`` and
  ``image_size_mb`` (``<none/>`` -> ``image=None``), ``preemptible``, ``user`` (kept as the
  integer's text), ``<extra>`` attrs -> ``Task.extras`` (unprefixed: it is Haizea's own
  key/value mechanism; names with ':' are set aside together in
  ``extras["haizea:extra-attrs"]``, since prefixed keys belong to formats). ``state`` and
  ``submit-time`` go to ``extras["haizea:state"]`` and
  ``extras["haizea:submit-time"]``. A lease whose node-sets differ keeps the first one as its
  request and all of them in ``extras["haizea:node-sets"]``, which the writer prefers. A lease
  without ``id`` gets its 1-based request position (or, when another lease of the file uses
  that id, the next number above every id of the file) and ``extras["haizea:id-assigned"]``.
* ``normal_form`` (losses.py, Value restrictions) is what the writer makes of a document
  first. Nodes: one resource per type (the first given survives), types that are not single
  words dropped, amounts whole and not negative, no resource type, unit or extras; a ``CPU``
  resource replaces the machine's CPUs (CPUs of whole cores when it has them, else it stays
  a resource) and a ``Memory`` resource its memory; memory in whole MB. Leases: times on
  the 0.01 s grid; every lease has a duration, the requested time, else the runtime (what a
  user expects of the converted lease; filling it in loses nothing), else 0.01 s (a
  ``task.requested_time_s`` loss); every lease has a runtime, its duration when it has
  none (a ``task.runtime_s`` change: the LWF says how long a lease runs); leases numbered
  1..n in workload order unless every task id is a distinct integer; users that are not
  integers dropped; annotations kept only in a ``.lwfa`` (no leases, no site), which has no
  name or description.
* LWF times are seconds from the workload start (``time_origin`` is ``None``); the writer uses
  Haizea's own ``[D:]HH:MM:SS.ss`` form, so times round-trip at 0.01 s.
* A standalone ``<lease>`` (XML-RPC) has absolute times: ``submit-time``, else the first
  absolute ``<exact>``/``<deadline>``, becomes ``Workload.time_origin``; ``+`` times are
  relative to submission (t = 0).
* ``.lwfa`` becomes ``Workload(annotations=...)``; its times are offsets from each lease's
  submission and are written with a ``+`` prefix, as Haizea does.
* The lease type is derived as Haizea does: empty start = best-effort, ``<now/>`` =
  immediate, ``<exact>`` = AR, ``<exact>`` + ``<deadline>`` = deadline.

Reading an LWF
--------------

An LWF is read by streaming, never as a whole-file tree, in one of three ways with the same
result. The clean path comes first; it gives up at the first thing that would be reported
(a semantic check, an XSD error, or a description, site or attributes element after the
requests) and then the checked path reads the document from the start: elements, each
request validated against its own XSD, every diagnostic with its line, column and XPath.
The clean path reads the requests one of two ways:

* the text scan (``haizea_scan``), for plain text (the usual case): each distinct request
  skeleton (the text with attribute values left out) is parsed once into a recipe, and
  every request is read from its values. The document is judged by the factored verdict
  (``haizea_verdict``): libxml2 checks the whole document is well-formed, validates it with
  one request per skeleton, and each value is checked against its attribute's type; where
  that proves nothing, libxml2 validates the whole document.
* an lxml parser target, while libxml2 validates the whole document, for what the scan
  declines (comments, references or single-quoted values among the requests, tabs or line
  breaks in values, a few hundred distinct request skeletons).

A clean 100,000-request LWF takes 2.2-2.7x the CPU time of a bare lxml parse with the scan,
about 4x through the parser target and 7-8x on the checked path
(``benchmarks/bench_haizea.py``).

Divergences
-----------

* Times: Haizea (mx.DateTime) searches a substring and silently turns a bare number, an ISO
  timestamp or free text into 0 s or the time of day; dcx accepts only the whole string in
  the forms ``[+-][D:]H:M:S[.ss]``, ``[+-][Nd ]H:M[:S[.ss]]`` and ``NdNhNmNs`` (fractions on
  the last colon field or on any unit), and reports anything else as ``haizea.time-syntax``.
  The manual's "DD:HH:MM.SS" is read as Haizea really reads it: ``HH:MM:SS.ss``.
* ``preemptible``: Haizea keeps anything but true/false (any case) as a truthy string; dcx
  reads ``yes``/``no`` (the manual's and OpenNebula's spelling) as booleans with a warning and
  rejects other values.
* Element order is free, as in Haizea (``xs:all``), but unknown elements and attributes are
  errors, where Haizea ignores them; ``numnodes`` must be positive and amounts whole and not
  negative, as the manual says (the code takes 0 and negative numbers).
* Checks Haizea does not make (or makes only in simulated mode) are diagnostics: resource
  types against the site, CPU and Memory in the site, positive durations, deadline not before
  start + duration, unique lease ids (errors); arrivals out of order, a deadline without an
  exact start (Haizea ignores it), a realduration longer than the duration (1.1 ignores it;
  an equal one changes nothing either way, so it passes) (warnings).
* A misplaced XML declaration after leading whitespace (``traces/sample.lwf``) is a warning,
  not a syntax error; Python's ElementTree, which Haizea uses, accepts it.
* The legacy text LWF: ``cpu`` is read as a CPU count (``haizea-lwf2xml`` handles only 1), a
  ``disk`` amount above 0 becomes a ``Disk`` resource, start -1 is best-effort and preemptible,
  anything else an AR that is not preemptible (as ``haizea-lwf2xml``); image names keep their
  quotes.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import io
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, NamedTuple, TypeAlias, TypeVar
from xml.sax.saxutils import quoteattr

from lxml import etree

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import (
    Diagnostic,
    InputError,
    LossCounter,
    ReadResult,
    WriteResult,
    error,
    warning,
)
from dcx.core.limits import paused_gc
from dcx.core.model import (
    Annotation,
    Datacenter,
    Document,
    Environment,
    Id,
    Job,
    Machine,
    MachineState,
    NamedResource,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StartMode,
    StorageUnit,
    Task,
    Workload,
)
from dcx.formats.haizea import scan as haizea_scan
from dcx.formats.haizea import verdict as haizea_verdict
from dcx.parsing import xmlio

ROOT_SCHEMAS: dict[str, str] = {
    "lease-workload": "haizea-lease-workload.xsd",
    "lease-annotations": "haizea-lease-annotations.xsd",
    "site": "haizea-site.xsd",
    "nodes": "haizea-nodes.xsd",
    "lease": "haizea-lease.xsd",
}
REQUEST_SCHEMA = "haizea-lease-request.xsd"
"""One ``<lease-request>``, validated on its own while a large LWF streams past."""

HOLDS: frozenset[str] = frozenset({
    "machine.cpus",
    "machine.cpus.sockets",
    "machine.memory",
    "machine.memory.modules",
    "machine.resources",
    "workload.name",
    "workload.description",
    "workload.attributes",
    "workload.annotations",
    "task.id",
    "task.submit_time_s",
    "task.runtime_s",
    "task.requested_time_s",
    "task.request.nodes",
    "task.request.cores",
    "task.request.memory_mb",
    "task.request.resources",
    "task.deadline_s",
    "task.start",
    "task.preemptible",
    "task.user",
    "task.image",
    "task.extras",
})

Amount: TypeAlias = int | tuple[int, ...]
"""A per-node amount: a scalar, or one value per ``<instance>``."""
Capacity: TypeAlias = tuple[tuple[str, Amount], ...]
"""A node's resources in document order, one entry per type."""

CPU = "CPU"
MEMORY = "Memory"
CPU_PER_CORE = 100
_EXTRA_PREFIX = "haizea:"
_RESOURCE_TYPES_KEY = "haizea:resource-types"
_NODE_SETS_KEY = "haizea:node-sets"
_ID_ASSIGNED_KEY = "haizea:id-assigned"
_STATE_KEY = "haizea:state"
_SUBMIT_TIME_KEY = "haizea:submit-time"
_PREFIXED_EXTRA_KEY = "haizea:extra-attrs"
"""``<extra>`` attrs whose names contain ':', which as plain keys would read as another
format's (or shadow dcx's own ``haizea:`` keys)."""
_TYPE_NAME = re.compile(r"\S+")
"""A resource type name as the XSD takes it."""
_TASK_KEYS = frozenset({_NODE_SETS_KEY, _ID_ASSIGNED_KEY, _STATE_KEY, _SUBMIT_TIME_KEY,
                        _PREFIXED_EXTRA_KEY})

# --------------------------------------------------------------------------- time grammar

# re.ASCII: Haizea's grammar has ASCII digits only (\d would also take other scripts' digits)
_CLOCK = re.compile(r"(?:(\d+):)?(\d\d):(\d\d):(\d\d)\.(\d\d)", re.ASCII)
"""Haizea's own ``[D:]HH:MM:SS.ss``: the form of nearly every time in real files."""
_DHMS = re.compile(r"([+-])?(\d+):(\d+):(\d+):(\d+)(?:\.(\d+))?", re.ASCII)
_HMS = re.compile(r"([+-])?(?:(\d+)d\s*)?(\d+):(\d+)(?::(\d+)(?:\.(\d+))?)?", re.ASCII)
_UNITS = re.compile(
    r"(?=\d)(?:(\d+(?:\.\d+)?)d\s*)?(?:(\d+(?:\.\d+)?)h\s*)?"
    r"(?:(\d+(?:\.\d+)?)m\s*)?(?:(\d+(?:\.\d+)?)s)?", re.ASCII
)
_BARE_NUMBER = re.compile(r"[+-]?\d+(?:[.,]\d+)?", re.ASCII)
_ISO_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}(?:[ T]|$)", re.ASCII)
_ABSOLUTE = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?",
    re.ASCII,
)


class TimeSyntaxError(ValueError):
    """A time string outside the grammar; ``hint`` says what Haizea would have made of it."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def _seconds(whole: int, fraction: str | None) -> float:
    """Exact to 0.01 s: ``c / 100`` for two fraction digits, so written values read back
    bit for bit."""
    if not fraction:
        return float(whole)
    if len(fraction) <= 2:
        return (whole * 100 + int(fraction.ljust(2, "0"))) / 100
    return whole + float("0." + fraction)


@lru_cache(maxsize=16_384)
def parse_time(text: str) -> float:
    """A Haizea delta in seconds; raises ``TimeSyntaxError`` outside the grammar.
    Cached: durations repeat throughout a workload."""
    return parse_time_uncached(text)


def parse_time_uncached(text: str) -> float:
    """``parse_time`` for values that rarely repeat (arrivals, start times, deadlines):
    through the cache, 100,000 distinct arrivals would only evict the durations."""
    clock = _CLOCK.fullmatch(text)
    if clock:
        days, hours, minutes, secs, centis = clock.groups()
        return ((int(days or 0) * 24 + int(hours)) * 360_000 + int(minutes) * 6_000
                + int(secs) * 100 + int(centis)) / 100
    value = text.strip()
    match = _DHMS.fullmatch(value)
    if match:
        sign, days, hours, minutes, secs, fraction = match.groups()
        whole = ((int(days) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(secs)
        seconds = _seconds(whole, fraction)
        return -seconds if sign == "-" else seconds
    match = _HMS.fullmatch(value)
    if match:
        sign, days, hours, minutes, secs, fraction = match.groups()
        whole = ((int(days or 0) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(secs or 0)
        seconds = _seconds(whole, fraction)
        return -seconds if sign == "-" else seconds
    match = _UNITS.fullmatch(value)
    if match and value:
        days, hours, minutes, secs = (float(part) if part else 0.0 for part in match.groups())
        return ((days * 24 + hours) * 60 + minutes) * 60 + secs
    raise _time_error(value)


def _time_error(value: str) -> TimeSyntaxError:
    if _BARE_NUMBER.fullmatch(value):
        return TimeSyntaxError(f"{value!r} is a bare number, not a Haizea time",
                               "Haizea would silently read it as 0 s; write HH:MM:SS[.ss]")
    if _ISO_DATE.match(value):
        return TimeSyntaxError(f"{value!r} is a timestamp, not a Haizea time offset",
                               "Haizea would read only its time of day; LWF times are "
                               "[D:]HH:MM:SS[.ss] from the workload start")
    return TimeSyntaxError(f"{value!r} is not a Haizea time",
                           "use [+-][D:]HH:MM:SS[.ss], H:M or NdNhNmNs; Haizea would "
                           "silently read it as 0 s")


def format_time(seconds: float, plus: bool = False) -> str:
    """Haizea's own form: ``HH:MM:SS.ss``, ``D:HH:MM:SS.ss`` from one day on."""
    centis = round(seconds * 100)
    sign = "-" if centis < 0 else ("+" if plus else "")
    days, rest = divmod(abs(centis), 8_640_000)
    hours, rest = divmod(rest, 360_000)
    minutes, rest = divmod(rest, 6_000)
    secs, centis_left = divmod(rest, 100)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}.{centis_left:02d}"
    return f"{sign}{days}:{clock}" if days else sign + clock


def _parse_absolute(text: str) -> _dt.datetime | None:
    match = _ABSOLUTE.fullmatch(text.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    try:
        moment = _dt.datetime(int(year), int(month), int(day), int(hour or 0),
                              int(minute or 0), int(second or 0))
    except ValueError:
        return None
    if fraction:
        moment += _dt.timedelta(seconds=float("0." + fraction))
    return moment


# --------------------------------------------------------------------------- sniffing

_LEGACY_LINE = re.compile(
    rb"[ \t]*(?:[+-]?\d+(?:\.\d+)?[ \t]+){8}\S+[ \t]+[+-]?\d+(?:\.\d+)?[ \t]*\r?"
)
_MISPLACED_DECLARATION = re.compile(rb"\A(?:\xef\xbb\xbf)?(\s+)(<\?xml[^>]*\?>)")


def sniff(data: bytes) -> bool:
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"<"):
        return xmlio.root_name(data) in ROOT_SCHEMAS
    return _looks_legacy(head)


def _looks_legacy(head: bytes) -> bool:
    lines = head.split(b"\n")
    if len(head) == 4096:
        lines = lines[:-1]  # the last line may be cut
    content = [line for line in lines if line.strip() and not line.lstrip().startswith(b"#")]
    return bool(content) and _LEGACY_LINE.fullmatch(content[0]) is not None


# --------------------------------------------------------------------------- reading


@dataclass
class _Context:
    """Diagnostics and locations while one document is read."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    request: Any = None
    """Streaming: the ``<lease-request>`` being read (earlier ones are already deleted)."""
    request_position: int = 0
    """Streaming: the 1-based position of ``request`` among the requests."""
    data: bytes = b""
    """The input, so diagnostics can give the column of the element they name."""
    request_starts: list[tuple[int, int]] = field(default_factory=list)
    """(offset, line) of the start tag of each streamed request found so far, in order."""

    def request_line(self, position: int | None = None) -> int | None:
        """The source line where streamed request ``position`` (default: the current one)
        starts. libxml2 gives every node of a streamed request past line 65,535 that very
        line (the text it would recover the real one from is deleted), so the requests'
        start tags are counted in the bytes, once, in order, as far as asked."""
        wanted = self.request_position if position is None else position
        starts = self.request_starts
        offset, line = starts[-1] if starts else (-1, 1)
        while len(starts) < wanted:
            match = _REQUEST_TAG.search(self.data, offset + 1)
            if match is None:
                return None
            line += self.data.count(b"\n", max(offset, 0), match.start())
            offset = match.start()
            starts.append((offset, line))
        return starts[wanted - 1][1] if wanted > 0 else None

    def element_line(self, element: Any, position: int | None = None) -> int | None:
        """``element.sourceline``, or past line 65,535 in a streamed request (``position``,
        default: the current one), the line of the first such start tag from the request's
        first line on."""
        line: int | None = element.sourceline
        if line != xmlio.SATURATED_LINE or self.request is None:
            return line
        return self.tag_line(element.tag, position) or line

    def tag_line(self, tag: Any, position: int | None = None) -> int | None:
        """The line of the first ``<tag`` from the first line of streamed request
        ``position`` on (``None`` when it cannot be found)."""
        start = self.request_line(position)
        if start is None or not isinstance(tag, str):
            return None
        found = xmlio.locate_tag(self.data, tag, None,
                                 range(start, start + xmlio.NEAR_LINE_SPAN))
        return found[0] if found is not None else start

    @property
    def request_xpath(self) -> str:
        """Built only when a diagnostic needs it: most requests report nothing."""
        return f"/lease-workload/lease-requests/lease-request[{self.request_position}]"

    def xpath(self, element: Any, attribute: str | None = None) -> str:
        if self.request is not None:
            tree = element.getroottree()
            inner = tree.getpath(element)[len(tree.getpath(self.request)):]
            path = self.request_xpath + inner
        else:
            path = xmlio.element_xpath(element)
        return f"{path}/@{attribute}" if attribute else path

    def report(self, diagnostic: Callable[..., Diagnostic], code: str, message: str,
               element: Any, attribute: str | None = None, hint: str | None = None) -> None:
        line = self.element_line(element)
        self.diagnostics.append(diagnostic(message, code, line=line,
                                           column=self.column(line, element.tag, attribute),
                                           pointer=self.xpath(element, attribute), hint=hint))

    def column(self, line: int | None, tag: str, attribute: str | None) -> int | None:
        """1-based column of the first ``<tag`` on ``line`` (of its ``attribute`` when
        named), or ``None`` when the line does not show it."""
        if not line or not self.data or not isinstance(tag, str):
            return None
        found = xmlio.locate_tag(self.data, tag, attribute, (line,))
        return found[1] if found is not None else None

    def error(self, code: str, message: str, element: Any, attribute: str | None = None,
              hint: str | None = None) -> None:
        self.report(error, code, message, element, attribute, hint)

    def warn(self, code: str, message: str, element: Any, attribute: str | None = None,
             hint: str | None = None) -> None:
        self.report(warning, code, message, element, attribute, hint)

    def time(self, element: Any, attribute: str = "time") -> float | None:
        """A duration (cached parse: they repeat); ``None`` (reported) when malformed."""
        text = element.get(attribute)
        if text is None:
            return None
        try:
            return parse_time(text)
        except TimeSyntaxError as exc:
            self.time_error(exc, element, attribute)
            return None

    def offset(self, element: Any, attribute: str = "time") -> float | None:
        """A point in time (arrival, start, deadline): nearly unique, so not cached."""
        text = element.get(attribute)
        if text is None:
            return None
        try:
            return parse_time_uncached(text)
        except TimeSyntaxError as exc:
            self.time_error(exc, element, attribute)
            return None

    def time_error(self, exc: TimeSyntaxError, element: Any, attribute: str) -> None:
        self.error("haizea.time-syntax", str(exc), element, attribute, exc.hint)

    def xsd(self, schema: Any, target: Any) -> bool:
        """Validate a tree, or (streaming) the current request; False when invalid."""
        if schema.validate(target):
            return True
        near = self.request_line() if self.request is not None and self.data else None
        self.diagnostics.extend(xmlio.xsd_log_diagnostics(schema.error_log, self.data,
                                                          self.request_pointer, near))
        return False

    def request_pointer(self, entry: Any) -> str | None:
        """A streamed request's XSD errors name it in the whole document; ``None`` lets
        xmlio derive the XPath from the entry."""
        path = entry.path or ""
        if self.request is not None and path.startswith("/lease-request"):
            return self.request_xpath + path[len("/lease-request"):]
        return None


def read(data: bytes) -> ReadResult:
    context = _Context()
    try:
        document = _read(data, context)
    except InputError as exc:
        return ReadResult(None, (*context.diagnostics, exc.diagnostic))
    return ReadResult(document, tuple(context.diagnostics))


def _read(data: bytes, context: _Context) -> Document | None:
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith(b"<") and _looks_legacy(head):
        return _read_legacy(data, context)
    problem = xmlio.precheck(data)
    if problem is not None:
        raise InputError(problem)
    data = _blank_misplaced_declaration(data, context)
    context.data = data
    root = xmlio.root_name(data)
    if root == "lease-workload":
        clean = _read_clean_workload(data)
        return clean if clean is not None else _read_workload_stream(data, context)
    if root not in ROOT_SCHEMAS:
        raise InputError(error(f"root element <{root}> is not a Haizea element; expected one "
                               f"of {', '.join(ROOT_SCHEMAS)}", "haizea.root", line=1))
    tree = xmlio.parse_xml(data)
    if not context.xsd(xmlio.load_xsd(ROOT_SCHEMAS[root]), tree):
        return None
    element = tree.getroot()
    if root == "lease-annotations":
        return Document(workload=_read_annotations(element, context))
    if root == "lease":
        return Document(workload=_read_standalone_lease(element, context))
    if root == "site":
        return Document(environment=_read_site(element, context)[0])
    return Document(environment=_environment(_read_node_sets(element, context), None))


def _blank_misplaced_declaration(data: bytes, context: _Context) -> bytes:
    """An XML declaration after leading whitespace is a libxml2 syntax error but
    ElementTree (Haizea) takes it; blanking it keeps every line and column."""
    match = _MISPLACED_DECLARATION.match(data)
    if not match:
        return data
    start, end = match.span(2)
    line = data.count(b"\n", 0, start) + 1
    context.diagnostics.append(warning(
        "the XML declaration does not start the file (whitespace comes first); strict XML "
        "parsers reject this", "haizea.xml-declaration", line=line,
        column=start - (data.rfind(b"\n", 0, start) + 1) + 1))
    return data[:start] + b" " * (end - start) + data[end:]


# ------------------------------------------------------------------ nodes and site


class _NodeSet(NamedTuple):
    """One ``<node-set>``: a tuple, as there is one per lease of a large LWF."""

    nodes: int
    capacity: Capacity


def _read_capacity(node_set: Any, context: _Context) -> Capacity:
    amounts: dict[str, Amount] = {}
    for res in node_set:
        kind = res.get("type")
        text = res.get("amount")
        if len(res):
            if text is not None:
                context.warn("haizea.amount-ignored", f"<res type={kind!r}> has <instance> "
                             "children, so Haizea ignores its amount", res, "amount")
            amount: Amount = tuple(int(instance.get("amount")) for instance in res)
        elif text is None:
            context.error("haizea.res-missing-amount", f"<res type={kind!r}> has neither "
                          "an amount nor <instance> children", res)
            continue
        else:
            amount = int(text)
        if kind in amounts:
            context.warn("haizea.duplicate-resource", f"resource type {kind!r} appears twice in "
                         "one node-set; Haizea keeps the last", res)
        amounts[kind] = amount
    return tuple(amounts.items())


def _read_node_sets(nodes: Any, context: _Context) -> list[_NodeSet]:
    return [_NodeSet(int(node_set.get("numnodes")), _read_capacity(node_set, context))
            for node_set in nodes]


def _read_site(site: Any, context: _Context) -> tuple[Environment, tuple[str, ...]]:
    types_element = site.find("resource-types")
    names = tuple(types_element.get("names").split())
    declared: set[str] = set()
    for name in names:
        if name in declared:
            context.warn("haizea.duplicate-resource-type", f"resource type {name!r} is listed "
                         "twice", types_element, "names")
        declared.add(name)
    missing = [name for name in (CPU, MEMORY) if name not in declared]
    if missing:
        context.error("haizea.site-missing-cpu-memory", "the site must declare CPU and Memory; "
                      f"missing: {' '.join(missing)}", types_element, "names")
    nodes = site.find("nodes")
    node_sets = _read_node_sets(nodes, context)
    for node_set_element, node_set in zip(nodes, node_sets, strict=True):
        for kind, _ in node_set.capacity:
            if kind not in declared:
                context.error("haizea.undeclared-resource-type", f"resource type {kind!r} is "
                              "not in <resource-types>", node_set_element)
    if not node_sets:
        context.warn("haizea.site-empty", "the site has no nodes", nodes)
    return _environment(node_sets, names), names


def _environment(node_sets: list[_NodeSet], names: tuple[str, ...] | None) -> Environment:
    machines: list[Machine] = []
    for node_set in node_sets:
        for _ in range(node_set.nodes):
            machines.append(_machine(node_set.capacity))
    extras: dict[str, Any] = {}
    if names is not None and list(names) != _derived_type_names(machines):
        extras[_RESOURCE_TYPES_KEY] = list(names)
    rack = Rack(slots=tuple(machines))
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),), extras=extras)


def _named(name: str, amount: Amount) -> NamedResource:
    if isinstance(amount, tuple):
        return NamedResource(name, float(sum(amount)), instances=tuple(map(float, amount)))
    return NamedResource(name, float(amount))


def _machine(capacity: Capacity) -> Machine:
    cpus: tuple[ProcessingUnit, ...] = ()
    memory: tuple[StorageUnit, ...] = ()
    resources: list[NamedResource] = []
    for name, amount in capacity:
        values = amount if isinstance(amount, tuple) else (amount,)
        if name == CPU and values and all(value % CPU_PER_CORE == 0 for value in values):
            cpus = tuple(ProcessingUnit(cores=value // CPU_PER_CORE) for value in values)
        elif name == MEMORY and values:
            memory = tuple(StorageUnit(capacity_mb=float(value)) for value in values)
        else:
            resources.append(_named(name, amount))
    return Machine(cpus=cpus, memory=memory, resources=tuple(resources))


def _derived_type_names(machines: Iterable[Machine]) -> list[str]:
    names = [CPU, MEMORY]
    for machine in machines:
        for resource in machine.resources:
            if resource.name not in names:
                names.append(resource.name)
    return names


# ------------------------------------------------------------------ leases


@dataclass
class _Requests:
    """What the checks across requests need (ids, types, arrival order)."""

    ids: dict[int, int | None] = field(default_factory=dict)
    id_positions: dict[int, int] = field(default_factory=dict)
    """Request positions of the ids whose line libxml2 could only give as 65,535."""
    type_counts: dict[str, int] = field(default_factory=dict)
    """Resource type -> how many leases ask for it."""
    type_first_use: dict[str, tuple[int | None, str]] = field(default_factory=dict)
    """Resource type -> (line, XPath) of the first lease asking for it."""
    last_arrival: float | None = None
    out_of_order: int = 0
    first_out_of_order: tuple[int | None, str, float, float] | None = None
    request_cache: dict[tuple[int, Capacity], ResourceRequest] = field(default_factory=dict)


def _settle_assigned_ids(jobs: list[Job], explicit: Collection[int],
                         assigned: Iterable[int]) -> tuple[Job, ...]:
    """Leases without an id take their position, unless a lease of the file uses that id
    explicitly (Haizea 1.1 would take its global counter's next value): then the next
    number above every id of the file, so ids stay unique. ``assigned`` indexes the jobs
    whose id was assigned; they keep ``haizea:id-assigned``, so the writer still omits it."""
    clashes = [index for index in assigned if jobs[index].id in explicit]
    if not clashes:
        return tuple(jobs)
    next_id = max(int(job.id) for job in jobs) + 1
    for index in clashes:
        task = replace(jobs[index].tasks[0], id=next_id)
        jobs[index] = replace(jobs[index], id=next_id, tasks=(task,))
        next_id += 1
    return tuple(jobs)


_REQUEST_TAG = re.compile(rb"<lease-request(?=[\s/>])")

_Built = TypeVar("_Built")


_Plan: TypeAlias = tuple[dict[str, Any], tuple[tuple[str, Any], ...], int]


def _construction_plan(cls: type) -> _Plan | None:
    """Field defaults, default factories and field count of a model dataclass, or ``None``
    when the class must go through its constructor: it has a ``__post_init__``, or slots
    (no ``__dict__`` to fill)."""
    if hasattr(cls, "__post_init__") or "__slots__" in vars(cls):
        return None
    defaults: dict[str, Any] = {}
    factories: list[tuple[str, Any]] = []
    for item in dataclasses.fields(cls):
        if item.default is not dataclasses.MISSING:
            defaults[item.name] = item.default
        elif item.default_factory is not dataclasses.MISSING:
            factories.append((item.name, item.default_factory))
    return defaults, tuple(factories), len(dataclasses.fields(cls))


_PLANS: dict[type, _Plan | None] = {cls: _construction_plan(cls) for cls in (Task, Job)}


def _build(cls: type[_Built], **values: Any) -> _Built:
    """``cls(**values)`` without the frozen-dataclass ``__init__``, which sets fields one
    ``object.__setattr__`` at a time and dominated the cost of streaming 100,000 leases.
    Same fields, same defaults, fresh default-factory values; a missing required field or an
    unknown one raises ``TypeError`` as the constructor would."""
    return _build_from(cls, values)


def _build_from(cls: type[_Built], values: dict[str, Any]) -> _Built:
    """``_build`` taking the values as a dict (no keyword packing on the clean path)."""
    plan = _PLANS.get(cls)
    if plan is None:
        return cls(**values)
    defaults, factories, field_count = plan
    built = object.__new__(cls)
    state = built.__dict__
    state.update(defaults)
    for name, factory in factories:
        if name not in values:
            state[name] = factory()
    state.update(values)
    if len(state) != field_count:
        raise TypeError(f"{cls.__name__}: unknown or missing fields in {sorted(values)}")
    return built


def _resource_request(count: int, capacity: Capacity, cache: dict[tuple[int, Capacity],
                      ResourceRequest]) -> ResourceRequest:
    """Identical requests share one frozen object (large LWFs repeat a few shapes)."""
    key = (count, capacity)
    found = cache.get(key)
    if found is not None:
        return found
    cores = 0.0
    memory_mb: float | None = None
    resources: list[NamedResource] = []
    for name, amount in capacity:
        if name == CPU:
            cores = (sum(amount) if isinstance(amount, tuple) else amount) / CPU_PER_CORE
            if isinstance(amount, tuple):
                resources.append(_named(name, amount))
        elif name == MEMORY:
            memory_mb = float(sum(amount) if isinstance(amount, tuple) else amount)
            if isinstance(amount, tuple):
                resources.append(_named(name, amount))
        else:
            resources.append(_named(name, amount))
    request = ResourceRequest(nodes=count, cores=cores, memory_mb=memory_mb,
                              resources=tuple(resources))
    if len(cache) < 4096:
        cache[key] = request
    return request


def _preemptible(lease: Any, context: _Context) -> bool | None:
    text = lease.get("preemptible")
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("yes", "no"):
        context.warn("haizea.preemptible-yes-no", f"preemptible={text!r}: Haizea understands "
                     "only true/false and keeps this as a (truthy) string", lease, "preemptible",
                     "write true or false")
        return lowered == "yes"
    context.error("haizea.preemptible", f"preemptible={text!r} is not true or false", lease,
                  "preemptible")
    return None


def _lease_extras(attrs: dict[str, Any]) -> dict[str, Any]:
    """A lease's ``<extra>`` attrs as task extras: names with ':' are kept together under
    ``haizea:extra-attrs`` (see there); the writer puts them back as attrs."""
    if not any(":" in name for name in attrs):
        return attrs
    extras = {name: value for name, value in attrs.items() if ":" not in name}
    extras[_PREFIXED_EXTRA_KEY] = {name: value for name, value in attrs.items() if ":" in name}
    return extras


def _read_attrs(parent: Any, context: _Context, what: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for attr in parent:
        name = attr.get("name")
        if name in values:
            context.warn("haizea.duplicate-attr", f"{what} {name!r} is given twice; the last "
                         "one wins", attr, "name")
        values[name] = attr.get("value")
    return values


TimeReader = Callable[[Any], float | None]


def _read_lease(lease: Any, context: _Context, requests: _Requests, *, position: int,
                arrival: float | None, realduration: float | None,
                start_time: TimeReader) -> Task | None:
    """One ``<lease>`` (already valid against the XSD) as a task. Runs once per request of
    a large LWF, so it reads each child once, in document order (``xs:all``: any order)."""
    node_sets: list[_NodeSet] = []
    start_mode = StartMode.ANY
    start_time_s: float | None = None
    duration: float | None = None
    deadline: float | None = None
    deadline_element = duration_element = None
    image: str | None = None
    image_size_mb: float | None = None
    extras: dict[str, Any] = {}
    for child in lease:
        tag = child.tag
        if tag == "nodes":
            node_sets = _read_node_sets(child, context)
        elif tag == "duration":
            duration_element = child
            try:  # inline context.time: this runs once per request
                duration = parse_time(child.get("time"))
            except TimeSyntaxError as exc:
                context.time_error(exc, child, "time")
        elif tag == "start":
            if len(child):
                first = child[0]
                if first.tag == "now":
                    start_mode = StartMode.NOW
                else:
                    start_mode = StartMode.EXACT
                    start_time_s = start_time(first)
        elif tag == "software":
            disk_image = child[0]
            if disk_image.tag == "disk-image":
                image = disk_image.get("id")
                image_size_mb = float(int(disk_image.get("size")))
        elif tag == "deadline":
            deadline = start_time(child)
            deadline_element = child
        elif tag == "extra":
            extras.update(_lease_extras(_read_attrs(child, context, "extra")))

    text_id = lease.get("id")
    if text_id is None:
        lease_id = position
        extras[_ID_ASSIGNED_KEY] = True
    else:
        lease_id = int(text_id)
        if lease_id in requests.ids:
            first_line = requests.ids[lease_id]
            if first_line == xmlio.SATURATED_LINE and lease_id in requests.id_positions:
                first_line = context.tag_line("lease", requests.id_positions[lease_id])
            context.error("haizea.duplicate-lease-id", f"lease id {lease_id} is already used "
                          f"(line {first_line})", lease, "id")
        else:
            requests.ids[lease_id] = lease.sourceline
            if lease.sourceline == xmlio.SATURATED_LINE:  # its real line is found if needed
                requests.id_positions[lease_id] = position
    state = lease.get("state")
    if state is not None:
        extras[_STATE_KEY] = int(state)
    submit_time = lease.get("submit-time")
    if submit_time is not None:
        extras[_SUBMIT_TIME_KEY] = submit_time
    preemptible = _BOOLEAN_SPELLINGS.get(lease.get("preemptible"))
    if preemptible is None:
        preemptible = _preemptible(lease, context)

    if duration is not None and duration <= 0:
        context.error("haizea.duration-not-positive", f"duration {format_time(duration)} is "
                      "not positive", duration_element, "time")
    if realduration is not None and duration is not None and realduration > duration:
        # Equal is no news: ignored or used, the lease runs for its duration.
        context.warn("haizea.realduration-ignored", "realduration is longer than the "
                     "duration; Haizea 1.1 ignores it and the lease ends at its duration",
                     lease)
    if deadline_element is not None and deadline is not None:
        if start_mode is not StartMode.EXACT:
            context.warn("haizea.deadline-ignored", "a deadline without an <exact> start is "
                         "ignored by Haizea", deadline_element)
        elif start_time_s is not None and duration is not None and \
                round(deadline * 100) < round((start_time_s + duration) * 100):  # 0.01 s grid
            context.error("haizea.deadline-too-early", f"deadline {format_time(deadline)} is "
                          f"before start + duration ({format_time(start_time_s + duration)})",
                          deadline_element, "time")

    if not node_sets:
        context.error("haizea.lease-no-nodes", "the lease asks for no node-set", lease)
        return None
    count, capacity, stored = _combined_node_sets(node_sets)
    if stored is not None:
        extras[_NODE_SETS_KEY] = stored
    _note_types(_unique_type_names(node_sets), lease, context, requests)
    user = lease.get("user")
    return _build(
        Task,
        id=lease_id,
        submit_time_s=arrival if arrival is not None else 0.0,
        runtime_s=realduration if realduration is not None else duration,  # runs for its duration
        requested_time_s=duration,
        request=_resource_request(count, capacity, requests.request_cache),
        deadline_s=deadline,
        start_mode=start_mode,
        start_time_s=start_time_s,
        preemptible=preemptible,
        user=user.strip() if user is not None else None,
        image=image,
        image_size_mb=image_size_mb,
        extras=extras,
    )


_BOOLEAN_SPELLINGS: dict[str | None, bool] = {"true": True, "false": False,
                                              "True": True, "False": False}
"""The spellings of nearly every ``preemptible``; others go through ``_preemptible``."""


def _combined_node_sets(node_sets: list[_NodeSet]) -> tuple[int, Capacity, list[Any] | None]:
    """A lease's node count and per-node capacity, plus the ``extras["haizea:node-sets"]``
    value when its node-sets differ (the first one is then the request)."""
    first_set = node_sets[0]
    if len(node_sets) == 1:
        return first_set.nodes, first_set.capacity, None
    if any(node_set.capacity != first_set.capacity for node_set in node_sets):
        stored = [[node_set.nodes, [[name, list(amount) if isinstance(amount, tuple) else amount]
                                    for name, amount in node_set.capacity]]
                  for node_set in node_sets]
        return first_set.nodes, first_set.capacity, stored
    return sum(node_set.nodes for node_set in node_sets), first_set.capacity, None


def _unique_type_names(node_sets: list[_NodeSet]) -> list[str]:
    if len(node_sets) == 1:
        return [name for name, _ in node_sets[0].capacity]
    return list(dict.fromkeys(name for node_set in node_sets for name, _ in node_set.capacity))


def _note_types(names: list[str], lease: Any, context: _Context, requests: _Requests) -> None:
    """Count the leases asking for each resource type and locate the first one."""
    counts = requests.type_counts
    for name in names:
        count = counts.get(name)
        if count is None:
            counts[name] = 1
            requests.type_first_use[name] = (context.element_line(lease), context.xpath(lease))
        else:
            counts[name] = count + 1


def _check_types_against_site(site_names: tuple[str, ...], requests: _Requests,
                              context: _Context) -> None:
    declared = set(site_names)
    for name, count in requests.type_counts.items():
        if name not in declared:
            line, pointer = requests.type_first_use[name]
            context.diagnostics.append(error(
                f"resource type {name!r} is not in the site's resource types "
                f"({' '.join(site_names)}); {count} lease(s) ask for it", "haizea.unknown-"
                "resource-type", line=line, pointer=pointer))


def _note_arrival(arrival: float, line: Callable[[], int | None], pointer: Callable[[], str],
                  requests: _Requests) -> None:
    previous = requests.last_arrival
    if previous is not None and arrival < previous:
        requests.out_of_order += 1
        if requests.first_out_of_order is None:
            requests.first_out_of_order = (line(), pointer(), arrival, previous)
    requests.last_arrival = arrival


def _report_arrival_order(requests: _Requests, context: _Context) -> None:
    if requests.first_out_of_order is None:
        return
    line, pointer, arrival, previous = requests.first_out_of_order
    context.diagnostics.append(warning(
        f"arrival {format_time(arrival)} is earlier than the previous request's "
        f"({format_time(previous)}); {requests.out_of_order} request(s) arrive out of order "
        "and Haizea does not sort them", "haizea.arrival-order", line=line, pointer=pointer))


# ------------------------------------------------------------------ LWF (streaming)


def _read_workload_stream(data: bytes, context: _Context) -> Document | None:
    """The checked path (documents with diagnostics; clean ones take the clean path below).
    Requests are validated and converted one by one, then deleted from the tree, so a
    large LWF never has more than one request in memory; the rest (site, description,
    attributes) is validated with the full XSD at the end.

    Each request is validated against its own XSD once it has ended rather than by libxml2
    during the parse (``iterparse(schema=...)``): that is no faster (100,000 requests, two
    runs: 1.95 s vs 2.08 s and 2.58 s vs 2.42 s CPU, within the noise; see
    ``benchmarks/bench_haizea.py``) and it stops at the first error, where this reports every
    invalid request with its line and XPath."""
    request_schema = xmlio.load_xsd(REQUEST_SCHEMA)
    requests = _Requests()
    jobs: list[Job] = []
    valid = True
    root = None
    holder = None  # the <lease-requests> under the root, once seen
    position = 0
    for _, element in xmlio.iter_elements(data, tags=("lease-request", "lease-workload")):
        if element.tag == "lease-workload":
            root = element if element.getparent() is None else root
            continue
        parent = element.getparent()
        if parent is not holder:  # lxml keeps one proxy per node: identity is cheap
            if not _is_request_holder(parent):
                continue  # misplaced: the whole-document XSD check below reports it
            holder = parent
        position += 1
        context.request = element
        context.request_position = position
        if context.xsd(request_schema, element):
            job = _read_request(element, context, requests, position)
            if job is not None:
                jobs.append(job)
        else:
            valid = False
        context.request = None
        # The request has ended, so the parser no longer touches it; other children of the
        # holder (foreign elements) stay for the skeleton check.
        parent.remove(element)
    if root is None:
        raise InputError(error("no <lease-workload> root element", "haizea.root", line=1))
    for holder in root.iter("lease-requests"):
        for request in holder.findall("lease-request"):
            holder.remove(request)
    if not context.xsd(xmlio.load_xsd(ROOT_SCHEMAS["lease-workload"]), root.getroottree()):
        return None
    environment = None
    site = root.find("site")
    if site is not None:
        environment, names = _read_site(site, context)
        _check_types_against_site(names, requests, context)
    _report_arrival_order(requests, context)
    if not valid:
        return None
    if position == 0:  # a request that was rejected has its own error
        context.diagnostics.append(warning("the workload has no lease requests",
                                           "haizea.empty-workload", line=root.sourceline,
                                           pointer="/lease-workload/lease-requests"))
    description = root.find("description")
    attributes = root.find("attributes")
    assigned = [index for index, job in enumerate(jobs)
                if _ID_ASSIGNED_KEY in job.tasks[0].extras] if requests.ids else ()
    workload = Workload(
        jobs=_settle_assigned_ids(jobs, requests.ids, assigned),
        name=root.get("name"),
        description=description.text or "" if description is not None else None,
        attributes=_read_attrs(attributes, context, "attribute") if attributes is not None
        else {},
    )
    return Document(environment=environment, workload=workload)


def _is_request_holder(parent: Any) -> bool:
    """``/lease-workload/lease-requests``: the only place requests are read from."""
    return parent is not None and parent.tag == "lease-requests" and \
        parent.getparent() is not None and parent.getparent().getparent() is None


def _read_request(element: Any, context: _Context, requests: _Requests,
                  position: int) -> Job | None:
    arrival: float | None = None
    try:  # inline context.offset and context.time: this runs once per request
        arrival = parse_time_uncached(element.get("arrival"))
    except TimeSyntaxError as exc:
        context.time_error(exc, element, "arrival")
    if arrival is not None:
        _note_arrival(arrival, lambda: context.element_line(element),
                      lambda: context.xpath(element, "arrival"), requests)
    realduration = None
    lease = None
    for child in element:
        if child.tag == "lease":
            lease = child
        else:
            try:
                realduration = parse_time(child.get("time"))
            except TimeSyntaxError as exc:
                context.time_error(exc, child, "time")
            if realduration is not None and realduration <= 0:
                context.error("haizea.duration-not-positive", "realduration "
                              f"{format_time(realduration)} is not positive", child, "time")
    task = _read_lease(lease, context, requests, position=position, arrival=arrival,
                       realduration=realduration, start_time=context.offset)
    return _build(Job, id=task.id, tasks=(task,)) if task is not None else None


# ------------------------------------------------------------------ LWF (clean path)
#
# Nearly every large LWF is clean: valid and without a single diagnostic. For those,
# ``_read_clean_workload`` builds the model without building elements at all, from the text
# scan (``haizea_scan``, judged by ``haizea_verdict``) or, where the scan declines, from an
# lxml parser target that keeps only the raw attributes of the request being read while
# libxml2 validates. Either way ``_CleanJobs`` turns raw values into jobs. Elements, source
# lines and XPaths are what make the checked path (``_read_workload_stream``) slow, and they
# serve only diagnostics; so the clean path gives up at the first thing the checked path
# would report (or that it cannot rule out) and the checked path reads the document from the
# start, reporting exactly what it always reported. The clean path's result is the checked
# path's, which tests/test_haizea_clean_path.py checks, both ways, on generated and mutated
# workloads.


class _NotClean(Exception):
    """The checked path would report something here (or the clean path cannot rule it out)."""


_CLOCK_PART_LIMIT = 1 << 14
_clock_hours: dict[str, int] = {}
"""``[D:]HH:`` -> centiseconds; the minutes ``MM:`` and ``SS.ss`` tables below are complete."""
_clock_minutes: dict[str, int] = {f"{minutes:02d}:": minutes * 6_000 for minutes in range(100)}
_clock_seconds: dict[str, int] = {f"{secs:02d}.{centis:02d}": secs * 100 + centis
                                  for secs in range(100) for centis in range(100)}


def parse_offset(text: str) -> float:
    """``parse_time_uncached`` (same value, same errors), faster for Haizea's own
    ``[D:]HH:MM:SS.ss``: distinct arrivals share their hour, minute and second parts, so
    the three parts are looked up in small tables instead of matching the whole string."""
    hours = _clock_hours.get(text[:-8])
    minutes = _clock_minutes.get(text[-8:-5])
    seconds = _clock_seconds.get(text[-5:])
    if hours is None or minutes is None or seconds is None:
        return _parse_offset_and_learn(text)
    return (hours + minutes + seconds) / 100  # parse_time_uncached's sum, in the same order


def _parse_offset_and_learn(text: str) -> float:
    value = parse_time_uncached(text)
    clock = _CLOCK.fullmatch(text)
    if clock is not None and len(_clock_hours) < _CLOCK_PART_LIMIT:
        days, hours = clock.group(1, 2)
        _clock_hours[text[:-8]] = (int(days or 0) * 24 + int(hours)) * 360_000
    return value


def _target_text(value: str) -> str:
    """An attribute value as a parser target gets it, as the tree would hold it: without
    entity substitution libxml2 hands a target each ``&`` of a value as ``&#38;`` (and
    changes nothing else), so the two spellings map one to one."""
    return value.replace("&#38;", "&") if "&" in value else value


_CleanShape: TypeAlias = tuple[Any, ...]
"""A raw ``<node-set>``: its ``numnodes`` text, then ``(type, amount text)`` per ``<res>``
and each ``<instance>`` amount text after its ``<res>``."""


def _clean_node_set(shape: _CleanShape) -> _NodeSet:
    """``_read_node_sets`` for one raw node-set; ``_NotClean`` where it would report."""
    amounts: dict[str, Amount] = {}
    entries = shape[1:]
    index = 0
    while index < len(entries):
        kind, text = entries[index]
        index += 1
        instances: list[int] = []
        while index < len(entries) and not isinstance(entries[index], tuple):
            instances.append(int(entries[index]))
            index += 1
        if bool(instances) == (text is not None) or kind in amounts:
            raise _NotClean  # amount-ignored, res-missing-amount, duplicate-resource
        amounts[kind] = tuple(instances) if instances else int(text)
    return _NodeSet(int(shape[0]), tuple((_target_text(kind), amount)
                                         for kind, amount in amounts.items()))


_REQUEST_SHAPE_LIMIT = 4096
_new = object.__new__
_set_state = object.__setattr__
_DIRECT_STATE = all(
    _construction_plan(cls) is not None
    and tuple(item.name for item in dataclasses.fields(cls)) == names
    for cls, names in (
        (Task, ("id", "submit_time_s", "runtime_s", "requested_time_s", "request",
                "dependencies", "deadline_s", "start_mode", "start_time_s", "preemptible",
                "user", "group", "image", "image_size_mb", "extras")),
        (Job, ("id", "tasks", "name", "user", "extras"))))
"""The clean path may hand Task and Job their finished ``__dict__`` (``_build``'s shortcut
without the defaults merge): no ``__post_init__`` or slots, and the fields are the ones
``_CleanJobs.add`` fills. Otherwise it calls the constructors."""


_NO_IMAGE: tuple[None, None] = (None, None)


class _CleanJobs:
    """The jobs of a clean LWF's requests, however the requests are read (the parser target
    below, or ``haizea_scan``): ``_read_request`` and ``_read_lease`` on raw attribute
    values, raising ``_NotClean`` where those would report. Relies on the document being
    valid, which the caller checks before using anything built here."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.position = 0
        self.ids: set[int] = set()
        self.assigned: list[int] = []
        """Indexes of the jobs whose lease had no id."""
        self.last_arrival = float("-inf")
        self.used_types: set[str] = set()
        self.shapes: dict[_CleanShape, ResourceRequest] = {}
        self.request_objects: dict[tuple[int, Capacity], ResourceRequest] = {}

    def add(self, arrival_text: str, realduration_text: str | None, duration_text: str,
            start_mode: StartMode, exact: str | None, deadline_text: str | None,
            lease: tuple[str | None, str, str | None, str | None, str | None],
            image: tuple[str | None, str | None], extra_attrs: dict[str, Any] | None,
            node_sets: list[_CleanShape]) -> None:
        """One request as a job, from its raw attribute values: ``lease`` holds the
        ``<lease>`` attributes (``haizea_scan.LEASE_ATTRIBUTES``, ``None`` where absent),
        ``image`` the disk image's id and size, ``node_sets`` the raw node-sets (see
        ``_CleanShape``)."""
        self.position += 1
        arrival = parse_offset(arrival_text)
        if arrival < self.last_arrival:
            raise _NotClean  # arrival-order
        self.last_arrival = arrival
        realduration = None
        if realduration_text is not None:
            realduration = parse_time(realduration_text)
            if realduration <= 0:
                raise _NotClean  # duration-not-positive
        duration = parse_time(duration_text)
        if duration <= 0 or (realduration is not None and realduration > duration):
            raise _NotClean  # duration-not-positive, realduration-ignored
        start_time = parse_offset(exact) if exact is not None else None
        deadline = None
        if deadline_text is not None:
            deadline = parse_offset(deadline_text)
            if start_time is None or \
                    round(deadline * 100) < round((start_time + duration) * 100):
                raise _NotClean  # deadline-ignored, deadline-too-early

        extras = {} if extra_attrs is None else _lease_extras(extra_attrs)
        text_id, preemptible_text, user, state, submit_time = lease
        if text_id is None:
            lease_id = self.position
            extras[_ID_ASSIGNED_KEY] = True
            self.assigned.append(len(self.jobs))
        else:
            lease_id = int(text_id)
            if lease_id in self.ids:
                raise _NotClean  # duplicate-lease-id
            self.ids.add(lease_id)
        if user is not None:
            user = _target_text(user).strip()
        if state is not None:
            extras[_STATE_KEY] = int(state)
        if submit_time is not None:
            extras[_SUBMIT_TIME_KEY] = _target_text(submit_time)
        preemptible = _BOOLEAN_SPELLINGS.get(preemptible_text)
        if preemptible is None:
            lowered = preemptible_text.strip().lower()
            if lowered not in ("true", "false"):
                raise _NotClean  # preemptible-yes-no, preemptible
            preemptible = lowered == "true"

        if len(node_sets) == 1:
            key = node_sets[0]
            request = self.shapes.get(key)
            if request is None:
                request = self.single_request(key)
        else:
            request = self.combined_request(node_sets, extras)
        image_id, image_text_size = image
        image_size = None
        if image_id is not None:
            image_id = _target_text(image_id)
            image_size = float(int(image_text_size or ""))
        # Every field, in the model's order (_DIRECT_STATE checks the names).
        task_state = {
            "id": lease_id, "submit_time_s": arrival,
            "runtime_s": realduration if realduration is not None else duration,
            "requested_time_s": duration, "request": request, "dependencies": (),
            "deadline_s": deadline, "start_mode": start_mode, "start_time_s": start_time,
            "preemptible": preemptible, "user": user, "group": None, "image": image_id,
            "image_size_mb": image_size, "extras": extras,
        }
        if _DIRECT_STATE:
            task = _new(Task)
            _set_state(task, "__dict__", task_state)
            job = _new(Job)
            _set_state(job, "__dict__", {"id": lease_id, "tasks": (task,), "name": None,
                                         "user": None, "extras": {}})
        else:
            job = Job(id=lease_id, tasks=(Task(**task_state),))
        self.jobs.append(job)

    def single_request(self, key: _CleanShape) -> ResourceRequest:
        node_set = _clean_node_set(key)
        self.used_types.update(name for name, _ in node_set.capacity)
        request = _resource_request(node_set.nodes, node_set.capacity, self.request_objects)
        if len(self.shapes) < _REQUEST_SHAPE_LIMIT:
            self.shapes[key] = request
        return request

    def combined_request(self, raw_sets: list[_CleanShape],
                         extras: dict[str, Any]) -> ResourceRequest:
        if not raw_sets:
            raise _NotClean  # lease-no-nodes
        node_sets = [_clean_node_set(raw) for raw in raw_sets]
        count, capacity, stored = _combined_node_sets(node_sets)
        if stored is not None:
            extras[_NODE_SETS_KEY] = stored
        self.used_types.update(_unique_type_names(node_sets))
        return _resource_request(count, capacity, self.request_objects)


class _CleanLwfTarget:
    """lxml parser target: the lease requests of an LWF handed to ``_CleanJobs`` while
    libxml2 parses and validates. ``start`` sees every element; a request is handed over
    when the next one starts, or at the end. Relies on the document being valid (``xs:all``
    in any order, one ``<lease>`` per request, ``<res>`` only in a ``<node-set>``)."""

    def __init__(self) -> None:
        self.built = _CleanJobs()
        self.in_requests = False
        self.request: Any = None
        self.realduration: str | None = None
        self.lease: Any = None
        self.duration: str | None = None
        self.start_mode = StartMode.ANY
        self.exact: str | None = None
        self.deadline: str | None = None
        self.image: tuple[str | None, str | None] = _NO_IMAGE
        self.extras: dict[str, Any] | None = None
        self.node_sets: list[list[Any]] = []
        self.shape: list[Any] = []

    def start(self, tag: str, attrib: Any) -> None:
        # The most frequent elements first: this runs for every element of the document.
        if tag == "res":
            self.shape.append((attrib.get("type"), attrib.get("amount")))
        elif tag == "lease-request":
            if self.request is not None:
                self.finish()
            self.request = attrib
            self.realduration = self.lease = self.duration = None
            self.exact = self.deadline = self.extras = None
            self.image = _NO_IMAGE
            self.start_mode = StartMode.ANY
            self.node_sets = []
        elif tag == "node-set":
            self.shape = [attrib.get("numnodes")]
            self.node_sets.append(self.shape)
        elif tag == "lease":
            self.lease = attrib
        elif tag == "duration":
            self.duration = attrib.get("time")
        elif tag == "disk-image":
            self.image = (attrib.get("id"), attrib.get("size"))
        elif tag == "exact":
            self.start_mode = StartMode.EXACT
            self.exact = attrib.get("time")
        elif tag == "realduration":
            self.realduration = attrib.get("time")
        elif tag == "deadline":
            self.deadline = attrib.get("time")
        elif tag == "now":
            self.start_mode = StartMode.NOW
        elif tag == "attr":
            if self.extras is not None:  # else the root's <attributes>: read elsewhere
                name = _target_text(attrib.get("name"))
                if name in self.extras:
                    raise _NotClean  # duplicate-attr
                self.extras[name] = _target_text(attrib.get("value"))
        elif tag == "instance":
            self.shape.append(attrib.get("amount"))
        elif tag == "extra":
            self.extras = {}
        elif tag == "lease-requests":
            self.in_requests = True
        elif self.in_requests and tag in ("site", "description", "attributes"):
            raise _NotClean  # read from the elements before <lease-requests> only

    def close(self) -> _CleanJobs:
        if self.request is not None:
            self.finish()
        return self.built

    def finish(self) -> None:
        """The request that has ended, handed over."""
        lease = self.lease
        if lease is None or self.duration is None:
            raise _NotClean  # invalid: the XSD check will say so
        self.built.add(self.request.get("arrival"), self.realduration, self.duration,
                       self.start_mode, self.exact, self.deadline,
                       (lease.get("id"), lease.get("preemptible"), lease.get("user"),
                        lease.get("state"), lease.get("submit-time")),
                       self.image, self.extras, [tuple(shape) for shape in self.node_sets])


def _add_scanned(built: _CleanJobs, recipe: haizea_scan.Recipe,
                 values: list[str | None]) -> None:
    """One request read by ``haizea_scan`` handed to ``built`` (an absent field's index
    reads the ``None`` at the end of ``values``). A single node-set is looked up by its raw
    values in the recipe's cache: same values, same node-set."""
    extras = None
    if recipe.extras is not None:
        extras = {}
        for name_index, value_index in recipe.extras:
            name = values[name_index]
            if name in extras:
                raise _NotClean  # duplicate-attr
            extras[name] = values[value_index]
    templates = recipe.node_sets
    if len(templates) == 1:
        key = tuple(values[recipe.nodes])
        raw = recipe.shapes.get(key)
        if raw is None:
            raw = templates[0].raw(values)
            if len(recipe.shapes) < _REQUEST_SHAPE_LIMIT:
                recipe.shapes[key] = raw
        node_sets = [raw]
    else:
        node_sets = [template.raw(values) for template in templates]
    lease = recipe.lease_attributes
    built.add(values[recipe.arrival], values[recipe.realduration],
              values[recipe.duration], recipe.start_mode,
              values[recipe.exact], values[recipe.deadline],
              (values[lease["id"]], values[lease["preemptible"]],
               values[lease["user"]], values[lease["state"]], values[lease["submit-time"]]),
              (values[recipe.image_id], values[recipe.image_size]), extras, node_sets)


def _hardened_options() -> dict[str, Any]:
    """xmlio's parser settings (no DTD, entities or network, libxml2's limits), for the two
    parsers the clean path builds itself: xmlio has no entry point for a parser target or
    for a parse that stops early, and ``_read`` has already run ``xmlio.precheck``."""
    options = xmlio.parser_options()
    options.pop("collect_ids")  # not an iterparse option, and ids are never looked up
    return options


def _workload_head(data: bytes) -> tuple[Any, list[Any]] | None:
    """The root and its children before ``<lease-requests>`` (description, site,
    attributes), as elements with lines, from a parse that stops at ``<lease-requests>``;
    ``None`` when there is no such element under the root or the head is malformed."""
    root = None
    try:
        for _, element in etree.iterparse(io.BytesIO(data), events=("start",),
                                          **_hardened_options()):
            if root is None:
                root = element
            elif element.tag == "lease-requests" and element.getparent() is root:
                head: list[Any] = []
                for child in root:
                    if child is element:
                        return root, head
                    head.append(child)
    except etree.XMLSyntaxError:
        return None
    return None


_CLEAN_PATH_FAULTS = (_NotClean, etree.LxmlError, ValueError, TypeError, AttributeError,
                      LookupError)
"""What ends the clean path: the request builder works on raw values before the XSD verdict,
so in an invalid document a missing attribute (None) or a malformed number fails in Python
first. Clean documents never raise them (tests/test_haizea_clean_path.py), so catching them
cannot hide a fault of the clean path."""


class _NoEvents:
    """A parser target that takes no events: libxml2 parses (and validates, given a
    schema) without a tree and without calling into Python."""

    def close(self) -> None:
        return None


def _parses(data: bytes, schema: etree.XMLSchema | None = None) -> bool:
    """Whether ``data`` is well-formed (and valid against ``schema``): no libxml2 message
    at all."""
    parser = etree.XMLParser(target=_NoEvents(), schema=schema, **_hardened_options())
    try:
        etree.fromstring(data, parser)
    except etree.LxmlError:
        return False
    return not len(parser.error_log)


def _validates(data: bytes) -> bool:
    """Whether an LWF is well-formed and valid against the LWF XSD."""
    return _parses(data, xmlio.load_xsd(ROOT_SCHEMAS["lease-workload"]))


@lru_cache(maxsize=1)
def _lwf_attribute_kinds() -> dict[tuple[str, str], str] | None:
    return haizea_verdict.attribute_kinds()


def _scanned_jobs(data: bytes) -> tuple[_CleanJobs, haizea_scan.Scan] | None:
    """The requests read from the text (``haizea_scan``), and the scan that judges the
    document; ``None`` when the scan declines the text. Nothing here holds until the
    document is known to be valid."""
    try:
        scan = haizea_scan.Scan(data, _lwf_attribute_kinds())
        built = _CleanJobs()
        for recipe, values in scan.requests():
            _add_scanned(built, recipe, values)
    except haizea_scan.Declined:
        return None
    return built, scan


def _parsed_jobs(data: bytes) -> _CleanJobs | None:
    """The requests read by the parser target while libxml2 validates; ``None`` when the
    document is invalid."""
    target = _CleanLwfTarget()
    parser = etree.XMLParser(target=target, schema=xmlio.load_xsd(
        ROOT_SCHEMAS["lease-workload"]), **_hardened_options())
    built: _CleanJobs = etree.fromstring(data, parser)
    return None if len(parser.error_log) else built


def _read_clean_workload(data: bytes, scan: bool = True) -> Document | None:
    """The document as ``_read_workload_stream`` reads it, when that reports nothing; else
    ``None`` (nothing is reported here). The requests come from the text scan, with a
    separate validation, unless it declines the text (or ``scan`` is false: tests compare
    the two), then from the parser target. See "LWF (clean path)" above."""
    found = _workload_head(data)
    if found is None:
        return None
    root, head = found
    try:
        with paused_gc():
            scanned = _scanned_jobs(data) if scan else None
            if scanned is None:
                built = _parsed_jobs(data)
            else:
                built, text_scan = scanned
                if not text_scan.proven_valid(_parses, _validates) and not _validates(data):
                    return None
    except _CLEAN_PATH_FAULTS:
        return None
    if built is None or built.position == 0:
        return None  # invalid, or empty-workload
    scratch = _Context(data=data)  # the head's checks report here: any report -> None
    parts = {element.tag: element for element in reversed(head)}  # the first of each
    environment = None
    site = parts.get("site")
    if site is not None:
        environment, names = _read_site(site, scratch)
        if not built.used_types <= set(names):
            return None  # unknown-resource-type
    description = parts.get("description")
    attributes = parts.get("attributes")
    workload = Workload(
        jobs=_settle_assigned_ids(built.jobs, built.ids, built.assigned),
        name=root.get("name"),
        description=description.text or "" if description is not None else None,
        attributes=_read_attrs(attributes, scratch, "attribute") if attributes is not None
        else {},
    )
    return None if scratch.diagnostics else Document(environment=environment,
                                                     workload=workload)


# ------------------------------------------------------------------ standalone lease


def _read_standalone_lease(lease: Any, context: _Context) -> Workload:
    """XML-RPC leases carry absolute times; they are placed on an axis whose origin is the
    submit time, else the first absolute time in the lease."""
    origin: _dt.datetime | None = None
    submit_text = lease.get("submit-time")
    if submit_text is not None:
        origin = _parse_absolute(submit_text)
        if origin is None:
            context.error("haizea.time-syntax", f"submit-time {submit_text!r} is not an "
                          "absolute time (YYYY-MM-DD HH:MM:SS)", lease, "submit-time")

    def absolute_or_relative(element: Any) -> float | None:
        nonlocal origin
        text = element.get("time")
        moment = _parse_absolute(text)
        if moment is None:
            return context.time(element)
        if origin is None:
            origin = moment
        return (moment - origin).total_seconds()

    task = _read_lease(lease, context, _Requests(), position=1, arrival=0.0, realduration=None,
                       start_time=absolute_or_relative)
    if task is not None:
        extras = {key: value for key, value in task.extras.items() if key != _SUBMIT_TIME_KEY}
        task = replace(task, extras=extras)
    jobs = (Job(id=task.id, tasks=(task,)),) if task is not None else ()
    return Workload(jobs=jobs, time_origin=origin.isoformat() if origin else None)


# ------------------------------------------------------------------ annotations


def _read_annotations(root: Any, context: _Context) -> Workload:
    annotations: list[Annotation] = []
    attributes: dict[str, Any] = {}
    with_id = without_id = 0
    for element in root:
        if element.tag == "attributes":
            attributes = _read_attrs(element, context, "attribute")
            continue
        target = element.get("id")
        with_id += target is not None
        without_id += target is None
        if with_id and without_id:
            context.error("haizea.annotation-ids-mixed", "some annotations have an id and "
                          "some do not; Haizea needs all or none", element)
        annotations.append(_read_annotation(element, context))
    return Workload(attributes=attributes, annotations=tuple(annotations))


def _read_annotation(element: Any, context: _Context) -> Annotation:
    start_mode: StartMode | None = None
    start_offset = deadline_offset = image_size = None
    image: str | None = None
    software_none = False
    extras: dict[str, Any] = {}
    for child in element:
        if child.tag == "start":
            start_mode = StartMode.ANY
            if len(child):
                start_mode = StartMode.NOW if child[0].tag == "now" else StartMode.EXACT
                if start_mode is StartMode.EXACT:
                    start_offset = context.time(child[0])
        elif child.tag == "deadline":
            deadline_offset = context.time(child)
        elif child.tag == "software":
            software_none = child[0].tag == "none"
            if not software_none:
                image = child[0].get("id")
                image_size = float(int(child[0].get("size")))
        elif child.tag == "extra":
            extras = _read_attrs(child, context, "extra")
    target = element.get("id")
    return Annotation(target=int(target) if target is not None else None,
                      start_mode=start_mode, start_offset_s=start_offset,
                      deadline_offset_s=deadline_offset, image=image, image_size_mb=image_size,
                      software_none=software_none, extras=extras)


# ------------------------------------------------------------------ legacy text LWF

_LEGACY_FIELDS = ("submit", "start", "duration", "realduration", "numnodes", "cpu", "mem",
                  "disk", "image", "imagesize")


def _read_legacy(data: bytes, context: _Context) -> Document | None:
    """Pre-1.0 text: ``submit start duration realduration numnodes cpu mem disk image
    imagesize`` per line, seconds and MB, start -1 = best-effort."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(error("file is not valid UTF-8", "haizea.legacy-encoding",
                               line=line)) from None
    requests = _Requests()
    jobs: list[Job] = []
    request_lines = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        content = raw.split("#", 1)[0].strip()
        if not content:
            continue
        request_lines += 1
        task = _legacy_task(content, number, len(jobs) + 1, context, requests)
        if task is not None:
            jobs.append(Job(id=task.id, tasks=(task,)))
    _report_arrival_order(requests, context)
    if request_lines == 0:  # a line that was rejected has its own error
        context.diagnostics.append(warning("the workload has no lease requests",
                                           "haizea.empty-workload", line=1))
    return Document(workload=Workload(jobs=tuple(jobs)))


def _legacy_task(content: str, line: int, position: int, context: _Context,
                 requests: _Requests) -> Task | None:
    fields = content.split()
    pointer = ""
    if len(fields) != len(_LEGACY_FIELDS):
        context.diagnostics.append(error(
            f"legacy LWF lines have {len(_LEGACY_FIELDS)} fields "
            f"({' '.join(_LEGACY_FIELDS)}); this one has {len(fields)}", "haizea.legacy-fields",
            line=line, pointer=pointer))
        return None
    numbers: dict[str, float] = {}
    for name, value in zip(_LEGACY_FIELDS, fields, strict=True):
        if name == "image":
            continue
        try:
            numbers[name] = float(value)
        except ValueError:
            numbers[name] = float("nan")
        if numbers[name] != numbers[name] or abs(numbers[name]) == float("inf"):
            context.diagnostics.append(error(f"{name} {value!r} is not a number",
                                             "haizea.legacy-number", line=line, pointer=pointer))
            return None
    problems = [(name, "haizea.duration-not-positive", "a positive duration")
                for name in ("duration", "realduration") if numbers[name] <= 0]
    if numbers["numnodes"] < 1 or not numbers["numnodes"].is_integer():
        problems.append(("numnodes", "haizea.legacy-number", "a positive integer"))
    for name, code, expected in problems:
        context.diagnostics.append(error(f"{name} {numbers[name]:g} is not {expected}", code,
                                         line=line, pointer=pointer))
    if problems:
        return None
    _note_arrival(numbers["submit"], lambda: line, lambda: pointer, requests)
    best_effort = numbers["start"] == -1
    resources = (NamedResource("Disk", numbers["disk"]),) if numbers["disk"] > 0 else ()
    request = ResourceRequest(nodes=int(numbers["numnodes"]), cores=numbers["cpu"],
                              memory_mb=numbers["mem"], resources=resources)
    return Task(
        id=position,
        submit_time_s=numbers["submit"],
        runtime_s=numbers["realduration"],
        requested_time_s=numbers["duration"],
        request=request,
        start_mode=StartMode.ANY if best_effort else StartMode.EXACT,
        start_time_s=None if best_effort else numbers["start"],
        preemptible=best_effort,
        image=fields[8],
        image_size_mb=numbers["imagesize"],
    )


# --------------------------------------------------------------------------- writing


def _text(value: Any) -> str:
    """A string XML 1.0 can carry, or an ``InputError`` that stops the write."""
    text = str(value)
    problem = xmlio.check_xml_text(text)
    if problem is not None:
        raise InputError(error(f"{text[:40]!r}: {problem}", "haizea.write.character"))
    return text


def _whole(value: float, losses: LossCounter, field_path: str, detail: str) -> int:
    """Haizea amounts are non-negative integers; anything else is rounded and reported."""
    rounded = max(0, round(value))
    if abs(rounded - value) > 1e-9:
        losses.add(field_path, 1, detail)
    return rounded


def _amount(resource: NamedResource, losses: LossCounter, field_path: str) -> Amount:
    detail = "Haizea amounts are whole numbers"
    if resource.type is not None or resource.unit is not None \
            or _carries_extras(resource.extras):
        losses.add(field_path, 1, "resource type, unit and extras")
    if resource.instances:
        return tuple(_whole(value, losses, field_path, detail) for value in resource.instances)
    return _whole(resource.amount, losses, field_path, detail)


def write(document: Document) -> WriteResult:
    losses = LossCounter()
    for field_path, count in sorted(_normal_form_counts(document).items()):
        losses.add(field_path, count, _NORMAL_FORM_DETAILS[field_path])
    document = normal_form(document)
    try:
        root = _document_element(document, losses)
        requests = _requests_text(document, losses)
    except InputError as exc:
        return WriteResult(b"", losses.losses(), (exc.diagnostic,))
    data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    if requests is not None:
        before, after = data.split(_REQUESTS_MARK.encode())
        data = b"".join((before.rstrip(b" "), requests.encode(), after.lstrip(b"\n")))
    return WriteResult(data, losses.losses())


_USER_ID = re.compile(r"[+-]?\d+", re.ASCII)
_SHORTEST_LEASE_S = 0.01
"""Haizea's time grid: the shortest duration a lease can ask for."""
_TIME_FIELDS = ("submit_time_s", "runtime_s", "requested_time_s", "deadline_s", "start_time_s")
_NORMAL_FORM_DETAILS = {
    "workload.annotations": "an LWF cannot hold annotations; write them to a separate .lwfa",
    "workload.name": "a .lwfa has no name",
    "workload.description": "a .lwfa has no description",
    "task.id": "Haizea lease ids are integers; leases were numbered 1..n in workload order",
    "task.submit_time_s": "Haizea times are kept to 0.01 s",
    "task.runtime_s": "Haizea times are kept to 0.01 s and a realduration is positive; "
                      "without one a lease runs for its duration",
    "task.requested_time_s": "a lease needs a positive duration; without a requested time "
                             "or runtime it asks for 0.01 s",
    "task.user": "Haizea user ids are integers",
    "task.deadline_s": "Haizea times are kept to 0.01 s",
    "task.start": "Haizea times are kept to 0.01 s",
    "machine.cpus": "a CPU named resource replaces the machine's CPUs",
    "machine.memory": "Haizea memory is whole MB; a Memory named resource replaces it",
    "machine.resources": "Haizea keeps one whole, non-negative amount per single-word type, "
                         "without type, unit or extras; CPU and Memory are the machine's "
                         "CPUs and memory",
}


def _on_grid(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 100) / 100


def _positive(seconds: float | None) -> float | None:
    return seconds if seconds is not None and seconds > 0 else None


def _task_normal_form(task: Task, task_id: Id) -> Task:
    runtime = _positive(_on_grid(task.runtime_s))
    # The lease <duration> is the requested time; with only a runtime, Haizea is asked for
    # the time the task ran, which is what a user expects of the converted lease.
    requested = _positive(_on_grid(task.requested_time_s)) or runtime or _SHORTEST_LEASE_S
    runtime = runtime or requested  # a lease without <realduration> runs for its duration
    user = task.user if task.user is None or _USER_ID.fullmatch(task.user) else None
    changes = {"id": task_id, "submit_time_s": round(task.submit_time_s * 100) / 100,
               "user": user, "runtime_s": runtime, "requested_time_s": requested,
               "deadline_s": _on_grid(task.deadline_s),
               "start_time_s": _on_grid(task.start_time_s)}
    if all(getattr(task, name) == value for name, value in changes.items()):
        return task  # already in normal form (any LWF read back): no copy
    return replace(task, **changes)


def _whole_amount(value: float) -> int:
    """Haizea amounts are non-negative integers."""
    return max(0, round(value))


def _carries_extras(extras: dict[str, Any]) -> bool:
    """Whether ``extras`` has keys a format holding them would keep: plain or Haizea's own
    (losses: Extras; other formats' keys are nobody's loss here)."""
    return any(":" not in key or key.startswith(_EXTRA_PREFIX) for key in extras)


def _resource_normal_form(resource: NamedResource) -> tuple[NamedResource, bool]:
    """A ``<res>`` as Haizea reads it back (whole amounts; no type, unit or extras), and
    whether that changed anything a format holding named resources keeps."""
    if resource.instances:
        instances = tuple(float(_whole_amount(value)) for value in resource.instances)
        normal = NamedResource(resource.name, float(sum(instances)), instances=instances)
    else:
        normal = NamedResource(resource.name, float(_whole_amount(resource.amount)))
    changed = (normal.amount != resource.amount or normal.instances != resource.instances
               or resource.type is not None or resource.unit is not None
               or _carries_extras(resource.extras))
    return normal, changed


def _whole_cores(resource: NamedResource) -> tuple[int, ...] | None:
    """The per-instance core counts of a ``CPU`` resource, or ``None`` when some instance
    is not a whole number of cores (then it stays a named resource, as the reader keeps it)."""
    values = resource.instances or (resource.amount,)
    if all(value % CPU_PER_CORE == 0 for value in values):
        return tuple(int(value) // CPU_PER_CORE for value in values)
    return None


def _machine_normal_form(machine: Machine) -> tuple[Machine, frozenset[str]]:
    """What a Haizea node makes of ``machine``, and the held field paths that changed:
    one resource per type (the first given survives), types that are not single words
    dropped, amounts whole and not negative; a ``CPU`` resource replaces the machine's CPUs
    (as CPUs of whole cores, else as itself) and a ``Memory`` resource its memory."""
    lost: set[str] = set()
    named: dict[str, NamedResource] = {}
    for resource in machine.resources:
        if not _TYPE_NAME.fullmatch(resource.name) or resource.name in named:
            lost.add("machine.resources")
            continue
        named[resource.name], changed = _resource_normal_form(resource)
        if changed:
            lost.add("machine.resources")
    cpus = machine.cpus
    cpu_resource = named.pop(CPU, None)
    leading: tuple[NamedResource, ...] = ()
    if cpu_resource is not None:
        if cpus:
            lost.add("machine.cpus")
        cores = _whole_cores(cpu_resource)
        if cores is None:
            cpus, leading = (), (cpu_resource,)
        else:
            cpus = tuple(ProcessingUnit(cores=count) for count in cores)
            lost.add("machine.resources")  # it comes back as CPUs, not as a resource
    memory_resource = named.pop(MEMORY, None)
    if memory_resource is not None:
        if machine.memory:
            lost.add("machine.memory")
        lost.add("machine.resources")  # it comes back as memory, not as a resource
        memory = tuple(StorageUnit(capacity_mb=value) for value in
                       memory_resource.instances or (memory_resource.amount,))
    else:
        memory = tuple(replace(unit, capacity_mb=float(_whole_amount(unit.capacity_mb)))
                       for unit in machine.memory)
        if memory != machine.memory:
            lost.add("machine.memory")
    normal = replace(machine, cpus=cpus, memory=memory,
                     resources=leading + tuple(named.values()))
    return normal, frozenset(lost)


def _environment_normal_form(environment: Environment) -> tuple[Environment, dict[str, int]]:
    """``environment`` with every machine in ``_machine_normal_form``, and field path -> how
    many machines changed there."""
    counts: dict[str, int] = {}

    def normal(slot: Machine | None) -> Machine | None:
        if slot is None:
            return None
        machine, lost = _machine_normal_form(slot)
        for field_path in lost:
            counts[field_path] = counts.get(field_path, 0) + 1
        return machine

    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(replace(rack, slots=tuple(normal(slot) for slot in rack.slots))
                                  for rack in room.racks))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    return replace(environment, datacenters=datacenters), counts


def _integer_ids(tasks: list[Task]) -> bool:
    ids = [task.id for task in tasks]
    return all(isinstance(i, int) and not isinstance(i, bool) for i in ids) and \
        len(set(ids)) == len(ids)


def normal_form(document: Document) -> Document:
    """What Haizea makes of ``document`` beyond its field paths (losses: Value
    restrictions). Nodes: see ``_machine_normal_form``. Leases: times on its 0.01 s grid; a
    lease duration for every task (the requested time, else the runtime, else the shortest
    lease) and a runtime (the duration when none); leases numbered 1..n in workload order
    unless every task id is a distinct integer; users that are not integers dropped;
    annotations only in a ``.lwfa``."""
    if document.environment is not None:
        environment, _ = _environment_normal_form(document.environment)
        document = replace(document, environment=environment)
    workload = document.workload
    if workload is None:
        return document
    if _is_annotation_document(document):
        return replace(document, workload=replace(workload, name=None, description=None))
    workload = replace(workload, annotations=())
    tasks = list(workload.tasks())
    keep_ids = _integer_ids(tasks)
    numbers = iter(range(1, len(tasks) + 1))
    jobs = tuple(_job_normal_form(job, keep_ids, numbers) for job in workload.jobs)
    return replace(document, workload=replace(workload, jobs=jobs))


def _job_normal_form(job: Job, keep_ids: bool, numbers: Iterator[int]) -> Job:
    tasks = tuple(_task_normal_form(task, task.id if keep_ids else next(numbers))
                  for task in job.tasks)
    unchanged = all(new is old for new, old in zip(tasks, job.tasks, strict=True))
    return job if unchanged else replace(job, tasks=tasks)


def normal_form_losses(document: Document) -> frozenset[str]:
    """The field paths ``normal_form`` changes, or fills in from nothing, in ``document``."""
    return frozenset(_normal_form_counts(document))


def _normal_form_counts(document: Document) -> dict[str, int]:
    """Field path -> how many machines or tasks ``normal_form`` changes there."""
    counts: dict[str, int] = {}
    if document.environment is not None:
        counts.update(_environment_normal_form(document.environment)[1])
    counts.update(_workload_normal_form_counts(document))
    return counts


def _workload_normal_form_counts(document: Document) -> dict[str, int]:
    """Field path -> how many tasks ``normal_form`` changes there."""
    workload = document.workload
    if workload is None:
        return {}
    if _is_annotation_document(document):
        return {path: 1 for path, value in (("workload.name", workload.name),
                                            ("workload.description", workload.description))
                if value is not None}
    tasks = list(workload.tasks())
    counts: dict[str, int] = {}
    if workload.annotations:
        counts["workload.annotations"] = len(workload.annotations)
    if not _integer_ids(tasks):
        counts["task.id"] = len(tasks)
    for task in tasks:
        lost: set[str] = set()
        for name in _TIME_FIELDS:
            value = getattr(task, name)
            if value is not None and _on_grid(value) != value:
                lost.add("task.start" if name == "start_time_s" else f"task.{name}")
        if task.user is not None and not _USER_ID.fullmatch(task.user):
            lost.add("task.user")
        runtime = _positive(_on_grid(task.runtime_s))
        if runtime is None:  # not positive, or unknown: the requested time fills it in
            lost.add("task.runtime_s")
        if _positive(_on_grid(task.requested_time_s)) is None and (
                task.requested_time_s is not None or runtime is None):
            lost.add("task.requested_time_s")
        for field_path in lost:
            counts[field_path] = counts.get(field_path, 0) + 1
    return counts


def _is_annotation_document(document: Document) -> bool:
    """Written as a ``.lwfa``: annotations without leases or a site."""
    workload = document.workload
    return workload is not None and not workload.jobs and bool(workload.annotations) \
        and document.environment is None


def _document_element(document: Document, losses: LossCounter) -> Any:
    workload = document.workload
    environment = document.environment
    if workload is not None and _is_annotation_document(document):
        return _annotations_element(workload, losses)
    if workload is None and environment is not None:
        return _site_element(environment, (), losses)
    return _workload_element(workload or Workload(), environment, losses)


# ------------------------------------------------------------------ site


def _machine_capacity(machine: Machine) -> Capacity:
    """The node's ``<res>`` list; ``machine`` is in ``_machine_normal_form`` already, so every
    named resource is a single-word type given once with whole amounts."""
    items: list[tuple[str, Amount]] = []
    named = {resource.name: resource for resource in machine.resources}
    if machine.cpus:
        amounts = tuple(cpu.cores * CPU_PER_CORE for cpu in machine.cpus)
        items.append((CPU, amounts[0] if len(amounts) == 1 else amounts))
    elif CPU in named:  # not whole cores
        items.append((CPU, _written_amount(named.pop(CPU))))
    if machine.memory:
        sizes = tuple(int(unit.capacity_mb) for unit in machine.memory)
        items.append((MEMORY, sizes[0] if len(sizes) == 1 else sizes))
    items.extend((name, _written_amount(resource)) for name, resource in named.items())
    return tuple(items)


def _written_amount(resource: NamedResource) -> Amount:
    if resource.instances:
        return tuple(int(value) for value in resource.instances)
    return int(resource.amount)


def _account_machine(machine: Machine, losses: LossCounter) -> None:
    simple = (("machine.name", machine.name), ("machine.state_label", machine.state_label),
              ("machine.os", machine.os), ("machine.arch", machine.arch),
              ("machine.description", machine.description), ("machine.swap_mb",
              machine.swap_mb), ("machine.network_mbit_s", machine.network_mbit_s),
              ("machine.rank", machine.rank), ("machine.available", machine.available),
              ("machine.utilized", machine.utilized))
    for field_path, value in simple:
        losses.add(field_path, int(value is not None))
    losses.add("machine.state", int(machine.state is not MachineState.ACTIVE))
    losses.add("machine.features", len(machine.features))
    losses.add("machine.extras", len(machine.extras))
    losses.add("machine.gpus", len(machine.gpus), "Haizea has no GPU type; add a named "
               "resource to keep a count")
    losses.add("machine.storage", len(machine.storage))
    losses.add("machine.storage.devices", int(len(machine.storage) > 1))
    for storage in machine.storage:
        losses.add("storage.details", int(_has_details(storage)))
        losses.add("machine.extras", int(bool(storage.extras)), "storage extras")
    for gpu in machine.gpus:
        losses.add("gpu.cores", int(gpu.cores != 1))
        losses.add("machine.extras", int(bool(gpu.extras)), "GPU extras")
        losses.add("gpu.clock_rate_hz", int(gpu.clock_rate_hz is not None))
        losses.add("gpu.id", int(gpu.id is not None))
        losses.add("gpu.energy_consumption_w", int(gpu.energy_consumption_w is not None))
        losses.add("gpu.vendor", int(any(value is not None for value in (
            gpu.manufacturer, gpu.family, gpu.generation, gpu.model))))
    for cpu in machine.cpus:
        losses.add("cpu.clock_rate_hz", int(cpu.clock_rate_hz is not None))
        losses.add("cpu.id", int(cpu.id is not None))
        losses.add("cpu.energy_consumption_w", int(cpu.energy_consumption_w is not None))
        losses.add("cpu.vendor", int(any(value is not None for value in (
            cpu.manufacturer, cpu.family, cpu.generation, cpu.model))))
        losses.add("machine.extras", int(bool(cpu.extras)), "CPU extras")
    for unit in machine.memory:
        losses.add("memory.details", int(_has_details(unit)))
        losses.add("machine.extras", int(bool(unit.extras)), "memory extras")


def _has_details(unit: StorageUnit) -> bool:
    return any(value is not None for value in (
        unit.id, unit.manufacturer, unit.family, unit.generation, unit.model,
        unit.read_speed_mb_s, unit.write_speed_mb_s, unit.energy_consumption_w))


def _account_topology(environment: Environment, losses: LossCounter) -> None:
    losses.add("environment.name", int(environment.name is not None))
    losses.add("environment.description", int(environment.description is not None))
    losses.add("environment.extras", sum(1 for key in environment.extras
                                         if key != _RESOURCE_TYPES_KEY))
    for event in environment.events:
        kind = "machine_state" if hasattr(event, "machine") else "scheduler"
        losses.add(f"environment.events.{kind}")
    datacenters = environment.datacenters
    losses.add("datacenter", len(datacenters) - 1, "all machines go into one site")
    rooms = [room for datacenter in datacenters for room in datacenter.rooms]
    losses.add("room", sum(1 for datacenter in datacenters if len(datacenter.rooms) > 1
                           or any(room.type != "SERVER" for room in datacenter.rooms)),
               "all machines go into one site")
    racks = list(environment.racks())
    losses.add("rack", sum(1 for room in rooms if len(room.racks) > 1),
               "all machines go into one site")
    for datacenter in datacenters:
        for field_path, value in (("datacenter.id", datacenter.id),
                                  ("datacenter.name", datacenter.name),
                                  ("datacenter.location", datacenter.location),
                                  ("datacenter.operator", datacenter.operator),
                                  ("datacenter.scheduler", datacenter.scheduler)):
            losses.add(field_path, int(value is not None))
        losses.add("datacenter.extras", len(datacenter.extras))
    for room in rooms:
        losses.add("room.id", int(room.id is not None))
        losses.add("room.name", int(room.name is not None))
        losses.add("room.type", int(room.type != "SERVER"))
        losses.add("room.geometry", int(room.location is not None or room.size is not None))
        losses.add("room.extras", len(room.extras))
    for rack in racks:
        losses.add("rack.id", int(rack.id is not None))
        losses.add("rack.name", int(rack.name is not None))
        losses.add("rack.capacity_units", int(rack.capacity_units is not None))
        losses.add("rack.power_capacity_w", int(rack.power_capacity_w is not None))
        losses.add("rack.empty_slots", sum(1 for slot in rack.slots if slot is None))
        losses.add("rack.extras", len(rack.extras))


def _res_elements(parent: Any, capacity: Capacity) -> None:
    for name, amount in capacity:
        res = etree.SubElement(parent, "res", type=_text(name))
        if isinstance(amount, tuple):
            for value in amount:
                etree.SubElement(res, "instance", amount=str(value))
        else:
            res.set("amount", str(amount))


def _nodes_element(parent: Any, node_sets: list[tuple[int, Capacity]]) -> None:
    nodes = etree.SubElement(parent, "nodes")
    for count, capacity in node_sets:
        node_set = etree.SubElement(nodes, "node-set", numnodes=str(count))
        _res_elements(node_set, capacity)


def _site_element(environment: Environment, lease_types: Iterable[str],
                  losses: LossCounter, parent: Any = None) -> Any:
    _account_topology(environment, losses)
    node_sets: list[tuple[int, Capacity]] = []
    machines = list(environment.machines())
    for machine in machines:
        losses.add("machine.id", int(machine.id is not None),
                   "Haizea nodes have no ids, only their position")
        capacity = _machine_capacity(machine)
        _account_machine(machine, losses)
        if node_sets and node_sets[-1][1] == capacity:
            node_sets[-1] = (node_sets[-1][0] + 1, capacity)
        else:
            node_sets.append((1, capacity))
    kept = environment.extras.get(_RESOURCE_TYPES_KEY)
    names = [str(name) for name in kept] if isinstance(kept, list) else \
        _derived_type_names(machines)
    for _, capacity in node_sets:
        names.extend(name for name, _ in capacity if name not in names)
    names.extend(name for name in lease_types if name not in names)
    site = etree.Element("site") if parent is None else etree.SubElement(parent, "site")
    etree.SubElement(site, "resource-types", names=_text(" ".join(names)))
    _nodes_element(site, node_sets)
    return site


# ------------------------------------------------------------------ workload


def _attr_pairs(values: dict[str, Any], losses: LossCounter,
                field_path: str) -> list[tuple[str, str]]:
    """The (name, value) of each ``<attr>`` to write; values that are not text are lost."""
    pairs = []
    for name, value in values.items():
        if value is None or isinstance(value, dict | list):
            losses.add(field_path, 1, "Haizea attrs hold text values only")
        else:
            pairs.append((_text(name), _text(value)))
    return pairs


def _attrs_element(parent: Any, tag: str, values: dict[str, Any], losses: LossCounter,
                   field_path: str) -> None:
    pairs = _attr_pairs(values, losses, field_path)
    if pairs:
        element = etree.SubElement(parent, tag)
        for name, value in pairs:
            etree.SubElement(element, "attr", name=name, value=value)


def _account_workload(workload: Workload, losses: LossCounter, annotations_lost: bool) -> None:
    losses.add("workload.time_origin", int(workload.time_origin is not None),
               "LWF times count from the workload start")
    losses.add("workload.extras", len(workload.extras))
    if annotations_lost:
        losses.add("workload.annotations", len(workload.annotations),
                   "an LWF cannot hold annotations; write them to a separate .lwfa")
    for job in workload.jobs:
        losses.add("job", int(len(job.tasks) != 1 or job.tasks[0].id != job.id
                              or job.name is not None or job.user is not None
                              or bool(job.extras)),
                   "each task becomes a lease of its own, read back as a job named by it")
        losses.add("job.name", int(job.name is not None))
        losses.add("job.user", int(job.user is not None))
        losses.add("job.extras", len(job.extras))


def _workload_element(workload: Workload, environment: Environment | None,
                      losses: LossCounter) -> Any:
    _account_workload(workload, losses, annotations_lost=True)
    root = etree.Element("lease-workload")
    if workload.name is not None:
        root.set("name", _text(workload.name))
    if workload.description is not None:
        etree.SubElement(root, "description").text = _text(workload.description)
    if environment is not None:
        lease_types: list[str] = []
        for task in workload.tasks():
            for _, capacity in _task_node_sets(task, LossCounter()):
                lease_types.extend(name for name, _ in capacity if name not in lease_types)
        _site_element(environment, lease_types, losses, parent=root)
    _attrs_element(root, "attributes", workload.attributes, losses, "workload.attributes")
    holder = etree.SubElement(root, "lease-requests")
    if workload.jobs:
        holder.append(etree.Comment(_REQUESTS_MARK[4:-3]))  # replaced by _requests_text
    return root


def _task_capacity(task: Task, losses: LossCounter) -> Capacity:
    request = task.request
    named: dict[str, NamedResource] = {}
    for resource in request.resources:
        if not _TYPE_NAME.fullmatch(resource.name):
            losses.add("task.request.resources", 1, "Haizea resource types are single words")
            continue
        if resource.name in named:
            losses.add("task.request.resources", 1, "a resource type given twice")
        named[resource.name] = resource
    items: list[tuple[str, Amount]] = []
    if CPU in named:
        items.append((CPU, _amount(named.pop(CPU), losses, "task.request.resources")))
    elif request.cores:
        items.append((CPU, _whole(request.cores * CPU_PER_CORE, losses, "task.request.cores",
                                  "Haizea counts CPU in hundredths of a core")))
    if MEMORY in named:
        items.append((MEMORY, _amount(named.pop(MEMORY), losses, "task.request.resources")))
    elif request.memory_mb is not None:
        items.append((MEMORY, _whole(request.memory_mb, losses, "task.request.memory_mb",
                                     "whole MB only")))
    for name, resource in named.items():
        items.append((name, _amount(resource, losses, "task.request.resources")))
    return tuple(items)


def _stored_node_sets(value: Any) -> list[tuple[int, Capacity]] | None:
    """``extras["haizea:node-sets"]`` as written by the reader, or ``None`` if malformed."""
    if not isinstance(value, list) or not value:
        return None
    node_sets: list[tuple[int, Capacity]] = []
    try:
        for count, capacity in value:
            items: list[tuple[str, Amount]] = []
            for name, amount in capacity:
                items.append((str(name), tuple(int(v) for v in amount)
                              if isinstance(amount, list) else int(amount)))
            node_sets.append((int(count), tuple(items)))
    except (TypeError, ValueError):
        return None
    return node_sets


def _task_node_sets(task: Task, losses: LossCounter) -> list[tuple[int, Capacity]]:
    stored = _stored_node_sets(task.extras.get(_NODE_SETS_KEY))
    if stored is not None:
        return stored
    nodes = task.request.nodes
    if nodes < 1:
        losses.add("task.request.nodes", 1, "Haizea leases ask for at least one node")
        nodes = 1
    if task.request.gpus:
        losses.add("task.request.gpus", 1, "Haizea has no GPU type")
    return [(nodes, _task_capacity(task, losses))]


# The leases are written as text: lxml takes about a microsecond per attribute it sets, and
# 100,000 leases as elements took 4.4 s. Every value goes through ``quoteattr`` (the
# standard library's escaping) and every free text through ``_text``; the tests read each
# written document back against the XSD.
_REQUESTS_MARK = "<!--dcx:lease-requests-->"
"""Where ``write`` puts the requests in the serialized document: ``<`` cannot appear in
text or attribute values, so the mark is found only where it was put."""


def _requests_text(document: Document, losses: LossCounter) -> str | None:
    """The ``<lease-request>`` elements of an LWF as indented text, or ``None``."""
    workload = document.workload
    if workload is None or not workload.jobs or _is_annotation_document(document):
        return None
    lines: list[str] = []
    for task in workload.tasks():
        _lease_request_lines(lines, task, losses)
    return "".join(lines)


_NEEDS_ESCAPE = re.compile(r'[&<>"\t\n\r]')


def _quoted(value: str) -> str:
    """``quoteattr(value)``, without its cost for the values that need no escape (times,
    numbers: nearly all of them)."""
    return quoteattr(value) if _NEEDS_ESCAPE.search(value) else f'"{value}"'


def _lease_request_lines(lines: list[str], task: Task, losses: LossCounter) -> None:
    # Times and numbers are written as formatted (nothing in them to escape); text goes
    # through _text and _quoted.
    lines.append(f'    <lease-request arrival="{format_time(task.submit_time_s)}">\n')
    if task.runtime_s is not None and task.runtime_s != task.requested_time_s:
        lines.append(f'      <realduration time="{format_time(task.runtime_s)}"/>\n')
    attributes = "".join([f" {name}={_quoted(value)}" for name, value in _lease_attributes(task)])
    lines.append(f"      <lease{attributes}>\n")
    lines.append("        <nodes>\n")
    for count, capacity in _task_node_sets(task, losses):
        lines.append(f'          <node-set numnodes="{count}">\n')
        for name, amount in capacity:
            kind = _quoted(_text(name))
            if isinstance(amount, tuple):
                lines.append(f"            <res type={kind}>\n")
                lines.extend(f'              <instance amount="{value}"/>\n'
                             for value in amount)
                lines.append("            </res>\n")
            else:
                lines.append(f'            <res type={kind} amount="{amount}"/>\n')
        lines.append("          </node-set>\n")
    lines.append("        </nodes>\n")
    if task.start_mode is StartMode.NOW:
        lines.append("        <start>\n          <now/>\n        </start>\n")
    elif task.start_mode is StartMode.EXACT:
        start_s = task.start_time_s if task.start_time_s is not None else task.submit_time_s
        lines.append(f'        <start>\n          <exact time="{format_time(start_s)}"/>\n'
                     "        </start>\n")
    else:
        lines.append("        <start/>\n")
    lines.append(f'        <duration time="{format_time(task.requested_time_s or 0.0)}"/>\n')
    if task.deadline_s is not None:
        lines.append(f'        <deadline time="{format_time(task.deadline_s)}"/>\n')
    if task.image is None:
        lines.append("        <software>\n          <none/>\n        </software>\n")
    else:
        size = _whole(task.image_size_mb or 0.0, losses, "task.image", "image sizes are whole MB")
        lines.append(f"        <software>\n          <disk-image id={_quoted(_text(task.image))}"
                     f' size="{size}"/>\n        </software>\n')
    _account_task(task, losses)
    attrs = _attr_pairs(_lease_extra_attrs(task, losses), losses, "task.extras")
    if attrs:
        lines.append("        <extra>\n")
        lines.extend(f"          <attr name={_quoted(name)} value={_quoted(value)}/>\n"
                     for name, value in attrs)
        lines.append("        </extra>\n")
    lines.append("      </lease>\n    </lease-request>\n")


def _lease_attributes(task: Task) -> list[tuple[str, str]]:
    extras = task.extras
    attributes = []
    if not extras.get(_ID_ASSIGNED_KEY):
        attributes.append(("id", str(task.id)))  # an integer: see normal_form
    preemptible = task.preemptible
    if preemptible is None:  # Haizea requires it; lwf2xml's convention
        preemptible = task.start_mode is StartMode.ANY
    attributes.append(("preemptible", "true" if preemptible else "false"))
    if task.user is not None:  # an integer: see normal_form
        attributes.append(("user", task.user))
    if isinstance(extras.get(_STATE_KEY), int):
        attributes.append(("state", str(extras[_STATE_KEY])))
    if extras.get(_SUBMIT_TIME_KEY) is not None:
        attributes.append(("submit-time", _text(extras[_SUBMIT_TIME_KEY])))
    return attributes


def _lease_extra_attrs(task: Task, losses: LossCounter) -> dict[str, Any]:
    """Plain keys and the attrs the reader set aside: other ``haizea:`` keys are attributes
    of their own (``_lease_attributes``), and other formats' prefixed keys survive only in
    their format (losses: Extras), not as ``<attr>``s."""
    extras = task.extras
    attrs = {key: value for key, value in extras.items() if ":" not in key}
    prefixed = extras.get(_PREFIXED_EXTRA_KEY)
    if isinstance(prefixed, dict):
        kept = {key: value for key, value in prefixed.items()
                if isinstance(key, str) and ":" in key}
        losses.add("task.extras", len(prefixed) - len(kept), "a set-aside attr without ':'")
        attrs.update(kept)
    return attrs


def _account_task(task: Task, losses: LossCounter) -> None:
    losses.add("task.dependencies", len(task.dependencies))
    losses.add("task.dependencies.multiple", int(len(task.dependencies) > 1))
    losses.add("task.group", int(task.group is not None))
    losses.add("task.extras", sum(1 for key in task.extras if key.startswith(_EXTRA_PREFIX)
                                  and key not in _TASK_KEYS))


def _start_element(parent: Any, mode: StartMode | None, time_s: float | None,
                   plus: bool = False) -> None:
    start = etree.SubElement(parent, "start")
    if mode is StartMode.NOW:
        etree.SubElement(start, "now")
    elif mode is StartMode.EXACT:
        etree.SubElement(start, "exact", time=format_time(time_s or 0.0, plus))


def _software_element(parent: Any, image: str | None, size_mb: float | None,
                      losses: LossCounter, field_path: str) -> None:
    software = etree.SubElement(parent, "software")
    if image is None:
        etree.SubElement(software, "none")
        return
    size = _whole(size_mb or 0.0, losses, field_path, "image sizes are whole MB")
    etree.SubElement(software, "disk-image", id=_text(image), size=str(size))


# ------------------------------------------------------------------ annotations


def _annotations_element(workload: Workload, losses: LossCounter) -> Any:
    _account_workload(workload, losses, annotations_lost=False)
    root = etree.Element("lease-annotations")  # name and description: see normal_form
    _attrs_element(root, "attributes", workload.attributes, losses, "workload.attributes")
    targets = [annotation.target for annotation in workload.annotations]
    positional = any(target is None or not isinstance(target, int) for target in targets)
    if positional and any(target is not None for target in targets):
        losses.add("workload.annotations", sum(target is not None for target in targets),
                   "annotation ids must be all integers or all absent; written positionally")
    for annotation in workload.annotations:
        element = etree.SubElement(root, "lease-annotation")
        if not positional:
            element.set("id", str(annotation.target))
        if annotation.start_mode is not None:
            _start_element(element, annotation.start_mode, annotation.start_offset_s, plus=True)
        if annotation.deadline_offset_s is not None:
            etree.SubElement(element, "deadline",
                             time=format_time(annotation.deadline_offset_s, plus=True))
        if annotation.software_none or annotation.image is not None:
            _software_element(element, None if annotation.software_none else annotation.image,
                              annotation.image_size_mb, losses, "workload.annotations")
        _attrs_element(element, "extra", annotation.extras, losses, "workload.annotations")
    return root


FORMAT = FormatDeclaration(
    name="haizea",
    title="Haizea XML (nodes, site, lease, LWF, LWFA)",
    family="haizea",
    kind="both",
    extensions=(".lwf", ".lwfa", ".xml"),
    content=frozenset({"xml", "text"}),
    schema="haizea-lease-workload.xsd",
    description=("Haizea 1.1 lease workloads with their site, single leases, node sets "
                 "and lease annotations; legacy 10-field text LWF is read too."),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
)
