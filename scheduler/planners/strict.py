"""Strict queue order (FCFS, SJF, LJF without backfilling): tasks start from the front
of the queue while they fit, and nothing behind the first that does not fit starts. Also
what the backfilling planners share of it: starting from the front, R4 + R5 on a view of
free cores (``place``), and taking started tasks out of the sorted queue."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from dcx.scheduler.packing import spread
from dcx.scheduler.policies import MachineSelection
from dcx.scheduler.state import ReservingState

_INF = float("inf")

Key = tuple[float, ...]


class StrictQueue:
    """Nothing behind the first task that does not fit starts."""

    wakes_up = False
    """Nothing waits for a time of its own (``next_wakeup`` is always ``inf``)."""

    def __init__(self, select: MachineSelection) -> None:
        self.select = select

    def plan(self, state: ReservingState, replan: bool, freed: bool, arrived: bool) -> None:
        start_from_front(state, self.select)

    def on_machines_changed(self) -> None:
        """Nothing is planned ahead."""

    def next_wakeup(self, state: ReservingState) -> float:
        return _INF


def start_from_front(state: ReservingState, select: MachineSelection) -> None:
    queue = state.queue
    if state.one_pool:
        # one scheduling machine: the front task fits when its cores are free there
        need, nodes, free, usable = state.need, state.nodes, state.free, state.usable
        while queue and usable[0]:
            task = queue[0][1]
            if free[0] < need[task] or nodes[task] > 1:
                return
            state.start_on_one(task, state.expected_duration(task, 0))
            del queue[0]
        return
    while queue:
        task = queue[0][1]
        found = place(state, task, select)
        if found is None:
            return
        state.start(task, *found)
        del queue[0]


def place(state: ReservingState, task: int, select: MachineSelection,
          view: list[int] | None = None, extra_view: Sequence[Sequence[int]] | None = None,
          ) -> tuple[list[int], list[int] | None] | None:
    """R4 and R5 on ``view`` (the free cores now by default) and ``extra_view`` (the free
    units of every other resource): the machines the task gets, with the core units on
    each when it is a cores-anywhere task spread over several (``packing.py``); ``None``
    when it does not fit."""
    free = state.free if view is None else view
    candidates = state.fitting(task, free, extra_view)
    nodes = state.nodes[task]
    if len(candidates) >= nodes:
        return select(state.need[task], nodes, candidates, free), None
    if not state.tasks.is_anywhere(task) or len(state.capacity) == 1:
        return None
    demand = state.demand[task] if state.demand else ()
    extra = state.extra_free if extra_view is None else extra_view
    found = spread(state.need[task], demand, state.open_for(task), free, extra)
    return None if found is None else (found[0], found[1])


def take_from(view: list[int], machines: list[int] | tuple[int, ...],
              shares: Sequence[int] | None, need: int) -> None:
    """``view`` less what a placement takes (``need`` on each machine, or its shares)."""
    if shares is None:
        for machine in machines:
            view[machine] -= need
    else:
        for machine, cores in zip(machines, shares, strict=True):
            view[machine] -= cores


def negated(shares: tuple[int, ...] | None) -> list[int] | None:
    """Shares given back rather than taken (``take_from`` with a negative need)."""
    return None if shares is None else [-cores for cores in shares]


def dequeue(queue: list[tuple[Key, int]], entries: list[tuple[Key, int]]) -> None:
    """Take ``entries`` (started tasks) out of the sorted queue."""
    for entry in entries:
        del queue[bisect.bisect_left(queue, entry)]
