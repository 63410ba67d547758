"""Compression of the pooled profile's reservations after early finishes
(``PooledProfile``), visiting only the waiting tasks a freed stretch could let start
earlier, in the order the plain rule visits them, so the schedule is the plain rule's.

The plain rule (``notes/backfilling.md``): go through the waiting tasks in queue order,
take each one's reservation out and put it back at its earliest fit, and repeat the passes
until none moves. Why most tasks need no look:

* Before an early finish the reservations are at a fixpoint: no task fits earlier than its
  reservation with its own slot free (the last compression ended when a pass moved none;
  a task reserved since took its earliest fit, which only takes cores from the others; a
  start or the clock moving on frees nothing).
* A window starting before a task's reservation that fits now and did not fit then must
  cover a slice that gained cores since the task was last looked at (before its own slot:
  from its slot on, its own cores are always enough). Cores are gained only in *holes*: the
  early finishes' ``[now, expected end)`` and the slots that moved tasks left.
* Take the hole made last among those covering such slices of the window. Since it was made
  the window's slices only lost cores (to the moved tasks' new slots), so when it was made
  the window already fitted: the task's cores were free on every slice of the window before
  its reservation, and the window crossed the hole before the reservation's start. So the
  task could use that hole *as the profile was when the hole was made*: a stretch with its
  cores free takes in a slice of the hole before its start and either runs on to its start
  (its own slot then holds it) or is at least its length long (``_Hole.runs``).

Each hole is therefore asked, when it is made, which tasks it could let move, and only
those are looked at: the ones behind the task that left it
in this pass, the ones ahead of it in the next pass (as the plain passes would reach them),
in queue order. A task waiting to be looked at is not asked again; when it is, it searches
only the starts the holes made since it was asked allow (after a hole's start less its
length, before a hole's end). The tasks are found through a tree per width
(``_Positions``, ``_Group``) that keeps the shortest length and the earliest and latest
reservation start under each node, leaves in order of start: a hole looks only at the
widths its most free cores can hold, each through that width's stretches, and passes over
whole a node none of whose tasks those stretches admit (too long, starting before it). The
passes end when no task is left to look at: the plain rule's last pass would move none.
Short queues (under ``INDEX_FROM``) are cheaper to go through with the profile's own pass
(``pooled_profile.compress``), which looks at every task but rules most out at once.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable

from dcx.scheduler.planners import pooled_profile
from dcx.scheduler.planners.pooled_profile import PooledProfile
from dcx.scheduler.state import Reservation, ReservingState

_INF = float("inf")
INDEX_FROM = 128
"""Waiting tasks from which compression looks through holes and the tree; below it the
profile's own pass over the queue (``pooled_profile.compress``) costs less than building
the tree."""
_NUMPY_FROM = 64
"""Tree leaves from which ``_Positions`` builds its trees with NumPy."""


class _Group:
    """The waiting tasks of one width in a binary tree whose node keeps, of the tasks under
    it, the shortest length and the earliest and latest reservation starts; the leaves in
    order of start, so that a node's bounds are tight (a task that moves keeps its leaf).
    The tree is made when a hole first looks at the width (none of its tasks has moved or
    been nominated before that)."""

    def __init__(self, positions: list[int], lengths: list[float], starts: list[float],
                 slot: int) -> None:
        self.slot = slot
        """Its place in the widths in order."""
        self.positions = positions
        """The position at each leaf, once the tree is made."""
        self._lengths, self._starts = lengths, starts
        self.top = max(starts[position] for position in positions)
        """The latest start, until the tree is made."""
        self.size = 0
        self.leaf: dict[int, int] = {}
        self.shortest: list[float] = []
        self.earliest: list[float] = []
        self.latest: list[float] = []

    def made(self) -> _Group:
        """The group with its tree made."""
        if self.size:
            return self
        positions, lengths, starts = self.positions, self._lengths, self._starts
        count = len(positions)
        size = 1
        while size < count:
            size *= 2
        self.size = size
        ordered = self.positions = sorted(positions, key=starts.__getitem__)
        self.leaf = {position: leaf for leaf, position in enumerate(ordered)}
        low, high = [_INF] * (size - count), [-_INF] * (size - count)
        self.shortest = _tree([lengths[p] for p in ordered] + low, size, min)
        start_of = [starts[p] for p in ordered]
        self.earliest = _tree(start_of + low, size, min)
        self.latest = _tree(start_of + high, size, max)
        return self

    def set(self, leaf: int, length: float, earliest_start: float,
            latest_start: float) -> None:
        shortest, earliest, latest = self.shortest, self.earliest, self.latest
        node = self.size + leaf
        shortest[node], earliest[node], latest[node] = length, earliest_start, latest_start
        node //= 2
        while node:
            left, right = 2 * node, 2 * node + 1
            # comparisons rather than min() and max(): the walk up runs for every look
            low, high = shortest[left], shortest[right]
            short = low if low <= high else high
            low, high = earliest[left], earliest[right]
            first = low if low <= high else high
            low, high = latest[left], latest[right]
            last = low if low >= high else high
            if short == shortest[node] and first == earliest[node] and last == latest[node]:
                return  # the nodes above keep their bounds too
            shortest[node], earliest[node], latest[node] = short, first, last
            node //= 2

    def find(self, runs: list[tuple[float, float, float]], after: float,
             found: list[int]) -> None:
        """Add to ``found`` the positions of the tasks reserved after ``after`` that one of
        ``runs`` (their width's, ``_Hole.runs``) admits: it takes in a slice of the hole
        before the task's start and either reaches that start or is the task's length
        long. A node is passed over when its tasks all start by ``after`` or no run admits
        its bounds (the latest start, the earliest start, the shortest length)."""
        shortest, earliest, latest = self.shortest, self.earliest, self.latest
        size, ordered = self.size, self.positions
        stack = [1]
        pop, push = stack.pop, stack.append
        if len(runs) == 1:  # the usual case, the same test without the loop
            (entered, begin, end), = runs
            stretch = end - begin
            while stack:
                node = pop()
                if entered >= latest[node] or (
                        end < earliest[node] and stretch < shortest[node]):
                    continue
                if node >= size:
                    found.append(ordered[node - size])
                    continue
                push(2 * node + 1)
                push(2 * node)
            return
            # only nodes the run admits are stacked: a child is tested before it is
            while stack:
                node = pop()
                if node >= size:
                    found.append(ordered[node - size])
                    continue
                child = 2 * node + 1
                if entered < latest[child] and (
                        end >= earliest[child] or stretch >= shortest[child]):
                    push(child)
                child -= 1
                if entered < latest[child] and (
                        end >= earliest[child] or stretch >= shortest[child]):
                    push(child)
            return
        while stack:
            node = pop()
            last = latest[node]
            if last <= after:
                continue
            first, short = earliest[node], shortest[node]
            for entered, begin, end in runs:
                if entered < last and (end >= first or end - begin >= short):
                    break
            else:
                continue
            if node >= size:
                found.append(ordered[node - size])
                continue
            push(2 * node + 1)
            push(2 * node)


class _Positions:
    """The waiting tasks' queue positions, a tree (``_Group``) per width, so that a hole
    looks only at the widths its most free cores can hold, each through its own
    stretches."""

    def __init__(self, widths: list[int], lengths: list[float], starts: list[float]) -> None:
        by_width: dict[int, list[int]] = {}
        for position, width in enumerate(widths):
            by_width.setdefault(width, []).append(position)
        self.widths = sorted(by_width)
        self.groups = {width: _Group(by_width[width], lengths, starts, slot)
                       for slot, width in enumerate(self.widths)}
        self.group_of = [self.groups[width] for width in widths]
        self.tops = [self.groups[width].top for width in self.widths]
        """Per width (in order), the latest start of a task not waiting to be looked at."""

    def latest(self) -> float:
        """The latest reservation start of a task not waiting to be looked at."""
        return max(self.tops)

    def hide(self, position: int) -> None:
        """Leave the task at ``position`` out of ``find`` (it waits to be looked at; a
        hole found it, so its group's tree is made)."""
        self._set(position, _INF, _INF, -_INF)

    def show(self, position: int, length: float, start: float) -> None:
        """Put the task at ``position`` back in ``find``, reserved from ``start``."""
        self._set(position, length, start, start)

    def _set(self, position: int, length: float, earliest: float, latest: float) -> None:
        group = self.group_of[position]
        group.set(group.leaf[position], length, earliest, latest)
        self.tops[group.slot] = group.latest[1]

    def find(self, hole: _Hole) -> list[int]:
        """The positions of the tasks ``hole`` could let move (``_Group.find``): none wider
        than the hole's most free cores, none that starts by the hole's start."""
        widest, after, groups = hole.most, hole.begin, self.groups
        widths: list[int] = []
        for width, top in zip(self.widths, self.tops, strict=True):
            if width > widest:
                break
            if top > after:
                widths.append(width)
        found: list[int] = []
        if not widths:
            return found
        for width, runs in zip(widths, hole.runs(widths), strict=True):
            if not runs:
                continue
            group = groups[width].made()
            if len(runs) == 1:
                (entered, begin, end), = runs
                if entered >= group.latest[1] or (
                        end < group.earliest[1] and end - begin < group.shortest[1]):
                    continue  # the root's bounds admit none of its tasks: no walk
            group.find(runs, after, found)
        return found


def _tree(leaves: list[float], size: int, pick: Callable[[float, float], float],
          ) -> list[float]:
    """A binary tree over ``leaves`` (``size`` of them) holding ``pick`` of its children
    at each node: node 1 is the root, node ``size + i`` is leaf ``i``."""
    if size >= _NUMPY_FROM:
        import numpy as np

        array = np.empty(2 * size)
        array[size:] = leaves
        combine = np.minimum if pick is min else np.maximum
        level = size
        while level > 1:
            half = level // 2
            combine(array[level:2 * level:2], array[level + 1:2 * level:2],
                    out=array[half:level])
            level = half
        values: list[float] = array.tolist()
        return values
    tree = [0.0] * size + leaves
    for node in range(size - 1, 0, -1):
        tree[node] = pick(tree[2 * node], tree[2 * node + 1])
    return tree


class _Hole:
    """A stretch ``[begin, end)`` that just gained free cores, and what the profile then
    was around it."""

    def __init__(self, profile: PooledProfile, begin: float, end: float,
                 positions: _Positions, longest: float) -> None:
        self.profile, self.begin, self.end = profile, begin, end
        self.positions = positions
        self.longest = longest
        """The longest waiting task: a stretch that long is long enough for every one."""
        times, free = profile.times, profile.free
        self.first = max(bisect.bisect_right(times, begin) - 1, 0)
        self.stop = bisect.bisect_left(times, end)
        self.most = max(free[self.first:self.stop], default=0)
        """The most cores free on a slice of the hole."""

    def runs(self, widths: list[int]) -> list[list[tuple[float, float, float]]]:
        """Per width of ``widths`` (in order, none above ``most``), each stretch with that
        many cores free on every slice that takes in a slice of the hole with them free, as
        ``(the first instant of the hole in it, its start, its end)``. Its end is looked for
        on only until the latest reservation start of a task not waiting to be looked at (a
        stretch reaching it reaches every such task's), and a stretch the hole enters only
        from then on is left out (it lets none of them move); its start is looked for back
        only until the stretch is ``longest`` long (no task needs more).

        A wider width's stretches lie inside a narrower one's, so the walks on past the
        hole's last slice and back before its first are made once for all widths: the
        widths still walking are a range of them, left by the narrowest as their stretches
        grow long enough, by the widest as the free cores drop."""
        times, free = self.profile.times, self.profile.free
        slices = len(times)
        horizon = self.positions.latest()
        first, hole_begin = self.first, self.begin
        stop = min(self.stop, bisect.bisect_left(times, horizon, first))
        ends_past = self._ends_past(widths, stop, horizon)
        # per width, its stretches in the hole as (first slice, end slice)
        least = min(free[first:stop])
        spans: list[list[tuple[int, int]]] = []
        for slot, cores in enumerate(widths):
            if cores <= least:  # the usual case: one stretch over the whole hole
                spans.append([(first, ends_past[slot])])
                continue
            found: list[tuple[int, int]] = []
            index = first
            while index < stop:
                if free[index] < cores:
                    index += 1
                    continue
                end = index + 1
                while end < stop and free[end] >= cores:
                    end += 1
                found.append((index, ends_past[slot] if end == stop else end))
                index = end
            spans.append(found)
        # a stretch starting after the hole's first slice starts after a slice without
        # the cores: only those from the first slice are walked back
        untils = [times[found[0][1]] if found[0][1] < slices else _INF
                  for found in spans if found and found[0][0] == first]
        begins = self._begins(widths[:len(untils)], untils)
        runs = []
        for slot, found in enumerate(spans):
            width_runs = []
            for index, end in found:
                begin = begins[slot] if index == first else index
                width_runs.append((max(times[index], hole_begin), times[begin],
                                   times[end] if end < slices else _INF))
            runs.append(width_runs)
        return runs

    def _ends_past(self, widths: list[int], stop: int, horizon: float) -> list[int]:
        """For the widths (a prefix of ``widths``) free on the hole's last slice before
        ``stop``, the first slice from ``stop`` on without them or from ``horizon`` on."""
        times, free = self.profile.times, self.profile.free
        slices = len(times)
        reaching = free[stop - 1]
        ends = [stop] * len(widths)
        walking = bisect.bisect_right(widths, reaching) - 1
        later = stop
        while walking >= 0:
            if later == slices or times[later] >= horizon:
                ends[:walking + 1] = [later] * (walking + 1)
                break
            count = free[later]
            while walking >= 0 and widths[walking] > count:
                ends[walking] = later
                walking -= 1
            later += 1
        return ends

    def _begins(self, widths: list[int], untils: list[float]) -> list[int]:
        """For stretches from the hole's first slice of ``widths`` (in order) ending at
        ``untils``, the slice each starts at, looked for back only until it is ``longest``
        long; narrower widths' stretches end no sooner, so they are long enough first."""
        times, free, longest = self.profile.times, self.profile.free, self.longest
        begin = self.first
        begins = [begin] * len(widths)
        narrowest, widest = 0, len(widths) - 1
        while narrowest <= widest:
            while narrowest <= widest and untils[narrowest] - times[begin] >= longest:
                begins[narrowest] = begin  # long enough
                narrowest += 1
            if begin == 0:
                begins[narrowest:widest + 1] = [0] * (widest + 1 - narrowest)
                break
            count = free[begin - 1]
            while narrowest <= widest and widths[widest] > count:
                begins[widest] = begin  # the slice before lacks the cores
                widest -= 1
            begin -= 1
        return begins


class _Hull:
    """The holes made so far, for the hull ``[low, high)`` of those made since any one:
    ``(count, begin)`` and ``(count, end)`` kept only while no later hole begins earlier
    (ends later), so the first entry past a count is the earliest begin (latest end) of
    every hole made since."""

    def __init__(self) -> None:
        self.count = 0
        self._lowest: list[tuple[int, float]] = []
        self._highest: list[tuple[int, float]] = []

    def add(self, begin: float, end: float) -> int:
        """The hole ``[begin, end)`` made: its number."""
        made = self.count
        self.count += 1
        lowest, highest = self._lowest, self._highest
        while lowest and lowest[-1][1] >= begin:
            lowest.pop()
        lowest.append((made, begin))
        while highest and highest[-1][1] <= end:
            highest.pop()
        highest.append((made, end))
        return made

    def since(self, made: int) -> tuple[float, float]:
        """The earliest begin and the latest end of the holes from number ``made`` on."""
        lowest, highest = self._lowest, self._highest
        return (lowest[bisect.bisect_left(lowest, (made, -_INF))][1],
                highest[bisect.bisect_left(highest, (made, -_INF))][1])


def compress(profile: PooledProfile, state: ReservingState,
             reservations: dict[int, Reservation], waiting: list[int], freed_until: float,
             moved: Callable[[int, Reservation], None]) -> None:
    """Move the ``waiting`` tasks (queue order) to their earliest fits after early finishes
    gave back cores from now until ``freed_until``, as the plain compression does (module
    docstring). ``moved(task, reservation)`` is told of each move after ``reservations``
    has it."""
    if freed_until <= state.now or not waiting:
        return
    if len(waiting) < INDEX_FROM:
        pooled_profile.compress(profile, state, reservations, waiting, freed_until, moved)
        return
    need, duration = state.need, state.expected_duration
    lengths = [duration(task, 0) for task in waiting]
    widths = [need[task] for task in waiting]
    positions = _Positions(widths, lengths, [reservations[task].start_s for task in waiting])
    holes = _Hull()
    # the positions to look at, each with the first hole that let it since it was last
    # looked at: in this pass (by position, behind the one looked at) and in the next
    waiting_since: dict[int, int] = {}
    this_pass: list[int] = []
    next_pass: list[int] = []

    def nominate(hole: _Hole, left_by: int) -> None:
        """The tasks ``hole`` could let move (those not already waiting to be looked at):
        behind ``left_by`` in this pass, ahead of it in the next one."""
        made = holes.add(hole.begin, hole.end)
        for position in positions.find(hole):
            if position == left_by:
                continue
            positions.hide(position)
            waiting_since[position] = made
            if position > left_by:
                heapq.heappush(this_pass, position)
            else:
                next_pass.append(position)

    longest = max(lengths)
    nominate(_Hole(profile, state.now, freed_until, positions, longest), -1)
    while this_pass or next_pass:
        if not this_pass:
            this_pass, next_pass = sorted(next_pass), []  # a heap, in order
        position = heapq.heappop(this_pass)
        # a window it could move to crosses one of the holes made since it was nominated
        low, high = holes.since(waiting_since.pop(position))
        task = waiting[position]
        held = reservations[task]
        found = profile.move_earlier(state, task, held, None,
                                     after=low - lengths[position], before=high)
        if found is None:
            positions.show(position, lengths[position], held.start_s)
            continue
        reservations[task] = found
        moved(task, found)
        positions.show(position, lengths[position], found.start_s)
        # where the new slot overlaps the old one, no cores were given back
        nominate(_Hole(profile, max(held.start_s, found.end_s), held.end_s,
                       positions, longest), position)
