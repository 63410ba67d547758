"""The one place JSON is decoded: strict, bounded, and with line/column for every problem.

Python's ``json`` keeps the last of duplicate keys, accepts ``NaN``/``Infinity``, turns
``1e400`` into ``inf`` and raises ``RecursionError`` on deep nesting. ``load_json`` turns
each of those into a diagnostic instead. Positions of JSON Pointers are recovered lazily
(``JsonLocator``) because only failing documents need them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter, ne
from typing import TYPE_CHECKING, Any

from dcx.core.codes import Code
from dcx.core.diagnostics import Diagnostic, error
from dcx.core.limits import LIMITS

if TYPE_CHECKING:  # the model loads with the readers, not for sniffing
    from dcx.core.located import Place

CODES = (
    Code("json.bom", "error", "The JSON file starts with a UTF-8 byte order mark (RFC 8259 "
         "forbids it)."),
    Code("json.encoding", "error", "The JSON file is not UTF-8: UTF-16/UTF-32, or an invalid "
         "UTF-8 byte (located)."),
    Code("json.syntax", "error", "The text is not JSON (or is empty): what was expected where "
         "it breaks, and what is still open when the file ends there (cut short)."),
    Code("json.trailing-data", "error", "Something other than white space follows the JSON "
         "document."),
    Code("json.duplicate-key", "error", "An object has the same key twice; JSON readers "
         "disagree on which value wins."),
    Code("json.number", "error", "A number is not finite (`NaN`, `Infinity`, `1e400`) or an "
         "integer has more than 4,300 digits."),
    Code("json.depth", "error", "The document nests deeper than the JSON depth budget."),
    Code("json.surrogate", "error", "A `\\u` escape is a lone surrogate, which neither UTF-8 "
         "nor XML can carry."),
)
"""What ``load_json`` refuses. A format's own root-type code (``load_json_object``'s
``code``) is declared by the format."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _BadNumber(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _duplicate_key(pairs: list[tuple[str, Any]], result: dict[str, Any]) -> _DuplicateKey:
    # ``result`` lists each key once, in order of first appearance, so the keys of
    # ``pairs`` agree with it position by position up to the first repeat: C-level
    # comparison finds that repeat without hashing the keys again.
    keys = list(map(itemgetter(0), pairs))
    firsts: list[str | None] = list(result)
    if len(firsts) < len(keys):
        firsts.append(None)  # the repeat may come after the last new key
    return _DuplicateKey(next(compress(keys, map(ne, keys, firsts))))


def _pairs_to_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _duplicate_key(pairs, result)
    return result


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _BadNumber(text)
    return value


def _reject_constant(text: str) -> Any:
    raise _BadNumber(text)


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs_to_dict, parse_float=_finite_float, parse_constant=_reject_constant
)
_SKIPPER = json.JSONDecoder()
"""Decodes keys, and values only to find where they end (``JsonLocator.find``)."""


def _marking_decoder(keys: tuple[str, ...], marked: list[dict[str, Any]]) -> json.JSONDecoder:
    """A strict decoder that also lists every object having one of ``keys``, in the order
    the decoder finishes them: children before their parents, siblings in document order.
    A format that must find such objects (``$base``) then needs no walk of the tree."""

    # unrolled for the first two keys: this runs once per object of the document
    first, second, rest = keys[0], keys[1 % len(keys)], keys[2:]

    def pairs_to_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            raise _duplicate_key(pairs, result)
        if first in result or second in result or (
                rest and any(key in result for key in rest)):
            marked.append(result)
        return result

    return json.JSONDecoder(
        object_pairs_hook=pairs_to_dict, parse_float=_finite_float,
        parse_constant=_reject_constant)


@dataclass(frozen=True)
class JsonText:
    """A decoded JSON document with its text, kept for locating pointers later."""

    value: Any
    text: str
    locator: JsonLocator
    marked: list[dict[str, Any]] = field(default_factory=list)
    """Objects having one of the keys ``load_json`` was asked to mark, children first."""


def decode_utf8(data: bytes) -> tuple[str | None, Diagnostic | None]:
    """Strict UTF-8 without BOM; errors carry the line and column of the bad byte."""
    if data.startswith(b"\xef\xbb\xbf"):
        return None, error(
            "file starts with a UTF-8 byte order mark, which JSON forbids",
            "json.bom",
            line=1,
            column=1,
            hint="save the file as UTF-8 without BOM",
        )
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or data[:4] in (b"\x00\x00\xfe\xff",):
        return None, error("file is UTF-16 or UTF-32; dcx reads JSON as UTF-8", "json.encoding",
                           line=1, column=1)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, error(f"invalid UTF-8 byte 0x{data[exc.start]:02x}", "json.encoding",
                           line=line, column=column)


def load_json(data: bytes, mark: tuple[str, ...] = ()) -> tuple[JsonText | None,
                                                              list[Diagnostic]]:
    """Decode ``data`` or explain exactly why not (one error diagnostic). Objects having
    a key in ``mark`` are listed in ``JsonText.marked``."""
    if len(data) > LIMITS.max_input_bytes:
        return None, [error(f"file is {len(data):,} bytes; the limit is "
                            f"{LIMITS.max_input_bytes:,}", "input.too-large")]
    text, problem = decode_utf8(data)
    if text is None:
        assert problem is not None
        return None, [problem]
    locator = JsonLocator(text)
    marked: list[dict[str, Any]] = []
    decoder = _marking_decoder(mark, marked) if mark else _DECODER
    try:
        value, end = decoder.raw_decode(text, _skip_ws(text, 0))
    except json.JSONDecodeError as exc:
        message = syntax_message(exc, text) if text.strip() else "file is empty"
        return None, [error(message, "json.syntax", line=exc.lineno, column=exc.colno)]
    except _DuplicateKey as exc:
        return None, [locator.duplicate_key_diagnostic(exc.key)]
    except _BadNumber as exc:
        return None, [locator.token_diagnostic(
            exc.text, f"number {exc.text} is not a finite JSON number", "json.number")]
    except RecursionError:
        return None, [locator.depth_diagnostic()]
    except ValueError as exc:  # int() digit limit (CVE-2020-10735 guard) and similar
        return None, [locator.long_integer_diagnostic(str(exc))]
    end = _skip_ws(text, end)
    if end != len(text):
        line, column = locator.line_col(end)
        return None, [error("unexpected data after the JSON document", "json.trailing-data",
                            line=line, column=column)]
    if _SURROGATE_ESCAPE.search(text):
        surrogate = locator.lone_surrogate_diagnostic()
        if surrogate is not None:
            return None, [surrogate]
    return JsonText(value, text, locator, marked), []


_SYNTAX = {
    "Expecting value": "expected a JSON value here (an object, array, string, number, true, "
    "false or null; JSON has no comments)",
    "Expecting property name enclosed in double quotes": "expected a property name in "
    "double quotes (JSON allows no comma before '}')",
    "Expecting ':' delimiter": "expected ':' after the property name",
    "Expecting ',' delimiter": "expected ',' or a closing bracket after the value before here",
    "Unterminated string starting at": "a string starts here and is never closed",
    "Invalid control character at": "a control character (a raw tab or line break) inside a "
    "string; JSON needs it escaped (\\t, \\n)",
    "Invalid \\escape": "an invalid escape in a string (JSON has \\\" \\\\ \\/ \\b \\f "
    "\\n \\r \\t and \\uXXXX)",
    "Invalid \\uXXXX escape": "an invalid \\uXXXX escape (it needs four hexadecimal digits)",
}
"""The decoder's terse messages, said in full (its own words where it has none here)."""


def syntax_message(exc: json.JSONDecodeError, text: str) -> str:
    """Why ``text`` is not JSON, in full; when the text ends where the error is (a file cut
    short), also what is still open there."""
    message = _SYNTAX.get(exc.msg, exc.msg)
    if text[exc.pos:].strip() and not exc.msg.startswith("Unterminated string"):
        return message
    unclosed = _unclosed(text[:exc.pos])
    if not unclosed:
        return f"{message}; the file ends here"
    return f"{message}; the file ends inside {unclosed}: it looks cut short"


def _unclosed(text: str) -> str:
    """``2 objects and 1 array``: the brackets ``text`` opens and does not close."""
    opened: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped = not escaped and char == "\\"
            in_string = escaped or char != '"'
        elif char == '"':
            in_string = True
        elif char in "{[":
            opened.append(char)
        elif char in "}]" and opened:
            opened.pop()
    counts = [(opened.count("{"), "object"), (opened.count("["), "array")]
    return " and ".join(f"{count} {noun}{'s' if count != 1 else ''}"
                        for count, noun in counts if count)


def load_json_object(data: bytes, what: str, code: str, mark: tuple[str, ...] = ()
                     ) -> tuple[JsonText | None, list[Diagnostic]]:
    """``load_json`` for formats whose document is an object: a root of another JSON type
    is one located error with the format's ``code`` (``what`` names the document)."""
    decoded, problems = load_json(data, mark)
    if decoded is None or isinstance(decoded.value, dict):
        return decoded, problems
    return None, [error(f"{what} is a JSON object, not a JSON {json_type(decoded.value)}",
                        code, line=1, column=1)]


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type."""
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string",
            type(None): "null"}.get(type(value), "number")


def skim(text: str, pos: int) -> tuple[Any, int]:
    """The value that starts at ``pos`` and where it ends, decoded without ``load_json``'s
    checks (repeated keys, non-finite numbers): for a fast path that only finds its way
    through text whose accepted parts the checked path reads again. ``ValueError`` when
    there is no JSON value there."""
    value, end = _SKIPPER.raw_decode(text, pos)
    return value, end


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\n\r":
        pos += 1
    return pos


def escape_pointer_token(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer_from_path(path: Iterable[str | int]) -> str:
    return "".join("/" + escape_pointer_token(part) for part in path)


_TOKEN = re.compile(
    r'[ \t\n\r]*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<punct>[{}\[\],:])'
    r'|(?P<atom>[^ \t\n\r{}\[\],:"]+))',
    re.DOTALL,
)


_STRUCTURE = re.compile(r'(?P<key>"(?:[^"\\]|\\.)*")\s*:|"(?:[^"\\]|\\.)*"|[{}\[\]]', re.DOTALL)
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NESTED = re.compile(r"\{[^{}\[\]]*\}|\[[^{}\[\]]*\]")


def _top_level_commas(segment: str) -> int:
    """Commas outside strings and outside nested containers: the array index reached."""
    stripped = _STRINGS.sub("", segment)
    while True:
        reduced = _NESTED.sub("", stripped)
        if reduced == stripped:
            return reduced.count(",")
        stripped = reduced


def _skip_back(text: str, end: int, characters: str) -> int:
    """The start of the run of ``characters`` that ends at ``end``."""
    while end > 0 and text[end - 1] in characters:
        end -= 1
    return end


def _skip_ws_back(text: str, end: int) -> int:
    return _skip_back(text, end, " \t\n\r")


def _past_value_and_comma(text: str, pos: int) -> int:
    """Where the next member or item starts after the value at ``pos`` (the C decoder skips
    it); ``ValueError`` when no comma follows, as when the value is not JSON."""
    pos = _skip_ws(text, _SKIPPER.raw_decode(text, pos)[1])
    if text[pos] != ",":
        raise ValueError("no further member or item")
    return _skip_ws(text, pos + 1)


class JsonLocator:
    """Finds where JSON Pointers point in the text, walking tokens only when asked."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._cache: dict[str, tuple[int | None, int | None]] = {}

    def line_col(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        column = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return line, column

    # -- walking --------------------------------------------------------------------

    def _walk(self, stop: Any = None) -> Iterable[tuple[str, str, int, int]]:
        """Yield ``(event, pointer, offset, depth)`` for every value start ("value") and
        every object key ("key"). Iterative, so depth costs no Python stack."""
        text = self.text
        pos = 0
        stack: list[list[Any]] = []  # [kind, pointer, index_or_key, expecting_key]
        pointer = ""
        while True:
            match = _TOKEN.match(text, pos)
            if match is None:
                return
            start = match.start(match.lastgroup) if match.lastgroup else pos
            pos = match.end()
            kind = match.lastgroup
            token = match.group(kind) if kind else ""
            if not token:
                return
            top = stack[-1] if stack else None
            if top is not None and top[0] == "object" and top[3]:
                if kind == "string":
                    try:
                        key = json.loads(token)
                    except ValueError:  # a bad escape: the text is not JSON past here
                        return
                    top[2] = key
                    yield "key", top[1] + "/" + escape_pointer_token(key), start, len(stack)
                    top[3] = False
                    continue
                if token == "}":
                    stack.pop()
                    continue
                return
            if token in (",", ":"):
                if token == "," and top is not None:
                    if top[0] == "object":
                        top[3] = True
                    else:
                        top[2] += 1
                continue
            if token in ("}", "]"):
                if not stack:  # unbalanced: the walk is only asked about text before this
                    return
                stack.pop()
                continue
            if top is None:
                pointer = ""
            elif top[0] == "object":
                pointer = top[1] + "/" + escape_pointer_token(top[2])
            else:
                pointer = top[1] + "/" + str(top[2])
            yield "value", pointer, start, len(stack)
            if token == "{":
                stack.append(["object", pointer, None, True])
            elif token == "[":
                stack.append(["array", pointer, 0, False])

    def locate(self, pointer: str, key: bool = False) -> tuple[int | None, int | None]:
        """Line and column of the value at ``pointer`` (of its key when ``key``), or of its
        nearest ancestor present in the text (values inherited through ``$base`` have no
        text of their own)."""
        return self._positions([(pointer, key)])[0]

    def find(self, pointer: str) -> tuple[int | None, int | None]:
        """Line and column of the value at ``pointer`` itself, ``(None, None)`` when the
        text has no value there (``locate`` falls back to an ancestor instead). The value
        is reached by decoding past what comes before it (``_descend``), which only finds;
        anything else is answered by the token walk."""
        tag = "v" + pointer
        found = self._cache.get(tag)
        if found is not None:
            return found
        offset = self._descend(pointer) if pointer else None
        if offset is not None:
            found = self._cache[tag] = self.line_col(offset)
            return found
        return self.walked_find(pointer)

    def walked_find(self, pointer: str) -> tuple[int | None, int | None]:
        """``find`` by the token walk alone (the exact path)."""
        self._positions([(pointer, False)])
        return self._cache.get("v" + pointer, (None, None))

    def _descend(self, pointer: str) -> int | None:
        """The offset of the value at ``pointer``, found by following the pointer through
        the text: the C decoder skips each member or item before the one wanted, so a
        value deep in a large file costs a decode of what precedes it, not a Python token
        walk. ``None`` when it cannot tell (no such value, or text that is not JSON there)."""
        text = self.text
        try:
            pos = _skip_ws(text, 0)
            for token in pointer.split("/")[1:]:
                opening = text[pos]
                pos = _skip_ws(text, pos + 1)
                if opening == "{":
                    while text[pos] == '"':
                        key, pos = _SKIPPER.raw_decode(text, pos)
                        pos = _skip_ws(text, pos)
                        if text[pos] != ":":
                            return None
                        pos = _skip_ws(text, pos + 1)
                        if escape_pointer_token(key) == token:
                            break
                        pos = _past_value_and_comma(text, pos)
                    else:
                        return None
                elif opening == "[" and token.isascii() and token.isdigit() and (
                        token == "0" or token[0] != "0") and text[pos] != "]":
                    for _ in range(int(token)):
                        pos = _past_value_and_comma(text, pos)
                else:
                    return None
        except (ValueError, IndexError, RecursionError):
            return None
        return pos if pos < len(text) else None

    def _positions(self, wanted: list[tuple[str, bool]]) -> list[tuple[int | None, int | None]]:
        """One walk over the text finds every wanted pointer and its ancestors."""
        missing: set[str] = set()
        for pointer, key in wanted:
            candidates = [("k" if key else "v") + pointer]
            parts = pointer.split("/")
            candidates += ["v" + "/".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]
            missing.update(c for c in candidates if c not in self._cache)
        if missing:
            for event, where, offset, _ in self._walk():
                tag = ("k" if event == "key" else "v") + where
                if tag in missing:
                    self._cache[tag] = self.line_col(offset)
                    missing.discard(tag)
                    if not missing:
                        break
            for tag in missing:
                self._cache[tag] = (None, None)
        self._cache.setdefault("v", (1, 1))
        results = []
        for pointer, key in wanted:
            parts = pointer.split("/")
            candidates = [("k" if key else "v") + pointer]
            candidates += ["v" + "/".join(parts[:n]) for n in range(len(parts) - 1, -1, -1)]
            found: tuple[int | None, int | None] = (None, None)
            for candidate in candidates:
                position = self._cache.get(candidate, (None, None))
                if position[0] is not None:
                    found = position
                    break
            results.append(found)
        return results

    def place(self, diagnostics: list[Diagnostic],
              key_codes: frozenset[str] = frozenset()) -> list[Diagnostic]:
        """Fill in line and column for many diagnostics with a single walk. Diagnostics whose
        code is in ``key_codes`` point at the member's key rather than its value."""
        from dataclasses import replace

        todo = [d for d in diagnostics if d.line is None]
        if not todo:
            return diagnostics
        positions = dict(zip(
            [id(d) for d in todo],
            self._positions([(d.pointer, d.code in key_codes) for d in todo]), strict=True))
        return [replace(d, line=positions[id(d)][0], column=positions[id(d)][1])
                if id(d) in positions else d for d in diagnostics]

    # -- specific diagnostics ---------------------------------------------------------

    def duplicate_key_diagnostic(self, key: str) -> Diagnostic:
        """Locate the second occurrence of a key within one object.

        One regex pass: runs of plain strings and scalars between brackets are one match
        each, so Python touches only brackets, occurrences of the key and strings with
        escapes (which might spell the key). The pointer is rebuilt only for the path to
        the duplicate, reading each ancestor's key or index back from the text."""
        text = self.text
        spellings = {json.dumps(key), json.dumps(key, ensure_ascii=False)}
        hit = "(?:" + "|".join(re.escape(s) for s in spellings) + r")\s*:"
        pattern = re.compile(
            f"(?P<hit>{hit})"
            f'|(?:(?!{hit})"[^"\\\\]*"|[^"{{}}\\[\\]]+)++'
            r'|(?P<escaped>"(?:[^"\\]|\\.)*")(?P<colon>\s*:)?'
            r"|(?P<open>[{\[])|(?P<close>[}\]])", re.DOTALL)
        # Per open container: [is_object, start offset, key seen here]
        stack: list[list[Any]] = []
        for match in pattern.finditer(text):
            kind = match.lastgroup
            if kind == "open":
                stack.append([match.group() == "{", match.start(), False])
            elif kind == "close":
                if stack:
                    stack.pop()
            elif stack and stack[-1][0] and (kind == "hit" or (
                    kind == "colon" and json.loads(match.group("escaped")) == key)):
                if stack[-1][2]:
                    return self._duplicate_at(match.start(), key, stack)
                stack[-1][2] = True
        return error(f"duplicate key {key!r}", "json.duplicate-key")

    def _duplicate_at(self, offset: int, name: str, stack: list[list[Any]]) -> Diagnostic:
        tokens = []
        for depth, (is_object, start, _) in enumerate(stack[:-1]):
            child_start = stack[depth + 1][1]
            tokens.append(self._key_before(child_start) if is_object else str(
                _top_level_commas(self.text[start + 1:child_start])))
        pointer = pointer_from_path([*tokens, name])
        line, column = self.line_col(offset)
        return error(f"duplicate key {name!r}: JSON readers disagree on which one wins",
                     "json.duplicate-key", line=line, column=column, pointer=pointer)

    def _key_before(self, value_start: int) -> str:
        """The key of the member whose value starts at ``value_start``: the string just
        before its colon. Read backwards, the first quote not escaped (an even run of
        backslashes before it) opens that string, since its text has no bare quote."""
        text = self.text
        colon = _skip_ws_back(text, value_start) - 1
        closing = _skip_ws_back(text, colon) - 1
        opening = text.rfind('"', 0, closing)
        while (opening - _skip_back(text, opening, "\\")) % 2:
            opening = text.rfind('"', 0, opening)
        decoded: str = json.loads(text[opening:closing + 1])
        return decoded

    def token_diagnostic(self, token: str, message: str, code: str) -> Diagnostic:
        for match in re.finditer(re.escape(token), self.text):
            before = self.text[max(0, match.start() - 1)]
            if before.isalnum() or before == ".":
                continue
            line, column = self.line_col(match.start())
            return error(message, code, line=line, column=column,
                         pointer=self._pointer_at(match.start()))
        return error(message, code)

    def long_integer_diagnostic(self, detail: str) -> Diagnostic:
        match = re.search(r"-?\d{4300,}", self.text)
        where: dict[str, Any] = {}
        if match:
            line, column = self.line_col(match.start())
            where = {"line": line, "column": column, "pointer": self._pointer_at(match.start())}
        return error("integer has more than 4,300 digits", "json.number", **where)

    def depth_diagnostic(self) -> Diagnostic:
        # Only reached after RecursionError, so the slow character walk runs on bad input only.
        problem = self.check_depth(LIMITS.max_json_depth)
        return problem or error(f"document nests deeper than {LIMITS.max_json_depth} levels",
                                "json.depth")

    def check_depth(self, limit: int) -> Diagnostic | None:
        # Cheap pre-filter: only walk when the bracket count could exceed the limit.
        if self.text.count("[") + self.text.count("{") <= limit:
            return None
        depth = 0
        in_string = False
        escape = False
        for offset, char in enumerate(self.text):
            if in_string:
                if escape:
                    escape = False
                elif char == "\\":
                    escape = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in "[{":
                depth += 1
                if depth > limit:
                    line, column = self.line_col(offset)
                    return error(f"document nests deeper than {limit} levels", "json.depth",
                                 line=line, column=column)
            elif char in "]}":
                depth -= 1
        return None

    def lone_surrogate_diagnostic(self) -> Diagnostic | None:
        for match in _SURROGATE_ESCAPE.finditer(self.text):
            high = int(match.group()[2:], 16)
            following = self.text[match.end():match.end() + 6]
            is_pair = 0xD800 <= high <= 0xDBFF and re.fullmatch(
                r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", following)
            preceding = self.text[max(0, match.start() - 6):match.start()]
            is_low_of_pair = high >= 0xDC00 and re.fullmatch(
                r"\\u[dD][89abAB][0-9a-fA-F]{2}", preceding)
            if not (is_pair or is_low_of_pair):
                line, column = self.line_col(match.start())
                return error(f"lone surrogate {match.group()} cannot be encoded in UTF-8 or XML",
                             "json.surrogate", line=line, column=column,
                             pointer=self._pointer_at(match.start()))
        return None

    def _pointer_at(self, offset: int) -> str:
        pointer = ""
        for _, where, start, _ in self._walk():
            if start > offset:
                break
            pointer = where
        return pointer

    def diagnostic(self, diagnostic: Diagnostic, key: bool = False) -> Diagnostic:
        """Fill in line and column from the diagnostic's pointer."""
        if diagnostic.line is not None:
            return diagnostic
        from dataclasses import replace

        line, column = self.locate(diagnostic.pointer, key=key)
        return replace(diagnostic, line=line, column=column)

    def decoded(self) -> Any:
        """The document decoded again from the text: for a locator that outlives its
        reader, which does not keep the decoded value alive for it."""
        return _DECODER.decode(self.text)


def model_locator(locator: JsonLocator, source: Callable[[Place], str | None]
                  ) -> Callable[[str], tuple[int | None, int | None]]:
    """A JSON reader's ``ReadResult.locator``: the object at a model pointer
    (``dcx.core.located``) was read from the value at the JSON Pointer ``source`` gives for
    its place, found in the text (``JsonLocator.find``) only when asked. ``(None, None)``
    when ``source`` gives none or the text has no value there."""
    from dcx.core.located import place_of

    def locate(model_pointer: str) -> tuple[int | None, int | None]:
        place = place_of(model_pointer)
        pointer = None if place is None else source(place)
        return (None, None) if pointer is None else locator.find(pointer)

    return locate


def dumps_canonical(value: Any, indent: int | None = 2) -> bytes:
    """Deterministic JSON output: UTF-8, no NaN, newline at the end."""
    return (json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False) + "\n").encode()
