"""SWF's chunked reader (``dcx.formats.swf.stream``) against the whole-file reader: the same
diagnostics, byte for byte, and the same job count, whatever the chunk size (tiny chunks put
bad lines, headers, repeats and cycles across chunk boundaries); and ``dcx validate -``
streams a pipe too large for the in-memory reader."""

from __future__ import annotations

import io
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.formats import swf
from dcx.formats.swf import codec as swf_codec
from dcx.formats.swf import stream as swf_stream
from dcx.parsing.chunks import line_chunks
from tests.test_swf_fast import TOKENS, plain_line, plain_trace


def streamed(data: bytes, chunk_bytes: int, head: int = 0) -> swf_stream.ChunkedRead:
    rest = io.BytesIO(data[head:])
    assert swf.FORMAT.read_chunks is not None
    return swf.FORMAT.read_chunks(line_chunks(rest.read, data[:head], chunk_bytes))


def agree(data: bytes, chunk_bytes: int, head: int = 0) -> None:
    exact = swf_codec._read(data)
    found = streamed(data, chunk_bytes, head)
    assert found.diagnostics == exact.diagnostics
    assert [d.render() for d in found.diagnostics] == [d.render() for d in exact.diagnostics]
    assert found.ok == exact.ok
    if exact.ok:
        assert exact.document is not None and exact.document.workload is not None
        assert found.jobs == len(exact.document.workload.jobs)


def bad_trace(seed: int, jobs: int) -> bytes:
    """A trace with a little of everything the reader reports or must read line by line."""
    rng = random.Random(seed)
    calm = rng.random() < 0.35  # valid, perhaps with warnings: the job counts are compared
    lines = ["; Version: 2.2" if calm else rng.choice(
        ("; Version: 2.2", "; UnixStartTime: x", "; UnixStartTime: 5", ""))]
    numbers = list(range(1, jobs + 1))
    if rng.random() < 0.3:
        rng.shuffle(numbers)
    for row, number in enumerate(numbers):
        roll = rng.random() * (0.85 if calm else 1.0)
        if roll < 0.05 and not calm:
            number = rng.choice(numbers)  # a repeated job number
        preceding = -1
        if rng.random() < 0.15:
            preceding = rng.choice((*numbers[:row], jobs + 7) if calm else  # back, out, ahead
                                   (*numbers[:row + 1], *numbers, jobs + 7))
        line = plain_line(rng, number, preceding)
        if roll > 0.93:
            tokens = line.split()
            tokens[rng.randrange(len(tokens))] = rng.choice(TOKENS)
            line = " ".join(tokens)
        elif roll > 0.9:
            line = " ".join(line.split()[:rng.randrange(1, 18)])
        elif roll > 0.88:
            line = f"; comment among jobs {row}"
        elif roll > 0.87:
            line = line.replace(str(number), f"job{number}", 1)  # a text job number
        lines.append(line)
    text = "\n".join(lines) + rng.choice(("\n", ""))
    data = text.encode()
    if rng.random() < 0.1:
        data = b"\xef\xbb\xbf" + data
    if rng.random() < 0.05 and not calm:
        at = rng.randrange(len(data) + 1)
        data = data[:at] + b"\xff" + data[at:]
    return data


def test_plain_traces_give_the_whole_file_answer():
    for seed in range(4):
        data = plain_trace(seed, 200).encode()
        for chunk_bytes in (1, 64, 700, 1 << 20):
            agree(data, chunk_bytes)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), jobs=st.integers(0, 60), chunk_bytes=st.integers(1, 400),
       head=st.integers(0, 300))
def test_bad_traces_give_the_whole_file_diagnostics(seed, jobs, chunk_bytes, head):
    data = bad_trace(seed, jobs)
    agree(data, chunk_bytes, min(head, len(data)))


def job(number: int, preceding: int = -1, processors: int = 4, lead: str = "") -> bytes:
    return (f"{lead}{number} 0 -1 10 {processors} -1 -1 {processors} 60 -1 1 1 1 -1 -1 -1 "
            f"{preceding} -1\n").encode()


@pytest.mark.parametrize("data", [
    b"", b"\n\n", b"\xef\xbb\xbf", b"; only a header\n", b"\xff\n",
    job(1, 2) + job(2, 1),  # a cycle
    job(1, 1),  # a job after itself
    job(1, processors=0),
    job(7, lead="  ") + job(7, lead=" "),  # a repeat, located past the blanks
    b"\xef\xbb\xbf" + job(1) + b"\r\n" + job(1, lead="\t"),
])
def test_edge_cases(data):
    for chunk_bytes in (1, 8, 1 << 20):
        agree(data, chunk_bytes)


def test_too_many_errors_stop_as_the_whole_file_reader_does():
    bad = b"".join(b"%d 0 x\n" % number for number in range(1200))
    agree(bad, 500)
    agree(bad + b"\xfe\n", 500)  # the bytes after the stop must still be UTF-8


def test_ids_out_of_order_and_repeated_far_apart():
    rng = random.Random(3)
    numbers = list(range(1, 3001))
    rng.shuffle(numbers)
    numbers.append(numbers[5])
    lines = [f"{' ' * (n % 3)}{n} 0 -1 10 4 -1 -1 4 60 -1 1 1 1 -1 -1\t-1 "
             f"{numbers[0] if n == numbers[-2] else -1 if n % 7 else 99999}  -1"
             for n in numbers]  # aligned like the archives' files; some preceding jobs missing
    data = ("\n".join(lines) + "\n").encode()
    for chunk_bytes in (997, 1 << 16):
        agree(data, chunk_bytes)


def test_validate_streams_a_pipe_larger_than_the_in_memory_limit(tmp_path):
    """``dcx validate -`` on a pipe: with the in-memory limit lowered below the input's size
    the input is still validated, so it was read in chunks; a bad line is reported at the
    line the whole-file reader gives."""
    limit = 200_000
    code = (
        "import sys, dataclasses\n"
        "from dcx.core import limits\n"
        f"limits.LIMITS = dataclasses.replace(limits.LIMITS, max_input_bytes={limit})\n"
        "from dcx.cli import main as cli\nfrom dcx.converters import streaming\n"
        "streaming.STREAM_BYTES = 65536\n"
        "sys.exit(cli.main(['validate', '-']))\n")
    good = plain_trace(1, 6000).encode()
    assert len(good) > limit
    done = subprocess.run([sys.executable, "-c", code], input=good, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert b"<stdin>: valid swf (6,000 jobs" in done.stderr
    bad = good + b"6001 0 x\n"
    done = subprocess.run([sys.executable, "-c", code], input=bad, capture_output=True)
    assert done.returncode == 1
    expected = [d.at("<stdin>").render() for d in swf_codec._read(bad).diagnostics]
    assert done.stderr.decode().splitlines() == expected


def test_validate_reads_a_large_file_in_chunks(tmp_path, monkeypatch, capsys):
    """A file from ``STREAM_BYTES`` on is checked in chunks (the in-memory limit, lowered
    below its size, does not refuse it), with the whole-file reader's diagnostics, in text
    and JSON output; another format's large file is still read whole, within the limit."""
    import dataclasses
    import json

    from dcx.cli import main as cli
    from dcx.converters import inputs, streaming
    from dcx.core import limits

    lowered = dataclasses.replace(limits.LIMITS, max_input_bytes=50_000)
    monkeypatch.setattr(limits, "LIMITS", lowered)
    monkeypatch.setattr(inputs, "LIMITS", lowered)
    monkeypatch.setattr(streaming, "STREAM_BYTES", 4096)
    trace = tmp_path / "big.swf"
    data = plain_trace(2, 2000).encode() + b"2001 0 x\n; UnixStartTime: soon\n"
    trace.write_bytes(data)
    assert len(data) > 50_000
    assert cli.main(["validate", str(trace)]) == 1
    expected = [d.at(str(trace)).render() for d in swf_codec._read(data).diagnostics]
    assert capsys.readouterr().err.splitlines() == expected
    assert cli.main(["validate", "--output", "json", "--format", "swf", str(trace)]) == 1
    entry = json.loads(capsys.readouterr().out)["files"][0]
    assert entry["format"] == "swf" and not entry["valid"]
    assert len(entry["diagnostics"]) == len(expected)
    other = tmp_path / "big.dat"  # no format claims it: read whole, so the limit holds
    other.write_bytes(b"# JobID SubmitTime RunTime NProcs\n" + b"1 0 10 1\n" * 6000)
    assert cli.main(["validate", str(other)]) == 1
    assert "the limit is 50,000" in capsys.readouterr().err


def test_a_line_that_never_ends_is_refused_not_held(tmp_path, monkeypatch, capsys):
    from dcx.cli import main as cli
    from dcx.converters import streaming
    from dcx.parsing import chunks

    monkeypatch.setattr(streaming, "STREAM_BYTES", 4096)
    monkeypatch.setattr(chunks, "MAX_LINE_BYTES", 100_000)
    trace = tmp_path / "endless.swf"
    text = plain_trace(1, 100)
    trace.write_bytes(text.encode() + b"7" * 300_000)
    assert cli.main(["validate", str(trace)]) == 1
    said = capsys.readouterr().err
    line = text.count("\n") + 1
    assert f"{trace}:{line}:1: error" in said and "longer than 100,000 bytes" in said
