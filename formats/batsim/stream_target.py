"""Batsim's stream target (``FORMAT.stream_target``): a Batsim workload written a chunk of
jobs at a time, byte for byte what the whole-file conversion writes. ``nb_res`` (the largest
``res``) goes before the jobs and the profiles they name after them, so neither is known
when the first job is: each part's job lines go to a temporary file beside OUTPUT (for
standard output, in the temporary directory), and the output is assembled once the input is
all read. See ``dcx.converters.stream_convert``."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Any

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss
from dcx.core.model import Document, Workload
from dcx.core.streams import (
    CHANGED,
    JsonTarget,
    NotStreamable,
    Refuse,
    Source,
    regrouped_ends,
    with_dependencies_back,
    with_header_losses,
)


class _Spool:
    """Job lines kept in a temporary file until what goes before them is known, with the
    largest ``res`` and the profiles they name."""

    def __init__(self, target: BatsimTarget, beside: str | None) -> None:
        self.target, self.files = target, target.files
        self.path, self.stream = self.files.spool(beside, ".batsim-jobs")
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
        with self.target.opened(sink) as out:
            out.write(codec.head_text(codec.head_root(self.nb_res, header)).encode())
            if self.jobs:
                out.write(codec.JOBS_OPEN.encode())
                with self.files.read(self.path) as jobs:
                    while block := jobs.read(1 << 20):
                        out.write(block)
                out.write(codec.JOBS_CLOSE.encode())
            else:
                out.write(codec.NO_JOBS.encode())
            out.write(codec.profiles_text(self.profiles).encode())

    def close(self) -> None:
        self.stream.close()
        self.files.remove(self.path)


class BatsimTarget(JsonTarget):
    """Batsim job lines spooled a chunk at a time and assembled at the end (see the module
    docstring)."""

    reads_back = "whole"
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

        from dcx.core.restrict import recorded_use
        from dcx.formats.batsim import codec

        problem = codec.part_problem(document)
        if problem is not None:
            raise NotStreamable(problem)
        restored = with_dependencies_back(document, earlier)
        normal, lost = codec.part_normal_form(restored)
        self.normal = (document, normal)
        use = recorded_use(restored, self.spec.name)
        claimed = lost | {path for path in _VALUE_PATHS if path in use.used}
        spec = replace(self.spec, normal_form_losses=lambda _: claimed)
        # the value paths this chunk's normal form changes, as the form CHANGED
        return {None: self.derive_losses(restored, spec, normal),
                CHANGED: tuple(Loss(path, 1, "", None) for path in sorted(lost & _VALUE_PATHS))}

    def cut_ends(self, document: Document, counted: bool) -> tuple[bool, bool, int]:
        """In the normal form, whose jobs are counted: a job whose every task this chunk
        holds is left out is neither the chunk's first nor its last."""

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
        return with_header_losses(self, losses, _VALUE_PATHS - frozenset(counted(CHANGED)))

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

    def refusal(self, source: FormatDeclaration, verdict: Any, refuse: Refuse
                ) -> Diagnostic | None:
        """The whole-file path's ``convert.nothing-held``: no task has a positive runtime."""
        from dataclasses import replace

        from dcx.core.model import Job, Task
        from dcx.formats.batsim import codec

        tasks = verdict.tasks if verdict.tasks is not None else verdict.jobs
        if self.written or not tasks:
            return None
        # the whole path's rule and words, for a stand-in that keeps none of one task, told
        # how many of the input's tasks it leaves out
        told = replace(self.spec, leaves_out=lambda _: codec.left_out_reason(tasks, tasks))
        stand_in = Document(workload=Workload(jobs=(Job(id=1, tasks=(Task(id=1),)),)))
        return refuse(stand_in, Document(workload=Workload()), source.name, told)

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        spool = _Spool(self, sink if isinstance(sink, str) else None)
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
        self.spool = _Spool(self, path)

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

_VALUE_PATHS = frozenset({
    "task.submit_time_s", "task.runtime_s", "task.requested_time_s", "task.request.nodes",
    "workload.attributes"})
"""The held field paths whose values Batsim's normal form may change in a chunk it converts
(``codec._Normalizer``; the ids it would change are refused), which a chunk's losses count
for the file (``BatsimTarget.losses``); the workload's come from the header
(``BatsimTarget.reported``)."""
