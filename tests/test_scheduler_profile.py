"""``scheduler/planners/pooled_profile.py`` held to the profile it replaced.

``ReferenceProfile`` is the one-machine profile conservative backfilling planned on before
(``_ProfileOnOne``), kept here as it was: built afresh from the running tasks and the
reservations, queried by one pass over its slices. Generated runs of reservations,
releases, moves and advances of the clock ask both the same questions (``earliest``, and
the earliest fit before a task's own slot: ``move_earlier`` here, the compiled
compression, ``PooledProfile.compress``, of one task there) and compare the free cores
they then give at every instant. ``sync`` (early finishes given back in place) is held to a
profile built afresh after the finishes. Compression as a whole, and multi-core machines (planned on
``machine_profile.MachineProfile``), are held to the plain re-planning reference end to end
in ``test_scheduler_conservative_reference.py`` and
``test_scheduler_backfilling_differential.py``.
"""

from __future__ import annotations

import bisect
import itertools
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.scheduler.planners.pooled_profile import PooledProfile
from dcx.scheduler.state import Reservation

_INF = float("inf")


class ReferenceProfile:
    """The previous ``_ProfileOnOne``: free cores over time as plain numbers."""

    def __init__(self, state: Any, reservations: dict[int, Reservation]) -> None:
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
        index = bisect.bisect_left(self.times, moment)
        if index < len(self.times) and self.times[index] == moment:
            return index
        self.times.insert(index, moment)
        self.free.insert(index, self.free[index - 1])
        return index

    def earliest(self, state: Any, task: int) -> Reservation | None:
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

    def move_earlier(self, state: Any, task: int, held: Reservation) -> Reservation | None:
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
            while later < slices and times[later] < end and (
                    free[later] + cores if times[later] >= own_begin else free[later]) >= cores:
                later += 1
            if later == slices or times[later] >= end:
                begin = times[index]
                self.reserve(own_begin, own_end, -cores)
                self.reserve(begin, end, cores)
                return Reservation(begin, (0,), end)
            index = later + 1
        return None

    def reserve(self, begin: float, end: float, cores: int) -> None:
        first = self._split(max(begin, self.times[0]))
        last = self._split(end)
        self.free[first:last] = [free - cores for free in self.free[first:last]]

    def advance(self, now: float) -> None:
        index = bisect.bisect_right(self.times, now) - 1
        if index > 0:
            del self.times[:index]
            del self.free[:index]
        self.times[0] = now


def _free_at(times: list[float], free: list[int], moment: float) -> int:
    return free[bisect.bisect_right(times, moment) - 1]


def _same_profile(fast: PooledProfile, reference: ReferenceProfile) -> None:
    """The same free cores at every instant either one changes at (the new profile may
    keep neighbouring slices of the same count apart)."""
    assert fast.times[0] == reference.times[0]
    for moment in sorted(set(fast.times) | set(reference.times)):
        assert (_free_at(fast.times, fast.free, moment)
                == _free_at(reference.times, reference.free, moment)), moment


def _state(capacity: int, running: list[tuple[int, float, float]], lengths: list[float],
           widths: list[int]) -> Any:
    """A reservation engine's state at time 0 as the profiles read it: ``running`` as
    (cores, real end, expected end), then the waiting tasks' ``lengths`` and ``widths``."""
    need = [cores for cores, _, _ in running] + widths
    duration = [expected for _, _, expected in running] + lengths
    return SimpleNamespace(
        now=0.0, need=need, usable=bytearray([1]),
        free=[capacity - sum(cores for cores, _, _ in running)],
        running=sorted((expected, task) for task, (_, _, expected) in enumerate(running)),
        finish_s=[end for _, end, _ in running] + [_INF] * len(widths),
        expected_end_s=[expected for _, _, expected in running] + [_INF] * len(widths),
        capacity=[capacity], expected_duration=lambda task, machine: duration[task])


def _compressed(fast: PooledProfile, state: Any, held: dict[int, Reservation],
                waiting: list[int]) -> list[int]:
    """``waiting`` compressed by the pooled profile as if every slice had been given
    back: the tasks that moved (``held`` updated)."""
    moved: list[int] = []
    fast.compress(state, held, waiting, _INF, lambda task, found: moved.append(task))
    return moved


@st.composite
def _runs(draw: st.DrawFn) -> tuple[int, list[tuple[int, float, float]], list[float],
                                    list[int], list[tuple[str, int, float]]]:
    capacity = draw(st.integers(1, 8))
    running: list[tuple[int, float, float]] = []
    left = capacity
    for _ in range(draw(st.integers(0, 4))):
        if left == 0:
            break
        cores = draw(st.integers(1, left))
        left -= cores
        expected = float(draw(st.integers(1, 12)))
        running.append((cores, float(draw(st.integers(0, int(expected)))), expected))
    count = draw(st.integers(1, 8))
    lengths = [float(draw(st.integers(1, 10))) for _ in range(count)]
    widths = [draw(st.integers(1, capacity)) for _ in range(count)]
    steps = draw(st.lists(st.tuples(
        st.sampled_from(("reserve", "move", "release", "advance")),
        st.integers(0, count - 1), st.integers(0, 20).map(float)), max_size=25))
    return capacity, running, lengths, widths, steps


@settings(max_examples=300, deadline=None)
@given(_runs())
def test_the_pooled_profile_answers_as_the_previous_one(run: Any) -> None:
    capacity, running, lengths, widths, steps = run
    state = _state(capacity, running, lengths, widths)
    first = len(running)
    fast, reference = PooledProfile(state, {}), ReferenceProfile(state, {})
    held: dict[int, Reservation] = {}
    for action, index, moment in steps:
        task = first + index
        if action == "reserve" and task not in held:
            found = fast.earliest(state, task, None)
            assert found == reference.earliest(state, task)
            if found is not None:
                fast.hold_for(task, found, state.need[task])
                reference.reserve(found.start_s, found.end_s, state.need[task])
                held[task] = found
        elif action == "move" and task in held:
            before = held[task]
            expected = reference.move_earlier(state, task, before)
            assert _compressed(fast, state, held, [task]) == ([] if expected is None
                                                              else [task])
            if expected is not None:
                assert held[task] == expected and expected.start_s < before.start_s
        elif action == "release" and task in held:
            fast.release(held[task], state.need[task])
            reference.reserve(held[task].start_s, held[task].end_s, -state.need[task])
            del held[task]
        elif action == "advance" and moment > state.now and all(
                reservation.start_s >= moment for reservation in held.values()):
            state.now = moment  # as the engine does: nothing reserved is overdue
            fast.advance(moment)
            reference.advance(moment)
        _same_profile(fast, reference)


@settings(max_examples=200, deadline=None)
@given(_runs(), st.lists(st.integers(0, 7), min_size=1, max_size=8))
def test_the_compiled_compression_moves_as_the_previous_profile(
        run: Any, releases: list[int]) -> None:
    """Every task reserved, then per release the compiled compression of every reserved
    task against the previous profile's passes (each task in turn to its earliest fit
    before its own slot, until none moves), then the clock on to the earliest
    reservation."""
    capacity, running, lengths, widths, _ = run
    state = _state(capacity, running, lengths, widths)
    first = len(running)
    fast, reference = PooledProfile(state, {}), ReferenceProfile(state, {})
    held: dict[int, Reservation] = {}
    for task in range(first, first + len(widths)):
        found = reference.earliest(state, task)
        assert found is not None
        fast.hold_for(task, found, state.need[task])
        reference.reserve(found.start_s, found.end_s, state.need[task])
        held[task] = found
    for index in releases:
        task = first + index % len(widths)
        if task in held:
            fast.release(held[task], state.need[task])
            reference.reserve(held[task].start_s, held[task].end_s, -state.need[task])
            del held[task]
        expected = dict(held)
        moving = True
        while moving:
            moving = False
            for task in sorted(expected):
                found = reference.move_earlier(state, task, expected[task])
                if found is not None:
                    expected[task], moving = found, True
        _compressed(fast, state, held, sorted(held))
        assert held == expected
        _same_profile(fast, reference)
        soonest = min((found.start_s for found in held.values()), default=state.now)
        if soonest > state.now:
            state.now = soonest
            fast.advance(soonest)
            reference.advance(soonest)


@settings(max_examples=200, deadline=None)
@given(_runs(), st.integers(0, 12).map(float))
def test_early_finishes_given_back_in_place_are_a_profile_built_afresh(
        run: Any, now: float) -> None:
    capacity, running, lengths, widths, _ = run
    state = _state(capacity, running, lengths, widths)
    profile = PooledProfile(state, {})
    held: dict[int, Reservation] = {}
    for index in range(len(widths)):
        task = len(running) + index
        found = profile.earliest(state, task, None)
        assert found is not None
        if found.start_s >= now:  # what is still waiting at ``now``
            profile.hold(found, state.need[task])
            held[task] = found
    state.now = now
    ended = [task for task, (_, end, _) in enumerate(running) if end <= now]
    for task in ended:
        state.free[0] += state.need[task]
    state.running = [(expected, task) for expected, task in state.running
                     if task not in ended]
    latest = profile.sync(state)
    early = [state.expected_end_s[task] for task in ended if state.expected_end_s[task] > now]
    assert latest == max(early, default=-_INF)
    _same_profile(profile, ReferenceProfile(state, held))
