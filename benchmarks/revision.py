"""The package as it was at a git revision, for benchmarks that measure today's code
against an older one in the same run: unpacked with ``git archive``, imported by a child
process from a folder put first on ``PYTHONPATH``: the revision's ``src`` when its ``dcx`` is
whole there, else a folder of links that lays out the packages its ``pyproject.toml`` maps
from top-level folders (``[tool.setuptools] package-dir``, the layout before ``src/dcx`` held
everything), as setuptools would install them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def unpacked(revision: str, folder: Path) -> Path | None:
    """The project at ``revision`` unpacked into ``folder``: the folder to put on
    ``PYTHONPATH`` to import that ``dcx``; ``None`` when git cannot give it."""
    try:
        archive = subprocess.run(["git", "archive", revision], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return importable(folder)


def importable(project: Path) -> Path:
    """The folder to put on ``PYTHONPATH`` to import the ``dcx`` of the unpacked
    ``project``."""
    import tomllib

    mapping: dict[str, str] = {}
    pyproject = project / "pyproject.toml"
    if pyproject.is_file():
        settings = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        mapping = settings.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    if not any(name.startswith("dcx.") for name in mapping):
        return project / "src" if (project / "src" / "dcx").is_dir() else project
    laid_out = project / ".importable"
    # parents before children: a subpackage's link goes inside its parent's folder
    for package, where in sorted(mapping.items(), key=lambda item: item[0].count(".")):
        target = laid_out.joinpath(*package.split("."))
        if package.count(".") == 0:
            target.mkdir(parents=True)
            for entry in (project / where).iterdir():
                (target / entry.name).symlink_to(entry.resolve())
        elif not target.exists():
            target.symlink_to((project / where).resolve(), target_is_directory=True)
    return laid_out


def measured_at(revision: str, script: str) -> Any:
    """What ``script --child`` prints as JSON on its last line, run by the package at
    ``revision``; ``None`` when git cannot give it or the child fails (its stderr shown)."""
    with tempfile.TemporaryDirectory() as folder:
        source = unpacked(revision, Path(folder))
        if source is None:
            return None
        child = subprocess.run(
            [sys.executable, script, "--child"], capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(source)}, check=False)
        if child.returncode != 0:
            print(child.stderr, file=sys.stderr)
            return None
        return json.loads(child.stdout.splitlines()[-1])
