"""The event loop: one mechanism for every scheduler. It owns time (cycles under the time
model), arrivals (through J2), finishes (each at its real end: runtime, or requested time
when the model cuts there), dependency release (T1), machine state events and T11
recovery, and calls a planner once per cycle to start tasks:

* ``planners/sc18.py``: the SC18 greedy planner (the nine paper policies and every declared
  stage combination with backfilling ``GREEDY``);
* ``backfilling.py``'s ``QueuePlanner`` over a queue sorted on a static key, with one of
  ``planners/strict.py`` (strict FCFS, SJF, LJF), ``planners/easy.py`` (EASY) or
  ``planners/conservative.py`` (conservative backfilling) deciding what may start behind
  a task that does not fit.

What the time models differ in (``time_models.py``) is applied here once: when a cycle
happens and when something is seen (``align``), the event order within a cycle
(``event_order``: finishes first, or machine state changes first; arrivals come last either
way, and the planner runs once after all three), and how long a task runs
(``run_for``: cut at its requested time or not). ``sc18`` keeps the paper's choices.

A cycle runs only when something can change: a finish seen, an arrival, a machine state
change, or a planner's wake-up (a conservative reservation coming due).

Machine state events: FAILURE and HALT take a machine out at once and requeue the tasks
running on it, in task order (their elapsed core-seconds are counted as lost work);
MAINTENANCE lets the running tasks finish but places nothing new; ACTIVE brings a machine
back.

Tasks become eligible at their release time (``TaskTable.release_s``: the submit time, or
the start time of an AR lease), aligned by the time model like an arrival. Nothing is
preempted to honour a start time.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from dcx.core.model import MachineState
from dcx.scheduler.arrivals import Arrivals
from dcx.scheduler.backfilling import QueuePlanner
from dcx.scheduler.job_stages import Admission, JobGate
from dcx.scheduler.planners.sc18 import STAGES, GreedyPlanner
from dcx.scheduler.policies import Policy
from dcx.scheduler.problem import Problem
from dcx.scheduler.stage_timing import StageRecord, StageTimer
from dcx.scheduler.state import SchedulerState
from dcx.scheduler.time_models import (
    EVENT,
    REFERENCE_CLOCK_MHZ,
    SC18,
    TIME_MODELS,
    TimeModel,
    TimeModelName,
    machine_speeds,
    time_model,
)

__all__ = ["EVENT", "REFERENCE_CLOCK_MHZ", "SC18", "STAGES", "TIME_MODELS", "Schedule",
           "StageRecord", "TimeModel", "machine_speeds", "simulate", "time_model"]

PROGRESS_CYCLES = 1024
"""How often (in cycles) a run tells its progress callback how far it is."""


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
    """Queue planners: the first reservation each task was given (NaN: none)."""
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
    if not by_id:  # a stable sort keeps file order among equal release times
        return sorted(range(len(tasks)), key=release_s.__getitem__)
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



_INF = float("inf")


class Planner(Protocol):
    """What the event loop calls. A planner holds the state (free resources, its queue, its
    running set) and decides which tasks start; the loop decides when."""

    @property
    def state(self) -> SchedulerState:
        """The state the planner and its stages read, shared with the loop."""

    @property
    def admit(self) -> Admission | None:
        """J2 bound to the state, or ``None`` when every job is eligible."""

    @property
    def timer(self) -> StageTimer | None:
        """Per-cycle stage times, when the run measures them."""

    def joined(self, tasks: list[int]) -> None:
        """Tasks that arrived (and whose job J2 admitted), in arrival order; each becomes
        ``eligible`` once its parents have finished."""

    def eligible(self, task: int) -> None:
        """The task may start now: it joins the planner's queue."""

    def requeue(self, task: int) -> None:
        """T11: the task was taken off a failed machine; it queues again."""

    def release(self, task: int) -> None:
        """The task ended, or its machine failed: what it held is free again."""

    def machines_changed(self) -> None:
        """Machine states changed this cycle (``state.usable`` says how)."""

    def plan(self, released: int, freed: bool, replan: bool) -> None:
        """Start tasks now (``state.now``), recording each in ``state.started``.
        ``released``: how many tasks became eligible this cycle (T1); ``freed``: some
        finished; ``replan``: a task ended before its expected end or a machine changed,
        so plans made on expected ends are stale."""

    @property
    def wakes_up(self) -> bool:
        """Whether ``next_wakeup`` may ever say anything but ``inf`` (the loop asks it at
        every cycle otherwise)."""

    def next_wakeup(self) -> float:
        """When the planner wants a cycle though nothing else happens (``inf``: never)."""

    def annotate(self, schedule: Schedule) -> None:
        """Add what only the planner knows to the schedule of the run."""


class EventLoop:
    """The mechanism: time, arrivals, finishes, dependencies, machine events, recovery."""

    def __init__(self, problem: Problem, policy: Policy, model: TimeModel,
                 planner: Planner, seed: int | None,
                 progress: Callable[[int], None] | None = None) -> None:
        tasks = problem.tasks
        count = len(tasks)
        self.problem, self.policy, self.model, self.seed = problem, policy, model, seed
        self.planner, self.state = planner, planner.state
        self.progress = progress
        """Told every ``PROGRESS_CYCLES`` cycles how many tasks have arrived."""
        self.run_for = model.run_for(tasks)
        self.attempts = [0] * count
        self.first_start = [_NAN] * count
        self.next_change = 0
        self.finishes: list[tuple[float, float, int, int]] = []
        """``(seen at, finish, task, attempt)``: a finish counts only for its attempt."""
        self.lost_core_s = 0.0
        self.cycles = 0
        gate = JobGate(planner.admit, tasks) if planner.admit is not None else None
        self.arrivals = Arrivals(tasks, arrival_order(problem, model.ordered_by_id),
                                 self.state.arrival_s, gate)
        self.wakes_up = planner.wakes_up
        self.sees_at_once = model.sees_at_once

    def run(self) -> Schedule:
        state, planner, timer = self.state, self.planner, self.planner.timer
        changes_first = self.model.event_order == "state-changes-first"
        now = self.first_time()
        progress = self.progress
        changes = len(self.problem.state_changes)
        finishes, arrivals, plan = self.finishes, self.arrivals, planner.plan
        gated, wakes_up = arrivals.gate is not None, self.wakes_up
        # Most cycles see either finishes or arrivals, not both, and have no machine state
        # change left to look at: each step is called only when it has something to do.
        cycles = 0
        while now is not None:
            cycles += 1
            if progress is not None and not cycles % PROGRESS_CYCLES:
                progress(arrivals.next)
            state.now = now
            if timer is not None:
                timer.begin_cycle()
            replan = False
            if changes_first and self.next_change < changes:
                replan = self.apply_state_changes(now)
            if finishes and finishes[0][0] <= now:
                released, freed, early = self.see_finishes(now)
            else:
                released, freed, early = 0, False, False
            if not changes_first and self.next_change < changes:
                replan = self.apply_state_changes(now)
            # a task arrives by now, or J2 holds some back (a finish may let them in)
            if gated or arrivals.next_s <= now:
                released += self.admit_arrivals(now)
            plan(released, freed, replan or early)
            if state.started:
                self.record_starts(now)
            # the next cycle in which anything can change: a finish seen, an arrival, a
            # machine state change or the planner's wake-up
            upcoming = planner.next_wakeup() if wakes_up else _INF
            if finishes and finishes[0][0] < upcoming:
                upcoming = finishes[0][0]
            if arrivals.next_s < upcoming:
                upcoming = arrivals.next_s
            if self.next_change < changes:
                upcoming = min(upcoming, self.next_change_s())
            if upcoming == _INF:
                break
            if upcoming > now:
                now = upcoming
        self.cycles = cycles
        return self.schedule()

    def first_time(self) -> float | None:
        """The first cycle: the first arrival or machine state change."""
        changes = self.problem.state_changes
        first = self.arrivals.next_time()
        if changes:
            change = self.model.align(changes[0].time_s)
            first = change if first is None else min(first, change)
        return first

    def next_change_s(self) -> float:
        """When the next machine state change is seen (one is left)."""
        return self.model.align(self.problem.state_changes[self.next_change].time_s)

    def see_finishes(self, now: float) -> tuple[int, bool, bool]:
        """C1: finishes seen by ``now`` give their resources back; children whose parents
        have all finished become eligible (T1). Returns how many did, whether any task
        finished, and whether one did before its expected end."""
        finishes, attempts = self.finishes, self.attempts
        expected_end = self.state.expected_end_s
        release, eligible = self.planner.release, self.planner.eligible
        finished, children = self.arrivals.finished, self.arrivals.children
        heappop = heapq.heappop
        released = 0
        freed = early = False
        while finishes and finishes[0][0] <= now:
            _, end, task, attempt = heappop(finishes)
            if attempt != attempts[task]:
                continue
            freed = True
            if end < expected_end[task]:
                early = True
            release(task)
            if not children[task]:
                continue  # most tasks (every SWF job) have none
            for child in finished(task):
                eligible(child)
                released += 1
        return released, freed, early

    def admit_arrivals(self, now: float) -> int:
        """Tasks arriving by ``now`` join the queue (once J2 admits their job), and the
        ones without unfinished parents become eligible. Returns how many did. The loop
        calls it when a task arrives by ``now`` or J2 holds some back."""
        arrivals = self.arrivals
        joined = arrivals.joined(now)
        if not joined:
            return 0
        self.planner.joined(joined)
        unfinished, eligible = self.arrivals.unfinished, self.planner.eligible
        released = 0
        for task in joined:
            if unfinished[task] == 0:
                eligible(task)
                released += 1
        return released

    def apply_state_changes(self, now: float) -> bool:
        """Machine state events seen by ``now``. FAILURE and HALT take a machine out at once
        and hand its running tasks to T11 (``recover``); MAINTENANCE places nothing new
        there; ACTIVE brings it back. Whether any machine changed."""
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
            self.planner.machines_changed()
        return changed

    def recover(self, task: int, failed_at: float) -> None:
        """T11: a task on a machine that failed loses its work so far and goes back to
        the queue (its pending finish no longer counts)."""
        state = self.state
        self.lost_core_s += state.busy_core_s(task, failed_at)
        self.planner.release(task)
        self.attempts[task] += 1
        state.finish_s[task] = _NAN
        state.placed_on[task] = ()
        self.planner.requeue(task)

    def record_starts(self, now: float) -> None:
        """The tasks the planner started now: their first start, and their finish, seen
        when the time model aligns it but never before ``visible_after_placement``."""
        state, first_start, attempts = self.state, self.first_start, self.attempts
        finish_s, finishes = state.finish_s, self.finishes
        align, earliest = self.model.align, now + self.model.visible_after_placement
        heappush = heapq.heappush
        at_once = self.sees_at_once
        for task in state.started:
            if first_start[task] != first_start[task]:  # NaN: first attempt
                first_start[task] = now
            end = finish_s[task]
            if at_once:
                heappush(finishes, (end, end, task, attempts[task]))
                continue
            seen = align(end)
            if seen < earliest:
                seen = earliest
            heappush(finishes, (seen, end, task, attempts[task]))
        state.started.clear()

    def schedule(self) -> Schedule:
        state, timer = self.state, self.planner.timer
        schedule = Schedule(
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
        self.planner.annotate(schedule)
        return schedule

    def killed(self) -> int:
        """Finished tasks the time model cut at their requested time."""
        runtime = self.problem.tasks.runtime_s
        if self.run_for is runtime:
            return 0  # the model cuts nothing
        cut = np.array(self.run_for, dtype=np.float64) < np.array(runtime, dtype=np.float64)
        return int(np.count_nonzero(cut & ~np.isnan(np.array(self.state.finish_s,
                                                               dtype=np.float64))))


def planner_for(problem: Problem, policy: Policy, model: TimeModel, seed: int | None,
                measure_stages: bool) -> Planner:
    """The planner of ``policy``: a queue planner when it reserves (STRICT, EASY,
    CONSERVATIVE), else the SC18 greedy one."""
    if policy.reserves:
        return QueuePlanner(problem, policy, model)
    return GreedyPlanner(problem, policy, model, seed, measure_stages)


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
    planner = planner_for(problem, policy, model, seed, measure_stages)
    return EventLoop(problem, policy, model, planner, seed, progress).run()
