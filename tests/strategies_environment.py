"""Hypothesis strategies for environments that environment JSON can hold exactly: what the
upstream jsspp-osp schema accepts (clocked CPUs, whole-MB capacities), with definition names."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from dcx.core.groups import compact
from dcx.core.ids import id_from_text
from dcx.core.model import (
    Datacenter,
    DatacenterSchedulerChange,
    Environment,
    Machine,
    MachineState,
    MachineStateChange,
    Point,
    ProcessingUnit,
    Rack,
    Room,
    SchedulerSpec,
    Size,
    StorageUnit,
)
from dcx.formats.environment import DEFINITION_EXTRA

# Text a JSON document (and XML, for the other formats) can carry.
text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff"),
    min_size=1, max_size=12,
)
maybe_text = st.none() | text
# Unit ids are text that is not a decimal number (which reads back as an integer).
maybe_unit_id = st.none() | text.filter(lambda value: isinstance(id_from_text(value), str))
positive = st.floats(min_value=1e-3, max_value=1e12, allow_nan=False, allow_infinity=False)
maybe_positive = st.none() | positive
scalar = st.integers(-1000, 1000) | text | st.booleans() | st.none()


def processing_units(min_size: int) -> st.SearchStrategy[tuple[ProcessingUnit, ...]]:
    unit = st.builds(
        ProcessingUnit, cores=st.integers(1, 256), clock_rate_hz=positive, id=maybe_unit_id,
        manufacturer=maybe_text, family=maybe_text, generation=maybe_text, model=maybe_text,
        energy_consumption_w=maybe_positive)
    return st.lists(unit, min_size=min_size, max_size=3).map(tuple)


storage_units = st.lists(st.builds(
    StorageUnit, capacity_mb=st.integers(1, 10**9), id=maybe_unit_id, manufacturer=maybe_text,
    family=maybe_text, generation=maybe_text, model=maybe_text, read_speed_mb_s=maybe_positive,
    write_speed_mb_s=maybe_positive, energy_consumption_w=maybe_positive), max_size=2).map(tuple)

machine_bodies = st.fixed_dictionaries({
    "cpus": processing_units(1), "gpus": processing_units(0), "memory": storage_units,
    "storage": storage_units, "name": maybe_text, "state": st.sampled_from(MachineState)})

# Definition names a machine may have been read with: nested, escaped, percent-encoded.
definition_extras = st.sampled_from([
    {}, {}, {DEFINITION_EXTRA: "#/definitions/machines/compute"},
    {DEFINITION_EXTRA: "#/definitions/machines/gpu"}, {DEFINITION_EXTRA: "#/definitions/a~1b"},
    {DEFINITION_EXTRA: "#/definitions/x%20y"}])

schedulers = st.builds(SchedulerSpec, name=text, url=maybe_text,
                       options=st.dictionaries(text, scalar, max_size=3))


@st.composite
def environments(draw: Any) -> Environment:
    """Unique ids per entity kind (as the format requires), events naming real machines,
    racks within capacity, events in time order."""
    counter = iter(range(10**6))
    machine_ids: list[int | str] = []

    def fresh_id(kind: str) -> int | str:
        value = next(counter)
        return value if draw(st.booleans()) else f"{kind}-{value}"

    def machine() -> Machine:
        body = draw(machine_bodies)
        identity = fresh_id("m")
        machine_ids.append(identity)
        return Machine(id=identity, extras=draw(definition_extras), **body)

    def copies(first: Machine) -> list[Machine]:
        """``first`` and copies of it under fresh ids (units of one definition)."""
        run = [first]
        for _ in range(draw(st.integers(0, 3))):
            identity = fresh_id("m")
            machine_ids.append(identity)
            run.append(replace(first, id=identity))
        return run

    def rack() -> Rack:
        slots = tuple(slot for _ in range(draw(st.integers(0, 4)))
                      for slot in (copies(machine()) if draw(st.integers(0, 4)) else [None]))
        capacity = draw(st.none() | st.integers(len(slots), len(slots) + 40))
        return Rack(id=draw(st.none()) or fresh_id("r"), name=draw(maybe_text),
                    capacity_units=capacity, power_capacity_w=draw(maybe_positive), slots=slots)

    def room() -> Room:
        return Room(
            id=fresh_id("room"), name=draw(maybe_text),
            type=draw(st.sampled_from(["COOLING", "HALLWAY", "OFFICE", "POWER", "SERVER"])),
            location=draw(st.none() | st.builds(Point, positive, positive)),
            size=draw(st.none() | st.builds(Size, positive, positive)),
            racks=tuple(rack() for _ in range(draw(st.integers(0, 3)))))

    datacenters = tuple(
        Datacenter(id=fresh_id("dc"), name=draw(maybe_text), location=draw(maybe_text),
                   operator=draw(maybe_text), scheduler=draw(st.none() | schedulers),
                   rooms=tuple(room() for _ in range(draw(st.integers(0, 2)))))
        for _ in range(draw(st.integers(0, 2))))
    events: list[MachineStateChange | DatacenterSchedulerChange] = []
    times = sorted(draw(st.lists(st.integers(0, 10**6), max_size=4)))
    for time in times:
        if machine_ids and draw(st.booleans()):
            events.append(MachineStateChange(
                machine=draw(st.sampled_from(machine_ids)),
                state=draw(st.sampled_from(MachineState)), time_s=time, cause=draw(maybe_text)))
        elif datacenters:
            events.append(DatacenterSchedulerChange(
                datacenter=draw(st.sampled_from([dc.id for dc in datacenters])),
                scheduler=draw(schedulers), time_s=time))
    environment = Environment(datacenters=datacenters, events=tuple(events),
                              name=draw(maybe_text), description=draw(maybe_text))
    # runs of units that differ only in id held as groups (one definition, many units)
    return compact(environment) if draw(st.booleans()) else environment
