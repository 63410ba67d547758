"""The scheduling loop: cycles of T1 (eligibility), T2 (ordering), R4 (filter) and R5
(selection) over a compiled ``Problem``, under one of two time models.

* ``sc18``: the paper's simulator. Cycles at t = 1, 11, 21, …; a task arrives at the first
  tick at or after its submit time; duration = floor(4000 x runtime / MHz); a finish is seen
  (cores back, children eligible) at the first tick at or after it, never in the cycle that
  placed the task.
* ``event``: a cycle at every arrival, completion and machine state change; durations are
  runtime x reference clock / machine clock without rounding.

Only cycles in which something changed are run: a cycle with the same queue and the same
free cores as the last one cannot place anything, so skipping it changes no result (sc18
would still have run it and recorded stage times for it).

Machine state events: FAILURE and HALT take a machine out at once and requeue the tasks
running on it (their elapsed core-seconds are counted as lost work); MAINTENANCE lets the
running tasks finish but places nothing new; ACTIVE brings a machine back.

Resources beyond cores (``problem.py``): when the problem has extra dimensions (memory,
GPUs, named resources), R4 keeps only machines with enough free cores and enough free
units of every dimension the task asks for, a placement takes all of them on every chosen
machine, and a finish or a failure gives all of them back. A problem without extra
dimensions (every GWF/SWF/Askalon/Chronos run on an OpenDC topology) runs the cores-only
code paths: the same filter, bookkeeping and results as before resources existed. The
largest-free-cores shortcut stays valid in both: enough free cores is necessary either way.

Tasks become eligible at their release time (``TaskTable.release_s``: the submit time, or
the start time of an AR lease), aligned by the time model like an arrival. Nothing is
preempted to honour a start time.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from dcx.core.model import MachineState
from dcx.scheduler.policies import Policy, QueueContext, free_capacity, free_resources
from dcx.scheduler.problem import CORE_UNITS, Problem
from dcx.scheduler.stage_timing import StageRecord, StageTimer

__all__ = ["STAGES", "Schedule", "StageRecord", "TimeModel", "simulate", "time_model"]

TimeModelName = Literal["sc18", "event"]
TIME_MODELS: tuple[TimeModelName, ...] = ("sc18", "event")

SC18_FIRST_TICK_S = 1.0
SC18_TICK_S = 10.0
REFERENCE_CLOCK_MHZ = 4000.0
"""sc18 treats trace runtimes as measured on a 4,000 MHz core."""

STAGES: tuple[str, ...] = ("T1", "T2", "R4", "R5", "rest")


@dataclass(frozen=True)
class TimeModel:
    """When cycles happen and how long a task runs on a machine."""

    name: TimeModelName
    align: Callable[[float], float]
    """The cycle at which something happening at ``t`` is seen."""
    duration: Callable[[float, float | None], float]
    """``(runtime_s, machine MHz or None) -> seconds on that machine``."""
    visible_after_placement: float
    """How long after its placing cycle a finish can be seen at the earliest."""
    ordered_by_id: bool = False
    """Tasks arriving together join the queue by (release, job id, task id), as the sc18
    simulator's store sorts them, instead of by (release, file order)."""
    integer_speed: bool = False
    """Machine speed is the integer mean clock (``MachineTable.integer_clock_mhz``)."""


def _sc18_tick(t: float) -> float:
    if t <= SC18_FIRST_TICK_S:
        return SC18_FIRST_TICK_S
    return SC18_FIRST_TICK_S + SC18_TICK_S * math.ceil((t - SC18_FIRST_TICK_S) / SC18_TICK_S)


def _sc18_duration(runtime_s: float, clock_mhz: float | None) -> float:
    # sc18 integer arithmetic: flops = 4000 * RunTime, duration = flops // MHz (Long division)
    if clock_mhz is None:
        return float(math.floor(runtime_s))
    return float(math.floor(REFERENCE_CLOCK_MHZ * runtime_s / clock_mhz))


def _event_duration(runtime_s: float, clock_mhz: float | None) -> float:
    if clock_mhz is None:
        return runtime_s
    return runtime_s * REFERENCE_CLOCK_MHZ / clock_mhz


def _same_time(t: float) -> float:
    return t


SC18 = TimeModel("sc18", _sc18_tick, _sc18_duration, SC18_TICK_S, ordered_by_id=True,
                 integer_speed=True)
EVENT = TimeModel("event", _same_time, _event_duration, 0.0)


def time_model(name: str) -> TimeModel:
    if name == "sc18":
        return SC18
    if name == "event":
        return EVENT
    raise ValueError(f"unknown time model {name!r}; use one of {', '.join(TIME_MODELS)}")


@dataclass
class Schedule:
    """What happened to every task (lists indexed like ``Problem.tasks``)."""

    policy: Policy
    time_model: TimeModelName
    seed: int | None
    arrival_s: list[float]
    first_start_s: list[float]
    start_s: list[float]
    finish_s: list[float]
    machines: list[tuple[int, ...]]
    attempts: list[int]
    lost_core_s: float = 0.0
    cycles: int = 0
    stages: list[StageRecord] = field(default_factory=list)
    cycle_cpu: list[tuple[float, int]] = field(default_factory=list)
    """``(cycle time, thread CPU ns)`` per measured cycle. The thread CPU clock costs about
    ten times a wall-clock read, so it is read once per cycle, not per stage call."""
    reserved_s: list[float] = field(default_factory=list)
    """Reservation engine: the first reservation each task was given (NaN: none)."""
    killed: int = 0
    """Tasks cut at their requested time (reservation engine)."""

    @property
    def unfinished(self) -> int:
        return sum(1 for finish in self.finish_s if math.isnan(finish))


_NAN = float("nan")

Demand = tuple[tuple[int, int], ...]


def id_order_key(value: object) -> tuple[int, int | str]:
    """Ids sort as the simulator's store sorted them: numbers numerically, before text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


def arrival_order(problem: Problem, by_id: bool) -> list[int]:
    """Tasks in the order they join the queue: by release time, then job and task id
    (``by_id``) or file order."""
    tasks = problem.tasks
    release_s = tasks.release_s
    if not by_id:
        return sorted(range(len(tasks)), key=lambda task: (release_s[task], task))
    job_keys = [id_order_key(job_id) for job_id in problem.job_ids]
    return sorted(range(len(tasks)), key=lambda task: (
        release_s[task], job_keys[tasks.job[task]], id_order_key(tasks.ids[task]), task))


def machine_speeds(problem: Problem, model: TimeModel) -> tuple[float | int | None, ...]:
    machines = problem.machines
    if model.integer_speed and machines.integer_clock_mhz:
        return machines.integer_clock_mhz
    return machines.clock_mhz


def _shift_resources(demand: Demand, machines: tuple[int, ...] | list[int],
                     extra_free: list[list[int]], sign: int) -> None:
    """A placement takes (``sign`` -1), a finish or failure gives back (+1), every extra
    dimension the task asks for on each of its machines."""
    for dimension, units in demand:
        column = extra_free[dimension]
        for machine in machines:
            column[machine] += sign * units


def simulate(
    problem: Problem,
    policy: Policy,
    model: TimeModel = EVENT,
    seed: int | None = None,
    measure_stages: bool = True,
) -> Schedule:
    """Run ``policy`` over ``problem`` until every task finished or nothing can change."""
    tasks = problem.tasks
    machines = problem.machines
    count = len(tasks)
    need, nodes, runtime = tasks.need, tasks.nodes, tasks.runtime_s
    capacity, clock = machines.capacity, machine_speeds(problem, model)
    align, duration_on = model.align, model.duration
    min_visible_gap = model.visible_after_placement

    rng = random.Random(seed)
    queue_order = [0] * count
    ready = policy.order(QueueContext(tasks, queue_order, rng))
    select = policy.select

    # arrival order; release_s is the submit time except for AR leases (align is monotone,
    # so sorting on the release time sorts the arrivals)
    release_s = tasks.release_s
    by_submit = arrival_order(problem, model.ordered_by_id)
    arrival_s = [align(release) for release in release_s]
    unfinished_parents = [len(parents) for parents in tasks.parents]
    has_arrived = bytearray(count)
    first_start = [_NAN] * count
    start = [_NAN] * count
    finish = [_NAN] * count
    placed_on: list[tuple[int, ...]] = [()] * count
    attempts = [0] * count
    running_on: list[set[int]] = [set() for _ in range(len(machines))]

    free = list(capacity)
    # extra dimensions: free units per dimension per machine; empty for cores-only problems
    resources_on = bool(machines.dimensions)
    demand = tasks.demand
    extra_free = [list(column) for column in machines.extra_capacity]
    usable = bytearray(machines.initially_active)
    # machines that may receive tasks, in topology order
    open_machines = [m for m in range(len(machines)) if usable[m]]
    smallest_need = min(need, default=CORE_UNITS)

    finishes: list[tuple[float, float, int, int]] = []  # (seen at, finish, task, attempt)
    changes = problem.state_changes
    next_change = 0
    next_arrival = 0
    enqueued = 0
    lost_core_s = 0.0
    cycles = 0
    # the stages, called the same way whether or not they are timed
    take, filter_cores, filter_resources = ready.take, free_capacity, free_resources
    timer = StageTimer(STAGES) if measure_stages else None
    if timer is not None:
        take = timer.wrap("T2", take, lambda args: 0)  # T2's size is the queue, per cycle
        filter_cores = timer.wrap("R4", filter_cores, lambda args: len(args[1]))
        filter_resources = timer.wrap("R4", filter_resources, lambda args: len(args[2]))
        select = timer.wrap("R5", select, lambda args: len(args[2]))

    def enqueue(task: int) -> None:
        nonlocal enqueued
        queue_order[task] = enqueued
        enqueued += 1

    def apply_change(t_change: float, machine: int, state: MachineState) -> None:
        nonlocal open_machines, lost_core_s
        if state is MachineState.ACTIVE:
            usable[machine] = 1
        else:
            usable[machine] = 0
            if state is not MachineState.MAINTENANCE:
                for task in sorted(running_on[machine]):
                    if finish[task] <= t_change:
                        continue  # done before the failure; seen by the finish step
                    lost_core_s += (
                        (t_change - start[task]) * need[task] * nodes[task] / CORE_UNITS
                    )
                    for other in placed_on[task]:
                        free[other] += need[task]
                        running_on[other].discard(task)
                    if resources_on:
                        _shift_resources(demand[task], placed_on[task], extra_free, +1)
                    attempts[task] += 1  # invalidates its pending finish
                    finish[task] = _NAN
                    placed_on[task] = ()
                    enqueue(task)
                    ready.add(task)
        open_machines = [m for m in range(len(machines)) if usable[m]]

    now = align(min(tasks.submit_s, default=0.0))
    if changes:
        now = min(now, align(changes[0].time_s))
    while True:
        cycles += 1
        if timer is not None:
            timer.begin_cycle()

        # machine state changes seen in this cycle
        while next_change < len(changes) and align(changes[next_change].time_s) <= now:
            change = changes[next_change]
            apply_change(change.time_s, change.machine, change.state)
            next_change += 1

        # C1 + T1: finished tasks give back cores and may make children eligible; new
        # arrivals join the queue, and the eligible ones the ready set
        released = 0
        while finishes and finishes[0][0] <= now:
            _, _, task, attempt = heapq.heappop(finishes)
            if attempt != attempts[task]:
                continue
            for machine in placed_on[task]:
                free[machine] += need[task]
                running_on[machine].discard(task)
            if resources_on:
                _shift_resources(demand[task], placed_on[task], extra_free, +1)
            for child in tasks.children[task]:
                unfinished_parents[child] -= 1
                if unfinished_parents[child] == 0 and has_arrived[child]:
                    ready.add(child)
                    released += 1
        while next_arrival < count and arrival_s[by_submit[next_arrival]] <= now:
            task = by_submit[next_arrival]
            next_arrival += 1
            has_arrived[task] = 1
            enqueue(task)
            if unfinished_parents[task] == 0:
                ready.add(task)
                released += 1

        if len(ready):
            if timer is not None:
                timer.mark("T1", released)
                timer.sizes["T2"] = len(ready)
            largest = max(map(free.__getitem__, open_machines), default=0)
            skipped: list[int] = []
            while largest >= smallest_need and len(ready):
                task = take()
                task_need = need[task]
                wanted = nodes[task]
                if task_need > largest:
                    skipped.append(task)
                    continue
                if resources_on:
                    candidates = filter_resources(
                        task_need, demand[task], open_machines, free, extra_free)
                else:
                    candidates = filter_cores(task_need, open_machines, free)
                if len(candidates) < wanted:
                    skipped.append(task)
                    continue
                chosen = select(task_need, wanted, candidates, free)

                # every node runs at its machine's speed; the task ends with the slowest
                if wanted == 1:
                    machine = chosen[0]
                    end = now + duration_on(runtime[task], clock[machine])
                    refresh_largest = free[machine] == largest
                    free[machine] -= task_need
                    running_on[machine].add(task)
                else:
                    end = now + max(duration_on(runtime[task], clock[m]) for m in chosen)
                    refresh_largest = True
                    for machine in chosen:
                        free[machine] -= task_need
                        running_on[machine].add(task)
                placed_on[task] = tuple(chosen)
                if resources_on:
                    _shift_resources(demand[task], chosen, extra_free, -1)
                start[task] = now
                if first_start[task] != first_start[task]:  # NaN: first attempt
                    first_start[task] = now
                finish[task] = end
                seen = align(end)
                if seen < now + min_visible_gap:
                    seen = now + min_visible_gap
                heapq.heappush(finishes, (seen, end, task, attempts[task]))
                if refresh_largest:
                    largest = max(map(free.__getitem__, open_machines), default=0)
            ready.give_back(skipped)

            if timer is not None:
                timer.end_cycle(now, "rest")

        # the next cycle in which anything can change
        upcoming: list[float] = []
        if finishes:
            upcoming.append(finishes[0][0])
        if next_arrival < count:
            upcoming.append(arrival_s[by_submit[next_arrival]])
        if next_change < len(changes):
            upcoming.append(align(changes[next_change].time_s))
        if not upcoming:
            break
        now = max(min(upcoming), now)

    return Schedule(
        policy=policy,
        time_model=model.name,
        seed=seed,
        arrival_s=arrival_s,
        first_start_s=first_start,
        start_s=start,
        finish_s=finish,
        machines=placed_on,
        attempts=attempts,
        lost_core_s=lost_core_s,
        cycles=cycles,
        stages=timer.records if timer is not None else [],
        cycle_cpu=timer.cycle_cpu if timer is not None else [],
    )
