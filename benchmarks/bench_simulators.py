"""Simulator formats: Batsim workloads and SimGrid platforms at the sizes simulations use.

Prints the best of several runs for:

1. a seeded synthetic SWF trace of 100,000 jobs (``generate_swf.py``) written as a Batsim
   workload (normal form, then serialisation) and read back, each as a ratio to ``swf.read``
   and ``swf.write`` of the same trace (the baseline, measured in the same run), and to a
   bare ``json.loads`` of the Batsim bytes;
2. a SimGrid cluster of 65,536 hosts (SimGrid's own ``cluster_crossbar.xml`` shape: one
   ``<cluster radical="0-65535">``) read, and written back, each as a ratio to an SSS
   ``<Data>`` of as many nodes read and written.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dcx.core.model import Document, Job, Workload
from dcx.formats import batsim, simgrid, sss, swf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_swf import generate

REPEATS = 3
JOBS = 100_000
HOSTS = 65_536


def best_of(action: Callable[[], Any], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def cluster_platform(hosts: int) -> bytes:
    return (f'<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM '
            f'"https://simgrid.org/simgrid.dtd">\n<platform version="4.1">\n'
            f'  <zone id="world" routing="Full">\n'
            f'    <cluster id="crossbar" prefix="node-" radical="0-{hosts - 1}" '
            f'suffix=".simgrid.org" speed="1Gf" core="4" bw="125MBps" lat="50us"/>\n'
            f'  </zone>\n</platform>\n').encode()


def main() -> None:
    trace = generate(JOBS, 1024, 0.7, 1).encode()
    read_swf = swf.read(trace)
    assert read_swf.document is not None and read_swf.document.workload is not None
    # materialised once, so that neither side pays for a lazy column view
    workload = Workload(jobs=tuple(Job(id=job.id, tasks=tuple(job.tasks))
                                   for job in read_swf.document.workload.jobs))
    document = Document(workload=workload)
    written = batsim.write(document).data
    print(f"Batsim: {JOBS:,} SWF jobs, {len(written):,} bytes of Batsim JSON, "
          f"best of {REPEATS}")
    swf_read_s = best_of(lambda: swf.read(trace))
    swf_write_s = best_of(lambda: swf.write(document))
    loads_s = best_of(lambda: json.loads(written))
    write_s = best_of(lambda: batsim.write(document))
    read_s = best_of(lambda: batsim.read(written))
    print(f"  batsim.write {write_s:6.2f} s  ({write_s / swf_write_s:4.1f}x swf.write "
          f"{swf_write_s:.2f} s)")
    print(f"  batsim.read  {read_s:6.2f} s  ({read_s / swf_read_s:4.1f}x swf.read "
          f"{swf_read_s:.2f} s, {read_s / loads_s:4.1f}x json.loads {loads_s:.2f} s)")

    platform = cluster_platform(HOSTS)
    read_platform = simgrid.read(platform)
    assert read_platform.document is not None
    sss_data = sss.write(read_platform.document).data
    sss_document = sss.read(sss_data).document
    print(f"SimGrid: one cluster of {HOSTS:,} hosts ({len(platform):,} bytes; "
          f"{len(sss_data):,} bytes as SSS), best of {REPEATS}")
    sg_read_s = best_of(lambda: simgrid.read(platform))
    sg_write_s = best_of(lambda: simgrid.write(read_platform.document))
    sss_read_s = best_of(lambda: sss.read(sss_data))
    sss_write_s = best_of(lambda: sss.write(sss_document))
    print(f"  simgrid.read  {sg_read_s:6.2f} s  ({sg_read_s / sss_read_s:4.2f}x sss.read "
          f"{sss_read_s:.2f} s)")
    print(f"  simgrid.write {sg_write_s:6.2f} s  ({sg_write_s / sss_write_s:4.2f}x sss.write "
          f"{sss_write_s:.2f} s)")


if __name__ == "__main__":
    main()
