"""The integer token of a text trace, apart from ``dcx.parsing.traces`` so that a format's
``sniff`` can use it without importing the readers' machinery (``dcx.core.columns``, the
model): the pre-commit hook imports every format's declaration and sniffs with it."""

from __future__ import annotations


def parse_int(token: str) -> int | None:
    """A plain ASCII decimal integer (no ``_`` separators, no Unicode digits), else ``None``."""
    if token.isdigit() and token.isascii() and len(token) < 19:
        return int(token)
    if not token.isascii() or "_" in token:
        return None
    try:
        return int(token)
    except ValueError:  # also the 4,300-digit guard
        return None
