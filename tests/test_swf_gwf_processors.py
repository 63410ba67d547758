"""SWF and GWF both record the requested processor count (SWF field 8, GWF ReqNProcs) and an
unknown allocated count (SWF field 5, GWF NProcs, -1), which each reader keeps under its
own extras key where it says something: a conversion between the two carries them
(``core.counterparts``), on the task-by-task and the column-by-column paths, and reports
no loss for them."""

from __future__ import annotations

import pytest

from dcx.converters.convert import convert
from dcx.converters.losses import conversion_losses
from dcx.core.columns import columns_of
from dcx.core.model import Document, Job, Placement, ResourceRequest, Task, Workload
from dcx.formats import gwf, swf
from tests.test_json_targets_columns import both_ways

SWF_TEXT = ("1 0 5 100 8 -1 -1 16 600 -1 1 1 1 -1 1 -1 -1 -1\n"
            "2 10 -1 -1 -1 -1 -1 4 600 -1 5 1 1 -1 1 -1 -1 -1\n"
            "3 20 0 50 2 -1 -1 2 600 -1 1 1 1 -1 1 -1 -1 -1\n")
GWF_TEXT = ("WorkflowID, JobID, SubmitTime, RunTime, NProcs, ReqNProcs, Dependencies\n"
            "0, 1, 0, 100, 8, 16, \n"
            "0, 2, 10, -1, -1, 4, \n"
            "0, 3, 20, 50, 2, 2, \n")


def _processors(document: Document | None, module: object) -> list[tuple[object, ...]]:
    assert document is not None and document.workload is not None
    keys = ("swf:AllocatedProcessors", "swf:RequestedProcessors") if module is swf else (
        "gwf:NProcs", "gwf:ReqNProcs")
    return [(task.request.nodes * task.request.cores,
             *(task.extras.get(key) for key in keys)) for task in document.workload.tasks()]


@pytest.mark.parametrize(("text", "source", "target"), [
    (SWF_TEXT, "swf", "gwf"), (GWF_TEXT, "gwf", "swf")])
def test_processor_counts_go_there_and_back(text: str, source: str, target: str) -> None:
    there = convert(text.encode(), target, f"x.{source}")
    assert there.ok
    assert not [loss for loss in there.losses if loss.field == "task.extras"]
    back = convert(there.data, source, f"x.{target}")
    assert back.ok
    module = swf if source == "swf" else gwf
    given = module.read(text.encode()).document
    assert _processors(back.output_document, module) == _processors(given, module)
    assert _processors(given, module) == [(8, None, 16), (4, -1, None), (2, None, None)]


def test_the_other_formats_keys_move_on_both_paths() -> None:
    tasks = (Task(id=1, runtime_s=10.0, request=ResourceRequest(
                 nodes=8, placement=Placement.CORES), extras={"gwf:ReqNProcs": 16}),
             Task(id=2, submit_time_s=1.0, runtime_s=10.0, request=ResourceRequest(
                 nodes=4, placement=Placement.CORES), extras={"gwf:NProcs": -1}))
    workload = Workload(jobs=tuple(Job(id=task.id, tasks=(task,)) for task in tasks))
    pair = both_ways(workload)
    assert pair is not None
    objects, columns = pair
    assert columns_of(columns.workload) is not None
    for document in pair:
        assert conversion_losses(document, swf.FORMAT) == ()
        normal = swf.normal_form(document)
        assert normal.workload is not None
        assert [task.extras for task in normal.workload.tasks()] == [
            {"swf:RequestedProcessors": 16}, {"swf:AllocatedProcessors": -1}]
    assert swf.write(objects).data == swf.write(columns).data


def test_a_columnar_trace_writes_the_requested_count_the_rows_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 processors allocated, 1 requested: GWF keeps ReqNProcs where it differs from the
    # task's total cores (4), also when the columns still hold 4 nodes of 1 core
    line = b"6 0 -1 60 4 -1 -1 1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
    read = swf.read(line).document
    assert read is not None
    by_rows = gwf.write(read).data
    from dcx.formats.swf import codec as swf_codec

    monkeypatch.setattr(swf_codec, "FAST_READ_BYTES", 0)
    document = swf.read(line).document
    assert document is not None and columns_of(document.workload) is not None
    assert gwf.write(document).data == by_rows
    assert by_rows.splitlines()[-1].split()[7] == b"1"
