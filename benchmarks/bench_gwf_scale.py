"""GWF at archive scale: a seeded 1,000,000-task file of each variant, ``dcx validate`` (the
vectorised accept path, ``dcx.formats.gwf.fast``; from 16 MB a chunk at a time,
``bench_gwf_stream`` compares that with the whole file) beside the exact line-by-line path
building one object per task (what ``validate`` did before), on the same file in the same
run.

* workflow variant: SC18's comma-separated, space-padded lines as dcx writes them, tasks in
  workflows of 1 to 60 tasks, each depending on up to three earlier tasks of its workflow;
* archive variant: 29 whitespace-separated columns, ``-1`` where unknown, the columns a
  Grid Workloads Archive trace fills (times, processors, memory, user, group, status).

Every figure runs in a fresh subprocess (the traces are made in one too); wall seconds and
peak RSS come from ``os.wait4`` (``resource`` usage of that child alone).
``DCX_BENCH_TASKS`` changes the size.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from child import run_code

TASKS = int(os.environ.get("DCX_BENCH_TASKS", "1000000"))

WORKFLOW_HEADER = ("WorkflowID, JobID     , SubmitTime, RunTime   , NProcs    , ReqNProcs , "
                   "Dependencies")
ARCHIVE_HEADER = ("# JobID SubmitTime WaitTime RunTime NProcs AverageCPUTimeUsed UsedMemory "
                  "ReqNProcs ReqTime ReqMemory Status UserID GroupID ExecutableID QueueID "
                  "PartitionID OrigSiteID LastRunSiteID JobStructure JobStructureParams "
                  "UsedNetwork UsedLocalDiskSpace UsedResources ReqPlatform ReqNetwork "
                  "ReqLocalDiskSpace ReqResources VOID ProjectID")


def workflow_trace(tasks: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    lines = [WORKFLOW_HEADER]
    workflow, first_of_workflow, left, submit = -1, 1, 0, 0
    for task in range(1, tasks + 1):
        if left == 0:
            workflow, first_of_workflow, left = workflow + 1, task, rng.randint(1, 60)
            submit += rng.randint(0, 600)
        left -= 1
        earlier = range(first_of_workflow, task)
        needs = rng.sample(earlier, min(len(earlier), rng.choice((0, 1, 1, 2, 3))))
        cores = rng.choice((1, 1, 1, 2, 4, 8))
        values = (workflow, task, submit + rng.randint(0, 30), rng.randint(1, 3600), cores,
                  cores, " ".join(map(str, sorted(needs))))
        lines.append(", ".join(f"{value:<10}" for value in values))
    return "\n".join(lines) + "\n"


def archive_trace(tasks: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    lines = [ARCHIVE_HEADER]
    submit = 0
    for task in range(1, tasks + 1):
        submit += rng.randint(0, 20)
        cores = rng.choice((1, 1, 2, 4, 8, 16))
        runtime = rng.randint(1, 36_000)
        lines.append(
            f"{task} {submit} {rng.randint(0, 900)} {runtime} {cores} -1 -1 {cores} "
            f"{runtime * 2} {rng.choice((-1, 1024, 2048))} 1 {rng.randint(1, 300)} "
            f"{rng.randint(1, 20)} -1 {rng.randint(1, 4)} -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 "
            "-1 -1 -1")
    return "\n".join(lines) + "\n"


_MAKE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from bench_gwf_scale import archive_trace, workflow_trace
make = workflow_trace if sys.argv[2] == "workflow" else archive_trace
Path(sys.argv[3]).write_text(make(int(sys.argv[4])))
"""


def make_trace(variant: str, path: Path, tasks: int) -> None:
    """Write a trace of ``variant`` in a child process: a child forked from a parent that
    held the trace would start with the parent's resident memory, and its peak RSS (what
    the benchmarks report) would count it."""
    subprocess.run([sys.executable, "-c", _MAKE, str(Path(__file__).resolve().parent),
                    variant, str(path), str(tasks)], check=True)


def measured(code: str, *args: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of ``python -c code args`` alone."""
    return run_code(code, *args, what=f"bench_gwf_scale: {code.splitlines()[1]!r}")


VALIDATE = """
import sys
from dcx.cli.main import main
sys.exit(main(["validate", "--quiet", sys.argv[1]]))
"""

VALIDATE_EXACT = """
import sys
from pathlib import Path
from dcx.core.limits import paused_gc
from dcx.formats.gwf import codec
with paused_gc():
    result = codec._read(Path(sys.argv[1]).read_bytes())
sys.exit(0 if result.ok and not result.diagnostics and len(result.document.workload.jobs) else 1)
"""

TAKES_FAST_PATH = """
import sys
from pathlib import Path
from dcx.formats.gwf import fast
sys.exit(0 if fast.read_fast(Path(sys.argv[1]).read_bytes()) is not None else 1)
"""


def row(label: str, now: tuple[float, float, float],
        baseline: tuple[float, float, float]) -> None:
    print(f"{label:<30}{now[0]:>8.2f}{now[1]:>8.2f}{now[2]:>8.0f}"
          f"{baseline[0]:>10.2f}{baseline[1]:>8.2f}{baseline[2]:>8.0f}"
          f"{baseline[0] / now[0]:>8.1f}x")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        traces = {"workflow": Path(folder) / "workflow.gwf",
                  "archive": Path(folder) / "archive.gwf"}
        for variant, trace in traces.items():
            make_trace(variant, trace, TASKS)
        print(f"bench_gwf_scale: {TASKS:,}-task GWF; wall s, CPU s, peak RSS MB; "
              "baseline (before) = the exact path building objects")
        print(f"{'':<30}{'wall':>8}{'cpu':>8}{'MB':>8}{'base wall':>10}{'cpu':>8}{'MB':>8}"
              f"{'ratio':>9}")
        for variant, trace in traces.items():
            measured(TAKES_FAST_PATH, str(trace))  # fails the run if the file would not
            row(f"dcx validate ({variant}, {trace.stat().st_size / 1e6:.0f} MB)",
                measured(VALIDATE, str(trace)), measured(VALIDATE_EXACT, str(trace)))


if __name__ == "__main__":
    main()
