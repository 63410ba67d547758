"""Batsim and osp-workload on workloads held as columns: the normal form, its losses and the
writer made column by column against the task-by-task path, for the same workload given as
columns and as objects: the same bytes (or the same refusal), the same normal-form losses and
the same conversion losses (fields, counts, first places), the same chunk parts
(``write_part``). Workloads come from the formats' round-trip strategies and from a strategy
of hostile values (what each format's normal form changes: runtimes of 0 or less, infinite
times, node counts out of range, ids Batsim or osp-workload renumber, dependencies on no
task, keys osp-workload writes itself)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dcx.converters.losses import conversion_losses
from dcx.core.columns import (
    PLACEMENTS,
    WorkloadColumns,
    columnar,
    columns_of,
    placements_of,
)
from dcx.core.model import Document, Id, Job, Placement, ResourceRequest, Task, Workload
from dcx.formats import batsim, osp_workload
from dcx.formats.batsim import codec as batsim_codec
from dcx.formats.osp_workload import codec as osp_codec
from tests.strategies import Domain, documents
from tests.strategies_traces import osp_workloads
from tests.test_batsim import batsim_workloads

FORMATS = {"batsim": batsim, "osp-workload": osp_workload}


def both_ways(workload: Workload) -> tuple[Document, Document] | None:
    """The workload as objects and as columns (its rows as the columns give them back), or
    ``None`` when it has a value no column holds."""
    columns = WorkloadColumns.from_jobs(tuple(workload.jobs))
    if columns is None:
        return None
    objects = replace(workload, jobs=columns.jobs())
    return Document(workload=objects), Document(workload=columnar(workload, columns))


def assert_same_both_ways(workload: Workload) -> None:
    pair = both_ways(workload)
    if pair is None:
        return
    objects, columns = pair
    assert columns_of(columns.workload) is not None
    assert columns_of(objects.workload) is None
    for module in FORMATS.values():
        assert module.normal_form_losses(columns) == module.normal_form_losses(objects)
        assert module.normal_form(columns) == module.normal_form(objects)
        assert conversion_losses(columns, module.FORMAT) == conversion_losses(
            objects, module.FORMAT)
        by_columns, by_objects = module.write(columns), module.write(objects)
        assert by_columns.diagnostics == by_objects.diagnostics
        assert by_columns.data == by_objects.data
    assert batsim.leaves_out(columns) == batsim.leaves_out(objects)


_finite = st.floats(min_value=-1e6, max_value=1e12, allow_nan=False, allow_infinity=False)
_seconds = st.one_of(_finite, st.integers(-10, 10**6).map(float),
                     st.sampled_from([0.0, -1.0, 0.5, 1e-7, 2.25, float("inf"), -float("inf"),
                                      1e300]))
_optional_seconds = st.none() | _seconds
_ids: st.SearchStrategy[Id] = st.one_of(
    st.integers(-3, 40), st.integers(2**31 - 3, 2**31 + 3), st.integers(-2**40, 2**40),
    st.sampled_from(["a", "b", "w0", "w1x", "x!y", "7", "", "é"]))


@st.composite
def hostile_workloads(draw: Any) -> Workload:
    """Workloads of values every normal form above has a rule for."""
    jobs = []
    ids: list[Id] = []
    for job_number in range(draw(st.integers(0, 6))):
        tasks = []
        for _ in range(draw(st.integers(0 if job_number else 1, 3))):
            task_id = draw(_ids)
            dependencies = tuple(draw(st.lists(
                st.sampled_from(ids) if ids else _ids, max_size=2))) if draw(
                    st.booleans()) else ()
            extras = draw(st.dictionaries(
                st.sampled_from(["x-note", "runtime", "user_id", "type", "swf:Status"]),
                st.one_of(st.integers(-5, 5), st.text(max_size=3), st.floats(
                    -10, 10, allow_nan=False)), max_size=2))
            tasks.append(Task(
                id=task_id, submit_time_s=draw(_seconds), runtime_s=draw(_optional_seconds),
                requested_time_s=draw(_optional_seconds),
                request=ResourceRequest(
                    nodes=draw(st.integers(-2, 4) | st.integers(2**31 - 2, 2**31 + 2)),
                    cores=draw(st.sampled_from([1.0, 2.0, 0.0, -1.0, 0.5, float("inf")])),
                    memory_mb=draw(st.none() | st.sampled_from([0.0, -1.0, 12.5, 2048.0]))),
                used_memory_mb=draw(st.none() | st.sampled_from(
                    [0.0, -1.0, 0.1, 12.5, 1e308, float("inf")])),
                dependencies=dependencies, extras=extras))
            ids.append(task_id)
        jobs.append(Job(id=draw(st.integers(0, 9) | st.sampled_from(["j", "k"])),
                        tasks=tuple(tasks), name=draw(st.none() | st.sampled_from(["n", "ü"]))))
    origin = draw(st.sampled_from([None, "2020-01-01T00:00:00", "2020-01-01T00:00:00+02:00",
                                   "0001-01-01T00:00:00", "soon"]))
    return Workload(jobs=tuple(jobs), time_origin=origin,
                    attributes=draw(st.dictionaries(st.sampled_from(["command", "nb_res"]),
                                                    st.integers(0, 3), max_size=1)))


_SETTINGS = settings(max_examples=150, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


_MOVED = Workload(jobs=(
    Job(id=0, tasks=(Task(id=0, request=ResourceRequest(nodes=0)),)), Job(id=0, tasks=()),
    Job(id=0, tasks=(Task(id=1, runtime_s=1.0, request=ResourceRequest(nodes=0),
                          dependencies=(0,)),))))
"""A task left out moves the next to a place where the original has no task: the first
dropped dependency is found by its id."""

_MOVED_REQUEST = Workload(jobs=(
    Job(id=0, tasks=(Task(id=0, request=ResourceRequest(nodes=0)),)), Job(id=0, tasks=()),
    Job(id=0, tasks=(Task(id=1, runtime_s=1.0, request=ResourceRequest(nodes=-1, cores=2.0)),
                     ))))
"""The same, the first dropped value in a request the normal form changes (which has no id:
its task's is the one looked for)."""

_SAME_JOB_IDS = Workload(jobs=(
    Job(id=0, tasks=(Task(id=0),)), Job(id=0, tasks=(Task(id=1),)), Job(id="k", tasks=()),
    Job(id="k", tasks=(), name="n")))
"""Every task left out, and two jobs of one id: the job whose name is dropped is itself."""


@_SETTINGS
@given(hostile_workloads())
@example(_MOVED)
@example(_MOVED_REQUEST)
@example(_SAME_JOB_IDS)
def test_hostile_values_give_the_same_bytes_and_losses_as_columns(workload: Workload) -> None:
    assert_same_both_ways(workload)


@_SETTINGS
@given(batsim_workloads())
def test_batsim_round_trip_workloads_give_the_same_bytes_and_losses_as_columns(
        workload: Workload) -> None:
    assert_same_both_ways(workload)


@_SETTINGS
@given(osp_workloads())
def test_osp_round_trip_workloads_give_the_same_bytes_and_losses_as_columns(
        workload: Workload) -> None:
    assert_same_both_ways(workload)


@_SETTINGS
@given(documents(Domain(whole_numbers=False)))
def test_any_workload_gives_the_same_bytes_and_losses_as_columns(document: Document) -> None:
    if document.workload is not None:
        assert_same_both_ways(document.workload)


@_SETTINGS
@given(hostile_workloads(), st.data())
def test_chunk_parts_are_the_same_as_columns(workload: Workload, data: st.DataObject) -> None:
    pair = both_ways(workload)
    if pair is None:
        return
    objects, columns = pair
    batsim_parts = [batsim_codec.write_part(batsim_codec.part_normal_form(document)[0])
                    for document in (objects, columns)]
    assert batsim_parts[0] == batsim_parts[1]
    origin = workload.time_origin
    normal = [osp_codec.part_normal_form(document, origin)[0] for document in pair]
    rows = len(tuple(workload.tasks()))
    outside = {row: [(0, "elsewhere"), (1, 3)] for row in data.draw(
        st.lists(st.integers(0, max(rows - 1, 0)), max_size=2)) if rows}
    parts = [osp_codec.write_part(document, outside) for document in normal]
    assert parts[0] == parts[1]


def test_a_columnar_normal_form_keeps_columns_and_is_made_once() -> None:
    """A conversion asks for the normal form three times (refusal, losses, writer): one
    computation, and the normal form of a columnar workload is columnar."""
    tasks = tuple(Task(id=number, submit_time_s=float(number), runtime_s=float(number % 3),
                       request=ResourceRequest(nodes=number % 4 - 1)) for number in range(1, 9))
    workload = Workload(jobs=tuple(Job(id=task.id, tasks=(task,)) for task in tasks))
    _, document = both_ways(workload) or pytest.fail("columns expected")
    for module in FORMATS.values():
        normal = module.normal_form(document)
        assert module.normal_form(document) is normal
        assert columns_of(normal.workload) is not None
    kept = columns_of(batsim.normal_form(document).workload)
    assert kept is not None and kept.ids.tolist() == [1, 2, 4, 5, 7, 8]  # runtime 0: left out
    assert kept.nodes.tolist() == [0, 1, 1, 0, 2, 1]  # -1 hosts: 1
    # (the tasks left out are the derived ``task`` loss, not lost runtimes)
    assert batsim.normal_form_losses(document) == {"task.request.nodes"}


# ------------------------------------------------------------------------------ reading Batsim


def read_job_by_job(data: bytes) -> Any:
    """``batsim.read`` without its columnar fast path."""
    with mock.patch.object(batsim_codec, "_plain_job_columns", lambda *_: None):
        return batsim.read(data)


def assert_same_read(data: bytes) -> None:
    fast, exact = batsim.read(data), read_job_by_job(data)
    assert fast.diagnostics == exact.diagnostics
    assert fast.document == exact.document
    if fast.document is not None and exact.document is not None:
        assert fast.document.workload == exact.document.workload
        assert columns_of(exact.document.workload) is None
        # a Batsim job gets whole hosts, on either path, and each request says so itself
        for task in exact.document.workload.tasks():
            assert task.request.__dict__["placement"] is Placement.NODES
        fast_columns = columns_of(fast.document.workload)
        if fast_columns is not None:
            assert set(placements_of(fast_columns).tolist()) <= {
                PLACEMENTS.index(Placement.NODES)}
        assert fast.locator is not None and exact.locator is not None
        for pointer in ("/workload", "/workload/jobs/0", "/workload/jobs/0/tasks/0"):
            assert fast.locator(pointer) == exact.locator(pointer)


@_SETTINGS
@given(hostile_workloads())
def test_reading_batsim_as_columns_gives_what_reading_job_by_job_gives(
        workload: Workload) -> None:
    for document in both_ways(workload) or (Document(workload=workload),):
        assert_same_read(batsim.write(document).data)


@_SETTINGS
@given(batsim_workloads())
def test_reading_batsim_round_trip_workloads_as_columns(workload: Workload) -> None:
    assert_same_read(batsim.write(Document(workload=workload)).data)


@pytest.mark.parametrize("jobs", [
    '{"id": 1, "subtime": 0, "res": 1, "profile": "delay10"}, '
    '{"id": 1, "subtime": 5, "res": 2, "profile": "delay10"}',  # the same id twice
    '{"id": 1, "subtime": 0, "walltime": -1, "res": 1, "profile": "delay10"}',
    '{"id": 1, "subtime": 0, "walltime": 0, "res": 1, "profile": "delay10"}',
    '{"id": 1.0, "subtime": 0, "res": 1, "profile": "delay10"}',
    '{"id": 1, "subtime": 0, "res": 1.0, "profile": "delay10"}',
    '{"id": 1, "subtime": 1e400, "res": 1, "profile": "delay10"}',
    '{"id": 1, "subtime": 0, "walltime": 1e400, "res": 1, "profile": "delay10"}',
    '{"id": 99999999999999999999999, "subtime": 0, "res": 1, "profile": "delay10"}',
    '{"id": 1, "subtime": 0, "res": 1, "profile": "nowhere"}',
    '{"id": 1, "subtime": 0, "res": 3, "profile": "par"}',
    '{"id": 1, "subtime": 0, "res": 1, "profile": "mine"}',
    '{"id": 1, "subtime": 0, "res": 1, "profile": "delay10", "extra_data": {"a": 1}}',
    '{"id": "w0!3", "subtime": 0, "res": 1, "profile": "delay10"}',
    '{"id": 1, "subtime": 0.5, "walltime": 7.25, "res": 0, "profile": "delay10"}',
    '',
])
def test_reading_batsim_as_columns_keeps_every_diagnostic(jobs: str) -> None:
    profiles = ('{"delay10": {"type": "delay", "delay": 10}, '
                '"mine": {"type": "delay", "delay": 10}, '
                '"par": {"type": "parallel", "cpu": [1, 1], "com": [0, 0, 0, 0]}}')
    assert_same_read(f'{{"nb_res": 4, "jobs": [{jobs}], "profiles": {profiles}}}'.encode())


# ------------------------------------------------------------------------------ reading osp


def read_task_by_task(data: bytes) -> Any:
    """``osp_workload.read`` without its columnar fast path."""
    with mock.patch.object(osp_codec, "_plain_columns", lambda *_: None):
        return osp_workload.read(data)


def assert_same_osp_read(data: bytes) -> None:
    fast, exact = osp_workload.read(data), read_task_by_task(data)
    assert fast.diagnostics == exact.diagnostics
    assert fast.document == exact.document
    if exact.document is not None:
        assert columns_of(exact.document.workload) is None


@_SETTINGS
@given(hostile_workloads())
def test_reading_osp_as_columns_gives_what_reading_task_by_task_gives(
        workload: Workload) -> None:
    for document in both_ways(workload) or (Document(workload=workload),):
        assert_same_osp_read(osp_workload.write(document).data)


@_SETTINGS
@given(osp_workloads())
def test_reading_osp_round_trip_workloads_as_columns(workload: Workload) -> None:
    assert_same_osp_read(osp_workload.write(Document(workload=workload)).data)


_TASK = '{"id": "a", "ts_submit": "2020-01-01T00:00:05"}'


@pytest.mark.parametrize("workflows", [
    f'{{"id": "1", "tasks": [{_TASK}, {{"id": "b", "ts_submit": "2020-01-01T00:00:05Z"}}]}}',
    f'{{"id": "1", "tasks": [{_TASK}, {_TASK}]}}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "x"}]}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "runtime": -1}]}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "core_count": 0}]}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "memory_usage": "5"}]}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "memory_usage": "5KiB"}]}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "depends_on": ["b"]}, '
    '{"id": "b", "ts_submit": "2020-01-01"}]}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "depends_on": ["a"]}]}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "depends_on": ["z"]}]}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "enables": ["b"]}, '
    '{"id": "b", "ts_submit": "2020-01-01"}]}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "x-note": [1, {"b": 2}]}]}',
    '{"tasks": [{"id": "a", "ts_submit": "2020-01-01"}]}',
    '{"id": "1", "ts_submit": "2020-01-01T00:01:00", "tasks": [{"id": "a"}]}',
    '{"id": "1", "tasks": [{"id": "a"}]}',
    '{"id": "1", "tasks": [{"ts_submit": "2020-01-01"}]}',
    '{"id": "1", "application_name": "n", "tasks": [{"id": "a", "ts_submit": '
    '"2020-01-01T00:00:00.25+02:00", "runtime": 2.5, "core_count": 4, "memory_usage": '
    '"1.5GB"}, {"id": "b", "ts_submit": "2020-01-01T00:00:00+02:00", "depends_on": ["a"]}]}, '
    '{"id": "2", "tasks": []}, {"id": "3"}',
    '{"id": "1", "tasks": [{"id": "a", "ts_submit": "2020-01-01", "runtime": 1e400}]}',
    '',
])
@pytest.mark.parametrize("date_start", ["", '"date_start": "2020-01-01T00:00:00", ',
                                        '"date_start": "2020-01-01T00:00:00+00:00", ',
                                        '"date_start": "later", '])
def test_reading_osp_as_columns_keeps_every_diagnostic(workflows: str, date_start: str) -> None:
    assert_same_osp_read(f'{{{date_start}"workflows": [{workflows}]}}'.encode())


# ------------------------------------------------------------------------------ once per document


def test_last_result_computes_once_per_object_and_keeps_nothing_after_it() -> None:
    import gc
    import weakref

    from dcx.core.memo import last_result

    class Result:
        pass

    calls: list[object] = []

    @last_result
    def normal(document: Document) -> Result:
        calls.append(document)
        return Result()

    first, second = Document(), Document()
    kept = normal(first)
    assert normal(first) is kept and calls == [first]
    assert normal(second) is not kept and normal(first) is not kept  # one entry, the last
    assert len(calls) == 3
    gone = weakref.ref(normal(second))
    del second, calls[:]
    gc.collect()
    assert gone() is None  # the result went with its document


def test_last_result_gives_each_thread_its_own_arguments_result() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from dcx.core.memo import last_result

    @last_result
    def echo(document: Document) -> Document:
        return document

    documents = [Document(extras={"n": number}) for number in range(200)]
    with ThreadPoolExecutor(8) as pool:
        for _ in range(20):
            assert all(got is sent for got, sent in zip(
                pool.map(echo, documents), documents, strict=True))
