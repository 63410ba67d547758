"""osp-workload's reader, normal form and writer: the format's reference text, sniffer and
declaration are the package's (``dcx.formats.osp_workload``), which imports this module on
first use."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from dcx.core.diagnostics import (
    Diagnostic,
    ReadResult,
    WriteResult,
    error,
    has_errors,
    warning,
)
from dcx.core.model import Document, Extras, Id, Job, ResourceRequest, Task, Workload
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
    jobs: list[Job] = []
    for index, workflow in enumerate(workflows):
        jobs.append(_job(workflow, f"/workflows/{index}", index, origin, reader))
    jobs = _link(jobs, workflows, reader)
    if has_errors(reader.diagnostics):
        return None
    return Workload(
        jobs=tuple(jobs),
        name=root.get("name"),
        description=root.get("description"),
        time_origin=origin_text,
        extras={key: value for key, value in root.items() if key not in _ROOT_MAPPED},
    )


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
    memory = _size(task, "memory_usage", pointer, reader)
    for key in _CHECKED_SIZES:
        _size(task, key, pointer, reader)
    extras = {key: value for key, value in task.items() if key not in _TASK_MAPPED}
    return Task(
        id=task_id if task_id is not None else "",
        submit_time_s=submit or 0.0,
        runtime_s=None if runtime is None else float(runtime),
        request=ResourceRequest(cores=float(cores), memory_mb=memory),
        dependencies=tuple(task.get("depends_on", [])),
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


def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    """``normal_form`` and the held field paths it changes, in one pass."""
    workload = document.workload
    if workload is None:
        return document, frozenset()
    lost: set[str] = set()
    origin = _origin_instant(workload.time_origin)
    time_origin = workload.time_origin
    if time_origin is not None and origin is None:
        lost.add("workload.time_origin")
        time_origin = None
    tasks = [task for job in workload.jobs for task in job.tasks]
    numbering, renumbered = written_ids([task.id for task in tasks], _text_id)
    if renumbered:
        lost.add("task.id")
        numbering = {old: str(new) for old, new in numbering.items()}
    normal = _TaskNormalizer(numbering, origin or UNIX_EPOCH, lost)
    jobs = []
    for job in workload.jobs:
        extras, dropped = _free_keys(job.extras, _JOB_MAPPED, "job")
        if dropped:
            lost.add("job.extras")
        new_tasks = tuple(normal.task(task) for task in job.tasks)
        job_id = str(job.id)
        if job_id == job.id and extras is job.extras and all(
                a is b for a, b in zip(new_tasks, job.tasks, strict=True)):
            jobs.append(job)
        else:
            jobs.append(replace(job, id=job_id, tasks=new_tasks, extras=extras))
    extras, dropped = _free_keys(workload.extras, _ROOT_MAPPED, "workload")
    if dropped:
        lost.add("workload.extras")
    return replace(document, workload=replace(workload, jobs=tuple(jobs), time_origin=time_origin,
                                              extras=extras)), frozenset(lost)


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
        cores = _cores(request.cores)
        memory = _at_least_zero(request.memory_mb)
        for path, before, after in (("task.submit_time_s", task.submit_time_s, submit),
                                    ("task.runtime_s", task.runtime_s, runtime),
                                    ("task.request.cores", request.cores, cores),
                                    ("task.request.memory_mb", request.memory_mb, memory)):
            if before is not after and before != after:
                lost.add(path)
        extras, dropped = _free_keys(task.extras, _TASK_MAPPED, "task")
        if dropped:
            lost.add("task.extras")
        task_id = numbering[task.id]
        if (task_id == task.id and dependencies == task.dependencies
                and submit == task.submit_time_s and runtime is task.runtime_s
                and cores == request.cores and memory is request.memory_mb
                and extras is task.extras):
            return task
        return Task(**{**task.__dict__, "id": task_id, "dependencies": dependencies,
                       "submit_time_s": submit, "runtime_s": runtime,
                       "request": replace(request, cores=cores, memory_mb=memory),
                       "extras": extras})


def normal_form(document: Document) -> Document:
    """What the format makes of ``document`` beyond its field paths: ids as text (renumbered
    when two would read the same), submit times as timestamps read them back, runtimes and
    memory >= 0, cores > 0, an ISO 8601 time origin, extras the format's keys can take."""
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
    try:
        written["ts_submit"] = (origin + timedelta(seconds=task.submit_time_s)).isoformat()
    except OverflowError:  # the normal form made it 0
        written["ts_submit"] = origin.isoformat()
    if task.runtime_s is not None:
        written["runtime"] = _json_number(task.runtime_s)
    if request.cores != 1.0:
        written["core_count"] = _json_number(request.cores)
    if request.memory_mb is not None:
        written["memory_usage"] = format_size_mb(request.memory_mb)
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


@dataclass(frozen=True)
class WorkflowPart:
    """A workflow (or the part of it a chunk holds) as text: ``head`` up to its tasks list,
    then its tasks, each an item of that list (``TASKS_OPEN`` before the first, ``",\\n"``
    between two, ``TASKS_CLOSE`` after the last; no task: ``NO_TASKS``)."""

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
