"""The plain profile of conservative backfilling when the problem schedules resources
beside cores (memory, GPUs, named resources): per machine over time, the free cores and the
free units of every other dimension, in lists, built afresh at every early finish. The
planner runs on ``machine_profile.MachineProfile`` (the same rules on one array, kept for the
run); ``tests/test_scheduler_machine_profile.py`` holds it to this one, as the cores-only
``_Profile`` in ``conservative.py``. It follows the cores-only rules with a vector per
machine:

* a reservation fits a machine when, in every slice of its window, the machine has the
  task's cores free and every unit of every other resource it asks for;
* a cores-anywhere task no one machine holds is spread (``packing.spread``) over the
  lowest free amounts of its window, each machine giving its share of the task's other
  resources (``packing.spread_demand``), exactly as it is placed when it starts;
* every reservation records what each of its machines gives beside cores
  (``Reservation.taken``), so holding and releasing it are exact.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from dcx.scheduler.packing import spread
from dcx.scheduler.policies import MachineSelection
from dcx.scheduler.state import Demand, Reservation, ReservingState

Row = list[list[int]]
"""Free amounts at one slice: row 0 the cores per machine, row ``1 + d`` the units of
dimension ``d`` per machine."""


class ResourceProfile:
    """Free cores and other resources per machine over time: slice ``i`` holds from
    ``times[i]`` to ``times[i + 1]`` (the last one for ever)."""

    def __init__(self, state: ReservingState) -> None:
        self.times = [state.now]
        self.free: list[Row] = [[list(state.free)] + [list(c) for c in state.extra_free]]
        shares = state.shares
        for expected_end, task in state.running:
            machines = state.placed_on[task]
            held = shares.get(task)
            self._change(max(expected_end, self.times[0]), None, machines,
                         _amounts(state, task, machines, held), +1)

    def _split(self, moment: float) -> int:
        """The index of the slice starting at ``moment``, made if needed."""
        index = bisect.bisect_left(self.times, moment)
        if index < len(self.times) and self.times[index] == moment:
            return index
        self.times.insert(index, moment)
        self.free.insert(index, [list(row) for row in self.free[index - 1]])
        return index

    def _change(self, begin: float, end: float | None, machines: Sequence[int],
                amounts: list[list[int]], sign: int) -> None:
        """``amounts`` (one vector per machine) more free (``sign`` +1) or fewer (-1) over
        [begin, end) (``end`` ``None``: for ever)."""
        first = self._split(max(begin, self.times[0]))
        last = len(self.times) if end is None else self._split(end)
        for row in self.free[first:last]:
            for machine, vector in zip(machines, amounts, strict=True):
                for resource, amount in enumerate(vector):
                    row[resource][machine] += sign * amount

    def advance(self, now: float) -> None:
        """Drop the slices that ended before ``now``."""
        index = bisect.bisect_right(self.times, now) - 1
        if index > 0:
            del self.times[:index]
            del self.free[:index]
        self.times[0] = now

    def hold(self, held: Reservation, need: int) -> None:
        """The profile with ``held`` taken."""
        self._change(held.start_s, held.end_s, held.machines, _held(held, need), -1)

    def release(self, held: Reservation, need: int) -> None:
        """The profile with ``held`` given back."""
        self._change(held.start_s, held.end_s, held.machines, _held(held, need), +1)

    def earliest(self, state: ReservingState, task: int, select: MachineSelection,
                 ) -> Reservation | None:
        """The earliest slice start at which enough machines have the task's cores and
        other resources free for its whole requested time, with the machines R5 picks
        there (or, for a cores-anywhere task no one machine holds, those it spreads
        over)."""
        need, nodes = state.need[task], state.nodes[task]
        usable = state.open_for(task)
        if not usable:
            return None
        demand = state.demand[task]
        vector = _dense(need, demand, len(state.extra_free))
        if nodes > 1:
            slowest = max(state.expected_duration(task, m) for m in usable)
            length = dict.fromkeys(usable, slowest)
        else:
            length = {m: state.expected_duration(task, m) for m in usable}
        anywhere = state.tasks.is_anywhere(task)
        for index, begin in enumerate(self.times):
            candidates = [m for m in usable if self._fits(index, begin + length[m], m, vector)]
            if len(candidates) >= nodes:
                chosen = tuple(select(need, nodes, candidates, self.free[index][0]))
                return Reservation(begin, chosen, begin + max(length[m] for m in chosen),
                                   taken=(demand,) * len(chosen))
            if anywhere:
                end = begin + max(length.values())
                lowest = self._window_free(index, end)
                found = spread(need, demand, usable, lowest[0], lowest[1:])
                if found is not None:
                    machines, shares, taken = found
                    return Reservation(begin, tuple(machines), end, tuple(shares),
                                       tuple(taken) if taken else ((),) * len(machines))
        return None

    def _fits(self, index: int, end: float, machine: int, vector: list[int]) -> bool:
        """Whether ``machine`` has ``vector`` free from slice ``index`` until ``end``."""
        times, free = self.times, self.free
        later = index
        while later < len(times) and (later == index or times[later] < end):
            row = free[later]
            if any(row[resource][machine] < amount for resource, amount in enumerate(vector)):
                return False
            later += 1
        return True

    def _window_free(self, index: int, end: float) -> Row:
        """Per resource and machine, the lowest free amount from slice ``index`` until
        ``end``."""
        times, free = self.times, self.free
        lowest = [list(row) for row in free[index]]
        later = index + 1
        while later < len(times) and times[later] < end:
            for low, row in zip(lowest, free[later], strict=True):
                low[:] = [min(a, b) for a, b in zip(low, row, strict=True)]
            later += 1
        return lowest

    def move_earlier(self, state: ReservingState, task: int, held: Reservation,
                     select: MachineSelection) -> Reservation | None:
        """Re-insert ``task``, reserved as ``held``, at its earliest fit with its own slot
        free (so no later than it was); its new reservation."""
        self.release(held, state.need[task])
        found = self.earliest(state, task, select)
        assert found is not None and found.start_s <= held.start_s, "its own slot is free"
        self.hold(found, state.need[task])
        return found

    def room_before(self, moment: float, cores: int) -> bool:
        """Always: R5 may pick other machines at the same start once a slot was left."""
        return True


def _dense(cores: int, demand: Demand, dimensions: int) -> list[int]:
    """``cores`` and ``demand`` as one amount per resource (cores first)."""
    vector = [cores] + [0] * dimensions
    for dimension, units in demand:
        vector[1 + dimension] += units
    return vector


def _amounts(state: ReservingState, task: int, machines: Sequence[int],
             shares: Sequence[int] | None) -> list[list[int]]:
    """What the task holds on each of ``machines``, one vector each."""
    dimensions = len(state.extra_free)
    taken = state.taken_on(task, machines, shares) or ((),) * len(machines)
    cores = shares if shares is not None else (state.need[task],) * len(machines)
    return [_dense(core, amounts, dimensions) for core, amounts in zip(cores, taken, strict=True)]


def _held(held: Reservation, need: int) -> list[list[int]]:
    """What ``held`` takes on each of its machines, one vector each."""
    count = len(held.machines)
    cores = held.shares if held.shares is not None else (need,) * count
    taken = held.taken if held.taken is not None else ((),) * count
    dimensions = max((dimension + 1 for amounts in taken for dimension, _ in amounts),
                     default=0)
    return [_dense(core, amounts, dimensions) for core, amounts in zip(cores, taken, strict=True)]
