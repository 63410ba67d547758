"""The ``nox -s peers`` driver (``tests/peers/run.py``) on fake peer scripts: which files each
peer gets, the summary line, a skip on exit 3, failure when a peer disagrees or breaks the
contract; the docs pages that show the last run's report; and, where a peer's software is
installed, that it fails deliberately broken outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.peers import run as driver

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "site" / "hooks"))

from dcxdocs import peers as dcx_peers  # noqa: E402

REPORT = {"inputs": [
    {"path": "examples/swf/a.swf", "format": "swf", "valid": True, "conversions": [
        {"target": "swf", "output": "build/converted/a.swf/swf.swf"},
        {"target": "wfformat", "output": "build/converted/a.swf/wfformat.json"},
        {"target": "simgrid", "output": None}]},
    {"path": "examples/swf/broken.swf", "format": "swf", "valid": False, "conversions": []},
    {"path": "examples/simgrid/p.xml", "format": "simgrid", "valid": True, "conversions": [
        {"target": "simgrid", "output": "build/converted/p.xml/simgrid.xml"},
        {"target": "swf", "output": None}]},
    {"path": "notes.txt", "format": None, "valid": False, "conversions": []},
]}


def test_files_for_takes_readable_examples_and_written_outputs_of_the_peers_formats():
    assert driver.files_for(REPORT, ("swf",)) == ["examples/swf/a.swf",
                                                 "build/converted/a.swf/swf.swf"]
    assert driver.files_for(REPORT, ("simgrid",)) == ["examples/simgrid/p.xml",
                                                     "build/converted/p.xml/simgrid.xml"]
    assert driver.files_for(REPORT, ("wfformat",)) == ["build/converted/a.swf/wfformat.json"]
    assert driver.files_for(REPORT, ("flux-r",)) == []


def test_every_peer_named_in_the_contract_has_its_formats():
    assert {spec.name: spec.formats for spec in driver.PEERS} == {
        "simgrid": ("simgrid",), "slurm": ("slurm",), "wfcommons": ("wfformat",),
        "accasim": ("swf",), "flux": ("flux-r",)}


def test_a_report_older_than_a_source_is_not_fresh(tmp_path):
    (tmp_path / "examples").mkdir()
    example = tmp_path / "examples" / "a.swf"
    example.write_text("1 0 -1 10 1\n")
    report = tmp_path / "report.json"
    assert not driver.is_fresh(report, tmp_path)
    report.write_text("{}")
    os.utime(example, (1, 1))
    assert driver.is_fresh(report, tmp_path)
    os.utime(example, (report.stat().st_mtime + 10,) * 2)
    assert not driver.is_fresh(report, tmp_path)


# ------------------------------------------------------------------ fake peers

ACCEPTING = """
    if sys.argv[1:] == ["--install"]:
        sys.exit(0)
    bad = [p for p in sys.argv[1:] if "bad" in open(p).read()]
    print("noise a peer library printed")
    print(json.dumps({"peer": NAME, "version": "9.9", "checked": len(sys.argv) - 1,
                      "accepted": len(sys.argv) - 1 - len(bad),
                      "failures": [{"path": p, "reason": "says bad"} for p in bad]}))
    sys.exit(1 if bad else 0)
"""
UNINSTALLABLE = """
    print(NAME + ": cannot install: libfoo is in no package this machine can reach")
    sys.exit(3)
"""
NO_VERDICT = """
    if sys.argv[1:] == ["--install"]:
        sys.exit(0)
    print("Traceback: something broke", file=sys.stderr)
    sys.exit(1)
"""
LYING = """
    if sys.argv[1:] == ["--install"]:
        sys.exit(0)
    print(json.dumps({"peer": NAME, "version": "1", "checked": 1, "accepted": 1,
                      "failures": []}))
    sys.exit(0)
"""


def _fake(folder: Path, name: str, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"peer_{name}.py").write_text(
        f"import json, sys\nNAME = {name!r}\n" + textwrap.dedent(body))


def _files(folder: Path, *contents: str) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, text in enumerate(contents):
        path = folder / f"f{index}.txt"
        path.write_text(text)
        paths.append(str(path))
    return paths


def _spec(name: str) -> driver.PeerSpec:
    return driver.PeerSpec(name, name.title(), ("swf",))


def test_a_peer_accepting_every_file(tmp_path):
    _fake(tmp_path / "scripts", "good", ACCEPTING)
    run = driver.run_peer(_spec("good"), _files(tmp_path, "ok", "ok"), tmp_path / "scripts")
    assert (run.status, run.version, run.accepted, run.failures) == ("accepted", "9.9", 2, [])
    assert not run.failed
    assert driver.summary_line([run]) == "peers: good 2/2"


def test_a_peer_rejecting_a_file_fails_the_run(tmp_path):
    _fake(tmp_path / "scripts", "picky", ACCEPTING)
    files = _files(tmp_path, "ok", "bad")
    run = driver.run_peer(_spec("picky"), files, tmp_path / "scripts")
    assert run.status == "disagreed" and run.failed
    assert run.failures == [{"path": files[1], "reason": "says bad"}]
    assert driver.summary_line([run]) == "peers: picky 1/2"


def test_exit_3_on_install_skips_the_peer_with_its_line_named_once(tmp_path):
    _fake(tmp_path / "scripts", "absent", UNINSTALLABLE)
    run = driver.run_peer(_spec("absent"), _files(tmp_path, "ok"), tmp_path / "scripts")
    assert run.status == "skipped" and not run.failed
    assert run.reason == "cannot install: libfoo is in no package this machine can reach"


def test_a_missing_script_or_no_files_skips(tmp_path):
    missing = driver.run_peer(_spec("later"), _files(tmp_path, "ok"), tmp_path / "scripts")
    assert (missing.status, missing.reason) == ("skipped", "no peer_later.py yet")
    _fake(tmp_path / "scripts", "idle", ACCEPTING)
    idle = driver.run_peer(_spec("idle"), [], tmp_path / "scripts")
    assert (idle.status, idle.reason) == ("skipped", "no swf files")


def test_a_script_breaking_the_contract_is_an_error(tmp_path):
    _fake(tmp_path / "scripts", "broken", NO_VERDICT)
    _fake(tmp_path / "scripts", "lying", LYING)
    files = _files(tmp_path, "ok", "ok")
    broken = driver.run_peer(_spec("broken"), files, tmp_path / "scripts")
    assert broken.status == "error" and broken.failed
    assert "without a verdict line: Traceback: something broke" in broken.reason
    lying = driver.run_peer(_spec("lying"), files, tmp_path / "scripts")
    assert lying.status == "error" and "for 2 files" in lying.reason


def test_main_summarises_writes_reports_and_fails_on_disagreement(tmp_path, monkeypatch,
                                                                 capsys):
    scripts = tmp_path / "scripts"
    for name in ("simgrid", "wfcommons", "accasim"):
        _fake(scripts, name, ACCEPTING)
    _fake(scripts, "flux", UNINSTALLABLE)
    good, bad = _files(tmp_path / "files", "ok", "bad")
    converted = tmp_path / "converted"
    converted.mkdir()
    (converted / "report.json").write_text(json.dumps({"inputs": [
        {"path": good, "format": "simgrid", "valid": True, "conversions": [
            {"target": "swf", "output": bad}, {"target": "flux-r", "output": good}]}]}))
    argv = ["--converted", str(converted), "--out", str(tmp_path / "out"), "--scripts",
            str(scripts), "--no-convert"]
    assert driver.main(argv) == 1
    line = ("peers: simgrid 1/1, slurm skipped (no peer_slurm.py yet), wfcommons skipped "
            "(no wfformat files), accasim 0/1, flux skipped (cannot install: libfoo is in "
            "no package this machine can reach)")
    assert capsys.readouterr().out.strip() == line
    written = json.loads((tmp_path / "out" / "report.json").read_text())
    assert written["summary"] == line
    assert [peer["status"] for peer in written["peers"]] == [
        "accepted", "skipped", "skipped", "disagreed", "skipped"]
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "| AccaSim | swf | 9.9 | 0/1 | DISAGREES |" in markdown
    assert f"- accasim: `{bad}`: says bad" in markdown
    assert driver.main([*argv, "--only", "simgrid", "flux"]) == 0


# ------------------------------------------------------------------ the docs showing the report


def _docs_checkout(tmp_path: Path, report: dict[str, object] | None) -> Path:
    """A checkout holding the driver and, when given, a last run's report."""
    (tmp_path / "tests" / "peers").mkdir(parents=True)
    (tmp_path / "tests" / "peers" / "run.py").write_text(
        (REPO / "tests" / "peers" / "run.py").read_text())
    if report is not None:
        (tmp_path / "build" / "peers").mkdir(parents=True)
        (tmp_path / "build" / "peers" / "report.json").write_text(json.dumps(report))
    return tmp_path


def test_docs_say_clearly_when_no_peer_run_is_recorded(tmp_path):
    root = _docs_checkout(tmp_path, None)
    page = dcx_peers.peers_page(root)
    assert "No peer run recorded in this build" in page
    assert "| AccaSim | `swf` | `tests/peers/peer_accasim.py` |" in page
    section = dcx_peers.format_section("swf", root)
    assert section.startswith("## Accepted by")
    assert "`nox -s peers` gives AccaSim every `swf` file dcx writes" in section
    assert "No peer run is recorded in this build." in section
    assert dcx_peers.format_section("haizea", root) == ""
    assert "Debian 12 has no flux-core package" in dcx_peers.format_section("flux-r", root)
    assert "Debian 12 has no flux-core package" in page


def test_docs_show_the_last_runs_table_and_each_formats_peer_version(tmp_path):
    runs = [driver.PeerRun("accasim", "AccaSim", ("swf",), ["a.swf", "b.swf"], "disagreed",
                           version="1.1.3", accepted=1,
                           failures=[{"path": "b.swf", "reason": "line 2: skips it"}]),
            driver.PeerRun("wfcommons", "WfCommons", ("wfformat",), ["w.json"], "accepted",
                           version="1.6", accepted=1),
            driver.PeerRun("flux", "flux-core", ("flux-r",), ["r.json"], "skipped",
                           reason="cannot install: no libflux")]
    root = _docs_checkout(tmp_path, driver.report_json(runs))
    page = dcx_peers.peers_page(root)
    assert "| AccaSim | `swf` | 1.1.3 | **disagrees**: 1 of 2 files |" in page
    assert "| WfCommons | `wfformat` | 1.6 | accepted: 1 of 1 files |" in page
    assert "| flux-core | `flux-r` |  | skipped: cannot install: no libflux |" in page
    assert "| accasim | `b.swf` | line 2: skips it |" in page
    assert "WfCommons 1.6 accepted all 1 files." in dcx_peers.format_section("wfformat", root)
    assert "**disagrees**: 1 of 2 files" in dcx_peers.format_section("swf", root)


# ------------------------------------------------------------------ broken outputs, real peers

SWF_LINE = "{job} {submit} -1 {runtime} {processors} -1 -1 {processors} 200" + " -1" * 9 + "\n"


def _peer(name: str, module: str, *files: Path) -> tuple[int, dict[str, Any]]:
    """``peer_NAME.py FILE...`` run by this interpreter, where the peer's software is
    installed (``python tests/peers/peer_NAME.py --install`` installs it; ``nox -s peers``
    does so in its own environment, the test suite does not)."""
    pytest.importorskip(module, reason=f"{name}'s software is not installed in this "
                                       f"environment (python tests/peers/peer_{name}.py "
                                       f"--install)")
    done = subprocess.run([sys.executable, str(REPO / "tests" / "peers" / f"peer_{name}.py"),
                           *map(str, files)], capture_output=True, text=True, timeout=600,
                          check=False)
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def test_accasim_fails_a_job_of_0_processors_and_a_decimal_runtime(tmp_path):
    good = tmp_path / "good.swf"
    good.write_text(SWF_LINE.format(job=1, submit=0, runtime=100, processors=4)
                    + SWF_LINE.format(job=2, submit=5, runtime=50, processors=2))
    no_processors = tmp_path / "no-processors.swf"
    no_processors.write_text(SWF_LINE.format(job=1, submit=0, runtime=100, processors=0))
    decimal = tmp_path / "decimal.swf"
    decimal.write_text(SWF_LINE.format(job=1, submit=0, runtime=3.2, processors=1))
    status, verdict = _peer("accasim", "accasim", good, no_processors, decimal)
    assert status == 1
    assert (verdict["checked"], verdict["accepted"]) == (3, 1)
    reasons = {Path(f["path"]).name: f["reason"] for f in verdict["failures"]}
    assert set(reasons) == {"no-processors.swf", "decimal.swf"}
    assert "processor" in reasons["no-processors.swf"]
    assert "AccaSim's SWF parser skips" in reasons["decimal.swf"]


def test_wfcommons_fails_an_instance_missing_a_tasks_parent(tmp_path):
    def instance(tasks: list[dict[str, Any]]) -> dict[str, Any]:
        return {"name": "w", "schemaVersion": "1.5", "workflow": {
            "specification": {"tasks": tasks, "files": []},
            "execution": {"makespanInSeconds": 3, "executedAt": "2024-01-01T00:00:00Z",
                          "tasks": [{"id": t["id"], "runtimeInSeconds": 1} for t in tasks]}}}

    first: dict[str, Any] = {"name": "a", "id": "a", "parents": [], "children": ["b"]}
    second: dict[str, Any] = {"name": "b", "id": "b", "parents": ["a"], "children": []}
    good, orphan = tmp_path / "good.json", tmp_path / "orphan.json"
    good.write_text(json.dumps(instance([first, second])))
    orphan.write_text(json.dumps(instance([second])))
    status, verdict = _peer("wfcommons", "wfcommons", good, orphan)
    assert status == 1
    assert verdict["accepted"] == 1
    [failure] = verdict["failures"]
    assert failure["path"] == str(orphan)
    assert 'Parent task "a" is not declared' in failure["reason"]


def _peer_module(name: str) -> Any:
    """A peer script loaded as a module, for its checks that run before the peer's software
    (none of them needs it installed)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"peer_{name}",
                                                  REPO / "tests" / "peers" / f"peer_{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(f"peer_{name}", module)  # its dataclasses look themselves up there
    spec.loader.exec_module(sys.modules[f"peer_{name}"])
    return sys.modules[f"peer_{name}"]


def test_slurm_fails_a_node_written_without_its_cpu_count(tmp_path):
    """A writer that drops a node's CPUs: Slurm would start it with one CPU as silently as
    dcx reads it, so the peer fails the file before any controller starts."""
    peer = _peer_module("slurm")
    broken = tmp_path / "slurm.conf"
    broken.write_text("NodeName=n[1-4] RealMemory=1024\nPartitionName=all Nodes=ALL\n")
    reason = peer.check(broken)
    assert reason is not None and "Slurm gives it 1 CPU" in reason
    nodes, refused = peer.dcx_nodes(b"NodeName=n[1-4] CPUs=8 RealMemory=1024\n")
    assert refused is None and {node.cpus for node in nodes.values()} == {8}
