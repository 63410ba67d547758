"""SSS writing: one ``<Node>`` per machine (inside ``<Data>`` for several), ids filled in
where missing, and the fields the writer cannot spell counted as losses.
"""

from __future__ import annotations

import copy
import math
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import repeat
from typing import TYPE_CHECKING, Any

from dcx.core.diagnostics import Diagnostic, WriteResult, error
from dcx.core.groups import MachineGroup, machine_parts, part_count
from dcx.core.ids import id_from_text, required_ids_of
from dcx.core.model import (
    Consumables,
    Document,
    Environment,
    Id,
    Machine,
    MachineState,
    NamedResource,
    ProcessingUnit,
    StorageUnit,
)
from dcx.parsing.xmlio import check_xml_text

if TYPE_CHECKING:  # lxml loads when a file is read or written, not when formats are sniffed
    from lxml import etree

from dcx.formats.sss.vocabulary import (
    _EXTRA_KEYS,
    _LABEL_ATTRIBUTE,
    _MACHINE_EXTRAS,
    _WALL_DURATION,
    AGGREGATIONS,
    DCX_NAMESPACE,
    FLOAT32_MAX,
    GPU_RESOURCE,
    GPU_VENDOR_ATTRIBUTES,
    STATE_WORD,
    NodeReference,
    reference_problem,
    state_for_word,
)


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
        _, dropped = _serialise(document, with_bytes=False)
    except _Unwritable:
        return frozenset()  # the conversion stops with the writer's error
    return frozenset(dropped)


def _serialise(document: Document, with_bytes: bool = True) -> tuple[bytes, set[str]]:
    """The XML of ``document`` (``b""`` unless ``with_bytes``) and the held field paths whose
    values it leaves out. A machine group's node is built once and its members' ``<Id>`` and
    ``<Name>`` texts put into its serialised text (``_GroupText``): the same bytes as one
    element per member, without a million elements."""
    dropped: set[str] = set()
    environment = document.environment or Environment()
    parts = list(machine_parts(environment))
    count = sum(map(part_count, parts))
    references = _references(environment, dropped)
    single = count == 1 and not references
    ids, names = _node_ids(parts, single, dropped)
    writers: list[_SingleNode | _GroupText] = []
    position = 0
    for part in parts:
        pointer = "/Node" if single else f"/Data/Node[{position + 1}]"
        if isinstance(part, MachineGroup):
            end = position + part.count
            writers.append(_GroupText(part, ids[position:end], names[position:end], pointer,
                                      dropped))
        else:
            writers.append(_SingleNode(part, ids[position], pointer, dropped))
        position += part_count(part)
    namespaced = any(writer.namespaced for writer in writers)
    if not with_bytes:
        return b"", dropped
    if namespaced or single or not (writers or references):  # lxml writes <Data/>
        return _tree_bytes(writers, references, single, namespaced), dropped
    chunks = [_DECLARATION, b"<Data>\n"]
    for writer in writers:
        chunks.extend(writer.texts())
    chunks.extend(_node_text(_reference_element(reference)) for reference in references)
    chunks.append(b"</Data>\n")
    return b"".join(chunks), dropped


_DECLARATION = b"<?xml version='1.0' encoding='UTF-8'?>\n"
_DATA_OPEN = b"<Data>\n"
_DATA_CLOSE = b"</Data>\n"


def _node_text(node: etree._Element) -> bytes:
    """The text lxml writes for ``node`` as a child of ``<Data>`` (pretty-printed)."""
    from lxml import etree

    root = etree.Element("Data")
    root.append(node)
    text: bytes = etree.tostring(root, encoding="UTF-8", pretty_print=True)
    start = text.index(_DATA_OPEN) + len(_DATA_OPEN)
    return text[start:len(text) - len(_DATA_CLOSE)]


def _tree_bytes(writers: Sequence[_SingleNode | _GroupText], references: list[NodeReference],
                single: bool, namespaced: bool) -> bytes:
    """The document as one lxml tree (a single node, or attributes of ``DCX_NAMESPACE``,
    declared once at the root)."""
    from lxml import etree

    nodes: list[etree._Element] = []
    for writer in writers:
        nodes.extend(writer.elements())
    nodes.extend(_reference_element(reference) for reference in references)
    if single:
        root = nodes[0]
    else:
        root = etree.Element("Data")
        root.extend(nodes)
    if namespaced:
        etree.cleanup_namespaces(root, top_nsmap={"dcx": DCX_NAMESPACE})
    data: bytes = etree.tostring(root, xml_declaration=True, encoding="UTF-8",
                                 pretty_print=True)
    return data


def _unwritable(message: str, code: str, pointer: str = "") -> _Unwritable:
    return _Unwritable(error(message, code, pointer=pointer))


def _node_ids(parts: list[Machine | MachineGroup], single: bool,
              dropped: set[str]) -> tuple[list[str], list[str | None]]:
    """Each machine's ``<Id>`` text (its id, or the one ``required_ids`` gives it), and its
    name."""
    owns: list[Id | None] = []
    names: list[str | None] = []
    for part in parts:
        if isinstance(part, MachineGroup):
            template = part.template
            owns.extend(part.ids if part.ids is not None else repeat(template.id, part.count))
            names.extend(part.names if part.names is not None
                         else repeat(template.name, part.count))
        else:
            owns.append(part.id)
            names.append(part.name)
    texts = list(map(str, required_ids_of(list(zip(owns, names, strict=True)))))
    if len(set(texts)) != len(texts) or not all(map(str.strip, texts)):
        _refuse_ids(texts, single)
    if owns.count(None) != len(owns) and any(
            own is not None and id_from_text(text) != own
            for own, text in zip(owns, texts, strict=True)):
        dropped.add("machine.id")  # a text id in decimal digits reads back as an integer
    return texts, names


def _refuse_ids(texts: list[str], single: bool) -> None:
    """The first blank or repeated id, as the error that stops the write."""
    seen: set[str] = set()
    for position, text in enumerate(texts, 1):
        pointer = "/Node" if single else f"/Data/Node[{position}]"
        if not text.strip():
            raise _unwritable(f"machine {position} has a blank id; SSS requires a non-empty "
                              "<Id>", "sss.write.missing-id", pointer)
        if text in seen:
            raise _unwritable(f"machine id {text!r} is used twice; SSS node ids are unique",
                              "sss.write.duplicate-id", pointer)
        seen.add(text)


class _SingleNode:
    """The ``<Node>`` of one machine, built at once (so that ``namespaced`` is known)."""

    def __init__(self, machine: Machine, node_id: str, pointer: str,
                 dropped: set[str]) -> None:
        writer = _MachineWriter(machine, node_id, pointer, dropped)
        self.node = writer.element()
        self.namespaced = writer.namespaced

    def texts(self) -> Iterator[bytes]:
        yield _node_text(self.node)

    def elements(self) -> Iterator[etree._Element]:
        yield self.node


class _GroupText:
    """The ``<Node>`` of every member of a machine group: the template's node built once
    with stand-ins for its ``<Id>`` and ``<Name>`` texts, serialised, and each member's
    texts put in their place (escaped as lxml escapes them)."""

    def __init__(self, group: MachineGroup, ids: list[str], names: list[str | None],
                 pointer: str, dropped: set[str]) -> None:
        self.group = group
        self.ids = ids
        self.member_names = names
        self.pointer = pointer
        marker = uuid.uuid4().hex
        self.id_marker = f"dcx-id-{marker}"
        self.name_marker = f"dcx-name-{marker}" if group.names is not None else None
        template = group.template
        if self.name_marker is not None:
            template = replace(template, name=self.name_marker)
        self.writer = _MachineWriter(template, self.id_marker, pointer, dropped)
        self.node = self.writer.element()
        self.namespaced = self.writer.namespaced
        self.dropped = dropped

    def names(self) -> list[str | None]:
        return self.member_names

    def checked(self, values: list[str], what: str) -> list[str]:
        """``values`` escaped (checked and escaped as one text where none holds a newline);
        the first item XML cannot hold stops the write."""
        joined = "\n".join(values)
        if check_xml_text(joined) is not None:  # find which one (a newline is no problem)
            for index, value in enumerate(values):
                problem = check_xml_text(value)
                if problem is not None:
                    raise _unwritable(f"{what}: {problem}", "sss.write.unwritable-text",
                                      f"/Data/Node[{index + 1}]")
        if joined.count("\n") != len(values) - 1:
            return list(map(_escaped, values))
        return _escaped(joined).split("\n")  # escaping adds no newline

    def texts(self) -> Iterator[bytes]:
        text = _node_text(self.node).decode()
        head, rest = text.split(f">{self.id_marker}<", 1)
        pieces = [head + ">", "<" + rest]
        if self.name_marker is not None:
            middle, tail = pieces[1].split(f">{self.name_marker}<", 1)
            pieces = [pieces[0], middle + ">", "<" + tail]
        ids = self.checked(self.ids, "<Id>")
        if self.name_marker is None:
            first, last = pieces
            yield "".join([first + own + last for own in ids]).encode()
            return
        names = self.checked(self.names(), "<Name>")  # type: ignore[arg-type]
        first, middle, last = pieces
        yield "".join([first + own + middle + name + last
                       for own, name in zip(ids, names, strict=True)]).encode()

    def elements(self) -> Iterator[etree._Element]:
        for node_id, name in zip(self.ids, self.names(), strict=True):
            node = copy.deepcopy(self.node)
            node.find("Id").text = node_id  # type: ignore[union-attr]
            if name is not None:
                node.find("Name").text = name  # type: ignore[union-attr]
            yield node


def _escaped(text: str) -> str:
    """XML character data as lxml writes it."""
    if "&" in text or "<" in text or ">" in text or "\r" in text:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
            .replace("\r", "&#13;")
    return text


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
