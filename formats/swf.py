"""Standard Workload Format (Parallel Workloads Archive): 18 whitespace-separated fields per
job, ``;`` header comments, ``-1`` where a value is unknown.

Mapping (one SWF line = one :class:`Job` holding one :class:`Task`, both with the job number):

* **Processors.** An SWF job is a rigid parallel job that asks for P interchangeable
  processors, which the machine may spread over nodes. So the request is ``nodes = P`` with
  ``cores = 1`` per node: a scheduler on multi-core machines may place the P processes on any
  machines with free cores, and a 32-processor job still fits a cluster of 4-core machines.
  P is the *allocated* count (field 5, what the job really ran on, like the runtime is the real
  runtime); when it is unknown (-1) or 0 the requested count (field 8) is used and the
  allocated value is kept as ``swf:AllocatedProcessors``. The requested count is kept as
  ``swf:RequestedProcessors`` only when it differs from P. A line with neither is an error.
* **Times.** Submit time → ``submit_time_s``; run time → ``runtime_s``; requested time →
  ``requested_time_s``; -1 → ``None``.
* **Memory.** Requested memory is KB per processor, so per node (one processor)
  ``memory_mb = RequestedMemory / 1024``. Used memory stays in extras (KB, as in the file).
* **Ids and users.** Job numbers are integers; dcx also reads and writes text ids and user
  names that cannot be mistaken for numbers (an ASCII letter or ``_`` first, no whitespace),
  which the archive's tools do not. User and group ids → ``Task.user`` / ``Task.group`` as
  written (``007`` stays ``007``).
* **Cores.** Not held: an SWF processor is one single-core node, so a request's per-node cores
  drop to 1 (the model's normal form, reported as a loss).
* **Dependencies.** Preceding job number (field 17) → ``dependencies`` when that job is in the
  file; think time (field 18) → ``swf:ThinkTime``. A preceding job outside the file (a trace
  excerpt) is kept as ``swf:PrecedingJobNumber`` with a warning instead of failing the file.
* **Other fields** (wait time, average CPU time, used memory, status, executable, queue,
  partition) → ``Task.extras`` as ``swf:<field name>`` unless -1.
* **Header.** ``; Key: value`` lines → ``Workload.attributes``. A value spelled exactly as a
  JSON number, boolean, null or quoted string is read as that value (``MaxJobs: 8`` → 8), any
  other text as a string; the writer quotes strings that would otherwise read back as
  something else. A key given several times (``Note``, ``Queue``) becomes a list.
  ``UnixStartTime`` becomes ``Workload.time_origin`` (UTC, ``YYYY-MM-DDTHH:MM:SSZ``) instead of
  an attribute; other comment lines are kept in ``Workload.extras["swf:comments"]``.

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
3. The PWA definition has numeric user, group and job ids only; dcx also accepts names (see
   above) so that models from other formats keep theirs.
4. Haizea's ``traces/undocumented/test_cancel.swf`` reuses job number 0 on every line; dcx
   rejects duplicate job numbers (``swf.duplicate-id``) because tasks need unique ids.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import (
    Diagnostic,
    LossCounter,
    ReadResult,
    WriteResult,
    error,
    warning,
)
from dcx.core.limits import paused_gc
from dcx.core.model import Document, Id, Job, ResourceRequest, Task, Workload
from dcx.formats.gwf import (
    MAX_ERRORS,
    count_workload_losses,
    decode_text,
    dependency_diagnostics,
    format_number,
    is_id_token,
    is_trace_id,
    parse_int,
    parse_number,
    task_numbering,
    unheld_task_fields,
)
from dcx.parsing.schemas import load_schema, schema_diagnostics

SCHEMA = "swf.schema.json"

COLUMNS: tuple[str, ...] = (
    "JobNumber", "SubmitTime", "WaitTime", "RunTime", "AllocatedProcessors",
    "AverageCPUTime", "UsedMemory", "RequestedProcessors", "RequestedTime", "RequestedMemory",
    "Status", "UserID", "GroupID", "ExecutableNumber", "QueueNumber", "PartitionNumber",
    "PrecedingJobNumber", "ThinkTime",
)
_INTEGERS = frozenset({
    "JobNumber", "AllocatedProcessors", "RequestedProcessors", "Status", "UserID", "GroupID",
    "ExecutableNumber", "QueueNumber", "PartitionNumber", "PrecedingJobNumber",
})
_TEXT_IDS = frozenset({"JobNumber", "PrecedingJobNumber", "UserID", "GroupID"})
_USER_COLUMN = COLUMNS.index("UserID")
_GROUP_COLUMN = COLUMNS.index("GroupID")
_EXTRA_COLUMNS = ("WaitTime", "AverageCPUTime", "UsedMemory", "Status", "ExecutableNumber",
                  "QueueNumber", "PartitionNumber", "ThinkTime")
_EXTRA_KEYS = frozenset("swf:" + name for name in _EXTRA_COLUMNS)
_PROCESSOR_EXTRAS = frozenset({"swf:AllocatedProcessors", "swf:RequestedProcessors",
                               "swf:PrecedingJobNumber"})
COMMENTS_KEY = "swf:comments"
START_KEY = "UnixStartTime"

# ``swf:`` extras (fields without a model field, header comments) are the format's own and
# survive; plain extras keys have no place in an SWF file, so no ``*.extras`` path is held.
HOLDS = frozenset({
    "workload.time_origin", "workload.attributes", "task.id", "task.submit_time_s",
    "task.runtime_s", "task.requested_time_s", "task.request.nodes", "task.request.memory_mb",
    "task.dependencies", "task.user", "task.group",
})

_HEADER_FIELD = re.compile(r";\s*([A-Za-z][A-Za-z0-9_-]*)\s*:\s?(.*)")
_DECIMAL_DIGITS = re.compile(r"[0-9]{1,18}")


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
        return len(tokens) == len(COLUMNS) and parse_int(tokens[0]) is not None
    return False


# --------------------------------------------------------------------------- read


class _Reader:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.diagnostics: list[Diagnostic] = []
        self.errors = 0

    def report(self, diagnostic: Diagnostic) -> None:
        if diagnostic.is_error:
            self.errors += 1
        if self.errors <= MAX_ERRORS:
            self.diagnostics.append(diagnostic)

    @property
    def stopped(self) -> bool:
        return self.errors > MAX_ERRORS

    def locate(self, line_number: int, column_name: str) -> dict[str, Any]:
        spans = [m.start() for m in re.finditer(r"\S+", self.lines[line_number - 1])]
        field = COLUMNS.index(column_name)
        return {"line": line_number, "column": spans[field] + 1 if field < len(spans) else 1,
                "pointer": f"/lines/{line_number}/{column_name}"}

    def record_errors(self, line_number: int, record: dict[str, Any]) -> None:
        found = schema_diagnostics(SCHEMA, record, base_pointer=f"/lines/{line_number}")
        if not found:
            found = [error("line does not match the SWF record schema", "swf.record",
                           pointer=f"/lines/{line_number}")]
        definitions = load_schema(SCHEMA)["$defs"]
        properties = load_schema(SCHEMA)["properties"]
        for diagnostic in found:
            name = diagnostic.pointer.split("/")[3] if diagnostic.pointer.count("/") > 2 else ""
            if name not in record:
                self.report(error(diagnostic.message, diagnostic.code, line=line_number,
                                  column=1, pointer=diagnostic.pointer))
                continue
            reference = properties[name].get("$ref", "").rsplit("/", 1)[-1]
            expected = definitions.get(reference, {}).get("description")
            message = (f"{name} is {record[name]!r}; expected {expected}" if expected
                       else diagnostic.message)
            self.report(error(message, diagnostic.code, **self.locate(line_number, name)))


def read(data: bytes) -> ReadResult:
    with paused_gc():
        return _read(data)


def _read(data: bytes) -> ReadResult:
    text, problem = decode_text(data, "swf")
    if problem is not None:
        return ReadResult(None, (problem,))
    assert text is not None
    if not text:  # blank lines alone are an (empty) SWF file, as the writer writes one
        return ReadResult(None, (error("file is empty", "swf.empty", line=1, column=1),))
    reader = _Reader(text.split("\n"))
    attributes: dict[str, Any] = {}
    comments: list[str] = []
    time_origin: str | None = None
    tasks: list[tuple[int, Task, int | None]] = []
    for index, raw in enumerate(reader.lines):
        if reader.stopped:
            break
        stripped = raw.strip()
        if not stripped:
            continue
        line_number = index + 1
        if stripped.startswith(";"):
            field = _HEADER_FIELD.fullmatch(stripped)
            if field is None:
                comments.append(stripped[1:].strip())
            elif field.group(1) == START_KEY:
                time_origin = _time_origin(field.group(2).strip(), line_number, reader)
            else:
                _add_attribute(attributes, field.group(1),
                               attribute_value(field.group(2).rstrip()))
            continue
        tokens = stripped.split()
        if len(tokens) != len(COLUMNS):
            reader.report(error(
                f"line has {len(tokens)} whitespace-separated fields; SWF has 18",
                "swf.field-count", line=line_number, column=1, pointer=f"/lines/{line_number}"))
            continue
        record, valid = _record(tokens)
        if not valid:
            reader.record_errors(line_number, record)
            continue
        if record["AllocatedProcessors"] <= 0 and record["RequestedProcessors"] <= 0:
            reader.report(error(
                f"job {record['JobNumber']} has no processor count (allocated and requested "
                "are both unknown or 0)", "swf.unknown-processors",
                **reader.locate(line_number, "AllocatedProcessors")))
            continue
        preceding = record["PrecedingJobNumber"]
        tasks.append((line_number, _task(record, tokens), None if preceding == -1 else preceding))
    jobs = _link_preceding_jobs(tasks, reader)
    if reader.stopped:
        reader.diagnostics.append(error(
            f"more than {MAX_ERRORS} errors; reading stopped", "swf.too-many-errors"))
    if reader.errors:
        return ReadResult(None, tuple(reader.diagnostics))
    extras: dict[str, Any] = {COMMENTS_KEY: comments} if comments else {}
    workload = Workload(jobs=jobs, time_origin=time_origin, attributes=attributes,
                        extras=extras)
    if not jobs:
        reader.report(warning("file has no job lines", "swf.no-jobs"))
    # Job numbers are unique once the reader has no errors, so they key the lines.
    line_of = {task.id: line for line, task, _ in tasks}
    source_map: dict[str, tuple[int, int | None]] = {
        f"/workload/jobs/{j}/tasks/{t}": (line_of[task.id], 1)
        for j, job in enumerate(jobs) for t, task in enumerate(job.tasks) if task.id in line_of}
    return ReadResult(Document(workload=workload), tuple(reader.diagnostics), source_map)


def attribute_value(text: str) -> Any:
    """A header value: a JSON number, boolean, null or quoted string when the text is exactly
    its JSON spelling (``MaxJobs: 8`` → 8), otherwise the text itself."""
    if not text or text[0] not in _JSON_SCALAR_START:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict | list) or json.dumps(value, ensure_ascii=False) != text:
        return text
    return value


def attribute_text(value: Any) -> str | None:
    """The header text that reads back as ``value`` (``None``: no such text)."""
    if isinstance(value, str) and attribute_value(value) == value and "\n" not in value \
            and "\r" not in value and value == value.strip():
        return value
    if value is None or isinstance(value, bool | int | str) or (
            isinstance(value, float) and math.isfinite(value)):
        return json.dumps(value, ensure_ascii=False)
    return None


_JSON_SCALAR_START = frozenset('-0123456789tfn"')


def _add_attribute(attributes: dict[str, Any], key: str, value: Any) -> None:
    if key not in attributes:
        attributes[key] = value
    elif isinstance(attributes[key], list):
        attributes[key].append(value)
    else:
        attributes[key] = [attributes[key], value]


def _time_origin(text: str, line_number: int, reader: _Reader) -> str | None:
    seconds = parse_int(text)
    if seconds is None or not 0 <= seconds < 253402300800:  # up to year 9999
        reader.report(error(f"UnixStartTime {text!r} is not a count of seconds since 1970",
                            "swf.start-time", line=line_number, column=1,
                            pointer=f"/header/{START_KEY}"))
        return None
    return _origin_text(seconds)


def _origin_text(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _record(tokens: list[str]) -> tuple[dict[str, Any], bool]:
    record: dict[str, Any] = {}
    valid = True
    for name, token in zip(COLUMNS, tokens, strict=True):
        if name in _TEXT_IDS and is_id_token(token):
            record[name] = token  # a text id or user name (see the module docstring)
            continue
        value = parse_int(token) if name in _INTEGERS else parse_number(token)
        if value is None:
            valid = False
            record[name] = token
            continue
        record[name] = value
        lowest = 0 if name in ("JobNumber", "SubmitTime") else -1
        if value < lowest or (lowest == -1 and value < 0 and value != -1):
            valid = False
    return record, valid


def _task(record: dict[str, Any], tokens: list[str]) -> Task:
    allocated = record["AllocatedProcessors"]
    requested = record["RequestedProcessors"]
    extras: dict[str, Any] = {}
    nodes = allocated
    if allocated <= 0:
        nodes = requested
        extras["swf:AllocatedProcessors"] = allocated
    elif requested != allocated:
        extras["swf:RequestedProcessors"] = requested
    for name in _EXTRA_COLUMNS:
        if record[name] != -1:
            extras["swf:" + name] = record[name]
    memory = record["RequestedMemory"]
    return Task(
        id=record["JobNumber"],
        submit_time_s=float(record["SubmitTime"]),
        runtime_s=None if record["RunTime"] == -1 else float(record["RunTime"]),
        requested_time_s=(None if record["RequestedTime"] == -1
                          else float(record["RequestedTime"])),
        request=ResourceRequest(nodes=nodes, cores=1.0,
                                memory_mb=None if memory == -1 else memory / 1024),
        # The token as written, so "007" stays "007".
        user=None if record["UserID"] == -1 else tokens[_USER_COLUMN],
        group=None if record["GroupID"] == -1 else tokens[_GROUP_COLUMN],
        extras=extras,
    )


def _link_preceding_jobs(
    tasks: list[tuple[int, Task, int | None]], reader: _Reader
) -> tuple[Job, ...]:
    """Preceding jobs in the file become dependencies; others stay in extras (a warning)."""
    known = {task.id for _, task, _ in tasks}
    linked: list[Task] = []
    for line_number, task, preceding in tasks:
        if preceding is None:
            linked.append(task)
        elif preceding in known:
            linked.append(Task(**{**task.__dict__, "dependencies": (preceding,)}))
        else:
            reader.report(warning(
                f"job {task.id} follows job {preceding}, which is not in the file; the "
                "dependency is kept in extras only",
                "swf.preceding-job-missing", **reader.locate(line_number, "PrecedingJobNumber")))
            linked.append(Task(**{**task.__dict__,
                                  "extras": {**task.extras, "swf:PrecedingJobNumber": preceding}}))
    if not reader.stopped:
        lines = [line for line, _, _ in tasks]

        def locate(index: int, dependency: int | None) -> dict[str, Any]:
            column = "JobNumber" if dependency is None else "PrecedingJobNumber"
            return reader.locate(lines[index], column)

        for diagnostic in dependency_diagnostics(
            [task.id for task in linked], [task.dependencies for task in linked], locate, "swf"
        ):
            reader.report(diagnostic)
    return tuple(Job(id=task.id, tasks=(task,)) for task in linked)


# --------------------------------------------------------------------------- write


def write(document: Document) -> WriteResult:
    """SWF bytes for ``document.workload`` (an empty file when there is none)."""
    workload = document.workload or Workload()
    losses = LossCounter()
    count_workload_losses(losses, document, workload, HOLDS)
    lines = _header(workload, losses)
    tasks = list(workload.tasks())
    numbering = task_numbering(tasks, losses)
    # Not holding jobs, SWF reads every task back as a job of its own, named by the task.
    losses.add("job", sum(1 for job in workload.jobs
                          if len(job.tasks) != 1 or job.tasks[0].id != job.id
                          or job.name is not None or job.user is not None or job.extras),
               "every SWF line is a single-task job numbered by its task")
    losses.add("job.empty", sum(1 for job in workload.jobs if not job.tasks),
               "jobs without tasks have no line")
    for task in tasks:
        lines.append(" ".join(_line(task, numbering, losses)))
    return WriteResult(("\n".join(lines) + "\n").encode(), losses.losses())


def _header(workload: Workload, losses: LossCounter) -> list[str]:
    lines: list[str] = []
    if workload.time_origin is not None:
        seconds = _epoch_seconds(workload.time_origin)
        if seconds is None:
            losses.add("workload.time_origin", detail="not an instant SWF's UnixStartTime "
                       "(whole seconds since 1970, UTC) can hold")
        else:
            lines.append(f"; {START_KEY}: {seconds}")
    for key, value in workload.attributes.items():
        # A key given on several lines reads back as a list of two or more values.
        values = value if isinstance(value, list) and len(value) > 1 else [value]
        texts = [attribute_text(v) for v in values]
        if key == START_KEY or not _HEADER_FIELD.fullmatch(f"; {key}: x") or None in texts:
            losses.add("workload.attributes", detail="SWF header fields are '; Key: value' "
                       "lines with one-word keys and scalar (or repeated scalar) values")
            continue
        lines.extend(f"; {key}: {text}" if text else f"; {key}:" for text in texts)
    comments = workload.extras.get(COMMENTS_KEY, [])
    if not isinstance(comments, list):
        comments = [comments]
    for comment in comments:
        text = f"; {comment}" if comment else ";"
        if (not isinstance(comment, str) or comment != comment.strip() or "\n" in comment
                or "\r" in comment or _HEADER_FIELD.fullmatch(text)):
            # swf: extras are SWF's own, so one it cannot write back is a loss.
            losses.add("workload.extras", detail="comments that would read back as header "
                       "fields or span lines were dropped")
            continue
        lines.append(text)
    return lines


def _epoch_seconds(origin: str) -> int | None:
    try:
        instant = datetime.fromisoformat(origin)
    except ValueError:
        return None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    seconds = instant.timestamp()
    if not seconds.is_integer() or seconds < 0:
        return None
    return int(seconds)


def _line(task: Task, numbering: dict[Id, Id], losses: LossCounter) -> list[str]:
    for name in unheld_task_fields(task):
        if name not in HOLDS:
            losses.add(name)
    values = {name: "-1" for name in COLUMNS}
    values["JobNumber"] = str(numbering[task.id])
    submit = _measure(task.submit_time_s, "task.submit_time_s", losses)
    values["SubmitTime"] = "0" if submit == "-1" else submit  # SWF submit times are known
    values["RunTime"] = _measure(task.runtime_s, "task.runtime_s", losses)
    values["RequestedTime"] = _measure(task.requested_time_s, "task.requested_time_s", losses)
    request = task.request
    # Cores per node are not held (reported above): processors are the nodes.
    whole = request.nodes if request.nodes >= 1 else 1
    if whole != request.nodes:
        losses.add("task.request.nodes", detail="processor counts are whole numbers >= 1")
    allocated = task.extras.get("swf:AllocatedProcessors")
    requested = task.extras.get("swf:RequestedProcessors")
    values["AllocatedProcessors"] = str(allocated if _is_int(allocated) and allocated <= 0
                                        else whole)
    values["RequestedProcessors"] = str(requested if _is_int(requested) and requested >= -1
                                        else whole)
    if request.memory_mb is not None:  # one processor per node: per node is per processor
        values["RequestedMemory"] = _measure(request.memory_mb * 1024, "task.request.memory_mb",
                                             losses)
    values["UserID"] = _decimal_id(task.user, "task.user", losses)
    values["GroupID"] = _decimal_id(task.group, "task.group", losses)
    _dependency_column(task, values, numbering, losses)
    for key, value in task.extras.items():
        if key in _PROCESSOR_EXTRAS or (":" in key and not key.startswith("swf:")):
            continue  # other formats' extras are theirs to keep, not SWF's to lose
        text = _extra_value(key, value)
        if text is None:
            losses.add("task.extras", detail="plain extras and swf: extras that do not fit "
                       "their field were dropped")
        else:
            values[key[4:]] = text
    return [values[name] for name in COLUMNS]


def _dependency_column(
    task: Task, values: dict[str, str], numbering: dict[Id, Id], losses: LossCounter
) -> None:
    outside = task.extras.get("swf:PrecedingJobNumber")
    if len(task.dependencies) > 1:
        losses.add("task.dependencies.multiple", len(task.dependencies) - 1,
                   "SWF holds one preceding job per job; the first is kept")
    if task.dependencies:
        preceding = numbering.get(task.dependencies[0])
        if preceding is None:
            losses.add("task.dependencies", detail="dependencies on tasks outside the "
                       "workload were dropped")
        else:
            values["PrecedingJobNumber"] = str(preceding)
            if outside is not None:
                losses.add("task.extras")
            return
    if is_trace_id(outside):
        values["PrecedingJobNumber"] = str(outside)
    elif outside is not None:
        losses.add("task.extras")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _measure(value: float | None, field: str, losses: LossCounter) -> str:
    if value is None:
        return "-1"
    if value < 0:
        losses.add(field, detail="negative values cannot be written; written as unknown (-1)")
        return "-1"
    return format_number(value)


def _writable_name(value: str) -> bool:
    """Whether a user or group can be an SWF column: digits, or a name token."""
    return _DECIMAL_DIGITS.fullmatch(value) is not None or is_id_token(value)


def normal_form(document: Document) -> Document:
    """What SWF makes of ``document`` beyond its field paths: a user or group that is no
    column token (see Ids and users) is written as unknown and reads back as none."""
    workload = document.workload
    if workload is None:
        return document
    jobs = tuple(replace(job, tasks=tuple(
        replace(task,
                user=task.user if task.user is None or _writable_name(task.user) else None,
                group=task.group if task.group is None or _writable_name(task.group) else None)
        for task in job.tasks)) for job in workload.jobs)
    return replace(document, workload=replace(workload, jobs=jobs))


def normal_form_losses(document: Document) -> frozenset[str]:
    """The field paths ``normal_form`` changes in ``document``."""
    tasks = list(document.workload.tasks()) if document.workload is not None else []
    return frozenset(
        field for field, values in (("task.user", [task.user for task in tasks]),
                                    ("task.group", [task.group for task in tasks]))
        if any(value is not None and not _writable_name(value) for value in values))


def _decimal_id(value: str | None, field: str, losses: LossCounter) -> str:
    if value is None:
        return "-1"
    if _writable_name(value):
        return value
    losses.add(field, detail="SWF user and group ids are numbers (or names without spaces)")
    return "-1"


def _extra_value(key: str, value: object) -> str | None:
    if key not in _EXTRA_KEYS or isinstance(value, bool):
        return None
    if key[4:] in _INTEGERS:
        return str(value) if isinstance(value, int) and value >= 0 else None
    if isinstance(value, int | float) and math.isfinite(value) and value >= 0:
        return format_number(value)
    return None


FORMAT = FormatDeclaration(
    name="swf",
    title="Standard Workload Format (Parallel Workloads Archive)",
    family="trace",
    kind="workload",
    extensions=(".swf",),
    content=frozenset({"text"}),
    schema="swf.schema.json",
    description=("18-field job traces with ';' header comments."),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
)
