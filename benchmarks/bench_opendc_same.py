"""An OpenDC workload converted to an OpenDC workload: a folder of 10,000,000 fragments that
compresses to a few hundred KB (10,000 tasks of 1,000 fragments each, every task the same
profile of alternating usages, as a trace sampled at a fixed step repeats itself), the case
where each task's profile travels through the model.

``dcx convert FOLDER OUT --to opendc-workload`` runs in a child of its own (its CPU seconds
and peak RSS are its own), first with the baseline (``DCX_BENCH_BASELINE``, a git revision
of this repository: the project at that revision, exported and imported in place of the
installed one; default ``38e057f``, before profiles were kept as distinct profiles and
normalised column by column), then with the installed dcx; the two outputs' tables are
compared. ``DCX_BENCH_BASELINE=none`` skips the baseline. ``DCX_BENCH_TASKS`` and
``DCX_BENCH_FRAGMENTS_PER_TASK`` change the folder's size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from io import BytesIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from child import Usage, run_child

REPO = Path(__file__).resolve().parent.parent
TASKS = int(os.environ.get("DCX_BENCH_TASKS", "10000"))
PER_TASK = int(os.environ.get("DCX_BENCH_FRAGMENTS_PER_TASK", "1000"))
BASELINE = os.environ.get("DCX_BENCH_BASELINE", "38e057f")

DCX = """
import sys
from dcx.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def write_folder(folder: Path) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    ids = np.arange(1, TASKS + 1, dtype=np.int32)
    step_ms = 300_000
    pq.write_table(pa.table({
        "id": pa.array(ids, pa.int32()),
        "submission_time": pa.array(np.full(TASKS, 1_700_000_000_000), pa.int64()).cast(
            pa.timestamp("ms", tz="UTC")),
        "duration": pa.array(np.full(TASKS, step_ms * PER_TASK), pa.int64()),
        "cpu_count": pa.array(np.full(TASKS, 4), pa.int32()),
        "cpu_capacity": pa.array(np.full(TASKS, 4000.0), pa.float64()),
        "mem_capacity": pa.array(np.full(TASKS, 1_024_000), pa.int64())}),
        folder / "tasks.parquet")
    usage = np.tile(np.array([1000.0, 2000.0]), (TASKS * PER_TASK + 1) // 2)[:TASKS * PER_TASK]
    pq.write_table(pa.table({
        "id": pa.array(np.repeat(ids, PER_TASK), pa.int32()),
        "duration": pa.array(np.full(TASKS * PER_TASK, step_ms), pa.int64()),
        "cpu_usage": pa.array(usage, pa.float64())}), folder / "fragments.parquet")


def baseline_tree(revision: str, scratch: Path) -> Path:
    """The project at ``revision`` as an importable ``dcx`` package (its ``package-dir``
    folders linked under ``dcx/``)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision], check=True,
                             capture_output=True).stdout
    source = scratch / "source"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(source, filter="data")
    folders = tomllib.loads((source / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"]
    root = scratch / "tree" / "dcx"
    root.mkdir(parents=True)
    top = source / folders["dcx"]
    for entry in top.iterdir():
        if entry.name.endswith((".py", ".typed")):
            (root / entry.name).symlink_to(entry)
    for package, folder in folders.items():
        if package.count(".") == 1:
            (root / package.removeprefix("dcx.")).symlink_to(source / folder)
    return scratch / "tree"


def convert(folder: Path, out: Path, tree: Path | None, what: str) -> Usage:
    env_path = os.environ.get("PYTHONPATH", "")
    if tree is not None:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(tree), env_path)))
    try:
        return run_child([sys.executable, "-c", DCX, "convert", "-q", str(folder), str(out),
                          "--to", "opendc-workload"], what)
    finally:
        os.environ["PYTHONPATH"] = env_path


def same_tables(a: Path, b: Path) -> bool:
    import pyarrow.parquet as pq

    return all(pq.read_table(a / name).equals(pq.read_table(b / name))
               for name in ("tasks.parquet", "fragments.parquet"))


def show(label: str, usage: Usage) -> None:
    print(f"  {label:<10} {usage.wall_s:7.1f} s wall  {usage.cpu_s:7.1f} s CPU  "
          f"{usage.peak_rss_mb:7.0f} MB peak RSS")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        folder = scratch / "in"
        write_folder(folder)
        size = sum(path.stat().st_size for path in folder.iterdir())
        print(f"OpenDC -> OpenDC, {TASKS:,} tasks of {PER_TASK:,} fragments "
              f"({TASKS * PER_TASK:,} fragments, {size / 1024:,.0f} KB on disk)")
        before = None
        if BASELINE != "none":
            tree = baseline_tree(BASELINE, scratch / "baseline")
            before = convert(folder, scratch / "before", tree, "baseline conversion")
            show(f"{BASELINE}", before)
        after = convert(folder, scratch / "after", None, "conversion")
        show("now", after)
        if before is not None:
            print(f"  ratio      {before.wall_s / after.wall_s:7.1f}x wall, "
                  f"{before.peak_rss_mb / after.peak_rss_mb:.1f}x memory; same tables: "
                  f"{same_tables(scratch / 'before', scratch / 'after')}")


if __name__ == "__main__":
    main()
