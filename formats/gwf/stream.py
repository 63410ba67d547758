"""GWF checked a chunk of whole lines at a time (``FormatDeclaration.read_chunks``), in
memory bounded by the chunk size and compact numbers per task, with the diagnostics the
whole-file reader (``codec._read``) gives for the same bytes.

The file's first line with content fixes the variant (and, in the workflow variant, whether
it is the header), as in the whole-file reader. Each chunk's task lines then first try the
vectorised accept path (``fast.workflow_rows``, ``fast.archive_rows``: the same rules); a
chunk where it gives up is read by the exact line-by-line reader, its line numbers offset to
the chunk's place in the file. What the checks across lines need is kept between chunks: the
error budget, the distinct workflow ids (the job count), each task's id (a ``range`` for a
chunk numbered n, n + 1, …, else a 64-bit integer or a Python value each), line (runs of
consecutive lines) and JobID column (one per chunk when they agree), and, once the file is
no longer *clean* (ids going up, dependencies on tasks of earlier lines: what dcx and the
archives write), each dependency's id and column. A clean file's checks across lines can
find nothing and are skipped; otherwise ``column_dependency_diagnostics`` (repeated ids,
dependencies on tasks not in the file, cycles) runs once on every task, in file order, as
the whole-file reader runs it, and the closing warnings follow as there.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dcx.core.declaration import ChunkedRead
from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.core.model import Id
from dcx.formats.gwf import _looks_archive
from dcx.formats.gwf.codec import (
    _Reader,
    archive_lines,
    workflow_lines,
    workflow_start,
)
from dcx.formats.gwf.fast import WorkflowRows, archive_rows, workflow_rows
from dcx.parsing.chunks import checked
from dcx.parsing.trace_codes import MAX_ERRORS
from dcx.parsing.traces import NumericColumns, column_dependency_diagnostics, decoded_lines

_BOM = "\ufeff"


def read_chunks(chunks: Iterable[bytes]) -> ChunkedRead:
    """The diagnostics ``read`` gives for the concatenated ``chunks`` (each ends with a
    newline but the last), and the numbers of jobs, tasks and dependencies."""
    return checked(_Stream(), chunks)


@dataclass(frozen=True)
class _Part:
    """A chunk's valid tasks: what the checks across lines need of them."""

    first_row: int
    ids: Any
    """``int64``, or ``object`` holding Python values (text ids, numbers past 64 bits), or
    a ``range`` when they count up by one (nothing kept per task)."""
    first_line: int
    lines: Any
    """Each task's line, or ``None`` when they are the lines from ``first_line`` on."""
    id_columns: Any
    """Each task's JobID column (``int64``), or an ``int`` they all share (or that no
    diagnostic will ask for: the part is clean)."""
    dependency_offsets: Any
    """``None`` when the part's tasks are all clean (see ``_Stream.clean``): their
    dependencies are not kept."""
    dependency_ids: Any
    dependency_columns: Any

    def id_array(self, np: Any) -> Any:
        ids = self.ids
        return np.arange(ids.start, ids.stop, dtype=np.int64) if isinstance(ids, range) \
            else ids

    def __len__(self) -> int:
        return len(self.ids)


class _Stream:
    """What the checks across chunks need: see the module docstring."""

    def __init__(self) -> None:
        import numpy as np

        self.np = np
        self.reader = _Reader([], "workflow")
        self.variant: str | None = None
        """Known from the file's first line with content on."""
        self.next_line = 1
        self.first = True
        self.blank = True
        """Every chunk so far is whitespace only (the file is empty when it stays so)."""
        self.encoding: Diagnostic | None = None
        self.chunk_rows: WorkflowRows | NumericColumns | None = None
        """The last chunk's task lines as the accept path read them, when it read the whole
        chunk (a converter makes the chunk's document of them: ``codec.read_part``)."""
        self.read_rows: WorkflowRows | NumericColumns | None = None
        self.parts: list[_Part] = []
        self.part_starts: list[int] = []
        self.rows = 0
        self.dependencies = 0
        """Every valid task's dependencies, as the whole-file reader keeps them."""
        self.workflows = np.zeros(0, dtype=np.int64)
        """The distinct integer workflow ids so far (sorted)."""
        self.other_workflows: set[Id] = set()
        """Workflow ids that are text or past 64 bits."""
        self.text_ids = False
        self.clean = True
        """Every task so far has an integer id above the one before and depends only on
        tasks of earlier lines: the checks across lines cannot report anything about
        these tasks (a later repeat of one of their ids is reported at the later line), so
        their dependencies are not kept, and when the whole file is clean the checks are
        skipped."""
        self.last_id = -1
        self.first_ids: list[int] = []
        """The first id of each part while the file is clean (they only go up)."""

    # ----------------------------------------------------------------------- chunks

    def add(self, chunk: bytes) -> None:
        first_line = self.next_line
        self.next_line += chunk.count(b"\n")
        first, self.first = self.first, False
        self.chunk_rows = None
        if self.variant is not None and not self.reader.stopped and not first \
                and self.vectorised(chunk, first_line):
            self.chunk_rows = self.read_rows
            return  # accepted, so plain ASCII: nothing to decode
        text, self.encoding = decoded_lines(chunk, "gwf", first_line)
        if text is None:
            return
        if self.reader.stopped:  # the whole file must still be UTF-8
            return
        if first and text.startswith(_BOM):
            text = text[1:]
        if self.blank and text.strip():
            self.blank = False
        lines = text.split("\n")
        start = 0
        if self.variant is None:
            found = next((index for index, raw in enumerate(lines)
                          if raw.strip() and not raw.lstrip().startswith("#")), None)
            if found is None:
                return  # blank lines and comments only, so far
            self.variant = "archive" if _looks_archive(lines[found]) else "workflow"
            self.reader.variant = "archive" if self.variant == "archive" else "workflow"
            self.reader.lines, self.reader.first_line = lines, first_line
            start = (workflow_start(self.reader, found) if self.variant == "workflow"
                     else found)
        else:  # the variant was known: the accept path gave up above
            self.exact(lines, start, first_line)
            return
        if not self.vectorised("\n".join(lines[start:]).encode(), first_line + start):
            self.exact(lines, start, first_line)

    def vectorised(self, body: bytes, first_line: int) -> bool:
        """The chunk's task lines (``body``, line ``first_line`` first) through the accept
        path; ``False`` where it gives up."""
        self.read_rows = None
        if not body.strip():
            return True  # nothing but blank lines: nothing to read or say
        if self.variant == "workflow":
            rows = self.read_rows = workflow_rows(body, first_line)
            if rows is None:
                return False
            self.keep(rows.values["JobID"], rows.lines, lambda: _workflow_places(rows, self.np),
                      rows.offsets, rows.dependency_ids)
            self.add_workflows(rows.values["WorkflowID"])
            return True
        found = self.read_rows = archive_rows(body, first_line)
        if found is None:
            return False
        ids = found.numbers["JobID"]
        if len(ids):
            np = self.np
            nothing = np.zeros(0, dtype=np.int64)
            self.keep(ids, found.lines, lambda: (
                _archive_id_columns(body, found.lines - first_line, np), nothing),
                np.zeros(len(ids) + 1, dtype=np.int64), nothing)
        return True

    def exact(self, lines: list[str], start: int, first_line: int) -> None:
        """The line-by-line reader on the chunk's ``lines`` from ``lines[start]``."""
        np = self.np
        reader = self.reader
        reader.lines, reader.first_line = lines, first_line
        if self.variant == "workflow":
            tasks, placement = workflow_lines(reader, start)
        else:
            tasks, placement = archive_lines(reader, start)
        if not tasks:
            return
        locate = reader.locate

        def places() -> tuple[Any, Any]:  # while reader.lines are this chunk's
            return (np.array([locate(line, "JobID")["column"] for line, _ in tasks],
                             dtype=np.int64),
                    np.array([locate(line, "Dependencies", position)["column"]
                              for line, task in tasks
                              for position in range(len(task.dependencies))], dtype=np.int64))

        sizes = [len(task.dependencies) for _, task in tasks]
        self.keep(_ids([task.id for _, task in tasks], np),
                  np.array([line for line, _ in tasks], dtype=np.int64), places,
                  np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
                  _ids([needed for _, task in tasks for needed in task.dependencies], np))
        if self.variant == "workflow":
            self.add_workflows(_ids(list(placement), np))

    def keep(self, ids: Any, lines: Any, places: Callable[[], tuple[Any, Any]],
             dependency_offsets: Any, dependency_ids: Any) -> None:
        """A chunk's valid tasks; ``places`` gives their JobID columns and their
        dependencies' columns, asked only when the checks across lines may need them."""
        np = self.np
        self.dependencies += int(dependency_offsets[-1])
        if ids.dtype.kind == "O":
            self.text_ids = self.text_ids or any(isinstance(value, str) for value in ids)
        contiguous = int(lines[-1]) - int(lines[0]) == len(lines) - 1
        held: Any = ids
        if ids.dtype.kind == "i" and int(ids[-1]) - int(ids[0]) == len(ids) - 1 \
                and bool(np.all(np.diff(ids) == 1)):
            held = range(int(ids[0]), int(ids[-1]) + 1)
        if self.still_clean(ids, held, dependency_offsets, dependency_ids):
            # nothing is reported at a clean task (a repeat of its id is, at the repeat)
            id_columns: Any = 1
            dependency_offsets = dependency_ids = dependency_columns = None
        else:
            id_columns, dependency_columns = places()
            if bool(np.all(id_columns == id_columns[0])):
                id_columns = int(id_columns[0])
        self.parts.append(_Part(self.rows, held, int(lines[0]), None if contiguous else lines,
                                id_columns, dependency_offsets, dependency_ids,
                                dependency_columns))
        self.part_starts.append(self.rows)
        self.rows += len(ids)

    def still_clean(self, ids: Any, held: Any, offsets: Any, dependencies: Any) -> bool:
        """Whether the file is still clean (see ``clean``) with this part's tasks."""
        np = self.np
        if not self.clean:
            return False
        if ids.dtype.kind != "i" or int(ids[0]) <= self.last_id or (
                not isinstance(held, range) and not bool(np.all(np.diff(ids) > 0))):
            self.clean = False
            return False
        if len(dependencies):
            if dependencies.dtype.kind != "i":
                self.clean = False
                return False
            own = np.repeat(ids, np.diff(offsets))
            if not (bool(np.all(dependencies < own))
                    and self.all_known(dependencies, ids, held, np)):
                self.clean = False
                return False
        self.first_ids.append(int(ids[0]))
        self.last_id = int(ids[-1])
        return True

    def all_known(self, wanted: Any, ids: Any, held: Any, np: Any) -> bool:
        """Whether each of ``wanted`` is the id of a task so far (this part's ``ids``
        included), all parts clean (their ids only go up)."""
        parts = [*self.parts, _Part(self.rows, held, 0, None, 1, None, None, None)]
        first_ids = np.array([*self.first_ids, int(ids[0])], dtype=np.int64)
        holder = np.searchsorted(first_ids, wanted, side="right") - 1
        if np.any(holder < 0):
            return False
        for index in np.unique(holder).tolist():
            mine = wanted[holder == index]
            kept = parts[index].ids
            if isinstance(kept, range):
                if np.any(mine >= kept.stop):
                    return False
            elif not bool(np.all(kept[np.minimum(np.searchsorted(kept, mine),
                                                 len(kept) - 1)] == mine)):
                return False
        return True

    def add_workflows(self, workflows: Any) -> None:
        np = self.np
        if workflows.dtype.kind == "O":
            values = workflows.tolist()
            self.text_ids = self.text_ids or any(isinstance(value, str) for value in values)
            small = [value for value in values
                     if type(value) is int and -(1 << 63) <= value < (1 << 63)]
            self.other_workflows.update(value for value in values
                                        if not (type(value) is int
                                                and -(1 << 63) <= value < (1 << 63)))
            workflows = np.array(small, dtype=np.int64)
        new = np.unique(workflows)
        if len(new) and (not len(self.workflows) or new[0] > self.workflows[-1]):
            # ids counting up chunk after chunk: appended, not merged (a merge sorts them
            # all again, each chunk: quadratic in a trace of one-task workflows)
            self.workflows = np.concatenate((self.workflows, new))
        else:
            self.workflows = np.union1d(self.workflows, new)

    # ----------------------------------------------------------------------- the end

    def finish(self) -> ChunkedRead:
        reader = self.reader
        if self.variant is None:
            if self.blank:
                return ChunkedRead((error("file is empty", "gwf.empty", line=1, column=1),))
            return ChunkedRead((warning("file has no task lines", "gwf.no-tasks"),),
                               tasks=0, dependencies=0)
        if not reader.stopped:
            self.across_lines()
        if reader.stopped:
            reader.diagnostics.append(error(
                f"more than {MAX_ERRORS} errors; reading stopped", "gwf.too-many-errors"))
        if reader.errors:
            return ChunkedRead(tuple(reader.diagnostics))
        if not self.rows:
            reader.report(warning("file has no task lines", "gwf.no-tasks"))
        if self.text_ids:
            reader.report(warning("some ids are text: dcx reads them, the SC18 simulator (which "
                                  "parses integers) does not", "gwf.text-ids"))
        return ChunkedRead(tuple(reader.diagnostics), self.jobs(), tasks=self.rows,
                           dependencies=self.dependencies)

    def jobs(self) -> int:
        if self.variant == "archive":
            return self.rows  # one job per task, their ids unique (else an error)
        return len(self.workflows) + len(self.other_workflows)

    def across_lines(self) -> None:
        """``column_dependency_diagnostics`` on every task, as the whole-file reader runs
        it, unless the file is clean (then it can find nothing); clean tasks' dependencies,
        not kept, cannot change what it finds (they are on no cycle and name known ids)."""
        if not self.rows or self.clean:
            return
        np = self.np
        parts = self.parts
        ids = _joined([part.id_array(np) for part in parts], np)
        nothing = np.zeros(0, dtype=np.int64)
        dependency_ids = _joined([nothing if part.dependency_ids is None
                                  else part.dependency_ids for part in parts], np)
        counts = np.concatenate([np.zeros(len(part), dtype=np.int64)
                                 if part.dependency_offsets is None
                                 else np.diff(part.dependency_offsets) for part in parts])
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        dependency_columns = np.concatenate([nothing if part.dependency_columns is None
                                             else part.dependency_columns for part in parts])

        def locate(index: int, dependency: int | None) -> dict[str, Any]:
            line = self.line_of(index)
            if dependency is None:
                return {"line": line, "column": self.id_column(index),
                        "pointer": f"/lines/{line}/JobID"}
            return {"line": line,
                    "column": int(dependency_columns[int(offsets[index]) + dependency]),
                    "pointer": f"/lines/{line}/Dependencies/{dependency}"}

        line_failed = self.reader.errors > 0  # as the whole-file reader: see codec.read
        for diagnostic in column_dependency_diagnostics(ids, offsets, dependency_ids, locate,
                                                        "gwf"):
            if not (line_failed and diagnostic.code == "gwf.unknown-dependency"):
                self.reader.report(diagnostic)

    def part(self, row: int) -> _Part:
        return self.parts[bisect.bisect_right(self.part_starts, row) - 1]

    def line_of(self, row: int) -> int:
        part = self.part(row)
        at = row - part.first_row
        return part.first_line + at if part.lines is None else int(part.lines[at])

    def id_column(self, row: int) -> int:
        part = self.part(row)
        columns = part.id_columns
        return columns if isinstance(columns, int) else int(columns[row - part.first_row])


def _workflow_places(rows: WorkflowRows, np: Any) -> tuple[Any, Any]:
    """Each row's JobID column and each dependency's, as ``_Reader.locate`` gives them
    (counted in bytes, which are characters in the ASCII the accept path lets through)."""
    import pyarrow.compute as pc

    table = rows.table

    def lengths(values: Any) -> Any:
        return np.asarray(pc.binary_length(values).to_numpy(zero_copy_only=False),
                          dtype=np.int64)

    def leading_blanks(values: Any) -> Any:
        return lengths(values) - lengths(pc.ascii_ltrim_whitespace(values))

    sizes = [lengths(table.column(index)) for index in range(6)]
    id_columns = sizes[0] + 1 + leading_blanks(table.column(1)) + 1
    dependencies = table.column(6)
    field_start = sum(sizes) + 6 + leading_blanks(dependencies)
    offsets = rows.offsets
    counts = np.diff(offsets)
    if not int(offsets[-1]):
        return id_columns, np.zeros(0, dtype=np.int64)
    trimmed = pc.ascii_trim_whitespace(dependencies)
    token_lengths = lengths(pc.list_flatten(pc.split_pattern(
        pc.filter(trimmed, pc.not_equal(trimmed, "")), " ")))
    widths = token_lengths + 1
    before = np.cumsum(widths) - widths  # of every token, from the first row's first
    row_of = np.repeat(np.arange(len(counts)), counts)
    within = before - before[offsets[:-1][row_of]]
    return id_columns, field_start[row_of] + within + 1


def _archive_id_columns(body: bytes, line_indexes: Any, np: Any) -> Any:
    """Each row's JobID column: where its line's first token starts (only digits, ``.``,
    ``-`` and blanks get here; blanks and newlines sort below ``-``)."""
    raw = np.frombuffer(body, dtype=np.uint8)
    token = raw >= 45
    opens = np.flatnonzero(token & ~np.concatenate(([False], token[:-1])))
    line_starts = np.concatenate(([0], np.flatnonzero(raw == 10) + 1))[line_indexes]
    return opens[np.searchsorted(opens, line_starts)] - line_starts + 1


def _ids(values: list[Id], np: Any) -> Any:
    """Ids as 64-bit integers, or as Python values (text ids, numbers past 64 bits)."""
    if all(type(value) is int and -(1 << 63) <= value < (1 << 63) for value in values):
        return np.array(values, dtype=np.int64)
    held = np.empty(len(values), dtype=object)
    held[:] = values
    return held


def _joined(arrays: list[Any], np: Any) -> Any:
    """One array of the parts' values: ``int64`` when every part is, else Python values."""
    if all(array.dtype.kind != "O" for array in arrays):
        return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    held = np.empty(sum(len(array) for array in arrays), dtype=object)
    held[:] = [value for array in arrays for value in array.tolist()]
    return held
