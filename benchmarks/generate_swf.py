"""A seeded synthetic SWF trace for the scheduler benchmarks: rigid parallel jobs on a
``MaxProcs``-processor machine, Poisson arrivals at a target offered load.

* widths: a power of two from 1 to the machine size, small ones far more likely (half the
  jobs are serial or 2-wide), plus a few non-powers;
* runtimes: log-uniform from 1 s to 10 h;
* requested times: the runtime times a user over-estimate factor (1 to 5, a fifth of the
  jobs exact), rounded up to a minute;
* arrivals: exponential gaps giving ``load`` x MaxProcs busy processors on average.

``python benchmarks/generate_swf.py JOBS OUT.swf [--procs 1024] [--load 0.9] [--seed 1]``

``--blocks`` draws the same model with NumPy a block of jobs at a time and writes each block
as it is drawn (``OUT.swf`` of ``-``: standard output), so a trace of tens of millions of jobs
can be piped into ``dcx validate -`` without being stored: its mean gap comes from the first
block's mean work, and its numbers differ from ``generate``'s for the same seed.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path


def generate(jobs: int, procs: int = 1024, load: float = 0.9, seed: int = 1) -> str:
    rng = random.Random(seed)
    top = int(math.log2(procs))
    rows: list[tuple[int, int, int, int]] = []
    for _ in range(jobs):
        exponent = min(top, int(rng.expovariate(0.45)))
        width = 2 ** exponent
        if exponent > 1 and rng.random() < 0.2:
            width = rng.randint(2 ** (exponent - 1) + 1, width)
        runtime = max(1, round(math.exp(rng.uniform(0.0, math.log(36_000)))))
        factor = 1.0 if rng.random() < 0.2 else rng.uniform(1.0, 5.0)
        requested = 60 * math.ceil(runtime * factor / 60)
        rows.append((width, runtime, requested, 0))
    mean_work = sum(width * runtime for width, runtime, _, _ in rows) / jobs
    mean_gap = mean_work / (load * procs)
    lines = ["; Version: 2.2", f"; Computer: dcx synthetic (seed {seed})",
             f"; MaxJobs: {jobs}", f"; MaxRecords: {jobs}", f"; MaxNodes: {procs}",
             f"; MaxProcs: {procs}", f"; Note: offered load {load}"]
    submit = 0.0
    for number, (width, runtime, requested, _) in enumerate(rows, start=1):
        submit += rng.expovariate(1.0 / mean_gap)
        lines.append(f"{number} {int(submit)} -1 {runtime} {width} -1 -1 {width} {requested} "
                     "-1 1 1 1 -1 1 -1 -1 -1")
    return "\n".join(lines) + "\n"


BLOCK_JOBS = 1 << 18


def write_blocks(jobs: int, write: Callable[[bytes], object], procs: int = 1024,
                 load: float = 0.9, seed: int = 1) -> None:
    """``generate``'s model drawn with NumPy a block at a time, each block written as drawn."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    top = int(math.log2(procs))
    write(("\n".join(["; Version: 2.2", f"; Computer: dcx synthetic (seed {seed}, blocks)",
                      f"; MaxJobs: {jobs}", f"; MaxRecords: {jobs}", f"; MaxNodes: {procs}",
                      f"; MaxProcs: {procs}", f"; Note: offered load {load}"]) + "\n").encode())
    mean_gap = 0.0
    submit = 0.0
    for first in range(1, jobs + 1, BLOCK_JOBS):
        count = min(BLOCK_JOBS, jobs + 1 - first)
        exponent = np.minimum(top, rng.exponential(1 / 0.45, count).astype(np.int64))
        width = 2 ** exponent
        partial = (exponent > 1) & (rng.random(count) < 0.2)
        low = np.where(exponent > 0, 2 ** np.maximum(exponent - 1, 0) + 1, 1)
        width = np.where(partial, rng.integers(low, width + 1), width)
        runtime = np.maximum(1, np.round(np.exp(rng.uniform(0.0, math.log(36_000), count))))
        factor = np.where(rng.random(count) < 0.2, 1.0, rng.uniform(1.0, 5.0, count))
        requested = 60 * np.ceil(runtime * factor / 60)
        if not mean_gap:
            mean_gap = float(np.mean(width * runtime)) / (load * procs)
        times = submit + np.cumsum(rng.exponential(mean_gap, count))
        submit = float(times[-1])
        texts = [pc.cast(pa.array(values.astype(np.int64)), pa.string()) for values in (
            np.arange(first, first + count), times, runtime, width, width, requested)]
        number, at, run, allocated, asked, limit = texts
        lines = pc.binary_join_element_wise(
            number, at, "-1", run, allocated, "-1", "-1", asked, limit,
            "-1 1 1 1 -1 1 -1 -1 -1\n", " ")
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
        write(lines.buffers()[2].to_pybytes()[offsets[0]:offsets[count]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobs", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--procs", type=int, default=1024)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--blocks", action="store_true",
                        help="draw with NumPy a block at a time, writing as it goes")
    args = parser.parse_args()
    if not args.blocks:
        args.out.write_text(generate(args.jobs, args.procs, args.load, args.seed))
    elif str(args.out) == "-":
        write_blocks(args.jobs, sys.stdout.buffer.write, args.procs, args.load, args.seed)
    else:
        with args.out.open("wb") as out:
            write_blocks(args.jobs, out.write, args.procs, args.load, args.seed)


if __name__ == "__main__":
    main()
