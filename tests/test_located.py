"""``located_at`` follows a model pointer to the object ``located_objects`` names by it, so
the loss report can check a few pointers without walking a large document."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from dcx.core.groups import MachineGroup, Slots
from dcx.core.located import located_at, located_objects
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
)
from tests.strategies import documents


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_every_located_object_is_found_by_its_pointer(document: Document) -> None:
    for pointer, obj in located_objects(document):
        assert located_at(document, pointer) == obj, pointer


def _grouped() -> Document:
    template = Machine(cpus=(ProcessingUnit(cores=4),))
    group = MachineGroup(template, 3, ids=range(1, 4), names=("n1", "n2", "n3"))
    rack = Rack(slots=Slots((Machine(id=0), group, None, Machine(id=9))))
    return Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(
        racks=(rack,)),)),)))


def test_a_group_is_at_its_first_slot_and_nothing_is_inside_it() -> None:
    document = _grouped()
    at_rack = "/environment/datacenters/0/rooms/0/racks/0"
    assert isinstance(located_at(document, f"{at_rack}/slots/1"), MachineGroup)
    assert located_at(document, f"{at_rack}/slots/2") is None  # the group's second member
    assert located_at(document, f"{at_rack}/slots/4") is None  # an empty slot
    assert located_at(document, f"{at_rack}/slots/5") == Machine(id=9)
    assert dict(located_objects(document)).keys() == {
        "/environment", "/environment/datacenters/0", "/environment/datacenters/0/rooms/0",
        at_rack, f"{at_rack}/slots/0", f"{at_rack}/slots/1", f"{at_rack}/slots/5"}


def test_pointers_no_walk_names_find_nothing() -> None:
    document = _grouped()
    for pointer in ("", "/", "/environment/datacenters", "/environment/racks/0",
                    "/environment/datacenters/7", "/environment/datacenters/x",
                    "/workload", "/environment/datacenters/0/rooms/0/racks/0/slots/0/cpus/0"):
        assert located_at(document, pointer) is None, pointer
