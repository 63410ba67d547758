"""Turn a workload file and an environment file into a checked ``Problem``.

Files are read only through the format registry (``dcx.converters.convert.read_any``); the
scheduler itself parses nothing. Every problem comes back as a located diagnostic.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dcx.converters.convert import read_any
from dcx.core.codes import Code
from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.core.limits import LIMITS, paused_gc
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    Workload,
)
from dcx.scheduler.problem import ENVIRONMENT_CODES, Problem, compile_problem

CODES = (
    Code("schedule.unreadable", "error", "The scheduler cannot read an input file."),
    Code("schedule.not-a-workload", "error",
         "The workload file holds no workload (it is a topology; pass it with --env)."),
    Code("schedule.not-an-environment", "error",
         "The environment file holds no machines."),
    Code("schedule.no-environment", "error",
         "The workload file has no machines of its own and no environment was given."),
    Code("schedule.header-topology", "warning",
         "No environment was given: the workload's MaxProcs (or MaxNodes) header stands in, "
         "one single-core machine per processor."),
)

HEADER_SIZE_KEYS = ("MaxProcs", "MaxNodes")
"""SWF header fields that size the machine the trace was recorded on, most specific first."""


def header_environment(workload: Workload) -> tuple[Environment, str, int] | None:
    """The machine an SWF header describes: one single-core machine per processor, as
    PWA-based simulators treat processors as interchangeable units (and as the SWF reader
    maps a job of P processors to P single-core nodes). ``(environment, key, count)``."""
    for key in HEADER_SIZE_KEYS:
        value = workload.attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            core = ProcessingUnit(cores=1)
            machines = tuple(Machine(id=f"p{index}", cpus=(core,)) for index in range(value))
            rack = Rack(slots=machines)
            return Environment((Datacenter(rooms=(Room(racks=(rack,)),)),)), key, value
    return None



@dataclass(frozen=True)
class Loaded:
    problem: Problem | None
    diagnostics: tuple[Diagnostic, ...]
    workload_format: str | None = None
    environment_format: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is not None and not any(d.is_error for d in self.diagnostics)


def read_document(
    path: Path, format_name: str | None = None
) -> tuple[str | None, Document | None, list[Diagnostic]]:
    """Read one file; ``(format name, document or None, diagnostics located at path)``."""
    name, document, diagnostics, _ = read_located(path, format_name)
    return name, document, diagnostics


STDIN_LABEL = "<stdin>"


def _label(path: Path) -> str:
    return STDIN_LABEL if str(path) == "-" else str(path)


def _read_bytes(path: Path) -> bytes:
    """A file's bytes; ``-`` is standard input (read to one byte past the size limit)."""
    if str(path) == "-":
        return sys.stdin.buffer.read(LIMITS.max_input_bytes + 1)
    if path.is_dir():  # a format stored as a folder (OpenDC's tasks and fragments files)
        from dcx.converters.folders import FolderError, folder_format, read_folder

        spec = folder_format(str(path))
        if spec is not None:
            try:
                return read_folder(str(path), spec)
            except FolderError:
                raise OSError(errno.EFBIG, "its files are larger than the input limit, "
                              f"{LIMITS.max_input_bytes:,} bytes") from None
    return path.read_bytes()


def read_located(
    path: Path, format_name: str | None = None
) -> tuple[str | None, Document | None, list[Diagnostic], Mapping[str, tuple[int, int | None]]]:
    """``read_document`` plus the reader's source map (model pointer to line)."""
    label = _label(path)
    try:
        data = _read_bytes(path)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return None, None, [error(f"cannot read file: {reason}", "schedule.unreadable").at(
            label)], {}
    if len(data) > LIMITS.max_input_bytes:
        return None, None, [error(
            f"input is larger than the limit of {LIMITS.max_input_bytes:,} bytes",
            "input.too-large").at(label)], {}
    spec, result = read_any(data, "" if label == STDIN_LABEL else label, format_name)
    diagnostics = [d.at(label) for d in result.diagnostics]
    name = spec.name if spec else None
    if any(d.is_error for d in diagnostics):
        return name, None, diagnostics, {}
    return name, result.document, diagnostics, result.source_map


def load_problem(
    workload_path: Path,
    environment_path: Path | None,
    workload_format: str | None = None,
    environment_format: str | None = None,
) -> Loaded:
    """Read both files and compile them. The environment may come from the workload file
    itself (a Haizea LWF carries its site) when ``environment_path`` is ``None``."""
    with paused_gc():  # a million-task trace builds millions of objects and no cycles
        return _load_problem(workload_path, environment_path, workload_format,
                             environment_format)


def _load_problem(workload_path: Path, environment_path: Path | None,
                  workload_format: str | None, environment_format: str | None) -> Loaded:
    diagnostics: list[Diagnostic] = []
    workload_name, workload_doc, found, source_map = read_located(workload_path, workload_format)
    diagnostics.extend(found)
    workload: Workload | None = workload_doc.workload if workload_doc else None
    if workload_doc is not None and workload is None:
        diagnostics.append(error(
            f"{workload_name} file holds no workload (it is a topology; pass it with --env)",
            "schedule.not-a-workload").at(_label(workload_path)))

    environment: Environment | None = None
    environment_name: str | None = None
    if environment_path is not None:
        environment_name, environment_doc, found = read_document(
            environment_path, environment_format)
        diagnostics.extend(found)
        if environment_doc is not None:
            environment = environment_doc.environment
            if environment is None:
                diagnostics.append(error(
                    f"{environment_name} file holds no environment (machines)",
                    "schedule.not-an-environment").at(_label(environment_path)))
    elif workload_doc is not None:
        environment = workload_doc.environment
        environment_name = workload_name
        from_header = (header_environment(workload)
                       if environment is None and workload is not None else None)
        if from_header is not None:
            environment, key, size = from_header
            diagnostics.append(warning(
                f"no --env given: scheduling on the workload's own machine, {size} "
                f"single-core machine(s) from its {key} header",
                "schedule.header-topology").at(_label(workload_path)))
        elif environment is None and workload is not None:
            diagnostics.append(error(
                "the workload file has no machines of its own; give an environment with --env",
                "schedule.no-environment").at(_label(workload_path)))

    if workload is None or environment is None or any(d.is_error for d in diagnostics):
        return Loaded(None, tuple(diagnostics), workload_name, environment_name)
    compiled = compile_problem(workload, environment, source_map)
    environment_file = _label(environment_path or workload_path)
    diagnostics.extend(
        d.at(environment_file if d.code in ENVIRONMENT_CODES else _label(workload_path))
        for d in compiled.diagnostics
    )
    return Loaded(compiled.problem, tuple(diagnostics), workload_name, environment_name)
