"""OpenDC workload folders at archive scale: a seeded 1,000,000-job SWF (``generate_swf.py``)
converted to an OpenDC workload folder (tasks.parquet, fragments.parquet) and back, each
figure beside its baseline measured in the same run: the same conversions to and from dcx's
own Parquet workload format (one file, the model's columns).

1. ``dcx convert`` SWF -> opendc-workload against SWF -> parquet;
2. ``dcx validate`` of the folder against ``dcx validate`` of the Parquet file;
3. ``dcx convert`` opendc-workload -> SWF against parquet -> SWF;
4. the format alone, in one process: writing the SWF's model (normal form and bytes) and
   reading the bytes back, against the same for parquet (what ``dcx convert`` adds on top is
   the loss derivation and the read-back check).

Every figure runs in a fresh subprocess; wall seconds and peak RSS come from ``os.wait4``.
``DCX_BENCH_JOBS`` changes the trace size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate_swf import generate

JOBS = int(os.environ.get("DCX_BENCH_JOBS", "1000000"))

CLI = """
import sys
from dcx.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def measured(*argv: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``dcx argv`` in a child process of its own."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", CLI, *argv])
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_opendc: dcx {' '.join(argv)} failed")
    return wall, usage.ru_maxrss / 1024


FORMAT_ONLY = """
import json, sys, time
from pathlib import Path
from dcx.converters.registry import get
from dcx.formats import swf
document = swf.read(Path(sys.argv[1]).read_bytes()).document
figures = {}
for name in ("opendc-workload", "parquet"):
    spec = get(name)
    started = time.perf_counter()
    data = spec.write(document).data
    written = time.perf_counter() - started
    started = time.perf_counter()
    assert spec.read(data).ok
    figures[name] = (written, time.perf_counter() - started)
print(json.dumps(figures))
"""


def format_only(trace: Path) -> dict[str, tuple[float, float]]:
    done = subprocess.run([sys.executable, "-c", FORMAT_ONLY, str(trace)], check=True,
                          capture_output=True, text=True)
    import json

    return {name: (write, read) for name, (write, read) in json.loads(done.stdout).items()}


def row(what: str, figure: tuple[float, float], baseline: tuple[float, float]) -> None:
    print(f"{what:<34} {figure[0]:6.2f} s {figure[1]:7.0f} MB   parquet {baseline[0]:6.2f} s "
          f"{baseline[1]:7.0f} MB   ratio {figure[0] / baseline[0]:4.2f}x")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        trace = folder / "trace.swf"
        trace.write_text(generate(JOBS), encoding="ascii")
        opendc, parquet = folder / "opendc", folder / "trace.parquet"
        print(f"{JOBS:,}-job SWF ({trace.stat().st_size / 1e6:.0f} MB)")
        to_opendc = measured("convert", "-q", str(trace), str(opendc), "--to", "opendc-workload")
        to_parquet = measured("convert", "-q", str(trace), str(parquet), "--to", "parquet")
        row("SWF -> opendc-workload", to_opendc, to_parquet)
        size = sum(path.stat().st_size for path in opendc.iterdir())
        print(f"{'':<34} folder {size / 1e6:.1f} MB, parquet {parquet.stat().st_size / 1e6:.1f} MB")
        row("validate", measured("validate", "-q", str(opendc)),
            measured("validate", "-q", str(parquet)))
        back, back_baseline = folder / "back.swf", folder / "baseline.swf"
        row("opendc-workload -> SWF", measured("convert", "-q", str(opendc), str(back)),
            measured("convert", "-q", str(parquet), str(back_baseline)))
        alone = format_only(trace)
        print(f"{'write (format alone)':<34} {alone['opendc-workload'][0]:6.2f} s {'':10} "
              f"parquet {alone['parquet'][0]:6.2f} s {'':10} ratio "
              f"{alone['opendc-workload'][0] / alone['parquet'][0]:4.2f}x")
        print(f"{'read (format alone)':<34} {alone['opendc-workload'][1]:6.2f} s {'':10} "
              f"parquet {alone['parquet'][1]:6.2f} s {'':10} ratio "
              f"{alone['opendc-workload'][1] / alone['parquet'][1]:4.2f}x")
        identical = subprocess.run(["cmp", "-s", str(back), str(back_baseline)],
                                   check=False).returncode == 0
        print(f"SWF back from the folder {'equals' if identical else 'differs from'} SWF back "
              "from parquet (the folder holds less: requested times, users, nodes)")


if __name__ == "__main__":
    main()
