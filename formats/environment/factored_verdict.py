"""The schema verdict of a factored environment, without validating each shared definition
once per machine.

A cluster in the factored style dcx writes has rack units such as
``{"id": 7, "name": "n7", "$base": "#/definitions/machines/type-1"}``. Resolved, 100,000
machines share three CPU, memory and storage lists, and validating the resolved document
walks those lists 100,000 times: about three quarters of the verdict's time.

The schema of a rack unit is separable: a machine is valid when each of its properties is
valid on its own and its key set satisfies the ``oneOf`` of ``required`` lists; the
``EMPTY`` alternative depends only on the key set and ``type``. So when every object that
inherits is a rack unit (reached through arrays of datacenters, rooms and racks that
inherit nothing) or lies under ``definitions``, the resolved document is valid exactly when

1. the document as written is valid: the schema accepts an unresolved unit through its
   ``$base`` branch and checks every own value where it stands; and
2. for every group of units with the same target and the same own keys, one resolved unit
   is valid as a rack unit: the group shares its key set and every inherited value.

Anything else takes the full verdict: a unit with ``$merge`` or several bases, a rack,
room or datacenter that inherits, rooms given as an object, a unit that resolves to a bare
``type``. ``tests/test_factored_verdict.py`` checks that the schema keeps the shape this
relies on and compares both verdicts on random factored documents.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from dcx.parsing.schemas import schema_verdict

INHERITING = ("$base", "$merge")


@dataclass(frozen=True)
class FactoredPlan:
    """Taken before resolution: one unit per (target, own keys) group."""

    representatives: tuple[dict[str, Any], ...]


def plan_factored_verdict(root: Any, marked: list[dict[str, Any]]) -> FactoredPlan | None:
    """A plan when every marked object is an inheriting rack unit or lies under
    ``definitions``; ``None`` sends the document to the full verdict."""
    if not marked or not isinstance(root, dict):
        return None
    units = _inheriting_units(root)
    if len(units) + _count_marked(root.get("definitions")) != len(marked):
        return None
    try:  # hashing in C: a unit with several bases (a list) cannot be hashed
        references = set(map(itemgetter("$base"), units))
    except TypeError:
        return None
    if not all(reference.__class__ is str for reference in references):
        return None
    first_keys = units[0].keys() if units else {}.keys()
    if all(unit.keys() == first_keys for unit in units):  # the usual case: one key set
        key_sets: set[tuple[str, ...]] = {tuple(first_keys)}
    else:
        key_sets = set(map(tuple, units))
    if any("$merge" in keys for keys in key_sets):
        return None
    wanted = len(references) * len(key_sets)  # at most this many groups
    groups: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
    for unit in units:  # usually stops after the first few units
        groups.setdefault((unit["$base"], tuple(sorted(unit))), unit)
        if len(groups) == wanted:
            break
    return FactoredPlan(tuple(groups.values()))


def representatives_valid(schema: str, plan: FactoredPlan) -> bool:
    """Step 2 of the module docstring, once the document is resolved in place (step 1 is
    ``schema_verdict`` on the document before resolution). ``False`` means "ask the full
    verdict", not "invalid"."""
    for unit in plan.representatives:
        if unit.keys() <= {"type"}:
            return False  # could be an EMPTY slot, whose validity depends on the value
    return schema_verdict(schema, _rack_of(list(plan.representatives)))


def _rack_of(units: list[dict[str, Any]]) -> dict[str, Any]:
    """The smallest valid document that holds ``units`` as rack units."""
    return {"environment": {"datacenters": [{"rooms": [
        {"type": "SERVER", "objects": [{"type": "RACK", "units": units}]}]}]}}


def _inheriting_units(root: dict[str, Any]) -> list[dict[str, Any]]:
    """Rack units that inherit, reached through plain arrays only. Units under a container
    that inherits or is an object are not found, so the caller's count tells."""
    environment = root.get("environment")
    found: list[dict[str, Any]] = []
    for datacenter in _items(environment, "datacenters"):
        for room in _items(datacenter, "rooms"):
            for rack in _items(room, "objects"):
                found.extend([unit for unit in _items(rack, "units")
                              if unit.__class__ is dict and "$base" in unit])
    return found


def _items(container: Any, key: str) -> list[Any]:
    """``container[key]`` when ``container`` inherits nothing and the value is an array,
    else nothing."""
    if not _plain(container):
        return []
    value = container.get(key, [])
    return value if isinstance(value, list) else []


def _plain(node: Any) -> bool:
    return isinstance(node, dict) and "$base" not in node and "$merge" not in node


def _count_marked(node: Any) -> int:
    """Objects with an inheritance key under ``node``."""
    count = 0
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "$base" in item or "$merge" in item:
                count += 1
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count
