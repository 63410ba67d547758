"""Workloads held as columns: the row view gives back the jobs they were built from, and the
loss derivation computed column by column gives exactly what the walk over the objects gives."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.converters.registry import FORMATS
from dcx.core.columns import JobRows, WorkloadColumns, columns_of
from dcx.core.fields import FIELDS
from dcx.core.model import Document, Job, ResourceRequest, StartMode, Task, Workload
from dcx.core.restrict import dropped_field_counts, restrict
from dcx.formats import swf
from dcx.formats.swf import codec as swf_codec
from tests.strategies import Domain, workloads

NUMERIC_EXTRAS = st.builds(
    lambda numbers, texts, values: {**numbers, **texts, **values},
    st.dictionaries(
        st.sampled_from(["swf:Status", "swf:WaitTime", "gwf:NProcs", "plain", "haizea:x"]),
        st.one_of(st.integers(-5, 10**6), st.floats(0, 1e6, allow_nan=False)), max_size=3),
    st.dictionaries(st.sampled_from(["note", "gwf:JobStructure", "swf:Queue"]),
                    st.sampled_from(["", "UNITARY", "BoT 2"]), max_size=2),
    st.dictionaries(st.sampled_from(["wfformat:task", "mixed"]),
                    st.sampled_from([{"a": [1, "x"]}, [], "text", 3, None]), max_size=2))
"""Numeric, text and other JSON extras (a key of several kinds is held as JSON texts)."""


def columnar_friendly(workload: Workload, extras: list[dict[str, float]]) -> Workload:
    """``workload`` without what columns do not hold (resources, start modes, images,
    preemption, job extras, non-numeric task extras)."""
    tasks_seen = 0
    jobs = []
    for job in workload.jobs:
        tasks = []
        for task in job.tasks:
            tasks.append(replace(
                task, request=replace(task.request, resources=()), start_mode=StartMode.ANY,
                start_time_s=None, preemptible=None, image=None, image_size_mb=None,
                extras=extras[tasks_seen % len(extras)] if extras else {}))
            tasks_seen += 1
        jobs.append(replace(job, tasks=tuple(tasks), extras={}))
    return replace(workload, jobs=tuple(jobs))


def as_columns(workload: Workload) -> Workload:
    columns = WorkloadColumns.from_jobs(workload.jobs)
    assert columns is not None
    return replace(workload, jobs=JobRows(columns))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(Domain(ids="str")), st.lists(NUMERIC_EXTRAS, max_size=4))
def test_rows_are_the_jobs_the_columns_were_built_from(workload, extras):
    workload = columnar_friendly(workload, extras)
    columnar = as_columns(workload)
    assert tuple(columnar.jobs) == workload.jobs
    assert columnar == workload and workload == columnar
    assert len(columnar.jobs) == len(workload.jobs)
    for index in range(len(workload.jobs)):
        assert columnar.jobs[index] == workload.jobs[index]
    assert as_columns(workload) == columnar  # compared column by column


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(Domain(ids="str")), st.lists(NUMERIC_EXTRAS, max_size=4),
       st.sets(st.sampled_from(sorted(FIELDS))), st.sampled_from([None, "swf", "gwf"]))
def test_column_losses_are_the_object_walks(workload, extras, holds, own_prefix):
    workload = columnar_friendly(workload, extras)
    objects = Document(workload=workload)
    columnar = Document(workload=as_columns(workload))
    assert dropped_field_counts(columnar, holds, own_prefix) == dropped_field_counts(
        objects, holds, own_prefix)
    for target in FORMATS:
        assert dropped_field_counts(columnar, target.holds, target.name, target) == \
            dropped_field_counts(objects, target.holds, target.name, target), target.name


def test_column_losses_of_an_swf_read_are_the_object_walks():
    lines = ["; MaxProcs: 8"] + [
        f"{n} {n * 10} 3 {n} {n % 3} 2.5 -1 {1 + n % 2} 60 1024 1 {n % 4} 2 -1 1 -1 "
        f"{n - 1 if n % 2 == 0 else -1} -1" for n in range(1, 40)]
    data = ("\n".join(lines) + "\n").encode()
    fast = swf.read_fast(data)
    assert fast is not None and fast.document is not None
    assert columns_of(fast.document.workload) is not None
    objects = replace(fast.document, workload=replace(
        fast.document.workload, jobs=tuple(fast.document.workload.jobs)))
    for target in FORMATS:
        assert dropped_field_counts(fast.document, target.holds, target.name, target) == \
            dropped_field_counts(objects, target.holds, target.name, target), target.name


def test_a_task_the_columns_cannot_hold_keeps_the_workload_as_objects():
    resources = Task(id=1, request=ResourceRequest(gpus=1), start_mode=StartMode.NOW)
    assert WorkloadColumns.from_jobs((Job(id=1, tasks=(resources,)),)) is None
    mixed = (Task(id=1, extras={"note": "text"}), Task(id=2, extras={"note": 2}))
    assert WorkloadColumns.from_jobs((Job(id=1, tasks=mixed),)) is not None  # JSON texts
    tupled = Task(id=1, extras={"note": (1, 2)})
    assert WorkloadColumns.from_jobs((Job(id=1, tasks=(tupled,)),)) is None
    nan = Task(id=1, runtime_s=float("nan"))
    assert WorkloadColumns.from_jobs((Job(id=1, tasks=(nan,)),)) is None


def test_columns_hold_what_requests_ask_of_machines():
    tasks = (Task(id=1, request=ResourceRequest(os="linux", features=("ssd", "ib"))),
             Task(id=2), Task(id=3, request=ResourceRequest(arch="aarch64",
                                                            features=("ssd",))))
    columns = WorkloadColumns.from_jobs((Job(id=1, tasks=tasks),))
    assert columns is not None
    assert columns.os is not None and columns.arch is not None
    assert columns.feature_offsets is not None and columns.feature_offsets.tolist() == [0, 2, 2, 3]
    assert columns.jobs()[0].tasks == tasks
    plain = WorkloadColumns.from_jobs((Job(id=1, tasks=(Task(id=1),)),))
    assert plain is not None and (plain.os, plain.arch, plain.feature_names) == (None,) * 3
    # an absent column and one of unknowns are the same requests
    other = WorkloadColumns.from_jobs((Job(id=1, tasks=tasks[1:2]),))
    unknowns = WorkloadColumns.from_jobs((Job(id=1, tasks=(Task(id=2),)),))
    assert other is not None and unknowns is not None and other.same_as(unknowns) is True
    no_features = WorkloadColumns.from_jobs((Job(id=1, tasks=(
        tasks[0], tasks[1], Task(id=3, request=ResourceRequest(arch="aarch64")))),))
    assert no_features is not None and columns.same_as(no_features) is False


def test_job_rows_index_like_a_tuple():
    jobs = (Job(id=1, tasks=(Task(id=1),)), Job(id="b", tasks=()),
            Job(id=3, tasks=(Task(id=2, dependencies=(1,)), Task(id=3))))
    rows = as_columns(Workload(jobs=jobs)).jobs
    assert rows[-1] == jobs[-1] and rows[0:2] == jobs[0:2] and bool(rows)
    with pytest.raises(IndexError):
        rows[3]
    assert list(rows) == list(jobs)
    assert rows != jobs[:2]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(Domain(ids="str")), st.lists(NUMERIC_EXTRAS, max_size=4),
       st.booleans())
def test_writers_write_columns_as_they_write_objects(workload, extras, integer_ids):
    """SWF's and Parquet's column paths (normal form and writer) against their task-by-task
    paths: the same bytes and the same losses."""
    from dcx.formats import parquet

    workload = columnar_friendly(workload, extras)
    if integer_ids:
        workload = restrict(Document(workload=workload), set(FIELDS) - {"task.id"}).workload
    objects = Document(workload=workload)
    columnar = Document(workload=as_columns(workload))
    for module in (swf, parquet):
        assert module.normal_form_losses(columnar) == module.normal_form_losses(objects)
        assert module.write(columnar) == module.write(objects), module.__name__


def test_an_swf_read_writes_back_the_same_bytes_from_its_columns():
    lines = ["; MaxProcs: 8", "; UnixStartTime: 86400"] + [
        f"{n} {n * 10} 3 {n}.5 {n % 3} 2.5 -1 {1 + n % 2} 60 1024 1 {n % 4} 2 -1 1 -1 "
        f"{n - 1 if n % 2 == 0 else -1} -1" for n in range(1, 40)]
    data = ("\n".join(lines) + "\n").encode()
    fast = swf.read_fast(data)
    assert fast is not None and columns_of(fast.document.workload) is not None
    objects = swf_codec._read(data).document
    assert swf.write(fast.document).data == swf.write(objects).data
