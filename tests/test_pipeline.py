"""The ``nox -s convert`` pipeline: outputs, the report, validation verdicts, exit status."""

from __future__ import annotations

import io
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from dcx.converters.pipeline import collect_inputs, convert_cell, format_files, main, run
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
    (folder / "notes.txt").write_text("no dcx format\n")  # no format claims .txt: no input
    (folder / "experiment.yaml").write_text("schedulers: [FCFS-EASY]\n")
    (folder / "package.json").write_text('{"name": "someone-elses"}\n')  # .json is claimed
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
    assert "notes.txt" not in by_name and "experiment.yaml" not in by_name
    assert by_name["package.json"]["format"] is None
    assert by_name["package.json"]["conversions"] == []
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
    assert f"`{inputs / 'package.json'}` (unknown): not a dcx format (skipped)" in markdown
    assert "notes.txt" not in markdown


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


def test_only_files_a_format_claims_are_inputs_and_a_format_folder_is_one(tmp_path: Path) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "sweep.yaml").write_text("workloads: []\n")
    (tmp_path / "README.md").write_text("# notes\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.json").write_text("{}")
    (tmp_path / "a" / "w").mkdir(parents=True)
    (tmp_path / "a" / "w" / "tasks.parquet").write_bytes(b"PAR1")
    (tmp_path / "a" / "w" / "notes.json").write_text("{}")  # inside the folder: not looked at
    (tmp_path / "a" / "trace.swf").write_text("1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert format_files(str(tmp_path)) == [str(tmp_path / "a" / "trace.swf"),
                                           str(tmp_path / "a" / "w")]


@pytest.fixture(scope="module")
def examples_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """``nox -s convert`` on examples/: the JSON report and the output folder."""
    out = tmp_path_factory.mktemp("converted")
    stream = io.StringIO()
    code, report = run([str(REPO / "examples")], out, stream=stream)
    assert code == 0, stream.getvalue()
    return report, out


def test_the_report_fits_a_screen_counts_in_cells_fields_below(
        examples_run: tuple[dict, Path]) -> None:
    report, out = examples_run
    markdown = (out / "report.md").read_text()
    table = [line for line in markdown.splitlines() if line.startswith("| `")]
    assert table, markdown
    cells = [cell.strip() for line in table for cell in line.strip("|").split("|")[2:]]
    assert all(re.fullmatch(r"ok|lossy \(\d+\)|–|refused( \(\d+\))?|FAILED", cell)
               for cell in cells), sorted(set(cells))
    assert max(map(len, table)) < 300
    prose = [line for line in markdown.splitlines() if not line.startswith("|")]
    assert max(map(len, prose)) <= 200
    lost = markdown.split("## Fields each conversion cannot hold")[1]
    entry = next(e for e in report["inputs"] if e["path"].endswith("swf/small-cluster.swf"))
    cell = next(c for c in entry["conversions"] if c["target"] == "batsim")
    assert cell["status"] == "lossy"
    listed = " ".join(lost.split(f"`{entry['path']}` (swf)")[1].split("\n- ")[0].split())
    assert f"batsim ({len(cell['lost'])}): " + ", ".join(
        loss["field"] for loss in cell["lost"]) in listed


def test_the_example_experiments_are_not_inputs(examples_run: tuple[dict, Path]) -> None:
    """The experiment files are no format's; the trace one of them sweeps is an SWF input."""
    report, _ = examples_run
    assert not [entry["path"] for entry in report["inputs"] if not entry["valid"]]
    assert not any(entry["path"].endswith((".yaml", ".yml")) for entry in report["inputs"])
    assert any(entry["path"].endswith("experiments/synthetic-64.swf")
               for entry in report["inputs"])


def test_the_readme_sample_summary_is_what_a_run_on_examples_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """README quotes the last line ``nox -s convert`` prints on examples/: the same line."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    assert main(["--out", "build/converted", "examples"]) == 0
    printed = capsys.readouterr().err.strip().splitlines()[-1]
    readme = " ".join((REPO / "README.md").read_text().split())
    quoted = re.search(r"The last line on stderr sums it up \(`([^`]*)`", readme)
    assert quoted is not None, "README no longer quotes the summary line"
    assert quoted.group(1) == printed
