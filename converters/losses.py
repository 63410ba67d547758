"""Losses, derived: what a target format drops from a document, and the loss matrix.

``conversion_losses(document, target)`` is the one comparison: the document against what the
target makes of it (its normal form restricted to what it holds; ``dcx.core.restrict``). A
conversion reports it; the matrix is it applied, for every ordered pair, to the document that
uses every field (``dcx.core.saturated``) as the source format holds it, and to that document
without each recorded trace field in turn (``matrix_documents``: a target may choose its
layout by what a document carries). Writers count nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal

from dcx.converters.registry import BY_NAME, FORMATS
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Loss
from dcx.core.fields import FIELDS
from dcx.core.model import TRACE_FIELDS, Document
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
    """``dcx.core.restrict.conversion_losses`` (the one comparison: the field paths
    ``target`` drops from ``document``, in ``FIELDS`` order, each with the model pointer of
    its first dropped value), each with its meaning and what the formats call it
    (``loss_detail``), what the target's normal form did (``loss_notes``), and for a
    dropped topology extras path its keys and what they hold where the key's format says
    (``extras_contents``: JGF's vertices by type). ``normalized`` is ``document`` after the
    target's normal form, when the caller has it already."""
    losses = restrict_conversion_losses(document, target, normalized)
    if not losses:
        return losses
    notes = target.loss_notes(document) if target.loss_notes is not None else {}
    named = _dropped_extras_named(document, target, normalized) if any(
        loss.field in EXTRAS_PATHS for loss in losses) else {}
    if "task.extras" in {loss.field for loss in losses} and normalized is None:
        normalized = normalized_for(document, target)
    return tuple(replace(loss, detail=named.get(loss.field) or _noted(
        loss_detail(loss.field, document, target, normalized), notes.get(loss.field)))
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


def _noted(detail: str, note: str | None) -> str:
    return detail if note is None else f"{detail}; {note}"


MOST_NAMED_KEYS = 8
"""How many extras keys a loss line names before it says how many more there are."""


def loss_detail(path: str, document: Document, target: FormatDeclaration,
                normalized: Document | None = None) -> str:
    """The meaning of a dropped field path, then what the formats call it (``swf: Queue
    Number (field 15)``): a field whose values the target's normal form changes by the
    target's name, one the target does not hold by the names of the formats that hold it
    (the document's own format among them: the loss is the document's alone, whichever
    path read it, so a streamed conversion says what the whole-file one says). An extras
    path names its keys: a format's own key by that format's name for it (of a task's,
    those ``normalized``, the document after the target's normal form, still has: a key
    the normal form carries in a column of its own is no loss)."""
    if path in target.holds:
        detail = target.held_field_detail(path)
    else:
        names = [f"{spec.name}: {spec.field_names[path]}" for spec in FORMATS
                 if path in spec.holds and spec.name != target.name
                 and path in spec.field_names]
        detail = f"{FIELDS[path]} ({'; '.join(dict.fromkeys(names))})" if names \
            else FIELDS[path]
    keys = _lost_keys(path, normalized if path == "task.extras" and normalized is not None
                      else document, target) if path in EXTRAS_PATHS else []
    if not keys:
        return detail
    named = [_key_name(key) for key in keys[:MOST_NAMED_KEYS]]
    more = len(keys) - MOST_NAMED_KEYS
    such_as = "" if path.startswith("workload") else "such as "
    return f"{detail}: {such_as}{', '.join(named)}" + (f" and {more:,} more" if more > 0
                                                         else "")


def _key_name(key: str) -> str:
    """``swf: Status (field 11), …`` for a format's own key, the key itself otherwise."""
    prefix, colon, rest = key.partition(":")
    if colon:
        spec = next((spec for spec in FORMATS if spec.name == prefix), None)
        if spec is not None:
            return f"{prefix}: {spec.field_names.get(key, rest)}"
    return repr(key)


def _lost_keys(path: str, document: Document, target: FormatDeclaration) -> list[str]:
    """The extras keys at ``path`` that ``target`` drops (other formats' keys unless it
    keeps them, as Parquet does; plain keys where it does not hold the path): of the
    workload's extras or attributes all of them, of jobs and tasks those of the first job
    or task that has some, which is where the loss line's first value is (and what a
    streamed conversion's first chunk with the loss finds too)."""
    own = f"{target.name}:"
    plain_kept = path in target.holds
    foreign_kept = target.keeps_prefixed_extras and path in target.holds

    def lost(keys: Iterable[str]) -> list[str]:
        return [key for key in keys if not key.startswith(own)
                and not (plain_kept if ":" not in key else foreign_kept)]

    workload = document.workload
    if workload is None:
        return []
    if path in ("workload.extras", "workload.attributes"):
        return lost(workload.extras if path == "workload.extras" else workload.attributes)
    if path == "job.extras":
        return next((found for job in workload.jobs if (found := lost(job.extras))), [])
    if path != "task.extras":
        return []
    from dcx.core.columns import columns_of

    columns = columns_of(workload)
    if columns is None:
        return next((found for task in workload.tasks() if (found := lost(task.extras))), [])
    import numpy as np

    keys = lost(columns.extras)
    if not keys:
        return []
    present = np.logical_or.reduce([columns.extras[key].present for key in keys])
    row = int(np.argmax(present))
    return [key for key in keys if bool(columns.extras[key].present[row])]


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
    dropped = {loss.field for document in matrix_documents(source)
               for loss in conversion_losses(document, target)}
    lost = tuple(path for path in FIELDS if path in dropped)
    return MatrixCell(source.name, target.name, "lossy" if lost else "ok", lost)


@cache
def matrix_documents(source: FormatDeclaration) -> tuple[Document, ...]:
    """What a matrix cell converts: the fullest document of ``source``, and the same without
    one of the recorded trace fields it holds, for each of them. A target may choose its
    layout by what a document carries (GWF's archive variant when the fields only it keeps
    outnumber those only the workflow variant keeps): a file with fewer recorded fields
    than the fullest one gets the other layout, and loses what that one cannot hold."""
    fullest = fullest_document(source)
    recorded = [f"task.{name}" for name in TRACE_FIELDS if f"task.{name}" in source.holds]
    if len(recorded) < 2:
        return (fullest,)
    keeping = source if source.keeps_prefixed_extras else None  # (as fullest_document)
    return (fullest, *(restrict(fullest, source.holds - {path}, source.name, target=keeping)
                       for path in recorded))


def loss_matrix(formats: Sequence[FormatDeclaration] = FORMATS) -> tuple[MatrixCell, ...]:
    """Every ordered pair of distinct formats."""
    return tuple(matrix_cell(source, target)
                 for source in formats for target in formats if source.name != target.name)
