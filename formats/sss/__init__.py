"""SSS Node Object XML, Release 3.1.0: one ``<Node>``, or many inside an SSSRMAP ``<Data>``.

The spec (seed 002, the Moab documentation's "Appendix S") lost its element-name column; the
names used here are the reconstruction in ``seeds/README.md`` (Table 1: Id, Name, Opsys, Arch,
Description, State, Feature; Table 2: Processors, Memory, Disk, Swap, Network). Our schema is
``xsd/sss-node.xsd``; its header explains the content-model choices. Reading is: parse through
``dcx.parsing.xmlio``, validate against the XSD, then the checks XSD 1.0 cannot make
(cardinalities, node object vs node reference, units, states, duplicate ids).

Model mapping
-------------

The nodes become the machines of one datacenter / room / rack, in document order.
Consecutive node objects that differ only in the text of ``Id`` and ``Name`` (and have
nothing to report) are read as one machine group (``dcx.core.groups``): the first is read in
full, the others only for their id and name, so a large file of one node type converts to
formats that hold groups (environment JSON, Slurm, Flux R) without making a machine per
node; writers that list machines expand the group as they write.

==========================================  ==================================================
SSS                                         model
==========================================  ==================================================
``Id`` (String, exactly one)                ``Machine.id``: an ``int`` when the text is the
                                            canonical decimal form of a non-negative integer
                                            (``0``, ``64``; not ``064`` or ``+1``), else a
                                            ``str``
``Name`` / ``Opsys`` / ``Arch``             ``name`` / ``os`` / ``arch``
``Description``                             ``description``
``State``                                   ``state`` through ``STATE_TABLE``; ``state_label``
``Feature`` (repeated, comma-delimited)     ``features`` (split on commas, trimmed)
``Extension name type``                     ``extras["sss:extensions"]``: list of
                                            ``{"name", "type"?, "value"}`` in document order
Configured ``Processors``                   ``cpus``: one ``ProcessingUnit(cores=n)``
Configured ``Memory`` / ``Disk``            ``memory`` / ``storage``: one ``StorageUnit`` (MB)
Configured ``Swap``                         ``swap_mb``
Configured ``Network``                      ``network_mbit_s``
Configured ``Resource name="GPU"`` (n)      ``gpus``: n ``ProcessingUnit(cores=1)``; ``type``
                                            becomes each GPU's ``model``, and the attributes
                                            ``dcx:manufacturer``, ``dcx:family`` and
                                            ``dcx:generation`` (namespace ``DCX_NAMESPACE``)
                                            the rest of its vendor fields
Configured other ``Resource``               ``resources``: ``NamedResource(name, amount,
                                            type, unit=units)``
``Available`` / ``Utilized``                ``available`` / ``utilized`` (``Consumables``);
                                            every ``Resource`` there is a ``NamedResource``
``metric``, ``wallDuration``,               Configured Processors/Memory/Disk/Swap/Network:
``consumptionRate``                         ``extras["sss:configured"][element]``;
                                            Available/Utilized: ``Consumables.extras
                                            ["sss:attributes"][element]``; a Resource or GPU:
                                            its own ``extras["sss:metric"]`` etc.
node references in ``<Data>``               ``Environment.extras["sss:references"]``: list of
                                            ``{"node", "aggregation"?, "delimiter"?,
                                            "count"?}``, written after the node objects
==========================================  ==================================================

``wallDuration`` is kept as written (a string); ``consumptionRate`` as a float.

Writing serialises the model and counts nothing: losses are derived (``dcx.core.restrict``).
The machines of every datacenter, room and rack are written in order (the hierarchy is a
loss). ``normal_form_losses`` names the held values SSS cannot carry as they are (a feature
with a comma, a resource named GPU, an attribute without an SSS form, a text id in decimal
digits); the writer leaves them out. A machine without an id is written with its name as
``<Id>`` (a Flux R or OpenDC inventory names hosts but numbers nothing), or ``node<N>``
(its 1-based position among the document's machines) when it has no name either; this is
the ``machine.id`` normal form of ``dcx.core.ids.with_required_ids``. An id that reads back
as another kind (the string ``"7"`` becomes the integer 7) is a ``machine.id`` loss. A
document without a topology writes an empty ``<Data/>``, which reads back as SSS (an empty
topology).

SSS has no compact form for identical nodes (a node reference's ``Range`` aggregation names
nodes inside another object; it is no node object), so every machine of a machine group (a
million-rank Flux R allocation, a hostlist of Slurm nodes) is written as a ``<Node>`` of its
own: the group's node is built once, serialised, and each member's ``<Id>`` and ``<Name>``
texts are put into that text, escaped as lxml escapes them; the bytes are those of one
element per member (a differential test holds them to it). ``nox -s bench``
(``bench_compact_writers``) prints the writer's machines per second.

Such a file of 1 MB or more (a ``<Data>`` whose node objects are the first one's text but
for their ``Id`` and ``Name`` texts) is read by a text-run path first (``text_runs.py``):
the first node through the checked path, the others matched in the text for their id and
name; any file it would have something to report on is read element by element, with the
same result (differential tests). A million-node file reads back in seconds, not a minute.

Units (Appendix A, powers of two): Memory, Disk and Swap accept ``B``, ``KB`` … ``YB`` and the
appendix's ``NB`` (Nonabyte, 2^90) and ``DB`` (Doggabyte, 2^100) abbreviations (the
abbreviation column is lost; these follow the examples' ``MB``/``GB`` pattern), the IEC forms
``KiB`` … ``YiB``, and the spelled-out names (any case, singular or plural, including the
appendix's "Aettabyte" beside "zettabyte"). Abbreviations are case-sensitive (``Mb`` reads as
megabit elsewhere). The model keeps MB; multiplying by a power of two is exact. A missing
``units`` means MB (the spec says a default is "implied" and never names it; its elaborate
example pairs ``<Memory units="MB">512`` with a bare ``<Swap>512``). Network has no unit in
Appendix A; dcx reads Mbit/s by default and accepts the decimal bit rates in
``NETWORK_UNITS``. Processors take no unit. Any other unit is an error. The writer always
writes ``units="MB"`` on Memory, Disk and Swap and no unit on Network.

State table (``STATE_TABLE``; matching ignores case and surrounding blanks):

=======================================  ==============  ===================
SSS words                                model state     written for it
=======================================  ==============  ===================
Idle, Busy, Running, Reserved            ACTIVE          Idle
Offline, Configured                      HALT            Offline
Drained, Draining, Flush                 MAINTENANCE     Drained
Down, Unknown                            FAILURE         Down
any other word (warning)                 ACTIVE          the word
=======================================  ==============  ===================

The word is kept in ``state_label`` unless it is exactly the word written for its state, and
the writer writes ``state_label`` whenever it maps back to the same state; any other label
(one of another state, a blank one, or the state's own word) is written beside the state's
word as ``<State dcx:label="...">``, and a ``dcx:label`` read wins over the text. A missing
``State`` reads as ACTIVE; the writer always writes one (the spec's compliance column says
MUST).

Divergences
-----------

There is no reference implementation and no official XSD; these are dcx's readings of the
text where it is silent or self-contradictory.

* Element order is free and the cardinalities are checked in code (see the XSD header).
* ``wallDuration`` is typed Duration, yet every example uses bare seconds: both are accepted.
* ``xsd:float`` is 32-bit; dcx keeps Python floats (64-bit) and does not round, but rejects
  magnitudes beyond the 32-bit range, ``NaN`` and ``INF``. Negative amounts are errors (the
  spec does not state non-negativity; a negative capacity has no meaning).
* ``Feature`` is both a "comma-delimited string" and repeated in the elaborate example; both
  forms are read, and the writer emits one ``<Feature>`` per feature.
* A node reference's ``Pattern`` is a perl5 regular expression by the spec; dcx checks it
  with Python's ``re``, which covers the common perl5 syntax. ``Range`` is an RFC 29 hostlist
  (``dcx.parsing.hostlist``, with its own listed divergences from flux-core). A reference
  ``count`` below 1 is an error. References are only meaningful inside another object; in
  a ``<Data>`` or as a root they are kept in ``Environment.extras`` and their position among
  node objects is not kept.
* Smart quotes (U+201C/U+201D/U+2018/U+2019), as printed around every attribute value in the
  spec, are reported as ``sss.smart-quotes`` with a hint instead of a bare parse error.
* Namespaced ``Node``/``Data`` roots are refused; elements and attributes of other namespaces
  inside a node are skipped with a warning, except the GPU vendor attributes in dcx's own
  namespace (``DCX_NAMESPACE``), which SSS has no place for and other readers skip.
"""

from __future__ import annotations

import re
from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded

__all__ = ["AGGREGATIONS", "BYTE_UNIT_EXPONENTS", "CATEGORIES", "CODES", "CONSUMABLES",
           "DCX_NAMESPACE", "FLOAT32_MAX", "FORMAT", "GPU_RESOURCE", "GPU_VENDOR_ATTRIBUTES",
           "HOLDS", "NETWORK_UNITS", "REQUIRES", "SINGLE_PROPERTIES", "SSS_ATTRIBUTES",
           "STATE_TABLE", "STATE_WORD", "XSD_NAME", "NodeReference", "UnitError",
           "format_number", "megabits_per_second", "megabytes", "normal_form_losses", "read",
           "reference_matches", "reference_nodes", "reference_problem", "sniff",
           "state_for_word", "write"]

# The reader, the writer, the model and the parsing layer (lxml, hostlists) load on first
# use: the pre-commit hook imports every format's declaration to sniff.
_LAZY = {
    **dict.fromkeys(("STATE_TABLE", "STATE_WORD", "BYTE_UNIT_EXPONENTS", "NETWORK_UNITS",
                     "DCX_NAMESPACE", "GPU_VENDOR_ATTRIBUTES", "FLOAT32_MAX", "CONSUMABLES",
                     "SINGLE_PROPERTIES", "CATEGORIES", "AGGREGATIONS", "GPU_RESOURCE",
                     "SSS_ATTRIBUTES", "UnitError", "megabytes", "megabits_per_second",
                     "state_for_word", "NodeReference", "reference_problem", "reference_nodes",
                     "reference_matches"), "vocabulary"),
    "XSD_NAME": "reader", "format_number": "writer",
}


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


REQUIRES: frozenset[str] = frozenset({"machine.id"})
"""Fields every written node has: a machine without an id gets one (see ``write``)."""

HOLDS: frozenset[str] = frozenset({
    "machine.id",
    "machine.name",
    "machine.state",
    "machine.state_label",
    "machine.cpus",
    "machine.gpus",
    "gpu.vendor",
    "machine.memory",
    "machine.storage",
    "machine.features",
    "machine.resources",
    "machine.os",
    "machine.arch",
    "machine.description",
    "machine.swap_mb",
    "machine.network_mbit_s",
    "machine.available",
    "machine.utilized",
})


_EMPTY_DATA = re.compile(rb"<Data\s*/>|<Data\s*>\s*</Data\s*>")


def sniff(data: bytes) -> bool:
    """A ``<Node>`` root, or a ``<Data>`` root whose first KBs hold a ``<Node``, or an empty
    ``<Data/>`` (what dcx writes for a topology without machines)."""
    from dcx.parsing.xmlio import root_name

    root = root_name(data)
    if root == "Node":
        return True
    head = data[:4096]
    return root == "Data" and (b"<Node" in head or _EMPTY_DATA.search(head) is not None)


read = deferred("dcx.formats.sss.front", "read")


write = deferred("dcx.formats.sss.writer", "write")


normal_form_losses = deferred("dcx.formats.sss.writer", "normal_form_losses")


CODES = (
    Code("sss.root", "error", "The root element is not an un-namespaced <Node> or <Data>."),
    Code("sss.smart-quotes", "error",
         "An attribute value is delimited by typographic quotes, as printed in the spec."),
    Code("sss.id.duplicate", "error", "Two node objects have the same <Id>."),
    Code("sss.id.missing", "error", "A node object has no <Id>."),
    Code("sss.id.empty", "error", "A node object's <Id> is empty."),
    Code("sss.reference.invalid", "error",
         "A node reference's count, pattern or range cannot be read."),
    Code("sss.reference.delimiter-ignored", "warning",
         "A node reference has a delimiter without aggregation=\"List\"."),
    Code("sss.node.reference-attribute", "error",
         "A node object carries an attribute of a node reference."),
    Code("sss.node.mixed-content", "error", "A node object has text beside its elements."),
    Code("sss.cardinality", "error",
         "A property, category or consumable that may appear once appears more often."),
    Code("sss.foreign-element", "warning", "An element SSS does not define (skipped)."),
    Code("sss.foreign-attribute", "warning",
         "An attribute of another namespace (skipped)."),
    Code("sss.feature.empty", "warning", "A <Feature> list has an empty item (skipped)."),
    Code("sss.state.empty", "warning", "<State> is empty (read as ACTIVE)."),
    Code("sss.state.unlisted", "warning",
         "A <State> word outside dcx's table (read as ACTIVE, the word kept)."),
    Code("sss.value.invalid", "error", "An amount is not a number."),
    Code("sss.value.out-of-range", "error", "An amount is not a finite xsd:float."),
    Code("sss.value.negative", "error", "An amount is negative."),
    Code("sss.units.unknown", "error", "A units attribute dcx does not know."),
    Code("sss.gpu.not-integer", "error", "A GPU count is not a whole number."),
    Code("sss.write.missing-id", "error", "A machine has a blank id; SSS requires an <Id>."),
    Code("sss.write.duplicate-id", "error", "Two machines have the same id."),
    Code("sss.write.not-a-number", "error", "An amount to write is not a number."),
    Code("sss.write.negative", "error", "An amount to write is negative."),
    Code("sss.write.out-of-range", "error", "An amount to write is outside xsd:float's range."),
    Code("sss.write.unwritable-text", "error", "A text has characters XML cannot carry."),
)

FIELD_NAMES: dict[str, str] = {
    "machine.id": "<Id>",
    "machine.name": "<Name>",
    "machine.description": "<Description>",
    "machine.os": "<Opsys>",
    "machine.arch": "<Arch>",
    "machine.state": "<State>",
    "machine.state_label": "<State> text",
    "machine.cpus": "<Processors>",
    "machine.memory": "<Memory>",
    "machine.storage": "<Disk>",
    "machine.swap_mb": "<Swap>",
    "machine.network_mbit_s": "<Network>",
    "machine.features": "<Feature>",
    "machine.gpus": '<Resource name="GPU">',
    "gpu.vendor": '<Resource name="GPU" type>',
    "machine.resources": "<Resource>",
    "machine.available": "<Available>",
    "machine.utilized": "<Utilized>",
}
"""The SSS node elements for the fields (``FormatDeclaration.field_names``)."""

FORMAT = FormatDeclaration(
    name="sss",
    title="SSS Node Object XML 3.1.0",
    family="sss",
    kind="topology",
    extensions=(".xml",),
    content=frozenset({"xml"}),
    schema="sss-node.xsd",
    description=("One <Node> or many inside an SSSRMAP <Data> element, with Configured, "
                 "Available and Utilized resources."),
    own_extras=frozenset({"machine.extras", "machine.available", "machine.utilized"}),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    requires=REQUIRES,
    normal_form_losses=normal_form_losses,
    codes=CODES,
    field_names=FIELD_NAMES,
)
