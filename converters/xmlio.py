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
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from lxml import etree

from dcx.converters.diagnostics import Diagnostic, InputError, error
from dcx.converters.limits import LIMITS

_DOCTYPE = re.compile(rb"<!DOCTYPE", re.IGNORECASE)
_ENTITY_DECL = re.compile(rb"<!ENTITY", re.IGNORECASE)
_XML_DECL_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_SMART_QUOTES = ("\u201c", "\u201d", "\u2018", "\u2019")


def _parser_options() -> dict[str, Any]:
    return {
        "resolve_entities": False,
        "no_network": True,
        "load_dtd": False,
        "dtd_validation": False,
        "huge_tree": False,  # keeps libxml2's depth (256) and text-node (10 MB) limits
        "remove_pis": True,
        "remove_comments": True,
        "collect_ids": False,
    }


def make_parser(schema: etree.XMLSchema | None = None) -> etree.XMLParser:
    return etree.XMLParser(schema=schema, **_parser_options())


def precheck(data: bytes) -> Diagnostic | None:
    """Refuse what must never reach the parser: oversize, compressed, DTDs, odd encodings."""
    if len(data) > LIMITS.max_input_bytes:
        return error(f"file is {len(data):,} bytes; the limit is {LIMITS.max_input_bytes:,}",
                     "input.too-large")
    if data[:2] == b"\x1f\x8b":
        return error("file is gzip-compressed; dcx does not decompress input", "xml.compressed",
                     line=1, column=1, hint="decompress it first and check its size")
    if not data.strip():
        return error("file is empty", "xml.syntax", line=1, column=1)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) > 1 and data[1:2] == b"\x00"):
        return error("file is UTF-16; dcx reads XML as UTF-8", "xml.encoding", line=1, column=1)
    declared = _XML_DECL_ENCODING.match(data.removeprefix(b"\xef\xbb\xbf"))
    if declared and declared.group(1).decode().lower().replace("_", "-") not in (
        "utf-8", "utf8", "us-ascii", "ascii"
    ):
        return error(f"declared encoding {declared.group(1).decode()!r} is not supported; "
                     "dcx reads XML as UTF-8", "xml.encoding", line=1, column=1)
    for pattern, what in ((_DOCTYPE, "a DOCTYPE"), (_ENTITY_DECL, "an entity declaration")):
        match = pattern.search(data)
        if match:
            line, column = _line_col(data, match.start())
            return error(f"document contains {what}; dcx refuses DTDs and entities "
                         "(XXE and entity-expansion protection)", "xml.dtd",
                         line=line, column=column)
    return None


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def _syntax_diagnostic(exc: etree.XMLSyntaxError, data: bytes) -> Diagnostic:
    line, column = exc.position if exc.position else (None, None)
    message = str(exc.msg if hasattr(exc, "msg") and exc.msg else exc)
    message = re.sub(r", line \d+, column \d+$", "", message)
    hint = None
    if any(quote in data.decode("utf-8", "replace") for quote in _SMART_QUOTES):
        hint = ("the file contains typographic quotes (\u201c \u201d); XML attribute values "
                "need ASCII quotes")
    if "Huge input lookup" in message or "xmlSAX2Characters: huge text node" in message:
        message = f"text node larger than {LIMITS.max_xml_text_bytes:,} bytes"
    if "Excessive depth" in message:
        message = f"document nests deeper than {LIMITS.max_xml_depth} levels"
    return error(message, "xml.syntax", line=line, column=(column or 0) + 1 if column is not None
                 else None, hint=hint)


def parse_xml(data: bytes, schema: etree.XMLSchema | None = None) -> etree._ElementTree:
    """Parse a whole document. Raises ``InputError`` with a located diagnostic."""
    problem = precheck(data)
    if problem is not None:
        raise InputError(problem)
    try:
        root = etree.fromstring(data, parser=make_parser())
    except etree.XMLSyntaxError as exc:
        raise InputError(_syntax_diagnostic(exc, data)) from None
    tree = root.getroottree()
    if tree.docinfo.doctype:
        raise InputError(error("document contains a DOCTYPE", "xml.dtd", line=1, column=1))
    return tree


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

    options = _parser_options()
    options.pop("collect_ids")
    try:
        for event, element in etree.iterparse(io.BytesIO(data), events=events, tag=tags,
                                              **options):
            yield event, element
    except etree.XMLSyntaxError as exc:
        raise InputError(_syntax_diagnostic(exc, data)) from None


def root_name(data: bytes) -> str | None:
    """The root element's local name, read from the first bytes only (for sniffing)."""
    head = data[:4096]
    head = re.sub(rb"<\?.*?\?>|<!--.*?-->", b"", head, flags=re.DOTALL)
    match = re.search(rb"<([A-Za-z_][\w.:-]*)", head)
    if not match:
        return None
    return match.group(1).decode("ascii", "replace").split(":")[-1]


# ------------------------------------------------------------------------------ XSD


@lru_cache(maxsize=None)
def load_xsd(name: str) -> etree.XMLSchema:
    """Build one of our shipped XSDs once per process. Parsed from its real file so that
    ``xs:include`` of a sibling XSD resolves locally; entities and network stay off."""
    with resources.as_file(resources.files("dcx.xsd").joinpath(name)) as path:
        document = etree.parse(str(path), parser=make_parser())
        return etree.XMLSchema(document)


def xsd_diagnostics(schema: etree.XMLSchema, tree: etree._ElementTree) -> list[Diagnostic]:
    """Validate a parsed tree; one diagnostic per libxml2 error with line and XPath."""
    if schema.validate(tree):
        return []
    found: list[Diagnostic] = []
    for entry in schema.error_log:
        message = re.sub(r"^Element '[^']*'(, attribute '[^']*')?: ", "", entry.message)
        found.append(error(message, "xsd.invalid", line=entry.line or None,
                           column=entry.column + 1 if entry.column else None,
                           pointer=_xpath(entry.path)))
    return found


def _xpath(path: str | None) -> str:
    return path or ""


def element_xpath(element: etree._Element) -> str:
    return str(element.getroottree().getpath(element))


def check_xml_text(value: str) -> str | None:
    """Return a description of the first character XML 1.0 cannot carry, if any."""
    for index, char in enumerate(value):
        code = ord(char)
        if (code < 0x20 and char not in "\t\n\r") or 0xD800 <= code <= 0xDFFF or code in (
            0xFFFE, 0xFFFF
        ):
            return f"character U+{code:04X} at position {index} cannot be written to XML"
    return None
