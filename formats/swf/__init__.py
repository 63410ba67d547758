"""Standard Workload Format (Parallel Workloads Archive): 18 whitespace-separated fields per
job, ``;`` header comments, ``-1`` where a value is unknown.

Mapping (one SWF line = one :class:`Job` holding one :class:`Task`, both with the job number):

* **Processors.** An SWF job is a rigid parallel job that asks for P interchangeable
  processors, which the machine may spread over nodes. So the request is ``nodes = P`` with
  ``cores = 1`` per node: a scheduler on multi-core machines may place the P processes on any
  machines with free cores, and a 32-processor job still fits a cluster of 4-core machines.
  The request's placement is ``Placement.CORES`` (cores anywhere), what PWA-based
  simulators read; a whole-node request of another format is written as its processors,
  its placement a value restriction of the normal form (``task.request.placement``).
  P is the *allocated* count (field 5, what the job really ran on, like the runtime is the real
  runtime); when it is unknown (-1) or 0 the requested count (field 8) is used and the
  allocated value is kept as ``swf:AllocatedProcessors``. The requested count is kept as
  ``swf:RequestedProcessors`` only when it differs from P. A line with neither is an error.
  GWF's ReqNProcs and NProcs -1 are these columns (``gwf:ReqNProcs``, ``gwf:NProcs``): written
  here, not lost (``dcx.core.counterparts``).
* **Times.** Submit time → ``submit_time_s``; run time → ``runtime_s``; requested time →
  ``requested_time_s``; -1 → ``None``. SWF times are whole seconds: dcx reads decimals
  leniently but writes whole seconds (see What dcx writes).
* **Memory.** Requested memory is KB per processor, so per node (one processor)
  ``memory_mb = RequestedMemory / 1024``. Used memory (field 7, KB per processor) →
  ``used_memory_mb = UsedMemory / 1024``, per core (a processor).
* **Ids and users.** Job numbers are integers; dcx also reads text ids (an ASCII letter or
  ``_`` first, no whitespace), which the archive's tools do not, and writes them numbered
  1..n. User and group ids → ``Task.user`` / ``Task.group`` as written (``007`` stays
  ``007``); user and group names that cannot be mistaken for numbers are read, and written
  as numbers (the PWA's tools and AccaSim parse integers): each name's number is made from
  the name alone (a hash, from 10**12 up), the same in every file and every chunk of a
  streamed conversion, and the loss line of ``task.user`` / ``task.group`` says it
  (``alice → 1679078337430``).
* **Memory** is written in whole KB (requested and used), rounded half up: a value that is
  not a whole KB is a ``task.request.memory_mb`` or ``task.used_memory_mb`` loss.
* **Cores.** An SWF processor is one single-core node, so a request for several cores per
  node is written as its total cores: ``nodes x cores`` processors (rounded up), with the
  memory per processor that keeps the job's total memory (``dcx.core.shapes``). A 64-core GWF
  task is a 64-processor SWF job. The cores per node are lost (reported as
  ``task.request.cores``, with the processor count and memory values it changes), except
  for a request for cores anywhere (GWF's), whose split into nodes means nothing: only its
  totals, which the processors keep.
* **Dependencies.** Preceding job number (field 17) → ``dependencies`` when that job is in the
  file; think time (field 18) → ``think_time_s``. A preceding job outside the file (a trace
  excerpt) is kept as ``swf:PrecedingJobNumber`` with a warning instead of failing the file.
* **What the trace recorded**, -1 unknown: wait time (field 3) → ``wait_time_s``; average
  CPU time used (field 6) → ``cpu_time_s``; status (field 11) → ``status``: 1 completed, 0
  failed, 5 cancelled, and for a job split into partial executions 2 (continued: unknown), 3
  (completed), 4 (failed), any other code unknown; a code the status does not give back
  (2, 3, 4, 6…) is kept beside it as ``swf:Status`` and written back; a job killed at its
  limit is written as failed (0, a ``task.status`` loss). Executable, queue and partition
  numbers (fields 14-16) → ``application``, ``queue``, ``partition`` as decimal text (``07``
  reads as ``7``); one that is no integer >= 0 is unknown in the normal form (a loss). Think
  time (field 18) → ``think_time_s``. Wait and think times are written in whole seconds
  (rounded half up, like the other times).
* **Header.** ``; Key: value`` lines → ``Workload.attributes``. A value spelled exactly as a
  JSON number, boolean, null or quoted string is read as that value (``MaxJobs: 8`` → 8), any
  other text as a string; the writer quotes strings that would otherwise read back as
  something else. A key given several times (``Note``, ``Queue``) becomes a list.
  ``UnixStartTime`` becomes ``Workload.time_origin`` (UTC, ``YYYY-MM-DDTHH:MM:SSZ``) instead of
  an attribute; other comment lines are kept in ``Workload.extras["swf:comments"]``.

What dcx writes: ``normal_form(document)`` and nothing else (``write`` is serialisation
only). Values SWF cannot hold are value restrictions of the normal form, reported by the
derived losses: job ids that are not all integers >= 0 (all tasks renumbered 1..n, in the
written order, preceding jobs following them: ``task.id``), users and groups that are not
numbers (written as numbers, see above), negative or non-finite times (unknown; a submit
time 0), times that are not whole seconds (``task.submit_time_s`` and ``task.runtime_s``
rounded half up to the nearest second; ``task.requested_time_s`` rounded up, so that a limit
never falls below the runtime it bounded), a time origin that is not whole seconds after
1970, the UTC offset of a time origin (``+02:00``: ``UnixStartTime`` is the same instant in
seconds, and ``TimeZoneString`` names a zoneinfo zone such as ``Europe/Amsterdam``, which an
offset alone does not tell; the loss line says the offset), header fields and comments that
would not read back as themselves, ``swf:`` extras that do not fit their field. A job
number given as decimal text (``"12"``) is written as that number and reads back as the
integer. Jobs are written in ascending submit time, as the
PWA definition orders a file's lines (a stable sort: ties keep their order); when the sort
moves jobs whose numbers then would not count up, all are numbered 1..n in that order
(``task.id``), so a job number stays the counter of the lines that preceding job numbers
refer to. ``dcx convert --id-map FILE`` writes, beside the output, a CSV of each task's id
as read and the number written for it (``FORMAT.written_ids``). Like GWF, ``-1`` for an
unknown runtime is no warning: the scheduler reports a task it cannot run.

Large files (1 MB and more) are first read by a vectorised accept path: chunks of plain
numeric job lines are converted column by column (numpy, Arrow's CSV reader) into a
workload held as columns (``dcx.core.columns``). It only accepts: at anything the line-by-line
reader would report, or could read differently (text ids, signs other than ``-1``, tokens of
16 or more characters, header lines after the first job line), the whole file is read line by
line, which gives every diagnostic with its line. Both give the same document.

Traces larger than memory are checked in chunks (``read_chunks``, ``stream.py``):
``dcx validate`` (and ``dcx info``, which counts the jobs, tasks and dependencies on the way)
reads an SWF input of 16 MB or more, or a pipe that outgrows 16 MB
(``generator | dcx validate -``), a few MB of whole lines at a time, so the input size limit
does not apply. Each chunk takes the vectorised path, or is read line by line where it gives
up, with its line numbers counted from the start of the file. Between chunks only the
header, the error count, the job numbers (as ranges while they count up by one, as the
archives number jobs; otherwise 8 bytes each) and the jobs that name a preceding job are
kept, so memory does not grow with the trace. The diagnostics are the line-by-line reader's,
in its order, byte for byte. ``dcx convert`` to Parquet, SWF or GWF converts the same inputs in
chunks (``dcx.converters.stream_convert``): each chunk, checked as above and read by the
whole-file reader, becomes one Parquet row group or its SWF or GWF lines, so the trace's
length does not bound it either; a job whose preceding job is another chunk's keeps it as
its dependency, GWF's variant is the one the whole trace's fields choose (a file is read
again when its first chunk's choose the other; a pipe stops), and job numbers that mix
integers and text, or are text (which the whole file would renumber), stop it
(``convert.not-streamable``); so do, converting to SWF, a chunk whose jobs the whole file
would number again, and a job submitted before one of an earlier chunk (SWF lines are in
submit-time order, which the whole file would sort). To Batsim and osp-workload JSON it
converts them in chunks too (their formats' ``stream_target.py``), and to an OpenDC
workload folder; other targets still read the
whole input (up to the input size limit).

**Trailing fields.** A job line with more than 18 fields (Alea's traces add three) is read
from its first 18; the fields after them are kept, as their texts, in
``Task.extras["swf:TrailingFields"]`` and written back after the 18th, with one
``swf.trailing-fields`` warning for the file (PWA tools read 18 fields).

Checks: 18 numeric fields per line (located at the field, pointer
``/lines/<line number>/<field name>``; each line's record is described by
``schemas/swf.schema.json``), -1 as the only negative value, duplicate job numbers, and
dependency cycles through preceding jobs.

Divergences
-----------

1. The PWA definition says processors may count nodes or cores depending on the machine;
   dcx always treats them as single-core units (see above).
2. ``haizea-swf2lwf`` takes the *requested* processor count (allocated when requested is
   -1); dcx takes the allocated count and keeps the requested one in extras.
3. The PWA definition has numeric user, group and job ids, and whole seconds, only; dcx
   also reads text job ids and decimal times (lenient reading), and writes job numbers and
   times as the definition says; user and group names are read, and written as numbers made
   from them (see above).
4. Haizea's ``traces/undocumented/test_cancel.swf`` reuses job number 0 on every line; dcx
   rejects duplicate job numbers (``swf.duplicate-id``) because tasks need unique ids.
"""


from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded
from dcx.parsing.trace_codes import dependency_codes, text_codes
from dcx.parsing.trace_tokens import parse_int

__all__ = [
    "CHUNK_BYTES", "CODES", "COLUMNS", "COMMENTS_KEY", "FAST_KINDS", "FAST_READ_BYTES",
    "FIELD_NAMES", "FORMAT",
    "HOLDS", "SCHEMA", "START_KEY", "attribute_text", "attribute_value", "loss_notes",
    "normal_form",
    "normal_form_losses", "read", "read_chunks", "read_fast", "sniff", "write", "written_ids",
]

# The reader, the writer and what they import (the model, dcx.core.columns, the schemas) load
# on first use: the pre-commit hook imports every format's declaration to sniff.
_LAZY = {
    name: "codec" for name in (
        "CHUNK_BYTES", "COMMENTS_KEY", "FAST_KINDS", "FAST_READ_BYTES", "SCHEMA", "START_KEY",
        "attribute_text", "attribute_value", "read_fast",
    )
}


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


COLUMNS: tuple[str, ...] = (
    "JobNumber", "SubmitTime", "WaitTime", "RunTime", "AllocatedProcessors",
    "AverageCPUTime", "UsedMemory", "RequestedProcessors", "RequestedTime", "RequestedMemory",
    "Status", "UserID", "GroupID", "ExecutableNumber", "QueueNumber", "PartitionNumber",
    "PrecedingJobNumber", "ThinkTime",
)

# ``swf:`` extras (fields without a model field, header comments) are the format's own and
# survive; plain extras keys have no place in an SWF file, so no ``*.extras`` path is held.
HOLDS = frozenset({
    "workload.time_origin", "workload.attributes", "task.id", "task.submit_time_s",
    "task.runtime_s", "task.requested_time_s", "task.request.nodes", "task.request.memory_mb",
    "task.dependencies", "task.user", "task.group", "task.request.placement", "task.status",
    "task.wait_time_s", "task.used_memory_mb", "task.cpu_time_s", "task.application",
    "task.queue", "task.partition", "task.think_time_s",
})

FIELD_NAMES: dict[str, str] = {
    "task.id": "Job Number (field 1)",
    "task.submit_time_s": "Submit Time (field 2)",
    "task.wait_time_s": "Wait Time (field 3)",
    "task.runtime_s": "Run Time (field 4)",
    "task.request.nodes": "Number of Allocated Processors (field 5)",
    "task.cpu_time_s": "Average CPU Time Used (field 6)",
    "task.used_memory_mb": "Used Memory (field 7)",
    "task.requested_time_s": "Requested Time (field 9)",
    "task.request.memory_mb": "Requested Memory (field 10)",
    "task.status": "Status (field 11)",
    "task.user": "User ID (field 12)",
    "task.group": "Group ID (field 13)",
    "task.application": "Executable (Application) Number (field 14)",
    "task.queue": "Queue Number (field 15)",
    "task.partition": "Partition Number (field 16)",
    "task.dependencies": "Preceding Job Number (field 17)",
    "task.think_time_s": "Think Time from Preceding Job (field 18)",
    "task.request.placement": "processors (cores anywhere)",
    "workload.time_origin": "UnixStartTime header",
    "workload.attributes": "header fields",
    "swf:AllocatedProcessors": "Number of Allocated Processors (field 5)",
    "swf:RequestedProcessors": "Requested Number of Processors (field 8)",
    "swf:Status": "Status (field 11), a partial execution's code",
    "swf:PrecedingJobNumber": "Preceding Job Number (field 17), a job not in the file",
    "swf:TrailingFields": "fields after the 18th",
    "swf:comments": "header comments",
}
"""The PWA definition's names of the fields (``FormatDeclaration.field_names``)."""


MOST_FIELDS_SNIFFED = 21
"""The most fields of a headerless file's first job line that sniffing takes for SWF (Alea's
traces add three after the 18th; GWF's archive lines have 29)."""


def sniff(data: bytes) -> bool:
    head = data[:4096].decode("utf-8", "replace")
    lines = head.split("\n")
    if len(data) > 4096:
        lines = lines[:-1]
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            return True
        tokens = line.split()
        return len(COLUMNS) <= len(tokens) <= MOST_FIELDS_SNIFFED \
            and parse_int(tokens[0]) is not None
    return False


read = deferred("dcx.formats.swf.codec", "read")


write = deferred("dcx.formats.swf.codec", "write")


normal_form = deferred("dcx.formats.swf.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.swf.codec", "normal_form_losses")


read_chunks = deferred("dcx.formats.swf.stream", "read_chunks")


loss_notes = deferred("dcx.formats.swf.codec", "loss_notes")
written_ids = deferred("dcx.formats.swf.codec", "written_task_ids")


CODES = (
    Code("swf.empty", "error", "The file is empty."),
    Code("swf.field-count", "error", "A job line does not have 18 whitespace-separated fields."),
    Code("swf.record", "error",
         "A job line does not match the SWF record schema (a value of the wrong kind)."),
    Code("swf.unknown-processors", "error",
         "A job has neither an allocated nor a requested processor count."),
    Code("swf.start-time", "error", "The UnixStartTime header is not a count of seconds."),
    Code("swf.preceding-job-missing", "warning",
         "A job follows a preceding job that is not in the file (a trace excerpt); the "
         "dependency is kept in extras only."),
    Code("swf.no-jobs", "warning", "The file has no job lines."),
    Code("swf.trailing-fields", "warning",
         "Job lines have fields after the 18th (Alea's traces); they are kept as "
         "swf:TrailingFields and written back, once for the whole file."),
    *text_codes("swf", "SWF"),
    *dependency_codes("swf", "job"),
)


FORMAT = FormatDeclaration(
    name="swf",
    title="Standard Workload Format (Parallel Workloads Archive)",
    family="trace",
    kind="workload",
    extensions=(".swf",),
    content=frozenset({"text"}),
    schema="swf.schema.json",
    description=("18-field job traces with ';' header comments."),
    # swf: keys of tasks (fields without a model field) and of the workload (header comments)
    own_extras=frozenset({"task.extras", "workload.extras"}),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    codes=CODES,
    read_chunks=read_chunks,
    stream_source=deferred("dcx.formats.swf.stream_source", "SwfSource"),
    stream_target=deferred("dcx.formats.swf.stream_target", "SwfTarget"),
    field_names=FIELD_NAMES,
    loss_notes=loss_notes,
    written_ids=written_ids,
)
