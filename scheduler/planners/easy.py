"""EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001): the head of the queue holds a
reservation at its shadow time, and a later task starts now only if it does not delay it
(``notes/backfilling.md``, counted per machine)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dcx.scheduler.packing import spread
from dcx.scheduler.planners.strict import (
    Key,
    dequeue,
    negated,
    place,
    start_from_front,
    take_from,
)
from dcx.scheduler.policies import MachineSelection
from dcx.scheduler.problem import CORE_UNITS
from dcx.scheduler.state import Reservation, ReservingState

_INF = float("inf")


@dataclass(slots=True)
class _Shadow:
    head: int
    time_s: float
    extra: list[int]
    extra_units: list[list[int]] = field(default_factory=list)
    """Per resource beside cores (per dimension, per machine), what is free at the shadow
    beyond what the head takes: rule (b) counts it like the extra cores."""


class _QueueCodes:
    """Two bytes per entry of a one-pool queue, in queue order: the buckets of the task's
    cores and of its requested time (``_WIDTHS``, ``_LENGTHS``). The scan
    behind the head picks in C (``bytes.translate`` to a mark per entry, marks combined as
    integers, then ``find``) the entries whose bytes may meet rule (a) or (b), rather than
    going through the whole queue in Python: it is long when the pool is busy, and most of
    its tasks are too wide for the cores free, or too long for the shadow and too wide for
    the extra cores. Both buckets round up, so each entry picked is still checked
    exactly."""

    def __init__(self) -> None:
        self.widths = bytearray()
        self.lengths = bytearray()
        self.width_of = b""
        """Every task's width bucket, made once (``prepare``)."""
        self.length_of = b""
        """Every task's requested-time bucket, made once (``prepare``)."""

    def prepare(self, need: list[int], expected: list[float]) -> None:
        """Every task's buckets, before the first ``add``."""
        self.width_of = _buckets(_WIDTHS, need)
        self.length_of = _buckets(_LENGTHS, expected)

    def add(self, queue: list[tuple[Key, int]], entries: list[tuple[Key, int]]) -> None:
        """``entries``, just put into the sorted ``queue``, get their bytes."""
        widths, lengths = self.widths, self.lengths
        if len(entries) == 1 and queue[-1] is entries[0]:  # one arrival, at the end (FCFS)
            task = entries[0][1]
            widths.append(self.width_of[task])
            lengths.append(self.length_of[task])
            return
        for entry in sorted(entries):
            task = entry[1]
            position = bisect.bisect_left(queue, entry)
            widths.insert(position, self.width_of[task])
            lengths.insert(position, self.length_of[task])

    def drop_front(self, count: int) -> None:
        del self.widths[:count]
        del self.lengths[:count]

    def drop(self, queue: list[tuple[Key, int]], positions: list[int]) -> None:
        """The entries at ``positions`` (ascending) leave the queue."""
        widths, lengths = self.widths, self.lengths
        for position in reversed(positions):
            del queue[position]
            del widths[position]
            del lengths[position]

    def marks(self, free: int, within_s: float, spare: int) -> bytes:
        """A 1 byte per entry that may fit ``free`` cores and either end within
        ``within_s`` or fit ``spare`` cores, else 0."""
        widths, from_bytes = self.widths, int.from_bytes
        fitting = from_bytes(widths.translate(
            _WIDTH_TABLES[bisect.bisect_left(_WIDTHS, free)]), "little")
        rules = from_bytes(self.lengths.translate(
            _LENGTH_TABLES[bisect.bisect_left(_LENGTHS, within_s)]), "little")
        if spare > 0:
            rules |= from_bytes(widths.translate(
                _WIDTH_TABLES[bisect.bisect_left(_WIDTHS, spare)]), "little")
        return (fitting & rules).to_bytes(len(widths), "little")


_WIDTHS = ([cores * CORE_UNITS for cores in range(1, 129)]
           + [math.ceil(128 * 2 ** (step / 32)) * CORE_UNITS for step in range(1, 127)]
           + [_INF])
"""Upper bounds of the width buckets (core units): every core count up to 128, then 2 %
apart up to about 2,000 cores, the last one open."""
_LENGTHS = [2.0 ** (step / 8) for step in range(255)] + [_INF]
"""Upper bounds of the requested-time buckets (seconds, 1 s to about 2^32 s, 9 % apart),
the last one open."""

_WIDTH_TABLES = [bytes(1 if code <= limit else 0 for code in range(256))
                 for limit in range(len(_WIDTHS))]
"""Per width bucket, the ``bytes.translate`` table marking the buckets up to it."""
_LENGTH_TABLES = [bytes(1 if bucket <= limit else 0 for bucket in range(256))
                  for limit in range(len(_LENGTHS))]
"""Per requested-time bucket, the ``bytes.translate`` table marking the buckets up to
it."""


class EasyBackfilling:
    """The head holds a reservation; later tasks start only if they do not delay it."""

    wakes_up = False
    """Nothing waits for a time of its own (``next_wakeup`` is always ``inf``)."""

    shadow: _Shadow | None
    expected_on_one: list[float] | None
    """Each task's requested time on the one scheduling machine, made at the first pass."""

    def __init__(self, select: MachineSelection) -> None:
        self.select = select
        self.shadow = None
        self.expected_on_one = None
        self.codes = _QueueCodes()
        """The queue's codes, kept on one scheduling machine (``state.one_pool``)."""

    def plan(self, state: ReservingState, replan: bool, freed: bool, arrived: bool) -> None:
        queue = state.queue
        single = state.one_pool
        if single and state.enqueued:
            if self.expected_on_one is None:
                self.codes.prepare(state.need, self._expected_on_one(state))
            self.codes.add(queue, state.enqueued)
        head_before = self.shadow.head if self.shadow else None
        waiting = len(queue)
        # on one scheduling machine nothing starts from the front unless the front task's
        # cores are free there (most passes): no call then
        if queue and (not single or state.free[0] >= state.need[queue[0][1]]):
            start_from_front(state, self.select)
        # a task the order put ahead of the head (SJF) that started takes cores the
        # head's shadow counted on: take the shadow again
        started_from_front = len(queue) != waiting
        if single and started_from_front:
            self.codes.drop_front(waiting - len(queue))
        if not queue:
            self.shadow = None
            return
        head = queue[0][1]
        if head_before is not None and head != head_before:
            state.reservations.pop(head_before, None)  # overtaken (SJF): no longer the head
        behind: list[tuple[Key, int]] | None
        if replan or freed or started_from_front or self.shadow is None or head != head_before:
            self.shadow = (self._reserve_on_one(state, head) if single
                           else self._reserve(state, head))
            behind = None  # the whole queue behind the head
        elif arrived:
            # Nothing finished and the head is the same: since the last pass the free
            # cores have not grown, nor the extra, and the clock is later. Every task
            # queued then failed both rules then and fails them now; only the tasks queued
            # since, none of them the head, which waited then, may start.
            enqueued = state.enqueued
            if single and len(enqueued) == 1 and state.need[enqueued[0][1]] > state.free[0]:
                return  # one arrival (most passes on a busy pool), too wide for the cores free
            placed_on = state.placed_on
            behind = [entry for entry in state.enqueued if not placed_on[entry[1]]]
            behind.sort()
        else:
            return  # nothing freed and nothing new: nothing else can start
        if single:
            self._backfill_on_one(state, self.shadow, behind)
        else:
            self._backfill(state, self.shadow, queue[1:] if behind is None else behind)

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
        shadow = self.shadow
        if shadow is None:
            return _Shadow(head, moment, [projected - wanted])
        # the last pass's shadow, taken again in place (one per finish on a busy pool)
        shadow.head, shadow.time_s, shadow.extra[0] = head, moment, projected - wanted
        return shadow

    def _backfill_on_one(self, state: ReservingState, shadow: _Shadow,
                         behind: list[tuple[Key, int]] | None) -> None:
        """Start the tasks behind the head (or of ``behind``, queue entries in queue order)
        that meet a rule."""
        if not state.usable[0]:
            return
        free = state.free[0]
        if free <= 0:
            return
        expected = self.expected_on_one or self._expected_on_one(state)
        need = state.need
        now, limit = state.now, shadow.time_s
        extra = shadow.extra[0]
        queue, codes = state.queue, self.codes
        # a 1 byte for each entry to look at, found with ``find`` (no generator to resume)
        marks: bytes | bytearray
        if behind is None:
            # float sums: a task ending by the shadow may look a hair longer than this
            within = (limit - now) * (1 + 1e-9) + 1e-9 * abs(now) + 1e-9
            marks = codes.marks(free, within, min(free, extra))
            position = marks.find(1, 1)  # behind the head
        else:
            marks = _positions_marked(queue, behind)
            position = marks.find(1)
        started: list[int] = []
        start_on_one = state.start_on_one
        while position >= 0:
            task = queue[position][1]
            width = need[task]
            if width <= free:
                in_time = now + expected[task] <= limit
                if in_time or width <= extra:
                    if not in_time:
                        extra -= width
                    start_on_one(task, expected[task])
                    started.append(position)
                    free -= width
                    if free <= 0:
                        break
            position = marks.find(1, position + 1)
        shadow.extra[0] = extra
        if started:
            codes.drop(queue, started)

    def _expected_on_one(self, state: ReservingState) -> list[float]:
        """Each task's requested time on the one scheduling machine, made at first use."""
        expected = self.expected_on_one
        if expected is None:
            duration = state.expected_duration
            expected = self.expected_on_one = [
                duration(task, 0) for task in range(len(state.need))]
        return expected

    def on_machines_changed(self) -> None:
        """The shadow is recomputed at the next pass (the event loop says ``replan``)."""

    def _reserve(self, state: ReservingState, head: int) -> _Shadow:
        """The head's shadow time and every machine's extra cores then."""
        projected = list(state.free)
        units = [list(column) for column in state.extra_free]  # none for cores only
        need = state.need[head]
        running, shares = state.running, state.shares
        index, count = 0, len(running)
        while index < count:
            moment = running[index][0]
            while index < count and running[index][0] == moment:
                task = running[index][1]
                take_from(projected, state.placed_on[task], negated(shares.get(task)),
                      -state.need[task])
                if units:
                    _shift_units(units, state, task, state.placed_on[task], shares.get(task),
                                 +1)
                index += 1
            found = place(state, head, self.select, projected, units if units else None)
            if found is not None:
                chosen, taken = found
                take_from(projected, chosen, taken, need)
                if units:
                    _shift_units(units, state, head, chosen, taken, -1)
                self._promise(state, head, moment, chosen, taken)
                return _Shadow(head, moment, projected, units)
        return _Shadow(head, _INF, projected, units)

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
                if shadow.extra_units:
                    spare = _units_spare(spare, shadow.extra_units, state.demand[task])
                if len(spare) < nodes:
                    continue
                chosen = self.select(need, nodes, spare, free)
                for machine in chosen:
                    extra[machine] -= need
                if shadow.extra_units:
                    _shift_units(shadow.extra_units, state, task, chosen, None, -1)
                state.start(task, chosen)
            started.append(entry)
        dequeue(state.queue, started)

    @staticmethod
    def _backfill_spread(state: ReservingState, task: int, shadow: _Shadow) -> bool:
        """EASY's two rules for a cores-anywhere task no one machine holds: spread over the
        machines where it ends by the shadow, or else within every machine's extra (which
        it then uses up). Whether it started."""
        free, extra, need = state.free, shadow.extra, state.need[task]
        demand = state.demand[task] if state.demand else ()
        machines = state.open_for(task)
        limit = shadow.time_s - state.now
        in_time = [m for m in machines if state.expected_duration(task, m) <= limit]
        found = spread(need, demand, in_time, free, state.extra_free)
        if found is None:
            spare = [min(free[m], extra[m]) for m in range(len(free))]
            spare_units = [[min(now, then) for now, then in zip(column, kept, strict=True)]
                           for column, kept in zip(state.extra_free, shadow.extra_units,
                                                   strict=True)]
            found = spread(need, demand, machines, spare, spare_units)
            if found is None:
                return False
            take_from(extra, found[0], found[1], need)
            if shadow.extra_units:
                _shift_units(shadow.extra_units, state, task, found[0], found[1], -1)
        state.start(task, found[0], found[1])
        return True

    def next_wakeup(self, state: ReservingState) -> float:
        return _INF


def _buckets(bounds: list[float], values: Sequence[float]) -> bytes:
    """``bisect_left(bounds, value)`` of each of ``values``, as one byte each, computed
    a column at a time (NaN gets 0, as ``bisect_left`` gives it)."""
    column = np.asarray(values, dtype=np.float64)
    codes = np.searchsorted(np.asarray(bounds, dtype=np.float64), column, side="left")
    codes[np.isnan(column)] = 0
    return bytes(codes.astype(np.uint8))


def _positions_marked(queue: list[tuple[Key, int]], entries: list[tuple[Key, int]]
                      ) -> bytes | bytearray:
    """A 1 byte at the position of each of ``entries`` (in ``queue``), else 0."""
    at = len(queue) - len(entries)
    if queue[at:] == entries:  # at the end (FCFS)
        return bytes(at) + b"\1" * len(entries)
    marks = bytearray(len(queue))
    for entry in entries:
        marks[bisect.bisect_left(queue, entry)] = 1
    return marks


def _shift_units(units: list[list[int]], state: ReservingState, task: int,
                 machines: Sequence[int], shares: Sequence[int] | None, sign: int) -> None:
    """``units`` (free per dimension, per machine) with what ``task`` holds on ``machines``
    given back (``sign`` +1) or taken (-1)."""
    taken = state.taken_on(task, machines, shares)
    if not taken:
        return  # it asks for cores only
    for machine, amounts in zip(machines, taken, strict=True):
        for dimension, amount in amounts:
            units[dimension][machine] += sign * amount


def _units_spare(machines: list[int], units: list[list[int]],
                 demand: tuple[tuple[int, int], ...]) -> list[int]:
    """The ``machines`` whose ``units`` cover ``demand`` (per dimension)."""
    for dimension, amount in demand:
        column = units[dimension]
        machines = [machine for machine in machines if column[machine] >= amount]
    return machines


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
