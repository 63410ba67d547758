"""The ``nox -s convert`` pipeline: outputs, the report, validation verdicts, exit status."""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from dcx.converters.pipeline import collect_inputs, convert_cell, main, run
from dcx.converters.registry import get
from dcx.core.diagnostics import WriteResult
from dcx.core.model import Document, Job, Task, Workload
from dcx.core.restrict import with_parts

REPO = Path(__file__).resolve().parent.parent
ENVIRONMENT_EXAMPLES = REPO / "examples" / "environment"


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    (folder / "environment").mkdir(parents=True)
    for example in sorted(ENVIRONMENT_EXAMPLES.glob("*.json")):
        shutil.copy(example, folder / "environment" / example.name)
    (folder / "notes.txt").write_text("no dcx format\n")
    (folder / "broken.json").write_text('{"environment": {"datacenters": 5}}\n')
    return folder


def test_every_input_goes_to_every_format_that_can_hold_it(inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, report = run([str(inputs)], out, stream=io.StringIO())
    by_path = {entry["path"]: entry for entry in report["inputs"]}
    cluster = by_path[str(inputs / "environment" / "small-cluster.json")]
    assert cluster["format"] == "environment" and cluster["valid"]
    statuses = {c["target"]: c for c in cluster["conversions"]}
    writable = {t["name"] for t in report["formats"] if t["writable"]}
    assert set(statuses) == writable
    for name, cell in statuses.items():
        holds_topology = "environment" in with_parts(get(name).holds)
        if not holds_topology:
            assert cell["status"] == "impossible", name
        elif cell["status"] == "impossible":  # a value restriction keeps none of the machines
            assert "can hold none of the machines" in cell["reason"], name
        if cell["output"]:
            assert Path(cell["output"]) == (out / "environment__small-cluster.json" /
                                            f"{name}{get(name).extensions[0]}")
            assert Path(cell["output"]).is_file()
    environment_cell = statuses["environment"]
    assert environment_cell["status"] == "ok" and environment_cell["valid"]
    assert code == (1 if report["summary"]["invalid_outputs"] else 0)


def test_unrecognised_and_unreadable_inputs_are_listed_not_converted(inputs: Path,
                                                                     tmp_path: Path) -> None:
    _, report = run([str(inputs)], tmp_path / "out", stream=io.StringIO())
    by_name = {entry["name"]: entry for entry in report["inputs"]}
    assert by_name["notes.txt"]["format"] is None and by_name["notes.txt"]["conversions"] == []
    broken = by_name["broken.json"]
    assert broken["format"] == "environment" and not broken["valid"]
    assert broken["conversions"] == [] and broken["diagnostics"][0]["line"] == 1
    assert report["summary"]["unrecognised"] == 1 and report["summary"]["unreadable"] == 1


def test_reports_are_written_and_agree(inputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _, report = run([str(inputs)], out, stream=io.StringIO())
    assert json.loads((out / "report.json").read_text()) == report
    markdown = (out / "report.md").read_text()
    assert "| input | format |" in markdown
    assert f"`{inputs / 'environment' / 'two-sites.json'}` | environment |" in markdown
    assert f"`{inputs / 'notes.txt'}` (unknown): not a dcx format (skipped)" in markdown


def test_a_workload_to_a_topology_format_is_impossible_and_a_partial_fit_lossy(
        tmp_path: Path) -> None:
    source, target = get("haizea"), get("environment")
    workload = Workload(jobs=(Job(id=1, tasks=(Task(id=1),)),))
    impossible = convert_cell(Document(workload=workload), source, target, tmp_path)
    assert (impossible.status, impossible.output) == ("impossible", None)
    assert impossible.reason.endswith("nothing to convert")
    example = get("environment").read((ENVIRONMENT_EXAMPLES / "small-cluster.json").read_bytes())
    assert example.document is not None
    both = replace(example.document, workload=workload)
    lossy = convert_cell(both, source, target, tmp_path)
    assert lossy.status == "lossy" and [loss.field for loss in lossy.lost] == ["workload"]
    assert lossy.output == str(tmp_path / "environment.json")


def test_an_output_that_does_not_read_back_fails_the_run_and_is_not_written(
        tmp_path: Path) -> None:
    """A writer whose output its own reader rejects: the cell FAILED, nothing is written,
    and the exit status is 1."""
    environment = get("environment")
    assert environment.write is not None
    real_write = environment.write

    def corrupting_write(document: Document) -> WriteResult:
        written = real_write(document)
        return WriteResult(written.data.replace(b'"datacenters"', b'"datacentres"', 1))

    broken = replace(environment, write=corrupting_write)
    stream = io.StringIO()
    code, report = run([str(ENVIRONMENT_EXAMPLES / "two-sites.json")], tmp_path / "out",
                       formats=[broken], stream=stream)
    (entry,) = report["inputs"]
    (cell,) = entry["conversions"]
    assert (code, cell["status"], cell["output"]) == (1, "failed", None)
    assert "-> environment: FAILED:" in stream.getvalue()
    assert "does not accept" in stream.getvalue()
    assert not (tmp_path / "out" / "environment__two-sites.json").exists()
    assert "FAILED" in (tmp_path / "out" / "report.md").read_text()


def test_names_of_outputs_are_unique(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_text("{}")
    (tmp_path / "x.json").write_text("{}")
    names = [name for _, name in collect_inputs([str(tmp_path / "a"), str(tmp_path / "x.json"),
                                                 str(tmp_path / "a" / "x.json")])]
    assert names == ["x.json", "x.json~2", "x.json~3"]


def test_missing_input_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["--out", str(tmp_path / "out"), str(tmp_path / "nope")]) == 2
