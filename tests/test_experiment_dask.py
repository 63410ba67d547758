"""dcx experiment on a real Dask ``LocalCluster`` (two single-threaded worker processes on
loopback; sockets are enabled for this module only): the rows equal an inline run's, a
worker killed mid-sweep loses no cell, a rerun runs nothing, and a changed input reruns
only its own cells."""

from __future__ import annotations

import logging
import os
import random
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dcx.cli.main import main

distributed = pytest.importorskip("distributed", reason="dask[distributed] is in the test extra")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.enable_socket

REPO = Path(__file__).resolve().parent.parent
RUN_COLUMNS = ("wall_s", "finished_at")
"""What differs between two runs of one cell."""


def local_cluster() -> Any:
    from distributed import LocalCluster

    return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address=None, silence_logs=40,
                        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with local_cluster() as local:
        yield local


def swf_trace(path: Path, jobs: int, seed: int) -> Path:
    """A random SWF trace on a 64-processor machine (its MaxProcs header)."""
    chooser = random.Random(seed)
    lines = ["; MaxProcs: 64"]
    submit = 0
    for job in range(1, jobs + 1):
        submit += chooser.randrange(0, 30)
        run = chooser.randrange(10, 2000)
        procs = chooser.choice((1, 1, 2, 4, 8, 16))
        lines.append(f"{job} {submit} -1 {run} {procs} -1 -1 {procs} {run * 2} -1 1 1 1 -1 1 "
                     "-1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def experiment(folder: Path, jobs: int = 300, seeds: int = 3, extra: str = "") -> Path:
    swf_trace(folder / "a.swf", jobs, 1)
    swf_trace(folder / "b.swf", jobs, 2)
    path = folder / "sweep.yaml"
    path.write_text("workloads: [a.swf, b.swf]\n"
                    "schedulers: [FCFS-EASY, SRTF-FIRSTFIT, RANDOM-BESTFIT]\n"
                    f"repeat: {seeds}\noptions: {{per_job: true}}\n{extra}")
    return path


def rows(out: Path) -> dict[str, dict[str, Any]]:
    table = pq.read_table(out / "results.parquet")
    return {row["cell_key"]: {k: v for k, v in row.items() if k not in RUN_COLUMNS}
            for row in table.to_pylist()}


def run(path: Path, out: Path, *options: str) -> int:
    return main(["experiment", str(path), "--out", str(out), "--no-plots", *options])


def test_a_sweep_on_the_cluster_gives_the_rows_of_an_inline_run(
        cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = experiment(tmp_path, jobs=60,
                      extra="parameters: {load: [0.6, 0.9], requested_accuracy: [trace, 2]}\n")
    assert run(path, tmp_path / "dask", "--scheduler-address", cluster.scheduler_address) == 0
    assert f"40 to run on {cluster.scheduler_address}" in capsys.readouterr().err
    assert run(path, tmp_path / "inline", "--workers", "0") == 0
    on_dask, inline = rows(tmp_path / "dask"), rows(tmp_path / "inline")
    assert len(on_dask) == 2 * 4 * (1 + 1 + 3)
    assert on_dask == inline
    jobs_dask = pq.read_table(tmp_path / "dask" / "jobs.parquet").sort_by(
        [("cell_key", "ascending"), ("job_id", "ascending")])
    jobs_inline = pq.read_table(tmp_path / "inline" / "jobs.parquet").sort_by(
        [("cell_key", "ascending"), ("job_id", "ascending")])
    assert jobs_dask.equals(jobs_inline)


def test_schedules_on_the_cluster_are_those_of_an_inline_run(
        cluster: Any, tmp_path: Path) -> None:
    """The schedules option in the file (on the cluster) and on the command line (in
    process): the same cells, and each cell's schedule table identical."""
    swf_trace(tmp_path / "a.swf", 40, 3)
    body = ("workloads: [a.swf]\nschedulers: [FCFS-EASY, RANDOM-BESTFIT]\nrepeat: 2\n"
            "parameters: {load: [0.7, 1.0]}\n")
    on_file = tmp_path / "with.yaml"
    on_file.write_text(body + "options: {schedules: true}\n")
    plain = tmp_path / "plain.yaml"
    plain.write_text(body)
    assert run(on_file, tmp_path / "dask", "--scheduler-address",
               cluster.scheduler_address) == 0
    assert run(plain, tmp_path / "inline", "--workers", "0", "--schedules") == 0
    assert rows(tmp_path / "dask").keys() == rows(tmp_path / "inline").keys()
    names = sorted(path.name for path in (tmp_path / "dask" / "schedules").iterdir())
    assert len(names) == 2 * (1 + 2)
    assert names == sorted(path.name for path in (tmp_path / "inline" / "schedules").iterdir())
    for name in names:
        on_dask = pq.read_table(tmp_path / "dask" / "schedules" / name)
        assert on_dask.num_rows == 40
        assert on_dask.equals(pq.read_table(tmp_path / "inline" / "schedules" / name))


def test_a_local_cluster_s_workers_run_without_the_profiler() -> None:
    from dcx.converters.partitions import local_client

    cluster, client = local_client(1, processes=False)
    try:
        [callbacks] = client.run(lambda dask_worker: sorted(dask_worker.periodic_callbacks)
                                 ).values()
    finally:
        client.close()
        cluster.close()
    assert "heartbeat" in callbacks and "profile" not in callbacks


def _no_result(result: Any) -> None:
    pytest.fail(f"cell {result.key} gave a row")


def _no_failure(failure: Any) -> None:
    pytest.fail(f"cell {failure.key} failed: {failure.message}")


def test_each_runner_gets_each_problem_once_with_its_first_batch(
        cluster: Any, tmp_path: Path) -> None:
    """A runner on each worker; a problem travels to a runner with the first batch of its
    cells the runner gets, never again. The rows are those of an inline run."""
    from distributed import Client

    from dcx.experiments import execute
    from dcx.experiments.spec import load_experiment

    loaded, _ = load_experiment(experiment(tmp_path, jobs=40, seeds=8))
    assert loaded is not None
    found = execute.plan(loaded, set())
    problems, _ = execute.compile_pairs(found, lambda diagnostic: None)
    calls: list[tuple[str, Any, bool]] = []
    rows: dict[str, dict[str, Any]] = {}

    def keep(result: Any) -> None:
        rows[result.key] = {k: v for k, v in result.row.items() if k not in RUN_COLUMNS}

    send = execute._DaskSweep.send

    def recording(sweep: Any, runner: Any, batch: Any) -> None:
        calls.append((runner.address, batch.pair, batch.pair not in runner.sent))
        send(sweep, runner, batch)

    with Client(cluster.scheduler_address) as client:
        execute._DaskSweep.send = recording  # type: ignore[method-assign,assignment]
        try:
            execute.run_dask(found, problems, client, keep, _no_failure)
        finally:
            execute._DaskSweep.send = send  # type: ignore[method-assign]
        workers = set(client.nthreads())
    carried = [(address, pair) for address, pair, with_problem in calls if with_problem]
    assert len(carried) == len(set(carried))  # never twice to one runner
    assert {address for address, _, _ in calls} == workers
    assert set(carried) == {(address, pair) for address, pair, _ in calls}
    assert len(calls) > len(carried)
    inline: dict[str, dict[str, Any]] = {}
    execute.run_inline(found, problems, lambda result: inline.__setitem__(
        result.key, {k: v for k, v in result.row.items() if k not in RUN_COLUMNS}),
        _no_failure)
    assert rows == inline and len(rows) == found.pending_count == 2 * (1 + 1 + 8)


class _Doomed(distributed.diagnostics.plugin.WorkerPlugin):  # type: ignore[name-defined]
    """A worker plugin that makes the worker exit at once when it is to run one cell (as
    a cell that crashes the interpreter would), on every worker, restarted ones too."""

    name = "dcx-test-doomed-cell"

    def __init__(self, key: str) -> None:
        self.key = key

    def setup(self, worker: Any) -> None:
        from dcx.experiments import cells

        run_batch, doomed = cells.run_batch, self.key

        def dying(problem: Any, tasks: Any) -> Any:
            if any(task.key == doomed for task in tasks):
                os._exit(70)
            return run_batch(problem, tasks)

        cells.run_batch = dying



def test_a_cell_that_kills_its_worker_fails_alone_as_lost(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Its batch goes out again whole once, then cell by cell: the cells beside it get
    their rows; it fails as ``lost`` once it has killed a worker every time. The calls the
    scheduler was passing on to the dead workers are not logged as errors."""
    from dcx.converters.partitions import local_client
    from dcx.experiments import execute
    from dcx.experiments.spec import load_experiment

    loaded, _ = load_experiment(experiment(tmp_path, jobs=30, seeds=2))
    assert loaded is not None
    found = execute.plan(loaded, set())
    problems, _ = execute.compile_pairs(found, lambda diagnostic: None)
    [doomed, *_] = [task.key for _, task in execute.spread_tasks(found, problems)]
    results: list[Any] = []
    failures: list[Any] = []
    cluster, client = local_client(2)  # its client calls the runners directly
    try:
        client.register_plugin(_Doomed(doomed))
        execute.run_dask(found, problems, client, results.append, failures.append,
                         stop_profilers=False)
    finally:
        client.close()
        cluster.close()
    assert [(failure.key, failure.kind) for failure in failures] == [(doomed, "lost")]
    assert f"{execute.RESUBMISSIONS + 1} times" in failures[0].message
    assert sorted(result.key for result in results) == sorted(
        key for key in found.keys if key != doomed)
    assert [record.getMessage() for record in caplog.records
            if record.levelno >= logging.ERROR] == []


def test_a_worker_killed_mid_sweep_loses_no_cell(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Through the scheduler's proxy (a client of an existing cluster): the batches the dead
    worker held go to the other, and the calls the scheduler was passing on to it are not
    logged as errors."""
    from distributed import Client

    from dcx.experiments.execute import compile_pairs, plan, run_dask
    from dcx.experiments.spec import load_experiment
    from dcx.experiments.store import ResultStore

    loaded, _ = load_experiment(experiment(tmp_path, jobs=120, seeds=6))
    assert loaded is not None
    found = plan(loaded, set())
    problems, failed = compile_pairs(found, lambda diagnostic: None)
    assert not failed and found.pending_count == 2 * (1 + 1 + 6)
    store = ResultStore(tmp_path / "out", flush_rows=1)
    failures: list[Any] = []
    killed: list[int] = []
    with local_cluster() as own, Client(own.scheduler_address) as client:  # one to break
        pids = sorted(client.run(os.getpid).values())

        def keep(result: Any) -> None:
            store.add(result.row, result.jobs)
            if not killed:  # cells are queued on both workers now: kill one of them
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        run_dask(found, problems, client, keep, failures.append)
    table = store.close()
    assert killed and not failures
    assert [record.getMessage() for record in caplog.records
            if record.levelno >= logging.ERROR] == []
    assert table is not None
    keys = table.column("cell_key").to_pylist()
    assert sorted(keys) == sorted(found.keys) and len(set(keys)) == len(keys)


class _NoDcx(distributed.diagnostics.plugin.WorkerPlugin):  # type: ignore[name-defined]
    """A worker plugin that makes the runner fail to start, as on workers without dcx."""

    name = "dcx-test-no-dcx"

    def setup(self, worker: Any) -> None:
        from dcx.experiments import cells

        def refuse(runner: Any) -> None:
            raise ModuleNotFoundError("No module named 'dcx'")

        cells.CellRunner.__init__ = refuse  # type: ignore[method-assign,assignment]


def test_workers_that_cannot_run_cells_fail_them_with_the_reason(tmp_path: Path) -> None:
    """The sweep does not wait for ever: each cell fails, saying why."""
    from distributed import Client

    from dcx.experiments import execute
    from dcx.experiments.spec import load_experiment

    loaded, _ = load_experiment(experiment(tmp_path, jobs=20, seeds=1))
    assert loaded is not None
    found = execute.plan(loaded, set())
    problems, _ = execute.compile_pairs(found, lambda diagnostic: None)
    failures: list[Any] = []
    with local_cluster() as own, Client(own.scheduler_address) as client:
        client.register_plugin(_NoDcx())
        execute.run_dask(found, problems, client, _no_result, failures.append)
    assert sorted(failure.key for failure in failures) == sorted(found.keys)
    assert {(failure.kind, failure.message) for failure in failures} == {
        ("error", "no worker of the cluster can run cells: ModuleNotFoundError: No module "
                  "named 'dcx'")}


def test_a_rerun_runs_nothing_and_a_changed_input_reruns_only_its_cells(
        cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = experiment(tmp_path, jobs=60)
    out = tmp_path / "out"
    address = ("--scheduler-address", cluster.scheduler_address)
    assert run(path, out, *address) == 0
    first = pq.read_table(out / "results.parquet").to_pylist()
    capsys.readouterr()

    assert run(path, out, *address) == 0
    assert "10 cell(s), 10 already stored, 0 to run\n" in capsys.readouterr().err
    assert pq.read_table(out / "results.parquet").to_pylist() == first

    swf_trace(tmp_path / "b.swf", 61, 3)
    assert run(path, out, *address) == 0
    assert "10 cell(s), 5 already stored, 5 to run" in capsys.readouterr().err
    after = pq.read_table(out / "results.parquet").to_pylist()
    assert after[:len(first)] == first  # every earlier row kept as it was, none twice
    added = after[len(first):]
    assert len(added) == 5 and {row["workload"] for row in added} == {"b.swf"}
    assert len({row["cell_key"] for row in after}) == len(after)
    summary = (out / "summary.md").read_text()
    assert summary.count("| RANDOM-BESTFIT | 3 |") == 2  # the report: current cells only


class StandInSlurmCluster:
    """What ``dask_jobqueue.SLURMCluster`` is to dcx, on loopback: it records its options,
    and its adaptive jobs are local workers that come up a moment after ``adapt`` (as batch
    jobs wait in the queue)."""

    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **options: Any) -> None:
        from distributed import LocalCluster

        StandInSlurmCluster.made.append(options)
        self._local = LocalCluster(n_workers=0, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None, silence_logs=40,
                                   scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        self.scheduler_address = self._local.scheduler_address

    def adapt(self, minimum_jobs: int, maximum_jobs: int) -> None:
        import threading

        threading.Timer(2.5, self._local.scale, args=(maximum_jobs,)).start()

    def __getattr__(self, name: str) -> Any:  # what distributed.Client(cluster) asks
        return getattr(self._local, name)

    def close(self) -> None:
        self._local.close()


def test_cluster_slurm_starts_jobs_waits_for_workers_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import sys
    import types

    stand_in = types.ModuleType("dask_jobqueue")
    stand_in.SLURMCluster = StandInSlurmCluster  # type: ignore[attr-defined]
    stand_in.PBSCluster = StandInSlurmCluster  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dask_jobqueue", stand_in)
    path = experiment(tmp_path, jobs=30, seeds=2)
    assert run(path, tmp_path / "out", "--cluster", "slurm", "--workers", "2", "--walltime",
               "00:30:00", "--activate", "source ~/venv/bin/activate",
               "--progress-every", "0.5") == 0
    [options] = StandInSlurmCluster.made
    assert options["walltime"] == "00:30:00" and options["cores"] == 1
    assert options["job_script_prologue"] == ["source ~/venv/bin/activate"]
    assert options["worker_extra_args"][:2] == ["--lifetime", "1500s"]
    err = capsys.readouterr().err
    assert "8 to run on 2 slurm job(s)" in err
    assert "the cluster has no workers yet; waiting for one (8 cell(s) to run)" in err
    assert "worker(s) on the cluster; going on" in err
    assert pq.read_table(tmp_path / "out" / "results.parquet").num_rows == 8


def test_cluster_without_dask_jobqueue_names_the_extra_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # import fails: not installed
    path = experiment(tmp_path, jobs=30, seeds=1)
    assert run(path, tmp_path / "out", "--cluster", "pbs") == 2
    assert "--cluster needs dask-jobqueue: pip install 'dcx[cluster]'" in (
        capsys.readouterr().err)
    assert not (tmp_path / "out" / "results.parquet").exists()


def test_a_cell_past_its_timeout_on_a_worker_is_a_failure_row(
        cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Limits hold on the workers too: the cell runs in a child of the worker, stopped at
    the timeout (far below what conservative backfilling of 300 jobs takes)."""
    trace = REPO / "examples" / "experiments" / "synthetic-64.swf"
    path = tmp_path / "sweep.yaml"
    path.write_text(f"workloads: [{trace}]\nschedulers: [FCFS-CONSERVATIVE]\n"
                    "parameters: {load: [0.9, 1.0]}\ntimeout: 0.001\n")
    out = tmp_path / "out"
    assert run(path, out, "--scheduler-address", cluster.scheduler_address) == 1
    end = capsys.readouterr().out
    assert re.search(r"ran 0 cell\(s\) in \d+ s, 2 failed\n", end)
    assert f"  failures: {out / 'failures.parquet'} (2 cell(s); --retry-failed" in end
    failures = pq.read_table(out / "failures.parquet").to_pylist()
    assert [row["error_kind"] for row in failures] == ["timeout", "timeout"]
    assert {row["load"] for row in failures} == {0.9, 1.0}
