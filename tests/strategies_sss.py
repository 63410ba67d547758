"""Hypothesis strategies for environments SSS Node Object XML can hold exactly.

The shape is what the SSS reader builds: one datacenter, one room, one rack, machines with
text ids that are not decimal numbers (those read back as integers), at most one CPU entry
(the Processors count), one memory and one disk amount, GPUs as runs of identical devices,
and SSS attributes only on resources that are present.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from dcx.core.ids import id_from_text
from dcx.core.model import (
    Consumables,
    Datacenter,
    Environment,
    Machine,
    MachineState,
    NamedResource,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
)
from dcx.formats.sss import STATE_TABLE, STATE_WORD

# Characters XML 1.0 can carry; control characters are covered by unit tests.
text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff"),
    min_size=1, max_size=10,
)
maybe_text = st.none() | text
feature_names = text.map(str.strip).filter(lambda name: bool(name) and "," not in name)
# Finite, non-negative, within xsd:float's range; any float64 in that range round-trips.
amounts = st.floats(min_value=0, max_value=1e30, allow_nan=False, allow_infinity=False)
maybe_amount = st.none() | amounts
counts = st.integers(0, 10**6)
# Configured processors stay within real nodes' range: formats that make a vertex of every
# core (JGF) take seconds per million, and the loss tests convert to them.
core_counts = st.integers(0, 4096)
wall_durations = st.sampled_from(["3576", "0", "12.5", "PT3576S", "P1DT2H", "PT0.5S"])
attribute_sets = st.fixed_dictionaries({}, optional={
    "metric": text, "wallDuration": wall_durations,
    "consumptionRate": st.floats(0, 1e6, allow_nan=False)})


@st.composite
def states(draw: Any) -> tuple[MachineState, str | None]:
    """A state with no label, a listed word of that state, an unlisted word (ACTIVE), or any
    label beside any state."""
    state = draw(st.sampled_from(MachineState))
    words = [word for word, mapped in STATE_TABLE.items() if mapped is state]
    spellings = [word for word in (*words, *(w.title() for w in words), *(w.upper() for w in words))
                 if word != STATE_WORD[state]]
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return state, None
    if choice == 1:
        return state, draw(st.sampled_from(spellings))
    if choice == 3:  # any label beside any state (written in dcx:label)
        return state, draw(text)
    unlisted = draw(text.filter(lambda word: word.strip().casefold() not in STATE_TABLE
                                and bool(word.strip())))
    return MachineState.ACTIVE, unlisted


def _sss_extras(attributes: dict[str, Any]) -> dict[str, Any]:
    return {f"sss:{name}": value for name, value in attributes.items()}


@st.composite
def named_resources(draw: Any, exclude_gpu: bool) -> NamedResource:
    name = draw(text.filter(lambda n: not (exclude_gpu and n == "GPU")))
    return NamedResource(name=name, amount=draw(amounts), type=draw(maybe_text),
                         unit=draw(maybe_text), extras=_sss_extras(draw(attribute_sets)))


@st.composite
def gpu_runs(draw: Any) -> tuple[ProcessingUnit, ...]:
    gpus: list[ProcessingUnit] = []
    previous: tuple[Any, ...] | None = None
    for _ in range(draw(st.integers(0, 3))):
        vendor = draw(st.fixed_dictionaries({}, optional={
            "manufacturer": text, "family": text, "generation": text, "model": text}))
        extras = _sss_extras(draw(st.fixed_dictionaries({}, optional={"units": text,
                                                                       "metric": text})))
        if (vendor, extras) == previous:  # equal neighbours would merge into one run
            continue
        previous = (vendor, extras)
        gpus.extend([ProcessingUnit(cores=1, extras=extras, **vendor)]
                    * draw(st.integers(1, 4)))
    return tuple(gpus)


@st.composite
def consumables(draw: Any) -> Consumables:
    values = {
        "Processors": draw(st.none() | counts), "Memory": draw(maybe_amount),
        "Disk": draw(maybe_amount), "Swap": draw(maybe_amount), "Network": draw(maybe_amount),
    }
    attributes = {name: draw(attribute_sets) for name, value in values.items()
                  if value is not None}
    attributes = {name: kept for name, kept in attributes.items() if kept}
    return Consumables(
        processors=values["Processors"], memory_mb=values["Memory"], disk_mb=values["Disk"],
        swap_mb=values["Swap"], network_mbit_s=values["Network"],
        resources=tuple(draw(st.lists(named_resources(exclude_gpu=False), max_size=2))),
        extras={"sss:attributes": attributes} if attributes else {})


@st.composite
def machines(draw: Any, identity: str) -> Machine:
    state, label = draw(states())
    cores = draw(st.none() | core_counts)
    memory = draw(maybe_amount)
    disk = draw(maybe_amount)
    swap = draw(maybe_amount)
    network = draw(maybe_amount)
    present = {name for name, value in (("Processors", cores), ("Memory", memory),
                                        ("Disk", disk), ("Swap", swap), ("Network", network))
               if value is not None}
    configured = {name: draw(attribute_sets) for name in sorted(present)}
    configured = {name: kept for name, kept in configured.items() if kept}
    extensions = draw(st.lists(st.fixed_dictionaries(
        {"name": text, "value": st.just("") | text}, optional={"type": text}), max_size=2))
    extras: dict[str, Any] = {}
    if extensions:
        extras["sss:extensions"] = extensions
    if configured:
        extras["sss:configured"] = configured
    return Machine(
        id=identity, name=draw(maybe_text), state=state, state_label=label,
        cpus=() if cores is None else (ProcessingUnit(cores=cores),),
        gpus=draw(gpu_runs()),
        memory=() if memory is None else (StorageUnit(capacity_mb=memory),),
        storage=() if disk is None else (StorageUnit(capacity_mb=disk),),
        features=tuple(draw(st.lists(feature_names, max_size=3))),
        resources=tuple(draw(st.lists(named_resources(exclude_gpu=True), max_size=2))),
        os=draw(maybe_text), arch=draw(maybe_text), description=draw(maybe_text),
        swap_mb=swap, network_mbit_s=network,
        available=draw(st.none() | consumables()), utilized=draw(st.none() | consumables()),
        extras=extras)


reference_entries = st.sampled_from([
    {"node": "node1"},
    {"node": "node[5-23,77]", "aggregation": "Range"},
    {"node": "n[001-010].example.org,login1", "aggregation": "Range", "count": 2},
    {"node": "a;b;c", "aggregation": "List", "delimiter": ";"},
    {"node": "bigmem,gpu", "aggregation": "List"},
    {"node": "^node[1-5]$", "aggregation": "Pattern"},
])


@st.composite
def environments(draw: Any) -> Environment:
    ids = draw(st.lists(text.filter(lambda value: bool(value.strip())
                                    and isinstance(id_from_text(value), str)),
                        unique=True, max_size=4))
    rack = Rack(slots=tuple(draw(machines(identity)) for identity in ids))
    references = draw(st.lists(reference_entries, max_size=2))
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),),
                       extras={"sss:references": references} if references else {})


GPU_RESOURCE_XML = '<Resource name="GPU" type="A100">4</Resource>'
STATE_CYCLE = ("Idle", "Busy", "Down", "Drained", "Running")


def generated_cluster(count: int) -> bytes:
    """A ``<Data>`` of ``count`` nodes shaped like a resource manager's answer: every eighth
    node has GPUs, states cycle through ``STATE_CYCLE``, units vary."""
    nodes = []
    for i in range(count):
        gpus = GPU_RESOURCE_XML if i % 8 == 0 else ""
        nodes.append(
            f"<Node><Id>node{i:05d}</Id><State>{STATE_CYCLE[i % 5]}</State>"
            f"<Feature>rack{i // 40}</Feature><Opsys>Linux</Opsys><Arch>x86_64</Arch>"
            f"<Configured><Processors>{32 + i % 4 * 16}</Processors>"
            f'<Memory units="GB">{64 + i % 3 * 64}</Memory><Disk units="TB">2</Disk>'
            f"<Swap>8192</Swap>{gpus}</Configured>"
            f"<Available><Processors>{i % 32}</Processors></Available>"
            f'<Utilized><Processors metric="Average">{32 - i % 32}</Processors></Utilized>'
            "</Node>")
    return f"<Data>{''.join(nodes)}</Data>".encode()


def with_clock_rate(environment: Environment, clock_rate_hz: float) -> Environment:
    """``environment`` with every CPU and GPU clocked at ``clock_rate_hz``: what SSS nodes
    need to become environment JSON machines (SSS has no clock rate; the upstream schema
    requires one)."""
    def clocked(units: tuple[ProcessingUnit, ...]) -> tuple[ProcessingUnit, ...]:
        return tuple(replace(unit, clock_rate_hz=clock_rate_hz) for unit in units)

    def machine(slot: Machine | None) -> Machine | None:
        if slot is None:
            return None
        return replace(slot, cpus=clocked(slot.cpus), gpus=clocked(slot.gpus))

    return replace(environment, datacenters=tuple(
        replace(dc, rooms=tuple(replace(room, racks=tuple(
            replace(rack, slots=tuple(map(machine, rack.slots))) for rack in room.racks))
            for room in dc.rooms)) for dc in environment.datacenters))
