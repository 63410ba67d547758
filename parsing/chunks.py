"""A byte stream cut into chunks of whole lines, for readers that check a trace larger than
memory a chunk at a time (``FormatDeclaration.read_chunks``). The caller owns the stream;
this module only calls the ``read`` function it is given."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from dcx.core.declaration import ChunkedRead
from dcx.core.diagnostics import Diagnostic

CHUNK_BYTES = 4 << 20
"""Bytes read at a time: a chunk holds about this much, cut after its last newline."""

MAX_LINE_BYTES = 64 << 20
"""The longest line a chunk may hold: what bounds memory when a line never ends."""


class ChunkChecker(Protocol):
    """A format's checks across the chunks of one stream (its ``read_chunks``)."""

    encoding: Diagnostic | None
    """Set when a chunk is not text: nothing after it is read."""

    def add(self, chunk: bytes) -> None: ...

    def finish(self) -> ChunkedRead: ...


def checked(checker: ChunkChecker, chunks: Iterable[bytes]) -> ChunkedRead:
    """What ``checker`` found in ``chunks`` (each ends with a newline but the last): the
    diagnostics the format's whole-file ``read`` gives for their bytes, and the count of
    jobs."""
    for chunk in chunks:
        checker.add(chunk)
        if checker.encoding is not None:
            return ChunkedRead((checker.encoding,))
    return checker.finish()


class LineTooLong(Exception):
    """A line longer than the bound: the input cannot be cut into chunks of whole lines."""

    def __init__(self, line: int, bound: int) -> None:
        super().__init__(f"line {line:,} is longer than {bound:,} bytes")
        self.line = line
        self.bound = bound


def line_chunks(read: Callable[[int], bytes], head: bytes = b"",
                chunk_bytes: int = CHUNK_BYTES,
                max_line: int | None = None) -> Iterator[bytes]:
    """The bytes ``head`` followed by ``read(chunk_bytes)`` until it returns ``b""``, as
    non-empty chunks that each end just after a newline (the last one: at the end of the
    input, with or without one). A line longer than ``chunk_bytes`` is one chunk; one longer
    than ``max_line`` (default ``MAX_LINE_BYTES``) raises ``LineTooLong``, so memory stays
    bounded by both sizes."""
    max_line = MAX_LINE_BYTES if max_line is None else max_line
    pending, ended, lines = head, False, 1
    while True:
        start = 0
        while len(pending) - start >= chunk_bytes or (ended and start < len(pending)):
            cut = pending.rfind(b"\n", start, start + chunk_bytes) + 1
            if not cut:  # a line longer than a chunk: up to its end
                cut = pending.find(b"\n", start + chunk_bytes) + 1
            if not cut:
                if not ended:
                    break  # its end is still to come
                cut = len(pending)
            lines += pending.count(b"\n", start, cut)
            yield pending[start:cut]
            start = cut
        if ended:
            return
        parts = [pending[start:]]
        held, seen = len(parts[0]), False
        line_start = parts[0].rfind(b"\n") + 1  # of the line still without its end
        while True:  # at least a chunk's worth, and a newline in what was read
            more = read(chunk_bytes)
            ended = not more
            seen = seen or b"\n" in more
            parts.append(more)
            held += len(more)
            if ended or (seen and held >= chunk_bytes):
                break
            if not seen and held - line_start > max_line:
                raise LineTooLong(lines + parts[0].count(b"\n"), max_line)
        pending = b"".join(parts)
