"""Traces larger than memory: a 20,000,000-job SWF drawn on the fly (``generate_swf.py
--blocks``, never stored) piped into ``dcx validate -``, beside figures measured in the same
run on a 1,000,000-job trace of the same model:

1. ``dcx validate`` of the 1M trace read whole (the in-memory path, what every input took
   before chunked reading) and read in chunks (what ``dcx validate`` now does from 16 MB);
2. ``dcx convert`` of the 1M trace to Parquet read whole (the in-memory path) and in chunks
   (what ``dcx convert`` now does from 16 MB: each chunk parsed once, checked and written
   while the file is first read; a second reading only when a later chunk changes the
   Parquet schema);
3. ``dcx convert`` of the 1M trace to GWF read whole and in chunks (the archive variant its
   fields choose; each chunk's losses measured in both variants until the file's is
   known), then of the same trace with every tenth job following the job three before it
   and no requested time, memory, user or group (the workflow variant, dependencies
   across chunks), the two outputs compared byte for byte;
4. ``dcx info`` of the 1M trace read whole (the in-memory path: the model built, then
   counted) and in chunks (what ``dcx info`` now does from 16 MB: the chunked reader's
   counts);
5. the 20M pipe: ``dcx validate -``'s wall time, CPU time and peak RSS, and the generator's
   CPU time (the pipe runs no faster than the generator writes);
6. the 20M pipe into ``dcx convert - out.parquet --from swf`` (written, read back a row
   group at a time, then renamed into place), likewise.

Every figure runs in a fresh subprocess; CPU seconds and peak RSS come from ``os.wait4`` (that
child alone), each dcx step started by ``child.run_child``'s launcher so that its peak RSS
does not count this process's pages shared at the fork (about 190 MB once the 1M trace is
drawn). ``DCX_BENCH_JOBS`` changes the piped trace's size, ``DCX_BENCH_BASE_JOBS`` the
baseline's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from child import run_child
from generate_swf import write_blocks

JOBS = int(os.environ.get("DCX_BENCH_JOBS", "20000000"))
BASE_JOBS = int(os.environ.get("DCX_BENCH_BASE_JOBS", "1000000"))
GENERATOR = str(Path(__file__).resolve().parent / "generate_swf.py")

Usage = tuple[float, float, float]
"""Wall seconds, CPU seconds, peak RSS in MB."""

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


def waited(child: subprocess.Popen[bytes], started: float, what: str) -> Usage:
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_stream: {what} failed")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def dcx(mode: str, *args: str, quiet: bool = False) -> Usage:
    """A 1M-trace step, started by ``child.run_child``'s launcher: its peak RSS is its own,
    not counting the benchmark's pages shared at the fork."""
    usage = run_child([sys.executable, "-c", DCX, mode, *args],
                      f"bench_stream: dcx {' '.join(args)}", quiet)
    return usage.wall_s, usage.cpu_s, usage.peak_rss_mb


def piped(jobs: int, *command: str) -> tuple[Usage, Usage]:
    """``generate_swf.py jobs - --blocks | dcx COMMAND``: dcx's usage, the generator's."""
    started = time.perf_counter()
    generator = subprocess.Popen([sys.executable, GENERATOR, str(jobs), "-", "--blocks"],
                                 stdout=subprocess.PIPE)
    assert generator.stdout is not None
    try:  # through the launcher, as dcx() steps: the checker's peak RSS is its own
        usage = run_child([sys.executable, "-c", DCX, "default", *command],
                          f"bench_stream: dcx {' '.join(command)}", stdin=generator.stdout)
    finally:
        generator.stdout.close()  # no reader left: a generator still writing stops
    return ((usage.wall_s, usage.cpu_s, usage.peak_rss_mb),
            waited(generator, started, "generate_swf.py"))


def workflow_trace(trace: Path, out: Path) -> None:
    """``trace`` with every tenth job following the job three before it, and requested
    time, memory, user and group unknown: what GWF writes in its workflow variant."""
    with trace.open("rb") as source, out.open("wb") as sink:
        for line in source:
            if line.startswith(b";"):
                sink.write(line)
                continue
            fields = line.split()
            for column in (8, 9, 11, 12):
                fields[column] = b"-1"
            number = int(fields[0])
            if number % 10 == 0:
                fields[16] = str(number - 3).encode()
            sink.write(b" ".join(fields) + b"\n")


def same_bytes(first: Path, second: Path) -> bool:
    with first.open("rb") as one, second.open("rb") as other:
        while True:
            block = one.read(1 << 20)
            if block != other.read(1 << 20):
                return False
            if not block:
                return True


def row(label: str, usage: Usage) -> None:
    print(f"  {label:<40}{usage[0]:>8.2f}{usage[1]:>8.2f}{usage[2]:>8.0f}")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.swf"
        with trace.open("wb") as sink:
            write_blocks(BASE_JOBS, sink.write)
        print(f"bench_stream: baseline {BASE_JOBS:,}-job SWF, "
              f"{trace.stat().st_size / 1e6:.0f} MB; wall s, CPU s, peak RSS MB")
        print(f"  {'':<40}{'wall':>8}{'cpu':>8}{'MB':>8}")
        whole = dcx("whole", "validate", "--quiet", str(trace))
        chunks = dcx("chunks", "validate", "--quiet", str(trace))
        row("dcx validate, read whole (before)", whole)
        row("dcx validate, in chunks (now)", chunks)
        converted = Path(folder) / "t.parquet"
        whole_convert = dcx("whole", "convert", "--quiet", str(trace), str(converted))
        chunks_convert = dcx("chunks", "convert", "--quiet", str(trace), str(converted))
        row("dcx convert SWF -> Parquet, read whole", whole_convert)
        row("dcx convert SWF -> Parquet, in chunks", chunks_convert)
        whole_gwf, chunks_gwf = Path(folder) / "whole.gwf", Path(folder) / "chunks.gwf"
        whole_to_gwf = dcx("whole", "convert", "--quiet", str(trace), str(whole_gwf))
        chunks_to_gwf = dcx("chunks", "convert", "--quiet", str(trace), str(chunks_gwf))
        if not same_bytes(whole_gwf, chunks_gwf):
            raise SystemExit("bench_stream: SWF -> GWF in chunks differs from whole")
        whole_gwf.unlink()
        chunks_gwf.unlink()
        row("dcx convert SWF -> GWF, read whole", whole_to_gwf)
        row("dcx convert SWF -> GWF, in chunks", chunks_to_gwf)
        following = Path(folder) / "following.swf"
        workflow_trace(trace, following)
        workflow_whole = dcx("whole", "convert", "--quiet", str(following), str(whole_gwf))
        workflow_chunks = dcx("chunks", "convert", "--quiet", str(following), str(chunks_gwf))
        if not same_bytes(whole_gwf, chunks_gwf):
            raise SystemExit("bench_stream: SWF -> GWF (workflow) in chunks differs from whole")
        for done in (following, whole_gwf, chunks_gwf):
            done.unlink()
        row("  ... workflow variant, read whole", workflow_whole)
        row("  ... workflow variant, in chunks", workflow_chunks)
        whole_info = dcx("whole", "info", str(trace), quiet=True)  # the summary on stdout
        chunks_info = dcx("chunks", "info", str(trace), quiet=True)
        row("dcx info, read whole (before)", whole_info)
        row("dcx info, in chunks (now)", chunks_info)
        checked, generated = piped(JOBS, "validate", "--quiet", "-")
        print(f"{JOBS:,} jobs drawn on the fly | dcx (never stored):")
        row("dcx validate -", checked)
        print(f"  {'generator (CPU s)':<40}{'':>8}{generated[1]:>8.2f}")
        out = Path(folder) / "piped.parquet"
        piped_convert, generated = piped(JOBS, "convert", "--quiet", "-", str(out), "--from",
                                         "swf")
        row("dcx convert - out.parquet --from swf", piped_convert)
        print(f"  {'generator (CPU s)':<40}{'':>8}{generated[1]:>8.2f}")
        print(f"  {'out.parquet (MB)':<40}{'':>8}{'':>8}{out.stat().st_size / 1e6:>8.0f}")
    print(f"  validate: peak RSS {checked[2] / chunks[2]:.1f}x the {BASE_JOBS:,}-job chunked "
          f"read's for {JOBS / BASE_JOBS:.0f}x the jobs; CPU {checked[1] / chunks[1]:.1f}x")
    print(f"  convert: peak RSS {piped_convert[2] / whole_convert[2]:.2f}x the {BASE_JOBS:,}-job "
          f"whole-file conversion's for {JOBS / BASE_JOBS:.0f}x the jobs; CPU "
          f"{piped_convert[1] / whole_convert[1]:.1f}x")
    print(f"  convert SWF -> GWF: in chunks / read whole: CPU "
          f"{chunks_to_gwf[1] / whole_to_gwf[1]:.1f}x, peak RSS "
          f"{chunks_to_gwf[2] / whole_to_gwf[2]:.2f}x; workflow variant: CPU "
          f"{workflow_chunks[1] / workflow_whole[1]:.1f}x, peak RSS "
          f"{workflow_chunks[2] / workflow_whole[2]:.2f}x (outputs identical)")
    print(f"  info: read whole / in chunks: CPU {whole_info[1] / chunks_info[1]:.1f}x, "
          f"peak RSS {whole_info[2] / chunks_info[2]:.1f}x")
    print("targets (issue 18): 20M piped <= 1 GB peak RSS (validate and convert); 1M validate "
          "<= 2 s and <= 400 MB; 1M SWF -> Parquet <= 3 s")


if __name__ == "__main__":
    main()
