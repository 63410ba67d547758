"""A large OpenDC workload folder read a row group at a time, beside the whole-folder read
measured in the same run: a folder of 1,000,000 tasks and 10,000,000 fragments (ten per task,
in their tasks' order, each task's CPU usage varying, so every task has a profile), written
with pyarrow (row groups of pyarrow's default size), then

1. ``dcx validate`` of the folder read whole (packed into one archive, what every folder took
   before) and a row group at a time (what it now does from 16 MB); the two ``--output
   json`` reports compared;
2. ``dcx convert`` of the folder to Parquet, read whole and in slices of tasks; the tables
   compared (rows, schema and metadata);
3. ``dcx convert`` to SWF, likewise, of a folder of a tenth of the tasks (at most 100,000:
   the losses' first places are found task by task, each task built with its profile,
   whole or in slices); the outputs compared byte for byte;
4. ``dcx validate`` in parts of the same folder with its fragments shuffled (each task's
   rows apart, in no order): what holding every row group's distinct task ids costs when
   each row group holds nearly every task; then its conversion to Parquet, whole and in
   parts (every slice of tasks then joins fragments from every row group), the tables
   compared.

Each step runs in a child of its own (``child.run_child``), so its CPU seconds and peak RSS
are its own. ``DCX_BENCH_TASKS`` and ``DCX_BENCH_FRAGMENTS_PER_TASK`` change the folder's
size.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from child import Usage, run_child

TASKS = int(os.environ.get("DCX_BENCH_TASKS", "1000000"))
PER_TASK = int(os.environ.get("DCX_BENCH_FRAGMENTS_PER_TASK", "10"))

DCX = """
import sys
from dcx.converters import streaming
from dcx.cli.main import main
if sys.argv[1] == "whole":
    streaming.STREAM_BYTES = float("inf")  # every folder packed whole: the baseline
elif sys.argv[1] == "parts":
    streaming.STREAM_BYTES = 0  # every folder a row group at a time, whatever its size
if sys.argv[2] != "-":  # where the report printed on stdout goes
    sys.stdout = open(sys.argv[2], "w")
sys.exit(main(sys.argv[3:]))
"""


def write_folder(folder: Path, shuffled: bool = False, tasks: int = TASKS) -> None:
    """The generated folder of ``tasks`` tasks (see the module docstring); ``shuffled``: its
    fragments' rows in a random order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    folder.mkdir(parents=True, exist_ok=True)
    ids = np.arange(1, tasks + 1, dtype=np.int32)
    cores = rng.integers(1, 9, tasks).astype(np.int32)
    duration = rng.integers(1, 3600, tasks).astype(np.int64) * 1000 * PER_TASK
    parents = np.where((ids > 1) & (ids % 5 == 0), ids - 1, 0)
    lengths = (parents > 0).astype(np.int32)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    tasks = pa.table({
        "id": pa.array(ids, pa.int32()),
        "submission_time": pa.array(1_700_000_000_000 + np.sort(rng.integers(0, 10 ** 10,
                                                                             tasks)),
                                    pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        "duration": pa.array(duration, pa.int64()),
        "cpu_count": pa.array(cores, pa.int32()),
        "cpu_capacity": pa.array(cores * 1000.0, pa.float64()),
        "mem_capacity": pa.array(rng.integers(1, 64, tasks) * 1_024_000, pa.int64()),
        "parents": pa.ListArray.from_arrays(pa.array(offsets),
                                            pa.array(parents[parents > 0], pa.int32())),
    })
    pq.write_table(tasks, folder / "tasks.parquet")
    fragment_ids = np.repeat(ids, PER_TASK)
    order = rng.permutation(len(fragment_ids)) if shuffled else slice(None)
    usage = np.repeat(cores * 1000.0, PER_TASK) * rng.random(len(fragment_ids))
    fragments = pa.table({
        "id": pa.array(fragment_ids[order], pa.int32()),
        "duration": pa.array(np.repeat(duration // PER_TASK, PER_TASK)[order], pa.int64()),
        "cpu_usage": pa.array(np.round(usage, 1)[order], pa.float64()),
    })
    pq.write_table(fragments, folder / "fragments.parquet")


def dcx(mode: str, *args: str, stdout: Path | None = None) -> Usage:
    return run_child([sys.executable, "-c", DCX, mode, str(stdout or "-"), *args],
                     f"bench_opendc_parts: dcx {mode} {' '.join(args)}", quiet=True)


def report(what: str, whole: Usage, parts: Usage) -> None:
    print(f"{what}: whole {whole.cpu_s:.1f} CPU s / {whole.peak_rss_mb:.0f} MB, "
          f"parts {parts.cpu_s:.1f} CPU s / {parts.peak_rss_mb:.0f} MB "
          f"(CPU x{parts.cpu_s / whole.cpu_s:.2f}, "
          f"peak RSS x{parts.peak_rss_mb / whole.peak_rss_mb:.2f})")


def main() -> None:
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as where:
        root = Path(where)
        folder = root / "w"
        write_folder(folder)
        size = sum(path.stat().st_size for path in folder.iterdir()) / 1e6
        print(f"folder: {TASKS:,} tasks, {TASKS * PER_TASK:,} fragments, {size:.0f} MB")

        reports = {mode: root / f"{mode}.json" for mode in ("whole", "parts")}
        usages = {mode: dcx(mode, "validate", str(folder), "--output", "json",
                            stdout=reports[mode]) for mode in reports}
        if reports["whole"].read_text() != reports["parts"].read_text():
            raise SystemExit("bench_opendc_parts: the validate reports differ")
        report("validate", usages["whole"], usages["parts"])

        outputs = {mode: root / f"{mode}.parquet" for mode in ("whole", "parts")}
        usages = {mode: dcx(mode, "convert", str(folder), str(outputs[mode]))
                  for mode in outputs}
        expected, found = (pq.read_table(outputs[mode]) for mode in ("whole", "parts"))
        if not (found.equals(expected)
                and found.schema.equals(expected.schema, check_metadata=True)):
            raise SystemExit("bench_opendc_parts: the Parquet outputs differ")
        report("convert to Parquet", usages["whole"], usages["parts"])

        smaller = root / "smaller"
        write_folder(smaller, tasks=min(TASKS // 10, 100_000))
        outputs = {mode: root / f"{mode}.swf" for mode in ("whole", "parts")}
        usages = {mode: dcx(mode, "convert", str(smaller), str(outputs[mode]))
                  for mode in outputs}
        if outputs["whole"].read_bytes() != outputs["parts"].read_bytes():
            raise SystemExit("bench_opendc_parts: the SWF outputs differ")
        report(f"convert {min(TASKS // 10, 100_000):,} tasks to SWF", usages["whole"],
               usages["parts"])

        shuffled = root / "shuffled"
        write_folder(shuffled, shuffled=True)
        usage = dcx("parts", "validate", str(shuffled))
        print(f"validate in parts, fragments shuffled: {usage.cpu_s:.1f} CPU s / "
              f"{usage.peak_rss_mb:.0f} MB")
        outputs = {mode: root / f"shuffled-{mode}.parquet" for mode in ("whole", "parts")}
        usages = {mode: dcx(mode, "convert", str(shuffled), str(outputs[mode]))
                  for mode in outputs}
        if not pq.read_table(outputs["parts"]).equals(pq.read_table(outputs["whole"])):
            raise SystemExit("bench_opendc_parts: the shuffled folder's outputs differ")
        report("convert to Parquet, fragments shuffled", usages["whole"], usages["parts"])


if __name__ == "__main__":
    main()
