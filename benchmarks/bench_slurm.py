"""Slurm's slurm.conf at cluster scale: a generated file of 100,000 nodes on 1,000 NodeName
lines (one rack each: a hostlist, per-node addresses, sockets, memory, GPUs, features).

Steps: slurm.conf bytes → model; model → slurm.conf bytes (one line per rack again); the
written bytes → model. Baseline, measured in the same run on the same file: expanding every
NodeName and NodeAddr hostlist with ``dcx.parsing.hostlist`` alone, the least any reader of
the file does; the steps are printed as ratios to it. (Per-node addresses make every node a
machine of its own.)

Then a 100,000-node slurm.conf with one ``NodeName=n[0-99999]`` line (and two partitions)
converted to environment JSON with a clock rate filled in (``dcx convert --fill
clock-rate=2.4GHz``'s path: read, fill, losses, write), each way in a child process of its
own (wall, CPU, peak RSS): as read (the line one machine group) and, as the baseline, with
the group expanded into single machines after reading (what every read built before). Both
must write the same bytes.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

from child import run_code

from dcx.formats import slurm
from dcx.parsing.hostlist import Hostlist

RACKS = 1000
NODES_PER_RACK = 100
GROUP_NODES = 100_000

CONVERT = """
import hashlib, sys
from dataclasses import replace
from dcx.converters.convert import convert_document
from dcx.converters.fill import apply_fills, parse_fill
from dcx.converters.registry import get
from dcx.core.model import Rack
from dcx.formats import slurm

with open(sys.argv[1], "rb") as handle:
    data = handle.read()
read = slurm.read(data)
assert read.ok and read.document is not None and read.document.environment is not None
document = read.document
if sys.argv[2] == "expanded":
    environment = document.environment
    datacenters = tuple(replace(datacenter, rooms=tuple(replace(room, racks=tuple(
        Rack(slots=tuple(rack.slots)) for rack in room.racks)) for room in datacenter.rooms))
        for datacenter in environment.datacenters)
    document = replace(document, environment=replace(environment, datacenters=datacenters))
document, _ = apply_fills(document, [parse_fill("clock-rate=2.4GHz")])
conversion = convert_document(document, get("slurm"), get("environment"), read=read)
assert conversion.ok, conversion.diagnostics[:3]
with open(sys.argv[3], "w") as handle:
    handle.write(hashlib.sha256(conversion.data).hexdigest())
"""


def generate() -> bytes:
    lines = ["ClusterName=bench", "GresTypes=gpu",
             "NodeName=DEFAULT Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=256000"]
    for rack in range(RACKS):
        lines.append(f"NodeName=r{rack:04d}n[001-{NODES_PER_RACK:03d}] "
                     f"NodeAddr=10.{rack // 250}.{rack % 250}.[1-{NODES_PER_RACK}] "
                     f"Gres=gpu:a100:4 Features=ib,rack{rack} Weight=10")
    lines.append("PartitionName=all Nodes=ALL Default=YES MaxTime=2-00:00:00")
    return ("\n".join(lines) + "\n").encode()


def group_conf() -> bytes:
    return (f"ClusterName=big\nNodeName=n[0-{GROUP_NODES - 1}] CPUs=64 RealMemory=256000\n"
            f"PartitionName=all Nodes=ALL Default=YES\n"
            f"PartitionName=half Nodes=n[0-{GROUP_NODES // 2 - 1}]\n").encode()


def convert_to_environment() -> None:
    print(f"slurm.conf -> environment JSON: {GROUP_NODES:,} nodes on one NodeName line, "
          "--fill clock-rate=2.4GHz (child processes)")
    with tempfile.TemporaryDirectory() as folder:
        conf = os.path.join(folder, "big.conf")
        with open(conf, "wb") as handle:
            handle.write(group_conf())
        figures: dict[str, tuple[float, float, float]] = {}
        digests: dict[str, str] = {}
        for way in ("expanded", "grouped"):
            digest = os.path.join(folder, way + ".sha256")
            figures[way] = run_code(CONVERT, conf, way, digest, what=f"the {way} conversion")
            with open(digest) as handle:
                digests[way] = handle.read()
        assert digests["grouped"] == digests["expanded"], "the two ways wrote different bytes"
    base_wall, base_cpu, _ = figures["expanded"]
    for way, label in (("expanded", "baseline: group expanded after reading"),
                       ("grouped", "as read: one machine group")):
        wall, cpu, rss = figures[way]
        print(f"  {label:<40} wall {wall:6.2f} s  CPU {cpu:6.2f} s  peak RSS {rss:6.0f} MB"
              f"  ({base_wall / wall:5.1f}x / {base_cpu / cpu:5.1f}x faster than baseline)")


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
    convert_to_environment()


if __name__ == "__main__":
    main()
