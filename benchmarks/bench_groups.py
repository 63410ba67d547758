"""Compact machine groups at the scale of a large Flux instance: a 1,048,576-rank R
(``rank: "0-1048575"``, ``nodelist: ["n[0-1048575]"]``, four cores per rank, one line).

Each figure is printed beside a baseline measured in the same run on the same document,
the expanded path (one ``Machine`` per rank, what every read cost before groups):

1. R validate (``flux_r.read``) against the per-rank path that R_lite entries sharing ranks
   still take. Target: at most 2 s.
2. ``dcx validate`` and ``dcx info`` on the file, beside the CLI's start-up, and ``dcx
   info``'s counts (``topology_summary``) from the groups, against the same counts over the
   expanded machines.
3. The losses a conversion to environment JSON derives (``conversion_losses``).
4. R -> environment JSON: written from the group (one definition, each rank a ``$base``
   unit), against the same machines expanded. R gives no clock rate, which the jsspp-osp
   schema requires (``dcx convert --fill clock-rate=…`` gives it; ``bench_fill.py`` runs
   that command); the write is measured on the model with a 2.0 GHz clock rate on its CPU.

Times are wall times of one run each (the paths build large objects; best-of would mostly
measure the allocator's warm state).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from dcx.cli.main import topology_summary
from dcx.converters.losses import conversion_losses
from dcx.core.groups import MachineGroup, Slots, machine_count
from dcx.core.model import Document, Environment, Rack
from dcx.formats import environment as environment_json
from dcx.formats import flux_r
from dcx.formats.flux_r.reader import _Reader, _single_slots
from dcx.parsing.jsonio import load_json_object

RANKS = 1 << 20
CORES = 4


def timed(label: str, action: Callable[[], Any]) -> tuple[Any, float]:
    gc.collect()
    start = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - start
    print(f"  {label:<58} {elapsed * 1000:10.1f} ms")
    return result, elapsed


def r_document() -> bytes:
    value = {"version": 1, "execution": {
        "R_lite": [{"rank": f"0-{RANKS - 1}", "children": {"core": f"0-{CORES - 1}"}}],
        "nodelist": [f"n[0-{RANKS - 1}]"], "starttime": 0, "expiration": 0}}
    return json.dumps(value).encode()


def expanded_read(data: bytes) -> tuple[Any, ...] | None:
    """The per-rank path of the reader on the same document."""
    loaded, _ = load_json_object(data, "an R document", "flux-r.not-object")
    assert loaded is not None
    return _single_slots(_Reader(loaded.value, loaded.locator))


def expanded(document: Document) -> Document:
    """The same document with every group written out as single machines."""
    environment = document.environment
    assert environment is not None
    datacenters = tuple(replace(dc, rooms=tuple(replace(room, racks=tuple(
        replace(rack, slots=tuple(rack.slots)) for rack in room.racks)) for room in dc.rooms))
        for dc in environment.datacenters)
    return replace(document, environment=replace(environment, datacenters=datacenters))


def clocked(document: Document) -> Document:
    """The document with a 2.0 GHz clock rate on every CPU (held in the group's template)."""
    environment = document.environment
    assert environment is not None
    (rack,) = list(environment.racks())
    assert isinstance(rack.slots, Slots)
    (group,) = rack.slots.parts
    assert isinstance(group, MachineGroup)
    cpus = tuple(replace(cpu, clock_rate_hz=2.0e9) for cpu in group.template.cpus)
    slots = Slots((replace(group, template=replace(group.template, cpus=cpus)),))
    datacenter = environment.datacenters[0]
    room = datacenter.rooms[0]
    rooms = (replace(room, racks=(Rack(slots=slots),)),)
    return replace(document, environment=replace(
        environment, datacenters=(replace(datacenter, rooms=rooms),)))


def command_line(data: bytes) -> None:
    """``dcx validate`` and ``dcx info`` on the R as a file, beside the CLI's start-up."""
    dcx = os.path.join(os.path.dirname(sys.executable), "dcx")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "million.R")
        with open(path, "wb") as handle:
            handle.write(data)
        for label, argv in (("baseline: dcx formats (start-up)", [dcx, "formats"]),
                            ("dcx validate", [dcx, "validate", path]),
                            ("dcx info", [dcx, "info", path])):
            timed(label, partial(subprocess.run, argv, check=True, capture_output=True))


def main() -> None:
    data = r_document()
    print(f"Flux R: {RANKS:,} ranks x {CORES} cores, {len(data):,} bytes")
    command_line(data)
    result, grouped_read = timed("R validate (read into groups)", lambda: flux_r.read(data))
    assert result.ok and result.document is not None
    document = result.document
    assert document.environment is not None and machine_count(document.environment) == RANKS
    slots, single_read = timed("baseline: R read, one Machine per rank",
                               lambda: expanded_read(data))
    assert slots is not None and len(slots) == RANKS
    slots = None
    print(f"  validate: {grouped_read:.2f} s (target <= 2 s), "
          f"{single_read / grouped_read:.0f}x faster than per rank")

    single = expanded(document)
    environment: Environment = document.environment
    holds = flux_r.FORMAT.holds
    summary, info = timed("dcx info counts (topology_summary, groups)",
                          lambda: topology_summary(environment, holds))
    assert single.environment is not None
    single_environment = single.environment
    _, info_single = timed("baseline: the same counts over single machines",
                           lambda: topology_summary(single_environment, holds))
    print(f"    {summary}; {info_single / max(info, 1e-9):.0f}x")

    target = environment_json.FORMAT
    losses, grouped_losses = timed("losses R -> environment JSON (groups)",
                                   lambda: conversion_losses(document, target))
    _, single_losses = timed("baseline: the same losses over single machines",
                             lambda: conversion_losses(single, target))
    print(f"    {', '.join(loss.field for loss in losses)}; "
          f"{single_losses / grouped_losses:.1f}x")

    with_clock = clocked(document)
    written, grouped_write = timed("R -> environment JSON (write from the group)",
                                   lambda: environment_json.write(with_clock))
    size = len(written.data)
    value = json.loads(written.data)
    units = value["environment"]["datacenters"][0]["rooms"][0]["objects"][0]["units"]
    print(f"    {size:,} bytes ({size / RANKS:.0f} per rank), "
          f"{len(value['definitions']['dcx:machines'])} definition, {len(units):,} units "
          f"like {json.dumps(units[0])}")
    value = units = None
    single_clock = expanded(with_clock)
    written_single, single_write = timed("baseline: write of the expanded machines",
                                         lambda: environment_json.write(single_clock))
    assert written_single.data == written.data
    print(f"    same bytes; {single_write / grouped_write:.1f}x")


if __name__ == "__main__":
    main()
