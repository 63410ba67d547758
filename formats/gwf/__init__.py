"""Grid Workloads Format: the 29-column archive format and the 7-column workflow variant.

Two variants share the ``.gwf`` extension:

``workflow`` (what the SC18 simulator reads)
    Comma-separated, one header line
    ``WorkflowID, JobID, SubmitTime, RunTime, NProcs, ReqNProcs, Dependencies``, one task per
    line, values space-padded. WorkflowID is the :class:`~dcx.core.model.Job`, JobID the
    trace-wide :class:`~dcx.core.model.Task` id, NProcs the cores on one node, RunTime the
    real runtime and Dependencies a space-separated list of task ids.

``archive`` (Grid Workloads Archive)
    Whitespace-separated, ``#`` comment lines, 29 columns, ``-1`` where unknown. Each line is
    a single-task job whose job id is its task id. Columns the model has fields for map onto
    them (RunTime, NProcs, ReqTime, ReqMemory, UserID, GroupID, and what the trace recorded:
    WaitTime → ``wait_time_s``, AverageCPUTimeUsed → ``cpu_time_s``, UsedMemory (KB per
    processor) → ``used_memory_mb`` per core, Status → ``status`` with SWF's codes,
    ExecutableID, QueueID, PartitionID → ``application``, ``queue``, ``partition`` as decimal
    text); every other known column is kept in ``Task.extras`` under ``gwf:<column name>``
    unless it is ``-1``, and so is a Status code the status does not give back
    (``gwf:Status``: a partial execution's 2, 3, 4, or another code).

Mapping details shared by both variants:

* ``-1`` in RunTime means unknown (``runtime_s = None``), as in the archive and in SWF; any
  other negative runtime is an error. Whether a task without a runtime can be scheduled is
  the scheduler's question (``schedule.missing-runtime``), not the file's.
* NProcs ``-1`` (allocated count unknown) takes the cores from ReqNProcs and keeps
  ``gwf:NProcs = -1``; ReqNProcs is kept as ``gwf:ReqNProcs`` only when it differs from NProcs.
  SWF's requested count (field 8) and allocated -1 (field 5) are these columns
  (``swf:RequestedProcessors``, ``swf:AllocatedProcessors``): written here, not lost
  (``dcx.core.counterparts``).
* ReqMemory is KB per processor; the model's ``request.memory_mb`` is per node, so
  ``memory_mb = ReqMemory x NProcs / 1024``.
* Ids are non-negative integers, as the archives and SC18 write them. dcx also reads text ids
  that cannot be mistaken for numbers (``t1``, ``task-7``: starting with an ASCII letter or
  ``_``, without whitespace, commas or semicolons), with a ``gwf.text-ids`` warning because
  SC18 cannot read them; it never writes them.
* Processors are cores anywhere (``Placement.CORES``), as SC18 and the PWA-based simulators
  read them; a whole-node request of another format is written as its cores, its placement
  a value restriction of the normal form (``task.request.placement``).
* Nodes are not held: a task runs on one node, so a multi-node request is written as the
  cores of one node, ``nodes x cores`` (rounded up), with that node's memory the job's total
  (``dcx.core.shapes``): a 64-processor SWF job is a 64-core GWF task. The node count is lost
  (reported as ``task.request.nodes``, with the cores and memory values it changes), except
  for a request for cores anywhere, whose split into nodes means nothing (SWF's processors:
  nothing is lost).
* Plain (free-form) extras keys have no column, so ``task.extras`` is not held; ``gwf:`` keys
  are the format's own and survive.

What dcx writes
---------------

``HOLDS`` is everything the format can carry: the union of the two variants. What the variant
written cannot carry is a value restriction of ``normal_form`` (``dcx.core.restrict``), so the
derived losses report it. The writer serialises ``normal_form(document)`` and nothing else:

* **Variant.** The workflow variant (the one SC18 reads) unless the archive variant keeps
  more of the document: the archive is chosen when the field paths only it can write
  (requested time, memory, user, group, archive columns) outnumber those only the workflow
  variant can write (tasks grouped into jobs, dependencies); a tie keeps the workflow variant.
  A file of either variant is written back as the same document (an archive file whose
  archive-only columns are all unknown, as a workflow file).
* **Ids.** Task ids are kept when every one is an integer >= 0 (or the decimal text of one,
  from a format whose ids are strings: it reads back as that integer) and they are unique;
  otherwise the tasks are renumbered 1..n in workload order (a ``task.id`` loss) and
  dependencies follow. Workflow ids likewise, renumbered 0..m-1 (a ``job`` loss).
* **Recorded fields.** Only the archive variant has columns for them (they count for the
  archive in the choice of variant); a job killed at its limit is written as failed (0), an
  application, queue or partition that is no integer >= 0 is unknown.
* **Values.** Cores are whole numbers >= 1 (rounded up); a negative or non-finite time is
  unknown (a submit time 0); a user or group that is not a decimal number is unknown; memory is
  what its KB-per-processor column reads back as; ``gwf:`` extras that do not fit their column
  (or that the variant has no column for) are dropped; dependencies on tasks outside the
  workload are dropped.

A workload held as columns (what the accept path below reads) is written a column at a time
(``columnar.py``), with the same bytes, and its normal form is checked column by column;
one that needs renumbering or dropping is written task by task.

Each parsed line is a *record* described by ``schemas/gwf.schema.json``. Records are checked
field by field in Python with the column rules of ``rules.py``; a line that fails is validated
against the schema for the detailed message. Diagnostics point at
``/lines/<line number>/<column name>`` (the token is the 1-based line number, the same as
``line``) and carry the field's column in the line. Files of 1 MB and more first try a
vectorised accept path (``fast.py``: the same rules on whole columns, dependencies held as
offsets, the workload as columns); it answers only for a file the line-by-line reader reads
without any diagnostic, and hands every other file to it.

Traces larger than memory are checked in chunks (``read_chunks``, ``stream.py``): ``dcx
validate`` and ``dcx info`` (which counts the jobs, tasks and dependencies on the way) do so
for a file of 16 MB or more and a pipe that outgrows 16 MB. Each chunk's
task lines take the same accept path, or the line-by-line reader where it gives up; the
checks across lines (repeated ids, dependencies on tasks not in the file, cycles, the
workflows each task joins) run once at the end on compact numbers kept per task, with the
whole-file reader's diagnostics, byte for byte. A file whose ids go up and whose tasks
depend only on earlier lines keeps nothing per task when its ids count up by one. ``dcx
convert`` to Parquet, GWF or SWF converts the same inputs in chunks
(``dcx.converters.stream_convert``): each chunk, checked as above, is read as the whole file
reads it (``codec.read_part``) and written as one part (a row group, or task lines in the
file's variant: ``codec.write_part``), with the whole-file conversion's bytes; a dependency
on another chunk's task is kept, a workflow continued in the next chunk stays one job, and a
workflow whose tasks are apart, or text ids, stop it (``convert.not-streamable``). To
Batsim and osp-workload JSON it converts them in chunks too (their formats'
``stream_target.py``), and to an OpenDC workload folder.

Divergences
-----------

1. sc18 drops the first line unconditionally; dcx drops it only when it is the header (a
   first data line is read, with a ``gwf.no-header`` warning saying sc18 would lose it).
2. sc18 crashes on an unknown dependency id and hangs (never schedules) on a cycle; the
   2018 Python loader silently drops unknown ids. dcx reports both as located errors.
3. sc18 does not clamp negative runtimes (the 2020 OpenDC reader clamps them at 0); dcx
   reads ``-1`` as unknown (the Grid Workloads Archive convention) and rejects any other
   negative value.
4. sc18 ignores ReqNProcs; dcx keeps it (in extras when it differs from NProcs).
"""

from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded
from dcx.parsing.trace_codes import dependency_codes, text_codes
from dcx.parsing.trace_tokens import parse_int

__all__ = [
    "ARCHIVE_COLUMNS", "CODES", "EXTRA_PREFIX", "FIELD_NAMES", "FORMAT", "HOLDS", "HOLDS_ARCHIVE",
    "HOLDS_WORKFLOW", "MAX_ERRORS", "SCHEMA", "WORKFLOW_COLUMNS", "Variant", "normal_form",
    "normal_form_losses", "read", "read_chunks", "sniff", "variant_of", "write",
]

# The reader, the writer and what they import (the model, the schemas) load on first use: the
# pre-commit hook imports every format's declaration to sniff.
_LAZY = {
    name: "codec" for name in (
        "EXTRA_PREFIX", "MAX_ERRORS", "SCHEMA", "Variant", "variant_of",
    )
}


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


WORKFLOW_COLUMNS: tuple[str, ...] = (
    "WorkflowID", "JobID", "SubmitTime", "RunTime", "NProcs", "ReqNProcs", "Dependencies",
)
ARCHIVE_COLUMNS: tuple[str, ...] = (
    "JobID", "SubmitTime", "WaitTime", "RunTime", "NProcs", "AverageCPUTimeUsed",
    "UsedMemory", "ReqNProcs", "ReqTime", "ReqMemory", "Status", "UserID", "GroupID",
    "ExecutableID", "QueueID", "PartitionID", "OrigSiteID", "LastRunSiteID", "JobStructure",
    "JobStructureParams", "UsedNetwork", "UsedLocalDiskSpace", "UsedResources", "ReqPlatform",
    "ReqNetwork", "ReqLocalDiskSpace", "ReqResources", "VOID", "ProjectID",
)

# ``gwf:`` extras survive any GWF round trip (they are the format's own); plain extras keys
# have no place in either variant, so ``task.extras`` is not held.
HOLDS_WORKFLOW = frozenset({
    "job", "task.id", "task.submit_time_s", "task.runtime_s", "task.request.cores",
    "task.dependencies", "task.dependencies.multiple", "task.request.placement",
})
HOLDS_ARCHIVE = frozenset({
    "task.id", "task.submit_time_s", "task.runtime_s", "task.requested_time_s",
    "task.request.cores", "task.request.memory_mb", "task.user", "task.group",
    "task.request.placement", "task.status", "task.wait_time_s", "task.used_memory_mb",
    "task.cpu_time_s", "task.application", "task.queue", "task.partition",
})
HOLDS: frozenset[str] = HOLDS_WORKFLOW | HOLDS_ARCHIVE
"""Everything a GWF file can carry; what the variant written cannot is in ``normal_form``."""

_MAPPED_COLUMNS = {
    "task.id": "JobID", "task.submit_time_s": "SubmitTime", "task.wait_time_s": "WaitTime",
    "task.runtime_s": "RunTime", "task.request.cores": "NProcs",
    "task.cpu_time_s": "AverageCPUTimeUsed", "task.used_memory_mb": "UsedMemory",
    "task.requested_time_s": "ReqTime", "task.request.memory_mb": "ReqMemory",
    "task.status": "Status", "task.user": "UserID", "task.group": "GroupID",
    "task.application": "ExecutableID", "task.queue": "QueueID",
    "task.partition": "PartitionID", "job": "WorkflowID", "task.dependencies": "Dependencies",
    "task.dependencies.multiple": "Dependencies (several)",
    "task.request.placement": "NProcs (cores anywhere)",
}
FIELD_NAMES: dict[str, str] = {
    **_MAPPED_COLUMNS,
    **{"gwf:" + name: name for name in ARCHIVE_COLUMNS if name not in _MAPPED_COLUMNS.values()},
    "gwf:NProcs": "NProcs (-1)", "gwf:Status": "Status, a partial execution's code",
}
"""The GWA columns' names of the fields (``FormatDeclaration.field_names``)."""

# --------------------------------------------------------------------------- sniff


def sniff(data: bytes) -> bool:
    head = data[:4096].decode("utf-8", "replace")
    for raw in head.split("\n")[:-1] if len(data) > 4096 else head.split("\n"):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("WorkflowID") or _looks_archive(line):
            return True
        fields = line.split(",")
        return len(fields) >= 7 and all(parse_int(f.strip()) is not None for f in fields[:2])
    return False


def _looks_archive(line: str) -> bool:
    """29 whitespace-separated tokens starting with an integer job id (a workflow line's
    first token ends in a comma)."""
    tokens = line.split()
    return len(tokens) == len(ARCHIVE_COLUMNS) and parse_int(tokens[0]) is not None


read = deferred("dcx.formats.gwf.codec", "read")


write = deferred("dcx.formats.gwf.codec", "write")


normal_form = deferred("dcx.formats.gwf.codec", "normal_form")


read_chunks = deferred("dcx.formats.gwf.stream", "read_chunks")


normal_form_losses = deferred("dcx.formats.gwf.codec", "normal_form_losses")


CODES = (
    Code("gwf.empty", "error", "The file is empty."),
    Code("gwf.field-count", "error",
         "A line has too few fields: 7 comma-separated (workflow) or 29 (archive)."),
    Code("gwf.record", "error",
         "A line does not match the GWF record schema (a value of the wrong kind)."),
    Code("gwf.unknown-processors", "error",
         "A task has neither NProcs nor ReqNProcs (both -1): its cores are unknown."),
    Code("gwf.no-header", "warning",
         "The workflow file has no header line: SC18 drops its first line unread, a task.",
         conformance=True),
    Code("gwf.text-ids", "warning",
         "Some ids are text: SC18 and the archive tools parse integers.", conformance=True),
    Code("gwf.extra-fields", "warning",
         "A workflow line has more than 7 fields; the rest are ignored, as SC18 does."),
    Code("gwf.no-tasks", "warning", "The file has no task lines."),
    *text_codes("gwf", "GWF"),
    *dependency_codes("gwf"),
)


FORMAT = FormatDeclaration(
    name="gwf",
    title="Grid Workloads Format (GWA and simplified 7-column)",
    family="trace",
    kind="workload",
    extensions=(".gwf",),
    content=frozenset({"text"}),
    schema="gwf.schema.json",
    description=("Grid Workloads Archive traces: the 29-column archive format and the "
                 "comma-separated 7-column workflow variant the SC18 simulator reads."),
    own_extras=frozenset({"task.extras"}),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    read_chunks=read_chunks,
    codes=CODES,
    stream_source=deferred("dcx.formats.gwf.stream_source", "GwfSource"),
    stream_target=deferred("dcx.formats.gwf.stream_target", "GwfTarget"),
    field_names=FIELD_NAMES,
)
