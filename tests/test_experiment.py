"""dcx experiment without a cluster: the experiment file (schema, YAML positions, names,
variables, the product and its exclusions), the results store (parts, compaction, resume),
the summary's confidence intervals and the paper comparison, and ``--report``. The Dask
path is in ``test_experiment_dask.py``."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from dcx.cli.main import main
from dcx.experiments.report import Estimate, Group, paper_tables, t_975
from dcx.experiments.spec import load_experiment
from dcx.experiments.store import ResultStore

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "experiments" / "small.yaml"
GWF = REPO / "examples" / "gwf" / "montage-workflow.gwf"
ENVIRONMENT = REPO / "examples" / "environment" / "small-cluster.json"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def experiment_text(**extra: str) -> str:
    lines = [f"workloads: [{GWF}]", f"environments: [{ENVIRONMENT}]",
             "schedulers: [SRTF-BESTFIT, RANDOM-FIRSTFIT]"]
    lines += [f"{key}: {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------ the file


def test_the_example_experiment_loads_and_names_its_cells() -> None:
    experiment, diagnostics = load_experiment(EXAMPLE)
    assert experiment is not None, [d.render() for d in diagnostics]
    assert not diagnostics
    cells = list(experiment.cells())
    # 2 workflows x 3 SC18 schedulers (RANDOM x 4 seeds) + the trace x 5 (RANDOM x 4)
    assert len(cells) == 2 * (2 + 4) + (4 + 4)
    assert {c.environment.name for c in cells if c.workload.name == "swf-synthetic"} == {"own"}
    assert {c.scheduler.name for c in cells} == {
        "SRTF-BESTFIT", "FIFO-FIRSTFIT", "RANDOM-BESTFIT", "FCFS-EASY", "SJF-EASY"}
    random_seeds = [c.seed for c in cells if c.scheduler.name == "RANDOM-BESTFIT"
                    and c.workload.name == "swf-synthetic"]
    assert len(random_seeds) == 4
    assert sorted(seed for seed in random_seeds if seed is not None) == [0, 1, 2, 3]
    assert all(c.seed is None for c in cells if not c.scheduler.policy.is_random)


def test_a_schema_error_has_line_column_and_pointer(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", experiment_text(time_models="[event, sc19]"))
    experiment, diagnostics = load_experiment(path)
    assert experiment is None
    [found] = diagnostics
    assert (found.code, found.pointer, found.line, found.path) == (
        "schema.enum", "/time_models/1", 4, str(path))


def test_json_experiment_files_are_read_by_the_json_reader(tmp_path: Path) -> None:
    value = {"workloads": [str(GWF)], "environments": [str(ENVIRONMENT)],
             "schedulers": ["SRTF-BESTFIT"], "repeat": 0}
    path = write(tmp_path, "sweep.json", json.dumps(value, indent=1))
    experiment, diagnostics = load_experiment(path)
    assert experiment is None
    [found] = diagnostics
    assert (found.code, found.pointer) == ("schema.minimum", "/repeat")
    assert found.line == 1 + json.dumps(value, indent=1).splitlines()[1:].index(
        ' "repeat": 0') + 1


@pytest.mark.parametrize(("text", "code", "line"), [
    ("workloads: &w [a.gwf]\nschedulers: *w\n", "experiment.yaml-feature", 1),
    ("workloads: [a.gwf]\nschedulers: [!!python/name:os.system x]\n",
     "experiment.yaml-feature", 2),
    ("workloads: [a.gwf]\nworkloads: [b.gwf]\n", "json.duplicate-key", 2),
    ("workloads: [a.gwf\n", "experiment.yaml-syntax", 2),
    ("", "experiment.yaml-syntax", 1),
])
def test_yaml_that_is_not_plain_data_is_refused_where_it_is(
        tmp_path: Path, text: str, code: str, line: int) -> None:
    experiment, diagnostics = load_experiment(write(tmp_path, "x.yaml", text))
    assert experiment is None
    assert [(d.code, d.line) for d in diagnostics] == [(code, line)]


def test_unknown_schedulers_duplicate_names_and_unset_variables(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DCX_NOT_SET", raising=False)
    text = (f"workloads:\n  - {GWF}\n  - {{path: {GWF}}}\n"
            "environments: ['${DCX_NOT_SET}/setup.json']\n"
            "schedulers: [SRTF-BESTFIT, SRTF-NEXTFIT]\n")
    experiment, diagnostics = load_experiment(write(tmp_path, "x.yaml", text))
    assert experiment is None
    assert sorted((d.code, d.pointer, d.line) for d in diagnostics) == [
        ("experiment.duplicate-name", "/workloads/1", 3),
        ("experiment.unknown-scheduler", "/schedulers/1", 5),
        ("experiment.variable", "/environments/0", 4),
    ]


def test_variables_with_defaults_and_paths_relative_to_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCX_TEST_EXAMPLES", str(REPO / "examples"))
    text = ("workloads: ['${DCX_TEST_EXAMPLES}/gwf/montage-workflow.gwf']\n"
            "environments: ['${DCX_TEST_UNSET_HERE:-env}/cluster.json']\n"
            "schedulers: [{file: sched.json}]\n")
    write(tmp_path, "sched.json", '{"name": "MINE", "stages": {"T2": "SJF", "R5": "BESTFIT"}}')
    experiment, diagnostics = load_experiment(write(tmp_path, "x.yaml", text))
    assert experiment is not None, [d.render() for d in diagnostics]
    assert experiment.workloads[0].path == GWF
    assert experiment.environments[0].path == tmp_path / "env" / "cluster.json"
    assert experiment.schedulers[0].name == "MINE"
    assert experiment.schedulers[0].policy.task_order == "SJF"


def test_exclusions_and_reserving_schedulers_under_sc18(tmp_path: Path) -> None:
    text = experiment_text(time_models="[sc18, event]", repeat="3") + (
        "exclude:\n  - {scheduler: RANDOM-FIRSTFIT, seed: [0, 2]}\n"
        "  - {scheduler: SRTF-BESTFIT, time_model: sc18}\n")
    text = text.replace("RANDOM-FIRSTFIT]", "RANDOM-FIRSTFIT, FCFS-EASY]")
    experiment, diagnostics = load_experiment(write(tmp_path, "x.yaml", text))
    assert experiment is not None
    assert [d.code for d in diagnostics] == ["experiment.event-only"]
    cells = [(c.scheduler.name, c.time_model, c.seed) for c in experiment.cells()]
    assert cells == [("SRTF-BESTFIT", "event", None), ("RANDOM-FIRSTFIT", "sc18", 1),
                     ("RANDOM-FIRSTFIT", "event", 1), ("FCFS-EASY", "event", None)]


def test_seeds_and_repeat_exclude_each_other_and_an_empty_product_is_an_error(
        tmp_path: Path) -> None:
    both = write(tmp_path, "both.yaml", experiment_text(seeds="[1]", repeat="2"))
    assert [(d.code, d.pointer, d.line) for d in load_experiment(both)[1]] == [
        ("experiment.seeds-and-repeat", "/repeat", 5)]
    empty = write(tmp_path, "empty.yaml", experiment_text() + "exclude: [{time_model: event}]\n")
    experiment, diagnostics = load_experiment(empty)
    assert experiment is None
    assert [(d.code, d.pointer) for d in diagnostics] == [("experiment.no-cells", "/exclude")]


# -------------------------------------------------------------------------- the store


def _rows(keys: list[str], value: float = 1.0) -> list[dict[str, object]]:
    return [{"cell_key": key, "jms_s": value, "seed": None} for key in keys]


def test_compaction_keeps_every_finished_row_once(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, flush_rows=2)
    for row in _rows(["a", "b", "c"]):
        store.add(row)
    assert len(store.results.part_files()) == 1  # two rows flushed, one still buffered
    assert store.stored_keys() == {"a", "b"}
    store.close()
    assert not store.results.part_files()
    assert pq.read_table(tmp_path / "results.parquet").column("cell_key").to_pylist() == [
        "a", "b", "c"]


def test_a_part_that_outlived_its_compaction_is_not_taken_twice(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.results.write_part(_rows(["a", "b"]))
    leftover = store.results.part_files()[0].read_bytes()
    store.close()
    # a crash between writing results.parquet and removing the part it read
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "part-old.parquet").write_bytes(leftover)
    store.results.write_part(_rows(["c"], 2.0))
    table = ResultStore(tmp_path).close()
    assert table is not None
    assert sorted(table.column("cell_key").to_pylist()) == ["a", "b", "c"]


def test_parts_with_and_without_seeds_concatenate(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.results.write_part(_rows(["a"]))
    store.results.write_part([{"cell_key": "b", "jms_s": 2.0, "seed": 7}])
    table = store.close()
    assert table is not None and table.column("seed").to_pylist() == [None, 7]


def test_a_first_run_writes_each_table_whole_without_parts(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    for row in _rows(["a", "b"]):
        store.add(row, [{"cell_key": row["cell_key"], "job_id": "1", "waiting_s": 0.0}])
    table = store.close()
    assert not (tmp_path / "parts").exists() and not (tmp_path / "jobs-parts").exists()
    assert table is not None and table.column("cell_key").to_pylist() == ["a", "b"]
    assert pq.read_table(tmp_path / "results.parquet").equals(table)
    assert pq.read_table(tmp_path / "jobs.parquet").num_rows == 2
    # a key twice among the rows goes the way of parts: its first row is kept
    again = ResultStore(tmp_path / "again")
    for row in [*_rows(["a"], 1.0), *_rows(["a"], 2.0)]:
        again.add(row)
    kept = again.close()
    assert kept is not None and kept.to_pylist() == [{"cell_key": "a", "jms_s": 1.0,
                                                      "seed": None}]


# ------------------------------------------------------------------------- batches


def test_cells_go_out_shuffled_the_same_way_every_run() -> None:
    from dcx.experiments.execute import spread_order

    for count in (0, 1, 2, 7, 100):
        order = spread_order(count)
        assert sorted(order) == list(range(count)) and order == spread_order(count)
    # the first quarter of a 5 x 20 sweep in load-major order holds late (dear) cells too
    assert max(spread_order(100)[:25]) >= 75


def _queue(counts: dict[str, int], pairs: tuple[str, ...] = ("a",)) -> Any:
    """A queue of cells: ``counts`` cells of each named scheduler, for each pair, the
    schedulers taking turns (as in a shuffled sweep)."""
    from dcx.experiments import execute
    from dcx.experiments.cells import CellTask
    from dcx.scheduler.policies import parse_policy

    cells = [((pair, "own"), CellTask(f"{pair}-{name}-{index}", {}, parse_policy(name),
                                      "event", None, False, False))
             for pair in pairs for index in range(max(counts.values()))
             for name, count in counts.items() if index < count]
    return execute._CellQueue(cells)


def test_batches_start_blind_and_bounded() -> None:
    queue = _queue({"FCFS": 100})
    sizes = [len(queue.take(threads=2).tasks) for _ in range(4)]
    # each thread's first batch, then its second (a few cells, so none waits for results)
    assert sizes == [16, 16, 4, 4]
    assert len(_queue({"FCFS": 12}).take(threads=2).tasks) == 3  # a share, as any batch


def test_measured_cells_go_dearest_first_in_shares_of_the_seconds_left() -> None:
    queue = _queue({"FCFS": 40, "FCFS-EASY": 40})
    first = queue.take(threads=2)
    for task in first.tasks:  # FCFS cells cost 10 ms, FCFS-EASY ones 30 ms
        queue.measure(first.pair, task, 0.03 if task.policy.name == "FCFS-EASY" else 0.01)
    queue.reorder()
    rest = [task.policy.name for _, task in queue.cells[queue.position:]]
    assert rest == sorted(rest, key=lambda name: name != "FCFS-EASY")  # dearest first
    left_s = queue.left_s
    assert math.isclose(left_s, sum(0.03 if name == "FCFS-EASY" else 0.01 for name in rest))
    batch = queue.take(threads=2)
    taken_s = 0.03 * len(batch.tasks)
    assert taken_s >= left_s / 4 > taken_s - 0.03  # a quarter of the seconds left
    while len(queue) > 6:
        queue.take(threads=2)
    last = queue.take(threads=2)
    assert {task.policy.name for task in last.tasks} == {"FCFS"}  # the cheapest go last
    assert len(last.tasks) <= 3  # the floor gives way: each thread gets a batch


def test_a_scheduler_not_measured_yet_counts_as_the_dearest() -> None:
    queue = _queue({"FCFS": 20, "SJF-EASY": 20})
    queue.position = 1
    queue.measure(("a", "own"), queue.cells[0][1], 0.02)  # only an FCFS cell came back
    queue.reorder()
    assert queue.cells[queue.position][1].policy.name == "SJF-EASY"


def test_a_batch_holds_one_pair_and_about_a_second_at_most() -> None:
    queue = _queue({"FCFS": 30}, pairs=("a", "b"))
    blind = [queue.take(threads=1) for _ in range(3)]
    assert [len(batch.tasks) for batch in blind] == [16, 4, 4]
    assert {task.key[0] for batch in blind for task in batch.tasks} == {"a"}
    for task in blind[0].tasks:
        queue.measure(blind[0].pair, task, 0.4)
    queue.reorder()
    batch = queue.take(threads=1)
    assert {task.key[0] for task in batch.tasks} == {"a"}
    assert len(batch.tasks) == 3  # cells of 0.4 s up to about a second
    while queue.cells[queue.position][0][0] == "a":
        queue.take(threads=1)
    assert {task.key[0] for task in queue.take(threads=1).tasks} == {"b"}


def _measured_queue(counts: dict[str, int], wall_s: float) -> Any:
    """``_queue(counts)`` whose first batch came back, each cell after ``wall_s``."""
    queue = _queue(counts)
    first = queue.take(threads=2)
    for task in first.tasks:
        queue.measure(first.pair, task, wall_s)
    queue.reorder()
    return queue


def _sweep_of(queue: Any, loads: list[float]) -> Any:
    """A ``_DaskSweep`` (no cluster) whose runners hold one batch of the given estimated
    seconds each (none where the load is 0), on one thread each."""
    from dcx.experiments import execute

    sweep = object.__new__(execute._DaskSweep)
    sweep.todo, sweep.again, sweep.threads = queue, [], len(loads)
    sweep.runners = {}
    for index, load in enumerate(loads):
        runner = execute._Runner(f"w{index}", 1, None, actor=object())
        if load:
            runner.calls[index] = execute._Batch(("a", "own"), [], estimate_s=load)
        sweep.runners[runner.address] = runner
    return sweep


def test_the_tail_goes_to_the_worker_free_first_and_none_to_one_ahead() -> None:
    queue = _measured_queue({"FCFS": 40}, 0.01)
    queue.position, queue.left_s = len(queue.cells) - 5, 0.05  # five 10 ms cells left
    sweep = _sweep_of(queue, [0.2, 0.1])
    runner = sweep.next_runner()
    assert runner is not None and runner.address == "w1"  # free first
    batch = sweep.next_batch(runner)
    assert len(batch.tasks) == 3  # a factoring share of the 50 ms left, no floor of 50 ms
    runner.calls[9] = batch
    # w1 holds two batches now; w0 is ahead of where both would end: the rest waits for
    # whichever is free first
    assert sweep.finish_s() < 0.2 and sweep.next_runner() is None


def test_a_worker_with_nothing_gets_cells_whatever_the_estimates() -> None:
    queue = _measured_queue({"FCFS": 40}, 0.01)
    queue.left_s = 0.0  # the estimate rounded away while cells are left
    sweep = _sweep_of(queue, [0.0, 0.0])  # and nothing in flight: no call will wake it
    runner = sweep.next_runner()
    assert runner is not None and runner.address == "w0" and sweep.next_batch(runner).tasks


def test_no_batch_is_larger_than_max_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    from dcx.experiments import execute

    monkeypatch.setattr(execute, "MAX_BATCH", 1)  # one cell per call
    queue = _queue({"FCFS": 100})
    assert len(queue.take(threads=2).tasks) == 1
    queue.measure(("a", "own"), queue.cells[0][1], 0.001)
    queue.reorder()
    assert len(queue.take(threads=2).tasks) == 1


# --------------------------------------------------------------------------- summary


def test_confidence_intervals_use_students_t() -> None:
    estimate = Estimate.of([1.0, 2.0, 3.0])
    assert estimate is not None and estimate.n == 3 and estimate.mean == 2.0
    assert estimate.high is not None and estimate.low is not None
    assert math.isclose(estimate.high - 2.0, 4.303 * math.sqrt(1 / 3), rel_tol=1e-9)
    assert math.isclose(t_975(40), 2.0211, abs_tol=1e-3)
    assert math.isclose(t_975(31), 2.0395, abs_tol=1e-3)
    single = Estimate.of([5.0])
    assert single is not None and single.low is None and single.text(1) == "5.0"
    assert Estimate.of([]) is None


def test_the_paper_table_judges_rows_of_a_paper_trace() -> None:
    from dcx.scheduler.paper import TABLE_XII_CHRONOS

    def rows(scheduler: str, values: list[tuple[float, float, float]],
             seeds: list[int | None]) -> Group:
        return Group("chronos", "setup.json", "sc18", scheduler, [
            {"workload_path": "/x/chronos_exp_noscaler_ca.gwf", "seed": seed,
             "jms_s": jms, "njsl": njsl, "jwt_s": jwt}
            for (jms, njsl, jwt), seed in zip(values, seeds, strict=True)])

    fifo = TABLE_XII_CHRONOS["FIFO-BESTFIT"]
    groups = [rows("FIFO-BESTFIT", [(fifo.jms_s, fifo.njsl, fifo.jwt_s)], [None]),
              rows("SRTF-BESTFIT", [(300.0, 25.0, 262.0)], [None]),
              rows("RANDOM-FIRSTFIT", [(360.0, 50.0, 350.0), (366.0, 52.0, 358.0)], [0, 1]),
              Group("other", "e", "event", "FIFO-BESTFIT", [])]
    text, verdicts = paper_tables(groups)
    assert "Table XII" in text and "Table XI:" not in text
    assert [(row["scheduler"], row["verdict"]) for row in verdicts] == [
        ("FIFO-BESTFIT", "reproduced"), ("SRTF-BESTFIT", "differs"),
        ("RANDOM-FIRSTFIT", "reproduced")]


# ----------------------------------------------------------------------- the command


def test_an_inline_run_then_report_renders_the_same_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["experiment", str(EXAMPLE), "--out", str(out), "--workers", "0"]) == 0
    printed = capsys.readouterr()
    assert "20 to run in this process" in printed.err
    table = pq.read_table(out / "results.parquet")
    assert table.num_rows == 20 and len(set(table.column("cell_key").to_pylist())) == 20
    for column in ("workload", "environment", "scheduler", "time_model", "seed", "jms_s",
                   "wait_p99_s", "utilization", "wall_s", "dcx_version", "workload_sha256"):
        assert column in table.column_names, column
    jobs = pq.read_table(out / "jobs.parquet")
    assert set(jobs.column("cell_key").to_pylist()) <= set(table.column("cell_key").to_pylist())
    summary = (out / "summary.md").read_text()
    # the end says where things are; the summary itself stays in its file
    assert re.fullmatch(
        rf"experiment small: ran 20 cell\(s\) in \d+ s\n"
        rf"  results:  {re.escape(str(out / 'results.parquet'))} \(20 row\(s\)\)\n"
        rf"  summary:  {re.escape(str(out / 'summary.md'))} \(summary.json and plots/ "
        r"beside it\)\n", printed.out)
    assert "| RANDOM-BESTFIT | 4 |" in summary
    assert (out / "plots" / "swf-synthetic--own--event" / "metrics.svg").is_file()
    assert (out / "plots" / "swf-synthetic--own--event" / "jms.svg").is_file()

    (out / "summary.md").unlink()
    assert main(["experiment", "--report", str(out / "results.parquet"), "--no-plots"]) == 0
    assert (out / "summary.md").read_text() == summary
    assert capsys.readouterr().out.splitlines() == [
        "experiment small: summary written again from the stored rows, nothing run",
        f"  results:  {out / 'results.parquet'} (20 row(s))",
        f"  summary:  {out / 'summary.md'} (summary.json beside it)"]


SCHEDULE_COLUMNS = ["cell_key", "job_id", "task_id", "submit_s", "start_s", "finish_s",
                    "machines"]


def test_schedules_record_each_run_and_draw_its_gantt_chart_and_trt(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "sweep.yaml", experiment_text(repeat="2"))
    out = tmp_path / "out"
    assert main(["experiment", str(path), "--out", str(out), "--workers", "0",
                 "--schedules", "--no-plots"]) == 0
    table = pq.read_table(out / "results.parquet")
    assert table.num_rows == 3  # SRTF-BESTFIT once, RANDOM-FIRSTFIT per seed
    for row in table.to_pylist():
        schedule = pq.read_table(out / "schedules" / f"{row['cell_key']}.parquet")
        assert schedule.column_names == SCHEDULE_COLUMNS
        assert schedule.num_rows == row["tasks"] == 17
        assert set(schedule.column("cell_key").to_pylist()) == {row["cell_key"]}
        tasks = schedule.to_pylist()
        assert all(task["submit_s"] <= task["start_s"] <= task["finish_s"] and task["machines"]
                   for task in tasks)
        assert math.isclose(math.fsum(t["finish_s"] - t["submit_s"] for t in tasks) / 17,
                            row["trt_s"], rel_tol=1e-12)
        assert "schedules=true" in row["options"]
    # the figures come from the stored schedules (as after a sweep with plots)
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (plots extra)")
    assert main(["experiment", "--report", str(out)]) == 0
    setting = out / "plots" / f"{GWF.name}--{ENVIRONMENT.name}--event"
    assert (setting / "trt.svg").is_file()
    runs = ["RANDOM-FIRSTFIT_seed_0", "RANDOM-FIRSTFIT_seed_1", "SRTF-BESTFIT"]
    assert sorted(gantt.parent.name for gantt in setting.glob("*/gantt.svg")) == runs
    capsys.readouterr()
    # drawn by a pool of processes (as for many settings), the same files
    from dcx.experiments.report import groups, write_plots
    from dcx.experiments.schedules import read_schedules

    keys = table.column("cell_key").to_pylist()
    pooled = write_plots(tmp_path / "pooled", groups(table), pq.read_table(out / "jobs.parquet")
                         if (out / "jobs.parquet").is_file() else None,
                         read_schedules(out, keys), processes=2)
    assert sorted(path.relative_to(tmp_path / "pooled") for path in pooled) == sorted(
        path.relative_to(out / "plots") for path in (out / "plots").rglob("*.svg"))
    assert all(path.read_bytes() == (out / "plots" / path.relative_to(tmp_path / "pooled")
                                     ).read_bytes() for path in pooled)


def test_runs_with_the_same_schedule_share_one_gantt_chart_that_names_them() -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (plots extra)")
    from dcx.experiments.plots import schedule_figures

    def schedule(key: str, start: float) -> object:
        return pa.table({"cell_key": [key] * 2, "job_id": ["1", "2"], "task_id": ["1", "2"],
                         "submit_s": [0.0, 0.0], "start_s": [0.0, start],
                         "finish_s": [5.0, start + 5.0], "machines": [["n1"], ["n2"]]})

    members = [Group("w", "e", "event", name, [{"cell_key": name, "seed": None}])
               for name in ("FIFO-BESTFIT", "SRTF-BESTFIT", "FCFS-EASY")]
    figures = schedule_figures("w", "e", "event", members, {
        "FIFO-BESTFIT": schedule("FIFO-BESTFIT", 0.0),
        "SRTF-BESTFIT": schedule("SRTF-BESTFIT", 0.0),
        "FCFS-EASY": schedule("FCFS-EASY", 5.0)})
    assert sorted(figures) == ["FCFS-EASY/gantt.svg", "FIFO-BESTFIT/gantt.svg",
                               "SRTF-BESTFIT/gantt.svg", "trt.svg"]
    assert figures["FIFO-BESTFIT/gantt.svg"] == figures["SRTF-BESTFIT/gantt.svg"]
    assert "The same schedule: FIFO-BESTFIT, SRTF-BESTFIT." in figures["FIFO-BESTFIT/gantt.svg"]
    assert "The same schedule" not in figures["FCFS-EASY/gantt.svg"]


def test_without_the_schedules_option_cell_keys_stay_as_they_were() -> None:
    from dcx.experiments.spec import Options

    assert Options().as_dict() == {"repeat_deterministic": False, "measure_stages": False,
                                   "per_job": False}
    assert Options(schedules=True).as_dict()["schedules"] is True


def test_without_matplotlib_one_note_says_so_before_anything_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    path = write(tmp_path, "sweep.yaml", experiment_text())
    out = tmp_path / "out"
    assert main(["experiment", str(path), "--out", str(out), "--workers", "0",
                 "--schedules"]) == 0
    err = capsys.readouterr().err.splitlines()
    note = (f"dcx experiment: note: {out}: no plots: they need matplotlib, the plots extra "
            "(pip install 'dcx[plots]'); the other files are written")
    assert err.count(note) == 1
    assert err.index(note) < next(i for i, line in enumerate(err)
                                  if line.startswith("experiment sweep: "))
    assert (out / "summary.md").is_file() and len(list((out / "schedules").iterdir())) == 2
    assert not (out / "plots").exists()


def test_usage_errors_exit_2_and_invalid_files_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["experiment"]) == 2
    assert main(["experiment", "--report", str(tmp_path)]) == 2
    assert main(["experiment", str(EXAMPLE), "--workers", "-1"]) == 2
    bad = write(tmp_path, "bad.yaml", "workloads: []\nschedulers: [FCFS]\n")
    assert main(["experiment", str(bad), "--out", str(tmp_path / "o")]) == 1
    assert f"{bad}:1:" in capsys.readouterr().err
    missing = write(tmp_path, "missing.yaml", experiment_text().replace(
        str(GWF), str(tmp_path / "nope.gwf")))
    assert main(["experiment", str(missing), "--out", str(tmp_path / "o"),
                 "--workers", "0"]) == 1
    assert (f"{missing}:1:13: error: /workloads/0: cannot read {tmp_path / 'nope.gwf'}: No "
            "such file or directory; its 2 cell(s) are not run") in capsys.readouterr().err
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    pq.write_table(pa.table({"x": [1]}), foreign / "results.parquet")
    assert main(["experiment", "--report", str(foreign)]) == 1
    assert "is not a results table (no cell_key, experiment" in capsys.readouterr().err
    (foreign / "results.parquet").write_text("not parquet")
    assert main(["experiment", "--report", str(foreign)]) == 1


def test_an_interrupted_sweep_keeps_its_finished_rows_and_the_rerun_does_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from dcx.experiments import cells as execute
    from dcx.experiments.cells import CellResult, CellTask
    from dcx.scheduler.problem import Problem

    real_run_cell = execute.run_cell
    done: list[str] = []

    def interrupted_after_seven(problem: Problem, task: CellTask) -> CellResult:
        if len(done) == 7:
            raise KeyboardInterrupt
        result = real_run_cell(problem, task)
        done.append(result.key)
        return result

    monkeypatch.setattr(execute, "run_cell", interrupted_after_seven)
    out = tmp_path / "out"
    assert main(["experiment", str(EXAMPLE), "--out", str(out), "--workers", "0",
                 "--no-plots"]) == 130
    err = capsys.readouterr().err
    assert "interrupted; 7 finished row(s) kept" in err
    assert err.count("dcx experiment: interrupted") == 1  # one line says so
    kept = pq.read_table(out / "results.parquet").column("cell_key").to_pylist()
    assert kept == done

    monkeypatch.setattr(execute, "run_cell", real_run_cell)
    assert main(["experiment", str(EXAMPLE), "--out", str(out), "--workers", "0",
                 "--no-plots"]) == 0
    assert "20 cell(s), 7 already stored, 13 to run" in capsys.readouterr().err
    keys = pq.read_table(out / "results.parquet").column("cell_key").to_pylist()
    assert len(keys) == len(set(keys)) == 20 and keys[:7] == done


def test_a_reserving_scheduler_runs_a_workload_that_asks_for_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Backfilling schedules memory as the SC18 policies do, in an experiment as in
    ``dcx schedule``: both cells run."""
    grid = REPO / "examples" / "gwf" / "grid-archive.gwf"  # its tasks ask for memory
    path = write(tmp_path, "x.yaml", experiment_text().replace(
        "RANDOM-FIRSTFIT]", "FCFS-EASY]").replace(str(GWF), str(grid)))
    assert main(["experiment", str(path), "--out", str(tmp_path / "o"), "--workers", "0",
                 "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "2 cell(s), 0 already stored, 2 to run" in err
    table = pq.read_table(tmp_path / "o" / "results.parquet")
    assert sorted(table.column("scheduler").to_pylist()) == ["FCFS-EASY", "SRTF-BESTFIT"]


def test_one_vocabulary_for_dcx_schedule_and_the_results_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every metric ``dcx schedule --output json`` prints is a column of the results table
    under the same name, with the same value, for the same run (utilization a fraction)."""
    path = write(tmp_path, "x.yaml", experiment_text().replace(", RANDOM-FIRSTFIT", ""))
    out = tmp_path / "out"
    assert main(["experiment", str(path), "--out", str(out), "--workers", "0",
                 "--no-plots"]) == 0
    [row] = pq.read_table(out / "results.parquet").to_pylist()
    capsys.readouterr()
    assert main(["schedule", str(GWF), "--env", str(ENVIRONMENT), "--policy", "SRTF-BESTFIT",
                 "--output", "json"]) == 0
    [run] = json.loads(capsys.readouterr().out)["runs"]
    assert run["metrics"]["utilization"] < 1
    for name, value in run["metrics"].items():
        assert name in row, name
        assert row[name] == pytest.approx(value), name
    summary = (out / "summary.md").read_text()
    assert f"| {run['metrics']['utilization'] * 100:.1f} |" in summary  # as dcx schedule: %


def test_a_table_written_with_the_old_metric_names_reports_under_the_new_ones() -> None:
    from dcx.experiments.report import current_names

    old = pa.table({"cell_key": ["a", "b"], "utilisation": [0.5, None],
                    "wait_mean": [3.0, None], "utilization": [None, 0.25],
                    "wait_mean_s": [None, 4.0]})
    table = current_names(old)
    assert "utilisation" not in table.column_names and "wait_mean" not in table.column_names
    assert table.column("utilization").to_pylist() == [0.5, 0.25]
    assert table.column("wait_mean_s").to_pylist() == [3.0, 4.0]
