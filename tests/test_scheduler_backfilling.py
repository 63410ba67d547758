"""The queue planners (strict FCFS, EASY and conservative backfilling) on the worked
examples of ``notes/backfilling.md`` and on generated workloads; scheduler declarations;
the batch-scheduling metrics."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Environment,
    Job,
    Machine,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    Task,
    Workload,
)
from dcx.scheduler import backfilling
from dcx.scheduler.declaration import load_declaration, shipped_declarations
from dcx.scheduler.engine import simulate
from dcx.scheduler.metrics import compute_metrics
from dcx.scheduler.policies import all_policies, parse_policy
from dcx.scheduler.problem import Problem, compile_problem

JobSpec = tuple[float, float, float, int]
"""(submit, runtime, requested, width)"""


def _environment(count: int, cores: int) -> Environment:
    machines = tuple(Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=cores),))
                     for index in range(count))
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))


def _problem(jobs: Sequence[JobSpec], machines: int, cores: int = 1,
             width_is_cores: bool = False) -> Problem:
    """Jobs of ``width`` single-core nodes (an SWF job), or of ``width`` cores on one
    machine (``width_is_cores``)."""
    def request(width: int) -> ResourceRequest:
        if width_is_cores:
            return ResourceRequest(nodes=1, cores=width)
        return ResourceRequest(nodes=width, cores=1)
    work = Workload(tuple(
        Job(index + 1, (Task(index + 1, submit, runtime, requested_time_s=requested,
                             request=request(width)),))
        for index, (submit, runtime, requested, width) in enumerate(jobs)))
    result = compile_problem(work, _environment(machines, cores))
    assert result.problem is not None, [d.render() for d in result.diagnostics]
    return result.problem


@pytest.fixture(params=["pooled", "per-machine"])
def planning(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run each example both as one pooled machine and machine by machine."""
    if request.param == "per-machine":
        monkeypatch.setattr(backfilling, "_pooled", lambda problem: False)
    yield request.param


EXAMPLE_1 = [(0, 8, 8, 2), (1, 5, 5, 4), (2, 3, 3, 1), (3, 2, 2, 2), (4, 3, 3, 1)]
EXAMPLE_2 = [(0, 4, 10, 3), (1, 6, 6, 4), (2, 5, 5, 1), (5, 3, 3, 2)]


@pytest.mark.parametrize(("policy", "starts", "mean_wait", "makespan"), [
    ("FCFS", [0, 8, 13, 13, 13], 7.4, 16),
    ("FCFS-EASY", [0, 8, 2, 13, 4], 3.4, 15),
    ("FCFS-CONSERVATIVE", [0, 8, 2, 5, 13], 3.6, 16),
    ("FIFO-FIRSTFIT", [0, 9, 2, 7, 4], 2.4, 14),  # greedy: the wide J2 is delayed
])
def test_example_1_a_wide_head_a_short_job_backfilled_a_long_one_not(
        planning: str, policy: str, starts: list[float], mean_wait: float,
        makespan: float) -> None:
    problem = _problem(EXAMPLE_1, machines=4)
    if parse_policy(policy).reserves:
        schedule = simulate(problem, parse_policy(policy))
    else:
        from dcx.scheduler.runs import run_policy
        schedule = run_policy(problem, parse_policy(policy)).schedule
    assert schedule.start_s == starts
    summary = compute_metrics(problem, schedule).summary
    assert summary.wait is not None and summary.wait.mean == pytest.approx(mean_wait)
    assert summary.makespan_s == makespan


def test_example_1_bounded_slowdown_of_the_overtaken_job(planning: str) -> None:
    problem = _problem(EXAMPLE_1, machines=4)
    metrics = compute_metrics(problem, simulate(problem, parse_policy("FCFS-EASY")))
    j4 = next(row for row in metrics.tasks if row.task_id == 4)
    assert j4.turnaround_s == 12  # response 12, run 2: slowdown 6, bounded 12 / 10
    summary = metrics.summary
    assert summary.bounded_slowdown is not None and summary.bounded_slowdown.max == 1.2


@pytest.mark.parametrize(("policy", "starts"), [
    ("FCFS", [0, 4, 10, 10]),
    # J1 ends at 4, not 10: the shadow moves to 7 (J3's expected end), so J4 must wait
    ("FCFS-EASY", [0, 7, 2, 13]),
    # compression moves J2's reservation from 10 to 7
    ("FCFS-CONSERVATIVE", [0, 7, 2, 13]),
])
def test_example_2_early_finish_compresses_the_schedule(planning: str, policy: str,
                                                        starts: list[float]) -> None:
    problem = _problem(EXAMPLE_2, machines=4)
    schedule = simulate(problem, parse_policy(policy))
    assert schedule.start_s == starts
    if policy == "FCFS-CONSERVATIVE":
        assert schedule.reserved_s[1] == 10  # the reservation J2 was given on arrival


@pytest.mark.parametrize("policy", ["FCFS", "FCFS-EASY", "FCFS-CONSERVATIVE", "SJF-EASY",
                                    "FIFO-FIRSTFIT"])
@pytest.mark.parametrize("width_is_cores", [False, True])
def test_an_early_finish_with_nobody_waiting_frees_the_cores_at_once(
        planning: str, policy: str, width_is_cores: bool) -> None:
    """Job 1 runs 2 s of a requested 10 s on all 4 cores; job 2 (1 s) arrives at 5 on the
    idle machine: it starts at 5 under every policy (conservative kept a stale profile and
    started it at 10 when the early finish came while the queue was empty)."""
    jobs = [(0, 2, 10, 4), (5, 1, 1, 4)]
    problem = (_problem(jobs, machines=1, cores=4, width_is_cores=True) if width_is_cores
               else _problem(jobs, machines=4))
    from dcx.scheduler.runs import run_policy
    assert run_policy(problem, parse_policy(policy)).schedule.start_s == [0, 5]


@pytest.mark.parametrize("policy", ["FCFS-EASY", "FCFS-CONSERVATIVE"])
def test_example_3_a_backfilled_job_avoids_the_machine_the_head_is_due_on(policy: str) -> None:
    # machines A, B with 4 cores; a job must fit on one machine; FirstFit
    jobs = [(0, 10, 10, 3), (0, 20, 20, 2), (1, 10, 10, 4), (2, 30, 30, 1)]
    problem = _problem(jobs, machines=2, cores=4, width_is_cores=True)
    schedule = simulate(problem, parse_policy(policy))
    assert schedule.start_s == [0, 0, 10, 2]
    assert schedule.machines == [(0,), (1,), (0,), (1,)]


def test_easy_and_conservative_differ_where_easy_lets_a_job_overtake() -> None:
    problem = _problem(EXAMPLE_1, machines=4)
    easy = simulate(problem, parse_policy("FCFS-EASY")).start_s
    conservative = simulate(problem, parse_policy("FCFS-CONSERVATIVE")).start_s
    assert (easy[3], easy[4]) == (13, 4)  # J5 overtakes J4
    assert (conservative[3], conservative[4]) == (5, 13)  # J4 keeps its reservation


def test_sjf_easy_reserves_again_when_an_arrival_overtakes_the_head_and_starts(
        planning: str) -> None:
    """J3 is shorter than the waiting head J2, so SJF puts it first; it fits and starts,
    holding a core past J2's shadow (10). J2 still starts at 10 only if its shadow is taken
    again then: with J3's core gone there is no extra, so J4 (long, behind J2) must wait."""
    jobs = [(0, 10, 10, 2), (1, 5, 5, 3), (8, 4, 4, 1), (9, 6, 6, 1)]
    schedule = simulate(_problem(jobs, 4), parse_policy("SJF-EASY"))
    assert schedule.start_s == [0, 10, 8, 12]
    assert schedule.reserved_s[1] == 10


def test_a_job_reaching_its_requested_time_is_cut_there() -> None:
    problem = _problem([(0, 50, 20, 1)], machines=1)
    schedule = simulate(problem, parse_policy("FCFS-EASY"))
    assert schedule.finish_s == [20] and schedule.killed == 1


# --------------------------------------------------------------------------- properties


@st.composite
def workloads(draw: st.DrawFn) -> tuple[list[JobSpec], int, int, bool]:
    width_is_cores = draw(st.booleans())
    machines = draw(st.integers(1, 3)) if width_is_cores else draw(st.integers(1, 6))
    cores = 4 if width_is_cores else 1
    widest = cores if width_is_cores else machines
    jobs: list[JobSpec] = []
    for _ in range(draw(st.integers(1, 9))):
        runtime = draw(st.integers(0, 15))
        # mostly over-estimates; sometimes an under-estimate (the job is cut)
        requested = max(0, runtime + draw(st.integers(-3, 12)))
        jobs.append((draw(st.integers(0, 25)), runtime, requested,
                     draw(st.integers(1, widest))))
    return jobs, machines, cores, width_is_cores


def _never_over_allocated(problem: Problem, starts: list[float], finishes: list[float],
                          placed: list[tuple[int, ...]]) -> None:
    events: list[tuple[float, int, int, int]] = []  # (time, end first, machine, +-cores)
    for task, machines in enumerate(placed):
        for machine in machines:
            if finishes[task] > starts[task]:
                events.append((starts[task], 1, machine, problem.tasks.need[task]))
                events.append((finishes[task], 0, machine, -problem.tasks.need[task]))
    used = [0] * len(problem.machines)
    for _, _, machine, delta in sorted(events):
        used[machine] += delta
        assert used[machine] <= problem.machines.capacity[machine]


@settings(max_examples=300, deadline=None)
@given(workloads(), st.sampled_from(["FCFS", "FCFS-EASY", "FCFS-CONSERVATIVE", "SJF-EASY",
                                     "LJF", "FCFS-EASY-BESTFIT",
                                     "FCFS-CONSERVATIVE-WORSTFIT"]))
def test_reserving_schedules_keep_their_guarantees(
        case: tuple[list[JobSpec], int, int, bool], name: str) -> None:
    jobs, machines, cores, width_is_cores = case
    problem = _problem(jobs, machines, cores, width_is_cores)
    policy = parse_policy(name)
    schedule = simulate(problem, policy)
    tasks = problem.tasks
    assert schedule.unfinished == 0
    _never_over_allocated(problem, schedule.start_s, schedule.finish_s, schedule.machines)
    for task in range(len(tasks)):
        assert schedule.start_s[task] >= tasks.submit_s[task]
        assert schedule.finish_s[task] == schedule.start_s[task] + min(
            tasks.runtime_s[task], tasks.requested_s[task])
        assert len(schedule.machines[task]) == tasks.nodes[task]
        promised = schedule.reserved_s[task]
        if policy.task_order == "FCFS" and policy.backfilling in ("EASY", "CONSERVATIVE"):
            # EASY never starts the head later than its reservation; conservative never
            # delays any job past the reservation it was given
            assert math.isnan(promised) or schedule.start_s[task] <= promised
    if policy.backfilling == "CONSERVATIVE":  # every task of some length got a reservation
        assert all(not math.isnan(promised) or tasks.requested_s[task] == 0
                   for task, promised in enumerate(schedule.reserved_s))
    if policy.backfilling == "STRICT" and policy.task_order == "FCFS":
        queue_order = sorted(range(len(tasks)), key=lambda task: (tasks.submit_s[task], task))
        in_order = [schedule.start_s[task] for task in queue_order]
        assert in_order == sorted(in_order)
    summary = compute_metrics(problem, schedule).summary
    assert 0 <= summary.utilisation <= 1 + 1e-9
    assert summary.bounded_slowdown is not None and summary.bounded_slowdown.count == len(jobs)
    assert all(value >= 1 for value in (summary.bounded_slowdown.mean,
                                        summary.bounded_slowdown.p50))


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_a_job_easy_starts_out_of_order_does_not_delay_the_head(
        case: tuple[list[JobSpec], int, int, bool]) -> None:
    """Every job EASY starts while an earlier job waits either ends (by its requested time)
    by the reservation that earlier job holds, or uses cores that job does not need then:
    the head still starts by its reservation."""
    jobs, machines, cores, width_is_cores = case
    problem = _problem(jobs, machines, cores, width_is_cores)
    schedule = simulate(problem, parse_policy("FCFS-EASY"))
    strict = simulate(problem, parse_policy("FCFS"))
    starts, requested = schedule.start_s, problem.tasks.requested_s
    for head, promised in enumerate(schedule.reserved_s):
        if math.isnan(promised):
            continue
        assert starts[head] <= promised
        for other in range(head + 1, len(starts)):
            if starts[other] < starts[head]:
                ends_in_time = starts[other] + requested[other] <= promised
                assert ends_in_time or starts[head] <= promised
    # a job at the head of an empty machine starts at once under every policy
    first = min(range(len(starts)), key=lambda t: (problem.tasks.submit_s[t], t))
    assert starts[first] == strict.start_s[first] == problem.tasks.submit_s[first]


# --------------------------------------------------------------------------- declarations


def test_every_shipped_scheduler_file_is_valid_and_the_paper_nine_are_there() -> None:
    shipped = shipped_declarations()
    for policy in all_policies():
        assert shipped[policy.name] == policy
    for name in ("FCFS-EASY", "FCFS-CONSERVATIVE", "SJF-EASY", "FCFS", "SJF", "LJF"):
        assert shipped[name] == parse_policy(name)
    assert shipped["FCFS-EASY-MATCH"] == parse_policy("FCFS-EASY+R3-MATCH")


def test_a_scheduler_file_is_validated_like_any_dcx_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "X",\n "stages": {"T2": "FCFS", "R5": "NEXTFIT"}}')
    policy, diagnostics = load_declaration(broken)
    assert policy is None
    assert diagnostics[0].code.startswith("schema.") and diagnostics[0].line == 2
    random_easy = tmp_path / "random-easy.json"
    random_easy.write_text(json.dumps({"name": "R", "stages": {
        "T2": "RANDOM", "R5": "FIRSTFIT", "backfilling": "EASY"}}))
    policy, diagnostics = load_declaration(random_easy)
    assert policy is None and diagnostics[0].code == "scheduler.no-fixed-order"


@pytest.mark.parametrize(("name", "expected"), [
    ("srtf-bestfit", ("SRTF", "BESTFIT", "GREEDY")),
    ("FCFS", ("FCFS", "FIRSTFIT", "STRICT")),
    ("FCFS-EASY", ("FCFS", "FIRSTFIT", "EASY")),
    ("SJF-EASY", ("SJF", "FIRSTFIT", "EASY")),
    ("FCFS-CONSERVATIVE-BESTFIT", ("FCFS", "BESTFIT", "CONSERVATIVE")),
])
def test_policy_names(name: str, expected: tuple[str, str, str]) -> None:
    policy = parse_policy(name)
    assert (policy.task_order, policy.machine_selection, policy.backfilling) == expected
    assert parse_policy(policy.name) == policy


@pytest.mark.parametrize("name", ["RANDOM-EASY", "RANDOM", "FCFS-LAZY", "SJF-EASY-NEXTFIT"])
def test_unknown_policy_names(name: str) -> None:
    with pytest.raises(ValueError, match="unknown policy"):
        parse_policy(name)


@pytest.mark.parametrize("policy", ["FCFS", "FCFS-EASY", "FCFS-CONSERVATIVE"])
def test_t11_a_failed_machine_gives_its_tasks_back_to_the_queue(policy: str) -> None:
    from dcx.core.model import MachineState, MachineStateChange

    machines = tuple(Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=1),))
                     for index in range(2))
    events = (MachineStateChange(machine="m0", time_s=4.0, state=MachineState.FAILURE),)
    env = Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),),
                      events=events)
    work = Workload(tuple(Job(n, (Task(n, 0.0, 10.0, requested_time_s=10.0),))
                          for n in (1, 2, 3)))
    problem = compile_problem(work, env).problem
    assert problem is not None
    schedule = simulate(problem, parse_policy(policy))
    # task 1 ran on m0 from 0 to the failure at 4 and restarts on m1 after task 2 ends
    assert schedule.machines[0] == (1,) and schedule.attempts[0] == 1
    assert schedule.lost_core_s == 4
    assert schedule.unfinished == 0
    assert all(machines != (0,) for machines in schedule.machines[1:])
    assert sorted(schedule.finish_s) == [10, 20, 30]


DRAINED_CONF = """ClusterName=t
NodeName=a[1-3] CPUs=4 State=UNKNOWN
{extra}PartitionName=all Nodes=ALL Default=YES
"""


@pytest.mark.parametrize("policy", ["FCFS-EASY", "FCFS-CONSERVATIVE", "SJF-CONSERVATIVE"])
def test_a_drained_machine_is_planned_as_an_absent_one(tmp_path: Path, policy: str) -> None:
    """Cores-anywhere tasks on a cluster with a drained node start when they would on the
    cluster without it, and never on it (the cores that are up stay one pool)."""
    from dcx.scheduler.loading import load_problem
    from dcx.scheduler.policies import parse_policy
    from dcx.scheduler.runs import run_policy

    chooser = random.Random(5)
    lines, submit = [], 0
    for job in range(1, 121):
        submit += chooser.randrange(0, 30)
        runtime = chooser.randrange(5, 200)
        procs = chooser.choice((1, 2, 3, 4, 6, 8))
        lines.append(f"{job} {submit} -1 {runtime} {procs} -1 -1 {procs} {runtime * 2} "
                     "-1 1 1 1 -1 1 -1 -1 -1")
    trace = tmp_path / "t.swf"
    trace.write_text("\n".join(lines) + "\n")
    starts = []
    for extra in ("", "NodeName=b1 CPUs=16 State=DRAIN\n"):
        conf = tmp_path / "slurm.conf"
        conf.write_text(DRAINED_CONF.format(extra=extra))
        loaded = load_problem(trace, conf)
        assert loaded.problem is not None
        assert backfilling._pooled(loaded.problem)
        outcome = run_policy(loaded.problem, parse_policy(policy), "event", None)
        starts.append(list(outcome.schedule.start_s))
        assert all(3 not in machines for machines in outcome.schedule.machines)  # b1 unused
    assert starts[0] == starts[1]
