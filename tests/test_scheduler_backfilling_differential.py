"""The queue planners' shortcuts against the plain rules they stand for, on generated
workloads: every schedule must be identical.

``PlainEasy`` is EASY as the engine ran it before its shortcuts: the shadow walked from the
front of the running tasks, and every pass that may start a task scanning the whole queue.
The engine walks from whichever end is shorter and, when only arrivals happened, scans the
new tasks alone. ``PlainConservative`` keeps one scheduling machine's profile as the
general one (a row of machines per slice, built task by task) and compresses by taking
each reservation out and inserting it again; the engine sums the profile's changes per
instant and, for a reservation that cannot move, changes nothing. Workloads: small
hypothesis ones (pooled and machine by machine, zero runtimes, under-estimates) and seeded
synthetic SWF traces at a high offered load, whose long queues and wide heads take every
path."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.generate_swf import generate
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
from dcx.scheduler.engine import Schedule, simulate
from dcx.scheduler.loading import load_problem
from dcx.scheduler.planners.conservative import ConservativeBackfilling
from dcx.scheduler.planners.easy import (
    EasyBackfilling,
    _Shadow,
    _shadow_from_back,
    _shadow_from_front,
)
from dcx.scheduler.planners.pooled_profile import PooledProfile
from dcx.scheduler.planners.strict import start_from_front
from dcx.scheduler.policies import parse_policy
from dcx.scheduler.problem import Problem, compile_problem
from dcx.scheduler.state import ReservingState
from tests.conservative_oracle import PlainConservative

_INF = float("inf")


class PlainEasy(EasyBackfilling):
    """The reference: the shadow from the front, the whole queue scanned at every pass
    that may start a task."""

    def plan(self, state: ReservingState, replan: bool, freed: bool, arrived: bool) -> None:
        queue = state.queue
        head_before = self.shadow.head if self.shadow else None
        waiting = len(queue)
        start_from_front(state, self.select)
        if not queue:
            self.shadow = None
            return
        head = queue[0][1]
        if head_before is not None and head != head_before:
            state.reservations.pop(head_before, None)
        if (replan or freed or len(queue) != waiting or self.shadow is None
                or head != head_before):
            self.shadow = self._plain_reserve(state, head)
        elif not arrived:
            return
        self._plain_backfill(state, self.shadow)

    def _plain_reserve(self, state: ReservingState, head: int) -> _Shadow:
        projected = list(state.free)
        need, nodes = state.need[head], state.nodes[head]
        running = state.running
        index, count = 0, len(running)
        while index < count:
            moment = running[index][0]
            while index < count and running[index][0] == moment:
                task = running[index][1]
                for machine in state.placed_on[task]:
                    projected[machine] += state.need[task]
                index += 1
            candidates = state.fitting(head, projected)
            if len(candidates) >= nodes:
                chosen = self.select(need, nodes, candidates, projected)
                for machine in chosen:
                    projected[machine] -= need
                self._promise(state, head, moment, chosen)
                return _Shadow(head, moment, projected)
        return _Shadow(head, _INF, projected)

    def _plain_backfill(self, state: ReservingState, shadow: _Shadow) -> None:
        queue, free, extra = state.queue, state.free, shadow.extra
        now, limit = state.now, shadow.time_s
        position = 1
        while position < len(queue):
            task = queue[position][1]
            need, nodes = state.need[task], state.nodes[task]
            candidates = state.fitting(task)
            if len(candidates) < nodes:
                position += 1
                continue
            in_time = [m for m in candidates if now + state.expected_duration(task, m) <= limit]
            if len(in_time) >= nodes:
                state.start(task, self.select(need, nodes, in_time, free))
            else:
                spare = [m for m in candidates if extra[m] >= need]
                if len(spare) < nodes:
                    position += 1
                    continue
                chosen = self.select(need, nodes, spare, free)
                for machine in chosen:
                    extra[machine] -= need
                state.start(task, chosen)
            del queue[position]


PLAIN = {"EASY": PlainEasy, "CONSERVATIVE": PlainConservative}


def _same(first: list[float], second: list[float]) -> bool:
    return len(first) == len(second) and all(
        a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(first, second, strict=True))


def _assert_identical(fast: Schedule, plain: Schedule) -> None:
    assert _same(fast.start_s, plain.start_s)
    assert _same(fast.finish_s, plain.finish_s)
    assert fast.machines == plain.machines
    assert _same(fast.reserved_s, plain.reserved_s)
    assert (fast.cycles, fast.killed, fast.unfinished) == (
        plain.cycles, plain.killed, plain.unfinished)


def _both(problem: Problem, name: str, monkeypatch: pytest.MonkeyPatch,
          ) -> tuple[Schedule, Schedule]:
    policy = parse_policy(name)
    fast = simulate(problem, policy)
    with monkeypatch.context() as patched:
        patched.setitem(backfilling.COMPONENTS, policy.backfilling,
                        PLAIN[policy.backfilling])
        plain = simulate(problem, policy)
    return fast, plain


def _environment(count: int, cores: int) -> Environment:
    machines = tuple(Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=cores),))
                     for index in range(count))
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    """Up to 30 jobs of one task: SWF-like (``width`` single-core machines, pooled) or
    ``width`` cores on one of a few 4-core machines (planned machine by machine)."""
    width_is_cores = draw(st.booleans())
    machines = draw(st.integers(1, 3)) if width_is_cores else draw(st.integers(1, 8))
    cores = 4 if width_is_cores else 1
    widest = cores if width_is_cores else machines
    jobs = []
    for index in range(draw(st.integers(1, 30))):
        runtime = draw(st.integers(0, 20))
        requested = max(0, runtime + draw(st.integers(-3, 15)))
        width = draw(st.integers(1, widest))
        request = (ResourceRequest(nodes=1, cores=width) if width_is_cores
                   else ResourceRequest(nodes=width, cores=1))
        jobs.append(Job(index + 1, (Task(index + 1, draw(st.integers(0, 40)), runtime,
                                         requested_time_s=requested, request=request),)))
    result = compile_problem(Workload(tuple(jobs)), _environment(machines, cores))
    assert result.problem is not None
    return result.problem


POLICIES = ["FCFS-EASY", "SJF-EASY", "LJF-EASY", "SRTF-EASY", "FCFS-EASY-BESTFIT",
            "FCFS-EASY-WORSTFIT", "FCFS-EASY+J3-SJF", "FCFS-CONSERVATIVE", "SJF-CONSERVATIVE",
            "FCFS-CONSERVATIVE-BESTFIT", "LJF-CONSERVATIVE+J3-SJF"]


@settings(max_examples=400, deadline=None)
@given(problems(), st.sampled_from(POLICIES), st.booleans())
def test_backfilling_schedules_as_the_plain_rules_do(problem: Problem, name: str,
                                                     per_machine: bool) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        if per_machine:  # an SWF-like problem planned machine by machine too
            monkeypatch.setattr(backfilling, "_pooled", lambda problem: False)
        _assert_identical(*_both(problem, name, monkeypatch))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("name", "jobs"), [
    ("FCFS-EASY", 2000), ("SJF-EASY", 2000), ("FCFS-CONSERVATIVE", 600)])
def test_a_synthetic_trace_schedules_as_the_plain_rules_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, name: str,
        jobs: int) -> None:
    """Jobs on 64 processors at offered load 0.95: queues of hundreds of jobs."""
    trace = tmp_path / "synthetic.swf"
    trace.write_text(generate(jobs, procs=64, load=0.95, seed=seed))
    loaded = load_problem(trace, None)
    assert loaded.problem is not None
    fast, plain = _both(loaded.problem, name, monkeypatch)
    assert fast.unfinished == 0
    _assert_identical(fast, plain)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5)), min_size=1, max_size=12),
       st.integers(0, 8), st.integers(0, 40))
def test_the_shadow_walked_from_either_end_is_the_same(
        running: list[tuple[int, int]], free: int, wanted: int) -> None:
    """Running tasks as (expected end, cores), ties included; a head the machine can hold
    once they have all ended."""
    ends = sorted((float(end), task) for task, (end, _) in enumerate(running))
    need = [cores for _, cores in running]
    capacity = free + sum(need)
    wanted = min(wanted, capacity)
    if wanted <= free:
        return  # the head would fit now: no shadow is looked for
    assert (_shadow_from_front(ends, need, free, wanted)
            == _shadow_from_back(ends, need, capacity, wanted))


def test_the_comparison_tells_a_stale_shadow_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: an EASY that never recomputes the shadow after the first
    pass (the stale shadow of Example 2 of the note) schedules differently."""
    class StaleEasy(PlainEasy):
        def plan(self, state: ReservingState, replan: bool, freed: bool,
                 arrived: bool) -> None:
            super().plan(state, False, False, arrived)

    rng = random.Random(4)
    jobs = []
    for index in range(40):
        runtime = rng.randrange(1, 9)
        jobs.append(Job(index + 1, (Task(
            index + 1, rng.randrange(40), runtime, requested_time_s=runtime + rng.randrange(12),
            request=ResourceRequest(nodes=rng.randrange(1, 5), cores=1)),)))
    problem = compile_problem(Workload(tuple(jobs)), _environment(4, 1)).problem
    assert problem is not None
    fast, plain = _both(problem, "FCFS-EASY", monkeypatch)
    _assert_identical(fast, plain)
    monkeypatch.setitem(backfilling.COMPONENTS, "EASY", StaleEasy)
    stale = simulate(problem, parse_policy("FCFS-EASY"))
    assert not _same(fast.start_s, stale.start_s)


def test_the_comparison_tells_a_missing_compression_apart(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The conservative comparison can fail: a planner that gives an early finish's cores
    back but moves no reservation (Example 2 of the note) starts J2 at 10 and J4 at 5,
    where the plain rule and the engine start them at 7 and 13."""
    class NoCompression(ConservativeBackfilling):
        def _compress(self, state: ReservingState) -> None:
            assert isinstance(self.profile, PooledProfile)
            self.profile.sync(state)

    jobs = [(0, 4, 10, 3), (1, 6, 6, 4), (2, 5, 5, 1), (5, 3, 3, 2)]
    problem = compile_problem(Workload(tuple(
        Job(index + 1, (Task(index + 1, submit, runtime, requested_time_s=requested,
                             request=ResourceRequest(nodes=width, cores=1)),))
        for index, (submit, runtime, requested, width) in enumerate(jobs))),
        _environment(4, 1)).problem
    assert problem is not None
    fast, plain = _both(problem, "FCFS-CONSERVATIVE", monkeypatch)
    _assert_identical(fast, plain)
    assert plain.start_s == [0, 7, 2, 13]
    monkeypatch.setitem(backfilling.COMPONENTS, "CONSERVATIVE", NoCompression)
    uncompressed = simulate(problem, parse_policy("FCFS-CONSERVATIVE"))
    assert uncompressed.start_s == [0, 10, 2, 5]
