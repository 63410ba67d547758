"""One cell as a task: what a worker needs to run it (a picklable ``CellTask`` next to the
compiled problem), the function it runs (``run_cell``) and the row it sends back.

A row holds every parameter of the cell, every metric of the scheduler's ``Summary``
(flattened: a distribution ``wait`` becomes ``wait_count``, ``wait_mean``, …, so a metric
added to ``Summary`` becomes a column without a change here), the wall time of the run, the
dcx version and the content hashes of the inputs. ``cell_key`` hashes what decides the
result: the inputs' contents and names, the scheduler's stages, the time model, the seed,
the options and the cell's parameters.

Cells travel in batches (``run_batch``; on Dask through a ``CellRunner`` on each worker): a
batch answers one outcome per cell, a row or a ``CellFailure`` (a cell that raises, or runs
past its limits, fails alone).

Metric columns are named as ``dcx schedule --output json`` names them (``Summary.headline``):
a distribution of seconds has ``_s`` after each statistic (``wait_mean_s``, ``wait_p99_s``),
and the utilization is ``utilization``, a fraction of 1. ``test_experiment`` holds the two
vocabularies together.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dcx.core.limits import paused_gc
from dcx.experiments.limits import ChildFailed, LimitExceeded, Limits, run_limited
from dcx.experiments.spec import Cell, Options
from dcx.scheduler.policies import Policy
from dcx.scheduler.problem import Problem

SKIPPED_SUMMARY_FIELDS = frozenset({"policy", "time_model", "seed"})
"""Summary fields that repeat a cell parameter."""
RENAMED_SUMMARY_FIELDS = {"utilisation": "utilization"}
"""Summary fields whose column takes the name ``dcx schedule --output json`` gives them."""
SECONDS_DISTRIBUTIONS = frozenset({"wait", "response"})
"""Distributions measured in seconds: their statistics' columns end in ``_s``."""


@functools.cache
def dcx_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dcx")
    except PackageNotFoundError:  # pragma: no cover - run from a checkout without install
        return "unknown"


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def scheduler_stages(policy: Policy) -> str:
    """The scheduler's identity as compact JSON: every field of its ``Policy`` (the stages
    and their parameters; a stage added to ``Policy`` joins without a change here)."""
    return json.dumps(dataclasses.asdict(policy), sort_keys=True, separators=(",", ":"),
                      default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def cell_key(cell: Cell, workload_sha256: str, environment_sha256: str,
             options: Options) -> str:
    """What decides a row, hashed: a stored row with this key is that cell's result."""
    identity: dict[str, Any] = {
        "workload": [cell.workload.name, workload_sha256],
        "environment": [cell.environment.name, environment_sha256],
        "scheduler": [cell.scheduler.name, scheduler_stages(cell.scheduler.policy)],
        "time_model": cell.time_model,
        "seed": cell.seed,
        "options": options.as_dict(),
    }
    if cell.parameters:  # absent otherwise: the keys of sweeps without parameters stay put
        identity["parameters"] = [[name, value] for name, value in cell.parameters]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class CellTask:
    """What travels to a worker with each cell (the problem travels once to each runner)."""

    key: str
    columns: dict[str, Any]
    """The cell's parameter columns, copied into its row."""
    policy: Policy
    time_model: str
    seed: int | None
    measure_stages: bool
    per_job: bool
    transforms: tuple[tuple[str, Any], ...] = ()
    """The workload transforms' parameter values (scheduler options are in ``policy``)."""
    limits: Limits = field(default_factory=Limits)
    schedule: bool = False
    """Send the run's schedule back (``experiments.schedules``)."""


@dataclass(frozen=True)
class CellResult:
    key: str
    row: dict[str, Any]
    jobs: list[dict[str, Any]] | None
    schedule: Any = None
    """With ``CellTask.schedule``: the run's schedule, a ``pyarrow.Table``."""


@dataclass(frozen=True)
class CellFailure:
    """A cell that did not give a row: ``kind`` is ``error`` (it raised), ``timeout`` or
    ``memory`` (past its limits) or ``lost`` (its worker died, again and again)."""

    key: str
    kind: str
    message: str
    columns: dict[str, Any]
    wall_s: float = math.nan

    def row(self) -> dict[str, Any]:
        """Its row of ``failures.parquet``."""
        from datetime import UTC, datetime

        return {**self.columns, "error_kind": self.kind, "error": self.message,
                "wall_s": _number(self.wall_s), "dcx_version": dcx_version(),
                "finished_at": datetime.now(UTC)}


Outcome = CellResult | CellFailure


def _number(value: Any) -> Any:
    """NaN (nothing to average) is stored as null, so the column stays numeric."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def metric_columns(summary: Any) -> dict[str, Any]:
    """Every field of ``Summary``, nested dataclasses flattened with ``_`` (``count`` is a
    count, not seconds)."""
    columns: dict[str, Any] = {}
    for item in dataclasses.fields(summary):
        if item.name in SKIPPED_SUMMARY_FIELDS:
            continue
        value = getattr(summary, item.name)
        if dataclasses.is_dataclass(value):
            unit = "_s" if item.name in SECONDS_DISTRIBUTIONS else ""
            for inner in dataclasses.fields(value):
                suffix = "" if inner.name == "count" else unit
                columns[f"{item.name}_{inner.name}{suffix}"] = _number(
                    getattr(value, inner.name))
        elif value is None:
            continue  # a distribution the run did not measure: its columns stay absent
        else:
            columns[RENAMED_SUMMARY_FIELDS.get(item.name, item.name)] = _number(value)
    return columns


BATCH_SWITCH_INTERVAL_S = 0.005
"""The interpreter's switch interval while a batch runs (Python's default, whatever the
process set): a Dask worker's event-loop thread waits up to one interval for the GIL at each
of its socket calls while a cell holds it, so a message to a busy worker (a finished
batch's result fetched, the next batch arriving) takes a few intervals: a long interval
delays the next batch. The loop sleeps between messages (Dask's profiler is off), so the
cells hardly pay for a short one."""


def run_batch(problem: Problem, tasks: list[CellTask]) -> list[Outcome]:
    """Run a batch of cells of one problem (on a worker, or inline), each alone: one that
    fails or runs past its limits is a ``CellFailure``; the others still run."""
    import sys

    interval = sys.getswitchinterval()
    sys.setswitchinterval(BATCH_SWITCH_INTERVAL_S)
    try:
        return _run_each(problem, tasks)
    finally:
        sys.setswitchinterval(interval)


class CellRunner:
    """A Dask actor, one per worker, that runs batches of cells on the worker's threads.

    A call goes from the client to the worker and back with no task for the scheduler to
    track: a batch costs the cores one round trip, not a task's life on the client, the
    scheduler and the worker. Each (workload, environment) problem travels once to each
    runner, with the first batch of its cells that the runner gets; later batches of it
    that arrive first (calls may overtake each other) wait for it. A batch travels as one
    pickle each way, made and read on the worker's thread, not its event loop: Dask would
    serialise a list of cells one by one, on the loop that answers the next call."""

    def __init__(self) -> None:
        self.problems: dict[Any, Problem] = {}
        self.arrived: dict[Any, Any] = {}
        """An ``asyncio.Event`` per problem, set once it is here."""

    async def run(self, pair: Any, payload: bytes, carries_problem: bool) -> bytes:
        """``payload``: the pickled ``(tasks, problem or None)``; the pickled outcomes."""
        import asyncio

        from distributed import get_worker

        worker = get_worker()
        loop = asyncio.get_running_loop()
        arrived = self.arrived.setdefault(pair, asyncio.Event())
        if not carries_problem:
            await arrived.wait()
        return await loop.run_in_executor(worker.executor, self._run, pair, payload,
                                          lambda: loop.call_soon_threadsafe(arrived.set))

    def _run(self, pair: Any, payload: bytes, problem_here: Callable[[], object]) -> bytes:
        import pickle

        tasks, problem = pickle.loads(payload)
        if problem is not None:
            self.problems[pair] = problem
            problem_here()
        return pickle.dumps(run_batch(self.problems[pair], tasks),
                            protocol=pickle.HIGHEST_PROTOCOL)


def _run_each(problem: Problem, tasks: list[CellTask]) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for task in tasks:
        began = time.perf_counter()
        try:
            outcomes.append(run_limited(functools.partial(run_cell, problem, task),
                                        task.limits))
        except LimitExceeded as exc:
            outcomes.append(CellFailure(task.key, exc.kind, str(exc), task.columns,
                                        time.perf_counter() - began))
        except ChildFailed as exc:
            outcomes.append(CellFailure(task.key, "error", str(exc), task.columns,
                                        time.perf_counter() - began))
        except Exception as exc:  # the cell's own error: the sweep goes on and keeps it
            outcomes.append(CellFailure(task.key, "error", f"{type(exc).__name__}: {exc}",
                                        task.columns, time.perf_counter() - began))
    return outcomes


def run_cell(problem: Problem, task: CellTask) -> CellResult:
    """Run one cell and measure it: its workload transforms, then the scheduler."""
    from datetime import UTC, datetime

    from dcx.experiments.transforms import OFFERED_LOAD, apply_transforms, offered_load
    from dcx.scheduler.report import stage_totals
    from dcx.scheduler.runs import run_policy

    began = time.perf_counter()
    problem = apply_transforms(problem, dict(task.transforms))
    with paused_gc():  # a run makes no cycles; a worker's heap is large to rescan
        run = run_policy(problem, task.policy, task.time_model, task.seed, task.measure_stages)
    wall_s = time.perf_counter() - began
    row = {**task.columns, OFFERED_LOAD: _number(offered_load(problem)),
           **metric_columns(run.metrics.summary)}
    if task.measure_stages:
        for stage, nanoseconds in stage_totals(run.schedule).items():
            row[f"stage_{stage}_s"] = nanoseconds / 1e9
    row["wall_s"] = wall_s
    row["dcx_version"] = dcx_version()
    row["finished_at"] = datetime.now(UTC)
    jobs = None
    if task.per_job:
        jobs = [{"cell_key": task.key, "job_id": str(job.job_id),
                 **{field.name: _number(getattr(job, field.name))
                    for field in dataclasses.fields(job) if field.name != "job_id"}}
                for job in run.metrics.jobs]
    schedule = None
    if task.schedule:
        from dcx.experiments.schedules import schedule_table

        schedule = schedule_table(task.key, run.metrics.problem, run.schedule)
    return CellResult(task.key, row, jobs, schedule)
