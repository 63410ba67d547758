"""Stage policies of the reference architecture, registered by name.

* T2 (task ordering): a policy is a function that builds a ``ReadyQueue`` over the eligible
  tasks; the engine takes tasks from it in policy order. ``FIFO``, ``SRTF``, ``RANDOM``.
* R4 (machine filtering): machines with enough free cores (``free_capacity``) and, when the
  problem schedules resources beyond cores, enough free units of each of them
  (``free_resources``).
* R5 (machine selection): a function from the filtered machines to the chosen ones.
  ``FIRSTFIT``, ``BESTFIT``, ``WORSTFIT``. BestFit and WorstFit rank the filtered machines
  by free cores only, as the paper defines them, even when memory, GPUs or named resources
  are scheduled too: those decide which machines are candidates, not their rank.

Adding a policy is one function plus one line in ``TASK_ORDERS`` or ``MACHINE_SELECTIONS``.
A scheduler name joins a T2 and an R5 policy: ``SRTF-BESTFIT``.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from dcx.scheduler.problem import TaskTable


class ReadyQueue(Protocol):
    """The eligible tasks, handed out in a T2 policy's order."""

    def add(self, task: int) -> None: ...

    def take(self) -> int:
        """Remove and return the next task in policy order (queue must not be empty)."""
        ...

    def give_back(self, tasks: Sequence[int]) -> None:
        """Return tasks that were taken this cycle but could not be placed."""
        ...

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class QueueContext:
    """What a T2 policy may look at.

    ``queue_order[task]`` is the task's position in the queue (arrival order, renewed when a
    task is requeued after a machine failure); the engine sets it before ``add``.
    """

    tasks: TaskTable
    queue_order: list[int]
    rng: random.Random


class KeyedQueue:
    """A heap on a static per-task key: the order a stable sort of the queue would give."""

    def __init__(self, key: Callable[[int], tuple[float, ...]]) -> None:
        self._key = key
        self._heap: list[tuple[tuple[float, ...], int]] = []

    def add(self, task: int) -> None:
        heapq.heappush(self._heap, (self._key(task), task))

    def take(self) -> int:
        return heapq.heappop(self._heap)[1]

    def give_back(self, tasks: Sequence[int]) -> None:
        for task in tasks:
            self.add(task)

    def __len__(self) -> int:
        return len(self._heap)


class RandomQueue:
    """Hands out eligible tasks in a fresh uniformly random order every cycle.

    Drawing without replacement only as many tasks as the cycle takes gives the same
    distribution as shuffling the whole queue (what sc18 did) at the cost of the draws only.
    """

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._pool: list[int] = []

    def add(self, task: int) -> None:
        self._pool.append(task)

    def take(self) -> int:
        pool = self._pool
        index = self._rng.randrange(len(pool))
        pool[index], pool[-1] = pool[-1], pool[index]
        return pool.pop()

    def give_back(self, tasks: Sequence[int]) -> None:
        self._pool.extend(tasks)

    def __len__(self) -> int:
        return len(self._pool)


# --------------------------------------------------------------------------- T2 policies


def fifo(context: QueueContext) -> ReadyQueue:
    """Queue order: arrival, then release time (the submit time, or an AR lease's start
    time), then creation order."""
    order = context.queue_order
    return KeyedQueue(lambda task: (order[task],))


def srtf(context: QueueContext) -> ReadyQueue:
    """Least total work first (runtime x cores, known exactly: sc18's oracle); ties FIFO."""
    tasks, order = context.tasks, context.queue_order
    return KeyedQueue(
        lambda task: (tasks.runtime_s[task] * tasks.need[task] * tasks.nodes[task], order[task])
    )


def random_order(context: QueueContext) -> ReadyQueue:
    """A new random order every cycle, from the run's seeded generator."""
    return RandomQueue(context.rng)


TaskOrder = Callable[[QueueContext], ReadyQueue]

TASK_ORDERS: dict[str, TaskOrder] = {
    "SRTF": srtf,
    "FIFO": fifo,
    "RANDOM": random_order,
}


# --------------------------------------------------------------------------- R4 filter


def free_capacity(need: int, machines: Sequence[int], free: Sequence[int]) -> list[int]:
    """R4: machines (in topology order) whose free cores cover ``need``."""
    return [machine for machine in machines if free[machine] >= need]


def free_resources(need: int, demand: Sequence[tuple[int, int]], machines: Sequence[int],
                   free: Sequence[int], extra_free: Sequence[Sequence[int]]) -> list[int]:
    """R4 with resources beyond cores: machines (in topology order) whose free cores cover
    ``need`` and whose free units cover ``demand`` (``(dimension index, units)`` pairs, one
    column of ``extra_free`` per dimension)."""
    fitting = free_capacity(need, machines, free)
    for dimension, units in demand:
        column = extra_free[dimension]
        fitting = [machine for machine in fitting if column[machine] >= units]
    return fitting


# --------------------------------------------------------------------------- R5 policies

MachineSelection = Callable[[int, int, list[int], Sequence[int]], list[int]]
"""``(need per node, nodes, filtered machines, free cores) -> chosen machines``; the filtered
list has at least ``nodes`` machines, in topology order."""


def first_fit(need: int, count: int, candidates: list[int], free: Sequence[int]) -> list[int]:
    """The first machines in topology order."""
    return candidates[:count]


def best_fit(need: int, count: int, candidates: list[int], free: Sequence[int]) -> list[int]:
    """Fewest free cores that still fit; ties keep topology order."""
    if count == 1:
        return [min(candidates, key=free.__getitem__)]
    return sorted(candidates, key=free.__getitem__)[:count]


def worst_fit(need: int, count: int, candidates: list[int], free: Sequence[int]) -> list[int]:
    """Most free cores; ties keep topology order."""
    if count == 1:
        return [max(candidates, key=free.__getitem__)]
    return sorted(candidates, key=lambda machine: -free[machine])[:count]


MACHINE_SELECTIONS: dict[str, MachineSelection] = {
    "BESTFIT": best_fit,
    "FIRSTFIT": first_fit,
    "WORSTFIT": worst_fit,
}


# --------------------------------------------------------------------------- names


@dataclass(frozen=True)
class Policy:
    """A scheduler configuration: one T2 and one R5 policy."""

    task_order: str
    machine_selection: str

    @property
    def name(self) -> str:
        return f"{self.task_order}-{self.machine_selection}"

    @property
    def order(self) -> TaskOrder:
        return TASK_ORDERS[self.task_order]

    @property
    def select(self) -> MachineSelection:
        return MACHINE_SELECTIONS[self.machine_selection]

    @property
    def is_random(self) -> bool:
        return self.task_order == "RANDOM"


def parse_policy(name: str) -> Policy:
    """``SRTF-BESTFIT`` (case-insensitive) → ``Policy``; ``ValueError`` naming the known
    policies when a part is unknown."""
    text = name.strip().upper()
    for cut in range(len(text)):
        if text[cut] == "-" and text[:cut] in TASK_ORDERS and text[cut + 1 :] in MACHINE_SELECTIONS:
            return Policy(text[:cut], text[cut + 1 :])
    raise ValueError(
        f"unknown policy {name!r}: use T2-R5 with T2 in {', '.join(TASK_ORDERS)} "
        f"and R5 in {', '.join(MACHINE_SELECTIONS)}"
    )


def all_policies() -> tuple[Policy, ...]:
    """Every registered combination, T2 major (the paper's nine for the built-in ones)."""
    return tuple(
        Policy(order, selection) for order in TASK_ORDERS for selection in MACHINE_SELECTIONS
    )
