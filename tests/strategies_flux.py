"""Hypothesis strategies for models that Flux R and JGF can hold exactly."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from dcx.core.groups import compact
from dcx.core.model import (
    Datacenter,
    Environment,
    Machine,
    MachineState,
    NamedResource,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
    Validity,
)
from dcx.formats import jgf

host_names = st.builds(
    lambda prefix, number, width: prefix + str(number).zfill(width),
    st.sampled_from(["node", "n", "cab", "compute-", "x.y"]),
    st.integers(0, 5000),
    st.integers(1, 4),
)
property_names = st.text(alphabet="abcdefgh-_.@+=xyz0123", min_size=1, max_size=8)


@st.composite
def r_environments(draw: st.DrawFn) -> Environment:
    """One datacenter/room/rack with no ids or names (R has none), machines in rank order,
    features in name order (the order the R writer lists properties in)."""
    count = draw(st.integers(0, 12))
    ranks = sorted(draw(st.sets(st.integers(0, 10_000), min_size=count, max_size=count)))
    vocabulary = sorted(draw(st.lists(property_names, unique=True, max_size=5)))
    child_types = draw(st.lists(st.sampled_from(["memory", "nic", "ssd"]), unique=True,
                                max_size=2))
    child_ids = st.sampled_from(["", "0", "0-3", "1,5-7"])
    machines: list[Machine] = []
    for rank in ranks:
        if machines and draw(st.integers(0, 2)) == 0:
            # another rank of the previous one's shape: R_lite lists such ranks as one entry
            machines.append(replace(machines[-1], name=draw(host_names), rank=rank))
            continue
        gpu_ids = sorted(draw(st.sets(st.integers(0, 16), max_size=4)))
        features = tuple(name for name in vocabulary if draw(st.booleans()))
        # Child types beyond core and gpu are R's own: machine extras, not resources.
        children = {kind: draw(child_ids) for kind in child_types}
        cores = draw(st.integers(0, 256))
        machines.append(Machine(
            name=draw(host_names), rank=rank,
            cpus=(ProcessingUnit(cores=cores),) if cores else (),  # "core": "" reads as none
            gpus=tuple(ProcessingUnit(cores=1, id=i) for i in gpu_ids),
            features=features, extras={"flux-r:children": children} if children else {},
        ))
    extras: dict[str, object] = {}
    if draw(st.booleans()):
        extras = {"flux-r:nslots": draw(st.integers(1, 64))}
    rack = Rack(slots=tuple(machines))
    environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),),
                              extras=extras, validity=draw(validities()))
    # as a reader of R_lite's rank idsets gives them: runs of one shape held as groups
    return compact(environment) if draw(st.booleans()) else environment


@st.composite
def validities(draw: st.DrawFn) -> Validity | None:
    """None, or a window R holds: either end may be unset, integer or fractional seconds."""
    if draw(st.booleans()):
        return None
    start = draw(st.one_of(st.none(), st.integers(1, 2_000_000_000),
                           st.floats(1.0, 2e9).map(lambda t: round(t, 6))))
    length = draw(st.one_of(st.integers(1, 10**6), st.floats(0.5, 1e6)))
    end = draw(st.one_of(st.none(), st.just((start or 0) + length)))
    return None if start is None and end is None else Validity(start, end)


@st.composite
def jgf_machines(draw: st.DrawFn, index: int) -> Machine:
    socket_ids = draw(st.lists(st.integers(0, 7), unique=True, max_size=3))
    gpu_ids = draw(st.lists(st.integers(0, 15), unique=True, max_size=3))
    # No memory ids: a StorageUnit id is memory.details, which JGF does not hold.
    memory = tuple(
        StorageUnit(capacity_mb=float(draw(st.sampled_from([1024, 2048, 512, 16384, 100]))))
        for _ in range(draw(st.integers(0, 3)))
    )
    keys = draw(st.lists(st.text(alphabet="abcxyz-_", min_size=1, max_size=5), unique=True,
                         max_size=3))
    features = tuple(k if draw(st.booleans()) else f"{k}={draw(st.integers(0, 99))}"
                     for k in keys)
    resources = tuple(
        NamedResource(name=f"{kind}{n}", amount=float(draw(st.integers(0, 2000))), type=kind,
                      unit=draw(st.sampled_from([None, "GiB"])))
        for n, kind in enumerate(draw(st.lists(st.sampled_from(["ssd", "nic", "widget"]),
                                               max_size=2)))
    )
    return Machine(
        id=draw(st.integers(0, 10_000)), name=f"node{index}",
        state=draw(st.sampled_from([MachineState.ACTIVE, MachineState.FAILURE])),
        cpus=tuple(ProcessingUnit(cores=draw(st.integers(0, 8)), id=i) for i in socket_ids),
        gpus=tuple(ProcessingUnit(cores=1, id=i) for i in gpu_ids),
        memory=memory, features=features, resources=resources,
        rank=draw(st.one_of(st.none(), st.integers(0, 1000))),
    )


@st.composite
def jgf_environments(draw: st.DrawFn) -> Environment:
    """A cluster of racks (or of bare nodes) that JGF holds exactly."""
    racks = []
    serial = 0
    if draw(st.booleans()):
        machines = []
        for _ in range(draw(st.integers(1, 3))):
            machines.append(draw(jgf_machines(serial)))
            serial += 1
        racks.append(Rack(slots=tuple(machines), extras={"jgf:implicit": True}))
    for rack_index in range(draw(st.integers(0, 3))):
        machines = []
        for _ in range(draw(st.integers(0, 3))):
            machines.append(draw(jgf_machines(serial)))
            serial += 1
        racks.append(Rack(id=rack_index, name=f"rack{rack_index}", slots=tuple(machines)))
    datacenter = Datacenter(id=draw(st.integers(0, 9)), name=draw(st.sampled_from(
        ["cluster0", "tiny0", "lassen"])), rooms=(Room(racks=tuple(racks)),))
    if not racks and (datacenter.name, datacenter.id) == (jgf.EMPTY_ROOT_NAME, 0):
        # a lone cluster0 root is the empty topology's document (jgf: Empty topology)
        datacenter = Datacenter(rooms=(Room(),))
    return Environment(datacenters=(datacenter,), validity=draw(validities()))
