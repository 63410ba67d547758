"""``dcx info`` on inputs too large to hold: SWF's and GWF's chunked readers count the jobs,
tasks and dependencies ``workload_summary`` gives for the whole-file read of the same bytes
(hypothesis traces, tiny chunks), and ``dcx info`` prints, for a file or a pipe from
``STREAM_BYTES`` on, what it prints for the same bytes read whole. A Parquet pipe that
outgrows ``STREAM_BYTES`` is spooled to a temporary file and read by row groups, for
``validate`` and ``info``, with the diagnostics the whole read gives, named ``<stdin>``."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.cli.main import main, parted_summary, workload_summary
from dcx.converters import inputs, streaming
from dcx.core import limits
from dcx.core.declaration import ChunkedRead, FormatDeclaration
from dcx.core.diagnostics import ReadResult
from dcx.formats import gwf, swf
from dcx.formats.gwf import codec as gwf_codec
from dcx.formats.swf import codec as swf_codec
from dcx.parsing.chunks import line_chunks
from tests.test_gwf_fast import HEADER, TOKENS, archive_text, workflow_text
from tests.test_gwf_stream import mutated, tangled_workflow, workflow_task
from tests.test_parquet_partitions import trace_table, written
from tests.test_swf_fast import plain_trace
from tests.test_swf_stream import bad_trace, job


def counted(spec: FormatDeclaration, read: Callable[[bytes], ReadResult], data: bytes,
            chunk_bytes: int, head: int = 0) -> ChunkedRead:
    """The chunked read of ``data``, its counts held to the whole-file read's summary."""
    assert spec.read_chunks is not None
    found = spec.read_chunks(line_chunks(io.BytesIO(data[head:]).read, data[:head],
                                         chunk_bytes))
    exact = read(data)
    assert found.diagnostics == exact.diagnostics
    if exact.ok and exact.document is not None and exact.document.workload is not None:
        assert parted_summary(found, spec) == workload_summary(exact.document.workload)
    return found


def swf_counted(data: bytes, chunk_bytes: int, head: int = 0) -> ChunkedRead:
    return counted(swf.FORMAT, swf_codec._read, data, chunk_bytes, head)


def gwf_counted(data: bytes, chunk_bytes: int, head: int = 0) -> ChunkedRead:
    return counted(gwf.FORMAT, gwf_codec._read, data, chunk_bytes, head)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), jobs=st.integers(0, 60), chunk_bytes=st.integers(1, 400),
       head=st.integers(0, 300))
def test_swf_chunks_count_what_the_whole_file_read_holds(seed, jobs, chunk_bytes, head):
    data = bad_trace(seed, jobs)
    swf_counted(data, chunk_bytes, min(head, len(data)))


@pytest.mark.parametrize(("data", "dependencies"), [
    (job(1, 2) + job(2), 1),                        # a job after a later line's
    (job(1) + job(2, 9), 0),                        # not in the file: kept in extras
    (job(3) + job(1, 3) + job(2, 3), 2),            # out of order, one job named twice
    (job(1) + job(2, 1).replace(b"2 0", b"j2 0", 1) + job(3, 1), 2),  # a text job number
    (job(1) + job(2).replace(b" -1 -1\n", b" j1 -1\n"), 0),  # a text preceding job
    (b"; Version: 2.2\n", 0),                       # no jobs
    (job(1, 1), None),                              # after itself: a cycle, no summary
])
def test_swf_dependencies_are_the_preceding_jobs_in_the_file(data, dependencies):
    for chunk_bytes in (1, 40, 1 << 20):
        found = swf_counted(data, chunk_bytes)
        assert found.dependencies == dependencies if dependencies is not None else not found.ok


def test_swf_counts_over_many_chunks():
    for seed in range(3):
        data = plain_trace(seed, 3000).encode()
        found = swf_counted(data, 997)
        assert found.ok and found.tasks == 3000


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), tasks=st.integers(0, 40), chunk_bytes=st.integers(1, 400),
       head=st.integers(0, 300))
def test_gwf_chunks_count_what_the_whole_file_read_holds(seed, tasks, chunk_bytes, head):
    data = tangled_workflow(seed, tasks).encode()
    gwf_counted(data, chunk_bytes, min(head, len(data)))


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10_000), tasks=st.integers(0, 25),
       edits=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from((*TOKENS, "\n", "#"))),
                      max_size=2),
       archive=st.booleans(), chunk_bytes=st.integers(1, 400))
def test_gwf_counts_of_mutated_files(seed, tasks, edits, archive, chunk_bytes):
    text = archive_text(seed, tasks) if archive else workflow_text(seed, tasks)
    gwf_counted(mutated(text, edits), chunk_bytes)


@pytest.mark.parametrize(("lines", "dependencies"), [
    ([HEADER, workflow_task(1), workflow_task(2, "1 1")], 2),     # one task named twice
    ([HEADER, workflow_task(1, "2"), workflow_task(2)], 1),       # a task on a later line
    ([HEADER, "0, 1, 0, 1, 1, 1, ", "0, 2, 0, 1, 1, 1, -1"], None),  # not an id: an error
    ([HEADER, workflow_task(1), workflow_task(2, "9")], None),    # not in the file: an error
    (["# only a comment"], 0),
])
def test_gwf_dependencies_as_the_whole_file_reader_keeps_them(lines, dependencies):
    data = ("\n".join(lines) + "\n").encode()
    for chunk_bytes in (1, 30, 1 << 20):
        found = gwf_counted(data, chunk_bytes)
        if dependencies is not None:
            assert found.ok and found.dependencies == dependencies


def test_gwf_counts_over_many_clean_chunks():
    for seed in range(3):
        for data in (workflow_text(seed, 2000).encode(), archive_text(seed, 1500).encode()):
            assert gwf_counted(data, 997).ok


# ----------------------------------------------------------------------------- dcx info


def _lowered(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """An in-memory limit of ``limit`` bytes: a file above it is refused when read whole."""
    lowered = dataclasses.replace(limits.LIMITS, max_input_bytes=limit)
    monkeypatch.setattr(limits, "LIMITS", lowered)
    monkeypatch.setattr(inputs, "LIMITS", lowered)


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


def _info(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["info", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _traces(folder: Path) -> list[Path]:
    gwf_file = folder / "w.gwf"
    gwf_file.write_bytes(workflow_text(3, 900).encode())
    swf_file = folder / "t.swf"
    swf_file.write_bytes(plain_trace(4, 1200).encode())
    warned = folder / "warned.swf"
    warned.write_bytes(plain_trace(5, 600).encode() + job(601) + job(602, 601) + job(603, 9999))
    invalid = folder / "bad.gwf"
    invalid.write_bytes(("\n".join([HEADER] + [workflow_task(t, str(t - 1) if t > 1 else "")
                                               for t in range(1, 700)]
                                   + [workflow_task(5), "0, x, 0"]) + "\n").encode())
    return [swf_file, warned, gwf_file, invalid]


@pytest.mark.parametrize("output", ["text", "json"])
def test_info_on_a_large_file_says_what_the_whole_file_read_says(tmp_path, monkeypatch,
                                                                capsys, output):
    files = _traces(tmp_path)
    names = [str(path) for path in files]
    whole = _info(capsys, "--output", output, *names)
    assert whole[0] == 1  # the invalid file
    seen: list[str] = []
    real = streaming._chunked

    def spy(spec: FormatDeclaration, stream: Any, head: bytes) -> ChunkedRead:
        seen.append(spec.name)
        return real(spec, stream, head)

    with monkeypatch.context() as large:
        large.setattr(streaming, "STREAM_BYTES", min(path.stat().st_size for path in files) - 1)
        large.setattr(streaming, "_chunked", spy)
        _lowered(large, 1000)  # read whole, every file would be refused
        assert _info(capsys, "--output", output, *names) == whole
    assert seen == ["swf", "swf", "gwf", "gwf"]
    if output == "json":
        summaries = [json.loads(line) for line in whole[1].splitlines()]
        assert summaries[1]["workload"]["jobs"] == 603 and summaries[1]["warnings"] == 1
        assert summaries[2]["workload"]["tasks"] == 900
        assert not summaries[3]["valid"] and "workload" not in summaries[3]


def test_counts_a_chunked_reader_does_not_give_are_unknown(tmp_path, monkeypatch, capsys):
    trace = tmp_path / "t.swf"
    trace.write_bytes(plain_trace(4, 50).encode())
    monkeypatch.setattr(streaming, "STREAM_BYTES", 0)
    monkeypatch.setattr(streaming, "_chunked", lambda spec, stream, head: ChunkedRead((), 50))
    code, out, err = _info(capsys, str(trace))
    assert (code, err) == (0, "")
    assert "  jobs: 50\n  tasks: unknown\n  dependencies: unknown\n" in out
    code, out, _ = _info(capsys, "--output", "json", str(trace))
    assert json.loads(out)["workload"] == {"jobs": 50, "tasks": None, "dependencies": None,
                                           "annotations": 0}


def test_info_on_a_large_pipe_says_what_the_whole_read_says(tmp_path, monkeypatch, capsys):
    for path in _traces(tmp_path):
        data = path.read_bytes()
        for output in ("text", "json"):
            _stdin(monkeypatch, data)
            whole = _info(capsys, "--output", output, "-")
            with monkeypatch.context() as large:
                large.setattr(streaming, "STREAM_BYTES", 1000)
                _lowered(large, 1500)
                _stdin(large, data)
                assert _info(capsys, "--output", output, "-") == whole
            assert "<stdin>" in whole[1]


# ----------------------------------------------------------------------------- Parquet pipes


def _parquet_traces() -> list[bytes]:
    """Valid and invalid tables, in row groups of a few rows."""
    return [written(trace_table(seed, 60), 7) for seed in range(12)]


@pytest.mark.parametrize("command", ["info", "validate"])
def test_a_large_parquet_pipe_is_spooled_and_read_by_row_groups(tmp_path, monkeypatch, capsys,
                                                                 command):
    from dcx.converters import partitions

    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spool))
    parted: list[str] = []
    real = partitions.read_parts

    def spy(path: str, spec: FormatDeclaration, client: Any = None) -> ChunkedRead:
        parted.append(path)
        assert Path(path).parent == spool
        return real(path, spec, client)

    monkeypatch.setattr(partitions, "read_parts", spy)
    outcomes = set()
    for data in _parquet_traces():
        for output in ("text", "json"):
            _stdin(monkeypatch, data)
            whole = main([command, "--output", output, "-"]), capsys.readouterr()
            assert not parted
            with monkeypatch.context() as large:
                large.setattr(streaming, "STREAM_BYTES", 100)
                _lowered(large, 200)  # read whole, every table would be refused
                _stdin(large, data)
                assert (main([command, "--output", output, "-"]), capsys.readouterr()) == whole
            assert len(parted) == 1 and not list(spool.iterdir())
            parted.clear()
            outcomes.add(whole[0])
            if whole[0] and output == "text":
                assert whole[1].err.startswith("<stdin>:")
    assert outcomes == {0, 1}


@pytest.mark.enable_socket
def test_a_large_parquet_pipe_on_a_local_cluster(monkeypatch, capsys):
    from dcx.converters import partitions

    real = partitions.local_client
    monkeypatch.setattr(partitions, "local_client",
                        lambda workers, processes=True: real(workers, processes=False))
    data = written(trace_table(2, 50), 6)
    _stdin(monkeypatch, data)
    whole = _info(capsys, "--output", "json", "-")
    monkeypatch.setattr(streaming, "STREAM_BYTES", 100)
    _stdin(monkeypatch, data)
    assert _info(capsys, "--output", "json", "--workers", "2", "-") == whole


def test_a_large_parquet_pipe_is_refused_with_a_remote_cluster(monkeypatch, capsys):
    monkeypatch.setattr(streaming, "STREAM_BYTES", 100)
    _stdin(monkeypatch, written(trace_table(2, 50), 6))
    code, out, err = _info(capsys, "--scheduler-address", "tcp://192.0.2.1:8786", "-")
    assert code == 2 and not out
    assert err.splitlines() == ["dcx: error: <stdin>: a parquet pipe is read from a temporary "
                                "file on this machine, which the workers of "
                                "--scheduler-address may not see; give a file path they share"]


def test_a_damaged_parquet_pipe_says_what_the_whole_read_says(monkeypatch, capsys):
    data = written(trace_table(3, 60), 7)
    # cut short, and a row group's bytes overwritten (not the footer: the two reads word
    # pyarrow's complaint about a damaged footer differently)
    for damaged in (data[:-40], data[:40] + b"\xff" * 64 + data[104:]):
        _stdin(monkeypatch, damaged)
        whole = _info(capsys, "-")
        with monkeypatch.context() as large:
            large.setattr(streaming, "STREAM_BYTES", 100)
            _stdin(large, damaged)
            assert _info(capsys, "-") == whole
        assert whole[0] == 1 and whole[2].startswith("<stdin>:")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_large_parquet_fifo_is_named_by_its_path(tmp_path, monkeypatch, capsys):
    data = written(trace_table(4, 60), 7)
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as writer:
            writer.write(data)

    outputs = []
    for stream_bytes in (1 << 30, 100):
        monkeypatch.setattr(streaming, "STREAM_BYTES", stream_bytes)
        writer = threading.Thread(target=feed)
        writer.start()
        outputs.append(_info(capsys, "--output", "json", str(fifo)))
        writer.join()
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0][1])["path"] == str(fifo)


def test_a_parquet_pipe_that_cannot_be_spooled_is_a_usage_error(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "gone"
    monkeypatch.setattr("tempfile.tempdir", str(missing))
    monkeypatch.setattr(streaming, "STREAM_BYTES", 100)
    _stdin(monkeypatch, written(trace_table(2, 50), 6))
    code, out, err = _info(capsys, "-")
    assert code == 2 and not out
    assert err.splitlines() == [f"dcx: error: <stdin>: cannot copy the parquet pipe to a "
                                f"temporary file in {missing} (TMPDIR): No such file or "
                                "directory"]
