"""Start one hostile-input command under its address-space cap and report what it used.

Run as ``python launch.py REPORT CAP_MB -- COMMAND...``. The test runner cannot read a
child's peak memory from its own ``wait4``: on Linux a forked child's high-water mark starts
at the forking process's resident size and survives ``exec``, so every case run from a large
pytest process would report pytest's size. This launcher is a fresh, small interpreter; the
command it starts inherits only the launcher's few megabytes, so the peak it reports is the
command's own. It writes the command's wait status and resource use to REPORT as JSON and
exits with the command's exit code.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys


def _cap_address_space(megabytes: int) -> None:
    cap = megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main(argv: list[str]) -> int:
    report, cap_mb, separator, *command = argv
    if separator != "--" or not command:
        print("usage: launch.py REPORT CAP_MB -- COMMAND...", file=sys.stderr)
        return 2
    _cap_address_space(int(cap_mb))
    # Popen keeps the inherited stdin/stdout/stderr, which the runner pointed at its files.
    child = subprocess.Popen(command)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # already reaped: tell Popen
    with open(report, "w", encoding="utf-8") as out:
        json.dump({"status": status, "cpu_seconds": usage.ru_utime + usage.ru_stime,
                   "peak_rss_kb": usage.ru_maxrss}, out)
    return child.returncode if child.returncode >= 0 else 128 - child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
