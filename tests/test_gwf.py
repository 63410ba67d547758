"""GWF: both variants, the per-line record schema, located diagnostics, corpus traces."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dcx.converters.losses import conversion_losses
from dcx.core.diagnostics import ReadResult
from dcx.core.model import Document, Job, Placement, ResourceRequest, Task, TaskStatus, Workload
from dcx.core.restrict import restrict, without_empty_parts
from dcx.formats import gwf
from dcx.parsing.schemas import load_schema
from dcx.parsing.traces import parse_int, parse_number
from tests.strategies import Domain, documents
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


def errors(result: ReadResult) -> list[tuple[str, int | None, int | None, str]]:
    return [(d.code, d.line, d.column, d.pointer) for d in result.diagnostics if d.is_error]


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
    assert gwf.normal_form_losses(result.document) == frozenset()
    assert gwf.write(result.document).data == data


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
    assert gwf.normal_form(result.document) == result.document
    written = gwf.write(result.document)
    assert gwf.read(written.data).document == result.document
    if data.startswith(b"WorkflowID"):  # our own writer's layout, so byte for byte
        assert written.data == data
    else:  # the archive variant, without the comments
        assert written.data.splitlines()[1:] == [
            line for line in data.splitlines() if not line.startswith(b"#")]


# --------------------------------------------------------------------------- mapping


def test_workflow_line_maps_onto_the_model():
    result = gwf.read(workflow_file(
        "7, 1, 16, 11, 2, 4, ",
        "7, 2, 40.5, 12, 1, 1, 1",
        "8, 3, 0, -1, -1, 3, 1 2",
    ))
    assert result.diagnostics == ()  # an unknown runtime is the scheduler's concern
    first, second = result.document.workload.jobs
    assert first.id == 7 and [t.id for t in first.tasks] == [1, 2]
    assert first.tasks[0] == Task(id=1, submit_time_s=16.0, runtime_s=11.0,
                                  request=ResourceRequest(cores=2.0, placement=Placement.CORES),
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
    assert task.extras == {"gwf:ReqNProcs": 8, "gwf:JobStructure": "BoT",
                           "gwf:JobStructureParams": "12"}
    assert (task.wait_time_s, task.status) == (3.0, TaskStatus.COMPLETED)


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
    value = parse_int(token) if integer else parse_number(token)
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


def _no_warnings_but_empty(result: ReadResult) -> bool:
    """Only an empty workload warns (``gwf.no-tasks``): a written file is otherwise clean."""
    return all(d.code == "gwf.no-tasks" for d in result.diagnostics)


@given(workflow_workloads())
@settings(max_examples=150, deadline=None)
def test_workflow_variant_round_trip_is_identity(workload: Workload):
    document = Document(workload=workload)
    assert gwf.normal_form_losses(document) == frozenset()
    written = gwf.write(document)
    assert written.ok and written.data.startswith(b"WorkflowID")
    result = gwf.read(written.data)
    assert result.ok and _no_warnings_but_empty(result)
    assert result.document == document


@given(archive_workloads())
@settings(max_examples=150, deadline=None)
def test_archive_workloads_round_trip_in_either_variant(workload: Workload):
    document = Document(workload=workload)
    assert gwf.normal_form_losses(document) == frozenset()
    result = gwf.read(gwf.write(document).data)
    assert result.ok, result.diagnostics
    assert result.document == document


@given(documents(Domain(whole_numbers=False)))
@settings(max_examples=150, deadline=None)
def test_what_reads_back_is_the_documents_normal_form_restricted_to_holds(document: Document):
    """Trust by construction: the writer serialises the normal form and nothing else."""
    written = gwf.write(document)
    result = gwf.read(written.data)
    assert written.ok and result.ok and _no_warnings_but_empty(result)
    expected = restrict(document, gwf.HOLDS, "gwf", target=gwf.FORMAT)
    assert without_empty_parts(result.document, gwf.HOLDS) == without_empty_parts(
        expected, gwf.HOLDS)
    normal = gwf.normal_form(document)
    assert gwf.normal_form(normal) == normal and gwf.normal_form_losses(normal) == frozenset()


ANYWHERE = ResourceRequest(placement=Placement.CORES)
"""One core anywhere: a request GWF holds as it is."""


def _lost(document: Document) -> set[str]:
    return {loss.field for loss in conversion_losses(document, gwf.FORMAT)}


def test_the_archive_variant_is_written_when_it_keeps_more():
    task = Task(id=1, requested_time_s=60.0, user="3", request=ANYWHERE)
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(task,)),)))
    assert gwf.variant_of(document.workload) == "archive"
    assert _lost(document) == set()
    assert gwf.write(document).data.startswith(b"# JobID")
    # one dependency against one user: a tie keeps the workflow variant SC18 reads
    dependent = Workload(jobs=(Job(id=1, tasks=(
        Task(id=1, request=ANYWHERE),
        Task(id=2, dependencies=(1,), user="3", request=ANYWHERE))),))
    assert gwf.variant_of(dependent) == "workflow"
    assert _lost(Document(workload=dependent)) == {"task.user"}


def test_an_archive_file_is_written_back_as_an_archive_file():
    data = (archive_line(JobID=3, RunTime=5, Status=1) + "\n").encode()
    result = gwf.read(data)
    assert gwf.write(result.document).data.splitlines()[1] == data.strip()


def test_an_archive_file_without_archive_columns_reads_back_the_same_from_a_workflow_file():
    result = gwf.read((archive_line(JobID=3, RunTime=5) + "\n").encode())
    written = gwf.write(result.document)
    assert written.data.startswith(b"WorkflowID")
    assert gwf.read(written.data).document == result.document


def test_text_ids_are_read_with_a_warning_and_written_as_numbers_sc18_reads():
    result = gwf.read(workflow_file("w1, t1, 0, 5, 1, 1, ", "w1, t2, 3, 5, 1, 1, t1"))
    assert result.ok
    assert [d.code for d in result.diagnostics] == ["gwf.text-ids"]
    (job,) = result.document.workload.jobs
    assert job.id == "w1" and [t.id for t in job.tasks] == ["t1", "t2"]
    assert job.tasks[1].dependencies == ("t1",)
    assert _lost(result.document) == {"task.id", "job"}
    reread = gwf.read(gwf.write(result.document).data)
    assert reread.ok and reread.diagnostics == ()
    (job,) = reread.document.workload.jobs
    assert job.id == 0 and [(t.id, t.dependencies) for t in job.tasks] == [(1, ()), (2, (1,))]


def test_decimal_text_ids_are_written_as_the_numbers_they_spell():
    tasks = (Task(id="12", request=ANYWHERE),
             Task(id="7", dependencies=("12",), request=ANYWHERE))
    document = Document(workload=Workload(jobs=(Job(id="3", tasks=tasks),)))
    assert _lost(document) == set()
    (job,) = gwf.read(gwf.write(document).data).document.workload.jobs
    assert job.id == 3 and [(t.id, t.dependencies) for t in job.tasks] == [(12, ()), (7, (12,))]


def test_losses_name_what_gwf_cannot_hold():
    tasks = (
        Task(id="a", request=ResourceRequest(nodes=2, cores=1.5), deadline_s=5.0,
             extras={"swf:Queue": 1}),
        Task(id="b", dependencies=("a", "missing"), user="alice", runtime_s=-4.0),
    )
    document = Document(workload=Workload(jobs=(Job(id="j", tasks=tasks, name="n"),),
                                          name="w"))
    assert _lost(document) == {
        "task.request.placement",
        "workload.name", "job", "job.name", "task.id", "task.runtime_s", "task.request.nodes",
        "task.request.cores", "task.dependencies", "task.deadline_s", "task.user",
        "task.extras"}  # task.extras: the swf: key is another format's, dropped here
    reread = gwf.read(gwf.write(document).data)
    assert reread.ok
    first, second = reread.document.workload.tasks()
    # 2 nodes of 1.5 cores: the 3 cores of one node
    assert first.id == 1 and first.request.cores == 3 and second.dependencies == (1,)
    assert second.runtime_s is None


def test_ids_that_cannot_be_written_exactly_are_renumbered():
    tasks = (Task(id="has space"), Task(id="07", dependencies=("has space",)))
    document = Document(workload=Workload(jobs=(Job(id="", tasks=tasks),)))
    assert gwf.normal_form_losses(document) == {"task.id", "job", "task.request.placement"}
    first, second = gwf.read(gwf.write(document).data).document.workload.tasks()
    assert (first.id, second.id, second.dependencies) == (1, 2, (1,))


def test_the_archive_variant_regroups_jobs_and_drops_values_its_columns_cannot_hold():
    job = Job(id=9, tasks=(Task(id=1, user="7", requested_time_s=60.0),
                           Task(id=2, extras={"gwf:VOID": "a b", "gwf:Status": 3},
                                status=TaskStatus.COMPLETED)))
    document = Document(workload=Workload(jobs=(job,)))
    assert gwf.variant_of(document.workload) == "archive"
    assert gwf.normal_form_losses(document) == {"job", "task.extras", "task.request.placement"}
    result = gwf.read(gwf.write(document).data)
    assert result.ok and [j.id for j in result.document.workload.jobs] == [1, 2]
    assert result.document.workload.jobs[1].tasks[0].extras == {"gwf:Status": 3}


def test_a_document_without_workload_writes_an_empty_trace():
    assert gwf.read(gwf.write(Document()).data).document.workload == Workload()


def test_losses_name_a_job_at_its_first_task_line(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A workflow is where its first task's line is: the second workflow's tasks (lines 4
    and 5) are one SWF job each, a loss first seen at line 4."""
    from dcx.cli.main import main

    source = tmp_path / "two.gwf"
    source.write_text("# two workflows\n"
                      "WorkflowID, JobID, SubmitTime, RunTime, NProcs, ReqNProcs, Dependencies\n"
                      "1, 1, 0, 60, 1, 1,\n"
                      "2, 10, 5, 60, 1, 1,\n"
                      "2, 12, 9, 60, 1, 1, 10\n")
    capsys.readouterr()
    assert main(["convert", str(source), str(tmp_path / "out.swf"), "--to", "swf",
                 "--losses"]) == 0
    assert f"  job: 1 value (first: {source}:4:1, /workload/jobs/1): grouping of tasks " \
        "into jobs/workflows (gwf: WorkflowID; osp-workload: workflows; parquet: job_id)" \
        in capsys.readouterr().err.splitlines()
    located = gwf.read(source.read_bytes())
    assert located.locate("/workload/jobs/1/tasks/1") == (5, 1)
    assert located.locate("/workload/jobs/2") == (None, None)
