"""Hypothesis strategies for topologies an OpenDC topology file holds exactly: one datacenter
and room, named or unnamed clusters (racks) of machines with unique names, CPUs of one kind
with a clock, GPUs of one kind, memory in MiB, and OpenDC's own members (power models,
power sources) under ``opendc-topology:`` keys. Runs of identical machines are named as
OpenDC names the hosts of one entry (``cn``, ``cn-0``, ``cn-1``), so that the writer groups
them into one entry with a ``count``."""

from __future__ import annotations

from itertools import count
from typing import Any

from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
)
from dcx.formats import opendc_topology

words = st.from_regex(r"[A-Za-z0-9_.-]{1,8}", fullmatch=True)
clocks = st.integers(1, 6000).map(lambda mhz: mhz * 1e6) | st.floats(
    min_value=1e6, max_value=6e9, allow_nan=False)
memory_sizes = st.integers(1, 2**22).map(float) | st.floats(min_value=1e-3, max_value=1e7,
                                                            allow_nan=False)
power_models = st.fixed_dictionaries({"modelType": st.sampled_from(["linear", "mse", "sqrt"]),
                                      "maxPower": st.just("400 W"),
                                      "idlePower": st.just("200 W")})


@st.composite
def host_kinds(draw: st.DrawFn, gpu_memory: str) -> Machine:
    """A machine without a name: what one host entry describes."""
    unit = ProcessingUnit(cores=draw(st.integers(1, 128)), clock_rate_hz=draw(clocks),
                          manufacturer=draw(st.none() | words), model=draw(st.none() | words))
    gpus: tuple[ProcessingUnit, ...] = ()
    if draw(st.booleans()):
        gpu = ProcessingUnit(cores=draw(st.integers(1, 10000)), clock_rate_hz=draw(clocks),
                             manufacturer=draw(st.none() | words))
        gpus = (gpu,) * draw(st.integers(1, 4))
    memory = draw(st.none() | memory_sizes)
    extras: dict[str, Any] = {}
    if draw(st.booleans()):
        extras[opendc_topology.PREFIX + "cpuPowerModel"] = draw(power_models)
    if bool(gpus) and draw(st.booleans()):
        extras[opendc_topology.GPU_MEMBERS] = {gpu_memory: "40 GiB"}
    return Machine(cpus=(unit,) * draw(st.integers(1, 2)), gpus=gpus,
                   memory=() if memory is None else (StorageUnit(memory),),
                   arch=draw(st.none() | st.sampled_from(["x86_64", "aarch64"])),
                   extras=extras)


@st.composite
def topology_environments(draw: st.DrawFn) -> Environment:
    serial = count()
    sdk = draw(st.booleans())
    dialect = opendc_topology.SDK if sdk else opendc_topology.TOPOLOGY_READER
    racks = []
    for _ in range(draw(st.integers(0, 3))):
        machines: list[Machine | None] = []
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(host_kinds(dialect.gpu_memory))
            base = f"{draw(words)}{next(serial)}"
            copies = draw(st.integers(1, 3))
            names = [base] + [f"{base}-{n}" for n in range(copies - 1)]
            machines.extend(Machine(**{**kind.__dict__, "name": name}) for name in names)
        extras = {opendc_topology.PREFIX + "powerSource": {"name": "grid"}} \
            if draw(st.booleans()) else {}
        racks.append(Rack(name=draw(st.none() | words), slots=tuple(machines), extras=extras))
    sdk = sdk and any(rack.slots for rack in racks)  # only hosts say which spelling
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=tuple(racks)),)),),
                       extras={opendc_topology.DIALECT: opendc_topology.SDK_FILE} if sdk else {})
