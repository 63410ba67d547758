"""Environment JSON reading: decode, resolve ``$base``/``$merge``, judge against our schema
(``read_structure``), build the model and run the checks a schema cannot make.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from operator import is_
from typing import Any

from dcx.core.diagnostics import Diagnostic, InputError, ReadResult, error, has_errors, warning
from dcx.core.groups import MachineGroup, Part, compact, slot_parts, slots_of
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
from dcx.formats.environment.factored_verdict import plan_factored_verdict, representatives_valid
from dcx.formats.environment.jsonref import (
    INHERITANCE_KEYS,
    fold_inherited,
    resolve_document,
    resolve_in_place,
)
from dcx.formats.environment.normaliser import (
    _DEFINITIONS_PREFIX,
    _GENERATED_PREFIX,
    DEFINITION_EXTRA,
)
from dcx.parsing.jsonio import JsonLocator, escape_pointer_token, load_json, load_json_object
from dcx.parsing.schemas import schema_diagnostics, schema_verdict

SCHEMA = "environment.schema.json"
UNKNOWN_KEY_REPORTS = 3
"""Unknown-key warnings listed per (entity kind, key); further ones are summarised."""

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
    # runs of one definition are groups already (``_Builder.rack``); machines written out
    # with equal parts that differ only in id and name: one group each
    document = Document(environment=compact(environment, shared_parts=True))
    return ReadResult(None if has_errors(diagnostics) else document, tuple(diagnostics),
                      locator=ModelLocator(locator).locate)


_FILE_KEYS = {"datacenters": "datacenters", "rooms": "rooms", "racks": "objects", "slots": "units"}
"""The model's collections by the file's names for them."""


@dataclass(frozen=True)
class ModelLocator:
    """Where a model object was read from, found when asked (``ReadResult.locator``): its
    model pointer (``dcx.core.located``) names the same place in the file, with the file's
    key names (a rack's units are its slots, a room's objects its racks; a machine that
    inherits through ``$base`` is located at its own unit). A collection written as an
    object (``environment.object-collection``) is indexed by its keys, in order."""

    locator: JsonLocator

    def locate(self, model_pointer: str) -> tuple[int | None, int | None]:
        parts = model_pointer.split("/")[1:]
        if not parts or parts[0] != "environment":
            return None, None
        if parts[1:2] == ["events"]:  # the file keeps them beside the topology
            return self.locator.find("/" + "/".join(parts[1:]))
        pointer = "/environment"
        if len(parts) == 1:
            return self.locator.find("")  # the environment's own fields are the root's
        for collection, index in zip(parts[1::2], parts[2::2], strict=False):
            key = _FILE_KEYS.get(collection)
            if key is None or not index.isdigit():
                return None, None
            pointer += f"/{key}"
            pointer += f"/{self._member(pointer, int(index))}"
        return self.locator.find(pointer)

    def _member(self, collection: str, index: int) -> str:
        """The pointer token of a collection's ``index``th member: the index in an array,
        the key in an object."""
        if self.locator.find(f"{collection}/{index}")[0] is not None:
            return str(index)
        import json

        value: Any = json.loads(self.locator.text)
        for token in collection.split("/")[1:]:
            value = value[token] if isinstance(value, dict) else value[int(token)]
        if isinstance(value, dict) and index < len(value):
            return escape_pointer_token(list(value)[index])
        return str(index)


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
        parts: list[Part] = []
        run: list[tuple[str, dict[str, Any]]] = []
        kind: _UnitKind | None = None
        for where, item in self.collection(node.get("units"), f"{pointer}/units", "units"):
            if item.get("type") == "EMPTY":
                parts.extend(self.machine_run(run))
                run, kind = [], None
                parts.append(None)
                continue
            if kind is None or not kind.admits(item, self.bases):
                parts.extend(self.machine_run(run))
                run, kind = [], _UnitKind.of(item, self.bases)
            run.append((where, item))
        parts.extend(self.machine_run(run))
        slots = slots_of(parts)
        return Rack(id=node.get("id"), name=node.get("name"), capacity_units=node.get("capacity"),
                    power_capacity_w=node.get("power-capacity"), slots=slots,
                    extras=self.extras(node, _RACK_KEYS, "rack", pointer))

    def machine_run(self, run: list[tuple[str, dict[str, Any]]]) -> list[Part]:
        """The units of ``run`` (one ``_UnitKind``): a machine each, or one group when
        several."""
        if len(run) < 2:
            return [self.machine(item, where) for where, item in run]
        first_where, first = run[0]
        template = self.machine(first, first_where)
        for where, item in run[1:]:
            self.note_id("machine", item.get("id"), where)
        ids = None if first.get("id") is None else _compact_ids([item["id"] for _, item in run])
        names = None if first.get("name") is None else tuple(item["name"] for _, item in run)
        return [MachineGroup(replace(template, id=None, name=None), len(run), ids=ids,
                             names=names)]

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


_ARRAY_KEYS = ("cpus", "gpus", "memory", "storage")
_TEXT_KEYS = ("type", "state")


@dataclass(frozen=True)
class _UnitKind:
    """What makes a rack unit the machine it is, apart from its id and name: its keys (all
    known ones; a unit with others is reported per unit and built on its own), the
    definition it names, its text values and its arrays. Units resolved from one
    definition share the arrays, so a run of units of one kind is read as one group
    without building each machine; equal arrays that are not the same object are left to
    ``compact``."""

    keys: Any
    base: Any
    texts: tuple[Any, ...]
    arrays: tuple[Any, ...]
    has_id: bool
    has_name: bool

    @staticmethod
    def of(unit: dict[str, Any], bases: dict[int, Any]) -> _UnitKind | None:
        if not unit.keys() <= _MACHINE_KEYS:
            return None
        return _UnitKind(unit.keys(), bases.get(id(unit)), tuple(map(unit.get, _TEXT_KEYS)),
                         tuple(map(unit.get, _ARRAY_KEYS)), unit.get("id") is not None,
                         unit.get("name") is not None)

    def admits(self, unit: dict[str, Any], bases: dict[int, Any]) -> bool:
        return (unit.keys() == self.keys
                and all(map(is_, self.arrays, map(unit.get, _ARRAY_KEYS)))
                and tuple(map(unit.get, _TEXT_KEYS)) == self.texts
                and (unit.get("id") is not None) is self.has_id
                and (unit.get("name") is not None) is self.has_name
                and bases.get(id(unit)) == self.base)


def _compact_ids(ids: list[Any]) -> Sequence[Any]:
    """A run's machine ids: a ``range`` for consecutive integers (not booleans)."""
    first = ids[0]
    if all(value.__class__ is int for value in ids) and ids == list(
            range(first, first + len(ids))):
        return range(first, first + len(ids))
    return tuple(ids)


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
        slot = 0
        for part in slot_parts(rack.slots):
            if part is None:
                slot += 1
                continue
            machine, members = (part.template, part.count) if isinstance(
                part, MachineGroup) else (part, 1)
            # machines of one type share their unit tuples: judge each combination once
            parts = (machine.cpus, machine.gpus, machine.memory, machine.storage)
            key = tuple(map(id, parts))
            counts = verdicts.get(key)
            if counts is None:
                counts = verdicts[key] = _upstream_counts(*parts)
                kept.append(parts)  # keeps the ids in the key from being reused
            if any(counts) and first is None:
                first = f"{pointer}/units/{slot}"
            no_cpus += counts[0] * members
            missing_clock += counts[1] * members
            fractional += counts[2] * members
            zero += counts[3] * members
            slot += members
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
