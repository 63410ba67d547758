"""Writing Haizea XML: serialisation of a document's normal form (``normal_form``) only.

What the format cannot hold is derived, not counted here (``dcx.core.restrict``): the
writer writes ``normal_form(document)``, which is what reads back. Leases are written as text
(lxml takes about a microsecond per attribute it sets); every value goes through
``quoteattr`` (the standard library's escaping) and every free text through ``_text``, and
the tests read each written document back against the XSD.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from lxml import etree

from dcx.core.diagnostics import InputError, WriteResult, error
from dcx.core.groups import machine_parts, part_count, part_template
from dcx.core.model import Document, Environment, Machine, NamedResource, StartMode, Task, Workload
from dcx.formats.haizea.normalise import (
    attr_values,
    is_annotation_document,
    normal_form,
    request_capacity,
    stored_node_sets,
)
from dcx.formats.haizea.recorded import recorded_attrs
from dcx.formats.haizea.site import derived_type_names
from dcx.formats.haizea.times import format_time
from dcx.formats.haizea.vocabulary import (
    CPU,
    CPU_PER_CORE,
    ID_ASSIGNED_KEY,
    MEMORY,
    NODE_SETS_KEY,
    PREFIXED_EXTRA_KEY,
    RESOURCE_TYPES_KEY,
    STATE_KEY,
    SUBMIT_TIME_KEY,
    Amount,
    Capacity,
)
from dcx.parsing import xmlio


def write(document: Document) -> WriteResult:
    document = normal_form(document)
    try:
        root = _document_element(document)
        requests = _requests_text(document)
    except InputError as exc:
        return WriteResult(b"", diagnostics=(exc.diagnostic,))
    data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    if requests is not None:
        before, after = data.split(_REQUESTS_MARK.encode())
        data = b"".join((before.rstrip(b" "), requests.encode(), after.lstrip(b"\n")))
    return WriteResult(data)


def _text(value: Any) -> str:
    """A string XML 1.0 can carry, or an ``InputError`` that stops the write."""
    text = str(value)
    problem = xmlio.check_xml_text(text)
    if problem is not None:
        raise InputError(error(f"cannot write {text[:40]!r} in Haizea XML: {problem}",
                               "haizea.write.character"))
    return text


def _document_element(document: Document) -> Any:
    workload = document.workload
    environment = document.environment
    if workload is not None and is_annotation_document(document):
        return _annotations_element(workload)
    if workload is None and environment is not None:
        return _site_element(environment, ())
    return _workload_element(workload or Workload(), environment)


# ------------------------------------------------------------------ site


def _machine_capacity(machine: Machine) -> Capacity:
    """The node's ``<res>`` list; ``machine`` is in normal form, so every named resource is
    a single-word type given once with whole amounts."""
    items: list[tuple[str, Amount]] = []
    named = {resource.name: resource for resource in machine.resources}
    if machine.cpus:
        amounts = tuple(cpu.cores * CPU_PER_CORE for cpu in machine.cpus)
        items.append((CPU, amounts[0] if len(amounts) == 1 else amounts))
    elif CPU in named:  # not whole cores
        items.append((CPU, _written_amount(named.pop(CPU))))
    if machine.memory:
        sizes = tuple(int(unit.capacity_mb) for unit in machine.memory)
        items.append((MEMORY, sizes[0] if len(sizes) == 1 else sizes))
    items.extend((name, _written_amount(resource)) for name, resource in named.items())
    return tuple(items)


def _written_amount(resource: NamedResource) -> Amount:
    if resource.instances:
        return tuple(int(value) for value in resource.instances)
    return int(resource.amount)


def _res_elements(parent: Any, capacity: Capacity) -> None:
    for name, amount in capacity:
        res = etree.SubElement(parent, "res", type=_text(name))
        if isinstance(amount, tuple):
            for value in amount:
                etree.SubElement(res, "instance", amount=str(value))
        else:
            res.set("amount", str(amount))


def _nodes_element(parent: Any, node_sets: list[tuple[int, Capacity]]) -> None:
    nodes = etree.SubElement(parent, "nodes")
    for count, capacity in node_sets:
        node_set = etree.SubElement(nodes, "node-set", numnodes=str(count))
        _res_elements(node_set, capacity)


def _site_element(environment: Environment, lease_types: Iterable[str],
                  parent: Any = None) -> Any:
    """Consecutive machines with identical capacities form one ``<node-set>``."""
    node_sets: list[tuple[int, Capacity]] = []
    templates: list[Machine] = []
    for part in machine_parts(environment):  # a group is its members, not expanded
        template, count = part_template(part), part_count(part)
        templates.append(template)
        capacity = _machine_capacity(template)
        if node_sets and node_sets[-1][1] == capacity:
            node_sets[-1] = (node_sets[-1][0] + count, capacity)
        else:
            node_sets.append((count, capacity))
    kept = environment.extras.get(RESOURCE_TYPES_KEY)
    names = [str(name) for name in kept] if isinstance(kept, list) else \
        derived_type_names(templates)
    for _, capacity in node_sets:
        names.extend(name for name, _ in capacity if name not in names)
    names.extend(name for name in lease_types if name not in names)
    site = etree.Element("site") if parent is None else etree.SubElement(parent, "site")
    etree.SubElement(site, "resource-types", names=_text(" ".join(names)))
    _nodes_element(site, node_sets)
    return site


# ------------------------------------------------------------------ workload


def _attrs_element(parent: Any, tag: str, values: dict[str, Any]) -> None:
    pairs = attr_values(values)
    if pairs:
        element = etree.SubElement(parent, tag)
        for name, value in pairs.items():
            etree.SubElement(element, "attr", name=_text(name), value=_text(value))


def _workload_element(workload: Workload, environment: Environment | None) -> Any:
    root = etree.Element("lease-workload")
    if workload.name is not None:
        root.set("name", _text(workload.name))
    if workload.description is not None:
        etree.SubElement(root, "description").text = _text(workload.description)
    if environment is not None:
        lease_types: list[str] = []
        for task in workload.tasks():
            for _, capacity in _task_node_sets(task):
                lease_types.extend(name for name, _ in capacity if name not in lease_types)
        _site_element(environment, lease_types, parent=root)
    _attrs_element(root, "attributes", workload.attributes)
    holder = etree.SubElement(root, "lease-requests")
    if workload.jobs:
        holder.append(etree.Comment(_REQUESTS_MARK[4:-3]))  # replaced by _requests_text
    return root


def _task_node_sets(task: Task) -> list[tuple[int, Capacity]]:
    stored = stored_node_sets(task.extras.get(NODE_SETS_KEY))
    if stored is not None:
        return [(node_set.nodes, node_set.capacity) for node_set in stored]
    return [(task.request.nodes, request_capacity(task.request))]


_REQUESTS_MARK = "<!--dcx:lease-requests-->"
"""Where ``write`` puts the requests in the serialized document: ``<`` cannot appear in
text or attribute values, so the mark is found only where it was put."""


def _requests_text(document: Document) -> str | None:
    """The ``<lease-request>`` elements of an LWF as indented text, or ``None``."""
    workload = document.workload
    if workload is None or not workload.jobs or is_annotation_document(document):
        return None
    lines: list[str] = []
    for task in workload.tasks():
        _lease_request_lines(lines, task)
    return "".join(lines)


_NEEDS_ESCAPE = re.compile(r'[&<>"\t\n\r]')


def _quoted(value: str) -> str:
    """``quoteattr(value)``, without its cost for the values that need no escape (times,
    numbers: nearly all of them)."""
    if not _NEEDS_ESCAPE.search(value):
        return f'"{value}"'
    # Imported here: xml.sax.saxutils imports urllib.request, which every dcx start-up would
    # pay for (a pre-commit batch of JSON files never writes Haizea).
    from xml.sax.saxutils import quoteattr

    return quoteattr(value)


def _lease_request_lines(lines: list[str], task: Task) -> None:
    # Times and numbers are written as formatted (nothing in them to escape); text goes
    # through _text and _quoted.
    lines.append(f'    <lease-request arrival="{format_time(task.submit_time_s)}">\n')
    if task.runtime_s is not None and task.runtime_s != task.requested_time_s:
        lines.append(f'      <realduration time="{format_time(task.runtime_s)}"/>\n')
    attributes = "".join([f" {name}={_quoted(value)}" for name, value in _lease_attributes(task)])
    lines.append(f"      <lease{attributes}>\n")
    lines.append("        <nodes>\n")
    for count, capacity in _task_node_sets(task):
        lines.append(f'          <node-set numnodes="{count}">\n')
        for name, amount in capacity:
            kind = _quoted(_text(name))
            if isinstance(amount, tuple):
                lines.append(f"            <res type={kind}>\n")
                lines.extend(f'              <instance amount="{value}"/>\n'
                             for value in amount)
                lines.append("            </res>\n")
            else:
                lines.append(f'            <res type={kind} amount="{amount}"/>\n')
        lines.append("          </node-set>\n")
    lines.append("        </nodes>\n")
    if task.start_mode is StartMode.NOW:
        lines.append("        <start>\n          <now/>\n        </start>\n")
    elif task.start_mode is StartMode.EXACT:
        start_s = task.start_time_s if task.start_time_s is not None else task.submit_time_s
        lines.append(f'        <start>\n          <exact time="{format_time(start_s)}"/>\n'
                     "        </start>\n")
    else:
        lines.append("        <start/>\n")
    lines.append(f'        <duration time="{format_time(task.requested_time_s or 0.0)}"/>\n')
    if task.deadline_s is not None:
        lines.append(f'        <deadline time="{format_time(task.deadline_s)}"/>\n')
    if task.image is None:
        lines.append("        <software>\n          <none/>\n        </software>\n")
    else:
        size = int(task.image_size_mb or 0)
        lines.append(f"        <software>\n          <disk-image id={_quoted(_text(task.image))}"
                     f' size="{size}"/>\n        </software>\n')
    attrs = _lease_extra_attrs(task)
    if attrs:
        lines.append("        <extra>\n")
        lines.extend(f"          <attr name={_quoted(_text(name))} "
                     f"value={_quoted(_text(value))}/>\n" for name, value in attrs.items())
        lines.append("        </extra>\n")
    lines.append("      </lease>\n    </lease-request>\n")


def _lease_attributes(task: Task) -> list[tuple[str, str]]:
    extras = task.extras
    attributes = []
    if not extras.get(ID_ASSIGNED_KEY):
        attributes.append(("id", str(task.id)))  # an integer: see normal_form
    attributes.append(("preemptible", "true" if task.preemptible else "false"))
    if task.user is not None:  # an integer: see normal_form
        attributes.append(("user", task.user))
    if extras.get(STATE_KEY) is not None:
        attributes.append(("state", str(extras[STATE_KEY])))
    if extras.get(SUBMIT_TIME_KEY) is not None:
        attributes.append(("submit-time", _text(extras[SUBMIT_TIME_KEY])))
    return attributes


def _lease_extra_attrs(task: Task) -> dict[str, Any]:
    """Plain keys, the attrs the reader set aside, and the trace fields' ``SWF_*`` attrs
    (other ``haizea:`` keys are attributes of their own; other formats' keys survive only in
    their format: losses, Extras)."""
    extras = task.extras
    recorded = recorded_attrs(task)
    if not extras:
        return recorded
    attrs = {key: value for key, value in extras.items() if ":" not in key}
    prefixed = extras.get(PREFIXED_EXTRA_KEY)
    if isinstance(prefixed, dict):
        attrs.update(prefixed)
    attrs.update(recorded)
    return attrs


# ------------------------------------------------------------------ annotations


def _start_element(parent: Any, mode: StartMode | None, time_s: float | None,
                   plus: bool = False) -> None:
    start = etree.SubElement(parent, "start")
    if mode is StartMode.NOW:
        etree.SubElement(start, "now")
    elif mode is StartMode.EXACT:
        etree.SubElement(start, "exact", time=format_time(time_s or 0.0, plus))


def _annotations_element(workload: Workload) -> Any:
    root = etree.Element("lease-annotations")  # name and description: see normal_form
    _attrs_element(root, "attributes", workload.attributes)
    for annotation in workload.annotations:  # ids all integers or all absent: normal_form
        element = etree.SubElement(root, "lease-annotation")
        if annotation.target is not None:
            element.set("id", str(annotation.target))
        if annotation.start_mode is not None:
            _start_element(element, annotation.start_mode, annotation.start_offset_s, plus=True)
        if annotation.deadline_offset_s is not None:
            etree.SubElement(element, "deadline",
                             time=format_time(annotation.deadline_offset_s, plus=True))
        if annotation.software_none or annotation.image is not None:
            software = etree.SubElement(element, "software")
            if annotation.image is None:
                etree.SubElement(software, "none")
            else:
                etree.SubElement(software, "disk-image", id=_text(annotation.image),
                                 size=str(int(annotation.image_size_mb or 0)))
        _attrs_element(element, "extra", annotation.extras)
    return root
