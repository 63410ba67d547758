"""Requests as the field means them: whole nodes (``Placement.NODES``) and cores anywhere
(``Placement.CORES``, SWF and GWF processors), honoured by every shipped scheduler, the
SC18 ones included; how cores anywhere are laid onto machines (``scheduler/packing.py``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Environment,
    Job,
    Machine,
    Placement,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StorageUnit,
    Task,
    Workload,
)
from dcx.scheduler.declaration import shipped_declarations
from dcx.scheduler.engine import Schedule
from dcx.scheduler.loading import read_document
from dcx.scheduler.policies import Policy, parse_policy
from dcx.scheduler.problem import CORE_UNITS, Problem, compile_problem
from dcx.scheduler.runs import run_policy

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = shipped_declarations()
EVERY = sorted(SHIPPED)
CORES, NODES = Placement.CORES, Placement.NODES


def _environment(count: int, cores: int, memory_mb: float | None = None) -> Environment:
    memory = (StorageUnit(capacity_mb=memory_mb),) if memory_mb is not None else ()
    machines = tuple(Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=cores),),
                             memory=memory)
                     for index in range(count))
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))


def _workload(*requests: tuple[float, float, float, ResourceRequest]) -> Workload:
    """Jobs of one task: ``(submit, runtime, requested, request)``."""
    return Workload(tuple(
        Job(index + 1, (Task(index + 1, submit, runtime, requested_time_s=requested,
                             request=request),))
        for index, (submit, runtime, requested, request) in enumerate(requests)))


def _compiled(work: Workload, environment: Environment) -> Problem:
    result = compile_problem(work, environment)
    assert result.problem is not None, [d.render() for d in result.diagnostics]
    return result.problem


def _run(problem: Problem, policy: Policy) -> Schedule:
    schedule = run_policy(problem, policy, seed=1).schedule
    assert schedule.unfinished == 0
    return schedule


def _slurm_example() -> Environment:
    _, document, diagnostics = read_document(ROOT / "examples" / "slurm" / "cluster.conf")
    assert document is not None and document.environment is not None, diagnostics
    return document.environment


@pytest.mark.parametrize("name", EVERY)
def test_a_16_processor_job_runs_on_the_slurm_example_cluster(name: str) -> None:
    """16 processors anywhere fit on one 32-core node of the example cluster; as 16 whole
    one-core nodes they would need 16 machines, and the cluster has 9."""
    job = ResourceRequest(nodes=16, cores=1, placement=CORES)
    problem = _compiled(_workload((0, 100, 200, job)), _slurm_example())
    schedule = _run(problem, SHIPPED[name])
    assert schedule.start_s == [0] and schedule.finish_s == [100]
    [machines] = schedule.machines
    assert len(machines) == 1 and problem.machines.capacity[machines[0]] >= 16 * CORE_UNITS
    as_nodes = compile_problem(_workload((0, 100, 200, ResourceRequest(nodes=16, cores=1))),
                               _slurm_example())
    assert [d.code for d in as_nodes.diagnostics if d.is_error] == ["schedule.too-many-cores"]


@pytest.mark.parametrize("name", EVERY)
def test_a_256_processor_job_runs_on_64_four_core_machines(name: str) -> None:
    job = ResourceRequest(nodes=256, cores=1, placement=CORES)
    problem = _compiled(_workload((0, 50, 60, job)), _environment(64, 4))
    schedule = _run(problem, SHIPPED[name])
    assert schedule.start_s == [0]
    assert schedule.machines == [tuple(range(64))]
    assert schedule.shares == {0: (4 * CORE_UNITS,) * 64}


def test_a_job_wider_than_all_the_cores_is_refused_before_any_run() -> None:
    job = ResourceRequest(nodes=257, cores=1, placement=CORES)
    result = compile_problem(_workload((0, 1, 1, job)), _environment(64, 4))
    assert result.problem is None
    [diagnostic] = [d for d in result.diagnostics if d.is_error]
    assert diagnostic.code == "schedule.too-many-cores" and "257 core(s) anywhere" in (
        diagnostic.message)


@pytest.mark.parametrize("name", EVERY)
def test_cores_anywhere_spread_first_fit_and_share_machines_with_whole_nodes(
        name: str) -> None:
    """6 cores anywhere on two 4-core machines: 4 on the first, 2 on the second, where a
    2-core whole-node job then runs beside them."""
    problem = _compiled(_workload((0, 10, 10, ResourceRequest(nodes=6, cores=1,
                                                              placement=CORES)),
                                  (1, 10, 10, ResourceRequest(nodes=1, cores=2))),
                        _environment(2, 4))
    schedule = _run(problem, SHIPPED[name])
    assert schedule.start_s == [0, 1]
    assert schedule.machines == [(0, 1), (1,)]
    assert schedule.shares == {0: (4 * CORE_UNITS, 2 * CORE_UNITS)}


@pytest.mark.parametrize("selection", ["FIRSTFIT", "BESTFIT", "WORSTFIT"])
def test_cores_anywhere_that_fit_on_one_machine_go_where_r5_puts_them(selection: str) -> None:
    """A 2-core job anywhere, after a 1-core and a 2-core one: it goes on one machine, the
    fullest that fits under BestFit, the emptiest under WorstFit, the first under
    FirstFit."""
    problem = _compiled(_workload((0, 10, 10, ResourceRequest(nodes=1, cores=1)),
                                  (0, 10, 10, ResourceRequest(nodes=1, cores=2)),
                                  (1, 10, 10, ResourceRequest(nodes=2, cores=1,
                                                              placement=CORES))),
                        _environment(3, 4))
    schedule = _run(problem, parse_policy(f"FIFO-{selection}"))
    first, second = schedule.machines[0][0], schedule.machines[1][0]
    free = [4] * 3
    free[first] -= 1
    free[second] -= 2
    [third] = schedule.machines[2]
    fitting = [m for m in range(3) if free[m] >= 2]
    expected = {"FIRSTFIT": fitting[0], "BESTFIT": min(fitting, key=free.__getitem__),
                "WORSTFIT": max(fitting, key=free.__getitem__)}[selection]
    assert third == expected


@pytest.mark.parametrize("name", [name for name in EVERY
                                  if SHIPPED[name].backfilling == "GREEDY"])
def test_each_core_anywhere_brings_its_share_of_memory(name: str) -> None:
    """6 cores anywhere with 1,000 MB per processor on two machines of 4 cores and 4,000 MB:
    the second machine keeps 2 cores and 2,000 MB free, too little for a 2,500 MB job,
    which waits for the first to end."""
    problem = _compiled(_workload(
        (0, 10, 10, ResourceRequest(nodes=6, cores=1, memory_mb=1000, placement=CORES)),
        (1, 5, 5, ResourceRequest(nodes=1, cores=1, memory_mb=2500))),
        _environment(2, 4, memory_mb=4000))
    schedule = _run(problem, SHIPPED[name])
    assert schedule.machines[0] == (0, 1)
    assert schedule.start_s[1] == 10


def test_memory_limits_how_many_cores_a_machine_takes() -> None:
    """Cores anywhere, 1,500 MB each: a machine of 4 cores and 4,000 MB takes 2 of them."""
    problem = _compiled(_workload(
        (0, 10, 10, ResourceRequest(nodes=4, cores=1, memory_mb=1500, placement=CORES))),
        _environment(2, 4, memory_mb=4000))
    schedule = _run(problem, parse_policy("FIFO-FIRSTFIT"))
    assert schedule.machines == [(0, 1)]
    assert schedule.shares == {0: (2 * CORE_UNITS, 2 * CORE_UNITS)}


@pytest.mark.parametrize(("name", "cores"), [(name, 1) for name in EVERY] + [
    (name, 2) for name in EVERY if SHIPPED[name].backfilling == "GREEDY"])
def test_one_core_anywhere_schedules_exactly_as_one_whole_node(name: str, cores: int) -> None:
    """GWF and SWF one-processor tasks become cores anywhere: nothing moves on single-core
    machines, nor under the SC18 schedulers on the paper's multi-core ones. (Backfilling
    plans one-core tasks on multi-core machines as one pool of cores when every task is
    cores anywhere, which may start them earlier than machine by machine.)"""
    requests = [(float(t % 7), float(1 + t % 5), float(2 + t % 6)) for t in range(40)]

    def run(placement: Placement) -> Schedule:
        work = _workload(*((s, r, q, ResourceRequest(placement=placement))
                           for s, r, q in requests))
        return _run(_compiled(work, _environment(6 // cores, cores)), SHIPPED[name])

    whole, anywhere = run(NODES), run(CORES)
    assert anywhere.start_s == whole.start_s and anywhere.machines == whole.machines


# --------------------------------------------------------------------------- properties

Spec = tuple[int, int, int, int, bool]
"""(submit, runtime, requested, cores, anywhere)"""


def _allocation(problem: Problem, schedule: Schedule, task: int) -> list[tuple[int, int]]:
    machines = schedule.machines[task]
    shares = schedule.shares.get(task, (problem.tasks.need[task],) * len(machines))
    return list(zip(machines, shares, strict=True))


def _never_over_allocated(problem: Problem, schedule: Schedule) -> None:
    events: list[tuple[float, int, int, int]] = []
    for task in range(len(problem.tasks)):
        if schedule.finish_s[task] <= schedule.start_s[task]:
            continue
        for machine, cores in _allocation(problem, schedule, task):
            events.append((schedule.start_s[task], 1, machine, cores))
            events.append((schedule.finish_s[task], 0, machine, -cores))
    used = [0] * len(problem.machines)
    for _, _, machine, delta in sorted(events):
        used[machine] += delta
        assert used[machine] <= problem.machines.capacity[machine]


@st.composite
def mixed(draw: st.DrawFn) -> tuple[list[Spec], int]:
    machines = draw(st.integers(1, 4))
    jobs = []
    for _ in range(draw(st.integers(1, 10))):
        runtime = draw(st.integers(0, 12))
        anywhere = draw(st.booleans())
        widest = 4 * machines if anywhere else 4
        jobs.append((draw(st.integers(0, 20)), runtime, max(1, runtime + draw(
            st.integers(0, 8))), draw(st.integers(1, widest)), anywhere))
    return jobs, machines


def _mixed_problem(jobs: Sequence[Spec], machines: int) -> Problem:
    return _compiled(_workload(*(
        (submit, runtime, requested, ResourceRequest(nodes=cores, cores=1, placement=CORES)
         if anywhere else ResourceRequest(nodes=1, cores=cores))
        for submit, runtime, requested, cores, anywhere in jobs)), _environment(machines, 4))


@settings(max_examples=200, deadline=None)
@given(mixed(), st.sampled_from(["FIFO-FIRSTFIT", "SRTF-BESTFIT", "FIFO-WORSTFIT", "FCFS",
                                 "FCFS-EASY", "SJF-EASY", "FCFS-CONSERVATIVE",
                                 "FCFS-CONSERVATIVE-BESTFIT", "FCFS-EASY-WORSTFIT"]))
def test_mixed_requests_keep_every_planner_s_guarantees(case: tuple[list[Spec], int],
                                                        name: str) -> None:
    jobs, machines = case
    problem = _mixed_problem(jobs, machines)
    policy = parse_policy(name)
    schedule = _run(problem, policy)
    _never_over_allocated(problem, schedule)
    for task, (submit, _, _, cores, anywhere) in enumerate(jobs):
        assert schedule.start_s[task] >= submit
        assert sum(share for _, share in _allocation(problem, schedule, task)) == (
            cores * CORE_UNITS)
        assert anywhere or len(schedule.machines[task]) == 1
        promised = schedule.reserved_s[task] if schedule.reserved_s else math.nan
        if policy.backfilling in ("EASY", "CONSERVATIVE") and policy.task_order == "FCFS":
            assert math.isnan(promised) or schedule.start_s[task] <= promised
