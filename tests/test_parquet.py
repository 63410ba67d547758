"""Parquet workload columns: round trips of generated workloads, SWF and GWF through Parquet
and back, the schema check, located errors on damaged files."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings

from dcx.converters.registry import content_kind, detect
from dcx.core.columns import columns_of
from dcx.core.model import Document, Job, ResourceRequest, Task, TaskStatus, Workload
from dcx.core.restrict import restrict, without_empty_parts
from dcx.formats import gwf, parquet, swf
from tests.strategies import Domain, documents

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def round_trip(document: Document) -> Document:
    written = parquet.write(document)
    assert written.diagnostics == ()
    back = parquet.read(written.data)
    assert back.ok, back.diagnostics
    assert back.document is not None
    return back.document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(Domain(holds=parquet.HOLDS, own_prefix="parquet")))
def test_generated_documents_come_back_as_the_normal_form_holds_them(document):
    expected = restrict(document, parquet.HOLDS, "parquet", target=parquet.FORMAT)
    back = round_trip(document)
    assert without_empty_parts(back, parquet.HOLDS) == without_empty_parts(
        expected, parquet.HOLDS)
    assert round_trip(back) == back


def test_swf_example_through_parquet_and_back_is_the_swf_normal_form():
    data = (EXAMPLES / "swf" / "small-cluster.swf").read_bytes()
    document = swf.read(data).document
    back = round_trip(document)
    assert columns_of(back.workload) is not None
    assert back == document
    assert swf.write(back).data == swf.write(document).data


def test_gwf_workflow_keeps_jobs_and_dependencies():
    data = (EXAMPLES / "gwf" / "montage-workflow.gwf").read_bytes()
    document = gwf.read(data).document
    back = round_trip(document)
    assert back == document
    assert gwf.write(back).data == gwf.write(document).data


def test_examples_are_sniffed_as_binary_parquet():
    for path in sorted((EXAMPLES / "parquet").glob("*.parquet")):
        data = path.read_bytes()
        assert content_kind(data) == "binary"
        assert detect(data, str(path)) is parquet.FORMAT
        assert parquet.read(data).ok


def test_values_the_columns_cannot_hold_are_value_restrictions():
    tasks = (Task(id=1, runtime_s=float("nan"), extras={"note": (1,), "swf:Status": 1}),
             Task(id="b", dependencies=(1, "gone"), request=ResourceRequest(cores=2.0)))
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=tasks),),
                                          attributes={"ok": 1, "no": (1, 2)}))
    assert parquet.normal_form_losses(document) == frozenset({
        "task.id", "task.runtime_s", "task.extras", "task.dependencies",
        "workload.attributes"})
    back = round_trip(document)
    assert back.workload is not None
    first, second = back.workload.jobs[0].tasks
    assert (first.id, first.runtime_s, first.extras) == (1, None, {"swf:Status": 1})
    assert (second.id, second.dependencies) == (2, (1,))
    assert back.workload.attributes == {"ok": 1}


def _file(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _example_table() -> pa.Table:
    data = (EXAMPLES / "parquet" / "grid-archive.parquet").read_bytes()
    return pq.read_table(pa.BufferReader(data))


def codes(data: bytes) -> list[tuple[str, str | None]]:
    result = parquet.read(data)
    assert result.document is None
    return [(d.code, d.pointer) for d in result.diagnostics]


def test_a_missing_column_and_a_wrong_type_are_schema_errors():
    table = _example_table()
    assert codes(_file(table.drop_columns(["nodes"]))) == [("schema.required", "/columns")]
    wrong = table.set_column(table.column_names.index("cores"), "cores",
                             table.column("cores").cast(pa.int64()))
    assert codes(_file(wrong)) == [("schema.enum", "/columns/cores")]
    extra = table.append_column("surprise", pa.array([1] * table.num_rows))
    assert codes(_file(extra)) == [("schema.additionalProperties", "/columns")]


def test_nulls_nan_split_jobs_and_dependencies_are_located():
    table = _example_table()
    index = table.column_names.index
    nodes = pa.array([1, None, 1, 1, 1], pa.int64())
    assert codes(_file(table.set_column(index("nodes"), "nodes", nodes))) == [
        ("parquet.null", "/rows/1/nodes")]
    submit = pa.array([0.0, 1.0, float("nan"), 3.0, 4.0])
    assert codes(_file(table.set_column(index("submit_time_s"), "submit_time_s", submit))) \
        == [("parquet.not-a-number", "/rows/2/submit_time_s")]
    jobs = pa.array([1, 2, 1, 4, 5], pa.int64())
    assert codes(_file(table.set_column(index("job_id"), "job_id", jobs))) == [
        ("parquet.split-job", "/rows/2/job_id")]
    ids = pa.array([1, 2, 2, 4, 5], pa.int64())
    assert codes(_file(table.set_column(index("task_id"), "task_id", ids))) == [
        ("parquet.duplicate-id", "/rows/2/task_id")]
    needs = pa.array([[2], [1], [], [], [9]], pa.list_(pa.int64()))
    assert codes(_file(table.set_column(index("dependencies"), "dependencies", needs))) == [
        ("parquet.unknown-dependency", "/rows/4/dependencies/0"),
        ("parquet.dependency-cycle", "/rows/1/dependencies/0")]


def test_machine_requirements_are_optional_columns():
    asking = Task(id=2, request=ResourceRequest(os="linux", arch="x86_64",
                                                features=("ssd", "ib")))
    plain = Workload(jobs=(Job(id=1, tasks=(Task(id=1),)),))
    table = pq.read_table(io.BytesIO(parquet.write(Document(workload=plain)).data))
    assert not {"os", "arch", "features"} & set(table.column_names)  # nothing asked
    work = Workload(jobs=(Job(id=1, tasks=(Task(id=1), asking)),))
    back = round_trip(Document(workload=work))
    assert back.workload is not None and tuple(back.workload.jobs) == work.jobs
    table = pq.read_table(io.BytesIO(parquet.write(Document(workload=work)).data))
    assert table.column("features").to_pylist() == [[], ["ssd", "ib"]]
    assert table.column("os").to_pylist() == [None, "linux"]
    names = pa.array([[], ["ssd", None]], pa.list_(pa.string()))
    broken = table.set_column(table.column_names.index("features"), "features", names)
    assert codes(_file(broken)) == [("parquet.null", "/rows/1/features")]
    lists = pa.array([None, ["ssd"]], pa.list_(pa.string()))
    nulls = parquet.read(_file(table.set_column(table.column_names.index("features"),
                                                "features", lists)))
    assert nulls.document is not None and nulls.document.workload is not None
    assert [t.request.features for t in nulls.document.workload.tasks()] == [(), ("ssd",)]


def test_extras_of_several_kinds_travel_as_json():
    tasks = (Task(id=1, extras={"wfformat:task": {"files": [1, "a"]}, "mixed": 1}),
             Task(id=2, extras={"mixed": "two"}))
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=tasks),)))
    assert parquet.normal_form_losses(document) == frozenset()
    assert round_trip(document) == document
    table = pq.read_table(pa.BufferReader(parquet.write(document).data))
    assert {"extras_json.wfformat:task", "extras_json.mixed"} <= set(table.column_names)
    broken = table.set_column(table.column_names.index("extras_json.mixed"),
                              "extras_json.mixed", pa.array(["{", None]))
    assert codes(_file(broken)) == [("parquet.extras-json", "/columns/extras_json.mixed")]


def test_damaged_bytes_are_one_error():
    data = (EXAMPLES / "parquet" / "grid-archive.parquet").read_bytes()
    assert codes(data[:100] + data[-50:]) == [("parquet.unreadable", "")]
    assert codes(b"PAR1 not really") == [("parquet.unreadable", "")]


def test_recorded_columns_are_always_written_and_a_status_is_a_word():
    """The recorded columns are in every file (null where no task has a value), so every
    row group of a streamed file has them; a status that is none of the words is located."""
    plain = Workload(jobs=(Job(id=1, tasks=(Task(id=1),)),))
    table = pq.read_table(io.BytesIO(parquet.write(Document(workload=plain)).data))
    assert {"status", "wait_time_s", "queue", "think_time_s"} <= set(table.column_names)
    assert table.column("status").null_count == 1
    failed = Task(id=2, status=TaskStatus.FAILED, wait_time_s=5.0, queue="7",
                  used_memory_mb=2.5)
    work = Workload(jobs=(Job(id=1, tasks=(Task(id=1), failed)),))
    back = round_trip(Document(workload=work))
    assert back.workload is not None and tuple(back.workload.jobs) == work.jobs
    table = pq.read_table(io.BytesIO(parquet.write(Document(workload=work)).data))
    assert table.column("status").to_pylist() == [None, "failed"]
    words = pa.array([None, "done"], pa.string())
    broken = table.set_column(table.column_names.index("status"), "status", words)
    assert codes(_file(broken)) == [("parquet.status", "/rows/1/status")]


def test_a_column_name_that_is_not_utf8_is_an_unreadable_file_not_a_traceback() -> None:
    """Found by the fuzzer: pyarrow decodes a field's name only when it is asked for."""
    buffer = io.BytesIO()
    pq.write_table(pa.table({"zz_damaged": [1, 2]}), buffer, store_schema=False)
    data = buffer.getvalue().replace(b"zz_damaged", b"\x80z_damaged")
    assert data != buffer.getvalue()
    result = parquet.read(data)
    assert result.document is None
    assert [(d.code, d.is_error) for d in result.diagnostics] == [("parquet.unreadable", True)]
