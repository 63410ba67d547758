"""Parquet's reader, normal form and writer: the format's reference text, sniffer and
declaration are the package's (``dcx.formats.parquet``), which imports this module on first
use."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from typing import Any

from dcx.core.columns import (
    FLOAT_EXACT,
    PLACEMENTS,
    RECORDED_FLOATS,
    RECORDED_TEXTS,
    STATUSES,
    ExtraColumn,
    JobRows,
    Strings,
    WorkloadColumns,
    all_distinct,
    all_found,
    columns_of,
    reads_back_from_json,
)
from dcx.core.diagnostics import Diagnostic, ReadResult, WriteResult, error
from dcx.core.limits import LIMITS
from dcx.core.model import Document, Id, Job, Task, Workload
from dcx.formats.parquet import MAGIC, SCHEMA

METADATA_KEY = b"dcx:workload"
EXTRAS_PREFIX = "extras."
JSON_EXTRAS_PREFIX = "extras_json."
METADATA_FIELDS = {"name": str, "description": str, "time_origin": str, "attributes": dict,
                   "extras": dict}

_REQUIRED = ("job_id", "task_id", "submit_time_s", "nodes", "cores", "gpus", "dependencies")
_NUMBERS = ("submit_time_s", "runtime_s", "requested_time_s", "cores", "memory_mb",
            "deadline_s")
_INT64 = 2 ** 63


# --------------------------------------------------------------------------- read


def read(data: bytes) -> ReadResult:
    if len(data) > LIMITS.max_input_bytes:
        return ReadResult(None, (error(f"file is {len(data):,} bytes; the limit is "
                                       f"{LIMITS.max_input_bytes:,}", "input.too-large"),))
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not data.startswith(MAGIC) or not data.endswith(MAGIC):
        return ReadResult(None, (not_parquet_error(),))
    try:
        table = pq.read_table(pa.BufferReader(data), read_dictionary=DICTIONARY_COLUMNS)
        table.schema.names  # noqa: B018 (a damaged name that is not UTF-8 fails here)
    except (pa.ArrowException, OSError, ValueError) as exc:  # a damaged file is bad input
        return ReadResult(None, (unreadable_error(exc),))
    problems = _schema_problems(table.schema)
    if problems:
        return ReadResult(None, tuple(problems))
    header, problems = _metadata(table.schema.metadata or {})
    if header is None:
        return ReadResult(None, tuple(problems))
    columns, problems = _columns(table)
    if columns is None:
        return ReadResult(None, tuple(problems))
    workload = Workload(jobs=JobRows(columns), **header)
    return ReadResult(Document(workload=workload), ())


DICTIONARY_COLUMNS = ("job_name", "job_user", "user", "group", "placement", "os", "arch",
                      "status", "application", "queue", "partition")
"""Text columns read as Arrow dictionaries (``read_dictionary``): the file stores them so,
and the reader wants their distinct values (``Strings``), not a text per row."""


def parquet_file(source: Any) -> Any:
    """``pyarrow.parquet.ParquetFile`` of ``source`` that reads the ``DICTIONARY_COLUMNS``
    it has as dictionaries."""
    import pyarrow.parquet as pq

    found = pq.ParquetFile(source)
    names = [name for name in DICTIONARY_COLUMNS if name in found.schema_arrow.names]
    return pq.ParquetFile(source, read_dictionary=names) if names else found


def arrow_type_name(arrow_type: Any) -> str:
    """``int64``, ``double``, ``string``, ``list<int64>``: how the schema file names a type
    (a text column read as a dictionary of texts is ``string``)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type) and (pa.types.is_string(arrow_type.value_type)
                                               or pa.types.is_large_string(
                                                   arrow_type.value_type)):
        return "string"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return f"list<{arrow_type_name(arrow_type.value_type)}>"
    if pa.types.is_large_string(arrow_type):
        return "string"
    return str(arrow_type)


def _schema_problems(schema: Any) -> list[Diagnostic]:
    from dcx.parsing.schemas import schema_diagnostics

    described = {field.name: arrow_type_name(field.type) for field in schema}
    problems = schema_diagnostics(SCHEMA, described, base_pointer="/columns")
    if problems:
        return problems
    if described["dependencies"] != f"list<{described['task_id']}>":
        return [error(f"dependencies are {described['dependencies']} but task ids are "
                      f"{described['task_id']}", "parquet.dependency-type",
                      pointer="/columns/dependencies")]
    return []


def _metadata(metadata: dict[bytes, bytes]) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    from dcx.parsing.jsonio import load_json

    raw = metadata.get(METADATA_KEY)
    if raw is None:
        return {}, []
    decoded, problems = load_json(raw)
    if decoded is None:
        return None, [error(f"the {METADATA_KEY.decode()} metadata is not JSON: "
                            f"{problems[0].message}", "parquet.metadata")]
    value = decoded.value
    if not isinstance(value, dict):
        return None, [error(f"the {METADATA_KEY.decode()} metadata is not a JSON object",
                            "parquet.metadata")]
    header: dict[str, Any] = {}
    for key, item in value.items():
        expected = METADATA_FIELDS.get(key)
        if expected is None or not ((item is None and expected is str) or
                                    isinstance(item, expected)):
            return None, [error(f"the {METADATA_KEY.decode()} metadata has {key!r} = "
                                f"{item!r}; it holds name, description and time_origin "
                                "(text) and attributes and extras (objects)",
                                "parquet.metadata", pointer=f"/metadata/{key}")]
        header[key] = item
    return header, []


def _columns(table: Any, whole: bool = True) -> tuple[WorkloadColumns | None, list[Diagnostic]]:
    """The table's columns, or what ``read`` reports of them. Not ``whole`` (one row group of
    a file): a dependency may name a task of another row group, which is not checked here."""
    import numpy as np
    import pyarrow as pa

    table = table.combine_chunks()
    count = table.num_rows
    problems = _null_and_nan_problems(table)
    if problems:
        return None, problems
    ids = _ids(table.column("task_id"))
    job_keys = _ids(table.column("job_id"))
    dependencies = table.column("dependencies").chunk(0) if count else pa.array(
        [], table.column("dependencies").type)
    offsets = dependencies.offsets.to_numpy().astype(np.int64)
    offsets = offsets - offsets[0] if len(offsets) else np.zeros(1, dtype=np.int64)
    dependency_ids = _ids(dependencies.flatten())
    starts = np.flatnonzero(np.concatenate(([True], job_keys[1:] != job_keys[:-1]))) \
        if count else np.zeros(0, dtype=np.int64)
    job_offsets = np.append(starts, count).astype(np.int64)
    names = _strings(table.column("job_name"))
    users = _strings(table.column("job_user"))
    problems = _job_problems(job_keys, starts, job_offsets, names, users)
    if whole:
        problems += _dependency_problems(ids, offsets, dependency_ids)
    if problems:
        return None, problems
    extras, bad = _extra_columns(table, count)
    if bad is not None:
        return None, [bad]
    requirements, problems = _requirements(table)
    if problems:
        return None, problems
    recorded, problems = _recorded(table)
    if problems:
        return None, problems
    return WorkloadColumns(
        ids=ids,
        submit_time_s=_floats(table.column("submit_time_s")),
        runtime_s=_floats(table.column("runtime_s")),
        requested_time_s=_floats(table.column("requested_time_s")),
        nodes=table.column("nodes").to_numpy(),
        cores=_floats(table.column("cores")),
        memory_mb=_floats(table.column("memory_mb")),
        gpus=table.column("gpus").to_numpy(),
        deadline_s=_floats(table.column("deadline_s")),
        user=_strings(table.column("user")),
        group=_strings(table.column("group")),
        dependency_offsets=offsets,
        dependency_ids=dependency_ids,
        extras=extras,
        job_ids=job_keys[starts],
        job_offsets=job_offsets,
        job_names=_per_job(names, starts),
        job_users=_per_job(users, starts),
        **requirements,
        **recorded,
    ), []


def _null_and_nan_problems(table: Any) -> list[Diagnostic]:
    """The nulls in the required columns (a dependency's too) and the NaNs in the number
    columns that ``read`` reports."""
    import pyarrow as pa
    import pyarrow.compute as pc

    problems: list[Diagnostic] = []
    for name in _REQUIRED:
        column = table.column(name)
        nulls = column.null_count
        if name == "dependencies" and not nulls:
            nulls = pc.list_flatten(column).null_count
        if nulls:
            row = _first(column.is_null() if name != "dependencies" or column.null_count
                         else pc.list_parent_indices(column).filter(
                             pc.list_flatten(column).is_null()))
            problems.append(null_error(name, nulls, row))
    for name in (*_NUMBERS, *(n for n in table.column_names
                              if (n.startswith(EXTRAS_PREFIX) or n in RECORDED_FLOATS)
                              and pa.types.is_floating(table.column(n).type))):
        column = table.column(name)
        nan = pc.is_nan(column)
        if pc.any(nan).as_py():
            problems.append(nan_error(name, _first(nan)))
    return problems


def _extra_columns(table: Any, count: int
                   ) -> tuple[dict[str, ExtraColumn], Diagnostic | None]:
    """The ``extras.`` columns by key, or the first ``extras_json.`` value that is not
    JSON."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    extras: dict[str, ExtraColumn] = {}
    for name in table.column_names:
        if name.startswith(JSON_EXTRAS_PREFIX):
            texts = _strings(table.column(name))
            bad = next((text for text in texts.values if not _json_text(text)), None)
            if bad is not None:
                return {}, extras_json_error(name, bad)
            extras[name[len(JSON_EXTRAS_PREFIX):]] = ExtraColumn.of_texts(texts, json=True)
        elif name.startswith(EXTRAS_PREFIX):
            column = table.column(name)
            if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                extras[name[len(EXTRAS_PREFIX):]] = ExtraColumn.of_texts(_strings(column))
                continue
            present = column.is_valid().to_numpy(zero_copy_only=False)
            values = pc.fill_null(column, 0).to_numpy(zero_copy_only=False)
            floats = pa.types.is_floating(column.type)
            extras[name[len(EXTRAS_PREFIX):]] = ExtraColumn(
                values, present, np.zeros(count, dtype=bool) if floats else None)
    return extras, None


def _recorded(table: Any) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The recorded columns (``status``, ``RECORDED_FLOATS``, ``RECORDED_TEXTS``) as
    ``WorkloadColumns`` fields, each left out when absent or null on every row."""
    import numpy as np

    found: dict[str, Any] = {}
    names = table.column_names
    for name in RECORDED_FLOATS:
        if name in names and table.column(name).null_count < table.num_rows:
            found[name] = _floats(table.column(name))
    for name in RECORDED_TEXTS:
        if name in names and table.column(name).null_count < table.num_rows:
            found[name] = _strings(table.column(name))
    if "status" in names and table.column("status").null_count < table.num_rows:
        strings = _strings(table.column("status"))
        words = [status.value for status in STATUSES]
        unknown = [code for code, text in enumerate(strings.values) if text not in words]
        if unknown:
            row = int(np.argmax(np.isin(strings.codes, unknown)))
            return found, [error(f"status {strings.values[unknown[0]]!r} is none of "
                                 f"{', '.join(words)}", "parquet.status",
                                 pointer=f"/rows/{row}/status")]
        remap = np.array([words.index(text) for text in strings.values] + [0], dtype=np.int8)
        codes = remap[strings.codes]  # (code -1, null, takes the appended 0: unknown)
        if bool(codes.any()):
            found["status"] = codes
    return found, []


def _requirements(table: Any) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The optional ``os``, ``arch`` and ``features`` columns as ``WorkloadColumns``
    fields (left out when absent or when no task asks anything there)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    found: dict[str, Any] = {}
    for name in ("os", "arch"):
        if name in table.column_names and table.column(name).null_count < table.num_rows:
            found[name] = _strings(table.column(name))
    if "placement" in table.column_names:
        codes, problem = _placement_codes(table.column("placement"))
        if problem is not None:
            return found, [problem]
        if codes is not None:
            found["placement"] = codes
    if "features" not in table.column_names:
        return found, []
    column = table.column("features")
    names = pc.list_flatten(column)
    if names.null_count:
        row = _first(pc.list_parent_indices(column).filter(names.is_null()))
        return found, [null_feature_error(row)]
    if len(names):
        lists = column.chunk(0) if column.num_chunks else pa.array([], column.type)
        offsets = lists.offsets.to_numpy().astype(np.int64)
        sizes = np.where(lists.is_null().to_numpy(zero_copy_only=False), 0, np.diff(offsets))
        found["feature_offsets"] = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        found["feature_names"] = _strings(names)
    return found, []


def _placement_codes(column: Any) -> tuple[Any, Diagnostic | None]:
    """``WorkloadColumns.placement`` of the ``placement`` column (``None``: every task asks
    for whole nodes), or the diagnostic of its first value that is no placement."""
    import numpy as np

    strings = _strings(column)
    words = [placement.value for placement in PLACEMENTS]
    unknown = [code for code, text in enumerate(strings.values) if text not in words]
    if unknown:
        row = int(np.argmax(np.isin(strings.codes, unknown)))
        return None, error(f"placement {strings.values[unknown[0]]!r} is neither "
                           "'nodes' nor 'cores'", "parquet.placement",
                           pointer=f"/rows/{row}/placement")
    remap = np.array([words.index(text) for text in strings.values] + [0], dtype=np.int8)
    codes = remap[strings.codes]  # (code -1, null, takes the appended 0: whole nodes)
    return (codes if bool(codes.any()) else None), None


def _json_text(text: str) -> bool:
    from dcx.parsing.jsonio import load_json

    decoded, _ = load_json(text.encode())
    return decoded is not None


# The diagnostics of the file and row checks, worded once: the whole-file read and the row-group
# read (``stream.py``) both report through these.


def not_parquet_error() -> Diagnostic:
    return error("not a Parquet file (it does not begin and end with PAR1)",
                 "parquet.unreadable", line=1, column=1)


def unreadable_error(exc: Exception) -> Diagnostic:
    # Arrow names the buffer it was given ("Could not open Parquet input source '<Buffer>'")
    # when the whole file is read from memory and not when a file is opened for its row
    # groups; a damaged footer's message may end in the stray byte it met
    reason = re.sub(r"^Could not open Parquet input source '[^']*': ", "", str(exc)).strip()
    reason = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in reason)
    return error(f"cannot read the Parquet file: {reason}", "parquet.unreadable")


def null_error(name: str, nulls: int, row: int) -> Diagnostic:
    return error(f"{name} has {nulls:,} null value(s); it needs one on every row",
                 "parquet.null", pointer=f"/rows/{row}/{name}")


def nan_error(name: str, row: int) -> Diagnostic:
    return error(f"{name} has NaN; a value or null is expected", "parquet.not-a-number",
                 pointer=f"/rows/{row}/{name}")


def split_job_error(key: Any, row: int) -> Diagnostic:
    return error(f"the rows of job {key!r} are not consecutive", "parquet.split-job",
                 pointer=f"/rows/{row}/job_id")


def job_fields_error(name: str, row: int) -> Diagnostic:
    return error(f"{name} differs between rows of one job", "parquet.job-fields",
                 pointer=f"/rows/{row}/{name}")


def extras_json_error(name: str, text: str) -> Diagnostic:
    return error(f"{name} has {text[:60]!r}, which is not JSON", "parquet.extras-json",
                 pointer=f"/columns/{name}")


def null_feature_error(row: int) -> Diagnostic:
    return error("features has a null feature name", "parquet.null",
                 pointer=f"/rows/{row}/features")


def _first(mask: Any) -> int:
    """The first true row of a boolean mask (a null is not true: ``is_nan`` of a nullable
    column), or the first value of an index array."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_boolean(mask.type):
        mask = pc.fill_null(mask, False)
    flags = np.asarray(mask.to_numpy(zero_copy_only=False))
    if flags.dtype != bool:
        return int(flags[0]) if len(flags) else 0
    return int(np.flatnonzero(flags)[0])


def _ids(column: Any) -> Any:
    import numpy as np
    import pyarrow as pa

    values = column.to_numpy(zero_copy_only=False)
    if pa.types.is_integer(column.type):
        return values.astype(np.int64, copy=False)
    array = np.empty(len(values), dtype=object)
    array[:] = list(values)
    return array


def _floats(column: Any) -> Any:
    import numpy as np

    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


def _strings(column: Any) -> Strings:
    from dcx.core.columns import strings_from_arrow

    return strings_from_arrow(column)


def _per_job(strings: Strings, starts: Any) -> Strings:
    return Strings(strings.codes[starts], strings.values)


def _job_problems(job_keys: Any, starts: Any, job_offsets: Any, names: Strings,
                  users: Strings) -> list[Diagnostic]:
    import numpy as np

    problems: list[Diagnostic] = []
    keys = job_keys[starts]
    if not all_distinct(keys):
        seen: set[Any] = set()
        for index, key in enumerate(keys.tolist()):
            if key in seen:
                problems.append(split_job_error(key, int(starts[index])))
                break
            seen.add(key)
    sizes = np.diff(job_offsets)
    for name, strings in (("job_name", names), ("job_user", users)):
        first = np.repeat(strings.codes[starts], sizes)
        differ = np.flatnonzero(first != strings.codes)
        if len(differ):
            problems.append(job_fields_error(name, int(differ[0])))
    return problems


def _dependency_problems(ids: Any, offsets: Any, dependency_ids: Any) -> list[Diagnostic]:
    from dcx.parsing.traces import column_dependency_diagnostics

    def locate(row: int, dependency: int | None) -> dict[str, Any]:
        where = "task_id" if dependency is None else f"dependencies/{dependency}"
        return {"pointer": f"/rows/{row}/{where}"}

    return column_dependency_diagnostics(ids, offsets, dependency_ids, locate, "parquet")


# --------------------------------------------------------------------------- normal form


def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    workload = document.workload
    if workload is None:
        return document, frozenset()
    lost: set[str] = set()
    attributes = _json_members(workload.attributes, "workload.attributes", lost)
    extras = _json_members(workload.extras, "workload.extras", lost)
    jobs = workload.jobs
    columns = columns_of(workload)
    if columns is None or not _columns_in_normal_form(columns):
        jobs = _normal_jobs(tuple(jobs), lost)
    if (jobs is workload.jobs and attributes is workload.attributes
            and extras is workload.extras):
        return document, frozenset(lost)
    normal = replace(workload, jobs=jobs, attributes=attributes, extras=extras)
    return replace(document, workload=normal), frozenset(lost)


def _json_members(members: dict[str, Any], path: str, lost: set[str]) -> dict[str, Any]:
    kept = {key: value for key, value in members.items() if _reads_back(value)}
    if len(kept) == len(members):
        return members
    lost.add(path)
    return kept


def _reads_back(value: Any) -> bool:
    try:
        return bool(json.loads(json.dumps(value, allow_nan=False)) == value)
    except (TypeError, ValueError):
        return False


def _columns_in_normal_form(columns: WorkloadColumns) -> bool:
    """Whether columns read from a file (or built from a model) need no change: unique ids
    of one kind, dependencies inside the workload, unique job ids. (Columns hold no NaN.)"""

    for ids in (columns.ids, columns.job_ids):
        if ids.dtype.kind == "O" and not all(type(value) is str for value in ids.tolist()):
            return False
        if not all_distinct(ids):
            return False
    if columns.dependency_ids.dtype != columns.ids.dtype:
        return not len(columns.dependency_ids)
    known = set(columns.ids.tolist()) if columns.ids.dtype.kind == "O" else None
    if known is not None:
        return all(value in known for value in columns.dependency_ids.tolist())
    return all_found(columns.dependency_ids, columns.ids)


def _normal_jobs(jobs: tuple[Job, ...], lost: set[str]) -> tuple[Job, ...]:
    tasks = [task for job in jobs for task in job.tasks]
    task_ids = _numbering([task.id for task in tasks], lost, "task.id")
    job_ids = _numbering([job.id for job in jobs], lost, "job")
    dependency_ids: dict[Id, Id] = {}  # a dependency follows the first task of its id
    for task, number in zip(tasks, task_ids, strict=True):
        dependency_ids.setdefault(task.id, number)
    normal_jobs = []
    numbers = iter(task_ids)
    for job, job_id in zip(jobs, job_ids, strict=True):
        normal_tasks = tuple(_normal_task(task, next(numbers), dependency_ids, lost)
                             for task in job.tasks)
        if job_id is job.id and all(a is b for a, b in zip(normal_tasks, job.tasks,
                                                            strict=True)):
            normal_jobs.append(job)
        else:
            normal_jobs.append(replace(job, id=job_id, tasks=normal_tasks))
    return tuple(normal_jobs)


def _numbering(ids: list[Id], lost: set[str], path: str) -> list[Id]:
    """The written ids: the ids themselves when all are int64 integers or all text, and
    unique; otherwise 1..n in order."""
    ints = all(type(value) is int and -_INT64 <= value < _INT64 for value in ids)
    texts = all(type(value) is str for value in ids)
    if (ints or texts) and len(set(ids)) == len(ids):
        return ids
    lost.add(path)
    return list(range(1, len(ids) + 1))


def _normal_task(task: Task, new_id: Id, numbering: dict[Id, Id], lost: set[str]) -> Task:
    changes: dict[str, Any] = {}
    if new_id is not task.id:
        changes["id"] = new_id
    dependencies = tuple(numbering[d] for d in task.dependencies if d in numbering)
    if len(dependencies) != len(task.dependencies):
        lost.add("task.dependencies")
    if any(a is not b for a, b in zip(dependencies, task.dependencies, strict=False)) \
            or len(dependencies) != len(task.dependencies):
        changes["dependencies"] = dependencies
    submit = task.submit_time_s
    if not isinstance(submit, int | float) or isinstance(submit, bool) or math.isnan(submit):
        changes["submit_time_s"] = 0.0
        lost.add("task.submit_time_s")
    for name, path in (("runtime_s", "task.runtime_s"),
                       ("requested_time_s", "task.requested_time_s"),
                       ("deadline_s", "task.deadline_s")):
        value = getattr(task, name)
        if value is not None and _not_a_number(value):
            changes[name] = None
            lost.add(path)
    request = task.request
    request_changes: dict[str, Any] = {}
    if _not_a_number(request.cores):
        request_changes["cores"] = 1.0
        lost.add("task.request.cores")
    if request.memory_mb is not None and _not_a_number(request.memory_mb):
        request_changes["memory_mb"] = None
        lost.add("task.request.memory_mb")
    for name, default in (("nodes", 1), ("gpus", 0)):
        value = getattr(request, name)
        if type(value) is not int or not -_INT64 <= value < _INT64:
            request_changes[name] = default
            lost.add(f"task.request.{name}")
    if request_changes:
        changes["request"] = replace(request, **request_changes)
    extras = {key: value for key, value in task.extras.items()
              if _numeric_extra(value) or reads_back_from_json(value)}
    if len(extras) != len(task.extras):
        changes["extras"] = extras
        lost.add("task.extras")
    for name in ("user", "group", *RECORDED_TEXTS):
        if getattr(task, name) is not None and not isinstance(getattr(task, name), str):
            changes[name] = None
            lost.add(f"task.{name}")
    for name in RECORDED_FLOATS:
        value = getattr(task, name)
        if value is not None and _not_a_number(value):
            changes[name] = None
            lost.add(f"task.{name}")
    return replace(task, **changes) if changes else task


def _not_a_number(value: Any) -> bool:
    return not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value)


def _numeric_extra(value: Any) -> bool:
    if type(value) is int:
        return abs(value) <= FLOAT_EXACT
    return type(value) is float and not math.isnan(value)


def normal_form(document: Document) -> Document:
    """Ids of one kind and unique, dependencies inside the workload, no NaN, int64 counts,
    numeric extras, JSON workload attributes and extras (see the module docstring)."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    return _normalized(document)[1]


# --------------------------------------------------------------------------- write


def write(document: Document) -> WriteResult:
    """Parquet bytes for ``normal_form(document)`` (no rows when there is no workload)."""
    import io

    import pyarrow.parquet as pq

    workload = normal_form(document).workload or Workload()
    table = rows_of(workload)
    if table is None:
        return WriteResult(b"", (error("internal error: the normal form has a value no "
                                       "Parquet column holds", "parquet.unwritable"),))
    table = table.replace_schema_metadata(header_metadata(workload))
    sink = io.BytesIO()
    pq.write_table(table, sink, **writer_options(table.schema))
    return WriteResult(sink.getvalue())


def writer_options(schema: Any) -> dict[str, Any]:
    """How dcx writes Parquet: zstd, dictionary pages for text columns only, and integer
    columns delta-encoded (``DELTA_BINARY_PACKED``, a standard Parquet encoding): ids and
    counts written and read back in less time, and smaller, than plain or dictionary
    pages."""
    import pyarrow as pa

    texts = [field.name for field in schema
             if pa.types.is_string(field.type) or pa.types.is_large_string(field.type)]
    integers = [field.name for field in schema if pa.types.is_integer(field.type)]
    options: dict[str, Any] = {"compression": "zstd", "use_dictionary": texts}
    if integers:
        options["column_encoding"] = dict.fromkeys(integers, "DELTA_BINARY_PACKED")
    return options


def rows_of(workload: Workload) -> Any:
    """The Arrow table of a workload in normal form (``None``: a value no column holds),
    without metadata: ``write``'s rows, and a streamed conversion's row group."""
    import pyarrow as pa

    columns = columns_of(workload) or WorkloadColumns.from_jobs(
        tuple(_held_only(job) for job in workload.jobs))
    return None if columns is None else pa.Table.from_arrays(*_arrays(columns))


def header_metadata(workload: Workload) -> dict[bytes, bytes]:
    """The file's key-value metadata for a workload in normal form (``dcx:workload``)."""
    header = {key: value for key, value in (
        ("name", workload.name), ("description", workload.description),
        ("time_origin", workload.time_origin), ("attributes", workload.attributes),
        ("extras", workload.extras)) if value}
    return {METADATA_KEY: json.dumps(header, ensure_ascii=False).encode()}


def _held_only(job: Job) -> Job:
    """A job with only what Parquet holds (writers leave the rest out)."""
    from dcx.core.model import ResourceRequest, StartMode

    tasks = tuple(replace(task, request=ResourceRequest(
        nodes=task.request.nodes, cores=task.request.cores, memory_mb=task.request.memory_mb,
        gpus=task.request.gpus, os=task.request.os, arch=task.request.arch,
        features=task.request.features, placement=task.request.placement),
        start_mode=StartMode.ANY, start_time_s=None, preemptible=None, image=None,
        image_size_mb=None) for task in job.tasks)
    return replace(job, tasks=tasks, extras={})


def _arrays(columns: WorkloadColumns) -> tuple[list[Any], list[str]]:
    import numpy as np
    import pyarrow as pa

    sizes = np.diff(columns.job_offsets)
    one_each = len(sizes) == len(columns) and bool(np.all(sizes == 1))  # (SWF: no take)
    rows = np.arange(len(columns)) if one_each else np.repeat(np.arange(columns.job_count),
                                                                sizes)
    ids = _id_array(columns.ids)
    job_ids = _id_array(columns.job_ids)
    arrays: dict[str, Any] = {
        "job_id": job_ids if one_each else job_ids.take(pa.array(rows)),
        "job_name": _string_array(columns.job_names, rows),
        "job_user": _string_array(columns.job_users, rows),
        "task_id": ids,
        "submit_time_s": pa.array(np.ascontiguousarray(columns.submit_time_s, np.float64)),
        "runtime_s": _nullable(columns.runtime_s),
        "requested_time_s": _nullable(columns.requested_time_s),
        "nodes": pa.array(np.ascontiguousarray(columns.nodes, np.int64)),
        "cores": pa.array(np.ascontiguousarray(columns.cores, np.float64)),
        "memory_mb": _nullable(columns.memory_mb),
        "gpus": pa.array(np.ascontiguousarray(columns.gpus, np.int64)),
        "dependencies": pa.ListArray.from_arrays(
            pa.array(columns.dependency_offsets, pa.int64()).cast(pa.int32())
            if len(columns.dependency_ids) < 2 ** 31 else pa.array(columns.dependency_offsets),
            _id_array(columns.dependency_ids, ids.type)),
        "deadline_s": _nullable(columns.deadline_s),
        "user": _string_array(columns.user, None),
        "group": _string_array(columns.group, None),
    }
    arrays.update(_recorded_arrays(columns))
    if columns.placement is not None:
        import pyarrow.compute as pc

        # (a take of the words, not a dictionary cast: a third of the time on a million rows)
        arrays["placement"] = pc.take(pa.array([placement.value for placement in PLACEMENTS]),
                                      pa.array(columns.placement))
    for name, strings in (("os", columns.os), ("arch", columns.arch)):
        if strings is not None:
            arrays[name] = _string_array(strings, None)
    if columns.feature_offsets is not None and columns.feature_names is not None:
        arrays["features"] = pa.ListArray.from_arrays(
            pa.array(columns.feature_offsets, pa.int64()).cast(pa.int32())
            if len(columns.feature_names.codes) < 2 ** 31
            else pa.array(columns.feature_offsets),
            _string_array(columns.feature_names, None))
    for key, column in columns.extras.items():
        if column.texts is not None:
            prefix = JSON_EXTRAS_PREFIX if column.json else EXTRAS_PREFIX
            arrays[prefix + key] = _string_array(column.texts, None)
            continue
        if column.values.dtype.kind == "i" or (column.integral is not None and bool(
                np.all(column.integral[column.present]))
                and bool(np.all(np.abs(column.values[column.present]) <= FLOAT_EXACT))):
            values = pa.array(column.values.astype(np.int64), mask=~column.present)
        else:
            values = pa.array(column.values.astype(np.float64), mask=~column.present)
        arrays[EXTRAS_PREFIX + key] = values
    return list(arrays.values()), list(arrays)


def _recorded_arrays(columns: WorkloadColumns) -> dict[str, Any]:
    """The recorded columns, every one of them (all null where no task has a value), so
    that every file and every row group of a streamed one has the same columns."""
    import numpy as np
    import pyarrow as pa

    count = len(columns)
    arrays: dict[str, Any] = {}
    if columns.status is None:
        arrays["status"] = pa.nulls(count, pa.string())
    else:
        words = pa.array([None, *(status.value for status in STATUSES[1:])], pa.string())
        arrays["status"] = words.take(pa.array(columns.status.astype(np.int32)))
    for name in RECORDED_FLOATS:
        values = getattr(columns, name)
        arrays[name] = pa.nulls(count, pa.float64()) if values is None else _nullable(values)
    for name in RECORDED_TEXTS:
        texts = getattr(columns, name)
        arrays[name] = pa.nulls(count, pa.string()) if texts is None else _string_array(
            texts, None)
    return arrays


def _id_array(ids: Any, like: Any = None) -> Any:
    import pyarrow as pa

    if ids.dtype.kind == "O":
        return pa.array(ids.tolist(), pa.string())
    if like is not None and pa.types.is_string(like) and not len(ids):
        return pa.array([], pa.string())
    return pa.array(ids.astype("int64", copy=False), pa.int64())


def _string_array(strings: Strings, rows: Any) -> Any:
    import numpy as np
    import pyarrow as pa

    codes = strings.codes if rows is None else strings.codes[rows]
    dictionary = pa.array(list(strings.values), pa.string())
    indices = pa.array(np.maximum(codes, 0).astype(np.int32), mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, dictionary).cast(pa.string())


def _nullable(values: Any) -> Any:
    import numpy as np
    import pyarrow as pa

    values = np.ascontiguousarray(values, np.float64)
    return pa.array(values, mask=np.isnan(values))
