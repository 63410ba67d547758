"""What a conversion a chunk at a time is made of, below the formats: a format declares its
stream source (``FormatDeclaration.stream_source``: its chunked checker, how a chunk is read
as the whole-file reader reads it, what the chunks say of one another, the header the output
writes first) and its stream target (``stream_target``: what it makes of each chunk's
document, what it writes first, how it writes), each a subclass of ``Source`` or ``Target``
in its own package (``formats/<name>/stream_source.py``, ``stream_target.py``); the engine
(``dcx.converters.stream_convert``) drives them and names no format. Here too: the rules for
dependencies on tasks of other chunks (taken out of a chunk's document before its losses and
normal form, put back in the part), which every source and target share. See the engine's
module docstring for the whole story."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal, Protocol

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss, ReadResult, error
from dcx.core.fields import FIELDS
from dcx.core.model import Document, Task, Workload

ReadBack = Literal["chunks", "parts", "folder", "whole"]
Refuse = Callable[[Document, Document, str, FormatDeclaration], "Diagnostic | None"]
"""``refusal(document, normalized, source_name, target)`` of the whole-file path."""

PRECEDING_KEY = "swf:PrecedingJobNumber"


class Files(Protocol):
    """The file operations a stream target may use, lent by the engine (``Target.files``,
    ``dcx.converters.scratch``): a format package opens, moves and removes no file itself,
    so where scratch files go, and that they go away, is decided in one place."""

    def create(self, path: str) -> BinaryIO:
        """``path`` opened for writing (emptied first)."""
        ...

    def read(self, path: str) -> BinaryIO:
        ...

    def spool(self, beside: str | None, suffix: str) -> tuple[str, BinaryIO]:
        """A new scratch file open for writing, in the folder of the file ``beside`` when
        given (so that renaming it there is cheap), and its path."""
        ...

    def scratch_folder(self, prefix: str) -> str:
        """A new empty folder for scratch files (``remove_folder`` when done)."""
        ...

    def replace(self, source: str, target: str) -> None:
        ...

    def remove(self, path: str) -> None:
        """``path`` removed; a path already gone is no error."""
        ...

    def remove_folder(self, path: str) -> None:
        ...

    def size(self, path: str) -> int:
        ...

    def parquet_writer(self, where: str | BinaryIO, schema: Any, **options: Any) -> Any:
        """A ``pyarrow.parquet.ParquetWriter`` on ``where`` (a path, or an open stream the
        caller closes)."""
        ...

    def parquet_file(self, path: str) -> Any:
        """``path`` opened as a ``pyarrow.parquet.ParquetFile``."""
        ...


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
    """Its ``dcx.converters.stream_chunks.ChunkWork`` when it was converted elsewhere (a
    Dask worker): its ``read`` then holds no document."""
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
    preceding_as_extras: bool = False
    """A chunk keeps a preceding job it does not hold as an extras value (SWF), which may be
    a dependency in the whole file."""
    jobs_continue: bool = False
    """A chunk's first job may be the last job of the chunk before, continued (a GWF
    workflow whose tasks go on in the next chunk)."""
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
        if "task.id" in normal_form_losses_of(target, document):
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


def regrouped_ends(document: Document) -> tuple[bool, bool, int]:
    """Whether the first and the last job of ``document`` count a ``job`` loss (they are
    not a job of one task with its id), and its number of jobs."""
    from dcx.core.columns import regrouped_jobs
    from dcx.core.restrict import regrouped

    workload = document.workload or Workload()
    columns = columns_in(workload)
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


def columns_in(workload: Workload) -> Any:
    from dcx.core.columns import columns_of

    return columns_of(workload)


def workload_job_ids(workload: Workload) -> Any:
    """The workload's job ids, in order (``int64`` when they are all integers)."""
    import numpy as np

    columns = columns_in(workload)
    if columns is not None:
        return columns.job_ids
    ids = [job.id for job in workload.jobs]
    if all(type(value) is int and -(1 << 63) <= value < (1 << 63) for value in ids):
        return np.array(ids, dtype=np.int64)
    held = np.empty(len(ids), dtype=object)
    held[:] = ids
    return held


def as_preceding(document: Document, outside_of: Callable[[Any], Any], place: str
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
    columns = columns_in(workload)
    if columns is None:
        return objects_as_preceding(document, place)
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


def objects_as_preceding(document: Document, place: str) -> Document:
    """``as_preceding`` of a workload held as objects."""
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


def normal_form_losses_of(spec: FormatDeclaration, document: Document) -> frozenset[str]:
    return spec.normal_form_losses(document) if spec.normal_form_losses else frozenset()


def tasks_taken_out(document: Document, workload: Workload,
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


def columns_taken_out(document: Document, workload: Workload, columns: Any, outside: Any,
                       np: Any) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:
    """``tasks_taken_out`` of a workload held as columns: the dependencies ``outside``
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


def inserted(values: Sequence[Any], insertions: Sequence[tuple[int, Any]]) -> list[Any]:
    """``values`` with each ``(place, value)`` of ``insertions`` (places going up) put at
    that place of the list it makes."""
    result = list(values)
    for place, value in insertions:
        result.insert(place, value)
    return result


class Target:
    """What a target does with the chunks' documents: one part each (a Parquet row group,
    SWF lines), written after what comes first (a header) and read back afterwards."""

    spec: FormatDeclaration
    source: Source
    """The input whose chunks it converts (set by each target's ``__init__``)."""
    from_itself: bool = True
    """Its own format's stream source converts to it a chunk at a time (every declared
    stream source converts to every declared stream target: ``stream_pairs``)."""
    reads_back: ReadBack = "whole"
    """How the engine reads the output back (``dcx.converters.stream_chunks.read_back``):
    ``chunks`` by the format's chunked reader, ``parts`` a part at a time
    (``read_parts``), ``folder`` a folder format's members as ``dcx validate`` reads them,
    ``whole`` by ``read`` when within the input size limit."""
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
    """A preceding job of an earlier chunk becomes a dependency in the part (``Source.cross_chunk``)
    rather than staying the extras value a chunk's document keeps (SWF writes both alike)."""
    files: Files
    """The file operations the engine lends the target (set with the target:
    ``dcx.converters.stream_chunks.stream_target``)."""
    derive_losses: Callable[[Document, FormatDeclaration, Document | None], tuple[Loss, ...]]
    """A chunk's losses as the whole-file conversion derives and names them
    (``dcx.converters.losses.conversion_losses``: the one comparison, with what the
    formats call each field), lent by the engine with ``files``."""

    def __init__(self, source: Source, reopenable: bool) -> None:
        """A target for ``source``'s chunks; ``reopenable``: the input is a file, read
        twice when the first reading cannot write the output."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        raise NotImplementedError

    def header(self, source: Source) -> Workload:
        """What the output writes first: the input's header read so far."""
        return source.header(self.spec)

    def cut_ends(self, document: Document, counted: bool) -> tuple[bool, bool, int]:
        """Whether the first and the last job of a chunk's ``document`` count a ``job``
        loss, and its number of jobs (``counted``: the chunk counted ``job`` losses), once
        its ``losses`` are measured: ``cut_ends``, in the document as given."""
        return cut_ends(document, counted)

    def refusal(self, source: FormatDeclaration, verdict: Any, refuse: Refuse
                ) -> Diagnostic | None:
        """Why the whole-file path would refuse the input (``verdict``, all read, with jobs)
        for what the target made of it, if it would (``convert.nothing-held``); ``refuse``
        is the whole-file path's rule (``dcx.converters.convert.refusal``)."""
        return None

    def rows(self, part: Any) -> int:
        raise NotImplementedError

    def losses(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]
               ) -> dict[Any, tuple[Loss, ...]]:
        """A chunk's losses in each form the output may take, until the input says which
        (``measured_as``; GWF's variant): here the one the target's normal form gives."""
        return {None: self.derive_losses(document, self.spec, None)}

    def measured_as(self) -> Any:
        """Which of ``losses``' forms the output takes, once the input is read."""
        return None

    unknown_in_file: bool = False
    """After the first reading of a file: a preceding job some chunk did not know (no
    earlier chunk held it) is a job of the file after all (set by the engine)."""
    loses_unknown_otherwise: bool = False
    """Such a job is a dependency whose loss differs from that of the extras value its chunk
    kept (GWF, Batsim, osp-workload; Parquet and SWF hold both alike)."""

    def measures_again(self) -> bool:
        """After ``resolved``: the first reading's losses are not the whole file's, so a
        second reading measures them before the output is written."""
        return self.loses_unknown_otherwise and self.unknown_in_file

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        """The losses of the conversion, given ``losses``, those the chunks' losses in the
        output's form sum to, once the input is read (``counted``: the paths the chunks
        counted in a form)."""
        return losses

    def observe(self, part: Any, unknown: list[Any]) -> None:
        """A part of the first reading of a file (nothing is written then), and the
        preceding jobs its chunk did not know (yet)."""

    def resolved(self, in_file: Callable[[Any], bool]) -> None:
        """After the first reading of a file: which job numbers are in it (a preceding job
        a chunk did not know stays an extras value only when it is not)."""

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        raise NotImplementedError

    @contextlib.contextmanager
    def opened(self, sink: str | BinaryIO) -> Iterator[BinaryIO]:
        """``sink`` (a path or an open binary stream) as an open binary stream."""
        if isinstance(sink, str):
            with self.files.create(sink) as stream:
                yield stream
        else:
            yield sink

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


class LinesTarget(Target):
    """A text target written early as lines: what goes first once the first part gives it
    (``begin_early``), then each part's lines; nothing is written for a file that has
    no parts."""

    writes_early = True

    def start_early(self, path: str) -> None:
        self.early_path = path
        self.early_stream: Any = None

    def early_begun(self) -> bool:
        return getattr(self, "early_stream", None) is not None

    def begin_early(self, head: str) -> None:
        self.early_stream = self.files.create(self.early_path)
        self.early_stream.write(head.encode())

    def write_early_lines(self, data: bytes, rows: int) -> None:
        self.early_stream.write(data)
        self.early_rows += rows

    def close_early(self) -> None:
        stream, self.early_stream = getattr(self, "early_stream", None), None
        if stream is not None:
            stream.close()


CHANGED = "changed"
"""``GwfTarget.losses``' forms ``(CHANGED, variant)`` (``SwfTarget.losses``': the form
itself): the value paths a chunk's normal form (in that variant) changes."""


TRACE_VALUE_PATHS = frozenset({
    "task.submit_time_s", "task.runtime_s", "task.requested_time_s", "task.request.cores",
    "task.request.memory_mb", "task.user", "task.group", "task.dependencies",
    "task.dependencies.multiple", "task.status", "task.wait_time_s", "task.used_memory_mb",
    "task.cpu_time_s", "task.application", "task.queue", "task.partition",
    "task.think_time_s"})
"""The task fields whose values GWF's and SWF's normal forms may change where they hold
them
(``codec._Normalizer``), which a chunk's losses count for the file (``GwfTarget.losses``,
``SwfTarget.losses``)."""


def changing(paths: frozenset[str]) -> Callable[[Document], frozenset[str]]:
    """A ``normal_form_losses`` by which the normal form changes ``paths`` of any document."""
    return lambda _: paths


def with_dependencies_back(document: Document, earlier: dict[int, list[tuple[int, Any]]]
                           ) -> Document:
    """``document`` whose tasks (by row) depend again on the tasks ``earlier`` gives, each
    at its place (what ``Source.cross_chunk`` took out)."""
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
            full = inserted(ids[offsets[row]:offsets[row + 1]].tolist(), earlier[row])
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
                task = replace(task, dependencies=tuple(inserted(task.dependencies,
                                                                  earlier[row])))
            tasks.append(task)
            row += 1
        jobs.append(replace(job, tasks=tuple(tasks)))
    return replace(document, workload=replace(workload, jobs=tuple(jobs)))


def with_header_losses(target: Target, losses: tuple[Loss, ...], not_lost: frozenset[str]
                       ) -> tuple[Loss, ...]:
    """``Target.reported`` of a target whose chunks count value paths in every chunk:
    ``losses`` without the value paths ``not_lost`` (no chunk's normal form changes a value
    of them), and with the workload's own fields as the header the whole input gives loses
    them (each chunk has the header lines it holds; the whole file one workload of them
    all)."""
    from dataclasses import replace

    header = target.source.header(replace(target.spec, normal_form=None))
    of_header = target.derive_losses(Document(workload=replace(header, jobs=())), target.spec,
                                     None)
    kept = [loss for loss in losses if loss.field not in not_lost
            and not loss.field.startswith("workload.")]
    order = {path: index for index, path in enumerate(FIELDS)}
    return tuple(sorted((*kept, *(loss for loss in of_header
                                  if loss.field.startswith("workload."))),
                        key=lambda loss: order[loss.field]))


def invalid_output(name: str, problems: Sequence[Diagnostic]) -> Diagnostic:
    reason = problems[0].render() if problems else "it does not read back"
    return error(f"internal error: dcx wrote {name} output that {name} does not accept "
                 f"({reason})", "convert.invalid-output")


class JsonTarget(Target):
    """What the JSON targets share: the source whose header gives the workload's losses."""

    source: Source


class RowGroupSource(Source):
    """A source read a part at a time by seeking (Parquet's row groups, an OpenDC workload's
    slices of tasks), each part's document holding whole jobs with their dependencies on
    tasks of other parts: those are taken out and put back as GWF's are; to SWF, which
    holds one preceding job per task, such a dependency is the preceding job's extras value
    the writer writes as it writes a dependency, and a task with more than one dependency,
    one of them in another part, stops the conversion. The methods after ``header`` are
    what a Dask cluster runs per part (``dcx.converters.stream_dask``)."""

    place = "row group"
    """What a part is called in what stops a conversion."""

    def __init__(self) -> None:
        import numpy as np

        self.np = np
        self.checked = None
        self.found: Any = None
        self.header_read = Workload()

    @staticmethod
    def stops_reading(found: Any) -> bool:
        """Whether a part's findings make the file invalid where its rows are read: the
        parts from there on are only checked."""
        raise NotImplementedError

    def verdict(self) -> Any:
        return self.found

    def jobs(self, verdict: Any, rows: int) -> int:
        return int(verdict.jobs or 0)

    def outside(self, columns: Any) -> Any:
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
        columns = columns_in(workload) if workload is not None else None
        if workload is None or columns is None or not len(columns.dependency_ids):
            return document, {}
        return columns_taken_out(document, workload, columns, self.outside(columns), np)

    def own_chunk(self, document: Document) -> Document:
        """To SWF: each dependency on a task of another part as the preceding job's
        extras value (see the class docstring)."""
        return as_preceding(document, self.outside, self.place)

    def unstreamable(self, document: Document, target: FormatDeclaration) -> str | None:
        lost = normal_form_losses_of(target, document)
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

    def open_parts(self, opened: Any) -> tuple[Any, tuple[Diagnostic, ...]]:
        """The footer every part's check needs, or ``None`` and why the file is invalid."""
        raise NotImplementedError

    def check_part(self, opened: Any, parts: Any, index: int) -> Any:
        """Part ``index``'s findings (or the ``Diagnostic`` that it is unreadable)."""
        raise NotImplementedError

    def finish_parts(self, parts: Any, findings: list[Any], opened: Any) -> Any:
        """Every part's findings, in order, into the file's ``ChunkedRead``."""
        raise NotImplementedError

    def read_group(self, opened: Any, parts: Any, index: int
                   ) -> tuple[ReadResult | None, bool]:
        """Part ``index``'s document read on its own, and whether it is the first with
        jobs."""
        raise NotImplementedError
