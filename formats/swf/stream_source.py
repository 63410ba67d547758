"""SWF's stream source (``FORMAT.stream_source``): a trace read a chunk of whole lines at a
time for ``dcx convert`` (``dcx.converters.stream_convert``), each chunk checked by the chunked
reader (``stream.py``) and read as the whole file reads it (``codec.read_rows``); a preceding
job another chunk holds becomes the dependency the whole file makes of it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import has_errors
from dcx.core.model import Document, Task, Workload
from dcx.core.streams import PRECEDING_KEY, Chunk, Source, tasks_taken_out


class SwfSource(Source):
    later_in_pipe = "a job whose preceding job comes later in the trace"
    preceding_as_extras = True

    def __init__(self) -> None:
        from dcx.formats import swf
        from dcx.formats.swf import stream as swf_stream

        self.spec = swf.FORMAT
        self.checked = swf_stream._Stream()

    def reads(self, chunks: Iterable[bytes], check: bool) -> Iterator[Chunk]:
        return _chunk_reads(chunks, self.checked if check else None)

    def cross_chunk(self, document: Document, later: list[Any]
                    ) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:
        """A preceding job that the checker has seen (in another chunk) is the dependency
        the whole file makes of it, where the chunk alone keeps an extras value (it does
        not know the job); the preceding jobs not seen are added to ``later``: a pipe's
        conversion stops if one of them comes later in the trace after all."""
        from dataclasses import replace

        from dcx.core.columns import columns_of

        workload = document.workload
        if workload is None:
            return document, {}
        columns = columns_of(workload)
        if columns is not None:
            return self._columns_cross_chunk(document, workload, columns, later)
        if not any(PRECEDING_KEY in task.extras for job in workload.jobs for task in job.tasks):
            return document, {}

        def taken_out(task: Task) -> tuple[Task, list[tuple[int, Any]] | None]:
            number = task.extras.get(PRECEDING_KEY)
            if number is not None and self.in_file(number):
                # (a task with a preceding job extras value has no dependency)
                return replace(task, extras={key: value for key, value in task.extras.items()
                                             if key != PRECEDING_KEY}), \
                    [(len(task.dependencies), number)]
            if number is not None:
                later.append(number)
            return task, None

        return tasks_taken_out(document, workload, taken_out)

    def _columns_cross_chunk(self, document: Document, workload: Workload, columns: Any,
                             later: list[Any]
                             ) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:
        """``cross_chunk`` of a chunk read as columns, whose preceding jobs outside it are
        an extras column (``codec.read_rows``)."""
        from dataclasses import replace

        import numpy as np

        from dcx.core.columns import ExtraColumn, JobRows

        column = columns.extras.get(PRECEDING_KEY)
        if column is None:
            return document, {}
        rows = np.flatnonzero(column.present)
        numbers = column.values[rows].tolist()
        known = [self.in_file(number) for number in numbers]
        later.extend(number for number, found in zip(numbers, known, strict=True) if not found)
        if not any(known):
            return document, {}
        # (a row with a preceding job extras value has no dependency: it goes first)
        earlier = {int(row): [(0, number)] for row, number, found
                   in zip(rows.tolist(), numbers, known, strict=True) if found}
        present = column.present.copy()
        present[list(earlier)] = False
        extras = dict(columns.extras)
        if present.any():
            extras[PRECEDING_KEY] = ExtraColumn(column.values, present, column.integral)
        else:
            del extras[PRECEDING_KEY]
        stripped = replace(columns, extras=extras)
        return replace(document, workload=replace(workload, jobs=JobRows(stripped))), earlier

    def in_file(self, number: Any) -> bool:
        return any(_holds(held, number) for held in self.checked.ids)

    def header(self, spec: FormatDeclaration) -> Workload:
        """The workload's header (name, origin, attributes, comments) that the SWF header
        lines read so far give, in ``spec``'s normal form."""
        document = Document(workload=self.checked.header.workload(()))
        if spec.normal_form is not None:
            document = spec.normal_form(document)
        return document.workload or Workload()

    def pipe_extras(self) -> tuple[tuple[str, Any], ...]:
        import pyarrow as pa

        from dcx.formats.swf import codec as swf_codec

        return tuple((key, pa.int64() if key.removeprefix("swf:") in swf_codec._INTEGERS
                      else pa.float64()) for key in _swf_extras_keys())


def _chunk_reads(chunks: Iterable[bytes], checked: Any) -> Iterator[Chunk]:
    """``SwfSource.reads``: each SWF chunk with jobs or header lines, read by the whole-file
    reader after the chunked reader ``checked`` (when given) has checked it."""
    from dcx.formats.swf import codec

    line, jobs, broken = 1, 0, False
    for chunk in chunks:
        rows = None
        if checked is not None:
            checked.add(chunk)
            if checked.encoding is not None:
                return
            rows = checked.chunk_rows
        # (the chunked reader has counted the chunk's lines)
        first_line, line = line, (checked.next_line if checked is not None
                                  else line + chunk.count(b"\n"))
        if broken or chunk.isspace():
            continue
        read = codec.read_rows(chunk, rows, first_line - 1)  # (each chunk parsed once)
        if read.document is None or has_errors(read.diagnostics):
            broken = True  # the chunked reader says why
            continue
        yield Chunk(read, first_line, jobs)
        workload = read.document.workload
        jobs += len(workload.jobs) if workload is not None else 0


def _holds(held: Any, number: Any) -> bool:
    if isinstance(held, range):
        return type(number) is int and number in held
    return bool((held == number).any())


def _swf_extras_keys() -> tuple[str, ...]:
    """Every ``swf:`` task extras key the SWF reader makes, in its columns' order."""
    from dcx.formats.swf import codec as swf_codec

    return (swf_codec._ALLOCATED_KEY, swf_codec._REQUESTED_KEY,
            *("swf:" + name for name in swf_codec._EXTRA_COLUMNS), swf_codec._PRECEDING_KEY)
