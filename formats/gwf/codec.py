"""GWF's readers (the workflow and archive variants), normal form and writer: the format's
reference text, sniffer and declaration are the package's (``dcx.formats.gwf``), which imports
this module on first use."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

from dcx.core.columns import JobRows, columns_of
from dcx.core.counterparts import GWF_FROM_SWF, columns_with_counterparts, with_counterparts
from dcx.core.diagnostics import (
    Diagnostic,
    ReadResult,
    WriteResult,
    error,
    warning,
)
from dcx.core.limits import paused_gc
from dcx.core.located import task_lines
from dcx.core.model import (
    Document,
    Extras,
    Id,
    Job,
    Placement,
    ResourceRequest,
    Task,
    TaskStatus,
    Workload,
)
from dcx.core.shapes import one_node, only_resplit
from dcx.formats.gwf import ARCHIVE_COLUMNS, WORKFLOW_COLUMNS, _looks_archive
from dcx.formats.gwf.rules import (
    ARCHIVE_CODES,
    ARCHIVE_MEASURES,
    ARCHIVE_TOKENS,
    WORKFLOW_RULES,
    archive_rules,
    read_token,
)
from dcx.formats.gwf.spelling import (
    ARCHIVE_EXTRA_KEYS,
    CODES,
    EXTRA_PREFIX,
    NPROCS_KEY,
    RECORDED,
    REQNPROCS_KEY,
    SECONDS,
    STATUS_KEY,
    USER_TEXT,
    Variant,
    pad,
)
from dcx.parsing.schemas import load_schema, schema_diagnostics
from dcx.parsing.traces import (
    CODE_TEXT,
    MAX_ERRORS,
    PLAIN_CODES,
    ErrorBudget,
    decode_text,
    dependency_diagnostics,
    format_number,
    known_submit,
    known_time,
    lifted_recorded,
    parse_int,
    recorded_texts,
    status_of_code,
    written_ids,
    written_number_id,
    written_status_code,
)

SCHEMA = "gwf.schema.json"

# Archive columns by kind (``rules.py``); the mapped columns are handled one by one.
_ARCHIVE_MEASURES = ARCHIVE_MEASURES
_ARCHIVE_CODES = ARCHIVE_CODES
_ARCHIVE_TOKENS = ARCHIVE_TOKENS
_ARCHIVE_RULES = archive_rules(ARCHIVE_COLUMNS)
_ARCHIVE_EXTRA_COLUMNS = (_ARCHIVE_MEASURES | _ARCHIVE_CODES | _ARCHIVE_TOKENS) - RECORDED


# --------------------------------------------------------------------------- read


class _Reader(ErrorBudget):
    def __init__(self, lines: list[str], variant: Variant, first_line: int = 1) -> None:
        super().__init__()
        self.lines = lines
        self.variant = variant
        self.first_line = first_line
        """The line number of ``lines[0]`` (a chunk of a file read in chunks starts later)."""

    # -- positions, computed only for diagnostics ------------------------------------

    def field_column(self, line_number: int, field: int, token: int | None = None) -> int:
        text = self.lines[line_number - self.first_line]
        if self.variant == "workflow":
            start = sum(len(part) + 1 for part in text.split(",")[:field])
            part = text.split(",")[field] if field < len(text.split(",")) else ""
            spans = [(start + m.start(), m.group()) for m in re.finditer(r"\S+", part)]
            if token is not None and token < len(spans):
                return spans[token][0] + 1
            return start + (len(part) - len(part.lstrip())) + 1
        spans = [(m.start(), m.group()) for m in re.finditer(r"\S+", text)]
        return spans[field][0] + 1 if field < len(spans) else 1

    def locate(
        self, line_number: int, column_name: str, token: int | None = None
    ) -> dict[str, Any]:
        columns = WORKFLOW_COLUMNS if self.variant == "workflow" else ARCHIVE_COLUMNS
        field = columns.index(column_name)
        pointer = f"/lines/{line_number}/{column_name}"
        if token is not None:
            pointer += f"/{token}"
        return {
            "line": line_number,
            "column": self.field_column(line_number, field, token),
            "pointer": pointer,
        }

    def record_errors(self, line_number: int, record: dict[str, Any]) -> None:
        """Detailed, located messages for a record the fast path rejected."""
        found = schema_diagnostics(SCHEMA, record, base_pointer=f"/lines/{line_number}")
        if not found:  # the fast path and the schema disagree: still never accept silently
            found = [error("line does not match the GWF record schema", "gwf.record",
                           pointer=f"/lines/{line_number}")]
        for diagnostic in found:
            parts = diagnostic.pointer.split("/")[3:]
            column_name = parts[0] if parts else None
            token = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
            where: dict[str, Any] = {"line": line_number, "column": 1,
                                     "pointer": diagnostic.pointer}
            message = diagnostic.message
            if column_name in record:
                where = self.locate(line_number, column_name, token)
                value = record[column_name]
                if token is not None and isinstance(value, list) and token < len(value):
                    value = value[token]
                expected = _expectation(self.variant, column_name, token is not None)
                if expected:
                    message = f"{column_name} is {value!r}; expected {expected}"
            self.report(error(message, diagnostic.code, **where))


def _expectation(variant: Variant, column_name: str, item: bool) -> str | None:
    """The schema's own wording for what a column (or one of its list items) must be."""
    schema = load_schema(SCHEMA)
    definitions = schema["$defs"]
    record = definitions["workflowRecord" if variant == "workflow" else "archiveRecord"]
    column = record["properties"].get(column_name, {})
    if item:
        column = column.get("items", {})
    reference = column.get("$ref", "")
    if not reference.startswith("#/$defs/"):
        return None
    description: str | None = definitions[reference.rsplit("/", 1)[1]].get("description")
    return description


def read(data: bytes) -> ReadResult:
    with paused_gc():
        if len(data) >= FAST_READ_BYTES:
            from dcx.formats.gwf.fast import read_fast

            fast = read_fast(data)
            if fast is not None:
                return fast
        return _read(data)


FAST_READ_BYTES = 1 << 20
"""Files this large try the vectorised accept path (``fast.py``) first; smaller ones are
read line by line (importing numpy and pyarrow would cost a small file more than it
saves)."""


def _read(data: bytes) -> ReadResult:
    text, problem = decode_text(data, "gwf")
    if problem is not None:
        return ReadResult(None, (problem,))
    assert text is not None
    lines = text.split("\n")
    first = next((i for i, raw in enumerate(lines)
                  if raw.strip() and not raw.lstrip().startswith("#")), None)
    if first is None:
        if not text.strip():
            return ReadResult(None, (error("file is empty", "gwf.empty", line=1, column=1),))
        # Only comments: an archive-format file without jobs.
        empty = Document(workload=Workload())
        return ReadResult(empty, (warning("file has no task lines", "gwf.no-tasks"),))
    variant: Variant = "archive" if _looks_archive(lines[first]) else "workflow"
    reader = _Reader(lines, variant)
    if variant == "workflow":
        tasks, placement = _read_workflow(reader, first)
    else:
        tasks, placement = archive_lines(reader, first)
    if not reader.stopped:
        ids = [task.id for _, task in tasks]
        lines_of = [line for line, _ in tasks]

        def locate(index: int, dependency: int | None) -> dict[str, Any]:
            if dependency is None:
                return reader.locate(lines_of[index], "JobID")
            return reader.locate(lines_of[index], "Dependencies", dependency)

        line_failed = reader.errors > 0  # a line that did not read may be the task named
        for diagnostic in dependency_diagnostics(
            ids, [task.dependencies for _, task in tasks], locate, "gwf"
        ):
            if not (line_failed and diagnostic.code == "gwf.unknown-dependency"):
                reader.report(diagnostic)
    if reader.stopped:
        reader.diagnostics.append(error(
            f"more than {MAX_ERRORS} errors; reading stopped", "gwf.too-many-errors"))
    if reader.errors:
        return ReadResult(None, tuple(reader.diagnostics))
    if not tasks:
        reader.report(warning("file has no task lines", "gwf.no-tasks"))
    if any(isinstance(task.id, str) for _, task in tasks) or any(
            isinstance(job_id, str) for job_id in placement):
        reader.report(warning("some ids are text: dcx reads them, the SC18 simulator (which "
                              "parses integers) does not", "gwf.text-ids"))
    workload = Workload(jobs=tuple(Job(id=job_id, tasks=tuple(members))
                                   for job_id, members in placement.items()))
    return ReadResult(Document(workload=workload), tuple(reader.diagnostics),
                      _source_map(workload, tasks))


def _source_map(workload: Workload,
                tasks: list[tuple[int, Task]]) -> dict[str, tuple[int, int | None]]:
    """Each task's line, for checks made later on the model (the scheduler's), and each
    job's (its first task's), for the loss report."""
    line_of = {id(task): line for line, task in tasks}
    return task_lines(workload.jobs, lambda task: line_of[id(task)])


def _processors(nprocs: int, requested: int) -> tuple[int, dict[str, Any]]:
    """Cores and the processor extras for NProcs/ReqNProcs (see the module docstring)."""
    extras: dict[str, Any] = {}
    cores = nprocs
    if nprocs == -1:
        cores = requested
        extras["gwf:NProcs"] = -1
    elif requested != nprocs:
        extras["gwf:ReqNProcs"] = requested
    return cores, extras


def _read_workflow(
    reader: _Reader, first: int
) -> tuple[list[tuple[int, Task]], dict[Id, list[Task]]]:
    return workflow_lines(reader, workflow_start(reader, first))


def workflow_start(reader: _Reader, first: int) -> int:
    """Where the workflow variant's task lines start: after ``lines[first]``, the file's
    first line with content, when it is the header; else there, with a warning."""
    if reader.lines[first].strip().startswith("WorkflowID"):
        return first + 1
    reader.report(warning(
        "no header line: sc18 drops the first line unconditionally and would lose this task",
        "gwf.no-header", line=first + reader.first_line, column=1))
    return first


def workflow_lines(
    reader: _Reader, start: int
) -> tuple[list[tuple[int, Task]], dict[Id, list[Task]]]:
    """The workflow variant's task lines from ``lines[start]`` on: each valid task with its
    line, and the tasks of each workflow."""
    tasks: list[tuple[int, Task]] = []
    placement: dict[Id, list[Task]] = {}
    requests: dict[int, ResourceRequest] = {}
    for index in range(start, len(reader.lines)):
        if reader.stopped:
            break
        raw = reader.lines[index]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        line_number = index + reader.first_line
        fields = raw.split(",")
        if len(fields) < len(WORKFLOW_COLUMNS):
            reader.report(error(
                f"line has {len(fields)} comma-separated fields; the workflow variant needs 7 "
                f"({', '.join(WORKFLOW_COLUMNS)})",
                "gwf.field-count", line=line_number, column=1, pointer=f"/lines/{line_number}"))
            continue
        if len(fields) > len(WORKFLOW_COLUMNS):
            reader.report(warning(
                f"line has {len(fields)} fields; fields after the 7th are ignored (as sc18 does)",
                "gwf.extra-fields", line=line_number,
                column=reader.field_column(line_number, len(WORKFLOW_COLUMNS)),
                pointer=f"/lines/{line_number}"))
        tokens = [field.strip() for field in fields[:6]]
        (workflow, workflow_ok), (task_id, task_ok), (submit, submit_ok), \
            (runtime, runtime_ok), (nprocs, nprocs_ok), (requested, requested_ok) = (
                read_token(WORKFLOW_RULES[name], token)
                for name, token in zip(WORKFLOW_COLUMNS, tokens, strict=False))
        dependency_tokens = fields[6].split()
        read_dependencies = [read_token(WORKFLOW_RULES["Dependencies"], token)
                             for token in dependency_tokens]
        dependencies = [value for value, _ in read_dependencies]
        if not (workflow_ok and task_ok and submit_ok and runtime_ok and nprocs_ok
                and requested_ok and all(ok for _, ok in read_dependencies)):
            record = dict(zip(WORKFLOW_COLUMNS, (
                _id_or_value(tokens[0]), _id_or_value(tokens[1]),
                _or_text(submit, tokens[2]), _or_text(runtime, tokens[3]),
                _or_text(nprocs, tokens[4]), _or_text(requested, tokens[5]),
                [_id_or_value(t) for t in dependency_tokens],
            ), strict=True))
            reader.record_errors(line_number, record)
            continue
        assert workflow is not None and task_id is not None and submit is not None
        assert runtime is not None and nprocs is not None and requested is not None
        if nprocs == -1 and requested == -1:
            reader.report(_unknown_processors(reader, line_number, task_id))
            continue
        cores, extras = _processors(nprocs, requested)
        request = requests.get(cores)
        if request is None:  # immutable, so one object per distinct core count
            request = requests[cores] = ResourceRequest(cores=float(cores),
                                                        placement=Placement.CORES)
        task = Task(
            id=task_id,
            submit_time_s=float(submit),
            runtime_s=None if runtime == -1 else float(runtime),
            request=request,
            dependencies=tuple(d for d in dependencies if d is not None),
            extras=extras,
        )
        tasks.append((line_number, task))
        placement.setdefault(workflow, []).append(task)
    return tasks, placement


def _unknown_processors(reader: _Reader, line_number: int, task_id: Id) -> Diagnostic:
    return error(f"task {task_id} has neither NProcs nor ReqNProcs (both -1): its cores are "
                 "unknown", "gwf.unknown-processors", **reader.locate(line_number, "NProcs"))


def _id_or_value(token: str) -> object:
    """An id column's value for the schema record: the integer when it is one, else text."""
    number = parse_int(token)
    return token if number is None else number


def _or_text(value: object, text: str) -> object:
    return text if value is None else value


def archive_lines(
    reader: _Reader, first: int
) -> tuple[list[tuple[int, Task]], dict[Id, list[Task]]]:
    """The archive variant's task lines from ``lines[first]`` on (as ``workflow_lines``)."""
    tasks: list[tuple[int, Task]] = []
    placement: dict[Id, list[Task]] = {}
    for index in range(first, len(reader.lines)):
        if reader.stopped:
            break
        stripped = reader.lines[index].strip()
        if not stripped or stripped.startswith("#"):
            continue
        line_number = index + reader.first_line
        tokens = stripped.split()
        if len(tokens) != len(ARCHIVE_COLUMNS):
            reader.report(error(
                f"line has {len(tokens)} whitespace-separated fields; the archive format has 29",
                "gwf.field-count", line=line_number, column=1, pointer=f"/lines/{line_number}"))
            continue
        record, valid = _archive_record(tokens)
        if not valid:
            reader.record_errors(line_number, record)
            continue
        if record["NProcs"] == -1 and record["ReqNProcs"] == -1:
            reader.report(_unknown_processors(reader, line_number, record["JobID"]))
            continue
        task = _archive_task(record)
        tasks.append((line_number, task))
        placement[task.id] = [task]
    return tasks, placement


def _archive_record(tokens: list[str]) -> tuple[dict[str, Any], bool]:
    """The line as a schema record (unparseable values left as text) and the fast verdict."""
    record: dict[str, Any] = {}
    valid = True
    for name, token in zip(ARCHIVE_COLUMNS, tokens, strict=True):
        rule = _ARCHIVE_RULES[name]
        value, accepted = read_token(rule, token)
        valid = valid and accepted
        if rule == "id":
            record[name] = _id_or_value(token)
        else:
            record[name] = token if value is None else value
    return record, valid


def _archive_task(record: dict[str, Any]) -> Task:
    cores, extras = _processors(record["NProcs"], record["ReqNProcs"])
    for name in ARCHIVE_COLUMNS:
        if name in _ARCHIVE_EXTRA_COLUMNS and record[name] not in (-1, "-1"):
            extras[EXTRA_PREFIX + name] = record[name]
    status = record["Status"]
    if status not in PLAIN_CODES:
        extras[STATUS_KEY] = status
    used = record["UsedMemory"]
    memory = record["ReqMemory"]
    return Task(
        id=record["JobID"],
        submit_time_s=float(record["SubmitTime"]),
        runtime_s=None if record["RunTime"] == -1 else float(record["RunTime"]),
        requested_time_s=None if record["ReqTime"] == -1 else float(record["ReqTime"]),
        request=ResourceRequest(
            cores=float(cores),
            memory_mb=None if memory == -1 else memory * cores / 1024,
            placement=Placement.CORES,
        ),
        user=None if record["UserID"] == -1 else str(record["UserID"]),
        group=None if record["GroupID"] == -1 else str(record["GroupID"]),
        status=status_of_code(status),
        used_memory_mb=None if used == -1 else used / 1024,
        wait_time_s=None if record["WaitTime"] == -1 else float(record["WaitTime"]),
        cpu_time_s=(None if record["AverageCPUTimeUsed"] == -1
                    else float(record["AverageCPUTimeUsed"])),
        application=_code_text(record["ExecutableID"]),
        queue=_code_text(record["QueueID"]),
        partition=_code_text(record["PartitionID"]),
        extras=extras,
    )


def _code_text(value: int) -> str | None:
    return None if value == -1 else str(value)




# --------------------------------------------------------------------------- normal form


def _whole_cores(cores: float) -> float:
    """NProcs: a whole number >= 1 (rounded up)."""
    if not math.isfinite(cores) or cores <= 1:
        return 1.0
    return float(math.ceil(cores))


def _user(value: str | None) -> str | None:
    return value if value is None or USER_TEXT.fullmatch(value) else None


def _memory(memory_mb: float | None, cores: float) -> float | None:
    """What ReqMemory (KB per processor) reads back as; ``None`` when it cannot be written."""
    if memory_mb is None or not memory_mb >= 0:
        return None
    for _ in range(4):  # a KB value that does not read back as itself converges in a step
        per_processor_kb = memory_mb * 1024 / cores
        if not math.isfinite(per_processor_kb):
            return None
        read_back = per_processor_kb * cores / 1024
        if read_back == memory_mb:
            return memory_mb
        memory_mb = read_back
    return memory_mb


def _archive_column(key: str, value: object) -> bool:
    """Whether an archive extras column can be written with ``value`` and reads it back."""
    name = key[len(EXTRA_PREFIX):]
    if name in _ARCHIVE_TOKENS:
        # str.split() is what the reader splits on, so it is the test of a single token.
        return isinstance(value, str) and value.split() == [value] and value != "-1"
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    if name in _ARCHIVE_CODES:
        return isinstance(value, int) and value >= 0
    return math.isfinite(value) and value >= 0


def _processor_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and (value >= 1 or value == -1)


def _recorded(task: Task, archive: bool) -> dict[str, Any]:
    """The recorded fields of ``task`` the variant writes otherwise, as it writes them: in
    the archive, a job killed at its limit as failed, times and memory known (>= 0,
    finite), codes as the decimal texts of integers >= 0 (others unknown); the workflow
    variant has no column for any."""
    changed: dict[str, Any] = {}
    if task.status is not TaskStatus.UNKNOWN and (
            not archive or task.status is TaskStatus.KILLED_AT_WALLTIME):
        changed["status"] = TaskStatus.FAILED if archive else TaskStatus.UNKNOWN
    for field in ("wait_time_s", "cpu_time_s", "used_memory_mb"):
        value = getattr(task, field)
        if value is not None:
            written = (_used_memory(value) if field == "used_memory_mb" else known_time(value)
                       ) if archive else None
            if written is not value:
                changed[field] = written
    for field in CODES.values():
        code = getattr(task, field)
        if code is not None and (not archive or CODE_TEXT.fullmatch(code) is None):
            changed[field] = None
    return changed


def _used_memory(memory_mb: float) -> float | None:
    """UsedMemory is KB; times 1024 is exact in binary unless it overflows."""
    return memory_mb if memory_mb >= 0 and math.isfinite(memory_mb * 1024) else None


def _gwf_extras(extras: Extras, cores: float, archive: bool,
                status: TaskStatus = TaskStatus.UNKNOWN) -> tuple[Extras, bool]:
    """``extras`` with its ``gwf:`` keys as the variant reads them back, and whether one was
    dropped. NProcs ``-1`` reads back alone; ReqNProcs only when it differs from the cores;
    a Status code only when it reads back as ``status``."""
    if not any(key.startswith(EXTRA_PREFIX) for key in extras):
        return extras, False
    kept: Extras = {}
    dropped = False
    unknown_nprocs = extras.get(NPROCS_KEY) == -1 and _processor_count(extras[NPROCS_KEY])
    for key, value in extras.items():
        if not key.startswith(EXTRA_PREFIX):
            kept[key] = value  # not GWF's: restrict decides
        elif key == NPROCS_KEY and unknown_nprocs:
            kept[key] = value
        elif key == REQNPROCS_KEY and not unknown_nprocs and _processor_count(value):
            if value != cores:
                kept[key] = value
        elif key == STATUS_KEY:
            if archive and written_status_code(status, value) == value:
                kept[key] = value
            else:
                dropped = True
        elif archive and key in ARCHIVE_EXTRA_KEYS and _archive_column(key, value):
            kept[key] = value
        else:
            dropped = True
    return (extras, False) if kept == extras else (kept, dropped)


def _without_own_keys(extras: Extras) -> Extras:
    return {key: value for key, value in extras.items() if not key.startswith(EXTRA_PREFIX)}


class _Normalizer:
    """Builds the normal form and records the held field paths it changes."""

    def __init__(self, tasks: list[Task], archive: bool,
                 dependencies_known: bool = False) -> None:
        self.archive = archive
        self.dependencies_known = dependencies_known
        """Every dependency names a task of the file, maybe outside ``tasks`` (a chunk's):
        each is kept as it is (ids are not renumbered then)."""
        self.lost: set[str] = set()
        self.numbering, renumbered = written_ids([task.id for task in tasks], written_number_id,
                                                 keeps_integers=True)
        if renumbered:
            self.lost.add("task.id")
        # Every id is written as it is: a task's id and known dependencies need no mapping.
        self.ids_kept = not renumbered and all(type(new) is type(old) for old, new in
                                               self.numbering.items())

    def task(self, task: Task) -> Task:
        if not self.archive and self.ids_kept and self._workflow_normal(task):
            return task
        task = lifted_recorded(task, EXTRA_PREFIX, SECONDS, CODES)
        lost = self.lost
        request = task.request
        total_cores, node_memory = one_node(request.nodes, request.cores, request.memory_mb)
        # The node count is what is lost when nodes become one node's cores (nothing is,
        # for cores anywhere: only the total means something); the cores and the memory
        # then carry the same totals, so they count as changed only for what they cannot
        # hold themselves.
        cores = _whole_cores(total_cores)
        resplit = only_resplit(request.placement, request.nodes, request.cores, cores)
        if request.nodes != 1 and not resplit:
            lost.add("task.request.nodes")
        if request.placement is not Placement.CORES:
            lost.add("task.request.placement")
        if _whole_cores(request.cores) != request.cores and not resplit:
            lost.add("task.request.cores")
        submit = known_submit(task.submit_time_s)
        if submit != task.submit_time_s:
            lost.add("task.submit_time_s")
        runtime = known_time(task.runtime_s)
        if runtime != task.runtime_s:
            lost.add("task.runtime_s")
        recorded = _recorded(task, self.archive)
        for field, value in recorded.items():
            if value != getattr(task, field):
                lost.add(f"task.{field}")
        # (SWF's processor keys are GWF's: core.counterparts)
        extras, dropped = _gwf_extras(with_counterparts(task.extras, GWF_FROM_SWF), cores,
                                      self.archive, recorded.get("status", task.status))
        if dropped:
            lost.add("task.extras")
        numbering = self.numbering
        if self.archive:
            requested = known_time(task.requested_time_s)
            memory = _memory(node_memory, cores)
            user, group = _user(task.user), _user(task.group)
            dependencies: tuple[Id, ...] = ()
            if task.dependencies:
                lost.add("task.dependencies")
                if len(task.dependencies) > 1:
                    lost.add("task.dependencies.multiple")
        else:
            requested = memory = user = group = None
            dependencies = (task.dependencies if self.dependencies_known else
                            tuple(numbering[d] for d in task.dependencies if d in numbering))
            if len(dependencies) != len(task.dependencies):
                lost.add("task.dependencies")
        held_memory = memory if memory is None or request.nodes == 1 else _memory(
            request.memory_mb, _whole_cores(request.cores))
        for path, before, after in (("task.requested_time_s", task.requested_time_s, requested),
                                    ("task.request.memory_mb", request.memory_mb, held_memory),
                                    ("task.user", task.user, user),
                                    ("task.group", task.group, group)):
            if before != after:
                lost.add(path)
        task_id = numbering[task.id]
        if (task_id == task.id and dependencies == task.dependencies
                and submit is task.submit_time_s and runtime is task.runtime_s
                and requested is task.requested_time_s and request.nodes == 1
                and cores == request.cores and memory is request.memory_mb
                and user is task.user and group is task.group and extras is task.extras
                and request.placement is Placement.CORES and not recorded):
            return task  # already in normal form: no copy per task
        if cores != request.cores or memory is not request.memory_mb or request.nodes != 1 \
                or request.placement is not Placement.CORES:
            request = replace(request, nodes=1, cores=cores, memory_mb=memory,
                              placement=Placement.CORES)
        return Task(**{**task.__dict__, **recorded, "id": task_id,
                       "dependencies": dependencies, "submit_time_s": submit,
                       "runtime_s": runtime, "requested_time_s": requested,
                       "request": request, "user": user, "group": group, "extras": extras})


    def _workflow_normal(self, task: Task) -> bool:
        """Whether ``task`` is already in the workflow variant's normal form (the common case
        of a GWF file read back), decided without building anything."""
        if task.extras or task.requested_time_s is not None or task.user is not None \
                or task.group is not None or _recorded(task, False):
            return False
        request = task.request
        cores, submit, runtime = request.cores, task.submit_time_s, task.runtime_s
        if request.memory_mb is not None or request.nodes != 1 \
                or request.placement is not Placement.CORES or not (
                type(cores) is float and cores.is_integer() and cores >= 1):
            return False
        if not (0 <= submit < math.inf) or not (runtime is None or 0 <= runtime < math.inf):
            return False
        numbering = self.numbering
        return self.dependencies_known or all(needed in numbering
                                              for needed in task.dependencies)


def variant_of(workload: Workload) -> Variant:
    """The variant ``write`` writes (see What dcx writes): the archive when the field paths
    only it keeps outnumber those only the workflow variant keeps."""
    return variant_for(*_variant_fields_of_rows(workload))


def variant_for(only_archive: frozenset[str], only_workflow: frozenset[str]) -> Variant:
    """``variant_of`` a workload whose field paths only the archive variant keeps are
    ``only_archive`` and those only the workflow variant keeps ``only_workflow``."""
    return "archive" if len(only_archive) > len(only_workflow) else "workflow"


def _variant_fields_of_rows(workload: Workload) -> tuple[frozenset[str], frozenset[str]]:
    """``variant_fields`` task by task."""
    only_archive: set[str] = set()
    only_workflow: set[str] = set()
    for job in workload.jobs:
        if job.tasks and (len(job.tasks) != 1 or job.tasks[0].id != job.id):
            only_workflow.add("job")
        for task in job.tasks:
            if task.dependencies:
                only_workflow.add("task.dependencies")
                if len(task.dependencies) > 1:
                    only_workflow.add("task.dependencies.multiple")
            # Cheap None tests first: most traces have none of these.
            if task.requested_time_s is not None and known_time(task.requested_time_s) is not None:
                only_archive.add("task.requested_time_s")
            request = task.request
            if request.memory_mb is not None:
                cores, memory = one_node(request.nodes, request.cores, request.memory_mb)
                if _memory(memory, _whole_cores(cores)) is not None:
                    only_archive.add("task.request.memory_mb")
            if task.user is not None and _user(task.user) is not None:
                only_archive.add("task.user")
            if task.group is not None and _user(task.group) is not None:
                only_archive.add("task.group")
            if task.extras and any(key in ARCHIVE_EXTRA_KEYS and _archive_column(key, value)
                                   for key, value in task.extras.items()):
                only_archive.add("task.extras")
            only_archive.update(_recorded_paths(task))
    return frozenset(only_archive), frozenset(only_workflow)


def _recorded_paths(task: Task) -> set[str]:
    """The recorded fields of ``task`` only the archive variant writes."""
    found: set[str] = set()
    if task.status is not TaskStatus.UNKNOWN:
        found.add("task.status")
    archived = _recorded(task, True)
    for field in ("wait_time_s", "cpu_time_s", "used_memory_mb", *CODES.values()):
        if getattr(task, field) is not None and archived.get(field, True) is not None:
            found.add(f"task.{field}")
    return found


def _normalized(document: Document) -> tuple[Document, frozenset[str], Variant]:
    """``normal_form``, the held field paths it changes and the variant, in one pass."""
    workload = document.workload
    own_document_keys = any(key.startswith(EXTRA_PREFIX) for key in document.extras)
    if workload is None:
        if own_document_keys:
            document = replace(document, extras=_without_own_keys(document.extras))
        return document, frozenset(), "workflow"
    given = columns_of(workload)
    columns = None if given is None else columns_with_counterparts(given, GWF_FROM_SWF)
    if columns is not None:
        from dcx.formats.gwf.columnar import normal_variant, on_one_node

        lost: set[str] = set()
        on_node = on_one_node(columns, lost)
        variant = None if on_node is None else normal_variant(on_node)
        if on_node is not None and variant is not None:  # nothing else to change
            if on_node is not given:
                workload = replace(workload, jobs=JobRows(on_node))
            return _without_own_workload_keys(document, workload, lost, own_document_keys), \
                frozenset(lost), variant
    variant = variant_of(workload)
    new_workload, lost = _normal_jobs(workload, variant)
    return _without_own_workload_keys(document, new_workload, lost, own_document_keys), \
        frozenset(lost), variant


def _normal_jobs(workload: Workload, variant: Variant, dependencies_known: bool = False
                 ) -> tuple[Workload, set[str]]:
    """The workload with its jobs and tasks in ``variant``'s normal form, built task by
    task, and the held field paths that changes (``dependencies_known``: see
    ``_Normalizer``)."""
    archive = variant == "archive"
    normalizer = _Normalizer([task for job in workload.jobs for task in job.tasks], archive,
                             dependencies_known)
    lost = normalizer.lost
    jobs: list[Job] = []
    if archive:
        for job in workload.jobs:
            if not job.tasks:
                jobs.append(job)  # restrict drops it (``job.empty`` is not held)
                continue
            single = len(job.tasks) == 1 and job.tasks[0].id == job.id
            if not single:
                lost.add("job")
            for task in job.tasks:
                written = normalizer.task(task)
                if single and written is task:
                    jobs.append(job)
                else:  # name, user and extras stay for restrict to drop and report
                    jobs.append(replace(job, id=written.id, tasks=(written,)))
    else:
        job_numbering, renumbered = written_ids(
            [job.id for job in workload.jobs if job.tasks], written_number_id, first=0,
            keeps_integers=True)
        if renumbered:
            lost.add("job")
        for job in workload.jobs:
            if not job.tasks:
                jobs.append(job)
                continue
            tasks = tuple(normalizer.task(task) for task in job.tasks)
            job_id = job_numbering[job.id]
            if job_id == job.id and all(a is b for a, b in zip(tasks, job.tasks, strict=True)):
                jobs.append(job)
            else:
                jobs.append(replace(job, id=job_id, tasks=tasks))
    jobs = [_without_own_job_keys(job, lost) for job in jobs]
    return replace(workload, jobs=tuple(jobs)), lost


def _without_own_workload_keys(document: Document, workload: Workload, lost: set[str],
                               own_document_keys: bool) -> Document:
    """``document`` with ``workload``, the format's own keys left out of the workload's and
    the document's extras and attributes (they have no place in a GWF file)."""
    for path, values in (("workload.extras", workload.extras),
                         ("workload.attributes", workload.attributes)):
        if any(key.startswith(EXTRA_PREFIX) for key in values):
            lost.add(path)
            kept = _without_own_keys(values)
            workload = (replace(workload, extras=kept) if path == "workload.extras"
                        else replace(workload, attributes=kept))
    extras = _without_own_keys(document.extras) if own_document_keys else document.extras
    return replace(document, workload=workload, extras=extras)


def _without_own_job_keys(job: Job, lost: set[str]) -> Job:
    if not any(key.startswith(EXTRA_PREFIX) for key in job.extras):
        return job
    lost.add("job.extras")
    return replace(job, extras=_without_own_keys(job.extras))


def normal_form(document: Document) -> Document:
    """What GWF makes of ``document`` beyond its field paths (see What dcx writes)."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    return _normalized(document)[1]


# --------------------------------------------------------------------------- write


def _time(value: float | None) -> str:
    return "-1" if value is None else format_number(value)


def _processor_columns(task: Task) -> tuple[str, str]:
    """NProcs and ReqNProcs of a task in normal form."""
    cores = str(int(task.request.cores))
    extras = task.extras
    if not extras:
        return cores, cores
    if extras.get(NPROCS_KEY) == -1:
        return "-1", cores
    requested = extras.get(REQNPROCS_KEY)
    return cores, cores if requested is None else str(requested)


def header_line(variant: Variant) -> str:
    """The first line ``write`` writes in ``variant``."""
    return pad(WORKFLOW_COLUMNS) if variant == "workflow" else "# " + " ".join(ARCHIVE_COLUMNS)


def _write_workflow(workload: Workload) -> bytes:
    return _lines([header_line("workflow"), *_workflow_rows(workload)])


def _workflow_rows(workload: Workload) -> list[str]:
    lines = []
    for job in workload.jobs:
        workflow = str(job.id)
        for task in job.tasks:
            nprocs, requested = _processor_columns(task)
            lines.append(pad((
                workflow, str(task.id), format_number(task.submit_time_s), _time(task.runtime_s),
                nprocs, requested, " ".join(str(needed) for needed in task.dependencies),
            )))
    return lines


def _write_archive(workload: Workload) -> bytes:
    return _lines([header_line("archive"), *_archive_rows(workload)])


def _archive_rows(workload: Workload) -> list[str]:
    lines = []
    for job in workload.jobs:
        for task in job.tasks:
            values: dict[str, str] = dict.fromkeys(ARCHIVE_COLUMNS, "-1")
            nprocs, requested = _processor_columns(task)
            values["JobID"] = str(task.id)
            values["SubmitTime"] = format_number(task.submit_time_s)
            values["RunTime"] = _time(task.runtime_s)
            values["ReqTime"] = _time(task.requested_time_s)
            values["NProcs"] = nprocs
            values["ReqNProcs"] = requested
            memory = task.request.memory_mb
            if memory is not None:
                values["ReqMemory"] = format_number(memory * 1024 / task.request.cores)
            if task.user is not None:
                values["UserID"] = task.user
            if task.group is not None:
                values["GroupID"] = task.group
            for key, value in task.extras.items():
                if key in ARCHIVE_EXTRA_KEYS:
                    name = key[len(EXTRA_PREFIX):]
                    values[name] = value if name in _ARCHIVE_TOKENS else format_number(value)
            _recorded_texts(task, values)
            lines.append(" ".join(values[name] for name in ARCHIVE_COLUMNS))
    return lines


def _recorded_texts(task: Task, values: dict[str, str]) -> None:
    """The archive columns of a task's recorded fields (in normal form) into ``values``."""
    recorded_texts(task, task.extras.get(STATUS_KEY), SECONDS, CODES, values)


def _lines(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def write(document: Document) -> WriteResult:
    """GWF bytes for ``normal_form(document)``: the variant ``variant_of`` chooses (a
    document without a workload writes an empty workflow file). A workload held as columns
    is written a column at a time (``columnar.py``) unless it needs the row writer."""
    columns = columns_of(document.workload)
    if columns is not None:
        from dcx.formats.gwf.columnar import written_columns

        written = written_columns(columns)
        if written is not None:
            return WriteResult(written)
    return write_rows(document)


def write_rows(document: Document) -> WriteResult:
    """``write`` task by task, on the normal form's objects."""
    normal, _, variant = _normalized(document)
    workload = normal.workload or Workload()
    if variant == "archive":
        return WriteResult(_write_archive(workload))
    return WriteResult(_write_workflow(workload))


# --------------------------------------------------------------------------- chunks


def variant_fields(workload: Workload) -> tuple[frozenset[str], frozenset[str]]:
    """The field paths of ``workload`` that only the archive variant keeps and those only the
    workflow variant keeps: ``variant_of`` compares their numbers, a file written a chunk at
    a time the numbers of their unions over its chunks (``variant_for``)."""
    columns = columns_of(workload)
    if columns is not None:
        from dcx.formats.gwf.columnar import columns_variant_fields, one_node_columns_of

        fields = columns_variant_fields(one_node_columns_of(columns))
        if fields is not None:
            return fields
    return _variant_fields_of_rows(workload)


def part_normal_form(document: Document, variant: Variant) -> tuple[Document, frozenset[str]]:
    """``normal_form`` of a chunk of a file written in ``variant``, every dependency naming
    a task of the file (``write_part``'s), and the held field paths it changes: what a
    chunk's losses are measured against."""
    workload = document.workload
    own_document_keys = any(key.startswith(EXTRA_PREFIX) for key in document.extras)
    if workload is None:
        return normal_form(document), frozenset()
    given = columns_of(workload)
    columns = None if given is None else columns_with_counterparts(given, GWF_FROM_SWF)
    found = None
    folded: set[str] = set()
    if columns is not None:
        from dcx.formats.gwf.columnar import on_one_node, part_columns

        on_node = on_one_node(columns, folded)
        found = None if on_node is None else part_columns(on_node, variant)
    if found is not None:
        lost = folded | found[1]
        new_workload = workload if found[0] is given else replace(workload,
                                                                  jobs=JobRows(found[0]))
    else:
        new_workload, lost = _normal_jobs(workload, variant, dependencies_known=True)
    return _without_own_workload_keys(document, new_workload, lost, own_document_keys), \
        frozenset(lost)


def write_part(document: Document, variant: Variant) -> bytes:
    """The task lines (no header line) ``write`` writes for a chunk of a GWF file, whose
    variant is ``variant`` (``variant_for`` the unions of its chunks' ``variant_fields``),
    every dependency naming a task of the file (maybe in another chunk), so kept as it
    is."""
    workload = document.workload or Workload()
    columns = columns_of(workload)
    if columns is not None:
        from dcx.formats.gwf.columnar import written_columns

        written = written_columns(columns, variant, dependencies_known=True)
        if written is not None:
            return written[written.index(b"\n") + 1:]
    normal, _ = _normal_jobs(workload, variant, dependencies_known=True)
    return _lines(_archive_rows(normal) if variant == "archive" else _workflow_rows(normal))


def read_part(data: bytes, variant: Variant | None, rows: Any = None, lines_before: int = 0
              ) -> tuple[ReadResult, Variant | None]:
    """The tasks of a chunk of whole lines of a GWF file as ``read`` reads them, each line
    counted from the chunk's first, without the checks across lines (a dependency may name a
    task of another chunk); ``variant``: the file's, when an earlier chunk had its first line
    with content (``None``: this chunk may have it, then its header line is read as there).
    A chunk with any error gives no document (the chunked reader says why). Also the variant
    once known. ``rows``: the chunk's task lines as the chunked reader's accept path read
    them (``stream._Stream.chunk_rows``, line ``lines_before + 1`` of the file the chunk's
    first), so that the chunk is not parsed again."""
    if rows is not None and variant is not None:
        from dcx.formats.gwf.fast import part_of_rows

        found = part_of_rows(rows, variant, lines_before)
        if found is not None:
            return found, variant
    if len(data) >= FAST_READ_BYTES:
        from dcx.formats.gwf.fast import read_part_fast

        fast = read_part_fast(data, variant)
        if fast is not None:
            return fast
    text, problem = decode_text(data, "gwf")
    if problem is not None or text is None:
        return ReadResult(None, () if problem is None else (problem,)), variant
    lines = text.split("\n")
    start = 0
    if variant is None:
        first = next((i for i, raw in enumerate(lines)
                      if raw.strip() and not raw.lstrip().startswith("#")), None)
        if first is None:
            return ReadResult(Document(workload=Workload())), None
        variant = "archive" if _looks_archive(lines[first]) else "workflow"
        reader = _Reader(lines, variant)
        start = workflow_start(reader, first) if variant == "workflow" else first
    reader = _Reader(lines, variant)
    tasks, placement = (workflow_lines(reader, start) if variant == "workflow"
                        else archive_lines(reader, start))
    if reader.errors or reader.stopped:
        return ReadResult(None, tuple(reader.diagnostics)), variant
    workload = Workload(jobs=tuple(Job(id=job_id, tasks=tuple(members))
                                   for job_id, members in placement.items()))
    return ReadResult(Document(workload=workload), (), _source_map(workload, tasks)), variant
