"""Writers of a million identical machines: a 126-byte Flux R of 1,048,576 ranks (one
R_lite entry, ``n[0-1048575]``), read as one machine group, written as SSS and as Slurm.

SSS has no compact form for identical nodes, so the writer must spell every ``<Node>``: it
builds the group's node once and puts each member's ``<Id>`` and ``<Name>`` into its
serialised text. Baseline, measured in the same run: the same group expanded into single
machines before writing (one lxml element per machine, what the writer built for every
machine before), on 131,072 ranks; the group path on the same ranks must write the same
bytes, then runs on all 1,048,576. Slurm writes a uniform group as one ``NodeName`` line
with a host range; its baseline is the expanded machines, whose names are compacted back
into that range. Each step runs in a child process of its own (wall, CPU, peak RSS), and
prints machines per second of wall time and of the step's own CPU time (the steadier of the
two on a machine shared with other work); ratios are of CPU time.

R -> SSS end to end (``convert``: losses, write, and the output read back by the SSS reader,
the check that dcx wrote what SSS accepts): the read-back of the 158 MB file is what cost.
Before, in the same run: the read-back by the checked path alone (parse, XSD, node by node;
the text-run path switched off) on 131,072 ranks; after: the text-run path
(``formats/sss/text_runs.py``: the first node through the checked path, the others matched
in the text) on the same ranks, then on 1,048,576.

OpenDC topology, hosts with their own names (``host-000000`` …, not the ``base-<n>`` names
an entry's count makes): every host is an entry of its own, so there is no compact form and
the writer must do 100,000 machines a second. Baseline, in the same run: the same machines
through the indented encoder, one dict per entry (the writer's path for small files, and
what it did for any size before), on 20,000 hosts; the one-line path on the same hosts must
give the same JSON, then runs on 200,000.
"""

from __future__ import annotations

import os
import tempfile

from child import run_code

FULL = 1 << 20
BASELINE = 1 << 17

WRITE = """
import hashlib, sys, time
from dataclasses import replace
from dcx.core.model import Rack
from dcx.formats import flux_r, slurm, sss

count, way, target, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
data = (b'{"version": 1, "execution": {"R_lite": [{"rank": "0-%d", "children": '
        b'{"core": "0-31"}}], "nodelist": ["n[0-%d]"]}}' % (count - 1, count - 1))
document = flux_r.read(data).document
if way == "expanded":
    environment = document.environment
    datacenters = tuple(replace(datacenter, rooms=tuple(replace(room, racks=tuple(
        Rack(slots=tuple(rack.slots)) for rack in room.racks)) for room in datacenter.rooms))
        for datacenter in environment.datacenters)
    document = replace(document, environment=replace(environment, datacenters=datacenters))
writer = {"sss": sss.write, "slurm": slurm.write}[target]
started, cpu = time.perf_counter(), time.process_time()
written = writer(document).data
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
with open(out, "w") as handle:
    handle.write(f"{hashlib.sha256(written).hexdigest()} {seconds} {len(written)} {cpu}")
"""


CONVERT = """
import hashlib, sys, time
from dcx.converters.convert import convert

count, way, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if way == "checked":
    from dcx.formats.sss import text_runs
    text_runs.read = lambda data, min_bytes=0: None
data = (b'{"version": 1, "execution": {"R_lite": [{"rank": "0-%d", "children": '
        b'{"core": "0-31"}}], "nodelist": ["n[0-%d]"]}}' % (count - 1, count - 1))
started, cpu = time.perf_counter(), time.process_time()
conversion = convert(data, "sss", "in.R")
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
assert conversion.ok and conversion.output_document is not None
with open(out, "w") as handle:
    handle.write(f"{hashlib.sha256(conversion.data).hexdigest()} {seconds} "
                 f"{len(conversion.data)} {cpu}")
"""


def measure_convert(count: int, way: str, folder: str) -> Measured:
    """As ``measure``, for the whole R -> SSS conversion."""
    out = os.path.join(folder, f"convert-{way}-{count}.txt")
    _, cpu, rss = run_code(CONVERT, str(count), way, out, what=f"R -> SSS {way} {count:,}")
    return _read_measure(out, cpu, rss)


NAMED_FULL = 200_000
NAMED_BASELINE = 20_000

NAMED = """
import hashlib, json, sys, time
from dataclasses import replace
from dcx.core.model import (Datacenter, Document, Environment, Machine, ProcessingUnit, Rack,
                            Room, StorageUnit)
from dcx.formats import opendc_topology
from dcx.formats.opendc_topology import codec

count, way, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
template = Machine(cpus=(ProcessingUnit(cores=32, clock_rate_hz=2.4e9),),
                   memory=(StorageUnit(capacity_mb=192000.0),))
machines = tuple(replace(template, name=f"host-{i:06d}") for i in range(count))
document = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
    Rack(name="rack0", slots=machines),)),)),)))
if way == "indented":
    codec._INDENTED_ENTRIES = count
started, cpu = time.perf_counter(), time.process_time()
written = opendc_topology.write(document).data
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
with open(out, "w") as handle:
    value = json.dumps(json.loads(written)).encode()
    handle.write(f"{hashlib.sha256(value).hexdigest()} {seconds} {len(written)} {cpu}")
"""


Measured = tuple[str, float, int, float, float, float]
"""Digest, the step's wall seconds, output bytes, the step's CPU seconds, the child's CPU
seconds and peak RSS."""


def _read_measure(out: str, cpu: float, rss: float) -> Measured:
    with open(out) as handle:
        digest, seconds, size, step_cpu = handle.read().split()
    return digest, float(seconds), int(size), float(step_cpu), cpu, rss


def measure_named(count: int, way: str, folder: str) -> Measured:
    """As ``measure``, for OpenDC hosts with their own names; the digest is of the JSON
    value (the two ways lay the text out differently)."""
    out = os.path.join(folder, f"opendc-{way}-{count}.txt")
    _, cpu, rss = run_code(NAMED, str(count), way, out, what=f"opendc {way} {count:,}")
    return _read_measure(out, cpu, rss)


def measure(count: int, way: str, target: str, folder: str) -> Measured:
    """The written bytes' digest, the write's own seconds and size, and the child's CPU time
    and peak RSS."""
    out = os.path.join(folder, f"{target}-{way}-{count}.txt")
    _, cpu, rss = run_code(WRITE, str(count), way, target, out,
                           what=f"{target} {way} {count:,}")
    return _read_measure(out, cpu, rss)


def report(label: str, count: int, seconds: float, size: int, step_cpu: float, cpu: float,
           rss: float) -> None:
    """A step's wall and CPU seconds (CPU: steadier on a shared machine) with machines per
    second of each, its output size, and the child's CPU and peak RSS."""
    print(f"  {label:<44} {count:>9,} machines  {seconds:6.2f} s wall "
          f"({count / seconds:>9,.0f}/s), {step_cpu:6.2f} s CPU ({count / step_cpu:>9,.0f}/s)"
          f"  {size / 2**20:7.1f} MiB  process CPU {cpu:6.2f} s  peak RSS {rss:6.0f} MB")


def main() -> None:
    print(f"compact writers: a Flux R of {FULL:,} ranks (one machine group) -> SSS, Slurm "
          "(child processes)")
    with tempfile.TemporaryDirectory() as folder:
        for target in ("sss", "slurm"):
            base = measure(BASELINE, "expanded", target, folder)
            same = measure(BASELINE, "grouped", target, folder)
            assert base[0] == same[0], f"{target}: the two ways wrote different bytes"
            full = measure(FULL, "grouped", target, folder)
            report(f"{target}, baseline: expanded machines", BASELINE, *base[1:])
            report(f"{target}, as read: one group", BASELINE, *same[1:])
            report(f"{target}, as read: one group", FULL, *full[1:])
            print(f"  {target}: {base[3] / same[3]:.1f}x the baseline's machines per CPU "
                  "second")
        print("R -> SSS end to end (convert: losses, write, read-back)")
        before = measure_convert(BASELINE, "checked", folder)
        after = measure_convert(BASELINE, "text-runs", folder)
        assert before[0] == after[0], "R -> SSS: the two read-backs let different bytes out"
        full = measure_convert(FULL, "text-runs", folder)
        report("before: read back by the checked path", BASELINE, *before[1:])
        report("after: read back by the text-run path", BASELINE, *after[1:])
        report("after: read back by the text-run path", FULL, *full[1:])
        print(f"  R -> SSS: {before[3] / after[3]:.1f}x less CPU on {BASELINE:,} ranks; "
              f"{full[1]:.1f} s wall, {full[3]:.1f} s CPU on {FULL:,}")
        print(f"OpenDC topology: {NAMED_FULL:,} hosts with their own names (an entry each)")
        base = measure_named(NAMED_BASELINE, "indented", folder)
        same = measure_named(NAMED_BASELINE, "one-line", folder)
        assert base[0] == same[0], "opendc: the two ways wrote different JSON"
        full = measure_named(NAMED_FULL, "one-line", folder)
        report("opendc, baseline: indented, a dict per entry", NAMED_BASELINE, *base[1:])
        report("opendc, one line, an entry's text joined", NAMED_BASELINE, *same[1:])
        report("opendc, one line, an entry's text joined", NAMED_FULL, *full[1:])
        print(f"  opendc: {base[3] / same[3]:.1f}x the baseline's machines per CPU second; "
              f"{NAMED_FULL / full[3]:,.0f} machines per CPU second at {NAMED_FULL:,}")


if __name__ == "__main__":
    main()
