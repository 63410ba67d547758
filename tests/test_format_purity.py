"""A format module reads bytes into the model and writes the model back: it prints nothing,
exits nothing and touches no file. A stream target's scratch files go through the file
operations the engine lends it (``dcx.core.streams.Files``), so this reads every module of
every format package for the calls that would break the rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORMAT_MODULES = sorted((ROOT / "formats").rglob("*.py"))

FORBIDDEN_CALLS = frozenset({"print", "open", "input", "exit", "quit", "breakpoint"})
FORBIDDEN_MODULES = frozenset({"tempfile", "shutil", "subprocess", "pathlib", "glob"})
PURE_OS_PATH = frozenset({"join", "basename", "dirname", "splitext", "sep", "normpath"})
FORBIDDEN_ATTRIBUTES = frozenset({"ParquetWriter", "exit"})
"""``pq.ParquetWriter``, which a stream target would give a path (``Files`` lends
``parquet_writer``; the codecs' ``pq.write_table`` writes to a buffer); ``sys.exit``."""


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    found = []
    for node in ast.walk(tree):
        where = f"{shown}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in FORBIDDEN_CALLS:
            found.append(f"{where}: {node.func.id}()")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names]
            found += [f"{where}: import {name}" for name in names
                      if name.split(".")[0] in FORBIDDEN_MODULES
                      or (isinstance(node, ast.ImportFrom) and name == "os")]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr not in ("path", "environ", "sep"):
                found.append(f"{where}: os.{node.attr}")
            elif node.attr in FORBIDDEN_ATTRIBUTES and node.value.id in ("pq", "sys"):
                found.append(f"{where}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                and isinstance(node.value.value, ast.Name) and node.value.value.id == "os" \
                and node.value.attr == "path" and node.attr not in PURE_OS_PATH:
            found.append(f"{where}: os.path.{node.attr}")
    return found


def test_the_format_packages_are_found() -> None:
    assert len(FORMAT_MODULES) > 50


@pytest.mark.parametrize("path", FORMAT_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_format_module_prints_exits_and_touches_no_file(path: Path) -> None:
    assert _problems(path) == []


def test_the_rule_finds_what_it_forbids(tmp_path: Path) -> None:
    """Each forbidden shape is found (the rule cannot pass by finding nothing)."""
    offender = tmp_path / "offender.py"
    source = ("import os, sys, tempfile\nimport pyarrow.parquet as pq\n"
              "print(1)\nopen('x')\nsys.exit(2)\nos.replace('a', 'b')\n"
              "os.path.getsize('a')\npq.ParquetWriter('a', None)\nos.path.join('a', 'b')\n")
    offender.write_text(source)
    found = [line.split(": ", 1)[1] for line in _problems(offender)]
    assert found == ["import tempfile", "print()", "open()", "sys.exit", "os.replace",
                     "os.path.getsize", "pq.ParquetWriter"]
