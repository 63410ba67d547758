"""Environment JSON writing: the normal form serialised, shared hardware written once as
definitions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from itertools import repeat
from json.encoder import encode_basestring
from typing import Any

from dcx.core.diagnostics import WriteResult
from dcx.core.groups import MachineGroup, machine_parts, part_count, part_template, slot_parts
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Event,
    Id,
    Machine,
    MachineStateChange,
    ProcessingUnit,
    Rack,
    Room,
    SchedulerSpec,
    StorageUnit,
)
from dcx.formats.environment.normaliser import (
    _GENERATED_PREFIX,
    DEFINITION_EXTRA,
    GENERATED_DEFINITIONS,
    definition_path,
    normalise,
)
from dcx.parsing.jsonio import dumps_canonical

UPSTREAM_SCHEMA_URL = (
    "https://raw.githubusercontent.com/atlarge-research/jsspp-osp/v1/schemas/"
    "environment.schema.json"
)


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
