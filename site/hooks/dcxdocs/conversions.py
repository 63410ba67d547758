"""Conversion pages: every example file converted by the real converter at build time, shown
as tabs (input, output, what was lost), so the docs cannot drift from the code."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from dcx.converters.convert import Conversion, convert
from dcx.converters.registry import detect
from dcx.core.model import Document
from dcxdocs.formats_pages import LoadedFormat
from dcxdocs.markdown import admonition, cell, code, fenced, indent, table, tabs

MAX_SHOWN_LINES = 150
"""Longer inputs and outputs are cut on the page (with a note); the full file is a command
away."""

REFUSED = "dcx writes nothing"
"""Opens the output tab of a conversion the converter refused (tests look for it)."""

_LANGUAGES = {".json": "json", ".xml": "xml", ".lwf": "xml", ".lwfa": "xml", ".R": "json",
              ".gwf": "text", ".swf": "text"}
_OUTPUT_SUFFIX = {"environment": ".json", "haizea": ".lwf", "sss": ".xml", "flux-r": ".R",
                  "jgf": ".json", "gwf": ".gwf", "swf": ".swf", "osp-workload": ".json",
                  "opendc-setup": ".json"}


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
        return self.conversion.data.decode("utf-8", errors="replace")

    @property
    def output_complete(self) -> bool:
        """Whether the page shows the whole output (the browser test compares these)."""
        return bool(self.conversion.data) and _line_count(self.output_text) <= MAX_SHOWN_LINES


def _line_count(text: str) -> int:
    return len(text.splitlines())


def _language(path: str) -> str:
    suffix = path[path.rfind("."):] if "." in path else ""
    return _LANGUAGES.get(suffix, "text")


def _compatible(source: LoadedFormat, target: LoadedFormat) -> bool:
    kinds = {source.spec.kind, target.spec.kind}
    return len(kinds) == 1 or "both" in kinds


def _nothing_to_write(document: Document, target: LoadedFormat) -> bool:
    kind = target.spec.kind
    return ((kind == "topology" and document.environment is None)
            or (kind == "workload" and document.workload is None))


def example_files(repo_root: Path) -> list[Path]:
    folder = repo_root / "examples"
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.rglob("*")
                  if path.is_file() and not path.name.startswith((".", "README")))


def run_examples(repo_root: Path, formats: list[LoadedFormat]) -> list[ExampleConversion]:
    """Every example converted to every other installed, writable format of a compatible kind."""
    by_name = {item.spec.name: item for item in formats}
    results = []
    for path in example_files(repo_root):
        data = path.read_bytes()
        relative = path.relative_to(repo_root).as_posix()
        try:
            spec = detect(data, relative)
        except Exception:  # a sniffer under construction must not break the site
            continue
        if spec is None or spec.name not in by_name:
            continue
        source = by_name[spec.name]
        for target in formats:
            if target.spec.name == spec.name or not target.writes:
                continue
            if not _compatible(source, target):
                continue
            try:
                conversion = convert(data, target.spec.name, relative, spec.name)
            except Exception:
                continue
            document = conversion.read.document if conversion.read else None
            if document is not None and _nothing_to_write(document, target):
                continue  # e.g. a workload-only Haizea file has no topology for a topology format
            results.append(ExampleConversion(relative, spec.name, target.spec.name,
                                             data.decode("utf-8", errors="replace"), conversion))
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
        rows = [(code(loss.field), str(loss.count), cell(loss.detail))
                for loss in conversion.losses]
        parts.append(f"{example.target} cannot hold:\n\n"
                     + table(("Field", "Values dropped", "Detail"), rows))
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
        return _shown(example.output_text, _language(_OUTPUT_SUFFIX.get(example.target, "")))
    problems = [*example.conversion.diagnostics,
                *(example.conversion.read.diagnostics if example.conversion.read else ())]
    rendered = "\n".join(d.at(example.input_path).render() for d in problems) or "(no output)"
    return f"{REFUSED} for this conversion:\n\n" + fenced(rendered, "text")


def render_example(example: ExampleConversion) -> str:
    block = tabs((
        (f"Input ({example.source})", _shown(example.input_text, _language(example.input_path))),
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
            output_name = f"out{_OUTPUT_SUFFIX.get(example.target, '')}"
            parts.append(f"```sh\ndcx convert {example.input_path} {output_name} "
                         f"--to {example.target}\n```\n")
            parts.append(render_example(example))
        pages[f"conversions/{source}.md"] = "\n".join(parts)
    return pages


def index_page(pages: dict[str, str], examples: list[ExampleConversion],
               formats: list[LoadedFormat]) -> str:
    parts = ["# Conversions\n",
             "Live examples: the files in `examples/` converted to every other format of a "
             "compatible kind (topology to topology, workload to workload; Haizea holds both) "
             "by the converter itself while the site builds.\n"]
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
    unreadable = [item.spec.name for item in formats if item.module is None]
    if unreadable:
        parts.append(admonition("note", "Formats not installed in this build",
                                ", ".join(code(n) for n in unreadable)
                                + ": their examples and outputs appear once the module lands."))
    return "\n".join(parts)


def indent_block(text: str) -> str:
    return indent(text)
