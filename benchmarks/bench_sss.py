"""SSS Node Object XML at cluster scale: a generated 10,000-node ``<Data>`` document.

Steps, each with wall time and peak traced memory (tracemalloc, measured in a second pass so
tracing does not inflate the times):

1. SSS bytes → model (parse, XSD, checks, model);
2. model → environment JSON bytes. SSS carries no clock rate and the upstream jsspp-osp
   schema requires one on every CPU and GPU, so environment JSON would leave every node out;
   this step gives the model's processing units a clock rate first (outside the timing);
3. environment JSON bytes → model (only if step 2's output reads back cleanly);
4. model → SSS bytes (from step 3's model, else from step 1's).

Baseline, measured in the same run on the same bytes: lxml parsing alone
(``etree.fromstring``) plus XSD validation alone; the SSS steps are printed as ratios to it.
"""

from __future__ import annotations

import resource
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from lxml import etree

from dcx.core.model import Document, Machine, ProcessingUnit
from dcx.formats import sss
from dcx.parsing.xmlio import load_xsd

NODES = 10_000
STATES = ("Idle", "Busy", "Down", "Drained", "Running", "Reserved")


def generate(count: int) -> bytes:
    """Nodes with every Table 2 consumable, GPUs on every eighth node, features, an
    extension, and Available/Utilized snapshots with attributes."""
    nodes = []
    for i in range(count):
        gpus = '<Resource name="GPU" type="A100">4</Resource>' if i % 8 == 0 else ""
        nodes.append(
            f"<Node><Id>node{i:05d}</Id><Name>node{i:05d}.example.org</Name>"
            f"<State>{STATES[i % len(STATES)]}</State><Opsys>Linux</Opsys><Arch>x86_64</Arch>"
            f"<Feature>rack{i // 40},ib</Feature>"
            f'<Extension name="Partition" type="Scheduling">p{i % 4}</Extension>'
            f"<Configured><Processors>{32 + i % 4 * 32}</Processors>"
            f'<Memory units="GB">{128 + i % 3 * 128}</Memory><Disk units="TB">1.75</Disk>'
            f'<Swap units="GB">8</Swap><Network units="Gbit/s">100</Network>{gpus}'
            f'<Resource name="License" type="MATLAB">2</Resource></Configured>'
            f"<Available><Processors>{i % 32}</Processors>"
            f'<Memory units="GB" metric="Instantaneous">{i % 100}</Memory></Available>'
            f'<Utilized><Processors wallDuration="3576" consumptionRate="0.63">'
            f"{32 - i % 32}</Processors></Utilized></Node>")
    return f"<Data>{''.join(nodes)}</Data>".encode()


def clocked(document: Document, clock_rate_hz: float) -> Document:
    """``document`` with every CPU and GPU clocked at ``clock_rate_hz`` (units shared between
    machines stay shared)."""
    done: dict[int, tuple[ProcessingUnit, ...]] = {}
    keep: list[tuple[ProcessingUnit, ...]] = []  # keeps the ids in ``done`` from being reused

    def units(original: tuple[ProcessingUnit, ...]) -> tuple[ProcessingUnit, ...]:
        found = done.get(id(original))
        if found is None:
            keep.append(original)
            found = done[id(original)] = tuple(replace(unit, clock_rate_hz=clock_rate_hz)
                                               for unit in original)
        return found

    def machine(slot: Machine | None) -> Machine | None:
        return None if slot is None else replace(slot, cpus=units(slot.cpus),
                                                 gpus=units(slot.gpus))

    environment = document.environment
    assert environment is not None
    return replace(document, environment=replace(environment, datacenters=tuple(
        replace(dc, rooms=tuple(replace(room, racks=tuple(
            replace(rack, slots=tuple(map(machine, rack.slots))) for rack in room.racks))
            for room in dc.rooms)) for dc in environment.datacenters)))


def timed(step: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = step()
    return value, time.perf_counter() - start


def peak_mib(step: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def environment_module() -> Any:
    try:
        from dcx.formats import environment
    except ModuleNotFoundError:
        return None
    return environment


def main() -> None:
    data = generate(NODES)
    schema = load_xsd(sss.XSD_NAME)
    print(f"SSS benchmark: {NODES:,} nodes in <Data>, {len(data) / 2**20:.1f} MiB of XML")

    tree, parse_s = timed(lambda: etree.fromstring(data).getroottree())
    _, xsd_s = timed(lambda: schema.validate(tree))
    baseline = parse_s + xsd_s
    print(f"  baseline lxml parse + XSD validate:   {baseline:7.2f} s "
          f"(parse {parse_s:.2f} s, validate {xsd_s:.2f} s)")

    steps: list[tuple[str, Callable[[], Any]]] = []
    read, read_s = timed(lambda: sss.read(data))
    assert read.ok, read.diagnostics[:3]
    document = read.document
    steps.append(("SSS -> model", lambda: sss.read(data)))
    report("SSS -> model", read_s, baseline)

    environment = environment_module()
    final_document = document
    if environment is None:
        print("  dcx.formats.environment is absent: measuring SSS -> model -> SSS only")
    else:
        with_clock = clocked(document, 2.4e9)
        written, write_s = timed(lambda: environment.write(with_clock))
        kept = sum(1 for _ in environment.read(written.data).document.environment.machines())
        report("model -> environment JSON", write_s, baseline,
               f"{len(written.data) / 2**20:.1f} MiB, {kept:,} nodes, clock rates added")
        steps.append(("model -> environment JSON", lambda: environment.write(with_clock)))
        back, back_s = timed(lambda: environment.read(written.data))
        report("environment JSON -> model", back_s, baseline)
        steps.append(("environment JSON -> model", lambda: environment.read(written.data)))
        if back.ok:
            final_document = back.document
        else:
            errors = sum(d.is_error for d in back.diagnostics)
            print(f"    environment JSON did not read back ({errors:,} errors, first: "
                  f"{back.diagnostics[0].render()[:120]}); SSS is written from the SSS model")

    out, out_s = timed(lambda: sss.write(final_document))
    report("model -> SSS", out_s, baseline, f"{len(out.data) / 2**20:.1f} MiB")
    steps.append(("model -> SSS", lambda: sss.write(final_document)))
    direct = sss.read(sss.write(document).data).document == document
    print(f"  model -> SSS -> model identical to the first read: {direct}")
    if final_document is not document:
        through_json = sss.read(out.data).document == document
        print(f"  ... through environment JSON: {through_json} (environment JSON holds "
              "less than SSS: features, OS, snapshots ...)")

    # tracemalloc sees Python objects only; libxml2's trees are C allocations, hence RSS too.
    print("  peak traced Python memory per step (tracemalloc):")
    for name, step in steps:
        print(f"    {name:<28} {peak_mib(step):8.1f} MiB")
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  process peak RSS over the whole run: {rss_mib:.1f} MiB")


def report(name: str, seconds: float, baseline: float, note: str = "") -> None:
    suffix = f"  [{note}]" if note else ""
    print(f"  {name:<36} {seconds:7.2f} s  ({seconds / baseline:5.1f}x baseline){suffix}")


if __name__ == "__main__":
    main()
