"""RFC 22 idsets and RFC 29 hostlists: strict decoders, canonical encoders, never expanded.

Both types are stored as ranges. Decoding ``0-2147483646`` or ``n[0-1048575]`` builds one
range, counting members is a sum over ranges, and membership is a binary search, so nothing
costs time proportional to the number of ids unless the caller iterates.

Decoders raise ``IdsetError`` / ``HostlistError`` (both ``ValueError``) whose ``position`` is
the 0-based offset of the offending character and whose ``reason`` says what is wrong there.
Format readers turn these into diagnostics.

Divergences
-----------
flux-core (libidset, libhostlist at the commit in the project's Flux notes) is the reference
implementation. Each entry says whom dcx departs from: flux-core, the RFC text, or both.
Stricter than flux-core but not than the RFC means flux-core accepts something RFC 22 or 29
does not allow; stricter than the RFC means dcx's own choice.

idsets (RFC 22):

* Empty tokens (``1,,2``) are rejected: stricter than flux-core, which skips them; RFC 22
  gives no empty element in its grammar.
* Ids above 2**31-1 are rejected, as flux-core rejects them up to 2**32-1; from 2**32 on,
  flux-core wraps them modulo 2**32 (``4294967296`` becomes ``0``). RFC 22 states no maximum,
  so the limit is stricter than the RFC.
* ``3-3`` is rejected, as in flux-core (a written range has two or more members).

hostlists (RFC 29):

* Whitespace anywhere is an error. flux-core treats space and tab between expressions as
  separators, and inside brackets its number parser (``strtoul``) skips a space before a
  number and counts it toward the zero-padding width: ``n[ 1]`` is ``n01``, ``n[1 -3]`` is
  ``n01,n02,n03``, while ``n[1 ]`` is an error. RFC 29 allows no whitespace.
* Empty expressions (``a,,b``, a leading or trailing comma) are errors: dcx's choice, stricter
  than both. RFC 29 says the empty hostlist expression is the empty list, and flux-core skips
  empty tokens. The whole string ``""`` is the empty list in all three.
* ``n[+4]``: an error in dcx. flux-core's ``strtoul`` reads the sign, and the width counts
  it: ``n04``.
* ``n[5-]``: an error in dcx. flux-core reads a range without a high end as the single host
  ``n5``.
* ``n[1x-3]``: an error in dcx. flux-core checks only the high end for trailing characters,
  so ``1x`` is read as 1 with width 2: ``n01,n02,n03``.
* A stray ``]``: with no ``[`` before it, an error in both. After a bracket group flux-core
  makes it part of the suffix (``n[1]]`` is the host ``n1]``), and its tokenizer's bracket
  depth then goes negative, so later commas no longer separate: ``n[1]],m2`` is one host,
  ``n1],m2``. dcx rejects both.
* Only printable ASCII is allowed in prefixes and suffixes (RFC 29); flux-core accepts any
  byte. Names longer than 255 characters are accepted (RFC 29 sets no length); flux-core
  decodes them but cannot expand them: a host is rendered into a 271-byte buffer
  (``_POSIX_HOST_NAME_MAX + 16``), so a prefix of 271 or more characters yields no host and a
  longer number after a shorter prefix is cut off without an error. An unbracketed name is
  also truncated to 1,023 characters while parsing.
* Zero padding is taken per range from the low bound's digits (``[005,4]`` means ``005,4``),
  as flux-core does; the RFC prose applies the first element's width to the whole list.
* An expression with more than one bracket group (``rack[1-2]node[1-3]``) is an error, as in
  RFC 29, which allows one group; flux-core expands the first and keeps the rest literally,
  which does not survive its own re-encoding.
* Numbers above 2**64-1: a bracketed one is an error; flux-core's ``strtoul`` clamps it to
  2**64-1 without a word (``n[18446744073709551616]`` is ``n18446744073709551615``), and a
  range whose high end overflows passes the per-range limit because the size computation
  wraps around. An unbracketed host whose digits exceed 2**64-1 is kept as a literal name;
  flux-core silently drops it.
* A bracket reaching 2**64-1 followed by a suffix (``n[18446744073709551615]x``) is an error
  in dcx, stricter than the RFC: flux-core expands such a bracket host by host with a loop
  whose counter wraps from 2**64-1 to 0, so it never ends and allocates until memory runs
  out. The encoder writes such a host unbracketed.
* More than 10,240 elements in one bracket is an error, as in flux-core (``MAX_RANGES``);
  RFC 29 sets no limit. The encoder splits a longer run into several bracket groups with the
  same prefix and suffix (``n[0,2,…],n[20480,…]``), so what dcx writes flux-core can read.
* A range of more than 2**20 hosts is an error, as in flux-core (``MAX_RANGE``).
* The encoder can express suffixes (``node[1-3].example.com``); flux-core writes such lists
  out flat. Both decode them.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, islice, repeat
from operator import add, eq, itemgetter, le, lt, methodcaller, ne, sub
from typing import NamedTuple, overload

from dcx.core.codes import Code
from dcx.core.limits import LIMITS

MAX_ID = LIMITS.max_idset_id
MAX_HOSTS_PER_RANGE = LIMITS.max_hostlist_range
MAX_HOST_INDEX = (1 << 64) - 1
MAX_BRACKET_ELEMENTS = 10_240
"""Comma-separated elements in one bracket group (flux-core's ``MAX_RANGES``)."""

CODES: tuple[Code, ...] = ()
"""None: the decoders raise ``IdsetError``/``HostlistError`` and each format reports them
under its own code (``flux-r.idset``, ``flux-r.hostlist``), with the position."""


class IdsetError(ValueError):
    """An idset string that RFC 22 (as dcx reads it) does not allow."""

    def __init__(self, text: str, position: int, reason: str) -> None:
        super().__init__(f"invalid idset at position {position}: {reason}")
        self.text = text
        self.position = position
        self.reason = reason


class HostlistError(ValueError):
    """A hostlist string that RFC 29 (as dcx reads it) does not allow."""

    def __init__(self, text: str, position: int, reason: str) -> None:
        super().__init__(f"invalid hostlist at position {position}: {reason}")
        self.text = text
        self.position = position
        self.reason = reason


# --------------------------------------------------------------------------- idset

# Atomic groups and possessive quantifiers: no backtracking state per element, so a
# million-element idset is checked about five times faster than with plain groups.
_ID = r"(?>0|[1-9][0-9]*+)"
_IDSET_BODY = re.compile(rf"{_ID}(?:-{_ID})?+(?:,{_ID}(?:-{_ID})?+)*+")
_MAX_ID_DIGITS = len(str(MAX_ID))
_IDSET_TOKEN = re.compile(r"[0-9]+|.", re.DOTALL)


class IdSet:
    """An ordered set of non-negative ids up to 2**31-1, held as disjoint, non-adjacent,
    ascending inclusive ranges in two parallel arrays."""

    __slots__ = ("_his", "_los", "_offsets")

    def __init__(self, los: array[int], his: array[int]) -> None:
        # Callers guarantee canonical ranges; use the constructors below.
        self._los = los
        self._his = his
        self._offsets: array[int] | None = None

    # -- constructors ---------------------------------------------------------------

    @classmethod
    def empty(cls) -> IdSet:
        return cls(array("q"), array("q"))

    @classmethod
    def decode(cls, text: str) -> IdSet:
        """Parse an RFC 22 idset; ``IdsetError`` names the position and the reason."""
        body, start = _strip_brackets(text)
        if body == "":
            return cls.empty()
        if _IDSET_BODY.fullmatch(body) is None:
            _explain_idset(text, body, start)
        tokens = body.split(",")
        decoded = _decode_valid_tokens(tokens, body.count("-"))
        if decoded is None:
            _explain_idset_limits(text, tokens, start)
            raise AssertionError("unreachable: the token walk raises")  # pragma: no cover
        los, his = decoded
        return cls(*_join_runs(los, his))

    @classmethod
    def from_ids(cls, ids: Iterable[int]) -> IdSet:
        """Any iterable of ids, in any order, duplicates allowed."""
        ordered = sorted(set(ids))
        if ordered and (ordered[0] < 0 or ordered[-1] > MAX_ID):
            raise ValueError(f"idset ids must lie in 0..{MAX_ID}")
        return cls(*_join_runs(ordered, ordered))

    @classmethod
    def from_runs(cls, runs: Sequence[tuple[int, int]]) -> IdSet:
        """Ascending, disjoint inclusive ranges ``(lo, hi)``; adjacent ones are joined."""
        los = [lo for lo, _ in runs]
        his = [hi for _, hi in runs]
        if los and (los[0] < 0 or his[-1] > MAX_ID):
            raise ValueError(f"idset ids must lie in 0..{MAX_ID}")
        return cls(*_join_runs(los, his))

    @classmethod
    def from_range(cls, lo: int, hi: int) -> IdSet:
        """The ids ``lo..hi`` inclusive (empty when ``hi < lo``)."""
        if hi < lo:
            return cls.empty()
        if lo < 0 or hi > MAX_ID:
            raise ValueError(f"idset ids must lie in 0..{MAX_ID}")
        return cls(array("q", [lo]), array("q", [hi]))

    # -- queries --------------------------------------------------------------------

    def ranges(self) -> Iterator[tuple[int, int]]:
        return zip(self._los, self._his, strict=True)

    @property
    def range_count(self) -> int:
        return len(self._los)

    def __len__(self) -> int:
        return sum(self._his) - sum(self._los) + len(self._los)

    def __bool__(self) -> bool:
        return bool(self._los)

    def __iter__(self) -> Iterator[int]:
        for lo, hi in self.ranges():
            yield from range(lo, hi + 1)

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        index = bisect_right(self._los, value) - 1
        return index >= 0 and value <= self._his[index]

    def index(self, value: int) -> int:
        """Position of ``value`` among the members in ascending order."""
        where = bisect_right(self._los, value) - 1
        if where < 0 or value > self._his[where]:
            raise ValueError(f"{value} is not in the idset")
        return self._cumulative()[where] + value - self._los[where]

    def nth(self, position: int) -> int:
        """The member at ``position`` (0-based) in ascending order."""
        offsets = self._cumulative()
        if position < 0 or position >= offsets[-1]:
            raise IndexError(position)
        where = bisect_right(offsets, position) - 1
        return self._los[where] + position - offsets[where]

    def _cumulative(self) -> array[int]:
        if self._offsets is None:
            counts = (hi - lo + 1 for lo, hi in self.ranges())
            self._offsets = array("q", accumulate(counts, initial=0))
        return self._offsets

    @property
    def first(self) -> int:
        return self._los[0]

    @property
    def last(self) -> int:
        return self._his[-1]

    def is_interval_from_zero(self) -> bool:
        """``0-(n-1)``, or empty: the ids a writer assigns when it has none of its own."""
        return not self._los or (len(self._los) == 1 and self._los[0] == 0)

    # -- set algebra ----------------------------------------------------------------

    def union(self, other: IdSet) -> IdSet:
        merged = sorted([*self.ranges(), *other.ranges()])
        los: array[int] = array("q")
        his: array[int] = array("q")
        for lo, hi in merged:
            if his and lo <= his[-1] + 1:
                his[-1] = max(his[-1], hi)
            else:
                los.append(lo)
                his.append(hi)
        return IdSet(los, his)

    def isdisjoint(self, other: IdSet) -> bool:
        mine, theirs = list(self.ranges()), list(other.ranges())
        i = j = 0
        while i < len(mine) and j < len(theirs):
            if mine[i][1] < theirs[j][0]:
                i += 1
            elif theirs[j][1] < mine[i][0]:
                j += 1
            else:
                return False
        return True

    # -- encoding -------------------------------------------------------------------

    def encode(self, brackets: bool = False) -> str:
        """Canonical RFC 22 text: runs of two or more ids as ``lo-hi``. With ``brackets``,
        a set of more than one member is wrapped in ``[...]`` (flux-core's BRACKETS flag)."""
        los, his = self._los, self._his
        if los == his:
            body = ",".join(map(str, los))
            return f"[{body}]" if brackets and len(los) > 1 else body
        tokens = list(map(str, los))
        # Only runs need a second number; the singletons are already written.
        for where in compress(range(len(tokens)), map(ne, los, his)):
            tokens[where] = f"{tokens[where]}-{his[where]}"
        body = ",".join(tokens)
        if brackets and len(self) > 1:
            return f"[{body}]"
        return body

    def __str__(self) -> str:
        return self.encode()

    def __repr__(self) -> str:
        text = self.encode()
        if len(text) > 60:
            text = text[:57] + "..."
        return f"IdSet({text!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IdSet):
            return NotImplemented
        return self._los == other._los and self._his == other._his

    def __hash__(self) -> int:
        return hash((self._los.tobytes(), self._his.tobytes()))



def _decode_valid_tokens(tokens: list[str], dashes: int) -> tuple[list[int], list[int]] | None:
    """Bounds of ``lo[-hi]`` tokens that already match the grammar, checked with C-level
    passes over the whole list; ``None`` when some limit or ordering rule fails (the caller
    then walks the tokens to say where)."""
    if max(map(len, tokens)) > 2 * _MAX_ID_DIGITS + 1:
        return None
    if dashes == 0:
        los = his = list(map(int, tokens))
    else:
        los = list(map(int, map(itemgetter(0), map(methodcaller("partition", "-"), tokens))))
        his = list(map(int, map(itemgetter(2), map(methodcaller("rpartition", "-"), tokens))))
        if not all(map(le, los, his)) or sum(map(eq, los, his)) != len(tokens) - dashes:
            return None  # a range that descends, or "3-3" (a written range has two members)
    if max(his) > MAX_ID:
        return None
    if not all(map(lt, his, islice(los, 1, None))):
        return None
    return los, his


def _join_runs(los: Sequence[int], his: Sequence[int]) -> tuple[array[int], array[int]]:
    """Merge ascending, disjoint ranges where one ends right before the next begins. Only
    the positions where a run breaks are visited in Python."""
    if not los:
        return array("q"), array("q")
    if all(map(lt, map(add, his, repeat(1)), islice(los, 1, None))):
        return array("q", los), array("q", his)  # nothing to join: the common sparse case
    gaps = map(sub, islice(los, 1, None), his)
    breaks = list(compress(range(1, len(los)), map((1).__ne__, gaps)))
    starts = [0, *breaks]
    ends = [index - 1 for index in breaks]
    ends.append(len(los) - 1)
    return array("q", map(los.__getitem__, starts)), array("q", map(his.__getitem__, ends))


def _explain_idset_limits(text: str, tokens: list[str], start: int) -> None:
    """Walk grammatical tokens to the first one that breaks a limit or the ordering."""
    previous_hi = -1
    offset = start
    for token in tokens:
        lo_text, dash, hi_text = token.partition("-")
        if len(lo_text) > _MAX_ID_DIGITS or len(hi_text) > _MAX_ID_DIGITS:
            where = offset + (len(lo_text) + 1 if len(lo_text) <= _MAX_ID_DIGITS and
                              int(lo_text) <= MAX_ID else 0)
            raise IdsetError(text, where, f"id exceeds the maximum {MAX_ID}")
        lo = int(lo_text)
        hi = int(hi_text) if dash else lo
        if hi > MAX_ID:
            where = offset + (len(lo_text) + 1 if lo <= MAX_ID and dash else 0)
            raise IdsetError(text, where, f"id exceeds the maximum {MAX_ID}")
        if dash and hi <= lo:
            raise IdsetError(text, offset, f"range '{token}' does not ascend (high id must "
                             "be greater than low id)")
        if lo <= previous_hi:
            raise IdsetError(text, offset, f"'{token}' is out of order or repeats an id")
        previous_hi = hi
        offset += len(token) + 1


def _strip_brackets(text: str) -> tuple[str, int]:
    """The idset body without its optional single pair of brackets, and where it starts."""
    if text.startswith("[") and text.endswith("]") and len(text) >= 2:
        return text[1:-1], 1
    return text, 0


def _explain_idset(text: str, body: str, start: int) -> None:
    """Find the first offending character of an idset the fast pattern rejected."""
    expect_id = True
    after_dash = False
    for match in _IDSET_TOKEN.finditer(body):
        token = match.group()
        position = start + match.start()
        if token.isdigit() and token.isascii():
            if not expect_id:
                raise IdsetError(text, position, "expected ',' or '-' before this number")
            if len(token) > 1 and token[0] == "0":
                raise IdsetError(text, position, f"leading zero in '{token}'")
            expect_id = False
            continue
        if token in "[]":
            raise IdsetError(text, position, "mismatched or nested brackets")
        if token.isspace():
            raise IdsetError(text, position, "whitespace is not allowed")
        if token == ",":
            if expect_id:
                raise IdsetError(text, position, "empty element")
            expect_id, after_dash = True, False
            continue
        if token == "-":
            if expect_id or after_dash:
                raise IdsetError(text, position, "'-' must join two ids")
            expect_id, after_dash = True, True
            continue
        raise IdsetError(text, position, f"character {token!r} is not allowed in an idset")
    raise IdsetError(text, start + len(body), "ends where an id is expected")


# --------------------------------------------------------------------------- hostlist


class HostRange(NamedTuple):
    """Hosts ``lo..hi`` (inclusive), each number zero-padded to ``width`` digits. A named
    tuple rather than a dataclass: a sparse list builds one per host."""

    lo: int
    hi: int
    width: int

    @property
    def size(self) -> int:
        """How many hosts (``count`` is the tuple method)."""
        return self.hi - self.lo + 1

    def label(self, value: int) -> str:
        return str(value).zfill(self.width)

    def encode(self) -> str:
        if self.lo == self.hi:
            return self.label(self.lo)
        return f"{self.label(self.lo)}-{self.label(self.hi)}"


@dataclass(frozen=True)
class HostGroup:
    """``prefix[ranges]suffix``; with no ranges it is the single literal host ``prefix``."""

    prefix: str
    ranges: tuple[HostRange, ...] = ()
    suffix: str = ""

    @property
    def count(self) -> int:
        return sum(r.size for r in self.ranges) if self.ranges else 1

    def hosts(self) -> Iterator[str]:
        if not self.ranges:
            yield self.prefix
            return
        prefix = self.prefix.replace("{", "{{").replace("}", "}}")
        suffix = self.suffix.replace("{", "{{").replace("}", "}}")
        for host_range in self.ranges:
            # one C-level format per host: ``label`` is zfill, i.e. zero padding to width
            spelled = f"{prefix}{{:0{host_range.width}d}}{suffix}".format
            yield from map(spelled, range(host_range.lo, host_range.hi + 1))

    def host(self, position: int) -> str:
        if not self.ranges:
            return self.prefix
        for host_range in self.ranges:
            if position < host_range.size:
                return f"{self.prefix}{host_range.label(host_range.lo + position)}{self.suffix}"
            position -= host_range.size
        raise IndexError(position)

    def encode(self) -> str:
        """``prefix[ranges]suffix``; more than ``MAX_BRACKET_ELEMENTS`` ranges become
        several groups with the same prefix and suffix (flux-core reads no more in one)."""
        ranges = self.ranges
        if not ranges:
            return self.prefix
        if len(ranges) == 1 and ranges[0].size == 1:
            return f"{self.prefix}{ranges[0].encode()}{self.suffix}"
        chunks = (ranges[start:start + MAX_BRACKET_ELEMENTS]
                  for start in range(0, len(ranges), MAX_BRACKET_ELEMENTS))
        return ",".join(f"{self.prefix}[{','.join(map(HostRange.encode, chunk))}]{self.suffix}"
                        for chunk in chunks)


_MAX_HOST_DIGITS = 64  # zero padding may be wide; values are checked after parsing
_AFFIX_CHARS = r"\x21-\x2b\x2d-\x5a\x5c\x5e-\x7e"
_HOST_EXPR = re.compile(
    rf"(?P<prefix>[{_AFFIX_CHARS}]*)(?:\[(?P<ids>[^\]]*)\](?P<suffix>[{_AFFIX_CHARS}]*))?"
)
_HOST_RANGE = re.compile(r"(?P<lo>[0-9]+)(?:-(?P<hi>[0-9]+))?")
_TRAILING_NUMBER = re.compile(r"^(?P<prefix>.*?)(?P<digits>[0-9]+)(?P<suffix>[^0-9]*)$", re.DOTALL)
_AFFIX_NON_DIGITS = r"\x21-\x2b\x2d-\x2f\x3a-\x5a\x5c\x5e-\x7e"
_NUMBERED_HOST = re.compile(
    rf"([{_AFFIX_CHARS}]*?)([0-9]+)([{_AFFIX_NON_DIGITS}]*+)")
"""A host name a hostlist can spell with a number in it: prefix, last digit run, suffix."""
_BRACKET_BODY = re.compile(r"[0-9]++(?:-[0-9]++)?+(?:,[0-9]++(?:-[0-9]++)?+)*+")


class Hostlist(Sequence[str]):
    """An ordered list of host names (duplicates kept), held as bracket groups."""

    __slots__ = ("_groups", "_offsets")

    def __init__(self, groups: Iterable[HostGroup] = ()) -> None:
        self._groups: tuple[HostGroup, ...] = _merge_groups(groups)
        self._offsets: list[int] | None = None

    @classmethod
    def decode(cls, text: str) -> Hostlist:
        """Parse an RFC 29 hostlist; ``HostlistError`` names the position and the reason."""
        if text == "":
            return cls()
        groups: list[HostGroup] = []
        offset = 0
        for expression in _split_expressions(text):
            groups.append(_decode_expression(text, expression, offset))
            offset += len(expression) + 1
        return cls(groups)

    @classmethod
    def from_hosts(cls, hosts: Iterable[str]) -> Hostlist:
        """Compress host names: runs of numbered hosts sharing prefix and suffix become
        one bracket group, in the given order (one regex match per name, no sorting)."""
        builder = _GroupBuilder()
        for host in hosts:
            match = _NUMBERED_HOST.fullmatch(host)
            if match is None:
                _check_host_name(host)  # raises unless it is a valid name without digits
                builder.literal(host)
                continue
            prefix, digits, suffix = match.groups()
            if len(digits) > _MAX_HOST_DIGITS or int(digits) > MAX_HOST_INDEX:
                builder.literal(host)
            else:
                value = int(digits)
                builder.add(prefix, suffix, value, value, len(digits))
        return cls._from_merged(builder.finish())

    @classmethod
    def _from_merged(cls, groups: tuple[HostGroup, ...]) -> Hostlist:
        hostlist = cls()
        hostlist._groups = groups
        return hostlist

    @property
    def groups(self) -> tuple[HostGroup, ...]:
        return self._groups

    def __len__(self) -> int:
        return self._cumulative()[-1]

    def __bool__(self) -> bool:
        return bool(self._groups)

    def __iter__(self) -> Iterator[str]:
        for group in self._groups:
            yield from group.hosts()

    @overload
    def __getitem__(self, position: int) -> str: ...

    @overload
    def __getitem__(self, position: slice) -> list[str]: ...

    def __getitem__(self, position: int | slice) -> str | list[str]:
        if isinstance(position, slice):
            return [self[index] for index in range(*position.indices(len(self)))]
        offsets = self._cumulative()
        if position < 0:
            position += offsets[-1]
        if position < 0 or position >= offsets[-1]:
            raise IndexError(position)
        where = bisect_right(offsets, position) - 1
        return self._groups[where].host(position - offsets[where])

    def _cumulative(self) -> list[int]:
        if self._offsets is None:
            self._offsets = list(accumulate((g.count for g in self._groups), initial=0))
        return self._offsets

    def encode(self) -> str:
        return ",".join(group.encode() for group in self._groups)

    def __add__(self, other: Hostlist) -> Hostlist:
        return Hostlist((*self._groups, *other._groups))

    def __str__(self) -> str:
        return self.encode()

    def __repr__(self) -> str:
        text = self.encode()
        if len(text) > 60:
            text = text[:57] + "..."
        return f"Hostlist({text!r})"

    def __eq__(self, other: object) -> bool:
        """Equal when they list the same hosts in the same order."""
        if not isinstance(other, Hostlist):
            return NotImplemented
        if self._groups == other._groups:
            return True
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equality is by host sequence


_EXPRESSION = re.compile(r"[^,\[\]]*+(?:\[[^\[\]]*+\][^,\[\]]*+)*+")
"""One expression: text with balanced, unnested bracket groups and no comma outside them."""


def _split_expressions(text: str) -> Iterator[str] | list[str]:
    """Split at commas outside brackets: a regex per expression when brackets are balanced
    and unnested, else a character walk (malformed input; the decoder then explains it)."""
    if "[" not in text and "]" not in text:
        return text.split(",")
    expressions: list[str] = []
    position, length = 0, len(text)
    while True:
        match = _EXPRESSION.match(text, position)
        assert match is not None  # the pattern matches the empty string
        expressions.append(match.group())
        position = match.end()
        if position == length:
            return expressions
        if text[position] != ",":
            return _walk_expressions(text)
        position += 1


def _walk_expressions(text: str) -> Iterator[str]:
    return (expression for expression, _ in split_expressions(text))


def split_expressions(text: str) -> Iterator[tuple[str, int]]:
    """The comma-separated expressions of a hostlist (commas inside brackets do not
    separate), each with its offset in ``text``."""
    depth = 0
    start = 0
    for position, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            yield text[start:position], start
            start = position + 1
    yield text[start:], start


def _decode_expression(text: str, expression: str, offset: int) -> HostGroup:
    if expression == "":
        raise HostlistError(text, offset, "empty host name (doubled, leading or trailing comma)")
    match = _HOST_EXPR.fullmatch(expression)
    if match is None:
        _explain_expression(text, expression, offset)
    assert match is not None
    prefix = match.group("prefix")
    ids = match.group("ids")
    if ids is None:
        return _split_host(prefix)
    ids_offset = offset + match.start("ids")
    ranges = _decode_host_ranges(text, ids, ids_offset)
    suffix = match.group("suffix") or ""
    if suffix and any(host_range.hi == MAX_HOST_INDEX for host_range in ranges):
        raise HostlistError(text, ids_offset, f"a bracket reaching {MAX_HOST_INDEX} before a "
                            "suffix: flux-core never finishes expanding it")
    return HostGroup(prefix, ranges, suffix)


def _explain_expression(text: str, expression: str, offset: int) -> None:
    opened = -1
    groups = 0
    for index, char in enumerate(expression):
        position = offset + index
        if char.isspace():
            raise HostlistError(text, position, "whitespace is not allowed")
        if char == "[":
            if opened >= 0:
                raise HostlistError(text, position, "nested '['")
            if groups:
                raise HostlistError(text, position, "more than one bracket group in one "
                                    "expression (RFC 29 allows one)")
            opened = index
        elif char == "]":
            if opened < 0:
                raise HostlistError(text, position, "']' without '['")
            opened = -1
            groups += 1
        elif not (0x21 <= ord(char) <= 0x7E):
            raise HostlistError(text, position, f"character {char!r} is not printable ASCII")
    if opened >= 0:
        raise HostlistError(text, offset + opened, "'[' is never closed")
    raise HostlistError(text, offset, "malformed hostlist expression")


def _decode_host_ranges(text: str, ids: str, offset: int) -> tuple[HostRange, ...]:
    if ids == "":
        raise HostlistError(text, offset, "empty brackets")
    if ids.count(",") >= MAX_BRACKET_ELEMENTS:
        cut = 0
        for _ in range(MAX_BRACKET_ELEMENTS):
            cut = ids.index(",", cut) + 1
        raise HostlistError(text, offset + cut, f"more than {MAX_BRACKET_ELEMENTS:,} elements "
                            "in one bracket (flux-core's limit); split it into several "
                            "groups")
    if _BRACKET_BODY.fullmatch(ids) is not None:
        fast = _valid_host_ranges(ids.split(","))
        if fast is not None:
            return fast
    ranges = []
    for token in ids.split(","):
        match = _HOST_RANGE.fullmatch(token)
        if match is None:
            bad = next((i for i, c in enumerate(token) if not (c.isascii() and c.isdigit())),
                       0)
            if token == "":
                raise HostlistError(text, offset, "empty element in brackets")
            char = token[bad]
            reason = ("'-' must join two numbers" if char == "-" else
                      "whitespace is not allowed" if char.isspace() else
                      f"character {char!r} is not allowed in a bracket")
            raise HostlistError(text, offset + bad, reason)
        lo_text, hi_text = match.group("lo"), match.group("hi")
        if max(len(lo_text), len(hi_text or "")) > _MAX_HOST_DIGITS:
            raise HostlistError(text, offset, f"host number exceeds {MAX_HOST_INDEX}")
        lo = int(lo_text)
        hi = int(hi_text) if hi_text is not None else lo
        if hi > MAX_HOST_INDEX:
            raise HostlistError(text, offset, f"host number exceeds {MAX_HOST_INDEX}")
        if hi < lo:
            raise HostlistError(text, offset, f"range '{token}' descends")
        if hi - lo + 1 > MAX_HOSTS_PER_RANGE:
            raise HostlistError(text, offset, f"range '{token}' has more than "
                                f"{MAX_HOSTS_PER_RANGE:,} hosts")
        ranges.append(HostRange(lo, hi, len(lo_text)))
        offset += len(token) + 1
    return tuple(ranges)


def _valid_host_ranges(tokens: list[str]) -> tuple[HostRange, ...] | None:
    """Ranges of grammatical bracket tokens, checked in C-level passes; ``None`` when a
    limit fails (the caller walks the tokens to say where)."""
    if max(map(len, tokens)) > 2 * _MAX_HOST_DIGITS + 1:
        return None
    lo_texts = list(map(itemgetter(0), map(methodcaller("partition", "-"), tokens)))
    los = list(map(int, lo_texts))
    his = list(map(int, map(itemgetter(2), map(methodcaller("rpartition", "-"), tokens))))
    if max(his) > MAX_HOST_INDEX or not all(map(le, los, his)):
        return None
    if max(map(sub, his, los)) >= MAX_HOSTS_PER_RANGE:
        return None
    return tuple(map(HostRange, los, his, map(len, lo_texts)))


def is_host_name(host: str) -> bool:
    """Whether a hostlist can spell ``host``: printable ASCII without ``,[]``, not empty."""
    try:
        _check_host_name(host)
    except HostlistError:
        return False
    return True


def _check_host_name(host: str) -> None:
    for index, char in enumerate(host):
        if not (0x21 <= ord(char) <= 0x7E) or char in ",[]":
            raise HostlistError(host, index, f"character {char!r} cannot appear in a host name")
    if host == "":
        raise HostlistError(host, 0, "empty host name")


def _split_host(host: str) -> HostGroup:
    """``node12`` → prefix ``node``, number 12 of width 2; names without digits stay literal.
    The last digit run is the number, so ``node1.example.com`` groups by its first label."""
    match = _TRAILING_NUMBER.match(host)
    if match is None:
        return HostGroup(host)
    digits = match.group("digits")
    if len(digits) > _MAX_HOST_DIGITS or int(digits) > MAX_HOST_INDEX:
        return HostGroup(host)
    value = int(digits)
    if value > MAX_HOST_INDEX:
        return HostGroup(host)
    return HostGroup(match.group("prefix"), (HostRange(value, value, len(digits)),),
                     match.group("suffix"))


def _merge_groups(groups: Iterable[HostGroup]) -> tuple[HostGroup, ...]:
    """Join neighbouring groups with the same prefix and suffix, and neighbouring ranges
    that continue each other, keeping order and duplicates. Linear in the range count."""
    builder = _GroupBuilder()
    for group in groups:
        if not group.ranges:
            builder.literal(group.prefix)
            continue
        if _has_no_adjacent_ranges(group.ranges):
            # a decoded sparse bracket stays as it is, or extends the open group whole (a
            # long list is written as several brackets of the same prefix)
            if not builder.continues(group):
                builder.take(group)
                continue
            if not (group.suffix and any(r.hi == MAX_HOST_INDEX for r in group.ranges)):
                builder.extend(group)
                continue
        for lo, hi, width in group.ranges:
            builder.add(group.prefix, group.suffix, lo, hi, width)
    return builder.finish()


def _has_no_adjacent_ranges(ranges: tuple[HostRange, ...]) -> bool:
    """No range starts right after the one before it, so none could join (C-level passes)."""
    los = map(itemgetter(0), islice(ranges, 1, None))
    his_plus_one = map(add, map(itemgetter(1), ranges), repeat(1))
    return not any(map(eq, los, his_plus_one))


class _GroupBuilder:
    """Accumulates ranges in order into bracket groups, extending the open run while the
    next range continues it and every host keeps its spelling (and the run stays within
    the per-range limit). State is plain ints so the per-host cost stays small."""

    def __init__(self) -> None:
        self.groups: list[HostGroup] = []
        self.key: tuple[str, str] | None = None
        self.ranges: list[HostRange] = []
        self.lo = self.hi = self.width = -1

    def literal(self, host: str) -> None:
        self._close_group()
        self.groups.append(HostGroup(host))

    def continues(self, group: HostGroup) -> bool:
        """Whether ``group`` has the open group's prefix and suffix (it may join it)."""
        return self.key is not None and self.key == (group.prefix, group.suffix)

    def take(self, group: HostGroup) -> None:
        """Open ``group`` whole; its ranges must not join each other."""
        self._close_group()
        self.key = (group.prefix, group.suffix)
        self.ranges = list(group.ranges[:-1])
        self.lo, self.hi, self.width = group.ranges[-1]

    def extend(self, group: HostGroup) -> None:
        """Continue the open group with ``group``, whose ranges do not join each other: only
        its first range may join the open run, so the rest are taken as they are."""
        first, *rest = group.ranges
        self.add(group.prefix, group.suffix, *first)
        if rest:
            self.ranges.append(HostRange(self.lo, self.hi, self.width))
            self.ranges.extend(rest[:-1])
            self.lo, self.hi, self.width = rest[-1]

    def add(self, prefix: str, suffix: str, lo: int, hi: int, width: int) -> None:
        if suffix and hi == MAX_HOST_INDEX:
            # In a bracket before a suffix, flux-core never finishes expanding this number.
            for value in range(lo, hi + 1):
                self.literal(f"{prefix}{str(value).zfill(width)}{suffix}")
            return
        if self.key is not None and self.key[0] == prefix and self.key[1] == suffix:
            if lo == self.hi + 1 and hi - self.lo < MAX_HOSTS_PER_RANGE and (
                    width == self.width or len(str(lo)) >= max(self.width, width)):
                self.hi = hi
                return
            self.ranges.append(HostRange(self.lo, self.hi, self.width))
        else:
            self._close_group()
            self.key = (prefix, suffix)
        self.lo, self.hi, self.width = lo, hi, width

    def _close_group(self) -> None:
        if self.key is None:
            return
        self.ranges.append(HostRange(self.lo, self.hi, self.width))
        self.groups.append(HostGroup(self.key[0], tuple(self.ranges), self.key[1]))
        self.key, self.ranges = None, []

    def finish(self) -> tuple[HostGroup, ...]:
        self._close_group()
        return tuple(self.groups)
