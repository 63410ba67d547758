"""Hypothesis strategies for documents WfFormat 1.5 holds exactly, so that model → WfFormat
→ model is the identity: one job per task, text ids WfFormat can reference, dependencies on
earlier tasks, runtimes with cores >= 1, memory used in whole bytes, starts to the
microsecond after the workflow's and programs, machines with whole-MHz clocks and whole-byte
memory, and the format's own members under ``wfformat:`` keys."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
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
from dcx.formats import wfformat
from dcx.formats.wfformat.recorded import used_memory_mb

reference_ids = st.from_regex(r"[A-Za-z_][0-9A-Za-z_.#-]{0,9}", fullmatch=True)
integer_ids = st.integers(min_value=0, max_value=10**9)
# text every format can carry (XML 1.0 too): no control characters, no outer spaces
texts = st.from_regex(r"[A-Za-z0-9_.-]{1,8}( [A-Za-z0-9_.-]{1,8})?", fullmatch=True)
runtimes = st.floats(min_value=-1e3, max_value=1e7, allow_nan=False, allow_infinity=False)
cores = st.just(1.0) | st.floats(min_value=1, max_value=512, allow_nan=False,
                                 allow_infinity=False)
memory_bytes = st.integers(min_value=0, max_value=2**45)
waits = st.integers(min_value=0, max_value=10**12).map(lambda micros: micros / 1e6)
"""Seconds from the workflow's start to a task's, as a timestamp says them (microseconds)."""
origins = st.sampled_from(["2024-05-01T10:00:00+00:00", "2020-04-01T15:10:53-08:00",
                           "2019-12-31T23:59:59"])
node_names = st.from_regex(r"[a-z][a-z0-9.-]{0,11}", fullmatch=True)
file_ids = st.from_regex(r"[A-Za-z0-9_.#/:-]{1,10}", fullmatch=True)
measured_members = st.fixed_dictionaries({}, optional={
    "avgCPU": st.floats(min_value=0, max_value=6400, allow_nan=False),
    "readBytes": st.integers(0, 10**12), "priority": st.integers(0, 10), "x-site": texts,
    "command": st.fixed_dictionaries({"arguments": st.lists(texts, min_size=1, max_size=2)})})


@st.composite
def wfformat_tasks(draw: st.DrawFn, files: list[str]) -> list[Task]:
    use_integers = draw(st.booleans())
    ids: list[Any] = draw(st.lists(integer_ids if use_integers else reference_ids,
                                   min_size=1, max_size=10, unique=True))
    tasks = []
    for position, task_id in enumerate(ids):
        dependencies = tuple(draw(st.lists(st.sampled_from(ids[:position]), unique=True,
                                           max_size=3))) if position else ()
        extras: dict[str, Any] = {}
        name = draw(st.none() | texts)
        if name is not None and name != str(task_id):
            extras[wfformat.TASK_NAME] = name
        if bool(files) and draw(st.booleans()):
            extras[wfformat.TASK_MEMBERS] = {
                "inputFiles": draw(st.lists(st.sampled_from(files), max_size=2)),
                "outputFiles": draw(st.lists(st.sampled_from(files), max_size=2))}
        runtime = draw(st.none() | runtimes)
        request = ResourceRequest()
        recorded: dict[str, Any] = {}
        if runtime is not None:
            request = ResourceRequest(cores=draw(cores))
            if draw(st.booleans()):  # a file without coreCount: 1 core, written without
                request = replace(request, cores=1.0)
                extras[wfformat.CORES_UNSTATED] = True
            memory = draw(st.none() | memory_bytes)
            recorded = {"wait_time_s": draw(st.none() | waits),
                        "used_memory_mb": None if memory is None else used_memory_mb(
                            memory, request.cores),
                        "application": draw(st.none() | texts)}
            members = draw(measured_members)
            if members:
                extras[wfformat.EXECUTION_MEMBERS] = members
        tasks.append(Task(id=task_id, runtime_s=runtime, request=request,
                          dependencies=dependencies, extras=extras, **recorded))
    return tasks


@st.composite
def wfformat_machines(draw: st.DrawFn) -> list[Machine]:
    names = draw(st.lists(node_names, min_size=1, max_size=4, unique=True))
    machines = []
    for name in names:
        cpus: tuple[ProcessingUnit, ...] = ()
        if draw(st.booleans()):
            megahertz = draw(st.none() | st.integers(1, 6000))
            cpus = (ProcessingUnit(cores=draw(st.integers(1, 256)),
                                   clock_rate_hz=None if megahertz is None else megahertz * 1e6,
                                   manufacturer=draw(st.none() | texts)),)
        memory = draw(st.none() | st.integers(1, 2**42))
        extras = {wfformat.MACHINE_MEMBERS: {"release": "5.15.0"}} if draw(st.booleans()) else {}
        machines.append(Machine(
            name=name, cpus=cpus,
            memory=() if memory is None else (StorageUnit(memory / 2**20),),
            os=draw(st.none() | st.sampled_from(sorted(wfformat.SYSTEMS))),
            arch=draw(st.none() | st.sampled_from(["x86_64", "aarch64"])), extras=extras))
    return machines


@st.composite
def wfformat_documents(draw: st.DrawFn) -> Document:
    files = draw(st.lists(file_ids, max_size=4, unique=True))
    tasks = draw(wfformat_tasks(files))
    executed = any(task.runtime_s is not None for task in tasks)
    extras: dict[str, Any] = {}
    if files:
        extras[wfformat.SPECIFICATION_MEMBERS] = {
            "files": [{"id": f, "sizeInBytes": draw(st.integers(0, 10**10))} for f in files]}
    if draw(st.booleans()):
        extras[wfformat.INSTANCE_MEMBERS] = {
            "createdAt": "2024-05-02T00:00:00+00:00",
            "author": {"name": "dcx", "email": "dcx@dcx.invalid"}}
    makespan = None
    if executed and draw(st.booleans()):
        makespan = wfformat.critical_path(tasks) + draw(
            st.floats(min_value=1, max_value=1e4, allow_nan=False))
    environment = None
    if executed and draw(st.booleans()):
        machines = draw(wfformat_machines())
        environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=(
            Rack(slots=tuple(machines)),)),)),))
    workload = Workload(
        jobs=tuple(Job(id=task.id, tasks=(task,)) for task in tasks),
        name=draw(texts), description=draw(st.none() | texts),
        time_origin=draw(origins) if executed and draw(st.booleans()) else None,
        makespan_s=makespan, extras=extras)
    return Document(environment=environment, workload=workload)
