"""Hypothesis strategies for documents Haizea XML can hold exactly.

Times are whole centiseconds (Haizea writes two decimals), amounts whole numbers (Haizea
``int()``s them), machine ids are their 1-based position (Haizea numbers nodes), and a
lease only asks for resource types its site declares (otherwise the writer adds them to
``resource-types`` and the model gains that list).
"""

from __future__ import annotations

from hypothesis import strategies as st

from dcx.core.groups import compact
from dcx.core.model import (
    Annotation,
    Datacenter,
    Document,
    Environment,
    Job,
    Machine,
    NamedResource,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StartMode,
    StorageUnit,
    Task,
    Workload,
)
from dcx.formats.haizea.recorded import RECORDED_ATTRS

OTHER_TYPES = ("Disk", "Net-in", "Net-out", "Ponies", "GPU")

xml_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"))
    | st.sampled_from(" \t\n"),
    max_size=20,
)
"""Text XML 1.0 can carry (attribute whitespace is escaped by the writer)."""

centis = st.integers(min_value=0, max_value=400 * 86_400 * 100)
times = centis.map(lambda value: value / 100)
durations = st.integers(min_value=1, max_value=30 * 86_400 * 100).map(lambda value: value / 100)
offsets = st.integers(min_value=-86_400 * 100, max_value=10 * 86_400 * 100).map(
    lambda value: value / 100
)
whole_mb = st.integers(min_value=0, max_value=2**20).map(float)
integer_text = st.integers(min_value=0, max_value=10**6).map(str)


@st.composite
def named_resources(draw: st.DrawFn, names: tuple[str, ...]) -> tuple[NamedResource, ...]:
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names))) \
        if names else []
    resources = []
    for name in chosen:
        if draw(st.booleans()):
            instances = tuple(float(v) for v in draw(
                st.lists(st.integers(0, 10**5), min_size=1, max_size=4)))
            resources.append(NamedResource(name, float(sum(instances)), instances=instances))
        else:
            resources.append(NamedResource(name, float(draw(st.integers(0, 10**6)))))
    return tuple(resources)


@st.composite
def machine_shapes(draw: st.DrawFn) -> Machine:
    cpus = tuple(ProcessingUnit(cores=cores) for cores in draw(
        st.lists(st.integers(1, 64), max_size=3)))
    memory = tuple(StorageUnit(capacity_mb=size) for size in draw(
        st.lists(whole_mb, max_size=3)))
    return Machine(cpus=cpus, memory=memory, resources=draw(named_resources(OTHER_TYPES)))


@st.composite
def environments(draw: st.DrawFn) -> Environment:
    shapes = draw(st.lists(machine_shapes(), min_size=1, max_size=3))
    picks = draw(st.lists(st.sampled_from(shapes), max_size=12))
    # Haizea nodes are positional: no ids (the loss contract's normal form for machine.id)
    machines = tuple(Machine(cpus=shape.cpus, memory=shape.memory, resources=shape.resources)
                     for shape in picks)
    used = ["CPU", "Memory"]
    for machine in machines:
        used.extend(r.name for r in machine.resources if r.name not in used)
    unused = [name for name in OTHER_TYPES if name not in used]
    extras = {}
    declared = draw(st.lists(st.sampled_from(unused), unique=True)) if unused else []
    if declared:
        extras["haizea:resource-types"] = used + declared
    rack = Rack(slots=machines)
    environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),),
                              extras=extras)
    # consecutive nodes of one shape held as groups, as node-sets state them
    return compact(environment) if draw(st.booleans()) else environment


def site_types(environment: Environment | None) -> tuple[str, ...]:
    """Non-CPU/Memory types a lease may ask for."""
    if environment is None:
        return OTHER_TYPES
    declared = environment.extras.get("haizea:resource-types")
    if declared:
        return tuple(name for name in declared if name not in ("CPU", "Memory"))
    names: list[str] = []
    for machine in environment.machines():
        names.extend(r.name for r in machine.resources if r.name not in names)
    return tuple(names)


recorded_seconds = st.none() | st.integers(0, 10**7).map(float) | st.floats(
    0, 1e7, allow_nan=False)
"""An ``SWF_waittime`` or ``SWF_avgcputime``: seconds, not negative."""
swf_codes = st.none() | xml_text.filter(lambda text: text != "-1")
"""An ``SWF_group``, ``SWF_queue`` or ``SWF_execnumber``: any text but SWF's -1."""


@st.composite
def tasks(draw: st.DrawFn, task_id: int, types: tuple[str, ...]) -> Task:
    requested = draw(durations)
    mode = draw(st.sampled_from(StartMode))
    start = draw(times) if mode is StartMode.EXACT else None
    deadline = None
    if draw(st.booleans()):
        base = start if start is not None else 0.0
        deadline = (round(base * 100) + round(requested * 100) + draw(centis)) / 100
    image = draw(st.none() | xml_text)
    # <extra> attrs are plain keys; a prefixed key belongs to its format (losses: Extras)
    extras: dict[str, object] = draw(st.dictionaries(
        xml_text.filter(lambda key: ":" not in key and key not in RECORDED_ATTRS), xml_text,
        max_size=3))
    if draw(st.booleans()):
        extras["haizea:state"] = draw(st.integers(0, 12))
    request = ResourceRequest(
        nodes=draw(st.integers(1, 128)),
        cores=draw(st.integers(0, 6400)) / 100,
        memory_mb=draw(st.none() | whole_mb),
        resources=draw(named_resources(types)),
    )
    return Task(
        id=task_id,
        submit_time_s=draw(times),
        # a lease without <realduration> runs for its duration
        runtime_s=draw(st.just(requested) | durations),
        requested_time_s=requested,
        request=request,
        deadline_s=deadline,
        start_mode=mode,
        start_time_s=start,
        preemptible=draw(st.booleans()),
        user=draw(st.none() | integer_text),
        image=image,
        image_size_mb=draw(whole_mb) if image is not None else None,
        # haizea-swf2lwf's SWF_* attrs
        group=draw(swf_codes), wait_time_s=draw(recorded_seconds),
        cpu_time_s=draw(recorded_seconds), queue=draw(swf_codes),
        application=draw(swf_codes),
        extras=extras,
    )


@st.composite
def lease_documents(draw: st.DrawFn) -> Document:
    """An LWF: optional site, named workload with attributes and leases, in arrival order
    (the writer's normal form)."""
    environment = draw(st.none() | environments())
    types = site_types(environment)
    ids = draw(st.lists(st.integers(-10**6, 10**9), unique=True, max_size=8))
    drawn = sorted((draw(tasks(task_id, types)) for task_id in ids),
                   key=lambda task: task.submit_time_s)
    jobs = tuple(Job(id=task.id, tasks=(task,)) for task in drawn)
    workload = Workload(
        jobs=jobs,
        name=draw(st.none() | xml_text),
        description=draw(st.none() | xml_text),
        attributes=draw(st.dictionaries(xml_text, xml_text, max_size=3)),
    )
    return Document(environment=environment, workload=workload)


@st.composite
def lease_annotations(draw: st.DrawFn, target: int | None) -> Annotation:
    mode = draw(st.none() | st.sampled_from(StartMode))
    software = draw(st.sampled_from(("absent", "none", "image")))
    image = draw(xml_text) if software == "image" else None
    return Annotation(
        target=target,
        start_mode=mode,
        start_offset_s=draw(offsets) if mode is StartMode.EXACT else None,
        deadline_offset_s=draw(st.none() | offsets),
        image=image,
        image_size_mb=draw(whole_mb) if image is not None else None,
        software_none=software == "none",
        extras=draw(st.dictionaries(xml_text, xml_text, max_size=3)),
    )


@st.composite
def annotation_documents(draw: st.DrawFn) -> Document:
    count = draw(st.integers(1, 6))
    if draw(st.booleans()):
        targets: list[int | None] = draw(st.lists(st.integers(0, 10**6), unique=True,
                                                  min_size=count, max_size=count))
    else:
        targets = [None] * count
    items = tuple(draw(lease_annotations(target)) for target in targets)
    attributes = draw(st.dictionaries(xml_text, xml_text, max_size=3))
    return Document(workload=Workload(annotations=items, attributes=attributes))


site_documents = environments().map(lambda environment: Document(environment=environment))
