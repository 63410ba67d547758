"""GWF's columnar writer (``dcx.formats.gwf.columnar``) against the row writer
(``codec.write_rows``): for any workload held as columns, ``write`` gives the row writer's
bytes; it answers itself (no row is built) for the workloads GWF files and the trace
strategies read back as, and hands the rest to the row writer."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.columns import WorkloadColumns, columnar
from dcx.core.model import Document, Job, Placement, ResourceRequest, Task, Workload
from dcx.formats import gwf
from dcx.formats.gwf import codec
from dcx.formats.gwf.columnar import normal_variant, written_columns
from tests.strategies import workloads
from tests.strategies_traces import archive_workloads, swf_workloads, workflow_workloads
from tests.test_gwf_fast import archive_text, workflow_text


def same_bytes(workload: Workload) -> bool | None:
    """Whether the columnar path answered (``None``: the workload is not columnar), after
    checking that ``write`` gives the row writer's bytes on the same workload as objects,
    and that the normal form (checked column by column when it changes nothing) is the
    one built task by task."""
    columns = WorkloadColumns.from_jobs(workload.jobs)
    if columns is None:
        return None
    as_columns = Document(workload=columnar(workload, columns))
    as_objects = Document(workload=workload)
    expected = codec.write_rows(as_objects).data
    assert codec.write(as_columns).data == expected
    assert codec.write_rows(as_columns).data == expected
    normal, lost, variant = codec._normalized(as_columns)
    normal_objects, lost_objects, variant_objects = codec._normalized(as_objects)
    assert (lost, variant) == (lost_objects, variant_objects)
    assert normal.workload is not None and normal_objects.workload is not None
    assert tuple(normal.workload.jobs) == tuple(normal_objects.workload.jobs)
    assert normal == replace(normal_objects, workload=replace(
        normal_objects.workload, jobs=normal.workload.jobs))
    if normal_variant(columns) is not None \
            and columns.with_placement(Placement.CORES) is columns:
        assert as_columns.workload is not None
        assert normal.workload.jobs is as_columns.workload.jobs  # no task was built
    return written_columns(columns) is not None


@settings(max_examples=200, deadline=None)
@given(workload=st.one_of(workflow_workloads(), archive_workloads()))
def test_workloads_gwf_holds_are_written_a_column_at_a_time(workload):
    assert same_bytes(workload) is True
    columns = WorkloadColumns.from_jobs(workload.jobs)
    assert columns is not None
    assert normal_variant(columns) == codec.variant_of(workload)  # already in normal form


@settings(max_examples=150, deadline=None)
@given(workload=st.one_of(swf_workloads(), workloads()))
def test_other_formats_workloads_give_the_row_writers_bytes(workload):
    same_bytes(workload)


numbers = st.one_of(st.integers(-3, 10**6), st.floats(allow_nan=False, width=64),
                    st.sampled_from((0.5, 1.5, 1e16, 2.0**53, 1e308, -1.0, -0.0)))
extra_values = st.one_of(st.integers(-2, 10**17), st.sampled_from(
    (1.5, 1e16, 2.5e20, -1.0, float("inf"), "007", "a b", "-1", "x", "", 3)))
extra_keys = st.sampled_from(("gwf:NProcs", "gwf:ReqNProcs", "gwf:WaitTime", "gwf:Status",
                              "gwf:VOID", "gwf:JobStructure", "gwf:RunTime", "gwf:Other",
                              "swf:Status", "plain"))


@st.composite
def awkward_workloads(draw: st.DrawFn) -> Workload:
    """Values the normal form changes: fractional, negative and huge numbers, users that
    are not numbers, extras of every kind, repeated or text ids, dependencies outside."""
    count = draw(st.integers(0, 12))
    ids: list[Any] = draw(st.lists(st.integers(-1, 30), min_size=count, max_size=count))
    if draw(st.integers(0, 3)):
        ids = list(range(1, count + 1))
    key_set = draw(st.lists(extra_keys, unique=True, max_size=4))
    tasks = []
    for position, task_id in enumerate(ids):
        extras = {key: draw(extra_values) for key in key_set if draw(st.booleans())}
        cores = draw(st.one_of(st.integers(1, 64).map(float), st.floats(0.1, 1e20)))
        tasks.append(Task(
            id=task_id,
            submit_time_s=draw(numbers.map(float)),
            runtime_s=draw(st.none() | numbers.map(float)),
            requested_time_s=draw(st.none() | numbers.map(float)),
            request=ResourceRequest(cores=cores,
                                    memory_mb=draw(st.none() | numbers.map(float))),
            user=draw(st.none() | st.sampled_from(("7", "007", "u1", "0", "123"))),
            group=draw(st.none() | st.sampled_from(("1", "g", "00"))),
            dependencies=tuple(draw(st.lists(st.sampled_from(
                [*ids[:position], 99] if draw(st.integers(0, 7)) == 0 else ids[:position]),
                unique=True, max_size=2))) if position else (),
            extras=extras))
    jobs: list[Job] = []
    position = 0
    while position < len(tasks):
        size = draw(st.integers(1, 3))
        job_id = draw(st.sampled_from((len(jobs), tasks[position].id, 7)))
        jobs.append(Job(id=job_id, tasks=tuple(tasks[position:position + size])))
        position += size
    if draw(st.booleans()):
        jobs.append(Job(id=draw(st.integers(0, 40)), tasks=()))
    return Workload(jobs=tuple(jobs))


@settings(max_examples=400, deadline=None)
@given(workload=awkward_workloads())
def test_awkward_workloads_give_the_row_writers_bytes(workload):
    same_bytes(workload)


def test_files_read_as_columns_are_written_as_columns():
    original = codec.FAST_READ_BYTES
    codec.FAST_READ_BYTES = 0
    try:
        for data in (workflow_text(2, 300).encode(), archive_text(2, 300).encode()):
            read = gwf.read(data)
            columns = read.document.workload.jobs.columns
            assert normal_variant(columns) is not None
            written = written_columns(columns)
            assert written is not None
            assert written == codec.write_rows(read.document).data
    finally:
        codec.FAST_READ_BYTES = original


def test_an_empty_columnar_workload_writes_the_header_alone():
    workload = Workload(jobs=(Job(id=1, tasks=()),))
    assert same_bytes(workload) in (True, None)
