"""SWF checked a chunk of whole lines at a time (``FormatDeclaration.read_chunks``), in
memory bounded by the chunk size and the job numbers (ranges while they count up by one),
with the diagnostics the whole-file reader (``codec._read``) gives for the same bytes.

Each chunk's header lines are read by the line-by-line reader; its job lines first try the
vectorised accept path (``dcx.parsing.traces.numeric_columns``), and a chunk where that gives
up, or where a job has no processors, is read line by line too, its line numbers offset to
the chunk's place in the file. What the checks across lines need is kept between chunks: the
header, the error budget, the job numbers (a ``range`` for a chunk numbered 1, 2, 3, …, else
a 64-bit integer each), where the jobs' lines and fields are (per chunk, unless they are
irregular), and the jobs that name a preceding job. At the end, when job numbers repeat or
a preceding job is not an earlier line, ``codec.cross_file_diagnostics`` runs on the jobs
those checks concern, in file order, which reports what it reports for the whole file.

What ``dcx info`` says of a valid file is counted on the way: each job is one task, and a
dependency is a preceding job number that names a job in the file (the whole-file reader
keeps any other in extras, with ``swf.preceding-job-missing``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from dcx.core.declaration import ChunkedRead
from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.core.model import Id, Task
from dcx.formats.swf import COLUMNS
from dcx.formats.swf.codec import (
    FAST_KINDS,
    _Header,
    _read_lines,
    _Reader,
    cross_file_diagnostics,
)
from dcx.parsing.chunks import checked
from dcx.parsing.trace_codes import MAX_ERRORS
from dcx.parsing.traces import NumericColumns, decoded_lines, numeric_columns

_BOM = b"\xef\xbb\xbf"
_PRECEDING_FIELD = COLUMNS.index("PrecedingJobNumber")


def read_chunks(chunks: Iterable[bytes]) -> ChunkedRead:
    """The diagnostics ``read`` gives for the concatenated ``chunks`` (each ends with a
    newline but the last), and the numbers of jobs, tasks and dependencies."""
    return checked(_Stream(), chunks)


class _Stream:
    """What the checks across chunks need: see the module docstring."""

    def __init__(self) -> None:
        import numpy as np

        self.np = np
        self.reader = _Reader([])
        self.header = _Header()
        self.next_line = 1
        self.first = True
        self.content_bytes = 0
        self.encoding: Diagnostic | None = None
        self.rows = 0
        self.ids: list[Any] = []
        """Each chunk's job numbers: an array, or a ``range`` when they count up by one (the
        archives number jobs 1, 2, 3, …: nothing is kept per job)."""
        self.id_rows: list[int] = []
        self.first_ids: list[int] = []
        self.increasing = True
        """Job numbers so far only go up (then they are unique)."""
        self.last_id = 0
        self.line_runs: list[tuple[int, int, Any]] = []
        """(first row, its line, each row's line or ``None`` when they follow one another)"""
        self.run_starts: list[int] = []
        self.job_columns: list[tuple[int, Any]] = []
        """(first row, each row's JobNumber column or ``None`` when all are 1)"""
        self.column_starts: list[int] = []
        self.preceding_rows: list[Any] = []
        self.preceding: list[Any] = []
        self.preceding_columns: list[Any] = []
        self.chunk_rows: NumericColumns | None = None
        """The last chunk's job lines as the vectorised path read them, when it read them
        all (a converter makes the chunk's document of them: ``codec.read_rows``)."""
        self.chunk_start = 0
        self.dependencies = 0
        """Jobs whose preceding job is in the file (set by ``across_lines``)."""

    # ----------------------------------------------------------------------- chunks

    def add(self, chunk: bytes) -> None:
        self.chunk_rows, self.chunk_start = None, self.rows
        first_line = self.next_line
        newlines = chunk.count(b"\n")
        self.next_line += newlines
        first, self.first = self.first, False
        self.content_bytes += len(chunk) - (3 if first and chunk.startswith(_BOM) else 0)
        if self.reader.stopped:  # the whole file must still be UTF-8
            self.exact(chunk, first_line, first, read=False)
            return
        cut = _end_of_line(chunk, chunk.rfind(b";"))
        if first and chunk.startswith(_BOM):
            cut = max(cut, _end_of_line(chunk, 0))
        if cut:  # the header (and any comment among the jobs) is read line by line
            self.exact(chunk[:cut], first_line, first)
            if self.encoding is not None:
                return
            if self.reader.stopped:
                if cut < len(chunk):
                    self.exact(chunk[cut:], first_line + chunk.count(b"\n", 0, cut), False,
                               read=False)
                return
        body = chunk[cut:]
        if body:
            above = chunk.count(b"\n", 0, cut)
            self.jobs(body, first_line + above, first and not cut, newlines - above)

    def jobs(self, body: bytes, first_line: int, first: bool, newlines: int) -> None:
        """Job lines: the vectorised accept path, or line by line where it gives up."""
        np = self.np
        found = numeric_columns(body, first_line, FAST_KINDS, newlines)
        if found is not None:
            allocated = found.numbers["AllocatedProcessors"]
            requested = found.numbers["RequestedProcessors"]
            if np.any((allocated <= 0) & (requested <= 0)):
                found = None  # swf.unknown-processors: the exact path says where
        if found is None:
            self.exact(body, first_line, first)
            return
        lines = found.lines
        rows = len(lines)
        if not rows:
            return
        if self.rows == self.chunk_start:  # no job line among the chunk's header lines
            self.chunk_rows = found
        preceding = found.numbers["PrecedingJobNumber"]
        follows = np.flatnonzero(preceding != -1)
        raw = np.frombuffer(body, dtype=np.uint8)
        leading = False
        if not found.flush_left:
            first_bytes = np.concatenate((raw[:1], raw[1:][raw[:-1] == 10]))
            # a blank opens a line: JobNumber is not at column 1 (only digits, '.', '-',
            # blanks and newlines get here, and only blanks and newlines sort below '-')
            leading = bool(np.any((first_bytes < 45) & (first_bytes != 10)))
        job_columns, columns = None, np.zeros(0, dtype=np.int64)
        if leading or len(follows):
            starts, line_starts = _token_starts(raw, lines - first_line, np)
            if leading:
                job_columns = starts[:, 0] - line_starts + 1
                if np.all(job_columns == 1):
                    job_columns = None
            columns = (starts[follows, _PRECEDING_FIELD] - line_starts[follows] + 1)
        self.keep(found.numbers["JobNumber"], lines, job_columns, follows,
                  preceding[follows], columns)

    def exact(self, segment: bytes, first_line: int, first: bool, read: bool = True) -> None:
        """The line-by-line reader on ``segment`` (whole lines; line ``first_line`` first)."""
        text, self.encoding = decoded_lines(segment, "swf", first_line)
        if text is None:
            return
        if not read:
            return
        if first and text.startswith("\ufeff"):
            text = text[1:]
        reader = self.reader
        reader.lines, reader.first_line = text.split("\n"), first_line
        tasks: list[tuple[int, Task, Id | None]] = []
        _read_lines(reader, self.header, tasks)
        if not tasks:
            return
        np = self.np
        lines = np.array([line for line, _, _ in tasks], dtype=np.int64)
        job_columns = np.array([reader.locate(line, "JobNumber")["column"]
                                for line, _, _ in tasks], dtype=np.int64)
        follows = [row for row, (_, _, preceding) in enumerate(tasks) if preceding is not None]
        self.keep(_ids([task.id for _, task, _ in tasks], np), lines,
                  None if np.all(job_columns == 1) else job_columns,
                  np.array(follows, dtype=np.int64),
                  _ids([number for _, _, number in tasks if number is not None], np),
                  np.array([reader.locate(tasks[row][0], "PrecedingJobNumber")["column"]
                            for row in follows], dtype=np.int64))

    def keep(self, ids: Any, lines: Any, job_columns: Any, follows: Any, preceding: Any,
             preceding_columns: Any) -> None:
        """A chunk's valid jobs: what the checks across chunks need of them."""
        start = self.rows
        self.ids.append(self.held_ids(ids))
        self.id_rows.append(start)
        contiguous = int(lines[-1]) - int(lines[0]) == len(lines) - 1
        self.line_runs.append((start, int(lines[0]), None if contiguous else lines))
        self.run_starts.append(start)
        if job_columns is not None:
            self.job_columns.append((start, job_columns))
            self.column_starts.append(start)
        if len(follows):
            self.preceding_rows.append(follows + start)
            self.preceding.append(preceding)
            self.preceding_columns.append(preceding_columns)
        self.rows += len(lines)

    def held_ids(self, ids: Any) -> Any:
        """``ids`` as kept (see ``ids``), noting whether job numbers still only go up."""
        np = self.np
        if ids.dtype.kind != "i":
            self.increasing = False
            return ids
        first, last = int(ids[0]), int(ids[-1])
        if self.first_ids and first <= self.last_id:
            self.increasing = False
        self.first_ids.append(first)
        self.last_id = last
        steps = np.diff(ids)
        if last - first == len(ids) - 1 and bool(np.all(steps == 1)):
            return range(first, last + 1)
        if not bool(np.all(steps > 0)):
            self.increasing = False
        return ids

    def all_ids(self) -> Any:
        np = self.np
        return np.concatenate([np.arange(held.start, held.stop, dtype=np.int64)
                               if isinstance(held, range) else held for held in self.ids])

    def preceded_in_order(self, rows: Any, preceding: Any) -> bool:
        """With job numbers that only go up: each preceding job is an earlier line's."""
        np = self.np
        if not len(preceding):
            return True
        chunk = np.searchsorted(np.array(self.first_ids, dtype=np.int64), preceding,
                                side="right") - 1
        if np.any(chunk < 0):
            return False
        found_rows = np.full(len(preceding), -1, dtype=np.int64)
        for index in np.unique(chunk).tolist():
            mine = chunk == index
            held, start = self.ids[index], self.id_rows[index]
            wanted = preceding[mine]
            if isinstance(held, range):
                found = wanted < held.stop
                at = wanted - held.start
            else:
                at = np.minimum(np.searchsorted(held, wanted), len(held) - 1)
                found = held[at] == wanted
            found_rows[mine] = np.where(found, start + at, -1)
        return bool(np.all((found_rows >= 0) & (found_rows < rows)))

    # ----------------------------------------------------------------------- the end

    def finish(self) -> ChunkedRead:
        reader = self.reader
        if not self.content_bytes:
            return ChunkedRead((error("file is empty", "swf.empty", line=1, column=1),))
        self.across_lines()
        if reader.stopped:
            reader.diagnostics.append(error(
                f"more than {MAX_ERRORS} errors; reading stopped", "swf.too-many-errors"))
        if reader.errors:
            return ChunkedRead(tuple(reader.diagnostics))
        trailing = self.header.trailing_warning()
        if trailing is not None:
            reader.report(trailing)
        if not self.rows:
            reader.report(warning("file has no job lines", "swf.no-jobs"))
        return ChunkedRead(tuple(reader.diagnostics), self.rows, tasks=self.rows,
                           dependencies=self.dependencies)

    def across_lines(self) -> None:
        """``cross_file_diagnostics`` on the jobs it can concern, when any may be; counts
        the jobs whose preceding job is in the file."""
        np = self.np
        if not self.rows or self.reader.stopped:
            return  # stopped: the whole-file reader skips them too
        rows = (np.concatenate(self.preceding_rows) if self.preceding_rows
                else np.zeros(0, dtype=np.int64))
        preceding = (np.concatenate(self.preceding) if self.preceding
                     else np.zeros(0, dtype=np.int64))
        self.dependencies = len(preceding)
        if self.increasing and preceding.dtype.kind == "i" and self.preceded_in_order(
                rows, preceding):
            return  # the archives' case: nothing to report, without all the job numbers
        ids = self.all_ids()
        if ids.dtype.kind == "i" and preceding.dtype.kind == "i":
            if _unique_and_preceded(ids, rows, preceding, np):
                return
            involved, known, self.dependencies = _involved(ids, rows, preceding, np)
        else:  # text job numbers: a few lines, checked as Python values
            involved = np.arange(len(ids))
            everything = set(ids.tolist())
            found = [value for value in preceding.tolist() if value in everything]
            known, self.dependencies = set(found), len(found)
        chosen = involved.tolist()
        at = np.minimum(np.searchsorted(rows, involved), max(len(rows) - 1, 0))
        follows = (rows[at] == involved) if len(rows) else np.zeros(len(involved), dtype=bool)
        columns = (np.concatenate(self.preceding_columns) if self.preceding_columns
                   else np.zeros(0, dtype=np.int64))
        needed = [preceding[place] if has else None
                  for place, has in zip(at.tolist(), follows.tolist(), strict=True)]
        preceding_column = {row: int(columns[place]) for row, place, has
                            in zip(chosen, at.tolist(), follows.tolist(), strict=True) if has}

        def locate(index: int, field: str) -> dict[str, Any]:
            row = chosen[index]
            line = self.line_of(row)
            column = (self.job_column(row) if field == "JobNumber"
                      else preceding_column[row])
            return {"line": line, "column": column, "pointer": f"/lines/{line}/{field}"}

        cross_file_diagnostics(ids[involved].tolist(), [_python(value) for value in needed],
                               known, locate, self.reader)

    def line_of(self, row: int) -> int:
        first_row, first_line, lines = self.line_runs[bisect.bisect_right(self.run_starts,
                                                                          row) - 1]
        return first_line + row - first_row if lines is None else int(lines[row - first_row])

    def job_column(self, row: int) -> int:
        at = bisect.bisect_right(self.column_starts, row) - 1
        if at < 0:
            return 1
        first_row, columns = self.job_columns[at]
        return int(columns[row - first_row]) if row - first_row < len(columns) else 1


def _token_starts(raw: Any, line_indexes: Any, np: Any) -> tuple[Any, Any]:
    """Where each field of the given lines of a chunk of job lines starts (a row of 18 per
    line), and where each line starts: ``_Reader.locate``'s columns, counted in bytes, which
    are characters in the ASCII the vectorised path accepts."""
    token = raw >= 45  # digits, '.', '-'; blanks and newlines sort below
    opens = np.flatnonzero(token & ~np.concatenate(([False], token[:-1])))
    line_starts = np.concatenate(([0], np.flatnonzero(raw == 10) + 1))[line_indexes]
    first = np.searchsorted(opens, line_starts)
    return opens[first[:, None] + np.arange(len(COLUMNS))], line_starts


def _end_of_line(chunk: bytes, position: int) -> int:
    """Where the line holding ``position`` ends (after its newline); 0 for position -1."""
    if position < 0:
        return 0
    end = chunk.find(b"\n", position)
    return len(chunk) if end < 0 else end + 1


def _ids(values: list[Id], np: Any) -> Any:
    """Job numbers as 64-bit integers, or as Python values (text ids, huge numbers)."""
    if all(type(value) is int and -(1 << 63) <= value < (1 << 63) for value in values):
        return np.array(values, dtype=np.int64)
    held = np.empty(len(values), dtype=object)
    held[:] = values
    return held


def _python(value: Any) -> Any:
    """A NumPy integer as a Python ``int`` (diagnostics print ``repr``)."""
    return value.item() if hasattr(value, "item") else value


def _unique_and_preceded(ids: Any, rows: Any, preceding: Any, np: Any) -> bool:
    """Job numbers are unique and each preceding job is an earlier line: then the checks
    across lines find nothing."""
    count = len(ids)
    if count < 2 or bool(np.all(ids[1:] > ids[:-1])):  # archives number jobs in order
        ordered, order = ids, None
    else:
        order = np.argsort(ids, kind="stable")
        ordered = ids[order]
        if bool(np.any(ordered[1:] == ordered[:-1])):
            return False
    if not len(preceding):
        return True
    at = np.minimum(np.searchsorted(ordered, preceding), count - 1)
    target = at if order is None else order[at]
    return bool(np.all(ordered[at] == preceding) and np.all(target < rows))


def _involved(ids: Any, rows: Any, preceding: Any, np: Any) -> tuple[Any, set[Id], int]:
    """The rows the checks across lines can concern, in file order (every job whose number
    repeats, that names a preceding job, or that is the first job of a number named as
    one), the preceding job numbers that are in the file, and how many jobs name one."""
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    same = ordered[1:] == ordered[:-1]
    repeated = np.concatenate(([False], same)) | np.concatenate((same, [False]))
    at = np.minimum(np.searchsorted(ordered, preceding), len(ids) - 1)
    found = ordered[at] == preceding
    involved = np.unique(np.concatenate((order[repeated], rows, order[at[found]])))
    return involved, set(preceding[found].tolist()), int(np.count_nonzero(found))
