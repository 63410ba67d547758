"""The package as it was at a git revision, for benchmarks that measure today's code
against an older one in the same run: unpacked with ``git archive``, imported by a child
process from the revision's ``src`` folder (its ``src/dcx`` links to the top-level
folders; a bare folder named ``dcx`` would lose to the installed working tree)."""

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
    source = folder / "src"
    return source if (source / "dcx").is_dir() else folder


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
