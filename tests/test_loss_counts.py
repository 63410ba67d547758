"""A loss line's count is how many values the target changes or drops: for a value the
target's normal form restricts (Haizea's runtime of an unknown one, SWF's cores anywhere),
the values that differ from the document's, not every value the document has there."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings

from dcx.converters.losses import conversion_losses
from dcx.converters.registry import FORMATS
from dcx.core.declaration import FormatDeclaration
from dcx.core.fields import FIELDS
from dcx.core.groups import MachineGroup, Slots
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    Task,
    Workload,
)
from dcx.core.restrict import _TASK_VALUES as TASK_VALUE_PATHS
from dcx.core.restrict import RecordingValues, dropped_values, normalized_for
from dcx.core.restrict import _restrict as restricted_walk
from tests.strategies import Domain, workloads
from tests.test_groups import _compacted, documents_with_runs

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BY_NAME = {spec.name: spec for spec in FORMATS}

TASK_VALUES: dict[str, Callable[[Task], Any]] = {
    "task.submit_time_s": lambda task: task.submit_time_s,
    "task.runtime_s": lambda task: task.runtime_s,
    "task.requested_time_s": lambda task: task.requested_time_s,
    "task.deadline_s": lambda task: task.deadline_s,
    "task.user": lambda task: task.user,
    "task.group": lambda task: task.group,
    "task.status": lambda task: task.status,
    "task.request.nodes": lambda task: task.request.nodes,
    "task.request.cores": lambda task: task.request.cores,
    "task.request.memory_mb": lambda task: task.request.memory_mb,
    "task.request.gpus": lambda task: task.request.gpus,
    "task.request.placement": lambda task: task.request.placement,
    "task.dependencies": lambda task: task.dependencies,
    "task.start": lambda task: (task.start_mode, task.start_time_s),
}
"""A task's one value at each task path a normal form may restrict, read off the task."""

RESTRICTING = [spec for spec in FORMATS if spec.normal_form_losses is not None
               and any(path.startswith("task.") for path in spec.holds)]


def test_a_runtime_filled_in_is_the_one_value_lost() -> None:
    """``dcx convert small-cluster.swf x.lwf --to haizea``: one job of five has no runtime
    (-1), which Haizea's lease fills in with its requested time; the other four are kept."""
    read = BY_NAME["swf"].read((EXAMPLES / "swf" / "small-cluster.swf").read_bytes())
    assert read.document is not None
    losses = {loss.field: loss for loss in conversion_losses(read.document, BY_NAME["haizea"])}
    assert losses["task.runtime_s"].count == 1
    assert losses["task.runtime_s"].first == "/workload/jobs/4/tasks/0"


@pytest.mark.parametrize("target", RESTRICTING, ids=lambda spec: spec.name)
@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(workloads(Domain(ids="int")))
def test_a_restricted_values_count_is_the_number_of_values_that_differ(
        target: FormatDeclaration, workload: Workload) -> None:
    """Where the normal form keeps every task in its place (same ids, or numbered 1, 2, …
    in the document's order), each task path it restricts counts the tasks whose value
    there it changes."""
    document = Document(workload=workload)
    try:
        normalized = normalized_for(document, target)
    except ValueError:  # a document the target refuses (no losses to count)
        assume(False)
    assert target.normal_form_losses is not None
    restricted = set(target.normal_form_losses(document)) & TASK_VALUES.keys()
    before = list(workload.tasks())
    after = list(normalized.workload.tasks()) if normalized.workload is not None else []
    ids = [task.id for task in after]
    submits = [task.submit_time_s for task in before]
    # renumbered, the tasks are in the document's order where no normal form reorders
    # them: where they are in submission order already (SWF and Haizea order by it)
    assume(ids == [task.id for task in before] or (
        ids == list(range(1, len(before) + 1)) and submits == sorted(submits)))
    dropped = dropped_values(document, target.holds, target.name, target, normalized)
    for path in restricted:
        value = TASK_VALUES[path]
        differing = sum(value(old) != value(new) for old, new in zip(before, after, strict=True))
        if path == "task.dependencies" and ids != [task.id for task in before]:
            continue  # renumbered: its dependencies follow the new numbers
        assert (dropped[path].count or 0) == differing, (target.name, path)


# ------------------------------------------------------------------------------ machine groups

TOPOLOGY_RESTRICTING = [spec for spec in FORMATS if spec.normal_form_losses is not None
                        and spec.kind != "workload"]


@pytest.mark.parametrize("target", TOPOLOGY_RESTRICTING, ids=lambda spec: spec.name)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents_with_runs())
def test_grouped_and_expanded_machines_give_the_same_loss_lines(
        target: FormatDeclaration, document: Document) -> None:
    """A loss line is the same whether runs of machines are held as groups (one template,
    N members) or one by one: its count (a group's changed value once per member) and its
    first value's pointer (a member's own slot)."""
    grouped = _compacted(document)
    assert grouped == document
    try:
        expected = conversion_losses(document, target)
    except ValueError:  # a document the target refuses
        assume(False)
    assert conversion_losses(grouped, target) == expected


def _rack_of(*parts: Machine | MachineGroup | None) -> Document:
    return Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=Slots(parts)),)),)),)))


def test_a_value_a_normal_form_changes_in_a_groups_member_counts_once() -> None:
    """A group of four whose third member's id is one JGF cannot keep as it is (a text id
    is renumbered): one value, at the member's own slot, as when the four are expanded."""
    template = Machine(cpus=(ProcessingUnit(cores=4),))
    group = MachineGroup(template, 4, ids=(0, 1, "third", 3), ranks=range(4))
    grouped = _rack_of(Machine(id=9, rank=9, cpus=(ProcessingUnit(cores=4),)), group)
    expanded = _rack_of(Machine(id=9, rank=9, cpus=(ProcessingUnit(cores=4),)), *group)
    jgf = BY_NAME["jgf"]
    by_group, by_machine = (
        {loss.field: loss for loss in conversion_losses(document, jgf)}
        for document in (grouped, expanded))
    assert by_group == by_machine
    assert by_group["machine.id"].count == 1
    assert by_group["machine.id"].first == "/environment/datacenters/0/rooms/0/racks/0/slots/3"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(Domain(ids="int")))
def test_task_values_recorded_without_the_walk_are_what_the_walk_records(
        workload: Workload) -> None:
    """``RecordingValues.record_task`` (the comparison's fast way through the tasks) records
    each task's values as the walk of ``_task`` does."""
    document = Document(workload=workload)
    paths = frozenset(TASK_VALUE_PATHS)
    fast = RecordingValues(frozenset(FIELDS), None, keep_foreign=True, wanted=paths)
    walked = RecordingValues(frozenset(FIELDS), None, keep_foreign=True,
                             wanted=paths | {"task.extras"})  # (a path only the walk records)
    assert fast.task_values_only and not walked.task_values_only
    restricted_walk(document, fast)
    restricted_walk(document, walked)
    for path in paths:
        assert fast.bags.get(path, {}) == walked.bags.get(path, {}), path
