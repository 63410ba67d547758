"""``dcx convert`` of a large SWF, GWF or Parquet trace to a Batsim workload a chunk at a time
(the two formats' ``stream_target.py``) against the whole-file path: for generated traces,
valid or not, with chunks small enough to cut between any two lines (or row groups of a few
rows), the same exit status, the same stderr and stdout (``--losses``, ``--strict``,
``--output json``) and the same bytes, or nothing written; what a chunk cannot decide alone
is refused in one line for a reason the input has; the whole path's refusal when no task
can be written; a pipe, to a file and to standard output."""

from __future__ import annotations

import contextlib
import io
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main
from dcx.converters import streaming
from dcx.converters.stream_chunks import stream_pairs
from dcx.core import limits
from dcx.formats import batsim, gwf, osp_workload, parquet, swf
from dcx.formats.gwf import codec as gwf_codec
from dcx.parsing import chunks
from tests.test_convert_stream_dask import on_cluster_and_here, shared, started
from tests.test_convert_stream_dask import run as dask_run
from tests.test_convert_stream_gwf import interleaved, sample, text_ids
from tests.test_convert_stream_parquet import valid_table
from tests.test_parquet_partitions import trace_table, written
from tests.test_swf_fast import plain_trace
from tests.test_swf_stream import bad_trace

__all__ = ["shared", "started"]  # (the Dask tests' cluster fixtures, used here)

READERS = {"swf": swf.read, "gwf": gwf.read, "parquet": parquet.read}
TARGETS = {"batsim": batsim.FORMAT, "osp-workload": osp_workload.FORMAT}


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


def reason_holds(said: str, source: str, data: bytes, to: str) -> bool:
    """Whether the one-line refusal ``said`` names what the input has."""
    read = READERS[source](data)
    assert read.document is not None
    if "job ids Batsim cannot take" in said:
        return to == "batsim" and "task.id" in batsim.normal_form_losses(read.document)
    if "job numbers that are not all integers" in said:
        lost = TARGETS[to].normal_form_losses
        assert lost is not None
        return source == "swf" and "task.id" in lost(read.document)
    if "task or workflow keys osp-workload cannot write" in said:
        return to == "osp-workload" and bool({"task.extras", "job.extras"} & set(
            osp_workload.normal_form_losses(read.document)))
    if "workflow whose tasks are not on consecutive lines" in said:
        return source == "gwf" and interleaved(data)
    if "ids that are text" in said:
        return source == "gwf" and text_ids(data)
    workload = read.document.workload
    assert workload is not None
    if "Batsim data kept in the tasks" in said:
        return any(key.startswith("batsim:") for task in workload.tasks() for key in task.extras)
    if "Batsim's nb_res, profiles or version kept in the workload" in said:
        return any(key.startswith("batsim:") for key in workload.extras)
    return False


def both(source: str, data: bytes, chunk_bytes: int, *options: str, to: str = "batsim"
         ) -> str:
    """The whole-file and the streamed conversion of ``data`` to ``to`` agree, or the
    streamed one refuses (``convert.not-streamable``) in one line for a reason the input
    has and writes nothing; what happened."""
    with tempfile.TemporaryDirectory() as folder:
        given_path = Path(folder) / f"in.{source}"
        given_path.write_bytes(data)
        whole_out, streamed_out = Path(folder) / "whole.json", Path(folder) / "s.json"
        whole = run(["convert", str(given_path), str(whole_out), "--to", to, *options],
                    stream=False)
        streamed = run(["convert", str(given_path), str(streamed_out), "--to", to, *options],
                       stream=True, chunk_bytes=chunk_bytes)
        if "cannot convert in chunks" in streamed[1]:
            assert streamed[0] == 1 and not streamed_out.exists()
            assert streamed[1].count("\n") == 1
            assert reason_holds(streamed[1], source, data, to), streamed[1]
            assert sorted(os.listdir(folder)) == sorted(
                [given_path.name, *([whole_out.name] if whole[0] == 0 else [])])
            return "refused"
        expected = (whole[0], whole[1].replace(whole_out.name, streamed_out.name))
        assert streamed == expected
        assert whole_out.exists() == streamed_out.exists() == (whole[0] == 0)
        # nothing left beside OUTPUT (the spooled jobs, the temporary output)
        assert sorted(os.listdir(folder)) == sorted(
            [given_path.name, *([whole_out.name, streamed_out.name] if whole[0] == 0
                                else [])])
        if whole[0] == 0:
            assert streamed_out.read_bytes() == whole_out.read_bytes()
        return "converted" if whole[0] == 0 else "invalid"


OPTIONS = st.sampled_from(((), ("--losses",), ("--strict",), ("-v",), ("--output", "json")))
TO = st.sampled_from(("batsim", "osp-workload"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 40), st.sampled_from((1, 40, 200, 1000)),
       OPTIONS, TO)
# no job: the whole path's convert.empty-input
@example(seed=0, jobs=0, chunk_bytes=1, options=(), to="batsim")
def test_swf_in_chunks_is_the_whole_file_conversion(seed, jobs, chunk_bytes, options, to):
    rng = random.Random(seed)
    data = (plain_trace(seed, jobs, header=rng.random() < 0.8).encode()
            if rng.random() < 0.5 else bad_trace(seed, jobs))
    both("swf", data, chunk_bytes, *options, to=to)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 60), st.sampled_from((1, 60, 300, 2000)),
       OPTIONS, st.booleans(), TO)
# a workflow cut between chunks whose first task Batsim leaves out: its job loss is placed
# where the workflow begins, in the earlier chunk
@example(seed=4, tasks=2, chunk_bytes=1, options=("--losses",), fast=False, to="batsim")
def test_gwf_in_chunks_is_the_whole_file_conversion(seed, tasks, chunk_bytes, options, fast,
                                                    to):
    with pytest.MonkeyPatch.context() as patch:
        if fast:  # every chunk tries the vectorised accept path (columns)
            patch.setattr(gwf_codec, "FAST_READ_BYTES", 0)
        both("gwf", sample(seed, tasks), chunk_bytes, *options, to=to)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 40), st.integers(1, 7), OPTIONS,
       st.booleans(), TO)
def test_parquet_by_row_groups_is_the_whole_file_conversion(seed, rows, group_rows, options,
                                                            valid, to):
    table = valid_table(max(rows, 1), seed) if valid else trace_table(seed, rows)
    both("parquet", written(table, group_rows), 1, *options, to=to)


def swf_lines(*lines: str) -> bytes:
    return ("; Version: 2.2\n; Computer: a test\n" + "\n".join(lines) + "\n").encode()


def job(number: int, runtime: int = 60, nodes: int = 2, preceding: int = -1) -> str:
    return (f"{number} {number * 10} -1 {runtime} {nodes} -1 -1 {nodes} 120 -1 1 1 1 -1 1 -1 "
            f"{preceding} -1")


def test_dependencies_across_chunks_are_lost_as_in_the_whole_file():
    """A preceding job in an earlier chunk, in a later chunk (the file is measured again)
    and outside the file: the same losses, counts and first places, chunk by chunk."""
    data = swf_lines(job(1), job(2, preceding=5), job(3, preceding=1), job(4, preceding=99),
                     job(5, runtime=7))
    for chunk_bytes in (1, 60, 200):
        for options in ((), ("--losses",), ("--output", "json")):
            assert both("swf", data, chunk_bytes, *options) == "converted"
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "in.swf").write_bytes(data)
        code, said = run(["convert", str(Path(folder) / "in.swf"),
                          str(Path(folder) / "out.json"), "--to", "batsim", "--losses"],
                         stream=True,
                         chunk_bytes=1)
    assert code == 0 and "  task.dependencies: 2 values (first: " in said


def test_nb_res_and_profiles_are_the_whole_files():
    """The largest res of a later chunk heads the file; a runtime met again in a later
    chunk names the profile of the first."""
    data = swf_lines(job(1, nodes=1), job(2, runtime=5), job(3, nodes=64), job(4, runtime=5))
    assert both("swf", data, 1) == "converted"
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "in.swf").write_bytes(data)
        out = Path(folder) / "out.json"
        assert run(["convert", str(Path(folder) / "in.swf"), str(out), "--to", "batsim"],
                   stream=True, chunk_bytes=1)[0] == 0
        text = out.read_text()
    assert text.startswith('{\n  "nb_res": 64,\n  "Version": 2.2,\n  "Computer": "a test",\n')
    assert text.endswith('  "profiles": {\n    "delay60": {"type": "delay", "delay": 60},\n'
                         '    "delay5": {"type": "delay", "delay": 5}\n  }\n}\n')


def test_no_task_to_run_is_refused_as_the_whole_file_refuses_it():
    data = swf_lines(job(1, runtime=0), job(2, runtime=-1))
    assert both("swf", data, 1) == "invalid"
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "in.swf").write_bytes(data)
        code, said = run(["convert", str(Path(folder) / "in.swf"),
                          str(Path(folder) / "out.json"), "--to", "batsim"], stream=True,
                         chunk_bytes=1)
    assert code == 1 and "2 of 2 tasks have no positive runtime" in said


def test_ids_batsim_renumbers_are_refused_and_nothing_is_written():
    """A job number past 2^31 - 1: the whole file numbers every job 1, 2, …; in chunks it
    is refused in one line and OUTPUT is left as it was."""
    data = swf_lines(job(1), job(2_147_483_648))
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out.json"
        source.write_bytes(data)
        out.write_bytes(b"before")
        code, said = run(["convert", str(source), str(out), "--to", "batsim"], stream=True,
                         chunk_bytes=1)
        assert code == 1 and said.count("\n") == 1
        assert "cannot convert in chunks: job ids Batsim cannot take" in said
        assert out.read_bytes() == b"before"
        assert sorted(os.listdir(folder)) == ["in.swf", "out.json"]
        assert run(["convert", str(source), str(out), "--to", "batsim"], stream=False)[0] == 0
    assert both("swf", data, 1) == "refused"


def test_profile_names_a_parquet_trace_kept_are_refused():
    table = valid_table(6)
    names = pa.array([None, "fast", None, None, None, None], pa.string())
    table = table.append_column("extras.batsim:profile", names)
    assert both("parquet", written(table, 2), 1) == "refused"


def test_an_output_over_the_input_limit_is_written_without_reading_it_back():
    """What ``dcx validate`` would refuse to read is not read back; the bytes are the same."""
    data = swf_lines(*(job(number) for number in range(1, 50)))
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.swf"
        source.write_bytes(data)
        whole, streamed = Path(folder) / "whole.json", Path(folder) / "s.json"
        assert run(["convert", str(source), str(whole), "--to", "batsim"], stream=False)[0] == 0
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(limits, "LIMITS", replace(limits.LIMITS, max_input_bytes=100))
            code, said = run(["convert", str(source), str(streamed), "--to", "batsim"],
                             stream=True, chunk_bytes=200)
        assert code == 0, said
        assert streamed.read_bytes() == whole.read_bytes()


def pipe(data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``dcx ARGS`` in a child reading ``data`` from a pipe, the streaming threshold and the
    chunk size lowered so that a small trace is read in many chunks."""
    program = ("import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import "
               "chunks\nfrom dcx.cli.main import main\nstreaming.STREAM_BYTES = 1 << 10\n"
               "chunks.CHUNK_BYTES = 1 << 9\nsys.exit(main(sys.argv[1:]))\n")
    return subprocess.run([sys.executable, "-c", program, *args], input=data,
                          capture_output=True, check=False)


def test_a_pipe_converts_in_chunks_to_a_file_and_to_standard_output():
    data = plain_trace(4, 300).encode()
    with tempfile.TemporaryDirectory() as folder:
        source, whole, out = (Path(folder) / "in.swf", Path(folder) / "whole.json",
                              Path(folder) / "out.json")
        source.write_bytes(data)
        code, said = run(["convert", str(source), str(whole), "--to", "batsim", "--losses"],
                         stream=False)
        assert code == 0
        done = pipe(data, "convert", "-", str(out), "--from", "swf", "--to", "batsim",
                    "--losses")
        assert done.returncode == 0, done.stderr
        assert done.stderr.decode() == said.replace(str(source), "<stdin>").replace(
            str(whole), str(out))
        assert out.read_bytes() == whole.read_bytes()
        assert sorted(os.listdir(folder)) == ["in.swf", "out.json", "whole.json"]
        done = pipe(data, "convert", "-", "-", "--from", "swf", "--to", "batsim")
        assert done.returncode == 0, done.stderr
        assert done.stdout == whole.read_bytes()


def test_a_pipe_whose_preceding_job_comes_later_is_refused():
    data = swf_lines(*(job(number) for number in range(1, 40)), job(40, preceding=80),
                     *(job(number) for number in range(41, 100)))
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.json"
        done = pipe(data, "convert", "-", str(out), "--from", "swf", "--to", "batsim")
        assert done.returncode == 1
        assert b"cannot convert in chunks: a job whose preceding job comes later" in done.stderr
        assert os.listdir(folder) == []
    assert both("swf", data, 512) == "converted"  # a file is measured again


def test_the_pairs_are_listed():
    assert {(source, target) for source in ("swf", "gwf", "parquet")
            for target in ("batsim", "osp-workload")} <= stream_pairs()


def test_osp_workload_keeps_a_workflow_cut_between_chunks_one_workflow():
    """GWF workflows cut between chunks, dependencies on tasks of earlier and later chunks:
    one workflow each, the whole file's bytes and report, read line by line or as columns."""
    from tests.test_convert_stream_gwf import grouped_workflow

    data = grouped_workflow(5, 200).encode()
    for fast in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            if fast:
                patch.setattr(gwf_codec, "FAST_READ_BYTES", 0)
            for chunk_bytes in (1, 700):
                assert both("gwf", data, chunk_bytes, "--losses",
                            to="osp-workload") == "converted"


def test_osp_workload_times_count_from_the_headers_origin():
    """Every chunk's ts_submit counts from the UnixStartTime of the first chunk's header;
    a preceding job later in the file is a dependency (the file is read again)."""
    data = ("; UnixStartTime: 1000000000\n; TimeZoneString: UTC\n"
            + "\n".join([job(1, preceding=3), job(2), job(3), job(4, preceding=1)])
            + "\n").encode()
    for chunk_bytes in (1, 100):
        assert both("swf", data, chunk_bytes, "--losses", to="osp-workload") == "converted"
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "in.swf").write_bytes(data)
        out = Path(folder) / "out.json"
        assert run(["convert", str(Path(folder) / "in.swf"), str(out), "--to",
                    "osp-workload"], stream=True, chunk_bytes=1)[0] == 0
        text = out.read_text()
    assert '"date_start": "2001-09-09T01:46:40Z"' in text
    assert '"ts_submit": "2001-09-09T01:47:20+00:00"' in text  # job 4, in its own chunk
    assert '"depends_on": [\n            "3"\n          ]' in text


def test_a_header_line_after_the_first_chunk():
    """A file whose later chunk holds a header line is read again (the whole file's
    bytes); a pipe stops at it, in one line, writing nothing."""
    lines = [job(number) for number in range(1, 60)]
    lines.insert(40, "; UnixStartTime: 1000000000")  # date_start, and every ts_submit
    data = swf_lines(*lines)
    assert both("swf", data, 512, to="osp-workload") == "converted"
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.json"
        done = pipe(data, "convert", "-", str(out), "--from", "swf", "--to", "osp-workload")
        assert done.returncode == 1, done.stderr
        assert done.stderr.count(b"\n") == 1
        assert b"cannot convert in chunks: a header line after the first chunk" in done.stderr
        assert os.listdir(folder) == []


def test_an_osp_workload_pipe_converts_in_chunks():
    data = plain_trace(6, 300).encode()
    with tempfile.TemporaryDirectory() as folder:
        source, whole = Path(folder) / "in.swf", Path(folder) / "whole.json"
        source.write_bytes(data)
        assert run(["convert", str(source), str(whole), "--to", "osp-workload"],
                   stream=False)[0] == 0
        done = pipe(data, "convert", "-", "-", "--from", "swf", "--to", "osp-workload")
        assert done.returncode == 0, done.stderr
        assert done.stdout == whole.read_bytes()


@pytest.mark.enable_socket
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(1, 30), st.integers(1, 7),
       st.sampled_from(((), ("--losses",), ("--output", "json"))), TO)
def test_a_parquet_trace_on_a_dask_cluster_converts_as_here(started, seed, rows, group_rows,
                                                           options, to):
    """``--workers``: the row groups converted on the workers (``stream_dask``) give what
    this process gives."""
    on_cluster_and_here(written(valid_table(rows, seed), group_rows), to, *options)


@pytest.mark.enable_socket
def test_a_time_origin_on_a_dask_cluster_is_refused_to_osp_workload(started):
    """The workers see only the first row group's header: osp-workload's times, counted
    from the time origin, cannot be made there; one line, nothing written."""
    table = valid_table(20).replace_schema_metadata(
        {b"dcx:workload": b'{"name": "w", "time_origin": "2020-01-01T00:00:00"}'})
    data = written(table, 3)
    assert both("parquet", data, 1, to="osp-workload") == "converted"  # in this process
    assert on_cluster_and_here(data, "batsim")[0] == 0  # (Batsim holds no time origin)
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.parquet", Path(folder) / "out.json"
        source.write_bytes(data)
        code, said = dask_run(["convert", str(source), str(out), "--to", "osp-workload",
                               "--workers", "2"])
        assert code == 1 and said.count("\n") == 1, said
        assert "cannot convert in chunks: a chunk whose times count from another origin" in said
        assert os.listdir(folder) == ["in.parquet"]
