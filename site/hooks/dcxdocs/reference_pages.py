"""Reference pages: CLI, error codes, security, scheduler."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from dcxdocs import cli_ref
from dcxdocs.codes import CodeUse, by_code
from dcxdocs.markdown import admonition, cell, code, fenced, table

EXIT_CODES = (("0", "every file is valid (or the conversion succeeded)"),
              ("1", "invalid input: at least one error diagnostic, or `--strict` and a loss"),
              ("2", "usage error (bad arguments, unreadable file) or an internal error; never "
                    "an error count"))


def cli_page(parser: argparse.ArgumentParser) -> str:
    return ("# CLI reference\n\nGenerated from `dcx.converters.cli.build_parser()` when the "
            "site builds: every command, argument, choice and default is the parser's own.\n\n"
            + cli_ref.render(parser)
            + "\n## Exit codes\n\n" + table(("Exit", "Meaning"), EXIT_CODES))


def error_codes_page(uses: list[CodeUse]) -> str:
    grouped = by_code(uses)
    prefixes: dict[str, list[str]] = {}
    for name in grouped:
        prefixes.setdefault(name.split(".", 1)[0], []).append(name)
    parts = ["# Error codes\n",
             "Every diagnostic carries a stable dotted `code` (the message may be reworded, the "
             "code may not); match on it in scripts and tests. The list is collected from the "
             "package source with an AST walk when the site builds, so it is exactly what the "
             "code can emit. `{…}` stands for a value from the input. `--output json` prints "
             "severity, line, column, pointer and message for each diagnostic.\n",
             "## Exit codes\n", table(("Exit", "Meaning"), EXIT_CODES),
             f"## Diagnostic codes\n\n{len(grouped)} codes in {len(prefixes)} groups.\n"]
    for prefix, names in sorted(prefixes.items()):
        parts.append(f"### {prefix}\n")
        rows = []
        for name in names:
            items = grouped[name]
            severities = sorted({use.severity for use in items})
            modules = sorted({use.module for use in items})
            messages = list(dict.fromkeys(use.message for use in items if use.message))
            rows.append((code(name), ", ".join(severities), ", ".join(code(m) for m in modules),
                         cell(" / ".join(messages[:3]))))
        parts.append(table(("Code", "Severity", "Raised in", "Message"), rows))
    return "\n".join(parts)


def _load_file_module(path: Path, name: str) -> ModuleType | None:
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    except Exception:
        sys.modules.pop(name, None)
        return None
    return module


def _limits_table() -> str:
    from dcx.core import limits

    source = Path(str(limits.__file__)).read_text(encoding="utf-8")
    rows = []
    for item in dataclasses.fields(limits.Limits):
        value = getattr(limits.LIMITS, item.name)
        # the attribute docstring that follows the field in the source
        match = re.search(rf"{item.name}:[^\n]*\n\s*\"\"\"(.*?)\"\"\"", source, re.DOTALL)
        why = " ".join(match.group(1).split()) if match else ""
        rows.append((code(item.name), f"{value:,}", cell(why.replace("``", "`"))))
    return table(("Limit", "Value", "Why"), rows)


def hostile_cases(repo_root: Path) -> list[Any] | None:
    module = _load_file_module(repo_root / "tests" / "hostile" / "cases.py",
                               "dcx_docs_hostile_cases")
    cases = getattr(module, "CASES", None) if module is not None else None
    return list(cases) if cases is not None else None


def security_page(repo_root: Path, intro: str) -> str:
    parts = [intro, "## Budgets\n",
             "From `dcx.core.limits.LIMITS`; every reader enforces them before or while "
             "parsing.\n", _limits_table(), "## Hostile input and what dcx does with it\n"]
    cases = hostile_cases(repo_root)
    if cases is None:
        parts.append(admonition("note", "Manifest not available",
                                "The hostile-input manifest `tests/hostile/cases.py` is not in "
                                "this checkout, so the case list cannot be shown."))
        return "\n".join(parts)
    parts.append(f"The {len(cases)} cases of the hostile-input suite (`tests/hostile/cases.py`, "
                 "run by `tests/test_hostile.py` as a user runs dcx). Each must be rejected "
                 "with the stable code shown (stage *read*: `validate` and `convert` exit 1) "
                 "or, for stage *write*, refused before anything is written.\n")
    rows = []
    for case in cases:
        source = getattr(case, "source", "")
        input_text = source if isinstance(source, str) else f"generated by `{source.__name__}`"
        expectation = cell(getattr(case, "message", "") or "")
        rows.append((code(case.name), code(case.format), cell(input_text),
                     getattr(case, "stage", "read"), code(case.code), expectation,
                     cell(getattr(case, "checklist", ""))))
    parts.append(table(("Case", "Format", "Input", "Stage", "Code", "Message contains",
                        "Checklist"), rows))
    return "\n".join(parts)


def _demote_headings(markdown: str, levels: int) -> str:
    return re.sub(r"^(#{1,6}) ", lambda m: "#" * min(6, len(m.group(1)) + levels) + " ",
                  markdown, flags=re.MULTILINE)


def _paper_tables() -> str:
    try:
        from dcx.scheduler import paper
    except Exception:
        return ""
    parts = []
    for trace in paper.TRACES:
        rows = [(code(name), f"{cell_.jms_s:,g}", f"{cell_.njsl:g}", f"{cell_.jwt_s:,g}")
                for name, cell_ in trace.table.items()]
        parts.append(f"### {trace.table_name}: {trace.name} (`{trace.file_name}`)\n")
        parts.append(table(("Scheduler", "JMS [s]", "NJSL", "JWT [s]"), rows))
    tolerance = (f"The reproduction is held to {paper.RELATIVE_TOLERANCE:.1%} of the paper for "
                 f"JMS and JWT of deterministic policies and ±{paper.NJSL_TOLERANCE:g} for NJSL.")
    return "\n".join(parts) + "\n" + tolerance + "\n"


def schedule_outputs(repo_root: Path) -> tuple[list[Path], list[Path], list[Path]]:
    folder = repo_root / "build" / "schedule"
    if not folder.is_dir():
        return [], [], []
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    return ([p for p in files if p.suffix == ".md"], [p for p in files if p.suffix == ".svg"],
            [p for p in files if p.suffix == ".json"])


def plot_name(repo_root: Path, svg: Path) -> str:
    relative = svg.relative_to(repo_root / "build" / "schedule").as_posix()
    return "plots/" + relative.replace("/", "--")


def scheduler_page(repo_root: Path, intro: str) -> str:
    parts = [intro, "## The paper's values\n", _paper_tables() or
             "The scheduler package is not installed in this build.\n",
             "## Reproduced in this build\n"]
    markdown_files, svgs, json_files = schedule_outputs(repo_root)
    if not (markdown_files or svgs or json_files):
        parts.append(admonition(
            "info", "No scheduler results in this build",
            "The tables and plots come from `build/schedule/`, which this build did not find. "
            "Produce them, then rebuild the site:\n\n"
            + fenced("python -m nox -s convert    # converted workloads in build/converted\n"
                     "python -m nox -s schedule   # tables and plots in build/schedule\n"
                     "python -m nox -s docs", "sh")))
        return "\n".join(parts)
    schedule_root = repo_root / "build" / "schedule"
    parts.append("From `build/schedule/`, written by `nox -s schedule`.\n")
    for path in markdown_files:
        parts.append(f"### `{path.relative_to(schedule_root).as_posix()}`\n")
        parts.append(_demote_headings(path.read_text(encoding="utf-8"), 3))
    if svgs:
        parts.append("### Plots\n")
        for svg in svgs:
            label = svg.relative_to(schedule_root).as_posix()
            parts.append(f"![{label}]({plot_name(repo_root, svg)})\n\n*{label}*\n")
    for path in json_files:
        text = path.read_text(encoding="utf-8")
        label = path.relative_to(schedule_root).as_posix()
        if len(text) > 20_000:
            parts.append(f"`{label}`: {len(text):,} characters, not shown.\n")
            continue
        with contextlib.suppress(ValueError):  # shown as written when it is not JSON
            text = json.dumps(json.loads(text), indent=2)
        parts.append(f'??? note "{label}"\n\n' + "".join(
            "    " + line for line in fenced(text, "json").splitlines(True)))
    return "\n".join(parts)


def precommit_hooks(repo_root: Path) -> str:
    """The hooks this repository declares in ``.pre-commit-hooks.yaml``, as a table."""
    manifest = repo_root / ".pre-commit-hooks.yaml"
    if not manifest.is_file():
        return admonition("note", "Hook manifest not in this build",
                          "`.pre-commit-hooks.yaml` is not in this checkout yet; the hook ids "
                          "below it will be listed here once it lands.")
    from ruamel.yaml import YAML

    text = manifest.read_text(encoding="utf-8")
    hooks = YAML(typ="safe").load(text) or []
    rows = []
    for hook in hooks if isinstance(hooks, list) else []:
        rows.append((code(str(hook.get("id", ""))), cell(str(hook.get("name", ""))),
                     code(" ".join([str(hook.get("entry", "")), *map(str, hook.get("args", []))])),
                     cell(", ".join(map(str, hook.get("types_or", hook.get("types", [])))))
                     or cell(str(hook.get("files", ""))),
                     cell(str(hook.get("description", "")))))
    return (table(("Hook id", "Name", "Runs", "Files", "Description"), rows)
            + "\nThe manifest itself:\n\n" + fenced(text, "yaml"))
