"""WfFormat 1.0 to 1.4 read in the 1.5 shape, as WfCommons' migration tool
(``tools/wfcommons-migrate-instance.py``) moves each member, and JSON Pointers of the 1.5
shape led back to where the member is in the file.

The shapes (upstream schema of each version):

* 1.0 to 1.2: ``workflow.{makespan, executedAt, jobs, machines}``; a job has ``name``,
  ``type``, ``runtime`` (s), ``cores``, ``parents`` (job names), ``files[{name, size, link}]``,
  ``memory`` and ``bytesRead``/``bytesWritten`` (KB), ``machine``; machines have
  ``memory`` (KB) and ``cpu{count, speed}``.
* 1.3: the same, with ``tasks`` for ``jobs`` and a task ``id`` and ``category``.
* 1.4: ``workflow.{makespanInSeconds, executedAt, tasks, machines}``; a task has
  ``runtimeInSeconds``, ``memoryInBytes``, ``readBytes``, ``writtenBytes``, ``energy``,
  ``avgPower``, files with ``sizeInBytes``; machines ``memoryInBytes``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

LEGACY_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4")
KILO = 1000
"""The migration tool's factor from the KB of 1.0-1.3 to bytes."""

_RENAMED_EXECUTION = {
    "command": "command", "cores": "coreCount", "avgCPU": "avgCPU", "readBytes": "readBytes",
    "writtenBytes": "writtenBytes", "memoryInBytes": "memoryInBytes",
    "energy": "energyInKWh", "avgPower": "avgPowerInW", "priority": "priority"}
"""1.4 task members that 1.5 keeps on the execution entry, by their 1.5 names."""
_MOVED = frozenset({"name", "id", "parents", "children", "files", "runtime",
                    "runtimeInSeconds", "memory", "bytesRead", "bytesWritten", "machine",
                    *_RENAMED_EXECUTION})


@dataclass
class Upgrade:
    """A legacy instance in the 1.5 shape, and where each 1.5 member came from."""

    root: dict[str, Any]
    list_key: str
    """``jobs`` (1.0-1.2) or ``tasks`` (1.3, 1.4): the legacy task list's member."""
    had_children: list[bool] = field(default_factory=list)

    def source_pointer(self, pointer: str, original: dict[str, Any]) -> str:
        """The pointer into the legacy file for a pointer of the 1.5 shape: the member it
        was moved from, or the nearest object holding it."""
        tasks = f"/workflow/{self.list_key}"
        match = re.fullmatch(r"/workflow/(specification|execution)/tasks/(\d+)(/.*)?", pointer)
        if match is not None:
            part, index, rest = match.group(1), int(match.group(2)), match.group(3) or ""
            base = f"{tasks}/{index}"
            if rest.startswith(("/parents", "/children")) and part == "specification":
                children = rest.startswith("/children")
                return base if children and not self.had_children[index] else base + rest
            if rest.startswith("/id"):
                return base + "/name"
            if rest.startswith("/machines"):
                return base + "/machine"
            return base + ("/files" if rest.startswith(("/inputFiles", "/outputFiles")) else "")
        match = re.fullmatch(r"/workflow/execution/machines(/\d+)?(/.*)?", pointer)
        if match is not None:
            return _existing(original, f"/workflow/machines{match.group(1) or ''}"
                                       f"{match.group(2) or ''}")
        if pointer.startswith("/workflow/execution/executedAt"):
            return "/workflow/executedAt"
        return _existing(original, pointer)


def _existing(root: Any, pointer: str) -> str:
    """The longest prefix of ``pointer`` that names a value of ``root``."""
    kept: list[str] = []
    node = root
    for token in pointer.split("/")[1:]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            break
        kept.append(token)
    return "".join(f"/{token}" for token in kept)


def upgraded(root: dict[str, Any]) -> Upgrade:
    """``root`` (a valid 1.0-1.4 instance) in the 1.5 shape. Tasks are identified by
    ``name``, which is what legacy ``parents`` name; the task id is the name, or
    ``name_id`` where a 1.3/1.4 ``id`` is not part of the name (the migration tool's rule)."""
    version = root["schemaVersion"]
    workflow = root["workflow"]
    list_key = "jobs" if "jobs" in workflow and version in ("1.0", "1.1", "1.2") else "tasks"
    legacy_tasks: list[dict[str, Any]] = workflow[list_key]
    kilobytes = version != "1.4"
    pegasus = "pegasus" in str((root.get("wms") or {}).get("name", "")).lower()
    id_of = {task["name"]: _task_id(task) for task in legacy_tasks}
    upgrade = Upgrade(root={}, list_key=list_key)
    children: dict[str, list[str]] = {id_of[task["name"]]: [] for task in legacy_tasks}
    for task in legacy_tasks:
        for parent in task.get("parents", ()):
            if parent in id_of:
                children[id_of[parent]].append(id_of[task["name"]])
    files: dict[str, int] = {}
    specification_tasks = []
    execution_tasks = []
    for task in legacy_tasks:
        task_id = id_of[task["name"]]
        upgrade.had_children.append("children" in task)
        listed = [id_of.get(child, child) for child in task.get("children", ())]
        spec: dict[str, Any] = {
            "name": task["name"], "id": task_id,
            "parents": [id_of.get(parent, parent) for parent in task.get("parents", ())],
            "children": listed if "children" in task else children[task_id]}
        for item in task.get("files", ()):
            file_id = item.get("path", "") + item["name"]
            size = item.get("sizeInBytes", item.get("size", 0))
            files.setdefault(file_id, size)
            key = "inputFiles" if item["link"].lower() == "input" else "outputFiles"
            spec.setdefault(key, []).append(file_id)
        spec.update({key: value for key, value in task.items() if key not in _MOVED})
        specification_tasks.append(spec)
        execution_tasks.append(_execution_task(task, task_id, kilobytes, pegasus))
    specification: dict[str, Any] = {"tasks": specification_tasks}
    if files:
        specification["files"] = [{"id": key, "sizeInBytes": size}
                                  for key, size in files.items()]
    execution: dict[str, Any] = {
        "makespanInSeconds": workflow.get("makespanInSeconds", workflow.get("makespan")),
        "executedAt": workflow["executedAt"], "tasks": execution_tasks}
    if "machines" in workflow:
        execution["machines"] = [_machine(machine, kilobytes) for machine in workflow["machines"]]
    rest = {key: value for key, value in workflow.items()
            if key not in {list_key, "makespan", "makespanInSeconds", "executedAt", "machines"}}
    root_out = {key: value for key, value in root.items() if key not in {"workflow", "wms"}}
    wms = root.get("wms")
    if isinstance(wms, dict) and isinstance(wms.get("name"), str) and \
            isinstance(wms.get("version"), str) and wms["name"] and wms["version"]:
        root_out["runtimeSystem"] = wms
    elif wms is not None:
        root_out["wms"] = wms
    root_out["workflow"] = {"specification": specification, "execution": execution, **rest}
    upgrade.root = root_out
    return upgrade


def _task_id(task: dict[str, Any]) -> str:
    name: str = task["name"]
    legacy_id = task.get("id")
    if not isinstance(legacy_id, str) or legacy_id in name:
        return name
    return f"{name}_{legacy_id}"


def _execution_task(task: dict[str, Any], task_id: str, kilobytes: bool,
                    pegasus: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": task_id,
                             "runtimeInSeconds": task.get("runtimeInSeconds",
                                                          task.get("runtime", 0))}
    for old, new in _RENAMED_EXECUTION.items():
        if old in task:
            entry[new] = task[old]
    if kilobytes:
        factor = 1 if pegasus else KILO  # the migration tool's exception for Pegasus logs
        if "memory" in task:
            entry["memoryInBytes"] = task["memory"] * KILO
        if "bytesRead" in task:
            entry["readBytes"] = task["bytesRead"] * factor
        if "bytesWritten" in task:
            entry["writtenBytes"] = task["bytesWritten"] * factor
    if "machine" in task:
        entry["machines"] = [task["machine"]]
    return entry


def _machine(machine: dict[str, Any], kilobytes: bool) -> dict[str, Any]:
    out = {key: value for key, value in machine.items() if key not in {"memory", "cpu"}}
    if kilobytes and "memory" in machine:
        out["memoryInBytes"] = machine["memory"] * KILO
    elif "memory" in machine:
        out["memory"] = machine["memory"]
    cpu = machine.get("cpu")
    if isinstance(cpu, dict):
        renamed = {"count": "coreCount", "speed": "speedInMHz"}
        out["cpu"] = {renamed.get(key, key): value for key, value in cpu.items()}
    return out
