"""A document that uses every field path of ``dcx.core.fields``: what a format holding
everything would carry. The loss matrix is ``conversion_losses`` applied to it restricted to
the source format, so the matrix and each conversion's report come from one function."""

from __future__ import annotations

from functools import cache

from dcx.core.model import (
    Annotation,
    Consumables,
    Datacenter,
    DatacenterSchedulerChange,
    Document,
    Environment,
    Job,
    Machine,
    MachineState,
    MachineStateChange,
    NamedResource,
    Partition,
    Placement,
    Point,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    SchedulerSpec,
    Size,
    StartMode,
    StorageUnit,
    Task,
    TaskStatus,
    Validity,
    Workload,
)


def _unit(cores: int, clock_ghz: float, unit_id: str) -> ProcessingUnit:
    return ProcessingUnit(cores=cores, clock_rate_hz=clock_ghz * 1e9, id=unit_id,
                          manufacturer="Intel", family="Xeon", generation="Skylake",
                          model="Gold 6130", energy_consumption_w=125.0, extras={"note": 1})


def _storage(capacity_mb: float, unit_id: str) -> StorageUnit:
    return StorageUnit(capacity_mb=capacity_mb, id=unit_id, manufacturer="Samsung",
                       family="DDR4", generation="4", model="M393", read_speed_mb_s=2000.0,
                       write_speed_mb_s=1000.0, energy_consumption_w=3.0)


def _machine(number: int) -> Machine:
    resource = NamedResource(name="ssd", amount=2.0, type="disk", unit="GB",
                             instances=(1.0, 1.0), extras={"note": 1})
    return Machine(
        id=f"m{number}", name=f"node{number}", state=MachineState.MAINTENANCE,
        state_label="drain",
        cpus=(_unit(8, 2.1, f"c{number}a"), _unit(8, 2.6, f"c{number}b")),
        gpus=(ProcessingUnit(cores=2560, clock_rate_hz=1.5e9, id=f"g{number}",
                             manufacturer="NVIDIA", family="Tesla", generation="Pascal",
                             model="P100", energy_consumption_w=250.0),),
        memory=(_storage(16384, f"r{number}a"), _storage(16384, f"r{number}b")),
        storage=(_storage(512000, f"d{number}a"), _storage(512000, f"d{number}b")),
        features=("infiniband", "avx512"), resources=(resource,), os="linux", arch="x86_64",
        description="a compute node", swap_mb=4096.0, network_mbit_s=10000.0, rank=number,
        available=Consumables(processors=8, memory_mb=8192.0, disk_mb=1000.0, swap_mb=10.0,
                              network_mbit_s=100.0, resources=(resource,), extras={"note": 1}),
        utilized=Consumables(processors=8, memory_mb=8192.0, extras={"note": 1}),
        extras={"note": 1})


def _environment() -> Environment:
    racks = tuple(Rack(id=f"k{n}", name=f"rack {n}", capacity_units=42,
                       power_capacity_w=10000.0, slots=(_machine(2 * n), None, _machine(2 * n + 1)),
                       extras={"note": 1}) for n in range(2))
    rooms = (Room(id="r1", name="hall", type="SERVER", location=Point(1.0, 2.0),
                  size=Size(10.0, 20.0), racks=racks, extras={"note": 1}),
             Room(id="r2", type="COOLING"))
    scheduler = SchedulerSpec(name="slurm", url="https://example.org", options={"a": 1})
    datacenters = (Datacenter(id="dc1", name="main", location="Delft", operator="TU",
                              scheduler=scheduler, rooms=rooms, extras={"note": 1}),
                   # a rack named like one of dc1's: formats whose paths must be unique
                   # (JGF) rename it, a value restriction the matrix must show
                   Datacenter(id="dc2", rooms=(Room(racks=(Rack(name="rack 0", slots=(
                       _machine(9), Machine())),)),)))
    events = (MachineStateChange(machine="m0", state=MachineState.FAILURE, time_s=60.0,
                                 cause="disk", attributes={"note": 1}),
              DatacenterSchedulerChange(datacenter="dc1", scheduler=scheduler, time_s=120.0,
                                        attributes={"note": 1}))
    partitions = (Partition(name="gpu", machines=("node0", "node1"), allow_groups=("staff",),
                            deny_accounts=("guests",), extras={"note": 1}),
                  Partition(name="all", machines=None))
    return Environment(datacenters=datacenters, events=events, name="saturated",
                       description="every field used", extras={"note": 1},
                       partitions=partitions,
                       validity=Validity(start_s=1676560542.0, end_s=1676562342.0))


def _task(number: int, dependencies: tuple[str, ...], cores: float = 4.0,
          runtime_s: float = 100.0) -> Task:
    return Task(
        id=f"t{number}", submit_time_s=10.0 * number, runtime_s=runtime_s,
        requested_time_s=300.0,
        request=ResourceRequest(nodes=2, cores=cores, memory_mb=2048.0, gpus=1, resources=(
            NamedResource(name="license", amount=1.0),), os="linux", arch="x86_64",
            features=("infiniband",), placement=Placement.CORES),
        dependencies=dependencies, deadline_s=5000.0, start_mode=StartMode.EXACT,
        start_time_s=50.0 * number, preemptible=True, user="alice", group="staff",
        image="ubuntu.img", image_size_mb=1024.0, status=TaskStatus.FAILED, wait_time_s=30.0,
        used_memory_mb=512.0, cpu_time_s=90.0, application="42", queue="7", partition="3",
        think_time_s=5.0, extras={"note": 1})


def _workload() -> Workload:
    jobs = (Job(id="j1", name="pipeline", user="alice", extras={"note": 1},
                tasks=(_task(1, ()), _task(2, ("t1",)),
                       _task(3, ("t1", "t2"), cores=2.5, runtime_s=100.5),
                       Task(id="t4"),
                       # what a run recorded of a task without a runtime (WfFormat keeps
                       # them only in an execution entry, which needs one), its application
                       # a program's name (SWF and GWF hold numbers only), on two nodes
                       # (its cores, as many processors, are what WfFormat then loses)
                       Task(id="t5", request=ResourceRequest(nodes=2, cores=2.0,
                                                             memory_mb=512.0),
                            wait_time_s=15.0, used_memory_mb=256.0, application="blastall"))),
            Job(id="j2"))
    return Workload(jobs=jobs, name="saturated", description="every field used",
                    # an origin with its UTC offset: a target keeping the instant alone
                    # (SWF's UnixStartTime) loses the offset
                    time_origin="2018-01-01T00:00:00+01:00", makespan_s=5000.0,
                    attributes={"note": 1},
                    annotations=(Annotation(target="t1", start_mode=StartMode.EXACT,
                                            start_offset_s=5.0, extras={"note": 1}),),
                    extras={"note": 1})


@cache
def saturated_document() -> Document:
    """A topology and a workload in which every field path has a value no default gives,
    plus a machine and a task with nothing but defaults, a task asking for part of a core
    (what formats fill in, round or refuse) and for part of a second (what formats of
    whole seconds round), and one asking for cores and memory without a
    runtime (what a format recording only measured tasks, WfFormat, cannot keep)."""
    return Document(environment=_environment(), workload=_workload())
