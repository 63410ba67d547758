"""The scheduler's task table compiled from a workload held as columns is the one the
task-by-task loop compiles, and a columnar workload the table cannot take falls back to it."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.core.columns import JobRows, WorkloadColumns, columns_of
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
from dcx.formats import swf
from dcx.scheduler.problem import _table_of_columns, compile_machines, compile_problem

ENVIRONMENT = Environment((Datacenter(rooms=(Room(racks=(Rack(slots=tuple(
    Machine(id=f"m{index}", cpus=(ProcessingUnit(cores=4),)) for index in range(8))),)),)),))


def as_objects(workload: Workload) -> Workload:
    return replace(workload, jobs=tuple(workload.jobs))


def both(workload: Workload) -> None:
    columnar = compile_problem(workload, ENVIRONMENT)
    objects = compile_problem(as_objects(workload), ENVIRONMENT)
    assert columnar == objects


def test_an_swf_trace_compiles_from_its_columns_as_from_its_tasks():
    lines = [f"{n} {n * 7} -1 {n % 5 * 10} {1 + n % 8} -1 -1 {1 + n % 8} "
             f"{-1 if n % 3 else 600} -1 1 {n % 4} 1 -1 1 -1 {n - 2 if n % 4 == 0 else -1} -1"
             for n in range(1, 200)]
    fast = swf.read_fast(("\n".join(lines) + "\n").encode())
    assert fast is not None
    columns = columns_of(fast.document.workload)
    assert columns is not None
    machines, _ = compile_machines(ENVIRONMENT)
    assert _table_of_columns(columns, machines) is not None  # the column path, not the loop
    both(fast.document.workload)


task_values = st.tuples(
    st.one_of(st.none(), st.floats(-10, 1e5, allow_nan=False)),   # runtime
    st.one_of(st.none(), st.floats(-10, 1e5, allow_nan=False)),   # requested
    st.integers(0, 40),                                           # nodes
    st.sampled_from([0.5, 1.0, 2.0, 3.99, 4.0, 4.5]),             # cores
    st.sampled_from([None, 0.0, 512.0]),                          # memory
    st.floats(0, 1e6, allow_nan=False),                           # submit
    st.one_of(st.none(), st.floats(0, 1e6)),                      # deadline
    st.lists(st.integers(0, 30), max_size=2),                     # dependencies
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(task_values, min_size=1, max_size=30), st.integers(1, 4))
def test_generated_workloads_compile_alike(values, per_job):
    tasks = [Task(id=index + 1, submit_time_s=submit, runtime_s=runtime,
                  requested_time_s=requested, deadline_s=deadline,
                  request=ResourceRequest(nodes=nodes, cores=cores, memory_mb=memory),
                  dependencies=tuple(dict.fromkeys(d + 1 for d in needs)))
             for index, (runtime, requested, nodes, cores, memory, submit, deadline, needs)
             in enumerate(values)]
    jobs = tuple(Job(id=f"j{start}", tasks=tuple(tasks[start:start + per_job]))
                 for start in range(0, len(tasks), per_job))
    columns = WorkloadColumns.from_jobs(jobs)
    if columns is None:  # a deadline of inf or NaN: no columns for it
        return
    both(Workload(jobs=JobRows(columns)))
