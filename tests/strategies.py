"""Generic hypothesis strategies for the whole model (topology and workload).

``documents(domain)`` draws a ``Document`` whose values stay inside ``domain`` (what kinds of
ids, times and sizes the formats under test can carry), then restricts it to
``domain.holds`` with ``dcx.core.restrict.restrict``, so a test gets exactly what a
format (or the intersection of two formats) can hold. Format-specific strategies live in
``tests/strategies_<format>.py``.

Invariants every generated document keeps, because most formats check them: ids unique per
entity kind; events name existing machines and datacenters, carry a time and come in time
order; racks hold no more units than their capacity; task dependencies point at earlier tasks;
every machine has at least one CPU with a clock rate (environment JSON requires it); extras
use plain ``x-…`` keys that no format uses for a field of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from itertools import count
from typing import Any, Literal

from hypothesis import strategies as st

from dcx.core.fields import FIELDS
from dcx.core.model import (
    Annotation,
    Consumables,
    Datacenter,
    DatacenterSchedulerChange,
    Document,
    Environment,
    Event,
    Id,
    Job,
    Machine,
    MachineState,
    MachineStateChange,
    NamedResource,
    Partition,
    Placement,
    Point,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    SchedulerSpec,
    Size,
    StartMode,
    StorageUnit,
    Task,
    TaskStatus,
    Workload,
)
from dcx.core.restrict import restrict, with_parts

IdKind = Literal["int", "str", "any"]


@dataclass(frozen=True)
class Domain:
    """The values a test's formats can all carry, and the field paths they hold."""

    holds: frozenset[str] = frozenset(FIELDS)
    ids: IdKind = "any"
    """Entity ids (datacenters, rooms, racks, machines, jobs, tasks): ints, strings or both."""
    whole_numbers: bool = True
    """Times, sizes, rates and amounts are whole numbers (trace formats write integers)."""
    own_prefix: str | None = None
    """Passed to ``restrict``: whose prefixed extras survive (none are generated here)."""
    max_machines: int = 6
    max_tasks: int = 8
    extras_keys: tuple[str, ...] = field(default=("x-note", "x-tier", "x-owner"))


FULL = Domain()

# Characters JSON and XML 1.0 both carry, without leading/trailing space that XML attribute
# normalisation or text formats could strip.
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.",
                min_size=1, max_size=10)
_WORDS = st.lists(_WORD, min_size=1, max_size=3).map(" ".join)


@cache
def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


def _number(domain: Domain, low: float, high: float) -> st.SearchStrategy[float]:
    return _number_between(domain.whole_numbers, low, high)


# Building a strategy costs more than drawing from it; draws reuse a few cached ones.
@lru_cache(maxsize=4096)
def _number_between(whole_numbers: bool, low: float, high: float) -> st.SearchStrategy[float]:
    if whole_numbers:
        return st.integers(int(max(low, 1)), int(high)).map(float)
    return st.floats(min_value=max(low, 1e-3), max_value=high, allow_nan=False,
                     allow_infinity=False)


@cache
def _times(domain: Domain) -> st.SearchStrategy[float]:
    if domain.whole_numbers:
        return st.integers(0, 10**7).map(float)
    return st.floats(min_value=0, max_value=1e7, allow_nan=False, allow_infinity=False)


@cache
def _extras(domain: Domain) -> st.SearchStrategy[dict[str, Any]]:
    values = st.integers(-1000, 1000) | _WORDS | st.booleans()
    return st.dictionaries(st.sampled_from(domain.extras_keys), values, max_size=2)


def _id(draw: Any, domain: Domain, serial: Iterator[int], prefix: str) -> Id:
    """A fresh id: unique by construction (the serial number is part of it)."""
    number = next(serial)
    kind = domain.ids if domain.ids != "any" else draw(_ID_KINDS)
    return number if kind == "int" else f"{prefix}{number}"


_ID_KINDS = st.sampled_from(["int", "str"])


# ------------------------------------------------------------------------------ topology


def _processing_unit(draw: Any, domain: Domain, serial: Iterator[int]) -> ProcessingUnit:
    return ProcessingUnit(
        cores=draw(st.integers(1, 128)),
        clock_rate_hz=draw(_number(domain, 1e8, 5e9)),
        id=f"pu{next(serial)}" if draw(st.booleans()) else None,
        manufacturer=draw(_maybe(_WORD)), family=draw(_maybe(_WORD)),
        generation=draw(_maybe(_WORD)), model=draw(_maybe(_WORDS)),
        energy_consumption_w=draw(_maybe(_number(domain, 1, 1000))),
        extras=draw(_extras(domain)))


def _storage_unit(draw: Any, domain: Domain, serial: Iterator[int]) -> StorageUnit:
    return StorageUnit(
        capacity_mb=float(draw(st.integers(1, 10**7))),
        id=f"su{next(serial)}" if draw(st.booleans()) else None,
        manufacturer=draw(_maybe(_WORD)), family=draw(_maybe(_WORD)),
        generation=draw(_maybe(_WORD)), model=draw(_maybe(_WORDS)),
        read_speed_mb_s=draw(_maybe(_number(domain, 1, 10**5))),
        write_speed_mb_s=draw(_maybe(_number(domain, 1, 10**5))),
        energy_consumption_w=draw(_maybe(_number(domain, 1, 1000))),
        extras=draw(_extras(domain)))


def _resources(draw: Any, domain: Domain) -> tuple[NamedResource, ...]:
    names = draw(st.lists(st.sampled_from(["licence", "scratch", "fpga"]), unique=True,
                          max_size=2))
    return tuple(NamedResource(name=name, amount=draw(_number(domain, 1, 1000)))
                 for name in names)


def _consumables(draw: Any, domain: Domain) -> Consumables | None:
    if not draw(st.booleans()):
        return None
    return Consumables(processors=draw(_maybe(st.integers(0, 512))),
                       memory_mb=draw(_maybe(_number(domain, 1, 10**6))),
                       disk_mb=draw(_maybe(_number(domain, 1, 10**6))))


def _machine(draw: Any, domain: Domain, serial: Iterator[int]) -> Machine:
    def units(build: Any, low: int, high: int) -> tuple[Any, ...]:
        return tuple(build(draw, domain, serial) for _ in range(draw(st.integers(low, high))))

    return Machine(
        id=_id(draw, domain, serial, "m"),
        name=draw(_maybe(_WORD)),
        state=draw(st.sampled_from(MachineState)),
        state_label=draw(_maybe(_WORD)),
        cpus=units(_processing_unit, 1, 2), gpus=units(_processing_unit, 0, 2),
        memory=units(_storage_unit, 0, 2), storage=units(_storage_unit, 0, 2),
        features=tuple(draw(st.lists(_WORD, unique=True, max_size=2))),
        resources=_resources(draw, domain),
        os=draw(_maybe(_WORD)), arch=draw(_maybe(_WORD)), description=draw(_maybe(_WORDS)),
        swap_mb=draw(_maybe(_number(domain, 1, 10**6))),
        network_mbit_s=draw(_maybe(_number(domain, 1, 10**5))),
        rank=draw(_maybe(st.integers(0, 10**4))),
        available=_consumables(draw, domain), utilized=_consumables(draw, domain),
        extras=draw(_extras(domain)))


@st.composite
def environments(draw: Any, domain: Domain = FULL) -> Environment:
    """An unrestricted environment inside ``domain``'s value ranges."""
    serial = count()
    budget = draw(st.integers(0, domain.max_machines))
    datacenters = []
    for _ in range(draw(st.integers(0, 2))):
        rooms = []
        for _ in range(draw(st.integers(0, 2))):
            racks = []
            for _ in range(draw(st.integers(0, 2))):
                slots: list[Machine | None] = []
                for _ in range(draw(st.integers(0, min(3, budget)))):
                    budget -= 1
                    slots.append(None if draw(st.integers(0, 4)) == 0
                                 else _machine(draw, domain, serial))
                capacity = draw(_maybe(st.integers(len(slots), len(slots) + 4)))
                racks.append(Rack(id=_id(draw, domain, serial, "k"), name=draw(_maybe(_WORD)),
                                  capacity_units=capacity,
                                  power_capacity_w=draw(_maybe(_number(domain, 1, 10**5))),
                                  slots=tuple(slots), extras=draw(_extras(domain))))
            geometry = draw(st.booleans())
            rooms.append(Room(
                id=_id(draw, domain, serial, "r"), name=draw(_maybe(_WORD)),
                type=draw(st.sampled_from(["SERVER", "COOLING", "HALLWAY", "OFFICE", "POWER"])),
                location=Point(float(draw(st.integers(0, 100))), float(draw(st.integers(0, 100))))
                if geometry else None,
                size=Size(float(draw(st.integers(1, 100))), float(draw(st.integers(1, 100))))
                if geometry else None,
                racks=tuple(racks), extras=draw(_extras(domain))))
        scheduler = draw(_maybe(st.builds(SchedulerSpec, name=_WORD, url=_maybe(_WORD))))
        datacenters.append(Datacenter(
            id=_id(draw, domain, serial, "dc"), name=draw(_maybe(_WORDS)),
            location=draw(_maybe(_WORDS)), operator=draw(_maybe(_WORDS)), scheduler=scheduler,
            rooms=tuple(rooms), extras=draw(_extras(domain))))
    environment = Environment(datacenters=tuple(datacenters), name=draw(_maybe(_WORDS)),
                              description=draw(_maybe(_WORDS)), extras=draw(_extras(domain)))
    return Environment(datacenters=environment.datacenters, events=_events(draw, environment),
                       name=environment.name, description=environment.description,
                       extras=environment.extras,
                       partitions=_partitions(draw, domain, environment))


def _partitions(draw: Any, domain: Domain, environment: Environment) -> tuple[Partition, ...]:
    """Partitions of named machines (or every machine), with allow and deny lists."""
    names = [machine.name for machine in environment.machines() if machine.name is not None]
    listed = st.lists(_WORD, max_size=2).map(tuple)
    return tuple(Partition(
        name=draw(_WORD),
        machines=draw(st.one_of(st.none(), st.lists(st.sampled_from(names), max_size=3)
                                .map(tuple))) if names else draw(st.sampled_from([None, ()])),
        allow_groups=draw(_maybe(listed)), allow_accounts=draw(_maybe(listed)),
        deny_accounts=draw(listed), allow_qos=draw(_maybe(listed)), deny_qos=draw(listed),
        extras=draw(_extras(domain))) for _ in range(draw(st.integers(0, 2))))


def _events(draw: Any, environment: Environment) -> tuple[Event, ...]:
    machine_ids = [machine.id for machine in environment.machines() if machine.id is not None]
    datacenter_ids = [dc.id for dc in environment.datacenters if dc.id is not None]
    events: list[Event] = []
    time = 0.0
    for _ in range(draw(st.integers(0, 3))):
        time += float(draw(st.integers(0, 3600)))
        if machine_ids and (not datacenter_ids or draw(st.booleans())):
            events.append(MachineStateChange(
                machine=draw(st.sampled_from(machine_ids)),
                state=draw(st.sampled_from(MachineState)), time_s=time,
                cause=draw(_maybe(_WORDS))))
        elif datacenter_ids:
            events.append(DatacenterSchedulerChange(
                datacenter=draw(st.sampled_from(datacenter_ids)),
                scheduler=SchedulerSpec(name=draw(_WORD)), time_s=time))
    return tuple(events)


# ------------------------------------------------------------------------------ workload


def _task(draw: Any, domain: Domain, serial: Iterator[int], earlier: list[Id]) -> Task:
    start_mode = draw(st.sampled_from(StartMode))
    submit = draw(_times(domain))
    image = draw(_maybe(_WORD))
    return Task(
        id=_id(draw, domain, serial, "t"),
        submit_time_s=submit,
        runtime_s=draw(_maybe(_number(domain, 1, 10**6))),
        requested_time_s=draw(_maybe(_number(domain, 1, 10**6))),
        request=ResourceRequest(
            nodes=draw(st.integers(1, 64)), cores=float(draw(st.integers(1, 64))),
            memory_mb=draw(_maybe(_number(domain, 1, 10**6))), gpus=draw(st.integers(0, 8)),
            resources=_resources(draw, domain), os=draw(_maybe(_WORD)),
            arch=draw(_maybe(_WORD)),
            features=tuple(draw(st.lists(_WORD, unique=True, max_size=2))),
            placement=draw(st.sampled_from(Placement))),
        dependencies=tuple(draw(st.lists(st.sampled_from(earlier), unique=True, max_size=2)))
        if earlier else (),
        deadline_s=draw(_maybe(_number(domain, submit + 1, submit + 10**6))),
        start_mode=start_mode,
        start_time_s=draw(_number(domain, submit, submit + 10**5))
        if start_mode is StartMode.EXACT else None,
        preemptible=draw(_maybe(st.booleans())),
        user=draw(_maybe(_WORD)), group=draw(_maybe(_WORD)),
        image=image, image_size_mb=draw(_number(domain, 1, 10**5)) if image else None,
        status=draw(st.sampled_from(TaskStatus)),
        wait_time_s=draw(_maybe(_number(domain, 0, 10**6))),
        used_memory_mb=draw(_maybe(_number(domain, 0, 10**6))),
        cpu_time_s=draw(_maybe(_number(domain, 0, 10**6))),
        application=draw(_maybe(_WORD)), queue=draw(_maybe(_WORD)),
        partition=draw(_maybe(_WORD)), think_time_s=draw(_maybe(_number(domain, 0, 10**6))),
        extras=draw(_extras(domain)))


@st.composite
def workloads(draw: Any, domain: Domain = FULL) -> Workload:
    """An unrestricted workload inside ``domain``'s value ranges; tasks in submit order."""
    serial = count(1)
    budget = draw(st.integers(0, domain.max_tasks))
    jobs = []
    earlier: list[Id] = []
    while budget > 0:
        size = draw(st.integers(1, budget))
        budget -= size
        job_id = _id(draw, domain, serial, "j")
        tasks = []
        for _ in range(size):
            task = _task(draw, domain, serial, list(earlier))
            tasks.append(task)
            earlier.append(task.id)
        jobs.append(Job(id=job_id, tasks=tuple(tasks), name=draw(_maybe(_WORD)),
                        user=draw(_maybe(_WORD)), extras=draw(_extras(domain))))
    annotations = tuple(Annotation(target=task_id, start_mode=draw(_maybe(st.sampled_from(
        StartMode)))) for task_id in draw(st.lists(st.sampled_from(earlier), unique=True,
                                                   max_size=2))) if earlier else ()
    return Workload(
        jobs=tuple(jobs), name=draw(_maybe(_WORDS)), description=draw(_maybe(_WORDS)),
        time_origin=draw(_maybe(st.just("2018-01-01T00:00:00Z"))),
        attributes=draw(_extras(domain)), annotations=annotations,
        extras=draw(_extras(domain)))


@st.composite
def documents(draw: Any, domain: Domain = FULL) -> Document:
    """A document restricted to ``domain.holds``: a topology, a workload, or both."""
    held_parts = [part for part in ("environment", "workload") if part in with_parts(domain.holds)]
    if not held_parts:
        return Document()
    parts = draw(st.lists(st.sampled_from(held_parts), min_size=1, unique=True))
    environment = draw(environments(domain)) if "environment" in parts else None
    workload = draw(workloads(domain)) if "workload" in parts else None
    return restrict(Document(environment=environment, workload=workload), domain.holds,
                    domain.own_prefix)
