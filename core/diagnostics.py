"""Diagnostics, read results and write results: values, never printed strings.

A reader never raises for bad input: it returns a ``ReadResult`` whose diagnostics say what
is wrong and where. ``InputError`` exists for the few places deep inside a parser where
unwinding is simpler than threading a list through; readers catch it at their boundary.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the hook sniffs without building a model: keep it unloaded
    from dcx.core.model import Document


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Diagnostic:
    """One finding about one place in one file.

    ``pointer`` is an RFC 6901 JSON Pointer for JSON inputs and an XPath for XML inputs;
    the empty string means the document as a whole. ``line`` and ``column`` are 1-based.
    ``code`` is a stable, dotted identifier (``json.duplicate-key``) that tests and users
    can match on; the message may be reworded, the code may not. Every code is declared in
    the catalogue (``dcx.cli.catalogue``), so there is no default: a diagnostic
    without a code could not be matched on.
    """

    severity: Severity
    message: str
    code: str
    line: int | None = None
    column: int | None = None
    pointer: str = ""
    path: str | None = None
    hint: str | None = None

    def __post_init__(self) -> None:
        if on_diagnostic is not None:
            on_diagnostic(self)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def at(self, path: str) -> Diagnostic:
        return replace(self, path=path)

    def render(self) -> str:
        """``file:line:col: severity: pointer: message`` (one line)."""
        location = self.path or "<input>"
        if self.line is not None:
            location += f":{self.line}"
            if self.column is not None:
                location += f":{self.column}"
        pointer = self.pointer or "/"
        text = f"{location}: {self.severity.value}: {pointer}: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return " ".join(text.splitlines())

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity.value,
            "code": self.code,
            "line": self.line,
            "column": self.column,
            "pointer": self.pointer,
            "message": self.message if not self.hint else f"{self.message} (hint: {self.hint})",
        }


on_diagnostic: Callable[[Diagnostic], None] | None = None
"""Called with every diagnostic as it is made; ``None`` (one global lookup per diagnostic)
outside the test suite, whose recorder fails a test that emits an undeclared code."""


def error(message: str, code: str, **where: Any) -> Diagnostic:
    return Diagnostic(Severity.ERROR, message, code, **where)


def warning(message: str, code: str, **where: Any) -> Diagnostic:
    return Diagnostic(Severity.WARNING, message, code, **where)


class InputError(Exception):
    """Bad input found deep inside a parser; carries the diagnostic to report."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


@dataclass(frozen=True)
class ReadResult:
    """A reader's answer: the document (``None`` when the input could not be read at all)
    and every diagnostic, errors and warnings alike."""

    document: Document | None
    diagnostics: tuple[Diagnostic, ...] = ()
    source_map: Mapping[str, tuple[int, int | None]] = field(default_factory=dict)
    """Where model objects came from, for checks made later on the model (the scheduler's
    feasibility checks): a model pointer such as ``/workload/jobs/3/tasks/0`` to the
    (line, column) of its source. Text readers fill it; others may leave it empty."""
    locator: Callable[[str], tuple[int | None, int | None]] | None = None
    """Where a model pointer's object came from, found when asked: what a reader gives
    instead of a ``source_map`` when finding an object in its source again is cheap and
    building the map for every object would not be (a JSON or XML reader re-scanning the
    bytes for the element that object was read from). ``(None, None)``: cannot tell."""

    @property
    def ok(self) -> bool:
        return self.document is not None and not has_errors(self.diagnostics)

    def locate(self, model_pointer: str) -> tuple[int | None, int | None]:
        """The (line, column) the object at ``model_pointer`` was read from, or
        ``(None, None)`` when the reader cannot tell."""
        where = self.source_map.get(model_pointer)
        if where is not None:
            return where
        if self.locator is not None:
            return self.locator(model_pointer)
        return None, None


@dataclass(frozen=True)
class Loss:
    """A field the target format cannot hold, named by its model field path
    (``machine.gpus``, ``task.deadline_s``), with how many values it drops (``None``: a value
    restriction of the target that gives no count) and what the field means."""

    field: str
    count: int | None = None
    detail: str = ""
    first: str | None = None
    """The model pointer (``dcx.core.located``) of the first value dropped, in document
    order, when there is one: ``ReadResult.locate`` turns it into a line and column."""

    def first_place(self, read: ReadResult | None, name: str) -> str | None:
        """Where the first dropped value is, for people: ``in.json:12:7, /environment/…``
        (``NAME:line:col`` where ``read``'s reader can tell, then the model pointer)."""
        if self.first is None:
            return None
        line, column = read.locate(self.first) if read is not None else (None, None)
        if line is None:
            return self.first
        where = f"{name}:{line}" if column is None else f"{name}:{line}:{column}"
        return f"{where}, {self.first}"

    def render(self) -> str:
        text = self.field
        if self.count is not None:
            text += f" ({self.count:,} value{'s' if self.count != 1 else ''})"
        return f"{text}: {self.detail}" if self.detail else text


@dataclass(frozen=True)
class WriteResult:
    """A writer's answer: the bytes, or an error saying why it could not write them. What
    the format cannot hold is not the writer's to say: losses are derived
    (``dcx.converters.losses``)."""

    data: bytes
    diagnostics: tuple[Diagnostic, ...] = field(default=())
    """Errors that stopped the write (``data`` is then empty) or warnings about it."""

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)
