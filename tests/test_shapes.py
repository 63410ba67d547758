"""A request's total cores and memory survive formats that count processors one way only."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.model import Document, Job, Placement, ResourceRequest, Task, Workload
from dcx.core.shapes import (
    one_node,
    one_node_columns,
    single_core_node_columns,
    single_core_nodes,
    whole_count,
    whole_counts,
)
from dcx.formats import gwf, opendc_workload, swf

requests = st.tuples(st.integers(0, 4096),
                     st.floats(0, 512, allow_nan=False) | st.sampled_from([1.0, 0.5, 2.0]),
                     st.none() | st.floats(0, 1e7, allow_nan=False))


@settings(max_examples=300)
@given(st.lists(requests, min_size=1, max_size=20))
def test_columns_give_the_numbers_of_one_request_float_for_float(rows: list[
        tuple[int, float, float | None]]) -> None:
    nodes = np.array([row[0] for row in rows], dtype=np.int64)
    cores = np.array([row[1] for row in rows], dtype=np.float64)
    memory = np.array([math.nan if row[2] is None else row[2] for row in rows])
    processors, per_processor = single_core_node_columns(nodes, cores, memory)
    total, per_node = one_node_columns(nodes, cores, memory)
    for index, (count, per_node_cores, memory_mb) in enumerate(rows):
        assert (processors[index], _nan(per_processor[index])) == single_core_nodes(
            count, per_node_cores, memory_mb)
        assert (total[index], _nan(per_node[index])) == one_node(count, per_node_cores,
                                                                 memory_mb)
    assert whole_counts(nodes * cores).tolist() == [whole_count(count * per_node_cores)
                                                    for count, per_node_cores, _ in rows]


def _nan(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def test_a_job_keeps_its_total_cores_and_memory_through_swf_and_gwf() -> None:
    """2 nodes of 4 cores and 1 GB each: 8 SWF processors of 256 MB, one 8-core GWF node
    of 2 GB, and back; one 8-core OpenDC task of 2 GB."""
    task = Task(id=1, submit_time_s=0.0, runtime_s=60.0, requested_time_s=120.0,
                request=ResourceRequest(nodes=2, cores=4.0, memory_mb=1024.0))
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(task,)),)))
    as_swf = _through(swf, document)
    assert _request(as_swf) == ResourceRequest(nodes=8, cores=1.0, memory_mb=256.0,
                                               placement=Placement.CORES)
    as_gwf = _through(gwf, as_swf)
    assert _request(as_gwf) == ResourceRequest(nodes=1, cores=8.0, memory_mb=2048.0,
                                               placement=Placement.CORES)
    assert _request(_through(swf, as_gwf)) == ResourceRequest(nodes=8, cores=1.0,
                                                              memory_mb=256.0,
                                                              placement=Placement.CORES)
    assert _request(_through(opendc_workload, document)) == ResourceRequest(
        nodes=1, cores=8.0, memory_mb=2048.0)


def _through(module: Any, document: Document) -> Document:
    """``document`` written by ``module`` and read back."""
    read = module.read(module.write(document).data).document
    assert read is not None and read.workload is not None
    return read


def _request(document: Document) -> ResourceRequest:
    assert document.workload is not None
    (task,) = document.workload.tasks()
    return task.request


def test_cores_anywhere_re_split_by_a_writer_is_no_loss() -> None:
    """A request for cores anywhere means its total cores and memory only: SWF's processors
    and GWF's keep both, so how the writer splits them is nothing lost."""
    from dcx.converters.losses import conversion_losses

    tasks = (Task(id=1, request=ResourceRequest(nodes=1, cores=1.0, placement=Placement.CORES)),
             Task(id=2, request=ResourceRequest(nodes=1, cores=16.0, memory_mb=64.0,
                                                placement=Placement.CORES)))
    document = Document(workload=Workload(jobs=tuple(Job(id=t.id, tasks=(t,)) for t in tasks)))
    assert conversion_losses(document, swf.FORMAT) == ()
    back = _through(swf, document)
    assert back.workload is not None
    assert [(task.request.total_cores, task.request.memory_mb and
             task.request.memory_mb * task.request.nodes)
            for task in back.workload.tasks()] == [(1.0, None), (16.0, 64.0)]
    many = Document(workload=Workload(jobs=(Job(id=1, tasks=(Task(
        id=1, request=ResourceRequest(nodes=64, placement=Placement.CORES)),)),)))
    assert conversion_losses(many, gwf.FORMAT) == ()


def test_whole_nodes_written_as_processors_are_one_placement_loss_counted_per_task() -> None:
    """Whole nodes become SWF's cores anywhere: a value restriction, counted per task it
    changes; SWF's cores anywhere become whole nodes in OpenDC (which has no other)."""
    from dcx.converters.losses import conversion_losses

    tasks = (Task(id=1, request=ResourceRequest(nodes=2)),
             Task(id=2, request=ResourceRequest(nodes=4, placement=Placement.CORES)),
             Task(id=3, request=ResourceRequest(nodes=1)))
    document = Document(workload=Workload(jobs=tuple(Job(id=t.id, tasks=(t,)) for t in tasks)))
    lost = {loss.field: loss for loss in conversion_losses(document, swf.FORMAT)}
    assert (lost["task.request.placement"].count,
            lost["task.request.placement"].first) == (2, "/workload/jobs/0/tasks/0")
    read = _through(swf, document)
    assert read.workload is not None
    assert {task.request.placement for task in read.workload.tasks()} == {Placement.CORES}
    lost = {loss.field: loss for loss in conversion_losses(read, opendc_workload.FORMAT)}
    assert lost["task.request.placement"].count == 3
