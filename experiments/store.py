"""The results table on disk: ``DIR/results.parquet``, plus ``DIR/parts/`` while a sweep
runs (and ``DIR/jobs.parquet`` with ``DIR/jobs-parts/`` for per-job rows, and
``DIR/failures.parquet`` with ``DIR/failures-parts/`` for the cells that failed: the latest
failure of each cell, dropped once the cell has a row; and with the ``schedules`` option
``DIR/schedules/<cell_key>.parquet``, each cell's schedule, written before its row).

Finished rows are written as small Parquet files under ``parts/`` as they arrive, each
written to a temporary name and renamed into place, so a part is either whole or absent.
Compaction reads ``results.parquet`` and the parts, keeps the first row of each
``cell_key``, writes ``results.parquet`` the same way and only then removes the parts it
read. A sweep killed at any point therefore leaves every finished row in a readable file,
and no ``cell_key`` is ever twice in the table: a part that outlived the compaction which
already took its rows is dropped by the next one.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

RESULTS = "results.parquet"
JOBS = "jobs.parquet"
FAILURES = "failures.parquet"
KEY = "cell_key"


class StoreError(Exception):
    """A stored table cannot be read (a truncated or foreign file); the message names it."""


def _readable(path: Path, columns: list[str] | None = None) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, columns=columns)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise StoreError(f"{path} cannot be read as a Parquet table ({exc}); move it away "
                         "to start that table afresh") from exc


def _write_atomic(table: pa.Table, target: Path) -> None:
    import pyarrow.parquet as pq

    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        pq.write_table(table, temporary)
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _read(paths: Sequence[Path]) -> pa.Table | None:
    import pyarrow as pa

    tables = [_readable(path) for path in paths]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")


def _first_per_key(table: pa.Table, keys: str | Sequence[str],
                   last: bool = False) -> pa.Table:
    """The first (or ``last``) row of each key (the table order: stored rows before new
    parts)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = [keys] if isinstance(keys, str) else list(keys)
    which = "max" if last else "min"
    indexed = table.append_column("_row", pa.array(range(table.num_rows), pa.int64()))
    first = indexed.group_by(names, use_threads=False).aggregate([("_row", which)])
    keep = pc.sort_indices(first.column(f"_row_{which}"))
    return table.take(pc.take(first.column(f"_row_{which}"), keep))


class TableFiles:
    """One table (results or jobs) as its compacted file and its parts folder."""

    def __init__(self, folder: Path, name: str, parts: str, keys: str | Sequence[str],
                 keep_last: bool = False) -> None:
        self.file = folder / name
        self.parts = folder / parts
        self.keys = keys
        self.keep_last = keep_last

    def part_files(self) -> list[Path]:
        if not self.parts.is_dir():
            return []
        return sorted(path for path in self.parts.iterdir() if path.suffix == ".parquet")

    def write_part(self, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa

        if rows:
            # named in write order, so that the first row of a key is the oldest
            name = f"part-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.parquet"
            _write_atomic(pa.Table.from_pylist(rows), self.parts / name)

    def first_of(self, rows: list[dict[str, Any]]) -> pa.Table | None:
        """``rows`` as the whole table when nothing is stored yet (no file, no part) and
        each key is in them once: what a compaction of them as one part would write,
        without the part and its reading; ``None`` otherwise."""
        if not rows or self.file.exists() or self.part_files():
            return None
        names = [self.keys] if isinstance(self.keys, str) else list(self.keys)
        if len({tuple(row.get(name) for name in names) for row in rows}) != len(rows):
            return None
        import pyarrow as pa

        return pa.Table.from_pylist(rows)

    def read(self) -> pa.Table | None:
        """Everything stored, each key once (without compacting)."""
        sources = ([self.file] if self.file.is_file() else []) + self.part_files()
        table = _read(sources)
        return None if table is None else _first_per_key(table, self.keys, self.keep_last)

    def keys_of(self) -> set[str]:
        """The ``cell_key`` of every stored row."""
        keys: set[str] = set()
        sources = ([self.file] if self.file.is_file() else [])
        for path in sources + self.part_files():
            keys.update(_readable(path, columns=[KEY]).column(KEY).to_pylist())
        return keys

    def compact(self, without: set[str] | None = None) -> pa.Table | None:
        """Parts folded into the file; rows whose key is in ``without`` dropped."""
        parts = self.part_files()
        if not parts and not without:
            return _read([self.file]) if self.file.is_file() else None
        table = self.read()
        if table is not None and without:
            import pyarrow as pa
            import pyarrow.compute as pc

            gone = pc.is_in(table.column(KEY), value_set=pa.array(sorted(without), pa.string()))
            table = table.filter(pc.invert(gone))
            if table.num_rows == 0:  # every failed cell has a row now
                self.file.unlink(missing_ok=True)
                table = None
        if table is not None:
            _write_atomic(table, self.file)
        for part in parts:
            part.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # another writer's part arrived meanwhile
            self.parts.rmdir()
        return table


class ResultStore:
    """Rows buffered in memory and written out as parts every ``flush_rows`` rows or
    ``flush_s`` seconds, whichever comes first."""

    def __init__(self, folder: Path, flush_rows: int = 256, flush_s: float = 5.0) -> None:
        self.folder = folder
        self.results = TableFiles(folder, RESULTS, "parts", KEY)
        self.jobs = TableFiles(folder, JOBS, "jobs-parts", (KEY, "job_id"))
        self.failures = TableFiles(folder, FAILURES, "failures-parts", KEY, keep_last=True)
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self._rows: list[dict[str, Any]] = []
        self._job_rows: list[dict[str, Any]] = []
        self._failure_rows: list[dict[str, Any]] = []
        self._last_flush = _now()
        self.written = 0
        self.failed = 0

    def stored_keys(self) -> set[str]:
        return self.results.keys_of()

    def failed_keys(self) -> set[str]:
        """Cells whose latest run failed and that have no row."""
        return self.failures.keys_of() - self.results.keys_of()

    def add_failure(self, row: dict[str, Any]) -> None:
        self._failure_rows.append(row)
        self.failed += 1
        self.failures.write_part(self._failure_rows)  # a failure is rare: kept at once
        self._failure_rows = []

    def add(self, row: dict[str, Any], jobs: Iterable[dict[str, Any]] | None = None,
            schedule: pa.Table | None = None) -> None:
        """A cell's row (and job rows), buffered; its schedule is written at once: a row on
        disk promises its schedule file is there."""
        if schedule is not None:
            from dcx.experiments.schedules import schedule_file

            _write_atomic(schedule, schedule_file(self.folder, str(row[KEY])))
        self._rows.append(row)
        if jobs:
            self._job_rows.extend(jobs)
        if len(self._rows) >= self.flush_rows or _now() - self._last_flush >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        # jobs first: a results row on disk promises its job rows are there too
        self.jobs.write_part(self._job_rows)
        self.results.write_part(self._rows)
        self.written += len(self._rows)
        self._rows, self._job_rows = [], []
        self._last_flush = _now()

    def close(self) -> pa.Table | None:
        """Flush and compact; the whole results table. A first run whose rows are all still
        in memory writes each table once, without parts: the end of a short sweep is its
        slowest part on a busy disk (each write waits for fsync)."""
        table = self.results.first_of(self._rows)
        if table is not None:
            jobs = self.jobs.first_of(self._job_rows)
            if jobs is not None:  # jobs first, as flush() writes them
                _write_atomic(jobs, self.jobs.file)
            else:
                self.jobs.write_part(self._job_rows)  # none, or some stored before
            _write_atomic(table, self.results.file)
            self.written += len(self._rows)
            self._rows, self._job_rows = [], []
        else:
            self.flush()
            table = self.results.compact()
        self.jobs.compact()
        if self.failures.file.is_file() or self.failures.part_files():
            self.failures.compact(without=self.stored_keys())
        return table


def _now() -> float:
    return time.monotonic()
