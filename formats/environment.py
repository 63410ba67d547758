"""Environment JSON (jsspp-osp v1): datacenters → rooms → racks → machines, timed events,
and ``definitions`` shared through ``$base``/``$merge``.

Reading resolves inheritance first (``formats/jsonref.py``, which lists how dcx departs from
the reference resolver), validates the resolved document against
``schemas/environment.schema.json``, then runs the checks a schema cannot make.

Divergences
-----------

* Resolution follows the format guide, not the reference resolver (see ``jsonref``): own
  array items come first in a ``$merge``, pointers are RFC 6901, cycles are errors.
* The guide's "Concrete Example" points at ``#/definitions/machine/default`` while the key is
  ``machines``, and its multiple-inheritance example misspells ``#/defintion-b``; dcx reports
  both as missing targets (the fixed forms resolve as the guide shows).
* The guide's rack example holds ``{"type": "MACHINE", "cpus": []}``; the schema's
  ``minItems: 1`` makes that invalid, and dcx agrees with the schema.
* The reference validates with a draft-07 validator against a draft-06 schema and never
  checks ``format``; dcx's own schema is draft 2020-12 and accepts what the upstream one
  accepts.
* ``rooms``, ``objects`` and ``units`` may be JSON objects in the upstream schema (their
  content then goes unchecked); dcx reads such an object's values in order, with a warning.
* dcx's schema also accepts 0 cores and 0 MB capacity; like a missing clock rate or a
  fractional capacity, that draws an ``environment.upstream-incompatible`` warning (a
  conformance warning: a conversion never writes it). A document without a topology is
  written as an empty one (``datacenters: []``), which carries the same nothing.

Upstream requirements
---------------------

dcx writes only what the upstream jsspp-osp schema accepts, and invents nothing to get
there (no clock rate, no capacity). ``normal_form`` is what environment JSON makes of a
document; the writer serialises it and the losses are derived from it:

* a machine the upstream schema refuses is left out: no CPU, a CPU or GPU without a positive
  clock-rate or with fewer than one core, a memory or storage capacity that is not a positive
  whole number of MB (reported as ``machine.cpus``, ``machine.gpus``, ``machine.memory`` or
  ``machine.storage``), with the events about it (``environment.events.machine_state``).
  SSS, Haizea, Flux R and JGF carry no clock rate, so their machines never become
  environment machines: such a conversion keeps no machine and is refused
  (``convert.nothing-held``) instead of writing a file upstream tools reject;
* an id the schema cannot hold (negative, boolean) or one an earlier entity of its kind
  already has (ids are unique per kind) is dropped (``machine.id``, ``rack.id`` …);
* a room type outside the schema's list becomes ``SERVER`` (``room.type``);
* a unit id is text: ``"7"`` reads back as the integer 7 (``cpu.id`` …).

Definitions: a rack unit read with a single ``$base`` into ``definitions`` keeps that pointer
in the machine extra ``environment:base`` (``DEFINITION_EXTRA``); the writer puts the
definition back under the user's name, holding what all its machines share, and each
machine writes only what differs. Other formats do not hold the name (a ``machine.extras``
loss). Identical machines without a name share a definition of dcx's own under
``definitions["dcx:machines"]``, whose names the reader does not keep. Definitions of other
entities (CPUs, racks), chains and several bases are written resolved.
* Unknown keys pass the upstream schema silently; dcx keeps them (written back unchanged) and
  warns, because they are usually typos (the upstream example's memory ``speed``).
* Event ``time`` has no unit in the format; dcx reads seconds. An event without ``time`` or
  out of time order draws a warning; an event naming an unknown machine or datacenter is an
  error. The prose says ids are unique per entity kind; dcx checks it (datacenters, rooms,
  racks, machines).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from itertools import repeat
from json.encoder import encode_basestring
from typing import Any
from urllib.parse import unquote

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import (
    Diagnostic,
    InputError,
    ReadResult,
    WriteResult,
    error,
    has_errors,
    warning,
)
from dcx.core.groups import (
    MachineGroup,
    Slots,
    compact,
    machine_parts,
    part_count,
    part_template,
    slot_parts,
    slots_of,
)
from dcx.core.ids import id_from_text
from dcx.core.limits import paused_gc
from dcx.core.model import (
    Datacenter,
    DatacenterSchedulerChange,
    Document,
    Environment,
    Event,
    Id,
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
from dcx.formats.factored_verdict import plan_factored_verdict, representatives_valid
from dcx.formats.jsonref import (
    INHERITANCE_KEYS,
    fold_inherited,
    resolve_document,
    resolve_in_place,
)
from dcx.parsing.jsonio import (
    JsonLocator,
    dumps_canonical,
    escape_pointer_token,
    load_json,
    load_json_object,
)
from dcx.parsing.schemas import schema_diagnostics, schema_verdict

SCHEMA = "environment.schema.json"
UNKNOWN_KEY_REPORTS = 3
"""Unknown-key warnings listed per (entity kind, key); further ones are summarised."""
UPSTREAM_SCHEMA_URL = (
    "https://raw.githubusercontent.com/atlarge-research/jsspp-osp/v1/schemas/"
    "environment.schema.json"
)

HOLDS: frozenset[str] = frozenset({
    "environment", "environment.name", "environment.description", "environment.extras",
    "environment.events.machine_state", "environment.events.scheduler",
    "datacenter", "datacenter.id", "datacenter.name", "datacenter.location",
    "datacenter.operator", "datacenter.scheduler", "datacenter.extras",
    "room", "room.id", "room.name", "room.type", "room.geometry", "room.extras",
    "rack", "rack.id", "rack.name", "rack.capacity_units", "rack.power_capacity_w",
    "rack.empty_slots", "rack.extras",
    "machine.id", "machine.name", "machine.state", "machine.cpus", "machine.cpus.sockets",
    "cpu.clock_rate_hz", "cpu.vendor", "cpu.id", "cpu.energy_consumption_w",
    "machine.gpus", "gpu.cores", "gpu.clock_rate_hz", "gpu.vendor", "gpu.id",
    "gpu.energy_consumption_w",
    "machine.memory", "machine.memory.modules", "memory.details",
    "machine.storage", "machine.storage.devices", "storage.details",
    "machine.extras",
})

_ROOT_KEYS = frozenset(("$schema", "name", "description", "schema_version", "environment",
                        "events", "definitions"))
_DATACENTER_KEYS = frozenset(("id", "name", "location", "operator", "operational", "rooms"))
_ROOM_KEYS = frozenset(("id", "name", "type", "location", "size", "objects"))
_RACK_KEYS = frozenset(("id", "type", "name", "capacity", "power-capacity", "units"))
_MACHINE_KEYS = frozenset(("id", "type", "name", "state", "cpus", "gpus", "memory", "storage"))
_VENDOR_KEYS = ("id", "manufacturer", "family", "generation", "model")
_PU_KEYS = frozenset((*_VENDOR_KEYS, "clock-rate", "cores", "energy-consumption"))
_STORAGE_KEYS = frozenset((*_VENDOR_KEYS, "read-speed", "write-speed", "capacity",
                           "energy-consumption"))
_EVENT_KEYS = frozenset(("type", "time", "attributes", "machine", "state", "cause",
                         "datacenter", "scheduler"))


def sniff(data: bytes) -> bool:
    head = data[:65536]
    return bool(re.search(rb'"environment"\s*:\s*\{', head)) and b'"datacenters"' in data[:1 << 20]


# ------------------------------------------------------------------------------ reading

_MACHINE_STATES = {state.value: state for state in MachineState}


@dataclass(frozen=True)
class Structure:
    """A decoded, resolved document and its verdict: what ``read`` builds the model from."""

    resolved: Any
    locator: JsonLocator | None
    diagnostics: list[Diagnostic]
    """Resolution warnings, or the errors that stop the read."""
    valid: bool
    bases: dict[int, Any] = field(default_factory=dict)
    """``id`` of a resolved object -> the ``$base`` it was written with (when asked for)."""


def read_structure(data: bytes, keep_bases: bool = False) -> Structure:
    """Decode, resolve ``$base``/``$merge`` and judge against our schema: the validation
    path up to, not including, the model and the semantic checks (``read`` pauses the
    cyclic collector for the model it builds; this path allocates too little for that to
    pay, measured). ``keep_bases`` also notes what each resolved object inherited from,
    so that the model keeps the user's definition names."""
    decoded, problems = load_json_object(data, "an environment document", "environment.root",
                                         mark=INHERITANCE_KEYS)
    if decoded is None:
        return Structure(None, None, problems, False)
    locator = decoded.locator
    resolved: Any = decoded.value
    diagnostics: list[Diagnostic] = []
    # The fast path rewrites the marked objects in place, so they keep their identity.
    bases = {id(node): base for node, base in zip(decoded.marked, map(
        dict.get, decoded.marked, repeat("$base")), strict=True) if _named_base(base)
    } if keep_bases else {}
    # A factored cluster is judged as written plus one unit per definition (see
    # factored_verdict); the verdict on the written form must come before resolution.
    plan = plan_factored_verdict(resolved, decoded.marked)
    written_valid = plan is not None and schema_verdict(SCHEMA, resolved)
    # The decoder listed the objects that inherit; most documents resolve in place, and
    # the rest go through the exact resolver, which explains what is wrong.
    if not resolve_in_place(resolved, decoded.marked):
        plan = None
        fresh, _ = load_json(data)
        assert fresh is not None  # it decoded a moment ago
        written = dict(_rack_unit_bases(fresh.value)) if keep_bases else {}
        try:
            resolved, diagnostics = resolve_document(fresh.value)
        except InputError as exc:
            return Structure(None, locator, [locator.diagnostic(exc.diagnostic)], False)
        # The exact resolver builds new objects: match rack units by their position.
        bases = {id(unit): written[place] for place, unit in _rack_units(resolved)
                 if place in written and _named_base(written[place])}
    if plan is not None and written_valid and representatives_valid(SCHEMA, plan):
        return Structure(resolved, locator, diagnostics, True, bases)
    structural = schema_diagnostics(SCHEMA, resolved, locator)
    if structural:
        structural = _at_definitions(data, locator, structural)
        return Structure(None, locator, locator.place(diagnostics) + structural, False)
    return Structure(resolved, locator, diagnostics, True, bases)


def _at_definitions(data: bytes, locator: JsonLocator,
                    diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Errors in values inherited through ``$base`` once each, at the definition's own line
    and pointer (the resolved document repeats them for every machine that inherits, at
    pointers the file does not have). Only on the error path: it decodes the file again,
    because resolution rewrote the decoded objects."""
    written, _ = load_json(data)
    return diagnostics if written is None else fold_inherited(diagnostics, written.value,
                                                              locator.locate)


def _rack_units(root: Any) -> Iterable[tuple[tuple[Any, ...], Any]]:
    """Every rack unit with its place (datacenter, room, rack, unit keys or indexes)."""
    def members(container: Any, key: str) -> Iterable[tuple[Any, Any]]:
        value = container.get(key) if isinstance(container, dict) else None
        if isinstance(value, dict):
            return value.items()
        return enumerate(value) if isinstance(value, list) else ()

    topology = root.get("environment") if isinstance(root, dict) else None
    for d, datacenter in members(topology, "datacenters"):
        for r, room in members(datacenter, "rooms"):
            for k, rack in members(room, "objects"):
                for u, unit in members(rack, "units"):
                    yield (d, r, k, u), unit


def _named_base(base: Any) -> bool:
    """Whether ``base`` names a user's definition (dcx's own are not kept)."""
    return (base.__class__ is str and base.startswith(_DEFINITIONS_PREFIX)
            and not base.startswith(_GENERATED_PREFIX))


def _rack_unit_bases(root: Any) -> Iterable[tuple[tuple[Any, ...], Any]]:
    for place, unit in _rack_units(root):
        if isinstance(unit, dict) and "$base" in unit:
            yield place, unit["$base"]


def read(data: bytes) -> ReadResult:
    with paused_gc():
        return _read(data)


def _read(data: bytes) -> ReadResult:
    structure = read_structure(data, keep_bases=True)
    if not structure.valid or structure.locator is None:
        return ReadResult(None, tuple(structure.diagnostics))
    locator = structure.locator
    resolved = structure.resolved
    diagnostics = list(structure.diagnostics)
    builder = _Builder(locator, structure.bases)
    environment = builder.environment(resolved)
    diagnostics += builder.finish()
    diagnostics += semantic_checks(environment, builder)
    diagnostics = locator.place(diagnostics, key_codes=frozenset({"environment.unknown-key"}))
    # consecutive units of one definition that differ only in id and name: one group each
    document = Document(environment=compact(environment, shared_parts=True))
    return ReadResult(None if has_errors(diagnostics) else document, tuple(diagnostics))


@dataclass
class _Builder:
    """Builds the model from a resolved, schema-valid document. Shared definitions come out
    of the resolver as the same dict objects, so components are built once per object."""

    locator: JsonLocator
    bases: dict[int, Any]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    pointers: dict[str, list[tuple[Id, str]]] = field(default_factory=dict)
    _cache: dict[int, Any] = field(default_factory=dict)
    _by_content: dict[Any, tuple[Any, ...]] = field(default_factory=dict)
    _unknown_keys: dict[tuple[str, str], int] = field(default_factory=dict)

    def extras(self, node: dict[str, Any], known: Iterable[str], kind: str,
               pointer: str) -> dict[str, Any]:
        known_set = known if isinstance(known, frozenset) else frozenset(known)
        if node.keys() <= known_set:
            return {}  # the usual case, checked in C
        unknown = {key: value for key, value in node.items() if key not in known_set}
        for key in unknown:
            seen = self._unknown_keys.get((kind, key), 0)
            self._unknown_keys[(kind, key)] = seen + 1
            if seen < UNKNOWN_KEY_REPORTS:
                self.diagnostics.append(warning(
                    f"unknown {kind} key {key!r} (kept; is it a typo?)",
                    "environment.unknown-key", pointer=f"{pointer}/{escape_pointer_token(key)}"))
        return unknown

    def finish(self) -> list[Diagnostic]:
        """The diagnostics, with one summary line per unknown key seen too often to list."""
        summaries = [
            warning(f"unknown {kind} key {key!r} appears {count - UNKNOWN_KEY_REPORTS:,} more "
                    "times", "environment.unknown-key-repeated")
            for (kind, key), count in self._unknown_keys.items() if count > UNKNOWN_KEY_REPORTS
        ]
        return self.diagnostics + summaries

    def collection(self, value: Any, pointer: str, what: str) -> list[tuple[str, Any]]:
        if isinstance(value, dict):
            self.diagnostics.append(warning(
                f"{what} is an object; dcx reads its values in order (an array is expected)",
                "environment.object-collection", pointer=pointer))
            return [(f"{pointer}/{escape_pointer_token(k)}", v) for k, v in value.items()]
        return [(f"{pointer}/{index}", item) for index, item in enumerate(value or [])]

    def note_id(self, kind: str, value: Id | None, pointer: str) -> None:
        if value is not None:
            self.pointers.setdefault(kind, []).append((value, pointer))

    def environment(self, root: dict[str, Any]) -> Environment:
        topology = root["environment"]
        datacenters = tuple(
            self.datacenter(node, where)
            for where, node in self.collection(topology.get("datacenters"),
                                               "/environment/datacenters", "datacenters"))
        # ``definitions`` are consumed by resolution and regenerated by the writer; the
        # ``$schema`` URL is always the upstream one on output.
        extras = self.extras(root, _ROOT_KEYS, "root", "")
        if "schema_version" in root:
            extras["schema_version"] = root["schema_version"]
        topology_extras = {k: v for k, v in topology.items() if k != "datacenters"}
        if topology_extras:
            extras["environment"] = topology_extras
        events = tuple(self.event(node, f"/events/{index}")
                       for index, node in enumerate(root.get("events") or []))
        return Environment(datacenters=datacenters, events=events, name=root.get("name"),
                           description=root.get("description"), extras=extras)

    def datacenter(self, node: dict[str, Any], pointer: str) -> Datacenter:
        self.note_id("datacenter", node.get("id"), pointer)
        operational = dict(node.get("operational") or {})
        scheduler = (self.scheduler(operational.pop("scheduler"))
                     if "scheduler" in operational else None)
        extras = self.extras(node, _DATACENTER_KEYS, "datacenter", pointer)
        if operational:
            extras["operational"] = operational
        rooms = tuple(self.room(item, where) for where, item in
                      self.collection(node.get("rooms"), f"{pointer}/rooms", "rooms"))
        return Datacenter(id=node.get("id"), name=node.get("name"), location=node.get("location"),
                          operator=node.get("operator"), scheduler=scheduler, rooms=rooms,
                          extras=extras)

    @staticmethod
    def scheduler(node: dict[str, Any]) -> SchedulerSpec:
        return SchedulerSpec(name=node["name"], url=node.get("url"),
                             options=dict(node.get("options") or {}))

    def room(self, node: dict[str, Any], pointer: str) -> Room:
        self.note_id("room", node.get("id"), pointer)
        location = node.get("location")
        size = node.get("size")
        racks = tuple(self.rack(item, where) for where, item in
                      self.collection(node.get("objects"), f"{pointer}/objects", "objects"))
        return Room(id=node.get("id"), name=node.get("name"), type=node.get("type", "SERVER"),
                    location=Point(location["x"], location["y"]) if location else None,
                    size=Size(size["width"], size["height"]) if size else None, racks=racks,
                    extras=self.extras(node, _ROOM_KEYS, "room", pointer))

    def rack(self, node: dict[str, Any], pointer: str) -> Rack:
        self.note_id("rack", node.get("id"), pointer)
        slots = tuple(None if item.get("type") == "EMPTY" else self.machine(item, where)
                      for where, item in self.collection(node.get("units"), f"{pointer}/units",
                                                         "units"))
        return Rack(id=node.get("id"), name=node.get("name"), capacity_units=node.get("capacity"),
                    power_capacity_w=node.get("power-capacity"), slots=slots,
                    extras=self.extras(node, _RACK_KEYS, "rack", pointer))

    def machine(self, node: dict[str, Any], pointer: str) -> Machine:
        self.note_id("machine", node.get("id"), pointer)
        extras = self.extras(node, _MACHINE_KEYS, "machine", pointer)
        base = self.bases.get(id(node))
        if base is not None:
            extras[DEFINITION_EXTRA] = base
        return Machine(
            id=node.get("id"), name=node.get("name"),
            state=_MACHINE_STATES[node.get("state", "ACTIVE")],  # the schema checked it
            cpus=self.units(node.get("cpus"), pointer, "cpus", self.processing_unit),
            gpus=self.units(node.get("gpus"), pointer, "gpus", self.processing_unit),
            memory=self.units(node.get("memory"), pointer, "memory", self.storage_unit),
            storage=self.units(node.get("storage"), pointer, "storage", self.storage_unit),
            extras=extras)

    def units(self, nodes: list[Any] | None, machine_pointer: str, key: str,
              build: Any) -> tuple[Any, ...]:
        if not nodes:
            return ()
        cached = self._cache.get(id(nodes))
        if cached is not None and cached[0] is nodes:
            return cached[1]
        # Written-out clusters repeat the same CPU and memory objects in every machine:
        # equal content builds once (units are immutable, so sharing them is safe).
        try:
            content = (build, tuple(tuple(item.items()) for item in nodes))
            shared = self._by_content.get(content)
        except (TypeError, AttributeError):  # nested or non-object values: build each time
            content, shared = None, None
        if shared is not None:
            return shared
        pointer = f"{machine_pointer}/{key}"  # only for units built here, not shared ones
        built = tuple(build(item, f"{pointer}/{index}") for index, item in enumerate(nodes))
        self._cache[id(nodes)] = (nodes, built)
        if content is not None:
            self._by_content[content] = built
        return built

    def processing_unit(self, node: dict[str, Any], pointer: str) -> ProcessingUnit:
        return ProcessingUnit(
            cores=node["cores"], clock_rate_hz=node.get("clock-rate"), id=_unit_id(node),
            manufacturer=node.get("manufacturer"), family=node.get("family"),
            generation=node.get("generation"), model=node.get("model"),
            energy_consumption_w=node.get("energy-consumption"),
            extras=self.extras(node, _PU_KEYS, "processing unit", pointer))

    def storage_unit(self, node: dict[str, Any], pointer: str) -> StorageUnit:
        return StorageUnit(
            capacity_mb=node["capacity"], id=_unit_id(node),
            manufacturer=node.get("manufacturer"), family=node.get("family"),
            generation=node.get("generation"), model=node.get("model"),
            read_speed_mb_s=node.get("read-speed"), write_speed_mb_s=node.get("write-speed"),
            energy_consumption_w=node.get("energy-consumption"),
            extras=self.extras(node, _STORAGE_KEYS, "memory/storage unit", pointer))

    def event(self, node: dict[str, Any], pointer: str) -> Event:
        extras_check = self.extras(node, _EVENT_KEYS, "event", pointer)
        attributes = dict(node.get("attributes") or {})
        if extras_check:
            attributes.update({f"environment:{k}": v for k, v in extras_check.items()})
        if node["type"] == "MACHINE_STATE_CHANGE":
            return MachineStateChange(machine=node["machine"], state=MachineState(node["state"]),
                                      time_s=node.get("time"), cause=node.get("cause"),
                                      attributes=attributes)
        return DatacenterSchedulerChange(datacenter=node["datacenter"],
                                         scheduler=self.scheduler(node["scheduler"]),
                                         time_s=node.get("time"), attributes=attributes)


def _unit_id(node: dict[str, Any]) -> Id | None:
    """A unit id: text in the format, an integer when it is one's decimal form (losses: Ids as
    text), so the integer GPU ids of Flux R survive."""
    value = node.get("id")
    return None if value is None else id_from_text(value)


def semantic_checks(environment: Environment, builder: _Builder) -> list[Diagnostic]:
    """What the schema cannot say: unique ids, references, rack capacity, event order."""
    found: list[Diagnostic] = []
    for kind, entries in builder.pointers.items():
        first_seen: dict[Id, str] = {}
        for value, pointer in entries:
            if value in first_seen:
                found.append(error(f"{kind} id {value!r} is not unique (first used at "
                                   f"{first_seen[value]})", "environment.duplicate-id",
                                   pointer=f"{pointer}/id"))
            else:
                first_seen[value] = pointer
    machine_ids = {value for value, _ in builder.pointers.get("machine", [])}
    datacenter_ids = {value for value, _ in builder.pointers.get("datacenter", [])}
    found += _upstream_compatibility(environment)
    for rack, pointer in _rack_pointers(environment):
        if rack.capacity_units is not None and len(rack.slots) > rack.capacity_units:
            found.append(error(f"rack holds {len(rack.slots)} units but its capacity is "
                               f"{rack.capacity_units}", "environment.rack-capacity",
                               pointer=f"{pointer}/units"))
    previous: float | None = None
    for index, event in enumerate(environment.events):
        pointer = f"/events/{index}"
        if isinstance(event, MachineStateChange) and event.machine not in machine_ids:
            found.append(error(f"event names machine {event.machine!r}, which does not exist",
                               "environment.unknown-machine", pointer=f"{pointer}/machine"))
        if isinstance(event, DatacenterSchedulerChange) and event.datacenter not in datacenter_ids:
            found.append(error(f"event names datacenter {event.datacenter!r}, which does not "
                               "exist", "environment.unknown-datacenter",
                               pointer=f"{pointer}/datacenter"))
        if event.time_s is None:
            found.append(warning("event has no time, so it has no place on the time line",
                                 "environment.event-untimed", pointer=pointer))
            continue
        if previous is not None and event.time_s < previous:
            found.append(warning(f"event at time {event.time_s} comes after one at {previous}",
                                 "environment.event-order", pointer=f"{pointer}/time"))
        previous = event.time_s if previous is None else max(previous, event.time_s)
    return found


def _upstream_counts(cpus: tuple[ProcessingUnit, ...], gpus: tuple[ProcessingUnit, ...],
                     memory: tuple[StorageUnit, ...], storage: tuple[StorageUnit, ...]
                     ) -> tuple[bool, bool, bool, bool]:
    """(no CPUs, a unit without clock rate, a fractional MB capacity, a zero count or
    capacity): what the upstream schema refuses in one machine."""
    units = memory + storage
    return (
        not cpus,
        any(pu.clock_rate_hz is None for pu in cpus + gpus),
        any(not float(unit.capacity_mb).is_integer() for unit in units),
        any(pu.cores == 0 for pu in cpus + gpus) or any(unit.capacity_mb == 0 for unit in units),
    )


def _upstream_compatibility(environment: Environment) -> list[Diagnostic]:
    """dcx's schema is a superset of the upstream one so that data from formats without
    clock rates or whole-MB sizes can be written; say where upstream tools would refuse."""
    missing_clock = no_cpus = fractional = zero = 0
    first: str | None = None
    verdicts: dict[tuple[int, ...], tuple[bool, bool, bool, bool]] = {}
    kept: list[tuple[Any, ...]] = []
    for rack, pointer in _rack_pointers(environment):
        for slot, machine in enumerate(rack.slots):
            if machine is None:
                continue
            # machines of one type share their unit tuples: judge each combination once
            parts = (machine.cpus, machine.gpus, machine.memory, machine.storage)
            key = tuple(map(id, parts))
            counts = verdicts.get(key)
            if counts is None:
                counts = verdicts[key] = _upstream_counts(*parts)
                kept.append(parts)  # keeps the ids in the key from being reused
            if any(counts) and first is None:
                first = f"{pointer}/units/{slot}"
            no_cpus += counts[0]
            missing_clock += counts[1]
            fractional += counts[2]
            zero += counts[3]
    problems = [f"{count:,} {what}" for count, what in (
        (no_cpus, "machine(s) without CPUs"), (missing_clock, "machine(s) with a processing "
         "unit without clock-rate"), (fractional, "machine(s) with a fractional MB capacity"),
        (zero, "machine(s) with a zero core count or capacity"))
        if count]
    if not problems:
        return []
    return [warning("the upstream jsspp-osp schema would reject " + ", ".join(problems) +
                    " (dcx accepts them)", "environment.upstream-incompatible",
                    pointer=first or "")]


def _rack_pointers(environment: Environment) -> Iterable[tuple[Rack, str]]:
    for d, datacenter in enumerate(environment.datacenters):
        for r, room in enumerate(datacenter.rooms):
            for k, rack in enumerate(room.racks):
                yield rack, f"/environment/datacenters/{d}/rooms/{r}/objects/{k}"


# ------------------------------------------------------------------------------ normal form

ROOM_TYPES = frozenset(("COOLING", "HALLWAY", "OFFICE", "POWER", "SERVER"))
DEFINITION_EXTRA = "environment:base"
"""Machine extra: the ``$base`` pointer into ``definitions`` a rack unit was read with. The
writer puts the machine's shared hardware back under that name, so a rewrite keeps the
user's definition names; formats other than environment JSON do not hold it."""
_DEFINITIONS_PREFIX = "#/definitions/"
GENERATED_DEFINITIONS = "dcx:machines"
"""Where the writer puts definitions of its own (``type-1``, …) for identical machines the
user named no definition for; the reader keeps no name under it, so they stay dcx's."""
_GENERATED_PREFIX = f"{_DEFINITIONS_PREFIX}{GENERATED_DEFINITIONS}/"
_ID_PATHS = {"datacenter": "datacenter.id", "room": "room.id", "rack": "rack.id",
             "machine": "machine.id"}


_UPSTREAM_NEEDS = {
    "machine.cpus": "a CPU with a positive clock rate and at least one core",
    "machine.gpus": "GPUs with a positive clock rate and at least one core",
    "machine.memory": "memory in whole MB",
    "machine.storage": "storage in whole MB",
}


def leaves_out(document: Document) -> str:
    """Why the upstream jsspp-osp schema refuses machines of ``document``, in one line."""
    parts = list(machine_parts(document.environment)) if document.environment else []
    # a group's members share their hardware: judged once, counted with the group
    refused = [(part, problems) for part in parts
               if (problems := upstream_problems(part_template(part)))]
    if not refused:
        return ""
    part, problems = refused[0]
    first = part.member(0) if isinstance(part, MachineGroup) else part
    name = first.name or first.id or "the first"
    needs = " and ".join(_UPSTREAM_NEEDS[problem] for problem in problems)
    lacking = sum(part_count(part) for part, _ in refused)
    return (f"the jsspp-osp schema needs {needs} for every machine; "
            f"{lacking} of {sum(map(part_count, parts))} machines lack it (first: {name})")


def upstream_problems(machine: Machine) -> tuple[str, ...]:
    """The held field paths for which the upstream jsspp-osp schema refuses ``machine``:
    no CPU, or a processing unit without a positive clock-rate or with fewer than one core
    (``machine.cpus``, ``machine.gpus``); a memory or storage unit whose capacity is not a
    positive whole number of MB (``machine.memory``, ``machine.storage``); a power draw or
    speed that is not positive (the unit's path)."""
    problems = []
    if not machine.cpus or not _upstream_processing_units(machine.cpus):
        problems.append("machine.cpus")
    if machine.gpus and not _upstream_processing_units(machine.gpus):
        problems.append("machine.gpus")
    if machine.memory and not _upstream_storage_units(machine.memory):
        problems.append("machine.memory")
    if machine.storage and not _upstream_storage_units(machine.storage):
        problems.append("machine.storage")
    return tuple(problems)


def _upstream_processing_units(units: tuple[ProcessingUnit, ...]) -> bool:
    for unit in units:  # a plain loop: this runs for every machine of a large cluster
        rate, energy = unit.clock_rate_hz, unit.energy_consumption_w
        if rate is None or rate <= 0 or unit.cores < 1 or (energy is not None and energy <= 0):
            return False
    return True


def _upstream_storage_units(units: tuple[StorageUnit, ...]) -> bool:
    for unit in units:
        capacity = unit.capacity_mb
        if capacity <= 0 or (capacity.__class__ is not int and not capacity.is_integer()):
            return False
        read, write, energy = unit.read_speed_mb_s, unit.write_speed_mb_s, unit.energy_consumption_w
        if ((read is not None and read <= 0) or (write is not None and write <= 0)
                or (energy is not None and energy <= 0)):
            return False
    return True


def _has_text_unit_ids(machine: Machine) -> bool:
    for units in (machine.cpus, machine.gpus, machine.memory, machine.storage):
        for unit in units:
            if unit.id.__class__ is str:
                return True
    return False


@lru_cache(maxsize=1024)
def definition_path(pointer: str) -> tuple[str, ...] | None:
    """The keys under ``definitions`` that a ``$base`` pointer names (RFC 6901, percent-
    decoded as the resolver reads it), or ``None`` when it does not point there."""
    if not pointer.startswith(_DEFINITIONS_PREFIX):
        return None
    tokens = unquote(pointer[1:]).split("/")[1:]
    if tokens[:1] != ["definitions"] or len(tokens) < 2:
        return None
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in tokens[1:])


@dataclass(frozen=True)
class Normalised:
    """What environment JSON makes of an environment, and the held paths that changes."""

    environment: Environment
    changed: frozenset[str]
    left_out_labels: tuple[Callable[[], Iterable[Id | str]], ...]
    """What lists the machines left out, a group's members by one callable."""

    @property
    def left_out(self) -> tuple[Id | str, ...]:
        """The machines left out (their id, name or position), in document order."""
        return tuple(label for labels in self.left_out_labels for label in labels())


class _Normaliser:
    """One pass over an environment: leaves out the machines the upstream schema refuses,
    keeps each entity kind's ids unique, maps room types outside the schema's list to
    SERVER, drops definition names it cannot write back and events about machines left
    out. Objects that need no change are kept as they are (the usual case costs a walk)."""

    def __init__(self) -> None:
        self.changed: set[str] = set()
        self.left_out: list[Callable[[], Iterable[Id | str]]] = []
        self.seen: dict[str, set[Id]] = {kind: set() for kind in _ID_PATHS}
        self.verdicts: dict[tuple[int, ...], tuple[tuple[str, ...], Any]] = {}
        self.judged: list[Machine] = []  # keeps the ids in ``verdicts`` from being reused
        self.claimed: set[tuple[str, ...]] = set()
        self.claimed_prefixes: set[tuple[str, ...]] = set()
        self.position = 0

    def environment(self, environment: Environment) -> Environment:
        datacenters = _same_or(environment.datacenters,
                               tuple(map(self.datacenter, environment.datacenters)))
        events = _same_or(environment.events, tuple(
            self.event(event) for event in environment.events if self.keeps(event)))
        if datacenters is environment.datacenters and events is environment.events:
            return environment
        return replace(environment, datacenters=datacenters, events=events)

    def keeps(self, event: Event) -> bool:
        if isinstance(event, MachineStateChange):
            if event.machine in self.seen["machine"]:
                return True
            self.changed.add("environment.events.machine_state")
            return False
        if event.datacenter in self.seen["datacenter"]:
            return True
        self.changed.add("environment.events.scheduler")
        return False

    def event(self, event: Event) -> Event:
        if isinstance(event, MachineStateChange):
            return event
        scheduler = self.scheduler(event.scheduler, "environment.events.scheduler")
        return event if scheduler is event.scheduler else replace(event, scheduler=scheduler)

    def scheduler(self, spec: SchedulerSpec | None, path: str) -> SchedulerSpec | None:
        """Options without the resolver's keywords: a ``$base`` or ``$merge`` key written into
        free-form options would be read back as a reference, not as the option."""
        if spec is None:
            return None
        options = _without_reference_keys(spec.options)
        if options is spec.options:
            return spec
        self.changed.add(path)
        return replace(spec, options=options)

    def unique(self, kind: str, value: Id | None) -> Id | None:
        """``value``, unless an earlier entity of ``kind`` has it or the schema's id
        (a string or a non-negative integer) cannot be it."""
        if value is None:
            return None
        seen = self.seen[kind]
        if value in seen or isinstance(value, bool) or (isinstance(value, int) and value < 0):
            self.changed.add(_ID_PATHS[kind])
            return None
        seen.add(value)
        return value

    def datacenter(self, datacenter: Datacenter) -> Datacenter:
        identity = self.unique("datacenter", datacenter.id)
        rooms = _same_or(datacenter.rooms, tuple(map(self.room, datacenter.rooms)))
        scheduler = self.scheduler(datacenter.scheduler, "datacenter.scheduler")
        if identity == datacenter.id and rooms is datacenter.rooms \
                and scheduler is datacenter.scheduler:
            return datacenter
        return replace(datacenter, id=identity, rooms=rooms, scheduler=scheduler)

    def room(self, room: Room) -> Room:
        identity = self.unique("room", room.id)
        kind = room.type
        if kind not in ROOM_TYPES:
            self.changed.add("room.type")
            kind = "SERVER"  # the schema's kind for a room that holds racks
        racks = _same_or(room.racks, tuple(map(self.rack, room.racks)))
        if identity == room.id and kind == room.type and racks is room.racks:
            return room
        return replace(room, id=identity, type=kind, racks=racks)

    def rack(self, rack: Rack) -> Rack:
        identity = self.unique("rack", rack.id)
        if isinstance(rack.slots, Slots):
            parts = rack.slots.parts
            kept = [kept for part in parts for kept in self.part(part)]
            if len(kept) == len(parts) and all(a is b for a, b in zip(kept, parts, strict=True)):
                slots: Sequence[Machine | None] = rack.slots
            else:
                slots = slots_of(kept)
        else:
            slots = _same_or(rack.slots, tuple(
                slot for slot in map(self.slot, rack.slots) if slot is not _LEFT_OUT))
        if identity == rack.id and slots is rack.slots:
            return rack
        return replace(rack, id=identity, slots=slots)

    def part(self, part: Machine | MachineGroup | None) -> list[Machine | MachineGroup | None]:
        """A slot or a group as the normal form keeps it (a group whose member ids the
        schema cannot all keep is taken machine by machine)."""
        if not isinstance(part, MachineGroup):
            slot = self.slot(part)
            return [] if slot is _LEFT_OUT else [slot]  # type: ignore[list-item,unused-ignore]
        template = part.template
        problems, units = self.verdict(template)
        if problems:
            self.changed.update(problems)
            self.left_out.append(partial(_member_labels, part, self.position))
            self.position += part.count
            return []
        if template.id is not None or (part.ids is not None and not self.all_unique(part.ids)):
            kept = (self.slot(member) for member in part)
            return [machine for machine in kept  # type: ignore[misc,unused-ignore]
                    if machine is not _LEFT_OUT]
        self.position += part.count
        fixed = self.shared_parts(template, units)
        return [part if fixed is template else replace(part, template=fixed)]

    def all_unique(self, ids: Sequence[Id]) -> bool:
        """Whether ids unseen, distinct and writable; if so they are now seen."""
        seen = self.seen["machine"]
        if any(value in seen or isinstance(value, bool) or (isinstance(value, int) and value < 0)
               for value in ids) or len(set(ids)) != len(ids):
            return False
        seen.update(ids)
        return True

    def verdict(self, machine: Machine) -> tuple[tuple[str, ...], tuple[Any, ...] | None]:
        key = (id(machine.cpus), id(machine.gpus), id(machine.memory), id(machine.storage))
        verdict = self.verdicts.get(key)
        if verdict is None:
            verdict = self.verdicts[key] = self.judge(machine)
            self.judged.append(machine)
        return verdict

    def slot(self, machine: Machine | None) -> Machine | object | None:
        if machine is None:
            return None
        self.position += 1
        problems, units = self.verdict(machine)
        if problems:
            self.changed.update(problems)
            label = machine.id if machine.id is not None else machine.name or f"#{self.position}"
            self.left_out.append(partial(repeat, label, 1))
            return _LEFT_OUT
        identity = self.unique("machine", machine.id)
        if identity != machine.id:
            machine = replace(machine, id=identity)
        return self.shared_parts(machine, units)

    def shared_parts(self, machine: Machine, units: tuple[Any, ...] | None) -> Machine:
        """``machine`` with its definition name dropped when it cannot be written back and
        its units as they read back."""
        extras = machine.extras
        pointer = extras.get(DEFINITION_EXTRA) if extras else None
        if pointer is not None and not self.claim(pointer):
            self.changed.add("machine.extras")
            extras = {key: value for key, value in extras.items() if key != DEFINITION_EXTRA}
        if extras is machine.extras and units is None:
            return machine
        machine = replace(machine, extras=extras)
        if units is not None:
            cpus, gpus, memory, storage = units
            machine = replace(machine, cpus=cpus, gpus=gpus, memory=memory, storage=storage)
        return machine

    def judge(self, machine: Machine) -> tuple[tuple[str, ...], tuple[Any, ...] | None]:
        """What the upstream schema refuses in the machine's units, and the units with the
        ids they read back with when that differs (unit ids are text in the format: the
        text ``"7"`` reads back as the integer 7)."""
        problems = upstream_problems(machine)
        if problems or not _has_text_unit_ids(machine):
            return problems, None
        parts = []
        for units, path in ((machine.cpus, "cpu.id"), (machine.gpus, "gpu.id"),
                            (machine.memory, "memory.details"),
                            (machine.storage, "storage.details")):
            fixed = _same_or(units, tuple(
                unit if unit.id is None or id_from_text(str(unit.id)) == unit.id
                else replace(unit, id=id_from_text(str(unit.id))) for unit in units))
            if fixed is not units:
                self.changed.add(path)
            parts.append(fixed)
        originals = (machine.cpus, machine.gpus, machine.memory, machine.storage)
        if all(new is old for new, old in zip(parts, originals, strict=True)):
            return problems, None
        return problems, tuple(parts)

    def claim(self, pointer: Any) -> bool:
        """Whether the writer can put a definition where ``pointer`` points: a place under
        ``definitions`` that is neither inside nor above another machine definition."""
        path = definition_path(pointer) if isinstance(pointer, str) else None
        if path is None or path[0] == GENERATED_DEFINITIONS:
            return False
        if path in self.claimed:
            return True
        prefixes = {path[:end] for end in range(1, len(path))}
        if path in self.claimed_prefixes or not prefixes.isdisjoint(self.claimed):
            return False
        self.claimed.add(path)
        self.claimed_prefixes |= prefixes
        return True


_LEFT_OUT = object()


def _member_labels(group: MachineGroup, before: int) -> Iterator[Id | str]:
    """Each member's id, name or position (``before`` machines precede the group)."""
    template = group.template
    ids = group.ids if group.ids is not None else repeat(template.id, group.count)
    names = group.names if group.names is not None else repeat(template.name, group.count)
    for position, identity, name in zip(range(before + 1, before + group.count + 1), ids,
                                        names, strict=False):
        yield identity if identity is not None else name or f"#{position}"


_REFERENCE_KEYS = ("$base", "$merge")


def _without_reference_keys(value: Any) -> Any:
    """``value`` with every ``$base``/``$merge`` key removed at any depth (the very same
    object when it has none)."""
    if isinstance(value, dict):
        kept = {key: _without_reference_keys(item) for key, item in value.items()
                if key not in _REFERENCE_KEYS}
        same = len(kept) == len(value) and all(kept[key] is value[key] for key in kept)
        return value if same else kept
    if isinstance(value, list | tuple):
        items = [_without_reference_keys(item) for item in value]
        same = all(new is old for new, old in zip(items, value, strict=True))
        return value if same else type(value)(items)
    return value


def _same_or(old: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[Any, ...]:
    """``old`` when ``new`` holds the very same objects (nothing changed below)."""
    if len(old) == len(new) and all(a is b for a, b in zip(old, new, strict=True)):
        return old
    return new


def normalise(environment: Environment) -> Normalised:
    normaliser = _Normaliser()
    result = normaliser.environment(environment)
    return Normalised(result, frozenset(normaliser.changed), tuple(normaliser.left_out))


def normal_form(document: Document) -> Document:
    """What environment JSON makes of ``document``: only what the upstream jsspp-osp schema
    accepts (see "Upstream requirements" in the module docstring)."""
    if document.environment is None:
        return document
    environment = normalise(document.environment).environment
    if environment is document.environment:
        return document
    return replace(document, environment=environment)


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    if document.environment is None:
        return frozenset()
    return normalise(document.environment).changed


# ------------------------------------------------------------------------------ writing


def write(document: Document) -> WriteResult:
    """Serialise the normal form. No topology is written as an empty one, which carries the
    same nothing (losses: Empty parts)."""
    environment = normalise(document.environment or Environment()).environment
    writer = _Writer(splice=True)
    data = writer.serialised(writer.document(environment))
    if data is None:  # a user's string looked like a placeholder: write machine by machine
        data = dumps_canonical(_Writer(splice=False).document(environment))
    return WriteResult(data)


_ABSENT = object()


_PLACEHOLDER = re.compile(r'"\\u0000dcx-units-([0-9]+)"')
"""A group's units as the JSON text first holds them (``_Writer.serialised``)."""


class _Writer:
    def __init__(self, splice: bool = False) -> None:
        self.splice = splice
        """Put a placeholder for each group's units and render them as text afterwards:
        ``json.dumps`` with an indent is Python code, a million small units take it
        minutes, and the units of a group differ only in id and name."""
        self.placeholders: list[tuple[MachineGroup, dict[str, Any]]] = []
        self.inherited: dict[tuple[str, ...], dict[str, Any]] = {}
        """Definition path -> what every machine naming it shares."""
        self.machine_bodies: dict[int, dict[str, Any]] = {}
        """``id`` of a machine with a definition name -> its body."""
        self.generated: dict[int, str] = {}
        """``id`` of a machine without a definition name -> dcx's definition for its type."""

    def document(self, environment: Environment) -> dict[str, Any]:
        definitions = self.definitions(environment)
        root: dict[str, Any] = {"$schema": UPSTREAM_SCHEMA_URL}
        _put(root, "name", environment.name)
        _put(root, "description", environment.description)
        extras = dict(environment.extras)
        topology = {"datacenters": [self.datacenter(dc) for dc in environment.datacenters]}
        topology.update(_native(extras.pop("environment", {})))
        root["environment"] = topology
        root["events"] = [_event(event) for event in environment.events]
        root["definitions"] = definitions
        root.update(_native(extras))
        return root

    def definitions(self, environment: Environment) -> dict[str, Any]:
        """The user's machine definitions, each holding what all its machines share (a
        machine writes only what differs from it), and dcx's own for identical machines
        without one."""
        last_body: dict[tuple[str, ...], dict[str, Any]] = {}
        unnamed: dict[str, list[Machine | MachineGroup]] = {}
        first_body: dict[str, dict[str, Any]] = {}
        for part in machine_parts(environment):
            # a group is written from its template: one body for all its members
            machine = part_template(part)
            body = self.body(machine)
            pointer = machine.extras.get(DEFINITION_EXTRA)
            if pointer is None:
                # Bodies are not kept (a cluster's worth of them would be the peak memory):
                # a machine of a generated type writes only its $base, any other one builds
                # its body again.
                text = json.dumps(body, sort_keys=True)
                unnamed.setdefault(text, []).append(part)
                first_body.setdefault(text, body)
                continue
            self.machine_bodies[id(part)] = body
            path = definition_path(pointer)
            assert path is not None  # the normal form keeps only writable pointers
            if last_body.get(path) is body:
                continue  # machines of one type share their body
            last_body[path] = body
            shared = self.inherited.get(path)
            if shared is None:
                self.inherited[path] = dict(body)
                continue
            for key in [key for key, value in shared.items()
                        if not _same(body.get(key, _ABSENT), value)]:
                del shared[key]
        tree: dict[str, Any] = {}
        for path, shared in self.inherited.items():
            node = tree
            for token in path[:-1]:
                node = node.setdefault(token, {})
            node[path[-1]] = {"type": "MACHINE", **shared}
        generated: dict[str, Any] = {}
        for text, members in unnamed.items():
            if sum(map(part_count, members)) < 2:
                continue
            name = f"type-{len(generated) + 1}"
            generated[name] = {"type": "MACHINE", **first_body[text]}
            for member in members:
                self.generated[id(member)] = f"{_GENERATED_PREFIX}{name}"
        if generated:
            tree[GENERATED_DEFINITIONS] = generated
        return tree

    def datacenter(self, datacenter: Datacenter) -> dict[str, Any]:
        node: dict[str, Any] = {}
        _put(node, "id", datacenter.id)
        _put(node, "name", datacenter.name)
        _put(node, "location", datacenter.location)
        _put(node, "operator", datacenter.operator)
        extras = dict(datacenter.extras)
        operational = dict(extras.pop("operational", {}))
        if datacenter.scheduler is not None:
            operational = {"scheduler": _scheduler(datacenter.scheduler), **operational}
        if operational:
            node["operational"] = operational
        node["rooms"] = [self.room(room) for room in datacenter.rooms]
        node.update(_native(extras))
        return node

    def room(self, room: Room) -> dict[str, Any]:
        node: dict[str, Any] = {}
        _put(node, "id", room.id)
        node["type"] = room.type
        _put(node, "name", room.name)
        if room.location is not None:
            node["location"] = {"x": room.location.x, "y": room.location.y}
        if room.size is not None:
            node["size"] = {"width": room.size.width, "height": room.size.height}
        node["objects"] = [self.rack(rack) for rack in room.racks]
        node.update(_native(room.extras))
        return node

    def rack(self, rack: Rack) -> dict[str, Any]:
        node: dict[str, Any] = {}
        _put(node, "id", rack.id)
        node["type"] = "RACK"
        _put(node, "name", rack.name)
        _put(node, "capacity", rack.capacity_units)
        _put(node, "power-capacity", rack.power_capacity_w)
        units: list[dict[str, Any] | str] = []
        for part in slot_parts(rack.slots):
            if part is None:
                units.append({"type": "EMPTY"})
            elif isinstance(part, MachineGroup) and self.splice:
                units.append(f"\0dcx-units-{len(self.placeholders)}")
                self.placeholders.append((part, self.hardware(part.template, id(part))))
            elif isinstance(part, MachineGroup):
                units.extend(self.members(part))
            else:
                units.append(self.machine(part))
        node["units"] = units
        node.update(_native(rack.extras))
        return node

    def machine(self, machine: Machine) -> dict[str, Any]:
        node: dict[str, Any] = {}
        _put(node, "id", machine.id)
        _put(node, "name", machine.name)
        node["state"] = machine.state.value
        node.update(self.hardware(machine, id(machine)))
        return node

    def members(self, group: MachineGroup) -> Iterable[dict[str, Any]]:
        """The units of a group's members: what differs per member, then what they share
        (written once per group, as ``machine`` writes it for each machine)."""
        template = group.template
        hardware = self.hardware(template, id(group))
        state = template.state.value
        ids = group.ids if group.ids is not None else repeat(template.id, group.count)
        names = group.names if group.names is not None else repeat(template.name, group.count)
        for identity, name in zip(ids, names, strict=False):
            node: dict[str, Any] = {}
            if identity is not None:
                node["id"] = identity
            if name is not None:
                node["name"] = name
            node["state"] = state
            node.update(hardware)
            yield node

    def serialised(self, root: dict[str, Any]) -> bytes | None:
        """``dumps_canonical(root)`` with each group's units rendered in place of its
        placeholder: the same text as writing every unit; ``None`` when the placeholders
        cannot be found exactly once each."""
        text = dumps_canonical(root).decode()
        if not self.placeholders:
            return text.encode()
        pieces: list[str] = []
        done = 0
        seen: set[int] = set()
        for match in _PLACEHOLDER.finditer(text):
            index = int(match.group(1))
            if index >= len(self.placeholders) or index in seen:
                return None
            seen.add(index)
            indent = text[text.rfind("\n", 0, match.start()) + 1:match.start()]
            if indent.strip():
                return None
            pieces.append(text[done:match.start()])
            pieces.append(_rendered_units(*self.placeholders[index], indent))
            done = match.end()
        if len(seen) != len(self.placeholders):
            return None
        pieces.append(text[done:])
        return "".join(pieces).encode()

    def hardware(self, machine: Machine, owner: int) -> dict[str, Any]:
        """A unit's keys after id, name and state: its ``$base`` and what differs from the
        definition, or its whole body; ``owner`` is the ``id`` of the machine or group the
        definitions were gathered under."""
        pointer = machine.extras.get(DEFINITION_EXTRA)
        if pointer is None:
            generated = self.generated.get(owner)
            if generated is not None:
                return {"$base": generated}
            return {"type": "MACHINE", **self.body(machine)}
        body = self.machine_bodies[owner]
        path = definition_path(pointer)
        assert path is not None  # the normal form keeps only writable pointers
        shared = self.inherited[path]
        node: dict[str, Any] = {"$base": pointer}
        node.update({key: value for key, value in body.items()
                     if not _same(shared.get(key, _ABSENT), value)})
        return node

    def body(self, machine: Machine) -> dict[str, Any]:
        """The machine's hardware and plain extras as written."""
        body: dict[str, Any] = {"cpus": [_processing_unit(cpu) for cpu in machine.cpus]}
        if machine.gpus:
            body["gpus"] = [_processing_unit(gpu) for gpu in machine.gpus]
        if machine.memory:
            body["memory"] = [_storage(unit) for unit in machine.memory]
        if machine.storage:
            body["storage"] = [_storage(unit) for unit in machine.storage]
        body.update(_native(machine.extras))
        return body


def _rendered_units(group: MachineGroup, hardware: dict[str, Any], indent: str) -> str:
    """A group's units as ``dumps_canonical`` writes them at ``indent`` in a list, the
    shared keys rendered once (``_Writer.members`` gives the same units as objects)."""
    template = group.template
    shared = json.dumps({"state": template.state.value, **hardware}, indent=2,
                        ensure_ascii=False, allow_nan=False).split("\n")[1:-1]
    tail = "".join(f"{indent}{line}\n" for line in shared)
    inner = indent + "  "
    ids = group.ids if group.ids is not None else repeat(template.id, group.count)
    names = group.names if group.names is not None else repeat(template.name, group.count)
    id_line = f'{inner}"id": '
    name_line = f'{inner}"name": '
    close = f"{tail}{indent}}}"
    units = []
    for identity, name in zip(ids, names, strict=False):
        unit = ["{\n"]
        if identity is not None:
            unit += (id_line, _json_scalar(identity), ",\n")
        if name is not None:
            unit += (name_line, encode_basestring(name), ",\n")
        unit.append(close)
        units.append("".join(unit))
    return f",\n{indent}".join(units)


def _json_scalar(value: Id) -> str:
    """An id as ``json.dumps`` writes it (a string, or an integer that is no boolean)."""
    if isinstance(value, str):
        return encode_basestring(value)
    return json.dumps(value)


def _same(a: Any, b: Any) -> bool:
    return a is b or a == b


def _native(extras: dict[str, Any]) -> dict[str, Any]:
    """Plain keys are environment JSON's own unknown keys, written back; ``fmt:key`` extras
    belong to other formats (or are this one's model-only notes) and are not written."""
    if not extras:
        return extras
    return {key: value for key, value in extras.items() if ":" not in key}


def _processing_unit(unit: ProcessingUnit) -> dict[str, Any]:
    node: dict[str, Any] = {}
    _put(node, "id", None if unit.id is None else str(unit.id))
    _vendor(node, unit)
    _put(node, "clock-rate", unit.clock_rate_hz)
    node["cores"] = unit.cores
    _put(node, "energy-consumption", unit.energy_consumption_w)
    node.update(_native(unit.extras))
    return node


def _event(event: Event) -> dict[str, Any]:
    attributes = dict(event.attributes)
    native = {k.removeprefix("environment:"): attributes.pop(k)
              for k in list(attributes) if k.startswith("environment:")}
    node: dict[str, Any]
    if isinstance(event, MachineStateChange):
        node = {"type": "MACHINE_STATE_CHANGE"}
        _put(node, "time", event.time_s)
        node.update({"machine": event.machine, "state": event.state.value})
        _put(node, "cause", event.cause)
    else:
        node = {"type": "DATACENTER_SCHEDULER_CHANGE"}
        _put(node, "time", event.time_s)
        node.update({"datacenter": event.datacenter,
                     "scheduler": _scheduler(event.scheduler)})
    if attributes:
        node["attributes"] = attributes
    node.update(native)
    return node


def _put(node: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        node[key] = value


def _vendor(node: dict[str, Any], unit: ProcessingUnit | StorageUnit) -> None:
    for key in ("manufacturer", "family", "generation", "model"):
        _put(node, key, getattr(unit, key))


def _storage(unit: StorageUnit) -> dict[str, Any]:
    node: dict[str, Any] = {}
    _put(node, "id", None if unit.id is None else str(unit.id))
    _vendor(node, unit)
    _put(node, "read-speed", unit.read_speed_mb_s)
    _put(node, "write-speed", unit.write_speed_mb_s)
    capacity = unit.capacity_mb
    node["capacity"] = int(capacity) if float(capacity).is_integer() else capacity
    _put(node, "energy-consumption", unit.energy_consumption_w)
    node.update(_native(unit.extras))
    return node


def _scheduler(spec: SchedulerSpec) -> dict[str, Any]:
    node: dict[str, Any] = {"name": spec.name}
    _put(node, "url", spec.url)
    if spec.options:
        node["options"] = dict(spec.options)
    return node


CODES = (
    Code("environment.root", "error", "The document is not a JSON object."),
    Code("environment.unknown-key", "warning",
         "A key the format does not define (kept and written back; often a typo)."),
    Code("environment.unknown-key-repeated", "warning",
         "How many more times an unknown key appears beyond the ones listed."),
    Code("environment.object-collection", "warning",
         "rooms, objects or units is an object; dcx reads its values in order."),
    Code("environment.duplicate-id", "error",
         "Two datacenters, rooms, racks or machines have the same id."),
    Code("environment.rack-capacity", "error", "A rack holds more units than its capacity."),
    Code("environment.unknown-machine", "error", "An event names a machine that does not exist."),
    Code("environment.unknown-datacenter", "error",
         "An event names a datacenter that does not exist."),
    Code("environment.event-untimed", "warning", "An event has no time."),
    Code("environment.event-order", "warning", "An event comes before an earlier one."),
    Code("environment.upstream-incompatible", "warning",
         "The upstream jsspp-osp schema would reject the file (a machine without CPUs, a "
         "processing unit without clock-rate or with 0 cores, a capacity that is not a "
         "positive whole number of MB); dcx reads it.", conformance=True),
    Code("ref.type", "error", "A $base is not a string or an array of strings."),
    Code("ref.external", "error", "A $base points outside the document."),
    Code("ref.syntax", "error", "A $base is not an RFC 6901 pointer '#/...'."),
    Code("ref.missing", "error", "A $base points at nothing."),
    Code("ref.not-object", "error", "A $base points at something that is not an object."),
    Code("ref.cycle", "error", "$base references form a cycle (or an object inherits from "
         "itself or an ancestor)."),
    Code("ref.chain", "error", "A chain of $base references is too long."),
    Code("ref.expansion", "error", "Resolving $base expands the document beyond the budget."),
    Code("ref.merge-type", "error", "A $merge is not an array of key names."),
    Code("ref.merge-unused", "warning", "A $merge without $base has no effect."),
)

FORMAT = FormatDeclaration(
    name="environment",
    title="Environment JSON (jsspp-osp)",
    family="environment",
    kind="topology",
    extensions=(".json",),
    content=frozenset({"json"}),
    schema="environment.schema.json",
    description=("Datacenters, rooms, racks and machines with timed events and "
                 "$base/$merge definitions (jsspp-osp v1)."),
    own_extras=frozenset({"machine.extras"}),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    leaves_out=leaves_out,
    codes=CODES,
)
