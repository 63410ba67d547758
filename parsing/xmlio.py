"""The one place XML parsers are built: no DTD, no entities, no network, bounded.

Every XML format reads through ``parse_xml`` (a tree, for small documents) or
``iter_elements`` (streaming, for large workloads). Both refuse any DOCTYPE before
parsing, refuse compressed input, keep libxml2's depth and text-size limits, and turn
every failure into a diagnostic with a line number. Validation against our XSDs uses
libxml2 (``lxml.etree.XMLSchema``) for speed; the XSDs are loaded from the wheel with
network and entity access off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # lxml loads on first parse: sniffing and start-up never need it
    from lxml import etree

from dcx.core.codes import Code
from dcx.core.diagnostics import Diagnostic, InputError, error
from dcx.core.limits import LIMITS

CODES = (
    Code("xml.compressed", "error", "The XML file is gzip-compressed; dcx does not decompress "
         "input."),
    Code("xml.encoding", "error", "The XML file is not UTF-8 (UTF-16, another declared "
         "encoding, or an invalid UTF-8 byte)."),
    Code("xml.dtd", "error", "The document has a DOCTYPE or an entity declaration (refused: "
         "XXE and entity expansion)."),
    Code("xml.syntax", "error", "The text is not well-formed XML (or is empty, nests too "
         "deeply, or has an oversized text node); the message is libxml2's."),
    Code("xsd.invalid", "error", "The document breaks the format's XSD; the message is "
         "libxml2's."),
    Code("xsd.more-errors", "error", "More XSD errors than are listed (the first 50 are "
         "located, the rest counted)."),
)

_DOCTYPE = re.compile(rb"<!DOCTYPE", re.IGNORECASE)
_XML_DECL_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_SMART_QUOTES = ("\u201c", "\u201d", "\u2018", "\u2019")
_HUGE_TEXT_MESSAGES = ("Huge input lookup", "xmlSAX2Characters: huge text node",
                       "Text node too long", "xmlSAX2Characters: huge text")


def parser_options() -> dict[str, Any]:
    """The hardened ``lxml.etree.XMLParser`` settings every XML reader uses (a fresh dict:
    readers that build their own parser, such as a parser target, may adjust a copy)."""
    return {
        "resolve_entities": False,
        "no_network": True,
        "load_dtd": False,
        "dtd_validation": False,
        "huge_tree": False,  # keeps libxml2's depth (256) and text-node (10 MB) limits
        # Whitespace between elements is never data in our formats (no mixed content); as
        # text nodes it is a third of a large tree's memory (10^6 siblings: 407 -> 285 MB).
        # Whitespace-only content of a leaf element (<a> </a>) is kept by libxml2 (unless a
        # comment splits it).
        "remove_blank_text": True,
        "remove_pis": True,
        "remove_comments": True,
        "collect_ids": False,
    }


def make_parser(schema: etree.XMLSchema | None = None) -> etree.XMLParser:
    from lxml import etree

    return etree.XMLParser(schema=schema, **parser_options())


def precheck(data: bytes, external_doctype: str | None = None) -> Diagnostic | None:
    """Refuse what must never reach the parser: oversize, compressed, DTDs, odd encodings.
    ``external_doctype`` names the root element of a format whose files declare an external
    DTD (SimGrid's ``<!DOCTYPE platform SYSTEM "…simgrid.dtd">``): that DOCTYPE alone is let
    through when it has no internal subset; the parser never loads it (``load_dtd`` and the
    network stay off), so it declares nothing."""
    if len(data) > LIMITS.max_input_bytes:
        return error(f"file is {len(data):,} bytes; the limit is {LIMITS.max_input_bytes:,}",
                     "input.too-large")
    if data[:2] == b"\x1f\x8b":
        return error("file is gzip-compressed; dcx does not decompress input", "xml.compressed",
                     line=1, column=1, hint="decompress it first and check its size")
    if _is_blank(data):
        return error("file is empty", "xml.syntax", line=1, column=1)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) > 1 and data[1:2] == b"\x00"):
        return error("file is UTF-16; dcx reads XML as UTF-8", "xml.encoding", line=1, column=1)
    declared = _XML_DECL_ENCODING.match(data.removeprefix(b"\xef\xbb\xbf"))
    if declared and declared.group(1).decode().lower().replace("_", "-") not in (
        "utf-8", "utf8", "us-ascii", "ascii"
    ):
        return error(f"declared encoding {declared.group(1).decode()!r} is not supported; "
                     "dcx reads XML as UTF-8", "xml.encoding", line=1, column=1)
    found = _first_declaration(data)
    if found is not None and external_doctype is not None and found[1] == "a DOCTYPE":
        end = _external_doctype_end(data, found[0], external_doctype)
        if end is not None:
            found = _first_declaration(data, end)
    if found is not None:
        offset, what = found
        line, column = _line_col(data, offset)
        return error(f"document contains {what}; dcx refuses DTDs and entities "
                     "(XXE and entity-expansion protection)", "xml.dtd",
                     line=line, column=column)
    return None


def _first_declaration(data: bytes, start: int = 0) -> tuple[int, str] | None:
    """The first DOCTYPE (any case), else the first entity declaration, from ``start``. One
    ``find`` per ``<!`` (comments included) instead of two case-insensitive regex scans: this
    runs over every byte of a 50 MB workload before parsing."""
    entity: int | None = None
    start = data.find(b"<!", start)
    while start != -1:
        keyword = data[start + 2:start + 9].upper()
        if keyword == b"DOCTYPE":
            return start, "a DOCTYPE"
        if keyword.startswith(b"ENTITY") and entity is None:
            entity = start
        start = data.find(b"<!", start + 2)
    return (entity, "an entity declaration") if entity is not None else None


_EXTERNAL_DOCTYPE = re.compile(
    rb"""<!DOCTYPE[ \t\r\n]+([A-Za-z_][\w.-]*)[ \t\r\n]+"""
    rb"""(?:SYSTEM|PUBLIC[ \t\r\n]+(?:"[^"<>]*"|'[^'<>]*'))[ \t\r\n]+"""
    rb"""(?:"[^"<>]*"|'[^'<>]*')[ \t\r\n]*>""")


def _external_doctype_end(data: bytes, offset: int, root: str) -> int | None:
    """Where a DOCTYPE at ``offset`` ends when it names ``root`` and only an external DTD (no
    internal subset, so no entity can be declared); ``None`` otherwise."""
    found = _EXTERNAL_DOCTYPE.match(data, offset)
    if found is None or found.group(1).decode("ascii") != root:
        return None
    return found.end()


def _is_blank(data: bytes) -> bool:
    """Empty, whitespace only, or a byte order mark only; without copying a large input."""
    head = data[:64].removeprefix(b"\xef\xbb\xbf")
    return len(data) <= 64 + 3 and not head.strip()


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def _syntax_diagnostic(exc: etree.XMLSyntaxError, data: bytes) -> Diagnostic:
    if "Invalid bytes in character encoding" in str(exc):
        located = _invalid_utf8(data)
        if located is not None:
            return located
    line, column = exc.position if exc.position else (None, None)
    message = str(exc.msg if hasattr(exc, "msg") and exc.msg else exc)
    message = re.sub(r", line \d+, column \d+$", "", message)
    hint = None
    if any(quote.encode() in data for quote in _SMART_QUOTES):  # bytes: no copy of big input
        hint = ("the file contains typographic quotes (\u201c \u201d); XML attribute values "
                "need ASCII quotes")
    if any(text in message for text in _HUGE_TEXT_MESSAGES):
        # libxml2's own wording suggests XML_PARSE_HUGE, which dcx deliberately never sets.
        message = f"text node larger than {LIMITS.max_xml_text_bytes:,} bytes"
    if "Excessive depth" in message:
        message = f"document nests deeper than {LIMITS.max_xml_depth} levels"
    return error(message, "xml.syntax", line=line, column=(column or 0) + 1 if column is not None
                 else None, hint=hint)


def _invalid_utf8(data: bytes) -> Diagnostic | None:
    """libxml2 says only "Invalid bytes in character encoding"; name the byte and where."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _line_col(data, exc.start)
        return error(f"invalid UTF-8 byte 0x{data[exc.start]:02x}", "xml.encoding",
                     line=line, column=column)
    return None


def parse_xml(data: bytes, schema: etree.XMLSchema | None = None,
              external_doctype: str | None = None,
              space_before_declaration: bool = False) -> etree._ElementTree:
    """Parse a whole document. Raises ``InputError`` with a located diagnostic.
    ``external_doctype``: the one DOCTYPE let through (see ``precheck``); libxml2 never sees
    its system identifier, so no DTD is ever fetched, whatever the URL.
    ``space_before_declaration``: whitespace before the XML declaration is tolerated (XML
    forbids it; SimGrid's own parser skips it)."""
    from lxml import etree

    problem = precheck(data, external_doctype)
    if problem is not None:
        raise InputError(problem)
    parsed = _prolog_blanked(data, external_doctype, space_before_declaration)
    try:
        root = etree.fromstring(parsed, parser=make_parser())
    except etree.XMLSyntaxError as exc:
        raise InputError(_syntax_diagnostic(exc, data)) from None
    tree = root.getroottree()
    docinfo = tree.docinfo
    if docinfo.doctype and (  # type: ignore[union-attr]  # lxml-stubs' DocInfo omits it
            external_doctype is None or docinfo.root_name != external_doctype
            or _declares_anything(docinfo.internalDTD)):
        raise InputError(error("document contains a DOCTYPE", "xml.dtd", line=1, column=1))
    global _LAST_PARSED
    _LAST_PARSED = (tree, data)
    return tree


_SPACE_THEN_DECLARATION = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]+(<\?xml[ \t\r\n][^>]*\?>)")


def _prolog_blanked(data: bytes, external_doctype: str | None,
                    space_before_declaration: bool) -> bytes:
    """``data`` with spaces over the external DOCTYPE that ``precheck`` let through and, when
    tolerated, over an XML declaration that follows whitespace: what libxml2 must not see
    (libxml2 2.14 under lxml 6 still tries to fetch an ``http:`` DTD with DTD loading off,
    which no_network turns into an error; a late declaration is a syntax error). Line breaks
    stay, so every line and column is where it was."""
    spans: list[tuple[int, int]] = []
    if space_before_declaration:
        late = _SPACE_THEN_DECLARATION.match(data)
        if late is not None:
            spans.append(late.span(1))  # the encoding it declares was checked by precheck
    if external_doctype is not None:
        found = _first_declaration(data)
        if found is not None and found[1] == "a DOCTYPE":
            end = _external_doctype_end(data, found[0], external_doctype)
            if end is not None:
                spans.append((found[0], end))
    if not spans:
        return data
    blanked = bytearray(data)
    for start, end in spans:
        blanked[start:end] = _NOT_LINE_BREAK.sub(b" ", data[start:end])
    return bytes(blanked)


_NOT_LINE_BREAK = re.compile(rb"[^\r\n]")


def _declares_anything(dtd: Any) -> bool:
    """Whether an internal DTD subset declares elements or entities (libxml2 gives an
    external-only DOCTYPE an empty one)."""
    return dtd is not None and (any(True for _ in dtd.iterelements())
                                or any(True for _ in dtd.iterentities()))


_LAST_PARSED: tuple[etree._ElementTree, bytes] | None = None
"""The last tree ``parse_xml`` built and its bytes, so ``xsd_diagnostics`` can place columns
without changing its callers (lxml trees take neither attributes nor weak references). Holds
one document at most; a reader holds those bytes anyway while it validates."""


@dataclass(frozen=True)
class XmlEvent:
    event: str
    element: etree._Element


def iter_elements(
    data: bytes, tags: tuple[str, ...] | None = None, events: tuple[str, ...] = ("end",)
) -> Iterator[tuple[str, etree._Element]]:
    """Stream ``(event, element)`` pairs with the hardened settings; the caller clears
    elements it has consumed. Raises ``InputError`` on malformed input."""
    problem = precheck(data)
    if problem is not None:
        raise InputError(problem)
    import io

    from lxml import etree

    options = parser_options()
    options.pop("collect_ids")
    try:
        yield from etree.iterparse(io.BytesIO(data), events=events, tag=tags, **options)
    except etree.XMLSyntaxError as exc:
        raise InputError(_syntax_diagnostic(exc, data)) from None


_DOCTYPE_END = re.compile(rb"<!DOCTYPE(?:[^\[>]*\[.*?\]\s*>|[^>]*>)", re.DOTALL | re.IGNORECASE)
_SNIFF_DOCTYPE_BYTES = 1 << 20
"""How far sniffing looks past a DOCTYPE (which the reader then refuses with a located
error); an internal subset can push the root element far beyond the first 4 KB."""


def root_name(data: bytes) -> str | None:
    """The root element's local name, read from the first bytes only (for sniffing)."""
    head = data[:4096]
    doctype = _DOCTYPE.search(head)
    if doctype is not None:
        end = _DOCTYPE_END.match(data[:_SNIFF_DOCTYPE_BYTES], doctype.start())
        if end is not None:
            head = data[:doctype.start()] + data[end.end():end.end() + 4096]
    head = re.sub(rb"<\?.*?\?>|<!--.*?-->", b"", head, flags=re.DOTALL)
    match = re.search(rb"<([A-Za-z_][\w.:-]*)", head)
    if not match:
        return None
    return match.group(1).decode("ascii", "replace").split(":")[-1]


# ------------------------------------------------------------------------------ XSD


@cache
def load_xsd(name: str) -> etree.XMLSchema:
    """Build one of our shipped XSDs once per process. Parsed from its real file so that
    ``xs:include`` of a sibling XSD resolves locally; entities and network stay off."""
    from lxml import etree

    with resources.as_file(resources.files("dcx.xsd").joinpath(name)) as path:
        document = etree.parse(str(path), parser=make_parser())
        return etree.XMLSchema(document)


def xsd_diagnostics(schema: etree.XMLSchema, tree: etree._ElementTree,
                    data: bytes | None = None) -> list[Diagnostic]:
    """Validate a parsed tree; one diagnostic per libxml2 error with line, column and XPath.

    libxml2 gives schema errors a line but no column; the column is found in the source
    text (``data``, or the bytes ``parse_xml`` last parsed into this very tree).
    """
    if schema.validate(tree):
        return []
    if data is None and _LAST_PARSED is not None and _LAST_PARSED[0] is tree:
        data = _LAST_PARSED[1]
    return xsd_log_diagnostics(schema.error_log, data)


MAX_XSD_ERRORS = 50
"""Located errors per validation; the rest are counted. Locating one searches its source
line, and an element with 100,000 bad attributes has them all on one line."""


def xsd_log_diagnostics(log: Any, data: bytes | None,
                        pointer: Callable[[Any], str | None] | None = None,
                        near_line: int | None = None) -> list[Diagnostic]:
    """The first ``MAX_XSD_ERRORS`` entries of a libxml2 schema error log as located
    diagnostics (``pointer(entry)`` may override an entry's XPath; ``near_line``: see
    ``xsd_entry_diagnostic``), then one line that counts the rest."""
    entries = list(log)
    found = [xsd_entry_diagnostic(entry, data, pointer(entry) if pointer else None, near_line)
             for entry in entries[:MAX_XSD_ERRORS]]
    if len(entries) > MAX_XSD_ERRORS:
        found.append(error(f"{len(entries) - MAX_XSD_ERRORS:,} more schema errors follow; "
                           f"only the first {MAX_XSD_ERRORS} are listed", "xsd.more-errors",
                           line=entries[MAX_XSD_ERRORS].line or None))
    return found


SATURATED_LINE = 65_535
"""The line libxml2 gives a node past line 65,535 when it cannot recover the real one (it
stores 16 bits and recovers bigger lines from neighbouring text nodes, which a streaming
reader has deleted)."""

START_TAG_LINES = 20
"""Lines before the one libxml2 names that are searched for the start tag of the element."""

NEAR_LINE_SPAN = 1_000
"""Lines searched after a ``near_line`` hint for the element an error names."""


def xsd_entry_diagnostic(entry: Any, data: bytes | None = None,
                         pointer: str | None = None,
                         near_line: int | None = None) -> Diagnostic:
    """One libxml2 schema error-log entry as a located ``xsd.invalid`` diagnostic (for
    readers that validate in their own loop, such as streaming ones).

    A streaming reader passes the line where the validated fragment starts (``near_line``):
    when libxml2 gives the saturated line, the element is searched from there instead.
    """
    prefix = _XSD_MESSAGE_PREFIX.match(entry.message)
    message = entry.message[prefix.end():] if prefix else entry.message
    attribute = prefix.group("attribute") if prefix else None
    line = entry.line or None
    column = entry.column + 1 if entry.column else None
    candidates: Iterable[int] | None = None
    if line == SATURATED_LINE and near_line is not None and near_line > line:
        line, column = near_line, None
        candidates = range(max(1, near_line - 2), near_line + NEAR_LINE_SPAN)
    if column is None and line is not None and data is not None:
        position = _tag_position(data, line, _xpath(entry.path), attribute, candidates)
        if position is not None:
            line, column = position
    return error(message, "xsd.invalid", line=line, column=column,
                 pointer=_xpath(entry.path) if pointer is None else pointer)


_XSD_MESSAGE_PREFIX = re.compile(r"^Element '[^']*'(?:, attribute '(?P<attribute>[^']*)')?: ")


def _tag_position(data: bytes, line: int, path: str, attribute: str | None,
                  candidates: Iterable[int] | None = None) -> tuple[int, int] | None:
    """``locate_tag`` for the element named last in ``path``; beyond line 65,535 libxml2's
    element lines can be off by one or two (it stores 16 bits and estimates the rest), so
    nearby lines are tried too."""
    name = path.rsplit("/", 1)[-1].split("[")[0].split(":")[-1]
    if not name or name == "*":
        return None
    if candidates is None:
        # libxml2 gives a start tag over several lines the line where it ends (or the next)
        candidates = (range(line, max(0, line - START_TAG_LINES), -1) if line <= SATURATED_LINE
                      else [line, line - 1, line + 1, line - 2, line + 2])
    return locate_tag(data, name, attribute, candidates)


def locate_tag(data: bytes, tag: str, attribute: str | None,
               lines: Iterable[int]) -> tuple[int, int] | None:
    """Line and 1-based column (in characters) of the first ``<tag`` start tag, or of its
    ``attribute`` when named and present, on the first of ``lines`` that shows the tag;
    ``None`` when none does."""
    pattern = _start_tag(tag)
    for line in lines:
        text = _line_text(data, line)
        if text is None:
            continue
        found = pattern.search(text)
        if found is None:
            continue
        if attribute is not None:
            value = _attribute(attribute).search(text, found.end())
            if value is not None:
                return line, value.start() + 1
        return line, found.start() + 1
    return None


@lru_cache(maxsize=256)
def _start_tag(tag: str) -> re.Pattern[str]:
    return re.compile(rf"<(?:[\w.-]+:)?{re.escape(tag)}(?=[\s/>])")


@lru_cache(maxsize=256)
def _attribute(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.:-]){re.escape(name)}\s*=")


_line_cursor: tuple[bytes, int, int] | None = None
"""(data, a line number, the offset where it starts): diagnostics mostly come in line order,
so each search for a line starts from the last one (forwards, or a short way back) instead
of at the top."""

_BACKWARD_LINES = 1_000
"""How far back a line search walks from the cursor before starting again at the top."""


def _line_text(data: bytes, line: int) -> str | None:
    global _line_cursor
    cursor = _line_cursor
    current, start = 1, 0
    if cursor is not None and cursor[0] is data and cursor[1] - line <= _BACKWARD_LINES:
        current, start = cursor[1], cursor[2]
        while current > line:
            start = data.rfind(b"\n", 0, start - 1) + 1
            current -= 1
    while current < line:
        start = data.find(b"\n", start) + 1
        if start == 0:
            return None
        current += 1
    _line_cursor = (data, current, start)
    end = data.find(b"\n", start)
    return data[start:end if end != -1 else len(data)].decode("utf-8", "replace")


def _xpath(path: str | None) -> str:
    return path or ""


def source_line(element: Any) -> int | None:
    """lxml's ``sourceline`` of ``element``: its stubs leave the attribute untyped."""
    line: int | None = element.sourceline
    return line


def element_xpath(element: etree._Element) -> str:
    return str(element.getroottree().getpath(element))


_NOT_XML_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""The characters XML 1.0 cannot carry (its Char production), literal or as a reference."""


def check_xml_text(value: str) -> str | None:
    """Return a description of the first character XML 1.0 cannot carry, if any."""
    found = _NOT_XML_CHAR.search(value)
    if found is None:
        return None
    return (f"character U+{ord(found.group()):04X} at position {found.start()} cannot be "
            "written to XML")


class StartTags:
    """Where the start tags of one element name are in a document's text, found when asked:
    the ``index``-th ``<tag`` (with any prefix) outside comments, CDATA sections and
    processing instructions is the ``index``-th element of that local name in document order
    (``iter("{*}tag")``; the documents read here declare no entities that could hide one).
    What is found is kept, so asking in order scans the text once; nothing is scanned until
    asked."""

    def __init__(self, data: bytes, tag: str, start: int = 0) -> None:
        self.data = data
        self.tag = tag
        self._offsets: list[int] = []
        self._scan = self._start_tags(start)

    def offset(self, index: int) -> int | None:
        """The byte offset of the ``index``-th start tag, or ``None`` when there are fewer."""
        offsets = self._offsets
        while len(offsets) <= index:
            found = next(self._scan, None)
            if found is None:
                return None
            offsets.append(found)
        return offsets[index]

    def _start_tags(self, position: int) -> Iterator[int]:
        """The start tags' offsets from ``position`` on: the name found by a literal search
        (in C: a pattern that also matched comments would try every ``<`` in Python's
        engine), taken where a ``<`` (and a prefix) opens it, up to the next comment, CDATA
        section or processing instruction, which is skipped whole."""
        data = self.data
        name = _tag_name(self.tag)
        while True:
            section, closer = _next_section(data, position)
            for found in name.finditer(data, position, section):
                start = found.start()
                before = data[start - 1] if start else 0
                if before == 0x3C:  # <
                    yield start - 1
                elif before == 0x3A:  # : of a prefix
                    prefixed = _PREFIX_BEFORE.search(data, max(0, start - 256), start)
                    if prefixed is not None:
                        yield prefixed.start()
            if not closer:
                return
            closed = data.find(closer, section + 2)
            if closed < 0:
                return  # an unclosed section: libxml2 rejects such a document
            position = closed + len(closer)

    def place(self, index: int) -> tuple[int | None, int | None]:
        """The line and 1-based column (in characters) of the ``index``-th start tag's
        ``<``, or ``(None, None)``."""
        offset = self.offset(index)
        return (None, None) if offset is None else text_place(self.data, offset)


class StartTagsByName:
    """The ``StartTags`` of each element name of one text, made when a name is first asked
    for: where a reader that noted elements by name and index finds them again."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._found: dict[str, StartTags] = {}

    def of(self, tag: str) -> StartTags:
        found = self._found.get(tag)
        if found is None:
            found = self._found[tag] = StartTags(self.data, tag)
        return found

    def place(self, tag: str, index: int) -> tuple[int | None, int | None]:
        """The line and column of the ``index``-th ``<tag`` (``StartTags.place``)."""
        return self.of(tag).place(index)


@lru_cache(maxsize=32)
def _tag_name(tag: str) -> re.Pattern[bytes]:
    return re.compile(re.escape(tag.encode()) + rb"(?=[\s/>])")


_PREFIX_BEFORE = re.compile(rb"<[\w.-]+:\Z")
"""A ``<`` and a namespace prefix that end where a searched name starts."""

_SECTIONS = ((b"<!--", b"-->"), (b"<![CDATA[", b"]]>"), (b"<?", b"?>"))
"""What opens and closes the text a start tag cannot be in."""


def _next_section(data: bytes, start: int) -> tuple[int, bytes]:
    """Where the first comment, CDATA section or processing instruction from ``start`` opens
    and what closes it; ``(len(data), b"")`` when none does."""
    first = (len(data), b"")
    for opener, closer in _SECTIONS:
        at = data.find(opener, start, first[0])
        if at >= 0:
            first = (at, closer)
    return first


def text_place(data: bytes, offset: int) -> tuple[int, int]:
    """The line and 1-based column (in characters, after a byte order mark) of a byte
    offset of UTF-8 text."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    if line_start == 0 and data.startswith(b"\xef\xbb\xbf"):
        line_start = 3
    column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column
