"""Adding a format is four places: its package, its schema, its example, its tests. This test
scaffolds a toy format package as DEVELOPING.md prescribes (a light front with the
declaration, a codec and a stream target loaded on first use) in a temporary copy of the
project (package, schema and example only: no package list, no registry line, no converter
module) and finds it in ``dcx formats``, the loss matrix, the hook manifest, the docs plan
and the pairs ``dcx convert`` streams, and converts a large SWF trace to it a chunk at a
time, as the whole file converts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

TOY_FRONT = '''"""Toy jobs: a ``#toy`` line, then one ``id submit runtime`` line per job
(made up by a test)."""

from __future__ import annotations

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred


def sniff(data: bytes) -> bool:
    return data.startswith(b"#toy")


read = deferred("dcx.formats.toy.codec", "read")


write = deferred("dcx.formats.toy.codec", "write")


FORMAT = FormatDeclaration(
    name="toy", title="Toy jobs", family="toy", kind="workload", extensions=(".toy",),
    content=frozenset({"text"}), schema="toy.schema.json",
    description="One job id, submit time and runtime per line.",
    holds=frozenset({"task.id", "task.submit_time_s", "task.runtime_s"}),
    sniff=sniff, read=read, write=write,
    codes=(Code("toy.line", "error", "A job line is not: id submit runtime."),),
    stream_target=deferred("dcx.formats.toy.stream_target", "ToyTarget"))
'''

TOY_CODEC = '''"""The toy format's reader and writer, loaded on first use."""

from __future__ import annotations

from dcx.core.diagnostics import ReadResult, WriteResult, error
from dcx.core.model import Document, Job, Task, Workload


def read(data: bytes) -> ReadResult:
    jobs = []
    for number, line in enumerate(data.decode().splitlines()[1:], start=2):
        fields = line.split()
        try:
            ident, submit, runtime = fields
            task = Task(id=int(ident) if ident.isdigit() else ident,
                        submit_time_s=float(submit),
                        runtime_s=None if runtime == "-" else float(runtime))
        except ValueError:
            return ReadResult(None, (error("a job line is: id submit runtime", "toy.line",
                                           line=number),))
        jobs.append(Job(id=task.id, tasks=(task,)))
    return ReadResult(Document(workload=Workload(jobs=tuple(jobs))))


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def job_lines(workload: Workload) -> str:
    return "".join(f"{task.id} {_number(task.submit_time_s)} {_number(task.runtime_s)}\\n"
                   for job in workload.jobs for task in job.tasks)


def write(document: Document) -> WriteResult:
    return WriteResult(("#toy\\n" + job_lines(document.workload or Workload())).encode())
'''

TOY_STREAM_TARGET = '''"""The toy format's stream target: each chunk's jobs as toy lines after
the ``#toy`` line, read back whole."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from dcx.core.model import Document, Workload
from dcx.core.streams import Source, Target


class ToyTarget(Target):
    jobs_are_rows = True
    reads_back = "whole"

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import toy

        self.spec = toy.FORMAT
        self.source = source

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dcx.formats.toy import codec

        return codec.job_lines(document.workload or Workload()).encode()

    def rows(self, part: Any) -> int:
        return int(part.count(b"\\n"))

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        rows = 0
        with self.opened(sink) as stream:
            stream.write(b"#toy\\n")
            for part in parts:
                stream.write(part)
                rows += part.count(b"\\n")
            at_end()
        return rows
'''

CHUNKED = ("import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import chunks\n"
           "from dcx.cli.main import main\nfrom dcx.formats.toy import stream_target\n"
           "streaming.STREAM_BYTES = 1 << 12\nchunks.CHUNK_BYTES = 1 << 10\n"
           "made = []\npart = stream_target.ToyTarget.part\n"
           "stream_target.ToyTarget.part = lambda *a: made.append(1) or part(*a)\n"
           "code = main(sys.argv[1:])\nprint(len(made))\nsys.exit(code)\n")
"""``dcx`` with the streaming threshold and the chunks lowered (so the test stays small),
printing how many parts the toy's stream target made."""


def swf_trace(jobs: int) -> str:
    """An SWF trace of ``jobs`` one-processor jobs, one a second."""
    return "; MaxProcs: 4\n" + "".join(
        f"{n} {n} 0 {n % 7 + 1} 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
        for n in range(1, jobs + 1))


def _copy_project(destination: Path) -> Path:
    ignore = shutil.ignore_patterns(".git", ".nox", "build", "__pycache__", "*.egg-info")
    shutil.copytree(REPO, destination, ignore=ignore, symlinks=True)
    return destination


def _run(project: Path, code: str, *argv: str) -> str:
    done = _done(project, code, *argv)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _done(project: Path, code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment["PYTHONPATH"] = os.pathsep.join([str(project / "src"),
                                                 str(project / "site" / "hooks")])
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          cwd=project, env=environment, check=False)


@pytest.mark.slow
def test_a_toy_format_in_four_places_appears_everywhere(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "project")
    package = project / "formats" / "toy"
    package.mkdir()
    (package / "__init__.py").write_text(TOY_FRONT, encoding="utf-8")
    (package / "codec.py").write_text(TOY_CODEC, encoding="utf-8")
    (package / "stream_target.py").write_text(TOY_STREAM_TARGET, encoding="utf-8")
    (project / "schemas" / "toy.schema.json").write_text(json.dumps(
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Toy jobs"}))
    (project / "examples" / "toy").mkdir()
    (project / "examples" / "toy" / "two.toy").write_text("#toy\n1 0 10\n2 5 2.5\n")
    where = _run(project, "import dcx.converters.registry as r; print(r.__file__)")
    assert where.startswith(str(project)), f"the copy's dcx was not the one imported: {where}"
    front = _run(project, "import sys, dcx.formats.toy; print('dcx.core.model' in sys.modules)")
    assert front.strip() == "False", "the toy's front loaded its codec at import"

    converted = _run(project, "from dcx.cli.main import main; raise SystemExit(main("
                     "['convert', 'examples/toy/two.toy', '-', '--to', 'toy', '-q']))")
    assert converted == "#toy\n1 0 10\n2 5 2.5\n"

    listing = _run(project, "from dcx.cli.main import main; main(['formats'])")
    assert "toy" in listing and "Toy jobs" in listing

    matrix = _run(project,
                  "from dcx.cli.main import main; main(['formats', '--matrix'])")
    assert "toy -> swf:" in matrix and "swf -> toy:" in matrix
    assert "sss -> toy: impossible" in matrix

    manifest = _run(project,
                    "from dcx.converters.hooks import manifest; print(manifest())")
    assert "id: dcx-validate-toy" in manifest and "toy" in manifest.split("files:")[1]

    pages = _run(project, (
        "from pathlib import Path; from dcxdocs.plan import build_plan; "
        "plan = build_plan(Path('.')); print('\\n'.join(sorted(plan.pages))); "
        "print(any(e.source == 'toy' for e in plan.examples))"))
    assert "formats/toy.md" in pages.split()
    assert "conversions/toy.md" in pages.split()
    assert pages.split()[-1] == "True"

    pairs = _run(project, "from dcx.converters.stream_chunks import stream_pairs; "
                 "print(sorted(to for source, to in stream_pairs() if source == 'swf'))")
    assert "'toy'" in pairs


@pytest.mark.slow
def test_a_toy_format_with_a_stream_target_converts_in_chunks(tmp_path: Path) -> None:
    """An SWF trace over the (lowered) streaming threshold converts to the toy format a chunk
    at a time through the toy's own stream target, to the bytes, stderr and exit code of
    the whole-file conversion."""
    project = _copy_project(tmp_path / "project")
    package = project / "formats" / "toy"
    package.mkdir()
    (package / "__init__.py").write_text(TOY_FRONT, encoding="utf-8")
    (package / "codec.py").write_text(TOY_CODEC, encoding="utf-8")
    (package / "stream_target.py").write_text(TOY_STREAM_TARGET, encoding="utf-8")
    trace = tmp_path / "trace.swf"
    trace.write_text(swf_trace(400))
    whole, chunked = tmp_path / "whole.toy", tmp_path / "chunked.toy"
    by_file = _done(project, "import sys; from dcx.cli.main import main; "
                    "sys.exit(main(sys.argv[1:]))", "convert", str(trace), str(whole),
                    "--to", "toy", "--losses")
    in_chunks = _done(project, CHUNKED, "convert", str(trace), str(chunked), "--to", "toy",
                      "--losses")
    assert by_file.returncode == in_chunks.returncode == 0, by_file.stderr + in_chunks.stderr
    assert int(in_chunks.stdout) > 1, "the trace was not converted in chunks"
    assert chunked.read_bytes() == whole.read_bytes()
    assert whole.read_text().splitlines()[:2] == ["#toy", "1 1 2"]
    assert in_chunks.stderr.replace(str(chunked), str(whole)) == by_file.stderr
    assert "task.requested_time_s" in by_file.stderr  # (the losses are listed, alike)
