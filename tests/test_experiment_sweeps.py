"""The sweep axes researchers use (the ``parameters`` axis: load, requested-time accuracy,
windows of a trace, scheduler options), per-cell limits and the failure table, and the
errors of an experiment file: each located in the file, exit 1, never an internal error."""

from __future__ import annotations

import dataclasses
import math
import random
import re
from pathlib import Path

import pytest

from dcx.cli.main import main
from dcx.experiments.spec import load_experiment
from dcx.experiments.transforms import (
    TransformError,
    apply_transforms,
    offered_load,
    scheduler_options,
    with_options,
)
from dcx.scheduler.loading import load_problem
from dcx.scheduler.policies import Policy, parse_policy
from dcx.scheduler.problem import Problem

pq = pytest.importorskip("pyarrow.parquet")

REPO = Path(__file__).resolve().parent.parent
LOAD_EXAMPLE = REPO / "examples" / "experiments" / "load.yaml"


def swf_trace(path: Path, jobs: int = 40, seed: int = 1) -> Path:
    """A random SWF trace on a 16-processor machine (its MaxProcs header), requested times
    twice the runtimes."""
    chooser = random.Random(seed)
    lines = ["; MaxProcs: 16"]
    submit = 0
    for job in range(1, jobs + 1):
        submit += chooser.randrange(1, 60)
        run = chooser.randrange(10, 600)
        procs = chooser.choice((1, 2, 4, 8))
        lines.append(f"{job} {submit} -1 {run} {procs} -1 -1 {procs} {run * 2} -1 1 1 1 -1 1 "
                     "-1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def problem(tmp_path_factory: pytest.TempPathFactory) -> Problem:
    loaded = load_problem(swf_trace(tmp_path_factory.mktemp("trace") / "t.swf"), None)
    assert loaded.problem is not None
    return loaded.problem


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------- transforms


def test_load_scaling_reaches_the_load_asked_for_and_keeps_the_jobs(problem: Problem) -> None:
    for load in (0.5, 1.0, 1.7):
        scaled = apply_transforms(problem, {"load": load})
        assert math.isclose(offered_load(scaled), load, rel_tol=1e-9)
        assert scaled.tasks.runtime_s == problem.tasks.runtime_s
    packed = apply_transforms(problem, {"interarrival_scale": 0.5})
    gaps = [b - a for a, b in zip(problem.tasks.submit_s, problem.tasks.submit_s[1:],
                                  strict=False)]
    new_gaps = [b - a for a, b in zip(packed.tasks.submit_s, packed.tasks.submit_s[1:],
                                      strict=False)]
    assert new_gaps == pytest.approx([gap * 0.5 for gap in gaps])
    assert packed.tasks.submit_s[0] == problem.tasks.submit_s[0]
    assert problem.tasks.submit_s != packed.tasks.submit_s  # the shared problem is untouched


def test_requested_accuracy_and_the_traces_own(problem: Problem) -> None:
    exact = apply_transforms(problem, {"requested_accuracy": 3})
    assert exact.tasks.requested_s == [runtime * 3 for runtime in problem.tasks.runtime_s]
    assert apply_transforms(problem, {"requested_accuracy": "trace"}) is problem


def test_windows_keep_the_jobs_they_name(problem: Problem) -> None:
    by_count = apply_transforms(problem, {"window_first_job": 5, "window_jobs": 10})
    assert by_count.job_ids == problem.job_ids[5:15]
    assert by_count.tasks.submit_s == problem.tasks.submit_s[5:15]
    start = problem.tasks.submit_s[0]
    by_time = apply_transforms(problem, {"window_start_s": 100, "window_length_s": 300})
    assert by_time.tasks.submit_s == [t for t in problem.tasks.submit_s
                                      if start + 100 <= t < start + 400]
    with pytest.raises(TransformError, match="holds no job"):
        apply_transforms(problem, {"window_first_job": 1000})


def test_a_numeric_option_a_scheduler_declares_is_a_parameter() -> None:
    @dataclasses.dataclass(frozen=True)
    class Tunable(Policy):
        reservation_depth: int = 1

    assert scheduler_options(Policy) == {}
    assert scheduler_options(Tunable) == {"reservation_depth": int}
    policy = Tunable("FCFS", "FIRSTFIT", "EASY")
    assert with_options(policy, {"reservation_depth": 4, "load": 0.5}).reservation_depth == 4
    assert with_options(parse_policy("FCFS-EASY"), {"load": 0.5}) == parse_policy("FCFS-EASY")


def test_a_load_sweep_records_its_parameters_and_shows_the_curve(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    swf_trace(tmp_path / "t.swf")
    path = write(tmp_path, "sweep.yaml", "workloads: [t.swf]\nschedulers: [FCFS, FCFS-EASY]\n"
                 "parameters:\n  load: [0.5, 0.9]\n  requested_accuracy: [trace, 1]\n"
                 "exclude: [{load: 0.9, requested_accuracy: 1}]\n")
    out = tmp_path / "out"
    assert main(["experiment", str(path), "--out", str(out), "--workers", "0"]) == 0
    assert "6 cell(s), 0 already stored, 6 to run" in capsys.readouterr().err
    rows = pq.read_table(out / "results.parquet").to_pylist()
    seen = {(row["scheduler"], row["load"], row["requested_accuracy"]) for row in rows}
    assert seen == {(s, load, accuracy) for s in ("FCFS", "FCFS-EASY")
                    for load, accuracy in ((0.5, None), (0.5, 1.0), (0.9, None))}
    for row in rows:
        assert math.isclose(row["offered_load"], row["load"], rel_tol=1e-9)
    summary = (out / "summary.md").read_text()
    assert "Bounded slowdown by load:" in summary
    assert "| FCFS (requested_accuracy=trace) |" in summary
    assert (out / "plots" / "t.swf--own--event" / "load.svg").is_file()


# ------------------------------------------------------------------------ the file


@pytest.mark.parametrize(("text", "expected"), [
    ("schedulerz: [FCFS]\n", ("experiment.unknown-key", "/schedulerz", 3, 1,
                              "(did you mean schedulers?)")),
    ("options:\n  per_jobs: true\n", ("experiment.unknown-key", "/options/per_jobs", 4, 3,
                                      "(did you mean per_job?)")),
    ("exclude:\n  - {scheduler: FCFS-EAZY}\n", ("experiment.exclude-unknown",
                                               "/exclude/0/scheduler", 4, 6,
                                               "(did you mean FCFS-EASY?)")),
    ("exclude:\n  - {load: 0.7}\n", ("experiment.exclude-unknown", "/exclude/0/load", 4, 6,
                                     "which the experiment does not have")),
    ("parameters:\n  lod: [0.5]\n", ("experiment.unknown-parameter", "/parameters/lod", 4, 3,
                                     "(did you mean load?)")),
    ("parameters:\n  load: [0.5, -1]\n", ("experiment.parameter-value", "/parameters/load/1",
                                          4, 15, "load must be above 0")),
    ("seeds: [1]\nrepeat: 2\n", ("experiment.seeds-and-repeat", "/repeat", 4, 1,
                                 "give seeds or repeat, not both")),
    ("timeout: soon\n", ("experiment.limit", "/timeout", 3, 1, "is not a duration")),
])
def test_each_mistake_is_one_located_line(tmp_path: Path, text: str,
                                          expected: tuple[str, str, int, int, str]) -> None:
    head = "workloads: [a.swf]\nschedulers: [FCFS, FCFS-EASY]\n"
    if "load: [" not in text and "exclude" in text:
        head += "parameters: {load: [0.5]}\n"
        expected = (*expected[:2], expected[2] + 1, *expected[3:])
    experiment, diagnostics = load_experiment(write(tmp_path, "x.yaml", head + text))
    assert experiment is None
    [found] = diagnostics
    code, pointer, line, column, words = expected
    assert (found.code, found.pointer, found.line, found.column) == (code, pointer, line,
                                                                      column)
    assert words in found.message


def test_a_misspelt_scheduler_has_a_did_you_mean_and_shipped_names_work(
        tmp_path: Path) -> None:
    experiment, diagnostics = load_experiment(write(
        tmp_path, "x.yaml", "workloads: [a.swf]\nschedulers: [FCFS-EASY-MATCH, SJF-EAZY]\n"))
    assert experiment is None
    [found] = diagnostics
    assert (found.code, found.line, found.column) == ("experiment.unknown-scheduler", 2, 31)
    assert "(did you mean SJF-EASY?)" in found.message


def test_the_example_runs_when_examples_is_copied_elsewhere(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "elsewhere"
    shutil.copytree(REPO / "examples", copy)
    for name in ("small.yaml", "load.yaml"):
        experiment, diagnostics = load_experiment(copy / "experiments" / name)
        assert experiment is not None, [d.render() for d in diagnostics]
        assert all(item.path is None or item.path.is_file()
                   for item in (*experiment.workloads, *experiment.environments))


# --------------------------------------------------------- limits and failures


def test_cells_past_their_limits_are_failures_kept_and_retried_only_when_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import time

    from dcx.experiments import cells

    swf_trace(tmp_path / "t.swf", jobs=10)
    path = write(tmp_path, "sweep.yaml", "workloads: [t.swf]\n"
                 "schedulers: [FCFS, FCFS-EASY, SJF-EASY]\ntimeout: 1h\n")
    real_run_cell = cells.run_cell

    def runaway(problem: Problem, task: cells.CellTask) -> cells.CellResult:
        if task.policy.name == "FCFS-EASY":
            time.sleep(30)
        if task.policy.name == "SJF-EASY":
            hog = bytearray(400 * 2**20)  # past a 64 MiB cap
            del hog
        return real_run_cell(problem, task)

    monkeypatch.setattr(cells, "run_cell", runaway)
    out = tmp_path / "out"
    began = time.monotonic()
    assert main(["experiment", str(path), "--out", str(out), "--workers", "0", "--no-plots",
                 "--timeout", "1s", "--memory", "64MiB"]) == 1
    assert time.monotonic() - began < 25  # the runaway cell was stopped, not waited for
    printed = capsys.readouterr()
    err = printed.err
    assert "each cell limited to timeout 1 s, memory 64 MiB" in err
    assert "(t.swf, own, FCFS-EASY, event) failed: timeout: ran longer than its timeout" in err
    assert "failed: memory: needed more than its memory limit of 64 MiB" in err
    assert re.match(r"experiment \S+: ran 1 cell\(s\) in \d+ s, 2 failed\n", printed.out)
    assert (f"  failures: {out / 'failures.parquet'} (2 cell(s); --retry-failed runs them "
            "again)\n") in printed.out
    failures = pq.read_table(out / "failures.parquet").to_pylist()
    assert sorted((row["scheduler"], row["error_kind"]) for row in failures) == [
        ("FCFS-EASY", "timeout"), ("SJF-EASY", "memory")]

    monkeypatch.setattr(cells, "run_cell", real_run_cell)
    assert main(["experiment", str(path), "--out", str(out), "--workers", "0",
                 "--no-plots"]) == 1
    assert ("3 cell(s), 1 already stored, 2 failed before (in failures.parquet; "
            "--retry-failed runs them again), 0 to run") in capsys.readouterr().err
    assert main(["experiment", str(path), "--out", str(out), "--workers", "0", "--no-plots",
                 "--retry-failed"]) == 0
    printed = capsys.readouterr()
    assert "2 to run" in printed.err
    assert "ran 2 cell(s)" in printed.out and "failures:" not in printed.out
    assert pq.read_table(out / "results.parquet").num_rows == 3
    assert not (out / "failures.parquet").exists()


def test_a_truncated_results_table_is_one_line_and_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    swf_trace(tmp_path / "t.swf", jobs=10)
    path = write(tmp_path, "sweep.yaml", "workloads: [t.swf]\nschedulers: [FCFS]\n")
    out = tmp_path / "out"
    assert main(["experiment", str(path), "--out", str(out), "--workers", "0",
                 "--no-plots"]) == 0
    data = (out / "results.parquet").read_bytes()
    (out / "results.parquet").write_bytes(data[: len(data) // 2])
    capsys.readouterr()
    assert main(["experiment", str(path), "--out", str(out), "--workers", "0",
                 "--no-plots"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"dcx experiment: error: {out / 'results.parquet'} cannot be read "
                          "as a Parquet table")
    assert "internal error" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("address", "words"), [
    ("foo://bar", "--scheduler-address foo://bar: unknown address scheme 'foo'"),
    ("login1:8786", "(a Dask scheduler's address is tcp://HOST:PORT)"),
    ("tcp://127.0.0.1:9", "cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
])
@pytest.mark.enable_socket
def test_a_bad_or_unreachable_scheduler_address_fails_fast_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], address: str, words: str) -> None:
    pytest.importorskip("distributed")
    swf_trace(tmp_path / "t.swf", jobs=5)
    path = write(tmp_path, "sweep.yaml", "workloads: [t.swf]\nschedulers: [FCFS]\n")
    assert main(["experiment", str(path), "--out", str(tmp_path / "o"), "--no-plots",
                 "--scheduler-address", address]) == 2
    printed = capsys.readouterr()
    assert words in printed.err and "internal error" not in printed.err
    assert "summary" not in printed.out  # no summary.md was written, none is named


def test_off_a_terminal_progress_is_a_line_every_few_seconds() -> None:
    import io

    from dcx.experiments.progress import SweepProgress

    stream = io.StringIO()
    with SweepProgress(4, "experiment x", every_s=0.0, stream=stream) as progress:
        progress.advance()
        progress.advance(failed=True)
        progress.workers(2, 0)
        progress.workers(0, 3)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("experiment x: 1/4 cell(s) done, ")
    assert "ETA" in lines[0] and "failed" not in lines[0]
    assert lines[1].startswith("experiment x: 2/4 cell(s) done, 1 failed, ")
    assert lines[2] == ("experiment x: the cluster has no workers; waiting for one (2 cell(s) "
                        "left; cells that were running will run again)")
    assert lines[3] == "experiment x: 3 worker(s) on the cluster; going on (2 cell(s) left)"
    quiet = io.StringIO()
    with SweepProgress(4, "experiment x", every_s=3600.0, stream=quiet) as progress:
        progress.advance()
    assert quiet.getvalue() == ""


def test_a_workload_stored_as_a_folder_is_hashed_by_its_files(tmp_path: Path) -> None:
    """An OpenDC workload is a folder: its cells' keys follow its files' contents."""
    import shutil

    from dcx.experiments.execute import plan

    folder = tmp_path / "workload"
    shutil.copytree(REPO / "examples" / "opendc-workload" / "montage-workflow", folder)
    path = write(tmp_path, "x.yaml", f"workloads: [workload]\nenvironments: "
                 f"[{REPO / 'examples' / 'environment' / 'small-cluster.json'}]\n"
                 "schedulers: [SRTF-BESTFIT]\n")
    experiment, diagnostics = load_experiment(path)
    assert experiment is not None, [d.render() for d in diagnostics]
    first = plan(experiment, set())
    assert not first.unreadable and len(first.keys) == 1
    tasks = folder / "tasks.parquet"
    tasks.write_bytes(tasks.read_bytes() + b"\0")
    assert plan(experiment, set()).keys != first.keys


def test_on_a_terminal_a_bar_with_failures_and_eta(tmp_path: Path) -> None:
    import os
    import pty
    import subprocess
    import sys

    script = Path(sys.executable).parent / "dcx"
    command = [str(script)] if script.exists() else [sys.executable, "-m",
                                                     "dcx.cli.main"]
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [*command, "experiment", str(LOAD_EXAMPLE), "--out", str(tmp_path / "o"),
             "--workers", "0", "--no-plots"],
            stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=300) == 0
    finally:
        os.close(leader)
    terminal = b"".join(chunks)
    assert b"\x1b[" in terminal and b"experiment load" in terminal and b"ETA" in terminal
    assert b"cell(s) done" not in terminal  # the bar, not the log lines
