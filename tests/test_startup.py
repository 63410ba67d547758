"""The pre-commit hook imports every format's declaration to sniff a batch, so what that import
loads is start-up paid on every commit. Declarations are fronts: the readers, writers, the
model and the parsing layer load when a file of that format is read, never to sniff."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY_LIBRARIES = ("lxml", "jsonschema", "jsonschema_rs", "xmlschema", "numpy", "pyarrow",
                   "ruamel", "dask", "matplotlib")
"""Third-party modules no declaration may load."""

HEAVY_DCX_MODULES = ("dcx.core.model", "dcx.core.columns", "dcx.parsing.schemas",
                     "dcx.parsing.traces", "dcx.parsing.jsonio", "dcx.parsing.xmlio",
                     "dcx.parsing.hostlist", "dcx.parsing.fluxion")
"""What readers need and sniffing does not: the model and the parsing layer's parsers (light
parsing modules such as the trace code lists may load)."""


def _loaded_after(program: str, cwd: Path) -> set[str]:
    probe = (f"import sys; {program}; import json; "
             "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=cwd)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _unwanted(loaded: set[str]) -> list[str]:
    return sorted(name for name in loaded
                  if name in HEAVY_DCX_MODULES or name.split(".")[0] in HEAVY_LIBRARIES)


def test_discovering_every_format_loads_no_model_parser_or_heavy_library(tmp_path: Path) -> None:
    loaded = _loaded_after("import dcx.converters.registry", tmp_path)
    assert _unwanted(loaded) == []


def test_each_format_package_loads_only_its_front(tmp_path: Path) -> None:
    """A format package's implementation submodules (reader, writer, normal form) stay
    unloaded until used; a small vocabulary module the sniffer shares with them may load."""
    loaded = _loaded_after("import dcx.converters.registry", tmp_path)
    implementation = sorted(name for name in loaded if name.startswith("dcx.formats.")
                            and name.count(".") >= 3 and not name.endswith(".vocabulary"))
    assert implementation == []


def test_a_hook_run_over_a_foreign_file_builds_no_model(tmp_path: Path) -> None:
    foreign = tmp_path / "package.json"
    foreign.write_text('{"name": "not-ours", "version": "1.0.0"}\n')
    loaded = _loaded_after("from dcx.cli.main import main; "
                           f"assert main(['validate', '--hook', {str(foreign)!r}]) == 0",
                           tmp_path)
    assert "dcx.core.model" not in loaded
    assert [name for name in loaded if name.split(".")[0] in HEAVY_LIBRARIES] == []
