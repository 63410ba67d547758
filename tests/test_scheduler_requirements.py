"""R3 on what each task asks of its machines (``ResourceRequest.os``, ``arch``, ``features``):
``MATCH`` (the task's own requirements) and ``REQUIRE`` (the operator's and the task's) in
every planner, on schedules computed by hand; a task no allowed machine could hold is
reported before any run; a property: no task ever starts on a machine that does not meet
its request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
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
from dcx.scheduler.declaration import load_declaration
from dcx.scheduler.engine import simulate, time_model
from dcx.scheduler.policies import Policy, parse_policy
from dcx.scheduler.problem import MachineRequirements, Problem, compile_problem
from dcx.scheduler.resource_stages import never_started, static_filter_diagnostics
from dcx.scheduler.runs import run_policy

BACKFILLING = ("FIFO-FIRSTFIT", "FCFS", "FCFS-EASY", "FCFS-CONSERVATIVE")
"""One scheduler per kind of backfilling: GREEDY (the SC18 planner), STRICT, EASY and
CONSERVATIVE (the queue planners)."""


def _environment(*machines: Machine,
                 events: tuple[MachineStateChange, ...] = ()) -> Environment:
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),),
                       events=events)


def _machines() -> Environment:
    # m0 linux with ssd, m1 windows with ssd, m2 Linux/x86_64 with a GPU feature and ssd,
    # m3 linux without features; one core each, no clock: durations are the runtimes
    return _environment(
        Machine(id="m0", cpus=(ProcessingUnit(cores=1),), os="linux", features=("ssd",)),
        Machine(id="m1", cpus=(ProcessingUnit(cores=1),), os="windows", features=("ssd",)),
        Machine(id="m2", cpus=(ProcessingUnit(cores=1),), os="Linux", arch="x86_64",
                features=("gpu-x", "ssd")),
        Machine(id="m3", cpus=(ProcessingUnit(cores=1),), os="linux"))


def _task(task_id: str, runtime: float, *, submit: float = 0.0, nodes: int = 1,
          os: str | None = None, arch: str | None = None,
          features: tuple[str, ...] = ()) -> Task:
    return Task(task_id, submit, runtime, requested_time_s=runtime,
                request=ResourceRequest(nodes=nodes, cores=1, os=os, arch=arch,
                                        features=features))


def _problem(tasks: tuple[Task, ...], environment: Environment) -> Problem:
    work = Workload(tuple(Job(f"j{index}", (task,)) for index, task in enumerate(tasks)))
    result = compile_problem(work, environment)
    assert result.problem is not None, [d.render() for d in result.diagnostics]
    return result.problem


def _with_r3(name: str, r3: str) -> Policy:
    return parse_policy(f"{name}+R3-{r3}")


def test_the_requirements_are_kept_per_task() -> None:
    problem = _problem((_task("a", 1), _task("b", 1, os="linux", features=("ssd",))),
                       _machines())
    assert problem.tasks.asks == {1: MachineRequirements("linux", None, ("ssd",))}
    assert MachineRequirements("LINUX", "x86_64").machines(problem.machines) == [2]
    assert MachineRequirements(features=("ssd",)).machines(problem.machines) == [0, 1, 2]


@pytest.mark.parametrize("name", BACKFILLING)
def test_r3_match_places_each_task_where_its_request_is_met(name: str) -> None:
    tasks = (_task("win", 10, os="windows"),           # m1 only
             _task("x86", 10, arch="X86_64"),          # m2 only (arch without case)
             _task("any", 10),                         # anywhere: m0 is free first
             _task("ssd", 10, features=("ssd",)))      # m0, m1, m2: all busy until 10
    problem = _problem(tasks, _machines())
    schedule = run_policy(problem, _with_r3(name, "MATCH")).schedule
    assert schedule.unfinished == 0
    assert schedule.machines == [(1,), (2,), (0,), (0,)]
    assert schedule.start_s == [0, 0, 0, 10]
    # R3 ALL ignores the requests: first fit in topology order
    ignored = run_policy(problem, parse_policy(name)).schedule
    assert ignored.machines[:3] == [(0,), (1,), (2,)]


@pytest.mark.parametrize("name", BACKFILLING)
def test_r3_match_over_several_nodes_takes_only_matching_machines(name: str) -> None:
    tasks = (_task("pair", 5, nodes=2, os="linux", features=("ssd",)),  # m0 and m2
             _task("one", 5, os="linux"))                               # m3, at once
    problem = _problem(tasks, _machines())
    schedule = run_policy(problem, _with_r3(name, "MATCH")).schedule
    assert schedule.machines == [(0, 2), (3,)] and schedule.start_s == [0, 0]


def test_easy_backfills_around_a_head_waiting_for_its_machine() -> None:
    # the head asks for windows (m1), busy until 20; a short linux task behind it starts
    # on m0 at once, and a windows task behind it waits for the head (FCFS on m1)
    tasks = (_task("busy", 20, os="windows"), _task("head", 10, submit=1, os="windows"),
             _task("short", 5, submit=2, os="linux"), _task("late", 1, submit=3,
                                                            os="windows"))
    problem = _problem(tasks, _machines())
    schedule = run_policy(problem, _with_r3("FCFS-EASY", "MATCH")).schedule
    assert schedule.start_s == [0, 20, 2, 30]
    assert schedule.machines == [(1,), (1,), (0,), (1,)]
    assert schedule.reserved_s[1] == 20


@pytest.mark.parametrize("name", BACKFILLING)
def test_r3_require_joins_the_operators_requirement_with_each_tasks(
        tmp_path: Path, name: str) -> None:
    base = parse_policy(name)
    path = tmp_path / "linux.json"
    path.write_text(json.dumps({
        "name": "LINUX", "machine_requirements": {"os": "linux"},
        "stages": {"T2": base.task_order, "R3": "REQUIRE", "R5": "FIRSTFIT",
                   "backfilling": base.backfilling}}))
    policy, diagnostics = load_declaration(path)
    assert policy is not None, [d.render() for d in diagnostics]
    # the operator allows m0, m2, m3; "gpu" also asks for gpu-x (m2), "plain" asks nothing
    tasks = (_task("gpu", 10, features=("gpu-x",)), _task("plain", 10),
             _task("ssd", 10, features=("ssd",)))
    problem = _problem(tasks, _machines())
    schedule = run_policy(problem, policy).schedule
    assert schedule.machines == [(2,), (0,), (0,)] and schedule.start_s == [0, 0, 10]
    # a task asking for what the operator excludes could never start
    stuck = _problem((_task("win", 1, os="windows"),), _machines())
    assert never_started(stuck, policy) == [0]
    assert never_started(stuck, _with_r3(name, "MATCH")) == []


def test_a_task_no_allowed_machine_can_hold_is_reported_before_any_run() -> None:
    tasks = (_task("ok", 1, os="linux"), _task("plan9", 1, os="plan9"),
             _task("three", 1, nodes=3, features=("ssd",)),  # 3 ssd machines: fine
             _task("four", 1, nodes=4, features=("ssd",)))   # only 3 have an ssd
    problem = _problem(tasks, _machines())
    match = _with_r3("FCFS-EASY", "MATCH")
    assert never_started(problem, match) == [1, 3]
    found, blocked = static_filter_diagnostics(problem, [match, parse_policy("FCFS-EASY")])
    assert blocked == {match.name}
    codes = [d.code for d in found]
    assert codes == ["schedule.no-allowed-machine", "schedule.requirements-ignored"]
    error = found[0]
    assert error.pointer == "/jobs/1/tasks/0"
    assert "'plan9'" in error.message and "os=plan9" in error.message
    assert "1 other task(s)" in error.message
    assert "FCFS-EASY" in found[1].message and "4 of 4 task(s)" in found[1].message


def test_nothing_is_said_when_no_task_asks_anything() -> None:
    problem = _problem((_task("a", 1), _task("b", 2)), _machines())
    assert problem.tasks.asks == {}
    assert static_filter_diagnostics(problem, [parse_policy("FCFS-EASY"),
                                               _with_r3("FCFS", "MATCH")]) == ([], set())


@pytest.mark.parametrize("name", ["FIFO-FIRSTFIT", "FCFS-EASY", "FCFS-CONSERVATIVE"])
def test_a_failed_machine_is_not_replaced_by_one_the_task_may_not_use(name: str) -> None:
    # m2 (the only x86_64 machine) fails at 5 and is back at 50: the task runs again there,
    # never on the free linux machines
    events = (MachineStateChange("m2", MachineState.FAILURE, time_s=5.0),
              MachineStateChange("m2", MachineState.ACTIVE, time_s=50.0))
    environment = _environment(*_machines().machines(), events=events)
    problem = _problem((_task("x86", 10, arch="x86_64"),), environment)
    schedule = run_policy(problem, _with_r3(name, "MATCH")).schedule
    assert schedule.machines == [(2,)] and schedule.start_s == [50] and schedule.attempts == [1]


# --------------------------------------------------------------------------- property

_OS = st.sampled_from([None, "linux", "windows"])
_ARCH = st.sampled_from([None, "x86_64", "aarch64"])
_FEATURES = st.lists(st.sampled_from(["ssd", "ib", "gpu"]), unique=True, max_size=2).map(tuple)


@st.composite
def typed_scenarios(draw: st.DrawFn) -> tuple[Workload, Environment]:
    """Machines with an os, arch and features drawn from a small vocabulary, and tasks
    asking for some of them (dependencies on earlier tasks of their job)."""
    count = draw(st.integers(1, 5))
    machines = tuple(
        Machine(id=index, cpus=(ProcessingUnit(cores=draw(st.integers(1, 3)),
                                               clock_rate_hz=draw(st.sampled_from(
                                                   [None, 3.5e9, 4.1e9]))),),
                os=draw(_OS), arch=draw(_ARCH), features=draw(_FEATURES))
        for index in range(count))
    jobs = []
    serial = 0
    for job in range(draw(st.integers(1, 4))):
        tasks: list[Task] = []
        for _ in range(draw(st.integers(1, 5))):
            earlier = [task.id for task in tasks]
            parents = tuple(draw(st.lists(st.sampled_from(earlier), unique=True, max_size=2))
                            ) if earlier else ()
            runtime = float(draw(st.integers(0, 30)))
            tasks.append(Task(
                serial, float(draw(st.integers(0, 40))), runtime,
                requested_time_s=runtime + draw(st.integers(0, 10)),
                dependencies=parents,
                request=ResourceRequest(nodes=draw(st.integers(1, 2)),
                                        cores=float(draw(st.integers(1, 3))),
                                        os=draw(_OS), arch=draw(_ARCH),
                                        features=draw(_FEATURES))))
            serial += 1
        jobs.append(Job(job, tuple(tasks)))
    return Workload(tuple(jobs)), _environment(*machines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_scenarios(), st.sampled_from((*BACKFILLING, "SRTF-BESTFIT", "SJF-EASY-BESTFIT",
                                           "FCFS-CONSERVATIVE-WORSTFIT")),
       st.sampled_from(["sc18", "event"]))
def test_no_task_ever_starts_on_a_machine_that_does_not_meet_its_request(
        scenario: tuple[Workload, Environment], name: str, model_name: str) -> None:
    work, environment = scenario
    result = compile_problem(work, environment)
    if result.problem is None:
        return  # a task wider than the machines: compile_problem's own errors
    problem = result.problem
    policy = _with_r3(name, "MATCH")
    if policy.reserves:
        schedule = run_policy(problem, policy).schedule
    else:
        schedule = simulate(problem, policy, time_model(model_name), seed=0)
    machines = problem.machines
    for task in range(len(problem.tasks)):
        asked = problem.tasks.asks.get(task, MachineRequirements())
        for machine in schedule.machines[task]:
            assert asked.met_by(machines.os[machine], machines.arch[machine],
                                machines.features[machine]), (task, machine)
    # when the check before a run finds no task that could never start, every task ends
    if not never_started(problem, policy):
        assert schedule.unfinished == 0


# --------------------------------------------------------------------------- dcx schedule

SLURM = "NodeName=plain[1-2] CPUs=2\nNodeName=fast[1-2] CPUs=2 Features=ssd,ib\n"
GWF_HEADER = "WorkflowID, JobID, SubmitTime, RunTime, NProcs, ReqNProcs, Dependencies\n"


def _schedule(argv: list[str]) -> int:
    import argparse

    from dcx.cli import schedule as cli

    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers(dest="command"))
    return cli.run(parser.parse_args(argv))


def _files(tmp_path: Path, features: list[str]) -> tuple[Path, Path, Path]:
    environment = tmp_path / "slurm.conf"
    environment.write_text(SLURM)
    trace = tmp_path / "small.gwf"
    trace.write_text(GWF_HEADER + "0, 1, 0, 20, 1, 1, \n0, 2, 5, 10, 2, 2, 1\n"
                     "1, 3, 2, 4, 2, 2, \n")
    declaration = tmp_path / "ssd.json"
    declaration.write_text(json.dumps({
        "name": "FEATURED", "machine_requirements": {"features": features},
        "stages": {"T2": "FCFS", "R3": "REQUIRE", "R5": "FIRSTFIT", "backfilling": "EASY"}}))
    return trace, environment, declaration


def test_dcx_schedule_runs_only_on_the_machines_the_filters_allow(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, environment, declaration = _files(tmp_path, ["ssd"])
    out = tmp_path / "out"
    code = _schedule(["schedule", str(trace), "--env", str(environment), "--scheduler",
                      str(declaration), "--policy", "FCFS-EASY+R3-MATCH", "--out", str(out),
                      "--output", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "ask for an os" not in captured.err  # no task asks anything: nothing to say
    runs = {run["policy"]: run for run in json.loads(captured.out)["runs"]}
    assert set(runs) == {"FCFS-EASY+R3-MATCH", "FCFS-EASY+R3-REQUIRE[features=ssd]"}
    folder, = (path for path in out.iterdir() if "REQUIRE" in path.name)
    lines = (folder / "tasks.csv").read_text().splitlines()
    machines_column = lines[0].split(",").index("machines")
    used = {machine for line in lines[1:] for machine in line.split(",")[machines_column]
            .split()}
    assert used and used <= {"fast1", "fast2"}


def test_dcx_schedule_refuses_a_task_no_allowed_machine_can_hold(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, environment, declaration = _files(tmp_path, ["gpu"])
    code = _schedule(["schedule", str(trace), "--env", str(environment), "--scheduler",
                      str(declaration)])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert f"{trace}: error: /jobs/0/tasks/0: under FCFS-EASY+R3-REQUIRE[features=gpu], " \
        "task 1 of job 0 could never start: the operator for features=gpu, and the machines " \
        "meeting that have 0 core(s) to give it, where it needs 1 core(s) in total (2 other " \
        "task(s) likewise)" in captured.err


def _parquet_workload(tmp_path: Path, *tasks: Task) -> Path:
    from dcx.core.model import Document
    from dcx.formats import parquet

    written = parquet.write(Document(workload=Workload(
        tuple(Job(f"j{index}", (task,)) for index, task in enumerate(tasks)))))
    assert written.diagnostics == ()
    path = tmp_path / "asks.parquet"
    path.write_bytes(written.data)
    return path


def test_dcx_schedule_honours_the_requests_of_a_workload_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, environment, _ = _files(tmp_path, ["ssd"])
    # plain1-2 have no features, fast1-2 have ssd and ib (two cores each)
    workload = _parquet_workload(
        tmp_path, _task("any1", 10), _task("any2", 10), _task("ib", 5, features=("ib",)),
        _task("ssd", 5, features=("ssd",)), _task("ib2", 5, submit=1, features=("ib",)))
    out = tmp_path / "out"
    code = _schedule(["schedule", str(workload), "--env", str(environment), "--policy",
                      "FCFS-EASY+R3-MATCH,FIFO-FIRSTFIT+R3-MATCH,FCFS-EASY", "--out",
                      str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "3 of 5 task(s) ask for an os, architecture or features; FCFS-EASY (R3 ALL) " \
        "place(s) them on any machine" in captured.err
    for folder in out.iterdir():
        if not folder.is_dir():
            continue
        lines = (folder / "tasks.csv").read_text().splitlines()
        header = lines[0].split(",")
        placed = {row[header.index("task_id")]: row[header.index("machines")]
                  for row in (line.split(",") for line in lines[1:])}
        if "MATCH" in folder.name:
            assert placed["ib"] in ("fast1", "fast2") and placed["ssd"] in ("fast1", "fast2")
            assert placed["ib2"] in ("fast1", "fast2")
        else:
            # first fit ignoring the request: any1 and any2 share plain1 (two cores)
            assert placed["ib"] == "plain2"


def test_dcx_schedule_refuses_a_request_no_machine_meets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, environment, _ = _files(tmp_path, ["ssd"])
    workload = _parquet_workload(tmp_path, _task("a", 1), _task("arm", 1, arch="aarch64"))
    code = _schedule(["schedule", str(workload), "--env", str(environment), "--policy",
                      "FCFS-EASY+R3-MATCH"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert "/jobs/1/tasks/0: under FCFS-EASY+R3-MATCH, task 'arm' of job 'j1' could never " \
        "start: it asks for arch=aarch64, and 0 machine(s) meeting that could hold it" \
        in captured.err


def test_dcx_experiment_leaves_out_the_cells_of_a_scheduler_a_task_cannot_run_under(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from dcx.cli.main import main

    environment = Path(__file__).resolve().parent.parent / "examples" / "environment" / \
        "small-cluster.json"  # no machine declares an architecture
    workload = _parquet_workload(tmp_path, _task("a", 10), _task("arm", 10, arch="aarch64"))
    spec = tmp_path / "x.yaml"
    spec.write_text(f"workloads: [{workload}]\nenvironments: [{environment}]\n"
                    "schedulers: [FCFS-EASY, FCFS-EASY+R3-MATCH]\n")
    out = tmp_path / "o"
    assert main(["experiment", str(spec), "--out", str(out), "--workers", "0",
                 "--no-plots"]) == 1
    err = capsys.readouterr().err
    assert err.count("under FCFS-EASY+R3-MATCH, task 'arm' of job 'j1' could never start") == 1
    assert err.count("FCFS-EASY (R3 ALL) place(s) them on any machine") == 1
    table = pq.read_table(out / "results.parquet")
    assert table.column("scheduler").to_pylist() == ["FCFS-EASY"]
