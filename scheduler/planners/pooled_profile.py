"""The availability profile conservative backfilling plans on when the cluster is one
pool of interchangeable cores (``dcx.scheduler.backfilling._pooled``): free cores over
time as a sorted list of slice starts and one free-core count per slice, searched with
``bisect``.

``PooledProfile`` answers what the profile it replaces (``_ProfileOnOne``) answered
(``earliest``, ``reserve``, ``hold``, ``release``, ``advance``;
``tests/test_scheduler_profile.py`` holds it to that class's algorithm on generated
reservations), and adds what lets the planner keep one profile for the whole run instead
of building one at every early finish:

* ``sync`` gives back, from now until their expected ends, the cores of the running tasks
  that ended early since the last call (the profile follows the running tasks it was told
  about in a heap by real end), and returns the latest of those expected ends;
* ``compress`` re-inserts the waiting tasks after early finishes as the plain rule does
  (queue order, each at its earliest fit with its own slot free, passes until none moves
  earlier), compiled (``pooled_kernel.compress``): the profile and the waiting tasks'
  slots go to it as arrays and the moves come back.

Slices with the same count side by side are left as they are: an earliest fit starts at
the first of them either way, so the answers do not change.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dcx.scheduler.state import Reservation, ReservingState

_INF = float("inf")


class PooledProfile:
    """Free cores of the one scheduling machine: slice ``i`` holds ``free[i]`` from
    ``times[i]`` to ``times[i + 1]`` (the last one for ever)."""

    times: list[float]
    free: list[int]

    def __init__(self, state: ReservingState, reservations: dict[int, Reservation]) -> None:
        """The running tasks by expected end, then ``reservations``: every change of the
        free cores summed per instant, then added up in time order."""
        now, need = state.now, state.need
        change: dict[float, int] = {now: 0}
        for expected_end, task in state.running:
            moment = max(expected_end, now)
            change[moment] = change.get(moment, 0) + need[task]
        for held_by, held in reservations.items():
            cores = need[held_by]
            begin = max(held.start_s, now)
            change[begin] = change.get(begin, 0) - cores
            change[held.end_s] = change.get(held.end_s, 0) + cores
        self.times = sorted(change)
        self.free = list(itertools.accumulate(
            (change[moment] for moment in self.times), initial=state.free[0]))[1:]
        self._anchors: dict[float, int] = {}
        """How many running tasks end and reservations begin or end at each instant: the
        slice starts a profile built afresh would have. Another slice start whose count
        equals the slice before it is merged away, so the profile does not grow with the
        ends of tasks that finished early and the slots moved tasks left."""
        for expected_end, _ in state.running:
            self._anchor(max(expected_end, now), 1)
        for held in reservations.values():
            self._anchor(max(held.start_s, now), 1)
            self._anchor(held.end_s, 1)
        self._ends: list[tuple[float, int]] = []
        self.track(state, [task for _, task in state.running])
        self._room: _KernelRoom | None = None
        self._slot_starts = np.full(len(state.need), _INF)
        self._slot_ends = np.full(len(state.need), _INF)
        """Per task, its reservation's start and end as ``hold_for`` and ``compress``
        made it: what compression reads, without a look at each reservation."""
        for held_by, held in reservations.items():
            self._slot_starts[held_by], self._slot_ends[held_by] = held.start_s, held.end_s

    def _kernel_room(self, state: ReservingState, tasks: int) -> _KernelRoom:
        """The compiled compression's arrays, with room for ``tasks`` waiting tasks."""
        if self._room is None:
            self._room = _KernelRoom(state)
        return self._room.for_tasks(tasks)

    # the profile's own bookkeeping

    def _anchor(self, moment: float, count: int) -> None:
        anchors = self._anchors
        left = anchors.get(moment, 0) + count
        if left:
            anchors[moment] = left
        else:
            del anchors[moment]

    def _merge(self, moment: float) -> None:
        """The slice starting at ``moment`` joined to the one before when nothing begins
        or ends there and their counts are equal."""
        if moment in self._anchors:
            return
        times = self.times
        index = bisect.bisect_left(times, moment)
        if 0 < index < len(times) and times[index] == moment and (
                self.free[index] == self.free[index - 1]):
            del times[index]
            del self.free[index]

    def _split(self, moment: float) -> int:
        """The index of the slice starting at ``moment``, made if needed."""
        index = bisect.bisect_left(self.times, moment)
        if index < len(self.times) and self.times[index] == moment:
            return index
        self.times.insert(index, moment)
        self.free.insert(index, self.free[index - 1])
        return index

    def track(self, state: ReservingState, tasks: Sequence[int]) -> None:
        """``tasks`` started (from their reservations, or running when the profile was
        made): ``sync`` will see when they end."""
        finish_s, push, ends = state.finish_s, heapq.heappush, self._ends
        for task in tasks:
            push(ends, (finish_s[task], task))

    def started(self, state: ReservingState, tasks: Sequence[int]) -> None:
        """``tasks`` started now from their reservations: their slots run on as running
        tasks (which end at their reservations' ends), tracked for ``sync``."""
        now = state.now
        for _ in tasks:
            self._anchor(now, -1)
        self.track(state, tasks)

    def sync(self, state: ReservingState) -> float:
        """The cores of the tasks that ended early (by ``state.now``) given back from now to
        their expected ends; the latest of those ends (``-inf``: none ended early)."""
        now, ends = state.now, self._ends
        self.advance(now)
        expected_end_s, need = state.expected_end_s, state.need
        latest = -_INF
        while ends and ends[0][0] <= now:
            _, task = heapq.heappop(ends)
            end = expected_end_s[task]
            if end > now:
                self._anchor(end, -1)
                self.reserve(now, end, (0,), -need[task])
                self._merge(end)
                latest = max(latest, end)
            elif end in self._anchors:
                self._anchor(end, -1)
        return latest

    def compress(self, state: ReservingState, reservations: dict[int, Reservation],
                 waiting: list[int], freed_until: float,
                 moved: Callable[[int, Reservation], None]) -> None:
        """Move the ``waiting`` tasks (queue order, each holding the reservation it was
        given through ``hold_for`` or by an earlier compression) to their earliest fits
        after early finishes gave back cores from now until ``freed_until``, as the plain
        compression does (``pooled_kernel.compress``). ``moved(task, reservation)`` is
        told of each task that moved, with its last reservation, after ``reservations``
        has it."""
        if freed_until <= state.now or not waiting:
            return
        count = len(waiting)
        room = self._kernel_room(state, count)
        ids = np.fromiter(waiting, np.int64, count)
        starts, ends = self._slot_starts[ids], self._slot_ends[ids]
        was_moved = room.moved[:count]
        slices = len(self.times)
        times, free, anchored = room.profile(slices)
        times[:slices] = self.times
        free[:slices] = self.free
        work, counts = room.work(count, times.shape[0])
        lengths, widths = room.task_lengths[ids], room.task_widths[ids]
        with_anchors = False  # filled only once a task is found to move
        while True:
            times, free, anchored, after, room.generation, tasks_moved = room.kernel(
                times, free, anchored, with_anchors, slices, state.now, freed_until,
                starts, ends, lengths, widths, was_moved, work, counts, room.reach_of,
                room.reach_generation, room.generation)
            if tasks_moved >= 0:
                break
            anchored[:slices] = list(map(self._anchors.get, self.times,
                                         itertools.repeat(0)))
            with_anchors = True
        room.keep(times, free, anchored)
        if not tasks_moved:
            return
        slices = after
        positions = np.flatnonzero(was_moved)
        self.times = times[:slices].tolist()
        self.free = free[:slices].tolist()
        # the anchors as the moves left them (those before now, of slices gone, dropped:
        # nothing merges there)
        self._anchors = {moment: anchors for moment, anchors in zip(
            self.times, anchored[:slices].tolist(), strict=True) if anchors}
        moved_ids = ids[positions]
        new_starts, new_ends = starts[positions], ends[positions]
        self._slot_starts[moved_ids], self._slot_ends[moved_ids] = new_starts, new_ends
        for task, begin, end in zip(moved_ids.tolist(), new_starts.tolist(),
                                    new_ends.tolist(), strict=True):
            found = reservations[task] = Reservation(begin, (0,), end)
            moved(task, found)

    # the profile's questions, as ``_ProfileOnOne`` answers them

    def earliest(self, state: ReservingState, task: int, select: Any) -> Reservation | None:
        """The earliest slice start at which the task's cores are free for its whole
        requested time. A window that fails at slice ``k`` fails for every start up to
        ``k`` too (each of them still covers slice ``k``), so the search goes on after it:
        one pass over the slices."""
        if not state.usable[0]:
            return None
        need, length = state.need[task], state.expected_duration(task, 0)
        times, free = self.times, self.free
        slices = len(times)
        index = 0
        while index < slices:
            if free[index] < need:
                index += 1
                continue
            end = times[index] + length
            later = index + 1
            while later < slices and times[later] < end and free[later] >= need:
                later += 1
            if later == slices or times[later] >= end:
                return Reservation(times[index], (0,), end)
            index = later + 1
        return None

    def reserve(self, begin: float, end: float, machines: Sequence[int],
                cores: int | Sequence[int]) -> None:
        """``cores`` fewer free over [begin, end) (more when negative)."""
        assert isinstance(cores, int), "one machine: no task is spread"
        first = self._split(max(begin, self.times[0]))
        last = self._split(end)
        self.free[first:last] = [free - cores for free in self.free[first:last]]

    def hold_for(self, task: int, held: Reservation, need: int) -> None:
        """The profile with ``held`` taken, as ``task``'s reservation (which compression
        may move)."""
        self.hold(held, need)
        self._slot_starts[task], self._slot_ends[task] = held.start_s, held.end_s

    def hold(self, held: Reservation, need: int) -> None:
        """The profile with ``held`` taken."""
        self._anchor(held.start_s, 1)
        self._anchor(held.end_s, 1)
        self.reserve(held.start_s, held.end_s, held.machines, need)

    def release(self, held: Reservation, need: int) -> None:
        """The profile with ``held`` given back."""
        self._anchor(held.start_s, -1)
        self._anchor(held.end_s, -1)
        self.reserve(held.start_s, held.end_s, held.machines, -need)
        self._merge(held.end_s)
        self._merge(held.start_s)

    def advance(self, now: float) -> None:
        """Drop the slices that ended before ``now``."""
        index = bisect.bisect_right(self.times, now) - 1
        if index > 0:
            del self.times[:index]
            del self.free[:index]
        if self.times[0] != now:
            self.times[0] = now


class _KernelRoom:
    """Arrays the compiled compression works in, kept from call to call and grown as
    needed, so that a compression allocates nothing; and each task's requested length
    and width, which do not change during a run."""

    def __init__(self, state: ReservingState) -> None:
        duration = state.expected_duration
        self.task_lengths = np.array([duration(task, 0) for task in range(len(state.need))])
        self.task_widths = np.array(state.need, np.int64)
        widest = max(state.capacity[0], int(self.task_widths.max(initial=0)))
        self.reach_of = np.empty(widest + 1)
        self.reach_generation = np.full(widest + 1, -1, np.int64)
        self.generation = 0
        # imported with the first compression, not with the planner: Numba takes a
        # moment to load
        from dcx.scheduler.planners import pooled_kernel

        self.kernel = pooled_kernel.compress
        self._work_sizes = pooled_kernel.work_sizes
        self._tasks = 0
        self.moved = np.empty(0, np.bool_)
        self._times = np.empty(0)
        self._free = self._anchored = np.empty(0, np.int64)
        self._work = np.empty(0)
        self._counts = np.empty(0, np.int64)

    def for_tasks(self, count: int) -> _KernelRoom:
        """The room, with ``moved`` long enough for ``count`` tasks."""
        if count > self._tasks:
            size = self._tasks = 2 * count
            self.moved = np.empty(size, np.bool_)
        return self

    def profile(self, slices: int) -> tuple[Any, Any, Any]:
        """The profile's arrays, long enough for ``slices`` and a move more."""
        if slices + 4 > self._times.shape[0]:
            size = 2 * slices + 64
            self.keep(np.empty(size), np.empty(size, np.int64), np.empty(size, np.int64))
        return self._times, self._free, self._anchored

    def keep(self, times: Any, free: Any, anchored: Any) -> None:
        """The profile's arrays as the kernel hands them back (larger if it grew them)."""
        self._times, self._free, self._anchored = times, free, anchored

    def work(self, count: int, slices: int) -> tuple[Any, Any]:
        """The kernel's bookkeeping arrays for ``count`` tasks and ``slices`` slices."""
        floats, integers = self._work_sizes(count, slices)
        if floats > self._work.shape[0]:
            self._work = np.empty(2 * floats)
        if integers > self._counts.shape[0]:
            self._counts = np.empty(2 * integers, np.int64)
        return self._work, self._counts
