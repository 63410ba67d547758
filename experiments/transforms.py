"""The ``parameters`` axis of an experiment: workload transforms and scheduler options.

A workload transform is one function from a compiled ``Problem`` and its parameter values to
a new ``Problem`` (the shipped one is shared by every cell on a worker and never changed).
They apply in the order of ``TRANSFORMS``: a window first, then requested times, then the
load, so that a load is that of the window that runs. Each parameter is a column of the
results table under its own name; ``offered_load`` is recorded for every cell.

* ``window_first_job`` / ``window_jobs``: the jobs at positions first … first + jobs − 1 in
  submit order (the job-count window);
* ``window_start_s`` / ``window_length_s``: the jobs submitted in [start, start + length)
  seconds after the trace's first submit (the time window);
* ``requested_accuracy``: every requested time becomes runtime x f (f ≥ 1 overestimates, as
  users do); ``trace`` keeps the trace's own;
* ``interarrival_scale``: every interval between consecutive submits multiplied by f (f < 1
  packs the trace, raising its load);
* ``load``: the submits rescaled (as ``interarrival_scale``) so that the offered load,
  Σ runtime x cores / (all cores x (last submit − first submit)), is this value.

A parameter of any other name must be a numeric option of the schedulers (a number field of
``Policy``, as a scheduler file declares it); it is set on each scheduler of the cell.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from dcx.scheduler.policies import Policy
from dcx.scheduler.problem import Problem, TaskTable

TRACE = "trace"
"""``requested_accuracy: trace``: the requested times the trace gives."""
OFFERED_LOAD = "offered_load"
"""The column recording the offered load of the workload a cell ran."""


class TransformError(ValueError):
    """A transform cannot apply to this workload (its message says why)."""


@dataclass(frozen=True)
class Parameter:
    name: str
    description: str
    integer: bool = False
    minimum: float = 0.0
    exclusive_minimum: bool = True
    words: tuple[str, ...] = ()
    """Strings the parameter takes besides numbers (``trace``)."""

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not one this parameter takes, or ``None``."""
        if isinstance(value, str) and value in self.words:
            return None
        wanted = "an integer" if self.integer else "a number"
        if self.words:
            wanted += " or " + " or ".join(repr(word) for word in self.words)
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or (self.integer and not float(value).is_integer())):
            return f"{self.name} takes {wanted}, not {value!r}"
        below = value <= self.minimum if self.exclusive_minimum else value < self.minimum
        if below:
            relation = "above" if self.exclusive_minimum else "at least"
            return f"{self.name} must be {relation} {self.minimum:g}, not {value!r}"
        return None


Apply = Callable[[Problem, Mapping[str, Any]], Problem]


@dataclass(frozen=True)
class Transform:
    name: str
    parameters: tuple[Parameter, ...]
    apply: Apply

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(parameter.name for parameter in self.parameters)


# --------------------------------------------------------------------------- helpers


def job_submits(tasks: TaskTable, jobs: int) -> list[float]:
    """Each job's submit time: the earliest submit of its tasks."""
    first = [math.inf] * jobs
    for task, job in enumerate(tasks.job):
        if tasks.submit_s[task] < first[job]:
            first[job] = tasks.submit_s[task]
    return first


def offered_load(problem: Problem) -> float:
    """Σ runtime x cores over all cores x the submit span; NaN when every task is
    submitted at once (no span to load)."""
    tasks = problem.tasks
    if not len(tasks):
        return math.nan
    span = max(tasks.submit_s) - min(tasks.submit_s)
    cores = sum(problem.machines.capacity)
    if span <= 0 or cores <= 0:
        return math.nan
    work = math.fsum(runtime * need * nodes for runtime, need, nodes
                     in zip(tasks.runtime_s, tasks.need, tasks.nodes, strict=True))
    return work / (cores * span)


_INDEX_LISTS = ("parents", "children")
"""TaskTable fields holding task indices (remapped when a window drops tasks)."""


def _keep_tasks(problem: Problem, jobs: Sequence[int]) -> Problem:
    """The problem with only ``jobs`` (indices, in order) and their tasks; dependencies on
    tasks left out are dropped (those parents are taken as done)."""
    tasks = problem.tasks
    kept_jobs = {job: new for new, job in enumerate(jobs)}
    keep = [task for task, job in enumerate(tasks.job) if job in kept_jobs]
    renumbered = {old: new for new, old in enumerate(keep)}
    count = len(tasks)
    changes: dict[str, Any] = {}
    for item in dataclasses.fields(tasks):
        value = getattr(tasks, item.name)
        if item.name == "job":
            changes[item.name] = [kept_jobs[value[task]] for task in keep]
        elif item.name in _INDEX_LISTS:
            changes[item.name] = [type(value[task])(renumbered[other] for other in value[task]
                                                    if other in renumbered)
                                  for task in keep]
        elif isinstance(value, dict):  # task index -> something
            changes[item.name] = {renumbered[task]: found for task, found in value.items()
                                  if task in renumbered}
        elif isinstance(value, list | bytearray) and len(value) == count:
            changes[item.name] = type(value)(value[task] for task in keep)
        elif isinstance(value, list | bytearray) and not value:
            changes[item.name] = type(value)()
        elif item.name in ("requested_from_runtime", "runtime_from_requested"):
            changes[item.name] = min(value, len(keep))  # counts for warnings, not rules
        else:
            raise TypeError(f"a window does not know how to cut TaskTable.{item.name}")
    job_ids = tuple(problem.job_ids[job] for job in jobs)
    return dataclasses.replace(problem, tasks=dataclasses.replace(tasks, **changes),
                               job_ids=job_ids)


def _jobs_in_submit_order(problem: Problem) -> list[int]:
    submits = job_submits(problem.tasks, len(problem.job_ids))
    present = [job for job in range(len(problem.job_ids)) if submits[job] < math.inf]
    return sorted(present, key=lambda job: (submits[job], job))


def _rescale_submits(problem: Problem, factor: float) -> Problem:
    """Every submit t becomes t0 + factor x (t − t0), t0 the first submit; release times
    (an AR lease's start) and deadlines move with their task's submit."""
    tasks = problem.tasks
    origin = min(tasks.submit_s)
    submits = [origin + factor * (submit - origin) for submit in tasks.submit_s]
    moved = [new - old for new, old in zip(submits, tasks.submit_s, strict=True)]
    releases = [release + shift for release, shift in zip(tasks.release_s, moved, strict=True)]
    deadlines = [deadline + shift for deadline, shift
                 in zip(tasks.deadline_s, moved, strict=True)]
    return dataclasses.replace(problem, tasks=dataclasses.replace(
        tasks, submit_s=submits, release_s=releases, deadline_s=deadlines))


# ------------------------------------------------------------------------ transforms


def job_window(problem: Problem, values: Mapping[str, Any]) -> Problem:
    first = int(values.get("window_first_job", 0))
    count = values.get("window_jobs")
    ordered = _jobs_in_submit_order(problem)
    chosen = ordered[first:] if count is None else ordered[first:first + int(count)]
    if not chosen:
        raise TransformError(f"the job window starting at job {first} holds no job (the "
                             f"workload has {len(ordered)})")
    return _keep_tasks(problem, sorted(chosen))


def time_window(problem: Problem, values: Mapping[str, Any]) -> Problem:
    submits = job_submits(problem.tasks, len(problem.job_ids))
    origin = min(submits)
    start = origin + float(values.get("window_start_s", 0.0))
    length = values.get("window_length_s")
    end = math.inf if length is None else start + float(length)
    chosen = [job for job, submit in enumerate(submits) if start <= submit < end]
    if not chosen:
        raise TransformError(f"no job is submitted in the time window [{start - origin:g}, "
                             f"{end - origin:g}) s after the first submit")
    return _keep_tasks(problem, chosen)


def requested_accuracy(problem: Problem, values: Mapping[str, Any]) -> Problem:
    factor = values["requested_accuracy"]
    if factor == TRACE:
        return problem
    tasks = problem.tasks
    return dataclasses.replace(problem, tasks=dataclasses.replace(
        tasks, requested_s=[runtime * float(factor) for runtime in tasks.runtime_s],
        requested_from_runtime=0))


def load_scaling(problem: Problem, values: Mapping[str, Any]) -> Problem:
    if "interarrival_scale" in values:
        return _rescale_submits(problem, float(values["interarrival_scale"]))
    own = offered_load(problem)
    if math.isnan(own):
        raise TransformError("every job of the workload is submitted at once: it has no "
                             "inter-arrival times to scale to a load")
    return _rescale_submits(problem, own / float(values["load"]))


TRANSFORMS: tuple[Transform, ...] = (
    Transform("job_window", (
        Parameter("window_first_job", "position of the first job (submit order, from 0)",
                  integer=True, minimum=0, exclusive_minimum=False),
        Parameter("window_jobs", "how many jobs from there", integer=True, minimum=1,
                  exclusive_minimum=False)), job_window),
    Transform("time_window", (
        Parameter("window_start_s", "start, seconds after the first submit", minimum=0,
                  exclusive_minimum=False),
        Parameter("window_length_s", "length in seconds")), time_window),
    Transform("requested_accuracy", (
        Parameter("requested_accuracy", "requested time = runtime x this; 'trace': the "
                  "trace's own", words=(TRACE,)),), requested_accuracy),
    Transform("load_scaling", (
        Parameter("interarrival_scale", "every inter-arrival time x this"),
        Parameter("load", "the offered load to rescale the submits to")), load_scaling),
)
WORKLOAD_PARAMETERS: dict[str, Parameter] = {
    parameter.name: parameter for transform in TRANSFORMS for parameter in transform.parameters}
EXCLUSIVE = (("load", "interarrival_scale"),)
"""Parameters that set the same thing and so cannot be swept together."""


def scheduler_options(kind: type[Policy] = Policy) -> dict[str, type]:
    """The numeric options a scheduler declares: the int and float fields of its ``Policy``
    (none today; an option a scheduler file gains becomes a parameter without a change
    here)."""
    hints = {item.name: item.type for item in dataclasses.fields(kind)}
    return {name: (int if kind in ("int", int) else float) for name, kind in hints.items()
            if kind in ("int", "float", int, float)}


def apply_transforms(problem: Problem, values: Mapping[str, Any]) -> Problem:
    """The workload a cell runs: each transform whose parameters the cell sets, in order."""
    for transform in TRANSFORMS:
        if any(name in values for name in transform.names):
            problem = transform.apply(problem, values)
    return problem


SomePolicy = TypeVar("SomePolicy", bound=Policy)


def with_options(policy: SomePolicy, values: Mapping[str, Any]) -> SomePolicy:
    """``policy`` with the cell's scheduler options set."""
    options = scheduler_options(type(policy))
    changes = {name: options[name](value) for name, value in values.items() if name in options}
    return dataclasses.replace(policy, **changes) if changes else policy
