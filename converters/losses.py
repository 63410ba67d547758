"""Losses, derived: what a target format drops from a document, and the loss matrix.

``conversion_losses(document, target)`` is the one comparison: the document against what the
target makes of it (its normal form restricted to what it holds; ``dcx.core.restrict``). A
conversion reports it; the matrix is it applied, for every ordered pair, to the document that
uses every field (``dcx.core.saturated``) as the source format holds it. Writers count nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from dcx.converters.registry import BY_NAME, FORMATS
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Loss
from dcx.core.fields import FIELDS
from dcx.core.model import Document
from dcx.core.restrict import (
    EXTRAS_PATHS,
    dropped_extras,
    normalized_for,
    restrict,
    with_own_extras,
    with_parts,
)
from dcx.core.restrict import conversion_losses as restrict_conversion_losses
from dcx.core.saturated import saturated_document

PARTS = ("environment", "workload")


def conversion_losses(document: Document, target: FormatDeclaration,
                      normalized: Document | None = None) -> tuple[Loss, ...]:
    """``dcx.core.restrict.conversion_losses`` (the one comparison), with each dropped
    topology extras path's detail naming its keys, and what they hold where the key's
    format says (``extras_contents``: JGF's vertices by type)."""
    losses = restrict_conversion_losses(document, target, normalized)
    if not any(loss.field in EXTRAS_PATHS for loss in losses):
        return losses
    named = _dropped_extras_named(document, target, normalized)
    return tuple(replace(loss, detail=named[loss.field]) if loss.field in named else loss
                 for loss in losses)


def _dropped_extras_named(document: Document, target: FormatDeclaration,
                          normalized: Document | None) -> dict[str, str]:
    """Each topology extras path's meaning with the keys ``target`` drops there, and what
    they hold where the key's format says (``extras_contents``)."""
    def describe(path: str, key: str, value: Any) -> Mapping[str, int]:
        owner = BY_NAME.get(key.partition(":")[0]) if ":" in key else None
        contents = owner.extras_contents if owner is not None else None
        return contents(path, key, value) if contents is not None else {}

    normal = normalized if normalized is not None else normalized_for(document, target)
    found = dropped_extras(normal, target.holds, target.name, describe,
                           target.keeps_prefixed_extras)
    return {path: f"{FIELDS[path]}: " + "; ".join(
        key + (" (" + ", ".join(f"{count:,} {label}" for label, count in labels.items())
               + ")" if labels else "")
        for key, labels in keys.items()) for path, keys in found.items()}


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
