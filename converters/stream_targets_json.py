"""JSON targets of ``dcx.converters.stream_convert``: a Batsim workload and an osp-workload
file written a chunk of jobs at a time (see the engine's module docstring for what every
target shares), byte for byte what the whole-file conversion writes.

A Batsim workload writes ``nb_res`` (the largest ``res``) before its jobs and the profiles
they name after them, so neither is known when the first job is: each part's job lines go to
a temporary file beside OUTPUT (for standard output, in the temporary directory), and the
output is assembled once the input is all read (``nb_res`` and the header's attributes, the
jobs copied from that file, the delay profiles in the order the jobs first named them).
Memory holds one chunk and one profile per distinct runtime. An osp-workload file writes
the header's members (name, ``date_start``, which every ``ts_submit`` counts from) before
its workflows: they are known from the first chunk, so the workflows are written as they
come (a file whose later chunk holds a header line is read again; a pipe stops), a GWF
workflow cut between chunks kept one workflow. A file is read once either way, a pipe too.

Losses are counted on each chunk's document as the whole file has it: Batsim holds no
dependencies, so one on a task of another chunk is put back before they are (a
``task.dependencies`` loss there too); a held path whose values the normal form of some
chunk changes is counted in every chunk, as the whole file counts every value of it, and
left out at the end when no chunk changes one; the workload's fields are the header's.
What a chunk cannot decide alone stops the conversion (``convert.not-streamable``): ids the
whole file would renumber, ``batsim:`` data a Parquet trace kept (profile names, Batsim's
``nb_res``), keys osp-workload cannot write, and in a pipe a preceding job that comes later
in the trace. In a file, such a job is a dependency where its chunk kept an extras value:
the file is read again to measure the losses (and, to osp-workload, to write).

The output is read back under the target's reader, whole, as ``dcx validate`` reads it, when
it is within the input size limit (``dcx validate`` refuses a larger one); a larger output
is written without that check: each part is the codec's ``write_part``, the whole-file
writer's text, which the differential tests hold to it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator
from typing import Any

from dcx.converters.stream_sources import NotStreamable, Source
from dcx.converters.stream_targets import (
    Target,
    _restored,
    binary,
    judged,
    with_header_losses,
)
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss
from dcx.core.model import Document, Workload


class _Spool:
    """Job lines kept in a temporary file until what goes before them is known, with the
    largest ``res`` and the profiles they name."""

    def __init__(self, beside: str | None) -> None:
        folder = os.path.dirname(os.path.realpath(beside)) if beside is not None else None
        handle, self.path = tempfile.mkstemp(prefix=".dcx-batsim.", suffix=".jobs",
                                             dir=folder)
        self.stream: Any = os.fdopen(handle, "wb")
        self.jobs = 0
        self.nb_res = 1
        self.profiles: dict[str, Any] = {}

    def add(self, part: Any) -> None:
        from dcx.formats.batsim import codec

        if not part.jobs:
            return
        text = codec.JOB_SEPARATOR.join(part.jobs)
        self.stream.write(((codec.JOB_SEPARATOR if self.jobs else "") + text).encode())
        self.jobs += len(part.jobs)
        self.nb_res = max(self.nb_res, part.nb_res)
        for name, definition in part.profiles.items():
            self.profiles.setdefault(name, definition)

    def assemble(self, sink: Any, header: Workload) -> None:
        """The whole output to ``sink`` (a path or an open binary stream)."""
        from dcx.formats.batsim import codec

        self.stream.close()
        with binary(sink) as out:
            out.write(codec.head_text(codec.head_root(self.nb_res, header)).encode())
            if self.jobs:
                out.write(codec.JOBS_OPEN.encode())
                with open(self.path, "rb") as jobs:
                    shutil.copyfileobj(jobs, out, 1 << 20)
                out.write(codec.JOBS_CLOSE.encode())
            else:
                out.write(codec.NO_JOBS.encode())
            out.write(codec.profiles_text(self.profiles).encode())

    def close(self) -> None:
        self.stream.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


class _JsonTarget(Target):
    """What the JSON targets share: the source whose header gives the workload's losses."""

    source: Source


class BatsimTarget(_JsonTarget):
    """Batsim job lines spooled a chunk at a time and assembled at the end (see the module
    docstring)."""

    sources = frozenset({"swf", "gwf", "parquet", "opendc-workload"})
    loses_unknown_otherwise = True

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import batsim

        self.spec = batsim.FORMAT
        self.source = source
        self.dependencies_across = True
        self.observes = True
        self.jobs_are_rows = True
        self.reopenable = reopenable
        self.written = 0
        """Jobs written by the parts of the first reading (the whole input's)."""
        self.spool: _Spool | None = None
        self.normal: tuple[Document | None, Document] = (None, Document())
        """The last chunk's document whose losses were measured, and its normal form."""

    def losses(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]
               ) -> dict[Any, tuple[Loss, ...]]:
        """The chunk's losses with its dependencies on tasks of other chunks (Batsim holds
        none: they are lost, as in the whole file). A held path whose values the normal
        form of some chunk changes counts every value of it in the whole file
        (``dropped_values``): each chunk counts its own; those no chunk changes are left out
        at the end (``reported``)."""
        from dataclasses import replace

        from dcx.converters.losses import conversion_losses
        from dcx.core.restrict import recorded_use
        from dcx.formats.batsim import codec

        problem = codec.part_problem(document)
        if problem is not None:
            raise NotStreamable(problem)
        restored = _restored(document, earlier)
        normal, lost = codec.part_normal_form(restored)
        self.normal = (document, normal)
        use = recorded_use(restored, self.spec.name)
        claimed = lost | {path for path in _VALUE_PATHS if path in use.used}
        spec = replace(self.spec, normal_form_losses=lambda _: claimed)
        # the value paths this chunk's normal form changes, as the form _CHANGED
        return {None: conversion_losses(restored, spec, normal),
                _CHANGED: tuple(Loss(path, 1, "", None) for path in sorted(lost & _VALUE_PATHS))}

    def cut_ends(self, document: Document, counted: bool) -> tuple[bool, bool, int]:
        """In the normal form, whose jobs are counted: a job whose every task this chunk
        holds is left out is neither the chunk's first nor its last."""
        from dcx.converters.stream_sources import regrouped_ends

        workload = document.workload
        jobs = workload.jobs if workload is not None else ()
        made, normal = self.normal
        assert made is document
        kept = normal.workload.jobs if normal.workload is not None else ()
        if not counted or not len(kept):
            return False, False, len(jobs)
        first, last, _ = regrouped_ends(normal)
        return (first and kept[0].id == jobs[0].id, last and kept[-1].id == jobs[-1].id,
                len(jobs))

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        return with_header_losses(self, losses, _VALUE_PATHS - frozenset(counted(_CHANGED)))

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dcx.formats.batsim import codec

        # the normal form the losses made of this document, when they did (its dependencies
        # back, which Batsim does not write)
        made, normal = self.normal
        if made is not document:
            normal = codec.part_normal_form(document)[0]
        return codec.write_part(normal)

    def rows(self, part: Any) -> int:
        return len(part.jobs)

    def observe(self, part: Any, unknown: list[Any]) -> None:
        self.written += len(part.jobs)

    def refusal(self, source: FormatDeclaration, verdict: Any) -> Diagnostic | None:
        """The whole-file path's ``convert.nothing-held``: no task has a positive runtime."""
        from dataclasses import replace

        from dcx.converters.convert import refusal
        from dcx.core.model import Job, Task
        from dcx.formats.batsim import codec

        tasks = verdict.tasks if verdict.tasks is not None else verdict.jobs
        if self.written or not tasks:
            return None
        # the whole path's rule and words, for a stand-in that keeps none of one task, told
        # how many of the input's tasks it leaves out
        told = replace(self.spec, leaves_out=lambda _: codec.left_out_reason(tasks, tasks))
        stand_in = Document(workload=Workload(jobs=(Job(id=1, tasks=(Task(id=1),)),)))
        return refusal(stand_in, Document(workload=Workload()), source.name, told)

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        spool = _Spool(sink if isinstance(sink, str) else None)
        try:
            for part in parts:
                spool.add(part)
                if not self.reopenable:
                    self.written += len(part.jobs)
            spool.assemble(sink, at_end())
        finally:
            spool.close()
        return spool.jobs

    writes_early = True

    def start_early(self, path: str) -> None:
        self.early_path = path
        self.spool = _Spool(path)

    def write_early(self, part: Any, unknown: bool) -> None:
        assert self.spool is not None
        self.spool.add(part)
        self.early_rows += len(part.jobs)

    def finish_early(self, header: Workload) -> bool:
        assert self.spool is not None
        self.spool.assemble(self.early_path, header)
        self.close_early()
        return True

    def close_early(self) -> None:
        spool, self.spool = self.spool, None
        if spool is not None:
            spool.close()

    def read_back(self, path: str) -> Diagnostic | None:
        return _read_back_whole(self, path)


class OspWorkloadTarget(_JsonTarget):
    """osp-workload workflows written a chunk at a time after the root's members (the
    header's, known from the first chunk; see the module docstring)."""

    sources = frozenset({"swf", "gwf", "parquet", "opendc-workload"})
    loses_unknown_otherwise = True

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.converters.stream_sources import GwfSource
        from dcx.formats import osp_workload

        self.spec = osp_workload.FORMAT
        self.source = source
        self.dependencies_across = True
        self.observes = True
        self.stitches = isinstance(source, GwfSource)
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

        from dcx.converters.losses import conversion_losses
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
        return {None: conversion_losses(document, spec, normal),
                _CHANGED: tuple(Loss(path, 1, "", None)
                                for path in sorted(lost & _OSP_VALUE_PATHS))}

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        return with_header_losses(self, losses, _OSP_VALUE_PATHS - frozenset(counted(_CHANGED)))

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
        with binary(sink) as stream:
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
            stream = open(self.early_path, "wb")  # noqa: SIM115 (close_early)
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

    def read_back(self, path: str) -> Diagnostic | None:
        return _read_back_whole(self, path)


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


def _read_back_whole(target: Target, path: str) -> Diagnostic | None:
    """Why the output at ``path`` is not accepted by its format's reader, read whole, if it
    is not; an output over the input size limit is not read (see the module docstring)."""
    from dcx.core.limits import LIMITS

    if os.path.getsize(path) > LIMITS.max_input_bytes:
        return None
    with open(path, "rb") as stream:
        found = target.spec.read(stream.read())
    return judged(target, found.diagnostics, found.document is None)


_CHANGED = "changed"
"""``BatsimTarget.losses``' form holding the value paths a chunk's normal form changes."""

_VALUE_PATHS = frozenset({
    "task.submit_time_s", "task.runtime_s", "task.requested_time_s", "task.request.nodes",
    "workload.attributes"})
"""The held field paths whose values Batsim's normal form may change in a chunk it converts
(``codec._Normalizer``; the ids it would change are refused), which a chunk's losses count
for the file (``BatsimTarget.losses``); the workload's come from the header
(``BatsimTarget.reported``)."""

_OSP_VALUE_PATHS = frozenset({
    "task.submit_time_s", "task.runtime_s", "task.request.cores", "task.request.memory_mb",
    "task.dependencies"})
"""The held task fields whose values osp-workload's normal form may change in a chunk it
converts (``codec._TaskNormalizer``; ids it would change and extras keys it cannot write are
refused), which a chunk's losses count for the file (``OspWorkloadTarget.losses``)."""
