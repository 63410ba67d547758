"""The SimGrid peer: does SimGrid itself load each platform file as dcx reads it?

    python tests/peers/peer_simgrid.py --install   # Debian python3-simgrid, idempotent
    python tests/peers/peer_simgrid.py FILE...     # check each SimGrid platform file

For each file a child process of Debian's ``/usr/bin/python3`` (the interpreter SimGrid's
bindings are built for, not dcx's environment) loads the platform with
``Engine.load_platform`` and lists its hosts; this process reads the same file with dcx's
reader and compares host count, names, speeds (of the host's power state) and core counts, and
the links dcx writes (each flat cluster's private links, ``bw`` and ``lat``: its first and
last host's). Then the child runs a small simulation: one actor per host (of the first
``SIMULATED_HOSTS``) executes ``WORK_FLOPS`` on it, and each must finish at ``WORK_FLOPS /
speed`` (an actor runs on one core). A platform with energy figures (a ``wattage_per_state``
prop) is loaded with SimGrid's energy plugin, which aborts when a host's wattages do not match
its power states.

The last line of stdout is one JSON object: ``{"peer": "simgrid", "version": "3.32.0",
"checked": N, "accepted": M, "failures": [{"path": ..., "reason": ...}]}``. Exit codes: 0
when every file is accepted, 1 otherwise, 3 when SimGrid is unavailable (``--install``: it
cannot be installed).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PEER = "simgrid"
DEBIAN_PYTHON = "/usr/bin/python3"
PACKAGE = "python3-simgrid"
WORK_FLOPS = 1e9
SIMULATED_HOSTS = 512
"""Hosts simulated per file: one thread per actor, and SimGrid's own 65,536-host crossbar
would take minutes; the load and the comparison cover every host."""
RELATIVE_TOLERANCE = 1e-9
CHILD_TIMEOUT_S = 300
EXIT_UNAVAILABLE = 3

CHILD = r"""
import json, sys
import simgrid
from simgrid import Actor, Engine, Link, this_actor

path, work, most, energy = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
wanted = json.load(sys.stdin)
arguments = ["peer", "--log=root.thres:critical"]
if energy:
    arguments.append("--cfg=plugin:host_energy")
engine = Engine(arguments)
engine.load_platform(path)
hosts = engine.all_hosts
links = {}
for name in wanted:
    for candidate in (name, name + "_UP"):
        try:
            link = Link.by_name(candidate)
        except Exception:
            continue
        links[name] = [link.bandwidth, link.latency]
        break
finished = {}

def compute(name):
    this_actor.execute(work)
    finished[name] = Engine.clock

simulated = [host for host in hosts if host.speed > 0][:most]
for host in simulated:
    Actor.create("work-" + host.name, host, compute, host.name)
engine.run()
print(json.dumps({
    "version": simgrid.simgrid_version,
    "hosts": [{"name": h.name, "speed": h.speed, "cores": h.core_count} for h in hosts],
    "links": links,
    "finished": finished,
    "simulated": [host.name for host in simulated],
}))
"""


@dataclass(frozen=True)
class Verdict:
    path: str
    reason: str | None
    """Why SimGrid disagrees with dcx, or ``None`` when it accepts the file."""


def simgrid_version() -> str | None:
    """SimGrid's version through Debian's interpreter, or ``None`` when it cannot load."""
    if not os.path.exists(DEBIAN_PYTHON):
        return None
    done = subprocess.run([DEBIAN_PYTHON, "-c", "import simgrid; print(simgrid.simgrid_version)"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def install() -> int:
    """Install Debian's python3-simgrid (``apt-get update`` once, then ``install -y``)."""
    if simgrid_version() is not None:
        return 0
    if shutil.which("apt-get") is None:
        print(f"{PEER}: cannot install {PACKAGE}: no apt-get here")
        return EXIT_UNAVAILABLE
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        print(f"{PEER}: cannot install {PACKAGE}: apt-get needs root")
        return EXIT_UNAVAILABLE
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", PACKAGE]):
        done = subprocess.run(command, capture_output=True, text=True, env=environment,
                              check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"{PEER}: cannot install {PACKAGE}: {' '.join(command)} failed: {last}")
            return EXIT_UNAVAILABLE
    if simgrid_version() is None:
        print(f"{PEER}: {PACKAGE} is installed but {DEBIAN_PYTHON} cannot import simgrid")
        return EXIT_UNAVAILABLE
    return 0


def dcx_hosts(data: bytes) -> tuple[dict[str, tuple[float, int]] | None, str | None, bool]:
    """What dcx reads: host name -> (speed in flop/s, 0 for none; cores), or why it cannot
    read the file; and whether the platform has energy figures. A Batsim storage host (role
    storage) is left out: it has speed 0 on purpose and never computes."""
    from dcx.formats import simgrid

    result = simgrid.read(data)
    if not result.ok or result.document is None or result.document.environment is None:
        first = next((d.render() for d in result.diagnostics if d.is_error), "no platform")
        return None, f"dcx cannot read it: {first}", False
    hosts: dict[str, tuple[float, int]] = {}
    energy = False
    for machine in result.document.environment.machines():
        if machine.extras.get("simgrid:prop:role") == "storage":
            continue
        hosts[str(machine.name)] = (machine.cpus[0].clock_rate_hz or 0.0, machine.core_count)
        energy = energy or "simgrid:prop:wattage_per_state" in machine.extras
    return hosts, None, energy


def run_simgrid(path: Path, energy: bool, links: dict[str, tuple[float, float]] | None = None
                ) -> tuple[dict[str, Any] | None, str | None]:
    """The child's report on ``path`` (with the bandwidth and latency of the ``links`` named,
    or of their ``_UP`` half), or why SimGrid refused it."""
    try:
        # in a folder of its own: a platform's <config> may turn on tracing, which SimGrid
        # writes to its working directory
        with tempfile.TemporaryDirectory(prefix="dcx-simgrid-") as scratch:
            done = subprocess.run(
                [DEBIAN_PYTHON, "-c", CHILD, str(path.resolve()), repr(WORK_FLOPS),
                 str(SIMULATED_HOSTS), "1" if energy else "0"],
                input=json.dumps(sorted(links or {})), capture_output=True, text=True,
                timeout=CHILD_TIMEOUT_S, check=False, cwd=scratch)
    except subprocess.TimeoutExpired:
        return None, f"SimGrid did not finish in {CHILD_TIMEOUT_S} s"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()
                 and "/INFO]" not in line and not line.lstrip().startswith(("->", "Backtrace"))]
        said = next((line for line in lines if "CRITICAL" in line or "Error" in line),
                    lines[-1] if lines else f"exit {done.returncode}")
        return None, f"SimGrid refused it (exit {done.returncode}): {said.strip()[:300]}"
    try:
        report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return None, "SimGrid's child printed no report"
    return report, None


_BANDWIDTH_PREFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
                       "E": 1e18, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40,
                       "Pi": 2.0**50, "Ei": 2.0**60}
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0,
            "h": 3600.0, "d": 86400.0, "w": 604800.0}
_NUMBER = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*")


def bandwidth(text: str) -> float | None:
    """A SimGrid bandwidth in bytes/s (``125MBps``, ``10Gbps``, ``1GiBps``)."""
    found = _NUMBER.fullmatch(text)
    if found is None:
        return None
    unit = found.group(2) or "Bps"
    for suffix, scale in (("Bps", 1.0), ("bps", 0.125)):
        if unit.endswith(suffix) and unit[:-3] in _BANDWIDTH_PREFIXES:
            return float(found.group(1)) * _BANDWIDTH_PREFIXES[unit[:-3]] * scale
    return None


def latency(text: str) -> float | None:
    """A SimGrid latency in seconds (``50us``; ``m`` is a minute)."""
    found = _NUMBER.fullmatch(text)
    unit = (found.group(2) or "s") if found else None
    return float(found.group(1)) * _SECONDS[unit] if found and unit in _SECONDS else None


def cluster_links(data: bytes) -> dict[str, tuple[float, float]]:
    """The private links SimGrid makes for the first and last host of each flat cluster dcx
    reads (``<id>_link_<N>``, with the cluster's ``bw`` and ``lat``; a torus, fat tree or
    dragonfly names its links otherwise): the network dcx writes."""
    from dcx.formats import simgrid

    result = simgrid.read(data)
    if result.document is None or result.document.environment is None:
        return {}
    links: dict[str, tuple[float, float]] = {}
    for rack in result.document.environment.racks():
        extras = rack.extras
        bw, lat = extras.get("simgrid:bw"), extras.get("simgrid:lat")
        speed, delay = bandwidth(str(bw)), latency(str(lat))
        if bw is None or speed is None or delay is None or not rack.slots \
                or extras.get("simgrid:topology", "FLAT") != "FLAT":
            continue
        prefix, suffix = extras["simgrid:prefix"], extras["simgrid:suffix"]
        for machine in (rack.slots[0], rack.slots[-1]):
            assert machine is not None
            number = str(machine.name)[len(prefix):len(str(machine.name)) - len(suffix)]
            links[f"{rack.id}_link_{number}"] = (speed, delay)
    return links


def disagreements(dcx: dict[str, tuple[float, int]], report: dict[str, Any],
                  links: dict[str, tuple[float, float]] | None = None) -> list[str]:
    """Where SimGrid's view of the platform differs from dcx's, in words."""
    found: list[str] = []
    for name, (speed, delay) in sorted((links or {}).items()):
        theirs_link = report["links"].get(name)
        if theirs_link is None:
            found.append(f"SimGrid has no link {name}")
        elif not (math.isclose(theirs_link[0], speed, rel_tol=1e-9)
                  and math.isclose(theirs_link[1], delay, rel_tol=1e-9, abs_tol=1e-15)):
            found.append(f"link {name}: SimGrid {theirs_link[0]!r} B/s, {theirs_link[1]!r} s; "
                         f"dcx {speed!r} B/s, {delay!r} s")
    theirs = {host["name"]: (host["speed"], host["cores"]) for host in report["hosts"]
              if host["speed"] > 0 or host["name"] in dcx}  # (storage hosts left out)
    if len(theirs) != len(dcx):
        found.append(f"SimGrid has {len(theirs)} hosts, dcx reads {len(dcx)}")
    only_theirs = sorted(set(theirs) - set(dcx))
    only_ours = sorted(set(dcx) - set(theirs))
    if only_theirs:
        found.append(f"hosts dcx does not read: {', '.join(only_theirs[:5])}")
    if only_ours:
        found.append(f"hosts SimGrid does not have: {', '.join(only_ours[:5])}")
    for name in sorted(set(theirs) & set(dcx)):
        (speed, cores), (our_speed, our_cores) = theirs[name], dcx[name]
        if speed <= 0:
            found.append(f"host {name}: speed 0, work never finishes on it")
            continue
        if not math.isclose(speed, our_speed, rel_tol=RELATIVE_TOLERANCE):
            found.append(f"host {name}: SimGrid speed {speed!r} flop/s, dcx {our_speed!r}")
        if cores != our_cores:
            found.append(f"host {name}: SimGrid {cores} cores, dcx {our_cores}")
    for name in report["simulated"]:
        expected = WORK_FLOPS / theirs[name][0]
        finished = report["finished"].get(name)
        if finished is None:
            found.append(f"host {name}: the actor never finished {WORK_FLOPS:g} flops")
        elif not math.isclose(finished, expected, rel_tol=1e-6):
            found.append(f"host {name}: {WORK_FLOPS:g} flops finished at {finished!r} s, "
                         f"not work / speed = {expected!r} s")
    return found


def check(path: Path) -> Verdict:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Verdict(str(path), f"cannot read: {exc.strerror}")
    hosts, problem, energy = dcx_hosts(data)
    if hosts is None:
        return Verdict(str(path), problem)
    links = cluster_links(data)
    report, problem = run_simgrid(path, energy, links)
    if report is None:
        return Verdict(str(path), problem)
    found = disagreements(hosts, report, links)
    return Verdict(str(path), "; ".join(found[:5]) + (f" (and {len(found) - 5} more)"
                                                      if len(found) > 5 else "") or None)


def main(argv: list[str]) -> int:
    if argv == ["--install"]:
        return install()
    if not argv or argv[0].startswith("-"):
        print("usage: peer_simgrid.py --install | FILE...", file=sys.stderr)
        return 2
    version = simgrid_version()
    if version is None:
        print(f"{PEER}: unavailable: {DEBIAN_PYTHON} cannot import simgrid "
              f"(run with --install)")
        print(json.dumps({"peer": PEER, "version": None, "checked": 0, "accepted": 0,
                          "failures": []}))
        return EXIT_UNAVAILABLE
    verdicts = [check(Path(name)) for name in argv]
    failures = [{"path": v.path, "reason": v.reason} for v in verdicts if v.reason is not None]
    for failure in failures:
        print(f"{failure['path']}: {failure['reason']}")
    print(json.dumps({"peer": PEER, "version": version, "checked": len(verdicts),
                      "accepted": len(verdicts) - len(failures), "failures": failures}))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
