"""The resource stages of the reference architecture as components of the SC18 planner:
R2/R3 (static filters: which machines a task may ever use: R2 by who submits it, R3 by
what the machines are), R4 (dynamic filter: which of them have its resources free now) and
R5 (selection among those).

Each component binds to the run's ``CycleState`` once and returns the per-task callable the
engine calls (and ``StageTimer.wrap`` times): binding once keeps the per-task path free of
lookups, and the callables read the state's lists, which the engine changes in place.

A new policy is one class, one line in its registry (``AUTHORIZATIONS``,
``STATIC_FILTERS``, ``MACHINE_FILTERS``; R5 functions in ``policies.MACHINE_SELECTIONS``)
and its name in the matching enum of ``schemas/scheduler.schema.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.scheduler.fitting import free_resources
from dcx.scheduler.problem import (
    CORE_UNITS,
    MachineRequirements,
    MachineTable,
    Problem,
    TaskTable,
    share_limit,
)
from dcx.scheduler.state import CycleState

if TYPE_CHECKING:  # annotations only: policies builds on this module's registries
    from dcx.scheduler.policies import MachineSelection, Policy

Allowed = Callable[[int], Sequence[int] | None]
"""``task -> the machines (topology order) it may use``, ``None`` for every machine."""
Candidates = Callable[[int], list[int]]
"""R4: ``task -> usable machines with its resources free``, in topology order."""
Select = Callable[[int, list[int]], list[int]]
"""R5: ``(task, candidates) -> chosen machines``."""


# --------------------------------------------------------------------------- R2 / R3


class StaticView(Protocol):
    """What R2/R3 read: the tasks (with what each asks of its machines, ``TaskTable.asks``,
    and their groups) and the machines (with their os, arch, features and partitions). A
    run's ``SchedulerState``, or the ``Problem`` itself when a policy is checked before any
    run."""

    @property
    def tasks(self) -> TaskTable: ...

    @property
    def machines(self) -> MachineTable: ...


class StaticFilter(Protocol):
    """R2 (authorization) or R3 (static information): the machines a task may use at all,
    whatever their load. Bound once per run; ``None`` when the filter lets every task use
    every machine (the engine then skips it)."""

    def bind(self, state: StaticView, policy: Policy) -> Allowed | None: ...


class EveryMachine:
    """No restriction (the SC18 scheduler). What tasks ask of their machines is ignored
    (``static_filter_diagnostics`` warns about it once)."""

    def bind(self, state: StaticView, policy: Policy) -> Allowed | None:
        return None


class MatchRequests:
    """R3: a task that asks for an operating system, architecture or features
    (``ResourceRequest.os``, ``arch``, ``features``) may use only the machines that have
    them (``problem.MachineRequirements``); a task that asks nothing, every machine."""

    def bind(self, state: StaticView, policy: Policy) -> Allowed | None:
        return _meeting(state, None)


class RequireProperties:
    """R3: only machines with the operating system, architecture and features the
    declaration's ``machine_requirements`` name (the operator's filter, for every task),
    and of those only the ones that also meet what each task asks for itself."""

    def bind(self, state: StaticView, policy: Policy) -> Allowed | None:
        return _meeting(state, policy.machine_requirements)


def _meeting(state: StaticView, operator: MachineRequirements | None) -> Allowed | None:
    """Per task, the machines meeting ``operator``'s requirements (when given) and the
    task's own; ``None`` when neither restricts anything. One list per distinct
    requirement, shared by the tasks that ask it."""
    machines, asks = state.machines, state.tasks.asks
    if operator is None and not asks:
        return None
    everyone = operator.machines(machines) if operator is not None else None
    kept = set(everyone) if everyone is not None else None
    found: dict[MachineRequirements, list[int]] = {}
    per_task: dict[int, list[int]] = {}
    for task, asked in asks.items():
        allowed = found.get(asked)
        if allowed is None:
            allowed = found[asked] = [m for m in asked.machines(machines)
                                      if kept is None or m in kept]
        per_task[task] = allowed
    if everyone is None:
        return per_task.get  # a task that asks nothing: every machine (None)
    every = everyone
    return lambda task: per_task.get(task, every)


class PartitionAdmission:
    """R2: a task may use the machines of every partition that admits it
    (``PartitionAccess.admits``: its group on the partition's allowed groups, and no
    account or QoS list, since tasks carry neither); a machine in no partition takes no
    task. An environment without partitions restricts nothing. Slurm runs a job in one
    partition; here a task of several nodes may take them from different partitions that
    admit it (what R2 decides is which machines its submitter may use)."""

    def bind(self, state: StaticView, policy: Policy) -> Allowed | None:
        partitions, groups = state.machines.partitions, state.tasks.group
        if not partitions:
            return None
        found: dict[str | None, list[int]] = {}

        def allowed(task: int) -> list[int]:
            group = groups[task]
            machines = found.get(group)
            if machines is None:  # one list per group, shared by its tasks
                machines = found[group] = sorted({
                    m for partition in partitions if partition.admits(group)
                    for m in partition.machines})
            return machines

        return allowed


AUTHORIZATIONS: dict[str, type[StaticFilter]] = {
    "ALL": EveryMachine,
    "PARTITION": PartitionAdmission,
}
"""R2 policies."""
STATIC_FILTERS: dict[str, type[StaticFilter]] = {
    "ALL": EveryMachine,
    "MATCH": MatchRequests,
    "REQUIRE": RequireProperties,
}
"""R3 policies."""


def static_filters(policy: Policy, state: StaticView) -> list[Allowed]:
    """The policy's R2 and R3 filters bound to ``state``, leaving out those that keep every
    machine."""
    bound = (AUTHORIZATIONS[policy.authorization]().bind(state, policy),
             STATIC_FILTERS[policy.static_filter]().bind(state, policy))
    return [allowed for allowed in bound if allowed is not None]


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
            if kept is None:
                kept = found
            else:
                also = set(found)
                kept = [m for m in kept if m in also]
        return kept

    return allowed


def never_started(problem: Problem, policy: Policy) -> list[int]:
    """The tasks that ``policy``'s R2/R3 filters leave fewer machines able to hold them
    (cores and every other scheduled resource, counting every machine whatever its state)
    than they need nodes: under that policy they could never start."""
    allowed = combine(static_filters(policy, problem))
    if allowed is None:
        return []
    tasks = problem.tasks
    holding: dict[tuple[int, int, tuple[tuple[int, int], ...], bool], int] = {}
    stuck: list[int] = []
    for task in range(len(tasks)):
        machines_for = allowed(task)
        if machines_for is None:
            continue
        anywhere = tasks.is_anywhere(task)
        key = (id(machines_for), tasks.need[task], tasks.demand[task], anywhere)
        count = holding.get(key)  # filters share one list per requirement
        if count is None:
            count = holding[key] = (_cores_anywhere(problem, machines_for, task) if anywhere
                                    else _holding(problem, allowed, task))
        if count < (tasks.need[task] if anywhere else tasks.nodes[task]):
            stuck.append(task)
    return stuck


def _cores_anywhere(problem: Problem, machines_for: Sequence[int] | range, task: int) -> int:
    """The core units the machines ``machines_for`` could give a cores-anywhere task."""
    machines = problem.machines
    need, demand = problem.tasks.need[task], problem.tasks.demand[task]
    return sum(share_limit(machines.capacity[m], need, demand, machines.extra_capacity, m)
               for m in machines_for)


def _holding(problem: Problem, allowed: Allowed | None, task: int) -> int:
    """How many machines the filters allow ``task`` that could hold one of its nodes."""
    machines = problem.machines
    capacity, extra = machines.capacity, machines.extra_capacity
    need, demand = problem.tasks.need[task], problem.tasks.demand[task]
    machines_for = allowed(task) if allowed is not None else None
    return sum(1 for m in (range(len(capacity)) if machines_for is None else machines_for)
               if capacity[m] >= need
               and all(extra[dimension][m] >= units for dimension, units in demand))


def static_filter_diagnostics(problem: Problem, policies: Sequence[Policy],
                              ) -> tuple[list[Diagnostic], set[str]]:
    """Once per workload, before any run: an error for each policy under whose R2/R3
    filters some task could never start (naming the first such task and how many others),
    one warning when tasks ask for an os, arch or features that a policy's R3 ``ALL``
    ignores, and one when the environment has partitions that a policy's R2 ``ALL``
    ignores. Returns the diagnostics and the names of the policies that cannot run."""
    diagnostics: list[Diagnostic] = []
    blocked: set[str] = set()
    tasks = problem.tasks
    for policy in {policy.name: policy for policy in policies}.values():
        stuck = never_started(problem, policy)
        if not stuck:
            continue
        blocked.add(policy.name)
        first = stuck[0]
        job, position = _position(tasks, first)
        asked = tasks.asks.get(first) if policy.static_filter != "ALL" else None
        wants = [f"it asks for {asked.label()}"] if asked is not None else []
        if policy.machine_requirements is not None and policy.static_filter == "REQUIRE":
            wants.append(f"the operator for {policy.machine_requirements.label()}")
        admission = _admission(problem, policy, first)
        if admission is not None:
            wants.insert(0, admission)
        others = len(stuck) - 1
        diagnostics.append(error(
            f"under {policy.name}, task {tasks.ids[first]!r} of job "
            f"{problem.job_ids[job]!r} could never start: {' and '.join(wants) or 'R2/R3'}, "
            f"and {_what_is_left(problem, policy, first)}"
            + (f" ({others} other task(s) likewise)" if others else ""),
            "schedule.no-allowed-machine", pointer=f"/jobs/{job}/tasks/{position}",
            hint="admit its group to partitions with enough machines, or schedule with R2 "
                 "ALL to ignore partitions" if admission is not None and asked is None else
                 "give machines that os, architecture or those features in the environment, "
                 "or schedule with R3 ALL to ignore them"))
    ignoring = sorted({policy.name for policy in policies if policy.static_filter == "ALL"})
    if tasks.asks and ignoring:
        diagnostics.append(warning(
            f"{len(tasks.asks)} of {len(tasks)} task(s) ask for an os, architecture or "
            f"features; {', '.join(ignoring)} (R3 ALL) place(s) them on any machine",
            "schedule.requirements-ignored",
            hint="add +R3-MATCH to the scheduler name to honour them"))
    partitions = problem.machines.partitions
    unauthorized = sorted({policy.name for policy in policies
                           if policy.authorization == "ALL"})
    if partitions and unauthorized:
        diagnostics.append(warning(
            f"the environment has {len(partitions)} partition(s) saying who may use which "
            f"machines; {', '.join(unauthorized)} (R2 ALL) place(s) tasks on any machine",
            "schedule.partitions-ignored",
            hint="add +R2-PARTITION to the scheduler name to honour them"))
    return diagnostics, blocked


def _what_is_left(problem: Problem, policy: Policy, task: int) -> str:
    """What the filters leave a task that could never start, against what it needs: whole
    machines for a whole-node task, cores in all for a cores-anywhere one."""
    allowed = combine(static_filters(policy, problem))
    tasks = problem.tasks
    if tasks.is_anywhere(task):
        machines_for = allowed(task) if allowed is not None else None
        if machines_for is None:
            machines_for = range(len(problem.machines))
        cores = _cores_anywhere(problem, machines_for, task) / CORE_UNITS
        return (f"the machines meeting that have {cores:g} core(s) to give it, where it "
                f"needs {tasks.need[task] / CORE_UNITS:g} core(s) in total")
    return (f"{_holding(problem, allowed, task)} machine(s) meeting that could hold it, "
            f"where it needs {tasks.nodes[task]}")


def _admission(problem: Problem, policy: Policy, task: int) -> str | None:
    """What R2 ``PARTITION`` allows ``task``, for a message; ``None`` when it restricts
    nothing."""
    partitions = problem.machines.partitions
    if policy.authorization != "PARTITION" or not partitions:
        return None
    group = problem.tasks.group[task]
    admitting = [partition.name for partition in partitions if partition.admits(group)]
    who = f"group {group!r}" if group is not None else "a task without a group"
    return (f"{who} is admitted to partition(s) {', '.join(admitting)}" if admitting
            else f"no partition admits {who}")


def _position(tasks: TaskTable, task: int) -> tuple[int, int]:
    """The task's job index and its index within that job (jobs are consecutive runs)."""
    job, first = tasks.job[task], task
    while first > 0 and tasks.job[first - 1] == job:
        first -= 1
    return job, task - first


# --------------------------------------------------------------------------- R4


class MachineFilter(Protocol):
    """R4: the usable machines with the task's resources free now."""

    def bind(self, state: CycleState, allowed: Allowed | None) -> Candidates: ...


class FreeResources:
    """Enough free cores and, when the problem schedules them, enough free units of every
    other resource the task asks for (``fitting.free_resources``)."""

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
