"""The SC18 greedy planner: the nine paper policies (T2 order x R5 selection) and every
declared stage combination over them. Each cycle hands out the eligible tasks in T2 order
(J3's job order on top when one is declared); each that R2/R3 + R4 find machines for is
placed where R5 chooses (T4). A task that does not fit stays queued and the next one is
tried: the SC18 scheduler's greedy pass, with no reservation.

The stages are components bound to the planner's ``CycleState`` once per run
(``bind_stages``: ``job_stages.py``, ``resource_stages.py``, the T2 queues of
``policies.py``); a measured run wraps the per-task stage calls with ``StageTimer.wrap``
instead of branching in the pass.

Resources beyond cores (``problem.py``): when the problem has extra dimensions (memory,
GPUs, named resources), R4 keeps only machines with enough free cores and enough free
units of every dimension the task asks for, a placement takes all of them on every chosen
machine, and a finish or a failure gives all of them back. A problem without extra
dimensions runs the cores-only code paths. The largest-free-cores shortcut stays valid in
both: enough free cores is necessary either way.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dcx.scheduler.job_stages import (
    JOB_ELIGIBILITY,
    JOB_ORDERS,
    Admission,
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
from dcx.scheduler.stage_timing import StageTimer
from dcx.scheduler.state import CycleState
from dcx.scheduler.time_models import TimeModel, machine_speeds

if TYPE_CHECKING:
    from dcx.scheduler.engine import Schedule

STAGES: tuple[str, ...] = ("T1", "T2", "R4", "R5", "rest")

_NAN = float("nan")
_INF = float("inf")


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


class GreedyPlanner:
    """The SC18 planner over a ``CycleState``: what the event loop calls (``engine.py``)."""

    def __init__(self, problem: Problem, policy: Policy, model: TimeModel,
                 seed: int | None, measure_stages: bool) -> None:
        tasks, machines = problem.tasks, problem.machines
        count = len(tasks)
        self.model = model
        self.clock = machine_speeds(problem, model)
        self.run_for = model.run_for(tasks)
        self.queue_order = [0] * count
        """Each task's place in the queue: arrival order, renewed on a requeue (FIFO)."""
        self.enqueued = 0
        self.smallest_need = smallest_part(tasks)
        usable = bytearray(machines.initially_active)
        context = QueueContext(tasks, self.queue_order, random.Random(seed))
        state = self.state = CycleState(
            now=0.0, tasks=tasks, machines=machines, capacity=list(machines.capacity),
            free=list(machines.capacity), usable=usable, need=tasks.need, nodes=tasks.nodes,
            start_s=[_NAN] * count, expected_end_s=[_NAN] * count, finish_s=[_NAN] * count,
            placed_on=[()] * count, arrival_s=model.arrivals(tasks),
            extra_free=[list(column) for column in machines.extra_capacity],
            demand=tasks.demand, ready=_EMPTY, open_list=[m for m in range(len(machines))
                                                         if usable[m]])
        context = replace(context, state=state)
        state.ready = ready_queue(policy, context, state)
        self.timer = StageTimer(STAGES) if measure_stages else None
        self.stages = bind_stages(policy, state, self.timer)
        self.admit = self.stages.admit
        self.allowed: Allowed | None = combine(static_filters(policy, state))
        self.release = self.releaser()
        self.eligible = state.ready.add

    # ----------------------------------------------------------------- what the loop calls

    def joined(self, tasks: list[int]) -> None:
        """Tasks that arrived take their place in the queue (FIFO's order), parents or
        not."""
        queue_order, position = self.queue_order, self.enqueued
        for task in tasks:
            queue_order[task] = position
            position += 1
        self.enqueued = position

    def requeue(self, task: int) -> None:
        """T11: a task taken off a failed machine queues again, behind the others."""
        self.queue_order[task] = self.enqueued
        self.enqueued += 1
        self.state.ready.add(task)

    def machines_changed(self) -> None:
        state = self.state
        state.open_list[:] = state.open_machines

    wakes_up = False

    def next_wakeup(self) -> float:
        return _INF

    def annotate(self, schedule: Schedule) -> None:
        """Nothing: the schedule has the state's machines and shares already."""

    def plan(self, released: int, freed: bool, replan: bool) -> None:
        if len(self.state.ready):
            self.cycle(self.state.now, released)

    def releaser(self) -> Callable[[int], None]:
        """``release(task)``: the task's cores (and other resources) are free again on all
        its machines, and it leaves the running list. Bound to the state's lists once: it
        runs once per task."""
        state = self.state
        need, placed_on, free, running = state.need, state.placed_on, state.free, state.running
        extra_free, shares, give_back = state.extra_free, state.shares, state.shift_resources

        def release(task: int) -> None:
            placed = placed_on[task]
            held = shares.get(task) if shares else None
            if held is not None:
                for machine, cores in zip(placed, held, strict=True):
                    free[machine] += cores
            else:
                for machine in placed:
                    free[machine] += need[task]
            if extra_free:
                give_back(task, placed, held, +1)
            del running[task]

        return release

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
        start, expected_end, finish = state.start_s, state.expected_end_s, state.finish_s
        placed_on, started, smallest_need = state.placed_on, state.started, self.smallest_need
        extra_free = state.extra_free
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
            if anywhere and task in state.shares:
                del state.shares[task]  # spread before a failure, whole this time
            if extra_free:
                state.shift_resources(task, chosen, None, -1)
            placed_on[task] = tuple(chosen)
            start[task] = now
            finish[task] = end
            expected = end
            if requested[task] != runtime[task]:
                expected = now + max(duration_on(requested[task], clock[m]) for m in chosen)
            expected_end[task] = expected
            running[task] = None
            started.append(task)
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
        chosen, shares, _ = found
        for machine, cores in zip(chosen, shares, strict=True):
            free[machine] -= cores
        state.shares[task] = tuple(shares)
        if state.extra_free:
            state.shift_resources(task, chosen, shares, -1)
        state.placed_on[task] = tuple(chosen)
        return True

    def started(self, task: int, now: float, end: float, chosen: list[int]) -> None:
        """T4's bookkeeping for a task placed on ``chosen`` now, ending at ``end``."""
        state = self.state
        state.start_s[task] = now
        state.finish_s[task] = end
        expected = end
        runtime, requested = self.run_for, state.tasks.requested_s
        if requested[task] != runtime[task]:
            duration_on = self.model.duration
            expected = now + max(duration_on(requested[task], self.clock[m]) for m in chosen)
        state.expected_end_s[task] = expected
        state.running[task] = None
        state.started.append(task)


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
