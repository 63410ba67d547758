"""The CLI's own behaviour: limits, exit codes and output shapes as a user sees them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dcx.cli import main as cli
from dcx.converters import inputs
from dcx.core.limits import Limits

SMALL = b'{"environment": {"datacenters": []}}'


@pytest.mark.parametrize("command", [["validate"], ["info"], ["convert"]])
def test_a_file_over_the_size_limit_is_invalid_input_not_read(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(inputs, "LIMITS", Limits(max_input_bytes=10))
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


REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def test_a_directory_is_validated_file_by_file_by_format_recursively(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Every file under it that a dcx format claims, a format folder as that format; files
    no format claims are not looked at, someone else's JSON is skipped, bad files fail."""
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "trace.swf").write_bytes(
        (EXAMPLES / "swf" / "small-cluster.swf").read_bytes())
    (tmp_path / "notes.txt").write_text("not a dcx format\n")
    (tmp_path / "deep" / "package.json").write_text('{"name": "someone-elses"}\n')
    workload = tmp_path / "workload"
    workload.mkdir()
    for member in (EXAMPLES / "opendc-workload" / "small-cluster").iterdir():
        (workload / member.name).write_bytes(member.read_bytes())
    assert cli.main(["validate", str(tmp_path)]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert f"{tmp_path / 'deep' / 'er' / 'trace.swf'}: valid swf (5 jobs)" in err
    assert f"{workload}: valid opendc-workload" in err
    assert "notes.txt" not in err and "is a directory" not in err
    assert err.splitlines()[-1] == "2 files valid, 1 skipped (no dcx format)"
    (tmp_path / "deep" / "broken.gwf").write_text("not a trace\n")
    assert cli.main(["validate", str(tmp_path)]) == cli.EXIT_INVALID
    # (no format recognises the content; the one format its name claims reads it, and says
    # where it breaks)
    assert f"{tmp_path / 'deep' / 'broken.gwf'}:1:1: error: /lines/1:" in capsys.readouterr().err


def test_info_reads_a_directory_as_validate_walks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """The same inputs as validate's walk (a format folder as its format, files by
    extension, recursively); someone else's JSON is skipped, a bad file makes it exit 1."""
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "trace.swf").write_bytes(
        (EXAMPLES / "swf" / "small-cluster.swf").read_bytes())
    (tmp_path / "deep" / "package.json").write_text('{"name": "someone-elses"}\n')
    (tmp_path / "notes.txt").write_text("not a dcx format\n")
    workload = tmp_path / "workload"
    workload.mkdir()
    for member in (EXAMPLES / "opendc-workload" / "small-cluster").iterdir():
        (workload / member.name).write_bytes(member.read_bytes())
    assert cli.main(["info", "--output", "json", str(tmp_path)]) == cli.EXIT_OK
    summaries = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(s["path"], s["format"], s["workload"]["jobs"]) for s in summaries} == {
        (str(tmp_path / "deep" / "trace.swf"), "swf", 5),
        (str(workload), "opendc-workload", summaries[-1]["workload"]["jobs"])}
    (tmp_path / "deep" / "broken.gwf").write_text("not a trace\n")
    assert cli.main(["info", str(tmp_path)]) == cli.EXIT_INVALID
    out = capsys.readouterr().out
    assert f"{tmp_path / 'deep' / 'broken.gwf'}: gwf (" in out
    assert out.split(f"{tmp_path / 'deep' / 'broken.gwf'}: ", 1)[1].splitlines()[0].endswith(
        ", invalid")


def test_the_examples_folder_validates(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", "-q", str(EXAMPLES)]) == cli.EXIT_OK
    assert capsys.readouterr().err == ""


def test_a_directory_without_format_files_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "notes.txt").write_text("x\n")
    assert cli.main(["validate", str(tmp_path)]) == cli.EXIT_USAGE
    assert "holding no file a dcx format claims" in capsys.readouterr().err


def test_a_misspelt_policy_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schedule", str(EXAMPLES / "gwf" / "grid-archive.gwf"),
                     "--policy", "FCFS-EASYY"]) == cli.EXIT_USAGE
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("dcx schedule: error: unknown policy 'FCFS-EASYY' "
                           "(did you mean FCFS-EASY?): use T2-R5")


def test_convert_creates_no_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "nonexistent" / "dir" / "x.xml"
    assert cli.main(["convert", str(EXAMPLES / "sss" / "cluster.xml"), str(output)]) \
        == cli.EXIT_USAGE
    [line] = capsys.readouterr().err.splitlines()
    assert line == (f"dcx: error: {output}: cannot write: no such folder {output.parent} "
                    "(dcx creates no folders)")
    assert not (tmp_path / "nonexistent").exists()


def test_schedule_out_without_matplotlib_says_so_first_and_writes_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    out = tmp_path / "out"
    assert cli.main(["schedule", str(EXAMPLES / "gwf" / "grid-archive.gwf"), "--env",
                     str(EXAMPLES / "environment" / "small-cluster.json"),
                     "--out", str(out)]) == cli.EXIT_OK
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if line.startswith("dcx schedule: note:")]
    assert notes == [f"dcx schedule: note: {out}: no plots: they need matplotlib, "
                     "the plots extra (pip install 'dcx[plots]'); the other files are written"]
    assert "internal error" not in err and "Traceback" not in err
    assert list(out.rglob("*.csv")) and not list(out.rglob("*.svg"))


def test_truncated_json_says_where_and_what_is_still_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    cut = tmp_path / "trunc.json"
    cut.write_bytes((EXAMPLES / "environment" / "small-cluster.json").read_bytes()[:300])
    assert cli.main(["validate", str(cut)]) == cli.EXIT_INVALID
    [line] = capsys.readouterr().err.splitlines()
    assert line == (f"{cut}:7:5: error: /: a string starts here and is never closed; the file "
                    "ends inside 2 objects: it looks cut short")
    cut.write_text('{"a": [1, 2')
    assert cli.main(["validate", str(cut)]) == cli.EXIT_INVALID
    [line] = capsys.readouterr().err.splitlines()
    assert line.endswith("; the file ends inside 1 object and 1 array: it looks cut short")
    assert line.startswith(f"{cut}:1:12: error: /: expected ',' or a closing bracket")


def test_a_misspelt_element_over_several_lines_has_its_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """libxml2 gives a start tag written over two lines the line after it; the diagnostic
    names the line and column where ``<clustr`` starts."""
    platform = (EXAMPLES / "simgrid" / "two-clusters.xml").read_text()
    misspelt = tmp_path / "platform.xml"
    misspelt.write_text(platform.replace("<cluster ", "<clustr ", 1)
                        .replace("</cluster>", "</clustr>", 1))
    line = platform.splitlines().index(next(text for text in platform.splitlines()
                                            if "<cluster " in text)) + 1
    assert cli.main(["validate", str(misspelt)]) == cli.EXIT_INVALID
    [said] = capsys.readouterr().err.splitlines()
    assert said.startswith(f"{misspelt}:{line}:5: error: /platform/zone/clustr: ")


# (a line with more than 18 fields reads, its trailing fields kept: Alea's SWF files)
@pytest.mark.parametrize("bad", ["abc", ""], ids=["bad-field", "missing-field"])
def test_a_bad_swf_line_is_one_error_without_a_false_missing_job_warning(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Job 3 follows job 2, whose line does not read: job 2 is in the file all the same."""
    trace = (EXAMPLES / "swf" / "small-cluster.swf").read_text()
    job_2 = next(line for line in trace.splitlines() if line.startswith("2 120 "))
    assert "3 200 3380 95 1 -1 -1 1 600 -1 1 2 1 -1 2 -1 2 80" in trace  # follows job 2
    broken = tmp_path / "broken.swf"
    broken.write_text(trace.replace(job_2, job_2.replace(" 1805 ", f" {bad} ".replace("  ", " "),
                                                         1)))
    assert cli.main(["validate", str(broken)]) == cli.EXIT_INVALID
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and ": error: " in said[0], said
    assert "not in the file" not in said[0]


def test_a_bad_gwf_line_is_not_also_a_missing_dependency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    workflow = (EXAMPLES / "gwf" / "montage-workflow.gwf").read_text().splitlines()
    task_5 = next(index for index, line in enumerate(workflow)
                  if line.split(",")[1].strip() == "5")
    fields = workflow[task_5].split(",")
    fields[3] = " x" + fields[3][2:]  # RunTime
    workflow[task_5] = ",".join(fields)
    broken = tmp_path / "broken.gwf"
    broken.write_text("\n".join(workflow) + "\n")
    assert cli.main(["validate", str(broken)]) == cli.EXIT_INVALID
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "RunTime is 'x'" in said[0], said


def test_a_broken_file_is_read_as_the_one_format_its_name_claims(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No format recognises a .swf file with a short line; SWF's reader says where it
    breaks. A name several formats claim (.json) stays unrecognised."""
    short = tmp_path / "trace.swf"
    short.write_text("1 0 0 10 4\n")
    assert cli.main(["validate", str(short)]) == 1
    assert capsys.readouterr().err == (
        f"{short}:1:1: error: /lines/1: line has 5 whitespace-separated fields; SWF has 18\n")
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}')
    assert cli.main(["validate", str(other)]) == 1
    assert "not a recognised dcx format" in capsys.readouterr().err


def test_id_map_says_which_number_swf_gave_each_task(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SWF writes jobs in submit order, numbered again when the ids would go back: --id-map
    keeps each task's id as read beside the number written, in the order written."""
    trace = tmp_path / "late-first.swf"
    trace.write_text("3 100 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "7 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    out, ids = tmp_path / "out.swf", tmp_path / "ids.csv"
    assert cli.main(["convert", str(trace), str(out), "--to", "swf",
                     "--id-map", str(ids)]) == 0
    assert ids.read_text() == "id,swf_id\n7,1\n3,2\n"
    written = [line.split() for line in out.read_text().splitlines()
               if not line.startswith(";")]
    assert [(row[0], row[1], row[4]) for row in written] == [("1", "0", "2"), ("2", "100", "1")]
    capsys.readouterr()
    batsim = tmp_path / "out.json"
    assert cli.main(["convert", str(trace), str(batsim), "--to", "batsim",
                     "--id-map", str(tmp_path / "none.csv")]) == cli.EXIT_USAGE
    assert "--id-map: batsim writes every task id as it is read" in capsys.readouterr().err
    assert not batsim.exists() and not (tmp_path / "none.csv").exists()
    nowhere = tmp_path / "missing" / "ids.csv"
    assert cli.main(["convert", str(trace), str(tmp_path / "again.swf"),
                     "--id-map", str(nowhere)]) == cli.EXIT_USAGE
    assert "no such folder" in capsys.readouterr().err
    assert not nowhere.parent.exists() and not (tmp_path / "again.swf").exists()
