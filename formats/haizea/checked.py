"""The checked read: every diagnostic with its line, column and XPath.

An LWF's requests are validated and converted one by one, then deleted from the tree, so a
large LWF never has more than one request in memory; a standalone ``<lease>`` and a
``.lwfa`` are small trees. Clean LWFs take the fast path (``fast``) first, which gives up
wherever this would report something.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from dcx.core.diagnostics import InputError, error, warning
from dcx.core.model import Annotation, Document, Job, StartMode, Task, Workload
from dcx.formats.haizea import rules
from dcx.formats.haizea.context import Context
from dcx.formats.haizea.leases import (
    RequestCache,
    combined_node_sets,
    lease_extras,
    new_job,
    new_task,
    read_attrs,
    resource_request,
    settle_assigned_ids,
    unique_type_names,
)
from dcx.formats.haizea.recorded import recorded_fields, trace_values
from dcx.formats.haizea.site import NodeSet, read_node_sets, read_site
from dcx.formats.haizea.times import (
    TimeSyntaxError,
    parse_absolute,
    parse_time,
    parse_time_uncached,
)
from dcx.formats.haizea.vocabulary import (
    ID_ASSIGNED_KEY,
    NODE_SETS_KEY,
    REQUEST_SCHEMA,
    ROOT_SCHEMAS,
    STATE_KEY,
    SUBMIT_TIME_KEY,
)
from dcx.parsing import xmlio


@dataclass
class Requests:
    """What the checks across requests need (ids, types, arrival order)."""

    ids: dict[int, int | None] = field(default_factory=dict)
    id_positions: dict[int, int] = field(default_factory=dict)
    """Request positions of the ids whose line libxml2 could only give as 65,535."""
    type_counts: dict[str, int] = field(default_factory=dict)
    """Resource type -> how many leases ask for it."""
    type_first_use: dict[str, tuple[int | None, str]] = field(default_factory=dict)
    """Resource type -> (line, XPath) of the first lease asking for it."""
    arrivals: rules.ArrivalOrder = field(default_factory=rules.ArrivalOrder)
    out_of_order: int = 0
    first_out_of_order: tuple[int | None, str, float, float] | None = None
    request_cache: RequestCache = field(default_factory=dict)


TimeReader = Callable[[Any], float | None]


def _read_lease(lease: Any, context: Context, requests: Requests, *, position: int,
                arrival: float | None, realduration: float | None,
                start_time: TimeReader) -> Task | None:
    """One ``<lease>`` (already valid against the XSD) as a task. Runs once per request of
    a large LWF, so it reads each child once, in document order (``xs:all``: any order)."""
    node_sets: list[NodeSet] = []
    start_mode = StartMode.ANY
    start_time_s: float | None = None
    duration: float | None = None
    deadline: float | None = None
    deadline_element: Any = None
    duration_element: Any = None
    image: str | None = None
    image_size_mb: float | None = None
    extras: dict[str, Any] = {}
    for child in lease:
        tag = child.tag
        if tag == "nodes":
            node_sets = read_node_sets(child, context)
        elif tag == "duration":
            duration_element = child
            try:  # inline context.time: this runs once per request
                duration = parse_time(child.get("time"))
            except TimeSyntaxError as exc:
                context.time_error(exc, child, "time")
        elif tag == "start":
            if len(child):
                first = child[0]
                if first.tag == "now":
                    start_mode = StartMode.NOW
                else:
                    start_mode = StartMode.EXACT
                    start_time_s = start_time(first)
        elif tag == "software":
            disk_image = child[0]
            if disk_image.tag == "disk-image":
                image = disk_image.get("id")
                image_size_mb = float(int(disk_image.get("size")))
        elif tag == "deadline":
            deadline = start_time(child)
            deadline_element = child
        elif tag == "extra":
            extras.update(lease_extras(read_attrs(child, context, "extra")))

    lease_id = _lease_id(lease, position, context, requests, extras)
    preemptible = _lease_attributes(lease, context, extras)
    for finding in rules.lease_time_findings(duration, realduration, start_mode, start_time_s,
                                             deadline):
        context.finding(finding, {"lease": lease, "duration": duration_element,
                                  "deadline": deadline_element}[finding.subject])

    if not node_sets:
        context.finding(rules.LEASE_WITHOUT_NODES, lease)
        return None
    count, capacity, stored = combined_node_sets(node_sets)
    if stored is not None:
        extras[NODE_SETS_KEY] = stored
    note_types(unique_type_names(node_sets), lease, context, requests)
    user = lease.get("user")
    recorded = recorded_fields(extras)
    return new_task({
        "id": lease_id,
        "submit_time_s": arrival if arrival is not None else 0.0,
        "runtime_s": realduration if realduration is not None else duration,  # runs for it
        "requested_time_s": duration,
        "request": resource_request(count, capacity, requests.request_cache),
        "dependencies": (),
        "deadline_s": deadline,
        "start_mode": start_mode,
        "start_time_s": start_time_s,
        "preemptible": preemptible,
        "user": user.strip() if user is not None else None,
        "group": recorded.get("group"),
        "image": image,
        "image_size_mb": image_size_mb,
        **trace_values(recorded),
        "extras": extras,
    })


def _lease_id(lease: Any, position: int, context: Context, requests: Requests,
              extras: dict[str, Any]) -> int:
    """The lease's id (its position when it has none, marked in ``extras``); a duplicate is
    reported where the first use of the id is."""
    text_id = lease.get("id")
    if text_id is None:
        extras[ID_ASSIGNED_KEY] = True
        return position
    lease_id = int(text_id)
    if lease_id in requests.ids:
        first_line = requests.ids[lease_id]
        if first_line == xmlio.SATURATED_LINE and lease_id in requests.id_positions:
            first_line = context.tag_line("lease", requests.id_positions[lease_id])
        context.error(code="haizea.duplicate-lease-id",
                      message=rules.duplicate_id_message(lease_id, first_line),
                      element=lease, attribute="id")
    else:
        requests.ids[lease_id] = lease.sourceline
        if lease.sourceline == xmlio.SATURATED_LINE:  # its real line is found if needed
            requests.id_positions[lease_id] = position
    return lease_id


def _lease_attributes(lease: Any, context: Context, extras: dict[str, Any]) -> bool | None:
    """The lease's ``state`` and ``submit-time`` kept in ``extras``; its ``preemptible``."""
    state = lease.get("state")
    if state is not None:
        extras[STATE_KEY] = int(state)
    submit_time = lease.get("submit-time")
    if submit_time is not None:
        extras[SUBMIT_TIME_KEY] = submit_time
    preemptible, finding = rules.preemptible(lease.get("preemptible"))
    if finding is not None:
        context.finding(finding, lease)
    return preemptible


def note_types(names: list[str], lease: Any, context: Context, requests: Requests) -> None:
    """Count the leases asking for each resource type and locate the first one."""
    counts = requests.type_counts
    for name in names:
        count = counts.get(name)
        if count is None:
            counts[name] = 1
            requests.type_first_use[name] = (context.element_line(lease), context.xpath(lease))
        else:
            counts[name] = count + 1


def check_types_against_site(site_names: tuple[str, ...], requests: Requests,
                             context: Context) -> None:
    for name in rules.undeclared_types(requests.type_counts, set(site_names)):
        count = requests.type_counts[name]
        line, pointer = requests.type_first_use[name]
        context.diagnostics.append(error(
            f"resource type {name!r} is not in the site's resource types "
            f"({' '.join(site_names)}); {count} lease(s) ask for it",
            "haizea.unknown-resource-type", line=line, pointer=pointer))


def note_arrival(arrival: float, line: Callable[[], int | None], pointer: Callable[[], str],
                 requests: Requests) -> None:
    previous = requests.arrivals.earlier_than(arrival)
    if previous is not None:
        requests.out_of_order += 1
        if requests.first_out_of_order is None:
            requests.first_out_of_order = (line(), pointer(), arrival, previous)


def report_arrival_order(requests: Requests, context: Context) -> None:
    if requests.first_out_of_order is None:
        return
    line, pointer, arrival, previous = requests.first_out_of_order
    context.diagnostics.append(warning(
        rules.arrival_order_message(arrival, previous, requests.out_of_order),
        "haizea.arrival-order", line=line, pointer=pointer))


def read_workload_stream(data: bytes, context: Context) -> Document | None:
    """An LWF on the checked path (documents with diagnostics; clean ones take the fast
    path, ``fast``). Requests are validated and converted one by one, then deleted from the
    tree, so a large LWF never has more than one request in memory; the rest (site, description,
    attributes) is validated with the full XSD at the end.

    Each request is validated against its own XSD once it has ended rather than by libxml2
    during the parse (``iterparse(schema=...)``): that is no faster (100,000 requests, two
    runs: 1.95 s vs 2.08 s and 2.58 s vs 2.42 s CPU, within the noise; see
    ``benchmarks/bench_haizea.py``) and it stops at the first error, where this reports every
    invalid request with its line and XPath."""
    request_schema = xmlio.load_xsd(REQUEST_SCHEMA)
    requests = Requests()
    jobs: list[Job] = []
    valid = True
    root = None
    holder = None  # the <lease-requests> under the root, once seen
    position = 0
    for _, element in xmlio.iter_elements(data, tags=("lease-request", "lease-workload")):
        if element.tag == "lease-workload":
            root = element if element.getparent() is None else root
            continue
        parent = element.getparent()
        if parent is None or parent is not holder:  # lxml keeps one proxy per node
            if parent is None or not _is_request_holder(parent):
                continue  # misplaced: the whole-document XSD check below reports it
            holder = parent
        position += 1
        context.request = element
        context.request_position = position
        if context.xsd(request_schema, element):
            job = _read_request(element, context, requests, position)
            if job is not None:
                jobs.append(job)
        else:
            valid = False
        context.request = None
        # The request has ended, so the parser no longer touches it; other children of the
        # holder (foreign elements) stay for the skeleton check.
        parent.remove(element)
    if root is None:
        raise InputError(error("no <lease-workload> root element", "haizea.root", line=1))
    for holder in root.iter("lease-requests"):
        for request in holder.findall("lease-request"):
            holder.remove(request)
    if not context.xsd(xmlio.load_xsd(ROOT_SCHEMAS["lease-workload"]), root.getroottree()):
        return None
    environment = None
    site = root.find("site")
    if site is not None:
        environment, names = read_site(site, context)
        check_types_against_site(names, requests, context)
    report_arrival_order(requests, context)
    if not valid:
        return None
    if position == 0:  # a request that was rejected has its own error
        context.diagnostics.append(warning("the workload has no lease requests",
                                           "haizea.empty-workload", line=root.sourceline,
                                           pointer="/lease-workload/lease-requests"))
    description = root.find("description")
    attributes = root.find("attributes")
    assigned = [index for index, job in enumerate(jobs)
                if ID_ASSIGNED_KEY in job.tasks[0].extras] if requests.ids else ()
    workload = Workload(
        jobs=settle_assigned_ids(jobs, requests.ids, assigned),
        name=root.get("name"),
        description=description.text or "" if description is not None else None,
        attributes=read_attrs(attributes, context, "attribute") if attributes is not None
        else {},
    )
    return Document(environment=environment, workload=workload)


def _is_request_holder(parent: Any) -> bool:
    """``/lease-workload/lease-requests``: the only place requests are read from."""
    return parent is not None and parent.tag == "lease-requests" and \
        parent.getparent() is not None and parent.getparent().getparent() is None


def _read_request(element: Any, context: Context, requests: Requests,
                  position: int) -> Job | None:
    arrival: float | None = None
    try:  # inline context.offset and context.time: this runs once per request
        arrival = parse_time_uncached(element.get("arrival"))
    except TimeSyntaxError as exc:
        context.time_error(exc, element, "arrival")
    if arrival is not None:
        note_arrival(arrival, lambda: context.element_line(element),
                     lambda: context.xpath(element, "arrival"), requests)
    realduration = None
    lease = None
    for child in element:
        if child.tag == "lease":
            lease = child
        else:
            try:
                realduration = parse_time(child.get("time"))
            except TimeSyntaxError as exc:
                context.time_error(exc, child, "time")
            if realduration is not None:
                for finding in rules.realduration_findings(realduration):
                    context.finding(finding, child)
    task = _read_lease(lease, context, requests, position=position, arrival=arrival,
                       realduration=realduration, start_time=context.offset)
    if task is None:
        return None
    return new_job({"id": task.id, "tasks": (task,), "name": None, "user": None, "extras": {}})


def read_standalone_lease(lease: Any, context: Context) -> Workload:
    """XML-RPC leases carry absolute times; they are placed on an axis whose origin is the
    submit time, else the first absolute time in the lease."""
    origin: _dt.datetime | None = None
    submit_text = lease.get("submit-time")
    if submit_text is not None:
        origin = parse_absolute(submit_text)
        if origin is None:
            context.error(code="haizea.time-syntax", message=f"submit-time {submit_text!r} is "
                          "not an absolute time (YYYY-MM-DD HH:MM:SS)", element=lease,
                          attribute="submit-time")

    def absolute_or_relative(element: Any) -> float | None:
        nonlocal origin
        text = element.get("time")
        moment = parse_absolute(text)
        if moment is None:
            return context.time(element)
        if origin is None:
            origin = moment
        return (moment - origin).total_seconds()

    task = _read_lease(lease, context, Requests(), position=1, arrival=0.0, realduration=None,
                       start_time=absolute_or_relative)
    if task is not None:
        extras = {key: value for key, value in task.extras.items() if key != SUBMIT_TIME_KEY}
        task = replace(task, extras=extras)
    jobs = (Job(id=task.id, tasks=(task,)),) if task is not None else ()
    return Workload(jobs=jobs, time_origin=origin.isoformat() if origin else None)


# ------------------------------------------------------------------ annotations


def read_annotations(root: Any, context: Context) -> Workload:
    annotations: list[Annotation] = []
    attributes: dict[str, Any] = {}
    with_id = without_id = 0
    for element in root:
        if element.tag == "attributes":
            attributes = read_attrs(element, context, "attribute")
            continue
        target = element.get("id")
        with_id += target is not None
        without_id += target is None
        if with_id and without_id:
            context.error(code="haizea.annotation-ids-mixed", message="some annotations have "
                          "an id and some do not; Haizea needs all or none", element=element)
        annotations.append(_read_annotation(element, context))
    return Workload(attributes=attributes, annotations=tuple(annotations))


def _read_annotation(element: Any, context: Context) -> Annotation:
    start_mode: StartMode | None = None
    start_offset = deadline_offset = image_size = None
    image: str | None = None
    software_none = False
    extras: dict[str, Any] = {}
    for child in element:
        if child.tag == "start":
            start_mode = StartMode.ANY
            if len(child):
                start_mode = StartMode.NOW if child[0].tag == "now" else StartMode.EXACT
                if start_mode is StartMode.EXACT:
                    start_offset = context.time(child[0])
        elif child.tag == "deadline":
            deadline_offset = context.time(child)
        elif child.tag == "software":
            software_none = child[0].tag == "none"
            if not software_none:
                image = child[0].get("id")
                image_size = float(int(child[0].get("size")))
        elif child.tag == "extra":
            extras = read_attrs(child, context, "extra")
    target = element.get("id")
    return Annotation(target=int(target) if target is not None else None,
                      start_mode=start_mode, start_offset_s=start_offset,
                      deadline_offset_s=deadline_offset, image=image, image_size_mb=image_size,
                      software_none=software_none, extras=extras)
