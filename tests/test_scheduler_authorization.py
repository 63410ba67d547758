"""R2 on who submits a task: ``PARTITION`` places a task only on the machines of the
partitions that admit its group (``Environment.partitions``, read from Slurm's
``PartitionName`` lines), in both engines, on schedules computed by hand; a task no
partition admits enough machines for is reported before any run, by the API and by
``dcx schedule``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dcx.core.model import (
    Datacenter,
    Environment,
    Job,
    Machine,
    Partition,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    Task,
    Workload,
)
from dcx.scheduler.declaration import shipped_declarations
from dcx.scheduler.policies import Policy, parse_policy
from dcx.scheduler.problem import Problem, compile_problem
from dcx.scheduler.resource_stages import never_started, static_filter_diagnostics
from dcx.scheduler.runs import run_policy

BACKFILLING = ("FIFO-FIRSTFIT", "FCFS", "FCFS-EASY", "FCFS-CONSERVATIVE")
"""One scheduler per kind of backfilling: GREEDY (the SC18 engine), STRICT, EASY and
CONSERVATIVE (the reservation engine)."""


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
        [sys.executable, "-m", "dcx.converters.cli", "schedule", str(tmp_path / "trace.swf"),
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


def test_dcx_schedule_refuses_a_scheduler_under_which_a_job_could_never_start(
        tmp_path: Path) -> None:
    conf = SLURM_CONF.replace("PartitionName=open Nodes=n3",
                              "PartitionName=open Nodes=n3 AllowGroups=9")
    done = _schedule(tmp_path, conf, "--policy", "FCFS-EASY+R2-PARTITION")
    assert done.returncode == 1
    assert "error: /jobs/2/tasks/0: under FCFS-EASY+R2-PARTITION" in done.stderr
    assert "no partition admits group '8'" in done.stderr
    assert not (tmp_path / "run").exists()
