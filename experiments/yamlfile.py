"""Experiment files written in YAML: plain data only, every value's position kept.

The file is composed into ruamel.yaml's node tree (nothing is constructed from tags) and
turned into JSON values by hand, so that anchors and aliases (the alias bomb), explicit tags
(``!!python/object``, ``!Ref``) and non-string keys are refused with their line and column
instead of passing as data. Each value's JSON Pointer maps to its line and column, which
places schema and semantic diagnostics the way ``JsonLocator`` does for JSON.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field, replace
from typing import Any

from dcx.core.diagnostics import Diagnostic, error
from dcx.parsing.jsonio import escape_pointer_token

MAX_YAML_BYTES = 1_000_000
"""An experiment file is a page of text; a larger one is refused before parsing (deeply
nested flow brackets take seconds to fail inside the parser)."""
MAX_DEPTH = 64

_STANDARD_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "map", "seq"))


@dataclass
class YamlText:
    """A decoded YAML document and where each of its values starts."""

    value: Any
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    """JSON Pointer → (line, column), 1-based; for a member, where its key starts."""

    def locate(self, pointer: str) -> tuple[int | None, int | None]:
        """Where the value at ``pointer`` (or its nearest located ancestor) starts."""
        while pointer and pointer not in self.positions:
            pointer = pointer.rsplit("/", 1)[0]
        return self.positions.get(pointer, (1, 1))

    def place(self, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        """Fill in line and column from the nearest located ancestor of each pointer."""
        placed = []
        for diagnostic in diagnostics:
            if diagnostic.line is not None:
                placed.append(diagnostic)
                continue
            pointer = diagnostic.pointer
            while pointer and pointer not in self.positions:
                pointer = pointer.rsplit("/", 1)[0]
            line, column = self.positions.get(pointer, (1, 1))
            placed.append(replace(diagnostic, line=line, column=column))
        return placed


class _Refused(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def _position(node: Any) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _refuse(message: str, node: Any, pointer: str) -> _Refused:
    line, column = _position(node)
    return _Refused(error(message, "experiment.yaml-feature", line=line, column=column,
                          pointer=pointer))


def _scalar(node: Any, pointer: str) -> Any:
    tag, text = node.tag, node.value
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return text.lower() == "true"
    if tag == "tag:yaml.org,2002:int":
        cleaned = text.replace("_", "")
        try:
            return int(cleaned, 0)
        except ValueError:
            try:
                return int(cleaned, 10)
            except ValueError as exc:  # the 4,300-digit guard
                raise _refuse(f"integer {text[:20]}… is too long", node, pointer) from exc
    if tag == "tag:yaml.org,2002:float":
        cleaned = text.replace("_", "").lower()
        number = math.nan if cleaned.lstrip("+-") in (".inf", ".nan") else float(cleaned)
        if not math.isfinite(number):
            raise _refuse(f"{text} is not a finite number", node, pointer)
        return number
    return text


def _convert(node: Any, pointer: str, depth: int, seen: set[int],
             positions: dict[str, tuple[int, int]]) -> Any:
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if id(node) in seen or getattr(node, "anchor", None):
        raise _refuse("anchors and aliases are not accepted in experiment files; write the "
                      "value out", node, pointer)
    seen.add(id(node))
    if depth > MAX_DEPTH:
        raise _refuse(f"the document nests deeper than {MAX_DEPTH} levels", node, pointer)
    if node.tag not in _STANDARD_TAGS:
        raise _refuse(f"tag {node.tag} is not accepted; experiment files hold plain data",
                      node, pointer)
    positions.setdefault(pointer, _position(node))
    if isinstance(node, MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _refuse("merge keys (<<) are not accepted; write the members out",
                              key_node, pointer)
            key = _convert(key_node, pointer, depth + 1, seen, {})
            if not isinstance(key, str):
                raise _refuse(f"key {key!r} is not a string", key_node, pointer)
            child = f"{pointer}/{escape_pointer_token(key)}"
            if key in result:
                line, column = _position(key_node)
                raise _Refused(error(f"duplicate key {key!r}", "json.duplicate-key",
                                     line=line, column=column, pointer=child))
            positions[child] = _position(key_node)
            result[key] = _convert(value_node, child, depth + 1, seen, positions)
        return result
    if isinstance(node, SequenceNode):
        return [_convert(item, f"{pointer}/{index}", depth + 1, seen, positions)
                for index, item in enumerate(node.value)]
    return _scalar(node, pointer)


def load_yaml(data: bytes) -> tuple[YamlText | None, list[Diagnostic]]:
    """Decode one YAML document, or say exactly why not (one error)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    if len(data) > MAX_YAML_BYTES:
        return None, [error(f"file is {len(data):,} bytes; an experiment file may have "
                            f"{MAX_YAML_BYTES:,}", "input.too-large")]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return None, [error(f"invalid UTF-8 byte 0x{data[exc.start]:02x}",
                            "experiment.yaml-syntax", line=line, column=1)]
    try:
        node = YAML(typ="safe", pure=True).compose(io.StringIO(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = {"line": mark.line + 1, "column": mark.column + 1} if mark else {}
        message = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        return None, [error(message or "not YAML", "experiment.yaml-syntax", **where)]
    except (YAMLError, RecursionError) as exc:
        return None, [error(f"not YAML: {exc}", "experiment.yaml-syntax")]
    if node is None:
        return None, [error("file is empty", "experiment.yaml-syntax", line=1, column=1)]
    positions: dict[str, tuple[int, int]] = {}
    try:
        value = _convert(node, "", 0, set(), positions)
    except _Refused as refused:
        return None, [refused.diagnostic]
    return YamlText(value, positions), []
