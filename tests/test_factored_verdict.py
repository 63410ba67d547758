"""The factored verdict (one unit per definition) against the full verdict on the resolved
document, and the schema shape that makes it sound."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.formats import environment
from dcx.formats.environment.factored_verdict import plan_factored_verdict, representatives_valid
from dcx.formats.environment.jsonref import INHERITANCE_KEYS, resolve_in_place
from dcx.parsing.jsonio import load_json
from dcx.parsing.schemas import load_schema, schema_verdict

SCHEMA = environment.SCHEMA


def _keywords(schema: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        found.update(schema)
        for value in schema.values():
            found |= _keywords(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _keywords(value)
    return found


def test_the_schema_keeps_the_shape_the_factored_verdict_relies_on() -> None:
    """If this fails, the schema changed in a way that may make a rack unit's validity
    depend on more than its key set and each property on its own: revisit
    formats/factored_verdict.py before adjusting this test."""
    schema = load_schema(SCHEMA)
    definitions = schema["$defs"]
    machine = definitions["machine"]
    assert set(machine) <= {"type", "description", "oneOf", "properties"}
    assert machine["type"] == "object"
    assert all(set(branch) == {"required"} for branch in machine["oneOf"])
    empty, machine_branch = definitions["rack-unit"]["oneOf"]
    assert machine_branch == {"$ref": "#/$defs/machine"}
    assert empty["additionalProperties"] is False and set(empty["properties"]) == {"type"}
    assert set(empty) == {"type", "required", "additionalProperties", "properties"}
    rack_units = definitions["rack"]["properties"]["units"]
    assert rack_units["items"] == {"$ref": "#/$defs/rack-unit"}
    # keywords that relate one part of an object to another, anywhere
    assert not _keywords(schema) & {"unevaluatedProperties", "unevaluatedItems",
                                    "dependentRequired", "dependentSchemas", "dependencies",
                                    "if", "patternProperties", "propertyNames", "contains",
                                    "uniqueItems", "$dynamicRef"}


def test_the_rack_wrapper_is_valid_on_its_own() -> None:
    from dcx.formats.environment.factored_verdict import _rack_of

    assert schema_verdict(SCHEMA, _rack_of([]))


# --------------------------------------------------------------------------- differential

cores = st.sampled_from([1, 8, 0, -1, "8", 2.5])
pu = st.fixed_dictionaries({"cores": cores}, optional={
    "clock-rate": st.sampled_from([2.4e9, 0, -5]), "model": st.sampled_from(["x", 3])})
storage = st.fixed_dictionaries({}, optional={"capacity": st.sampled_from([1024, 0, -1, "1"])})
machine_values = {
    "type": st.sampled_from(["MACHINE", "MACHINE", "MACHINE", "EMPTY", "RACK"]),
    "cpus": st.lists(pu, max_size=2),
    "memory": st.lists(storage, max_size=2),
    "state": st.sampled_from(["ACTIVE", "FAILURE", "BROKEN"]),
    "id": st.one_of(st.integers(-1, 5), st.sampled_from(["m", None])),
    "name": st.sampled_from(["n", 7]),
    "colour": st.just("blue"),
}


def machine_part(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={key: machine_values[key] for key in keys})


definition = machine_part(["type", "cpus", "memory", "state", "colour"])
own = machine_part(["id", "name", "state", "type", "cpus", "colour"])
references = st.sampled_from(["#/definitions/a", "#/definitions/b", "#/definitions/c"])


@st.composite
def units(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["inherit", "inherit", "inherit", "plain", "empty", "odd"]))
    if kind == "inherit":
        return {**draw(own), "$base": draw(references)}
    if kind == "plain":
        return draw(definition)
    if kind == "empty":
        return {"type": draw(st.sampled_from(["EMPTY", "MACHINE"]))}
    return draw(st.sampled_from([
        {"$base": "#/definitions/a", "$merge": ["cpus"], "cpus": [{"cores": 1}]},
        {"$base": ["#/definitions/a", "#/definitions/b"], "id": 3},
        {"type": "MACHINE", "cpus": [{"$base": "#/definitions/cpu"}]},
        {"$base": "#/definitions/a"},
        7,
    ]))


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    racks = [{"type": "RACK", "units": draw(st.lists(units(), max_size=5))}
             for _ in range(draw(st.integers(1, 2)))]
    if draw(st.integers(0, 5)) == 0:
        racks.append({"$base": "#/definitions/rack"})
    room: dict[str, Any] = {"type": "SERVER", "objects": racks}
    document: dict[str, Any] = {
        "environment": {"datacenters": [{"rooms": [room]}]},
        "definitions": {"a": draw(definition), "b": draw(definition),
                        "c": {**draw(definition), "$base": "#/definitions/a"},
                        "cpu": {"cores": 2},
                        "rack": {"type": "RACK", "units": [{"$base": "#/definitions/a"}]}},
    }
    return document


def verdicts(document: dict[str, Any]) -> tuple[bool | None, bool]:
    """(factored verdict or None when it does not apply, full verdict)."""
    decoded, _ = load_json(json.dumps(document).encode(), mark=INHERITANCE_KEYS)
    assert decoded is not None
    root = decoded.value
    plan = plan_factored_verdict(root, decoded.marked)
    written_valid = plan is not None and schema_verdict(SCHEMA, root)
    if not resolve_in_place(root, decoded.marked):
        return None, False
    full = schema_verdict(SCHEMA, root)
    if plan is None:
        return None, full
    return written_valid and representatives_valid(SCHEMA, plan), full


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_the_factored_verdict_never_accepts_what_the_full_verdict_rejects(
        document: dict[str, Any]) -> None:
    factored, full = verdicts(document)
    if factored:
        assert full, "the factored verdict accepted an invalid document"


def test_the_factored_verdict_accepts_a_factored_cluster() -> None:
    document: dict[str, Any] = {
        "environment": {"datacenters": [{"rooms": [{"type": "SERVER", "objects": [
            {"type": "RACK", "units": [{"id": n, "name": f"n{n}", "$base": "#/definitions/a"}
                                       for n in range(50)] + [{"type": "EMPTY"}]}]}]}]},
        "definitions": {"a": {"type": "MACHINE", "cpus": [{"cores": 4}]}}}
    assert verdicts(document) == (True, True)
    document["definitions"]["a"]["cpus"] = []  # minItems: 1, seen through the one unit
    assert verdicts(document) == (False, False)
    result = environment.read(json.dumps(document).encode())
    assert result.document is None
    assert result.diagnostics and all(d.code.startswith("schema.") for d in result.diagnostics)


def test_a_unit_that_overrides_with_a_bad_value_is_caught() -> None:
    units = [{"id": 0, "$base": "#/definitions/a"}, {"id": -1, "$base": "#/definitions/a"}]
    document = {"environment": {"datacenters": [{"rooms": [{"type": "SERVER", "objects": [
        {"type": "RACK", "units": units}]}]}]},
        "definitions": {"a": {"type": "MACHINE", "cpus": [{"cores": 4}]}}}
    assert verdicts(document) == (False, False)
