"""The experiment file: YAML or JSON (``schemas/experiment.schema.json``) naming workloads,
environments, parameters, schedulers, time models, seeds and options; its cells are their
Cartesian product less the exclusions.

Every error is one diagnostic located in the file (a misspelt key at that key, with the
nearest known key; a misspelt scheduler or an exclusion naming nothing the experiment has,
at that value, with the nearest name).

A deterministic scheduler runs once per (workload, environment, time model), its seed
``None``, unless ``options.repeat_deterministic`` asks for one run per seed; a randomised
one (RANDOM) runs once per seed. A reserving scheduler (EASY, conservative backfilling) runs
under the ``event`` time model only: its ``sc18`` cells are left out with one warning.
"""

from __future__ import annotations

import difflib
import itertools
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dcx.core.codes import Code
from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.experiments.limits import Limits, parse_duration, parse_size
from dcx.scheduler.policies import Policy

SCHEMA = "experiment.schema.json"
OWN_MACHINES = "own"
"""The environment entry that stands for the workload's own machines."""
DEFAULT_TIME_MODEL = "event"

CODES = (
    Code("experiment.unreadable", "error", "The experiment file cannot be read."),
    Code("experiment.yaml-syntax", "error",
         "The experiment file is not YAML (the message is the parser's)."),
    Code("experiment.yaml-feature", "error",
         "The YAML uses something an experiment file does not accept: anchors and aliases, "
         "tags, merge keys, non-string keys, non-finite numbers."),
    Code("experiment.variable", "error",
         "A path names an environment variable that is not set and has no default."),
    Code("experiment.duplicate-name", "error",
         "Two workloads, environments or schedulers of the experiment have the same name."),
    Code("experiment.unknown-scheduler", "error", "A scheduler name is not one dcx knows."),
    Code("experiment.scheduler-file", "error",
         "A scheduler file is not a valid scheduler declaration."),
    Code("experiment.event-only", "warning",
         "Reserving schedulers run under the event time model only; their sc18 cells are "
         "left out."),
    Code("experiment.no-cells", "error", "The exclusions leave no cell to run."),
    Code("experiment.unknown-key", "error",
         "A key the experiment file does not have (often a misspelt one; the message names "
         "the nearest)."),
    Code("experiment.seeds-and-repeat", "error",
         "Both seeds and repeat are given; they say the same thing two ways."),
    Code("experiment.unknown-parameter", "error",
         "A parameter is neither a workload transform's nor a numeric option of the "
         "schedulers."),
    Code("experiment.parameter-value", "error",
         "A parameter value is not one the parameter takes, or two parameters that set the "
         "same thing are swept together."),
    Code("experiment.exclude-unknown", "error",
         "An exclusion names a workload, environment, scheduler, time model, seed or "
         "parameter value the experiment does not have, so it would leave out nothing."),
    Code("experiment.limit", "error", "A timeout or memory limit is not one dcx reads."),
    Code("experiment.input-unreadable", "error",
         "A workload or environment file the experiment names cannot be read; its cells "
         "are not run."),
)

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class Input:
    """A workload or environment file, as the experiment names it."""

    name: str
    path: Path | None
    """``None``: the workload's own machines (environments only)."""
    pointer: str
    line: int | None = None
    column: int | None = None
    """Where the experiment file names it."""


@dataclass(frozen=True)
class Scheduler:
    name: str
    policy: Policy
    source: str
    """The name as written, or the scheduler file's path."""


@dataclass(frozen=True)
class Options:
    repeat_deterministic: bool = False
    measure_stages: bool = False
    per_job: bool = False
    schedules: bool = False
    """Record each cell's schedule (``DIR/schedules/``) and draw its Gantt chart."""

    def as_dict(self) -> dict[str, bool]:
        """The options that go into a cell's key; ``schedules`` only when on, so that the
        keys of sweeps without it stay put (a sweep that records schedules runs its cells
        again, and each stored row then has its schedule)."""
        found = {"repeat_deterministic": self.repeat_deterministic,
                 "measure_stages": self.measure_stages, "per_job": self.per_job}
        if self.schedules:
            found["schedules"] = True
        return found


Parameters = tuple[tuple[str, Any], ...]
"""A cell's parameter values, in the experiment's order of parameters."""


@dataclass(frozen=True)
class Cell:
    """One run: what the results table has a row for."""

    workload: Input
    environment: Input
    scheduler: Scheduler
    time_model: str
    seed: int | None
    repetition: int
    """Index of the seed among the experiment's seeds (0 for a single deterministic run)."""
    parameters: Parameters = ()


@dataclass(frozen=True)
class Experiment:
    name: str
    path: Path
    workloads: tuple[Input, ...]
    environments: tuple[Input, ...]
    schedulers: tuple[Scheduler, ...]
    time_models: tuple[str, ...]
    seeds: tuple[int, ...]
    options: Options
    exclude: tuple[dict[str, tuple[Any, ...]], ...] = field(default=())
    parameters: tuple[tuple[str, tuple[Any, ...]], ...] = field(default=())
    """Each parameter's name and values, in file order."""
    limits: Limits = field(default=Limits())

    def parameter_values(self) -> list[Parameters]:
        """Every combination of the parameters' values (one empty one without any)."""
        names = [name for name, _ in self.parameters]
        return [tuple(zip(names, combination, strict=True))
                for combination in itertools.product(*(values for _, values in self.parameters))]

    def cells(self) -> Iterator[Cell]:
        """The product, in file order (workload major, then environment, parameters,
        scheduler, time model, seed), less exclusions and the sc18 cells of reserving
        schedulers."""
        for workload, environment, parameters, scheduler, model in itertools.product(
                self.workloads, self.environments, self.parameter_values(), self.schedulers,
                self.time_models):
            if scheduler.policy.reserves and model != "event":
                continue
            seeded = scheduler.policy.is_random or self.options.repeat_deterministic
            runs: list[tuple[int | None, int]] = (
                [(seed, index) for index, seed in enumerate(self.seeds)] if seeded
                else [(None, 0)])
            for seed, repetition in runs:
                cell = Cell(workload, environment, scheduler, model, seed, repetition,
                            parameters)
                if not any(_matches(rule, cell) for rule in self.exclude):
                    yield cell


def _matches(rule: dict[str, tuple[Any, ...]], cell: Cell) -> bool:
    values = {"workload": cell.workload.name, "environment": cell.environment.name,
              "scheduler": cell.scheduler.name, "time_model": cell.time_model,
              "seed": cell.seed, **dict(cell.parameters)}
    return all(values.get(key) in wanted for key, wanted in rule.items())


# ----------------------------------------------------------------------------- loading


def decode(data: bytes, path: Path) -> tuple[Any, Any, list[Diagnostic]]:
    """``(value, locator with .place(), diagnostics)``: JSON for ``.json``, YAML otherwise."""
    if path.suffix.lower() == ".json":
        from dcx.parsing.jsonio import load_json

        decoded, problems = load_json(data)
        return (None, None, problems) if decoded is None else (
            decoded.value, decoded.locator, problems)
    from dcx.experiments.yamlfile import load_yaml

    loaded, problems = load_yaml(data)
    return (None, None, problems) if loaded is None else (loaded.value, loaded, problems)


def expand_path(text: str, folder: Path, pointer: str) -> tuple[Path | None, Diagnostic | None]:
    """``${NAME}`` / ``${NAME:-default}`` replaced, ``~`` expanded, relative to ``folder``."""
    missing: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        value = os.environ.get(match.group(1))
        if value:
            return value
        if match.group(2) is not None:
            return match.group(2)
        missing.append(match.group(1))
        return ""

    expanded = _VARIABLE.sub(substitute, text)
    if missing:
        return None, error(f"environment variable {missing[0]} is not set (write "
                           f"${{{missing[0]}:-default}} to give a default)",
                           "experiment.variable", pointer=pointer)
    path = Path(expanded).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else folder / path)), None


def _inputs(values: list[Any], folder: Path, base: str, found: list[Diagnostic],
            where: Any) -> tuple[Input, ...]:
    inputs: list[Input] = []
    for index, item in enumerate(values):
        pointer = f"{base}/{index}"
        line, column = _position(where, pointer)
        text = item if isinstance(item, str) else item["path"]
        if text == OWN_MACHINES and base == "/environments":
            inputs.append(Input(item["name"] if isinstance(item, dict) else OWN_MACHINES,
                                None, pointer, line, column))
            continue
        path, problem = expand_path(text, folder, pointer if isinstance(item, str)
                                    else f"{pointer}/path")
        if problem is not None:
            found.append(problem)
            continue
        assert path is not None
        name = item.get("name", path.name) if isinstance(item, dict) else path.name
        inputs.append(Input(name, path, pointer, line, column))
    _unique([(item.name, item.pointer) for item in inputs], base[1:-1], found)
    return tuple(inputs)


def _position(where: Any, pointer: str) -> tuple[int | None, int | None]:
    """Where ``pointer`` is in the experiment file (``YamlText`` or ``JsonLocator``)."""
    line, column = where.locate(pointer)
    return line, column


def _unique(named: list[tuple[str, str]], what: str, found: list[Diagnostic]) -> None:
    seen: set[str] = set()
    for name, pointer in named:
        if name in seen:
            found.append(error(f"two {what}s are named {name!r}; give one a name: of its "
                               "own", "experiment.duplicate-name", pointer=pointer))
        seen.add(name)


def did_you_mean(word: str, known: Iterable[str], *, upper: bool = False) -> str:
    """`` (did you mean X?)`` for the nearest of ``known``, or nothing."""
    candidates = {name.upper() if upper else name: name for name in known}
    close = difflib.get_close_matches(word.upper() if upper else word, list(candidates),
                                      n=1, cutoff=0.6)
    return f" (did you mean {candidates[close[0]]}?)" if close else ""


def _named_scheduler(name: str) -> Scheduler:
    """A policy name (``SRTF-BESTFIT``), or the name a scheduler shipped with dcx declares
    (``FCFS-EASY-MATCH``); ``ValueError`` with the nearest name when neither."""
    from dcx.scheduler.declaration import shipped_declarations
    from dcx.scheduler.policies import parse_policy

    try:
        policy = parse_policy(name)
    except ValueError as exc:
        shipped = shipped_declarations()
        by_upper = {key.upper(): (key, declared) for key, declared in shipped.items()}
        found = by_upper.get(name.strip().upper())
        if found is None:
            hint = did_you_mean(name.strip(), shipped, upper=True)
            raise ValueError(f"unknown scheduler {name!r}{hint}; a scheduler is T2-R5 (the "
                             "SC18 scheduler), T2[-EASY|-CONSERVATIVE][-R5], a scheduler "
                             f"shipped with dcx ({', '.join(sorted(shipped))}) or "
                             "{file: PATH}") from exc
        return Scheduler(found[0], found[1], name)
    return Scheduler(policy.name, policy, name)


def _schedulers(values: list[Any], folder: Path,
                found: list[Diagnostic]) -> tuple[Scheduler, ...]:
    from dcx.scheduler.declaration import load_declaration

    chosen: list[Scheduler] = []
    for index, item in enumerate(values):
        pointer = f"/schedulers/{index}"
        if isinstance(item, str):
            try:
                chosen.append(_named_scheduler(item))
            except ValueError as exc:
                found.append(error(str(exc), "experiment.unknown-scheduler", pointer=pointer))
            continue
        path, problem = expand_path(item["file"], folder, f"{pointer}/file")
        if problem is not None:
            found.append(problem)
            continue
        assert path is not None
        declared, problems = load_declaration(path)
        if declared is None and problems and problems[0].code == "scheduler.unreadable":
            found.append(error(f"scheduler file {item['file']}: {problems[0].message}",
                               "experiment.scheduler-file", pointer=f"{pointer}/file"))
            continue
        found.extend(problems)  # located in the scheduler file itself
        if declared is None:
            found.append(error(f"{path} is not a valid scheduler declaration",
                               "experiment.scheduler-file", pointer=f"{pointer}/file"))
            continue
        chosen.append(Scheduler(_declared_name(path, declared), declared, str(path)))
    _unique([(item.name, f"/schedulers/{index}") for index, item in enumerate(chosen)],
            "scheduler", found)
    return tuple(chosen)


def _declared_name(path: Path, policy: Policy) -> str:
    from dcx.parsing.jsonio import load_json

    decoded, _ = load_json(path.read_bytes())
    value = decoded.value if decoded is not None else None
    return str(value["name"]) if isinstance(value, dict) else policy.name


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, list) else (value,)


# ---------------------------------------------------------------------- unknown keys


def _object_members(schema: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """The keys each kind of object in the file may have, read from the schema: by a
    pattern of its pointer (``*`` any index)."""
    properties = schema["properties"]
    defs = schema["$defs"]

    def keys(branches: list[dict[str, Any]]) -> tuple[str, ...]:
        return next(tuple(b["properties"]) for b in branches if b.get("type") == "object")

    return {
        "": tuple(properties),
        "/options": tuple(properties["options"]["properties"]),
        "/workloads/*": keys(defs["input"]["oneOf"]),
        "/environments/*": keys(defs["input"]["oneOf"]),
        "/schedulers/*": keys(properties["schedulers"]["items"]["oneOf"]),
    }


def _unknown_keys(value: Any) -> list[Diagnostic]:
    """A key the file may not have, at that key, with the nearest known one (the schema's
    ``additionalProperties`` error would name the object that holds it)."""
    from dcx.parsing.jsonio import escape_pointer_token
    from dcx.parsing.schemas import load_schema

    found: list[Diagnostic] = []
    for pattern, allowed in _object_members(load_schema(SCHEMA)).items():
        for pointer, member in _objects_at(value, pattern):
            for key in member:
                if key not in allowed:
                    what = "an experiment file" if not pointer else f"{pointer}"
                    found.append(error(
                        f"unknown key {key!r}{did_you_mean(key, allowed)}; {what} has "
                        f"{', '.join(allowed)}", "experiment.unknown-key",
                        pointer=f"{pointer}/{escape_pointer_token(key)}"))
    return found


def _objects_at(value: Any, pattern: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not pattern:
        if isinstance(value, dict):
            yield "", value
        return
    head, *rest = pattern[1:].split("/", 1)
    tail = "/" + rest[0] if rest else ""
    if head == "*":
        if isinstance(value, list):
            for index, item in enumerate(value):
                for pointer, found in _objects_at(item, tail):
                    yield f"/{index}{pointer}", found
    elif isinstance(value, dict) and head in value:
        for pointer, found in _objects_at(value[head], tail):
            yield f"/{head}{pointer}", found


# ------------------------------------------------------------------- parameters


def _parameters(value: dict[str, list[Any]], schedulers: tuple[Scheduler, ...],
                found: list[Diagnostic]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    from dcx.experiments.transforms import EXCLUSIVE, WORKLOAD_PARAMETERS, scheduler_options

    options: dict[str, type] = {}
    for scheduler in schedulers:
        options.update(scheduler_options(type(scheduler.policy)))
    known = [*WORKLOAD_PARAMETERS, *options]
    chosen: list[tuple[str, tuple[Any, ...]]] = []
    for name, values in value.items():
        pointer = f"/parameters/{name}"
        parameter = WORKLOAD_PARAMETERS.get(name)
        if parameter is None and name not in options:
            found.append(error(
                f"unknown parameter {name!r}{did_you_mean(name, known)}; the parameters are "
                f"the workload transforms' ({', '.join(WORKLOAD_PARAMETERS)})"
                + (f" and the schedulers' options ({', '.join(options)})" if options else
                   "; these schedulers declare no numeric option"),
                "experiment.unknown-parameter", pointer=pointer))
            continue
        bad = False
        for index, item in enumerate(values):
            problem = (parameter.problem(item) if parameter is not None
                       else _option_problem(name, options[name], item))
            if problem is not None:
                found.append(error(problem, "experiment.parameter-value",
                                   pointer=f"{pointer}/{index}"))
                bad = True
        if not bad:
            chosen.append((name, tuple(dict.fromkeys(values))))
    names = {name for name, _ in chosen}
    for group in EXCLUSIVE:
        both = [name for name in group if name in names]
        if len(both) > 1:
            found.append(error(f"{' and '.join(both)} both set the submit times; sweep one of "
                               "them", "experiment.parameter-value",
                               pointer=f"/parameters/{both[-1]}"))
    return tuple(chosen)


def _option_problem(name: str, kind: type, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            kind is int and not float(value).is_integer()):
        return f"{name} takes {'an integer' if kind is int else 'a number'}, not {value!r}"
    return None


# -------------------------------------------------------------------- exclusions


def _exclusions(rules: list[dict[str, Any]], experiment: Experiment,
                found: list[Diagnostic]) -> tuple[dict[str, tuple[Any, ...]], ...]:
    """Each rule with its values checked against what the experiment has (a value naming
    nothing would silently exclude nothing); scheduler names as the cells name them."""
    schedulers = {s.name.upper(): s.name for s in experiment.schedulers}
    schedulers.update({s.source.upper(): s.name for s in experiment.schedulers})
    axes: dict[str, dict[Any, Any]] = {
        "workload": {item.name: item.name for item in experiment.workloads},
        "environment": {item.name: item.name for item in experiment.environments},
        "scheduler": schedulers,
        "time_model": {model: model for model in experiment.time_models},
        "seed": {seed: seed for seed in experiment.seeds},
        **{name: {value: value for value in values} for name, values in experiment.parameters},
    }
    checked: list[dict[str, tuple[Any, ...]]] = []
    for index, rule in enumerate(rules):
        entry: dict[str, tuple[Any, ...]] = {}
        for key, wanted in rule.items():
            pointer = f"/exclude/{index}/{key}"
            known = axes.get(key)
            if known is None:
                found.append(error(
                    f"unknown key {key!r}{did_you_mean(key, axes)}; an exclusion names "
                    f"{', '.join(axes)}", "experiment.unknown-key", pointer=pointer))
                continue
            matched = []
            for position, item in enumerate(_as_tuple(wanted)):
                lookup = item.upper() if key == "scheduler" and isinstance(item, str) else item
                if key == "seed" and not experiment.seeds:
                    matched.append(item)
                    continue
                if lookup not in known:
                    where = pointer + (f"/{position}" if isinstance(wanted, list) else "")
                    names = [str(name) for name in dict.fromkeys(known.values())]
                    hint = did_you_mean(str(item), names, upper=key == "scheduler")
                    found.append(error(
                        f"exclude names {key.replace('_', ' ')} {item!r}{hint}, which the "
                        f"experiment does not have ({', '.join(names)})",
                        "experiment.exclude-unknown", pointer=where))
                    continue
                matched.append(known[lookup])
            entry[key] = tuple(matched)
        checked.append(entry)
    return tuple(checked)


# ----------------------------------------------------------------------- loading


def _limits(value: dict[str, Any], found: list[Diagnostic]) -> Limits:
    timeout_s = memory = None
    try:
        if "timeout" in value:
            timeout_s = parse_duration(value["timeout"])
    except ValueError as exc:
        found.append(error(str(exc), "experiment.limit", pointer="/timeout"))
    try:
        if "memory" in value:
            memory = parse_size(value["memory"])
    except ValueError as exc:
        found.append(error(str(exc), "experiment.limit", pointer="/memory"))
    return Limits(timeout_s, memory)


def _place(where: Any, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Line and column from the file's locator; a misspelt key at the key itself."""
    from dcx.experiments.yamlfile import YamlText

    if isinstance(where, YamlText):
        return where.place(diagnostics)
    return list(where.place(diagnostics, key_codes=frozenset({"experiment.unknown-key"})))


def load_experiment(path: Path) -> tuple[Experiment | None, list[Diagnostic]]:
    """Read, validate and resolve one experiment file; diagnostics located in it (those
    of a scheduler file it names are located in that file)."""
    from dcx.parsing.schemas import schema_diagnostics

    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, [error(f"cannot read file: {exc.strerror or type(exc).__name__}",
                            "experiment.unreadable").at(str(path))]
    value, locator, problems = decode(data, path)
    if value is None:
        return None, [d.at(str(path)) for d in problems]
    found = _unknown_keys(value)
    if isinstance(value, dict) and "seeds" in value and "repeat" in value:
        found.append(error("give seeds or repeat, not both (repeat: N is seeds 0 … N−1)",
                           "experiment.seeds-and-repeat", pointer="/repeat"))
    found += [d for d in schema_diagnostics(SCHEMA, value)
              if not (d.code == "schema.additionalProperties" and _unknown_keys(value))]
    if found:
        return None, [d.at(str(path)) for d in _place(locator, found)]

    folder = path.parent
    own: list[Diagnostic] = []
    workloads = _inputs(value["workloads"], folder, "/workloads", own, locator)
    environments = _inputs(value.get("environments", [OWN_MACHINES]), folder,
                           "/environments", own, locator)
    schedulers = _schedulers(value["schedulers"], folder, own)
    options = Options(**value.get("options", {}))
    seeds = tuple(value["seeds"]) if "seeds" in value else tuple(range(value.get("repeat", 1)))
    experiment = Experiment(
        name=value.get("name", path.name.split(".")[0]),
        path=path,
        workloads=workloads,
        environments=environments,
        schedulers=schedulers,
        time_models=tuple(dict.fromkeys(value.get("time_models", [DEFAULT_TIME_MODEL]))),
        seeds=tuple(dict.fromkeys(seeds)),
        options=options,
        parameters=_parameters(value.get("parameters", {}), schedulers, own),
        limits=_limits(value, own),
    )
    experiment = replace(experiment, exclude=_exclusions(value.get("exclude", []),
                                                         experiment, own))
    reserving = [s.name for s in schedulers if s.policy.reserves]
    if reserving and "sc18" in experiment.time_models:
        own.append(warning(f"{', '.join(reserving)} run(s) under the event time model only; "
                           "their sc18 cells are left out", "experiment.event-only",
                           pointer="/time_models"))
    if not any(d.is_error for d in own) and next(experiment.cells(), None) is None:
        own.append(error("the exclusions leave no cell to run", "experiment.no-cells",
                         pointer="/exclude" if experiment.exclude else ""))
    located = _place(locator, [d for d in own if d.path is None])
    diagnostics = [*(d.at(str(path)) for d in located), *(d for d in own if d.path)]
    if any(d.is_error for d in diagnostics):
        return None, diagnostics
    return experiment, diagnostics
