"""``dcx convert`` of a large Parquet file a row group at a time (the format's stream source,
``formats/parquet/stream_source.py``) against the whole-file path, to Parquet, SWF and GWF:
for generated tables, valid or not, cut into row groups of a few rows (jobs cut between row
groups, dependencies on tasks of other row groups), the same exit status, the same stderr
lines (and stdout, where ``--output json`` reports) and the same table or bytes, or nothing
written; what cannot be converted a row group at a time is refused with one line and writes
nothing; a pipe is read whole, as before."""

from __future__ import annotations

import contextlib
import io
import os
import random
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main
from dcx.converters import streaming
from dcx.converters.stream_chunks import stream_pairs
from tests.test_parquet_partitions import trace_table, written


def run(args: list[str], stream: bool) -> tuple[int, str]:
    """``dcx ARGS`` in this process, every input streamed (or none); exit code, and stderr
    followed by stdout (where ``--output json`` reports)."""
    err, out = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(out):
        patch.setattr(streaming, "STREAM_BYTES", 0 if stream else float("inf"))
        code = main(args)
    return code, err.getvalue() + out.getvalue()


def both(data: bytes, to: str, *options: str) -> str:
    """The whole-file and the row-group conversion of the Parquet ``data`` to ``to`` agree,
    or the row-group one refuses (``convert.not-streamable``) in one line and writes
    nothing; what happened."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.parquet"
        source.write_bytes(data)
        whole_out, streamed_out = Path(folder) / f"whole.{to}", Path(folder) / f"s.{to}"
        whole = run(["convert", str(source), str(whole_out), "--to", to, *options],
                    stream=False)
        streamed = run(["convert", str(source), str(streamed_out), "--to", to, *options],
                       stream=True)
        if "cannot convert in chunks" in streamed[1]:
            assert streamed[0] == 1 and not streamed_out.exists()
            assert streamed[1].count("\n") == 1
            assert sorted(os.listdir(folder)) == ["in.parquet", *(
                [whole_out.name] if whole[0] == 0 else [])]
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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 40), st.integers(1, 7),
       st.sampled_from(((), ("--losses",), ("--strict",), ("--output", "json"))),
       st.sampled_from(("parquet", "swf", "gwf")))
def test_row_group_conversion_is_the_whole_file_conversion(seed, rows, group_rows, options,
                                                           to):
    both(written(trace_table(seed, rows), group_rows), to, *options)


def valid_table(rows: int, seed: int | None = None) -> pa.Table:
    """A valid trace: jobs of three tasks, each task after the one before (often in an
    earlier row group), a workload name in the metadata; with ``seed``, jobs of 1 to 4
    tasks, none to two dependencies on earlier tasks, and perhaps features and extras."""
    rng = random.Random(seed)
    table = trace_table(0, 0)
    columns = {name: pa.array([None] * rows, table.schema.field(name).type)
               for name in table.column_names}
    job_ids = [row // 3 + 1 for row in range(rows)]
    needs: list[list[int]] = [[row] if row else [] for row in range(rows)]
    if seed is not None:
        job_ids, job, left = [], 0, 0
        for _ in range(rows):
            if not left:
                job, left = job + 1, rng.randint(1, 4)
            job_ids.append(job)
            left -= 1
        needs = [sorted(rng.sample(range(1, row + 1), min(row, rng.choice((0, 0, 1, 2)))))
                 for row in range(rows)]
    columns.update({
        "job_id": pa.array(job_ids, pa.int64()),
        "job_name": pa.array(["j"] * rows, pa.string()),
        "job_user": pa.array(["u"] * rows, pa.string()),
        "task_id": pa.array(list(range(1, rows + 1)), pa.int64()),
        "submit_time_s": pa.array([float(row) for row in range(rows)], pa.float64()),
        "nodes": pa.array([1] * rows, pa.int64()), "gpus": pa.array([0] * rows, pa.int64()),
        "cores": pa.array([2.0] * rows, pa.float64()),
        "runtime_s": pa.array([5.0] * rows, pa.float64()),
        "dependencies": pa.array(needs, pa.list_(pa.int64())),
    })
    if seed is not None and rng.random() < 0.3:
        columns["features"] = pa.array([rng.choice(([], ["ssd"])) for _ in range(rows)],
                                       pa.list_(pa.string()))
    if seed is not None and rng.random() < 0.4:
        columns["extras.swf:Status"] = pa.array([rng.choice((1, None)) for _ in range(rows)],
                                                pa.int64())
    return pa.table(columns).replace_schema_metadata(
        {b"dcx:workload": b'{"name": "w", "attributes": {"k": 1}}'})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(1, 7),
       st.sampled_from(((), ("--losses",), ("--strict",), ("--output", "json"))),
       st.sampled_from(("parquet", "swf", "gwf")))
def test_valid_traces_convert_as_the_whole_file(seed, rows, group_rows, options, to):
    """Valid traces (most convert; to SWF, a task with two dependencies across row groups
    is refused)."""
    both(written(valid_table(rows, seed), group_rows), to, *options)


def test_jobs_and_dependencies_across_row_groups_convert():
    """Jobs cut between row groups, every task depending on one of the group before: the
    table and bytes of the whole file, for each target, with --losses."""
    data = written(valid_table(100), 7)
    assert pq.ParquetFile(io.BytesIO(data)).num_row_groups > 10
    for to in ("parquet", "swf", "gwf"):
        assert both(data, to) == both(data, to, "--losses") == "converted"


def test_several_dependencies_to_swf_are_refused_and_nothing_is_written():
    """To SWF, a task with two dependencies, one in another row group (SWF holds one): one
    line, OUTPUT left as it was; the whole file converts."""
    table = valid_table(6)
    needs = [[], [1], [1, 2], [3], [3, 4], [5]]  # task 5 needs 3, another job's
    table = table.set_column(table.schema.get_field_index("dependencies"), "dependencies",
                             pa.array(needs, pa.list_(pa.int64())))
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.parquet", Path(folder) / "out.swf"
        source.write_bytes(written(table, 2))
        out.write_bytes(b"before")
        code, said = run(["convert", str(source), str(out)], stream=True)
        assert code == 1
        assert said == (f"{source}: error: /: cannot convert in chunks: a task with several "
                        "dependencies, one of them on a task of another row group (SWF holds "
                        "one); convert a file under the input size limit\n")
        assert out.read_bytes() == b"before"
        assert sorted(os.listdir(folder)) == ["in.parquet", "out.swf"]
        assert run(["convert", str(source), str(out)], stream=False)[0] == 0


def test_a_parquet_pipe_is_read_whole():
    """Row groups are read by seeking: a pipe keeps the whole-file path."""
    data = written(valid_table(30), 4)
    taken: list[object] = []

    def whole(stream: object, *rest: object) -> tuple[bytes, None, None]:
        taken.append(stream)
        return data, None, None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streaming, "STREAM_BYTES", 0)
        patch.setattr(streaming, "_pipe_to_convert", whole)
        assert streaming.convert_input("-", "parquet", lambda spec: True) == (data, None, None)
    assert taken


def test_text_job_ids_to_gwf_are_refused():
    """GWF numbers workflows whose ids are text 0, 1, … over the whole file: a row group
    alone would start again, so the conversion is refused; the whole file converts."""
    table = valid_table(9)
    table = table.set_column(0, "job_id", pa.array([f"j{row // 3}" for row in range(9)]))
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.parquet", Path(folder) / "out.gwf"
        source.write_bytes(written(table, 3))
        code, said = run(["convert", str(source), str(out)], stream=True)
        assert (code, said) == (1, f"{source}: error: /: cannot convert in chunks: ids that "
                                "gwf renumbers (the whole file numbers them all together); "
                                "convert a file under the input size limit\n")
        assert not out.exists()
        assert run(["convert", str(source), str(out)], stream=False)[0] == 0
    assert both(written(table, 3), "parquet") == "converted"


def test_a_file_that_is_not_parquet_says_what_the_whole_reader_says():
    """(A footer that pyarrow cannot read is worded differently by the whole reader, which
    reads from a buffer, and the part reader: not held here.)"""
    data = written(valid_table(20), 3)
    for broken in (data[:-1] + b"!", written(valid_table(20).drop_columns(["nodes"]), 3)):
        for to in ("parquet", "swf", "gwf"):
            assert both(broken, to) == "invalid"


def test_the_pairs_are_listed():
    assert {("parquet", "parquet"), ("parquet", "swf"), ("parquet", "gwf")} <= stream_pairs()
