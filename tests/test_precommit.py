"""The pre-commit hook: the manifest against the registry, hook mode of ``dcx validate``,
lazy imports, and the real ``pre-commit try-repo`` on a throwaway repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from dcx.cli.main import main
from dcx.converters.hooks import manifest
from dcx.converters.registry import FAMILIES, FORMATS
from dcx.core.declaration import FormatDeclaration

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "environment" / "small-cluster.json"
BAD_ENVIRONMENT = b'{"environment": {"datacenters": [{"id": "dc", "rooms": 3}]}}\n'
NOT_OURS = b'{"name": "left-pad", "version": "1.3.0"}\n'


def _manifest() -> list[dict[str, Any]]:
    hooks: list[dict[str, Any]] = YAML(typ="safe").load(
        (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return hooks


def _extensions(pattern: str) -> set[str]:
    """The alternatives of a ``\\.(a|b)$`` or ``\\.a$`` pattern."""
    match = re.fullmatch(r"\\\.\(?([A-Za-z|]+)\)?\$", pattern)
    assert match, pattern
    return set(match.group(1).split("|"))


# ------------------------------------------------------------------------------ manifest


def test_committed_manifest_is_the_generated_one() -> None:
    committed = (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert committed == manifest(), "run: python -m dcx.converters.hooks > .pre-commit-hooks.yaml"


def test_manifest_has_one_hook_for_all_and_one_per_family() -> None:
    ids = [hook["id"] for hook in _manifest()]
    assert ids[0] == "dcx-validate"
    assert sorted(ids[1:]) == [f"dcx-validate-{family}" for family in FAMILIES]


def _suffixes(spec: FormatDeclaration) -> set[str]:
    """The file name endings a format's files have: its extensions, or those of the files
    inside the folder a folder format is stored as (``tasks.parquet``)."""
    return {name.rsplit(".", 1)[-1] for name in (*spec.extensions, *spec.members)}


def test_manifest_scopes_match_the_registry_extensions() -> None:
    everything = {suffix for spec in FORMATS for suffix in _suffixes(spec)}
    for hook in _manifest():
        assert hook["language"] == "python"
        assert hook["exclude_types"] == ["xsd"]
        family = hook["id"].removeprefix("dcx-validate").removeprefix("-")
        expected = everything if not family else {
            suffix for spec in FORMATS if spec.family == family for suffix in _suffixes(spec)}
        assert _extensions(hook["files"]) == expected, hook["id"]
        assert hook["entry"] == "dcx validate --hook" + (f" --family {family}" if family else "")


def test_manifest_patterns_pick_the_right_paths() -> None:
    pattern = re.compile(_manifest()[0]["files"])
    for path in ("a.json", "deep/dir/site.xml", "w.lwf", "w.lwfa", "r.R", "t.gwf", "t.swf"):
        assert pattern.search(path), path
    for path in ("README.md", "a.json5", "a.jsonc", "schema.xsd", "script.r", "x.json.bak"):
        assert not pattern.search(path), path


# ------------------------------------------------------------------------------ hook mode


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_hook_mode_skips_files_of_no_dcx_format_silently(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "package.json"
    other.write_bytes(NOT_OURS)
    assert _run(capsys, "validate", "--hook", str(other)) == (0, "")
    code, out = _run(capsys, "validate", str(other))
    assert code == 1 and "not a recognised dcx format" in out


def test_hook_mode_reports_a_bad_file_with_its_location(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(BAD_ENVIRONMENT)
    other = tmp_path / "package.json"
    other.write_bytes(NOT_OURS)
    code, out = _run(capsys, "validate", "--hook", str(EXAMPLE), str(other), str(bad))
    assert code == 1
    lines = out.splitlines()
    assert lines and all(line.startswith(f"{bad}:1:") for line in lines), out
    assert "/environment/datacenters/0/rooms" in out


def test_family_hooks_skip_other_families(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(BAD_ENVIRONMENT)
    assert _run(capsys, "validate", "--hook", "--family", "sss", str(bad)) == (0, "")
    code, _ = _run(capsys, "validate", "--hook", "--family", "environment", str(bad))
    assert code == 1


def test_batches_are_independent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pre-commit may split the file list: each file's verdict is the same alone or together."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(BAD_ENVIRONMENT)
    together = _run(capsys, "validate", "--hook", str(EXAMPLE), str(bad))
    alone = [_run(capsys, "validate", "--hook", str(path)) for path in (EXAMPLE, bad)]
    assert together == (max(code for code, _ in alone), "".join(out for _, out in alone))


def test_a_json_batch_never_loads_xml_schemas(tmp_path: Path) -> None:
    """Every format's declaration is imported to sniff, but a batch of JSON files never loads
    the XML parsers or an XSD (lxml and the XML layer load on first use)."""
    program = ("import sys; from dcx.cli.main import main; "
               f"code = main(['validate', '--hook', {str(EXAMPLE)!r}]); "
               "print(code, sorted(m for m in ('lxml.etree', 'dcx.parsing.xmlio') "
               "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    assert done.stdout.strip().splitlines()[-1] == "0 []"


# ------------------------------------------------------------------------------ try-repo


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("pre-commit") is None,
                    reason="pre-commit is not installed (pip install pre-commit)")
def test_real_pre_commit_try_repo(tmp_path: Path) -> None:
    """pre-commit installs the hook with ``pip install .`` (PyPI for our dependencies) into its
    own environment and runs it over a repository with good, bad and foreign files."""
    work = tmp_path / "user-repo"
    (work / "site").mkdir(parents=True)
    shutil.copy(EXAMPLE, work / "site" / "cluster.json")
    (work / "site" / "broken.json").write_bytes(BAD_ENVIRONMENT)
    (work / "package.json").write_bytes(NOT_OURS)
    (work / "schema.xsd").write_text('<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>\n')
    (work / "README.md").write_text("not checked\n")
    _git(work, "init", "-q")
    _git(work, "add", ".")
    environment = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"),
                   "PRE_COMMIT_COLOR": "never"}
    done = subprocess.run(
        ["pre-commit", "try-repo", str(REPO), "dcx-validate", "--all-files", "--verbose"],
        cwd=work, capture_output=True, text=True, env=environment, timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert re.search(r"dcx validate \(all formats\)\.+Failed", output), output
    findings = [line for line in output.splitlines() if line.startswith("site/broken.json:1:")]
    assert findings and all(": error: /environment/datacenters/0/rooms" in line
                            for line in findings), output
    for quiet in ("site/cluster.json:", "package.json:", "schema.xsd", "README.md"):
        assert quiet not in output, quiet
