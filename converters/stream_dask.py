"""``dcx convert`` of a large file read by seeking (a Parquet file: its format declares a
part reader and a ``dcx.core.streams.RowGroupSource`` as its stream source) on a Dask cluster
(``--workers N``, ``--scheduler-address``): the per-row-group work of
``dcx.converters.stream_convert`` done by the workers, with the in-process conversion's
outcome.

Each row group is two tasks, each opening the file by its path: ``check_group`` (the findings
the source's ``check_part`` gives, as ``dcx validate`` checks partitions) and
``convert_group`` (the chunk the source would read with that row group, its ``read_group``,
its document's losses and the target's part: ``stream_chunks.chunk_work``). The chunk of row
group ``i`` is
the one the in-process reading gives: its rows from the start of the last job begun before
it (that job's rows in earlier row groups, found from their job column) up to the start of its
own last job (that job goes with the next row group), or to the end of the file for the last
group; the header goes with the first chunk that has jobs.

The driver (``dask_source``: the declared source with ``DaskGroups``, the engine's
source) keeps what must be in order: it takes the results in row group order, sums the
losses with their file pointers, stops where the in-process reading stops (an unreadable row
group, a chunk that cannot be converted on its own), merges the findings into the verdict
(the source's ``finish_parts``), and writes. The tasks are submitted as the results are
taken, a bounded window ahead (``WINDOW_PER_THREAD`` per worker
thread), so that the parts held at once are bounded by the window, not the file. A reading
that makes no parts (the first reading to SWF: its losses only) asks the workers for the
losses alone.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dcx.core.declaration import FormatDeclaration, loaded
from dcx.core.diagnostics import Diagnostic, ReadResult
from dcx.core.model import Workload
from dcx.core.streams import Chunk, RowGroupSource, Source

WINDOW_PER_THREAD = 2
"""Row groups in flight per worker thread: one running, one waiting for the driver."""


@dataclass
class GroupConversion:
    """What a worker made of one row group's chunk (``convert_group``)."""

    jobs: int = 0
    """Jobs in the chunk (none: the row group holds only the rest of a job that goes on)."""
    unreadable: bool = False
    """The chunk could not be read (the in-process reading stops converting there)."""
    header: Workload | None = None
    """The workload's header without its jobs, for the first chunk with jobs."""
    work: Any = None
    """Its ``stream_chunks.ChunkWork``."""


def _source(format_name: str) -> RowGroupSource:
    from dcx.converters.stream_chunks import stream_source

    source = stream_source(format_name)
    assert isinstance(source, RowGroupSource)
    return source


def check_group(path: str, parts: Any, index: int, format_name: str) -> Any:
    """Row group ``index``'s findings (or the ``Diagnostic`` that it is unreadable)."""
    with open(path, "rb") as opened:
        return _source(format_name).check_part(opened, parts, index)


def convert_group(path: str, parts: Any, index: int, format_name: str, target_name: str,
                  measure: bool, make: bool) -> GroupConversion:
    """Row group ``index``'s chunk read as the source reads it in this process, and
    ``chunk_work`` done on it (its losses when ``measure``, the target's part when
    ``make``)."""
    from dataclasses import replace

    from dcx.converters.stream_chunks import chunk_work, stream_target
    from dcx.core.columns import columns_of

    source = _source(format_name)
    with open(path, "rb") as opened:
        read, first = source.read_group(opened, parts, index)
    if read is None or read.document is None:
        return GroupConversion(unreadable=True)
    workload = read.document.workload or Workload()
    columns = columns_of(workload)
    jobs = len(columns.job_ids) if columns is not None else len(workload.jobs)
    if not jobs:
        return GroupConversion()
    target = stream_target(target_name, source, True)
    work = chunk_work(source, target, read.document, None, [], measure, make)
    return GroupConversion(jobs, header=replace(workload, jobs=()) if first else None,
                           work=work)


def dask_source(spec: FormatDeclaration, client: Any, path: str, target_name: str) -> Source:
    """The stream source ``spec`` declares (a ``RowGroupSource``), its row groups checked
    and converted on ``client``'s cluster."""
    assert spec.stream_source is not None
    declared = loaded(spec.stream_source)
    assert issubclass(declared, RowGroupSource)
    kind = type(f"Dask{declared.__name__}", (DaskGroups, declared), {})
    source: Source = kind(client, path, spec.name, target_name)
    return source


class DaskGroups(RowGroupSource):
    """A ``RowGroupSource`` whose row groups are checked and converted on a Dask cluster
    (see the module docstring): its chunks come with their ``ChunkWork`` done. Mixed in
    before the declared source's class (``dask_source``)."""

    def __init__(self, client: Any, path: str, format_name: str, target_name: str) -> None:
        super().__init__()
        self.format_name = format_name
        self.client = client
        self.path = os.path.abspath(path)
        self.target_name = target_name
        self.asked = (True, True)
        """What the next reading asks of each chunk (``asks``): its losses, its part."""

    def asks(self, measure: bool, make: bool) -> None:
        self.asked = (measure, make)

    def reads(self, chunks: Iterable[Any], check: bool) -> Iterator[Chunk]:
        for opened in chunks:
            yield from self._remote_groups(opened, check)

    def _window(self) -> int:
        threads = sum(self.client.nthreads().values())
        return max(2, WINDOW_PER_THREAD * threads)

    def _remote_groups(self, opened: Any, check: bool) -> Iterator[Chunk]:
        """The source's reading of its row groups with the work per row group on the
        workers (its findings when ``check``, what ``asks`` asked of its chunk)."""
        from dcx.core.declaration import ChunkedRead

        parts, problems = self.open_parts(opened)
        if parts is None:
            self.found = ChunkedRead(problems)
            return
        client = self.client
        groups = len(parts.row_counts)
        measure, make = self.asked
        # the footer goes to the workers once, not with each of its row groups
        shared = client.scatter(parts, broadcast=True, hash=False)
        in_flight: deque[tuple[Any, Any]] = deque()
        submitted = 0
        converting = True

        def submit_up_to(count: int) -> None:
            nonlocal submitted
            while submitted < min(count, groups):
                checked = client.submit(check_group, self.path, shared, submitted,
                                        self.format_name, pure=False) if check else None
                converted = client.submit(convert_group, self.path, shared, submitted,
                                          self.format_name, self.target_name, measure, make,
                                          pure=False) if converting else None
                in_flight.append((checked, converted))
                submitted += 1

        findings: list[Any] = []
        jobs = 0
        window = self._window()
        try:
            submit_up_to(window)
            for _ in range(groups):
                checked, converted = in_flight.popleft()
                if check:
                    found = checked.result()
                    if isinstance(found, Diagnostic):
                        self.found = ChunkedRead((found,))
                        return
                    findings.append(found)
                    if converting and self.stops_reading(found):
                        converting = False  # an invalid file: finish says why
                if converting:
                    done: GroupConversion = converted.result()
                    if done.unreadable:
                        converting = False
                    elif done.jobs:
                        if not jobs:
                            self.header_read = done.header or Workload()
                        yield Chunk(ReadResult(None), 1, jobs, work=done.work)
                        jobs += done.jobs
                if not converting:
                    _cancel(client, in_flight)
                    if not check:
                        return
                submit_up_to(submitted + 1 if converting else groups)
        finally:  # (left early: what is still in flight is not wanted)
            client.cancel([future for pair in in_flight for future in pair
                           if future is not None])
        if check:
            self.found = self.finish_parts(parts, findings, opened)


def _cancel(client: Any, in_flight: deque[tuple[Any, Any]]) -> None:
    """Cancel the conversions still in flight (their checks are still taken)."""
    pending = [converted for _, converted in in_flight if converted is not None]
    if pending:
        client.cancel(pending)
    for position, (checked, _) in enumerate(in_flight):
        in_flight[position] = (checked, None)
