"""Large traces to JSON workloads: ``dcx convert`` of a 1,000,000-job SWF trace
(``generate_swf.py --blocks``) to a Batsim workload read whole (the in-memory path, what every
input took before) and in chunks (the formats' ``stream_target.py``: the jobs spooled beside OUTPUT
while the file is read once, the output assembled at the end and read back), the same
trace piped into ``dcx convert - out.json --from swf --to batsim``, and the trace to
osp-workload read whole and in chunks (the workflows written as they come). The outputs are
checked equal, byte for byte.

Every figure runs in a fresh subprocess started by ``child.run_child``'s launcher: CPU
seconds and peak RSS are that step's alone. The read-back of the output (the Batsim reader,
whole) is part of every figure. ``DCX_BENCH_BASE_JOBS`` changes the trace's size.
"""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from child import Usage, run_child
from generate_swf import write_blocks

JOBS = int(os.environ.get("DCX_BENCH_BASE_JOBS", "1000000"))

DCX = """
import sys
from dcx.converters import streaming
from dcx.cli.main import main
if sys.argv[1] == "whole":
    streaming.STREAM_BYTES = float("inf")  # every input read whole: the baseline
elif sys.argv[1] == "chunks":
    streaming.STREAM_BYTES = 0  # every SWF input in chunks, whatever its size
sys.exit(main(sys.argv[2:]))
"""


def dcx(mode: str, *args: str, stdin: object = None) -> Usage:
    return run_child([sys.executable, "-c", DCX, mode, *args],
                     f"bench_stream_json: dcx {' '.join(args)}", stdin=stdin)


def row(label: str, usage: Usage) -> None:
    print(f"  {label:<44}{usage.wall_s:>8.2f}{usage.cpu_s:>8.2f}{usage.peak_rss_mb:>8.0f}")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.swf"
        with trace.open("wb") as sink:
            write_blocks(JOBS, sink.write)
        print(f"bench_stream_json: {JOBS:,}-job SWF, {trace.stat().st_size / 1e6:.0f} MB; "
              "wall s, CPU s, peak RSS MB")
        print(f"  {'':<44}{'wall':>8}{'cpu':>8}{'MB':>8}")
        whole_out, chunks_out, piped_out = (Path(folder) / name for name in (
            "whole.json", "chunks.json", "piped.json"))
        whole = dcx("whole", "convert", "--quiet", str(trace), str(whole_out), "--to", "batsim")
        chunks = dcx("chunks", "convert", "--quiet", str(trace), str(chunks_out), "--to",
                     "batsim")
        cat = subprocess.Popen(["cat", str(trace)], stdout=subprocess.PIPE)
        try:
            piped = dcx("default", "convert", "--quiet", "-", str(piped_out), "--from", "swf",
                        "--to", "batsim", stdin=cat.stdout)
        finally:
            assert cat.stdout is not None
            cat.stdout.close()
            cat.wait()
        row("SWF -> Batsim, read whole", whole)
        row("SWF -> Batsim, in chunks", chunks)
        row("cat trace.swf | dcx convert - out.json", piped)
        if not (filecmp.cmp(whole_out, chunks_out, shallow=False)
                and filecmp.cmp(whole_out, piped_out, shallow=False)):
            raise SystemExit("bench_stream_json: the Batsim outputs differ")
        print(f"  output {whole_out.stat().st_size / 1e6:.0f} MB, the same bytes each way")
        osp_whole = dcx("whole", "convert", "--quiet", str(trace), str(whole_out), "--to",
                        "osp-workload")
        osp_chunks = dcx("chunks", "convert", "--quiet", str(trace), str(chunks_out), "--to",
                         "osp-workload")
        row("SWF -> osp-workload, read whole", osp_whole)
        row("SWF -> osp-workload, in chunks", osp_chunks)
        if not filecmp.cmp(whole_out, chunks_out, shallow=False):
            raise SystemExit("bench_stream_json: the osp-workload outputs differ")
        print(f"  output {whole_out.stat().st_size / 1e6:.0f} MB, the same bytes each way")
    for name, read_whole, in_chunks in (("Batsim", whole, chunks),
                                        ("osp-workload", osp_whole, osp_chunks)):
        print(f"  {name}: in chunks / whole: CPU {in_chunks.cpu_s / read_whole.cpu_s:.2f}x, "
              f"peak RSS {in_chunks.peak_rss_mb / read_whole.peak_rss_mb:.2f}x")


if __name__ == "__main__":
    main()
