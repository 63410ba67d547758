"""Batsim JSON workload: the example, Batsim's loader rules, located errors, normal forms and
hypothesis round trips model -> Batsim -> model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main
from dcx.converters.convert import convert
from dcx.converters.losses import conversion_losses
from dcx.converters.registry import detect
from dcx.core.model import Document, Job, ResourceRequest, Task, Workload
from dcx.core.restrict import restrict, without_empty_parts
from dcx.formats import batsim
from dcx.formats.batsim.codec import _writable_id
from tests.strategies import Domain, documents

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples" / "batsim").glob("*.json"))


def workload(jobs: list[dict[str, Any]], profiles: dict[str, Any], nb_res: Any = 4,
             **top: Any) -> bytes:
    return json.dumps({"nb_res": nb_res, **top, "jobs": jobs, "profiles": profiles},
                      indent=1).encode()


DELAY = {"d10": {"type": "delay", "delay": 10}}


def job(job_id: Any = 1, res: Any = 1, profile: str = "d10", **more: Any) -> dict[str, Any]:
    return {"id": job_id, "subtime": 0, "res": res, "profile": profile, **more}


def codes(data: bytes) -> list[str]:
    return [d.code for d in batsim.read(data).diagnostics]


# ------------------------------------------------------------------------------ examples


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_read_cleanly_and_round_trip(path: Path) -> None:
    data = path.read_bytes()
    assert detect(data, str(path)) is batsim.FORMAT
    result = batsim.read(data)
    assert result.ok and result.diagnostics == ()
    written = batsim.write(result.document)
    again = batsim.read(written.data)
    assert again.diagnostics == () and again.document == result.document


_UPSTREAM_BATSIM_WARNINGS = {
    # batsched's mixed workload spells one id with the workload prefix ("w0!…")
    "batsched__mixed.json": {"batsim.prefixed-key"},
    # profile types of Batsim's storage and BDA extensions, which dcx keeps as written
    "batsim__test_walltime.json": {"batsim.unknown-profile-type"},
    "batsim__untested__test_composed_bda.json": {"batsim.unknown-profile-type"},
    "batsim__untested__test_one_spark_job_bda.json": {"batsim.unknown-profile-type"},
    "batsim__untested__test_workload_pfs0.json": {"batsim.unknown-profile-type"},
}
"""The upstream workloads dcx reads with a warning, and the warnings it gives; every other
one reads without a diagnostic."""


@pytest.mark.corpus
def test_batsim_repository_workloads_read_and_round_trip(corpus_dir: Path) -> None:
    """Batsim's and batsched's own workloads (corpus/upstream/batsim, see its MANIFEST):
    each reads with exactly the diagnostics expected and comes back as its normal form."""
    folder = corpus_dir / "upstream" / "batsim"
    paths = sorted(folder.glob("*.json"))
    if not paths:
        pytest.skip(f"no upstream Batsim workloads under {folder}")
    for path in paths:
        result = batsim.read(path.read_bytes())
        assert result.ok, f"{path.name}: {[d.render() for d in result.diagnostics][:2]}"
        assert {d.code for d in result.diagnostics} == _UPSTREAM_BATSIM_WARNINGS.get(
            path.name, set()), path.name
        again = batsim.read(batsim.write(result.document).data)
        assert again.document == batsim.normal_form(result.document), path.name


def test_delay_profiles_are_runtimes_and_compute_profiles_are_kept() -> None:
    result = batsim.read(EXAMPLES[0].read_bytes())
    tasks = list(result.document.workload.tasks())
    assert [t.runtime_s for t in tasks] == [3580.0, 1805.0, 95.0, None, 3580.0]
    assert tasks[0].extras == {"batsim:profile": "d3580"}  # not the name dcx would give
    assert tasks[1].extras == {}  # delay1805 is the name dcx gives 1805 s
    assert tasks[3].extras["batsim:profile"] == "nas-ft"
    assert tasks[3].extras["batsim:extra_data"] == '{"user": "u3"}'
    assert tasks[4].requested_time_s is None and tasks[4].request.nodes == 2
    kept = result.document.workload.extras["batsim:profiles"]
    assert list(kept) == ["delay95", "nas-ft", "unused"]  # delay95 is in a sequence
    assert result.document.workload.attributes["description"].startswith("Hand-written")


def test_the_job_by_job_reader_builds_its_requests_directly_as_whole_nodes() -> None:
    # the fast constructor takes every field of a request, placement included: one it does
    # not name makes direct_constructor fall back to the dataclass's own __init__
    from dcx.core.model import Placement
    from dcx.formats.batsim import codec

    values = {"nodes": 2, "cores": 1.0, "memory_mb": None, "gpus": 0, "resources": (),
              "os": None, "arch": None, "features": (), "placement": Placement.NODES}
    assert codec._new_request(values).__dict__ is values
    read = batsim.read(workload([job(1, res=2, extra_data="x")], DELAY)).document
    assert read is not None and read.workload is not None
    (task,) = read.workload.tasks()
    assert task.request.__dict__["placement"] is Placement.NODES


def test_a_machine_size_nb_res_says_is_not_written_again_as_a_member() -> None:
    # nb_res 64 for jobs of at most 2 hosts reads as the MaxProcs attribute, which nb_res
    # then writes: Batsim -> Batsim adds no MaxProcs member of its own
    data = workload([job(7, res=2)], DELAY, nb_res=64)
    document = batsim.read(data).document
    assert document is not None
    written = json.loads(batsim.write(document).data)
    assert written["nb_res"] == 64 and "MaxProcs" not in written
    assert batsim.read(batsim.write(document).data).document == document
    # a MaxProcs that nb_res does not say stays a member
    derived = batsim.read(workload([job(7, res=2)], DELAY, nb_res=2, MaxProcs=2)).document
    assert derived is not None
    assert json.loads(batsim.write(derived).data)["MaxProcs"] == 2


def test_ids_keep_their_json_type_and_nb_res_is_kept_only_when_not_derived() -> None:
    result = batsim.read(workload([job(7, res=2), job("7b", res=3)], DELAY, nb_res=3))
    assert [t.id for t in result.document.workload.tasks()] == [7, "7b"]
    assert "batsim:nb_res" not in result.document.workload.extras
    result = batsim.read(workload([job(7, res=2)], DELAY, nb_res=64))
    assert result.document.workload.attributes == {"MaxProcs": 64}  # SWF's machine size
    assert "batsim:nb_res" not in result.document.workload.extras
    result = batsim.read(workload([job(7, res=2)], DELAY, nb_res=64, MaxProcs=32))
    assert result.document.workload.attributes == {"MaxProcs": 32}
    assert result.document.workload.extras["batsim:nb_res"] == 64


def test_the_machine_size_goes_through_swf_and_back() -> None:
    from dcx.formats import swf

    result = batsim.read(workload([job(7, res=2), job(8, res=3)], DELAY, nb_res=64))
    through = swf.read(swf.write(result.document).data)
    assert through.document.workload.attributes["MaxProcs"] == 64
    back = json.loads(batsim.write(through.document).data)
    assert back["nb_res"] == 64 and [j["res"] for j in back["jobs"]] == [2, 3]


def test_batsim_5_names_are_read_and_written_back() -> None:
    profiles = {"a": {"type": "DelayProfile", "delay": 5},
                "h": {"type": "ParallelTaskHomogeneousProfile", "cpu": 1e9, "com": 0}}
    result = batsim.read(workload([job(1, profile="a"), job(2, res=2, profile="h")], profiles))
    assert result.diagnostics == ()
    assert result.document.workload.extras["batsim:version"] == 5
    written = json.loads(batsim.write(result.document).data)
    assert {p["type"] for p in written["profiles"].values()} == {
        "DelayProfile", "ParallelTaskHomogeneousProfile"}


def test_walltime_minus_one_is_none_with_a_warning() -> None:
    result = batsim.read(workload([job(walltime=-1)], DELAY))
    assert result.ok and [d.code for d in result.diagnostics] == ["batsim.walltime-none"]
    assert next(result.document.workload.tasks()).requested_time_s is None


# ------------------------------------------------------------------------------ bad input


def test_a_float_res_is_located_at_its_value() -> None:
    data = workload([job(), job(2, res=4.0)], DELAY)
    (problem,) = batsim.read(data).diagnostics
    assert problem.code == "batsim.integer" and problem.pointer == "/jobs/1/res"
    line = data.decode().splitlines()[problem.line - 1]
    assert line[problem.column - 1:].startswith("4.0")


@pytest.mark.parametrize("data,code,pointer", [
    (workload([job(profile="nope")], DELAY), "batsim.unknown-profile", "/jobs/0/profile"),
    (workload([job(1), job("1")], DELAY), "batsim.duplicate-id", "/jobs/1/id"),
    (workload([job("a!b")], DELAY), "batsim.job-id", "/jobs/0/id"),
    (workload([job(walltime=0)], DELAY), "batsim.walltime", "/jobs/0/walltime"),
    (workload([job()], {"d10": {"type": "delay", "delay": 0}}), "schema.exclusiveMinimum",
     "/profiles/d10/delay"),
    (workload([job()], {**DELAY, "s": {"type": "composed", "seq": ["x"]}}),
     "batsim.unknown-profile", "/profiles/s/seq/0"),
    (workload([job()], {**DELAY, "p": {"type": "DelayProfile", "delay": 1}}),
     "batsim.mixed-versions", "/profiles/p/type"),
    (workload([job(res=3, profile="p")], {"p": {"type": "parallel", "cpu": [1, 1],
                                                "com": [0, 0, 0, 0]}}),
     "batsim.profile-size", "/jobs/0/res"),
    (workload([job()], DELAY, nb_res=0), "schema.minimum", "/nb_res"),
    (b"[1, 2]", "batsim.not-object", ""),
])
def test_bad_input_is_one_located_error(data: bytes, code: str, pointer: str) -> None:
    result = batsim.read(data)
    assert result.document is None
    assert [(d.code, d.pointer) for d in result.diagnostics if d.is_error] == [(code, pointer)]
    assert all(d.line is not None and d.column is not None for d in result.diagnostics)


@pytest.mark.parametrize("job_id,code", [("w0!7", "batsim.qualified-id"),
                                         ("sw0", "batsim.id-names-workload")])
def test_ids_that_load_only_at_some_command_line_positions_warn(job_id: str,
                                                                code: str) -> None:
    result = batsim.read(workload([job(job_id)], DELAY))
    assert result.ok and [d.code for d in result.diagnostics] == [code]
    written = batsim.read(batsim.write(result.document).data)
    assert written.diagnostics == ()  # the writer renumbers such ids
    assert [t.id for t in written.document.workload.tasks()] == [1]


def test_unknown_profile_types_are_kept_with_a_conformance_warning() -> None:
    profiles = {**DELAY, "future": {"type": "quantum", "qubits": 3}}
    result = batsim.read(workload([job()], profiles))
    assert result.ok and [d.code for d in result.diagnostics] == ["batsim.unknown-profile-type"]
    assert result.document.workload.extras["batsim:profiles"]["future"]["qubits"] == 3
    assert batsim.normal_form_losses(result.document) == {"workload.extras"}


# ------------------------------------------------------------------------------ normal form


def _task(task_id: Any, runtime: float | None, **extras: Any) -> Task:
    return Task(id=task_id, runtime_s=runtime, request=ResourceRequest(nodes=2, cores=8),
                extras=extras)


def test_tasks_without_runtime_or_profile_are_left_out_and_explained() -> None:
    document = Document(workload=Workload(jobs=(
        Job(id=1, tasks=(_task(1, 60.0), _task(2, None), _task(3, 0.0))),)))
    normal = batsim.normal_form(document)
    assert [t.id for t in normal.workload.tasks()] == [1]
    # (2 nodes of 8 cores are 16 hosts: the cores per node are lost)
    assert [t.request.nodes for t in normal.workload.tasks()] == [16]
    assert batsim.normal_form_losses(document) == {"task.request.cores"}  # (left out: "task")
    assert "2 of 3 tasks" in batsim.leaves_out(document)
    alone = Document(workload=Workload(jobs=(Job(id=1, tasks=(_task(1, None),)),)))
    assert batsim.normal_form(alone).workload.jobs == ()


def test_equal_runtimes_share_a_profile_and_clashing_names_get_a_suffix() -> None:
    document = Document(workload=Workload(jobs=(Job(id="j", tasks=(
        _task("a", 60.0), _task("b", 60.0), _task("c", 30.0, **{"batsim:profile": "delay60"}),
        _task("d", 60.0, **{"batsim:profile": "delay60"}))),)))
    written = json.loads(batsim.write(document).data)
    assert written["profiles"] == {"delay60": {"type": "delay", "delay": 60},
                                   "delay30": {"type": "delay", "delay": 30}}
    assert [j["profile"] for j in written["jobs"]] == ["delay60", "delay60", "delay30", "delay60"]
    assert batsim.normal_form_losses(document) == {"task.extras", "task.request.cores"}


def test_ids_batsim_cannot_take_are_renumbered() -> None:
    cases: tuple[list[int | str], ...] = ([2**31, 1], ["a!b", "c"], [7, "7"], ["", "x"])
    for ids in cases:
        document = Document(workload=Workload(jobs=tuple(
            Job(id=i, tasks=(_task(i, 5.0),)) for i in ids)))
        assert [t.id for t in batsim.normal_form(document).workload.tasks()] == [1, 2]
        assert "task.id" in batsim.normal_form_losses(document)


# ------------------------------------------------------------------------------ round trips

_seconds = st.integers(0, 10**7).map(float) | st.floats(0, 1e7, allow_nan=False)
_positive = st.integers(1, 10**6).map(float) | st.floats(1e-3, 1e6, allow_nan=False)
_ids = st.integers(-(2**31), 2**31 - 1) | st.text("abcxyz019_-.", min_size=1, max_size=6)
_compute = {"ph": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0},
            "seq": {"type": "composed", "seq": ["ph", "ph"], "repeat": 2}}
_compute_5 = {"ph": {"type": "ParallelTaskHomogeneousProfile", "cpu": 1e10, "com": 0},
              "seq": {"type": "SequentialCompositionProfile", "seq": ["ph"]}}


@st.composite
def batsim_workloads(draw: Any) -> Workload:
    """Workloads in Batsim's normal form: each task a delay (named by dcx or not) or a
    kept compute profile (Batsim 4.x or 5.x names), ids Batsim takes, jobs of one task."""
    ids = draw(st.lists(_ids, max_size=12, unique_by=str).filter(
        lambda found: all(_writable_id(i) for i in found)))
    tasks = []
    for task_id in ids:
        extras: dict[str, Any] = {}
        runtime = draw(st.none() | _positive)
        if runtime is None:
            extras["batsim:profile"] = draw(st.sampled_from(sorted(_compute)))
        elif draw(st.booleans()):
            extras["batsim:profile"] = f"p{runtime!r}"
        if draw(st.booleans()):
            extras["batsim:extra_data"] = draw(st.text(max_size=5))
        tasks.append(Task(id=task_id, submit_time_s=draw(_seconds), runtime_s=runtime,
                          requested_time_s=draw(st.none() | _positive),
                          request=ResourceRequest(nodes=draw(st.integers(0, 512))),
                          extras=extras))
    version_5 = draw(st.booleans())
    kept: dict[str, Any] = {"batsim:profiles": dict(_compute_5 if version_5 else _compute)}
    if version_5:
        kept["batsim:version"] = 5
    attributes = draw(st.dictionaries(st.sampled_from(["command", "date", "x"]),
                                      st.integers() | st.text(max_size=4), max_size=2))
    if draw(st.booleans()):
        attributes["MaxProcs"] = draw(st.integers(1000, 2000))
        if draw(st.booleans()):
            kept["batsim:nb_res"] = attributes["MaxProcs"] + 1
    return Workload(jobs=tuple(Job(id=t.id, tasks=(t,)) for t in tasks),
                    attributes=attributes, extras=kept)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batsim_workloads())
def test_model_to_batsim_to_model_is_identity_on_its_normal_form(built: Workload) -> None:
    document = Document(workload=built)
    assert batsim.normal_form(document) == document
    written = batsim.write(document)
    result = batsim.read(written.data)
    assert result.diagnostics == ()
    assert result.document == document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(Domain(holds=batsim.HOLDS, whole_numbers=False)))
def test_any_document_reads_back_as_its_normal_form_restricted(document: Document) -> None:
    expected = restrict(batsim.normal_form(document), batsim.HOLDS, "batsim")
    result = batsim.read(batsim.write(document).data)
    assert result.diagnostics == ()
    assert without_empty_parts(result.document, batsim.HOLDS) == without_empty_parts(
        expected, batsim.HOLDS)


# ------------------------------------------------------------------------------ CLI


def test_swf_to_batsim_and_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    there, back = tmp_path / "w.json", tmp_path / "w.swf"
    assert main(["convert", str(REPO / "examples/swf/small-cluster.swf"), str(there),
                 "--to", "batsim"]) == 0
    written = json.loads(there.read_text())
    assert [j["res"] for j in written["jobs"]] == [64, 8, 1, 128]  # job 5 has no runtime
    assert main(["convert", str(there), str(back), "--to", "swf"]) == 0
    assert main(["validate", "--strict", str(back)]) == 0
    capsys.readouterr()


def test_a_sequence_of_delays_runs_as_long_as_its_delays() -> None:
    profiles = {"d": {"type": "delay", "delay": 30},
                "twice": {"type": "composed", "seq": ["d", "d"], "repeat": 2},
                "nested": {"type": "composed", "seq": ["twice", "d"]},
                "loop": {"type": "composed", "seq": ["loop"]},
                "mixed": {"type": "composed", "seq": ["d", "ph"]},
                "ph": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}}
    jobs = [job(n, profile=name) for n, name in enumerate(
        ("twice", "nested", "mixed", "ph"), start=1)]
    document = batsim.read(workload(jobs, profiles)).document
    assert document is not None and document.workload is not None
    tasks = list(document.workload.tasks())
    # a compute profile's time depends on the platform: unknown, as is a sequence with one
    assert [t.runtime_s for t in tasks] == [120.0, 150.0, None, None]
    assert [t.extras["batsim:profile"] for t in tasks] == ["twice", "nested", "mixed", "ph"]
    assert batsim.codec.waiting_runtime("loop", profiles) is None
    # written back, each job names its own profile again, and nothing is lost
    again = batsim.read(batsim.write(document).data).document
    assert again == batsim.normal_form(document) and again is not None
    assert again.workload is not None
    assert list(again.workload.tasks()) == tasks
    assert conversion_losses(document, batsim.FORMAT) == ()


def test_batsim_to_swf_to_batsim_keeps_every_job_that_swf_can_run(tmp_path: Path) -> None:
    profiles = {"d3580": {"type": "delay", "delay": 3580},
                "delay95": {"type": "delay", "delay": 95},
                "twice": {"type": "composed", "seq": ["delay95", "d3580"], "repeat": 2},
                "nas": {"type": "parallel_homogeneous", "cpu": 2.4e11, "com": 0}}
    jobs = [job(1, res=8, profile="d3580", walltime=7200),
            job(2, res=1, profile="delay95", walltime=600),
            job(3, res=4, profile="twice"),
            job(4, res=16, profile="nas", walltime=1800)]
    source = workload(jobs, profiles, nb_res=16)
    there = convert(source, "swf", "w.json")
    assert there.ok and there.output_document is not None
    back = convert(there.data, "batsim", "w.swf")
    assert back.ok and back.output_document is not None
    shape = [(t.id, t.requested_time_s, t.runtime_s, t.request.nodes)
             for t in back.output_document.workload.tasks()]  # type: ignore[union-attr]
    assert shape == [(1, 7200.0, 3580.0, 8), (2, 600.0, 95.0, 1), (3, None, 7350.0, 4)]
    # the compute job's time is the platform's: SWF has no runtime for it, and its profile
    # is a loss on the way there; on the way back, the job left out is a loss line
    assert [t.runtime_s for t in there.output_document.workload.tasks()  # type: ignore[union-attr]
            ] == [3580.0, 95.0, 7350.0, None]
    assert any(loss.field == "task.extras" and "batsim: profile" in loss.detail
               for loss in there.losses)
    (left_out,) = [loss for loss in back.losses if loss.field == "task"]
    assert (left_out.count, left_out.first) == (1, "/workload/jobs/3/tasks/0")


def test_a_workload_without_runtimes_is_refused_in_one_line(tmp_path: Path) -> None:
    swf = tmp_path / "unknown.swf"
    swf.write_text("1 0 -1 -1 4 -1 -1 4 60 -1 1 1 1 -1 1 -1 -1 -1\n")
    conversion = convert(swf.read_bytes(), "batsim", str(swf))
    (problem,) = [d for d in conversion.diagnostics if d.is_error]
    assert problem.code == "convert.nothing-held" and "profile" in problem.message
    assert conversion.data == b""


def test_losses_are_located_at_the_job_that_holds_the_first_dropped_value(
        first_losses: Any) -> None:
    text = ('{"nb_res": 1,\n'
            ' "jobs": [\n'
            '  {"id": 1, "subtime": 0, "res": 1, "profile": "delay10"},\n'
            '  {"id": 2, "subtime": 5, "res": 1, "profile": "delay10"},\n'
            '  {"id": 3, "subtime": 9, "res": 1, "profile": "delay10", "color": "red"}],\n'
            ' "profiles": {"delay10": {"type": "delay", "delay": 10}}}\n')
    firsts = first_losses(text, "osp-workload")
    assert firsts["task.extras"] == "in.json:5:3, /workload/jobs/2/tasks/0"
