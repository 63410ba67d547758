"""Budgets that bound what any reader will accept (documented on the security page)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_input_bytes: int = 512 * 1024 * 1024
    """Larger files are refused before parsing."""
    max_json_depth: int = 512
    """Deeper JSON is refused (Python's decoder would raise RecursionError near 1,000)."""
    max_xml_depth: int = 256
    """libxml2's own limit without ``huge_tree``; our formats need fewer than 10 levels."""
    max_xml_text_bytes: int = 10 * 1024 * 1024
    """libxml2's text-node limit without ``huge_tree``."""
    max_hostlist_range: int = 1 << 20
    """Hosts in one hostlist range (flux-core's MAX_RANGE)."""
    max_idset_id: int = (1 << 31) - 1
    """Largest id in an RFC 22 idset (flux-core's universe limit)."""


LIMITS = Limits()


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a reader builds a large model.

    The model has no reference cycles, yet every allocation-triggered full collection
    rescans all objects built so far (a tenth of a 100,000-lease read; half of a
    30,000-task trace's). Reference counting still frees everything as usual, and a caller
    that had collection off keeps it off.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
