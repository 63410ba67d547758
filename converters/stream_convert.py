"""``dcx convert`` of a trace too large to hold: SWF to Parquet or to SWF, GWF to Parquet, to
GWF or to SWF, a chunk of whole lines at a time, in memory bounded by the chunk size
(``dcx.parsing.chunks``), whatever the trace's length; a Parquet file (not a pipe: row groups
are read by seeking) to Parquet, SWF or GWF a row group at a time (its jobs whole: the rows of
a job that continues in the next row group are read with it). ``dcx.converters.streaming`` decides
when (the inputs ``dcx validate`` streams); this module converts.

One engine for every source format; a ``_Source`` is what differs between them (its
chunked checker, how a chunk is read, what the chunks say of one another, the header), a
``_Target`` what a target makes of each chunk. Per chunk: the source format's chunked reader
(``FormatDeclaration.read_chunks``'s ``_Stream``) checks it, so the diagnostics are the
whole-file reader's, byte for byte; the same chunk read as the whole-file reader reads it is
the chunk's document (SWF: ``codec.read_rows``, from the rows the chunked reader's
vectorised path read, so a chunk is parsed once; GWF: ``codec.read_part``, the same way,
without the checks across lines; Parquet: ``formats.parquet.stream``'s ``check_part`` and
``finish``, the checks ``dcx validate`` runs a row group at a time, and ``read_part``), which
the target's normal form and writer turn into one
part: a Parquet row group (``dcx.formats.parquet.codec.rows_of``), SWF job lines or GWF task
lines (``dcx.formats.gwf.codec.write_part``). Its losses are ``conversion_losses`` of that document,
summed over the chunks (pointers and lines counted from the start of the file; a job cut
between chunks is one job, its ``job`` loss, to SWF, counted once).

A file is read to check it and find what is written first (Parquet's schema, SWF's header,
GWF's variant), so its output is the whole-file path's. Parquet and GWF to a regular file
are written during that reading, with the schema (the variant) the first part gives, and
kept when the whole file's turns out the same (no later chunk adds a column or widens one,
no preceding job is met before its line; no later chunk has what only GWF's archive variant
holds); otherwise, and for SWF, standard output and devices, the file is read again to
write it. Parquet's schema is the columns any chunk has, in the order they
first appear (as the whole-file writer orders the extras of jobs read line by line); an
extras column integer in one chunk and not in another is a double, as the whole-file writer
makes it. A pipe is read once: its Parquet schema is the first chunk's plus every extras
column the source format has (``swf:``: integers where SWF's field is an integer, doubles
elsewhere; ``gwf:``: as GWF's archive columns read), null where a chunk has none; its SWF
header is the one its first chunk holds (a header line among later jobs, which the whole
file would write at the top, stops it); its GWF variant is its first chunk's (a later task
that only the archive variant holds stops it).

A dependency on a task of another chunk is the one the whole file has: an SWF chunk keeps a
preceding job it does not hold as an extras value, a GWF chunk's normal form would drop it,
so it is taken out of the chunk's document before the losses and the normal form and put
back in the part (at its place in the task's list); to SWF, which holds one preceding job,
a GWF or Parquet dependency on a task of another chunk is the preceding job's extras value
the SWF writer writes as it writes a dependency. A GWF workflow whose tasks continue in
the next chunk is one job, as in the whole file. What cannot be cut into chunks stops the
conversion (``convert.not-streamable``): SWF job numbers that mix integers and text, GWF
text ids and Parquet ids the target renumbers (the whole file may number them otherwise);
to SWF, a GWF or Parquet task with several dependencies, one on a task of another chunk
or row group (SWF holds one); a GWF workflow whose tasks are not on consecutive lines (the
whole file writes them together); in a pipe, an SWF preceding job that comes later in the
trace.

The output is written to a temporary file beside OUTPUT, read back under the target's reader
rules (Parquet a row group at a time, ``read_parts``; SWF and GWF through their chunked
readers), and renamed over OUTPUT only when the input was valid, the conversion refused
nothing and the output reads back accepted. Standard output and devices get the parts as
they are written.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss, ReadResult, error, has_errors, warning
from dcx.core.fields import FIELDS
from dcx.core.model import Document, Task, Workload

if TYPE_CHECKING:
    from dcx.formats.gwf.codec import Variant

CODES = (
    Code("convert.not-streamable", "error",
         "A trace read in chunks has what only the whole file can convert (SWF job numbers "
         "that mix integers and text, GWF text ids, a GWF workflow whose tasks are not on "
         "consecutive lines, Parquet ids the target renumbers, to SWF a GWF or Parquet task "
         "with several dependencies, one in another chunk or row group; in a pipe, a "
         "preceding job later in the trace or, to SWF, a header line among later jobs, or, "
         "to GWF, a task only the archive variant holds after the first chunk)."),
)

STREAM_PAIRS = frozenset({("swf", "parquet"), ("swf", "swf"), ("gwf", "gwf"),
                          ("gwf", "parquet"), ("parquet", "parquet"), ("parquet", "swf"),
                          ("parquet", "gwf"), ("gwf", "swf")})
"""Source and target formats ``dcx convert`` converts a chunk at a time."""

_PRECEDING_KEY = "swf:PrecedingJobNumber"
_JOB_POINTER = re.compile(r"/workload/jobs/(\d+)(?:/tasks/(\d+))?")
_FIELD_ORDER = {path: index for index, path in enumerate(FIELDS)}

Chunks = Callable[[], Iterable[Any]]
"""Opens the input (again) as chunks of whole lines (Parquet: gives the open file once); a
pipe can be opened only once."""


class NotStreamable(Exception):
    """What cannot be converted a chunk at a time (``convert.not-streamable``)."""


@dataclass
class StreamedConversion:
    """What a streamed conversion found: the shape of ``convert.Conversion`` the CLI reports."""

    read_diagnostics: tuple[Diagnostic, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    losses: tuple[Loss, ...] = ()
    places: ReadResult = field(default_factory=lambda: ReadResult(None))
    """Where each loss's first dropped value is (``ReadResult.locate``)."""
    jobs: int = 0
    written: bool = False

    @property
    def ok(self) -> bool:
        return self.written and not has_errors(self.diagnostics)

    @property
    def internal_error(self) -> bool:
        return any(d.code == "convert.invalid-output" for d in self.diagnostics)


@dataclass
class _Losses:
    """Losses summed over chunks: count, first pointer and its (line, column)."""

    counts: dict[str, int | None] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    firsts: dict[str, str | None] = field(default_factory=dict)
    places: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    uncounted: set[str] = field(default_factory=set)
    """Losses whose first pointer is from a chunk that counted none of their values: the
    first chunk that counts some has the whole file's."""

    def add(self, losses: Sequence[Loss], piece: _Chunk) -> None:
        for loss in losses:
            # a count is None where a value restriction changes what no value counts
            # (``dropped_values``): none in this chunk, so the whole file's is the sum, or None
            if loss.field not in self.counts:
                self.counts[loss.field] = loss.count
                self.details[loss.field] = loss.detail
                self.firsts[loss.field] = None
            else:
                self.counts[loss.field] = ((self.counts[loss.field] or 0)
                                           + (loss.count or 0)) or None
            if loss.first is not None and (self.firsts[loss.field] is None or (
                    loss.field in self.uncounted and loss.count)):
                if loss.count:
                    self.uncounted.discard(loss.field)
                else:
                    self.uncounted.add(loss.field)
                first = _JOB_POINTER.sub(lambda match: piece.file_pointer(match), loss.first,
                                         count=1)
                self.firsts[loss.field] = first
                line, column = piece.read.locate(loss.first)
                if line is not None:
                    self.places[first] = (line + piece.first_line - 1, column)

    cut_job_counted: bool = False
    """The last job of the chunks so far counted a ``job`` loss (one cut between chunks is
    one job: counted once)."""

    def join_cut_job(self, piece: _Chunk, document: Document, counted: bool) -> None:
        """After ``add`` of a chunk (``counted``: it counted ``job`` losses): its first job,
        when it began in an earlier chunk that counted it already, is not counted again (a
        job whose every piece is one task with the job's id is one task with its id)."""
        if counted:
            first, last, jobs = _regrouped_ends(document)
        else:  # (a target that holds jobs, or none of this chunk's is lost)
            workload = document.workload
            first, last, jobs = False, False, len(workload.jobs) if workload is not None else 0
        if piece.tasks_before and first and self.cut_job_counted:
            count = self.counts["job"]
            self.counts["job"] = count - 1 if count else count
        continued = jobs <= 1 and bool(piece.tasks_before) and self.cut_job_counted
        self.cut_job_counted = last or continued

    def losses(self) -> tuple[Loss, ...]:
        return tuple(Loss(path, self.counts[path], self.details[path], self.firsts[path])
                     for path in sorted(self.counts, key=_FIELD_ORDER.__getitem__))


@dataclass
class _Chunk:
    """A chunk of whole lines as the whole-file reader reads it, and where it is."""

    read: ReadResult
    first_line: int
    jobs_before: int
    """Jobs of earlier chunks, its first job not counted when it began there."""
    tasks_before: int = 0
    """Tasks its first job has in earlier chunks (a job cut between two chunks)."""
    problem: str | None = None
    """Why it cannot be converted on its own, if it cannot (``NotStreamable``)."""

    def file_pointer(self, match: re.Match[str]) -> str:
        """A job's (or its task's) model pointer in the chunk as the whole file's."""
        job = int(match.group(1))
        pointer = f"/workload/jobs/{job + self.jobs_before}"
        if match.group(2) is not None:
            task = int(match.group(2)) + (self.tasks_before if job == 0 else 0)
            pointer += f"/tasks/{task}"
        return pointer


class _Source:
    """What the engine reads, per source format: its chunked checker (``read_chunks``'s
    ``_Stream``), each chunk's document, what the chunks say of one another, and what the
    output writes first."""

    spec: FormatDeclaration
    checked: Any
    """The chunked checker the first reading feeds."""
    later_in_pipe = "a dependency that comes later in the trace"
    """Why a pipe cannot be converted when a chunk names what only a later one holds."""

    def reads(self, chunks: Iterable[bytes], check: bool) -> Iterator[_Chunk]:
        """Each chunk with content, read by the whole-file reader, after the checker (when
        ``check``) has checked it. After a chunk that cannot be read (an invalid input) the
        rest is only checked, so that every diagnostic is found."""
        raise NotImplementedError

    def cross_chunk(self, document: Document, later: list[Any]
                    ) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:
        """The chunk's document without its dependencies on tasks of other chunks, and
        those by row (each at its place in the row's list: ``_with_dependencies``); what a
        later chunk must hold goes to ``later``."""
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
            return "job numbers that mix integers and text"
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


class _SwfSource(_Source):
    later_in_pipe = "a job whose preceding job comes later in the trace"

    def __init__(self) -> None:
        from dcx.formats import swf
        from dcx.formats.swf import stream as swf_stream

        self.spec = swf.FORMAT
        self.checked = swf_stream._Stream()

    def reads(self, chunks: Iterable[bytes], check: bool) -> Iterator[_Chunk]:
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
        if workload is None or columns_of(workload) is not None or not any(
                _PRECEDING_KEY in task.extras for job in workload.jobs for task in job.tasks):
            return document, {}  # (columns hold only dependencies inside the chunk)

        def taken_out(task: Task) -> tuple[Task, list[tuple[int, Any]] | None]:
            number = task.extras.get(_PRECEDING_KEY)
            if number is not None and self.in_file(number):
                # (a task with a preceding job extras value has no dependency)
                return replace(task, extras={key: value for key, value in task.extras.items()
                                             if key != _PRECEDING_KEY}), \
                    [(len(task.dependencies), number)]
            if number is not None:
                later.append(number)
            return task, None

        return _tasks_taken_out(document, workload, taken_out)

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


def _chunk_reads(chunks: Iterable[bytes], checked: Any) -> Iterator[_Chunk]:
    """``_SwfSource.reads``: each SWF chunk with jobs or header lines, read by the whole-file
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
        yield _Chunk(read, first_line, jobs)
        workload = read.document.workload
        jobs += len(workload.jobs) if workload is not None else 0


class _GwfSource(_Source):
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

    def reads(self, chunks: Iterable[bytes], check: bool) -> Iterator[_Chunk]:
        from dcx.formats.gwf import codec

        np = self.np
        checked = self.checked if check else None
        line, jobs, broken = 1, 0, False
        variant: Any = None
        last_job: Any = None
        last_tasks = 0
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
                seen = np.isin(job_ids[1:] if continued else job_ids, workflows)
                if bool(np.any(seen)):
                    problem = ("a workflow whose tasks are not on consecutive lines (the "
                               "whole file writes them together)")
                workflows = np.union1d(workflows, job_ids)
            piece = _Chunk(read, first_line, jobs - 1 if continued else jobs,
                           last_tasks if continued else 0, problem)
            yield piece
            jobs += len(job_ids) - (1 if continued else 0)
            tasks = len(workload.jobs[-1].tasks) if _columns(workload) is None else int(
                np.diff(_columns(workload).job_offsets)[-1])
            last_tasks = tasks + (last_tasks if continued and len(job_ids) == 1 else 0)
            last_job = job_ids[-1]

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
        value, as ``_ParquetSource.own_chunk``."""
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


def _regrouped_ends(document: Document) -> tuple[bool, bool, int]:
    """Whether the first and the last job of ``document`` count a ``job`` loss (they are
    not a job of one task with its id), and its number of jobs."""
    from dcx.core.columns import _regrouped_jobs
    from dcx.core.restrict import _regrouped

    workload = document.workload or Workload()
    columns = _columns(workload)
    if columns is not None:
        import numpy as np

        lost = _regrouped_jobs(np, columns)
        return (bool(lost[0]), bool(lost[-1]), len(lost)) if len(lost) else (False, False, 0)
    jobs = workload.jobs
    if not len(jobs):
        return False, False, 0
    return _regrouped(jobs[0]), _regrouped(jobs[-1]), len(jobs)


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


class _ParquetSource(_Source):
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

    def reads(self, chunks: Iterable[Any], check: bool) -> Iterator[_Chunk]:
        for opened in chunks:
            yield from self._groups(opened, check)

    def _groups(self, opened: Any, check: bool) -> Iterator[_Chunk]:
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
                broken = broken or bool(found.nulls or found.null_dependencies or found.nan
                                        or found.extras_json or found.null_feature is not None)
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
                yield _Chunk(read, 1, jobs)
                jobs += count
        if check:
            self.found = stream.finish(parts, findings,
                                       lambda index: stream.reread_dependencies(opened, index))

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
    if needed.dtype.kind != "i" or _PRECEDING_KEY in columns.extras:
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
                               _PRECEDING_KEY: ExtraColumn(values, present)})
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
                if type(task.dependencies[0]) is not int or _PRECEDING_KEY in task.extras:
                    raise NotStreamable(f"a dependency on a task of another {place} that SWF "
                                        "cannot write as its preceding job")
                task = replace(task, dependencies=(), extras={
                    **task.extras, _PRECEDING_KEY: task.dependencies[0]})
                changed = True
            tasks.append(task)
        jobs.append(replace(job, tasks=tuple(tasks)))
    return replace(document, workload=replace(workload, jobs=tuple(jobs))) if changed \
        else document


_SOURCES: dict[str, Callable[[], _Source]] = {"swf": _SwfSource, "gwf": _GwfSource,
                                              "parquet": _ParquetSource}


def convert_chunks(source_name: str, chunks: Chunks, reopenable: bool, output: str,
                   target_name: str, strict: bool = False) -> StreamedConversion:
    """Convert the ``source_name`` trace ``chunks`` gives to ``target_name``
    (``STREAM_PAIRS``) at ``output`` (``-``: stdout). ``reopenable``: ``chunks`` may be called
    twice (a file), so what the output writes first is the file's own before anything is
    written."""
    from dcx.converters.losses import conversion_losses
    from dcx.parsing.chunks import LineTooLong

    source = _SOURCES[source_name]()
    target = _TARGETS[target_name](source, reopenable)
    target.strict = strict
    later: list[Any] = []
    summed = _Losses()

    def part_of(piece: _Chunk, measure: bool, make: bool = True) -> Any:
        assert piece.read.document is not None
        if piece.problem is not None:
            raise NotStreamable(piece.problem)
        document, earlier = (source.cross_chunk(piece.read.document, later)
                             if target.dependencies_across
                             else (source.own_chunk(piece.read.document), {}))
        if measure:
            losses = conversion_losses(document, target.spec)
            summed.add(losses, piece)
            summed.join_cut_job(piece, document, any(loss.field == "job" for loss in losses))
        problem = source.unstreamable(document, target.spec)
        if problem is not None:
            raise NotStreamable(problem)
        return target.part(document, earlier) if make else None

    def parts(pieces: Iterable[_Chunk], measure: bool) -> Iterator[Any]:
        for piece in pieces:
            part = part_of(piece, measure)
            if target.rows(part):
                yield part

    def conversion(verdict: Any, written: int) -> StreamedConversion:
        return StreamedConversion(
            verdict.diagnostics, _loss_warnings(summed, strict, target.spec) + target.warned,
            summed.losses(), ReadResult(None, source_map=summed.places),
            written if target.jobs_are_rows else source.jobs(verdict, written), True)

    def at_end() -> Workload:
        """The input's verdict and header, once it is all read."""
        verdict = target.verdict or source.verdict()  # (finish() runs once)
        target.verdict = verdict
        if not verdict.ok:
            raise _Refused(StreamedConversion(verdict.diagnostics))
        if not reopenable and any(map(source.in_file, later)):
            raise NotStreamable(source.later_in_pipe)
        refused = _refused(summed, verdict.jobs or 0, strict, source.spec, target.spec)
        if refused is not None:
            raise _Refused(StreamedConversion(verdict.diagnostics, refused, summed.losses(),
                                              ReadResult(None, source_map=summed.places)))
        return target.header(source)

    try:
        if reopenable:  # the first reading checks the file and finds what to write first
            unstreamable: NotStreamable | None = None
            with _early_output(output, target) as early:
                try:
                    for piece in source.reads(chunks(), check=True):
                        if unstreamable is None:  # on to the end: an invalid input says why
                            try:
                                unknown = len(later)
                                part = part_of(piece, measure=True, make=target.observes)
                                if target.observes:
                                    target.observe(part, later[unknown:])
                                if early is not None:
                                    target.write_early(part, len(later) > unknown)
                            except NotStreamable as exc:
                                unstreamable = exc
                    verdict = target.verdict = source.verdict()
                    if not verdict.ok:
                        return StreamedConversion(verdict.diagnostics)
                    if unstreamable is not None:
                        raise unstreamable
                    target.resolved(source.in_file)
                    header = at_end()
                    if early is not None and target.finish_early(header):
                        problem = target.read_back(early.path)
                        if problem is not None:
                            raise _Refused(StreamedConversion(verdict.diagnostics, (problem,)))
                        early.keep = True
                        return conversion(verdict, target.early_rows)
                finally:
                    target.close_early()
            written = _write(output, target, parts(source.reads(chunks(), check=False), False),
                             lambda: header, lambda: header)
            return conversion(verdict, written)
        written = _write(output, target, parts(source.reads(chunks(), check=True), True),
                         lambda: target.header(source), at_end)
        return conversion(target.verdict, written)
    except NotStreamable as exc:
        return StreamedConversion(
            (), (error(f"cannot convert in chunks: {exc}; convert a file under the input "
                       "size limit", "convert.not-streamable"),))
    except _Refused as refusal:
        return refusal.conversion
    except LineTooLong as exc:  # what would bound memory is a line that never ends
        return StreamedConversion((error(f"{exc}; a large input is read a line at a time",
                                         "input.too-large", line=exc.line, column=1),))


class _Refused(Exception):
    """Raised while the output is written: the input was invalid, the conversion refused or
    the output does not read back, so the temporary output is removed."""

    def __init__(self, conversion: StreamedConversion) -> None:
        super().__init__("refused")
        self.conversion = conversion


def _normal_form_losses(spec: FormatDeclaration, document: Document) -> frozenset[str]:
    return spec.normal_form_losses(document) if spec.normal_form_losses else frozenset()


def _loss_warnings(summed: _Losses, strict: bool, target: FormatDeclaration
                   ) -> tuple[Diagnostic, ...]:
    severity = error if strict else warning
    return tuple(severity(f"{target.name} cannot hold {loss.render()}", "convert.loss")
                 for loss in summed.losses())


def _refused(summed: _Losses, jobs: int, strict: bool, source: FormatDeclaration,
             target: FormatDeclaration) -> tuple[Diagnostic, ...] | None:
    """Why the whole-file path would refuse: no jobs to convert, or a loss with --strict."""
    from dcx.converters.convert import refusal

    if not jobs:
        document = Document(workload=Workload())
        problem = refusal(document, document, source.name, target)
        if problem is not None:
            return (problem,)
    problems = _loss_warnings(summed, strict, target)
    return problems if has_errors(problems) else None


def _with_dependencies(table: Any, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
    """``table`` whose rows in ``earlier`` also depend on the tasks given there, each put
    back at its place in the row's list."""
    import pyarrow as pa

    position = table.schema.get_field_index("dependencies")
    kind = table.schema.field(position).type
    lists = table.column(position).to_pylist()
    for row, insertions in earlier.items():
        lists[row] = _inserted(lists[row], insertions)
    try:
        column = pa.array(lists, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise NotStreamable("a dependency's id is not of its chunk's kind") from None
    return table.set_column(position, table.schema.field(position), column)


def _inserted(values: Sequence[Any], insertions: Sequence[tuple[int, Any]]) -> list[Any]:
    """``values`` with each ``(place, value)`` of ``insertions`` (places going up) put at
    that place of the list it makes."""
    result = list(values)
    for place, value in insertions:
        result.insert(place, value)
    return result


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


_REQUESTS = ("os", "arch", "features")
"""The columns the Parquet writer adds after the model's own where some task asks one."""


class _Schema:
    """The one Arrow schema of every row group (see the module docstring)."""

    def __init__(self, fixed: bool, pipe_extras: tuple[tuple[str, Any], ...]) -> None:
        self.fixed = fixed
        self.pipe_extras = pipe_extras
        self.types: dict[str, Any] = {}

    def add(self, table: Any) -> None:
        import pyarrow as pa

        for name, kind in zip(table.column_names, table.schema.types, strict=True):
            known = self.types.get(name)
            if known is None or known == kind:
                self.types.setdefault(name, kind)
            elif {known, kind} == {pa.int64(), pa.float64()}:
                self.types[name] = pa.float64()
            else:
                raise NotStreamable(f"column {name} is {known} in one chunk and {kind} in "
                                    "another")
        # the writer's order: the model's columns (os, arch, features where some task asks
        # one), then the extras columns in the order they first appear
        order = {name: index for index, name in enumerate(self.types)}
        self.types = dict(sorted(self.types.items(), key=lambda item: (
            2 if item[0].startswith("extras") else 1 if item[0] in _REQUESTS else 0,
            _REQUESTS.index(item[0]) if item[0] in _REQUESTS else order[item[0]])))

    def schema(self, first: Any) -> Any:
        """The schema, given the first table to write (a pipe's schema starts from it)."""
        import pyarrow as pa

        if self.fixed and not self.types:
            self.add(first)
            for key, wanted in self.pipe_extras:
                name = "extras." + key
                known = self.types.get(name)
                self.types[name] = wanted if known is None or known == pa.int64() else known
        return pa.schema(list(self.types.items()))


def _swf_extras_keys() -> tuple[str, ...]:
    """Every ``swf:`` task extras key the SWF reader makes, in its columns' order."""
    from dcx.formats.swf import codec as swf_codec

    return (swf_codec._ALLOCATED_KEY, swf_codec._REQUESTED_KEY,
            *("swf:" + name for name in swf_codec._EXTRA_COLUMNS), swf_codec._PRECEDING_KEY)


def _conformed(table: Any, schema: Any) -> Any:
    """``table`` with ``schema``'s columns: absent ones null (features: empty), integers
    widened to doubles."""
    import pyarrow as pa

    columns = []
    for column_field in schema:
        if column_field.name in table.column_names:
            column = table.column(column_field.name)
            if column.type != column_field.type:
                try:
                    column = column.cast(column_field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    raise NotStreamable(f"column {column_field.name} is {column.type} in one "
                                        f"chunk and {column_field.type} in another") from None
            columns.append(column)
        elif column_field.name == "features":  # a task that asks none: an empty list
            columns.append(pa.array([[]] * table.num_rows, column_field.type))
        else:
            columns.append(pa.nulls(table.num_rows, column_field.type))
    extra = set(table.column_names) - set(schema.names)
    if extra:
        raise NotStreamable(f"column {sorted(extra)[0]} is in a later chunk only")
    return pa.Table.from_arrays(columns, schema=schema)


class _Target:
    """What a target does with the chunks' documents: one part each (a Parquet row group,
    SWF lines), written after what comes first (a header) and read back afterwards."""

    spec: FormatDeclaration
    verdict: Any = None
    """The input's ``ChunkedRead``, once it is all read."""
    warned: tuple[Diagnostic, ...] = ()
    """``convert.output-warning``: what the output warns of and the input did not."""
    strict: bool = False
    observes: bool = False
    """The first reading of a file makes each part for ``observe`` (Parquet's schema)."""
    jobs_are_rows: bool = False
    """Each row the target writes is a job (an SWF line)."""
    dependencies_across: bool = False
    """A preceding job of an earlier chunk becomes a dependency in the part (``_cross_chunk``)
    rather than staying the extras value a chunk's document keeps (SWF writes both alike)."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        raise NotImplementedError

    def header(self, source: _Source) -> Workload:
        """What the output writes first: the input's header read so far."""
        return source.header(self.spec)

    def rows(self, part: Any) -> int:
        raise NotImplementedError

    def observe(self, part: Any, unknown: list[Any]) -> None:
        """A part of the first reading of a file (nothing is written then), and the
        preceding jobs its chunk did not know (yet)."""

    def resolved(self, in_file: Callable[[Any], bool]) -> None:
        """After the first reading of a file: which job numbers are in it (a preceding job
        a chunk did not know stays an extras value only when it is not)."""

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        raise NotImplementedError

    def read_back(self, path: str) -> Diagnostic | None:
        """Why the output at ``path`` is not accepted, if it is not."""
        raise NotImplementedError

    writes_early: bool = False
    """The first reading of a file may write its parts to ``start_early``'s path, so that
    the file is read only once when what is written first turns out right at the end."""
    early_rows: int = 0

    def start_early(self, path: str) -> None:
        raise NotImplementedError

    def write_early(self, part: Any, unknown: bool) -> None:
        """A part of the first reading (after ``observe``); ``unknown``: its chunk names a
        preceding job it did not know (yet), which the second reading may know."""
        raise NotImplementedError

    def finish_early(self, header: Workload) -> bool:
        """Whether what was written early is the output (then it is complete)."""
        raise NotImplementedError

    def close_early(self) -> None:
        """Let go of what was written early, if it is still open."""


class _ParquetTarget(_Target):
    def __init__(self, source: _Source, reopenable: bool) -> None:
        from dcx.formats import parquet

        self.spec = parquet.FORMAT
        self.dependencies_across = True
        self.observes = True
        self.plan = _Schema(not reopenable, source.pipe_extras())
        self.preceding_unknown = isinstance(source, _SwfSource)
        """A chunk's preceding-job extras column may be a dependency in the whole file."""
        self.preceding: list[tuple[int, list[Any], Any]] = []
        """Where the preceding-job extras column would go, per part that has it."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dcx.formats import parquet

        table = parquet.codec.rows_of(parquet.normal_form(document).workload or Workload())
        if table is None:
            raise NotStreamable("the Parquet writer cannot write a chunk's rows")
        return _with_dependencies(table, earlier) if earlier else table

    def rows(self, part: Any) -> int:
        return int(part.num_rows)

    def observe(self, part: Any, unknown: list[Any]) -> None:
        # the preceding-job extras column is the whole file's only where a job it names is
        # not in the file, known at the end: where it would go is kept until then
        name = "extras." + _PRECEDING_KEY
        if name not in part.column_names or not self.preceding_unknown:
            self.plan.add(part)
            return
        new = [column for column in part.column_names if column not in self.plan.types]
        self.preceding.append((len(self.plan.types) + new.index(name), unknown,
                               part.schema.field(name).type))
        self.plan.add(part.drop_columns([name]))

    def resolved(self, in_file: Callable[[Any], bool]) -> None:
        for position, unknown, kind in self.preceding:
            if not all(map(in_file, unknown)):
                names = list(self.plan.types)
                names.insert(position, "extras." + _PRECEDING_KEY)
                self.plan.types = {name: self.plan.types.get(name, kind) for name in names}
                return

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        import pyarrow.parquet as pq

        from dcx.formats import parquet

        writer = None
        rows = 0
        try:
            for table in parts:
                if writer is None:
                    schema = self.plan.schema(table)
                    writer = pq.ParquetWriter(sink, schema, store_schema=False,
                                              **parquet.codec.writer_options(schema))
                writer.write_table(_conformed(table, schema), row_group_size=table.num_rows)
                rows += table.num_rows
            workload = at_end()
            if writer is None:
                schema = self.plan.schema(parquet.codec.rows_of(Workload()))
                writer = pq.ParquetWriter(sink, schema, store_schema=False,
                                          **parquet.codec.writer_options(schema))
            # the metadata is known at the end; without a stored Arrow schema (whose own
            # copy of the metadata would be the one at the start) readers take the footer's
            writer.add_key_value_metadata(parquet.codec.header_metadata(workload))
        finally:
            if writer is not None:
                writer.close()
        return rows

    writes_early = True

    def start_early(self, path: str) -> None:
        self.early_path: str | None = path
        self.early_writer: Any = None
        self.early_schema: Any = None

    def write_early(self, part: Any, unknown: bool) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from dcx.formats import parquet

        if self.early_path is None or not part.num_rows:
            return
        schema = pa.schema(list(self.plan.types.items()))
        if unknown or (self.early_schema is not None and not schema.equals(self.early_schema)) \
                or not set(part.column_names) <= set(schema.names):
            self.close_early()  # the schema changes, or may: the second reading writes
            self.early_path = None
            return
        if self.early_writer is None:
            self.early_schema = schema
            self.early_writer = pq.ParquetWriter(self.early_path, schema, store_schema=False,
                                                 **parquet.codec.writer_options(schema))
        self.early_writer.write_table(_conformed(part, schema), row_group_size=part.num_rows)
        self.early_rows += part.num_rows

    def finish_early(self, header: Workload) -> bool:
        import pyarrow as pa

        from dcx.formats import parquet

        if self.early_writer is None or self.early_path is None or \
                not pa.schema(list(self.plan.types.items())).equals(self.early_schema):
            return False
        self.early_writer.add_key_value_metadata(parquet.codec.header_metadata(header))
        self.close_early()
        return True

    def close_early(self) -> None:
        writer, self.early_writer = getattr(self, "early_writer", None), None
        if writer is not None:
            writer.close()

    def read_back(self, path: str) -> Diagnostic | None:
        from dcx.converters.partitions import read_parts

        # the reader dcx validate runs on a large Parquet file, its row groups in turn
        problems = read_parts(path, self.spec).diagnostics
        return _invalid_output("parquet", problems) if problems else None


class _SwfTarget(_Target):
    """SWF lines: the header first (a pipe's: what its first chunk holds; a header line in a
    later chunk, which the whole file would write at the top, stops the conversion)."""

    def __init__(self, source: _Source, reopenable: bool) -> None:
        from dcx.formats import swf

        self.spec = swf.FORMAT
        self.jobs_are_rows = True

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dataclasses import replace

        from dcx.formats.swf import codec

        # a preceding job of an earlier chunk is written from extras as from a dependency
        workload = codec.normal_form(document).workload or Workload()
        if not len(workload.jobs):
            return b""
        jobs_only = Workload(jobs=workload.jobs)
        return codec.write(replace(document, workload=jobs_only)).data

    def rows(self, part: Any) -> int:
        return int(part.count(b"\n"))

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        from dcx.formats.swf import codec

        rows = 0
        written: list[str] | None = None
        with _binary(sink) as stream:
            for data in parts:
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

    def read_back(self, path: str) -> Diagnostic | None:
        return _read_back_in_chunks(self, path)


def _read_back_in_chunks(target: _Target, path: str) -> Diagnostic | None:
    """Why the text output at ``path`` is not accepted by its format's chunked reader, if it
    is not; what it warns of and the input did not goes to ``target.warned``."""
    from dcx.converters.catalogue import conformance_codes
    from dcx.parsing import chunks

    spec = target.spec
    assert spec.read_chunks is not None
    with open(path, "rb") as stream:
        found = spec.read_chunks(chunks.line_chunks(stream.read, b"", chunks.CHUNK_BYTES))
    rejected = [d for d in found.diagnostics if d.is_error or d.code in conformance_codes()]
    if rejected:
        return _invalid_output(spec.name, rejected)
    inherited = {d.code for d in target.verdict.diagnostics} if target.verdict else set()
    severity = error if target.strict else warning
    target.warned = tuple(severity(f"the {spec.name} output will warn: {d.message}",
                                   "convert.output-warning")
                          for d in found.diagnostics if d.code not in inherited)
    refused = [d for d in target.warned if d.is_error]
    return refused[0] if refused else None


class _GwfTarget(_Target):
    """GWF task lines, after the header line of the file's variant (``codec.write_part``):
    a file's is known from its first reading, which writes in its first chunk's variant and
    is kept when no later chunk makes it the other (else the file is read again); a pipe's
    is its first chunk's, and a later chunk that would make it the other stops the
    conversion."""

    def __init__(self, source: _Source, reopenable: bool) -> None:
        from dcx.formats import gwf

        self.spec = gwf.FORMAT
        self.dependencies_across = True
        self.observes = True
        self.variant: Variant | None = None
        """The file's variant, once the first reading has seen every chunk."""
        self.archive = False
        """Some chunk's variant so far is the archive variant."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dcx.formats.gwf import codec

        restored = _restored(document, earlier)
        workload = restored.workload or Workload()
        columns = _columns(workload)
        tasks = len(columns) if columns is not None else sum(len(job.tasks)
                                                             for job in workload.jobs)
        return restored, codec.chunk_variant(workload), tasks

    def rows(self, part: Any) -> int:
        return int(part[2])

    def observe(self, part: Any, unknown: list[Any]) -> None:
        self.archive = self.archive or part[1] == "archive"

    def resolved(self, in_file: Callable[[Any], bool]) -> None:
        self.variant = "archive" if self.archive else "workflow"

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        from dcx.formats.gwf import codec

        rows = 0
        variant: Variant | None = self.variant
        with _binary(sink) as stream:
            for document, chunk_variant, count in parts:
                if variant is None:  # a pipe: its first chunk's
                    variant = chunk_variant
                if not rows:
                    stream.write((codec.header_line(variant) + "\n").encode())
                if chunk_variant == "archive" and variant != "archive":
                    raise NotStreamable("a task that only the archive variant holds after "
                                        "the first chunk (the whole file is written in "
                                        "that variant)")
                stream.write(codec.write_part(document, variant))
                rows += count
            at_end()
            if not rows:
                stream.write((codec.header_line(variant or "workflow") + "\n").encode())
        return rows

    def read_back(self, path: str) -> Diagnostic | None:
        return _read_back_in_chunks(self, path)

    writes_early = True

    def start_early(self, path: str) -> None:
        self.early_path: str | None = path
        self.early_stream: Any = None
        self.early_variant: Variant | None = None

    def write_early(self, part: Any, unknown: bool) -> None:
        from dcx.formats.gwf import codec

        document, chunk_variant, count = part
        if self.early_path is None or not count:
            return
        if self.early_variant is None:
            self.early_variant = chunk_variant
            self.early_stream = open(self.early_path, "wb")  # noqa: SIM115 (close_early)
            self.early_stream.write((codec.header_line(chunk_variant) + "\n").encode())
        elif chunk_variant == "archive" != self.early_variant:  # the file's, after all
            self.close_early()
            self.early_path = None
            return
        self.early_stream.write(codec.write_part(document, self.early_variant))
        self.early_rows += count

    def finish_early(self, header: Workload) -> bool:
        if self.early_path is None or self.early_stream is None \
                or self.early_variant != self.variant:
            return False
        self.close_early()
        return True

    def close_early(self) -> None:
        stream, self.early_stream = getattr(self, "early_stream", None), None
        if stream is not None:
            stream.close()


def _restored(document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Document:
    """``document`` whose tasks (by row) depend again on the tasks ``earlier`` gives, each
    at its place (what ``_Source.cross_chunk`` took out)."""
    from dataclasses import replace

    from dcx.core.columns import JobRows, columns_of

    workload = document.workload
    if not earlier or workload is None:
        return document
    columns = columns_of(workload)
    if columns is not None:
        import numpy as np

        offsets, ids = columns.dependency_offsets, columns.dependency_ids
        counts = np.diff(offsets)
        pieces = []
        at = 0
        for row in sorted(earlier):
            pieces.append(ids[offsets[at]:offsets[row]])
            full = _inserted(ids[offsets[row]:offsets[row + 1]].tolist(), earlier[row])
            pieces.append(np.array(full, dtype=ids.dtype))
            counts[row] = len(full)
            at = row + 1
        pieces.append(ids[offsets[at]:])
        restored = replace(columns, dependency_ids=np.concatenate(pieces),
                           dependency_offsets=np.concatenate(([0], np.cumsum(counts))
                                                             ).astype(np.int64))
        return replace(document, workload=replace(workload, jobs=JobRows(restored)))
    row = 0
    jobs = []
    for job in workload.jobs:
        tasks = []
        for task in job.tasks:
            if row in earlier:
                task = replace(task, dependencies=tuple(_inserted(task.dependencies,
                                                                  earlier[row])))
            tasks.append(task)
            row += 1
        jobs.append(replace(job, tasks=tuple(tasks)))
    return replace(document, workload=replace(workload, jobs=tuple(jobs)))


_TARGETS: dict[str, Callable[[_Source, bool], _Target]] = {
    "parquet": _ParquetTarget, "swf": _SwfTarget, "gwf": _GwfTarget}


@dataclass
class _Early:
    """A temporary file beside OUTPUT, renamed over it only when ``keep`` is set."""

    path: str
    keep: bool = False


class _Discarded(Exception):
    pass


@contextlib.contextmanager
def _early_output(output: str, target: _Target) -> Iterator[_Early | None]:
    """Where ``target`` writes during the first reading: a temporary file beside a regular
    OUTPUT (``None`` for standard output, devices, or a target that does not write early),
    removed at the end unless it is kept."""
    from dcx.converters.atomic import STDOUT, is_special, open_descriptor, temporary_beside

    if not target.writes_early or output == STDOUT or open_descriptor(output) is not None \
            or is_special(output):
        yield None
        return
    stack = contextlib.ExitStack()
    try:
        temporary = stack.enter_context(temporary_beside(output))
    except OSError:  # said when the output is written, after the input's diagnostics
        yield None
        return
    with contextlib.suppress(_Discarded), stack:
        early = _Early(temporary)
        target.start_early(temporary)
        yield early
        if not early.keep:
            raise _Discarded


@contextlib.contextmanager
def _binary(sink: Any) -> Iterator[Any]:
    """``sink`` (a path or an open binary stream) as an open binary stream."""
    if isinstance(sink, str):
        with open(sink, "wb") as stream:
            yield stream
    else:
        yield sink


def _write(output: str, target: _Target, parts: Iterator[Any],
           header: Callable[[], Workload], at_end: Callable[[], Workload]) -> int:
    """Write the parts to ``output`` (through a temporary file for a regular file, renamed
    into place once it reads back accepted); the number of rows."""
    from dcx.converters.atomic import STDOUT, is_special, open_descriptor, temporary_beside

    descriptor = 1 if output == STDOUT else open_descriptor(output)
    if descriptor is not None:
        sys.stdout.flush()
        with os.fdopen(os.dup(descriptor), "wb") as stream:
            return target.write(stream, parts, header, at_end)
    if is_special(output):
        with open(output, "wb") as stream:
            return target.write(stream, parts, header, at_end)
    with temporary_beside(output) as temporary:
        rows = target.write(temporary, parts, header, at_end)
        problem = target.read_back(temporary)
        if problem is not None:
            raise _Refused(StreamedConversion(
                target.verdict.diagnostics if target.verdict else (), (problem,)))
    return rows


def _invalid_output(name: str, problems: Sequence[Diagnostic]) -> Diagnostic:
    reason = problems[0].render() if problems else "it does not read back"
    return error(f"internal error: dcx wrote {name} output that {name} does not accept "
                 f"({reason})", "convert.invalid-output")
