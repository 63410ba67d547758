"""Conservative backfilling (Mu'alem & Feitelson 2001): every waiting task holds a
reservation at its earliest fit in a profile of free cores per machine over time; an early
finish compresses the reservations (``notes/backfilling.md``)."""

from __future__ import annotations

import heapq
import math

from dcx.scheduler.planners.machine_profile import (
    MachineProfile,
    compress_first_fit,
    compress_in_passes,
)
from dcx.scheduler.planners.pooled_profile import PooledProfile
from dcx.scheduler.planners.strict import Key, dequeue, place
from dcx.scheduler.policies import MachineSelection, first_fit
from dcx.scheduler.state import Reservation, ReservingState

_INF = float("inf")


class ConservativeBackfilling:
    """Every waiting task holds a reservation; a task starts early only if it delays
    none."""

    def __init__(self, select: MachineSelection) -> None:
        self.select = select
        self.profile: PooledProfile | MachineProfile | None = None
        self.machines_changed = False
        self.due: list[tuple[float, Key, int]] = []
        """Every reservation made, as ``(start, queue key, task)``: a heap whose entries
        no longer matching ``state.reservations`` are dropped when they come up."""
        self.unreserved: list[tuple[Key, int]] = []
        """Queue entries a pass left without a reservation (no length, or no machine)."""
        self.key_of: dict[int, Key] = {}
        """The queue key of each task holding a reservation, for the entries of ``due``."""
        self._no_length: list[tuple[Key, int]] = []

    @staticmethod
    def _planned(state: ReservingState, reservations: dict[int, Reservation],
                 ) -> PooledProfile | MachineProfile:
        """A profile of the running tasks and ``reservations`` (of every scheduled
        resource when the problem has more than cores)."""
        if state.one_pool:
            return PooledProfile(state, reservations)
        return MachineProfile(state, reservations)

    def _hold(self, state: ReservingState, key: Key, task: int, held: Reservation) -> None:
        state.reservations[task] = held
        self.key_of[task] = key
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
            self.key_of.clear()
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
            if isinstance(profile, PooledProfile):
                profile.hold_for(task, found, state.need[task])
            else:
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
        if found:
            self._start(state, sorted((key, task) for task, key in found.items()))
        # A task of no length holds nothing over time, so it delays nobody: it starts at the
        # first instant its cores are free and is never reserved.
        for entry in self._no_length:
            placed = place(state, entry[1], self.select)
            if placed is not None:
                state.start(entry[1], *placed)
                dequeue(state.queue, [entry])
            else:
                self.unreserved.append(entry)

    def _start(self, state: ReservingState, due: list[tuple[Key, int]]) -> None:
        """Start the tasks of ``due`` (queue entries, in queue order) from their
        reservations, which come now."""
        reservations, key_of = state.reservations, self.key_of
        kept = [(task, reservations[task]) for _, task in due]
        for task, held in kept:
            shares = held.shares or (state.need[task],) * len(held.machines)
            if any(state.free[m] < cores for m, cores in zip(held.machines, shares, strict=True)):
                raise RuntimeError(f"conservative backfilling: task {task} is due at "
                                   f"{state.now} on machines without its cores free")
            if state.extra_free and not _resources_free(state, task, held):
                raise RuntimeError(f"conservative backfilling: task {task} is due at "
                                   f"{state.now} on machines without its memory or other "
                                   "resources free")
            state.start(task, held.machines, held.shares)
            del key_of[task]
        dequeue(state.queue, due)
        if isinstance(self.profile, PooledProfile):
            self.profile.started(state, [task for _, task in due])
        elif isinstance(self.profile, MachineProfile):
            self.profile.started(state, kept)

    def on_machines_changed(self) -> None:
        self.machines_changed = True

    def _compress(self, state: ReservingState) -> None:
        """A task ended early: give its slot back in the profile kept for the run
        (``sync``), then move each waiting task that could start earlier, in queue order,
        to its earliest fit, passes until none moves earlier (on one pooled machine
        ``PooledProfile.compress``; machine by machine ``compress_first_fit`` under
        FirstFit, ``compress_in_passes`` under the other selections). Its own slot is free
        while it looks, so no reservation moves later."""
        reservations, key_of, due = state.reservations, self.key_of, self.due
        waiting = [task for _, task in state.queue if task in reservations]

        def moved(task: int, held: Reservation) -> None:
            heapq.heappush(due, (held.start_s, key_of[task], task))

        profile = self.profile
        if isinstance(profile, PooledProfile):
            freed_until = profile.sync(state)
            profile.compress(state, reservations, waiting, freed_until, moved)
            return
        assert profile is not None, "plan() made it"
        profile.sync(state)
        if self.select is first_fit:
            compress_first_fit(profile, state, reservations, waiting, self.select, moved)
        else:
            compress_in_passes(profile, state, reservations, waiting, self.select, moved)

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
