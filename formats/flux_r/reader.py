"""Flux R reading: schema, idsets, hostlists, ranks and properties checked, machines (or
machine groups) built in rank order.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import pairwise
from typing import Any

from dcx.core.diagnostics import Diagnostic, ReadResult, error, warning
from dcx.core.groups import MachineGroup, Window, slots_of
from dcx.core.located import Place
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
)
from dcx.formats.flux_r.vocabulary import (
    _KEPT_EXECUTION,
    _KEPT_TOP_LEVEL,
    CHILDREN,
    MAX_DEVICES,
    MAX_RANKS,
    PREFIX,
    SCHEMA,
)
from dcx.parsing import fluxion
from dcx.parsing.hostlist import Hostlist, HostlistError, IdSet, IdsetError
from dcx.parsing.jsonio import JsonLocator, escape_pointer_token, model_locator
from dcx.parsing.schemas import loaded_against, schema_diagnostics


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
                self.warn("nodelist is missing (RFC 20 requires it; flux-core accepts it): "
                          f"its {len(ranks):,} ranks have no host names (formats that need "
                          "one, R and JGF too, name them node<N>, N the 1-based position)",
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
    loaded, problems = loaded_against(SCHEMA, data, "an R document", "flux-r.not-object")
    if loaded is None:
        return ReadResult(None, tuple(problems))
    value = loaded.value
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
        datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),), extras=extras,
        validity=fluxion.validity_of(value["execution"]))
    return ReadResult(Document(environment=environment), diagnostics,
                      locator=model_locator(loaded.locator, _Sources(loaded.locator)))


@dataclass
class _Sources:
    """The JSON Pointer a model object was read from: a machine is the first R_lite entry
    listing its rank (machines are in rank order, so slot ``n`` holds the ``n``th rank; a
    group's ranks share their entry), the rack is R_lite, the rest the document. The ranks
    are decoded again on the first question, from the text."""

    locator: JsonLocator

    def __call__(self, place: Place) -> str | None:
        if place.part != "environment" or place.kind == "events":
            return None
        slot = place.index("slots")
        if slot is None:
            return "/execution/R_lite" if place.kind == "racks" else ""
        ranks, entries = self._ranks
        if slot >= len(ranks):
            return None
        rank = ranks.nth(slot)
        return next((f"/execution/R_lite/{index}" for index, ids in enumerate(entries)
                     if rank in ids), None)

    @cached_property
    def _ranks(self) -> tuple[IdSet, list[IdSet]]:
        """Every rank, and each R_lite entry's ranks."""
        entries = [IdSet.decode(entry["rank"])
                   for entry in self.locator.decoded()["execution"]["R_lite"]]
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(run for ids in entries for run in ids.ranges()):
            if merged and lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
        return IdSet.from_runs(merged), entries


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
