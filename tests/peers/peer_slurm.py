"""Slurm's own controller as the judge of slurm.conf files: does slurmctld read each file's
nodes and partitions as dcx does?

    python tests/peers/peer_slurm.py --install   # Debian slurmctld, slurm-client, munge
    python tests/peers/peer_slurm.py FILE...     # check each slurm.conf-format file

Exit codes: 0 every file accepted, 1 some not, 3 Slurm unavailable (one line says why). The
last line of stdout is one JSON object: ``{"peer": "slurm", "version", "checked",
"accepted", "failures": [{"path", "reason"}]}``.

For each file, a temporary folder gets a wrapper slurm.conf with the lines a controller
needs (``ClusterName``, ``SlurmctldHost=localhost``, state and spool folders inside it,
``SlurmUser=root``, munge authentication through a munged of its own on a private socket
with a throwaway key, ports on loopback) and the file's node, partition, DownNodes, NodeSet
and GresTypes lines, every node addressed at 127.0.0.1 (``NodeAddr``: one address serves
every node of a line). ``slurmctld -D`` reads it; ``scontrol show nodes`` (JSON when this
Slurm can print it) gives what it made of each node, compared with what dcx reads from the
file: names, CPUs, sockets, cores, threads, memory, GRES, features, state and partitions.
Both daemons are stopped by their PID whatever happens, each wait bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGES = ("slurmctld", "slurm-client", "munge")
UNAVAILABLE = 3
START_SECONDS = 30.0
STOP_SECONDS = 10.0
COMMAND_SECONDS = 60.0
SECTION_KEYS = frozenset({"nodename", "partitionname", "downnodes", "nodeset", "grestypes"})
"""First keys of the lines taken from a checked file; its other global lines are the
wrapper's to set."""
_FIRST_KEY = re.compile(r"\s*([A-Za-z0-9_.]+)\s*=")
_NODE_ADDR = re.compile(r"""(?i)(?<![A-Za-z0-9_.])NodeAddr\s*=\s*(?:"[^"]*"|\S+)""")
_STATE_WORDS = {"FAILING": {"FAIL", "FAILING"}, "CLOUD": {"CLOUD", "POWERED_DOWN", "IDLE"}}


class Unavailable(RuntimeError):
    """Slurm or munge cannot be run here; the message is the one line that says why."""


# ------------------------------------------------------------------------------ install


def install() -> int:
    """Install the Debian packages unless every tool is already there (idempotent)."""
    if _tools_present():
        return 0
    if shutil.which("apt-get") is None:
        print("slurm: apt-get not found; install slurmctld, slurm-client and munge by hand")
        return UNAVAILABLE
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]):
        try:
            done = subprocess.run(command, env=environment, capture_output=True, text=True,
                                  timeout=900, check=False)
        except (OSError, subprocess.TimeoutExpired) as problem:
            print(f"slurm: {' '.join(command)} failed: {problem}")
            return UNAVAILABLE
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"slurm: {' '.join(command[:2])} failed: {last}")
            return UNAVAILABLE
    if not _tools_present():
        print("slurm: the packages installed, but slurmctld, scontrol or munged is missing")
        return UNAVAILABLE
    return 0


def _tools_present() -> bool:
    return all(shutil.which(tool) for tool in ("slurmctld", "scontrol", "munged"))


def slurm_version() -> str:
    done = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True,
                          timeout=COMMAND_SECONDS, check=False)
    return done.stdout.strip().removeprefix("slurm ").strip() or "unknown"


# ------------------------------------------------------------------------------ daemons


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a daemon this script started, by its PID: TERM, then KILL after a bound."""
    if process.poll() is not None:
        return
    with suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_SECONDS)


@contextmanager
def munge(folder: Path) -> Iterator[Path]:
    """A munged of its own: a throwaway key and a socket inside ``folder``."""
    key = folder / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    sock = folder / "munge.socket"
    log = folder / "munged.log"
    process = subprocess.Popen(
        ["munged", "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
         f"--pid-file={folder / 'munged.pid'}", f"--log-file={log}",
         f"--seed-file={folder / 'munged.seed'}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_SECONDS
        while not sock.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                why = (process.stderr.read().decode(errors="replace") if process.stderr
                       else "") or (log.read_text(errors="replace") if log.exists() else "")
                raise Unavailable(f"munged did not start: {_last_line(why)}")
            time.sleep(0.1)
        yield sock
    finally:
        _stop(process)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


# ------------------------------------------------------------------------------ the wrapper


def node_section(text: str) -> str:
    """The file's node, partition, DownNodes, NodeSet and GresTypes lines (continuations
    joined), each NodeName line (but DEFAULT) addressed at 127.0.0.1."""
    kept: list[str] = []
    logical = ""
    for raw in text.splitlines():
        body = raw.rstrip()
        if body.endswith("\\") and not body.endswith("\\\\"):
            logical += body[:-1] + " "
            continue
        logical += raw
        line, logical = logical, ""
        match = _FIRST_KEY.match(line)
        if match is None or match.group(1).lower() not in SECTION_KEYS:
            continue
        if match.group(1).lower() == "nodename" and not re.match(
                r"(?i)\s*NodeName\s*=\s*DEFAULT(\s|$)", line):
            line = _NODE_ADDR.sub("", line.split("#", 1)[0]).rstrip() + " NodeAddr=127.0.0.1"
        kept.append(line)
    return "\n".join(kept) + "\n"


def wrapper(folder: Path, section: Path, sock: Path) -> str:
    """The controller's lines around the checked file's node section (``Include``)."""
    return "\n".join([
        "ClusterName=dcxpeer",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={_free_port()}",
        f"SlurmdPort={_free_port()}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={sock}",
        f"StateSaveLocation={folder / 'state'}",
        f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
        f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}",
        "SlurmctldDebug=info",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "ReturnToService=0",
        "PrivateData=cloud",  # shows powered-down CLOUD nodes, which scontrol hides
        f"Include {section}",
        "",
    ])


# ------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class Node:
    """What one side says about a node."""

    cpus: int
    sockets: int
    cores: int
    threads: int
    memory: int
    gres: str
    features: tuple[str, ...]
    state: str
    """The state word written (or ``UNKNOWN``)."""
    partitions: tuple[str, ...]


def slurm_nodes(conf: Path, sock: Path) -> tuple[dict[str, dict[str, Any]], str]:
    """Every node slurmctld made of ``conf``, as ``scontrol show nodes`` prints it (JSON
    when it can, else one line per node), and which of the two was read."""
    environment = {**os.environ, "SLURM_CONF": str(conf)}
    done = subprocess.run(["scontrol", "--all", "--future", "--json", "show", "nodes"],
                          env=environment, capture_output=True, text=True,
                          timeout=COMMAND_SECONDS, check=False)
    if done.returncode == 0 and done.stdout.lstrip().startswith("{"):
        with suppress(ValueError, KeyError, TypeError):
            return {node["name"]: _from_json(node) for node in json.loads(done.stdout)["nodes"]}, \
                "json"
    done = subprocess.run(["scontrol", "--all", "--future", "-o", "show", "nodes"],
                          env=environment, capture_output=True, text=True,
                          timeout=COMMAND_SECONDS, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"scontrol show nodes failed: {_last_line(done.stderr)}")
    nodes: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "NodeName" in fields:
            nodes[fields["NodeName"]] = _from_text(fields)
    return nodes, "text"


def _from_text(fields: dict[str, str]) -> dict[str, Any]:
    return {"cpus": int(fields["CPUTot"]), "sockets": int(fields["Sockets"]),
            "boards": int(fields.get("Boards", "1")),
            "cores": int(fields["CoresPerSocket"]), "threads": int(fields["ThreadsPerCore"]),
            "memory": int(fields["RealMemory"]), "gres": fields.get("Gres", "(null)"),
            "features": fields.get("AvailableFeatures", "(null)"),
            "state": fields.get("State", ""), "partitions": fields.get("Partitions", "")}


def _from_json(node: dict[str, Any]) -> dict[str, Any]:
    state = node.get("state", "")
    flags = node.get("state_flags", [])
    features = node.get("features", "")
    return {"cpus": int(node["cpus"]), "sockets": int(node["sockets"]),
            "boards": int(node.get("boards", 1)), "cores": int(node["cores"]),
            "threads": int(node["threads"]), "memory": int(node["real_memory"]),
            "gres": node.get("gres") or "(null)",
            "features": ",".join(features) if isinstance(features, list) else features or "",
            "state": "+".join([state if isinstance(state, str) else "+".join(state),
                               *flags]).upper(),
            "partitions": ",".join(node.get("partitions") or [])}


def dcx_nodes(data: bytes) -> tuple[dict[str, Node], str | None]:
    """What dcx reads from the file, per node; or why dcx refuses it."""
    from dcx.formats import slurm

    result = slurm.read(data)
    if result.document is None or result.document.environment is None:
        errors = [d.render() for d in result.diagnostics if d.is_error]
        return {}, "dcx refuses it: " + (errors[0] if errors else "no document")
    defaulted = [d.render() for d in result.diagnostics if d.code == "slurm.default-cpus"]
    if defaulted:
        # Slurm starts such a node with one CPU as silently as dcx reads it: both would agree
        # on a file whose writer dropped the counts, so the file itself is the disagreement
        return {}, "a node has no CPU count, so Slurm gives it 1 CPU: " + defaulted[0]
    environment = result.document.environment
    member_of: dict[str, list[str]] = {}
    names = [machine.name or "" for machine in environment.machines()]
    for partition in environment.partitions:
        for name in partition.machines if partition.machines is not None else names:
            member_of.setdefault(name, []).append(partition.name)
    nodes: dict[str, Node] = {}
    for machine in environment.machines():
        extras = machine.extras
        sockets = len(machine.cpus)
        cores = machine.cpus[0].cores if machine.cpus else 1
        threads = int(extras.get("slurm:ThreadsPerCore", "1"))
        cpus = int(extras.get("slurm:CPUs", sockets * cores * threads))
        word = machine.state_label or slurm.WORD_FOR[machine.state] or "UNKNOWN"
        nodes[machine.name or ""] = Node(
            cpus=cpus, sockets=sockets, cores=cores, threads=threads,
            memory=int(machine.memory_mb) if machine.memory else 1,
            gres=_gres(machine), features=machine.features, state=word,
            partitions=tuple(member_of.get(machine.name or "", ())))
    return nodes, None


def _gres(machine: Any) -> str:
    counts: dict[str | None, int] = {}
    for gpu in machine.gpus:
        counts[gpu.model] = counts.get(gpu.model, 0) + 1
    items = [f"gpu:{kind}:{count}" if kind else f"gpu:{count}"
             for kind, count in counts.items()]
    items += [f"{r.name}:{r.type}:{int(r.amount)}" if r.type else f"{r.name}:{int(r.amount)}"
              for r in machine.resources]
    return ",".join(sorted(items))


def disagreements(ours: dict[str, Node], theirs: dict[str, dict[str, Any]]) -> list[str]:
    """Where slurmctld's nodes differ from dcx's reading, one line each (the first few)."""
    found: list[str] = []
    if set(ours) != set(theirs):
        only_dcx = sorted(set(ours) - set(theirs))[:3]
        only_slurm = sorted(set(theirs) - set(ours))[:3]
        found.append(f"nodes differ: {len(ours)} in dcx, {len(theirs)} in slurmctld "
                     f"(only dcx: {only_dcx}, only slurmctld: {only_slurm})")
    for name in [name for name in ours if name in theirs]:
        mine, slurm = ours[name], theirs[name]
        checks = {
            "CPUs": (mine.cpus, slurm["cpus"]), "Sockets": (mine.sockets, slurm["sockets"]),
            "CoresPerSocket": (mine.cores, slurm["cores"]),
            "ThreadsPerCore": (mine.threads, slurm["threads"]),
            "RealMemory": (mine.memory, slurm["memory"]),
            "Gres": (mine.gres, _slurm_gres(slurm["gres"])),
            "Features": (",".join(mine.features), _null(slurm["features"])),
            "Partitions": (",".join(sorted(mine.partitions)),
                           ",".join(sorted(filter(None, slurm["partitions"].split(","))))),
        }
        for key, (dcx_value, slurm_value) in checks.items():
            if dcx_value != slurm_value:
                found.append(f"{name}: {key} is {dcx_value!r} in dcx, {slurm_value!r} in "
                             "slurmctld")
        tokens = set(re.split(r"[+*~#!%$@^-]+", slurm["state"].upper())) - {""}
        if not tokens & _STATE_WORDS.get(mine.state, {mine.state}):
            found.append(f"{name}: State is {mine.state} in dcx, {slurm['state']} in "
                         "slurmctld")
        if len(found) >= 5:
            break
    return found


def _null(value: str) -> str:
    return "" if value in ("(null)", "") else value


def _slurm_gres(value: str) -> str:
    items = [re.sub(r"\(.*\)$", "", item) for item in _null(value).split(",") if item]
    return ",".join(sorted(items))


# ------------------------------------------------------------------------------ checking


def check(path: Path) -> str | None:
    """Why slurmctld disagrees with dcx about ``path``, or ``None`` when it agrees."""
    data = path.read_bytes()
    ours, refused = dcx_nodes(data)
    if refused is not None:
        return refused
    with tempfile.TemporaryDirectory(prefix="dcx-peer-slurm-") as name:
        folder = Path(name)
        for sub in ("state", "spool"):
            (folder / sub).mkdir()
        section = folder / "nodes.conf"
        section.write_text(node_section(data.decode("utf-8", errors="replace")))
        with munge(folder) as sock:
            conf = folder / "slurm.conf"
            conf.write_text(wrapper(folder, section, sock))
            return _with_controller(conf, folder, sock, ours)


def _with_controller(conf: Path, folder: Path, sock: Path, ours: dict[str, Node]) -> str | None:
    environment = {**os.environ, "SLURM_CONF": str(conf)}
    log = folder / "slurmctld.log"
    process = subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)], env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if process.poll() is not None:
                why = process.stderr.read().decode(errors="replace") if process.stderr else ""
                if log.exists():
                    why += log.read_text(errors="replace")
                fatal = [line for line in why.splitlines() if "fatal" in line.lower()
                         or "error" in line.lower()]
                return f"slurmctld refused it: {_last_line(fatal[-1] if fatal else why)}"
            ping = subprocess.run(["scontrol", "ping"], env=environment, capture_output=True,
                                  text=True, timeout=COMMAND_SECONDS, check=False)
            if "UP" in ping.stdout:
                break
            if time.monotonic() > deadline:
                return f"slurmctld did not answer within {START_SECONDS:.0f} s"
            time.sleep(0.3)
        theirs, _ = slurm_nodes(conf, sock)
        found = disagreements(ours, theirs)
        return "; ".join(found) if found else None
    finally:
        _stop(process)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--install", action="store_true", help="install Slurm and munge")
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args(argv)
    if args.install:
        return install()
    if not _tools_present():
        print("slurm: slurmctld, scontrol or munged not found (run with --install first)")
        return UNAVAILABLE
    version = slurm_version()
    failures: list[dict[str, str]] = []
    accepted = 0
    for path in args.files:
        try:
            reason = check(path)
        except Unavailable as problem:
            print(f"slurm: {problem}")
            return UNAVAILABLE
        except (OSError, RuntimeError, subprocess.TimeoutExpired, ValueError) as problem:
            reason = f"{type(problem).__name__}: {problem}"
        if reason is None:
            accepted += 1
            print(f"{path}: accepted")
        else:
            failures.append({"path": str(path), "reason": reason})
            print(f"{path}: {reason}")
    print(json.dumps({"peer": "slurm", "version": version, "checked": len(args.files),
                      "accepted": accepted, "failures": failures}))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
