"""The layers, checked by import-linter: experiments over the applications (converters,
scheduler) over formats over parsing over core, and no format importing another. The
contracts are generated from the format declarations, so a new format is checked without
editing this file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dcx.converters.registry import FORMATS

pytest.importorskip("importlinter", reason="import-linter is in the test extra")

REPO = Path(__file__).resolve().parent.parent

LAYERS = ("dcx.experiments", "dcx.converters : dcx.scheduler", "dcx.formats", "dcx.parsing",
          "dcx.core")
COMMAND_LINE_IMPORTS = ("dcx.converters.cli -> dcx.experiments.cli",)
"""The ``dcx`` command line lists every subcommand, the experiments' too: that one module
may reach up to the experiments' argument parser (nothing else in the layers below may)."""


def format_packages() -> list[str]:
    """The module or package of each format, one level below ``dcx.formats``."""
    return sorted({".".join(spec.module.split(".")[:3]) for spec in FORMATS})


def contracts() -> str:
    layers = "\n".join(f"    {layer}" for layer in LAYERS)
    formats = "\n".join(f"    {name}" for name in format_packages())
    ignored = "\n".join(f"    {line}" for line in COMMAND_LINE_IMPORTS)
    return (
        "[importlinter]\nroot_package = dcx\ninclude_external_packages = False\n\n"
        "[importlinter:contract:layers]\n"
        "name = Experiments over applications over formats over parsing over core\n"
        f"type = layers\nlayers =\n{layers}\n"
        f"ignore_imports =\n{ignored}\n\n"
        "[importlinter:contract:formats]\n"
        "name = No format imports another (shared helpers live in core or parsing)\n"
        f"type = independence\nmodules =\n{formats}\n")


def test_every_format_has_its_own_module_or_package() -> None:
    assert len(format_packages()) == len(FORMATS)


SOURCE = REPO / "src"
"""The package as tools see it: ``src/dcx`` whose subpackages are committed links to the
top-level folders."""


def test_every_top_level_package_is_linked_into_src() -> None:
    """A top-level folder holding Python packages is reachable as ``dcx.<folder>``: the wheel,
    the editable install, mypy and import-linter all read ``src``."""
    packages = {path.parent.name for path in REPO.glob("*/__init__.py")}
    linked = {path.name for path in (SOURCE / "dcx").iterdir() if path.is_symlink()}
    assert packages - linked == set(), "link it: ln -s ../../NAME src/dcx/NAME"
    for name in linked:
        assert (SOURCE / "dcx" / name).resolve() == REPO / name


def test_setuptools_finds_every_package_of_the_source_tree() -> None:
    """The package list is derived (``packages.find`` over ``src``, through the links): each
    folder with an ``__init__.py`` below a linked folder is a package of every install."""
    setuptools = pytest.importorskip("setuptools", reason="setuptools builds the wheel")
    found = set(setuptools.find_packages(str(SOURCE)))
    expected = {".".join(init.parent.relative_to(SOURCE).parts)
                for init in SOURCE.glob("dcx/**/__init__.py")}
    expected |= {".".join(init.parent.relative_to(SOURCE).parts)
                 for link in (SOURCE / "dcx").iterdir() if link.is_symlink()
                 for init in link.rglob("__init__.py")}
    assert expected and expected <= found, sorted(expected - found)


def test_the_layer_contracts_hold(tmp_path: Path) -> None:
    config = tmp_path / "contracts.ini"
    config.write_text(contracts(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         f"sys.exit(lint_imports(config_filename={str(config)!r}, no_cache=True))"],
        capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(SOURCE)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 2 kept, 0 broken" in done.stdout
