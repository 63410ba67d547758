"""SWF's reader (line by line, and the vectorised accept path for large files), normal form
and writer: the format's reference text, sniffer and declaration are the package's
(``dcx.formats.swf``), which imports this module on first use."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from dcx.core.columns import (
    ExtraColumn,
    JobRows,
    RowLines,
    Strings,
    WorkloadColumns,
    all_distinct,
    all_found,
    columns_of,
    concat_strings,
)
from dcx.core.counterparts import SWF_FROM_GWF, columns_with_counterparts, with_counterparts
from dcx.core.diagnostics import (
    Diagnostic,
    ReadResult,
    WriteResult,
    error,
    warning,
)
from dcx.core.ids import job_holding
from dcx.core.limits import LIMITS, paused_gc
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
from dcx.core.restrict import regrouped
from dcx.core.shapes import (
    only_resplit,
    only_resplit_rows,
    single_core_node_columns,
    single_core_nodes,
    whole_count,
)
from dcx.formats.swf import COLUMNS
from dcx.parsing.column_text import joined_lines, known_texts, number_texts
from dcx.parsing.schemas import load_schema, schema_diagnostics
from dcx.parsing.traces import (
    CODE_OF_STATUS,
    CODE_TEXT,
    MAX_ERRORS,
    PLAIN_CODES,
    ColumnsBuilder,
    ErrorBudget,
    FieldKinds,
    NumericColumns,
    decode_text,
    dependency_diagnostics,
    format_number,
    is_id_token,
    known_submit,
    known_time,
    lifted_recorded,
    numeric_records,
    parse_int,
    parse_number,
    recorded_texts,
    status_column,
    status_of_code,
    whole_seconds,
    written_ids,
    written_number_id,
    written_status_code,
)

SCHEMA = "swf.schema.json"

_INTEGERS = frozenset({
    "JobNumber", "AllocatedProcessors", "RequestedProcessors", "Status", "UserID", "GroupID",
    "ExecutableNumber", "QueueNumber", "PartitionNumber", "PrecedingJobNumber",
})
_TEXT_IDS = frozenset({"JobNumber", "PrecedingJobNumber", "UserID", "GroupID"})
_USER_COLUMN = COLUMNS.index("UserID")
_GROUP_COLUMN = COLUMNS.index("GroupID")
_EXTRA_COLUMNS = ("Status",)
"""Fields kept in ``swf:`` extras: the Status codes the task's status does not give back
(partial executions: ``dcx.parsing.traces.STATUS_OF_CODE``)."""
_EXTRA_KEYS = frozenset("swf:" + name for name in _EXTRA_COLUMNS)
_STATUS_KEY = "swf:Status"
_SECONDS = {"WaitTime": "wait_time_s", "AverageCPUTime": "cpu_time_s",
            "ThinkTime": "think_time_s"}
"""Recorded fields in seconds, by their ``Task`` field."""
_CODES = {"ExecutableNumber": "application", "QueueNumber": "queue",
          "PartitionNumber": "partition"}
"""Integer code fields, their decimal texts in these ``Task`` fields."""
_ALLOCATED_KEY = "swf:AllocatedProcessors"
_REQUESTED_KEY = "swf:RequestedProcessors"
_PRECEDING_KEY = "swf:PrecedingJobNumber"
TRAILING_KEY = "swf:TrailingFields"
"""The fields after the 18th of a job line (Alea's 21-field traces), as their texts."""
COMMENTS_KEY = "swf:comments"
START_KEY = "UnixStartTime"

_HEADER_FIELD = re.compile(r";\s*([A-Za-z][A-Za-z0-9_-]*)\s*:\s?(.*)")
_DECIMAL_DIGITS = re.compile(r"[0-9]{1,18}")


# --------------------------------------------------------------------------- read


class _Reader(ErrorBudget):
    """The diagnostics of a read, and the lines they locate: the file's, or a chunk's whose
    first line is line ``first_line`` of the file (the chunked reader, ``stream.py``)."""

    def __init__(self, lines: list[str], first_line: int = 1) -> None:
        super().__init__()
        self.lines = lines
        self.first_line = first_line

    def locate(self, line_number: int, column_name: str) -> dict[str, Any]:
        text = self.lines[line_number - self.first_line]
        spans = [m.start() for m in re.finditer(r"\S+", text)]
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
        if len(data) >= FAST_READ_BYTES:
            fast = read_fast(data)
            if fast is not None:
                return fast
        return _read(data)


FAST_READ_BYTES = 1 << 20
"""Files this large try the vectorised accept path first; smaller ones are read line by line
(importing numpy and pyarrow would cost a small file more than it saves)."""

CHUNK_BYTES = 4 << 20
"""Bytes of job lines the vectorised path converts at once (its working memory)."""

FAST_KINDS = FieldKinds(
    names=COLUMNS,
    integers=_INTEGERS - {"UserID", "GroupID"},
    texts=frozenset({"UserID", "GroupID"}),
    minus_one=frozenset(COLUMNS) - {"JobNumber", "SubmitTime"},
)
"""What the vectorised path accepts per field: a strict subset of what ``_record`` accepts
(numbers only, no text ids, ``-1`` the only negative value and only where ``_record``
allows it)."""


def read_fast(data: bytes, chunk_bytes: int = CHUNK_BYTES) -> ReadResult | None:
    """The vectorised accept path: the columnar document of a file that the exact path
    (``_read``) reads with no diagnostic at all, or ``None`` whenever the file may hold
    anything it would report (the caller then runs the exact path). The same document
    as ``_read``, as columns."""
    if len(data) > LIMITS.max_input_bytes:
        return None
    head = _header_lines(data)
    if head is None:
        return None
    header, data, position, line_number = head
    records = numeric_records(data, position, line_number, FAST_KINDS, chunk_bytes)
    return None if records is None else _fast_result(header, records)


def read_rows(data: bytes, rows: NumericColumns | None, lines_before: int) -> ReadResult:
    """``read(data)`` for a chunk of whole lines whose job lines the chunked reader has
    already read as ``rows`` (``numeric_columns``, line ``lines_before + 1`` of the file the
    chunk's first): they are not read again when every line before them is a header line
    or blank, as ``read_fast`` would read the chunk. A preceding job that is not in the
    chunk is the extras value ``read`` keeps, without its warning (the chunked reader says
    of the file whether it is in it)."""
    if rows is None or len(data) < FAST_READ_BYTES or len(data) > LIMITS.max_input_bytes:
        return read(data)
    with paused_gc():
        head = _header_lines(data)
        if head is None or data.find(b";", head[2]) >= 0:
            return _read(data)  # a comment among the jobs: read_fast would not answer
        records = ColumnsBuilder(FAST_KINDS, len(rows.lines))
        records.add(rows)
        records.lines[:records.rows] -= lines_before
        fast = _fast_result(head[0], records, chunk=True)
        return _read(data) if fast is None else fast


def _header_lines(data: bytes) -> tuple[_Header, bytes, int, int] | None:
    """The header lines before the first job line, what follows a byte order mark, and
    where the first job line starts and its number; ``None`` when the exact path would say
    something of a header line."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    header = _Header()
    budget = ErrorBudget()
    position, line_number = 0, 1
    while position < len(data):
        end = data.find(b"\n", position)
        end = len(data) if end < 0 else end
        try:
            stripped = data[position:end].decode("utf-8").strip()
        except UnicodeDecodeError:
            return None
        if stripped and not stripped.startswith(";"):
            break
        if stripped:
            header.add(stripped, line_number, budget)
        position, line_number = end + 1, line_number + 1
    return None if budget.diagnostics else (header, data, position, line_number)


def _fast_result(header: _Header, records: ColumnsBuilder, chunk: bool = False
                 ) -> ReadResult | None:
    built = _columns_of_records(records, chunk)
    if built is None:
        return None
    columns, lines = built
    workload = header.workload(JobRows(columns))
    return ReadResult(Document(workload=workload), (), RowLines(columns, lines))


def _unique_and_preceded(ids: Any, preceding: Any, np: Any) -> bool:
    """Job numbers are unique and every preceding job is a line before the job's own."""
    count = len(ids)
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    if count > 1 and np.any(ordered[1:] == ordered[:-1]):
        return False
    follows = preceding != -1
    if not follows.any():
        return True
    wanted = preceding[follows]
    at = np.minimum(np.searchsorted(ordered, wanted), count - 1)
    return bool(np.all(ordered[at] == wanted) and np.all(order[at] < np.flatnonzero(follows)))


def _memory_column(memory: Any, np: Any) -> Any:
    """RequestedMemory (KB per processor, -1 unknown) as MB per node, in place."""
    unknown = memory == -1
    memory /= 1024
    memory[unknown] = math.nan
    return memory


def _columns_of_records(records: ColumnsBuilder, chunk: bool = False
                        ) -> tuple[WorkloadColumns, Any] | None:
    """The columns ``_task`` and ``_link_preceding_jobs`` would build from these records,
    or ``None`` where they would report: a job without processors, a repeated job number,
    a preceding job that is not in the file or not before the job (a cycle's only way).
    ``chunk``: the records are a chunk's, whose preceding jobs outside it are extras values
    (``read_rows``)."""
    import numpy as np

    if not records.rows:
        return None
    column = records.column
    lines = records.lines[:records.rows]
    ids = column("JobNumber")
    count = len(ids)
    allocated, requested = column("AllocatedProcessors"), column("RequestedProcessors")
    if np.any((allocated <= 0) & (requested <= 0)):
        return None
    preceding = column("PrecedingJobNumber")
    outside = None
    if chunk:
        outside = (preceding != -1) & ~np.isin(preceding, ids)
        if outside.any():
            outside_values, preceding = preceding, np.where(outside, -1, preceding)
        else:
            outside = None
    if not _unique_and_preceded(ids, preceding, np):
        return None
    follows = preceding != -1
    unknown = math.nan

    def known(name: str) -> Any:
        values = column(name)
        values[values == -1] = unknown  # in place: the builder's array is ours
        return values

    # a key no row holds has no column, as a workload read row by row has no such key
    extras: dict[str, ExtraColumn] = {
        key: ExtraColumn(values, present) for key, values, present in (
            (_ALLOCATED_KEY, allocated, allocated <= 0),
            (_REQUESTED_KEY, requested, (allocated > 0) & (requested != allocated)))
        if present.any()}
    status_codes = column("Status")
    partial = ~np.isin(status_codes, PLAIN_CODES)
    if partial.any():
        extras[_STATUS_KEY] = ExtraColumn(status_codes, partial)
    recorded: dict[str, Any] = {
        field: known(name) for name, field in _SECONDS.items() if records.known(name)}
    if records.known("UsedMemory"):
        recorded["used_memory_mb"] = _memory_column(column("UsedMemory"), np)
    recorded.update((field, Strings.of_integers(column(name)))
                    for name, field in _CODES.items() if records.known(name))
    if outside is not None:  # (after the others, as _link_preceding_jobs adds it)
        extras[_PRECEDING_KEY] = ExtraColumn(outside_values, outside)
    memory = column("RequestedMemory")
    nothing = Strings(np.full(count, -1, dtype=np.int32), ())
    columns = WorkloadColumns(
        ids=ids,
        submit_time_s=column("SubmitTime"),
        runtime_s=known("RunTime"),
        requested_time_s=known("RequestedTime"),
        nodes=np.where(allocated > 0, allocated, requested),
        cores=np.broadcast_to(np.float64(1.0), count),
        memory_mb=_memory_column(memory, np),
        gpus=np.broadcast_to(np.int64(0), count),
        deadline_s=np.broadcast_to(np.float64(unknown), count),
        user=concat_strings(records.texts["UserID"], "-1"),
        group=concat_strings(records.texts["GroupID"], "-1"),
        dependency_offsets=np.concatenate(([0], np.cumsum(follows))).astype(np.int64),
        dependency_ids=preceding[follows],
        extras=extras,
        job_ids=ids,
        job_offsets=np.arange(count + 1, dtype=np.int64),
        job_names=nothing,
        job_users=nothing,
        placement=np.ones(count, dtype=np.int8),  # PLACEMENTS: cores anywhere
        status=status_column(status_codes),
        **recorded,
    )
    return columns, lines


def _read(data: bytes) -> ReadResult:
    text, problem = decode_text(data, "swf")
    if problem is not None:
        return ReadResult(None, (problem,))
    assert text is not None
    if not text:  # blank lines alone are an (empty) SWF file, as the writer writes one
        return ReadResult(None, (error("file is empty", "swf.empty", line=1, column=1),))
    reader = _Reader(text.split("\n"))
    header = _Header()
    tasks: list[tuple[int, Task, Id | None]] = []
    _read_lines(reader, header, tasks)
    jobs = _link_preceding_jobs(tasks, reader)
    if reader.stopped:
        reader.diagnostics.append(error(
            f"more than {MAX_ERRORS} errors; reading stopped", "swf.too-many-errors"))
    if reader.errors:
        return ReadResult(None, tuple(reader.diagnostics))
    workload = header.workload(jobs)
    trailing = header.trailing_warning()
    if trailing is not None:
        reader.report(trailing)
    if not jobs:
        reader.report(warning("file has no job lines", "swf.no-jobs"))
    # Job numbers are unique once the reader has no errors, so they key the lines.
    line_of = {task.id: line for line, task, _ in tasks}
    return ReadResult(Document(workload=workload), tuple(reader.diagnostics),
                      task_lines(jobs, lambda task: line_of[task.id]))


def _read_lines(reader: _Reader, header: _Header,
                tasks: list[tuple[int, Task, Id | None]]) -> None:
    """Every line's own checks, in line order: header lines into ``header``, the jobs of
    valid job lines onto ``tasks`` (line number, task, preceding job or ``None``)."""
    for index, raw in enumerate(reader.lines):
        if reader.stopped:
            break
        stripped = raw.strip()
        if not stripped:
            continue
        line_number = reader.first_line + index
        if stripped.startswith(";"):
            header.add(stripped, line_number, reader)
            continue
        tokens = stripped.split()
        if len(tokens) < len(COLUMNS):
            reader.report(error(
                f"line has {len(tokens)} whitespace-separated fields; SWF has 18",
                "swf.field-count", line=line_number, column=1, pointer=f"/lines/{line_number}"))
            continue
        trailing = tokens[len(COLUMNS):]
        if trailing:
            header.trailing(line_number)
            tokens = tokens[:len(COLUMNS)]
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
        task = _task(record, tokens)
        if trailing:
            task.extras[TRAILING_KEY] = trailing
        tasks.append((line_number, task, None if preceding == -1 else preceding))


class _Header:
    """What the ``;`` lines of a file say, in line order."""

    def __init__(self) -> None:
        self.attributes: dict[str, Any] = {}
        self.comments: list[str] = []
        self.time_origin: str | None = None
        self.trailing_lines = 0
        """Job lines with fields after the 18th, and the first of them."""
        self.first_trailing_line: int | None = None

    def trailing(self, line_number: int) -> None:
        """A job line with fields after the 18th."""
        self.trailing_lines += 1
        if self.first_trailing_line is None:
            self.first_trailing_line = line_number

    def trailing_warning(self) -> Diagnostic | None:
        """One warning for every job line with fields after the 18th."""
        if not self.trailing_lines:
            return None
        lines = "1 job line has" if self.trailing_lines == 1 else \
            f"{self.trailing_lines:,} job lines have"
        return warning(f"{lines} more than 18 fields (first: line {self.first_trailing_line}); "
                       f"the fields after the 18th are kept as {TRAILING_KEY} and written "
                       "back, but PWA tools read 18 fields", "swf.trailing-fields",
                       line=self.first_trailing_line, column=1,
                       pointer=f"/lines/{self.first_trailing_line}")

    def add(self, stripped: str, line_number: int, reader: ErrorBudget) -> None:
        """One header line, stripped of surrounding white space (it starts with ``;``)."""
        field = _HEADER_FIELD.fullmatch(stripped)
        if field is None:
            self.comments.append(stripped[1:].strip())
        elif field.group(1) == START_KEY:
            self.time_origin = _time_origin(field.group(2).strip(), line_number, reader)
        else:
            _add_attribute(self.attributes, field.group(1),
                           attribute_value(field.group(2).rstrip()))

    def workload(self, jobs: Sequence[Job]) -> Workload:
        extras: dict[str, Any] = {COMMENTS_KEY: self.comments} if self.comments else {}
        return Workload(jobs=jobs, time_origin=self.time_origin,
                        attributes=self.attributes, extras=extras)


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


def _time_origin(text: str, line_number: int, reader: ErrorBudget) -> str | None:
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
    status = record["Status"]
    if status not in PLAIN_CODES:
        extras[_STATUS_KEY] = status
    used = record["UsedMemory"]
    memory = record["RequestedMemory"]
    return Task(
        id=record["JobNumber"],
        submit_time_s=float(record["SubmitTime"]),
        runtime_s=None if record["RunTime"] == -1 else float(record["RunTime"]),
        requested_time_s=(None if record["RequestedTime"] == -1
                          else float(record["RequestedTime"])),
        request=ResourceRequest(nodes=nodes, cores=1.0,
                                memory_mb=None if memory == -1 else memory / 1024,
                                placement=Placement.CORES),
        # The token as written, so "007" stays "007".
        user=None if record["UserID"] == -1 else tokens[_USER_COLUMN],
        group=None if record["GroupID"] == -1 else tokens[_GROUP_COLUMN],
        status=status_of_code(status),
        wait_time_s=_seconds(record["WaitTime"]),
        used_memory_mb=None if used == -1 else used / 1024,
        cpu_time_s=_seconds(record["AverageCPUTime"]),
        application=_code_text(record["ExecutableNumber"]),
        queue=_code_text(record["QueueNumber"]),
        partition=_code_text(record["PartitionNumber"]),
        think_time_s=_seconds(record["ThinkTime"]),
        extras=extras,
    )


def _seconds(value: int | float) -> float | None:
    return None if value == -1 else float(value)


def _code_text(value: int) -> str | None:
    return None if value == -1 else str(value)


def _link_preceding_jobs(
    tasks: list[tuple[int, Task, Id | None]], reader: _Reader
) -> tuple[Job, ...]:
    """Preceding jobs in the file become dependencies; others stay in extras (a warning)."""
    known = {task.id for _, task, _ in tasks}
    linked: list[Task] = []
    for _, task, preceding in tasks:
        if preceding is None:
            linked.append(task)
        elif preceding in known:
            linked.append(Task(**{**task.__dict__, "dependencies": (preceding,)}))
        else:
            linked.append(Task(**{**task.__dict__,
                                  "extras": {**task.extras, "swf:PrecedingJobNumber": preceding}}))
    lines = [line for line, _, _ in tasks]
    cross_file_diagnostics([task.id for _, task, _ in tasks],
                           [preceding for _, _, preceding in tasks], known,
                           lambda index, column: reader.locate(lines[index], column), reader)
    return tuple(Job(id=task.id, tasks=(task,)) for task in linked)


def cross_file_diagnostics(ids: Sequence[Id], preceding: Sequence[Id | None],
                           known: Container[Id], locate: Callable[[int, str], dict[str, Any]],
                           reader: ErrorBudget) -> None:
    """The checks across the lines of a file, reported in order: preceding jobs that are not
    in it (``known``: the file's job numbers), then repeated job numbers and cycles through
    preceding jobs. ``locate(index, field)`` places the ``index``-th job's field. The
    chunked reader passes only the jobs these checks can concern, in file order. A missing
    preceding job is not said when a line did not read: it may be that job."""
    for index, needed in enumerate(preceding):
        if needed is not None and needed not in known and not reader.errors:
            reader.report(warning(
                f"job {ids[index]} follows job {needed}, which is not in the file; the "
                "dependency is kept in extras only",
                "swf.preceding-job-missing", **locate(index, "PrecedingJobNumber")))
    if reader.stopped:
        return

    def place(index: int, dependency: int | None) -> dict[str, Any]:
        return locate(index, "JobNumber" if dependency is None else "PrecedingJobNumber")

    dependencies = [(needed,) if needed is not None and needed in known else ()
                    for needed in preceding]
    for diagnostic in dependency_diagnostics(ids, dependencies, place, "swf"):
        reader.report(diagnostic)


# --------------------------------------------------------------------------- normal form


def _writable_name(value: str) -> bool:
    """Whether a user or group is an SWF column as it is: digits (the PWA's user and group
    ids are numbers, and AccaSim parses them as integers)."""
    return _DECIMAL_DIGITS.fullmatch(value) is not None


NAME_NUMBERS_FROM = 10 ** 12
"""Numbers written for names start here: far above the user and group ids of real logs."""


def name_number(name: str) -> str:
    """The number SWF writes for a user or group name that is not a number: made from the
    name alone (a 40-bit hash above ``NAME_NUMBERS_FROM``), so that a name has the same
    number in every file and in every chunk of a file converted in chunks."""
    from hashlib import blake2b

    digest = blake2b(name.encode(), digest_size=5).digest()
    return str(NAME_NUMBERS_FROM + int.from_bytes(digest, "big"))


def loss_notes(document: Document) -> dict[str, str]:
    """The number ``normal_form`` writes for the first user and group name that is not a
    number, said on their loss lines (``FormatDeclaration.loss_notes``)."""
    workload = document.workload
    if workload is None:
        return {}
    columns = columns_of(workload)
    notes: dict[str, str] = {}
    for path, field in (("task.user", "user"), ("task.group", "group")):
        names: Iterable[str | None]
        if columns is not None:
            names = getattr(columns, field).values  # (the table lists names in first use)
        else:
            names = (getattr(task, field) for task in workload.tasks())
        first = next((name for name in names if name is not None and not _writable_name(name)),
                     None)
        if first is not None:
            notes[path] = (f"names written as numbers made from each name, such as "
                           f"{first} → {name_number(first)}")
    origin = workload.time_origin
    offset = _utc_offset(origin) if origin is not None else None
    if origin is not None and offset is not None and _epoch_seconds(origin) is not None:
        notes["workload.time_origin"] = (
            f"the instant is kept, its UTC offset ({_offset_text(offset)}) is not: "
            f"UnixStartTime counts seconds since 1970 in UTC")
    return notes


def _offset_text(offset: timedelta) -> str:
    """``+02:00``, ``-05:30`` (seconds too when it has some)."""
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")


def _memory(memory_mb: float | None) -> float | None:
    """What RequestedMemory and UsedMemory, whole KB, read back as: rounded half up to a
    KB (the PWA's tools and AccaSim parse integers); times 1024 and back is exact in
    binary unless it overflows."""
    if memory_mb is None or not memory_mb >= 0 or not math.isfinite(memory_mb * 1024):
        return None
    kilobytes = memory_mb * 1024
    return memory_mb if kilobytes.is_integer() else math.floor(kilobytes + 0.5) / 1024


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def trailing_texts(value: object) -> list[str] | None:
    """The fields after the 18th of ``swf:TrailingFields``, or ``None`` when they would not
    read back as themselves (each a token: text without white space)."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(text, str) and text and text.split() == [text] for text in value):
        return None
    return value


def _column_text(key: str, value: object) -> str | None:
    """The field text of an ``swf:`` column extra, or ``None`` when it cannot be written."""
    if key == TRAILING_KEY:
        trailing = trailing_texts(value)
        return None if trailing is None else " ".join(trailing)
    if key not in _EXTRA_KEYS or isinstance(value, bool):
        return None
    if key[4:] in _INTEGERS:
        return str(value) if isinstance(value, int) and value >= 0 else None
    if isinstance(value, int | float) and math.isfinite(value) and value >= 0:
        return format_number(value)
    return None


def _comment_line(comment: object) -> str | None:
    """The header line of a comment that reads back as itself, else ``None``."""
    if not isinstance(comment, str) or comment != comment.strip() or "\n" in comment \
            or "\r" in comment:
        return None
    text = f"; {comment}" if comment else ";"
    return None if _HEADER_FIELD.fullmatch(text) else text


def _header_texts(key: str, value: Any) -> list[str] | None:
    """The values of a header field as written (several lines for a list of two or more),
    or ``None`` when no header line reads back as ``value``."""
    if key == START_KEY or not _HEADER_FIELD.fullmatch(f"; {key}: x"):
        return None
    values = value if isinstance(value, list) and len(value) > 1 else [value]
    texts = [attribute_text(item) for item in values]
    return None if None in texts else [text for text in texts if text is not None]


def _whole_submit(value: float) -> float:
    """A submit time SWF writes: known (``known_submit``) and rounded half up to whole
    seconds, the nearest second."""
    value = known_submit(value)
    return value if float(value).is_integer() else float(math.floor(value + 0.5))


def _whole_runtime(value: float | None) -> float | None:
    """A runtime SWF writes: known (``known_time``) and rounded half up to whole seconds."""
    value = known_time(value)
    if value is None or float(value).is_integer():
        return value
    return float(math.floor(value + 0.5))


def _whole_requested_time(value: float | None) -> float | None:
    """A requested time SWF writes: known and rounded *up* to whole seconds. A requested
    time is a limit the job must fit in: rounded up, it never falls below the runtime it
    bounded (a runtime rounded half up is at most the ceiling of any limit it was within),
    so a scheduler that kills jobs at their limit does not kill the job for the rounding."""
    value = known_time(value)
    return value if value is None or float(value).is_integer() else float(math.ceil(value))


def _submit_order(tasks: Sequence[Task]) -> list[int]:
    """The positions of ``tasks`` in the order SWF writes them: by submit time as written
    (the PWA sorts a file's lines by submit time), ties in their given order."""
    submits = [_whole_submit(task.submit_time_s) for task in tasks]
    if all(a <= b for a, b in pairwise(submits)):
        return list(range(len(tasks)))
    return sorted(range(len(tasks)), key=submits.__getitem__)


class _Normalizer:
    """Builds the normal form and records the held field paths it changes. ``order``: the
    tasks' positions in the written (submit-time) order."""

    def __init__(self, tasks: list[Task], order: Sequence[int]) -> None:
        self.lost: set[str] = set()
        ids = [tasks[index].id for index in order]
        self.numbering, renumbered = written_ids(ids, written_number_id, keeps_integers=True)
        reordered = any(index != position for position, index in enumerate(order))
        if reordered and not renumbered:
            # (kept ids are the integers written_number_id gives)
            written = [int(self.numbering[old]) for old in ids]
            if any(not a < b for a, b in pairwise(written)):
                # moved jobs: numbered again as the counter of the written lines
                self.numbering = {}
                for old in ids:
                    self.numbering.setdefault(old, 1 + len(self.numbering))
                renumbered = True
        if renumbered:
            self.lost.add("task.id")
        self.written = set(self.numbering.values())

    def task(self, task: Task) -> Task:
        lost = self.lost
        numbering = self.numbering
        own = with_counterparts(task.extras, SWF_FROM_GWF)  # GWF's processor keys are SWF's
        if own is not task.extras:
            task = replace(task, extras=own)
        task = lifted_recorded(task, "swf:", {**_SECONDS}, {**_CODES})
        dependencies = tuple(numbering[d] for d in task.dependencies if d in numbering)
        if len(dependencies) != len(task.dependencies):
            lost.add("task.dependencies")
        submit = _whole_submit(task.submit_time_s)
        runtime = _whole_runtime(task.runtime_s)
        requested = _whole_requested_time(task.requested_time_s)
        request = task.request
        nodes, memory_mb = single_core_nodes(request.nodes, request.cores, request.memory_mb)
        memory = _memory(memory_mb)
        user = task.user if task.user is None or _writable_name(task.user) \
            else name_number(task.user)
        group = task.group if task.group is None or _writable_name(task.group) \
            else name_number(task.group)
        # Cores per node are what is lost when they become processors (nothing is, for
        # cores anywhere: only the total means something); the processor count and the
        # memory then carry the same totals, so they count as changed only for what they
        # cannot hold themselves.
        resplit = only_resplit(request.placement, request.nodes, request.cores, nodes)
        for path, before, after in (("task.submit_time_s", task.submit_time_s, submit),
                                    ("task.runtime_s", task.runtime_s, runtime),
                                    ("task.requested_time_s", task.requested_time_s, requested),
                                    ("task.request.cores", request.cores,
                                     request.cores if resplit else 1.0),
                                    ("task.request.nodes", request.nodes,
                                     whole_count(request.nodes)),
                                    ("task.request.memory_mb", request.memory_mb,
                                     _memory(request.memory_mb)),
                                    ("task.user", task.user, user),
                                    ("task.group", task.group, group),
                                    ("task.request.placement", request.placement,
                                     Placement.CORES)):
            if before is not after and before != after:
                lost.add(path)
        recorded = _recorded(task)
        for field, value in recorded.items():
            if value is not getattr(task, field) and value != getattr(task, field):
                lost.add(f"task.{field}")
        status = recorded.get("status", task.status)
        extras = self.extras(task.extras, nodes, bool(dependencies), status)
        task_id = numbering[task.id]
        if (task_id == task.id and dependencies == task.dependencies
                and submit is task.submit_time_s and runtime is task.runtime_s
                and requested is task.requested_time_s and nodes == request.nodes
                and request.cores == 1 and memory is request.memory_mb and user is task.user
                and group is task.group and extras is task.extras
                and request.placement is Placement.CORES and not recorded):
            return task  # already in normal form: no copy per task
        return Task(**{**task.__dict__, **recorded, "id": task_id, "dependencies": dependencies,
                       "submit_time_s": submit, "runtime_s": runtime,
                       "requested_time_s": requested,
                       "request": replace(request, nodes=nodes, cores=1.0, memory_mb=memory,
                                          placement=Placement.CORES),
                       "user": user, "group": group, "extras": extras})

    def extras(self, extras: Extras, nodes: int, has_dependency: bool,
               status: TaskStatus) -> Extras:
        """The ``swf:`` keys as they read back: AllocatedProcessors -1 or 0 alone (the nodes
        are then the requested count), RequestedProcessors when it differs from the nodes, a
        preceding job outside the workload when the job has no dependency, the columns whose
        values fit them."""
        if not any(key.startswith("swf:") for key in extras):
            return extras
        allocated = extras.get(_ALLOCATED_KEY)
        allocated_unknown = _is_int(allocated) and allocated in (-1, 0)
        kept: Extras = {}
        dropped = False
        for key, value in extras.items():
            if not key.startswith("swf:"):
                kept[key] = value  # not SWF's: restrict decides
            elif key == _ALLOCATED_KEY and allocated_unknown:
                kept[key] = value
            elif key == _REQUESTED_KEY and not allocated_unknown and _is_int(value) \
                    and value >= -1:
                if value != nodes:
                    kept[key] = value
            elif key == _STATUS_KEY:
                if written_status_code(status, value) == value:
                    kept[key] = value
                else:
                    dropped = True
            elif key == _PRECEDING_KEY and not has_dependency:
                written = written_number_id(value)
                if written is None or written in self.written:  # would read as a dependency
                    dropped = True
                else:
                    kept[key] = written
            elif _column_text(key, value) is not None:
                kept[key] = value
            else:
                dropped = True
        if dropped:
            self.lost.add("task.extras")
        return extras if kept == extras else kept


def _recorded(task: Task) -> dict[str, Any]:
    """The recorded fields of ``task`` that SWF writes otherwise, as it writes them: a job
    killed at its limit as failed, wait and think times in whole seconds (rounded half up,
    as the times), durations and memory known (>= 0, finite), codes as the decimal texts of
    integers >= 0 (others unknown)."""
    changed: dict[str, Any] = {}
    if task.status is TaskStatus.KILLED_AT_WALLTIME:
        changed["status"] = TaskStatus.FAILED
    for field, written in (("wait_time_s", whole_seconds(task.wait_time_s)),
                           ("think_time_s", whole_seconds(task.think_time_s)),
                           ("cpu_time_s", known_time(task.cpu_time_s)),
                           ("used_memory_mb", _memory(task.used_memory_mb))):
        if written is not getattr(task, field):
            changed[field] = written
    for field in _CODES.values():
        code = getattr(task, field)
        if code is not None and CODE_TEXT.fullmatch(code) is None:
            changed[field] = None
    return changed


def _normal_jobs(given: Sequence[Job]) -> tuple[set[str], tuple[Job, ...]]:
    """The jobs of ``normal_form``, task by task, in submit-time order, and the held paths
    it changes. A job whose tasks the order separates becomes one job per task (SWF has one
    task per job: its grouping is dropped either way)."""
    placed = [(job, task) for job in given for task in job.tasks]
    order = _submit_order([task for _, task in placed])
    normalizer = _Normalizer([task for _, task in placed], order)
    lost = normalizer.lost
    if any(index != position for position, index in enumerate(order)):
        given = _one_task_jobs([placed[index] for index in order], lost)
    jobs = []
    for job in given:
        tasks = tuple(normalizer.task(task) for task in job.tasks)
        extras = job.extras
        if any(key.startswith("swf:") for key in extras):
            lost.add("job.extras")  # SWF has no job of its own to keep them on
            extras = {key: value for key, value in extras.items() if not key.startswith("swf:")}
        if extras is job.extras and all(a is b for a, b in zip(tasks, job.tasks, strict=True)):
            jobs.append(job)
        else:
            jobs.append(replace(job_holding(job, tasks), extras=extras))
    return lost, tuple(jobs)


def written_task_ids(document: Document) -> list[tuple[Id, Id]]:
    """Each task's id and the job number SWF writes for it, in the order written (submit
    time): the numbering ``normal_form`` gives (``_Normalizer``)."""
    workload = document.workload
    if workload is None:
        return []
    tasks = [task for job in workload.jobs for task in job.tasks]
    order = _submit_order(tasks)
    numbering = _Normalizer(tasks, order).numbering
    return [(tasks[index].id, numbering[tasks[index].id]) for index in order]


def _one_task_jobs(placed: Sequence[tuple[Job, Task]], lost: set[str]) -> list[Job]:
    """A job per task, in the given order: a job's own values stay on the job of its first
    task (they are reported as the jobs of a format without jobs drop them), the others
    are jobs of one task named by it, and a job of several tasks, or named otherwise than
    its task, is reported as the ``job`` grouping the order separates."""
    jobs: list[Job] = []
    seen: set[int] = set()
    for job, task in placed:
        if regrouped(job):
            lost.add("job")
        if id(job) in seen:
            jobs.append(Job(id=task.id, tasks=(task,)))
        else:
            seen.add(id(job))
            jobs.append(job if len(job.tasks) == 1 else replace(job, tasks=(task,)))
    return jobs


def _on_single_core_nodes(columns: WorkloadColumns, lost: set[str]) -> WorkloadColumns | None:
    """``columns`` with each task's cores as single-core nodes (``_Normalizer.task`` column
    by column), adding the path that loses to ``lost`` (``_columns_in_normal_form`` then
    checks the rest); ``columns`` itself when every task asks for one core per node; ``None``
    where the rows must build it."""
    import numpy as np

    anywhere = columns.with_placement(Placement.CORES)
    if anywhere is not columns:
        lost.add("task.request.placement")
    if bool(np.all(columns.cores == 1)):
        return anywhere
    if not bool(np.all(columns.nodes >= 1)):
        return None  # (the rows report the node count too)
    nodes, memory = single_core_node_columns(columns.nodes, columns.cores, columns.memory_mb)
    if bool(np.any((columns.cores != 1) & ~only_resplit_rows(
            columns.placement, columns.nodes, columns.cores, nodes))):
        lost.add("task.request.cores")  # (nodes and memory carry the totals: see _Normalizer)
    return replace(anywhere, nodes=nodes, cores=np.ones(len(columns), dtype=np.float64),
                   memory_mb=memory)


def _columns_in_normal_form(columns: WorkloadColumns) -> bool:
    """Whether ``_Normalizer`` would leave every task of ``columns`` as it is (checked column
    by column; ``False`` sends the workload through the task-by-task path)."""
    import numpy as np

    ids = columns.ids
    if ids.dtype.kind != "i" or (len(ids) and int(ids.min()) < 0) or not all_distinct(ids):
        return False  # written_ids would renumber
    if columns.dependency_ids.dtype.kind != "i" and len(columns.dependency_ids):
        return False
    if not all_found(columns.dependency_ids, ids):
        return False  # a dependency outside the workload is dropped
    for times in (columns.submit_time_s, columns.runtime_s, columns.requested_time_s):
        known = times[~np.isnan(times)]
        if np.any(known < 0) or not np.all(np.isfinite(known)) \
                or not np.array_equal(known, np.floor(known)):
            return False  # (whole seconds, known: np.floor keeps them)
    submit = columns.submit_time_s
    if np.isnan(submit).any() or np.any(columns.nodes < 1) or np.any(submit[1:] < submit[:-1]):
        return False  # the rows sort the jobs by submit time
    memory = columns.memory_mb[~np.isnan(columns.memory_mb)] * 1024
    if np.any(memory < 0) or not np.all(np.isfinite(memory)) \
            or not np.array_equal(memory, np.floor(memory)):
        return False  # (whole KB, known)
    if not all(map(_writable_name, columns.user.values + columns.group.values)):
        return False
    return _recorded_in_normal_form(columns, np) and _extras_in_normal_form(columns, np)


def _recorded_in_normal_form(columns: WorkloadColumns, np: Any) -> bool:
    """``_recorded`` changes no task of ``columns``."""
    from dcx.core.columns import STATUSES

    if columns.status is not None and bool(np.any(
            columns.status == STATUSES.index(TaskStatus.KILLED_AT_WALLTIME))):
        return False
    for field in ("wait_time_s", "think_time_s", "cpu_time_s", "used_memory_mb"):
        values = getattr(columns, field)
        if values is None:
            continue
        known = values[~np.isnan(values)]
        if np.any(known < 0) or not np.all(np.isfinite(known * 1024)):
            return False
        whole = known * 1024 if field == "used_memory_mb" else known
        if field != "cpu_time_s" and not np.array_equal(whole, np.floor(whole)):
            return False  # (whole seconds, whole KB)
    return all(CODE_TEXT.fullmatch(text) for field in _CODES.values()
               if (texts := getattr(columns, field)) is not None for text in texts.values)


def _extras_in_normal_form(columns: WorkloadColumns, np: Any) -> bool:
    """``_Normalizer.extras`` keeps every ``swf:`` key of every task as it is."""
    extras = columns.extras
    allocated = extras.get(_ALLOCATED_KEY)
    unknown_allocation = np.zeros(len(columns), dtype=bool)
    if any(column.texts is not None for key, column in extras.items()
           if key.startswith("swf:")):
        return False  # no SWF field holds text
    if allocated is not None:
        values = allocated.values[allocated.present]
        if not (_integral(allocated, np) and np.all((values == -1) | (values == 0))):
            return False
        unknown_allocation = allocated.present
    follows = np.diff(columns.dependency_offsets) > 0
    for key, column in extras.items():
        if not key.startswith("swf:") or key == _ALLOCATED_KEY:
            continue
        present = column.present
        values = column.values[present]
        if key == _STATUS_KEY:
            from dcx.core.columns import STATUSES, statuses_of

            codes = column.values[present]
            statuses = statuses_of(columns)[present]
            if not _integral(column, np) or any(
                    written_status_code(STATUSES[status], code) != code
                    for code, status in zip(codes.tolist(), statuses.tolist(), strict=True)):
                return False
        elif key == _REQUESTED_KEY:
            if np.any(present & unknown_allocation) or not _integral(column, np) or \
                    np.any(values < -1) or np.any(values == columns.nodes[present]):
                return False
        elif key == _PRECEDING_KEY:
            if np.any(present & follows) or not _integral(column, np) or np.any(values < 0) \
                    or np.any(np.isin(values, columns.ids)):
                return False
        elif key not in _EXTRA_KEYS:
            return False
        elif key[4:] in _INTEGERS:
            if not _integral(column, np) or np.any(values < 0):
                return False
        elif np.any(values < 0) or not np.all(np.isfinite(values)):
            return False
    return True


def _integral(column: ExtraColumn, np: Any) -> bool:
    """Every present value of the column is an ``int``."""
    if column.values.dtype.kind == "i":
        return True
    return column.integral is not None and bool(np.all(column.integral[column.present]))


def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    """``normal_form`` and the held field paths it changes, in one pass."""
    own_document_keys = any(key.startswith("swf:") for key in document.extras)
    if own_document_keys:  # no place in an SWF file, and no field path to report
        document = replace(document, extras={key: value for key, value in
                                             document.extras.items()
                                             if not key.startswith("swf:")})
    workload = document.workload
    if workload is None:
        return document, frozenset()
    columns = columns_of(workload)
    jobs: Sequence[Job]
    lost: set[str] = set()
    # (GWF's processor keys are SWF's: core.counterparts)
    own = None if columns is None else columns_with_counterparts(columns, SWF_FROM_GWF)
    on_nodes = None if own is None else _on_single_core_nodes(own, lost)
    if on_nodes is not None and _columns_in_normal_form(on_nodes):
        # nothing else to change: no task is built
        jobs = workload.jobs if on_nodes is columns else JobRows(on_nodes)
    else:
        lost, jobs = _normal_jobs(workload.jobs)
    time_origin = workload.time_origin
    if time_origin is not None:
        seconds = _epoch_seconds(time_origin)
        if seconds is None:
            lost.add("workload.time_origin")
            time_origin = None
        else:
            if _utc_offset(time_origin):
                # the same instant, but UnixStartTime says nothing of the zone it was given in
                lost.add("workload.time_origin")
            time_origin = _origin_text(seconds)  # the same instant, as the reader spells it
    attributes = workload.attributes
    written = {key: value for key, value in attributes.items()
               if _header_texts(key, value) is not None}
    if len(written) != len(attributes):
        lost.add("workload.attributes")
        attributes = written
    normal = replace(workload, jobs=jobs, time_origin=time_origin,
                     attributes=attributes, extras=_workload_extras(workload.extras, lost))
    return replace(document, workload=normal), frozenset(lost)


def _workload_extras(extras: Extras, lost: set[str]) -> Extras:
    """``swf:comments`` as a list of the comments that read back; other ``swf:`` keys have
    no place in the file."""
    if not any(key.startswith("swf:") for key in extras):
        return extras
    kept: Extras = {}
    for key, value in extras.items():
        if key == COMMENTS_KEY:
            comments = value if isinstance(value, list) else [value]
            written = [comment for comment in comments if _comment_line(comment) is not None]
            if len(written) != len(comments):
                lost.add("workload.extras")
            if written:
                kept[key] = written
        elif key.startswith("swf:"):
            lost.add("workload.extras")
        else:
            kept[key] = value
    return kept


def normal_form(document: Document) -> Document:
    """What SWF makes of ``document`` beyond its field paths: ids, users and groups an SWF
    column can hold (see Ids and users; other ids renumbered), times and memory >= 0, whole
    processor counts, a time origin of whole seconds since 1970, header fields and comments
    that read back as themselves, ``swf:`` extras that fit their fields."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    return _normalized(document)[1]


# --------------------------------------------------------------------------- write


def write(document: Document) -> WriteResult:
    """SWF bytes for ``normal_form(document)`` (an empty file when there is no workload)."""
    workload = normal_form(document).workload or Workload()
    lines = _header(workload)
    columns = columns_of(workload)
    if columns is not None:
        head = "".join(line + "\n" for line in lines).encode()
        return WriteResult(head + _column_lines(columns) or b"\n")  # as "\n".join([]) + "\n"
    for job in workload.jobs:
        for task in job.tasks:
            lines.append(" ".join(_line(task)))
    return WriteResult(("\n".join(lines) + "\n").encode())


def _column_lines(columns: WorkloadColumns) -> bytes:
    """The job lines of columns in normal form, as ``_line`` writes each task, built a
    column at a time."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    count = len(columns)
    if not count:
        return b""
    unknown = pa.scalar("-1")
    extras = columns.extras

    def extra(key: str, fallback: Any) -> Any:
        column = extras.get(key)
        if column is None:
            return fallback
        return pc.if_else(pa.array(column.present), number_texts(column.values), fallback)

    nodes = number_texts(columns.nodes)
    dependencies = np.diff(columns.dependency_offsets) > 0
    first_dependency = columns.dependency_ids[
        np.minimum(columns.dependency_offsets[:-1], max(len(columns.dependency_ids) - 1, 0))] \
        if len(columns.dependency_ids) else np.zeros(count, dtype=np.int64)
    fields: dict[str, Any] = {
        "JobNumber": number_texts(columns.ids),
        "SubmitTime": number_texts(columns.submit_time_s),
        "RunTime": known_texts(columns.runtime_s),
        "AllocatedProcessors": extra(_ALLOCATED_KEY, nodes),
        "RequestedProcessors": extra(_REQUESTED_KEY, nodes),
        "RequestedTime": known_texts(columns.requested_time_s),
        "RequestedMemory": known_texts(columns.memory_mb * 1024),
        "UserID": _name_texts(columns.user),
        "GroupID": _name_texts(columns.group),
        "PrecedingJobNumber": pc.if_else(pa.array(dependencies),
                                         number_texts(first_dependency),
                                         extra(_PRECEDING_KEY, unknown)),
    }
    fields["Status"] = extra(_STATUS_KEY, _status_texts(columns))
    fields["UsedMemory"] = _optional_texts(columns.used_memory_mb, 1024)
    for name, field in _SECONDS.items():
        fields[name] = _optional_texts(getattr(columns, field))
    for name, field in _CODES.items():
        texts = getattr(columns, field)
        fields[name] = unknown if texts is None else _name_texts(texts)
    row = [fields[name] if not isinstance(fields[name], pa.Scalar)
           else pa.array([fields[name].as_py()] * count, pa.string()) for name in COLUMNS]
    return joined_lines(pc.binary_join_element_wise(*row, " "))


def _optional_texts(values: Any, scale: int = 1) -> Any:
    """The texts of a recorded float column (``-1``: unknown, and a column no task has)."""
    import pyarrow as pa

    return pa.scalar("-1") if values is None else known_texts(values * scale)


def _status_texts(columns: WorkloadColumns) -> Any:
    """The Status code of each row's status (``-1`` where no row has one)."""
    import numpy as np
    import pyarrow as pa

    from dcx.core.columns import STATUSES

    if columns.status is None:
        return pa.scalar("-1")
    table = pa.array([str(CODE_OF_STATUS[status]) for status in STATUSES], pa.string())
    return table.take(pa.array(columns.status.astype(np.int64)))


def _name_texts(names: Strings) -> Any:
    import numpy as np
    import pyarrow as pa

    table = pa.array(["-1", *names.values], pa.string())
    return table.take(pa.array(names.codes.astype(np.int64) + 1))


def _header(workload: Workload) -> list[str]:
    lines: list[str] = []
    if workload.time_origin is not None:
        lines.append(f"; {START_KEY}: {_epoch_seconds(workload.time_origin)}")
    for key, value in workload.attributes.items():
        lines.extend(f"; {key}: {text}" if text else f"; {key}:"
                     for text in _header_texts(key, value) or ())
    comments = workload.extras.get(COMMENTS_KEY, [])
    lines.extend(text for text in map(_comment_line, comments) if text is not None)
    return lines


def _utc_offset(origin: str) -> timedelta | None:
    """The UTC offset a time origin states (``+02:00``), ``None`` for none or UTC's own."""
    try:
        offset = datetime.fromisoformat(origin).utcoffset()
    except ValueError:
        return None
    return offset or None


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


def _line(task: Task) -> list[str]:
    """The 18 fields of a task in normal form."""
    values = dict.fromkeys(COLUMNS, "-1")
    values["JobNumber"] = str(task.id)
    values["SubmitTime"] = format_number(task.submit_time_s)
    if task.runtime_s is not None:
        values["RunTime"] = format_number(task.runtime_s)
    if task.requested_time_s is not None:
        values["RequestedTime"] = format_number(task.requested_time_s)
    request = task.request
    nodes = str(request.nodes)
    extras = task.extras
    values["AllocatedProcessors"] = str(extras.get(_ALLOCATED_KEY, nodes))
    values["RequestedProcessors"] = str(extras.get(_REQUESTED_KEY, nodes))
    if request.memory_mb is not None:  # one processor per node: per node is per processor
        values["RequestedMemory"] = format_number(request.memory_mb * 1024)
    if task.user is not None:
        values["UserID"] = task.user
    if task.group is not None:
        values["GroupID"] = task.group
    recorded_texts(task, extras.get(_STATUS_KEY), _SECONDS, _CODES, values)
    if task.dependencies:
        values["PrecedingJobNumber"] = str(task.dependencies[0])
    elif _PRECEDING_KEY in extras:
        values["PrecedingJobNumber"] = str(extras[_PRECEDING_KEY])
    fields = [values[name] for name in COLUMNS]
    trailing = trailing_texts(extras.get(TRAILING_KEY))
    return fields if trailing is None else fields + trailing
