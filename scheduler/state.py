"""The scheduler state every stage is handed: the time, free capacity per machine (cores,
and every other resource the problem schedules), the running tasks with their expected and
real finish times, and the queue.

``SchedulerState`` holds what every planner shares with the event loop (``engine.py``).
Each planner extends it with its queue and its running set: ``CycleState`` (the SC18
planner, ``planners/sc18.py``) with the ready queue its T2 policy built, ``ReservingState``
(the queue planners: strict, EASY, conservative; ``backfilling.py``) with a queue sorted on
a static key, the running tasks sorted by expected end, and the reservations. Every stage
can ask any state for ``running_tasks()``.

Mechanism (time, arrivals, finishes, machine events, requeueing after a failure) lives in
the event loop; placing and releasing in the planners and the methods here; policy (which
task, which machines, who may jump the queue) in the stage components, which read this
state.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dcx.scheduler.packing import spread_demand
from dcx.scheduler.problem import CORE_UNITS, MachineTable, TaskTable

if TYPE_CHECKING:
    from dcx.scheduler.policies import ReadyQueue

_NAN = float("nan")

Demand = tuple[tuple[int, int], ...]
"""Per node, ``(dimension index, units)`` of every resource beside cores a task asks for."""


@dataclass(frozen=True)
class Reservation:
    """Where and when a waiting task is promised to start."""

    start_s: float
    machines: tuple[int, ...]
    end_s: float
    """Its start plus its requested time on those machines (the slowest of them)."""
    shares: tuple[int, ...] | None = None
    """A cores-anywhere task spread over ``machines``: the core units on each (``None``:
    its ``need`` on each)."""
    taken: tuple[Demand, ...] | None = None
    """What each of ``machines`` gives of the resources beside cores, for a profile that
    plans them (``None``: cores only)."""


@dataclass(kw_only=True)
class SchedulerState:
    """Lists are indexed by task or by machine (the ``Problem``'s indices). A stage may read
    everything; only the event loop and the planner change it."""

    now: float
    tasks: TaskTable
    """The problem's tasks (ids, jobs, submit, runtime and requested times, parents)."""
    machines: MachineTable
    """The problem's machines (ids, clocks, os, arch, features)."""
    capacity: list[int]
    """Cores per scheduling machine in ``CORE_UNITS``."""
    free: list[int]
    usable: bytearray
    """1 for a machine that may receive tasks (not failed, halted or in maintenance)."""
    need: list[int]
    """Cores per node of each task, in ``CORE_UNITS``."""
    nodes: list[int]
    start_s: list[float]
    expected_end_s: list[float]
    """When a running task is expected to end (start + its requested time there)."""
    finish_s: list[float]
    """When a running or finished task really ends."""
    placed_on: list[tuple[int, ...]]
    arrival_s: list[float]
    """When each task arrives (its release time, aligned by the time model)."""
    extra_free: list[list[int]] = field(default_factory=list)
    """Free units per machine of each resource beside cores (one list per dimension of
    ``MachineTable.dimensions``); empty for a cores-only problem."""
    demand: list[Demand] = field(default_factory=list)
    """Per task, what it asks per node of each resource beside cores."""
    shares: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Tasks spread over several machines (cores anywhere, ``packing.py``): the core units
    on each of their ``placed_on`` machines, kept after they end. A task not in it has its
    ``need`` on each."""
    allowed: Callable[[int], Sequence[int] | None] | None = None
    """R2/R3: ``task -> the machines it may ever use`` (``None``: every machine); ``None``
    when no static filter restricts any task. Set by a planner that reads it through
    ``open_for`` and ``fitting`` (the queue planners)."""
    started: list[int] = field(default_factory=list)
    """Tasks the planner started in the current cycle, in order (the event loop schedules
    their ends and empties it)."""

    @property
    def open_machines(self) -> list[int]:
        return [machine for machine, flag in enumerate(self.usable) if flag]

    def open_for(self, task: int) -> list[int]:
        """The usable machines (in topology order) the task may use."""
        machines = self.allowed(task) if self.allowed is not None else None
        if machines is None:
            return self.open_machines
        usable = self.usable
        return [machine for machine in machines if usable[machine]]

    def fitting(self, task: int, free: list[int] | None = None,
                extra: Sequence[Sequence[int]] | None = None) -> list[int]:
        """R4: usable machines (in topology order) the task may use, with its cores free in
        ``free`` and every other resource it asks for free in ``extra`` (the current free
        amounts by default)."""
        view = self.free if free is None else free
        need = self.need[task]
        machines = self.allowed(task) if self.allowed is not None else None
        if machines is None:
            fitting = [m for m, flag in enumerate(self.usable) if flag and view[m] >= need]
        else:
            usable = self.usable
            fitting = [m for m in machines if usable[m] and view[m] >= need]
        if self.demand and self.demand[task]:
            columns = self.extra_free if extra is None else extra
            for dimension, units in self.demand[task]:
                column = columns[dimension]
                fitting = [m for m in fitting if column[m] >= units]
        return fitting

    def taken_on(self, task: int, machines: Sequence[int],
                 shares: Sequence[int] | None) -> Sequence[Demand]:
        """What each of ``machines`` gives the task of the resources beside cores: its
        demand on each, or for a spread task each machine's share (``packing.py``)."""
        if not self.demand or not self.demand[task]:
            return ()
        if shares is None:
            return (self.demand[task],) * len(machines)
        return spread_demand(self.need[task], self.demand[task], shares)

    def shift_resources(self, task: int, machines: Sequence[int],
                        shares: Sequence[int] | None, sign: int) -> None:
        """A placement takes (``sign`` -1), a finish or failure gives back (+1), the
        resources beside cores the task holds on each of its machines."""
        extra_free = self.extra_free
        taken = self.taken_on(task, machines, shares)
        if not taken:
            return  # it asks for cores only
        for machine, amounts in zip(machines, taken, strict=True):
            for dimension, units in amounts:
                extra_free[dimension][machine] += sign * units

    def running_tasks(self) -> list[tuple[float, int]]:
        """Running tasks as ``(expected end, task)``, earliest expected end first (their
        real ends are in ``finish_s``)."""
        raise NotImplementedError

    def running_on(self, machine: int) -> list[int]:
        """The tasks running on ``machine``, by expected end."""
        return [task for _, task in self.running_tasks() if machine in self.placed_on[task]]

    def lost_with(self, machine: int, at: float) -> list[int]:
        """T11: the running tasks a failure of ``machine`` at ``at`` takes down (those not
        finished by then), in task order: the order the event loop queues them again."""
        placed_on, finish_s = self.placed_on, self.finish_s
        return sorted(task for _, task in self.running_tasks()
                      if machine in placed_on[task] and finish_s[task] > at)

    def busy_core_s(self, task: int, until: float) -> float:
        begin = self.start_s[task]
        if math.isnan(begin):
            return 0.0
        return (until - begin) * self.cores_held(task) / CORE_UNITS

    def cores_held(self, task: int) -> int:
        """The core units the task holds over all its machines."""
        shares = self.shares.get(task)
        if shares is not None:
            return sum(shares)
        return self.need[task] * len(self.placed_on[task])


@dataclass(kw_only=True)
class CycleState(SchedulerState):
    """The SC18 planner's state: the ready queue (eligible tasks in the T2 policy's order,
    the J3 job order on top when one is declared) and the machines that may receive tasks
    as a list, changed in place so the stages bound to it see every change."""

    ready: ReadyQueue
    running: dict[int, None] = field(default_factory=dict)
    """The running tasks, in the order they started (an insertion-ordered set: the planner
    adds and removes one per task, and sorts only when a stage asks)."""
    open_list: list[int]
    """The usable machines in topology order (``open_machines``, kept up to date)."""

    def running_tasks(self) -> list[tuple[float, int]]:
        expected_end = self.expected_end_s
        return sorted((expected_end[task], task) for task in self.running)


@dataclass(kw_only=True)
class ReservingState(SchedulerState):
    """The queue planners' state: a queue sorted on the T2 (and J3) key, and the
    reservations the backfilling component made."""

    expected_duration: Callable[[int, int], float]
    """``(task, machine) -> requested time on that machine``."""
    real_duration: Callable[[int, int], float]
    """``(task, machine) -> how long the task really runs there`` (cut at its requested
    time)."""
    queue: list[tuple[tuple[float, ...], int]] = field(default_factory=list)
    """Waiting eligible tasks as ``(policy key, task)``, in policy order."""
    enqueued: list[tuple[tuple[float, ...], int]] = field(default_factory=list)
    """The queue entries added since the component's last pass (the planner empties it after
    each pass): what EASY scans when nothing else changed."""
    running: list[tuple[float, int]] = field(default_factory=list)
    """Running tasks as ``(expected end, task)``, earliest expected end first."""
    reservations: dict[int, Reservation] = field(default_factory=dict)
    first_reservation_s: list[float] = field(default_factory=list)
    """The first reservation each task was given (NaN: none): what the backfilling
    guarantees are checked against."""
    def running_tasks(self) -> list[tuple[float, int]]:
        return self.running

    @functools.cached_property
    def one_pool(self) -> bool:
        """One scheduling machine, cores only, no filter: the planners' plain-number paths
        apply (none of these changes during a run, and the planners ask at every event)."""
        return len(self.capacity) == 1 and self.allowed is None and not self.extra_free

    def enqueue(self, key: tuple[float, ...], task: int) -> None:
        entry = (key, task)
        queue = self.queue
        if not queue or queue[-1] < entry:
            queue.append(entry)  # where arrival order puts it (FCFS): no search
        else:
            bisect.insort(queue, entry)
        self.enqueued.append(entry)

    def expected_length(self, task: int, machines: tuple[int, ...] | list[int]) -> float:
        return max(self.expected_duration(task, machine) for machine in machines)

    def start(self, task: int, machines: tuple[int, ...] | list[int],
              shares: Sequence[int] | None = None) -> None:
        """Place ``task`` on ``machines`` now (the caller has checked that it fits), with
        ``shares`` core units on each when it is spread (cores anywhere)."""
        chosen = tuple(machines)
        need = self.need[task]
        if shares is not None:
            held = self.shares[task] = tuple(shares)
            for machine, cores in zip(chosen, held, strict=True):
                self.free[machine] -= cores
            expected = self.expected_length(task, chosen)
            real = max(self.real_duration(task, m) for m in chosen)
        elif len(chosen) == 1:  # most tasks: no max over one machine
            if self.shares:
                self.shares.pop(task, None)  # placed whole this time
            machine = chosen[0]
            self.free[machine] -= need
            expected = self.expected_duration(task, machine)
            real = self.real_duration(task, machine)
        else:
            if self.shares:
                self.shares.pop(task, None)
            for machine in chosen:
                self.free[machine] -= need
            expected = self.expected_length(task, chosen)
            real = max(self.real_duration(task, m) for m in chosen)
        if self.extra_free:
            self.shift_resources(task, chosen, shares, -1)
        self._started(task, chosen, expected, real)

    def start_on_one(self, task: int, expected: float) -> None:
        """``start`` on the one scheduling machine of ``one_pool``, placed whole, its
        requested time there ``expected``: the same steps without the cases that cannot
        arise there (spread shares, resources beside cores), since the planners start
        every task of a large trace here."""
        self.free[0] -= self.need[task]
        if self.shares:
            self.shares.pop(task, None)  # placed whole this time
        self._started(task, (0,), expected, self.real_duration(task, 0))

    def _started(self, task: int, chosen: tuple[int, ...], expected: float,
                 real: float) -> None:
        """What every start records once the task's cores are taken: its times, its
        machines, its place among the running tasks (by expected end)."""
        now = self.now
        end = self.expected_end_s[task] = now + expected
        self.start_s[task] = now
        self.finish_s[task] = now + real
        self.placed_on[task] = chosen
        bisect.insort(self.running, (end, task))
        if self.reservations:
            self.reservations.pop(task, None)
        self.started.append(task)

    def release(self, task: int) -> None:
        """The task ended or was taken off a failed machine: its cores (and every other
        resource it held) are free again."""
        shares = self.shares.get(task) if self.shares else None
        if self.extra_free:
            self.shift_resources(task, self.placed_on[task], shares, +1)
        if shares is not None:
            for machine, cores in zip(self.placed_on[task], shares, strict=True):
                self.free[machine] += cores
        else:
            need, free = self.need[task], self.free
            for machine in self.placed_on[task]:
                free[machine] += need
        running = self.running
        del running[bisect.bisect_left(running, (self.expected_end_s[task], task))]
