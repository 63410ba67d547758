"""Plan a sweep and run it: inline (one process) or on a Dask cluster.

Planning reads every input file once to hash it, builds each cell's key and leaves out the
cells whose key is already stored (and those that failed before, unless they are to be
retried). A cell whose input cannot be read is counted and reported once per input, at the
line of the experiment file that names it. Only the (workload, environment) pairs that
still have cells to run are read and compiled, once each, in this process.

On Dask, cells go out in batches of one problem, as calls to a runner on each worker (a Dask
actor, ``cells.CellRunner``, started as workers are seen), in a shuffled order
(``spread_order``). A call goes to the worker and back without a task for the scheduler to
track, so a batch costs the cores one round trip, not a task's life on the client, the
scheduler and the worker (several milliseconds of CPU each on the cores the cells use).
Each problem travels to each runner once, with the first batch of its cells that runner
gets. Batch sizes follow factoring: a share of the cells left, shrinking as the sweep ends,
the first two per thread at most ``FIRST_BATCH`` and ``SECOND_BATCH`` cells (their cost is
not known yet), the others never longer than about ``BATCH_TARGET_S`` by the cells'
measured wall time, nor shorter than ``MIN_BATCH_S`` while there are enough. Each runner
holds two batches per worker thread to the end, topped up as results come back (before
their rows are stored), so a worker finds its next batch there when one ends, and a sweep
of 100,000 cells never has more than a few batches per thread out. A batch whose worker is
lost (it died, or left the cluster) goes out again to another; one lost twice goes out cell
by cell, so a cell that kills its worker fails alone, as ``lost``; a cell that raises fails
alone, in its batch.
"""

from __future__ import annotations

import functools
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
"""How often a batch goes out again after its worker was lost while running it."""
BATCHES_PER_THREAD = 2
"""The submission window: this many batches in flight per worker thread, to the end (one
running, one waiting on it, so a worker never waits a round trip for the next; the last
ones are small, so one queued behind a running batch holds the sweep's end up little)."""
FACTORING = 2
"""Each batch takes this fraction's inverse of what is left to send per worker thread (its
cells at first, their estimated seconds once cells have come back)."""
BATCH_TARGET_S = 1.0
"""The longest a batch aims at by its cells' estimated wall time: a call's round trip costs
this process and a worker a few milliseconds of CPU on the cores the cells use, well under
1 % of this; a batch lost with its worker costs this again."""
MIN_BATCH_S = 0.05
"""The least a batch takes by its cells' estimated wall time while every thread can still
get that much: each call costs the cores a few milliseconds of CPU (this process, which
also holds the scheduler of a local cluster, and the worker's event loop)."""
FIRST_BATCH = 16
"""The most cells of a thread's first batch, sent before any cell's wall time is known: a
share of the sweep as any batch (not one cell, whose round trip would leave the worker idle
and cost a call more), bounded for cells that turn out long."""
SECOND_BATCH = 4
"""The most cells of a thread's second batch, also sent before any wall time is known, so
that the thread has it queued when its first ends (no idle round trip) while the first
batches' wall times size the rest; few, as the cells may turn out long."""
MAX_BATCH = 256
WATCH_S = 1.0
"""How often the loop wakes without a result: to check the workers and report progress."""

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


def run_dask(found: Plan, problems: dict[Pair, Problem], client: Any,
             on_result: Callable[[CellResult], None],
             on_failure: Callable[[CellFailure], None], watch: Watch | None = None,
             stop_profilers: bool = True) -> None:
    """Every cell on the cluster behind ``client``, outcomes handed over as they finish.
    ``stop_profilers``: tell the workers to stop Dask's profiler (``quiet_workers``), a
    round trip to every worker; needless on a cluster started by ``local_client``, whose
    workers never run it.

    A batch whose worker is lost (it died, or left the cluster) goes out again to another,
    up to ``RESUBMISSIONS`` times; after that its cells fail as ``lost``."""
    sweep = _DaskSweep(found, problems, client, watch or Watch())
    if stop_profilers:
        quiet_workers(client)
    try:
        _PROXY_FAILURES.install()
        sweep.top_up()
        while not sweep.finished:
            outcomes = sweep.wait(WATCH_S)
            # the next batches go out before the rows are stored: a worker waiting for its
            # next batch waits for this process, not for the writes too
            sweep.top_up()
            for outcome in outcomes:
                deliver(outcome, on_result, on_failure)
            sweep.watch.on_tick()
    finally:
        _PROXY_FAILURES.remove()
        sweep.close()


class _ProxyFailures:
    """A filter on the Dask scheduler's loggers, while a sweep runs. The scheduler is in this
    process on a dask-jobqueue cluster (and on a local one, whose client calls the runners
    directly). When a worker dies, it logs each call it was passing on to that worker's
    runner as an error, with a traceback; when a worker leaves at its walltime, a warning
    that its runner cannot move. The sweep handles both (the batches go out again), so
    they are not the user's concern."""

    LOGGERS = ("distributed.scheduler", "distributed.core", "distributed.active_memory_manager")

    def __init__(self) -> None:
        self.users = 0

    def filter(self, record: Any) -> bool:
        message = str(record.msg)
        if message.startswith("broadcast to ") and " failed: " in message:
            return False
        if message.startswith("Tried retiring worker ") and "holds actor(s)" in message:
            return False
        return not (message == "Exception while handling op %s" and record.args == ("proxy",))

    def install(self) -> None:
        import logging

        self.users += 1
        if self.users == 1:
            for name in self.LOGGERS:
                logging.getLogger(name).addFilter(self)

    def remove(self) -> None:
        import logging

        self.users -= 1
        if self.users == 0:
            for name in self.LOGGERS:
                logging.getLogger(name).removeFilter(self)


_PROXY_FAILURES = _ProxyFailures()


@dataclass
class _Batch:
    """Cells of one problem sent together; ``again``: how often a worker was lost while it
    held them."""

    pair: Pair
    tasks: list[CellTask]
    again: int = 0
    estimate_s: float = 0.0
    """Its cells' estimated wall time (``_CellQueue.estimate``), once cells have come back."""


@dataclass
class _Runner:
    """The ``CellRunner`` on one worker: its actor (once started), the problems sent to it
    and the batches it holds."""

    address: str
    threads: int
    future: Any
    """The actor's Dask future: released, the actor is gone."""
    actor: Any = None
    sent: set[Pair] = field(default_factory=set)
    calls: dict[int, _Batch] = field(default_factory=dict)

    @property
    def room(self) -> int:
        """Batches it can take now: ``BATCHES_PER_THREAD`` per thread in flight."""
        if self.actor is None:
            return 0
        return self.threads * BATCHES_PER_THREAD - len(self.calls)

    @property
    def load_s(self) -> float:
        """The estimated wall time of the batches it holds (the running ones whole)."""
        return sum(batch.estimate_s for batch in self.calls.values())


def _one_cell(task: CellTask) -> float:
    return 1.0


class _CellQueue:
    """The cells not sent yet, and the size of each batch.

    At first the cells are in ``spread_tasks`` order (pair after pair, each pair's shuffled)
    and batches are counted in cells: each thread's first at most ``FIRST_BATCH``, its
    second at most ``SECOND_BATCH``, both a share of the cells like any batch, since what a
    cell costs is not known yet. Once cells have come back, each pair's rest goes dearest
    first, by the mean wall time of its scheduler's cells so far (the cells of a scheduler
    none of whose cells has come back go before the others, and count as the dearest),
    sorted again each time the cells measured double; and batches are sized in estimated
    seconds by factoring: a ``1 / (FACTORING * threads)`` share of the seconds left, never
    more than ``BATCH_TARGET_S`` nor less than ``MIN_BATCH_S`` while every thread can still
    get that much. Dearest first and shrinking, the last batches hold the cheapest cells,
    so the workers run out of cells together."""

    def __init__(self, cells: list[tuple[Pair, CellTask]]) -> None:
        self.cells = cells
        self.position = 0
        self.batches = 0
        self.costs: dict[tuple[Pair, Any], list[float]] = {}
        """(pair, policy): [wall seconds, cells] of the cells come back."""
        self.measured = 0
        self.sorted_at = 0
        self.means: dict[tuple[Pair, Any], float] = {}
        """The costs' means when the rest was last sorted; batches are sized by them."""
        self.dearest = 0.0
        self.left_s = 0.0
        """The estimated seconds of the cells left, by ``means``."""

    def __len__(self) -> int:
        return len(self.cells) - self.position

    def estimate(self, pair: Pair, task: CellTask) -> float:
        return self.means.get((pair, task.policy), self.dearest)

    def take(self, threads: int, room_s: float = math.inf) -> _Batch | None:
        """The next batch (cells of one pair) for a cluster of ``threads`` threads, of at
        most about ``room_s`` seconds once cells have come back."""
        if self.position >= len(self.cells):
            return None
        threads = max(1, threads)
        pair = self.cells[self.position][0]
        cost: Callable[[CellTask], float]
        if self.means:  # in estimated seconds
            share = self.left_s / (FACTORING * threads)
            target = min(BATCH_TARGET_S, room_s,
                         max(share, min(MIN_BATCH_S, self.left_s / threads)))
            cost = functools.partial(self.estimate, pair)
        else:  # in cells
            blind = FIRST_BATCH if self.batches < threads else SECOND_BATCH
            target = min(blind, math.ceil(len(self) / (FACTORING * threads)))
            cost = _one_cell
        end, taken = self.position, 0.0
        while (end < len(self.cells) and end - self.position < MAX_BATCH
               and self.cells[end][0] == pair and (taken < target or end == self.position)):
            taken += cost(self.cells[end][1])
            end += 1
        tasks = [task for _, task in self.cells[self.position:end]]
        self.position = end
        self.batches += 1
        if not self.means:
            return _Batch(pair, tasks)
        self.left_s = max(0.0, self.left_s - taken)
        return _Batch(pair, tasks, estimate_s=taken)

    def estimate_of(self, pair: Pair, tasks: list[CellTask]) -> float:
        return sum(self.estimate(pair, task) for task in tasks) if self.means else 0.0

    def drain(self) -> list[tuple[Pair, CellTask]]:
        """Every cell left, taken at once."""
        rest = self.cells[self.position:]
        self.position = len(self.cells)
        return rest

    def measure(self, pair: Pair, task: CellTask, wall_s: float) -> None:
        if not math.isnan(wall_s):
            entry = self.costs.setdefault((pair, task.policy), [0.0, 0])
            entry[0] += wall_s
            entry[1] += 1
            self.measured += 1

    def reorder(self) -> bool:
        """Sort the rest by the costs measured, when they have doubled since the last
        time; whether it did."""
        if not self.measured or self.measured < 2 * self.sorted_at:
            return False
        self.sorted_at = self.measured
        self.means = {group: max(total / count, 1e-6)
                      for group, (total, count) in self.costs.items()}
        self.dearest = max(self.means.values())
        ordered: list[tuple[Pair, CellTask]] = []
        for pair, cells in itertools.groupby(self.cells[self.position:], key=lambda c: c[0]):
            ordered.extend(sorted(cells, key=lambda cell: (
                (pair, cell[1].policy) in self.means, -self.estimate(pair, cell[1]))))
        self.cells[self.position:] = ordered
        self.left_s = sum(self.estimate(pair, task) for pair, task in ordered)
        return True


class _DaskSweep:
    """``run_dask``'s state: a runner per worker (started as workers are seen), the batches
    each holds, the cells still to send and those to send again.

    Runners start, and calls end, on the client's event loop; each puts an event on a
    queue that ``wait`` takes from, so the loop here blocks on one queue, whatever the
    number of workers and batches."""

    def __init__(self, found: Plan, problems: dict[Pair, Problem], client: Any,
                 watch: Watch) -> None:
        import queue

        self.problems, self.client, self.watch = problems, client, watch
        self.events: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self.runners: dict[str, _Runner] = {}
        self.refused: dict[str, str] = {}
        """Workers whose runner could not start, and why: not asked again."""
        self.again: list[_Batch] = []
        self.lost: list[CellFailure] = []
        self.todo = _CellQueue(list(spread_tasks(found, problems)))
        self.calls = itertools.count()
        self.sized_at = -math.inf
        self.threads = 1
        self.workers = -1
        self.sent_all = False

    @property
    def finished(self) -> bool:
        return (self.sent_all and not self.again and not self.lost
                and not any(runner.calls for runner in self.runners.values()))

    # ---------------------------------------------------------------- workers and runners

    def count_workers(self) -> None:
        """The cluster's workers and threads, asked at most once a ``WATCH_S``: a runner
        starts on each new worker, those of workers gone are lost; the watch hears when the
        cluster loses its last worker or gets one back."""
        if time.monotonic() - self.sized_at < WATCH_S:
            return
        counts = self.client.nthreads()
        now = len(counts)
        if (now == 0) != (self.workers == 0) and not (self.workers < 0 and now > 0):
            self.watch.on_workers(self.workers, now)
        self.workers, self.threads = now, max(1, sum(counts.values()))
        self.sized_at = time.monotonic()
        for address in [address for address in self.runners if address not in counts]:
            self.lose(address, "its worker left the cluster")
        for address, threads in counts.items():
            if address not in self.runners and address not in self.refused:
                self.start_runner(address, threads)
        if counts and all(address in self.refused for address in counts):
            self.give_up(self.refused[next(iter(counts))])

    def give_up(self, reason: str) -> None:
        """No worker of the cluster can run cells (their runner fails to start: dcx is not
        installed there, say): every cell left fails with the reason."""
        tasks = [task for batch in self.again for task in batch.tasks]
        tasks += [task for _, task in self.todo.drain()]
        self.again = []
        self.sent_all = True
        message = f"no worker of the cluster can run cells: {reason}"
        self.lost.extend(CellFailure(task.key, "error", message, task.columns)
                         for task in tasks)

    def start_runner(self, address: str, threads: int) -> None:
        from dcx.experiments.cells import CellRunner

        future = self.client.submit(CellRunner, actor=True, workers=[address],
                                    allow_other_workers=False, pure=False,
                                    key=f"dcx-runner-{next(self.calls)}-{address}")
        runner = _Runner(address, max(1, threads), future)
        self.runners[address] = runner
        future.add_done_callback(lambda done: self.events.put(("runner", runner)))

    def runner_started(self, runner: _Runner) -> None:
        if self.runners.get(runner.address) is not runner:
            return  # lost meanwhile
        try:
            runner.actor = runner.future.result()
        except Exception as exc:  # its worker went away as it started, or cannot run dcx
            self.refused[runner.address] = f"{type(exc).__name__}: {exc}"
            self.lose(runner.address, "its runner did not start")
            self.sized_at = -math.inf  # count the workers again at once

    def lose(self, address: str, reason: str) -> None:
        """The runner of ``address`` is gone: its batches go out again. Those it was running
        (the oldest, one per thread: ``calls`` is in the order sent) count it against them;
        those queued behind do not."""
        runner = self.runners.pop(address, None)
        if runner is None:
            return
        runner.future.release()
        for held, batch in enumerate(runner.calls.values()):
            if held < runner.threads:
                self.send_again(batch, reason)
            else:
                self.again.append(batch)

    def send_again(self, batch: _Batch, reason: str) -> None:
        """A batch lost with its worker goes out again; lost twice, one cell per batch, so
        that a cell which kills its worker fails alone, not with the cells beside it."""
        if batch.again < RESUBMISSIONS:
            if batch.again == 0 or len(batch.tasks) == 1:
                self.again.append(_Batch(batch.pair, batch.tasks, batch.again + 1))
            else:
                self.again.extend(_Batch(batch.pair, [task], batch.again + 1)
                                  for task in batch.tasks)
            return
        message = f"{reason}, {batch.again + 1} times while it held the cell"
        self.lost.extend(CellFailure(task.key, "lost", message, task.columns)
                         for task in batch.tasks)

    def close(self) -> None:
        for runner in self.runners.values():
            runner.future.release()
        self.runners.clear()

    # ------------------------------------------------------------------- batches out

    def top_up(self) -> None:
        """Fill the runners' windows, one batch at a time: until cells have come back, to
        the runner with the most room (so each thread's first batch goes out before any
        thread's second); then to the runner that will be free first, with no more than it
        takes to reach the others' finish (``finish_s``), so the workers end together."""
        self.count_workers()
        while True:
            runner = self.next_runner()
            if runner is None:
                return
            batch = self.next_batch(runner)
            if batch is None:
                return
            self.send(runner, batch)

    def next_runner(self) -> _Runner | None:
        open_runners = [runner for runner in self.runners.values() if runner.room > 0]
        if not open_runners:
            return None
        if self.again or not self.todo.means:
            return max(open_runners, key=lambda runner: runner.room)
        runner = min(open_runners, key=lambda runner: runner.load_s / runner.threads)
        if not runner.calls or runner.load_s < self.finish_s() * runner.threads:
            return runner  # never idle while cells are left
        return None

    def finish_s(self) -> float:
        """When each thread would be done, from now, were the cells not sent yet shared out
        evenly: the estimated seconds held and left, per thread."""
        started = [runner for runner in self.runners.values() if runner.actor is not None]
        threads = sum(runner.threads for runner in started) or 1
        return (self.todo.left_s + sum(runner.load_s for runner in started)) / threads

    def next_batch(self, runner: _Runner) -> _Batch | None:
        if self.again:
            return self.again.pop(0)
        room_s = (self.finish_s() * runner.threads - runner.load_s if self.todo.means
                  else math.inf)
        batch = self.todo.take(self.threads, room_s)
        if batch is None:
            self.sent_all = True
        return batch

    def send(self, runner: _Runner, batch: _Batch) -> None:
        """A call to the runner with the batch (and the problem, the first time)."""
        import pickle

        call = next(self.calls)
        problem = None if batch.pair in runner.sent else self.problems[batch.pair]
        payload = pickle.dumps((batch.tasks, problem), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            pending = runner.actor.run(batch.pair, payload, problem is not None)
        except RuntimeError:  # the worker holding it was lost: the batch never went there
            self.again.append(batch)
            self.lose(runner.address, "its worker was lost")
            return
        runner.sent.add(batch.pair)
        runner.calls[call] = batch
        self.client.loop.add_callback(self._report, runner, call, pending)

    async def _report(self, runner: _Runner, call: int, pending: Any) -> None:
        try:
            pickled = await pending
        except Exception as exc:  # OSError: the worker is gone
            self.events.put(("call", runner, call, None, exc))
        else:
            self.events.put(("call", runner, call, pickled, None))

    # ------------------------------------------------------------------- outcomes in

    def wait(self, timeout: float) -> list[Outcome]:
        """The outcomes of the calls that end within ``timeout`` seconds (of all that have
        ended once the first has), and the cells lost for good meanwhile."""
        import queue

        outcomes: list[Outcome] = []
        block = True
        while True:
            try:
                event = self.events.get(block, timeout)
            except queue.Empty:
                break
            block = False
            if event[0] == "runner":
                self.runner_started(event[1])
            else:
                outcomes.extend(self.ended(*event[1:]))
        outcomes.extend(self.lost)
        self.lost = []
        return outcomes

    def ended(self, runner: _Runner, call: int, pickled: bytes | None,
              error: BaseException | None) -> list[Outcome]:
        import pickle

        if self.runners.get(runner.address) is not runner or call not in runner.calls:
            return []  # its runner was lost before: the batch went out again
        if pickled is None:  # its worker is gone, with every batch it held
            self.lose(runner.address, f"its worker was lost ({type(error).__name__})")
            return []
        batch = runner.calls.pop(call)
        outcomes: list[Outcome] = pickle.loads(pickled)
        for task, outcome in zip(batch.tasks, outcomes, strict=True):
            wall_s = (outcome.row["wall_s"] if isinstance(outcome, CellResult)
                      else outcome.wall_s)
            self.todo.measure(batch.pair, task, wall_s)
        if self.todo.reorder():
            for held in self.runners.values():
                for each in held.calls.values():
                    each.estimate_s = self.todo.estimate_of(each.pair, each.tasks)
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
