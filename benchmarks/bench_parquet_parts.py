"""A Parquet trace validated a row group at a time, in this process and as partitions on a
Dask cluster, beside the whole-file read measured in the same run: a 1,000,000-job SWF
(``generate_swf.py --blocks``) converted to Parquet by ``dcx convert`` (a row group per
chunk), then

1. ``dcx validate t.parquet`` read whole (the in-memory path; what every Parquet input took
   before row groups);
2. ``dcx validate t.parquet`` a row group at a time in this process (what it now does from
   16 MB);
3. ``dcx validate t.parquet --workers 2``: the row groups as partitions on a LocalCluster of
   two worker processes, start-up included (the cluster's workers are not this command's
   children: the peak RSS is the client's), beside the same command on a one-job Parquet
   file: what starting the cluster costs;
4. ``dcx convert t.parquet t.swf`` read whole, beside the same a row group at a time (what
   it now does from 16 MB); the two SWF outputs are compared byte for byte.
5. ``dcx convert t.parquet`` to SWF and to Parquet a row group at a time in this process,
   beside the same with ``--workers 2`` (the per-row-group work on a LocalCluster of two
   worker processes, start-up included); the outputs are compared (bytes; table, schema
   and row groups). Its figures are the CPU time of the ``dcx`` process (the driver) and of
   its workers (its children, counted when they end), and the driver's own peak RSS.

Each run's diagnostics are compared (``--output json``) before any figure is printed.
``DCX_BENCH_JOBS`` changes the trace's size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from child import Usage, run_child
from generate_swf import write_blocks

JOBS = int(os.environ.get("DCX_BENCH_JOBS", "1000000"))

DCX = """
import sys
from dcx.converters import streaming
from dcx.cli.main import main
if sys.argv[1] == "whole":
    streaming.STREAM_BYTES = float("inf")  # every input read whole: the baseline
elif sys.argv[1] == "parts":
    streaming.STREAM_BYTES = 0  # every Parquet file by row groups, whatever its size
sys.exit(main(sys.argv[2:]))
"""


DRIVER = """
import resource, sys
from dcx.converters import streaming
from dcx.cli.main import main
streaming.STREAM_BYTES = 0  # every Parquet file by row groups, whatever its size
code = main(sys.argv[2:])
own = resource.getrusage(resource.RUSAGE_SELF)
workers = resource.getrusage(resource.RUSAGE_CHILDREN)  # (ended and waited for)
with open(sys.argv[1], "w") as report:
    report.write(f"{own.ru_utime + own.ru_stime} {own.ru_maxrss} "
                 f"{workers.ru_utime + workers.ru_stime}")
sys.exit(code)
"""


@dataclass(frozen=True)
class Driven:
    """A ``dcx`` command whose CPU time is split between its own process and its workers."""

    wall_s: float
    driver_cpu_s: float
    workers_cpu_s: float
    driver_peak_mb: float


def driven(folder: Path, *args: str) -> Driven:
    report = folder / "usage.txt"
    usage = run_child([sys.executable, "-c", DRIVER, str(report), *args],
                      f"dcx {' '.join(args)}")
    own_cpu, own_kb, workers_cpu = (float(value) for value in report.read_text().split())
    return Driven(usage.wall_s, own_cpu, workers_cpu, own_kb / 1024)


def dcx(mode: str, *args: str) -> Usage:
    return run_child([sys.executable, "-c", DCX, mode, *args], f"dcx {' '.join(args)}")


def said(mode: str, *args: str) -> str:
    """What ``dcx validate --output json`` prints for the file."""
    done = subprocess.run([sys.executable, "-c", DCX, mode, "validate", "--output", "json",
                           *args], capture_output=True, text=True, check=False)
    return done.stdout


def row(label: str, usage: Usage) -> None:
    print(f"  {label:<44}{usage.wall_s:>8.2f}{usage.cpu_s:>8.2f}{usage.peak_rss_mb:>8.0f}")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.swf"
        with trace.open("wb") as out:
            write_blocks(JOBS, out.write)
        parquet = Path(folder) / "t.parquet"
        dcx("default", "convert", "--quiet", str(trace), str(parquet))
        trace.unlink()
        import pyarrow.parquet as pq

        groups = pq.ParquetFile(parquet).metadata.num_row_groups
        answers = {said(mode, str(parquet), *extra) for mode, extra in (
            ("whole", ()), ("parts", ()), ("default", ("--workers", "2")))}
        if len(answers) != 1:
            raise SystemExit(f"bench_parquet_parts: the three paths disagree: {answers}")
        print(f"bench_parquet_parts: {JOBS:,}-job Parquet, {parquet.stat().st_size / 1e6:.0f} "
              f"MB in {groups} row groups; wall s, CPU s, peak RSS MB")
        print(f"  {'':<44}{'wall':>8}{'cpu':>8}{'MB':>8}")
        whole = dcx("whole", "validate", "--quiet", str(parquet))
        parts = dcx("parts", "validate", "--quiet", str(parquet))
        cluster = dcx("default", "validate", "--quiet", str(parquet), "--workers", "2")
        tiny = Path(folder) / "tiny.parquet"
        first = pq.ParquetFile(parquet)
        pq.write_table(first.read_row_group(0).slice(0, 1), tiny)
        start_up = dcx("default", "validate", "--quiet", str(tiny), "--workers", "2")
        whole_swf, parts_swf = Path(folder) / "whole.swf", Path(folder) / "parts.swf"
        convert_whole = dcx("whole", "convert", "--quiet", str(parquet), str(whole_swf))
        convert_parts = dcx("parts", "convert", "--quiet", str(parquet), str(parts_swf))
        equal = whole_swf.read_bytes() == parts_swf.read_bytes()
        if not equal:
            raise SystemExit("bench_parquet_parts: the SWF outputs differ")
        row("dcx validate, read whole (before)", whole)
        row("dcx validate, by row groups in process", parts)
        row("dcx validate --workers 2 (LocalCluster)", cluster)
        row("  the same on a one-job file (start-up)", start_up)
        row("dcx convert to SWF, read whole (before)", convert_whole)
        row("dcx convert to SWF, by row groups (equal)", convert_parts)
        on_cluster = cluster_conversions(Path(folder), parquet)
    print(f"  by row groups: peak RSS {parts.peak_rss_mb / whole.peak_rss_mb:.2f}x the whole "
          f"read's, wall {parts.wall_s / whole.wall_s:.2f}x; on the cluster: wall "
          f"{cluster.wall_s / whole.wall_s:.2f}x with start-up, "
          f"{(cluster.wall_s - start_up.wall_s) / whole.wall_s:.2f}x without")
    print(f"  convert to SWF by row groups: CPU {convert_parts.cpu_s / convert_whole.cpu_s:.2f}x"
          f", peak RSS {convert_parts.peak_rss_mb / convert_whole.peak_rss_mb:.2f}x the "
          "whole read's; outputs equal")
    print("  dcx convert by row groups, in process | --workers 2 (LocalCluster): wall s, "
          "CPU s of the driver + its workers, the driver's peak RSS MB")
    for to, here, there in on_cluster:
        wall = there.wall_s / here.wall_s
        cpu = (there.driver_cpu_s + there.workers_cpu_s) / here.driver_cpu_s
        print(f"  to {to:<8} wall {here.wall_s:6.2f} | {there.wall_s:6.2f} ({wall:.2f}x)   CPU "
              f"{here.driver_cpu_s:6.2f} | {there.driver_cpu_s:6.2f} + "
              f"{there.workers_cpu_s:6.2f} ({cpu:.2f}x)   MB {here.driver_peak_mb:5.0f} | "
              f"{there.driver_peak_mb:5.0f}; outputs equal")


def cluster_conversions(folder: Path, parquet: Path) -> list[tuple[str, Driven, Driven]]:
    """Step 5: each target in this process and on two workers, the outputs compared."""
    import pyarrow.parquet as pq

    measured = []
    for to in ("swf", "parquet"):
        here_out, there_out = folder / f"here.{to}", folder / f"there.{to}"
        here = driven(folder, "convert", "--quiet", str(parquet), str(here_out))
        there = driven(folder, "convert", "--quiet", str(parquet), str(there_out),
                       "--workers", "2")
        if to == "swf":
            equal = here_out.read_bytes() == there_out.read_bytes()
        else:
            expected, found = pq.ParquetFile(here_out), pq.ParquetFile(there_out)
            equal = found.read().equals(expected.read()) and found.schema_arrow.equals(
                expected.schema_arrow, check_metadata=True) and \
                found.metadata.num_row_groups == expected.metadata.num_row_groups
        if not equal:
            raise SystemExit(f"bench_parquet_parts: the {to} outputs differ on the cluster")
        here_out.unlink()
        there_out.unlink()
        measured.append((to, here, there))
    return measured


if __name__ == "__main__":
    main()
