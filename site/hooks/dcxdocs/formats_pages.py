"""Format pages: the overview, one spec page per format, the loss matrix."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from types import ModuleType

from dcx.converters.registry import FORMATS, FormatSpec
from dcx.core.fields import FIELDS
from dcxdocs import jsonschema_ref, xsd_ref
from dcxdocs.codes import CodeUse
from dcxdocs.markdown import admonition, cell, code, rst_to_markdown, table
from dcxdocs.units import unit_of_field

_RST_UNDERLINE = re.compile(r"^\s*([-=~^\"'`#*+])\1{2,}\s*$")


@dataclass(frozen=True)
class LoadedFormat:
    spec: FormatSpec
    module: ModuleType | None
    problem: str
    """Why the module could not be imported ("" when it was)."""

    @property
    def holds(self) -> frozenset[str] | None:
        if self.module is None:
            return None
        holds = getattr(self.module, "HOLDS", None)
        return frozenset(holds) if holds is not None else None

    @property
    def writes(self) -> bool:
        return self.module is not None and self.spec.writable and hasattr(self.module, "write")


def load_formats() -> list[LoadedFormat]:
    """Every registry row with its module, or the reason it is not importable yet (a format
    being written right now must not break the site)."""
    loaded = []
    for spec in FORMATS:
        try:
            loaded.append(LoadedFormat(spec, spec.load(), ""))
        except Exception as exc:  # any import failure of a module under construction
            loaded.append(LoadedFormat(spec, None, f"{type(exc).__name__}: {exc}"))
    return loaded


def schema_files(spec: FormatSpec) -> list[str]:
    """The schema files documenting a format: its JSON Schema, or every XSD named after the
    format that declares a root element (Haizea has one per document kind)."""
    if spec.schema.endswith(".json"):
        exists = resources.files("dcx.schemas").joinpath(spec.schema).is_file()
        return [spec.schema] if exists else []
    folder = resources.files("dcx.xsd")
    names = sorted(entry.name for entry in folder.iterdir()
                   if entry.name.endswith(".xsd") and entry.name.startswith(f"{spec.name}-"))
    if spec.schema in names:  # the registry's main schema first
        names.remove(spec.schema)
        names.insert(0, spec.schema)
    elif folder.joinpath(spec.schema).is_file():
        names.insert(0, spec.schema)
    return [name for name in names if xsd_ref.reference(name).roots]


def divergences(module: ModuleType | None) -> str:
    """The ``Divergences`` section of a module docstring, as Markdown ("" when absent)."""
    lines = (module.__doc__ or "").splitlines() if module is not None else []
    for start, line in enumerate(lines):
        if line.strip() == "Divergences" and start + 1 < len(lines) and \
                _RST_UNDERLINE.match(lines[start + 1]):
            body: list[str] = []
            for index in range(start + 2, len(lines)):
                next_is_underline = (index + 1 < len(lines)
                                     and _RST_UNDERLINE.match(lines[index + 1]))
                if lines[index].strip() and next_is_underline:
                    break  # the next section's heading
                body.append(lines[index])
            return rst_to_markdown(_dedent_bullets("\n".join(body))).strip() + "\n"
    return ""


def _dedent_bullets(text: str) -> str:
    """RST bullets use ``*`` with 2-space continuation; Markdown needs 4 for continuation."""
    out = []
    for line in text.splitlines():
        if line.startswith("  ") and not line.lstrip().startswith(("* ", "- ")):
            out.append("    " + line.lstrip())
        else:
            out.append(line)
    return "\n".join(out)


def spec_page_path(spec: FormatSpec) -> str:
    return f"formats/{spec.name}.md"


def _facts(item: LoadedFormat, schemas: list[str]) -> str:
    spec = item.spec
    if item.module is None:
        status = "not installed in this build yet"
    else:
        status = "reads and writes" if item.writes else "reads (not writable)"
    rows = [
        ("Name (`--from`/`--to`)", code(spec.name)),
        ("Family (`--family`)", code(spec.family)),
        ("Kind", spec.kind),
        ("Extensions", ", ".join(code(ext) for ext in spec.extensions)),
        ("Schema", ", ".join(code(name) for name in schemas) or "none yet"),
        ("Status", status),
    ]
    return table(("", ""), rows)


def _holds_section(item: LoadedFormat) -> str:
    holds = item.holds
    if holds is None:
        return ""
    held = [(code(name), cell(FIELDS[name]), cell(unit_of_field(name)))
            for name in FIELDS if name in holds]
    lost = [(code(name), cell(FIELDS[name])) for name in FIELDS if name not in holds]
    parts = ["## What it holds\n",
             f"Of the {len(FIELDS)} model fields dcx tracks, this format holds {len(held)}. "
             "Converting into it drops the others, and each drop is reported as a loss "
             "(`--strict` makes a loss an error).\n",
             '??? info "Fields it holds"\n\n' + _indent(table(("Field", "Meaning", "Unit"),
                                                             held)),
             '??? warning "Fields it cannot hold"\n\n' + _indent(table(("Field", "Meaning"),
                                                                     lost)) if lost else ""]
    return "\n".join(part for part in parts if part)


def _indent(text: str) -> str:
    return "".join("    " + line if line.strip() else line for line in text.splitlines(True))


def _schema_section(spec: FormatSpec, schemas: list[str]) -> str:
    parts = ["## Structure\n"]
    if not schemas:
        parts.append(f"No schema file `{spec.schema}` is installed yet.\n")
        return "\n".join(parts)
    for name in schemas:
        if name.endswith(".json"):
            schema = json.loads(resources.files("dcx.schemas").joinpath(name).read_text("utf-8"))
            reference = jsonschema_ref.reference(schema)
            parts.append(f"Validated against `schemas/{name}` (JSON Schema "
                         f"{_draft(schema)}). {reference.description}\n")
            parts.append("Locations are JSON Pointers; `*` stands for any array index or key.\n")
            parts.append(jsonschema_ref.render(reference, heading_level=3))
        else:
            reference_xsd = xsd_ref.reference(name)
            roots = ", ".join(f"`<{root}>`" for root in reference_xsd.roots)
            heading = "##" if len(schemas) > 1 else "###"
            if len(schemas) > 1:
                parts.append(f"## Root {roots} — `xsd/{name}`\n")
            parts.append(f"Validated against `xsd/{name}` (XML Schema 1.0, root {roots}). "
                         "Locations are XPaths.\n")
            parts.append(xsd_ref.render(reference_xsd, heading_level=len(heading) + 1))
    return "\n".join(parts)


def _draft(schema: dict[str, object]) -> str:
    uri = str(schema.get("$schema", ""))
    match = re.search(r"draft[-/](\d{2}|\d{4}-\d{2})", uri)
    return f"draft {match.group(1)}" if match else "(no $schema)"


def _checks_section(spec: FormatSpec, uses: list[CodeUse]) -> str:
    mine = [use for use in uses if use.module == spec.module]
    if not mine:
        return ""
    seen: set[tuple[str, str]] = set()
    rows = []
    for use in sorted(mine, key=lambda u: (u.code, u.line)):
        if (use.code, use.message) in seen:
            continue
        seen.add((use.code, use.message))
        rows.append((code(use.code), use.severity, cell(use.message)))
    return ("## Checks beyond the schema\n\n"
            "What the reader and writer check in code, because a schema cannot say it; "
            "`{…}` stands for a value from the input. All codes are listed on "
            "[Error codes](../reference/error-codes.md).\n\n"
            + table(("Code", "Severity", "Message"), rows))


def spec_page(item: LoadedFormat, uses: list[CodeUse]) -> str | None:
    """The spec page, or ``None`` when there is neither a module nor a schema to show."""
    spec = item.spec
    schemas = schema_files(spec)
    if item.module is None and not schemas:
        return None
    parts = [f"# {spec.title}\n", f"{spec.description}\n", _facts(item, schemas)]
    if item.module is None:
        parts.append(admonition("note", "Reader not installed yet",
                                f"`{spec.module}` could not be imported in this build "
                                f"({cell(item.problem)}); the structure below comes from the "
                                "schema alone."))
    parts.append(_holds_section(item))
    parts.append(_schema_section(spec, schemas))
    parts.append(_checks_section(spec, uses))
    diverging = divergences(item.module)
    if diverging:
        parts.append("## Divergences of the reference implementations\n\n"
                     "Where the format's documents and its reference code disagree, and which "
                     "one dcx follows.\n\n" + diverging)
    return "\n".join(part for part in parts if part)


def overview_page(items: list[LoadedFormat], pages: dict[str, str]) -> str:
    rows = []
    for item in items:
        spec = item.spec
        link = f"[{cell(spec.title)}]({spec.name}.md)" if spec.name in pages else cell(spec.title)
        if item.module is None:
            status = "not installed yet"
        else:
            status = "reads, writes" if item.writes else "reads"
        rows.append((code(spec.name), link, spec.kind, ", ".join(code(e) for e in spec.extensions),
                     status))
    missing = [item.spec for item in items if item.spec.name not in pages]
    note = ""
    if missing:
        names = ", ".join(code(spec.name) for spec in missing)
        note = admonition("note", "Formats without a page yet",
                          f"{names}: neither the module nor the schema is installed in this "
                          "build, so there is nothing to document yet. The page appears as soon "
                          "as either lands.")
    return ("# Formats\n\nEvery format dcx reads and writes, from the format registry "
            "(`dcx.converters.registry.FORMATS`). Each page is generated from our schema, the "
            "format module and its docstring at build time.\n\n"
            + table(("Name", "Format", "Kind", "Extensions", "Status"), rows) + "\n" + note)


def loss_matrix_page(items: list[LoadedFormat]) -> str:
    readable = [item for item in items if item.holds is not None]
    writable = [item for item in readable if item.writes]
    parts = ["# Loss matrix\n",
             "What converting from one format (row) to another (column) drops: the model fields "
             "the source can hold and the target cannot. The number is how many fields; the "
             "lists below name them. A conversion reports each as a `convert.loss` warning "
             "(an error with `--strict`). Generated from each module's `HOLDS` and "
             "`dcx.core.fields.FIELDS`; `dcx formats --matrix` prints the same.\n"]
    if not readable:
        names = ", ".join(code(item.spec.name) for item in items)
        return "\n".join([*parts, f"No format module is installed in this build yet (not "
                                  f"installed: {names}).\n"])
    header = ("from \\ to", *(code(item.spec.name) for item in writable))
    rows = []
    for source in readable:
        source_holds = source.holds or frozenset()
        cells = []
        for target in writable:
            if target.spec.name == source.spec.name:
                cells.append("–")
                continue
            lost = source_holds - (target.holds or frozenset())
            cells.append(str(len(lost)) if lost else "0")
        rows.append((code(source.spec.name), *cells))
    parts.append(table(header, rows))
    parts.append("## What each pair loses\n")
    for source in readable:
        source_holds = source.holds or frozenset()
        parts.append(f"### From {source.spec.name}\n")
        pair_rows = []
        for target in writable:
            if target.spec.name == source.spec.name:
                continue
            dropped = source_holds - (target.holds or frozenset())
            in_order = [code(name) for name in FIELDS if name in dropped]
            pair_rows.append((code(target.spec.name), ", ".join(in_order) or "nothing"))
        parts.append(table(("to", "fields lost"), pair_rows))
    parts.append("## Which format holds which field\n")
    holds_rows = []
    for name, meaning in FIELDS.items():
        marks = ["✓" if name in (item.holds or frozenset()) else "·" for item in readable]
        holds_rows.append((code(name), cell(meaning), *marks))
    parts.append(table(("Field", "Meaning", *(code(item.spec.name) for item in readable)),
                       holds_rows))
    not_installed = [item.spec.name for item in items if item.holds is None]
    if not_installed:
        parts.append(admonition("note", "Not in the matrix yet",
                                ", ".join(code(n) for n in not_installed)
                                + ": the module is not installed in this build."))
    return "\n".join(parts)
