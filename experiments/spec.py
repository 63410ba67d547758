"""The experiment file: YAML or JSON (``schemas/experiment.schema.json``) naming workloads,
environments, schedulers, time models, seeds and options; its cells are their Cartesian
product less the exclusions.

A deterministic scheduler runs once per (workload, environment, time model), its seed
``None``, unless ``options.repeat_deterministic`` asks for one run per seed; a randomised
one (RANDOM) runs once per seed. A reserving scheduler (EASY, conservative backfilling) runs
under the ``event`` time model only: its ``sc18`` cells are left out with one warning.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcx.core.codes import Code
from dcx.core.diagnostics import Diagnostic, error, warning
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
)

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class Input:
    """A workload or environment file, as the experiment names it."""

    name: str
    path: Path | None
    """``None``: the workload's own machines (environments only)."""
    pointer: str


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

    def as_dict(self) -> dict[str, bool]:
        return {"repeat_deterministic": self.repeat_deterministic,
                "measure_stages": self.measure_stages, "per_job": self.per_job}


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

    def cells(self) -> Iterator[Cell]:
        """The product, in file order (workload major), less exclusions and the sc18 cells
        of reserving schedulers."""
        for workload, environment, scheduler, model in itertools.product(
                self.workloads, self.environments, self.schedulers, self.time_models):
            if scheduler.policy.reserves and model != "event":
                continue
            seeded = scheduler.policy.is_random or self.options.repeat_deterministic
            runs: list[tuple[int | None, int]] = (
                [(seed, index) for index, seed in enumerate(self.seeds)] if seeded
                else [(None, 0)])
            for seed, repetition in runs:
                cell = Cell(workload, environment, scheduler, model, seed, repetition)
                if not any(_matches(rule, cell) for rule in self.exclude):
                    yield cell


def _matches(rule: dict[str, tuple[Any, ...]], cell: Cell) -> bool:
    values = {"workload": cell.workload.name, "environment": cell.environment.name,
              "scheduler": cell.scheduler.name, "time_model": cell.time_model,
              "seed": cell.seed}
    return all(values[key] in wanted for key, wanted in rule.items())


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


def _inputs(values: list[Any], folder: Path, base: str,
            found: list[Diagnostic]) -> tuple[Input, ...]:
    inputs: list[Input] = []
    for index, item in enumerate(values):
        pointer = f"{base}/{index}"
        text = item if isinstance(item, str) else item["path"]
        if text == OWN_MACHINES and base == "/environments":
            inputs.append(Input(item["name"] if isinstance(item, dict) else OWN_MACHINES,
                                None, pointer))
            continue
        path, problem = expand_path(text, folder, pointer if isinstance(item, str)
                                    else f"{pointer}/path")
        if problem is not None:
            found.append(problem)
            continue
        assert path is not None
        name = item.get("name", path.name) if isinstance(item, dict) else path.name
        inputs.append(Input(name, path, pointer))
    _unique([(item.name, item.pointer) for item in inputs], base[1:-1], found)
    return tuple(inputs)


def _unique(named: list[tuple[str, str]], what: str, found: list[Diagnostic]) -> None:
    seen: set[str] = set()
    for name, pointer in named:
        if name in seen:
            found.append(error(f"two {what}s are named {name!r}; give one a name: of its "
                               "own", "experiment.duplicate-name", pointer=pointer))
        seen.add(name)


def _schedulers(values: list[Any], folder: Path,
                found: list[Diagnostic]) -> tuple[Scheduler, ...]:
    from dcx.scheduler.declaration import load_declaration
    from dcx.scheduler.policies import parse_policy

    chosen: list[Scheduler] = []
    for index, item in enumerate(values):
        pointer = f"/schedulers/{index}"
        if isinstance(item, str):
            try:
                policy = parse_policy(item)
            except ValueError as exc:
                found.append(error(str(exc), "experiment.unknown-scheduler", pointer=pointer))
                continue
            chosen.append(Scheduler(policy.name, policy, item))
            continue
        path, problem = expand_path(item["file"], folder, f"{pointer}/file")
        if problem is not None:
            found.append(problem)
            continue
        assert path is not None
        declared, problems = load_declaration(path)
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
    found = schema_diagnostics(SCHEMA, value)
    if found:
        return None, [d.at(str(path)) for d in locator.place(found)]

    folder = path.parent
    own: list[Diagnostic] = []
    workloads = _inputs(value["workloads"], folder, "/workloads", own)
    environments = _inputs(value.get("environments", [OWN_MACHINES]), folder,
                           "/environments", own)
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
        exclude=tuple({key: _as_tuple(item) for key, item in rule.items()}
                      for rule in value.get("exclude", [])),
    )
    reserving = [s.name for s in schedulers if s.policy.reserves]
    if reserving and "sc18" in experiment.time_models:
        own.append(warning(f"{', '.join(reserving)} run(s) under the event time model only; "
                           "their sc18 cells are left out", "experiment.event-only",
                           pointer="/time_models"))
    if not any(d.is_error for d in own) and next(experiment.cells(), None) is None:
        own.append(error("the exclusions leave no cell to run", "experiment.no-cells",
                         pointer="/exclude" if experiment.exclude else ""))
    located = locator.place([d for d in own if d.path is None])
    diagnostics = [*(d.at(str(path)) for d in located), *(d for d in own if d.path)]
    if any(d.is_error for d in diagnostics):
        return None, diagnostics
    return experiment, diagnostics
