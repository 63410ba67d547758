"""Conservative backfilling machine by machine (``planners/machine_profile.py``: one NumPy
profile kept for the whole run, early finishes given back in place, FirstFit compression
looking only at the tasks a stretch given back could move) held to the plain rule it stands
for: a profile built afresh at every early finish from the running tasks and the
reservations (``tests/conservative_oracle.py``: ``ResourceProfile`` when memory is
scheduled, ``PlainProfile`` for cores alone), every waiting task re-inserted at its earliest
fit, passes until none moves earlier.

Generated workloads on two to four machines of unlike sizes, with and without memory, a
drained machine, machines that fail and come back (every plan made again), whole nodes and
cores anywhere, exact and overestimated requested times; FirstFit and BestFit. Every start,
finish, machine, share and first reservation must be the same."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dcx.core.model import (
    Datacenter,
    Environment,
    Job,
    Machine,
    MachineState,
    MachineStateChange,
    Placement,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StorageUnit,
    Task,
    Workload,
)
from dcx.scheduler import backfilling
from dcx.scheduler.engine import Schedule, simulate
from dcx.scheduler.planners.conservative import ConservativeBackfilling
from dcx.scheduler.planners.machine_profile import MachineProfile
from dcx.scheduler.policies import parse_policy
from dcx.scheduler.problem import Problem, compile_problem
from dcx.scheduler.state import ReservingState
from tests.conservative_oracle import PlainConservative


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    memory = draw(st.booleans())
    count = draw(st.integers(2, 4))
    drained = draw(st.sampled_from([None, *range(count)]))
    machines = tuple(
        Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=draw(st.sampled_from([2, 4]))),),
                memory=(StorageUnit(capacity_mb=draw(st.sampled_from([2048.0, 4096.0]))),)
                if memory else (),
                state=MachineState.MAINTENANCE if index == drained else MachineState.ACTIVE)
        for index in range(count))
    events = []
    if draw(st.booleans()):
        failing = draw(st.integers(0, count - 1))
        down = draw(st.integers(1, 40))
        events = [MachineStateChange(f"m{failing}", MachineState.FAILURE, float(down)),
                  MachineStateChange(f"m{failing}", MachineState.ACTIVE,
                                     float(down + draw(st.integers(1, 30))))]
    tasks = []
    for index in range(draw(st.integers(1, 16))):
        runtime = draw(st.integers(0, 20))
        requested = max(1, runtime + draw(st.sampled_from([0, 0, 4, 15])))
        asked = draw(st.sampled_from([512.0, 1024.0, 2048.0])) if memory else None
        if draw(st.booleans()):
            request = ResourceRequest(nodes=draw(st.integers(1, 6)), cores=1,
                                      memory_mb=asked and asked / 2,
                                      placement=Placement.CORES)
        else:
            request = ResourceRequest(nodes=draw(st.integers(1, 2)),
                                      cores=draw(st.integers(1, 2)), memory_mb=asked)
        tasks.append(Task(index + 1, draw(st.integers(0, 40)), runtime,
                          requested_time_s=requested, request=request))
    environment = Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),),
                              events=tuple(events))
    result = compile_problem(Workload(tuple(Job(each.id, (each,)) for each in tasks)),
                             environment)
    assume(result.problem is not None)
    assert result.problem is not None
    return result.problem


def _same(first: list[float], second: list[float]) -> bool:
    return len(first) == len(second) and all(
        a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(first, second, strict=True))


def _run(problem: Problem, name: str, plain: bool) -> Schedule:
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(backfilling, "_pooled", lambda problem: False)
        if plain:
            patched.setitem(backfilling.COMPONENTS, "CONSERVATIVE", PlainConservative)
        return simulate(problem, parse_policy(name))


@settings(max_examples=120, deadline=None)
@given(problems(), st.sampled_from(["FCFS-CONSERVATIVE", "SJF-CONSERVATIVE",
                                    "FCFS-CONSERVATIVE-BESTFIT"]))
def test_the_machine_profile_schedules_as_the_plain_rule(problem: Problem, name: str) -> None:
    fast, plain = _run(problem, name, False), _run(problem, name, True)
    assert _same(fast.start_s, plain.start_s)
    assert _same(fast.finish_s, plain.finish_s)
    assert fast.machines == plain.machines
    assert fast.shares == plain.shares
    assert _same(fast.reserved_s, plain.reserved_s)
    assert fast.cycles == plain.cycles


def test_the_fast_run_plans_on_the_machine_profile() -> None:
    """The differential above compares two profiles, not one with itself."""
    state_seen: list[object] = []

    class Watched(ConservativeBackfilling):
        def plan(self, state: ReservingState, replan: bool, freed: bool,
                 arrived: bool) -> None:
            super().plan(state, replan, freed, arrived)
            state_seen.append(self.profile)

    machines = (Machine(id="a", cpus=(ProcessingUnit(cores=4),),
                        memory=(StorageUnit(capacity_mb=4096.0),)),
                Machine(id="b", cpus=(ProcessingUnit(cores=2),),
                        memory=(StorageUnit(capacity_mb=2048.0),)))
    tasks = [Task(index, index, 5, requested_time_s=20,
                  request=ResourceRequest(nodes=1, cores=2, memory_mb=1024.0))
             for index in range(1, 6)]
    environment = Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))
    problem = compile_problem(Workload(tuple(Job(each.id, (each,)) for each in tasks)),
                              environment).problem
    assert problem is not None
    with pytest.MonkeyPatch.context() as patched:
        patched.setitem(backfilling.COMPONENTS, "CONSERVATIVE", Watched)
        schedule = simulate(problem, parse_policy("FCFS-CONSERVATIVE"))
    assert any(isinstance(profile, MachineProfile) for profile in state_seen)
    assert schedule.start_s == [1, 2, 3, 6, 7]
