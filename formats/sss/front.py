"""``read``: the text-run path first (``text_runs``, which only accepts), then the checked
path (``reader.read_checked``) for every file it does not accept. Above both, so neither
imports the other's caller."""

from __future__ import annotations

from dcx.core.diagnostics import ReadResult
from dcx.formats.sss import reader, text_runs


def read(data: bytes) -> ReadResult:
    fast = text_runs.read(data)
    if fast is not None:
        return fast
    return reader.read_checked(data)
