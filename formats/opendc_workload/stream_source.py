"""OpenDC workload's stream source (``FORMAT.stream_source``): a folder's tasks read a
slice at a time for ``dcx convert`` (``dcx.converters.stream_convert``), each task with its
fragments, after its files are checked as ``dcx validate``'s part reader checks them
(``stream.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dcx.core.model import Workload
from dcx.core.streams import Chunk, RowGroupSource


class OpendcWorkloadSource(RowGroupSource):
    """An OpenDC workload folder (``chunks`` gives its open files by name, once per reading):
    the first reading checks every row group of both files (``formats.opendc_workload.
    stream``: the diagnostics of ``dcx validate``'s part reader, which are the whole reader's)
    and keeps the whole file's task ids and dependencies; each reading then reads the tasks
    ``SLICE_TASKS`` at a time, each task with its fragments joined as the whole reader joins
    them (in file order, from whichever row groups hold them: a task's fragments need not be
    on consecutive rows, nor in the tasks' order, which costs reading more row groups).
    Dependencies on tasks of other slices are taken out and put back as a Parquet file's
    are."""

    place = "chunk of tasks"
    SLICE_TASKS = 1 << 16
    """Tasks per chunk: the fragments a chunk joins are held with it."""

    def __init__(self) -> None:
        from dcx.formats import opendc_workload

        super().__init__()
        self.spec = opendc_workload.FORMAT
        self.whole: Any = None

    def reads(self, chunks: Iterable[Any], check: bool) -> Iterator[Chunk]:
        from dcx.formats.opendc_workload import stream

        for opened in chunks:
            if check or self.whole is None:
                self.found, _, self.whole = stream.read_whole(opened)
                if self.whole is None:
                    return  # an invalid folder: the verdict says why
                self.header_read = Workload(time_origin=self.whole.time_origin)
            parts, _ = stream.open_parts(opened)
            assert parts is not None, "the folder changed while it was read"
            jobs = 0
            for read in stream.task_slices(opened, parts, self.whole, self.SLICE_TASKS):
                assert read.document is not None and read.document.workload is not None
                yield Chunk(read, 1, jobs)
                jobs += len(read.document.workload.jobs)
