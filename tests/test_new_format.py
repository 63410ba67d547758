"""Adding a format is four places: its package, its schema, its example, its tests. This test
scaffolds a toy format package as DEVELOPING.md prescribes (a light front with the
declaration, a codec loaded on first use) in a temporary copy of the project (package, schema
and example only: no package list, no registry line) and finds it in ``dcx formats``, the loss
matrix, the hook manifest and the docs plan."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

TOY_FRONT = '''"""Toy hosts: one ``hostname cores`` line per machine (made up by a test)."""

from __future__ import annotations

from dcx.core.declaration import FormatDeclaration, deferred


def sniff(data: bytes) -> bool:
    return data.startswith(b"#toy")


read = deferred("dcx.formats.toy.codec", "read")


write = deferred("dcx.formats.toy.codec", "write")


FORMAT = FormatDeclaration(
    name="toy", title="Toy hosts", family="toy", kind="topology", extensions=(".toy",),
    content=frozenset({"text"}), schema="toy.schema.json",
    description="One hostname and core count per line.",
    holds=frozenset({"machine.name", "machine.cpus"}),
    sniff=sniff, read=read, write=write)
'''

TOY_CODEC = '''"""The toy format's reader and writer, loaded on first use."""

from __future__ import annotations

from dcx.core.diagnostics import ReadResult, WriteResult, error
from dcx.core.model import (Datacenter, Document, Environment, Machine, ProcessingUnit, Rack,
                            Room)


def read(data: bytes) -> ReadResult:
    machines = []
    for number, line in enumerate(data.decode().splitlines()[1:], start=2):
        name, _, cores = line.partition(" ")
        if not cores.isdigit():
            return ReadResult(None, (error("cores must be a number", "toy.cores",
                                           line=number),))
        machines.append(Machine(name=name, cpus=(ProcessingUnit(cores=int(cores)),)))
    rack = Rack(slots=tuple(machines))
    return ReadResult(Document(environment=Environment(
        datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),))))


def write(document: Document) -> WriteResult:
    environment = document.environment or Environment()
    lines = ["#toy"] + [f"{m.name} {m.core_count}" for m in environment.machines()]
    return WriteResult(("\\n".join(lines) + "\\n").encode())
'''


def _copy_project(destination: Path) -> Path:
    ignore = shutil.ignore_patterns(".git", ".nox", "build", "__pycache__", "*.egg-info")
    shutil.copytree(REPO, destination, ignore=ignore, symlinks=True)
    return destination


def _run(project: Path, code: str) -> str:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment["PYTHONPATH"] = os.pathsep.join([str(project / "src"),
                                                 str(project / "site" / "hooks")])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=project, env=environment, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_a_toy_format_in_four_places_appears_everywhere(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "project")
    package = project / "formats" / "toy"
    package.mkdir()
    (package / "__init__.py").write_text(TOY_FRONT, encoding="utf-8")
    (package / "codec.py").write_text(TOY_CODEC, encoding="utf-8")
    (project / "schemas" / "toy.schema.json").write_text(json.dumps(
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Toy hosts"}))
    (project / "examples" / "toy").mkdir()
    (project / "examples" / "toy" / "two.toy").write_text("#toy\na 4\nb 8\n")
    where = _run(project, "import dcx.converters.registry as r; print(r.__file__)")
    assert where.startswith(str(project)), f"the copy's dcx was not the one imported: {where}"
    front = _run(project, "import sys, dcx.formats.toy; print('dcx.core.model' in sys.modules)")
    assert front.strip() == "False", "the toy's front loaded its codec at import"

    converted = _run(project, "from dcx.cli.main import main; raise SystemExit(main("
                     "['convert', 'examples/toy/two.toy', '-', '--to', 'toy', '-q']))")
    assert converted == "#toy\na 4\nb 8\n"

    listing = _run(project, "from dcx.cli.main import main; main(['formats'])")
    assert "toy" in listing and "Toy hosts" in listing

    matrix = _run(project,
                  "from dcx.cli.main import main; main(['formats', '--matrix'])")
    assert "toy -> environment:" in matrix and "sss -> toy:" in matrix
    assert "gwf -> toy: impossible" in matrix

    manifest = _run(project,
                    "from dcx.converters.hooks import manifest; print(manifest())")
    assert "id: dcx-validate-toy" in manifest and "toy" in manifest.split("files:")[1]

    pages = _run(project, (
        "from pathlib import Path; from dcxdocs.plan import build_plan; "
        "plan = build_plan(Path('.')); print('\\n'.join(sorted(plan.pages))); "
        "print(any(e.source == 'toy' for e in plan.examples))"))
    assert "formats/toy.md" in pages.split()
    assert "conversions/toy.md" in pages.split()
    assert pages.split()[-1] == "True"
