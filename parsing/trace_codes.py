"""The diagnostic codes that the shared trace helpers (``dcx.parsing.traces``) emit on a
format's behalf, and the error budget they name.

Kept apart from ``traces`` so a format's declaration can list these codes without importing
the readers' machinery (``dcx.core.columns``, the model): the pre-commit hook imports every
format's declaration to sniff.
"""

from __future__ import annotations

from dcx.core.codes import Code

MAX_ERRORS = 1000
"""A reader stops after this many errors: a garbage file must not produce millions."""


def dependency_codes(prefix: str, noun: str = "task") -> tuple[Code, ...]:
    """The codes ``dependency_diagnostics`` emits for format ``prefix``."""
    return (
        Code(f"{prefix}.duplicate-id", "error",
             f"Two {noun}s have the same id; dependencies could not tell them apart."),
        Code(f"{prefix}.unknown-dependency", "error",
             f"A {noun} depends on an id that no {noun} in the file has."),
        Code(f"{prefix}.dependency-cycle", "error",
             f"{noun.capitalize()}s depend on each other in a cycle: none of them can start."),
        Code(f"{prefix}.blocked-by-cycle", "warning",
             f"{noun.capitalize()}s that wait on a dependency cycle and can never start."),
    )


def text_codes(prefix: str, title: str) -> tuple[Code, ...]:
    """The codes of decoding a text trace and of the error budget, for format ``prefix``."""
    return (
        Code(f"{prefix}.encoding", "error", f"The {title} file is not UTF-8 text."),
        Code(f"{prefix}.too-many-errors", "error",
             f"More than {MAX_ERRORS} errors: reading stopped."),
    )
