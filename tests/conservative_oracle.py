"""The plain rule conservative backfilling is held to (test code only): profiles built
afresh from the running tasks and the reservations at every early finish, in plain lists,
and a compression that takes each waiting task's reservation out and puts it back at its
earliest fit, in queue order, passes until none moves earlier (``notes/backfilling.md``).

The planner runs on profiles kept for the whole run (``planners/pooled_profile.py`` for one
pool, ``planners/machine_profile.py`` machine by machine) with shortcuts that must change
no schedule; ``PlainConservative`` is the same planner on these profiles, which
``tests/test_scheduler_backfilling_differential.py`` and
``tests/test_scheduler_machine_profile.py`` put in its place to compare every start, finish,
machine and first reservation:

* ``PlainProfile``: free cores per machine over time, one list per slice;
* ``ResourceProfile``: the same with every other scheduled resource (memory, GPUs, named
  resources), a vector per machine. A reservation fits a machine when, in every slice of
  its window, the machine has the task's cores free and every unit of every other resource
  it asks for; a cores-anywhere task no one machine holds is spread (``packing.spread``)
  over the lowest free amounts of its window, each machine giving its share of the task's
  other resources (``packing.spread_demand``), exactly as it is placed when it starts; every
  reservation records what each of its machines gives beside cores (``Reservation.taken``),
  so holding and releasing it are exact.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence
from typing import Any

from dcx.scheduler.packing import spread
from dcx.scheduler.planners.conservative import ConservativeBackfilling
from dcx.scheduler.policies import MachineSelection
from dcx.scheduler.state import Demand, Reservation, ReservingState

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


class PlainProfile(_Slices):
    """Free cores per machine over time: slice ``i`` holds from ``times[i]`` to
    ``times[i + 1]`` (the last one for ever), built afresh at every early finish."""

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


Row = list[list[int]]
"""Free amounts at one slice: row 0 the cores per machine, row ``1 + d`` the units of
dimension ``d`` per machine."""


class ResourceProfile:
    """Free cores and other resources per machine over time: slice ``i`` holds from
    ``times[i]`` to ``times[i + 1]`` (the last one for ever), built afresh at every early
    finish."""

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


class PlainConservative(ConservativeBackfilling):
    """Conservative backfilling on a plain profile made afresh from the running tasks and
    the reservations at every early finish (``ResourceProfile`` when the problem schedules
    more than cores), compressed by taking each waiting task out and putting it back at its
    earliest fit, in queue order, passes until none moves earlier. A task that no slot left
    before its end since it was placed keeps its reservation (nothing could have made room
    for it, and the selection is not asked again at its own start)."""

    @staticmethod
    def _planned(  # type: ignore[override]  # the plain profiles answer as the planner's
            state: ReservingState, reservations: dict[int, Reservation],
    ) -> PlainProfile | ResourceProfile:
        profile = ResourceProfile(state) if state.extra_free else PlainProfile(state)
        for held_by, held in reservations.items():
            profile.hold(held, state.need[held_by])
        return profile

    def _compress(self, state: ReservingState) -> None:
        reservations = state.reservations
        keys = {task: key for key, task in state.queue if task in reservations}
        waiting = list(keys)
        profile = self._planned(state, reservations)
        self.profile = profile  # type: ignore[assignment]
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
                profile.release(held, need[task])
                found = profile.earliest(state, task, select)
                assert found is not None and found.start_s <= held.start_s, "its slot is free"
                profile.hold(found, need[task])
                if found != held:
                    reservations[task] = found  # earlier, or on other machines
                    heapq.heappush(self.due, (found.start_s, keys[task], task))
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
