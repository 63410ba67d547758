"""Compact machine groups (``dcx.core.groups``): a grouped document reads as the expanded
one, and the loss derivation counts a group with its multiplicity without expanding it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.converters.registry import FORMATS
from dcx.core.fields import FIELDS
from dcx.core.groups import (
    MachineGroup,
    Slots,
    Window,
    compact,
    has_groups,
    machine_count,
    machine_parts,
)
from dcx.core.model import Datacenter, Document, Environment, Machine, ProcessingUnit, Rack, Room
from dcx.core.restrict import dropped_field_counts, restrict
from tests import strategies_environment as environment_strategies
from tests.strategies import documents
from tests.strategies_flux import r_environments


def _machine(index: int) -> Machine:
    return Machine(id=index, name=f"n{index}", rank=index, cpus=(ProcessingUnit(cores=4),))


def _grouped_rack() -> Rack:
    template = Machine(cpus=(ProcessingUnit(cores=4),))
    group = MachineGroup(template, 3, ids=range(1, 4), names=("n1", "n2", "n3"),
                         ranks=range(1, 4))
    return Rack(slots=Slots((_machine(0), group, None)))


def test_slots_read_as_the_tuple_they_stand_for() -> None:
    rack = _grouped_rack()
    expanded = (*(_machine(index) for index in range(4)), None)
    assert len(rack.slots) == 5
    assert rack.slots == expanded and expanded == rack.slots
    assert rack.slots[2] == _machine(2) and rack.slots[-1] is None
    assert None in rack.slots and _machine(3) in rack.slots
    assert rack.slots[1] is rack.slots[1]  # expanded once, then the same objects
    assert rack == Rack(slots=expanded)
    assert rack.machines == expanded[:4]


def test_groups_are_counted_without_expanding() -> None:
    rack = _grouped_rack()
    environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),))
    assert machine_count(environment) == 4
    assert [type(part).__name__ for part in machine_parts(environment)] == [
        "Machine", "MachineGroup"]
    assert isinstance(rack.slots, Slots) and rack.slots._expanded is None


def test_a_group_checks_its_member_values() -> None:
    with pytest.raises(ValueError, match="3 machines with 2 ids"):
        MachineGroup(Machine(), 3, ids=(1, 2))
    with pytest.raises(ValueError, match="template has no name"):
        MachineGroup(Machine(name="x"), 2, names=("a", "b"))
    with pytest.raises(ValueError, match="at least one member"):
        MachineGroup(Machine(), 0)


def test_a_window_is_a_slice_without_copying() -> None:
    window = Window(("a", "b", "c", "d"), 1, 3)
    assert list(window) == ["b", "c"] and window == ("b", "c") and window[-1] == "c"
    with pytest.raises(IndexError):
        window[2]


# ------------------------------------------------------------------------------ losses


@st.composite
def documents_with_runs(draw: st.DrawFn) -> Document:
    """A generated document whose machines come in runs of copies that differ in id, name
    and rank, as a node-set or an R_lite entry states them."""
    document = draw(documents())
    environment = document.environment
    if environment is None:
        return document
    serial = iter(range(10**6))

    def copies(machine: Machine) -> list[Machine]:
        times = draw(st.integers(1, 3))
        return [replace(machine,
                        id=None if machine.id is None else f"{machine.id}-{next(serial)}",
                        name=None if machine.name is None else f"{machine.name}{copy}",
                        rank=None if machine.rank is None else machine.rank * 4 + copy)
                for copy in range(times)]

    datacenters = tuple(replace(dc, rooms=tuple(replace(room, racks=tuple(
        replace(rack, slots=tuple(slot for original in rack.slots
                                  for slot in ([None] if original is None else copies(original))))
        for rack in room.racks)) for room in dc.rooms)) for dc in environment.datacenters)
    return replace(document, environment=replace(environment, datacenters=datacenters))


def _compacted(document: Document) -> Document:
    if document.environment is None:
        return document
    return replace(document, environment=compact(document.environment))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents_with_runs(), st.sets(st.sampled_from(sorted(FIELDS))),
       st.sampled_from([None, "swf", "flux-r"]))
def test_grouped_and_expanded_documents_lose_the_same(
        document: Document, holds: set[str], own_prefix: str | None) -> None:
    grouped = _compacted(document)
    counts = dropped_field_counts(grouped, holds, own_prefix)
    restricted = restrict(grouped, holds, own_prefix)
    if grouped.environment is not None:
        # the one walk counted every group from its template
        assert all(rack.slots._expanded is None for rack in grouped.environment.racks()
                   if isinstance(rack.slots, Slots))
    assert grouped == document
    assert counts == dropped_field_counts(document, holds, own_prefix)
    assert restricted == restrict(document, holds, own_prefix)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents_with_runs())
def test_grouped_and_expanded_documents_lose_the_same_in_every_format(
        document: Document) -> None:
    for target in FORMATS:
        expected: Any = dropped_field_counts(document, target.holds, target.name, target)
        assert dropped_field_counts(_compacted(document), target.holds, target.name,
                                    target) == expected, target.name


def test_compact_groups_runs_that_differ_only_in_member_fields() -> None:
    machines = [_machine(index) for index in range(5)]
    odd = replace(machines[3], os="linux")
    rack = Rack(slots=(*machines[:3], odd, machines[4], None, machines[0]))
    environment = compact(Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),)))
    (compacted,) = environment.racks()
    assert has_groups(environment) and compacted == rack
    assert isinstance(compacted.slots, Slots)
    group = compacted.slots.parts[0]
    assert isinstance(group, MachineGroup) and group.count == 3
    assert group.ids == range(0, 3) and group.ranks == range(0, 3)
    assert group.names == ("n0", "n1", "n2")
    assert [type(part).__name__ for part in compacted.slots.parts[1:]] == [
        "Machine", "Machine", "NoneType", "Machine"]


def _environment(*parts: Machine | MachineGroup | None) -> Environment:
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=(Rack(slots=Slots(parts)),)),)),))


def test_jgf_refuses_a_group_too_large_to_expand_before_expanding_it() -> None:
    from dcx.formats import jgf

    group = MachineGroup(Machine(cpus=(ProcessingUnit(cores=4),)), 10_000_000,
                         ranks=range(10_000_000))
    environment = _environment(group)
    written = jgf.write(Document(environment=environment))
    assert [d.code for d in written.diagnostics] == ["jgf.write-too-large"]
    assert "50,000,000 vertices" in written.diagnostics[0].message
    (rack,) = environment.racks()
    assert isinstance(rack.slots, Slots) and rack.slots._expanded is None


def test_jgf_writes_a_group_as_its_machines() -> None:
    from dcx.formats import jgf

    group = MachineGroup(Machine(cpus=(ProcessingUnit(cores=2),)), 3, names=("a1", "a2", "a3"))
    grouped = jgf.write(Document(environment=_environment(group)))
    single = jgf.write(Document(environment=_environment(*group)))
    assert grouped.data == single.data and grouped.data


# ------------------------------------------------------------------------------ Flux R


def _expanded(environment: Environment) -> Environment:
    datacenters = tuple(replace(dc, rooms=tuple(replace(room, racks=tuple(
        replace(rack, slots=tuple(rack.slots)) for rack in room.racks)) for room in dc.rooms))
        for dc in environment.datacenters)
    return replace(environment, datacenters=datacenters)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(r_environments(), st.booleans())
def test_flux_r_writes_and_normalises_groups_as_their_machines(environment: Environment,
                                                                renumbered: bool) -> None:
    from dcx.formats import flux_r

    if renumbered:  # no ranks: the writer numbers the machines itself
        environment = compact(replace(environment, datacenters=tuple(
            replace(dc, rooms=tuple(replace(room, racks=tuple(
                replace(rack, slots=tuple(None if m is None else replace(m, rank=None)
                                          for m in rack.slots)) for rack in room.racks))
                for room in dc.rooms)) for dc in environment.datacenters)))
    grouped = Document(environment=environment)
    single = Document(environment=_expanded(environment))
    assert flux_r.write(grouped).data == flux_r.write(single).data
    assert flux_r.normal_form(grouped) == flux_r.normal_form(single)
    assert flux_r.normal_form_losses(grouped) == flux_r.normal_form_losses(single)


def test_a_million_ranks_read_and_write_back_as_groups() -> None:
    from dcx.formats import flux_r

    ranks = 1 << 20
    last = ranks - 1
    text = (f'{{"version": 1, "execution": {{"R_lite": [{{"rank": "0-{last}", "children": '
            f'{{"core": "0-3"}}}}], "nodelist": ["n[0-{last}]"], '
            '"properties": {"big": "0-9,20"}}}')
    result = flux_r.read(text.encode())
    assert result.ok and result.document is not None and result.document.environment
    environment = result.document.environment
    (rack,) = environment.racks()
    assert isinstance(rack.slots, Slots)
    assert [part.count if isinstance(part, MachineGroup) else 1
            for part in rack.slots.parts] == [10, 10, 1, ranks - 21]
    assert machine_count(environment) == ranks
    normal = flux_r.normal_form(result.document)
    written = flux_r.write(normal)
    assert b'"rank": "0-1048575"' in written.data and b'"n[0-1048575]"' in written.data
    assert b'"big": "0-9,20"' in written.data
    assert rack.slots._expanded is None
    assert rack.slots[20] == Machine(name="n20", rank=20, cpus=(ProcessingUnit(cores=4),),
                                     features=("big",))


# ------------------------------------------------------------------------------ Haizea


def test_a_haizea_node_set_reads_and_writes_back_as_one_group() -> None:
    from dcx.formats import haizea

    site = (b'<site><resource-types names="CPU Memory"/><nodes>'
            b'<node-set numnodes="1000000"><res type="CPU" amount="400"/>'
            b'<res type="Memory" amount="4096"/></node-set>'
            b'<node-set numnodes="1"><res type="CPU" amount="100"/>'
            b'<res type="Memory" amount="1024"/></node-set></nodes></site>')
    result = haizea.FORMAT.read(site)
    assert result.ok and result.document is not None
    environment = result.document.environment
    assert environment is not None and machine_count(environment) == 1_000_001
    (rack,) = environment.racks()
    assert isinstance(rack.slots, Slots)
    group = rack.slots.parts[0]
    assert isinstance(group, MachineGroup) and group.count == 1_000_000
    assert group.template.core_count == 4 and group.template.memory_mb == 4096
    normal_form, write = haizea.FORMAT.normal_form, haizea.FORMAT.write
    assert normal_form is not None and write is not None
    written = write(normal_form(result.document))
    assert b'numnodes="1000000"' in written.data and b'numnodes="1"' in written.data
    assert rack.slots._expanded is None


# ------------------------------------------------------------------------------ scheduler


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents_with_runs())
def test_the_scheduler_compiles_groups_into_the_table_of_their_machines(
        document: Document) -> None:
    from dcx.scheduler.problem import compile_machines, compile_problem

    if document.environment is None:
        return
    grouped = _compacted(document)
    assert grouped.environment is not None
    assert compile_machines(grouped.environment) == compile_machines(document.environment)
    if document.workload is not None:
        assert compile_problem(document.workload, grouped.environment) == compile_problem(
            document.workload, document.environment)


# ------------------------------------------------------------------------------ environment


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(environment_strategies.environments())
def test_environment_json_writes_and_normalises_groups_as_their_machines(
        environment: Environment) -> None:
    from dcx.formats import environment as environment_json

    grouped = Document(environment=compact(environment))
    single = Document(environment=_expanded(environment))
    assert environment_json.write(grouped).data == environment_json.write(single).data
    assert environment_json.normal_form(grouped) == environment_json.normal_form(single)
    assert environment_json.normal_form_losses(grouped) == \
        environment_json.normal_form_losses(single)
    assert environment_json.leaves_out(grouped) == environment_json.leaves_out(single)


def test_environment_json_writes_a_group_beside_a_string_like_its_placeholder() -> None:
    from dcx.formats import environment as environment_json

    cpu = ProcessingUnit(cores=2, clock_rate_hz=2e9)
    group = MachineGroup(Machine(cpus=(cpu,)), 3, ids=range(3))
    environment = replace(_environment(group), extras={"note": "\0dcx-units-0"})
    written = environment_json.write(Document(environment=environment))
    assert written.data == environment_json.write(
        Document(environment=_expanded(environment))).data
    result = environment_json.read(written.data)
    assert result.ok and result.document is not None
    assert result.document.environment == environment
