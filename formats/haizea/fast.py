"""The fast read of a clean LWF: the model without elements, source lines or XPaths.

Nearly every large LWF is clean: valid and without a single diagnostic. For those,
``read_clean_workload`` builds the model from the text scan (``scan``, judged by
``verdict``) or, where the scan declines, from an lxml parser target that keeps only the raw
attributes of the request being read while libxml2 validates. Either way ``FastJobs`` turns
raw values into jobs, calling the rules the checked path reports (``rules``). Elements,
lines and XPaths are what make the checked path slow, and they serve only diagnostics; so
this path gives up (``NotClean``) at the first finding, or at anything it cannot rule out,
and the checked path reads the document from the start, reporting exactly what it always
reported. The result is the checked path's, which tests/test_haizea_clean_path.py checks,
both ways, on generated and mutated workloads.

The requests are read before libxml2 has judged the document, so a value an invalid
document holds may be missing or malformed: each conversion declines it (``NotClean``) and
nothing built here is used unless the document is valid. Only that signal, the scan's
``Declined``, a time outside the grammar and libxml2's own errors end this path; any other
exception is a bug and propagates.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeAlias, cast

from lxml import etree

from dcx.core.limits import paused_gc
from dcx.core.model import (
    Document,
    Job,
    ResourceRequest,
    StartMode,
    Workload,
)
from dcx.formats.haizea import rules
from dcx.formats.haizea import scan as haizea_scan
from dcx.formats.haizea import verdict as haizea_verdict
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
from dcx.formats.haizea.site import NodeSet, read_site
from dcx.formats.haizea.times import TimeSyntaxError, parse_offset, parse_time
from dcx.formats.haizea.vocabulary import (
    ID_ASSIGNED_KEY,
    NODE_SETS_KEY,
    ROOT_SCHEMAS,
    STATE_KEY,
    SUBMIT_TIME_KEY,
)
from dcx.parsing import xmlio


class NotClean(Exception):
    """The checked path would report something here (or the fast path cannot rule it out)."""


def _target_text(value: str | None) -> str:
    """An attribute value as a parser target gets it, as the tree would hold it: without
    entity substitution libxml2 hands a target each ``&`` of a value as ``&#38;`` (and
    changes nothing else), so the two spellings map one to one. A required value that is
    missing declines."""
    if value is None:
        raise NotClean  # invalid: the XSD check will say so
    return value.replace("&#38;", "&") if "&" in value else value


def _integer(text: str | None) -> int:
    """``int(text)`` for an integer attribute; what is not one declines (the XSD check
    will say so)."""
    if text is None:
        raise NotClean
    try:
        return int(text)
    except ValueError:
        raise NotClean from None


_RawNodeSet: TypeAlias = tuple[Any, ...]
"""A raw ``<node-set>``: its ``numnodes`` text, then ``(type, amount text)`` per ``<res>``
and each ``<instance>`` amount text after its ``<res>``."""


def _node_set(shape: _RawNodeSet) -> NodeSet:
    """A raw node-set as the checked path reads it (``rules.capacity``); declines where
    that reports."""
    resources: list[rules.RawRes] = []
    for entry in shape[1:]:
        if isinstance(entry, tuple):
            kind, text = entry
            if text is not None:
                _integer(text)
            resources.append((_target_text(kind), text, ()))
        else:
            _integer(entry)
            kind, text, instances = resources[-1]
            resources[-1] = (kind, text, (*instances, entry))
    capacity, findings = rules.capacity(resources)
    if findings:
        raise NotClean
    return NodeSet(_integer(shape[0]), capacity)


def _extras(extra_attrs: Sequence[tuple[str | None, str | None]] | None) -> dict[str, Any]:
    """A lease's ``<extra>`` attributes as its extras; declines on a repeated or
    incomplete one."""
    if extra_attrs is None:
        return {}
    pairs = [(name, value) for name, value in extra_attrs
             if name is not None and value is not None]
    attrs, repeated = rules.attrs(pairs)
    if repeated or len(pairs) != len(extra_attrs):
        raise NotClean
    return lease_extras(attrs)


def _preemptible(text: str | None) -> bool:
    preemptible = rules.PLAIN_PREEMPTIBLE.get(text)
    if preemptible is not None:
        return preemptible
    if text is None:
        raise NotClean
    preemptible, finding = rules.preemptible(text)
    if finding is not None or preemptible is None:
        raise NotClean
    return preemptible


def _image(image: tuple[str | None, str | None]) -> tuple[str | None, float | None]:
    """The disk image's id and size (MB), both absent or both present."""
    image_id, size_text = image
    if image_id is None:
        return None, None
    return _target_text(image_id), float(_integer(size_text))


_REQUEST_SHAPE_LIMIT = 4096
_NO_IMAGE: tuple[None, None] = (None, None)


class FastJobs:
    """The jobs of a clean LWF's requests, however the requests are read (the parser target
    below, or ``scan``): ``checked._read_request`` on raw attribute values, declining
    (``NotClean``) where that would report. Relies on the document being valid, which the
    caller checks before using anything built here."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.position = 0
        self.ids: set[int] = set()
        self.assigned: list[int] = []
        """Indexes of the jobs whose lease had no id."""
        self.arrivals = rules.ArrivalOrder()
        self.used_types: set[str] = set()
        self.shapes: dict[_RawNodeSet, ResourceRequest] = {}
        self.request_objects: RequestCache = {}

    def add(self, arrival_text: str | None, realduration_text: str | None,
            duration_text: str | None, start_mode: StartMode, exact: str | None,
            deadline_text: str | None,
            lease: tuple[str | None, str | None, str | None, str | None, str | None],
            image: tuple[str | None, str | None],
            extra_attrs: Sequence[tuple[str | None, str | None]] | None,
            node_sets: list[_RawNodeSet]) -> None:
        """One request as a job, from its raw attribute values: ``lease`` holds the
        ``<lease>`` attributes (``scan.LEASE_ATTRIBUTES``, ``None`` where absent), ``image``
        the disk image's id and size, ``extra_attrs`` the ``<extra>`` name/value pairs,
        ``node_sets`` the raw node-sets (see ``_RawNodeSet``)."""
        self.position += 1
        arrival, duration, realduration, start_time, deadline = self._times(
            arrival_text, realduration_text, duration_text, start_mode, exact, deadline_text)
        extras = _extras(extra_attrs)
        text_id, preemptible_text, user, state, submit_time = lease
        lease_id = self._lease_id(text_id, extras)
        if user is not None:
            user = _target_text(user).strip()
        if state is not None:
            extras[STATE_KEY] = _integer(state)
        if submit_time is not None:
            extras[SUBMIT_TIME_KEY] = _target_text(submit_time)
        request = self._request(node_sets, extras)
        image_id, image_size = _image(image)
        recorded = recorded_fields(extras)
        task = new_task({
            "id": lease_id, "submit_time_s": arrival,
            "runtime_s": realduration if realduration is not None else duration,
            "requested_time_s": duration, "request": request, "dependencies": (),
            "deadline_s": deadline, "start_mode": start_mode, "start_time_s": start_time,
            "preemptible": _preemptible(preemptible_text), "user": user,
            "group": recorded.get("group"), "image": image_id, "image_size_mb": image_size,
            **trace_values(recorded), "extras": extras,
        })
        self.jobs.append(new_job({"id": lease_id, "tasks": (task,), "name": None,
                                   "user": None, "extras": {}}))

    def _times(self, arrival_text: str | None, realduration_text: str | None,
               duration_text: str | None, start_mode: StartMode, exact: str | None,
               deadline_text: str | None
               ) -> tuple[float, float, float | None, float | None, float | None]:
        """Arrival, duration, real duration, start and deadline, as ``rules`` judges them;
        declines where the checked path would report (an arrival out of order included)."""
        if arrival_text is None or duration_text is None:
            raise NotClean
        arrival = parse_offset(arrival_text)
        if self.arrivals.earlier_than(arrival) is not None:
            raise NotClean
        realduration = None
        if realduration_text is not None:
            realduration = parse_time(realduration_text)
            if rules.realduration_findings(realduration):
                raise NotClean
        duration = parse_time(duration_text)
        start_time = parse_offset(exact) if exact is not None else None
        deadline = parse_offset(deadline_text) if deadline_text is not None else None
        if rules.lease_time_findings(duration, realduration, start_mode, start_time, deadline):
            raise NotClean
        return arrival, duration, realduration, start_time, deadline

    def _lease_id(self, text_id: str | None, extras: dict[str, Any]) -> int:
        """The lease's id, or its position when it has none (marked in ``extras``, and
        settled once every id is known); a repeated id declines."""
        if text_id is None:
            extras[ID_ASSIGNED_KEY] = True
            self.assigned.append(len(self.jobs))
            return self.position
        try:  # inline _integer: once per request
            lease_id = int(text_id)
        except ValueError:
            raise NotClean from None
        if lease_id in self.ids:
            raise NotClean  # a lease id is used once
        self.ids.add(lease_id)
        return lease_id

    def _request(self, node_sets: list[_RawNodeSet], extras: dict[str, Any]
                 ) -> ResourceRequest:
        if len(node_sets) != 1:
            return self.combined_request(node_sets, extras)
        key = node_sets[0]
        request = self.shapes.get(key)
        return self.single_request(key) if request is None else request

    def single_request(self, key: _RawNodeSet) -> ResourceRequest:
        node_set = _node_set(key)
        self.used_types.update(name for name, _ in node_set.capacity)
        request = resource_request(node_set.nodes, node_set.capacity, self.request_objects)
        if len(self.shapes) < _REQUEST_SHAPE_LIMIT:
            self.shapes[key] = request
        return request

    def combined_request(self, raw_sets: list[_RawNodeSet],
                         extras: dict[str, Any]) -> ResourceRequest:
        if not raw_sets:
            raise NotClean  # rules.LEASE_WITHOUT_NODES
        node_sets = [_node_set(raw) for raw in raw_sets]
        count, capacity, stored = combined_node_sets(node_sets)
        if stored is not None:
            extras[NODE_SETS_KEY] = stored
        self.used_types.update(unique_type_names(node_sets))
        return resource_request(count, capacity, self.request_objects)


class _LwfTarget:
    """lxml parser target: the lease requests of an LWF handed to ``FastJobs`` while
    libxml2 parses and validates. ``start`` sees every element; a request is handed over
    when the next one starts, or at the end. Relies on the document being valid (``xs:all``
    in any order, one ``<lease>`` per request, ``<res>`` only in a ``<node-set>``)."""

    def __init__(self) -> None:
        self.built = FastJobs()
        self.in_requests = False
        self.request: Any = None
        self.realduration: str | None = None
        self.lease: Any = None
        self.duration: str | None = None
        self.start_mode = StartMode.ANY
        self.exact: str | None = None
        self.deadline: str | None = None
        self.image: tuple[str | None, str | None] = _NO_IMAGE
        self.attrs: list[tuple[str, str]] | None = None
        self.node_sets: list[list[Any]] = []
        self.shape: list[Any] = []

    def start(self, tag: str, attrib: Any) -> None:
        # The most frequent elements first: this runs for every element of the document.
        if tag == "res":
            self.shape.append((attrib.get("type"), attrib.get("amount")))
        elif tag == "lease-request":
            if self.request is not None:
                self.finish()
            self.request = attrib
            self.realduration = self.lease = self.duration = None
            self.exact = self.deadline = self.attrs = None
            self.image = _NO_IMAGE
            self.start_mode = StartMode.ANY
            self.node_sets = []
        elif tag == "node-set":
            self.shape = [attrib.get("numnodes")]
            self.node_sets.append(self.shape)
        elif tag == "lease":
            self.lease = attrib
        elif tag == "duration":
            self.duration = attrib.get("time")
        elif tag == "disk-image":
            self.image = (attrib.get("id"), attrib.get("size"))
        elif tag == "exact":
            self.start_mode = StartMode.EXACT
            self.exact = attrib.get("time")
        elif tag == "realduration":
            self.realduration = attrib.get("time")
        elif tag == "deadline":
            self.deadline = attrib.get("time")
        elif tag == "now":
            self.start_mode = StartMode.NOW
        elif tag == "attr":
            if self.attrs is not None:  # else the root's <attributes>: read elsewhere
                self.attrs.append((_target_text(attrib.get("name")),
                                   _target_text(attrib.get("value"))))
        elif tag == "instance":
            self.shape.append(attrib.get("amount"))
        elif tag == "extra":
            self.attrs = []
        elif tag == "lease-requests":
            self.in_requests = True
        elif self.in_requests and tag in ("site", "description", "attributes"):
            raise NotClean  # read from the elements before <lease-requests> only

    def close(self) -> FastJobs:
        if self.request is not None:
            self.finish()
        return self.built

    def finish(self) -> None:
        """The request that has ended, handed over."""
        lease = self.lease
        if lease is None or self.duration is None:
            raise NotClean  # invalid: the XSD check will say so
        self.built.add(self.request.get("arrival"), self.realduration, self.duration,
                       self.start_mode, self.exact, self.deadline,
                       (lease.get("id"), lease.get("preemptible"), lease.get("user"),
                        lease.get("state"), lease.get("submit-time")),
                       self.image, self.attrs, [tuple(shape) for shape in self.node_sets])


def _add_scanned(built: FastJobs, recipe: haizea_scan.Recipe,
                 values: list[str | None]) -> None:
    """One request read by ``scan`` handed to ``built`` (an absent field's index reads the
    ``None`` at the end of ``values``). A single node-set is looked up by its raw values in
    the recipe's cache: same values, same node-set."""
    extra_attrs = None
    if recipe.extras is not None:
        extra_attrs = [(values[name_index], values[value_index])
                       for name_index, value_index in recipe.extras]
    templates = recipe.node_sets
    if len(templates) == 1:
        key = tuple(values[recipe.nodes])
        raw = recipe.shapes.get(key)
        if raw is None:
            raw = templates[0].raw(values)
            if len(recipe.shapes) < _REQUEST_SHAPE_LIMIT:
                recipe.shapes[key] = raw
        node_sets = [raw]
    else:
        node_sets = [template.raw(values) for template in templates]
    lease = recipe.lease_attributes
    built.add(values[recipe.arrival], values[recipe.realduration],
              values[recipe.duration], recipe.start_mode,
              values[recipe.exact], values[recipe.deadline],
              (values[lease["id"]], values[lease["preemptible"]],
               values[lease["user"]], values[lease["state"]], values[lease["submit-time"]]),
              (values[recipe.image_id], values[recipe.image_size]),
              extra_attrs, node_sets)


def _hardened_options() -> dict[str, Any]:
    """xmlio's parser settings (no DTD, entities or network, libxml2's limits), for the two
    parsers the fast path builds itself: xmlio has no entry point for a parser target or
    for a parse that stops early, and ``_read`` has already run ``xmlio.precheck``."""
    options = xmlio.parser_options()
    options.pop("collect_ids")  # not an iterparse option, and ids are never looked up
    return options


def _workload_head(data: bytes) -> tuple[Any, list[Any]] | None:
    """The root and its children before ``<lease-requests>`` (description, site,
    attributes), as elements with lines, from a parse that stops at ``<lease-requests>``;
    ``None`` when there is no such element under the root or the head is malformed."""
    root = None
    try:
        for _, element in etree.iterparse(io.BytesIO(data), events=("start",),
                                          **_hardened_options()):
            if root is None:
                root = element
            elif element.tag == "lease-requests" and element.getparent() is root:
                head: list[Any] = []
                for child in root:
                    if child is element:
                        return root, head
                    head.append(child)
    except etree.XMLSyntaxError:
        return None
    return None


class _NoEvents:
    """A parser target that takes no events: libxml2 parses (and validates, given a
    schema) without a tree and without calling into Python."""

    def close(self) -> None:
        return None


def _parses(data: bytes, schema: etree.XMLSchema | None = None) -> bool:
    """Whether ``data`` is well-formed (and valid against ``schema``): no libxml2 message
    at all."""
    events: Any = _NoEvents()  # a parser target (lxml's stubs know no such protocol)
    parser = etree.XMLParser(target=events, schema=schema, **_hardened_options())
    try:
        etree.fromstring(data, parser)
    except etree.LxmlError:
        return False
    return not len(parser.error_log)


def _validates(data: bytes) -> bool:
    """Whether an LWF is well-formed and valid against the LWF XSD."""
    return _parses(data, xmlio.load_xsd(ROOT_SCHEMAS["lease-workload"]))


@lru_cache(maxsize=1)
def _lwf_attribute_kinds() -> dict[tuple[str, str], str] | None:
    return haizea_verdict.attribute_kinds()


def _scanned_jobs(data: bytes) -> tuple[FastJobs, haizea_scan.Scan] | None:
    """The requests read from the text (``scan``), and the scan that judges the
    document; ``None`` when the scan declines the text. Nothing here holds until the
    document is known to be valid."""
    try:
        scan = haizea_scan.Scan(data, _lwf_attribute_kinds())
        built = FastJobs()
        for recipe, values in scan.requests():
            _add_scanned(built, recipe, values)
    except haizea_scan.Declined:
        return None
    return built, scan


def _parsed_jobs(data: bytes) -> FastJobs | None:
    """The requests read by the parser target while libxml2 validates; ``None`` when the
    document is invalid."""
    target: Any = _LwfTarget()
    parser = etree.XMLParser(target=target, schema=xmlio.load_xsd(
        ROOT_SCHEMAS["lease-workload"]), **_hardened_options())
    built = cast(FastJobs, etree.fromstring(data, parser))  # what the target's close() returns
    return None if len(parser.error_log) else built


_DECLINES = (NotClean, haizea_scan.Declined, TimeSyntaxError, etree.LxmlError)
"""What ends the fast path: a finding or a value it cannot rule out (``NotClean``), text the
scan does not read (``Declined``), a time outside the grammar, and libxml2's errors."""


def read_clean_workload(data: bytes, scan: bool = True) -> Document | None:
    """The document as ``checked.read_workload_stream`` reads it, when that reports nothing;
    else ``None`` (nothing is reported here). The requests come from the text scan, with a
    separate validation, unless it declines the text (or ``scan`` is false: tests compare
    the two), then from the parser target."""
    found = _workload_head(data)
    if found is None:
        return None
    root, head = found
    try:
        with paused_gc():
            scanned = _scanned_jobs(data) if scan else None
            if scanned is None:
                built = _parsed_jobs(data)
            else:
                built, text_scan = scanned
                if not text_scan.proven_valid(_parses, _validates) and not _validates(data):
                    return None
    except _DECLINES:
        return None
    if built is None or built.position == 0:
        return None  # invalid, or empty-workload
    scratch = Context(data=data)  # the head's checks report here: any report -> None
    parts = {element.tag: element for element in reversed(head)}  # the first of each
    environment = None
    site = parts.get("site")
    if site is not None:
        environment, names = read_site(site, scratch)
        if rules.undeclared_types(built.used_types, set(names)):
            return None
    description = parts.get("description")
    attributes = parts.get("attributes")
    workload = Workload(
        jobs=settle_assigned_ids(built.jobs, built.ids, built.assigned),
        name=root.get("name"),
        description=description.text or "" if description is not None else None,
        attributes=read_attrs(attributes, scratch, "attribute") if attributes is not None
        else {},
    )
    return None if scratch.diagnostics else Document(environment=environment,
                                                     workload=workload)
