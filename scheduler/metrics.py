"""Task and job metrics of a run, as the SC18 simulator defined them.

"Arrival" is the time a task joined the queue (the tick-aligned submit time under ``sc18``,
the submit time under ``event``).

* TRT (per task) = finish − arrival.
* JMS (per job) = last finish − earliest arrival.
* JWT (per job) = earliest start − earliest arrival.
* NJSL (per job): under ``sc18`` what its code computed, ⌊JMS / max(1, last finish − first
  start)⌋ (its critical-path routine degenerates to the job's simulated execution span);
  under ``event`` the textbook definition, JMS / max(1, static critical path), the path
  measured with durations on the environment's fastest machine.

The batch-scheduling metrics (Feitelson, "Metrics for parallel job scheduling and their
convergence", 2001), per task (an SWF job is one task), over the tasks that finished:

* wait = first start − arrival; response = finish − arrival; run = finish − last start;
* slowdown = response / run, over the tasks with run > 0 (undefined for run = 0);
* bounded slowdown = max(1, response / max(run, τ)), τ = ``BOUNDED_SLOWDOWN_TAU_S`` (10 s);
* means and percentiles p50/p90/p99 (linear interpolation between closest ranks, numpy's
  default) and the maximum;
* utilisation = used core-seconds / (all cores x (last finish − first arrival)); makespan =
  last finish − first arrival.

Jobs with an unfinished task (every machine failed for good) get no job metrics and are
counted in ``Summary.unfinished_jobs``.

Deadlines: a task with ``Task.deadline_s`` misses it when it finishes after it, or never
finishes. Under ``sc18`` the deadline moves by the same amount the tick grid moved the
task's arrival (arrival − release), so the grid alone cannot make a task miss; under
``event`` the comparison is plain ``finish > deadline``. ``Summary.deadline_tasks`` and
``deadline_missed`` count them; per job, ``JobMetrics.deadline_missed`` (``None`` when no
task of the job has a deadline).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dcx.core.model import Id
from dcx.scheduler.engine import Schedule, time_model
from dcx.scheduler.problem import CORE_UNITS, Problem


@dataclass(slots=True)
class TaskMetrics:
    task_id: Id
    job_id: Id
    arrival_s: float
    start_s: float
    finish_s: float
    waiting_s: float
    execution_s: float
    turnaround_s: float
    machines: tuple[str, ...]
    attempts: int
    deadline_s: float
    """NaN when the task has no deadline."""
    deadline_missed: bool | None
    """``None`` when the task has no deadline."""


@dataclass(slots=True)
class JobMetrics:
    job_id: Id
    tasks: int
    first_arrival_s: float
    first_start_s: float
    last_finish_s: float
    makespan_s: float
    waiting_s: float
    njsl: float
    critical_path_s: float
    deadline_missed: int | None = None
    """Tasks of the job that missed their deadline; ``None`` when none has a deadline."""


@dataclass(frozen=True)
class Summary:
    policy: str
    time_model: str
    seed: int | None
    tasks: int
    jobs: int
    trt_s: float
    jms_s: float
    njsl: float
    jwt_s: float
    utilisation: float
    """Busy core-seconds of finished tasks over all cores x (last finish − first arrival)."""
    makespan_s: float
    lost_core_s: float
    requeued: int
    unfinished_tasks: int
    unfinished_jobs: int
    cycles: int
    deadline_tasks: int = 0
    """Tasks with a deadline."""
    deadline_missed: int = 0
    """Tasks that finished after their deadline or never finished."""
    wait: Distribution | None = None
    response: Distribution | None = None
    slowdown: Distribution | None = None
    bounded_slowdown: Distribution | None = None
    killed: int = 0
    """Tasks cut at their requested time."""

    def headline(self) -> dict[str, float]:
        """The paper's four metrics, then the batch-scheduling ones (``--output json``'s
        ``metrics``), named as the experiments' results table names them."""
        return {"trt_s": self.trt_s, "jms_s": self.jms_s, "njsl": self.njsl,
                "jwt_s": self.jwt_s,
                "makespan_s": self.makespan_s,
                "wait_mean_s": _mean_of(self.wait),
                "response_mean_s": _mean_of(self.response),
                "slowdown_mean": _mean_of(self.slowdown),
                "bounded_slowdown_mean": _mean_of(self.bounded_slowdown),
                "utilization": self.utilisation}


BOUNDED_SLOWDOWN_TAU_S = 10.0
"""τ of the bounded slowdown (Feitelson 2001)."""


@dataclass(frozen=True)
class Distribution:
    """Mean, percentiles (linear interpolation) and maximum of a per-task metric."""

    count: int
    mean: float
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float] | npt.NDArray[np.float64]) -> Distribution:
        if not len(values):
            nan = float("nan")
            return cls(0, nan, nan, nan, nan, nan)
        ordered = _ranked(np.asarray(values, dtype=np.float64), _PERCENTS).tolist()
        # fsum is exact in any order
        return cls(len(ordered), math.fsum(ordered) / len(ordered), percentile(ordered, 50),
                   percentile(ordered, 90), percentile(ordered, 99), ordered[-1])


_PERCENTS = (50, 90, 99)
"""The percentiles a ``Distribution`` gives."""


def _ranked(column: npt.NDArray[np.float64], percents: Sequence[float]
            ) -> npt.NDArray[np.float64]:
    """``column`` with the values ``percentile`` reads at ``percents`` and the maximum at
    the places a stable sort puts them: a partition around those ranks rather than a full
    sort, unless a -0.0 lies beside a 0.0 (which of the two a rank holds is the stable
    sort's: it keeps the given order)."""
    last = len(column) - 1
    ranks = {last}
    for percent in percents:
        low = math.floor(last * percent / 100)
        ranks.update((low, min(low + 1, last)))
    if np.any((column == 0) & np.signbit(column)):
        return np.sort(column, kind="stable")
    return np.partition(column, sorted(ranks))


def percentile(ordered: list[float], percent: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default method)."""
    position = (len(ordered) - 1) * percent / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _mean_of(distribution: Distribution | None) -> float:
    return distribution.mean if distribution is not None else float("nan")


@dataclass(frozen=True)
class RunMetrics:
    problem: Problem
    schedule: Schedule
    turnaround_s: list[float]
    """TRT per task (NaN for a task that never finished), in task order."""
    deadline_missed: list[bool | None]
    """Per task, in task order; ``None`` for a task without a deadline."""
    job_columns: JobColumns
    """The job metrics as one list per field (``jobs`` makes the rows of them)."""
    summary: Summary

    @functools.cached_property
    def jobs(self) -> tuple[JobMetrics, ...]:
        """Per-job rows of the jobs whose tasks all finished, built when first asked (a
        trace has millions; the summary needs only the columns)."""
        columns = self.job_columns
        job_ids = self.problem.job_ids
        return tuple(
            JobMetrics(job_ids[job], tasks, arrival, start, finish, makespan, waiting, njsl,
                       path, missed)
            for job, tasks, arrival, start, finish, makespan, waiting, njsl, path, missed
            in zip(columns.job, columns.tasks, columns.first_arrival_s,
                   columns.first_start_s, columns.last_finish_s, columns.makespan_s,
                   columns.waiting_s, columns.njsl, columns.critical_path_s,
                   columns.deadline_missed, strict=True))

    @property
    def tasks(self) -> Iterator[TaskMetrics]:
        """Per-task rows, built on demand (a trace has tens of thousands)."""
        tasks, schedule = self.problem.tasks, self.schedule
        labels, job_ids = self.problem.machines.labels, self.problem.job_ids
        for task in range(len(tasks)):
            arrival = schedule.arrival_s[task]
            begin = schedule.start_s[task]
            end = schedule.finish_s[task]
            yield TaskMetrics(
                task_id=tasks.ids[task],
                job_id=job_ids[tasks.job[task]],
                arrival_s=arrival,
                start_s=begin,
                finish_s=end,
                waiting_s=begin - arrival,
                execution_s=end - begin,
                turnaround_s=end - arrival,
                machines=tuple(labels[m] for m in schedule.machines[task]),
                attempts=schedule.attempts[task] + (0 if math.isnan(begin) else 1),
                deadline_s=tasks.deadline_s[task],
                deadline_missed=self.deadline_missed[task],
            )


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else float("nan")


def _static_critical_paths(problem: Problem, fastest_mhz: float | None
                           ) -> list[float] | npt.NDArray[np.float64]:
    """Longest chain of durations (on the fastest machine) ending at each task, following
    dependencies inside the task's own job."""
    tasks = problem.tasks
    duration = time_model("event").duration
    if not any(tasks.parents):
        # no dependencies: each task is its own chain (the duration is arithmetic, the
        # same float operations on a column)
        return np.asarray(duration(np.array(tasks.runtime_s, dtype=np.float64),  # type: ignore[arg-type]
                                   fastest_mhz), dtype=np.float64)
    own = [duration(runtime, fastest_mhz) for runtime in tasks.runtime_s]
    pending = [len(parents) for parents in tasks.parents]
    longest = own[:]
    frontier = [task for task, count in enumerate(pending) if count == 0]
    while frontier:
        task = frontier.pop()
        for child in tasks.children[task]:
            if tasks.job[child] == tasks.job[task]:
                longest[child] = max(longest[child], longest[task] + own[child])
            pending[child] -= 1
            if pending[child] == 0:
                frontier.append(child)
    return longest


def deadline_misses(problem: Problem, schedule: Schedule) -> list[bool | None]:
    """Per task: missed its deadline (``None`` without one); see the module docstring."""
    tasks = problem.tasks
    if np.isnan(np.array(tasks.deadline_s, dtype=np.float64)).all():
        return [None] * len(tasks)  # most workloads have no deadline
    missed: list[bool | None] = []
    for task, deadline in enumerate(tasks.deadline_s):
        if deadline != deadline:  # NaN: no deadline
            missed.append(None)
            continue
        end = schedule.finish_s[task]
        grid_shift = schedule.arrival_s[task] - tasks.release_s[task]
        missed.append(end != end or end > deadline + grid_shift)
    return missed


@dataclass
class _JobSpans:
    """Per job: its first arrival and start, its last finish, its size and whether every
    task finished; per task its turnaround; the busy core-seconds of the run."""

    first_arrival: npt.NDArray[np.float64]
    first_start: npt.NDArray[np.float64]
    last_finish: npt.NDArray[np.float64]
    sizes: npt.NDArray[np.int64]
    complete: npt.NDArray[np.bool_]
    turnaround: npt.NDArray[np.float64]
    busy_core_s: float


@dataclass
class _Columns:
    """The schedule's per-task lists as arrays, each made once (a trace has millions)."""

    job: npt.NDArray[np.int64]
    arrival: npt.NDArray[np.float64]
    start: npt.NDArray[np.float64]
    first_start: npt.NDArray[np.float64]
    end: npt.NDArray[np.float64]
    done: npt.NDArray[np.bool_]
    """Whether each task finished (its end is not NaN)."""

    @classmethod
    def of(cls, problem: Problem, schedule: Schedule) -> _Columns:
        count = len(problem.tasks)
        end = np.array(schedule.finish_s[:count], dtype=np.float64)
        return cls(np.array(problem.tasks.job, dtype=np.int64),
                   np.array(schedule.arrival_s[:count], dtype=np.float64),
                   np.array(schedule.start_s[:count], dtype=np.float64),
                   np.array(schedule.first_start_s[:count], dtype=np.float64),
                   end, ~np.isnan(end))


def _job_spans(problem: Problem, columns: _Columns) -> _JobSpans:
    """Computed a column at a time, with the same float operations as one task at a time
    (the busy core-seconds summed in task order)."""
    tasks = problem.tasks
    count = len(tasks)
    job_count = len(problem.job_ids)
    job, arrival, end, done = columns.job, columns.arrival, columns.end, columns.done
    first_arrival = np.full(job_count, math.inf)
    np.minimum.at(first_arrival, job, arrival)
    complete = np.bincount(job[~done], minlength=job_count) == 0
    finished_job, finished_end = job[done], end[done]
    first_start = np.full(job_count, math.inf)
    np.minimum.at(first_start, finished_job, columns.first_start[done])
    last_finish = np.full(job_count, -math.inf)
    np.maximum.at(last_finish, finished_job, finished_end)
    held = ((finished_end - columns.start[done])
            * np.array(tasks.need, dtype=np.int64)[done]
            * np.array(tasks.nodes, dtype=np.int64)[done])
    # a running sum adds in task order, one addition at a time, as a loop would (a plain
    # sum adds pairwise, which rounds differently)
    busy_core_s = float(np.cumsum(held)[-1]) if len(held) else 0.0
    busy_core_s /= CORE_UNITS
    return _JobSpans(first_arrival, first_start, last_finish,
                     np.bincount(job, minlength=job_count) if count
                     else np.zeros(job_count, dtype=np.int64),
                     complete, end - arrival, busy_core_s)


@dataclass
class JobColumns:
    """``JobMetrics`` of the jobs whose tasks all finished, one list per field (``job``:
    the job's index in ``Problem.job_ids``)."""

    job: list[int]
    tasks: list[int]
    first_arrival_s: list[float]
    first_start_s: list[float]
    last_finish_s: list[float]
    makespan_s: list[float]
    waiting_s: list[float]
    njsl: list[float]
    critical_path_s: list[float]
    deadline_missed: list[int | None]


def _job_columns(problem: Problem, schedule: Schedule, spans: _JobSpans,
                 missed: list[bool | None], task_jobs: npt.NDArray[np.int64]) -> JobColumns:
    """The job metrics, computed a column at a time (the same float operations as one job
    at a time)."""
    tasks = problem.tasks
    job_count = len(problem.job_ids)
    missed_per_job: list[int | None] = [None] * job_count
    for task, flag in enumerate(missed if missed.count(None) != len(missed) else ()):
        if flag is not None:
            job = tasks.job[task]
            missed_per_job[job] = (missed_per_job[job] or 0) + flag
    kept = np.flatnonzero(spans.sizes.astype(bool) & spans.complete)
    first_arrival = spans.first_arrival[kept]
    first_start = spans.first_start[kept]
    last_finish = spans.last_finish[kept]
    makespan = last_finish - first_arrival
    if schedule.time_model == "sc18":
        path = np.maximum(1.0, last_finish - first_start)
        njsl = np.floor(makespan / path)
    else:
        clocks = [c for c in problem.machines.clock_mhz if c is not None]
        per_task = _static_critical_paths(problem, max(clocks) if clocks else None)
        critical = np.zeros(job_count, dtype=np.float64)
        np.maximum.at(critical, task_jobs, np.asarray(per_task, dtype=np.float64))
        path = np.maximum(1.0, critical[kept])
        njsl = makespan / path
    jobs = kept.tolist()
    deadlines: list[int | None] = ([None] * len(jobs) if missed_per_job.count(None) == job_count
                 else [missed_per_job[job] for job in jobs])
    return JobColumns(jobs, spans.sizes[kept].tolist(), first_arrival.tolist(),
                      first_start.tolist(), last_finish.tolist(), makespan.tolist(),
                      (first_start - first_arrival).tolist(), njsl.tolist(), path.tolist(),
                      deadlines)


def _task_distributions(columns: _Columns) -> tuple[npt.NDArray[np.float64], ...]:
    """Waiting time, response time, slowdown and bounded slowdown of the finished tasks
    (computed a column at a time: the same float operations as one task at a time)."""
    done = columns.done
    end = columns.end[done]
    arrival = columns.arrival[done]
    run = end - columns.start[done]
    waits = columns.first_start[done] - arrival
    response = end - arrival
    positive = run > 0
    bounded = np.maximum(1.0, response / np.maximum(run, BOUNDED_SLOWDOWN_TAU_S))
    return waits, response, response[positive] / run[positive], bounded


def compute_metrics(problem: Problem, schedule: Schedule) -> RunMetrics:
    count = len(problem.tasks)
    columns = _Columns.of(problem, schedule)
    spans = _job_spans(problem, columns)
    sizes, complete = spans.sizes, spans.complete
    busy_core_s = spans.busy_core_s
    missed = deadline_misses(problem, schedule)
    job_columns = _job_columns(problem, schedule, spans, missed, columns.job)
    turnaround = spans.turnaround.tolist()
    unfinished = np.isnan(spans.turnaround)
    finished = (spans.turnaround[~unfinished].tolist() if unfinished.any() else turnaround)
    waits, responses, slowdowns, bounded = _task_distributions(columns)
    all_cores = sum(problem.machines.capacity) / CORE_UNITS
    horizon_start = float(columns.arrival.min()) if count else 0.0
    ends = columns.end[columns.done]
    horizon_end = float(ends.max()) if len(ends) else horizon_start
    horizon = horizon_end - horizon_start
    summary = Summary(
        policy=schedule.policy.name,
        time_model=schedule.time_model,
        seed=schedule.seed,
        tasks=count,
        jobs=int(np.count_nonzero(sizes)),
        trt_s=_mean(finished),
        jms_s=_mean(job_columns.makespan_s),
        njsl=_mean(job_columns.njsl),
        jwt_s=_mean(job_columns.waiting_s),
        utilisation=busy_core_s / (all_cores * horizon) if horizon > 0 and all_cores else 0.0,
        makespan_s=horizon,
        lost_core_s=schedule.lost_core_s,
        requeued=sum(schedule.attempts),
        unfinished_tasks=count - len(finished),
        unfinished_jobs=int(np.count_nonzero((sizes > 0) & ~complete)),
        cycles=schedule.cycles,
        deadline_tasks=len(missed) - missed.count(None),
        deadline_missed=missed.count(True),
        wait=Distribution.of(waits),
        response=Distribution.of(responses),
        slowdown=Distribution.of(slowdowns),
        bounded_slowdown=Distribution.of(bounded),
        killed=schedule.killed,
    )
    return RunMetrics(problem, schedule, turnaround, missed, job_columns, summary)
