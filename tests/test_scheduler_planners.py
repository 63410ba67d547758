"""Every planner the event loop calls (SC18 greedy, strict queue, EASY, conservative) on
workloads that ask for memory and a named resource beside cores, as whole nodes or as
cores anywhere: no machine is ever given more cores or more memory than it has, every task
finishes, and the backfilling planners keep their promises on these resources too."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Environment,
    Job,
    Machine,
    NamedResource,
    Placement,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StorageUnit,
    Task,
    Workload,
)
from dcx.scheduler import backfilling
from dcx.scheduler.engine import Schedule, simulate, time_model
from dcx.scheduler.packing import spread_demand
from dcx.scheduler.policies import parse_policy
from dcx.scheduler.problem import CORE_UNITS, MEMORY_UNITS, Dimension, Problem, compile_problem

PLANNERS = ("FIFO-FIRSTFIT", "SRTF-BESTFIT", "FCFS", "SJF", "LJF", "FCFS-EASY", "SJF-EASY",
            "FCFS-CONSERVATIVE", "SJF-CONSERVATIVE")
"""One or more policies per planner: SC18 greedy, strict queue, EASY, conservative."""

EVENT = time_model("event")


def machine(name: str, cores: int, memory_mb: float, disk: float) -> Machine:
    return Machine(id=name, cpus=(ProcessingUnit(cores=cores),),
                   memory=(StorageUnit(capacity_mb=memory_mb),),
                   resources=(NamedResource("Disk", disk),))


def environment(*machines: Machine) -> Environment:
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))


def task(index: int, submit: float, runtime: float, requested: float, nodes: int,
         cores: int, memory_mb: float, disk: float, placement: Placement) -> Task:
    request = ResourceRequest(nodes=nodes, cores=cores, memory_mb=memory_mb,
                              resources=(NamedResource("Disk", disk),), placement=placement)
    return Task(index, submit, runtime, requested_time_s=requested, request=request)


def compiled(tasks: list[Task], env: Environment) -> Problem:
    work = Workload(tuple(Job(each.id, (each,)) for each in tasks))
    result = compile_problem(work, env)
    assert result.problem is not None, [d.render() for d in result.diagnostics]
    return result.problem


@st.composite
def scenarios(draw: st.DrawFn) -> Problem:
    """Machines of 1 to 4 cores with 1 to 4 GB; tasks each fitting one machine (whole
    nodes) or all of them (cores anywhere), with exact or overestimated requested times."""
    machines = [machine(f"m{index}", draw(st.integers(1, 4)),
                        draw(st.sampled_from([1024.0, 2048.0, 4096.0])),
                        draw(st.sampled_from([10.0, 20.0])))
                for index in range(draw(st.integers(1, 4)))]
    tasks = []
    for index in range(draw(st.integers(1, 10))):
        home = draw(st.sampled_from(machines))
        runtime = draw(st.integers(1, 20))
        requested = runtime + draw(st.sampled_from([0, 0, 5, 30]))
        disk = draw(st.sampled_from([0.0, 5.0, 10.0]))
        if draw(st.booleans()):
            # cores anywhere: each core brings its share of memory (per processor, as SWF)
            total = sum(m.core_count for m in machines)
            cores = draw(st.integers(1, total))
            # at most 256 MB a core: every machine has at least that much per core
            tasks.append(task(index, draw(st.integers(0, 30)), runtime, requested, cores, 1,
                              draw(st.sampled_from([128.0, 256.0])), 0.0, Placement.CORES))
        else:
            tasks.append(task(index, draw(st.integers(0, 30)), runtime, requested, 1,
                              draw(st.integers(1, home.core_count)),
                              draw(st.sampled_from([128.0, home.memory_mb / 2,
                                                    home.memory_mb])),
                              disk, Placement.NODES))
    return compiled(tasks, environment(*machines))


def held(problem: Problem, schedule: Schedule, index: int) -> list[tuple[int, list[int]]]:
    """What the task held on each of its machines: (machine, [cores, then units of each
    dimension])."""
    tasks = problem.tasks
    machines = schedule.machines[index]
    dimensions = len(problem.machines.extra_capacity)
    shares = schedule.shares.get(index)
    cores = list(shares) if shares is not None else [tasks.need[index]] * len(machines)
    taken = (spread_demand(tasks.need[index], tasks.demand[index], shares)
             if shares is not None else [tasks.demand[index]] * len(machines))
    result = []
    for machine, core, amounts in zip(machines, cores, taken or [()] * len(machines),
                                      strict=True):
        vector = [core] + [0] * dimensions
        for dimension, units in amounts:
            vector[1 + dimension] += units
        result.append((machine, vector))
    return result


def assert_never_overcommitted(problem: Problem, schedule: Schedule) -> None:
    capacity = [problem.machines.capacity, *problem.machines.extra_capacity]
    for index in range(len(problem.tasks)):
        moment = schedule.start_s[index]
        assert moment >= schedule.arrival_s[index]
        running = [other for other in range(len(problem.tasks))
                   if schedule.start_s[other] <= moment < schedule.finish_s[other]]
        used: dict[int, list[int]] = {}
        for other in running:
            for machine, vector in held(problem, schedule, other):
                total = used.setdefault(machine, [0] * len(capacity))
                for resource, amount in enumerate(vector):
                    total[resource] += amount
        for machine, total in used.items():
            for resource, amount in enumerate(total):
                assert amount <= capacity[resource][machine], (
                    f"machine {machine} resource {resource} at {moment}")


@settings(max_examples=80, deadline=None)
@given(scenarios(), st.sampled_from(PLANNERS))
def test_no_planner_gives_a_machine_more_cores_or_memory_than_it_has(
        problem: Problem, policy_name: str) -> None:
    schedule = simulate(problem, parse_policy(policy_name), EVENT, 0)
    assert schedule.unfinished == 0
    assert_never_overcommitted(problem, schedule)


@settings(max_examples=60, deadline=None)
@given(scenarios(), st.sampled_from(["FCFS-CONSERVATIVE", "FCFS-EASY"]))
def test_no_backfilling_delays_a_task_past_its_first_reservation_with_memory(
        problem: Problem, policy_name: str) -> None:
    """Reservations (every waiting task's under conservative, the head's shadow under
    EASY) are made over memory too, so an early finish, a compression or a backfilled task
    never pushes a task past the start it was first promised."""
    schedule = simulate(problem, parse_policy(policy_name), EVENT, 0)
    for start, reserved in zip(schedule.start_s, schedule.reserved_s, strict=True):
        if not math.isnan(reserved):
            assert start <= reserved


def test_memory_keeps_a_backfilled_task_off_the_machine_it_would_overfill() -> None:
    """Two 4-core machines with 4 GB each. A 2-core task holding all of m0's memory runs
    long; a 2-core task asking 1 GB fits m0's free cores but not its memory, so every
    planner puts it on m1 at once; the 4-core, 4 GB head waits for m1."""
    env = environment(machine("m0", 4, 4096.0, 10.0), machine("m1", 4, 4096.0, 10.0))
    tasks = [task(0, 0, 100, 100, 1, 2, 4096.0, 0.0, Placement.NODES),
             task(1, 1, 10, 10, 1, 2, 1024.0, 0.0, Placement.NODES)]
    problem = compiled(tasks, env)
    for name in PLANNERS:
        schedule = simulate(problem, parse_policy(name), EVENT, 0)
        assert schedule.machines == [(0,), (1,)], name
        assert schedule.start_s == [0.0, 1.0], name


def test_easy_counts_the_memory_the_head_needs_at_its_shadow() -> None:
    """One machine of 4 cores and 4 GB. A 1-core, 3 GB task runs to 100; the head asks
    4 GB (shadow 100); a 1-core, 1 GB task arriving next fits the cores now but would end
    after the shadow and takes memory the head needs then: under EASY it waits, and the
    head starts at 100."""
    env = environment(machine("m0", 4, 4096.0, 10.0))
    tasks = [task(0, 0, 100, 100, 1, 1, 3072.0, 0.0, Placement.NODES),
             task(1, 1, 10, 10, 1, 1, 4096.0, 0.0, Placement.NODES),
             task(2, 2, 200, 200, 1, 1, 1024.0, 0.0, Placement.NODES)]
    schedule = simulate(compiled(tasks, env), parse_policy("FCFS-EASY"), EVENT, 0)
    assert schedule.start_s[1] == 100.0
    assert schedule.start_s[2] == 110.0
    greedy = simulate(compiled(tasks, env), parse_policy("FIFO-FIRSTFIT"), EVENT, 0)
    assert greedy.start_s[2] == 2.0  # no reservation: it overtakes and delays the head


def binding_like_cores(problem: Problem) -> Problem:
    """``problem`` with memory that binds exactly where cores do: 1 GB per core on every
    machine, 1 GB per core asked by every task."""
    per_core = 1024 * MEMORY_UNITS
    machines = replace(
        problem.machines, dimensions=(Dimension("memory", "memory", MEMORY_UNITS),),
        extra_capacity=(tuple(cores * per_core // CORE_UNITS
                              for cores in problem.machines.capacity),))
    tasks = replace(problem.tasks, demand=[((0, need * per_core // CORE_UNITS),)
                                           for need in problem.tasks.need])
    return replace(problem, machines=machines, tasks=tasks)


@st.composite
def cores_only(draw: st.DrawFn) -> Problem:
    """Up to 20 tasks on 1 to 3 machines of 1 to 4 cores: whole nodes or cores anywhere,
    exact or overestimated requested times."""
    machines = [Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=draw(st.integers(1, 4))),))
                for index in range(draw(st.integers(1, 3)))]
    tasks = []
    for index in range(draw(st.integers(1, 20))):
        runtime = draw(st.integers(1, 20))
        requested = runtime + draw(st.sampled_from([0, 0, 3, 15]))
        if draw(st.booleans()):
            request = ResourceRequest(
                nodes=draw(st.integers(1, sum(m.core_count for m in machines))), cores=1,
                placement=Placement.CORES)
        else:
            request = ResourceRequest(
                nodes=1, cores=draw(st.integers(1, min(m.core_count for m in machines))))
        tasks.append(Task(index, draw(st.integers(0, 40)), runtime,
                          requested_time_s=requested, request=request))
    work = Workload(tuple(Job(each.id, (each,)) for each in tasks))
    result = compile_problem(work, environment(*machines))
    assert result.problem is not None
    return result.problem


@settings(max_examples=200, deadline=None)
@given(cores_only(), st.sampled_from(["FCFS", "SJF", "FCFS-EASY", "SJF-EASY",
                                       "FCFS-CONSERVATIVE", "SJF-CONSERVATIVE"]))
def test_memory_that_binds_where_cores_do_changes_no_schedule(
        problem: Problem, policy_name: str) -> None:
    """The resource-aware paths (R4 on memory, EASY's extra memory, conservative's
    ``MachineProfile`` with memory) against the cores-only ones (machine by machine, not pooled):
    memory proportional to cores must leave every start and every machine as they were."""
    policy = parse_policy(policy_name)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(backfilling, "_pooled", lambda problem: False)
        cores = simulate(problem, policy, EVENT, 0)
    both = simulate(binding_like_cores(problem), policy, EVENT, 0)
    assert both.start_s == cores.start_s
    assert both.machines == cores.machines
    assert both.shares == cores.shares
