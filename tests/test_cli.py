"""The CLI's own behaviour: limits, exit codes and output shapes as a user sees them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcx.converters import cli
from dcx.core.limits import Limits

SMALL = b'{"environment": {"datacenters": []}}'


@pytest.mark.parametrize("command", [["validate"], ["info"], ["convert"]])
def test_a_file_over_the_size_limit_is_invalid_input_not_read(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(cli, "LIMITS", Limits(max_input_bytes=10))
    source = tmp_path / "big.json"
    source.write_bytes(SMALL)
    extra = [str(tmp_path / "out.json")] if command == ["convert"] else []
    assert cli.main([*command, str(source), *extra]) == cli.EXIT_INVALID
    captured = capsys.readouterr()
    assert "the limit is 10" in captured.out + captured.err
    assert not (tmp_path / "out.json").exists()


def test_validate_json_output_has_the_stable_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    source = tmp_path / "env.json"
    source.write_bytes(b"[1]")
    assert cli.main(["validate", "--format", "environment", "--output", "json",
                     str(source)]) == cli.EXIT_INVALID
    report = json.loads(capsys.readouterr().out)
    [entry] = report["files"]
    assert set(entry) == {"path", "format", "valid", "diagnostics"}
    [diagnostic] = entry["diagnostics"]
    assert set(diagnostic) == {"severity", "code", "line", "column", "pointer", "message"}
    assert diagnostic["line"] == 1 and "JSON array" in diagnostic["message"]
    assert diagnostic["code"] == "environment.root"


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    assert cli.main(["validate", str(tmp_path / "nowhere.json")]) == cli.EXIT_USAGE
