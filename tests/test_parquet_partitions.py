"""Parquet checked a row group at a time (``dcx.formats.parquet.stream``), in this process and
as partitions on a Dask cluster (``dcx.converters.partitions``), against the whole-file reader:
the same diagnostics, byte for byte, and the same job count, for tables with nulls, NaN, split
jobs, disagreeing job fields, repeated ids, unknown and forward dependencies, cycles, bad
extras_json text and null feature names, cut into row groups of a few rows."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main, parted_summary, workload_summary
from dcx.converters.partitions import read_parts
from dcx.core.declaration import ChunkedRead
from dcx.formats import parquet
from dcx.formats.parquet import stream

NAMES = ("a", "b", None)


def trace_table(seed: int, rows: int) -> pa.Table:
    """A table of ``rows`` tasks with a little of everything ``read`` reports (or nothing:
    about a third of the tables are valid, so that job counts are compared too)."""
    rng = random.Random(seed)
    calm = rng.random() < 0.35
    texts = rng.random() < 0.3
    task_ids: list[Any] = list(range(1, rows + 1))
    if rng.random() < 0.3:
        rng.shuffle(task_ids)
    if not calm and rng.random() < 0.3 and rows > 1:
        task_ids[rng.randrange(rows)] = rng.choice(task_ids)  # a repeated task id
    job_ids: list[Any] = []
    job = 0
    for _ in range(rows):
        if not job_ids or rng.random() < 0.6:
            job += 1
        job_ids.append(job)
    if not calm and rng.random() < 0.2 and rows > 2:
        job_ids[rng.randrange(rows)] = rng.choice(job_ids)  # perhaps a split job
    names: list[str | None] = []
    for row in range(rows):
        same = row and job_ids[row] == job_ids[row - 1] and (calm or rng.random() < 0.95)
        names.append(names[-1] if same else rng.choice(NAMES))
    users = [rng.choice(NAMES) if not calm and rng.random() < 0.03 else "u"
             for _ in range(rows)]
    needs: list[Any] = []
    for row in range(rows):
        roll = rng.random()
        if roll < 0.6:
            needs.append([])
        elif calm or roll < 0.9:
            needs.append([task_ids[rng.randrange(row)]] if row else [])
        else:
            needs.append([rng.choice((*task_ids, rows + 9))])  # ahead, itself, unknown
    submit: list[float | None] = [float(row) for row in range(rows)]
    runtime: list[Any] = [rng.choice((1.0, None)) for _ in range(rows)]
    nodes: list[Any] = [1] * rows
    if not calm:
        for values, bad in ((submit, float("nan")), (runtime, float("nan")), (nodes, None)):
            if rng.random() < 0.1 and rows:
                values[rng.randrange(rows)] = bad
        if rng.random() < 0.05 and rows:
            needs[rng.randrange(rows)] = None
        if rng.random() < 0.05 and rows:
            needs[rng.randrange(rows)] = [None]
    if texts:
        task_ids = [f"t{value}" for value in task_ids]
        job_ids = [f"j{value}" for value in job_ids]
        needs = [None if n is None else [None if v is None else f"t{v}" for v in n]
                 for n in needs]
    id_type = pa.string() if texts else pa.int64()
    columns: dict[str, Any] = {
        "job_id": pa.array(job_ids, id_type),
        "job_name": pa.array(names, pa.string()),
        "job_user": pa.array(users, pa.string()),
        "task_id": pa.array(task_ids, id_type),
        "submit_time_s": pa.array(submit, pa.float64()),
        "runtime_s": pa.array(runtime, pa.float64()),
        "requested_time_s": pa.array([None] * rows, pa.float64()),
        "nodes": pa.array(nodes, pa.int64()),
        "cores": pa.array([1.0] * rows, pa.float64()),
        "memory_mb": pa.array([None] * rows, pa.float64()),
        "gpus": pa.array([0] * rows, pa.int64()),
        "dependencies": pa.array(needs, pa.list_(id_type)),
        "deadline_s": pa.array([None] * rows, pa.float64()),
        "user": pa.array([None] * rows, pa.string()),
        "group": pa.array([None] * rows, pa.string()),
    }
    if rng.random() < 0.4:
        good = ('{"a": 1}', "[1, 2]", None, "3")
        columns["extras_json.x"] = pa.array(
            [rng.choice((*good, "{") if not calm and rng.random() < 0.1 else good)
             for _ in range(rows)], pa.string())
        columns["extras.swf:Status"] = pa.array(
            [rng.choice((1.0, None, float("nan") if not calm and rng.random() < 0.05
                         else 2.0)) for _ in range(rows)], pa.float64())
    if rng.random() < 0.3:
        columns["features"] = pa.array(
            [rng.choice(([], ["ssd"], None, ["ssd", None] if not calm and rng.random() < 0.1
                         else ["ib"])) for _ in range(rows)], pa.list_(pa.string()))
    return pa.table(columns)


def written(table: pa.Table, group_rows: int) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=max(group_rows, 1))
    return sink.getvalue()


def agree(found: ChunkedRead, data: bytes) -> None:
    exact = parquet.read(data)
    assert found.diagnostics == exact.diagnostics
    assert [d.render() for d in found.diagnostics] == [d.render() for d in exact.diagnostics]
    assert found.ok == exact.ok
    if exact.ok:
        assert exact.document is not None and exact.document.workload is not None
        assert found.jobs == len(exact.document.workload.jobs)
        assert parted_summary(found, parquet.FORMAT) == workload_summary(
            exact.document.workload)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2 ** 32), st.integers(0, 40), st.integers(1, 12))
@example(seed=0, rows=0, group_rows=1)
def test_row_groups_give_the_whole_reads_diagnostics(seed: int, rows: int, group_rows: int):
    data = written(trace_table(seed, rows), group_rows)
    agree(stream.read_parts(io.BytesIO(data)), data)


def test_a_job_continued_across_row_groups_is_one_job_and_its_fields_compared():
    table = trace_table(1, 0)
    rows = {"job_id": [1, 1, 1, 2, 2, 1], "job_name": ["a", "a", "b", "c", "c", "a"]}
    built = pa.table({name: (pa.array(rows[name], table.schema.field(name).type)
                             if name in rows else pa.array([None] * 6, table.schema.field(
                                 name).type)) for name in table.column_names})
    built = built.set_column(built.column_names.index("task_id"), "task_id",
                             pa.array(range(1, 7), pa.int64()))
    for column, value in (("submit_time_s", 0.0), ("nodes", 1), ("cores", 1.0), ("gpus", 0)):
        built = built.set_column(built.column_names.index(column), column,
                                 pa.array([value] * 6, table.schema.field(column).type))
    built = built.set_column(built.column_names.index("dependencies"), "dependencies",
                             pa.array([[]] * 6, pa.list_(pa.int64())))
    data = written(built, 2)
    found = stream.read_parts(io.BytesIO(data))
    agree(found, data)
    assert [(d.code, d.pointer) for d in found.diagnostics] == [
        ("parquet.split-job", "/rows/5/job_id"), ("parquet.job-fields", "/rows/2/job_name")]


def test_not_parquet_and_a_bad_schema_end_at_the_footer():
    for data in (b"", b"PAR1", b"PAR1 not really", b"not parquet at all"):
        found = stream.read_parts(io.BytesIO(data))
        assert [d.code for d in found.diagnostics] == ["parquet.unreadable"]
    table = trace_table(3, 5).drop_columns(["nodes"])
    data = written(table, 2)
    agree(stream.read_parts(io.BytesIO(data)), data)


def test_a_damaged_row_group_is_unreadable_as_in_the_whole_read():
    data = written(trace_table(5, 400), 50)
    for at in (200, 1000, 3000, len(data) // 2):
        damaged = data[:at] + b"\0" * 64 + data[at + 64:]
        found = stream.read_parts(io.BytesIO(damaged))
        assert [d.code for d in found.diagnostics] == ["parquet.unreadable"]
        agree(found, damaged)


def test_a_damaged_footer_is_worded_as_in_the_whole_read():
    """Arrow words a damaged footer after what it was opened from (the whole read's buffer,
    the row-group read's file) and may end with the stray byte it met: the message is the
    same, and printable, either way."""
    data = written(trace_table(5, 400), 50)
    for at in range(len(data) - 120, len(data) - 8, 8):
        damaged = data[:at] + bytes([14, 15, 255, 0, 10, 13, 27, 7]) + data[at + 8:]
        found = stream.read_parts(io.BytesIO(damaged))
        if found.ok:
            continue
        agree(found, damaged)
        for diagnostic in found.diagnostics:
            assert diagnostic.render().isprintable(), diagnostic.render()
            assert "Parquet input source" not in diagnostic.message


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A Dask cluster of two worker threads in this process (``processes=False``): the
    partition path as it runs on real workers, without their start-up cost."""
    pytest.importorskip("distributed", reason="dask[distributed] is in the test extra")
    from dcx.converters.partitions import local_client

    cluster, client = local_client(2, processes=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.mark.enable_socket
@pytest.mark.parametrize("seed", range(12))
def test_partitions_on_a_cluster_give_the_whole_reads_diagnostics(client, tmp_path, seed):
    rows = random.Random(seed).randrange(1, 60)
    path = tmp_path / "t.parquet"
    path.write_bytes(written(trace_table(seed, rows), 5))
    found = read_parts(str(path), parquet.FORMAT, client)
    assert found == read_parts(str(path), parquet.FORMAT)
    agree(found, path.read_bytes())


def _validate(path: Path, *options: str, capsys: pytest.CaptureFixture[str]
              ) -> tuple[int, str, str]:
    status = main(["validate", str(path), *options])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.enable_socket
def test_dcx_validate_on_a_cluster_says_what_the_whole_file_read_says(
        tmp_path, capsys, monkeypatch):
    from dcx.converters import partitions

    real = partitions.local_client
    started = []

    def threads(workers: int, processes: bool = True) -> tuple[Any, Any]:
        started.append(workers)
        return real(workers, processes=False)

    monkeypatch.setattr(partitions, "local_client", threads)
    for seed in (4, 7, 11, 5):
        path = tmp_path / f"t{seed}.parquet"
        path.write_bytes(written(trace_table(seed, 30), 4))
        whole = _validate(path, capsys=capsys)
        assert _validate(path, "--workers", "2", capsys=capsys) == whole
        assert _validate(path, "--workers", "2", "--output", "json", capsys=capsys) == \
            _validate(path, "--output", "json", capsys=capsys)
    assert started == [2] * 8
    assert _validate(path, "--workers", "-1", capsys=capsys)[0] == 2
    status, _, err = _validate(path, "--workers", "2", "--scheduler-address", "tcp://x:1",
                               capsys=capsys)
    assert status == 2 and "existing cluster" in err
    swf = tmp_path / "x.swf"  # no file read in parts: no cluster is started
    swf.write_text("1 0 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert _validate(swf, "--workers", "2", capsys=capsys)[0] == 0
    assert started == [2] * 8


def test_a_large_parquet_file_is_validated_a_row_group_at_a_time(tmp_path, capsys,
                                                                 monkeypatch):
    from dcx.converters import partitions, streaming

    seen = []
    real = partitions.read_parts

    def spy(path: str, spec: Any, client: Any = None) -> ChunkedRead:
        seen.append(path)
        return real(path, spec, client)

    for seed in (2, 4, 6):
        path = tmp_path / f"t{seed}.parquet"
        path.write_bytes(written(trace_table(seed, 40), 3))
        whole = _validate(path, capsys=capsys)
        monkeypatch.setattr(streaming, "STREAM_BYTES", 1)
        monkeypatch.setattr(partitions, "read_parts", spy)
        assert _validate(path, capsys=capsys) == whole
        monkeypatch.undo()
    assert len(seen) == 3


@pytest.mark.enable_socket
def test_dcx_info_by_row_groups_and_on_a_cluster_says_what_the_whole_file_read_says(
        tmp_path, capsys, monkeypatch):
    from dcx.converters import partitions, streaming

    real = partitions.local_client
    monkeypatch.setattr(partitions, "local_client",
                        lambda workers, processes=True: real(workers, processes=False))
    files = []
    for seed in (2, 4, 9, 13):
        path = tmp_path / f"t{seed}.parquet"
        path.write_bytes(written(trace_table(seed, 30), 4))
        files.append(str(path))
    for output in ("text", "json"):
        whole = main(["info", *files, "--output", output]), capsys.readouterr()
        assert main(["info", *files, "--output", output, "--workers", "2"]) == whole[0]
        assert capsys.readouterr() == whole[1]
        with monkeypatch.context() as large:
            large.setattr(streaming, "STREAM_BYTES", 1)
            assert main(["info", *files, "--output", output]) == whole[0]
            assert capsys.readouterr() == whole[1]
    assert '"tasks": 30' in whole[1].out



@pytest.mark.enable_socket
def test_dcx_validate_on_an_existing_cluster_reaches_it_by_its_address(tmp_path, capsys):
    from dcx.converters.partitions import local_client

    path = tmp_path / "t.parquet"
    path.write_bytes(written(trace_table(7, 40), 6))
    whole = _validate(path, capsys=capsys)
    cluster, client = local_client(2, processes=False)  # its own: no task ran there yet
    try:
        address = client.scheduler.address  # inproc://…: a cluster of this process
        assert _validate(path, "--scheduler-address", address, capsys=capsys) == whole
        assert client.status == "running"  # the command closed its own client only
        assert client.run_on_scheduler(
            lambda dask_scheduler: "check_part" in dask_scheduler.task_prefixes)
    finally:
        client.close()
        cluster.close()
