"""Parquet checked a row group at a time, in memory bounded by the largest row group and
compact state across them, with the diagnostics the whole-file reader (``codec.read``) gives
for the same file.

Three steps, so that the row groups can be checked anywhere (in this process one after the
other, or as partitions on a Dask cluster: ``dcx.converters.partitions``) and the results
merged in one place:

* ``open_parts(source)``: the footer: the magic bytes, the schema, the ``dcx:workload``
  metadata and each row group's row count (a ``Parts``), or the diagnostics that end the read.
* ``check_part(source, parts, index)``: one row group's ``PartFindings``: null and NaN counts
  and first rows, its jobs' keys where they start, the job name and user rows that disagree
  (and the leading job's values, which may continue a job of the previous row group), its
  task ids (a ``range`` while they count up by one), the dependencies that do not name an
  earlier row of the same group, the first extras_json text that is not JSON and the first
  null feature name. Rows are numbered in the whole file.
* ``finish(parts, findings, reread)``: the diagnostics, in ``read``'s order and words, and the
  job count. The checks across row groups run here once: a job whose rows are split, task ids
  used again, dependencies on tasks of other groups. When ids repeat or a dependency does not
  name an earlier row, ``dependency_diagnostics`` runs on the rows concerned only (those with
  dependencies, those depended on, those whose id repeats), whose dependency lists ``reread``
  reads again a row group at a time.

``read_part(source, index, header, carried, last)`` reads one row group into a document of
whole jobs (``dcx convert`` of a large file), its dependencies on other row groups kept;
``carried`` is the rows of a job begun in earlier row groups, which the caller reading row
groups in order keeps from the previous ``read_part``, and one reading a row group on its
own finds with ``rows_carried_into``.

The source is a seekable binary file object its caller opened (a format does no file I/O).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from dcx.core.columns import RECORDED_FLOATS
from dcx.core.declaration import ChunkedRead
from dcx.core.diagnostics import Diagnostic, ReadResult
from dcx.formats.parquet import MAGIC
from dcx.formats.parquet.codec import (
    _NUMBERS,
    _REQUIRED,
    EXTRAS_PREFIX,
    JSON_EXTRAS_PREFIX,
    _first,
    _ids,
    _json_text,
    _metadata,
    _schema_problems,
    _strings,
    extras_json_error,
    job_fields_error,
    nan_error,
    not_parquet_error,
    null_error,
    null_feature_error,
    parquet_file,
    split_job_error,
    unreadable_error,
)

Value = Any
"""A job's name or user: text or ``None``."""
Ids = Any
"""Ids of consecutive rows: a ``range`` when they are integers counting up by one, else an
array (``int64``, or ``object`` for text)."""
_JOB_FIELDS = ("job_name", "job_user")


@dataclass(frozen=True)
class Parts:
    """A Parquet file's footer: what every row group's check needs."""

    row_counts: tuple[int, ...]
    first_rows: tuple[int, ...]
    """Each row group's first row in the file."""
    column_names: tuple[str, ...]
    float_extras: tuple[str, ...]
    """``extras.`` columns of a floating-point type (checked for NaN), in column order."""


@dataclass(frozen=True)
class Leading:
    """A row group's first job run: its rows may continue the previous group's last job."""

    key: Any
    rows: int
    values: dict[str, tuple[tuple[Value, int], ...]]
    """Per job field, its distinct values in the run with the first row of each."""


@dataclass
class PartFindings:
    """What one row group shows (rows numbered in the whole file); see the module docstring."""

    first_row: int
    rows: int
    nulls: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Column → (null count, first row); ``dependencies`` counts null lists."""
    null_dependencies: tuple[int, int] | None = None
    """(null dependency ids, first row holding one)."""
    nan: dict[str, int] = field(default_factory=dict)
    leading: Leading | None = None
    last_key: Any = None
    last_values: dict[str, Value] = field(default_factory=dict)
    """Per job field, the value on the first row of the group's last job run."""
    start_keys: Ids = ()
    start_rows: Ids = ()
    """Keys and rows where jobs start after the leading run."""
    differ: dict[str, int] = field(default_factory=dict)
    """Per job field, the first row after the leading run that disagrees with its job."""
    ids: Ids = ()
    dependencies: int = 0
    outside: tuple[Any, Any, Any] | None = None
    """(rows, positions, ids) of dependencies that do not name an earlier row of the group,
    or ``None`` when the group's own ids repeat (the exact check decides)."""
    extras_json: dict[str, tuple[int, str]] = field(default_factory=dict)
    """extras_json column → (first row of its first text that is not JSON, that text)."""
    null_feature: int | None = None


# --------------------------------------------------------------------------- the footer


def open_parts(source: BinaryIO) -> tuple[Parts | None, tuple[Diagnostic, ...]]:
    """The footer's ``Parts``, or the diagnostics ``read`` ends with there."""
    import pyarrow as pa

    size = source.seek(0, 2)
    source.seek(0)
    head = source.read(len(MAGIC))
    source.seek(max(size - len(MAGIC), 0))
    tail = source.read(len(MAGIC))
    if head != MAGIC or tail != MAGIC:
        return None, (not_parquet_error(),)
    try:
        parquet = parquet_file(source)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as exc:
        return None, (unreadable_error(exc),)
    problems = _schema_problems(schema)
    if problems:
        return None, tuple(problems)
    header, problems = _metadata(schema.metadata or {})
    if header is None:
        return None, tuple(problems)
    metadata = parquet.metadata
    float_extras = tuple(f.name for f in schema if (f.name.startswith(EXTRAS_PREFIX)
                                                    or f.name in RECORDED_FLOATS)
                         and pa.types.is_floating(f.type))
    counts = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    firsts = list(itertools.accumulate(counts, initial=0))[:-1]
    return Parts(tuple(counts), tuple(firsts), tuple(schema.names), float_extras), ()


# --------------------------------------------------------------------------- one row group


def check_part(source: BinaryIO, parts: Parts, index: int) -> PartFindings | Diagnostic:
    """Row group ``index``'s findings, or ``parquet.unreadable`` when it cannot be read."""
    import pyarrow as pa

    try:
        table = parquet_file(source).read_row_group(
            index).combine_chunks()
    except (pa.ArrowException, OSError, ValueError) as exc:
        return unreadable_error(exc)
    found = PartFindings(parts.first_rows[index], table.num_rows)
    if not table.num_rows:
        return found
    _nulls_and_nan(table, parts, found)
    if found.nulls or found.null_dependencies or found.nan:
        return found  # ``read`` stops there: nothing else is reported
    _jobs(table, found)
    _dependencies(table, found)
    _text_checks(table, found)
    return found


def _nulls_and_nan(table: Any, parts: Parts, found: PartFindings) -> None:
    import pyarrow.compute as pc

    offset = found.first_row
    for name in _REQUIRED:
        column = table.column(name)
        if column.null_count:
            found.nulls[name] = (column.null_count, offset + _first(column.is_null()))
    lists = table.column("dependencies")
    items = pc.list_flatten(lists)
    if items.null_count:
        rows = pc.list_parent_indices(lists).filter(items.is_null())
        found.null_dependencies = (items.null_count, offset + _first(rows))
    for name in (*_NUMBERS, *parts.float_extras):
        nan = pc.fill_null(pc.is_nan(table.column(name)), False)
        if pc.any(nan).as_py():
            found.nan[name] = offset + _first(nan)


def _jobs(table: Any, found: PartFindings) -> None:
    import numpy as np

    keys = _ids(table.column("job_id"))
    count = len(keys)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    ends = np.append(starts[1:], count)
    lead = int(ends[0])
    values = {name: _strings(table.column(name)) for name in _JOB_FIELDS}
    leading: dict[str, tuple[tuple[Value, int], ...]] = {}
    for name, strings in values.items():
        codes = strings.codes[:lead]
        distinct, first = np.unique(codes, return_index=True)
        order = np.argsort(first, kind="stable")
        leading[name] = tuple((_value(strings, int(distinct[i])), found.first_row
                               + int(first[i])) for i in order)
        if len(starts) > 1:
            sizes = ends[1:] - starts[1:]
            reference = np.repeat(strings.codes[starts[1:]], sizes)
            differ = np.flatnonzero(reference != strings.codes[lead:])
            if len(differ):
                found.differ[name] = found.first_row + lead + int(differ[0])
        found.last_values[name] = _value(strings, int(strings.codes[starts[-1]]))
    found.leading = Leading(keys[0].item() if hasattr(keys[0], "item") else keys[0], lead,
                            leading)
    last = keys[-1]
    found.last_key = last.item() if hasattr(last, "item") else last
    found.start_keys = _compact(keys[starts[1:]])
    found.start_rows = _compact(found.first_row + starts[1:])


def _value(strings: Any, position: int) -> Value:
    """The text at ``position`` of a ``Strings``' values (negative: null)."""
    return None if position < 0 else strings.values[position]


def _compact(values: Any) -> Ids:
    """A ``range`` for integers counting up by one (nothing kept per row), else ``values``."""
    import numpy as np

    if values.dtype.kind == "i" and len(values) and \
            int(values[-1]) - int(values[0]) == len(values) - 1 and \
            bool(np.all(np.diff(values) == 1)):
        return range(int(values[0]), int(values[-1]) + 1)
    return values


def _dependencies(table: Any, found: PartFindings) -> None:
    import numpy as np
    import pyarrow.compute as pc

    ids = _ids(table.column("task_id"))
    found.ids = _compact(ids)
    lists = table.column("dependencies")
    items = pc.list_flatten(lists)
    found.dependencies = len(items)
    if not len(items):
        found.outside = (np.zeros(0, np.int64), np.zeros(0, np.int64), ids[:0])
        return
    wanted = _ids(items)
    parents = pc.list_parent_indices(lists).to_numpy().astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(np.bincount(parents, minlength=len(ids)))))
    positions = np.arange(len(wanted)) - offsets[parents]
    rows, local = _rows_of(ids, wanted)
    if rows is None:
        return
    earlier = local & (rows < parents)
    keep = ~earlier
    found.outside = (found.first_row + parents[keep], positions[keep], wanted[keep])


def _rows_of(ids: Any, wanted: Any) -> tuple[Any, Any]:
    """Each wanted id's row among ``ids`` and whether it is there; ``(None, None)`` when
    ``ids`` repeat."""
    import numpy as np

    if ids.dtype.kind == "O" or wanted.dtype.kind == "O":
        index: dict[Any, int] = {}
        for row, value in enumerate(ids.tolist()):
            if index.setdefault(value, row) != row:
                return None, None
        rows = np.array([index.get(value, -1) for value in wanted.tolist()], dtype=np.int64)
        return rows, rows >= 0
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    if len(ordered) > 1 and bool(np.any(ordered[1:] == ordered[:-1])):
        return None, None
    at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
    present = ordered[at] == wanted
    return np.where(present, order[at], -1), present


def _text_checks(table: Any, found: PartFindings) -> None:
    import numpy as np
    import pyarrow.compute as pc

    for name in table.column_names:
        if not name.startswith(JSON_EXTRAS_PREFIX):
            continue
        texts = _strings(table.column(name))
        bad = next((at for at, text in enumerate(texts.values) if not _json_text(text)), None)
        if bad is not None:
            row = int(np.flatnonzero(texts.codes == bad)[0])
            found.extras_json[name] = (found.first_row + row, texts.values[bad])
    if "features" in table.column_names:
        column = table.column("features")
        names = pc.list_flatten(column)
        if names.null_count:
            found.null_feature = found.first_row + _first(
                pc.list_parent_indices(column).filter(names.is_null()))


# --------------------------------------------------------------------------- merged


Reread = Callable[[int], tuple[Any, list[list[Any]]]]
"""Row group index → its task ids and each row's dependency ids (``reread_dependencies``)."""


def finish(parts: Parts, findings: Sequence[PartFindings], reread: Reread) -> ChunkedRead:
    """``read``'s diagnostics from every row group's findings, in row group order."""
    problems = _null_problems(parts, findings)
    if problems:
        return ChunkedRead(tuple(problems))
    starts, problems = _job_problems(findings)
    problems += _dependency_problems(findings, reread)
    if problems:
        return ChunkedRead(tuple(problems))
    for name in parts.column_names:
        if name.startswith(JSON_EXTRAS_PREFIX):
            bad = [f.extras_json[name] for f in findings if name in f.extras_json]
            if bad:
                text = min(bad)[1]
                return ChunkedRead((extras_json_error(name, text),))
    null_feature = next((f.null_feature for f in findings if f.null_feature is not None), None)
    if null_feature is not None:
        return ChunkedRead((null_feature_error(null_feature),))
    return ChunkedRead((), starts, tasks=sum(f.rows for f in findings),
                       dependencies=sum(f.dependencies for f in findings))


def _null_problems(parts: Parts, findings: Sequence[PartFindings]) -> list[Diagnostic]:
    problems = []
    for name in _REQUIRED:
        held = [f.nulls[name] for f in findings if name in f.nulls]
        if name == "dependencies" and not held:
            held = [f.null_dependencies for f in findings if f.null_dependencies is not None]
        if held:
            nulls = sum(count for count, _ in held)
            problems.append(null_error(name, nulls, held[0][1]))
    for name in (*_NUMBERS, *parts.float_extras):
        rows = [f.nan[name] for f in findings if name in f.nan]
        if rows:
            problems.append(nan_error(name, rows[0]))
    return problems


def _job_problems(findings: Sequence[PartFindings]) -> tuple[int, list[Diagnostic]]:
    """The job count, and the split jobs and disagreeing job fields ``read`` reports."""
    import numpy as np

    keys: list[Any] = []
    rows: list[Any] = []
    differ: dict[str, list[int]] = {name: [] for name in _JOB_FIELDS}
    reference: dict[str, Value] = {}
    previous: Any = _NONE
    for found in findings:
        leading = found.leading
        if leading is None:
            continue  # no rows
        continues = previous is not _NONE and previous == leading.key
        if not continues:
            keys.append(range(leading.key, leading.key + 1) if isinstance(leading.key, int)
                        else np.array([leading.key], dtype=object))
            rows.append(range(found.first_row, found.first_row + 1))
        for name in _JOB_FIELDS:
            values = leading.values[name]
            against = reference[name] if continues else values[0][0]
            wrong = [row for value, row in values if value != against]
            if wrong:
                differ[name].append(min(wrong))
            if name in found.differ:
                differ[name].append(found.differ[name])
            if leading.rows < found.rows:
                reference[name] = found.last_values[name]
            elif not continues:
                reference[name] = against
        keys.append(found.start_keys)
        rows.append(found.start_rows)
        previous = found.last_key
    problems: list[Diagnostic] = []
    if not _distinct(keys, None):
        all_keys = _joined(keys)
        seen: set[Any] = set()
        for index, key in enumerate(all_keys.tolist()):
            if key in seen:
                row = int(_joined(rows)[index])
                problems.append(split_job_error(key, row))
                break
            seen.add(key)
    for name in _JOB_FIELDS:
        if differ[name]:
            problems.append(job_fields_error(name, min(differ[name])))
    return sum(len(part) for part in keys), problems


_NONE = object()


def _joined(parts: Sequence[Ids]) -> Any:
    """One array of consecutive parts (ranges expanded)."""
    import numpy as np

    arrays = [np.arange(p.start, p.stop, dtype=np.int64) if isinstance(p, range)
              else np.asarray(p) for p in parts if len(p)]
    if not arrays:
        return np.zeros(0, dtype=np.int64)
    if any(a.dtype.kind == "O" for a in arrays):
        joined = np.empty(sum(len(a) for a in arrays), dtype=object)
        joined[:] = [value for a in arrays for value in a.tolist()]
        return joined
    return np.concatenate(arrays)


def _distinct(parts: Sequence[Ids], joined: Any) -> bool:
    """Whether no value repeats across ``parts``: cheaply when they are increasing ranges."""
    from dcx.core.columns import all_distinct

    ranges = sorted((p for p in parts if len(p)), key=lambda p: p.start) if all(
        isinstance(p, range) for p in parts if len(p)) else None
    if ranges is not None:
        return all(a.stop <= b.start for a, b in itertools.pairwise(ranges))
    return all_distinct(_joined(parts) if joined is None else joined)


def _dependency_problems(findings: Sequence[PartFindings], reread: Reread
                         ) -> list[Diagnostic]:
    """``codec._dependency_problems`` over the whole file: nothing to say when task ids are
    unique and each dependency names an earlier row, else ``dependency_diagnostics`` on the
    rows concerned."""
    import numpy as np

    held = [f.ids for f in findings]
    distinct = _distinct(held, None)
    if distinct and not any(f.dependencies for f in findings):
        return []
    if distinct and all(f.outside is not None or not f.dependencies for f in findings):
        rows = np.concatenate([np.asarray(f.outside[0], np.int64) for f in findings
                               if f.outside is not None] or [np.zeros(0, np.int64)])
        if not len(rows):
            return []  # every dependency names an earlier row of its own group
        wanted = _joined([f.outside[2] for f in findings if f.outside is not None])
        targets, present = _rows_in_ranges(findings, wanted) or _rows_of(_joined(held), wanted)
        if targets is not None and bool(np.all(present)) and bool(np.all(targets < rows)):
            return []
    return _concerned_problems(findings, _joined(held), reread)


def _rows_in_ranges(findings: Sequence[PartFindings], wanted: Any) -> tuple[Any, Any] | None:
    """Each wanted id's row and whether it is there, when every group's ids are a ``range``
    (and the ranges are disjoint): without an array of every id. ``None`` otherwise."""
    import numpy as np

    held = sorted(((f.ids, f.first_row) for f in findings if len(f.ids)),
                  key=lambda pair: pair[0].start if isinstance(pair[0], range) else 0)
    if not held or not all(isinstance(ids, range) for ids, _ in held) or \
            wanted.dtype.kind == "O":
        return None
    starts = np.array([ids.start for ids, _ in held], dtype=np.int64)
    stops = np.array([ids.stop for ids, _ in held], dtype=np.int64)
    firsts = np.array([first for _, first in held], dtype=np.int64)
    at = np.maximum(np.searchsorted(starts, wanted, side="right") - 1, 0)
    present = (wanted >= starts[at]) & (wanted < stops[at])
    return np.where(present, firsts[at] + (wanted - starts[at]), -1), present


def _concerned_problems(findings: Sequence[PartFindings], ids: Any, reread: Reread
                        ) -> list[Diagnostic]:
    import numpy as np

    from dcx.parsing.traces import dependency_diagnostics

    listed = ids.tolist()
    counts: dict[Any, int] = {}
    for value in listed:
        counts[value] = counts.get(value, 0) + 1
    repeated = {value for value, count in counts.items() if count > 1}
    needs: dict[int, list[Any]] = {}
    for index, found in enumerate(findings):
        if not found.dependencies:
            continue
        _, lists = reread(index)
        for row, wanted in enumerate(lists):
            if wanted:
                needs[found.first_row + row] = wanted
    named = {value for wanted in needs.values() for value in wanted}
    rows = [row for row, value in enumerate(listed)
            if row in needs or value in named or value in repeated]
    del counts
    chosen = np.asarray(rows, dtype=np.int64)

    def locate(index: int, dependency: int | None) -> dict[str, Any]:
        where = "task_id" if dependency is None else f"dependencies/{dependency}"
        return {"pointer": f"/rows/{int(chosen[index])}/{where}"}

    return dependency_diagnostics([listed[row] for row in rows],
                                  [needs.get(row, []) for row in rows], locate, "parquet")


def reread_dependencies(source: BinaryIO, index: int) -> tuple[Any, list[list[Any]]]:
    """Row group ``index``'s task ids and each row's dependency ids (``finish``'s ``reread``)."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(source).read_row_group(index, columns=["task_id", "dependencies"])
    return _ids(table.column("task_id").combine_chunks()), \
        table.column("dependencies").to_pylist()


# --------------------------------------------------------------------------- a row group read


def rows_carried_into(source: BinaryIO, parts: Parts, index: int) -> tuple[Any, bool]:
    """The rows of earlier row groups that ``read_part`` of row group ``index`` begins with
    when row groups are read apart (those of the last job begun before it; ``None``: none),
    and whether no job begins before them (that part is the first with jobs, which holds the
    header). ``False`` for the rows when a row group they are in cannot be read."""
    import numpy as np
    import pyarrow as pa

    start = parts.first_rows[index]
    group = index - 1
    run_key: Any = None
    try:
        file = parquet_file(source)
        while group >= 0:  # back to the group where the job of the row before begins
            keys = _ids(file.read_row_group(group, columns=["job_id"]).column("job_id")
                        .combine_chunks())
            if len(keys):
                if run_key is not None and keys[-1] != run_key:
                    break  # that job begins at the first row of the group after
                run_key = keys[-1]
                changes = np.flatnonzero(keys[1:] != keys[:-1])
                start = parts.first_rows[group] + (int(changes[-1]) + 1 if len(changes) else 0)
                if len(changes):
                    break
            group -= 1
        if start == parts.first_rows[index]:
            return None, start == 0
        first_group = int(np.searchsorted(parts.first_rows, start, side="right")) - 1
        tables = [file.read_row_group(g) for g in range(first_group, index)]
    except (pa.ArrowException, OSError, ValueError):
        return False, False
    carried = pa.concat_tables(tables).slice(start - parts.first_rows[first_group])
    return carried, start == 0


def read_part(source: BinaryIO, index: int, header: bool, carried: Any = None,
              last: bool = True) -> tuple[ReadResult, Any]:
    """Row group ``index`` as ``read`` reads a whole file, except that a dependency may name a
    task of another row group (``dcx convert`` of a large file, a row group at a time); with
    ``header``, the workload's header from the file's metadata too. ``carried`` (rows of the
    previous row group) come first; unless ``last``, the rows of the last job are held back
    for the next call (a job may continue there), so each document holds whole jobs: the
    document and the rows held back. Only what ``check_part`` has checked is read: the
    diagnostics are ``finish``'s."""
    import numpy as np
    import pyarrow as pa

    from dcx.core.columns import JobRows
    from dcx.core.model import Document, Workload
    from dcx.formats.parquet.codec import _columns

    try:
        parquet = parquet_file(source)
        table = parquet.read_row_group(index)
    except (pa.ArrowException, OSError, ValueError) as exc:
        return ReadResult(None, (unreadable_error(exc),)), None
    if carried is not None:
        table = pa.concat_tables([carried, table])
    held = None
    if not last and table.num_rows:
        keys = _ids(table.column("job_id").combine_chunks())
        changes = np.flatnonzero(keys[1:] != keys[:-1])
        start = int(changes[-1]) + 1 if len(changes) else 0
        table, held = table.slice(0, start), table.slice(start)
    read_header, problems = _metadata(parquet.schema_arrow.metadata or {}) if header \
        else ({}, [])
    if read_header is None:
        return ReadResult(None, tuple(problems)), None
    columns, problems = _columns(table, whole=False)
    if columns is None:
        return ReadResult(None, tuple(problems)), None
    return ReadResult(Document(workload=Workload(jobs=JobRows(columns), **read_header)), ()), \
        held


# --------------------------------------------------------------------------- in this process


def read_parts(source: BinaryIO) -> ChunkedRead:
    """``read``'s diagnostics for the Parquet file ``source`` and its job count, a row group
    at a time in this process."""
    parts, problems = open_parts(source)
    if parts is None:
        return ChunkedRead(problems)
    findings = []
    for index in range(len(parts.row_counts)):
        found = check_part(source, parts, index)
        if isinstance(found, Diagnostic):
            return ChunkedRead((found,))
        findings.append(found)
    return finish(parts, findings, lambda index: reread_dependencies(source, index))
