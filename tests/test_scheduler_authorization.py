"""R2 on who submits a task: ``PARTITION`` places a task only on the machines of the
partitions that admit its group (``Environment.partitions``, read from Slurm's
``PartitionName`` lines), under every planner, on schedules computed by hand; a task no
partition admits enough machines for is reported before any run, by the API and by
``dcx schedule``; a property: no task ever starts on a machine that no partition admitting
it holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Environment,
    Job,
    Machine,
    Partition,
    Placement,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    Task,
    Workload,
)
from dcx.scheduler.declaration import shipped_declarations
from dcx.scheduler.engine import simulate, time_model
from dcx.scheduler.policies import Policy, parse_policy
from dcx.scheduler.problem import Problem, compile_problem
from dcx.scheduler.resource_stages import never_started, static_filter_diagnostics
from dcx.scheduler.runs import run_policy

BACKFILLING = ("FIFO-FIRSTFIT", "FCFS", "FCFS-EASY", "FCFS-CONSERVATIVE")
"""One scheduler per kind of backfilling: GREEDY (the SC18 planner), STRICT, EASY and
CONSERVATIVE (the queue planners)."""


def _environment(*partitions: Partition) -> Environment:
    # n1..n4, one core each, no clock: durations are the runtimes
    machines = tuple(Machine(name=f"n{number}", cpus=(ProcessingUnit(cores=1),))
                     for number in range(1, 5))
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),),
                       partitions=partitions)


STAFF_AND_OPEN = (Partition("staff", ("n1", "n2"), allow_groups=("staff",)),
                  Partition("open", ("n3",)))
"""Staff may use n1, n2 (their partition) and n3 (open to every group); anyone else n3
alone; n4 is in no partition."""


def _task(task_id: str, group: str | None, runtime: float = 10.0, nodes: int = 1) -> Task:
    return Task(task_id, 0.0, runtime, requested_time_s=runtime, group=group,
                request=ResourceRequest(nodes=nodes, cores=1))


def _problem(tasks: tuple[Task, ...], environment: Environment) -> Problem:
    work = Workload(tuple(Job(f"j{index}", (task,)) for index, task in enumerate(tasks)))
    result = compile_problem(work, environment)
    assert result.problem is not None, [d.render() for d in result.diagnostics]
    return result.problem


def _with_r2(name: str) -> Policy:
    return parse_policy(f"{name}+R2-PARTITION")


TASKS = (_task("a", "staff"), _task("b", "staff"), _task("c", "staff"),
         _task("d", "students"), _task("e", None))


@pytest.mark.parametrize("name", BACKFILLING)
def test_every_machine_is_used_without_authorization(name: str) -> None:
    schedule = run_policy(_problem(TASKS, _environment(*STAFF_AND_OPEN)),
                          parse_policy(name)).schedule
    # the fifth waits for a machine (which one: the engine's own choice among equals)
    assert schedule.machines[:4] == [(0,), (1,), (2,), (3,)]
    assert schedule.start_s == [0, 0, 0, 0, 10]


@pytest.mark.parametrize("name", BACKFILLING)
def test_partitions_decide_where_each_group_runs(name: str) -> None:
    # staff fill n1..n3 at 0; the student and the task without a group may use n3 only,
    # one after the other; n4, in no partition, stays idle
    schedule = run_policy(_problem(TASKS, _environment(*STAFF_AND_OPEN)),
                          _with_r2(name)).schedule
    assert schedule.machines == [(0,), (1,), (2,), (2,), (2,)]
    assert schedule.start_s == [0, 0, 0, 10, 20]


@pytest.mark.parametrize("name", BACKFILLING)
def test_a_partition_of_every_machine_admits_a_group_everywhere(name: str) -> None:
    environment = _environment(Partition("all", None, allow_groups=("students",)))
    schedule = run_policy(_problem((TASKS[3], _task("f", "students")), environment),
                          _with_r2(name)).schedule
    assert schedule.machines == [(0,), (1,)] and schedule.start_s == [0, 0]


def test_without_partitions_authorization_restricts_nothing() -> None:
    problem = _problem(TASKS, _environment())
    assert problem.machines.partitions == () and problem.tasks.group == []
    schedule = run_policy(problem, _with_r2("FCFS-EASY")).schedule
    assert schedule.machines[:4] == [(0,), (1,), (2,), (3,)]
    assert static_filter_diagnostics(problem, [parse_policy("FCFS-EASY")]) == ([], set())


def test_a_cores_anywhere_task_the_partitions_leave_short_is_counted_in_cores() -> None:
    """Four processors anywhere for a student, whose group only n3 (one core) admits: the
    message weighs the cores the allowed machines have against the cores it needs."""
    processors = Task("wide", 0.0, 10.0, requested_time_s=10.0, group="students",
                      request=ResourceRequest(nodes=4, cores=1, placement=Placement.CORES))
    problem = _problem((processors,), _environment(*STAFF_AND_OPEN))
    found, blocked = static_filter_diagnostics(problem, [_with_r2("FCFS-EASY")])
    assert blocked == {"FCFS-EASY+R2-PARTITION"}
    assert "the machines meeting that have 1 core(s) to give it, where it needs 4 core(s) " \
        "in total" in found[0].message
    assert "machine(s) with" not in found[0].message


def test_account_and_qos_lists_admit_no_task_and_deny_lists_deny_none() -> None:
    environment = _environment(
        Partition("acct", ("n1",), allow_accounts=("physics",)),
        Partition("qos", ("n2",), allow_qos=("high",)),
        Partition("deny", ("n3",), deny_accounts=("guests",), deny_qos=("low",)))
    problem = _problem((_task("a", "staff"), _task("b", "staff")), environment)
    schedule = run_policy(problem, _with_r2("FCFS")).schedule
    assert schedule.machines == [(2,), (2,)] and schedule.start_s == [0, 10]


def test_a_task_no_partition_admits_is_reported_before_any_run() -> None:
    environment = _environment(*STAFF_AND_OPEN[:1],
                               Partition("open", ("n3",), allow_groups=("students",)))
    tasks = (_task("ok", "staff", nodes=2), _task("big", "students", nodes=2),
             _task("guest", "guests"), _task("anon", None))
    problem = _problem(tasks, environment)
    policy = _with_r2("FCFS-EASY")
    assert never_started(problem, policy) == [1, 2, 3]
    found, blocked = static_filter_diagnostics(problem, [policy, parse_policy("FCFS-EASY")])
    assert blocked == {policy.name}
    assert [d.code for d in found] == ["schedule.no-allowed-machine",
                                       "schedule.partitions-ignored"]
    error = found[0]
    assert error.pointer == "/jobs/1/tasks/0"
    assert "'big'" in error.message and "group 'students' is admitted to partition(s) " \
        "open" in error.message
    assert "1 machine(s) meeting that could hold it, where it needs 2" in error.message
    assert "2 other task(s)" in error.message and "R2 ALL" in (error.hint or "")
    assert "FCFS-EASY (R2 ALL)" in found[1].message
    guest_only = _problem(tasks[2:3], environment)
    found, _ = static_filter_diagnostics(guest_only, [policy])
    assert "no partition admits group 'guests'" in found[0].message


def test_the_shipped_declaration_authorizes_by_partition() -> None:
    assert shipped_declarations()["FCFS-EASY-PARTITION"] == _with_r2("FCFS-EASY")


SHIPPED = Path(__file__).resolve().parents[1] / "schedulers" / "fcfs-easy-partition.json"
SLURM_CONF = """\
NodeName=n[1-3] CPUs=1
NodeName=n4 CPUs=1
PartitionName=staff Nodes=n[1-2] AllowGroups=7
PartitionName=open Nodes=n3
"""
SWF = """\
; MaxProcs: 4
1 0 -1 10 1 -1 -1 1 10 -1 1 1 7 -1 -1 -1 -1 -1
2 0 -1 10 1 -1 -1 1 10 -1 1 2 7 -1 -1 -1 -1 -1
3 0 -1 10 1 -1 -1 1 10 -1 1 3 8 -1 -1 -1 -1 -1
4 0 -1 10 1 -1 -1 1 10 -1 1 4 8 -1 -1 -1 -1 -1
"""


def _schedule(tmp_path: Path, conf: str, *choice: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "cluster.conf").write_text(conf)
    (tmp_path / "trace.swf").write_text(SWF)
    return subprocess.run(
        [sys.executable, "-m", "dcx.cli", "schedule", str(tmp_path / "trace.swf"),
         "--env", str(tmp_path / "cluster.conf"), *choice, "--out", str(tmp_path / "run")],
        capture_output=True, text=True, check=False)


def test_dcx_schedule_places_swf_groups_by_slurm_partitions(tmp_path: Path) -> None:
    done = _schedule(tmp_path, SLURM_CONF, "--scheduler", str(SHIPPED))
    assert done.returncode == 0, done.stderr
    jobs = (tmp_path / "run").rglob("jobs.csv")
    rows = next(jobs).read_text().splitlines()
    header = rows[0].split(",")
    machines = [dict(zip(header, row.split(","), strict=True))["machines"] for row in rows[1:]]
    # group 7 on n1 and n2; group 8 may use n3 only, one job after the other
    assert machines == ["n1", "n2", "n3", "n3"], rows


def test_dcx_schedule_takes_a_shipped_scheduler_by_its_name(tmp_path: Path) -> None:
    done = _schedule(tmp_path, SLURM_CONF, "--policy", "fcfs-easy-partition",
                     "--output", "json")
    assert done.returncode == 0, done.stderr
    assert '"policy": "FCFS-EASY+R2-PARTITION"' in done.stdout
    unknown = _schedule(tmp_path, SLURM_CONF, "--policy", "FCFS-EASY-NOWHERE")
    assert unknown.returncode == 2 and "unknown policy 'FCFS-EASY-NOWHERE'" in unknown.stderr


def test_dcx_schedule_refuses_a_scheduler_under_which_a_job_could_never_start(
        tmp_path: Path) -> None:
    conf = SLURM_CONF.replace("PartitionName=open Nodes=n3",
                              "PartitionName=open Nodes=n3 AllowGroups=9")
    done = _schedule(tmp_path, conf, "--policy", "FCFS-EASY+R2-PARTITION")
    assert done.returncode == 1
    assert "error: /jobs/2/tasks/0: under FCFS-EASY+R2-PARTITION" in done.stderr
    assert "no partition admits group '8'" in done.stderr
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------- property

_GROUPS = st.sampled_from([None, "staff", "students", "guests"])


@st.composite
def partitioned_scenarios(draw: st.DrawFn) -> tuple[Workload, Environment]:
    """Machines n0.. (some in no partition), partitions over some of them (or every
    machine) with allow lists drawn from a few groups, and tasks of those groups
    (dependencies on earlier tasks of their job)."""
    count = draw(st.integers(1, 5))
    machines = tuple(Machine(name=f"n{index}", cpus=(ProcessingUnit(
        cores=draw(st.integers(1, 3)), clock_rate_hz=draw(st.sampled_from([None, 3.5e9]))),))
        for index in range(count))
    names = [machine.name for machine in machines if machine.name is not None]
    partitions = tuple(Partition(
        f"p{index}",
        draw(st.one_of(st.none(), st.lists(st.sampled_from(names), max_size=3).map(tuple))),
        allow_groups=draw(st.one_of(st.none(), st.lists(
            st.sampled_from(["staff", "students"]), max_size=2).map(tuple))),
        allow_accounts=draw(st.sampled_from([None, None, ("physics",)])))
        for index in range(draw(st.integers(0, 3))))
    jobs = []
    serial = 0
    for job in range(draw(st.integers(1, 4))):
        tasks: list[Task] = []
        for _ in range(draw(st.integers(1, 4))):
            earlier = [task.id for task in tasks]
            parents = tuple(draw(st.lists(st.sampled_from(earlier), unique=True, max_size=2))
                            ) if earlier else ()
            runtime = float(draw(st.integers(0, 30)))
            tasks.append(Task(
                serial, float(draw(st.integers(0, 40))), runtime,
                requested_time_s=runtime + draw(st.integers(0, 10)), dependencies=parents,
                group=draw(_GROUPS),
                request=ResourceRequest(nodes=draw(st.integers(1, 2)),
                                        cores=float(draw(st.integers(1, 3))))))
            serial += 1
        jobs.append(Job(job, tuple(tasks)))
    return Workload(tuple(jobs)), Environment(
        (Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),), partitions=partitions)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitioned_scenarios(), st.sampled_from((*BACKFILLING, "SRTF-BESTFIT",
                                                 "SJF-EASY-BESTFIT")),
       st.sampled_from(["sc18", "event"]))
def test_no_task_ever_starts_on_a_machine_no_partition_admitting_it_holds(
        scenario: tuple[Workload, Environment], name: str, model_name: str) -> None:
    work, environment = scenario
    result = compile_problem(work, environment)
    if result.problem is None:
        return  # a task wider than the machines: compile_problem's own errors
    problem = result.problem
    policy = _with_r2(name)
    if policy.reserves:
        schedule = run_policy(problem, policy).schedule
    else:
        schedule = simulate(problem, policy, time_model(model_name), seed=0)
    names = [machine.name for machine in environment.machines()]
    groups = [task.group for task in work.tasks()]
    for task, placed in enumerate(schedule.machines):
        if not environment.partitions:
            continue  # no partitions: every machine
        admitting = [partition for partition in environment.partitions
                     if (partition.allow_groups is None or groups[task] in partition.allow_groups)
                     and partition.allow_accounts is None]
        for machine in placed:
            assert any(partition.machines is None or names[machine] in partition.machines
                       for partition in admitting), (task, machine)
    # when the check before a run finds no task that could never start, every task ends
    if not never_started(problem, policy):
        assert schedule.unfinished == 0
