"""Conservative backfilling (Mu'alem & Feitelson 2001): every waiting task holds a
reservation at its earliest fit in a profile of free cores per machine over time; an early
finish compresses the reservations (``notes/backfilling.md``)."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from typing import Any

from dcx.scheduler.packing import spread
from dcx.scheduler.planners.conservative_profile import ResourceProfile
from dcx.scheduler.planners.strict import place
from dcx.scheduler.policies import MachineSelection
from dcx.scheduler.state import Reservation, ReservingState

_INF = float("inf")


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


class _ProfileOnOne(_Slices):
    """``_Profile`` for one scheduling machine (a pooled cluster): its free cores over time
    as plain numbers, so that a reservation changes a run of slices in one step."""

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

    def _split(self, moment: float) -> int:
        """The index of the slice starting at ``moment``, made if needed."""
        index = bisect.bisect_left(self.times, moment)
        if index < len(self.times) and self.times[index] == moment:
            return index
        self.times.insert(index, moment)
        self.free.insert(index, self.free[index - 1])
        return index

    def earliest(self, state: ReservingState, task: int, select: MachineSelection,
                 ) -> Reservation | None:
        """``_Profile.earliest``. A window that fails at slice ``k`` fails for every start
        up to ``k`` too (each of them still covers slice ``k``), so the search goes on
        after it: one pass over the slices."""
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
                     select: MachineSelection) -> Reservation | None:
        """``_Profile.move_earlier``, looking only at starts before ``held`` with the task's
        own cores counted free over its slot, and changing nothing when none fits: its
        own slot is then its earliest fit."""
        cores, length = state.need[task], state.expected_duration(task, 0)
        own_begin, own_end = held.start_s, held.end_s
        times, free = self.times, self.free
        slices = len(times)
        index = 0
        while index < slices and times[index] < own_begin:
            if free[index] < cores:
                index += 1
                continue
            end = times[index] + length
            later = index + 1
            # a window starting before the task's slot ends before the slot does
            while later < slices and times[later] < end and (
                    free[later] + cores if times[later] >= own_begin else free[later]) >= cores:
                later += 1
            if later == slices or times[later] >= end:
                begin = times[index]
                self.reserve(own_begin, own_end, [0], -cores)
                self.reserve(begin, end, [0], cores)
                return Reservation(begin, (0,), end)
            index = later + 1
        return None

    def room_before(self, moment: float, cores: int) -> bool:
        """``_Profile.room_before``."""
        before = bisect.bisect_left(self.times, moment)
        return before > 0 and max(self.free[:before]) >= cores

    def reserve(self, begin: float, end: float, machines: list[int] | tuple[int, ...],
                cores: int | Sequence[int]) -> None:
        """``cores`` fewer free over [begin, end) (more when negative)."""
        assert isinstance(cores, int), "one machine: no task is spread"
        first = self._split(max(begin, self.times[0]))
        last = self._split(end)
        self.free[first:last] = [free - cores for free in self.free[first:last]]


class ConservativeBackfilling:
    """Every waiting task holds a reservation; a task starts early only if it delays
    none."""

    def __init__(self, select: MachineSelection) -> None:
        self.select = select
        self.profile: _Profile | _ProfileOnOne | ResourceProfile | None = None
        self.machines_changed = False

    @staticmethod
    def _planned(state: ReservingState, reservations: dict[int, Reservation],
                 ) -> _Profile | _ProfileOnOne | ResourceProfile:
        """A profile of the running tasks and ``reservations`` (of every scheduled
        resource when the problem has more than cores)."""
        if state.one_pool:
            return _ProfileOnOne(state, reservations)
        profile = ResourceProfile(state) if state.extra_free else _Profile(state)
        for held_by, held in reservations.items():
            profile.hold(held, state.need[held_by])
        return profile

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
            self.profile = self._planned(state, state.reservations)
            self.machines_changed = False
        elif replan:
            self._compress(state)
        else:
            self.profile.advance(state.now)
        profile = self.profile
        no_length: list[int] = []
        for _, task in state.queue:
            if task in state.reservations:
                continue
            if state.expected_length(task, state.open_machines or [0]) <= 0:
                no_length.append(task)
                continue
            found = profile.earliest(state, task, self.select)
            if found is None:
                continue  # no usable machine can ever hold it: it waits for a state change
            profile.hold(found, state.need[task])
            state.reservations[task] = found
            if math.isnan(state.first_reservation_s[task]):
                state.first_reservation_s[task] = found.start_s
        now = state.now
        reservations = state.reservations
        due = [(key, task) for key, task in state.queue
               if (held := reservations.get(task)) is not None and held.start_s <= now]
        for entry in due:
            task = entry[1]
            held = state.reservations[task]
            shares = held.shares or (state.need[task],) * len(held.machines)
            if any(state.free[m] < cores for m, cores in zip(held.machines, shares, strict=True)):
                raise RuntimeError(f"conservative backfilling: task {task} is due at {now} "
                                   "on machines without its cores free")
            if state.extra_free and not _resources_free(state, task, held):
                raise RuntimeError(f"conservative backfilling: task {task} is due at {now} "
                                   "on machines without its memory or other resources free")
            state.start(task, held.machines, held.shares)
            state.queue.remove(entry)
        # A task of no length holds nothing over time, so it delays nobody: it starts at the
        # first instant its cores are free and is never reserved.
        for task in no_length:
            placed = place(state, task, self.select)
            if placed is not None:
                state.start(task, *placed)
                state.queue.remove(next(e for e in state.queue if e[1] == task))

    def on_machines_changed(self) -> None:
        self.machines_changed = True

    def _compress(self, state: ReservingState) -> None:
        """A task ended early: rebuild the profile from the running tasks and the current
        reservations (a fresh profile has no slices left over from moved reservations),
        then move each waiting task that could start earlier, in queue order, to its
        earliest fit. Its own slot is free while it looks, so no reservation moves later.
        A task that moves frees its old slot, where a task ahead of it in the queue may now
        fit earlier: the passes repeat until none moves, so that no task waits that could
        start now without delaying a reservation. A later pass looks again only at the
        tasks with a slot given up before their end since they were placed (nothing else
        could have made room for them)."""
        reservations = state.reservations
        profile = self.profile = self._planned(state, reservations)
        waiting = [task for _, task in state.queue if task in reservations]
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
                moved = profile.move_earlier(state, task, held, select)
                if moved is not None and moved != held:
                    reservations[task] = moved  # earlier, or on other machines
                    moves.append((position, held.start_s))
                    given_up = min(given_up, held.start_s)
                    earlier = earlier or moved.start_s < held.start_s
            if not earlier:
                return
            vacated = [_INF] * (len(waiting) + 1)
            for position, start in moves:
                vacated[position] = start
            for position in range(len(waiting) - 1, -1, -1):
                vacated[position] = min(vacated[position], vacated[position + 1])

    def next_wakeup(self, state: ReservingState) -> float:
        return min((r.start_s for r in state.reservations.values()), default=_INF)


def _resources_free(state: ReservingState, task: int, held: Reservation) -> bool:
    """Whether every machine of ``held`` has free what the task takes there beside cores."""
    extra_free = state.extra_free
    return all(extra_free[dimension][machine] >= units
               for machine, amounts in zip(held.machines,
                                           state.taken_on(task, held.machines, held.shares)
                                           or ((),) * len(held.machines), strict=True)
               for dimension, units in amounts)
