"""Reading, normal form and writing of SimGrid platform XML; the package's docstring
(``dcx.formats.simgrid``) is the format's reference text."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, overload

from dcx.core.diagnostics import Diagnostic, InputError, ReadResult, WriteResult, error, warning
from dcx.core.groups import (
    MachineGroup,
    has_groups,
    machine_parts,
    part_count,
    part_template,
    slot_parts,
    slots_of,
)
from dcx.core.ids import id_from_text, with_required_ids
from dcx.core.limits import LIMITS, paused_gc
from dcx.core.located import ElementPlaces
from dcx.core.memo import last_result
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Extras,
    Id,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    build,
)
from dcx.core.units import SPEED, SPEED_UNITS, speed_list
from dcx.formats.simgrid import XSD_NAME

DOCTYPE = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
SIMGRID_DTDS = ("https://simgrid.org/simgrid.dtd",
                "http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd")
"""The DTD system ids SimGrid's own parser (3.32) takes; it refuses a platform without one
of them ("Unexpected character `<' in prolog", "Bad declaration")."""
_SYSTEM_ID = re.compile(
    rb"""<!DOCTYPE[ \t\r\n]+platform[ \t\r\n]+SYSTEM[ \t\r\n]+(?:"([^"]*)"|'([^']*)')""")
PREFIX = "simgrid:"
PROP_PREFIX = "simgrid:prop:"
ROOT_KEY = "simgrid:root"
ROUTING_KEY = "simgrid:routing"
NOT_KEPT_KEY = "simgrid:not-kept"
"""Environment extra: what the file declares that the model does not keep (links, routes,
zones below the root's children …), as one line; every target drops it, so ``convert
--losses`` reports it, while validating the file says nothing of it."""
SPEEDS_KEY = "simgrid:speeds"
"""Machine extra: a host's or cluster's speed list when it has several power states (the
attribute's text); the CPU's clock rate is the speed of the host's own state."""
PSTATE_KEY = "simgrid:pstate"
"""Machine extra: the ``pstate`` attribute of a host with several power states."""
WATTAGES_PROP = PROP_PREFIX + "wattage_per_state"
"""The energy plugin's prop: one ``idle:…:full`` entry per power state, comma-separated."""
ROLE_PROP = PROP_PREFIX + "role"
STORAGE_ROLE = "storage"
"""Batsim's role of a host that stores and never computes (speed ``0f``)."""
DEFAULT_ROOT = "platform"
CLUSTER_REQUIRED = ("prefix", "suffix", "bw", "lat")
CLUSTER_OPTIONAL = ("sharing_policy", "topology", "topo_parameters", "bb_bw", "bb_lat",
                    "bb_sharing_policy", "router_id", "limiter_link", "loopback_bw",
                    "loopback_lat")
CLUSTER_KEYS = frozenset(PREFIX + name for name in CLUSTER_REQUIRED + CLUSTER_OPTIONAL)
ROUTINGS = frozenset(name.casefold() for name in (
    "Full", "Floyd", "Dijkstra", "DijkstraCache", "None", "Vivaldi", "Cluster",
    "ClusterDragonfly", "ClusterFatTree", "ClusterTorus", "Star", "Wifi"))
"""Zone routings, case-folded: SimGrid compares them ignoring case (``strcasecmp``)."""
HOST_FILES = ("speed_file", "availability_file", "state_file", "coordinates")
INT32_MAX = 2**31 - 1
CLUSTER_LEAST = 1024
"""Machines from which a rack of identical machines named prefix + number + suffix is
written as a ``<cluster>`` of dcx's own (``DCX_BW``, ``DCX_LAT``) rather than one ``<host>``
each: a million Flux ranks are one element, not 51 MB of hosts."""
DCX_BW = "1.25GBps"
DCX_LAT = "0s"
"""The network of a cluster dcx makes of machines that came with none (10 Gbit/s, no latency):
SimGrid requires one; a zone of hosts written instead would have none at all."""

_RADICAL_PART = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


# --------------------------------------------------------------------------- read


_Element = tuple[str, int]
"""An element as its name and index among the elements of that name in document order."""


@dataclass
class _Reader:
    data: bytes
    found: list[Diagnostic] = field(default_factory=list)
    not_held: Counter[str] = field(default_factory=Counter)
    first_not_held: dict[str, Any] = field(default_factory=dict)
    host_ids: dict[str, int] = field(default_factory=dict)
    rack_elements: list[_Element] = field(default_factory=list)
    """The element of each rack (a zone of hosts or a cluster), in rack order."""
    slot_elements: list[tuple[_Element, ...]] = field(default_factory=list)
    """Per rack, the element of each slot's machine: its host, or the cluster."""
    _order: dict[str, dict[Any, int]] = field(default_factory=dict)
    version: int = 410
    """The platform version in hundredths (``4.1`` is 410)."""

    def element(self, element: Any) -> _Element:
        """An element as its name and index among the elements of that name, in document
        order: where the text scan (``xmlio.StartTags``) finds it again. Every element of
        the name counts, those inside skipped elements too."""
        tag = element.tag
        order = self._order.get(tag)
        if order is None:
            everywhere = element.getroottree().getroot().iter("{*}" + tag)
            order = self._order[tag] = {found: index for index, found in enumerate(everywhere)}
        return tag, order[element]

    def rack(self, element: Any, slots: tuple[Machine, ...], extras: Extras,
             slot_elements: tuple[_Element, ...]) -> Rack:
        self.rack_elements.append(self.element(element))
        self.slot_elements.append(slot_elements)
        return Rack(id=id_from_text(element.get("id")), slots=slots, extras=extras)

    def at(self, element: Any, attribute: str | None = None) -> dict[str, Any]:
        from dcx.parsing.xmlio import element_xpath, locate_tag

        line = element.sourceline
        column = None
        if line is not None:
            found = locate_tag(self.data, element.tag, attribute, [line])
            if found is not None:
                line, column = found
        pointer = element_xpath(element) + (f"/@{attribute}" if attribute else "")
        return {"line": line, "column": column, "pointer": pointer}

    def skip(self, what: str, element: Any) -> None:
        self.not_held[what] += 1
        self.first_not_held.setdefault(what, element)

    @property
    def failed(self) -> bool:
        return any(d.is_error for d in self.found)


def read(data: bytes) -> ReadResult:
    with paused_gc():
        return _read(data)


def _read(data: bytes) -> ReadResult:
    from dcx.parsing.xmlio import load_xsd, parse_xml, xsd_diagnostics

    try:
        tree = parse_xml(data, external_doctype="platform", space_before_declaration=True)
    except InputError as exc:
        return ReadResult(None, (exc.diagnostic,))
    root = tree.getroot()
    if root.tag != "platform":
        return ReadResult(None, (error(
            f"root element is {root.tag!r}; a SimGrid platform is a <platform>",
            "simgrid.root", line=root.sourceline, column=1, pointer=f"/{root.tag}"),))
    problems = xsd_diagnostics(load_xsd(XSD_NAME), tree, data)
    if problems:
        return ReadResult(None, tuple(problems))
    reader = _Reader(data)
    _check_doctype(data, reader)
    _check_version(root, reader)
    roots = [child for child in root if child.tag in _GROUPS]
    for child in root:
        if child.tag not in _GROUPS:
            reader.skip(f"<{child.tag}>", child)
    if len(roots) > 1:
        reader.found.append(error(
            f"the platform has {len(roots)} root zones; SimGrid takes one, which holds the "
            "others", "simgrid.root-zones", **reader.at(roots[1])))
    racks: list[Rack] = []
    extras: Extras = {}
    if roots and not reader.failed:
        top = roots[0]
        if top.tag == "cluster":
            racks.append(_cluster(top, reader))
        else:
            if top.get("id") != DEFAULT_ROOT:
                extras[ROOT_KEY] = top.get("id")
            if top.get("routing") != "Full":
                extras[ROUTING_KEY] = top.get("routing")
            racks.extend(_zone_racks(top, reader, is_root=True))
    if reader.not_held:
        extras[NOT_KEPT_KEY] = ", ".join(
            f"{what} ({count:,})" if count > 1 else what
            for what, count in reader.not_held.items())
    if reader.failed:
        return ReadResult(None, tuple(reader.found))
    environment = Environment(datacenters=(Datacenter(rooms=(Room(racks=tuple(racks)),)),),
                              extras=extras)
    from dcx.parsing.xmlio import StartTagsByName

    starts = StartTagsByName(data)
    elements = ElementPlaces(lambda element: starts.place(*element),
                             reader.element(roots[0] if roots else root),
                             reader.rack_elements, reader.slot_elements)
    return ReadResult(Document(environment=environment), tuple(reader.found),
                      locator=elements.places().locate)




def _check_doctype(data: bytes, reader: _Reader) -> None:
    """A warning when SimGrid's parser would refuse the file's DOCTYPE (dcx never loads it)."""
    found = _SYSTEM_ID.search(data, 0, data.find(b"<platform"))
    system = (found.group(1) or found.group(2) or b"").decode("utf-8", "replace") \
        if found else None
    if system in SIMGRID_DTDS:
        return
    said = "has no DOCTYPE" if system is None else f"names the DTD {system!r}"
    where = {"line": 1, "column": 1, "pointer": "/"} if found is None else dict(zip(
        ("line", "column"), _place(data, found.start()), strict=True), pointer="/")
    reader.found.append(warning(
        f"the platform {said}: SimGrid loads a platform only with <!DOCTYPE platform SYSTEM "
        f'"{SIMGRID_DTDS[0]}"> (or the older "{SIMGRID_DTDS[1]}")', "simgrid.doctype",
        hint=f"start the file with {DOCTYPE}", **where))


def _place(data: bytes, offset: int) -> tuple[int, int]:
    from dcx.parsing.xmlio import text_place

    return text_place(data, offset)


def _check_version(root: Any, reader: _Reader) -> None:
    text = root.get("version")
    hundredths = _rounded(text, 100)
    reader.version = hundredths
    if 300 <= hundredths < 400:
        reader.found.append(warning(
            f"platform version {text!r}: SimGrid 3.13 and later refuse version 3 until "
            "simgrid_update_xml upgrades it; dcx reads it as the upgrade would (power is "
            "speed, AS is zone)", "simgrid.old-version", **reader.at(root, "version")))
    elif not 400 <= hundredths <= 410:
        reader.found.append(error(
            f"platform version {text!r}; SimGrid reads 4.0 to 4.1 and dcx also 3 "
            "(simgrid_update_xml upgrades older files)", "simgrid.version",
            **reader.at(root, "version")))


_GROUPS = ("zone", "AS", "cluster")
"""What a zone of zones holds: zones (``AS`` is version 3 and 4's name) and clusters."""
_HOSTS = ("host", "cabinet", "peer")
"""What declares hosts in a zone of hosts (a cabinet several, a peer one)."""


def _rounded(text: str, scale: int) -> int:
    """``round(scale * float(text))`` as SimGrid reads versions and power states; -1 for text
    that is no finite number."""
    try:
        value = scale * float(text)
    except ValueError:
        return -1
    return round(value) if math.isfinite(value) else -1


def _zone_racks(zone: Any, reader: _Reader, is_root: bool = False) -> list[Rack]:
    if zone.get("routing").casefold() not in ROUTINGS:
        reader.found.append(error(
            f"zone {zone.get('id')!r} has routing {zone.get('routing')!r}; SimGrid knows Full, "
            "Floyd, Dijkstra, DijkstraCache, None, Vivaldi, Cluster, Wifi …",
            "simgrid.routing", **reader.at(zone, "routing")))
    hosts = [child for child in zone if child.tag in _HOSTS]
    groups = [child for child in zone if child.tag in _GROUPS]
    plain_hosts = [child for child in hosts if child.tag == "host"]
    if plain_hosts and groups:
        reader.found.append(error(
            f"zone {zone.get('id')!r} holds both hosts and {groups[0].tag}s; SimGrid's zones "
            "hold one or the other", "simgrid.mixed-zone", **reader.at(groups[0])))
        return []
    for child in zone:
        if child.tag == "prop":
            reader.skip("<prop> of a zone", child)
        elif child.tag not in _HOSTS + _GROUPS:
            reader.skip(f"<{child.tag}>", child)
    racks: list[Rack] = []
    if hosts or not groups:  # a zone of hosts (maybe empty), or of cabinets beside zones
        if is_root and not hosts:
            return []  # an empty platform
        extras: Extras = {}
        if not is_root and zone.get("routing") != "Full":
            extras[ROUTING_KEY] = zone.get("routing")
        machines: list[Machine] = []
        elements: list[_Element] = []
        for child in hosts:
            found = _cabinet(child, reader) if child.tag == "cabinet" else [_host(child, reader)]
            machines.extend(found)
            elements.extend([reader.element(child)] * len(found))
        racks.append(reader.rack(zone, tuple(machines), extras, tuple(elements)))
    if groups and not is_root:
        reader.skip("a zone holding zones below the root's children", zone)
    for child in groups:
        racks.extend(_zone_racks(child, reader) if child.tag != "cluster"
                     else [_cluster(child, reader)])
    return racks


def _host(host: Any, reader: _Reader) -> Machine:
    """A ``<host>`` or a ``<peer>`` (one host of one core named by its id)."""
    name = host.get("id")
    _register(name, host, reader)
    clock = _speed(host, reader)
    extras: Extras = {}
    for child in host:
        if child.tag == "prop":
            _prop(child, extras)
        else:
            reader.skip(f"<{child.tag}> of a host", child)
    for attribute in HOST_FILES:
        if host.get(attribute):
            reader.skip(f"{host.tag} {attribute}", host)
    if host.tag == "peer":
        reader.skip("the links of a <peer>", host)
    if clock is None:
        _no_speed(host, extras, reader)
    if not reader.failed:
        extras.update(_power_states(host, reader))
    return Machine(id=id_from_text(name), name=name, extras=extras,
                   cpus=(ProcessingUnit(cores=int(host.get("core", "1")),
                                        clock_rate_hz=clock),))


def _no_speed(element: Any, props: Extras, reader: _Reader) -> None:
    """The warning for an element whose hosts have speed 0 (unless it failed already, or
    Batsim's ``role`` prop makes them storage hosts)."""
    if reader.failed or props.get(ROLE_PROP) == STORAGE_ROLE:
        return
    attribute = "power" if reader.version < 400 else "speed"
    reader.found.append(warning(
        f"<{element.tag} id={element.get('id')!r}> has speed 0: work never finishes on its "
        "hosts (a Batsim storage host says so with <prop id=\"role\" value=\"storage\"/>)",
        "simgrid.no-speed", **reader.at(element, attribute)))


def _cabinet(cabinet: Any, reader: _Reader) -> list[Machine]:
    """The hosts of a ``<cabinet>``: one core each, named like a cluster's."""
    numbers = _radical_of(cabinet, reader)
    clock = _speed(cabinet, reader)
    if clock is None:
        _no_speed(cabinet, {}, reader)
    reader.skip("the links of a <cabinet>", cabinet)
    cpus = (ProcessingUnit(cores=1, clock_rate_hz=clock),)
    prefix, suffix = cabinet.get("prefix"), cabinet.get("suffix")
    states = _power_states(cabinet, reader) if not reader.failed else {}
    machines = []
    for number in numbers:
        name = f"{prefix}{number}{suffix}"
        _register(name, cabinet, reader)
        machines.append(build(Machine, {"id": id_from_text(name), "name": name,
                                        "extras": dict(states), "cpus": cpus}))
    return machines


def _register(name: str, element: Any, reader: _Reader) -> None:
    if name in reader.host_ids:
        reader.found.append(error(f"host id {name!r} is used again (first on line "
                                  f"{reader.host_ids[name]})", "simgrid.duplicate-id",
                                  **reader.at(element, "id")))
    reader.host_ids.setdefault(name, element.sourceline or 0)


def _prop(prop: Any, extras: Extras) -> None:
    extras[PROP_PREFIX + prop.get("id")] = prop.get("value")


def _speed(element: Any, reader: _Reader) -> float | None:
    """The speed of the element's power state in flop/s (``None`` for 0)."""
    speeds: list[float] = []
    speed_text = _speed_attribute(element, reader)
    attribute = "power" if reader.version < 400 else "speed"
    for text in speed_text.split(","):
        parsed = SPEED.fullmatch(text)
        unit = parsed.group(2) if parsed else ""
        if parsed is None or (unit and unit not in SPEED_UNITS):
            hint = next((name for name in SPEED_UNITS if name.lower() == unit.lower()), None)
            reader.found.append(error(
                f"speed {text.strip()!r} has an unknown unit; SimGrid's are f, kf, Mf, Gf … "
                "(case matters)", "simgrid.unit",
                hint=f"did you mean {hint!r}?" if hint else None,
                **reader.at(element, attribute)))
            return None
        value = float(parsed.group(1))
        if not unit and value != 0:
            reader.found.append(warning(
                f"speed {text.strip()!r} has no unit; SimGrid reads flop/s and warns that "
                "unit-less values are deprecated", "simgrid.unitless",
                **reader.at(element, attribute)))
        speeds.append(value * SPEED_UNITS[unit or "f"])
    pstate_text = element.get("pstate", "0")
    pstate = _rounded(pstate_text, 1)
    if not 0 <= pstate < len(speeds):
        reader.found.append(error(
            f"pstate {pstate_text!r} is not one of the {len(speeds)} speeds",
            "simgrid.pstate", **reader.at(element, "pstate")))
        return None
    speed = speeds[pstate]
    if not math.isfinite(speed) or speed < 0:
        reader.found.append(error(f"speed {speed_text!r} is not a finite "
                                  "non-negative number", "simgrid.unit",
                                  **reader.at(element, attribute)))
        return None
    return speed or None


def _power_states(element: Any, reader: _Reader) -> Extras:
    """The speed list (and ``pstate``) of an element with several power states, as machine
    extras: the energy plugin needs one speed per ``wattage_per_state`` entry."""
    text = _speed_attribute(element, reader).strip()
    if "," not in text:
        return {}
    states: Extras = {SPEEDS_KEY: text}
    if element.get("pstate") is not None:
        states[PSTATE_KEY] = element.get("pstate")
    return states


def _speed_attribute(element: Any, reader: _Reader) -> str:
    """The speed list of an element: ``speed``, or ``power`` in a version 3 platform (the
    attribute's name before version 4); ``0f`` with an error when the version's is absent."""
    wanted, other = ("power", "speed") if reader.version < 400 else ("speed", "power")
    text = element.get(wanted)
    if text is not None:
        return str(text)
    attribute = other if element.get(other) is not None else None
    reader.found.append(error(
        f"<{element.tag} id={element.get('id')!r}> has no {wanted} attribute"
        + (f" ({other} is its name in platform version "
           f"{'4 and later' if other == 'speed' else '3'})" if attribute else ""),
        "simgrid.speed-attribute", **reader.at(element, attribute)))
    return "0f"


def radical_numbers(text: str) -> list[int] | str:
    """The host numbers of a ``radical`` (``0-3,7``), or why it cannot be read. Bounded: at
    most ``LIMITS.max_hostlist_range`` numbers, each a 32-bit ``int``."""
    numbers: list[int] = []
    for part in text.split(","):
        parsed = _RADICAL_PART.fullmatch(part)
        if parsed is None:
            return f"{part.strip()!r} is neither a number nor a range a-b"
        start = int(parsed.group(1)) if len(parsed.group(1)) <= 10 else INT32_MAX + 1
        end = start if parsed.group(2) is None else (
            int(parsed.group(2)) if len(parsed.group(2)) <= 10 else INT32_MAX + 1)
        if max(start, end) > INT32_MAX:
            return f"{part.strip()!r} goes beyond SimGrid's 32-bit numbers"
        if len(numbers) + max(0, end - start + 1) > LIMITS.max_hostlist_range:
            return f"it names more than {LIMITS.max_hostlist_range:,} hosts"
        numbers.extend(range(start, end + 1))
    return numbers


def _radical_of(element: Any, reader: _Reader) -> list[int]:
    """The numbers of a cluster's or a cabinet's radical (none when it cannot be read)."""
    radical = element.get("radical")
    numbers = radical_numbers(radical)
    if isinstance(numbers, str):
        reader.found.append(error(f"radical {radical!r}: {numbers}", "simgrid.radical",
                                  **reader.at(element, "radical")))
        return []
    if any(_RADICAL_PART.fullmatch(part) and _empty_range(part)
           for part in radical.split(",")):
        reader.found.append(warning(f"radical {radical!r} has a range whose end is below "
                                    "its start: SimGrid makes no host of it",
                                    "simgrid.radical-empty", **reader.at(element, "radical")))
    return numbers


def _cluster(cluster: Any, reader: _Reader) -> Rack:
    numbers = _radical_of(cluster, reader)
    clock = _speed(cluster, reader)
    props: Extras = {}
    for child in cluster:
        _prop(child, props)
    if clock is None:
        _no_speed(cluster, props, reader)
    if not reader.failed:
        props.update(_power_states(cluster, reader))
    cores = int(cluster.get("core", "1"))
    prefix, suffix = cluster.get("prefix"), cluster.get("suffix")
    cpus = (ProcessingUnit(cores=cores, clock_rate_hz=clock),)  # frozen: shared by all
    names = AffixedNumbers(prefix, numbers, suffix)
    for name in names:
        _register(name, cluster, reader)
    extras = {PREFIX + name: cluster.get(name) for name in CLUSTER_REQUIRED + CLUSTER_OPTIONAL
              if cluster.get(name) is not None}
    template = build(Machine, {"extras": props, "cpus": cpus})
    slots = slots_of([MachineGroup(template, len(names), ids=_ids_of(names), names=names)]
                     if names else [])
    return reader.rack(cluster, slots, extras,  # type: ignore[arg-type]  # Slots: a sequence
                       (reader.element(cluster),) * len(names))


class AffixedNumbers(Sequence[str]):
    """The names of a cluster's hosts, ``prefix`` + number + ``suffix``, made when asked:
    a million of them are two strings and a range."""

    __slots__ = ("numbers", "prefix", "suffix")

    def __init__(self, prefix: str, numbers: Sequence[int], suffix: str) -> None:
        self.prefix, self.numbers, self.suffix = prefix, numbers, suffix

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return tuple(self)[index]
        return f"{self.prefix}{self.numbers[index]}{self.suffix}"

    def __iter__(self) -> Iterator[str]:
        prefix, suffix = self.prefix, self.suffix
        return (f"{prefix}{number}{suffix}" for number in self.numbers)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AffixedNumbers) and (other.prefix, other.suffix) == (
                self.prefix, self.suffix):
            return list(self.numbers) == list(other.numbers)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to any sequence of the same names

    def __repr__(self) -> str:
        return f"AffixedNumbers({self.prefix!r}, {self.numbers!r}, {self.suffix!r})"


def _ids_of(names: AffixedNumbers) -> Sequence[Id]:
    """The ids of a cluster's hosts (``id_from_text`` of each name) without a million
    calls where the affixes decide: a name with a non-digit is its own id; bare numbers are
    integers."""
    if not names.prefix and not names.suffix:
        return _compact_numbers(names.numbers)
    if not (names.prefix + names.suffix).isdigit():
        return names
    return tuple(id_from_text(name) for name in names)


def _compact_numbers(numbers: Sequence[int]) -> Sequence[int]:
    """A ``range`` for consecutive numbers, else a tuple."""
    if numbers and list(numbers) == list(range(numbers[0], numbers[0] + len(numbers))):
        return range(numbers[0], numbers[0] + len(numbers))
    return tuple(numbers)


def _empty_range(part: str) -> bool:
    parsed = _RADICAL_PART.fullmatch(part)
    return bool(parsed and parsed.group(2) is not None
                and int(parsed.group(2)) < int(parsed.group(1)))


# --------------------------------------------------------------------------- normal form


def _writable_text(value: object) -> bool:
    from dcx.parsing.xmlio import check_xml_text

    return isinstance(value, str) and check_xml_text(value) is None


def _reads_back(value: Id) -> bool:
    """Whether an id written as text reads back as itself."""
    text = str(value)
    return bool(text) and _writable_text(text) and id_from_text(text) == value \
        and type(id_from_text(text)) is type(value)


class _Normalizer:
    def __init__(self) -> None:
        self.lost: set[str] = set()
        self.taken: set[str] = set()

    def unique(self, value: Id | None, fallback: str, path: str) -> Id:
        """``value`` when it reads back and is free, else ``fallback`` (made free)."""
        if value is not None and _reads_back(value) and str(value) not in self.taken:
            self.taken.add(str(value))
            return value
        if value is not None:
            self.lost.add(path)
        name, number = fallback, 1
        while name in self.taken:
            number += 1
            name = f"{fallback}-{number}"
        self.taken.add(name)
        return name

    def machine(self, machine: Machine, position: int) -> Machine | None:
        """``machine`` in normal form, or ``None`` when SimGrid cannot run it: no speed
        (a host of speed 0 never finishes work), unless it is a Batsim storage host."""
        if not _has_speed(machine):
            self.lost.add("cpu.clock_rate_hz")
            return None
        cpus, extras = self.hardware(machine)
        machine_id = self.unique(machine.id, f"node{position}", "machine.id")
        name = str(machine_id)
        if machine.name is not None and machine.name != name:
            self.lost.add("machine.name")  # the host's one name is its id
        if machine_id is machine.id and name == machine.name and cpus is machine.cpus \
                and extras is machine.extras:
            return machine  # already in normal form: no copy per host
        return Machine(**{**machine.__dict__, "id": machine_id, "name": name, "cpus": cpus,
                          "extras": extras})

    def group(self, group: MachineGroup) -> MachineGroup | None:
        """A group in normal form, its members' ids checked one by one but the machine
        built once; ``_Expand`` when a member's id would change (the exact path renames)."""
        template = group.template
        if not _has_speed(template):
            self.lost.add("cpu.clock_rate_hz")
            return None
        cpus, extras = self.hardware(template)
        ids, names = group.ids, group.names
        if names is not None and not isinstance(names, (tuple, AffixedNumbers)):
            names = tuple(names)  # made once (a hostlist's names are made when iterated)
        if ids is None:
            if names is None:
                raise _Expand
            ids = names if _all_read_back(names) \
                else tuple(id_from_text(name) for name in names)
        taken = self.taken
        before = len(taken)
        taken.update(map(str, ids))
        if len(taken) - before != len(ids) or not _all_read_back(ids):
            raise _Expand
        texts: Sequence[str]
        if names is not None and _same_texts(names, ids):
            texts = names
        else:
            if names is not None:
                self.lost.add("machine.name")
            texts = tuple(str(value) for value in ids)
        if cpus is not template.cpus or extras is not template.extras:
            template = Machine(**{**template.__dict__, "cpus": cpus, "extras": extras})
        return MachineGroup(template, group.count, ids=ids, names=texts, ranks=group.ranks)

    def hardware(self, machine: Machine) -> tuple[tuple[ProcessingUnit, ...], Extras]:
        """The CPUs and extras of ``machine`` in normal form (the same objects when they are
        already): one CPU, SimGrid extras it can write."""
        lost = self.lost
        cpus = machine.cpus
        if len(cpus) != 1 or cpus[0].cores < 1 or not _valid_clock(cpus[0].clock_rate_hz):
            cores = machine.core_count
            # several CPUs merge as restrict merges sockets, and their split is lost (said
            # here: restrict finds no sockets left in the normal form to report)
            clock = cpus[0].clock_rate_hz if len(cpus) == 1 else machine.clock_rate_hz
            if len(cpus) > 1:
                lost.add("machine.cpus.sockets")
            if not cpus or cores < 1:
                lost.add("machine.cpus")
                cores = 1
            if not _valid_clock(clock):
                lost.add("cpu.clock_rate_hz")
                clock = None
            cpu = cpus[0] if cpus else ProcessingUnit(cores=1)
            cpus = (replace(cpu, cores=cores, clock_rate_hz=clock),)
        extras = machine.extras
        if any(key.startswith(PREFIX) for key in extras):
            extras = _kept_extras(extras, cpus[0].clock_rate_hz)
            if len(extras) != len(machine.extras):
                lost.add("machine.extras")
            else:
                extras = machine.extras
        return cpus, extras


_CANONICAL_LINE = re.compile(r"^(?:0|[1-9][0-9]*)$", re.MULTILINE)


def _all_read_back(ids: Sequence[Id]) -> bool:
    """``all(map(_reads_back, ids))``, in a few passes over the whole group rather than a
    call per member: non-negative integers, or texts none of which is empty, is canonical
    decimal (it would read back as a number) or holds a character XML cannot carry."""
    if isinstance(ids, range):
        return len(ids) == 0 or min(ids[0], ids[-1]) >= 0
    if isinstance(ids, AffixedNumbers) and not (ids.prefix + ids.suffix).isdigit():
        return _writable_text(ids.prefix + ids.suffix)
    texts = list(ids)
    if not all(type(value) is str for value in texts):
        return all(map(_reads_back, texts))
    joined = "\n".join(texts)  # type: ignore[arg-type]  # all str, checked above
    if any(not text or "\n" in text for text in texts):  # type: ignore[operator]
        return all(map(_reads_back, texts))
    return _CANONICAL_LINE.search(joined) is None and _writable_text(joined)


class _Expand(Exception):  # a signal, not an error
    """A group whose members' ids the normal form changes: normalized one machine at a
    time instead."""


def _same_texts(names: Sequence[str], ids: Sequence[Id]) -> bool:
    if names is ids:
        return True
    return len(names) == len(ids) and all(
        name == str(value) for name, value in zip(names, ids, strict=True))


def _kept_extras(extras: Extras, clock: float | None) -> Extras:
    """The SimGrid extras a host can be written with: props XML can carry, and power states
    written whole: the speed list (and pstate) when the clock is its state's speed, and a
    ``wattage_per_state`` prop only with one entry per speed written (SimGrid's energy plugin
    aborts on "3 energetic profiles for 1 pstates")."""
    states = _power_state_count(extras, clock)
    kept: Extras = {}
    for key, value in extras.items():
        if not key.startswith(PREFIX):
            kept[key] = value  # not SimGrid's: restrict decides
        elif key in (SPEEDS_KEY, PSTATE_KEY):
            if states > 1:
                kept[key] = value
        elif key.startswith(PROP_PREFIX) and _writable_text(key) and _writable_text(value) \
                and (key != WATTAGES_PROP or len(str(value).split(",")) == states):
            kept[key] = value
    return kept


def _power_state_count(extras: Extras, clock: float | None) -> int:
    """How many power states a host is written with: its speed list's length when the list
    reads as SimGrid reads it and the clock is the speed of its pstate; else 1."""
    text, pstate_text = extras.get(SPEEDS_KEY), extras.get(PSTATE_KEY, "0")
    if not (isinstance(text, str) and _writable_text(text) and isinstance(pstate_text, str)
            and _writable_text(pstate_text)):
        return 1
    speeds = speed_list(text)
    pstate = _rounded(pstate_text, 1)
    if speeds is None or len(speeds) < 2 or not 0 <= pstate < len(speeds) \
            or speeds[pstate] != (clock or 0.0):
        return 1
    return len(speeds)


def _has_speed(machine: Machine) -> bool:
    """Whether SimGrid can be given a speed for ``machine``: a positive finite clock rate
    (that of the first CPU, or of the machine's CPUs merged), or Batsim's storage role."""
    cpus = machine.cpus
    clock = cpus[0].clock_rate_hz if len(cpus) == 1 else machine.clock_rate_hz
    return (clock is not None and clock > 0 and math.isfinite(clock)) \
        or machine.extras.get(ROLE_PROP) == STORAGE_ROLE


def leaves_out(document: Document) -> str:
    """Why SimGrid's normal form leaves machines of ``document`` out, in one line."""
    environment = document.environment
    if environment is None:
        return ""
    every = lacking = 0
    first: Machine | None = None
    for part in machine_parts(environment):
        template = part_template(part)
        every += part_count(part)
        if not _has_speed(template):
            lacking += part_count(part)
            if first is None:
                first = part.member(0) if isinstance(part, MachineGroup) else part
    if first is None:
        return ""
    name = first.name or first.id or "the first"
    return (f"SimGrid needs a speed (flop/s per core, dcx's clock rate) for every host; "
            f"{lacking:,} of {every:,} machines lack it (first: {name})")


def _shape(machine: Machine) -> tuple[int, float | None]:
    """Cores and clock of a machine in normal form (one CPU): what a cluster's hosts share."""
    cpu = machine.cpus[0]
    return cpu.cores, cpu.clock_rate_hz


def _valid_clock(clock: float | None) -> bool:
    return clock is None or (clock > 0 and math.isfinite(clock))


def _clock(machine: Machine) -> float | None:
    """The clock of a machine in normal form (one CPU)."""
    return machine.cpus[0].clock_rate_hz


def _props(machine: Machine) -> dict[str, str]:
    return {key[len(PROP_PREFIX):]: value for key, value in machine.extras.items()
            if key.startswith(PROP_PREFIX)}


def _cluster_numbers(rack: Rack) -> list[int] | None:
    """The host numbers of a rack that can be written as the cluster it came from."""
    extras = rack.extras
    if not all(isinstance(extras.get(PREFIX + name), str) and _writable_text(
            extras[PREFIX + name]) for name in CLUSTER_REQUIRED):
        return None
    return _affixed_numbers(rack, extras[PREFIX + "prefix"], extras[PREFIX + "suffix"])


def _affixed_numbers(rack: Rack, prefix: str, suffix: str) -> list[int] | None:
    """The numbers of a rack's machines when they are alike (cores, clock, props, power
    states) and named ``prefix`` + number + ``suffix``, each number once; else ``None``."""
    parts = [part for part in slot_parts(rack.slots) if part is not None]
    if not parts:
        return None
    first = parts[0].template if isinstance(parts[0], MachineGroup) else parts[0]
    shape, first_props = _shape(first), _props(first)
    numbers: list[int] = []
    for part in parts:
        machine = part.template if isinstance(part, MachineGroup) else part
        if _shape(machine) != shape or (machine.extras != first.extras
                                     and _props(machine) != first_props) \
                or machine.extras.get(SPEEDS_KEY) != first.extras.get(SPEEDS_KEY) \
                or PSTATE_KEY in machine.extras:  # a cluster has no pstate: its hosts are at 0
            return None
        names: Sequence[Id] | None = part.ids if isinstance(part, MachineGroup) else (
            None if machine.id is None else (machine.id,))
        if names is None:
            return None
        if isinstance(names, AffixedNumbers) and (names.prefix, names.suffix) == (prefix,
                                                                                 suffix):
            numbers.extend(names.numbers)
            continue
        found = _numbers_in(names, prefix, suffix)
        if found is None:
            return None
        numbers.extend(found)
    if len(set(numbers)) != len(numbers):
        return None
    return numbers


def _numbers_in(names: Sequence[Id], prefix: str, suffix: str) -> list[int] | None:
    """The numbers of ``names`` that are all ``prefix`` + number + ``suffix`` (32-bit,
    unpadded), found in one pass over their text; else ``None``."""
    texts = list(map(str, names))
    joined = "\n".join(texts)
    if "\n" in prefix + suffix or joined.count("\n") != len(texts) - 1:
        return None
    pattern = re.compile("^" + re.escape(prefix) + "(0|[1-9][0-9]{0,9})" + re.escape(suffix)
                         + "$", re.MULTILINE)
    found = pattern.findall(joined)
    if len(found) != len(texts):
        return None
    numbers = list(map(int, found))
    return None if numbers and max(numbers) > INT32_MAX else numbers


_AFFIXED = re.compile(r"(.*?)(0|[1-9][0-9]{0,9})([^0-9]*)", re.DOTALL)


def _as_dcx_cluster(rack: Rack) -> Rack:
    """A rack of at least ``CLUSTER_LEAST`` alike machines named prefix + number + suffix,
    with no SimGrid attributes of its own, as a cluster of dcx's (see ``CLUSTER_LEAST``)."""
    if any(key.startswith(PREFIX) for key in rack.extras):
        return rack
    count = sum(part.count if isinstance(part, MachineGroup) else 1
                for part in slot_parts(rack.slots) if part is not None)
    if count < CLUSTER_LEAST:
        return rack
    first = next(part for part in slot_parts(rack.slots) if part is not None)
    first_id = (first.ids[0] if first.ids else None) if isinstance(first, MachineGroup) \
        else first.id
    found = _AFFIXED.fullmatch(str(first_id))
    if found is None:
        return rack
    prefix, suffix = found.group(1), found.group(3)
    if not (_writable_text(prefix) and _writable_text(suffix)) \
            or _affixed_numbers(rack, prefix, suffix) is None:
        return rack
    return replace(rack, extras={**rack.extras, PREFIX + "prefix": prefix,
                                 PREFIX + "suffix": suffix, PREFIX + "bw": DCX_BW,
                                 PREFIX + "lat": DCX_LAT})


def _rack_extras(rack: Rack, cluster: bool, lost: set[str]) -> Extras:
    kept: Extras = {}
    for key, value in rack.extras.items():
        if not key.startswith(PREFIX):
            kept[key] = value  # not SimGrid's: restrict decides
        elif (key in CLUSTER_KEYS and _writable_text(value)) if cluster else (
                key == ROUTING_KEY and isinstance(value, str) and value.casefold() in ROUTINGS
                and value != "Full"):
            kept[key] = value
        else:
            lost.add("rack.extras")
    return kept


@last_result
def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    environment = document.environment
    if environment is None:
        return document, frozenset()
    if has_groups(environment):
        try:
            return _normalized_with_groups(document)
        except _Expand:
            pass  # the exact path, one machine at a time
    return _normalized_machines(with_required_ids(document))


def _normalized_with_groups(document: Document) -> tuple[Document, frozenset[str]]:
    """``_normalized_machines`` keeping groups as groups (ids filled in from names as
    ``with_required_ids`` does); ``_Expand`` where a group would lose that shape."""
    return _normalized_machines(document, groups=True)


def _normalized_machines(document: Document,
                         groups: bool = False) -> tuple[Document, frozenset[str]]:
    environment = document.environment
    assert environment is not None
    normalizer = _Normalizer()
    lost = normalizer.lost
    extras = {key: value for key, value in environment.extras.items()
              if not key.startswith(PREFIX)}
    root = environment.extras.get(ROOT_KEY)
    routing = environment.extras.get(ROUTING_KEY)
    if NOT_KEPT_KEY in environment.extras:
        lost.add("environment.extras")  # the network the file had: a rewrite has none
    if routing is not None:
        if isinstance(routing, str) and routing.casefold() in ROUTINGS and routing != "Full":
            extras[ROUTING_KEY] = routing
        elif routing != "Full":
            lost.add("environment.extras")
    racks = list(environment.racks())
    # ids of machines first, as the required-ids normal form gives them; then racks, then root
    position = 0
    new_racks: list[Rack] = []
    for rack in racks:
        parts: list[Machine | MachineGroup] = []
        for slot in slot_parts(rack.slots) if groups else rack.slots:
            if slot is None:
                continue
            if isinstance(slot, MachineGroup):
                position += slot.count
                normal_group = normalizer.group(slot)
                if normal_group is not None:
                    parts.append(normal_group)
                continue
            position += 1
            if groups and slot.id is None:
                raise _Expand  # its id depends on every other machine's
            normal = normalizer.machine(slot, position)
            if normal is not None:
                parts.append(normal)
        new_racks.append(replace(rack, slots=slots_of(parts)))
    for number, rack in enumerate(new_racks, 1):
        rack = _as_dcx_cluster(rack)
        cluster = _cluster_numbers(rack) is not None
        new_racks[number - 1] = replace(
            rack, id=normalizer.unique(rack.id, f"rack{number}", "rack.id"),
            extras=_rack_extras(rack, cluster, lost))
    if root is not None and not (isinstance(root, str) and root and _writable_text(root)
                                 and (_is_leaf_root(new_racks, root)
                                      or root not in normalizer.taken)):
        lost.add("environment.extras")
        root = None
    if root is None:  # the default name, made free
        root = DEFAULT_ROOT
        if not _is_leaf_root(new_racks, root):
            root = normalizer.unique(None, DEFAULT_ROOT, "environment.extras")
    if root != DEFAULT_ROOT:
        extras[ROOT_KEY] = root
    datacenters = _in_one_room(environment, new_racks)
    normal_environment = replace(environment, datacenters=datacenters, extras=extras)
    return replace(document, environment=normal_environment), frozenset(lost)


def _is_leaf_root(racks: list[Rack], root: str) -> bool:
    """Whether the platform is written as one root zone of hosts: one rack of machines named
    like the root zone, not a cluster, with no zone attributes of its own."""
    return len(racks) == 1 and str(racks[0].id) == root \
        and any(part is not None for part in slot_parts(racks[0].slots)) \
        and _cluster_numbers(racks[0]) is None \
        and not any(key.startswith(PREFIX) for key in racks[0].extras)


def _in_one_room(environment: Environment, racks: list[Rack]) -> tuple[Datacenter, ...]:
    """The racks back in their datacenters and rooms, in order."""
    remaining = iter(racks)
    return tuple(replace(dc, rooms=tuple(
        replace(room, racks=tuple(next(remaining) for _ in room.racks)) for room in dc.rooms))
        for dc in environment.datacenters)


def normal_form(document: Document) -> Document:
    """What a SimGrid platform makes of ``document`` (see the module docstring): ids for
    every machine and rack that read back and are unique, one CPU per machine with a positive
    clock or none, string props, cluster attributes only on racks written as clusters."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    return _normalized(document)[1]


# --------------------------------------------------------------------------- write


def _speed_text(clock: float | None) -> str:
    """A speed SimGrid reads back as exactly ``clock`` flop/s, with the largest unit that
    keeps it exact (``2.4Gf``; SimGrid multiplies the number by the unit, as here)."""
    if clock is None:
        return "0f"
    clock = float(clock)  # an int clock has no is_integer before Python 3.12
    for unit in ("Tf", "Gf", "Mf", "kf"):
        scale = SPEED_UNITS[unit]
        number = clock / scale
        text = str(int(number)) if number.is_integer() and number < 1e15 else repr(number)
        if number >= 1 and float(text) * scale == clock and "e" not in text:
            return f"{text}{unit}"
    text = str(int(clock)) if clock.is_integer() and clock < 1e16 else repr(clock)
    return f"{text}f"


def _speeds_text(machine: Machine) -> str:
    """A machine's ``speed`` attribute (in normal form): its speed list when it has several
    power states, else its clock."""
    speeds = machine.extras.get(SPEEDS_KEY)
    return speeds if isinstance(speeds, str) else _speed_text(_clock(machine))


def write(document: Document) -> WriteResult:
    """SimGrid platform XML 4.1 for ``normal_form(document)``, written as text: a host per
    line, the hosts of a group from its template and names without a machine object each."""
    environment = normal_form(document).environment or Environment()
    racks = list(environment.racks())
    root_id = environment.extras.get(ROOT_KEY, DEFAULT_ROOT)
    lines = ["<?xml version='1.0' encoding='UTF-8'?>", DOCTYPE, '<platform version="4.1">']
    zone = _start_tag("zone", {"id": root_id,
                               "routing": environment.extras.get(ROUTING_KEY, "Full")})
    if _is_leaf_root(racks, root_id):
        _element_lines(lines, "  ", zone, "zone", list(_host_lines(racks[0], "    ")))
    else:
        children: list[str] = []
        for rack in racks:
            numbers = _cluster_numbers(rack)
            if numbers is None:
                child = _start_tag("zone", {"id": str(rack.id),
                                            "routing": rack.extras.get(ROUTING_KEY, "Full")})
                _element_lines(children, "    ", child, "zone",
                               list(_host_lines(rack, "      ")))
            else:
                children.extend(_cluster_lines(rack, numbers, "    "))
        _element_lines(lines, "  ", zone, "zone", children)
    lines.append("</platform>")
    lines.append("")
    return WriteResult("\n".join(lines).encode())


_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
                          "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"})


def _start_tag(tag: str, attributes: dict[str, str]) -> str:
    """``<tag a="…" …`` (unclosed), values escaped as XML attribute values."""
    return f"<{tag}" + "".join(f' {name}="{str(value).translate(_ESCAPES)}"'
                               for name, value in attributes.items())


def _element_lines(lines: list[str], indent: str, start: str, tag: str,
                   children: list[str]) -> None:
    if children:
        lines.append(f"{indent}{start}>")
        lines.extend(children)
        lines.append(f"{indent}</{tag}>")
    else:
        lines.append(f"{indent}{start}/>")


def _host_lines(rack: Rack, indent: str) -> Iterator[str]:
    """The ``<host>`` lines of a rack; a group's hosts share every attribute but the id."""
    for part in slot_parts(rack.slots):
        if part is None:
            continue
        machine = part.template if isinstance(part, MachineGroup) else part
        attributes = {"speed": _speeds_text(machine)}
        if PSTATE_KEY in machine.extras:
            attributes["pstate"] = machine.extras[PSTATE_KEY]
        if machine.core_count != 1:
            attributes["core"] = str(machine.core_count)
        rest = _start_tag("", attributes)[1:]
        props = [f"{indent}  " + _start_tag("prop", {"id": key, "value": value}) + "/>"
                 for key, value in _props(machine).items()]
        ids = part.ids if isinstance(part, MachineGroup) else (machine.id,)
        assert ids is not None  # the normal form gives every machine an id
        if props:
            for value in ids:
                yield f'{indent}<host id="{str(value).translate(_ESCAPES)}"{rest}>'
                yield from props
                yield f"{indent}</host>"
        else:
            for value in ids:
                yield f'{indent}<host id="{str(value).translate(_ESCAPES)}"{rest}/>'


def _cluster_lines(rack: Rack, numbers: list[int], indent: str) -> list[str]:
    part = next(part for part in slot_parts(rack.slots) if part is not None)
    first = part.template if isinstance(part, MachineGroup) else part
    attributes = {"id": str(rack.id), "prefix": rack.extras[PREFIX + "prefix"],
                  "suffix": rack.extras[PREFIX + "suffix"], "radical": _radical(numbers),
                  "speed": _speeds_text(first)}
    if first.core_count != 1:
        attributes["core"] = str(first.core_count)
    attributes.update({name: rack.extras[PREFIX + name]
                       for name in CLUSTER_REQUIRED[2:] + CLUSTER_OPTIONAL
                       if PREFIX + name in rack.extras})
    props = [f"{indent}  " + _start_tag("prop", {"id": key, "value": value}) + "/>"
             for key, value in _props(first).items()]
    lines: list[str] = []
    _element_lines(lines, indent, _start_tag("cluster", attributes), "cluster", props)
    return lines


def _radical(numbers: list[int]) -> str:
    """Numbers in order as ``a-b`` runs of consecutive ascending numbers."""
    parts: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ",".join(parts)
