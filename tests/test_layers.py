"""The layers, checked by import-linter: experiments over the applications (converters,
scheduler) over formats over parsing over core, and no format importing another. The
contracts are generated from the format declarations, so a new format is checked without
editing this file."""

from __future__ import annotations

import subprocess
import sys
import tomllib
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


def source_tree(root: Path) -> Path:
    """The ``dcx`` package as one folder of links, from pyproject's ``package-dir``: the
    repository maps its subpackages from top-level folders, and import-linter reads a package
    from one directory."""
    mapping = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    package_dirs: dict[str, str] = mapping["tool"]["setuptools"]["package-dir"]
    for package, folder in sorted(package_dirs.items()):
        target = root.joinpath(*package.split("."))
        if package == "dcx":
            target.mkdir(parents=True)
            for item in (REPO / folder).iterdir():
                (target / item.name).symlink_to(item)
        else:
            target.symlink_to(REPO / folder)
    return root


def test_pyproject_lists_every_package_so_a_wheel_holds_it() -> None:
    """setuptools cannot find packages mapped from several top-level folders, so pyproject
    names them; a subpackage left out works in the editable checkout and is missing from an
    installed dcx."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["setuptools"]
    found = set()
    for package, folder in setuptools["package-dir"].items():
        root = REPO / folder
        found |= {".".join((package, *init.parent.relative_to(root).parts))
                  for init in root.rglob("__init__.py")}
    assert sorted(found - set(setuptools["packages"])) == []
    assert sorted(set(setuptools["packages"]) - found) == []


def test_the_layer_contracts_hold(tmp_path: Path) -> None:
    config = tmp_path / "contracts.ini"
    config.write_text(contracts(), encoding="utf-8")
    tree = source_tree(tmp_path / "tree")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         f"sys.exit(lint_imports(config_filename={str(config)!r}, no_cache=True))"],
        capture_output=True, text=True, cwd=tree, env={"PYTHONPATH": str(tree)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 2 kept, 0 broken" in done.stdout


def test_the_wheel_lists_every_package_of_the_source_tree() -> None:
    """setuptools installs only the packages pyproject names; a format package (a folder with
    an ``__init__.py``) missing from the list would be missing from every install."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = config["tool"]["setuptools"]
    found = set()
    for package, folder in setuptools["package-dir"].items():
        for init in (REPO / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((package, *relative)))
    assert found <= set(setuptools["packages"]), sorted(found - set(setuptools["packages"]))
