"""GWF's stream source (``FORMAT.stream_source``): a trace read a chunk of whole lines at a
time for ``dcx convert`` (``dcx.converters.stream_convert``), each chunk checked by the chunked
reader (``stream.py``) and its tasks read as the whole file reads them (``codec.read_part``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dcx.core.declaration import FormatDeclaration
from dcx.core.model import Document, Task, Workload
from dcx.core.streams import (
    Chunk,
    Source,
    as_preceding,
    columns_in,
    columns_taken_out,
    tasks_taken_out,
    workload_job_ids,
)


class GwfSource(Source):
    """GWF chunks: each chunk's tasks read as the whole file reads them (``codec.read_part``),
    a dependency on a task of another chunk taken out before the target's normal form (a
    chunk alone would drop it; in a valid file it names a task of the file) and put back
    in the part. A workflow whose tasks continue in the next chunk is one job, as in the
    whole file; one whose tasks are apart stops the conversion (the whole file writes them
    together), as do text ids (the whole file may renumber them)."""

    jobs_continue = True

    def __init__(self) -> None:
        import numpy as np

        from dcx.formats import gwf
        from dcx.formats.gwf import stream as gwf_stream

        self.np = np
        self.spec = gwf.FORMAT
        self.checked = gwf_stream._Stream()

    def reads(self, chunks: Iterable[bytes], check: bool) -> Iterator[Chunk]:
        from dcx.formats.gwf import codec

        np = self.np
        checked = self.checked if check else None
        line, jobs, broken = 1, 0, False
        variant: Any = None
        last_job: Any = None
        last_tasks = 0
        last_place: tuple[int, int | None] | None = None
        """Where the last job read so far begins in the file."""
        workflows = np.zeros(0, dtype=np.int64)  # of the chunks read so far (sorted)
        for chunk in chunks:
            if checked is not None:
                checked.add(chunk)
                if checked.encoding is not None:
                    return
            first_line, line = line, line + chunk.count(b"\n")
            if broken or chunk.isspace():
                continue
            rows = checked.chunk_rows if checked is not None else None
            read, variant = codec.read_part(chunk, variant, rows, first_line - 1)
            if read.document is None:
                broken = True  # the chunked reader says why
                continue
            workload = read.document.workload or Workload()
            job_ids = workload_job_ids(workload)
            if not len(job_ids):
                continue
            problem = None
            continued = last_job is not None and job_ids[0] == last_job
            if variant == "workflow" and job_ids.dtype.kind == "i":
                new = np.unique(job_ids[1:] if continued else job_ids)
                if not len(new) or not len(workflows) or new[0] > workflows[-1]:
                    # ids counting up chunk after chunk: none seen before, appended (a
                    # merge sorts them all again, each chunk: quadratic in the chunks)
                    workflows = np.concatenate((workflows, new))
                else:
                    if bool(np.any(np.isin(new, workflows))):
                        problem = ("a workflow whose tasks are not on consecutive lines "
                                   "(the whole file writes them together)")
                    workflows = np.union1d(workflows, new)
            piece = Chunk(read, first_line, jobs - 1 if continued else jobs,
                          last_tasks if continued else 0, problem,
                          cut_job_place=last_place if continued else None)
            yield piece
            jobs += len(job_ids) - (1 if continued else 0)
            tasks = len(workload.jobs[-1].tasks) if columns_in(workload) is None else int(
                np.diff(columns_in(workload).job_offsets)[-1])
            still = continued and len(job_ids) == 1
            last_tasks = tasks + (last_tasks if still else 0)
            last_job = job_ids[-1]
            if not still:
                begins, column = read.locate(f"/workload/jobs/{len(job_ids) - 1}")
                last_place = (begins + first_line - 1, column) if begins is not None else None

    def cross_chunk(self, document: Document, later: list[Any]
                    ) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:
        from dataclasses import replace


        np = self.np
        workload = document.workload
        if workload is None:
            return document, {}
        columns = columns_in(workload)
        if columns is not None:
            needed = columns.dependency_ids
            if not len(needed) or needed.dtype.kind != "i":
                return document, {}
            return columns_taken_out(document, workload, columns,
                                      ~np.isin(needed, columns.ids), np)
        own = {task.id for job in workload.jobs for task in job.tasks}

        def taken_out(task: Task) -> tuple[Task, list[tuple[int, Any]] | None]:
            outside = [(place, needed) for place, needed in enumerate(task.dependencies)
                       if needed not in own]
            if not outside:
                return task, None
            return replace(task, dependencies=tuple(
                needed for needed in task.dependencies if needed in own)), outside

        return tasks_taken_out(document, workload, taken_out)

    def own_chunk(self, document: Document) -> Document:
        """To SWF: a dependency on a task of another chunk as the preceding job's extras
        value, as ``RowGroupSource.own_chunk``."""
        np = self.np
        return as_preceding(document, lambda columns: ~np.isin(columns.dependency_ids,
                                                                columns.ids), "chunk")

    def unstreamable(self, document: Document, target: FormatDeclaration) -> str | None:
        workload = document.workload or Workload()
        if columns_in(workload) is None and any(
                type(job.id) is not int or any(type(task.id) is not int
                                               or any(type(needed) is not int
                                                      for needed in task.dependencies)
                                               for task in job.tasks)
                for job in workload.jobs):
            return "ids that are text (the whole file may renumber them)"
        return super().unstreamable(document, target)

    def jobs(self, verdict: Any, rows: int) -> int:
        return int(verdict.jobs or 0)

    def pipe_extras(self) -> tuple[tuple[str, Any], ...]:
        import pyarrow as pa

        from dcx.formats.gwf import ARCHIVE_COLUMNS
        from dcx.formats.gwf.rules import ARCHIVE_CODES, ARCHIVE_MEASURES, ARCHIVE_TOKENS

        kinds = {name: pa.float64() for name in ARCHIVE_MEASURES}
        kinds.update({name: pa.int64() for name in ARCHIVE_CODES})
        kinds.update({name: pa.string() for name in ARCHIVE_TOKENS})
        return (("gwf:NProcs", pa.int64()), ("gwf:ReqNProcs", pa.int64()),
                *(("gwf:" + name, kinds[name]) for name in ARCHIVE_COLUMNS if name in kinds))
