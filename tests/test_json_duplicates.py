"""Duplicate keys: ``load_json`` names the repeated key, and the locator's one-pass scan
puts it where the full token walk (``JsonLocator._walk``) does."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from dcx.parsing.jsonio import JsonLocator, load_json

KEYS = st.sampled_from(["id", "k", "a b", 'q"uote', "back\\slash", "end\\", "é", "[", "{",
                        ":"])
SCALARS = st.one_of(st.integers(-5, 5), st.booleans(), st.none(), KEYS)


def _documents() -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.lists(st.tuples(KEYS, st.booleans(), children), max_size=4)),
        max_leaves=25)


def _render(value: Any) -> str:
    """JSON text in which a list of (key, escaped, value) is an object that may repeat
    keys."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        members = (f"{_key(k, escaped)}: {_render(v)}" for k, escaped, v in value)
        return "{" + ", ".join(members) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_render(v) for v in value) + "]"
    return json.dumps(value)


def _key(key: str, escaped: bool) -> str:
    # ``\u`` escapes spell the same key differently: the scan must still see the repeat.
    if not escaped:
        return json.dumps(key)
    return '"' + "".join(f"\\u{ord(c):04x}" for c in key) + '"'


def _first_repeat_by_walk(text: str, key: str) -> tuple[str, int] | None:
    """The pointer and offset of the first second occurrence of ``key`` within one object,
    from the full token walk. Objects are told apart by where they start, not by their
    pointers: a repeated key can give two objects the same pointer."""
    locator = JsonLocator(text)
    escaped = key.replace("~", "~0").replace("/", "~1")
    value_starts: dict[int, int] = {}
    seen: set[int] = set()
    for kind, pointer, offset, depth in locator._walk():
        if kind == "value":
            value_starts[depth] = offset
            continue
        if pointer.rpartition("/")[2] != escaped:
            continue
        parent = value_starts[depth - 1]
        if parent in seen:
            return pointer, offset
        seen.add(parent)
    return None


@settings(max_examples=300, deadline=None)
@given(_documents())
@example([('q"uote', False, [("id", False, 1), ("id", True, 2)])])
@example([("end\\", False, [0, [("k", True, 1), ("k", False, 2)]])])
@example([("k", False, [("id", False, None)]),
          ("k", False, [("id", True, 0), ("id", True, None)])])
def test_the_scan_locates_a_repeat_where_the_walk_does(document: Any) -> None:
    text = _render(document)
    decoded, problems = load_json(text.encode())
    if decoded is not None:
        return
    (problem,) = problems
    if problem.code != "json.duplicate-key":
        return
    event("a repeated key")
    assert problem.pointer is not None and problem.line is not None
    repeated = problem.pointer.rpartition("/")[2].replace("~1", "/").replace("~0", "~")
    expected = _first_repeat_by_walk(text, repeated)
    assert expected is not None, (text, problem)
    pointer, offset = expected
    assert problem.pointer == pointer, (text, problem)
    locator = JsonLocator(text)
    assert (problem.line, problem.column) == locator.line_col(offset), text


def test_a_repeat_among_a_million_keys_names_the_key_and_its_place() -> None:
    keys = ", ".join(f'"k{n}": {n}' for n in range(200_000))
    text = '{"a": [0, {"b": {' + keys + ', "k7": 0}}]}'
    decoded, (problem,) = load_json(text.encode())
    assert decoded is None
    assert problem.code == "json.duplicate-key"
    assert problem.pointer == "/a/1/b/k7"
    assert problem.column == text.rindex('"k7"') + 1
