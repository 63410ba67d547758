"""The layers, checked by import-linter: the command line over the experiments over the
scheduler over the converters over the formats over parsing over core, with no exemption,
and no format importing another. The contracts are generated from the format declarations,
so a new format is checked without editing this file. And no import cycles, through imports
inside functions too (grimp); nothing imports the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dcx.converters.registry import FORMATS

pytest.importorskip("importlinter", reason="import-linter is in the test extra")

REPO = Path(__file__).resolve().parent.parent

LAYERS = ("dcx.cli", "dcx.experiments", "dcx.scheduler", "dcx.converters", "dcx.formats",
          "dcx.parsing", "dcx.core")
"""Top first: each imports only those after it, with no exemption."""


def format_packages() -> list[str]:
    """The module or package of each format, one level below ``dcx.formats``."""
    return sorted({".".join(spec.module.split(".")[:3]) for spec in FORMATS})


def contracts() -> str:
    layers = "\n".join(f"    {layer}" for layer in LAYERS)
    formats = "\n".join(f"    {name}" for name in format_packages())
    return (
        "[importlinter]\nroot_package = dcx\ninclude_external_packages = False\n\n"
        "[importlinter:contract:layers]\n"
        "name = cli over experiments over scheduler over converters over formats over "
        "parsing over core\n"
        f"type = layers\nlayers =\n{layers}\n\n"
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


def import_cycles() -> list[list[str]]:
    """The strongly connected components of the package's import graph with more than one
    module: every import counts, a function's own imports too (they run all the same), but
    not those under ``TYPE_CHECKING``, which never run."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter")
    graph = grimp.build_graph("dcx", cache_dir=None, exclude_type_checking_imports=True)
    edges = {module: sorted(graph.find_modules_directly_imported_by(module) & graph.modules)
             for module in graph.modules}
    return strongly_connected(edges)


def strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's components of size two or more, each sorted, iteratively (no recursion
    limit for a long import chain)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            step = next(successors, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(edges[step])))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return sorted(found)


def test_strongly_connected_finds_cycles_and_only_them() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": ["e"], "e": ["d"], "f": ["a"]}
    assert strongly_connected(edges) == [["a", "b", "c"], ["d", "e"]]
    assert strongly_connected({"a": ["b"], "b": []}) == []


def test_no_import_cycles() -> None:
    assert import_cycles() == []


def test_nothing_imports_the_command_line() -> None:
    """Only the console script and ``python -m dcx.cli`` enter ``dcx.cli``: no module outside
    it imports it, at the top or inside a function."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter")
    graph = grimp.build_graph("dcx", cache_dir=None, exclude_type_checking_imports=True)
    inside = {module for module in graph.modules if module.split(".")[:2] == ["dcx", "cli"]}
    assert "dcx.cli.main" in inside
    importers = {importer for module in inside
                 for importer in graph.find_modules_that_directly_import(module)}
    assert importers - inside == set()


def test_no_converter_imports_a_format() -> None:
    """The engine names no format: a converter module reaches a format only through the
    registry and its declaration (``dcx.formats`` itself), never a format's package or a
    module inside it, at the top or inside a function."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter")
    graph = grimp.build_graph("dcx", cache_dir=None, exclude_type_checking_imports=True)
    converters = {module for module in graph.modules
                  if module.split(".")[:2] == ["dcx", "converters"]}
    assert "dcx.converters.stream_convert" in converters
    reached = {(module, imported) for module in converters
               for imported in graph.find_modules_directly_imported_by(module)
               if imported.startswith("dcx.formats.")}
    assert reached == set()
