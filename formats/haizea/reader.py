"""Reading a Haizea file: legacy text or XML, then by root element (the LWF's fast path first,
the checked path for anything it does not accept)."""

from __future__ import annotations

import re
from collections.abc import Callable

from dcx.core.diagnostics import InputError, ReadResult, error, warning
from dcx.core.located import Where
from dcx.core.model import Document
from dcx.formats.haizea.checked import (
    read_annotations,
    read_standalone_lease,
    read_workload_stream,
)
from dcx.formats.haizea.context import Context
from dcx.formats.haizea.fast import read_clean_workload
from dcx.formats.haizea.legacy import read_legacy
from dcx.formats.haizea.places import legacy_places, xml_places
from dcx.formats.haizea.site import environment, read_node_sets, read_site
from dcx.formats.haizea.vocabulary import ROOT_SCHEMAS, looks_legacy
from dcx.parsing import xmlio

_MISPLACED_DECLARATION = re.compile(rb"\A(?:\xef\xbb\xbf)?(\s+)(<\?xml[^>]*\?>)")


def read(data: bytes) -> ReadResult:
    context = Context()
    try:
        document = _read(data, context)
    except InputError as exc:
        return ReadResult(None, (*context.diagnostics, exc.diagnostic))
    return ReadResult(document, tuple(context.diagnostics),
                      locator=None if document is None else _locator(context.data or data,
                                                                    document))


def _locator(data: bytes, document: Document) -> Callable[[str], Where]:
    """Where each object was read from, found when a pointer asks (``places``)."""
    root = xmlio.root_name(data) if data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<") \
        else None
    if root is None:
        return legacy_places(lambda: data.decode("utf-8").splitlines()).locate
    return xml_places(data, root, document).locate


def _read(data: bytes, context: Context) -> Document | None:
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith(b"<") and looks_legacy(head):
        return read_legacy(data, context)
    problem = xmlio.precheck(data)
    if problem is not None:
        raise InputError(problem)
    data = _blank_misplaced_declaration(data, context)
    context.data = data
    root = xmlio.root_name(data)
    if root == "lease-workload":
        clean = read_clean_workload(data)
        return clean if clean is not None else read_workload_stream(data, context)
    if root not in ROOT_SCHEMAS:
        raise InputError(error(f"root element <{root}> is not a Haizea element; expected one "
                               f"of {', '.join(ROOT_SCHEMAS)}", "haizea.root", line=1))
    tree = xmlio.parse_xml(data)
    if not context.xsd(xmlio.load_xsd(ROOT_SCHEMAS[root]), tree):
        return None
    element = tree.getroot()
    if root == "lease-annotations":
        return Document(workload=read_annotations(element, context))
    if root == "lease":
        return Document(workload=read_standalone_lease(element, context))
    if root == "site":
        return Document(environment=read_site(element, context)[0])
    return Document(environment=environment(read_node_sets(element, context), None))


def _blank_misplaced_declaration(data: bytes, context: Context) -> bytes:
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
