"""SWF's stream target (``FORMAT.stream_target``): each chunk's jobs as SWF lines after the
header, in submit-time order across chunks. See ``dcx.converters.stream_convert``."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator
from typing import Any

from dcx.core.diagnostics import Loss
from dcx.core.model import Document, Workload
from dcx.core.streams import (
    CHANGED,
    TRACE_VALUE_PATHS,
    LinesTarget,
    NotStreamable,
    Source,
    changing,
)


def _after_written(lines: bytes, latest: float) -> float:
    """The last submit time of a chunk's SWF job lines (in submit-time order, as the normal
    form sorts each chunk), after checking that its first comes no earlier than ``latest``,
    the last one written: the whole file would sort such a chunk among earlier ones."""
    first = float(lines[:lines.index(b"\n")].split()[1])
    if first < latest:
        raise NotStreamable("a job submitted before a job of an earlier chunk (SWF lines are "
                            "in submit-time order)")
    last_line = lines[lines.rindex(b"\n", 0, len(lines) - 1) + 1:] \
        if lines.count(b"\n") > 1 else lines
    return float(last_line.split()[1])


class SwfTarget(LinesTarget):
    """SWF lines: the header first (a pipe's: what its first chunk holds; a header line in a
    later chunk, which the whole file would write at the top, stops the conversion). A
    file's first reading writes them after the header its first chunk gives, kept when the
    whole file's header is the same (else the file is read again)."""

    reads_back = "chunks"

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import swf

        self.spec = swf.FORMAT
        self.source = source
        self.jobs_are_rows = True
        self.value_paths = TRACE_VALUE_PATHS & self.spec.holds
        """The value paths SWF's normal form may change (the others it does not hold: its
        restriction drops every value of them, chunk by chunk as in the whole file)."""
        self.early_header: list[str] = []
        """The header lines written early (the first chunk's)."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dataclasses import replace

        from dcx.formats.swf import codec

        # a preceding job of an earlier chunk is written from extras as from a dependency
        normal, lost = codec._normalized(document)
        workload = normal.workload or Workload()
        if not len(workload.jobs):
            return b""
        if "task.id" in lost:  # the whole file numbers its jobs 1..n, not each chunk
            raise NotStreamable("job numbers SWF writes as a counter of the whole file "
                                "(text ids, or jobs the submit-time order moves)")
        jobs_only = Workload(jobs=workload.jobs)
        return codec.write(replace(document, workload=jobs_only)).data

    def rows(self, part: Any) -> int:
        return int(part.count(b"\n"))

    def losses(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]
               ) -> dict[Any, tuple[Loss, ...]]:
        """As GWF's: a value path the file's normal form changes somewhere counts every
        value of the file (``dropped_values``), so each chunk counts all of its own and says
        which it changes (the form ``CHANGED``); ``reported`` leaves out those no chunk
        changes. (A chunk alone would count a path's values only where it changes one.)"""
        from dataclasses import replace

        from dcx.core.restrict import recorded_use
        from dcx.formats.swf import codec

        normal, lost = codec._normalized(document)
        use = recorded_use(document, self.spec.name)
        claimed = lost | {path for path in self.value_paths if path in use.used}
        spec = replace(self.spec, normal_form_losses=changing(claimed))
        return {None: self.derive_losses(document, spec, normal),
                CHANGED: tuple(Loss(path, 1, "", None)
                                for path in sorted(lost & self.value_paths))}

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        not_lost = self.value_paths - frozenset(counted(CHANGED))
        return tuple(loss for loss in losses if loss.field not in not_lost)

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        from dcx.formats.swf import codec

        rows = 0
        written: list[str] | None = None
        latest = -math.inf
        with self.opened(sink) as stream:
            for data in parts:
                latest = _after_written(data, latest)
                if written is None:
                    written = codec._header(header())
                    stream.write("".join(line + "\n" for line in written).encode())
                stream.write(data)
                rows += data.count(b"\n")
            lines = codec._header(at_end())
            if written is None:
                stream.write("".join(line + "\n" for line in lines).encode())
            elif lines != written:
                raise NotStreamable("a header line after the first chunk")
        return rows

    def write_early(self, part: Any, unknown: bool) -> None:
        # (a preceding job a chunk did not know is written alike as extras or dependency)
        from dcx.formats.swf import codec

        if not part:
            return
        self.early_latest = _after_written(part, getattr(self, "early_latest", -math.inf)
                                           if self.early_begun() else -math.inf)
        if not self.early_begun():
            self.early_header = codec._header(self.source.header(self.spec))
            self.begin_early("".join(line + "\n" for line in self.early_header))
        self.write_early_lines(part, part.count(b"\n"))

    def finish_early(self, header: Workload) -> bool:
        from dcx.formats.swf import codec

        if not self.early_begun() or codec._header(header) != self.early_header:
            return False
        self.close_early()
        return True
