"""``top_level_keys`` reads keys with a regular expression; it must find exactly what a
character-by-character scan finds, on any bytes, cut anywhere."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.parsing.json_head import top_level_keys


def scanned_keys(data: bytes, limit: int = 65536) -> dict[str, set[str]]:
    """The reference: walk the characters, tracking strings and bracket depth."""
    text = data[:limit].decode("utf-8", errors="replace")
    found: dict[str, set[str]] = {"1": set(), "2": set()}
    depth = position = 0
    while position < len(text):
        char = text[position]
        if char == '"':
            end = position + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            after = end + 1
            while after < len(text) and text[after] in " \t\r\n":
                after += 1
            if after < len(text) and text[after] == ":" and str(depth) in found:
                found[str(depth)].add(text[position + 1:end])
            position = end + 1
            continue
        depth += char in "{["
        depth -= char in "}]"
        position += 1
    return found


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                               max_size=4),
    max_leaves=20)


@settings(max_examples=300)
@given(JSON_VALUES, st.integers(min_value=0, max_value=400))
def test_keys_of_json_cut_anywhere_match_the_character_scan(value: object, cut: int) -> None:
    data = json.dumps(value, ensure_ascii=False).encode()
    assert top_level_keys(data, cut) == scanned_keys(data, cut)


@settings(max_examples=300)
@given(st.text(alphabet='{}[]":\\ ab\n', max_size=60))
def test_keys_of_broken_json_match_the_character_scan(text: str) -> None:
    assert top_level_keys(text.encode()) == scanned_keys(text.encode())


def test_a_graph_and_a_map_of_graphs_are_told_apart() -> None:
    graph = b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "node"}}], "edges": []}}'
    assert top_level_keys(graph) == {"1": {"graph"}, "2": {"nodes", "edges"}}
    assert top_level_keys(b'{"a": ' + graph + b"}")["1"] == {"a"}
