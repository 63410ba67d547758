"""The OpenDC 2.x workload folder (``meta.parquet`` and ``trace.parquet``, the ``opendc-vm``
trace format until OpenDC renamed its files in August 2024) read as its loader read it,
by turning it into the two tables of today's layout before the usual checks.

OpenDC 2.x's ``ComputeWorkloadLoader`` read ``meta.parquet`` (one row per VM: a string
``id``, ``start_time`` and ``stop_time`` instants, ``cpu_count``, ``cpu_capacity`` MHz,
``mem_capacity`` KB; trace schema v2.0 named them ``submissionTime``, ``endTime``,
``maxCores``, ``requiredMemory`` and had no capacity) and ``trace.parquet`` (rows of a
string ``id``, a ``timestamp`` (v2.0 ``time``), a ``duration`` in ms, ``cpu_count`` (v2.0
``cores``) and ``cpu_usage`` MHz (v2.0 ``cpuUsage``)), each VM's rows in file order its
demand over time. A VM ran from its start to its stop instant; one without trace rows was
skipped. Here a VM is a task numbered 1..n in file order with its string id as its name
(OpenDC named its VMs by it and numbered them itself), submitted at ``start_time``, running
``stop_time - start_time``; a trace row's ``timestamp`` and ``cpu_count`` are not kept
(today's fragments have neither). Trace schema v2.0 gave no capacity: its VMs' capacity is
unknown, so their tasks state none (no ``opendc-workload:cpu_capacity``, as a task read from
another format), never 0 MHz, which would be a capacity that runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.formats.opendc_workload import (
    FRAGMENTS,
    LEGACY_FRAGMENTS,
    LEGACY_TASKS,
    MHZ_PER_CORE,
    TASKS,
)

_META_ALIASES = {"submissionTime": "start_time", "endTime": "stop_time",
                 "maxCores": "cpu_count", "requiredMemory": "mem_capacity"}
_TRACE_ALIASES = {"time": "timestamp", "cores": "cpu_count", "cpuUsage": "cpu_usage"}
_META_TYPES = {"id": "string", "start_time": "timestamp", "stop_time": "timestamp",
               "cpu_count": "integer", "cpu_capacity": "floating", "mem_capacity": "number"}
_TRACE_TYPES = {"id": "string", "timestamp": "timestamp", "duration": "integer",
                "cpu_count": "integer", "cpu_usage": "floating"}
_OPTIONAL = frozenset({"cpu_capacity", "timestamp", "cpu_count"})
RENAMED = {f"/{TASKS}": f"/{LEGACY_TASKS}", f"/{FRAGMENTS}": f"/{LEGACY_FRAGMENTS}"}
"""Today's member → the 2.x file a diagnostic about it points into."""


@dataclass(frozen=True)
class Translated:
    members: dict[str, bytes] | None
    """Today's two files, or ``None`` when the 2.x files cannot be read as OpenDC read them."""
    problems: list[Diagnostic]


def translate(members: dict[str, bytes]) -> Translated:
    """``meta.parquet`` and ``trace.parquet`` as ``tasks.parquet`` and ``fragments.parquet``
    (see the module docstring), with a warning that says so."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables: dict[str, Any] = {}
    for name in (LEGACY_TASKS, LEGACY_FRAGMENTS):
        try:
            tables[name] = pq.read_table(pa.BufferReader(members[name])).combine_chunks()
        except (pa.ArrowException, OSError, ValueError) as exc:
            return Translated(None, [error(f"cannot read {name}: {exc}",
                                           "opendc-workload.unreadable", pointer=f"/{name}")])
    meta, problems = _columns(LEGACY_TASKS, tables[LEGACY_TASKS], _META_ALIASES, _META_TYPES)
    trace, found = _columns(LEGACY_FRAGMENTS, tables[LEGACY_FRAGMENTS], _TRACE_ALIASES,
                            _TRACE_TYPES)
    problems += found
    if problems:
        return Translated(None, problems)
    names = meta["id"].to_pylist()
    number: dict[str, int] = {}
    for index, name in enumerate(names):
        number.setdefault(name, index + 1)
    if len(number) != len(names):
        repeated = next(i for i, name in enumerate(names) if number[name] != i + 1)
        return Translated(None, [error(
            f"{LEGACY_TASKS} id {names[repeated]!r} is given twice (OpenDC 2.x gave both VMs "
            "the same trace rows)", "opendc-workload.legacy", pointer=(
                f"/{LEGACY_TASKS}/rows/{repeated}/id"))])
    tasks, fragments = _tasks(meta, number), _fragments(trace, number)
    note = warning(f"the OpenDC 2.x layout ({LEGACY_TASKS}, {LEGACY_FRAGMENTS}): "
                   f"{len(names):,} VMs read as tasks 1..{len(names):,} named by their ids, "
                   "running from start_time to stop_time", "opendc-workload.legacy-layout",
                   pointer=f"/{LEGACY_TASKS}")
    return Translated({TASKS: _parquet(tasks), FRAGMENTS: _parquet(fragments)}, [note])


def _columns(name: str, table: Any, aliases: dict[str, str], types: dict[str, str]
             ) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The 2.x file's columns by their v2.1 names, checked for presence and kind."""
    import pyarrow as pa

    kinds = {"string": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
             "timestamp": lambda t: pa.types.is_timestamp(t) or pa.types.is_int64(t),
             "integer": pa.types.is_integer,
             "floating": lambda t: pa.types.is_floating(t) or pa.types.is_integer(t),
             "number": lambda t: pa.types.is_floating(t) or pa.types.is_integer(t)}
    columns = {aliases.get(column, column): table.column(column)
               for column in table.column_names}
    problems = []
    for column, kind in types.items():
        if column not in columns:
            if column not in _OPTIONAL:
                problems.append(error(f"{name} has no {column} column (nor its v2.0 alias)",
                                      "opendc-workload.legacy", pointer=f"/{name}/columns"))
        elif not kinds[kind](columns[column].type):
            problems.append(error(f"{name} {column} is {columns[column].type}, not a {kind}",
                                  "opendc-workload.legacy",
                                  pointer=f"/{name}/columns/{column}"))
        elif columns[column].null_count:
            problems.append(error(f"{name} {column} has nulls; OpenDC 2.x needs a value on "
                                  "every row", "opendc-workload.legacy",
                                  pointer=f"/{name}/columns/{column}"))
    return columns, problems


def _milliseconds(column: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
    return column.cast(pa.int64())


def _tasks(meta: dict[str, Any], number: dict[str, int]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    start, stop = _milliseconds(meta["start_time"]), _milliseconds(meta["stop_time"])
    count = len(number)
    # v2.0 states no capacity: the one today's reader reads as none stated (no extra)
    capacity = meta["cpu_capacity"].cast(pa.float64()) if "cpu_capacity" in meta else \
        pc.multiply(meta["cpu_count"].cast(pa.float64()), MHZ_PER_CORE)
    memory = meta["mem_capacity"]
    memory = memory.cast(pa.int64()) if pa.types.is_integer(memory.type) else \
        memory.cast(pa.float64())
    return pa.table({
        "id": pa.array(range(1, count + 1), pa.int32()),
        "name": meta["id"].cast(pa.string()),
        "submission_time": start.cast(pa.timestamp("ms", tz="UTC")),
        "duration": pc.subtract(stop, start),
        "cpu_count": meta["cpu_count"].cast(pa.int32()),
        "cpu_capacity": capacity,
        "mem_capacity": memory,
    })


def _fragments(trace: dict[str, Any], number: dict[str, int]) -> Any:
    """The trace rows by task number; an id of no VM gets a number past the VMs' (today's
    reader reports such rows, as OpenDC ignored them)."""
    import pyarrow as pa

    unknown: dict[str, int] = {}
    ids = [number.get(name) or unknown.setdefault(name, len(number) + len(unknown) + 1)
           for name in trace["id"].to_pylist()]
    return pa.table({"id": pa.array(ids, pa.int32()),
                     "duration": trace["duration"].cast(pa.int64()),
                     "cpu_usage": trace["cpu_usage"].cast(pa.float64())})


def _parquet(table: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def renamed(diagnostic: Diagnostic) -> Diagnostic:
    """A diagnostic about today's tables, pointing into the 2.x file it came from."""
    from dataclasses import replace

    pointer = diagnostic.pointer or ""
    for today, then in RENAMED.items():
        if pointer.startswith(today):
            return replace(diagnostic, pointer=then + pointer[len(today):])
    return diagnostic
