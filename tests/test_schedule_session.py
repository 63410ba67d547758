"""What ``nox -s schedule`` prints after the sweep (``python -m dcx.scheduler.experiments``):
one line per workload it ran or skipped, with why, and a failure when nothing ran."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dcx.scheduler import experiments

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(autouse=True)
def no_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plots take most of the time and are not what is tested here."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_one_line_per_workload_run_or_skipped_and_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own_machines = EXAMPLES / "haizea" / "mixed-site.lwf"
    site_only = EXAMPLES / "haizea" / "site.xml"
    no_machines = EXAMPLES / "gwf" / "grid-archive.gwf"
    another = EXAMPLES / "gwf" / "montage-workflow.gwf"
    no_jobs = tmp_path / "no-jobs.swf"
    no_jobs.write_text("; MaxNodes: 4\n; MaxProcs: 64\n")
    out = tmp_path / "out"
    status = experiments.main([str(path) for path in (own_machines, site_only, no_machines,
                                                      another, no_jobs)]
                              + ["--out", str(out), "--corpus", str(tmp_path / "none")])
    assert status == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"experiments: note: {out}: no plots: they need matplotlib, the plots extra "
        "(pip install 'dcx[plots]'); the other files are written",
        f"experiments: ran {own_machines} (4 tasks, on its own machines)",
        f"experiments: skipped: {site_only}: holds no workload",
        f"experiments: skipped: {no_jobs}: holds no job to schedule",
        "experiments: skipped 2 workloads without machines of their own: no environment to "
        f"run them on (give --env, or set DCX_CORPUS: {tmp_path / 'none' / 'setup.json'} not "
        "found); tables.md lists them",
        f"experiments: scheduled 1 workload of 5 with the nine SC18 policies; wrote {out}/"
        "tables.md and tables.json",
    ]
    tables = (out / "tables.md").read_text()
    assert f"- `{no_machines}`: the workload file has no machines of its own" in tables


def test_a_run_that_schedules_nothing_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    too_big = tmp_path / "big.swf"
    too_big.write_text("1 0 0 100 100000 -1 -1 100000 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    status = experiments.main([str(too_big), "--out", str(tmp_path / "out"),
                               "--env", str(EXAMPLES / "environment" / "small-cluster.json")])
    assert status == 1
    lines = capsys.readouterr().err.splitlines()[1:]  # after the note on plots
    assert len(lines) == 2 and lines[0].startswith(f"experiments: skipped: {too_big}: task 1")
    assert lines[1] == (f"experiments: error: none of 1 workload could be scheduled (above, "
                        f"why); wrote {tmp_path / 'out'}/tables.md")
