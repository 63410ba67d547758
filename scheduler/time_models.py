"""The time models: when the event loop's cycles happen and how long a task runs on a
machine, and the two choices the models differ in beside time, each a named option written
once: ``event_order`` (what a cycle applies first) and ``cut_at_requested`` (whether a task
reaching its requested time ends there).

* ``sc18``: the paper's simulator. Cycles at t = 1, 11, 21, ...; a task arrives at the first
  tick at or after its release time; duration = floor(4000 x runtime / MHz); a finish is
  seen (cores back, children eligible) at the first tick at or after it, never in the cycle
  that placed the task; machine state changes before finishes; nothing cut.
* ``event``: a cycle at every arrival, completion and machine state change; durations are
  runtime x reference clock / machine clock without rounding; finishes first, then state
  changes, then arrivals (``notes/backfilling.md``); a task cut at its requested time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from dcx.scheduler.problem import Problem, TaskTable

TimeModelName = Literal["sc18", "event"]
TIME_MODELS: tuple[TimeModelName, ...] = ("sc18", "event")

EventOrder = Literal["finishes-first", "state-changes-first"]
"""What a cycle applies first of what happened by its time: the finishes (their cores back,
then machine state changes), or the machine state changes (then the finishes). Arrivals
come last either way, and the planner runs once after all three."""

SC18_FIRST_TICK_S = 1.0
SC18_TICK_S = 10.0
REFERENCE_CLOCK_MHZ = 4000.0
"""sc18 treats trace runtimes as measured on a 4,000 MHz core."""


@dataclass(frozen=True)
class TimeModel:
    """When cycles happen and how long a task runs on a machine."""

    name: TimeModelName
    align: Callable[[float], float]
    """The cycle at which something happening at ``t`` is seen."""
    duration: Callable[[float, float | None], float]
    """``(runtime_s, machine MHz or None) -> seconds on that machine``."""
    visible_after_placement: float
    """How long after its placing cycle a finish can be seen at the earliest."""
    ordered_by_id: bool = False
    """Tasks arriving together join the queue by (release, job id, task id), as the sc18
    simulator's store sorts them, instead of by (release, file order)."""
    integer_speed: bool = False
    """Machine speed is the integer mean clock (``MachineTable.integer_clock_mhz``)."""
    event_order: EventOrder = "finishes-first"
    """Event order at a tick (``EventOrder``)."""
    cut_at_requested: bool = True
    """A task reaching its requested time is cut there (as Batsim and resource managers
    do: it ends at start + min(runtime, requested), and ``Schedule.killed`` counts it),
    rather than left to run its whole runtime."""

    @property
    def sees_at_once(self) -> bool:
        """Whatever happens is seen when it happens (``align`` keeps every time, nothing
        waits after a placement): the event model."""
        return self.align is _same_time and not self.visible_after_placement

    def arrivals(self, tasks: TaskTable) -> list[float]:
        """When each task is seen to arrive: its release time, aligned to a cycle."""
        align = self.align
        return [align(release) for release in tasks.release_s]

    def run_for(self, tasks: TaskTable) -> Sequence[float]:
        """How long each task runs at the reference speed: its runtime, cut at its
        requested time when the model says so (the one place that rule is applied)."""
        if not self.cut_at_requested:
            return tasks.runtime_s
        return list(map(min, tasks.runtime_s, tasks.requested_s))


def _sc18_tick(t: float, first: float = SC18_FIRST_TICK_S, tick: float = SC18_TICK_S,
               ceil: Callable[[float], int] = math.ceil) -> float:
    # the constants are default arguments: local lookups in a function called per task
    if t <= first:
        return first
    return first + tick * ceil((t - first) / tick)


def _sc18_duration(runtime_s: float, clock_mhz: float | None) -> float:
    # sc18 integer arithmetic: flops = 4000 * RunTime, duration = flops // MHz (Long division)
    if clock_mhz is None:
        return float(math.floor(runtime_s))
    return float(math.floor(REFERENCE_CLOCK_MHZ * runtime_s / clock_mhz))


def _event_duration(runtime_s: float, clock_mhz: float | None) -> float:
    if clock_mhz is None:
        return runtime_s
    return runtime_s * REFERENCE_CLOCK_MHZ / clock_mhz


def _same_time(t: float) -> float:
    return t


SC18 = TimeModel("sc18", _sc18_tick, _sc18_duration, SC18_TICK_S, ordered_by_id=True,
                 integer_speed=True, event_order="state-changes-first",
                 cut_at_requested=False)
"""The paper's simulator: its datacenter applied machine state before seeing finishes, and
nothing cut a task (its traces have no requested times)."""
EVENT = TimeModel("event", _same_time, _event_duration, 0.0)
"""Finishes first (every completion, then every state change, then every arrival, as
``notes/backfilling.md`` asks), tasks cut at their requested time."""


def time_model(name: str) -> TimeModel:
    if name == "sc18":
        return SC18
    if name == "event":
        return EVENT
    raise ValueError(f"unknown time model {name!r}; use one of {', '.join(TIME_MODELS)}")



def machine_speeds(problem: Problem, model: TimeModel) -> tuple[float | int | None, ...]:
    machines = problem.machines
    if model.integer_speed and machines.integer_clock_mhz:
        return machines.integer_clock_mhz
    return machines.clock_mhz
