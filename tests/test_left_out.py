"""No task vanishes without a word: for every ordered pair of workload formats, the tasks a
conversion writes plus the tasks its ``task`` loss line names are the tasks it was given."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from dcx.converters.convert import refusal
from dcx.converters.losses import conversion_losses
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import has_errors
from dcx.core.model import Document, Job, Placement, ResourceRequest, Task, Workload
from dcx.core.restrict import LEFT_OUT, normalized_for, with_parts
from dcx.formats import batsim, swf
from tests.test_losses import WRITABLE, _installed, _own_strategy, _round_trip

WORKLOAD_FORMATS = [spec for spec in WRITABLE if "workload" in with_parts(spec.holds)]
PAIRS = [(a, b) for a in WORKLOAD_FORMATS for b in WORKLOAD_FORMATS if a.name != b.name]


def _tasks(document: Document | None) -> int:
    if document is None or document.workload is None:
        return 0
    return sum(len(job.tasks) for job in document.workload.jobs)


def _accounted(document: Document, target: FormatDeclaration) -> None:
    """``document`` converted to ``target``: written tasks + named left-out tasks = given."""
    module = _installed(target)
    assert module.write is not None
    written = module.write(document)
    if has_errors(written.diagnostics):
        assert refusal(document, normalized_for(document, target), "source", target)
        return
    back = module.read(written.data).document
    left = {loss.field: loss for loss in conversion_losses(document, target)}.get(LEFT_OUT)
    named = 0 if left is None else left.count
    assert named is not None
    assert _tasks(back) + named == _tasks(document), (target.name, left)
    if left is not None:
        assert left.first is not None and "left out" in left.detail
        reason_of = target.leaves_out
        if reason_of is not None:  # its reason says how many
            assert f"{left.count:,} of {_tasks(document):,} tasks" in reason_of(document)


@pytest.mark.parametrize("source,target", PAIRS, ids=lambda spec: spec.name)
def test_every_task_is_written_or_named_as_left_out(source: FormatDeclaration,
                                                    target: FormatDeclaration) -> None:
    source_module = _installed(source)

    @settings(max_examples=8, deadline=None, derandomize=True,
              phases=[Phase.explicit, Phase.reuse, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large])
    @given(_own_strategy(source))
    def check(document: Document) -> None:
        original = _round_trip(source_module, document, source.name)
        _accounted(original, target)

    check()


def test_swf_jobs_batsim_cannot_run_are_counted_and_the_first_named() -> None:
    """Zero and unknown runtimes (the NASA iPSC and LCG traces have hundreds): counted in
    the one loss line of the tasks left out, which names the first; not runtimes lost."""
    lines = ["; Version: 2.2"] + [
        f"{n} {n * 10} 0 {runtime} 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1"
        for n, runtime in enumerate([100, 0, 0, -1, 30, 0, 0], start=1)]
    document = swf.read(("\n".join(lines) + "\n").encode()).document
    assert document is not None
    (left,) = [loss for loss in conversion_losses(document, batsim.FORMAT)
               if loss.field == LEFT_OUT]
    assert left.count == 5 and left.first == "/workload/jobs/1/tasks/0"
    reason_of = batsim.FORMAT.leaves_out
    assert reason_of is not None
    reason = reason_of(document)
    assert "5 of 7 tasks have no positive runtime for a delay profile" in reason
    assert not any(loss.field == "task.runtime_s"
                   for loss in conversion_losses(document, batsim.FORMAT))


# A Batsim workload shaped like the repository's own test workloads: delay jobs beside jobs
# whose profiles have types dcx does not write (written here, not copied).
UNKNOWN_TYPES = b"""{
  "nb_res": 4,
  "jobs": [
    {"id": 1, "subtime": 0, "walltime": 100, "res": 1, "profile": "delay10"},
    {"id": 2, "subtime": 1, "walltime": 100, "res": 2, "profile": "replay"},
    {"id": 3, "subtime": 2, "walltime": 100, "res": 2, "profile": "replay"},
    {"id": 4, "subtime": 3, "walltime": 100, "res": 1, "profile": "ptrace"}
  ],
  "profiles": {
    "delay10": {"type": "delay", "delay": 10},
    "replay": {"type": "mpi_replay_v2", "trace": "traces/a.txt"},
    "ptrace": {"type": "usage_trace_future", "trace": "traces/b.txt"}
  }
}
"""


def test_batsim_jobs_of_unknown_profile_types_are_named_by_type_and_count() -> None:
    document = batsim.read(UNKNOWN_TYPES).document
    assert document is not None
    (left,) = [loss for loss in conversion_losses(document, batsim.FORMAT)
               if loss.field == LEFT_OUT]
    assert left.count == 3 and left.first == "/workload/jobs/1/tasks/0"
    reason_of = batsim.FORMAT.leaves_out
    assert reason_of is not None
    reason = reason_of(document)
    assert "2 with profile type 'mpi_replay_v2'" in reason
    assert "1 with profile type 'usage_trace_future'" in reason
    assert "(tasks 2, 3)" in reason and "(task 4)" in reason


def test_a_whole_node_job_batsim_runs_is_no_left_out_loss() -> None:
    task = Task(id=1, runtime_s=5.0, request=ResourceRequest(nodes=2,
                                                             placement=Placement.NODES))
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(task,)),)))
    assert LEFT_OUT not in {loss.field for loss in conversion_losses(document,
                                                                     batsim.FORMAT)}
