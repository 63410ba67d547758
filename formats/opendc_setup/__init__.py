"""OpenDC SC18 ``setup.json``: the topology file of the SC18 reference-architecture simulator.

Shape: ``{"name", "rooms": [{"type", "objects": [{"type": "RACK", "machines":
[{"cpus": [cpu type id, ...]}]}]}]}``. A file is one datacenter; machine order is file order
(rooms, racks, machines), which is the tie-break order of every placement policy.

CPU type ids are fixed by the SC18 parser (and the paper's appendix A-G):

==  =============================  =====  =========  =====
id  CPU                            cores  clock      power
==  =============================  =====  =========  =====
1   Intel i7 v6 6700k              4      4,100 MHz  70 W
2   Intel i5 v6 (model "6700k")    2      3,500 MHz  50 W
==  =============================  =====  =========  =====

Any other id is an error at its position. A machine's cores are the sum over its CPUs.

Model mapping: one :class:`Datacenter` without id or name; each room a :class:`Room` with its
``type``; each rack object a :class:`Rack`; each machine a :class:`Machine` with no id (the
file has none; its position is its identity) whose CPUs are the table's entries with
``id`` set to the type id. The file's ``name`` is ``Environment.name`` (``""`` stands for
no name, since the SC18 parser needs the key). Consecutive machines of a rack with the same
CPU type ids are identical, and are read as one machine group (``dcx.core.groups``); the
normal form keeps a group whole and the writer writes its members from it.

The writer maps each model CPU to a type id by its cores and clock rate (4 cores at 4.1 GHz →
1, 2 cores at 3.5 GHz → 2). A machine with any other CPU cannot be written: it is left out
(a ``machine.cpus`` loss), and so is a rack whose every machine was left out; a rack that had
no machines is written with ``"machines": []``, which the SC18 parser accepts. Vendor strings,
power or CPU ids that differ from the table's (including none given) are losses of
``cpu.vendor`` / ``cpu.energy_consumption_w`` / ``cpu.id``. A conversion that would leave out
every machine is refused (``convert.nothing-held``).

``normal_form`` states this value restriction (``dcx.core.restrict``, Value restrictions):
machines left out, every other CPU replaced by its table entry; ``normal_form_losses`` names
the fields that changes. The writer serialises the normal form and counts nothing.

What dcx reads
--------------

* **SC18 setup.json** (atlarge-research/opendc-simulator, tag sc18, the reference
  architecture of the SC18 paper): rooms of ``RACK`` objects whose machines list CPU type
  ids 1 (Intel i7 v6 6700k) and 2 (Intel i5 v6). Later OpenDC topologies are
  ``opendc-topology``.

Divergences
-----------

1. The i5's model string in the SC18 code also says "6700k" (a copy slip: the i5 6th
   generation is a 6600k); dcx keeps the code's string so that machines round-trip exactly.
2. The SC18 parser accepts any ``type`` on rack objects and rooms; dcx requires ``"RACK"``
   for objects (the only kind the parser turns into machines) and keeps a room's type as
   given.
"""

from __future__ import annotations

import re
from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded

__all__ = ["CODES", "CPU_TYPES", "FORMAT", "HOLDS", "SCHEMA", "cpu_type_of", "leaves_out",
           "normal_form", "normal_form_losses", "read", "sniff", "write"]

# The reader, the normal form and the writer (with the model's CPU table, JSON and schemas)
# load on first use: the pre-commit hook imports every format's declaration to sniff.
_LAZY = dict.fromkeys({"SCHEMA", "CPU_TYPES", "cpu_type_of"}, "codec")


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


HOLDS = frozenset({
    "environment.name", "room", "room.type", "rack", "machine.cpus", "machine.cpus.sockets",
    "cpu.clock_rate_hz", "cpu.vendor", "cpu.id", "cpu.energy_consumption_w",
})


def sniff(data: bytes) -> bool:
    """A ``rooms`` array and machines listing CPU type ids, or no ``cpus`` at all (the empty
    setup dcx writes for a topology without machines, racks without machines)."""
    head = data[:4096]
    if b'"datacenters"' in head or b'"environment"' in head:
        return False
    return (re.search(rb'"rooms"\s*:\s*\[', head) is not None
            and (re.search(rb'"cpus"\s*:\s*\[\s*[\d\]]', head) is not None
                 or b'"cpus"' not in head))


read = deferred("dcx.formats.opendc_setup.codec", "read")


write = deferred("dcx.formats.opendc_setup.codec", "write")


normal_form = deferred("dcx.formats.opendc_setup.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.opendc_setup.codec", "normal_form_losses")


leaves_out = deferred("dcx.formats.opendc_setup.codec", "leaves_out")


CODES = (
    Code("opendc-setup.unknown-cpu", "error",
         "A CPU type id is not one of the SC18 parser's two (1 = i7, 2 = i5)."),
    Code("opendc-setup.no-machines", "warning", "The setup has no machines."),
)

FIELD_NAMES: dict[str, str] = {
    "environment.name": "name",
    "room": "rooms",
    "room.type": "room type",
    "rack": "objects (RACK)",
    "machine.cpus": "machines cpus",
    "machine.cpus.sockets": "machines cpus (one id per CPU)",
    "cpu.id": "cpus type id",
    "cpu.clock_rate_hz": "cpus type id (its clock)",
    "cpu.energy_consumption_w": "cpus type id (its power)",
    "cpu.vendor": "cpus type id (its CPU)",
}
"""setup.json's keys for the fields (``FormatDeclaration.field_names``)."""

FORMAT = FormatDeclaration(
    name="opendc-setup",
    title="OpenDC SC18 setup.json",
    family="opendc",
    kind="topology",
    extensions=(".json",),
    content=frozenset({"json"}),
    schema="opendc-setup.schema.json",
    description=("The SC18 simulator's topology: rooms of racks of machines listing "
                 "hard-coded CPU type ids (1 = i7, 2 = i5)."),
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
