"""The peers page and each format page's "Accepted by" section: which software outside dcx
reads dcx's output of a format (``tests/peers/run.py``, run by ``nox -s peers``) and what
its last run, ``build/peers/report.json``, recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dcxdocs.markdown import admonition, cell, code, fenced, table
from dcxdocs.reference_pages import _load_file_module

PAGE = "reference/peers.md"
HOW_TO_RUN = ("python -m nox -s peers    # build/peers/report.{md,json}\n"
              "python -m nox -s docs")


def peer_specs(repo_root: Path) -> list[Any]:
    """The driver's ``PEERS`` (name, title, formats); empty when the checkout has none."""
    module = _load_file_module(repo_root / "tests" / "peers" / "run.py", "dcx_docs_peers")
    return list(getattr(module, "PEERS", ()) or ())


def last_run(repo_root: Path) -> dict[str, Any] | None:
    """``build/peers/report.json`` as written by the last ``nox -s peers``, or ``None``."""
    path = repo_root / "build" / "peers" / "report.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) and isinstance(report.get("peers"), list) \
        else None


def _result(peer: dict[str, Any]) -> str:
    status = peer.get("status")
    if status in ("accepted", "disagreed"):
        word = "accepted" if status == "accepted" else "**disagrees**"
        return f"{word}: {peer.get('accepted')} of {len(peer.get('files', []))} files"
    return f"{'skipped' if status == 'skipped' else '**error**'}: {cell(str(peer.get('reason')))}"


def peers_page(repo_root: Path) -> str:
    specs = peer_specs(repo_root)
    parts = ["# Peers\n",
             "dcx's own rules accept every file it writes; `nox -s peers` asks the software "
             "the files are written for. It converts `examples/` (unless `build/converted` "
             "is up to date), installs each peer with apt or pip, and gives it every example "
             "and every dcx-written output of its formats. A peer that cannot be installed "
             "is skipped with its reason; one that rejects a file, or reads it otherwise "
             "than dcx, fails the run. CI runs it after the tests.\n",
             table(("Peer", "Checks dcx's", "How"),
                   [(spec.title, ", ".join(code(name) for name in spec.formats),
                     code(f"tests/peers/peer_{spec.name}.py")) for spec in specs]),
             *(f"**{spec.title}.** {spec.note}\n" for spec in specs if spec.note),
             "## Last run\n"]
    report = last_run(repo_root)
    if report is None:
        parts.append(admonition(
            "info", "No peer run recorded in this build",
            "This table comes from `build/peers/report.json`, which this build did not "
            "find. Run the peers, then rebuild the site:\n\n" + fenced(HOW_TO_RUN, "sh")))
        return "\n".join(parts)
    parts.append(f"From `build/peers/report.json`, written {report.get('created', '')}:\n")
    parts.append(code(str(report.get("summary", ""))) + "\n")
    parts.append(table(("Peer", "Formats", "Version", "Result"),
                       [(cell(str(peer.get("title", peer.get("name")))),
                         ", ".join(code(name) for name in peer.get("formats", [])),
                         cell(str(peer.get("version") or "")), _result(peer))
                        for peer in report["peers"]]))
    failures = [(peer["name"], failure) for peer in report["peers"]
                for failure in peer.get("failures", [])]
    if failures:
        parts.append("### Disagreements\n")
        parts.append(table(("Peer", "File", "Reason"),
                           [(name, code(failure["path"]), cell(failure["reason"]))
                            for name, failure in failures]))
    return "\n".join(parts)


def format_section(format_name: str, repo_root: Path) -> str:
    """What a format page says about the peer that reads dcx's output ("" for a format no
    peer checks)."""
    specs = [spec for spec in peer_specs(repo_root) if format_name in spec.formats]
    if not specs:
        return ""
    report = last_run(repo_root)
    recorded = {peer.get("name"): peer for peer in (report or {}).get("peers", [])}
    lines = ["## Accepted by\n"]
    for spec in specs:
        peer = recorded.get(spec.name)
        said = (f"`nox -s peers` gives {spec.title} every `{format_name}` file dcx writes "
                f"and every example (`tests/peers/peer_{spec.name}.py`). ")
        if peer is None:
            said += "No peer run is recorded in this build."
        elif peer.get("status") == "accepted":
            said += (f"Last run ({report.get('created', '') if report else ''}): "
                     f"{spec.title} {peer.get('version')} accepted all "
                     f"{len(peer.get('files', []))} files.")
        else:
            said += (f"Last run ({report.get('created', '') if report else ''}): "
                     f"{_result(peer)}.")
        lines.append(said + f" See [Peers](../{PAGE}).\n")
        if spec.note:
            lines.append(spec.note + "\n")
    return "\n".join(lines)
