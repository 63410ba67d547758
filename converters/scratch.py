"""The file operations the engine lends stream targets (``dcx.core.streams.Files``): the
one place a conversion a chunk at a time creates, moves and removes files."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Any, BinaryIO


class LocalFiles:
    """The local file system."""

    def create(self, path: str) -> BinaryIO:
        return open(path, "wb")

    def read(self, path: str) -> BinaryIO:
        return open(path, "rb")

    def spool(self, beside: str | None, suffix: str) -> tuple[str, BinaryIO]:
        folder = os.path.dirname(os.path.realpath(beside)) if beside is not None else None
        handle, path = tempfile.mkstemp(prefix=".dcx-", suffix=suffix, dir=folder)
        return path, os.fdopen(handle, "wb")

    def scratch_folder(self, prefix: str) -> str:
        return tempfile.mkdtemp(prefix=prefix)

    def replace(self, source: str, target: str) -> None:
        os.replace(source, target)

    def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    def remove_folder(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    def parquet_writer(self, where: str | BinaryIO, schema: Any, **options: Any) -> Any:
        import pyarrow.parquet as pq

        return pq.ParquetWriter(where, schema, **options)

    def parquet_file(self, path: str) -> Any:
        import pyarrow.parquet as pq

        return pq.ParquetFile(path)


LOCAL_FILES = LocalFiles()
