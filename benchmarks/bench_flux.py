"""Flux codecs and conversions at scale.

1. idset/hostlist: decode ``0-2147483646`` and ``n[0-1048575]`` and count members; encode a
   million non-contiguous ids; decode them back. Baseline: building the same million ids as
   a plain Python list in the same run (the cost of touching each id once).
2. A generated 10,000-node inventory (128 cores and 8 GPUs per node): environment model →
   R → model → JGF → model, with time, peak traced memory (tracemalloc) and the process's
   peak RSS (ru_maxrss, a high-water mark) after each step. Baselines, measured in the
   same run under the same tracing: ``json.dumps`` of the parsed value (writes) and
   ``json.loads`` of the same bytes (reads). Times include tracemalloc's overhead, which
   applies to the baselines too.
"""

from __future__ import annotations

import json
import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from dcx.converters.losses import conversion_losses
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
)
from dcx.formats import flux_r, jgf
from dcx.parsing.hostlist import Hostlist, IdSet

NODES = 10_000
CORES = 128
GPUS = 8
NODES_PER_RACK = 40


def timed(label: str, action: Callable[[], Any], trace: bool = False,
          rss: bool = False) -> tuple[Any, float]:
    """Wall time; with ``trace`` also tracemalloc's peak (slows allocation-heavy code about
    tenfold here, so the JGF legs report only ru_maxrss, the process high-water mark)."""
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - start
    peak = ""
    if trace:
        peak = f"  traced peak {tracemalloc.get_traced_memory()[1] / 2**20:8.1f} MB"
        tracemalloc.stop()
    if trace or rss:
        peak += f"  maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:8.1f} MB"
    print(f"  {label:<52} {elapsed * 1000:10.1f} ms{peak}")
    return result, elapsed


def codecs() -> None:
    print("idset / hostlist")
    big, _ = timed("IdSet.decode('0-2147483646')", lambda: IdSet.decode("0-2147483646"))
    timed("len() of it", lambda: len(big))
    hosts, _ = timed("Hostlist.decode('n[0-1048575]')", lambda: Hostlist.decode("n[0-1048575]"))
    timed("len() of it", lambda: len(hosts))
    sparse_ids = range(0, 2_000_000, 2)
    _, baseline = timed("baseline: list of 1e6 ids", lambda: list(sparse_ids))
    _, text_baseline = timed("baseline: ','.join(map(str, 1e6 ids))",
                             lambda: ",".join(map(str, sparse_ids)))
    sparse, _ = timed("IdSet.from_ids(1e6 non-contiguous ids)",
                      lambda: IdSet.from_ids(sparse_ids))
    text, encode = timed("encode 1e6 non-contiguous ids", sparse.encode)
    _, decode = timed("decode them back", lambda: IdSet.decode(text))
    print(f"  encode / list = {encode / baseline:.1f}x, decode / list = "
          f"{decode / baseline:.1f}x; encode / join = {encode / text_baseline:.1f}x "
          "(flux-core: about 40 s to encode)")
    names = [f"n{i}" for i in range(0, 200_000, 2)]
    _, names_baseline = timed("baseline: ','.join of 1e5 names", lambda: ",".join(names))
    packed, from_hosts = timed("Hostlist.from_hosts(1e5 non-contiguous names)",
                               lambda: Hostlist.from_hosts(names))
    packed_text, _ = timed("encode them", packed.encode)
    _, host_decode = timed("decode them back", lambda: Hostlist.decode(packed_text))
    print(f"  from_hosts / join = {from_hosts / names_baseline:.1f}x, decode / join = "
          f"{host_decode / names_baseline:.1f}x")


def inventory() -> Environment:
    racks = []
    for rack_index in range(NODES // NODES_PER_RACK):
        machines = tuple(
            Machine(name=f"node{rack_index * NODES_PER_RACK + i}",
                    id=rack_index * NODES_PER_RACK + i,
                    cpus=(ProcessingUnit(cores=CORES // 2, id=0),
                          ProcessingUnit(cores=CORES // 2, id=1)),
                    # Built per machine, not shared: writers must not rely on identity.
                    gpus=tuple(ProcessingUnit(cores=1, id=g) for g in range(GPUS)),
                    features=("batch",) if i % 2 else ("debug",))
            for i in range(NODES_PER_RACK))
        racks.append(Rack(id=rack_index, name=f"rack{rack_index}", slots=machines))
    return Environment(datacenters=(Datacenter(id=0, name="cluster0",
                                               rooms=(Room(racks=tuple(racks)),)),))


def conversions() -> None:
    print(f"inventory: {NODES:,} nodes x {CORES} cores + {GPUS} GPUs")
    environment, _ = timed("generate model", inventory)
    document = Document(environment=environment)
    r_written, r_write = timed("model -> R (write)", lambda: flux_r.write(document), trace=True)
    print(f"    R: {len(r_written.data):,} bytes, losses (derived, not timed): "
          f"{', '.join(loss.field for loss in conversion_losses(document, flux_r.FORMAT))}")
    r_value, r_loads = timed("baseline: json.loads of the R", lambda: json.loads(r_written.data),
                             trace=True)
    _, r_dumps = timed("baseline: json.dumps of the R value", lambda: json.dumps(r_value),
                       trace=True)
    r_read, r_read_time = timed("R -> model (read, validate)",
                                lambda: flux_r.read(r_written.data), trace=True)
    assert r_read.ok
    jgf_written, jgf_write = timed("model -> JGF (write)", lambda: jgf.write(r_read.document),
                                   rss=True)
    print(f"    JGF: {len(jgf_written.data):,} bytes")
    value, jgf_loads = timed("baseline: json.loads of the JGF",
                             lambda: json.loads(jgf_written.data), rss=True)
    _, jgf_dumps = timed("baseline: json.dumps of the JGF value", lambda: json.dumps(value),
                         rss=True)
    value = None  # release the parsed graph before the read leg
    jgf_read, jgf_read_time = timed("JGF -> model (read, validate)",
                                    lambda: jgf.read(jgf_written.data), rss=True)
    assert jgf_read.ok
    machines = list(jgf_read.document.environment.machines())
    assert len(machines) == NODES and machines[-1].core_count == CORES
    print(f"  R write / dumps = {r_write / r_dumps:.1f}x; R read / loads = "
          f"{r_read_time / r_loads:.1f}x; JGF write / dumps = {jgf_write / jgf_dumps:.1f}x; "
          f"JGF read / loads = {jgf_read_time / jgf_loads:.1f}x")


def main() -> None:
    codecs()
    conversions()


if __name__ == "__main__":
    main()
