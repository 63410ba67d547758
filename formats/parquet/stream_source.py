"""Parquet's stream source (``FORMAT.stream_source``): a file's row groups read one at a
time for ``dcx convert`` (``dcx.converters.stream_convert``), checked as ``dcx validate``'s
part reader checks them (``stream.py``); on a Dask cluster each row group's work runs on a
worker (``dcx.converters.stream_dask``, through the methods below)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dcx.core.diagnostics import Diagnostic, ReadResult
from dcx.core.model import Workload
from dcx.core.streams import Chunk, RowGroupSource, columns_in


class ParquetSource(RowGroupSource):
    """A Parquet file's row groups (``chunks`` gives the open file, once per reading): each
    checked by ``formats.parquet.stream.check_part`` and merged by its ``finish`` (the
    diagnostics of ``dcx validate``'s part reader, which are the whole reader's), and read
    into its document by ``read_part`` (the workload's header in the first one's), its
    dependencies on tasks of other row groups kept. Those are taken out and put back as
    GWF's are; to SWF, which holds one preceding job per task, such a dependency is the
    preceding job's extras value the writer writes as it writes a dependency, and a task
    with more than one dependency, one of them in another row group, stops the conversion.
    A job whose rows continue in the next row group is read with it (each document holds
    whole jobs)."""

    def __init__(self) -> None:
        from dcx.formats import parquet

        super().__init__()
        self.spec = parquet.FORMAT

    def reads(self, chunks: Iterable[Any], check: bool) -> Iterator[Chunk]:
        for opened in chunks:
            yield from self._groups(opened, check)

    def _groups(self, opened: Any, check: bool) -> Iterator[Chunk]:
        from dcx.core.declaration import ChunkedRead
        from dcx.formats.parquet import stream

        parts, problems = stream.open_parts(opened)
        if parts is None:
            self.found = ChunkedRead(problems)
            return
        findings: list[Any] = []
        jobs, broken, carried = 0, False, None
        groups = len(parts.row_counts)
        for index in range(groups):
            if check:
                found = stream.check_part(opened, parts, index)
                if isinstance(found, Diagnostic):
                    self.found = ChunkedRead((found,))
                    return
                findings.append(found)
                broken = broken or self.stops_reading(found)
            if broken:
                continue  # an invalid file: finish says why
            # the header goes with the first document that has jobs (its losses once)
            read, carried = stream.read_part(opened, index, not jobs, carried,
                                             last=index == groups - 1)
            if read.document is None:
                broken = True
                continue
            workload = read.document.workload or Workload()
            count = len(columns_in(workload).job_ids)
            if count and not jobs:
                from dataclasses import replace

                self.header_read = replace(workload, jobs=())
            if count:
                yield Chunk(read, 1, jobs)
                jobs += count
        if check:
            self.found = stream.finish(parts, findings,
                                       lambda index: stream.reread_dependencies(opened, index))

    @staticmethod
    def stops_reading(found: Any) -> bool:
        """Whether a row group's findings make the file invalid where its rows are read (a
        null, NaN, text that is not JSON): the row groups from there on are only checked."""
        return bool(found.nulls or found.null_dependencies or found.nan or found.extras_json
                    or found.null_feature is not None)

    def open_parts(self, opened: Any) -> tuple[Any, tuple[Diagnostic, ...]]:
        from dcx.formats.parquet import stream

        return stream.open_parts(opened)

    def check_part(self, opened: Any, parts: Any, index: int) -> Any:
        from dcx.formats.parquet import stream

        return stream.check_part(opened, parts, index)

    def finish_parts(self, parts: Any, findings: list[Any], opened: Any) -> Any:
        from dcx.formats.parquet import stream

        return stream.finish(parts, findings,
                             lambda index: stream.reread_dependencies(opened, index))

    def read_group(self, opened: Any, parts: Any, index: int
                   ) -> tuple[ReadResult | None, bool]:
        """Row group ``index`` read on its own as ``reads`` reads it after the ones before
        (with the rows of a job begun in them), and whether it is the first with jobs;
        ``None`` when it cannot be read."""
        from dcx.formats.parquet import stream

        carried, first = stream.rows_carried_into(opened, parts, index)
        if carried is False:
            return None, first
        read, _ = stream.read_part(opened, index, first, carried,
                                   last=index == len(parts.row_counts) - 1)
        return read, first
