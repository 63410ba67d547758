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
from dcx.core.model import Document, Task, Workload
from dcx.core.restrict import dropped_values, normalized_for
from tests.strategies import Domain, workloads

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
