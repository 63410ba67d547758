"""Reading, normal form and writing of Batsim JSON workloads; the package's docstring
(``dcx.formats.batsim``) is the format's reference text."""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, TypeGuard

from dcx.core.columns import (
    JobRows,
    Strings,
    WorkloadColumns,
    all_distinct,
    columnar,
    columns_of,
)
from dcx.core.diagnostics import Diagnostic, ReadResult, WriteResult, error, warning
from dcx.core.limits import paused_gc
from dcx.core.located import Place
from dcx.core.memo import last_result
from dcx.core.model import (
    TRACE_FIELDS,
    UNRECORDED,
    Document,
    Extras,
    Id,
    Job,
    Placement,
    ResourceRequest,
    StartMode,
    Task,
    Workload,
    direct_constructor,
)
from dcx.core.shapes import (
    only_resplit,
    only_resplit_rows,
    single_core_node_columns,
    single_core_nodes,
)
from dcx.formats.batsim import SCHEMA

PREFIX = "batsim:"
PROFILE_KEY = "batsim:profile"
PROFILES_KEY = "batsim:profiles"
NB_RES_KEY = "batsim:nb_res"
VERSION_KEY = "batsim:version"
JOB_FIELDS = frozenset({"id", "subtime", "walltime", "res", "profile"})
TOP_FIELDS = frozenset({"nb_res", "jobs", "profiles"})
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

V4_TYPES = frozenset({
    "delay", "parallel", "parallel_homogeneous", "parallel_homogeneous_total", "composed",
    "parallel_homogeneous_pfs", "data_staging", "send", "recv", "smpi", "usage_trace"})
V5_TYPES = frozenset({
    "DelayProfile", "ParallelTaskProfile", "ParallelTaskHomogeneousProfile",
    "SequentialCompositionProfile", "ParallelTaskOnStorageHomogeneousProfile",
    "ParallelTaskDataStagingBetweenStoragesProfile", "ForkJoinCompositionProfile",
    "ParallelTaskMergeCompositionProfile", "TraceReplayProfile"})
DELAY_TYPE = {4: "delay", 5: "DelayProfile"}
_DELAY_TYPES = frozenset(DELAY_TYPE.values())
_SEQUENCE_TYPES = frozenset({"composed", "SequentialCompositionProfile"})
_PARALLEL_TYPES = frozenset({"parallel", "ParallelTaskProfile"})

_WORKLOAD_NAME = re.compile(r"w[0-9]")
"""Part of a name Batsim would take for a workload name (``w0``, ``w1`` …)."""
_QUALIFIED_ID = re.compile(r"(w[0-9]+)!+([^!]+)")


@lru_cache(maxsize=1 << 16)
def delay_profile_name(seconds: float) -> str:
    """The name dcx gives a delay profile of ``seconds``: ``delay120``, ``delay20.25``."""
    return f"delay{_number_text(seconds)}"


def _number_text(value: float) -> str:
    value = float(value)  # an int from a reader that keeps them has no is_integer (3.11)
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


def _json_number(value: float) -> int | float:
    """Integral seconds as JSON integers (``0``, not ``0.0``), others as they are."""
    value = float(value)
    return int(value) if value.is_integer() and abs(value) < 1e16 else value


def _number_json(value: float) -> str:
    """``_json_number`` as JSON text."""
    return _number_text(value)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_delay(definition: Any) -> bool:
    return isinstance(definition, dict) and definition.get("type") in _DELAY_TYPES


def waiting_runtime(name: object, profiles: dict[str, Any],
                    seen: frozenset[str] = frozenset()) -> float | None:
    """The seconds a profile that only waits runs: a delay's ``delay``; a sequence's
    (``composed``) ``repeat`` times the sum of its members' when each of them only waits.
    ``None`` for any other profile: a compute profile's time depends on the platform's
    speeds (and a sequence that names itself never ends)."""
    if not isinstance(name, str):
        return None
    definition = profiles.get(name)
    if not isinstance(definition, dict) or name in seen:
        return None
    if _is_delay(definition):
        delay = definition.get("delay")
        return float(delay) if isinstance(delay, int | float) and not isinstance(
            delay, bool) else None
    members, repeat = definition.get("seq"), definition.get("repeat", 1)
    if definition.get("type") not in _SEQUENCE_TYPES or not isinstance(members, list) \
            or not _is_int(repeat) or repeat < 1:
        return None
    total = 0.0
    for member in members:
        runtime = waiting_runtime(member, profiles, seen | {name})
        if runtime is None:
            return None
        total += runtime
    runtime = total * repeat
    return runtime if math.isfinite(runtime) else None


def _version_of(profile_type: str) -> int | None:
    return 4 if profile_type in V4_TYPES else 5 if profile_type in V5_TYPES else None


def _names_a_workload(text: str) -> bool:
    return _WORKLOAD_NAME.search(text) is not None


# --------------------------------------------------------------------------- read


class _Checks:
    """The located diagnostics of one read."""

    def __init__(self, locator: Any) -> None:
        self.locator = locator
        self.found: list[Diagnostic] = []

    def add(self, diagnostic: Diagnostic, key: bool = False) -> None:
        self.found.append(self.locator.diagnostic(diagnostic, key=key))

    @property
    def failed(self) -> bool:
        return any(d.is_error for d in self.found)


def read(data: bytes) -> ReadResult:
    with paused_gc():
        return _read(data)


def _read(data: bytes) -> ReadResult:
    from dcx.parsing.jsonio import model_locator
    from dcx.parsing.schemas import loaded_against

    loaded, problems = loaded_against(SCHEMA, data, "a Batsim workload", "batsim.not-object")
    if loaded is None:
        return ReadResult(None, tuple(problems))
    root = loaded.value
    checks = _Checks(loaded.locator)
    if not _is_int(root["nb_res"]):
        checks.add(error(f"nb_res is {root['nb_res']!r}; Batsim needs a JSON integer",
                         "batsim.integer", pointer="/nb_res"))
    profiles: dict[str, Any] = root["profiles"]
    version = _check_profiles(profiles, checks)
    uses = _profile_uses(profiles)
    columns = _plain_job_columns(root["jobs"], uses)
    tasks: list[Task | None] = []
    if columns is None:
        tasks = [_job_task(index, job, uses, checks) for index, job in enumerate(root["jobs"])]
        _check_ids(root["jobs"], checks)
    attributes: dict[str, Any] = {}
    for key, value in root.items():
        if key in TOP_FIELDS:
            continue
        if ":" in key:
            checks.add(warning(f"top-level member {key!r} is not kept: names with ':' are "
                               "reserved for formats' own data", "batsim.prefixed-key",
                               pointer=f"/{_escape(key)}"), key=True)
            continue
        attributes[key] = value
    if checks.failed:
        return ReadResult(None, tuple(checks.found))
    built = [task for task in tasks if task is not None]
    extras: Extras = {}
    kept = _kept_in_file(profiles, root["jobs"])
    if kept:
        extras[PROFILES_KEY] = kept
    nodes = (task.request.nodes for task in built) if columns is None else (
        [int(columns.nodes.max())] if len(columns) else [])
    nb_res = root["nb_res"]
    if nb_res != _derived_nb_res(nodes):
        if MACHINE_SIZE_KEY not in attributes:
            attributes[MACHINE_SIZE_KEY] = nb_res  # the machine's size, as SWF says it
        elif attributes[MACHINE_SIZE_KEY] != nb_res:
            extras[NB_RES_KEY] = nb_res
    if version == 5:
        extras[VERSION_KEY] = 5
    workload = Workload(jobs=tuple(_new_job({"id": task.id, "tasks": (task,), "name": None,
                                             "user": None, "extras": {}})
                                   for task in built),
                        attributes=attributes, extras=extras)
    if columns is not None:
        workload = columnar(workload, columns)
    return ReadResult(Document(workload=workload), tuple(checks.found),
                      locator=model_locator(loaded.locator, _source))


def _source(place: Place) -> str | None:
    """The JSON Pointer a model object was read from: a job and its one task are the job
    object at the same index (a read that leaves a job out fails); the workload the root."""
    return place.pointer({"jobs": "/jobs"}) if place.part == "workload" else None


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _check_profiles(profiles: dict[str, Any], checks: _Checks) -> int | None:
    """Profile types of one version, known; sequences naming existing profiles. Returns the
    version the names say (``None``: no profile says)."""
    versions: dict[int, str] = {}
    for name, definition in profiles.items():
        pointer = f"/profiles/{_escape(name)}"
        profile_type = definition["type"]
        version = _version_of(profile_type)
        if version is None:
            checks.add(warning(
                f"profile {name!r} has type {profile_type!r}, which Batsim does not know "
                "(4.x: delay, parallel, parallel_homogeneous, composed …; 5.x: DelayProfile, "
                "ParallelTaskProfile …)", "batsim.unknown-profile-type",
                pointer=f"{pointer}/type"))
            continue
        versions.setdefault(version, name)
        if profile_type in _SEQUENCE_TYPES:
            for position, member in enumerate(definition["seq"]):
                if member not in profiles:
                    checks.add(error(f"profile {name!r} runs profile {member!r}, which the "
                                     "file does not define", "batsim.unknown-profile",
                                     pointer=f"{pointer}/seq/{position}"))
        if profile_type in _PARALLEL_TYPES and "cpu" in definition and "com" in definition:
            hosts = len(definition["cpu"])
            if len(definition["com"]) != hosts * hosts:
                checks.add(error(f"profile {name!r} has {len(definition['com'])} com values; "
                                 f"{hosts} hosts need {hosts * hosts}", "batsim.profile-size",
                                 pointer=f"{pointer}/com"))
    if len(versions) > 1:
        checks.add(error(f"profile types mix Batsim 4.x names ({versions[4]!r}) and 5.x names "
                         f"({versions[5]!r}); each version refuses the other's",
                         "batsim.mixed-versions",
                         pointer=f"/profiles/{_escape(versions[5])}/type"))
    version = next(iter(versions), None)
    if version == 5:
        for name in profiles:
            if _names_a_workload(name):
                checks.add(warning(
                    f"profile name {name!r} contains a workload name (w0, w1 …): Batsim 5 "
                    "takes it for WORKLOAD!NAME and fails to find it when the file is that "
                    "workload", "batsim.id-names-workload",
                    pointer=f"/profiles/{_escape(name)}"), key=True)
    return version


_Profile = tuple[float | None, bool, int | None]
"""What a job takes from its profile: the runtime of a profile that only waits
(``waiting_runtime``), whether the task keeps the profile's name (not the one dcx gives
that delay), the hosts a ``parallel`` profile is for."""


def _profile_uses(profiles: dict[str, Any]) -> dict[str, _Profile]:
    uses: dict[str, _Profile] = {}
    for name, definition in profiles.items():
        runtime = waiting_runtime(name, profiles)
        hosts = len(definition["cpu"]) if definition["type"] in _PARALLEL_TYPES \
            and "cpu" in definition else None
        uses[name] = (runtime, runtime is None or not _is_delay(definition)
                      or name != delay_profile_name(runtime), hosts)
    return uses


def _job_task(index: int, job: dict[str, Any], profiles: dict[str, _Profile],
              checks: _Checks) -> Task | None:
    pointer = f"/jobs/{index}"
    job_id, res = job["id"], job["res"]
    problems = len(checks.found)
    for key, value in (("id", job_id), ("res", res)):
        if not isinstance(value, str) and not _is_int(value):
            checks.add(error(f"{key} is {value!r}; Batsim needs a JSON integer"
                             + (" or a string" if key == "id" else ""), "batsim.integer",
                             pointer=f"{pointer}/{key}"))
    submit = _finite(job["subtime"])
    if submit is None:
        checks.add(error(f"subtime {job['subtime']!r} is too large for Batsim's numbers",
                         "batsim.number", pointer=f"{pointer}/subtime"))
    walltime = _finite(job["walltime"]) if "walltime" in job else None
    if walltime is None and "walltime" in job:
        checks.add(error(f"walltime {job['walltime']!r} is too large for Batsim's numbers",
                         "batsim.number", pointer=f"{pointer}/walltime"))
    elif walltime is not None and walltime <= 0:
        if walltime == -1:
            checks.add(warning("walltime -1 means none in Batsim 4.x; 5.x refuses it (leave "
                               "the member out)", "batsim.walltime-none",
                               pointer=f"{pointer}/walltime"))
        else:
            checks.add(error(f"walltime is {job['walltime']!r}; Batsim needs a positive number "
                             "(or no walltime member)", "batsim.walltime",
                             pointer=f"{pointer}/walltime"))
        walltime = None
    name = job["profile"]
    use = profiles.get(name)
    if use is None:
        checks.add(error(f"job {job_id!r} runs profile {name!r}, which the file does not "
                         "define", "batsim.unknown-profile", pointer=f"{pointer}/profile"))
    elif use[2] is not None and use[2] != res:
        checks.add(error(f"job {job_id!r} asks for {res} hosts but its parallel profile "
                         f"{name!r} is for {use[2]}", "batsim.profile-size",
                         pointer=f"{pointer}/res"))
    if use is None or (len(checks.found) != problems
                       and any(d.is_error for d in checks.found[problems:])):
        return None
    runtime, keeps_name, _ = use
    extras: Extras = {PREFIX + key: value for key, value in job.items()
                      if key not in JOB_FIELDS} if len(job) > 4 else {}
    if keeps_name:
        extras[PROFILE_KEY] = name
    return _new_task({
        "id": job_id, "submit_time_s": submit or 0.0, "runtime_s": runtime,
        "requested_time_s": walltime,
        "request": _new_request({"nodes": res, "cores": 1.0, "memory_mb": None, "gpus": 0,
                                 "resources": (), "os": None, "arch": None,
                                 "features": (), "placement": Placement.NODES}),
        "dependencies": (), "deadline_s": None, "start_mode": StartMode.ANY,
        "start_time_s": None, "preemptible": None, "user": None, "group": None, "image": None,
        "image_size_mb": None, **UNRECORDED, "extras": extras})


def _plain_job_columns(jobs: list[dict[str, Any]], uses: dict[str, _Profile]
                       ) -> WorkloadColumns | None:
    """The tasks ``_job_task`` builds, as columns, when no check of a job can say anything
    (integer ids, all distinct; integer ``res``; finite times; walltimes above 0; delay
    profiles of the name dcx gives them, no other member): a fast path that only accepts,
    anything else is read job by job."""
    import numpy as np

    if any(len(job) != 4 and (len(job) != 5 or "walltime" not in job) for job in jobs):
        return None
    ids, res = [job["id"] for job in jobs], [job["res"] for job in jobs]
    if not all(type(value) is int for value in ids) \
            or not all(type(value) is int for value in res):
        return None
    runtime_of: dict[str, float] = {}
    for name in {job["profile"] for job in jobs}:
        use = uses.get(name)
        if use is None or use[0] is None or use[1] or use[2] is not None:
            return None
        runtime_of[name] = use[0]
    try:
        id_column = np.array(ids, dtype=np.int64)
        nodes = np.array(res, dtype=np.int64)
        submit = np.array([job["subtime"] for job in jobs], dtype=np.float64)
        walltime = np.array([job.get("walltime", math.nan) for job in jobs], dtype=np.float64)
    except OverflowError:
        return None
    given = ~np.isnan(walltime)
    if not (bool(np.isfinite(submit).all()) and bool(np.isfinite(walltime[given]).all())
            and bool((walltime[given] > 0).all()) and all_distinct(id_column)):
        return None
    count = len(jobs)
    none = Strings(np.full(count, -1, dtype=np.int32), ())
    return WorkloadColumns(
        ids=id_column, submit_time_s=submit,
        runtime_s=np.array([runtime_of[job["profile"]] for job in jobs], dtype=np.float64),
        requested_time_s=walltime, nodes=nodes, cores=np.ones(count),
        memory_mb=np.full(count, math.nan), gpus=np.zeros(count, dtype=np.int64),
        deadline_s=np.full(count, math.nan), user=none, group=none,
        dependency_offsets=np.zeros(count + 1, dtype=np.int64),
        dependency_ids=np.zeros(0, dtype=np.int64), extras={}, job_ids=id_column,
        job_offsets=np.arange(count + 1, dtype=np.int64), job_names=none, job_users=none)


# A 100,000-job workload builds its tasks here; every call passes every field, in order.
_new_task = direct_constructor(Task, (
    "id", "submit_time_s", "runtime_s", "requested_time_s", "request", "dependencies",
    "deadline_s", "start_mode", "start_time_s", "preemptible", "user", "group", "image",
    "image_size_mb", *TRACE_FIELDS, "extras"))
_new_request = direct_constructor(ResourceRequest, ("nodes", "cores", "memory_mb", "gpus",
                                                    "resources", "os", "arch", "features",
                                                    "placement"))
_new_job = direct_constructor(Job, ("id", "tasks", "name", "user", "extras"))


def _finite(value: int | float) -> float | None:
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _check_ids(jobs: list[dict[str, Any]], checks: _Checks) -> None:
    first: dict[str, int] = {}
    for index, job in enumerate(jobs):
        job_id = job["id"]
        pointer = f"/jobs/{index}/id"
        if not isinstance(job_id, str | int):
            continue  # reported as batsim.integer
        text = str(job_id)
        if text in first:
            checks.add(error(f"job id {job_id!r} is used again (first by job {first[text]}); "
                             "Batsim compares ids as text", "batsim.duplicate-id",
                             pointer=pointer))
        first.setdefault(text, index)
        if "!" in text:
            qualified = _QUALIFIED_ID.fullmatch(text)
            if qualified is None:
                checks.add(error(f"job id {text!r} has a '!' but is not WORKLOAD!NAME (w0!7)",
                                 "batsim.job-id", pointer=pointer))
            else:
                checks.add(warning(
                    f"job id {text!r} names workload {qualified.group(1)}: Batsim loads the "
                    f"file only as its {qualified.group(1)} workload", "batsim.qualified-id",
                    pointer=pointer))
        elif _names_a_workload(text):
            checks.add(warning(
                f"job id {text!r} contains a workload name (w0, w1 …): Batsim takes it for "
                "WORKLOAD!NAME and aborts when the file is that workload",
                "batsim.id-names-workload", pointer=pointer))


def _kept_in_file(profiles: dict[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """The profiles the tasks do not say: all but plain delays that a job uses and no
    sequence names."""
    used = {job["profile"] for job in jobs}
    in_sequences = {member for definition in profiles.values()
                    if definition["type"] in _SEQUENCE_TYPES for member in definition["seq"]}
    return {name: definition for name, definition in profiles.items()
            if not (_is_delay(definition) and set(definition) == {"type", "delay"}
                    and name in used and name not in in_sequences)}


def _still_kept(profiles: dict[str, Any], used: set[str]) -> dict[str, Any]:
    """``_kept_in_file`` for a normal form whose written tasks name the profiles ``used``: a
    plain delay a written task names is written from the task, as the reader reads it."""
    jobs = [{"profile": name} for name in used]
    return _kept_in_file(profiles, jobs)


def _names_used(tasks: list[Task]) -> set[str]:
    return {task.extras.get(PROFILE_KEY) or delay_profile_name(task.runtime_s or 0.0)
            for task in tasks}


def _derived_nb_res(nodes: Iterable[int]) -> int:
    """``nb_res`` of jobs asking for ``nodes`` hosts: the most any asks for, at least 1."""
    return max([1, *nodes])


# --------------------------------------------------------------------------- normal form


class _Normalizer:
    """Builds the normal form of a workload and records the held field paths it changes."""

    def __init__(self, workload: Workload) -> None:
        self.lost: set[str] = set()
        extras = workload.extras
        version = extras.get(VERSION_KEY)
        if version is not None and not (_is_int(version) and version == 5):
            self.lost.add("workload.extras")
            version = None
        self.version = 5 if version == 5 else 4
        self.profiles = self._kept_profiles(extras.get(PROFILES_KEY))
        self.generated: dict[str, float] = {}

    def _kept_profiles(self, value: Any) -> dict[str, Any]:
        """The kept profiles Batsim of this version accepts, sequences closed."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.lost.add("workload.extras")
            return {}
        from dcx.parsing.schemas import schema_verdict

        kept = {name: definition for name, definition in value.items()
                if isinstance(name, str) and name and isinstance(definition, dict)
                and _version_of(str(definition.get("type"))) == self.version
                and not (self.version == 5 and _names_a_workload(name))
                and schema_verdict(SCHEMA, {"nb_res": 1, "jobs": [],
                                            "profiles": {name: definition}})}
        while True:  # a sequence naming a profile left out goes too
            closed = {name: definition for name, definition in kept.items()
                      if definition["type"] not in _SEQUENCE_TYPES
                      or all(member in kept for member in definition["seq"])}
            if len(closed) == len(kept):
                break
            kept = closed
        if len(kept) != len(value):
            self.lost.add("workload.extras")
        return kept

    def task(self, task: Task, task_id: Id) -> Task | None:
        lost = self.lost
        runtime = task.runtime_s if _positive(task.runtime_s) else None
        request = task.request
        nodes = _node_count(_hosts(request))
        if request.cores != 1 and not only_resplit(request.placement, request.nodes,
                                                   request.cores, nodes):
            # (also of a task left out, as its other values; cores anywhere lose nothing
            # as hosts: only their total means something)
            lost.add("task.request.cores")
        extras = task.extras
        name = extras.get(PROFILE_KEY)
        if name is not None and not self._writable_name(name):
            lost.add("task.extras")
            name = None
        definition = self.profiles.get(name) if name is not None else None
        if runtime is not None:
            if definition is not None and waiting_runtime(name, self.profiles) != runtime:
                lost.add("task.extras")  # the name is another profile's
                name = None
            name = self._delay_name(runtime, name)
        elif definition is None or _is_delay(definition) or not _fits(definition, nodes):
            return None  # no profile to run: left out (the derived ``task`` loss)
        elif task.runtime_s is not None:
            lost.add("task.runtime_s")
        submit = task.submit_time_s if math.isfinite(task.submit_time_s) else 0.0
        requested = task.requested_time_s if _positive(task.requested_time_s) else None
        for path, before, after in (("task.submit_time_s", task.submit_time_s, submit),
                                    ("task.requested_time_s", task.requested_time_s, requested),
                                    ("task.request.nodes", request.nodes,
                                     _node_count(request.nodes)),
                                    ("task.id", task.id, task_id)):
            if before is not after and before != after:
                lost.add(path)
        kept = self._job_extras(extras, None if runtime is not None
                                and name == delay_profile_name(runtime) else name)
        if (task_id is task.id and submit is task.submit_time_s and runtime is task.runtime_s
                and requested is task.requested_time_s and nodes == request.nodes
                and request.cores == 1 and kept is extras):
            return task  # already in normal form: no copy per task
        if nodes != request.nodes or request.cores != 1:
            request = replace(request, nodes=nodes, cores=1.0)
        return Task(**{**task.__dict__, "id": task_id, "submit_time_s": submit,
                       "runtime_s": runtime, "requested_time_s": requested,
                       "request": request, "extras": kept})

    def _writable_name(self, name: object) -> bool:
        return isinstance(name, str) and bool(name) and not (
            self.version == 5 and _names_a_workload(name))

    def _delay_name(self, runtime: float, wanted: str | None) -> str:
        """A profile of ``runtime`` seconds: the one the task names when it can be, else
        ``delay<seconds>`` (with ``-2``, ``-3`` … when that name is another profile's)."""
        if wanted is not None:
            if self._is_delay_of(wanted, runtime):
                return wanted
            self.lost.add("task.extras")  # the name is another profile's
        canonical = delay_profile_name(runtime)
        name, number = canonical, 1
        while not self._is_delay_of(name, runtime):
            number += 1
            name = f"{canonical}-{number}"
        return name

    def _is_delay_of(self, name: str, runtime: float) -> bool:
        """Whether ``name`` is, or can become, the delay profile of ``runtime`` seconds (or
        is a kept sequence of delays that waits that long)."""
        if name in self.profiles:
            return waiting_runtime(name, self.profiles) == runtime
        return self.generated.setdefault(name, runtime) == runtime

    def _job_extras(self, extras: Extras, profile: str | None) -> Extras:
        """The task's extras with its ``batsim:`` keys as they read back: the profile name
        when it is not the one dcx gives (``profile``), job members Batsim can write."""
        if extras.get(PROFILE_KEY) == profile and not any(
                key.startswith(PREFIX) and key != PROFILE_KEY for key in extras):
            return extras
        kept: Extras = {}
        for key, value in extras.items():
            if not key.startswith(PREFIX):
                kept[key] = value  # not Batsim's: restrict decides
            elif key != PROFILE_KEY:
                if key[len(PREFIX):] in JOB_FIELDS or not _json_value(value):
                    self.lost.add("task.extras")
                else:
                    kept[key] = value
        if profile is not None:
            kept[PROFILE_KEY] = profile
        return kept


def _positive(value: float | None) -> bool:
    return value is not None and value > 0 and math.isfinite(value)


def _hosts(request: ResourceRequest) -> Any:
    """The hosts a request takes: a Batsim resource is a host, and a workload's hosts are
    processors (Batsim's SWF converters make ``res`` the SWF job's processors), so several
    cores per node are that many hosts each (``core.shapes``). The cores per node are what
    is lost; the host count carries the total, so it counts as changed only for what it
    cannot hold itself."""
    nodes, cores = request.nodes, request.cores
    if cores == 1 or type(nodes) is not int or type(cores) not in (int, float):
        return nodes
    return single_core_nodes(nodes, cores, None)[0]


def _node_count(nodes: Any) -> int:
    if _is_int(nodes) and 0 <= nodes <= INT32_MAX:
        return int(nodes)
    if isinstance(nodes, float) and math.isfinite(nodes) and nodes > 0:
        return min(math.ceil(nodes), INT32_MAX)
    return 1


def _fits(definition: dict[str, Any], nodes: int) -> bool:
    """A ``parallel`` profile runs on exactly as many hosts as its ``cpu`` array has."""
    return definition["type"] not in _PARALLEL_TYPES or "cpu" not in definition \
        or len(definition["cpu"]) == nodes


def _json_value(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _writable_id(value: Id) -> bool:
    if _is_int(value):
        return INT32_MIN <= value <= INT32_MAX
    return isinstance(value, str) and bool(value) and "!" not in value \
        and not _names_a_workload(value)


def _keeps_ids(ids: list[Id]) -> bool:
    """Whether the written ids are the ids as they are: Batsim takes every one and they stay
    unique as text; otherwise the tasks are numbered 1, 2, … in order (the model's normal
    form for ids)."""
    texts = {str(task_id) for task_id in ids}
    return len(texts) == len(ids) and all(map(_writable_id, ids))


def _keeps_id_column(np: Any, ids: Any) -> bool:
    """``_keeps_ids`` of an id column (integers: unique as numbers is unique as text, and
    ``_writable_id`` asked once per distinct value)."""
    if ids.dtype.kind != "i":
        return _keeps_ids(ids.tolist())
    return all_distinct(ids) and bool(_per_value(np, ids, _writable_id, bool).all())


def _per_value(np: Any, column: Any, rule: Callable[[Any], Any], dtype: Any) -> Any:
    """``rule`` (the task-by-task path's) applied to each row of ``column``, asked once per
    distinct value (NaN, a column's ``None``, is one value)."""
    if not len(column):
        return np.zeros(0, dtype=dtype)
    values, inverse = np.unique(column, return_inverse=True)
    return np.array([rule(value) for value in values.tolist()], dtype=dtype)[inverse]


@last_result
def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    """``normal_form`` and the held field paths it changes, in one pass (once per document:
    a conversion asks for it for its refusal, its losses and its writer)."""
    if any(key.startswith(PREFIX) for key in document.extras):
        document = replace(document, extras={key: value for key, value in
                                             document.extras.items()
                                             if not key.startswith(PREFIX)})
    workload = document.workload
    if workload is None:
        return document, frozenset()
    normalizer = _Normalizer(workload)
    columns = columns_of(workload)
    normal_columns = None if columns is None else _normal_columns(columns, normalizer)
    jobs: Sequence[Job]
    if normal_columns is not None:
        jobs = workload.jobs if normal_columns is columns else JobRows(normal_columns)
        runtimes = normal_columns.runtime_s
        used: Callable[[], set[str]] = lambda: {  # noqa: E731
            delay_profile_name(runtime) for runtime in _distinct(runtimes)}
        nodes = normal_columns.nodes
        nb_res = _derived_nb_res([int(nodes.max())] if len(nodes) else [])
    else:
        jobs, written = _normal_jobs(workload.jobs, normalizer)
        used = lambda: _names_used(written)  # noqa: E731
        nb_res = _derived_nb_res(task.request.nodes for task in written)
    lost = normalizer.lost
    attributes = {key: value for key, value in workload.attributes.items()
                  if (":" in key and not key.startswith(PREFIX))  # restrict decides
                  or (":" not in key and key not in TOP_FIELDS and _json_value(value))}
    if len(attributes) != len(workload.attributes):
        lost.add("workload.attributes")
    extras = {key: value for key, value in workload.extras.items()
              if not key.startswith(PREFIX)}
    if any(key not in (PROFILES_KEY, NB_RES_KEY, VERSION_KEY)
           for key in workload.extras if key.startswith(PREFIX)):
        lost.add("workload.extras")
    profiles = _still_kept(normalizer.profiles, used()) if normalizer.profiles else {}
    if profiles:
        extras[PROFILES_KEY] = profiles
    given_nb_res = workload.extras.get(NB_RES_KEY)
    if given_nb_res is not None:
        if not (_is_int(given_nb_res) and 1 <= given_nb_res <= INT32_MAX):
            lost.add("workload.extras")
        elif MACHINE_SIZE_KEY not in attributes and given_nb_res != nb_res:
            attributes[MACHINE_SIZE_KEY] = given_nb_res  # (what the reader makes of it)
        elif given_nb_res != machine_size(nb_res, replace(workload, attributes=attributes,
                                                            extras={})):
            extras[NB_RES_KEY] = given_nb_res
    if normalizer.version == 5:
        extras[VERSION_KEY] = 5
    normal = replace(workload, jobs=jobs, attributes=attributes, extras=extras)
    return replace(document, workload=normal), frozenset(lost)


def _normal_jobs(jobs: Sequence[Job], normalizer: _Normalizer
                 ) -> tuple[tuple[Job, ...], list[Task]]:
    """The normal form of a workload of objects, task by task, and the tasks it writes."""
    tasks = [task for job in jobs for task in job.tasks]
    keeps_ids = _keeps_ids([task.id for task in tasks])
    position = 0
    normal = []
    written: list[Task] = []
    for job in jobs:
        kept = []
        for task in job.tasks:
            position += 1
            new = normalizer.task(task, task.id if keeps_ids else position)
            if new is not None:
                kept.append(new)
        written.extend(kept)
        if len(kept) == len(job.tasks) and all(map(operator.is_, kept, job.tasks)):
            normal.append(job)  # already in normal form: no copy per job
        elif kept or not job.tasks:  # a job whose every task is left out goes with them
            normal.append(replace(job, tasks=tuple(kept)))
    return tuple(normal), written


def _normal_columns(columns: WorkloadColumns, normalizer: _Normalizer
                    ) -> WorkloadColumns | None:
    """``_Normalizer.task`` done column by column, each of its rules asked once per distinct
    value; ``None`` where only the task-by-task path can do it (``batsim:`` data kept in the
    tasks, a delay profile named other than ``delay<seconds>``, tasks left out among ids
    renumbered or jobs of the same id)."""
    import numpy as np

    if any(key.startswith(PREFIX) and bool(column.present.any())
           for key, column in columns.extras.items()):
        return None
    keep = _per_value(np, columns.runtime_s, _positive, bool)
    runtimes = _distinct(columns.runtime_s[keep])
    if any(normalizer._delay_name(runtime, None) != delay_profile_name(runtime)
           for runtime in runtimes):
        return None  # a kept profile has the name: the task names another
    every = bool(keep.all())
    ids = columns.ids
    renumbered = not _keeps_id_column(np, ids)
    if not every and (renumbered or not all_distinct(columns.job_ids)):
        # tasks left out, and ids that do not tell each task or job of the original: where
        # a loss is first found there can only be told object by object (by the object
        # itself when unchanged)
        return None
    lost = normalizer.lost
    if renumbered:
        numbers = np.arange(1, len(ids) + 1, dtype=np.int64)
        if bool((ids != numbers).any()):
            lost.add("task.id")
        ids = numbers
    else:
        ids = ids[keep]
    kept = columns.rows_kept(keep)
    submit = kept.submit_time_s
    finite = _per_value(np, submit, math.isfinite, bool)
    requested = kept.requested_time_s
    positive = _per_value(np, requested, _positive, bool)
    nodes = _per_value(np, _host_column(kept), _node_count, np.int64)
    changes: dict[str, Any] = {"ids": ids}
    if not finite.all():
        lost.add("task.submit_time_s")
        changes["submit_time_s"] = np.where(finite, submit, 0.0)
    if bool((~positive & ~np.isnan(requested)).any()):
        lost.add("task.requested_time_s")
        changes["requested_time_s"] = np.where(positive, requested, math.nan)
    if not np.array_equal(nodes, kept.nodes):
        changes["nodes"] = nodes
    if not np.array_equal(_per_value(np, kept.nodes, _node_count, np.int64), kept.nodes):
        lost.add("task.request.nodes")
    if bool((kept.cores != 1).any()):
        changes["cores"] = np.ones(len(kept), dtype=np.float64)
    if bool((columns.cores != 1).any()) and bool(np.any((columns.cores != 1) & ~only_resplit_rows(
            columns.placement, columns.nodes, columns.cores,
            _per_value(np, _host_column(columns), _node_count, np.int64)))):
        lost.add("task.request.cores")  # (also of a task left out, as _Normalizer.task)
    if kept is columns and ids is columns.ids and len(changes) == 1:
        return columns
    return replace(kept, **changes)


def _host_column(columns: WorkloadColumns) -> Any:
    """``_hosts`` of each task row."""
    import numpy as np

    several = columns.cores != 1
    if not bool(several.any()):
        return columns.nodes
    hosts, _ = single_core_node_columns(columns.nodes, columns.cores,
                                        np.full(len(columns), math.nan))
    return np.where(several, hosts, columns.nodes)


def _distinct(values: Any) -> list[float]:
    """The distinct values of a float column, in the order they first appear."""
    import numpy as np

    distinct, first = np.unique(values, return_index=True)
    return [float(value) for value in distinct[np.argsort(first, kind="stable")].tolist()]


def normal_form(document: Document) -> Document:
    """What a Batsim workload makes of ``document`` beyond its field paths (see the module
    docstring): tasks it cannot run left out, ids, times and counts Batsim takes, profile
    names that name their profile, kept profiles Batsim accepts."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    return _normalized(document)[1]


def leaves_out(document: Document) -> str:
    """Why a Batsim workload cannot hold tasks of ``document``, in one line: how many of
    each kind and the first ids of each."""
    workload = document.workload
    left_out = _task_count(workload) - _task_count(normal_form(document).workload)
    kinds = _left_out_kinds(workload) if left_out and workload is not None else None
    return left_out_reason(left_out, _task_count(workload), kinds)


_NAMED_IDS = 3
"""How many ids of each kind of task left out ``leaves_out`` names."""


_NOT_ABOVE_0 = "a runtime that is not above 0 (a delay profile must be)"
_NO_PROFILE = "no runtime and no compute profile"
_RUNTIME_KINDS = frozenset({_NOT_ABOVE_0, _NO_PROFILE})
"""The kinds of tasks left out that need no profile of the file to tell."""


def _left_out_kinds(workload: Workload) -> dict[str, list[Id]]:
    """The ids of the tasks ``_Normalizer.task`` leaves out, by why, in workload order."""
    normalizer = _Normalizer(workload)
    given = workload.extras.get(PROFILES_KEY)
    given = given if isinstance(given, dict) else {}
    kinds: dict[str, list[Id]] = {}
    for task in workload.tasks():
        if _positive(task.runtime_s):
            continue
        name = task.extras.get(PROFILE_KEY)
        definition = normalizer.profiles.get(name) if isinstance(name, str) else None
        if definition is not None and not _is_delay(definition) and _fits(
                definition, _node_count(_hosts(task.request))):
            continue
        if task.runtime_s is not None:
            why = _NOT_ABOVE_0
        elif definition is not None:
            why = f"profile {name!r} sized for other host counts"
        elif isinstance(name, str) and isinstance(given.get(name), dict):
            why = f"profile type {str(given[name].get('type'))!r}, which dcx does not write"
        else:
            why = _NO_PROFILE
        kinds.setdefault(why, []).append(task.id)
    return kinds


def _task_count(workload: Workload | None) -> int:
    if workload is None:
        return 0
    columns = columns_of(workload)
    return len(columns) if columns is not None else sum(1 for _ in workload.tasks())


def left_out_reason(left_out: int, tasks: int,
                    kinds: dict[str, list[Id]] | None = None) -> str:
    """``leaves_out``'s line for ``left_out`` of ``tasks`` tasks left out, by kind with the
    first ids of each when ``kinds`` says (a trace converted a chunk at a time counts them
    over its chunks)."""
    if not left_out:
        return ""
    head = f"Batsim runs a job through a profile, and {left_out:,} of {tasks:,} tasks"
    if not kinds or set(kinds) <= _RUNTIME_KINDS:
        # (what a trace converted a chunk at a time says too: its tasks have no profiles)
        return f"{head} have no positive runtime for a delay profile and no compute profile"
    parts = []
    for why, ids in kinds.items():
        named = ", ".join(str(value) for value in ids[:_NAMED_IDS])
        more = ", …" if len(ids) > _NAMED_IDS else ""
        parts.append(f"{len(ids):,} with {why} ({'task' if len(ids) == 1 else 'tasks'} "
                     f"{named}{more})")
    return f"{head} are left out: " + "; ".join(parts)


# --------------------------------------------------------------------------- write


def write(document: Document) -> WriteResult:
    """Batsim JSON for ``normal_form(document)`` (an empty workload when there is none)."""
    workload = normal_form(document).workload or Workload()
    version = 5 if workload.extras.get(VERSION_KEY) == 5 else 4
    profiles: dict[str, Any] = dict(workload.extras.get(PROFILES_KEY, {}))
    jobs, most_nodes = _written_jobs(workload, profiles, version)
    nb_res = workload.extras.get(NB_RES_KEY, _derived_nb_res([most_nodes]))
    return WriteResult(_dumps(head_root(nb_res, workload), jobs, profiles))


def _written_jobs(workload: Workload, profiles: dict[str, Any], version: int
                  ) -> tuple[list[str], int]:
    """The job lines of a workload in normal form (``_job_texts``, from its columns when it
    has them) and the most hosts a job asks for (0 for none)."""
    columns = columns_of(workload)
    if columns is not None and _columns_writable(columns):
        jobs = _column_job_texts(columns, profiles, version)
        return jobs, int(columns.nodes.max()) if len(columns) else 0
    tasks = list(workload.tasks())
    return (_job_texts(tasks, profiles, version),
            max((task.request.nodes for task in tasks), default=0))


def _columns_writable(columns: WorkloadColumns) -> bool:
    """Whether ``_column_job_texts`` writes these columns: a normal form made column by
    column (every task a delay profile's runtime, no ``batsim:`` data in the tasks)."""
    import numpy as np

    return not bool(np.isnan(columns.runtime_s).any()) and not any(
        key.startswith(PREFIX) and bool(column.present.any())
        for key, column in columns.extras.items())


def _job_line(job_id: str, subtime: str, walltime: str | None, res: int, profile: str,
              members: str = "") -> str:
    """One job object as one line of JSON text, from its members' JSON texts (a dict and an
    encoder call per job cost more than the rest of the writer)."""
    walltime_member = "" if walltime is None else f', "walltime": {walltime}'
    return (f'{{"id": {job_id}, "subtime": {subtime}{walltime_member}, "res": {res}, '
            f'"profile": {profile}{members}}}')


def _add_delay(profiles: dict[str, Any], name: str, runtime: float, version: int) -> None:
    if name not in profiles:
        profiles[name] = {"type": DELAY_TYPE[version], "delay": _json_number(runtime)}


def _job_texts(tasks: list[Task], profiles: dict[str, Any], version: int) -> list[str]:
    """Each task's job object as one line of JSON text; the delay profiles they name that
    ``profiles`` lacks are added to it, in the order the jobs first name them."""
    text = _TEXT
    jobs = []
    for task in tasks:
        name = task.extras.get(PROFILE_KEY)
        if task.runtime_s is not None:
            name = name if name is not None else delay_profile_name(task.runtime_s)
            _add_delay(profiles, name, task.runtime_s, version)
        requested = task.requested_time_s
        jobs.append(_job_line(
            text(task.id), _number_json(task.submit_time_s),
            None if requested is None else _number_json(requested), task.request.nodes,
            text(name), "".join(f", {text(key[len(PREFIX):])}: {text(value)}"
                                for key, value in task.extras.items()
                                if key.startswith(PREFIX) and key != PROFILE_KEY)))
    return jobs


def _column_job_texts(columns: WorkloadColumns, profiles: dict[str, Any],
                      version: int) -> list[str]:
    """``_job_texts`` of the tasks of ``columns`` (``_columns_writable``): each distinct
    runtime's profile named and written once, in the order the jobs first name them."""
    import numpy as np

    runtimes, first, inverse = np.unique(columns.runtime_s, return_index=True,
                                         return_inverse=True)
    names = [delay_profile_name(runtime) for runtime in runtimes.tolist()]
    for position in np.argsort(first, kind="stable").tolist():
        _add_delay(profiles, names[position], float(runtimes[position]), version)
    name_texts = [_TEXT(name) for name in names]
    ids = columns.ids.tolist()
    id_texts = list(map(str, ids)) if columns.ids.dtype.kind == "i" else list(map(_TEXT, ids))
    return [_job_line(job_id, _number_text(submit),
                      None if requested != requested else _number_text(requested),
                      res, name_texts[profile])
            for job_id, submit, requested, res, profile in zip(
                id_texts, columns.submit_time_s.tolist(), columns.requested_time_s.tolist(),
                columns.nodes.tolist(), inverse.tolist(), strict=True)]


_TEXT = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


MACHINE_SIZE_KEY = "MaxProcs"
"""The workload attribute of the machine's size (SWF's header field): ``nb_res`` when the
file's differs from the most hosts a job asks for, and no other value is given."""


def machine_size(nb_res: int, workload: Workload) -> Any:
    """``nb_res`` of a workload in normal form whose jobs ask for at most ``nb_res`` hosts:
    its own (``batsim:nb_res``), else its ``MaxProcs`` attribute when that is an integer
    at least as large (Batsim's ``res`` counts processors: SWF's), else ``nb_res``."""
    given = workload.extras.get(NB_RES_KEY)
    if given is not None:
        return given
    size = workload.attributes.get(MACHINE_SIZE_KEY)
    return size if _is_int(size) and nb_res <= size <= INT32_MAX else nb_res


def head_root(nb_res: Any, workload: Workload) -> dict[str, Any]:
    """The top-level members written before ``jobs``: ``nb_res`` (``machine_size`` of the
    most hosts a job asks for), then the workload's attributes."""
    size = machine_size(nb_res, workload)
    root: dict[str, Any] = {"nb_res": size}
    # a MaxProcs that nb_res says already (a size other than the most hosts a job asks for
    # reads back as it) is not written a second time, as a member of its own
    said = size != nb_res and NB_RES_KEY not in workload.extras
    root.update({key: value for key, value in workload.attributes.items() if ":" not in key
                 and not (said and key == MACHINE_SIZE_KEY and _is_int(value) and value == size)})
    return root


# Batsim's own layout: one line per job and per profile (a trace of 100,000 jobs stays
# 100,000 lines). The jobs go between JOBS_OPEN and JOBS_CLOSE, JOB_SEPARATOR between two.
JOBS_OPEN = '  "jobs": [\n    '
JOB_SEPARATOR = ",\n    "
JOBS_CLOSE = "\n  ],\n"
NO_JOBS = '  "jobs": [],\n'


def head_text(root: dict[str, Any]) -> str:
    """The text before the ``jobs`` member."""
    return "{\n" + "".join(f"  {_TEXT(key)}: {_TEXT(value)},\n" for key, value in root.items())


def profiles_text(profiles: dict[str, Any]) -> str:
    """The text from the ``profiles`` member to the end."""
    if not profiles:
        return '  "profiles": {}\n}\n'
    return ('  "profiles": {\n    '
            + ",\n    ".join(f"{_TEXT(name)}: {_TEXT(definition)}"
                              for name, definition in profiles.items())
            + "\n  }\n}\n")


def _dumps(root: dict[str, Any], jobs: list[str], profiles: dict[str, Any]) -> bytes:
    jobs_text = JOBS_OPEN + JOB_SEPARATOR.join(jobs) + JOBS_CLOSE if jobs else NO_JOBS
    return (head_text(root) + jobs_text + profiles_text(profiles)).encode()


@dataclass(frozen=True)
class Part:
    """A part of a workload written a chunk of jobs at a time (``write_part``)."""

    jobs: list[str]
    """Each written job's object, one line of JSON text each."""
    profiles: dict[str, Any]
    """The delay profiles the jobs name, in the order they first name them."""
    nb_res: int
    """The largest ``res`` of its jobs (0 for none)."""


def part_normal_form(document: Document) -> tuple[Document, frozenset[str]]:
    """``normal_form`` of a chunk's document and the held field paths it changes."""
    return _normalized(document)


def write_part(normal: Document) -> Part:
    """The jobs ``write`` writes for a chunk of a workload, given its normal form
    (``part_normal_form``), when ``part_problem`` finds nothing: the whole workload's
    ``write`` is ``head_text`` of its header, the parts' jobs in order, then
    ``profiles_text`` of their profiles merged in order."""
    profiles: dict[str, Any] = {}
    jobs, most_nodes = _written_jobs(normal.workload or Workload(), profiles, 4)
    return Part(jobs, profiles, most_nodes)


def part_problem(document: Document) -> str | None:
    """Why ``write_part`` of this chunk's document could differ from what ``write`` of the
    whole workload writes for its jobs, if it could: ids Batsim cannot take (the whole
    workload numbers all its tasks 1, 2, … together), ``batsim:`` data kept in the tasks
    (profile names, named against every profile of the workload) or in the workload (its
    ``nb_res``, profiles and version are the whole workload's)."""
    from dcx.core.columns import columns_of

    workload = document.workload
    if workload is None:
        return None
    if any(key.startswith(PREFIX) for key in workload.extras):
        return "Batsim's nb_res, profiles or version kept in the workload"
    columns = columns_of(workload)
    if columns is not None:
        kept = any(key.startswith(PREFIX) and bool(column.present.any())
                   for key, column in columns.extras.items())
        ids = columns.ids
        if ids.dtype.kind in "iu":
            writable = not len(ids) or bool((ids >= INT32_MIN).all() and (ids <= INT32_MAX).all())
        else:
            writable = all(map(_writable_id, ids.tolist()))
    else:
        tasks = [task for job in workload.jobs for task in job.tasks]
        kept = any(key.startswith(PREFIX) for task in tasks for key in task.extras)
        writable = all(_writable_id(task.id) for task in tasks)
    if kept:
        return "Batsim data kept in the tasks (profile names, job members)"
    if not writable:
        return ("job ids Batsim cannot take (32-bit integers, or text without '!' or a "
                "workload name such as w0): the whole file numbers them all 1, 2, … together")
    return None
