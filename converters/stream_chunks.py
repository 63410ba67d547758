"""What the engine (``dcx.converters.stream_convert``) does with the formats' declared stream
sources and targets beyond what they do themselves: which pairs stream (``stream_pairs``,
derived from the declarations), the work on each chunk (``chunk_work``, in this
process or on a Dask worker) and reading the output back under the target format's rules
(``read_back``, the way the target's ``reads_back`` names), which accepts it or says why
not."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dcx.converters.losses import conversion_losses
from dcx.converters.registry import FORMATS, conformance_codes, get
from dcx.converters.scratch import LOCAL_FILES
from dcx.core.declaration import FormatDeclaration, loaded
from dcx.core.diagnostics import Diagnostic, Loss, error, warning
from dcx.core.fields import FIELDS
from dcx.core.model import Document
from dcx.core.restrict import differing_values, normalized_for
from dcx.core.streams import NotStreamable, Source, Target, invalid_output


@functools.cache
def stream_pairs() -> frozenset[tuple[str, str]]:
    """Source and target formats ``dcx convert`` converts a chunk at a time: every format
    that declares a stream source to every one that declares a stream target (but to itself
    only when its target says so, ``Target.from_itself``)."""
    sources = [spec.name for spec in FORMATS if spec.stream_source is not None]
    return frozenset((source, spec.name) for spec in FORMATS if spec.stream_target is not None
                     for source in sources
                     if source != spec.name or loaded(spec.stream_target).from_itself)


def stream_source(name: str) -> Source:
    """The stream source format ``name`` declares, made for one conversion."""
    make = get(name).stream_source
    assert make is not None, f"{name} declares no stream source"
    return make()


def stream_target(name: str, source: Source, reopenable: bool) -> Target:
    """The stream target format ``name`` declares, for ``source``'s chunks."""
    make = get(name).stream_target
    assert make is not None, f"{name} declares no stream target"
    target = make(source, reopenable)
    target.files = LOCAL_FILES
    target.derive_losses = Derivations()
    return target


@dataclass
class Derivations:
    """``conversion_losses``, remembering the chunk documents and normal forms it compared
    since ``begun``. A target may say which held paths its chunk's normal form changes
    (``normal_form_losses`` of the declaration it passes); a path the format's own
    declaration names for the chunk whose values the chunk's normal form does change is
    counted too, and where a target names a loss without a count, the same comparison
    counts it (``counted_by_comparison``): so the chunks' counts add up to the whole
    file's."""

    compared: list[tuple[Document, Document]] = field(default_factory=list)

    def __call__(self, document: Document, spec: FormatDeclaration,
                 normalized: Document | None) -> tuple[Loss, ...]:
        normal = normalized if normalized is not None else normalized_for(document, spec)
        self.compared.append((document, normal))
        declared = get(spec.name)
        if spec is not declared and declared.normal_form_losses is not None:
            claimed = frozenset(spec.normal_form_losses(document)
                                if spec.normal_form_losses is not None else ())
            unclaimed = frozenset(declared.normal_form_losses(document)) - claimed
            changed = {path for path, (count, _) in differing_values(
                document, normal, unclaimed).items() if count} if unclaimed else set()
            if changed:
                spec = replace(spec, normal_form_losses=lambda _: claimed | changed)
        return conversion_losses(document, spec, normal)

    def begun(self) -> None:
        self.compared.clear()


def counted_by_comparison(losses: dict[Any, tuple[Loss, ...]], derived: Any
                          ) -> dict[Any, tuple[Loss, ...]]:
    """``losses`` with the values of each uncounted one counted: how many the one
    comparison the chunk's losses were derived from finds changed (``differing_values``),
    where there was one such comparison."""
    compared = derived.compared if isinstance(derived, Derivations) else []
    uncounted = {loss.field for found in losses.values() for loss in found
                 if loss.count is None and loss.field in FIELDS}
    if len(compared) != 1 or not uncounted:
        return losses
    counts = differing_values(*compared[0], uncounted)

    def counted(found: tuple[Loss, ...]) -> tuple[Loss, ...]:
        has_count = {loss.field for loss in found if loss.count is not None}
        return tuple(replace(loss, count=counts[loss.field][0] or None)
                     if loss.count is None and loss.field in counts
                     and loss.field not in has_count else loss for loss in found)

    return {form: counted(found) for form, found in losses.items()}


def read_back(target: Target, path: str) -> Diagnostic | None:
    """Why the output at ``path`` is not accepted, if it is not, read back the way the
    target says (``Target.reads_back``)."""
    way = target.reads_back
    if way == "chunks":
        return _read_back_in_chunks(target, path)
    if way == "parts":
        return _read_back_in_parts(target, path)
    if way == "folder":
        return _read_back_folder(target, path)
    return _read_back_whole(target, path)


def _read_back_in_parts(target: Target, path: str) -> Diagnostic | None:
    """The reader ``dcx validate`` runs on a large file read by seeking (a Parquet file),
    a part at a time."""
    from dcx.converters.partitions import read_parts

    problems = read_parts(path, target.spec).diagnostics
    return invalid_output(target.spec.name, problems) if problems else None


def _read_back_folder(target: Target, path: str) -> Diagnostic | None:
    """The folder at ``path`` read as ``dcx validate`` reads it
    (``streaming.read_in_parts``): a part at a time from ``STREAM_BYTES`` where the format
    has a part reader (``read_parts``), else whole within the input size limit, and beyond
    it not at all."""
    from dcx.converters import streaming
    from dcx.converters.folders import members_size, read_folder
    from dcx.core.limits import LIMITS

    spec = target.spec
    size = members_size(path, spec)
    if spec.read_parts is not None and size >= streaming.STREAM_BYTES:
        from dcx.converters.partitions import read_parts

        return judged(target, read_parts(path, spec).diagnostics)
    if size > LIMITS.max_input_bytes:
        return None
    found = spec.read(read_folder(path, spec))
    return judged(target, found.diagnostics, found.document is None)


def _read_back_whole(target: Target, path: str) -> Diagnostic | None:
    """Why the output at ``path`` is not accepted by its format's reader, read whole, if it
    is not; an output over the input size limit is not read (``dcx validate`` would refuse
    it; each part is the codec's ``write_part``, which the differential tests hold to the
    whole-file writer)."""
    from dcx.core.limits import LIMITS

    if os.path.getsize(path) > LIMITS.max_input_bytes:
        return None
    with open(path, "rb") as stream:
        found = target.spec.read(stream.read())
    return judged(target, found.diagnostics, found.document is None)


def _read_back_in_chunks(target: Target, path: str) -> Diagnostic | None:
    """Why the text output at ``path`` is not accepted by its format's chunked reader, if it
    is not; what it warns of and the input did not goes to ``target.warned``."""
    from dcx.parsing import chunks

    spec = target.spec
    assert spec.read_chunks is not None
    with open(path, "rb") as stream:
        found = spec.read_chunks(chunks.line_chunks(stream.read, b"", chunks.CHUNK_BYTES))
    return judged(target, found.diagnostics)


def judged(target: Target, diagnostics: Sequence[Diagnostic], unread: bool = False
           ) -> Diagnostic | None:
    """Why an output whose reading back gave ``diagnostics`` (``unread``: and no document)
    is not accepted, if it is not; what it warns of and the input did not goes to
    ``target.warned``."""

    spec = target.spec
    rejected = [d for d in diagnostics if d.is_error or d.code in conformance_codes()]
    if rejected or unread:
        return invalid_output(spec.name, rejected)
    inherited = {d.code for d in target.verdict.diagnostics} if target.verdict else set()
    severity = error if target.strict else warning
    target.warned = tuple(severity(f"the {spec.name} output will warn: {d.message}",
                                   "convert.output-warning")
                          for d in diagnostics if d.code not in inherited)
    refused = [d for d in target.warned if d.is_error]
    return refused[0] if refused else None


@dataclass
class ChunkWork:
    """What one chunk's document becomes (``chunk_work``): in this process, or on a Dask
    worker, whence it goes back to the engine, which sums the losses in chunk order."""

    losses: dict[Any, tuple[Loss, ...]] | None = None
    """Its losses (pointers in the chunk) in each form the output may take
    (``Target.losses``), when measured."""
    ends: dict[Any, tuple[bool, bool, int]] = field(default_factory=dict)
    """Its ``cut_ends`` in each of those forms, when measured."""
    part: Any = None
    """The target's part, when made."""
    problem: str | None = None
    """Why it cannot be converted on its own (``NotStreamable``), if it cannot."""
    measured: bool = False
    made: bool = False
    """What it was asked for (``chunk_work``'s ``measure`` and ``make``)."""


def chunk_work(source: Source, target: Target, document: Document | None,
               problem: str | None, later: list[Any], measure: bool, make: bool) -> ChunkWork:
    """The chunk's document without what the source takes out of it (dependencies on tasks
    of other chunks), its losses (``measure``) and the target's part (``make``); stopped at
    the first step that finds it cannot be converted on its own."""
    work = ChunkWork(measured=measure, made=make)
    try:
        if problem is not None:
            raise NotStreamable(problem)
        assert document is not None
        document, earlier = (source.cross_chunk(document, later)
                             if target.dependencies_across
                             else (source.own_chunk(document), {}))
        if measure:
            if isinstance(target.derive_losses, Derivations):
                target.derive_losses.begun()
            work.losses = counted_by_comparison(target.losses(document, earlier),
                                                target.derive_losses)
            work.ends = {form: target.cut_ends(document, any(loss.field == "job"
                                                             for loss in losses))
                         for form, losses in work.losses.items()}
        unstreamable = source.unstreamable(document, target.spec)
        if unstreamable is not None:
            raise NotStreamable(unstreamable)
        if make:
            work.part = target.part(document, earlier)
    except NotStreamable as exc:
        work.problem = str(exc)
    return work
