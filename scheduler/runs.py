"""One call to run a policy over a problem and measure it (what the CLI, the experiments and
the benchmark share)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from dcx.scheduler.engine import Schedule, simulate, time_model
from dcx.scheduler.metrics import RunMetrics, compute_metrics
from dcx.scheduler.policies import Policy
from dcx.scheduler.problem import Problem


@dataclass(frozen=True)
class Run:
    schedule: Schedule
    metrics: RunMetrics


def effective_seed(policy: Policy, seed: int | None) -> int | None:
    """The seed a run uses: none for deterministic policies; for RANDOM the given one, or a
    fresh one (reported, so the run can be repeated) when none was given."""
    if not policy.is_random:
        return None
    if seed is not None:
        return seed
    return random.SystemRandom().randrange(2**31)


def run_policy(
    problem: Problem,
    policy: Policy,
    model_name: str = "event",
    seed: int | None = None,
    measure_stages: bool = True,
    progress: Callable[[int], None] | None = None,
) -> Run:
    """``progress``, when given, is told now and then how many tasks have arrived.
    ``ValueError`` for a reserving policy under a time model other than ``event``."""
    schedule = simulate(problem, policy, time_model(model_name), effective_seed(policy, seed),
                        measure_stages, progress)
    return Run(schedule, compute_metrics(problem, schedule))
