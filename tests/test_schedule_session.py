"""What ``nox -s schedule`` does with the converted workloads: ``python -m
dcx.experiments.workloads`` says per workload what it runs on or why it is left out (one
line each), writes the experiment ``dcx experiment`` runs, and fails when nothing can run;
the experiment's tables and plots are ``dcx experiment``'s own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcx.cli.main import main as dcx_main
from dcx.experiments import workloads

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_one_line_per_workload_run_or_skipped_and_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own_machines = EXAMPLES / "haizea" / "mixed-site.lwf"
    site_only = EXAMPLES / "haizea" / "site.xml"
    no_machines = EXAMPLES / "gwf" / "grid-archive.gwf"
    another = EXAMPLES / "gwf" / "montage-workflow.gwf"
    no_jobs = tmp_path / "no-jobs.swf"
    no_jobs.write_text("; MaxNodes: 4\n; MaxProcs: 64\n")
    out = tmp_path / "out"
    status = workloads.main([str(path) for path in (own_machines, site_only, no_machines,
                                                    another, no_jobs)]
                            + ["--out", str(out), "--corpus", str(tmp_path / "none")])
    assert status == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"schedule: {own_machines}: 4 tasks, on its own machines",
        f"schedule: skipped: {site_only}: holds no workload",
        f"schedule: skipped: {no_jobs}: holds no job to schedule",
        "schedule: skipped 2 workloads without machines of their own: no environment to "
        f"run them on (give --env, or set DCX_CORPUS: {tmp_path / 'none' / 'setup.json'} not "
        "found); not-scheduled.md lists them",
        f"schedule: 1 workload of 5 to schedule with the nine SC18 policies: dcx experiment "
        f"{out / 'experiment.json'} --out {out}",
    ]
    left_out = (out / "not-scheduled.md").read_text()
    assert f"- `{no_machines}`: the workload file has no machines of its own" in left_out
    assert f"- `{site_only}`" in left_out and f"- `{no_jobs}`" in left_out
    spec = json.loads((out / "experiment.json").read_text())
    assert [w["path"] for w in spec["workloads"]] == [str(own_machines)]
    assert spec["environments"] == ["own"] and len(spec["schedulers"]) == 9


def test_dcx_experiment_runs_what_it_wrote_each_workload_on_its_machines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A workload with machines of its own runs on them, the others on the environment
    given (two environments, each workload excluded from the other's): one table per
    workload, nine rows each, from ``dcx experiment``."""
    lwf = EXAMPLES / "haizea" / "mixed-site.lwf"
    gwf = EXAMPLES / "gwf" / "grid-archive.gwf"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "setup.json").write_bytes(
        (EXAMPLES / "environment" / "small-cluster.json").read_bytes())
    out = tmp_path / "out"
    assert workloads.main([str(lwf), str(gwf), "--out", str(out), "--corpus",
                           str(corpus)]) == 0
    capsys.readouterr()
    assert dcx_main(["experiment", str(out / "experiment.json"), "--out", str(out),
                     "--workers", "0", "--no-plots"]) == 0
    summary = (out / "summary.md").read_text()
    assert "## mixed-site.lwf on own (event time model)" in summary
    assert "## grid-archive.gwf on setup.json (event time model)" in summary
    assert summary.count("| SRTF-BESTFIT | 1 |") == 2
    assert not (out / "not-scheduled.md").exists()


def test_a_workload_larger_than_its_environment_is_listed_and_nothing_to_run_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    too_big = tmp_path / "big.swf"
    too_big.write_text("1 0 0 100 64 -1 -1 64 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    tiny = tmp_path / "tiny.json"
    tiny.write_text('{"environment": {"datacenters": [{"rooms": [{"type": "SERVER", '
                    '"objects": [{"type": "RACK", "units": [{"type": "MACHINE", "id": 1, '
                    '"cpus": [{"cores": 2}]}]}]}]}]}}')
    out = tmp_path / "out"
    assert workloads.main([str(too_big), "--env", str(tiny), "--out", str(out)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"schedule: skipped: {too_big}: task 1")
    assert lines[1] == ("schedule: error: none of 1 workload can be scheduled (above, why); "
                        "no experiment written")
    left_out = (out / "not-scheduled.md").read_text()
    assert "## Workloads not scheduled" in left_out and "needs 64 core(s) anywhere" in left_out
    assert not (out / "experiment.json").exists()


def test_converted_workloads_come_from_the_conversion_report(tmp_path: Path) -> None:
    """Outputs in a format that holds workloads, of inputs that are no topology alone."""
    report = {"inputs": [
        {"format": "gwf", "conversions": [
            {"target": "swf", "output": "c/w/swf.swf"},
            {"target": "sss", "output": "c/w/sss.xml"},
            {"target": "parquet", "output": None}]},
        {"format": "sss", "conversions": [{"target": "haizea", "output": "c/s/haizea.lwf"}]},
        {"format": None, "conversions": []}]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    assert workloads.converted_workloads(tmp_path) == [Path("c/w/swf.swf")]


def test_workload_names_keep_as_many_folders_as_tell_them_apart() -> None:
    names = workloads.workload_names([Path("c/a/swf.swf"), Path("c/b/swf.swf"),
                                      Path("c/b/x y.gwf")])
    assert list(names.values()) == ["a--swf.swf", "b--swf.swf", "b--x_y.gwf"]
