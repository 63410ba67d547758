"""jsspp-osp workload JSON: workflows of tasks with ISO 8601 timestamps (format ``osp-workload``).

Mapping:

* **Time axis.** ``date_start`` is ``Workload.time_origin`` (kept as written) and a task's
  ``ts_submit`` becomes seconds after it. Without ``date_start`` the time origin is none and
  times are seconds since the Unix epoch, 1970-01-01T00:00:00 UTC (naive timestamps are read
  as UTC). A task without ``ts_submit`` takes its workflow's, else the origin, with a warning.
  Time zones must agree: all timestamps naive, or all with an offset.
* **Workload.** ``name``, ``description`` map to their fields; every other key except
  ``date_start`` and ``workflows`` (``authors``, ``domain``, ``date_end``, undeclared keys) is
  kept in ``Workload.extras`` under its own name: unknown keys are this format's free-form
  mechanism, as in the jsspp environment format.
* **Workflows** are :class:`Job`\\ s: ``id`` → ``Job.id`` (a workflow without an id gets its
  0-based position, with a warning), ``application_name`` → ``Job.name``, every other key →
  ``Job.extras`` under its own name.
* **Tasks.** ``id`` → ``Task.id`` (required and unique: dependencies refer to it);
  ``depends_on`` → ``dependencies``, and each id in another task's ``enables`` adds that task to
  this one's dependencies (so ``enables`` is not written back: ``depends_on`` carries it);
  ``runtime`` → ``runtime_s`` (the format gives no unit; dcx reads seconds); without
  ``runtime``, the span from the first ``time_assigned`` to the last ``time_released`` of
  ``resources_used`` is the runtime; ``core_count`` → ``request.cores``; ``memory_usage``
  ("200MB") is the memory the task used, a record of its run as ``energy_usage``,
  ``network_usage`` and ``disk_space_usage`` beside it are (the upstream example's workflow
  sums them in ``total_memory_usage``), so it is ``used_memory_mb``, the model's average per
  core: ``memory_usage`` ÷ the task's cores, written back × its cores. The format states no
  requested memory (``request.memory_mb`` is a loss). A task runs on one node, so a request
  over several nodes is written as all their cores (``nodes x cores``; the node
  count is a ``task.request.nodes`` loss, ``dcx.core.shapes``, but for a request for cores
  anywhere, whose split into nodes means nothing; the task's cores are on that
  one node, ``Placement.NODES``, so cores anywhere are a ``task.request.placement`` loss);
  every other key
  (``user_id``, ``disk_space_usage``, ``resources_used``, …) → ``Task.extras`` under its own
  name. Size strings in
  ``disk_space_usage``/``network_usage`` are checked but kept as written: the model has no
  task field for them.
* **Sizes** are a number and a unit: B, KB, MB, GB, TB, PB (and KiB…PiB), powers of 1,024 as
  the model's MB is 2**20 bytes.
* **Ids.** The format's ids are strings; integer model ids are written as their decimal text
  (when two ids would then read back alike, the tasks are renumbered ``"1"``, ``"2"``, …, a
  ``task.id`` loss).

The writer serialises ``normal_form(document)`` and nothing else: what the format cannot hold
(a negative runtime or memory, a core count <= 0, a submit time beyond what a timestamp holds,
an extras value the format's schema refuses for its key, a key dcx writes from a model field)
is a value restriction of the normal form, reported by the derived losses.

A workload held as columns is put in normal form and written column by column, each rule
asked once per distinct value, with the bytes and losses of the task-by-task path; a file of
plain workflows and tasks (the members dcx reads into the model, ids used once, dependencies
on earlier tasks, nothing any check reports) is read into columns.

The writer writes ``date_start`` from ``time_origin`` and every task's ``ts_submit``; a workload
without a time origin (or with one that is not ISO 8601, a ``workload.time_origin`` loss) is
written without ``date_start``, its timestamps counted from the Unix epoch in UTC, so that it
reads back with no origin.

Divergences
-----------

1. The upstream schema declares ``date_start``/``date_end`` as ``format: date-time`` while its
   own example uses timestamps without a time zone (not RFC 3339); the reference validator
   never checks formats. dcx's schema does not assert the format; the reader parses every
   timestamp with ISO 8601 rules and reports the ones it cannot read.
2. The upstream example uses keys its schema does not declare (``memory_usage``,
   ``energy_usage``, ``total_energy_usage``); dcx reads ``memory_usage`` and keeps the others.
3. Nothing upstream requires task ids or checks ``depends_on``; dcx requires unique task ids
   and reports unknown ids and cycles.
"""

from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded
from dcx.parsing.trace_codes import dependency_codes

__all__ = [
    "CODES", "FIELD_NAMES", "FORMAT", "HOLDS", "PREFIX", "SCHEMA", "UNIX_EPOCH", "format_size_mb",
    "normal_form", "normal_form_losses", "parse_size_mb", "read", "sniff", "write",
]

# The reader, the writer and what they import (the model, the JSON parser, the schemas) load on
# first use: the pre-commit hook imports every format's declaration to sniff.
_LAZY = {
    name: "codec" for name in (
        "PREFIX", "SCHEMA", "UNIX_EPOCH", "format_size_mb", "parse_size_mb",
    )
}


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


HOLDS = frozenset({
    "workload.name", "workload.description", "workload.time_origin", "workload.extras", "job",
    "job.name", "job.extras", "task.id", "task.submit_time_s", "task.runtime_s",
    "task.request.cores", "task.used_memory_mb", "task.dependencies", "task.extras",
    "job.empty", "task.dependencies.multiple",
})

FIELD_NAMES: dict[str, str] = {
    "workload.name": "name", "workload.description": "description",
    "workload.time_origin": "date_start",
    "workload.extras": "other top-level keys (authors, domain, date_end, …)",
    "job": "workflows", "job.name": "application_name",
    "job.extras": "other workflow keys", "job.empty": "workflows without tasks",
    "task.id": "task id", "task.submit_time_s": "ts_submit", "task.runtime_s": "runtime",
    "task.request.cores": "core_count", "task.used_memory_mb": "memory_usage",
    "task.dependencies": "depends_on", "task.dependencies.multiple": "depends_on (several)",
    "task.extras": "other task keys (user_id, disk_space_usage, resources_used, …)",
}
"""The jsspp-osp workload's names of the fields (``FormatDeclaration.field_names``)."""


def sniff(data: bytes) -> bool:
    head = data[:4096].lstrip()
    return head.startswith(b"{") and (b'"workflows"' in head or (
        b'"ts_submit"' in head and b'"datacenters"' not in head))


read = deferred("dcx.formats.osp_workload.codec", "read")


write = deferred("dcx.formats.osp_workload.codec", "write")


normal_form = deferred("dcx.formats.osp_workload.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.osp_workload.codec", "normal_form_losses")


CODES = (
    Code("osp-workload.root", "error", "The document is not a JSON object."),
    Code("osp-workload.timestamp", "error", "A timestamp is not ISO 8601."),
    Code("osp-workload.time-zone", "error",
         "Some timestamps have a time zone and others not: they share no time axis."),
    Code("osp-workload.task-id", "error",
         "A task has no id: dependencies cannot refer to it."),
    Code("osp-workload.negative", "error", "A runtime is negative, or a core count not positive."),
    Code("osp-workload.size", "error", "A size is not a number with a unit such as \"200MB\"."),
    Code("osp-workload.workflow-id", "warning",
         "A workflow has no id; dcx names it by its position."),
    Code("osp-workload.no-submit-time", "warning",
         "A task has no ts_submit, nor has its workflow: it is submitted at the time origin."),
    Code("osp-workload.unwritable", "error",
         "The model has a value osp-workload JSON cannot carry (writing only)."),
    *dependency_codes("osp-workload"),
)


FORMAT = FormatDeclaration(
    name="osp-workload",
    title="jsspp-osp workload JSON",
    family="trace",
    kind="workload",
    extensions=(".json",),
    content=frozenset({"json"}),
    schema="osp-workload.schema.json",
    description=("Workflows of tasks with ISO 8601 timestamps (jsspp-osp v1)."),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    codes=CODES,
    stream_target=deferred("dcx.formats.osp_workload.stream_target", "OspWorkloadTarget"),
    field_names=FIELD_NAMES,
)
