"""SWF's vectorised accept path against the exact (line by line) path: whenever the fast path
answers, it gives the exact path's document, diagnostics and source map; it answers for
plain archive traces; and ``read`` gives what the exact path gives for every input."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.columns import WorkloadColumns, columns_of
from dcx.core.model import TaskStatus, Workload
from dcx.formats import swf
from dcx.formats.swf import codec as swf_codec

TOKENS = ("-1", "0", "1", "2", "7", "007", "12", "3600", "1.5", "0.25", "5.", ".5", "10.0",
          "-0", "-01", "-2", "-1.0", "+3", "1e3", "abc", "u7", "1.2.3", ".", "-", "nan",
          "9" * 16, "9" * 15, "12345678901234567890", "\u00a0", "1;2")
BLANKS = (" ", "  ", "\t", " \t ", "\r")


def plain_line(rng: random.Random, number: int, preceding: int, submit: int = -1) -> str:
    """An 18-field line the exact path accepts (submitted at ``submit``, or at random)."""
    submit = submit if submit >= 0 else rng.choice((0, 5, 17, 400))
    fields = [str(number), str(submit), rng.choice(("-1", "3", "8.5")),
              str(rng.choice((1, 60, 3600))), str(rng.choice((-1, 0, 1, 4, 32))),
              rng.choice(("-1", "2.25", "9")), rng.choice(("-1", "1024")),
              str(rng.choice((1, 4, 32))), str(rng.choice((-1, 60, 7200))),
              rng.choice(("-1", "2048", "512.5")), str(rng.choice((-1, 0, 1, 5))),
              rng.choice(("-1", "3", "007")), rng.choice(("-1", "1", "22")),
              str(rng.choice((-1, 2))), str(rng.choice((-1, 1))), str(rng.choice((-1, 3))),
              str(preceding), rng.choice(("-1", "10", "0.5"))]
    return (rng.choice(("", " ", "  ")) + rng.choice(BLANKS[:4]).join(fields)
            + rng.choice(("", " ", "\r")))


def plain_trace(seed: int, jobs: int, header: bool = True) -> str:
    rng = random.Random(seed)
    lines = ["; Version: 2.2", "; MaxProcs: 64", "; UnixStartTime: 1000000000",
             "; a comment", ""] if header else []
    submit = 0
    for number in range(1, jobs + 1):
        preceding = rng.randrange(1, number) if number > 1 and rng.random() < 0.2 else -1
        submit += rng.choice((0, 0, 5, 17, 400))  # in submit-time order, as the PWA's
        lines.append(plain_line(rng, number, preceding, submit))
        if rng.random() < 0.05:
            lines.append(rng.choice(("", "   ")))
    return "\n".join(lines) + "\n"


def agree(data: bytes, chunk_bytes: int) -> Workload | None:
    """The fast answer (if any) equals the exact one; returns the fast answer's workload."""
    exact = swf_codec._read(data)
    fast = swf.read_fast(data, chunk_bytes)
    if fast is not None:
        assert exact.diagnostics == ()
        assert fast.diagnostics == exact.diagnostics
        assert fast.document == exact.document
        assert exact.document is not None and fast.document is not None
        exact_workload, fast_workload = exact.document.workload, fast.document.workload
        assert exact_workload is not None and fast_workload is not None
        assert fast_workload.jobs == exact_workload.jobs  # the rows
        assert dict(fast.source_map) == exact.source_map
        # the same extras columns as the rows give: a writer of columns (Parquet) writes
        # the same schema whichever path read the file
        built = WorkloadColumns.from_jobs(exact_workload.jobs)
        fast_columns = columns_of(fast_workload)
        assert built is not None and fast_columns is not None
        assert sorted(fast_columns.extras) == sorted(built.extras)
    assert swf.read(data) == exact or (
        swf.read(data).document == exact.document
        and swf.read(data).diagnostics == exact.diagnostics)
    return None if fast is None or fast.document is None else fast.document.workload


def test_plain_traces_take_the_fast_path_and_match_the_exact_one():
    for seed in range(6):
        data = plain_trace(seed, 300).encode()
        for chunk_bytes in (64, 700, 1 << 20):
            fast = agree(data, chunk_bytes)
            assert fast is not None
            assert columns_of(fast) is not None


def test_fast_path_rows_carry_the_exact_values():
    data = (b"; UnixStartTime: 0\n  1  0 -1 10 4 -1 -1 8 60 2048 1 007 -1 -1 -1 -1 -1 0.5\n"
            b"2\t5\t3 20 0 2.25 -1 2 -1 -1 -1 1 2 -1 -1 -1 1 -1\r\n")
    fast = agree(data, 1 << 20)
    assert fast is not None
    first, second = (job.tasks[0] for job in fast.jobs)
    assert first.user == "007" and first.request.nodes == 4
    assert first.request.memory_mb == 2.0
    assert first.extras == {"swf:RequestedProcessors": 8}
    assert (first.status, first.think_time_s) == (TaskStatus.COMPLETED, 0.5)
    assert second.dependencies == (1,)
    assert second.extras == {"swf:AllocatedProcessors": 0}
    assert (second.wait_time_s, second.cpu_time_s, second.status) == (
        3.0, 2.25, TaskStatus.UNKNOWN)


def test_the_fast_path_defers_on_what_the_exact_path_reports():
    base = plain_trace(1, 20, header=False)
    lines = base.splitlines()
    cases = {
        "duplicate": [*lines, lines[0]],
        "missing preceding": [*lines, "99 0 -1 5 1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1 -1 12345 -1"],
        "field count": [*lines, "1 2 3"],
        "text id": [*lines, "x" + lines[0]],
        "no processors": [*lines, "30 0 -1 5 0 -1 -1 -1" + " -1" * 10],
        "forward preceding": [lines[0].rsplit(" ", 2)[0].rstrip() + " 2 -1", *lines[1:]],
        "bad start time": ["; UnixStartTime: soon", *lines],
    }
    for name, case in cases.items():
        data = ("\n".join(case) + "\n").encode()
        assert swf.read_fast(data, 256) is None, name
        agree(data, 256)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(0, 30),
       edits=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(TOKENS + BLANKS
                                                                        + ("\n", ";", ""))),
                      max_size=3),
       chunk_bytes=st.sampled_from((32, 100, 4096)))
def test_mutated_traces_agree_with_the_exact_path(seed, jobs, edits, chunk_bytes):
    """A plain trace with tokens replaced or inserted at random places: either the fast
    path defers or it gives exactly what the exact path gives."""
    text = plain_trace(seed, jobs, header=seed % 2 == 0)
    for position, replacement in edits:
        at = position % (len(text) + 1)
        cut = at + (len(replacement) if position % 3 == 0 else 0)
        text = text[:at] + replacement + text[cut:]
    agree(text.encode(), chunk_bytes)


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(st.lists(st.sampled_from(TOKENS), min_size=16, max_size=19),
                      max_size=8),
       blank=st.sampled_from(BLANKS))
def test_generated_token_lines_agree_with_the_exact_path(lines, blank):
    text = "\n".join(blank.join(tokens) for tokens in lines) + "\n"
    agree(text.encode(), 64)


def integer_trace(seed: int, jobs: int, blank: str = " ") -> str:
    """A plain trace without decimal points (what dcx and the archives' generators write):
    every field Arrow reads as an integer, with ``blank`` between fields."""
    return "".join(blank.join(line.split()) + "\n"
                   for line in plain_trace(seed, jobs, header=False).replace(".", "").splitlines()
                   if line.strip())


def test_integer_traces_take_the_fast_path_as_written_or_squeezed():
    for seed in range(4):
        for blank in (" ", "  ", "\t"):
            data = integer_trace(seed, 200, blank).encode()
            for chunk_bytes in (64, 1 << 20):
                fast = agree(data, chunk_bytes)
                assert fast is not None, (seed, blank)
                assert columns_of(fast) is not None


def test_integer_lines_with_a_token_arrow_reads_but_the_exact_path_may_not_defer():
    """Arrow's integers accept ``-0``, ``-01``, leading zeros and any ``-digits``; a text
    field keeps what it is given: each of these lines defers or agrees."""
    line = ("1000 5 -1 10 4 -1 -1 8 60 2048 1 7 2" + " -1" * 5).split(" ")
    good = integer_trace(2, 30)
    for column, token in ((1, "-0"), (2, "-01"), (2, "-00"), (4, "-2"), (11, "-0"),
                          (11, "1-2"), (11, "-"), (11, "--1"), (12, "-11"), (11, ""),
                          (0, "12345678901234567890"), (0, "9" * 16), (3, "0" * 20 + "5"),
                          (11, "0" * 16 + "7"), (16, "-1-"), (5, "1-")):
        tokens = list(line)
        tokens[column] = token
        for text in (good + " ".join(tokens) + "\n", " ".join(tokens) + "\n" + good):
            agree(text.encode(), 1 << 20)
    assert agree((good + " ".join(line) + "\n").encode(), 1 << 20) is not None
    missing_and_doubled = " ".join(line[:11]) + "  " + " ".join(line[12:-1]) + "\n"
    assert swf.read_fast((good + missing_and_doubled).encode()) is None
    agree((good + missing_and_doubled).encode(), 1 << 20)


def test_a_trace_holding_no_processor_extras_has_no_columns_for_them():
    data = (b"; MaxProcs: 4\n1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 1 -1 -1\n"
            b"2 5 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 1 1 -1 -1\n")
    fast = agree(data, 1 << 20)
    assert fast is not None
    columns = columns_of(fast)
    assert columns is not None
    assert sorted(columns.extras) == []
    assert columns.queue is not None and columns.partition is not None
    assert columns.status is not None and columns.application is None
