"""What a document becomes in a format that holds only some fields (``restrict``), and which
field paths a format drops from a document (``dropped_fields``): the one comparison that
conversion reports, the loss matrix and the docs all derive their losses from.

``restrict(document, holds)`` is the contract every pair of formats is tested against:
converting a document of format A to B and back to A yields exactly
``restrict(document, A.holds & B.holds)``. For that to be testable, each field path of
``formats/fields.py`` that a format does not hold has one normal form, listed here; writers
drop to it and readers of formats without the field build it.

Normal forms
------------

Values
    A field that is not held takes its model default (``None``, ``()``, ``{}``, ``0``,
    ``StartMode.ANY``, ``MachineState.ACTIVE``; a task request's ``nodes`` and ``cores`` 1;
    a GPU's ``cores`` 1, since a format that counts GPUs as devices knows no GPU cores).

Hierarchy (``datacenter``, ``room``, ``rack``)
    A level that is not held has exactly one container per parent (even when the source had
    none): the children of all containers, concatenated in order, under a container that keeps
    the first container's attributes (each then subject to its own field path). A room level
    that is not held also resets the room's type to ``SERVER``.

Splits (``machine.cpus.sockets``, ``machine.memory.modules``, ``machine.storage.devices``)
    Several units become one that keeps the first unit's attributes, with the total core count
    (and ``Machine.clock_rate_hz``, the core-weighted mean clock) or the total capacity.

Jobs (``job``, ``job.empty``)
    Without jobs, every task is a job of its own whose id is the task's id, with no name, user
    or extras; jobs without tasks disappear. A format that holds jobs but not ``job.empty``
    (a job exists only through its tasks' lines) also drops the jobs without tasks.

Dependencies (``task.dependencies.multiple``)
    A format that holds dependencies but not several per task (SWF's one preceding job) keeps
    each task's first dependency only.

Task ids (``task.id``)
    Tasks are numbered 1, 2, … in workload order and dependencies follow the new numbers.

Parts (``environment``, ``workload``)
    Implied by any field of the part (``with_parts``), so a format's ``holds`` need not list
    them.

Value restrictions (``normal_form`` of a format declaration)
    What field paths cannot say (opendc-setup writes only two CPU types) a format states
    as an optional ``normal_form(document) -> Document``: what the format makes of a document
    before any field path applies. ``restrict(..., target=declaration)`` applies it first;
    ``dropped_fields(..., target=declaration)`` counts the fields on the normalized document
    plus the held fields its ``normal_form_losses(document)`` names (what the value
    restriction changed: opendc-setup reports a machine it leaves out as ``machine.cpus``),
    each with the number of values the normal form changes, drops or fills in there
    (``differing_values``: the document's values against its normal form's).

Empty parts
    An absent part (``None``) and an empty one (what ``restrict`` makes of ``Environment()``
    or ``Workload()`` for the format) carry the same nothing: a topology format writes an
    absent topology as its empty document (an SSS ``<Data/>``, a Haizea site without nodes),
    which reads back as the empty part. ``without_empty_parts`` maps both to ``None``;
    round trips are compared through it.

Required machine ids (``requires`` of a format declaration)
    A format whose every machine must have an id (SSS ``<Id>``) writes a machine without one
    under ``required_machine_id``: its name, or ``node<N>`` (``N`` its 1-based position among
    the document's machines) when it has no usable name or that name is taken
    (``dcx.core.ids.required_ids``); ``with_required_ids`` applies this to a document. It adds
    nothing the source held, so it is no loss.

Ids as text
    A format whose ids are text (SSS) reads an id back with ``id_from_text``: the canonical
    decimal form of a non-negative integer is that integer, so integer ids of other formats
    survive; a string id of that form comes back as an integer, which its normal form reports
    as a ``machine.id`` loss (the generated documents never use one).

Extras
    Keys without a ``:`` are free-form user keys; the ``X.extras`` field path says whether a
    format carries them. Keys prefixed ``fmt:`` belong to format ``fmt``: only ``fmt`` itself
    holds them (``own_prefix``). Extras of CPUs, GPUs, memory and storage units follow
    ``machine.extras``; extras of named resources, consumables, annotations and partitions
    follow the field path of what contains them; document extras have no path and keep
    only own keys.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from dcx.core.columns import (
    PLACEMENTS,
    RECORDED_FLOATS,
    RECORDED_TEXTS,
    STATUSES,
    Strings,
    WorkloadColumns,
    all_distinct,
    all_found,
    columns_of,
    first_used,
    placements_of,
    recorded_floats,
    statuses_of,
    used_paths,
)
from dcx.core.diagnostics import Loss
from dcx.core.fields import FIELDS
from dcx.core.groups import MachineGroup, concatenated_slots, map_slots, slot_parts
from dcx.core.located import (
    first_changed,
    first_difference,
    located_at,
    located_kind,
    located_objects,
    pointers_of,
)
from dcx.core.model import (
    Annotation,
    Consumables,
    Datacenter,
    DatacenterSchedulerChange,
    Document,
    Environment,
    Extras,
    Id,
    Job,
    Machine,
    MachineState,
    MachineStateChange,
    NamedResource,
    Partition,
    Placement,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StartMode,
    StorageUnit,
    Task,
    TaskStatus,
    Workload,
)

if TYPE_CHECKING:
    from dcx.core.declaration import FormatDeclaration

T = TypeVar("T")

Place = object
"""Where a field path is first used: a located object (``dcx.core.located``), its model
pointer, or ``_InColumns`` (a row of a workload held as columns, found when asked for)."""


@dataclass(frozen=True)
class _Held:
    """The held field paths plus the format whose prefixed extras survive.

    ``keep_foreign`` keeps every format's prefixed extras except at ``foreign_dropped_at``:
    the baseline against which ``dropped_fields`` finds foreign extras a target drops."""

    paths: frozenset[str]
    own_prefix: str | None
    keep_foreign: bool = False
    foreign_dropped_at: str | None = None
    prefixed_paths: frozenset[str] = frozenset()
    """Where every format's prefixed keys survive: the paths a target that stores the model
    as it is holds (``keeps_prefixed_extras`` of its declaration)."""

    def __contains__(self, path: str) -> bool:
        return path in self.paths

    def has(self, path: str, matters: bool | Callable[[], int] = True,
            where: Callable[[], str] | None = None) -> bool:
        """Whether ``path`` is held where leaving it out would change the document only when
        ``matters``: a flag, or for a costly test a callable counting the values that would
        change. ``RecordingUse`` records it, at ``where()`` (the model pointer of the first
        located object that would change) when the object being walked is not that one."""
        return path in self.paths

    def at(self, located: object) -> None:
        """The walk is at ``located`` (see ``dcx.core.located``): what it records next,
        until the next ``at``, belongs there. The walk calls it before an object's own
        values and walks the located objects inside after them."""

    def value(self, path: str, value: Any, default: Any = None) -> Any:
        return value if path in self.paths else default

    sees: ClassVar[bool] = False
    """Whether ``seen`` records (the walk skips gathering its values otherwise)."""

    @property
    def walks_rows(self) -> bool:
        """Whether the walk goes into the jobs and tasks."""
        return True

    def seen(self, path: str, value: Any) -> None:
        """The document has ``value`` at ``path`` here, where the walk asks only whether the
        path is held (``has``): what ``RecordingValues`` compares."""

    def members(self, path: str, values: Sequence[Any] | None) -> Sequence[Any] | None:
        """A group's per-member values at ``path`` (``None``: none given), as kept."""
        return values if path in self.paths else None

    @contextmanager
    def scaled(self, count: int) -> Iterator[None]:
        """What is walked inside stands for ``count`` equal values (a machine group's
        template); ``RecordingUse`` counts it that many times."""
        yield

    def build(self, cls: type[T], original: T, **fields: Any) -> T:
        """``cls(**fields)``: ``original`` as the format keeps it."""
        return cls(**fields)

    def extras(self, path: str | None, extras: Extras) -> Extras:
        """Plain keys survive when ``path`` is held; ``own_prefix:`` keys always survive."""
        if not extras:
            return extras
        plain_held = path is not None and path in self.paths
        own = f"{self.own_prefix}:" if self.own_prefix else None
        foreign_kept = (self.keep_foreign and (path is None or path != self.foreign_dropped_at)
                        ) or path in self.prefixed_paths
        return {key: value for key, value in extras.items()
                if (plain_held if ":" not in key
                    else foreign_kept or (own is not None and key.startswith(own)))}


@contextmanager
def _multiplied(scale: list[int], count: int) -> Iterator[None]:
    """``scale``'s innermost factor times ``count`` while the block runs (the walk inside a
    machine group's template counts each value once per member)."""
    scale.append(scale[-1] * count)
    try:
        yield
    finally:
        scale.pop()


@dataclass(frozen=True)
class RecordingUse(_Held):
    """Holds everything and records which field paths the document uses: a path is ``used``
    when leaving it out would change the document, and ``foreign`` when other formats'
    prefixed extras sit at it. One walk of ``_restrict`` finds what restricting once per
    path finds (``dropped_fields_by_restriction``, the specification it is tested against)."""

    used: dict[str, int] = field(default_factory=dict)
    """Path → how many values leaving it out would change."""
    foreign: dict[str, int] = field(default_factory=dict)
    """Path → how many other formats' prefixed keys sit at it."""
    first: dict[str, Place] = field(default_factory=dict)
    """Path → where it was first ``used`` or ``foreign``: one place per path, recorded when
    the path is first counted (``first_pointers`` makes model pointers of them)."""
    first_foreign: dict[str, Place] = field(default_factory=dict)
    """Path → where its first other format's prefixed key sits."""
    scale: list[int] = field(default_factory=lambda: [1])
    """How many values what is being walked stands for (inside a group: its count)."""
    here: list[Place] = field(default_factory=lambda: [None])
    """The located object being walked (``at``)."""

    def at(self, located: object) -> None:
        self.here[0] = located

    def _count(self, counts: dict[str, int], path: str, number: int = 1,
               place: Place = None) -> None:
        if number:
            count = counts.get(path)
            if count is None:  # first seen: where it is, once per path
                where = place if place is not None else self.here[0]
                if counts is self.foreign:
                    self.first_foreign[path] = where
                self.first.setdefault(path, where)
                count = 0
            counts[path] = count + number * self.scale[-1]

    @contextmanager
    def scaled(self, count: int) -> Iterator[None]:
        with _multiplied(self.scale, count):
            yield

    def members(self, path: str, values: Sequence[Any] | None) -> Sequence[Any] | None:
        if values is not None:
            self._count(self.used, path, len(values))
        return values

    def has(self, path: str, matters: bool | Callable[[], int] = True,
            where: Callable[[], str] | None = None) -> bool:
        number = int(matters() if callable(matters) else matters)
        place = where() if where is not None and number and path not in self.used else None
        self._count(self.used, path, number, place)
        return True

    def value(self, path: str, value: Any, default: Any = None) -> Any:
        if value != default:
            self._count(self.used, path)
        return value

    def build(self, cls: type[T], original: T, **fields: Any) -> T:
        return original  # everything is held: nothing changes, so nothing is built

    def extras(self, path: str | None, extras: Extras) -> Extras:
        if path is None or not extras:
            return extras  # document extras have no path: only their own format keeps them
        own = f"{self.own_prefix}:" if self.own_prefix else None
        for key in extras:
            if ":" not in key:
                self._count(self.used, path)
            elif own is None or not key.startswith(own):
                self._count(self.foreign, path)
        return extras


def _key(value: Any) -> Any:
    """``value`` as a counter key: itself when hashable (NaN as one value), else its text."""
    if isinstance(value, float) and value != value:
        return _NAN
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


_NAN = object()

Bag = Counter[Any]
"""The values one located object (or one member of a machine group) has at a path."""

_MEMBER_PATHS = {"machine.id": "id", "machine.name": "name", "machine.rank": "rank"}
"""The paths a machine group may give per member (``MachineGroup.member_values``)."""


@dataclass(frozen=True)
class RecordingValues(_Held):
    """Holds everything and records, at each of the ``wanted`` paths, the values that are
    not the model's default there, in a bag per located object (a machine group's template
    in one bag that stands for every member, the values it gives per member in one bag
    each), and every located object in walk order: what ``differing_values`` compares,
    object by object. ``rows``: whether the jobs and tasks are walked."""

    wanted: frozenset[str] = frozenset()
    rows: bool = True
    bags: dict[str, dict[tuple[int, int | None], Bag]] = field(default_factory=dict)
    order: list[object] = field(default_factory=list)
    here: list[Place] = field(default_factory=lambda: [None])
    member: list[int | None] = field(default_factory=lambda: [None])
    sees: ClassVar[bool] = True

    def at(self, located: object) -> None:
        self.here[0] = located
        self.order.append(located)

    def _record(self, path: str, value: Any) -> None:
        if path not in self.wanted:
            return
        here = self.here[0]
        if (self.member[0] is None and path in _MEMBER_PATHS and isinstance(here, MachineGroup)
                and here.member_values(_MEMBER_PATHS[path]) is not None):
            return  # the template's none: each member's own value is recorded instead
        bag = self.bags.setdefault(path, {}).setdefault((id(here), self.member[0]), Counter())
        bag[_key(value)] += 1

    def value(self, path: str, value: Any, default: Any = None) -> Any:
        if value != default:
            self._record(path, value)
        return value

    def seen(self, path: str, value: Any) -> None:
        if value is not None and value != () and value != {}:
            self._record(path, value)

    def members(self, path: str, values: Sequence[Any] | None) -> Sequence[Any] | None:
        for index, value in enumerate(values or ()):
            self.member[0] = index
            self._record(path, value)
        self.member[0] = None
        return values

    def build(self, cls: type[T], original: T, **fields: Any) -> T:
        return original

    def extras(self, path: str | None, extras: Extras) -> Extras:
        if path is not None:
            for item in extras.items():
                self._record(path, item)
        return extras

    @property
    def walks_rows(self) -> bool:
        return self.rows

    @property
    def task_values_only(self) -> bool:
        """Whether every task path wanted is one value of the task (``_TASK_VALUES``) and
        no job path is: the tasks are recorded without the walk (``record_task``)."""
        return not any(path.startswith(("task", "job")) and path not in _TASK_VALUES
                       for path in self.wanted)

    def record_task(self, task: Task) -> None:
        """What ``_task`` records of ``task`` at the wanted ``_TASK_VALUES`` paths."""
        self.at(task)
        for path in self.wanted:
            found = _TASK_VALUES.get(path)
            if found is not None:
                self.value(path, found[0](task), found[1])

    def objects_by_kind(self) -> dict[type, list[object]]:
        """The located objects walked, once each, by kind (a group is of ``Machine``'s)."""
        seen: set[int] = set()
        kinds: dict[type, list[object]] = {}
        for obj in self.order:
            if id(obj) not in seen:
                seen.add(id(obj))
                kinds.setdefault(_kind_of(obj), []).append(obj)
        return kinds


def _kind_of(obj: object) -> type:
    return Machine if isinstance(obj, MachineGroup) else type(obj)


def _units(obj: object) -> int:
    """How many objects ``obj`` stands for (a machine group: its members)."""
    return obj.count if isinstance(obj, MachineGroup) else 1


Unit = tuple[object, int]
"""One object a walk stands for: a located object and, in a machine group, a member's
index (0 otherwise)."""

Segment = tuple[object, int, object, int, int]
"""Paired runs of objects: the original's object and first member, the normal form's, and
how many members follow, paired one to one."""


@dataclass(frozen=True)
class _Pairing:
    """Which objects of one kind a normal form keeps as which (``segments``), and which
    of the original's it leaves out (``left``): every object of the normal form is paired."""

    segments: list[Segment]
    left: list[Unit]


def _pairing(kind: type, mine: list[object], theirs: list[object]) -> _Pairing | None:
    """The original's objects of ``kind`` paired with the normal form's: in order where
    there are as many of them and they keep their ids (or the normal form renumbers them
    all: a task numbered anew stays in its place), by id where the normal form keeps a
    subset of the ids, each once (it leaves out or reorders tasks); ``None`` where neither
    holds (compared as many-sets, ``_many_set_compared``)."""
    if kind in (Task, Job):
        ids_mine = [getattr(obj, "id", None) for obj in mine]
        ids_theirs = [getattr(obj, "id", None) for obj in theirs]
        if ids_mine != ids_theirs:
            by_id = _paired_by_id(mine, theirs, ids_mine, ids_theirs)
            if by_id is not None:
                return by_id
    if sum(map(_units, mine)) == sum(map(_units, theirs)):
        return _Pairing(list(_in_order(mine, theirs)), [])
    if kind is Machine:
        return _machines_by_id(mine, theirs)
    return None


def _paired_by_id(mine: list[object], theirs: list[object], ids_mine: list[Any],
                  ids_theirs: list[Any]) -> _Pairing | None:
    pairs = _id_pairs(ids_mine, ids_theirs)
    if pairs is None:
        return None
    return _Pairing([(mine[m], 0, theirs[t], 0, 1) for m, t in pairs[0]],
                    [(mine[m], 0) for m in pairs[1]])


def _id_pairs(ids_mine: list[Any], ids_theirs: list[Any]
              ) -> tuple[list[tuple[int, int]], list[int]] | None:
    """The positions of each id of ``ids_theirs`` in both lists, in the original's order,
    and the positions of the original's ids the other does not have; ``None`` unless each
    list has each id once and ``ids_theirs`` are among ``ids_mine``."""
    try:
        where = {identity: index for index, identity in enumerate(ids_mine)}
        if len(where) != len(ids_mine) or len(set(ids_theirs)) != len(ids_theirs) \
                or not all(identity in where for identity in ids_theirs):
            return None
    except TypeError:  # (an unhashable id)
        return None
    kept = {where[identity]: index for index, identity in enumerate(ids_theirs)}
    return sorted(kept.items()), [index for index in range(len(ids_mine)) if index not in kept]


def _machines_by_id(mine: list[object], theirs: list[object]) -> _Pairing | None:
    """Machines paired by id where the normal form leaves some out (each id once)."""
    units_mine, units_theirs = _member_units(mine), _member_units(theirs)
    ids_mine = [identity for _, identity in units_mine]
    ids_theirs = [identity for _, identity in units_theirs]
    if None in ids_mine or None in ids_theirs:
        return None
    pairs = _id_pairs(ids_mine, ids_theirs)
    if pairs is None:
        return None
    return _Pairing([(*units_mine[m][0], *units_theirs[t][0], 1) for m, t in pairs[0]],
                    [units_mine[m][0] for m in pairs[1]])


def _member_units(objects: list[object]) -> list[tuple[Unit, Any]]:
    """Each machine (a group's members one by one) with its id."""
    units: list[tuple[Unit, Any]] = []
    for obj in objects:
        if isinstance(obj, MachineGroup):
            ids = obj.member_values("id")
            units.extend(((obj, index), ids[index] if ids is not None else obj.template.id)
                         for index in range(obj.count))
        else:
            units.append(((obj, 0), getattr(obj, "id", None)))
    return units


def _in_order(mine: list[object], theirs: list[object]) -> Iterator[Segment]:
    """The objects paired in order, a machine group's members one to one with the other
    side's machines or members (as many on both sides)."""
    at_mine = at_theirs = 0
    offset_mine = offset_theirs = 0
    while at_mine < len(mine) and at_theirs < len(theirs):
        one, other = mine[at_mine], theirs[at_theirs]
        length = min(_units(one) - offset_mine, _units(other) - offset_theirs)
        yield one, offset_mine, other, offset_theirs, length
        offset_mine += length
        offset_theirs += length
        if offset_mine == _units(one):
            at_mine, offset_mine = at_mine + 1, 0
        if offset_theirs == _units(other):
            at_theirs, offset_theirs = at_theirs + 1, 0


@dataclass(frozen=True)
class _Bags:
    """One recording's bags at one path, found by object and member."""

    bags: dict[tuple[int, int | None], Bag]
    per_member: frozenset[int]
    """The objects with bags of their members' own values."""

    @staticmethod
    def at(recording: RecordingValues, path: str) -> _Bags:
        bags = recording.bags.get(path, {})
        return _Bags(bags, frozenset(key for key, member in bags if member is not None))

    def of(self, obj: object, member: int | None = None) -> Bag:
        return self.bags.get((id(obj), member)) or _EMPTY

    def unit(self, obj: object, member: int) -> Bag:
        """What one member has: the template's values and its own."""
        shared = self.of(obj)
        if id(obj) not in self.per_member:
            return shared
        return shared + self.of(obj, member)

    def all_of(self, obj: object) -> Bag:
        """Every value ``obj`` stands for (a group's template once per member)."""
        total: Bag = Counter({value: count * _units(obj) for value, count
                              in self.of(obj).items()})
        if id(obj) in self.per_member:
            for member in range(_units(obj)):
                total.update(self.of(obj, member))
        return total


_EMPTY: Bag = Counter()


def _bag_difference(mine: Bag, theirs: Bag) -> int:
    """How many values two bags do not share: the larger of what each has more of."""
    if mine == theirs:
        return 0
    return max(sum((mine - theirs).values()), sum((theirs - mine).values()))


def differing_values(original: Document, normalized: Document,
                     paths: Iterable[str]) -> dict[str, tuple[int, Place]]:
    """For each of ``paths``: how many values ``normalized`` (what a normal form makes of
    ``original``) does not have as ``original`` has them, and where the first of those is
    (a located object of ``original`` or its model pointer; ``None``: the normal form only
    added some).

    The two are compared object by object (``_pairing``: in order, or by id where the
    normal form leaves out or reorders tasks), each object's values at the path as a
    many-set (its extras' items, a machine's CPUs): a value changed counts once, and so
    does one the normal form fills in where the object had the default (a runtime for an
    unknown one), and each value of an object it leaves out. A machine group counts its
    template's values once per member, so grouped and expanded machines count the same;
    the count is a sum over objects, so the chunks of a streamed conversion add up to the
    whole file's. Where the objects cannot be paired, the values of the whole document are
    compared as many-sets."""
    wanted = frozenset(paths)
    differing: dict[str, tuple[int, Place]] = dict(_differing_in_columns(
        original, normalized, wanted))
    wanted -= differing.keys()
    if not wanted:
        return differing
    rows = any(path.startswith(("task", "job")) for path in wanted)
    before, after = (RecordingValues(frozenset(FIELDS), None, keep_foreign=True, wanted=wanted,
                                     rows=rows) for _ in range(2))
    _restrict(original, before)
    _restrict(normalized, after)
    mine, theirs = before.objects_by_kind(), after.objects_by_kind()
    position: dict[int, int] = {}
    for index, obj in enumerate(before.order):
        position.setdefault(id(obj), index)
    kinds = {id(obj): kind for recording in (mine, theirs)
             for kind, objects in recording.items() for obj in objects}
    pairings: dict[type, _Pairing | None] = {}
    for path in wanted:
        bags_mine, bags_theirs = _Bags.at(before, path), _Bags.at(after, path)
        count, first = 0, None
        for kind in {kinds[key] for bags in (bags_mine, bags_theirs) for key, _ in bags.bags}:
            if kind not in pairings:
                pairings[kind] = _pairing(kind, mine.get(kind, []), theirs.get(kind, []))
            pairing = pairings[kind]
            found = (_many_set_compared(mine.get(kind, []), theirs.get(kind, []), bags_mine,
                                        bags_theirs) if pairing is None
                     else _paired_compared(pairing, bags_mine, bags_theirs, position))
            count += found[0]
            if found[1] is not None and (first is None
                                         or _earlier(found[1], first, position)):
                first = found[1]
        differing[path] = (count, _unit_place(original, first))
    return differing


def _earlier(unit: Unit, other: Unit, position: Mapping[int, int]) -> bool:
    """Whether ``unit`` comes before ``other`` in the original's walk."""
    return (position[id(unit[0])], unit[1]) < (position[id(other[0])], other[1])


def _paired_compared(pairing: _Pairing, mine: _Bags, theirs: _Bags,
                     position: Mapping[int, int]) -> tuple[int, Unit | None]:
    """How many values the paired objects do not share, plus those of the objects left
    out, and the first of the original's objects with such a value."""
    count, first = 0, None
    for one, at_mine, other, at_theirs, length in pairing.segments:
        if id(one) not in mine.per_member and id(other) not in theirs.per_member:
            differ = _bag_difference(mine.of(one), theirs.of(other))
            count += differ * length
            if differ and first is None:
                first = (one, at_mine)
            continue
        for step in range(length):
            differ = _bag_difference(mine.unit(one, at_mine + step),
                                     theirs.unit(other, at_theirs + step))
            count += differ
            if differ and first is None:
                first = (one, at_mine + step)
    for obj, member in pairing.left:
        left = sum(mine.unit(obj, member).values())
        count += left
        if left and (first is None or _earlier((obj, member), first, position)):
            first = (obj, member)
    return count, first


def _many_set_compared(mine: list[object], theirs: list[object], bags_mine: _Bags,
                       bags_theirs: _Bags) -> tuple[int, Unit | None]:
    """The values of all objects of a kind as two many-sets: the larger of what each has
    more of, and the first object of the original with a value the normal form does not
    keep."""
    every_mine: Bag = Counter()
    for obj in mine:
        every_mine.update(bags_mine.all_of(obj))
    every_theirs: Bag = Counter()
    for obj in theirs:
        every_theirs.update(bags_theirs.all_of(obj))
    lost, added = every_mine - every_theirs, every_theirs - every_mine
    count = max(sum(lost.values()), sum(added.values()))
    for obj in mine:
        for member in range(_units(obj)):
            if any(value in lost for value in bags_mine.unit(obj, member)):
                return count, (obj, member)
            if id(obj) not in bags_mine.per_member:
                break  # (every member has the template's values)
    return count, None


def _unit_place(original: Document, unit: Unit | None) -> Place:
    """The place of one object: the located object, or for a group's member after the
    first the model pointer of its slot (slots count machines)."""
    if unit is None:
        return None
    obj, member = unit
    if not member:
        return obj
    pointer = pointers_of(original, [obj]).get(id(obj))
    if pointer is None:
        return obj
    rack, _, slot = pointer.rpartition("/slots/")
    return f"{rack}/slots/{int(slot) + member}"


def _differing_in_columns(original: Document, normalized: Document, wanted: frozenset[str]
                          ) -> Iterator[tuple[str, tuple[int, str | None]]]:
    """``differing_values`` of the task paths held as one array per row, where both
    workloads are columns: the same pairing (``_row_pairing``), compared column by
    column."""
    mine, theirs = columns_of(original.workload), columns_of(normalized.workload)
    if mine is None or theirs is None:
        return
    import numpy as np

    paired: Any = None
    for path in wanted & _COLUMN_VALUES.keys():
        before, after = _comparable(np, _COLUMN_VALUES[path](mine),
                                    _COLUMN_VALUES[path](theirs), _COLUMN_DEFAULTS[path])
        if paired is None:
            paired = _row_pairing(np, mine.ids, theirs.ids)
        if paired is False:
            count, lost = _many_set_difference(np, before, after)
            changed = np.isin(before, lost) & (before != _DEFAULT_CODE)
        else:
            rows = np.full(len(before), -1, dtype=np.int64)
            rows[paired] = np.arange(len(paired))
            kept = rows >= 0
            changed = np.ones(len(before), dtype=bool)
            changed[kept] = before[kept] != after[rows[kept]]
            changed[~kept] = before[~kept] != _DEFAULT_CODE  # left out: its own values
            count = int(changed.sum())  # (every row of the normal form is paired)
        first = int(np.argmax(changed)) if changed.any() else None
        yield path, (count, _row_pointer_of(mine, first) if first is not None else None)


def _row_pairing(np: Any, ids_mine: Any, ids_theirs: Any) -> Any:
    """``_pairing`` of rows: for each row of the normal form (in order, as many as are
    paired), the original's row it keeps; ``False``: compare as many-sets."""
    if len(ids_mine) == len(ids_theirs) and (
            ids_mine is ids_theirs or bool(np.array_equal(ids_mine, ids_theirs))):
        return np.arange(len(ids_mine))
    if ids_mine.dtype.kind != "O" and ids_theirs.dtype.kind != "O" \
            and all_distinct(ids_mine) and all_distinct(ids_theirs) \
            and all_found(ids_theirs, ids_mine):
        order = np.argsort(ids_mine, kind="stable")
        return order[np.searchsorted(ids_mine, ids_theirs, sorter=order)]
    if ids_mine.dtype.kind == "O" or ids_theirs.dtype.kind == "O":
        where = {identity: row for row, identity in enumerate(ids_mine.tolist())}
        listed = ids_theirs.tolist()
        if len(where) == len(ids_mine) and len(set(listed)) == len(listed) \
                and all(identity in where for identity in listed):
            return np.array([where[identity] for identity in listed], dtype=np.int64)
    if len(ids_mine) == len(ids_theirs):
        return np.arange(len(ids_mine))  # renumbered, in place
    return False


def _row_pointer_of(columns: WorkloadColumns, row: int) -> str:
    import numpy as np

    job = int(np.searchsorted(columns.job_offsets, row, side="right")) - 1
    return f"/workload/jobs/{job}/tasks/{row - int(columns.job_offsets[job])}"


_DEFAULT_CODE = -1
"""What ``_comparable`` makes of the model's default value of a column (``_COLUMN_DEFAULTS``):
a value no number or text code is."""


def _comparable(np: Any, before: Any, after: Any, default: Any) -> tuple[Any, Any]:
    """Two columns as arrays whose equal entries are equal values and whose default (the
    model's, ``default``: none is NaN or a text code -1) is ``_DEFAULT_CODE``: texts as codes
    of one table, numbers as their rank among the values of both."""
    if isinstance(before, (Strings, int)):  # (a text path: ``_texts``)
        table: dict[str, int] = {}
        return tuple(_codes_in(np, column, table) for column in (before, after))
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    values, codes = np.unique(np.concatenate([before, after]), return_inverse=True,
                              equal_nan=True)  # (NaN: none, one value)
    codes = codes.reshape(-1).astype(np.int64)
    is_default = np.isnan(values) if default is None else values == default
    codes = np.where(is_default[codes], _DEFAULT_CODE, codes)
    return codes[:len(before)], codes[len(before):]


def _codes_in(np: Any, column: Strings | int, table: dict[str, int]) -> Any:
    if isinstance(column, int):  # no column: every row has none
        return np.full(column, _DEFAULT_CODE, dtype=np.int64)
    assert isinstance(column, Strings)
    codes = np.array([table.setdefault(text, len(table)) for text in column.values]
                     + [_DEFAULT_CODE], dtype=np.int64)
    return codes[column.codes]


def _many_set_difference(np: Any, before: Any, after: Any) -> tuple[int, Any]:
    """How many values of the larger difference of the two many-sets (defaults left out),
    and the values ``before`` has more of than ``after``."""
    before, after = before[before != _DEFAULT_CODE], after[after != _DEFAULT_CODE]
    values, inverse = np.unique(np.concatenate([before, after]), return_inverse=True)
    inverse = inverse.reshape(-1)
    mine = np.bincount(inverse[:len(before)], minlength=len(values))
    theirs = np.bincount(inverse[len(before):], minlength=len(values))
    lost, added = np.maximum(mine - theirs, 0), np.maximum(theirs - mine, 0)
    return max(int(lost.sum()), int(added.sum())), values[lost > 0]


def _texts(name: str) -> Callable[[WorkloadColumns], Strings | int]:
    def column(columns: WorkloadColumns) -> Strings | int:
        texts = getattr(columns, name)
        return len(columns) if texts is None else texts
    return column


def _floats(name: str) -> Callable[[WorkloadColumns], Any]:
    return lambda columns: recorded_floats(columns, name)


_COLUMN_VALUES: dict[str, Callable[[WorkloadColumns], Any]] = {
    "task.submit_time_s": lambda columns: columns.submit_time_s,
    "task.runtime_s": lambda columns: columns.runtime_s,
    "task.requested_time_s": lambda columns: columns.requested_time_s,
    "task.deadline_s": lambda columns: columns.deadline_s,
    "task.request.nodes": lambda columns: columns.nodes,
    "task.request.cores": lambda columns: columns.cores,
    "task.request.memory_mb": lambda columns: columns.memory_mb,
    "task.request.gpus": lambda columns: columns.gpus,
    "task.request.placement": placements_of,
    "task.status": statuses_of,
    "task.user": lambda columns: columns.user,
    "task.group": lambda columns: columns.group,
    **{f"task.{name}": _floats(name) for name in RECORDED_FLOATS},
    **{f"task.{name}": _texts(name) for name in RECORDED_TEXTS},
}
"""The task paths whose values are one column entry per row (NaN or a code -1: none)."""

_COLUMN_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(_COLUMN_VALUES), "task.submit_time_s": 0.0, "task.request.nodes": 1,
    "task.request.cores": 1.0, "task.request.gpus": 0,
    "task.request.placement": PLACEMENTS.index(Placement.NODES),
    "task.status": STATUSES.index(TaskStatus.UNKNOWN)}
"""The model's default at each of ``_COLUMN_VALUES`` (as ``_task`` walks it), as a column
holds it (``None``: NaN, or no text)."""


@dataclass(frozen=True)
class _AddingOwnExtras(_Held):
    """Keeps everything and adds a ``prefix:``-key to the extras at ``add_at`` paths."""

    add_at: frozenset[str] = frozenset()

    def extras(self, path: str | None, extras: Extras) -> Extras:
        if path in self.add_at:
            return {**extras, f"{self.own_prefix}:own": 1}
        return extras


def with_own_extras(document: Document, prefix: str, paths: Iterable[str]) -> Document:
    """``document`` with a ``prefix:``-key in the extras at each of ``paths``: what a format
    that keeps data of its own there adds to a document."""
    return _restrict(document, _AddingOwnExtras(frozenset(FIELDS), prefix, keep_foreign=True,
                                                add_at=frozenset(paths)))


@dataclass(frozen=True)
class _FindingPrefixedExtras(_Held):
    """Keeps everything and records the paths whose extras have a ``prefix:``-key."""

    found: set[str | None] = field(default_factory=set)

    def extras(self, path: str | None, extras: Extras) -> Extras:
        own = f"{self.own_prefix}:"
        if any(key.startswith(own) for key in extras):
            self.found.add(path)
        return extras


def prefixed_extras_paths(document: Document, prefix: str) -> frozenset[str | None]:
    """The extras field paths where ``document`` has ``prefix:``-keys (``None``: the
    document's own extras)."""
    finder = _FindingPrefixedExtras(frozenset(FIELDS), prefix, keep_foreign=True)
    _restrict(document, finder)
    return frozenset(finder.found)


EXTRAS_PATHS = frozenset({
    "environment.extras", "environment.partitions", "datacenter.extras", "room.extras",
    "rack.extras", "machine.extras", "machine.resources", "machine.available",
    "machine.utilized", "task.request.resources",
    "environment.events.machine_state", "environment.events.scheduler", "workload.attributes",
    "workload.annotations", "workload.extras", "job.extras", "task.extras"})
"""Field paths that carry extras: a target that holds one still drops other formats'
prefixed keys there (``fmt:key`` belongs to ``fmt`` alone)."""


_WORKLOAD_ROOTS = ("workload", "job", "task")


LEFT_OUT = "task"
"""The field path of the tasks themselves: held by every format that holds a workload, and
dropped where a target's normal form leaves tasks out (``tasks_left_out``)."""


def with_parts(holds: Iterable[str]) -> frozenset[str]:
    """``holds`` plus the whole-part paths its fields imply: a format that holds any
    workload field holds ``workload`` (and its tasks, ``task``), and any other field
    ``environment``."""
    paths = frozenset(holds)
    parts = {_part(path) for path in paths}
    return paths | parts | ({LEFT_OUT} if "workload" in parts else set())


def tasks_left_out(original: Document, normalized: Document) -> tuple[int, str | None]:
    """How many tasks of ``original`` its normal form ``normalized`` leaves out, and the
    model pointer of the first: the first task whose id the normal form does not keep, or
    where it renumbers every task, the first whose place it changes."""
    if _task_count(normalized.workload) >= _task_count(original.workload):
        return 0, None  # (counted without a list of ids: a million-task trace keeps them all)
    given, kept = _task_ids(original.workload), _task_ids(normalized.workload)
    kept_ids = set(kept)
    row = next((row for row, task_id in enumerate(given) if task_id not in kept_ids), None)
    if row is None or not kept_ids <= set(given):
        return len(given) - len(kept), first_changed(original, normalized, Task)
    return len(given) - len(kept), _row_pointer(original.workload, row)


def _task_count(workload: Workload | None) -> int:
    if workload is None:
        return 0
    columns = columns_of(workload)
    return len(columns) if columns is not None else sum(len(job.tasks) for job in workload.jobs)


def _task_ids(workload: Workload | None) -> list[Id]:
    if workload is None:
        return []
    columns = columns_of(workload)
    if columns is not None:
        return list(columns.ids.tolist())
    return [task.id for job in workload.jobs for task in job.tasks]


def _row_pointer(workload: Workload | None, row: int) -> str:
    """The model pointer of the task of row ``row`` (in workload order)."""
    assert workload is not None
    columns = columns_of(workload)
    if columns is not None:
        import numpy as np

        at = int(np.searchsorted(columns.job_offsets, row, side="right")) - 1
        return f"/workload/jobs/{at}/tasks/{row - int(columns.job_offsets[at])}"
    for index, job in enumerate(workload.jobs):
        if row < len(job.tasks):
            return f"/workload/jobs/{index}/tasks/{row}"
        row -= len(job.tasks)
    raise IndexError(row)


def _part(path: str) -> str:
    return "workload" if path.split(".")[0] in _WORKLOAD_ROOTS else "environment"


def restrict(document: Document, holds: Iterable[str], own_prefix: str | None = None,
             target: object | None = None) -> Document:
    """``document`` as a format holding the field paths ``holds`` keeps it.

    ``own_prefix`` names the format whose ``name:``-prefixed extras survive (the format
    itself when restricting to its own ``holds``); every other prefixed key is dropped.
    ``target`` is the format declaration written to, whose ``normal_form`` (when it has one)
    applies first (see Value restrictions).
    """
    held = _Held(with_parts(holds), own_prefix,
                 prefixed_paths=with_parts(getattr(target, "holds", ()))
                 if keeps_prefixed_extras(target) else frozenset())
    unknown = held.paths - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown field paths: {', '.join(sorted(unknown))}")
    return _restrict(normalized_for(document, target), held)


def _restrict(document: Document, held: _Held) -> Document:
    environment, workload = document.environment, document.workload
    return Document(
        environment=(_environment(environment, held)
                     if environment is not None and "environment" in held else None),
        workload=_workload(workload, held) if workload is not None and "workload" in held else None,
        extras=held.extras(None, document.extras))


def keeps_prefixed_extras(target: object | None) -> bool:
    """Whether format declaration ``target`` keeps other formats' prefixed extras."""
    return bool(getattr(target, "keeps_prefixed_extras", False))


def normalized_for(document: Document, target: object | None) -> Document:
    """``document`` after the ``normal_form`` of format declaration ``target``, if it has
    one."""
    normal_form = getattr(target, "normal_form", None)
    return document if normal_form is None else normal_form(document)


# ------------------------------------------------------------------------------ ids and parts



def without_empty_parts(document: Document, holds: Iterable[str]) -> Document:
    """``document`` with each part that is empty for a format holding ``holds`` (see Empty
    parts) made absent."""
    empty = restrict(Document(environment=Environment(), workload=Workload()), holds)
    environment, workload = document.environment, document.workload
    if environment is not None and environment in (Environment(), empty.environment):
        environment = None
    if workload is not None and workload in (Workload(), empty.workload):
        workload = None
    return replace(document, environment=environment, workload=workload)


# ------------------------------------------------------------------------------ topology


def _environment(environment: Environment, held: _Held) -> Environment:
    held.at(environment)
    name = held.value("environment.name", environment.name)
    description = held.value("environment.description", environment.description)
    validity = held.value("environment.validity", environment.validity)
    extras = held.extras("environment.extras", environment.extras)
    # partitions are walked while the walk is at the environment: it has their place
    for partition in environment.partitions if held.sees else ():
        held.seen("environment.partitions", partition)
    partitions = tuple(_partition(partition, held) for partition in environment.partitions) \
        if held.has("environment.partitions", lambda: len(environment.partitions)) else ()
    datacenters = _flatten_hierarchy(environment.datacenters, held)
    datacenters = tuple(_datacenter(datacenter, held) for datacenter in datacenters)
    events = tuple(_event(event, held) for event in environment.events
                   if _event_held(event, held))
    return Environment(datacenters=datacenters, events=events, name=name,
                       description=description, extras=extras, partitions=partitions,
                       validity=validity)


def _partition(partition: Partition, held: _Held) -> Partition:
    extras = held.extras("environment.partitions", partition.extras)
    return partition if extras is partition.extras else replace(partition, extras=extras)


def _event_held(event: MachineStateChange | DatacenterSchedulerChange, held: _Held) -> bool:
    held.at(event)
    if held.sees:
        held.seen("environment.events.machine_state" if isinstance(event, MachineStateChange)
                  else "environment.events.scheduler", event)
    if isinstance(event, MachineStateChange):
        return held.has("environment.events.machine_state")
    return isinstance(event, DatacenterSchedulerChange) and held.has(
        "environment.events.scheduler")


def _flatten_hierarchy(datacenters: tuple[Datacenter, ...], held: _Held) -> tuple[Datacenter, ...]:
    """One container per parent for each level the format does not hold (see Hierarchy)."""
    if "datacenter" not in held:
        first = datacenters[0] if datacenters else Datacenter()
        datacenters = (replace(first, rooms=tuple(room for dc in datacenters
                                                  for room in dc.rooms)),)
    if "room" not in held:
        datacenters = tuple(replace(dc, rooms=(_one_room(dc.rooms),)) for dc in datacenters)
    if "rack" not in held:
        datacenters = tuple(
            replace(dc, rooms=tuple(replace(room, racks=(_one_rack(room.racks),))
                                    for room in dc.rooms))
            for dc in datacenters)
    return datacenters


def _one_room(rooms: tuple[Room, ...]) -> Room:
    first = rooms[0] if rooms else Room()
    return replace(first, type="SERVER", racks=tuple(rack for room in rooms for rack in room.racks))


def _one_rack(racks: tuple[Rack, ...]) -> Rack:
    first = racks[0] if racks else Rack()
    return replace(first, slots=concatenated_slots(racks))


def _datacenter(datacenter: Datacenter, held: _Held) -> Datacenter:
    held.at(datacenter)
    own = dict(
        id=held.value("datacenter.id", datacenter.id),
        name=held.value("datacenter.name", datacenter.name),
        location=held.value("datacenter.location", datacenter.location),
        operator=held.value("datacenter.operator", datacenter.operator),
        scheduler=held.value("datacenter.scheduler", datacenter.scheduler),
        extras=held.extras("datacenter.extras", datacenter.extras))
    return Datacenter(rooms=tuple(_room(room, held) for room in datacenter.rooms), **own)


def _room(room: Room, held: _Held) -> Room:
    held.at(room)
    own = dict(
        id=held.value("room.id", room.id),
        name=held.value("room.name", room.name),
        type=held.value("room.type", room.type, "SERVER"),
        location=held.value("room.geometry", room.location),
        size=held.value("room.geometry", room.size),
        extras=held.extras("room.extras", room.extras))
    return Room(racks=tuple(_rack(rack, held) for rack in room.racks), **own)


def _rack(rack: Rack, held: _Held) -> Rack:
    held.at(rack)
    if held.sees:
        held.seen("rack.empty_slots", _empty_slots(rack))
    keep_empty = held.has("rack.empty_slots", None in rack.slots)
    own = dict(
        id=held.value("rack.id", rack.id),
        name=held.value("rack.name", rack.name),
        capacity_units=held.value("rack.capacity_units", rack.capacity_units),
        power_capacity_w=held.value("rack.power_capacity_w", rack.power_capacity_w),
        extras=held.extras("rack.extras", rack.extras))

    def slot_machine(machine: Machine) -> Machine:
        held.at(machine)
        return _machine(machine, held)

    return Rack(slots=map_slots(rack.slots, slot_machine, lambda group: _group(group, held),
                                keep_empty), **own)


def _empty_slots(rack: Rack) -> tuple[int, ...]:
    """The positions of a rack's empty slots (slots count machines; groups unexpanded)."""
    empty, at = [], 0
    for part in slot_parts(rack.slots):
        if part is None:
            empty.append(at)
        at += part.count if isinstance(part, MachineGroup) else 1
    return tuple(empty)


def _group(group: MachineGroup, held: _Held) -> MachineGroup:
    """A machine group walked once: its template stands for every member."""
    held.at(group)
    with held.scaled(group.count):
        template = _machine(group.template, held)
    return held.build(
        MachineGroup, group, template=template, count=group.count,
        ids=held.members("machine.id", group.ids),
        names=held.members("machine.name", group.names),
        ranks=held.members("machine.rank", group.ranks))


def _machine(machine: Machine, held: _Held) -> Machine:
    if held.sees:
        _machine_seen(machine, held)
    cpus: tuple[ProcessingUnit, ...] = ()
    if held.has("machine.cpus", bool(machine.cpus)):
        cpus = machine.cpus
        if len(cpus) > 1 and not held.has("machine.cpus.sockets"):
            cpus = (replace(cpus[0], cores=machine.core_count,
                            clock_rate_hz=machine.clock_rate_hz),)
        cpus = tuple(_processing_unit(cpu, "cpu", held) for cpu in cpus)
    gpus: tuple[ProcessingUnit, ...] = ()
    if held.has("machine.gpus", bool(machine.gpus)):
        gpus = tuple(_processing_unit(gpu, "gpu", held) for gpu in machine.gpus)
    return held.build(
        Machine, machine,
        id=held.value("machine.id", machine.id),
        name=held.value("machine.name", machine.name),
        state=held.value("machine.state", machine.state, MachineState.ACTIVE),
        state_label=held.value("machine.state_label", machine.state_label),
        cpus=cpus, gpus=gpus,
        memory=_storage_units(machine.memory, "machine.memory", "machine.memory.modules",
                              "memory.details", held),
        storage=_storage_units(machine.storage, "machine.storage", "machine.storage.devices",
                               "storage.details", held),
        features=held.value("machine.features", machine.features, ()),
        resources=tuple(_resource(resource, "machine.resources", held)
                        for resource in held.value("machine.resources", machine.resources, ())),
        os=held.value("machine.os", machine.os),
        arch=held.value("machine.arch", machine.arch),
        description=held.value("machine.description", machine.description),
        swap_mb=held.value("machine.swap_mb", machine.swap_mb),
        network_mbit_s=held.value("machine.network_mbit_s", machine.network_mbit_s),
        rank=held.value("machine.rank", machine.rank),
        available=_consumables(machine.available, "machine.available", held),
        utilized=_consumables(machine.utilized, "machine.utilized", held),
        extras=held.extras("machine.extras", machine.extras))


def _machine_seen(machine: Machine, held: _Held) -> None:
    """A machine's values at the paths the walk asks only whether they are held."""
    for path, value in (("machine.cpus", machine.cpus), ("machine.cpus.sockets", len(machine.cpus)),
                        ("machine.gpus", machine.gpus), ("machine.memory", machine.memory),
                        ("machine.memory.modules", len(machine.memory)),
                        ("machine.storage", machine.storage),
                        ("machine.storage.devices", len(machine.storage)),
                        ("machine.available", machine.available),
                        ("machine.utilized", machine.utilized)):
        held.seen(path, value)


def _processing_unit(unit: ProcessingUnit, kind: Literal["cpu", "gpu"],
                     held: _Held) -> ProcessingUnit:
    if held.sees:
        held.seen(f"{kind}.vendor", (unit.manufacturer, unit.family, unit.generation,
                                     unit.model))
    if held.sees and kind == "gpu":
        held.seen("gpu.cores", unit.cores)
    vendor = held.has(f"{kind}.vendor", (unit.manufacturer, unit.family, unit.generation,
                                         unit.model) != (None, None, None, None))
    cores = unit.cores if kind == "cpu" or held.has("gpu.cores", unit.cores != 1) else 1
    return held.build(
        ProcessingUnit, unit,
        cores=cores,
        clock_rate_hz=held.value(f"{kind}.clock_rate_hz", unit.clock_rate_hz),
        id=held.value(f"{kind}.id", unit.id),
        manufacturer=unit.manufacturer if vendor else None,
        family=unit.family if vendor else None,
        generation=unit.generation if vendor else None,
        model=unit.model if vendor else None,
        energy_consumption_w=held.value(f"{kind}.energy_consumption_w",
                                        unit.energy_consumption_w),
        extras=held.extras("machine.extras", unit.extras))


def _storage_units(units: tuple[StorageUnit, ...], present: str, split: str, details: str,
                   held: _Held) -> tuple[StorageUnit, ...]:
    if not held.has(present, bool(units)):
        return ()
    for unit in units if held.sees else ():
        held.seen(details, unit)
    if len(units) > 1 and not held.has(split):
        units = (replace(units[0], capacity_mb=sum(unit.capacity_mb for unit in units)),)
    if held.has(details, lambda: sum(replace(unit, extras={}) != StorageUnit(unit.capacity_mb)
                                     for unit in units)):
        return tuple(replace(unit, extras=held.extras("machine.extras", unit.extras))
                     for unit in units)
    return tuple(StorageUnit(capacity_mb=unit.capacity_mb,
                             extras=held.extras("machine.extras", unit.extras))
                 for unit in units)


def _resource(resource: NamedResource, path: str, held: _Held) -> NamedResource:
    return replace(resource, extras=held.extras(path, resource.extras))


def _consumables(snapshot: Consumables | None, path: str, held: _Held) -> Consumables | None:
    if snapshot is None or not held.has(path):
        return None
    return replace(snapshot,
                   resources=tuple(_resource(r, path, held) for r in snapshot.resources),
                   extras=held.extras(path, snapshot.extras))


def _event(event: MachineStateChange | DatacenterSchedulerChange,
           held: _Held) -> MachineStateChange | DatacenterSchedulerChange:
    path = ("environment.events.machine_state" if isinstance(event, MachineStateChange)
            else "environment.events.scheduler")
    return replace(event, attributes=held.extras(path, event.attributes))


# ------------------------------------------------------------------------------ workload


def _workload(workload: Workload, held: _Held) -> Workload:
    jobs = workload.jobs
    if isinstance(held, RecordingUse) and columns_of(workload) is not None:
        return _recorded_columns(workload, held)
    held.at(workload)
    own = dict(
        name=held.value("workload.name", workload.name),
        description=held.value("workload.description", workload.description),
        time_origin=held.value("workload.time_origin", workload.time_origin),
        makespan_s=held.value("workload.makespan_s", workload.makespan_s),
        attributes=held.extras("workload.attributes", workload.attributes),
        extras=held.extras("workload.extras", workload.extras))
    annotations = _annotations(workload, held)
    if not held.walks_rows:
        for annotation in annotations:
            _annotation(annotation, held)
        return workload
    if not held.has("task.id", lambda: _numbering_changes(jobs),
                    lambda: _first_renumbered(jobs)):
        jobs = _renumber_tasks(jobs)
    if not held.has("job", lambda: sum(regrouped(job) for job in jobs),
                    lambda: _first_regrouped(jobs)):
        jobs = tuple(Job(id=task.id, tasks=(task,)) for job in jobs for task in job.tasks)
    elif not held.has("job.empty", lambda: sum(not job.tasks for job in jobs),
                      lambda: next(f"/workload/jobs/{j}" for j, job in enumerate(jobs)
                                   if not job.tasks)):
        jobs = tuple(job for job in jobs if job.tasks)
    return Workload(
        jobs=tuple(_job(job, held) for job in jobs),
        annotations=tuple(_annotation(annotation, held) for annotation in annotations), **own)


def _annotations(workload: Workload, held: _Held) -> tuple[Annotation, ...]:
    """The annotations, one value for ``workload.annotations`` (the first is where)."""
    for annotation in workload.annotations if held.sees else ():
        held.seen("workload.annotations", annotation)
    if held.has("workload.annotations", bool(workload.annotations),
                lambda: "/workload/annotations/0"):
        return workload.annotations
    return ()


def _annotation(annotation: Annotation, held: _Held) -> Annotation:
    held.at(annotation)
    return replace(annotation, extras=held.extras("workload.annotations", annotation.extras))


def regrouped(job: Job) -> bool:
    """Whether a job is not what a format without jobs makes of its tasks (a job of one task
    with that task's id and nothing else)."""
    return len(job.tasks) != 1 or job != Job(id=job.tasks[0].id, tasks=job.tasks)


def _first_regrouped(jobs: Sequence[Job]) -> str:
    """The first job leaving jobs out changes."""
    return next(f"/workload/jobs/{j}" for j, job in enumerate(jobs) if regrouped(job))


def _first_renumbered(jobs: Sequence[Job]) -> str:
    """The first task whose id or dependencies numbering the tasks changes."""
    numbers = _task_numbers(jobs)
    return next(f"/workload/jobs/{j}/tasks/{t}"
                for j, job in enumerate(jobs) for t, task in enumerate(job.tasks)
                if numbers[task.id] != task.id
                or any(numbers.get(dep, dep) != dep for dep in task.dependencies))


def _recorded_columns(workload: Workload, use: RecordingUse) -> Workload:
    """``_workload`` for a workload held as columns while recording use: the jobs and tasks
    are counted column by column (``dcx.core.columns.used_paths``); nothing is built, and a
    path's first row is found only when asked for (``_InColumns``)."""
    columns = columns_of(workload)
    assert columns is not None
    use.at(workload)
    use.value("workload.name", workload.name)
    use.value("workload.description", workload.description)
    use.value("workload.time_origin", workload.time_origin)
    use.value("workload.makespan_s", workload.makespan_s)
    use.extras("workload.attributes", workload.attributes)
    use.extras("workload.extras", workload.extras)
    annotations = _annotations(workload, use)
    used, foreign = used_paths(columns, use.own_prefix)
    for path, count in used.items():
        use._count(use.used, path, count, _InColumns(columns, use.own_prefix))
    for path, count in foreign.items():
        use._count(use.foreign, path, count, _InColumns(columns, use.own_prefix, True))
        use.first[path] = _InColumns(columns, use.own_prefix)  # the first of either kind
    for annotation in annotations:
        _annotation(annotation, use)
    return workload


@dataclass(frozen=True)
class _InColumns:
    """The first row of a columnar workload where a field path is used (with ``foreign``:
    where other formats' extras keys sit), found when a loss names it
    (``dcx.core.columns.first_used``)."""

    columns: WorkloadColumns
    own_prefix: str | None
    foreign: bool = False

    def pointer(self, path: str) -> str:
        return first_used(self.columns, path, self.own_prefix, self.foreign)


def _task_numbers(jobs: Sequence[Job]) -> dict[Id, int]:
    numbers: dict[Id, int] = {}
    for job in jobs:
        for task in job.tasks:
            numbers.setdefault(task.id, len(numbers) + 1)
    return numbers


def _numbering_changes(jobs: Sequence[Job]) -> int:
    """How many task ids numbering the tasks 1, 2, … changes (dependencies follow them)."""
    return sum(number != task_id for task_id, number in _task_numbers(jobs).items())


def _renumber_tasks(jobs: Sequence[Job]) -> tuple[Job, ...]:
    numbers = _task_numbers(jobs)
    return tuple(replace(job, tasks=tuple(
        replace(task, id=numbers[task.id],
                dependencies=tuple(numbers.get(dep, dep) for dep in task.dependencies))
        for task in job.tasks)) for job in jobs)


def _attribute(name: str) -> Callable[[Task], Any]:
    return lambda task: getattr(task, name)


def _job(job: Job, held: _Held) -> Job:
    held.at(job)
    if held.sees:
        held.seen("job", (job.id, tuple(task.id for task in job.tasks)))
        held.seen("job.empty", not job.tasks)
    name = held.value("job.name", job.name)
    user = held.value("job.user", job.user)
    extras = held.extras("job.extras", job.extras)
    if isinstance(held, RecordingValues) and held.task_values_only:
        for task in job.tasks:
            held.record_task(task)
        return job
    return held.build(Job, job, id=job.id, tasks=tuple(_task(task, held) for task in job.tasks),
                      name=name, user=user, extras=extras)


_TASK_VALUES: dict[str, tuple[Callable[[Task], Any], Any]] = {
    "task.submit_time_s": (lambda task: task.submit_time_s, 0.0),
    "task.runtime_s": (lambda task: task.runtime_s, None),
    "task.requested_time_s": (lambda task: task.requested_time_s, None),
    "task.request.nodes": (lambda task: task.request.nodes, 1),
    "task.request.cores": (lambda task: task.request.cores, 1.0),
    "task.request.memory_mb": (lambda task: task.request.memory_mb, None),
    "task.request.gpus": (lambda task: task.request.gpus, 0),
    "task.request.os": (lambda task: task.request.os, None),
    "task.request.arch": (lambda task: task.request.arch, None),
    "task.request.features": (lambda task: task.request.features, ()),
    "task.request.placement": (lambda task: task.request.placement, Placement.NODES),
    "task.deadline_s": (lambda task: task.deadline_s, None),
    "task.preemptible": (lambda task: task.preemptible, None),
    "task.user": (lambda task: task.user, None),
    "task.group": (lambda task: task.group, None),
    "task.status": (lambda task: task.status, TaskStatus.UNKNOWN),
    **{f"task.{name}": (_attribute(name), None) for name in (
        "wait_time_s", "used_memory_mb", "cpu_time_s", "application", "queue", "partition",
        "think_time_s")},
}
"""The task paths ``_task`` walks as one value of the task each, with its getter and the
model's default: what ``RecordingValues.record_task`` records without the walk (a
differential test holds the two together)."""


def _task(task: Task, held: _Held) -> Task:
    held.at(task)
    if held.sees:
        held.seen("task.id", (task.id, task.dependencies))
        held.seen("task.start", (task.start_mode, task.start_time_s))
        held.seen("task.dependencies.multiple", task.dependencies)
    request = task.request
    start_held = held.has("task.start", task.start_mode is not StartMode.ANY
                          or task.start_time_s is not None)
    return held.build(
        Task, task,
        id=task.id,
        submit_time_s=held.value("task.submit_time_s", task.submit_time_s, 0.0),
        runtime_s=held.value("task.runtime_s", task.runtime_s),
        requested_time_s=held.value("task.requested_time_s", task.requested_time_s),
        request=held.build(
            ResourceRequest, request,
            nodes=held.value("task.request.nodes", request.nodes, 1),
            cores=held.value("task.request.cores", request.cores, 1.0),
            memory_mb=held.value("task.request.memory_mb", request.memory_mb),
            gpus=held.value("task.request.gpus", request.gpus, 0),
            resources=tuple(_resource(r, "task.request.resources", held) for r in
                            held.value("task.request.resources", request.resources, ())),
            os=held.value("task.request.os", request.os),
            arch=held.value("task.request.arch", request.arch),
            features=held.value("task.request.features", request.features, ()),
            placement=held.value("task.request.placement", request.placement,
                                 Placement.NODES)),
        dependencies=held.value("task.dependencies", (
            task.dependencies
            if held.has("task.dependencies.multiple", len(task.dependencies) > 1)
            else task.dependencies[:1]), ()),
        deadline_s=held.value("task.deadline_s", task.deadline_s),
        start_mode=task.start_mode if start_held else StartMode.ANY,
        start_time_s=task.start_time_s if start_held else None,
        preemptible=held.value("task.preemptible", task.preemptible),
        user=held.value("task.user", task.user),
        group=held.value("task.group", task.group),
        image=held.value("task.image", task.image),
        image_size_mb=held.value("task.image", task.image_size_mb),
        status=held.value("task.status", task.status, TaskStatus.UNKNOWN),
        wait_time_s=held.value("task.wait_time_s", task.wait_time_s),
        used_memory_mb=held.value("task.used_memory_mb", task.used_memory_mb),
        cpu_time_s=held.value("task.cpu_time_s", task.cpu_time_s),
        application=held.value("task.application", task.application),
        queue=held.value("task.queue", task.queue),
        partition=held.value("task.partition", task.partition),
        think_time_s=held.value("task.think_time_s", task.think_time_s),
        extras=held.extras("task.extras", task.extras))


# ------------------------------------------------------------------------------ per document


_LEVELS = ("datacenter", "room", "rack")


def dropped_fields(document: Document, target_holds: Iterable[str],
                   own_prefix: str | None = None,
                   target: object | None = None,
                   normalized: Document | None = None) -> tuple[str, ...]:
    """The field paths of ``dropped_field_counts``, in ``FIELDS`` order."""
    return tuple(dropped_field_counts(document, target_holds, own_prefix, target, normalized))


def dropped_field_counts(document: Document, target_holds: Iterable[str],
                         own_prefix: str | None = None,
                         target: object | None = None,
                         normalized: Document | None = None) -> dict[str, int | None]:
    """The field paths of ``dropped_values``, each with how many values it drops."""
    return {path: dropped.count for path, dropped in dropped_values(
        document, target_holds, own_prefix, target, normalized).items()}


@dataclass(frozen=True)
class Dropped:
    """What a target drops of one field path: how many values (``None`` where a value
    restriction of the target says so without a count) and the model pointer
    (``dcx.core.located``) of the first one in document order, when there is one."""

    count: int | None
    first: str | None = None


def dropped_values(document: Document, target_holds: Iterable[str],
                   own_prefix: str | None = None,
                   target: object | None = None,
                   normalized: Document | None = None) -> dict[str, Dropped]:
    """The field paths a format holding ``target_holds`` actually drops from ``document``,
    in ``FIELDS`` order, each with how many values it drops and where the first one is:
    every conversion's losses and the loss matrix come from here.

    A path is dropped when leaving it out changes the document (what restricting to every
    other path gives), or when it carries other formats' prefixed extras, which only their
    own format keeps. A part (topology, workload) counts as dropped unless it is absent or
    empty (all defaults); a dropped part is reported alone, not with every field inside it.
    A hierarchy level counts as dropped only when some parent has several containers (or, for
    rooms, a room that is not a SERVER room): one container with default attributes is what
    formats without the level read back, and adding it loses nothing.
    ``target`` (a format declaration) adds its value restrictions (see Value restrictions),
    each counted by the values its normal form changes there (``differing_values``; no
    count where it changes none that a value shows: a regrouping of tasks into jobs);
    ``normalized``, when the caller has it, is ``document`` after the target's normal form.
    One walk of the document finds every used path and where it is first used
    (``RecordingUse``); the first dropped value is the first located object whose own
    values leaving the path out changes (``first_dropped_by_restriction``).
    """
    held = with_parts(target_holds)
    normal_form_losses = getattr(target, "normal_form_losses", None)
    restricted_values = set(normal_form_losses(document)) if normal_form_losses else set()
    original = document
    document = normalized if normalized is not None else normalized_for(document, target)
    use = recorded_use(document, own_prefix)
    # what a value restriction changes: the values the normal form does not keep as given
    changed_values = differing_values(original, document, restricted_values - {LEFT_OUT}) \
        if restricted_values else {}
    counts: dict[str, int | None] = {}
    places: dict[str, tuple[Place, Document]] = {}
    for path in FIELDS:
        if _part(path) in counts:
            continue  # a dropped part is one loss, not one per field inside it
        if path == LEFT_OUT:
            if path in held and document is not original:
                left, first = tasks_left_out(original, document)
                if left:
                    counts[path] = left
                    if first is not None:
                        places[path] = (first, original)
            continue
        if path in restricted_values:
            count, first_place = changed_values[path]
            counts[path] = count or None
            if first_place is not None:
                places[path] = (first_place, original)
            elif path.partition(".")[0] in _KIND_OF_PATH:
                changed = first_changed(original, document, _KIND_OF_PATH[path.partition(".")[0]])
                if changed is not None:
                    places[path] = (changed, original)
        elif path in held:
            if path in use.foreign and not keeps_prefixed_extras(target):
                counts[path] = use.foreign[path]  # held, but other formats' keys are dropped
                places[path] = (use.first_foreign[path], document)
        elif path in ("environment", "workload"):
            part = getattr(document, path)
            if part is not None and part != type(part)():  # an empty part carries nothing
                counts[path] = 1
                places[path] = (f"/{path}", document)
        elif path in _LEVELS:
            if _level_is_used(document, path):
                counts[path] = _containers(document, path)
                places[path] = (_first_container(document, path), document)
        elif path in use.used or path in use.foreign:
            counts[path] = use.used.get(path, 0) + use.foreign.get(path, 0)
            places[path] = (use.first[path], document)
    pointers = _pointers(places, original)
    return {path: Dropped(count, pointers.get(path)) for path, count in counts.items()}


_KIND_OF_PATH: dict[str, type] = {"datacenter": Datacenter, "room": Room, "rack": Rack,
                                  "machine": Machine, "job": Job, "task": Task}
"""The located object a field path's first word names: where a value restriction that
counts nothing (a regrouping of tasks into jobs) is found, as the first such object the
normal form changes."""


def _pointers(places: dict[str, tuple[Place, Document]],
              original: Document) -> dict[str, str]:
    """The model pointer of each path's place. A place in the normalized document names a
    pointer of the original only where the original has an object of the same kind there
    (a normal form that moves or leaves out objects has no pointer to give)."""
    pointers: dict[str, str] = {}
    for in_document in {id(document): document for _, document in places.values()}.values():
        mine = {path: place for path, (place, document) in places.items()
                if document is in_document}
        found = pointers_of(in_document, [place for place in mine.values()
                                          if not isinstance(place, (str, _InColumns))])
        for path, place in mine.items():
            pointer = (place if isinstance(place, str)
                       else place.pointer(path) if isinstance(place, _InColumns)
                       else found.get(id(place)))
            if pointer is not None:
                pointers[path] = pointer
        if in_document is not original:
            moved = {pointer for path, pointer in pointers.items() if path in mine}
            theirs, ours = _kinds_at(original, moved), _kinds_at(in_document, moved)
            elsewhere = [path for path in mine if path in pointers
                         and not _same_object(theirs.get(pointers[path]), ours[pointers[path]])]
            # where the object is not found in the original, one of its kind at the same
            # place is the best answer there is (a normal form that renumbers ids)
            same_kind = {path: pointers.pop(path) for path in elsewhere
                         if _same_kind(theirs.get(pointers[path]), ours[pointers[path]])}
            kinds = {path: ours[pointers[path]] for path in elsewhere if path in pointers}
            for path in elsewhere:
                pointers.pop(path, None)
            pointers.update(_unchanged_objects(original, {
                path: mine[path] for path in elsewhere
                if not isinstance(mine[path], (str, _InColumns))}))
            # where the original has no object of its kind at the place (a normal form that
            # leaves objects out moved it), the original's first one of its kind and id: a
            # row of columns, or a value of an object that has no id (a task's request)
            for path in elsewhere:
                if path not in pointers and path not in same_kind and path in kinds:
                    with_id = _with_id(original, kinds[path])
                    if with_id is not None:
                        pointers[path] = with_id
            for path, pointer in same_kind.items():
                if path not in pointers:  # (a place given as a pointer or a row)
                    pointer = _with_id(original, ours[pointer]) or pointer
                pointers.setdefault(path, pointer)
    return pointers


def _with_id(original: Document, kind: _Kind) -> str | None:
    """The pointer of the original's first job or task of ``kind``'s type and id (one the
    normal form moved), if it has one."""
    if kind[1] is None or kind[0] not in (Job, Task):
        return None
    workload = original.workload
    columns = columns_of(workload) if workload is not None else None
    if columns is None:
        return next((pointer for pointer, obj in located_objects(original)
                     if type(obj) is kind[0] and obj.id == kind[1]), None)
    import numpy as np

    ids = columns.job_ids if kind[0] is Job else columns.ids
    try:
        rows = np.flatnonzero(ids == kind[1])
    except (TypeError, ValueError):
        return None
    if not len(rows):
        return None
    row = int(rows[0])
    if kind[0] is Job:
        return f"/workload/jobs/{row}"
    job = int(np.searchsorted(columns.job_offsets, row, side="right")) - 1
    return f"/workload/jobs/{job}/tasks/{row - int(columns.job_offsets[job])}"


_Kind = tuple[type, Any]
"""A located object's type and its id (``None``: it has none, or is a group's member)."""


def _same_kind(theirs: _Kind | None, ours: _Kind) -> bool:
    return theirs is not None and theirs[0] is ours[0]


def _same_object(theirs: _Kind | None, ours: _Kind) -> bool:
    """Whether the original's object at a pointer is the normalized document's there: of
    its kind and with its id (a normal form that leaves out a task moves the next ones to
    its place, objects of the same kind with other ids)."""
    return _same_kind(theirs, ours) and (theirs is None or theirs[1] is None
                                         or ours[1] is None or theirs[1] == ours[1])


def _unchanged_objects(original: Document, places: dict[str, Place]) -> dict[str, str]:
    """The pointers in ``original`` of objects a normal form moved (a machine after an
    empty slot the target does not hold): the same object, or failing that the one of the
    same kind and id (a normal form may rebuild what it moves)."""
    if not places:
        return {}
    found = pointers_of(original, places.values())
    keys = {path: _object_key(place) for path, place in places.items()}
    by_id: dict[tuple[type, Any], list[str]] = {}
    for path, place in places.items():
        if id(place) not in found and keys[path][1] is not None:
            by_id.setdefault(keys[path], []).append(path)  # (several paths, one object)
    pointers = {path: found[id(place)] for path, place in places.items() if id(place) in found}
    if by_id:
        for pointer, obj in located_objects(original):
            for path in by_id.pop(_object_key(obj), ()):
                pointers[path] = pointer
            if not by_id:
                break
    return pointers


def _kinds_at(document: Document, pointers: set[str]) -> dict[str, _Kind]:
    """The type and id of the located object of ``document`` at each of ``pointers`` it
    has (a slot a group's member fills: that member's id, as when the group is expanded)."""
    kinds: dict[str, _Kind] = {}
    for pointer in pointers:
        kind = located_kind(document, pointer)
        if kind is not None:
            found = located_at(document, pointer)
            kinds[pointer] = (kind, _member_id_at(document, pointer) if kind is Machine
                              and (found is None or isinstance(found, MachineGroup))
                              else getattr(found, "id", None))
    return kinds


def _member_id_at(document: Document, pointer: str) -> Id | None:
    """The id of the group's member that fills the slot at ``pointer``."""
    rack_pointer, _, slot = pointer.rpartition("/slots/")
    rack = located_at(document, rack_pointer)
    start = 0
    for part in slot_parts(getattr(rack, "slots", ())):
        count = part.count if isinstance(part, MachineGroup) else 1
        if isinstance(part, MachineGroup) and start <= int(slot) < start + count:
            return _group_member_id(part, int(slot) - start)
        start += count
    return None


def _group_member_id(group: MachineGroup, member: int) -> Id | None:
    ids = group.member_values("id")
    return ids[member] if ids is not None else group.template.id


def _object_key(obj: object) -> tuple[type, Any]:
    """A located object's kind and id (a group: a machine's, and its first member's id)."""
    if isinstance(obj, MachineGroup):
        return Machine, _group_member_id(obj, 0)
    return type(obj), getattr(obj, "id", None)


def _first_container(document: Document, level: str) -> str:
    """The model pointer of the first container of a hierarchy level."""
    return next(pointer for pointer, obj in located_objects(document)
                if type(obj).__name__ == level.capitalize())


def recorded_use(document: Document, own_prefix: str | None) -> RecordingUse:
    """Which field paths ``document`` uses and how many values each (``RecordingUse``), in
    one walk; ``own_prefix``: the target's extras prefix, whose keys are not foreign."""
    use = RecordingUse(frozenset(FIELDS), own_prefix, keep_foreign=True)
    _restrict(document, use)
    return use


@dataclass(frozen=True)
class _DroppedKeys(_Held):
    """Keeps everything and counts, at each extras path, what the keys a target drops hold:
    ``kept`` is the target's rule, ``describe`` labels one value (``dropped_extras``)."""

    kept: _Held = field(default_factory=lambda: _Held(frozenset(), None))
    describe: Callable[[str, str, Any], Mapping[str, int]] = lambda path, key, value: {}
    found: dict[str, dict[str, Counter[str]]] = field(default_factory=dict)
    scale: list[int] = field(default_factory=lambda: [1])

    @contextmanager
    def scaled(self, count: int) -> Iterator[None]:
        with _multiplied(self.scale, count):
            yield

    def extras(self, path: str | None, extras: Extras) -> Extras:
        if path is None or not extras:
            return extras
        kept = self.kept.extras(path, extras)
        for key, value in extras.items():
            if key not in kept:
                counts = self.found.setdefault(path, {}).setdefault(key, Counter())
                for label, number in self.describe(path, key, value).items():
                    counts[label] += number * self.scale[-1]
        return extras


def dropped_extras(document: Document, target_holds: Iterable[str], own_prefix: str | None,
                   describe: Callable[[str, str, Any], Mapping[str, int]],
                   keeps_prefixed: bool = False) -> dict[str, dict[str, Counter[str]]]:
    """The topology's extras keys a format holding ``target_holds`` drops, by extras path
    and key, each with what its values hold as ``describe`` labels and counts them (a
    machine group's values counted once per member). ``keeps_prefixed``: the target keeps
    every format's keys where it holds the path (``keeps_prefixed_extras``)."""
    held = with_parts(target_holds)
    kept = _Held(held, own_prefix, prefixed_paths=EXTRAS_PATHS & held if keeps_prefixed
                 else frozenset())
    walker = _DroppedKeys(frozenset(FIELDS), None, keep_foreign=True, kept=kept,
                          describe=describe)
    if document.environment is not None:
        _environment(document.environment, walker)
    return walker.found


def dropped_fields_by_restriction(document: Document, target_holds: Iterable[str],
                   own_prefix: str | None = None,
                   target: object | None = None) -> tuple[str, ...]:
    """``dropped_fields`` by its definition: restricting the document once per field path and
    comparing. The specification ``dropped_fields`` is tested against; it costs a walk of the
    document per path.

    A part (topology, workload) counts as dropped unless it is absent or empty (all defaults);
    a dropped part is reported alone, not with every field inside it.
    A hierarchy level counts as dropped only when some parent has several containers (or, for
    rooms, a room that is not a SERVER room): one container with default attributes is what
    formats without the level read back, and adding it loses nothing.
    ``target`` (a format declaration) adds its value restrictions (see Value restrictions).
    """
    held = with_parts(target_holds)
    normal_form_losses = getattr(target, "normal_form_losses", None)
    restricted_values = set(normal_form_losses(document)) if normal_form_losses else set()
    original = document
    document = normalized_for(document, target)
    all_paths = frozenset(FIELDS)
    everything = _restrict(document, _Held(all_paths, own_prefix, keep_foreign=True))

    def drops(path: str) -> bool:
        kept = all_paths if path in held else all_paths - {path}
        return _restrict(document, _Held(kept, own_prefix, keep_foreign=True,
                                         foreign_dropped_at=path)) != everything

    dropped: list[str] = []
    for path in FIELDS:
        if _part(path) in dropped:
            continue  # a dropped part is one loss, not one per field inside it
        if path == LEFT_OUT:
            if path in held and tasks_left_out(original, document)[0]:
                dropped.append(path)
        elif path in restricted_values:
            dropped.append(path)
        elif path in held:
            if path in EXTRAS_PATHS and not keeps_prefixed_extras(target) and drops(path):
                dropped.append(path)  # held, but other formats' keys there are dropped
        elif path in ("environment", "workload"):
            part = getattr(document, path)
            if part is not None and part != type(part)():  # an empty part carries nothing
                dropped.append(path)
        elif path in _LEVELS:
            if _level_is_used(document, path):
                dropped.append(path)
        elif drops(path):
            dropped.append(path)
    return tuple(dropped)


def first_dropped_by_restriction(document: Document, target_holds: Iterable[str],
                                 own_prefix: str | None = None,
                                 target: object | None = None) -> dict[str, str | None]:
    """Where the first dropped value of each path ``dropped_fields_by_restriction`` finds
    is, by definition: the first located object (``dcx.core.located``), in document order,
    whose own values restricting the document without the path changes. A part is its own
    place and a hierarchy level its first container; a value restriction of the target
    (``None``) has no restriction to compare with. The specification ``dropped_values``'s
    first pointers are tested against."""
    held = with_parts(target_holds)
    normal_form_losses = getattr(target, "normal_form_losses", None)
    restricted_values = set(normal_form_losses(document)) if normal_form_losses else set()
    normalized = normalized_for(document, target)
    all_paths = frozenset(FIELDS)
    everything = _restrict(normalized, _Held(all_paths, own_prefix, keep_foreign=True))
    firsts: dict[str, str | None] = {}
    for path in dropped_fields_by_restriction(document, target_holds, own_prefix, target):
        if path == LEFT_OUT:
            firsts[path] = tasks_left_out(document, normalized)[1]
        elif path in restricted_values:
            firsts[path] = None
        elif path in ("environment", "workload"):
            firsts[path] = f"/{path}"
        elif path in _LEVELS:
            firsts[path] = _first_container(normalized, path)
        else:
            kept = all_paths if path in held else all_paths - {path}
            firsts[path] = first_difference(everything, _restrict(normalized, _Held(
                kept, own_prefix, keep_foreign=True, foreign_dropped_at=path)))
    return firsts


def _containers(document: Document, level: str) -> int:
    """How many containers of a hierarchy level the document has."""
    environment = document.environment
    if environment is None:
        return 0
    if level == "datacenter":
        return len(environment.datacenters)
    rooms = [room for dc in environment.datacenters for room in dc.rooms]
    return len(rooms) if level == "room" else sum(len(room.racks) for room in rooms)


def _level_is_used(document: Document, level: str) -> bool:
    environment = document.environment
    if environment is None:
        return False
    if level == "datacenter":
        return len(environment.datacenters) > 1
    if level == "room":
        return any(len(dc.rooms) > 1 or any(room.type != "SERVER" for room in dc.rooms)
                   for dc in environment.datacenters)
    return any(len(room.racks) > 1 for dc in environment.datacenters for room in dc.rooms)


def conversion_losses(document: Document, target: FormatDeclaration,
                      normalized: Document | None = None) -> tuple[Loss, ...]:
    """The field paths ``target`` drops from ``document``, in ``FIELDS`` order, each with its
    meaning and the model pointer of its first dropped value (a dropped part is one loss,
    not one per field inside it). ``normalized`` is ``document`` after the target's normal
    form, when the caller has it already."""
    dropped = dropped_values(document, target.holds, target.name, target, normalized)
    return tuple(Loss(path, value.count, FIELDS[path], value.first)
                 for path, value in dropped.items())
