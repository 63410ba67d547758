"""Trace formats: read the full Askalon GWF (30,746 tasks, 41,939 dependencies).

Prints the best of several runs for:

1. ``gwf.read`` (decode, per-field checks, model, duplicate/unknown/cycle checks) and its
   ratio to a bare ``str.split`` pass over the same bytes (decode, split lines, split fields);
2. the dependency checks alone;
3. validating every line's record with the compiled JSON Schema validator (jsonschema-rs),
   the alternative to the hand-written fast path, as a ratio to the fast path's read;
4. ``gwf.write`` of the model (its normal form, then serialisation), and an SWF round trip of
   the same tasks as independent jobs.

The corpus is ``../shared/corpus`` (or ``$DCX_CORPUS``); without it the script says so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema_rs

from dcx.core.model import Document, Job, Workload
from dcx.formats import gwf, swf
from dcx.parsing.schemas import load_schema
from dcx.parsing.traces import dependency_diagnostics

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("DCX_CORPUS", REPO.parent / "shared" / "corpus"))
ASKALON = CORPUS / "gwf" / "askalon_workload_ee.gwf"
REPEATS = 5


def best_of(action: Callable[[], Any], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def bare_split(data: bytes) -> int:
    fields = 0
    for line in data.decode("utf-8").split("\n")[1:]:
        fields += len(line.split(","))
    return fields


def records(data: bytes) -> list[dict[str, Any]]:
    """Every task line as the schema's record (what per-record validation would check)."""
    found = []
    for line in data.decode("utf-8").split("\n")[1:]:
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split(",")]
        found.append({
            "WorkflowID": int(parts[0]), "JobID": int(parts[1]), "SubmitTime": int(parts[2]),
            "RunTime": int(parts[3]), "NProcs": int(parts[4]), "ReqNProcs": int(parts[5]),
            "Dependencies": [int(d) for d in parts[6].split()],
        })
    return found


def main() -> None:
    if not ASKALON.is_file():
        print(f"corpus not found at {CORPUS}; set DCX_CORPUS to run this benchmark")
        return
    data = ASKALON.read_bytes()
    result = gwf.read(data)
    assert result.ok and result.document is not None and result.document.workload is not None
    workload = result.document.workload
    tasks = list(workload.tasks())
    print(f"Askalon GWF: {len(data):,} bytes, {len(tasks):,} tasks, "
          f"{sum(len(t.dependencies) for t in tasks):,} dependencies, best of {REPEATS}")

    split_s = best_of(lambda: bare_split(data))
    read_s = best_of(lambda: gwf.read(data))
    print(f"  str.split baseline        {split_s * 1e3:8.1f} ms")
    print(f"  gwf.read                  {read_s * 1e3:8.1f} ms   {read_s / split_s:5.1f}x split"
          f"   ({read_s / len(tasks) * 1e6:.1f} µs per task)")

    ids = [t.id for t in tasks]
    dependencies = [t.dependencies for t in tasks]
    checks_s = best_of(lambda: dependency_diagnostics(
        ids, dependencies, lambda i, d: {}, "gwf"))
    print(f"  dependency checks alone   {checks_s * 1e3:8.1f} ms   "
          f"{checks_s / read_s:5.1%} of the read")

    validator = jsonschema_rs.validator_for(load_schema(gwf.SCHEMA))
    all_records = records(data)
    schema_s = best_of(lambda: all(validator.is_valid(r) for r in all_records))
    print(f"  jsonschema-rs per record  {schema_s * 1e3:8.1f} ms   "
          f"(+{schema_s / read_s:5.1%} on top of the read, had every line been validated "
          "by the schema instead of only failing ones)")

    write_s = best_of(lambda: gwf.write(result.document))
    print(f"  gwf.write                 {write_s * 1e3:8.1f} ms   {write_s / split_s:5.1f}x split")

    independent = Document(workload=Workload(jobs=tuple(
        Job(id=t.id, tasks=(t.__class__(**{**t.__dict__, "dependencies": ()}),))
        for t in tasks)))
    swf_bytes = swf.write(independent).data
    swf_read_s = best_of(lambda: swf.read(swf_bytes))
    swf_split_s = best_of(lambda: [line.split() for line in swf_bytes.decode().split("\n")])
    print(f"SWF, the same tasks as {len(tasks):,} independent jobs ({len(swf_bytes):,} bytes):")
    print(f"  str.split baseline        {swf_split_s * 1e3:8.1f} ms")
    print(f"  swf.read                  {swf_read_s * 1e3:8.1f} ms   "
          f"{swf_read_s / swf_split_s:5.1f}x split")


if __name__ == "__main__":
    main()
