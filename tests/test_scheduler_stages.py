"""Stages as components: J2 (job eligibility) and J3 (job ordering) under every planner, on
schedules computed by hand; the declaration vocabulary against the component registries;
a new policy as one class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Environment,
    Job,
    Machine,
    MachineStateChange,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    Task,
    Workload,
)
from dcx.parsing.jsonio import load_json
from dcx.scheduler import job_stages
from dcx.scheduler.declaration import load_declaration
from dcx.scheduler.engine import simulate, time_model
from dcx.scheduler.policies import Policy, parse_policy, stage_vocabulary
from dcx.scheduler.problem import Problem, compile_problem
from dcx.scheduler.runs import run_policy
from dcx.scheduler.state import SchedulerState
from tests.test_scheduler import compiled, scenarios

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "scheduler.schema.json"


def _environment(count: int) -> Environment:
    # no clock rate: durations are the runtimes themselves
    machines = tuple(Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=1),))
                     for index in range(count))
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))


def _task(task_id: str, submit: float, runtime: float,
          requested: float | None = None) -> Task:
    return Task(task_id, submit, runtime, requested_time_s=requested,
                request=ResourceRequest(nodes=1, cores=1))


def _problem(jobs: dict[str, tuple[Task, ...]], machines: int) -> Problem:
    work = Workload(tuple(Job(name, tasks) for name, tasks in jobs.items()))
    result = compile_problem(work, _environment(machines))
    assert result.problem is not None, [d.render() for d in result.diagnostics]
    return result.problem


def _starts(problem: Problem, policy: str) -> dict[object, float]:
    schedule = run_policy(problem, parse_policy(policy)).schedule
    assert schedule.unfinished == 0
    return dict(zip(problem.tasks.ids, schedule.start_s, strict=True))


# Three jobs on one core, everything submitted at 0. Requested work (runtime, as the trace
# gives no requested time): A 10 + 10 = 20, B 5, C 12.
THREE_JOBS = {"A": (_task("a1", 0, 10), _task("a2", 0, 10)),
              "B": (_task("b1", 0, 5),),
              "C": (_task("c1", 0, 12),)}


@pytest.mark.parametrize(("policy", "starts"), [
    # one task queue across jobs in arrival order (SC18)
    ("FIFO-FIRSTFIT", {"a1": 0, "a2": 10, "b1": 20, "c1": 25}),
    # least requested work first: B (5), C (12), A (20)
    ("FIFO-FIRSTFIT+J3-SJF", {"b1": 0, "c1": 5, "a1": 17, "a2": 27}),
    # most first: A, C, B
    ("FIFO-FIRSTFIT+J3-LJF", {"a1": 0, "a2": 10, "c1": 20, "b1": 32}),
    # SRTF alone interleaves the jobs' tasks: b1 (5), a1, a2 (10, FIFO tie), c1 (12)
    ("SRTF-FIRSTFIT", {"b1": 0, "a1": 5, "a2": 15, "c1": 25}),
    # jobs by submission (all at 0: workload order), SRTF inside each job
    ("SRTF-FIRSTFIT+J3-FCFS", {"a1": 0, "a2": 10, "b1": 20, "c1": 25}),
    # the queue planners key its queue the same way: strict SJF order of jobs
    ("FCFS+J3-SJF", {"b1": 0, "c1": 5, "a1": 17, "a2": 27}),
    ("FCFS-EASY+J3-LJF", {"a1": 0, "a2": 10, "c1": 20, "b1": 32}),
])
def test_j3_serves_jobs_in_order_and_each_job_in_t2_order(
        policy: str, starts: dict[str, float]) -> None:
    assert _starts(_problem(THREE_JOBS, machines=1), policy) == starts


def test_j3_fcfs_orders_jobs_by_their_first_submission() -> None:
    # job X's only task arrives last but X was submitted first (x0 at 0)
    jobs = {"X": (_task("x0", 0, 1), _task("x1", 3, 4)),
            "Y": (_task("y1", 2, 4),)}
    problem = _problem(jobs, machines=1)
    # FIFO alone: y1 (arrived 2) before x1 (arrived 3); FCFS jobs: X before Y once both wait
    assert _starts(problem, "FIFO-FIRSTFIT") == {"x0": 0, "x1": 6, "y1": 2}
    jobs["Y"] = (_task("y1", 2, 4), _task("y2", 2, 4))
    problem = _problem(jobs, machines=1)
    # y1 runs 2..6; at 6 x1 (job X, submitted 0) goes before y2 (job Y, submitted 2)
    assert _starts(problem, "FIFO-FIRSTFIT") == {"x0": 0, "x1": 10, "y1": 2, "y2": 6}
    assert _starts(problem, "FIFO-FIRSTFIT+J3-FCFS") == {"x0": 0, "x1": 6, "y1": 2, "y2": 10}


# Two cores. Job A: a1 at 0, a2 at 5; job B: b1 at 1 (3 s).
TWO_PHASES = {"A": (_task("a1", 0, 10, 10), _task("a2", 5, 10, 10)),
              "B": (_task("b1", 1, 3, 3),)}


@pytest.mark.parametrize("policy", ["FIFO-FIRSTFIT", "FCFS", "FCFS-EASY",
                                    "FCFS-CONSERVATIVE"])
def test_j2_all_lets_each_task_in_at_its_own_arrival(policy: str) -> None:
    assert _starts(_problem(TWO_PHASES, machines=2), policy) == {"a1": 0, "a2": 5, "b1": 1}


@pytest.mark.parametrize("policy", ["FIFO-FIRSTFIT", "FCFS", "FCFS-EASY",
                                    "FCFS-CONSERVATIVE"])
def test_j2_whole_job_holds_a_job_until_its_last_task_arrives(policy: str) -> None:
    # A is eligible at 5, when a2 arrives: both its tasks start then, on the two cores
    # (b1 ran from 1 to 4)
    starts = _starts(_problem(TWO_PHASES, machines=2), f"{policy}+J2-WHOLE-JOB")
    assert starts == {"a1": 5, "a2": 5, "b1": 1}


def test_j2_whole_job_under_strict_order_on_one_core() -> None:
    jobs = {"A": (_task("a1", 0, 4, 4), _task("a2", 2, 4, 4)),
            "B": (_task("b1", 1, 2, 2),)}
    problem = _problem(jobs, machines=1)
    assert _starts(problem, "FCFS") == {"a1": 0, "a2": 6, "b1": 4}
    # B runs 1..3 alone; A joins at 2 and runs a1 3..7, a2 7..11
    assert _starts(problem, "FCFS+J2-WHOLE-JOB") == {"a1": 3, "a2": 7, "b1": 1}


def test_j2_whole_job_under_the_sc18_time_model_waits_for_the_last_arrival_tick() -> None:
    problem = _problem(TWO_PHASES, machines=2)
    policy = parse_policy("FIFO-FIRSTFIT+J2-WHOLE-JOB")
    schedule = simulate(problem, policy, time_model("sc18"))
    # arrivals at ticks 1 (a1, b1) and 11 (a2): A is eligible at 11
    assert dict(zip(problem.tasks.ids, schedule.start_s, strict=True)) == {
        "a1": 11, "a2": 11, "b1": 1}


# --------------------------------------------------------------------------- declarations


def test_the_declaration_vocabulary_is_the_component_registries() -> None:
    decoded, _ = load_json(SCHEMA.read_bytes())
    assert decoded is not None
    stages = decoded.value["properties"]["stages"]["properties"]
    for stage, names in stage_vocabulary().items():
        assert tuple(stages[stage]["enum"]) == names, stage


def test_a_declaration_chooses_the_job_stages(tmp_path: Path) -> None:
    path = tmp_path / "sjf-jobs.json"
    path.write_text(json.dumps({"name": "SJF-JOBS", "stages": {
        "J2": "WHOLE-JOB", "J3": "SJF", "T2": "FCFS", "R5": "FIRSTFIT",
        "backfilling": "EASY"}}))
    policy, diagnostics = load_declaration(path)
    assert diagnostics == []
    assert policy == Policy("FCFS", "FIRSTFIT", "EASY", job_eligibility="WHOLE-JOB",
                            job_order="SJF")
    assert policy.name == "FCFS-EASY+J2-WHOLE-JOB+J3-SJF"
    assert parse_policy(policy.name) == policy
    path.write_text(json.dumps({"name": "X", "stages": {"J3": "EDF", "T2": "FCFS",
                                                         "R5": "FIRSTFIT"}}))
    policy, diagnostics = load_declaration(path)
    assert policy is None and diagnostics[0].code.startswith("schema.")


@pytest.mark.parametrize("name", ["FCFS+J3-EDF", "FCFS+J4-SJF", "FCFS+J3-SJF+J3-LJF",
                                  "FIFO-FIRSTFIT+"])
def test_unknown_stage_suffixes(name: str) -> None:
    with pytest.raises(ValueError, match="unknown policy"):
        parse_policy(name)


def test_a_new_job_order_is_one_class_and_one_registry_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class MostTasksFirst:
        def job_keys(self, state: SchedulerState) -> list[float] | None:
            return [-len(members) for members in job_stages.tasks_by_job(state.tasks)]

    monkeypatch.setitem(job_stages.JOB_ORDERS, "MOST-TASKS", MostTasksFirst)
    problem = _problem({"P": (_task("p1", 0, 3),),
                        "Q": (_task("q1", 0, 2), _task("q2", 0, 2))}, machines=1)
    assert _starts(problem, "FIFO-FIRSTFIT") == {"p1": 0, "q1": 3, "q2": 5}
    assert _starts(problem, "FIFO-FIRSTFIT+J3-MOST-TASKS") == {"q1": 0, "q2": 2, "p1": 4}


# --------------------------------------------------------------------------- R2 / R3


def _typed_machines(*, events: tuple[MachineStateChange, ...] = ()) -> Environment:
    machines = (
        Machine(id="m0", cpus=(ProcessingUnit(cores=1),), os="linux", features=("ssd",)),
        Machine(id="m1", cpus=(ProcessingUnit(cores=1),), os="windows", features=("ssd",)),
        Machine(id="m2", cpus=(ProcessingUnit(cores=1),), os="Linux", arch="x86_64",
                features=("gpu-x", "ssd")),
        Machine(id="m3", cpus=(ProcessingUnit(cores=1),), os="linux"),
    )
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),),
                       events=events)


def _declared(tmp_path: Path, stages: dict[str, str],
              requirements: dict[str, object] | None) -> Policy:
    path = tmp_path / "declared.json"
    document: dict[str, object] = {"name": "R3", "stages": stages}
    if requirements is not None:
        document["machine_requirements"] = requirements
    path.write_text(json.dumps(document))
    policy, diagnostics = load_declaration(path)
    assert policy is not None, [d.render() for d in diagnostics]
    return policy


@pytest.mark.parametrize("backfilling", ["GREEDY", "STRICT", "EASY", "CONSERVATIVE"])
def test_r3_require_keeps_tasks_on_machines_with_the_declared_properties(
        tmp_path: Path, backfilling: str) -> None:
    work = Workload(tuple(Job(n, (_task(f"t{n}", 0, 10, 10),)) for n in range(3)))
    problem = compile_problem(work, _typed_machines()).problem
    assert problem is not None
    open_policy = _declared(tmp_path, {"T2": "FCFS", "R5": "FIRSTFIT",
                                       "backfilling": backfilling}, None)
    schedule = run_policy(problem, open_policy).schedule
    assert schedule.start_s == [0, 0, 0] and schedule.machines == [(0,), (1,), (2,)]
    policy = _declared(tmp_path, {"T2": "FCFS", "R3": "REQUIRE", "R5": "FIRSTFIT",
                                  "backfilling": backfilling},
                       {"os": "LINUX", "features": ["ssd"]})
    assert policy.name.endswith("+R3-REQUIRE[os=LINUX,features=ssd]")
    schedule = run_policy(problem, policy).schedule
    # m1 runs windows, m3 has no ssd: t0 and t1 on m0 and m2 at once, t2 after t0 on m0
    assert schedule.start_s == [0, 0, 10]
    assert schedule.machines == [(0,), (2,), (0,)]


@pytest.mark.parametrize("policy_name", ["FIFO-FIRSTFIT", "FCFS-EASY"])
def test_r3_a_machine_coming_back_stays_filtered(tmp_path: Path, policy_name: str) -> None:
    from dcx.core.model import MachineState

    events = (MachineStateChange("m1", MachineState.ACTIVE, time_s=1.0),)
    work = Workload(tuple(Job(n, (_task(f"t{n}", 2, 10, 10),)) for n in range(3)))
    problem = compile_problem(work, _typed_machines(events=events)).problem
    assert problem is not None
    base = parse_policy(policy_name)
    policy = _declared(tmp_path, {"T2": base.task_order, "R3": "REQUIRE", "R5": "FIRSTFIT",
                                  "backfilling": base.backfilling}, {"arch": "x86_64"})
    schedule = run_policy(problem, policy).schedule
    assert schedule.machines == [(2,), (2,), (2,)] and schedule.start_s == [2, 12, 22]


def test_r3_require_and_its_requirements_go_together(tmp_path: Path) -> None:
    for stages, requirements in (({"T2": "FCFS", "R3": "REQUIRE", "R5": "FIRSTFIT"}, None),
                                 ({"T2": "FCFS", "R5": "FIRSTFIT"}, {"os": "linux"})):
        path = tmp_path / "mismatch.json"
        document: dict[str, object] = {"name": "X", "stages": stages}
        if requirements is not None:
            document["machine_requirements"] = requirements
        path.write_text(json.dumps(document))
        policy, diagnostics = load_declaration(path)
        assert policy is None
        assert [d.code for d in diagnostics] == ["scheduler.requirements-without-require"]
    with pytest.raises(ValueError, match="machine_requirements"):
        parse_policy("FCFS+R3-REQUIRE")


# --------------------------------------------------------------------------- invariants


@settings(max_examples=40, deadline=None)
@given(scenarios(), st.sampled_from(["FIFO-FIRSTFIT", "SRTF-BESTFIT", "RANDOM-WORSTFIT"]),
       st.sampled_from(["", "+J2-WHOLE-JOB"]), st.sampled_from(["", "+J3-FCFS", "+J3-SJF",
                                                                 "+J3-LJF"]),
       st.sampled_from(["sc18", "event"]), st.integers(0, 3))
def test_job_stages_keep_the_schedule_feasible(
        scenario: tuple[Workload, Environment], base: str, j2: str, j3: str, model_name: str,
        seed: int) -> None:
    problem = compiled(*scenario)
    schedule = simulate(problem, parse_policy(base + j2 + j3), time_model(model_name), seed)
    tasks = problem.tasks
    assert schedule.unfinished == 0
    last_arrival: dict[int, float] = {}
    for index in range(len(tasks)):
        job = tasks.job[index]
        last_arrival[job] = max(last_arrival.get(job, 0.0), schedule.arrival_s[index])
    for index in range(len(tasks)):
        start = schedule.start_s[index]
        assert start >= schedule.arrival_s[index]
        if j2:
            assert start >= last_arrival[tasks.job[index]]
        for parent in tasks.parents[index]:
            assert start >= schedule.finish_s[parent]
        if schedule.finish_s[index] == start:
            continue
        for machine in schedule.machines[index]:
            used = sum(tasks.need[other] for other in range(len(tasks))
                       if machine in schedule.machines[other]
                       and schedule.start_s[other] <= start < schedule.finish_s[other])
            assert used <= problem.machines.capacity[machine]
