"""GWF's vectorised accept path: the columnar document of a file that the exact reader
(``codec._read``) reads without any diagnostic, or ``None`` wherever it might report
something (the caller then runs the exact path, which finds and words it).

Each column's tokens are tested against ``rules.FAST_TOKENS`` and their values with
``rules.accepts``, the rule the exact reader applies token by token. The workflow variant
is read with Arrow's CSV reader (comma-separated, values space-padded; the Dependencies
column split into ids held as offsets); the archive variant with the vectorised reader the
whitespace-separated traces share (``dcx.parsing.traces.numeric_columns``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dcx.core.columns import ExtraColumn, JobRows, RowLines, Strings, WorkloadColumns
from dcx.core.diagnostics import ReadResult
from dcx.core.limits import LIMITS
from dcx.core.model import Document, Workload
from dcx.formats.gwf import ARCHIVE_COLUMNS, WORKFLOW_COLUMNS, _looks_archive
from dcx.formats.gwf.rules import (
    FAST_TOKENS,
    WORKFLOW_RULES,
    Rule,
    accepts,
    archive_rules,
)
from dcx.formats.gwf.spelling import CODES, RECORDED, SECONDS, STATUS_KEY
from dcx.parsing.traces import (
    PLAIN_CODES,
    ColumnsBuilder,
    FieldKinds,
    NumericColumns,
    column_dependency_diagnostics,
    numeric_columns,
    numeric_records,
    status_column,
)

if TYPE_CHECKING:
    from dcx.formats.gwf.codec import Variant

CHUNK_BYTES = 4 << 20
"""Bytes of task lines the archive path converts at once (its working memory)."""

NPROCS_KEY = "gwf:NProcs"
REQNPROCS_KEY = "gwf:ReqNProcs"
_WORKFLOW_BYTES = b"0123456789.-, \t\r\n"
_ARCHIVE_RULES = archive_rules(ARCHIVE_COLUMNS)
ARCHIVE_KINDS = FieldKinds(
    names=ARCHIVE_COLUMNS,
    integers=frozenset(name for name, rule in _ARCHIVE_RULES.items()
                       if rule in ("id", "processors", "code")),
    texts=frozenset(name for name, rule in _ARCHIVE_RULES.items() if rule == "token"),
    minus_one=frozenset(name for name, rule in _ARCHIVE_RULES.items()
                        if rule not in ("id", "time")),
)
"""``FAST_TOKENS`` of the archive's rules as the shared reader's field kinds: digits (ids,
processors, codes, tokens), digits with one decimal point (times, measures), ``-1`` where
the rule allows it."""


def read_fast(data: bytes, chunk_bytes: int = CHUNK_BYTES) -> ReadResult | None:
    """The exact reader's document for ``data`` as columns, or ``None`` (see the module
    docstring)."""
    if len(data) > LIMITS.max_input_bytes:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    head = _first_line(data)
    if head is None:
        return None
    start, end, line_number, first = head
    if first.startswith("WorkflowID"):
        return _read_workflow(data[end:], line_number + 1)
    if _looks_archive(first):
        return _read_archive(data[start:], line_number, chunk_bytes)
    return None  # a workflow file without its header line: the exact path warns


def _first_line(data: bytes) -> tuple[int, int, int, str] | None:
    """Where the first line that is neither blank nor a ``#`` comment starts, the offset
    just after it, its line number and its text (stripped); ``None`` when there is none
    or it is not UTF-8."""
    position, line_number = 0, 1
    while position < len(data):
        end = data.find(b"\n", position)
        end = len(data) if end < 0 else end
        try:
            stripped = data[position:end].decode("utf-8").strip()
        except UnicodeDecodeError:
            return None
        if stripped and not stripped.startswith("#"):
            return position, end + 1, line_number, stripped
        position, line_number = end + 1, line_number + 1
    return None


# --------------------------------------------------------------------------- workflow


def _read_workflow(body: bytes, first_line: int) -> ReadResult | None:
    """Task lines after the header line (line ``first_line`` first)."""
    import numpy as np

    rows = workflow_rows(body, first_line)
    if rows is None:
        return None
    return _workflow_result(rows.values, rows.offsets, rows.dependency_ids, rows.lines, np)


@dataclass(frozen=True)
class WorkflowRows:
    """Task lines of the workflow variant that the exact reader reads without a word, in
    line order."""

    values: dict[str, Any]
    """Each column but Dependencies: ids and processors as ``int64``, times as ``float64``."""
    offsets: Any
    dependency_ids: Any
    """Row ``i``'s dependencies: ``dependency_ids[offsets[i]:offsets[i + 1]]``."""
    lines: Any
    table: Any
    """The lines' fields as written (blanks kept), one text column per field."""


def workflow_rows(body: bytes, first_line: int) -> WorkflowRows | None:
    """The task lines of ``body`` (whole lines, line ``first_line`` first, no header) as
    columns, or ``None`` wherever the exact reader might say something of one of them (the
    checks across lines, ids repeated or dependencies unknown, are the caller's)."""
    import numpy as np

    if not body or body.translate(None, _WORKFLOW_BYTES):
        return None
    raw = np.frombuffer(body, dtype=np.uint8)
    returns = np.flatnonzero(raw == 13)
    # a carriage return ends a line for Arrow, and only a line end before "\n" for the exact path
    if len(returns) and not np.all(raw[np.minimum(returns + 1, len(raw) - 1)] == 10) \
            and not (returns[-1] == len(raw) - 1
                     and np.all(raw[returns[:-1] + 1] == 10)):
        return None
    line_ends = np.flatnonzero(raw == 10)
    if not len(line_ends) or line_ends[-1] != len(raw) - 1:
        line_ends = np.append(line_ends, len(raw))
    starts = np.concatenate(([0], line_ends[:-1] + 1))
    lengths = line_ends - starts
    crlf = (lengths > 0) & (raw[np.maximum(line_ends - 1, 0)] == 13)
    lines = np.flatnonzero(lengths - crlf) + first_line  # Arrow skips the empty ones
    if not len(lines):
        return None  # no task lines: the exact path warns
    table, irregular = _comma_table(body)
    if irregular:
        return None  # another field count, or a blank line that is not empty
    if table.num_rows != len(lines):
        raise AssertionError("vectorised GWF reader: rows and lines disagree")
    values: dict[str, Any] = {}
    for name in WORKFLOW_COLUMNS[:-1]:
        found = _column_values(table.column(name), WORKFLOW_RULES[name], np)
        if found is None:
            return None
        values[name] = found
    dependencies = _dependency_ids(table.column("Dependencies"), np)
    if dependencies is None:
        return None
    if np.any((values["NProcs"] == -1) & (values["ReqNProcs"] == -1)):
        return None
    offsets, dependency_ids = dependencies
    return WorkflowRows(values, offsets, dependency_ids, lines, table)


def _comma_table(body: bytes) -> tuple[Any, bool]:
    """The lines' fields as text columns; whether a line had another number of fields
    (Arrow leaves it out and says so)."""
    import io

    import pyarrow as pa
    from pyarrow import csv

    irregular: list[object] = []

    def irregular_row(row: object) -> str:
        irregular.append(row)
        return "skip"

    names = list(WORKFLOW_COLUMNS)
    table = csv.read_csv(
        io.BytesIO(body), memory_pool=pa.system_memory_pool(),
        read_options=csv.ReadOptions(column_names=names, block_size=1 << 22),
        parse_options=csv.ParseOptions(delimiter=",", quote_char=False, double_quote=False,
                                       escape_char=False, newlines_in_values=False,
                                       ignore_empty_lines=True,
                                       invalid_row_handler=irregular_row),
        convert_options=csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()),
                                           null_values=[], strings_can_be_null=False,
                                           quoted_strings_can_be_null=False))
    return table, bool(irregular)


def fast_tokens(tokens: Any, rule: Rule) -> bool:
    """Whether every token fully matches ``FAST_TOKENS[rule]``: digits-only rules tested
    as ASCII decimals of at most 15 characters (or ``-1``), quicker than the pattern."""
    import pyarrow.compute as pc

    if not len(tokens):
        return True  # Arrow's "all" of nothing is null
    if rule in ("time", "measure"):
        return bool(pc.all(pc.match_substring_regex(
            tokens, f"^(?:{FAST_TOKENS[rule]})$")).as_py())
    digits = pc.and_(pc.ascii_is_decimal(tokens), pc.less_equal(pc.binary_length(tokens), 15))
    if rule != "id":
        digits = pc.or_(digits, pc.equal(tokens, "-1"))
    return bool(pc.all(digits).as_py())


def _column_values(column: Any, rule: Rule, np: Any) -> Any:
    """The column's values when every token (blanks around it stripped) matches the rule's
    fast token and the rule accepts its value; else ``None``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tokens = pc.ascii_trim_whitespace(column)
    if not fast_tokens(tokens, rule):
        return None
    integers = rule in ("id", "processors", "code")
    values = pc.cast(tokens, pa.int64() if integers else pa.float64()).to_numpy()
    if not np.all(accepts(rule, values)):
        return None
    return values


def _dependency_ids(column: Any, np: Any) -> tuple[Any, Any] | None:
    """Each row's dependency ids as offsets into one array, or ``None`` when one is not a
    fast ``id`` token."""
    import pyarrow as pa
    import pyarrow.compute as pc

    joined = pc.ascii_trim_whitespace(column)
    if isinstance(joined, pa.ChunkedArray):
        joined = joined.combine_chunks()
    lists = pc.split_pattern(joined, " ")
    present = pc.not_equal(joined, "").to_numpy(zero_copy_only=False)
    counts = np.diff(lists.offsets.to_numpy()) * present
    texts = pc.list_flatten(pc.filter(lists, pa.array(present)))
    if not fast_tokens(texts, "id"):
        # blanks other than one space between ids (an empty token): the exact path splits
        return None
    ids = pc.cast(texts, pa.int64()).to_numpy()
    if not np.all(accepts(WORKFLOW_RULES["Dependencies"], ids)):
        return None
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64), ids


def _workflow_result(values: dict[str, Any], offsets: Any, dependency_ids: Any, lines: Any,
                     np: Any, across_lines: bool = True) -> ReadResult | None:
    """The columns ``_read_workflow`` (exact) builds, in its order: jobs in the order of
    their workflow's first line, each job's tasks in line order. ``across_lines``: ``None``
    when the checks across lines find anything (a chunk's are its file's)."""
    ids = values["JobID"]
    nprocs, requested = values["NProcs"], values["ReqNProcs"]
    if across_lines and column_dependency_diagnostics(ids, offsets, dependency_ids, _nowhere,
                                                      "gwf"):
        return None
    workflows = values["WorkflowID"]
    distinct, first_row, job_of_distinct = np.unique(workflows, return_index=True,
                                                     return_inverse=True)
    appearance = np.argsort(first_row, kind="stable")
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[appearance] = np.arange(len(distinct))
    job_of_row = rank[job_of_distinct.reshape(-1)]
    order = np.argsort(job_of_row, kind="stable")
    counts = np.diff(offsets)[order]
    new_offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    moved = np.repeat(offsets[:-1][order] - new_offsets[:-1], counts) \
        + np.arange(int(new_offsets[-1]))
    runtime = values["RunTime"][order]
    runtime[runtime == -1] = math.nan
    nprocs, requested = nprocs[order], requested[order]
    count = len(ids)
    nothing = Strings(np.full(count, -1, dtype=np.int32), ())
    columns = WorkloadColumns(
        ids=ids[order],
        submit_time_s=values["SubmitTime"][order],
        runtime_s=runtime,
        requested_time_s=np.full(count, math.nan),
        nodes=np.broadcast_to(np.int64(1), count),
        cores=np.where(nprocs == -1, requested, nprocs).astype(np.float64),
        memory_mb=np.broadcast_to(np.float64(math.nan), count),
        gpus=np.broadcast_to(np.int64(0), count),
        deadline_s=np.broadcast_to(np.float64(math.nan), count),
        user=nothing,
        group=nothing,
        dependency_offsets=new_offsets,
        dependency_ids=dependency_ids[moved],
        extras=_processor_extras(nprocs, requested),
        job_ids=distinct[appearance],
        job_offsets=np.concatenate(([0], np.cumsum(np.bincount(job_of_row)))).astype(np.int64),
        job_names=Strings(np.full(len(distinct), -1, dtype=np.int32), ()),
        job_users=Strings(np.full(len(distinct), -1, dtype=np.int32), ()),
        placement=np.ones(count, dtype=np.int8),  # PLACEMENTS: cores anywhere
    )
    return _result(columns, lines[order])


def _nowhere(index: int, dependency: int | None) -> dict[str, Any]:
    """No location: the fast path only asks whether the checks find anything."""
    return {}


def _processor_extras(nprocs: Any, requested: Any) -> dict[str, ExtraColumn]:
    """``codec._processors`` as columns: NProcs -1 kept; ReqNProcs kept where it differs."""
    unknown = nprocs == -1
    differs = ~unknown & (requested != nprocs)
    # no column where no row has the key, as the exact reader's tasks have none (a Parquet
    # output would have the column otherwise)
    return {key: ExtraColumn(values, present) for key, values, present in (
        (NPROCS_KEY, nprocs, unknown), (REQNPROCS_KEY, requested, differs))
        if bool(present.any())}


def _result(columns: WorkloadColumns, lines: Any) -> ReadResult:
    import dataclasses

    import numpy as np

    # the extras keys in the order the exact reader's tasks first have them (a Parquet
    # output's columns are in that order)
    keys = list(columns.extras)
    first_rows = {key: int(np.argmax(columns.extras[key].present)) for key in keys}
    ordered = sorted(keys, key=lambda key: (first_rows[key], keys.index(key)))
    if ordered != keys:
        columns = dataclasses.replace(columns, extras={key: columns.extras[key]
                                                       for key in ordered})
    workload = Workload(jobs=JobRows(columns))
    return ReadResult(Document(workload=workload), (), RowLines(columns, lines))


# --------------------------------------------------------------------------- archive


def _read_archive(body: bytes, first_line: int, chunk_bytes: int) -> ReadResult | None:
    """Task lines from the first one (line ``first_line``); no comment may follow."""
    import numpy as np

    records = numeric_records(body, 0, first_line, ARCHIVE_KINDS, chunk_bytes)
    if records is None or not records.rows or not archive_rules_hold(records.column, np):
        return None
    return _archive_result(records, np)


def read_part_fast(data: bytes, variant: Variant | None
                   ) -> tuple[ReadResult, Variant] | None:
    """``codec.read_part`` of a chunk of a ``variant`` file (``None``: the chunk may hold
    the file's first line with content, read as ``read_fast`` reads it), lines counted from
    the chunk's first, and the variant; ``None`` wherever the exact reader might say
    something."""
    import numpy as np

    first_line = 1
    if variant is None:
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        head = _first_line(data)
        if head is None:
            return None
        start, end, line_number, first = head
        if first.startswith("WorkflowID"):
            variant, data, first_line = "workflow", data[end:], line_number + 1
        elif _looks_archive(first):
            variant, data, first_line = "archive", data[start:], line_number
        else:
            return None  # a workflow file without its header line: the exact path warns
    if variant == "workflow":
        rows = workflow_rows(data, first_line)
        if rows is None:
            return None
        found = _workflow_result(rows.values, rows.offsets, rows.dependency_ids, rows.lines,
                                 np, across_lines=False)
        return None if found is None else (found, variant)
    columns = archive_rows(data, first_line)
    if columns is None or not len(columns.lines):
        return None
    records = ColumnsBuilder(ARCHIVE_KINDS, len(columns.lines))
    records.add(columns)
    found = _archive_result(records, np)
    return None if found is None else (found, variant)


def part_of_rows(rows: WorkflowRows | NumericColumns, variant: Variant, lines_before: int
                 ) -> ReadResult | None:
    """``read_part_fast`` of a chunk whose task lines are ``rows`` (``workflow_rows``'s or
    ``archive_rows``'s answer for the whole chunk, lines counted in the file, line
    ``lines_before + 1`` the chunk's first)."""
    import numpy as np

    if isinstance(rows, WorkflowRows):
        return _workflow_result(rows.values, rows.offsets, rows.dependency_ids,
                                rows.lines - lines_before, np, across_lines=False)
    if not len(rows.lines):
        return None
    records = ColumnsBuilder(ARCHIVE_KINDS, len(rows.lines))
    records.add(rows)
    records.lines[:records.rows] -= lines_before
    return _archive_result(records, np)


def archive_rows(body: bytes, first_line: int) -> NumericColumns | None:
    """The task lines of ``body`` (whole lines, line ``first_line`` first) as columns, or
    ``None`` wherever the exact reader might say something of one of them (a repeated
    JobID is the caller's)."""
    import numpy as np

    found = numeric_columns(body, first_line, ARCHIVE_KINDS)
    if found is None or not archive_rules_hold(found.numbers.__getitem__, np):
        return None
    return found


def archive_rules_hold(column: Callable[[str], Any], np: Any) -> bool:
    """Every numeric column's rule accepts its values, and every line knows its cores."""
    for name, rule in _ARCHIVE_RULES.items():
        if name not in ARCHIVE_KINDS.texts and not np.all(accepts(rule, column(name))):
            return False
    return not np.any((column("NProcs") == -1) & (column("ReqNProcs") == -1))


def _archive_result(records: ColumnsBuilder, np: Any) -> ReadResult | None:
    """The columns ``codec._archive_task`` builds line by line."""
    from dcx.formats.gwf.rules import ARCHIVE_CODES, ARCHIVE_MEASURES, ARCHIVE_TOKENS

    column, count = records.column, records.rows
    ids = column("JobID")
    nprocs, requested = column("NProcs"), column("ReqNProcs")
    no_dependencies = np.zeros(count + 1, dtype=np.int64)
    if column_dependency_diagnostics(ids, no_dependencies, np.zeros(0, dtype=np.int64),
                                     _nowhere, "gwf"):
        return None  # a repeated JobID
    cores = np.where(nprocs == -1, requested, nprocs).astype(np.float64)
    extras = _processor_extras(nprocs, requested)
    for name in ARCHIVE_COLUMNS:
        if name in ARCHIVE_TOKENS:
            texts = _known_texts(records.texts[name])
            if texts.values:
                extras["gwf:" + name] = ExtraColumn.of_texts(texts)
        elif name in RECORDED:
            continue
        elif (name in ARCHIVE_MEASURES or name in ARCHIVE_CODES) and records.known(name):
            values = column(name)
            integral = records.integral[name][:count] if name in ARCHIVE_MEASURES else None
            extras["gwf:" + name] = ExtraColumn(values, values != -1, integral)
    status_codes = column("Status")
    partial = ~np.isin(status_codes, PLAIN_CODES)
    if partial.any():
        extras[STATUS_KEY] = ExtraColumn(status_codes, partial)
    recorded: dict[str, Any] = {
        field: _known(column(name), np) for name, field in SECONDS.items()
        if records.known(name)}
    if records.known("UsedMemory"):
        used = column("UsedMemory")
        recorded["used_memory_mb"] = np.where(used == -1, math.nan, used / 1024)
    recorded.update((field, Strings.of_integers(column(name)))
                    for name, field in CODES.items() if records.known(name))
    memory = column("ReqMemory")
    known_memory = memory != -1
    memory_mb = np.full(count, math.nan)
    memory_mb[known_memory] = memory[known_memory] * cores[known_memory] / 1024
    columns = WorkloadColumns(
        ids=ids,
        submit_time_s=column("SubmitTime"),
        runtime_s=_known(column("RunTime"), np),
        requested_time_s=_known(column("ReqTime"), np),
        nodes=np.broadcast_to(np.int64(1), count),
        cores=cores,
        memory_mb=memory_mb,
        gpus=np.broadcast_to(np.int64(0), count),
        deadline_s=np.broadcast_to(np.float64(math.nan), count),
        user=_number_names(column("UserID"), np),
        group=_number_names(column("GroupID"), np),
        dependency_offsets=no_dependencies,
        dependency_ids=np.zeros(0, dtype=np.int64),
        extras=extras,
        job_ids=ids,
        job_offsets=np.arange(count + 1, dtype=np.int64),
        job_names=Strings(np.full(count, -1, dtype=np.int32), ()),
        job_users=Strings(np.full(count, -1, dtype=np.int32), ()),
        placement=np.ones(count, dtype=np.int8),  # PLACEMENTS: cores anywhere
        status=status_column(status_codes),
        **recorded,
    )
    return _result(columns, records.lines[:count])


def _known(values: Any, np: Any) -> Any:
    values[values == -1] = math.nan  # in place: the builder's array is ours
    return values


def _number_names(values: Any, np: Any) -> Strings:
    """UserID/GroupID as the exact reader names them (``str`` of the integer; -1 none)."""
    distinct, codes = np.unique(values, return_inverse=True)
    names = tuple(str(int(value)) for value in distinct)
    codes = codes.reshape(-1).astype(np.int32)
    if len(distinct) and distinct[0] == -1:
        codes -= 1  # -1 sorts first: it becomes code -1 (none), the rest shift down
        names = names[1:]
    return Strings(codes, names)


def _known_texts(parts: list[Strings]) -> Strings:
    """A token column's chunks as one text column; ``-1`` (unknown) is absent."""
    from dcx.core.columns import concat_strings

    return concat_strings(parts, "-1")
