"""Slurm's slurm.conf at cluster scale: a generated file of 100,000 nodes on 1,000 NodeName
lines (one rack each: a hostlist, per-node addresses, sockets, memory, GPUs, features).

Steps: slurm.conf bytes → model; model → slurm.conf bytes (one line per rack again); the
written bytes → model. Baseline, measured in the same run on the same file: expanding every
NodeName and NodeAddr hostlist with ``dcx.parsing.hostlist`` alone, the least any reader of
the file does; the steps are printed as ratios to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dcx.formats import slurm
from dcx.parsing.hostlist import Hostlist

RACKS = 1000
NODES_PER_RACK = 100


def generate() -> bytes:
    lines = ["ClusterName=bench", "GresTypes=gpu",
             "NodeName=DEFAULT Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=256000"]
    for rack in range(RACKS):
        lines.append(f"NodeName=r{rack:04d}n[001-{NODES_PER_RACK:03d}] "
                     f"NodeAddr=10.{rack // 250}.{rack % 250}.[1-{NODES_PER_RACK}] "
                     f"Gres=gpu:a100:4 Features=ib,rack{rack} Weight=10")
    lines.append("PartitionName=all Nodes=ALL Default=YES MaxTime=2-00:00:00")
    return ("\n".join(lines) + "\n").encode()


def timed(step: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = step()
    return result, time.perf_counter() - start


def expand_only(data: bytes) -> int:
    count = 0
    for line in data.decode().splitlines():
        if not line.startswith("NodeName=r"):
            continue
        names, address = line.split()[:2]
        count += len(list(Hostlist.decode(names.partition("=")[2])))
        count += len(list(Hostlist.decode(address.partition("=")[2])))
    return count


def main() -> None:
    data = generate()
    print(f"slurm benchmark: {RACKS * NODES_PER_RACK:,} nodes on {RACKS:,} NodeName lines, "
          f"{len(data) / 2**10:.0f} KiB")
    hosts, baseline = timed(lambda: expand_only(data))
    print(f"  baseline hostlist expansion ({hosts:,} names): {baseline:7.2f} s")
    read, read_s = timed(lambda: slurm.read(data))
    assert read.ok, read.diagnostics[:3]
    print(f"  slurm.conf -> model:   {read_s:7.2f} s  ({read_s / baseline:5.1f}x baseline)")
    written, write_s = timed(lambda: slurm.write(read.document))
    lines = written.data.count(b"\nNodeName=") + written.data.startswith(b"NodeName=")
    print(f"  model -> slurm.conf:   {write_s:7.2f} s  ({write_s / baseline:5.1f}x baseline; "
          f"{lines:,} NodeName lines)")
    again, again_s = timed(lambda: slurm.read(written.data))
    assert again.ok and again.document == read.document
    print(f"  written -> model:      {again_s:7.2f} s  ({again_s / baseline:5.1f}x baseline)")


if __name__ == "__main__":
    main()
