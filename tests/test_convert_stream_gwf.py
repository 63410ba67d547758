"""``dcx convert`` of a GWF trace a chunk at a time (``dcx.converters.stream_convert``'s
``_GwfSource``) against the whole-file path, to GWF and to Parquet: for generated workflow
and archive files, valid or not, with chunks small enough to cut between any two lines (a
workflow cut between chunks, dependencies on tasks of earlier and later chunks), the same
exit status, the same stderr lines and the same bytes (GWF) or table (Parquet), or nothing
written; what cannot be converted in chunks (workflows whose tasks are apart, text ids) is
refused with one line and writes nothing; and a pipe."""

from __future__ import annotations

import contextlib
import io
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main
from dcx.converters import streaming
from dcx.formats.gwf import codec
from dcx.parsing import chunks
from tests.test_gwf_fast import HEADER, archive_text, seconds_text
from tests.test_gwf_stream import mutated, tangled_workflow


def run(args: list[str], stream: bool, chunk_bytes: int = chunks.CHUNK_BYTES
        ) -> tuple[int, str]:
    """``dcx ARGS`` in this process, every input streamed (or none); exit code, and stderr
    followed by stdout (where ``--output json`` reports)."""
    err, out = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(out):
        patch.setattr(streaming, "STREAM_BYTES", 0 if stream else float("inf"))
        patch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
        code = main(args)
    return code, err.getvalue() + out.getvalue()


def grouped_workflow(seed: int, tasks: int) -> str:
    """A workflow file as dcx and the archives write them, each workflow's tasks on
    consecutive lines, with what the reader takes in its stride: dependencies far back
    (in earlier chunks) and ahead within the workflow, unknown NProcs, requested processors
    that differ, blank and comment lines, padding or none, CRLF, no header line."""
    rng = random.Random(seed)
    lines = ["# a workflow trace", HEADER] if rng.random() < 0.3 else (
        [HEADER] if rng.random() < 0.9 else [])
    workflow, left = -1, 0
    submit = 0.0
    for task in range(1, tasks + 1):
        if left == 0:
            workflow, left = workflow + rng.choice((1, 1, 7)), rng.randint(1, 12)
        left -= 1
        last_of_workflow = min(task + left, tasks)
        earlier = list(range(max(1, task - 40), task))
        # the last task of a workflow needs none: one named ahead is on no cycle
        needs = [] if task == last_of_workflow else rng.sample(
            earlier, min(len(earlier), rng.choice((0, 1, 1, 2))))
        if task < last_of_workflow and rng.random() < 0.1:
            needs.append(last_of_workflow)  # on a later line, maybe in a later chunk
        nprocs = rng.choice(("1", "4", "-1"))
        submit += rng.choice((0, 16, 7.5))  # in submit-time order, as the archives'
        values = [str(workflow), str(task), seconds_text(submit),
                  rng.choice(("-1", "11", "0.25")), nprocs,
                  rng.choice(("4", "8")) if nprocs == "-1" else rng.choice((nprocs, "8")),
                  " ".join(map(str, needs))]
        padded = rng.random() < 0.5
        lines.append(", ".join(f"{value:<10}" for value in values) if padded
                     else ",".join(values) + rng.choice(("", "", "\r")))
        if rng.random() < 0.03:
            lines.append(rng.choice(("", "# between tasks")))
    return "\n".join(lines) + rng.choice(("\n", ""))


def interleaved(data: bytes) -> bool:
    """Whether some workflow's tasks are not on consecutive task lines (the whole file
    writes them together)."""
    read = codec._read(data)
    assert read.document is not None and read.document.workload is not None
    placed = sorted((read.locate(f"/workload/jobs/{job}/tasks/{task}")[0] or 0, job)
                    for job, found in enumerate(read.document.workload.jobs)
                    for task in range(len(found.tasks)))
    runs = [job for index, (_, job) in enumerate(placed)
            if index == 0 or placed[index - 1][1] != job]
    return len(runs) != len(set(runs))


def text_ids(data: bytes) -> bool:
    read = codec._read(data)
    assert read.document is not None and read.document.workload is not None
    return any(type(job.id) is not int or any(type(task.id) is not int for task in job.tasks)
               for job in read.document.workload.jobs)


def both(data: bytes, chunk_bytes: int, *options: str, to: str = "gwf") -> str:
    """The whole-file and the streamed conversion of the GWF ``data`` to ``to`` agree, or
    the streamed one refuses (``convert.not-streamable``) for a reason the file has and
    writes nothing; what happened."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.gwf"
        source.write_bytes(data)
        whole_out, streamed_out = Path(folder) / f"whole.{to}", Path(folder) / f"s.{to}"
        whole = run(["convert", str(source), str(whole_out), "--to", to, *options],
                    stream=False)
        streamed = run(["convert", str(source), str(streamed_out), "--to", to, *options],
                       stream=True, chunk_bytes=chunk_bytes)
        if "cannot convert in chunks" in streamed[1]:
            assert streamed[0] == 1 and not streamed_out.exists()
            assert streamed[1].count("\n") == 1
            assert ("workflow whose tasks are not on consecutive lines" in streamed[1]
                    and interleaved(data)) or ("ids that are text" in streamed[1]
                                               and text_ids(data))
            assert sorted(os.listdir(folder)) == ["in.gwf", *([whole_out.name]
                                                              if whole[0] == 0 else [])]
            return "refused"
        assert streamed == (whole[0], whole[1].replace(whole_out.name, streamed_out.name))
        assert whole_out.exists() == streamed_out.exists() == (whole[0] == 0)
        if whole[0] == 0 and to == "parquet":
            expected, found = pq.read_table(whole_out), pq.read_table(streamed_out)
            assert found.equals(expected)
            assert found.schema.equals(expected.schema, check_metadata=True)
        elif whole[0] == 0:
            assert streamed_out.read_bytes() == whole_out.read_bytes()
        return "converted" if whole[0] == 0 else "invalid"


def sample(seed: int, tasks: int) -> bytes:
    rng = random.Random(seed)
    kind = rng.random()
    if kind < 0.4:
        return grouped_workflow(seed, tasks).encode()
    if kind < 0.65:
        return archive_text(seed, tasks).encode()
    if kind < 0.8:
        return tangled_workflow(seed, tasks).encode()
    edits = [(rng.randrange(10_000), rng.choice(("", ",", " x", "\n", "-1", "7", "\xff")))
             for _ in range(rng.randint(1, 3))]
    text = grouped_workflow(seed, tasks) if rng.random() < 0.6 else archive_text(seed, tasks)
    return mutated(text, edits) if "\xff" not in str(edits) else text.encode() + b"\xff\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 60), st.sampled_from((1, 60, 300, 2000)),
       st.sampled_from(((), ("--losses",), ("--strict",), ("-v",), ("--output", "json"))),
       st.booleans())
def test_streamed_gwf_conversion_is_the_whole_file_conversion(seed, tasks, chunk_bytes,
                                                               options, fast):
    data = sample(seed, tasks)
    with pytest.MonkeyPatch.context() as patch:
        if fast:  # every chunk tries the vectorised accept path (columns)
            patch.setattr(codec, "FAST_READ_BYTES", 0)
        both(data, chunk_bytes, *options)
        both(data, chunk_bytes, *options, to="parquet")


def test_workflows_and_dependencies_across_chunks():
    """Workflows cut between chunks and dependencies on tasks many chunks back or ahead:
    the bytes and the table of the whole file, read line by line or as columns."""
    data = grouped_workflow(5, 200).encode()
    assert data.count(b"\n") > 200
    for fast in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            if fast:
                patch.setattr(codec, "FAST_READ_BYTES", 0)
            for chunk_bytes in (1, 700):
                assert both(data, chunk_bytes) == "converted"
                assert both(data, chunk_bytes, "--losses", to="parquet") == "converted"


def test_an_archive_file_converts_in_chunks():
    data = archive_text(3, 300).encode()
    assert both(data, 500) == both(data, 500, to="parquet") == "converted"


def test_apart_workflows_are_refused_and_nothing_is_written():
    """A workflow met again after another (the whole file writes its tasks together): the
    streamed conversion says so in one line and leaves OUTPUT as it was."""
    lines = [HEADER, "1, 1, 0, 10, 1, 1, ", "2, 2, 0, 10, 1, 1, 1", "1, 3, 0, 10, 1, 1, 2"]
    data = ("\n".join(lines) + "\n").encode()
    assert interleaved(data)
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.gwf", Path(folder) / "out.gwf"
        source.write_bytes(data)
        out.write_bytes(b"before")
        code, said = run(["convert", str(source), str(out)], stream=True, chunk_bytes=1)
        assert code == 1
        assert said == (f"{source}: error: /: cannot convert in chunks: a workflow whose tasks "
                        "are not on consecutive lines (the whole file writes them together); "
                        "convert a file under the input size limit\n")
        assert out.read_bytes() == b"before"
        assert sorted(os.listdir(folder)) == ["in.gwf", "out.gwf"]
        assert run(["convert", str(source), str(out)], stream=False)[0] == 0


def test_a_gwf_pipe_converts_in_chunks():
    """``cat big.gwf | dcx convert - out.parquet --from gwf`` and ``… - - --to gwf``
    beyond the streaming threshold (lowered here): the whole file's table and bytes."""
    data = grouped_workflow(11, 3000).encode()
    program = ("import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import "
               "chunks\nfrom dcx.cli.main import main\nstreaming.STREAM_BYTES = 1 << 12\n"
               "chunks.CHUNK_BYTES = 1 << 11\nsys.exit(main(sys.argv[1:]))\n")
    with tempfile.TemporaryDirectory() as folder:
        source, whole, piped = (Path(folder) / name
                                for name in ("in.gwf", "whole.parquet", "piped.parquet"))
        source.write_bytes(data)
        assert len(data) > 1 << 13
        assert run(["convert", str(source), str(whole)], stream=False)[0] == 0
        done = subprocess.run([sys.executable, "-c", program, "convert", "-", str(piped),
                               "--from", "gwf"], input=data, capture_output=True, check=False)
        assert done.returncode == 0, done.stderr
        assert pq.ParquetFile(piped).num_row_groups > 1
        expected, found = pq.read_table(whole), pq.read_table(piped)
        # a pipe's schema has every gwf: extras column, null where the file has none
        assert found.select(expected.column_names).equals(expected)
        done = subprocess.run([sys.executable, "-c", program, "convert", "-", "-", "--from",
                               "gwf", "--to", "gwf"], input=data, capture_output=True,
                              check=False)
        assert done.returncode == 0, done.stderr
        read_whole = codec.read(data).document
        assert read_whole is not None
        assert done.stdout == codec.write(read_whole).data


def test_a_pipe_whose_variant_a_later_chunk_changes_is_refused():
    """An archive pipe whose first chunk has nothing only the archive variant holds is
    written in the workflow variant; a later task with a user (which the whole file writes
    in the archive variant) stops it, and OUTPUT is not written. A file is read first and
    written in the archive variant, as the whole file."""
    tasks = [f"{n} 0 -1 10 1 -1 -1 1" + " -1" * 21 for n in range(1, 400)]
    tasks.append("400 0 -1 10 1 -1 -1 1 -1 -1 -1 3" + " -1" * 17)
    data = ("# JobID SubmitTime\n" + "\n".join(tasks) + "\n").encode()
    program = ("import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import "
               "chunks\nfrom dcx.cli.main import main\nstreaming.STREAM_BYTES = 1 << 10\n"
               "chunks.CHUNK_BYTES = 1 << 10\nsys.exit(main(sys.argv[1:]))\n")
    with tempfile.TemporaryDirectory() as folder:
        source, whole, streamed, piped = (
            Path(folder) / name for name in ("in.gwf", "whole.gwf", "s.gwf", "piped.gwf"))
        source.write_bytes(data)
        assert run(["convert", str(source), str(whole)], stream=False)[0] == 0
        assert whole.read_bytes().startswith(b"# JobID")  # the archive variant
        assert run(["convert", str(source), str(streamed)], stream=True,
                   chunk_bytes=1 << 10) == (0, f"wrote {streamed} (gwf): 400 jobs; nothing lost\n")
        assert streamed.read_bytes() == whole.read_bytes()
        done = subprocess.run([sys.executable, "-c", program, "convert", "-", str(piped),
                               "--from", "gwf"], input=data, capture_output=True, check=False)
        assert done.returncode == 1
        assert b"cannot convert in chunks: a task that only the archive variant holds" \
            in done.stderr
        assert not piped.exists()


def test_a_file_is_read_once_when_its_first_chunk_gives_its_variant(monkeypatch):
    """GWF output is written while the file is first read, in its first chunk's variant,
    and kept when no later chunk makes the file the archive variant; otherwise the file is
    read again to write it. The bytes are the whole file's either way."""
    from dcx.formats.gwf.stream_source import GwfSource

    readings: list[bool] = []
    reads = GwfSource.reads

    def counted(self, pieces, check):
        readings.append(check)
        return reads(self, pieces, check)

    monkeypatch.setattr(GwfSource, "reads", counted)
    tasks = [f"{n} 0 -1 10 1 -1 -1 1" + " -1" * 21 for n in range(1, 400)]
    later_user = "\n".join([*tasks, "400 0 -1 10 1 -1 -1 1 -1 -1 -1 3" + " -1" * 17])
    for text, once in ((grouped_workflow(2, 300), True), (archive_text(2, 300), True),
                       ("\n".join(tasks), True), (later_user, False)):
        readings.clear()
        assert both((text + "\n").encode(), 1000) == "converted"
        assert readings == ([True] if once else [True, False])
