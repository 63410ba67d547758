"""SSS reading: the XSD, then one machine per ``<Node>`` (Configured, Available and Utilized
resources, units, states), node references resolved.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dcx.core.diagnostics import Diagnostic, InputError, ReadResult, error, has_errors, warning
from dcx.core.groups import MachineGroup, run_group, slots_of
from dcx.core.ids import id_from_text
from dcx.core.located import ElementPlaces, line_only
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
from dcx.parsing.xmlio import load_xsd, parse_xml, source_line, xsd_diagnostics

if TYPE_CHECKING:  # lxml loads when a file is read or written, not when formats are sniffed
    from lxml import etree

from dcx.formats.sss.vocabulary import (
    _EXTRA_KEYS,
    _LABEL_ATTRIBUTE,
    _SMART_QUOTE_HINT,
    _SMART_QUOTES,
    CATEGORIES,
    CONSUMABLES,
    DCX_NAMESPACE,
    FLOAT32_MAX,
    GPU_RESOURCE,
    GPU_VENDOR_ATTRIBUTES,
    SINGLE_PROPERTIES,
    SSS_ATTRIBUTES,
    STATE_TABLE,
    STATE_WORD,
    NodeReference,
    UnitError,
    megabits_per_second,
    megabytes,
    reference_problem,
    state_for_word,
)

XSD_NAME = "sss-node.xsd"


def read_checked(data: bytes) -> ReadResult:
    """``read`` element by element: every file the text-run path (``text_runs``) does not
    accept."""
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
    return ReadResult(Document(environment=environment), diagnostics,
                      locator=ElementPlaces(line_only, source_line(root), (source_line(root),),
                                            (tuple(reader.machine_lines),)).places().locate)


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
        self.machine_lines: list[int | None] = []
        """The source line of each machine read, in order."""

    def problem(self, element: etree._Element, code: str, message: str, *,
                attribute: str | None = None, hint: str | None = None,
                is_error: bool = True) -> None:
        self.error_count += is_error
        make = error if is_error else warning
        self.diagnostics.append(make(message, code, line=element.sourceline,
                                     pointer=_xpath(element, attribute), hint=hint))

    def read_root(self, root: etree._Element) -> Environment:
        from lxml import etree

        nodes = [root] if root.tag == "Node" else list(root)
        parts: list[Machine | MachineGroup] = []
        run: _Run | None = None
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
            shape = _shape(etree.tostring(node, with_tail=False))
            member = run.member(node) if run is not None and shape == run.shape else None
            if member is not None and run is not None:
                identity = member
            else:
                if run is not None:
                    parts.append(run.part())
                    run = None
                found = len(self.diagnostics)
                machine = self.read_node(node)
                if machine is None:
                    continue
                if len(self.diagnostics) == found:
                    run = _Run.starting(node, machine, shape)
                else:  # a node with findings is read on its own, never as a run's member
                    parts.append(machine)
                identity = machine.id
            machine_id = str(identity)
            if machine_id in seen_ids:
                self.problem(node, "sss.id.duplicate",
                             f"node id {machine_id!r} already used by node "
                             f"{seen_ids[machine_id]}")
            seen_ids.setdefault(machine_id, len(self.machine_lines) + 1)
            self.machine_lines.append(getattr(node, "sourceline", None))
        if run is not None:
            parts.append(run.part())
        rack = Rack(slots=slots_of(parts))
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
            manufacturer, family, generation = (element.get(f"{{{DCX_NAMESPACE}}}{name}")
                                                for name in GPU_VENDOR_ATTRIBUTES)
            gpu = ProcessingUnit(cores=1, model=element.get("type"), extras=gpu_extras,
                                 manufacturer=manufacturer, family=family,
                                 generation=generation)
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


_ID_TEXT = re.compile(rb"<Id>[^<]*</Id>")
_NAME_TEXT = re.compile(rb"<Name>[^<]*</Name>")


def _shape(serialised: bytes) -> bytes:
    """A node object's serialisation without the texts of its ``Id`` and ``Name``
    elements: two nodes of one shape read as the same machine but for id and name, with
    the same findings (an empty ``Id`` aside, which ``_Run.member`` leaves to the exact
    path)."""
    # two literal replacements: a group reference in the replacement costs a Python call
    # per match
    return _NAME_TEXT.sub(b"<Name/>", _ID_TEXT.sub(b"<Id/>", serialised))


@dataclass
class _Run:
    """Node objects of one shape read one after another: the first read in full (without
    findings), the others only for their id and name (their elements sit where the first
    one's do)."""

    shape: bytes
    first: Machine
    id_at: int
    name_at: int | None
    ids: list[Any]
    names: list[str] | None

    @staticmethod
    def starting(node: etree._Element, machine: Machine, shape: bytes) -> _Run:
        children = list(node)
        id_at = next(i for i, child in enumerate(children) if child.tag == "Id")
        name_at = next((i for i, child in enumerate(children) if child.tag == "Name"), None)
        return _Run(shape, machine, id_at, name_at, [machine.id],
                    None if name_at is None else [machine.name or ""])

    def member(self, node: etree._Element) -> Any:
        """The id of ``node`` (of this run's shape), its name noted; ``None`` when its
        ``Id`` is blank, which the exact path reports."""
        text = node[self.id_at].text or ""
        if not text.strip():
            return None
        identity = id_from_text(text)
        self.ids.append(identity)
        if self.names is not None and self.name_at is not None:
            self.names.append(node[self.name_at].text or "")
        return identity

    def part(self) -> Machine | MachineGroup:
        if len(self.ids) == 1:
            return self.first
        return run_group(self.first, len(self.ids), self.ids, self.names)


def _is_reference(node: etree._Element) -> bool:
    """No element child (text, comments at most): a node reference, not a node object."""
    from lxml import etree

    return next(node.iterchildren(etree.Element), None) is None


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
