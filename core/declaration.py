"""What a format module declares about itself, once: the single source from which the registry,
sniffing, the CLI's choices, the loss matrix, the docs and the pre-commit hook manifest are
derived.

A format module (or package) under ``formats/`` exports ``FORMAT``, a ``FormatDeclaration``.
Adding a format is its module, its schema, its example and its tests; nothing else lists it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from dcx.core.codes import Code
from dcx.core.diagnostics import Diagnostic, ReadResult, WriteResult, has_errors

if TYPE_CHECKING:  # the hook sniffs without building a model: keep it unloaded
    from dcx.core.model import Document, Task, Workload
    from dcx.core.streams import Source, Target

Kind = Literal["topology", "workload", "both"]
Content = Literal["json", "xml", "text", "binary"]
PartSource = BinaryIO | Mapping[str, BinaryIO]
"""What a part reader reads: a seekable file, or a folder format's members by name."""


@dataclass(frozen=True)
class ChunkedRead:
    """What a format's chunked reader (``FormatDeclaration.read_chunks``) found in a stream:
    the diagnostics its whole-file ``read`` gives for the same bytes, and the count of jobs
    (what a summary line says of a valid file), tasks and dependencies (what ``dcx info``
    says; ``None``, shown as unknown, from a reader that does not count them)."""

    diagnostics: tuple[Diagnostic, ...]
    jobs: int = 0
    tasks: int | None = None
    dependencies: int | None = None

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


@dataclass(frozen=True)
class PartReader:
    """How a format whose files are read by seeking (Parquet: the footer, then its row groups)
    is checked a part at a time: in this process one part after the other, or each part on a
    Dask worker (``dcx.converters.partitions``), the findings merged in one place. Each
    function takes a seekable binary file its caller opened (for a format stored as a
    folder, ``members``: its members present, by name, each such a file)."""

    open: Callable[[PartSource], tuple[Any, tuple[Diagnostic, ...]]]
    """The footer: what every part's check needs (its ``row_counts``, one per part) and no
    diagnostics, or ``None`` and the diagnostics that end the read."""
    check: Callable[[PartSource, Any, int], Any]
    """One part's findings (picklable, compact), or a ``Diagnostic`` when it is unreadable."""
    finish: Callable[[Any, Sequence[Any], Callable[[int], Any]], ChunkedRead]
    """Every part's findings, in order, into ``read``'s diagnostics; the callable reads a
    part's dependency columns again (``reread``) when the checks across parts need them."""
    reread: Callable[[PartSource, int], Any]


class ImportRefused(Exception):
    """What an import loader raises for a file it will not or cannot give (outside the
    importing file's folder, absent, too large); the message says which and why."""


ImportLoader = Callable[[str], bytes]
"""Gives the bytes of a file an input names (``importFrom``), by its path relative to the
input's folder with ``/`` separators, already free of ``..`` and absolute parts; raises
``ImportRefused``."""


@dataclass(frozen=True)
class FormatDeclaration:
    """One format: what it is called, what it reads and writes, and what it can hold."""

    name: str
    """The command-line name (``flux-r``): lower case, stable."""
    title: str
    family: str
    """Formats validated by one pre-commit hook (``dcx-validate-<family>``)."""
    kind: Kind
    extensions: tuple[str, ...]
    content: frozenset[Content]
    """What its bytes start with (``{``/``[``, ``<``, a binary magic such as Parquet's ``PAR1``
    or a NUL byte, anything else): sniffing a JSON file never asks an XML format, nor a binary
    file a text format."""
    schema: str
    """File name under ``schemas/`` (JSON Schema) or ``xsd/`` (XSD) that validates it."""
    description: str
    holds: frozenset[str]
    """Model field paths it can carry (``dcx.core.fields``)."""
    sniff: Callable[[bytes], bool]
    read: Callable[[bytes], ReadResult]
    write: Callable[[Document], WriteResult] | None
    """Serialisation only; ``None`` for a format dcx reads but cannot write."""
    normal_form: Callable[[Document], Document] | None = None
    """What the format makes of any document before field paths apply (value restrictions,
    ``dcx.core.restrict``)."""
    normal_form_losses: Callable[[Document], frozenset[str]] | None = None
    """The held field paths ``normal_form`` changes for a document."""
    leaves_out: Callable[[Document], str] | None = None
    """Why ``normal_form`` leaves machines or jobs of a document out, in one line (what a
    refused conversion says when the format keeps none of them)."""
    own_extras: frozenset[str] = frozenset()
    """Extras field paths (``dcx.core.restrict.EXTRAS_PATHS``) where its reader keeps data of
    its own, under ``name:``-prefixed keys that no other format holds."""
    extras_contents: Callable[[str, str, Any], Mapping[str, int]] | None = None
    """What one of its extras values holds, as counts by label (``(path, key, value)`` →
    ``{"power vertices": 504}``): a loss line names what a target drops with the key
    (``dcx.converters.losses``), not only how many keys."""
    requires: frozenset[str] = frozenset()
    """Fields it fills in when absent (SSS machine ids): filling them loses nothing."""
    codes: tuple[Code, ...] = ()
    """Every diagnostic code its reader and writer can emit."""
    keeps_prefixed_extras: bool = False
    """It stores the model as it is (Parquet): other formats' ``name:``-prefixed extras keys
    survive wherever it holds the extras path, as its plain keys do."""
    shared_extensions: frozenset[str] = frozenset()
    """Those of its ``extensions`` that many other tools' files use too (``.conf``): in hook
    mode, text there that no format recognises is someone else's file and skipped."""
    field_names: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    """What the format itself calls a field it holds: model field path, or one of its own
    ``name:``-prefixed extras keys, to its column or key (SWF ``task.queue``: ``Queue Number
    (field 15)``). Loss lines name what is lost by these (``dcx.converters.losses``)."""
    loss_notes: Callable[[Document], Mapping[str, str]] | None = None
    """What its normal form does to a document's values at a field path, beyond dropping
    them, said on that path's loss line (SWF: the numbers it writes for user names)."""
    written_ids: Callable[[Document], list[tuple[Any, Any]]] | None = None
    """Each task's id in a document and the id its writer gives the task, in the order
    written, for a format whose writer may renumber tasks (SWF's integer job numbers):
    ``dcx convert --id-map`` writes them beside the output."""
    runtimes_at_speed: Callable[[Workload, float], Callable[[Task], float | str | None] | None] \
        | None = None
    """For a format whose tasks may state the work they do rather than how long they run
    (Batsim's compute profiles, kept in its own extras): given hosts that each compute
    ``speed`` flop/s, what tells a task's runtime in seconds where the format's own semantics
    make it exact, or why not in a few words (``network traffic (com above 0)``), or
    ``None`` for a task holding no such work; ``None`` instead of the function for a
    workload holding none. ``dcx convert --fill speed=…`` (``dcx.converters.fill``) asks
    every format that has one."""
    members: tuple[str, ...] = ()
    """The files of a format stored as a folder (``("tasks.parquet", "fragments.parquet")``).
    Its bytes, what ``read`` takes and ``write`` returns, are then a tar archive of these
    files (``dcx.core.members``); the CLI reads and writes the folder itself."""
    read_members: tuple[str, ...] = ()
    """Files of an older layout of the folder that it reads too (OpenDC 2.x's
    ``meta.parquet``): a folder holding one is that format; they are never written."""

    read_chunks: Callable[[Iterable[bytes]], ChunkedRead] | None = None
    """Checks an input given as chunks of whole lines (``dcx.parsing.chunks``) in bounded
    memory, with ``read``'s diagnostics: what ``dcx validate`` runs on inputs too large to
    hold (a format whose rules need only compact state across lines)."""

    read_parts: PartReader | None = None
    """Checks a file a part at a time by seeking (Parquet's row groups), with ``read``'s
    diagnostics: what ``dcx validate`` runs on such files too large to hold, and what it
    spreads over a Dask cluster (``--workers``, ``--scheduler-address``)."""

    read_with_imports: Callable[[bytes, ImportLoader], ReadResult] | None = None
    """``read`` for an input read from a file whose folder may hold the files it names
    (OpenDC's ``importFrom``): the loader gives them, confined to that folder. ``read``
    alone (stdin) refuses such names with a located error."""

    stream_source: Callable[[], Source] | None = None
    """Makes the ``dcx.core.streams.Source`` that reads an input a chunk at a time for ``dcx
    convert`` (its package's ``stream_source.py``, named by ``deferred``): every declared
    stream source converts to every declared stream target (``dcx.converters.stream_convert.
    stream_pairs``)."""

    stream_target: Callable[[Source, bool], Target] | None = None
    """Makes the ``dcx.core.streams.Target`` that writes a source's chunks (its package's
    ``stream_target.py``, named by ``deferred``), given the source and whether the input
    may be read twice."""

    @property
    def writable(self) -> bool:
        return self.write is not None

    def held_field_detail(self, path: str) -> str:
        """A loss line's words for a field this format holds but changes: its meaning and
        the format's own name for it (``real runtime (opendc-workload: duration)``), the
        same whether the whole file or a stream target says it."""
        from dcx.core.fields import FIELDS

        name = self.field_names.get(path)
        return f"{FIELDS[path]} ({self.name}: {name})" if name else FIELDS[path]

    @property
    def module(self) -> str:
        """The format's module or package directly under ``dcx.formats`` (its docstring is
        the format's reference text), wherever inside it the reader lives."""
        return ".".join(self.read.__module__.split(".")[:3])

    @property
    def doc(self) -> str:
        module = sys.modules.get(self.module)
        return (module.__doc__ or "") if module is not None else ""


# A format's front (its package ``__init__``) names its reader, writer and normal form with
# these, so that importing every front to sniff, as the pre-commit hook does, loads none of
# them (DEVELOPING.md: "A format's declaration module loads nothing heavy").


def deferred(module: str, name: str) -> Callable[..., Any]:
    """The function ``name`` of ``module``, imported on the first call."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__module__ = module  # FormatDeclaration.module finds the format's package here
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{module}.{name}``, imported on first use."
    return call


def loaded(function: Callable[..., Any]) -> Any:
    """What a ``deferred`` name stands for (a class, to read its attributes), imported now."""
    return getattr(importlib.import_module(function.__module__), function.__name__)


def forwarded(package: str, submodules: Mapping[str, str], name: str) -> Any:
    """A front's ``__getattr__`` (PEP 562): ``name`` read from the submodule of ``package``
    that ``submodules`` names for it, imported on first use."""
    if name not in submodules:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{package}.{submodules[name]}"), name)
