"""Compile a model ``Workload`` and ``Environment`` into the flat tables the engine runs on,
and diagnose, before any simulation, every workload that could not finish.

The engine works on integer indices and plain lists (no per-task objects) because the SC18
traces have tens of thousands of tasks and a run must take well under a second.

Cores are counted in hundredths (``CORE_UNITS`` per core) so that fractional requests
(Haizea CPU 50 = half a core) add and subtract exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from dcx.converters.diagnostics import Diagnostic, error, warning
from dcx.formats.model import (
    Environment,
    Id,
    Machine,
    MachineState,
    MachineStateChange,
    Task,
    Workload,
)

CORE_UNITS = 100
"""Core amounts are stored as integer hundredths of a core."""

ENVIRONMENT_CODES = frozenset(
    {"schedule.no-machines", "schedule.unknown-machine", "schedule.untimed-event"}
)
"""Diagnostics about the environment rather than the workload."""


@dataclass(frozen=True)
class MachineTable:
    """Machines in topology order (the tie-break order of every placement policy)."""

    ids: tuple[Id | None, ...]
    labels: tuple[str, ...]
    capacity: tuple[int, ...]
    """Cores in ``CORE_UNITS``."""
    clock_mhz: tuple[float | None, ...]
    initially_active: tuple[bool, ...]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class StateChange:
    """A machine state event resolved to a machine index."""

    time_s: float
    machine: int
    state: MachineState


@dataclass
class TaskTable:
    """Tasks in model order (jobs in order, tasks in order): the creation order that breaks
    ties between tasks submitted at the same time."""

    ids: list[Id] = field(default_factory=list)
    job: list[int] = field(default_factory=list)
    submit_s: list[float] = field(default_factory=list)
    runtime_s: list[float] = field(default_factory=list)
    need: list[int] = field(default_factory=list)
    """Cores per node in ``CORE_UNITS``."""
    nodes: list[int] = field(default_factory=list)
    parents: list[tuple[int, ...]] = field(default_factory=list)
    children: list[list[int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Problem:
    """Everything a simulation needs, already checked."""

    tasks: TaskTable
    job_ids: tuple[Id, ...]
    machines: MachineTable
    state_changes: tuple[StateChange, ...]


@dataclass(frozen=True)
class CompileResult:
    problem: Problem | None
    diagnostics: tuple[Diagnostic, ...]


def _task_pointer(job_index: int, task_index: int) -> str:
    return f"/jobs/{job_index}/tasks/{task_index}"


def _source_line(source_map: Mapping[str, tuple[int, int | None]], pointer: str) -> int | None:
    """The input line the reader recorded for the task at ``pointer``
    (``ReadResult.source_map``, keyed by ``/workload`` + the task's pointer)."""
    return source_map.get("/workload" + pointer, (None, None))[0]


@dataclass(frozen=True)
class _Located:
    """Where a task came from, for diagnostics."""

    pointer: str
    line: int | None
    label: str


def compile_machines(environment: Environment) -> tuple[MachineTable, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    machines: list[Machine] = list(environment.machines())
    ids = tuple(machine.id for machine in machines)
    labels = tuple(
        str(machine.id if machine.id is not None else machine.name or f"#{index}")
        for index, machine in enumerate(machines)
    )
    capacity = tuple(round(machine.core_count * CORE_UNITS) for machine in machines)
    clocks = tuple(
        machine.clock_rate_hz / 1e6 if machine.clock_rate_hz else None for machine in machines
    )
    active = tuple(machine.state is MachineState.ACTIVE for machine in machines)
    if not any(cap > 0 for cap in capacity):
        diagnostics.append(
            error(
                "the environment has no machine with CPU cores to schedule on",
                "schedule.no-machines",
            )
        )
    return MachineTable(ids, labels, capacity, clocks, active), diagnostics


def compile_state_changes(
    environment: Environment, machines: MachineTable
) -> tuple[tuple[StateChange, ...], list[Diagnostic]]:
    by_id: dict[Id, int] = {}
    for index, machine_id in enumerate(machines.ids):
        if machine_id is not None:
            by_id.setdefault(machine_id, index)
    changes: list[StateChange] = []
    diagnostics: list[Diagnostic] = []
    for index, event in enumerate(environment.events):
        if not isinstance(event, MachineStateChange):
            continue
        pointer = f"/events/{index}"
        machine = by_id.get(event.machine)
        if machine is None:
            diagnostics.append(
                error(
                    f"state event names machine {event.machine!r}, which the environment "
                    "does not have",
                    "schedule.unknown-machine",
                    pointer=pointer,
                )
            )
            continue
        if event.time_s is None or not math.isfinite(event.time_s):
            diagnostics.append(
                warning(
                    f"state event for machine {event.machine!r} has no time; ignored",
                    "schedule.untimed-event",
                    pointer=pointer,
                )
            )
            continue
        changes.append(StateChange(event.time_s, machine, event.state))
    changes.sort(key=lambda change: change.time_s)
    return tuple(changes), diagnostics


def _duration_of(task: Task) -> float | None:
    """The real duration if known, else the requested one (Haizea leases without a
    measured runtime run for their requested duration)."""
    if task.runtime_s is not None:
        return task.runtime_s
    return task.requested_time_s


def _resolve_dependencies(
    workload: Workload, table: TaskTable, located: list[_Located]
) -> list[Diagnostic]:
    """Dependency ids are looked up in the task's own job first (formats with per-job ids),
    then across the workload (GWF's trace-wide ids) when that id is unique."""
    diagnostics: list[Diagnostic] = []
    global_ids: dict[Id, int] = {}
    ambiguous: set[Id] = set()
    per_job: list[dict[Id, int]] = []
    index = 0
    for job in workload.jobs:
        local: dict[Id, int] = {}
        for task in job.tasks:
            if task.id in local:
                where = located[index]
                diagnostics.append(
                    error(
                        f"task id {task.id!r} appears twice in job {job.id!r}",
                        "schedule.duplicate-task-id",
                        pointer=where.pointer,
                        line=where.line,
                    )
                )
            local.setdefault(task.id, index)
            if task.id in global_ids:
                ambiguous.add(task.id)
            else:
                global_ids[task.id] = index
            index += 1
        per_job.append(local)

    index = 0
    for job_index, job in enumerate(workload.jobs):
        local = per_job[job_index]
        for task in job.tasks:
            parents: list[int] = []
            for dependency in task.dependencies:
                parent = local.get(dependency)
                if parent is None and dependency not in ambiguous:
                    parent = global_ids.get(dependency)
                if parent is None:
                    where = located[index]
                    reason = "is ambiguous" if dependency in ambiguous else "does not exist"
                    diagnostics.append(
                        error(
                            f"{where.label} depends on task {dependency!r}, which {reason}",
                            "schedule.unknown-dependency",
                            pointer=where.pointer,
                            line=where.line,
                        )
                    )
                    continue
                parents.append(parent)
            unique = tuple(dict.fromkeys(parents))
            table.parents[index] = unique
            for parent in unique:
                table.children[parent].append(index)
            index += 1
    return diagnostics


def _find_cycle(parents: list[tuple[int, ...]], stuck: set[int]) -> list[int]:
    """One dependency cycle among the ``stuck`` tasks (those Kahn's algorithm never freed)."""
    start = min(stuck)
    seen_at: dict[int, int] = {}
    path: list[int] = []
    node = start
    while node not in seen_at:
        seen_at[node] = len(path)
        path.append(node)
        # every stuck task has at least one stuck parent, otherwise it would have been freed
        node = next(parent for parent in parents[node] if parent in stuck)
    return path[seen_at[node] :]


def _cycle_diagnostics(table: TaskTable, located: list[_Located]) -> list[Diagnostic]:
    pending = [len(parents) for parents in table.parents]
    frontier = [index for index, count in enumerate(pending) if count == 0]
    freed = 0
    while frontier:
        node = frontier.pop()
        freed += 1
        for child in table.children[node]:
            pending[child] -= 1
            if pending[child] == 0:
                frontier.append(child)
    if freed == len(table):
        return []
    stuck = {index for index, count in enumerate(pending) if count > 0}
    cycle = _find_cycle(table.parents, stuck)
    first = located[cycle[0]]
    chain = " -> ".join(repr(table.ids[node]) for node in [*cycle, cycle[0]])
    return [
        error(
            f"dependency cycle {chain} ({len(stuck)} task(s) can never start)",
            "schedule.dependency-cycle",
            pointer=first.pointer,
            line=first.line,
        )
    ]


def _check_task(
    task: Task, where: _Located, machines: MachineTable, duration: float | None
) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []

    def report(message: str, code: str) -> None:
        diagnostics.append(
            error(f"{where.label} {message}", code, pointer=where.pointer, line=where.line)
        )

    if duration is None:
        report("has neither a runtime nor a requested time", "schedule.missing-runtime")
    elif not math.isfinite(duration):
        report(f"has a non-finite runtime ({duration})", "schedule.bad-runtime")
    elif duration < 0:
        report(f"has a negative runtime ({duration:g} s)", "schedule.negative-runtime")
    if not math.isfinite(task.submit_time_s):
        report(f"has a non-finite submit time ({task.submit_time_s})", "schedule.bad-submit")
    request = task.request
    if request.nodes < 1 or request.cores <= 0 or not math.isfinite(request.cores):
        report(
            f"requests {request.nodes} node(s) x {request.cores:g} core(s); both must be "
            "positive",
            "schedule.bad-request",
        )
        return diagnostics
    if not any(machines.capacity):
        return diagnostics  # reported once as schedule.no-machines
    need = round(request.cores * CORE_UNITS)
    fitting = sum(1 for capacity in machines.capacity if capacity >= need)
    if fitting < request.nodes:
        largest = max(machines.capacity, default=0) / CORE_UNITS
        report(
            f"needs {request.nodes} machine(s) with {request.cores:g} core(s) each, but "
            f"only {fitting} machine(s) have that many (largest: {largest:g} cores)",
            "schedule.too-many-cores",
        )
    return diagnostics


def compile_problem(workload: Workload, environment: Environment,
                    source_map: Mapping[str, tuple[int, int | None]] | None = None,
                    ) -> CompileResult:
    """Check the workload against the environment and build the engine's tables.

    Every problem that would make a run hang or crash (a dependency cycle, an unknown
    dependency, a task larger than any machine, a negative or missing runtime) is an
    error here, with the task's pointer and, when the reader recorded it, its line.
    """
    machines, diagnostics = compile_machines(environment)
    changes, change_diagnostics = compile_state_changes(environment, machines)
    diagnostics.extend(change_diagnostics)

    table = TaskTable()
    located: list[_Located] = []
    for job_index, job in enumerate(workload.jobs):
        for task_index, task in enumerate(job.tasks):
            pointer = _task_pointer(job_index, task_index)
            where = _Located(
                pointer,
                _source_line(source_map or {}, pointer),
                f"task {task.id!r} of job {job.id!r}",
            )
            duration = _duration_of(task)
            diagnostics.extend(_check_task(task, where, machines, duration))
            located.append(where)
            table.ids.append(task.id)
            table.job.append(job_index)
            table.submit_s.append(task.submit_time_s)
            table.runtime_s.append(duration if duration is not None else 0.0)
            table.need.append(max(1, round(task.request.cores * CORE_UNITS)))
            table.nodes.append(max(1, task.request.nodes))
            table.parents.append(())
            table.children.append([])

    diagnostics.extend(_resolve_dependencies(workload, table, located))
    # unresolved dependencies were dropped above, so they cannot fake a cycle here
    diagnostics.extend(_cycle_diagnostics(table, located))

    if any(d.is_error for d in diagnostics):
        return CompileResult(None, tuple(diagnostics))
    problem = Problem(table, tuple(job.id for job in workload.jobs), machines, changes)
    return CompileResult(problem, tuple(diagnostics))

