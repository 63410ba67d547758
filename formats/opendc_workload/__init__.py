"""OpenDC workload trace: a folder holding ``tasks.parquet`` (one row per task) and
``fragments.parquet`` (each task's CPU demand over time), the input OpenDC's
ComputeWorkloadLoader reads (atlarge-research/opendc, opendc-trace-api, workload format).

dcx reads and writes the folder (``dcx convert in.swf out-dir --to opendc-workload``); through
a pipe, the folder travels as a tar archive of its two files. The column types below are
``schemas/opendc-workload.schema.json``, which every member's schema is checked against after
OpenDC's aliases are resolved.

tasks.parquet
-------------

=================== ================================ ======== =====================================
column              Parquet type                     required model (unit)
=================== ================================ ======== =====================================
``id``              INT32                            yes      ``task.id`` (unique)
``name``            STRING                                    ``opendc-workload:name`` extra
``submission_time`` INT64 TIMESTAMP(MILLIS, UTC)     yes      ``task.submit_time_s`` (epoch ms)
``duration``        INT64                            yes      ``task.runtime_s`` (ms)
``cpu_count``       INT32                            yes      ``task.request.cores`` (on one
                                                              host: ``Placement.NODES``)
``cpu_capacity``    DOUBLE                           yes      ``opendc-workload:cpu_capacity`` (MHz)
``mem_capacity``    INT64 (DOUBLE read)              yes      ``task.request.memory_mb`` × 1000
``gpu_count``       INT32                                     ``task.request.gpus``
``gpu_capacity``    DOUBLE                                    ``opendc-workload:gpu_capacity``
``parents``         LIST<INT32>                               ``task.dependencies``
``children``        LIST<INT32>                               the inverse of ``parents``
``deferrable``      BOOLEAN                                   ``opendc-workload:deferrable``
``deadline``        INT64 (ms, −1: none)                      ``task.deadline_s``
=================== ================================ ======== =====================================

OpenDC's aliases are read as the column they stand for: ``submissionTime``, ``maxCores``
(``cpu_count``), ``requiredMemory`` (``mem_capacity``), ``gpuMaxCores`` (``gpu_count``). Its
other optional columns (``nature``, ``num_fragments``, ``host``) are accepted and not kept;
any other column is an error, as it is in OpenDC.

fragments.parquet: ``id`` (INT32, the task), ``duration`` (INT64 ms), ``cpu_usage`` (DOUBLE
MHz; alias ``cpuUsage``), ``gpu_usage`` (DOUBLE, optional; alias ``gpuUsage``). The rows of one
id, in file order, are the task's demand over time. The columns older traces carry
(``timestamp``/``time``, ``cpu_count``/``cores``, ``gpu_count`` and its aliases) are accepted
and not kept.

What dcx reads
--------------

* **Workload schema V2** (opendc-trace-api ``TaskSchemas.kt``/``FragmentSchemas.kt``,
  current OpenDC): the columns of the two tables below, ``id`` INT32,
  ``parents``/``children`` LIST<INT32>, ``deferrable`` BOOLEAN.
* **Column names of the OpenDC 2.x traces** (opendc-trace ``ResourceReadSupport`` and
  ``ResourceStateReadSupport`` of trace v2.0 and v2.1, which current OpenDC still maps):
  ``submissionTime``, ``maxCores``, ``requiredMemory``; fragments with ``time`` or
  ``timestamp``, ``cores`` or ``cpu_count``, ``cpuUsage``; and ``nature``,
  ``num_fragments``, ``host``, accepted and not kept.
* **Tasks without fragment rows** (as in upstream traces where some tasks have none): read
  with a ``opendc-workload.no-fragments`` warning and written without fragments again.

* **The OpenDC 2.x folder** (the ``opendc-vm`` trace format until OpenDC 2.4 renamed its
  files in August 2024: ``OdcVmTraceFormat``, ``ComputeWorkloadLoader``): ``meta.parquet``
  (string VM ``id``, ``start_time``/``stop_time``, ``cpu_count``, ``cpu_capacity``,
  ``mem_capacity``; trace schema v2.0's ``submissionTime``, ``endTime``, ``maxCores``,
  ``requiredMemory``, no capacity) and ``trace.parquet`` (string ``id``, ``timestamp`` or
  ``time``, ``duration``, ``cpu_count`` or ``cores``, ``cpu_usage`` or ``cpuUsage``), read
  as that loader read them (``legacy.py``): a VM is a task numbered 1..n in file order and
  named by its id, submitted at ``start_time`` and running until ``stop_time``, with one
  ``opendc-workload.legacy-layout`` warning; a v2.0 file states no capacity, so its tasks
  state none either (no ``opendc-workload:cpu_capacity``: unknown, as a task from another
  format, written as the default below; never 0 MHz); what it could not read (a column missing or of
  another type, nulls, a VM id twice) is ``opendc-workload.legacy``. Written in today's
  layout; read whole (the 16 MB part-at-a-time path reads today's layout only).

Model mapping
-------------

Each task is its own job (OpenDC has no jobs). ``submission_time`` is absolute (epoch ms,
UTC): dcx keeps the workload's time origin (ISO 8601) in the tasks file's key-value metadata
under ``dcx:time_origin``, so its own files read back on the same axis; a file without it
(one OpenDC's tools wrote) takes its earliest submission as the time origin and submit time
0. A task's runtime is its ``duration``; its CPU usage profile, when it is not one
fragment of the task's duration at the task's capacity, is kept as the
``opendc-workload:fragments`` extra (a list of ``[duration_ms, cpu_usage]`` or
``[duration_ms, cpu_usage, gpu_usage]``; ``[]`` for a task without fragments), which other
formats cannot hold (a derived ``task.extras`` loss). Tasks with the same fragments share
one profile, made once, and the normal form and the writer work on the distinct profiles,
so a workload whose tasks repeat one profile costs what its distinct profiles cost.
``mem_capacity`` is in OpenDC's unit: the loader divides it by 1000 and compares it with
MiB, so dcx writes memory (MB = 2**20 bytes) × 1000; 0 is "no memory asked for".

What dcx writes: ``normal_form(document)``: ids that are not unique 32-bit integers are
renumbered 1..n in workload order (dependencies follow, a ``task.id`` loss); times are
rounded to the millisecond, an unknown or negative runtime is 0, a time origin that is not
ISO 8601 to the millisecond is dropped; a task over several nodes asks for all their cores
and all their memory (``nodes x cores``, ``nodes x memory``: the node count is the
``task.request.nodes`` loss, ``dcx.core.shapes``, but for a request for cores anywhere, whose
split into nodes means nothing); cores are whole (rounded up) and fit INT32,
memory is rounded to 1/1000 MB; ``opendc-workload:`` extras that OpenDC's columns cannot carry are
dropped. A task from another format (without a profile) gets one fragment, its runtime at
its capacity, since OpenDC silently drops a task without one; a task read from an OpenDC
file without fragments keeps none (its ``[]`` profile), so an OpenDC workload converts to
itself without invented fragments. ``cpu_capacity`` is 1000 MHz per core when the model
does not say. Required columns are written non-nullable with exactly the types above.

Checks: both members are present and are Parquet files (``opendc-workload.missing-member``,
``opendc-workload.unreadable``), their columns have the types above with the required ones
present (``schema.*`` at ``/<member>/columns/<column>``), no null in a required column and no
negative duration, count, capacity or memory (at ``/<member>/rows/<row>/<column>``), task ids
are unique and dependencies name tasks in the file without a cycle; a task without fragments
and fragments of no task are reported (OpenDC drops the first and ignores the second).

A folder whose two files total 16 MB or more is read a row group at a time (``stream.py``),
without the input size limit: ``dcx validate`` and ``dcx info`` give the whole reader's
diagnostics and counts, holding the whole file's task ids and dependencies as arrays (16 MB
per million tasks, 8 MB per million dependencies) and each fragments row group's distinct
task ids; ``dcx convert`` to Parquet, SWF, GWF, Batsim or osp-workload reads the tasks a
slice at a time, each with its fragments in file order wherever they are in
fragments.parquet (rows apart or out of the tasks' order cost reading more row groups, and
holding more distinct ids per row group), and writes the whole conversion's output with its
report.

A large SWF, GWF or Parquet trace (16 MB or more) converts to a workload folder a chunk at a
time (``stream_target.py``, with ``codec.part_normal_form`` and
``codec.write_part``): the whole conversion's tables, without the input size limit and
without holding the trace; the tasks' ``children`` are filled in at the end.
"""

from __future__ import annotations

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, PartReader, deferred
from dcx.parsing.trace_codes import dependency_codes

SCHEMA = "opendc-workload.schema.json"
TASKS = "tasks.parquet"
FRAGMENTS = "fragments.parquet"
MEMBERS = (TASKS, FRAGMENTS)
LEGACY_TASKS = "meta.parquet"
LEGACY_FRAGMENTS = "trace.parquet"
LEGACY_MEMBERS = (LEGACY_TASKS, LEGACY_FRAGMENTS)
"""The OpenDC 2.x layout's files (``legacy.py``): read, never written."""
MHZ_PER_CORE = 1000.0
"""``cpu_capacity`` per core when the model does not say (no extra)."""
OWN = "opendc-workload:"
"""The prefix of the extras this format keeps of its own."""

HOLDS = frozenset({
    "workload.time_origin", "task.id", "task.submit_time_s", "task.runtime_s",
    "task.request.cores", "task.request.memory_mb", "task.request.gpus", "task.dependencies",
    "task.dependencies.multiple", "task.deadline_s",
})

FIELD_NAMES: dict[str, str] = {
    "workload.time_origin": "dcx:time_origin metadata (else the earliest submission_time)",
    "task.id": "id", "task.submit_time_s": "submission_time", "task.runtime_s": "duration",
    "task.request.cores": "cpu_count", "task.request.memory_mb": "mem_capacity",
    "task.request.gpus": "gpu_count", "task.dependencies": "parents",
    "task.dependencies.multiple": "parents (several)", "task.deadline_s": "deadline",
    OWN + "name": "name", OWN + "cpu_capacity": "cpu_capacity",
    OWN + "gpu_capacity": "gpu_capacity", OWN + "deferrable": "deferrable",
    OWN + "fragments": "fragments.parquet rows (CPU usage over time)",
}
"""The tasks.parquet and fragments.parquet names of the fields
(``FormatDeclaration.field_names``)."""


def sniff(data: bytes) -> bool:
    from dcx.core.members import sniff as sniff_members

    return sniff_members(data, MEMBERS + LEGACY_MEMBERS)


read = deferred("dcx.formats.opendc_workload.codec", "read")


write = deferred("dcx.formats.opendc_workload.codec", "write")


normal_form = deferred("dcx.formats.opendc_workload.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.opendc_workload.codec", "normal_form_losses")


RUNTIME_NOTE = ("an unknown or negative runtime is written as a duration of 0 ms (OpenDC "
                "needs one), others to the millisecond")
"""What the normal form does to runtimes, said on the ``task.runtime_s`` loss line."""


def loss_notes(document: object) -> dict[str, str]:
    """``FormatDeclaration.loss_notes``: how runtimes are written (the same words for every
    document, so a conversion in slices says what the whole one says)."""
    return {"task.runtime_s": RUNTIME_NOTE}


PARTS = PartReader(
    open=deferred("dcx.formats.opendc_workload.stream", "open_parts"),
    check=deferred("dcx.formats.opendc_workload.stream", "check_part"),
    finish=deferred("dcx.formats.opendc_workload.stream", "finish"),
    reread=deferred("dcx.formats.opendc_workload.stream", "reread_dependencies"),
)


CODES = (
    Code("opendc-workload.archive", "error",
         "The bytes are not a tar archive of the workload folder's files."),
    Code("opendc-workload.missing-member", "error",
         "The folder lacks tasks.parquet or fragments.parquet."),
    Code("opendc-workload.unreadable", "error", "A member is not a Parquet file dcx can read."),
    Code("opendc-workload.duplicate-column", "error",
         "A column given twice, by its name and by an alias."),
    Code("opendc-workload.null", "error", "A required column has a null."),
    Code("opendc-workload.negative", "error",
         "A negative duration, count, capacity or memory."),
    Code("opendc-workload.no-fragments", "warning",
         "Tasks without a row in fragments.parquet: OpenDC silently drops them.",
         conformance=True),
    Code("opendc-workload.unknown-fragment", "warning",
         "Fragments whose id is no task in tasks.parquet: OpenDC ignores them.",
         conformance=True),
    Code("opendc-workload.legacy-layout", "warning",
         "An OpenDC 2.x folder (meta.parquet, trace.parquet), read as OpenDC 2.x read it: "
         "VMs numbered 1..n and named by their string ids, run from start to stop time."),
    Code("opendc-workload.legacy", "error",
         "An OpenDC 2.x file that OpenDC 2.x could not read either: a column missing, of "
         "another type or with nulls, or a VM id given twice."),
    Code("opendc-workload.unwritable", "error",
         "Internal error: the normal form has a value no OpenDC column holds."),
    *dependency_codes("opendc-workload"),
)


FORMAT = FormatDeclaration(
    name="opendc-workload",
    title="OpenDC workload (tasks.parquet, fragments.parquet)",
    family="opendc",
    kind="workload",
    extensions=(),
    content=frozenset({"binary"}),
    schema=SCHEMA,
    description="OpenDC's Parquet workload trace: a folder with tasks.parquet and "
                "fragments.parquet.",
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    loss_notes=loss_notes,
    own_extras=frozenset({"task.extras"}),
    read_members=LEGACY_MEMBERS,
    codes=CODES,
    members=MEMBERS,
    read_parts=PARTS,
    stream_source=deferred("dcx.formats.opendc_workload.stream_source", "OpendcWorkloadSource"),
    stream_target=deferred("dcx.formats.opendc_workload.stream_target", "OpendcWorkloadTarget"),
    field_names=FIELD_NAMES,
)
