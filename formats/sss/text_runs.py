"""A fast path for large SSS files of one node shape (what dcx writes for a machine group: a
million-rank Flux R, a hostlist of Slurm nodes): a ``<Data>`` whose node objects are the
first one's text but for the texts of ``Id`` and ``Name``, with the same white space between
them. The first node is read by the checked path (parse, XSD, checks, model) inside a
``<Data>`` of its own; the others are matched in the text and read only for their id and
name, as the checked path's runs read them (``reader._Run``). This path only accepts: a
file with anything else (another shape, a comment, an entity or markup in an id or name, a
blank or repeated id, a finding on the first node) is left to the checked path, which gives
the same document, diagnostics and places for every file this path accepts (the
differential tests in ``tests/test_read_runs.py``)."""

from __future__ import annotations

import re

from dcx.core.diagnostics import ReadResult
from dcx.core.groups import MachineGroup, run_group, slots_of
from dcx.core.ids import id_from_text
from dcx.core.limits import LIMITS, paused_gc
from dcx.core.located import ElementPlaces, line_only
from dcx.core.model import Datacenter, Document, Environment, Machine, Rack, Room

MIN_BYTES = 1 << 20
"""Smaller files are read by the checked path: the text matching pays off on large ones."""

_HEAD = re.compile(rb"(?:<\?xml[^<>]*\?>)?[ \t\r\n]*<Data>([ \t\r\n]*)")
_TAIL = re.compile(rb"[ \t\r\n]*</Data>[ \t\r\n]*")
_UTF8 = re.compile(rb"""encoding=["'](?i:utf-8)["']""")
_TEXT = rb"([^<&\]\r\n\x00-\x08\x0b\x0c\x0e-\x1f]*)"
"""An ``Id`` or ``Name`` text as it reads literally: no markup, entity, CDATA end, line break
or character XML 1.0 forbids (any of these: the checked path reads the file)."""


class _Declined(Exception):
    pass


def read(data: bytes, min_bytes: int = MIN_BYTES) -> ReadResult | None:
    """The checked path's result for ``data``, or ``None`` when this path does not accept it
    (then the checked path reads it)."""
    if len(data) < min_bytes or len(data) > LIMITS.max_input_bytes:
        return None
    try:
        with paused_gc():
            return _read(data)
    except (_Declined, UnicodeDecodeError):
        return None


def _read(data: bytes) -> ReadResult:
    from dcx.formats.sss.reader import read_checked

    head = _HEAD.match(data)
    if head is None or not data.startswith(b"<Node>", head.end()) or (
            b"encoding" in head.group() and _UTF8.search(head.group()) is None):
        raise _Declined  # another layout, or ids and names in another encoding
    start = head.end()
    end = data.find(b"</Node>", start)
    if end < 0:
        raise _Declined
    end += len(b"</Node>")
    first = data[start:end]
    node = _node_pattern(first)
    gap = re.compile(rb"[ \t\r\n]*").match(data, end)
    assert gap is not None
    separator = gap.group()
    following = separator + b"<Node>"
    ids: list[bytes] = []
    names: list[bytes] = []
    position = start
    while True:
        matched = node.match(data, position)
        if matched is None:
            raise _Declined
        ids.append(matched.group(1))
        names.append(matched.group(2))
        position = matched.end()
        if not data.startswith(following, position):
            break
        position += len(separator)
    if len(ids) < 2 or _TAIL.fullmatch(data, position) is None:
        raise _Declined
    alone = read_checked(data[:end] + data[position:])
    machine = _lone_machine(alone)
    id_texts = [text.decode() for text in ids]
    if any(not text.strip() for text in id_texts) or len(set(id_texts)) != len(id_texts):
        raise _Declined  # the checked path reports a blank or repeated id
    group = run_group(machine, len(ids), [id_from_text(text) for text in id_texts],
                      [text.decode() for text in names])
    return _result(data, head.start(1), start, first, separator, group)


def _node_pattern(first: bytes) -> re.Pattern[bytes]:
    """The first node's text with its ``Id`` and ``Name`` texts free (each once, ``Id``
    first, as the writer writes them)."""
    id_open, id_close = first.find(b"<Id>"), first.find(b"</Id>")
    name_open, name_close = first.find(b"<Name>"), first.find(b"</Name>")
    if min(id_open, id_close, name_open, name_close) < 0 or not (
            id_open < id_close < name_open < name_close) or any(
            first.count(tag) != 1 for tag in (b"<Id>", b"</Id>", b"<Name>", b"</Name>")):
        raise _Declined
    return re.compile(re.escape(first[:id_open + 4]) + _TEXT
                      + re.escape(first[id_close:name_open + 6]) + _TEXT
                      + re.escape(first[name_close:]))


def _lone_machine(alone: ReadResult) -> Machine:
    """The first node, read by the checked path in a ``<Data>`` of its own: one machine and
    nothing to report, or this path declines."""
    if alone.diagnostics or alone.document is None or alone.document.environment is None:
        raise _Declined
    environment = alone.document.environment
    machines = list(environment.machines())
    if environment.extras or len(machines) != 1:
        raise _Declined
    return machines[0]


def _result(data: bytes, data_at: int, start: int, first: bytes, separator: bytes,
            group: Machine | MachineGroup) -> ReadResult:
    """The document and the places the checked path gives: lxml's line of each element is
    the line where its start tag ends, and every node takes the same number of lines."""
    root_line = data.count(b"\n", 0, data_at) + 1
    first_line = data.count(b"\n", 0, start) + 1
    step = first.count(b"\n") + separator.count(b"\n")
    count = group.count if isinstance(group, MachineGroup) else 1
    lines = range(first_line, first_line + count * step, step) if step else \
        (first_line,) * count
    environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=slots_of([group])),)),)),))
    places = ElementPlaces(line_only, root_line, (root_line,), (lines,))
    return ReadResult(Document(environment=environment), (), locator=places.places().locate)
