"""Inputs too large to hold, checked a chunk at a time: ``dcx validate`` and ``dcx info``
hand a large file, or a pipe that outgrows ``STREAM_BYTES``, to its format's chunked reader
(``FormatDeclaration.read_chunks``) when the format has one, so memory stays bounded and the
in-memory limit (``dcx.core.limits``) does not apply; a large file whose format is read in
parts by seeking (``FormatDeclaration.read_parts``: Parquet's row groups) is checked a part at
a time (``dcx.converters.partitions``), on a Dask cluster when one is given, and such a pipe
is first copied to a temporary file (in ``$TMPDIR``, removed after) that is read the same
way. A folder of a format stored as one and read in parts (an OpenDC workload) whose files
total ``STREAM_BYTES`` or more is read as such a file. ``dcx convert`` hands such inputs to
``dcx.converters.stream_convert`` where it converts their pair of formats (a Parquet file as
the open file, a folder as its open files, read a row group at a time; a Parquet pipe is
read whole). Other inputs are read whole, as before.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from dcx.converters import inputs
from dcx.core import limits
from dcx.core.declaration import ChunkedRead, FormatDeclaration
from dcx.core.diagnostics import Diagnostic, error

STREAM_BYTES = 16 << 20
"""Inputs at least this large are checked in chunks where their format allows it."""

SNIFF_BYTES = 64 << 10
"""What a format is detected from before an input is streamed."""

Streamed = tuple[FormatDeclaration, ChunkedRead]


def _read_whole(path: str) -> bool:
    """Whether ``path`` is read whole, never in chunks: a folder, or a regular file below
    the streaming size."""

    if path == "-":
        return False
    return os.path.isdir(path) or (os.path.isfile(path) and inputs.size_of(path) < STREAM_BYTES)


def read_or_stream(path: str, format_name: str | None, scope: Sequence[FormatDeclaration],
                   cluster: Any = None) -> tuple[bytes, Diagnostic | None, Streamed | None]:
    """``read_input(path)``, or, for a large input whose format (``format_name``, else
    detected among ``scope``) has a chunked reader, what that reader found. A file whose
    format is read in parts (Parquet) is checked a part at a time when it is large, or when
    ``cluster`` (a ``partitions.Cluster``) is given, on that cluster; a pipe of that format
    that outgrows ``STREAM_BYTES`` is spooled to a temporary file first."""

    parted = read_in_parts(path, format_name, scope, cluster)
    if parted is not None:
        return b"", None, parted
    if _read_whole(path):
        return (*inputs.read_input(path), None)
    regular = path != "-" and os.path.isfile(path)
    try:
        if path == "-":
            return _from_pipe(sys.stdin.buffer, path, format_name, scope, cluster)
        with open(path, "rb") as stream:
            if not regular:
                return _from_pipe(stream, path, format_name, scope, cluster)
            head = stream.read(SNIFF_BYTES)
            spec = _streamable(head, path, format_name, scope)
            if spec is not None:
                return b"", None, (spec, _chunked(spec, stream, head))
    except FileNotFoundError:
        raise inputs.UsageError(f"{path}: no such file") from None
    except PermissionError:
        raise inputs.UsageError(f"{path}: permission denied") from None
    return (*inputs.read_input(path), None)  # read whole, within the limit


def _streamable(head: bytes, path: str, format_name: str | None,
                scope: Sequence[FormatDeclaration]) -> FormatDeclaration | None:
    spec = _detected(head, path, format_name, scope)
    return spec if spec is not None and spec.read_chunks is not None else None


def _detected(head: bytes, path: str, format_name: str | None,
              scope: Sequence[FormatDeclaration]) -> FormatDeclaration | None:
    from dcx.converters.registry import detect, get

    return get(format_name) if format_name else detect(head[:SNIFF_BYTES], path, scope)


def read_in_parts(path: str, format_name: str | None, scope: Sequence[FormatDeclaration],
                  cluster: Any = None) -> Streamed | None:
    """What a format read in parts found in the file at ``path``, on ``cluster``'s workers
    when given; ``None`` when ``path`` is not a regular file, is below ``STREAM_BYTES``
    without a cluster, or its format is not read in parts."""
    from dcx.converters.partitions import read_parts

    folder = parted_folder(path, format_name)
    if folder is not None:
        return (folder, read_parts(path, folder, None if cluster is None else cluster.client())) \
            if cluster is not None or _large_folder(path, folder) else None
    if path == "-" or not os.path.isfile(path) or (cluster is None and _read_whole(path)):
        return None
    from dcx.converters.registry import detect, get

    try:
        with open(path, "rb") as stream:
            head = stream.read(SNIFF_BYTES)
    except PermissionError:
        raise inputs.UsageError(f"{path}: permission denied") from None
    spec = get(format_name) if format_name else detect(head, path, scope)
    if spec is None or not _parted_file(spec):
        return None
    return spec, read_parts(path, spec, None if cluster is None else cluster.client())


def _parted_file(spec: FormatDeclaration) -> bool:
    """Whether a file (or pipe) of format ``spec`` is read in parts: not the tar archive of a
    format stored as a folder (its folder is, ``parted_folder``), which is read whole."""
    return spec.read_parts is not None and not spec.members


def parted_folder(path: str, format_name: str | None) -> FormatDeclaration | None:
    """The format, read in parts, stored as the folder ``path`` (``format_name``, when
    given, names it); ``None`` for anything else."""
    from dcx.converters.folders import folder_format

    if path == "-" or not os.path.isdir(path):
        return None
    spec = folder_format(path)
    if spec is None or spec.read_parts is None or format_name not in (None, spec.name):
        return None
    return spec


def _large_folder(path: str, spec: FormatDeclaration) -> bool:
    """Whether the folder's members total ``STREAM_BYTES`` or more (it is then read in parts
    as a large Parquet file is; below, whole)."""
    from dcx.converters.folders import members_size

    return members_size(path, spec) >= STREAM_BYTES


def _chunked(spec: FormatDeclaration, stream: BinaryIO, head: bytes) -> ChunkedRead:
    from dcx.parsing.chunks import LineTooLong, line_chunks

    assert spec.read_chunks is not None
    try:
        return spec.read_chunks(line_chunks(stream.read, head))
    except LineTooLong as exc:  # what would bound memory is a line that never ends
        return ChunkedRead((error(f"{exc}; a large input is read a line at a time",
                                  "input.too-large", line=exc.line, column=1),))


def _from_pipe(stream: BinaryIO, path: str, format_name: str | None,
               scope: Sequence[FormatDeclaration], cluster: Any = None
               ) -> tuple[bytes, Diagnostic | None, Streamed | None]:
    """Standard input, a FIFO or a device: held when it ends within ``STREAM_BYTES``."""

    limit = limits.LIMITS.max_input_bytes
    head = inputs.read_up_to(stream, STREAM_BYTES)
    more = stream.read(1) if len(head) == STREAM_BYTES else b""
    if not more:
        return (head, None, None) if len(head) <= limit else (
            b"", inputs.too_large(len(head), path), None)
    head += more
    spec = _detected(head, path, format_name, scope)
    if spec is not None and spec.read_chunks is not None:
        return b"", None, (spec, _chunked(spec, stream, head))
    if spec is not None and _parted_file(spec):
        return b"", None, (spec, _spooled_parts(spec, stream, head, path, cluster))
    data = head + inputs.read_up_to(stream, limit + 1 - len(head))
    if len(data) > limit:
        return b"", inputs.too_large(len(data), path, at_least=True), None
    return data, None, None


def _spooled_parts(spec: FormatDeclaration, stream: BinaryIO, head: bytes, path: str,
                   cluster: Any) -> ChunkedRead:
    """A pipe of a format read by seeking (Parquet), ``head`` and the rest of ``stream``,
    copied to a temporary file in ``$TMPDIR`` (a bounded buffer at a time) and read in parts
    as a file is; the file is removed after. A local cluster's workers open it; those of an
    existing cluster (``--scheduler-address``) may not see this machine's files, so a pipe
    is refused there."""
    import shutil
    import tempfile
    from contextlib import ExitStack

    from dcx.converters.partitions import read_parts

    if cluster is not None and cluster.address:
        raise inputs.UsageError(
            f"{inputs.label(path)}: a {spec.name} pipe is read from a temporary file on this "
            "machine, which the workers of --scheduler-address may not see; give a file "
            "path they share")

    def failed(exc: OSError) -> inputs.UsageError:
        return inputs.UsageError(f"{inputs.label(path)}: cannot copy the {spec.name} pipe to a "
                              f"temporary file in {tempfile.gettempdir()} (TMPDIR): "
                              f"{exc.strerror or exc}")

    with ExitStack() as removed:
        try:
            spool = removed.enter_context(tempfile.NamedTemporaryFile(
                prefix="dcx-pipe-", suffix=f".{spec.name}"))
            spool.write(head)
            shutil.copyfileobj(stream, spool, 1 << 20)
            spool.flush()
        except OSError as exc:
            raise failed(exc) from None
        return read_parts(spool.name, spec, None if cluster is None else cluster.client())


@dataclass(frozen=True)
class StreamSource:
    """An input ``dcx convert`` converts a chunk at a time (``dcx.converters.stream_convert``)."""

    spec: FormatDeclaration
    chunks: Callable[[], Iterable[Any]]
    """The input as chunks of whole lines (a format read in parts: the open file, once);
    each call reads it again from the start."""
    reopenable: bool
    """``chunks`` may be called more than once (a file, not a pipe)."""


def convert_input(path: str, format_name: str | None,
                  streams: Callable[[FormatDeclaration], bool], cluster: Any = None
                  ) -> tuple[bytes, Diagnostic | None, StreamSource | None]:
    """``read_input(path)``, or, for an input ``dcx validate`` would stream whose format
    (``format_name``, else detected) ``streams`` accepts, that input as chunks. A pipe of a
    format read in parts (Parquet) is read whole, which an existing ``cluster``
    (``--scheduler-address``) refuses from ``STREAM_BYTES``, as ``dcx validate`` does."""
    from dcx.converters.registry import FORMATS

    folder = parted_folder(path, format_name)
    if folder is not None and _large_folder(path, folder) and streams(folder):
        # its files read by seeking, a row group at a time, as a Parquet file is
        return b"", None, StreamSource(folder, lambda: _opened(path, folder), True)
    if _read_whole(path):
        return (*inputs.read_input(path), None)
    regular = path != "-" and os.path.isfile(path)
    try:
        if path == "-":
            return _pipe_to_convert(sys.stdin.buffer, path, format_name, streams, cluster)
        if not regular:
            # a FIFO or device: open while it is converted, closed when dcx exits
            return _pipe_to_convert(open(path, "rb"), path, format_name, streams, cluster)
        with open(path, "rb") as stream:
            head = stream.read(SNIFF_BYTES)
        spec = _streamable(head, path, format_name, FORMATS)
    except FileNotFoundError:
        raise inputs.UsageError(f"{path}: no such file") from None
    except PermissionError:
        raise inputs.UsageError(f"{path}: permission denied") from None
    if spec is not None and streams(spec):
        return b"", None, StreamSource(spec, lambda: _file_chunks(path), True)
    spec = _detected(head, path, format_name, FORMATS)
    if spec is not None and _parted_file(spec) and streams(spec):
        # read by seeking, a row group at a time: a file only (a pipe is read whole)
        return b"", None, StreamSource(spec, lambda: _opened(path, spec), True)
    return (*inputs.read_input(path), None)


def _opened(path: str, spec: FormatDeclaration) -> Iterator[Any]:
    """The file at ``path`` (a folder format's files, by name), open while the one item given
    is used (a reading of a format read in parts)."""
    from dcx.converters.partitions import opened

    with opened(path, spec) as source:
        yield source


def _file_chunks(path: str) -> Iterator[bytes]:
    from dcx.parsing import chunks

    with open(path, "rb") as stream:
        yield from chunks.line_chunks(stream.read, b"", chunks.CHUNK_BYTES)


def _pipe_to_convert(stream: BinaryIO, path: str, format_name: str | None,
                     streams: Callable[[FormatDeclaration], bool], cluster: Any = None
                     ) -> tuple[bytes, Diagnostic | None, StreamSource | None]:
    """``_from_pipe`` for ``dcx convert``: a pipe that outgrows ``STREAM_BYTES`` is handed
    over as chunks (read once) when its format streams."""
    from dcx.converters.registry import FORMATS
    from dcx.parsing import chunks

    limit = limits.LIMITS.max_input_bytes
    head = inputs.read_up_to(stream, STREAM_BYTES)
    more = stream.read(1) if len(head) == STREAM_BYTES else b""
    if not more:
        return (head, None, None) if len(head) <= limit else (
            b"", inputs.too_large(len(head), path), None)
    head += more
    spec = _streamable(head, path, format_name, FORMATS)
    if spec is not None and streams(spec):
        return b"", None, StreamSource(
            spec, lambda: chunks.line_chunks(stream.read, head, chunks.CHUNK_BYTES), False)
    if cluster is not None and cluster.address:
        parted = _detected(head, path, format_name, FORMATS)
        if parted is not None and _parted_file(parted):
            raise inputs.UsageError(
                f"{inputs.label(path)}: a {parted.name} pipe is converted whole in this process, "
                "not on the workers of --scheduler-address; give a file path they share")
    data = head + inputs.read_up_to(stream, limit + 1 - len(head))
    if len(data) > limit:
        return b"", inputs.too_large(len(data), path, at_least=True), None
    return data, None, None
