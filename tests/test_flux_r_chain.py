"""The issue's chain: environment JSON -> Flux R -> JGF -> environment JSON keeps exactly
what all three hold (``restrict`` to the intersection of their HOLDS), plus the values JGF
fills in for what R leaves out; and the Haizea site that once failed to convert to R."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings

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
from dcx.core.restrict import normalized_for, restrict
from dcx.formats import environment as environment_json
from dcx.formats import flux_r, haizea, jgf
from tests.strategies_environment import environments

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CHAIN_HOLDS = environment_json.HOLDS & flux_r.HOLDS & jgf.HOLDS


def _named(environment: Environment) -> Environment:
    """Every machine gets a distinct host name a nodelist can spell; without one, R would
    name it after its id (any text) and JGF would need unique path segments."""
    serial = iter(range(10**6))

    def rename(machine: Machine | None) -> Machine | None:
        return None if machine is None else replace(machine, name=f"node{next(serial):02d}")

    return replace(environment, datacenters=tuple(
        replace(dc, rooms=tuple(
            replace(room, racks=tuple(
                replace(rack, slots=tuple(rename(slot) for slot in rack.slots))
                for rack in room.racks))
            for room in dc.rooms))
        for dc in environment.datacenters))


def _with_jgf_fill_ins(expected: Environment) -> Environment:
    """What the JGF leg adds where R has nothing: R has no datacenter or rack, so JGF writes
    and reads back ``cluster0`` (id 0) and ``rack0`` (id 0); R has no node or CPU ids, so
    a node's id comes from its name's digits and its one CPU is socket 0; GPU ids, which
    environment JSON reads as text and R cannot hold, were numbered 0..n-1 by R. Environment
    JSON writes unit ids as text and reads decimal text back as integers (losses: Ids as
    text), so the CPU and GPU numbers survive as integers."""
    machines = tuple(
        replace(machine, id=int(machine.name[4:]) if machine.name else index,
                cpus=tuple(replace(cpu, id=0) for cpu in machine.cpus),
                gpus=tuple(replace(gpu, id=position)
                           for position, gpu in enumerate(machine.gpus)))
        for index, machine in enumerate(expected.machines()))
    (datacenter,) = expected.datacenters
    (room,) = datacenter.rooms
    (rack,) = room.racks
    rack = replace(rack, id=0, name="rack0", slots=machines)
    return replace(expected, datacenters=(replace(
        datacenter, id=0, name="cluster0", rooms=(replace(room, racks=(rack,)),)),))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(environments())
def test_environment_to_r_to_jgf_to_environment_keeps_what_all_hold(
        generated: Environment) -> None:
    source = Document(environment=_named(generated))
    start = environment_json.read(environment_json.write(source).data)
    assert start.document is not None, start.diagnostics
    r_written = flux_r.write(start.document)
    r_read = flux_r.read(r_written.data)
    assert r_read.document is not None, r_read.diagnostics
    graph = jgf.write(r_read.document)
    assert graph.ok, graph.diagnostics
    graph_read = jgf.read(graph.data)
    assert graph_read.document is not None, graph_read.diagnostics
    end = environment_json.read(environment_json.write(graph_read.document).data)
    assert end.document is not None, end.diagnostics

    expected = restrict(start.document, CHAIN_HOLDS).environment
    assert expected is not None and end.document.environment is not None
    # The last leg writes environment JSON, whose own value restrictions apply too.
    expected_end = normalized_for(Document(environment=_with_jgf_fill_ins(expected)),
                                  environment_json.FORMAT).environment
    assert end.document.environment == expected_end
    # Every field lost on the way is reported for the leg that lost it.
    reported = {loss.field for loss in conversion_losses(start.document, flux_r.FORMAT)}
    assert "machine.cpus.sockets" in reported or all(
        len(m.cpus) <= 1 for m in start.document.environment.machines())


def test_core_counts_survive_the_chain_per_machine() -> None:
    machines = tuple(Machine(name=f"n{i}", cpus=(ProcessingUnit(cores=16, id="a"),
                                                 ProcessingUnit(cores=8, id="b")))
                     for i in range(3))
    source = Document(environment=_named(Environment(datacenters=(
        Datacenter(rooms=(Room(racks=(Rack(slots=machines),)),)),))))
    r_model = flux_r.read(flux_r.write(source).data).document
    back = jgf.read(jgf.write(r_model).data).document
    assert back is not None and back.environment is not None
    assert [m.core_count for m in back.environment.machines()] == [24, 24, 24]


def test_haizea_disk_and_network_resources_are_reported_lost_not_written_as_children() -> None:
    """A Haizea Disk of 100,000 (MB) is a capacity, not 100,000 devices: R has no child type
    for it (RFC 20 defines core and gpu), so the conversion reports machine.resources lost
    and the R it writes reads back without a warning."""
    for name in ("mixed-site.lwf", "site.xml"):
        site = haizea.read((EXAMPLES / "haizea" / name).read_bytes()).document
        assert site is not None
        document = replace(site, workload=None)
        assert "machine.resources" in {loss.field for loss in
                                       conversion_losses(document, flux_r.FORMAT)}
        written = flux_r.write(document)
        assert written.ok, written.diagnostics
        again = flux_r.read(written.data)
        assert again.ok and again.diagnostics == (), again.diagnostics
        for entry in json.loads(written.data)["execution"]["R_lite"]:
            assert set(entry["children"]) <= {"core", "gpu"}
