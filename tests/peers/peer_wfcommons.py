"""WfCommons (PyPI ``wfcommons``) on WfFormat instances: its own instance loader reads each
file, validating it against the WfFormat schema of the version the file declares plus its
semantic checks (declared parents, children and files, no cycle, metrics), and the workflow
it builds must have the tasks, dependencies, runtimes and files dcx reads.

The schema: WfCommons fetches the schema of the WfFormat release it writes from GitHub and
caches it (``~/.cache/wfcommons``). A cached upstream schema that accepts the file's version
is used; otherwise, for 1.5, the schema dcx ships for WfFormat 1.5
(``schemas/wfformat.schema.json``, written from the upstream one), since CI reaches no host
but the package registries. Usage: see ``peerlib.py``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from peerlib import Peer, installed_version, main, read_with_dcx

from dcx.core.model import Document

REQUIREMENT = "wfcommons==1.6"
DCX_SCHEMA_VERSION = "1.5"


def schema_for(version: str) -> Path | None:
    """A WfFormat schema whose ``schemaVersion`` accepts ``version``: WfCommons' cached
    upstream copy when it has one, else dcx's 1.5 schema for 1.5."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wfcommons"
    for path in sorted(cache.glob("wfformat-v*-wfcommons-schema.json")):
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if version in schema.get("properties", {}).get("schemaVersion", {}).get("enum", []):
            return path
    if version == DCX_SCHEMA_VERSION:
        with resources.as_file(resources.files("dcx.schemas") / "wfformat.schema.json") as path:
            return Path(path)
    return None


def _dcx_view(document: Document) -> dict[str, tuple[float, frozenset[str], tuple[Any, ...]]]:
    """Task id -> (runtime, parents, files as (id, size, direction)) as dcx reads them."""
    assert document.workload is not None
    specification = document.workload.extras.get("wfformat:specification", {})
    sizes = {item["id"]: item.get("sizeInBytes") for item in specification.get("files", [])}
    view = {}
    for task in document.workload.tasks():
        own = task.extras.get("wfformat:task", {})
        files = tuple(sorted((name, sizes.get(name, 0), key) for key in ("inputFiles",
                                                                        "outputFiles")
                             for name in own.get(key, [])))
        view[str(task.id)] = (task.runtime_s or 0.0,
                              frozenset(str(parent) for parent in task.dependencies), files)
    return view


class _Errors(logging.Handler):
    """The errors WfCommons logs while loading (its exception only says that there were)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _wfcommons_view(path: str, schema: Path) -> dict[str, tuple[float, frozenset[str],
                                                                 tuple[Any, ...]]]:
    from wfcommons.wfinstances import Instance

    logger = logging.getLogger("peer_wfcommons")
    logger.propagate = False
    errors = _Errors()
    logger.handlers = [errors]
    try:
        workflow = Instance(Path(path), schema_file=str(schema), logger=logger).workflow
    except RuntimeError as exc:
        found = list(dict.fromkeys(errors.messages))[:3]
        raise RuntimeError(f"WfCommons rejects it: {'; '.join(found) or exc}") from None
    view = {}
    for task_id, task in workflow.tasks.items():
        files = tuple(sorted([(f.file_id, f.size, "inputFiles") for f in task.input_files]
                             + [(f.file_id, f.size, "outputFiles") for f in task.output_files]))
        view[str(task_id)] = (float(task.runtime),
                              frozenset(str(p) for p in workflow.tasks_parents[task_id]), files)
    return view


def check(path: str) -> str | None:
    with open(path, encoding="utf-8") as stream:
        version = str(json.load(stream).get("schemaVersion"))
    schema = schema_for(version)
    if schema is None:
        return f"no WfFormat {version} schema here (WfCommons fetches it from GitHub)"
    theirs = _wfcommons_view(path, schema)
    ours = _dcx_view(read_with_dcx(path, "wfformat"))
    return _difference(ours, theirs)


def _difference(ours: dict[str, Any], theirs: dict[str, Any]) -> str | None:
    if set(ours) != set(theirs):
        return (f"tasks differ: only dcx reads {_few(set(ours) - set(theirs))}, only "
                f"WfCommons {_few(set(theirs) - set(ours))}")
    for task_id in ours:
        for what, mine, its in zip(("runtime", "parents", "files"), ours[task_id],
                                   theirs[task_id], strict=True):
            if mine != its:
                return f"task {task_id}: {what} {_shown(mine)} in dcx, {_shown(its)} in WfCommons"
    return None


def _few(items: Iterable[str]) -> str:
    listed = sorted(items)
    return ", ".join(listed[:5]) + (" …" if len(listed) > 5 else "") if listed else "none"


def _shown(value: Any) -> str:
    return _few(value) if isinstance(value, frozenset) else repr(value)


def version() -> str | None:
    # from its metadata: importing WfCommons takes seconds (it loads its recipe catalogue)
    if importlib.util.find_spec("wfcommons") is None:
        return None
    return installed_version("wfcommons")


PEER = Peer("wfcommons", (REQUIREMENT,), check, version)

if __name__ == "__main__":
    raise SystemExit(main(PEER))
