"""A request for cores anywhere (``Placement.CORES``) means only its total cores and memory:
a format that writes it as processors (SWF, Batsim) or as one node's cores (GWF,
osp-workload, OpenDC) re-splits it and loses nothing of it (``core.shapes.only_resplit``);
one for whole nodes loses its cores per node (or its node count) there. The same, for a
workload held as objects and as columns."""

from __future__ import annotations

import pytest

from dcx.converters.losses import conversion_losses
from dcx.converters.registry import BY_NAME
from dcx.core.model import Document, Job, Placement, ResourceRequest, Task, Workload
from tests.test_json_targets_columns import both_ways

SHAPE_PATHS = {"task.request.nodes", "task.request.cores", "task.request.memory_mb"}


def _workload(placement: Placement) -> Workload:
    requests = (ResourceRequest(nodes=1, cores=4.0, memory_mb=1024.0, placement=placement),
                ResourceRequest(nodes=4, cores=1.0, memory_mb=256.0, placement=placement),
                ResourceRequest(nodes=2, cores=8.0, placement=placement))
    return Workload(jobs=tuple(
        Job(id=number, tasks=(Task(id=number, submit_time_s=float(number), runtime_s=60.0,
                                   request=request),))
        for number, request in enumerate(requests, start=1)))


def _shape_losses(document: Document, target: str) -> set[str]:
    return {loss.field for loss in conversion_losses(document, BY_NAME[target])} & SHAPE_PATHS


@pytest.mark.parametrize("target", ["swf", "gwf", "batsim", "osp-workload",
                                    "opendc-workload"])
def test_cores_anywhere_lose_nothing_when_resplit(target: str) -> None:
    pair = both_ways(_workload(Placement.CORES))
    assert pair is not None
    # (memory, where the target has none to write, is lost whatever the shape)
    unheld = {"task.request.memory_mb"} - BY_NAME[target].holds
    for document in pair:
        assert _shape_losses(document, target) == unheld, target
    # whole nodes: the shape per node is what the target cannot say
    for document in both_ways(_workload(Placement.NODES)) or ():
        lost = {loss.field for loss in conversion_losses(document, BY_NAME[target])}
        assert lost & {"task.request.nodes", "task.request.cores",
                       "task.request.placement"}, target
