"""A byte stream cut into chunks of whole lines, for readers that check a trace larger than
memory a chunk at a time (``FormatDeclaration.read_chunks``). The caller owns the stream;
this module only calls the ``read`` function it is given."""

from __future__ import annotations

from collections.abc import Callable, Iterator

CHUNK_BYTES = 4 << 20
"""Bytes read at a time: a chunk holds about this much, cut after its last newline."""


def line_chunks(read: Callable[[int], bytes], head: bytes = b"",
                chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The bytes ``head`` followed by ``read(chunk_bytes)`` until it returns ``b""``, as
    non-empty chunks that each end just after a newline (the last one: at the end of the
    input, with or without one). A line longer than ``chunk_bytes`` is kept whole: memory is
    bounded by the chunk size and the longest line."""
    pending, ended = head, False
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
            yield pending[start:cut]
            start = cut
        if ended:
            return
        more = read(chunk_bytes)
        ended = not more
        pending = pending[start:] + more
