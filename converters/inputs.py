"""Reading an input as every command reads it: a file, a folder of a format stored as one, or
standard input (``-``), never past the input size limit; missing or unreadable files are
usage errors. Below the command line, so the chunked paths (``streaming``) read as it does."""

from __future__ import annotations

import os
import sys
from typing import Any

from dcx.core.diagnostics import Diagnostic, error
from dcx.core.limits import LIMITS

STDIN_LABEL = "<stdin>"


class UsageError(Exception):
    """Bad arguments or unusable files: exit 2."""


def label(path: str) -> str:
    """How diagnostics name an input: ``<stdin>`` for ``-``."""
    return STDIN_LABEL if path == "-" else path


def read_input(path: str) -> tuple[bytes, Diagnostic | None]:
    """The bytes of ``path`` (``-``: stdin; FIFOs and devices are read to their end), or an
    ``input.too-large`` error, located at ``path``, without reading past the limit.
    Missing or unreadable files are usage errors."""
    limit = LIMITS.max_input_bytes
    try:
        if path == "-":
            data = read_up_to(sys.stdin.buffer, limit + 1)
        else:
            if os.path.isdir(path):
                return folder_bytes(path)
            size = os.stat(path).st_size
            if size > limit:
                return b"", too_large(size, path)
            with open(path, "rb") as stream:
                # a regular file: size + 1, not the limit, so a 500 MB address-space cap
                # holds; a FIFO or device reports size 0 and is read in chunks
                data = (stream.read(size + 1) if os.path.isfile(path)
                        else read_up_to(stream, limit + 1))
        if len(data) > limit:
            return b"", too_large(len(data), path, at_least=True)
        return data, None
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None


def folder_bytes(path: str) -> tuple[bytes, Diagnostic | None]:
    """A folder of a format stored as one (``tasks.parquet`` and ``fragments.parquet``) as
    that format's bytes; any other folder is a usage error."""
    from dcx.converters.folders import FolderError, folder_format, read_folder

    spec = folder_format(path)
    if spec is None:
        raise UsageError(f"{path}: is a directory")
    try:
        return read_folder(path, spec), None
    except FolderError as exc:
        return b"", error(str(exc), "input.too-large").at(label(path))


def size_of(path: str) -> int:
    """A regular file's size; 0 for stdin, FIFOs and what cannot be looked at (yet)."""
    try:
        return os.stat(path).st_size if path != "-" and os.path.isfile(path) else 0
    except OSError:
        return 0


def read_up_to(stream: Any, most: int) -> bytes:
    chunks: list[bytes] = []
    left = most
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def too_large(size: int, path: str, at_least: bool = False) -> Diagnostic:
    more = "more than " if at_least else ""
    return error(f"file is {more}{size - 1 if at_least else size:,} bytes; the limit is "
                 f"{LIMITS.max_input_bytes:,}", "input.too-large").at(label(path))
