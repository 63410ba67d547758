"""``dcx convert`` of a trace too large to hold: SWF to Parquet, to SWF or to GWF, GWF to
Parquet, to GWF or to SWF, a chunk of whole lines at a time, in memory bounded by the chunk size
(``dcx.parsing.chunks``), whatever the trace's length; a Parquet file (not a pipe: row groups
are read by seeking) to Parquet, SWF or GWF a row group at a time (its jobs whole: the rows of
a job that continues in the next row group are read with it). Those inputs convert to Batsim
and osp-workload JSON the same way, and to an OpenDC workload
folder (written into a temporary folder beside OUTPUT,
``folders.folder_beside``, renamed into place once it reads back accepted). An OpenDC
workload folder is a source too, its files read by row groups and its tasks a slice at a
time, each with its fragments, to every target but
itself. ``dcx.converters.streaming`` decides when (the inputs ``dcx validate`` streams); this
module converts.

One engine for every source format (this module), which names no format; a ``Source`` is
what differs between them (its chunked checker, how a chunk is read, what the chunks say of
one another, the header), a ``Target`` what a target makes of each chunk: each format
declares its own (``FormatDeclaration.stream_source``, ``stream_target``: the classes in its
package's ``stream_source.py`` and ``stream_target.py``, on ``dcx.core.streams``' base
classes), and the pairs converted a chunk at a time derive from those declarations
(``stream_pairs``).
Per chunk: the source format's chunked reader
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
between chunks is one job, its ``job`` loss, to SWF, counted once). A target whose losses
depend on what only the whole input decides (GWF's variant) measures each chunk in every
form it may take (``Target.losses``) and reports the sum of the one it takes
(``Target.reported``: GWF's workload fields as the whole header loses them, a value path
counted only where the file's normal form changes some value of it); when the first
reading of a file cannot measure them (an SWF preceding job met before its line, a
dependency to GWF), a second reading measures them before the output is written.

A file is read to check it and find what is written first (Parquet's schema, SWF's header,
GWF's variant), so its output is the whole-file path's. A regular file is written during
that reading, with the schema (the header, the variant) the first part gives, and kept when
the whole file's turns out the same (no later chunk adds a column or widens one, no
preceding job is met before its line; no SWF header line comes after the first chunk; the
chunks' fields make the whole file the GWF variant its first chunk's make it); otherwise,
and for standard output and devices, the file is read again to write it. Parquet's schema is
the columns any chunk has, in the order they first appear (as the whole-file writer orders
the extras of jobs read line by line); an extras column integer in one chunk and not in
another is a double, as the whole-file writer makes it. A pipe is read once: its Parquet
schema is the first chunk's plus every extras column the source format has (``swf:``:
integers where SWF's field is an integer, doubles elsewhere; ``gwf:``: as GWF's archive
columns read), null where a chunk has none; its SWF header is the one its first chunk holds
(a header line among later jobs, which the whole file would write at the top, stops it); its
GWF variant is its first chunk's (a later chunk that makes the whole trace the other variant
stops it).

A dependency on a task of another chunk is the one the whole file has: an SWF chunk keeps a
preceding job it does not hold as an extras value, a GWF chunk's normal form would drop it,
so it is taken out of the chunk's document before the losses and the normal form and put
back in the part (at its place in the task's list); to SWF, which holds one preceding job,
a GWF or Parquet dependency on a task of another chunk is the preceding job's extras value
the SWF writer writes as it writes a dependency. A GWF workflow whose tasks continue in
the next chunk is one job, as in the whole file. What cannot be cut into chunks stops the
conversion (``convert.not-streamable``): SWF job numbers that are not all integers, GWF
text ids and Parquet ids the target renumbers (the whole file may number them otherwise);
to SWF, a GWF or Parquet task with several dependencies, one on a task of another chunk
or row group (SWF holds one); a GWF workflow whose tasks are not on consecutive lines (the
whole file writes them together); to an OpenDC workload, opendc-workload data its columns
cannot carry as they are; in a pipe, an SWF preceding job that comes later in the trace, or
a header line after the first chunk that changes an OpenDC workload's time origin.

The output is written to a temporary file beside OUTPUT, read back under the target's reader
rules (Parquet a row group at a time, ``read_parts``; SWF and GWF through their chunked
readers), and renamed over OUTPUT only when the input was valid, the conversion refused
nothing and the output reads back accepted. Standard output and devices get the parts as
they are written.

With a Dask cluster (``dcx convert --workers N`` / ``--scheduler-address``), a Parquet file's
chunks are checked, read and made into parts on the workers (``stream_dask``): each chunk's
work is ``chunk_work``, the function this process runs per chunk, and the engine, told what
each reading asks of a chunk (``Source.asks``), takes the results in order as it takes a
chunk here; what it sums, writes and reads back is the same.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dcx.converters.registry import get
from dcx.converters.stream_chunks import (
    chunk_work,
    read_back,
    stream_source,
    stream_target,
)
from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss, ReadResult, error, has_errors, warning
from dcx.core.fields import FIELDS
from dcx.core.model import Document, Workload
from dcx.core.streams import Chunk, NotStreamable, Source, Target

CODES = (
    Code("convert.not-streamable", "error",
         "A trace read in chunks has what only the whole file can convert (SWF job numbers "
         "that are not all integers, GWF text ids, a GWF workflow whose tasks are not on "
         "consecutive lines, Parquet ids the target renumbers, to SWF a GWF or Parquet task "
         "with several dependencies, one in another chunk or row group; in a pipe, a "
         "preceding job later in the trace or, to SWF, a header line among later jobs, or, "
         "to GWF, a later chunk that makes the trace the other variant than its first; to "
         "an OpenDC workload, opendc-workload data its columns cannot carry as they are or, "
         "in a pipe, a header line after the first chunk that changes the time origin)."),
)


_JOB_POINTER = re.compile(r"/workload/jobs/(\d+)(?:/tasks/(\d+))?")
_FIELD_ORDER = {path: index for index, path in enumerate(FIELDS)}

Chunks = Callable[[], Iterable[Any]]
"""Opens the input (again) as chunks of whole lines (Parquet: gives the open file once); a
pipe can be opened only once."""


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

    def add(self, losses: Sequence[Loss], piece: Chunk) -> None:
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
                if loss.first == "/workload/jobs/0" and piece.cut_job_place is not None:
                    self.places[first] = piece.cut_job_place  # (a job begun in an earlier chunk)
                else:
                    line, column = piece.read.locate(loss.first)
                    if line is not None:
                        self.places[first] = (line + piece.first_line - 1, column)

    cut_job_counted: bool = False
    """The last job of the chunks so far counted a ``job`` loss (one cut between chunks is
    one job: counted once)."""

    def join_cut_job(self, piece: Chunk, ends: tuple[bool, bool, int]) -> None:
        """After ``add`` of a chunk (``ends``: its ``cut_ends``): its first job, when it
        began in an earlier chunk that counted it already, is not counted again (a job
        whose every piece is one task with the job's id is one task with its id)."""
        first, last, jobs = ends
        if piece.tasks_before and first and self.cut_job_counted:
            count = self.counts["job"]
            self.counts["job"] = count - 1 if count else count
        continued = jobs <= 1 and bool(piece.tasks_before) and self.cut_job_counted
        self.cut_job_counted = last or continued

    def reported(self, losses: tuple[Loss, ...]) -> _Losses:
        """These losses as ``losses`` gives them (``Target.reported``)."""
        if losses == self.losses():
            return self
        return replace(self, counts={loss.field: loss.count for loss in losses},
                       details={**self.details, **{loss.field: loss.detail for loss in losses}},
                       firsts={**self.firsts, **{loss.field: loss.first for loss in losses}})

    def losses(self) -> tuple[Loss, ...]:
        return tuple(Loss(path, self.counts[path], self.details[path], self.firsts[path])
                     for path in sorted(self.counts, key=_FIELD_ORDER.__getitem__))


def convert_chunks(source_name: str, chunks: Chunks, reopenable: bool, output: str,
                   target_name: str, strict: bool = False, client: Any = None,
                   path: str | None = None) -> StreamedConversion:
    """Convert the ``source_name`` trace ``chunks`` gives to ``target_name``
    (``stream_pairs``) at ``output`` (``-``: stdout). ``reopenable``: ``chunks`` may be called
    twice (a file), so what the output writes first is the file's own before anything is
    written. With a Dask ``client``, a Parquet file (at ``path``) has its row groups checked
    and converted on the cluster's workers (``stream_dask``), with the same outcome."""
    from dcx.parsing.chunks import LineTooLong

    if client is not None:
        from dcx.converters.stream_dask import dask_source

        assert path is not None and reopenable
        source: Source = dask_source(get(source_name), client, path, target_name)
    else:
        source = stream_source(source_name)
    target = stream_target(target_name, source, reopenable)
    target.strict = strict
    run = _ChunkedConversion(source, target, chunks, reopenable, strict)
    try:
        return run.read_twice(output) if reopenable else run.read_once(output)
    except NotStreamable as exc:
        return StreamedConversion(
            (), (error(f"cannot convert in chunks: {exc}; convert a file under the input "
                       "size limit", "convert.not-streamable"),))
    except _Refused as refusal:
        return refusal.conversion
    except LineTooLong as exc:  # what would bound memory is a line that never ends
        return StreamedConversion((error(f"{exc}; a large input is read a line at a time",
                                         "input.too-large", line=exc.line, column=1),))


class _ChunkedConversion:
    """One ``convert_chunks``: its source and target, the tasks that name a task of a later
    chunk, and the losses summed over chunks per form the output may take
    (``Target.losses``)."""

    def __init__(self, source: Source, target: Target, chunks: Chunks, reopenable: bool,
                 strict: bool) -> None:
        self.source, self.target, self.chunks = source, target, chunks
        self.reopenable, self.strict = reopenable, strict
        self.later: list[Any] = []
        self.sums: dict[Any, _Losses] = {}

    def read_once(self, output: str) -> StreamedConversion:
        """A pipe: each chunk is checked, measured and written as it comes."""
        target = self.target
        written = _write(output, target, self.parts(self.reading(True, True, True), True),
                         lambda: target.header(self.source), self.at_end)
        return self.conversion(target.verdict, written)

    def read_twice(self, output: str) -> StreamedConversion:
        """A file: the first reading checks it and finds what to write first (or writes it
        early, when the target can keep what it wrote); the second writes."""
        target = self.target
        with _early_output(output, target) as early:
            try:
                verdict = self.first_reading(early)
                if not verdict.ok:
                    return StreamedConversion(verdict.diagnostics)
                header = self.settled_header()
                if early is not None and target.finish_early(header):
                    problem = read_back(target, early.path)
                    if problem is not None:
                        raise _Refused(StreamedConversion(verdict.diagnostics, (problem,)))
                    early.keep = True
                    return self.conversion(verdict, target.early_rows)
            finally:
                target.close_early()
        written = _write(output, target, self.parts(self.reading(False, False, True), False),
                         lambda: header, lambda: header)
        return self.conversion(verdict, written)

    def first_reading(self, early: Any) -> Any:
        """Every chunk read, measured, and observed or written early as the target asks; on
        to the end after a chunk that cannot be converted alone, since an invalid input
        says why. The input's verdict."""
        make = self.target.observes or early is not None
        unstreamable: NotStreamable | None = None
        for piece in self.reading(check=True, measure=True, make=make):
            if unstreamable is None:
                try:
                    self.first_part(piece, make, early)
                except NotStreamable as exc:
                    unstreamable = exc
        verdict = self.target.verdict = self.source.verdict()
        if verdict.ok and unstreamable is not None:
            raise unstreamable
        return verdict

    def first_part(self, piece: Chunk, make: bool, early: Any) -> None:
        unknown = len(self.later)
        part = self.part_of(piece, measure=True, make=make)
        if self.target.observes:
            self.target.observe(part, self.later[unknown:])
        if early is not None:
            self.target.write_early(part, len(self.later) > unknown)

    def settled_header(self) -> Workload:
        """After the first reading: what the whole file settles (tasks named before they
        come), measured again where the target asks, and the header."""
        target, source = self.target, self.source
        target.unknown_in_file = any(map(source.in_file, self.later))
        target.resolved(source.in_file)
        if target.measures_again():
            self.sums.clear()
            for piece in self.reading(check=False, measure=True, make=False):
                self.part_of(piece, measure=True, make=False)
        return self.at_end()

    def summed(self) -> _Losses:
        target, sums = self.target, self.sums
        found = sums.get(target.measured_as(), _Losses())
        return found.reported(target.reported(
            found.losses(), lambda form: sums[form].counts.keys() if form in sums else ()))

    def part_of(self, piece: Chunk, measure: bool, make: bool = True) -> Any:
        # a chunk converted on a worker (``stream_dask``) comes with its work done
        work = piece.work if piece.work is not None else chunk_work(
            self.source, self.target, piece.read.document, piece.problem, self.later,
            measure, make)
        assert work.measured >= measure and work.made >= make, "a reading not announced"
        if work.losses is not None:
            for form, losses in work.losses.items():
                self.sums.setdefault(form, _Losses()).add(losses, piece)
                self.sums[form].join_cut_job(piece, work.ends[form])
        if work.problem is not None:
            raise NotStreamable(work.problem)
        return work.part

    def reading(self, check: bool, measure: bool, make: bool) -> Iterable[Chunk]:
        """The input's chunks, for ``part_of(piece, measure, make)`` (a source that converts
        them elsewhere is told what to do there)."""
        self.source.asks(measure, make)
        return self.source.reads(self.chunks(), check)

    def parts(self, pieces: Iterable[Chunk], measure: bool) -> Iterator[Any]:
        for piece in pieces:
            part = self.part_of(piece, measure)
            if self.target.rows(part):
                yield part

    def conversion(self, verdict: Any, written: int) -> StreamedConversion:
        summed, target = self.summed(), self.target
        return StreamedConversion(
            verdict.diagnostics,
            _loss_warnings(summed, self.strict, target.spec) + target.warned,
            summed.losses(), ReadResult(None, source_map=summed.places),
            written if target.jobs_are_rows else self.source.jobs(verdict, written), True)

    def at_end(self) -> Workload:
        """The input's verdict and header, once it is all read."""
        from dcx.converters.convert import refusal

        target, source = self.target, self.source
        verdict = target.verdict or source.verdict()  # (finish() runs once)
        target.verdict = verdict
        if not verdict.ok:
            raise _Refused(StreamedConversion(verdict.diagnostics))
        if not self.reopenable and any(map(source.in_file, self.later)):
            raise NotStreamable(source.later_in_pipe)
        held = target.refusal(source.spec, verdict, refusal) if verdict.jobs else None
        if held is not None:
            raise _Refused(StreamedConversion(verdict.diagnostics, (held,)))
        summed = self.summed()
        refused = _refused(summed, verdict.jobs or 0, self.strict, source.spec, target.spec)
        if refused is not None:
            raise _Refused(StreamedConversion(verdict.diagnostics, refused, summed.losses(),
                                              ReadResult(None, source_map=summed.places)))
        return target.header(source)


class _Refused(Exception):
    """Raised while the output is written: the input was invalid, the conversion refused or
    the output does not read back, so the temporary output is removed."""

    def __init__(self, conversion: StreamedConversion) -> None:
        super().__init__("refused")
        self.conversion = conversion


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


@dataclass
class _Early:
    """A temporary file beside OUTPUT, renamed over it only when ``keep`` is set."""

    path: str
    keep: bool = False


class _Discarded(Exception):
    pass


@contextlib.contextmanager
def _early_output(output: str, target: Target) -> Iterator[_Early | None]:
    """Where ``target`` writes during the first reading: a temporary file beside a regular
    OUTPUT, a temporary folder for a format stored as one (``None`` for standard output,
    devices, or a target that does not write early), removed at the end unless it is
    kept."""
    from dcx.converters.atomic import STDOUT, is_special, open_descriptor, temporary_beside
    from dcx.converters.folders import FolderError, folder_beside

    if not target.writes_early or output == STDOUT or open_descriptor(output) is not None \
            or is_special(output):
        yield None
        return
    stack = contextlib.ExitStack()
    try:
        temporary = stack.enter_context(folder_beside(output, target.spec)
                                        if target.spec.members else temporary_beside(output))
    except (OSError, FolderError):  # said when the output is written, after the input's
        yield None                  # diagnostics
        return
    with contextlib.suppress(_Discarded), stack:
        early = _Early(temporary)
        target.start_early(temporary)
        yield early
        if not early.keep:
            raise _Discarded


def _write(output: str, target: Target, parts: Iterator[Any],
           header: Callable[[], Workload], at_end: Callable[[], Workload]) -> int:
    """Write the parts to ``output`` (through a temporary file for a regular file, or a
    temporary folder for a format stored as one, renamed into place once it reads back
    accepted); the number of rows."""
    from dcx.converters.atomic import STDOUT, is_special, open_descriptor, temporary_beside

    descriptor = 1 if output == STDOUT else open_descriptor(output)
    if descriptor is not None:
        sys.stdout.flush()
        with os.fdopen(os.dup(descriptor), "wb") as stream:
            return target.write(stream, parts, header, at_end)
    if is_special(output):
        with open(output, "wb") as stream:
            return target.write(stream, parts, header, at_end)
    if target.spec.members:  # a format stored as a folder: written into one beside OUTPUT
        from dcx.converters.folders import folder_beside

        beside = folder_beside(output, target.spec)
    else:
        beside = temporary_beside(output)
    with beside as temporary:
        rows = target.write(temporary, parts, header, at_end)
        problem = read_back(target, temporary)
        if problem is not None:
            raise _Refused(StreamedConversion(
                target.verdict.diagnostics if target.verdict else (), (problem,)))
    return rows
