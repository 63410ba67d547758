"""Environment JSON: read, resolve and validate a generated 100,000-machine environment.

For a document with every machine written out and for the same cluster factored into
definitions (what dcx's writer produces), prints against a plain ``json.loads`` of the same
bytes, measured in the same run:

* the validation path (``environment.read_structure``: strict decode, ``$base``/``$merge``
  resolution, schema verdict). Target: under 3x ``json.loads``;
* the full read (semantic checks and the model as well), and its peak traced memory.

Times are CPU time (``time.process_time``), best of three: on a shared machine wall time
mostly measures the neighbours.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
)
from dcx.formats import environment
from dcx.formats.environment.jsonref import resolve_document

MACHINES = 100_000
PER_RACK = 40


def generate() -> Environment:
    kinds = [
        (ProcessingUnit(cores=16, clock_rate_hz=2.4e9, manufacturer="Intel", family="Xeon",
                        model="E5-2630"), StorageUnit(capacity_mb=65536)),
        (ProcessingUnit(cores=32, clock_rate_hz=2.9e9, manufacturer="AMD", family="EPYC",
                        model="7502"), StorageUnit(capacity_mb=262144)),
        (ProcessingUnit(cores=8, clock_rate_hz=3.5e9, manufacturer="Intel", family="Core",
                        model="i7"), StorageUnit(capacity_mb=32768)),
    ]
    racks = []
    for start in range(0, MACHINES, PER_RACK):
        slots = []
        for index in range(start, min(start + PER_RACK, MACHINES)):
            cpu, memory = kinds[index % 3]
            slots.append(Machine(id=index, name=f"node{index:06d}", cpus=(cpu, cpu),
                                 memory=(memory,), storage=(StorageUnit(capacity_mb=1_000_000),)))
        racks.append(Rack(id=f"rack{start // PER_RACK}", capacity_units=42, slots=tuple(slots)))
    room = Room(id="hall-1", racks=tuple(racks))
    return Environment(datacenters=(Datacenter(id=0, name="dc", rooms=(room,)),))


def expanded(data: bytes) -> bytes:
    """The same cluster with every machine written out (no definitions)."""
    resolved, _ = resolve_document(json.loads(data))
    resolved["definitions"] = {}
    return json.dumps(resolved).encode()


def best_of(repeats: int, action: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        action()
        best = min(best, time.process_time() - start)
    return best


def verdict(data: bytes) -> bool:
    """Decode (strict), resolve $base/$merge, schema verdict: the validation path, as
    ``environment.read`` takes it before building the model."""
    return environment.read_structure(data).valid


def measure(label: str, data: bytes) -> None:
    baseline = best_of(3, lambda: json.loads(data))
    validate = best_of(3, lambda: verdict(data))
    full = best_of(3, lambda: environment.read(data))
    result = environment.read(data)
    assert result.ok, result.diagnostics[:3]
    tracemalloc.start()
    environment.read(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{label}: {len(data) / 1e6:.1f} MB")
    print(f"  json.loads                      {baseline:7.3f} s   (baseline)")
    print(f"  read + resolve + schema verdict {validate:7.3f} s   {validate / baseline:5.2f}x "
          "(target < 3x)")
    print(f"  full read incl. semantic checks and the model "
          f"{full:7.3f} s   {full / baseline:5.2f}x, peak traced memory {peak / 1e6:.0f} MB")


def main() -> None:
    factored = environment.write(Document(environment=generate())).data
    measure(f"{MACHINES:,} machines, factored into definitions", factored)
    measure(f"{MACHINES:,} machines, written out", expanded(factored))


if __name__ == "__main__":
    main()
