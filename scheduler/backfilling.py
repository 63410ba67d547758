"""The reservation engine: strict queue order, EASY and conservative backfilling over the
same ``Problem`` the SC18 engine runs, under the event time model.

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
  scales with machine speed like the runtime. A task ends at start + min(runtime,
  requested): a task reaching its requested time is killed there, as resource managers do
  (``Schedule.killed`` counts them), so no task ends after its expected end.
* Everything at one instant happens before the policy runs once: finishes, then machine
  state changes, then arrivals.
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
  task ends early (or a machine changes state) the profile is rebuilt (on one pooled
  machine, ``profile.py``: given the early finish's cores back in place) and every waiting
  task re-inserted in queue order (compression): its old slot is still free, so no
  reservation moves later (unless a machine failed). An early finish rebuilds the profile
  even when no task waits, so the freed cores are free for every later arrival.
* A task over several nodes on machines of different speeds is planned with its requested
  time on the slowest machine.

R2/R3 (``resource_stages``): every task is planned over the machines its static filters
allow it (``ReservingState.allowed``, read by ``fitting`` and ``open_for``): R4 finds
candidates among them, EASY's shadow is the head's earliest start on its own machines, and a
conservative reservation is an earliest fit on the task's own machines. A task no allowed
machine can ever hold is refused before the run (``static_filter_diagnostics``).

Identical machines holding whole-machine tasks (an SWF trace on its own ``MaxProcs``
single-core machines) are interchangeable, so the engine plans them as one pooled machine
of all their cores and picks concrete machines when a task starts: the same schedule at a
fraction of the cost. Not when static filters allow tasks some machines only.

Shortcuts that change no schedule (``tests/test_scheduler_backfilling_differential.py``
holds them to the plain rules): on one scheduling machine EASY walks to the shadow from
whichever end of the running tasks passes fewer cores, and conservative keeps its profile
as plain numbers and moves a reservation only when an earlier start fits; a pass after
arrivals alone (nothing finished, the same head) has EASY look at the new tasks only.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dcx.core.codes import Code
from dcx.core.model import MachineState
from dcx.scheduler.arrivals import Arrivals
from dcx.scheduler.engine import (
    PROGRESS_CYCLES,
    REFERENCE_CLOCK_MHZ,
    Schedule,
    arrival_order,
)
from dcx.scheduler.job_stages import JOB_ELIGIBILITY, JOB_ORDERS, JobGate
from dcx.scheduler.packing import spread
from dcx.scheduler.policies import MACHINE_SELECTIONS, MachineSelection, Policy
from dcx.scheduler.problem import CORE_UNITS, Problem
from dcx.scheduler.profile import PooledProfile, compress
from dcx.scheduler.resource_stages import combine, static_filters
from dcx.scheduler.state import Reservation, ReservingState

CODES = (
    Code("schedule.runtime-as-requested", "warning",
         "Tasks have no requested time; their runtime stands in (an exact estimate)."),
    Code("schedule.reservation-resources", "error",
         "The reserving schedulers (STRICT, EASY, CONSERVATIVE) place cores only; the "
         "workload also asks for memory, GPUs or named resources, so they do not run it "
         "(the other schedulers of the invocation still do)."),
)

_NAN = float("nan")
_INF = float("inf")

Key = tuple[float, ...]


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


class StrictQueue:
    """Nothing behind the first task that does not fit starts."""

    def __init__(self, select: MachineSelection) -> None:
        self.select = select

    def plan(self, state: ReservingState, replan: bool, freed: bool, arrived: bool) -> None:
        start_from_front(state, self.select)

    def on_machines_changed(self) -> None:
        """Nothing is planned ahead."""

    def next_wakeup(self, state: ReservingState) -> float:
        return _INF


def start_from_front(state: ReservingState, select: MachineSelection) -> None:
    queue = state.queue
    if len(state.capacity) == 1 and state.allowed is None:
        # one scheduling machine: the front task fits when its cores are free there
        need, nodes, free, usable = state.need, state.nodes, state.free, state.usable
        while queue and usable[0]:
            task = queue[0][1]
            if free[0] < need[task] or nodes[task] > 1:
                return
            state.start(task, (0,))
            del queue[0]
        return
    while queue:
        task = queue[0][1]
        found = place(state, task, select)
        if found is None:
            return
        state.start(task, *found)
        del queue[0]


def place(state: ReservingState, task: int, select: MachineSelection,
          view: list[int] | None = None,
          ) -> tuple[list[int], list[int] | None] | None:
    """R4 and R5 on ``view`` (the free cores now by default): the machines the task gets,
    with the core units on each when it is a cores-anywhere task spread over several
    (``packing.py``); ``None`` when it does not fit."""
    free = state.free if view is None else view
    candidates = state.fitting(task, free)
    nodes = state.nodes[task]
    if len(candidates) >= nodes:
        return select(state.need[task], nodes, candidates, free), None
    if not state.tasks.is_anywhere(task) or len(state.capacity) == 1:
        return None
    found = spread(state.need[task], (), state.open_for(task), free)
    return None if found is None else (found[0], found[1])


def _take(view: list[int], machines: list[int] | tuple[int, ...], shares: Sequence[int] | None,
          need: int) -> None:
    """``view`` less what a placement takes (``need`` on each machine, or its shares)."""
    if shares is None:
        for machine in machines:
            view[machine] -= need
    else:
        for machine, cores in zip(machines, shares, strict=True):
            view[machine] -= cores


@dataclass
class _Shadow:
    head: int
    time_s: float
    extra: list[int]


class EasyBackfilling:
    """The head holds a reservation; later tasks start only if they do not delay it."""

    shadow: _Shadow | None
    expected_on_one: list[float] | None
    """Each task's requested time on the one scheduling machine, made at the first pass."""

    def __init__(self, select: MachineSelection) -> None:
        self.select = select
        self.shadow = None
        self.expected_on_one = None

    def plan(self, state: ReservingState, replan: bool, freed: bool, arrived: bool) -> None:
        queue = state.queue
        head_before = self.shadow.head if self.shadow else None
        waiting = len(queue)
        start_from_front(state, self.select)
        # a task the order put ahead of the head (SJF) that started takes cores the
        # head's shadow counted on: take the shadow again
        started_from_front = len(queue) != waiting
        if not queue:
            self.shadow = None
            return
        head = queue[0][1]
        if head_before is not None and head != head_before:
            state.reservations.pop(head_before, None)  # overtaken (SJF): no longer the head
        single = len(state.capacity) == 1 and state.allowed is None
        if replan or freed or started_from_front or self.shadow is None or head != head_before:
            self.shadow = (self._reserve_on_one(state, head) if single
                           else self._reserve(state, head))
            behind = queue[1:]
        elif arrived:
            # Nothing finished and the head is the same: since the last pass the free
            # cores have not grown, nor the extra, and the clock is later. Every task
            # queued then failed both rules then and fails them now; only the tasks queued
            # since, none of them the head, which waited then, may start.
            placed_on = state.placed_on
            behind = [entry for entry in state.enqueued if not placed_on[entry[1]]]
            behind.sort()
        else:
            return  # nothing freed and nothing new: nothing else can start
        if single:
            self._backfill_on_one(state, self.shadow, behind)
        else:
            self._backfill(state, self.shadow, behind)

    # One scheduling machine (a pooled cluster): the same rules on plain numbers, since the
    # scan over the queue is what a large trace spends its time on.

    def _reserve_on_one(self, state: ReservingState, head: int) -> _Shadow:
        free, wanted = state.free[0], state.need[head]
        running = state.running
        if not state.usable[0] or not running:
            return _Shadow(head, _INF, [free])
        # Once every running task has ended, the machine is whole again: free plus the
        # running tasks' cores is its capacity.
        capacity = state.capacity[0]
        if capacity < wanted:
            return _Shadow(head, _INF, [capacity])
        # Walk from whichever end passes fewer cores: the head's missing cores from the
        # front, the cores that may stay busy from the back. Both find the same moment.
        if wanted - free <= capacity - wanted:
            moment, projected = _shadow_from_front(running, state.need, free, wanted)
        else:
            moment, projected = _shadow_from_back(running, state.need, capacity, wanted)
        self._promise(state, head, moment, [0])
        return _Shadow(head, moment, [projected - wanted])

    def _backfill_on_one(self, state: ReservingState, shadow: _Shadow,
                         behind: list[tuple[Key, int]]) -> None:
        """Start the tasks of ``behind`` (queue entries, in queue order) that meet a rule."""
        if not state.usable[0]:
            return
        free = state.free[0]
        if free <= 0:
            return
        expected = self.expected_on_one
        if expected is None:
            duration = state.expected_duration
            expected = self.expected_on_one = [
                duration(task, 0) for task in range(len(state.need))]
        need = state.need
        now, limit = state.now, shadow.time_s
        extra = shadow.extra[0]
        started: list[tuple[Key, int]] = []
        for entry in behind:
            task = entry[1]
            width = need[task]
            if width > free:
                continue
            if now + expected[task] > limit:
                if width > extra:
                    continue
                extra -= width
            state.start(task, (0,))
            started.append(entry)
            free -= width
            if free <= 0:
                break
        shadow.extra[0] = extra
        _dequeue(state.queue, started)

    def on_machines_changed(self) -> None:
        """The shadow is recomputed at the next pass (the engine says ``replan``)."""

    def _reserve(self, state: ReservingState, head: int) -> _Shadow:
        """The head's shadow time and every machine's extra cores then."""
        projected = list(state.free)
        need = state.need[head]
        running, shares = state.running, state.shares
        index, count = 0, len(running)
        while index < count:
            moment = running[index][0]
            while index < count and running[index][0] == moment:
                task = running[index][1]
                _take(projected, state.placed_on[task], _negated(shares.get(task)),
                      -state.need[task])
                index += 1
            found = place(state, head, self.select, projected)
            if found is not None:
                chosen, taken = found
                _take(projected, chosen, taken, need)
                self._promise(state, head, moment, chosen, taken)
                return _Shadow(head, moment, projected)
        return _Shadow(head, _INF, projected)

    @staticmethod
    def _promise(state: ReservingState, head: int, moment: float, chosen: list[int],
                 shares: list[int] | None = None) -> None:
        held = state.reservations.get(head)
        kept = None if shares is None else tuple(shares)
        if (held is not None and held.start_s == moment and held.machines == tuple(chosen)
                and held.shares == kept):
            return  # the same promise again (it ends at the same time)
        state.reservations[head] = Reservation(
            moment, tuple(chosen), moment + state.expected_length(head, chosen), kept)
        if math.isnan(state.first_reservation_s[head]):
            state.first_reservation_s[head] = moment

    def _backfill(self, state: ReservingState, shadow: _Shadow,
                  behind: list[tuple[Key, int]]) -> None:
        """Start the tasks of ``behind`` (queue entries, in queue order) that meet a rule."""
        if not behind:
            return
        free, extra = state.free, shadow.extra
        now, limit = state.now, shadow.time_s
        anywhere = state.tasks.anywhere
        smallest = min(min(state.need[task], CORE_UNITS) if anywhere and anywhere[task]
                       else state.need[task] for _, task in behind)
        started: list[tuple[Key, int]] = []
        for entry in behind:
            if max(free) < smallest:
                break
            task = entry[1]
            need, nodes = state.need[task], state.nodes[task]
            candidates = state.fitting(task)
            if len(candidates) < nodes:
                if anywhere and anywhere[task] and self._backfill_spread(state, task, shadow):
                    started.append(entry)
                continue
            in_time = [m for m in candidates if now + state.expected_duration(task, m) <= limit]
            if len(in_time) >= nodes:
                state.start(task, self.select(need, nodes, in_time, free))
            else:
                spare = [m for m in candidates if extra[m] >= need]
                if len(spare) < nodes:
                    continue
                chosen = self.select(need, nodes, spare, free)
                for machine in chosen:
                    extra[machine] -= need
                state.start(task, chosen)
            started.append(entry)
        _dequeue(state.queue, started)

    @staticmethod
    def _backfill_spread(state: ReservingState, task: int, shadow: _Shadow) -> bool:
        """EASY's two rules for a cores-anywhere task no one machine holds: spread over the
        machines where it ends by the shadow, or else within every machine's extra (which
        it then uses up). Whether it started."""
        free, extra, need = state.free, shadow.extra, state.need[task]
        machines = state.open_for(task)
        limit = shadow.time_s - state.now
        in_time = [m for m in machines if state.expected_duration(task, m) <= limit]
        found = spread(need, (), in_time, free)
        if found is None:
            spare = [min(free[m], extra[m]) for m in range(len(free))]
            found = spread(need, (), machines, spare)
            if found is None:
                return False
            _take(extra, found[0], found[1], need)
        state.start(task, found[0], found[1])
        return True

    def next_wakeup(self, state: ReservingState) -> float:
        return _INF


def _negated(shares: tuple[int, ...] | None) -> list[int] | None:
    return None if shares is None else [-cores for cores in shares]


def _shadow_from_front(running: list[tuple[float, int]], need: list[int], free: int,
                       wanted: int) -> tuple[float, int]:
    """The first expected end at which ``free`` plus the cores of the running tasks ended
    by then reaches ``wanted`` (every task ending then counted), and those cores. The
    caller knows it is reached by the last expected end."""
    projected = free
    index, count = 0, len(running)
    while True:
        moment = running[index][0]
        while index < count and running[index][0] == moment:
            projected += need[running[index][1]]
            index += 1
        if projected >= wanted:
            return moment, projected


def _shadow_from_back(running: list[tuple[float, int]], need: list[int], capacity: int,
                      wanted: int) -> tuple[float, int]:
    """``_shadow_from_front`` walking back from the last expected end, at which all
    ``capacity`` is free: an earlier end is the shadow as long as the cores still busy
    after it leave ``wanted`` free."""
    spare = capacity - wanted
    busy_after = 0  # cores of the running tasks ending after ``moment``
    index = len(running)
    while True:
        moment = running[index - 1][0]
        first, ending = index - 1, need[running[index - 1][1]]
        while first > 0 and running[first - 1][0] == moment:
            first -= 1
            ending += need[running[first][1]]
        if first == 0 or busy_after + ending > spare:
            return moment, capacity - busy_after
        busy_after += ending
        index = first


def _dequeue(queue: list[tuple[Key, int]], entries: list[tuple[Key, int]]) -> None:
    """Take ``entries`` (started tasks) out of the sorted queue."""
    for entry in entries:
        del queue[bisect.bisect_left(queue, entry)]


class _Slices:
    """Both profiles' time line: slice ``i`` starts at ``times[i]`` with ``free[i]`` free
    cores (a list per machine, or one number for one scheduling machine)."""

    times: list[float]
    free: list[Any]

    def reserve(self, begin: float, end: float, machines: list[int] | tuple[int, ...],
                cores: int | Sequence[int]) -> None:
        raise NotImplementedError

    def hold(self, held: Reservation, need: int) -> None:
        """The profile with ``held`` taken (its shares, or ``need`` on each machine)."""
        self.reserve(held.start_s, held.end_s, held.machines,
                     held.shares if held.shares is not None else need)

    def release(self, held: Reservation, need: int) -> None:
        """The profile with ``held`` given back."""
        self.reserve(held.start_s, held.end_s, held.machines,
                     [-cores for cores in held.shares] if held.shares is not None else -need)

    def advance(self, now: float) -> None:
        """Drop the slices that ended before ``now``."""
        index = bisect.bisect_right(self.times, now) - 1
        if index > 0:
            del self.times[:index]
            del self.free[:index]
        self.times[0] = now


class _Profile(_Slices):
    """Free cores per machine over time: slice ``i`` holds from ``times[i]`` to
    ``times[i + 1]`` (the last one for ever)."""

    def __init__(self, state: ReservingState) -> None:
        self.times = [state.now]
        self.free = [list(state.free)]
        shares = state.shares
        for expected_end, task in state.running:
            self._add(expected_end, state.placed_on[task],
                      shares.get(task) or state.need[task])

    def _split(self, moment: float) -> int:
        """The index of the slice starting at ``moment``, made if needed."""
        index = bisect.bisect_left(self.times, moment)
        if index < len(self.times) and self.times[index] == moment:
            return index
        self.times.insert(index, moment)
        self.free.insert(index, list(self.free[index - 1]))
        return index

    def _add(self, moment: float, machines: tuple[int, ...],
             cores: int | Sequence[int]) -> None:
        """``cores`` more free on ``machines`` (a number for each, or one for all) from
        ``moment`` on."""
        first = self._split(max(moment, self.times[0]))
        each = [cores] * len(machines) if isinstance(cores, int) else cores
        for row in self.free[first:]:
            for machine, more in zip(machines, each, strict=True):
                row[machine] += more

    def earliest(self, state: ReservingState, task: int, select: MachineSelection,
                 ) -> Reservation | None:
        """The earliest slice start at which enough machines have the task's cores free for
        its whole requested time, with the machines R5 picks there (or, for a cores-anywhere
        task no one machine holds, the machines its cores spread over)."""
        need, nodes = state.need[task], state.nodes[task]
        usable = state.open_machines if state.allowed is None else state.open_for(task)
        if not usable:
            return None
        anywhere = state.tasks.is_anywhere(task)
        if nodes > 1:
            slowest = max(state.expected_duration(task, m) for m in usable)
            length = dict.fromkeys(usable, slowest)
        else:
            length = {m: state.expected_duration(task, m) for m in usable}
        times, free = self.times, self.free
        slices = len(times)
        for index in range(slices):
            begin = times[index]
            row = free[index]
            candidates = []
            for machine in usable:
                if row[machine] < need:
                    continue
                end = begin + length[machine]
                later = index + 1
                while later < slices and times[later] < end and free[later][machine] >= need:
                    later += 1
                if later == slices or times[later] >= end:
                    candidates.append(machine)
            if len(candidates) >= nodes:
                chosen = select(need, nodes, candidates, row)
                return Reservation(begin, tuple(chosen), begin + max(length[m] for m in chosen))
            if anywhere:
                end = begin + max(length.values())
                found = spread(need, (), usable, self._window_free(index, end))
                if found is not None:
                    return Reservation(begin, tuple(found[0]), end, tuple(found[1]))
        return None

    def _window_free(self, index: int, end: float) -> list[int]:
        """Per machine, the fewest free cores from slice ``index`` until ``end``."""
        times, free = self.times, self.free
        lowest = list(free[index])
        later = index + 1
        while later < len(times) and times[later] < end:
            lowest = [min(a, b) for a, b in zip(lowest, free[later], strict=True)]
            later += 1
        return lowest

    def move_earlier(self, state: ReservingState, task: int, held: Reservation,
                     select: MachineSelection) -> Reservation | None:
        """Re-insert ``task``, reserved as ``held``, at its earliest fit with its own slot
        free (so no later than it was); its new reservation (``None``: unchanged)."""
        self.release(held, state.need[task])
        found = self.earliest(state, task, select)
        assert found is not None and found.start_s <= held.start_s, "its own slot is free"
        self.hold(found, state.need[task])
        return found

    def room_before(self, moment: float, cores: int) -> bool:
        """Whether taking a reservation at ``moment`` out and putting it back could change
        it: always on several machines, where R5 may pick other machines at the same start
        once a slot there was left (a reservation is re-inserted as the plain rule says)."""
        return True

    def reserve(self, begin: float, end: float, machines: list[int] | tuple[int, ...],
                cores: int | Sequence[int]) -> None:
        """``cores`` fewer free on ``machines`` (a number for each, or one for all) over
        [begin, end) (more when negative)."""
        first = self._split(max(begin, self.times[0]))
        last = self._split(end)
        each = [cores] * len(machines) if isinstance(cores, int) else cores
        for row in self.free[first:last]:
            for machine, fewer in zip(machines, each, strict=True):
                row[machine] -= fewer


class ConservativeBackfilling:
    """Every waiting task holds a reservation; a task starts early only if it delays
    none."""

    def __init__(self, select: MachineSelection) -> None:
        self.select = select
        self.profile: _Profile | PooledProfile | None = None
        self.machines_changed = False
        self.due: list[tuple[float, Key, int]] = []
        """Every reservation made, as ``(start, queue key, task)``: a heap whose entries
        no longer matching ``state.reservations`` are dropped when they come up."""
        self.unreserved: list[tuple[Key, int]] = []
        """Queue entries a pass left without a reservation (no length, or no machine)."""

    @staticmethod
    def _planned(state: ReservingState, reservations: dict[int, Reservation],
                 ) -> _Profile | PooledProfile:
        """A profile of the running tasks and ``reservations``."""
        if len(state.capacity) == 1 and state.allowed is None:
            return PooledProfile(state, reservations)
        profile = _Profile(state)
        for held_by, held in reservations.items():
            profile.hold(held, state.need[held_by])
        return profile

    def _hold(self, state: ReservingState, key: Key, task: int, held: Reservation) -> None:
        state.reservations[task] = held
        heapq.heappush(self.due, (held.start_s, key, task))

    def plan(self, state: ReservingState, replan: bool, freed: bool, arrived: bool) -> None:
        if not state.queue:
            if replan:
                # an early finish with nobody waiting: the profile is built afresh, from
                # the running tasks alone, when the next task waits
                self.profile = None
            return
        if self.profile is None or self.machines_changed:
            # a machine failed or came back: every reservation is planned afresh (one on a
            # failed machine may move later)
            state.reservations.clear()
            self.due.clear()
            self.profile = self._planned(state, state.reservations)
            self.machines_changed = False
            unreserved = list(state.queue)
        else:
            if replan:
                self._compress(state)
            else:
                self.profile.advance(state.now)
            # the tasks queued since the last pass, and those it left without one
            unreserved = sorted(state.enqueued + self.unreserved)
        self._reserve_new(state, unreserved)
        self._start_due(state)

    def _reserve_new(self, state: ReservingState, unreserved: list[tuple[Key, int]]) -> None:
        """A reservation, at its earliest fit, for each waiting task of ``unreserved``
        (queue order) that has none; the tasks of no length start when their cores are."""
        profile = self.profile
        assert profile is not None
        reservations = state.reservations
        no_length: list[tuple[Key, int]] = []
        self.unreserved = left = []
        for entry in unreserved:
            task = entry[1]
            if task in reservations:
                continue
            if state.expected_length(task, state.open_machines or [0]) <= 0:
                no_length.append(entry)
                continue
            found = profile.earliest(state, task, self.select)
            if found is None:
                left.append(entry)
                continue  # no usable machine can ever hold it: it waits for a state change
            profile.hold(found, state.need[task])
            self._hold(state, entry[0], task, found)
            if math.isnan(state.first_reservation_s[task]):
                state.first_reservation_s[task] = found.start_s
        self._no_length = no_length

    def _start_due(self, state: ReservingState) -> None:
        now = state.now
        reservations = state.reservations
        due_heap = self.due
        found: dict[int, Key] = {}  # a reservation moved to other machines is there twice
        while due_heap and due_heap[0][0] <= now:
            begin, key, task = heapq.heappop(due_heap)
            held = reservations.get(task)
            if held is not None and held.start_s == begin:
                found[task] = key
        due = sorted((key, task) for task, key in found.items())
        for entry in due:
            task = entry[1]
            held = state.reservations[task]
            shares = held.shares or (state.need[task],) * len(held.machines)
            if any(state.free[m] < cores for m, cores in zip(held.machines, shares, strict=True)):
                raise RuntimeError(f"conservative backfilling: task {task} is due at {now} "
                                   "on machines without its cores free")
            state.start(task, held.machines, held.shares)
        _dequeue(state.queue, due)
        if isinstance(self.profile, PooledProfile):
            self.profile.started(state, [task for _, task in due])
        # A task of no length holds nothing over time, so it delays nobody: it starts at the
        # first instant its cores are free and is never reserved.
        for entry in self._no_length:
            placed = place(state, entry[1], self.select)
            if placed is not None:
                state.start(entry[1], *placed)
                _dequeue(state.queue, [entry])
            else:
                self.unreserved.append(entry)

    def on_machines_changed(self) -> None:
        self.machines_changed = True

    def _compress(self, state: ReservingState) -> None:
        """A task ended early: rebuild the profile from the running tasks and the current
        reservations (a fresh profile has no slices left over from moved reservations; one
        pooled machine's profile is kept, ``profile.sync`` and ``profile.compress``),
        then move each waiting task that could start earlier, in queue order, to its
        earliest fit. Its own slot is free while it looks, so no reservation moves later.
        A task that moves frees its old slot, where a task ahead of it in the queue may now
        fit earlier: the passes repeat until none moves, so that no task waits that could
        start now without delaying a reservation. A later pass looks again only at the
        tasks with a slot given up before their end since they were placed (nothing else
        could have made room for them)."""
        reservations = state.reservations
        keys = {task: key for key, task in state.queue if task in reservations}
        waiting = list(keys)

        def moved(task: int, held: Reservation) -> None:
            heapq.heappush(self.due, (held.start_s, keys[task], task))

        if isinstance(self.profile, PooledProfile):
            # kept up to date in place: the early finishes give their cores back
            freed_until = self.profile.sync(state)
            compress(self.profile, state, reservations, waiting, freed_until, moved)
            return
        profile = self.profile = self._planned(state, reservations)
        need, select = state.need, self.select
        # vacated[p]: the earliest start a task behind position p gave up in the last pass
        vacated = [-_INF] * (len(waiting) + 1)
        while True:
            moves: list[tuple[int, float]] = []  # (position, the start of the slot it left)
            earlier = False
            given_up = _INF  # the earliest start of a slot left so far in this pass
            for position, task in enumerate(waiting):
                held = reservations[task]
                if min(vacated[position + 1], given_up) >= held.end_s:
                    continue  # no slot left before its end since it was placed
                if held.shares is None and not profile.room_before(held.start_s, need[task]):
                    continue  # no slice before its start has its cores free: it cannot move
                found = profile.move_earlier(state, task, held, select)
                if found is not None and found != held:
                    reservations[task] = found  # earlier, or on other machines
                    moved(task, found)
                    moves.append((position, held.start_s))
                    given_up = min(given_up, held.start_s)
                    earlier = earlier or found.start_s < held.start_s
            if not earlier:
                return
            vacated = [_INF] * (len(waiting) + 1)
            for position, start in moves:
                vacated[position] = start
            for position in range(len(waiting) - 1, -1, -1):
                vacated[position] = min(vacated[position], vacated[position + 1])

    def next_wakeup(self, state: ReservingState) -> float:
        """The earliest reservation's start (entries no longer held dropped)."""
        due, reservations = self.due, state.reservations
        while due:
            begin, _, task = due[0]
            held = reservations.get(task)
            if held is not None and held.start_s == begin:
                return begin
            heapq.heappop(due)
        return _INF


Component = StrictQueue | EasyBackfilling | ConservativeBackfilling

COMPONENTS: dict[str, type[StrictQueue] | type[EasyBackfilling]
                 | type[ConservativeBackfilling]] = {
    "STRICT": StrictQueue,
    "EASY": EasyBackfilling,
    "CONSERVATIVE": ConservativeBackfilling,
}


def _pooled(problem: Problem) -> bool:
    """Machines of one speed, always up, and tasks that any free cores can host: each takes
    whole machines of one size, or each is cores anywhere. Their cores are then
    interchangeable."""
    machines, tasks = problem.machines, problem.tasks
    if machines.dimensions or problem.state_changes or not all(machines.initially_active):
        return False
    if len(set(machines.clock_mhz)) != 1:
        return False
    anywhere = tasks.anywhere
    if anywhere and all(anywhere):
        return True
    capacities = set(machines.capacity)
    if anywhere or len(capacities) != 1:
        return False
    whole = next(iter(capacities))
    return all(need == whole for need in tasks.need)


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
        self.single_cores = self.anywhere and all(
            capacity == CORE_UNITS for capacity in machines.capacity) and all(
            need % CORE_UNITS == 0 for need in tasks.need)
        self.idle = list(range(len(machines)))  # sorted: lowest-numbered first
        self.free = list(machines.capacity)
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
        _take(free, found[0], found[1], need)
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
            if len(machines) > 8:
                idle.extend(machines)
                idle.sort()  # two sorted runs: merged in one pass
            else:
                for machine in machines:
                    bisect.insort(idle, machine)
        else:
            shares = self.shares.get(task)
            _take(self.free, machines, None if shares is None else _negated(shares),
                  -self.tasks.need[task])


def _scale(clock: float | None) -> float:
    return 1.0 if clock is None else REFERENCE_CLOCK_MHZ / clock


def simulate_reserving(problem: Problem, policy: Policy,
                       progress: Callable[[int], None] | None = None) -> Schedule:
    """Run a STRICT, EASY or CONSERVATIVE ``policy`` over ``problem`` (event time model).
    Cores only: ``ValueError`` for a problem with memory, GPU or named-resource dimensions."""
    tasks, machines = problem.tasks, problem.machines
    _cores_only(problem, policy)
    count = len(tasks)
    select = MACHINE_SELECTIONS[policy.machine_selection]
    component: Component = COMPONENTS[policy.backfilling](select)
    runtime, requested = tasks.runtime_s, tasks.requested_s

    # R2/R3 allow tasks some machines only, so the machines are no longer interchangeable
    allowed = combine(static_filters(policy, problem))
    pool = _PoolMachines(problem, select) if allowed is None and _pooled(problem) else None
    scale, capacity, need, nodes, usable = _planned_resources(problem, pool is not None)

    def expected_duration(task: int, machine: int) -> float:
        return requested[task] * scale[machine]

    def real_duration(task: int, machine: int) -> float:
        return min(runtime[task], requested[task]) * scale[machine]

    state = ReservingState(
        now=0.0, tasks=tasks, machines=machines, capacity=capacity,
        free=list(capacity), usable=usable, need=need,
        nodes=nodes, expected_duration=expected_duration, real_duration=real_duration,
        start_s=[_NAN] * count, expected_end_s=[_NAN] * count, finish_s=[_NAN] * count,
        placed_on=[()] * count, arrival_s=list(tasks.release_s),
        first_reservation_s=[_NAN] * count, allowed=allowed)
    order_key, gate = _job_stages(problem, policy, state)
    arrivals = Arrivals(tasks, arrival_order(problem, False), tasks.release_s, gate)
    concrete: list[tuple[int, ...]] = [()] * count
    first_start = [_NAN] * count
    attempts = [0] * count
    changes = problem.state_changes
    finishes: list[tuple[float, int, int]] = []  # (finish, task, attempt)
    next_change = 0
    position = 0
    lost_core_s = 0.0
    cycles = 0
    enqueue = state.enqueue
    # bound once: the loop below runs once per event time
    plan, release, next_wakeup = component.plan, state.release, component.next_wakeup
    finish_s, expected_end_s = state.finish_s, state.expected_end_s
    started, enqueued = state.started, state.enqueued
    heappop, heappush = heapq.heappop, heapq.heappush

    def queue_task(task: int) -> None:
        nonlocal position
        enqueue(order_key(task, position), task)
        position += 1

    now = min(_or_inf(arrivals.next_time()), changes[0].time_s if changes else _INF)
    if now == _INF:
        return _schedule(problem, policy, state, concrete, first_start, attempts, 0.0, 0)
    while True:
        cycles += 1
        if progress is not None and not cycles % PROGRESS_CYCLES:
            progress(arrivals.next)
        state.now = now
        replan = freed = arrived = False
        while finishes and finishes[0][0] <= now:
            _, task, attempt = heappop(finishes)
            if attempt != attempts[task]:
                continue
            freed = True
            if finish_s[task] < expected_end_s[task]:
                replan = True  # ended early: the plan assumed it would run longer
            release(task)
            if pool is not None:
                pool.give_back(task, concrete[task])
            for child in arrivals.finished(task):
                queue_task(child)
                arrived = True
        while next_change < len(changes) and changes[next_change].time_s <= now:
            replan = True
            component.on_machines_changed()
            lost = _change_machine(state, changes[next_change], attempts)
            next_change += 1
            for task, core_s in lost:
                lost_core_s += core_s
                queue_task(task)
                arrived = True
        unfinished = arrivals.unfinished
        for task in arrivals.joined(now):
            if unfinished[task] == 0:
                queue_task(task)
                arrived = True

        if state.queue or replan:
            # an early finish changes the plan even with nobody waiting: the cores it
            # frees are free from now for every task that arrives later
            plan(state, replan, freed, arrived)
        enqueued.clear()
        for task in started:
            if math.isnan(first_start[task]):
                first_start[task] = now
            concrete[task] = pool.take(task) if pool is not None else state.placed_on[task]
            heappush(finishes, (finish_s[task], task, attempts[task]))
        started.clear()

        upcoming_s = min(next_wakeup(state), finishes[0][0] if finishes else _INF,
                         _or_inf(arrivals.next_time()),
                         changes[next_change].time_s if next_change < len(changes) else _INF)
        if upcoming_s == _INF:
            break
        now = max(upcoming_s, now)
    schedule = _schedule(problem, policy, state, concrete, first_start, attempts, lost_core_s,
                         cycles)
    schedule.shares = pool.shares if pool is not None else state.shares
    return schedule


def _cores_only(problem: Problem, policy: Policy) -> None:
    if problem.machines.dimensions:
        raise ValueError(f"{policy.name} schedules cores only; the problem also asks for "
                         + ", ".join(d.name for d in problem.machines.dimensions))


def _job_stages(problem: Problem, policy: Policy, state: ReservingState) -> tuple[Any, Any]:
    """The queue's order key (T2, with the J3 job order first where it gives one) and the
    J2 job gate (``None`` when every job is eligible)."""
    order_key = _order_key(problem, policy.task_order)
    job_keys = JOB_ORDERS[policy.job_order]().job_keys(state)
    if job_keys is not None:
        order_key = _job_first(order_key, job_keys, problem.tasks.job)
    admit = JOB_ELIGIBILITY[policy.job_eligibility]().bind(state)
    return order_key, (JobGate(admit, problem.tasks) if admit is not None else None)


def _planned_resources(problem: Problem, pooled: bool
                       ) -> tuple[list[float], list[int], list[int], list[int], bytearray]:
    """Per planned machine its time scale and capacity, per task its need and nodes, and
    which machines are usable: the machines as they are, or (``pooled``) one machine of all
    their cores, each task asking for its cores (a whole-node task for its nodes' cores)."""
    tasks, machines = problem.tasks, problem.machines
    if pooled:
        need = (list(tasks.need) if tasks.anywhere else
                [machines.capacity[0] * nodes for nodes in tasks.nodes])
        return ([_scale(machines.clock_mhz[0])], [sum(machines.capacity)], need,
                [1] * len(tasks), bytearray([1]))
    return ([_scale(clock) for clock in machines.clock_mhz], list(machines.capacity),
            list(tasks.need), list(tasks.nodes), bytearray(machines.initially_active))


def _change_machine(state: ReservingState, change: Any, attempts: list[int]
                    ) -> list[tuple[int, float]]:
    """A machine's state change applied; the tasks it takes down (to queue again), each
    with the core-seconds it had run."""
    machine = change.machine
    state.usable[machine] = 1 if change.state is MachineState.ACTIVE else 0
    if change.state in (MachineState.ACTIVE, MachineState.MAINTENANCE):
        return []
    lost = []
    for task in state.lost_with(machine, change.time_s):
        lost.append((task, state.busy_core_s(task, change.time_s)))
        state.release(task)
        attempts[task] += 1  # its pending finish no longer counts
        state.finish_s[task] = _NAN
        state.placed_on[task] = ()
    return lost


def _or_inf(time_s: float | None) -> float:
    return _INF if time_s is None else time_s


def _schedule(problem: Problem, policy: Policy, state: ReservingState,
              concrete: list[tuple[int, ...]], first_start: list[float], attempts: list[int],
              lost_core_s: float, cycles: int) -> Schedule:
    tasks = problem.tasks
    killed = sum(1 for task in range(len(tasks))
                 if tasks.runtime_s[task] > tasks.requested_s[task]
                 and not math.isnan(state.finish_s[task]))
    return Schedule(
        policy=policy, time_model="event", seed=None, arrival_s=list(tasks.release_s),
        first_start_s=first_start, start_s=state.start_s, finish_s=state.finish_s,
        machines=concrete, attempts=attempts, lost_core_s=lost_core_s, cycles=cycles,
        reserved_s=state.first_reservation_s, killed=killed)

