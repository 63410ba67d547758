"""The scheduler state every stage of the reservation engine is handed: the time, free
cores per machine, the running tasks with their expected and real finish times, the queue
in policy order, and the reservations.

Mechanism (placing, releasing, requeueing after a failure) lives here and in the event loop
of ``backfilling.py``; policy (which task, which machines, who may jump the queue) lives in
the stage components, which read this state and call ``start``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from dcx.scheduler.problem import CORE_UNITS

_NAN = float("nan")


@dataclass(frozen=True)
class Reservation:
    """Where and when a waiting task is promised to start."""

    start_s: float
    machines: tuple[int, ...]
    end_s: float
    """Its start plus its requested time on those machines (the slowest of them)."""


@dataclass
class SchedulerState:
    """Lists are indexed by task or by machine (the ``Problem``'s indices); a component may
    read everything and change the queue, the reservations and (through ``start``) the
    running set."""

    now: float
    capacity: list[int]
    """Cores per scheduling machine in ``CORE_UNITS``."""
    free: list[int]
    usable: bytearray
    """1 for a machine that may receive tasks (not failed, halted or in maintenance)."""
    need: list[int]
    """Cores per node of each task, in ``CORE_UNITS``."""
    nodes: list[int]
    expected_duration: Callable[[int, int], float]
    """``(task, machine) -> requested time on that machine``."""
    real_duration: Callable[[int, int], float]
    """``(task, machine) -> how long the task really runs there`` (cut at its requested
    time)."""
    queue: list[tuple[tuple[float, ...], int]] = field(default_factory=list)
    """Waiting eligible tasks as ``(policy key, task)``, in policy order."""
    running: list[tuple[float, int]] = field(default_factory=list)
    """Running tasks as ``(expected end, task)``, earliest expected end first."""
    start_s: list[float] = field(default_factory=list)
    expected_end_s: list[float] = field(default_factory=list)
    finish_s: list[float] = field(default_factory=list)
    placed_on: list[tuple[int, ...]] = field(default_factory=list)
    reservations: dict[int, Reservation] = field(default_factory=dict)
    first_reservation_s: list[float] = field(default_factory=list)
    """The first reservation each task was given (NaN: none): what the backfilling
    guarantees are checked against."""
    started: list[int] = field(default_factory=list)
    """Tasks started in the current pass, in order (the event loop schedules their ends)."""

    @property
    def open_machines(self) -> list[int]:
        return [machine for machine, flag in enumerate(self.usable) if flag]

    def enqueue(self, key: tuple[float, ...], task: int) -> None:
        bisect.insort(self.queue, (key, task))

    def fitting(self, task: int, free: list[int] | None = None) -> list[int]:
        """R4: usable machines (in topology order) with the task's cores free in ``free``
        (the current free cores by default)."""
        view = self.free if free is None else free
        need = self.need[task]
        return [m for m, flag in enumerate(self.usable) if flag and view[m] >= need]

    def expected_length(self, task: int, machines: tuple[int, ...] | list[int]) -> float:
        return max(self.expected_duration(task, machine) for machine in machines)

    def start(self, task: int, machines: tuple[int, ...] | list[int]) -> None:
        """Place ``task`` on ``machines`` now (the caller has checked that it fits)."""
        chosen = tuple(machines)
        need = self.need[task]
        for machine in chosen:
            self.free[machine] -= need
        now = self.now
        expected_end = now + self.expected_length(task, chosen)
        self.start_s[task] = now
        self.expected_end_s[task] = expected_end
        self.finish_s[task] = now + max(self.real_duration(task, m) for m in chosen)
        self.placed_on[task] = chosen
        bisect.insort(self.running, (expected_end, task))
        self.reservations.pop(task, None)
        self.started.append(task)

    def release(self, task: int) -> None:
        """The task ended or was taken off a failed machine: its cores are free again."""
        need = self.need[task]
        for machine in self.placed_on[task]:
            self.free[machine] += need
        index = bisect.bisect_left(self.running, (self.expected_end_s[task], task))
        del self.running[index]

    def busy_core_s(self, task: int, until: float) -> float:
        begin = self.start_s[task]
        if math.isnan(begin):
            return 0.0
        return (until - begin) * self.need[task] * len(self.placed_on[task]) / CORE_UNITS
