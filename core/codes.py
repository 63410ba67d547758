"""The diagnostic-code catalogue's entry type and the codes of the bottom layer.

Every code dcx can emit is declared once, with its severity and a one-line meaning: the codes
of a format in its ``FORMAT`` declaration, those of each other layer in a ``CODES`` tuple of
its own. ``dcx.cli.catalogue`` gathers them; the error-code page is generated from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Code:
    """A stable diagnostic code (``json.duplicate-key``) with what it means."""

    code: str
    severity: Severity
    meaning: str
    conformance: bool = False
    """For a warning: the file breaks the format's own specification or the upstream schema
    (not merely dcx's advice). A conversion whose output raises one is refused."""


CODES = (
    Code("input.too-large", "error",
         "The file is larger than the input budget (`dcx.core.limits.LIMITS.max_input_bytes`); "
         "it is refused before it is read. `dcx validate` checks a format with a chunked "
         "reader (SWF) in chunks instead, whatever its size."),
)
"""Codes shared by every reader: the budgets of ``dcx.core.limits`` apply before any parser
runs, so the refusal is declared here, below the layers that emit it."""
