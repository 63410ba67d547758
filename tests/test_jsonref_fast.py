"""The in-place ``$base`` resolver against the exact one: whenever the fast path accepts a
document, its result must equal ``resolve_document``'s, and the exact resolver must have
accepted it without a diagnostic. Documents are random inheritance graphs: chains, lists of
bases, ``$merge``, nested targets, cycles, ancestors, missing and malformed references."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.core.diagnostics import InputError
from dcx.formats import environment
from dcx.formats.environment.jsonref import INHERITANCE_KEYS, resolve_document, resolve_in_place
from dcx.parsing.jsonio import load_json

NAMES = [f"d{n}" for n in range(6)]

# mostly references that resolve, so that the fast path has work to do
valid_references = st.sampled_from(
    [f"#/definitions/{name}" for name in NAMES] + ["#/definitions/d0/inner", "#/definitions/d%31"])
broken_references = st.sampled_from(
    ["#/definitions/missing", "#", "#/definitions", "definitions/d0", "#/environment",
     "#/definitions/d1/list/0", "#/definitions/d2/inner/inner"])
references = st.one_of(valid_references, valid_references, valid_references, broken_references)
bases = st.one_of(references, references, st.lists(references, max_size=3), st.integers(0, 3))
scalars = st.one_of(st.integers(-2, 2), st.sampled_from(["a", "b", "x"]), st.booleans())


@st.composite
def inheriting(draw: st.DrawFn, refs: st.SearchStrategy[Any], depth: int = 0,
               well_formed: bool = False) -> dict[str, Any]:
    """An object with own keys, maybe a $base, maybe a $merge, maybe nested objects."""
    node: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(["p", "q", "r", "list", "inner"]), max_size=4,
                             unique=True)):
        if key == "list":
            node[key] = draw(st.lists(scalars, max_size=3))
        elif key == "inner" and depth < 2:
            node[key] = draw(inheriting(refs, depth + 1, well_formed))
        else:
            node[key] = draw(scalars)
    if draw(st.booleans()):
        node["$base"] = draw(refs)
    merge = st.lists(st.sampled_from(["list", "inner", "p"]), max_size=2)
    if well_formed:
        if "$base" in node and draw(st.booleans()):
            node["$merge"] = draw(merge)
    elif draw(st.integers(0, 4)) == 0:
        node["$merge"] = draw(st.one_of(merge, st.just("list")))
    return node


def acyclic_references(names: list[str]) -> st.SearchStrategy[Any]:
    """References to the given definitions only (each may use the ones before it)."""
    if not names:
        return st.just([])
    one = st.sampled_from([f"#/definitions/{name}" for name in names])
    return st.one_of(one, st.lists(one, max_size=3))


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True))
    if draw(st.booleans()):  # anything goes: cycles, broken and malformed references
        definitions = {name: draw(inheriting(bases)) for name in names}
        leaves = draw(st.lists(inheriting(bases), max_size=6))
    else:  # a well-formed hierarchy, as real files have
        definitions = {name: draw(inheriting(acyclic_references(names[:index]),
                                             well_formed=True))
                       for index, name in enumerate(names)}
        leaves = draw(st.lists(inheriting(acyclic_references(names), well_formed=True),
                               max_size=6))
    document: dict[str, Any] = {"environment": {"leaves": leaves}}
    if draw(st.booleans()):
        document["definitions"] = definitions
    else:  # definitions before the objects that use them
        document = {"definitions": definitions, **document}
    return document


def exact(text: str) -> tuple[Any, bool]:
    decoded, _ = load_json(text.encode())
    assert decoded is not None
    try:
        resolved, diagnostics = resolve_document(decoded.value)
    except InputError:
        return None, False
    return resolved, not diagnostics


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_fast_path_agrees_with_the_exact_resolver(document: dict[str, Any]) -> None:
    text = json.dumps(document)
    decoded, _ = load_json(text.encode(), mark=INHERITANCE_KEYS)
    assert decoded is not None
    expected, clean = exact(text)
    if resolve_in_place(decoded.value, decoded.marked):
        assert clean, "the fast path accepted what the exact resolver diagnoses"
        assert decoded.value == expected
        assert json.dumps(decoded.value) == json.dumps(expected)  # key order too


def test_the_fast_path_handles_a_factored_cluster_without_giving_up() -> None:
    machines = [{"id": n, "$base": f"#/definitions/m{n % 3}"} for n in range(300)]
    document = {"environment": {"units": machines},
                "definitions": {f"m{k}": {"type": "MACHINE", "cpus": [{"cores": k + 1}],
                                          **({"$base": "#/definitions/common"} if k else {})}
                                for k in range(3)} | {"common": {"state": "ACTIVE"}}}
    text = json.dumps(document)
    decoded, _ = load_json(text.encode(), mark=INHERITANCE_KEYS)
    assert decoded is not None
    assert len(decoded.marked) == 302
    assert resolve_in_place(decoded.value, decoded.marked)
    assert decoded.value == exact(text)[0]
    units = decoded.value["environment"]["units"]
    assert units[4] == {"type": "MACHINE", "cpus": [{"cores": 2}], "state": "ACTIVE", "id": 4}
    # resolved once and shared, as the model builder's identity cache expects
    assert units[1]["cpus"] is units[4]["cpus"]


def test_marked_objects_come_children_first() -> None:
    decoded, _ = load_json(b'{"a": {"$base": "#/x", "b": {"$merge": [], "c": {"$base": "#/y"}}},'
                           b' "d": {"$base": "#/z"}}', mark=INHERITANCE_KEYS)
    assert decoded is not None
    assert [sorted(node) for node in decoded.marked] == [
        ["$base"], ["$merge", "c"], ["$base", "b"], ["$base"]]


def test_reader_diagnostics_come_from_the_exact_resolver() -> None:
    text = (b'{"environment": {"datacenters": [{"rooms": [], "$base": "#/definitions/a"}]},'
            b' "definitions": {"a": {"$base": "#/definitions/b"},'
            b' "b": {"$base": "#/definitions/a"}}}')
    result = environment.read(text)
    assert [d.code for d in result.diagnostics] == ["ref.cycle"]
    assert result.diagnostics[0].line is not None
