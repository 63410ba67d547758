"""The resource stages of the reference architecture as components of the SC18 engine:
R2/R3 (static filters: which machines a task may ever use), R4 (dynamic filter: which of
them have its resources free now) and R5 (selection among those).

Each component binds to the run's ``CycleState`` once and returns the per-task callable the
engine calls (and ``StageTimer.wrap`` times): binding once keeps the per-task path free of
lookups, and the callables read the state's lists, which the engine changes in place.

A new policy is one class, one line in its registry (``AUTHORIZATIONS``,
``STATIC_FILTERS``, ``MACHINE_FILTERS``; R5 functions in ``policies.MACHINE_SELECTIONS``)
and its name in the matching enum of ``schemas/scheduler.schema.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from dcx.scheduler.policies import MachineSelection, Policy, free_resources
from dcx.scheduler.state import CycleState, SchedulerState

Allowed = Callable[[int], Sequence[int] | None]
"""``task -> the machines (topology order) it may use``, ``None`` for every machine."""
Candidates = Callable[[int], list[int]]
"""R4: ``task -> usable machines with its resources free``, in topology order."""
Select = Callable[[int, list[int]], list[int]]
"""R5: ``(task, candidates) -> chosen machines``."""


# --------------------------------------------------------------------------- R2 / R3


class StaticFilter(Protocol):
    """R2 (authorization) or R3 (static information): the machines a task may use at all,
    whatever their load. Bound once per run; ``None`` when the filter lets every task use
    every machine (the engine then skips it)."""

    def bind(self, state: SchedulerState, policy: Policy) -> Allowed | None: ...


class EveryMachine:
    """No restriction (the SC18 scheduler)."""

    def bind(self, state: SchedulerState, policy: Policy) -> Allowed | None:
        return None


class RequireProperties:
    """R3: only machines with the operating system, architecture and features the
    declaration's ``machine_requirements`` name (``policies.MachineRequirements``), for
    every task. The workload's tasks state no such requirement of their own (the model's
    ``ResourceRequest`` has no os, arch or features), so this is the operator's static
    filter; a machine without an os or arch does not meet a requirement on it."""

    def bind(self, state: SchedulerState, policy: Policy) -> Allowed | None:
        required = policy.machine_requirements
        if required is None:
            return None
        machines = state.machines
        count = len(machines)
        os = machines.os or (None,) * count
        arch = machines.arch or (None,) * count
        features = machines.features or ((),) * count
        allowed = [m for m in range(count)
                   if _same(required.os, os[m]) and _same(required.arch, arch[m])
                   and set(required.features) <= set(features[m])]
        return lambda task: allowed


def _same(required: str | None, actual: str | None) -> bool:
    return required is None or (actual is not None and actual.casefold() == required.casefold())


AUTHORIZATIONS: dict[str, type[StaticFilter]] = {
    "ALL": EveryMachine,
}
"""R2 policies."""
STATIC_FILTERS: dict[str, type[StaticFilter]] = {
    "ALL": EveryMachine,
    "REQUIRE": RequireProperties,
}
"""R3 policies."""


def static_filters(policy: Policy, state: SchedulerState) -> list[Allowed]:
    """The policy's R2 and R3 filters bound to ``state``, leaving out those that keep every
    machine."""
    bound = (AUTHORIZATIONS[policy.authorization]().bind(state, policy),
             STATIC_FILTERS[policy.static_filter]().bind(state, policy))
    return [allowed for allowed in bound if allowed is not None]


def machines_for_every_task(policy: Policy, state: SchedulerState) -> list[int] | None:
    """The machines the policy's R2/R3 filters allow every task (``None``: all of them),
    for an engine that can only take machines out as a whole (the reservation engine).
    ``ValueError`` when the filters allow different tasks different machines."""
    allowed = combine(static_filters(policy, state))
    if allowed is None:
        return None
    answers = {None if found is None else tuple(found)
               for found in map(allowed, range(len(state.tasks)))}
    if len(answers) > 1:
        raise ValueError(f"{policy.name}: static filters that differ from task to task run "
                         "in the SC18 engine only")
    answer = answers.pop() if answers else None
    return None if answer is None else list(answer)


def combine(filters: Sequence[Allowed]) -> Allowed | None:
    """Every filter's machines at once (an intersection, in topology order)."""
    if not filters:
        return None
    if len(filters) == 1:
        return filters[0]

    def allowed(task: int) -> Sequence[int] | None:
        kept: Sequence[int] | None = None
        for machines_for in filters:
            found = machines_for(task)
            if found is None:
                continue
            kept = found if kept is None else [m for m in kept if m in set(found)]
        return kept

    return allowed


# --------------------------------------------------------------------------- R4


class MachineFilter(Protocol):
    """R4: the usable machines with the task's resources free now."""

    def bind(self, state: CycleState, allowed: Allowed | None) -> Candidates: ...


class FreeResources:
    """Enough free cores and, when the problem schedules them, enough free units of every
    other resource the task asks for (``policies.free_resources``)."""

    def bind(self, state: CycleState, allowed: Allowed | None) -> Candidates:
        need, free, open_list, usable = state.need, state.free, state.open_list, state.usable
        demand, extra_free = state.demand, state.extra_free
        if allowed is not None:
            def restricted(task: int) -> list[int]:
                machines = allowed(task)
                base = open_list if machines is None else [m for m in machines if usable[m]]
                if extra_free:
                    return free_resources(need[task], demand[task], base, free, extra_free)
                wanted = need[task]
                return [machine for machine in base if free[machine] >= wanted]
            return restricted
        if extra_free:
            return lambda task: free_resources(need[task], demand[task], open_list, free,
                                               extra_free)

        def cores(task: int) -> list[int]:
            wanted = need[task]
            return [machine for machine in open_list if free[machine] >= wanted]

        return cores


MACHINE_FILTERS: dict[str, type[MachineFilter]] = {
    "FREE-RESOURCES": FreeResources,
}


# --------------------------------------------------------------------------- R5


class Selection:
    """R5 from a ``policies.MachineSelection`` function (FirstFit, BestFit, WorstFit),
    ranking the candidates by the state's free cores."""

    def __init__(self, select: MachineSelection) -> None:
        self._select = select

    def bind(self, state: CycleState) -> Select:
        select, need, nodes, free = self._select, state.need, state.nodes, state.free
        return lambda task, candidates: select(need[task], nodes[task], candidates, free)
