"""Flux resource set R version 1 (RFC 20): read, validate and write.

Structure is checked by ``schemas/flux-r.schema.json``; this module checks what a schema
cannot: the RFC 22 idsets and RFC 29 hostlists (with the character position of a fault),
nodelist hosts mapping one to one onto the sorted union of ranks, duplicate ranks (merged
when their children are disjoint, an error when they overlap), property targets, and
expiration after starttime. A Fluxion graph in ``scheduling`` is validated as JGF
(``dcx.parsing.fluxion``) and must describe the same hosts, cores and GPUs as R_lite (for a
``jgf_shorthand`` graph, only the same hosts).

Model mapping: one ``Machine`` per rank in rank order, in one datacenter, room and rack;
``name`` from the nodelist host, ``rank``, one CPU with the core count (none for an empty
core idset, so CPUs without cores are a ``machine.cpus`` loss), one GPU per GPU id
(``id`` = the logical id), properties → features (a property covering only some ranks is a
feature of those machines). Logical core ids other than ``0..n-1`` are kept in
``Machine.extras["flux-r:core"]``. ``starttime``, ``expiration``, ``nslots``,
``scheduling`` and the legacy ``attributes`` are kept verbatim in ``Environment.extras``
under ``flux-r:<key>``.

When no two R_lite entries list the same rank, each run of consecutive ranks of one entry
with the same properties is one machine group (``dcx.core.groups``): its ranks a range, its
names a window of the decoded nodelist. A million ranks of one entry are then one object, and
validating, counting, deriving losses and writing R back never make single machines. Entries
that share ranks (their children merge rank by rank) and legacy R take one machine per rank.

The writer is canonical: R_lite entries grouped by identical children, ranked in order, and
one compressed nodelist entry. Machines without a rank get ranks ``0..n-1`` in topology
order (as ``flux R encode`` numbers them).

Required host names
-------------------
RFC 20 requires the nodelist, so the writer always writes one and every machine needs a host
name (``requires``: ``machine.name``): its name when a hostlist can spell it (printable ASCII
without ``,[]``), else its id when that can be spelled, else ``node<N>`` (``N`` its 1-based
position among the document's machines), by ``dcx.core.ids.required_machine_name``. A
machine without a name gains one, which adds what the source did not say and is no loss; a
name replaced because a hostlist cannot spell it is a ``machine.name`` loss
(``normal_form``).

Child types beyond core and gpu
-------------------------------
RFC 20 defines only ``core`` and ``gpu`` children; this reader warns about any other type
(``flux-r.extra-child-type``) and keeps its idset in ``Machine.extras["flux-r:children"]``,
so R → R keeps it and a conversion to another format reports it lost (``machine.extras``).
The model's named resources (a Haizea ``Disk`` of 100,000 MB, a JGF ``ssd``) are capacities
or devices R has no child type for: R does not hold ``machine.resources``, so a conversion
reports them lost instead of writing children that dcx's own reader would flag.

Divergences
-----------
* ``nodelist`` missing: RFC 20 requires it, flux-core accepts it; dcx warns.
* ``children.core`` missing: RFC 20 requires it, flux-core accepts it; dcx warns.
* Property names containing ``!``: forbidden by RFC 20, accepted by librlist; dcx rejects.
* ``expiration`` not after ``starttime``: invalid by RFC 20, unchecked by flux-core; dcx
  rejects. Negative times, ``nslots`` below 1 and a non-object ``scheduling`` are rejected
  (flux-core drops or keeps them silently).
* Legacy R (R_lite ``node`` key, top-level ``attributes``) is read with a warning.
* R_lite entries without ``rank`` (Fluxion's rv1 writer on rank -1 graphs) are invalid, as
  in flux-core.
* Unknown keys in ``execution`` are rejected: RFC 20 reserves them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, pairwise
from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import (
    Diagnostic,
    ReadResult,
    WriteResult,
    error,
    warning,
)
from dcx.core.groups import (
    MachineGroup,
    Slots,
    Window,
    has_groups,
    machine_parts,
    part_count,
    part_template,
    slots_of,
)
from dcx.core.ids import required_machine_name
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
)
from dcx.parsing import fluxion
from dcx.parsing.fluxion import ShapeMemo
from dcx.parsing.hostlist import Hostlist, HostlistError, IdSet, IdsetError, is_host_name
from dcx.parsing.jsonio import (
    JsonLocator,
    dumps_canonical,
    escape_pointer_token,
    load_json_object,
)
from dcx.parsing.schemas import schema_diagnostics

SCHEMA = "flux-r.schema.json"
PREFIX = "flux-r:"
FORBIDDEN_PROPERTY_CHARACTERS = frozenset("!&'\"^`|()")

HOLDS = frozenset({
    "machine.name", "machine.cpus", "machine.gpus", "gpu.id", "machine.features",
    "machine.rank",
})
REQUIRES = frozenset({"machine.name"})
CHILDREN = PREFIX + "children"
"""Machine extras key: child types beyond core and gpu, type → idset text."""

MAX_RANKS = 1 << 20
"""Ranks in one R: single machines when a writer or the scheduler expands them; the same
bound as hosts in one hostlist range."""
MAX_DEVICES = 1 << 16
"""GPUs per rank become one model object each (other children are kept as idsets)."""

_KEPT_TOP_LEVEL = ("scheduling", "attributes")
_KEPT_EXECUTION = ("starttime", "expiration", "nslots")


# --------------------------------------------------------------------------- sniffing


def sniff(data: bytes) -> bool:
    """One R object: ``execution`` (or ``scheduling`` next to ``version``) at the top level.
    Tolerates broken JSON so that an invalid R is reported as an invalid R."""
    head = data[:65536]
    if b'"execution"' not in head and b'"scheduling"' not in head:
        return False
    keys = fluxion.top_level_keys(data)
    top = keys["1"]
    if "$schema" in top or "graph" in top:
        return False
    return "execution" in top or {"version", "scheduling"} <= top


# --------------------------------------------------------------------------- reading


@dataclass
class _Rank:
    """What R_lite says about one rank, merged across entries."""

    children: dict[str, IdSet] = field(default_factory=dict)
    legacy_host: str | None = None


class _Reader:
    def __init__(self, value: dict[str, Any], locator: JsonLocator) -> None:
        self.value = value
        self.execution: dict[str, Any] = value["execution"]
        self.locator = locator
        self.problems: list[Diagnostic] = []
        self.broken: set[str] = set()
        """Parts (``ranks``, ``children``, ``nodelist``) with a structural error already
        reported: checks that compare against them would only restate it."""

    def fail(self, message: str, code: str, pointer: str, position: int | None = None) -> None:
        self.problems.append(self._located(error(message, code, pointer=pointer), position))

    def warn(self, message: str, code: str, pointer: str) -> None:
        self.problems.append(self._located(warning(message, code, pointer=pointer), None))

    def _located(self, diagnostic: Diagnostic, position: int | None) -> Diagnostic:
        """Line/column of the pointer; ``position`` moves to a character inside a string."""
        line, column = self.locator.locate(diagnostic.pointer)
        if position is not None and column is not None:
            column += 1 + position  # past the opening quote
        return replace(diagnostic, line=line, column=column)

    def idset(self, text: str, pointer: str, part: str) -> IdSet | None:
        try:
            return IdSet.decode(text)
        except IdsetError as problem:
            self.broken.add(part)
            self.fail(f"invalid idset {text!r}: {problem.reason} (character "
                      f"{problem.position + 1})", "flux-r.idset", pointer, problem.position)
            return None

    # -- R_lite ---------------------------------------------------------------------

    def disjoint_entries(self) -> list[_Entry] | None:
        """The R_lite entries, when each decodes, their rank idsets are pairwise disjoint,
        none carries the legacy ``node`` key and the limits hold: then no rank merges and
        every entry's ranks share its children, so the model holds them as groups. ``None``
        sends the document to ``ranks``, which reports every problem. Only accepts."""
        entries: list[_Entry] = []
        total = 0
        for index, entry in enumerate(self.execution["R_lite"]):
            if "node" in entry:
                return None
            try:
                rank_ids = IdSet.decode(entry["rank"])
                children = {kind: IdSet.decode(text) for kind, text in entry["children"].items()}
            except IdsetError:
                return None
            total += len(rank_ids)
            if total > MAX_RANKS or len(children.get("gpu", ())) > MAX_DEVICES:
                return None
            entries.append(_Entry(index, rank_ids, children))
        ranges = sorted(rank_range for entry in entries for rank_range in entry.ranks.ranges())
        if any(lo <= previous_hi for (_, previous_hi), (lo, _) in pairwise(ranges)):
            return None
        for entry in entries:  # the warnings ``ranks`` gives, in its order
            pointer = f"/execution/R_lite/{entry.index}"
            for kind in entry.children:
                if kind not in ("core", "gpu"):
                    self.warn(f"child type {kind!r} is not in RFC 20 (reserved for "
                              "extensions); kept", "flux-r.extra-child-type",
                              f"{pointer}/children/{escape_pointer_token(kind)}")
            if "core" not in entry.children:
                self.warn("children has no core (RFC 20 requires it; flux-core accepts it)",
                          "flux-r.core-missing", pointer + "/children")
        return entries

    def ranks(self) -> dict[int, _Rank]:
        """Every rank with its merged children, keyed by rank (unsorted)."""
        ranks: dict[int, _Rank] = {}
        legacy_entries = 0
        for index, entry in enumerate(self.execution["R_lite"]):
            pointer = f"/execution/R_lite/{index}"
            rank_ids = self.idset(entry["rank"], pointer + "/rank", "ranks")
            children: dict[str, IdSet] = {}
            for kind, text in entry["children"].items():
                child_pointer = f"{pointer}/children/{escape_pointer_token(kind)}"
                ids = self.idset(text, child_pointer, "children")
                if ids is not None:
                    children[kind] = ids
                if kind not in ("core", "gpu"):
                    self.warn(f"child type {kind!r} is not in RFC 20 (reserved for "
                              "extensions); kept", "flux-r.extra-child-type", child_pointer)
            if "core" not in entry["children"]:
                self.warn("children has no core (RFC 20 requires it; flux-core accepts it)",
                          "flux-r.core-missing", pointer + "/children")
            if "node" in entry:
                legacy_entries += 1
            if rank_ids is None:
                continue
            if len(ranks) + len(rank_ids) > MAX_RANKS:
                self.broken.add("ranks")
                self.fail(f"more than {MAX_RANKS:,} ranks: beyond what dcx models one by one",
                          "flux-r.too-large", pointer + "/rank")
                return ranks
            if len(children.get("gpu", ())) > MAX_DEVICES:
                # GPUs become one model object each; cores and other children are counts.
                self.broken.update(("ranks", "children"))
                self.fail(f"more than {MAX_DEVICES:,} GPUs per rank: beyond what dcx models "
                          "one by one", "flux-r.too-large", pointer + "/children/gpu")
                return ranks
            for rank in rank_ids:
                self._merge(ranks, rank, children, entry.get("node"), pointer)
        if legacy_entries:
            self.warn(f"{legacy_entries} R_lite entries carry the legacy 'node' key (R before "
                      "the nodelist, 2020)", "flux-r.legacy-node-key", "/execution/R_lite")
        return ranks

    def _merge(self, ranks: dict[int, _Rank], rank: int, children: dict[str, IdSet],
               host: str | None, pointer: str) -> None:
        known = ranks.get(rank)
        if known is None:
            ranks[rank] = _Rank(dict(children), host)
            return
        for kind, ids in children.items():
            before = known.children.get(kind)
            if before is None:
                known.children[kind] = ids
            elif before.isdisjoint(ids):
                known.children[kind] = before.union(ids)
            else:
                self.broken.add("children")
                self.fail(f"rank {rank} appears in several R_lite entries whose {kind} ids "
                          f"overlap ({before} and {ids})", "flux-r.rank-overlap",
                          pointer + "/rank")

    # -- nodelist -------------------------------------------------------------------

    def hosts(self, ranks: Sequence[int],
              legacy: dict[int, str | None]) -> Sequence[str | None]:
        """The host of each rank in ``ranks`` (sorted), or ``None`` each where there are
        none; the decoded hostlist itself when there is one (not a list of a million
        names)."""
        nodelist = self.execution.get("nodelist")
        if nodelist is None:
            if ranks and legacy and all(legacy[rank] is not None for rank in ranks):
                return [legacy[rank] for rank in ranks]
            if ranks:
                self.warn("nodelist is missing (RFC 20 requires it; flux-core accepts it)",
                          "flux-r.nodelist-missing", "/execution")
            return [None] * len(ranks)
        hosts = Hostlist()
        for index, text in enumerate(nodelist):
            if text == "" and len(nodelist) == 1:
                continue  # flux-core writes [""] for an empty set
            try:
                hosts = hosts + Hostlist.decode(text)
            except HostlistError as problem:
                self.broken.add("nodelist")
                self.fail(f"invalid hostlist {text!r}: {problem.reason} (character "
                          f"{problem.position + 1})", "flux-r.hostlist",
                          f"/execution/nodelist/{index}", problem.position)
                return [None] * len(ranks)
        if len(hosts) != len(ranks):
            if "ranks" in self.broken:
                return [None] * len(ranks)  # the rank idset's error explains the count
            self.broken.add("nodelist")
            self.fail(f"nodelist names {len(hosts)} hosts but R_lite has {len(ranks)} ranks; "
                      "hosts map one to one onto the sorted ranks", "flux-r.nodelist-count",
                      "/execution/nodelist")
            return [None] * len(ranks)
        return hosts

    # -- properties, times ------------------------------------------------------------

    def properties(self, ranks: IdSet) -> list[tuple[str, IdSet]]:
        """Each property that targets only ranks R_lite lists, with its ranks, in order."""
        found: list[tuple[str, IdSet]] = []
        for name, text in self.execution.get("properties", {}).items():
            pointer = f"/execution/properties/{escape_pointer_token(name)}"
            ids = self.idset(text, pointer, "properties")
            if ids is None:
                continue
            unknown = None if "ranks" in self.broken else _first_unknown(ids, ranks)
            if unknown is not None:
                self.fail(f"property {name!r} targets rank {unknown}, which R_lite does "
                          "not list", "flux-r.property-rank", pointer)
                continue
            found.append((name, ids))
        return found

    def times(self) -> None:
        start = self.execution.get("starttime", 0)
        end = self.execution.get("expiration", 0)
        if start and end and end <= start:
            self.fail(f"expiration {end} is not after starttime {start}",
                      "flux-r.expiration", "/execution/expiration")

    # -- scheduling -----------------------------------------------------------------

    def scheduling(self, host_inventory: Callable[[], dict[str, tuple[int, int]]]) -> None:
        """Checks a Fluxion graph against ``host_inventory()`` (made only when there is a
        graph to compare: it names every host)."""
        scheduling = self.value.get("scheduling")
        if not isinstance(scheduling, dict) or "graph" not in scheduling:
            return
        if not str(scheduling.get("writer", "fluxion")).startswith("fluxion"):
            return
        found = schema_diagnostics(fluxion.SCHEMA, scheduling, self.locator, "/scheduling")
        if found:
            self.problems.extend(found)
            return
        graph, problems = fluxion.check_graph(scheduling, "/scheduling")
        self.problems.extend(self.locator.diagnostic(d) for d in problems)
        if graph is None or any(d.is_error for d in problems):
            return
        in_graph = fluxion.node_inventory(graph)
        inventory = host_inventory()
        if graph.shorthand:
            in_graph = {host: inventory.get(host, counts) for host, counts in in_graph.items()}
        if in_graph != inventory and not self.broken & {"ranks", "children", "nodelist"}:
            self.fail(f"the scheduling graph describes {_describe(in_graph)} but R_lite "
                      f"describes {_describe(inventory)}", "flux-r.scheduling-mismatch",
                      "/scheduling/graph")


def _first_unknown(ids: IdSet, known: IdSet) -> int | None:
    """The smallest member of ``ids`` not in ``known``, range by range."""
    known_ranges = list(known.ranges())
    los = [lo for lo, _ in known_ranges]
    for lo, hi in ids.ranges():
        where = bisect_right(los, lo) - 1
        if where < 0 or known_ranges[where][1] < lo:
            return lo
        if hi > known_ranges[where][1]:
            return known_ranges[where][1] + 1  # known ranges are not adjacent
    return None


def _describe(inventory: dict[str, tuple[int, int]]) -> str:
    cores = sum(c for c, _ in inventory.values())
    gpus = sum(g for _, g in inventory.values())
    return f"{len(inventory)} hosts, {cores} cores, {gpus} GPUs"


def read(data: bytes) -> ReadResult:
    loaded, problems = load_json_object(data, "an R document", "flux-r.not-object")
    if loaded is None:
        return ReadResult(None, tuple(problems))
    value = loaded.value
    found = schema_diagnostics(SCHEMA, value, loaded.locator)
    if found:
        return ReadResult(None, tuple(found))
    reader = _Reader(value, loaded.locator)
    if "attributes" in value:
        reader.warn("top-level attributes is legacy (removed from RFC 20 in 2025)",
                    "flux-r.legacy-attributes", "/attributes")
    entries = reader.disjoint_entries()
    slots = _grouped_slots(reader, entries) if entries is not None else _single_slots(reader)
    diagnostics = tuple(reader.problems)
    if slots is None or any(d.is_error for d in diagnostics):
        return ReadResult(None, diagnostics)
    extras = {PREFIX + key: value[key] for key in _KEPT_TOP_LEVEL if key in value}
    extras.update({PREFIX + key: value["execution"][key] for key in _KEPT_EXECUTION
                   if key in value["execution"]})
    rack = Rack(slots=slots)
    environment = Environment(
        datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),), extras=extras)
    return ReadResult(Document(environment=environment), diagnostics)


def _single_slots(reader: _Reader) -> tuple[Machine, ...] | None:
    """One machine per rank, after merging the ranks' children across R_lite entries:
    the exact path, for R_lite entries that share ranks (and legacy R)."""
    by_rank = reader.ranks()
    ranks = sorted(by_rank)
    hosts = reader.hosts(ranks, {rank: by_rank[rank].legacy_host for rank in ranks})
    properties = reader.properties(IdSet.from_ids(ranks))
    features: dict[int, list[str]] = {}
    for name, ids in properties:
        for rank in ids:
            features.setdefault(rank, []).append(name)
    reader.times()
    reader.scheduling(lambda: {
        host: (_count(by_rank[rank].children, "core"), _count(by_rank[rank].children, "gpu"))
        for rank, host in zip(ranks, hosts, strict=True) if host is not None})
    if any(d.is_error for d in reader.problems):
        return None
    parts = _SharedParts()
    return tuple(parts.machine(rank, by_rank[rank], host, tuple(features.get(rank, ())))
                 for rank, host in zip(ranks, hosts, strict=True))


@dataclass(frozen=True)
class _Entry:
    """An R_lite entry whose ranks no other entry lists."""

    index: int
    ranks: IdSet
    children: dict[str, IdSet]


@dataclass(frozen=True)
class _Run:
    """Consecutive ranks ``lo..hi`` of one entry and one set of properties."""

    lo: int
    hi: int
    entry: _Entry
    features: tuple[str, ...]


SPLIT_HOSTLIST_RUNS = 64
"""Above this many runs, a group's names index a list of the hosts rather than the
hostlist (whose lookup by position searches its ranges)."""


def _grouped_slots(reader: _Reader,
                   entries: list[_Entry]) -> Sequence[Machine | None] | None:
    """The machines of disjoint R_lite entries as groups: one per run of consecutive ranks
    of one entry with the same properties, named from a window of the nodelist."""
    ranges = sorted((lo, hi, entry) for entry in entries for lo, hi in entry.ranks.ranges())
    known = IdSet.from_runs([(lo, hi) for lo, hi, _ in ranges])
    count = len(known)
    hosts = reader.hosts(range(count), {})
    properties = reader.properties(known)
    reader.times()
    runs = _runs(ranges, properties)

    def host_inventory() -> dict[str, tuple[int, int]]:
        ranks_hosts = zip(range(count), hosts, strict=True)
        inventory: dict[str, tuple[int, int]] = {}
        for run in runs:
            counts = (_count(run.entry.children, "core"), _count(run.entry.children, "gpu"))
            for _ in range(run.hi - run.lo + 1):
                host = next(ranks_hosts)[1]
                if host is not None:
                    inventory[host] = counts
        return inventory

    reader.scheduling(host_inventory)
    if any(d.is_error for d in reader.problems):
        return None
    names: Sequence[str | None] = hosts
    if isinstance(hosts, Hostlist) and len(runs) > SPLIT_HOSTLIST_RUNS:
        names = list(hosts)
    templates: dict[tuple[int, tuple[str, ...]], Machine] = {}
    shared: dict[int, _Parts] = {}
    slots: list[Machine | MachineGroup] = []
    position = 0
    for run in runs:
        parts = shared.get(run.entry.index)
        if parts is None:
            parts = shared[run.entry.index] = _parts(run.entry.children)
        template = templates.get((run.entry.index, run.features))
        if template is None:
            template = templates[(run.entry.index, run.features)] = Machine(
                cpus=parts.cpus, gpus=parts.gpus, features=run.features,
                extras=dict(parts.extras))
        size = run.hi - run.lo + 1
        window = Window(names, position, position + size)
        named = names[position] is not None
        position += size
        if size == 1:
            slots.append(replace(template, rank=run.lo, name=window[0],
                                 extras=dict(template.extras)))
            continue
        slots.append(MachineGroup(template, size, ranks=range(run.lo, run.hi + 1),
                                  names=window if named else None))  # type: ignore[arg-type,unused-ignore]
    return slots_of(slots)


def _runs(ranges: list[tuple[int, int, _Entry]],
          properties: list[tuple[str, IdSet]]) -> list[_Run]:
    """``ranges`` (sorted, disjoint) split where a property starts or ends, each piece
    with the properties covering it in the order R lists them."""
    cuts = sorted({cut for _, ids in properties for lo, hi in ids.ranges()
                   for cut in (lo, hi + 1)})
    runs: list[_Run] = []
    for lo, hi, entry in ranges:
        start = lo
        first = bisect_right(cuts, lo)
        for cut in [*cuts[first:bisect_right(cuts, hi)], hi + 1]:
            features = tuple(name for name, ids in properties if start in ids)
            previous = runs[-1] if runs else None
            if previous is not None and previous.entry is entry and previous.hi + 1 == start \
                    and previous.features == features:
                runs[-1] = _Run(previous.lo, cut - 1, entry, features)
            else:
                runs.append(_Run(start, cut - 1, entry, features))
            start = cut
    return runs


def _count(children: dict[str, IdSet], kind: str) -> int:
    ids = children.get(kind)
    return len(ids) if ids is not None else 0


class _SharedParts:
    """Builds machines; ranks whose children are the same idset objects (one R_lite entry)
    share one set of CPU, GPU and resource tuples, so 10,000 ranks of one shape hold one
    copy and the writers recognise the shape by identity."""

    def __init__(self) -> None:
        self._shapes: dict[tuple[int, ...], _Parts] = {}
        self._children: list[dict[str, IdSet]] = []  # keeps the keyed idsets alive

    def machine(self, rank: int, info: _Rank, host: str | None,
                features: tuple[str, ...]) -> Machine:
        key = tuple(id(ids) for ids in info.children.values())
        parts = self._shapes.get(key)
        if parts is None or list(info.children) != parts.kinds:
            parts = _parts(info.children)
            self._shapes[key] = parts
            self._children.append(info.children)
        return Machine(name=host, rank=rank, cpus=parts.cpus, gpus=parts.gpus,
                       features=features, extras=dict(parts.extras))


@dataclass(frozen=True)
class _Parts:
    kinds: list[str]
    cpus: tuple[ProcessingUnit, ...]
    gpus: tuple[ProcessingUnit, ...]
    extras: dict[str, Any]


def _parts(children: dict[str, IdSet]) -> _Parts:
    extras: dict[str, Any] = {}
    cores = children.get("core", IdSet.empty())
    if not cores.is_interval_from_zero():
        extras[PREFIX + "core"] = cores.encode()
    gpus = tuple(ProcessingUnit(cores=1, id=gpu) for gpu in children.get("gpu", ()))
    others = {kind: ids.encode() for kind, ids in children.items()
              if kind not in ("core", "gpu")}
    if others:
        extras[CHILDREN] = others
    cpus = (ProcessingUnit(cores=len(cores)),) if cores else ()
    return _Parts(list(children), cpus, gpus, extras)


# --------------------------------------------------------------------------- value restrictions


def normal_form(document: Document) -> Document:
    """What R makes of ``document`` before any field path applies (``converters.losses``,
    Value restrictions): GPU ids that are not distinct non-negative integers become
    ``0..n-1``; features R cannot name are left out, repeated features kept once and
    features sorted (R lists properties by name); ranks that are missing or repeated become
    ``0..n-1`` in topology order; every machine is named after its host (see Required host
    names). A machine group stays one group when its members' names are host names."""
    environment = document.environment
    if environment is None:
        return document
    renumber = not _ranks_are_usable(list(machine_parts(environment)))
    position = 0

    def normal(machine: Machine) -> Machine:
        nonlocal position
        index = position
        position += 1
        return replace(machine, gpus=_normal_gpus(machine.gpus),
                       rank=index if renumber else machine.rank,
                       name=required_machine_name(machine, index + 1, is_host_name),
                       cpus=machine.cpus if _core_count(machine.cpus) else (),
                       features=_normal_features(machine.features))

    def normal_group(group: MachineGroup) -> list[Machine | MachineGroup]:
        nonlocal position
        if group.names is None or not _all_host_names(group.names):
            return [normal(member) for member in group]  # names filled in one by one
        start = position
        position += group.count
        template = group.template
        template = replace(template, gpus=_normal_gpus(template.gpus),
                           cpus=template.cpus if _core_count(template.cpus) else (),
                           features=_normal_features(template.features))
        if not renumber:
            return [replace(group, template=template)]
        return [replace(group, template=replace(template, rank=None),
                        ranks=range(start, start + group.count))]

    def slots(rack: Rack) -> Sequence[Machine | None]:
        if not isinstance(rack.slots, Slots):
            return tuple(None if slot is None else normal(slot) for slot in rack.slots)
        parts: list[Machine | MachineGroup | None] = []
        for part in rack.slots.parts:
            if isinstance(part, MachineGroup):
                parts.extend(normal_group(part))
            else:
                parts.append(None if part is None else normal(part))
        return slots_of(parts)

    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(replace(rack, slots=slots(rack)) for rack in room.racks))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    return replace(document, environment=replace(environment, datacenters=datacenters))


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document`` (a group's shared parts
    judged once)."""
    environment = document.environment
    if environment is None:
        return frozenset()
    parts = list(machine_parts(environment))
    found: set[str] = set()
    if not _ranks_are_usable(parts) and _ranks_move(parts):
        found.add("machine.rank")
    for part in parts:
        machine = part_template(part)
        if any(gpu.id is not None for gpu in machine.gpus) and not _gpu_ids_are_usable(
                machine.gpus):
            found.add("gpu.id")
        names = part.names if isinstance(part, MachineGroup) else None
        if (machine.name is not None and not is_host_name(machine.name)) or (
                names is not None and not _all_host_names(names)):
            found.add("machine.name")
        if machine.cpus and not _core_count(machine.cpus):
            found.add("machine.cpus")
        if not all(map(_is_property_name, machine.features)) or len(
                set(machine.features)) != len(machine.features):
            found.add("machine.features")
    return frozenset(found)


def _normal_features(features: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({feature for feature in features if _is_property_name(feature)}))


def _all_host_names(names: Sequence[str]) -> bool:
    """Whether every name is one a hostlist can spell (a window of a decoded hostlist
    is, by construction)."""
    if isinstance(names, Window) and isinstance(names.base, Hostlist):
        return True
    return all(map(is_host_name, names))


def _rank_runs(parts: list[Machine | MachineGroup]) -> list[tuple[int, int]] | None:
    """Each part's ranks as ascending runs ``(lo, hi)``, in topology order; ``None`` when a
    machine has no rank (or a group's members share one)."""
    runs: list[tuple[int, int]] = []
    for part in parts:
        if not isinstance(part, MachineGroup):
            if part.rank is None:
                return None
            runs.append((part.rank, part.rank))
            continue
        ranks = part.ranks
        if ranks is None:
            if part.template.rank is None or part.count > 1:
                return None
            runs.append((part.template.rank, part.template.rank))
        elif isinstance(ranks, range) and ranks.step == 1:
            runs.append((ranks.start, ranks.stop - 1))
        else:
            runs.extend((rank, rank) for rank in ranks)
    return runs


def _ranks_are_usable(parts: list[Machine | MachineGroup]) -> bool:
    """Every machine has a rank of its own, none negative."""
    runs = _rank_runs(parts)
    if runs is None:
        return False
    ordered = sorted(runs)
    return (not ordered or ordered[0][0] >= 0) and all(
        lo > previous_hi for (_, previous_hi), (lo, _) in pairwise(ordered))


def _ranks_move(parts: list[Machine | MachineGroup]) -> bool:
    """Whether numbering the machines 0..n-1 changes a rank some machine has."""
    index = 0
    for part in parts:
        if isinstance(part, MachineGroup):
            ranks: Sequence[int | None] = (part.ranks if part.ranks is not None
                                           else [part.template.rank] * part.count)
            if isinstance(ranks, range) and ranks.step == 1:
                if ranks.start != index:
                    return True
            elif any(rank is not None and rank != index + offset
                     for offset, rank in enumerate(ranks)):
                return True
            index += part.count
            continue
        if part.rank is not None and part.rank != index:
            return True
        index += 1
    return False


def _core_count(cpus: tuple[ProcessingUnit, ...]) -> int:
    return sum(cpu.cores for cpu in cpus)


def _gpu_ids_are_usable(gpus: tuple[ProcessingUnit, ...]) -> bool:
    ids = [gpu.id for gpu in gpus]
    return all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids) \
        and len(set(ids)) == len(ids)


def _normal_gpus(gpus: tuple[ProcessingUnit, ...]) -> tuple[ProcessingUnit, ...]:
    if _gpu_ids_are_usable(gpus):
        return gpus
    return tuple(replace(gpu, id=index) for index, gpu in enumerate(gpus))


def _is_property_name(feature: str) -> bool:
    return bool(feature) and not FORBIDDEN_PROPERTY_CHARACTERS & set(feature)


# --------------------------------------------------------------------------- writing


def write(document: Document) -> WriteResult:
    environment = document.environment or Environment()
    if has_groups(environment):
        grouped = _write_groups(environment)
        if grouped is not None:
            return grouped
    machines = list(environment.machines())
    ranks = _assign_ranks(machines)
    order = sorted(range(len(machines)), key=lambda i: ranks[i])
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    properties: dict[str, list[int]] = {}
    hosts: list[str] = []
    shapes: ShapeMemo[tuple[tuple[str, str], ...]] = ShapeMemo(_children)
    for position in order:
        machine, rank = machines[position], ranks[position]
        children = shapes.get(machine.cpus, machine.gpus, machine.extras.get(PREFIX + "core"),
                              machine.extras.get(CHILDREN))
        groups.setdefault(children, []).append(rank)
        for feature in dict.fromkeys(machine.features):
            if _is_property_name(feature):
                properties.setdefault(feature, []).append(rank)
        hosts.append(required_machine_name(machine, position + 1, is_host_name))
    r_lite = [
        {"rank": IdSet.from_ids(group).encode(), "children": dict(children)}
        for children, group in sorted(groups.items(), key=lambda item: min(item[1]))
    ]
    # required_machine_name only returns names a hostlist can spell, so this cannot raise.
    execution: dict[str, Any] = {
        "R_lite": r_lite, "nodelist": [Hostlist.from_hosts(hosts).encode()] if hosts else []}
    if properties:
        # Sorted: R cannot hold each machine's own feature order, so pick a canonical one.
        execution["properties"] = {name: IdSet.from_ids(properties[name]).encode()
                                   for name in sorted(properties)}
    return WriteResult(dumps_canonical(_with_kept_keys(execution, environment)))


def _write_groups(environment: Environment) -> WriteResult | None:
    """``write`` from the groups: a group's ranks join the idsets as one range and its
    names the nodelist as they are, so a million ranks are never single machines. The same
    bytes as ``write`` on the expanded machines; ``None`` when some group's names must be
    filled in or its ranks are no range (then ``write`` takes machine by machine)."""
    parts = list(machine_parts(environment))
    runs = _rank_runs(parts)
    if runs is None or not _ranks_are_usable(parts):
        runs, start = [], 0  # renumbered 0..n-1 in topology order
        for part in parts:
            runs.append((start, start + part_count(part) - 1))
            start += part_count(part)
    elif len(runs) != len(parts):
        return None  # a group whose ranks are no range
    names: list[Sequence[str]] = []
    position = 0
    for part in parts:
        if isinstance(part, MachineGroup):
            if part.names is None or not _all_host_names(part.names):
                return None
            names.append(part.names)
        else:
            names.append((required_machine_name(part, position + 1, is_host_name),))
        position += part_count(part)
    order = sorted(range(len(parts)), key=lambda index: runs[index])
    shapes: ShapeMemo[tuple[tuple[str, str], ...]] = ShapeMemo(_children)
    groups: dict[tuple[tuple[str, str], ...], list[tuple[int, int]]] = {}
    properties: dict[str, list[tuple[int, int]]] = {}
    for index in order:
        machine, run = part_template(parts[index]), runs[index]
        children = shapes.get(machine.cpus, machine.gpus, machine.extras.get(PREFIX + "core"),
                              machine.extras.get(CHILDREN))
        groups.setdefault(children, []).append(run)
        for feature in dict.fromkeys(machine.features):
            if _is_property_name(feature):
                properties.setdefault(feature, []).append(run)
    r_lite = [{"rank": IdSet.from_runs(sorted(group)).encode(), "children": dict(children)}
              for children, group in sorted(groups.items(), key=lambda item: min(item[1]))]
    nodelist = _nodelist([names[index] for index in order])
    execution: dict[str, Any] = {"R_lite": r_lite, "nodelist": [nodelist] if position else []}
    if properties:
        execution["properties"] = {name: IdSet.from_runs(sorted(properties[name])).encode()
                                   for name in sorted(properties)}
    return WriteResult(dumps_canonical(_with_kept_keys(execution, environment)))


def _nodelist(names: list[Sequence[str]]) -> str:
    """The hostlist of ``names`` one after the other; windows that together are a whole
    decoded hostlist, in order, are that hostlist."""
    first = names[0] if names else None
    if isinstance(first, Window) and isinstance(first.base, Hostlist):
        base, expected = first.base, 0
        for window in names:
            if not isinstance(window, Window) or window.base is not base \
                    or window.start != expected:
                break
            expected = window.stop
        else:
            if expected == len(base):
                return base.encode()
    return Hostlist.from_hosts(chain.from_iterable(names)).encode()


def _with_kept_keys(execution: dict[str, Any], environment: Environment) -> dict[str, Any]:
    for key in _KEPT_EXECUTION:
        if PREFIX + key in environment.extras:
            execution[key] = environment.extras[PREFIX + key]
    value: dict[str, Any] = {"version": 1, "execution": execution}
    for key in _KEPT_TOP_LEVEL:
        if PREFIX + key in environment.extras:
            value[key] = environment.extras[PREFIX + key]
    return value


def _assign_ranks(machines: list[Machine]) -> list[int]:
    """The machines' own ranks when every machine has a distinct one; otherwise 0..n-1 in
    topology order."""
    given = [machine.rank for machine in machines]
    if all(rank is not None and rank >= 0 for rank in given) and len(set(given)) == len(given):
        return [rank for rank in given if rank is not None]
    return list(range(len(machines)))


def _children(cpus: tuple[ProcessingUnit, ...], gpus: tuple[ProcessingUnit, ...],
              kept_cores: Any, others: Any) -> tuple[tuple[str, str], ...]:
    """A machine's R_lite children; a pure function of the machine's parts, so the writer
    computes it once per distinct shape."""
    children: list[tuple[str, str]] = [("core", _ids_text(kept_cores, _core_count(cpus)))]
    gpu_ids = [gpu.id for gpu in gpus]
    if gpu_ids:
        if _gpu_ids_are_usable(gpus):
            children.append(("gpu", IdSet.from_ids(i for i in gpu_ids
                                                   if isinstance(i, int)).encode()))
        else:
            children.append(("gpu", _ids_text(None, len(gpu_ids))))
    if isinstance(others, dict):
        for kind, text in others.items():
            if kind not in ("core", "gpu") and isinstance(kind, str) and kind \
                    and isinstance(text, str):
                children.append((kind, _ids_text(text, None)))
    return tuple(children)


def _ids_text(kept: Any, count: int | None) -> str:
    """The idset the reader kept, when it is one and still has ``count`` members (any count
    when ``None``); else ``0-(count-1)``."""
    if isinstance(kept, str):
        try:
            ids = IdSet.decode(kept)
        except IdsetError:
            ids = IdSet.empty()
        if count is None or len(ids) == count:
            return ids.encode()
    return IdSet.from_range(0, (count or 0) - 1).encode()


CODES: tuple[Code, ...] = (
    Code("flux-r.not-object", "error", "The file is not one JSON object."),
    Code("flux-r.idset", "error", "An idset (ranks, children, property targets) breaks RFC 22."),
    Code("flux-r.hostlist", "error", "A nodelist entry breaks RFC 29 (or a flux-core limit)."),
    Code("flux-r.nodelist-count", "error",
         "The nodelist names a different number of hosts than R_lite has ranks."),
    Code("flux-r.nodelist-missing", "warning",
         "The nodelist is missing (RFC 20 requires it; flux-core accepts it).",
         conformance=True),
    Code("flux-r.core-missing", "warning",
         "An R_lite entry has no core child (RFC 20 requires it; flux-core accepts it).",
         conformance=True),
    Code("flux-r.extra-child-type", "warning",
         "An R_lite child type other than core and gpu (reserved by RFC 20); kept."),
    Code("flux-r.legacy-node-key", "warning",
         "R_lite entries carry the legacy node key (R before the nodelist, 2020)."),
    Code("flux-r.legacy-attributes", "warning",
         "Top-level attributes is legacy (removed from RFC 20 in 2025)."),
    Code("flux-r.too-large", "error",
         "More ranks, or more GPUs per rank, than dcx models one by one."),
    Code("flux-r.rank-overlap", "error",
         "A rank appears in several R_lite entries whose children overlap."),
    Code("flux-r.property-rank", "error", "A property targets a rank R_lite does not list."),
    Code("flux-r.expiration", "error", "The expiration is not after the starttime."),
    Code("flux-r.scheduling-mismatch", "error",
         "The scheduling graph describes other hosts, cores or GPUs than R_lite."),
)


FORMAT = FormatDeclaration(
    name="flux-r",
    title="Flux R version 1 (RFC 20)",
    family="flux",
    kind="topology",
    extensions=(".R", ".json"),
    content=frozenset({"json"}),
    schema="flux-r.schema.json",
    description=("Flux resource set: R_lite rank/core/gpu idsets, an RFC 29 nodelist, "
                 "properties, optional Fluxion scheduling graph."),
    own_extras=frozenset({"environment.extras", "machine.extras"}),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    requires=REQUIRES,
    codes=CODES,
)
