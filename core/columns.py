"""Workloads held as columns: one typed array per task field instead of one frozen dataclass
per task, for traces of millions of jobs.

A columnar workload is an ordinary :class:`~dcx.core.model.Workload` whose ``jobs`` is a
:class:`JobRows`: a read-only sequence of :class:`~dcx.core.model.Job` that materialises its
rows only when code asks for them (iterating, indexing), so every consumer of the model keeps
working. Hot paths (readers, writers, the loss derivation, ``dcx info``, the scheduler's task
table) ask ``columns_of(workload)`` and use the arrays instead.

Columns (one row per task, in workload order; jobs are consecutive runs of tasks):

* ids: ``int64`` when every id is an integer, otherwise an ``object`` array of the ids;
* times (``submit_time_s``, ``runtime_s``, ``requested_time_s``, ``deadline_s``): ``float64``
  seconds; ``NaN`` stands for ``None`` (a columnar workload holds no ``NaN`` value: one that
  has such a task stays a tuple of objects);
* ``nodes``, ``gpus``: ``int64``; ``cores``, ``memory_mb``: ``float64`` (``NaN``: ``None``);
* ``user``, ``group``: :class:`Strings`, codes into a table of distinct names;
* dependencies: ``offsets`` (``int64``, one more than there are tasks) into an id array;
* extras: numeric ``Task.extras`` keys, one :class:`ExtraColumn` each, in key order;
* what a request asks of its machines: ``os``, ``arch`` (:class:`Strings`) and features
  (``feature_offsets`` into ``feature_names``), each ``None`` when no task asks for it;
* ``placement``: ``int8`` codes into ``PLACEMENTS`` (whole nodes, cores anywhere), ``None``
  when every task asks for whole nodes (the model's default);
* what a trace recorded of each run (``dcx.core.model.TRACE_FIELDS``): ``status``, ``int8``
  codes into ``STATUSES``; ``wait_time_s``, ``used_memory_mb``, ``cpu_time_s`` and
  ``think_time_s``, ``float64`` (``NaN``: ``None``); ``application``, ``queue`` and
  ``partition``, :class:`Strings`; each ``None`` when no task has a value (or every status is
  unknown).

A task field the columns do not hold (named resources, start modes, images, preemption,
extras that do not read back from JSON) keeps the workload as objects
(``WorkloadColumns.from_jobs`` says ``None``).

numpy is imported by the functions that need it, never at module level: the pre-commit hook
imports every format module, and through them this one.
"""

from __future__ import annotations

import json as _json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, overload

from dcx.core.model import Id, Job, Placement, ResourceRequest, Task, TaskStatus, Workload, build

Array = Any
"""A numpy array (numpy is imported lazily, so it cannot be named at module level)."""

FLOAT_EXACT = 2 ** 53
"""Integers up to this size survive a float64 column unchanged."""

PLACEMENTS: tuple[Placement, ...] = (Placement.NODES, Placement.CORES)
"""``WorkloadColumns.placement`` codes: the placement at each code's index."""

STATUSES: tuple[TaskStatus, ...] = tuple(TaskStatus)
"""``WorkloadColumns.status`` codes: the status at each code's index (0: unknown)."""

RECORDED_FLOATS: tuple[str, ...] = ("wait_time_s", "used_memory_mb", "cpu_time_s",
                                    "think_time_s")
"""The recorded ``Task`` fields held as ``float64`` columns (``None``: no task has one)."""

RECORDED_TEXTS: tuple[str, ...] = ("application", "queue", "partition")
"""The recorded ``Task`` fields held as ``Strings`` (``None``: no task has one)."""


@dataclass(frozen=True, eq=False)
class Strings:
    """Text values as codes into ``values``; code ``-1`` is ``None``."""

    codes: Array
    values: tuple[str, ...]

    def at(self, row: int) -> str | None:
        code = int(self.codes[row])
        return None if code < 0 else self.values[code]

    def count_known(self) -> int:
        return int((self.codes >= 0).sum())

    @staticmethod
    def of_integers(values: Array, unknown: int = -1) -> Strings | None:
        """The decimal texts of integer ``values`` (``unknown``: ``None``), ``None`` when
        every value is unknown. A table of the distinct values, found by marking them when
        they span a small range (a trace's queue and executable numbers), else by sorting."""
        import numpy as np

        known = values != unknown
        if not known.any():
            return None
        present = values[known]
        low, high = int(present.min()), int(present.max())
        codes = np.full(len(values), -1, dtype=np.int32)
        if high - low < 1 << 22:
            seen = np.zeros(high - low + 1, dtype=bool)
            seen[present - low] = True
            distinct = np.flatnonzero(seen) + low
            code_of = np.cumsum(seen, dtype=np.int32) - 1
            codes[known] = code_of[present - low]
        else:
            distinct, inverse = np.unique(present, return_inverse=True)
            codes[known] = inverse
        return Strings(codes, tuple(str(value) for value in distinct.tolist()))

    @staticmethod
    def encode(texts: Sequence[str | None]) -> Strings:
        import numpy as np

        table: dict[str, int] = {}
        codes = np.fromiter(
            (-1 if text is None else table.setdefault(text, len(table)) for text in texts),
            dtype=np.int32, count=len(texts))
        return Strings(codes, tuple(table))


@dataclass(frozen=True, eq=False)
class ExtraColumn:
    """One ``Task.extras`` key: ``values`` where ``present``; ``integral`` marks the rows
    whose value is an ``int`` (``None``: every value is, or none, as the dtype says). A key
    whose values are text has them in ``texts`` (``values`` then unused)."""

    values: Array
    present: Array
    integral: Array | None = None
    texts: Strings | None = None
    json: bool = False
    """``texts`` are JSON texts of the values (a key holding objects, lists or a mix of
    kinds)."""

    @staticmethod
    def of_texts(texts: Strings, json: bool = False) -> ExtraColumn:
        import numpy as np

        return ExtraColumn(np.zeros(len(texts.codes)), texts.codes >= 0, None, texts, json)

    def at(self, row: int) -> Any:
        if self.texts is not None:
            text = self.texts.values[int(self.texts.codes[row])]
            return _json.loads(text) if self.json else text
        value = self.values[row]
        if self.values.dtype.kind == "i" or (self.integral is not None and self.integral[row]):
            return int(value)
        return float(value)


@dataclass(frozen=True, eq=False)
class WorkloadColumns:
    """The jobs and tasks of a workload as arrays (see the module docstring)."""

    ids: Array
    submit_time_s: Array
    runtime_s: Array
    requested_time_s: Array
    nodes: Array
    cores: Array
    memory_mb: Array
    gpus: Array
    deadline_s: Array
    user: Strings
    group: Strings
    dependency_offsets: Array
    dependency_ids: Array
    extras: dict[str, ExtraColumn]
    job_ids: Array
    job_offsets: Array
    """Task rows of job ``j``: ``job_offsets[j]`` up to ``job_offsets[j + 1]``."""
    job_names: Strings
    job_users: Strings
    os: Strings | None = None
    arch: Strings | None = None
    """``ResourceRequest.os`` and ``arch`` per task; ``None`` when no task asks for one."""
    feature_offsets: Array | None = None
    feature_names: Strings | None = None
    """``ResourceRequest.features``: row ``t``'s are ``feature_names`` entries
    ``feature_offsets[t]`` up to ``feature_offsets[t + 1]``; ``None`` when no task asks
    for any."""
    placement: Array | None = None
    """``ResourceRequest.placement`` per task, codes into ``PLACEMENTS``; ``None`` when every
    task asks for whole nodes."""
    status: Array | None = None
    """``Task.status`` per task, codes into ``STATUSES``; ``None`` when every one is unknown."""
    wait_time_s: Array | None = None
    used_memory_mb: Array | None = None
    cpu_time_s: Array | None = None
    think_time_s: Array | None = None
    """The recorded times and amounts (``RECORDED_FLOATS``), ``NaN`` for ``None``; each
    ``None`` when no task has one."""
    application: Strings | None = None
    queue: Strings | None = None
    partition: Strings | None = None
    """The recorded texts (``RECORDED_TEXTS``); each ``None`` when no task has one."""

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def job_count(self) -> int:
        return len(self.job_ids)

    @property
    def dependency_count(self) -> int:
        return len(self.dependency_ids)

    # ------------------------------------------------------------------ rows

    def task(self, row: int) -> Task:
        """The task of row ``row``, equal to what a reader building objects makes."""
        start, end = int(self.dependency_offsets[row]), int(self.dependency_offsets[row + 1])
        memory = float(self.memory_mb[row])
        request = build(ResourceRequest, {
            "nodes": int(self.nodes[row]), "cores": float(self.cores[row]),
            "memory_mb": None if math.isnan(memory) else memory, "gpus": int(self.gpus[row]),
            "resources": (), "os": None if self.os is None else self.os.at(row),
            "arch": None if self.arch is None else self.arch.at(row),
            "features": self.features_of(row),
            "placement": Placement.NODES if self.placement is None
            else PLACEMENTS[self.placement[row]]})
        extras = {key: column.at(row) for key, column in self.extras.items()
                  if column.present[row]}
        recorded: dict[str, Any] = {
            name: _optional(values[row]) for name in RECORDED_FLOATS
            if (values := getattr(self, name)) is not None}
        recorded.update((name, texts.at(row)) for name in RECORDED_TEXTS
                        if (texts := getattr(self, name)) is not None)
        if self.status is not None:
            recorded["status"] = STATUSES[self.status[row]]
        return build(Task, {
            **recorded,
            "id": _scalar(self.ids[row]),
            "submit_time_s": float(self.submit_time_s[row]),
            "runtime_s": _optional(self.runtime_s[row]),
            "requested_time_s": _optional(self.requested_time_s[row]),
            "request": request,
            "dependencies": tuple(_scalar(value) for value in self.dependency_ids[start:end]),
            "deadline_s": _optional(self.deadline_s[row]),
            "user": self.user.at(row), "group": self.group.at(row),
            "extras": extras})

    def features_of(self, row: int) -> tuple[str, ...]:
        offsets, names = self.feature_offsets, self.feature_names
        if offsets is None or names is None:
            return ()
        return tuple(names.values[code] for code in
                     names.codes[int(offsets[row]):int(offsets[row + 1])].tolist())

    def job(self, index: int) -> Job:
        start, end = int(self.job_offsets[index]), int(self.job_offsets[index + 1])
        return build(Job, {"id": _scalar(self.job_ids[index]),
                           "tasks": tuple(self.task(row) for row in range(start, end)),
                           "name": self.job_names.at(index), "user": self.job_users.at(index),
                           "extras": {}})

    def jobs(self) -> tuple[Job, ...]:
        return tuple(self.job(index) for index in range(self.job_count))

    # ------------------------------------------------------------------ building

    @staticmethod
    def from_jobs(jobs: Sequence[Job]) -> WorkloadColumns | None:
        """The columns of ``jobs``, or ``None`` when a value has no column (see the module
        docstring): such a workload stays as objects."""
        import numpy as np

        existing = columns_of_jobs(jobs)
        if existing is not None:
            return existing
        tasks = [task for job in jobs for task in job.tasks]
        if any(job.extras for job in jobs) or not all(map(_columnar_task, tasks)):
            return None
        keys: dict[str, None] = {}
        for task in tasks:
            keys.update(dict.fromkeys(task.extras))
        extras: dict[str, ExtraColumn] = {}
        for key in keys:
            present = np.fromiter((key in task.extras for task in tasks), bool, len(tasks))
            given = [task.extras[key] for task in tasks if key in task.extras]
            if all(type(value) is str for value in given):
                extras[key] = ExtraColumn.of_texts(Strings.encode(
                    [task.extras.get(key) for task in tasks]))
                continue
            if not all(type(value) in (int, float) for value in given):
                # objects, lists or a mix of kinds: JSON texts, when they read back
                if not all(map(reads_back_from_json, given)):
                    return None
                extras[key] = ExtraColumn.of_texts(Strings.encode(
                    [_json.dumps(task.extras[key], ensure_ascii=False)
                     if key in task.extras else None for task in tasks]), json=True)
                continue
            values = [task.extras.get(key, 0) for task in tasks]
            if all(type(value) is int for value in values):
                if any(abs(value) >= 2 ** 63 for value in values):
                    return None
                extras[key] = ExtraColumn(np.array(values, dtype=np.int64), present)
            else:
                if any(type(value) is int and abs(value) > FLOAT_EXACT for value in values):
                    return None
                integral = np.fromiter((type(value) is int for value in values), bool,
                                       len(values))
                extras[key] = ExtraColumn(np.array(values, dtype=np.float64), present,
                                          integral)
        dependencies = [d for task in tasks for d in task.dependencies]
        task_ids = _id_array([task.id for task in tasks])
        dependency_ids = _id_array(dependencies)
        job_ids = _id_array([job.id for job in jobs])
        if task_ids is None or dependency_ids is None or job_ids is None:
            return None
        if any(type(task.request.nodes) is not int or abs(task.request.nodes) >= 2 ** 63
               or type(task.request.gpus) is not int or abs(task.request.gpus) >= 2 ** 63
               for task in tasks):
            return None
        count = len(tasks)
        requests = [task.request for task in tasks]
        asked_features = [name for request in requests for name in request.features]
        return WorkloadColumns(
            ids=task_ids,
            submit_time_s=_floats([task.submit_time_s for task in tasks]),
            runtime_s=_floats([task.runtime_s for task in tasks]),
            requested_time_s=_floats([task.requested_time_s for task in tasks]),
            nodes=np.fromiter((task.request.nodes for task in tasks), np.int64, count),
            cores=_floats([task.request.cores for task in tasks]),
            memory_mb=_floats([task.request.memory_mb for task in tasks]),
            gpus=np.fromiter((task.request.gpus for task in tasks), np.int64, count),
            deadline_s=_floats([task.deadline_s for task in tasks]),
            user=Strings.encode([task.user for task in tasks]),
            group=Strings.encode([task.group for task in tasks]),
            dependency_offsets=_offsets([len(task.dependencies) for task in tasks]),
            dependency_ids=dependency_ids,
            extras=extras,
            job_ids=job_ids,
            job_offsets=_offsets([len(job.tasks) for job in jobs]),
            job_names=Strings.encode([job.name for job in jobs]),
            job_users=Strings.encode([job.user for job in jobs]),
            os=Strings.encode([r.os for r in requests]) if any(r.os is not None
                                                               for r in requests) else None,
            arch=Strings.encode([r.arch for r in requests]) if any(
                r.arch is not None for r in requests) else None,
            feature_offsets=_offsets([len(r.features) for r in requests])
            if asked_features else None,
            feature_names=Strings.encode(asked_features) if asked_features else None,
            placement=placement_codes([r.placement for r in requests]),
            **recorded_columns(tasks))

    def with_placement(self, placement: Placement) -> WorkloadColumns:
        """The same columns with every task asking for ``placement``."""
        from dataclasses import replace

        import numpy as np

        if not len(self):
            return self  # (no task to ask anything)
        if placement is Placement.NODES:
            return self if self.placement is None else replace(self, placement=None)
        if self.placement is not None and bool(
                (self.placement == PLACEMENTS.index(placement)).all()):
            return self
        return replace(self, placement=np.full(len(self), PLACEMENTS.index(placement),
                                               dtype=np.int8))

    def rows_kept(self, keep: Array) -> WorkloadColumns:
        """The columns of the task rows ``keep`` (a boolean array) marks; a job whose every
        task is left out goes with them, a job that had none stays. The text tables are
        kept whole (codes of rows left out may have been their only use)."""
        import numpy as np

        if bool(keep.all()):
            return self
        before = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(keep, out=before[1:])
        per_job = before[self.job_offsets[1:]] - before[self.job_offsets[:-1]]
        jobs = (per_job > 0) | (np.diff(self.job_offsets) == 0)
        job_offsets = np.zeros(int(jobs.sum()) + 1, dtype=np.int64)
        np.cumsum(per_job[jobs], out=job_offsets[1:])

        def strings(texts: Strings, rows: Array) -> Strings:
            return Strings(texts.codes[rows], texts.values)

        def nested(offsets: Array) -> tuple[Array, Array]:
            """The kept rows' offsets into a nested list, and which of its items they keep."""
            sizes = np.diff(offsets)
            items = np.repeat(keep, sizes)
            kept_offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
            np.cumsum(sizes[keep], out=kept_offsets[1:])
            return kept_offsets, items

        dependency_offsets, dependencies = nested(self.dependency_offsets)
        extras = {key: ExtraColumn(
            column.values[keep], column.present[keep],
            None if column.integral is None else column.integral[keep],
            None if column.texts is None else strings(column.texts, keep), column.json)
            for key, column in self.extras.items()}
        feature_offsets, feature_names = self.feature_offsets, self.feature_names
        if feature_offsets is not None and feature_names is not None:
            feature_offsets, features = nested(feature_offsets)
            feature_names = strings(feature_names, features)
        return WorkloadColumns(
            ids=self.ids[keep], submit_time_s=self.submit_time_s[keep],
            runtime_s=self.runtime_s[keep], requested_time_s=self.requested_time_s[keep],
            nodes=self.nodes[keep], cores=self.cores[keep], memory_mb=self.memory_mb[keep],
            gpus=self.gpus[keep], deadline_s=self.deadline_s[keep],
            user=strings(self.user, keep), group=strings(self.group, keep),
            dependency_offsets=dependency_offsets,
            dependency_ids=self.dependency_ids[dependencies], extras=extras,
            job_ids=self.job_ids[jobs], job_offsets=job_offsets,
            job_names=strings(self.job_names, jobs), job_users=strings(self.job_users, jobs),
            os=None if self.os is None else strings(self.os, keep),
            arch=None if self.arch is None else strings(self.arch, keep),
            feature_offsets=feature_offsets, feature_names=feature_names,
            placement=None if self.placement is None else self.placement[keep],
            status=None if self.status is None else self.status[keep],
            **{name: None if (values := getattr(self, name)) is None else values[keep]
               for name in RECORDED_FLOATS},
            **{name: None if (texts := getattr(self, name)) is None else strings(texts, keep)
               for name in RECORDED_TEXTS})

    def same_as(self, other: WorkloadColumns) -> bool | None:
        """Whether both hold the same jobs, compared column by column; ``None`` when their
        layouts differ (an id column of another dtype, other extras keys) and only the rows
        can tell."""
        import numpy as np

        if (self.ids.dtype != other.ids.dtype or self.job_ids.dtype != other.job_ids.dtype
                or list(self.extras) != list(other.extras)
                or self.ids.dtype.kind == "O" or self.job_ids.dtype.kind == "O"):
            return None
        if len(self) != len(other) or self.job_count != other.job_count:
            return False
        for left, right in ((self.ids, other.ids), (self.nodes, other.nodes),
                            (self.gpus, other.gpus), (self.job_ids, other.job_ids),
                            (self.job_offsets, other.job_offsets),
                            (self.dependency_offsets, other.dependency_offsets)):
            if not np.array_equal(left, right):
                return False
        if self.dependency_ids.dtype != other.dependency_ids.dtype \
                or self.dependency_ids.dtype.kind == "O":
            return None
        if not np.array_equal(self.dependency_ids, other.dependency_ids):
            return False
        for left, right in ((self.submit_time_s, other.submit_time_s),
                            (self.runtime_s, other.runtime_s),
                            (self.requested_time_s, other.requested_time_s),
                            (self.cores, other.cores), (self.memory_mb, other.memory_mb),
                            (self.deadline_s, other.deadline_s)):
            if not np.array_equal(left, right, equal_nan=True):
                return False
        for mine, theirs in ((self.user, other.user), (self.group, other.group),
                             (self.job_names, other.job_names),
                             (self.job_users, other.job_users)):
            if not _same_strings(mine, theirs):
                return False
        if not self._same_requirements(other) or not np.array_equal(
                placements_of(self), placements_of(other)) or not self._same_recorded(other):
            return False
        for key, column in self.extras.items():
            counterpart = other.extras[key]
            if not np.array_equal(column.present, counterpart.present):
                return False
            if column.texts is not None or counterpart.texts is not None:
                if column.texts is None or counterpart.texts is None or \
                        column.json != counterpart.json or \
                        not _same_strings(column.texts, counterpart.texts):
                    return None if column.json or counterpart.json else False
                continue
            if not np.array_equal(column.values[column.present],
                                  counterpart.values[counterpart.present]):
                return False
        return True


    def _same_recorded(self, other: WorkloadColumns) -> bool:
        """Whether both recorded the same of every task's run (``TRACE_FIELDS``)."""
        import numpy as np

        count = len(self)
        if not np.array_equal(statuses_of(self), statuses_of(other)):
            return False
        for name in RECORDED_FLOATS:
            if not np.array_equal(recorded_floats(self, name), recorded_floats(other, name),
                                  equal_nan=True):
                return False
        for name in RECORDED_TEXTS:
            mine, theirs = getattr(self, name), getattr(other, name)
            if (mine is not None or theirs is not None) and not _same_strings(
                    mine or _unknown(count), theirs or _unknown(count)):
                return False
        return True

    def _same_requirements(self, other: WorkloadColumns) -> bool:
        """Whether both ask the same os, arch and features of every task's machines."""
        import numpy as np

        count = len(self)
        for mine, theirs in ((self.os, other.os), (self.arch, other.arch)):
            if (mine is not None or theirs is not None) and not _same_strings(
                    mine or _unknown(count), theirs or _unknown(count)):
                return False
        none = np.zeros(count + 1, dtype=np.int64)
        if not np.array_equal(self.feature_offsets if self.feature_offsets is not None
                              else none, other.feature_offsets
                              if other.feature_offsets is not None else none):
            return False
        return _same_strings(self.feature_names or _unknown(0),
                             other.feature_names or _unknown(0))


def placement_codes(placements: Sequence[Placement]) -> Array | None:
    """``WorkloadColumns.placement`` of these placements (``None`` when all are whole
    nodes)."""
    import numpy as np

    if all(placement is Placement.NODES for placement in placements):
        return None
    return np.fromiter((PLACEMENTS.index(placement) for placement in placements), np.int8,
                       len(placements))


def recorded_columns(tasks: Sequence[Task]) -> dict[str, Any]:
    """The recorded columns (``TRACE_FIELDS``) of ``tasks``: only those some task has a
    value of, as ``WorkloadColumns`` keywords."""
    found: dict[str, Any] = {}
    statuses = [task.status for task in tasks]
    if any(status is not TaskStatus.UNKNOWN for status in statuses):
        import numpy as np

        found["status"] = np.fromiter((STATUSES.index(status) for status in statuses),
                                      np.int8, len(statuses))
    for name in RECORDED_FLOATS:
        values = [getattr(task, name) for task in tasks]
        if any(value is not None for value in values):
            found[name] = _floats(values)
    for name in RECORDED_TEXTS:
        texts = [getattr(task, name) for task in tasks]
        if any(text is not None for text in texts):
            found[name] = Strings.encode(texts)
    return found


def statuses_of(columns: WorkloadColumns) -> Array:
    """The status codes of every row (unknown where the column is ``None``)."""
    import numpy as np

    return np.zeros(len(columns), dtype=np.int8) if columns.status is None else columns.status


def recorded_floats(columns: WorkloadColumns, name: str) -> Array:
    """A recorded float column (``RECORDED_FLOATS``) of every row (``NaN`` where the column
    is ``None``)."""
    import numpy as np

    values = getattr(columns, name)
    return np.full(len(columns), math.nan) if values is None else values


def placements_of(columns: WorkloadColumns) -> Array:
    """The placement codes of every row (whole nodes where the column is ``None``)."""
    import numpy as np

    if columns.placement is None:
        return np.zeros(len(columns), dtype=np.int8)
    return columns.placement


def _unknown(count: int) -> Strings:
    """``count`` values, all ``None``."""
    import numpy as np

    return Strings(np.full(count, -1, dtype=np.int32), ())


def _same_strings(left: Strings, right: Strings) -> bool:
    import numpy as np

    if len(left.codes) != len(right.codes):
        return False
    if left.values == right.values:
        return bool(np.array_equal(left.codes, right.codes))
    mine = np.array([None, *left.values], dtype=object)[left.codes + 1]
    theirs = np.array([None, *right.values], dtype=object)[right.codes + 1]
    return bool(np.array_equal(mine, theirs))


def _columnar_task(task: Task) -> bool:
    from dcx.core.model import StartMode

    request = task.request
    return (not request.resources and task.start_mode is StartMode.ANY
            and all(type(word) is str or word is None for word in (request.os, request.arch))
            and type(request.features) is tuple
            and all(type(name) is str for name in request.features)
            and task.start_time_s is None and task.preemptible is None and task.image is None
            and task.image_size_mb is None
            and all(_column_float(value) for value in (
                task.submit_time_s, task.runtime_s, task.requested_time_s, request.cores,
                request.memory_mb, task.deadline_s, task.wait_time_s, task.used_memory_mb,
                task.cpu_time_s, task.think_time_s))
            and all(type(text) is str or text is None
                    for text in (task.application, task.queue, task.partition))
            and isinstance(task.status, TaskStatus)
            and task.submit_time_s is not None
            and all((type(value) in (int, float) and (
                type(value) is float or abs(value) <= FLOAT_EXACT)) or reads_back_from_json(value)
                    for value in task.extras.values())
            and not any(isinstance(value, float) and math.isnan(value)
                        for value in task.extras.values())
            and all(type(name) is str or name is None for name in (task.user, task.group)))


def reads_back_from_json(value: object) -> bool:
    """Whether ``json.loads(json.dumps(value))`` is ``value`` (no NaN, tuple or other type)."""
    try:
        return bool(_json.loads(_json.dumps(value, allow_nan=False)) == value)
    except (TypeError, ValueError):
        return False


def _column_float(value: object) -> bool:
    """A value a float column holds as it is: ``None``, or a float or small int, not NaN."""
    if value is None:
        return True
    if type(value) is float:
        return not math.isnan(value)
    return type(value) is int and abs(value) <= FLOAT_EXACT


def _floats(values: list[float | None]) -> Array:
    import numpy as np

    return np.array([math.nan if value is None else value for value in values],
                    dtype=np.float64)


def _offsets(sizes: list[int]) -> Array:
    import numpy as np

    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def _id_array(ids: list[Id]) -> Array | None:
    import numpy as np

    numbers = [value for value in ids if type(value) is int]
    if len(numbers) == len(ids):
        if any(abs(value) >= 2 ** 63 for value in numbers):
            return None
        return np.array(numbers, dtype=np.int64)
    if not all(type(value) in (int, str) for value in ids):
        return None
    array = np.empty(len(ids), dtype=object)
    array[:] = ids
    return array


def _scalar(value: Any) -> Any:
    """A Python int for a numpy integer; other values (text ids) as they are."""
    return int(value) if hasattr(value, "dtype") and value.dtype.kind == "i" else value


def _optional(value: Any) -> float | None:
    number = float(value)
    return None if math.isnan(number) else number


# ------------------------------------------------------------------------------ the row view


class JobRows(Sequence[Job]):
    """``Workload.jobs`` of a columnar workload: the jobs, built from the columns the first
    time code asks for them and then kept (so identity and equality behave as for a tuple)."""

    __slots__ = ("_rows", "columns")

    def __init__(self, columns: WorkloadColumns) -> None:
        self.columns = columns
        self._rows: tuple[Job, ...] | None = None

    def rows(self) -> tuple[Job, ...]:
        if self._rows is None:
            self._rows = self.columns.jobs()
        return self._rows

    def __len__(self) -> int:
        return self.columns.job_count

    def __bool__(self) -> bool:
        return self.columns.job_count > 0

    @overload
    def __getitem__(self, index: int) -> Job: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Job, ...]: ...

    def __getitem__(self, index: int | slice) -> Job | tuple[Job, ...]:
        if isinstance(index, slice) or self._rows is not None:
            return self.rows()[index]
        count = self.columns.job_count
        if not -count <= index < count:
            raise IndexError("job index out of range")
        return self.columns.job(index % count)

    def __iter__(self) -> Iterator[Job]:
        return iter(self.rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JobRows):
            same = self.columns.same_as(other.columns)
            if same is not None:
                return same
            return self.rows() == other.rows()
        if isinstance(other, tuple | list):
            return len(other) == len(self) and self.rows() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.rows())

    def __repr__(self) -> str:
        return f"JobRows({self.columns.job_count} jobs, {len(self.columns)} tasks)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (JobRows, (self.columns,))


def columns_of_jobs(jobs: Sequence[Job]) -> WorkloadColumns | None:
    return jobs.columns if isinstance(jobs, JobRows) else None


def columns_of(workload: Workload | None) -> WorkloadColumns | None:
    """The columns of a columnar workload, ``None`` for a workload of objects."""
    return None if workload is None else columns_of_jobs(workload.jobs)


def columnar(workload: Workload, columns: WorkloadColumns) -> Workload:
    """``workload`` with ``columns`` as its jobs."""
    from dataclasses import replace

    return replace(workload, jobs=JobRows(columns))


class RowLines(Mapping[str, tuple[int, int | None]]):
    """``ReadResult.source_map`` of a columnar read: the model pointer of each task
    (``/workload/jobs/<j>/tasks/<t>``) to its line and column 1, and of each job to its
    first task's, computed when asked for instead of a million strings built up front."""

    __slots__ = ("columns", "lines")

    _POINTER = re.compile(r"/workload/jobs/(0|[1-9][0-9]*)(?:/tasks/(0|[1-9][0-9]*))?")

    def __init__(self, columns: WorkloadColumns, lines: Array) -> None:
        self.columns = columns
        self.lines = lines

    def _row(self, pointer: object) -> int | None:
        match = self._POINTER.fullmatch(pointer) if isinstance(pointer, str) else None
        if match is None:
            return None
        job, task = int(match.group(1)), int(match.group(2) or 0)
        offsets = self.columns.job_offsets
        if job >= self.columns.job_count or task >= offsets[job + 1] - offsets[job]:
            return None
        return int(offsets[job]) + task

    def __getitem__(self, pointer: str) -> tuple[int, int | None]:
        row = self._row(pointer)
        if row is None:
            raise KeyError(pointer)
        return int(self.lines[row]), 1

    def __contains__(self, pointer: object) -> bool:
        return self._row(pointer) is not None

    def __len__(self) -> int:
        offsets = self.columns.job_offsets
        jobs = self.columns.job_count
        return len(self.columns) + int((offsets[1:jobs + 1] > offsets[:jobs]).sum())

    def __iter__(self) -> Iterator[str]:
        offsets = self.columns.job_offsets
        for job in range(self.columns.job_count):
            tasks = int(offsets[job + 1] - offsets[job])
            if tasks:
                yield f"/workload/jobs/{job}"
            for task in range(tasks):
                yield f"/workload/jobs/{job}/tasks/{task}"


def strings_from_arrow(array: Any, unknown: str | None = None) -> Strings:
    """``Strings`` of an Arrow string array; the text ``unknown`` (``-1`` in a trace) and
    nulls are ``None``."""
    import numpy as np
    import pyarrow as pa

    encoded = array.dictionary_encode()
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks() if encoded.num_chunks else pa.array(
            [], pa.string()).dictionary_encode()
    import pyarrow.compute as pc

    values = encoded.dictionary.to_pylist()
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(
        np.int32, copy=False)
    if unknown in values:
        position = values.index(unknown)
        remap = np.arange(len(values), dtype=np.int32)
        remap[position] = -1
        remap[position + 1:] -= 1
        codes = np.where(codes < 0, -1, remap[np.maximum(codes, 0)])
        values.pop(position)
    return Strings(codes.astype(np.int32), tuple(values))


def concat_strings(parts: Sequence[Strings], unknown: str | None = None) -> Strings:
    """One ``Strings`` of consecutive parts, with the text ``unknown`` (``-1`` in a trace)
    as ``None``."""
    import numpy as np

    table: dict[str, int] = {}
    pieces = []
    for part in parts:
        remap = np.array([-1 if text == unknown else table.setdefault(text, len(table))
                          for text in part.values] + [-1], dtype=np.int32)
        pieces.append(remap[part.codes])  # code -1 takes the appended -1
    codes = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
    return Strings(codes, tuple(table))


def used_paths(columns: WorkloadColumns, own_prefix: str | None) -> tuple[dict[str, int],
                                                                           dict[str, int]]:
    """What walking the jobs and tasks with ``dcx.core.restrict``'s ``RecordingUse``
    counts, column by column: field path → how many values leaving it out would change
    (``used``), and → how many other formats' prefixed extras keys sit at it
    (``foreign``). Paths with a count of 0 are left out, as the walk leaves them."""
    import numpy as np

    used: dict[str, int] = {}
    foreign: dict[str, int] = {}
    counts = {"task.id": _numbering_changes(columns)}
    counts.update((path, int(np.count_nonzero(mask(np, columns))))
                  for path, mask in _MASKS.items())
    own = f"{own_prefix}:" if own_prefix else None
    for key, column in columns.extras.items():
        present = int(np.count_nonzero(column.present))
        if ":" not in key:
            counts["task.extras"] = counts.get("task.extras", 0) + present
        elif own is None or not key.startswith(own):
            foreign["task.extras"] = foreign.get("task.extras", 0) + present
    used.update((path, count) for path, count in counts.items() if count)
    if not foreign.get("task.extras"):
        foreign.pop("task.extras", None)
    return used, foreign


def regrouped_jobs(np: Any, columns: WorkloadColumns) -> Array:
    """Per job: whether it is not what a format without jobs makes of its task (one task,
    its id, no name, no user)."""
    single = np.diff(columns.job_offsets) == 1
    return ~(single & _same_ids(columns.job_ids, columns.ids, columns.job_offsets[:-1], single)
             & (columns.job_names.codes < 0) & (columns.job_users.codes < 0))


def _known(np: Any, columns: WorkloadColumns, strings: Strings | None) -> Array:
    return strings.codes >= 0 if strings is not None else np.zeros(len(columns), dtype=bool)


def _recorded_float_mask(np: Any, columns: WorkloadColumns, name: str) -> Array:
    return ~np.isnan(recorded_floats(columns, name))


def _recorded_text_mask(np: Any, columns: WorkloadColumns, name: str) -> Array:
    return _known(np, columns, getattr(columns, name))


_MASKS: dict[str, Callable[[Any, WorkloadColumns], Array]] = {
    "job": regrouped_jobs,
    "job.empty": lambda np, c: np.diff(c.job_offsets) == 0,
    "job.name": lambda np, c: c.job_names.codes >= 0,
    "job.user": lambda np, c: c.job_users.codes >= 0,
    "task.submit_time_s": lambda np, c: c.submit_time_s != 0.0,
    "task.runtime_s": lambda np, c: ~np.isnan(c.runtime_s),
    "task.requested_time_s": lambda np, c: ~np.isnan(c.requested_time_s),
    "task.request.nodes": lambda np, c: c.nodes != 1,
    "task.request.cores": lambda np, c: c.cores != 1.0,
    "task.request.memory_mb": lambda np, c: ~np.isnan(c.memory_mb),
    "task.request.gpus": lambda np, c: c.gpus != 0,
    "task.dependencies.multiple": lambda np, c: np.diff(c.dependency_offsets) > 1,
    "task.dependencies": lambda np, c: np.diff(c.dependency_offsets) > 0,
    "task.deadline_s": lambda np, c: ~np.isnan(c.deadline_s),
    "task.user": lambda np, c: c.user.codes >= 0,
    "task.group": lambda np, c: c.group.codes >= 0,
    "task.request.os": lambda np, c: _known(np, c, c.os),
    "task.request.arch": lambda np, c: _known(np, c, c.arch),
    "task.request.features": lambda np, c: np.diff(c.feature_offsets) > 0
    if c.feature_offsets is not None else np.zeros(len(c), dtype=bool),
    "task.request.placement": lambda np, c: placements_of(c) != 0,
    "task.status": lambda np, c: statuses_of(c) != 0,
    **{f"task.{name}": partial(_recorded_float_mask, name=name) for name in RECORDED_FLOATS},
    **{f"task.{name}": partial(_recorded_text_mask, name=name) for name in RECORDED_TEXTS},
}
"""Per job (``job``…) or per task row (``task.``…): where leaving the path out changes a
value."""


def first_used(columns: WorkloadColumns, path: str, own_prefix: str | None,
               foreign: bool) -> str:
    """The model pointer (``dcx.core.located``) of the first job or task where
    ``used_paths`` counts ``path`` (with ``foreign``: where other formats' extras keys sit,
    else where any extras key not the target's own does)."""
    import numpy as np

    if path == "task.id":
        return _task_pointer(columns, _first_renumbered_row(columns))
    if path == "task.extras":
        own = f"{own_prefix}:" if own_prefix else None
        masks = [column.present for key, column in columns.extras.items()
                 if (":" in key and (own is None or not key.startswith(own)))
                 or (not foreign and ":" not in key)]
        mask = np.logical_or.reduce(masks) if masks else np.zeros(len(columns), dtype=bool)
    elif path in _MASKS:
        mask = _MASKS[path](np, columns)
    else:
        mask = _requested(np, columns, path)
    index = int(np.argmax(mask))
    if path.startswith("job"):
        return f"/workload/jobs/{index}"
    return _task_pointer(columns, index)


def _requested(np: Any, columns: WorkloadColumns, path: str) -> Array:
    """Per task row: whether its request asks an os, arch or features of its machines
    (``task.request.os``, ``.arch``, ``.features``)."""
    if path == "task.request.features":
        offsets = columns.feature_offsets
        return np.zeros(len(columns), dtype=bool) if offsets is None else np.diff(offsets) > 0
    strings = columns.os if path == "task.request.os" else columns.arch
    return np.zeros(len(columns), dtype=bool) if strings is None else strings.codes >= 0


def _task_pointer(columns: WorkloadColumns, row: int) -> str:
    import numpy as np

    job = int(np.searchsorted(columns.job_offsets, row, side="right")) - 1
    return f"/workload/jobs/{job}/tasks/{row - int(columns.job_offsets[job])}"


def _first_renumbered_row(columns: WorkloadColumns) -> int:
    """The first row whose id or dependencies numbering the tasks 1, 2, … changes."""
    ids = columns.ids.tolist()
    numbers: dict[Id, int] = {}
    for value in ids:
        numbers.setdefault(value, len(numbers) + 1)
    dependencies = columns.dependency_ids.tolist()
    offsets = columns.dependency_offsets.tolist()
    return next(row for row, value in enumerate(ids)
                if numbers[value] != value or any(numbers.get(dep, dep) != dep
                                                  for dep in dependencies[offsets[row]:
                                                                          offsets[row + 1]]))


def _same_ids(job_ids: Array, task_ids: Array, first_rows: Array, single: Array) -> Array:
    """Per job: whether its id equals its first task's id (jobs of one task only)."""
    import numpy as np

    rows = np.where(single, first_rows, 0)
    if not len(task_ids):
        return np.zeros(len(job_ids), dtype=bool)
    if job_ids.dtype.kind == "O" or task_ids.dtype.kind == "O":
        return np.fromiter((bool(job_ids[j] == task_ids[rows[j]]) for j in range(len(job_ids))),
                           bool, len(job_ids))
    return job_ids == task_ids[rows]


def _numbering_changes(columns: WorkloadColumns) -> int:
    """How many distinct task ids numbering the tasks 1, 2, … in workload order changes."""
    import numpy as np

    ids = columns.ids
    if ids.dtype.kind == "O":
        numbers: dict[Id, int] = {}
        for value in ids:
            numbers.setdefault(value, len(numbers) + 1)
        return sum(number != value for value, number in numbers.items())
    if all_distinct(ids):
        return int(np.count_nonzero(ids != np.arange(1, len(ids) + 1)))
    distinct, first = np.unique(ids, return_index=True)
    in_order = distinct[np.argsort(first, kind="stable")]
    return int(np.count_nonzero(in_order != np.arange(1, len(in_order) + 1)))


def all_distinct(values: Array) -> bool:
    """Whether no value repeats (by sorting: numpy's hashing ``unique`` is several times
    slower on a million integers)."""
    import numpy as np

    if values.dtype.kind == "O":
        listed = values.tolist()
        return len(set(listed)) == len(listed)
    if _increasing(values, np):
        return True  # (traces number their jobs in order: no sort)
    ordered = np.sort(values)
    return not bool(np.any(ordered[1:] == ordered[:-1]))


def _increasing(values: Array, np: Any) -> bool:
    return len(values) < 2 or bool(np.all(values[1:] > values[:-1]))


def all_found(wanted: Array, values: Array) -> bool:
    """Whether every one of ``wanted`` is among ``values`` (integer arrays)."""
    import numpy as np

    if not len(wanted):
        return True
    if not len(values):
        return False
    ordered = values if _increasing(values, np) else np.sort(values)
    at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
    return bool(np.all(ordered[at] == wanted))
