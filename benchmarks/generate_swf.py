"""A seeded synthetic SWF trace for the scheduler benchmarks: rigid parallel jobs on a
``MaxProcs``-processor machine, Poisson arrivals at a target offered load.

* widths: a power of two from 1 to the machine size, small ones far more likely (half the
  jobs are serial or 2-wide), plus a few non-powers;
* runtimes: log-uniform from 1 s to 10 h;
* requested times: the runtime times a user over-estimate factor (1 to 5, a fifth of the
  jobs exact), rounded up to a minute;
* arrivals: exponential gaps giving ``load`` x MaxProcs busy processors on average.

``python benchmarks/generate_swf.py JOBS OUT.swf [--procs 1024] [--load 0.9] [--seed 1]``
"""

from __future__ import annotations

import argparse
import math
import random
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobs", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--procs", type=int, default=1024)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.out.write_text(generate(args.jobs, args.procs, args.load, args.seed))


if __name__ == "__main__":
    main()
