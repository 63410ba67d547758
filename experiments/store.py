"""The results table on disk: ``DIR/results.parquet``, plus ``DIR/parts/`` while a sweep
runs (and ``DIR/jobs.parquet`` with ``DIR/jobs-parts/`` for per-job rows).

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
KEY = "cell_key"


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
    import pyarrow.parquet as pq

    tables = [pq.read_table(path) for path in paths]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")


def _first_per_key(table: pa.Table, keys: str | Sequence[str]) -> pa.Table:
    """The first row of each key (the table order: stored rows before new parts)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = [keys] if isinstance(keys, str) else list(keys)
    indexed = table.append_column("_row", pa.array(range(table.num_rows), pa.int64()))
    first = indexed.group_by(names, use_threads=False).aggregate([("_row", "min")])
    keep = pc.sort_indices(first.column("_row_min"))
    return table.take(pc.take(first.column("_row_min"), keep))


class TableFiles:
    """One table (results or jobs) as its compacted file and its parts folder."""

    def __init__(self, folder: Path, name: str, parts: str, keys: str | Sequence[str]) -> None:
        self.file = folder / name
        self.parts = folder / parts
        self.keys = keys

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

    def read(self) -> pa.Table | None:
        """Everything stored, each key once (without compacting)."""
        sources = ([self.file] if self.file.is_file() else []) + self.part_files()
        table = _read(sources)
        return None if table is None else _first_per_key(table, self.keys)

    def compact(self) -> pa.Table | None:
        parts = self.part_files()
        if not parts:
            return _read([self.file]) if self.file.is_file() else None
        table = self.read()
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
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self._rows: list[dict[str, Any]] = []
        self._job_rows: list[dict[str, Any]] = []
        self._last_flush = _now()
        self.written = 0

    def stored_keys(self) -> set[str]:
        import pyarrow.parquet as pq

        keys: set[str] = set()
        sources = ([self.results.file] if self.results.file.is_file() else [])
        for path in sources + self.results.part_files():
            keys.update(pq.read_table(path, columns=[KEY]).column(KEY).to_pylist())
        return keys

    def add(self, row: dict[str, Any], jobs: Iterable[dict[str, Any]] | None = None) -> None:
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
        """Flush and compact; the whole results table."""
        self.flush()
        self.jobs.compact()
        return self.results.compact()


def _now() -> float:
    return time.monotonic()
