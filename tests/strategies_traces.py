"""Hypothesis strategies for models the trace formats (GWF, SWF, osp-workload) and the OpenDC
setup can hold exactly, so that model → format → model is the identity."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Job,
    Machine,
    Placement,
    Rack,
    ResourceRequest,
    Room,
    Task,
    Workload,
)
from dcx.formats.opendc_setup import CPU_TYPES
from dcx.parsing.traces import PLAIN_CODES, status_of_code

seconds = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)
whole_seconds = st.integers(min_value=0, max_value=10**9).map(float)
any_seconds = st.one_of(whole_seconds, seconds)
core_counts = st.integers(min_value=1, max_value=64)
trace_ids = st.integers(min_value=0, max_value=10**12)
tokens = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=8)
numeric_ids = st.integers(min_value=0, max_value=10**9).map(str)
# Built once: strategies made inside a draw are re-validated on every draw (slow).
optional_seconds = st.none() | any_seconds
optional_whole_seconds = st.none() | whole_seconds
optional_ids = st.none() | numeric_ids
requested_counts = st.one_of(st.just(-1), core_counts)
shapes = st.sampled_from(["same", "requested", "allocated-unknown"])
measure_values = st.integers(0, 10**9) | seconds
code_values = st.integers(0, 10**6)
status_codes = st.sampled_from([-1, 0, 1, 2, 3, 4, 5, 6])
code_texts = st.none() | code_values.map(str)
optional_measures = st.none() | measure_values.map(float)
token_values = tokens.filter(lambda token: token != "-1")
choice = st.integers(min_value=0, max_value=10**6)
choices = st.lists(choice, max_size=4)
memory_kbs = st.none() | st.integers(min_value=0, max_value=2**20)


@st.composite
def processor_extras(draw: st.DrawFn, cores: int) -> tuple[int, dict[str, Any]]:
    """Cores plus the extras that say how NProcs/ReqNProcs differ from them."""
    shape = draw(shapes)
    if shape == "requested":
        requested = draw(requested_counts)
        return cores, {"gwf:ReqNProcs": requested if requested != cores else -1}
    if shape == "allocated-unknown":
        return cores, {"gwf:NProcs": -1}
    return cores, {}


@st.composite
def workflow_workloads(draw: st.DrawFn) -> Workload:
    """Workloads the 7-column GWF variant holds: integer ids, cores on one node, acyclic
    dependencies on earlier tasks, runtimes possibly unknown."""
    task_count = draw(st.integers(min_value=0, max_value=25))
    task_ids = draw(st.lists(trace_ids, min_size=task_count, max_size=task_count, unique=True))
    job_count = draw(st.integers(min_value=1, max_value=max(1, task_count)))
    job_ids = draw(st.lists(trace_ids, min_size=job_count, max_size=job_count, unique=True))
    members: dict[int, list[Task]] = {job_id: [] for job_id in job_ids}
    for position, task_id in enumerate(task_ids):
        earlier = task_ids[:position]
        picks = draw(choices) if earlier else []
        dependencies = list(dict.fromkeys(earlier[pick % len(earlier)] for pick in picks))
        cores, extras = draw(processor_extras(draw(core_counts)))
        task = Task(
            id=task_id,
            submit_time_s=draw(any_seconds),
            runtime_s=draw(optional_seconds),
            request=ResourceRequest(cores=float(cores), placement=Placement.CORES),
            dependencies=tuple(dependencies),
            extras=extras,
        )
        members[job_ids[draw(choice) % len(job_ids)]].append(task)
    jobs = tuple(Job(id=job_id, tasks=tuple(tasks)) for job_id, tasks in members.items() if tasks)
    return Workload(jobs=jobs)


_ARCHIVE_MEASURES = ("UsedNetwork", "UsedLocalDiskSpace", "ReqNetwork", "ReqLocalDiskSpace")
_ARCHIVE_CODES = ("OrigSiteID", "LastRunSiteID")
_ARCHIVE_TOKENS = ("JobStructure", "JobStructureParams", "UsedResources", "ReqPlatform",
                   "ReqResources", "VOID", "ProjectID")

measure_columns = st.lists(st.sampled_from(_ARCHIVE_MEASURES), unique=True)
code_columns = st.lists(st.sampled_from(_ARCHIVE_CODES), unique=True)
token_columns = st.lists(st.sampled_from(_ARCHIVE_TOKENS), unique=True)


@st.composite
def archive_extras(draw: st.DrawFn) -> dict[str, Any]:
    extras: dict[str, Any] = {}
    for name in draw(measure_columns):
        extras["gwf:" + name] = draw(measure_values)
    for name in draw(code_columns):
        extras["gwf:" + name] = draw(code_values)
    for name in draw(token_columns):
        extras["gwf:" + name] = draw(token_values)
    return extras


@st.composite
def archive_workloads(draw: st.DrawFn) -> Workload:
    """Workloads the 29-column archive GWF holds: single-task jobs whose id is the task id;
    memory in whole KB per processor (so the KB ↔ MB conversion is exact)."""
    task_ids = draw(st.lists(trace_ids, max_size=20, unique=True))
    jobs = []
    for task_id in task_ids:
        cores, extras = draw(processor_extras(draw(core_counts)))
        extras.update(draw(archive_extras()))
        memory_kb = draw(memory_kbs)
        task = Task(
            id=task_id,
            submit_time_s=draw(any_seconds),
            runtime_s=draw(optional_seconds),
            requested_time_s=draw(optional_seconds),
            request=ResourceRequest(
                cores=float(cores),
                memory_mb=None if memory_kb is None else memory_kb * float(cores) / 1024,
                placement=Placement.CORES,
            ),
            user=draw(optional_ids),
            group=draw(optional_ids),
            extras=extras,
            **draw(archive_recorded(extras)),
        )
        jobs.append(Job(id=task_id, tasks=(task,)))
    return Workload(jobs=tuple(jobs))


@st.composite
def archive_recorded(draw: st.DrawFn, extras: dict[str, Any]) -> dict[str, Any]:
    """The recorded fields of an archive line (its Status code beside them in ``extras``
    where the status does not give it back)."""
    status = draw(status_codes)
    if status not in PLAIN_CODES:
        extras["gwf:Status"] = status
    used_kb = draw(memory_kbs)
    return {"status": status_of_code(status), "wait_time_s": draw(optional_measures),
            "cpu_time_s": draw(optional_measures),
            "used_memory_mb": None if used_kb is None else used_kb / 1024,
            "application": draw(code_texts), "queue": draw(code_texts),
            "partition": draw(code_texts)}


@st.composite
def setup_environments(draw: st.DrawFn) -> Environment:
    """Topologies the OpenDC setup holds: one anonymous datacenter, typed rooms, racks of
    anonymous machines whose CPUs are SC18 CPU types."""
    machine = st.lists(st.sampled_from(sorted(CPU_TYPES)), max_size=3).map(
        lambda ids: Machine(cpus=tuple(CPU_TYPES[i] for i in ids)))
    rack = st.lists(machine, max_size=6).map(lambda ms: Rack(slots=tuple(ms)))
    room = st.builds(lambda kind, racks: Room(type=kind, racks=tuple(racks)),
                     st.sampled_from(["SERVER", "COOLING", "HALLWAY", "OFFICE", "POWER"]),
                     st.lists(rack, max_size=3))
    rooms = draw(st.lists(room, max_size=3))
    return Environment(datacenters=(Datacenter(rooms=tuple(rooms)),),
                       name=draw(st.none() | st.text(min_size=1, max_size=20)))


def as_document(workload: Workload) -> Document:
    return Document(workload=workload)


# --------------------------------------------------------------------------- SWF

node_counts = st.integers(min_value=1, max_value=4096)
one_line_text = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters=":"),
    max_size=20,
).map(str.strip)
header_keys = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,12}", fullmatch=True).filter(
    lambda key: key != "UnixStartTime")
header_scalars = one_line_text | st.integers(-10**6, 10**6) | st.booleans()
header_values = header_scalars | st.lists(header_scalars, min_size=2, max_size=3)
epoch_origins = st.none() | st.integers(min_value=0, max_value=4 * 10**9).map(
    lambda seconds: datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


@st.composite
def swf_workloads(draw: st.DrawFn) -> Workload:
    """Workloads SWF holds: single-task jobs numbered by their task, in submit-time order,
    times in whole seconds, single-core processors counted as nodes, at most one (earlier)
    preceding job, header fields and comments."""
    task_ids = draw(st.lists(trace_ids, max_size=15, unique=True))
    submits = sorted(draw(st.lists(whole_seconds, min_size=len(task_ids),
                                   max_size=len(task_ids))))
    jobs = []
    for position, task_id in enumerate(task_ids):
        nodes = draw(node_counts)
        extras: dict[str, Any] = {}
        shape = draw(shapes)
        if shape == "requested":
            requested = draw(requested_counts)
            extras["swf:RequestedProcessors"] = requested if requested != nodes else -1
        elif shape == "allocated-unknown":
            extras["swf:AllocatedProcessors"] = draw(st.sampled_from([-1, 0]))
        status = draw(status_codes)
        if status not in PLAIN_CODES:
            extras["swf:Status"] = status
        used_kb = draw(memory_kbs)
        dependencies: tuple[int, ...] = ()
        if position and draw(st.booleans()):
            dependencies = (task_ids[draw(choice) % position],)
        elif draw(st.booleans()):
            extras["swf:PrecedingJobNumber"] = draw(trace_ids.filter(
                lambda n: n not in task_ids))
        memory_kb = draw(memory_kbs)
        task = Task(
            id=task_id,
            submit_time_s=submits[position],
            runtime_s=draw(optional_whole_seconds),
            requested_time_s=draw(optional_whole_seconds),
            request=ResourceRequest(nodes=nodes, cores=1.0,
                                    memory_mb=None if memory_kb is None else memory_kb / 1024,
                                    placement=Placement.CORES),
            dependencies=dependencies,
            user=draw(optional_ids),
            group=draw(optional_ids),
            status=status_of_code(status),
            wait_time_s=draw(optional_whole_seconds),
            used_memory_mb=None if used_kb is None else used_kb / 1024,
            cpu_time_s=draw(optional_measures),
            application=draw(code_texts), queue=draw(code_texts), partition=draw(code_texts),
            think_time_s=draw(optional_whole_seconds),
            extras=extras,
        )
        jobs.append(Job(id=task_id, tasks=(task,)))
    comments = draw(st.lists(one_line_text, max_size=3))
    return Workload(
        jobs=tuple(jobs),
        time_origin=draw(epoch_origins),
        attributes=draw(st.dictionaries(header_keys, header_values, max_size=4)),
        extras={"swf:comments": comments} if comments else {},
    )


# --------------------------------------------------------------------------- osp-workload

osp_names = st.text(max_size=12)
osp_ids = st.from_regex(r"[A-Za-z][A-Za-z0-9_.:-]{0,7}", fullmatch=True)
microseconds = st.integers(min_value=-10**12, max_value=10**14).map(lambda k: k / 10**6)
positive_floats = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)
sizes_mb = st.one_of(st.integers(0, 10**9).map(float),
                     st.floats(min_value=0, max_value=1e12, allow_nan=False))
naive_origins = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2030, 1, 1)) \
    .map(lambda instant: instant.replace(microsecond=0).isoformat())
osp_root_extras = {
    "authors": st.lists(osp_names, max_size=2), "domain": osp_names,
    "schema_version": osp_names, "date_end": naive_origins, "license": osp_names,
}


def _whole_use_exact(used_mb: float | None, cores: float) -> float | None:
    """``used_mb`` per core when the task's whole use (what osp-workload writes, × its
    cores) divides back to it exactly, else ``None``."""
    if used_mb is None or (used_mb * cores) / cores != used_mb:
        return None
    return used_mb


@st.composite
def osp_workloads(draw: st.DrawFn) -> Workload:
    """Workloads the osp-workload JSON holds: string ids, a naive ISO time origin, submit
    times in whole microseconds, used memory in MB per core, dependencies on earlier tasks,
    the format's other keys as plain extras. Jobs have tasks (as in the generic strategies:
    trace formats have no line for an empty job)."""
    task_ids = draw(st.lists(osp_ids, min_size=1, max_size=12, unique=True))
    job_ids = draw(st.lists(osp_ids, min_size=1, max_size=min(4, len(task_ids)), unique=True))
    members: dict[str, list[Task]] = {job_id: [] for job_id in job_ids}
    for position, task_id in enumerate(task_ids):
        picks = draw(choices) if position else []
        dependencies = tuple(dict.fromkeys(task_ids[pick % position] for pick in picks))
        extras: dict[str, Any] = {}
        if draw(st.booleans()):
            extras["energy_usage"] = f"{draw(code_values)}W"
        if draw(st.booleans()):
            extras["user_id"] = draw(code_values)
        if draw(st.booleans()):
            extras["disk_space_usage"] = f"{draw(code_values)}MB"
        cores = draw(st.just(1.0) | positive_floats)
        task = Task(
            id=task_id,
            submit_time_s=draw(microseconds),
            runtime_s=draw(st.none() | st.floats(min_value=0, max_value=1e9)),
            request=ResourceRequest(cores=cores),
            used_memory_mb=_whole_use_exact(draw(st.none() | sizes_mb), cores),
            dependencies=dependencies,
            extras=extras,
        )
        members[job_ids[position % len(job_ids)]].append(task)
    jobs = tuple(
        Job(id=job_id, tasks=tuple(tasks), name=draw(st.none() | osp_names),
            extras=draw(st.just({}) | st.builds(lambda d: {"domain": d}, osp_names)))
        for job_id, tasks in members.items())
    extras = {key: draw(values) for key, values in osp_root_extras.items()
              if draw(st.booleans())}
    return Workload(
        jobs=jobs,
        name=draw(st.none() | osp_names),
        description=draw(st.none() | osp_names),
        time_origin=draw(naive_origins),
        extras=extras,
    )
