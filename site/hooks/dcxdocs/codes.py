"""Diagnostic codes, collected from the package source with an AST walk, so the error-code
page lists exactly what the code can emit."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

CODE_PATTERN = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$")
_REPORTING_CALL = re.compile(r"error|warning|diagnostic|replace", re.IGNORECASE)
PACKAGES = ("dcx.converters", "dcx.formats", "dcx.scheduler")


@dataclass(frozen=True)
class CodeUse:
    code: str
    severity: str
    module: str
    line: int
    message: str


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _text_of(node: ast.expr) -> str | None:
    """A string literal, or an f-string with its placeholders shown as ``{…}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(part.value) if isinstance(part, ast.Constant) else "{…}"
                       for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text_of(node.left), _text_of(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def _severity(name: str) -> str:
    lowered = name.lower()
    if "warning" in lowered:
        return "warning"
    if "error" in lowered:
        return "error"
    return "as raised"


def uses_in_source(source: str, module: str) -> list[CodeUse]:
    found: list[CodeUse] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        if not _REPORTING_CALL.search(name):
            continue
        arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
        texts = [(argument, _text_of(argument)) for argument in arguments]
        codes = [text for argument, text in texts
                 if isinstance(argument, ast.Constant) and text and CODE_PATTERN.match(text)
                 and not text.startswith("dcx.")]
        if not codes:
            continue
        message = next((text for _, text in texts if text is not None and text not in codes), "")
        found += [CodeUse(code, _severity(name), module, node.lineno, message) for code in codes]
    return found


def _package_files(package: str) -> Iterable[tuple[str, Path]]:
    try:
        folder = resources.files(package)
    except ModuleNotFoundError:
        return
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.name.endswith(".py"):
            yield f"{package}.{entry.name[:-3]}", Path(str(entry))


def collect(packages: Iterable[str] = PACKAGES) -> list[CodeUse]:
    """Every code in every module of the packages; a file that does not parse (mid-edit) is
    skipped rather than failing the build."""
    uses: list[CodeUse] = []
    for package in packages:
        for module, path in _package_files(package):
            try:
                uses += uses_in_source(path.read_text(encoding="utf-8"), module)
            except (SyntaxError, UnicodeDecodeError, OSError):
                continue
    return uses


def by_code(uses: Iterable[CodeUse]) -> dict[str, list[CodeUse]]:
    grouped: dict[str, list[CodeUse]] = {}
    for use in uses:
        grouped.setdefault(use.code, []).append(use)
    return dict(sorted(grouped.items()))
