"""The queue planners: strict queue order, EASY and conservative backfilling, called by the
event loop (``engine.py``) under the event time model. ``QueuePlanner`` holds what they
share (the sorted queue, the pooled machines); the component deciding what may start is
one file each under ``planners/``.

Stages (the paper's names): J2 (``job_stages``) admits jobs, and T1 eligibility is the
event loop's (a task of an admitted job joins the queue when it has arrived and its parents
have finished); T2 ordering is the policy's static key (``_order_key``), after the J3 job
key when one is declared; R4 is ``ReservingState.fitting``; R5 is the policy's machine
selection; what may start behind a task that does not fit is the backfilling component
(``StrictQueue``, ``EasyBackfilling``, ``ConservativeBackfilling``), which reads the
``ReservingState`` and starts tasks through it. T11 (recovery): a machine that fails or
halts gives its running tasks back to the queue (their elapsed work is lost), and the
component plans again from scratch.

Rules, following Mu'alem & Feitelson (2001) and ``notes/backfilling.md``:

* A task's *requested time* is what the workload asked for (SWF field 9, a Haizea lease's
  duration); where the workload gives none its runtime stands in (an exact estimate). It
  scales with machine speed like the runtime. Under the event time model a task ends at
  start + min(runtime, requested) (``TimeModel.cut_at_requested``), so no task ends after
  its expected end.
* Everything at one instant happens before the planner runs once: finishes, then machine
  state changes, then arrivals (the event time model's ``event_order``).
* **EASY**: start tasks from the front while they fit. The first that does not (the head)
  gets the earliest time at which enough machines would have its cores free if the running
  tasks ended at their expected ends (the *shadow*), on machines chosen there by the R5
  policy. Every machine's cores free at the shadow beyond what the head takes there are its
  *extra*. A later task starts now if it fits now and either ends by the shadow on the
  machines it gets, or fits inside the extra of each of its machines (which it then uses
  up). Counting per machine, not pooled, so a backfilled task cannot land where the head is
  due (Example 3 of the note). The shadow is recomputed at every finish.
* **Conservative**: every waiting task holds a reservation at its earliest fit in a profile
  of free cores per machine over time (running tasks by expected end, then the
  reservations of the tasks ahead of it); tasks start when their reservation comes. When a
  task ends early every waiting task is re-inserted in queue order (compression): its old
  slot is still free, so no reservation moves later. The profile is kept for the whole run
  (the early finish's slot given back in place; ``planners/pooled_profile.py`` for one
  pool, ``planners/machine_profile.py`` machine by machine) and made afresh when a machine
  changes state (then a reservation may move later). An early finish frees its cores from
  that instant even when no task waits, for every later arrival.
* A task over several nodes on machines of different speeds is planned with its requested
  time on the slowest machine.
* Resources beside cores (memory, GPUs, named resources) are planned like cores: R4 keeps
  the machines with all of them free, EASY's extra is counted per machine for each of
  them, and conservative plans them in its profile (``planners/machine_profile.py``)
  when the problem has any. A cores-anywhere task takes each machine's share
  (``packing.py``).

R2/R3 (``resource_stages``): every task is planned over the machines its static filters
allow it (``ReservingState.allowed``, read by ``fitting`` and ``open_for``): R4 finds
candidates among them, EASY's shadow is the head's earliest start on its own machines, and a
conservative reservation is an earliest fit on the task's own machines. A task no allowed
machine can ever hold is refused before the run (``static_filter_diagnostics``).

Identical machines holding whole-machine tasks (an SWF trace on its own ``MaxProcs``
single-core machines) are interchangeable, so the planner plans them as one pooled machine
of all their cores and picks concrete machines when a task starts: the same schedule at a
fraction of the cost. Not when static filters allow tasks some machines only.

Shortcuts that change no schedule (``tests/test_scheduler_backfilling_differential.py``
holds them to the plain rules): on one scheduling machine EASY walks to the shadow from
whichever end of the running tasks passes fewer cores, and conservative keeps its profile
as plain numbers and moves a reservation only when an earlier start fits; a pass after
arrivals alone (nothing finished, the same head) has EASY look at the new tasks only; on one
scheduling machine EASY's scan behind the head looks only at the tasks whose width and
requested time, in buckets kept a byte each per queue entry, may meet a rule
(``planners/easy.py``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import TYPE_CHECKING

from dcx.core.codes import Code
from dcx.scheduler.job_stages import JOB_ELIGIBILITY, JOB_ORDERS, Admission
from dcx.scheduler.packing import spread
from dcx.scheduler.planners.conservative import ConservativeBackfilling
from dcx.scheduler.planners.easy import EasyBackfilling
from dcx.scheduler.planners.strict import Key, StrictQueue, negated, take_from
from dcx.scheduler.policies import MACHINE_SELECTIONS, MachineSelection, Policy
from dcx.scheduler.problem import CORE_UNITS, Problem
from dcx.scheduler.resource_stages import combine, static_filters
from dcx.scheduler.state import ReservingState
from dcx.scheduler.time_models import REFERENCE_CLOCK_MHZ, TimeModel

if TYPE_CHECKING:
    from dcx.scheduler.engine import Schedule

CODES = (
    Code("schedule.runtime-as-requested", "warning",
         "Tasks have no requested time; their runtime stands in (an exact estimate)."),
)

_NAN = float("nan")
_INF = float("inf")


def _order_key(problem: Problem, name: str) -> Callable[[int, int], Key]:
    """T2/J3: ``(task, queue position) -> key``; the queue is kept sorted on it."""
    tasks = problem.tasks
    if name in ("FIFO", "FCFS"):
        return lambda task, position: (position,)
    if name == "SJF":
        return lambda task, position: (tasks.requested_s[task], position)
    if name == "LJF":
        return lambda task, position: (-tasks.requested_s[task], position)
    if name == "SRTF":
        return lambda task, position: (
            tasks.runtime_s[task] * tasks.need[task] * tasks.nodes[task], position)
    raise ValueError(f"{name} has no fixed order; reservations need one (FCFS, SJF, LJF, SRTF)")


def _job_first(task_key: Callable[[int, int], Key], job_keys: list[float],
               job_of: list[int]) -> Callable[[int, int], Key]:
    """J3 before T2: jobs in key order (ties: workload order), each job's tasks by
    ``task_key``."""
    return lambda task, position: (
        job_keys[job_of[task]], job_of[task], *task_key(task, position))


Component = StrictQueue | EasyBackfilling | ConservativeBackfilling

COMPONENTS: dict[str, type[StrictQueue] | type[EasyBackfilling]
                 | type[ConservativeBackfilling]] = {
    "STRICT": StrictQueue,
    "EASY": EasyBackfilling,
    "CONSERVATIVE": ConservativeBackfilling,
}


def _pooled(problem: Problem) -> bool:
    """The machines that are up of one speed, none changing state (a drained or down
    machine stays out of every plan), and tasks that any free cores of them can host: each
    takes whole machines of one size, or each is cores anywhere. Their cores are then
    interchangeable."""
    machines, tasks = problem.machines, problem.tasks
    if machines.dimensions or problem.state_changes:
        return False
    active = _active(problem)
    if not active or len({machines.clock_mhz[machine] for machine in active}) != 1:
        return False
    anywhere = tasks.anywhere
    if anywhere and all(anywhere):
        return True
    capacities = {machines.capacity[machine] for machine in active}
    if anywhere or len(capacities) != 1:
        return False
    whole = next(iter(capacities))
    return all(need == whole for need in tasks.need)


def _active(problem: Problem) -> list[int]:
    """The machines up from the start, in topology order."""
    return [machine for machine, up in enumerate(problem.machines.initially_active) if up]


class _PoolMachines:
    """The concrete machines of tasks planned on one pool, chosen when each starts.

    Tasks of whole machines take the lowest-numbered idle ones (first fit), kept sorted
    (a wide task takes a slice of them at once, where a heap pops them one by one).
    Cores-anywhere tasks are laid as ``packing.py`` says (one machine the R5 policy picks
    when one holds them, else spread first fit in topology order); on single-core machines
    and whole-core tasks that too is the lowest-numbered idle machines."""

    def __init__(self, problem: Problem, select: MachineSelection) -> None:
        machines, tasks = problem.machines, problem.tasks
        self.tasks, self.select = tasks, select
        self.anywhere = bool(tasks.anywhere)
        active = _active(problem)
        self.single_cores = self.anywhere and all(
            machines.capacity[machine] == CORE_UNITS for machine in active) and all(
            need % CORE_UNITS == 0 for need in tasks.need)
        self.idle = active  # sorted: lowest-numbered first
        self.free = [0] * len(machines)  # a machine that is not up gives no cores
        for machine in active:
            self.free[machine] = machines.capacity[machine]
        self.shares: dict[int, tuple[int, ...]] = {}

    def take(self, task: int) -> tuple[int, ...]:
        tasks = self.tasks
        if not self.anywhere:
            return self._lowest_idle(tasks.nodes[task])
        need = tasks.need[task]
        if self.single_cores:
            count = need // CORE_UNITS
            if count > 1:
                self.shares[task] = (CORE_UNITS,) * count
            return self._lowest_idle(count)
        free = self.free
        whole = [machine for machine, cores in enumerate(free) if cores >= need]
        if whole:
            machine = self.select(need, 1, whole, free)[0]
            free[machine] -= need
            self.shares.pop(task, None)
            return (machine,)
        found = spread(need, (), range(len(free)), free)
        assert found is not None, "the pool had the task's cores free"
        take_from(free, found[0], found[1], need)
        self.shares[task] = tuple(found[1])
        return tuple(found[0])

    def _lowest_idle(self, count: int) -> tuple[int, ...]:
        idle = self.idle
        taken = tuple(idle[:count])
        del idle[:count]
        return taken

    def give_back(self, task: int, machines: tuple[int, ...]) -> None:
        if not self.anywhere or self.single_cores:
            idle = self.idle
            if not machines:
                return
            at = bisect.bisect_left(idle, machines[0])
            if at == len(idle) or idle[at] > machines[-1]:
                idle[at:at] = machines  # all in one gap between idle machines (most are)
            elif len(machines) > 8:
                idle.extend(machines)
                idle.sort()  # two sorted runs: merged in one pass
            else:
                for machine in machines:
                    bisect.insort(idle, machine)
        else:
            shares = self.shares.get(task)
            take_from(self.free, machines, None if shares is None else negated(shares),
                  -self.tasks.need[task])


def _scale(clock: float | None) -> float:
    return 1.0 if clock is None else REFERENCE_CLOCK_MHZ / clock



class QueuePlanner:
    """The planner of every reserving policy: the queue sorted on the T2 (and J3) key, the
    component deciding what may start behind a task that does not fit, and the concrete
    machines of pooled tasks. What the event loop calls (``engine.Planner``)."""

    def __init__(self, problem: Problem, policy: Policy, model: TimeModel) -> None:
        if model.align(0.5) != 0.5 or model.visible_after_placement:
            raise ValueError(f"{policy.name} runs under the event time model only")
        tasks, machines = problem.tasks, problem.machines
        count = len(tasks)
        select = MACHINE_SELECTIONS[policy.machine_selection]
        self.component: Component = COMPONENTS[policy.backfilling](select)
        self.wakes_up: bool = getattr(self.component, "wakes_up", True)
        """Whether the component may want a cycle of its own (a conservative reservation
        coming due); the loop asks ``next_wakeup`` only then."""
        requested, run_for = tasks.requested_s, model.run_for(tasks)
        # R2/R3 allow tasks some machines only, so the machines are no longer interchangeable
        allowed = combine(static_filters(policy, problem))
        pool = self.pool = (_PoolMachines(problem, select)
                            if allowed is None and _pooled(problem) else None)
        scale, capacity, need, nodes, usable = _planned_resources(problem, pool is not None)

        def expected_duration(task: int, machine: int) -> float:
            return requested[task] * scale[machine]

        def real_duration(task: int, machine: int) -> float:
            return run_for[task] * scale[machine]

        self.state = ReservingState(
            now=0.0, tasks=tasks, machines=machines, capacity=capacity,
            free=list(capacity), usable=usable, need=need,
            nodes=nodes, expected_duration=expected_duration, real_duration=real_duration,
            start_s=[_NAN] * count, expected_end_s=[_NAN] * count, finish_s=[_NAN] * count,
            placed_on=[()] * count, arrival_s=model.arrivals(tasks),
            extra_free=[list(column) for column in machines.extra_capacity],
            demand=tasks.demand if machines.extra_capacity else [],
            first_reservation_s=[_NAN] * count, allowed=allowed)
        self.order_key, self.admit = _job_stages(problem, policy, self.state)
        self.timer = None
        self.concrete: list[tuple[int, ...]] = [()] * count
        """The machines each task ran on (a pooled task's, chosen as it starts)."""
        self.position = 0
        self.arrived = False
        """Whether a task joined the queue since the last pass."""

    def joined(self, tasks: list[int]) -> None:
        """Nothing: a task takes its place in the queue when it becomes eligible."""

    def eligible(self, task: int) -> None:
        self.state.enqueue(self.order_key(task, self.position), task)
        self.position += 1
        self.arrived = True

    def requeue(self, task: int) -> None:
        self.eligible(task)

    def release(self, task: int) -> None:
        self.state.release(task)
        if self.pool is not None:
            self.pool.give_back(task, self.concrete[task])

    def machines_changed(self) -> None:
        self.component.on_machines_changed()

    def plan(self, released: int, freed: bool, replan: bool) -> None:
        state = self.state
        if state.queue or replan:
            # an early finish changes the plan even with nobody waiting: the cores it
            # frees are free from now for every task that arrives later
            self.component.plan(state, replan, freed, self.arrived)
        state.enqueued.clear()
        self.arrived = False
        pool, concrete = self.pool, self.concrete
        for task in state.started:
            concrete[task] = pool.take(task) if pool is not None else state.placed_on[task]

    def next_wakeup(self) -> float:
        return self.component.next_wakeup(self.state)

    def annotate(self, schedule: Schedule) -> None:
        schedule.machines = self.concrete
        schedule.reserved_s = self.state.first_reservation_s
        schedule.shares = self.pool.shares if self.pool is not None else self.state.shares



def _job_stages(problem: Problem, policy: Policy, state: ReservingState
                ) -> tuple[Callable[[int, int], Key], Admission | None]:
    """The queue's order key (T2, with the J3 job order first where it gives one) and J2
    bound to the state (``None`` when every job is eligible)."""
    order_key = _order_key(problem, policy.task_order)
    job_keys = JOB_ORDERS[policy.job_order]().job_keys(state)
    if job_keys is not None:
        order_key = _job_first(order_key, job_keys, problem.tasks.job)
    admit = JOB_ELIGIBILITY[policy.job_eligibility]().bind(state)
    return order_key, admit


def _planned_resources(problem: Problem, pooled: bool
                       ) -> tuple[list[float], list[int], list[int], list[int], bytearray]:
    """Per planned machine its time scale and capacity, per task its need and nodes, and
    which machines are usable: the machines as they are, or (``pooled``) one machine of all
    their cores, each task asking for its cores (a whole-node task for its nodes' cores)."""
    tasks, machines = problem.tasks, problem.machines
    if pooled:
        active = _active(problem)
        need = (list(tasks.need) if tasks.anywhere else
                [machines.capacity[active[0]] * nodes for nodes in tasks.nodes])
        return ([_scale(machines.clock_mhz[active[0]])],
                [sum(machines.capacity[machine] for machine in active)], need,
                [1] * len(tasks), bytearray([1]))
    return ([_scale(clock) for clock in machines.clock_mhz], list(machines.capacity),
            list(tasks.need), list(tasks.nodes), bytearray(machines.initially_active))


