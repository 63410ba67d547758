"""The LWF XSD's verdict on a plain LWF from one request per shape, plus each value's type.

libxml2 validating every element of a 100,000-request LWF costs more than parsing it. For
a document ``haizea_scan`` reads (plain text: every double quote delimits an attribute
value; no references, comments, CDATA or line breaks in values), the verdict factors:

    valid(document)  <=>  well-formed(document)
                          and valid(the document with one request per distinct skeleton)
                          and every attribute value is in the lexical space of its type.

Why: requests with the same skeleton differ only in attribute values (the text between
their quotes), so they have the same elements, attributes, order and text; the schema
judges each element on its own (no identity constraints, IDs, wildcards or assertions) and
``<lease-requests>`` takes any number of requests, so the requests left out are judged as
their representative is, except for their own values, which are judged here one simple
type at a time. ``attribute_kinds`` reads that from the XSD itself and returns ``None``
(the caller validates the whole document) when the schema is outside this argument: an
identity constraint, an ``xs:ID``, a wildcard, a bounded request count, an element name
with two types, or a simple type not in ``LEXICAL``.

The value checks (``LEXICAL``) accept only values libxml2 accepts, and not all of those: a
value they do not accept only means the verdict is not proven here, and the caller
validates the whole document with libxml2.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

from lxml import etree

from dcx.parsing import xmlio

XS = "{http://www.w3.org/2001/XMLSchema}"
STRING = "string"
"""Every attribute value of a well-formed document is a valid ``xs:string``."""

VALUE_FORMS: dict[str, str] = {
    "TimeText": r"[^\n]+",  # xs:string, minLength 1
    "xs:integer": r"-?[0-9]{1,18}",
    "xs:nonNegativeInteger": r"[0-9]{1,18}",
    "xs:positiveInteger": r"(?=[0-9]*[1-9])[0-9]{1,18}",
    "pattern:\\S+": r"[^ \n]+",  # xs:string, pattern \S+
}
LEXICAL: dict[str, re.Pattern[str]] = {
    # A column of values, each followed by "\n" (values hold no tabs or line breaks).
    kind: re.compile(rf"(?:{form}\n)*", re.ASCII) for kind, form in VALUE_FORMS.items()
}
"""Simple type -> values of it that libxml2 accepts, as a column. Part of each lexical space
only: no sign where none is needed, no surrounding spaces (which the integer types allow),
at most 18 digits (libxml2 rejects integers of more than 24, where the specification has
no limit). A value outside it is not judged here: the caller asks libxml2."""

_REQUEST = ("lease-request", "LeaseRequestType")
_REQUESTS_TYPE = "LeaseRequestsType"
_OUTSIDE = ("key", "keyref", "unique", "any", "anyAttribute", "assert", "assertion",
            "alternative", "redefine", "override", "import", "group", "attributeGroup",
            "complexContent", "simpleContent")
"""Schema constructs outside the argument above."""


class _NotFactored(Exception):
    pass


def _simple_type(attribute: Any) -> str:
    """The key of ``LEXICAL`` (or ``STRING``) for a declared attribute's type."""
    declared = attribute.get("type")
    if declared is None:
        restriction = attribute.find(f"{XS}simpleType/{XS}restriction")
        facets = [] if restriction is None else [facet for facet in restriction
                                                 if isinstance(facet.tag, str)]
        if restriction is None or restriction.get("base") != "xs:string" or \
                [facet.tag for facet in facets] != [f"{XS}pattern"]:
            raise _NotFactored
        declared = "pattern:" + facets[0].get("value")
    if declared in ("xs:ID", "xs:IDREF", "xs:IDREFS") or attribute.get("fixed") is not None:
        raise _NotFactored
    if declared != "xs:string" and declared not in LEXICAL:
        raise _NotFactored
    return STRING if declared == "xs:string" else declared


def _time_text_is_a_nonempty_string(schema: Any) -> bool:
    found = schema.find(f"{XS}simpleType[@name='TimeText']/{XS}restriction")
    return found is not None and found.get("base") == "xs:string" and \
        [(facet.tag, facet.get("value")) for facet in found
         if isinstance(facet.tag, str)] == [(f"{XS}minLength", "1")]


def _request_count_is_free(types: dict[str, Any]) -> bool:
    """``<lease-requests>`` takes any number of requests (so leaving some out changes
    nothing) and nothing else."""
    holder = types.get(_REQUESTS_TYPE)
    elements = [] if holder is None else list(holder.iter(f"{XS}element"))
    return len(elements) == 1 and elements[0].get("name") == _REQUEST[0] and \
        elements[0].get("type") == _REQUEST[1] and elements[0].get("minOccurs") == "0" and \
        elements[0].get("maxOccurs") == "unbounded"


def derive_attribute_kinds(schema: Any) -> dict[tuple[str, str], str]:
    """(element name, attribute name) -> simple type, for every element a request can hold;
    raises ``_NotFactored`` when the schema is outside the argument in the module text."""
    if schema.get("targetNamespace") is not None or \
            any(True for name in _OUTSIDE for _ in schema.iter(f"{XS}{name}")):
        raise _NotFactored
    if not _time_text_is_a_nonempty_string(schema):
        raise _NotFactored
    types = {item.get("name"): item for item in schema.iter(f"{XS}complexType")
             if item.get("name")}
    if not _request_count_is_free(types):
        raise _NotFactored
    kinds: dict[tuple[str, str], str] = {}
    type_of_element: dict[str, str] = {}
    pending = [_REQUEST]
    while pending:
        name, type_name = pending.pop()
        if type_of_element.setdefault(name, type_name) != type_name:
            raise _NotFactored  # one element name, two types
        definition = types.get(type_name)
        if definition is None or definition.get("mixed") in ("true", "1"):
            raise _NotFactored
        for attribute in definition.iter(f"{XS}attribute"):
            kinds[(name, attribute.get("name"))] = _simple_type(attribute)
        for child in definition.iter(f"{XS}element"):
            child_name, child_type = child.get("name"), child.get("type")
            if child_name is None or child_type is None:
                raise _NotFactored
            if child_name not in type_of_element:
                pending.append((child_name, child_type))
            elif type_of_element[child_name] != child_type:
                raise _NotFactored
    return kinds


def attribute_kinds(common_xsd: str = "haizea-common.xsd") -> dict[tuple[str, str], str] | None:
    """``derive_attribute_kinds`` of the shipped XSD, or ``None`` when the verdict does not
    factor for it (then every document is validated whole)."""
    text = resources.files("dcx.xsd").joinpath(common_xsd).read_bytes()
    try:
        return derive_attribute_kinds(etree.fromstring(text, xmlio.make_parser()))
    except _NotFactored:
        return None


def column_holds(kind: str, values: list[str]) -> bool:
    """Whether every value of a column (no tabs or line breaks in any) is one ``LEXICAL``
    accepts for ``kind`` (``False``: not proven; libxml2 decides)."""
    if kind == STRING or not values:
        return True
    return LEXICAL[kind].fullmatch("\n".join(values) + "\n") is not None
