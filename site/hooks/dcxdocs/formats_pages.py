"""Format pages: the overview, one spec page per format, the loss matrix."""

from __future__ import annotations

import html
import json
import re
from importlib import resources

from dcx.converters.losses import loss_matrix
from dcx.converters.registry import FORMATS
from dcx.core.declaration import FormatDeclaration
from dcx.core.fields import FIELDS
from dcx.core.restrict import with_parts
from dcxdocs import jsonschema_ref, xsd_ref
from dcxdocs.markdown import cell, code, rst_to_markdown, table
from dcxdocs.units import unit_of_field

_RST_UNDERLINE = re.compile(r"^\s*([-=~^\"'`#*+])\1{2,}\s*$")


def schema_files(spec: FormatDeclaration) -> list[str]:
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


def divergences(docstring: str) -> str:
    """The ``Divergences`` section of a format's docstring, as Markdown ("" when absent)."""
    body = _section(docstring, "Divergences")
    return rst_to_markdown(_dedent_bullets(body)).strip() + "\n" if body else ""


def what_dcx_reads(docstring: str) -> str:
    """The ``What dcx reads`` section of a format's docstring (the shapes of the upstream
    files it reads, each with the upstream version it follows), as Markdown ("" when absent)."""
    body = _section(docstring, "What dcx reads")
    return rst_to_markdown(_dedent_bullets(body)).strip() + "\n" if body else ""


def model_mapping(docstring: str) -> str:
    """The ``Model mapping`` section of a format's docstring, as Markdown ("" when absent):
    its simple tables as pipe tables, the rest as text."""
    body = _section(docstring, "Model mapping")
    if not body:
        return ""
    return _simple_tables(body).strip() + "\n"


def _section(docstring: str, title: str) -> str:
    """The body of a section of a docstring (a title underlined with ``---``), up to the next
    section's heading; "" when absent."""
    lines = docstring.splitlines()
    for start, line in enumerate(lines):
        if line.strip() == title and start + 1 < len(lines) and \
                _RST_UNDERLINE.match(lines[start + 1]):
            body: list[str] = []
            for index in range(start + 2, len(lines)):
                next_is_underline = (index + 1 < len(lines)
                                     and _RST_UNDERLINE.match(lines[index + 1]))
                if lines[index].strip() and next_is_underline:
                    break  # the next section's heading
                body.append(lines[index])
            return "\n".join(body)
    return ""


_TABLE_RULE = re.compile(r"^=+(?: +=+)+ *$")


def _simple_tables(text: str) -> str:
    """reStructuredText simple tables (``=====  =====`` rules, a header row, rows whose
    first column is blank continuing the row above) as Markdown pipe tables."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        rule = lines[index]
        if not _TABLE_RULE.match(rule):
            prose: list[str] = []
            while index < len(lines) and not _TABLE_RULE.match(lines[index]):
                prose.append(lines[index])
                index += 1
            out.append(_markdown_text(_dedent_bullets("\n".join(prose))))
            continue
        starts = [match.start() for match in re.finditer(r"=+", rule)]
        rows: list[list[str]] = []
        rules = 1
        index += 1
        while index < len(lines) and rules < 3:
            line = lines[index]
            index += 1
            if _TABLE_RULE.match(line):
                rules += 1
                continue
            cells = [line[begin:end].strip() for begin, end in
                     zip(starts, [*starts[1:], len(line) + 1], strict=True)]
            if rows and not cells[0] and rules > 1:
                rows[-1] = [f"{old} {new}".strip() for old, new in zip(rows[-1], cells,
                                                                       strict=True)]
            elif any(cells):
                rows.append(cells)
        if rows:
            out.append("\n" + table(rows[0], [[_table_cell(c) for c in row]
                                               for row in rows[1:]]))
    return "\n".join(out)


def _markdown_text(text: str) -> str:
    """``literal`` and Sphinx roles (:class:`Task`) as Markdown code."""
    return rst_to_markdown(re.sub(r":\w+:`([^`]+)`", r"``\1``", text))


def _table_cell(text: str) -> str:
    """A cell as Markdown: pipes escaped everywhere, angle brackets outside code spans (a
    code span shows them as they are)."""
    parts = _markdown_text(text).replace("|", "\\|").split("`")
    return "`".join(part if number % 2 else part.replace("<", "&lt;").replace(">", "&gt;")
                    for number, part in enumerate(parts))


def _dedent_bullets(text: str) -> str:
    """RST bullets use ``*`` with 2-space continuation; Markdown needs 4 for continuation."""
    out = []
    for line in text.splitlines():
        if line.startswith("  ") and not line.lstrip().startswith(("* ", "- ")):
            out.append("    " + line.lstrip())
        else:
            out.append(line)
    return "\n".join(out)


def spec_page_path(spec: FormatDeclaration) -> str:
    return f"formats/{spec.name}.md"


def _facts(spec: FormatDeclaration, schemas: list[str]) -> str:
    status = "reads and writes" if spec.writable else "reads (not writable)"
    rows = [
        ("Name (`--from`/`--to`)", code(spec.name)),
        ("Family (`--family`)", code(spec.family)),
        ("Kind", spec.kind),
        ("Extensions", _extensions(spec)),
        ("Schema", ", ".join(code(name) for name in schemas) or "none yet"),
        ("Status", status),
    ]
    # a definition list: a table would need a header row, and these facts have none
    return "\n".join(f"{term}\n:   {value}\n" for term, value in rows)


def _extensions(spec: FormatDeclaration) -> str:
    """Its extensions, or for a format stored as a folder the files the folder holds."""
    if spec.members:
        return "a folder of " + " and ".join(code(name) for name in spec.members)
    return ", ".join(code(ext) for ext in spec.extensions)


def _holds_section(spec: FormatDeclaration) -> str:
    holds = with_parts(spec.holds)
    named = bool(spec.field_names)  # (a column of the format's own names, where it has them)
    held = [(code(name), cell(FIELDS[name]), cell(unit_of_field(name)),
             *((cell(spec.field_names.get(name, "")),) if named else ()))
            for name in FIELDS if name in holds]
    lost = [(code(name), cell(FIELDS[name])) for name in FIELDS if name not in holds]
    parts = ["## What it holds\n",
             f"Of the {len(FIELDS)} model fields dcx tracks, this format holds {len(held)}. "
             "Converting into it drops the others, and each drop is reported as a loss "
             "(`--strict` makes a loss an error).\n",
             '??? info "Fields it holds"\n\n' + _indent(table(
                 ("Field", "Meaning", "Unit", *((f"{spec.name}'s name",) if named else ())),
                 held)),
             '??? warning "Fields it cannot hold"\n\n' + _indent(table(("Field", "Meaning"),
                                                                     lost)) if lost else ""]
    return "\n".join(part for part in parts if part)


def _indent(text: str) -> str:
    return "".join("    " + line if line.strip() else line for line in text.splitlines(True))


def _schema_section(spec: FormatDeclaration, schemas: list[str]) -> str:
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
    """``2020-12`` for ``…/draft/2020-12/schema``, ``draft 07`` for ``…/draft-07/schema#``.
    The dated form is tried first: ``\\d{2}`` alone would read 2020-12 as "draft 20"."""
    uri = str(schema.get("$schema", ""))
    dated = re.search(r"draft/(\d{4}-\d{2})", uri)
    if dated:
        return dated.group(1)
    numbered = re.search(r"draft-(\d{2})", uri)
    return f"draft {numbered.group(1)}" if numbered else "(no $schema)"


def _checks_section(spec: FormatDeclaration) -> str:
    if not spec.codes:
        return ""
    rows = [(code(entry.code), entry.severity + (" (conformance)" if entry.conformance else ""),
             cell(entry.meaning)) for entry in sorted(spec.codes, key=lambda c: c.code)]
    return ("## Diagnostics\n\n"
            "Every code the reader and writer can emit, from the format's declaration; a "
            "conformance warning says the file breaks the format's own specification, and a "
            "conversion never writes a file that raises one. All codes are listed on "
            "[Error codes](../reference/error-codes.md).\n\n"
            + table(("Code", "Severity", "Meaning"), rows))


def spec_page(spec: FormatDeclaration) -> str:
    schemas = schema_files(spec)
    # (a description names elements such as <Node>: text, not HTML)
    parts = [f"# {spec.title}\n", f"{html.escape(spec.description, quote=False)}\n",
             _facts(spec, schemas)]
    parts.append(_holds_section(spec))
    mapping = model_mapping(spec.doc)
    if mapping:
        parts.append("## Model mapping\n\nHow the format's content maps onto dcx's model, "
                     "from the format module's reference text.\n\n" + mapping)
    shapes = what_dcx_reads(spec.doc)
    if shapes:
        parts.append("## What dcx reads\n\nThe shapes of the files the upstream projects "
                     "publish that dcx reads, each with the upstream version it follows.\n\n"
                     + shapes)
    parts.append(_schema_section(spec, schemas))
    parts.append(_checks_section(spec))
    diverging = divergences(spec.doc)
    if diverging:
        parts.append("## Divergences of the reference implementations\n\n"
                     "Where the format's documents and its reference code disagree, and which "
                     "one dcx follows.\n\n" + diverging)
    return "\n".join(part for part in parts if part)


def overview_page(formats: tuple[FormatDeclaration, ...] = FORMATS) -> str:
    rows = [(code(spec.name), f"[{cell(spec.title)}]({spec.name}.md)", spec.kind,
             _extensions(spec),
             "reads, writes" if spec.writable else "reads") for spec in formats]
    return ("# Formats\n\nEvery format dcx reads and writes. Each format module declares "
            "itself once (`FORMAT`, a `dcx.core.declaration.FormatDeclaration`); this page, "
            "the format pages, the loss matrix, the CLI's choices and the pre-commit hooks are "
            "generated from those declarations at build time.\n\n"
            + table(("Name", "Format", "Kind", "Extensions", "Status"), rows) + "\n")


def loss_matrix_page(formats: tuple[FormatDeclaration, ...] = FORMATS) -> str:
    cells = {(c.source, c.target): c for c in loss_matrix(formats)}
    writable = [spec for spec in formats if spec.writable]
    parts = ["# Loss matrix\n",
             "What converting from one format (row) to another (column) can drop: the model "
             "fields the target loses of the most a source file can carry. The number is how "
             "many fields; the lists below name them; `impossible` means the two formats share "
             "no part (topology, workload), and such a conversion is refused. A conversion "
             "reports what it actually drops from its input as `convert.loss` warnings (errors "
             "with `--strict`), computed by the same function as this page "
             "(`dcx.converters.losses.conversion_losses`); `dcx formats --matrix` prints the "
             "same.\n"]
    # Column headings are abbreviated (full name on hover) and "impossible" is a mark, so
    # the tables fit a 1400 px window beside the navigation.
    parts.append("Columns use short names (hover for the full one): "
                 + ", ".join(f"{_short(spec.name)} = {code(spec.name)}" for spec in formats
                             if _short(spec.name) != spec.name)
                 + ". ✗ means impossible.\n")
    header = ("from \\ to", *(_abbr(spec.name) for spec in writable))
    rows = []
    for source in formats:
        marks = ["–" if source.name == target.name
                 else "✗" if cells[source.name, target.name].status == "impossible"
                 else str(len(cells[source.name, target.name].lost)) for target in writable]
        rows.append((code(source.name), *marks))
    parts.append(table(header, rows))
    parts.append("## What each pair loses\n")
    for source in formats:
        parts.append(f"### From {source.name}\n")
        pair_rows = []
        for target in writable:
            if target.name == source.name:
                continue
            found = cells[source.name, target.name]
            text = (f"impossible: {found.reason}" if found.status == "impossible"
                    else ", ".join(code(name) for name in found.lost) or "nothing")
            pair_rows.append((code(target.name), cell(text)))
        parts.append(table(("to", "fields lost"), pair_rows))
    parts.append("## Which format holds which field\n")
    holds = {spec.name: with_parts(spec.holds) for spec in formats}
    holds_rows = [(code(name), cell(meaning),
                   *("✓" if name in holds[spec.name] else "·" for spec in formats))
                  for name, meaning in FIELDS.items()]
    parts.append(table(("Field", "Meaning", *(_abbr(spec.name) for spec in formats)),
                       holds_rows))
    return "\n".join(parts)


def _short(name: str) -> str:
    """A column heading short enough for a wide table: ``env``, ``osp-w``; names of up to
    six letters stay as they are."""
    if len(name) <= 6:
        return name
    first, _, rest = name.partition("-")
    return f"{first[:3]}-{rest[:1]}" if rest else name[:3]


def _abbr(name: str) -> str:
    short = _short(name)
    return code(name) if short == name else f'<abbr title="{name}">{short}</abbr>'

