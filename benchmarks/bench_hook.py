"""The pre-commit hook on 1,000 files in one batch, as pre-commit runs it (one process).

Baseline measured in the same run: the same process start-up with an empty file list of
foreign files (interpreter + dcx CLI import), so the ratio shows what validation adds.
Files: copies of the project's own examples (every installed format), with 10% of them
made invalid, plus foreign JSON files the hook must skip.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FILES = 1000
BROKEN_EVERY = 10


def make_batch(folder: Path) -> list[str]:
    examples = sorted(p for p in (REPO / "examples").rglob("*") if p.is_file())
    if not examples:
        raise SystemExit("no examples/ files to benchmark with")
    paths = []
    for index in range(FILES):
        source = examples[index % len(examples)]
        target = folder / f"{index:04d}-{source.name}"
        if index % BROKEN_EVERY == BROKEN_EVERY - 1:
            data = source.read_bytes()
            target.write_bytes(data[: len(data) // 2])  # truncated: invalid in every format
        elif index % BROKEN_EVERY == 0:
            target = folder / f"{index:04d}-package.json"
            target.write_text('{"name": "not-ours", "version": "1.0.0"}\n')
        else:
            shutil.copy(source, target)
        paths.append(str(target))
    return paths


def timed_hook(paths: list[str]) -> tuple[float, int, int]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dcx.cli", "validate", "--hook",
                           *paths], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    return elapsed, done.returncode, len(done.stderr.splitlines())  # diagnostics go to stderr


def main() -> None:
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        paths = make_batch(folder)
        foreign = folder / "only-foreign.json"
        foreign.write_text('{"name": "not-ours"}\n')
        baseline = min(timed_hook([str(foreign)])[0] for _ in range(3))
        json_only = [p for p in paths if p.endswith(".json")]
        json_time, _, _ = timed_hook(json_only)
        elapsed, code, lines = timed_hook(paths)
    print(f"hook start-up baseline (1 foreign file): {baseline:.3f} s")
    print(f"{len(json_only)} JSON files in one batch: {json_time:.3f} s "
          f"({json_time / baseline:.1f}x baseline)")
    print(f"{FILES} files in one batch: {elapsed:.3f} s ({elapsed / baseline:.1f}x baseline), "
          f"{1000 * (elapsed - baseline) / FILES:.2f} ms per file after start-up; "
          f"exit {code}, {lines} diagnostic lines")


if __name__ == "__main__":
    main()
