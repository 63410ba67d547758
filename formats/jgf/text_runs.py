"""JGF's fast path: runs of identical node subtrees found in the text and read once.

A large graph lists one node vertex after another, each followed by the vertices below it,
and identical machines give texts that differ only in digits: vertex ids, uniq_ids, the
node's name, id and rank, and the node's name inside the paths below it. This path reads
those digits as numpy arrays over the bytes, without decoding the vertices they belong to:

- The vertices are walked in order. A node vertex and the vertices under its path that
  follow it form a *block*; the blocks after it with the same bytes but for digits are
  its run. Blocks whose digit runs have the same lengths (a *segment*) are compared as
  the rows of one strided array; where a number gains a digit (node99, node100) the
  segment ends, and the next block, if it is the first's text with digit runs of other
  lengths (matched by a pattern made of the first's text), starts the run's next
  segment. Everything else, and each run's first block, is *kept*.
- What each digit run of a block is, is found once per *skeleton* (its bytes with every
  digit a 0xFF byte, which ASCII text lacks) by decoding the block with
  every digit run replaced by a distinct marker number (``_probe``). A digit run may vary
  along a run only where varying changes nothing but the node's name, id and rank: vertex
  ids, uniq_ids beside an ``id``, the node's name (its trailing digits), id and rank, the
  name where it appears in the paths and a rank equal to the node's. Every other digit run
  must have the same text in each block of the run; a varying one has no leading zero.
  These rules are checked on the digit values as arrays; the run ends at the first block
  that breaks one.
- The kept vertices are read by the checked path (``codec.read_checked``'s schema check,
  ``check_graph`` and model builder), and the runs' other members join the group of their first
  (``graph_to_environment``'s ``members``), as ``_Run.admits`` would have admitted them.
- What the checked path would check across the dropped vertices is checked on arrays:
  vertex ids unique (ids made of digits only, as integers), paths unique, every edge (each
  the first edge's text with other digits: containment, no legacy form) joining a vertex
  to its parent.

A model object's place (``ReadResult.locator``, asked by ``--losses``) is the checked
path's (``codec.source_of``): the vertex it names starts where the walk found it, a kept
vertex's span or a member's block in its run's segment, and its line is counted from
the offset, so a place costs the text before it is counted, once, not a decode of it.

The path only accepts: any diagnostic, any text it does not recognise (other layouts,
other top-level keys, non-ASCII bytes, backslashes in a block), and any check that fails
gives ``None``, and ``reader.read`` reads the file the checked way. ``tests/test_jgf_runs.py``
holds the two to the same documents, diagnostics and places.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from dcx.core.diagnostics import ReadResult
from dcx.core.limits import LIMITS, paused_gc
from dcx.core.model import Document
from dcx.parsing.fluxion import CONTAINMENT, SCHEMA, Graph, check_graph, descendants
from dcx.parsing.jsonio import load_json, skim
from dcx.parsing.schemas import loaded_against

if TYPE_CHECKING:
    import numpy as np

    from dcx.formats.jgf.codec import Layout, _Grouping

MIN_BYTES = 1 << 20
"""Smaller files are read the checked way: the arrays would cost more than they save."""

_MARK = 10**15
"""Digit run ``j`` of a probed block becomes ``_MARK + j`` (16 digits)."""

_WS = b" \t\n\r"
_HEAD = re.compile(rb'\{[ \t\n\r]*"graph"[ \t\n\r]*:[ \t\n\r]*\{[ \t\n\r]*'
                   rb'(?:"metadata"[ \t\n\r]*:[ \t\n\r]*(\{[^{}\[\]]*\})[ \t\n\r]*,[ \t\n\r]*)?'
                   rb'"nodes"[ \t\n\r]*:[ \t\n\r]*\[[ \t\n\r]*')
"""The text before the first vertex; a flat ``metadata`` object first (the writer's
validity window) is kept in the reduced document."""
_EDGES_OPEN = re.compile(rb'[ \t\n\r]*:[ \t\n\r]*\[[ \t\n\r]*')
_TRAILING = re.compile(r"(.*[^0-9])([0-9]+)", re.DOTALL)
_MAX_DIGITS = 18
_MAX_WINDOW = 4096
"""Blocks compared at once (bounds the arrays a comparison makes)."""
_TRIAL_BLOCKS = 256
"""Node blocks looked at before giving up on a file where none starts a run."""


class _Declined(Exception):
    """The text is not one the fast path accepts: the checked path reads it."""


_DIGITS = b"0123456789"
_MARKED_DIGITS = bytes.maketrans(_DIGITS, b"\xff" * 10)


@dataclass
class _Digits:
    """Every run of digits in part of the text: where it starts, its length, value and
    whether it has a leading zero."""

    starts: np.ndarray
    lengths: np.ndarray
    values: np.ndarray
    leading_zero: np.ndarray


def _digits(codes: np.ndarray, offset: int) -> _Digits:
    """The digit runs of ``codes`` (bytes that start and end with no digit), placed from
    text ``offset``."""
    import numpy as np

    is_digit = (codes - np.uint8(48)) < 10
    bounds = np.flatnonzero(is_digit[1:] != is_digit[:-1]) + 1
    del is_digit
    starts, ends = bounds[0::2], bounds[1::2]
    lengths = ends - starts
    if lengths.size and int(lengths.max()) > _MAX_DIGITS:
        raise _Declined
    first_digits = codes[starts]
    values = first_digits.astype(np.int64) - 48
    leading_zero = (lengths > 1) & (first_digits == 48)
    longer = np.flatnonzero(lengths > 1)
    place = 1
    while longer.size:
        values[longer] = values[longer] * 10 + (codes[starts[longer] + place] - 48)
        place += 1
        longer = longer[lengths[longer] > place]
    return _Digits(starts + offset, lengths, values, leading_zero)


@dataclass
class _Columns:
    """The digit runs of a block: where each starts in it, and its length."""

    starts: np.ndarray
    lengths: np.ndarray

    @staticmethod
    def of(block: np.ndarray) -> _Columns:
        import numpy as np

        is_digit = np.zeros(block.size + 2, bool)
        is_digit[1:-1] = (block - np.uint8(48)) < 10
        bounds = np.flatnonzero(is_digit[1:] != is_digit[:-1])
        starts, ends = bounds[0::2], bounds[1::2]
        return _Columns(starts, ends - starts)

    def digits(self, columns: Sequence[int]) -> np.ndarray:
        """The places in the block of the digits of ``columns``, in order."""
        import numpy as np

        if not len(columns):
            return np.zeros(0, np.int64)
        return np.concatenate([np.arange(self.starts[c], self.starts[c] + self.lengths[c])
                               for c in columns])


@dataclass
class _Plan:
    """A block shape's rules as byte places, and the digit runs whose values are read
    (vertex ids, the node's name, id and rank)."""

    constant: np.ndarray
    """Places of the digits that must keep the first block's text."""
    constant_lengths: np.ndarray
    """The lengths of the runs that keep their text, in order."""
    no_leading_zero: np.ndarray
    """First places of varying runs longer than one digit."""
    equal: np.ndarray
    equal_to: np.ndarray
    """Places of digits that must be the digits at the same place of another run."""
    read: list[int]
    """The runs whose values are read, in this order (``at``)."""
    places: np.ndarray
    weights: np.ndarray
    offsets: np.ndarray
    at: dict[int, int]

    @staticmethod
    def of(columns: _Columns, shape: _Shape) -> _Plan | None:
        import numpy as np

        lengths = columns.lengths
        equal: list[int] = []
        equal_to: list[int] = []
        for runs, source in ((shape.equal_name, shape.name), (shape.equal_rank, shape.rank)):
            for run in runs:
                assert source is not None
                if lengths[run] != lengths[source]:
                    return None  # never the same text
                equal.append(run)
                equal_to.append(source)
        read = list(dict.fromkeys([*shape.keys, shape.name, *(
            run for run in (shape.node_id, shape.rank) if run is not None)]))
        places = columns.digits(read)
        ends = np.repeat(columns.starts[read] + lengths[read], lengths[read])
        varying = [run for run in shape.varying if lengths[run] > 1]
        constant = np.flatnonzero(shape.constant).tolist()
        return _Plan(columns.digits(constant), lengths[constant], columns.starts[varying],
                     columns.digits(equal), columns.digits(equal_to), read, places,
                     np.power(10, ends - places - 1, dtype=np.int64),
                     np.concatenate(([0], np.cumsum(lengths[read])[:-1])),
                     {run: index for index, run in enumerate(read)})

    def accepts(self, rows: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Which blocks (rows of bytes) read as ``first`` but for the node's name, id and
        rank."""
        good = (rows[:, self.constant] == first[self.constant]).all(axis=1)
        good &= (rows[:, self.no_leading_zero] != 48).all(axis=1)
        good &= (rows[:, self.equal] == rows[:, self.equal_to]).all(axis=1)
        return good

    def values(self, rows: np.ndarray) -> np.ndarray:
        """The values of the runs read (rows × ``read``)."""
        import numpy as np

        digits = (rows[:, self.places].astype(np.int64) - 48) * self.weights
        return np.add.reduceat(digits, self.offsets, axis=1)


@dataclass
class _Shape:
    """What the digit runs of one block skeleton are (``_probe``)."""

    columns: int
    keys: list[int]
    """The digit run of each vertex's id (vertex ids of digits only)."""
    parents: list[int]
    """Each vertex's parent within the block (-1 for the node)."""
    prefix: str
    """The node's name: ``prefix`` and the digit run ``name``."""
    name: int
    node_id: int | None
    rank: int | None
    equal_name: list[int]
    equal_rank: list[int]
    varying: list[int]
    """Runs that may take any value without a leading zero (ids, uniq_ids, name, rank)."""
    constant: np.ndarray
    """Mask of the runs that must keep their text."""


def _marker(value: Any, columns: int) -> int | None:
    """The digit run a probe marker stands for (an int, or a string of digits only)."""
    if isinstance(value, str):
        if not (len(value) == 16 and value.isascii() and value.isdigit()):
            return None
        value = int(value)
    if type(value) is not int:
        return None
    column = value - _MARK
    return column if 0 <= column < columns else None


def _probe(block: str, starts: Sequence[int], lengths: Sequence[int],
           vertices: list[dict[str, Any]]) -> _Shape | None:
    """The shape of a block (``vertices`` as decoded), or ``None`` when some digit run
    that would have to vary means more than this path reads."""
    import numpy as np

    columns = len(starts)
    pieces: list[str] = []
    at = 0
    for column, (start, length) in enumerate(zip(starts, lengths, strict=True)):
        pieces += [block[at:start], str(_MARK + column)]
        at = start + length
    pieces.append(block[at:])
    try:
        probed, _ = skim("[" + "".join(pieces) + "]", 0)
    except (ValueError, RecursionError):
        return None
    if not isinstance(probed, list) or len(probed) != len(vertices):
        return None
    if not all(isinstance(vertex, dict) for vertex in probed):
        return None
    node_meta = probed[0]["metadata"]
    name = node_meta.get("name")
    named = _TRAILING.fullmatch(name) if isinstance(name, str) else None
    if named is None or _marker(named.group(2), columns) is None:
        return None
    prefix, name_column = named.group(1), _marker(named.group(2), columns)
    assert name_column is not None
    real_meta = vertices[0]["metadata"]
    if "id" not in real_meta:
        return None
    node_id, rank = _marker(node_meta["id"], columns), _marker(node_meta.get("rank"), columns)
    node_segments = node_meta["paths"][CONTAINMENT].split("/")
    if len(node_segments) < 3:
        return None  # a root: a second one would be an error
    depth = len(node_segments) - 1
    # The name's segment in each path: the prefix's own digit runs are other runs there,
    # which keep their text along a run as the name's do.
    in_segment = re.compile(re.sub("[0-9]{16}", "[0-9]{16}", re.escape(prefix))
                            + "([0-9]{16})")
    keys: list[int] = []
    parents: list[int] = []
    equal_name: list[int] = []
    equal_rank: list[int] = []
    varying = [name_column, *(c for c in (node_id, rank) if c is not None)]
    index_of = {vertices[0]["metadata"]["paths"][CONTAINMENT]: 0}
    for index, (vertex, real) in enumerate(zip(probed, vertices, strict=True)):
        meta, real_meta = vertex["metadata"], real["metadata"]
        key = _marker(vertex.get("id"), columns)
        # Without an "id", a vertex's id is inferred from its vertex id, which varies.
        if key is None or "id" not in real_meta or real_meta["paths"].keys() != {CONTAINMENT}:
            return None
        keys.append(key)
        uniq = _marker(meta.get("uniq_id"), columns)
        if uniq is not None and "id" in real_meta:
            varying.append(uniq)
        segments = meta["paths"][CONTAINMENT].split("/")
        in_path = in_segment.fullmatch(segments[depth]) if len(segments) > depth else None
        if in_path is None or _marker(in_path.group(1), columns) is None:
            return None
        equal_name.append(int(in_path.group(1)) - _MARK)
        real_path = real_meta["paths"][CONTAINMENT]
        index_of[real_path] = index
        if index:
            parent = index_of.get(real_path.rpartition("/")[0])
            vertex_rank = _marker(meta.get("rank"), columns)
            if parent is None or (rank is not None and vertex_rank is None):
                return None
            parents.append(parent)
            if vertex_rank is not None:
                if rank is None:
                    return None
                equal_rank.append(vertex_rank)
        else:
            parents.append(-1)
    varying += keys
    constant = np.ones(columns, bool)
    constant[varying + equal_name + equal_rank] = False
    return _Shape(columns, keys, parents, prefix, name_column, node_id, rank, equal_name,
                  equal_rank, varying, constant)


@dataclass
class _Run:
    """A run's first node vertex (kept) and its other members' digit runs (rows)."""

    key: str
    parent_path: str
    prefix: str
    """The node names' text before their trailing digits (the first node's)."""
    node_id: int
    rank: int
    """The first node's id and rank (for a run where they do not vary)."""
    shape: _Shape
    plan: _Plan
    values: np.ndarray
    """The runs ``plan`` reads, one row per member after the first."""
    segments: list[_Segment]
    """Where the members after the first are in the text."""


@dataclass
class _Segment:
    """Members of a run whose digit runs have the same lengths: ``count`` blocks, the first
    at ``start``, each ``stride`` bytes after the one before."""

    start: int
    stride: int
    count: int


@dataclass
class _Known:
    """A block skeleton's shape, its plan and the pattern of the blocks that differ from it
    only in digits (digit runs of any length), compiled when first needed."""

    shape: _Shape
    plan: _Plan
    block: bytes
    template: re.Pattern[bytes] | None = None

    def pattern(self) -> re.Pattern[bytes]:
        if self.template is None:
            digits = b"[0-9]{1,%d}" % _MAX_DIGITS
            self.template = re.compile(digits.join(
                re.escape(text) for text in re.split(rb"[0-9]+", self.block)))
        return self.template


@dataclass
class _Walk:
    """The vertices kept (text spans) and the runs found."""

    kept: list[tuple[int, int]] = field(default_factory=list)
    runs: list[_Run] = field(default_factory=list)


def read(data: bytes, min_bytes: int = MIN_BYTES) -> ReadResult | None:
    """``codec.read_checked``'s result for ``data``, or ``None`` when this path does not accept
    it (then the checked path reads it)."""
    if len(data) < min_bytes or len(data) > LIMITS.max_input_bytes:
        return None
    try:
        with paused_gc():
            return _read(data)
    except _Declined:
        return None


def _read(data: bytes) -> ReadResult:
    import numpy as np

    codes = np.frombuffer(data, np.uint8)
    if not codes.size or int(codes.max()) >= 0x80:
        raise _Declined
    head = _HEAD.match(data)
    nodes_end, edges_start, edges_end = _frame(data)
    if head is None or head.end() >= nodes_end:
        raise _Declined
    walk = _walk(data, codes, head.end(), nodes_end)
    if not walk.runs:
        raise _Declined
    edges = _edges(data, codes, edges_start, edges_end)
    metadata = b'"metadata":%s,' % head[1] if head[1] is not None else b""
    reduced = b"".join((b'{"graph":{', metadata, b'"nodes":[', b",".join(
        data[start:end] for start, end in walk.kept), b'],"edges":[]}}'))
    loaded, _ = loaded_against(SCHEMA, reduced, "a JGF document", "jgf.not-object")
    if loaded is None:
        raise _Declined
    graph, found = check_graph(loaded.value)
    if graph is None or found:
        raise _Declined
    _check_across(graph, walk.runs, edges)
    from dcx.formats.jgf.codec import graph_to_environment

    members = {run.key: _members(run) for run in walk.runs}
    environment = graph_to_environment(graph, members)
    if members:
        raise _Declined  # a run's first was not read as the first of a plain group
    return ReadResult(Document(environment=environment), (),
                      locator=_Places(data, graph, walk).locate)


class _Places:
    """``ReadResult.locator``: where a model object was read from (``codec.source_of``, the
    checked path's rule), found from what the walk knows: a kept vertex's place in the
    text is its span's, a run member's its segment's; line and column counted from the
    offset (``JsonLocator.line_col``'s, on bytes: the text is ASCII)."""

    def __init__(self, data: bytes, graph: Graph, walk: _Walk) -> None:
        self.data = data
        self.graph = graph
        self.kept = walk.kept
        self.runs = {run.key: run for run in walk.runs}
        self.lines = _Lines(data)
        self.slot_starts: dict[int, list[int]] = {}
        """A grouping's id → the slot of each of its kept nodes, then its slot count."""

    def locate(self, pointer: str) -> tuple[int | None, int | None]:
        from dcx.core.located import place_of
        from dcx.formats.jgf.codec import source_of

        place = place_of(pointer)
        found = None if place is None else source_of(
            place, lambda: self.layout, self._node_offset)
        if found is None:
            return None, None
        if isinstance(found, str):
            offset = _skip(self.data, 0, 1)  # the document
        elif isinstance(found, int):
            offset = found
        else:
            offset = self.kept[found.index][0]
        return self.lines.line_col(offset)

    @cached_property
    def layout(self) -> Layout | None:
        from dcx.formats.jgf.codec import layout_of

        return layout_of(self.graph)

    def _node_offset(self, grouping: _Grouping, slot: int) -> int | None:
        """Where the node of ``slot`` in ``grouping`` starts: a kept node, or a member of
        the run a kept node starts (its grouping's nodes are the kept ones)."""
        nodes = grouping.nodes
        starts = self.slot_starts.get(id(grouping))
        if starts is None:
            starts = self.slot_starts[id(grouping)] = [0, *accumulate(
                1 + (self.runs[node.key].values.shape[0] if node.key in self.runs else 0)
                for node in nodes)]
        if slot >= starts[-1]:
            return None
        at = bisect_right(starts, slot) - 1
        member = slot - starts[at]
        if not member:
            return self.kept[nodes[at].index][0]
        member -= 1
        for segment in self.runs[nodes[at].key].segments:
            if member < segment.count:
                return segment.start + member * segment.stride
            member -= segment.count
        raise AssertionError("a run's segments hold its members")


class _Lines:
    """Lines and columns of offsets in a text, each counted from the nearest offset
    counted before (so places asked in order read the text once, and a one-line file
    is not searched back to its start for each)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offsets = [0]
        self.lines = [1]
        self.line_starts = [0]

    def line_col(self, offset: int) -> tuple[int, int]:
        at = bisect_right(self.offsets, offset) - 1
        counted_from = self.offsets[at]
        line = self.lines[at] + self.data.count(b"\n", counted_from, offset)
        newline = self.data.rfind(b"\n", counted_from, offset)
        line_start = self.line_starts[at] if newline < 0 else newline + 1
        if counted_from != offset:
            self.offsets.insert(at + 1, offset)
            self.lines.insert(at + 1, line)
            self.line_starts.insert(at + 1, line_start)
        return line, offset - line_start + 1


def _skip(data: bytes, offset: int, step: int) -> int:
    """``offset`` moved past white space, forwards (``step`` 1) or backwards (-1, where
    ``offset`` is one past the character looked at)."""
    if step > 0:
        while offset < len(data) and data[offset] in _WS:
            offset += 1
    else:
        while offset > 0 and data[offset - 1] in _WS:
            offset -= 1
    return offset


def _frame(data: bytes) -> tuple[int, int, int]:
    """Where the nodes array's items end, and the edges array's items start and end, in
    ``{"graph":{"nodes":[...],"edges":[...]}}`` (white space anywhere)."""
    end = _skip(data, len(data), -1)
    for closing in b"}}]":
        end = _skip(data, end, -1)
        if end == 0 or data[end - 1] != closing:
            raise _Declined
        end -= 1
    edges_end = _skip(data, end, -1)
    key = data.rfind(b'"edges"', 0, edges_end)
    opening = _EDGES_OPEN.match(data, key + 7) if key >= 0 else None
    if opening is None:
        raise _Declined
    before = _skip(data, key, -1)
    if before == 0 or data[before - 1] != ord(","):
        raise _Declined
    before = _skip(data, before - 1, -1)
    if before == 0 or data[before - 1] != ord("]"):
        raise _Declined
    return _skip(data, before - 1, -1), opening.end(), max(edges_end, opening.end())


def _containment(vertex: Any) -> str | None:
    meta = vertex.get("metadata") if isinstance(vertex, dict) else None
    paths = meta.get("paths") if isinstance(meta, dict) else None
    path = paths.get(CONTAINMENT) if isinstance(paths, dict) else None
    return path if isinstance(path, str) else None


def _walk(data: bytes, codes: np.ndarray, start: int, end: int) -> _Walk:
    """The vertices of the nodes array (items from ``start`` to ``end``), kept or in runs."""
    walk = _Walk()
    shapes: dict[bytes, _Known | None] = {}
    plans: dict[bytes, _Plan | None] = {}

    def after(offset: int) -> int | None:
        """The start of the next item after one that ends at ``offset``."""
        if offset > end:
            raise _Declined  # an item reaching past the nodes array's end
        if offset == end:
            return None
        offset = _skip(data, offset, 1)
        if offset >= end or data[offset] != 44:  # ","
            raise _Declined
        return _skip(data, offset + 1, 1)

    position: int | None = start
    blocks = 0
    while position is not None:
        if blocks == _TRIAL_BLOCKS and not walk.runs:
            raise _Declined  # no runs to be found: the checked path reads it alone
        vertex, vertex_end = _decoded(data, position)
        path = _containment(vertex)
        if path is None or vertex["metadata"].get("type") != "node":
            walk.kept.append((position, vertex_end))
            position = after(vertex_end)
            continue
        blocks += 1
        block = [vertex]
        spans = [(position, vertex_end)]
        following = after(vertex_end)
        while following is not None:
            below, below_end = _decoded(data, following)
            below_path = _containment(below)
            if below_path is None or not below_path.startswith(path + "/"):
                break
            block.append(below)
            spans.append((following, below_end))
            following = after(below_end)
        walk.kept.extend(spans)
        position = following
        if following is None:
            continue
        block_start, block_end = spans[0][0], spans[-1][1]
        separator = data[block_end:following]
        if b"\\" in data[block_start:block_end] or separator.translate(None, _DIGITS) != separator:
            continue
        block_skeleton = data[block_start:block_end].translate(_MARKED_DIGITS)
        if block_skeleton not in shapes:
            columns = _Columns.of(codes[block_start:block_end])
            shape = _probe(data[block_start:block_end].decode("ascii"), columns.starts.tolist(),
                           columns.lengths.tolist(), block)
            plan = None if shape is None else _Plan.of(columns, shape)
            shapes[block_skeleton] = None if shape is None or plan is None else _Known(
                shape, plan, data[block_start:block_end])
        known = shapes[block_skeleton]
        if known is None:
            continue
        found = _run_members(data, codes, block_start, following, end, known, plans)
        if found is None:
            continue
        values, segments = found
        named = _TRAILING.fullmatch(vertex["metadata"]["name"])
        assert named is not None  # the probe found the name's trailing digits
        walk.runs.append(_Run(vertex["id"], path.rpartition("/")[0], named.group(1),
                              vertex["metadata"]["id"], vertex["metadata"].get("rank", -1),
                              known.shape, known.plan, values, segments))
        last = segments[-1]
        position = after(last.start + last.count * last.stride - len(separator))
    return walk


def _run_members(data: bytes, codes: np.ndarray, start: int, following: int, limit: int,
             known: _Known, plans: dict[bytes, _Plan | None]
             ) -> tuple[np.ndarray, list[_Segment]] | None:
    """The values the plan reads of the members of the run that starts with the block at
    ``start`` (known's), and where they are (``None`` for none). The members are the
    blocks that follow it, each after the same separator, that read as it but for the
    node's name, id and rank: a segment of blocks whose digit runs have the lengths of
    the one before them is found by ``_repeats``, and where it ends (a number that
    gains a digit, node99 to node100), the next block that is the first's text with digit
    runs of other lengths starts another, if its plan admits it (the runs that keep their
    text keep it: the same lengths and digits)."""
    import numpy as np

    shape, plan = known.shape, known.plan
    end = start + len(known.block)
    first = codes[start:end]
    if not plan.accepts(first[None, :], first)[0]:
        return None  # a leading zero, or a vertex whose rank is not its node's
    separator = data[end:following]
    constant = first[plan.constant]
    found: list[np.ndarray] = []
    segments: list[_Segment] = []
    segment_start, segment_end, segment_plan = start, end, plan
    while True:
        stride = segment_end - segment_start + len(separator)
        repeated = _repeats(codes, segment_start, segment_end, segment_end + len(separator),
                            limit, segment_plan)
        count = 0 if repeated is None else repeated.shape[0]
        if repeated is not None:
            found.append(repeated)
        if segment_start != start:
            segments.append(_Segment(segment_start, stride, count + 1))
        elif count:
            segments.append(_Segment(start + stride, stride, count))
        next_start = segment_end + count * stride + len(separator)
        if not data.startswith(separator, next_start - len(separator)):
            break
        matched = known.pattern().match(data, next_start, limit)
        if matched is None:
            break
        block = codes[next_start:matched.end()]
        skeleton = data[next_start:matched.end()].translate(_MARKED_DIGITS)
        if skeleton not in plans:
            plans[skeleton] = _Plan.of(_Columns.of(block), shape)
        next_plan = plans[skeleton]
        if next_plan is None or not np.array_equal(next_plan.constant_lengths,
                                                   plan.constant_lengths) or not (
                np.array_equal(block[next_plan.constant], constant)
                and next_plan.accepts(block[None, :], block)[0]):
            break
        found.append(next_plan.values(block[None, :]))
        segment_start, segment_end, segment_plan = next_start, matched.end(), next_plan
    if not found:
        return None
    return np.concatenate(found), segments


def _repeats(codes: np.ndarray, start: int, end: int, following: int, limit: int,
             plan: _Plan) -> np.ndarray | None:
    """The values ``plan`` reads of the blocks after the one from ``start`` to ``end``
    (the first at ``following``, each as far after the last, with the same separator)
    whose text is the first's but for digits and that read as the first but for the
    node's name, id and rank (``None`` for none). Looked at in windows that double while
    every block so far is admitted, so a run ending early costs little."""
    import numpy as np
    from numpy.lib.stride_tricks import as_strided

    first = codes[start:end]
    if not plan.accepts(first[None, :], first)[0]:
        return None  # a leading zero, or a vertex whose rank is not its node's
    size, stride = end - start, following - start
    separator = codes[end:following]
    is_digit = (first - np.uint8(48)) < 10
    digit_places = np.flatnonzero(is_digit)
    done, window = 0, 16
    found: list[np.ndarray] = []
    while True:
        begin = start + (done + 1) * stride
        count = min(window, (limit - begin - size) // stride + 1 if limit >= begin + size
                    else 0)
        if count <= 0:
            break
        rows = as_strided(codes[begin:], shape=(count, size), strides=(stride, 1),
                          writeable=False)
        gaps = as_strided(codes[begin - len(separator):], shape=(count, len(separator)),
                          strides=(stride, 1), writeable=False)
        good = ((rows == first) | is_digit).all(axis=1)
        good &= ((rows[:, digit_places] - np.uint8(48)) < 10).all(axis=1)
        good &= (gaps == separator).all(axis=1)
        good &= plan.accepts(rows, first)
        bad = np.flatnonzero(~good)
        taken = int(bad[0]) if bad.size else count
        if taken:
            found.append(plan.values(rows[:taken]))
        done += taken
        if taken < count:
            break
        window = min(window * 2, _MAX_WINDOW)
    return np.concatenate(found) if found else None


def _decoded(data: bytes, offset: int) -> tuple[Any, int]:
    """The JSON object at ``offset`` and where it ends, decoded from a window of the text
    that grows until it holds the object."""
    if data[offset] != 123:  # "{"
        raise _Declined
    window = 4096
    while True:
        piece = data[offset:offset + window].decode("ascii")
        try:
            value, end = skim(piece, 0)
        except (ValueError, RecursionError) as problem:
            if offset + window >= len(data):
                raise _Declined from problem
            window *= 4
            continue
        return value, offset + end


@dataclass
class _Edges:
    sources: np.ndarray
    targets: np.ndarray


def _edges(data: bytes, codes: np.ndarray, start: int, end: int) -> _Edges:
    """The edges (items from ``start`` to ``end``) as source and target ids, when each is
    the first edge's text with other digits: ids of digits only, containment edges."""
    import numpy as np

    if start >= end:
        return _Edges(np.zeros(0, np.int64), np.zeros(0, np.int64))
    _, first_end = _decoded(data, start)
    checked, _ = load_json(data[start:first_end])  # repeated keys, as the checked path
    first = checked.value if checked is not None else None
    if not isinstance(first, dict) or first.keys() - {"metadata"} != {"source", "target"} or (
            "metadata" in first and first["metadata"] != {"subsystem": CONTAINMENT}):
        raise _Declined
    digits = _digits(codes[start - 1:end + 1], start - 1)
    runs = digits.starts.size
    if runs % 2 or runs < 2 or digits.starts[1] >= first_end or (
            runs > 2 and digits.starts[2] < first_end):
        raise _Declined
    count = runs // 2
    # Without their digits, the edges must be the first edge's text over and over, and
    # each digit run must fill one of its two places between adjacent quotes: then each
    # edge is the first with other ids (two runs per edge, each alone in a place).
    edge = data[start:first_end].translate(None, _DIGITS)
    if edge.count(b'""') != 2:
        raise _Declined
    following = _skip(data, first_end, 1)
    if count > 1:
        if following >= end or data[following] != 44:  # ","
            raise _Declined
        following = _skip(data, following + 1, 1)
    separator = data[first_end:following]
    expected = edge + (separator + edge) * (count - 1)
    if data[start:end].translate(None, _DIGITS) != expected:
        raise _Declined
    starts = digits.starts
    if digits.leading_zero.any() or not (codes[starts - 1] == 34).all() or not (
            codes[starts + digits.lengths] == 34).all():
        raise _Declined
    pairs = digits.values.reshape(count, 2)
    source_first = data.find(b'"source"', start, first_end) < data.find(b'"target"', start,
                                                                         first_end)
    return _Edges(pairs[:, 0 if source_first else 1], pairs[:, 1 if source_first else 0])


def _digit_id(key: str) -> int | None:
    """A vertex id of digits only, as the integer it spells (``None`` otherwise, or when a
    leading zero would make two spellings one integer)."""
    if key.isascii() and key.isdigit() and len(key) <= _MAX_DIGITS and (
            key == "0" or key[0] != "0"):
        return int(key)
    return None


def _check_across(graph: Graph, runs: list[_Run], edges: _Edges) -> None:
    """What ``check_graph`` would find across the dropped vertices, on arrays: unique ids
    and paths, each run's first node with exactly its block below it, every edge from a
    vertex to its child."""
    import numpy as np

    vertex_of = {vertex.key: vertex for vertex in graph.vertices}
    with_path = sum(CONTAINMENT in vertex.paths for vertex in graph.vertices)
    if len(graph.by_path) != with_path:
        raise _Declined  # two kept vertices share a path
    kept = [(found, _parent_id(graph, vertex)) for vertex in graph.vertices
            for found in (_digit_id(vertex.key),) if found is not None]
    ids: list[np.ndarray] = [np.array([found for found, _ in kept], np.int64)]
    parents: list[np.ndarray] = [np.array([parent for _, parent in kept], np.int64)]
    names: dict[tuple[str, str], list[np.ndarray]] = {}
    for run in runs:
        first = vertex_of[run.key]
        shape = run.shape
        if len(descendants(graph, first.paths[CONTAINMENT])) != len(shape.keys) - 1:
            raise _Declined  # vertices below the first node outside its block
        parent = graph.by_path.get(run.parent_path)
        parent_id = _digit_id(parent.key) if parent is not None else None
        at = run.plan.at
        keys = [at[key] for key in shape.keys]
        ids.append(run.values[:, keys].ravel())
        column_parents = np.empty((run.values.shape[0], len(shape.keys)), np.int64)
        for index, within in enumerate(shape.parents):
            column_parents[:, index] = (-3 if parent_id is None else parent_id) if within < 0 \
                else run.values[:, keys[within]]
        parents.append(column_parents.ravel())
        names.setdefault((run.parent_path, run.prefix), []).append(
            run.values[:, at[shape.name]])
    all_ids = np.concatenate(ids)
    order = np.argsort(all_ids, kind="stable")
    sorted_ids = all_ids[order]
    if sorted_ids.size > 1 and not (sorted_ids[1:] != sorted_ids[:-1]).all():
        raise _Declined  # a repeated vertex id
    dropped: dict[tuple[str, str], set[int]] = {}
    for place, arrays in names.items():
        joined = np.concatenate(arrays)
        if np.unique(joined).size != joined.size:
            raise _Declined  # a repeated path
        dropped[place] = set(joined.tolist())
    for path in graph.by_path:
        cut = path.find("/", 1)
        while cut != -1:
            segment_end = path.find("/", cut + 1)
            segment = path[cut + 1:] if segment_end == -1 else path[cut + 1:segment_end]
            named = _TRAILING.fullmatch(segment)
            if named is not None and (named.group(2) == "0" or named.group(2)[0] != "0"):
                taken = dropped.get((path[:cut], named.group(1)))
                if taken is not None and int(named.group(2)) in taken:
                    raise _Declined  # a kept vertex at or below a dropped node's path
            cut = segment_end
    sorted_parents = np.concatenate(parents)[order]
    for ends in (edges.sources, edges.targets):
        found = sorted_ids.searchsorted(ends)
        if ends.size and (found >= sorted_ids.size).any():
            raise _Declined
        if ends.size and (sorted_ids[found] != ends).any():
            raise _Declined  # an edge endpoint that is no vertex
    if edges.targets.size and (
            sorted_parents[sorted_ids.searchsorted(edges.targets)] != edges.sources).any():
        raise _Declined  # an edge that does not join a vertex to its child


def _parent_id(graph: Graph, vertex: Any) -> int:
    """The digit id of the vertex whose path is the parent of ``vertex``'s (-1 for none,
    -2 without a containment path, -3 for a parent whose id is not digits only)."""
    path = vertex.paths.get(CONTAINMENT)
    if path is None:
        return -2
    cut = path.rfind("/")
    parent = graph.by_path.get(path[:cut]) if cut > 0 else None
    if parent is None:
        return -1
    found = _digit_id(parent.key)
    return -3 if found is None else found


def _members(run: _Run) -> tuple[list[str], list[int] | None, list[int] | None]:
    """Names, ids and ranks of a run's members after its first (``None``: the model has
    none, as for the first)."""
    shape, values, at = run.shape, run.values, run.plan.at
    count = values.shape[0]
    names = [run.prefix + str(number) for number in values[:, at[shape.name]].tolist()]
    ids = values[:, at[shape.node_id]].tolist() if shape.node_id is not None else (
        [run.node_id] * count if run.node_id >= 0 else None)
    ranks = values[:, at[shape.rank]].tolist() if shape.rank is not None else (
        [run.rank] * count if run.rank >= 0 else None)
    return names, ids, ranks
