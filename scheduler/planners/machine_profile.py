"""Conservative backfilling's profile when tasks are planned machine by machine (several
scheduling machines: whole nodes on unlike machines, memory, GPUs or named resources, R2/R3
filters, machines that change state): per slice of time, the free cores and the free units
of every other scheduled resource of every machine, as one NumPy array.

It answers what the plain profiles answer (``PlainProfile`` for cores, ``ResourceProfile`` for
more, in ``tests/conservative_oracle.py``; the planner's differential tests hold it to them
on generated workloads), with the same rules:

* a reservation fits a machine when, in every slice of its window, the machine has the
  task's cores free and every unit of every other resource it asks for;
* a cores-anywhere task no one machine holds is spread (``packing.spread``) over the lowest
  free amounts of its window, each machine giving its share of the task's other resources.

The search for an earliest fit is one pass of array operations over every slice and machine
at once: which machines have the task's amounts free in each slice, a running count of the
slices where they do not, and each start's window end found by ``searchsorted``, so that a
machine fits a window when the count does not grow across it. Spreading is tried only at
starts where the machines together have the task's amounts free in every slice of the
window, and in its first and last slices machine by machine (bounds no spread can beat),
in time order.

It is kept for the whole run, as the pooled profile is: ``sync`` gives back, from now until
its expected end, what a task that ended early held, and ``started`` trims a reservation
that becomes a running task to the task's own expected end (a task over several nodes is
planned with its requested time on the slowest machine it may use, and runs on the ones it
got). After early finishes, a slice whose amounts equal the slice's before it is merged
into it: an earliest fit starts at the first of such a run either way.

Compression under FirstFit (``compress_first_fit``) re-inserts only the tasks that
``could_change``: the profile logs every stretch given back (early finishes, trimmed
starts, slots that moved tasks left), and a task placed at its earliest fit can only gain
from one of them.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dcx.scheduler.packing import spread
from dcx.scheduler.policies import MachineSelection
from dcx.scheduler.state import Demand, Reservation, ReservingState

_INF = float("inf")


class MachineProfile:
    """Free amounts per resource and machine over time: slice ``i`` holds ``free[i]`` (row
    0 the cores of every machine, row ``1 + d`` the units of dimension ``d``) from
    ``times[i]`` to ``times[i + 1]`` (the last one for ever)."""

    def __init__(self, state: ReservingState, reservations: dict[int, Reservation]) -> None:
        """The running tasks given back at their expected ends, then ``reservations``."""
        now = state.now
        self.resources = 1 + len(state.extra_free)
        base = np.array([state.free, *state.extra_free], dtype=np.int64)
        moments = sorted({now} | {max(end, now) for end, _ in state.running})
        changes = np.zeros((len(moments), *base.shape), dtype=np.int64)
        position = {moment: index for index, moment in enumerate(moments)}
        for expected_end, task in state.running:
            machines = state.placed_on[task]
            amounts = running_amounts(state, task, machines)
            changes[position[max(expected_end, now)]][:, list(machines)] += amounts
        self.times: list[float] = moments
        self.free = base + np.cumsum(changes, axis=0)
        self._times_array: Any = None
        self._pooled: Any = None
        """Per slice, the cores free on all usable machines together, and its running
        maximum (``None``: to be made again)."""
        self._ends: list[tuple[float, int]] = []
        self._machines: dict[int, tuple[list[int], list[float]]] = {}
        self.seq = 0
        """Counts the stretches given back (``given_back``)."""
        self.visited: dict[int, int] = {}
        """Per waiting task, ``seq`` when it was last placed at its earliest fit."""
        self._lowest: list[tuple[int, float]] = []
        self._highest: list[tuple[int, float]] = []
        """``(seq, start)`` and ``(seq, end)`` of the stretches given back, each kept only
        while no later one starts earlier (ends later): the first entry past a ``seq`` is
        the earliest start (latest end) of every stretch given back since."""
        self.started(state, [(task, None) for _, task in state.running])
        for held_by, held in reservations.items():
            self.hold(held, state.need[held_by])

    # changing it

    def _split(self, moment: float) -> int:
        """The index of the slice starting at ``moment``, made if needed."""
        times = self.times
        index = bisect.bisect_left(times, moment)
        if index < len(times) and times[index] == moment:
            return index
        times.insert(index, moment)
        self.free = np.insert(self.free, index, self.free[index - 1], axis=0)
        self._times_array = self._pooled = None
        return index

    def _change(self, begin: float, end: float | None, machines: Sequence[int],
                amounts: Any) -> None:
        """``amounts`` (resources x machines) more free over [begin, end) (``end``
        ``None``: for ever); fewer where negative."""
        if end is not None and end <= self.times[0]:
            return
        first = self._split(max(begin, self.times[0]))
        last = len(self.times) if end is None else self._split(end)
        if first < last:
            self.free[first:last, :, list(machines)] += amounts
            self._pooled = None

    def hold(self, held: Reservation, need: int) -> None:
        """The profile with ``held`` taken."""
        self._change(held.start_s, held.end_s, held.machines,
                     -reserved_amounts(held, need, self.resources))

    def release(self, held: Reservation, need: int) -> None:
        """The profile with ``held`` given back."""
        self._change(held.start_s, held.end_s, held.machines,
                     reserved_amounts(held, need, self.resources))

    def advance(self, now: float) -> None:
        """Drop the slices that ended before ``now``."""
        index = bisect.bisect_right(self.times, now) - 1
        if index > 0:
            del self.times[:index]
            self.free = self.free[index:]
        if self.times[0] != now:
            self.times[0] = now
        self._times_array = self._pooled = None

    def started(self, state: ReservingState,
                tasks: Sequence[tuple[int, Reservation | None]]) -> None:
        """``tasks`` started (from the reservations given, or running when the profile was
        made): a reservation's slot becomes the task's own, up to its expected end, and
        ``sync`` will see when they end."""
        finish_s, expected_end_s = state.finish_s, state.expected_end_s
        for task, held in tasks:
            heapq.heappush(self._ends, (finish_s[task], task))
            if held is None:
                continue
            end = expected_end_s[task]
            if end != held.end_s:
                amounts = running_amounts(state, task, held.machines)
                if end < held.end_s:
                    self._change(end, held.end_s, held.machines, amounts)
                    self.given_back(end, held.end_s)
                else:
                    self._change(held.end_s, end, held.machines, -amounts)

    def sync(self, state: ReservingState) -> bool:
        """What the tasks that ended early (by ``state.now``) held given back from now to
        their expected ends; whether any did."""
        now, ends = state.now, self._ends
        self.advance(now)
        expected_end_s = state.expected_end_s
        given = False
        while ends and ends[0][0] <= now:
            _, task = heapq.heappop(ends)
            end = expected_end_s[task]
            if end > now:
                machines = state.placed_on[task]
                self._change(now, end, machines, running_amounts(state, task, machines))
                self.given_back(now, end)
                given = True
        if given:
            self._merge()
        return given

    def _merge(self) -> None:
        """Drop the slices whose amounts equal the slice's before them (the ends of slots
        given back): an earliest fit starts at the first of such a run either way."""
        free = self.free
        same = np.all(free[1:] == free[:-1], axis=(1, 2))
        if same.any():
            keep = np.concatenate(([True], ~same))
            self.free = free[keep]
            self.times = [moment for moment, kept in zip(self.times, keep.tolist(),
                                                         strict=True) if kept]
            self._times_array = self._pooled = None

    def given_back(self, begin: float, end: float) -> None:
        """Log a stretch where something was given back: a waiting task placed before it
        may now fit earlier (``could_change``)."""
        self.seq += 1
        lowest, highest = self._lowest, self._highest
        while lowest and lowest[-1][1] >= begin:
            lowest.pop()
        lowest.append((self.seq, begin))
        while highest and highest[-1][1] <= end:
            highest.pop()
        highest.append((self.seq, end))

    def could_change(self, state: ReservingState, task: int, held: Reservation,
                     ) -> float | None:
        """Where re-inserting ``task`` (reserved as ``held``, FirstFit) may give it
        another reservation: from ``-inf`` (an earlier start may fit), from its own start
        (only other machines there), or ``None`` (it keeps ``held``).

        It was at its earliest fit when last placed; since then only the stretches given
        back can have made room, so a window it could take instead overlaps one of them
        (their hull is ``[low, high)``). An earlier start ``t`` is before ``min(start,
        high)``, so some slice starting before that has the task's cores free on the
        usable machines together, and so do the slices from there to the end of the
        shortest window from now (every such window covers them; the task's own slot
        begins no earlier). Its own start gives other machines only if a stretch reaches
        past it. Otherwise every window up to its own lost room or kept what it had, and
        FirstFit picks the same machines at the same start."""
        since = self.visited.get(task, -1)
        lowest = self._lowest
        found = bisect.bisect_right(lowest, (since, _INF))
        if found == len(lowest):
            return None  # nothing given back since
        low = lowest[found][1]
        highest = self._highest
        high = highest[bisect.bisect_right(highest, (since, _INF))][1]
        now, start = state.now, held.start_s
        if low >= held.end_s or high <= now:
            return None
        if self._earlier_may_fit(state, task, min(start, high), start):
            return -_INF
        return start if start < high else None

    def _earlier_may_fit(self, state: ReservingState, task: int, limit: float,
                         start: float) -> bool:
        """Whether the usable machines together have the task's cores free in a slice
        starting before ``limit`` and in every slice every window starting then covers
        before ``start``."""
        pooled, tops = self._pooled_cores(state)
        total = state.need[task] * state.nodes[task]
        times = self.times
        first = bisect.bisect_left(times, limit) - 1  # the slice holding the instant before
        if first < 0 or tops[first] < total:
            return False
        lengths = self._machines_of(state, task)[1]
        if not lengths:
            return False  # no machine it may use is up
        reach = min(state.now + min(lengths), start)
        if reach < limit:
            return True
        return bool(pooled[first:bisect.bisect_left(times, reach)].min() >= total)

    def _pooled_cores(self, state: ReservingState) -> tuple[Any, Any]:
        if self._pooled is None:
            cores = self.free[:, 0, :]
            open_machines = state.open_machines
            if len(open_machines) != cores.shape[1]:
                cores = cores[:, open_machines]
            pooled = cores.sum(axis=1)
            self._pooled = (pooled, np.maximum.accumulate(pooled))
        return self._pooled

    # its questions

    def earliest(self, state: ReservingState, task: int, select: MachineSelection,
                 latest: float = _INF, after: float = -_INF) -> Reservation | None:
        """The earliest slice start (from ``after`` to ``latest``) at which enough machines
        have the task's cores and other resources free for its whole requested time, with
        the machines R5 picks there (or, for a cores-anywhere task no one machine holds,
        those it spreads over)."""
        self.visited[task] = self.seq
        usable, lengths = self._machines_of(state, task)
        if not usable:
            return None
        need, nodes = state.need[task], state.nodes[task]
        demand: Demand = state.demand[task] if state.demand else ()
        # the starts up to ``latest`` and every slice their windows can reach
        first = bisect.bisect_left(self.times, after) if after > -_INF else 0
        starts = bisect.bisect_right(self.times, latest) - first
        rows = min(len(self.times), bisect.bisect_left(self.times, latest + max(lengths)) + 1)
        vector = np.array(dense(need, demand, self.resources - 1), dtype=np.int64)
        columns = usable if len(usable) != self.free.shape[2] else None
        view = self.free[first:rows]
        if columns is not None:
            view = view[:, :, columns]
        fits = _window_fits(view, vector, self._times()[first:rows], lengths)[:starts]
        whole = np.flatnonzero(np.count_nonzero(fits, axis=1) >= nodes)
        first_whole = int(whole[0]) if whole.size else starts
        if first_whole and state.tasks.is_anywhere(task):
            found = self._spread(need, demand, usable, first, view, vector, max(lengths),
                                 first_whole)
            if found is not None:
                return found
        if first_whole == starts:
            return None
        index = first + first_whole
        begin = self.times[index]
        candidates = [usable[column] for column in np.flatnonzero(fits[first_whole])]
        chosen = tuple(select(need, nodes, candidates, self.free[index, 0].tolist()))
        length = dict(zip(usable, lengths, strict=True))
        return Reservation(begin, chosen, begin + max(length[m] for m in chosen),
                           taken=(demand,) * len(chosen) if self.resources > 1 else None)

    def _spread(self, need: int, demand: Demand, usable: list[int], first: int, view: Any,
                vector: Any, length: float, before: int) -> Reservation | None:
        """The first start before slice ``first + before`` (from slice ``first``, whose
        slices on are ``view``) at which the task spreads over the lowest free amounts of
        its window."""
        count = len(view)
        times = self._times()[first:first + count]
        ends = np.maximum(np.searchsorted(times, times + length, side="left"),
                          np.arange(1, count + 1))
        # the machines together must cover it in every slice, and in the first and last
        # slices of the window on each machine
        short = np.any(view.sum(axis=2) < vector, axis=1)
        blocked = np.concatenate(([0], np.cumsum(short)))
        head = view[:before]
        edges = np.minimum(head, view[ends[:before] - 1]).sum(axis=2)
        possible = np.flatnonzero((blocked[ends[:before]] == blocked[:before])
                                  & np.all(edges >= vector, axis=1))
        free = self.free
        for index in (first + possible).tolist():
            lowest = free[index:first + int(ends[index - first])].min(axis=0).tolist()
            found = spread(need, demand, usable, lowest[0], lowest[1:])
            if found is None:
                continue
            machines, shares, taken = found
            begin = self.times[index]
            return Reservation(begin, tuple(machines), begin + length, tuple(shares),
                               (tuple(taken) if taken else ((),) * len(machines))
                               if self.resources > 1 else None)
        return None

    def _machines_of(self, state: ReservingState, task: int) -> tuple[list[int], list[float]]:
        """The machines the task may use (machine states do not change while the profile
        lives) and its requested time on each (the slowest one's, over several nodes)."""
        known = self._machines.get(task)
        if known is None:
            usable = state.open_machines if state.allowed is None else state.open_for(task)
            if not usable:
                lengths: list[float] = []
            elif state.nodes[task] > 1:
                lengths = [max(state.expected_duration(task, m) for m in usable)] * len(usable)
            else:
                lengths = [state.expected_duration(task, m) for m in usable]
            known = self._machines[task] = (usable, lengths)
        return known

    def _times(self) -> Any:
        if self._times_array is None:
            self._times_array = np.array(self.times, dtype=np.float64)
        return self._times_array

    def move_earlier(self, state: ReservingState, task: int, held: Reservation,
                     select: MachineSelection, after: float = -_INF) -> Reservation | None:
        """Re-insert ``task``, reserved as ``held``, at its earliest fit with its own slot
        free (so no later than it was; the caller knows none before ``after`` fits); its
        new reservation."""
        self.release(held, state.need[task])
        found = self.earliest(state, task, select, held.start_s, after)
        assert found is not None and found.start_s <= held.start_s, "its own slot is free"
        self.hold(found, state.need[task])
        return found


def _window_fits(view: Any, vector: Any, times: Any, lengths: list[float]) -> Any:
    """Per slice and machine of ``view`` (slices x resources x machines), whether a window
    of the machine's length starting there has ``vector`` free in every slice."""
    count = len(times)
    short = np.any(view < vector[:, None], axis=1) if view.shape[1] > 1 else (
        view[:, 0, :] < vector[0])
    # machines by slices, so that the running count runs along contiguous memory
    blocked = np.zeros((short.shape[1], count + 1), dtype=np.int32)
    np.cumsum(np.ascontiguousarray(short.T), axis=1, out=blocked[:, 1:])
    rows = np.arange(1, count + 1)
    distinct = set(lengths)
    if len(distinct) == 1:
        ends = np.maximum(np.searchsorted(times, times + lengths[0], side="left"), rows)
        return (blocked[:, ends] == blocked[:, :-1]).T
    fits = np.empty(short.shape, dtype=bool)
    for length in distinct:
        columns = [column for column, each in enumerate(lengths) if each == length]
        ends = np.maximum(np.searchsorted(times, times + length, side="left"), rows)
        fits[:, columns] = (blocked[columns][:, ends] == blocked[columns, :-1]).T
    return fits


def dense(cores: int, demand: Demand, dimensions: int) -> list[int]:
    """``cores`` and ``demand`` as one amount per resource (cores first)."""
    vector = [cores] + [0] * dimensions
    for dimension, units in demand:
        vector[1 + dimension] += units
    return vector


def running_amounts(state: ReservingState, task: int, machines: Sequence[int]) -> Any:
    """What a running (or started) task holds on each of ``machines``: resources x
    machines."""
    dimensions = len(state.extra_free)
    shares = state.shares.get(task)
    cores = shares if shares is not None else (state.need[task],) * len(machines)
    taken = state.taken_on(task, machines, shares) or ((),) * len(machines)
    return np.array([dense(core, amounts, dimensions)
                     for core, amounts in zip(cores, taken, strict=True)],
                    dtype=np.int64).T


def reserved_amounts(held: Reservation, need: int, resources: int) -> Any:
    """What ``held`` takes on each of its machines: resources x machines."""
    count = len(held.machines)
    cores = held.shares if held.shares is not None else (need,) * count
    taken = held.taken if held.taken is not None else ((),) * count
    return np.array([dense(core, amounts, resources - 1)
                     for core, amounts in zip(cores, taken, strict=True)],
                    dtype=np.int64).T


def compress_first_fit(profile: MachineProfile, state: ReservingState,
                       reservations: dict[int, Reservation], waiting: list[int],
                       select: MachineSelection,
                       moved: Callable[[int, Reservation], None]) -> None:
    """Compression under FirstFit: the ``waiting`` tasks (queue order) re-inserted at their
    earliest fits, passes until none moves earlier, as the plain rule does, looking only
    at the tasks that ``could_change``. ``moved(task, reservation)`` is told of each
    change after ``reservations`` has it."""
    while True:
        earlier = False
        for task in waiting:
            held = reservations[task]
            after = profile.could_change(state, task, held)
            if after is None:
                continue
            found = profile.move_earlier(state, task, held, select, after)
            if found is not None and found != held:
                reservations[task] = found
                moved(task, found)
                profile.given_back(held.start_s, held.end_s)
                profile.visited[task] = profile.seq
                earlier = earlier or found.start_s < held.start_s
        if not earlier:
            return


def compress_in_passes(profile: MachineProfile, state: ReservingState,
                       reservations: dict[int, Reservation], waiting: list[int],
                       select: MachineSelection,
                       moved: Callable[[int, Reservation], None]) -> None:
    """Compression under any selection: the ``waiting`` tasks (queue order) re-inserted at
    their earliest fits, passes until none moves earlier. A task that moves frees its old
    slot, where a task ahead of it in the queue may now fit earlier, so a later pass looks
    again, but only at the tasks with a slot given up before their end since they were
    placed (nothing else could have made room for them; R5 may pick other machines at the
    same start once a slot there was left). ``moved(task, reservation)`` is told of each
    change after ``reservations`` has it."""
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
