"""osp-workload's stream target (``FORMAT.stream_target``): the header's members (name,
``date_start``, which every ``ts_submit`` counts from) written before the workflows, known
from the first chunk, then the workflows as they come (a file whose later chunk holds a
header line is read again; a pipe stops), a GWF workflow cut between chunks kept one
workflow. See ``dcx.converters.stream_convert``."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Any

from dcx.core.diagnostics import Loss
from dcx.core.model import Document, Workload
from dcx.core.streams import (
    CHANGED,
    JsonTarget,
    NotStreamable,
    Source,
    with_header_losses,
)


class OspWorkloadTarget(JsonTarget):
    """osp-workload workflows written a chunk at a time after the root's members (the
    header's, known from the first chunk; see the module docstring)."""

    reads_back = "whole"
    loses_unknown_otherwise = True

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import osp_workload

        self.spec = osp_workload.FORMAT
        self.source = source
        self.dependencies_across = True
        self.observes = True
        self.stitches = source.jobs_continue
        """A chunk's first workflow with the id of the last one written continues it (GWF:
        a workflow cut between chunks; others hold whole jobs, SWF one task each)."""
        self.normal: tuple[Document | None, Document] = (None, Document())
        """The last chunk's document whose losses were measured, and its normal form."""
        self.early: _Workflows | None = None

    def origin(self) -> str | None:
        """The time origin of the header read so far, which every chunk's times count from."""
        return self.header(self.source).time_origin

    def losses(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]
               ) -> dict[Any, tuple[Loss, ...]]:
        """The chunk's losses (its dependencies on tasks of other chunks are kept: they are
        not counted). A held path whose values the normal form of some chunk changes counts
        every value of it in the whole file (``dropped_values``): each chunk counts its own;
        those no chunk changes are left out at the end (``reported``)."""
        from dataclasses import replace

        from dcx.core.restrict import recorded_use
        from dcx.formats.osp_workload import codec

        normal, lost = codec.part_normal_form(document, self.origin())
        if lost & {"task.extras", "job.extras"}:
            raise NotStreamable("task or workflow keys osp-workload cannot write as they are "
                                "(the whole file's losses count them all)")
        self.normal = (document, normal)
        use = recorded_use(document, self.spec.name)
        claimed = lost | {path for path in _OSP_VALUE_PATHS if path in use.used}
        spec = replace(self.spec, normal_form_losses=lambda _: claimed)
        return {None: self.derive_losses(document, spec, normal),
                CHANGED: tuple(Loss(path, 1, "", None)
                                for path in sorted(lost & _OSP_VALUE_PATHS))}

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        return with_header_losses(self, losses, _OSP_VALUE_PATHS - frozenset(counted(CHANGED)))

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dcx.formats.osp_workload import codec

        origin = self.origin()
        made, normal = self.normal
        if made is not document or (normal.workload is not None
                                    and normal.workload.time_origin != origin):
            normal = codec.part_normal_form(document, origin)[0]
        workflows = codec.write_part(normal, earlier)
        if isinstance(workflows, str):
            raise NotStreamable(f"the osp-workload writer refuses a chunk's workflows: "
                                f"{workflows}")
        # (the origin its times count from: a worker that converts a Parquet row group on
        # Dask has no header but the first row group's)
        return workflows, sum(len(workflow.tasks) for workflow in workflows), origin

    def rows(self, part: Any) -> int:
        return int(part[1])


    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        from dcx.formats.osp_workload import codec

        rows = 0
        with self.opened(sink) as stream:
            written: _Workflows | None = None
            for workflows, count, origin in parts:
                if written is None:
                    first = header()
                    written = _Workflows(stream, codec.head_text(first), self.stitches,
                                         first.time_origin)
                if origin != written.origin:
                    raise NotStreamable(_HEADER_AFTER if self.origin() != written.origin
                                        else _ANOTHER_ORIGIN)
                written.add(workflows)
                rows += count
            head = codec.head_text(at_end())
            if written is None:
                written = _Workflows(stream, head, self.stitches, None)
            elif written.head != head:
                raise NotStreamable(_HEADER_AFTER)
            written.finish()
        return rows

    writes_early = True

    def start_early(self, path: str) -> None:
        self.early_path: str | None = path

    def write_early(self, part: Any, unknown: bool) -> None:
        from dcx.formats.osp_workload import codec

        workflows, count, origin = part
        if not count or self.early_path is None:
            return
        if self.early is None:
            header = self.header(self.source)
            stream = self.files.create(self.early_path)
            self.early = _Workflows(stream, codec.head_text(header), self.stitches,
                                    header.time_origin)
        if origin != self.early.origin:  # the second reading writes (or says why not)
            self.close_early()
            self.early_path = None
            return
        self.early.add(workflows)
        self.early_rows += count

    def finish_early(self, header: Workload) -> bool:
        from dcx.formats.osp_workload import codec

        # (a preceding job met before its line is a dependency the early parts lack; a
        # header line after the first chunk changes what comes first)
        early = self.early
        if early is None or self.unknown_in_file or early.head != codec.head_text(header):
            return False
        early.finish()
        self.close_early()
        return True

    def close_early(self) -> None:
        early, self.early = self.early, None
        if early is not None:
            early.stream.close()

class _Workflows:
    """osp-workload's text written a chunk of workflows at a time (``codec.write_part``):
    the root's head first, a workflow continued in the next chunk kept open."""

    def __init__(self, stream: Any, head: str, stitches: bool, origin: str | None) -> None:
        from dcx.formats.osp_workload import codec

        self.codec = codec  # (imported once, not once per workflow)
        self.stream, self.head, self.stitches = stream, head, stitches
        self.origin = origin
        """The time origin of the head (``date_start``), which every part's times count
        from."""
        stream.write(head.encode())
        self.count = 0
        self.open: Any = _CLOSED
        """The id of the workflow last written, while its tasks list is open."""
        self.tasks = False
        """That workflow has tasks written."""

    def add(self, workflows: list[Any]) -> None:
        codec = self.codec
        pieces: list[str] = []  # (one write per chunk, not a few per workflow)
        emit = pieces.append
        for index, workflow in enumerate(workflows):
            if index == 0 and self.stitches and self.count and workflow.id == self.open:
                if workflow.tasks:
                    emit((",\n" if self.tasks else codec.TASKS_OPEN)
                         + ",\n".join(workflow.tasks))
                    self.tasks = True
                continue
            emit(self._closing())
            emit((codec.WORKFLOW_SEPARATOR if self.count else "[\n") + workflow.head)
            self.count += 1
            self.open, self.tasks = workflow.id, bool(workflow.tasks)
            if workflow.tasks:
                emit(codec.TASKS_OPEN + ",\n".join(workflow.tasks))
        self.stream.write("".join(pieces).encode())

    def _closing(self) -> str:
        """The text that closes the workflow last written while its tasks list is open
        (then closed), else nothing."""
        if self.count and self.open is not _CLOSED:
            self.open = _CLOSED
            return self.codec.TASKS_CLOSE if self.tasks else self.codec.NO_TASKS
        return ""

    def close(self) -> None:
        self.stream.write(self._closing().encode())

    def finish(self) -> None:
        self.close()
        self.stream.write((self.codec.WORKFLOWS_CLOSE if self.count
                           else self.codec.NO_WORKFLOWS).encode())


_HEADER_AFTER = "a header line after the first chunk (the whole file writes it at the top)"


_ANOTHER_ORIGIN = ("a chunk whose times count from another origin than the header's (a "
                   "Parquet trace with a time origin converted on Dask workers, which see "
                   "only its first row group's header: convert it without --workers)")


_CLOSED = object()
"""``_Workflows.open`` once the last workflow written is closed."""


_OSP_VALUE_PATHS = frozenset({
    "task.submit_time_s", "task.runtime_s", "task.request.cores", "task.used_memory_mb",
    "task.dependencies"})
"""The held task fields whose values osp-workload's normal form may change in a chunk it
converts (``codec._TaskNormalizer``; ids it would change and extras keys it cannot write are
refused), which a chunk's losses count for the file (``OspWorkloadTarget.losses``)."""
