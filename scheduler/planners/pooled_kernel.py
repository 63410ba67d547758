"""The plain compression of the pooled profile (``PooledProfile.compress``), compiled
with Numba: after early finishes gave back cores, every waiting task, in queue order, is
taken out and put back at its earliest fit with its own slot free, and the passes are
repeated until none moves (``notes/backfilling.md``). Compression is where conservative
backfilling spends its time on a loaded trace (hundreds of thousands of moves), and each
move is a few slices' worth of arithmetic.

The profile travels as arrays with room to grow (``times``, ``free``, and ``anchored``: how
many running tasks end and reservations begin or end at each slice start, as
``PooledProfile._anchors`` counts them); the first ``count`` entries are the slices. A move
splits and merges slices as ``PooledProfile`` would, so the profile handed back is the one
the moves leave, slice for slice.

Most tasks need no search. Before the early finishes no waiting task could start earlier
(each was placed at its earliest fit, and a start or the clock moving on frees nothing), so
a window that fits now must overlap a stretch where cores were given back since the task
was last looked at: the early finishes' ``[now, freed_until)`` in the first pass, then the
slots that tasks moved in this pass ahead of it and in the last pass behind it. With
``[low, high)`` the hull of those stretches, a task of width ``w`` and length ``R`` reserved
at ``s`` can only move to a start ``t`` with ``low - R < t < min(s, high)``. Such a window
also either covers the slice just before ``min(s, high)`` (which then needs ``w`` cores
free: before its own slot, or before the hull's end) or is short enough to end by that
slice's start, and needs ``w`` cores free on some slice before that; and one starting before
the hull's end that reaches past it covers every slice from there to
``min(s, now + R)``, which all need ``w`` cores free. A task failing one of these is ruled
out; the others are searched only over those starts. The bounds skip only searches that
would find nothing, so the moves are the plain rule's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np

_INF = np.inf
_Function = TypeVar("_Function", bound=Callable[..., Any])


def _compiled(function: _Function) -> _Function:
    """``function`` compiled by Numba, its machine code cached on disk where Numba finds a
    place it can write (beside this module, else the user's cache folder); where it finds
    none (a read-only installation and home), compiled afresh in each process instead of
    failing."""
    try:
        compiled = numba.njit(cache=True)(function)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        compiled = numba.njit(function)
    return cast(_Function, compiled)


@_compiled
def _bisect_left(values: Any, value: float, low: int, high: int) -> int:
    while low < high:
        middle = (low + high) // 2
        if values[middle] < value:
            low = middle + 1
        else:
            high = middle
    return low


@_compiled
def _bisect_right(values: Any, value: float, low: int, high: int) -> int:
    while low < high:
        middle = (low + high) // 2
        if value < values[middle]:
            high = middle
        else:
            low = middle + 1
    return low


@_compiled
def _split(times: Any, free: Any, anchored: Any, count: int, moment: float,
           ) -> tuple[int, int]:
    """The index of the slice starting at ``moment`` (made if needed, with the count of the
    slice it cuts), and the new slice count; ``moment`` is not before the first slice."""
    index = _bisect_left(times, moment, 0, count)
    if index < count and times[index] == moment:
        return index, count
    for later in range(count, index, -1):
        times[later] = times[later - 1]
        free[later] = free[later - 1]
        anchored[later] = anchored[later - 1]
    times[index] = moment
    free[index] = free[index - 1]
    anchored[index] = 0
    return index, count + 1


@_compiled
def _reserve(times: Any, free: Any, anchored: Any, count: int, begin: float, end: float,
             cores: int) -> int:
    """``cores`` fewer free over ``[begin, end)`` (more when negative): the slice count."""
    first, count = _split(times, free, anchored, count, max(begin, times[0]))
    last, count = _split(times, free, anchored, count, end)
    for index in range(first, last):
        free[index] -= cores
    return count


@_compiled
def _anchor(times: Any, anchored: Any, count: int, moment: float, change: int) -> None:
    index = _bisect_left(times, moment, 0, count)
    anchored[index] += change


@_compiled
def _merge(times: Any, free: Any, anchored: Any, count: int, moment: float) -> int:
    """The slice starting at ``moment`` joined to the one before when nothing begins or
    ends there and their counts are equal: the slice count."""
    index = _bisect_left(times, moment, 0, count)
    if (0 < index < count and times[index] == moment and anchored[index] == 0
            and free[index] == free[index - 1]):
        for later in range(index, count - 1):
            times[later] = times[later + 1]
            free[later] = free[later + 1]
            anchored[later] = anchored[later + 1]
        return count - 1
    return count


@_compiled
def _moved(times: Any, free: Any, anchored: Any, count: int, old_begin: float,
           old_end: float, new_begin: float, new_end: float, cores: int) -> int:
    """The profile with the slot ``[old_begin, old_end)`` given back and the earlier
    ``[new_begin, new_end)`` taken, touching only the slices whose count changes (where
    the two overlap the task holds its cores before and after): the slice count."""
    if new_end <= old_begin:  # apart
        count = _reserve(times, free, anchored, count, new_begin, new_end, cores)
        count = _reserve(times, free, anchored, count, old_begin, old_end, -cores)
    else:
        count = _reserve(times, free, anchored, count, new_begin, old_begin, cores)
        if new_end < old_end:
            count = _reserve(times, free, anchored, count, new_end, old_end, -cores)
        elif new_end > old_end:  # float sums: the same length may end a hair later
            count = _reserve(times, free, anchored, count, old_end, new_end, cores)
    _anchor(times, anchored, count, new_begin, 1)
    _anchor(times, anchored, count, new_end, 1)
    _anchor(times, anchored, count, old_begin, -1)
    _anchor(times, anchored, count, old_end, -1)
    count = _merge(times, free, anchored, count, old_end)
    return _merge(times, free, anchored, count, old_begin)


@_compiled
def _earliest_before(times: Any, free: Any, count: int, cores: int, length: float,
                     own_begin: float, after: float, before: float) -> int:
    """The first slice from which ``cores`` are free for ``length``, starting before
    ``own_begin`` and ``before`` and not before the slice holding ``after``, the slices
    from ``own_begin`` on counted free (the task's own slot); ``-1``: none. A window that
    fails at slice ``k`` fails for every start up to ``k`` too, so the search goes on
    after it."""
    limit = min(own_begin, before)
    # one slice before the first start past ``after``: float sums may round either way
    index = max(_bisect_right(times, after, 0, count) - 1, 0)
    own = _bisect_left(times, own_begin, index, count)
    while index < count and times[index] < limit:
        if free[index] < cores:
            index += 1
            continue
        end = times[index] + length
        later = index + 1
        while later < own and times[later] < end and free[later] >= cores:
            later += 1
        if later in (own, count) or times[later] >= end:
            return index
        index = later + 1
    return -1


@_compiled
def _larger(values: Any, count: int) -> Any:
    """``values`` in an array twice as long and more, its first ``count`` entries kept
    (what follows them is room: its contents do not matter)."""
    return np.concatenate((values[:count], values, values, values[:8]))


@_compiled
def _with_room(times: Any, free: Any, anchored: Any, count: int,
               ) -> tuple[Any, Any, Any]:
    """The arrays, copied into larger ones when a move (up to four new slices) may not
    fit."""
    if count + 4 <= times.shape[0]:
        return times, free, anchored
    return _larger(times, count), _larger(free, count), _larger(anchored, count)


@_compiled
def _free_until(times: Any, free: Any, count: int, moment: float, cores: int) -> float:
    """From ``moment`` on, the start of the first slice with fewer than ``cores`` free
    (``inf``: none), the slice holding ``moment`` included."""
    for index in range(max(_bisect_right(times, moment, 0, count) - 1, 0), count):
        if free[index] < cores:
            return times[index]
    return _INF


@_compiled
def _running_maximum(free: Any, most: Any, valid: int, last: int) -> Any:
    """``most`` (the most cores free on the slices up to each, right before ``valid``)
    brought up to date until ``last``, larger if ``free`` grew."""
    if most.shape[0] < free.shape[0]:
        most = np.concatenate((most[:valid], free))  # room enough, its tail overwritten
    top = most[valid - 1] if valid else free[0]
    for index in range(valid, last + 1):
        top = max(top, free[index])
        most[index] = top
    return most


def work_sizes(waiting: int, slices: int) -> tuple[int, int]:
    """How many floats and integers ``compress`` needs for ``waiting`` tasks on a profile
    with room for ``slices``."""
    return 4 * waiting + 2, waiting + slices


@_compiled
def _before(times: Any, free: Any, count: int, most: Any, valid: int, moment: float,
            ) -> tuple[Any, int, int, float, int]:
    """Before ``moment``: the most cores free on a slice (``-1``: no slice), the last
    slice's start and free cores (``inf`` and ``-1``: none), with ``most`` and its
    ``valid`` brought far enough."""
    last = _bisect_left(times, moment, 0, count) - 1
    if last < 0:
        return most, valid, -1, _INF, -1
    if valid <= last:
        most = _running_maximum(free, most, valid, last)
        valid = last + 1
    return most, valid, most[last], times[last], free[last]


@_compiled
def _no_window_before(times: Any, free: Any, count: int, most: Any, valid: int,
                      start: float, cores: int, earliest_end: float,
                      ) -> tuple[bool, Any, int]:
    """Whether no window of ``cores`` ending no sooner than ``earliest_end`` can start
    before ``start``: reserved from the first slice, or the slice just before ``start``
    lacks the cores and the window either covers it or finds them free nowhere before
    (``most`` and its ``valid`` brought far enough)."""
    index = _bisect_left(times, start, 0, count) - 1
    if index < 0:
        return True, most, valid
    if free[index] >= cores:
        return False, most, valid
    if earliest_end > times[index]:
        return True, most, valid
    if valid <= index:
        most = _running_maximum(free, most, valid, index)
        valid = index + 1
    return most[index] < cores, most, valid


@_compiled
def _hulls_behind(behind_low: Any, behind_high: Any, left_at: Any, left_begin: Any,
                  left_end: Any, moves: int) -> None:
    """Per position, the hull of the slots the pass's ``moves`` left behind it."""
    behind_low[:] = _INF
    behind_high[:] = -_INF
    for move in range(moves):
        behind_low[left_at[move]] = left_begin[move]
        behind_high[left_at[move]] = left_end[move]
    for position in range(behind_low.shape[0] - 2, -1, -1):
        behind_low[position] = min(behind_low[position], behind_low[position + 1])
        behind_high[position] = max(behind_high[position], behind_high[position + 1])


@_compiled
def compress(times: Any, free: Any, anchored: Any, with_anchors: bool, count: int,
             now: float, freed_until: float, starts: Any, ends: Any, lengths: Any,
             widths: Any, moved: Any, work: Any, counts: Any, reach_of: Any,
             reach_generation: Any, generation: int) -> tuple[Any, Any, Any, int, int, int]:
    """The waiting tasks (queue order: their reservations ``starts``/``ends``, requested
    ``lengths`` and ``widths``) moved as the plain compression moves them after early
    finishes gave back cores from ``now`` until ``freed_until``; ``starts`` and ``ends``
    are updated in place, and ``moved`` marks the positions that moved. Returns the
    profile's arrays, its slice count, the last ``generation`` used and how many tasks
    moved. Most compressions move none, so ``anchored`` may be left unfilled
    (``with_anchors`` false): a task about to move then ends the call, nothing changed
    but the caches, with ``-1`` tasks moved, for the caller to call again with them.

    ``work`` (floats) and ``counts`` (integers) are room for the bookkeeping
    (``work_sizes``), given by the caller so that a call allocates nothing: handing freed
    memory back to the system and faulting it in again, call after call, would cost more
    than the compression. ``reach_of`` keeps the reach past the hull's end per width (in
    core units), right where ``reach_generation`` holds the generation it was worked out
    for; generations only grow from call to call, so neither is ever cleared."""
    waiting = starts.shape[0]
    moved[:] = False
    tasks_moved = 0
    # per position, the hull of the slots given back behind it in the last pass (the
    # first pass: the early finishes', for every task)
    behind_low = work[:waiting + 1]
    behind_high = work[waiting + 1:2 * waiting + 2]
    behind_low[:] = now
    behind_high[:] = freed_until
    # the slots this pass's moves left: position, start, end
    left_at = counts[:waiting]
    left_begin = work[2 * waiting + 2:3 * waiting + 2]
    left_end = work[3 * waiting + 2:4 * waiting + 2]
    # the running maximum of the free cores, right up to slice ``valid``
    most = counts[waiting:waiting + times.shape[0]]
    valid = 0
    # what rules out tasks reserved from ``hull_end`` on, the profile as it is
    hull_end = -_INF
    most_before_end, last_start, last_free = -1, _INF, -1
    while True:
        moves = 0
        low, high = _INF, -_INF  # the hull of the slots left so far in this pass
        for position in range(waiting):
            hull_high = max(behind_high[position + 1], high)
            if hull_high <= now:
                continue  # nothing given back behind it: it cannot gain
            start, end = starts[position], ends[position]
            cores, length = widths[position], lengths[position]
            if start < hull_high:
                ruled_out, most, valid = _no_window_before(times, free, count, most, valid,
                                                           start, cores, now + length)
                if ruled_out:
                    continue
            else:
                if hull_high != hull_end:
                    hull_end, generation = hull_high, generation + 1
                    most, valid, most_before_end, last_start, last_free = _before(
                        times, free, count, most, valid, hull_end)
                if cores > most_before_end:
                    continue  # no slice before the hull's end has its cores free
                if now + length > last_start:
                    if cores > last_free:
                        continue  # covers the slice just before the hull's end
                    if reach_generation[cores] != generation:
                        reach_generation[cores] = generation
                        reach_of[cores] = max(hull_end, _free_until(
                            times, free, count, hull_end, cores))
                    reach = reach_of[cores]
                    if start > reach and now + length > reach:
                        continue  # would cover a slice past the hull without its cores
            hull_low = min(behind_low[position + 1], low)
            if hull_low >= end:
                continue  # nothing given back before its end
            found = _earliest_before(times, free, count, cores, length, start,
                                     hull_low - length, hull_high)
            if found < 0:
                continue
            if not with_anchors:
                return times, free, anchored, count, generation, -1
            times, free, anchored = _with_room(times, free, anchored, count)
            begin = times[found]
            finish = begin + length
            count = _moved(times, free, anchored, count, start, end, begin, finish, cores)
            starts[position], ends[position] = begin, finish
            if not moved[position]:
                moved[position] = True
                tasks_moved += 1
            left_at[moves], left_begin[moves], left_end[moves] = position, start, end
            moves += 1
            low, high = min(low, start), max(high, end)
            valid, hull_end = 0, -_INF  # the profile changed: what was read off it is stale
        if moves == 0:
            return times, free, anchored, count, generation, tasks_moved
        _hulls_behind(behind_low, behind_high, left_at, left_begin, left_end, moves)
