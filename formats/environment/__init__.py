"""Environment JSON (jsspp-osp v1): datacenters → rooms → racks → machines, timed events,
and ``definitions`` shared through ``$base``/``$merge``.

Reading resolves inheritance first (``formats/environment/jsonref.py``, which lists how dcx
departs from the reference resolver), validates the resolved document against
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

import re
from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded

__all__ = ["CODES", "DEFINITION_EXTRA", "FORMAT", "GENERATED_DEFINITIONS", "HOLDS",
           "ROOM_TYPES", "SCHEMA", "UNKNOWN_KEY_REPORTS", "UPSTREAM_SCHEMA_URL", "Normalised",
           "Structure", "definition_path", "leaves_out", "normal_form", "normal_form_losses",
           "normalise", "read", "read_structure", "semantic_checks", "sniff",
           "upstream_problems", "write"]

# The reader, the normal form and the writer (with the JSON and schema layers) load on first
# use: the pre-commit hook imports every format's declaration to sniff.
_LAZY = {
    "SCHEMA": "reader", "UNKNOWN_KEY_REPORTS": "reader", "Structure": "reader",
    "read_structure": "reader", "semantic_checks": "reader",
    "ROOM_TYPES": "normaliser", "DEFINITION_EXTRA": "normaliser",
    "GENERATED_DEFINITIONS": "normaliser", "upstream_problems": "normaliser",
    "definition_path": "normaliser", "Normalised": "normaliser", "normalise": "normaliser",
    "UPSTREAM_SCHEMA_URL": "writer",
}


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


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


def sniff(data: bytes) -> bool:
    head = data[:65536]
    return bool(re.search(rb'"environment"\s*:\s*\{', head)) and b'"datacenters"' in data[:1 << 20]


read = deferred("dcx.formats.environment.reader", "read")


write = deferred("dcx.formats.environment.writer", "write")


normal_form = deferred("dcx.formats.environment.normaliser", "normal_form")


normal_form_losses = deferred("dcx.formats.environment.normaliser", "normal_form_losses")


leaves_out = deferred("dcx.formats.environment.normaliser", "leaves_out")


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

FIELD_NAMES: dict[str, str] = {
    "environment.name": "name", "environment.description": "description",
    "environment.extras": "other top-level keys",
    "environment.events.machine_state": "events (MACHINE_STATE_CHANGE)",
    "environment.events.scheduler": "events (DATACENTER_SCHEDULER_CHANGE)",
    "datacenter": "datacenters", "datacenter.id": "datacenter id",
    "datacenter.name": "datacenter name", "datacenter.location": "datacenter location",
    "datacenter.operator": "datacenter operator",
    "datacenter.scheduler": "datacenter operational.scheduler",
    "datacenter.extras": "other datacenter keys",
    "room": "rooms", "room.id": "room id", "room.name": "room name", "room.type": "room type",
    "room.geometry": "room location / size", "room.extras": "other room keys",
    "rack": "objects (RACK)", "rack.id": "rack id", "rack.name": "rack name",
    "rack.capacity_units": "rack capacity", "rack.power_capacity_w": "rack power-capacity",
    "rack.empty_slots": "units (EMPTY)", "rack.extras": "other rack keys",
    "machine.id": "machine id", "machine.name": "machine name",
    "machine.state": "machine state", "machine.extras": "other machine keys",
    "machine.cpus": "cpus", "machine.cpus.sockets": "cpus (one per socket)",
    "cpu.id": "cpus id", "cpu.clock_rate_hz": "cpus clock-rate",
    "cpu.energy_consumption_w": "cpus energy-consumption",
    "cpu.vendor": "cpus manufacturer / family / generation / model",
    "machine.gpus": "gpus", "gpu.id": "gpus id", "gpu.cores": "gpus cores",
    "gpu.clock_rate_hz": "gpus clock-rate",
    "gpu.energy_consumption_w": "gpus energy-consumption",
    "gpu.vendor": "gpus manufacturer / family / generation / model",
    "machine.memory": "memory", "machine.memory.modules": "memory (one per module)",
    "memory.details": "memory id / manufacturer / read-speed / …",
    "machine.storage": "storage", "machine.storage.devices": "storage (one per device)",
    "storage.details": "storage id / manufacturer / read-speed / …",
}
"""Environment JSON's keys for the fields (``FormatDeclaration.field_names``)."""

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
    field_names=FIELD_NAMES,
)
