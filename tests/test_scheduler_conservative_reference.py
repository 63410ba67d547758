"""Conservative backfilling held to a plain re-planning reference, and the guarantees of
every reserving planner checked after each of its passes.

``reference_conservative`` is conservative backfilling as ``notes/backfilling.md`` defines
it, written the slow, obvious way (O(n^2) per event): intervals instead of a profile, every
candidate start checked against every interval. At each event time it frees what ended,
queues what arrived, and, when a task ended before its requested time, takes every waiting
task's reservation out and puts it back at its earliest fit, in queue order, again until
none moves (compression);
then it gives the tasks without one a reservation at their earliest fit and starts those
whose reservation has come. It shares no code with the engine.

Workloads: generated jobs with exact and overestimated requested times on pooled cores (one
machine, or single-core machines taken whole, or cores anywhere), and on several multi-core
machines (each job on whole nodes, FirstFit).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
    Task,
    Workload,
)
from dcx.scheduler import backfilling
from dcx.scheduler.planners.conservative import ConservativeBackfilling
from dcx.scheduler.planners.easy import EasyBackfilling
from dcx.scheduler.policies import parse_policy
from dcx.scheduler.problem import Problem, compile_problem
from dcx.scheduler.runs import run_policy
from dcx.scheduler.state import ReservingState

_INF = float("inf")


@dataclass(frozen=True)
class Spec:
    """One job: submitted at ``submit``, runs ``runtime``, asks for ``requested`` on
    ``nodes`` nodes of ``cores`` cores."""

    submit: int
    runtime: int
    requested: int
    nodes: int
    cores: int


@dataclass
class Interval:
    begin: float
    end: float
    machines: tuple[int, ...]
    cores: int


def _usage(intervals: Sequence[Interval], machine: int, moment: float) -> int:
    return sum(held.cores for held in intervals
               if machine in held.machines and held.begin <= moment < held.end)


def _earliest(now: float, length: float, nodes: int, cores: int, capacity: Sequence[int],
              intervals: Sequence[Interval]) -> tuple[float, tuple[int, ...]]:
    """The first start, at ``now`` or at an interval's end, where ``nodes`` machines (the
    first in order) have ``cores`` free over the whole window."""
    starts = sorted({now} | {held.end for held in intervals if held.end > now})
    for begin in starts:
        end = begin + length
        points = [begin] + [held.begin for held in intervals if begin < held.begin < end]
        fitting = tuple(
            machine for machine in range(len(capacity))
            if all(_usage(intervals, machine, point) + cores <= capacity[machine]
                   for point in points))
        if len(fitting) >= nodes:
            return begin, fitting[:nodes]
    raise AssertionError("every job fits once everything has ended")


def _fit(job: int, jobs: Sequence[Spec], width: Sequence[tuple[int, int]],
         capacity: Sequence[int], now: float, running: dict[int, tuple[float, Interval]],
         reserved: dict[int, Interval]) -> Interval:
    """``job``'s earliest fit beside the running jobs and every other reservation."""
    others = [held for _, held in running.values()] + [
        held for other, held in reserved.items() if other != job]
    nodes, cores = width[job]
    begin, machines = _earliest(now, jobs[job].requested, nodes, cores, capacity, others)
    return Interval(begin, begin + jobs[job].requested, machines, cores)


def reference_conservative(jobs: Sequence[Spec], capacity: Sequence[int]) -> list[float]:
    """Start times under FCFS conservative backfilling, FirstFit, requested times cutting
    the jobs that reach them. ``capacity`` per machine; with one machine every job's
    ``nodes x cores`` cores are pooled on it."""
    pooled = len(capacity) == 1
    width = [(1, job.nodes * job.cores) if pooled else (job.nodes, job.cores) for job in jobs]
    order = sorted(range(len(jobs)), key=lambda index: (jobs[index].submit, index))
    start: list[float] = [math.nan] * len(jobs)
    running: dict[int, tuple[float, Interval]] = {}  # job -> (real end, expected interval)
    reserved: dict[int, Interval] = {}
    queue: list[int] = []
    arrived = 0
    now = float(jobs[order[0]].submit)
    while True:
        ended = [job for job, (end, _) in running.items() if end <= now]
        early = any(running[job][0] < running[job][1].end for job in ended)
        for job in ended:
            del running[job]
        while arrived < len(order) and jobs[order[arrived]].submit <= now:
            queue.append(order[arrived])
            arrived += 1

        while early:  # compress until no reservation moves
            early = False
            for job in queue:
                if job in reserved:
                    moved = _fit(job, jobs, width, capacity, now, running, reserved)
                    early = early or moved.begin < reserved[job].begin
                    reserved[job] = moved
        for job in queue:
            if job not in reserved:
                reserved[job] = _fit(job, jobs, width, capacity, now, running, reserved)
        for job in list(queue):
            if reserved[job].begin <= now:
                held = reserved.pop(job)
                start[job] = now
                running[job] = (now + min(jobs[job].runtime, jobs[job].requested),
                                Interval(now, held.end, held.machines, held.cores))
                queue.remove(job)
        upcoming = [end for end, _ in running.values()]
        upcoming += [held.begin for held in reserved.values()]
        if arrived < len(order):
            upcoming.append(jobs[order[arrived]].submit)
        if not upcoming:
            return start
        now = max(now, min(upcoming))


# --------------------------------------------------------------------------- the engine


def _environment(count: int, cores: int) -> Environment:
    machines = tuple(Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=cores),))
                     for index in range(count))
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))


def _problem(jobs: Sequence[Spec], machines: int, cores: int,
             placement: Placement = Placement.NODES) -> Problem:
    work = Workload(tuple(
        Job(index + 1, (Task(index + 1, job.submit, job.runtime,
                             requested_time_s=job.requested,
                             request=ResourceRequest(nodes=job.nodes, cores=job.cores,
                                                     placement=placement)),))
        for index, job in enumerate(jobs)))
    result = compile_problem(work, _environment(machines, cores))
    assert result.problem is not None, [d.render() for d in result.diagnostics]
    return result.problem


def _starts(problem: Problem, name: str = "FCFS-CONSERVATIVE") -> list[float]:
    schedule = run_policy(problem, parse_policy(name)).schedule
    assert schedule.unfinished == 0
    return schedule.start_s


@st.composite
def specs(draw: st.DrawFn, nodes: int, cores: int, exact: bool) -> list[Spec]:
    jobs = []
    for _ in range(draw(st.integers(1, 14))):
        runtime = draw(st.integers(0, 12))
        over = 0 if exact else draw(st.integers(0, 12))
        jobs.append(Spec(draw(st.integers(0, 30)), runtime, max(1, runtime + over),
                         draw(st.integers(1, nodes)), draw(st.integers(1, cores))))
    return jobs


@settings(max_examples=150, deadline=None)
@given(st.booleans(), st.integers(1, 8), st.data())
def test_conservative_on_pooled_cores_is_the_reference(exact: bool, total: int,
                                                       data: st.DataObject) -> None:
    """The same jobs three ways over ``total`` pooled cores: ``w`` cores on one machine,
    ``w`` single-core machines taken whole, and ``w`` cores anywhere on ``total``
    single-core machines."""
    jobs = data.draw(specs(1, total, exact))
    expected = reference_conservative(jobs, [total])
    assert _starts(_problem(jobs, 1, total)) == expected
    as_nodes = [Spec(job.submit, job.runtime, job.requested, job.cores, 1) for job in jobs]
    assert _starts(_problem(as_nodes, total, 1)) == expected
    assert _starts(_problem(jobs, total, 1, Placement.CORES)) == expected


@settings(max_examples=150, deadline=None)
@given(st.booleans(), st.integers(2, 4), st.data())
def test_conservative_on_multi_core_machines_is_the_reference(
        exact: bool, machines: int, data: st.DataObject) -> None:
    jobs = data.draw(specs(2, 4, exact))
    assert _starts(_problem(jobs, machines, 4)) == reference_conservative(jobs, [4] * machines)


def test_the_reference_tells_a_forgotten_early_finish_apart() -> None:
    """The issue's case: job 1 runs 2 s of a requested 10 s on all 4 cores; job 2 (1 s, 4
    cores) arrives at 5 on the idle machine and starts at once."""
    jobs = [Spec(0, 2, 10, 1, 4), Spec(5, 1, 1, 1, 4)]
    assert reference_conservative(jobs, [4]) == [0, 5]
    assert _starts(_problem(jobs, 1, 4)) == [0, 5]


# --------------------------------------------------------------------------- per pass


def _intervals(state: ReservingState, leave_out: int) -> list[Interval]:
    held = [Interval(-_INF, state.expected_end_s[task], state.placed_on[task],
                     state.need[task]) for _, task in state.running]
    held += [Interval(r.start_s, r.end_s, r.machines, state.need[task])
             for task, r in state.reservations.items() if task != leave_out]
    return held


def _checked(planner: type, check: Callable[[ReservingState], None]) -> type:
    class Checked(planner):
        def plan(self, state: ReservingState, replan: bool, freed: bool,
                 arrived: bool) -> None:
            super().plan(state, replan, freed, arrived)
            check(state)
    return Checked


def _nobody_could_start_now(state: ReservingState) -> None:
    """After a conservative pass, every waiting task's earliest fit beside the running
    tasks and every other reservation is later than now (it could not start without
    delaying one), and its reservation is no later than the first one it was given."""
    capacity = [c if state.usable[m] else 0 for m, c in enumerate(state.capacity)]
    for _, task in state.queue:
        held = state.reservations[task]
        assert held.start_s <= state.first_reservation_s[task]
        length = held.end_s - held.start_s
        begin, _ = _earliest(state.now, length, state.nodes[task], state.need[task],
                             capacity, _intervals(state, task))
        assert begin > state.now


def _shadow_is_fresh(state: ReservingState) -> None:
    """After an EASY pass, the head's reservation is the shadow computed afresh from the
    running tasks: the first expected end by which enough machines have its cores free."""
    if not state.queue:
        return
    head = state.queue[0][1]
    held = state.reservations.get(head)
    assert held is not None
    running = _intervals(state, head)
    running = [interval for interval in running if interval.begin == -_INF]
    projected = list(state.free)
    moments = sorted({interval.end for interval in running})
    for moment in moments:
        projected = list(state.free)
        for interval in running:
            if interval.end <= moment:
                for machine in interval.machines:
                    projected[machine] += interval.cores
        fitting = [m for m, free in enumerate(projected)
                   if state.usable[m] and free >= state.need[head]]
        if len(fitting) >= state.nodes[head]:
            assert held.start_s == moment
            return
    raise AssertionError("the head holds a reservation no running task's end explains")


@settings(max_examples=120, deadline=None)
@given(st.booleans(), st.integers(1, 3), st.data())
def test_after_every_conservative_pass_nothing_waits_that_could_start(
        exact: bool, machines: int, data: st.DataObject) -> None:
    jobs = data.draw(specs(min(2, machines), 4, exact))
    problem = _problem(jobs, machines, 4)
    with pytest.MonkeyPatch.context() as patched:
        patched.setitem(backfilling.COMPONENTS, "CONSERVATIVE",
                        _checked(ConservativeBackfilling, _nobody_could_start_now))
        _starts(problem)


@settings(max_examples=120, deadline=None)
@given(st.booleans(), st.integers(1, 3), st.data())
def test_after_every_easy_pass_the_shadow_is_fresh(exact: bool, machines: int,
                                                   data: st.DataObject) -> None:
    jobs = data.draw(specs(min(2, machines), 4, exact))
    problem = _problem(jobs, machines, 4)
    with pytest.MonkeyPatch.context() as patched:
        patched.setitem(backfilling.COMPONENTS, "EASY",
                        _checked(EasyBackfilling, _shadow_is_fresh))
        _starts(problem, "FCFS-EASY")
