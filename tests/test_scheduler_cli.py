"""``dcx schedule`` as a user runs it: JSON shape, exit codes, output files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from dcx.cli import schedule as cli

SETUP = """{"name": "two", "rooms": [{"type": "SERVER", "objects": [{"type": "RACK",
 "machines": [{"cpus": [2]}, {"cpus": [1]}]}]}]}"""
BATCH_METRICS = {"makespan_s", "wait_mean_s", "response_mean_s", "slowdown_mean",
                 "bounded_slowdown_mean", "utilization"}
HEADER = "WorkflowID, JobID, SubmitTime, RunTime, NProcs, ReqNProcs, Dependencies\n"


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers(dest="command"))
    return cli.run(parser.parse_args(argv))


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    setup = tmp_path / "setup.json"
    setup.write_text(SETUP)
    trace = tmp_path / "small.gwf"
    trace.write_text(HEADER + "0, 1, 0, 20, 1, 1, \n0, 2, 5, 10, 1, 1, 1\n1, 3, 2, 4, 1, 1, \n")
    return trace, setup


def test_json_output_is_exactly_one_object(files: tuple[Path, Path],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    trace, setup = files
    code = run(["schedule", str(trace), "--env", str(setup), "--policy",
                "SRTF-BESTFIT,RANDOM-FIRSTFIT", "--time-model", "sc18", "--seed", "4",
                "--output", "json"])
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    assert list(document) == ["runs"]
    first, second = document["runs"]
    assert set(first) == {"policy", "time_model", "seed", "tasks", "jobs", "metrics"}
    assert (first["policy"], first["time_model"], first["seed"]) == ("SRTF-BESTFIT", "sc18", None)
    assert (first["tasks"], first["jobs"]) == (3, 2)
    assert set(first["metrics"]) == {"trt_s", "jms_s", "njsl", "jwt_s", *BATCH_METRICS}
    assert all(isinstance(v, float) for v in first["metrics"].values())
    assert second["seed"] == 4


def test_out_writes_csv_json_and_svg(files: tuple[Path, Path], tmp_path: Path) -> None:
    trace, setup = files
    out = tmp_path / "out"
    assert run(["schedule", str(trace), "--env", str(setup), "--out", str(out)]) == 0
    run_folder = out / "SRTF-BESTFIT-event"
    assert (run_folder / "tasks.csv").read_text().count("\n") == 4
    assert (run_folder / "jobs.csv").read_text().count("\n") == 3
    assert json.loads((run_folder / "summary.json").read_text())["tasks"] == 3
    assert (run_folder / "stages.csv").read_text().startswith("time_s,stage,wall_ns")
    for plot in ("trt.svg", "jms.svg", "wait.svg", "bounded_slowdown.svg", "utilisation.svg",
                 "stages.svg", "SRTF-BESTFIT-event/gantt.svg"):
        assert "<svg" in (out / plot).read_text()
    # captions say what is shown; metrics are named with their units
    assert "Task response time (TRT)" in (out / "trt.svg").read_text()
    assert "max(1, response / max(run, 10 s))" in (out / "bounded_slowdown.svg").read_text()


def test_utilisation_series_is_busy_cores_over_all_cores() -> None:
    from dcx.scheduler.plots import utilisation_series

    times, levels = utilisation_series([0, 5, float("nan")], [10, 15, float("nan")],
                                       [2, 2, 4], 4)
    assert times == [0, 5, 10, 15] and levels == [0.5, 1.0, 0.5, 0.0]


def test_a_cycle_is_bad_input_with_its_line(tmp_path: Path, files: tuple[Path, Path],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _, setup = files
    trace = tmp_path / "cycle.gwf"
    trace.write_text(HEADER + "0, 1, 0, 5, 1, 1, 2\n0, 2, 0, 5, 1, 1, 1\n")
    assert run(["schedule", str(trace), "--env", str(setup)]) == 1
    err = capsys.readouterr().err
    assert "cycle" in err and f"{trace}:" in err
    assert "Traceback" not in err


def test_task_larger_than_the_whole_cluster_is_bad_input(
        tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """GWF processors are cores anywhere: 16 of them fit no cluster of 6 cores in all."""
    _, setup = files
    trace = tmp_path / "wide.gwf"
    trace.write_text(HEADER + "0, 1, 0, 5, 16, 16, \n")
    assert run(["schedule", str(trace), "--env", str(setup)]) == 1
    err = capsys.readouterr().err
    assert "16 core(s) anywhere" in err and "only 6" in err and err.startswith(str(trace))


def test_unknown_policy_and_missing_file(files: tuple[Path, Path],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    trace, setup = files
    assert run(["schedule", str(trace), "--env", str(setup), "--policy", "LIFO-FIRSTFIT"]) == 2
    assert "unknown policy" in capsys.readouterr().err
    assert run(["schedule", str(trace) + ".missing", "--env", str(setup)]) == 1
    assert "cannot read file" in capsys.readouterr().err


def test_cli_time_models_match_the_engine() -> None:
    from dcx.cli import schedule as cli
    from dcx.scheduler import engine

    assert tuple(cli.TIME_MODELS) == tuple(engine.TIME_MODELS)


def test_building_the_dcx_parser_does_not_import_the_engine() -> None:
    import subprocess
    import sys

    code = ("import sys; from dcx.cli.main import build_parser; build_parser(); "
            "print(any(m.startswith('dcx.scheduler.engine') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


SWF_EXAMPLE_1 = """; MaxProcs: 4
1 0 -1 8 2 -1 -1 2 8 -1 1 -1 -1 -1 -1 -1 -1 -1
2 1 -1 5 4 -1 -1 4 5 -1 1 -1 -1 -1 -1 -1 -1 -1
3 2 -1 3 1 -1 -1 1 3 -1 1 -1 -1 -1 -1 -1 -1 -1
4 3 -1 2 2 -1 -1 2 2 -1 1 -1 -1 -1 -1 -1 -1 -1
5 4 -1 3 1 -1 -1 1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
"""


def test_an_swf_trace_runs_on_its_own_header_machine(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "example.swf"
    trace.write_text(SWF_EXAMPLE_1)
    assert run(["schedule", str(trace), "--policy", "FCFS-EASY,FCFS-CONSERVATIVE",
                "--output", "json"]) == 0
    captured = capsys.readouterr()
    easy, conservative = json.loads(captured.out)["runs"]
    assert easy["metrics"]["wait_mean_s"] == 3.4 and easy["metrics"]["makespan_s"] == 15
    assert conservative["metrics"]["wait_mean_s"] == 3.6
    assert set(easy["metrics"]) == {"trt_s", "jms_s", "njsl", "jwt_s", *BATCH_METRICS}
    # said once each, on stderr: the header machine and the missing requested time
    assert captured.err.count("4 single-core machine(s) from its MaxProcs header") == 1
    assert captured.err.count("runtime stands in") == 1


def test_without_machines_anywhere_a_missing_env_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "bare.swf"
    trace.write_text(SWF_EXAMPLE_1.replace("; MaxProcs: 4\n", ""))
    assert run(["schedule", str(trace)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--env" in captured.err


def test_a_scheduler_file_runs_and_a_broken_one_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "example.swf"
    trace.write_text(SWF_EXAMPLE_1)
    declaration = tmp_path / "mine.json"
    declaration.write_text(json.dumps({"name": "mine", "stages": {
        "T2": "SJF", "R5": "BESTFIT", "backfilling": "EASY"}}))
    assert run(["schedule", str(trace), "--scheduler", str(declaration),
                "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["policy"] == "SJF-EASY-BESTFIT"
    declaration.write_text('{"name": "mine", "stages": {"T2": "SJF"}}')
    assert run(["schedule", str(trace), "--scheduler", str(declaration)]) == 2
    assert "R5" in capsys.readouterr().err


def test_backfilling_under_the_sc18_time_model_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "example.swf"
    trace.write_text(SWF_EXAMPLE_1)
    assert run(["schedule", str(trace), "--policy", "FCFS-EASY", "--time-model", "sc18"]) == 2
    assert "event time model" in capsys.readouterr().err


MEMORY_SWF = ("1 0 0 10 2 -1 -1 2 10 524288 1 1 1 -1 1 -1 -1 -1\n"
              "2 1 0 10 1 -1 -1 1 10 262144 1 1 1 -1 1 -1 -1 -1\n")
"""Job 1 takes 2 of 4 cores and all 1,024 MB (512 MB per processor); job 2 fits the free
cores but not the memory: it waits for job 1 (wait 9 s, mean 4.5 s)."""
ONE_MACHINE = ('{"environment": {"datacenters": [{"rooms": [{"type": "SERVER", "objects": '
               '[{"type": "RACK", "units": [{"type": "MACHINE", "id": 1, "cpus": [{"cores": '
               '4}], "memory": [{"capacity": 1024}]}]}]}]}]}}')


def test_every_scheduler_places_memory_backfilling_included(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Memory on machines that declare it: the SC18, strict, EASY and conservative
    schedulers all keep job 2 off the machine until job 1 gives its memory back."""
    trace = tmp_path / "memory.swf"
    trace.write_text(MEMORY_SWF)
    environment = tmp_path / "one.json"
    environment.write_text(ONE_MACHINE)
    assert run(["schedule", str(trace), "--env", str(environment), "--policy",
                "FCFS-EASY,FIFO-FIRSTFIT,FCFS-CONSERVATIVE,FCFS", "--output", "json"]) == 0
    captured = capsys.readouterr()
    runs = json.loads(captured.out)["runs"]
    assert [item["policy"] for item in runs] == [
        "FCFS-EASY", "FIFO-FIRSTFIT", "FCFS-CONSERVATIVE", "FCFS"]
    assert [item["metrics"]["wait_mean_s"] for item in runs] == [4.5] * 4
    assert "error" not in captured.err


def test_unknown_runtimes_run_for_their_requested_time_and_one_warning_counts_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "cancelled.swf"
    trace.write_text("; MaxProcs: 4\n"
                     "1 0 -1 8 2 -1 -1 2 8 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
                     "2 1 -1 -1 2 -1 -1 2 30 -1 5 -1 -1 -1 -1 -1 -1 -1\n"
                     "3 2 -1 -1 1 -1 -1 1 20 -1 5 -1 -1 -1 -1 -1 -1 -1\n")
    out = tmp_path / "out"
    assert run(["schedule", str(trace), "--policy", "FCFS", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("2 of 3 task(s) have no runtime (SWF -1); each runs for its requested "
                     "time instead") == 1
    rows = (out / "FCFS-event" / "tasks.csv").read_text().splitlines()
    header = rows[0].split(",")
    finish = {row.split(",")[header.index("task_id")]: row.split(",")[header.index("finish_s")]
              for row in rows[1:]}
    assert float(finish["2"]) == 31 and float(finish["3"]) == 28  # strict: after job 1


def test_jobs_csv_has_every_run_s_jobs_and_their_machines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import csv

    trace = tmp_path / "example.swf"
    trace.write_text(SWF_EXAMPLE_1)
    table = tmp_path / "jobs.csv"
    assert run(["schedule", str(trace), "--policy", "FCFS-EASY,FCFS-CONSERVATIVE",
                "--jobs-csv", str(table)]) == 0
    rows = list(csv.DictReader(table.open()))
    assert [row["policy"] for row in rows] == ["FCFS-EASY"] * 5 + ["FCFS-CONSERVATIVE"] * 5
    easy = {row["job_id"]: row for row in rows if row["policy"] == "FCFS-EASY"}
    assert easy["4"]["first_start_s"] == "13" and easy["4"]["waiting_s"] == "10"
    assert len(easy["2"]["machines"].split()) == 4  # J2 took all four machines


def test_a_long_run_reports_its_progress_every_few_seconds_off_a_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dcx.scheduler.runs import run_policy

    ticks = iter(range(0, 10_000, 3))  # a clock 3 s later at each look
    progress = cli.RunProgress("FCFS-EASY", 5000, True, clock=lambda: float(next(ticks)))
    heard: list[int] = []

    def listen(arrived: int) -> None:
        heard.append(arrived)
        progress(arrived)

    trace = tmp_path / "long.swf"
    trace.write_text("; MaxProcs: 2\n" + "".join(
        f"{n} {n} -1 5 1 -1 -1 1 5 -1 1 -1 -1 -1 -1 -1 -1 -1\n" for n in range(1, 5001)))
    from dcx.scheduler.loading import load_problem
    from dcx.scheduler.policies import parse_policy

    problem = load_problem(trace, None).problem
    assert problem is not None
    with progress:
        run_policy(problem, parse_policy("FCFS-EASY"), progress=listen)
    assert heard and heard == sorted(heard) and heard[-1] <= 5000
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("dcx schedule: FCFS-EASY: ") for line in lines)
    assert "of 5,000 task(s) arrived" in lines[0]


def test_a_gantt_chart_has_one_rectangle_per_bar_on_its_machine_row() -> None:
    """The bars are one collection: one filled rectangle per (task, machine), each in the
    row of its machine (the first machine on top) and coloured by its job."""
    import re

    pytest.importorskip("matplotlib")
    from dcx.scheduler import plots

    bars = [(0, 0.0, 10.0, 0), (2, 5.0, 20.0, 1), (2, 30.0, 31.0, 2), (0, 12.0, 12.0, 0)]
    svg = plots.gantt_svg("t", ["a", "b", "c"], bars, "caption")
    group = svg[svg.index('<g id="PolyCollection_1">'):]
    group = group[:group.index("</g>")]
    rectangles = re.findall(r'<path d="M ([\d.]+) ([\d.]+) \s*L [\d.]+ ([\d.]+) \s*L ([\d.]+)',
                            group)
    assert len(rectangles) == len(bars)
    tops = [float(top) for _, top, _, _ in rectangles]
    assert tops[0] < tops[1] == tops[2] and tops[3] == tops[0]  # machine 0 above machine 2
    fills = re.findall(r"fill: (#[0-9a-f]{6})", group)
    assert fills[0] == fills[3] != fills[1] != fills[2]
    assert ">a<" in svg and ">c<" in svg and ">b<" not in svg  # rows of machines with bars


def test_policy_may_be_repeated_and_quiet_keeps_warnings_off(
        files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    trace, setup = files
    assert run(["schedule", str(trace), "--env", str(setup), "--policy", "FCFS-EASY",
                "--policy", "SJF-EASY,FIFO-FIRSTFIT", "--output", "json"]) == 0
    captured = capsys.readouterr()
    runs = json.loads(captured.out)["runs"]
    assert [entry["policy"] for entry in runs] == ["FCFS-EASY", "SJF-EASY", "FIFO-FIRSTFIT"]
    assert "their runtime stands in (an exact estimate)" in captured.err
    from dcx.cli.main import main

    assert main(["schedule", str(trace), "--env", str(setup), "--policy", "FCFS-EASY",
                 "-q"]) == 0
    assert capsys.readouterr().err == ""
