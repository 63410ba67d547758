"""MkDocs hooks for the dcx site: generate the format, conversion and reference pages from the
installed package at build time, and expand the ``<!-- dcx:... -->`` markers in hand-written
pages with real command output.

Markers:

* ``<!-- dcx:run ARGS -->``: run ``dcx ARGS`` (from the repository root; ``{out}`` is a
  scratch folder shown as ``out``) and show the command, its output and its exit status;
  ``<!-- dcx:run ARGS && cat {out}/FILE -->`` also shows a file the command wrote.
* ``<!-- dcx:hostile-cases -->``: the security budgets and the hostile-input manifest.
* ``<!-- dcx:precommit-hooks -->``: the hooks ``.pre-commit-hooks.yaml`` declares.
* ``<!-- dcx:scheduler-results -->``: the paper's tables and whatever ``nox -s schedule``
  wrote to ``build/schedule/`` (or the folder ``$DCX_SCHEDULE_OUTPUTS`` names), each
  workload's plots in one collapsed block.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

HOOKS_DIR = Path(__file__).resolve().parent
if str(HOOKS_DIR) not in sys.path:
    sys.path.insert(0, str(HOOKS_DIR))

from dcxdocs import codes, conversions, formats_pages, reference_pages  # noqa: E402
from dcxdocs.markdown import admonition, fenced  # noqa: E402
from dcxdocs.plan import SitePlan, build_plan  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

_state: dict[str, SitePlan] = {}


def repo_root_of(config: Any) -> Path:
    override = os.environ.get("DCX_DOCS_REPO_ROOT")
    if override:
        return Path(override).resolve()
    return Path(config.config_file_path).resolve().parent.parent


def on_config(config: Any) -> Any:
    plan = build_plan(repo_root_of(config))
    _state["plan"] = plan
    config.nav = plan.nav
    return config


def on_files(files: Files, config: Any) -> Files:
    plan = _state["plan"]
    for path, markdown in plan.pages.items():
        files.append(File.generated(config, path, content=markdown))
    for path, data in plan.assets.items():
        files.append(File.generated(config, path, content=data))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if "<!-- dcx:" not in markdown:
        return markdown
    plan = _state["plan"]
    lines = []
    for line in markdown.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("<!-- dcx:") and stripped.endswith("-->"):
            lines.append(_expand(stripped[len("<!-- dcx:"):-3].strip(), plan))
        else:
            lines.append(line)
    return "".join(lines)


def _expand(directive: str, plan: SitePlan) -> str:
    name, _, argument = directive.partition(" ")
    if name == "run":
        return run_cli(plan.repo_root, argument)
    if name == "hostile-cases":
        return reference_pages.security_page(plan.repo_root, "")
    if name == "precommit-hooks":
        return reference_pages.precommit_hooks(plan.repo_root)
    if name == "scheduler-results":
        return reference_pages.scheduler_page(plan.repo_root, "")
    raise ValueError(f"unknown dcx marker {name!r}")


def run_cli(repo_root: Path, arguments: str) -> str:
    """``dcx ARGS`` run in-process from the repository root; the console transcript."""
    from dcx.cli.main import main

    arguments, _, shown_file = arguments.partition(" && cat ")
    argv = shlex.split(arguments)
    missing = [arg for arg in argv
               if arg.startswith("examples/") and not (repo_root / arg).exists()]
    shown = "$ dcx " + arguments.replace("{out}", "out")
    if missing:
        return admonition("note", "Example not in this build",
                          f"`{shown[2:]}` needs {', '.join(missing)}, which this checkout "
                          "does not have yet.")
    console = io.StringIO()  # both streams, in the order a terminal shows them
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(repo_root):
        argv = [arg.replace("{out}", scratch) for arg in argv]
        with contextlib.redirect_stdout(console), contextlib.redirect_stderr(console):
            try:
                status = main(argv)
            except SystemExit as exit_:
                status = int(exit_.code or 0)
        output = console.getvalue().replace(scratch, "out")
        transcript = f"{shown}\n{output}$ echo $?\n{status}\n"
        if shown_file:
            written = Path(shown_file.strip().replace("{out}", scratch)).read_text("utf-8")
            transcript += f"$ cat {shown_file.strip().replace('{out}', 'out')}\n{written}"
    return fenced(transcript, "console")


__all__ = ["codes", "conversions", "formats_pages", "on_config", "on_files",
           "on_page_markdown"]
