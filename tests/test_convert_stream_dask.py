"""``dcx convert`` of a large Parquet file on a Dask cluster (``--workers N``,
``--scheduler-address``; ``dcx.converters.stream_dask``) against the same conversion a row group
at a time in this process, to Parquet, SWF and GWF: for generated tables, valid or not, cut
into row groups of a few rows (jobs cut between row groups, some across several; dependencies
on tasks of other row groups), the same exit status, the same stderr lines (and stdout, where
``--output json`` reports), the same table or bytes, or nothing written; refusals and damaged
files alike; the parts in flight bounded by the window; inputs not converted by row groups
start no cluster; a large Parquet pipe is refused with an existing cluster. The cluster is
one LocalCluster of two worker threads (``processes=False``) shared by the module."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main
from dcx.converters import partitions, stream_dask, streaming
from dcx.formats import parquet
from tests.test_convert_stream_parquet import valid_table
from tests.test_parquet_partitions import trace_table, written

pytestmark = pytest.mark.enable_socket

OPTIONS = ((), ("--losses",), ("--strict",), ("--output", "json"))
LOCAL_CLIENT = partitions.local_client
"""The real one (the ``started`` fixture stands in for it while the module runs)."""


@pytest.fixture(scope="module")
def shared() -> Iterator[Any]:
    """One LocalCluster of two worker threads; each command gets a client of it."""
    cluster, client = LOCAL_CLIENT(2, processes=False)
    client.close()
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def started(shared: Any) -> Iterator[list[int]]:
    """The local clusters commands asked for (each one a client of ``shared``)."""
    from distributed import Client

    asked: list[int] = []

    def local_client(workers: int, processes: bool = True) -> tuple[Any, Any]:
        asked.append(workers)
        return None, Client(shared)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(partitions, "local_client", local_client)
        yield asked


CONVERTED: list[int] = []
_CONVERT_GROUP = stream_dask.convert_group


def counted_convert_group(path: str, parts: Any, index: int, *rest: Any) -> Any:
    """``convert_group``, its row group noted in ``CONVERTED`` (a function of this module:
    Dask sends it to the worker threads by name, so they all note in the same list)."""
    CONVERTED.append(index)
    return _CONVERT_GROUP(path, parts, index, *rest)


@pytest.fixture(scope="module")
def converted_on_workers() -> Iterator[list[int]]:
    """The row groups the workers converted (``convert_group`` calls)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stream_dask, "convert_group", counted_convert_group)
        yield CONVERTED


def run(args: list[str]) -> tuple[int, str]:
    """``dcx ARGS`` in this process, every Parquet file converted by row groups; exit code,
    and stderr followed by stdout (where ``--output json`` reports)."""
    err, out = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(out):
        patch.setattr(streaming, "STREAM_BYTES", 0)
        code = main(args)
    return code, err.getvalue() + out.getvalue()


def same_output(expected: Path, found: Path, to: str) -> None:
    assert expected.exists() == found.exists()
    if not expected.exists():
        return
    if to == "parquet":
        table, other = pq.read_table(expected), pq.read_table(found)
        assert other.equals(table)
        assert other.schema.equals(table.schema, check_metadata=True)
        assert pq.ParquetFile(found).metadata.num_row_groups == \
            pq.ParquetFile(expected).metadata.num_row_groups
    else:
        assert found.read_bytes() == expected.read_bytes()


def on_cluster_and_here(data: bytes, to: str, *options: str,
                        cluster: tuple[str, ...] = ("--workers", "2")) -> tuple[int, str]:
    """The conversion of the Parquet ``data`` to ``to`` in this process and on the cluster
    agree (exit code, report, output); what happened."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.parquet"
        source.write_bytes(data)
        here_out, there_out = Path(folder) / f"here.{to}", Path(folder) / f"there.{to}"
        here = run(["convert", str(source), str(here_out), "--to", to, *options])
        there = run(["convert", str(source), str(there_out), "--to", to, *options, *cluster])
        assert there == (here[0], here[1].replace(here_out.name, there_out.name))
        same_output(here_out, there_out, to)
        assert sorted(os.listdir(folder)) == sorted(
            ["in.parquet", *([here_out.name, there_out.name] if here_out.exists() else [])])
        return here


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 40), st.integers(1, 7),
       st.sampled_from(OPTIONS), st.sampled_from(("parquet", "swf", "gwf")))
def test_traces_valid_or_not_convert_on_a_cluster_as_in_this_process(
        started, seed, rows, group_rows, options, to):
    data = written(trace_table(seed, rows), group_rows)
    before = len(started)
    on_cluster_and_here(data, to, *options)
    assert len(started) == before + 1  # the file went to the cluster


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(1, 7),
       st.sampled_from(OPTIONS), st.sampled_from(("parquet", "swf", "gwf")))
def test_valid_traces_convert_on_a_cluster_as_in_this_process(
        started, seed, rows, group_rows, options, to):
    """Jobs of 1 to 4 tasks (in row groups of one row, a job spans up to four), none to two
    dependencies on earlier tasks, perhaps features and extras; to SWF, a task with two
    dependencies across row groups is refused, on the cluster as here."""
    on_cluster_and_here(written(valid_table(rows, seed), group_rows), to, *options)


def test_jobs_across_several_row_groups_and_dependencies_across_them(
        started, converted_on_workers):
    table = valid_table(100)
    long_job = table.set_column(0, "job_id", pa.array([1] * 20 + [row // 3 + 2 for row in
                                                                  range(80)], pa.int64()))
    for data in (written(table, 7), written(long_job, 3)):
        assert pq.ParquetFile(io.BytesIO(data)).num_row_groups > 10
        groups = pq.ParquetFile(io.BytesIO(data)).num_row_groups
        for to in ("parquet", "swf", "gwf"):
            del converted_on_workers[:]
            code, said = on_cluster_and_here(data, to, "--losses")
            assert code == 0 and "wrote" in said
            # every row group converted by the workers: once, or in two readings (to SWF,
            # whose header is written first, and wherever the first reading cannot write)
            assert sorted(set(converted_on_workers)) == list(range(groups))


def test_refusals_on_a_cluster_are_the_same_and_write_nothing(started):
    table = valid_table(6)
    needs = [[], [1], [1, 2], [3], [3, 4], [5]]  # to SWF: task 5 needs 3, another job's
    several = table.set_column(table.schema.get_field_index("dependencies"), "dependencies",
                               pa.array(needs, pa.list_(pa.int64())))
    code, said = on_cluster_and_here(written(several, 2), "swf")
    assert code == 1 and "several dependencies" in said
    texts = valid_table(9).set_column(0, "job_id", pa.array([f"j{row // 3}" for row in
                                                             range(9)]))
    code, said = on_cluster_and_here(written(texts, 3), "gwf")
    assert code == 1 and "ids that gwf renumbers" in said


def test_invalid_and_damaged_files_say_the_same(started):
    data = written(valid_table(60), 7)
    damaged = data[:40] + b"\xff" * 64 + data[104:]  # a row group's bytes overwritten
    for broken in (damaged, data[:-1] + b"!", written(trace_table(5, 30), 4)):
        for to in ("parquet", "swf"):
            assert on_cluster_and_here(broken, to)[0] == 1


def test_an_existing_cluster_by_its_address(shared, converted_on_workers):
    from distributed import Client

    with Client(shared) as client:
        address = client.scheduler.address  # inproc://…: the cluster of this process
    data = written(valid_table(40, 7), 3)
    for to in ("parquet", "swf", "gwf"):
        del converted_on_workers[:]
        on_cluster_and_here(data, to, cluster=("--scheduler-address", address))
        assert converted_on_workers  # its workers converted the row groups


def test_standard_output_gets_the_same_bytes(started, capfd):
    data = written(valid_table(50, 3), 4)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.parquet"
        source.write_bytes(data)
        said = []
        for extra in ((), ("--workers", "2")):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(streaming, "STREAM_BYTES", 0)
                code = main(["convert", str(source), "-", "--to", "gwf", *extra])
            said.append((code, capfd.readouterr()))
    assert said[0] == said[1] and said[0][0] == 0 and said[0][1].out.startswith("WorkflowID")


def test_the_parts_in_flight_are_bounded_by_the_window(shared, monkeypatch):
    """The driver has asked for at most a window of conversions ahead of the chunk it
    takes, whatever the number of row groups."""
    from distributed import Client

    data = written(valid_table(120), 3)  # 40 row groups

    class Counted:
        """The client, counting the conversions asked for."""

        def __init__(self, client: Any) -> None:
            self.client = client
            self.asked = 0

        def submit(self, function: Any, *args: Any, **options: Any) -> Any:
            self.asked += function is stream_dask.convert_group
            return self.client.submit(function, *args, **options)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.client, name)

    monkeypatch.setattr(stream_dask, "WINDOW_PER_THREAD", 2)
    with tempfile.TemporaryDirectory() as folder, Client(shared) as client:
        path = Path(folder) / "in.parquet"
        path.write_bytes(data)
        counted = Counted(client)
        source: Any = stream_dask.dask_source(parquet.FORMAT, counted, str(path), "swf")
        window = source._window()
        assert window == 4
        taken = 0
        with open(path, "rb") as opened:
            for _ in source.reads([opened], check=False):
                taken += 1
                assert counted.asked <= taken + window
        # (each row group's last job goes with the next one: the first group's chunk is empty)
        assert taken == 39 and counted.asked == 40


def test_inputs_not_converted_by_row_groups_start_no_cluster(started, tmp_path):
    """An SWF file, or a Parquet file below 16 MB (converted whole), converts as without
    --workers, and no cluster is started."""
    swf = tmp_path / "x.swf"
    swf.write_text("1 0 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    small = tmp_path / "small.parquet"
    small.write_bytes(written(valid_table(30, 2), 4))
    before = len(started)
    for source, target in ((swf, "out.parquet"), (small, "out.swf"), (small, "out.parquet")):
        said = []
        for extra in ((), ("--workers", "2")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                said.append((main(["convert", str(source), str(tmp_path / target), *extra]),
                             err.getvalue()))
        assert said[0] == said[1]
    assert len(started) == before


def test_cluster_options_that_cannot_be_used_are_usage_errors(tmp_path, monkeypatch, capsys):
    path = tmp_path / "in.parquet"
    path.write_bytes(written(valid_table(30), 4))
    out = str(tmp_path / "out.swf")
    assert main(["convert", str(path), out, "--workers", "-1"]) == 2
    assert main(["convert", str(path), out, "--workers", "2", "--scheduler-address",
                 "tcp://192.0.2.1:8786"]) == 2
    assert "existing cluster" in capsys.readouterr().err
    # a large Parquet pipe is converted whole here: the workers of an existing cluster
    # would not be used, and the command says so rather than ignoring the address
    monkeypatch.setattr(streaming, "STREAM_BYTES", 100)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    assert main(["convert", "-", out, "--scheduler-address", "tcp://192.0.2.1:8786"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "dcx: error: <stdin>: a parquet pipe is converted whole in this process, not on the "
        "workers of --scheduler-address; give a file path they share"]
    assert not os.path.exists(out)


def test_worker_processes_send_the_same_parts(monkeypatch):
    """Worker processes (the parts, losses and findings pickled between processes, as
    ``--workers N`` runs them), for the targets whose parts are objects: an Arrow table,
    GWF's document of columns."""
    from distributed import Client

    cluster, client = LOCAL_CLIENT(2, processes=True)
    client.close()
    try:
        monkeypatch.setattr(partitions, "local_client",
                            lambda workers, processes=True: (None, Client(cluster)))
        data = written(valid_table(60), 4)
        for to in ("parquet", "gwf"):
            assert on_cluster_and_here(data, to, "--losses")[0] == 0
    finally:
        cluster.close()
