"""The scheduler on every per-node resource a task asks for (memory, GPUs, named resources),
AR start times and deadlines, on hand-built models and on Haizea LWFs from the corpus."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TypedDict, Unpack

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.cli.main import main as dcx_main
from dcx.core.model import (
    Datacenter,
    Environment,
    Job,
    Machine,
    MachineState,
    MachineStateChange,
    NamedResource,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StartMode,
    StorageUnit,
    Task,
    Workload,
)
from dcx.scheduler.engine import SC18, simulate, time_model
from dcx.scheduler.metrics import compute_metrics
from dcx.scheduler.policies import all_policies, parse_policy
from dcx.scheduler.problem import (
    NAMED_UNITS,
    CompileResult,
    Problem,
    compile_problem,
)
from dcx.scheduler.report import jobs_csv, tasks_csv
from dcx.scheduler.runs import run_policy

EVENT = time_model("event")
FIFO_FIRSTFIT = parse_policy("FIFO-FIRSTFIT")


def node(name: str, cores: int = 4, memory_mb: float | None = None, gpus: int = 0,
         resources: tuple[NamedResource, ...] = ()) -> Machine:
    """A machine without a clock, so durations are the runtimes."""
    return Machine(
        id=name,
        cpus=(ProcessingUnit(cores=cores),),
        gpus=tuple(ProcessingUnit(cores=1) for _ in range(gpus)),
        memory=() if memory_mb is None else (StorageUnit(capacity_mb=memory_mb),),
        resources=resources,
    )


def site(*machines: Machine, events: tuple[MachineStateChange, ...] = ()) -> Environment:
    rack = Rack(slots=machines)
    return Environment((Datacenter(rooms=(Room(racks=(rack,)),)),), events=events)


class LeaseRequest(TypedDict, total=False):
    """``lease``'s request parameters, for one request given to several leases."""

    cores: float
    nodes: int
    memory_mb: float | None
    gpus: int
    resources: tuple[NamedResource, ...]


class LeaseTimes(TypedDict, total=False):
    """The task's fields that ``lease`` passes on as given."""

    deadline_s: float | None
    start_mode: StartMode
    start_time_s: float | None


def lease(task_id: int, submit: float = 0.0, runtime: float = 10.0, cores: float = 1.0,
          nodes: int = 1, memory_mb: float | None = None, gpus: int = 0,
          resources: tuple[NamedResource, ...] = (), **times: Unpack[LeaseTimes]) -> Task:
    request = ResourceRequest(nodes=nodes, cores=cores, memory_mb=memory_mb, gpus=gpus,
                              resources=resources)
    return Task(task_id, submit, runtime, request=request, **times)


def one_job_each(*tasks: Task) -> Workload:
    return Workload(tuple(Job(task.id, (task,)) for task in tasks))


def compiled(work: Workload, env: Environment) -> Problem:
    result = compile_problem(work, env)
    assert result.problem is not None, [d.render() for d in result.diagnostics]
    return result.problem


def starts(problem: Problem, model_name: str = "event", policy: str = "FIFO-FIRSTFIT",
           ) -> dict[object, float]:
    schedule = simulate(problem, parse_policy(policy), time_model(model_name))
    return dict(zip(problem.tasks.ids, schedule.start_s, strict=True))


def disk(amount: float, instances: tuple[float, ...] = ()) -> NamedResource:
    return NamedResource("Disk", amount, instances=instances)


# --------------------------------------------------------------------------- memory


def test_memory_blocks_colocation_that_cores_would_allow() -> None:
    work = one_job_each(lease(1, memory_mb=768), lease(2, memory_mb=768))
    problem = compiled(work, site(node("a", cores=4, memory_mb=1024)))
    assert [d.kind for d in problem.machines.dimensions] == ["memory"]
    assert starts(problem) == {1: 0, 2: 10}  # 4 cores would hold both; 1024 MB does not


def test_memory_fits_side_by_side_when_there_is_enough() -> None:
    work = one_job_each(lease(1, memory_mb=512), lease(2, memory_mb=512))
    problem = compiled(work, site(node("a", cores=4, memory_mb=1024)))
    assert starts(problem) == {1: 0, 2: 0}


def test_memory_is_not_enforced_when_no_machine_declares_it_and_one_warning_says_so() -> None:
    work = one_job_each(lease(1, memory_mb=768), lease(2, memory_mb=768), lease(3))
    result = compile_problem(work, site(node("a", cores=4)), {"/workload/jobs/0/tasks/0": (7, 1)})
    assert result.problem is not None
    (warning,) = result.diagnostics
    assert (warning.code, warning.is_error) == ("schedule.memory-not-enforced", False)
    assert (warning.pointer, warning.line) == ("/jobs/0/tasks/0", 7)
    assert "1 other task" in warning.message
    assert result.problem.machines.dimensions == ()  # the cores-only problem
    assert starts(result.problem) == {1: 0, 2: 0, 3: 0}


def test_machines_without_memory_have_none_once_one_machine_declares_it() -> None:
    work = one_job_each(lease(1, memory_mb=100))
    problem = compiled(work, site(node("bare", cores=8), node("small", cores=1, memory_mb=512)))
    schedule = simulate(problem, parse_policy("FIFO-WORSTFIT"), EVENT)
    assert problem.machines.labels[schedule.machines[0][0]] == "small"


def test_a_cores_only_workload_compiles_to_a_cores_only_problem() -> None:
    env = site(node("a", memory_mb=1024, gpus=2, resources=(disk(100),)))
    problem = compiled(one_job_each(lease(1), lease(2, cores=0.5)), env)
    assert problem.machines.dimensions == ()
    assert problem.machines.extra_capacity == ()
    assert problem.tasks.demand == [(), ()]


# --------------------------------------------------------------------------- named resources, GPUs


def test_a_named_resource_blocks_colocation_like_memory() -> None:
    work = one_job_each(lease(1, resources=(disk(600),)), lease(2, resources=(disk(600),)))
    problem = compiled(work, site(node("a", resources=(disk(1000),))))
    assert starts(problem) == {1: 0, 2: 10}


def test_a_multi_instance_resource_offers_the_sum_of_its_instances() -> None:
    work = one_job_each(lease(1, resources=(disk(600),)), lease(2, resources=(disk(600),)))
    problem = compiled(work, site(node("a", resources=(disk(1200, (600, 600)),))))
    assert problem.machines.extra_capacity == ((1200 * NAMED_UNITS,),)
    assert starts(problem) == {1: 0, 2: 0}


def test_fractional_named_amounts_add_and_subtract_exactly() -> None:
    work = one_job_each(*(lease(i, resources=(NamedResource("Net-in", 0.1),))
                          for i in range(10)))
    problem = compiled(work, site(node("a", cores=16,
                                       resources=(NamedResource("Net-in", 1.0),))))
    assert set(starts(problem).values()) == {0}  # ten tenths fill exactly one unit


def test_the_cpu_and_memory_instance_breakdown_is_not_an_extra_dimension() -> None:
    # how the Haizea reader keeps a multi-instance CPU request: cores plus its instances
    breakdown = (NamedResource("CPU", 200, instances=(100, 100)),)
    problem = compiled(one_job_each(lease(1, cores=2, resources=breakdown)), site(node("a")))
    assert problem.machines.dimensions == ()


def test_gpus_are_scheduled_and_machines_without_gpus_have_none() -> None:
    work = one_job_each(lease(1, gpus=1), lease(2, gpus=1), lease(3))
    problem = compiled(work, site(node("cpu-only"), node("gpu", gpus=1)))
    schedule = simulate(problem, FIFO_FIRSTFIT, EVENT)
    labels = [problem.machines.labels[m[0]] for m in schedule.machines]
    assert labels == ["gpu", "gpu", "cpu-only"]
    assert schedule.start_s == [0, 10, 0]


def test_multi_node_lease_takes_machines_that_each_hold_the_per_node_amounts() -> None:
    env = site(node("a", resources=(disk(100),)), node("b", resources=(disk(50),)),
               node("c", resources=(disk(100),)))
    work = one_job_each(lease(1, nodes=2, resources=(disk(80),)), lease(2, resources=(disk(80),)))
    problem = compiled(work, env)
    schedule = simulate(problem, FIFO_FIRSTFIT, EVENT)
    assert [tuple(problem.machines.labels[m] for m in placed) for placed in schedule.machines] \
        == [("a", "c"), ("a",)]
    assert schedule.start_s == [0, 10]  # the single-node lease waits: b has too little


def test_best_and_worst_fit_still_rank_by_free_cores() -> None:
    env = site(node("few-cores-much-memory", cores=2, memory_mb=4096),
               node("many-cores-little-memory", cores=8, memory_mb=1024))
    problem = compiled(one_job_each(lease(1, memory_mb=512)), env)
    for policy, expected in (("FIFO-BESTFIT", "few-cores-much-memory"),
                             ("FIFO-WORSTFIT", "many-cores-little-memory")):
        schedule = simulate(problem, parse_policy(policy), EVENT)
        assert problem.machines.labels[schedule.machines[0][0]] == expected


# --------------------------------------------------------------------------- failures


def test_failure_gives_every_dimension_back() -> None:
    events = (MachineStateChange("a", MachineState.FAILURE, time_s=4.0),
              MachineStateChange("a", MachineState.ACTIVE, time_s=5.0))
    whole: LeaseRequest = {"cores": 2.0, "memory_mb": 1024.0, "gpus": 1,
                           "resources": (disk(100),)}
    env = site(node("a", cores=2, memory_mb=1024, gpus=1, resources=(disk(100),)),
               events=events)
    work = one_job_each(lease(1, **whole), lease(2, submit=1, **whole))
    problem = compiled(work, env)
    assert len(problem.machines.dimensions) == 3
    run = run_policy(problem, FIFO_FIRSTFIT, "event")
    # 1 is requeued behind 2 at 4; 2 can start at 5 only if the failure returned every
    # dimension, and 1 at 15 only if 2's finish returned them too
    assert run.schedule.start_s == [15.0, 5.0]
    assert run.schedule.finish_s == [25.0, 15.0]
    assert run.schedule.lost_core_s == 8.0
    assert run.metrics.summary.unfinished_tasks == 0


# --------------------------------------------------------------------------- AR and deadlines


def advance_reservation(task_id: int, start: float, submit: float = 0.0, runtime: float = 10.0,
                        deadline_s: float | None = None) -> Task:
    return lease(task_id, submit, runtime, start_mode=StartMode.EXACT, start_time_s=start,
                 deadline_s=deadline_s)


def test_an_ar_lease_does_not_start_before_its_start_time() -> None:
    work = one_job_each(advance_reservation(1, start=100.0), lease(2, submit=3))
    problem = compiled(work, site(node("a")))
    assert starts(problem) == {1: 100, 2: 3}
    run = run_policy(problem, FIFO_FIRSTFIT, "event")
    assert run.schedule.arrival_s == [100, 3]  # it joins the queue at its start time
    assert run.metrics.summary.jwt_s == 0


def test_sc18_aligns_the_ar_start_to_the_tick() -> None:
    problem = compiled(one_job_each(advance_reservation(1, start=100.0)), site(node("a")))
    schedule = simulate(problem, FIFO_FIRSTFIT, SC18)
    assert schedule.start_s == [101]


def test_an_ar_start_before_submission_means_the_submission() -> None:
    problem = compiled(one_job_each(advance_reservation(1, start=5.0, submit=20)),
                       site(node("a")))
    assert starts(problem) == {1: 20}


def test_an_ar_lease_waits_when_its_machines_are_busy_nothing_is_preempted() -> None:
    work = one_job_each(lease(1, cores=4, runtime=50), advance_reservation(2, start=10.0))
    problem = compiled(work, site(node("a", cores=4)))
    assert starts(problem) == {1: 0, 2: 50}


def test_deadline_misses_are_counted_per_task_per_job_and_in_the_summary() -> None:
    work = Workload((
        Job("early", (lease(1, runtime=10, deadline_s=15.0),)),
        Job("late", (lease(2, runtime=10, deadline_s=15.0), lease(3, runtime=1))),
        Job("none", (lease(4, runtime=1),)),
    ))
    problem = compiled(work, site(node("a", cores=1)))
    run = run_policy(problem, FIFO_FIRSTFIT, "event")
    assert run.schedule.finish_s == [10, 20, 21, 22]
    summary = run.metrics.summary
    assert (summary.deadline_tasks, summary.deadline_missed) == (2, 1)
    assert [job.deadline_missed for job in run.metrics.jobs] == [0, 1, None]
    jobs = list(csv.DictReader(io.StringIO(jobs_csv(run.metrics))))
    assert [row["deadline_missed"] for row in jobs] == ["0", "1", ""]
    tasks = list(csv.DictReader(io.StringIO(tasks_csv(run.metrics))))
    assert [row["deadline_missed"] for row in tasks] == ["false", "true", "", ""]
    assert [row["deadline_s"] for row in tasks] == ["15", "15", "", ""]


def test_finishing_exactly_at_the_deadline_meets_it_and_never_finishing_misses_it() -> None:
    events = (MachineStateChange("b", MachineState.FAILURE, time_s=1.0),)
    env = site(node("a", cores=1), node("b", cores=4), events=events)
    work = one_job_each(lease(1, runtime=10, deadline_s=10.0),
                        lease(2, cores=4, runtime=10, deadline_s=100.0))
    run = run_policy(compiled(work, env), FIFO_FIRSTFIT, "event")
    assert run.metrics.deadline_missed == [False, True]


def test_sc18_tick_grid_alone_does_not_make_a_lease_miss() -> None:
    # AR at 1800 s is seen at tick 1801; a 1800 s lease then ends at 3601, one second past a
    # deadline it would meet exactly without the grid
    work = one_job_each(advance_reservation(1, start=1800.0, runtime=1800,
                                            deadline_s=3600.0))
    run = run_policy(compiled(work, site(node("a"))), FIFO_FIRSTFIT, "sc18")
    assert run.schedule.finish_s == [3601]
    assert run.metrics.summary.deadline_missed == 0


# --------------------------------------------------------------------------- compile errors


def errors(result: CompileResult) -> list[tuple[str, str, int | None]]:
    assert result.problem is None
    return [(d.code, d.pointer, d.line) for d in result.diagnostics if d.is_error]


LINES = {"/workload/jobs/0/tasks/0": (12, 3)}


def test_too_little_memory_anywhere_is_an_error_with_pointer_and_line() -> None:
    result = compile_problem(one_job_each(lease(1, memory_mb=4096)),
                             site(node("a", memory_mb=1024), node("b", memory_mb=2048)), LINES)
    assert errors(result) == [("schedule.insufficient-resource", "/jobs/0/tasks/0", 12)]
    message = result.diagnostics[0].message
    assert "4096 MB of memory" in message and "only 0 machine(s)" in message
    assert "largest: 2048 MB of memory" in message


def test_too_few_machines_with_the_named_resource_is_an_error() -> None:
    env = site(node("a", resources=(disk(100),)), node("b"), node("c", resources=(disk(50),)))
    result = compile_problem(one_job_each(lease(1, nodes=2, resources=(disk(80),))), env, LINES)
    assert errors(result) == [("schedule.insufficient-resource", "/jobs/0/tasks/0", 12)]
    message = result.diagnostics[0].message
    assert "2 machine(s) with 80 of resource 'Disk'" in message
    assert "only 1 machine(s)" in message and "largest: 100 of resource 'Disk'" in message


def test_gpus_nobody_has_are_an_error() -> None:
    result = compile_problem(one_job_each(lease(1, gpus=2)), site(node("a", gpus=1)))
    assert [code for code, _, _ in errors(result)] == ["schedule.insufficient-resource"]
    assert "largest: 1 GPU(s)" in result.diagnostics[0].message


def test_resources_that_fit_only_on_different_machines_are_an_error() -> None:
    env = site(node("memory", memory_mb=4096), node("disk", memory_mb=512,
                                                      resources=(disk(100),)))
    result = compile_problem(one_job_each(lease(1, memory_mb=1024, resources=(disk(80),))),
                             env, LINES)
    assert errors(result) == [("schedule.insufficient-resource", "/jobs/0/tasks/0", 12)]
    assert "all of them at once" in result.diagnostics[0].message


def test_cores_that_do_not_fit_keep_their_own_code() -> None:
    result = compile_problem(one_job_each(lease(1, cores=8, memory_mb=99999)),
                             site(node("a", memory_mb=1024)))
    assert [code for code, _, _ in errors(result)] == ["schedule.too-many-cores"]


@pytest.mark.parametrize("request_fields", [dict(memory_mb=-1.0), dict(gpus=-1),
                                            dict(resources=(disk(-5),)),
                                            dict(memory_mb=float("nan"))])
def test_negative_or_non_finite_amounts_are_bad_requests(request_fields: LeaseRequest) -> None:
    result = compile_problem(one_job_each(lease(1, **request_fields)),
                             site(node("a", memory_mb=1024)))
    assert [code for code, _, _ in errors(result)] == ["schedule.bad-request"]


# --------------------------------------------------------------------------- invariants


@st.composite
def resource_scenarios(draw: st.DrawFn) -> tuple[Workload, Environment]:
    count = draw(st.integers(1, 4))
    machines = tuple(
        node(f"m{index}", cores=draw(st.integers(1, 4)),
             memory_mb=draw(st.sampled_from([256.0, 1024.0, 2048.0])),
             gpus=draw(st.integers(0, 2)),
             resources=(disk(draw(st.sampled_from([0.0, 50.0, 100.0]))),))
        for index in range(count))
    tasks = []
    for index in range(draw(st.integers(1, 12))):
        # every task fits on at least one machine, so the run must finish
        home = draw(st.sampled_from(machines))
        tasks.append(lease(
            index, submit=draw(st.integers(0, 30)), runtime=draw(st.integers(1, 20)),
            cores=draw(st.integers(1, home.core_count)),
            memory_mb=draw(st.sampled_from([None, 128.0, home.memory_mb])),
            gpus=draw(st.integers(0, home.gpu_count)),
            resources=(disk(draw(st.sampled_from([0.0, home.resources[0].amount / 2,
                                                  home.resources[0].amount]))),),
        ))
    return one_job_each(*tasks), site(*machines)


@settings(max_examples=60, deadline=None)
@given(resource_scenarios(), st.sampled_from([p.name for p in all_policies()]),
       st.sampled_from(["sc18", "event"]), st.integers(0, 3))
def test_no_machine_is_ever_overcommitted_in_any_dimension(
        scenario: tuple[Workload, Environment], policy_name: str, model_name: str,
        seed: int) -> None:
    problem = compiled(*scenario)
    schedule = simulate(problem, parse_policy(policy_name), time_model(model_name), seed)
    assert schedule.unfinished == 0
    tasks, machines = problem.tasks, problem.machines
    for index in range(len(tasks)):
        moment = schedule.start_s[index]
        assert moment >= schedule.arrival_s[index]
        running = [other for other in range(len(tasks))
                   if schedule.start_s[other] <= moment < schedule.finish_s[other]]
        for machine in schedule.machines[index]:
            here = [other for other in running if machine in schedule.machines[other]]
            assert sum(tasks.need[other] for other in here) <= machines.capacity[machine]
            for dimension, capacity in enumerate(machines.extra_capacity):
                used = sum(units for other in here for d, units in tasks.demand[other]
                           if d == dimension)
                assert used <= capacity[machine]
    compute_metrics(problem, schedule)


# --------------------------------------------------------------------------- Haizea, end to end

SITE = """<?xml version="1.0"?>
<site>
  <resource-types names="CPU Memory"/>
  <nodes>
    <node-set numnodes="4">
      <res type="CPU" amount="100"/>
      <res type="Memory" amount="1024"/>
    </node-set>
  </nodes>
</site>
"""


def haizea_leases(corpus_dir: Path) -> Path:
    folder = corpus_dir / "haizea" / "tests"
    if not folder.is_dir():
        pytest.skip(f"Haizea corpus not found at {folder}")
    return folder


def test_haizea_lwf_scheduled_through_dcx_schedule_with_a_haizea_site(
        corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = haizea_leases(corpus_dir)
    site_file = tmp_path / "site.xml"
    site_file.write_text(SITE)
    out = tmp_path / "out"
    # two AR leases for all four nodes at 00:30; the second (deadline 01:00) has to wait
    code = dcx_main(["schedule", str(folder / "deadline1.lwf"), "--env", str(site_file),
                     "--policy", "FIFO-FIRSTFIT,SRTF-BESTFIT", "--output", "json",
                     "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document = json.loads(captured.out)
    assert list(document) == ["runs"]
    for run in document["runs"]:
        assert set(run) == {"policy", "time_model", "seed", "tasks", "jobs", "metrics"}
        assert set(run["metrics"]) >= {"trt_s", "jms_s", "njsl", "jwt_s", "makespan_s"}
    run_folder = out / "FIFO-FIRSTFIT-event"
    tasks = list(csv.DictReader(io.StringIO((run_folder / "tasks.csv").read_text())))
    assert [(row["start_s"], row["finish_s"], row["deadline_missed"]) for row in tasks] == [
        ("1800", "3600", "false"), ("3600", "5400", "true")]
    jobs = list(csv.DictReader(io.StringIO((run_folder / "jobs.csv").read_text())))
    assert [row["deadline_missed"] for row in jobs] == ["0", "1"]
    summary = json.loads((run_folder / "summary.json").read_text())
    assert (summary["deadline_tasks"], summary["deadline_missed"]) == (2, 1)


def test_haizea_best_effort_wide_lease_waits_for_the_long_one(
        corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = haizea_leases(corpus_dir)
    site_file = tmp_path / "site.xml"
    site_file.write_text(SITE)
    out = tmp_path / "out"
    assert dcx_main(["schedule", str(folder / "reservation.lwf"), "--env", str(site_file),
                     "--policy", "FIFO-FIRSTFIT", "--out", str(out)]) == 0
    capsys.readouterr()
    tasks = list(csv.DictReader(io.StringIO(
        (out / "FIFO-FIRSTFIT-event" / "tasks.csv").read_text())))
    # the one-node lease holds a node (its whole CPU and memory) for an hour
    assert [row["start_s"] for row in tasks] == ["0", "3600"]


def test_every_haizea_test_lwf_schedules_on_its_own_site(
        corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = haizea_leases(corpus_dir)
    files = sorted(folder.glob("*.lwf"))
    assert files
    for path in files:
        code = dcx_main(["schedule", str(path), "--output", "json", "--time-model", "sc18"])
        captured = capsys.readouterr()
        assert code == 0, (path.name, captured.err)
        (run,) = json.loads(captured.out)["runs"]
        assert run["tasks"] >= 1, path.name


def test_a_haizea_node_with_half_a_cpu_offers_half_a_core() -> None:
    # the Haizea reader keeps a node CPU that is not whole cores as a CPU named resource
    half = Machine(id="half", resources=(NamedResource("CPU", 50),))
    problem = compiled(one_job_each(lease(1, cores=0.5), lease(2, cores=0.5)), site(half))
    assert problem.machines.capacity == (50,)
    assert problem.machines.dimensions == ()
    assert starts(problem) == {1: 0, 2: 10}


def test_swf_memory_on_an_opendc_setup_warns_once_and_schedules_on_cores(
        corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    setup = corpus_dir / "gwf" / "setup.json"
    if not setup.is_file():
        pytest.skip(f"{setup} not found")
    trace = tmp_path / "memory.swf"
    # field 10: requested memory, 4096 KB per processor
    trace.write_text("1 0 0 10 1 -1 -1 1 10 4096 1 1 1 -1 1 -1 -1 -1\n"
                     "2 5 0 10 1 -1 -1 1 10 4096 1 1 1 -1 1 -1 -1 -1\n")
    assert dcx_main(["schedule", str(trace), "--env", str(setup), "--output", "json"]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if "memory-not-enforced" in line
                or "no machine of the environment declares memory" in line]
    assert len(warnings) == 1 and f"{trace}:1:" in warnings[0]
    assert json.loads(captured.out)["runs"][0]["tasks"] == 2
