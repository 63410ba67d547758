"""``nox -s peers``: every example and every dcx-written output of a format, fed to the
software its users feed it to (SimGrid, slurmctld, WfCommons, AccaSim, flux-core).

``python tests/peers/run.py [--only NAME ...]`` from the repository root. It runs the convert
pipeline unless ``build/converted/report.json`` is newer than every example and every dcx
source file, takes the files of each peer's formats from that report (the examples as read,
the outputs as written), installs each peer (``peer_NAME.py --install``; exit 3 skips it
with its reason), runs it on its files, prints one summary line and writes
``build/peers/report.json`` and ``report.md``. Exit 1 when an installed peer rejects a file
or reads it otherwise than dcx (or its script breaks the contract in ``peerlib.py``), else 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

HERE = Path(__file__).resolve().parent
SOURCES = ("examples", "core", "parsing", "formats", "converters", "src", "schemas", "xsd")
"""What the converted files depend on (folders below the repository root)."""
TIMEOUT_S = 1200
EXIT_UNAVAILABLE = 3


@dataclass(frozen=True)
class PeerSpec:
    name: str
    title: str
    """The peer's software, as the docs name it."""
    formats: tuple[str, ...]
    """The dcx formats whose files it checks."""
    note: str = ""
    """What the docs say besides the last run."""


PEERS = (
    PeerSpec("simgrid", "SimGrid", ("simgrid",)),
    PeerSpec("slurm", "Slurm (slurmctld)", ("slurm",)),
    PeerSpec("wfcommons", "WfCommons", ("wfformat",)),
    PeerSpec("accasim", "AccaSim", ("swf",)),
    PeerSpec("flux", "flux-core", ("flux-r",),
             "flux-core's libraries (libflux-core, libflux-idset, libflux-hostlist) are in no "
             "package this project's machines reach: Debian 12 has no flux-core package and "
             "the flux-python wheel ships only the bindings, so the peer is skipped there. "
             "The idset and hostlist rules are checked without it by `tests/test_hostlist.py` "
             "and `tests/test_flux_r.py`."),
)

Status = Literal["accepted", "disagreed", "skipped", "error"]


@dataclass
class PeerRun:
    name: str
    title: str
    formats: tuple[str, ...]
    files: list[str]
    status: Status
    reason: str = ""
    """Why it was skipped or broke the contract."""
    version: str | None = None
    accepted: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in ("disagreed", "error")


# ------------------------------------------------------------------------------ inputs


def files_for(report: dict[str, Any], formats: Sequence[str]) -> list[str]:
    """Every readable input of ``formats`` and every output written in one of them, in the
    report's order."""
    files: list[str] = []
    for entry in report.get("inputs", []):
        if entry.get("format") in formats and entry.get("valid"):
            files.append(entry["path"])
        files += [cell["output"] for cell in entry.get("conversions", [])
                  if cell.get("target") in formats and cell.get("output")]
    return files


def is_fresh(report_path: Path, root: Path, sources: Sequence[str] = SOURCES) -> bool:
    """The report exists and no file it depends on changed since it was written."""
    if not report_path.is_file():
        return False
    written = report_path.stat().st_mtime
    for folder in sources:
        for dirpath, _, names in os.walk(root / folder):
            if any(os.stat(os.path.join(dirpath, name)).st_mtime > written for name in names):
                return False
    return True


def convert(converted: Path, examples: str) -> int:
    return subprocess.run([sys.executable, "-m", "dcx.converters.pipeline", "--out",
                           str(converted), examples], check=False).returncode


# ------------------------------------------------------------------------------ running


def _run(command: list[str], timeout: float) -> subprocess.CompletedProcess[str] | str:
    """The finished process, or why it did not finish."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return f"took more than {timeout:.0f} s"


def _reason(peer: PeerRun, output: str) -> str:
    """A script's one line of why, without the peer's name in front (the summary has it)."""
    return _last_line(output).removeprefix(f"{peer.name}: ") or "unavailable"


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def run_peer(spec: PeerSpec, files: list[str], scripts: Path, timeout: float = TIMEOUT_S,
             python: str = sys.executable) -> PeerRun:
    started = time.monotonic()
    peer = PeerRun(spec.name, spec.title, spec.formats, files, "skipped")
    script = scripts / f"peer_{spec.name}.py"
    if not script.is_file():
        peer.reason = f"no {script.name} yet"
    elif not files:
        peer.reason = f"no {'/'.join(spec.formats)} files"
    else:
        _install_and_check(peer, script, timeout, python)
    peer.seconds = round(time.monotonic() - started, 1)
    return peer


def _install_and_check(peer: PeerRun, script: Path, timeout: float, python: str) -> None:
    installed = _run([python, str(script), "--install"], timeout)
    if isinstance(installed, str) or installed.returncode not in (0, EXIT_UNAVAILABLE):
        peer.status = "error"
        peer.reason = "--install " + (installed if isinstance(installed, str) else
                                      f"exit {installed.returncode}: "
                                      f"{_last_line(installed.stderr or installed.stdout)}")
        return
    if installed.returncode == EXIT_UNAVAILABLE:
        peer.reason = _reason(peer, installed.stdout)
        return
    checked = _run([python, str(script), *peer.files], timeout)
    if isinstance(checked, str):
        peer.status, peer.reason = "error", checked
        return
    if checked.returncode == EXIT_UNAVAILABLE:
        peer.reason = _reason(peer, checked.stdout)
        return
    try:
        verdict = json.loads(_last_line(checked.stdout))
        peer.version = str(verdict["version"])
        peer.accepted = int(verdict["accepted"])
        peer.failures = [{"path": str(f["path"]), "reason": str(f["reason"])}
                         for f in verdict["failures"]]
        counted = int(verdict["checked"])
    except (ValueError, KeyError, TypeError):
        peer.status = "error"
        peer.reason = (f"exit {checked.returncode} without a verdict line: "
                       f"{_last_line(checked.stderr or checked.stdout)}")
        return
    consistent = (counted == len(peer.files) and peer.accepted + len(peer.failures) == counted
                  and checked.returncode == (1 if peer.failures else 0))
    if not consistent:
        peer.status = "error"
        peer.reason = (f"verdict says {peer.accepted}/{counted} accepted with "
                       f"{len(peer.failures)} failures and exit {checked.returncode}, "
                       f"for {len(peer.files)} files")
        return
    peer.status = "disagreed" if peer.failures else "accepted"


# ------------------------------------------------------------------------------ reports


def summary_line(runs: Sequence[PeerRun]) -> str:
    parts = []
    for run in runs:
        if run.status == "skipped":
            parts.append(f"{run.name} skipped ({run.reason})")
        elif run.status == "error":
            parts.append(f"{run.name} ERROR ({run.reason})")
        else:
            parts.append(f"{run.name} {run.accepted}/{len(run.files)}")
    return "peers: " + ", ".join(parts)


def report_json(runs: Sequence[PeerRun]) -> dict[str, Any]:
    return {"created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "summary": summary_line(runs),
            "peers": [{**asdict(run), "formats": list(run.formats)} for run in runs]}


def report_markdown(runs: Sequence[PeerRun]) -> str:
    lines = ["# dcx outputs read by the peers' own software", "", summary_line(runs), "",
             "| peer | checks | version | accepted | result |", "| --- | --- | --- | --- | --- |"]
    for run in runs:
        result = {"accepted": "accepted", "disagreed": "DISAGREES",
                  "skipped": f"skipped: {run.reason}", "error": f"ERROR: {run.reason}"}[run.status]
        counted = f"{run.accepted}/{len(run.files)}" if run.status in ("accepted",
                                                                         "disagreed") else ""
        lines.append(f"| {run.title} | {', '.join(run.formats)} | {run.version or ''} | "
                     f"{counted} | {result} |")
    failures = [(run, failure) for run in runs for failure in run.failures]
    if failures:
        lines += ["", "## Disagreements", ""]
        lines += [f"- {run.name}: `{failure['path']}`: {failure['reason']}"
                  for run, failure in failures]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/peers/run.py", description=__doc__)
    parser.add_argument("--converted", default="build/converted", type=Path)
    parser.add_argument("--examples", default="examples")
    parser.add_argument("--out", default="build/peers", type=Path)
    parser.add_argument("--scripts", default=HERE, type=Path, help="where peer_NAME.py are")
    parser.add_argument("--no-convert", action="store_true",
                        help="use the converted files' report as it is")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these peers")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S,
                        help="seconds for each peer's install, and again for its check")
    args = parser.parse_args(argv)
    report_path = args.converted / "report.json"
    if not args.no_convert and not is_fresh(report_path, Path.cwd()):
        status = convert(args.converted, args.examples)
        if status != 0:
            print(f"peers: the convert pipeline failed (exit {status})", file=sys.stderr)
            return status
    report = json.loads(report_path.read_text(encoding="utf-8"))
    chosen = [spec for spec in PEERS if not args.only or spec.name in args.only]
    runs = []
    for spec in chosen:
        run = run_peer(spec, files_for(report, spec.formats), args.scripts, args.timeout)
        print(f"peers: {summary_line([run])[len('peers: '):]} in {run.seconds} s",
              file=sys.stderr)
        runs.append(run)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report_json(runs), indent=2) + "\n",
                                          encoding="utf-8")
    (args.out / "report.md").write_text(report_markdown(runs), encoding="utf-8")
    for run in runs:
        for failure in run.failures:
            print(f"{run.name}: {failure['path']}: {failure['reason']}", file=sys.stderr)
    print(summary_line(runs))
    return 1 if any(run.failed for run in runs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
