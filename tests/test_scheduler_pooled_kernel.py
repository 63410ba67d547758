"""``scheduler/planners/pooled_kernel.py`` (the compiled compression of the pooled profile,
``PooledProfile.compress``) held to the plain compression it stands for, written here with
the profile's own ``release``, ``earliest`` and ``hold``: every waiting task, in queue
order, taken out and put back at its earliest fit, passes until none moves. The kernel's
bounds must never skip a task the plain passes would move, so the schedules are identical:
generated pooled workloads with exact and overestimated requested times, the issue's early
finish with nobody waiting, and seeded synthetic traces at a high offered load (long
queues, many moves)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.generate_swf import generate
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
from dcx.scheduler.engine import Schedule, simulate
from dcx.scheduler.loading import load_problem
from dcx.scheduler.planners.pooled_profile import PooledProfile, _KernelRoom
from dcx.scheduler.policies import parse_policy
from dcx.scheduler.problem import Problem, compile_problem
from dcx.scheduler.state import Reservation, ReservingState


def plain_compress(profile: PooledProfile, state: ReservingState,
                   reservations: dict[int, Reservation], waiting: list[int],
                   freed_until: float, moved: Callable[[int, Reservation], None]) -> None:
    """Every waiting task, in queue order, taken out and put back at its earliest fit
    (searched from now, no bound), passes until a pass moves none."""
    earlier = True
    while earlier:
        earlier = False
        for task in waiting:
            held, need = reservations[task], state.need[task]
            profile.release(held, need)
            found = profile.earliest(state, task, None)
            assert found is not None and found.start_s <= held.start_s
            if found.start_s < held.start_s:
                profile.hold(found, need)
                reservations[task] = found
                moved(task, found)
                earlier = True
            else:
                profile.hold(held, need)


def _run(problem: Problem, name: str, compress: Callable[..., None] | None,
         ) -> Schedule:
    with pytest.MonkeyPatch.context() as patched:
        if compress is not None:
            patched.setattr(PooledProfile, "compress", compress)
        return simulate(problem, parse_policy(name))


def _environment(count: int, cores: int) -> Environment:
    machines = tuple(Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=cores),))
                     for index in range(count))
    return Environment((Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))


def _problem(jobs: list[tuple[int, int, int, int]], total: int) -> Problem:
    """``(submit, runtime, requested, cores)`` jobs asking for cores anywhere on ``total``
    single-core machines (one pool)."""
    work = Workload(tuple(
        Job(index + 1, (Task(index + 1, submit, runtime, requested_time_s=requested,
                             request=ResourceRequest(nodes=1, cores=cores,
                                                     placement=Placement.CORES)),))
        for index, (submit, runtime, requested, cores) in enumerate(jobs)))
    result = compile_problem(work, _environment(total, 1))
    assert result.problem is not None
    return result.problem


@st.composite
def _workloads(draw: st.DrawFn) -> tuple[list[tuple[int, int, int, int]], int]:
    total = draw(st.integers(1, 8))
    exact = draw(st.booleans())
    jobs = []
    for _ in range(draw(st.integers(1, 40))):
        runtime = draw(st.integers(1, 15))
        requested = runtime if exact else runtime + draw(st.integers(0, 20))
        jobs.append((draw(st.integers(0, 40)), runtime, requested,
                     draw(st.integers(1, total))))
    return jobs, total


@settings(max_examples=200, deadline=None)
@given(_workloads(), st.sampled_from(["FCFS-CONSERVATIVE", "SJF-CONSERVATIVE"]))
def test_the_compiled_compression_is_the_plain_compression(
        workload: tuple[list[tuple[int, int, int, int]], int], name: str) -> None:
    jobs, total = workload
    problem = _problem(jobs, total)
    fast, plain = _run(problem, name, None), _run(problem, name, plain_compress)
    assert fast.unfinished == plain.unfinished == 0
    assert fast.start_s == plain.start_s
    assert fast.reserved_s == plain.reserved_s


def test_an_early_finish_with_nobody_waiting_frees_the_cores_at_once() -> None:
    """The issue's case: job 1 runs 2 s of a requested 10 s on all 4 cores; job 2 (1 s, 4
    cores) arrives at 5 on the idle machine and starts at once."""
    problem = _problem([(0, 2, 10, 4), (5, 1, 1, 4)], 4)
    assert _run(problem, "FCFS-CONSERVATIVE", None).start_s == [0, 5]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_loaded_synthetic_trace_compresses_as_the_plain_passes(
        tmp_path: Path, seed: int) -> None:
    """300 jobs on 64 processors at offered load 1.2, overestimated requested times: long
    queues whose compressions move many tasks (counted, so the kernel's bounds are really
    put to the test)."""
    trace = tmp_path / "synthetic.swf"
    trace.write_text(generate(300, procs=64, load=1.2, seed=seed))
    loaded = load_problem(trace, None)
    assert loaded.problem is not None
    moves = 0
    compiled = PooledProfile.compress

    def counted(profile: PooledProfile, state: ReservingState,
                reservations: dict[int, Reservation], waiting: list[int],
                freed_until: float, moved: Callable[[int, Reservation], None]) -> None:
        def told(task: int, found: Reservation) -> None:
            nonlocal moves
            moves += 1
            moved(task, found)

        compiled(profile, state, reservations, waiting, freed_until, told)

    fast = _run(loaded.problem, "FCFS-CONSERVATIVE", counted)
    plain = _run(loaded.problem, "FCFS-CONSERVATIVE", plain_compress)
    assert moves > 300
    assert fast.unfinished == 0
    assert fast.start_s == plain.start_s
    assert fast.reserved_s == plain.reserved_s


def test_the_kernel_grows_its_arrays_when_moves_need_more_slices(tmp_path: Path) -> None:
    """The profile handed to the kernel with room for only one move more: the moves of a
    loaded trace make the kernel copy its arrays into larger ones mid-compression (counted),
    and the schedule stays the plain one."""
    trace = tmp_path / "synthetic.swf"
    trace.write_text(generate(300, procs=64, load=1.2, seed=1))
    loaded = load_problem(trace, None)
    assert loaded.problem is not None
    grown = 0

    def tight(room: _KernelRoom, slices: int) -> tuple[Any, Any, Any]:
        room._times, room._free, room._anchored = (
            np.empty(slices + 4), np.empty(slices + 4, np.int64),
            np.empty(slices + 4, np.int64))
        return room._times, room._free, room._anchored

    kept = _KernelRoom.keep

    def counted(room: _KernelRoom, times: Any, free: Any, anchored: Any) -> None:
        nonlocal grown
        grown += times.shape[0] > room._times.shape[0]
        kept(room, times, free, anchored)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(_KernelRoom, "profile", tight)
        patched.setattr(_KernelRoom, "keep", counted)
        fast = _run(loaded.problem, "FCFS-CONSERVATIVE", None)
    plain = _run(loaded.problem, "FCFS-CONSERVATIVE", plain_compress)
    assert grown > 10
    assert fast.start_s == plain.start_s
    assert fast.reserved_s == plain.reserved_s


def test_the_kernel_compiles_where_numba_can_cache_nowhere(tmp_path: Path) -> None:
    """A read-only installation and home: Numba finds no folder for its cache and refuses
    ``cache=True`` at decoration; the kernel's functions are then compiled without it."""
    (tmp_path / "doubled.py").write_text("def doubled(value):\n    return 2 * value\n")
    (tmp_path / "__pycache__").write_text("")  # no folder can be made beside the module
    script = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import numba, doubled\n"
        "from dcx.scheduler.planners.pooled_kernel import _compiled\n"
        "try:\n"
        "    numba.njit(cache=True)(doubled.doubled)\n"
        "except RuntimeError:\n"
        "    print('no cache')\n"
        "print(_compiled(doubled.doubled)(21))\n")
    environment = {**os.environ, "HOME": "/dev/null", "XDG_CACHE_HOME": "/dev/null/cache"}
    environment.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=environment, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["no", "cache", "42"]
