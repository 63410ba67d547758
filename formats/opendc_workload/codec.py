"""OpenDC workload's reader, normal form and writer: the format's reference text, sniffer and
declaration are the package's (``dcx.formats.opendc_workload``), which imports this module on
first use. pyarrow and numpy are imported inside the functions."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from dcx.core.columns import (
    ExtraColumn,
    JobRows,
    Strings,
    WorkloadColumns,
    all_distinct,
    all_found,
    columns_of,
    strings_from_arrow,
)
from dcx.core.diagnostics import Diagnostic, ReadResult, WriteResult, error, warning
from dcx.core.ids import job_holding
from dcx.core.limits import LIMITS
from dcx.core.memo import last_result
from dcx.core.model import Document, Id, Job, Task, Workload
from dcx.core.shapes import one_node, one_node_columns, only_resplit, only_resplit_rows
from dcx.formats.opendc_workload import (
    FRAGMENTS,
    LEGACY_MEMBERS,
    MEMBERS,
    MHZ_PER_CORE,
    OWN,
    SCHEMA,
    TASKS,
)

TIME_ORIGIN_KEY = b"dcx:time_origin"
"""Key-value metadata of tasks.parquet: the workload's time origin (empty: none)."""
MEMORY_FACTOR = 1000
"""``mem_capacity`` = MB × 1000: OpenDC divides it by 1000 and compares it with MiB."""

NAME, CPU_CAPACITY, GPU_CAPACITY = OWN + "name", OWN + "cpu_capacity", OWN + "gpu_capacity"
DEFERRABLE, PROFILE = OWN + "deferrable", OWN + "fragments"
OWN_KEYS = (NAME, CPU_CAPACITY, GPU_CAPACITY, DEFERRABLE, PROFILE)

ALIASES = {
    TASKS: {"submissionTime": "submission_time", "maxCores": "cpu_count",
            "requiredMemory": "mem_capacity", "gpuMaxCores": "gpu_count"},
    FRAGMENTS: {"cpuUsage": "cpu_usage", "gpuUsage": "gpu_usage", "time": "timestamp",
                "cores": "cpu_count", "gpuCount": "gpu_count", "gpu_cores": "gpu_count",
                "gpuCores": "gpu_count"},
}
REQUIRED = {
    TASKS: ("id", "submission_time", "duration", "cpu_count", "cpu_capacity", "mem_capacity"),
    FRAGMENTS: ("id", "duration", "cpu_usage"),
}
NOT_NEGATIVE = {
    TASKS: ("duration", "cpu_count", "cpu_capacity", "mem_capacity", "gpu_count",
            "gpu_capacity"),
    FRAGMENTS: ("duration", "cpu_usage", "gpu_usage", "cpu_count", "gpu_count"),
}
_INT32 = 2 ** 31
_EXACT = 2 ** 53
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


# --------------------------------------------------------------------------- time origin


def origin_ms(text: str | None) -> int | None:
    """Epoch milliseconds of an ISO 8601 instant (UTC when it names no zone); ``None`` when
    the text is not one or is finer than a millisecond. No origin is epoch 0."""
    if text is None:
        return 0
    try:
        instant = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    try:
        delta = instant - _EPOCH
    except OverflowError:
        return None
    if delta % _MILLISECOND:
        return None
    return delta // _MILLISECOND


def iso_ms(milliseconds: int) -> str:
    """``2024-03-01T12:00:00Z`` (with ``.mmm`` when there are milliseconds)."""
    instant = _EPOCH + timedelta(milliseconds=milliseconds)
    text = instant.strftime("%Y-%m-%dT%H:%M:%S")
    if milliseconds % 1000:
        text += f".{milliseconds % 1000:03d}"
    return text + "Z"


# --------------------------------------------------------------------------- read


@dataclass(frozen=True)
class _Member:
    name: str
    table: Any
    columns: dict[str, str]
    """Canonical column name → the file's own name (an alias where it used one)."""

    def has(self, column: str) -> bool:
        return column in self.columns

    def column(self, column: str) -> Any:
        return self.table.column(self.columns[column])


def read(data: bytes) -> ReadResult:
    from dcx.core.members import unpack

    if len(data) > LIMITS.max_input_bytes:
        return ReadResult(None, (error(f"input is {len(data):,} bytes; the limit is "
                                       f"{LIMITS.max_input_bytes:,}", "input.too-large"),))
    members, why = unpack(data, MEMBERS + LEGACY_MEMBERS)
    if members is None:
        return ReadResult(None, (error(why, "opendc-workload.archive"),))
    if TASKS not in members and FRAGMENTS not in members and set(LEGACY_MEMBERS) & set(members):
        return _legacy(members)
    missing = [name for name in MEMBERS if name not in members]
    if missing:
        return ReadResult(None, tuple(missing_member_error(name) for name in missing))
    return _current(members)


def _legacy(members: dict[str, bytes]) -> ReadResult:
    """An OpenDC 2.x folder (``legacy.py``): its files as today's, read as today's, every
    diagnostic pointing into the 2.x file it is about."""
    from dcx.formats.opendc_workload import legacy

    missing = [name for name in LEGACY_MEMBERS if name not in members]
    if missing:
        return ReadResult(None, tuple(missing_member_error(name) for name in missing))
    translated = legacy.translate(members)
    if translated.members is None:
        return ReadResult(None, tuple(translated.problems))
    result = _current(translated.members)
    return replace(result, diagnostics=(*translated.problems,
                                        *map(legacy.renamed, result.diagnostics)))


def _current(members: dict[str, bytes]) -> ReadResult:
    tables: dict[str, _Member] = {}
    problems: list[Diagnostic] = []
    for name in MEMBERS:
        member, found = _member(name, members[name])
        problems += found
        if member is not None:
            tables[name] = member
    if problems:
        return ReadResult(None, tuple(problems))
    problems = _schema_problems(tables)
    if problems:
        return ReadResult(None, tuple(problems))
    for member in tables.values():
        problems += _value_problems(member)
    if problems:
        return ReadResult(None, tuple(problems))
    return _workload(tables[TASKS], tables[FRAGMENTS])


def _member(name: str, data: bytes) -> tuple[_Member | None, list[Diagnostic]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not data.startswith(b"PAR1") or not data.endswith(b"PAR1"):
        return None, [not_parquet_error(name)]
    try:
        table = pq.read_table(pa.BufferReader(data)).combine_chunks()
    except (pa.ArrowException, OSError, ValueError) as exc:  # a damaged file is bad input
        return None, [unreadable_error(name, exc)]
    columns, problems = canonical_columns(name, table.column_names)
    return _Member(name, table, columns), problems


def not_parquet_error(name: str) -> Diagnostic:
    return error(f"{name} is not a Parquet file (it does not begin and end with PAR1)",
                 "opendc-workload.unreadable", pointer=f"/{name}")


def unreadable_error(name: str, exc: Exception) -> Diagnostic:
    return error(f"cannot read {name}: {exc}", "opendc-workload.unreadable", pointer=f"/{name}")


def missing_member_error(name: str) -> Diagnostic:
    return error(f"the workload folder has no {name}", "opendc-workload.missing-member",
                 pointer=f"/{name}")


def canonical_columns(name: str, column_names: list[str]) -> tuple[dict[str, str],
                                                                    list[Diagnostic]]:
    """A member's columns by their canonical names (OpenDC's aliases resolved) → the file's
    own names, and a column given twice."""
    aliases = ALIASES[name]
    columns: dict[str, str] = {}
    problems: list[Diagnostic] = []
    for column in column_names:
        canonical = aliases.get(column, column)
        if canonical in columns:
            problems.append(error(f"{name} has {canonical} twice (as {columns[canonical]} "
                                  f"and {column})", "opendc-workload.duplicate-column",
                                  pointer=f"/{name}/columns/{column}"))
            continue
        columns[canonical] = column
    return columns, problems


def arrow_type_name(arrow_type: Any) -> str:
    """How the schema names a column's type: ``int32``, ``timestamp[ms, tz=UTC]``,
    ``list<int32>``."""
    import pyarrow as pa

    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return f"list<{arrow_type_name(arrow_type.value_type)}>"
    if pa.types.is_large_string(arrow_type):
        return "string"
    return str(arrow_type)


def _schema_problems(tables: dict[str, _Member]) -> list[Diagnostic]:
    return schema_problems({name: (member.table.schema, member.columns)
                            for name, member in tables.items()})


def schema_problems(schemas: dict[str, tuple[Any, dict[str, str]]]) -> list[Diagnostic]:
    """The members' columns (member → its Arrow schema and canonical column → own name)
    checked against the format's schema."""
    from dcx.parsing.schemas import schema_diagnostics

    described = {name: {"columns": {canonical: arrow_type_name(schema.field(own).type)
                                    for canonical, own in columns.items()}}
                 for name, (schema, columns) in schemas.items()}
    return schema_diagnostics(SCHEMA, described)


def _value_problems(member: _Member) -> list[Diagnostic]:
    import pyarrow.compute as pc

    problems: list[Diagnostic] = []
    for name in REQUIRED[member.name]:
        column = member.column(name)
        if column.null_count:
            problems.append(null_error(member.name, name, column.null_count,
                                       _first(column.is_null())))
    for name in LISTS:
        if member.name == TASKS and member.has(name):
            flat = pc.list_flatten(member.column(name))
            if flat.null_count:
                row = pc.list_parent_indices(member.column(name)).filter(flat.is_null())
                problems.append(null_item_error(name, int(row[0].as_py())))
    for name in NOT_NEGATIVE[member.name]:
        if not member.has(name):
            continue
        negative = pc.fill_null(pc.less(member.column(name), 0), False)
        if pc.any(negative).as_py():
            problems.append(negative_error(member.name, name, _first(negative)))
    return problems


LISTS = ("parents", "children")
"""tasks.parquet's columns of task ids."""


def null_error(member: str, name: str, count: int, row: int) -> Diagnostic:
    return error(f"{member} {name} has {count:,} null value(s); OpenDC needs one on every row",
                 "opendc-workload.null", pointer=f"/{member}/rows/{row}/{name}")


def null_item_error(name: str, row: int) -> Diagnostic:
    return error(f"{name} has a null task id", "opendc-workload.null",
                 pointer=f"/{TASKS}/rows/{row}/{name}")


def negative_error(member: str, name: str, row: int) -> Diagnostic:
    return error(f"{member} {name} is negative", "opendc-workload.negative",
                 pointer=f"/{member}/rows/{row}/{name}")


def _first(mask: Any) -> int:
    import numpy as np

    return int(np.flatnonzero(np.asarray(mask.to_numpy(zero_copy_only=False)))[0])


def _int64(column: Any) -> Any:
    import numpy as np
    import pyarrow as pa

    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.int64())
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)


def _float64(column: Any, fill: float = math.nan) -> Any:
    import numpy as np
    import pyarrow.compute as pc

    return np.asarray(pc.fill_null(column.cast("double"), fill).to_numpy(zero_copy_only=False),
                      dtype=np.float64)


def _workload(tasks: _Member, fragments: _Member) -> ReadResult:
    count = tasks.table.num_rows
    ids = _int64(tasks.column("id"))
    submitted = _int64(tasks.column("submission_time"))
    time_origin, origin = time_origin_of(tasks.table.schema.metadata or {},
                                         int(submitted.min()) if count else None)
    offsets, dependency_ids = _dependencies(tasks, ids)
    problems = dependency_problems(ids, offsets, dependency_ids)
    if any(problem.is_error for problem in problems):
        return ReadResult(None, tuple(problems))
    duration = _int64(tasks.column("duration"))
    capacity = _float64(tasks.column("cpu_capacity"))
    fragment_ids, spans, usage, gpu_usage = fragment_columns(fragments)
    problems += _fragment_problems(ids, fragment_ids)
    profiles = profile_texts(ids, duration, capacity, fragment_ids, spans, usage, gpu_usage)
    columns = task_columns(tasks, ids, origin, offsets, dependency_ids, profiles)
    workload = Workload(jobs=JobRows(columns), time_origin=time_origin)
    return ReadResult(Document(workload=workload), tuple(problems))


def time_origin_of(metadata: dict[bytes, bytes], first_submission: int | None
                   ) -> tuple[str | None, int]:
    """The workload's time origin and its epoch milliseconds: the one tasks.parquet's
    metadata states, else (a file dcx did not write) its first submission (``None``: no
    task), which is then t = 0."""
    stated = metadata.get(TIME_ORIGIN_KEY)
    if stated is not None and origin_ms(stated.decode("utf-8", "replace") or None) is not None:
        time_origin = stated.decode() or None
        return time_origin, origin_ms(time_origin) or 0
    if first_submission is None:
        return None, 0
    return iso_ms(first_submission), first_submission


def task_columns(tasks: _Member, ids: Any, origin: int, offsets: Any, dependency_ids: Any,
                 profiles: Strings | None, always: frozenset[str] = frozenset()
                 ) -> WorkloadColumns:
    """The tasks' columns (each task its own job), their dependencies and profiles given;
    an own extras key is there when some task has a value for it, or when it is in
    ``always`` (a part of a file that has it elsewhere)."""
    import numpy as np

    count = tasks.table.num_rows
    submitted = _int64(tasks.column("submission_time"))
    duration = _int64(tasks.column("duration"))
    cores = tasks.column("cpu_count").to_numpy().astype(np.float64)
    capacity = _float64(tasks.column("cpu_capacity"))
    memory = _float64(tasks.column("mem_capacity")) / MEMORY_FACTOR
    memory[memory == 0] = math.nan
    gpus = (_int64_filled(tasks.column("gpu_count")) if tasks.has("gpu_count")
            else np.zeros(count, dtype=np.int64))
    deadline = (_int64_filled(tasks.column("deadline"), -1) if tasks.has("deadline")
                else np.full(count, -1, dtype=np.int64))
    deadline_s = np.where(deadline == -1, math.nan, (deadline - origin) / 1000.0)
    extras: dict[str, ExtraColumn] = {}
    absent = np.zeros(count, dtype=bool)
    if tasks.has("name"):
        names = strings_from_arrow(tasks.column("name"))
        if names.count_known() or NAME in always:
            extras[NAME] = ExtraColumn.of_texts(names)
    custom = capacity != cores * MHZ_PER_CORE
    if custom.any() or CPU_CAPACITY in always:
        extras[CPU_CAPACITY] = ExtraColumn(capacity, custom, absent)
    if tasks.has("gpu_capacity"):
        gpu_capacity = _float64(tasks.column("gpu_capacity"))
        given = ~np.isnan(gpu_capacity)
        if given.any() or GPU_CAPACITY in always:
            extras[GPU_CAPACITY] = ExtraColumn(np.where(given, gpu_capacity, 0.0), given,
                                               absent)
    if tasks.has("deferrable"):
        deferrable = np.asarray(tasks.column("deferrable").fill_null(False).to_numpy(
            zero_copy_only=False), dtype=bool)
        if deferrable.any() or DEFERRABLE in always:
            extras[DEFERRABLE] = ExtraColumn.of_texts(Strings(
                np.where(deferrable, 0, -1).astype(np.int32), ("true",)), json=True)
    if profiles is None and PROFILE in always:
        profiles = Strings(np.full(count, -1, dtype=np.int32), ())
    if profiles is not None:
        extras[PROFILE] = ExtraColumn.of_texts(profiles, json=True)
    nothing = Strings(np.full(count, -1, dtype=np.int32), ())
    return WorkloadColumns(
        ids=ids,
        submit_time_s=(submitted - origin) / 1000.0,
        runtime_s=duration / 1000.0,
        requested_time_s=np.full(count, math.nan),
        nodes=np.ones(count, dtype=np.int64),
        cores=cores,
        memory_mb=memory,
        gpus=gpus,
        deadline_s=deadline_s,
        user=nothing, group=nothing,
        dependency_offsets=offsets,
        dependency_ids=dependency_ids,
        extras=extras,
        job_ids=ids.copy(),
        job_offsets=np.arange(count + 1, dtype=np.int64),
        job_names=nothing, job_users=nothing)


def own_extras_present(tasks: _Member) -> frozenset[str]:
    """The own extras keys ``task_columns`` makes of these tasks for a value (all but the
    profile, which their fragments decide)."""
    import numpy as np

    keys = set()
    if tasks.has("name") and strings_from_arrow(tasks.column("name")).count_known():
        keys.add(NAME)
    cores = tasks.column("cpu_count").to_numpy().astype(np.float64)
    if np.any(_float64(tasks.column("cpu_capacity")) != cores * MHZ_PER_CORE):
        keys.add(CPU_CAPACITY)
    if tasks.has("gpu_capacity") and np.any(~np.isnan(_float64(tasks.column("gpu_capacity")))):
        keys.add(GPU_CAPACITY)
    if tasks.has("deferrable") and np.any(np.asarray(tasks.column("deferrable").fill_null(
            False).to_numpy(zero_copy_only=False), dtype=bool)):
        keys.add(DEFERRABLE)
    return frozenset(keys)


def _int64_filled(column: Any, fill: int = 0) -> Any:
    import numpy as np
    import pyarrow.compute as pc

    return np.asarray(pc.fill_null(column, fill).to_numpy(zero_copy_only=False),
                      dtype=np.int64)


def dependency_column(tasks: _Member) -> str | None:
    """The column the tasks' dependencies are read from: ``parents``, else ``children``
    (inverted), else none."""
    return "parents" if tasks.has("parents") else "children" if tasks.has("children") else None


def list_lengths_and_values(column: Any) -> tuple[Any, Any]:
    """A list column's lengths (0 for a null list) and its items, as ``int64`` arrays."""
    import numpy as np
    import pyarrow.compute as pc

    lengths = np.asarray(pc.fill_null(pc.list_value_length(column), 0).to_numpy(
        zero_copy_only=False), dtype=np.int64)
    values = np.asarray(pc.list_flatten(column).to_numpy(zero_copy_only=False), dtype=np.int64)
    return lengths, values


def _dependencies(tasks: _Member, ids: Any) -> tuple[Any, Any]:
    """Offsets and ids of each task's parents; from ``children`` (inverted) when the file
    gives no ``parents``."""
    import numpy as np

    name = dependency_column(tasks)
    if name is None:
        return np.zeros(len(ids) + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return dependency_lists(name, ids, *list_lengths_and_values(tasks.column(name)))


def dependency_lists(name: str, ids: Any, lengths: Any, values: Any) -> tuple[Any, Any]:
    """Offsets and ids of each task's parents, from the ``name`` column's lengths and items
    (``children``: inverted, a child that is no task left out)."""
    import numpy as np

    count = len(ids)
    if name == "parents":
        offsets = np.zeros(count + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return offsets, values
    # children: task ids[row] is a parent of each listed child
    parents = np.repeat(ids, lengths)
    order = np.argsort(ids, kind="stable")
    at = np.minimum(np.searchsorted(ids[order], values), max(count - 1, 0))
    known = ids[order][at] == values if count else np.zeros(len(values), dtype=bool)
    child_rows = np.where(known, order[at], count)  # unknown children: dropped below
    by_child = np.argsort(child_rows, kind="stable")
    sizes = np.bincount(child_rows[known], minlength=count)[:count]
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets, parents[by_child][:int(offsets[-1])]


def dependency_problems(ids: Any, offsets: Any, dependency_ids: Any) -> list[Diagnostic]:
    """Task ids used again, parents that are no task, cycles, at their rows of tasks.parquet."""
    from dcx.parsing.traces import column_dependency_diagnostics

    def locate(row: int, dependency: int | None) -> dict[str, Any]:
        where = "id" if dependency is None else f"parents/{dependency}"
        return {"pointer": f"/{TASKS}/rows/{row}/{where}"}

    return column_dependency_diagnostics(ids, offsets, dependency_ids, locate, "opendc-workload")


def fragment_columns(fragments: _Member) -> tuple[Any, Any, Any, Any]:
    """fragments.parquet's ids, durations, CPU usages and GPU usages (NaN: none)."""
    import numpy as np

    fragment_ids = _int64(fragments.column("id"))
    return (fragment_ids, _int64(fragments.column("duration")),
            _float64(fragments.column("cpu_usage")),
            _float64(fragments.column("gpu_usage")) if fragments.has("gpu_usage")
            else np.broadcast_to(math.nan, len(fragment_ids)))  # (none: no memory held)


def _fragment_problems(ids: Any, fragment_ids: Any) -> list[Diagnostic]:
    """Tasks without fragments and fragments of no task."""
    import numpy as np

    count = len(ids)
    problems: list[Diagnostic] = []
    if len(fragment_ids) and bool(np.all(fragment_ids[1:] >= fragment_ids[:-1])):
        # in task order already (as OpenDC writes them): found without sorting a copy
        at = np.minimum(np.searchsorted(fragment_ids, ids), len(fragment_ids) - 1)
        has = fragment_ids[at] == ids
    else:
        has = np.isin(ids, fragment_ids)
    empty = np.flatnonzero(~has)
    if len(empty):
        problems.append(no_fragments_warning(len(empty), int(ids[empty[0]]), int(empty[0])))
    if len(fragment_ids):
        known = np.sort(ids)
        at = np.minimum(np.searchsorted(known, fragment_ids), max(count - 1, 0))
        stray = np.flatnonzero(known[at] != fragment_ids) if count else np.arange(
            len(fragment_ids))
        if len(stray):
            problems.append(unknown_fragment_warning(
                len(stray), int(fragment_ids[stray[0]]), int(stray[0])))
    return problems


def no_fragments_warning(count: int, task_id: int, row: int) -> Diagnostic:
    return warning(f"{count:,} task(s) have no row in {FRAGMENTS}, starting with task "
                   f"{task_id}; OpenDC silently drops them", "opendc-workload.no-fragments",
                   pointer=f"/{TASKS}/rows/{row}/id")


def unknown_fragment_warning(count: int, fragment_id: int, row: int) -> Diagnostic:
    return warning(f"{count:,} fragment(s) belong to no task, starting with id {fragment_id}; "
                   "OpenDC ignores them", "opendc-workload.unknown-fragment",
                   pointer=f"/{FRAGMENTS}/rows/{row}/id")


def profile_texts(ids: Any, duration: Any, capacity: Any, fragment_ids: Any, spans: Any,
                  usage: Any, gpu_usage: Any) -> Strings | None:
    """Each task's fragments (in file order) as a JSON profile where they are not one
    fragment of the task's duration at its capacity (a task without fragments: ``[]``, so
    that it is written without any again); ``None`` when no task has one. Tasks with the
    same fragments share one text, made once (``_distinct_profiles``)."""
    import numpy as np

    count = len(ids)
    if len(fragment_ids) < 2 or bool(np.all(fragment_ids[1:] >= fragment_ids[:-1])):
        order, ordered = np.arange(len(fragment_ids)), fragment_ids  # (in task order already)
    else:
        order = np.argsort(fragment_ids, kind="stable")
        ordered = fragment_ids[order]
    first = np.searchsorted(ordered, ids, side="left")
    last = np.searchsorted(ordered, ids, side="right")
    del ordered
    sizes = last - first
    single = sizes == 1
    head = order[np.minimum(first, max(len(order) - 1, 0))] if len(order) else first
    trivial = single.copy()
    if len(order):
        trivial &= (spans[head] == duration) & (usage[head] == capacity) & np.isnan(
            gpu_usage[head])
    profiled = np.flatnonzero(~trivial)
    if not len(profiled):
        return None
    codes = np.full(count, -1, dtype=np.int32)
    texts: dict[str, int] = {}
    if not len(order):
        codes[profiled] = texts.setdefault("[]", 0)
        return Strings(codes, tuple(texts))
    representative = _distinct_profiles(profiled, first, sizes, order, spans, usage, gpu_usage)
    distinct = np.unique(representative)
    for at in range(0, len(distinct), _PROFILES_AT_ONCE):
        rows = distinct[at:at + _PROFILES_AT_ONCE]
        made = _profile_texts_of(rows, first, sizes, order, spans, usage, gpu_usage)
        for row, text in zip(rows.tolist(), made, strict=True):
            codes[row] = texts.setdefault(text, len(texts))
    codes[profiled] = codes[representative]
    return Strings(codes, tuple(texts))


def _profile_texts_of(rows: Any, first: Any, sizes: Any, order: Any, spans: Any,
                      usage: Any, gpu_usage: Any) -> list[str]:
    """The JSON profiles of the tasks at ``rows``, their fragments turned into Python
    numbers at once (not value by value)."""
    import numpy as np

    sizes_of = sizes[rows]
    ends = np.cumsum(sizes_of)
    total = int(ends[-1]) if len(ends) else 0
    taken = order[np.repeat(first[rows] - (ends - sizes_of), sizes_of) + np.arange(total)]
    cpu, gpu = usage[taken], gpu_usage[taken]
    batch = zip(spans[taken].tolist(), cpu.tolist(), gpu.tolist(), strict=True)
    start = 0
    texts = []
    if np.isfinite(cpu).all() and (np.isfinite(gpu) | np.isnan(gpu)).all():
        # json.dumps' own text (a float as its repr), written without building lists
        pieces = [f"[{span}, {cpu!r}]" if gpu != gpu else f"[{span}, {cpu!r}, {gpu!r}]"
                  for span, cpu, gpu in batch]  # (gpu != gpu: NaN, no GPU usage)
        for end in ends.tolist():
            texts.append("[" + ", ".join(pieces[start:end]) + "]")
            start = end
        return texts
    lists = [[span, cpu] if gpu != gpu else [span, cpu, gpu] for span, cpu, gpu in batch]
    for end in ends.tolist():
        texts.append(json.dumps(lists[start:end]))
        start = end
    return texts


_MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)


def _distinct_profiles(rows: Any, first: Any, sizes: Any, order: Any, spans: Any,
                       usage: Any, gpu_usage: Any) -> Any:
    """For each of ``rows``, the row of the first task with the very same fragments (itself
    when none comes before): tasks grouped by a hash of their fragments in numpy, then each
    compared with its group's first, fragment by fragment, so a hash collision only costs
    a text of its own. Both steps go a batch of tasks at a time (bounded memory)."""
    import numpy as np

    sizes_of = sizes[rows]
    starts_of = first[rows]
    signature = np.zeros(len(rows), dtype=np.uint64)
    for batch in _batches(sizes_of):
        signature[batch] = _signatures(starts_of[batch], sizes_of[batch], order, spans,
                                       usage, gpu_usage)
    keys = np.stack([signature, sizes_of.astype(np.uint64)], axis=1)
    _, group_first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    leader = group_first[inverse.reshape(-1)]  # the lowest index: the group's first task
    members = np.flatnonzero(leader != np.arange(len(rows)))
    for batch in _batches(sizes_of[members]):
        mine, theirs = members[batch], leader[members[batch]]
        count = sizes_of[mine]
        offsets = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        here = order[np.repeat(starts_of[mine], count) + offsets]
        there = order[np.repeat(starts_of[theirs], count) + offsets]
        equal = ((spans[here] == spans[there])
                 & (_canonical_bits(usage[here]) == _canonical_bits(usage[there]))
                 & (_canonical_bits(gpu_usage[here]) == _canonical_bits(gpu_usage[there])))
        unequal = np.unique(np.repeat(np.arange(len(mine)), count)[~equal])
        leader[mine[unequal]] = mine[unequal]
    return rows[leader]


_FRAGMENTS_AT_ONCE = 1 << 20


def _batches(sizes: Any) -> list[slice]:
    """Consecutive slices of tasks holding about ``_FRAGMENTS_AT_ONCE`` fragments each."""
    import numpy as np

    ends = np.cumsum(sizes)
    cuts = np.searchsorted(ends, np.arange(_FRAGMENTS_AT_ONCE, int(ends[-1]) if len(ends)
                                           else 0, _FRAGMENTS_AT_ONCE), side="right")
    bounds = [0, *dict.fromkeys(cuts.tolist()), len(sizes)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _signatures(starts: Any, sizes: Any, order: Any, spans: Any, usage: Any,
                gpu_usage: Any) -> Any:
    """A 64-bit hash of each task's fragments (durations, usages, positions)."""
    import numpy as np

    ends = np.cumsum(sizes)
    total = int(ends[-1]) if len(ends) else 0
    signature = np.zeros(len(sizes), dtype=np.uint64)
    if not total:
        return signature
    local = np.arange(total) - np.repeat(ends - sizes, sizes)
    taken = order[np.repeat(starts, sizes) + local]
    with np.errstate(over="ignore"):
        mixed = spans[taken].view(np.uint64) * np.uint64(_MIX[0])
        mixed ^= _canonical_bits(usage[taken]) * np.uint64(_MIX[1])
        mixed ^= _canonical_bits(gpu_usage[taken]) * np.uint64(_MIX[2])
        mixed ^= local.astype(np.uint64) * np.uint64(_MIX[3])
        mixed ^= mixed >> np.uint64(31)
        mixed *= np.uint64(_MIX[0])
        mixed ^= mixed >> np.uint64(29)
        filled = sizes > 0
        signature[filled] = np.add.reduceat(mixed, (ends - sizes)[filled])
    return signature


def _canonical_bits(values: Any) -> Any:
    """The bits of float values with every NaN alike."""
    import numpy as np

    bits = np.ascontiguousarray(values).view(np.uint64).copy()
    bits[np.isnan(values)] = np.uint64(0x7FF8000000000000)
    return bits


_PROFILES_AT_ONCE = 1 << 14
"""Tasks whose fragments ``profile_texts`` turns into Python numbers at once."""


# --------------------------------------------------------------------------- normal form


@last_result
def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    workload = document.workload
    if workload is None:
        return document, frozenset()
    lost: set[str] = set()
    time_origin = workload.time_origin
    origin = origin_ms(time_origin)
    if origin is None:
        time_origin, origin = None, 0
        lost.add("workload.time_origin")
    columns = columns_of(workload)
    normal_columns = None if columns is None else _normal_columns(columns, origin, lost)
    if normal_columns is not None and normal_columns is columns:
        jobs = workload.jobs
    elif normal_columns is not None:
        jobs = JobRows(normal_columns)
    else:
        jobs = _normal_jobs(tuple(workload.jobs), origin, lost)
    if jobs is workload.jobs and time_origin == workload.time_origin:
        return document, frozenset(lost)
    normal = replace(workload, jobs=jobs, time_origin=time_origin)
    return replace(document, workload=normal), frozenset(lost)


def normal_form(document: Document) -> Document:
    """Unique 32-bit ids, times to the millisecond, whole cores, memory to 1/1000 MB, the
    extras OpenDC's columns carry (see the package docstring)."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    return _normalized(document)[1]


def _columns_in_reach(columns: WorkloadColumns) -> bool:
    """Whether ``_normal_columns`` can make these columns' normal form: 32-bit ids, all
    distinct, dependencies among them, no own extras but names, capacities and profiles
    (as texts it can check), at least one node and a 32-bit GPU count per task."""
    import numpy as np

    ids = columns.ids
    if ids.dtype.kind != "i" or (len(ids) and (int(ids.min()) < -_INT32
                                               or int(ids.max()) >= _INT32)):
        return False
    if not all_distinct(ids):
        return False
    if len(columns.dependency_ids) and (columns.dependency_ids.dtype.kind != "i"
                                        or not all_found(columns.dependency_ids, ids)):
        return False
    own = [key for key in columns.extras if key.startswith(OWN)]
    if any(key not in (NAME, CPU_CAPACITY, PROFILE) for key in own):
        return False
    profile = columns.extras.get(PROFILE)
    if profile is not None and (profile.texts is None or not profile.json
                                or not _valid_profiles(profile.texts, profile.present)):
        return False
    name = columns.extras.get(NAME)
    if name is not None and (name.texts is None or name.json):
        return False
    return not (np.any(columns.nodes < 1) or np.any(columns.gpus < 0)
                or np.any(columns.gpus >= _INT32))


def _normal_columns(columns: WorkloadColumns, origin: int,
                    lost: set[str]) -> WorkloadColumns | None:
    """The task-by-task normal form done column by column, or ``None`` where only
    ``_normal_jobs`` can do it (ids to renumber, dependencies to drop, extras of its own
    other than names and capacities)."""
    import numpy as np

    if not _columns_in_reach(columns):
        return None
    ids = columns.ids
    profile = columns.extras.get(PROFILE)
    changes: dict[str, Any] = {}
    submit = _ms_column(np, columns.submit_time_s, 0.0)
    runtime = _ms_column(np, columns.runtime_s, 0.0)
    runtime[runtime < 0] = 0.0
    deadline = _ms_column(np, columns.deadline_s, math.nan)
    deadline[np.round(deadline * 1000) + origin == -1] = math.nan
    total, node_memory = one_node_columns(columns.nodes, columns.cores, columns.memory_mb)
    cores, memory = _whole_cpu_column(np, total), _held_memory_column(np, node_memory)
    for field, path, normal in (("submit_time_s", "task.submit_time_s", submit),
                                ("runtime_s", "task.runtime_s", runtime),
                                ("deadline_s", "task.deadline_s", deadline)):
        given = getattr(columns, field)
        if not np.array_equal(given, normal, equal_nan=True):
            changes[field] = normal
            lost.add(path)
    # (as _normal_task: cores and memory count as changed for their own rounding only)
    for field, path, normal, own in (
            ("cores", "task.request.cores", cores, _whole_cpu_column(np, columns.cores)),
            ("memory_mb", "task.request.memory_mb", memory,
             _held_memory_column(np, columns.memory_mb))):
        given = getattr(columns, field)
        if not np.array_equal(given, normal, equal_nan=True):
            changes[field] = normal
        if not np.array_equal(given, own, equal_nan=True):
            lost.add(path)
    several = columns.nodes != 1
    if np.any(several):
        changes["nodes"] = np.ones(len(ids), dtype=np.int64)
        if np.any(several & ~only_resplit_rows(columns.placement, columns.nodes, columns.cores,
                                               cores)):
            lost.add("task.request.nodes")  # (cores anywhere: only the total means something)
    capacity = columns.extras.get(CPU_CAPACITY)
    extras = dict(columns.extras)
    if capacity is not None:
        if capacity.texts is not None:
            return None
        keep = capacity.present & np.isfinite(capacity.values) & (capacity.values >= 0) & (
            capacity.values != cores * MHZ_PER_CORE)
        if not np.array_equal(keep, capacity.present):
            if keep.any():
                extras[CPU_CAPACITY] = replace(capacity, present=keep)
            else:
                del extras[CPU_CAPACITY]
            lost.add("task.extras")
    if profile is not None and profile.texts is not None:
        # as _normal_extras: a profile of one fragment of the runtime at the capacity is
        # what the writer writes without one
        full = cores * MHZ_PER_CORE
        if capacity is not None:
            given = capacity.values
            with np.errstate(invalid="ignore"):
                usable = capacity.present & np.isfinite(given) & (given >= 0) & (
                    np.abs(given) <= _EXACT)
            full = np.where(usable, given, full)
        keep = profile.present & ~_one_full_fragment(profile.texts, np.round(runtime * 1000),
                                                     full)
        if not np.array_equal(keep, profile.present):
            if keep.any():
                extras[PROFILE] = replace(profile, present=keep)
            else:
                del extras[PROFILE]
            lost.add("task.extras")
    if extras.keys() != columns.extras.keys() or any(
            extras[key] is not columns.extras[key] for key in extras):
        changes["extras"] = extras
    return replace(columns, **changes) if changes else columns


@last_result
def _parsed_profiles(texts: Strings) -> list[Any]:
    """Each distinct profile text of a column, parsed (once for the last column asked)."""
    return [json.loads(text) for text in texts.values]


def _valid_profiles(texts: Strings, present: Any) -> bool:
    """Whether every profile text the present rows use is a profile (``_profile``)."""
    import numpy as np

    parsed = _parsed_profiles(texts)
    return all(_profile(parsed[code]) for code in np.unique(texts.codes[present]).tolist())


def _one_full_fragment(texts: Strings, runtime_ms: Any, capacity: Any) -> Any:
    """The rows whose profile is one CPU fragment of the row's runtime at its capacity."""
    import numpy as np

    found = np.zeros(len(texts.codes), dtype=bool)
    for code, value in enumerate(_parsed_profiles(texts)):
        if type(value) is list and len(value) == 1 and len(value[0]) == 2:
            span, usage = value[0]
            found |= (texts.codes == code) & (runtime_ms == span) & (capacity == usage)
    return found


def _whole_cpu_column(np: Any, cores: Any) -> Any:
    """``_whole_cpus`` of each value."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(cores) & (cores >= 0),
                        np.minimum(np.ceil(cores), _INT32 - 1), 1.0)


def _held_memory_column(np: Any, memory_mb: Any) -> Any:
    """``_held_memory`` of each value (``NaN``: ``None``)."""
    memory = np.round(memory_mb * MEMORY_FACTOR) / MEMORY_FACTOR
    memory[~(memory > 0) | ~(memory * MEMORY_FACTOR < _EXACT)] = math.nan
    return memory


def _ms_column(np: Any, seconds: Any, unknown: float) -> Any:
    """Seconds rounded to the millisecond; ``unknown`` for NaN and what a float cannot hold
    to the millisecond."""
    milliseconds = np.round(seconds * 1000)
    fits = np.isfinite(milliseconds) & (np.abs(milliseconds) < _EXACT)
    return np.where(fits, milliseconds / 1000, unknown)


def _normal_jobs(jobs: tuple[Job, ...], origin: int, lost: set[str]) -> tuple[Job, ...]:
    tasks = [task for job in jobs for task in job.tasks]
    ids = [task.id for task in tasks]
    if not (all(type(value) is int and -_INT32 <= value < _INT32 for value in ids)
            and len(set(ids)) == len(ids)):
        lost.add("task.id")
        ids = list(range(1, len(ids) + 1))
    numbering: dict[Id, Id] = {}  # a dependency follows the first task of its id
    for task, number in zip(tasks, ids, strict=True):
        numbering.setdefault(task.id, number)
    numbers = iter(ids)
    normal = []
    for job in jobs:
        normal_tasks = tuple(_normal_task(task, next(numbers), numbering, origin, lost)
                             for task in job.tasks)
        if all(a is b for a, b in zip(normal_tasks, job.tasks, strict=True)):
            normal.append(job)
        else:
            normal.append(job_holding(job, normal_tasks) if normal_tasks
                          else replace(job, tasks=normal_tasks))
    return tuple(normal)


def _to_ms(value: Any) -> float | None:
    """``value`` seconds rounded to the millisecond, or ``None`` when it is no finite number
    a float holds to the millisecond."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    milliseconds = round(value * 1000)
    if abs(milliseconds) >= _EXACT:
        return None
    return milliseconds / 1000


def _normal_task(task: Task, new_id: Id, numbering: dict[Id, Id], origin: int,
                 lost: set[str]) -> Task:
    changes: dict[str, Any] = {}
    if new_id != task.id or type(new_id) is not type(task.id):
        changes["id"] = new_id
    dependencies = tuple(numbering[d] for d in task.dependencies if d in numbering)
    if len(dependencies) != len(task.dependencies):
        lost.add("task.dependencies")
    if dependencies != task.dependencies or any(
            type(a) is not type(b) for a, b in zip(dependencies, task.dependencies,
                                                   strict=False)):
        changes["dependencies"] = dependencies
    submit = _to_ms(task.submit_time_s)
    runtime = _to_ms(task.runtime_s)
    deadline = None if task.deadline_s is None else _to_ms(task.deadline_s)
    if deadline is not None and round(deadline * 1000) + origin == -1:
        deadline = None  # -1 is OpenDC's "no deadline"
    normal_runtime = runtime if runtime is not None and runtime >= 0 else 0.0
    for name, value, normal in (("submit_time_s", task.submit_time_s, submit or 0.0),
                                ("runtime_s", task.runtime_s, normal_runtime),
                                ("deadline_s", task.deadline_s, deadline)):
        if not _same(value, normal):
            changes[name] = normal
            lost.add(f"task.{name}")
    request = task.request
    request_changes: dict[str, Any] = {}
    # OpenDC has no nodes: cpu_count is every core the task asks for, mem_capacity all its
    # memory (core.shapes). The node count is what is lost; cores and memory carry the
    # totals, so they count as changed only for what they cannot hold themselves.
    cores, memory = request.cores, request.memory_mb
    if type(request.nodes) is int and type(cores) in (int, float) and (
            memory is None or type(memory) in (int, float)):
        cores, memory = one_node(request.nodes, cores, memory)
    normal_cores = _whole_cpus(cores)
    if request.nodes != 1:
        request_changes["nodes"] = 1
        if not only_resplit(request.placement, request.nodes, request.cores, normal_cores):
            lost.add("task.request.nodes")  # (cores anywhere: only the total means something)
    if not _same(request.cores, normal_cores):
        request_changes["cores"] = normal_cores
    if not _same(request.cores, _whole_cpus(request.cores)):
        lost.add("task.request.cores")
    normal_memory = _held_memory(memory)
    if not _same(request.memory_mb, normal_memory):
        request_changes["memory_mb"] = normal_memory
    if not _same(request.memory_mb, _held_memory(request.memory_mb)):
        lost.add("task.request.memory_mb")
    gpus = request.gpus
    if type(gpus) is not int or not 0 <= gpus < _INT32:
        request_changes["gpus"] = 0
        lost.add("task.request.gpus")
    if request_changes:
        changes["request"] = replace(request, **request_changes)
    runtime_ms = round(normal_runtime * 1000)
    extras = _normal_extras(task.extras, float(changes.get("request", request).cores),
                            runtime_ms)
    if extras != task.extras:
        changes["extras"] = extras
        lost.add("task.extras")
    return replace(task, **changes) if changes else task


def _whole_cpus(cores: Any) -> float:
    """cpu_count: a whole number of cores (rounded up) that fits INT32."""
    return (float(min(math.ceil(cores), _INT32 - 1))
            if isinstance(cores, int | float) and not isinstance(cores, bool)
            and math.isfinite(cores) and cores >= 0 else 1.0)


def _held_memory(memory: Any) -> float | None:
    """mem_capacity: memory to 1/1000 MB; ``None`` (0, none asked for) where it is not a
    positive amount that holds."""
    if isinstance(memory, int | float) and not isinstance(memory, bool) \
            and math.isfinite(memory) and memory > 0:
        thousandths = round(memory * MEMORY_FACTOR)
        return thousandths / MEMORY_FACTOR if 0 < thousandths < _EXACT else None
    return None


def _same(value: Any, normal: Any) -> bool:
    return value is normal or (type(value) is type(normal) and value == normal)


def _normal_extras(extras: dict[str, Any], cores: float, runtime_ms: int) -> dict[str, Any]:
    """The task's extras with its own keys as OpenDC's columns carry them; other formats'
    keys and plain keys stay (restricting decides about them)."""
    if not any(key.startswith(OWN) for key in extras):
        return extras
    kept: dict[str, Any] = {}
    capacity = extras.get(CPU_CAPACITY)
    if not _amount(capacity):
        capacity = cores * MHZ_PER_CORE
    own_values = {
        NAME: lambda value: type(value) is str,
        CPU_CAPACITY: lambda value: _amount(value) and value != cores * MHZ_PER_CORE,
        GPU_CAPACITY: _amount,
        DEFERRABLE: lambda value: value is True,
        PROFILE: lambda value: _profile(value) and value != [[runtime_ms, capacity]],
    }
    for key, value in extras.items():
        keeps = own_values.get(key)
        if not key.startswith(OWN) or (keeps is not None and keeps(value)):
            kept[key] = value
    return kept


def _amount(value: Any) -> bool:
    return (type(value) in (int, float) and math.isfinite(value) and value >= 0
            and abs(value) <= _EXACT)


def _profile_arrays(value: list[list[Any]]) -> tuple[Any, Any, Any]:
    """A profile's durations, CPU usages and GPU usages (NaN: none) as arrays."""
    import numpy as np

    spans = np.array([part[0] for part in value], dtype=np.int64)
    usage = np.array([part[1] for part in value], dtype=np.float64)
    gpu = np.array([part[2] if len(part) == 3 else math.nan for part in value],
                   dtype=np.float64)
    return spans, usage, gpu


def _profile(value: Any) -> bool:
    """A list of ``[duration_ms, cpu_usage]`` or ``[duration_ms, cpu_usage, gpu_usage]``
    with whole non-negative durations and usages; empty for a task without fragments."""
    return type(value) is list and all(
        type(part) is list and len(part) in (2, 3) and type(part[0]) is int
        and 0 <= part[0] < 2 ** 63 and all(_amount(usage) for usage in part[1:])
        for part in value)


# --------------------------------------------------------------------------- write


def write(document: Document) -> WriteResult:
    """The two members of ``normal_form(document)`` as one tar archive (an empty workload
    when there is none)."""
    from dcx.core.members import pack

    workload = normal_form(document).workload or Workload()
    origin = origin_ms(workload.time_origin) or 0
    columns = columns_of(workload) or WorkloadColumns.from_jobs(
        tuple(_held_only(job) for job in workload.jobs))
    if columns is None or (len(columns.ids) and columns.ids.dtype.kind != "i"):
        return WriteResult(b"", (error("internal error: the normal form has a value no "
                                       "OpenDC column holds", "opendc-workload.unwritable"),))
    tasks, fragments = _tables(columns, origin, workload.time_origin)
    return WriteResult(pack({TASKS: _parquet(tasks), FRAGMENTS: _parquet(fragments)}, MEMBERS))


def part_normal_form(document: Document, time_origin: str | None
                     ) -> tuple[Document, frozenset[str]]:
    """The normal form of a part of a workload (a chunk of a trace converted a part at a
    time) whose times count from ``time_origin`` (the whole workload's, in normal form), and
    what it loses."""
    workload = document.workload
    if workload is not None and workload.time_origin != time_origin:
        document = replace(document, workload=replace(workload, time_origin=time_origin))
    return _normalized(document)


def write_part(normal: Document) -> tuple[Any, Any] | str:
    """The rows ``write`` gives the tasks and the fragments of ``normal`` (a part's
    ``part_normal_form``, its dependencies on tasks of other parts put back) as two tables,
    the tasks' ``children`` empty: a task's children may be in any part, so whoever joins
    the parts fills them in (``children``); or why they cannot be written."""
    import numpy as np

    workload = normal.workload or Workload()
    columns = columns_of(workload) or WorkloadColumns.from_jobs(
        tuple(_held_only(job) for job in workload.jobs))
    if columns is None or (len(columns.ids) and columns.ids.dtype.kind != "i") or (
            len(columns.dependency_ids) and columns.dependency_ids.dtype.kind != "i"):
        return "the normal form has a value no OpenDC column holds"
    ids = columns.ids.astype(np.int32)
    arrays, duration, capacity = _task_arrays(columns, origin_ms(workload.time_origin) or 0,
                                              ids)
    arrays["children"] = list_column(np.zeros(len(ids) + 1, dtype=np.int64),
                                     np.zeros(0, dtype=np.int32))
    tasks = _table(arrays, tasks_schema(workload.time_origin))
    return tasks, _fragments(columns, ids, duration, capacity)


def _held_only(job: Job) -> Job:
    """A job with only what this format holds (writers leave the rest out)."""
    from dcx.core.model import ResourceRequest, StartMode

    tasks = tuple(replace(task, request=ResourceRequest(
        nodes=1, cores=task.request.cores, memory_mb=task.request.memory_mb,
        gpus=task.request.gpus), start_mode=StartMode.ANY, start_time_s=None,
        preemptible=None, image=None, image_size_mb=None, user=None, group=None,
        requested_time_s=None, extras={key: value for key, value in task.extras.items()
                                       if key in OWN_KEYS}) for task in job.tasks)
    return replace(job, tasks=tasks, extras={}, name=None, user=None)


def _parquet(table: Any) -> bytes:
    import io

    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink, compression="snappy")
    return sink.getvalue()


def _tables(columns: WorkloadColumns, origin: int, time_origin: str | None) -> tuple[Any, Any]:
    import numpy as np

    ids = columns.ids.astype(np.int32)
    child_offsets, child_ids = children(ids, columns.dependency_offsets,
                                        columns.dependency_ids)
    arrays, duration, capacity = _task_arrays(columns, origin, ids)
    arrays["children"] = list_column(child_offsets, child_ids)
    tasks = _table(arrays, tasks_schema(time_origin))
    return tasks, _fragments(columns, ids, duration, capacity)


TASK_COLUMNS = ("id", "name", "submission_time", "duration", "cpu_count", "cpu_capacity",
                "mem_capacity", "gpu_count", "gpu_capacity", "parents", "children",
                "deferrable", "deadline")
"""tasks.parquet's columns, in the order dcx writes them."""


def tasks_schema(time_origin: str | None) -> Any:
    """The Arrow schema of every tasks.parquet dcx writes: the columns' types, the required
    ones not nullable, the time origin in the key-value metadata."""
    import pyarrow as pa

    ids = pa.list_(pa.int32())
    types = {"id": pa.int32(), "name": pa.string(),
             "submission_time": pa.timestamp("ms", tz="UTC"), "duration": pa.int64(),
             "cpu_count": pa.int32(), "cpu_capacity": pa.float64(),
             "mem_capacity": pa.int64(), "gpu_count": pa.int32(),
             "gpu_capacity": pa.float64(), "parents": ids, "children": ids,
             "deferrable": pa.bool_(), "deadline": pa.int64()}
    return pa.schema([pa.field(column, types[column], nullable=column not in REQUIRED[TASKS])
                      for column in TASK_COLUMNS],
                     metadata={TIME_ORIGIN_KEY: (time_origin or "").encode()})


def fragments_schema(gpu: bool) -> Any:
    """The Arrow schema of fragments.parquet, with ``gpu_usage`` when some fragment has one."""
    import pyarrow as pa

    columns = [pa.field("id", pa.int32(), nullable=False),
               pa.field("duration", pa.int64(), nullable=False),
               pa.field("cpu_usage", pa.float64(), nullable=False)]
    if gpu:
        columns.append(pa.field("gpu_usage", pa.float64()))
    return pa.schema(columns)


def children(ids: Any, offsets: Any, dependency_ids: Any) -> tuple[Any, Any]:
    """The inverse of the tasks' dependency lists (``offsets`` and ``dependency_ids``, each
    naming a task of ``ids``): each task's children as offsets (``len(ids) + 1``) and the
    children's ids, a task's in row order."""
    import numpy as np

    count = len(ids)
    if not len(dependency_ids):
        return np.zeros(count + 1, dtype=np.int64), np.zeros(0, dtype=ids.dtype)
    order = np.argsort(ids, kind="stable")
    parent_rows = order[np.searchsorted(ids[order], dependency_ids)]
    child_ids = np.repeat(ids, np.diff(offsets))
    by_parent = np.argsort(parent_rows, kind="stable")
    child_offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent_rows, minlength=count)[:count], out=child_offsets[1:])
    return child_offsets, child_ids[by_parent]


def list_column(offsets: Any, values: Any) -> Any:
    """A ``list<int32>`` column (``parents``, ``children``) from offsets and values."""
    import numpy as np
    import pyarrow as pa

    return pa.ListArray.from_arrays(pa.array(np.asarray(offsets).astype(np.int32)),
                                    pa.array(np.asarray(values).astype(np.int32), pa.int32()))


def _table(arrays: dict[str, Any], schema: Any) -> Any:
    import pyarrow as pa

    return pa.Table.from_arrays([arrays[column] for column in schema.names], schema=schema)


def _task_arrays(columns: WorkloadColumns, origin: int, ids: Any
                 ) -> tuple[dict[str, Any], Any, Any]:
    """Every tasks.parquet column but ``children``, and the tasks' durations (ms) and CPU
    capacities (what their one fragment is when they have no profile)."""
    import numpy as np
    import pyarrow as pa

    count = len(columns)
    cores = columns.cores.astype(np.int32)
    duration = np.round(columns.runtime_s * 1000).astype(np.int64)
    capacity = cores * MHZ_PER_CORE
    extras = columns.extras
    if CPU_CAPACITY in extras:
        given = extras[CPU_CAPACITY]
        capacity = np.where(given.present, given.values, capacity)
    memory = np.nan_to_num(columns.memory_mb, nan=0.0)
    deadline = np.where(np.isnan(columns.deadline_s), -1,
                        np.round(np.nan_to_num(columns.deadline_s) * 1000) + origin)
    gpu_capacity = extras.get(GPU_CAPACITY)
    deferrable = extras.get(DEFERRABLE)
    name = extras.get(NAME)
    arrays = {
        "id": pa.array(ids, pa.int32()),
        "name": (_texts(name.texts) if name is not None and name.texts is not None
                 else pa.nulls(count, pa.string())),
        "submission_time": pa.array(np.round(columns.submit_time_s * 1000).astype(np.int64)
                                    + origin, pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        "duration": pa.array(duration, pa.int64()),
        "cpu_count": pa.array(cores, pa.int32()),
        "cpu_capacity": pa.array(capacity.astype(np.float64), pa.float64()),
        "mem_capacity": pa.array(np.round(memory * MEMORY_FACTOR).astype(np.int64),
                                 pa.int64()),
        "gpu_count": pa.array(columns.gpus.astype(np.int32), pa.int32()),
        "gpu_capacity": (pa.array(gpu_capacity.values.astype(np.float64),
                                  mask=~gpu_capacity.present)
                         if gpu_capacity is not None else pa.nulls(count, pa.float64())),
        "parents": list_column(columns.dependency_offsets, columns.dependency_ids),
        "deferrable": pa.array(deferrable.present if deferrable is not None
                               else np.zeros(count, dtype=bool), pa.bool_()),
        "deadline": pa.array(deadline.astype(np.int64), pa.int64()),
    }
    return arrays, duration, capacity


def _texts(strings: Strings) -> Any:
    import numpy as np
    import pyarrow as pa

    dictionary = pa.array(list(strings.values), pa.string())
    indices = pa.array(np.maximum(strings.codes, 0).astype(np.int32), mask=strings.codes < 0)
    return pa.DictionaryArray.from_arrays(indices, dictionary).cast(pa.string())


def _fragments(columns: WorkloadColumns, ids: Any, duration: Any, capacity: Any) -> Any:
    """One fragment per task (its runtime at its capacity), or its kept profile."""
    import numpy as np
    import pyarrow as pa

    profile = columns.extras.get(PROFILE)
    sizes = np.ones(len(ids), dtype=np.int64)
    codes = np.full(len(ids), -1, dtype=np.int64)
    if profile is not None and profile.texts is not None:
        codes[profile.present] = profile.texts.codes[profile.present]
    parsed = [_profile_arrays(value) for value in _parsed_profiles(profile.texts)] \
        if profile is not None and profile.texts is not None else []
    if parsed:
        lengths = np.array([len(spans_of) for spans_of, _, _ in parsed], dtype=np.int64)
        sizes = np.where(codes >= 0, lengths[np.maximum(codes, 0)], 1)
    fragment_ids = np.repeat(ids, sizes)
    spans = np.repeat(duration, sizes)
    usage = np.repeat(capacity.astype(np.float64), sizes)
    gpu = np.full(len(fragment_ids), math.nan)
    profiled = np.flatnonzero(codes >= 0)
    if len(profiled):
        # each row's fragments gathered from its distinct profile, a batch of rows at once
        flat = [np.concatenate([arrays[kind] for arrays in parsed]) for kind in range(3)]
        code_starts = np.cumsum(lengths) - lengths
        starts = np.cumsum(sizes) - sizes
        for batch in _batches(sizes[profiled]):
            rows = profiled[batch]
            count = sizes[rows]
            offsets = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
            into = np.repeat(starts[rows], count) + offsets
            source = np.repeat(code_starts[codes[rows]], count) + offsets
            spans[into] = flat[0][source]
            usage[into] = flat[1][source]
            gpu[into] = flat[2][source]
    arrays = {"id": pa.array(fragment_ids, pa.int32()), "duration": pa.array(spans, pa.int64()),
              "cpu_usage": pa.array(usage, pa.float64())}
    if not np.all(np.isnan(gpu)):
        arrays["gpu_usage"] = pa.array(gpu, mask=np.isnan(gpu))
    return _table(arrays, fragments_schema("gpu_usage" in arrays))
