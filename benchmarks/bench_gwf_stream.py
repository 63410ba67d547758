"""GWF at archive scale, read in chunks and written a column at a time: seeded
1,000,000-task files of each variant (``bench_gwf_scale``'s, made in a child process), in
the same run:

1. ``dcx validate`` read whole (the in-memory path: the vectorised accept path on the whole
   file, what every GWF input took before chunked reading) beside read in chunks (what
   ``dcx validate`` now does from 16 MB: ``dcx.formats.gwf.stream``); wall and CPU seconds
   and peak RSS of each child process;
2. ``write`` of the workload read from the file (held as columns): the columnar writer
   (``dcx.formats.gwf.columnar``, what ``write`` now does) beside the row writer
   (``codec.write_rows``, what it did before), timed inside the child around the write alone,
   with the child's peak RSS; the two outputs are checked to be the same bytes;
3. ``dcx convert`` to Parquet and to GWF, and the archive file to SWF, in chunks (what
   ``dcx convert`` now does from 16 MB: ``dcx.converters.stream_convert``) beside the
   whole-file conversion (the file read whole, what it did before); the outputs are checked
   to be the same table (Parquet) or bytes (GWF, SWF). (The workflow file to SWF is refused
   in chunks: its tasks with several dependencies, one in another chunk.)

``DCX_BENCH_TASKS`` changes the size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gwf_scale import make_trace
from child import run_child

TASKS = int(os.environ.get("DCX_BENCH_TASKS", "1000000"))

Usage = tuple[float, float, float]
"""Wall seconds, CPU seconds, peak RSS in MB."""

VALIDATE = """
import sys
from dcx.converters import streaming
from dcx.cli.main import main
streaming.STREAM_BYTES = float("inf") if sys.argv[1] == "whole" else 0
sys.exit(main(["validate", "--quiet", sys.argv[2]]))
"""

WRITE = """
import hashlib, resource, sys, time
from pathlib import Path
from dcx.core.columns import columns_of
from dcx.formats.gwf import codec
codec.FAST_READ_BYTES = 0  # read as columns whatever the size
document = codec.read(Path(sys.argv[2]).read_bytes()).document
assert columns_of(document.workload) is not None, "not read as columns"
write = codec.write if sys.argv[1] == "columns" else codec.write_rows
started, cpu = time.perf_counter(), time.process_time()
data = write(document).data
wall, cpu = time.perf_counter() - started, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(wall, cpu, peak, hashlib.sha256(data).hexdigest())
"""


CONVERT = """
import sys
from dcx.converters import streaming
from dcx.cli.main import main
streaming.STREAM_BYTES = float("inf") if sys.argv[1] == "whole" else 0
sys.exit(main(["convert", "--quiet", sys.argv[2], sys.argv[3]]))
"""


def converted(mode: str, path: Path, output: Path) -> Usage:
    usage = run_child([sys.executable, "-c", CONVERT, mode, str(path), str(output)],
                      f"bench_gwf_stream: convert ({mode}) {path.name} to {output.name}")
    return usage.wall_s, usage.cpu_s, usage.peak_rss_mb


def same_output(first: Path, second: Path) -> bool:
    if first.suffix != ".parquet":
        return first.read_bytes() == second.read_bytes()
    import pyarrow.parquet as pq

    found, expected = pq.read_table(first), pq.read_table(second)
    return found.equals(expected) and found.schema.equals(expected.schema,
                                                          check_metadata=True)


def validated(mode: str, path: Path) -> Usage:
    usage = run_child([sys.executable, "-c", VALIDATE, mode, str(path)],
                      f"bench_gwf_stream: validate ({mode}) {path.name}")
    return usage.wall_s, usage.cpu_s, usage.peak_rss_mb


def written(mode: str, path: Path) -> tuple[Usage, str]:
    done = subprocess.run([sys.executable, "-c", WRITE, mode, str(path)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_gwf_stream: write ({mode}) {path.name} failed:\n{done.stderr}")
    wall, cpu, peak, digest = done.stdout.split()
    return (float(wall), float(cpu), float(peak)), digest


def row(label: str, now: Usage, baseline: Usage) -> None:
    print(f"  {label:<26}{now[0]:>8.2f}{now[1]:>8.2f}{now[2]:>8.0f}"
          f"{baseline[0]:>10.2f}{baseline[1]:>8.2f}{baseline[2]:>8.0f}"
          f"{baseline[1] / max(now[1], 1e-9):>8.1f}x{baseline[2] / now[2]:>8.1f}x")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        traces = {"workflow": Path(folder) / "workflow.gwf",
                  "archive": Path(folder) / "archive.gwf"}
        for variant, trace in traces.items():
            make_trace(variant, trace, TASKS)
        print(f"bench_gwf_stream: {TASKS:,}-task GWF; wall s, CPU s, peak RSS MB; "
              "ratios: baseline / now, CPU and RSS")
        print(f"  {'':<26}{'wall':>8}{'cpu':>8}{'MB':>8}{'base wall':>10}{'cpu':>8}{'MB':>8}"
              f"{'cpu':>9}{'MB':>9}")
        print("  dcx validate: in chunks (now) | read whole (baseline)")
        for variant, trace in traces.items():
            row(f"{variant} ({trace.stat().st_size / 1e6:.0f} MB)",
                validated("chunks", trace), validated("whole", trace))
        print("  write: a column at a time (now) | task by task (baseline); the write alone")
        for variant, trace in traces.items():
            columns, columns_digest = written("columns", trace)
            rows, rows_digest = written("rows", trace)
            if columns_digest != rows_digest:
                raise SystemExit(f"bench_gwf_stream: the two writers differ on {variant}")
            row(variant, columns, rows)
        print("  (write MB: the child's peak, reading the file included)")
        print("  dcx convert: in chunks (now) | the file read whole (baseline)")
        for variant, trace in traces.items():
            for suffix in (".parquet", ".gwf", *((".swf",) if variant == "archive" else ())):
                chunked = Path(folder) / f"chunks{suffix}"
                whole = Path(folder) / f"whole{suffix}"
                now = converted("chunks", trace, chunked)
                baseline = converted("whole", trace, whole)
                if not same_output(chunked, whole):
                    raise SystemExit(f"bench_gwf_stream: {variant} to {suffix} differs")
                row(f"{variant} to {suffix[1:]}", now, baseline)
                chunked.unlink()
                whole.unlink()


if __name__ == "__main__":
    main()
