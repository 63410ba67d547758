"""``dcx convert`` of a large SWF, GWF or Parquet trace to an OpenDC workload folder a chunk
at a time (``formats/opendc_workload/stream_target.py``) against the whole-file path: for
generated traces, valid or not, with chunks small enough to cut between any two lines (or
row groups of a few rows), the same exit status, the same stderr and stdout (``--losses``,
``--strict``, ``--output json``) and the same tables (schemas with nullability and
key-value metadata, every value), or nothing written; what a chunk cannot decide alone is
refused in one line for a reason the input has; children in later chunks, a GPU usage
first met in a later chunk, the header's time origin; a pipe, to a folder and to standard
output (the tar archive)."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dcx.converters.stream_chunks import read_back, stream_pairs
from dcx.core import limits
from dcx.formats import gwf, opendc_workload, parquet, swf
from dcx.formats.gwf import codec as gwf_codec
from dcx.formats.opendc_workload import MEMBERS
from tests.test_convert_stream_dask import run as dask_run
from tests.test_convert_stream_dask import shared, started
from tests.test_convert_stream_gwf import grouped_workflow, interleaved, sample, text_ids
from tests.test_convert_stream_json import job, pipe, run, swf_lines
from tests.test_convert_stream_parquet import valid_table
from tests.test_parquet_partitions import trace_table, written
from tests.test_swf_fast import plain_trace
from tests.test_swf_stream import bad_trace

__all__ = ["shared", "started"]  # (the Dask tests' cluster fixtures, used here)

READERS = {"swf": swf.read, "gwf": gwf.read, "parquet": parquet.read}
TO = "opendc-workload"


def reason_holds(said: str, source: str, data: bytes) -> bool:
    """Whether the one-line refusal ``said`` names what the input has."""
    read = READERS[source](data)
    assert read.document is not None
    lost = opendc_workload.normal_form_losses(read.document)
    if "job numbers that are not all integers" in said:
        return source == "swf" and "task.id" in lost
    if "ids that opendc-workload renumbers" in said:
        return source == "parquet" and "task.id" in lost
    if "opendc-workload data in the tasks" in said:
        return "task.extras" in lost
    if "workflow whose tasks are not on consecutive lines" in said:
        return source == "gwf" and interleaved(data)
    if "ids that are text" in said:
        return source == "gwf" and text_ids(data)
    return False


def tables(folder: Path) -> dict[str, pa.Table]:
    return {name: pq.read_table(folder / name) for name in MEMBERS}


def same_tables(found: dict[str, pa.Table], expected: dict[str, pa.Table]) -> None:
    for name in MEMBERS:
        assert found[name].schema.equals(expected[name].schema, check_metadata=True), name
        assert found[name].equals(expected[name]), name


def both(source: str, data: bytes, chunk_bytes: int, *options: str) -> str:
    """The whole-file and the streamed conversion of ``data`` to an OpenDC workload folder
    agree, or the streamed one refuses (``convert.not-streamable``) in one line for a reason
    the input has and writes nothing; what happened."""
    with tempfile.TemporaryDirectory() as folder:
        given_path = Path(folder) / f"in.{source}"
        given_path.write_bytes(data)
        whole_out, streamed_out = Path(folder) / "whole", Path(folder) / "s"
        whole = run(["convert", str(given_path), str(whole_out), "--to", TO, *options],
                    stream=False)
        streamed = run(["convert", str(given_path), str(streamed_out), "--to", TO, *options],
                       stream=True, chunk_bytes=chunk_bytes)
        if "cannot convert in chunks" in streamed[1]:
            assert streamed[0] == 1 and not streamed_out.exists()
            assert streamed[1].count("\n") == 1
            assert reason_holds(streamed[1], source, data), streamed[1]
            assert sorted(os.listdir(folder)) == sorted(
                [given_path.name, *([whole_out.name] if whole[0] == 0 else [])])
            return "refused"
        expected = (whole[0], whole[1].replace(whole_out.name, streamed_out.name))
        assert streamed == expected, (streamed, expected)
        assert whole_out.exists() == streamed_out.exists() == (whole[0] == 0)
        # nothing left beside OUTPUT (the temporary folder) nor in it (the spool)
        assert sorted(os.listdir(folder)) == sorted(
            [given_path.name, *([whole_out.name, streamed_out.name] if whole[0] == 0
                                else [])])
        if whole[0] == 0:
            assert sorted(os.listdir(streamed_out)) == sorted(MEMBERS)
            same_tables(tables(streamed_out), tables(whole_out))
        return "converted" if whole[0] == 0 else "invalid"


OPTIONS = st.sampled_from(((), ("--losses",), ("--strict",), ("-v",), ("--output", "json")))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 40), st.sampled_from((1, 40, 200, 1000)),
       OPTIONS)
@example(seed=0, jobs=0, chunk_bytes=1, options=())  # no job: the whole path's refusal
# cores changed where no value counts: first at the first task the normal form changes (its
# nodes), in a chunk whose own normal form changes no cores
@example(seed=1, jobs=30, chunk_bytes=1, options=("--losses",))
def test_swf_in_chunks_is_the_whole_file_conversion(seed, jobs, chunk_bytes, options):
    rng = random.Random(seed)
    data = (plain_trace(seed, jobs, header=rng.random() < 0.8).encode()
            if rng.random() < 0.5 else bad_trace(seed, jobs))
    both("swf", data, chunk_bytes, *options)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 60), st.sampled_from((1, 60, 300, 2000)),
       OPTIONS, st.booleans())
def test_gwf_in_chunks_is_the_whole_file_conversion(seed, tasks, chunk_bytes, options, fast):
    with pytest.MonkeyPatch.context() as patch:
        if fast:  # every chunk tries the vectorised accept path (columns)
            patch.setattr(gwf_codec, "FAST_READ_BYTES", 0)
        both("gwf", sample(seed, tasks), chunk_bytes, *options)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 40), st.integers(1, 7), OPTIONS,
       st.booleans())
def test_parquet_by_row_groups_is_the_whole_file_conversion(seed, rows, group_rows, options,
                                                            valid):
    table = valid_table(max(rows, 1), seed) if valid else trace_table(seed, rows)
    both("parquet", written(table, group_rows), 1, *options)


def test_children_in_later_chunks_and_a_job_cut_between_chunks():
    """GWF workflows cut between chunks, whose tasks depend on tasks of earlier chunks
    (their children are in later ones), read line by line or as columns: the whole file's
    tables, children included, and report."""
    data = grouped_workflow(5, 200).encode()
    for fast in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            if fast:
                patch.setattr(gwf_codec, "FAST_READ_BYTES", 0)
            for chunk_bytes in (1, 700):
                assert both("gwf", data, chunk_bytes, "--losses") == "converted"
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.gwf", Path(folder) / "out"
        source.write_bytes(data)
        assert run(["convert", str(source), str(out), "--to", TO], stream=True,
                   chunk_bytes=700)[0] == 0
        found = tables(out)[opendc_workload.TASKS]
    children = found.column("children").to_pylist()
    parents = found.column("parents").to_pylist()
    ids = found.column("id").to_pylist()
    assert sum(map(len, children)) == sum(map(len, parents)) > 0
    row = {task: index for index, task in enumerate(ids)}
    assert any(row[parent] < len(ids) // 2 <= index for index, listed in enumerate(parents)
               for parent in listed)  # some child is in a later chunk than its parent


def test_a_preceding_job_in_a_later_chunk_is_a_dependency():
    """SWF preceding jobs in an earlier chunk, in a later chunk (the file is measured
    again: no extras value lost) and outside the file: the whole file's tables and
    losses; a pipe with the later one stops in one line, writing nothing."""
    data = swf_lines(job(1), job(2, preceding=5), job(3, preceding=1), job(4, preceding=99),
                     job(5, runtime=7))
    for chunk_bytes in (1, 60, 200):
        for options in ((), ("--losses",), ("--output", "json")):
            assert both("swf", data, chunk_bytes, *options) == "converted"
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "in.swf").write_bytes(data)
        out = Path(folder) / "out"
        assert run(["convert", str(Path(folder) / "in.swf"), str(out), "--to", TO],
                   stream=True, chunk_bytes=1)[0] == 0
        found = tables(out)[opendc_workload.TASKS].to_pydict()
    assert found["parents"] == [[], [5], [1], [], []]
    assert found["children"] == [[3], [], [], [], [2]]
    lines = [job(number) for number in range(1, 40)]
    later = swf_lines(*lines, job(40, preceding=80), *(job(n) for n in range(41, 100)))
    with tempfile.TemporaryDirectory() as folder:
        done = pipe(later, "convert", "-", str(Path(folder) / "out"), "--from", "swf",
                    "--to", TO)
        assert done.returncode == 1
        assert done.stderr.count(b"\n") == 1
        assert b"cannot convert in chunks: a job whose preceding job comes later" in done.stderr
        assert os.listdir(folder) == []


def test_the_time_origin_is_the_headers():
    """Every chunk's submission times count from the header's UnixStartTime (metadata
    ``dcx:time_origin``); a header line that changes it after the first chunk: a file is
    read again, a pipe stops in one line."""
    data = ("; UnixStartTime: 1000000000\n; TimeZoneString: UTC\n"
            + "\n".join(job(number) for number in range(1, 30)) + "\n").encode()
    for chunk_bytes in (1, 300):
        assert both("swf", data, chunk_bytes, "--losses") == "converted"
    lines = [job(number) for number in range(1, 60)]
    lines.insert(40, "; UnixStartTime: 1000000000")
    late = swf_lines(*lines)
    assert both("swf", late, 512) == "converted"
    with tempfile.TemporaryDirectory() as folder:
        done = pipe(late, "convert", "-", str(Path(folder) / "out"), "--from", "swf",
                    "--to", TO)
        assert done.returncode == 1, done.stderr
        assert done.stderr.count(b"\n") == 1
        assert b"cannot convert in chunks: a header line after the first chunk" in done.stderr
        assert os.listdir(folder) == []


def test_a_file_is_read_once_unless_its_first_chunks_cannot_be_kept(monkeypatch):
    """The folder is written while the file is first read, and kept; a header line that
    changes the time origin after the first chunk, or a preceding job met before its line,
    makes the file be read again to write it. The tables are the whole file's either way."""
    from dcx.formats.swf.stream_source import SwfSource

    readings: list[bool] = []
    reads = SwfSource.reads

    def counted(self, pieces, check):
        readings.append(check)
        return reads(self, pieces, check)

    monkeypatch.setattr(SwfSource, "reads", counted)
    jobs = [job(number, preceding=number - 3 if number % 10 == 0 else -1)
            for number in range(1, 60)]
    late_origin = [*jobs[:40], "; UnixStartTime: 1000000000", *jobs[40:]]
    later = [job(1, preceding=50), *jobs[1:]]
    for lines, readings_expected in ((jobs, [True]), (late_origin, [True, False]),
                                     (later, [True, False, False])):
        readings.clear()
        assert both("swf", swf_lines(*lines), 512, "--losses") == "converted"
        assert readings == readings_expected


def opendc_table(rows: int, profiles: dict[int, str]) -> pa.Table:
    """A valid Parquet trace whose tasks in ``profiles`` carry an OpenDC usage profile
    (the ``opendc-workload:fragments`` extra, as JSON text)."""
    table = valid_table(rows, 3)
    column = pa.array([profiles.get(row) for row in range(table.num_rows)], pa.string())
    return table.append_column("extras_json.opendc-workload:fragments", column)


def test_a_gpu_usage_first_met_in_a_later_row_group():
    """fragments.parquet has gpu_usage when some task's profile has one: met only in a
    later row group, the fragments written before it are copied with the column."""
    table = opendc_table(12, {1: "[[1000, 2000.0], [500, 1000.0]]",
                              9: "[[1000, 2000.0, 50.0], [500, 10.0, 0.0]]"})
    assert both("parquet", written(table, 2), 1, "--losses") == "converted"
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.parquet", Path(folder) / "out"
        source.write_bytes(written(table, 2))
        assert run(["convert", str(source), str(out), "--to", TO], stream=True)[0] == 0
        fragments = tables(out)[opendc_workload.FRAGMENTS]
    assert fragments.schema.field("gpu_usage").nullable
    assert fragments.column("gpu_usage").null_count == fragments.num_rows - 2
    assert both("parquet", written(opendc_table(6, {0: "[[10, 1.0, 2.0]]"}), 2), 1) \
        == "converted"


def test_opendc_data_the_normal_form_changes_is_refused():
    """A usage profile that is not one (its duration a fraction): the whole file counts it
    with every task's extras; in chunks, one line, nothing written."""
    table = opendc_table(8, {5: "[[1.5, 2000.0]]"})
    assert both("parquet", written(table, 2), 1) == "refused"


def test_ids_opendc_renumbers_are_refused_and_nothing_is_written():
    """A job number past 2^31 - 1: the whole file numbers every task 1, 2, …; in chunks it
    is refused in one line and an existing OUTPUT folder is left as it was."""
    data = swf_lines(job(1), job(2_147_483_648))
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out"
        source.write_bytes(data)
        out.mkdir()
        (out / opendc_workload.TASKS).write_bytes(b"before")
        code, said = run(["convert", str(source), str(out), "--to", TO], stream=True,
                         chunk_bytes=1)
        assert code == 1 and said.count("\n") == 1, said
        assert "cannot convert in chunks: job numbers that are not all integers" in said
        assert os.listdir(out) == [opendc_workload.TASKS]
        assert (out / opendc_workload.TASKS).read_bytes() == b"before"
        assert sorted(os.listdir(folder)) == ["in.swf", "out"]
    assert both("swf", data, 1) == "refused"


def test_a_folder_holding_other_files_is_not_replaced():
    data = swf_lines(job(1), job(2))
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out"
        source.write_bytes(data)
        out.mkdir()
        (out / "notes.txt").write_text("mine")
        whole = run(["convert", str(source), str(out), "--to", TO], stream=False)
        streamed = run(["convert", str(source), str(out), "--to", TO], stream=True)
        assert streamed == whole and whole[0] == 2
        assert os.listdir(out) == ["notes.txt"]
        assert sorted(os.listdir(folder)) == ["in.swf", "out"]


@pytest.mark.parametrize(("stream_bytes", "limit", "parts", "how"), [
    (1, 1 << 40, True, "parts"),  # from STREAM_BYTES: a part at a time, as validate
    (1 << 40, 1 << 40, True, "whole"),  # below it: whole
    (1, 1 << 40, False, "whole"),  # no part reader: whole within the input limit
    (1, 100, False, "not read"),  # and not at all beyond it
])
def test_the_output_is_read_back_as_validate_reads_it(stream_bytes, limit, parts, how):
    """The written folder is read back as ``dcx validate`` reads a folder; an output the
    reader rejects is refused (convert.invalid-output)."""
    from dcx.converters import partitions, streaming
    from dcx.formats.opendc_workload.stream_target import OpendcWorkloadTarget
    from dcx.formats.swf.stream_source import SwfSource

    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.swf", Path(folder) / "out"
        source.write_bytes(swf_lines(*(job(number) for number in range(1, 50))))
        assert run(["convert", str(source), str(out), "--to", TO], stream=False)[0] == 0
        target = OpendcWorkloadTarget(SwfSource(), True)
        spec = opendc_workload.FORMAT if parts else replace(opendc_workload.FORMAT,
                                                             read_parts=None)
        target.spec = spec
        calls: list[str] = []
        reader, whole = partitions.read_parts, spec.read

        def in_parts(path, spec, client=None):
            calls.append("parts")
            return reader(path, spec, client)

        def read_whole(data):
            calls.append("whole")
            return whole(data)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(streaming, "STREAM_BYTES", stream_bytes)
            patch.setattr(limits, "LIMITS", replace(limits.LIMITS, max_input_bytes=limit))
            patch.setattr(partitions, "read_parts", in_parts)
            patch.setattr(target, "spec", replace(spec, read=read_whole))
            assert read_back(target, str(out)) is None
            assert calls == ([] if how == "not read" else [how])
            (out / opendc_workload.FRAGMENTS).write_bytes(pq_bytes(
                pq.read_table(out / opendc_workload.FRAGMENTS).slice(1)))
            problem = read_back(target, str(out))
        if how == "not read":
            assert problem is None
        else:
            assert problem is not None and problem.code == "convert.invalid-output"
            assert "have no row in fragments.parquet" in problem.message, problem.message


def pq_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_a_pipe_converts_in_chunks_to_a_folder_and_to_standard_output():
    """A pipe read once: the whole file's folder and report; to standard output the tar
    archive the whole path writes, byte for byte."""
    data = plain_trace(4, 300).encode()
    with tempfile.TemporaryDirectory() as folder:
        source, whole, out = (Path(folder) / "in.swf", Path(folder) / "whole",
                              Path(folder) / "out")
        source.write_bytes(data)
        code, said = run(["convert", str(source), str(whole), "--to", TO, "--losses"],
                         stream=False)
        assert code == 0
        done = pipe(data, "convert", "-", str(out), "--from", "swf", "--to", TO, "--losses")
        assert done.returncode == 0, done.stderr
        assert done.stderr.decode() == said.replace(str(source), "<stdin>").replace(
            str(whole), str(out))
        same_tables(tables(out), tables(whole))
        assert sorted(os.listdir(folder)) == ["in.swf", "out", "whole"]
        done = pipe(data, "convert", "-", "-", "--from", "swf", "--to", TO)
        assert done.returncode == 0, done.stderr
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
            assert archive.getnames() == list(MEMBERS)
            with tempfile.TemporaryDirectory() as unpacked:
                archive.extractall(unpacked, filter="data")
                same_tables(tables(Path(unpacked)), tables(whole))


def test_standard_output_gets_the_whole_paths_archive():
    """To stdout, in this process: the streamed archive holds the whole path's tables, and
    is the tar archive ``core.members.pack`` makes of its members."""
    from dcx.core.members import pack, unpack

    data = plain_trace(7, 120).encode()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.swf"
        source.write_bytes(data)
        outputs = []
        for stream in (False, True):
            done = subprocess.run(
                [sys.executable, "-c",
                 "import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import "
                 "chunks\nfrom dcx.cli.main import main\n"
                 f"streaming.STREAM_BYTES = {0 if stream else 1 << 40}\n"
                 "chunks.CHUNK_BYTES = 1 << 9\nsys.exit(main(sys.argv[1:]))\n",
                 "convert", str(source), "-", "--to", TO], capture_output=True, check=False)
            assert done.returncode == 0, done.stderr
            outputs.append(done.stdout)
    members = [unpack(output, MEMBERS)[0] for output in outputs]
    assert members[0] is not None and members[1] is not None
    assert outputs[1] == pack(members[1], MEMBERS)
    for name in MEMBERS:
        assert pq.read_table(pa.BufferReader(members[1][name])).equals(
            pq.read_table(pa.BufferReader(members[0][name])))


def test_the_pairs_are_listed():
    assert {(source, TO) for source in ("swf", "gwf", "parquet")} <= stream_pairs()


@pytest.mark.enable_socket
def test_a_parquet_trace_on_a_dask_cluster_converts_as_here(started):
    """``--workers``: the row groups converted on the workers give the tables and report
    this process gives; with a time origin, which the workers do not see past the first row
    group's header, refused in one line, nothing written."""
    for table, converts in ((valid_table(20, 4), True), (valid_table(20).replace_schema_metadata(
            {b"dcx:workload": b'{"name": "w", "time_origin": "2020-01-01T00:00:00"}'}), False)):
        with tempfile.TemporaryDirectory() as folder:
            source, here, there = (Path(folder) / "in.parquet", Path(folder) / "here",
                                   Path(folder) / "there")
            source.write_bytes(written(table, 3))
            before = len(started)
            expected = dask_run(["convert", str(source), str(here), "--to", TO, "--losses"])
            found = dask_run(["convert", str(source), str(there), "--to", TO, "--losses",
                              "--workers", "2"])
            assert len(started) == before + 1  # the file went to the cluster
            assert expected[0] == 0, expected
            if converts:
                assert found == (0, expected[1].replace(str(here), str(there)))
                same_tables(tables(there), tables(here))
            else:
                assert found[0] == 1 and found[1].count("\n") == 1, found
                assert "cannot convert in chunks: a chunk whose times count from another " \
                    "origin" in found[1]
                assert sorted(os.listdir(folder)) == ["here", "in.parquet"]
