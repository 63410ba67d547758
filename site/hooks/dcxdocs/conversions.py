"""Conversion pages: every example file converted by the real converter at build time, shown
as tabs (input, output, what was lost), so the docs cannot drift from the code."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from dcx.converters.convert import Conversion, convert
from dcx.converters.folders import folder_format, member_of, read_folder
from dcx.converters.registry import BY_NAME, FORMATS, detect
from dcx.core.declaration import FormatDeclaration
from dcxdocs.markdown import admonition, cell, code, fenced, indent, table, tabs

MAX_SHOWN_LINES = 150
"""Longer inputs and outputs are cut on the page (with a note); the full file is a command
away."""

REFUSED = "dcx writes nothing"
"""Opens the output tab of a conversion the converter refused (tests look for it)."""

NOTHING_IN_COMMON = "convert.nothing-in-common"
"""Pairs refused with this code share no part (topology, workload): no example is shown."""


@dataclass(frozen=True)
class ExampleConversion:
    input_path: str
    """Relative to the repository root, with forward slashes."""
    source: str
    target: str
    input_text: str
    conversion: Conversion

    @property
    def output_text(self) -> str:
        return _text_of(self.conversion.data, BY_NAME[self.target])

    @property
    def output_complete(self) -> bool:
        """Whether the page shows the whole output (the browser test compares these)."""
        return (bool(self.conversion.data) and not _binary(BY_NAME[self.target])
                and _line_count(self.output_text) <= MAX_SHOWN_LINES)


def _binary(spec: FormatDeclaration) -> bool:
    return "binary" in spec.content


def binary_note(data: bytes, spec: FormatDeclaration) -> str:
    """What a page shows instead of a binary file's bytes (tests look for it)."""
    if spec.members:
        return (f"(a {spec.title} folder, {' and '.join(spec.members)}: {len(data):,} bytes "
                "as a tar archive, binary, not shown)")
    return f"(a {spec.title} file of {len(data):,} bytes: binary, not shown)"


def _text_of(data: bytes, spec: FormatDeclaration) -> str:
    return binary_note(data, spec) if _binary(spec) else data.decode("utf-8", errors="replace")


def _line_count(text: str) -> int:
    return len(text.splitlines())


def _language(spec: FormatDeclaration) -> str:
    """The highlighting language of a format's files (what its bytes start with)."""
    return next((kind for kind in ("json", "xml") if kind in spec.content), "text")


def example_files(repo_root: Path) -> list[Path]:
    folder = repo_root / "examples"
    if not folder.is_dir():
        return []
    # the files of a format stored as a folder (OpenDC's tasks.parquet) are one example
    return sorted({path.parent if member_of(str(path)) else path
                   for path in folder.rglob("*")
                   if path.is_file() and not path.name.startswith((".", "README"))})


def example_bytes(path: Path) -> bytes:
    """An example file's bytes, or a format folder's (its files as the format's tar)."""
    spec = folder_format(str(path))
    return read_folder(str(path), spec) if spec is not None else path.read_bytes()


def run_examples(repo_root: Path,
                 formats: tuple[FormatDeclaration, ...] = FORMATS) -> list[ExampleConversion]:
    """Every example converted to every other writable format, except pairs that share no
    part; refused conversions are shown with the converter's one-line reason."""
    results = []
    for path in example_files(repo_root):
        data = example_bytes(path)
        relative = path.relative_to(repo_root).as_posix()
        source = detect(data, relative)
        if source is None:
            continue
        for target in formats:
            if target.name == source.name or not target.writable:
                continue
            conversion = convert(data, target.name, relative, source.name)
            if any(d.code == NOTHING_IN_COMMON for d in conversion.diagnostics):
                continue
            results.append(ExampleConversion(relative, source.name, target.name,
                                             _text_of(data, source), conversion))
    return results


def _shown(text: str, language: str) -> str:
    lines = text.splitlines()
    if len(lines) <= MAX_SHOWN_LINES:
        return fenced(text, language)
    cut = "\n".join(lines[:MAX_SHOWN_LINES])
    return (fenced(cut, language) + f"\n*… {len(lines) - MAX_SHOWN_LINES:,} more lines not "
            "shown.*\n")


def _lost_tab(example: ExampleConversion) -> str:
    conversion = example.conversion
    parts = []
    if conversion.losses:
        name = Path(example.input_path).name
        rows = [(code(loss.field), "" if loss.count is None else f"{loss.count:,}",
                 cell(loss.first_place(conversion.read, name) or ""), cell(loss.detail))
                for loss in conversion.losses]
        parts.append(f"{example.target} cannot hold (with how many values and where the first "
                     "one is: line[:col] where the reader can tell, and the model pointer):\n\n"
                     + table(("Field", "Values", "First", "Meaning"), rows))
    else:
        parts.append(f"Nothing: {example.target} holds everything this input has.\n")
    read_diagnostics = conversion.read.diagnostics if conversion.read else ()
    notes = [d for d in (*read_diagnostics, *conversion.diagnostics) if d.code != "convert.loss"]
    if notes:
        rendered = "\n".join(d.at(example.input_path).render() for d in notes)
        parts.append("Diagnostics:\n\n" + fenced(rendered, "text"))
    return "\n".join(parts)


def _output_tab(example: ExampleConversion) -> str:
    if example.conversion.data:
        return _shown(example.output_text, _language(BY_NAME[example.target]))
    problems = [*example.conversion.diagnostics,
                *(example.conversion.read.diagnostics if example.conversion.read else ())]
    rendered = "\n".join(d.at(example.input_path).render() for d in problems) or "(no output)"
    return f"{REFUSED} for this conversion:\n\n" + fenced(rendered, "text")


def render_example(example: ExampleConversion) -> str:
    block = tabs((
        (f"Input ({example.source})",
         _shown(example.input_text, _language(BY_NAME[example.source]))),
        (f"Output ({example.target})", _output_tab(example)),
        ("What was lost", _lost_tab(example)),
    ))
    attributes = (f'class="dcx-conversion" data-input="{html.escape(example.input_path)}" '
                  f'data-target="{html.escape(example.target)}"')
    return f"<div {attributes} markdown=\"block\">\n\n{block}\n</div>\n"


def conversion_pages(examples: list[ExampleConversion]) -> dict[str, str]:
    """``conversions/<source>.md`` → Markdown, one page per source format with examples."""
    by_source: dict[str, list[ExampleConversion]] = {}
    for example in examples:
        by_source.setdefault(example.source, []).append(example)
    pages = {}
    for source, items in sorted(by_source.items()):
        parts = [f"# Converting from {source}\n",
                 "Each example below is converted by `dcx.converters.convert.convert` while the "
                 "site builds; the tabs show the input, the converter's output (which has "
                 "already been read back and validated in the target format) and what the "
                 "target could not hold.\n"]
        current = ""
        for example in items:
            if example.input_path != current:
                current = example.input_path
                parts.append(f"## `{current}`\n")
            parts.append(f"### {example.source} → {example.target}\n")
            target = BY_NAME[example.target]
            output_name = "out" if target.members else f"out{target.extensions[0]}"
            parts.append(f"```sh\ndcx convert {example.input_path} {output_name} "
                         f"--to {example.target}\n```\n")
            parts.append(render_example(example))
        pages[f"conversions/{source}.md"] = "\n".join(parts)
    return pages


def index_page(pages: dict[str, str], examples: list[ExampleConversion]) -> str:
    parts = ["# Conversions\n",
             "Live examples: the files in `examples/` converted to every other format that "
             "shares a part with them (topology, workload; Haizea holds both) by the converter "
             "itself while the site builds. A conversion that cannot give an accepted output "
             "is shown refused, with the converter's one-line reason.\n"]
    if not examples:
        parts.append(admonition("note", "No examples yet",
                                "No file in `examples/` is readable by an installed format "
                                "module in this build."))
        return "\n".join(parts)
    rows = []
    for page, source in sorted((path, path.split("/")[1][:-3]) for path in pages):
        mine = [e for e in examples if e.source == source]
        inputs = sorted({e.input_path for e in mine})
        targets = sorted({e.target for e in mine})
        rows.append((f"[{source}]({page.split('/')[1]})", str(len(inputs)),
                     ", ".join(code(t) for t in targets)))
    parts.append(table(("From", "Example files", "Converted to"), rows))
    return "\n".join(parts)


def indent_block(text: str) -> str:
    return indent(text)
