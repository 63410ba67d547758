"""The runtime of a Batsim job whose profile states work (flops) rather than time, on hosts of
a given speed: what ``dcx convert --fill speed=1Gf`` gives the jobs of a compute profile
(``FormatDeclaration.runtimes_at_speed``).

A runtime is given only where Batsim's own semantics make it exact on hosts that each compute
``speed`` flop/s (SimGrid's parallel tasks run at the pace of their slowest host):

* a delay: its ``delay``;
* a homogeneous parallel task (``parallel_homogeneous``, ``ParallelTaskHomogeneousProfile``,
  and ``ptask_homogeneous`` of Batsim's development between 4.2 and 5.0) that sends nothing
  between two of its hosts (``com`` 0, or a job on one host: Batsim's ``com`` goes between
  distinct hosts): ``cpu / speed``; ``cpu`` is the total split over the job's hosts under
  ``parallel_homogeneous_total`` or ``generation_strategy: DefinedAmountsSpreadUniformly``;
* a parallel task (``parallel``, ``ParallelTaskProfile``, ``ptask``) whose ``com`` matrix is
  all zeros (or absent): its largest ``cpu`` value over ``speed``;
* a sequence (``composed``, ``SequentialCompositionProfile``, ``sequential_composition``) of
  such profiles: ``repeat`` times the sum of its members' runtimes.

Anything else gives a reason instead: network traffic (its time depends on the platform's
links and routes, which a speed does not say), a trace replayed (``usage_trace``,
``TraceReplayProfile``, ``smpi``: the trace file is not in the workload), storage, messages to
the scheduler, fork-join compositions. Those jobs keep no runtime; ``--fill runtime=requested``
gives them their walltime if the user wants one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dcx.core.model import Task, Workload
from dcx.formats.batsim.codec import PROFILE_KEY, PROFILES_KEY, _hosts, _is_int, _node_count

_DELAYS = frozenset({"delay", "DelayProfile"})
_HOMOGENEOUS = frozenset({"parallel_homogeneous", "ParallelTaskHomogeneousProfile",
                          "ptask_homogeneous"})
_HOMOGENEOUS_TOTAL = frozenset({"parallel_homogeneous_total"})
_SPREAD_STRATEGIES = frozenset({"DefinedAmountsSpreadUniformly",
                                "defined_amount_spread_uniformly"})
_PARALLEL = frozenset({"parallel", "ParallelTaskProfile", "ptask"})
_SEQUENCES = frozenset({"composed", "SequentialCompositionProfile", "sequential_composition"})

NETWORK = "network traffic (com above 0)"
"""Why a profile that sends data between hosts has no exact runtime at a speed."""

Runtime = float | str
"""Seconds, or why a profile gives no exact runtime."""


def runtimes_at_speed(workload: Workload, speed: float) -> Callable[[Task], float | str | None] \
        | None:
    """What tells each task's runtime on hosts of ``speed`` flop/s from the profile it keeps
    the name of (``batsim:profile``, defined in ``batsim:profiles``), or why there is none;
    ``None`` for a task that names no kept profile, and in place of the function for a
    workload that keeps no profiles."""
    profiles = workload.extras.get(PROFILES_KEY)
    if not isinstance(profiles, dict) or not profiles:
        return None
    known: dict[tuple[str, int], Runtime] = {}

    def runtime_of(task: Task) -> float | str | None:
        name = task.extras.get(PROFILE_KEY)
        if not isinstance(name, str) or name not in profiles:
            return None
        hosts = _node_count(_hosts(task.request))
        key = (name, hosts)
        if key not in known:
            known[key] = profile_runtime(name, profiles, hosts, speed)
        return known[key]

    return runtime_of


def profile_runtime(name: str, profiles: dict[str, Any], hosts: int, speed: float,
                    seen: frozenset[str] = frozenset()) -> Runtime:
    """The seconds profile ``name`` runs for on ``hosts`` hosts of ``speed`` flop/s each, or
    why Batsim's semantics give no exact runtime (see the module docstring)."""
    definition = profiles.get(name)
    if not isinstance(definition, dict):
        return f"profile {name!r}, which the workload does not define"
    if name in seen:
        return f"profile {name!r}, a sequence that runs itself"
    kind = definition.get("type")
    if kind in _DELAYS:
        delay = _amount(definition.get("delay"))
        return delay if delay is not None else _unreadable(name)
    if kind in _HOMOGENEOUS or kind in _HOMOGENEOUS_TOTAL:
        return _homogeneous(name, definition, hosts, speed,
                            kind in _HOMOGENEOUS_TOTAL
                            or definition.get("generation_strategy") in _SPREAD_STRATEGIES)
    if kind in _PARALLEL:
        return _parallel(name, definition, speed)
    if kind in _SEQUENCES:
        return _sequence(name, definition, profiles, hosts, speed, seen | {name})
    return f"profile type {str(kind)!r}"


def _amount(value: Any) -> float | None:
    """A finite non-negative number of a profile, as Batsim reads one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _unreadable(name: str) -> str:
    return f"profile {name!r}, whose amounts are not numbers Batsim reads"


def _seconds(flops: float, speed: float) -> Runtime:
    runtime = flops / speed
    return runtime if math.isfinite(runtime) else "a runtime too large for a number"


def _homogeneous(name: str, definition: dict[str, Any], hosts: int, speed: float,
                 spread: bool) -> Runtime:
    cpu, com = _amount(definition.get("cpu")), _amount(definition.get("com"))
    if cpu is None or com is None:
        return _unreadable(name)
    if com > 0 and hosts > 1:
        return NETWORK
    if spread:
        if hosts < 1:
            return f"profile {name!r}, spread over no hosts"
        cpu /= hosts
    return _seconds(cpu, speed)


def _parallel(name: str, definition: dict[str, Any], speed: float) -> Runtime:
    cpu = definition.get("cpu", [])
    com = definition.get("com", [])
    if not isinstance(cpu, list) or not isinstance(com, list):
        return _unreadable(name)
    flops = [_amount(value) for value in cpu]
    traffic = [_amount(value) for value in com]
    if None in flops or None in traffic:
        return _unreadable(name)
    if any(traffic):
        return NETWORK
    return _seconds(max((value or 0.0 for value in flops), default=0.0), speed)


def _sequence(name: str, definition: dict[str, Any], profiles: dict[str, Any], hosts: int,
              speed: float, seen: frozenset[str]) -> Runtime:
    members, repeat = definition.get("seq"), definition.get("repeat", 1)
    if not isinstance(members, list) or not _is_int(repeat) or repeat < 1:
        return _unreadable(name)
    total = 0.0
    for member in members:
        if not isinstance(member, str):
            return _unreadable(name)
        runtime = profile_runtime(member, profiles, hosts, speed, seen)
        if isinstance(runtime, str):
            return runtime
        total += runtime
    return _seconds(total * repeat, 1.0)
