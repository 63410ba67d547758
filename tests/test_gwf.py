"""GWF: both variants, the per-line record schema, located diagnostics, corpus traces."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dcx.core.model import Document, Job, ResourceRequest, Task, Workload
from dcx.formats import gwf
from dcx.parsing.schemas import load_schema
from tests.strategies_traces import archive_workloads, workflow_workloads

HEADER = "WorkflowID, JobID     , SubmitTime, RunTime   , NProcs    , ReqNProcs , Dependencies\n"
REPO = Path(__file__).resolve().parent.parent


def workflow_file(*lines: str) -> bytes:
    return (HEADER + "".join(line + "\n" for line in lines)).encode()


def archive_line(**columns: object) -> str:
    values = {name: "-1" for name in gwf.ARCHIVE_COLUMNS}
    values.update({"JobID": "1", "SubmitTime": "0", "NProcs": "1"})
    values.update({name: str(value) for name, value in columns.items()})
    return " ".join(values[name] for name in gwf.ARCHIVE_COLUMNS)


def errors(result: object) -> list[tuple[str, int | None, int | None, str]]:
    return [(d.code, d.line, d.column, d.pointer)
            for d in result.diagnostics if d.is_error]  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- corpus


@pytest.mark.corpus
def test_askalon_reads_with_the_documented_shape_and_rewrites_byte_for_byte(corpus_dir: Path):
    data = (corpus_dir / "gwf" / "askalon_workload_ee.gwf").read_bytes()
    result = gwf.read(data)
    assert result.ok and result.diagnostics == ()
    workload = result.document.workload
    tasks = list(workload.tasks())
    assert len(workload.jobs) == 758
    assert len(tasks) == 30_746
    assert sum(len(task.dependencies) for task in tasks) == 41_939
    assert {task.request.cores for task in tasks} == {1.0}
    assert sum(1 for task in tasks if task.runtime_s == 0) == 643
    assert max(task.runtime_s or 0 for task in tasks) == 1452
    written = gwf.write(result.document)
    assert written.losses == ()
    assert written.data == data


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["chronos_exp_noscaler_ca.gwf", "askalon_prefix70.gwf"])
def test_other_corpus_traces_round_trip_exactly(corpus_dir: Path, name: str):
    data = (corpus_dir / "gwf" / name).read_bytes()
    result = gwf.read(data)
    assert result.ok and result.diagnostics == ()
    assert gwf.sniff(data)
    assert gwf.write(result.document).data == data


@pytest.mark.corpus
def test_chronos_is_single_task_workflows_without_dependencies(corpus_dir: Path):
    workload = gwf.read((corpus_dir / "gwf" / "chronos_exp_noscaler_ca.gwf").read_bytes()) \
        .document.workload
    assert len(workload.jobs) == 10_208
    assert all(len(job.tasks) == 1 and not job.tasks[0].dependencies for job in workload.jobs)


@pytest.mark.parametrize("path", sorted((REPO / "examples" / "gwf").glob("*.gwf")),
                         ids=lambda p: p.name)
def test_examples_read_cleanly_and_round_trip(path: Path):
    data = path.read_bytes()
    result = gwf.read(data)
    assert result.ok and result.diagnostics == ()
    written = gwf.write(result.document)
    assert written.losses == ()
    assert gwf.read(written.data).document == result.document
    if data.startswith(b"WorkflowID"):  # our own writer's layout, so byte for byte
        assert written.data == data


# --------------------------------------------------------------------------- mapping


def test_workflow_line_maps_onto_the_model():
    result = gwf.read(workflow_file(
        "7, 1, 16, 11, 2, 4, ",
        "7, 2, 40.5, 12, 1, 1, 1",
        "8, 3, 0, -1, -1, 3, 1 2",
    ))
    assert [d.code for d in result.diagnostics] == ["gwf.unknown-runtime"]
    first, second = result.document.workload.jobs
    assert first.id == 7 and [t.id for t in first.tasks] == [1, 2]
    assert first.tasks[0] == Task(id=1, submit_time_s=16.0, runtime_s=11.0,
                                  request=ResourceRequest(cores=2.0),
                                  extras={"gwf:ReqNProcs": 4})
    assert first.tasks[1].submit_time_s == 40.5 and first.tasks[1].dependencies == (1,)
    third = second.tasks[0]
    assert third.runtime_s is None and third.request.cores == 3.0
    assert third.extras == {"gwf:NProcs": -1} and third.dependencies == (1, 2)


def test_archive_line_maps_columns_onto_fields_and_extras():
    line = archive_line(JobID=5, SubmitTime=10, WaitTime=3, RunTime=100, NProcs=4,
                        ReqNProcs=8, ReqTime=3600, ReqMemory=2048, Status=1, UserID=7,
                        GroupID=0, JobStructure="BoT", JobStructureParams="12")
    result = gwf.read(f"# GWA excerpt\n{line}\n".encode())
    assert result.ok
    (job,) = result.document.workload.jobs
    (task,) = job.tasks
    assert job.id == task.id == 5
    assert task.runtime_s == 100 and task.requested_time_s == 3600
    assert task.request.cores == 4 and task.request.memory_mb == 2048 * 4 / 1024
    assert (task.user, task.group) == ("7", "0")
    assert task.extras == {"gwf:ReqNProcs": 8, "gwf:WaitTime": 3, "gwf:Status": 1,
                           "gwf:JobStructure": "BoT", "gwf:JobStructureParams": "12"}


def test_sniff_tells_the_variants_from_other_formats():
    assert gwf.sniff(HEADER.encode())
    assert gwf.sniff(b"0, 1, 16, 11, 1, 1, \n")
    assert gwf.sniff(("# c\n" + archive_line() + "\n").encode())
    assert not gwf.sniff(b"1 0 10 100 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n")  # SWF
    assert not gwf.sniff(b'{"name": "x"}')
    assert not gwf.sniff(b"")


# --------------------------------------------------------------------------- diagnostics


def test_negative_runtime_is_located_at_its_field():
    result = gwf.read(workflow_file("0, 1, 16, -5, 1, 1, "))
    assert result.document is None
    (diagnostic,) = result.diagnostics
    assert (diagnostic.line, diagnostic.column, diagnostic.pointer) == (2, 11, "/lines/2/RunTime")
    assert "RunTime is -5" in diagnostic.message and ">= 0" in diagnostic.message


def test_unknown_dependency_points_at_the_dependency_token():
    result = gwf.read(workflow_file("0, 1, 0, 1, 1, 1, ", "0, 2, 0, 1, 1, 1, 1 99"))
    assert errors(result) == [("gwf.unknown-dependency", 3, 21, "/lines/3/Dependencies/1")]
    assert "99" in result.diagnostics[0].message


def test_cycles_are_reported_with_their_members_and_blocked_tasks_warned():
    result = gwf.read(workflow_file(
        "0, 1, 0, 1, 1, 1, 3", "0, 2, 0, 1, 1, 1, 1", "0, 3, 0, 1, 1, 1, 2",
        "0, 4, 0, 1, 1, 1, 4", "0, 5, 0, 1, 1, 1, 1",
    ))
    assert result.document is None
    cycles = [d for d in result.diagnostics if d.code == "gwf.dependency-cycle"]
    assert len(cycles) == 2
    assert {"1", "2", "3"} <= set(cycles[0].message.replace("→", " ").split())
    assert cycles[1].line == 5 and "4 → 4" in cycles[1].message
    (blocked,) = [d for d in result.diagnostics if d.code == "gwf.blocked-by-cycle"]
    assert blocked.message.startswith("1 more task")


def test_long_dependency_chain_is_checked_without_recursion():
    lines = ["0, 0, 0, 1, 1, 1, "] + [f"0, {i}, 0, 1, 1, 1, {i - 1}" for i in range(1, 20_000)]
    lines[0] = "0, 0, 0, 1, 1, 1, 19999"
    result = gwf.read(workflow_file(*lines))
    (cycle,) = result.diagnostics
    assert cycle.code == "gwf.dependency-cycle"
    assert "of 20,000 tasks" in cycle.message and len(cycle.message) < 200


def test_duplicate_task_id_names_the_first_line():
    result = gwf.read(workflow_file("0, 1, 0, 1, 1, 1, ", "1, 1, 0, 1, 1, 1, "))
    assert errors(result) == [("gwf.duplicate-id", 3, 4, "/lines/3/JobID")]
    assert "line 2" in result.diagnostics[0].message


@pytest.mark.parametrize(("line", "code", "column", "pointer"), [
    ("0, 1, 0, 1, 1, 1", "gwf.field-count", 1, "/lines/2"),
    ("-3, 1, 0, 1, 1, 1, ", "schema.type", 1, "/lines/2/WorkflowID"),
    ("0, 7x, 0, 1, 1, 1, ", "schema.type", 4, "/lines/2/JobID"),
    ("0, 1, 0, 1, 0, 1, ", "schema.const", 13, "/lines/2/NProcs"),
    ("0, 1, nan, 1, 1, 1, ", "schema.type", 7, "/lines/2/SubmitTime"),
    ("0, 1, 1e400, 1, 1, 1, ", "schema.type", 7, "/lines/2/SubmitTime"),
    ("0, 1_0, 0, 1, 1, 1, ", "schema.type", 4, "/lines/2/JobID"),
    ("0, \u0661, 0, 1, 1, 1, ", "schema.type", 4, "/lines/2/JobID"),
    (f"0, {'9' * 5000}, 0, 1, 1, 1, ", "schema.type", 4, "/lines/2/JobID"),
    ("0, 1, 0, 1, -1, -1, ", "gwf.unknown-processors", 13, "/lines/2/NProcs"),
])
def test_bad_fields_are_located(line: str, code: str, column: int, pointer: str):
    result = gwf.read(workflow_file(line))
    assert result.document is None
    assert errors(result)[0] == (code, 2, column, pointer)


def test_archive_errors_are_located_by_token():
    result = gwf.read((archive_line(RunTime=-3) + "\n" + "1 2 3\n").encode())
    assert errors(result) == [
        ("schema.const", 1, 8, "/lines/1/RunTime"),
        ("gwf.field-count", 2, 1, "/lines/2"),
    ]


@pytest.mark.parametrize(("data", "code"), [
    (b"", "gwf.empty"),
    (b"WorkflowID, JobID\n0, \xff\n", "gwf.encoding"),
])
def test_unreadable_files(data: bytes, code: str):
    result = gwf.read(data)
    assert result.document is None
    assert [d.code for d in result.diagnostics] == [code]


def test_missing_header_is_read_with_a_warning():
    result = gwf.read(b"0, 1, 0, 1, 1, 1, \n")
    assert result.ok
    assert [d.code for d in result.diagnostics] == ["gwf.no-header"]


@pytest.mark.parametrize("data", [HEADER.encode(), b"# only a comment\n\n"])
def test_header_or_comment_only_file_is_an_empty_workload(data: bytes):
    result = gwf.read(data)
    assert result.ok and result.document.workload.jobs == ()
    assert [d.code for d in result.diagnostics] == ["gwf.no-tasks"]


def test_a_garbage_file_stops_after_the_error_budget():
    result = gwf.read(workflow_file(*["a, b, c, d, e, f, g"] * 3000))
    assert result.document is None
    assert result.diagnostics[-1].code == "gwf.too-many-errors"
    assert len(result.diagnostics) <= gwf.MAX_ERRORS + 1


# --------------------------------------------------------------------------- schema agreement

_TOKENS = st.sampled_from(["0", "1", "7", "-1", "-2", "1.5", "1.0", "2e3", "-0.5", "x", "",
                           "1_0", "inf", "nan", "+3", "\u0663", "t1", "_a", "#1", "a;b"])


def _as_record_value(token: str, integer: bool) -> object:
    value = gwf.parse_int(token) if integer else gwf.parse_number(token)
    return token if value is None else value


@given(st.lists(_TOKENS, min_size=6, max_size=6), st.lists(_TOKENS, max_size=3))
@settings(max_examples=300)
def test_fast_check_agrees_with_the_record_schema(values: list[str], dependencies: list[str]):
    dependencies = [token for token in dependencies if token]  # blank tokens are separators
    line = ", ".join([*values, " ".join(dependencies)])
    assume(not line.startswith("#"))  # that is a comment line, not a record
    integer_columns = {"WorkflowID", "JobID", "NProcs", "ReqNProcs"}
    record = {name: _as_record_value(token.strip(), name in integer_columns)
              for name, token in zip(gwf.WORKFLOW_COLUMNS, values, strict=False)}
    record["Dependencies"] = [_as_record_value(token, True) for token in dependencies]
    schema_valid = jsonschema.Draft202012Validator(load_schema(gwf.SCHEMA)).is_valid(record)
    result = gwf.read(workflow_file(line))
    line_codes = {d.code for d in result.diagnostics if d.is_error and d.line == 2}
    assert "gwf.record" not in line_codes
    line_rejected = bool(line_codes - {"gwf.dependency-cycle", "gwf.unknown-dependency"})
    assert line_rejected != schema_valid


# --------------------------------------------------------------------------- round trips


@given(workflow_workloads())
@settings(max_examples=150, deadline=None)
def test_workflow_variant_round_trip_is_identity(workload: Workload):
    written = gwf.write(Document(workload=workload), variant="workflow")
    assert written.losses == () and written.ok
    result = gwf.read(written.data)
    assert not [d for d in result.diagnostics if d.is_error]
    assert result.document == Document(workload=workload)
    assert gwf.write(Document(workload=workload), variant="auto").data == written.data


@given(archive_workloads())
@settings(max_examples=150, deadline=None)
def test_archive_variant_round_trip_is_identity(workload: Workload):
    written = gwf.write(Document(workload=workload), variant="archive")
    assert written.losses == () and written.ok
    result = gwf.read(written.data)
    assert result.ok, result.diagnostics
    assert result.document == Document(workload=workload, extras={gwf.VARIANT_KEY: "archive"})


def test_auto_variant_prefers_the_archive_when_it_loses_less():
    task = Task(id=1, requested_time_s=60.0, user="3")
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(task,)),)))
    written = gwf.write(document, variant="auto")
    assert written.losses == ()
    assert written.data.startswith(b"# JobID")
    assert {loss.field for loss in gwf.write(document).losses} == {
        "task.requested_time_s", "task.user"}  # the default is the workflow variant


def test_an_archive_file_is_written_back_as_an_archive_file():
    data = (archive_line(JobID=3, RunTime=5) + "\n").encode()
    result = gwf.read(data)
    assert result.document.extras == {gwf.VARIANT_KEY: "archive"}
    assert gwf.write(result.document).data.splitlines()[1] == data.strip()


def test_text_ids_are_read_with_a_warning_and_written_back():
    result = gwf.read(workflow_file("w1, t1, 0, 5, 1, 1, ", "w1, t2, 3, 5, 1, 1, t1"))
    assert result.ok
    assert [d.code for d in result.diagnostics] == ["gwf.text-ids"]
    (job,) = result.document.workload.jobs
    assert job.id == "w1" and [t.id for t in job.tasks] == ["t1", "t2"]
    assert job.tasks[1].dependencies == ("t1",)
    assert gwf.read(gwf.write(result.document).data).document == result.document


def test_writer_reports_what_gwf_cannot_hold():
    tasks = (
        Task(id="a", request=ResourceRequest(nodes=2, cores=1.5), deadline_s=5.0,
             extras={"swf:Queue": 1}),
        Task(id="b", dependencies=("a", "missing"), user="alice"),
    )
    document = Document(workload=Workload(jobs=(Job(id="j", tasks=tasks, name="n"),),
                                          name="w"))
    written = gwf.write(document, variant="workflow")
    lost = {loss.field: loss.count for loss in written.losses}
    assert lost == {"workload.name": 1, "job.name": 1, "task.request.nodes": 1,
                    "task.request.cores": 1, "task.deadline_s": 1, "task.dependencies": 1,
                    "task.user": 1}  # swf: extras are another format's: not a GWF loss
    reread = gwf.read(written.data)
    assert reread.ok
    first, second = reread.document.workload.tasks()
    assert first.id == "a" and first.request.cores == 2 and second.dependencies == ("a",)


def test_ids_that_cannot_be_written_exactly_are_renumbered():
    tasks = (Task(id="has space"), Task(id="07", dependencies=("has space",)))
    written = gwf.write(Document(workload=Workload(jobs=(Job(id="", tasks=tasks),))))
    assert {loss.field: loss.count for loss in written.losses} == {"task.id": 2, "job": 1}
    first, second = gwf.read(written.data).document.workload.tasks()
    assert (first.id, second.id, second.dependencies) == (1, 2, (1,))


def test_archive_writer_reports_regrouping_and_unwritable_values():
    job = Job(id=9, tasks=(Task(id=1, user="alice"), Task(id=2, extras={"gwf:VOID": "a b"})))
    written = gwf.write(Document(workload=Workload(jobs=(job,))), variant="archive")
    lost = {loss.field: loss.count for loss in written.losses}
    assert lost == {"job": 1, "task.user": 1, "task.extras": 1}
    assert gwf.read(written.data).ok


def test_a_document_without_workload_writes_an_empty_trace_and_a_known_variant_is_needed():
    assert gwf.read(gwf.write(Document()).data).document.workload == Workload()
    document = Document(workload=Workload())
    assert [d.code for d in gwf.write(document, variant="x").diagnostics] == ["gwf.variant"]
