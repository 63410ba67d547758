"""Plan a sweep and run it: inline (one process) or on a Dask cluster.

Planning reads every input file once to hash it, builds each cell's key and leaves out the
cells whose key is already stored (and those that failed before, unless they are to be
retried). A cell whose input cannot be read is counted and reported once per input, at the
line of the experiment file that names it. Only the (workload, environment) pairs that
still have cells to run are read and compiled, once each, in this process.

On Dask, cells go out in batches of one problem (``run_batch``), in a shuffled order
(``spread_order``): a share of the cells left, shrinking as the sweep ends (factoring), the
first two per thread at most ``FIRST_BATCH`` and ``SECOND_BATCH`` cells (their cost is not
known yet), the others never longer than about ``BATCH_TARGET_S`` by the cells' measured
wall time, nor shorter than ``MIN_BATCH_S`` while there are enough. Each thread's first
batch carries its compiled problem (when small, ``INLINE_TASKS``), so the first cells start
at once; every problem is then scattered to the workers once (``broadcast``) and the other
batches refer to it. Short cells then cost one task per batch, not one each: the client and
the scheduler, which share this process and the machine's cores with the workers, handle a
few dozen tasks for a sweep, not one per cell. Batches are submitted in a bounded window
(two per worker thread to the end, topped up as results come back, before their rows are
stored), so a worker finds its next batch queued when one ends (Dask places each new batch
on the worker that has just freed a slot) and a sweep of 100,000 cells never has more than
a few tasks per thread on the scheduler. A batch whose worker dies is rerun by the scheduler
elsewhere (``distributed.scheduler.allowed-failures``); a cell that raises fails alone, in
its batch.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcx.core.diagnostics import Diagnostic
from dcx.experiments.cells import (
    CellFailure,
    CellResult,
    CellTask,
    Outcome,
    cell_key,
    file_sha256,
    run_batch,
    scheduler_stages,
)
from dcx.experiments.spec import Cell, Experiment, Input
from dcx.experiments.transforms import WORKLOAD_PARAMETERS, with_options
from dcx.scheduler.problem import Problem

RESUBMISSIONS = 3
BATCHES_PER_THREAD = 2
"""The submission window: this many batches in flight per worker thread, to the end (one
running, one waiting on it, so a worker never waits a round trip for the next; the last
ones are small, so one queued behind a running batch holds the sweep's end up little)."""
FACTORING = 2
"""Each batch takes this fraction's inverse of the unsent cells per worker thread."""
BATCH_TARGET_S = 1.0
"""The longest wall time a batch aims at, once the cells' own wall time is known: a task's
round trip costs the client, the scheduler and a worker several milliseconds of CPU on the
cores the cells use, about 1 % of this; a batch lost with its worker costs this again."""
MIN_BATCH_S = 0.05
"""The least wall time of cells a batch takes while there are enough for every thread: each
task costs the cores several milliseconds of CPU (the client and the scheduler in this
process, the worker's event loop), and a last batch this short, queued on a worker behind
its running one, leaves another worker idle only briefly when the cells run out."""
FIRST_BATCH = 16
"""The most cells of a thread's first batch, sent before any cell's wall time is known: a
share of the sweep as any batch (not one cell, whose round trip would leave the worker idle
and cost a task more), bounded for cells that turn out long."""
SECOND_BATCH = 4
"""The most cells of a thread's second batch, also sent before any wall time is known, so
that the thread has it queued when its first ends (no idle round trip) while the first
batches' wall times size the rest; few, as the cells may turn out long."""
MAX_BATCH = 256
WATCH_S = 1.0
"""How often the loop wakes without a result: to check the workers and report progress."""
BROADCAST_TIMEOUT_S = 10.0
"""How long sending a problem to every worker may take before it goes to one instead."""
INLINE_TASKS = 10_000
"""A problem of at most this many tasks travels inside each thread's first batch, so the
workers start on their first cells while it is broadcast for the others; a larger one is
broadcast first (its cells are long, so the wait is small beside them, and it is not sent
twice)."""

Pair = tuple[str, str]
"""(workload name, environment name)."""


@dataclass
class Plan:
    """The cells of an experiment and what is left to run."""

    experiment: Experiment
    keys: list[str] = field(default_factory=list)
    """Every cell's key, in cell order (cells of unreadable inputs have none)."""
    pending: dict[Pair, list[tuple[Cell, CellTask]]] = field(default_factory=dict)
    unreadable: list[Diagnostic] = field(default_factory=list)
    unreadable_cells: int = 0
    """Cells not run because an input cannot be read."""
    failed_before: int = 0
    """Cells that failed in an earlier run and are not retried."""

    @property
    def pending_count(self) -> int:
        return sum(len(cells) for cells in self.pending.values())

    @property
    def total(self) -> int:
        return len(self.keys) + self.unreadable_cells


def _hash_of(item: Input, hashes: dict[Path, str | None]) -> str | None:
    """The file's SHA-256, read once per path; ``None`` when it cannot be read."""
    if item.path is None:
        return "own"
    if item.path not in hashes:
        try:
            hashes[item.path] = _content_sha256(item.path)
        except OSError:
            hashes[item.path] = None
    return hashes[item.path]


def _content_sha256(path: Path) -> str:
    """A file's SHA-256; for a format stored as a folder (an OpenDC workload), that of its
    files' relative names and contents, in name order."""
    if not path.is_dir():
        return file_sha256(path.read_bytes())
    import hashlib

    digest = hashlib.sha256()
    for member in sorted(p for p in path.rglob("*") if p.is_file()):
        name = member.relative_to(path).as_posix().encode()
        digest.update(len(name).to_bytes(8, "big") + name)
        digest.update(bytes.fromhex(file_sha256(member.read_bytes())))
    return digest.hexdigest()


def _unreadable(item: Input, cells: int, experiment: Experiment) -> Diagnostic:
    from dcx.core.diagnostics import error

    assert item.path is not None
    try:
        _content_sha256(item.path)
        reason = "it changed while the sweep was planned"
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    return error(f"cannot read {item.path}: {reason}; its {cells} cell(s) are not run",
                 "experiment.input-unreadable", pointer=item.pointer, line=item.line,
                 column=item.column).at(str(experiment.path))


def plan(experiment: Experiment, stored: set[str], failed: frozenset[str] | set[str] = frozenset(),
         retry_failed: bool = False) -> Plan:
    """Every cell's key, and the cells to run: those not stored, nor failed before (unless
    ``retry_failed``)."""
    found = Plan(experiment)
    hashes: dict[Path, str | None] = {}
    blocked: dict[str, tuple[Input, int]] = {}
    options = experiment.options.as_dict()
    for index, cell in enumerate(experiment.cells()):
        workload_sha = _hash_of(cell.workload, hashes)
        environment_sha = _hash_of(cell.environment, hashes)
        if workload_sha is None or environment_sha is None:
            found.unreadable_cells += 1
            for item, sha in ((cell.workload, workload_sha), (cell.environment, environment_sha)):
                if sha is None:
                    counted = blocked.get(item.pointer, (item, 0))[1]
                    blocked[item.pointer] = (item, counted + 1)
            continue
        if environment_sha == "own":
            environment_sha = workload_sha
        parameters = dict(cell.parameters)
        policy = with_options(cell.scheduler.policy, parameters)
        key = cell_key(cell, workload_sha, environment_sha, experiment.options)
        found.keys.append(key)
        if key in stored:
            continue
        if key in failed and not retry_failed:
            found.failed_before += 1
            continue
        columns = {
            "cell_key": key, "experiment": experiment.name,
            "workload": cell.workload.name, "environment": cell.environment.name,
            "scheduler": cell.scheduler.name, "time_model": cell.time_model,
            "seed": cell.seed, "repetition": cell.repetition, "cell_index": index,
            "parameters": ",".join(f"{name}={value}" for name, value in cell.parameters),
            **{name: _column_value(value) for name, value in cell.parameters},
            "workload_path": str(cell.workload.path),
            "environment_path": str(cell.environment.path or cell.workload.path),
            "workload_sha256": workload_sha, "environment_sha256": environment_sha,
            "scheduler_stages": scheduler_stages(policy),
            "options": ",".join(f"{name}={str(value).lower()}"
                                for name, value in sorted(options.items())),
        }
        transforms = tuple((name, value) for name, value in cell.parameters
                           if name in WORKLOAD_PARAMETERS)
        task = CellTask(key, columns, policy, cell.time_model, cell.seed,
                        experiment.options.measure_stages, experiment.options.per_job,
                        transforms, experiment.limits, experiment.options.schedules)
        pair = (cell.workload.name, cell.environment.name)
        found.pending.setdefault(pair, []).append((cell, task))
    found.unreadable = [_unreadable(item, cells, experiment)
                        for item, cells in blocked.values()]
    return found


def _column_value(value: Any) -> Any:
    """A parameter's column: numbers as floats (one type per column), a word (``trace``)
    as null."""
    return float(value) if isinstance(value, int | float) else None


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
    (and those cells left out) when under a scheduler's R2/R3 filters a task could never
    start."""
    from dcx.core.diagnostics import warning
    from dcx.scheduler.resource_stages import static_filter_diagnostics

    cells = found.pending[pair]
    policies = {task.policy for _, task in cells}
    readers = [p for p in policies if p.reserves or p.task_order in ("SJF", "LJF")]
    missing = problem.tasks.requested_from_runtime
    if readers and missing and not all(
            dict(task.transforms).get("requested_accuracy", "trace") != "trace"
            for _, task in cells):
        report(warning(
            f"{missing} of {len(problem.tasks)} task(s) have no requested time; their "
            "runtime stands in (an exact estimate)", "schedule.runtime-as-requested",
        ).at(str(workload)))
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


def spread_order(count: int) -> list[int]:
    """``range(count)`` shuffled, the same way every run: neighbouring cells of a sweep cost
    alike (one scheduler at close loads, one workload's seeds), so cells sent in sweep order
    would make batches of cheap cells first and dear ones last; in this order a batch is a
    sample of the whole, whatever the axes' sizes, and costs about its share of it."""
    import random

    order = list(range(count))
    random.Random(count).shuffle(order)
    return order


def spread_tasks(found: Plan, problems: dict[Pair, Problem],
                 ) -> Iterator[tuple[Pair, CellTask]]:
    """The cells of each pair in ``spread_order``, pair after pair (a batch is of one
    pair)."""
    for pair, cells in found.pending.items():
        if pair in problems:
            for index in spread_order(len(cells)):
                yield pair, cells[index][1]


# ------------------------------------------------------------------------------ running


Handler = Callable[[Outcome], None]


def deliver(outcome: Outcome, on_result: Callable[[CellResult], None],
            on_failure: Callable[[CellFailure], None]) -> None:
    if isinstance(outcome, CellResult):
        on_result(outcome)
    else:
        on_failure(outcome)


def run_inline(found: Plan, problems: dict[Pair, Problem],
               on_result: Callable[[CellResult], None],
               on_failure: Callable[[CellFailure], None]) -> None:
    """Every cell in this process, one after the other."""
    for pair, task in tasks_of(found, problems):
        for outcome in run_batch(problems[pair], [task]):
            deliver(outcome, on_result, on_failure)


@dataclass
class Watch:
    """What the Dask loop reports while it waits: the worker count as it changes, and a
    tick for the progress display."""

    on_workers: Callable[[int, int], None] = lambda before, now: None
    """``(workers before, workers now)`` whenever the count changes to or from zero."""
    on_tick: Callable[[], None] = lambda: None


class _Batcher:
    """Batch sizes by factoring: each batch a share of the cells not yet sent
    (``1 / (FACTORING * threads)``), so that batches shrink as the sweep ends and the last
    ones leave no worker idle long, yet a short sweep goes out in a few batches per worker;
    until a cell has come back (its wall time is not known yet) two batches per thread, of at
    most ``FIRST_BATCH`` and ``SECOND_BATCH`` cells.
    A batch is worth at least ``MIN_BATCH_S`` of cells (a task's own round trip costs the
    client, the scheduler and the worker a few milliseconds of CPU), unless that would
    leave a thread without one at the end; it never takes longer than about
    ``BATCH_TARGET_S``, nor holds more than ``MAX_BATCH`` cells: a batch lost with its
    worker is rerun whole, and its rows arrive together."""

    def __init__(self, total: int) -> None:
        self.left = total
        self.sent = 0
        """Batches sent so far."""
        self.walls: list[float] = []

    def took(self, cells: int) -> None:
        """A batch of ``cells`` went out."""
        self.left -= cells
        self.sent += 1

    def record(self, wall_s: float) -> None:
        if not math.isnan(wall_s):
            self.walls.append(wall_s)

    @property
    def probing(self) -> bool:
        return not self.walls

    def size(self, threads: int) -> int:
        threads = max(1, threads)
        if not self.walls:
            blind = FIRST_BATCH if self.sent < threads else SECOND_BATCH
            return max(1, min(MAX_BATCH, blind, math.ceil(self.left / (FACTORING * threads))))
        mean = max(sum(self.walls[-64:]) / len(self.walls[-64:]), 1e-4)
        share = math.ceil(self.left / (FACTORING * threads))
        smallest = min(math.ceil(MIN_BATCH_S / mean), math.ceil(self.left / threads))
        return max(1, min(MAX_BATCH, max(share, smallest), int(BATCH_TARGET_S / mean)))


def run_dask(found: Plan, problems: dict[Pair, Problem], client: Any,
             on_result: Callable[[CellResult], None],
             on_failure: Callable[[CellFailure], None], watch: Watch | None = None,
             stop_profilers: bool = True) -> None:
    """Every cell on the cluster behind ``client``, outcomes handed over as they finish.
    ``stop_profilers``: tell the workers to stop Dask's profiler (``quiet_workers``), a
    round trip to every worker; needless on a cluster started by ``local_client``, whose
    workers never run it.

    A scattered problem can be lost with the worker holding its last copy (the scheduler
    keeps fewer copies than ``broadcast`` made once no task waits on them); the batches that
    needed it are cancelled, the problem is scattered again and they are resubmitted, up to
    ``RESUBMISSIONS`` times each."""
    from concurrent.futures import CancelledError

    from distributed import wait

    sweep = _DaskSweep(found, problems, client, watch or Watch())
    if stop_profilers:
        quiet_workers(client)
    sweep.top_up()
    while sweep.running or not sweep.sent_all:
        if not sweep.running:  # no worker yet: wait for one
            time.sleep(WATCH_S)
            sweep.watch.on_tick()
            sweep.top_up()
            continue
        try:
            done, _ = wait(list(sweep.running), timeout=WATCH_S, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        except CancelledError:  # some lost their problem with a worker: handled below
            done = {future for future in sweep.running if future.done()}
        finished = [sweep.outcomes(future) for future in done]
        # the next batches go out before the rows are stored: a worker waiting for its next
        # batch waits for this process, not for the writes too
        sweep.top_up()
        for outcomes in finished:
            for outcome in outcomes:
                deliver(outcome, on_result, on_failure)
        sweep.watch.on_tick()


class _DaskSweep:
    """``run_dask``'s state: the problems shipped to the cluster, the batches in flight (a
    window that follows the cluster's threads) and the cells still to send."""

    def __init__(self, found: Plan, problems: dict[Pair, Problem], client: Any,
                 watch: Watch) -> None:
        self.problems, self.client, self.watch = problems, client, watch
        self.shipped: dict[Pair, Any] = {}
        self.submitted: dict[str, tuple[Pair, list[CellTask], int]] = {}
        self.running: set[Any] = set()
        self.todo = spread_tasks(found, problems)
        self.batcher = _Batcher(sum(1 for _ in tasks_of(found, problems)))
        self.sized_at = -math.inf
        self.threads = 1
        self.workers = -1
        self.serial = itertools.count()
        self.sent_all = False

    def ship_all(self) -> None:
        """Every problem not shipped yet to every worker in one call, once the first
        batches are out (they carry a small problem, ``INLINE_TASKS``): a worker lost later
        costs a problem sent again to the workers left, not a broadcast that waits on the
        dead one."""
        pairs = [pair for pair in self.problems if pair not in self.shipped]
        if pairs:
            shipped = _scatter(self.client, [self.problems[pair] for pair in pairs])
            self.shipped.update(zip(pairs, shipped, strict=True))

    def ship(self, pair: Pair) -> Any:
        future = self.shipped.get(pair)
        if future is None or future.status != "finished":
            [self.shipped[pair]] = _scatter(self.client, [self.problems[pair]])
        return self.shipped[pair]

    def problem_of(self, pair: Pair, first: bool) -> Any:
        """What a batch gets as its problem: a thread's first batch the problem itself when
        it is small and not shipped yet (no round trip before the first cells), any other
        the shipped copy."""
        problem = self.problems[pair]
        if first and pair not in self.shipped and len(problem.tasks) <= INLINE_TASKS:
            return problem
        return self.ship(pair)

    def submit(self, pair: Pair, tasks: list[CellTask], again: int = 0,
               first: bool = False) -> None:
        key = f"dcx-batch-{tasks[0].key[:16]}-{next(self.serial)}"  # never merged or reused
        self.submitted[key] = (pair, tasks, again)
        self.running.add(self.client.submit(run_batch, self.problem_of(pair, first), tasks,
                                            key=key, pure=False))

    def top_up(self) -> None:
        """Keep the window full; it follows the cluster's threads (a dask-jobqueue cluster
        grows while the sweep runs), asked at most once a second. Nothing is sent while
        the cluster has no worker."""
        self.count_threads()
        if self.workers == 0 or self.sent_all:
            return
        while len(self.running) < self.threads * BATCHES_PER_THREAD:
            first = self.batcher.sent < self.threads
            if not first:
                self.ship_all()  # while the first batches run
            batch = list(itertools.islice(self.todo, self.batcher.size(self.threads)))
            if not batch:
                self.sent_all = True
                return
            self.batcher.took(len(batch))
            by_pair: dict[Pair, list[CellTask]] = {}
            for pair, task in batch:
                by_pair.setdefault(pair, []).append(task)
            for pair, tasks in by_pair.items():
                self.submit(pair, tasks, first=first)

    def count_threads(self) -> None:
        """The cluster's workers and threads, asked at most once a ``WATCH_S``; the watch
        hears when the cluster loses its last worker or gets one back."""
        if time.monotonic() - self.sized_at < WATCH_S:
            return
        counts = self.client.nthreads()
        now = len(counts)
        if (now == 0) != (self.workers == 0) and not (self.workers < 0 and now > 0):
            self.watch.on_workers(self.workers, now)
        self.workers, self.threads = now, max(1, sum(counts.values()))
        self.sized_at = time.monotonic()

    def outcomes(self, future: Any) -> list[CellResult | CellFailure]:
        """A finished batch's outcomes (recorded for batch sizing); none when it was
        resubmitted, having lost its problem with a worker."""
        from concurrent.futures import CancelledError

        self.running.discard(future)
        pair, tasks, again = self.submitted.pop(str(future.key))
        outcomes: list[CellResult | CellFailure]
        try:
            outcomes = future.result()
        except CancelledError as exc:  # its problem was lost with a worker
            future.release()
            if again < RESUBMISSIONS:
                self.submit(pair, tasks, again + 1)
                return []
            outcomes = [CellFailure(task.key, "lost", f"cancelled: {exc}", task.columns)
                        for task in tasks]
        except Exception as exc:  # the batch killed its workers, again and again
            outcomes = [CellFailure(task.key, "lost", f"{type(exc).__name__}: {exc}",
                                    task.columns) for task in tasks]
        future.release()
        for outcome in outcomes:
            self.batcher.record(outcome.row["wall_s"] if isinstance(outcome, CellResult)
                                else outcome.wall_s)
        return outcomes


def quiet_workers(client: Any) -> None:
    """Stop the statistical profiler of every worker of the cluster, now and as workers
    join: it samples the running cell's stack every 10 ms, taking the GIL from it, and a
    simulation is nothing but Python frames (its cells cost a third more CPU with it)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class QuietWorker(WorkerPlugin):
        name = "dcx-quiet-worker"

        def setup(self, worker: Any) -> None:
            for callback in ("profile", "profile-cycle"):
                found = worker.periodic_callbacks.get(callback)
                if found is not None:
                    found.stop()

    client.register_plugin(QuietWorker())


def _scatter(client: Any, problems: list[Problem], attempts: int = 20) -> list[Any]:
    """Send problems to every worker (a batch goes only to a worker that holds its problem),
    the broadcast bounded in time: one to a worker that dies meanwhile waits on it for ever.
    When it fails or times out (a dead worker still listed: the scheduler learns of a death
    a moment later), send them to one worker again and again, the others fetching them when
    a cell needs one."""
    for attempt in range(attempts):
        try:
            if attempt == 0:
                return list(client.sync(_broadcast, client, problems))
            return list(client.scatter(problems, hash=False))
        except Exception:  # CommClosedError, OSError, TimeoutError: a worker that is gone
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


async def _broadcast(client: Any, problems: list[Problem]) -> Any:
    import asyncio

    return await asyncio.wait_for(
        client.scatter(problems, broadcast=True, hash=False, asynchronous=True),
        BROADCAST_TIMEOUT_S)
