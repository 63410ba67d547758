"""OpenDC workload folders (tasks.parquet, fragments.parquet): round trips of generated
workloads, files as OpenDC's own tools write them (aliases, no dcx metadata, CPU profiles),
located errors on bad folders, and the CLI writing and reading the folder."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main
from dcx.converters.folders import folder_format, read_folder
from dcx.converters.registry import content_kind, detect
from dcx.core.columns import JobRows, columns_of
from dcx.core.members import pack, unpack
from dcx.core.model import Document, Job, ResourceRequest, Task, Workload
from dcx.core.restrict import restrict, without_empty_parts
from dcx.formats import opendc_workload as odc
from dcx.formats import swf
from dcx.formats.opendc_workload import FORMAT, HOLDS, MEMBERS
from tests.strategies import Domain, documents

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "opendc-workload"
CORPUS = Path(os.environ.get("DCX_CORPUS", REPO.parent / "shared" / "corpus"))
OWN = "opendc-workload:"
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def round_trip(document: Document) -> Document:
    written = odc.write(document)
    assert written.diagnostics == ()
    back = odc.read(written.data)
    assert back.ok, [d.render() for d in back.diagnostics]
    assert back.document is not None
    return back.document


# ------------------------------------------------------------------------------ round trips


@SETTINGS
@given(documents(Domain(holds=HOLDS, own_prefix="opendc-workload")))
def test_generated_documents_come_back_as_the_normal_form_holds_them(document: Document) -> None:
    expected = restrict(document, HOLDS, FORMAT.name, target=FORMAT)
    back = round_trip(document)
    assert without_empty_parts(back, HOLDS) == without_empty_parts(expected, HOLDS)
    assert round_trip(back) == back


@st.composite
def opendc_workloads(draw: st.DrawFn) -> Workload:
    """Workloads an OpenDC folder holds exactly: unique 32-bit ids, millisecond times, whole
    cores, memory in thousandths of a MB, dependencies on earlier tasks, and the columns
    without a model field as the format's own extras."""
    count = draw(st.integers(0, 8))
    ids = draw(st.lists(st.integers(-2 ** 31, 2 ** 31 - 1), min_size=count, max_size=count,
                        unique=True))
    milliseconds = st.integers(0, 10 ** 12).map(lambda ms: ms / 1000)
    tasks = []
    for position, task_id in enumerate(ids):
        cores = draw(st.integers(0, 512))
        runtime = draw(milliseconds)
        extras: dict[str, Any] = {}
        if draw(st.booleans()):
            extras[OWN + "name"] = draw(st.text(max_size=8))
        capacity = draw(st.one_of(st.none(), st.floats(0, 1e7, allow_nan=False)))
        if capacity is not None and capacity != cores * 1000.0:
            extras[OWN + "cpu_capacity"] = capacity
        if draw(st.booleans()):
            extras[OWN + "gpu_capacity"] = draw(st.floats(0, 1e6, allow_nan=False))
        if draw(st.booleans()):
            extras[OWN + "deferrable"] = True
        if draw(st.booleans()):
            parts = draw(st.lists(st.tuples(st.integers(0, 10 ** 9),
                                            st.floats(0, 1e7, allow_nan=False)),
                                  min_size=2, max_size=4))
            extras[OWN + "fragments"] = [[span, usage] for span, usage in parts]
        earlier = ids[:position]
        tasks.append(Task(
            id=task_id,
            submit_time_s=draw(milliseconds),
            runtime_s=runtime,
            request=ResourceRequest(
                cores=float(cores),
                memory_mb=draw(st.one_of(st.none(), st.integers(1, 10 ** 9).map(
                    lambda thousandths: thousandths / 1000))),
                gpus=draw(st.integers(0, 8))),
            dependencies=tuple(draw(st.lists(st.sampled_from(earlier), unique=True,
                                             max_size=3))) if earlier else (),
            deadline_s=draw(st.one_of(st.none(), milliseconds)),
            extras=extras))
    origin = draw(st.sampled_from([None, "2024-03-01T12:00:00Z", "1999-12-31T23:59:59.125Z"]))
    return Workload(jobs=tuple(Job(id=task.id, tasks=(task,)) for task in tasks),
                    time_origin=origin)


@SETTINGS
@given(opendc_workloads())
def test_what_the_folder_holds_comes_back_unchanged(workload: Workload) -> None:
    document = Document(workload=workload)
    assert odc.normal_form_losses(document) == frozenset()
    back = round_trip(document)
    assert without_empty_parts(back, HOLDS) == without_empty_parts(document, HOLDS)


@SETTINGS
@given(documents(Domain(holds=HOLDS | {"task.request.nodes", "job"},
                        own_prefix="opendc-workload")))
def test_the_columnar_normal_form_is_the_task_by_task_one(document: Document) -> None:
    """A fast path may only do what the exact path does: the normal form of a workload held
    as columns equals the normal form of the same tasks held as objects."""
    workload = document.workload
    if workload is None:
        return
    from dcx.core.columns import WorkloadColumns

    columns = WorkloadColumns.from_jobs(tuple(workload.jobs))
    if columns is None:
        return
    columnar = Document(workload=Workload(jobs=JobRows(columns),
                                          time_origin=workload.time_origin))
    objects = Document(workload=Workload(jobs=tuple(workload.jobs),
                                         time_origin=workload.time_origin))
    assert odc.normal_form_losses(columnar) == odc.normal_form_losses(objects)
    fast, exact = odc.normal_form(columnar).workload, odc.normal_form(objects).workload
    assert fast is not None and exact is not None
    assert tuple(fast.jobs) == tuple(exact.jobs)


def test_swf_through_the_folder_and_back_keeps_times_cores_memory_and_dependencies() -> None:
    document = swf.read((REPO / "examples" / "swf" / "small-cluster.swf").read_bytes()).document
    assert document is not None and document.workload is not None
    back = round_trip(document)
    assert columns_of(back.workload) is not None
    assert back.workload is not None
    assert back.workload.time_origin == document.workload.time_origin
    for before, after in zip(document.workload.tasks(), back.workload.tasks(), strict=True):
        assert after.id == before.id
        assert after.submit_time_s == before.submit_time_s
        assert after.runtime_s == (before.runtime_s or 0.0)
        # the task asks for all of the job's processors and all of their memory
        assert after.request.cores == before.request.cores * before.request.nodes
        assert after.request.memory_mb == (None if before.request.memory_mb is None else
                                           before.request.memory_mb * before.request.nodes)
        assert after.dependencies == before.dependencies


def test_text_ids_are_numbered_and_dependencies_follow() -> None:
    tasks = (Task(id="a", runtime_s=1.0), Task(id="b", runtime_s=2.0, dependencies=("a",)))
    document = Document(workload=Workload(jobs=tuple(Job(id=t.id, tasks=(t,)) for t in tasks)))
    assert "task.id" in odc.normal_form_losses(document)
    back = round_trip(document)
    assert back.workload is not None
    assert [(t.id, t.dependencies) for t in back.workload.tasks()] == [(1, ()), (2, (1,))]


# ------------------------------------------------------------------------------ OpenDC's files


def _parquet(columns: dict[str, Any], metadata: dict[bytes, bytes] | None = None) -> bytes:
    table = pa.table(columns)
    if metadata is not None:
        table = table.replace_schema_metadata(metadata)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _tasks(**changes: Any) -> dict[str, Any]:
    columns: dict[str, Any] = {
        "id": pa.array([7, 8], pa.int32()),
        "submission_time": pa.array([1_700_000_000_000, 1_700_000_060_000],
                                    pa.timestamp("ms", tz="UTC")),
        "duration": pa.array([60_000, 1_500], pa.int64()),
        "cpu_count": pa.array([2, 4], pa.int32()),
        "cpu_capacity": pa.array([4800.0, 4000.0], pa.float64()),
        "mem_capacity": pa.array([2_048_000, 0], pa.int64()),
        "parents": pa.array([[], [7]], pa.list_(pa.int32())),
    }
    columns.update(changes)
    return {name: value for name, value in columns.items() if value is not None}


def _fragments(**changes: Any) -> dict[str, Any]:
    columns: dict[str, Any] = {
        "id": pa.array([7, 7, 8], pa.int32()),
        "duration": pa.array([30_000, 30_000, 1_500], pa.int64()),
        "cpu_usage": pa.array([4800.0, 1200.0, 4000.0], pa.float64()),
    }
    columns.update(changes)
    return {name: value for name, value in columns.items() if value is not None}


def _folder(tasks: dict[str, Any] | None = None, fragments: dict[str, Any] | None = None,
            raw_members: dict[str, bytes] | None = None) -> bytes:
    """The archive of a tasks and a fragments table; ``raw_members`` replaces members by
    bytes as given."""
    files = {"tasks.parquet": _parquet(_tasks() if tasks is None else tasks),
             "fragments.parquet": _parquet(_fragments() if fragments is None else fragments)}
    files.update(raw_members or {})
    return pack(files, MEMBERS)


def test_a_file_opendc_wrote_starts_at_its_first_submission_and_keeps_its_profile() -> None:
    result = odc.read(_folder())
    assert result.ok, result.diagnostics
    assert result.document is not None and result.document.workload is not None
    workload = result.document.workload
    assert workload.time_origin == "2023-11-14T22:13:20Z"
    first, second = workload.tasks()
    assert (first.id, first.submit_time_s, first.runtime_s) == (7, 0.0, 60.0)
    assert (second.submit_time_s, second.runtime_s, second.dependencies) == (60.0, 1.5, (7,))
    assert first.request.cores == 2.0 and first.request.memory_mb == 2048.0
    assert second.request.memory_mb is None  # 0: no memory asked for
    assert first.extras == {OWN + "cpu_capacity": 4800.0,
                            OWN + "fragments": [[30_000, 4800.0], [30_000, 1200.0]]}
    assert second.extras == {}  # one fragment of its duration at 1000 MHz per core
    again = odc.read(odc.write(result.document).data)
    assert again.document == result.document


def test_opendc_aliases_and_plain_int64_times_are_read() -> None:
    tasks = _tasks(submission_time=None, cpu_count=None, mem_capacity=None,
                   submissionTime=pa.array([0, 1000], pa.int64()),
                   maxCores=pa.array([1, 1], pa.int32()),
                   requiredMemory=pa.array([1000.0, 2000.0], pa.float64()))
    fragments = _fragments(cpu_usage=None, cpuUsage=pa.array([1.0, 1.0, 1.0]))
    result = odc.read(_folder(tasks, fragments))
    assert result.ok, [d.render() for d in result.diagnostics]
    assert result.document is not None and result.document.workload is not None
    assert [t.request.memory_mb for t in result.document.workload.tasks()] == [1.0, 2.0]


def test_fragments_of_opendc_2_traces_are_read() -> None:
    # trace v2.0's resource_state: time as a UTC timestamp, cores, cpuUsage
    fragments = _fragments(cpu_usage=None,
                           time=pa.array([0, 30_000, 0], pa.timestamp("ms", tz="UTC")),
                           cores=pa.array([2, 2, 4], pa.int32()),
                           cpuUsage=pa.array([4800.0, 1200.0, 4000.0], pa.float64()))
    result = odc.read(_folder(fragments=fragments))
    assert result.ok, [d.render() for d in result.diagnostics]
    assert result.document == odc.read(_folder()).document


def test_older_fragment_columns_are_accepted_and_not_kept() -> None:
    fragments = _fragments(timestamp=pa.array([0, 30_000, 0], pa.int64()),
                           cores=pa.array([2, 2, 4], pa.int32()),
                           gpuUsage=pa.array([None, None, None], pa.float64()))
    result = odc.read(_folder(fragments=fragments))
    assert result.ok, [d.render() for d in result.diagnostics]
    assert result.document == odc.read(_folder()).document


def test_children_alone_give_the_dependencies() -> None:
    tasks = _tasks(parents=None, children=pa.array([[8], []], pa.list_(pa.int32())))
    result = odc.read(_folder(tasks))
    assert result.document is not None and result.document.workload is not None
    assert [t.dependencies for t in result.document.workload.tasks()] == [(), (7,)]


def test_what_dcx_writes_has_exactly_opendcs_types_and_one_fragment_per_task() -> None:
    document = swf.read((REPO / "examples" / "swf" / "small-cluster.swf").read_bytes()).document
    assert document is not None
    members, _ = unpack(odc.write(document).data, MEMBERS)
    assert members is not None
    tasks = pq.read_table(pa.BufferReader(members["tasks.parquet"]))
    fragments = pq.read_table(pa.BufferReader(members["fragments.parquet"]))
    schema = pq.read_schema(pa.BufferReader(members["tasks.parquet"]))
    physical = pq.ParquetFile(pa.BufferReader(members["tasks.parquet"])).schema
    kinds = {physical.column(i).name: physical.column(i).physical_type
             for i in range(len(physical))}
    assert kinds["id"] == "INT32" and kinds["cpu_count"] == "INT32"
    assert kinds["submission_time"] == "INT64" and kinds["duration"] == "INT64"
    assert kinds["mem_capacity"] == "INT64" and kinds["cpu_capacity"] == "DOUBLE"
    assert schema.field("submission_time").type == pa.timestamp("ms", tz="UTC")
    for name in ("id", "submission_time", "duration", "cpu_count", "cpu_capacity",
                 "mem_capacity"):
        assert not schema.field(name).nullable, name
    assert sorted(fragments.column("id").to_pylist()) == sorted(tasks.column("id").to_pylist())
    assert fragments.column("duration").to_pylist() == tasks.column("duration").to_pylist()


# ------------------------------------------------------------------------------ bad folders


def _codes(data: bytes) -> list[tuple[str, str]]:
    return [(d.code, d.pointer) for d in odc.read(data).diagnostics]


def test_a_missing_member_is_named() -> None:
    data = pack({"tasks.parquet": _parquet(_tasks())}, MEMBERS)
    assert _codes(data) == [("opendc-workload.missing-member", "/fragments.parquet")]


def test_bytes_that_are_no_archive_are_refused() -> None:
    assert _codes(b"PAR1 not a folder")[0][0] == "opendc-workload.archive"


def test_a_member_that_is_not_parquet_is_refused() -> None:
    data = _folder(raw_members={"fragments.parquet": b"id,duration\n"})
    assert _codes(data) == [("opendc-workload.unreadable", "/fragments.parquet")]


def test_a_missing_required_column_is_located_in_its_member() -> None:
    codes = _codes(_folder(_tasks(cpu_capacity=None)))
    assert codes == [("schema.required", "/tasks.parquet/columns")]


def test_a_wrong_physical_type_is_located_at_its_column() -> None:
    codes = _codes(_folder(_tasks(id=pa.array([7, 8], pa.int64()))))
    assert codes == [("schema.enum", "/tasks.parquet/columns/id")]
    codes = _codes(_folder(_tasks(submission_time=pa.array([0, 1], pa.timestamp("us")))))
    assert codes == [("schema.enum", "/tasks.parquet/columns/submission_time")]


def test_an_unknown_column_is_refused_as_opendc_refuses_it() -> None:
    codes = _codes(_folder(_tasks(user=pa.array(["a", "b"]))))
    assert codes and codes[0][0].startswith("schema.") and codes[0][1].startswith(
        "/tasks.parquet/columns")


def test_a_column_given_by_name_and_alias_is_refused() -> None:
    codes = _codes(_folder(_tasks(maxCores=pa.array([1, 1], pa.int32()))))
    assert codes == [("opendc-workload.duplicate-column", "/tasks.parquet/columns/maxCores")]


def test_a_null_in_a_required_column_is_located_at_its_row() -> None:
    codes = _codes(_folder(_tasks(duration=pa.array([1, None], pa.int64()))))
    assert codes == [("opendc-workload.null", "/tasks.parquet/rows/1/duration")]
    codes = _codes(_folder(fragments=_fragments(cpu_usage=pa.array([1.0, None, 2.0]))))
    assert codes == [("opendc-workload.null", "/fragments.parquet/rows/1/cpu_usage")]


def test_negative_amounts_are_refused() -> None:
    codes = _codes(_folder(_tasks(cpu_count=pa.array([1, -2], pa.int32()))))
    assert codes == [("opendc-workload.negative", "/tasks.parquet/rows/1/cpu_count")]


def test_a_task_without_fragments_is_reported_because_opendc_drops_it() -> None:
    fragments = _fragments(id=pa.array([7, 7, 9], pa.int32()))
    result = odc.read(_folder(fragments=fragments))
    assert result.document is not None
    assert [(d.code, d.pointer) for d in result.diagnostics] == [
        ("opendc-workload.no-fragments", "/tasks.parquet/rows/1/id"),
        ("opendc-workload.unknown-fragment", "/fragments.parquet/rows/2/id")]
    assert all(not d.is_error for d in result.diagnostics)


def test_a_task_without_fragments_is_written_without_any_again() -> None:
    # (the shape of OpenDC's upstream traces where some tasks have no fragment rows)
    fragments = _fragments(id=pa.array([7, 7], pa.int32()), duration=pa.array(
        [30_000, 30_000], pa.int64()), cpu_usage=pa.array([4800.0, 1200.0], pa.float64()))
    result = odc.read(_folder(fragments=fragments))
    assert result.document is not None
    second = list(result.document.workload.tasks())[1]
    assert second.extras[OWN + "fragments"] == []
    written = odc.write(result.document)
    members, _ = unpack(written.data, MEMBERS)
    assert members is not None
    table = pq.read_table(pa.BufferReader(members["fragments.parquet"]))
    assert table.column("id").to_pylist() == [7, 7]  # no fragment made up for task 8
    assert odc.read(written.data).document == result.document


def test_a_task_from_another_format_gets_one_fragment_of_its_runtime() -> None:
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(
        Task(id=1, runtime_s=60.0, request=ResourceRequest(cores=2)),)),)))
    members, _ = unpack(odc.write(document).data, MEMBERS)
    assert members is not None
    table = pq.read_table(pa.BufferReader(members["fragments.parquet"]))
    assert table.to_pylist() == [{"id": 1, "duration": 60_000, "cpu_usage": 2000.0}]


def test_tasks_with_the_same_fragments_share_one_profile_and_differ_where_they_differ() -> None:
    ids = [1, 2, 3, 4]
    tasks = _tasks(id=pa.array(ids, pa.int32()),
                   submission_time=pa.array([0] * 4, pa.timestamp("ms", tz="UTC")),
                   duration=pa.array([3_000] * 4, pa.int64()),
                   cpu_count=pa.array([1] * 4, pa.int32()),
                   cpu_capacity=pa.array([1000.0] * 4, pa.float64()),
                   mem_capacity=pa.array([0] * 4, pa.int64()), parents=None)
    usage = [[10.0, 20.0, 30.0], [10.0, 20.0, 30.0], [10.0, 20.0, 31.0], [10.0, 30.0, 20.0]]
    fragments = _fragments(id=pa.array([i for i in ids for _ in range(3)], pa.int32()),
                           duration=pa.array([1_000] * 12, pa.int64()),
                           cpu_usage=pa.array([u for row in usage for u in row], pa.float64()))
    result = odc.read(_folder(tasks, fragments))
    assert result.ok, result.diagnostics
    columns = columns_of(result.document.workload)
    assert columns is not None
    profiles = columns.extras[OWN + "fragments"].texts
    assert profiles is not None and len(profiles.values) == 3
    assert profiles.codes[0] == profiles.codes[1]
    read_back = [task.extras[OWN + "fragments"] for task in result.document.workload.tasks()]
    assert read_back == [[[1_000, u] for u in row] for row in usage]
    members, _ = unpack(odc.write(result.document).data, MEMBERS)
    assert members is not None
    written = pq.read_table(pa.BufferReader(members["fragments.parquet"]))
    assert written.column("cpu_usage").to_pylist() == [u for row in usage for u in row]


def test_equal_hashes_of_different_profiles_still_give_each_its_own(monkeypatch: Any) -> None:
    from dcx.formats.opendc_workload import codec

    monkeypatch.setattr(codec, "_signatures", lambda starts, sizes, *rest: np.zeros(
        len(sizes), dtype=np.uint64))  # every task collides
    fragments = _fragments(id=pa.array([7, 7, 8, 8], pa.int32()),
                           duration=pa.array([30_000, 30_000, 750, 750], pa.int64()),
                           cpu_usage=pa.array([4800.0, 1200.0, 1.0, 2.0], pa.float64()))
    result = odc.read(_folder(fragments=fragments))
    first, second = (task.extras[OWN + "fragments"]
                     for task in result.document.workload.tasks())
    assert first == [[30_000, 4800.0], [30_000, 1200.0]] and second == [[750, 1.0], [750, 2.0]]


def test_duplicate_ids_and_unknown_parents_are_errors() -> None:
    codes = _codes(_folder(_tasks(id=pa.array([7, 7], pa.int32()))))
    assert ("opendc-workload.duplicate-id", "/tasks.parquet/rows/1/id") in codes
    codes = _codes(_folder(_tasks(parents=pa.array([[], [3]], pa.list_(pa.int32())))))
    assert codes == [("opendc-workload.unknown-dependency", "/tasks.parquet/rows/1/parents/0")]


# ------------------------------------------------------------------------------ examples, CLI


def test_examples_are_folders_sniffed_as_opendc_workloads() -> None:
    folders = sorted(path for path in EXAMPLES.iterdir() if path.is_dir())
    assert folders
    for folder in folders:
        spec = folder_format(str(folder))
        assert spec is FORMAT
        data = read_folder(str(folder), spec)
        assert content_kind(data) == "binary" and detect(data) is FORMAT
        assert odc.read(data).ok


def _corpus_folders() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted({path.parent for path in CORPUS.rglob("tasks.parquet")})


def test_opendc_workloads_in_the_corpus_read() -> None:
    folders = _corpus_folders()
    if not folders:
        pytest.skip(f"no OpenDC workload folder (tasks.parquet) under {CORPUS}" + (
            "" if CORPUS.is_dir() else ": set DCX_CORPUS"))
    for folder in folders:
        result = odc.read(read_folder(str(folder), FORMAT))
        assert result.ok, (folder, [d.render() for d in result.diagnostics][:3])


def test_convert_writes_the_folder_and_reads_it_back(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    source = str(REPO / "examples" / "swf" / "small-cluster.swf")
    out = tmp_path / "workload"
    assert main(["convert", source, str(out), "--to", "opendc-workload"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(MEMBERS)
    assert main(["validate", str(out)]) == 0
    assert main(["validate", str(out / "tasks.parquet")]) == 0  # the hook passes a member
    assert main(["info", str(out)]) == 0
    assert "opendc-workload" in capsys.readouterr().out
    assert main(["convert", str(out), str(tmp_path / "back.swf")]) == 0
    # replaced in place, without --to: an existing folder of the format says which
    assert main(["convert", source, str(out)]) == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_convert_never_replaces_a_folder_holding_other_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = str(REPO / "examples" / "swf" / "small-cluster.swf")
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert main(["convert", source, str(out), "--to", "opendc-workload"]) == 2
    assert "notes.txt" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["convert", source, str(target), "--to", "opendc-workload"]) == 2
    assert target.read_text() == "x"


def test_validate_reports_a_bad_member_at_the_folder(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "tasks.parquet").write_bytes(_parquet(_tasks()))
    assert main(["validate", "--hook", str(folder / "tasks.parquet")]) == 1
    err = capsys.readouterr().err
    assert f"{folder}: error: /fragments.parquet:" in err


def test_the_scheduler_reads_a_workload_folder() -> None:
    from dcx.scheduler.loading import read_document

    name, document, diagnostics = read_document(EXAMPLES / "small-cluster")
    assert name == "opendc-workload" and diagnostics == []
    assert document is not None and document.workload is not None
    assert len(document.workload.jobs) == 5


def _legacy_folder(version: str = "2.1", **meta_changes: Any) -> bytes:
    """An OpenDC 2.x folder of the shape its opendc-vm traces had (meta.parquet with string
    VM ids and start/stop instants, trace.parquet with each VM's rows): trace schema v2.1's
    column names, or v2.0's."""
    start = pa.array([1_600_000_000_000, 1_600_000_060_000], pa.timestamp("ms", tz="UTC"))
    stop = pa.array([1_600_000_120_000, 1_600_000_061_500], pa.timestamp("ms", tz="UTC"))
    ids = pa.array(["vm-a", "vm-b"])
    if version == "2.1":
        meta = {"id": ids, "start_time": start, "stop_time": stop,
                "cpu_count": pa.array([2, 4], pa.int32()),
                "cpu_capacity": pa.array([4800.0, 4000.0]),
                "mem_capacity": pa.array([2_048_000, 0], pa.int64())}
        trace = {"id": pa.array(["vm-a", "vm-a", "vm-b"]),
                 "timestamp": pa.array([0, 30_000, 60_000], pa.timestamp("ms", tz="UTC")),
                 "duration": pa.array([30_000, 30_000, 1_500], pa.int64()),
                 "cpu_count": pa.array([2, 2, 4], pa.int32()),
                 "cpu_usage": pa.array([4800.0, 1200.0, 4000.0])}
    else:
        meta = {"id": ids, "submissionTime": start, "endTime": stop,
                "maxCores": pa.array([2, 4], pa.int32()),
                "requiredMemory": pa.array([2_048_000, 0], pa.int64())}
        trace = {"id": pa.array(["vm-a", "vm-a", "vm-b"]),
                 "time": pa.array([0, 30_000, 60_000], pa.timestamp("ms", tz="UTC")),
                 "duration": pa.array([30_000, 30_000, 1_500], pa.int64()),
                 "cores": pa.array([2, 2, 4], pa.int32()),
                 "cpuUsage": pa.array([4800.0, 1200.0, 4000.0])}
    meta.update(meta_changes)
    meta = {name: value for name, value in meta.items() if value is not None}
    return pack({"meta.parquet": _parquet(meta), "trace.parquet": _parquet(trace)},
                ("meta.parquet", "trace.parquet"))


@pytest.mark.parametrize("version", ["2.1", "2.0"])
def test_an_opendc_2_folder_is_read_as_opendc_2_read_it(version: str) -> None:
    result = odc.read(_legacy_folder(version))
    assert [d.code for d in result.diagnostics] == ["opendc-workload.legacy-layout"]
    assert result.document is not None and result.document.workload is not None
    first, second = result.document.workload.tasks()
    assert (first.id, first.extras[OWN + "name"], second.extras[OWN + "name"]) == (
        1, "vm-a", "vm-b")
    assert (first.submit_time_s, first.runtime_s) == (0.0, 120.0)  # start to stop
    assert (second.submit_time_s, second.runtime_s) == (60.0, 1.5)
    assert first.request.cores == 2.0 and first.request.memory_mb == 2048.0
    assert first.extras[OWN + "fragments"] == [[30_000, 4800.0], [30_000, 1200.0]]
    assert result.document.workload.time_origin == "2020-09-13T12:26:40Z"
    # written back in today's layout, it reads as the same workload
    again = odc.read(odc.write(result.document).data)
    assert again.ok and again.document == result.document


def test_an_opendc_2_0_folder_states_no_capacity_never_0_mhz() -> None:
    # trace schema v2.0 has no cpu_capacity: the capacity is unknown, not 0 MHz
    result = odc.read(_legacy_folder("2.0"))
    assert result.document is not None and result.document.workload is not None
    assert all(OWN + "cpu_capacity" not in task.extras
               for task in result.document.workload.tasks())
    members, _ = unpack(odc.write(result.document).data, MEMBERS)
    assert members is not None
    written = pq.read_table(pa.BufferReader(members["tasks.parquet"]))
    assert written.column("cpu_capacity").to_pylist() == [2000.0, 4000.0]  # the default
    # v2.1 states one, and it is kept
    stated = odc.read(_legacy_folder("2.1")).document
    assert stated is not None and stated.workload is not None
    # (4000 MHz for 4 cores is the default: no extra, written as itself)
    assert [task.extras.get(OWN + "cpu_capacity") for task in stated.workload.tasks()] == [
        4800.0, None]


def test_an_opendc_2_folder_opendc_2_could_not_read_is_refused_where_it_breaks() -> None:
    missing = odc.read(_legacy_folder(stop_time=None))
    assert [(d.code, d.pointer) for d in missing.diagnostics] == [
        ("opendc-workload.legacy", "/meta.parquet/columns")]
    repeated = odc.read(_legacy_folder(id=pa.array(["vm-a", "vm-a"])))
    assert [(d.code, d.pointer) for d in repeated.diagnostics] == [
        ("opendc-workload.legacy", "/meta.parquet/rows/1/id")]
    # a VM that stops before it starts: today's check, pointing into meta.parquet
    backwards = odc.read(_legacy_folder(stop_time=pa.array(
        [1_500_000_000_000, 1_600_000_061_500], pa.timestamp("ms", tz="UTC"))))
    assert [d.pointer for d in backwards.diagnostics if d.is_error] == [
        "/meta.parquet/rows/0/duration"]
    alone = odc.read(pack({"meta.parquet": b"PAR1"}, ("meta.parquet",)))
    assert [d.code for d in alone.diagnostics] == ["opendc-workload.missing-member"]


def test_an_opendc_2_folder_is_found_as_the_workload_format(tmp_path: Path) -> None:
    from dcx.core.members import unpack as unpacked

    folder = tmp_path / "trace"
    folder.mkdir()
    files, _ = unpacked(_legacy_folder(), ("meta.parquet", "trace.parquet"))
    assert files is not None
    for name, data in files.items():
        (folder / name).write_bytes(data)
    assert folder_format(str(folder)) is FORMAT
    assert odc.read(read_folder(str(folder), FORMAT)).document is not None


def test_an_unknown_runtime_written_as_0_ms_is_said_on_its_loss_line() -> None:
    from dcx.converters.losses import conversion_losses

    tasks = (Task(id=1, runtime_s=None), Task(id=2, submit_time_s=1.0, runtime_s=60.0))
    document = Document(workload=Workload(jobs=tuple(Job(id=t.id, tasks=(t,)) for t in tasks)))
    (runtime,) = [loss for loss in conversion_losses(document, FORMAT)
                  if loss.field == "task.runtime_s"]
    assert "unknown or negative runtime is written as a duration of 0 ms" in runtime.detail
