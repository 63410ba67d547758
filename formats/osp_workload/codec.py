"""osp-workload's reader, normal form and writer: the format's reference text, sniffer and
declaration are the package's (``dcx.formats.osp_workload``), which imports this module on
first use."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from dcx.core.columns import (
    ExtraColumn,
    JobRows,
    Strings,
    WorkloadColumns,
    all_distinct,
    columnar,
    columns_of,
)
from dcx.core.diagnostics import (
    Diagnostic,
    ReadResult,
    WriteResult,
    error,
    has_errors,
    warning,
)
from dcx.core.memo import last_result
from dcx.core.model import Document, Extras, Id, Job, ResourceRequest, Task, Workload
from dcx.core.shapes import one_node, one_node_columns, only_resplit, only_resplit_rows
from dcx.parsing.jsonio import load_json_object
from dcx.parsing.schemas import schema_diagnostics, schema_verdict, serialised_against
from dcx.parsing.traces import dependency_diagnostics, format_number, written_ids

SCHEMA = "osp-workload.schema.json"
PREFIX = "osp-workload:"
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""What times count from when a workload has no ``date_start``."""

_ROOT_MAPPED = frozenset({"name", "description", "date_start", "workflows"})
_JOB_MAPPED = frozenset({"id", "tasks", "application_name"})
_TASK_MAPPED = frozenset({"id", "ts_submit", "runtime", "depends_on", "enables", "core_count",
                          "memory_usage"})
_CHECKED_SIZES = ("disk_space_usage", "network_usage")

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*([KMGTP]?i?B)\s*")
_UNIT_MB = {"B": 2.0**-20, "KB": 2.0**-10, "MB": 1.0, "GB": 2.0**10, "TB": 2.0**20,
            "PB": 2.0**30}


def parse_size_mb(text: str) -> float | None:
    """MB (2**20 bytes) in a size string such as ``"10MB"``, ``"1.5 GiB"``; else ``None``."""
    match = _SIZE.fullmatch(text)
    if match is None:
        return None
    value = float(match.group(1)) * _UNIT_MB[match.group(2).replace("i", "")]
    return value if math.isfinite(value) else None


def format_size_mb(value: float) -> str:
    return f"{format_number(value)}MB"


def used_memory_text(per_core_mb: float, cores: float) -> str:
    """``memory_usage`` of a task that used ``per_core_mb`` per core on ``cores`` cores:
    the task's whole use (the model's used memory is an average per core)."""
    return format_size_mb(per_core_mb * cores)


def _used_memory(per_core_mb: float | None, cores: float) -> float | None:
    """What ``memory_usage`` written for ``per_core_mb`` per core reads back as (``None``
    where there is no amount to write: unknown, negative or not finite)."""
    if per_core_mb is None or not (per_core_mb >= 0 and math.isfinite(per_core_mb)):
        return None
    whole = per_core_mb * cores
    return whole / cores if math.isfinite(whole) else None


# --------------------------------------------------------------------------- read


class _Reader:
    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.aware: bool | None = None
        self.aware_pointer = ""

    def instant(self, text: Any, pointer: str) -> datetime | None:
        """A timestamp, with the time-zone rule applied; ``None`` (reported) when unusable."""
        if not isinstance(text, str):
            return None
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            self.diagnostics.append(error(f"{text!r} is not an ISO 8601 timestamp",
                                          "osp-workload.timestamp", pointer=pointer))
            return None
        aware = value.tzinfo is not None
        if self.aware is None:
            self.aware, self.aware_pointer = aware, pointer
        elif aware != self.aware:
            self.diagnostics.append(error(
                f"timestamp {text!r} {'has' if aware else 'has no'} time zone but the one at "
                f"{self.aware_pointer} {'has none' if aware else 'has one'}; they cannot be "
                "put on one time axis", "osp-workload.time-zone", pointer=pointer))
            return None
        return value


def read(data: bytes) -> ReadResult:
    decoded, problems = load_json_object(data, "a workload document", "osp-workload.root")
    if decoded is None:
        return ReadResult(None, tuple(problems))
    root = decoded.value
    locator = decoded.locator
    structural = schema_diagnostics(SCHEMA, root, locator)
    if structural:
        return ReadResult(None, tuple(structural))
    reader = _Reader()
    workload = _workload(root, reader)
    diagnostics = locator.place(reader.diagnostics)
    if workload is None or has_errors(diagnostics):
        return ReadResult(None, tuple(diagnostics))
    return ReadResult(Document(workload=workload), tuple(diagnostics))


def _workload(root: dict[str, Any], reader: _Reader) -> Workload | None:
    workflows: list[dict[str, Any]] = root.get("workflows", [])
    origin_text, origin = _origin(root, reader)
    columns = None if reader.diagnostics else _plain_columns(workflows, origin, reader.aware)
    jobs: Sequence[Job] = ()
    if columns is None:
        jobs = [_job(workflow, f"/workflows/{index}", index, origin, reader)
                for index, workflow in enumerate(workflows)]
        jobs = _link(jobs, workflows, reader)
    if has_errors(reader.diagnostics):
        return None
    workload = Workload(
        jobs=tuple(jobs),
        name=root.get("name"),
        description=root.get("description"),
        time_origin=origin_text,
        extras={key: value for key, value in root.items() if key not in _ROOT_MAPPED},
    )
    return workload if columns is None else columnar(workload, columns)


_PLAIN_WORKFLOW = frozenset({"id", "application_name", "tasks"})
_PLAIN_TASK = frozenset({"id", "ts_submit", "runtime", "core_count", "memory_usage",
                         "depends_on"})


def _plain_columns(workflows: list[dict[str, Any]], origin: datetime | None,
                   aware: bool | None) -> WorkloadColumns | None:
    """The jobs ``_job`` and ``_link`` build, as columns, when no check can say anything:
    workflows with ids, tasks with ids and timestamps of one kind (with a time zone or
    without, as ``aware``, the time origin's, says when it is known) and nothing but the
    members dcx reads into the model, sizes with a unit, no negative runtime, positive core
    counts, ids used once, dependencies on earlier tasks. A fast path that only accepts:
    anything else is read task by task."""
    import numpy as np

    if any(not _PLAIN_WORKFLOW.issuperset(workflow) or "id" not in workflow
           for workflow in workflows):
        return None
    tasks = [task for workflow in workflows for task in workflow.get("tasks", ())]
    if any(not _PLAIN_TASK.issuperset(task) or "id" not in task or "ts_submit" not in task
           for task in tasks):
        return None
    submit_of: dict[str, float] = {}
    for text in {task["ts_submit"] for task in tasks}:
        try:
            instant = datetime.fromisoformat(text)
        except ValueError:
            return None
        if aware is None:
            aware = instant.tzinfo is not None
        if (instant.tzinfo is not None) != aware:
            return None
        submit_of[text] = _seconds(instant, origin) or 0.0
    memory_of: dict[str, float] = {}
    for text in {task["memory_usage"] for task in tasks if "memory_usage" in task}:
        amount = parse_size_mb(text)
        if amount is None:
            return None
        memory_of[text] = amount
    ids = [task["id"] for task in tasks]
    row_of = {task_id: row for row, task_id in enumerate(ids)}
    if len(row_of) != len(ids):
        return None
    needs = [task.get("depends_on", ()) for task in tasks]
    if not all(row_of.get(needed, row) < row for row, needed_ids in enumerate(needs)
               for needed in needed_ids):
        return None
    try:
        runtime = np.array([task.get("runtime", math.nan) for task in tasks],
                           dtype=np.float64)
        cores = np.array([task.get("core_count", 1.0) for task in tasks], dtype=np.float64)
    except OverflowError:
        return None
    if bool((runtime < 0).any()) or not bool((cores > 0).all()):
        return None
    count = len(tasks)
    none = Strings(np.full(count, -1, dtype=np.int32), ())
    sizes = np.zeros(count + 1, dtype=np.int64)
    np.cumsum([len(needed_ids) for needed_ids in needs], out=sizes[1:])
    job_offsets = np.zeros(len(workflows) + 1, dtype=np.int64)
    np.cumsum([len(workflow.get("tasks", ())) for workflow in workflows], out=job_offsets[1:])
    return WorkloadColumns(
        ids=_texts_of(np, ids),
        submit_time_s=np.array([submit_of[task["ts_submit"]] for task in tasks],
                               dtype=np.float64),
        runtime_s=runtime, requested_time_s=np.full(count, math.nan),
        nodes=np.ones(count, dtype=np.int64), cores=cores,
        memory_mb=np.full(count, math.nan),
        gpus=np.zeros(count, dtype=np.int64), deadline_s=np.full(count, math.nan),
        user=none, group=none, dependency_offsets=sizes,
        dependency_ids=_texts_of(np, [needed for needed_ids in needs for needed in needed_ids]),
        extras={}, job_ids=_texts_of(np, [workflow["id"] for workflow in workflows]),
        job_offsets=job_offsets,
        job_names=Strings.encode([workflow.get("application_name") for workflow in workflows]),
        job_users=Strings(np.full(len(workflows), -1, dtype=np.int32), ()),
        used_memory_mb=np.array([memory_of[task["memory_usage"]] if "memory_usage" in task
                                 else math.nan for task in tasks], dtype=np.float64) / cores
        if memory_of else None)


def _origin(root: dict[str, Any], reader: _Reader) -> tuple[str | None, datetime | None]:
    """``date_start`` as text and instant; ``(None, None)`` without it (times then count from
    the Unix epoch, see ``_seconds``)."""
    if "date_start" in root:
        return root["date_start"], reader.instant(root["date_start"], "/date_start")
    return None, None


def _seconds(instant: datetime | None, origin: datetime | None) -> float | None:
    """Seconds from ``origin`` to ``instant``; from the Unix epoch (UTC, also for a naive
    instant) when there is no origin."""
    if instant is None:
        return None
    if origin is None:
        origin = UNIX_EPOCH if instant.tzinfo is not None else UNIX_EPOCH.replace(tzinfo=None)
    return (instant - origin).total_seconds()


def _job(
    workflow: dict[str, Any], pointer: str, index: int, origin: datetime | None, reader: _Reader
) -> Job:
    job_id: Id = workflow.get("id", index)
    if "id" not in workflow:
        reader.diagnostics.append(warning(
            f"workflow without an id; dcx names it by its position ({index})",
            "osp-workload.workflow-id", pointer=pointer))
    fallback = None
    if "ts_submit" in workflow:
        fallback = reader.instant(workflow["ts_submit"], pointer + "/ts_submit")
    tasks = tuple(_task(task, f"{pointer}/tasks/{t}", origin, fallback, reader)
                  for t, task in enumerate(workflow.get("tasks", [])))
    extras = {key: value for key, value in workflow.items() if key not in _JOB_MAPPED}
    return Job(id=job_id, tasks=tasks, name=workflow.get("application_name"), extras=extras)


def _task(
    task: dict[str, Any], pointer: str, origin: datetime | None, fallback: datetime | None,
    reader: _Reader,
) -> Task:
    task_id = task.get("id")
    if task_id is None:
        reader.diagnostics.append(error("task without an id: dependencies cannot refer to it",
                                        "osp-workload.task-id", pointer=pointer))
    submit = None
    if "ts_submit" in task:
        submit = _seconds(reader.instant(task["ts_submit"], pointer + "/ts_submit"), origin)
    elif fallback is not None:
        submit = _seconds(fallback, origin)
    else:
        reader.diagnostics.append(warning("task has no ts_submit (nor has its workflow); "
                                          "it is submitted at the time origin",
                                          "osp-workload.no-submit-time", pointer=pointer))
    runtime = task.get("runtime")
    if runtime is None:
        runtime = _used_span(task.get("resources_used", []), pointer, reader)
    elif runtime < 0:
        reader.diagnostics.append(error(f"negative runtime {runtime}", "osp-workload.negative",
                                        pointer=pointer + "/runtime"))
    cores = task.get("core_count", 1.0)
    if cores <= 0:
        reader.diagnostics.append(error(f"core_count must be positive, not {cores}",
                                        "osp-workload.negative", pointer=pointer + "/core_count"))
    used = _size(task, "memory_usage", pointer, reader)
    for key in _CHECKED_SIZES:
        _size(task, key, pointer, reader)
    extras = {key: value for key, value in task.items() if key not in _TASK_MAPPED}
    return Task(
        id=task_id if task_id is not None else "",
        submit_time_s=submit or 0.0,
        runtime_s=None if runtime is None else float(runtime),
        request=ResourceRequest(cores=float(cores)),
        dependencies=tuple(task.get("depends_on", [])),
        used_memory_mb=None if used is None or cores <= 0 else used / cores,
        extras=extras,
    )


def _size(task: dict[str, Any], key: str, pointer: str, reader: _Reader) -> float | None:
    if key not in task:
        return None
    value = task[key]
    amount = parse_size_mb(value) if isinstance(value, str) else None
    if amount is None:
        reader.diagnostics.append(error(
            f"{key} {value!r} is not a size with a unit such as \"200MB\"",
            "osp-workload.size", pointer=f"{pointer}/{key}"))
    return amount


def _used_span(resources: list[dict[str, Any]], pointer: str, reader: _Reader) -> float | None:
    starts = [reader.instant(r["time_assigned"], f"{pointer}/resources_used/{i}/time_assigned")
              for i, r in enumerate(resources) if "time_assigned" in r]
    ends = [reader.instant(r["time_released"], f"{pointer}/resources_used/{i}/time_released")
            for i, r in enumerate(resources) if "time_released" in r]
    known_starts = [s for s in starts if s is not None]
    known_ends = [e for e in ends if e is not None]
    if not known_starts or not known_ends:
        return None
    span = (max(known_ends) - min(known_starts)).total_seconds()
    return span if span >= 0 else None


def _link(jobs: list[Job], workflows: list[dict[str, Any]], reader: _Reader) -> list[Job]:
    """Fold ``enables`` into dependencies and check ids, references and cycles."""
    pointers: list[str] = []
    raw_tasks: list[dict[str, Any]] = []
    for w, workflow in enumerate(workflows):
        for t, task in enumerate(workflow.get("tasks", [])):
            pointers.append(f"/workflows/{w}/tasks/{t}")
            raw_tasks.append(task)
    tasks = [task for job in jobs for task in job.tasks]
    index_of: dict[Id, int] = {}
    for index, task in enumerate(tasks):
        index_of.setdefault(task.id, index)
    added: dict[int, list[Id]] = {}
    for index, raw in enumerate(raw_tasks):
        for position, enabled in enumerate(raw.get("enables", [])):
            target = index_of.get(enabled)
            if target is None:
                reader.diagnostics.append(error(
                    f"task {tasks[index].id!r} enables task {enabled!r}, which is not in the "
                    "workload", "osp-workload.unknown-dependency",
                    pointer=f"{pointers[index]}/enables/{position}"))
            elif tasks[index].id not in tasks[target].dependencies and \
                    tasks[index].id not in added.get(target, []):
                added.setdefault(target, []).append(tasks[index].id)
    linked = [Task(**{**task.__dict__,
                      "dependencies": task.dependencies + tuple(added.get(index, []))})
              if index in added else task for index, task in enumerate(tasks)]

    def locate(index: int, dependency: int | None) -> dict[str, Any]:
        if dependency is None:
            return {"pointer": pointers[index] + "/id"}
        given = len(raw_tasks[index].get("depends_on", []))
        if dependency < given:
            return {"pointer": f"{pointers[index]}/depends_on/{dependency}"}
        return {"pointer": pointers[index]}

    present = [i for i, task in enumerate(linked) if "id" in raw_tasks[i]]
    found = dependency_diagnostics([linked[i].id for i in present],
                                   [linked[i].dependencies for i in present],
                                   lambda i, d: locate(present[i], d), "osp-workload")
    reader.diagnostics.extend(found)
    result: list[Job] = []
    position = 0
    for job in jobs:
        count = len(job.tasks)
        result.append(Job(id=job.id, tasks=tuple(linked[position:position + count]),
                          name=job.name, user=job.user, extras=job.extras))
        position += count
    return result


# --------------------------------------------------------------------------- normal form


def _submit(seconds: float, origin: datetime) -> float:
    """What a ``ts_submit`` written for ``seconds`` after ``origin`` reads back as: whole
    microseconds (the resolution of an ISO 8601 timestamp as Python writes it), the origin
    itself when the instant is beyond the years a timestamp can hold."""
    if not math.isfinite(seconds):
        return 0.0
    try:
        return ((origin + timedelta(seconds=seconds)) - origin).total_seconds()
    except OverflowError:
        return 0.0


def _origin_instant(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _at_least_zero(value: float | None) -> float | None:
    return value if value is None or (value >= 0 and math.isfinite(value)) else None


def _cores(cores: float) -> float:
    return cores if cores > 0 and math.isfinite(cores) else 1.0


def _text_id(value: object) -> Id | None:
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else None


_LEVEL_WRAPPERS = {
    "workload": lambda key, value: {key: value},
    "job": lambda key, value: {"workflows": [{key: value}]},
    "task": lambda key, value: {"workflows": [{"tasks": [{key: value}]}]},
}


def _free_keys(extras: Extras, mapped: frozenset[str], level: str) -> tuple[Extras, bool]:
    """Extras as the object's own keys read them back: plain keys as they are,
    ``osp-workload:`` keys without the prefix; a key named like one dcx writes from a model
    field, or whose value the format's schema refuses for it, is dropped (second value: one
    was). Keys of other formats stay for ``restrict`` to drop."""
    if not extras:
        return extras, False
    kept: Extras = {}
    dropped = False
    wrap = _LEVEL_WRAPPERS[level]
    for key, value in extras.items():
        name = key[len(PREFIX):] if key.startswith(PREFIX) else key
        if ":" in name:
            kept[key] = value
        elif name in mapped or not schema_verdict(SCHEMA, wrap(name, value)):
            dropped = True
        else:
            kept[name] = value
    return (extras, False) if kept == extras else (kept, dropped)


@last_result
def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    """``normal_form`` and the held field paths it changes, in one pass (once per document:
    a conversion asks for it for its refusal, its losses and its writer)."""
    workload = document.workload
    if workload is None:
        return document, frozenset()
    lost: set[str] = set()
    origin = _origin_instant(workload.time_origin)
    time_origin = workload.time_origin
    if time_origin is not None and origin is None:
        lost.add("workload.time_origin")
        time_origin = None
    columns = columns_of(workload)
    normal_columns = None if columns is None else _normal_columns(
        columns, origin or UNIX_EPOCH, lost)
    jobs: Sequence[Job]
    if normal_columns is not None:
        jobs = JobRows(normal_columns)
    else:
        jobs = _normal_jobs(workload.jobs, origin or UNIX_EPOCH, lost)
    extras, dropped = _free_keys(workload.extras, _ROOT_MAPPED, "workload")
    if dropped:
        lost.add("workload.extras")
    return replace(document, workload=replace(workload, jobs=jobs, time_origin=time_origin,
                                              extras=extras)), frozenset(lost)


def _normal_jobs(jobs: Sequence[Job], origin: datetime, lost: set[str]) -> tuple[Job, ...]:
    """The normal form of a workload of objects, task by task."""
    tasks = [task for job in jobs for task in job.tasks]
    numbering, renumbered = written_ids([task.id for task in tasks], _text_id)
    if renumbered:
        lost.add("task.id")
        numbering = {old: str(new) for old, new in numbering.items()}
    normal = _TaskNormalizer(numbering, origin, lost)
    normal_jobs = []
    for job in jobs:
        extras, dropped = _free_keys(job.extras, _JOB_MAPPED, "job")
        if dropped:
            lost.add("job.extras")
        new_tasks = tuple(normal.task(task) for task in job.tasks)
        job_id = str(job.id)
        if job_id == job.id and extras is job.extras and all(
                a is b for a, b in zip(new_tasks, job.tasks, strict=True)):
            normal_jobs.append(job)
        else:
            normal_jobs.append(replace(job, id=job_id, tasks=new_tasks, extras=extras))
    return tuple(normal_jobs)


def _per_value(np: Any, column: Any, rule: Callable[[Any], Any], dtype: Any) -> Any:
    """``rule`` (the task-by-task path's) applied to each row of ``column``, asked once per
    distinct value (NaN, a column's ``None``, is one value; ``None`` back is NaN)."""
    if not len(column):
        return np.zeros(0, dtype=dtype)
    values, inverse = np.unique(column, return_inverse=True)
    results = [rule(value) for value in values.tolist()]
    return np.array([math.nan if result is None else result for result in results],
                    dtype=dtype)[inverse]


def _texts_of(np: Any, values: Sequence[object]) -> Any:
    """An ``object`` array of ``values`` (text ids), as a column holds them."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _normal_columns(columns: WorkloadColumns, origin: datetime,
                    lost: set[str]) -> WorkloadColumns | None:
    """``_TaskNormalizer.task`` (and the jobs' text ids) done column by column, each of its
    rules asked once per distinct value; ``None`` where only the task-by-task path can do it
    (``osp-workload:`` keys to name again)."""
    import numpy as np

    if any(key.startswith(PREFIX) and bool(column.present.any())
           for key, column in columns.extras.items()):
        return None
    changes: dict[str, Any] = {}
    ids = columns.ids
    numbering: dict[Id, Id] | None = None
    if ids.dtype.kind == "i" and all_distinct(ids):
        texts = _texts_of(np, list(map(str, ids.tolist())))  # _text_id of each
    else:
        numbering, renumbered = written_ids(ids.tolist(), _text_id)
        if renumbered:
            lost.add("task.id")
            numbering = {old: str(new) for old, new in numbering.items()}
        texts = _texts_of(np, [numbering[old] for old in ids.tolist()])
    changes["ids"] = texts
    changes.update(_normal_dependencies(np, columns, numbering, lost))
    # (as _Normalizer.task: a task's nodes as the cores of one node)
    total, _ = one_node_columns(columns.nodes, columns.cores, columns.memory_mb)
    for field, path, rule, wanted in (
            ("submit_time_s", "task.submit_time_s", lambda value: _submit(value, origin),
             columns.submit_time_s),
            ("runtime_s", "task.runtime_s", _at_least_zero, columns.runtime_s),
            ("cores", "task.request.cores", _cores, total)):
        given = getattr(columns, field)
        normal = _per_value(np, wanted, rule, np.float64)
        if not np.array_equal(given, normal, equal_nan=True):
            changes[field] = normal
        own = normal if wanted is given else _per_value(np, given, rule, np.float64)
        if not np.array_equal(given, own, equal_nan=True):
            lost.add(path)
    several = columns.nodes != 1
    if bool(several.any()):
        changes["nodes"] = np.ones(len(columns), dtype=np.int64)
        if bool(np.any(several & ~only_resplit_rows(columns.placement, columns.nodes,
                                                    columns.cores,
                                                    changes.get("cores", columns.cores)))):
            lost.add("task.request.nodes")
    if columns.used_memory_mb is not None:
        used = _used_memory_column(np, columns.used_memory_mb,
                                   changes.get("cores", columns.cores))
        if not np.array_equal(used, columns.used_memory_mb, equal_nan=True):
            changes["used_memory_mb"] = used
            lost.add("task.used_memory_mb")
    extras = _normal_extra_columns(columns.extras, lost)
    if extras is not columns.extras:
        changes["extras"] = extras
    changes["job_ids"] = _texts_of(np, list(map(str, columns.job_ids.tolist())))
    return replace(columns, **changes)


def _used_memory_column(np: Any, used: Any, cores: Any) -> Any:
    """``_used_memory`` of every row (``NaN``: none), with the same arithmetic."""
    with np.errstate(invalid="ignore", over="ignore"):
        whole = used * cores
        back = whole / cores
    keep = (used >= 0) & np.isfinite(used) & np.isfinite(whole)
    return np.where(keep, back, math.nan)


def _normal_dependencies(np: Any, columns: WorkloadColumns, numbering: dict[Id, Id] | None,
                         lost: set[str]) -> dict[str, Any]:
    """The dependency columns with each id as written (``numbering``; ``None``: every id
    as its text), those on no task left out."""
    dependencies = columns.dependency_ids
    if not len(dependencies):
        return {}
    if numbering is None:
        numbering = {old: str(old) for old in columns.ids.tolist()}
    written = [numbering.get(old) for old in dependencies.tolist()]
    known = np.fromiter((text is not None for text in written), bool, len(written))
    if known.all():
        return {"dependency_ids": _texts_of(np, written)}
    lost.add("task.dependencies")
    offsets = np.zeros(len(columns) + 1, dtype=np.int64)
    counted = np.concatenate(([0], np.cumsum(known)))
    offsets[:] = counted[columns.dependency_offsets]
    return {"dependency_ids": _texts_of(np, [text for text in written if text is not None]),
            "dependency_offsets": offsets}


def _normal_extra_columns(extras: dict[str, ExtraColumn], lost: set[str]
                          ) -> dict[str, ExtraColumn]:
    """``_free_keys`` of every task's extras, a column at a time: a key of its own (no
    ``:``) dcx writes from a model field goes, and so does a value the schema refuses
    there, asked once per distinct value."""
    import numpy as np

    kept = dict(extras)
    for key, column in extras.items():
        if ":" in key or not bool(column.present.any()):
            continue
        if key in _TASK_MAPPED:
            del kept[key]
            lost.add("task.extras")
            continue
        rows = np.flatnonzero(column.present).tolist()
        verdicts: dict[str, bool] = {}
        accepted = np.zeros(len(column.present), dtype=bool)
        for row in rows:
            value = column.at(row)
            seen = json.dumps(value, sort_keys=True) + type(value).__name__
            if seen not in verdicts:
                verdicts[seen] = schema_verdict(SCHEMA, _LEVEL_WRAPPERS["task"](key, value))
            accepted[row] = verdicts[seen]
        if not np.array_equal(accepted, column.present):
            lost.add("task.extras")
            if accepted.any():
                kept[key] = replace(column, present=accepted)
            else:
                del kept[key]
    return extras if kept == extras else kept


class _TaskNormalizer:
    def __init__(self, numbering: dict[Id, Id], origin: datetime, lost: set[str]) -> None:
        self.numbering = numbering
        self.origin = origin
        self.lost = lost

    def task(self, task: Task) -> Task:
        lost, numbering = self.lost, self.numbering
        dependencies = tuple(numbering[d] for d in task.dependencies if d in numbering)
        if len(dependencies) != len(task.dependencies):
            lost.add("task.dependencies")
        request = task.request
        submit = _submit(task.submit_time_s, self.origin)
        runtime = _at_least_zero(task.runtime_s)
        # A task runs on one node: its nodes become that node's cores (core.shapes). The
        # node count is what is lost (nothing is, for cores anywhere: only the total means
        # something); cores carry the total, so they count as changed only for what they
        # cannot hold themselves. (Requested memory is not held.)
        total = request.cores
        if request.nodes != 1 and type(request.nodes) is int:
            total, _ = one_node(request.nodes, total, None)
        cores = _cores(total)
        if request.nodes != 1 and not only_resplit(request.placement, request.nodes,
                                                   request.cores, cores):
            lost.add("task.request.nodes")
        used = _used_memory(task.used_memory_mb, cores)
        for path, before, after in (("task.submit_time_s", task.submit_time_s, submit),
                                    ("task.runtime_s", task.runtime_s, runtime),
                                    ("task.request.cores", request.cores,
                                     _cores(request.cores)),
                                    ("task.used_memory_mb", task.used_memory_mb, used)):
            if before is not after and before != after:
                lost.add(path)
        extras, dropped = _free_keys(task.extras, _TASK_MAPPED, "task")
        if dropped:
            lost.add("task.extras")
        task_id = numbering[task.id]
        if (task_id == task.id and dependencies == task.dependencies
                and submit == task.submit_time_s and runtime is task.runtime_s
                and cores == request.cores
                and (used is task.used_memory_mb or used == task.used_memory_mb)
                and request.nodes == 1 and extras is task.extras):
            return task
        return Task(**{**task.__dict__, "id": task_id, "dependencies": dependencies,
                       "submit_time_s": submit, "runtime_s": runtime,
                       "request": replace(request, nodes=1, cores=cores),
                       "used_memory_mb": used, "extras": extras})


def normal_form(document: Document) -> Document:
    """What the format makes of ``document`` beyond its field paths: ids as text (renumbered
    when two would read the same), submit times as timestamps read them back, runtimes and
    used memory >= 0 (as ``memory_usage`` reads back), cores > 0, an ISO 8601 time origin,
    extras the format's keys can take."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    return _normalized(document)[1]


# --------------------------------------------------------------------------- write


def write(document: Document) -> WriteResult:
    """osp-workload JSON for ``normal_form(document)``."""
    workload = normal_form(document).workload or Workload()
    origin = _origin_instant(workload.time_origin) or UNIX_EPOCH
    root = _root(workload)
    columns = columns_of(workload)
    if columns is not None and _columns_writable(columns):
        if not schema_verdict(SCHEMA, root):
            data, problem = serialised_against(SCHEMA, root)
            return _unwritable(problem or "the schema refuses the root's members")
        text = _before_list(root, "workflows", "") + (
            "[\n" + _column_text(columns, origin) + WORKFLOWS_CLOSE
            if columns.job_count else NO_WORKFLOWS)
        return WriteResult(text.encode())
    root["workflows"] = [_workflow(job, origin) for job in workload.jobs]
    data, problem = serialised_against(SCHEMA, root)
    return _unwritable(problem) if problem is not None else WriteResult(data)


def _unwritable(reason: str) -> WriteResult:
    return WriteResult(b"", diagnostics=(error(
        f"cannot write osp-workload JSON: {reason}", "osp-workload.unwritable"),))


def _own_keys(extras: Extras) -> Extras:
    """The extras a normal form keeps as the object's keys (other formats' are not written)."""
    return {key: value for key, value in extras.items() if ":" not in key}


def _workflow(job: Job, origin: datetime) -> dict[str, Any]:
    workflow: dict[str, Any] = {"id": job.id}
    if job.name is not None:
        workflow["application_name"] = job.name
    workflow.update(_own_keys(job.extras))
    workflow["tasks"] = [_task_object(task, origin) for task in job.tasks]
    return workflow


def _json_number(value: float) -> float | int:
    """Whole numbers without a ``.0``, as the format's own files write them."""
    if isinstance(value, int):
        return int(value)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _task_object(task: Task, origin: datetime) -> dict[str, Any]:
    request = task.request
    written: dict[str, Any] = {"id": task.id}
    written.update(_own_keys(task.extras))
    written["ts_submit"] = _timestamp(task.submit_time_s, origin)
    if task.runtime_s is not None:
        written["runtime"] = _json_number(task.runtime_s)
    if request.cores != 1.0:
        written["core_count"] = _json_number(request.cores)
    if task.used_memory_mb is not None:
        written["memory_usage"] = used_memory_text(task.used_memory_mb, request.cores)
    if task.dependencies:
        written["depends_on"] = list(task.dependencies)
    return written


# --------------------------------------------------------------------------- write in parts
#
# A workload too large to hold is written a chunk of workflows at a time, with the text
# ``write`` gives: the root's members before ``workflows`` (``head_text``), each workflow's
# members before its tasks (``WorkflowPart.head``), its tasks, then what closes them. A
# workflow whose tasks continue in the next chunk is one workflow: its tasks go on in the
# same list.

_TEXT_INDENT = 2


def _text(value: Any, margin: str) -> str:
    """``value`` as ``write`` lays it out (``dumps_canonical``) at ``margin``."""
    import json

    text = json.dumps(value, indent=_TEXT_INDENT, ensure_ascii=False, allow_nan=False)
    return margin + text.replace("\n", "\n" + margin)


def _before_list(value: dict[str, Any], key: str, margin: str) -> str:
    """The text of ``value`` (whose last member is ``key``, an empty list) up to that list."""
    text = _text(value, margin)
    closing = "[]\n" + margin + "}"
    assert text.endswith(closing)
    return text[:-len(closing)]


WORKFLOWS_CLOSE = "\n  ]\n}\n"
NO_WORKFLOWS = "[]\n}\n"
WORKFLOW_SEPARATOR = ",\n"
TASKS_OPEN = "[\n"
TASKS_CLOSE = "\n      ]\n    }"
NO_TASKS = "[]\n    }"


def head_text(workload: Workload) -> str:
    """The root's text up to its ``workflows`` list, for the header ``workload`` (in normal
    form); the list's items follow ``"[\\n"``, then ``WORKFLOWS_CLOSE`` (no item:
    ``NO_WORKFLOWS``)."""
    return _before_list(_root(workload), "workflows", "")


def _root(workload: Workload) -> dict[str, Any]:
    """The root's members, in the order written, its workflows empty."""
    root: dict[str, Any] = {}
    if workload.name is not None:
        root["name"] = workload.name
    if workload.description is not None:
        root["description"] = workload.description
    root.update(_own_keys(workload.extras))
    if workload.time_origin is not None:
        root["date_start"] = workload.time_origin
    root["workflows"] = []
    return root


class WorkflowPart(NamedTuple):
    """A workflow (or the part of it a chunk holds) as text: ``head`` up to its tasks list,
    then its tasks, each an item of that list (``TASKS_OPEN`` before the first, ``",\\n"``
    between two, ``TASKS_CLOSE`` after the last; no task: ``NO_TASKS``). A tuple: a chunk
    of a trace makes one per job."""

    id: Id
    head: str
    tasks: list[str]


def part_normal_form(document: Document, time_origin: str | None
                     ) -> tuple[Document, frozenset[str]]:
    """``normal_form`` of a chunk's document whose times count from the whole workload's
    ``time_origin``, and the held field paths it changes."""
    workload = document.workload
    if workload is not None and workload.time_origin != time_origin:
        document = replace(document, workload=replace(workload, time_origin=time_origin))
    return _normalized(document)


def write_part(normal: Document, outside: dict[int, list[tuple[int, Any]]]
               ) -> list[WorkflowPart] | str:
    """The workflows ``write`` writes for a chunk, given its normal form
    (``part_normal_form``), each task (by row) also depending on the tasks of other chunks
    ``outside`` gives, at its place in its list (as ``write`` writes an id); or why the
    format's schema refuses them."""
    workload = normal.workload or Workload()
    origin = _origin_instant(workload.time_origin) or UNIX_EPOCH
    columns = columns_of(workload)
    if columns is not None and _columns_writable(columns):
        return _column_workflows(columns, origin, outside)
    row = 0
    parts = []
    written = []
    for job in workload.jobs:
        tasks = []
        for task in job.tasks:
            if row in outside:
                needed = list(task.dependencies)
                for place, value in outside[row]:
                    needed.insert(place, str(value))  # (as _text_id writes an id)
                task = replace(task, dependencies=tuple(needed))
            tasks.append(_task_object(task, origin))
            row += 1
        workflow = _workflow(replace(job, tasks=()), origin)
        written.append({**workflow, "tasks": tasks})
        parts.append(WorkflowPart(job.id, _before_list(workflow, "tasks", "    "),
                                  [_text(task, "        ") for task in tasks]))
    if not schema_verdict(SCHEMA, {"workflows": written}):
        found = schema_diagnostics(SCHEMA, {"workflows": written})
        return found[0].render() if found else "the schema refuses it"
    return parts


# --------------------------------------------------------------------------- write from columns
#
# A workload in normal form held as columns is written as text, task by task from templates,
# each value's text made once per distinct value with the functions ``_task_object`` uses;
# the text is what ``write`` of the same workload as objects gives (the differential tests
# hold them together). What the schema could refuse was left out by the normal form: ids and
# names are text, numbers numbers, extras values it accepts.

_TASK_MARGIN = " " * 8
_MEMBER_MARGIN = _TASK_MARGIN + " " * _TEXT_INDENT


def _columns_writable(columns: WorkloadColumns) -> bool:
    """Whether ``_column_workflows`` writes these columns: a normal form made column by
    column (ids and dependencies as text)."""
    return all(column.dtype.kind == "O" and all(type(value) is str for value in column[:1])
               for column in (columns.ids, columns.job_ids, columns.dependency_ids)
               if len(column))


def _value_texts(np: Any, column: Any, text: Callable[[float], str],
                 many: Callable[[Any], tuple[Any, list[str]]] | None = None) -> list[str]:
    """``text`` of each row's value, asked once per distinct value (NaN, no value: ``""``);
    ``many`` gives the texts of the distinct values it accepts (a mask, their texts) at
    once, ``text`` the others'."""
    if not len(column):
        return []
    values, inverse = np.unique(column, return_inverse=True)
    texts = np.empty(len(values), dtype=object)
    rest = np.ones(len(values), dtype=bool)
    if many is not None:
        accepted, made = many(values)
        texts[accepted] = made
        rest = ~accepted
    texts[rest] = [text(value) if value == value else "" for value in values[rest].tolist()]
    result: list[str] = texts[inverse].tolist()
    return result


def _member(key: str, value: Any) -> str:
    """``"key": value`` as ``_text`` lays it out inside a task."""
    return f"{_TEXT(key)}: {_text(value, '')}".replace("\n", "\n" + _MEMBER_MARGIN)


def _column_workflows(columns: WorkloadColumns, origin: datetime,
                      outside: dict[int, list[tuple[int, Any]]] | None = None
                      ) -> list[WorkflowPart]:
    """Each job of ``columns`` as ``write`` lays out its workflow, each task (by row) also
    depending on the tasks ``outside`` gives (``write_part``)."""
    tasks = _column_tasks(columns, origin, outside)
    offsets = columns.job_offsets.tolist()
    return [WorkflowPart(job_id, head, tasks[offsets[job]:offsets[job + 1]])
            for job, (job_id, head) in enumerate(zip(columns.job_ids.tolist(),
                                                     _column_heads(columns), strict=True))]


def _column_text(columns: WorkloadColumns, origin: datetime) -> str:
    """The workflows of ``columns`` as ``write`` lays out the root's ``workflows`` list's
    items (what ``_column_workflows`` gives, joined)."""
    tasks = _column_tasks(columns, origin)
    heads = _column_heads(columns)
    sizes = _run_sizes(columns.job_offsets)
    if all(size == 1 for size in sizes):  # a trace: one task per job
        items = [head + TASKS_OPEN + task + TASKS_CLOSE
                 for head, task in zip(heads, tasks, strict=True)]
    else:
        offsets = columns.job_offsets.tolist()
        items = [head + (TASKS_OPEN + ",\n".join(tasks[offsets[job]:offsets[job + 1]])
                         + TASKS_CLOSE if size else NO_TASKS)
                 for job, (head, size) in enumerate(zip(heads, sizes, strict=True))]
    return WORKFLOW_SEPARATOR.join(items)


def _run_sizes(offsets: Any) -> list[int]:
    """The sizes of the runs ``offsets`` marks."""
    sizes: list[int] = (offsets[1:] - offsets[:-1]).tolist()
    return sizes


def _column_heads(columns: WorkloadColumns) -> list[str]:
    """Each workflow's text up to its tasks list (``_before_list`` of its id, name and
    tasks: a template, not an encoder call per workflow)."""
    # by name code + 1 (code -1: no name)
    names = ["", *(f'\n      "application_name": {_TEXT(name)},'
                   for name in columns.job_names.values)]
    return [f'    {{\n      "id": {job_id},{names[name + 1]}\n      "tasks": '
            for job_id, name in zip(map(_TEXT, columns.job_ids.tolist()),
                                    columns.job_names.codes.tolist(), strict=True)]


def _column_tasks(columns: WorkloadColumns, origin: datetime,
                  outside: dict[int, list[tuple[int, Any]]] | None = None) -> list[str]:
    """Each task of ``columns`` as ``_text`` lays out ``_task_object`` in a workflow."""
    import numpy as np

    count = len(columns)
    margin, inner = _MEMBER_MARGIN, _MEMBER_MARGIN + " " * _TEXT_INDENT
    separator = ",\n" + margin

    def member(name: str, value: Callable[[float], str | None]) -> Callable[[float], str]:
        """A member's text with the separator before it (``""``: not written)."""
        def text(number: float) -> str:
            written = value(number)
            return "" if written is None else f'{separator}"{name}": {written}'
        return text

    # each task's members in the order _task_object writes them, each text made once per
    # distinct value and with the separator before it, then joined row by row
    submit = _value_texts(np, columns.submit_time_s, member(
        "ts_submit", lambda seconds: _TEXT(_timestamp(seconds, origin))),
        lambda seconds: _whole_timestamps(np, seconds, origin, f'{separator}"ts_submit": "'))
    runtime = _value_texts(np, columns.runtime_s, member(
        "runtime", lambda seconds: _TEXT(_json_number(seconds))))
    cores = _value_texts(np, columns.cores, member(
        "core_count", lambda cores: None if cores == 1.0 else _TEXT(_json_number(cores))))
    memory = _value_texts(np, columns.used_memory_mb * columns.cores, member(
        "memory_usage", lambda mb: _TEXT(format_size_mb(mb)))) \
        if columns.used_memory_mb is not None else [""] * count
    extras = [""] * count
    for key, column in columns.extras.items():
        if ":" not in key:
            for row in np.flatnonzero(column.present).tolist():
                extras[row] += separator + _member(key, column.at(row))
    dependencies = [""] * count
    texts = [_TEXT(value) for value in columns.dependency_ids.tolist()]
    offsets = columns.dependency_offsets.tolist()
    needing = np.flatnonzero(np.diff(columns.dependency_offsets)).tolist()
    for row in sorted({*needing, *(outside or ())}):
        needed = texts[offsets[row]:offsets[row + 1]]
        for place, value in (outside or {}).get(row, ()):
            needed.insert(place, _TEXT(str(value)))  # (as _text_id writes an id)
        if needed:
            dependencies[row] = (f'{separator}"depends_on": [\n{inner}'
                                 + f",\n{inner}".join(needed) + f"\n{margin}]")
    opening = _TASK_MARGIN + "{\n" + margin + '"id": '
    closing = "\n" + _TASK_MARGIN + "}"
    return [opening + task_id + more + at + ran + on + uses + needs + closing
            for task_id, more, at, ran, on, uses, needs in zip(
                map(_TEXT, columns.ids.tolist()), extras, submit, runtime, cores, memory,
                dependencies, strict=True)]


# 0001-01-01T00:00:00 and 9999-12-31T23:59:59 in seconds from the Unix epoch: the instants
# a datetime holds to the second
_FIRST_SECOND, _LAST_SECOND = -62135596800, 253402300799


def _whole_timestamps(np: Any, seconds: Any, origin: datetime, before: str
                      ) -> tuple[Any, list[str]]:
    """``_timestamp`` of the whole ``seconds`` whose instant is in the years 1 to 9999 (as
    JSON text after ``before``), when ``origin`` is a whole second: numpy's datetimes write
    them as ``isoformat`` does; which of ``seconds`` they are (a mask), and their texts.
    A fast path that only accepts: ``_timestamp`` writes the others."""
    if origin.microsecond:
        return np.zeros(len(seconds), dtype=bool), []
    naive = origin.replace(tzinfo=None)
    suffix = origin.isoformat()[len(naive.isoformat()):]  # the origin's offset, if any
    start = (naive - datetime(1970, 1, 1)).total_seconds()
    with np.errstate(invalid="ignore"):
        instants = start + seconds
        accepted = (np.floor(seconds) == seconds) & (np.abs(seconds) < 2.0 ** 52) \
            & (instants >= _FIRST_SECOND) & (instants <= _LAST_SECOND)
    written = np.datetime_as_string(instants[accepted].astype(np.int64).astype(
        "datetime64[s]"), unit="s").tolist()
    return accepted, [f'{before}{text}{suffix}"' for text in written]


def _timestamp(seconds: float, origin: datetime) -> str:
    """``ts_submit`` of a task submitted ``seconds`` after ``origin``."""
    try:
        return (origin + timedelta(seconds=seconds)).isoformat()
    except OverflowError:  # the normal form made it 0
        return origin.isoformat()


_TEXT = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
