"""An OpenDC workload folder checked a row group at a time, in memory bounded by the largest
row group and the columns of the whole file its checks need, with the diagnostics the
whole-folder reader (``codec.read``) gives; and read a slice of tasks at a time, each task
with its fragments (``dcx convert`` of a large folder).

The source is a mapping of the members present to seekable binary files its caller opened
(a format does no file I/O). Its parts are the row groups of ``tasks.parquet``, then those
of ``fragments.parquet``:

* ``open_parts(sources)``: both footers: a missing member, one that is no Parquet file, a
  column given twice, the columns' types (``codec.read``'s words and order), and each row
  group's row count (a ``Parts``).
* ``check_part(sources, parts, index)``: one row group's ``PartFindings``: null counts and
  first rows, the first negative row per column; a tasks row group's ids, how many
  dependencies it lists, its first submission and which of the format's own extras its
  tasks have; a fragments row group's distinct task ids, with their counts and first rows.
  Rows are numbered in their member.
* ``finish(parts, findings, reread)``: the diagnostics, in ``read``'s order. The checks
  across the file run here once, on the whole file's task ids and dependencies as ``int64``
  arrays (``reread`` reads each tasks row group's dependency column again when some task
  has one): 8 bytes per task for the ids, 8 per task for the dependency offsets and 8 per
  dependency, so 16 MB per million tasks and 8 MB per million dependencies. The fragments'
  distinct task ids per row group (8 bytes each, about one per task when fragments are in
  their tasks' order) are kept too, with their counts and first rows while they are merged
  (24 bytes each then).

``task_slices(sources, parts, whole, rows)`` reads the tasks ``rows`` at a time, as ``read``
reads them (the header, the time origin, with the first slice), each task's profile from its
fragments wherever they are in fragments.parquet: the row groups whose distinct ids (kept by
``finish``) meet the slice's are read, the last two kept decoded, so fragments in their
tasks' order are read about once, and fragments out of order are still joined as ``read``
joins them (in file order per task), at the cost of reading more row groups.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from dcx.core.declaration import ChunkedRead
from dcx.core.diagnostics import Diagnostic, ReadResult
from dcx.formats.opendc_workload import FRAGMENTS, MEMBERS, TASKS
from dcx.formats.opendc_workload.codec import (
    LISTS,
    NOT_NEGATIVE,
    PROFILE,
    REQUIRED,
    _first,
    _float64,
    _int64,
    _Member,
    canonical_columns,
    dependency_column,
    dependency_lists,
    dependency_problems,
    fragment_columns,
    list_lengths_and_values,
    missing_member_error,
    negative_error,
    no_fragments_warning,
    not_parquet_error,
    null_error,
    null_item_error,
    own_extras_present,
    profile_texts,
    schema_problems,
    task_columns,
    time_origin_of,
    unknown_fragment_warning,
    unreadable_error,
)

Sources = Mapping[str, BinaryIO]
"""The members present, each an open seekable file."""
_MAGIC = b"PAR1"
_FRAGMENT_COLUMNS = ("id", "duration", "cpu_usage", "gpu_usage")


@dataclass(frozen=True)
class Parts:
    """Both members' footers: what every row group's check needs."""

    row_counts: tuple[int, ...]
    """Each part's rows: tasks.parquet's row groups, then fragments.parquet's."""
    task_groups: int
    first_rows: tuple[int, ...]
    """Each part's first row in its member."""
    columns: dict[str, dict[str, str]]
    """Per member, canonical column → the file's own name."""
    metadata: dict[bytes, bytes]
    """tasks.parquet's key-value metadata."""

    def member(self, index: int) -> tuple[str, int]:
        """Part ``index``'s member and row group in it."""
        if index < self.task_groups:
            return TASKS, index
        return FRAGMENTS, index - self.task_groups


@dataclass
class PartFindings:
    """What one row group shows (rows numbered in its member); see the module docstring."""

    member: str
    first_row: int
    rows: int
    nulls: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Required column → (null count, first row)."""
    null_items: dict[str, int] = field(default_factory=dict)
    """List column → first row with a null task id."""
    negative: dict[str, int] = field(default_factory=dict)
    """Column → first negative row."""
    ids: Any = None
    """A tasks row group's ids; a fragments row group's distinct ids (sorted)."""
    dependencies: int = 0
    first_submission: int | None = None
    own_extras: frozenset[str] = frozenset()
    fragment_counts: Any = None
    fragment_first_rows: Any = None


@dataclass(frozen=True)
class Whole:
    """What the checks across the file leave for reading it in slices."""

    ids: Any
    """Every task's id, in file order (``int64``)."""
    offsets: Any
    dependency_ids: Any
    time_origin: str | None
    origin: int
    own_extras: frozenset[str]
    """The own extras keys some task has (a slice has them all, as the whole file does; the
    profile's when a task has several fragments, else from the first slice with one on)."""
    fragment_groups: tuple[Any, ...]
    """Each fragments row group's distinct task ids, sorted."""


# --------------------------------------------------------------------------- the footers


def open_parts(sources: Sources) -> tuple[Parts | None, tuple[Diagnostic, ...]]:
    """Both footers' ``Parts``, or the diagnostics ``read`` ends with there."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    missing = [name for name in MEMBERS if name not in sources]
    if missing:
        return None, tuple(missing_member_error(name) for name in missing)
    problems: list[Diagnostic] = []
    schemas: dict[str, tuple[Any, dict[str, str]]] = {}
    counts: dict[str, list[int]] = {}
    metadata: dict[bytes, bytes] = {}
    for name in MEMBERS:
        source = sources[name]
        size = source.seek(0, 2)
        source.seek(0)
        head = source.read(len(_MAGIC))
        source.seek(max(size - len(_MAGIC), 0))
        if head != _MAGIC or source.read(len(_MAGIC)) != _MAGIC:
            problems.append(not_parquet_error(name))
            continue
        try:
            source.seek(0)
            # no column read: the footer is opened as ``read`` opens it (its errors' words)
            pq.read_table(source, columns=[])
            parquet = pq.ParquetFile(source)
            schema = parquet.schema_arrow
        except (pa.ArrowException, OSError, ValueError) as exc:
            problems.append(unreadable_error(name, exc))
            continue
        columns, found = canonical_columns(name, schema.names)
        problems += found
        schemas[name] = (schema, columns)
        counts[name] = [parquet.metadata.row_group(i).num_rows
                        for i in range(parquet.metadata.num_row_groups)]
        if name == TASKS:
            metadata = dict(schema.metadata or {})
    if problems:
        return None, tuple(problems)
    problems = schema_problems(schemas)
    if problems:
        return None, tuple(problems)
    firsts = [first for name in MEMBERS
              for first in list(itertools.accumulate(counts[name], initial=0))[:-1]]
    return Parts(tuple(counts[TASKS] + counts[FRAGMENTS]), len(counts[TASKS]), tuple(firsts),
                 {name: columns for name, (_, columns) in schemas.items()}, metadata), ()


# --------------------------------------------------------------------------- one row group


def check_part(sources: Sources, parts: Parts, index: int) -> PartFindings | Diagnostic:
    """Part ``index``'s findings, or ``opendc-workload.unreadable`` when it cannot be read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name, group = parts.member(index)
    try:
        table = pq.ParquetFile(sources[name]).read_row_group(group).combine_chunks()
    except (pa.ArrowException, OSError, ValueError) as exc:
        return unreadable_error(name, exc)
    member = _Member(name, table, parts.columns[name])
    found = PartFindings(name, parts.first_rows[index], table.num_rows)
    if _value_findings(member, found):
        return found  # ``read`` stops there: nothing else is reported
    if name == TASKS:
        _task_findings(member, found)
    else:
        _fragment_findings(member, found)
    return found


def _value_findings(member: _Member, found: PartFindings) -> bool:
    """``codec._value_problems``' findings in this row group; whether there are any."""
    import pyarrow.compute as pc

    offset = found.first_row
    for name in REQUIRED[member.name]:
        column = member.column(name)
        if column.null_count:
            found.nulls[name] = (column.null_count, offset + _first(column.is_null()))
    for name in LISTS:
        if member.name == TASKS and member.has(name):
            flat = pc.list_flatten(member.column(name))
            if flat.null_count:
                rows = pc.list_parent_indices(member.column(name)).filter(flat.is_null())
                found.null_items[name] = offset + int(rows[0].as_py())
    for name in NOT_NEGATIVE[member.name]:
        if member.has(name):
            negative = pc.fill_null(pc.less(member.column(name), 0), False)
            if pc.any(negative).as_py():
                found.negative[name] = offset + _first(negative)
    return bool(found.nulls or found.null_items or found.negative)


def _task_findings(tasks: _Member, found: PartFindings) -> None:
    import pyarrow.compute as pc

    found.ids = _int64(tasks.column("id"))
    name = dependency_column(tasks)
    if name is not None:
        found.dependencies = int(pc.sum(pc.list_value_length(tasks.column(name))).as_py()
                                 or 0)
    if len(found.ids):
        found.first_submission = int(_int64(tasks.column("submission_time")).min())
    found.own_extras = own_extras_present(tasks)


def _fragment_findings(fragments: _Member, found: PartFindings) -> None:
    import numpy as np

    distinct, first, counts = np.unique(_int64(fragments.column("id")), return_index=True,
                                        return_counts=True)
    found.ids = distinct
    found.fragment_counts = counts
    found.fragment_first_rows = found.first_row + first


# --------------------------------------------------------------------------- merged


Reread = Callable[[int], tuple[Any, Any]]
"""Tasks row group index → its dependency column's lengths and items (``reread_dependencies``)."""


def finish(parts: Parts, findings: Sequence[PartFindings], reread: Reread) -> ChunkedRead:
    """``read``'s diagnostics from every part's findings, in part order, and the counts."""
    return finish_whole(parts, findings, reread)[0]


def finish_whole(parts: Parts, findings: Sequence[PartFindings], reread: Reread
                 ) -> tuple[ChunkedRead, Whole | None]:
    """``finish``, and for a folder ``read`` accepts, what reading it in slices needs."""
    import numpy as np

    problems = _value_problems(findings)
    if problems:
        return ChunkedRead(tuple(problems)), None
    tasks = [found for found in findings if found.member == TASKS]
    fragments = [found for found in findings if found.member == FRAGMENTS]
    ids = np.concatenate([found.ids for found in tasks] or [np.zeros(0, np.int64)])
    count = len(ids)
    offsets = np.zeros(count + 1, dtype=np.int64)
    dependency_ids = np.zeros(0, dtype=np.int64)
    name = "parents" if "parents" in parts.columns[TASKS] else \
        "children" if "children" in parts.columns[TASKS] else None
    if name is not None and any(found.dependencies for found in tasks):
        lists = [reread(index) for index in range(parts.task_groups)]
        offsets, dependency_ids = dependency_lists(
            name, ids, np.concatenate([lengths for lengths, _ in lists]),
            np.concatenate([values for _, values in lists]))
    problems = dependency_problems(ids, offsets, dependency_ids)
    if any(problem.is_error for problem in problems):
        return ChunkedRead(tuple(problems)), None
    distinct = np.concatenate([found.ids for found in fragments] or [np.zeros(0, np.int64)])
    empty = np.flatnonzero(~np.isin(ids, distinct))
    if len(empty):
        problems.append(no_fragments_warning(len(empty), int(ids[empty[0]]), int(empty[0])))
    if len(distinct):
        stray = ~np.isin(distinct, ids)
        if stray.any():
            counts = np.concatenate([found.fragment_counts for found in fragments])[stray]
            rows = np.concatenate([found.fragment_first_rows for found in fragments])[stray]
            first = int(np.argmin(rows))
            problems.append(unknown_fragment_warning(int(counts.sum()),
                                                     int(distinct[stray][first]),
                                                     int(rows[first])))
    del distinct
    submissions = [found.first_submission for found in tasks
                   if found.first_submission is not None]
    time_origin, origin = time_origin_of(parts.metadata,
                                         min(submissions) if submissions else None)
    own_extras = frozenset().union(*(found.own_extras for found in tasks))
    if len(empty) or _a_task_has_several_fragments(ids, fragments):
        own_extras |= {PROFILE}  # (a task of several fragments, or of none, has a profile)
    whole = Whole(ids, offsets, dependency_ids, time_origin, origin, own_extras,
                  tuple(found.ids for found in fragments))
    return ChunkedRead(tuple(problems), count, tasks=count,
                       dependencies=len(dependency_ids)), whole


def _a_task_has_several_fragments(ids: Any, fragments: Sequence[PartFindings]) -> bool:
    """Whether some task has more than one row in fragments.parquet, from the fragments row
    groups' distinct ids and counts."""
    import numpy as np

    if not fragments:
        return False
    distinct = np.concatenate([found.ids for found in fragments])
    counts = np.concatenate([found.fragment_counts for found in fragments])
    held = np.isin(distinct, ids)
    each, where = np.unique(distinct[held], return_inverse=True)
    return bool(len(each)) and bool(
        np.any(np.bincount(where, weights=counts[held], minlength=len(each)) > 1))


def _value_problems(findings: Sequence[PartFindings]) -> list[Diagnostic]:
    """``codec._value_problems`` of each member, in member order."""
    problems: list[Diagnostic] = []
    for member in MEMBERS:
        own = [found for found in findings if found.member == member]
        for name in REQUIRED[member]:
            held = [found.nulls[name] for found in own if name in found.nulls]
            if held:
                problems.append(null_error(member, name, sum(count for count, _ in held),
                                           held[0][1]))
        if member == TASKS:
            for name in LISTS:
                rows = [found.null_items[name] for found in own if name in found.null_items]
                if rows:
                    problems.append(null_item_error(name, rows[0]))
        for name in NOT_NEGATIVE[member]:
            rows = [found.negative[name] for found in own if name in found.negative]
            if rows:
                problems.append(negative_error(member, name, rows[0]))
    return problems


def reread_dependencies(sources: Sources, index: int) -> tuple[Any, Any]:
    """Tasks row group ``index``'s dependency column (``parents``, else ``children``): its
    lengths and items (``finish``'s ``reread``)."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(sources[TASKS])
    columns, _ = canonical_columns(TASKS, parquet.schema_arrow.names)
    own = columns["parents"] if "parents" in columns else columns["children"]
    table = parquet.read_row_group(index, columns=[own])
    return list_lengths_and_values(table.column(own).combine_chunks())


# --------------------------------------------------------------------------- in slices


def read_whole(sources: Sources) -> tuple[ChunkedRead, Parts | None, Whole | None]:
    """Every part checked in turn and merged: the verdict, and for a folder ``read``
    accepts, its footers and what reading it in slices needs."""
    parts, problems = open_parts(sources)
    if parts is None:
        return ChunkedRead(problems), None, None
    findings = []
    for index in range(len(parts.row_counts)):
        found = check_part(sources, parts, index)
        if isinstance(found, Diagnostic):
            return ChunkedRead((found,)), None, None
        findings.append(found)
    verdict, whole = finish_whole(
        parts, findings, lambda index: reread_dependencies(sources, index))
    return verdict, parts, whole


def task_slices(sources: Sources, parts: Parts, whole: Whole, rows: int
                ) -> Iterator[ReadResult]:
    """The tasks, ``rows`` at a time, each slice as ``read`` reads the whole folder (its
    dependencies on tasks of other slices kept, its own extras keys the whole file's, the
    time origin in the first slice's)."""
    import pyarrow.parquet as pq

    tasks_file = pq.ParquetFile(sources[TASKS])
    join = _FragmentJoin(sources, whole)
    first = 0
    for group in range(parts.task_groups):
        table = tasks_file.read_row_group(group).combine_chunks()
        for start in range(0, table.num_rows, rows):
            piece = table.slice(start, rows)
            yield _slice(_Member(TASKS, piece, parts.columns[TASKS]), whole, join,
                         first + start, parts.columns[FRAGMENTS], header=not first + start)
        first += table.num_rows


def _slice(tasks: _Member, whole: Whole, join: _FragmentJoin, first: int,
           fragment_columns_named: dict[str, str], header: bool) -> ReadResult:
    from dcx.core.columns import JobRows
    from dcx.core.model import Document, Workload

    count = tasks.table.num_rows
    ids = whole.ids[first:first + count]
    offsets = whole.offsets[first:first + count + 1]
    dependency_ids = whole.dependency_ids[int(offsets[0]):int(offsets[-1])]
    duration = _int64(tasks.column("duration"))
    capacity = _float64(tasks.column("cpu_capacity"))
    always = whole.own_extras | ({PROFILE} if join.profiled else frozenset())
    profiles = profile_texts(ids, duration, capacity,
                             *join.fragments_of(ids, fragment_columns_named))
    join.profiled = join.profiled or profiles is not None
    columns = task_columns(tasks, ids, whole.origin, offsets - offsets[0], dependency_ids,
                           profiles, always)
    # the header (the time origin) goes with the first slice only: its losses once
    workload = Workload(jobs=JobRows(columns),
                        time_origin=whole.time_origin if header else None)
    return ReadResult(Document(workload=workload), ())


class _FragmentJoin:
    """The fragments of a slice's tasks, in file order, from the row groups holding them."""

    KEPT = 2
    """Row groups kept decoded (fragments in their tasks' order need the last one again)."""

    def __init__(self, sources: Sources, whole: Whole) -> None:
        import pyarrow.parquet as pq

        self.file = pq.ParquetFile(sources[FRAGMENTS])
        self.groups = whole.fragment_groups
        self.decoded: dict[int, tuple[Any, Any, Any, Any]] = {}
        self.profiled = False
        """Whether some task so far has a profile (then every later slice has the key)."""

    def fragments_of(self, ids: Any, named: dict[str, str]) -> tuple[Any, Any, Any, Any]:
        """The fragments of the tasks ``ids`` (``codec.fragment_columns``), in file order;
        ``named``: fragments.parquet's canonical column → own name."""
        import numpy as np

        pieces = []
        if len(ids):
            low, high = int(ids.min()), int(ids.max())
            for group, distinct in enumerate(self.groups):
                if not len(distinct) or int(distinct[-1]) < low or int(distinct[0]) > high \
                        or not bool(np.isin(ids, distinct).any()):
                    continue
                arrays = self._decoded(group, named)
                keep = np.isin(arrays[0], ids)
                pieces.append(tuple(array[keep] for array in arrays))
        if not pieces:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0), np.zeros(0)
        fragment_ids, spans, usage, gpu_usage = (
            np.concatenate([piece[column] for piece in pieces]) for column in range(4))
        return fragment_ids, spans, usage, gpu_usage

    def _decoded(self, group: int, named: dict[str, str]) -> tuple[Any, Any, Any, Any]:
        found = self.decoded.get(group)
        if found is None:
            own = [named[name] for name in _FRAGMENT_COLUMNS if name in named]
            table = self.file.read_row_group(group, columns=own).combine_chunks()
            found = fragment_columns(_Member(FRAGMENTS, table, {
                name: named[name] for name in _FRAGMENT_COLUMNS if name in named}))
            if len(self.decoded) >= self.KEPT:
                del self.decoded[next(iter(self.decoded))]
            self.decoded[group] = found
        return found
