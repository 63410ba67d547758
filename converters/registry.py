"""The format table, derived: every module or package under ``dcx.formats`` that exports a
``FORMAT`` declaration is a format. The CLI's choices, sniffing, the loss matrix, the docs and
the hook manifest all read this table; nothing else lists the formats.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Iterable

import dcx.formats as _formats_package
from dcx.core.declaration import Content, FormatDeclaration


def _discover() -> tuple[FormatDeclaration, ...]:
    found: dict[str, FormatDeclaration] = {}
    for info in sorted(pkgutil.iter_modules(_formats_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{_formats_package.__name__}.{info.name}")
        declaration = getattr(module, "FORMAT", None)
        if not isinstance(declaration, FormatDeclaration):
            continue  # a helper module of a format, not a format
        if declaration.name in found:
            raise RuntimeError(f"two formats are named {declaration.name!r}: "
                               f"{found[declaration.name].module} and {declaration.module}")
        found[declaration.name] = declaration
    return tuple(sorted(found.values(), key=lambda d: d.name))


FORMATS: tuple[FormatDeclaration, ...] = _discover()
BY_NAME: dict[str, FormatDeclaration] = {spec.name: spec for spec in FORMATS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
FAMILIES: tuple[str, ...] = tuple(sorted({spec.family for spec in FORMATS}))


def conformance_codes() -> frozenset[str]:
    """Warnings that say a file breaks its format's own specification: only a format's
    declaration can say that (``tests/test_codes.py`` holds every such code to one)."""
    return _CONFORMANCE


_CONFORMANCE = frozenset(code.code for spec in FORMATS for code in spec.codes
                         if code.conformance)


def lookup(name: str) -> FormatDeclaration | None:
    """The format called ``name``, ignoring case (``SSS`` is ``sss``)."""
    return BY_NAME.get(name.lower())


def get(name: str) -> FormatDeclaration:
    spec = lookup(name)
    if spec is None:
        raise KeyError(unknown_format_message(name))
    return spec


def unknown_format_message(name: str) -> str:
    """``unknown format 'ssss' (did you mean sss?); known formats: …``"""
    close = difflib.get_close_matches(name.lower(), NAMES, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown format {name!r}{hint}; known formats: {', '.join(NAMES)}"


def unrecognised_message() -> str:
    return f"not a recognised dcx format ({', '.join(NAMES)})"


def _suffix(path: str) -> str:
    dot = path.rfind(".")
    return path[dot:] if dot > path.rfind("/") else ""


BINARY_MAGICS = (b"PAR1",)
"""Leading bytes of the binary formats dcx reads (Parquet)."""


def content_kind(data: bytes) -> Content:
    if data.startswith(BINARY_MAGICS) or b"\x00" in data[:64]:
        return "binary"
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    return "json" if head[:1] in (b"{", b"[") else "xml" if head[:1] == b"<" else "text"


def detect(data: bytes, path: str = "",
           candidates: Iterable[FormatDeclaration] | None = None) -> FormatDeclaration | None:
    """The format of ``data``, from its content; the extension breaks ties, and names the
    format of content no format recognises when it is the one format of that kind claiming
    it as its own (a broken ``.swf`` file is read as SWF, whose reader says where it breaks,
    rather than called no format at all; a ``.conf`` is also other tools' extension).
    ``candidates`` narrows the formats considered (a pre-commit hook for one family)."""
    suffix = _suffix(path)
    kind = content_kind(data)
    pool = FORMATS if candidates is None else tuple(candidates)
    matches = [spec for spec in pool if kind in spec.content and spec.sniff(data)]
    if not matches:
        claimed = [spec for spec in pool if kind in spec.content and suffix in spec.extensions
                   and suffix not in spec.shared_extensions]
        return claimed[0] if len(claimed) == 1 else None
    return next((spec for spec in matches if suffix in spec.extensions), matches[0])


def claims(path: str) -> list[FormatDeclaration]:
    """Formats whose extensions match a file name (several for .json/.xml)."""
    suffix = _suffix(path)
    return [spec for spec in FORMATS if suffix in spec.extensions]
