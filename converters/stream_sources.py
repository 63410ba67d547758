"""The sources of ``dcx.converters.stream_convert``: what differs between the source formats
of a conversion a chunk at a time (its chunked checker, how a chunk is read as the whole-file
reader reads it, what the chunks say of one another, the header the output writes first), and
the rules for dependencies on tasks of other chunks. See the engine's module docstring."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, ReadResult, has_errors
from dcx.core.model import Document, Task, Workload

PRECEDING_KEY = "swf:PrecedingJobNumber"


class NotStreamable(Exception):
    """What cannot be converted a chunk at a time (``convert.not-streamable``)."""


@dataclass
class Chunk:
    """A chunk of whole lines as the whole-file reader reads it, and where it is."""

    read: ReadResult
    first_line: int
    jobs_before: int
    """Jobs of earlier chunks, its first job not counted when it began there."""
    tasks_before: int = 0
    """Tasks its first job has in earlier chunks (a job cut between two chunks)."""
    problem: str | None = None
    """Why it cannot be converted on its own, if it cannot (``NotStreamable``)."""
    work: Any = None
    """Its ``stream_targets.ChunkWork`` when it was converted elsewhere (a Dask worker): its
    ``read`` then holds no document."""
    cut_job_place: tuple[int, int | None] | None = None
    """Where its first job begins in the file, when it began in an earlier chunk (the line
    and column its place is in the whole file)."""

    def file_pointer(self, match: re.Match[str]) -> str:
        """A job's (or its task's) model pointer in the chunk as the whole file's."""
        job = int(match.group(1))
        pointer = f"/workload/jobs/{job + self.jobs_before}"
        if match.group(2) is not None:
            task = int(match.group(2)) + (self.tasks_before if job == 0 else 0)
            pointer += f"/tasks/{task}"
        return pointer


class Source:
    """What the engine reads, per source format: its chunked checker (``read_chunks``'s
    ``_Stream``), each chunk's document, what the chunks say of one another, and what the
    output writes first."""

    spec: FormatDeclaration
    checked: Any
    """The chunked checker the first reading feeds."""
    later_in_pipe = "a dependency that comes later in the trace"
    """Why a pipe cannot be converted when a chunk names what only a later one holds."""

    def reads(self, chunks: Iterable[bytes], check: bool) -> Iterator[Chunk]:
        """Each chunk with content, read by the whole-file reader, after the checker (when
        ``check``) has checked it. After a chunk that cannot be read (an invalid input) the
        rest is only checked, so that every diagnostic is found."""
        raise NotImplementedError

    def asks(self, measure: bool, make: bool) -> None:
        """What the engine's next reading asks of each chunk: its losses (``measure``), the
        target's part (``make``); a source whose chunks are converted elsewhere (on a Dask
        cluster) has that much done there."""

    def cross_chunk(self, document: Document, later: list[Any]
                    ) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:
        """The chunk's document without its dependencies on tasks of other chunks, and
        those by row (each at its place in the row's list, where the target puts it back);
        what a later chunk must hold goes to ``later``."""
        return document, {}

    def own_chunk(self, document: Document) -> Document:
        """The chunk's document for a target that does not take dependencies across chunks
        (SWF), before the losses and the normal form."""
        return document

    def in_file(self, number: Any) -> bool:
        """Whether the input read so far holds job (task) ``number``."""
        return False

    def unstreamable(self, document: Document, target: FormatDeclaration) -> str | None:
        """What stops converting this chunk's document on its own, if anything."""
        if "task.id" in _normal_form_losses(target, document):
            return (f"job numbers that are not all integers, which {target.name} renumbers (the "
                    "whole file numbers them all together)")
        return None

    def header(self, spec: FormatDeclaration) -> Workload:
        """The workload's header read so far, in ``spec``'s normal form."""
        return Workload()

    def verdict(self) -> Any:
        """What the chunked checker found (``read_chunks``'s answer)."""
        from dcx.core.declaration import ChunkedRead

        checked = self.checked
        return ChunkedRead((checked.encoding,)) if checked.encoding is not None \
            else checked.finish()

    def jobs(self, verdict: Any, rows: int) -> int:
        """The jobs the output holds, for the summary line."""
        return rows

    def pipe_extras(self) -> tuple[tuple[str, Any], ...]:
        """Every task extras column a pipe's Parquet schema has (key, Arrow type)."""
        return ()


class SwfSource(Source):
    later_in_pipe = "a job whose preceding job comes later in the trace"

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

        return _tasks_taken_out(document, workload, taken_out)

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


class GwfSource(Source):
    """GWF chunks: each chunk's tasks read as the whole file reads them (``codec.read_part``),
    a dependency on a task of another chunk taken out before the target's normal form (a
    chunk alone would drop it; in a valid file it names a task of the file) and put back
    in the part. A workflow whose tasks continue in the next chunk is one job, as in the
    whole file; one whose tasks are apart stops the conversion (the whole file writes them
    together), as do text ids (the whole file may renumber them)."""

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
            job_ids = _job_ids(workload)
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
            tasks = len(workload.jobs[-1].tasks) if _columns(workload) is None else int(
                np.diff(_columns(workload).job_offsets)[-1])
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
        columns = _columns(workload)
        if columns is not None:
            needed = columns.dependency_ids
            if not len(needed) or needed.dtype.kind != "i":
                return document, {}
            return _columns_taken_out(document, workload, columns,
                                      ~np.isin(needed, columns.ids), np)
        own = {task.id for job in workload.jobs for task in job.tasks}

        def taken_out(task: Task) -> tuple[Task, list[tuple[int, Any]] | None]:
            outside = [(place, needed) for place, needed in enumerate(task.dependencies)
                       if needed not in own]
            if not outside:
                return task, None
            return replace(task, dependencies=tuple(
                needed for needed in task.dependencies if needed in own)), outside

        return _tasks_taken_out(document, workload, taken_out)

    def own_chunk(self, document: Document) -> Document:
        """To SWF: a dependency on a task of another chunk as the preceding job's extras
        value, as ``ParquetSource.own_chunk``."""
        np = self.np
        return _as_preceding(document, lambda columns: ~np.isin(columns.dependency_ids,
                                                                columns.ids), "chunk")

    def unstreamable(self, document: Document, target: FormatDeclaration) -> str | None:
        workload = document.workload or Workload()
        if _columns(workload) is None and any(
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


def regrouped_ends(document: Document) -> tuple[bool, bool, int]:
    """Whether the first and the last job of ``document`` count a ``job`` loss (they are
    not a job of one task with its id), and its number of jobs."""
    from dcx.core.columns import regrouped_jobs
    from dcx.core.restrict import regrouped

    workload = document.workload or Workload()
    columns = _columns(workload)
    if columns is not None:
        import numpy as np

        lost = regrouped_jobs(np, columns)
        return (bool(lost[0]), bool(lost[-1]), len(lost)) if len(lost) else (False, False, 0)
    jobs = workload.jobs
    if not len(jobs):
        return False, False, 0
    return regrouped(jobs[0]), regrouped(jobs[-1]), len(jobs)


def cut_ends(document: Document, counted: bool) -> tuple[bool, bool, int]:
    """Whether the first and the last job of the chunk's ``document`` count a ``job`` loss,
    and its number of jobs (``counted``: the chunk counted ``job`` losses; else none does)."""
    if counted:
        return regrouped_ends(document)
    workload = document.workload  # (a target that holds jobs, or none of this chunk's is lost)
    return False, False, len(workload.jobs) if workload is not None else 0


def _columns(workload: Workload) -> Any:
    from dcx.core.columns import columns_of

    return columns_of(workload)


def _job_ids(workload: Workload) -> Any:
    """The workload's job ids, in order (``int64`` when they are all integers)."""
    import numpy as np

    columns = _columns(workload)
    if columns is not None:
        return columns.job_ids
    ids = [job.id for job in workload.jobs]
    if all(type(value) is int and -(1 << 63) <= value < (1 << 63) for value in ids):
        return np.array(ids, dtype=np.int64)
    held = np.empty(len(ids), dtype=object)
    held[:] = ids
    return held


class ParquetSource(Source):
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
        import numpy as np

        from dcx.formats import parquet

        self.np = np
        self.spec = parquet.FORMAT
        self.checked = None
        self.found: Any = None
        self.header_read = Workload()

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
            count = len(_columns(workload).job_ids)
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

    def verdict(self) -> Any:
        return self.found

    def jobs(self, verdict: Any, rows: int) -> int:
        return int(verdict.jobs or 0)

    def _outside(self, columns: Any) -> Any:
        """Whether each dependency names a task of another row group."""
        np = self.np
        needed = columns.dependency_ids
        if needed.dtype.kind == "O" or columns.ids.dtype.kind == "O":
            own = set(columns.ids.tolist())
            return np.array([value not in own for value in needed.tolist()], dtype=bool)
        return ~np.isin(needed, columns.ids)

    def cross_chunk(self, document: Document, later: list[Any]
                    ) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:


        np = self.np
        workload = document.workload
        columns = _columns(workload) if workload is not None else None
        if workload is None or columns is None or not len(columns.dependency_ids):
            return document, {}
        return _columns_taken_out(document, workload, columns, self._outside(columns), np)

    def own_chunk(self, document: Document) -> Document:
        """To SWF: each dependency on a task of another row group as the preceding job's
        extras value (see the class docstring)."""
        return _as_preceding(document, self._outside, "row group")

    def unstreamable(self, document: Document, target: FormatDeclaration) -> str | None:
        lost = _normal_form_losses(target, document)
        if "task.id" in lost or "job" in lost:
            return (f"ids that {target.name} renumbers (the whole file numbers them all "
                    "together)")
        return None

    def header(self, spec: FormatDeclaration) -> Workload:
        """The workload's header (the file's metadata), in ``spec``'s normal form."""
        document = Document(workload=self.header_read)
        if spec.normal_form is not None:
            document = spec.normal_form(document)
        return document.workload or Workload()


class OpendcWorkloadSource(ParquetSource):
    """An OpenDC workload folder (``chunks`` gives its open files by name, once per reading):
    the first reading checks every row group of both files (``formats.opendc_workload.
    stream``: the diagnostics of ``dcx validate``'s part reader, which are the whole reader's)
    and keeps the whole file's task ids and dependencies; each reading then reads the tasks
    ``SLICE_TASKS`` at a time, each task with its fragments joined as the whole reader joins
    them (in file order, from whichever row groups hold them: a task's fragments need not be
    on consecutive rows, nor in the tasks' order, which costs reading more row groups).
    Dependencies on tasks of other slices are taken out and put back as a Parquet file's
    are."""

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

    def own_chunk(self, document: Document) -> Document:
        return _as_preceding(document, self._outside, "chunk of tasks")


def _as_preceding(document: Document, outside_of: Callable[[Any], Any], place: str
                  ) -> Document:
    """``document`` whose dependencies on tasks of another ``place`` (as columns: where
    ``outside_of`` is true; as objects: not a task of the document) are the preceding job's
    extras value that the SWF writer writes as it writes a dependency; a task with several
    dependencies, one of them outside, stops the conversion (SWF holds one)."""
    from dataclasses import replace

    import numpy as np

    from dcx.core.columns import ExtraColumn, JobRows

    workload = document.workload
    if workload is None:
        return document
    columns = _columns(workload)
    if columns is None:
        return _objects_as_preceding(document, place)
    if not len(columns.dependency_ids):
        return document
    outside = outside_of(columns)
    if not bool(np.any(outside)):
        return document
    offsets, needed = columns.dependency_offsets, columns.dependency_ids
    counts = np.diff(offsets)
    row_of = np.repeat(np.arange(len(counts)), counts)
    rows = row_of[outside]
    if bool(np.any(counts[rows] > 1)):
        raise NotStreamable("a task with several dependencies, one of them on a task of "
                            f"another {place} (SWF holds one)")
    if needed.dtype.kind != "i" or PRECEDING_KEY in columns.extras:
        raise NotStreamable(f"a dependency on a task of another {place} that SWF cannot "
                            "write as its preceding job")
    values = np.zeros(len(counts), dtype=np.int64)
    values[rows] = needed[outside]
    present = np.zeros(len(counts), dtype=bool)
    present[rows] = True
    kept = np.bincount(row_of[~outside], minlength=len(counts))
    stripped = replace(columns, dependency_ids=needed[~outside],
                       dependency_offsets=np.concatenate(([0], np.cumsum(kept))
                                                         ).astype(np.int64),
                       extras={**columns.extras,
                               PRECEDING_KEY: ExtraColumn(values, present)})
    return replace(document, workload=replace(workload, jobs=JobRows(stripped)))


def _objects_as_preceding(document: Document, place: str) -> Document:
    """``_as_preceding`` of a workload held as objects."""
    from dataclasses import replace

    workload = document.workload
    assert workload is not None
    own = {task.id for job in workload.jobs for task in job.tasks}
    changed = False
    jobs = []
    for job in workload.jobs:
        tasks = []
        for task in job.tasks:
            if any(needed not in own for needed in task.dependencies):
                if len(task.dependencies) > 1:
                    raise NotStreamable("a task with several dependencies, one of them on a "
                                        f"task of another {place} (SWF holds one)")
                if type(task.dependencies[0]) is not int or PRECEDING_KEY in task.extras:
                    raise NotStreamable(f"a dependency on a task of another {place} that SWF "
                                        "cannot write as its preceding job")
                task = replace(task, dependencies=(), extras={
                    **task.extras, PRECEDING_KEY: task.dependencies[0]})
                changed = True
            tasks.append(task)
        jobs.append(replace(job, tasks=tuple(tasks)))
    return replace(document, workload=replace(workload, jobs=tuple(jobs))) if changed \
        else document


SOURCES: dict[str, Callable[[], Source]] = {"swf": SwfSource, "gwf": GwfSource,
                                              "parquet": ParquetSource,
                                              "opendc-workload": OpendcWorkloadSource}


def _normal_form_losses(spec: FormatDeclaration, document: Document) -> frozenset[str]:
    return spec.normal_form_losses(document) if spec.normal_form_losses else frozenset()


def _tasks_taken_out(document: Document, workload: Workload,
                     take_out: Callable[[Task], tuple[Task, list[tuple[int, Any]] | None]]
                     ) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:
    """``document`` with each task as ``take_out`` leaves it, and by row what it took out
    of the tasks it changed (what goes back into the part after the normal form); the
    document unchanged when it took out nothing."""
    from dataclasses import replace

    earlier: dict[int, list[tuple[int, Any]]] = {}
    jobs = []
    row = 0
    for job in workload.jobs:
        tasks = []
        for task in job.tasks:
            kept, taken = take_out(task)
            if taken is not None:
                earlier[row] = taken
            tasks.append(kept)
            row += 1
        jobs.append(replace(job, tasks=tuple(tasks)))
    if not earlier:
        return document, {}
    return replace(document, workload=replace(workload, jobs=tuple(jobs))), earlier


def _columns_taken_out(document: Document, workload: Workload, columns: Any, outside: Any,
                       np: Any) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:
    """``_tasks_taken_out`` of a workload held as columns: the dependencies ``outside``
    marks (a boolean per dependency) taken out, by row with their places in its list."""
    from dataclasses import replace

    from dcx.core.columns import JobRows

    if not bool(np.any(outside)):
        return document, {}
    offsets, needed = columns.dependency_offsets, columns.dependency_ids
    counts = np.diff(offsets)
    row_of = np.repeat(np.arange(len(counts)), counts)
    earlier: dict[int, list[tuple[int, Any]]] = {}
    for index in np.flatnonzero(outside).tolist():
        row = int(row_of[index])
        value = needed[index]
        earlier.setdefault(row, []).append((index - int(offsets[row]),
                                            value.item() if hasattr(value, "item") else value))
    kept = np.bincount(row_of[~outside], minlength=len(counts))
    stripped = replace(columns, dependency_ids=needed[~outside],
                       dependency_offsets=np.concatenate(([0], np.cumsum(kept))
                                                         ).astype(np.int64))
    return replace(document, workload=replace(workload, jobs=JobRows(stripped))), earlier


def _holds(held: Any, number: Any) -> bool:
    if isinstance(held, range):
        return type(number) is int and number in held
    return bool((held == number).any())


def _swf_extras_keys() -> tuple[str, ...]:
    """Every ``swf:`` task extras key the SWF reader makes, in its columns' order."""
    from dcx.formats.swf import codec as swf_codec

    return (swf_codec._ALLOCATED_KEY, swf_codec._REQUESTED_KEY,
            *("swf:" + name for name in swf_codec._EXTRA_COLUMNS), swf_codec._PRECEDING_KEY)
