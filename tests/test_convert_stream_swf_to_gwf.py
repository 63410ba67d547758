"""``dcx convert`` of an SWF trace to GWF a chunk at a time (``dcx.converters.stream_convert``'s
``SwfSource`` to ``GwfTarget``) against the whole-file path: for generated traces, valid or
not, whose optional fields (requested time, memory, user, group) and preceding jobs (on a job
of an earlier or a later chunk, or outside the file) are sparse enough that one chunk alone
would choose the other GWF variant than the whole file, with chunks small enough to cut
between any two lines: the same exit status, the same stderr and stdout lines (``--losses``:
counts, first pointers and places in the file's variant) and the same bytes, or nothing
written; what cannot be converted in chunks (job numbers that are text) is refused with one
line and writes nothing; and a pipe, which stops at a preceding job later in the trace."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dcx.converters.stream_chunks import stream_pairs
from dcx.formats.swf import codec as swf_codec
from tests.test_convert_stream_gwf import run
from tests.test_swf_fast import plain_trace
from tests.test_swf_stream import bad_trace

PIPE_PROGRAM = ("import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import "
                "chunks\nfrom dcx.cli.main import main\nstreaming.STREAM_BYTES = 1 << 10\n"
                "chunks.CHUNK_BYTES = 1 << 10\nsys.exit(main(sys.argv[1:]))\n")
"""``dcx`` whose streaming threshold and chunks are 1 KB (a pipe of a few KB streams)."""


def sparse_line(rng: random.Random, number: int, preceding: int, rare: float) -> str:
    """An 18-field SWF line whose requested time, memory, user and group are each known
    with probability ``rare`` (the GWF archive variant holds them, the workflow variant the
    preceding job's dependency)."""

    def maybe(value: str) -> str:
        return value if rng.random() < rare else "-1"

    fields = [str(number), str(rng.choice((0, 5, 17))), rng.choice(("-1", "3")),
              str(rng.choice((1, 60, 3600))), str(rng.choice((1, 4, 32))), "-1", "-1",
              str(rng.choice((-1, 1, 4))), maybe(rng.choice(("60", "7200", "0.5"))),
              maybe(rng.choice(("2048", "512.5"))), rng.choice(("-1", "1")),
              maybe(rng.choice(("3", "007"))), maybe(rng.choice(("1", "22"))),
              "-1", "-1", "-1", str(preceding), "-1"]
    return " ".join(fields)


def sparse_trace(seed: int, jobs: int) -> str:
    """A trace whose chunks disagree on the GWF variant: a few jobs know what only the
    archive variant holds, a few follow a job of the file (earlier, later: a dependency
    only the workflow variant holds) or outside it (an extras value)."""
    rng = random.Random(seed)
    rare = rng.choice((0.0, 0.01, 0.05, 0.3))
    following = rng.choice((0.0, 0.02, 0.1))
    lines = ["; Version: 2.2", "; MaxProcs: 64"] if rng.random() < 0.7 else []
    for number in range(1, jobs + 1):
        preceding = -1
        if rng.random() < following:
            preceding = rng.choice((rng.randint(1, jobs), rng.randint(1, jobs), jobs + 5))
            preceding = -1 if preceding == number else preceding
        lines.append(sparse_line(rng, number, preceding, rare))
        if rng.random() < 0.03:
            lines.append(rng.choice(("", "; between jobs")))
    return "\n".join(lines) + "\n"


def text_job_numbers(data: bytes) -> bool:
    read = swf_codec._read(data)
    assert read.document is not None and read.document.workload is not None
    return any(type(job.id) is not int for job in read.document.workload.jobs)


def both(data: bytes, chunk_bytes: int, *options: str) -> str:
    """The whole-file and the streamed conversion of the SWF ``data`` to GWF agree, or the
    streamed one refuses (``convert.not-streamable``) in one line for a reason the file has
    and writes nothing; what happened."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.swf"
        source.write_bytes(data)
        whole_out, streamed_out = Path(folder) / "whole.gwf", Path(folder) / "s.gwf"
        whole = run(["convert", str(source), str(whole_out), "--to", "gwf", *options],
                    stream=False)
        streamed = run(["convert", str(source), str(streamed_out), "--to", "gwf", *options],
                       stream=True, chunk_bytes=chunk_bytes)
        if "cannot convert in chunks" in streamed[1]:
            assert streamed[0] == 1 and not streamed_out.exists()
            assert streamed[1].count("\n") == 1
            assert "job numbers that are not all integers, which gwf renumbers" in streamed[1]
            assert text_job_numbers(data)
            assert sorted(os.listdir(folder)) == ["in.swf", *([whole_out.name]
                                                              if whole[0] == 0 else [])]
            return "refused"
        assert streamed == (whole[0], whole[1].replace(whole_out.name, streamed_out.name))
        assert whole_out.exists() == streamed_out.exists() == (whole[0] == 0)
        assert sorted(os.listdir(folder)) == sorted(
            ["in.swf", *([whole_out.name, streamed_out.name] if whole[0] == 0 else [])])
        if whole[0] == 0:
            assert streamed_out.read_bytes() == whole_out.read_bytes()
        return "converted" if whole[0] == 0 else "invalid"


def sample(seed: int, jobs: int) -> bytes:
    rng = random.Random(seed)
    kind = rng.random()
    if kind < 0.6:
        return sparse_trace(seed, jobs).encode()
    if kind < 0.8:
        return plain_trace(seed, jobs, header=rng.random() < 0.8).encode()
    return bad_trace(seed, jobs)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 60), st.sampled_from((1, 60, 300, 2000)),
       st.sampled_from(((), ("--losses",), ("--strict",), ("-v",), ("--output", "json"),
                        ("--losses", "--output", "json"))),
       st.booleans())
@example(seed=0, jobs=40, chunk_bytes=1, options=("--losses",), fast=True)
def test_streamed_swf_to_gwf_is_the_whole_file_conversion(seed, jobs, chunk_bytes, options,
                                                          fast):
    with pytest.MonkeyPatch.context() as patch:
        if fast:  # every chunk tries the vectorised accept path (columns)
            patch.setattr(swf_codec, "FAST_READ_BYTES", 0)
        both(sample(seed, jobs), chunk_bytes, *options)


def test_the_pair_streams():
    assert ("swf", "gwf") in stream_pairs()


def job_line(number: int, user: int = -1, preceding: int = -1) -> str:
    return (f"{number} {number} -1 60 1 -1 -1 1 -1 -1 -1 {user} -1 -1 -1 -1 {preceding} -1")


def trace(lines: list[str]) -> bytes:
    return ("; Version: 2.2\n" + "\n".join(lines) + "\n").encode()


def pipe(data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``dcx ARGS`` reading ``data`` from a pipe, with 1 KB chunks (``PIPE_PROGRAM``)."""
    return subprocess.run([sys.executable, "-c", PIPE_PROGRAM, *args], input=data,
                          capture_output=True, check=False)


def counted_readings(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each reading of the SWF input (its ``check`` flag), as the conversion makes them."""
    from dcx.formats.swf.stream_source import SwfSource

    readings: list[bool] = []
    reads = SwfSource.reads

    def counted(self: SwfSource, pieces: Any, check: bool) -> Any:
        readings.append(check)
        return reads(self, pieces, check)

    monkeypatch.setattr(SwfSource, "reads", counted)
    return readings


def test_a_later_chunk_that_makes_the_file_the_workflow_variant(monkeypatch):
    """The first chunk knows users (the archive variant alone); a job of a later chunk
    follows another (a dependency: one field path each, so the workflow variant): the file
    is written in the workflow variant, as whole, its users lost; the first reading wrote
    the archive variant and the file is read again. A pipe, read once, stops and writes
    nothing."""
    lines = [job_line(n, user=n % 3) for n in range(1, 60)]
    lines += [job_line(n) for n in range(60, 120)]
    lines.append(job_line(120, preceding=119))
    data = trace(lines)
    readings = counted_readings(monkeypatch)
    assert both(data, 1 << 10, "--losses") == "converted"
    assert readings == [True, False]
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out.gwf"
        source.write_bytes(data)
        code, said = run(["convert", str(source), str(out), "--losses"], stream=True,
                         chunk_bytes=1 << 10)
        assert code == 0 and "task.user: 59 values" in said
        assert out.read_bytes().startswith(b"WorkflowID")
        done = pipe(data, "convert", "-", str(Path(folder) / "piped.gwf"), "--from", "swf")
        assert done.returncode == 1
        assert done.stderr == (b"<stdin>: error: /: cannot convert in chunks: a dependency or "
                               b"a workflow of several tasks after the first chunk, which make "
                               b"the file the workflow variant (the whole file is written in "
                               b"that variant); convert a file under the input size limit\n")
        assert sorted(os.listdir(folder)) == ["in.swf", "out.gwf"]


def test_a_later_chunk_that_makes_the_file_the_archive_variant():
    """A dependency in the first chunk, users and groups in later ones: the archive variant,
    the dependency lost (counted once, at its line), as whole."""
    lines = [job_line(1), job_line(2, preceding=1)]
    lines += [job_line(n, user=7).replace(" -1 -1 -1 -1 -1", " 3 -1 -1 -1 -1", 1)
              for n in range(3, 90)]
    data = trace(lines)
    assert both(data, 1 << 10, "--losses") == "converted"
    assert both(data, 1 << 10, "--losses", "--output", "json") == "converted"
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out.gwf"
        source.write_bytes(data)
        code, said = run(["convert", str(source), str(out), "--losses"], stream=True,
                         chunk_bytes=1 << 10)
        assert code == 0 and out.read_bytes().startswith(b"# JobID")
        assert f"task.dependencies: 1 value (first: {source}:3:1" in said
        assert run(["convert", str(source), str(out), "--strict"], stream=True,
                   chunk_bytes=1 << 10)[0] == 1


def test_a_preceding_job_later_in_the_file(monkeypatch):
    """A job that follows a job of a later chunk: the whole file's dependency (the workflow
    variant keeps it; the first reading, which did not know the job, kept an extras value),
    so the file is measured and written again, as whole; the same trace in a pipe stops
    at it and writes nothing."""
    lines = [job_line(n) for n in range(1, 120)]
    lines[2] = job_line(3, preceding=110)
    data = trace(lines)
    readings = counted_readings(monkeypatch)
    assert both(data, 1 << 10, "--losses") == "converted"
    assert readings == [True, False, False]
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out.gwf"
        source.write_bytes(data)
        code, said = run(["convert", str(source), str(out), "--losses"], stream=True,
                         chunk_bytes=1 << 10)
        assert code == 0 and "task.extras" not in said and "task.dependencies" not in said
        assert b"\n3         , 3         , 3         , 60        , 1         , 1         , 110" \
            in out.read_bytes()
        done = pipe(data, "convert", "-", str(Path(folder) / "piped.gwf"), "--from", "swf")
        assert done.returncode == 1
        assert b"a job whose preceding job comes later in the trace" in done.stderr
        assert done.stderr.count(b"\n") == 1
        assert sorted(os.listdir(folder)) == ["in.swf", "out.gwf"]
    # a preceding job outside the file stays an extras value (lost): read once
    readings.clear()
    lines[2] = job_line(3, preceding=500)
    assert both(trace(lines), 1 << 10, "--losses") == "converted"
    assert readings == [True]


def test_text_job_numbers_are_refused_and_nothing_is_written():
    lines = [job_line(n) for n in range(1, 40)]
    lines[30] = lines[30].replace("31", "job31", 1)
    data = trace(lines)
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out.gwf"
        source.write_bytes(data)
        out.write_bytes(b"before")
        code, said = run(["convert", str(source), str(out)], stream=True, chunk_bytes=1 << 9)
        assert code == 1
        assert said == (f"{source}: error: /: cannot convert in chunks: job numbers that are "
                        "not all integers, which gwf renumbers (the whole file numbers them "
                        "all together); convert a file under the input size limit\n")
        assert out.read_bytes() == b"before"
        assert sorted(os.listdir(folder)) == ["in.swf", "out.gwf"]
        assert run(["convert", str(source), str(out)], stream=False)[0] == 0
    assert both(data, 1 << 9) == "refused"


def test_a_pipe_converts_to_gwf_in_chunks():
    """``cat big.swf | dcx convert - out.gwf --from swf`` and ``… - - --to gwf`` beyond the
    streaming threshold (lowered here): the whole file's bytes and report."""
    data = plain_trace(4, 400).encode()
    assert len(data) > 1 << 13
    with tempfile.TemporaryDirectory() as folder:
        source, whole, piped = (Path(folder) / name
                                for name in ("in.swf", "whole.gwf", "piped.gwf"))
        source.write_bytes(data)
        code, said = run(["convert", str(source), str(whole), "--losses"], stream=False)
        assert code == 0
        done = pipe(data, "convert", "-", str(piped), "--from", "swf", "--losses")
        assert done.returncode == 0, done.stderr
        assert done.stderr.decode() == said.replace(str(source), "<stdin>").replace(
            str(whole), str(piped))
        assert piped.read_bytes() == whole.read_bytes()
        done = pipe(data, "convert", "-", "-", "--from", "swf", "--to", "gwf")
        assert done.returncode == 0, done.stderr
        assert done.stdout == whole.read_bytes()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 80), st.sampled_from(("workflow", "archive")))
def test_a_chunk_in_a_variant_column_by_column_is_its_normal_form_task_by_task(seed, jobs,
                                                                                variant):
    """``codec.part_normal_form`` of a workload held as columns (``columnar.part_columns``,
    which only accepts) is what the task-by-task normal form makes of its rows: the same
    jobs and the same field paths changed, for SWF and GWF chunks in either variant."""
    from dataclasses import replace

    from dcx.core.columns import columns_of
    from dcx.core.model import Document
    from dcx.formats.gwf import codec as gwf_codec
    from tests.test_convert_stream_gwf import sample as gwf_sample

    rng = random.Random(seed)
    if rng.random() < 0.6:
        read = swf_codec.read_fast(sample(seed, jobs))
    else:  # GWF chunks of any size as columns (the vectorised path)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(gwf_codec, "FAST_READ_BYTES", 0)
            read = gwf_codec.read_part(gwf_sample(seed, jobs), None)[0]
    if read is None or read.document is None or read.document.workload is None:
        return
    workload = read.document.workload
    if columns_of(workload) is None:
        return
    rows = replace(workload, jobs=tuple(workload.jobs))
    assert columns_of(rows) is None
    by_columns, changed = gwf_codec.part_normal_form(Document(workload=workload), variant)
    by_rows, changed_rows = gwf_codec.part_normal_form(Document(workload=rows), variant)
    assert changed == changed_rows
    assert by_columns.workload is not None and by_rows.workload is not None
    assert tuple(by_columns.workload.jobs) == tuple(by_rows.workload.jobs)


def test_the_archive_variant_drops_dependencies_column_by_column():
    from dataclasses import replace

    from dcx.core.columns import columns_of
    from dcx.core.model import Document
    from dcx.formats.gwf import codec as gwf_codec
    from dcx.formats.gwf.columnar import part_columns

    data = trace([job_line(1), job_line(2, preceding=1), job_line(3, user=4)])
    read = swf_codec.read_fast(data)
    assert read is not None and read.document is not None and read.document.workload
    columns = columns_of(read.document.workload)
    assert columns is not None and len(columns.dependency_ids) == 1
    found = part_columns(columns, "archive")
    assert found is not None and found[1] == {"task.dependencies"}
    assert not len(found[0].dependency_ids)
    rows = replace(read.document.workload, jobs=tuple(read.document.workload.jobs))
    by_rows = gwf_codec.part_normal_form(Document(workload=rows), "archive")
    assert by_rows[1] == found[1] and by_rows[0].workload is not None
    assert by_rows[0].workload.jobs == tuple(found[0].job(index) for index in range(3))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 80), st.sampled_from((1, 200, 1000)))
def test_a_chunk_read_from_its_rows_is_the_chunk_read_line_by_line(seed, jobs, chunk_bytes):
    """``swf.codec.read_rows`` of each chunk (as columns, a preceding job of another chunk
    an extras column) holds the jobs the line-by-line reader reads in the chunk."""
    from dcx.core.columns import columns_of
    from dcx.formats.swf import stream as swf_stream
    from dcx.parsing import chunks

    data = sample(seed, jobs)
    checker = swf_stream._Stream()
    line = 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(swf_codec, "FAST_READ_BYTES", 0)
        for chunk in chunks.line_chunks(io.BytesIO(data).read, b"", chunk_bytes):
            checker.add(chunk)
            if checker.encoding is not None:
                return
            exact = swf_codec._read(chunk)
            read = swf_codec.read_rows(chunk, checker.chunk_rows, line - 1)
            line = checker.next_line
            if exact.document is None or any(d.is_error for d in exact.diagnostics):
                continue
            assert read.document is not None and read.document.workload is not None
            assert exact.document.workload is not None
            assert read.document.workload.jobs == exact.document.workload.jobs
            columns = columns_of(read.document.workload)
            if columns is not None:  # the same extras keys: no column no row has
                assert sorted(columns.extras) == sorted(
                    {key for job in exact.document.workload.jobs for task in job.tasks
                     for key in task.extras})


def test_a_file_converts_to_standard_output_as_whole():
    """``dcx convert big.swf - --to gwf``: no early output (the file is read again to write
    stdout), the whole file's bytes and report, in either variant, with a preceding job
    later in the file (read a third time, to measure)."""
    program = ("import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import "
               "chunks\nfrom dcx.cli.main import main\nstreaming.STREAM_BYTES = "
               "float(sys.argv[1])\nchunks.CHUNK_BYTES = 1 << 10\nsys.exit(main(sys.argv[2:]))\n")
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.swf"
        lines = [job_line(n) for n in range(1, 120)]
        lines[2] = job_line(3, preceding=110)
        for data in (plain_trace(6, 200).encode(), sparse_trace(7, 300).encode(),
                     trace(lines)):
            source.write_bytes(data)
            whole, streamed = (subprocess.run(
                [sys.executable, "-c", program, threshold, "convert", str(source), "-",
                 "--to", "gwf", "--losses"], capture_output=True, check=False)
                for threshold in ("inf", "0"))
            assert whole.returncode == streamed.returncode == 0
            assert (streamed.stdout, streamed.stderr) == (whole.stdout, whole.stderr)
            assert whole.stdout.count(b"\n") > 100
            assert os.listdir(folder) == ["in.swf"]


def test_a_parquet_file_whose_row_groups_disagree_on_the_variant():
    """The variant and the losses of the whole file for a Parquet source too: a trace of
    sparse fields written as Parquet in chunks (a row group each), converted to GWF a row
    group at a time, as whole."""
    import pyarrow.parquet as pq

    for seed in range(8):
        with tempfile.TemporaryDirectory() as folder:
            source, table = Path(folder) / "in.swf", Path(folder) / "in.parquet"
            source.write_bytes(sparse_trace(seed, 120).encode())
            assert run(["convert", str(source), str(table)], stream=True,
                       chunk_bytes=600)[0] == 0
            assert pq.ParquetFile(table).num_row_groups > 5
            whole_out, streamed_out = Path(folder) / "whole.gwf", Path(folder) / "s.gwf"
            whole = run(["convert", str(table), str(whole_out), "--losses"], stream=False)
            streamed = run(["convert", str(table), str(streamed_out), "--losses"],
                           stream=True)
            assert streamed == (whole[0], whole[1].replace(whole_out.name, streamed_out.name))
            assert whole[0] == 0 and streamed_out.read_bytes() == whole_out.read_bytes()
