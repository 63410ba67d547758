"""Traces at archive scale: a seeded 1,000,000-job SWF (``generate_swf.py``), each figure
beside its baseline measured in the same run.

1. ``dcx validate`` of the SWF (the vectorised accept path; columns) against the
   line-by-line exact path building one object per job (what ``validate`` did before);
2. ``dcx convert`` SWF -> Parquet against converting the object model;
3. Parquet -> SWF: the bytes are compared with SWF's own normal form of the trace;
4. the scheduler's read + compile of the trace (``load_problem``, FCFS-EASY's input), with
   the columnar read against the exact read.

Every figure runs in a fresh subprocess; wall seconds and peak RSS come from ``os.wait4``
(``resource`` usage of that child alone). ``DCX_BENCH_JOBS`` changes the trace size.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from child import run_child, run_code

JOBS = int(os.environ.get("DCX_BENCH_JOBS", "1000000"))


def measured(code: str, *args: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of ``python -c code args`` alone."""
    return run_code(code, *args, what=f"bench_scale: {code.splitlines()[0]!r}")


VALIDATE = """
import sys
from dcx.cli.main import main
sys.exit(main(["validate", "--quiet", sys.argv[1]]))
"""

VALIDATE_EXACT = """
import sys
from pathlib import Path
from dcx.core.limits import paused_gc
from dcx.formats.swf import codec
with paused_gc():
    result = codec._read(Path(sys.argv[1]).read_bytes())
sys.exit(0 if result.ok and len(result.document.workload.jobs) else 1)
"""

CONVERT = """
import sys
from dcx.cli.main import main
sys.exit(main(["convert", "--quiet", sys.argv[1], sys.argv[2], "--to", "parquet"]))
"""

CONVERT_OBJECTS = """
import sys
from dataclasses import replace
from pathlib import Path
from dcx.converters.convert import convert_document
from dcx.converters.registry import get
from dcx.core.limits import paused_gc
from dcx.formats.swf import codec
with paused_gc():
    read = codec._read(Path(sys.argv[1]).read_bytes())
    conversion = convert_document(read.document, get("swf"), get("parquet"), read=read)
Path(sys.argv[2]).write_bytes(conversion.data)
sys.exit(0 if conversion.ok else 1)
"""

ROUND_TRIP = """
import sys
from pathlib import Path
from dcx.formats import parquet, swf
back = swf.write(parquet.read(Path(sys.argv[2]).read_bytes()).document).data
normal = swf.write(swf.read(Path(sys.argv[1]).read_bytes()).document).data
print(f"Parquet -> SWF: {len(back):,} bytes, identical to SWF's normal form: "
      f"{'yes' if back == normal else 'NO'}")
sys.exit(0 if back == normal else 1)
"""

SCHEDULE_READ = """
import sys
from pathlib import Path
from dcx.scheduler.loading import load_problem
loaded = load_problem(Path(sys.argv[1]), None)
sys.exit(0 if loaded.problem is not None else 1)
"""

SCHEDULE_READ_EXACT = """
import sys
from pathlib import Path
from dcx.formats.swf import codec
codec.FAST_READ_BYTES = float("inf")  # every read line by line: the baseline
from dcx.scheduler.loading import load_problem
loaded = load_problem(Path(sys.argv[1]), None)
sys.exit(0 if loaded.problem is not None else 1)
"""


def row(label: str, now: tuple[float, float, float],
        baseline: tuple[float, float, float]) -> None:
    print(f"{label:<34}{now[0]:>8.2f}{now[1]:>8.2f}{now[2]:>8.0f}"
          f"{baseline[0]:>10.2f}{baseline[1]:>8.2f}{baseline[2]:>8.0f}"
          f"{baseline[0] / now[0]:>8.1f}x")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.swf"
        output = Path(folder) / "trace.parquet"
        baseline_output = Path(folder) / "baseline.parquet"
        # drawn in a child: a measured child's peak RSS counts the pages of this process it
        # shares until its exec, so this process must stay small (it held the trace: +300 MB)
        run_child([sys.executable, str(Path(__file__).resolve().parent / "generate_swf.py"),
                   str(JOBS), str(trace)], "bench_scale: generate_swf.py")
        print(f"bench_scale: {JOBS:,}-job SWF, {trace.stat().st_size / 1e6:.0f} MB; "
              "wall s, CPU s, peak RSS MB; baseline = the exact path building objects")
        print(f"{'':<34}{'wall':>8}{'cpu':>8}{'MB':>8}{'base wall':>10}{'cpu':>8}{'MB':>8}"
              f"{'ratio':>9}")
        validated = measured(VALIDATE, str(trace))
        row("dcx validate (SWF)", validated, measured(VALIDATE_EXACT, str(trace)))
        converted = measured(CONVERT, str(trace), str(output))
        row("dcx convert SWF -> Parquet", converted,
            measured(CONVERT_OBJECTS, str(trace), str(baseline_output)))
        print(f"Parquet: {output.stat().st_size / 1e6:.1f} MB")
        measured(ROUND_TRIP, str(trace), str(output))
        row("schedule read + compile", measured(SCHEDULE_READ, str(trace)),
            measured(SCHEDULE_READ_EXACT, str(trace)))
        print("targets (issue 18): validate <= 2 s and <= 400 MB, SWF -> Parquet <= 3 s")
        for what, usage, seconds, megabytes in (("validate", validated, 2.0, 400.0),
                                                ("SWF -> Parquet", converted, 3.0, None)):
            met = usage[1] <= seconds and (megabytes is None or usage[2] <= megabytes)
            print(f"  {what}: {usage[1]:.2f} CPU s, {usage[2]:.0f} MB: "
                  f"{'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
