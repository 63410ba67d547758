"""Large traces to an OpenDC workload folder: ``dcx convert`` of a 1,000,000-job SWF trace
(``generate_swf.py``) to opendc-workload read whole (the in-memory path, the baseline) and in
chunks (the format's ``stream_target.py``: tasks and fragments written a chunk at a time, the tasks
file used as it is when no task has a parent), then of the same trace with every tenth job
following the job three before it (``bench_stream.workflow_trace``: children settled at the
end from the spooled tasks' ``id`` and ``parents``, the tasks file written again a row group
at a time), and that trace piped to standard output (the tar archive). The tables are
checked equal each way (schemas with their metadata, every value).

Every figure runs in a fresh subprocess started by ``child.run_child``'s launcher: CPU
seconds and peak RSS are that step's alone, the read-back of the output (the format's
reader, whole, within the input size limit) included. ``DCX_BENCH_BASE_JOBS`` changes the
trace's size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_stream import workflow_trace
from child import Usage, run_child
from generate_swf import write_blocks

JOBS = int(os.environ.get("DCX_BENCH_BASE_JOBS", "1000000"))
MEMBERS = ("tasks.parquet", "fragments.parquet")

DCX = """
import os
import sys
from dcx.converters import streaming
from dcx.cli.main import main
if sys.argv[1] == "whole":
    streaming.STREAM_BYTES = float("inf")  # every input read whole: the baseline
elif sys.argv[1] == "chunks":
    streaming.STREAM_BYTES = 0  # every SWF input in chunks, whatever its size
elif sys.argv[1].startswith("stdout="):  # standard output to this file
    os.dup2(os.open(sys.argv[1][7:], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
sys.exit(main(sys.argv[2:]))
"""


def dcx(mode: str, *args: str, stdin: object = None) -> Usage:
    return run_child([sys.executable, "-c", DCX, mode, *args],
                     f"bench_opendc_stream: dcx {' '.join(args)}", stdin=stdin)


def row(label: str, usage: Usage) -> None:
    print(f"  {label:<44}{usage.wall_s:>8.2f}{usage.cpu_s:>8.2f}{usage.peak_rss_mb:>8.0f}")


def same_tables(first: Path, second: Path) -> bool:
    import pyarrow.parquet as pq

    for name in MEMBERS:
        one, other = pq.read_table(first / name), pq.read_table(second / name)
        if not (one.schema.equals(other.schema, check_metadata=True) and one.equals(other)):
            return False
    return True


def convert_both(trace: Path, folder: Path, label: str) -> tuple[Usage, Usage]:
    whole_out, chunks_out = folder / f"{label}-whole", folder / f"{label}-chunks"
    whole = dcx("whole", "convert", "--quiet", str(trace), str(whole_out), "--to",
                "opendc-workload")
    chunks = dcx("chunks", "convert", "--quiet", str(trace), str(chunks_out), "--to",
                 "opendc-workload")
    row(f"{label}: read whole", whole)
    row(f"{label}: in chunks", chunks)
    if not same_tables(whole_out, chunks_out):
        raise SystemExit(f"bench_opendc_stream: the {label} tables differ")
    size = sum((whole_out / name).stat().st_size for name in MEMBERS)
    print(f"  output {size / 1e6:.0f} MB, the same tables each way")
    return whole, chunks


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        trace, dependent = folder / "trace.swf", folder / "dependent.swf"
        with trace.open("wb") as sink:
            write_blocks(JOBS, sink.write)
        workflow_trace(trace, dependent)
        print(f"bench_opendc_stream: {JOBS:,}-job SWF, {trace.stat().st_size / 1e6:.0f} MB; "
              "wall s, CPU s, peak RSS MB")
        print(f"  {'':<44}{'wall':>8}{'cpu':>8}{'MB':>8}")
        plain = convert_both(trace, folder, "SWF")
        follows = convert_both(dependent, folder, "SWF, every tenth job follows")
        archive = folder / "piped.tar"
        cat = subprocess.Popen(["cat", str(dependent)], stdout=subprocess.PIPE)
        try:
            piped = dcx(f"stdout={archive}", "convert", "--quiet", "-", "-", "--from", "swf",
                        "--to", "opendc-workload", stdin=cat.stdout)
        finally:
            assert cat.stdout is not None
            cat.stdout.close()
            cat.wait()
        row("cat dependent.swf | dcx convert - - | tar", piped)
        unpacked = folder / "unpacked"
        with tarfile.open(archive) as members:
            members.extractall(unpacked, filter="data")
        if not same_tables(folder / "SWF, every tenth job follows-whole", unpacked):
            raise SystemExit("bench_opendc_stream: the piped tables differ")
    for label, (read_whole, in_chunks) in (("SWF", plain), ("every tenth follows", follows)):
        print(f"  {label}: in chunks / whole: CPU {in_chunks.cpu_s / read_whole.cpu_s:.2f}x, "
              f"peak RSS {in_chunks.peak_rss_mb / read_whole.peak_rss_mb:.2f}x")


if __name__ == "__main__":
    main()
