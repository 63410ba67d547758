"""The lease requests of a plain LWF read from its text, one request shape at a time.

Large LWFs repeat a handful of request shapes (the same elements and attribute names, in the
same order, with the same whitespace between them); only attribute values change. So the
text inside ``<lease-requests>`` is split at its double quotes into values and the
*skeleton* left around them (``<lease id="" preemptible="">`` ...), the skeleton is cut into
one piece per ``<lease-request>``, and each distinct piece is parsed once, by lxml, into a
``Recipe``: which value of the request is which field. Reading a request is then a
dictionary lookup and a few list indexes, instead of one Python callback per element.

This reads values exactly as an XML parser does only for *plain* text, which ``Scan``
checks and otherwise declines (``Declined``; the caller reads the document with lxml):
UTF-8; no comments, CDATA, processing instructions or references (``&``) from
``<lease-requests>`` to the end; attribute values in double quotes, without tabs or line
breaks (which a parser normalises to spaces); nothing after ``</lease-requests>`` but the
root's end tag; at most ``MAX_RECIPES`` distinct pieces. Whether the document is well-formed
and valid is not judged by reading it: ``Scan`` gathers what the factored verdict needs
(``verdict``: one request per piece, each value with its type) and the caller uses
nothing scanned until libxml2 has judged the document valid that way, or whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from lxml import etree

from dcx.core.model import StartMode
from dcx.formats.haizea import verdict as haizea_verdict
from dcx.parsing import xmlio

LEASE_ATTRIBUTES = ("id", "preemptible", "user", "state", "submit-time")
MAX_RECIPES = 256
"""Distinct request pieces before the scan declines (irregular whitespace, or shapes that
hardly repeat: reading those element by element is as fast)."""

_OPEN = b"<lease-requests"
_CLOSE = b"</lease-requests"
_REQUEST_START = "<lease-request "
_TAIL = re.compile(rb"</lease-requests\s*>\s*</lease-workload\s*>\s*")
_HIDING = ((b"<!--", b"-->"), (b"<![CDATA[", b"]]>"), (b"<?", b"?>"))
"""Constructs whose text is not markup: a ``<lease-requests`` inside one is not the tag."""
_NOT_PLAIN = (b"<!", b"<?", b"&")
_REQUEST_START_BYTES = _REQUEST_START.encode()
CHUNK_BYTES = 1 << 20
"""How much text is split at a time (then up to the next request)."""


class Declined(Exception):
    """The text is not plain enough to be read here exactly; read it with lxml instead."""


class NodeSetTemplate:
    """A ``<node-set>`` of a recipe: the value indexes of ``numnodes``, and per ``<res>`` its
    ``type``, its ``amount`` (``None`` when absent) and its ``<instance>`` amounts."""

    __slots__ = ("numnodes", "resources")

    def __init__(self, numnodes: int) -> None:
        self.numnodes = numnodes
        self.resources: list[tuple[int, int | None, list[int]]] = []

    def raw(self, values: Sequence[str | None]) -> tuple[Any, ...]:
        """The node-set as the parser target records it: ``numnodes``, then ``(type,
        amount)`` per ``<res>``, each followed by its instance amounts."""
        shape: list[Any] = [values[self.numnodes]]
        for kind, amount, instances in self.resources:
            shape.append((values[kind], None if amount is None else values[amount]))
            shape.extend(values[index] for index in instances)
        return tuple(shape)


ABSENT = -1
"""The index of an absent element or attribute: each request's values end with ``None``."""


class Recipe:
    """Where each field of one request shape is among the request's values (document order;
    ``ABSENT`` for an absent element or attribute, whose value reads as ``None``);
    ``nodes`` is the slice of values under ``<nodes>``."""

    __slots__ = ("arrival", "checks", "deadline", "duration", "exact", "extras", "fields",
                 "image_id", "image_size", "lease_attributes", "node_sets", "nodes",
                 "realduration", "shapes", "size", "start_mode")

    def __init__(self) -> None:
        self.size = 0
        self.fields: list[tuple[str, str]] = []
        """(element, attribute) of each value."""
        self.checks: list[tuple[str, Callable[[list[Any]], tuple[str, ...]]]] = []
        """(simple type, the request's values of that type) for ``Scan``'s value checks."""
        self.arrival = ABSENT
        self.realduration = ABSENT
        self.lease_attributes: dict[str, int] = dict.fromkeys(LEASE_ATTRIBUTES, ABSENT)
        self.duration = ABSENT
        self.start_mode = StartMode.ANY
        self.exact = ABSENT
        self.deadline = ABSENT
        self.image_id = ABSENT
        self.image_size = ABSENT
        self.extras: list[tuple[int, int]] | None = None
        self.node_sets: list[NodeSetTemplate] = []
        self.nodes = slice(0, 0)
        self.shapes: dict[tuple[str | None, ...], Any] = {}
        """The caller's cache: values under ``<nodes>`` -> what it made of them."""


def _attribute_indexes(element: Any, names: tuple[str, ...], recipe: Recipe) -> list[int]:
    """Number the element's attributes (the next free value indexes) and return the index
    of each of ``names`` (``ABSENT`` if not given); declines other attributes."""
    given = list(element.attrib.keys())
    if not set(given) <= set(names) or len(set(given)) != len(given):
        raise Declined
    recipe.fields.extend((element.tag, name) for name in given)
    index = {name: recipe.size + position for position, name in enumerate(given)}
    recipe.size += len(given)
    return [index.get(name, ABSENT) for name in names]


def _time(element: Any, recipe: Recipe) -> int:
    (index,) = _attribute_indexes(element, ("time",), recipe)
    if index < 0 or len(element):
        raise Declined
    return index


def _node_sets(nodes: Any, recipe: Recipe) -> None:
    if nodes.attrib:
        raise Declined
    first = recipe.size
    for node_set in nodes:
        if node_set.tag != "node-set":
            raise Declined
        (numnodes,) = _attribute_indexes(node_set, ("numnodes",), recipe)
        template = NodeSetTemplate(numnodes)
        for res in node_set:
            if res.tag != "res":
                raise Declined
            kind, amount = _attribute_indexes(res, ("type", "amount"), recipe)
            instances = []
            for instance in res:
                if instance.tag != "instance" or len(instance):
                    raise Declined
                instances.extend(_attribute_indexes(instance, ("amount",), recipe))
            template.resources.append((kind, None if amount < 0 else amount, instances))
        if numnodes < 0 or min((kind for kind, _, _ in template.resources), default=0) < 0:
            raise Declined
        recipe.node_sets.append(template)
    recipe.nodes = slice(first, recipe.size)


def _start(start: Any, recipe: Recipe) -> None:
    if start.attrib or len(start) > 1:
        raise Declined
    for child in start:
        if child.tag == "exact":
            recipe.start_mode, recipe.exact = StartMode.EXACT, _time(child, recipe)
        elif child.tag == "now" and not child.attrib and not len(child):
            recipe.start_mode = StartMode.NOW
        else:
            raise Declined


def _software(software: Any, recipe: Recipe) -> None:
    if software.attrib or len(software) != 1:
        raise Declined
    (child,) = software
    if child.tag == "disk-image" and not len(child):
        image_id, size = _attribute_indexes(child, ("id", "size"), recipe)
        if image_id < 0 or size < 0:
            raise Declined
        recipe.image_id, recipe.image_size = image_id, size
    elif child.tag != "none" or child.attrib or len(child):
        raise Declined


def _extra(extra: Any, recipe: Recipe) -> None:
    if extra.attrib:
        raise Declined
    recipe.extras = []
    for attr in extra:
        name, value = _attribute_indexes(attr, ("name", "value"), recipe)
        if attr.tag != "attr" or len(attr) or name < 0 or value < 0:
            raise Declined
        recipe.extras.append((name, value))


def _distinct_children(element: Any) -> Iterator[Any]:
    """The element's children; declines a second child of one name (never valid here)."""
    seen: set[str] = set()
    for child in element:
        if child.tag in seen:
            raise Declined
        seen.add(child.tag)
        yield child


def _lease(lease: Any, recipe: Recipe) -> None:
    indexes = _attribute_indexes(lease, LEASE_ATTRIBUTES, recipe)
    recipe.lease_attributes = dict(zip(LEASE_ATTRIBUTES, indexes, strict=True))
    for child in _distinct_children(lease):
        if child.tag == "nodes":
            _node_sets(child, recipe)
        elif child.tag == "start":
            _start(child, recipe)
        elif child.tag == "duration":
            recipe.duration = _time(child, recipe)
        elif child.tag == "deadline":
            recipe.deadline = _time(child, recipe)
        elif child.tag == "software":
            _software(child, recipe)
        elif child.tag == "extra":
            _extra(child, recipe)
        else:
            raise Declined


def recipe_of(piece: str) -> Recipe:
    """The recipe of one skeleton piece (a ``<lease-request`` and what follows it up to the
    next one), from lxml's parse of the piece; declines anything but one request made only
    of the LWF's elements, each with at most one of each child, with an arrival, a lease
    and its duration."""
    try:
        root = etree.fromstring((_REQUEST_START + piece).encode(), xmlio.make_parser())
    except etree.XMLSyntaxError as exc:
        raise Declined from exc
    recipe = Recipe()
    (recipe.arrival,) = _attribute_indexes(root, ("arrival",), recipe)
    for child in _distinct_children(root):
        if child.tag == "realduration":
            recipe.realduration = _time(child, recipe)
        elif child.tag == "lease":
            _lease(child, recipe)
        else:
            raise Declined
    if recipe.size != piece.count('""'):
        raise Declined  # a namespace declaration, which is no attribute
    if ABSENT in (recipe.arrival, recipe.duration):
        raise Declined  # invalid (no arrival, or no <lease> or <duration>): lxml says so
    return recipe


def _region(data: bytes) -> tuple[int, int]:
    """Byte offsets of the text inside ``<lease-requests>``; declines when that element is
    not found exactly by its tags, or anything but the root's end follows it."""
    start = data.find(_OPEN)
    while start != -1 and data[start + len(_OPEN):start + len(_OPEN) + 1] not in (
            b">", b" ", b"\t", b"\n", b"\r"):
        start = data.find(_OPEN, start + 1)
    if start == -1:
        raise Declined
    for opener, closer in _HIDING:
        hidden = data.rfind(opener, 0, start)
        if hidden != -1 and not -1 < data.find(closer, hidden + len(opener)) < start:
            raise Declined
    inside = data.find(b">", start) + 1
    end = data.find(_CLOSE, inside)
    if inside == 0 or end == -1 or b'"' in data[start:inside] or b"/" in data[start:inside]:
        raise Declined
    if not _TAIL.fullmatch(data, end):
        raise Declined
    return inside, end


class Scan:
    """One read of a plain LWF's requests (``requests``), which also gathers what
    ``verdict`` needs to judge the document (``proven_valid``). Declines (``Declined``)
    at construction, or part way through ``requests`` when a later stretch of the text is
    not plain: the caller then discards what it has read."""

    def __init__(self, data: bytes, kinds: dict[tuple[str, str], str] | None) -> None:
        self.data = data
        self.inside, self.end = _region(data)
        if any(data.find(mark, self.inside, self.end) != -1 for mark in _NOT_PLAIN):
            raise Declined
        self.kinds = kinds
        """(element, attribute) -> simple type (``verdict.attribute_kinds``), or
        ``None``: the verdict is not judged here."""
        self.recipes: dict[str, Recipe] = {}
        self.representatives: list[str] = []
        """The text of the first request of each recipe."""
        self.values_hold = kinds is not None
        """Whether every value read so far is proven valid for its type."""

    def requests(self) -> Iterator[tuple[Recipe, list[str | None]]]:
        """Each lease request as (its recipe, its attribute values in document order, then
        ``None``: the value of ``ABSENT``)."""
        chunk_start = self.inside
        while chunk_start < self.end:
            # A stretch of text at a time, each ending where a request starts: memory stays
            # small whatever the file's size.
            chunk_end = self.data.find(_REQUEST_START_BYTES, chunk_start + CHUNK_BYTES,
                                       self.end)
            if chunk_end == -1:
                chunk_end = self.end
            yield from self._chunk_requests(self.data[chunk_start:chunk_end],
                                            first=chunk_start == self.inside)
            chunk_start = chunk_end

    def _chunk_requests(self, chunk: bytes,
                        first: bool) -> Iterator[tuple[Recipe, list[str | None]]]:
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Declined from exc
        parts = text.split('"')
        skeleton = '""'.join(parts[0::2])
        values = parts[1::2]
        joined = "".join(values)
        if "'" in skeleton or "\t" in joined or "\n" in joined or "\r" in joined:
            raise Declined
        pieces = skeleton.split(_REQUEST_START)
        if pieces[0].strip() if first else pieces[0]:
            raise Declined
        columns: dict[str, list[str]] = {kind: [] for kind in haizea_verdict.LEXICAL}
        position = 0
        for piece in pieces[1:]:
            recipe = self.recipes.get(piece)
            if recipe is None:
                recipe = self._new_recipe(piece, values, position)
            following = position + recipe.size
            request: list[str | None] = values[position:following]  # type: ignore[assignment]
            for kind, picked in recipe.checks:
                columns[kind] += picked(request)
            request.append(None)
            yield recipe, request
            position = following
        if self.values_hold:
            self.values_hold = all(haizea_verdict.column_holds(kind, column)
                                   for kind, column in columns.items())

    def _new_recipe(self, piece: str, values: list[str], position: int) -> Recipe:
        if len(self.recipes) >= MAX_RECIPES:
            raise Declined
        recipe = self.recipes[piece] = recipe_of(piece)
        gaps = piece.split('""')
        text = [_REQUEST_START, gaps[0]]
        for value, gap in zip(values[position:position + recipe.size], gaps[1:], strict=True):
            text += ['"', value, '"', gap]
        self.representatives.append("".join(text))
        if self.kinds is not None:
            recipe.checks = self._checks(recipe)
        return recipe

    def _checks(self, recipe: Recipe) -> list[tuple[str, Callable[[list[Any]], Any]]]:
        assert self.kinds is not None
        positions: dict[str, list[int]] = {}
        for index, field in enumerate(recipe.fields):
            kind = self.kinds.get(field)
            if kind is None:
                self.values_hold = False  # an attribute the schema does not declare
            elif kind != haizea_verdict.STRING:
                positions.setdefault(kind, []).append(index)
        # itemgetter of one index returns the value itself, not a tuple: ask for it twice
        return [(kind, itemgetter(*indexes) if len(indexes) > 1 else
                 itemgetter(indexes[0], indexes[0])) for kind, indexes in positions.items()]

    def proven_valid(self, well_formed: Callable[[bytes], bool],
                     valid: Callable[[bytes], bool]) -> bool:
        """After ``requests``: whether the document is proven valid the factored way
        (``haizea_verdict``), given a libxml2 well-formedness check of the whole document
        and a libxml2 validation, here of the document with one request per recipe.
        ``False`` proves nothing: validate the whole document."""
        if not self.values_hold or not self.representatives:
            return False
        reduced = b"".join((self.data[:self.inside], "".join(self.representatives).encode(),
                            self.data[self.end:]))
        return valid(reduced) and well_formed(self.data)
