"""GWF's stream target (``FORMAT.stream_target``): each chunk's tasks as GWF lines after the
header line of the file's variant. See ``dcx.converters.stream_convert``."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from dcx.core.diagnostics import Loss
from dcx.core.model import Document, Workload
from dcx.core.streams import (
    CHANGED,
    TRACE_VALUE_PATHS,
    LinesTarget,
    NotStreamable,
    Source,
    changing,
    with_dependencies_back,
    with_header_losses,
)

if TYPE_CHECKING:
    from dcx.formats.gwf.codec import Variant


class GwfTarget(LinesTarget):
    """GWF task lines, after the header line of the file's variant (``codec.write_part``):
    the variant ``codec.variant_for`` the unions of the chunks' ``codec.variant_fields``
    (a dependency on a task of another chunk counted with its chunk, as the whole file
    counts it), as the whole file's are one set. A file's is known from its first reading,
    which writes in its first chunk's variant and is kept when the whole file's turns out
    the same (else the file is read again); a pipe's is its first chunk's, and a later
    chunk that makes the file the other stops the conversion. A chunk's losses are measured
    in both variants until the file's is known (``losses``), with its dependencies on tasks
    of other chunks; a preceding job (SWF) the first reading did not know, which turns out
    to be a job of the file, is a dependency its chunk's losses did not have: a second
    reading measures them again (``measures_again``)."""

    reads_back = "chunks"
    loses_unknown_otherwise = True

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import gwf

        self.spec = gwf.FORMAT
        self.source = source
        self.dependencies_across = True
        self.observes = True
        self.variant: Variant | None = None
        """The file's variant, once the first reading has seen every chunk."""
        self.only_archive: frozenset[str] = frozenset()
        self.only_workflow: frozenset[str] = frozenset()
        """The unions of the chunks' ``codec.variant_fields`` so far."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dcx.core.columns import columns_of
        from dcx.formats.gwf import codec

        restored = with_dependencies_back(document, earlier)
        workload = restored.workload or Workload()
        columns = columns_of(workload)
        tasks = len(columns) if columns is not None else sum(len(job.tasks)
                                                             for job in workload.jobs)
        return restored, codec.variant_fields(workload), tasks

    def rows(self, part: Any) -> int:
        return int(part[2])

    def losses(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]
               ) -> dict[Any, tuple[Loss, ...]]:
        from dataclasses import replace

        from dcx.core.restrict import recorded_use
        from dcx.formats.gwf import codec

        restored = with_dependencies_back(document, earlier)
        use = recorded_use(restored, self.spec.name)
        value_paths = TRACE_VALUE_PATHS & self.spec.holds
        used = {path for path in value_paths if path in use.used or path in use.foreign}
        found: dict[Any, tuple[Loss, ...]] = {}
        for variant in (self.variant,) if self.variant is not None else ("workflow", "archive"):
            normal, lost = codec.part_normal_form(restored, variant)
            # a path whose values the file's normal form changes counts every value of it,
            # changed or not (``dropped_values``): each chunk counts its own, and says which
            # it changes (the form ``(CHANGED, variant)``); those the file's normal form
            # changes nowhere are left out at the end (``reported``)
            claimed = lost | used
            spec = replace(self.spec, normal_form_losses=changing(claimed))
            found[variant] = self.derive_losses(restored, spec, normal)
            found[CHANGED, variant] = tuple(Loss(path, 1, "", None)
                                             for path in sorted(lost & value_paths))
        return found

    def measured_as(self) -> Any:
        return self.variant

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        """Without the value paths the file's normal form changes nowhere, and with the
        workload's own fields as the header the whole input gives loses them (each chunk
        has the header lines it holds; the whole file one workload of them all)."""
        return with_header_losses(self, losses, (TRACE_VALUE_PATHS & self.spec.holds) - frozenset(
            counted((CHANGED, self.variant))))

    def _add(self, fields: tuple[frozenset[str], frozenset[str]]) -> Variant:
        """The variant of the chunks so far, with one more chunk's ``fields``."""
        from dcx.formats.gwf import codec

        self.only_archive |= fields[0]
        self.only_workflow |= fields[1]
        return codec.variant_for(self.only_archive, self.only_workflow)

    def observe(self, part: Any, unknown: list[Any]) -> None:
        self._add(part[1])

    def resolved(self, in_file: Callable[[Any], bool]) -> None:
        from dcx.formats.gwf import codec

        # a preceding job the first reading did not know, a job of the file after all, is a
        # dependency (what only the workflow variant holds)
        if self.unknown_in_file:
            self.only_workflow |= {"task.dependencies"}
        self.variant = codec.variant_for(self.only_archive, self.only_workflow)

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        from dcx.formats.gwf import codec

        rows = 0
        variant: Variant | None = self.variant
        piped = variant is None
        with self.opened(sink) as stream:
            for document, fields, count in parts:
                if piped:  # a pipe: written in its first chunk's variant
                    so_far = self._add(fields)
                    variant = so_far if variant is None else variant
                assert variant is not None
                if not rows:
                    stream.write((codec.header_line(variant) + "\n").encode())
                stream.write(codec.write_part(document, variant))
                rows += count
            if piped:
                self.variant = codec.variant_for(self.only_archive, self.only_workflow)
                if variant is not None and self.variant != variant:
                    raise NotStreamable(
                        "a task that only the archive variant holds after the first chunk "
                        "(the whole file is written in that variant)" if variant == "workflow"
                        else "a dependency or a workflow of several tasks after the first "
                        "chunk, which make the file the workflow variant (the whole file "
                        "is written in that variant)")
            at_end()
            if not rows:
                stream.write((codec.header_line(self.variant or "workflow") + "\n").encode())
        return rows

    early_variant: Variant | None = None

    def write_early(self, part: Any, unknown: bool) -> None:
        from dcx.formats.gwf import codec

        document, _, count = part
        if not count:
            return
        if not self.early_begun():  # the variant of the chunks so far (observed)
            self.early_variant = codec.variant_for(self.only_archive, self.only_workflow)
            self.begin_early(codec.header_line(self.early_variant) + "\n")
        assert self.early_variant is not None
        self.write_early_lines(codec.write_part(document, self.early_variant), count)

    def finish_early(self, header: Workload) -> bool:
        # (a preceding job met before its line is a dependency the early lines lack)
        if not self.early_begun() or self.early_variant != self.variant \
                or self.unknown_in_file:
            return False
        self.close_early()
        return True
