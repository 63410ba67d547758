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

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
from dcx.core.ids import id_from_text, required_ids
from dcx.core.model import (
    Consumables,
    Datacenter,
    Document,
    Environment,
    Machine,
    MachineState,
    NamedResource,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
)
from dcx.parsing.hostlist import Hostlist, HostlistError
from dcx.parsing.xmlio import (
    check_xml_text,
    load_xsd,
    parse_xml,
    root_name,
    xsd_diagnostics,
)

if TYPE_CHECKING:  # lxml loads when a file is read or written, not when formats are sniffed
    from lxml import etree

XSD_NAME = "sss-node.xsd"

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

# ------------------------------------------------------------------------ vocabulary

STATE_TABLE: dict[str, MachineState] = {
    "idle": MachineState.ACTIVE,
    "busy": MachineState.ACTIVE,
    "running": MachineState.ACTIVE,
    "reserved": MachineState.ACTIVE,
    "offline": MachineState.HALT,
    "configured": MachineState.HALT,
    "drained": MachineState.MAINTENANCE,
    "draining": MachineState.MAINTENANCE,
    "flush": MachineState.MAINTENANCE,
    "down": MachineState.FAILURE,
    "unknown": MachineState.FAILURE,
}
"""SSS state word (case-folded) → model state. Words not listed read as ACTIVE."""

STATE_WORD: dict[MachineState, str] = {
    MachineState.ACTIVE: "Idle",
    MachineState.HALT: "Offline",
    MachineState.MAINTENANCE: "Drained",
    MachineState.FAILURE: "Down",
}
"""The word the writer uses for a state when the machine has no usable ``state_label``."""

_BYTE_PREFIXES = ("", "K", "M", "G", "T", "P", "E", "Z", "Y")
BYTE_UNIT_EXPONENTS: dict[str, int] = {
    **{f"{prefix}B": power for power, prefix in enumerate(_BYTE_PREFIXES)},
    **{f"{prefix}iB": power for power, prefix in enumerate(_BYTE_PREFIXES) if prefix},
    "NB": 9,
    "DB": 10,
}
"""Byte-unit abbreviation → power of 2^10 (Appendix A). Case-sensitive."""

_BYTE_UNIT_NAMES: dict[str, int] = {
    "byte": 0, "kilobyte": 1, "megabyte": 2, "gigabyte": 3, "terabyte": 4, "petabyte": 5,
    "exabyte": 6, "zettabyte": 7, "aettabyte": 7, "yottabyte": 8, "nonabyte": 9,
    "doggabyte": 10,
}
_MB_EXPONENT = 2

NETWORK_UNITS: dict[str, int] = {
    "bit/s": -6, "bps": -6,
    "kbit/s": -3, "Kbit/s": -3, "kbps": -3, "Kbps": -3,
    "Mbit/s": 0, "Mbps": 0,
    "Gbit/s": 3, "Gbps": 3,
    "Tbit/s": 6, "Tbps": 6,
}
"""Network unit → power of ten relative to Mbit/s (decimal, as bit rates are quoted)."""

DCX_NAMESPACE = "urn:dcx:sss"
"""Namespace of the GPU vendor attributes SSS has no element for (see the mapping table)."""
GPU_VENDOR_ATTRIBUTES = ("manufacturer", "family", "generation")
_LABEL_ATTRIBUTE = f"{{{DCX_NAMESPACE}}}label"
FLOAT32_MAX = 3.4028234663852886e38
CONSUMABLES = ("Processors", "Memory", "Disk", "Swap", "Network")
SINGLE_PROPERTIES = ("Id", "Name", "Opsys", "Arch", "Description", "State")
CATEGORIES = ("Configured", "Available", "Utilized")
AGGREGATIONS = ("List", "Pattern", "Range")
GPU_RESOURCE = "GPU"
SSS_ATTRIBUTES = ("metric", "wallDuration", "consumptionRate")
_EXTRA_KEYS = {"metric": "sss:metric", "wallDuration": "sss:wallDuration",
               "consumptionRate": "sss:consumptionRate", "units": "sss:units"}
_MACHINE_EXTRAS = ("sss:extensions", "sss:configured")
_SMART_QUOTES = "\u201c\u201d\u2018\u2019"
_SMART_QUOTE_HINT = ("replace the typographic quotes \u201c \u201d \u2018 \u2019 with ASCII "
                     "quotes; the SSS 3.1.0 spec prints every example attribute that way")
_WALL_DURATION = re.compile(
    r"-?P(?=\d|T\d)(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?"
    r"|(\d+(\.\d*)?|\.\d+)"
)


class UnitError(ValueError):
    """A ``units`` value dcx cannot convert; ``hint`` suggests a fix when there is one."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def megabytes(value: float, units: str | None) -> float:
    """``value`` in ``units`` (Appendix A, powers of two) as MB; ``None`` means MB."""
    exponent = _MB_EXPONENT if units is None else _byte_exponent(units)
    return math.ldexp(value, 10 * (exponent - _MB_EXPONENT))


def _byte_exponent(units: str) -> int:
    text = units.strip()
    if text in BYTE_UNIT_EXPONENTS:
        return BYTE_UNIT_EXPONENTS[text]
    word = text.casefold().removesuffix("s")
    if word in _BYTE_UNIT_NAMES:
        return _BYTE_UNIT_NAMES[word]
    hint = None
    if any(quote in units for quote in _SMART_QUOTES):
        hint = _SMART_QUOTE_HINT
    elif text.upper() in BYTE_UNIT_EXPONENTS:
        hint = f"unit abbreviations are case-sensitive; did you mean {text.upper()!r}?"
    raise UnitError(f"unknown unit {units!r}; Appendix A byte units are "
                    "B, KB, MB, GB, TB, PB, EB, ZB, YB (or KiB … YiB)", hint)


def megabits_per_second(value: float, units: str | None) -> float:
    """A Network amount in Mbit/s; ``None`` means Mbit/s."""
    if units is None:
        return value
    text = units.strip()
    if text not in NETWORK_UNITS:
        hint = _SMART_QUOTE_HINT if any(q in units for q in _SMART_QUOTES) else None
        raise UnitError(f"unknown network unit {units!r}; dcx reads "
                        f"{', '.join(sorted(set(NETWORK_UNITS)))}", hint)
    power = NETWORK_UNITS[text]
    return value * 10**power if power >= 0 else value / 10**-power


def state_for_word(word: str) -> MachineState | None:
    """The model state of an SSS state word, or ``None`` when the table does not list it."""
    return STATE_TABLE.get(word.strip().casefold())


# ------------------------------------------------------------------------ node references


@dataclass(frozen=True)
class NodeReference:
    """A ``<Node>`` whose text names one or more nodes (spec §4.4)."""

    node: str
    aggregation: str | None = None
    delimiter: str | None = None
    count: int | None = None

    def to_extras(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"node": self.node}
        for key in ("aggregation", "delimiter", "count"):
            value = getattr(self, key)
            if value is not None:
                entry[key] = value
        return entry


def reference_problem(reference: NodeReference) -> tuple[str, int | None] | None:
    """Why a reference is invalid (message and 0-based text offset), or ``None``."""
    text = reference.node
    if reference.count is not None and reference.count < 1:
        return f"count is {reference.count}; an instance count must be at least 1", None
    if reference.delimiter == "":
        return "delimiter is empty", None
    if reference.aggregation is None:
        if not text.strip():
            return "a node reference needs a node id as its text", None
        return None
    if reference.aggregation == "List":
        items = text.split(reference.delimiter or ",")
        for index, item in enumerate(items):
            if not item.strip():
                return f"list item {index + 1} is empty", None
        return None
    if reference.aggregation == "Pattern":
        try:
            re.compile(text)
        except re.error as exc:
            return f"invalid regular expression: {exc.msg}", exc.pos
        return None
    if reference.aggregation == "Range":
        try:
            hosts = Hostlist.decode(text)
        except HostlistError as exc:
            return f"invalid RFC 29 hostlist: {exc.reason}", exc.position
        if not hosts:
            return "the range names no nodes", None
        return None
    return f"unknown aggregation {reference.aggregation!r}", None


def reference_nodes(reference: NodeReference) -> tuple[str, ...]:
    """The node ids a List, Range or plain reference names (a Pattern names none: it is a
    filter, see ``reference_matches``). Raises ``ValueError`` for an invalid reference."""
    problem = reference_problem(reference)
    if problem is not None:
        raise ValueError(problem[0])
    if reference.aggregation == "List":
        return tuple(item.strip() for item in reference.node.split(reference.delimiter or ","))
    if reference.aggregation == "Range":
        return tuple(Hostlist.decode(reference.node))
    if reference.aggregation == "Pattern":
        return ()
    return (reference.node.strip(),)


def reference_matches(reference: NodeReference, node_id: str) -> bool:
    """Whether ``node_id`` is one of the nodes the reference selects."""
    if reference.aggregation == "Pattern":
        return re.search(reference.node, node_id) is not None
    if reference.aggregation == "Range":
        return node_id in Hostlist.decode(reference.node)
    return node_id in reference_nodes(reference)


# ------------------------------------------------------------------------ sniff and read


_EMPTY_DATA = re.compile(rb"<Data\s*/>|<Data\s*>\s*</Data\s*>")


def sniff(data: bytes) -> bool:
    """A ``<Node>`` root, or a ``<Data>`` root whose first KBs hold a ``<Node``, or an empty
    ``<Data/>`` (what dcx writes for a topology without machines)."""
    root = root_name(data)
    if root == "Node":
        return True
    head = data[:4096]
    return root == "Data" and (b"<Node" in head or _EMPTY_DATA.search(head) is not None)


def read(data: bytes) -> ReadResult:
    try:
        tree = parse_xml(data)
    except InputError as exc:
        return ReadResult(None, (_explain_parse_error(exc.diagnostic, data),))
    root = tree.getroot()
    if root.tag not in ("Node", "Data"):
        from lxml import etree

        found = etree.QName(root).localname
        hint = ("SSS node objects are not namespaced; remove the xmlns declaration"
                if found in ("Node", "Data") else None)
        return ReadResult(None, (error(
            f"root element is {root.tag!r}; an SSS document is a <Node> or a <Data> of "
            "<Node> elements", "sss.root", line=root.sourceline, pointer=f"/{root.tag}",
            hint=hint),))
    schema_problems = xsd_diagnostics(load_xsd(XSD_NAME), tree)
    if schema_problems:
        return ReadResult(None, tuple(_with_quote_hint(d, data) for d in schema_problems))
    reader = _NodeReader()
    environment = reader.read_root(root)
    diagnostics = tuple(reader.diagnostics)
    if has_errors(diagnostics):
        return ReadResult(None, diagnostics)
    return ReadResult(Document(environment=environment), diagnostics)


def _explain_parse_error(diagnostic: Diagnostic, data: bytes) -> Diagnostic:
    """Turn the parse error that smart-quoted attributes cause into ``sss.smart-quotes``."""
    if diagnostic.code != "xml.syntax":
        return diagnostic
    text = data.decode("utf-8", "replace")
    match = re.search(rf"=\s*[{_SMART_QUOTES}]", text)
    if match is None:
        return diagnostic
    offset = match.end() - 1
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return error(f"attribute value delimited by the typographic quote "
                 f"U+{ord(text[offset]):04X} ({text[offset]}); XML needs ASCII quotes "
                 f"(parser: {diagnostic.message})", "sss.smart-quotes",
                 line=line, column=column, hint=_SMART_QUOTE_HINT)


def _with_quote_hint(diagnostic: Diagnostic, data: bytes) -> Diagnostic:
    if diagnostic.hint is None and any(q in diagnostic.message for q in _SMART_QUOTES):
        return Diagnostic(diagnostic.severity, diagnostic.message, diagnostic.code,
                          diagnostic.line, diagnostic.column, diagnostic.pointer,
                          diagnostic.path, _SMART_QUOTE_HINT)
    return diagnostic


def _xpath(element: etree._Element, attribute: str | None = None) -> str:
    path = str(element.getroottree().getpath(element))
    return f"{path}/@{attribute}" if attribute else path


@dataclass
class _Amount:
    """One consumable element's value (already in model units) and its kept attributes."""

    value: float
    attributes: dict[str, Any]


@dataclass
class _Category:
    amounts: dict[str, _Amount] = field(default_factory=dict)
    resources: list[etree._Element] = field(default_factory=list)


class _NodeReader:
    """Walks a validated tree; collects diagnostics instead of raising."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.error_count = 0

    def problem(self, element: etree._Element, code: str, message: str, *,
                attribute: str | None = None, hint: str | None = None,
                is_error: bool = True) -> None:
        self.error_count += is_error
        make = error if is_error else warning
        self.diagnostics.append(make(message, code, line=element.sourceline,
                                     pointer=_xpath(element, attribute), hint=hint))

    def read_root(self, root: etree._Element) -> Environment:
        nodes = [root] if root.tag == "Node" else list(root)
        machines: list[Machine] = []
        references: list[dict[str, Any]] = []
        seen_ids: dict[str, int] = {}
        for node in nodes:
            if not isinstance(node.tag, str) or node.tag != "Node":
                continue
            if _is_reference(node):
                reference = self.read_reference(node)
                if reference is not None:
                    references.append(reference.to_extras())
                continue
            machine = self.read_node(node)
            if machine is None:
                continue
            machine_id = str(machine.id)
            if machine_id in seen_ids:
                self.problem(node, "sss.id.duplicate",
                             f"node id {machine_id!r} already used by node "
                             f"{seen_ids[machine_id]}")
            seen_ids.setdefault(machine_id, len(machines) + 1)
            machines.append(machine)
        rack = Rack(slots=tuple(machines))
        extras: dict[str, Any] = {"sss:references": references} if references else {}
        return Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),),
                           extras=extras)

    # ---- node references

    def read_reference(self, node: etree._Element) -> NodeReference | None:
        count_text = node.get("count")
        try:
            count = int(count_text) if count_text is not None else None
        except ValueError:
            self.problem(node, "sss.reference.invalid", "count has too many digits",
                         attribute="count")
            return None
        reference = NodeReference(
            node=(node.text or "").strip(),
            aggregation=node.get("aggregation"),
            delimiter=node.get("delimiter"),
            count=count,
        )
        if reference.delimiter is not None and reference.aggregation != "List":
            self.problem(node, "sss.reference.delimiter-ignored",
                         "delimiter only applies to aggregation=\"List\"; it is ignored",
                         attribute="delimiter", is_error=False)
        problem = reference_problem(reference)
        if problem is not None:
            message, offset = problem
            where = f" (at offset {offset} of {reference.node!r})" if offset is not None else ""
            self.problem(node, "sss.reference.invalid", f"node reference: {message}{where}")
            return None
        return reference

    # ---- node objects

    def read_node(self, node: etree._Element) -> Machine | None:
        errors_before = self.error_count
        for attribute in ("aggregation", "delimiter", "count"):
            if node.get(attribute) is not None:
                self.problem(node, "sss.node.reference-attribute",
                             f"{attribute} belongs to a node reference (text content), not to "
                             "a node object", attribute=attribute)
        if (node.text or "").strip() or any((child.tail or "").strip() for child in node):
            self.problem(node, "sss.node.mixed-content",
                         "a node object holds elements only; text belongs to a node reference")
        singles: dict[str, etree._Element] = {}
        features: list[str] = []
        extensions: list[dict[str, str]] = []
        categories: dict[str, _Category] = {}
        for child in node:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            if tag in SINGLE_PROPERTIES:
                if tag in singles:
                    self.problem(child, "sss.cardinality", f"<{tag}> appears more than once; "
                                 "the spec allows one per node")
                singles.setdefault(tag, child)
            elif tag == "Feature":
                features.extend(self.read_features(child))
            elif tag == "Extension":
                extensions.append(_extension(child))
            elif tag in CATEGORIES:
                if tag in categories:
                    self.problem(child, "sss.cardinality",
                                 f"<{tag}> appears more than once in one node")
                    continue
                categories[tag] = self.read_category(child)
            else:
                self.problem(child, "sss.foreign-element",
                             f"element {tag} from another namespace is ignored", is_error=False)
        self.warn_foreign_attributes(node)
        texts = {tag: element.text or "" for tag, element in singles.items()}
        if "Id" not in texts:
            self.problem(node, "sss.id.missing", "a node object needs exactly one <Id>")
        elif not texts["Id"].strip():
            self.problem(singles["Id"], "sss.id.empty", "<Id> is empty")
        state, label = self.read_state(singles.get("State"))
        if self.error_count > errors_before:
            return None
        configured = categories.get("Configured", _Category())
        extras: dict[str, Any] = {}
        if extensions:
            extras["sss:extensions"] = extensions
        configured_attributes = {name: amount.attributes
                                 for name, amount in configured.amounts.items()
                                 if amount.attributes}
        if configured_attributes:
            extras["sss:configured"] = configured_attributes
        gpus, resources = self.read_configured_resources(configured.resources)
        amounts = configured.amounts
        return Machine(
            id=id_from_text(texts["Id"]),
            name=texts.get("Name"),
            state=state,
            state_label=label,
            cpus=_processing_units(amounts.get("Processors")),
            gpus=gpus,
            memory=_storage_units(amounts.get("Memory")),
            storage=_storage_units(amounts.get("Disk")),
            features=tuple(features),
            resources=resources,
            os=texts.get("Opsys"),
            arch=texts.get("Arch"),
            description=texts.get("Description"),
            swap_mb=_value(amounts.get("Swap")),
            network_mbit_s=_value(amounts.get("Network")),
            available=self.consumables(categories.get("Available")),
            utilized=self.consumables(categories.get("Utilized")),
            extras=extras,
        )

    def read_features(self, element: etree._Element) -> list[str]:
        names = [part.strip() for part in (element.text or "").split(",")]
        kept = [name for name in names if name]
        if len(kept) != len(names):
            self.problem(element, "sss.feature.empty",
                         "empty feature name(s) in <Feature> are ignored", is_error=False)
        return kept

    def read_state(self, element: etree._Element | None) -> tuple[MachineState, str | None]:
        if element is None:
            return MachineState.ACTIVE, None
        word = element.text or ""
        self.warn_foreign_attributes(element)
        label = element.get(_LABEL_ATTRIBUTE)
        if not word.strip():
            self.problem(element, "sss.state.empty", "<State> is empty; read as ACTIVE",
                         is_error=False)
            return MachineState.ACTIVE, label
        state = state_for_word(word)
        if state is None:
            self.problem(element, "sss.state.unlisted",
                         f"state {word.strip()!r} is not in dcx's state table; read as ACTIVE "
                         "and kept as the state label", is_error=False,
                         hint="listed: " + ", ".join(sorted({w.title() for w in STATE_TABLE})))
            state = MachineState.ACTIVE
        if label is not None:
            return state, label
        return state, None if word == STATE_WORD[state] else word

    def warn_foreign_attributes(self, element: etree._Element) -> None:
        for name in map(str, element.attrib):  # lxml gives text names
            if name.startswith("{") and not name.startswith(f"{{{DCX_NAMESPACE}}}"):
                self.problem(element, "sss.foreign-attribute",
                             f"attribute {name} from another namespace is ignored",
                             is_error=False)

    def read_category(self, category: etree._Element) -> _Category:
        result = _Category()
        self.warn_foreign_attributes(category)
        for child in category:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            if tag == "Resource":
                self.check_amount(child)
                result.resources.append(child)
            elif tag in CONSUMABLES:
                if tag in result.amounts:
                    self.problem(child, "sss.cardinality", f"<{tag}> appears more than once "
                                 f"in <{category.tag}>")
                    continue
                amount = self.read_amount(child)
                if amount is not None:
                    result.amounts[tag] = amount
            else:
                self.problem(child, "sss.foreign-element",
                             f"element {tag} from another namespace is ignored", is_error=False)
        return result

    def check_amount(self, element: etree._Element) -> float | None:
        """The element's number if finite, non-negative and within xsd:float's range."""
        self.warn_foreign_attributes(element)
        text = (element.text or "").strip()
        try:
            value = float(int(text)) if element.tag == "Processors" else float(text)
        except (ValueError, OverflowError):
            self.problem(element, "sss.value.invalid", f"{text[:40]!r} is not a number")
            return None
        if not math.isfinite(value) or abs(value) > FLOAT32_MAX:
            self.problem(element, "sss.value.out-of-range",
                         f"{text[:40]!r} is not a finite xsd:float")
            return None
        if value < 0:
            self.problem(element, "sss.value.negative", f"{element.tag} is negative ({text})")
            return None
        rate = element.get("consumptionRate")
        if rate is not None and not math.isfinite(float(rate)):
            self.problem(element, "sss.value.out-of-range",
                         f"consumptionRate {rate!r} is not finite", attribute="consumptionRate")
            return None
        return value

    def read_amount(self, element: etree._Element) -> _Amount | None:
        value = self.check_amount(element)
        if value is None:
            return None
        units = element.get("units")
        try:
            if element.tag == "Processors":
                if units is not None:
                    raise UnitError(f"unknown unit {units!r}; Processors are a count")
                value = int((element.text or "").strip())
            elif element.tag == "Network":
                value = megabits_per_second(value, units)
            else:
                value = megabytes(value, units)
        except UnitError as exc:
            self.problem(element, "sss.units.unknown", str(exc), attribute="units",
                         hint=exc.hint)
            return None
        if not math.isfinite(value) or value > FLOAT32_MAX:
            # The model and the writer use MB, which must stay within xsd:float's range.
            self.problem(element, "sss.value.out-of-range",
                         f"{element.tag} in {units} is beyond xsd:float's range as MB")
            return None
        return _Amount(value, _kept_attributes(element))

    def read_configured_resources(
        self, elements: list[etree._Element]
    ) -> tuple[tuple[ProcessingUnit, ...], tuple[NamedResource, ...]]:
        gpus: list[ProcessingUnit] = []
        resources: list[NamedResource] = []
        for element in elements:
            if element.get("name") != GPU_RESOURCE:
                resources.append(_named_resource(element))
                continue
            amount = float((element.text or "").strip())
            if not amount.is_integer():
                self.problem(element, "sss.gpu.not-integer",
                             f"a GPU count must be a whole number, not {amount}")
                continue
            gpu_extras = {_EXTRA_KEYS[name]: value
                          for name, value in _kept_attributes(element, units=True).items()}
            vendor = {name: element.get(f"{{{DCX_NAMESPACE}}}{name}")
                      for name in GPU_VENDOR_ATTRIBUTES}
            gpu = ProcessingUnit(cores=1, model=element.get("type"), extras=gpu_extras,
                                 **vendor)
            gpus.extend([gpu] * int(amount))  # equal devices: one frozen object serves all
        return tuple(gpus), tuple(resources)

    def consumables(self, category: _Category | None) -> Consumables | None:
        if category is None:
            return None
        amounts = category.amounts
        attributes = {name: amount.attributes for name, amount in amounts.items()
                      if amount.attributes}
        processors = amounts.get("Processors")
        return Consumables(
            processors=int(processors.value) if processors else None,
            memory_mb=_value(amounts.get("Memory")),
            disk_mb=_value(amounts.get("Disk")),
            swap_mb=_value(amounts.get("Swap")),
            network_mbit_s=_value(amounts.get("Network")),
            resources=tuple(_named_resource(element) for element in category.resources),
            extras={"sss:attributes": attributes} if attributes else {},
        )


def _is_reference(node: etree._Element) -> bool:
    return not any(isinstance(child.tag, str) for child in node)


def _extension(element: etree._Element) -> dict[str, str]:
    entry = {"name": element.get("name", "")}
    if element.get("type") is not None:
        entry["type"] = element.get("type", "")
    entry["value"] = element.text or ""
    return entry


def _kept_attributes(element: etree._Element, units: bool = False) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for name in ("units", *SSS_ATTRIBUTES) if units else SSS_ATTRIBUTES:
        value = element.get(name)
        if value is not None:
            kept[name] = float(value) if name == "consumptionRate" else value
    return kept


def _named_resource(element: etree._Element) -> NamedResource:
    return NamedResource(
        name=element.get("name", ""),
        amount=float((element.text or "").strip()),
        type=element.get("type"),
        unit=element.get("units"),
        extras={_EXTRA_KEYS[name]: value for name, value in _kept_attributes(element).items()},
    )


def _value(amount: _Amount | None) -> float | None:
    return None if amount is None else amount.value


def _processing_units(amount: _Amount | None) -> tuple[ProcessingUnit, ...]:
    return () if amount is None else (ProcessingUnit(cores=int(amount.value)),)


def _storage_units(amount: _Amount | None) -> tuple[StorageUnit, ...]:
    return () if amount is None else (StorageUnit(capacity_mb=amount.value),)


# ------------------------------------------------------------------------ write


class _Unwritable(Exception):
    """A model value SSS XML cannot carry at all; the write stops with this diagnostic."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def write(document: Document) -> WriteResult:
    """Serialise the topology's machines (see Writing); a value SSS XML cannot carry at all
    stops the write with one error."""
    try:
        data, _ = _serialise(document)
    except _Unwritable as exc:
        return WriteResult(b"", diagnostics=(exc.diagnostic,))
    return WriteResult(data)


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths whose values SSS XML cannot carry as they are (Value
    restrictions): a text id in decimal digits, a feature with a comma, a resource named
    GPU, an attribute SSS has no form for, an invalid node reference."""
    try:
        _, dropped = _serialise(document)
    except _Unwritable:
        return frozenset()  # the conversion stops with the writer's error
    return frozenset(dropped)


def _serialise(document: Document) -> tuple[bytes, set[str]]:
    """The XML of ``document`` and the held field paths whose values it leaves out."""
    dropped: set[str] = set()
    environment = document.environment or Environment()
    machines = list(environment.machines())
    references = _references(environment, dropped)
    single = len(machines) == 1 and not references
    pointers = ["/Node" if single else f"/Data/Node[{index}]"
                for index in range(1, len(machines) + 1)]
    ids = _node_ids(machines, pointers, dropped)
    writers = [_MachineWriter(machine, node_id, pointer, dropped)
               for machine, node_id, pointer in zip(machines, ids, pointers, strict=True)]
    from lxml import etree

    nodes = [writer.element() for writer in writers]
    nodes.extend(_reference_element(reference) for reference in references)
    if single:
        root = nodes[0]
    else:
        root = etree.Element("Data")
        root.extend(nodes)
    if any(writer.namespaced for writer in writers):
        etree.cleanup_namespaces(root, top_nsmap={"dcx": DCX_NAMESPACE})
    data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    return data, dropped


def _unwritable(message: str, code: str, pointer: str = "") -> _Unwritable:
    return _Unwritable(error(message, code, pointer=pointer))


def _node_ids(machines: list[Machine], pointers: list[str], dropped: set[str]) -> list[str]:
    """Each machine's ``<Id>`` text: its id, or the one ``required_ids`` gives it."""
    seen: set[str] = set()
    texts = []
    ids = required_ids(machines)
    for position, (machine, pointer, node_id) in enumerate(
            zip(machines, pointers, ids, strict=True), 1):
        text = str(node_id)
        if not text.strip():
            raise _unwritable(f"machine {position} has a blank id; SSS requires a non-empty "
                              "<Id>", "sss.write.missing-id", pointer)
        if text in seen:
            raise _unwritable(f"machine id {text!r} is used twice; SSS node ids are unique",
                              "sss.write.duplicate-id", pointer)
        seen.add(text)
        if machine.id is not None and id_from_text(text) != machine.id:
            dropped.add("machine.id")  # a text id in decimal digits reads back as an integer
        texts.append(text)
    return texts


def _references(environment: Environment, dropped: set[str]) -> list[NodeReference]:
    entries = environment.extras.get("sss:references", [])
    if not isinstance(entries, list):
        dropped.add("environment.extras")
        return []
    references = []
    for entry in entries:
        reference = _reference_from_extras(entry)
        if reference is None or reference_problem(reference) is not None:
            dropped.add("environment.extras")  # an invalid reference
            continue
        references.append(reference)
    return references


def _reference_from_extras(entry: Any) -> NodeReference | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("node"), str):
        return None
    if set(entry) - {"node", "aggregation", "delimiter", "count"}:
        return None
    aggregation, delimiter, count = (entry.get(key) for key in
                                     ("aggregation", "delimiter", "count"))
    if aggregation is not None and aggregation not in AGGREGATIONS:
        return None
    if delimiter is not None and not isinstance(delimiter, str):
        return None
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
        return None
    texts = [entry["node"], delimiter or ""]
    if any(check_xml_text(text) for text in texts):
        return None
    return NodeReference(entry["node"], aggregation, delimiter, count)


def _reference_element(reference: NodeReference) -> etree._Element:
    from lxml import etree

    element = etree.Element("Node")
    element.text = reference.node
    for key in ("aggregation", "delimiter", "count"):
        value = getattr(reference, key)
        if value is not None:
            element.set(key, str(value))
    return element


def format_number(value: float, what: str, pointer: str) -> str:
    """An xsd:float lexical form that reads back to exactly ``value``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _unwritable(f"{what} is not a number: {value!r}", "sss.write.not-a-number",
                          pointer)
    if isinstance(value, int):
        if value < 0:
            raise _unwritable(f"{what} = {value} is negative; SSS amounts are not",
                              "sss.write.negative", pointer)
        return str(value)
    if not math.isfinite(value) or abs(value) > FLOAT32_MAX:
        raise _unwritable(f"{what} = {value} is outside xsd:float's finite range",
                          "sss.write.out-of-range", pointer)
    if value < 0:
        raise _unwritable(f"{what} = {value} is negative; SSS amounts are not",
                          "sss.write.negative", pointer)
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


class _MachineWriter:
    """Builds one ``<Node>`` and notes the held values it cannot write."""

    def __init__(self, machine: Machine, node_id: str, pointer: str,
                 dropped: set[str]) -> None:
        from lxml import etree

        self.new_element = etree.Element
        self.new_sub_element = etree.SubElement
        self.machine = machine
        self.node_id = node_id
        self.namespaced = False
        """Whether an attribute of ``DCX_NAMESPACE`` was written (declared once, at the root)."""
        self.dropped = dropped
        self.pointer = pointer

    def text(self, value: str, what: str) -> str:
        problem = check_xml_text(value)
        if problem is not None:
            raise _unwritable(f"{what}: {problem}", "sss.write.unwritable-text", self.pointer)
        return value

    def sub(self, parent: etree._Element, tag: str, text: str | None = None,
            **attributes: str | None) -> etree._Element:
        element = self.new_sub_element(parent, tag)
        if text is not None:
            element.text = self.text(text, f"<{tag}>")
        for name, value in attributes.items():
            if value is not None:
                element.set(name, self.text(value, f"<{tag} {name}>"))
                self.namespaced = self.namespaced or name.startswith("{")
        return element

    def element(self) -> etree._Element:
        machine = self.machine
        node = self.new_element("Node")
        self.sub(node, "Id", self.node_id)
        if machine.name is not None:
            self.sub(node, "Name", machine.name)
        self.state(node)
        for tag, value in (("Opsys", machine.os), ("Arch", machine.arch),
                           ("Description", machine.description)):
            if value is not None:
                self.sub(node, tag, value)
        for feature in machine.features:
            if not feature or feature != feature.strip() or "," in feature:
                # a comma would split it on reading; blanks and empty text do not survive
                self.dropped.add("machine.features")
                continue
            self.sub(node, "Feature", feature)
        self.extensions(node)
        configured = self.configured()
        if len(configured):
            node.append(configured)
        for tag, snapshot, path in (("Available", machine.available, "machine.available"),
                                    ("Utilized", machine.utilized, "machine.utilized")):
            if snapshot is not None:
                node.append(self.category(tag, snapshot, path))
        return node

    def state(self, node: etree._Element) -> None:
        """``<State>``: the label when it reads back as the machine's state and label, else
        the state's own word with the label in ``dcx:label``."""
        machine = self.machine
        label = machine.state_label
        word = STATE_WORD[machine.state]
        if label is None or (label.strip() and label != word
                             and (state_for_word(label) or MachineState.ACTIVE)
                             is machine.state):
            self.sub(node, "State", word if label is None else label)
        else:
            self.sub(node, "State", word, **{_LABEL_ATTRIBUTE: label})

    def extensions(self, node: etree._Element) -> None:
        extras = self.machine.extras
        if any(key.startswith("sss:") and key not in _MACHINE_EXTRAS for key in extras):
            self.dropped.add("machine.extras")  # only these two have an SSS form
        entries = extras.get("sss:extensions", [])
        for entry in entries if isinstance(entries, list) else [entries]:
            if not _is_extension(entry):
                self.dropped.add("machine.extras")
                continue
            self.sub(node, "Extension", entry["value"], name=entry["name"],
                     type=entry.get("type"))

    def configured(self) -> etree._Element:
        machine = self.machine
        category = self.new_element("Configured")
        attributes = machine.extras.get("sss:configured", {})
        if not isinstance(attributes, dict):
            self.dropped.add("machine.extras")
            attributes = {}
        written: set[str] = set()
        if machine.cpus:
            cores = sum(cpu.cores for cpu in machine.cpus)
            self.own_unit_extras(machine.cpus)
            self.amount(category, "Processors", cores, attributes, None)
            written.add("Processors")
        for tag, units in (("Memory", machine.memory), ("Disk", machine.storage)):
            if units:
                self.own_unit_extras(units)
                total = sum(unit.capacity_mb for unit in units)
                self.amount(category, tag, total, attributes, "MB")
                written.add(tag)
        for tag, value, unit in (("Swap", machine.swap_mb, "MB"),
                                 ("Network", machine.network_mbit_s, None)):
            if value is not None:
                self.amount(category, tag, value, attributes, unit)
                written.add(tag)
        if set(attributes) - written:  # attributes of a resource the machine does not have
            self.dropped.add("machine.extras")
        self.gpus(category)
        for resource in machine.resources:
            if resource.name == GPU_RESOURCE:
                self.dropped.add("machine.resources")  # it would read back as GPUs
                continue
            self.resource(category, resource, "machine.resources")
        return category

    def own_unit_extras(self, units: Iterable[ProcessingUnit | StorageUnit]) -> None:
        """CPU, memory and disk extras follow ``machine.extras`` (dcx.core.restrict), so
        this format's own keys there survive restriction, yet SSS has no place for them."""
        if any(key.startswith("sss:") for unit in units for key in unit.extras):
            self.dropped.add("machine.extras")

    def amount(self, category: etree._Element, tag: str, value: float,
               attributes: dict[str, Any], units: str | None) -> None:
        text = format_number(value, tag, self.pointer)
        element = self.sub(category, tag, text, units=units)
        self.set_attributes(element, attributes.get(tag, {}), "machine.extras")

    def set_attributes(self, element: etree._Element, attributes: Any, path: str) -> None:
        if not isinstance(attributes, dict):
            self.dropped.add(path)
            return
        for name, value in attributes.items():
            text = _attribute_text(name, value)
            if text is None:
                self.dropped.add(path)
                continue
            element.set(name, self.text(text, f"{element.tag} {name}"))

    def gpus(self, category: etree._Element) -> None:
        gpus = self.machine.gpus
        for gpu, count in _gpu_runs(gpus):
            attributes = {}
            for key, value in gpu.extras.items():
                name = next((n for n, k in _EXTRA_KEYS.items() if k == key), None)
                if name is None:
                    self.dropped.add("machine.extras")  # GPU extras follow machine.extras
                    continue
                attributes[name] = value
            vendor = {f"{{{DCX_NAMESPACE}}}{name}": getattr(gpu, name)
                      for name in GPU_VENDOR_ATTRIBUTES}
            element = self.sub(category, "Resource", str(count), name=GPU_RESOURCE,
                               type=gpu.model, **vendor)
            self.set_attributes(element, attributes, "machine.extras")

    def resource(self, category: etree._Element, resource: NamedResource, path: str) -> None:
        text = format_number(resource.amount, f"resource {resource.name}", self.pointer)
        element = self.sub(category, "Resource", text, name=resource.name, type=resource.type,
                           units=resource.unit)
        if resource.instances:
            self.dropped.add(path)  # per-instance amounts have no SSS form
        attributes = {}
        for key, value in resource.extras.items():
            name = next((n for n, k in _EXTRA_KEYS.items() if k == key and n != "units"), None)
            if name is None:
                self.dropped.add(path)
                continue
            attributes[name] = value
        self.set_attributes(element, attributes, path)

    def category(self, tag: str, snapshot: Consumables, path: str) -> etree._Element:
        element = self.new_element(tag)
        attributes = snapshot.extras.get("sss:attributes", {})
        if any(key != "sss:attributes" for key in snapshot.extras):
            self.dropped.add(path)  # only sss:attributes has an SSS form
        if not isinstance(attributes, dict):
            self.dropped.add(path)
            attributes = {}
        written = set()
        for name, value, units in (("Processors", snapshot.processors, None),
                                   ("Memory", snapshot.memory_mb, "MB"),
                                   ("Disk", snapshot.disk_mb, "MB"),
                                   ("Swap", snapshot.swap_mb, "MB"),
                                   ("Network", snapshot.network_mbit_s, None)):
            if value is None:
                continue
            child = self.sub(element, name, format_number(value, name, self.pointer),
                             units=units)
            self.set_attributes(child, attributes.get(name, {}), path)
            written.add(name)
        if set(attributes) - written:  # attributes of a resource the snapshot lacks
            self.dropped.add(path)
        for resource in snapshot.resources:
            self.resource(element, resource, path)
        return element


def _attribute_text(name: str, value: Any) -> str | None:
    """The attribute text for a kept SSS attribute, or ``None`` if it cannot be written."""
    if name in ("metric", "units"):
        return value if isinstance(value, str) else None
    if name == "wallDuration":
        if isinstance(value, str) and _WALL_DURATION.fullmatch(value.strip()):
            return value
        return None
    if name == "consumptionRate":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if not math.isfinite(value) or abs(value) > FLOAT32_MAX:
            return None
        return repr(float(value))
    return None


def _is_extension(entry: Any) -> bool:
    return (isinstance(entry, dict) and set(entry) <= {"name", "type", "value"}
            and isinstance(entry.get("name"), str) and isinstance(entry.get("value"), str)
            and isinstance(entry.get("type", ""), str))


def _gpu_written_form(gpu: ProcessingUnit) -> tuple[Any, ...]:
    return (gpu.manufacturer, gpu.family, gpu.generation, gpu.model, gpu.extras)


def _gpu_runs(gpus: Iterable[ProcessingUnit]) -> Iterator[tuple[ProcessingUnit, int]]:
    """Consecutive GPUs that one ``<Resource name="GPU">`` can write: the first GPU of each
    run of equal vendor fields and extras, and the run's length."""
    first: ProcessingUnit | None = None
    count = 0
    for gpu in gpus:
        if first is not None and _gpu_written_form(gpu) != _gpu_written_form(first):
            yield first, count
            first, count = None, 0
        if first is None:
            first = gpu
        count += 1
    if first is not None:
        yield first, count


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
)
