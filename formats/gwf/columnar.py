"""GWF's writer a column at a time, for a workload held as columns (``dcx.core.columns``):
the bytes ``codec.write`` writes task by task, without building a task.

The variant is ``codec.variant_of``'s choice computed on the arrays, and each column is its
normal form's values (``codec._Normalizer``: whole cores, known times, memory that reads
back, ``_user``, the ``gwf:`` extras each variant keeps), written as the row writer spells
them. A workload this path would have to renumber (ids or workflow ids that are not unique
integers >= 0), whose dependencies name tasks outside it, or whose extras it does not read
as plain numbers or text, is left to the row writer: ``written_columns`` says ``None``.
``tests/test_gwf_write.py`` holds the two to the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dcx.core.columns import ExtraColumn, Strings, WorkloadColumns, all_distinct, all_found
from dcx.core.counterparts import GWF_FROM_SWF, columns_with_counterparts
from dcx.core.model import Placement, TaskStatus
from dcx.core.shapes import one_node_columns, only_resplit_rows
from dcx.formats.gwf import ARCHIVE_COLUMNS, WORKFLOW_COLUMNS
from dcx.formats.gwf.rules import ARCHIVE_CODES, ARCHIVE_TOKENS
from dcx.formats.gwf.spelling import (
    ARCHIVE_EXTRA_KEYS,
    CODES,
    EXTRA_PREFIX,
    FIELD_WIDTH,
    NPROCS_KEY,
    RECORDED,
    REQNPROCS_KEY,
    SECONDS,
    STATUS_KEY,
    USER_TEXT,
    Variant,
    pad,
)
from dcx.parsing.column_text import joined_lines, known_texts, number_texts
from dcx.parsing.traces import CODE_OF_STATUS, CODE_TEXT, written_status_code

_LARGEST_WRITTEN = 2 ** 53
"""Values whose text the row writer spells from a Python ``int`` beyond float range are
left to it (the arrays hold them as float64)."""


def written_columns(columns: WorkloadColumns, variant: Variant | None = None,
                    dependencies_known: bool = False) -> bytes | None:
    """What ``codec.write`` writes for a workload of ``columns``, or ``None`` where the
    row writer must do it (see the module docstring). ``variant``: the one to write, else
    ``codec.variant_of``'s choice; ``dependencies_known``: every dependency names a task of
    the file, maybe outside ``columns`` (a chunk's: ``codec.write_part``), and is kept."""
    own = columns_with_counterparts(columns, GWF_FROM_SWF)  # SWF's processor keys are GWF's
    if own is None:
        return None
    columns = own
    import numpy as np

    if not _plain_ids(columns.ids, np) or any(
            key.startswith(EXTRA_PREFIX) and key[len(EXTRA_PREFIX):] in RECORDED
            and key != STATUS_KEY for key in columns.extras):
        return None  # (recorded values an earlier dcx kept in extras: the rows move them)
    columns = one_node_columns_of(columns)
    extras = _Extras.of(columns, np)  # (ReqNProcs is kept where it differs from the total)
    if extras is None:
        return None
    if _archive(columns, extras, np) if variant is None else variant == "archive":
        if not _recorded_kept(columns, np):
            return None  # (values the archive's columns cannot hold: the rows drop them)
        return _archive_file(columns, extras, np)
    if len(columns.dependency_ids) and (
            not _plain_ids(columns.dependency_ids, np, False)
            or not (dependencies_known or all_found(columns.dependency_ids, columns.ids))):
        return None  # dependencies on tasks outside the workload are dropped
    sizes = np.diff(columns.job_offsets)
    if not _plain_ids(columns.job_ids[sizes > 0], np):
        return None  # workflows renumbered
    return _workflow_file(columns, extras, sizes, np)


def columns_variant_fields(columns: WorkloadColumns
                           ) -> tuple[frozenset[str], frozenset[str]] | None:
    """``codec.variant_fields`` on the arrays, or ``None`` where they hold extras this path
    does not read (then the rows decide)."""
    import numpy as np

    extras = _Extras.of(columns, np)
    if extras is None:
        return None
    return _variant_fields(columns, extras, np)


def one_node_columns_of(columns: WorkloadColumns) -> WorkloadColumns:
    """``columns`` with each task's nodes as the cores and memory of one node, as
    ``codec._Normalizer.task`` writes them; ``columns`` itself when every task asks for one
    node."""
    import numpy as np

    nodes = columns.nodes
    if not bool(np.any(nodes != 1)):
        return columns
    cores, memory = one_node_columns(nodes, columns.cores, columns.memory_mb)
    return replace(columns, nodes=np.ones(len(columns), dtype=np.int64), cores=cores,
                   memory_mb=memory)


def on_one_node(columns: WorkloadColumns, lost: set[str]) -> WorkloadColumns | None:
    """``one_node_columns_of(columns)`` for the normal form, adding the node count it loses
    to ``lost``; ``None`` where ``codec._Normalizer.task`` also reports the cores or the
    memory of a task it folds (what they cannot hold themselves: the rows build it then)."""
    import numpy as np

    anywhere = columns.with_placement(Placement.CORES)
    if anywhere is not columns:
        lost.add("task.request.placement")
    folded = one_node_columns_of(anywhere)
    if folded is anywhere:
        return anywhere
    several = columns.nodes != 1
    cores, memory = columns.cores[several], columns.memory_mb[several]
    known = ~np.isnan(memory)
    if not (bool(np.all(columns.nodes >= 1)) and bool(np.all(whole_cores(cores, np) == cores))
            and bool(np.all(memories(memory[known], cores[known], np) == memory[known]))):
        return None
    if bool(np.any(several & ~only_resplit_rows(columns.placement, columns.nodes,
                                                columns.cores, folded.cores))):
        lost.add("task.request.nodes")  # (cores and memory carry the totals: see _Normalizer)
    return folded


def normal_variant(columns: WorkloadColumns) -> Variant | None:
    """The variant ``codec.variant_of`` chooses when ``codec.normal_form`` would leave every
    job and task of ``columns`` as it is (checked column by column); ``None`` otherwise (the
    normal form is then built task by task)."""
    import numpy as np

    if not _plain_ids(columns.ids, np) or bool(np.any(columns.nodes != 1)):
        return None  # (tasks over several nodes: see on_one_node)
    extras = _Extras.of(columns, np)
    if extras is None:
        return None
    archive = _archive(columns, extras, np)
    cores = columns.cores
    if not (bool(np.all(whole_cores(cores, np) == cores))
            and bool(np.all(_known_submits(columns.submit_time_s, np)
                            == columns.submit_time_s))
            and _known_or_none(columns.runtime_s, np)
            and _gwf_extras_kept(columns, extras, archive, np)
            and (_recorded_kept(columns, np) if archive else not _recorded_used(columns, np))):
        return None
    sizes = np.diff(columns.job_offsets)
    if archive:
        firsts = columns.ids[columns.job_offsets[:-1][sizes > 0]]
        single = bool(np.all(sizes <= 1)) and bool(np.all(np.asarray(
            firsts == columns.job_ids[sizes > 0], dtype=bool)))
        memory = columns.memory_mb
        known_memory = ~np.isnan(memory)
        return "archive" if (
            single and not len(columns.dependency_ids)
            and _known_or_none(columns.requested_time_s, np)
            and bool(np.all(memories(memory, cores, np)[known_memory] == memory[known_memory]))
            and all(bool(np.all(_names(names, np)[1][names.codes >= 0]))
                    for names in (columns.user, columns.group))) else None
    nothing_else = (bool(np.all(np.isnan(columns.requested_time_s)))
                    and bool(np.all(np.isnan(columns.memory_mb)))
                    and not bool(np.any(columns.user.codes >= 0))
                    and not bool(np.any(columns.group.codes >= 0)))
    if not nothing_else or not _plain_ids(columns.job_ids[sizes > 0], np):
        return None
    if len(columns.dependency_ids) and (not _plain_ids(columns.dependency_ids, np, False)
                                        or not all_found(columns.dependency_ids, columns.ids)):
        return None
    return "workflow"


def part_columns(columns: WorkloadColumns, variant: Variant
                 ) -> tuple[WorkloadColumns, frozenset[str]] | None:
    """``codec.part_normal_form``'s workload of ``columns`` written in ``variant`` (every
    dependency naming a task of the file), column by column, and the held field paths it
    changes: only what the variant has no column for (the archive variant's dependencies,
    the workflow variant's requested time, memory, user and group) is changed. ``None``
    where the normal form changes more (ids, values): the rows build it then."""
    import numpy as np

    if not _plain_ids(columns.ids, np):
        return None
    extras = _Extras.of(columns, np)
    archive = variant == "archive"
    cores = columns.cores
    if extras is None or not (
            bool(np.all(whole_cores(cores, np) == cores))
            and bool(np.all(_known_submits(columns.submit_time_s, np) == columns.submit_time_s))
            and _known_or_none(columns.runtime_s, np)
            and _gwf_extras_kept(columns, extras, archive, np)
            and (not archive or _recorded_kept(columns, np))):
        return None
    sizes = np.diff(columns.job_offsets)
    if archive:
        firsts = columns.ids[columns.job_offsets[:-1][sizes > 0]]
        memory = columns.memory_mb
        known_memory = ~np.isnan(memory)
        if not (bool(np.all(sizes <= 1))
                and bool(np.all(np.asarray(firsts == columns.job_ids[sizes > 0], dtype=bool)))
                and _known_or_none(columns.requested_time_s, np)
                and bool(np.all(memories(memory, cores, np)[known_memory]
                                == memory[known_memory]))
                and all(bool(np.all(_names(names, np)[1][names.codes >= 0]))
                        for names in (columns.user, columns.group))):
            return None
        if not len(columns.dependency_ids):
            return columns, frozenset()
        several = bool(np.any(np.diff(columns.dependency_offsets) > 1))
        return replace(columns, dependency_ids=columns.dependency_ids[:0],
                       dependency_offsets=np.zeros_like(columns.dependency_offsets)), \
            frozenset({"task.dependencies", *(("task.dependencies.multiple",) if several
                                              else ())})
    if not _plain_ids(columns.job_ids[sizes > 0], np) or (
            len(columns.dependency_ids) and not _plain_ids(columns.dependency_ids, np, False)):
        return None
    lost = {path for path, known in (
        ("task.requested_time_s", np.any(~np.isnan(columns.requested_time_s))),
        ("task.request.memory_mb", np.any(~np.isnan(columns.memory_mb))),
        ("task.user", np.any(columns.user.codes >= 0)),
        ("task.group", np.any(columns.group.codes >= 0))) if bool(known)}
    recorded = _recorded_used(columns, np)
    if not lost and not recorded:
        return columns, frozenset()
    unknown = np.full(len(columns), np.nan)
    nobody = Strings(np.full(len(columns), -1, dtype=np.int32), ())
    return replace(columns, requested_time_s=unknown, memory_mb=unknown, user=nobody,
                   group=nobody, status=None, wait_time_s=None, cpu_time_s=None,
                   used_memory_mb=None, application=None, queue=None, partition=None
                   ), frozenset(lost | recorded)


_RECORDED_COLUMNS = ("status", "wait_time_s", "cpu_time_s", "used_memory_mb",
                     *CODES.values())
"""The recorded ``WorkloadColumns`` only the archive variant writes."""


def _recorded_used(columns: WorkloadColumns, np: Any) -> set[str]:
    """The recorded fields some task of ``columns`` has a value of."""
    from dcx.core.columns import STATUSES

    found = set()
    for name in _RECORDED_COLUMNS:
        values = getattr(columns, name)
        if values is None:
            continue
        if name == "status":
            used = bool(np.any(values != STATUSES.index(TaskStatus.UNKNOWN)))
        elif isinstance(values, Strings):
            used = bool(np.any(values.codes >= 0))
        else:
            used = bool(np.any(~np.isnan(values)))
        if used:
            found.add(f"task.{name}")
    return found


def _recorded_kept(columns: WorkloadColumns, np: Any) -> bool:
    """``codec._recorded`` changes no task of ``columns`` written in the archive variant."""
    from dcx.core.columns import STATUSES

    if columns.status is not None and bool(np.any(
            columns.status == STATUSES.index(TaskStatus.KILLED_AT_WALLTIME))):
        return False
    for name in ("wait_time_s", "cpu_time_s", "used_memory_mb"):
        values = getattr(columns, name)
        if values is not None:
            known = values[~np.isnan(values)]
            if np.any(known < 0) or not np.all(np.isfinite(known * 1024)):
                return False
    return all(CODE_TEXT.fullmatch(text) for name in CODES.values()
               if (texts := getattr(columns, name)) is not None for text in texts.values)


def _recorded_paths(columns: WorkloadColumns, np: Any) -> set[str]:
    """``codec._recorded_paths`` of every task: the recorded fields with a value the archive
    variant writes."""
    used = _recorded_used(columns, np)
    if not used or _recorded_kept(columns, np):
        return used
    found = {"task.status"} & used
    for name in ("wait_time_s", "cpu_time_s", "used_memory_mb"):
        values = getattr(columns, name)
        if values is not None:
            with np.errstate(invalid="ignore", over="ignore"):
                if bool(np.any((values >= 0) & np.isfinite(values * 1024))):
                    found.add(f"task.{name}")
    for name in CODES.values():
        texts = getattr(columns, name)
        if texts is not None:
            written = np.array([CODE_TEXT.fullmatch(text) is not None for text in texts.values]
                               + [False], dtype=bool)
            if bool(np.any(written[np.where(texts.codes < 0, len(texts.values),
                                            texts.codes)])):
                found.add(f"task.{name}")
    return found


def _known_or_none(values: Any, np: Any) -> bool:
    """Every value is unknown (``NaN``) or a time ``known_time`` keeps."""
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isnan(values) | (np.isfinite(values) & (values >= 0))))


def _gwf_extras_kept(columns: WorkloadColumns, extras: _Extras, archive: bool,
                     np: Any) -> bool:
    """``codec._gwf_extras`` keeps every ``gwf:`` key of every task as it is."""
    for key, column in columns.extras.items():
        if not key.startswith(EXTRA_PREFIX) or not column.present.any():
            continue
        present = column.present
        if key == NPROCS_KEY:
            kept = extras.unknown_nprocs
        elif key == REQNPROCS_KEY:
            kept = extras.requested_kept
        elif archive and key in ARCHIVE_EXTRA_KEYS:
            kept = extras.archive[key[len(EXTRA_PREFIX):]][1]
        else:
            return False  # dropped by this variant
        if not bool(np.all(kept[present])):
            return False
    status = columns.extras.get(STATUS_KEY)
    if status is not None and archive:
        from dcx.core.columns import STATUSES, statuses_of

        codes, statuses = status.values[status.present], statuses_of(columns)[status.present]
        if any(written_status_code(STATUSES[code_status], code) != code
               for code, code_status in zip(codes.tolist(), statuses.tolist(), strict=True)):
            return False
    return True


def _plain_ids(ids: Any, np: Any, distinct: bool = True) -> bool:
    """Integers >= 0 (and unique): ids ``written_ids`` keeps as they are."""
    if ids.dtype.kind != "i":
        return False
    return not len(ids) or (int(ids.min()) >= 0 and (not distinct or all_distinct(ids)))


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class _Extras:
    """The ``gwf:`` extras as the normal form keeps them, per row."""

    unknown_nprocs: Any
    """NProcs ``-1`` (the cores came from ReqNProcs)."""
    requested: Any
    """ReqNProcs as integers, written where ``requested_kept`` (it differs from the cores)."""
    requested_kept: Any
    archive: dict[str, tuple[Any, Any]]
    """Archive column name → (its texts, the rows where the archive variant keeps it)."""

    @staticmethod
    def of(columns: WorkloadColumns, np: Any) -> _Extras | None:
        count = len(columns)
        cores = whole_cores(columns.cores, np)
        none = np.zeros(count, dtype=bool)
        unknown = none
        requested, requested_kept = np.zeros(count, dtype=np.int64), none
        archive: dict[str, tuple[Any, Any]] = {}
        extras = columns.extras
        for key, column in extras.items():
            if not key.startswith(EXTRA_PREFIX):
                continue  # not GWF's: nothing of it is written
            if column.json or column.values.dtype.kind not in "if":
                return None
            if key == NPROCS_KEY:
                values, integers = _integers(column, np)
                if values is None:
                    return None
                unknown = column.present & integers & (values == -1)
            elif key in ARCHIVE_EXTRA_KEYS:
                found = _archive_extra(key[len(EXTRA_PREFIX):], column, np)
                if found is None:
                    return None
                archive[key[len(EXTRA_PREFIX):]] = found
        asked = extras.get(REQNPROCS_KEY)
        if asked is not None:
            values, integers = _integers(asked, np)
            if values is None:
                return None
            requested_kept = (asked.present & integers & ~unknown
                              & ((values >= 1) | (values == -1)) & (values != cores))
            requested = values
        return _Extras(unknown, requested, requested_kept, archive)


def _integers(column: ExtraColumn, np: Any) -> tuple[Any, Any]:
    """A numeric column's values as ``int64`` and where they are Python ``int`` s; ``None``
    values for one the arrays cannot hold exactly."""
    if column.texts is not None:
        return np.zeros(len(column.present), dtype=np.int64), np.zeros(len(column.present),
                                                                       dtype=bool)
    values = column.values
    if values.dtype.kind == "i":
        return values, np.ones(len(values), dtype=bool)
    integral = (np.zeros(len(values), dtype=bool) if column.integral is None
                else column.integral & column.present)
    if np.any(np.abs(values[integral]) >= _LARGEST_WRITTEN):
        return None, None
    return np.where(integral, values, 0).astype(np.int64), integral


def _archive_extra(name: str, column: ExtraColumn, np: Any) -> tuple[Any, Any] | None:
    """``codec._archive_column`` on each row: the column's texts and where it is kept."""
    import pyarrow as pa

    present = column.present
    if name in ARCHIVE_TOKENS:
        texts = column.texts
        if texts is None:  # numbers in a token column: never written
            return pa.nulls(len(present), pa.string()), np.zeros(len(present), dtype=bool)
        single = np.array([value.split() == [value] and value != "-1" for value in texts.values]
                          + [False], dtype=bool)
        return (pa.array([*texts.values, None], pa.string()).take(
            pa.array(np.where(texts.codes < 0, len(texts.values), texts.codes))),
            present & single[np.where(texts.codes < 0, len(texts.values), texts.codes)])
    values, integers = _integers(column, np)
    if values is None:
        return None
    if column.texts is not None:  # text in a numeric column: never written
        return pa.nulls(len(present), pa.string()), np.zeros(len(present), dtype=bool)
    if name in ARCHIVE_CODES:
        return number_texts(values), present & integers & (values >= 0)
    numbers = column.values.astype(np.float64)
    kept = present & np.isfinite(numbers) & (numbers >= 0)
    if column.values.dtype.kind == "i":
        return number_texts(values), kept
    # an ``int`` is written as ``str``, a float by ``format_number``: the same text below 1e16
    return number_texts(np.where(kept, numbers, 0.0)), kept


def whole_cores(cores: Any, np: Any) -> Any:
    """``codec._whole_cores`` of each value."""
    with np.errstate(invalid="ignore"):
        return np.where(~np.isfinite(cores) | (cores <= 1), 1.0, np.ceil(cores))


def known_times(values: Any, np: Any) -> Any:
    """``known_time`` of each value (``NaN``: unknown)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(values) & (values >= 0), values, np.nan)


def memories(memory_mb: Any, cores: Any, np: Any) -> Any:
    """``codec._memory`` of each value (``NaN``: ``None``), in the same float operations."""
    result = np.full(len(memory_mb), np.nan)
    with np.errstate(invalid="ignore", over="ignore"):
        active = memory_mb >= 0
        current = memory_mb.copy()
        for _ in range(4):
            per_processor_kb = current * 1024 / cores
            active &= np.isfinite(per_processor_kb)
            read_back = per_processor_kb * cores / 1024
            settled = active & (read_back == current)
            result[settled] = current[settled]
            active &= ~settled
            current = np.where(active, read_back, current)
    result[active] = current[active]
    return result


def _names(names: Strings, np: Any) -> tuple[Any, Any]:
    """``codec._user`` of each row: its text and whether it is kept."""
    import pyarrow as pa

    kept = np.array([bool(USER_TEXT.fullmatch(value)) for value in names.values] + [False],
                    dtype=bool)
    codes = np.where(names.codes < 0, len(names.values), names.codes)
    return pa.array([*names.values, "-1"], pa.string()).take(pa.array(codes)), kept[codes]


# --------------------------------------------------------------------------- variant


def _archive(columns: WorkloadColumns, extras: _Extras, np: Any) -> bool:
    """``codec.variant_of`` is ``archive``: the field paths only it writes outnumber those
    only the workflow variant writes."""
    only_archive, only_workflow = _variant_fields(columns, extras, np)
    return len(only_archive) > len(only_workflow)


def _variant_fields(columns: WorkloadColumns, extras: _Extras, np: Any
                    ) -> tuple[frozenset[str], frozenset[str]]:
    """The field paths only the archive variant writes and those only the workflow variant
    writes (``codec.variant_fields``)."""
    sizes = np.diff(columns.job_offsets)
    filled = sizes > 0
    firsts = columns.ids[columns.job_offsets[:-1][filled]]
    regrouped = bool(np.any(sizes[filled] != 1)) or bool(
        np.any(np.asarray(firsts != columns.job_ids[filled], dtype=bool)))
    dependencies = np.diff(columns.dependency_offsets)
    cores = whole_cores(columns.cores, np)
    only_workflow = {path for path, used in (
        ("job", regrouped), ("task.dependencies", bool(np.any(dependencies > 0))),
        ("task.dependencies.multiple", bool(np.any(dependencies > 1)))) if used}
    only_archive = {path for path, used in (
        ("task.requested_time_s", np.any(~np.isnan(known_times(columns.requested_time_s, np)))),
        ("task.request.memory_mb", np.any(~np.isnan(memories(columns.memory_mb, cores, np)))),
        ("task.user", np.any(_names(columns.user, np)[1])),
        ("task.group", np.any(_names(columns.group, np)[1])),
        ("task.extras", any(bool(np.any(kept)) for _, kept in extras.archive.values())),
    ) if bool(used)} | _recorded_paths(columns, np)
    return frozenset(only_archive), frozenset(only_workflow)


# --------------------------------------------------------------------------- files


def _processor_texts(columns: WorkloadColumns, extras: _Extras, cores: Any) -> tuple[Any, Any]:
    """NProcs and ReqNProcs (``codec._processor_columns``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    core_texts = _whole_texts(cores)
    nprocs = pc.if_else(pa.array(extras.unknown_nprocs), pa.scalar("-1"), core_texts)
    requested = pc.if_else(pa.array(extras.requested_kept), number_texts(extras.requested),
                           core_texts)
    return nprocs, requested


def _whole_texts(values: Any) -> Any:
    """``str(int(value))`` of whole floats (the cores): past 64 bits in Python."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    large = values >= _LARGEST_WRITTEN
    texts = pc.cast(pa.array(np.where(large, 0, values).astype(np.int64)), pa.string())
    if large.any():
        texts = pc.replace_with_mask(texts, pa.array(large),
                                     pa.array([str(int(value)) for value in values[large]],
                                              pa.string()))
    return texts


def _workflow_file(columns: WorkloadColumns, extras: _Extras, sizes: Any, np: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.compute as pc

    head = (pad(WORKFLOW_COLUMNS) + "\n").encode()
    if not len(columns):
        return head
    cores = whole_cores(columns.cores, np)
    nprocs, requested = _processor_texts(columns, extras, cores)
    dependencies = pc.binary_join(pa.LargeListArray.from_arrays(
        pa.array(columns.dependency_offsets, pa.int64()),
        number_texts(columns.dependency_ids.astype(np.int64))), " ")
    fields = [
        number_texts(np.repeat(columns.job_ids, sizes)),
        number_texts(columns.ids),
        number_texts(_known_submits(columns.submit_time_s, np)),
        known_texts(known_times(columns.runtime_s, np)),
        nprocs, requested, dependencies.cast(pa.string()),
    ]
    padded = [pc.utf8_rpad(field, width=FIELD_WIDTH, padding=" ") for field in fields]
    return head + joined_lines(pc.binary_join_element_wise(*padded, ", "))


def _archive_file(columns: WorkloadColumns, extras: _Extras, np: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.compute as pc

    head = ("# " + " ".join(ARCHIVE_COLUMNS) + "\n").encode()
    count = len(columns)
    if not count:
        return head
    cores = whole_cores(columns.cores, np)
    unknown = pa.array(["-1"] * count, pa.string())
    nprocs, requested = _processor_texts(columns, extras, cores)
    memory = memories(columns.memory_mb, cores, np)
    users, kept_users = _names(columns.user, np)
    groups, kept_groups = _names(columns.group, np)
    with np.errstate(invalid="ignore"):
        per_processor_kb = memory * 1024 / cores
    fields: dict[str, Any] = {
        "JobID": number_texts(columns.ids),
        "SubmitTime": number_texts(_known_submits(columns.submit_time_s, np)),
        "RunTime": known_texts(known_times(columns.runtime_s, np)),
        "ReqTime": known_texts(known_times(columns.requested_time_s, np)),
        "NProcs": nprocs,
        "ReqNProcs": requested,
        "ReqMemory": known_texts(per_processor_kb),
        "UserID": pc.if_else(pa.array(kept_users), users, unknown),
        "GroupID": pc.if_else(pa.array(kept_groups), groups, unknown),
    }
    fields.update(_recorded_fields(columns, np))
    for name, (texts, kept) in extras.archive.items():
        fields[name] = pc.if_else(pa.array(kept), texts, fields.get(name, unknown))
    row = [fields.get(name, unknown) for name in ARCHIVE_COLUMNS]
    return head + joined_lines(pc.binary_join_element_wise(*row, " "))


def _recorded_fields(columns: WorkloadColumns, np: Any) -> dict[str, Any]:
    """The archive columns of the recorded fields (in normal form) that some task has."""
    import pyarrow as pa

    from dcx.core.columns import STATUSES

    fields: dict[str, Any] = {}
    if columns.status is not None:
        table = pa.array([str(CODE_OF_STATUS[status]) for status in STATUSES], pa.string())
        fields["Status"] = table.take(pa.array(columns.status.astype(np.int64)))
    if columns.used_memory_mb is not None:
        fields["UsedMemory"] = known_texts(columns.used_memory_mb * 1024)
    for name, field in SECONDS.items():
        values = getattr(columns, field)
        if values is not None:
            fields[name] = known_texts(values)
    for name, field in CODES.items():
        texts = getattr(columns, field)
        if texts is not None:
            table = pa.array([*texts.values, "-1"], pa.string())
            fields[name] = table.take(pa.array(np.where(texts.codes < 0, len(texts.values),
                                                        texts.codes)))
    return fields


def _known_submits(values: Any, np: Any) -> Any:
    """``known_submit`` of each value: unknown is 0."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(values) & (values >= 0), values, 0.0)
