"""Facts a target needs that the source does not state, given by the user:
``dcx convert --fill FIELD=VALUE``.

Environment JSON needs a clock rate for every CPU; Flux R, JGF and Slurm state none, so their
machines cannot be written there until someone says what it is. A Batsim job runs a compute
profile (flops) rather than a runtime, so SWF has no runtime to write for it, and SWF -> Batsim
leaves out a job without one. A fill is a model transform made before the conversion's checks:
it puts the value into every machine (or CPU), or every task, of the document that lacks it
and leaves every value the source states alone. Machine groups stay groups: a fill changes a
group's template, so a million-rank Flux R allocation is filled in one step and written as one
definition.

Fields (a small vocabulary; units are required, so a value is never read in the wrong one):

* ``clock-rate``: each CPU without a clock rate; ``Hz``, ``kHz``, ``MHz`` or ``GHz``.
* ``gpu-clock-rate``: each GPU without a clock rate; the same units.
* ``memory``: each machine without memory; ``MiB``, ``GiB`` or ``TiB`` (the model's MB is
  2**20 bytes).
* ``cores``: each machine without a CPU gets one CPU of that many cores; a whole number, no
  unit (Slurm needs a CPU count for every node: without one, Slurm counts 1).
* ``speed``: each task without a runtime whose format states its work (a Batsim compute
  profile: ``FormatDeclaration.runtimes_at_speed``) gets the runtime that work takes on hosts
  of that speed, in SimGrid's units (``f``, ``kf``, ``Mf``, ``Gf``, ``Tf`` … flop/s per host,
  case sensitive: ``dcx.core.units``), where the format's semantics make it exact (Batsim: no
  network traffic, no trace replayed); the others keep none, and the summary says how many
  and why.
* ``runtime``: ``runtime=requested``, each task without a runtime but with a requested time
  (a walltime) gets that time as its runtime (after ``speed``, whichever comes first on the
  command line).

The summary says how many machines or tasks each fill filled. Where a target leaves out tasks
that have no runtime, the conversion hints at the two task fields (``left_out_hint``,
``tasks_refused_hint``); where it keeps runtimes but not the work a ``speed`` would make one
of (Batsim -> SWF), it says how many tasks that is (``work_hint``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Loss
from dcx.core.groups import MachineGroup, map_slots, part_count, slot_parts
from dcx.core.model import (
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    StorageUnit,
    Task,
    Workload,
    build,
)
from dcx.core.units import SPEED, SPEED_UNITS

_Model = TypeVar("_Model", Machine, ProcessingUnit)

TaskRuntime = Callable[[Task], float | str | None]
"""A task's runtime from a fill, why it gets none (a reason), or ``None``: nothing to say."""


class FillError(ValueError):
    """A ``--fill`` the command line cannot use; the message is one line for the user."""


@dataclass(frozen=True)
class FillField:
    name: str
    units: dict[str, float]
    """Unit (lower case; SimGrid's case-sensitive units for a speed) → factor to the model's
    unit."""
    model_unit: str
    fill: Callable[[Machine, float], Machine | None] | None
    """The machine with the value filled in, or ``None`` when it lacks nothing (a machine
    field)."""
    example: str
    """A value as a user writes it."""
    whole: bool = False
    """A count: a whole number, without a unit."""
    part: Literal["machine", "task"] = "machine"
    """What it fills: machines, or the tasks of a workload."""
    words: tuple[str, ...] = ()
    """The values it takes as a word instead of a number (``runtime=requested``)."""


def _rated(units: tuple[ProcessingUnit, ...], hz: float) -> tuple[ProcessingUnit, ...] | None:
    """``units`` with ``hz`` where a unit has no clock rate; ``None`` when none lacks one."""
    if not any(unit.clock_rate_hz is None for unit in units):
        return None
    return tuple(_changed(unit, clock_rate_hz=hz) if unit.clock_rate_hz is None else unit
                 for unit in units)


def _changed(value: _Model, **fields: Any) -> _Model:
    """``dataclasses.replace`` for a model dataclass, at ``build``'s speed (a Slurm node
    holds a unit per CPU: a large cluster makes millions of them)."""
    return build(type(value), {**value.__dict__, **fields})


def _with_clock_rate(machine: Machine, hz: float) -> Machine | None:
    cpus = _rated(machine.cpus, hz)
    return None if cpus is None else _changed(machine, cpus=cpus)


def _with_gpu_clock_rate(machine: Machine, hz: float) -> Machine | None:
    gpus = _rated(machine.gpus, hz)
    return None if gpus is None else _changed(machine, gpus=gpus)


def _with_memory(machine: Machine, mb: float) -> Machine | None:
    if machine.memory:
        return None
    return _changed(machine, memory=(StorageUnit(capacity_mb=mb),))


def _with_cores(machine: Machine, cores: float) -> Machine | None:
    if machine.cpus:
        return None
    return _changed(machine, cpus=(ProcessingUnit(cores=int(cores)),))


FIELDS: dict[str, FillField] = {
    # first: a CPU it adds may then lack a clock rate (a hint names both)
    "cores": FillField("cores", {"": 1.0}, "cores", _with_cores, "32", whole=True),
    "clock-rate": FillField("clock-rate", {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9},
                            "Hz", _with_clock_rate, "2.4GHz"),
    "gpu-clock-rate": FillField("gpu-clock-rate", {"hz": 1.0, "khz": 1e3, "mhz": 1e6,
                                                    "ghz": 1e9}, "Hz", _with_gpu_clock_rate,
                                "1.4GHz"),
    "memory": FillField("memory", {"mib": 1.0, "gib": 1024.0, "tib": 1024.0 ** 2},
                        "MB", _with_memory, "64GiB"),
    # before runtime: a runtime the work gives is exact, a requested time only a bound
    "speed": FillField("speed", SPEED_UNITS, "flop/s", None, "1Gf", part="task"),
    "runtime": FillField("runtime", {}, "s", None, "requested", part="task",
                         words=("requested",)),
}

_UNIT_NAMES = {"hz": "Hz", "khz": "kHz", "mhz": "MHz", "ghz": "GHz", "mib": "MiB",
               "gib": "GiB", "tib": "TiB"}
_VALUE = re.compile(r"\s*((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*")


@dataclass(frozen=True)
class Fill:
    """One ``--fill``: ``value`` in the model's unit of ``field`` (or the word it was given,
    ``requested``); ``text`` as reported."""

    field: str
    value: float | str
    text: str

    def apply(self, machine: Machine) -> Machine | None:
        fill = FIELDS[self.field].fill
        assert fill is not None and not isinstance(self.value, str), self.field
        return fill(machine, self.value)

    @property
    def part(self) -> str:
        return FIELDS[self.field].part


@dataclass(frozen=True)
class Filled:
    """What a fill changed: how many machines or tasks got its value, and (a task field)
    how many tasks it could not give one, by why."""

    fill: Fill
    machines: int = 0
    tasks: int = 0
    not_filled: tuple[tuple[str, int], ...] = ()
    """Tasks it leaves without a value: why, and how many (most first)."""

    @property
    def count(self) -> int:
        return self.tasks if self.fill.part == "task" else self.machines

    def render(self) -> str:
        noun = self.fill.part + ("" if self.count == 1 else "s")
        said = f"filled {self.fill.field}={self.fill.text} into {self.count:,} {noun}"
        if not self.not_filled:
            return said
        left = sum(count for _, count in self.not_filled)
        why = ", ".join(f"{count:,} with {reason}" for reason, count in self.not_filled)
        return (f"{said}, not into {left:,} whose work gives no exact runtime ({why})")

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"field": self.fill.field, "value": self.fill.value,
                                 "text": self.fill.text, f"{self.fill.part}s": self.count}
        if self.not_filled:
            entry["not_filled"] = dict(self.not_filled)
        return entry


def parse_fill(text: str) -> Fill:
    """``FIELD=VALUE`` (``clock-rate=2.4GHz``, ``memory=64GiB``, ``speed=1Gf``,
    ``runtime=requested``) as a fill, or ``FillError`` saying what is wrong."""
    known = ", ".join(FIELDS)
    name, equals, given = text.partition("=")
    name = name.strip()
    if not equals:
        raise FillError(f"--fill {text!r}: expected FIELD=VALUE with FIELD one of {known}")
    spec = FIELDS.get(name)
    if spec is None:
        raise FillError(f"--fill {text!r}: unknown field {name!r}; fields are {known}")
    if spec.words:
        word = given.strip()
        if word not in spec.words:
            raise FillError(f"--fill {text!r}: {name} takes the word "
                            f"{' or '.join(spec.words)}, as {name}={spec.example} (each task "
                            "without a runtime runs for its requested time)")
        return Fill(name, word, word)
    if spec.units is SPEED_UNITS:
        return _speed_fill(text, spec)
    units = ", ".join(_UNIT_NAMES.get(unit, unit) for unit in spec.units)
    match = _VALUE.fullmatch(given)
    if spec.whole and (match is None or match.group(2) or not match.group(1).isdigit()):
        raise FillError(f"--fill {text!r}: {name} takes a positive whole number without a "
                        f"unit, such as {name}={spec.example}")
    if match is None or match.group(2).lower() not in spec.units:
        raise FillError(f"--fill {text!r}: {name} takes a positive number with a unit "
                        f"({units}), such as {name}={spec.example}")
    number = float(match.group(1))
    unit = match.group(2).lower()
    value = number * spec.units[unit]
    if not (value > 0 and math.isfinite(value)):
        raise FillError(f"--fill {text!r}: {name} must be positive and finite")
    shown = _shown(number)
    if spec.whole:
        return Fill(name, value, shown)
    return Fill(name, value, f"{shown} {_UNIT_NAMES[unit]}")


def _shown(number: float) -> str:
    return str(int(number)) if number.is_integer() and number < 1e15 else repr(number)


def _speed_fill(text: str, spec: FillField) -> Fill:
    """A speed in SimGrid's units (``dcx.core.units``: case sensitive, as SimGrid reads a
    host's ``speed``), which the fill requires."""
    match = SPEED.fullmatch(text.partition("=")[2])
    if match is None or match.group(2) not in SPEED_UNITS or match.group(1).startswith(
            ("-", "+")):
        raise FillError(f"--fill {text!r}: {spec.name} takes a positive number of flop/s per "
                        "host with one of SimGrid's units (f, kf, Mf, Gf, Tf …; case "
                        f"matters), such as {spec.name}={spec.example}")
    number = float(match.group(1))
    value = number * SPEED_UNITS[match.group(2)]
    if not (value > 0 and math.isfinite(value)):
        raise FillError(f"--fill {text!r}: {spec.name} must be positive and finite")
    return Fill(spec.name, value, f"{_shown(number)} {match.group(2)}")


def apply_fills(document: Document, fills: Sequence[Fill],
                formats: Iterable[FormatDeclaration] = ()
                ) -> tuple[Document, tuple[Filled, ...]]:
    """``document`` with each fill's value in every machine or task that lacks it, and what
    each fill changed (groups counted by their members, never expanded), in the order the
    fills are given. They apply in ``FIELDS`` order (a CPU ``cores`` adds gets a clock rate,
    a runtime ``speed`` gives is not a requested time). ``formats``: the formats whose
    ``runtimes_at_speed`` a ``speed`` fill asks."""
    done: dict[int, Filled] = {}
    order = sorted(range(len(fills)), key=lambda index: list(FIELDS).index(fills[index].field))
    for index in order:
        fill = fills[index]
        if fill.part == "task":
            document, done[index] = _filled_tasks(document, fill, formats)
        elif document.environment is None:
            done[index] = Filled(fill)
        else:
            environment, machines = _filled(document.environment, fill)
            document = replace(document, environment=environment)
            done[index] = Filled(fill, machines=machines)
    return document, tuple(done[index] for index in range(len(fills)))


def _filled_tasks(document: Document, fill: Fill, formats: Iterable[FormatDeclaration]
                  ) -> tuple[Document, Filled]:
    workload = document.workload
    if workload is None:
        return document, Filled(fill)
    if fill.field == "runtime":
        runtime_of: TaskRuntime | None = _requested_time
        columns = _runtimes_requested_as_columns(workload)
        if columns is not None:
            filled_workload, count = columns
            return replace(document, workload=filled_workload), Filled(fill, tasks=count)
    else:
        assert not isinstance(fill.value, str)
        runtime_of = _runtime_at_speed(workload, fill.value, formats)
    if runtime_of is None:
        return document, Filled(fill)
    jobs, count, reasons = _with_runtimes(workload, runtime_of)
    if not count:
        return document, Filled(fill, not_filled=reasons)
    return (replace(document, workload=replace(workload, jobs=jobs)),
            Filled(fill, tasks=count, not_filled=reasons))


def _requested_time(task: Task) -> float | None:
    requested = task.requested_time_s
    return requested if requested is not None and math.isfinite(requested) else None


def _runtimes_requested_as_columns(workload: Workload) -> tuple[Workload, int] | None:
    """``runtime=requested`` over a columnar workload (a trace of millions of jobs), column
    by column: ``None`` for a workload of objects."""
    from dcx.core.columns import columnar, columns_of

    columns = columns_of(workload)
    if columns is None:
        return None
    import numpy as np

    lacking = np.isnan(columns.runtime_s) & np.isfinite(columns.requested_time_s)
    count = int(lacking.sum())
    if not count:
        return workload, 0
    runtimes = np.where(lacking, columns.requested_time_s, columns.runtime_s)
    return columnar(workload, replace(columns, runtime_s=runtimes)), count


def _runtime_at_speed(workload: Workload, speed: float,
                      formats: Iterable[FormatDeclaration]) -> TaskRuntime | None:
    """What gives a task its runtime at ``speed`` from the work a format states, asking each
    format that can in turn (a task names the work of one format at most)."""
    asked = [found for spec in formats if spec.runtimes_at_speed is not None
             and (found := spec.runtimes_at_speed(workload, speed)) is not None]
    if not asked:
        return None

    def runtime_of(task: Task) -> float | str | None:
        for ask in asked:
            runtime = ask(task)
            if runtime is not None:
                return runtime
        return None

    return runtime_of


def _with_runtimes(workload: Workload, runtime_of: TaskRuntime
                   ) -> tuple[tuple[Any, ...], int, tuple[tuple[str, int], ...]]:
    """The jobs with a runtime in each task that has none and ``runtime_of`` gives one (a
    job whose tasks all keep theirs is the same object), how many tasks got one, and why
    the others ``runtime_of`` speaks of got none."""
    count = 0
    reasons: Counter[str] = Counter()
    jobs = []
    for job in workload.jobs:
        tasks = []
        for task in job.tasks:
            runtime = runtime_of(task) if task.runtime_s is None else None
            if isinstance(runtime, str):
                reasons[runtime] += 1
            elif runtime is not None:
                task = replace(task, runtime_s=runtime)
                count += 1
            tasks.append(task)
        same = all(new is old for new, old in zip(tasks, job.tasks, strict=True))
        jobs.append(job if same else replace(job, tasks=tuple(tasks)))
    return tuple(jobs), count, tuple(reasons.most_common())


def work_hint(document: Document, target: FormatDeclaration,
              formats: Iterable[FormatDeclaration]) -> str | None:
    """What a conversion says of the tasks without a runtime whose format states their work
    (a Batsim compute profile) in a way ``--fill speed`` makes exact, when ``target`` keeps
    runtimes but not that work (SWF writes -1): how many, and the fill."""
    workload = document.workload
    if workload is None or "task.runtime_s" not in target.holds:
        return None
    owners = [spec for spec in formats if spec.runtimes_at_speed is not None
              and spec.runtimes_at_speed(workload, 1.0) is not None]
    if not owners or target.name in {spec.name for spec in owners}:  # (it runs the work)
        return None
    runtime_of = _runtime_at_speed(workload, 1.0, owners)
    assert runtime_of is not None
    count = sum(1 for task in workload.tasks()
                if task.runtime_s is None and isinstance(runtime_of(task), float))
    if not count:
        return None
    noun = "task" if count == 1 else "tasks"
    return (f"{target.name} gets no runtime for {count:,} {noun} whose {owners[0].name} "
            f"profile states work, not time; --fill speed={FIELDS['speed'].example} gives "
            "each the runtime of that work on hosts of that speed")


def _task_fills_said() -> str:
    return (f"one without a runtime is kept with --fill runtime={FIELDS['runtime'].example} "
            "(its requested time as its runtime) or, when its Batsim profile states its work, "
            f"--fill speed={FIELDS['speed'].example} (that work's runtime on hosts of that "
            "speed)")


def tasks_refused_hint(target: FormatDeclaration) -> str | None:
    """The hint of a conversion ``target`` refuses for keeping none of the tasks, when it
    keeps a task's runtime (the same in chunks: it names no count)."""
    if "task.runtime_s" not in target.holds:
        return None
    return f"{target.name} keeps no task; {_task_fills_said()}"


def left_out_hint(losses: Iterable[Loss], target: FormatDeclaration) -> str | None:
    """What a conversion that leaves tasks out says of the task fields (``runtime``,
    ``speed``), when ``target`` keeps a task's runtime: from the losses alone, so that a
    conversion made a chunk at a time says it as the whole-file one does."""
    from dcx.core.restrict import LEFT_OUT

    left = next((loss.count for loss in losses if loss.field == LEFT_OUT), None)
    if not left or "task.runtime_s" not in target.holds:
        return None
    noun = "task" if left == 1 else "tasks"
    return f"{target.name} leaves out {left:,} {noun}; {_task_fills_said()}"


def _filled(environment: Environment, fill: Fill) -> tuple[Environment, int]:
    changed = 0
    # machines of one kind share their unit tuples: fill each tuple once, and give the
    # machines that share it one filled tuple
    done: dict[tuple[int, int, int], tuple[Machine, Machine | None]] = {}

    def machine(single: Machine) -> Machine:
        nonlocal changed
        key = (id(single.cpus), id(single.gpus), id(single.memory))
        seen = done.get(key)
        if seen is None:
            seen = done[key] = (single, fill.apply(single))
        sample, filled = seen
        if filled is None:
            return single
        changed += 1
        if sample is single:
            return filled
        return _changed(single, cpus=filled.cpus, gpus=filled.gpus, memory=filled.memory)

    def group(members: MachineGroup) -> MachineGroup:
        nonlocal changed
        filled = fill.apply(members.template)
        if filled is None:
            return members
        changed += part_count(members)
        return replace(members, template=filled)

    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(
            rack if not any(part is not None for part in slot_parts(rack.slots))
            else replace(rack, slots=map_slots(rack.slots, machine, group))
            for rack in room.racks))
        for room in datacenter.rooms)) for datacenter in environment.datacenters)
    if not changed:
        return environment, 0
    return replace(environment, datacenters=datacenters), changed
