"""The legacy pre-1.0 text LWF (read only; written back as XML): whitespace-separated, ``#``
comments, ten fields per line (``submit start duration realduration numnodes cpu mem disk
image imagesize``), seconds and MB, start -1 = best-effort."""

from __future__ import annotations

from dcx.core.diagnostics import InputError, error, warning
from dcx.core.model import Document, Job, NamedResource, ResourceRequest, StartMode, Task, Workload
from dcx.formats.haizea.checked import Requests, note_arrival, report_arrival_order
from dcx.formats.haizea.context import Context

_LEGACY_FIELDS = ("submit", "start", "duration", "realduration", "numnodes", "cpu", "mem",
                  "disk", "image", "imagesize")


def read_legacy(data: bytes, context: Context) -> Document | None:
    """Pre-1.0 text: ``submit start duration realduration numnodes cpu mem disk image
    imagesize`` per line, seconds and MB, start -1 = best-effort."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(error("file is not valid UTF-8", "haizea.legacy-encoding",
                               line=line)) from None
    requests = Requests()
    jobs: list[Job] = []
    request_lines = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        content = raw.split("#", 1)[0].strip()
        if not content:
            continue
        request_lines += 1
        task = _legacy_task(content, number, len(jobs) + 1, context, requests)
        if task is not None:
            jobs.append(Job(id=task.id, tasks=(task,)))
    report_arrival_order(requests, context)
    if request_lines == 0:  # a line that was rejected has its own error
        context.diagnostics.append(warning("the workload has no lease requests",
                                           "haizea.empty-workload", line=1))
    return Document(workload=Workload(jobs=tuple(jobs)))


def _legacy_task(content: str, line: int, position: int, context: Context,
                 requests: Requests) -> Task | None:
    fields = content.split()
    pointer = ""
    if len(fields) != len(_LEGACY_FIELDS):
        context.diagnostics.append(error(
            f"legacy LWF lines have {len(_LEGACY_FIELDS)} fields "
            f"({' '.join(_LEGACY_FIELDS)}); this one has {len(fields)}", "haizea.legacy-fields",
            line=line, pointer=pointer))
        return None
    numbers: dict[str, float] = {}
    for name, value in zip(_LEGACY_FIELDS, fields, strict=True):
        if name == "image":
            continue
        try:
            numbers[name] = float(value)
        except ValueError:
            numbers[name] = float("nan")
        if numbers[name] != numbers[name] or abs(numbers[name]) == float("inf"):
            context.diagnostics.append(error(f"{name} {value!r} is not a number",
                                             "haizea.legacy-number", line=line, pointer=pointer))
            return None
    problems = [(name, "haizea.duration-not-positive", "a positive duration")
                for name in ("duration", "realduration") if numbers[name] <= 0]
    if numbers["numnodes"] < 1 or not numbers["numnodes"].is_integer():
        problems.append(("numnodes", "haizea.legacy-number", "a positive integer"))
    for name, code, expected in problems:
        context.diagnostics.append(error(f"{name} {numbers[name]:g} is not {expected}", code,
                                         line=line, pointer=pointer))
    if problems:
        return None
    note_arrival(numbers["submit"], lambda: line, lambda: pointer, requests)
    best_effort = numbers["start"] == -1
    resources = (NamedResource("Disk", numbers["disk"]),) if numbers["disk"] > 0 else ()
    request = ResourceRequest(nodes=int(numbers["numnodes"]), cores=numbers["cpu"],
                              memory_mb=numbers["mem"], resources=resources)
    return Task(
        id=position,
        submit_time_s=numbers["submit"],
        runtime_s=numbers["realduration"],
        requested_time_s=numbers["duration"],
        request=request,
        start_mode=StartMode.ANY if best_effort else StartMode.EXACT,
        start_time_s=None if best_effort else numbers["start"],
        preemptible=best_effort,
        image=fields[8],
        image_size_mb=numbers["imagesize"],
    )
