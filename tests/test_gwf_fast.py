"""GWF's vectorised accept path against the exact (line by line) path: its token rules are
the exact reader's (``rules.py``); whenever it answers, it gives the exact path's document,
diagnostics and source map; it answers for plain files of both variants; and ``read`` gives
what the exact path gives, diagnostics byte for byte, for every generated input."""

from __future__ import annotations

import random
import re

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.columns import columns_of
from dcx.core.model import TaskStatus, Workload
from dcx.formats import gwf
from dcx.formats.gwf import codec, fast
from dcx.formats.gwf.rules import FAST_TOKENS, accepts, read_token

HEADER = "WorkflowID, JobID     , SubmitTime, RunTime   , NProcs    , ReqNProcs , Dependencies"
TOKENS = ("-1", "0", "1", "2", "7", "007", "12", "3600", "1.5", "0.25", "5.", ".5", "10.0",
          "-0", "-01", "-2", "-1.0", "+3", "1e3", "abc", "u7", "1.2.3", ".", "-", "nan",
          "9" * 16, "9" * 15, "12345678901234567890", "\u00a0", "1;2", "#", "")
BLANKS = (" ", "  ", "\t", " \t ", "\r")


def agree(data: bytes, chunk_bytes: int = 1 << 20) -> Workload | None:
    """The fast answer (if any) equals the exact one, and ``read`` with the fast path
    tried first gives the exact diagnostics byte for byte; returns the fast answer's
    workload."""
    exact = codec._read(data)
    quick = fast.read_fast(data, chunk_bytes)
    quick_workload: Workload | None = None
    if quick is not None:
        assert exact.diagnostics == ()
        assert quick.diagnostics == ()
        assert quick.document == exact.document
        assert exact.document is not None and quick.document is not None
        assert exact.document.workload is not None and quick.document.workload is not None
        quick_workload = quick.document.workload
        assert quick_workload.jobs == exact.document.workload.jobs
        assert dict(quick.source_map) == exact.source_map
    original = codec.FAST_READ_BYTES
    codec.FAST_READ_BYTES = 0
    try:
        read = gwf.read(data)
    finally:
        codec.FAST_READ_BYTES = original
    assert read.document == exact.document
    assert [repr(d) for d in read.diagnostics] == [repr(d) for d in exact.diagnostics]
    return quick_workload


# --------------------------------------------------------------------------- rules


@settings(max_examples=400, deadline=None)
@given(token=st.one_of(st.sampled_from(TOKENS),
                       st.text(alphabet="0123456789.- \u0661", min_size=0, max_size=18)),
       rule=st.sampled_from(("id", "time", "measure", "processors", "code", "token")))
def test_a_fast_token_is_one_the_exact_rule_reads_to_the_same_value(token, rule):
    matched = re.fullmatch(FAST_TOKENS[rule], token) is not None
    assert fast.fast_tokens(pa.array([token]), rule) == matched  # the vectorised test
    if not matched:
        return
    exact_value, accepted = read_token(rule, token)
    if rule == "token":
        assert accepted and exact_value == token
        return
    integers = rule in ("id", "processors", "code")
    value = pc.cast(pa.array([token]), pa.int64() if integers else pa.float64()).to_numpy()[0]
    if bool(accepts(rule, value)):
        assert accepted
        assert exact_value == value
    else:
        assert not accepted


# --------------------------------------------------------------------------- workflow


def workflow_line(rng: random.Random, workflow: int, task: int, earlier: list[int]) -> str:
    dependencies = rng.sample(earlier, min(len(earlier), rng.choice((0, 0, 1, 2, 3))))
    values = [str(workflow), str(task), rng.choice(("0", "16", "40", "7.5")),
              rng.choice(("-1", "0", "11", "1452", "0.25")), rng.choice(("1", "4", "-1")),
              rng.choice(("1", "4", "8")), " ".join(map(str, dependencies))]
    if rng.random() < 0.5:
        return ", ".join(f"{value:<10}" for value in values)
    return ",".join(values) + rng.choice(("", "\r"))


def workflow_text(seed: int, tasks: int) -> str:
    rng = random.Random(seed)
    lines = [rng.choice(("", "# a comment")), HEADER] if seed % 3 == 0 else [HEADER]
    earlier: list[int] = []
    workflow = 0
    for task in range(1, tasks + 1):
        if rng.random() < 0.3:
            workflow = rng.randrange(0, workflow + 2)
        lines.append(workflow_line(rng, workflow, task, earlier))
        earlier.append(task)
        if rng.random() < 0.05:
            lines.append("")
    return "\n".join(lines) + "\n"


def test_plain_workflow_files_take_the_fast_path_and_match_the_exact_one():
    for seed in range(6):
        fast_answer = agree(workflow_text(seed, 300).encode())
        assert fast_answer is not None
        assert columns_of(fast_answer) is not None


def test_the_workflow_path_holds_jobs_in_first_appearance_order_and_extras():
    data = (HEADER + "\n5, 1, 0, 10, -1, 4, \n2, 2, 0, -1, 2, 4, 1\n5, 3, 1.5, 2, 1, 1, 1 2\n"
            ).encode()
    answer = agree(data)
    assert answer is not None
    jobs = answer.jobs
    assert [job.id for job in jobs] == [5, 2]
    assert [task.id for task in jobs[0].tasks] == [1, 3]
    first, third = jobs[0].tasks
    assert first.extras == {"gwf:NProcs": -1} and first.request.cores == 4.0
    assert third.dependencies == (1, 2) and third.submit_time_s == 1.5
    assert jobs[1].tasks[0].extras == {"gwf:ReqNProcs": 4} and jobs[1].tasks[0].runtime_s is None


def test_the_workflow_path_defers_on_what_the_exact_path_reports():
    lines = workflow_text(1, 20).splitlines()
    cases = {
        "no header": lines[1:],
        "duplicate": [*lines, lines[1]],
        "unknown dependency": [*lines, "0, 99, 0, 1, 1, 1, 12345"],
        "cycle": [*lines, "0, 98, 0, 1, 1, 1, 97", "0, 97, 0, 1, 1, 1, 98"],
        "field count": [*lines, "0, 99, 0, 1"],
        "extra field": [*lines, "0, 99, 0, 1, 1, 1, , 7"],
        "text id": [*lines, "w, 99, 0, 1, 1, 1, "],
        "no processors": [*lines, "0, 99, 0, 1, -1, -1, "],
        "zero processors": [*lines, "0, 99, 0, 1, 0, 1, "],
        "negative runtime": [*lines, "0, 99, 0, -2, 1, 1, "],
        "comment": [*lines, "# late comment"],
        "blank line": [*lines, "   "],
        "only a header": lines[:1],
    }
    for name, case in cases.items():
        data = ("\n".join(case) + "\n").encode()
        assert fast.read_fast(data) is None, name
        agree(data)


def test_a_dependency_on_a_later_line_is_checked_and_accepted():
    data = (HEADER + "\n0, 1, 0, 1, 1, 1, 2\n0, 2, 0, 1, 1, 1, \n").encode()
    answer = agree(data)
    assert answer is not None
    assert answer.jobs[0].tasks[0].dependencies == (2,)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), tasks=st.integers(0, 25),
       edits=st.lists(st.tuples(st.integers(0, 10_000),
                                st.sampled_from(TOKENS + BLANKS + ("\n", ",", "#"))),
                      max_size=3))
def test_mutated_workflow_files_agree_with_the_exact_path(seed, tasks, edits):
    """Valid files with tokens replaced or inserted at random places (bad lines): either
    the fast path defers or it gives exactly what the exact path gives."""
    text = workflow_text(seed, tasks)
    for position, replacement in edits:
        at = position % (len(text) + 1)
        cut = at + (len(replacement) if position % 3 == 0 else 0)
        text = text[:at] + replacement + text[cut:]
    agree(text.encode())


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.lists(st.sampled_from(TOKENS[:20]), min_size=6, max_size=6),
                     max_size=6),
       dependencies=st.lists(st.lists(st.sampled_from(("1", "2", "3", "x", "-1", "")),
                                      max_size=3), min_size=6, max_size=6),
       blank=st.sampled_from(BLANKS))
def test_generated_workflow_lines_agree_with_the_exact_path(rows, dependencies, blank):
    lines = [HEADER] + [",".join([*row, blank.join(needs)])
                        for row, needs in zip(rows, dependencies, strict=False)]
    agree(("\n".join(lines) + "\n").encode())


# --------------------------------------------------------------------------- archive


def seconds_text(seconds: float) -> str:
    return str(int(seconds)) if seconds.is_integer() else str(seconds)


def archive_text(seed: int, jobs: int) -> str:
    rng = random.Random(seed)
    lines = ["# " + " ".join(gwf.ARCHIVE_COLUMNS), ""]
    submit = 0.0
    for job in range(1, jobs + 1):
        values = {name: "-1" for name in gwf.ARCHIVE_COLUMNS}
        submit += rng.choice((0, 5, 12.5))  # in submit-time order, as the archives'
        values.update({
            "JobID": str(job), "SubmitTime": seconds_text(submit),
            "RunTime": rng.choice(("-1", "30", "0.5")), "NProcs": rng.choice(("-1", "1", "8")),
            "ReqNProcs": rng.choice(("2", "8")), "ReqTime": rng.choice(("-1", "60")),
            "ReqMemory": rng.choice(("-1", "1024", "512.5")),
            "UserID": rng.choice(("-1", "3", "007")), "GroupID": rng.choice(("-1", "1")),
            "Status": rng.choice(("-1", "0", "1")), "WaitTime": rng.choice(("-1", "4", "2.5")),
            "JobStructure": rng.choice(("-1", "1", "007")), "VOID": rng.choice(("-1", "42")),
        })
        lines.append(rng.choice((" ", "\t", "  ")).join(values[name]
                                                       for name in gwf.ARCHIVE_COLUMNS))
    return "\n".join(lines) + "\n"


def test_plain_archive_files_take_the_fast_path_and_match_the_exact_one():
    for seed in range(4):
        data = archive_text(seed, 200).encode()
        for chunk_bytes in (100, 1 << 20):
            answer = agree(data, chunk_bytes)
            assert answer is not None
            assert columns_of(answer) is not None


def test_the_archive_path_keeps_the_columns_the_model_has_no_field_for():
    text = archive_text(7, 0) + " ".join(
        {"JobID": "4", "SubmitTime": "3", "NProcs": "2", "ReqNProcs": "8", "ReqMemory": "2048",
         "UserID": "007", "Status": "1", "WaitTime": "2.5", "JobStructure": "007"}.get(name, "-1")
        for name in gwf.ARCHIVE_COLUMNS) + "\n"
    answer = agree(text.encode())
    assert answer is not None
    task = answer.jobs[0].tasks[0]
    assert task.user == "7" and task.request.memory_mb == 4.0
    assert task.extras == {"gwf:ReqNProcs": 8, "gwf:JobStructure": "007"}
    assert (task.status, task.wait_time_s) == (TaskStatus.COMPLETED, 2.5)


@pytest.mark.parametrize("line", [
    "1 0 -1 5 0 -1" + " -1" * 23,           # NProcs 0
    "1 0 -1 5 -1 -1" + " -1" * 23,          # no processors
    "x1 0 -1 5 1 -1" + " -1" * 23,          # a text id
    "1 0 -1 5 1 -1" + " -1" * 22,           # 28 fields
    "1 0 -1 5 1 -1" + " -1" * 22 + " -2",   # a code below -1... in a token column: kept
])
def test_the_archive_path_defers_on_what_it_does_not_read_plainly(line):
    text = archive_text(3, 10) + line + "\n"
    assert fast.read_fast(text.encode()) is None
    agree(text.encode())


def test_a_repeated_archive_job_id_defers():
    text = archive_text(3, 10) + archive_text(3, 1).splitlines()[-1] + "\n"
    assert fast.read_fast(text.encode()) is None
    agree(text.encode())


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(0, 20),
       edits=st.lists(st.tuples(st.integers(0, 10_000),
                                st.sampled_from(TOKENS + BLANKS + ("\n", "#"))), max_size=3),
       chunk_bytes=st.sampled_from((64, 4096)))
def test_mutated_archive_files_agree_with_the_exact_path(seed, jobs, edits, chunk_bytes):
    text = archive_text(seed, jobs)
    for position, replacement in edits:
        at = position % (len(text) + 1)
        cut = at + (len(replacement) if position % 3 == 0 else 0)
        text = text[:at] + replacement + text[cut:]
    agree(text.encode(), chunk_bytes)
