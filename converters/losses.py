"""Losses, derived: what a target format drops from a document, and the loss matrix.

``conversion_losses(document, target)`` is the one comparison: the document against what the
target makes of it (its normal form restricted to what it holds; ``dcx.core.restrict``). A
conversion reports it; the matrix is it applied, for every ordered pair, to the document that
uses every field (``dcx.core.saturated``) as the source format holds it. Writers count nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dcx.converters.registry import FORMATS
from dcx.core.declaration import FormatDeclaration
from dcx.core.model import Document
from dcx.core.restrict import (
    EXTRAS_PATHS,
    conversion_losses,
    restrict,
    with_own_extras,
    with_parts,
)
from dcx.core.saturated import saturated_document

PARTS = ("environment", "workload")


def fullest_document(source: FormatDeclaration) -> Document:
    """The most a ``source`` file can carry: the saturated document as ``source`` holds it,
    with data of its own where it keeps some."""
    document = with_own_extras(saturated_document(), source.name, source.own_extras)
    if source.keeps_prefixed_extras:  # it also carries other formats' keys (Parquet)
        extras_paths = EXTRAS_PATHS & source.holds
        document = with_own_extras(document, "other", extras_paths)
        return restrict(document, source.holds, source.name, target=source)
    return restrict(document, source.holds, source.name)


Status = Literal["ok", "lossy", "impossible"]


@dataclass(frozen=True)
class MatrixCell:
    """What converting a document of ``source`` to ``target`` can lose."""

    source: str
    target: str
    status: Status
    lost: tuple[str, ...] = ()
    """Field paths, in ``FIELDS`` order."""
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "status": self.status,
                "lost": list(self.lost), "reason": self.reason}

    def render(self) -> str:
        if self.status == "ok":
            detail = "nothing lost"
        elif self.status == "lossy":
            detail = "loses " + ", ".join(self.lost)
        else:
            detail = f"{self.status}: {self.reason}"
        return f"{self.source} -> {self.target}: {detail}"


def matrix_cell(source: FormatDeclaration, target: FormatDeclaration) -> MatrixCell:
    if not target.writable:
        return MatrixCell(source.name, target.name, "impossible",
                          reason=f"dcx cannot write {target.name}")
    shared = [part for part in PARTS
              if part in with_parts(source.holds) and part in with_parts(target.holds)]
    if not shared:
        return MatrixCell(source.name, target.name, "impossible",
                          reason=f"{target.name} holds nothing of what {source.name} describes "
                          "(topology vs workload)")
    lost = tuple(loss.field for loss in conversion_losses(fullest_document(source), target))
    return MatrixCell(source.name, target.name, "lossy" if lost else "ok", lost)


def loss_matrix(formats: Sequence[FormatDeclaration] = FORMATS) -> tuple[MatrixCell, ...]:
    """Every ordered pair of distinct formats."""
    return tuple(matrix_cell(source, target)
                 for source in formats for target in formats if source.name != target.name)
