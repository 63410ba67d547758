"""Conservative backfilling (Mu'alem & Feitelson 2001): every waiting task holds a
reservation at its earliest fit in a profile of free cores per machine over time; an early
finish compresses the reservations (``notes/backfilling.md``)."""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from typing import Any

from dcx.scheduler.packing import spread
from dcx.scheduler.planners.machine_profile import MachineProfile, compress_first_fit
from dcx.scheduler.planners.pooled_compress import compress
from dcx.scheduler.planners.pooled_profile import PooledProfile
from dcx.scheduler.planners.strict import Key, dequeue, place
from dcx.scheduler.policies import MachineSelection, first_fit
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
    ``times[i + 1]`` (the last one for ever). The plain profile, built afresh at every
    early finish, that the differential tests hold ``MachineProfile`` to."""

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
        self.profile: _Profile | PooledProfile | MachineProfile | None = None
        self.machines_changed = False
        self.due: list[tuple[float, Key, int]] = []
        """Every reservation made, as ``(start, queue key, task)``: a heap whose entries
        no longer matching ``state.reservations`` are dropped when they come up."""
        self.unreserved: list[tuple[Key, int]] = []
        """Queue entries a pass left without a reservation (no length, or no machine)."""
        self._no_length: list[tuple[Key, int]] = []

    @staticmethod
    def _planned(state: ReservingState, reservations: dict[int, Reservation],
                 ) -> _Profile | PooledProfile | MachineProfile:
        """A profile of the running tasks and ``reservations`` (of every scheduled
        resource when the problem has more than cores)."""
        if state.one_pool:
            return PooledProfile(state, reservations)
        return MachineProfile(state, reservations)

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
        kept = [(task, reservations[task]) for _, task in due]
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
        dequeue(state.queue, due)
        if isinstance(self.profile, PooledProfile):
            self.profile.started(state, [task for _, task in due])
        elif isinstance(self.profile, MachineProfile):
            self.profile.started(state, kept)
        # A task of no length holds nothing over time, so it delays nobody: it starts at the
        # first instant its cores are free and is never reserved.
        for entry in self._no_length:
            placed = place(state, entry[1], self.select)
            if placed is not None:
                state.start(entry[1], *placed)
                dequeue(state.queue, [entry])
            else:
                self.unreserved.append(entry)

    def on_machines_changed(self) -> None:
        self.machines_changed = True

    def _compress(self, state: ReservingState) -> None:
        """A task ended early: give its slot back in the profile kept for the run (one
        pooled machine's, ``PooledProfile.sync`` and ``pooled_compress.compress``; machine
        by machine, ``MachineProfile.sync``, and under FirstFit ``compress_first_fit``; a
        plain ``_Profile`` is built afresh from the running tasks and the reservations), then
        move each waiting task that could start earlier, in queue order, to its earliest
        fit. Its own slot is free while it looks, so no reservation moves later.
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
        profile: _Profile | MachineProfile
        if isinstance(self.profile, MachineProfile):
            profile = self.profile
            profile.sync(state)  # kept up to date in place, as the pooled one
            if self.select is first_fit:
                compress_first_fit(profile, state, reservations, waiting, self.select, moved)
                return
        else:
            planned = self.profile = self._planned(state, reservations)
            assert not isinstance(planned, PooledProfile), "one pool is planned above"
            profile = planned
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


def _resources_free(state: ReservingState, task: int, held: Reservation) -> bool:
    """Whether every machine of ``held`` has free what the task takes there beside cores."""
    extra_free = state.extra_free
    return all(extra_free[dimension][machine] >= units
               for machine, amounts in zip(held.machines,
                                           state.taken_on(task, held.machines, held.shares)
                                           or ((),) * len(held.machines), strict=True)
               for dimension, units in amounts)
