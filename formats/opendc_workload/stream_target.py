"""OpenDC workload's stream target (``FORMAT.stream_target``) for
``dcx.converters.stream_convert``: a folder of ``tasks.parquet`` and ``fragments.parquet``
written a chunk of tasks at a time (see the engine's module docstring for what every target
shares), whose tables are the whole-file
conversion's (the schemas with their nullability and key-value metadata, every value; the
row groups are the chunks').

Each chunk's tasks and fragments are the whole-file writer's rows (``codec.write_part`` of
``codec.part_normal_form``, its times counted from the header's time origin, its
dependencies on tasks of other chunks put back), written with a ``ParquetWriter`` as they
come: the fragments to ``fragments.parquet``, the tasks to a spool file in the same folder.
What only the whole trace decides is settled at the end:

- ``children``, the inverse of ``parents``: a task's children may be in any later chunk.
  When no task has a parent the spool, whose ``children`` are empty, is ``tasks.parquet``
  as it is (renamed). Otherwise its ``id`` and ``parents`` columns are read back (a few
  bytes a task and a dependency), the child lists computed from them at once
  (``codec.children``, the whole writer's rule), and ``tasks.parquet`` written from the
  spool a row group at a time with its slice of them.
- ``gpu_usage``, which fragments.parquet has only when some fragment has one: the first
  chunk that has one makes the fragments written so far be copied, a row group at a time,
  with the column (null) added.
- the time origin (``dcx:time_origin``) is the header's: the first chunk's, and a later one
  that changes it makes a file be read again (a pipe stops).

A file is read once when the time origin its first chunk gives is the whole header's and
no preceding job comes after its job's line (its parts are written while it is checked, into
the folder that becomes OUTPUT), else twice (to check it, then to write). The folder is
written whole or not at all (``folders.folder_beside``: a temporary folder
beside OUTPUT renamed into place once it reads back accepted); to standard output, a pipe
or a device, the two members are written in a temporary folder in ``$TMPDIR`` and then sent
as the tar archive the whole path writes (``core.members.pack_streams``).

Losses are counted on each chunk's document as the whole file has them: a held path whose
values the normal form of some chunk changes (milliseconds, whole cores, memory to 1/1000
MB) is counted in every chunk, as the whole file counts every value of it, and left out at
the end when no chunk changes one; the workload's fields are the header's. What a chunk
cannot decide alone stops the conversion (``convert.not-streamable``): ids the whole file
would renumber (not unique 32-bit integers), ``opendc-workload:`` data a Parquet trace kept
that the normal form changes (the whole file counts it with every other task's extras), in
a pipe a preceding job that comes later in the trace. In a file, such a job is a dependency
where its chunk kept an extras value: the file is read again to measure the losses.

The output is read back under the format's reader before it is renamed into place, as
``dcx validate`` reads a folder: a part at a time from 16 MB (``FormatDeclaration.read_parts``,
whose memory is bounded by the largest row group and a few numbers a task), whole below;
were the format to have no part reader, whole within the input size limit and not at all
beyond it (each part is the whole writer's rows, which the differential tests hold to it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

from dcx.core.diagnostics import Loss
from dcx.core.model import Document, Workload
from dcx.core.streams import (
    CHANGED,
    Files,
    JsonTarget,
    NotStreamable,
    Source,
    with_dependencies_back,
    with_header_losses,
)

_SPOOL = ".tasks.spool.parquet"
"""The tasks written so far, without their children, in the output's folder."""
_FRAGMENTS_BEFORE = ".fragments.before.parquet"
"""The fragments written before the first ``gpu_usage``, while they are copied with it."""


@dataclass(frozen=True)
class _Part:
    """A chunk's rows: its tasks (``children`` empty) and fragments, and the time origin
    its times count from."""

    tasks: Any
    fragments: Any
    origin: str | None


class OpendcWorkloadTarget(JsonTarget):
    """tasks.parquet and fragments.parquet written a chunk at a time (see the module
    docstring); the header's time origin is found as the JSON targets find theirs."""

    reads_back = "folder"
    from_itself = False
    loses_unknown_otherwise = True

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import opendc_workload

        self.spec = opendc_workload.FORMAT
        self.source = source
        self.dependencies_across = True
        self.jobs_are_rows = True  # (OpenDC has no jobs: each task is one)
        self.normal: tuple[Document | None, str | None, Document] = (None, None, Document())
        """The last chunk's document whose losses were measured, the origin they counted
        from, and its normal form."""

    def origin(self) -> str | None:
        """The time origin of the header read so far (in normal form), which every chunk's
        times count from."""
        return self.header(self.source).time_origin

    def losses(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]
               ) -> dict[Any, tuple[Loss, ...]]:
        """The chunk's losses without its dependencies on tasks of other chunks (OpenDC
        holds them: none is lost). A held path whose values the normal form of some chunk
        changes counts every value of it in the whole file (``dropped_values``): each chunk
        counts its own; those no chunk changes are left out at the end (``reported``). One
        that no value counts (cores per node of single-core nodes, which become the
        task's cores) is first where the file's first changed task is: the chunks that
        change a task say where theirs is until one has (column by column, where the
        objects would be built to compare them)."""
        from dataclasses import replace

        from dcx.core.restrict import recorded_use
        from dcx.formats.opendc_workload import codec

        origin = self.origin()
        normal, lost = codec.part_normal_form(document, origin)
        if "task.extras" in lost:
            raise NotStreamable("opendc-workload data in the tasks that OpenDC's columns "
                                "cannot carry as they are (the whole file's losses count it "
                                "with every task's extras)")
        self.normal = (document, origin, normal)
        used = recorded_use(document, self.spec.name).used
        unused = _VALUE_PATHS.difference(used)
        changing = lost | (_VALUE_PATHS if _tasks_changed(document, normal) else frozenset())
        to_place = changing & (unused - self.placed)
        claimed = (lost - unused) | (_VALUE_PATHS - unused)
        first = _first_changed_task(document, normal) if to_place else None
        if first is False:  # the objects tell: ``dropped_values`` finds it
            claimed |= to_place
        spec = replace(self.spec, normal_form_losses=lambda _: claimed)
        found = self.derive_losses(document, spec, normal)
        if isinstance(first, str) or first is None:
            # (each with what the normal form does to its values, as a loss line says it)
            notes = self.spec.loss_notes(document) if self.spec.loss_notes is not None else {}
            found += tuple(Loss(path, None, "; ".join((
                self.spec.held_field_detail(path), notes[path])) if path in notes
                else self.spec.held_field_detail(path), first) for path in sorted(to_place))
        self.placed |= {loss.field for loss in found
                        if loss.field in unused and loss.first is not None}
        return {None: found,
                CHANGED: tuple(Loss(path, 1, "", None) for path in sorted(lost & _VALUE_PATHS))}

    placed: frozenset[str] = frozenset()
    """The value paths no value counts whose first place a chunk of this reading has given
    (``losses``)."""

    def resolved(self, in_file: Callable[[Any], bool]) -> None:
        self.placed = frozenset()  # (a reading that measures again starts over)

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        return with_header_losses(self, losses, _VALUE_PATHS - frozenset(counted(CHANGED)))

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dcx.formats.opendc_workload import codec

        origin = self.origin()
        made, measured_from, normal = self.normal
        if made is not document or measured_from != origin:
            normal = codec.part_normal_form(document, origin)[0]
        tables = codec.write_part(with_dependencies_back(normal, earlier))
        if isinstance(tables, str):
            raise NotStreamable(f"the opendc-workload writer refuses a chunk's tasks: {tables}")
        # (the origin its times count from: a worker that converts a Parquet row group on
        # Dask has no header but the first row group's)
        return _Part(tables[0], tables[1], origin)

    def rows(self, part: Any) -> int:
        return int(part.tasks.num_rows)

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        """The members into the folder ``sink`` (a path), or as a tar archive to ``sink``
        (an open binary stream), written in a temporary folder in ``$TMPDIR`` first."""
        from dcx.core.members import pack_streams
        from dcx.formats.opendc_workload import MEMBERS

        with contextlib.ExitStack() as stack:
            if isinstance(sink, str):
                folder = sink
            else:
                folder = self.files.scratch_folder("dcx-opendc-workload-")
                stack.callback(self.files.remove_folder, folder)
            members: _Members | None = None
            for part in parts:
                if members is None:
                    members = stack.enter_context(
                        _Members(self.files, folder, header().time_origin))
                if part.origin != members.origin:
                    raise NotStreamable(_HEADER_AFTER if self.origin() != members.origin
                                        else _ANOTHER_ORIGIN)
                members.add(part)
            origin = at_end().time_origin
            if members is None:
                members = stack.enter_context(_Members(self.files, folder, origin))
            elif origin != members.origin:
                raise NotStreamable(_HEADER_AFTER)
            members.finish()
            if not isinstance(sink, str):
                paths = {name: os.path.join(folder, name) for name in MEMBERS}
                streams = {name: (self.files.size(path),
                                  stack.enter_context(self.files.read(path)))
                           for name, path in paths.items()}
                pack_streams(sink, streams, MEMBERS)
            return members.rows

    writes_early = True
    early: _Members | None = None
    early_path: str | None = None

    def start_early(self, path: str) -> None:
        self.early_path = path

    def write_early(self, part: Any, unknown: bool) -> None:
        # (a preceding job a chunk did not know is settled at the end: ``finish_early``)
        if self.early_path is None or not part.tasks.num_rows:
            return
        if self.early is None:
            self.early = _Members(self.files, self.early_path, self.header(self.source).time_origin)
        if part.origin != self.early.origin:  # the second reading writes (or says why not)
            self.close_early()
            self.early_path = None
            return
        self.early.add(part)
        self.early_rows += part.tasks.num_rows

    def finish_early(self, header: Workload) -> bool:
        # (a preceding job met before its line is a dependency the early parts lack; a
        # header line after the first chunk may change the time origin)
        early = self.early
        if early is None or self.unknown_in_file or early.origin != header.time_origin:
            return False
        early.finish()
        self.early = None
        return True

    def close_early(self) -> None:
        early, self.early = self.early, None
        if early is not None:
            early.__exit__(None, None, None)

class _Members:
    """tasks.parquet and fragments.parquet written into ``folder`` a part at a time (see
    the module docstring); the writers are closed when the ``with`` block ends."""

    def __init__(self, files: Files, folder: str, origin: str | None) -> None:
        from dcx.formats.opendc_workload import FRAGMENTS, TASKS, codec

        self.files, self.folder, self.origin = files, folder, origin
        self.tasks_path = os.path.join(folder, TASKS)
        self.fragments_path = os.path.join(folder, FRAGMENTS)
        self.spool_path = os.path.join(folder, _SPOOL)
        self.schema = codec.tasks_schema(origin)
        self.tasks: Any = files.parquet_writer(self.spool_path, self.schema,
                                               compression="snappy")
        self.fragments: Any = None
        self.gpu = False
        """fragments.parquet has ``gpu_usage``."""
        self.rows = 0
        self.dependencies = 0

    def __enter__(self) -> _Members:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
        self.files.remove(self.spool_path)

    def add(self, part: _Part) -> None:
        import pyarrow.compute as pc

        self.tasks.write_table(part.tasks)
        self.rows += part.tasks.num_rows
        parents = part.tasks.column("parents")
        self.dependencies += int(pc.sum(pc.list_value_length(parents)).as_py() or 0)
        self._add_fragments(part.fragments)

    def _add_fragments(self, fragments: Any) -> None:
        import pyarrow as pa

        from dcx.formats.opendc_workload import codec

        gpu = "gpu_usage" in fragments.column_names
        if self.fragments is None:
            self.gpu = gpu
            self.fragments = self.files.parquet_writer(
                self.fragments_path, codec.fragments_schema(gpu), compression="snappy")
        elif gpu and not self.gpu:
            self._with_gpu_usage()
        if self.gpu and not gpu:
            fragments = fragments.append_column(codec.fragments_schema(True).field("gpu_usage"),
                                                pa.nulls(fragments.num_rows, pa.float64()))
        self.fragments.write_table(fragments)

    def _with_gpu_usage(self) -> None:
        """fragments.parquet written so far again, with a ``gpu_usage`` column (null)."""
        import pyarrow as pa

        from dcx.formats.opendc_workload import codec

        self.fragments.close()
        before = os.path.join(self.folder, _FRAGMENTS_BEFORE)
        self.files.replace(self.fragments_path, before)
        schema = codec.fragments_schema(True)
        self.fragments = self.files.parquet_writer(self.fragments_path, schema,
                                                   compression="snappy")
        self.gpu = True
        try:
            written = self.files.parquet_file(before)
            for index in range(written.num_row_groups):
                group = written.read_row_group(index)
                self.fragments.write_table(group.append_column(
                    schema.field("gpu_usage"), pa.nulls(group.num_rows, pa.float64())))
            written.close()
        finally:
            self.files.remove(before)

    def finish(self) -> None:
        """Both members complete: fragments.parquet closed, tasks.parquet the spool with
        every task's children."""

        from dcx.formats.opendc_workload import codec

        if self.fragments is None:
            self.fragments = self.files.parquet_writer(
                self.fragments_path, codec.fragments_schema(False), compression="snappy")
        self.close()
        if not self.dependencies:  # every task's children are the spool's empty lists
            self.files.replace(self.spool_path, self.tasks_path)
            return
        self._with_children()
        self.files.remove(self.spool_path)

    def _with_children(self) -> None:
        """tasks.parquet from the spool, a row group at a time, with each task's children
        (from every task's id and parents, read back as columns)."""
        import numpy as np
        import pyarrow.compute as pc

        from dcx.formats.opendc_workload import codec

        spool = self.files.parquet_file(self.spool_path)
        read = spool.read(columns=["id", "parents"])
        ids = np.asarray(read.column("id").to_numpy(), dtype=np.int32)
        parents = read.column("parents")
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.asarray(pc.fill_null(pc.list_value_length(parents), 0).to_numpy()),
                  out=offsets[1:])
        parent_ids = np.asarray(pc.list_flatten(parents).to_numpy(), dtype=np.int32)
        del read, parents
        child_offsets, child_ids = codec.children(ids, offsets, parent_ids)
        del ids, offsets, parent_ids
        position = self.schema.get_field_index("children")
        column_field = self.schema.field(position)
        with self.files.parquet_writer(self.tasks_path, self.schema,
                                       compression="snappy") as writer:
            at = 0
            for index in range(spool.num_row_groups):
                group = spool.read_row_group(index)
                end = at + group.num_rows
                first, last = int(child_offsets[at]), int(child_offsets[end])
                column = codec.list_column(child_offsets[at:end + 1] - first,
                                           child_ids[first:last])
                writer.write_table(group.set_column(position, column_field, column))
                at = end
        spool.close()

    def close(self) -> None:
        for writer in (self.tasks, self.fragments):
            if writer is not None and writer.is_open:
                writer.close()


def _first_changed_task(document: Document, normal: Document) -> str | bool | None:
    """The pointer of the first task of ``document`` that its ``normal`` form changes
    (``core.located.first_changed``), ``None`` if none, found column by column; ``False``
    when a column the normal form changed is not one compared here (then the objects
    tell)."""
    import dataclasses

    import numpy as np

    from dcx.core.columns import WorkloadColumns, columns_of

    before = columns_of(document.workload) if document.workload is not None else None
    after = columns_of(normal.workload) if normal.workload is not None else None
    if before is None or after is None or len(before) != len(after):
        return False
    changed = np.zeros(len(before), dtype=bool)
    for column in dataclasses.fields(WorkloadColumns):
        mine, theirs = getattr(before, column.name), getattr(after, column.name)
        if mine is theirs:
            continue
        if column.name in _OPTIONAL:  # (NaN is the task's None)
            changed |= ~((mine == theirs) | (np.isnan(mine) & np.isnan(theirs)))
        elif column.name in _VALUES:  # (a NaN differs from itself, as a float does)
            changed |= mine != theirs
        else:
            return False
    rows = np.flatnonzero(changed)
    if not len(rows):
        return None
    row = int(rows[0])
    job = int(np.searchsorted(before.job_offsets, row, side="right")) - 1
    return f"/workload/jobs/{job}/tasks/{row - int(before.job_offsets[job])}"


_OPTIONAL = frozenset({"runtime_s", "requested_time_s", "memory_mb", "deadline_s"})
"""Task columns whose NaN is ``None`` in the task (``WorkloadColumns.task``)."""
_VALUES = frozenset({"submit_time_s", "nodes", "cores", "gpus"})
"""Task columns whose value is the task's as it is."""


def _tasks_changed(document: Document, normal: Document) -> bool:
    """Whether the normal form changes some task of ``document`` (a normal form done
    column by column keeps the rows it does not change as they are)."""
    before, after = document.workload, normal.workload
    return before is None or after is None or after.jobs is not before.jobs


_HEADER_AFTER = ("a header line after the first chunk that changes the time origin (the "
                 "whole file's submission times count from it)")

_ANOTHER_ORIGIN = ("a chunk whose times count from another origin than the header's (a "
                   "Parquet trace with a time origin converted on Dask workers, which see "
                   "only its first row group's header: convert it without --workers)")


_VALUE_PATHS = frozenset({
    "task.submit_time_s", "task.runtime_s", "task.deadline_s", "task.request.cores",
    "task.request.memory_mb", "task.request.gpus"})
"""The held task fields whose values OpenDC's normal form may change in a chunk it converts
(``codec._normal_columns``, ``codec._normal_task``; ids it would renumber and its own extras
it would change are refused), which a chunk's losses count for the file
(``OpendcWorkloadTarget.losses``)."""
