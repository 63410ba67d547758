"""``JsonLocator.find``: following a pointer through the text by decoding past what comes
before the value (the fast path) finds what the token walk finds, and is asked nothing else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.parsing.jsonio import JsonLocator, escape_pointer_token

KEYS = st.one_of(st.sampled_from(["id", "a/b", "~0", "~", "q\"uote", "back\\slash", "é", "",
                                  "0", "01", "nodes"]), st.text(max_size=3))
SCALARS = st.one_of(st.integers(-10**20, 10**20), st.floats(allow_nan=False,
                                                            allow_infinity=False),
                    st.booleans(), st.none(), st.text(max_size=4))
VALUES = st.recursive(SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=5), st.dictionaries(KEYS, children, max_size=5)), max_leaves=30)
LAYOUTS = st.sampled_from([{"indent": None}, {"indent": 0}, {"indent": 2},
                           {"indent": "\t", "ensure_ascii": False},
                           {"separators": (",", ":")}, {"separators": (" , ", " : ")}])


def _pointers(value: Any, pointer: str = "") -> Iterator[str]:
    """Every pointer into ``value`` (the first of a repeated key only: JSON has none
    here), then pointers just beside them that name nothing."""
    yield pointer
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _pointers(child, f"{pointer}/{escape_pointer_token(key)}")
        yield f"{pointer}/absent~key"
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _pointers(child, f"{pointer}/{index}")
        yield f"{pointer}/{len(value)}"
        yield f"{pointer}/-"
        if value:
            yield f"{pointer}/00"
    else:
        yield f"{pointer}/0"


@given(VALUES, LAYOUTS, st.sampled_from(["", "\n ", "\t"]))
@settings(max_examples=300, deadline=None)
def test_find_by_descent_agrees_with_the_token_walk(value: Any, layout: dict[str, Any],
                                                   margin: str) -> None:
    text = margin + json.dumps(value, **layout) + margin
    for pointer in _pointers(value):
        fast, walked = JsonLocator(text), JsonLocator(text)
        assert fast.find(pointer) == walked.walked_find(pointer), (text, pointer)


def test_a_value_deep_in_a_long_array_is_found_at_its_line_and_column() -> None:
    text = '{"graph": {"nodes": [\n' + ",\n".join(
        f'  {{"id": "{index}", "metadata": {{"type": "node"}}}}' for index in range(50_000)
    ) + "\n]}}\n"
    locator = JsonLocator(text)
    assert locator.find("/graph/nodes/49999") == (50_001, 3)
    assert locator.find("/graph/nodes/49999/metadata/type") == (50_001, 40)
    assert locator.find("/graph/nodes/50000") == (None, None)
