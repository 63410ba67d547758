"""GWF's chunked reader (``dcx.formats.gwf.stream``) against the whole-file reader: the same
diagnostics, byte for byte, and the same job count, whatever the chunk size (tiny chunks put
headers, bad lines, repeated ids, workflows, dependencies and cycles across chunk
boundaries); and ``dcx validate`` streams a GWF file or pipe too large for the in-memory
reader."""

from __future__ import annotations

import io
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.declaration import ChunkedRead
from dcx.formats import gwf
from dcx.formats.gwf import codec
from dcx.parsing.chunks import line_chunks
from tests.test_gwf_fast import BLANKS, HEADER, TOKENS, archive_text, workflow_text


def streamed(data: bytes, chunk_bytes: int, head: int = 0) -> ChunkedRead:
    rest = io.BytesIO(data[head:])
    assert gwf.FORMAT.read_chunks is not None
    return gwf.FORMAT.read_chunks(line_chunks(rest.read, data[:head], chunk_bytes))


def agree(data: bytes, chunk_bytes: int, head: int = 0) -> ChunkedRead:
    exact = codec._read(data)
    found = streamed(data, chunk_bytes, head)
    assert found.diagnostics == exact.diagnostics
    assert [d.render() for d in found.diagnostics] == [d.render() for d in exact.diagnostics]
    assert found.ok == exact.ok
    if exact.ok:
        assert exact.document is not None and exact.document.workload is not None
        assert found.jobs == len(exact.document.workload.jobs)
    return found


def mutated(text: str, edits: list[tuple[int, str]]) -> bytes:
    for position, replacement in edits:
        at = position % (len(text) + 1)
        cut = at + (len(replacement) if position % 3 == 0 else 0)
        text = text[:at] + replacement + text[cut:]
    return text.encode()


def tangled_workflow(seed: int, tasks: int) -> str:
    """A workflow file whose cross-line checks have something to say: repeated ids,
    dependencies ahead, on missing tasks and in cycles, workflows met again much later,
    text ids."""
    rng = random.Random(seed)
    lines = [HEADER] if rng.random() < 0.8 else []
    for task in range(1, tasks + 1):
        task_id: object = task if rng.random() > 0.05 else rng.randint(1, tasks)
        if rng.random() < 0.03:
            task_id = f"t{task}"
        needs = rng.sample(range(1, tasks + 3), min(tasks + 2, rng.choice((0, 0, 1, 2))))
        workflow: object = rng.choice((0, 1, 2, task // 5, "w"))
        cells = [workflow, task_id, rng.choice((0, 5, 7.5)), rng.choice((-1, 10)),
                 rng.choice((1, 4, -1)), rng.choice((1, 8)), " ".join(map(str, needs))]
        pad = rng.choice((0, 10))
        lines.append(", ".join(f"{cell!s:<{pad}}" if pad else str(cell) for cell in cells))
    return "\n".join(lines) + rng.choice(("\n", ""))


def test_plain_files_give_the_whole_file_answer():
    for seed in range(4):
        for data in (workflow_text(seed, 200).encode(), archive_text(seed, 150).encode()):
            for chunk_bytes in (1, 64, 700, 1 << 20):
                assert agree(data, chunk_bytes).ok


def test_a_workflow_met_again_in_a_later_chunk_counts_once():
    lines = [HEADER] + [f"{task % 3}, {task}, 0, 1, 1, 1, " for task in range(1, 40)]
    data = ("\n".join(lines) + "\n").encode()
    assert agree(data, 30).jobs == 3


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), tasks=st.integers(0, 40), chunk_bytes=st.integers(1, 400),
       head=st.integers(0, 300))
def test_tangled_workflows_give_the_whole_file_diagnostics(seed, tasks, chunk_bytes, head):
    data = tangled_workflow(seed, tasks).encode()
    agree(data, chunk_bytes, min(head, len(data)))


INVALID = "<an invalid byte>"


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), tasks=st.integers(0, 25),
       edits=st.lists(st.tuples(st.integers(0, 10_000),
                                st.sampled_from(TOKENS + BLANKS + ("\n", ",", "#", "\ufeff",
                                                                   INVALID))),
                      max_size=3),
       archive=st.booleans(), chunk_bytes=st.integers(1, 400))
def test_mutated_files_give_the_whole_file_diagnostics(seed, tasks, edits, archive,
                                                       chunk_bytes):
    text = archive_text(seed, tasks) if archive else workflow_text(seed, tasks)
    agree(mutated(text, edits).replace(INVALID.encode(), b"\xff"), chunk_bytes)


def workflow_task(task: int, needs: str = "", workflow: int = 0, lead: str = "") -> str:
    return f"{lead}{workflow}, {task}, 0, 10, 4, 4, {needs}"


@pytest.mark.parametrize("data", [
    b"", b"\n\n", b" \t\n", b"\xef\xbb\xbf", b"# only a comment\n", b"\xff\n",
    b"# x\n\xef\xbb\xbf\n",
    (HEADER + "\n").encode(),
    ("\ufeff" + HEADER + "\n" + workflow_task(1) + "\n").encode(),
    ("\n".join([HEADER, workflow_task(1, "2"), workflow_task(2, "1")]) + "\n").encode(),
    ("\n".join([HEADER, workflow_task(1, "1")]) + "\n").encode(),
    ("\n".join([HEADER, workflow_task(7, lead="  "), workflow_task(7, workflow=3)])).encode(),
    ("\n".join([workflow_task(1), workflow_task(2, "1 9")]) + "\n").encode(),  # no header
    ("\n".join([HEADER, workflow_task(1), "", "# late", "w, t1, 0, 1, 1, 1, 1"])).encode(),
    ("\n".join([HEADER, "0, 1, 0, 1, -1, -1, ", "0, 2, 0, 1, 1, 1, , 9"]) + "\n").encode(),
    ("\n".join([HEADER, "0, 99999999999999999999, 0, 1, 1, 1, ",
                "99999999999999999999, 2, 0, 1, 1, 1, 99999999999999999999"])).encode(),
    (archive_text(1, 5) + archive_text(1, 2).splitlines()[-1] + "\n").encode(),
    (archive_text(2, 5) + "  x7" + " -1" * 28 + "\n").encode(),
    (archive_text(2, 5) + "# late comment\n\t8" + " 1" * 28 + "\r\n").encode(),
])
def test_edge_cases(data):
    for chunk_bytes in (1, 8, 1 << 20):
        agree(data, chunk_bytes)


def test_too_many_errors_stop_as_the_whole_file_reader_does():
    bad = (HEADER + "\n" + "".join(f"0, {task}, x\n" for task in range(1200))).encode()
    agree(bad, 500)
    agree(bad + b"\xfe\n", 500)  # the bytes after the stop must still be UTF-8
    # the stop reached by the checks across lines
    many = [HEADER] + [workflow_task(task, str(10**6 + task)) for task in range(1, 1100)]
    agree(("\n".join(many) + "\n").encode(), 4096)


def test_problems_after_a_long_clean_start():
    """Chunks of clean tasks (ids going up, dependencies on earlier lines: not kept) and
    then tasks that repeat an early id, depend on early tasks, on missing ones and on later
    ones, and close cycles through early ones' ids."""
    rng = random.Random(5)
    earlier = [sorted(rng.sample(range(1, task), min(task - 1, 2))) for task in range(1, 600)]
    lines = [HEADER] + [", ".join(f"{value:<10}" for value in (
        task // 7, task, 0, 10, 4, 4, " ".join(map(str, earlier[task - 1]))))
        for task in range(1, 600)]
    lines += [workflow_task(5, "3"),                      # an early id again
              workflow_task(700, "2 701 9999", lead=" "),  # ahead and missing
              workflow_task(701, "700 12"),                # a cycle with 700
              workflow_task(702, "")]
    data = ("\n".join(lines) + "\n").encode()
    for chunk_bytes in (97, 4096, 1 << 20):
        assert not agree(data, chunk_bytes).ok
    for tail in lines[-4:]:  # each problem alone after the clean start
        agree(("\n".join([*lines[:600], tail]) + "\n").encode(), 4096)


def test_a_long_dependency_ring_across_many_chunks():
    tasks = 3000
    lines = [HEADER] + [workflow_task(task, str(task % tasks + 1), workflow=task // 50)
                        for task in range(1, tasks + 1)]
    found = agree(("\n".join(lines) + "\n").encode(), 997)
    assert not found.ok


def test_validate_streams_a_pipe_and_a_file_larger_than_the_in_memory_limit(tmp_path):
    """``dcx validate`` on a pipe and on a file: with the in-memory limit lowered below the
    input's size the input is still validated, so it was read in chunks; a bad line is
    reported where the whole-file reader puts it."""
    limit = 200_000
    code = (
        "import sys, dataclasses\n"
        "from dcx.core import limits\n"
        f"limits.LIMITS = dataclasses.replace(limits.LIMITS, max_input_bytes={limit})\n"
        "from dcx.cli import main as cli\nfrom dcx.converters import streaming\n"
        "streaming.STREAM_BYTES = 65536\n"
        "sys.exit(cli.main(['validate', *sys.argv[1:]]))\n")
    good = workflow_text(1, 6000).encode()
    assert len(good) > limit
    done = subprocess.run([sys.executable, "-c", code, "-"], input=good, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    whole = codec._read(good).document
    assert whole is not None and whole.workload is not None
    jobs = len(whole.workload.jobs)
    assert f"<stdin>: valid gwf ({jobs:,} jobs".encode() in done.stderr
    bad = good + b"0, 6001, x, 1, 1, 1, \n"
    expected = codec._read(bad).diagnostics[0]
    done = subprocess.run([sys.executable, "-c", code, "-"], input=bad, capture_output=True)
    assert done.returncode == 1
    assert f"<stdin>:{expected.line}:{expected.column}".encode() in done.stderr
    path = tmp_path / "big.gwf"
    path.write_bytes(archive_text(2, 6000).encode())
    assert path.stat().st_size > limit
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert b"valid gwf (6,000 jobs" in done.stderr
