"""The diagnostic-code catalogue, gathered from its declarations: each layer's ``CODES`` and
each format's ``FORMAT.codes``. It reaches every layer, so it sits at the top, beside the
command line; the error-code page and ``dcx`` read it, and ``tests/test_codes.py`` holds it to
the code that emits. The conversion's acceptance rule needs only the formats' codes
(``dcx.converters.registry.conformance_codes``)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache

from dcx.converters.registry import FORMATS
from dcx.core.codes import Code

LAYER_MODULES = (
    "dcx.core.codes",
    "dcx.parsing.jsonio",
    "dcx.parsing.xmlio",
    "dcx.parsing.schemas",
    "dcx.parsing.hostlist",
    "dcx.parsing.fluxion",
    "dcx.converters.convert",
    "dcx.converters.stream_convert",
    "dcx.converters.pipeline",
    "dcx.scheduler.loading",
    "dcx.scheduler.problem",
    "dcx.scheduler.backfilling",
    "dcx.scheduler.declaration",
    "dcx.experiments.spec",
)
"""Modules outside the formats that declare ``CODES`` (imported when a code is first looked
up, not when the command line starts)."""


@dataclass(frozen=True)
class Declaration:
    """A code and where it is declared: a module of a layer, or a format."""

    code: Code
    module: str
    """The declaring module (``dcx.parsing.jsonio``; for a format, its reader's module)."""
    format: str | None = None
    """The format's command-line name when a ``FORMAT`` declares the code."""

    @property
    def declared_in(self) -> str:
        return f"format {self.format}" if self.format else self.module


@cache
def declarations() -> dict[str, Declaration]:
    """Every declared code with where it is declared, by code; a code declared twice with
    different meanings or severities is a bug (``tests/test_codes.py`` also refuses two
    identical declarations)."""
    found: dict[str, Declaration] = {}
    declared = [Declaration(code, name) for name in LAYER_MODULES
                # a module listed before its owner has added CODES declares nothing yet
                for code in getattr(importlib.import_module(name), "CODES", ())]
    declared += [Declaration(code, spec.module, spec.name)
                 for spec in FORMATS for code in spec.codes]
    for item in declared:
        first = found.get(item.code.code)
        if first is not None and first.code != item.code:
            raise RuntimeError(f"diagnostic code {item.code.code!r} is declared twice, "
                               f"differently: in {first.declared_in} and {item.declared_in}")
        found.setdefault(item.code.code, item)
    return found


@cache
def catalogue() -> dict[str, Code]:
    """Every declared code, by code."""
    return {name: item.code for name, item in declarations().items()}
