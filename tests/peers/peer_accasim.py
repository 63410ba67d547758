"""AccaSim (PyPI ``accasim``) on SWF workloads: its SWF parser reads every job line, and its
simulator runs the whole file with the FIFO dispatcher (first-fit allocation) on a system
made for the file (as many single-core nodes as the largest job asks for, each with the
largest memory request); the jobs, their submit times, processors and runtimes must be
those dcx reads, and every job must be dispatched and run for its runtime.

AccaSim takes a job's *requested* processors (field 8) and falls back on the allocated ones
(field 5); dcx's request is the allocated count and keeps the requested one as
``swf:RequestedProcessors`` when they differ: the comparison is with that. A runtime of -1
(unknown) is compared as read; AccaSim then runs the job for -1 s, so its run time is not
checked. Usage: see ``peerlib.py``.
"""

from __future__ import annotations

import collections
import collections.abc
import json
import math
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peerlib import Peer, installed_version, main, read_with_dcx

from dcx.core.model import Document

REQUIREMENT = "accasim==1.1.3"
SIMULATION_TIMEOUT_S = 30
JOBS_PER_EXTRA_SECOND = 20
"""AccaSim simulates a few hundred jobs a second; a large trace gets time in proportion."""
SCHEDULE = {
    "format": "{job_id};{queue_time};{start_time};{end_time};{total_cpu}",
    "attributes": {"job_id": ("id", "str"), "queue_time": ("queued_time", "int"),
                   "start_time": ("start_time", "int"), "end_time": ("end_time", "int"),
                   "total_cpu": ("core", "int")},
}
"""AccaSim's dispatching plan, one line per job, with times as plain seconds."""


@dataclass(frozen=True)
class SwfJob:
    submit: float
    runtime: float
    processors: int
    requested_time: float


class SimulationTimeout(Exception):
    """AccaSim's simulation ran out of time (a job it can never start keeps it waiting)."""


def _time_out(signum: int, frame: object) -> None:
    raise SimulationTimeout


def _accasim_import() -> Any:
    # AccaSim 1.1.3 imports ``collections.Mapping``, which Python 3.10 removed (it is
    # ``collections.abc.Mapping``); nothing else of it needs changing.
    if not hasattr(collections, "Mapping"):
        collections.Mapping = collections.abc.Mapping  # type: ignore[attr-defined]
    import accasim.utils.reader_class as reader_class

    return reader_class


def dcx_jobs(document: Document) -> dict[str, SwfJob]:
    assert document.workload is not None
    jobs = {}
    for task in document.workload.tasks():
        processors = task.extras.get("swf:RequestedProcessors", -1)
        if processors == -1:  # unknown: AccaSim takes the allocated count, dcx's request
            processors = math.ceil(task.request.total_cores)
        jobs[str(task.id)] = SwfJob(task.submit_time_s, _unknown(task.runtime_s),
                                    int(processors), _unknown(task.requested_time_s))
    return jobs


def _unknown(value: float | None) -> float:
    return -1 if value is None else value


def accasim_jobs(path: str) -> tuple[dict[str, SwfJob], list[dict[str, Any]], str | None]:
    """The jobs AccaSim's SWF parser reads (as its reader feeds it: each line without its
    last character), their parsed fields, and the first job line it cannot read."""
    parser = _accasim_import().DefaultWorkloadParser()
    jobs: dict[str, SwfJob] = {}
    parsed: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as stream:
        for number, line in enumerate(stream, 1):
            text = line[:-1]
            fields = parser.parse_line(text)
            if fields is None:
                if text.strip() and not text.lstrip().startswith(";"):
                    return jobs, parsed, f"line {number}: AccaSim's SWF parser skips {text!r}"
                continue
            parsed.append(fields)
            jobs[str(fields["job_number"])] = SwfJob(
                fields["queued_time"], fields["duration"], fields["total_processors"],
                fields["requested_time"])
    return jobs, parsed, None


def simulate(path: str, parsed: list[dict[str, Any]],
             folder: Path) -> list[tuple[str, int, int, int, int]]:
    """AccaSim's FIFO dispatcher over the file: ``[job id, queued, start, end, cores]`` for
    each job it ran."""
    _accasim_import()
    from accasim.base.allocator_class import FirstFit
    from accasim.base.scheduler_class import FirstInFirstOut
    from accasim.base.simulator_class import Simulator

    nodes = max((fields["total_processors"] for fields in parsed), default=1)
    memory = max((fields.get("mem", 0) for fields in parsed), default=0)
    config = folder / "system.config"
    config.write_text(json.dumps({"groups": {"node": {"core": 1, "mem": max(memory, 0)}},
                                  "resources": {"node": max(nodes, 1)},
                                  "equivalence": {"processor": {"core": 1}}, "start_time": 0}))
    simulator = Simulator(path, str(config), FirstInFirstOut(FirstFit()),
                          RESULTS_FOLDER_PATH=str(folder / "results"), SCHEDULE_OUTPUT=SCHEDULE,
                          statistics_output=False, show_statistics=False)
    limit = SIMULATION_TIMEOUT_S + len(parsed) // JOBS_PER_EXTRA_SECOND
    previous = signal.signal(signal.SIGALRM, _time_out)
    signal.alarm(limit)
    try:
        outputs = simulator.start_simulation()
    except SimulationTimeout:
        raise SimulationTimeout(f"AccaSim's simulation did not finish in {limit} s") from None
    except Exception as exc:  # AccaSim's own refusal, whatever its class
        raise RuntimeError(f"AccaSim's simulation stops: {type(exc).__name__}: {exc}") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    plan = Path(outputs["sched-"]).read_text(encoding="utf-8").splitlines()
    return [_planned(line) for line in plan if line]


def _planned(line: str) -> tuple[str, int, int, int, int]:
    job_id, *times = line.split(";")
    try:
        queued, start, end, cores = (int(value) for value in times)
    except ValueError:
        raise ValueError(f"AccaSim's dispatching plan has {line!r}") from None
    return job_id, queued, start, end, cores


def check(path: str) -> str | None:
    theirs, parsed, unread = accasim_jobs(path)
    if unread:
        return unread
    ours = dcx_jobs(read_with_dcx(path, "swf"))
    if set(ours) != set(theirs):
        return (f"jobs differ: {len(ours)} read by dcx, {len(theirs)} by AccaSim; only dcx: "
                f"{_few(set(ours) - set(theirs))}; only AccaSim: {_few(set(theirs) - set(ours))}")
    for job_id, mine in ours.items():
        if mine != theirs[job_id]:
            return f"job {job_id}: dcx reads {mine}, AccaSim {theirs[job_id]}"
    with tempfile.TemporaryDirectory() as scratch:
        plan = simulate(path, parsed, Path(scratch))
    ran = {row[0]: row for row in plan}
    if set(ran) != set(ours):
        return (f"AccaSim's FIFO dispatcher ran {len(ran)} of {len(ours)} jobs; not run: "
                f"{_few(set(ours) - set(ran))}")
    for job_id, (_, queued, start, end, cores) in ran.items():
        job = ours[job_id]
        if (queued, cores) != (job.submit, job.processors) or (
                job.runtime >= 0 and end != start + job.runtime):
            return (f"job {job_id}: AccaSim ran it queued at {queued} on {cores} cores from "
                    f"{start} to {end}; dcx reads {job}")
    return None


def _few(items: set[str]) -> str:
    listed = sorted(items)
    return ", ".join(listed[:5]) + (" …" if len(listed) > 5 else "") if listed else "none"


def version() -> str | None:
    try:
        _accasim_import()
    except ImportError:
        return None
    return installed_version("accasim")


PEER = Peer("accasim", (REQUIREMENT,), check, version)

if __name__ == "__main__":
    raise SystemExit(main(PEER))
