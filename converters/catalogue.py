"""The diagnostic-code catalogue, gathered from its declarations: each layer's ``CODES`` and
each format's ``FORMAT.codes``. The error-code page and the conversion's acceptance rule
(``conformance_codes``) read it."""

from __future__ import annotations

import importlib
from functools import cache

from dcx.converters.registry import FORMATS
from dcx.core.codes import Code

LAYER_MODULES = (
    "dcx.converters.convert",
)
"""Modules outside the formats that declare ``CODES``."""


@cache
def catalogue() -> dict[str, Code]:
    """Every declared code, by code; a code declared twice is a bug."""
    found: dict[str, Code] = {}
    declared = [code for name in LAYER_MODULES
                for code in importlib.import_module(name).CODES]
    declared += [code for spec in FORMATS for code in spec.codes]
    for code in declared:
        if code.code in found and found[code.code] != code:
            raise RuntimeError(f"diagnostic code {code.code!r} is declared twice, differently")
        found[code.code] = code
    return found


@cache
def conformance_codes() -> frozenset[str]:
    """Warnings that say a file breaks its format's own specification."""
    return frozenset(code.code for code in catalogue().values() if code.conformance)
