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
    them (RunTime, NProcs, ReqTime, ReqMemory, UserID, GroupID); every other known column is
    kept in ``Task.extras`` under ``gwf:<column name>`` unless it is ``-1``.

Mapping details shared by both variants:

* ``-1`` in RunTime means unknown (``runtime_s = None``, with a warning in the workflow
  variant because a scheduler cannot run such a task); any other negative runtime is an error.
* NProcs ``-1`` (allocated count unknown) takes the cores from ReqNProcs and keeps
  ``gwf:NProcs = -1``; ReqNProcs is kept as ``gwf:ReqNProcs`` only when it differs from NProcs.
* ReqMemory is KB per processor; the model's ``request.memory_mb`` is per node, so
  ``memory_mb = ReqMemory x NProcs / 1024``.
* Ids are non-negative integers, as the archives and SC18 write them. dcx also reads and
  writes text ids that cannot be mistaken for numbers (``t1``, ``task-7``: starting with an ASCII
  letter or ``_``, without whitespace, commas or semicolons), with a
  ``gwf.text-ids`` warning because SC18 cannot read them. The writer renumbers tasks (and
  jobs) 1..n when their ids are neither, and reports it as a loss. A decimal text id
  (``"12"``, from a format whose ids are strings) is written as that number and reads back
  as the integer.
* Nodes are not held: a task runs on one node, so a multi-node request keeps only its per-node
  cores (the model's normal form, see ``dcx.core.restrict``), reported as a loss.
* Plain (free-form) extras keys have no column, so ``task.extras`` is not held; ``gwf:`` keys
  are the format's own and survive.

Writer variant: by default ``write`` keeps the variant the document was read from (the reader
records an archive file as ``Document.extras["gwf:variant"] = "archive"``) and writes the
workflow variant, the one schedulers read, otherwise; ``HOLDS`` describes that default.
``variant="workflow"``/``"archive"`` forces one; ``"auto"`` writes both and keeps the one that
loses fewer values.

Each parsed line is a *record* described by ``schemas/gwf.schema.json``. Records are checked
field by field in Python (the fast path); a line that fails is validated against the schema for
the detailed message. Diagnostics point at ``/lines/<line number>/<column name>`` (the token is
the 1-based line number, the same as ``line``) and carry the field's column in the line.

The dependency checks here (duplicate ids, unknown dependencies, cycles) are shared by the
other trace formats.

Divergences
-----------

1. sc18 drops the first line unconditionally; dcx drops it only when it is the header (a
   first data line is read, with a ``gwf.no-header`` warning saying sc18 would lose it).
2. sc18 crashes on an unknown dependency id and hangs (never schedules) on a cycle; the
   2018 Python loader silently drops unknown ids. dcx reports both as located errors.
3. sc18 does not clamp negative runtimes (the 2020 OpenDC reader clamps them at 0); dcx
   reads ``-1`` as unknown and rejects any other negative value.
4. sc18 ignores ReqNProcs; dcx keeps it (in extras when it differs from NProcs).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import (
    Diagnostic,
    LossCounter,
    ReadResult,
    WriteResult,
    error,
    warning,
)
from dcx.core.limits import LIMITS, paused_gc
from dcx.core.model import (
    Document,
    Environment,
    Id,
    Job,
    ResourceRequest,
    StartMode,
    Task,
    Workload,
)
from dcx.parsing.schemas import load_schema, schema_diagnostics

SCHEMA = "gwf.schema.json"

Variant = Literal["workflow", "archive"]

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

# Archive columns by kind. "measure": number >= 0 or -1; "code": integer >= -1;
# "token": any non-blank token ("-1" unknown). The mapped columns are handled one by one.
_ARCHIVE_MEASURES = frozenset({
    "WaitTime", "AverageCPUTimeUsed", "UsedMemory", "UsedNetwork", "UsedLocalDiskSpace",
    "ReqNetwork", "ReqLocalDiskSpace",
})
_ARCHIVE_CODES = frozenset({
    "Status", "ExecutableID", "QueueID", "PartitionID", "OrigSiteID", "LastRunSiteID",
})
_ARCHIVE_TOKENS = frozenset({
    "JobStructure", "JobStructureParams", "UsedResources", "ReqPlatform", "ReqResources",
    "VOID", "ProjectID",
})
_ARCHIVE_EXTRA_COLUMNS = _ARCHIVE_MEASURES | _ARCHIVE_CODES | _ARCHIVE_TOKENS

EXTRA_PREFIX = "gwf:"
_PROCESSOR_EXTRAS = frozenset({"gwf:NProcs", "gwf:ReqNProcs"})
_ARCHIVE_EXTRA_KEYS = frozenset(EXTRA_PREFIX + name for name in _ARCHIVE_EXTRA_COLUMNS)

# ``gwf:`` extras survive any GWF round trip (they are the format's own); plain extras keys
# have no place in either variant, so ``task.extras`` is not held.
HOLDS_WORKFLOW = frozenset({
    "job", "task.id", "task.submit_time_s", "task.runtime_s", "task.request.cores",
    "task.dependencies", "task.dependencies.multiple",
})
HOLDS_ARCHIVE = frozenset({
    "task.id", "task.submit_time_s", "task.runtime_s", "task.requested_time_s",
    "task.request.cores", "task.request.memory_mb", "task.user", "task.group",
})
HOLDS: frozenset[str] = HOLDS_WORKFLOW
"""What ``write`` holds by default (the workflow variant); see ``VARIANT_KEY``."""

VARIANT_KEY = "gwf:variant"
"""``Document.extras`` key the reader sets to ``"archive"`` for an archive-format file, so that
writing the document back keeps the archive variant."""

MAX_ERRORS = 1000
"""Reading stops after this many errors: a garbage file must not produce millions."""

_FIELD_WIDTH = 10


# --------------------------------------------------------------------------- shared text helpers


def decode_text(data: bytes, prefix: str) -> tuple[str | None, Diagnostic | None]:
    """UTF-8 text of a trace file, or the located reason why not."""
    if len(data) > LIMITS.max_input_bytes:
        return None, error(
            f"file is {len(data):,} bytes; the limit is {LIMITS.max_input_bytes:,}",
            "input.too-large",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, error(
            f"invalid UTF-8 byte 0x{data[exc.start]:02x}", f"{prefix}.encoding",
            line=line, column=column,
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, None


_FLOAT_TEXT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def parse_int(token: str) -> int | None:
    """A plain ASCII decimal integer (no ``_`` separators, no Unicode digits), else ``None``."""
    if token.isdigit() and token.isascii() and len(token) < 19:
        return int(token)
    if not token.isascii() or "_" in token:
        return None
    try:
        return int(token)
    except ValueError:  # also the 4,300-digit guard
        return None


def parse_number(token: str) -> int | float | None:
    """An integer, or a finite decimal/exponent float; ``None`` for anything else."""
    as_int = parse_int(token)
    if as_int is not None:
        return as_int
    if not _FLOAT_TEXT.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def format_number(value: float) -> str:
    """Integers without a decimal point; other floats as the shortest exact repr."""
    if isinstance(value, int):
        return str(int(value))
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def is_trace_id(value: object) -> bool:
    """An id a trace can write back exactly: an integer >= 0, or a text token that cannot be
    mistaken for a number (see ``is_id_token``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value >= 0
    # A decimal text id ("12", from a format whose ids are strings) is written as the number
    # it spells and reads back as that integer: the id's type changes, its identity does not.
    return isinstance(value, str) and (is_id_token(value) or _DECIMAL.fullmatch(value) is not None)


def is_id_token(token: str) -> bool:
    """A text id: starts with an ASCII letter or ``_``; no whitespace, commas or semicolons."""
    return bool(token) and token[0] in _ID_START and _SEPARATOR.search(token) is None


def parse_id(token: str) -> Id | None:
    """An integer id >= 0, a text id token, or ``None``."""
    number = parse_int(token)
    if number is not None:
        return number if number >= 0 else None
    return token if is_id_token(token) else None


_ID_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_SEPARATOR = re.compile(r"[\s,;]")
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,17}")


# --------------------------------------------------------------------------- dependency checks

Locate = Callable[[int, int | None], dict[str, Any]]
"""``locate(task_index, dependency_index_or_None)`` → ``line``/``column``/``pointer`` kwargs
for a diagnostic about the task's id (``None``) or one of its dependencies."""


def dependency_diagnostics(
    ids: Sequence[Id], dependencies: Sequence[Sequence[Id]], locate: Locate, prefix: str
) -> list[Diagnostic]:
    """Duplicate task ids, dependencies on unknown ids, and dependency cycles (one report per
    cycle found, naming its members), each at the place in the file that shows it."""
    found: list[Diagnostic] = []
    index_of: dict[Id, int] = {}
    for index, task_id in enumerate(ids):
        if task_id in index_of:
            first = locate(index_of[task_id], None).get("line")
            found.append(error(
                f"task id {task_id!r} is used again (first on line {first})",
                f"{prefix}.duplicate-id", **locate(index, None),
            ))
        else:
            index_of[task_id] = index
    resolved: list[list[int]] = []
    for index, needs in enumerate(dependencies):
        targets = []
        for position, needed in enumerate(needs):
            target = index_of.get(needed)
            if target is None:
                found.append(error(
                    f"task {ids[index]!r} depends on task {needed!r}, which is not in the file",
                    f"{prefix}.unknown-dependency", **locate(index, position),
                ))
            else:
                targets.append(target)
        resolved.append(targets)
    found.extend(_cycle_diagnostics(ids, resolved, locate, prefix))
    return found


_CYCLE_SHOWN = 6
"""Members of a cycle named in its message; a 100,000-task ring must not make a 700 KB line."""


def _cycle_text(members: list[Id]) -> str:
    if len(members) <= _CYCLE_SHOWN:
        return " → ".join(repr(member) for member in [*members, members[0]])
    shown = " → ".join(repr(member) for member in members[:_CYCLE_SHOWN - 1])
    return f"of {len(members):,} tasks {shown} → … → {members[-1]!r} → {members[0]!r}"


def _cycle_diagnostics(
    ids: Sequence[Id], resolved: list[list[int]], locate: Locate, prefix: str
) -> list[Diagnostic]:
    # Kahn's algorithm removes every task that can eventually run; what remains lies on a
    # cycle or waits on one. Iterative, so a 100,000-task chain costs no Python stack.
    # A repeated dependency is counted, and later released, once per occurrence.
    waiting = [len(targets) for targets in resolved]
    dependents: list[list[int]] = [[] for _ in resolved]
    for index, targets in enumerate(resolved):
        for target in targets:
            dependents[target].append(index)
    ready = [index for index, count in enumerate(waiting) if count == 0]
    while ready:
        done = ready.pop()
        for child in dependents[done]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    stuck = [index for index, count in enumerate(waiting) if count > 0]
    if not stuck:
        return []
    remaining = set(stuck)
    found: list[Diagnostic] = []
    on_cycles = 0
    for start in stuck:
        if start not in remaining:
            continue
        # Every stuck task has a stuck dependency, so following them must revisit a task.
        path: list[int] = []
        position: dict[int, int] = {}
        current: int | None = start
        while current is not None and current not in position:
            position[current] = len(path)
            path.append(current)
            # None: this task only waits on a cycle already reported.
            current = next((t for t in resolved[current] if t in remaining), None)
        if current is not None:
            cycle = path[position[current]:]
            names = _cycle_text([ids[i] for i in cycle])
            closing = cycle[-1]
            on_cycles += len(cycle)
            found.append(error(
                f"dependency cycle {names}: {'this task' if len(cycle) == 1 else 'these tasks'}"
                " can never start",
                f"{prefix}.dependency-cycle",
                **locate(closing, resolved[closing].index(cycle[0])),
            ))
        remaining.difference_update(path)
    blocked = len(stuck) - on_cycles
    if blocked > 0:
        found.append(warning(
            f"{blocked} more task(s) depend on a cycle and can never start",
            f"{prefix}.blocked-by-cycle",
        ))
    return found


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


# --------------------------------------------------------------------------- read


@dataclass
class _Reader:
    lines: list[str]
    variant: Variant
    diagnostics: list[Diagnostic]
    errors: int = 0

    def report(self, diagnostic: Diagnostic) -> None:
        if diagnostic.is_error:
            self.errors += 1
        if self.errors <= MAX_ERRORS:
            self.diagnostics.append(diagnostic)

    @property
    def stopped(self) -> bool:
        return self.errors > MAX_ERRORS

    # -- positions, computed only for diagnostics ------------------------------------

    def field_column(self, line_number: int, field: int, token: int | None = None) -> int:
        text = self.lines[line_number - 1]
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
        return _read(data)


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
        empty = Document(workload=Workload(), extras={VARIANT_KEY: "archive"})
        return ReadResult(empty, (warning("file has no task lines", "gwf.no-tasks"),))
    variant: Variant = "archive" if _looks_archive(lines[first]) else "workflow"
    reader = _Reader(lines, variant, [])
    if variant == "workflow":
        tasks, placement = _read_workflow(reader, first)
    else:
        tasks, placement = _read_archive(reader, first)
    if not reader.stopped:
        ids = [task.id for _, task in tasks]
        lines_of = [line for line, _ in tasks]

        def locate(index: int, dependency: int | None) -> dict[str, Any]:
            if dependency is None:
                return reader.locate(lines_of[index], "JobID")
            return reader.locate(lines_of[index], "Dependencies", dependency)

        for diagnostic in dependency_diagnostics(
            ids, [task.dependencies for _, task in tasks], locate, "gwf"
        ):
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
    extras = {VARIANT_KEY: "archive"} if variant == "archive" else {}
    return ReadResult(Document(workload=workload, extras=extras), tuple(reader.diagnostics),
                      _source_map(workload, tasks))


def _source_map(workload: Workload,
                tasks: list[tuple[int, Task]]) -> dict[str, tuple[int, int | None]]:
    """Each task's line, for checks made later on the model (the scheduler's)."""
    line_of = {id(task): line for line, task in tasks}
    return {f"/workload/jobs/{j}/tasks/{t}": (line_of[id(task)], 1)
            for j, job in enumerate(workload.jobs) for t, task in enumerate(job.tasks)}


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
    tasks: list[tuple[int, Task]] = []
    placement: dict[Id, list[Task]] = {}
    requests: dict[int, ResourceRequest] = {}
    start = first
    if reader.lines[first].strip().startswith("WorkflowID"):
        start = first + 1
    else:
        reader.report(warning(
            "no header line: sc18 drops the first line unconditionally and would lose this task",
            "gwf.no-header", line=first + 1, column=1))
    for index in range(start, len(reader.lines)):
        if reader.stopped:
            break
        raw = reader.lines[index]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        line_number = index + 1
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
        workflow = parse_id(tokens[0])
        task_id = parse_id(tokens[1])
        submit = parse_number(tokens[2])
        runtime = parse_number(tokens[3])
        nprocs = parse_int(tokens[4])
        requested = parse_int(tokens[5])
        dependency_tokens = fields[6].split()
        dependencies = [parse_id(token) for token in dependency_tokens]
        if not (
            workflow is not None and task_id is not None
            and submit is not None and submit >= 0
            and runtime is not None and (runtime >= 0 or runtime == -1)
            and nprocs is not None and (nprocs >= 1 or nprocs == -1)
            and requested is not None and (requested >= 1 or requested == -1)
            and None not in dependencies
        ):
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
        if runtime == -1:
            reader.report(warning(
                f"task {task_id} has an unknown runtime (-1); a scheduler cannot run it",
                "gwf.unknown-runtime", **reader.locate(line_number, "RunTime")))
        cores, extras = _processors(nprocs, requested)
        request = requests.get(cores)
        if request is None:  # immutable, so one object per distinct core count
            request = requests[cores] = ResourceRequest(cores=float(cores))
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


def _read_archive(
    reader: _Reader, first: int
) -> tuple[list[tuple[int, Task]], dict[Id, list[Task]]]:
    tasks: list[tuple[int, Task]] = []
    placement: dict[Id, list[Task]] = {}
    for index in range(first, len(reader.lines)):
        if reader.stopped:
            break
        stripped = reader.lines[index].strip()
        if not stripped or stripped.startswith("#"):
            continue
        line_number = index + 1
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
        value: Any
        if name in _ARCHIVE_TOKENS:
            value = token
        elif name == "JobID":
            value = parse_id(token)
            valid = valid and value is not None
            value = _id_or_value(token)
        elif name == "SubmitTime":
            value = parse_number(token)
            valid = valid and value is not None and value >= 0
        elif name in ("NProcs", "ReqNProcs"):
            value = parse_int(token)
            valid = valid and value is not None and (value >= 1 or value == -1)
        elif name in _ARCHIVE_CODES or name in ("UserID", "GroupID"):
            value = parse_int(token)
            valid = valid and value is not None and value >= -1
        else:  # measures: RunTime, ReqTime, ReqMemory and the extras measures
            value = parse_number(token)
            valid = valid and value is not None and (value >= 0 or value == -1)
        record[name] = token if value is None else value
    return record, valid


def _archive_task(record: dict[str, Any]) -> Task:
    cores, extras = _processors(record["NProcs"], record["ReqNProcs"])
    for name in ARCHIVE_COLUMNS:
        if name in _ARCHIVE_EXTRA_COLUMNS and record[name] not in (-1, "-1"):
            extras[EXTRA_PREFIX + name] = record[name]
    memory = record["ReqMemory"]
    return Task(
        id=record["JobID"],
        submit_time_s=float(record["SubmitTime"]),
        runtime_s=None if record["RunTime"] == -1 else float(record["RunTime"]),
        requested_time_s=None if record["ReqTime"] == -1 else float(record["ReqTime"]),
        request=ResourceRequest(
            cores=float(cores),
            memory_mb=None if memory == -1 else memory * cores / 1024,
        ),
        user=None if record["UserID"] == -1 else str(record["UserID"]),
        group=None if record["GroupID"] == -1 else str(record["GroupID"]),
        extras=extras,
    )


# --------------------------------------------------------------------------- write


def unheld_task_fields(task: Task) -> Iterator[str]:
    """Field paths of ``task`` that carry a non-default value (for loss accounting)."""
    request = task.request
    checks = (
        ("task.submit_time_s", task.submit_time_s != 0.0),
        ("task.runtime_s", task.runtime_s is not None),
        ("task.requested_time_s", task.requested_time_s is not None),
        ("task.request.nodes", request.nodes != 1),
        ("task.request.cores", request.cores != 1.0),
        ("task.request.memory_mb", request.memory_mb is not None),
        ("task.request.gpus", request.gpus != 0),
        ("task.request.resources", bool(request.resources)),
        ("task.dependencies", bool(task.dependencies)),
        ("task.deadline_s", task.deadline_s is not None),
        ("task.start", task.start_mode is not StartMode.ANY or task.start_time_s is not None),
        ("task.preemptible", task.preemptible is not None),
        ("task.user", task.user is not None),
        ("task.group", task.group is not None),
        ("task.image", task.image is not None or task.image_size_mb is not None),
    )
    return (name for name, present in checks if present)


def has_plain_keys(extras: dict[str, Any]) -> bool:
    """Free-form keys (no ``fmt:`` prefix). Prefixed keys belong to their format: only that
    format keeps them, and dropping them elsewhere is not a loss (``dcx.core.restrict``)."""
    return any(":" not in key for key in extras)


def count_workload_losses(
    losses: LossCounter, document: Document, workload: Workload, holds: frozenset[str]
) -> None:
    """Workload- and job-level fields (and a topology) that a trace format cannot hold."""
    for name, present in (
        ("workload.name", workload.name is not None),
        ("workload.description", workload.description is not None),
        ("workload.time_origin", workload.time_origin is not None),
        ("workload.attributes", bool(workload.attributes)),
        ("workload.annotations", bool(workload.annotations)),
        ("workload.extras", has_plain_keys(workload.extras)),
    ):
        if present and name not in holds:
            losses.add(name, detail="not representable in this trace format")
    for job in workload.jobs:
        for name, present in (("job.name", job.name is not None),
                              ("job.user", job.user is not None),
                              ("job.extras", has_plain_keys(job.extras))):
            if present and name not in holds:
                losses.add(name)
    if document.environment is not None and document.environment != Environment():
        losses.add("environment", detail="a workload format holds no topology")


def task_numbering(tasks: Sequence[Task], losses: LossCounter) -> dict[Id, Id]:
    """Old id → written id: ids a trace can write back exactly are kept; otherwise every task
    is renumbered 1..n in workload order (the model's normal form for unheld task ids)."""
    ids = [task.id for task in tasks]
    if all(is_trace_id(i) for i in ids) and len(set(ids)) == len(ids):
        return {task_id: task_id for task_id in ids}
    losses.add("task.id", len(ids), "task ids are not unique integers or text tokens; "
               "tasks were renumbered 1..n in workload order")
    numbering: dict[Id, Id] = {}
    for position, task_id in enumerate(ids):
        numbering.setdefault(task_id, position + 1)
    return numbering


def _processor_columns(task: Task, losses: LossCounter) -> tuple[int, int]:
    """NProcs and ReqNProcs. Nodes are not held: only the per-node cores are written (the
    model's normal form drops ``nodes`` to 1)."""
    request = task.request
    if request.nodes != 1:
        losses.add("task.request.nodes", detail="GWF tasks run on one node; nodes dropped")
    cores = math.ceil(request.cores) if request.cores >= 1 else 1
    if cores != request.cores:
        losses.add("task.request.cores", detail="GWF processor counts are whole numbers >= 1; "
                   "rounded up")
    nprocs = task.extras.get("gwf:NProcs")
    requested = task.extras.get("gwf:ReqNProcs")
    written_nprocs = -1 if nprocs == -1 else cores
    written_requested = requested if _valid_processor_count(requested) else cores
    if written_nprocs == -1 and written_requested == -1:
        written_nprocs = cores
    return written_nprocs, written_requested


def _valid_processor_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and (value >= 1 or value == -1)


def _time_column(value: float | None, field: str, losses: LossCounter) -> str:
    if value is None:
        return "-1"
    if value < 0:
        losses.add(field, detail="negative times cannot be written; written as unknown (-1)")
        return "-1"
    return format_number(value)


def _pad(values: Sequence[str]) -> str:
    return ", ".join(f"{value:<{_FIELD_WIDTH}}" for value in values)


def _task_extras_losses(task: Task, writable: frozenset[str], losses: LossCounter) -> None:
    """Plain extras keys have no place in a GWF line (a loss); ``gwf:`` keys the variant cannot
    write are lost too; other formats' keys are not GWF's to keep (not a loss)."""
    for key in task.extras:
        if ":" not in key or (key.startswith(EXTRA_PREFIX) and key not in writable):
            losses.add("task.extras", detail="extras other than this variant's gwf: columns "
                       "were dropped")


def _workflow_job_ids(workload: Workload, losses: LossCounter) -> list[Id]:
    job_ids = [job.id for job in workload.jobs if job.tasks]
    if all(is_trace_id(i) for i in job_ids) and len(set(job_ids)) == len(job_ids):
        return job_ids
    losses.add("job", len(job_ids), "job ids are not unique integers or text tokens; "
               "jobs were renumbered 0..m-1")
    return list(range(len(job_ids)))


def _write_workflow(document: Document, workload: Workload) -> WriteResult:
    losses = LossCounter()
    count_workload_losses(losses, document, workload, HOLDS_WORKFLOW)
    tasks = list(workload.tasks())
    numbering = task_numbering(tasks, losses)
    losses.add("job.empty", sum(1 for job in workload.jobs if not job.tasks),
               "jobs without tasks have no line")
    job_ids = iter(_workflow_job_ids(workload, losses))
    lines = [_pad(WORKFLOW_COLUMNS)]
    for job in workload.jobs:
        if not job.tasks:
            continue
        workflow = next(job_ids)
        for task in job.tasks:
            for name in unheld_task_fields(task):
                if name not in HOLDS_WORKFLOW and name != "task.request.nodes":
                    losses.add(name)
            dependencies = []
            for needed in task.dependencies:
                if needed in numbering:
                    dependencies.append(str(numbering[needed]))
                else:
                    losses.add("task.dependencies", detail="dependencies on tasks that are not "
                               "in the workload were dropped")
            _task_extras_losses(task, _PROCESSOR_EXTRAS, losses)
            nprocs, requested = _processor_columns(task, losses)
            lines.append(_pad((
                str(workflow), str(numbering[task.id]),
                _time_column(task.submit_time_s, "task.submit_time_s", losses),
                _time_column(task.runtime_s, "task.runtime_s", losses),
                str(nprocs), str(requested), " ".join(dependencies),
            )))
    return WriteResult(("\n".join(lines) + "\n").encode(), losses.losses())


_USER_TEXT = re.compile(r"0|[1-9]\d{0,17}")


def _write_archive(document: Document, workload: Workload) -> WriteResult:
    losses = LossCounter()
    count_workload_losses(losses, document, workload, HOLDS_ARCHIVE)
    tasks = list(workload.tasks())
    numbering = task_numbering(tasks, losses)
    regrouped = sum(1 for job in workload.jobs
                    if len(job.tasks) != 1 or job.tasks[0].id != job.id or job.name is not None
                    or job.user is not None or job.extras)
    losses.add("job", regrouped, "every archive line is a single-task job whose id is the "
               "task id")
    losses.add("job.empty", sum(1 for job in workload.jobs if not job.tasks),
               "jobs without tasks have no line")
    lines = ["# " + " ".join(ARCHIVE_COLUMNS)]
    for task in tasks:
        for name in unheld_task_fields(task):
            if name not in HOLDS_ARCHIVE and name != "task.request.nodes":
                losses.add(name)
        nprocs, requested = _processor_columns(task, losses)
        cores = requested if nprocs == -1 else nprocs
        values: dict[str, str] = {name: "-1" for name in ARCHIVE_COLUMNS}
        values["JobID"] = str(numbering[task.id])
        values["SubmitTime"] = _time_column(task.submit_time_s, "task.submit_time_s", losses)
        if values["SubmitTime"] == "-1":
            values["SubmitTime"] = "0"
        values["RunTime"] = _time_column(task.runtime_s, "task.runtime_s", losses)
        values["ReqTime"] = _time_column(task.requested_time_s, "task.requested_time_s", losses)
        values["NProcs"] = str(nprocs)
        values["ReqNProcs"] = str(requested)
        memory = task.request.memory_mb
        if memory is not None:
            values["ReqMemory"] = _time_column(memory * 1024 / cores, "task.request.memory_mb",
                                               losses)
        values["UserID"] = _user_column(task.user, "task.user", losses)
        values["GroupID"] = _user_column(task.group, "task.group", losses)
        _task_extras_losses(task, _PROCESSOR_EXTRAS | _ARCHIVE_EXTRA_KEYS, losses)
        for key, value in task.extras.items():
            if key in _ARCHIVE_EXTRA_KEYS:
                text = _extra_column(key, value)
                if text is None:
                    losses.add("task.extras", detail="gwf: extras whose values do not fit "
                               "their archive column were dropped")
                else:
                    values[key[len(EXTRA_PREFIX):]] = text
        lines.append(" ".join(values[name] for name in ARCHIVE_COLUMNS))
    return WriteResult(("\n".join(lines) + "\n").encode(), losses.losses())


def _user_column(value: str | None, field: str, losses: LossCounter) -> str:
    if value is None:
        return "-1"
    if _USER_TEXT.fullmatch(value):
        return value
    losses.add(field, detail="GWF user and group ids are non-negative integers")
    return "-1"


def _extra_column(key: str, value: object) -> str | None:
    """The text for an archive extras column, or ``None`` when it cannot be written."""
    if key not in _ARCHIVE_EXTRA_KEYS:
        return None
    name = key[len(EXTRA_PREFIX):]
    if name in _ARCHIVE_TOKENS:
        # str.split() is what the reader splits on, so it is the test of a single token.
        if isinstance(value, str) and value.split() == [value] and value != "-1":
            return value
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return None
    if name in _ARCHIVE_CODES:
        return str(value) if isinstance(value, int) and value >= 0 else None
    return format_number(value) if value >= 0 else None


def write(document: Document, variant: str | None = None) -> WriteResult:
    """GWF bytes for ``document.workload``.

    ``variant``: ``"workflow"`` or ``"archive"``; ``None`` (the default) keeps the variant the
    document was read from (``VARIANT_KEY``) and is ``workflow`` otherwise; ``"auto"`` writes
    both and keeps the one that loses fewer values (ties: ``workflow``). A document without a
    workload writes an empty workflow file.
    """
    workload = document.workload or Workload()
    if variant is None:
        variant = "archive" if document.extras.get(VARIANT_KEY) == "archive" else "workflow"
    if variant == "workflow":
        return _write_workflow(document, workload)
    if variant == "archive":
        return _write_archive(document, workload)
    if variant != "auto":
        return WriteResult(b"", diagnostics=(error(
            f"unknown GWF variant {variant!r}; use workflow, archive or auto",
            "gwf.variant"),))
    workflow = _write_workflow(document, workload)
    if not workflow.losses:
        return workflow
    archive = _write_archive(document, workload)
    lost_workflow = sum(loss.count for loss in workflow.losses)
    lost_archive = sum(loss.count for loss in archive.losses)
    return archive if lost_archive < lost_workflow else workflow


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
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
)
