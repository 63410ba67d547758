"""SWF: field mapping, header fields, preceding jobs, located errors, corpus, round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from dcx.converters.losses import conversion_losses
from dcx.core.model import Document, Job, Placement, ResourceRequest, Task, TaskStatus, Workload
from dcx.core.restrict import restrict, without_empty_parts
from dcx.formats import swf
from tests.strategies import Domain, documents
from tests.strategies_traces import swf_workloads

REPO = Path(__file__).resolve().parent.parent


def job_line(**fields: object) -> str:
    values = {name: "-1" for name in swf.COLUMNS}
    values.update({"JobNumber": "1", "SubmitTime": "0", "AllocatedProcessors": "1",
                   "RequestedProcessors": "1"})
    values.update({name: str(value) for name, value in fields.items()})
    return " ".join(values[name] for name in swf.COLUMNS)


def swf_file(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


@pytest.mark.corpus
def test_haizea_blue_excerpt_reads_and_round_trips(corpus_dir: Path):
    data = (corpus_dir / "haizea" / "traces" / "blue" / "150requests.swf").read_bytes()
    assert swf.sniff(data)
    result = swf.read(data)
    assert result.ok and result.diagnostics == ()
    jobs = result.document.workload.jobs
    assert len(jobs) == 150
    first = jobs[0].tasks[0]
    assert (first.id, first.submit_time_s, first.runtime_s, first.requested_time_s) == (
        13, 0.0, 43.0, 64800.0)
    assert first.request == ResourceRequest(nodes=32, cores=1.0, placement=Placement.CORES)
    assert first.user == "96"
    assert first.extras == {"swf:RequestedProcessors": 4}
    assert (first.wait_time_s, first.cpu_time_s, first.status, first.queue) == (
        22.0, 0.03, TaskStatus.COMPLETED, "3")
    assert (first.used_memory_mb, first.application, first.partition, first.think_time_s) == (
        None, None, None, None)
    assert swf.normal_form_losses(result.document) == frozenset()
    assert swf.read(swf.write(result.document).data).document == result.document


@pytest.mark.corpus
def test_haizea_cancel_trace_is_rejected_for_its_reused_job_numbers(corpus_dir: Path):
    data = (corpus_dir / "haizea" / "traces" / "undocumented" / "test_cancel.swf").read_bytes()
    result = swf.read(data)
    assert result.document is None
    assert [(d.code, d.line, d.column, d.pointer) for d in result.diagnostics] == [
        ("swf.duplicate-id", line, 1, f"/lines/{line}/JobNumber") for line in (2, 3, 4)]


@pytest.mark.parametrize("path", sorted((REPO / "examples" / "swf").glob("*.swf")),
                         ids=lambda p: p.name)
def test_examples_read_cleanly_and_rewrite_exactly(path: Path):
    data = path.read_bytes()
    result = swf.read(data)
    assert result.ok and result.diagnostics == ()
    assert swf.normal_form(result.document) == result.document
    assert swf.write(result.document).data == data


def test_header_fields_become_attributes_and_the_start_time_the_origin():
    result = swf.read(swf_file(
        "; Version: 2.2", "; Computer: Example cluster", "; UnixStartTime: 1000000000",
        "; Note: first", "; Note: second", ";", "; a free comment", job_line()))
    assert result.ok
    workload = result.document.workload
    assert workload.time_origin == "2001-09-09T01:46:40Z"
    assert workload.attributes == {"Version": 2.2, "Computer": "Example cluster",
                                   "Note": ["first", "second"]}
    assert workload.extras == {"swf:comments": ["", "a free comment"]}


def test_processor_counts_map_onto_single_core_nodes():
    result = swf.read(swf_file(
        job_line(JobNumber=1, AllocatedProcessors=64, RequestedProcessors=8),
        job_line(JobNumber=2, AllocatedProcessors=0, RequestedProcessors=16, Status=5),
        job_line(JobNumber=3, AllocatedProcessors=4, RequestedProcessors=4,
                 RequestedMemory=2048, UserID=3, GroupID=0),
    ))
    assert result.ok
    first, second, third = result.document.workload.tasks()
    assert first.request == ResourceRequest(nodes=64, cores=1.0, placement=Placement.CORES)
    assert first.extras == {"swf:RequestedProcessors": 8}
    assert second.request.nodes == 16
    assert second.extras == {"swf:AllocatedProcessors": 0}
    assert second.status is TaskStatus.CANCELLED
    assert third.request == ResourceRequest(nodes=4, cores=1.0, memory_mb=2.0,
                                            placement=Placement.CORES)
    assert (third.user, third.group, third.extras) == ("3", "0", {})


def test_preceding_jobs_become_dependencies_or_stay_in_extras():
    result = swf.read(swf_file(
        job_line(JobNumber=1), job_line(JobNumber=2, PrecedingJobNumber=1, ThinkTime=30),
        job_line(JobNumber=3, PrecedingJobNumber=99),
    ))
    assert result.ok
    _, second, third = result.document.workload.tasks()
    assert second.dependencies == (1,) and second.extras == {}
    assert second.think_time_s == 30.0
    assert third.dependencies == () and third.extras == {"swf:PrecedingJobNumber": 99}
    (missing,) = result.diagnostics
    assert (missing.code, missing.line, missing.pointer) == (
        "swf.preceding-job-missing", 3, "/lines/3/PrecedingJobNumber")


def test_preceding_job_cycle_is_an_error():
    result = swf.read(swf_file(job_line(JobNumber=1, PrecedingJobNumber=2),
                               job_line(JobNumber=2, PrecedingJobNumber=1)))
    assert result.document is None
    assert [d.code for d in result.diagnostics] == ["swf.dependency-cycle"]


@pytest.mark.parametrize(("line", "code", "column", "pointer"), [
    (job_line(RunTime=-7), "schema.const", 8, "/lines/1/RunTime"),
    (job_line(JobNumber="1.5"), "schema.type", 1, "/lines/1/JobNumber"),
    (job_line(AllocatedProcessors=2.5), "schema.type", 11, "/lines/1/AllocatedProcessors"),
    (job_line(AllocatedProcessors=-1, RequestedProcessors=-1), "swf.unknown-processors", 11,
     "/lines/1/AllocatedProcessors"),
    ("1 2 3", "swf.field-count", 1, "/lines/1"),
])
def test_bad_lines_are_located(line: str, code: str, column: int, pointer: str):
    result = swf.read(swf_file(line))
    assert result.document is None
    first = result.diagnostics[0]
    assert (first.code, first.line, first.column, first.pointer) == (code, 1, column, pointer)


def test_runtime_message_names_the_expectation():
    (diagnostic,) = swf.read(swf_file(job_line(RunTime=-7))).diagnostics
    assert diagnostic.message == "RunTime is -7; expected a number >= 0, or -1 for unknown"


@pytest.mark.parametrize(("data", "code"), [
    (b"", "swf.empty"), (b"; UnixStartTime: soon\n", "swf.start-time"),
    (b"\xfe\n", "swf.encoding"),
])
def test_unreadable_files(data: bytes, code: str):
    result = swf.read(data)
    assert result.document is None and result.diagnostics[0].code == code


def test_sniff():
    assert swf.sniff(b"; Version: 2.2\n")
    assert swf.sniff(swf_file(job_line()))
    assert not swf.sniff(b"WorkflowID, JobID\n")
    assert not swf.sniff(b'{"workflows": []}')


@given(swf_workloads())
@settings(max_examples=150, deadline=None)
def test_round_trip_is_identity(workload: Workload):
    assert swf.normal_form_losses(Document(workload=workload)) == frozenset()
    written = swf.write(Document(workload=workload))
    assert written.ok
    result = swf.read(written.data)
    assert not [d for d in result.diagnostics if d.is_error], result.diagnostics
    assert result.document == Document(workload=workload)


def _lost(document: Document) -> set[str]:
    return {loss.field for loss in conversion_losses(document, swf.FORMAT)}


def test_a_job_without_tasks_is_a_job_empty_loss():
    workload = Workload(jobs=(Job(id=1, tasks=(Task(id=1),)), Job(id=2)))
    assert _lost(Document(workload=workload)) == {"job", "job.empty", "task.request.placement"}
    reread = swf.read(swf.write(Document(workload=workload)).data).document
    assert reread == Document(workload=Workload(jobs=(Job(id=1, tasks=(Task(
        id=1, request=ResourceRequest(placement=Placement.CORES)),)),)))


def test_writer_reports_what_swf_cannot_hold():
    tasks = (Task(id="a", request=ResourceRequest(nodes=2, cores=4.0, memory_mb=1024.0)),
             Task(id="b", dependencies=("a", "c"), image="img", user="alice"),
             Task(id="c"))
    workload = Workload(jobs=(Job(id="j", tasks=tasks, name="n"),),
                        time_origin="2018-12-11T01:02:03.5", attributes={"n": 3}, name="w")
    assert _lost(Document(workload=workload)) == {
        "task.request.placement", "task.id",
        "workload.name", "workload.time_origin", "job", "job.name", "task.request.cores",
        "task.dependencies.multiple", "task.image", "task.user"}
    reread = swf.read(swf.write(Document(workload=workload)).data)
    assert reread.ok
    first, second, _ = reread.document.workload.tasks()
    assert (first.id, second.id) == (1, 2)  # text ids numbered 1..n
    # 2 nodes of 4 cores are 8 processors, the 2 GB of the job 256 MB per processor
    assert first.request == ResourceRequest(nodes=8, memory_mb=256.0, placement=Placement.CORES)
    assert second.dependencies == (1,)
    # a name is written as a number made from it (AccaSim and the PWA tools parse numbers)
    assert second.user == swf.codec.name_number("alice") == "1679078337430"
    assert reread.document.workload.attributes == {"n": 3}
    assert swf.codec.loss_notes(Document(workload=workload)) == {
        "task.user": "names written as numbers made from each name, such as alice → "
                     "1679078337430"}


def test_header_values_read_back_with_their_types():
    attributes = {"MaxJobs": 8, "Ratio": 0.5, "Flag": True, "Looks": "8", "Text": "two words",
                  "Multi": "line\nbreak", "Queue": ["1 batch", 2]}
    workload = Workload(attributes=attributes, time_origin="2001-09-09T01:46:40Z")
    assert _lost(Document(workload=workload)) == set()
    written = swf.write(Document(workload=workload))
    assert b'; Looks: "8"' in written.data and b"; MaxJobs: 8" in written.data
    assert swf.read(written.data).document.workload == workload


@given(documents(Domain(whole_numbers=False)))
@settings(max_examples=150, deadline=None)
def test_what_reads_back_is_the_documents_normal_form_restricted_to_holds(document: Document):
    """Trust by construction: the writer serialises the normal form and nothing else."""
    result = swf.read(swf.write(document).data)
    assert result.ok and all(d.code == "swf.no-jobs" for d in result.diagnostics)
    expected = restrict(document, swf.HOLDS, "swf", target=swf.FORMAT)
    assert without_empty_parts(result.document, swf.HOLDS) == without_empty_parts(
        expected, swf.HOLDS)
    normal = swf.normal_form(document)
    assert swf.normal_form(normal) == normal and swf.normal_form_losses(normal) == frozenset()


def test_values_swf_cannot_write_are_value_restrictions_of_the_normal_form():
    tasks = (Task(id="has space", submit_time_s=-5.0, runtime_s=-1.0, user="two words",
                  request=ResourceRequest(nodes=0, memory_mb=-3.0),
                  extras={"swf:AllocatedProcessors": -1, "swf:RequestedProcessors": -1,
                          "swf:Status": "done"}),
             Task(id="07", dependencies=("has space", "elsewhere")))
    workload = Workload(jobs=tuple(Job(id=task.id, tasks=(task,)) for task in tasks),
                        time_origin="2001-09-09T01:46:40+00:00",
                        extras={"swf:comments": ["ok", "Key: looks like a field"]})
    document = Document(workload=workload)
    assert swf.normal_form_losses(document) == {
        "task.request.placement",
        "task.id", "task.submit_time_s", "task.runtime_s", "task.user", "task.request.nodes",
        "task.request.memory_mb", "task.extras", "task.dependencies", "workload.extras"}
    result = swf.read(swf.write(document).data)
    assert result.ok and result.diagnostics == ()
    first, second = result.document.workload.tasks()
    assert (first.id, first.submit_time_s, first.runtime_s, first.user) == (
        1, 0.0, None, "1012131612119")  # the name's number
    assert first.extras == {"swf:AllocatedProcessors": -1}
    assert second.dependencies == (1,)
    assert result.document.workload.time_origin == "2001-09-09T01:46:40Z"  # the same instant
    assert result.document.workload.extras == {"swf:comments": ["ok"]}


@pytest.mark.parametrize(("origin", "offset"), [
    ("2001-09-09T03:46:40+02:00", "+02:00"), ("2001-09-08T20:16:40-05:30", "-05:30"),
    ("2001-09-09T01:46:40Z", None), ("2001-09-09T01:46:40+00:00", None),
    ("2001-09-09T01:46:40", None)])
def test_a_time_origins_utc_offset_is_a_loss_its_instant_is_kept(origin: str,
                                                                 offset: str | None) -> None:
    """UnixStartTime is seconds since 1970: the instant goes through, an offset other
    than UTC's own is a derived loss whose line says it (no zone name can be made of it)."""
    from dcx.converters.losses import conversion_losses

    task = Task(id=1, runtime_s=5.0)
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(task,)),),
                                          time_origin=origin))
    lost = {loss.field: loss for loss in conversion_losses(document, swf.FORMAT)}
    back = swf.read(swf.write(document).data).document
    assert back is not None and back.workload is not None
    assert back.workload.time_origin == "2001-09-09T01:46:40Z"
    if offset is None:
        assert "workload.time_origin" not in lost
    else:
        assert lost["workload.time_origin"].count == 1
        assert f"its UTC offset ({offset}) is not" in lost["workload.time_origin"].detail


def test_losses_and_jobs_are_located_at_their_line(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A job is its line (SWF has one task per job), on the exact path and on the
    vectorised one alike, which compute it only when asked."""
    from dcx.cli.main import main
    from dcx.formats.swf import codec

    source = tmp_path / "two.swf"
    source.write_text("; Version: 2.2\n"
                      "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                      "\n"
                      "2 5 10 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n")
    capsys.readouterr()
    assert main(["convert", str(source), str(tmp_path / "out.json"), "--to", "wfformat",
                 "--losses"]) == 0
    line = f"  task.submit_time_s: 1 value (first: {source}:4:1, /workload/jobs/1/tasks/0): " \
        "submit time ("
    said = [text for text in capsys.readouterr().err.splitlines() if text.startswith(line)]
    assert len(said) == 1 and "swf: Submit Time (field 2)" in said[0]
    data = source.read_bytes()
    fast = swf.read_fast(data, chunk_bytes=64)
    assert fast is not None
    for result in (codec._read(data), fast):
        assert result.locate("/workload/jobs/1") == (4, 1)
        assert result.locate("/workload/jobs/0") == (2, 1)
        assert result.locate("/workload/jobs/2") == (None, None)


# Alea's traces (Study-Alea-GridSim-SimJava data-set/*.swf) add fields after the 18th; this
# file is written here in that shape (a header, then 21 fields per job line).
ALEA_SHAPED = b"""; Version: 2.2
; Computer: a cluster in Alea's 21-field shape
; MaxNodes: 4
; MaxProcs: 16
1 0 10 300 4 280.5 -1 4 600 -1 1 3 1 -1 1 1 -1 -1 0 x86_64 linux
2 5 0 120 2 -1 -1 2 300 -1 0 3 1 -1 1 1 -1 -1 1 x86_64 linux
3 9 2 -1 8 -1 -1 8 900 -1 5 4 2 -1 1 1 -1 -1 0 ppc64 aix
"""


def test_trailing_fields_are_kept_with_one_warning_and_written_back():
    assert swf.sniff(ALEA_SHAPED.split(b"\n", 4)[4])  # a headerless file of such lines
    result = swf.read(ALEA_SHAPED)
    assert result.ok and result.document is not None
    (warning,) = result.diagnostics
    assert (warning.code, warning.line) == ("swf.trailing-fields", 5)
    assert "3 job lines" in warning.message
    tasks = list(result.document.workload.tasks())
    assert [task.extras[swf.codec.TRAILING_KEY] for task in tasks] == [
        ["0", "x86_64", "linux"], ["1", "x86_64", "linux"], ["0", "ppc64", "aix"]]
    assert tasks[0].runtime_s == 300.0 and tasks[2].request.nodes == 8
    written = swf.write(result.document)
    assert written.data.splitlines()[4:] == ALEA_SHAPED.splitlines()[4:]
    assert conversion_losses(result.document, swf.FORMAT) == ()


def test_trailing_fields_are_one_warning_in_chunks_too():
    import io

    from dcx.parsing.chunks import line_chunks

    assert swf.FORMAT.read_chunks is not None
    for chunk_bytes in (1, 64, 4096):
        chunked = swf.FORMAT.read_chunks(line_chunks(io.BytesIO(ALEA_SHAPED).read, b"",
                                                     chunk_bytes))
        assert chunked.diagnostics == swf.read(ALEA_SHAPED).diagnostics
        assert chunked.jobs == 3


def test_fewer_than_18_fields_is_still_an_error_and_29_are_not_sniffed():
    assert not swf.sniff(b" ".join([b"1"] * 29) + b"\n")
    result = swf.read(swf_file("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"))
    assert result.diagnostics[0].code == "swf.field-count"


# ---------------------------------------------------------- what PWA tools read (issue 31)


def _single_task_jobs(*tasks: Task) -> Document:
    return Document(workload=Workload(jobs=tuple(Job(id=task.id, tasks=(task,))
                                                 for task in tasks)))


def _written_fields(document: Document, *names: str) -> list[tuple[str, ...]]:
    text = swf.write(document).data.decode()
    index = [swf.COLUMNS.index(name) for name in names]
    return [tuple(line.split()[i] for i in index) for line in text.splitlines()
            if line and not line.startswith(";")]


def test_jobs_are_written_in_submit_time_order_and_numbered_as_a_counter():
    document = _single_task_jobs(
        Task(id=10, submit_time_s=30.0), Task(id=11, submit_time_s=0.0, dependencies=(10,)),
        Task(id=12, submit_time_s=30.0, dependencies=(11,)), Task(id=13, submit_time_s=5.0))
    assert _written_fields(document, "JobNumber", "SubmitTime", "PrecedingJobNumber") == [
        ("1", "0", "3"), ("2", "5", "-1"), ("3", "30", "-1"), ("4", "30", "1")]
    assert "task.id" in swf.normal_form_losses(document)
    reread = swf.read(swf.write(document).data).document
    assert reread == swf.normal_form(document)


def test_sorted_integer_jobs_keep_their_numbers_even_when_the_order_moves_none():
    # a moved job whose numbers still count up in the written order keeps them
    document = _single_task_jobs(Task(id=7, submit_time_s=9.0), Task(id=3, submit_time_s=1.0))
    assert _written_fields(document, "JobNumber", "SubmitTime") == [("3", "1"), ("7", "9")]
    assert "task.id" not in swf.normal_form_losses(document)
    ties = _single_task_jobs(Task(id=2, submit_time_s=4.0), Task(id=1, submit_time_s=4.0))
    assert _written_fields(ties, "JobNumber") == [("2",), ("1",)]  # ties keep their order
    assert swf.normal_form_losses(ties) == {"task.request.placement"}


def test_text_job_ids_are_numbered_with_their_dependencies():
    document = _single_task_jobs(
        Task(id="split_fasta_00000001", submit_time_s=0.0),
        Task(id="blastall_00000002", submit_time_s=0.0, dependencies=("split_fasta_00000001",)),
        Task(id="cat_blast_00000003", submit_time_s=0.0, dependencies=("blastall_00000002",)))
    assert _written_fields(document, "JobNumber", "PrecedingJobNumber") == [
        ("1", "-1"), ("2", "1"), ("3", "2")]
    assert "task.id" in {loss.field for loss in conversion_losses(document, swf.FORMAT)}


def test_a_preceding_job_outside_the_workload_is_written_only_as_a_number():
    outside = Task(id=1, extras={"swf:PrecedingJobNumber": "elsewhere"})
    assert _written_fields(_single_task_jobs(outside), "PrecedingJobNumber") == [("-1",)]
    assert "task.extras" in swf.normal_form_losses(_single_task_jobs(outside))


def test_times_are_written_as_whole_seconds():
    document = _single_task_jobs(
        Task(id=1, submit_time_s=0.5, runtime_s=3.2, requested_time_s=3.2),
        Task(id=2, submit_time_s=1.49, runtime_s=2.5, requested_time_s=4.0))
    # submit and runtime to the nearest second (half up), the requested limit up
    assert _written_fields(document, "SubmitTime", "RunTime", "RequestedTime") == [
        ("1", "3", "4"), ("1", "3", "4")]
    assert swf.normal_form_losses(document) == {
        "task.submit_time_s", "task.runtime_s", "task.requested_time_s",
        "task.request.placement"}
    whole = _single_task_jobs(Task(id=1, submit_time_s=2.0, runtime_s=3.0,
                                   requested_time_s=4.0))
    assert "task.runtime_s" not in swf.normal_form_losses(whole)


def test_a_rounded_requested_time_still_bounds_its_rounded_runtime():
    document = _single_task_jobs(Task(id=1, runtime_s=2.5, requested_time_s=2.5))
    ((runtime, requested),) = _written_fields(document, "RunTime", "RequestedTime")
    assert int(runtime) <= int(requested)


def test_columns_out_of_order_or_in_fractions_take_the_task_path_to_the_same_bytes():
    from dcx.core.columns import JobRows, WorkloadColumns

    lines = [job_line(JobNumber=1, SubmitTime=5), job_line(JobNumber=2, SubmitTime=0),
             job_line(JobNumber=3, SubmitTime=7, RunTime="3.2")]
    for data in (swf_file(*lines), swf_file(lines[1], lines[0], lines[2])):
        document = swf.read(data).document
        columns = WorkloadColumns.from_jobs(document.workload.jobs)
        assert columns is not None
        as_columns = Document(workload=Workload(jobs=JobRows(columns)))
        assert swf.write(as_columns).data == swf.write(document).data
        written = list(swf.read(swf.write(document).data).document.workload.tasks())
        submits = [task.submit_time_s for task in written]
        assert submits == sorted(submits) and written[-1].runtime_s == 3.0
