"""Stage policies of the reference architecture, registered by name.

* T2 (task ordering): a policy is a function that builds a ``ReadyQueue`` over the eligible
  tasks; the engine takes tasks from it in policy order. ``FIFO``, ``SRTF``, ``RANDOM``.
* R4 (machine filtering): machines with enough free cores (``fitting.free_capacity``) and,
  when the problem schedules resources beyond cores, enough free units of each of them
  (``fitting.free_resources``).
* R5 (machine selection): a function from the filtered machines to the chosen ones.
  ``FIRSTFIT``, ``BESTFIT``, ``WORSTFIT``. BestFit and WorstFit rank the filtered machines
  by free cores only, as the paper defines them, even when memory, GPUs or named resources
  are scheduled too: those decide which machines are candidates, not their rank.

Adding a policy is one function plus one line in ``TASK_ORDERS`` or ``MACHINE_SELECTIONS``
(and its name in ``schemas/scheduler.schema.json``). A scheduler name joins a T2 and an R5
policy: ``SRTF-BESTFIT``. The J2/J3 job stages (``job_stages.py``) and the R2/R3 static
filters (``resource_stages.py``) are components of their own, named as ``+STAGE-POLICY``
suffixes (``FCFS-EASY+J3-SJF``).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from dcx.scheduler.problem import MachineRequirements, TaskTable

if TYPE_CHECKING:
    from dcx.scheduler.state import SchedulerState


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
    state: SchedulerState | None = None
    """The run's state (time, free capacity, running tasks, the queue): what a T2 policy
    that looks beyond static keys reads."""


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


def sjf(context: QueueContext) -> ReadyQueue:
    """Shortest requested time first (the workload's estimate, not the real runtime); ties
    in queue order."""
    tasks, order = context.tasks, context.queue_order
    return KeyedQueue(lambda task: (tasks.requested_s[task], order[task]))


def ljf(context: QueueContext) -> ReadyQueue:
    """Longest requested time first; ties in queue order."""
    tasks, order = context.tasks, context.queue_order
    return KeyedQueue(lambda task: (-tasks.requested_s[task], order[task]))


def random_order(context: QueueContext) -> ReadyQueue:
    """A new random order every cycle, from the run's seeded generator."""
    return RandomQueue(context.rng)


TaskOrder = Callable[[QueueContext], ReadyQueue]

TASK_ORDERS: dict[str, TaskOrder] = {
    "SRTF": srtf,
    "FIFO": fifo,
    "RANDOM": random_order,
    "FCFS": fifo,
    "SJF": sjf,
    "LJF": ljf,
}
PAPER_TASK_ORDERS = ("SRTF", "FIFO", "RANDOM")
"""The T2 policies of the SC18 experiments (FCFS is FIFO under its batch-scheduling name)."""

BACKFILLING = ("GREEDY", "STRICT", "EASY", "CONSERVATIVE")
"""What happens to the tasks behind one that does not fit:

* ``GREEDY`` (the SC18 stage scheduler): every eligible task that fits starts, in queue
  order; nothing is reserved, so a wide task can wait forever.
* ``STRICT``: nothing behind the first task that does not fit starts.
* ``EASY``: the first task that does not fit gets a reservation; later tasks start only if
  they do not delay it.
* ``CONSERVATIVE``: every waiting task holds a reservation; a task starts early only if it
  delays none.
"""


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


STAGE_DEFAULTS: dict[str, str] = {
    "J2": "ALL",
    "J3": "NONE",
    "R2": "ALL",
    "R3": "ALL",
}
"""The stages beyond T2, R5 and backfilling that a scheduler may declare, with the policy
of the SC18 scheduler (which leaves them open). A policy name carries the others as
``+STAGE-POLICY`` suffixes: ``FCFS-EASY+J3-SJF``."""


@dataclass(frozen=True)
class Policy:
    """A scheduler configuration: one T2 and one R5 policy, what happens behind a task
    that does not fit (``BACKFILLING``), and the J2/J3 job stages and R2/R3 static machine
    filters (``STAGE_DEFAULTS``)."""

    task_order: str
    machine_selection: str
    backfilling: str = "GREEDY"
    job_eligibility: str = "ALL"
    job_order: str = "NONE"
    authorization: str = "ALL"
    static_filter: str = "ALL"
    machine_requirements: MachineRequirements | None = None
    """The operator's requirements, the parameters of the R3 policy ``REQUIRE``."""

    @property
    def stages(self) -> dict[str, str]:
        """The policies of the stages in ``STAGE_DEFAULTS``."""
        return {"J2": self.job_eligibility, "J3": self.job_order, "R2": self.authorization,
                "R3": self.static_filter}

    @property
    def name(self) -> str:
        suffix = "".join(f"+{stage}-{value}" for stage, value in self.stages.items()
                         if value != STAGE_DEFAULTS[stage])
        if self.machine_requirements is not None:
            suffix += f"[{self.machine_requirements.label()}]"
        return self._base_name + suffix

    @property
    def _base_name(self) -> str:
        if self.backfilling == "GREEDY":
            return f"{self.task_order}-{self.machine_selection}"
        if self.backfilling == "STRICT" and self.machine_selection == "FIRSTFIT":
            return self.task_order
        if self.machine_selection == "FIRSTFIT":
            return f"{self.task_order}-{self.backfilling}"
        return f"{self.task_order}-{self.backfilling}-{self.machine_selection}"

    @property
    def reserves(self) -> bool:
        """Planned by the queue planners (``scheduler/backfilling.py``), not the SC18 greedy one."""
        return self.backfilling != "GREEDY"

    @property
    def order(self) -> TaskOrder:
        return TASK_ORDERS[self.task_order]

    @property
    def select(self) -> MachineSelection:
        return MACHINE_SELECTIONS[self.machine_selection]

    @property
    def is_random(self) -> bool:
        return self.task_order == "RANDOM"


_STAGE_FIELDS = {"J2": "job_eligibility", "J3": "job_order", "R2": "authorization",
                 "R3": "static_filter"}


def stage_vocabulary() -> dict[str, tuple[str, ...]]:
    """The policy names of every stage in ``STAGE_DEFAULTS`` (their registries)."""
    from dcx.scheduler.job_stages import JOB_ELIGIBILITY, JOB_ORDERS
    from dcx.scheduler.resource_stages import AUTHORIZATIONS, STATIC_FILTERS

    return {"J2": tuple(JOB_ELIGIBILITY), "J3": tuple(JOB_ORDERS),
            "R2": tuple(AUTHORIZATIONS), "R3": tuple(STATIC_FILTERS)}


def with_stages(policy: Policy, stages: dict[str, str]) -> Policy:
    """``policy`` with the given J2/J3/R2/R3 policies."""
    changes: dict[str, Any] = {_STAGE_FIELDS[stage]: value for stage, value in stages.items()}
    return replace(policy, **changes)


def parse_policy(name: str) -> Policy:
    """A policy name (case-insensitive) → ``Policy``: ``T2-R5`` is the SC18 greedy
    scheduler (``SRTF-BESTFIT``), ``T2`` alone is strict queue order (``FCFS``),
    ``T2-BACKFILLING[-R5]`` reserves (``FCFS-EASY``, ``SJF-EASY``,
    ``FCFS-CONSERVATIVE-BESTFIT``; R5 FirstFit when left out); ``+J3-SJF``-style suffixes
    choose the J2/J3/R2/R3 policies. ``ValueError`` naming the known parts when one is
    unknown."""
    base, *suffixes = name.strip().upper().split("+")
    policy = _parse_base(name, base)
    vocabulary = stage_vocabulary()
    stages: dict[str, str] = {}
    for suffix in suffixes:
        stage, _, value = suffix.partition("-")
        if stage not in vocabulary or value not in vocabulary[stage] or stage in stages:
            known = "; ".join(f"{s}: {', '.join(v)}" for s, v in vocabulary.items())
            raise ValueError(f"unknown policy {name!r}: a +STAGE-POLICY suffix names one of "
                             f"{known}")
        stages[stage] = value
    if stages.get("R3") == "REQUIRE":
        raise ValueError(f"{name!r}: R3 REQUIRE needs machine_requirements; declare it in a "
                         "scheduler file (--scheduler)")
    return with_stages(policy, stages)


def _parse_base(name: str, base: str) -> Policy:
    parts = base.split("-")
    order, rest = parts[0], parts[1:]
    if (order in TASK_ORDERS and order != "RANDOM") or (order == "RANDOM" and len(rest) == 1):
        if len(rest) == 1 and rest[0] in MACHINE_SELECTIONS:
            return Policy(order, rest[0])
        if not rest:
            return Policy(order, "FIRSTFIT", "STRICT")
        if order != "RANDOM" and rest[0] in BACKFILLING[1:] and len(rest) <= 2:
            selection = rest[1] if len(rest) == 2 else "FIRSTFIT"
            if selection in MACHINE_SELECTIONS:
                return Policy(order, selection, rest[0])
    raise ValueError(
        f"unknown policy {name!r}: use T2-R5 (the SC18 scheduler) with T2 in "
        f"{', '.join(TASK_ORDERS)} and R5 in {', '.join(MACHINE_SELECTIONS)}, or "
        f"T2[-EASY|-CONSERVATIVE][-R5] with T2 in FCFS, SJF, LJF, SRTF"
    )


def all_policies() -> tuple[Policy, ...]:
    """The paper's nine, T2 major."""
    return tuple(
        Policy(order, selection)
        for order in PAPER_TASK_ORDERS for selection in MACHINE_SELECTIONS
    )
