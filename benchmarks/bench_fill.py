"""A 1,048,576-rank Flux R to environment JSON with ``--fill clock-rate=2.4GHz``, as a user
runs it: ``dcx convert r.json env.json --to environment --fill clock-rate=2.4GHz``.

R states no clock rate, which the jsspp-osp schema needs for every CPU; the fill puts one
into the ranks' group template, and the writer writes one definition with each rank a
``$base`` unit. Printed: wall and CPU seconds, peak RSS and the output's size, and how many
definitions it has; then the same in-process by phase (read R, fill, losses, write, read the
output back: ``convert`` writes only what reads back accepted).

Baselines from the same run, on the output file: ``dcx validate`` of it (the read-back alone,
as a user checks the file later) and a bare ``json.load`` of it (the least any reader of
these bytes pays). Every figure runs in a fresh subprocess; wall seconds and peak RSS come
from ``os.wait4`` (that child alone). ``DCX_BENCH_RANKS`` changes the size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from child import run_code

RANKS = int(os.environ.get("DCX_BENCH_RANKS", str(1 << 20)))
FILL = "clock-rate=2.4GHz"


def measured(code: str, *args: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of ``python -c code args`` alone."""
    return run_code(code, *args, what=f"bench_fill: {code.splitlines()[1]!r}")


CONVERT = f"""
import sys
from dcx.cli.main import main
sys.exit(main(["convert", "--quiet", sys.argv[1], sys.argv[2], "--to", "environment",
               "--fill", "{FILL}"]))
"""

VALIDATE = """
import sys
from dcx.cli.main import main
sys.exit(main(["validate", "--quiet", sys.argv[1]]))
"""

JSON_LOAD = """
import json, sys
with open(sys.argv[1], "rb") as stream:
    json.load(stream)
"""

PHASES = f"""
import sys, time
from pathlib import Path
from dcx.converters.fill import apply_fills, parse_fill
from dcx.converters.losses import conversion_losses
from dcx.core.limits import paused_gc
from dcx.core.restrict import normalized_for
from dcx.formats import environment, flux_r

def phase(label, action):
    started = time.perf_counter()
    value = action()
    print(f"  {{label:<40}}{{time.perf_counter() - started:>8.2f}} s")
    return value

data = Path(sys.argv[1]).read_bytes()
with paused_gc():
    read = phase("read R", lambda: flux_r.read(data))
    document, _ = phase("fill {FILL}", lambda: apply_fills(read.document, [parse_fill("{FILL}")]))
    target = environment.FORMAT
    phase("losses", lambda: conversion_losses(document, target, normalized_for(document, target)))
    written = phase("write environment JSON", lambda: environment.write(document))
    back = phase("read the output back (validate)", lambda: environment.read(written.data))
assert back.ok
"""


def line(label: str, figures: tuple[float, float, float], note: str = "") -> None:
    wall, cpu, rss = figures
    print(f"{label:<34}{wall:>8.2f}{cpu:>8.2f}{rss:>8.0f}  {note}")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        source, output = Path(folder) / "r.json", Path(folder) / "env.json"
        last = RANKS - 1
        source.write_text(json.dumps({"version": 1, "execution": {
            "R_lite": [{"rank": f"0-{last}", "children": {"core": "0-31"}}],
            "starttime": 0, "expiration": 0, "nodelist": [f"node[0-{last}]"]}}))
        print(f"bench_fill: {RANKS:,}-rank Flux R -> environment JSON --fill {FILL}; "
              "wall s, CPU s, peak RSS MB")
        print(f"{'':<34}{'wall':>8}{'cpu':>8}{'MB':>8}")
        convert = measured(CONVERT, str(source), str(output))
        written = json.loads(output.read_bytes())
        definitions = written["definitions"]["dcx:machines"]
        size = output.stat().st_size
        line("dcx convert --fill", convert,
             f"{size / 1e6:.0f} MB ({size / RANKS:.0f} bytes per rank), "
             f"{len(definitions)} definition(s)")
        del written
        validate = measured(VALIDATE, str(output))
        line("baseline: dcx validate output", validate,
             f"convert is {convert[0] / validate[0]:.2f}x the validate of its output")
        load = measured(JSON_LOAD, str(output))
        line("baseline: json.load output", load,
             f"convert is {convert[0] / load[0]:.1f}x a bare JSON load")
        print("phases, in one process:")
        subprocess.run([sys.executable, "-c", PHASES, str(source)], check=True)


if __name__ == "__main__":
    main()
