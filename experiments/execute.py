"""Plan a sweep and run it: inline (one process) or on a Dask cluster.

Planning reads every input file once to hash it, builds each cell's key and leaves out the
cells whose key is already stored. Only the (workload, environment) pairs that still have
cells to run are read and compiled, once each, in this process.

On Dask, each compiled problem is scattered to the workers once (``broadcast``) and cells
refer to it; a cell's seed is in its arguments and its key is its own (``cell_key``), so
two cells that look alike are never merged. Cells are submitted in a bounded window (a few
per worker thread, topped up as results come back), so a sweep of 100,000 cells never has
more than a few hundred tasks on the scheduler. A cell whose worker dies is rerun by the
scheduler elsewhere (``distributed.scheduler.allowed-failures``); a cell that raises is
retried ``RETRIES`` times before it counts as failed.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcx.core.diagnostics import Diagnostic
from dcx.experiments.cells import (
    CellResult,
    CellTask,
    cell_key,
    file_sha256,
    run_cell,
    scheduler_stages,
)
from dcx.experiments.spec import Cell, Experiment, Input
from dcx.scheduler.problem import Problem

RETRIES = 2
RESUBMISSIONS = 3
TASKS_PER_THREAD = 8
"""The submission window: this many cells in flight per worker thread."""
MIN_WINDOW = 16

Pair = tuple[str, str]
"""(workload name, environment name)."""


@dataclass
class Plan:
    """The cells of an experiment and what is left to run."""

    experiment: Experiment
    keys: list[str] = field(default_factory=list)
    """Every cell's key, in cell order."""
    pending: dict[Pair, list[tuple[Cell, CellTask]]] = field(default_factory=dict)
    unreadable: list[Diagnostic] = field(default_factory=list)

    @property
    def pending_count(self) -> int:
        return sum(len(cells) for cells in self.pending.values())


def _hash_of(item: Input, hashes: dict[Path, str | None],
             problems: list[Diagnostic]) -> str | None:
    """The file's SHA-256 (read once per path); ``None`` and one diagnostic per unreadable
    file, however many cells name it."""
    from dcx.core.diagnostics import error

    if item.path is None:
        return "own"
    if item.path not in hashes:
        try:
            hashes[item.path] = file_sha256(item.path.read_bytes())
        except OSError as exc:
            hashes[item.path] = None
            problems.append(error(f"cannot read file: {exc.strerror or type(exc).__name__}",
                                  "schedule.unreadable").at(str(item.path)))
    return hashes[item.path]


def plan(experiment: Experiment, stored: set[str]) -> Plan:
    found = Plan(experiment)
    hashes: dict[Path, str | None] = {}
    options = experiment.options.as_dict()
    for index, cell in enumerate(experiment.cells()):
        workload_sha = _hash_of(cell.workload, hashes, found.unreadable)
        environment_sha = _hash_of(cell.environment, hashes, found.unreadable)
        if workload_sha is None or environment_sha is None:
            continue
        if environment_sha == "own":
            environment_sha = workload_sha
        key = cell_key(cell, workload_sha, environment_sha, experiment.options)
        found.keys.append(key)
        if key in stored:
            continue
        columns = {
            "cell_key": key, "experiment": experiment.name,
            "workload": cell.workload.name, "environment": cell.environment.name,
            "scheduler": cell.scheduler.name, "time_model": cell.time_model,
            "seed": cell.seed, "repetition": cell.repetition, "cell_index": index,
            "workload_path": str(cell.workload.path),
            "environment_path": str(cell.environment.path or cell.workload.path),
            "workload_sha256": workload_sha, "environment_sha256": environment_sha,
            "scheduler_stages": scheduler_stages(cell.scheduler.policy),
            "options": ",".join(f"{name}={str(value).lower()}"
                                for name, value in sorted(options.items())),
        }
        task = CellTask(key, columns, cell.scheduler.policy, cell.time_model, cell.seed,
                        experiment.options.measure_stages, experiment.options.per_job)
        pair = (cell.workload.name, cell.environment.name)
        found.pending.setdefault(pair, []).append((cell, task))
    return found


def compile_pairs(found: Plan, report: Callable[[Diagnostic], None],
                  advance: Callable[[], None] = lambda: None,
                  ) -> tuple[dict[Pair, Problem], set[Pair]]:
    """Read and compile each pending (workload, environment) pair once. Diagnostics go to
    ``report``; pairs that cannot be scheduled are returned as failed."""
    from dcx.scheduler.loading import load_problem

    problems: dict[Pair, Problem] = {}
    failed: set[Pair] = set()
    for pair, cells in found.pending.items():
        cell = cells[0][0]
        assert cell.workload.path is not None
        loaded = load_problem(cell.workload.path, cell.environment.path)
        for diagnostic in loaded.diagnostics:
            report(diagnostic)
        if loaded.ok and loaded.problem is not None:
            problems[pair] = loaded.problem
            if not _runnable(found, pair, loaded.problem, cell.workload.path, report):
                failed.add(pair)
        else:
            failed.add(pair)
        advance()
    return problems, failed


def _runnable(found: Plan, pair: Pair, problem: Problem, workload: Path,
              report: Callable[[Diagnostic], None]) -> bool:
    """What ``dcx schedule`` says once per workload about the pair's schedulers: a warning
    when requested times stand in from runtimes for a scheduler that reads them, an error
    (and those cells left out) when a reserving scheduler meets resources beyond cores or
    when under a scheduler's R2/R3 filters a task could never start."""
    from dcx.core.diagnostics import error, warning
    from dcx.scheduler.resource_stages import static_filter_diagnostics

    cells = found.pending[pair]
    policies = {task.policy for _, task in cells}
    readers = [p for p in policies if p.reserves or p.task_order in ("SJF", "LJF")]
    missing = problem.tasks.requested_from_runtime
    if readers and missing:
        report(warning(
            f"{missing} of {len(problem.tasks)} task(s) have no requested time; their "
            "runtime stands in (an exact estimate)", "schedule.runtime-as-requested",
        ).at(str(workload)))
    reserving = sorted({p.name for p in policies if p.reserves})
    if reserving and problem.machines.dimensions:
        names = ", ".join(d.name for d in problem.machines.dimensions)
        report(error(
            f"{', '.join(reserving)} place(s) and reserve(s) cores only, and these tasks also "
            f"ask for {names} on {pair[1]}; their cells are left out",
            "schedule.reservation-resources").at(str(workload)))
        found.pending[pair] = [(cell, task) for cell, task in cells
                               if not task.policy.reserves]
        return False
    diagnostics, blocked = static_filter_diagnostics(
        problem, sorted(policies, key=lambda policy: policy.name))
    for diagnostic in diagnostics:
        report(diagnostic.at(str(workload)))
    if blocked:
        found.pending[pair] = [(cell, task) for cell, task in cells
                               if task.policy.name not in blocked]
        return False
    return True


def tasks_of(found: Plan, problems: dict[Pair, Problem]) -> Iterator[tuple[Pair, CellTask]]:
    for pair, cells in found.pending.items():
        if pair in problems:
            for _, task in cells:
                yield pair, task


# ------------------------------------------------------------------------------ running


@dataclass
class CellFailure:
    key: str
    message: str


def run_inline(found: Plan, problems: dict[Pair, Problem],
               on_result: Callable[[CellResult], None],
               on_failure: Callable[[CellFailure], None]) -> None:
    """Every cell in this process, one after the other."""
    for pair, task in tasks_of(found, problems):
        try:
            result = run_cell(problems[pair], task)
        except Exception as exc:  # a bug in a cell: the sweep goes on, the cell is reported
            on_failure(CellFailure(task.key, f"{type(exc).__name__}: {exc}"))
        else:
            on_result(result)


def run_dask(found: Plan, problems: dict[Pair, Problem], client: Any,
             on_result: Callable[[CellResult], None],
             on_failure: Callable[[CellFailure], None]) -> None:
    """Every cell on the cluster behind ``client``, results handed over as they finish.

    Cells go out in batches (one ``client.map`` per problem) whenever half of the window
    has come back. A scattered problem can be lost with the worker holding its last copy
    (the scheduler keeps fewer copies than ``broadcast`` made once no task waits on them);
    the cells that needed it are cancelled, the problem is scattered again and they are
    resubmitted, up to ``RESUBMISSIONS`` times each."""
    from concurrent.futures import CancelledError

    from distributed import as_completed

    shipped: dict[Pair, Any] = {}
    submitted: dict[str, tuple[Pair, CellTask]] = {}
    resubmitted: dict[str, int] = {}
    todo = tasks_of(found, problems)
    sized_at = -math.inf
    window = MIN_WINDOW
    running = as_completed()

    def ship(pair: Pair) -> Any:
        future = shipped.get(pair)
        if future is None or future.status != "finished":
            shipped[pair] = _scatter(client, problems[pair])
        return shipped[pair]

    def submit(batch: list[tuple[Pair, CellTask]]) -> None:
        by_pair: dict[Pair, tuple[list[CellTask], list[str]]] = {}
        for pair, task in batch:
            again = resubmitted.get(task.key, 0)  # a fresh key: a cancelled one may linger
            key = f"dcx-cell-{task.key}" + (f"-{again}" if again else "")
            submitted[key] = (pair, task)
            tasks, keys = by_pair.setdefault(pair, ([], []))
            tasks.append(task)
            keys.append(key)
        for pair, (tasks, keys) in by_pair.items():
            running.update(client.map(run_cell, [ship(pair)] * len(tasks), tasks, key=keys,
                                      pure=False, retries=RETRIES))

    def top_up() -> None:
        """Refill the window once half of it came back; the window follows the cluster's
        threads (a dask-jobqueue cluster grows while the sweep runs), asked at most once a
        second."""
        nonlocal sized_at, window
        if time.monotonic() - sized_at >= 1.0:
            threads = sum(client.nthreads().values())
            window = max(threads * TASKS_PER_THREAD, MIN_WINDOW)
            sized_at = time.monotonic()
        if running.count() > window // 2:
            return
        submit(list(itertools.islice(todo, window - running.count())))

    top_up()
    for future in running:
        pair, task = submitted.pop(str(future.key))
        try:
            result = future.result()
        except CancelledError as exc:  # its problem was lost with a worker
            if resubmitted.get(task.key, 0) < RESUBMISSIONS:
                resubmitted[task.key] = resubmitted.get(task.key, 0) + 1
                future.release()
                submit([(pair, task)])
                continue
            on_failure(CellFailure(task.key, f"cancelled: {exc}"))
        except Exception as exc:  # a bug in a cell, or a cell that killed its workers
            on_failure(CellFailure(task.key, f"{type(exc).__name__}: {exc}"))
        else:
            on_result(result)
        future.release()
        top_up()


def _scatter(client: Any, problem: Problem, attempts: int = 20) -> Any:
    """Send a problem to every worker; while a dead worker is still listed (the scheduler
    learns of a death a moment later), send it to one worker again and again, the others
    fetching it when a cell needs it."""
    import time

    for attempt in range(attempts):
        try:
            return client.scatter(problem, broadcast=attempt == 0, hash=False)
        except Exception:  # CommClosedError, OSError: a worker that is gone
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def say(message: str) -> None:
    print(message, file=sys.stderr)
