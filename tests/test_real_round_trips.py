"""Round trips on real files: SWF -> GWF -> SWF, GWF -> SWF -> GWF, SWF -> Haizea LWF -> SWF
and WfFormat -> osp-workload -> WfFormat keep every field both formats hold, value for value;
Batsim -> SWF -> Batsim keeps every job it can run, with its walltime and hosts, and names the
ones it leaves out. On the examples and on the shared corpus (``upstream/``, skipped when it
is absent). No loss line of any pair leaves a workload field unnamed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dcx.converters.losses import conversion_losses
from dcx.core.model import Document, TaskStatus
from dcx.core.restrict import LEFT_OUT, restrict, without_empty_parts
from dcx.formats import batsim, gwf, haizea, osp_workload, swf, wfformat
from dcx.formats.swf import codec as swf_codec
from tests.test_losses import expected_back

REPO = Path(__file__).resolve().parent.parent


LEASE_TRACE_BYTES = 100_000
"""The largest SWF file the SWF -> LWF -> SWF round trip reads."""


def _files(corpus: Path | None, folder: str, suffix: str) -> list[Path]:
    found = sorted((REPO / "examples" / folder).glob(f"*{suffix}"))
    if corpus is not None:
        found += sorted((corpus / "upstream" / folder).glob(f"*{suffix}"))
    return found


def _read(module: Any, data: bytes) -> Document | None:
    result = module.read(data)
    return result.document if result.ok else None


def _through(module: Any, document: Document) -> Document:
    back = _read(module, module.write(document).data)
    assert back is not None
    return back


@pytest.fixture(scope="module")
def corpus() -> Path | None:
    from tests.conftest import CORPUS

    return CORPUS if CORPUS.is_dir() else None


@pytest.mark.parametrize(("source", "target", "folder", "suffix"), [
    (swf, gwf, "swf", ".swf"), (gwf, swf, "gwf", ".gwf"),
    (swf, haizea, "swf", ".swf"),
    (wfformat, osp_workload, "wfformat", ".json")],
    ids=["swf-gwf-swf", "gwf-swf-gwf", "swf-lwf-swf", "wfformat-osp-wfformat"])
def test_traces_keep_what_both_formats_hold_value_for_value(
        corpus: Path | None, source: Any, target: Any, folder: str, suffix: str) -> None:
    files = _files(corpus, folder, suffix)
    assert files
    if target is haizea:
        # A lease is an XML element per job: the large traces add minutes, not cases.
        files = [path for path in files if path.stat().st_size <= LEASE_TRACE_BYTES]
    for path in files:
        original = _read(source, path.read_bytes())
        if original is None:
            continue  # (a file dcx rejects has its own tests)
        back = _through(source, _through(target, original))
        expected = expected_back(original, source.FORMAT, target.FORMAT)
        assert without_empty_parts(back, source.HOLDS) == without_empty_parts(
            expected, source.HOLDS), path.name
        shared = source.HOLDS & target.HOLDS
        assert restrict(back, shared) == restrict(original, shared) or restrict(
            back, shared) == restrict(expected, shared), path.name


def test_wfformat_through_osp_workload_keeps_the_graph_runtimes_and_cores(
        corpus: Path | None) -> None:
    """WfFormat -> osp-workload -> WfFormat: every task with its parents, runtime and cores,
    on the example and the published WfInstances (corpus)."""
    files = _files(corpus, "wfformat", ".json")
    assert files
    for path in files:
        original = _read(wfformat, path.read_bytes())
        if original is None or original.workload is None:
            continue
        back = _through(wfformat, _through(osp_workload, original))
        assert back.workload is not None

        def graph(document: Document) -> list[tuple[Any, ...]]:
            assert document.workload is not None
            return [(task.id, task.dependencies, task.runtime_s, task.request.cores)
                    for task in document.workload.tasks()]

        assert graph(back) == graph(original), path.name


def test_batsim_through_swf_keeps_every_job_it_can_run(corpus: Path | None) -> None:
    files = _files(corpus, "batsim", ".json")
    assert files
    for path in files:
        original = _read(batsim, path.read_bytes())
        if original is None or original.workload is None:
            continue
        as_swf = _through(swf, original)
        back = _through(batsim, as_swf)
        given = list(original.workload.tasks())
        kept = list(back.workload.tasks()) if back.workload is not None else []
        lost = {loss.field: loss for loss in conversion_losses(as_swf, batsim.FORMAT)}
        left = lost[LEFT_OUT].count if LEFT_OUT in lost else 0
        assert len(kept) + (left or 0) == len(given), path.name
        by_id = {str(task.id): task for task in given}  # (SWF reads "7" back as 7)
        renumbered = "task.id" in {loss.field for loss in conversion_losses(original,
                                                                            swf.FORMAT)}
        written = [given[index] for index in swf_codec._submit_order(given)]
        for task in kept:
            # ids SWF cannot write are numbered 1, 2, … in written (submit-time) order (a
            # task.id loss); its times are whole seconds (requested time rounded up)
            before = written[int(task.id) - 1] if renumbered else by_id[str(task.id)]
            assert (task.requested_time_s, task.request.nodes, task.runtime_s,
                    task.submit_time_s) == (
                swf_codec._whole_requested_time(before.requested_time_s),
                before.request.nodes, swf_codec._whole_runtime(before.runtime_s),
                swf_codec._whole_submit(before.submit_time_s)), path.name


_RECORDED = ("status", "wait_time_s", "used_memory_mb", "cpu_time_s", "application", "queue",
             "partition")
"""The recorded fields SWF and GWF (archive) both define."""


def _recorded(document: Document) -> list[tuple[Any, ...]]:
    assert document.workload is not None
    return [(task.id, *(getattr(task, name) for name in _RECORDED))
            for task in document.workload.tasks()]


@pytest.mark.parametrize(("source", "target", "path"), [
    (swf, gwf, "examples/swf/small-cluster.swf"), (gwf, swf, "examples/gwf/grid-archive.gwf")],
    ids=["swf-gwf-swf", "gwf-swf-gwf"])
def test_recorded_fields_go_across_value_for_value(source: Any, target: Any, path: str) -> None:
    """Status (failed and cancelled jobs too), wait time, used memory, CPU time, executable,
    queue and partition: in the model after the first read, the same after both ways."""
    original = _read(source, (REPO / path).read_bytes())
    assert original is not None
    recorded = _recorded(original)
    statuses = {row[1] for row in recorded}
    assert {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED} <= statuses
    assert any(row[2] is not None for row in recorded)  # wait times
    across = _through(target, original)
    assert _recorded(across) == recorded
    assert _recorded(_through(source, across)) == recorded


SWF_FOR_LWF = """\
1 0 12 100 2 95.5 -1 2 600 2048 1 3 4 7 2 -1 -1 -1
2 30 -1 0 1 -1 -1 1 60 1024 0 3 -1 -1 1 -1 -1 -1
3 45 0 20 4 2.25 -1 4 100 1024 1 5 4 8 -1 -1 -1 -1
"""


def test_swf_through_haizea_keeps_what_swf2lwf_carries() -> None:
    """SWF -> LWF -> SWF: the job number, submit, requested time, user and the columns
    haizea-swf2lwf writes as SWF_* attrs (wait, average CPU time, group, queue, executable)
    come back value for value; the LWF carries them as those attrs."""
    original = _read(swf, SWF_FOR_LWF.encode())
    assert original is not None and original.workload is not None
    lwf = haizea.write(original).data
    assert b'<attr name="SWF_waittime" value="12"/>' in lwf
    assert b'<attr name="SWF_execnumber" value="7"/>' in lwf
    back = _through(swf, _through(haizea, original))
    assert back.workload is not None
    fields = ("id", "submit_time_s", "requested_time_s", "user", "group", "wait_time_s",
              "cpu_time_s", "queue", "application")
    assert [[getattr(task, name) for name in fields] for task in back.workload.tasks()] == [
        [getattr(task, name) for name in fields] for task in original.workload.tasks()]
    lost = {loss.field for loss in conversion_losses(original, haizea.FORMAT)}
    assert not lost & {"task.group", "task.wait_time_s", "task.cpu_time_s", "task.queue",
                       "task.application"}
    assert "task.status" in lost  # (an LWF has no status)


def test_haizeas_own_swf_traces_go_through_an_lwf_and_back(corpus: Path | None) -> None:
    """The SWF traces haizea-swf2lwf was run on (corpus/haizea/traces): every job's
    recorded wait, CPU time, group, queue and executable, as SWF_* attrs, and back."""
    if corpus is None:
        pytest.skip("no corpus (DCX_CORPUS)")
    files = sorted((corpus / "haizea" / "traces").rglob("*.swf"))
    assert files
    fields = ("id", "submit_time_s", "user", "group", "wait_time_s", "cpu_time_s", "queue",
              "application")
    kept = 0
    for path in files:
        original = _read(swf, path.read_bytes())
        if original is None or original.workload is None:
            continue  # (test_cancel.swf repeats job number 0: dcx refuses it)
        kept += 1
        back = _through(swf, _through(haizea, original))
        assert back.workload is not None
        assert [[getattr(task, name) for name in fields] for task in back.workload.tasks()] \
            == [[getattr(task, name) for name in fields]
                for task in original.workload.tasks()], path.name
    assert kept


def test_preceding_job_and_think_time_stay_through_swf() -> None:
    original = _read(swf, (REPO / "examples/swf/small-cluster.swf").read_bytes())
    assert original is not None and original.workload is not None
    third = list(original.workload.tasks())[2]
    assert (third.dependencies, third.think_time_s) == ((2,), 80.0)
    back = _through(swf, original)
    assert back.workload is not None and list(back.workload.tasks())[2] == third


def test_batsim_through_swf_keeps_the_machine_size(corpus: Path | None) -> None:
    """``nb_res`` goes to SWF's MaxProcs header and back, where it is not the most hosts a
    job asks for; every job and its walltime and hosts come back."""
    # a platform larger than any job, which no example needs to have (the corpus does)
    own = json.dumps({"nb_res": 32, "jobs": [
        {"id": "1", "subtime": 0, "walltime": 100, "res": 4, "profile": "d"},
        {"id": "2", "subtime": 5, "walltime": 60, "res": 16, "profile": "d"}],
        "profiles": {"d": {"type": "delay", "delay": 50}}}).encode()
    inputs = [(path.name, path.read_bytes()) for path in _files(corpus, "batsim", ".json")]
    sizes = 0
    for name, data in [*inputs, ("own.json", own)]:
        original = _read(batsim, data)
        if original is None or original.workload is None:
            continue
        back = _through(batsim, _through(swf, original))
        kept = {task.id: task for task in back.workload.tasks()} if back.workload else {}
        given = json.loads(data)
        if len(kept) == len(given["jobs"]) or given["nb_res"] != max(
                [1, *(job["res"] for job in given["jobs"])]):
            # (a job left out, named by a loss line, may have been the one that made
            # nb_res, which the file then did not say otherwise)
            assert json.loads(batsim.write(back).data)["nb_res"] == given["nb_res"], name
            sizes += 1
        for task in original.workload.tasks():
            if task.id in kept:
                assert (kept[task.id].requested_time_s, kept[task.id].request.nodes) == (
                    task.requested_time_s, task.request.nodes), name
    assert sizes


def test_loss_lines_name_the_formats_own_columns() -> None:
    """No loss line of a conversion between the trace examples says only "other task
    fields": each names the keys it drops, by their format's own column names."""
    examples = [(swf, "examples/swf/small-cluster.swf"), (gwf, "examples/gwf/grid-archive.gwf"),
                (batsim, "examples/batsim/delays-and-compute.json")]
    for source, path in examples:
        document = _read(source, (REPO / path).read_bytes())
        assert document is not None
        for target in (swf, gwf, batsim):
            if target is source:
                continue
            losses = conversion_losses(document, target.FORMAT)
            for loss in losses:
                assert loss.detail != "other task fields", (path, target.FORMAT.name)
                if loss.field == "task.extras":
                    assert ": " in loss.detail.partition("other task fields")[2], loss.detail
    gwf_document = _read(gwf, (REPO / "examples/gwf/grid-archive.gwf").read_bytes())
    assert gwf_document is not None
    details = {loss.field: loss.detail for loss in conversion_losses(
        gwf_document, batsim.FORMAT)}
    assert "gwf: QueueID" in details["task.queue"]
    assert "gwf: JobStructure" in details["task.extras"]


@pytest.mark.parametrize(("module", "prefix", "cpu"), [
    (swf, "swf:", "AverageCPUTime"), (gwf, "gwf:", "AverageCPUTimeUsed")])
def test_recorded_values_an_earlier_dcx_kept_in_extras_are_written_to_their_columns(
        module: Any, prefix: str, cpu: str) -> None:
    """A Parquet file written before the model had the recorded fields keeps them as the
    trace format's extras keys: that format writes them to their columns, losing nothing."""
    from dcx.core.model import Job, Task, Workload
    from dcx.formats import parquet

    task = Task(id=1, runtime_s=10.0, requested_time_s=60.0, extras={
        prefix + "WaitTime": 3, prefix + cpu: 2.5, prefix + "UsedMemory": 2048,
        prefix + "Status": 0})
    old = _through(parquet, Document(workload=Workload(jobs=(Job(id=1, tasks=(task,)),))))
    losses = {loss.field for loss in conversion_losses(old, module.FORMAT)}
    assert "task.extras" not in losses
    back = _through(module, old)
    assert back.workload is not None
    (written,) = back.workload.tasks()
    assert (written.wait_time_s, written.cpu_time_s, written.used_memory_mb, written.status) \
        == (3.0, 2.5, 2.0, TaskStatus.FAILED)


WHOLE_PARTS = ("environment", "workload", "task")
"""A dropped part, and tasks left out: no field of any format's, named by its meaning."""


def test_no_loss_line_of_any_pair_is_a_field_without_names() -> None:
    """For every pair of formats, converting the most the source can carry: each loss line of
    a workload or topology field names it by the formats' own names (or, for extras, by its
    keys), so "other task fields" never stands alone, and a lost machine field says what
    the format calls it (``slurm: RealMemory``, ``simgrid: host/@speed``)."""
    from dcx.converters.losses import fullest_document
    from dcx.converters.registry import FORMATS
    from dcx.core.fields import FIELDS

    bare = []
    for source in FORMATS:
        document = fullest_document(source)
        for target in FORMATS:
            if not target.writable:
                continue
            for loss in conversion_losses(document, target):
                named = loss.detail != FIELDS[loss.field]
                if loss.field not in WHOLE_PARTS and not named:
                    bare.append((source.name, target.name, loss.field))
                if loss.field == "task.extras":
                    assert loss.detail.startswith(("other task fields (",
                                                   "other task fields: ")), loss.detail
    assert bare == []
