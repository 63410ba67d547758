"""The SC18 engine: cycles of J2 (job eligibility), T1 (task eligibility), T2 (ordering),
R2/R3 + R4 (static and dynamic machine filters) and R5 (selection) over a compiled
``Problem``, under one of two time models.

Mechanism and policy are apart. ``Simulation`` is the mechanism: the cycles, arrivals,
finishes becoming visible, placing and releasing, machine state events and T11 recovery,
over a ``CycleState`` (``state.py``). The policy is in stage components bound to that state
once per run (``bind_stages``: ``job_stages.py``, ``resource_stages.py``, the T2 queues of
``policies.py``, the J3 job order over them); a measured run wraps the per-task stage calls
with ``StageTimer.wrap`` instead of branching in the loop.

* ``sc18``: the paper's simulator. Cycles at t = 1, 11, 21, …; a task arrives at the first
  tick at or after its submit time; duration = floor(4000 x runtime / MHz); a finish is seen
  (cores back, children eligible) at the first tick at or after it, never in the cycle that
  placed the task.
* ``event``: a cycle at every arrival, completion and machine state change; durations are
  runtime x reference clock / machine clock without rounding.

What the two differ in beside time is written once, as options of ``TimeModel``:
``event_order`` (finishes first, or machine state changes first, at a tick) and
``cut_at_requested`` (a task reaching its requested time ends there, or runs on). ``sc18``
keeps the paper's choices (state changes first, nothing cut); ``event`` applies finishes
first and cuts, as ``notes/backfilling.md`` and resource managers do. The reservation engine
(``backfilling.py``) runs under ``event`` only and follows the same two options.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from dcx.core.model import MachineState
from dcx.scheduler.arrivals import Arrivals
from dcx.scheduler.job_stages import (
    JOB_ELIGIBILITY,
    JOB_ORDERS,
    Admission,
    JobGate,
    JobOrderedQueue,
)
from dcx.scheduler.packing import spread
from dcx.scheduler.policies import Policy, QueueContext, ReadyQueue
from dcx.scheduler.problem import CORE_UNITS, Problem, TaskTable
from dcx.scheduler.resource_stages import (
    MACHINE_FILTERS,
    Allowed,
    Candidates,
    Select,
    Selection,
    combine,
    static_filters,
)
from dcx.scheduler.stage_timing import StageRecord, StageTimer
from dcx.scheduler.state import CycleState, Demand

__all__ = ["STAGES", "Schedule", "StageRecord", "TimeModel", "simulate", "time_model"]

TimeModelName = Literal["sc18", "event"]
TIME_MODELS: tuple[TimeModelName, ...] = ("sc18", "event")

EventOrder = Literal["finishes-first", "state-changes-first"]
"""What a cycle applies first of what happened by its time: the finishes (their cores back,
then machine state changes), or the machine state changes (then the finishes). Arrivals
come last either way, and the planner runs once after all three."""

SC18_FIRST_TICK_S = 1.0
SC18_TICK_S = 10.0
REFERENCE_CLOCK_MHZ = 4000.0
"""sc18 treats trace runtimes as measured on a 4,000 MHz core."""

STAGES: tuple[str, ...] = ("T1", "T2", "R4", "R5", "rest")
PROGRESS_CYCLES = 1024
"""How often (in cycles) a run tells its progress callback how far it is."""


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
    event_order: EventOrder = "finishes-first"
    """Event order at a tick (``EventOrder``)."""
    cut_at_requested: bool = True
    """A task reaching its requested time is cut there (as Batsim and resource managers
    do: it ends at start + min(runtime, requested), and ``Schedule.killed`` counts it),
    rather than left to run its whole runtime."""


def _sc18_tick(t: float, first: float = SC18_FIRST_TICK_S, tick: float = SC18_TICK_S,
               ceil: Callable[[float], int] = math.ceil) -> float:
    # the constants are default arguments: local lookups in a function called per task
    if t <= first:
        return first
    return first + tick * ceil((t - first) / tick)


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
                 integer_speed=True, event_order="state-changes-first",
                 cut_at_requested=False)
"""The paper's simulator: its datacenter applied machine state before seeing finishes, and
nothing cut a task (its traces have no requested times)."""
EVENT = TimeModel("event", _same_time, _event_duration, 0.0)
"""Finishes first (every completion, then every state change, then every arrival, as
``notes/backfilling.md`` asks), tasks cut at their requested time."""


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
    """Tasks cut at their requested time (``TimeModel.cut_at_requested``)."""
    shares: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Cores-anywhere tasks spread over several machines: the core units on each of their
    ``machines`` (a task not in it has its cores per node on each)."""

    @property
    def unfinished(self) -> int:
        return sum(1 for finish in self.finish_s if math.isnan(finish))


_NAN = float("nan")


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
    job_keys = _id_keys(problem.job_ids)
    keys = sorted(zip(release_s, map(job_keys.__getitem__, tasks.job), _id_keys(tasks.ids),
                      range(len(tasks)), strict=True))
    return [key[3] for key in keys]


def _id_keys(ids: Sequence[object]) -> Sequence[object]:
    """``id_order_key`` of every id; the ids themselves when all are numbers (they sort
    the same, at a fraction of the cost)."""
    if all(type(value) is int for value in ids):
        return ids
    return [id_order_key(value) for value in ids]


def machine_speeds(problem: Problem, model: TimeModel) -> tuple[float | int | None, ...]:
    machines = problem.machines
    if model.integer_speed and machines.integer_clock_mhz:
        return machines.integer_clock_mhz
    return machines.clock_mhz


@dataclass(frozen=True)
class BoundStages:
    """The stages of one run, bound to its state: what the cycle calls per task."""

    take: Callable[[], int]
    """T2: the next eligible task in policy order."""
    candidates: Candidates
    """R2/R3 + R4: the machines that may take the task now."""
    select: Select
    """R5: the machines chosen among the candidates."""
    admit: Admission | None
    """J2, or ``None`` when every job is eligible."""


def bind_stages(policy: Policy, state: CycleState, timer: StageTimer | None) -> BoundStages:
    """The policy's stage components bound to ``state``; each per-task stage wrapped by
    ``timer`` when the run measures them."""
    static = static_filters(policy, state)
    take = state.ready.take
    candidates = MACHINE_FILTERS["FREE-RESOURCES"]().bind(state, combine(static))
    select = Selection(policy.select).bind(state)
    if timer is not None:
        open_list = state.open_list
        take = timer.wrap("T2", take, lambda args: 0)  # T2's size is the queue, per cycle
        candidates = timer.wrap("R4", candidates, lambda args: len(open_list))
        select = timer.wrap("R5", select, lambda args: len(args[1]))
    admit = JOB_ELIGIBILITY[policy.job_eligibility]().bind(state)
    return BoundStages(take, candidates, select, admit)


def ready_queue(policy: Policy, context: QueueContext, state: CycleState) -> ReadyQueue:
    """T2's queue, or J3's job order over one T2 queue per job."""
    job_keys = JOB_ORDERS[policy.job_order]().job_keys(state)
    if job_keys is None:
        return policy.order(context)
    order = policy.order
    return JobOrderedQueue(job_keys, state.tasks.job, lambda: order(context))


class Simulation:
    """The mechanism of the SC18 engine: cycles under the time model, arrivals (through
    J2), finishes seen, placing and releasing, machine state events and T11 recovery. The
    policy is in the stages ``bind_stages`` returns; ``cycle`` runs them in the reference
    architecture's order (T1, T2, then per task R4, R5 and T4 placing)."""

    def __init__(self, problem: Problem, policy: Policy, model: TimeModel,
                 seed: int | None, measure_stages: bool,
                 progress: Callable[[int], None] | None = None) -> None:
        tasks, machines = problem.tasks, problem.machines
        count = len(tasks)
        self.problem, self.policy, self.model, self.seed = problem, policy, model, seed
        self.progress = progress
        """Told every ``PROGRESS_CYCLES`` cycles how many tasks have arrived."""
        self.clock = machine_speeds(problem, model)
        self.run_for = (tasks.runtime_s if not model.cut_at_requested else
                        [min(runtime, requested) for runtime, requested
                         in zip(tasks.runtime_s, tasks.requested_s, strict=True)])
        """How long each task runs at the reference speed (cut at its requested time when
        the time model says so)."""
        self.queue_order = [0] * count
        self.enqueued = 0
        self.attempts = [0] * count
        self.first_start = [_NAN] * count
        self.next_change = 0
        self.finishes: list[tuple[float, float, int, int]] = []
        """``(seen at, finish, task, attempt)``: a finish counts only for its attempt."""
        self.lost_core_s = 0.0
        self.cycles = 0
        self.smallest_need = smallest_part(tasks)
        usable = bytearray(machines.initially_active)
        rng = random.Random(seed)
        context = QueueContext(tasks, self.queue_order, rng)
        state = self.state = CycleState(
            now=0.0, tasks=tasks, machines=machines, capacity=list(machines.capacity),
            free=list(machines.capacity), usable=usable, need=tasks.need, nodes=tasks.nodes,
            start_s=[_NAN] * count, expected_end_s=[_NAN] * count, finish_s=[_NAN] * count,
            placed_on=[()] * count, arrival_s=[model.align(r) for r in tasks.release_s],
            extra_free=[list(column) for column in machines.extra_capacity],
            demand=tasks.demand, ready=_EMPTY, open_list=[m for m in range(len(machines))
                                                         if usable[m]],
            arrived=bytearray(count))
        context = replace(context, state=state)
        state.ready = ready_queue(policy, context, state)
        self.timer = StageTimer(STAGES) if measure_stages else None
        self.stages = bind_stages(policy, state, self.timer)
        self.allowed: Allowed | None = combine(static_filters(policy, state))
        gate = (JobGate(self.stages.admit, tasks) if self.stages.admit is not None else None)
        self.arrivals = Arrivals(tasks, arrival_order(problem, model.ordered_by_id),
                                 state.arrival_s, gate, state.arrived)
        self.release = self.releaser()

    # ----------------------------------------------------------------- the event loop

    def run(self) -> Schedule:
        state, timer, align = self.state, self.timer, self.model.align
        tasks, changes = self.problem.tasks, self.problem.state_changes
        now = align(min(tasks.submit_s, default=0.0))
        if changes:
            now = min(now, align(changes[0].time_s))
        progress = self.progress
        while True:
            self.cycles += 1
            if progress is not None and not self.cycles % PROGRESS_CYCLES:
                progress(self.arrivals.next)
            state.now = now
            if timer is not None:
                timer.begin_cycle()
            if self.model.event_order == "finishes-first":
                released = self.see_finishes(now)
                self.apply_state_changes(now)
            else:
                self.apply_state_changes(now)
                released = self.see_finishes(now)
            released += self.admit_arrivals(now)
            if len(state.ready):
                self.cycle(now, released)
            upcoming = self.next_cycle()
            if upcoming is None:
                break
            now = max(upcoming, now)
        return self.schedule()

    def next_cycle(self) -> float | None:
        """The next cycle in which anything can change: a finish seen, an arrival or a
        machine state change."""
        upcoming: list[float] = []
        if self.finishes:
            upcoming.append(self.finishes[0][0])
        changes = self.problem.state_changes
        arrival = self.arrivals.next_time()
        if arrival is not None:
            upcoming.append(arrival)
        if self.next_change < len(changes):
            upcoming.append(self.model.align(changes[self.next_change].time_s))
        return min(upcoming) if upcoming else None

    def enqueue(self, task: int) -> None:
        """The task's place in the queue: arrival order, renewed on a requeue."""
        self.queue_order[task] = self.enqueued
        self.enqueued += 1

    def see_finishes(self, now: float) -> int:
        """C1: finishes seen by ``now`` give their resources back; children whose parents
        have all finished become eligible (T1). Returns how many did."""
        finishes, attempts, state = self.finishes, self.attempts, self.state
        add, release, finished = state.ready.add, self.release, self.arrivals.finished
        heappop = heapq.heappop
        released = 0
        while finishes and finishes[0][0] <= now:
            _, _, task, attempt = heappop(finishes)
            if attempt != attempts[task]:
                continue
            release(task)
            for child in finished(task):
                add(child)
                released += 1
        return released

    def admit_arrivals(self, now: float) -> int:
        """Tasks arriving by ``now`` join the queue (once J2 admits their job), and the
        ones without unfinished parents become eligible. Returns how many did."""
        joined = self.arrivals.joined(now)
        unfinished, add = self.arrivals.unfinished, self.state.ready.add
        queue_order, position = self.queue_order, self.enqueued
        released = 0
        for task in joined:
            queue_order[task] = position  # enqueue(task), unrolled: once per task
            position += 1
            if unfinished[task] == 0:
                add(task)
                released += 1
        self.enqueued = position
        return released

    # ----------------------------------------------------------------- placing, releasing

    def releaser(self) -> Callable[[int], None]:
        """``release(task)``: the task's cores (and other resources) are free again on all
        its machines, and it leaves the running list. Bound to the state's lists once: it
        runs once per task."""
        state = self.state
        need, placed_on, free, running = state.need, state.placed_on, state.free, state.running
        extra_free, demand = state.extra_free, state.demand
        shares, spread_demand = state.shares, state.spread_demand

        def release(task: int) -> None:
            placed = placed_on[task]
            if shares and task in shares:
                _release_spread(task, placed, shares, spread_demand, free, extra_free)
            else:
                for machine in placed:
                    free[machine] += need[task]
                if extra_free:
                    _shift_resources(demand[task], placed, extra_free, +1)
            del running[task]

        return release

    def apply_state_changes(self, now: float) -> None:
        """Machine state events seen by ``now``. FAILURE and HALT take a machine out at once
        and hand its running tasks to T11 (recovery); MAINTENANCE places nothing new there;
        ACTIVE brings it back."""
        changes, align, state = self.problem.state_changes, self.model.align, self.state
        changed = False
        while self.next_change < len(changes) and align(changes[self.next_change].time_s) <= now:
            change = changes[self.next_change]
            self.next_change += 1
            changed = True
            machine = change.machine
            state.usable[machine] = 1 if change.state is MachineState.ACTIVE else 0
            if change.state in (MachineState.ACTIVE, MachineState.MAINTENANCE):
                continue
            for task in state.lost_with(machine, change.time_s):
                self.recover(task, change.time_s)
        if changed:
            state.open_list[:] = state.open_machines

    def recover(self, task: int, failed_at: float) -> None:
        """T11: a task on a machine that failed loses its work so far and goes back to
        the queue (its pending finish no longer counts)."""
        state = self.state
        self.lost_core_s += state.busy_core_s(task, failed_at)
        self.release(task)
        self.attempts[task] += 1
        state.finish_s[task] = _NAN
        state.placed_on[task] = ()
        self.enqueue(task)
        state.ready.add(task)

    # ----------------------------------------------------------------- one cycle

    def cycle(self, now: float, released: int) -> None:
        """T1 has made ``released`` tasks eligible; T2 hands out the eligible tasks in
        policy order, and each one that R4 finds machines for is placed where R5 chooses
        (T4). A task that does not fit stays queued and the next one is tried (the SC18
        scheduler's greedy pass); the pass ends once no machine has the smallest task's
        cores free."""
        state, timer = self.state, self.timer
        ready = state.ready
        take, candidates_of, select = self.stages.take, self.stages.candidates, self.stages.select
        if timer is not None:
            timer.mark("T1", released)
            timer.sizes["T2"] = len(ready)
        need, nodes, runtime, requested = (state.need, state.nodes, self.run_for,
                                           state.tasks.requested_s)
        free, open_list, running = state.free, state.open_list, state.running
        clock, duration_on = self.clock, self.model.duration
        align, min_visible_gap = self.model.align, self.model.visible_after_placement
        start, expected_end, finish = state.start_s, state.expected_end_s, state.finish_s
        placed_on, first_start, attempts = state.placed_on, self.first_start, self.attempts
        finishes, smallest_need = self.finishes, self.smallest_need
        extra_free, demand = state.extra_free, state.demand
        heappush = heapq.heappush
        anywhere = state.tasks.anywhere
        largest = max(map(free.__getitem__, open_list), default=0)
        # all free cores: a cores-anywhere task no one machine holds needs no more
        total_free = sum(map(free.__getitem__, open_list)) if anywhere else 0
        skipped: list[int] = []
        while largest >= smallest_need and len(ready):
            task = take()
            task_need = need[task]
            wanted = nodes[task]
            candidates = candidates_of(task) if task_need <= largest else []
            if len(candidates) >= wanted:
                chosen = select(task, candidates)
            elif (anywhere and anywhere[task] and task_need <= total_free
                  and self.place_spread(task)):
                # cores anywhere, on no one machine: spread (``packing.py``), taken there
                chosen = list(placed_on[task])
                end = now + max(duration_on(runtime[task], clock[m]) for m in chosen)
                largest = max(map(free.__getitem__, open_list), default=0)
                total_free -= task_need
                self.started(task, now, end, chosen)
                continue
            else:
                skipped.append(task)
                continue

            # T4: every node runs at its machine's speed; the task ends with the slowest
            if wanted == 1:
                machine = chosen[0]
                end = now + duration_on(runtime[task], clock[machine])
                refresh_largest = free[machine] == largest
                free[machine] -= task_need
                total_free -= task_need
            else:
                end = now + max(duration_on(runtime[task], clock[m]) for m in chosen)
                refresh_largest = True
                total_free -= task_need * wanted
                for machine in chosen:
                    free[machine] -= task_need
            if extra_free:
                _shift_resources(demand[task], chosen, extra_free, -1)
            if anywhere and task in state.shares:
                del state.shares[task]  # spread before a failure, whole this time
            placed_on[task] = tuple(chosen)
            start[task] = now
            if first_start[task] != first_start[task]:  # NaN: first attempt
                first_start[task] = now
            finish[task] = end
            expected = end
            if requested[task] != runtime[task]:
                expected = now + max(duration_on(requested[task], clock[m]) for m in chosen)
            expected_end[task] = expected
            running[task] = None
            seen = align(end)
            if seen < now + min_visible_gap:
                seen = now + min_visible_gap
            heappush(finishes, (seen, end, task, attempts[task]))
            if refresh_largest:
                largest = max(map(free.__getitem__, open_list), default=0)
        ready.give_back(skipped)
        if timer is not None:
            timer.end_cycle(now, "rest")

    def place_spread(self, task: int) -> bool:
        """Spread a cores-anywhere task over the usable machines it may use (first fit in
        topology order, ``packing.spread``), taking its cores and its share of every other
        resource on each; whether it fitted."""
        state = self.state
        allowed = self.allowed(task) if self.allowed is not None else None
        usable = state.usable
        machines = state.open_list if allowed is None else [m for m in allowed if usable[m]]
        free, need = state.free, state.need[task]
        found = spread(need, state.demand[task], machines, free, state.extra_free)
        if found is None:
            return False
        chosen, shares, taken = found
        for machine, cores in zip(chosen, shares, strict=True):
            free[machine] -= cores
        state.shares[task] = tuple(shares)
        if taken:
            state.spread_demand[task] = tuple(taken)
            for machine, amounts in zip(chosen, taken, strict=True):
                for dimension, units in amounts:
                    state.extra_free[dimension][machine] -= units
        state.placed_on[task] = tuple(chosen)
        return True

    def started(self, task: int, now: float, end: float, chosen: list[int]) -> None:
        """T4's bookkeeping for a task placed on ``chosen`` now, ending at ``end``."""
        state = self.state
        state.start_s[task] = now
        if self.first_start[task] != self.first_start[task]:  # NaN: first attempt
            self.first_start[task] = now
        state.finish_s[task] = end
        expected = end
        runtime, requested = self.run_for, state.tasks.requested_s
        if requested[task] != runtime[task]:
            duration_on = self.model.duration
            expected = now + max(duration_on(requested[task], self.clock[m]) for m in chosen)
        state.expected_end_s[task] = expected
        state.running[task] = None
        seen = self.model.align(end)
        if seen < now + self.model.visible_after_placement:
            seen = now + self.model.visible_after_placement
        heapq.heappush(self.finishes, (seen, end, task, self.attempts[task]))

    def schedule(self) -> Schedule:
        state, timer = self.state, self.timer
        return Schedule(
            policy=self.policy,
            time_model=self.model.name,
            seed=self.seed,
            arrival_s=state.arrival_s,
            first_start_s=self.first_start,
            start_s=state.start_s,
            finish_s=state.finish_s,
            machines=state.placed_on,
            attempts=self.attempts,
            lost_core_s=self.lost_core_s,
            cycles=self.cycles,
            stages=timer.records if timer is not None else [],
            cycle_cpu=timer.cycle_cpu if timer is not None else [],
            shares=state.shares,
            killed=self.killed(),
        )

    def killed(self) -> int:
        """Finished tasks the time model cut at their requested time."""
        finish, run_for = self.state.finish_s, self.run_for
        return sum(1 for task, runtime in enumerate(self.problem.tasks.runtime_s)
                   if run_for[task] < runtime and not math.isnan(finish[task]))


class _NoQueue:
    """The ready queue before the run's own is built."""

    def add(self, task: int) -> None:
        raise RuntimeError("no ready queue yet")

    def take(self) -> int:
        raise RuntimeError("no ready queue yet")

    def give_back(self, tasks: Sequence[int]) -> None:
        raise RuntimeError("no ready queue yet")

    def __len__(self) -> int:
        return 0


_EMPTY = _NoQueue()


def smallest_part(tasks: TaskTable) -> int:
    """The fewest core units a machine must have free to take part of some task: a task's
    cores, or one core of a cores-anywhere task (which may be spread)."""
    anywhere = tasks.anywhere
    if not anywhere:
        return min(tasks.need, default=CORE_UNITS)
    return min((min(need, CORE_UNITS) if anywhere[task] else need
                for task, need in enumerate(tasks.need)), default=CORE_UNITS)


def _release_spread(task: int, placed: tuple[int, ...], shares: dict[int, tuple[int, ...]],
                    spread_demand: dict[int, tuple[Demand, ...]], free: list[int],
                    extra_free: list[list[int]]) -> None:
    """A spread task gives back the cores and the resources it took on each machine (its
    shares stay on record for the schedule)."""
    for machine, cores in zip(placed, shares[task], strict=True):
        free[machine] += cores
    taken = spread_demand.pop(task, None)
    if taken:
        for machine, amounts in zip(placed, taken, strict=True):
            for dimension, units in amounts:
                extra_free[dimension][machine] += units


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
    progress: Callable[[int], None] | None = None,
) -> Schedule:
    """Run ``policy`` over ``problem`` until every task finished or nothing can change;
    ``progress`` is told now and then how many tasks have arrived."""
    return Simulation(problem, policy, model, seed, measure_stages, progress).run()
