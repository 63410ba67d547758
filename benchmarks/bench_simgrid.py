"""SimGrid writer: a large uniform set of machines, and machines no compact form fits.

Prints, measured in the same run:

* compact: the 1,048,576 ranks of a one-line Flux R (one machine group named node0 …) written
  as SimGrid (normal form and writer): one ``<cluster radical="0-1048575">``. Baseline: lxml
  building and serializing one ``<host>`` element per rank (the writer's former way, without
  its normal form's cost per machine);
* one host each: 200,000 machines whose zero-padded names fit no cluster, as one group and as
  single machines: machines per second (target: at least 100,000) and peak traced memory
  beside the output's size. Baseline: lxml building and serializing the same ``<host>``
  elements (the writer's former way).

Times are CPU time (``time.process_time``): on a shared machine wall time mostly measures the
neighbours.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import Any

from dcx.core.groups import MachineGroup, slots_of
from dcx.core.model import Datacenter, Document, Environment, Machine, ProcessingUnit, Rack, Room
from dcx.formats import simgrid

RANKS = 1_048_576
PADDED = 200_000
CPU = (ProcessingUnit(cores=4, clock_rate_hz=2e9),)


def _document(*parts: Machine | MachineGroup) -> Document:
    rack = Rack(id="r", slots=slots_of(parts))
    return Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(
        racks=(rack,)),)),)))


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    result = work()
    return time.process_time() - start, result


def _peak(work: Callable[[], Any]) -> int:
    tracemalloc.start()
    work()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _written(document: Document) -> bytes:
    return simgrid.write(document).data


def _lxml_hosts(names: list[str]) -> bytes:
    from lxml import etree

    zone = etree.Element("zone", id="r", routing="Full")
    for name in names:
        etree.SubElement(zone, "host", {"id": name, "speed": "2Gf", "core": "4"})
    return bytes(etree.tostring(zone, pretty_print=True))


def compact() -> None:
    names = [f"node{rank}" for rank in range(RANKS)]
    ranks = MachineGroup(Machine(cpus=CPU), RANKS, names=tuple(names))
    seconds, written = _timed(lambda: simgrid.write(_document(ranks)).data)
    assert written.count(b"<cluster ") == 1 and b'radical="0-1048575"' in written
    baseline, hosts = _timed(lambda: _lxml_hosts(names))
    print(f"compact: {RANKS:,} ranks -> {len(written):,} bytes in {seconds:.2f} s "
          f"(lxml, one <host> per rank: {len(hosts) / 1e6:.0f} MB in {baseline:.2f} s; "
          f"ratio {seconds / baseline:.2f})")


def one_host_each() -> None:
    names = [f"n{index:07d}" for index in range(PADDED)]
    group = _document(MachineGroup(Machine(cpus=CPU), PADDED, names=tuple(names)))
    single = _document(*(Machine(id=name, name=name, cpus=CPU) for name in names))
    baseline, reference = _timed(lambda: _lxml_hosts(names))
    print(f"one host each, baseline lxml: {PADDED / baseline:,.0f} machines/s")
    for label, document in (("a group", group), ("single machines", single)):
        seconds, written = _timed(partial(_written, document))
        assert written.count(b"<host ") == PADDED and b"<cluster" not in written
        peak = _peak(partial(_written, document))
        print(f"one host each, {label}: {PADDED / seconds:,.0f} machines/s "
              f"({seconds / baseline:.2f}x lxml), peak {peak / 1e6:.0f} MB traced for "
              f"{len(written) / 1e6:.0f} MB written")
    assert len(reference) > 0


if __name__ == "__main__":
    compact()
    one_host_each()
