"""OpenDC topology host counts at scale: one host entry with ``"count": 1000000`` (and a
second cluster whose entry continues its names), each figure beside a baseline measured in
the same run on the same document: the expanded path, one ``Machine`` per host, which is
what every read of a ``count`` made before groups.

1. ``opendc_topology.read`` (the host entry becomes one ``MachineGroup``) against the same
   read followed by making every host a machine; wall time and the peak of Python
   allocations (``tracemalloc``) of each.
2. ``opendc_topology.write`` from the groups against the write from the machines one by one
   (both give the same bytes: one entry with ``count``).
3. ``dcx validate`` and ``dcx info`` on the file beside the CLI's start-up (``dcx
   formats``), wall time and peak RSS of each in a child process (measured first).

``DCX_BENCH_HOSTS`` changes the count.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dcx.core.groups import machine_count
from dcx.core.model import Document
from dcx.formats import opendc_topology

HOSTS = int(os.environ.get("DCX_BENCH_HOSTS", "1000000"))


def topology() -> bytes:
    def entry(count: int) -> dict[str, Any]:
        return {"name": "cn", "count": count, "cpu": {"coreCount": 32, "coreSpeed": "2.4 GHz"},
                "memory": {"memorySize": "192 GiB"}}

    return json.dumps({"clusters": [{"name": "big", "hosts": [entry(HOSTS)]},
                                    {"name": "small", "hosts": [entry(2)]}]}).encode()


def measured(label: str, action: Callable[[], Any], traced: bool = True) -> tuple[
        Any, float, float]:
    """The result, wall seconds and (``traced``) peak traced MB of ``action``; tracing
    slows allocation, so the writes are timed untraced."""
    gc.collect()
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 1e6 if traced else 0.0
    tracemalloc.stop()
    memory = f"{peak:9.2f} MB" if traced else ""
    print(f"  {label:<52} {elapsed * 1000:10.1f} ms {memory}", flush=True)
    return result, elapsed, peak


def expanded(document: Document) -> Document:
    """The same document with every group made into single machines."""
    environment = document.environment
    assert environment is not None
    datacenters = tuple(replace(dc, rooms=tuple(replace(room, racks=tuple(
        replace(rack, slots=tuple(rack.slots)) for rack in room.racks)) for room in dc.rooms))
        for dc in environment.datacenters)
    return replace(document, environment=replace(environment, datacenters=datacenters))


def child(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``argv`` in a child process of its own."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_opendc_topology: {' '.join(argv)} failed")
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def command_line(data: bytes) -> None:
    dcx = os.path.join(os.path.dirname(sys.executable), "dcx")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "million.json")
        with open(path, "wb") as handle:
            handle.write(data)
        start_up = child([dcx, "formats"])
        print(f"  {'baseline: dcx formats (start-up)':<52} {start_up[0] * 1000:10.1f} ms "
              f"{start_up[1]:9.0f} MB RSS")
        for label, argv in (("dcx validate", [dcx, "validate", path]),
                            ("dcx info", [dcx, "info", path])):
            wall, rss = child(argv)
            print(f"  {label:<52} {wall * 1000:10.1f} ms {rss:9.0f} MB RSS   "
                  f"{wall / start_up[0]:.2f}x start-up")


def main() -> None:
    data = topology()
    print(f"OpenDC topology: an entry of {HOSTS:,} hosts, {len(data):,} bytes")
    command_line(data)  # first: a child forked from a large parent reports its peak RSS
    opendc_topology.write(opendc_topology.read(data).document)  # loads the lazy modules
    result, grouped, grouped_peak = measured("read (a count is one group)",
                                             lambda: opendc_topology.read(data))
    assert result.ok and result.document is not None and result.document.environment
    document = result.document
    assert machine_count(document.environment) == HOSTS + 2
    single, one_by_one, single_peak = measured(
        "baseline: read, then one Machine per host", lambda: expanded(opendc_topology.read(
            data).document))
    print(f"    read: {one_by_one / grouped:.0f}x faster, "
          f"{single_peak / max(grouped_peak, 1e-3):.0f}x less memory than one by one")
    written, write_grouped, _ = measured("write from the groups",
                                         lambda: opendc_topology.write(document), traced=False)
    written_single, write_single, _ = measured("baseline: write from single machines",
                                               lambda: opendc_topology.write(single),
                                               traced=False)
    assert written.data == written_single.data and b'"count": %d' % HOSTS in written.data
    print(f"    write: {write_single / write_grouped:.0f}x faster, same bytes "
          f"({len(written.data):,})")


if __name__ == "__main__":
    main()
