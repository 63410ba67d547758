"""A scheduler as a declaration of stage → policy: a small JSON file
(``schemas/scheduler.schema.json``), validated like every other dcx file. The SC18
schedulers and the batch-scheduling ones ship in ``schedulers/`` (``dcx.schedulers``)::

    {"name": "FCFS-EASY",
     "stages": {"T2": "FCFS", "R5": "FIRSTFIT", "backfilling": "EASY"}}

Stages left out take the SC18 scheduler's policy (``policies.STAGE_DEFAULTS``; T1
dependencies finished, R4 free resources, backfilling GREEDY).
"""

from __future__ import annotations

from dataclasses import replace
from importlib import resources
from pathlib import Path

from dcx.core.codes import Code
from dcx.core.diagnostics import Diagnostic, error
from dcx.parsing.jsonio import load_json
from dcx.parsing.schemas import schema_diagnostics
from dcx.scheduler.policies import STAGE_DEFAULTS, Policy, with_stages
from dcx.scheduler.problem import MachineRequirements

SCHEMA = "scheduler.schema.json"

CODES = (
    Code("scheduler.unreadable", "error", "The scheduler file cannot be read."),
    Code("scheduler.no-fixed-order", "error",
         "Backfilling needs a fixed queue order; RANDOM reshuffles every cycle."),
    Code("scheduler.requirements-without-require", "error",
         "machine_requirements are given without R3 REQUIRE, or R3 REQUIRE without them."),
)


def policy_from_declaration(value: object) -> tuple[Policy | None, list[Diagnostic]]:
    """A decoded declaration → ``Policy``, or the schema's and the combination's errors."""
    found = schema_diagnostics(SCHEMA, value)
    if found:
        return None, found
    assert isinstance(value, dict)
    stages = value["stages"]
    backfilling = stages.get("backfilling", "GREEDY")
    if stages["T2"] == "RANDOM" and backfilling != "GREEDY":
        return None, [error(f"{backfilling} backfilling needs a fixed queue order; RANDOM "
                            "reshuffles the queue every cycle", "scheduler.no-fixed-order",
                            pointer="/stages/backfilling")]
    requirements = value.get("machine_requirements")
    if (requirements is None) != (stages.get("R3") != "REQUIRE"):
        return None, [error("R3 REQUIRE and machine_requirements go together: give both or "
                            "neither", "scheduler.requirements-without-require",
                            pointer="/machine_requirements" if requirements is not None
                            else "/stages/R3")]
    declared = {stage: stages[stage] for stage in STAGE_DEFAULTS if stage in stages}
    policy = with_stages(Policy(stages["T2"], stages["R5"], backfilling), declared)
    if requirements is not None:
        policy = replace(policy, machine_requirements=MachineRequirements(
            requirements.get("os"), requirements.get("arch"),
            tuple(requirements.get("features", ()))))
    return policy, []


def load_declaration(path: Path) -> tuple[Policy | None, list[Diagnostic]]:
    """Read and check one scheduler file; diagnostics located at ``path``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, [error(f"cannot read file: {exc.strerror or type(exc).__name__}",
                            "scheduler.unreadable").at(str(path))]
    decoded, problems = load_json(data)
    if decoded is None:
        return None, [d.at(str(path)) for d in problems]
    policy, found = policy_from_declaration(decoded.value)
    if found:
        found = decoded.locator.place(found)
    return policy, [d.at(str(path)) for d in [*problems, *found]]


def shipped_declarations() -> dict[str, Policy]:
    """The declarations in ``schedulers/``, by the name each declares."""
    shipped: dict[str, Policy] = {}
    for entry in sorted(resources.files("dcx.schedulers").iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        decoded, _ = load_json(entry.read_bytes())
        if decoded is None:
            raise RuntimeError(f"shipped scheduler {entry.name} is not JSON")
        policy, found = policy_from_declaration(decoded.value)
        if policy is None:
            raise RuntimeError(f"shipped scheduler {entry.name} is invalid: {found[0].message}")
        assert isinstance(decoded.value, dict)
        shipped[decoded.value["name"]] = policy
    return shipped
