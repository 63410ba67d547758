"""``--fill speed=…`` and ``--fill runtime=requested`` on Batsim workloads: a compute profile's
runtime where Batsim's semantics make it exact, a walltime as the runtime of a job that has
none, and Batsim -> SWF -> Batsim keeping every job with its walltime and hosts. Small files
of our own shaped like Batsim's test workloads (``test_walltime.json``, ``test_usage_trace
.json``), then the two upstream files themselves (shared corpus)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dcx.cli.main import main
from dcx.converters.convert import convert
from dcx.converters.fill import apply_fills, parse_fill
from dcx.converters.registry import FORMATS
from dcx.core.columns import WorkloadColumns, columnar, columns_of
from dcx.core.model import Document, Job, Task, Workload
from dcx.formats import batsim, swf
from dcx.formats.batsim.work import NETWORK, profile_runtime

GF = 1e9


def _workload(jobs: list[dict[str, Any]], profiles: dict[str, Any], nb_res: int = 8) -> bytes:
    return json.dumps({"nb_res": nb_res, "jobs": jobs, "profiles": profiles}).encode()


def _job(job_id: Any, profile: str, res: int = 1, subtime: float = 0,
         walltime: float | None = None) -> dict[str, Any]:
    job = {"id": job_id, "subtime": subtime, "res": res, "profile": profile}
    if walltime is not None:
        job["walltime"] = walltime
    return job


# Shaped like Batsim's workloads/test_walltime.json: delay jobs and compute-only jobs of ten
# seconds at 1 Gf, most with a walltime (some shorter than the job), the last two without.
WALLTIME = _workload(
    [_job(n, "delay_10s", walltime=n * 4) for n in range(1, 5)]
    + [_job(5, "delay_10s"), _job(6, "delay_10s", subtime=10)]
    + [_job(1000 + n, "compute_only_10s", walltime=n * 4) for n in range(1, 5)]
    + [_job(1005, "compute_only_10s"), _job(1006, "compute_only_10s", subtime=10)],
    {"delay_10s": {"type": "DelayProfile", "delay": 10},
     "compute_only_10s": {"type": "ParallelTaskHomogeneousProfile", "cpu": 1e10, "com": 0}},
    nb_res=64)

# Shaped like workloads/test_usage_trace.json: trace-replay jobs, every one with a walltime,
# beside one delay job.
USAGE_TRACE = _workload(
    [_job("j0-ok", "delay-10s", res=2, walltime=100)]
    + [_job(f"j{n}-ok", "ut-homo", res=2, subtime=100 * n, walltime=100) for n in range(1, 4)]
    + [_job("j9-wt", "ut-real", res=4, subtime=1000, walltime=2000)],
    {"delay-10s": {"type": "DelayProfile", "delay": 10},
     "ut-homo": {"type": "TraceReplayProfile", "trace_type": "FractionalComputation",
                 "filename": "usage-trace/homo/traces.txt"},
     "ut-real": {"type": "TraceReplayProfile", "trace_type": "FractionalComputation",
                 "filename": "usage-trace/real/1.txt"}},
    nb_res=4)


def _read(data: bytes) -> Document:
    result = batsim.read(data)
    assert result.ok and result.document is not None, result.diagnostics
    return result.document


def _jobs(document: Document) -> list[tuple[Any, ...]]:
    """What Batsim -> SWF -> Batsim must keep of each job: its walltime and its hosts (SWF
    numbers the jobs, so in submit order)."""
    assert document.workload is not None
    tasks = sorted(document.workload.tasks(), key=lambda task: task.submit_time_s)
    return [(task.submit_time_s, task.requested_time_s, task.request.nodes) for task in tasks]


def _through_swf(data: bytes, *fills: str) -> tuple[Document, Any, Any]:
    """Batsim -> SWF (with ``fills``) -> Batsim: the document back and both conversions."""
    to_swf = convert(data, "swf", fills=[parse_fill(text) for text in fills])
    assert to_swf.ok, to_swf.diagnostics
    back = convert(to_swf.data, "batsim")
    assert back.ok, back.diagnostics
    assert back.output_document is not None
    return back.output_document, to_swf, back


# --------------------------------------------------------------------------- profiles


def _runtime(definition: dict[str, Any], hosts: int = 2,
             others: dict[str, Any] | None = None) -> float | str:
    return profile_runtime("p", {"p": definition, **(others or {})}, hosts, GF)


@pytest.mark.parametrize(("definition", "hosts", "expected"), [
    ({"type": "parallel_homogeneous", "cpu": 2e10, "com": 0}, 4, 20.0),
    ({"type": "ParallelTaskHomogeneousProfile", "cpu": 2e10, "com": 0}, 4, 20.0),
    ({"type": "ptask_homogeneous", "cpu": 1e10, "com": 0}, 1, 10.0),
    # Batsim sends com between distinct hosts only: a one-host job has no traffic
    ({"type": "parallel_homogeneous", "cpu": 1e10, "com": 5e8}, 1, 10.0),
    ({"type": "parallel_homogeneous", "cpu": 1e10, "com": 5e8}, 2, NETWORK),
    # the total, spread over the job's hosts
    ({"type": "parallel_homogeneous_total", "cpu": 4e10, "com": 0}, 4, 10.0),
    ({"type": "ParallelTaskHomogeneousProfile", "cpu": 4e10, "com": 0,
      "generation_strategy": "DefinedAmountsSpreadUniformly"}, 8, 5.0),
    # the slowest host of a parallel task with a zero com matrix
    ({"type": "parallel", "cpu": [1e9, 3e9], "com": [0, 0, 0, 0]}, 2, 3.0),
    ({"type": "ParallelTaskProfile", "cpu": [1e9, 5e9]}, 2, 5.0),
    ({"type": "parallel", "cpu": [1e9, 3e9], "com": [0, 1, 0, 0]}, 2, NETWORK),
    ({"type": "usage_trace", "trace": "a.txt"}, 2, "profile type 'usage_trace'"),
    ({"type": "TraceReplayProfile", "filename": "a.txt"}, 2,
     "profile type 'TraceReplayProfile'"),
    ({"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e9}, 2,
     "profile type 'parallel_homogeneous_pfs'"),
])
def test_a_profile_has_a_runtime_where_batsim_makes_it_exact(definition, hosts, expected):
    assert _runtime(definition, hosts) == expected


def test_a_sequence_repeats_its_members_delays_and_compute_alike():
    members = {"wait": {"type": "delay", "delay": 5},
               "work": {"type": "parallel_homogeneous", "cpu": 2e9, "com": 0}}
    assert _runtime({"type": "composed", "repeat": 3, "seq": ["wait", "work"]},
                    others=members) == 21.0
    assert _runtime({"type": "SequentialCompositionProfile", "seq": ["work", "work"]},
                    others=members) == 4.0
    # one member with traffic: the sequence has no exact runtime either
    members["work"] = {"type": "parallel_homogeneous", "cpu": 2e9, "com": 1}
    assert _runtime({"type": "composed", "seq": ["wait", "work"]}, others=members) == NETWORK
    assert "runs itself" in str(_runtime({"type": "composed", "seq": ["p"]}))


def test_the_fill_gives_a_runtime_only_to_tasks_without_one():
    document = _read(WALLTIME)
    filled, [done] = apply_fills(document, [parse_fill("speed=1Gf")], FORMATS)
    assert done.tasks == 6 and not done.not_filled
    assert filled.workload is not None and document.workload is not None
    for before, after in zip(document.workload.tasks(), filled.workload.tasks(), strict=True):
        # the delay jobs keep their 10 s (a fill never changes a stated value)
        assert after.runtime_s == (before.runtime_s if before.runtime_s is not None else 10.0)
        assert after.requested_time_s == before.requested_time_s
    assert done.render() == "filled speed=1 Gf into 6 tasks"
    # twice as fast hosts: half the time
    twice = apply_fills(document, [parse_fill("speed=2Gf")], FORMATS)[0]
    assert twice.workload is not None
    assert {task.runtime_s for task in twice.workload.tasks()} == {10.0, 5.0}


def test_runtime_requested_never_overrides_a_runtime_and_comes_after_speed():
    document = _read(WALLTIME)
    # the order given does not matter: speed first, its exact runtimes kept
    filled, (by_walltime, by_speed) = apply_fills(
        document, [parse_fill("runtime=requested"), parse_fill("speed=1Gf")], FORMATS)
    assert (by_speed.tasks, by_walltime.tasks) == (6, 0)
    assert filled.workload is not None
    assert {task.runtime_s for task in filled.workload.tasks()} == {10.0}
    assert by_walltime.render() == "filled runtime=requested into 0 tasks"


def test_jobs_whose_profiles_give_no_exact_runtime_are_counted_by_why():
    document = _read(USAGE_TRACE)
    filled, (by_speed, by_walltime) = apply_fills(
        document, [parse_fill("speed=1Gf"), parse_fill("runtime=requested")], FORMATS)
    assert by_speed.tasks == 0
    assert by_speed.not_filled == (("profile type 'TraceReplayProfile'", 4),)
    assert by_speed.render() == (
        "filled speed=1 Gf into 0 tasks, not into 4 whose work gives no exact runtime "
        "(4 with profile type 'TraceReplayProfile')")
    assert by_walltime.tasks == 4
    assert filled.workload is not None
    assert [task.runtime_s for task in filled.workload.tasks()] == [10, 100, 100, 100, 2000]


def test_runtime_requested_fills_a_columnar_trace_column_by_column():
    lines = ["; Version: 2.2"] + [
        f"{n} {n * 10} 0 {runtime} 1 -1 -1 1 {requested} -1 1 1 1 -1 -1 -1 -1 -1"
        for n, (runtime, requested) in enumerate([(100, 200), (-1, 300), (-1, -1)], start=1)]
    read = swf.read(("\n".join(lines) + "\n").encode()).document
    assert read is not None and read.workload is not None
    columns = WorkloadColumns.from_jobs(read.workload.jobs)
    assert columns is not None  # (a small file reads as objects: made columns here)
    document = Document(workload=columnar(read.workload, columns))
    filled, [done] = apply_fills(document, [parse_fill("runtime=requested")], FORMATS)
    assert done.tasks == 1 and filled.workload is not None
    assert columns_of(filled.workload) is not None
    assert [task.runtime_s for task in filled.workload.tasks()] == [100, 300, None]
    by_objects = apply_fills(read, [parse_fill("runtime=requested")], FORMATS)[0]
    assert by_objects.workload is not None
    assert list(by_objects.workload.tasks()) == list(filled.workload.tasks())


def test_a_workload_of_objects_without_runtimes_is_filled_task_by_task():
    tasks = (Task(id=1, requested_time_s=60.0), Task(id=2, runtime_s=5.0,
                                                     requested_time_s=60.0))
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=tasks),)))
    filled, [done] = apply_fills(document, [parse_fill("runtime=requested")], FORMATS)
    assert done.tasks == 1 and filled.workload is not None
    assert [task.runtime_s for task in filled.workload.tasks()] == [60.0, 5.0]


# --------------------------------------------------------------------------- round trips


def test_without_fills_swf_to_batsim_leaves_out_the_jobs_without_runtime_and_says_so():
    back, _, to_batsim = _through_swf(WALLTIME)
    assert len(_jobs(back)) == 6  # the delay jobs
    (left,) = [loss for loss in to_batsim.losses if loss.field == "task"]
    assert left.count == 6
    # the first compute job: SWF writes in submit order, five delay jobs before it
    assert left.first == "/workload/jobs/5/tasks/0"
    assert to_batsim.fill_hint is not None
    assert to_batsim.fill_hint.startswith("batsim leaves out 6 tasks;")
    assert "--fill runtime=requested" in to_batsim.fill_hint
    assert "--fill speed=1Gf" in to_batsim.fill_hint


@pytest.mark.parametrize("data", [WALLTIME, USAGE_TRACE], ids=["walltime", "usage-trace"])
def test_with_both_fills_batsim_through_swf_keeps_every_job_its_walltime_and_hosts(data):
    original = _read(data)
    back, to_swf, to_batsim = _through_swf(data, "speed=1Gf", "runtime=requested")
    assert _jobs(back) == _jobs(original)
    assert "task" not in {loss.field for loss in to_batsim.losses}
    assert to_batsim.fill_hint is None
    assert sum(done.tasks for done in to_swf.filled) == sum(
        1 for task in original.workload.tasks() if task.runtime_s is None)  # type: ignore


def test_compute_jobs_come_back_with_the_runtime_of_their_work():
    back, _, _ = _through_swf(WALLTIME, "speed=1Gf")
    assert back.workload is not None
    assert {task.runtime_s for task in back.workload.tasks()} == {10.0}
    assert len(_jobs(back)) == 12


# --------------------------------------------------------------------------- command line


def test_the_summary_says_what_each_fill_filled_and_the_json_report_too(tmp_path, capsys):
    source = tmp_path / "trace.json"
    source.write_bytes(USAGE_TRACE)
    output = tmp_path / "trace.swf"
    assert main(["convert", str(source), str(output), "--fill", "speed=1Gf",
                 "--fill", "runtime=requested"]) == 0
    said = capsys.readouterr().err
    assert ("filled speed=1 Gf into 0 tasks, not into 4 whose work gives no exact runtime "
            "(4 with profile type 'TraceReplayProfile'); filled runtime=requested into 4 "
            "tasks;") in said
    assert main(["convert", str(source), str(output), "--fill", "runtime=requested",
                 "--output", "json"]) == 0
    [entry, _] = json.loads(capsys.readouterr().out)["files"]
    assert entry["filled"] == [{"field": "runtime", "value": "requested",
                                "text": "requested", "tasks": 4}]


def test_swf_to_batsim_hints_at_the_task_fills(tmp_path, capsys):
    as_swf = tmp_path / "trace.swf"
    as_swf.write_bytes(convert(WALLTIME, "swf").data)
    output = tmp_path / "back.json"
    assert main(["convert", str(as_swf), str(output), "--to", "batsim"]) == 0
    said = capsys.readouterr().err
    assert "wrote" in said and "6 jobs (6 tasks left out)" in said
    assert (f"{as_swf}: hint: batsim leaves out 6 tasks; one without a runtime is kept with "
            "--fill runtime=requested") in said
    assert main(["convert", str(as_swf), str(output), "--to", "batsim",
                 "--fill", "runtime=requested"]) == 0
    said = capsys.readouterr().err
    # the two compute jobs without a walltime have nothing to fill from (SWF kept no profile)
    assert "10 jobs (2 tasks left out); filled runtime=requested into 4 tasks;" in said
    assert "hint: batsim leaves out 2 tasks;" in said


@pytest.mark.parametrize("fill", ["speed=1GHz", "speed=fast", "runtime=walltime",
                                  "runtime=60s"])
def test_a_bad_task_fill_is_one_line_and_exit_2(fill, tmp_path, capsys):
    source = tmp_path / "trace.json"
    source.write_bytes(WALLTIME)
    output = tmp_path / "trace.swf"
    assert main(["convert", str(source), str(output), "--fill", fill]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dcx: error: --fill '{fill}'")
    assert not output.exists()


# --------------------------------------------------------------------------- corpus


@pytest.mark.parametrize(("name", "without", "total"), [
    ("batsim__test_walltime.json", 22, 44), ("batsim__test_usage_trace.json", 2, 24)])
def test_batsims_own_test_workloads_come_back_whole_with_both_fills(
        corpus_dir: Path, name: str, without: int, total: int):
    data = (corpus_dir / "upstream" / "batsim" / name).read_bytes()
    original = _read(data)
    back, _, to_batsim = _through_swf(data)
    assert len(_jobs(back)) == without
    (left,) = [loss for loss in to_batsim.losses if loss.field == "task"]
    assert left.count == total - without
    assert to_batsim.fill_hint is not None and "--fill speed=1Gf" in to_batsim.fill_hint
    back, _, to_batsim = _through_swf(data, "speed=1Gf", "runtime=requested")
    assert len(_jobs(back)) == total
    assert _jobs(back) == _jobs(original)
    assert "task" not in {loss.field for loss in to_batsim.losses}


def test_a_refusal_for_want_of_runtimes_hints_at_the_task_fills(tmp_path, capsys):
    source = tmp_path / "trace.swf"
    source.write_text("; Version: 2.2\n1 0 0 -1 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n")
    output = tmp_path / "out.json"
    assert main(["convert", str(source), str(output), "--to", "batsim"]) == 1
    said = capsys.readouterr().err
    assert "(hint: batsim keeps no task; one without a runtime is kept with --fill " \
           "runtime=requested" in said
    assert not output.exists()
    assert main(["convert", str(source), str(output), "--to", "batsim",
                 "--fill", "runtime=requested"]) == 0
    assert json.loads(output.read_bytes())["jobs"][0]["profile"] == "delay60"


def test_every_batsim_corpus_file_through_swf_with_both_fills_names_each_job_it_leaves_out(
        corpus_dir: Path):
    """Every upstream workload: the jobs back plus the ones the loss line counts are the
    jobs given, each job back with a walltime and host count of the original (SWF writes
    whole seconds: a walltime rounds up)."""
    from collections import Counter

    from dcx.formats.swf import codec as swf_codec

    fills = [parse_fill("speed=1Gf"), parse_fill("runtime=requested")]
    for path in sorted((corpus_dir / "upstream" / "batsim").glob("*.json")):
        original = batsim.read(path.read_bytes()).document
        if original is None or original.workload is None:
            continue
        to_swf = convert(path.read_bytes(), "swf", fills=fills)
        assert to_swf.ok, path.name
        back = convert(to_swf.data, "batsim")
        given = list(original.workload.tasks())
        if not back.ok:  # every job without a runtime still: refused, with the hint
            assert all(d.hint for d in back.diagnostics if d.code == "convert.nothing-held")
            continue
        assert back.output_document is not None and back.output_document.workload is not None
        kept = list(back.output_document.workload.tasks())
        left = {loss.field: loss.count for loss in back.losses}.get("task") or 0
        assert len(kept) + left == len(given), path.name
        shapes = Counter((swf_codec._whole_requested_time(task.requested_time_s),
                          task.request.nodes) for task in given)
        assert Counter((task.requested_time_s, task.request.nodes) for task in kept) <= shapes


def test_batsim_to_swf_says_which_tasks_speed_would_give_a_runtime():
    conversion = convert(WALLTIME, "swf")
    assert conversion.ok and conversion.fill_hint == (
        "swf gets no runtime for 6 tasks whose batsim profile states work, not time; "
        "--fill speed=1Gf gives each the runtime of that work on hosts of that speed")
    assert convert(WALLTIME, "swf", fills=[parse_fill("speed=1Gf")]).fill_hint is None
    # trace replays: no speed makes them exact, so no hint
    assert convert(USAGE_TRACE, "swf").fill_hint is None


def test_swf_to_batsim_in_chunks_hints_as_the_whole_file_does(tmp_path):
    """The hint comes from the losses alone: a trace converted a chunk at a time says the
    same lines, and a refusal the same hint (``both`` compares stderr and the output)."""
    from tests.test_convert_stream_json import both, job, run, swf_lines

    partly = swf_lines(job(1), job(2, runtime=-1), job(3), job(4, runtime=-1))
    none = swf_lines(job(1, runtime=-1), job(2, runtime=-1))
    assert both("swf", partly, 1) == "converted"
    assert both("swf", none, 1) == "invalid"
    for data, said in ((partly, "hint: batsim leaves out 2 tasks;"),
                       (none, "(hint: batsim keeps no task;")):
        source = tmp_path / "in.swf"
        source.write_bytes(data)
        _, text = run(["convert", str(source), str(tmp_path / "out.json"), "--to", "batsim"],
                      stream=True, chunk_bytes=1)
        assert said in text
