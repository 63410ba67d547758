"""The availability profile conservative backfilling plans on when the cluster is one
pool of interchangeable cores (``dcx.scheduler.backfilling._pooled``): free cores over
time as a sorted list of slice starts and one free-core count per slice, searched with
``bisect``.

``PooledProfile`` answers what the profile it replaces (``_ProfileOnOne``) answered
(``earliest``, ``move_earlier``, ``room_before``, ``reserve``, ``hold``, ``release``,
``advance``; ``tests/test_scheduler_profile.py`` holds it to that class's algorithm on
generated reservations), and adds what lets the planner keep one profile for the whole run
instead of building one at every early finish:

* ``sync`` gives back, from now until their expected ends, the cores of the running tasks
  that ended early since the last call (the profile follows the running tasks it was told
  about in a heap by real end), and returns the latest of those expected ends;
* ``compress`` re-inserts the waiting tasks after early finishes as the plain rule does
  (queue order, each at its earliest fit with its own slot free, passes until none moves
  earlier), but looks only where a task could have gained. Before the finishes no waiting
  task could start earlier (each was placed at its earliest fit and nothing has freed cores
  since), so a window that fits now must overlap a stretch where cores were given back: the
  early finishes' ``[now, end)`` and the slots moved tasks left. With ``[low, high)`` the
  hull of those stretches, a task of width ``w`` and length ``R`` reserved at ``s`` can only
  move to a start ``t`` with ``low - R < t < min(s, high)``, which needs ``w`` cores free at
  some slice start before ``min(s, high)`` and on every slice from ``high`` to
  ``min(now + R, s)`` (the window covers them whatever its start). Such a window also
  either covers the slice just before ``min(s, high)``, which then needs ``w`` cores free
  (before its own slot), or is short enough to end by that slice's start. Most tasks fail
  one of these checks, answered from a prefix maximum, that slice and a cached
  first-slice-below-``w``, without a scan of their own. It goes through the whole queue
  at each pass, so long queues are compressed by ``pooled_compress.compress`` instead,
  which looks only at the tasks a hole could let move.

Slices with the same count side by side are left as they are: an earliest fit starts at
the first of them either way, so the answers do not change.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from dcx.scheduler.state import Reservation, ReservingState

_INF = float("inf")
_VECTOR_FROM = 224
"""Candidate starts from which ``move_earlier`` searches on arrays instead of slice by
slice."""
_KEEP_ARRAYS_FOR = 8
"""Reservations made or given back without a search on arrays after which the arrays are
dropped (reservations made one by one on arrival, not compression's moves)."""


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
        self._tops: list[int] = []
        """``_tops[i]``: the most cores free in slices ``0..i``, right for ``i <
        _valid``."""
        self._valid = 0
        self.version = 0
        """Counts the changes: an answer kept from an earlier version is stale."""
        self._arrays: Any = None
        """``times`` and ``free`` as the two rows of one NumPy array for long searches, made
        by the first one and then kept in step with the lists (the first ``len(times)``
        columns), so that a search after a move does not copy the lists again; with room to
        grow. One array, so that a slice made or merged away shifts both rows at once."""
        self._unsearched = 0
        """Changes to ``_arrays`` since the last search on them: past ``_KEEP_ARRAYS_FOR``
        they are dropped, as keeping them costs more than making them again."""
        self._below: dict[int, float] = {}
        self._below_from = _INF
        self._ends: list[tuple[float, int]] = []
        self.track(state, [task for _, task in state.running])

    # the profile's own bookkeeping

    def _changed(self, first: int = 0) -> None:
        """The slices from ``first`` on changed."""
        self.version += 1
        self._valid = min(self._valid, first)
        self._below.clear()

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
            arrays = self._arrays
            if arrays is not None:
                count = len(times)
                arrays[:, index:count] = arrays[:, index + 1:count + 1]
            self._changed(index)

    def _split(self, moment: float) -> int:
        """The index of the slice starting at ``moment``, made if needed."""
        index = bisect.bisect_left(self.times, moment)
        if index < len(self.times) and self.times[index] == moment:
            return index
        self.times.insert(index, moment)
        self.free.insert(index, self.free[index - 1])
        self._valid = min(self._valid, index)
        arrays = self._arrays
        if arrays is not None:
            count = len(self.times)
            if count > arrays.shape[1]:
                self._arrays = None  # made again, with more room, when next searched
            else:
                arrays[:, index + 1:count] = arrays[:, index:count - 1]
                arrays[0, index], arrays[1, index] = moment, self.free[index]
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

    def move_earlier(self, state: ReservingState, task: int, held: Reservation,
                     select: Any, after: float = -_INF, before: float = _INF,
                     ) -> Reservation | None:
        """The task's earliest fit starting before ``held`` (and before ``before``, after
        ``after``: the caller knows no start outside fits), with its own cores counted
        free over its slot; it is moved there. ``None`` (nothing changed) when none fits:
        its own slot is then its earliest fit."""
        cores, length = state.need[task], state.expected_duration(task, 0)
        own_begin = held.start_s
        limit = min(own_begin, before)
        times, free = self.times, self.free
        slices = len(times)
        # one slice before the first start past ``after``: float sums may round either way
        index = max(bisect.bisect_right(times, after) - 1, 0)
        if bisect.bisect_left(times, limit) - index > _VECTOR_FROM:
            found = self._first_fit(index, limit, cores, length, own_begin)
            if found is None:
                return None
            begin = times[found]
            end = begin + length
            return self._moved(held, Reservation(begin, (0,), end), cores)
        # from the task's own slot on its cores are free: a window starting before the
        # slot that reaches it fits (it ends before the slot does)
        own = bisect.bisect_left(times, own_begin, index)
        while index < slices and times[index] < limit:
            if free[index] < cores:
                index += 1
                continue
            end = times[index] + length
            later = index + 1
            while later < own and times[later] < end and free[later] >= cores:
                later += 1
            if later in (own, slices) or times[later] >= end:
                begin = times[index]
                return self._moved(held, Reservation(begin, (0,), end), cores)
            index = later + 1
        return None

    def _moved(self, held: Reservation, found: Reservation, cores: int) -> Reservation:
        """The profile with ``held`` given back and ``found`` (earlier) taken, as ``hold``
        then ``release`` leave it, touching only the slices whose count changes: where
        the two slots overlap the task holds its cores before and after."""
        old_begin, old_end = held.start_s, held.end_s
        new_begin, new_end = found.start_s, found.end_s
        self._anchor(new_begin, 1)
        self._anchor(new_end, 1)
        self._anchor(old_begin, -1)
        self._anchor(old_end, -1)
        if new_end <= old_begin:  # apart
            self.reserve(new_begin, new_end, found.machines, cores)
            self.reserve(old_begin, old_end, held.machines, -cores)
        else:
            self.reserve(new_begin, old_begin, found.machines, cores)
            if new_end < old_end:
                self.reserve(new_end, old_end, held.machines, -cores)
            elif new_end > old_end:  # float sums: the same length may end a hair later
                self.reserve(old_end, new_end, held.machines, cores)
        self._merge(old_end)
        self._merge(old_begin)
        return found

    def _first_fit(self, first: int, limit: float, cores: int, length: float,
                   boosted_from: float) -> int | None:
        """``move_earlier``'s search on arrays: the first slice ``i >= first`` starting
        before ``limit`` from which ``cores`` are free for ``length``, the slices from
        ``boosted_from`` on counting ``cores`` more (the task's own slot); ``None``: none.
        A window fits from a slice with the cores free if and only if the first slice after
        it without them starts no sooner than the window ends, so only the first slice of
        each stretch with them free is a candidate: the one after each slice without."""
        import numpy as np

        times_list = self.times
        stop = bisect.bisect_left(times_list, limit)
        # every slice a window starting before ``stop`` can cover
        last = bisect.bisect_left(times_list, times_list[stop - 1] + length)
        all_times, all_free = self._made_arrays()
        times = all_times[first:last]
        usable = all_free[first:last] >= cores
        # from the task's own slot on its cores are free: a window starting before the
        # slot ends inside it
        usable[bisect.bisect_left(times_list, boosted_from, first, last) - first:] = True
        blocked = np.flatnonzero(~usable)
        if not blocked.size:
            return first
        # candidate k starts after blocker k - 1 (the first at 0) and runs until blocker k;
        # the last runs past every slice a window covers (an index past them is no start)
        starts = np.empty(blocked.size + 1, dtype=np.int64)
        starts[0] = 0
        np.add(blocked, 1, out=starts[1:])
        ends = np.empty(blocked.size + 1)
        ends[:-1] = times[blocked]
        ends[-1] = _INF
        fits = ends >= times.take(starts, mode="clip") + length
        if length <= 0:
            fits &= usable.take(starts, mode="clip")  # an empty stretch holds no start
        fits &= starts < stop - first
        found = int(fits.argmax())
        return first + int(starts[found]) if fits[found] else None

    def _made_arrays(self) -> Any:
        """``_arrays``, made if needed (free cores as floats: exact, far below 2**53)."""
        self._unsearched = 0
        arrays = self._arrays
        if arrays is None:
            import numpy as np

            count = len(self.times)
            arrays = self._arrays = np.empty((2, 2 * count + 64))
            arrays[0, :count], arrays[1, :count] = self.times, self.free
        return arrays

    def room_before(self, moment: float, cores: int) -> bool:
        """Whether some slice starting before ``moment`` has ``cores`` free."""
        return self.most_free_before(moment) >= cores

    def most_free_before(self, moment: float) -> int:
        """The most cores free on a slice starting before ``moment`` (``-1``: none)."""
        before = bisect.bisect_left(self.times, moment)
        if before == 0:
            return -1
        valid, tops = self._valid, self._tops
        if valid < before:
            # the running maximum brought up to date as far as asked
            del tops[valid:]
            if valid == 0:
                tops.extend(itertools.accumulate(self.free[:before], max))
            else:
                more = itertools.accumulate(self.free[valid:before], max, initial=tops[-1])
                next(more)
                tops.extend(more)
            self._valid = before
        return tops[before - 1]

    def free_until(self, moment: float, cores: int) -> float:
        """From ``moment`` on, the start of the first slice with fewer than ``cores`` free
        (``inf``: none), the slice holding ``moment`` included (cached per width until the
        profile changes)."""
        if moment != self._below_from:
            self._below.clear()
            self._below_from = moment
        found = self._below.get(cores)
        if found is None:
            times, free = self.times, self.free
            index = max(bisect.bisect_right(times, moment) - 1, 0)
            found = _INF
            for later in range(index, len(times)):
                if free[later] < cores:
                    found = times[later]
                    break
            self._below[cores] = found
        return found

    def reserve(self, begin: float, end: float, machines: Sequence[int],
                cores: int | Sequence[int]) -> None:
        """``cores`` fewer free over [begin, end) (more when negative)."""
        assert isinstance(cores, int), "one machine: no task is spread"
        first = self._split(max(begin, self.times[0]))
        last = self._split(end)
        self.free[first:last] = [free - cores for free in self.free[first:last]]
        if self._arrays is not None:
            self._unsearched += 1
            if self._unsearched > _KEEP_ARRAYS_FOR:
                self._arrays = None
            else:
                self._arrays[1, first:last] -= cores
        self._changed(first)

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
            arrays = self._arrays
            if arrays is not None:
                count = len(self.times)
                arrays[:, :count] = arrays[:, index:index + count]
            self._changed()
        if self.times[0] != now:
            self.times[0] = now
            if self._arrays is not None:
                self._arrays[0, 0] = now
            self._changed()


def compress(profile: PooledProfile, state: ReservingState,
             reservations: dict[int, Reservation], waiting: list[int], freed_until: float,
             moved: Callable[[int, Reservation], None]) -> None:
    """Move the ``waiting`` tasks (queue order) to their earliest fits after early finishes
    gave back cores from now until ``freed_until``, as the plain compression does (passes
    until no task moves earlier), looking only where a task could have gained (module
    docstring). ``moved(task, reservation)`` is told of each move after ``reservations``
    has it."""
    need, duration = state.need, state.expected_duration
    now = state.now
    count = len(waiting)
    # per position, the hull of the stretches given back by tasks behind it in the last
    # pass (the first pass: the early finishes', for every task)
    behind_low = [now] * (count + 1)
    behind_high = [freed_until] * (count + 1)
    room_before = profile.room_before
    while True:
        moves: list[tuple[int, float, float]] = []  # (position, start, end) of a left slot
        low, high = _INF, -_INF  # the hull of the slots left so far in this pass
        # for the hull's end and the profile as they are, what bounds how far a task
        # reserved from the hull's end on may reach (``_HullEnd``)
        hull_end = _HullEnd(profile, -_INF)
        for position, task in enumerate(waiting):
            hull_high = behind_high[position + 1]
            if high > hull_high:
                hull_high = high
            if hull_high <= now:
                continue  # nothing given back behind it: it cannot gain
            held = reservations[task]
            start = held.start_s
            cores = need[task]
            if start < hull_high:
                times = profile.times
                # the slice just before its start: a window it could move to either covers
                # it or ends by its start
                index = bisect.bisect_left(times, start) - 1
                if index < 0:
                    continue  # reserved from now
                length = duration(task, 0)
                if profile.free[index] < cores and (
                        now + length > times[index] or not room_before(start, cores)):
                    continue
            else:
                if hull_high != hull_end.moment:
                    hull_end = _HullEnd(profile, hull_high)
                if cores > hull_end.most:
                    continue  # no slice before the hull's end has its cores free
                length = duration(task, 0)
                if now + length > hull_end.last_start:
                    # too long to end before the slice just before the hull's end
                    if cores > hull_end.last_free:
                        continue
                    reach = hull_end.reach(cores)
                    if start > reach and now + length > reach:
                        continue
            hull_low = behind_low[position + 1]
            if low < hull_low:
                hull_low = low
            if hull_low >= held.end_s:
                continue  # nothing given back before its end
            found = profile.move_earlier(state, task, held, None, after=hull_low - length,
                                         before=hull_high)
            if found is not None:
                reservations[task] = found
                moved(task, found)
                moves.append((position, held.start_s, held.end_s))
                low, high = min(low, held.start_s), max(high, held.end_s)
                hull_end = _HullEnd(profile, -_INF)  # the profile changed
        if not moves:
            return
        behind_low = [_INF] * (count + 1)
        behind_high = [-_INF] * (count + 1)
        for position, begin, end in moves:
            behind_low[position], behind_high[position] = begin, end
        for position in range(count - 1, -1, -1):
            behind_low[position] = min(behind_low[position], behind_low[position + 1])
            behind_high[position] = max(behind_high[position], behind_high[position + 1])


class _HullEnd:
    """What rules out the tasks reserved from ``moment`` (a hull's end) on, the profile as
    it is: a window starting before ``moment`` needs a slice before ``moment`` with the
    task's cores free (``most``); it either covers the slice just before ``moment``
    (``last_start``, ``last_free``), which then needs them too, or ends by that slice's
    start; one reaching past ``moment`` covers every slice from there to its reach
    ``min(start, now + length)`` (whatever its start), which all need them (``reach``)."""

    def __init__(self, profile: PooledProfile, moment: float) -> None:
        self.profile, self.moment = profile, moment
        self.most = self.last_free = -1
        self.last_start = _INF
        if moment > profile.times[0]:
            self.most = profile.most_free_before(moment)
            last = bisect.bisect_left(profile.times, moment) - 1
            self.last_start, self.last_free = profile.times[last], profile.free[last]
        self._reach: dict[int, float] = {}

    def reach(self, cores: int) -> float:
        """How far a window of ``cores`` reaching past the hull's end may reach."""
        found = self._reach.get(cores)
        if found is None:
            found = self._reach[cores] = max(self.moment,
                                             self.profile.free_until(self.moment, cores))
        return found
