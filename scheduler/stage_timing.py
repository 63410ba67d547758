"""Stage timing as a wrapper: the engine calls its stages (T2 take, R4 filter, R5 select)
through plain callables, and a measured run replaces each with one that also adds its wall
time, input size and call count to the current cycle's totals. An unmeasured run pays
nothing for it: no branch in the loop, no extra call."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

Stage = TypeVar("Stage", bound=Callable[..., Any])


@dataclass(frozen=True)
class StageRecord:
    """One stage of one cycle: wall time (``perf_counter_ns``) summed over its calls."""

    time_s: float
    stage: str
    wall_ns: int
    size: int
    """Input size summed over the calls (queue length, machine-list length)."""
    iterations: int


class StageTimer:
    """Per-cycle totals per stage, and the records of every measured cycle."""

    def __init__(self, stages: tuple[str, ...]) -> None:
        self.stages = stages
        self.wall = dict.fromkeys(stages, 0)
        self.sizes = dict.fromkeys(stages, 0)
        self.calls = dict.fromkeys(stages, 0)
        self.records: list[StageRecord] = []
        self.cycle_cpu: list[tuple[float, int]] = []
        self._cycle_wall = 0
        self._cycle_cpu = 0

    def wrap(self, stage: str, call: Stage, size_of: Callable[[tuple[Any, ...]], int]) -> Stage:
        """``call``, timed as ``stage``; ``size_of(args)`` is the call's input size."""
        wall, sizes, calls = self.wall, self.sizes, self.calls
        clock = time.perf_counter_ns

        def timed(*args: Any) -> Any:
            started = clock()
            result = call(*args)
            wall[stage] += clock() - started
            sizes[stage] += size_of(args)
            calls[stage] += 1
            return result

        return timed  # type: ignore[return-value]

    def begin_cycle(self) -> None:
        # The thread CPU clock costs about ten times a wall-clock read, so it is read once
        # per cycle, not per stage call.
        self._cycle_wall = time.perf_counter_ns()
        self._cycle_cpu = time.thread_time_ns()
        for totals in (self.wall, self.sizes, self.calls):
            for stage in self.stages:
                totals[stage] = 0

    def mark(self, stage: str, size: int) -> None:
        """``stage`` took from the start of the cycle until now (the cycle's first stage)."""
        self.wall[stage] = time.perf_counter_ns() - self._cycle_wall
        self.sizes[stage] = size
        self.calls[stage] = 1

    def end_cycle(self, now: float, rest: str) -> None:
        """Close the cycle at simulated time ``now``; ``rest`` gets the unaccounted time."""
        wall = self.wall
        wall[rest] = max(0, time.perf_counter_ns() - self._cycle_wall - sum(wall.values()))
        self.calls[rest] = 1
        self.records.extend(
            StageRecord(now, stage, wall[stage], self.sizes[stage], self.calls[stage])
            for stage in self.stages)
        self.cycle_cpu.append((now, time.thread_time_ns() - self._cycle_cpu))
