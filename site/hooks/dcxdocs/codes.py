"""The error-code page, generated from the declared catalogue (``dcx.cli.catalogue``):
one row per code with its severity, meaning, where it is declared and its conformance flag.
``tests/test_codes.py`` holds the catalogue to the code that emits, so the page lists exactly
what dcx can emit."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dcxdocs.markdown import cell, code, table
from dcxdocs.reference_pages import EXIT_CODES


@dataclass(frozen=True)
class CodeRow:
    code: str
    severity: str
    meaning: str
    conformance: bool
    module: str
    """The declaring module (for a format, its reader's module)."""
    format: str | None
    """The format whose declaration holds the code; ``None`` for a layer's ``CODES``."""


def catalogue_rows() -> list[CodeRow]:
    """Every declared code, sorted by code."""
    from dcx.cli.catalogue import declarations

    return [CodeRow(name, item.code.severity, item.code.meaning, item.code.conformance,
                    item.module, item.format)
            for name, item in sorted(declarations().items())]


def _declared_in(row: CodeRow) -> str:
    if row.format is not None:
        return f"format [{cell(row.format)}](../formats/{row.format}.md)"
    return code(row.module)


def error_codes_page(rows: Iterable[CodeRow]) -> str:
    groups: dict[str, list[CodeRow]] = {}
    for row in rows:
        groups.setdefault(row.code.split(".", 1)[0], []).append(row)
    count = sum(len(members) for members in groups.values())
    parts = ["# Error codes\n",
             "Every diagnostic carries a stable dotted `code` (the message may be reworded, the "
             "code may not); match on it in scripts and tests. Each code is declared once, "
             "with its severity and meaning: by a format in its declaration, by the other "
             "layers in a `CODES` tuple of the module that emits it. This page is generated "
             "from those declarations, and the test suite fails when the code emits a code "
             "that is not declared or declares one it never emits. `--output json` prints "
             "severity, code, line, column, pointer and message for each diagnostic.\n",
             "A *conformance* warning says the file breaks its format's own specification "
             "(not merely dcx's advice): `dcx convert` never writes an output that raises "
             "one.\n",
             "## Exit codes\n", table(("Exit", "Meaning"), EXIT_CODES),
             f"## Diagnostic codes\n\n{count} codes in {len(groups)} groups.\n"]
    for prefix, members in sorted(groups.items()):
        parts.append(f"### {prefix}\n")
        parts.append(table(
            ("Code", "Severity", "Meaning", "Declared in", "Conformance"),
            [(code(row.code), row.severity, cell(row.meaning), _declared_in(row),
              "yes" if row.conformance else "") for row in members]))
    return "\n".join(parts)
