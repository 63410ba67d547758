"""``dcx convert`` a chunk at a time (``dcx.converters.stream_convert``) against the whole-file
path: for generated SWF traces, valid or not, converted to Parquet and to SWF with chunks
small enough to cut between any two lines, the same exit status, the same stderr lines and
the same table (``pq.read_table``) or bytes, or nothing written; and a pipe larger than the
streaming threshold."""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main
from dcx.converters import streaming
from dcx.parsing import chunks
from tests.test_swf_fast import plain_trace
from tests.test_swf_stream import bad_trace


def run(args: list[str], stream: bool, chunk_bytes: int = chunks.CHUNK_BYTES
        ) -> tuple[int, str]:
    """``dcx ARGS`` in this process, every SWF input streamed (or none); exit code, stderr."""
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(err):
        patch.setattr(streaming, "STREAM_BYTES", 0 if stream else float("inf"))
        patch.setattr(chunks, "CHUNK_BYTES", chunk_bytes)
        code = main(args)
    return code, err.getvalue()


def both(data: bytes, chunk_bytes: int, *options: str, to: str = "parquet") -> None:
    """The whole-file and the streamed conversion of ``data`` to ``to`` agree."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.swf"
        source.write_bytes(data)
        whole_out, streamed_out = Path(folder) / f"whole.{to}", Path(folder) / f"s.{to}"
        whole = run(["convert", str(source), str(whole_out), "--to", to, *options],
                    stream=False)
        streamed = run(["convert", str(source), str(streamed_out), "--to", to, *options],
                       stream=True, chunk_bytes=chunk_bytes)
        if "cannot convert in chunks" in streamed[1]:
            # text and integer job numbers, which the whole file renumbers (a loss, so
            # --strict refuses it there too), or, to SWF, text job numbers or jobs out of
            # submit-time order, which the whole file sorts and numbers together (a
            # task.id loss, or none where their numbers still count up): refused, nothing
            # written
            assert streamed[1].count("\n") == 1
            if to == "swf" and not in_submit_order(data):
                assert "submit" in streamed[1] and whole[0] in (0, 1)
            else:
                assert b"job" in data and (whole[0] == 0 or "--strict" in options)
            assert streamed[0] == 1 and not streamed_out.exists()
            assert sorted(os.listdir(folder)) == ["in.swf", *([whole_out.name] if whole[0] == 0
                                                              else [])]
            return
        assert streamed == (whole[0], whole[1].replace(whole_out.name, streamed_out.name))
        assert whole_out.exists() == streamed_out.exists() == (whole[0] == 0)
        assert sorted(os.listdir(folder)) == sorted(
            ["in.swf", *([whole_out.name, streamed_out.name] if whole[0] == 0 else [])])
        if whole[0] == 0 and to == "parquet":
            expected, found = pq.read_table(whole_out), pq.read_table(streamed_out)
            assert found.equals(expected)
            assert found.schema.equals(expected.schema, check_metadata=True)
        elif whole[0] == 0:
            assert streamed_out.read_bytes() == whole_out.read_bytes()


def in_submit_order(data: bytes) -> bool:
    """Whether the job lines of an SWF trace that reads have non-decreasing submit times."""
    submits = [float(line.split()[1]) for line in data.splitlines()
               if line.strip() and not line.strip().startswith(b";")]
    return all(a <= b for a, b in itertools.pairwise(submits))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 40), st.sampled_from((1, 40, 200, 1000)),
       st.sampled_from(((), ("--losses",), ("--strict",), ("-v",))))
# a preceding job outside the file, after one in a later chunk: where the extras column goes
@example(seed=490, jobs=6, chunk_bytes=1, options=())
def test_streamed_conversion_is_the_whole_file_conversion(seed, jobs, chunk_bytes, options):
    rng = random.Random(seed)
    data = (plain_trace(seed, jobs, header=rng.random() < 0.8).encode()
            if rng.random() < 0.5 else bad_trace(seed, jobs))
    both(data, chunk_bytes, *options)
    both(data, chunk_bytes, *options, to="swf")


def test_preceding_jobs_of_earlier_chunks_stay_dependencies():
    data = plain_trace(3, 300).encode()
    assert data.count(b"\n") > 300
    both(data, 64)
    both(data, 64, "--output", "json")
    both(data, 64, to="swf")


def test_an_invalid_trace_writes_nothing():
    data = plain_trace(1, 50).encode() + b"51 0 x\n"
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.parquet"
        out.write_bytes(b"before")
        code, said = run(["convert", str(Path(folder) / "in.swf"), str(out)], stream=True)
        assert code == 2 and "no such file" in said  # the input is missing: usage
        (Path(folder) / "in.swf").write_bytes(data)
        code, said = run(["convert", str(Path(folder) / "in.swf"), str(out)], stream=True,
                         chunk_bytes=100)
        assert code == 1 and "SWF has 18" in said
        assert out.read_bytes() == b"before"
        assert sorted(os.listdir(folder)) == ["in.swf", "out.parquet"]


def test_a_pipe_converts_in_chunks():
    """``generate_swf.py | dcx convert - out.parquet --from swf`` beyond the streaming
    threshold (lowered here, so the test stays small): the rows and the header arrive."""
    generator = Path(__file__).resolve().parent.parent / "benchmarks" / "generate_swf.py"
    program = ("import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import "
               "chunks\nfrom dcx.cli.main import main\nstreaming.STREAM_BYTES = 1 << 16\n"
               "chunks.CHUNK_BYTES = 1 << 15\nsys.exit(main(sys.argv[1:]))\n")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.parquet"
        producer = subprocess.Popen([sys.executable, str(generator), "20000", "-", "--blocks"],
                                    stdout=subprocess.PIPE)
        done = subprocess.run([sys.executable, "-c", program, "convert", "-", str(out),
                               "--from", "swf"], stdin=producer.stdout, capture_output=True,
                              text=True, check=False)
        assert producer.stdout is not None
        producer.stdout.close()
        assert producer.wait() == 0
        assert done.returncode == 0, done.stderr
        assert done.stderr == f"wrote {out} (parquet): 20,000 jobs; nothing lost\n"
        table = pq.read_table(out)
        assert table.num_rows == 20_000
        assert table.column("task_id").to_pylist() == list(range(1, 20_001))
        assert pq.ParquetFile(out).num_row_groups > 1
        assert b"MaxJobs" in table.schema.metadata[b"dcx:workload"]
        assert sorted(os.listdir(folder)) == ["out.parquet"]


def test_a_pipe_converts_to_swf_on_stdout_as_the_whole_file_does():
    """``generate_swf.py | dcx convert - - --to swf`` in chunks: the bytes of the whole-file
    conversion of the same trace."""
    from benchmarks.generate_swf import write_blocks

    parts: list[bytes] = []
    write_blocks(5000, parts.append)
    trace = b"".join(parts)
    program = ("import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import "
               "chunks\nfrom dcx.cli.main import main\nstreaming.STREAM_BYTES = "
               "int(sys.argv[1])\nchunks.CHUNK_BYTES = 1 << 12\nsys.exit(main(sys.argv[2:]))\n")
    outputs = []
    for threshold in (1 << 12, 1 << 40):  # in chunks; whole (the pipe ends within it)
        done = subprocess.run([sys.executable, "-c", program, str(threshold), "convert", "-",
                               "-", "--to", "swf"], input=trace, capture_output=True,
                              check=False)
        assert done.returncode == 0, done.stderr
        assert done.stderr == b"wrote <stdout> (swf): 5,000 jobs; nothing lost\n"
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith(b"; Version: 2.2\n")


def test_a_pipe_stops_at_a_preceding_job_later_in_the_trace():
    """A pipe is read once: a job following a job of a later chunk (a dependency in the
    whole file, an extras value in its chunk) cannot be converted, and nothing is written;
    the same trace as a file is read twice and converts as the whole file does."""
    lines = [f"{n} {n} -1 60 1 -1 -1 1 60 -1 -1 1 1 -1 -1 -1 -1 -1" for n in range(1, 41)]
    lines[2] = lines[2].replace(" -1 -1 -1 -1 -1", " -1 -1 -1 30 -1")  # job 3 follows job 30
    assert lines[2].split()[16] == "30"
    data = ("\n".join(lines) + "\n").encode()
    both(data, 64)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.parquet"
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
            code, said = run(["convert", "-", str(out), "--from", "swf"], stream=True,
                             chunk_bytes=64)
        assert code == 1
        assert "a job whose preceding job comes later in the trace" in said
        assert os.listdir(folder) == []


def test_a_file_is_parsed_once_when_its_first_part_fixes_the_schema(monkeypatch):
    """Every chunk large enough for the vectorised path: the chunked reader's rows are each
    chunk's document (one parse per chunk) and the Parquet file is written while the trace
    is first read. A column only a later chunk has, or a preceding job the first reading
    meets before its line, makes a second reading write it; the table is the whole file's
    either way."""
    from dcx.formats.swf import codec as swf_codec
    from dcx.formats.swf import stream as swf_stream
    from dcx.formats.swf import stream_source as swf_stream_source
    from dcx.parsing import traces
    from tests.test_swf_fast import integer_trace

    monkeypatch.setattr(swf_codec, "FAST_READ_BYTES", 0)
    readings: list[int] = []
    parses: list[int] = []
    chunk_reads, numeric_columns = swf_stream_source._chunk_reads, traces.numeric_columns

    def read_and_count(*args: Any) -> Any:
        readings.append(1)
        return chunk_reads(*args)

    def counted(*args: Any) -> Any:
        parses.append(1)
        return numeric_columns(*args)

    monkeypatch.setattr(swf_stream_source, "_chunk_reads", read_and_count)
    monkeypatch.setattr(traces, "numeric_columns", counted)
    monkeypatch.setattr(swf_stream, "numeric_columns", counted)
    plain = "".join(f"{n} {n} -1 10 1 -1 -1 1 60 -1 -1 1 1 -1 -1 -1 -1 -1\n"
                    for n in range(1, 301))
    later_column = plain + "301 5 -1 10 1 -1 -1 1 60 -1 7 1 1 -1 -1 -1 -1 -1\n"
    forward = ("1 0 -1 10 0 -1 -1 2 60 -1 -1 1 1 -1 -1 -1 300 -1\n"
               "2 2 -1 10 1 -1 -1 3 60 -1 -1 1 1 -1 -1 -1 -1 -1\n" + plain.split("\n", 2)[2])
    for text, once in ((integer_trace(4, 300), True), (plain, True), (later_column, False),
                       (forward, False)):
        data = text.encode()
        pieces = len(list(chunks.line_chunks(io.BytesIO(data).read, b"", 2000)))
        with tempfile.TemporaryDirectory() as folder:
            source, whole, streamed = (Path(folder) / name
                                       for name in ("in.swf", "whole.parquet", "s.parquet"))
            source.write_bytes(data)
            assert run(["convert", str(source), str(whole)], stream=False)[0] == 0
            readings.clear()
            parses.clear()
            assert run(["convert", str(source), str(streamed)], stream=True,
                       chunk_bytes=2000)[0] == 0
            assert pq.read_table(streamed).equals(pq.read_table(whole))
            assert pq.read_table(streamed).schema.equals(pq.read_table(whole).schema,
                                                         check_metadata=True)
            assert sorted(os.listdir(folder)) == ["in.swf", "s.parquet", "whole.parquet"]
        assert (len(readings), len(parses)) == ((1, pieces) if once else (2, 2 * pieces))


def test_a_parquet_output_that_does_not_read_back_is_not_kept(monkeypatch):
    """The output is read back by the reader dcx validate runs on a large Parquet file
    before it replaces OUTPUT: a row group it refuses (a job without a submit time) leaves
    OUTPUT as it was and says convert.invalid-output."""
    import pyarrow as pa

    from dcx.formats.parquet import stream_target as parquet_stream_target

    part = parquet_stream_target.ParquetTarget.part

    def unsubmitted(self, document, earlier):
        table = part(self, document, earlier)
        column = table.schema.get_field_index("submit_time_s")
        return table.set_column(column, table.schema.field(column),
                                pa.nulls(table.num_rows, pa.float64()))

    monkeypatch.setattr(parquet_stream_target.ParquetTarget, "part", unsubmitted)
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out.parquet"
        source.write_bytes(plain_trace(2, 40).encode())
        out.write_bytes(b"before")
        code, said = run(["convert", str(source), str(out)], stream=True, chunk_bytes=500)
        assert code == 2 and "dcx wrote parquet output that parquet does not accept" in said
        assert out.read_bytes() == b"before"
        assert sorted(os.listdir(folder)) == ["in.swf", "out.parquet"]


def test_swf_is_written_while_the_file_is_first_read(monkeypatch):
    """SWF output is written while the trace is first read, after the header its first
    chunk gives, and kept when the whole file's header is the same; a header line among
    later jobs (written at the top by the whole file) makes a second reading write it. The
    bytes are the whole file's either way, as is the stdout of a run that is not a file."""
    from dcx.formats.swf import stream_source as swf_stream_source

    readings: list[int] = []
    chunk_reads = swf_stream_source._chunk_reads

    def read_and_count(*args: Any) -> Any:
        readings.append(1)
        return chunk_reads(*args)

    monkeypatch.setattr(swf_stream_source, "_chunk_reads", read_and_count)
    jobs = "".join(f"{n} {n} -1 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
                   for n in range(1, 301))
    header = "; Version: 2.2\n; Computer: test\n"
    late_header = jobs + "; Note: after the jobs\n" + "".join(
        f"{n} {n} -1 10 1 -1 -1 1 60 -1 1 2 1 -1 -1 -1 -1 -1\n" for n in range(301, 601))
    for text, once in ((header + jobs, True), (jobs, True), (late_header, False)):
        with tempfile.TemporaryDirectory() as folder:
            source, whole, streamed = (Path(folder) / name
                                       for name in ("in.swf", "whole.swf", "s.swf"))
            source.write_text(text)
            whole_run = run(["convert", str(source), str(whole)], stream=False)
            readings.clear()
            streamed_run = run(["convert", str(source), str(streamed)], stream=True,
                               chunk_bytes=2000)
            assert whole_run[0] == 0
            assert streamed_run == (0, whole_run[1].replace("whole.swf", "s.swf"))
            assert streamed.read_bytes() == whole.read_bytes()
            assert sorted(os.listdir(folder)) == ["in.swf", "s.swf", "whole.swf"]
        assert len(readings) == (1 if once else 2)


def test_swf_is_written_in_submit_time_order_or_refused():
    """Jobs out of submit-time order within a chunk are sorted as the whole file sorts them;
    a job submitted before one of an earlier chunk, which the whole file would sort among
    that chunk's, refuses the chunked conversion to SWF and writes nothing."""
    lines = [f"{n} {submit} -1 60 1 -1 -1 1 60 -1 -1 1 1 -1 -1 -1 -1 -1"
             for n, submit in ((1, 0), (2, 10), (3, 10), (4, 20))]
    in_chunk = ("\n".join([lines[0], lines[2], lines[1], lines[3]]) + "\n").encode()
    both(in_chunk, 1 << 20, to="swf")  # one chunk: sorted as the whole file is
    late = ("\n".join([lines[3], *lines[:3]]) + "\n").encode()
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out.swf"
        source.write_bytes(late)
        code, said = run(["convert", str(source), str(out)], stream=True, chunk_bytes=64)
        assert code == 1 and said.count("\n") == 1
        assert "a job submitted before a job of an earlier chunk" in said
        assert sorted(os.listdir(folder)) == ["in.swf"]
        code, said = run(["convert", str(source), str(out)], stream=False)
        assert code == 0 and out.read_bytes().split(b"\n")[-2].split()[:2] == [b"4", b"20"]
