"""The scheduler engine on hand-built models: time models, stage policies, failures,
up-front diagnostics, and schedule invariants over generated workloads."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Environment,
    Job,
    Machine,
    MachineState,
    MachineStateChange,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    Task,
    Workload,
)
from dcx.scheduler import policies
from dcx.scheduler.engine import SC18, simulate, time_model
from dcx.scheduler.loading import load_problem
from dcx.scheduler.metrics import compute_metrics
from dcx.scheduler.policies import Policy, all_policies, parse_policy
from dcx.scheduler.problem import Problem, compile_problem
from dcx.scheduler.runs import run_policy

I5 = ProcessingUnit(cores=2, clock_rate_hz=3.5e9)
I7 = ProcessingUnit(cores=4, clock_rate_hz=4.1e9)


def machine(index: int, cpu: ProcessingUnit = I7, cores: int | None = None) -> Machine:
    unit = cpu if cores is None else ProcessingUnit(cores=cores, clock_rate_hz=cpu.clock_rate_hz)
    return Machine(id=f"m{index}", cpus=(unit,))


def environment(*machines: Machine, events: tuple[MachineStateChange, ...] = ()) -> Environment:
    rack = Rack(slots=machines)
    return Environment((Datacenter(rooms=(Room(racks=(rack,)),)),), events=events)


def task(task_id: int, submit: float = 0.0, runtime: float = 10.0, cores: float = 1,
         deps: tuple[int | str, ...] = (), nodes: int = 1) -> Task:
    return Task(task_id, submit, runtime, request=ResourceRequest(nodes=nodes, cores=cores),
                dependencies=deps)


def workload(*jobs: tuple[Task, ...]) -> Workload:
    return Workload(tuple(Job(index, tasks) for index, tasks in enumerate(jobs)))


def compiled(work: Workload, env: Environment) -> Problem:
    result = compile_problem(work, env)
    assert result.problem is not None, [d.render() for d in result.diagnostics]
    return result.problem


def by_id(problem: Problem, values: list[float]) -> dict[object, float]:
    return dict(zip(problem.tasks.ids, values, strict=True))


# --------------------------------------------------------------------------- time models


@pytest.mark.parametrize(("submit", "tick"), [(0, 1), (1, 1), (1.5, 11), (11, 11), (12, 21)])
def test_sc18_arrival_is_the_first_tick_at_or_after_submission(submit: float, tick: float) -> None:
    assert SC18.align(submit) == tick


@pytest.mark.parametrize(("runtime", "clock", "seconds"),
                         [(1, 4100, 0), (1, 3500, 1), (100, 4100, 97), (100, 3500, 114),
                          (0, 3500, 0)])
def test_sc18_duration_is_truncated_reference_work(runtime: float, clock: float,
                                                   seconds: float) -> None:
    assert SC18.duration(runtime, clock) == seconds


def test_sc18_child_starts_at_the_tick_after_its_parent_finish_is_seen() -> None:
    problem = compiled(workload((task(1, runtime=41), task(2, deps=(1,)))), environment(machine(0)))
    schedule = simulate(problem, parse_policy("FIFO-FIRSTFIT"), SC18)
    # parent: starts at 1, runs floor(4000*41/4100) = 40 s, finishes at 41, seen at tick 41
    assert by_id(problem, schedule.finish_s)[1] == 41
    assert by_id(problem, schedule.start_s)[2] == 41


def test_sc18_zero_length_task_is_seen_only_at_the_next_tick() -> None:
    problem = compiled(workload((task(1, runtime=0), task(2, deps=(1,)))), environment(machine(0)))
    schedule = simulate(problem, parse_policy("FIFO-FIRSTFIT"), SC18)
    assert by_id(problem, schedule.finish_s)[1] == 1
    assert by_id(problem, schedule.start_s)[2] == 11


def test_event_model_starts_children_at_the_parent_finish() -> None:
    env = environment(Machine(id="m", cpus=(ProcessingUnit(cores=1),)))  # no clock: no scaling
    chain = (task(1, submit=3, runtime=7.5), task(2, submit=3, deps=(1,)))
    problem = compiled(workload(chain), env)
    schedule = simulate(problem, parse_policy("FIFO-FIRSTFIT"), time_model("event"))
    assert by_id(problem, schedule.start_s) == {1: 3, 2: 10.5}


# --------------------------------------------------------------------------- policies


def test_fifo_does_not_block_on_a_task_that_does_not_fit() -> None:
    env = environment(machine(0, cores=2))
    work = workload((task(1, runtime=100, cores=1),), (task(2, submit=1, cores=2),),
                    (task(3, submit=2, cores=1),))
    problem = compiled(work, env)
    schedule = simulate(problem, parse_policy("FIFO-FIRSTFIT"), time_model("event"))
    starts = by_id(problem, schedule.start_s)
    assert starts[3] == 2  # placed past the 2-core task waiting at the head
    assert starts[2] > starts[3]


def test_srtf_runs_the_least_work_first_and_keeps_fifo_ties() -> None:
    env = environment(Machine(id="m", cpus=(ProcessingUnit(cores=1),)))
    work = workload((task(1, runtime=5),), (task(2, runtime=30),), (task(3, runtime=1),),
                    (task(4, runtime=5),))
    problem = compiled(work, env)
    schedule = simulate(problem, parse_policy("SRTF-FIRSTFIT"), time_model("event"))
    order = sorted(problem.tasks.ids, key=lambda tid: by_id(problem, schedule.start_s)[tid])
    assert order == [3, 1, 4, 2]


@pytest.mark.parametrize(("selection", "expected"),
                         [("FIRSTFIT", "big"), ("BESTFIT", "small"), ("WORSTFIT", "big")])
def test_machine_selection(selection: str, expected: str) -> None:
    env = environment(Machine(id="big", cpus=(ProcessingUnit(cores=4),)),
                      Machine(id="small", cpus=(ProcessingUnit(cores=2),)))
    problem = compiled(workload((task(1),)), env)
    schedule = simulate(problem, parse_policy(f"FIFO-{selection}"), time_model("event"))
    assert problem.machines.labels[schedule.machines[0][0]] == expected


def test_fit_ties_go_to_the_earliest_machine() -> None:
    env = environment(machine(0), machine(1), machine(2))
    problem = compiled(workload((task(1),)), env)
    for name in ("FIFO-BESTFIT", "FIFO-WORSTFIT", "FIFO-FIRSTFIT"):
        schedule = simulate(problem, parse_policy(name), time_model("event"))
        assert schedule.machines[0] == (0,)


def test_random_is_reproducible_per_seed_and_varies_across_seeds() -> None:
    env = environment(Machine(id="m", cpus=(ProcessingUnit(cores=1),)))
    problem = compiled(workload(tuple(task(i, runtime=1 + i % 3) for i in range(30))), env)
    policy = parse_policy("RANDOM-FIRSTFIT")
    first = simulate(problem, policy, time_model("event"), seed=7)
    again = simulate(problem, policy, time_model("event"), seed=7)
    assert first.start_s == again.start_s
    orders = {tuple(simulate(problem, policy, time_model("event"), seed=s).start_s)
              for s in range(5)}
    assert len(orders) > 1


def test_policy_names() -> None:
    assert parse_policy("srtf-bestfit") == Policy("SRTF", "BESTFIT")
    assert [p.name for p in all_policies()][:3] == ["SRTF-BESTFIT", "SRTF-FIRSTFIT",
                                                     "SRTF-WORSTFIT"]
    assert len(all_policies()) == 9
    with pytest.raises(ValueError, match="unknown policy"):
        parse_policy("LIFO-BESTFIT")


def test_a_new_policy_is_one_function_and_one_registry_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def longest_first(context: policies.QueueContext) -> policies.ReadyQueue:
        tasks = context.tasks
        return policies.KeyedQueue(lambda t: (-tasks.runtime_s[t], context.queue_order[t]))

    monkeypatch.setitem(policies.TASK_ORDERS, "LRTF", longest_first)
    env = environment(Machine(id="m", cpus=(ProcessingUnit(cores=1),)))
    problem = compiled(workload((task(1, runtime=1),), (task(2, runtime=9),)), env)
    schedule = simulate(problem, parse_policy("LRTF-FIRSTFIT"), time_model("event"))
    assert by_id(problem, schedule.start_s) == {2: 0, 1: 9}


def test_multi_node_task_takes_distinct_machines() -> None:
    env = environment(machine(0, cores=2), machine(1, cores=2), machine(2, cores=2))
    problem = compiled(workload((task(1, cores=2, nodes=2), task(2, cores=2))), env)
    schedule = simulate(problem, parse_policy("FIFO-FIRSTFIT"), time_model("event"))
    assert schedule.machines[0] == (0, 1)
    assert schedule.machines[1] == (2,)


# --------------------------------------------------------------------------- machine events


def test_failure_requeues_running_tasks_and_counts_lost_work() -> None:
    events = (MachineStateChange("m0", MachineState.FAILURE, time_s=4.0),
              MachineStateChange("m0", MachineState.ACTIVE, time_s=50.0))
    env = environment(Machine(id="m0", cpus=(ProcessingUnit(cores=2),)), events=events)
    problem = compiled(workload((task(1, runtime=10, cores=2),)), env)
    run = run_policy(problem, parse_policy("FIFO-FIRSTFIT"), "event")
    assert run.schedule.lost_core_s == 8.0  # 2 cores x 4 s
    assert run.schedule.start_s == [50.0]
    assert run.schedule.first_start_s == [0.0]
    assert run.schedule.finish_s == [60.0]
    assert run.metrics.summary.requeued == 1


def test_maintenance_drains_running_work_and_places_nothing_new() -> None:
    events = (MachineStateChange("a", MachineState.MAINTENANCE, time_s=1.0),)
    env = environment(Machine(id="a", cpus=(ProcessingUnit(cores=1),)),
                      Machine(id="b", cpus=(ProcessingUnit(cores=1),)), events=events)
    problem = compiled(workload((task(1, runtime=5),), (task(2, submit=2, runtime=5),)), env)
    schedule = simulate(problem, parse_policy("FIFO-FIRSTFIT"), time_model("event"))
    assert schedule.finish_s == [5.0, 7.0]
    assert [problem.machines.labels[m[0]] for m in schedule.machines] == ["a", "b"]
    assert schedule.lost_core_s == 0


def test_tasks_left_without_machines_are_reported_not_hung() -> None:
    events = (MachineStateChange("a", MachineState.FAILURE, time_s=0.0),)
    env = environment(Machine(id="a", cpus=(ProcessingUnit(cores=1),)), events=events)
    problem = compiled(workload((task(1, submit=1),)), env)
    run = run_policy(problem, parse_policy("FIFO-FIRSTFIT"), "event")
    assert run.metrics.summary.unfinished_tasks == 1
    assert run.metrics.summary.unfinished_jobs == 1


# --------------------------------------------------------------------------- diagnostics


def codes(work: Workload, env: Environment) -> list[str]:
    result = compile_problem(work, env)
    assert result.problem is None
    return [d.code for d in result.diagnostics if d.is_error]


def test_dependency_cycle_is_diagnosed_with_its_members() -> None:
    result = compile_problem(workload((task(1, deps=(3,)), task(2, deps=(1,)),
                                       task(3, deps=(2,)), task(4))), environment(machine(0)))
    (diagnostic,) = [d for d in result.diagnostics if d.is_error]
    assert diagnostic.code == "schedule.dependency-cycle"
    assert all(f"{n}" in diagnostic.message for n in (1, 2, 3))
    assert diagnostic.pointer.startswith("/jobs/0/tasks/")


def test_bad_workloads_are_diagnosed_up_front() -> None:
    env = environment(machine(0, cores=4))
    assert codes(workload((task(1, deps=(99,)),)), env) == ["schedule.unknown-dependency"]
    assert codes(workload((task(1, cores=8),)), env) == ["schedule.too-many-cores"]
    assert codes(workload((task(1, runtime=-5),)), env) == ["schedule.negative-runtime"]
    assert codes(workload((Task(1),)), env) == ["schedule.missing-runtime"]
    assert codes(workload((task(1, nodes=2),)), env) == ["schedule.too-many-cores"]
    assert codes(workload((task(1),)), environment()) == ["schedule.no-machines"]


def test_line_recorded_by_a_reader_is_reported() -> None:
    located = Task(5, 0.0, 1.0, request=ResourceRequest(cores=64))
    result = compile_problem(workload((located,)), environment(machine(0)),
                             {"/workload/jobs/0/tasks/0": (12, 1)})
    assert [d.line for d in result.diagnostics] == [12]


def test_gwf_task_too_large_for_every_machine_names_its_line(tmp_path: Path,
                                                            corpus_dir: Path) -> None:
    """200 processors: more than the paper's 96 cores, as whole nodes or anywhere."""
    setup = corpus_dir / "gwf" / "setup.json"
    if not setup.is_file():
        pytest.skip(f"{setup} not found")
    trace = tmp_path / "big.gwf"
    trace.write_text("WorkflowID, JobID, SubmitTime, RunTime, NProcs, ReqNProcs, Dependencies\n"
                     "0, 1, 0, 10, 1, 1,\n"
                     "0, 2, 5, 10, 200, 200, 1\n")
    loaded = load_problem(trace, setup)
    [diagnostic] = [d for d in loaded.diagnostics if d.is_error]
    assert diagnostic.code == "schedule.too-many-cores" and diagnostic.line == 3


def test_dependencies_resolve_inside_the_job_before_the_workload() -> None:
    work = Workload((Job("a", (task(1), task(2, deps=(1,)))),
                     Job("b", (task(1, runtime=50), task(2, deps=(1,))))))
    problem = compiled(work, environment(machine(0)))
    assert problem.tasks.parents == [(), (0,), (), (2,)]


# --------------------------------------------------------------------------- metrics


def test_sc18_metrics_follow_the_simulator_definitions() -> None:
    # one job, a 2-task chain on one i5 core: arrival 1; t1 runs 1..12 (floor(4000*10/3500)=11),
    # seen at 21; t2 runs 21..32
    env = environment(machine(0, I5, cores=1))
    problem = compiled(workload((task(1, runtime=10), task(2, deps=(1,), runtime=10))), env)
    run = run_policy(problem, parse_policy("FIFO-FIRSTFIT"), "sc18")
    (job,) = run.metrics.jobs
    assert (job.makespan_s, job.waiting_s) == (31, 0)
    assert job.njsl == math.floor(31 / 31)
    assert run.metrics.turnaround_s == [11, 31]


def test_event_njsl_uses_the_static_critical_path() -> None:
    env = environment(Machine(id="m", cpus=(ProcessingUnit(cores=1),)))
    problem = compiled(workload((task(1, runtime=4), task(2, runtime=6))), env)
    run = run_policy(problem, parse_policy("FIFO-FIRSTFIT"), "event")
    (job,) = run.metrics.jobs
    assert job.critical_path_s == 6
    assert job.njsl == pytest.approx(10 / 6)


# --------------------------------------------------------------------------- invariants


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Workload, Environment]:
    machine_cores = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    clocks = draw(st.lists(st.sampled_from([None, 3.5e9, 4.1e9]), min_size=len(machine_cores),
                           max_size=len(machine_cores)))
    env = environment(*(Machine(id=i, cpus=(ProcessingUnit(cores=c, clock_rate_hz=clk),))
                        for i, (c, clk) in enumerate(zip(machine_cores, clocks, strict=True))))
    biggest = max(machine_cores)
    jobs = []
    next_id = 0
    for job_index in range(draw(st.integers(1, 5))):
        tasks: list[Task] = []
        for _ in range(draw(st.integers(1, 6))):
            earlier = [t.id for t in tasks]
            deps = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=2)
                        if earlier else st.just([]))
            tasks.append(task(next_id, submit=draw(st.integers(0, 40)),
                              runtime=draw(st.integers(0, 30)),
                              cores=draw(st.integers(1, biggest)), deps=tuple(deps)))
            next_id += 1
        jobs.append(Job(job_index, tuple(tasks)))
    return Workload(tuple(jobs)), env


@settings(max_examples=60, deadline=None)
@given(scenarios(), st.sampled_from([p.name for p in all_policies()]),
       st.sampled_from(["sc18", "event"]), st.integers(0, 3))
def test_schedules_respect_arrivals_dependencies_and_capacity(
        scenario: tuple[Workload, Environment], policy_name: str, model_name: str,
        seed: int) -> None:
    problem = compiled(*scenario)
    model = time_model(model_name)
    schedule = simulate(problem, parse_policy(policy_name), model, seed)
    tasks = problem.tasks
    assert schedule.unfinished == 0
    for index in range(len(tasks)):
        start = schedule.start_s[index]
        assert start >= schedule.arrival_s[index] >= tasks.submit_s[index]
        for parent in tasks.parents[index]:
            assert start >= schedule.finish_s[parent]
        if model_name == "sc18":
            assert model.align(start) == start  # starts only at ticks
    # at every start, the tasks running on each machine fit its cores
    for index in range(len(tasks)):
        moment = schedule.start_s[index]
        if schedule.finish_s[index] == moment:
            continue  # a zero-length task occupies nothing
        for machine_index in schedule.machines[index]:
            used = sum(tasks.need[other] for other in range(len(tasks))
                       if machine_index in schedule.machines[other]
                       and (other == index
                            or schedule.start_s[other] <= moment < schedule.finish_s[other]))
            assert used <= problem.machines.capacity[machine_index]
    metrics = compute_metrics(problem, schedule).summary
    assert metrics.jobs == len(problem.job_ids)
    assert 0 <= metrics.utilisation <= 1 + 1e-9
    assert metrics.jwt_s >= 0 and metrics.jms_s >= metrics.jwt_s
