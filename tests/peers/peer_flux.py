"""flux-core on Flux R (version 1): each ``R_lite`` rank idset and child idset, and each
``nodelist`` hostlist, decoded with flux-core's own libraries (``flux.idset.IDset``,
``flux.hostlist.Hostlist`` from the ``flux-python`` bindings); the hosts, in the order of
the sorted ranks, and their core and GPU counts must be the machines dcx reads.

The bindings on PyPI (``flux-python``) load ``libflux-core``, ``libflux-idset`` and
``libflux-hostlist``, which they do not ship. ``--install`` installs them with apt where the
machine's package lists have a ``flux-core`` package (Debian 12 has none) and otherwise exits
3 saying so: flux-core's sources are on no package registry CI reaches. The in-repo hostlist
and idset tests (``tests/test_hostlist.py``, ``tests/test_flux_r.py``) check the same rules
without flux-core. Usage: see ``peerlib.py``.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import shutil
import subprocess
from typing import Any

from peerlib import Peer, installed_version, main, pip_install, read_with_dcx

from dcx.core.model import Document

REQUIREMENT = "flux-python==0.88.0"
LIBRARIES = ("flux-core", "flux-idset", "flux-hostlist")
APT_PACKAGE = "flux-core"
APT_TIMEOUT_S = 600


def _missing_libraries() -> list[str]:
    return [f"lib{name}" for name in LIBRARIES if ctypes.util.find_library(name) is None]


def _apt_candidate(package: str) -> str | None:
    """The version apt would install, after refreshing the package lists; ``None`` when
    the machine has no apt, is not root, or its lists have no such package."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return None
    subprocess.run(["apt-get", "update", "-qq"], capture_output=True, timeout=APT_TIMEOUT_S,
                   check=False)
    policy = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True,
                            timeout=APT_TIMEOUT_S, check=False).stdout
    for line in policy.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Candidate" and value.strip() not in ("", "(none)"):
            return value.strip()
    return None


def install() -> str | None:
    if _missing_libraries() and _apt_candidate(APT_PACKAGE) is not None:
        subprocess.run(["apt-get", "install", "-y", "-qq", APT_PACKAGE], capture_output=True,
                       timeout=APT_TIMEOUT_S, check=False)
    missing = _missing_libraries()
    if missing:
        return (f"{', '.join(missing)}: no {APT_PACKAGE} apt package here, and the "
                f"flux-python wheel does not ship them")
    reason = pip_install((REQUIREMENT,))
    if reason is None and version() is None:
        reason = "flux-python is installed but its bindings do not load libflux"
    return reason


def _decoded(execution: dict[str, Any]) -> dict[int, tuple[str, int, int]]:
    """Rank -> (host, cores, GPUs) as flux-core's idset and hostlist decode R."""
    from flux.hostlist import Hostlist
    from flux.idset import IDset

    children: dict[int, tuple[int, int]] = {}
    for entry in execution["R_lite"]:
        counts = entry.get("children", {})
        cores = len(IDset(counts["core"])) if "core" in counts else 0
        gpus = len(IDset(counts["gpu"])) if "gpu" in counts else 0
        for rank in IDset(str(entry["rank"])):
            if rank in children:
                raise ValueError(f"rank {rank} appears in two R_lite entries")
            children[rank] = (cores, gpus)
    hosts = [host for expression in execution.get("nodelist", [])
             for host in Hostlist(expression)]
    if len(hosts) != len(children):
        raise ValueError(f"nodelist names {len(hosts)} hosts for {len(children)} ranks")
    return {rank: (host, *children[rank]) for rank, host in zip(sorted(children), hosts,
                                                               strict=True)}


def _dcx_machines(document: Document) -> dict[int, tuple[str, int, int]]:
    assert document.environment is not None
    machines = {}
    for datacenter in document.environment.datacenters:
        for room in datacenter.rooms:
            for rack in room.racks:
                for machine in rack.slots:
                    if machine is None or machine.rank is None:
                        continue
                    machines[machine.rank] = (str(machine.name),
                                              sum(cpu.cores for cpu in machine.cpus),
                                              sum(gpu.cores for gpu in machine.gpus))
    return machines


def check(path: str) -> str | None:
    with open(path, encoding="utf-8") as stream:
        theirs = _decoded(json.load(stream)["execution"])
    ours = _dcx_machines(read_with_dcx(path, "flux-r"))
    if set(ours) != set(theirs):
        return f"ranks differ: dcx reads {sorted(ours)}, flux-core {sorted(theirs)}"
    for rank, machine in sorted(ours.items()):
        if machine != theirs[rank]:
            return (f"rank {rank}: dcx reads (host, cores, GPUs) {machine}, flux-core "
                    f"{theirs[rank]}")
    return None


def version() -> str | None:
    try:
        from flux.hostlist import Hostlist  # noqa: F401
        from flux.idset import IDset  # noqa: F401
    except (ImportError, OSError):
        return None
    return installed_version("flux-python")


PEER = Peer("flux", (), check, version, install)

if __name__ == "__main__":
    raise SystemExit(main(PEER))
