"""Compile a model ``Workload`` and ``Environment`` into the flat tables the engine runs on,
and diagnose, before any simulation, every workload that could not finish.

The engine works on integer indices and plain lists (no per-task objects) because the SC18
traces have tens of thousands of tasks and a run must take well under a second.

Cores are counted in hundredths (``CORE_UNITS`` per core) so that fractional requests
(Haizea CPU 50 = half a core) add and subtract exactly.

Resources beyond cores
----------------------

Every per-node resource the workload asks for is a scheduling dimension next to cores, so
a task is placed only on machines with enough free cores *and* enough of each of them.
Amounts are integers so that placing and releasing add and subtract exactly:

* **memory** in whole MB (``Machine.memory_mb`` against ``ResourceRequest.memory_mb``,
  both rounded to the nearest MB). Memory is enforced only when the environment declares
  memory on at least one machine; a machine without memory modules then has 0 MB. When
  tasks request memory and no machine declares any, memory is not scheduled and one
  ``schedule.memory-not-enforced`` warning says so (SWF and GWF traces often carry memory,
  OpenDC ``setup.json`` topologies never do: those runs are scheduled on cores alone).
* **GPUs** as whole devices (``Machine.gpu_count`` against ``ResourceRequest.gpus``). A
  machine that declares none has 0.
* **named resources** (Haizea ``Disk``, ``Net-in``, SSS ``<Resource>``…) matched by exact,
  case-sensitive name and counted in thousandths of their own unit (``NAMED_UNITS``),
  rounded to the nearest thousandth; units are not converted. A machine that does not
  declare a name has 0 of it. Several entries of one name on a machine or in a request add
  up. The capacity of a multi-instance resource is the sum of its instances: which
  instance a task would use (Haizea's per-instance first-fit packing) is not modelled. A
  request's ``CPU`` and ``Memory`` named resources are not extra dimensions: the model keeps
  them there only as the per-instance breakdown of ``cores`` and ``memory_mb`` (how the
  Haizea reader stores multi-instance amounts). Likewise a machine without CPUs that
  declares a ``CPU`` named resource (a Haizea node whose CPU is not whole cores) has that
  many cores, in Haizea units (100 = one core).

A dimension exists only when at least one task asks for a positive amount of it: a workload
that asks only for cores compiles to a problem without extra dimensions, and the engine then
runs its cores-only loop. A task whose per-node demand fits on fewer than ``nodes``
machines (counting every machine of the environment, whatever its initial state) is an
error: ``schedule.too-many-cores`` when cores alone do not fit,
``schedule.insufficient-resource`` when another resource (or the combination) does not.

Cores anywhere
--------------

A request of ``Placement.CORES`` (SWF and GWF processors) asks for ``nodes x cores`` cores
packed onto any machines, each core bringing its share of the request's memory (and of
any other resource). It compiles to one "node" of all its cores (``TaskTable.anywhere``);
how the cores are laid onto machines is ``scheduler/packing.py``. It fits the environment
when all the machines together can hold its cores with their share of every other
resource (``schedule.too-many-cores`` otherwise).

Machine requirements
--------------------

What a task asks of its machines' operating system, architecture and features
(``ResourceRequest.os``, ``arch``, ``features``) is kept per task (``TaskTable.asks``); it
restricts nothing here, since R3 (``resource_stages.py``) decides whether a scheduler honours
it. ``MachineRequirements`` is the one rule for meeting it.

Partitions
----------

The environment's partitions (``Environment.partitions``: Slurm's) are kept as
``PartitionAccess`` entries of the machine table, each with its machines' indices, and each
task's group (``Task.group``) in ``TaskTable.group``; they restrict nothing here, since R2
(``resource_stages.py``) decides whether a scheduler honours them. ``PartitionAccess.admits``
is the one rule for who a partition admits.

Start times and deadlines
-------------------------

A task with ``StartMode.EXACT`` (a Haizea AR lease) is released at its ``start_time_s``
(its submit time when that is later): it is not eligible before, and the time models align
the release like an arrival. Haizea would reserve the nodes in advance and preempt
best-effort leases to honour the reservation; dcx does not preempt, so an AR lease starts at
its start time only if the machines are free then. ``deadline_s`` is carried to the
metrics, which count the tasks that finish after it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import Any, Literal

from dcx.core.codes import Code
from dcx.core.columns import WorkloadColumns, all_distinct, columns_of
from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.core.groups import MachineGroup, machine_parts, part_count, part_template
from dcx.core.model import (
    Environment,
    Id,
    Machine,
    MachineState,
    MachineStateChange,
    NamedResource,
    Partition,
    Placement,
    ResourceRequest,
    StartMode,
    Task,
    Workload,
)

CORE_UNITS = 100
"""Core amounts are stored as integer hundredths of a core."""
MEMORY_UNITS = 1
"""Memory is stored in whole MB."""
GPU_UNITS = 1
"""GPUs are stored as whole devices."""
NAMED_UNITS = 1000
"""Named-resource amounts are stored as integer thousandths of their own unit."""
HAIZEA_CPU_PER_CORE = 100
"""Haizea ``CPU`` amounts are percent of one core."""
BREAKDOWN_NAMES = frozenset({"CPU", "Memory"})
"""Request resources that only break ``cores``/``memory_mb`` down into instances."""

ENVIRONMENT_CODES = frozenset(
    {"schedule.no-machines", "schedule.unknown-machine", "schedule.untimed-event"}
)
"""Diagnostics about the environment rather than the workload."""

CODES = (
    Code("schedule.no-machines", "error",
         "The environment has no machine with CPU cores to schedule on."),
    Code("schedule.unknown-machine", "error",
         "A machine state event names a machine the environment does not have."),
    Code("schedule.untimed-event", "warning",
         "A machine state event has no time; the scheduler ignores it."),
    Code("schedule.duplicate-task-id", "error", "Two tasks of one job have the same id."),
    Code("schedule.unknown-dependency", "error",
         "A task depends on a task id that does not exist, or that several jobs use."),
    Code("schedule.dependency-cycle", "error",
         "Tasks depend on each other in a cycle, so none of them can ever start."),
    Code("schedule.memory-not-enforced", "warning",
         "Tasks request memory but no machine declares any: memory is not scheduled."),
    Code("schedule.missing-runtime", "error",
         "A task has neither a runtime nor a requested time."),
    Code("schedule.runtime-from-request", "warning",
         "Tasks have no runtime (SWF -1: cancelled before they ran, or not recorded); each "
         "runs for its requested time instead."),
    Code("schedule.bad-runtime", "error", "A task's runtime is not finite."),
    Code("schedule.negative-runtime", "error", "A task's runtime is negative."),
    Code("schedule.bad-submit", "error", "A task's submit time is not finite."),
    Code("schedule.bad-start", "error", "A task's fixed start time is not finite."),
    Code("schedule.bad-request", "error",
         "A task requests no nodes or cores, or a negative or non-finite amount of memory, "
         "GPUs or a named resource."),
    Code("schedule.too-many-cores", "error",
         "A task needs more machines with its core count than the environment has."),
    Code("schedule.insufficient-resource", "error",
         "A task needs more machines with its memory, GPUs or named resources (alone or "
         "together with its cores) than the environment has."),
    Code("schedule.no-allowed-machine", "error",
         "Under a scheduler's R2/R3 filters (the partitions that admit the task's group; "
         "the os, architecture and features the task or the operator asks for) fewer "
         "machines that could hold a task are left than it needs (for cores anywhere: "
         "fewer cores in total): it could never start."),
    Code("schedule.partitions-ignored", "warning",
         "The environment has partitions (who may use which machines), and a scheduler's "
         "R2 policy (ALL) does not restrict tasks to the partitions that admit them."),
    Code("schedule.requirements-ignored", "warning",
         "Tasks ask for an os, architecture or features, and a scheduler's R3 policy (ALL) "
         "does not filter machines on them."),
)


DimensionKind = Literal["memory", "gpus", "named"]


@dataclass(frozen=True)
class Dimension:
    """A resource scheduled beside cores."""

    kind: DimensionKind
    name: str
    """``memory``, ``gpus`` or the named resource's name."""
    scale: int
    """Integer units per model unit (MB, device, unit of the named resource)."""

    def amount(self, units: int) -> str:
        """``units`` in the model's unit, for messages."""
        value = f"{units / self.scale:g}"
        if self.kind == "memory":
            return f"{value} MB of memory"
        if self.kind == "gpus":
            return f"{value} GPU(s)"
        return f"{value} of resource {self.name!r}"


@dataclass(frozen=True)
class PartitionAccess:
    """A partition as R2 reads it: its machines (indices, topology order) and who it
    admits. An allow list ``None`` admits everyone. Tasks carry a group but no account or
    QoS: a partition that lists the accounts or QoS it allows admits no task, and deny
    lists deny none."""

    name: str
    machines: tuple[int, ...]
    allow_groups: frozenset[str] | None = None
    allow_accounts: frozenset[str] | None = None
    allow_qos: frozenset[str] | None = None

    def admits(self, group: str | None) -> bool:
        """Whether a task of ``group`` (``None``: it names none) may use the partition."""
        return ((self.allow_groups is None or group in self.allow_groups)
                and self.allow_accounts is None and self.allow_qos is None)

    @classmethod
    def of(cls, partition: Partition, indices: dict[str, list[int]],
           every: tuple[int, ...]) -> PartitionAccess:
        """``partition`` over the machines whose names ``indices`` maps to their indices
        (``every``: all of them, for a partition of every machine). A name no machine has
        adds none."""
        if partition.machines is None:
            machines = every
        else:
            machines = tuple(sorted({m for name in partition.machines
                                     for m in indices.get(name, ())}))

        def listed(names: tuple[str, ...] | None) -> frozenset[str] | None:
            return None if names is None else frozenset(names)

        return cls(partition.name, machines, listed(partition.allow_groups),
                   listed(partition.allow_accounts), listed(partition.allow_qos))


@dataclass(frozen=True)
class MachineTable:
    """Machines in topology order (the tie-break order of every placement policy)."""

    ids: tuple[Id | None, ...]
    labels: tuple[str, ...]
    capacity: tuple[int, ...]
    """Cores in ``CORE_UNITS``."""
    clock_mhz: tuple[float | None, ...]
    initially_active: tuple[bool, ...]
    integer_clock_mhz: tuple[int | None, ...] = ()
    """The sc18 simulator's machine speed: ``sum(MHz x cores) // cores`` on whole numbers
    (its Long arithmetic), where ``clock_mhz`` is the exact core-weighted mean. Empty: the
    same as ``clock_mhz``."""
    dimensions: tuple[Dimension, ...] = ()
    """Resources scheduled beside cores; empty for a cores-only problem."""
    extra_capacity: tuple[tuple[int, ...], ...] = ()
    """Per dimension (same order as ``dimensions``), the capacity of every machine in the
    dimension's integer units."""
    os: tuple[str | None, ...] = ()
    arch: tuple[str | None, ...] = ()
    features: tuple[tuple[str, ...], ...] = ()
    """``Machine.os``, ``arch`` and ``features`` per machine, for R2/R3 static filters."""
    partitions: tuple[PartitionAccess, ...] = ()
    """The environment's partitions, for R2 (empty: it has none)."""

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class MachineRequirements:
    """What a task (``ResourceRequest.os``, ``arch``, ``features``) or an operator (a
    scheduler declaration's ``machine_requirements``) asks of every machine it may use: its
    ``Machine.os`` and ``arch``, compared without case (a machine that declares none does
    not meet a requirement on it), and every listed feature, by exact name."""

    os: str | None = None
    arch: str | None = None
    features: tuple[str, ...] = ()

    def met_by(self, os: str | None, arch: str | None, features: tuple[str, ...]) -> bool:
        return (_same_word(self.os, os) and _same_word(self.arch, arch)
                and all(feature in features for feature in self.features))

    def machines(self, machines: MachineTable) -> list[int]:
        """The machines (topology order) that meet these requirements."""
        count = len(machines)
        os = machines.os or (None,) * count
        arch = machines.arch or (None,) * count
        features = machines.features or ((),) * count
        return [m for m in range(count) if self.met_by(os[m], arch[m], features[m])]

    def label(self) -> str:
        parts = [f"{key}={value}" for key, value in (("os", self.os), ("arch", self.arch))
                 if value is not None]
        if self.features:
            parts.append("features=" + "|".join(self.features))
        return ",".join(parts)


def _same_word(required: str | None, actual: str | None) -> bool:
    return required is None or (actual is not None and actual.casefold() == required.casefold())


def requirements_of(request: ResourceRequest) -> MachineRequirements | None:
    """What ``request`` asks of its machines, ``None`` when it asks nothing."""
    if request.os is None and request.arch is None and not request.features:
        return None
    return MachineRequirements(request.os, request.arch, tuple(request.features))


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
    release_s: list[float] = field(default_factory=list)
    """Earliest time the task may become eligible: its submit time, or the start time of an
    AR lease (``StartMode.EXACT``) when that is later."""
    demand: list[tuple[tuple[int, int], ...]] = field(default_factory=list)
    """Per node, ``(dimension index, units)`` for every extra dimension the task needs a
    positive amount of; empty for a cores-only task."""
    deadline_s: list[float] = field(default_factory=list)
    """``Task.deadline_s``, NaN when the task has none."""
    requested_s: list[float] = field(default_factory=list)
    """The time the task asked for (SWF field 9, a Haizea lease's duration); its runtime
    where the workload gives none (``requested_from_runtime`` counts those)."""
    requested_from_runtime: int = 0
    """Tasks whose runtime stands in for a requested time the workload does not give."""
    runtime_from_requested: int = 0
    """Tasks of unknown runtime (SWF -1) whose requested time stands in: they run for it."""
    asks: dict[int, MachineRequirements] = field(default_factory=dict)
    """Task index → the os, arch and features it asks of its machines, for the tasks that
    ask any (the R3 policies ``MATCH`` and ``REQUIRE`` honour them); most ask nothing."""
    group: list[str | None] = field(default_factory=list)
    """``Task.group`` per task, for the R2 policy ``PARTITION``; empty when the
    environment has no partitions."""
    anywhere: bytearray = field(default_factory=bytearray)
    """1 for a task whose cores may go on any machines (``Placement.CORES``): its ``need``
    is then all its cores, ``nodes`` is 1 and ``demand`` its totals, spread over the
    machines it gets in proportion to the cores each holds (``scheduler/packing.py``).
    Empty when no task is one."""

    def __len__(self) -> int:
        return len(self.ids)

    def is_anywhere(self, task: int) -> bool:
        anywhere = self.anywhere
        return bool(anywhere) and bool(anywhere[task])


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


def _core_units(machine: Machine) -> int:
    """Cores in ``CORE_UNITS``. A machine without CPUs may declare its CPU as a ``CPU``
    named resource in Haizea units (100 = one core: how the Haizea reader keeps node CPU
    amounts that are not whole cores)."""
    if machine.cpus:
        return round(machine.core_count * CORE_UNITS)
    haizea_cpu = _named_totals(r for r in machine.resources if r.name == "CPU").get("CPU", 0.0)
    if not math.isfinite(haizea_cpu) or haizea_cpu <= 0:
        return 0
    return round(haizea_cpu * CORE_UNITS / HAIZEA_CPU_PER_CORE)


def machine_shapes(environment: Environment) -> list[Machine]:
    """What each machine of the table has but its id and name, in topology order: a
    machine group's template once per member, so a group builds no single machines."""
    return [
        template
        for part in machine_parts(environment)
        for template in repeat(part_template(part), part_count(part))
    ]


def _member_ids_and_names(environment: Environment) -> Iterable[tuple[Id | None, str | None]]:
    for part in machine_parts(environment):
        if not isinstance(part, MachineGroup):
            yield part.id, part.name
            continue
        template, count = part.template, part.count
        ids = part.ids if part.ids is not None else repeat(template.id, count)
        names = part.names if part.names is not None else repeat(template.name, count)
        yield from zip(ids, names, strict=False)


def compile_machines(environment: Environment) -> tuple[MachineTable, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    machines = machine_shapes(environment)
    members = list(_member_ids_and_names(environment))
    ids = tuple(identity for identity, _ in members)
    labels = tuple(
        str(identity if identity is not None else name or f"#{index}")
        for index, (identity, name) in enumerate(members)
    )
    capacity = tuple(_core_units(machine) for machine in machines)
    clocks = tuple(
        machine.clock_rate_hz / 1e6 if machine.clock_rate_hz else None for machine in machines
    )
    active = tuple(machine.state is MachineState.ACTIVE for machine in machines)
    integer_clocks = tuple(_integer_mean_clock_mhz(machine) for machine in machines)
    if not any(cap > 0 for cap in capacity):
        diagnostics.append(
            error(
                "the environment has no machine with CPU cores to schedule on",
                "schedule.no-machines",
            )
        )
    table = MachineTable(ids, labels, capacity, clocks, active, integer_clocks,
                         os=tuple(m.os for m in machines), arch=tuple(m.arch for m in machines),
                         features=tuple(m.features for m in machines),
                         partitions=_partitions(environment, [name for _, name in members]))
    return table, diagnostics


def _partitions(environment: Environment,
                names: list[str | None]) -> tuple[PartitionAccess, ...]:
    if not environment.partitions:
        return ()
    indices: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        if name is not None:
            indices.setdefault(name, []).append(index)
    every = tuple(range(len(names)))
    return tuple(PartitionAccess.of(partition, indices, every)
                 for partition in environment.partitions)


def _integer_mean_clock_mhz(machine: Machine) -> int | None:
    """The sc18 machine speed: ``sum(clockRate x cores) / cores`` in whole MHz with integer
    division, as the simulator computed it (``Machine.clock_rate_hz`` is the exact mean)."""
    rated = [(cpu.cores, round(cpu.clock_rate_hz / 1e6)) for cpu in machine.cpus
             if cpu.clock_rate_hz]
    cores = sum(count for count, _ in rated)
    if not cores:
        return None
    return sum(count * mhz for count, mhz in rated) // cores


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


# --------------------------------------------------------------------------- resources


def _named_totals(resources: Iterable[NamedResource]) -> dict[str, float]:
    """Amount per name, instances summed, several entries of one name added up."""
    totals: dict[str, float] = {}
    for resource in resources:
        amount = math.fsum(resource.instances) if resource.instances else resource.amount
        totals[resource.name] = totals.get(resource.name, 0.0) + amount
    return totals


def _request_named(request: ResourceRequest) -> dict[str, float]:
    return _named_totals(r for r in request.resources if r.name not in BREAKDOWN_NAMES)


def _units(amount: float, scale: int) -> int:
    return round(amount * scale)


@dataclass
class _Requested:
    """Which resources beside cores the workload asks a positive amount of."""

    memory_tasks: int = 0
    first_memory: int | None = None
    """Task index (model order) of the first task asking for memory."""
    gpus: bool = False
    names: dict[str, None] = field(default_factory=dict)
    """Named resources in order of first request."""


def _requested_resources(tasks: Iterable[Task]) -> _Requested:
    requested = _Requested()
    for index, task in enumerate(tasks):
        request = task.request
        memory = request.memory_mb
        if memory is not None and memory > 0:
            requested.memory_tasks += 1
            if requested.first_memory is None:
                requested.first_memory = index
        if request.gpus > 0:
            requested.gpus = True
        if request.resources:
            for name, amount in _request_named(request).items():
                if amount > 0:
                    requested.names.setdefault(name, None)
    return requested


def _with_dimensions(
    table: MachineTable, machines: list[Machine], requested: _Requested
) -> MachineTable:
    """``table`` with a dimension (and every machine's capacity in it) for each resource the
    workload asks for and the environment can enforce."""
    dimensions: list[Dimension] = []
    capacity: list[tuple[int, ...]] = []
    if requested.memory_tasks and any(machine.memory for machine in machines):
        dimensions.append(Dimension("memory", "memory", MEMORY_UNITS))
        capacity.append(tuple(_units(m.memory_mb, MEMORY_UNITS) for m in machines))
    if requested.gpus:
        dimensions.append(Dimension("gpus", "gpus", GPU_UNITS))
        capacity.append(tuple(m.gpu_count * GPU_UNITS for m in machines))
    if requested.names:
        declared = [_named_totals(machine.resources) for machine in machines]
        for name in requested.names:
            dimensions.append(Dimension("named", name, NAMED_UNITS))
            capacity.append(tuple(_units(max(0.0, totals.get(name, 0.0)), NAMED_UNITS)
                                  for totals in declared))
    if not dimensions:
        return table
    return replace(table, dimensions=tuple(dimensions), extra_capacity=tuple(capacity))


def _dimension_index(dimensions: tuple[Dimension, ...]) -> dict[tuple[str, str], int]:
    return {(dimension.kind, dimension.name): index
            for index, dimension in enumerate(dimensions)}


def _task_demand(
    request: ResourceRequest, index: Mapping[tuple[str, str], int], nodes: int = 1
) -> tuple[tuple[int, int], ...]:
    """``(dimension index, units)`` of ``nodes`` nodes (a whole-node task: 1, per node; a
    cores-anywhere task: all of them) for the positive amounts the problem schedules."""
    demand: list[tuple[int, int]] = []
    memory = index.get(("memory", "memory"))
    if memory is not None and request.memory_mb and request.memory_mb > 0:
        units = _units(request.memory_mb * nodes, MEMORY_UNITS)
        if units > 0:
            demand.append((memory, units))
    gpus = index.get(("gpus", "gpus"))
    if gpus is not None and request.gpus > 0:
        demand.append((gpus, request.gpus * nodes * GPU_UNITS))
    if request.resources:
        for name, amount in _request_named(request).items():
            named = index.get(("named", name))
            units = _units(amount * nodes, NAMED_UNITS) if math.isfinite(amount) else 0
            if named is not None and units > 0:
                demand.append((named, units))
    return tuple(demand)


def _runtime_from_request(count: int, total: int) -> Diagnostic:
    return warning(
        f"{count} of {total} task(s) have no runtime (SWF -1); each runs for its requested "
        "time instead", "schedule.runtime-from-request",
        hint="drop them from the trace (e.g. the cancelled jobs) to leave them out")


def _memory_not_enforced(requested: _Requested, located: list[_Located]) -> Diagnostic:
    first = located[requested.first_memory or 0]
    others = requested.memory_tasks - 1
    who = first.label + (f" and {others} other task(s)" if others else "")
    return warning(
        f"{who} {'ask' if others else 'asks'} for memory, but no machine of the environment "
        "declares memory: memory is not scheduled (cores and any other requested resource "
        "still are)",
        "schedule.memory-not-enforced",
        pointer=first.pointer,
        line=first.line,
        hint="give the machines memory in the environment to schedule it",
    )


class _FitCounter:
    """How many machines could hold one node of a task, per demand shape (traces repeat a
    few shapes, so each is counted once)."""

    def __init__(self, machines: MachineTable) -> None:
        self._machines = machines
        self._cache: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}

    def count(self, need: int, demand: tuple[tuple[int, int], ...]) -> int:
        key = (need, demand)
        found = self._cache.get(key)
        if found is None:
            capacity, extra = self._machines.capacity, self._machines.extra_capacity
            found = sum(
                1 for machine in range(len(capacity))
                if capacity[machine] >= need
                and all(extra[dimension][machine] >= units for dimension, units in demand)
            )
            self._cache[key] = found
        return found

    def cores_anywhere(self, need: int, demand: tuple[tuple[int, int], ...]) -> int:
        """How many core units all the machines together could give a cores-anywhere task
        of ``need`` units asking ``demand`` in all (each core bringing its share)."""
        key = (-need, demand)
        found = self._cache.get(key)
        if found is None:
            capacity, extra = self._machines.capacity, self._machines.extra_capacity
            found = sum(share_limit(capacity[machine], need, demand, extra, machine)
                        for machine in range(len(capacity)))
            self._cache[key] = found
        return found


def share_limit(free: int, need: int, demand: tuple[tuple[int, int], ...],
                extra: Sequence[Sequence[int]], machine: int) -> int:
    """The core units (whole cores, or all of ``need`` when it is less) a machine with
    ``free`` units and ``extra[d][machine]`` free of every other dimension can give a
    cores-anywhere task of ``need`` units asking ``demand`` in all: each core brings its
    proportional share of every dimension, rounded up."""
    limit = free if free >= need else free - free % CORE_UNITS
    for dimension, units in demand:
        available = extra[dimension][machine]
        if units > 0:
            # the most cores whose share, units x cores / need rounded up, fits
            cores = available * need // units
            limit = min(limit, cores if cores >= need else cores - cores % CORE_UNITS)
    return max(0, limit)


def _bad_amounts(request: ResourceRequest) -> str | None:
    """What is wrong with the non-core amounts of ``request``, or ``None``."""
    memory = request.memory_mb
    if memory is not None and (not math.isfinite(memory) or memory < 0):
        return f"requests {memory:g} MB of memory per node; it must be finite and not negative"
    if request.gpus < 0:
        return f"requests {request.gpus} GPU(s) per node; it must not be negative"
    if not request.resources:
        return None
    for name, amount in _request_named(request).items():
        if not math.isfinite(amount) or amount < 0:
            return (f"requests {amount:g} of resource {name!r} per node; it must be finite "
                    "and not negative")
    return None


# --------------------------------------------------------------------------- checks


def _check_task(
    task: Task,
    where: _Located,
    machines: MachineTable,
    duration: float | None,
    demand: tuple[tuple[int, int], ...],
    fits: _FitCounter,
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
    if (task.start_mode is StartMode.EXACT and task.start_time_s is not None
            and not math.isfinite(task.start_time_s)):
        report(f"has a non-finite start time ({task.start_time_s})", "schedule.bad-start")
    request = task.request
    if request.nodes < 1 or request.cores <= 0 or not math.isfinite(request.cores):
        report(
            f"requests {request.nodes} node(s) x {request.cores:g} core(s); both must be "
            "positive",
            "schedule.bad-request",
        )
        return diagnostics
    bad_amounts = _bad_amounts(request)
    if bad_amounts is not None:
        report(bad_amounts, "schedule.bad-request")
        return diagnostics
    if not any(machines.capacity):
        return diagnostics  # reported once as schedule.no-machines
    if request.placement is Placement.CORES:
        total = round(request.nodes * request.cores * CORE_UNITS)
        if fits.cores_anywhere(total, demand) < total:
            available = fits.cores_anywhere(total, ()) / CORE_UNITS
            report(f"needs {total / CORE_UNITS:g} core(s) anywhere, but all the machines "
                   f"together can give it only {fits.cores_anywhere(total, demand) / CORE_UNITS:g}"
                   f" ({available:g} cores in all)",
                   "schedule.too-many-cores" if available < total / CORE_UNITS
                   else "schedule.insufficient-resource")
        return diagnostics
    need = round(request.cores * CORE_UNITS)
    if fits.count(need, demand) >= request.nodes:
        return diagnostics
    fitting = fits.count(need, ())
    if fitting < request.nodes:
        largest = max(machines.capacity, default=0) / CORE_UNITS
        report(
            f"needs {request.nodes} machine(s) with {request.cores:g} core(s) each, but "
            f"only {fitting} machine(s) have that many (largest: {largest:g} cores)",
            "schedule.too-many-cores",
        )
        return diagnostics
    short = False
    for dimension_index, units in demand:
        dimension = machines.dimensions[dimension_index]
        capacity = machines.extra_capacity[dimension_index]
        fitting = sum(1 for amount in capacity if amount >= units)
        if fitting < request.nodes:
            short = True
            report(
                f"needs {request.nodes} machine(s) with {dimension.amount(units)} each, but "
                f"only {fitting} machine(s) have that much (largest: "
                f"{dimension.amount(max(capacity, default=0))})",
                "schedule.insufficient-resource",
            )
    if not short:
        wanted = ", ".join(
            [f"{request.cores:g} core(s)"]
            + [machines.dimensions[d].amount(units) for d, units in demand])
        report(
            f"needs {request.nodes} machine(s) each with {wanted}, but only "
            f"{fits.count(need, demand)} machine(s) have all of them at once",
            "schedule.insufficient-resource",
        )
    return diagnostics


def _release_of(task: Task) -> float:
    """When the task may become eligible: an AR lease not before its start time."""
    start = task.start_time_s
    if task.start_mode is StartMode.EXACT and start is not None and math.isfinite(start):
        return max(task.submit_time_s, start)
    return task.submit_time_s


def _table_of_columns(columns: WorkloadColumns, machines: MachineTable) -> TaskTable | None:
    """The task table the loop below builds, from a workload held as columns, when that loop
    would report nothing about any task; ``None`` (the loop runs) at anything it might
    report, any resource beside cores or a machine requirement (the loop keeps those in
    ``TaskTable.asks``): memory or GPUs asked for, a task without a usable
    duration, submit time or request, one that no machine fits, repeated ids, a dependency
    that is not on an earlier task."""
    import numpy as np

    if any(strings is not None and strings.count_known()
           for strings in (columns.os, columns.arch, columns.feature_names)):
        return None
    count = len(columns)
    runtime, asked = columns.runtime_s, columns.requested_time_s
    duration: Any = np.where(np.isnan(runtime), asked, runtime)  # (an array, not where's tuple)
    submit, cores, nodes = columns.submit_time_s, columns.cores, columns.nodes
    memory = columns.memory_mb
    if (np.any(~np.isnan(memory) & (memory != 0)) or np.any(columns.gpus != 0)
            or not np.all(np.isfinite(duration)) or np.any(duration < 0)
            or not np.all(np.isfinite(submit)) or np.any(nodes < 1)
            or not np.all(np.isfinite(cores)) or np.any(cores <= 0)
            or not any(machines.capacity)):
        return None
    anywhere = _anywhere_rows(columns)
    if anywhere is not None:
        nodes = np.where(anywhere, 1, nodes)
        cores = np.where(anywhere, columns.nodes * cores, cores)
    need = np.round(cores * CORE_UNITS).astype(np.int64)
    capacity = np.sort(np.array(machines.capacity, dtype=np.int64))
    fitting = len(capacity) - np.searchsorted(capacity, need, side="left")
    if anywhere is not None:
        # cores anywhere fit on one machine, or in the whole cores of all of them together
        whole = int((capacity - capacity % CORE_UNITS).sum())
        if np.any(anywhere & (need > int(capacity.max())) & (need > whole)):
            return None
        fitting = np.where(anywhere, nodes, fitting)
    if np.any(fitting < nodes):
        return None
    ids = columns.ids
    if not all_distinct(ids):
        return None
    parents = _parents_of_columns(columns)
    if parents is None:
        return None
    table = TaskTable()
    table.ids = ids.tolist()
    table.job = np.repeat(np.arange(columns.job_count), np.diff(columns.job_offsets)).tolist()
    table.submit_s = submit.tolist()
    table.runtime_s = duration.tolist()
    table.need = np.maximum(need, 1).tolist()
    table.nodes = np.maximum(nodes, 1).tolist()
    table.parents = parents
    table.children = [[] for _ in range(count)]
    for child, its_parents in enumerate(parents):
        for parent in its_parents:
            table.children[parent].append(child)
    table.release_s = submit.tolist()
    table.demand = [()] * count
    if anywhere is not None and anywhere.any():
        table.anywhere = bytearray(anywhere.astype(np.uint8).tobytes())
    deadline = columns.deadline_s
    nan = math.nan  # the one NaN object the loop below stores, so tables compare equal
    finite = np.isfinite(deadline)
    table.deadline_s = ([value if value == value else nan
                         for value in np.where(finite, deadline, nan).tolist()]
                        if finite.any() else [nan] * count)  # most traces have none
    usable = np.isfinite(asked) & (asked >= 0)
    table.requested_from_runtime = int(count - np.count_nonzero(usable))
    table.runtime_from_requested = int(np.count_nonzero(np.isnan(runtime) & np.isfinite(asked)))
    requested: Any = np.where(usable, asked, duration)
    table.requested_s = requested.tolist()
    if machines.partitions:
        names = columns.group.values
        table.group = [names[code] if code >= 0 else None
                       for code in columns.group.codes.tolist()]
    return table


def _anywhere_rows(columns: WorkloadColumns) -> Any:
    """Which rows ask for cores anywhere (``Placement.CORES``), as a boolean array, from the
    columns' placement codes when they carry them; ``None`` when every row asks for whole
    nodes."""
    import numpy as np

    from dcx.core import columns as columns_module

    codes = getattr(columns, "placement", None)
    placements = getattr(columns_module, "PLACEMENTS", None)
    if codes is None or placements is None:
        return None
    cores_code = list(placements).index(Placement.CORES)
    rows = np.asarray(codes) == cores_code
    return rows if rows.any() else None


def _parents_of_columns(columns: WorkloadColumns) -> list[tuple[int, ...]] | None:
    """Each task's dependencies as earlier task indices (ids are unique, so the job-local
    and the workload-wide lookups agree), or ``None`` when one is not an earlier task."""
    import numpy as np

    count = len(columns)
    offsets = columns.dependency_offsets
    if not len(columns.dependency_ids):
        return [()] * count
    ids = columns.ids
    if ids.dtype.kind == "O" or columns.dependency_ids.dtype.kind == "O":
        index_of = {value: index for index, value in enumerate(ids.tolist())}
        found = [index_of.get(value, -1) for value in columns.dependency_ids.tolist()]
        targets = np.array(found, dtype=np.int64)
    else:
        order = np.argsort(ids, kind="stable")
        at = np.minimum(np.searchsorted(ids[order], columns.dependency_ids), count - 1)
        targets = np.where(ids[order][at] == columns.dependency_ids, order[at], -1)
    rows = np.repeat(np.arange(count), np.diff(offsets))
    if np.any(targets < 0) or np.any(targets >= rows):
        return None
    listed = targets.tolist()
    parents: list[tuple[int, ...]] = []
    for row in range(count):
        start, end = int(offsets[row]), int(offsets[row + 1])
        parents.append(tuple(dict.fromkeys(listed[start:end])) if end > start else ())
    return parents


def compile_problem(workload: Workload, environment: Environment,
                    source_map: Mapping[str, tuple[int, int | None]] | None = None,
                    ) -> CompileResult:
    """Check the workload against the environment and build the engine's tables.

    Every problem that would make a run hang or crash (a dependency cycle, an unknown
    dependency, a task larger than any machine in cores or in any other resource it asks
    for, a negative or missing runtime) is an error here, with the task's pointer and,
    when the reader recorded it, its line.
    """
    machines, diagnostics = compile_machines(environment)
    changes, change_diagnostics = compile_state_changes(environment, machines)
    diagnostics.extend(change_diagnostics)
    columns = columns_of(workload)
    if columns is not None and not any(d.is_error for d in diagnostics):
        table = _table_of_columns(columns, machines)
        if table is not None:
            job_ids = tuple(columns.job_ids.tolist())
            if table.runtime_from_requested:
                diagnostics.append(_runtime_from_request(table.runtime_from_requested,
                                                         len(table)))
            return CompileResult(Problem(table, job_ids, machines, changes), tuple(diagnostics))
    requested = _requested_resources(workload.tasks())
    machines = _with_dimensions(machines, machine_shapes(environment), requested)
    dimension_index = _dimension_index(machines.dimensions)
    fits = _FitCounter(machines)
    # demand per request object: readers share one request between identical tasks
    demand_of: dict[int, tuple[tuple[int, int], ...]] = {}

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
            request = task.request
            anywhere = request.placement is Placement.CORES
            demand = demand_of.get(id(request))
            if demand is None:
                demand = demand_of[id(request)] = (
                    _task_demand(request, dimension_index, request.nodes if anywhere else 1)
                    if dimension_index else ())
            duration = _duration_of(task)
            if task.runtime_s is None and duration is not None:
                table.runtime_from_requested += 1
            diagnostics.extend(_check_task(task, where, machines, duration, demand, fits))
            located.append(where)
            table.ids.append(task.id)
            table.job.append(job_index)
            # float(): in-memory models may carry ints, and the reports format floats
            table.submit_s.append(float(task.submit_time_s))
            table.runtime_s.append(float(duration) if duration is not None else 0.0)
            if anywhere:
                if not table.anywhere:
                    table.anywhere = bytearray(len(table.ids) - 1)
                table.anywhere.append(1)
                table.need.append(max(1, round(max(1, request.nodes) * request.cores
                                               * CORE_UNITS)))
                table.nodes.append(1)
            else:
                if table.anywhere:
                    table.anywhere.append(0)
                table.need.append(max(1, round(request.cores * CORE_UNITS)))
                table.nodes.append(max(1, request.nodes))
            table.parents.append(())
            table.children.append([])
            table.release_s.append(float(_release_of(task)))
            table.demand.append(demand)
            asks = requirements_of(request)
            if asks is not None:
                table.asks[len(table.ids) - 1] = asks
            if machines.partitions:
                table.group.append(task.group)
            deadline = task.deadline_s
            table.deadline_s.append(
                deadline if deadline is not None and math.isfinite(deadline) else math.nan)
            asked = task.requested_time_s
            if asked is None or not math.isfinite(asked) or asked < 0:
                table.requested_from_runtime += 1
                table.requested_s.append(table.runtime_s[-1])
            else:
                table.requested_s.append(float(asked))

    if table.runtime_from_requested:
        diagnostics.append(_runtime_from_request(table.runtime_from_requested, len(table)))
    if requested.memory_tasks and not any(
            dimension.kind == "memory" for dimension in machines.dimensions):
        diagnostics.append(_memory_not_enforced(requested, located))
    diagnostics.extend(_resolve_dependencies(workload, table, located))
    # unresolved dependencies were dropped above, so they cannot fake a cycle here
    diagnostics.extend(_cycle_diagnostics(table, located))

    if any(d.is_error for d in diagnostics):
        return CompileResult(None, tuple(diagnostics))
    problem = Problem(table, tuple(job.id for job in workload.jobs), machines, changes)
    return CompileResult(problem, tuple(diagnostics))
