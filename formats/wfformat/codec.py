"""Reading, normal form and writing of WfCommons WfFormat instances; the package's docstring
(``dcx.formats.wfformat``) is the format's reference text."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from dcx.core.diagnostics import (
    Diagnostic,
    ReadResult,
    WriteResult,
    error,
    has_errors,
    warning,
)
from dcx.core.ids import id_from_text, required_machine_name
from dcx.core.limits import paused_gc
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Extras,
    Id,
    Job,
    Machine,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StorageUnit,
    Task,
    Workload,
)
from dcx.core.shapes import one_node, only_resplit
from dcx.formats.wfformat import SCHEMA
from dcx.formats.wfformat.legacy import LEGACY_VERSIONS, upgraded
from dcx.formats.wfformat.recorded import (
    BYTES_PER_MB,
    instant,
    memory_bytes,
    normal_used_memory,
    normal_wait,
    origin_instant,
    seconds_after,
    task_start,
    used_memory_mb,
)
from dcx.parsing.jsonio import model_locator
from dcx.parsing.schemas import loaded_against, serialised_against
from dcx.parsing.traces import dependency_diagnostics, written_ids

PREFIX = "wfformat:"
VERSION = "1.5"
NO_TIME_ORIGIN = "1970-01-01T00:00:00Z"
"""``executedAt`` written for a workload without a time origin (read back as none)."""
NO_NAME = "workflow"
"""``name`` written for a workload without one."""
SYSTEMS = frozenset({"linux", "macos", "windows"})

TASK_NAME = PREFIX + "name"
TASK_MEMBERS = PREFIX + "task"
EXECUTION_MEMBERS = PREFIX + "execution"
INSTANCE_MEMBERS = PREFIX + "instance"
WORKFLOW_MEMBERS = PREFIX + "workflow"
SPECIFICATION_MEMBERS = PREFIX + "specification"
CORES_UNSTATED = PREFIX + "coreCountUnstated"
"""Task extras flag: the execution entry gave no ``coreCount`` (cores 1 by default), so the
writer leaves it out again."""
MACHINE_MEMBERS = PREFIX + "machine"
CPU_MEMBERS = PREFIX + "cpu"

_ROOT_MAPPED = frozenset({"name", "description", "schemaVersion", "workflow"})
_WORKFLOW_MAPPED = frozenset({"specification", "execution"})
_SPECIFICATION_MAPPED = frozenset({"tasks"})
_EXECUTION_MAPPED = frozenset({"makespanInSeconds", "executedAt", "tasks", "machines"})
_SPEC_TASK_MAPPED = frozenset({"name", "id", "parents", "children"})
_EXEC_TASK_MAPPED = frozenset({"id", "runtimeInSeconds", "coreCount", "memoryInBytes"})
_MACHINE_MAPPED = frozenset({"nodeName", "system", "architecture", "memoryInBytes", "cpu"})
_CPU_MAPPED = frozenset({"coreCount", "speedInMHz", "vendor"})
_REFERENCE = re.compile(r"[0-9A-Za-z_.#-]+")
_PEGASUS_TIME = re.compile(r"(\d\d)-(\d\d)-(\d\d)T(\d\d:\d\d:\d\d)Z")
"""Pegasus's ``%m-%d-%yT%H:%M:%SZ``, which WfCommons instances made from Pegasus logs use."""


# --------------------------------------------------------------------------- read


def read(data: bytes) -> ReadResult:
    decoded, problems = loaded_against(SCHEMA, data, "a WfFormat instance", "wfformat.root",
                                       _version)
    if decoded is None:
        return ReadResult(None, tuple(problems))
    root = decoded.value
    reader = _Reader()
    upgrade = upgraded(root) if root["schemaVersion"] in LEGACY_VERSIONS else None
    with paused_gc():
        document = reader.document(root if upgrade is None else upgrade.root)
    found = reader.diagnostics
    source_keys = _SOURCE_KEYS
    if upgrade is not None:
        found = [replace(d, pointer=upgrade.source_pointer(d.pointer, root))
                 if d.pointer is not None else d for d in found]
        source_keys = {"jobs": f"/workflow/{upgrade.list_key}", "slots": "/workflow/machines"}
    diagnostics = decoded.locator.place(found)
    if has_errors(diagnostics):
        return ReadResult(None, tuple(diagnostics))
    return ReadResult(document, tuple(diagnostics),
                      locator=model_locator(decoded.locator,
                                            lambda place: place.pointer(source_keys)))


_SOURCE_KEYS = {"jobs": "/workflow/specification/tasks", "slots": "/workflow/execution/machines"}
"""Where the file lists what the model's levels hold: a job (and its one task) is its
specification task, a machine its execution machine."""


def _version(diagnostic: Diagnostic, root: dict[str, Any]) -> Diagnostic:
    if diagnostic.pointer != "/schemaVersion" or diagnostic.code != "schema.enum":
        return diagnostic
    return replace(diagnostic, code="wfformat.version",
                   message=f"schemaVersion {root.get('schemaVersion')!r}: dcx reads WfFormat "
                   f"{', '.join(LEGACY_VERSIONS)} and {VERSION}",
                   hint="a later version's additions are optional: with schemaVersion 1.5 "
                   "the file reads as 1.5")


@dataclass
class _Reader:
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def document(self, root: dict[str, Any]) -> Document:
        workflow = root["workflow"]
        specification = workflow["specification"]
        execution = workflow.get("execution")
        raw_tasks: list[dict[str, Any]] = specification["tasks"]
        ids = [id_from_text(task["id"]) for task in raw_tasks]
        self._check_files(specification)
        dependencies = self._dependencies(raw_tasks, ids)
        measured: dict[Id, dict[str, Any]] = {}
        machines: tuple[Machine, ...] = ()
        extras: Extras = {}
        time_origin = None
        origin = None
        if execution is not None:
            measured = self._execution(execution, set(ids))
            machines = tuple(map(_machine, execution.get("machines", ())))
            time_origin = self._time_origin(execution["executedAt"])
            origin = origin_instant(time_origin)
            extras.update(_group(EXECUTION_MEMBERS, execution, _EXECUTION_MAPPED))
        tasks = [_task(raw, task_id, deps, measured.get(task_id), origin)
                 for raw, task_id, deps in zip(raw_tasks, ids, dependencies, strict=True)]
        extras.update(_group(INSTANCE_MEMBERS, root, _ROOT_MAPPED))
        extras.update(_group(WORKFLOW_MEMBERS, workflow, _WORKFLOW_MAPPED))
        extras.update(_group(SPECIFICATION_MEMBERS, specification, _SPECIFICATION_MAPPED))
        makespan = None
        if execution is not None and execution["makespanInSeconds"] != critical_path(tasks):
            makespan = float(execution["makespanInSeconds"])
        workload = Workload(
            jobs=tuple(Job(id=task.id, tasks=(task,)) for task in tasks),
            name=root["name"], description=root.get("description"), time_origin=time_origin,
            makespan_s=makespan, extras=extras)
        environment = None
        if execution is not None and "machines" in execution:
            environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=(
                Rack(slots=machines),)),)),))
        return Document(environment=environment, workload=workload)

    def _dependencies(self, raw_tasks: list[dict[str, Any]], ids: list[Id]) -> list[list[Id]]:
        """Each task's parents, then the tasks that list it as a child and are not among
        them; with the checks of ids, references, cycles and of the two directions."""
        known = set(ids)
        parents = [[id_from_text(p) for p in task["parents"]] for task in raw_tasks]
        children = [[id_from_text(c) for c in task["children"]] for task in raw_tasks]
        parent_sets = [set(found) for found in parents]
        child_sets = [set(found) for found in children]
        dependencies = [list(dict.fromkeys(found)) for found in parents]
        given = [len(found) for found in dependencies]
        implied_where: dict[int, list[str]] = {}
        index_of = {task_id: index for index, task_id in reversed(list(enumerate(ids)))}
        for i, found in enumerate(parents):
            if len(parent_sets[i]) != len(found):
                self._repeated(found, f"/workflow/specification/tasks/{i}/parents")
        for i, found in enumerate(children):
            pointer = f"/workflow/specification/tasks/{i}/children"
            if len(child_sets[i]) != len(found):
                self._repeated(found, pointer)
            for j, child in enumerate(found):
                if child not in known:
                    self.diagnostics.append(error(
                        f"task {ids[i]!r} lists child {child!r}, which is not a task of the "
                        "workflow", "wfformat.unknown-dependency", pointer=f"{pointer}/{j}"))
                    continue
                target = index_of[child]
                if ids[i] not in parent_sets[target]:
                    self.diagnostics.append(warning(
                        f"task {ids[i]!r} lists {child!r} as a child, but {child!r} does not "
                        f"list {ids[i]!r} as a parent", "wfformat.asymmetric-dependency",
                        pointer=f"{pointer}/{j}"))
                    if ids[i] not in dependencies[target][given[target]:]:
                        dependencies[target].append(ids[i])
                        implied_where.setdefault(target, []).append(f"{pointer}/{j}")
        for i, found in enumerate(parents):
            for j, parent in enumerate(found):
                listed_at = index_of.get(parent)
                if listed_at is not None and ids[i] not in child_sets[listed_at]:
                    self.diagnostics.append(warning(
                        f"task {ids[i]!r} lists {parent!r} as a parent, but {parent!r} does "
                        f"not list {ids[i]!r} as a child", "wfformat.asymmetric-dependency",
                        pointer=f"/workflow/specification/tasks/{i}/parents/{j}"))

        def locate(index: int, dependency: int | None) -> dict[str, Any]:
            if dependency is None:
                return {"pointer": f"/workflow/specification/tasks/{index}/id"}
            if dependency < given[index]:  # the first place the parent is listed
                first = parents[index].index(dependencies[index][dependency])
                return {"pointer": f"/workflow/specification/tasks/{index}/parents/{first}"}
            return {"pointer": implied_where[index][dependency - given[index]]}

        self.diagnostics.extend(dependency_diagnostics(ids, dependencies, locate, "wfformat"))
        return dependencies

    def _repeated(self, references: list[Id], pointer: str) -> None:
        seen: set[Id] = set()
        for j, reference in enumerate(references):
            if reference in seen:
                self.diagnostics.append(warning(
                    f"{reference!r} is listed more than once", "wfformat.repeated-reference",
                    pointer=f"{pointer}/{j}"))
            seen.add(reference)

    def _check_files(self, specification: dict[str, Any]) -> None:
        if "files" not in specification:
            return
        declared: set[str] = set()
        for i, item in enumerate(specification["files"]):
            if item["id"] in declared:
                self.diagnostics.append(error(f"file {item['id']!r} is declared twice",
                                              "wfformat.duplicate-file",
                                              pointer=f"/workflow/specification/files/{i}/id"))
            declared.add(item["id"])
        for i, task in enumerate(specification["tasks"]):
            for key in ("inputFiles", "outputFiles"):
                for j, file_id in enumerate(task.get(key, ())):
                    if file_id not in declared:
                        self.diagnostics.append(error(
                            f"task {task['id']!r} uses file {file_id!r}, which the workflow's "
                            "files do not declare", "wfformat.unknown-file",
                            pointer=f"/workflow/specification/tasks/{i}/{key}/{j}"))

    def _execution(self, execution: dict[str, Any], known: set[Id]) -> dict[Id, dict[str, Any]]:
        machines = execution.get("machines")
        names: set[str] = set()
        for i, machine in enumerate(machines or ()):
            if machine["nodeName"] in names:
                self.diagnostics.append(error(
                    f"machine {machine['nodeName']!r} is declared twice",
                    "wfformat.duplicate-machine",
                    pointer=f"/workflow/execution/machines/{i}/nodeName"))
            names.add(machine["nodeName"])
        measured: dict[Id, dict[str, Any]] = {}
        for i, task in enumerate(execution["tasks"]):
            pointer = f"/workflow/execution/tasks/{i}"
            task_id = id_from_text(task["id"])
            if task_id in measured:
                self.diagnostics.append(error(
                    f"task {task['id']!r} has a second execution entry",
                    "wfformat.duplicate-execution", pointer=pointer + "/id"))
                continue
            if task_id not in known:
                self.diagnostics.append(error(
                    f"execution entry for task {task['id']!r}, which the specification does "
                    "not have", "wfformat.unknown-execution-task", pointer=pointer + "/id"))
            measured[task_id] = task
            if machines is None:
                continue
            for j, name in enumerate(task.get("machines", ())):
                if name not in names:
                    self.diagnostics.append(error(
                        f"task {task['id']!r} ran on machine {name!r}, which the execution's "
                        "machines do not declare", "wfformat.unknown-machine",
                        pointer=f"{pointer}/machines/{j}"))
        return measured

    def _time_origin(self, text: str) -> str | None:
        if text == NO_TIME_ORIGIN:
            return None
        pegasus = _PEGASUS_TIME.fullmatch(text)
        if pegasus is not None:
            month, day, year, clock = pegasus.groups()
            iso = f"20{year}-{month}-{day}T{clock}Z"
            if instant(iso) is not None:
                self.diagnostics.append(warning(
                    f"executedAt {text!r} is month-day-year (as Pegasus writes it), not ISO "
                    f"8601; dcx reads it as {iso}", "wfformat.pegasus-timestamp",
                    pointer="/workflow/execution/executedAt"))
                return iso
        if instant(text) is None:
            self.diagnostics.append(warning(
                f"executedAt {text!r} is not an ISO 8601 timestamp", "wfformat.timestamp",
                pointer="/workflow/execution/executedAt"))
        return text


def _group(key: str, members: dict[str, Any], mapped: frozenset[str]) -> Extras:
    """``{key: {member: value}}`` for the members dcx has no field for, or nothing."""
    rest = {name: value for name, value in members.items() if name not in mapped}
    return {key: rest} if rest else {}


def _task(raw: dict[str, Any], task_id: Id, dependencies: list[Id],
          measured: dict[str, Any] | None, origin: datetime | None) -> Task:
    extras: Extras = {}
    if raw["name"] != str(task_id):
        extras[TASK_NAME] = raw["name"]
    extras.update(_group(TASK_MEMBERS, raw, _SPEC_TASK_MAPPED))
    if measured is None:
        return Task(id=task_id, dependencies=tuple(dependencies), extras=extras)
    cores = float(measured.get("coreCount", 1.0))
    if "coreCount" not in measured:
        extras[CORES_UNSTATED] = True
    memory = measured.get("memoryInBytes")
    wait = seconds_after(origin, measured.get("executedAt"))
    rest = {name: value for name, value in measured.items() if name not in _EXEC_TASK_MAPPED}
    if wait is not None:
        del rest["executedAt"]
    application = _program(rest)
    if rest:
        extras[EXECUTION_MEMBERS] = rest
    return Task(id=task_id, runtime_s=float(measured["runtimeInSeconds"]),
                request=ResourceRequest(cores=cores), dependencies=tuple(dependencies),
                wait_time_s=wait,
                used_memory_mb=None if memory is None else used_memory_mb(memory, cores),
                application=application, extras=extras)


def _program(members: dict[str, Any]) -> str | None:
    """The ``command``'s ``program`` of an execution task's other ``members``, taken out of
    them (the rest of the command, its ``arguments``, stays)."""
    command = members.get("command")
    if not isinstance(command, dict) or not isinstance(command.get("program"), str) \
            or not command["program"]:
        return None
    rest = {name: value for name, value in command.items() if name != "program"}
    if rest:
        members["command"] = rest
    else:
        del members["command"]
    return str(command["program"])


def _machine(raw: dict[str, Any]) -> Machine:
    extras = _group(MACHINE_MEMBERS, raw, _MACHINE_MAPPED)
    cpus: tuple[ProcessingUnit, ...] = ()
    cpu = raw.get("cpu")
    if cpu is not None and "coreCount" in cpu:
        speed = cpu.get("speedInMHz")
        cpus = (ProcessingUnit(cores=cpu["coreCount"],
                               clock_rate_hz=None if speed is None else speed * 1e6,
                               manufacturer=cpu.get("vendor")),)
        extras.update(_group(CPU_MEMBERS, cpu, _CPU_MAPPED))
    elif cpu is not None:
        extras[CPU_MEMBERS] = cpu
    memory = raw.get("memoryInBytes")
    return Machine(name=raw["nodeName"], os=raw.get("system"), arch=raw.get("architecture"),
                   cpus=cpus,
                   memory=() if memory is None else (StorageUnit(memory / BYTES_PER_MB),),
                   extras=extras)


def critical_path(tasks: list[Task]) -> float:
    """The longest chain of runtimes along dependencies (unknown runtimes count 0): the
    makespan with unlimited machines, written when a workload states none. A task on a
    dependency cycle (which no reader lets through) counts its own runtime only."""
    index_of = {task.id: index for index, task in enumerate(tasks)}
    needs = [[index_of[d] for d in dict.fromkeys(task.dependencies)
              if d in index_of and index_of[d] != index] for index, task in enumerate(tasks)]
    waiting = [len(found) for found in needs]
    dependents: list[list[int]] = [[] for _ in tasks]
    for index, found in enumerate(needs):
        for target in found:
            dependents[target].append(index)
    start = [0.0] * len(tasks)
    finish = [task.runtime_s or 0.0 for task in tasks]
    ready = [index for index, count in enumerate(waiting) if count == 0]
    while ready:
        done = ready.pop()
        finish[done] = start[done] + (tasks[done].runtime_s or 0.0)
        for child in dependents[done]:
            start[child] = max(start[child], finish[done])
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return max(finish, default=0.0)


# --------------------------------------------------------------------------- normal form


def _written_id(value: object) -> Id | None:
    """The id WfFormat writes and reads back for a model id, ``None`` if it has none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and _REFERENCE.fullmatch(value):
        return id_from_text(value)
    return None


def _has_execution(workload: Workload) -> bool:
    return any(task.runtime_s is not None and math.isfinite(task.runtime_s)
               for task in workload.tasks())


@dataclass
class _Normalizer:
    lost: set[str] = field(default_factory=set)

    def changed(self, path: str, before: Any, after: Any) -> Any:
        if before != after:
            self.lost.add(path)
        return after

    def document(self, document: Document) -> Document:
        workload = document.workload
        executed = workload is not None and _has_execution(workload)
        if workload is not None:
            workload = self.workload(workload, executed)
        environment = document.environment
        if environment is not None:
            if executed:
                environment = self.environment(environment)
            elif any(True for _ in environment.machines()):
                self.lost.add("environment")
                environment = None
            else:
                environment = None
        return replace(document, environment=environment, workload=workload)

    def workload(self, workload: Workload, executed: bool) -> Workload:
        tasks = [task for job in workload.jobs for task in job.tasks]
        numbering, renumbered = written_ids([task.id for task in tasks], _written_id)
        if renumbered:
            self.lost.add("task.id")
        origin = workload.time_origin
        if origin is not None and (not executed or origin == NO_TIME_ORIGIN
                                   or instant(origin) is None):
            origin = self.changed("workload.time_origin", workload.time_origin, None)
        start = origin_instant(origin)
        tasks = [self.task(task, numbering, start) for task in tasks]
        name = workload.name if workload.name else NO_NAME
        if workload.name == "":
            self.lost.add("workload.name")
        description = workload.description or None
        self.changed("workload.description", workload.description, description)
        extras = dict(workload.extras)
        makespan = workload.makespan_s
        if not executed:
            extras.pop(EXECUTION_MEMBERS, None)
            makespan = self.changed("workload.makespan_s", makespan, None)
        elif makespan is not None and not math.isfinite(makespan):
            makespan = self.changed("workload.makespan_s", makespan, None)
        elif makespan == critical_path(tasks):
            makespan = None  # the file says the same: a makespan equal to the critical path
        # the job grouping stays: restrict flattens it (WfFormat does not hold jobs) and
        # reports it; a job that is already one task under the task's id follows its id
        normal_tasks = iter(tasks)
        jobs = []
        for job in workload.jobs:
            members = tuple(next(normal_tasks) for _ in job.tasks)
            single = len(job.tasks) == 1 and job.id == job.tasks[0].id
            jobs.append(replace(job, id=members[0].id if single else job.id, tasks=members))
        return replace(workload, jobs=tuple(jobs), name=name, description=description,
                       time_origin=origin, makespan_s=makespan, extras=extras)

    def task(self, task: Task, numbering: dict[Id, Id], origin: datetime | None) -> Task:
        dependencies = tuple(dict.fromkeys(
            numbering[d] for d in task.dependencies if d in numbering and d != task.id))
        if len(dependencies) != len(task.dependencies):
            self.lost.add("task.dependencies")
        request = task.request
        # coreCount is all the task's cores, whatever nodes they were on: the cores of one
        # node (dcx.core.shapes), the node count lost unless the request is for cores
        # anywhere, whose split into nodes means nothing
        cores, memory = one_node(request.nodes, request.cores, request.memory_mb)
        if request.nodes != 1 and not only_resplit(request.placement, request.nodes,
                                                   request.cores, cores):
            self.lost.add("task.request.nodes")
        runtime = task.runtime_s
        extras = dict(task.extras)
        if runtime is not None and not math.isfinite(runtime):  # JSON has no infinity
            runtime = self.changed("task.runtime_s", runtime, None)
        recorded: dict[str, Any] = {}
        if runtime is None:  # no execution entry: none of its cores, on however many nodes
            cores = self.changed("task.request.cores", request.total_cores, 1.0)
            extras.pop(EXECUTION_MEMBERS, None)
            recorded = {"wait_time_s": None, "used_memory_mb": None, "application": None}
        else:
            if not (cores >= 1 and math.isfinite(cores)):
                cores = self.changed("task.request.cores", cores, 1.0)
            recorded = self.recorded(task, cores, origin, extras)
        for field_name, value in recorded.items():
            self.changed(f"task.{field_name}", getattr(task, field_name), value)
        if extras.get(CORES_UNSTATED) is not True or runtime is None or cores != 1:
            extras.pop(CORES_UNSTATED, None)  # a flag of the file's own, never a loss
        task_id = numbering[task.id]
        name = extras.get(TASK_NAME)
        if name is not None and (not isinstance(name, str) or not name
                                 or name == str(task_id)):
            del extras[TASK_NAME]
        # every task of the file is submitted when the workflow starts: its start is its wait
        submit = self.changed("task.submit_time_s", task.submit_time_s, 0.0)
        return replace(task, id=task_id, dependencies=dependencies, extras=extras,
                       submit_time_s=submit, runtime_s=runtime,
                       request=replace(request, nodes=1, cores=cores, memory_mb=memory),
                       **recorded)

    @staticmethod
    def recorded(task: Task, cores: float, origin: datetime | None,
                 extras: Extras) -> dict[str, Any]:
        """The recorded fields an execution task keeps of ``task`` (see ``recorded``): an
        ``executedAt`` or ``command.program`` kept in ``extras`` reads back as the field where
        the field has no value, and gives way to it where it has one (``extras`` changes in
        place)."""
        members = extras.get(EXECUTION_MEMBERS)
        members = dict(members) if isinstance(members, dict) else {}
        wait = normal_wait(origin, task.submit_time_s, task.wait_time_s)
        if "executedAt" in members and (
                wait is not None or seconds_after(origin, members["executedAt"]) is not None):
            wait = wait if wait is not None else seconds_after(origin, members["executedAt"])
            del members["executedAt"]
        program = _program(members)
        application = task.application or None
        if application is None:
            application = program
        if members:
            extras[EXECUTION_MEMBERS] = members
        else:
            extras.pop(EXECUTION_MEMBERS, None)
        return {"wait_time_s": wait,
                "used_memory_mb": normal_used_memory(task.used_memory_mb, cores),
                "application": application}

    def environment(self, environment: Environment) -> Environment:
        position = 0
        taken: set[str] = set()

        def normal(machine: Machine | None) -> Machine | None:
            nonlocal position
            if machine is None:
                return None
            position += 1
            return self.machine(machine, position, taken)

        return replace(environment, datacenters=tuple(replace(dc, rooms=tuple(
            replace(room, racks=tuple(replace(rack, slots=tuple(map(normal, rack.slots)))
                                      for rack in room.racks)) for room in dc.rooms))
            for dc in environment.datacenters))

    def machine(self, machine: Machine, position: int, taken: set[str]) -> Machine:
        name = required_machine_name(machine, position, bool)
        if name in taken:
            suffix = 2
            while f"{name}-{suffix}" in taken:
                suffix += 1
            name = f"{name}-{suffix}"
        taken.add(name)
        if machine.name is not None:
            self.changed("machine.name", machine.name, name)
        cpus = machine.cpus
        if len(cpus) > 1:  # as restrict merges sockets, before the clock is rounded
            self.lost.add("machine.cpus.sockets")  # merged here, restrict finds one CPU
            cpus = (replace(cpus[0], cores=machine.core_count,
                            clock_rate_hz=machine.clock_rate_hz),)
        if cpus and cpus[0].cores < 1:
            cpus = self.changed("machine.cpus", cpus, ())
        if cpus:
            cpu = cpus[0]
            clock = cpu.clock_rate_hz
            if clock is not None:
                megahertz = round(clock / 1e6) if math.isfinite(clock) else 0
                clock = self.changed("cpu.clock_rate_hz", clock,
                                     megahertz * 1e6 if megahertz >= 1 else None)
            vendor = cpu.manufacturer or None
            self.changed("cpu.vendor", (cpu.manufacturer, cpu.family, cpu.generation, cpu.model),
                         (vendor, None, None, None))
            cpus = (replace(cpu, clock_rate_hz=clock, manufacturer=vendor, family=None,
                            generation=None, model=None),)
        memory = machine.memory
        if memory:
            total = sum(unit.capacity_mb for unit in memory)
            whole = round(total * BYTES_PER_MB) if math.isfinite(total) else 0
            capacity = whole / BYTES_PER_MB
            memory = (replace(memory[0], capacity_mb=capacity),) if whole >= 1 else ()
            self.changed("machine.memory", total, capacity if whole >= 1 else None)
        os = machine.os if machine.os in SYSTEMS else None
        self.changed("machine.os", machine.os, os)
        arch = machine.arch or None
        self.changed("machine.arch", machine.arch, arch)
        return replace(machine, name=name, cpus=cpus, memory=memory, os=os, arch=arch)


def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    normalizer = _Normalizer()
    return normalizer.document(document), frozenset(normalizer.lost)


def normal_form(document: Document) -> Document:
    """What a WfFormat file makes of ``document`` (see Normal form)."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    return _normalized(document)[1]


def leaves_out(document: Document) -> str:
    """Why a WfFormat file cannot hold the machines or tasks of ``document``."""
    workload = document.workload
    if workload is None or not any(True for _ in workload.tasks()):
        return "WfFormat lists machines only in a workflow's execution, and this file has no tasks"
    if not _has_execution(workload):
        return ("WfFormat lists machines only in a workflow's execution, and no task of this "
                "file has a runtime")
    return ""


# --------------------------------------------------------------------------- write


def write(document: Document) -> WriteResult:
    """A WfFormat 1.5 instance for ``normal_form(document)``."""
    normal = normal_form(document)
    workload = normal.workload
    tasks = list(workload.tasks()) if workload is not None else []
    if workload is None or not tasks:
        return _unwritable("WfFormat requires at least one task, and the document has none")
    extras = workload.extras
    root: dict[str, Any] = {"name": workload.name or NO_NAME}
    if workload.description is not None:
        root["description"] = workload.description
    root.update(_members(extras.get(INSTANCE_MEMBERS), _ROOT_MAPPED))
    root["schemaVersion"] = VERSION
    workflow: dict[str, Any] = {"specification": _specification(tasks, extras)}
    if any(task.runtime_s is not None for task in tasks):
        workflow["execution"] = _execution(tasks, workload, normal.environment)
    workflow.update(_members(extras.get(WORKFLOW_MEMBERS), _WORKFLOW_MAPPED))
    root["workflow"] = workflow
    data, problem = serialised_against(SCHEMA, root)
    return _unwritable(problem) if problem is not None else WriteResult(data)


def _unwritable(reason: str) -> WriteResult:
    return WriteResult(b"", diagnostics=(error(f"cannot write WfFormat: {reason}",
                                               "wfformat.unwritable"),))


def _members(group: Any, mapped: frozenset[str]) -> dict[str, Any]:
    """A group of members kept under a ``wfformat:`` key, without those dcx writes itself."""
    if not isinstance(group, dict):
        return {}
    return {key: value for key, value in group.items() if key not in mapped}


def _number(value: float) -> float | int:
    """Whole numbers without ``.0``, as WfCommons' own files write them."""
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _specification(tasks: list[Task], extras: Extras) -> dict[str, Any]:
    children: dict[Id, list[str]] = {task.id: [] for task in tasks}
    for task in tasks:
        for dependency in task.dependencies:
            children[dependency].append(str(task.id))
    written = []
    for task in tasks:
        item: dict[str, Any] = {
            "name": task.extras.get(TASK_NAME, str(task.id)), "id": str(task.id),
            "parents": [str(d) for d in task.dependencies], "children": children[task.id]}
        item.update(_members(task.extras.get(TASK_MEMBERS), _SPEC_TASK_MAPPED))
        written.append(item)
    specification: dict[str, Any] = {"tasks": written}
    specification.update(_members(extras.get(SPECIFICATION_MEMBERS), _SPECIFICATION_MAPPED))
    return specification


def _execution(tasks: list[Task], workload: Workload,
               environment: Environment | None) -> dict[str, Any]:
    makespan = workload.makespan_s
    origin = origin_instant(workload.time_origin)
    execution: dict[str, Any] = {
        "makespanInSeconds": _number(critical_path(tasks) if makespan is None else makespan),
        "executedAt": workload.time_origin or NO_TIME_ORIGIN,
        "tasks": [_measured(task, origin) for task in tasks if task.runtime_s is not None]}
    machines = list(environment.machines()) if environment is not None else []
    if machines:
        execution["machines"] = [_machine_object(machine) for machine in machines]
    execution.update(_members(workload.extras.get(EXECUTION_MEMBERS), _EXECUTION_MAPPED))
    return execution


def _measured(task: Task, origin: datetime | None) -> dict[str, Any]:
    item: dict[str, Any] = {"id": str(task.id), "runtimeInSeconds": _number(task.runtime_s or 0.0)}
    start = task_start(origin, task.submit_time_s, task.wait_time_s)
    if start is not None:
        item["executedAt"] = start
    if task.application is not None:
        item["command"] = {"program": task.application}
    if task.extras.get(CORES_UNSTATED) is not True:
        item["coreCount"] = _number(task.request.cores)
    if task.used_memory_mb is not None:
        item["memoryInBytes"] = memory_bytes(task.used_memory_mb, task.request.cores)
    members = _members(task.extras.get(EXECUTION_MEMBERS), _EXEC_TASK_MAPPED)
    command = members.pop("command", None)
    if isinstance(command, dict) and "command" in item:
        item["command"].update(command)
    elif command is not None:
        item["command"] = command
    item.update(members)
    return item


def _machine_object(machine: Machine) -> dict[str, Any]:
    item: dict[str, Any] = {"nodeName": machine.name}
    if machine.os is not None:
        item["system"] = machine.os
    if machine.arch is not None:
        item["architecture"] = machine.arch
    if machine.memory:
        item["memoryInBytes"] = round(machine.memory_mb * BYTES_PER_MB)
    if machine.cpus:
        cpu = machine.cpus[0]
        described: dict[str, Any] = {"coreCount": cpu.cores}
        if cpu.clock_rate_hz is not None:
            described["speedInMHz"] = round(cpu.clock_rate_hz / 1e6)
        if cpu.manufacturer is not None:
            described["vendor"] = cpu.manufacturer
        described.update(_members(machine.extras.get(CPU_MEMBERS), _CPU_MAPPED))
        item["cpu"] = described
    elif isinstance(machine.extras.get(CPU_MEMBERS), dict):
        item["cpu"] = machine.extras[CPU_MEMBERS]
    item.update(_members(machine.extras.get(MACHINE_MEMBERS), _MACHINE_MAPPED))
    return item
