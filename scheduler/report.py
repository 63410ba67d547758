"""Run outputs as text: per-task and per-job CSV, per-stage times CSV, summary JSON, and the
files of one run written into a folder."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dcx.converters.atomic import write_atomic
from dcx.scheduler.engine import Schedule
from dcx.scheduler.metrics import RunMetrics, Summary


def _csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _number(value: float) -> str:
    """Integral seconds without a trailing ``.0``; NaN (never happened) as an empty cell."""
    if math.isnan(value):
        return ""
    return str(int(value)) if value.is_integer() else repr(value)


def _flag(value: bool | None) -> str:
    """``true``/``false``; empty when the question does not apply (no deadline)."""
    return "" if value is None else str(value).lower()


def _count(value: int | None) -> str:
    return "" if value is None else str(value)


def tasks_csv(metrics: RunMetrics) -> str:
    return _csv(
        ("task_id", "job_id", "arrival_s", "start_s", "finish_s", "waiting_s", "execution_s",
         "turnaround_s", "machines", "attempts", "deadline_s", "deadline_missed"),
        (
            (row.task_id, row.job_id, _number(row.arrival_s), _number(row.start_s),
             _number(row.finish_s), _number(row.waiting_s), _number(row.execution_s),
             _number(row.turnaround_s), " ".join(row.machines), row.attempts,
             _number(row.deadline_s), _flag(row.deadline_missed))
            for row in metrics.tasks
        ),
    )


def job_machines(metrics: RunMetrics) -> dict[object, str]:
    """Per job id, the machines its tasks ran on (topology order, space-separated)."""
    problem, schedule = metrics.problem, metrics.schedule
    used: list[set[int]] = [set() for _ in problem.job_ids]
    for task, machines in enumerate(schedule.machines):
        used[problem.tasks.job[task]].update(machines)
    labels = problem.machines.labels
    return {job_id: " ".join(labels[m] for m in sorted(used[index]))
            for index, job_id in enumerate(problem.job_ids)}


JOB_COLUMNS = ("job_id", "tasks", "first_arrival_s", "first_start_s", "last_finish_s",
               "makespan_s", "waiting_s", "njsl", "critical_path_s", "deadline_missed",
               "machines")


def _job_rows(metrics: RunMetrics) -> Iterator[tuple[object, ...]]:
    machines = job_machines(metrics)
    for row in metrics.jobs:
        yield (row.job_id, row.tasks, _number(row.first_arrival_s), _number(row.first_start_s),
               _number(row.last_finish_s), _number(row.makespan_s), _number(row.waiting_s),
               _number(row.njsl), _number(row.critical_path_s), _count(row.deadline_missed),
               machines[row.job_id])


def jobs_csv(metrics: RunMetrics) -> str:
    """One row per finished job: submit (first arrival), start, end, wait, machines."""
    return _csv(JOB_COLUMNS, _job_rows(metrics))


def runs_jobs_csv(runs: list[RunMetrics]) -> str:
    """``jobs.csv`` of several runs in one table, each row led by its run's policy, time
    model and seed: what ``dcx schedule --jobs-csv`` writes."""
    return _csv(("policy", "time_model", "seed", *JOB_COLUMNS), (
        (metrics.summary.policy, metrics.summary.time_model, _count(metrics.summary.seed),
         *row)
        for metrics in runs for row in _job_rows(metrics)))


def stages_csv(schedule: Schedule) -> str:
    cpu_by_cycle = dict(schedule.cycle_cpu)
    return _csv(
        ("time_s", "stage", "wall_ns", "size", "iterations", "cycle_cpu_ns"),
        (
            (_number(record.time_s), record.stage, record.wall_ns, record.size,
             record.iterations, cpu_by_cycle.get(record.time_s, "") if record.stage == "T1"
             else "")
            for record in schedule.stages
        ),
    )


def json_number(value: float) -> float | None:
    """JSON has no NaN: a metric with nothing to average is ``null``."""
    return None if math.isnan(value) else value


def _json_value(value: Any) -> Any:
    if isinstance(value, float):
        return json_number(value)
    if isinstance(value, dict):
        return {key: _json_value(item) for key, item in value.items()}
    return value


def summary_json(summary: Summary) -> dict[str, Any]:
    fields = {key: _json_value(value) for key, value in asdict(summary).items()}
    return {**fields, "metrics": {key: json_number(value)
                                  for key, value in summary.headline().items()}}


def stage_totals(schedule: Schedule) -> dict[str, int]:
    """Wall ns per stage summed over the run's measured cycles."""
    totals: dict[str, int] = {}
    for record in schedule.stages:
        totals[record.stage] = totals.get(record.stage, 0) + record.wall_ns
    return totals


def run_folder_name(summary: Summary) -> str:
    name = f"{summary.policy}-{summary.time_model}"
    if summary.seed is not None:
        name += f"-seed{summary.seed}"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def write_run(folder: Path, schedule: Schedule, metrics: RunMetrics) -> Path:
    """``tasks.csv``, ``jobs.csv``, ``stages.csv`` and ``summary.json`` of one run."""
    target = folder / run_folder_name(metrics.summary)
    write_atomic(target / "tasks.csv", tasks_csv(metrics).encode())
    write_atomic(target / "jobs.csv", jobs_csv(metrics).encode())
    write_atomic(target / "stages.csv", stages_csv(schedule).encode())
    summary = {**summary_json(metrics.summary), "stage_wall_ns": stage_totals(schedule)}
    write_atomic(target / "summary.json", (json.dumps(summary, indent=2) + "\n").encode())
    return target
