"""The in-memory model every format reads into and writes from (the hub).

Everything is a frozen dataclass. Sequences are tuples; mappings are plain dicts that no code
mutates after construction. Ids and names are kept exactly as the source gave them (an
environment id may be an ``int`` or a ``str``) so that round trips are exact.

Units are fixed and carried in field names:

* time: seconds (``float``), on the workload's own time axis whose origin is
  ``Workload.time_origin`` (an ISO 8601 string, or ``None`` when the source has no epoch);
* clock rates: Hz;
* memory, storage and disk capacities: MB (2**20 bytes, as SSS Appendix A and Haizea use it);
* transfer speeds: MB/s; network bandwidth: Mbit/s;
* power: W.

``extras`` dicts hold what a format carries that the model has no field for; their keys are
prefixed with the format name (``"haizea:…"``, ``"swf:…"``) unless the key is the format's own
free-form key/value mechanism (Haizea ``<extra>``, environment unknown keys).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

Id: TypeAlias = int | str
"""An identifier exactly as the source wrote it (environment JSON allows both)."""

Extras: TypeAlias = dict[str, Any]
"""Free-form, JSON-compatible values a format carries beyond the model's fields."""


class MachineState(enum.Enum):
    """Machine states of the environment format; other formats map onto these.

    SSS and JGF state vocabularies map through tables in their format modules; the source's
    own word is kept in ``Machine.state_label`` when it is not one of these.
    """

    ACTIVE = "ACTIVE"
    HALT = "HALT"
    MAINTENANCE = "MAINTENANCE"
    FAILURE = "FAILURE"


# --------------------------------------------------------------------------- topology


@dataclass(frozen=True)
class ProcessingUnit:
    """A CPU (one socket) or a GPU."""

    cores: int
    clock_rate_hz: float | None = None
    id: Id | None = None
    manufacturer: str | None = None
    family: str | None = None
    generation: str | None = None
    model: str | None = None
    energy_consumption_w: float | None = None
    extras: Extras = field(default_factory=dict)


@dataclass(frozen=True)
class StorageUnit:
    """A memory module or a storage device."""

    capacity_mb: float
    id: Id | None = None
    manufacturer: str | None = None
    family: str | None = None
    generation: str | None = None
    model: str | None = None
    read_speed_mb_s: float | None = None
    write_speed_mb_s: float | None = None
    energy_consumption_w: float | None = None
    extras: Extras = field(default_factory=dict)


@dataclass(frozen=True)
class NamedResource:
    """An open-ended consumable: a Haizea resource type other than CPU/Memory, an SSS
    ``<Resource name type>``, a Flux R child type other than core/gpu, a JGF vertex type
    the model has no field for. ``amount`` is in ``unit`` (``None``: the format's default)."""

    name: str
    amount: float
    type: str | None = None
    unit: str | None = None
    instances: tuple[float, ...] = ()
    """Per-instance amounts when the resource is multi-instance (Haizea ``<instance>``);
    empty when it is a single scalar ``amount``."""
    extras: Extras = field(default_factory=dict)


@dataclass(frozen=True)
class Consumables:
    """A snapshot of consumable resources, as SSS ``Available`` and ``Utilized`` give them.

    ``None`` means the category did not mention that resource.
    """

    processors: int | None = None
    memory_mb: float | None = None
    disk_mb: float | None = None
    swap_mb: float | None = None
    network_mbit_s: float | None = None
    resources: tuple[NamedResource, ...] = ()
    extras: Extras = field(default_factory=dict)


@dataclass(frozen=True)
class Machine:
    """A physical machine (environment), node (Haizea, SSS), rank/host (Flux R), node (JGF)."""

    id: Id | None = None
    name: str | None = None
    state: MachineState = MachineState.ACTIVE
    state_label: str | None = None
    """The source's own state word when it is richer than ``state`` (SSS ``Drained``)."""
    cpus: tuple[ProcessingUnit, ...] = ()
    gpus: tuple[ProcessingUnit, ...] = ()
    memory: tuple[StorageUnit, ...] = ()
    storage: tuple[StorageUnit, ...] = ()
    features: tuple[str, ...] = ()
    """Named features/properties (SSS ``Feature``, Flux R ``properties`` names)."""
    resources: tuple[NamedResource, ...] = ()
    os: str | None = None
    arch: str | None = None
    description: str | None = None
    swap_mb: float | None = None
    network_mbit_s: float | None = None
    rank: int | None = None
    """Flux broker rank, when the source assigns one."""
    available: Consumables | None = None
    utilized: Consumables | None = None
    extras: Extras = field(default_factory=dict)

    @property
    def core_count(self) -> int:
        return sum(cpu.cores for cpu in self.cpus)

    @property
    def gpu_count(self) -> int:
        """GPUs are counted as devices, not cores."""
        return len(self.gpus)

    @property
    def memory_mb(self) -> float:
        return sum(unit.capacity_mb for unit in self.memory)

    @property
    def storage_mb(self) -> float:
        return sum(unit.capacity_mb for unit in self.storage)

    @property
    def clock_rate_hz(self) -> float | None:
        """Core-weighted mean CPU clock (the SC18 simulator's machine speed)."""
        rated = [(cpu.cores, cpu.clock_rate_hz) for cpu in self.cpus if cpu.clock_rate_hz]
        total = sum(cores for cores, _ in rated)
        if not total:
            return None
        return sum(cores * (rate or 0.0) for cores, rate in rated) / total


@dataclass(frozen=True)
class Rack:
    id: Id | None = None
    name: str | None = None
    capacity_units: int | None = None
    """How many 1U slots the rack has."""
    power_capacity_w: float | None = None
    slots: Sequence[Machine | None] = ()
    """Installed units in order; ``None`` is an explicit empty slot. A tuple, or a
    ``dcx.core.groups.Slots`` holding identical machines as groups, which reads as the
    same tuple (see ``dcx.core.groups``)."""
    extras: Extras = field(default_factory=dict)

    @property
    def machines(self) -> tuple[Machine, ...]:
        return tuple(slot for slot in self.slots if slot is not None)


@dataclass(frozen=True)
class Point:
    x: float
    y: float


@dataclass(frozen=True)
class Size:
    """Room size in metres."""

    width: float
    height: float


@dataclass(frozen=True)
class Room:
    id: Id | None = None
    name: str | None = None
    type: str = "SERVER"
    """COOLING, HALLWAY, OFFICE, POWER or SERVER."""
    location: Point | None = None
    size: Size | None = None
    racks: tuple[Rack, ...] = ()
    extras: Extras = field(default_factory=dict)


@dataclass(frozen=True)
class SchedulerSpec:
    """A datacenter's scheduler (environment ``operational.scheduler``)."""

    name: str
    url: str | None = None
    options: Extras = field(default_factory=dict)


@dataclass(frozen=True)
class Datacenter:
    id: Id | None = None
    name: str | None = None
    location: str | None = None
    operator: str | None = None
    scheduler: SchedulerSpec | None = None
    rooms: tuple[Room, ...] = ()
    extras: Extras = field(default_factory=dict)
    """Includes ``operational`` keys other than ``scheduler``, under ``"operational"``."""


@dataclass(frozen=True)
class MachineStateChange:
    machine: Id
    state: MachineState
    time_s: float | None = None
    cause: str | None = None
    attributes: Extras = field(default_factory=dict)


@dataclass(frozen=True)
class DatacenterSchedulerChange:
    datacenter: Id
    scheduler: SchedulerSpec
    time_s: float | None = None
    attributes: Extras = field(default_factory=dict)


Event: TypeAlias = MachineStateChange | DatacenterSchedulerChange


@dataclass(frozen=True)
class Partition:
    """A named set of machines and who may run tasks on them (a Slurm partition): what the
    scheduler's R2 authorization reads. A machine may be in several partitions or in none.

    An allow list that is ``None`` admits everyone (Slurm's ``ALL``); a task that does not
    say its group, account or QoS is not on any list. The model's tasks carry a group
    (``Task.group``) but no account or QoS, so account and QoS lists are kept for the
    formats and the scheduler reads them as such (see ``scheduler/resource_stages.py``)."""

    name: str
    machines: tuple[str, ...] | None = ()
    """Names (``Machine.name``) of its machines, in the source's order; ``None``: every
    machine of the environment (Slurm ``Nodes=ALL``)."""
    allow_groups: tuple[str, ...] | None = None
    """The groups whose tasks may use it (``Task.group``)."""
    allow_accounts: tuple[str, ...] | None = None
    deny_accounts: tuple[str, ...] = ()
    allow_qos: tuple[str, ...] | None = None
    deny_qos: tuple[str, ...] = ()
    extras: Extras = field(default_factory=dict)


@dataclass(frozen=True)
class Validity:
    """When a resource set may be used (Flux R ``starttime``/``expiration``, RFC 20), in
    seconds since the Unix epoch as the source gave them; ``None``: that end is unset."""

    start_s: float | None = None
    end_s: float | None = None


@dataclass(frozen=True)
class Environment:
    """A datacenter topology with its timed events."""

    datacenters: tuple[Datacenter, ...] = ()
    events: tuple[Event, ...] = ()
    name: str | None = None
    description: str | None = None
    extras: Extras = field(default_factory=dict)
    partitions: tuple[Partition, ...] = ()
    """Named sets of machines and who may use them (Slurm partitions)."""
    validity: Validity | None = None
    """The window in which the resources may be used (an allocation's start and expiry)."""

    def machines(self) -> Iterator[Machine]:
        """All machines in topology order (datacenters, rooms, racks, slots)."""
        for datacenter in self.datacenters:
            for room in datacenter.rooms:
                for rack in room.racks:
                    yield from rack.machines

    def racks(self) -> Iterator[Rack]:
        for datacenter in self.datacenters:
            for room in datacenter.rooms:
                yield from room.racks


# --------------------------------------------------------------------------- workload


class StartMode(enum.Enum):
    """When a task may start (Haizea ``<start>``)."""

    ANY = "any"
    """Best-effort: whenever resources allow (empty ``<start/>``, every trace format)."""
    NOW = "now"
    """Immediate: at submission or not at all (``<now/>``)."""
    EXACT = "exact"
    """Advance reservation at ``Task.start_time_s`` (``<exact>``)."""


class Placement(enum.Enum):
    """How a request's ``nodes x cores`` may be laid onto machines."""

    NODES = "nodes"
    """Whole nodes: ``nodes`` distinct machines with ``cores`` cores and ``memory_mb`` each
    (Slurm ``--nodes``/``--ntasks-per-node``, Batsim hosts, jsspp-osp tasks, Haizea nodes)."""
    CORES = "cores"
    """Cores anywhere: ``nodes x cores`` cores in all, packed onto any machines, several on one
    machine or spread over many, each core bringing ``memory_mb x nodes / (nodes x cores)``
    of the request's total memory (SWF and GWF processors, as PWA-based simulators read
    them)."""


@dataclass(frozen=True)
class ResourceRequest:
    """What one task asks for: ``nodes`` nodes, each with the per-node amounts below
    (``placement`` says whether they must be whole nodes or may be cores anywhere)."""

    nodes: int = 1
    cores: float = 1.0
    """Cores per node; fractional where the source allows it (Haizea CPU 50 = half a core)."""
    memory_mb: float | None = None
    gpus: int = 0
    resources: tuple[NamedResource, ...] = ()
    """Other per-node amounts (Haizea Disk, Net-in; multi-instance CPU via ``instances``)."""
    os: str | None = None
    """The operating system every node must run (``Machine.os``; compared without case)."""
    arch: str | None = None
    """The architecture every node must have (``Machine.arch``; compared without case)."""
    features: tuple[str, ...] = ()
    """Features every node must have, all of them (``Machine.features``; exact names)."""
    placement: Placement = Placement.NODES
    """Whole nodes, or the same total cores and memory anywhere (``Placement``)."""

    @property
    def total_cores(self) -> float:
        return self.nodes * self.cores


class TaskStatus(enum.Enum):
    """How a task ended, as a trace recorded it (SWF and GWF Status)."""

    UNKNOWN = "unknown"
    """Not recorded (``-1``), or a partial execution that continues on a later line (SWF 2)."""
    COMPLETED = "completed"
    """Ran to its end (SWF and GWF 1; SWF 3, the last partial execution of a completed job)."""
    FAILED = "failed"
    """Ended with an error (SWF and GWF 0; SWF 4, the last partial execution of a failed
    job)."""
    CANCELLED = "cancelled"
    """Cancelled, before or after it started (SWF and GWF 5)."""
    KILLED_AT_WALLTIME = "killed-at-walltime"
    """Killed when it reached its requested time (the traces write it as failed)."""


@dataclass(frozen=True)
class Task:
    """One schedulable unit: a GWF line, an SWF job, a Haizea lease, an osp-workload task.

    The fields after ``image_size_mb`` are what a trace recorded of a run (SWF and GWF
    columns): a scheduler reads none of them. The recorded timeline is ``submit_time_s``,
    ``wait_time_s`` and ``runtime_s``: the task started at ``submit_time_s + wait_time_s``
    and ended ``runtime_s`` later (SWF's own choice of wait and run time over start and end
    times)."""

    id: Id
    submit_time_s: float = 0.0
    runtime_s: float | None = None
    """Real (measured) duration; ``None`` when unknown."""
    requested_time_s: float | None = None
    """Requested duration (wall-time limit, Haizea ``<duration>``)."""
    request: ResourceRequest = field(default_factory=ResourceRequest)
    dependencies: tuple[Id, ...] = ()
    """Ids of tasks (of the same workload) that must finish first."""
    deadline_s: float | None = None
    start_mode: StartMode = StartMode.ANY
    start_time_s: float | None = None
    """Requested start for ``StartMode.EXACT``."""
    preemptible: bool | None = None
    user: str | None = None
    group: str | None = None
    image: str | None = None
    """Software image id (Haizea ``<disk-image id>``); ``None`` for unmanaged software."""
    image_size_mb: float | None = None
    status: TaskStatus = TaskStatus.UNKNOWN
    wait_time_s: float | None = None
    """Recorded wait: seconds from submit to start (SWF field 3, GWF WaitTime)."""
    used_memory_mb: float | None = None
    """Recorded memory use, the average per core (SWF and GWF: per processor), MB; beside
    ``request.memory_mb``, which is requested per node."""
    cpu_time_s: float | None = None
    """Recorded CPU time (user and system), the average per core (SWF and GWF: per
    processor), seconds."""
    application: str | None = None
    """The executable or application run (SWF Executable Number, GWF ExecutableID)."""
    queue: str | None = None
    """The queue it was submitted to (SWF Queue Number, GWF QueueID)."""
    partition: str | None = None
    """The partition it ran in (SWF Partition Number, GWF PartitionID; the name of an
    ``Environment.partitions`` entry where the two come together)."""
    think_time_s: float | None = None
    """Seconds between the end of the task it follows (its first dependency: SWF's
    preceding job) and its submit (SWF field 18)."""
    extras: Extras = field(default_factory=dict)


TRACE_FIELDS: tuple[str, ...] = ("status", "wait_time_s", "used_memory_mb", "cpu_time_s",
                                 "application", "queue", "partition", "think_time_s")
"""The ``Task`` fields a trace records of a run, in the dataclass's order."""

UNRECORDED: dict[str, Any] = {"status": TaskStatus.UNKNOWN, **dict.fromkeys(TRACE_FIELDS[1:])}
"""``TRACE_FIELDS`` with their defaults: what a reader of a format without them passes to
a ``direct_constructor`` of ``Task`` (every field, in order)."""


@dataclass(frozen=True)
class Job:
    """A workflow, bag of tasks, or a single-task job."""

    id: Id
    tasks: tuple[Task, ...] = ()
    name: str | None = None
    user: str | None = None
    extras: Extras = field(default_factory=dict)

    @property
    def submit_time_s(self) -> float:
        return min((task.submit_time_s for task in self.tasks), default=0.0)


@dataclass(frozen=True)
class Annotation:
    """A Haizea ``.lwfa`` lease annotation: overrides applied to one lease of a workload."""

    target: Id | None = None
    """Lease id; ``None`` when annotations apply positionally."""
    start_mode: StartMode | None = None
    start_offset_s: float | None = None
    """Exact start relative to the lease's submit time."""
    deadline_offset_s: float | None = None
    image: str | None = None
    image_size_mb: float | None = None
    software_none: bool = False
    extras: Extras = field(default_factory=dict)


@dataclass(frozen=True)
class Workload:
    jobs: Sequence[Job] = ()
    """A tuple, or for a workload held as columns a ``dcx.core.columns.JobRows``, which
    builds the jobs when code first iterates or indexes them."""
    name: str | None = None
    description: str | None = None
    time_origin: str | None = None
    """ISO 8601 instant that ``t = 0`` stands for, when the source states one."""
    makespan_s: float | None = None
    """Measured wall time of the whole run (WfFormat ``makespanInSeconds``), when the source
    states one that its tasks' runtimes do not give; ``None`` otherwise."""
    attributes: Extras = field(default_factory=dict)
    """Workload-level key/values (Haizea root ``<attributes>``, SWF header fields)."""
    annotations: tuple[Annotation, ...] = ()
    extras: Extras = field(default_factory=dict)

    def tasks(self) -> Iterator[Task]:
        for job in self.jobs:
            yield from job.tasks


# --------------------------------------------------------------------------- document


@dataclass(frozen=True)
class Document:
    """What a reader returns and a writer takes: a topology, a workload, or both
    (a Haizea LWF carries its ``<site>`` next to its leases)."""

    environment: Environment | None = None
    workload: Workload | None = None
    extras: Extras = field(default_factory=dict)


# --------------------------------------------------------------------------- fast construction

_Built = TypeVar("_Built")
_Plan: TypeAlias = tuple[dict[str, Any], tuple[tuple[str, Any], ...], frozenset[str]]
_PLANS: dict[type, _Plan | None] = {}


def construction_plan(cls: type) -> _Plan | None:
    """Field defaults, default factories and field names of a model dataclass, or ``None``
    when the class must go through its constructor: it has a ``__post_init__``, or slots
    (no ``__dict__`` to fill)."""
    if hasattr(cls, "__post_init__") or "__slots__" in vars(cls):
        return None
    defaults: dict[str, Any] = {}
    factories: list[tuple[str, Any]] = []
    for item in dataclasses.fields(cls):
        if item.default is not dataclasses.MISSING:
            defaults[item.name] = item.default
        elif item.default_factory is not dataclasses.MISSING:
            factories.append((item.name, item.default_factory))
    return defaults, tuple(factories), frozenset(item.name for item in dataclasses.fields(cls))


def build(cls: type[_Built], values: dict[str, Any]) -> _Built:
    """``cls(**values)`` for a frozen model dataclass, without its generated ``__init__``,
    which sets fields one ``object.__setattr__`` at a time (most of a reader's model time
    when it builds 100,000 tasks). Fields left out take their defaults (fresh
    default-factory values). When ``values`` names every field it becomes the instance's
    ``__dict__``: the caller hands it over. A missing required field or an unknown one raises
    ``TypeError`` as the constructor would."""
    try:
        plan = _PLANS[cls]
    except KeyError:
        plan = _PLANS[cls] = construction_plan(cls)
    if plan is None:
        return cls(**values)
    defaults, factories, names = plan
    if values.keys() != names:
        complete = dict(defaults)
        for name, factory in factories:
            if name not in values:
                complete[name] = factory()
        complete.update(values)
        if complete.keys() != names:
            raise TypeError(f"{cls.__name__}: unknown or missing fields in {sorted(values)}")
        values = complete
    built = object.__new__(cls)
    object.__setattr__(built, "__dict__", values)
    return built


def direct_constructor(cls: type[_Built],
                       names: tuple[str, ...]) -> Callable[[dict[str, Any]], _Built]:
    """A constructor for a hot loop whose every call passes a dict of exactly ``names``, in
    that order: the dict becomes the instance's ``__dict__`` with no check per call. Checked
    once, here: ``names`` must be the class's fields in order and the class must take a
    ``__dict__`` (``construction_plan``); otherwise the constructor itself is returned."""
    fields_in_order = tuple(item.name for item in dataclasses.fields(cls))  # type: ignore[arg-type]
    if construction_plan(cls) is None or fields_in_order != names:
        return lambda values: cls(**values)
    new, set_state = object.__new__, object.__setattr__

    def construct(values: dict[str, Any]) -> _Built:
        built = new(cls)
        set_state(built, "__dict__", values)
        return built

    return construct
