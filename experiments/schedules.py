"""Each cell's schedule, with the ``schedules`` option (``--schedules``): one Parquet file
per cell, ``DIR/schedules/<cell_key>.parquet``, one row per task in the workload's order:
``cell_key``, ``job_id``, ``task_id``, ``submit_s`` (the arrival in the run, after the
cell's workload transforms), ``start_s`` (its last start; null: it never started),
``finish_s`` (null: it never finished) and ``machines`` (the labels of the machines it ran
on). A job of one task (SWF, Batsim, …) is one row; a workflow's job has a row per task.

The table is made where the cell runs (a worker sends it back as one Arrow table, not as
Python rows) and written by the process that keeps the results, before the cell's row: a
stored row whose sweep records schedules has its file. The Gantt chart and the task
response time (TRT) figure of each run are drawn from these files
(``dcx experiment --report`` redraws them)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from dcx.scheduler.engine import Schedule
    from dcx.scheduler.problem import Problem

SCHEDULES = "schedules"
"""The folder of the per-cell files, under the experiment's output folder."""
COLUMNS = ("cell_key", "job_id", "task_id", "submit_s", "start_s", "finish_s", "machines")


def schedule_table(key: str, problem: Problem, schedule: Schedule) -> pa.Table:
    """One run's schedule as a table (``COLUMNS``), built column by column."""
    import pyarrow as pa

    tasks = problem.tasks
    labels = problem.machines.labels
    count = len(tasks.ids)

    def times(values: list[float]) -> pa.Array:  # NaN (never happened) as null
        return pa.array([None if math.isnan(value) else value for value in values],
                        pa.float64())

    return pa.table({
        "cell_key": pa.array([key] * count, pa.string()),
        "job_id": pa.array([str(problem.job_ids[job]) for job in tasks.job], pa.string()),
        "task_id": pa.array([str(identity) for identity in tasks.ids], pa.string()),
        "submit_s": times(schedule.arrival_s),
        "start_s": times(schedule.start_s),
        "finish_s": times(schedule.finish_s),
        "machines": pa.array([[labels[machine] for machine in machines]
                              for machines in schedule.machines], pa.list_(pa.string())),
    })


def schedule_file(folder: Path, key: str) -> Path:
    return folder / SCHEDULES / f"{key}.parquet"


def read_schedules(folder: Path, keys: list[str]) -> dict[str, pa.Table]:
    """The stored schedules of the cells ``keys`` that have one."""
    import pyarrow.parquet as pq

    found: dict[str, pa.Table] = {}
    for key in keys:
        path = schedule_file(folder, key)
        if path.is_file():
            found[key] = pq.read_table(path)
    return found


def response_times(table: pa.Table) -> list[float]:
    """Each finished task's response time (finish − submit)."""
    return [finish - submit for submit, finish in zip(
        table.column("submit_s").to_pylist(), table.column("finish_s").to_pylist(),
        strict=True) if finish is not None]


def gantt_bars(table: pa.Table) -> tuple[list[str], list[tuple[int, float, float, int]]]:
    """``(machine labels, bars)`` for ``scheduler.plots.gantt_svg``: a bar per finished task
    on each of its machines, machines in natural order of their labels (``node2`` before
    ``node10``), a colour index per job in order of first appearance."""
    import re

    def natural(label: str) -> list[Any]:
        return [(0, int(part), "") if part.isdigit() else (1, 0, part)
                for part in re.split(r"(\d+)", label)]

    rows = table.to_pydict()
    machines = sorted({label for used in rows["machines"] for label in used}, key=natural)
    index = {label: position for position, label in enumerate(machines)}
    jobs: dict[str, int] = {}
    bars: list[tuple[int, float, float, int]] = []
    for job, start, finish, used in zip(rows["job_id"], rows["start_s"], rows["finish_s"],
                                        rows["machines"], strict=True):
        colour = jobs.setdefault(job, len(jobs))
        if start is None or finish is None:
            continue
        bars.extend((index[label], start, finish, colour) for label in used)
    return machines, bars
