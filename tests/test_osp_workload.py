"""osp-workload (jsspp-osp workload JSON): time axis, sizes, dependencies, located errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from dcx.converters.losses import conversion_losses
from dcx.core.model import Document, Job, NamedResource, ResourceRequest, Task, Workload
from dcx.core.restrict import restrict, without_empty_parts
from dcx.formats import osp_workload
from dcx.parsing.schemas import schema_diagnostics
from tests.strategies import Domain, documents
from tests.strategies_traces import osp_workloads

REPO = Path(__file__).resolve().parent.parent


def document(*tasks: dict[str, object], **root: object) -> bytes:
    return json.dumps({**root, "workflows": [{"id": "w", "tasks": list(tasks)}]},
                      indent=2).encode()


@pytest.mark.corpus
def test_upstream_example_reads_onto_the_model(corpus_dir: Path):
    data = (corpus_dir / "jsspp-osp" / "examples" / "workload.json").read_bytes()
    assert osp_workload.sniff(data)
    result = osp_workload.read(data)
    assert result.ok and result.diagnostics == ()
    workload = result.document.workload
    assert (workload.name, workload.time_origin) == ("Hello World Workload",
                                                     "2018-12-11T01:02:03")
    assert workload.extras == {"authors": ["John Doe"], "domain": "bio-informatics",
                               "date_end": "2018-12-11T02:03:04"}
    (job,) = workload.jobs
    first, second = job.tasks
    assert job.id == "workflow-1" and job.extras["total_energy_usage"] == "100W"
    assert first.runtime_s == 2923.0  # 01:02:05 → 01:50:48 on machine-1
    # memory_usage is what the task used (beside energy_usage, network_usage …), not a request
    assert first.request == ResourceRequest() and first.used_memory_mb == 200.0
    assert first.extras["disk_space_usage"] == "100MB"
    assert second.dependencies == ("task-1",) and second.submit_time_s == 0.0
    assert osp_workload.normal_form_losses(result.document) == frozenset()
    written = osp_workload.write(result.document)
    assert written.diagnostics == ()
    assert osp_workload.read(written.data).document == result.document


@pytest.mark.corpus
def test_our_schema_accepts_the_upstream_example_unchanged(corpus_dir: Path):
    example = json.loads((corpus_dir / "jsspp-osp" / "examples" / "workload.json").read_text())
    assert schema_diagnostics(osp_workload.SCHEMA, example) == []


@pytest.mark.parametrize("path", sorted((REPO / "examples" / "osp-workload").glob("*.json")),
                         ids=lambda p: p.name)
def test_examples_read_cleanly_and_rewrite_exactly(path: Path):
    data = path.read_bytes()
    result = osp_workload.read(data)
    assert result.ok and result.diagnostics == ()
    assert osp_workload.normal_form(result.document) == result.document
    assert osp_workload.write(result.document).data == data


def test_without_date_start_times_count_from_the_unix_epoch():
    result = osp_workload.read(document(
        {"id": "a", "ts_submit": "2020-01-01T00:01:00Z", "runtime": 5},
        {"id": "b", "ts_submit": "2020-01-01T01:00:30+01:00", "core_count": 2}))
    assert result.ok
    workload = result.document.workload
    assert workload.time_origin is None
    assert [t.submit_time_s for t in workload.tasks()] == [1577836860.0, 1577836830.0]


def test_without_date_start_naive_timestamps_are_utc():
    result = osp_workload.read(document({"id": "a", "ts_submit": "1970-01-02T00:00:00"}))
    assert result.ok
    assert next(result.document.workload.tasks()).submit_time_s == 86400.0


def test_enables_adds_dependencies():
    result = osp_workload.read(document({"id": "a", "enables": ["b"]}, {"id": "b"},
                                        date_start="2020-01-01T00:00:00"))
    assert [t.dependencies for t in result.document.workload.tasks()] == [(), ("a",)]
    assert [d.code for d in result.diagnostics] == ["osp-workload.no-submit-time"] * 2


def test_sizes_use_binary_units():
    assert osp_workload.parse_size_mb("10MB") == 10
    assert osp_workload.parse_size_mb("1.5 GiB") == 1536
    assert osp_workload.parse_size_mb("512KB") == 0.5
    assert osp_workload.parse_size_mb("10 apples") is None
    assert osp_workload.parse_size_mb("MB") is None


@pytest.mark.parametrize(("tasks", "root", "code", "pointer"), [
    ([{"id": "a", "depends_on": ["zz"]}], {}, "osp-workload.unknown-dependency",
     "/workflows/0/tasks/0/depends_on/0"),
    ([{"id": "a", "depends_on": ["b"]}, {"id": "b", "depends_on": ["a"]}], {},
     "osp-workload.dependency-cycle", "/workflows/0/tasks/1/depends_on/0"),
    ([{"id": "a"}, {"id": "a"}], {}, "osp-workload.duplicate-id", "/workflows/0/tasks/1/id"),
    ([{"id": "a", "memory_usage": "lots"}], {}, "osp-workload.size",
     "/workflows/0/tasks/0/memory_usage"),
    ([{"id": "a", "ts_submit": "yesterday"}], {}, "osp-workload.timestamp",
     "/workflows/0/tasks/0/ts_submit"),
    ([{"id": "a", "ts_submit": "2020-01-01T00:00:00Z"}], {"date_start": "2020-01-01T00:00:00"},
     "osp-workload.time-zone", "/workflows/0/tasks/0/ts_submit"),
    ([{"id": "a", "runtime": -1}], {}, "osp-workload.negative", "/workflows/0/tasks/0/runtime"),
    ([{"ts_submit": "2020-01-01T00:00:00"}], {}, "osp-workload.task-id", "/workflows/0/tasks/0"),
    ([{"id": 7}], {}, "schema.type", "/workflows/0/tasks/0/id"),
])
def test_bad_workloads_are_located(tasks: list[dict[str, object]], root: dict[str, object],
                                   code: str, pointer: str):
    result = osp_workload.read(document(*tasks, **root))
    assert result.document is None
    first = next(d for d in result.diagnostics if d.is_error)
    assert (first.code, first.pointer) == (code, pointer)
    assert first.line is not None and first.column is not None


def test_json_hazards_and_non_objects_are_rejected():
    assert osp_workload.read(b'{"name": "a", "name": "b"}').diagnostics[0].code == \
        "json.duplicate-key"
    assert osp_workload.read(b"[]").diagnostics[0].code == "osp-workload.root"
    assert osp_workload.read(b'{"workflows": [{"tasks": [{"id": "a", "runtime": NaN}]}]}') \
        .diagnostics[0].code == "json.number"


@given(osp_workloads())
@settings(max_examples=150, deadline=None)
def test_round_trip_is_identity_and_output_validates(workload: Workload):
    assert osp_workload.normal_form_losses(Document(workload=workload)) == frozenset()
    written = osp_workload.write(Document(workload=workload))
    assert written.diagnostics == ()
    assert schema_diagnostics(osp_workload.SCHEMA, json.loads(written.data)) == []
    result = osp_workload.read(written.data)
    assert result.ok, result.diagnostics
    assert result.document == Document(workload=workload)


def test_writer_reports_what_the_format_cannot_hold():
    task = Task(id=1, deadline_s=3.0, user="alice", extras={"swf:Status": 1, "runtime": 5},
                request=ResourceRequest(nodes=2, resources=(NamedResource("GPU", 1),)))
    workload = Workload(jobs=(Job(id=1, tasks=(task,), user="u"),), attributes={"x": 1})
    lost = {loss.field for loss in conversion_losses(Document(workload=workload),
                                                     osp_workload.FORMAT)}
    # task.extras: "runtime" is a key dcx writes from the model, and swf:Status is SWF's own
    assert lost == {"workload.attributes", "job.user", "task.request.nodes", "task.deadline_s",
                    "task.extras", "task.request.resources", "task.user"}
    written = osp_workload.write(Document(workload=workload))
    assert written.diagnostics == ()
    assert b"date_start" not in written.data  # no origin: times count from the Unix epoch
    reread = osp_workload.read(written.data).document
    assert reread.workload.time_origin is None
    assert next(reread.workload.tasks()).id == "1"


@given(documents(Domain(whole_numbers=False)))
@settings(max_examples=150, deadline=None)
def test_what_reads_back_is_the_documents_normal_form_restricted_to_holds(document: Document):
    """Trust by construction: the writer serialises the normal form and nothing else."""
    written = osp_workload.write(document)
    result = osp_workload.read(written.data)
    assert written.diagnostics == () and result.ok and result.diagnostics == ()
    expected = restrict(document, osp_workload.HOLDS, "osp-workload", target=osp_workload.FORMAT)
    assert without_empty_parts(result.document, osp_workload.HOLDS) == without_empty_parts(
        expected, osp_workload.HOLDS)
    normal = osp_workload.normal_form(document)
    assert osp_workload.normal_form(normal) == normal
    assert osp_workload.normal_form_losses(normal) == frozenset()


def test_values_the_format_cannot_write_are_value_restrictions_of_the_normal_form():
    tasks = (Task(id=1, runtime_s=-2.0, submit_time_s=float("inf"),
                  request=ResourceRequest(cores=0.0), used_memory_mb=-1.0,
                  extras={"user_id": "alice", "type": "split"}),
             Task(id="1", dependencies=(1, "elsewhere")))
    workload = Workload(jobs=(Job(id=7, tasks=tasks),), time_origin="yesterday")
    document = Document(workload=workload)
    assert osp_workload.normal_form_losses(document) == {
        "workload.time_origin", "task.id", "task.submit_time_s", "task.runtime_s",
        "task.request.cores", "task.used_memory_mb", "task.extras", "task.dependencies"}
    written = osp_workload.write(document)
    result = osp_workload.read(written.data)
    assert written.diagnostics == () and result.ok and result.diagnostics == ()
    (job,) = result.document.workload.jobs
    assert job.id == "7" and [(t.id, t.dependencies) for t in job.tasks] == [
        ("1", ()), ("2", ("1",))]
    assert job.tasks[0].extras == {"type": "split"}  # user_id is a number in the format
