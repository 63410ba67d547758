"""Reference tables from a JSON Schema: every key, its type, whether required, units,
constraints and description, grouped by the object that holds it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dcxdocs.markdown import cell, code, table
from dcxdocs.units import unit_in_text

Schema = dict[str, Any]

_CONSTRAINT_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("minimum", "≥ {}"), ("exclusiveMinimum", "> {}"), ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"), ("minLength", "length ≥ {}"), ("maxLength", "length ≤ {}"),
    ("pattern", "matches {}"), ("format", "format {}"), ("minItems", "≥ {} items"),
    ("maxItems", "≤ {} items"), ("minProperties", "≥ {} keys"), ("maxProperties", "≤ {} keys"),
    ("multipleOf", "multiple of {}"), ("default", "default {}"),
)


@dataclass(frozen=True)
class KeyRow:
    name: str
    type: str
    required: bool
    unit: str
    constraints: str
    description: str


@dataclass
class ObjectSection:
    """One object in the document: its location (JSON Pointer, ``*`` for any array index or
    key) and the keys it may hold."""

    pointer: str
    title: str
    description: str
    closed: bool
    rows: list[KeyRow] = field(default_factory=list)


@dataclass
class SchemaReference:
    title: str
    description: str
    sections: list[ObjectSection]

    def keys(self) -> set[str]:
        return {row.name for section in self.sections for row in section.rows}


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


class _Walker:
    def __init__(self, root: Schema) -> None:
        self.root = root
        self.sections: list[ObjectSection] = []
        self.seen_pointers: set[tuple[str, str, str]] = set()

    def resolve(self, node: Schema) -> tuple[Schema, str]:
        """The node with a local ``$ref`` followed (siblings win), and the ref's name."""
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return node, ""
        target: Any = self.root
        for token in ref[2:].split("/"):
            target = target.get(token.replace("~1", "/").replace("~0", "~"), {})
        merged = dict(target) if isinstance(target, dict) else {}
        merged.update({k: v for k, v in node.items() if k != "$ref"})
        inner, _ = self.resolve(merged) if "$ref" in merged else (merged, "")
        return inner, _ref_name(ref)

    def type_text(self, node: Schema) -> str:
        resolved, name = self.resolve(node)
        text = self._plain_type(resolved)
        return f"{text} ({name})" if name and name not in text else text

    def _plain_type(self, node: Schema) -> str:
        if "const" in node:
            return f"constant {json.dumps(node['const'])}"
        if "enum" in node:
            return "one of " + ", ".join(json.dumps(v) for v in node["enum"])
        for combinator in ("oneOf", "anyOf"):
            if combinator in node:
                return " or ".join(self._variant_text(v) for v in node[combinator])
        kind = node.get("type")
        if isinstance(kind, list):
            return " or ".join(kind)
        if kind == "array":
            items = node.get("items")
            return f"array of {self.type_text(items)}" if isinstance(items, dict) else "array"
        if kind:
            return str(kind)
        if "properties" in node:
            return "object"
        return "any"

    def _variant_text(self, node: Schema) -> str:
        resolved, name = self.resolve(node)
        text = self._plain_type(resolved)
        bounds = _constraints(resolved)
        text = f"{text} {bounds}" if bounds else text
        return f"{name}: {text}" if name else text

    def walk(self, node: Schema, pointer: str, title: str, stack: tuple[str, ...]) -> None:
        resolved, name = self.resolve(node)
        if name and name in stack:
            return  # a recursive definition is documented where it first appears
        if name:
            stack = (*stack, name)
            title = title if title.endswith(")") else name
        if (pointer, name, title) in self.seen_pointers:
            return
        self.seen_pointers.add((pointer, name, title))
        properties = resolved.get("properties")
        if isinstance(properties, dict) or resolved.get("type") == "object":
            self._object(resolved, pointer, title, stack)
        items = resolved.get("items")
        if isinstance(items, dict):
            self.walk(items, f"{pointer}/*", f"{title} item" if title else "item", stack)
        for combinator in ("oneOf", "anyOf", "allOf"):
            for index, variant in enumerate(resolved.get(combinator, [])):
                if isinstance(variant, dict):
                    variant_name = self.resolve(variant)[1] or f"variant {index + 1}"
                    self.walk(variant, pointer, f"{title or 'document'} ({variant_name})", stack)
        if "if" in resolved:
            condition = ", ".join(resolved["if"].get("required", [])) or "condition"
            for branch, label in (("then", f"with {condition}"), ("else", f"without {condition}")):
                if isinstance(resolved.get(branch), dict):
                    branch_name = self.resolve(resolved[branch])[1]
                    suffix = f"{branch_name}, {label}" if branch_name else label
                    self.walk(resolved[branch], pointer, f"{title or 'record'} ({suffix})",
                              stack)

    def _object(self, node: Schema, pointer: str, title: str, stack: tuple[str, ...]) -> None:
        required = set(node.get("required", []))
        additional = node.get("additionalProperties")
        section = ObjectSection(pointer or "/", title or "document root",
                                str(node.get("description", "")), additional is False)
        self.sections.append(section)
        children: list[tuple[Schema, str, str]] = []
        for key, child in node.get("properties", {}).items():
            if not isinstance(child, dict):
                continue
            resolved, _ = self.resolve(child)
            description = str(child.get("description") or resolved.get("description", ""))
            section.rows.append(KeyRow(key, self.type_text(child), key in required,
                                       unit_in_text(description), _constraints(resolved),
                                       description))
            children.append((child, f"{pointer}/{key}", key))
        if isinstance(additional, dict):
            resolved, _ = self.resolve(additional)
            names = node.get("propertyNames")
            constraint = "; ".join(
                part for part in (
                    _constraints(self.resolve(names)[0]) if isinstance(names, dict) else "",
                    _constraints(resolved),
                ) if part)
            description = str(additional.get("description") or resolved.get("description", ""))
            section.rows.append(KeyRow("(any other key)", self.type_text(additional), False,
                                       unit_in_text(description), constraint, description))
            children.append((additional, f"{pointer}/*", f"{title} value"))
        for child, child_pointer, child_title in children:
            self.walk(child, child_pointer, child_title, stack)


def _constraints(node: Schema) -> str:
    parts = [template.format(json.dumps(node[key]) if key in ("pattern", "default")
                             else node[key])
             for key, template in _CONSTRAINT_KEYWORDS if key in node]
    if node.get("uniqueItems"):
        parts.append("unique items")
    if node.get("additionalProperties") is False:
        parts.append("no other keys")
    return "; ".join(parts)


def reference(schema: Schema) -> SchemaReference:
    walker = _Walker(schema)
    walker.walk(schema, "", "", ())
    return SchemaReference(str(schema.get("title", "")), str(schema.get("description", "")),
                           walker.sections)


def render(ref: SchemaReference, heading_level: int = 3) -> str:
    hashes = "#" * heading_level
    parts = []
    for section in ref.sections:
        if not section.rows:
            continue
        parts.append(f"{hashes} {section.title} — `{section.pointer}`\n")
        if section.description:
            parts.append(f"{section.description}\n")
        if section.closed:
            parts.append("Keys not listed here are errors.\n")
        rows = [(code(row.name), cell(row.type), "yes" if row.required else "no",
                 cell(row.unit), cell(row.constraints), cell(row.description))
                for row in section.rows]
        parts.append(table(("Key", "Type", "Required", "Unit", "Constraints", "Description"),
                           rows))
    return "\n".join(parts)
