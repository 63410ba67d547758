"""Parquet workload: the model's job and task columns in one Apache Parquet file, for traces
of millions of jobs (read and written as columns, no object per task).

One row per task, in workload order; the rows of a job are consecutive. The columns' Arrow
types and meanings are ``schemas/parquet.schema.json``, which every file's schema is checked
against.

Model mapping
-------------

==================== =================== ==========================================================
column               Arrow type          meaning (unit)
==================== =================== ==========================================================
``job_id``           int64 or string     the task's job (workflow, bag of tasks)
``job_name``         string, nullable    the job's name (the same on every row of the job)
``job_user``         string, nullable    the job's user (likewise)
``task_id``          int64 or string     the task's id, unique in the file
``submit_time_s``    double              submit time, seconds on the workload's time axis
``runtime_s``        double, nullable    real duration, seconds (null: unknown)
``requested_time_s`` double, nullable    requested duration (wall-time limit), seconds
``nodes``            int64               nodes asked for
``cores``            double              cores per node
``memory_mb``        double, nullable    memory per node, MB (2**20 bytes)
``gpus``             int64               GPUs per node
``dependencies``     list of task ids    tasks that must finish first (empty: none)
``deadline_s``       double, nullable    deadline, seconds on the workload's time axis
``user``, ``group``  string, nullable    the task's user and group
``status``           string, nullable    how the task ended as recorded: ``completed``,
                                         ``failed``, ``cancelled``, ``killed-at-walltime``
                                         (null: unknown)
``wait_time_s``      double, nullable    recorded wait from submit to start, seconds
``used_memory_mb``   double, nullable    recorded memory use, average per core, MB
``cpu_time_s``       double, nullable    recorded CPU time, average per core, seconds
``application``,     string, nullable    the executable, the queue and the partition
``queue``,                               recorded
``partition``
``think_time_s``     double, nullable    think time after the preceding job, seconds
``placement``        string, nullable    ``nodes`` (whole nodes, each with the amounts above) or
                                         ``cores`` (the same total cores and memory anywhere);
                                         optional column, null: ``nodes``
``os``, ``arch``     string, nullable    the operating system and architecture every node
                                         must have (optional columns; null: none asked)
``features``         list of strings     features every node must have (optional column;
                                         empty or null: none)
``extras.<key>``     int64, double or    a task extras key with numbers or text
                     string              (``extras.gwf:VOID``); null where the task has none
``extras_json.<key>`` string             a task extras key with other JSON values (objects,
                                         lists, mixed kinds) as JSON text
==================== =================== ==========================================================

The ``placement``, ``os``, ``arch`` and ``features`` columns are written only when some task
asks for one (a placement other than whole nodes);
a file without them asks nothing. The recorded columns (``status`` to ``think_time_s``) are
always written, null where no task has a value (so every row group of a streamed file has
the same columns); a file without them (written before dcx had them) records nothing.
Integer and text ids are not mixed within ``job_id`` or
``task_id``. The workload's name,
description, time origin (ISO 8601), attributes and extras are JSON in the file's key-value
metadata under ``dcx:workload``.

Other formats' extras keys (``swf:RequestedProcessors``, ``gwf:NProcs``) are kept as they
are, so a trace converted to Parquet converts back to its own format without losing them
(Parquet stores the model, it has no keys of its own).

What dcx writes: ``normal_form(document)``. Value restrictions, reported by the derived
losses: ids that mix integers and text, repeat, or do not fit int64 are renumbered 1..n in
workload order (dependencies follow; job ids likewise, a ``job`` loss); a dependency on a task
outside the workload is dropped; NaN times and amounts are unknown (a submit time 0, one core);
node and GPU counts that are not int64 integers take their defaults; task extras values, workload
attributes and workload extras that do not read back from JSON as themselves (NaN, tuples) are
dropped. Fields Parquet does not hold (named resources, start modes, images,
preemption, job extras, jobs without tasks, annotations) are the derived losses of field paths.

Checks: the file is Parquet (``parquet.unreadable``), its schema is the one above (each
mismatch a ``schema.*`` diagnostic at ``/columns/<name>``), no null or NaN where a value is
required (``/rows/<row>/<column>``), a job's rows are consecutive and agree on its name and user,
task ids are unique, dependencies name tasks in the file and form no cycle, and the metadata is
the JSON object described above.

Files larger than memory are checked a row group at a time (``read_parts``, ``stream.py``),
with the same diagnostics: ``dcx validate`` and ``dcx info`` do so from 16 MB (a pipe of that
size is first copied to a temporary file, as row groups are read by seeking), and spread the
row groups over a Dask cluster with ``--workers N`` or ``--scheduler-address ADDRESS``; the
checks across row groups (a job's rows, repeated task ids, dependencies on other row groups,
cycles) run once on the merged findings. ``dcx convert`` of such a file (not a pipe) to
Parquet, SWF, GWF, Batsim, osp-workload or an OpenDC workload folder checks it so and
converts it a row group at a time (``stream.read_part``).
"""

from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, PartReader, deferred, forwarded
from dcx.parsing.trace_codes import dependency_codes

__all__ = [
    "CODES", "EXTRAS_PREFIX", "FIELD_NAMES", "FORMAT", "HOLDS", "JSON_EXTRAS_PREFIX", "MAGIC",
    "METADATA_FIELDS", "METADATA_KEY", "PARTS", "SCHEMA", "arrow_type_name", "normal_form",
    "normal_form_losses", "read", "sniff", "write",
]

# The reader, the writer and what they import (the model, dcx.core.columns; pyarrow inside
# them) load on first use: the pre-commit hook imports every format's declaration to sniff.
_LAZY = {
    name: "codec" for name in (
        "EXTRAS_PREFIX", "JSON_EXTRAS_PREFIX", "METADATA_FIELDS", "METADATA_KEY",
        "arrow_type_name",
    )
}


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


SCHEMA = "parquet.schema.json"
MAGIC = b"PAR1"

HOLDS = frozenset({
    "workload.name", "workload.description", "workload.time_origin", "workload.attributes",
    "workload.extras", "job", "job.name", "job.user", "task.id", "task.submit_time_s",
    "task.runtime_s", "task.requested_time_s", "task.request.nodes", "task.request.cores",
    "task.request.memory_mb", "task.request.gpus", "task.dependencies",
    "task.dependencies.multiple", "task.deadline_s", "task.user", "task.group", "task.extras",
    "task.request.os", "task.request.arch", "task.request.features", "task.request.placement",
    "task.status", "task.wait_time_s", "task.used_memory_mb", "task.cpu_time_s",
    "task.application", "task.queue", "task.partition", "task.think_time_s",
})

FIELD_NAMES: dict[str, str] = {
    "workload.name": "dcx:workload metadata name",
    "workload.description": "dcx:workload metadata description",
    "workload.time_origin": "dcx:workload metadata time_origin",
    "workload.attributes": "dcx:workload metadata attributes",
    "workload.extras": "dcx:workload metadata extras",
    "job": "job_id",
    "job.name": "job_name",
    "job.user": "job_user",
    "task.id": "task_id",
    "task.submit_time_s": "submit_time_s",
    "task.runtime_s": "runtime_s",
    "task.requested_time_s": "requested_time_s",
    "task.request.nodes": "nodes",
    "task.request.cores": "cores",
    "task.request.memory_mb": "memory_mb",
    "task.request.gpus": "gpus",
    "task.dependencies": "dependencies",
    "task.dependencies.multiple": "dependencies (several)",
    "task.deadline_s": "deadline_s",
    "task.user": "user",
    "task.group": "group",
    "task.status": "status",
    "task.wait_time_s": "wait_time_s",
    "task.used_memory_mb": "used_memory_mb",
    "task.cpu_time_s": "cpu_time_s",
    "task.application": "application",
    "task.queue": "queue",
    "task.partition": "partition",
    "task.think_time_s": "think_time_s",
    "task.request.placement": "placement",
    "task.request.os": "os",
    "task.request.arch": "arch",
    "task.request.features": "features",
    "task.extras": "extras.<key> and extras_json.<key> columns",
}
"""The Parquet file's column (or metadata) names of the fields
(``FormatDeclaration.field_names``)."""


def sniff(data: bytes) -> bool:
    return data.startswith(MAGIC)


read = deferred("dcx.formats.parquet.codec", "read")


write = deferred("dcx.formats.parquet.codec", "write")


normal_form = deferred("dcx.formats.parquet.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.parquet.codec", "normal_form_losses")


PARTS = PartReader(
    open=deferred("dcx.formats.parquet.stream", "open_parts"),
    check=deferred("dcx.formats.parquet.stream", "check_part"),
    finish=deferred("dcx.formats.parquet.stream", "finish"),
    reread=deferred("dcx.formats.parquet.stream", "reread_dependencies"),
)


CODES = (
    Code("parquet.unreadable", "error", "The file is not a Parquet file dcx can read."),
    Code("parquet.dependency-type", "error",
         "Dependency ids are not of the task ids' type (int64 or string)."),
    Code("parquet.metadata", "error",
         "The dcx:workload metadata is not the JSON object the format describes."),
    Code("parquet.null", "error", "A column that needs a value on every row has a null."),
    Code("parquet.not-a-number", "error", "A time, amount or extras value is NaN."),
    Code("parquet.extras-json", "error", "An extras_json column holds text that is not JSON."),
    Code("parquet.placement", "error",
         "A placement value is neither nodes nor cores."),
    Code("parquet.status", "error",
         "A status value is none of completed, failed, cancelled, killed-at-walltime."),
    Code("parquet.split-job", "error", "The rows of one job are not consecutive."),
    Code("parquet.job-fields", "error",
         "Rows of one job disagree on the job's name or user."),
    Code("parquet.unwritable", "error",
         "Internal error: the normal form has a value no Parquet column holds."),
    *dependency_codes("parquet"),
)


FORMAT = FormatDeclaration(
    name="parquet",
    title="Parquet workload columns",
    family="trace",
    kind="workload",
    extensions=(".parquet",),
    content=frozenset({"binary"}),
    schema=SCHEMA,
    description="The model's job and task columns in one Apache Parquet file.",
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    keeps_prefixed_extras=True,
    codes=CODES,
    read_parts=PARTS,
    stream_source=deferred("dcx.formats.parquet.stream_source", "ParquetSource"),
    stream_target=deferred("dcx.formats.parquet.stream_target", "ParquetTarget"),
    field_names=FIELD_NAMES,
)
