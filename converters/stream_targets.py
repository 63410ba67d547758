"""The targets of ``dcx.converters.stream_convert``: what a target format makes of each chunk's
document (a Parquet row group, SWF job lines, GWF task lines), what it writes first, how it
writes during the first reading of a file, and how its output is read back. See the engine's
module docstring."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dcx.converters.stream_sources import (
    PRECEDING_KEY,
    NotStreamable,
    Source,
    SwfSource,
    cut_ends,
)
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss, error, warning
from dcx.core.fields import FIELDS
from dcx.core.model import Document, Workload

if TYPE_CHECKING:
    from dcx.formats.gwf.codec import Variant


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
    from dcx.converters.catalogue import conformance_codes

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


class _Elsewhere:
    """A target of a module that imports this one (``stream_targets_json``), imported when
    first used."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def loaded(self) -> type[Target]:
        import importlib

        kind: type[Target] = getattr(importlib.import_module(self.module), self.name)
        return kind

    @property
    def sources(self) -> frozenset[str]:
        return self.loaded().sources

    def __call__(self, source: Source, reopenable: bool) -> Target:
        return self.loaded()(source, reopenable)


TARGETS: dict[str, type[Target] | _Elsewhere] = {
    "parquet": ParquetTarget, "swf": SwfTarget, "gwf": GwfTarget,
    "batsim": _Elsewhere("dcx.converters.stream_targets_json", "BatsimTarget"),
    "osp-workload": _Elsewhere("dcx.converters.stream_targets_json", "OspWorkloadTarget"),
    "opendc-workload": _Elsewhere("dcx.converters.stream_targets_opendc",
                                  "OpendcWorkloadTarget")}


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
            work.losses = target.losses(document, earlier)
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
