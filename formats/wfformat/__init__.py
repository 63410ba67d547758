"""WfCommons WfFormat 1.0 to 1.5: one workflow's tasks and files, and how one run of it went
(format ``wfformat``).

A file is ``{"name", "schemaVersion": "1.5", "workflow": {"specification": {"tasks",
"files"}, "execution": {"makespanInSeconds", "executedAt", "tasks", "machines"}}}``. The
specification is the graph (tasks with ``parents``/``children``, files by id); the optional
execution holds what was measured, task by task, and the machines the tasks ran on.

What dcx reads
--------------

* **1.5** (WfFormat 1.5 schema; WfInstances' current files, WfCommons 1.x's loader): the
  specification/execution split described at the top, also with ``#`` in ids (added upstream
  without a version change).
* **1.4** (WfFormat 1.4 schema; most published WfInstances): a flat ``workflow`` with
  ``makespanInSeconds``, ``executedAt``, ``machines`` (``cpu.count``, ``cpu.speed`` in MHz,
  ``memoryInBytes``) and ``tasks``, each with ``name``, ``id``, ``category``, ``type``,
  ``command``, ``parents`` and ``children`` by task name, inline ``files`` (``name``,
  ``sizeInBytes``, ``link``), ``runtimeInSeconds``, ``cores``, ``memoryInBytes``,
  ``readBytes``/``writtenBytes``, ``energy``, ``avgPower``, ``priority`` and one ``machine``.
* **1.3** (1.3 schema): the same with ``makespan``, ``runtime``, and ``memory``,
  ``bytesRead``, ``bytesWritten`` and file ``size`` in KB.
* **1.0 to 1.2** (1.2 schema): ``jobs`` instead of ``tasks``, without ``id`` or
  ``category``.

Files before 1.5 are read as WfCommons' migration tool (``tools/wfcommons-migrate-instance.py``)
moves them into 1.5: a task's id is its ``name`` (what legacy ``parents`` name), or
``name_id`` when its ``id`` is not part of the name; ``cores`` → ``coreCount``, ``energy``
→ ``energyInKWh``, ``avgPower`` → ``avgPowerInW``, ``machine`` → ``machines``, the files
into the specification's ``files`` (by ``path`` + ``name``) and the tasks'
``inputFiles``/``outputFiles``, ``wms`` → ``runtimeSystem``, machine ``cpu.count``/``speed``
→ ``coreCount``/``speedInMHz``; KB (1.0-1.3) × 1000 to bytes, except ``bytesRead`` and
``bytesWritten`` of a Pegasus run (already bytes, as the tool says). A task without
``children`` (before 1.4) gets them from the other tasks' ``parents``. Diagnostics point
into the file as written (``/workflow/tasks/1/parents/0``). dcx writes WfFormat 1.5, the
current version, whatever version it read: a 1.4 file converts to 1.5 without loss, and
members 1.5 does not name (``type``, ``category``) stay on the specification task, as
WfFormat allows.

Mapping
-------

* **Workload.** ``name`` → ``Workload.name``; ``description`` → ``description``;
  ``execution.executedAt`` (when the workflow started) → ``time_origin`` (kept as
  written). WfFormat has no submit times: every task is submitted when the workflow starts,
  at 0, and an execution task's ``executedAt`` (when the task started, WfCommons'
  ``executed_at``) is its wait, the seconds from the workflow's ``executedAt`` to it →
  ``wait_time_s`` (to the microsecond; written back as a timestamp in the workflow's time
  zone, ``submit_time_s + wait_time_s`` after the time origin, so a task submitted later
  than 0 comes back with that much more wait: a ``task.wait_time_s`` loss beside the
  ``task.submit_time_s`` one). One that is not ISO 8601, is before the workflow's start, or
  has a time zone where the workflow's has none (or back) stays among the task's members.
* **Tasks.** Each specification task is a task and, since a file holds one workflow and no
  grouping inside it, a job of its own whose id is the task's (the model's form for formats
  without jobs). ``id`` → ``Task.id`` (the decimal text of a non-negative integer reads as
  that integer, as for every text id in dcx); ``parents`` → ``dependencies``, and a task
  listed in another's ``children`` gains that task as a dependency too. The execution entry
  of the same id gives ``runtimeInSeconds`` → ``runtime_s``, ``coreCount`` →
  ``request.cores`` (total cores, on one node: WfFormat does not say how cores split over
  the ``machines`` a task names; a request of one node, ``Placement.NODES``; a request of
  several nodes is written as its total cores, ``nodes x cores``, as ``dcx.core.shapes``
  says: 64 SWF processors are ``coreCount`` 64, 8 Batsim hosts 8, the node count a
  ``task.request.nodes`` loss unless the request was for cores anywhere),
  ``memoryInBytes`` (the process's resident set size: memory the task used, not asked for)
  → ``used_memory_mb``, the model's average per core (÷ 2**20 ÷ ``coreCount``; written
  back in whole bytes), ``command.program`` → ``application`` (the command's
  ``arguments`` stay among the task's members). WfFormat asks for no memory, so a
  requested memory is a ``task.request.memory_mb`` loss. A task without an execution entry
  has no runtime and none of these.
* **Machines.** ``execution.machines`` are the topology, one rack of machines:
  ``nodeName`` → ``Machine.name``, ``system`` → ``os``, ``architecture`` → ``arch``,
  ``cpu`` → one CPU (``coreCount`` cores at ``speedInMHz`` × 10**6 Hz, ``vendor`` →
  manufacturer), ``memoryInBytes`` → one memory module (÷ 2**20 MB).
* **Data of its own** is kept under ``wfformat:`` keys and written back: the task ``name``
  (only when it is not the task's id, which is what the writer names a task that has no
  name) and the other specification members (``inputFiles``, ``outputFiles``) under
  ``wfformat:task``; the execution members dcx has no field for (``avgCPU``,
  ``readBytes``, ``machines``, ``command.arguments`` …) under ``wfformat:execution``;
  workload-wide, ``createdAt``, ``author``, ``runtimeSystem`` (``wfformat:instance``), the
  specification's ``files`` (``wfformat:specification``), other workflow and execution
  members; a machine's ``release`` and other members under ``wfformat:machine``. Unknown
  members, which WfFormat allows everywhere, go with their object's group. An execution
  task without ``coreCount`` reads as 1 core with the flag ``wfformat:coreCountUnstated``,
  and is written without one again.
* **Makespan.** ``makespanInSeconds``, when it is not the length of the critical path, is
  the measured ``Workload.makespan_s``; a target that does not hold it reports the loss
  (``workload.makespan_s``). The writer writes the model's makespan, or the critical path
  (what the file's runtimes give) when it has none.

Checks beyond the schema (those of WfCommons' newer validator): unique task, file and
machine ids; parents and children naming declared tasks; no cycle; the two directions
agreeing (a conformance warning where a parent does not list the child, or back); declared
files for every ``inputFiles``/``outputFiles`` entry when ``files`` is given; execution
entries naming specification tasks, once each; task ``machines`` naming declared machines
when ``machines`` is given.

Normal form
-----------

The writer serialises ``normal_form(document)``: ids WfFormat can reference (letters,
digits, ``- _ . #``) are kept, others renumbered ``1, 2, …`` (``task.id``); dependencies are
kept once each and never on the task itself; the execution section exists only if some task
has a runtime, so a task without one keeps no cores, start, memory used or program and a
workload without any keeps no time origin and no machines (WfFormat lists machines only in
an execution); every task is submitted at 0, its start (``submit_time_s + wait_time_s``) its
wait, to the microsecond, where the timestamp can say it; memory used is whole bytes over
the task's cores; a task's cores are its total cores on one node (``nodes x cores``); an
empty program is none; cores below 1 become 1; machine names are filled in
(``dcx.core.ids``) and made unique; CPUs merge into one (as for every format that does not
hold sockets, reported as ``machine.cpus.sockets``) with a clock in whole MHz; memory is
whole bytes; the operating system is one of ``linux``, ``macos``, ``windows``. WfFormat
requires a ``name`` and an ``executedAt``: a workload without a name is written as
``workflow``, and one without a time origin with ``executedAt`` ``1970-01-01T00:00:00Z``,
which reads back as no time origin. A document without tasks cannot be written (WfFormat
requires one).

Divergences
-----------

1. WfFormat's own validator for 1.5 checks parents only and runs no format checks; its
   newer validator checks references both ways, files, machines and cycles. dcx applies the
   newer checks (errors where it errs, a warning where it warns about parents and children
   disagreeing), since a file that fails them cannot be a workflow graph.
2. The 1.5 validator looks up a task's ``machine`` (the 1.4 key) and crashes when
   ``execution`` is absent; dcx reads ``machines`` and files without an execution.
3. The README calls a machine's ``cpu.coreCount`` fractional; the schema says integer, and
   dcx follows the schema.
4. WfCommons' instances made from Pegasus logs give ``executedAt`` as Pegasus writes it,
   month-day-year (``05-10-23T16:23:32Z``), where the documentation asks for ISO 8601; dcx
   reads that form as the ISO instant (2023-05-10T16:23:32Z) with a conformance warning, and
   writes ISO 8601.
5. ``schemaVersion`` must be one of 1.0 to 1.5: a later one is refused (its additions are
   optional, so changing its version to 1.5 reads it).
6. The migration tool also adds, to a task that lists no parents, the tasks that wrote its
   input files; dcx keeps the parents as listed and invents no dependency. Where a task has
   no ``id``, the tool names it ``name_<position>`` yet leaves the parents naming
   ``name``; dcx keeps the name, so the parents still find it.
"""

from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded
from dcx.parsing.trace_codes import dependency_codes

__all__ = [
    "BYTES_PER_MB", "CODES", "CORES_UNSTATED", "CPU_MEMBERS", "EXECUTION_MEMBERS",
    "FIELD_NAMES", "FORMAT",
    "HOLDS", "INSTANCE_MEMBERS", "MACHINE_MEMBERS", "NO_NAME", "NO_TIME_ORIGIN", "OWN_EXTRAS",
    "PREFIX", "REQUIRES", "SCHEMA", "SPECIFICATION_MEMBERS", "SYSTEMS", "TASK_MEMBERS",
    "TASK_NAME", "VERSION", "WORKFLOW_MEMBERS", "critical_path", "leaves_out", "normal_form",
    "normal_form_losses", "read", "sniff", "write",
]

# The reader, the writer and what they import load on first use: the pre-commit hook imports
# every format's declaration to sniff, and most of its files are not this format's.
_LAZY = dict.fromkeys({
    "BYTES_PER_MB", "CPU_MEMBERS", "EXECUTION_MEMBERS", "INSTANCE_MEMBERS", "MACHINE_MEMBERS",
    "CORES_UNSTATED", "NO_NAME", "NO_TIME_ORIGIN", "PREFIX", "SPECIFICATION_MEMBERS", "SYSTEMS",
    "TASK_MEMBERS", "TASK_NAME", "VERSION", "WORKFLOW_MEMBERS", "critical_path",
}, "codec")


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


SCHEMA = "wfformat.schema.json"


HOLDS = frozenset({
    "workload.name", "workload.description", "workload.time_origin", "workload.makespan_s",
    "task.id",
    "task.runtime_s", "task.request.cores", "task.dependencies",
    "task.dependencies.multiple", "task.wait_time_s", "task.used_memory_mb",
    "task.application", "machine.name", "machine.cpus", "cpu.clock_rate_hz",
    "cpu.vendor", "machine.memory", "machine.os", "machine.arch",
})
FIELD_NAMES: dict[str, str] = {
    "workload.name": "name", "workload.description": "description",
    "workload.time_origin": "execution executedAt", "workload.makespan_s": "makespanInSeconds",
    "task.id": "task id", "task.runtime_s": "runtimeInSeconds",
    "task.request.cores": "coreCount", "task.dependencies": "parents / children",
    "task.dependencies.multiple": "parents (several)",
    "task.wait_time_s": "task executedAt (its start)",
    "task.used_memory_mb": "task memoryInBytes (resident set size)",
    "task.application": "command program", "machine.name": "nodeName",
    "machine.cpus": "cpu coreCount", "cpu.clock_rate_hz": "cpu speedInMHz",
    "cpu.vendor": "cpu vendor", "machine.memory": "machine memoryInBytes",
    "machine.os": "system", "machine.arch": "architecture",
    "workload.extras": "other instance, workflow and execution members",
    "task.extras": "other task members (inputFiles, outputFiles, avgCPU, machines, …)",
    "machine.extras": "other machine members (release, …)",
    "wfformat:name": "task name", "wfformat:task": "specification task members",
    "wfformat:execution": "execution members", "wfformat:instance": "instance members",
    "wfformat:workflow": "workflow members", "wfformat:specification": "specification files",
    "wfformat:coreCountUnstated": "coreCount left out", "wfformat:machine": "machine members",
    "wfformat:cpu": "cpu members",
}
"""WfFormat's names of the fields (``FormatDeclaration.field_names``)."""
OWN_EXTRAS = frozenset({"workload.extras", "task.extras", "machine.extras"})
REQUIRES = frozenset({"machine.name"})


def sniff(data: bytes) -> bool:
    head = data[:4096].lstrip()
    return head.startswith(b"{") and b'"schemaVersion"' in head and (
        b'"workflow"' in head or b'"specification"' in head)


read = deferred("dcx.formats.wfformat.codec", "read")


write = deferred("dcx.formats.wfformat.codec", "write")


normal_form = deferred("dcx.formats.wfformat.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.wfformat.codec", "normal_form_losses")


leaves_out = deferred("dcx.formats.wfformat.codec", "leaves_out")


CODES = (
    Code("wfformat.root", "error", "The document is not a JSON object."),
    Code("wfformat.version", "error",
         "schemaVersion is not one of 1.0 to 1.5."),
    Code("wfformat.asymmetric-dependency", "warning",
         "A task lists another as parent (or child) and that task does not list it back.",
         conformance=True),
    Code("wfformat.repeated-reference", "warning",
         "A task lists the same parent or child more than once."),
    Code("wfformat.unknown-file", "error",
         "A task's inputFiles or outputFiles names a file the workflow's files do not declare."),
    Code("wfformat.duplicate-file", "error", "Two files have the same id."),
    Code("wfformat.duplicate-machine", "error", "Two execution machines have the same nodeName."),
    Code("wfformat.duplicate-execution", "error", "A task has two execution entries."),
    Code("wfformat.unknown-execution-task", "error",
         "An execution entry names a task the specification does not have."),
    Code("wfformat.unknown-machine", "error",
         "A task ran on a machine the execution's machines do not declare."),
    Code("wfformat.timestamp", "warning", "executedAt is not an ISO 8601 timestamp.",
         conformance=True),
    Code("wfformat.pegasus-timestamp", "warning",
         "executedAt is month-day-year as Pegasus writes it (05-10-23T16:23:32Z), not ISO 8601; "
         "dcx reads it as the ISO instant.", conformance=True),
    Code("wfformat.unwritable", "error",
         "The model cannot be written as WfFormat (no task, or a value it cannot carry; "
         "writing only)."),
    *dependency_codes("wfformat"),
)

FORMAT = FormatDeclaration(
    name="wfformat",
    title="WfCommons WfFormat 1.0-1.5",
    family="trace",
    kind="both",
    extensions=(".json",),
    content=frozenset({"json"}),
    schema=SCHEMA,
    description=("A workflow's tasks, dependencies and files, with the runtimes, cores and "
                 "memory of one run and the machines it ran on (WfCommons, WRENCH)."),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    leaves_out=leaves_out,
    own_extras=OWN_EXTRAS,
    requires=REQUIRES,
    codes=CODES,
    field_names=FIELD_NAMES,
)
