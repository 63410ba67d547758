"""SWF traces to Batsim and osp-workload JSON with the normal form, its losses, the writer and
(Batsim) the read-back made column by column, against the task-by-task path of the same
commit (the baseline: the columnar functions switched off in the child, so every task is an
object on the way): ``dcx convert`` of a 200,000-job trace (read whole) and of a
1,000,000-job trace (16 MB and more: converted a chunk at a time,
the formats' ``stream_target.py``), each to both formats. The outputs are checked equal,
byte for byte.

Every figure runs in a fresh subprocess started by ``child.run_child``'s launcher: CPU
seconds and peak RSS are that conversion's alone, the read-back of its output included.
``DCX_BENCH_JSON_JOBS`` (``200000,1000000``) changes the traces' sizes.
"""

from __future__ import annotations

import filecmp
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from child import Usage, run_child
from generate_swf import generate

SIZES = [int(size) for size in os.environ.get("DCX_BENCH_JSON_JOBS",
                                              "200000,1000000").split(",")]

DCX = """
import sys
from dcx.cli.main import main
if sys.argv[1] == "objects":  # the baseline: every columnar function declines
    from dcx.formats.batsim import codec as batsim
    from dcx.formats.osp_workload import codec as osp

    batsim._normal_columns = lambda *_: None
    batsim._plain_job_columns = lambda *_: None
    osp._normal_columns = lambda *_: None
    osp._plain_columns = lambda *_: None
sys.exit(main(sys.argv[2:]))
"""


def dcx(mode: str, *args: str) -> Usage:
    return run_child([sys.executable, "-c", DCX, mode, *args],
                     f"bench_json_targets: dcx {' '.join(args)}")


def main() -> None:
    print("bench_json_targets: SWF -> JSON workloads; wall s, CPU s, peak RSS MB")
    print(f"  {'':<40}{'wall':>8}{'cpu':>8}{'MB':>8}")
    with tempfile.TemporaryDirectory() as folder:
        for jobs in SIZES:
            trace = Path(folder) / f"trace{jobs}.swf"
            trace.write_text(generate(jobs))
            for target in ("batsim", "osp-workload"):
                runs = {}
                for mode in ("objects", "columns"):
                    out = Path(folder) / f"{mode}.json"
                    runs[mode] = dcx(mode, "convert", "--quiet", str(trace), str(out),
                                     "--to", target)
                    label = f"{jobs:,} jobs -> {target}, {mode}"
                    usage = runs[mode]
                    print(f"  {label:<40}{usage.wall_s:>8.2f}{usage.cpu_s:>8.2f}"
                          f"{usage.peak_rss_mb:>8.0f}")
                if not filecmp.cmp(Path(folder) / "objects.json", Path(folder) / "columns.json",
                                   shallow=False):
                    raise SystemExit(f"bench_json_targets: the {target} outputs differ")
                objects, columns = runs["objects"], runs["columns"]
                print(f"    columns / objects: CPU {columns.cpu_s / objects.cpu_s:.2f}x, peak "
                      f"RSS {columns.peak_rss_mb / objects.peak_rss_mb:.2f}x; the same bytes")
            trace.unlink()


if __name__ == "__main__":
    main()
