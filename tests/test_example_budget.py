"""The hypothesis example budget (``DCX_HYPOTHESIS``, ``tests/conftest.py``) reaches the
property tests: a property asking for 80 examples runs 20 under ``lean`` (the same 20 each
run), 80 under ``full``, 320 under ``thorough``, parametrized or not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

COUNTED = '''
import os
import pytest
from hypothesis import given, settings, strategies as st

def record(name):
    with open(os.environ["COUNTS"], "a") as stream:
        stream.write(name + "\\n")

@settings(max_examples=80, database=None, deadline=None)
@given(st.integers())
def test_plain(number):
    record("plain")
    record(f"plain={number}")

@pytest.mark.parametrize("twin", ["a", "b"])
@given(number=st.integers())
@settings(max_examples=80, database=None, deadline=None)
def test_twins(twin, number):
    record(twin)
'''


def recorded(tmp_path: Path, budget: str) -> list[str]:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "test_counted.py").write_text(COUNTED, encoding="utf-8")
    record = tmp_path / f"counts-{budget}.txt"
    environment = {**os.environ, "DCX_HYPOTHESIS": budget, "COUNTS": str(record),
                   "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "-p", "no:xdist", str(tmp_path / "test_counted.py")],
        capture_output=True, text=True, cwd=tmp_path, env=environment, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return record.read_text(encoding="utf-8").split()


def counts(tmp_path: Path, budget: str) -> dict[str, int]:
    names = recorded(tmp_path, budget)
    return {name: names.count(name) for name in ("plain", "a", "b")}


@pytest.mark.parametrize(("budget", "runs"), [("lean", 20), ("full", 80), ("thorough", 320)])
def test_the_example_budget_reaches_hypothesis(tmp_path: Path, budget: str, runs: int) -> None:
    assert counts(tmp_path, budget) == {"plain": runs, "a": runs, "b": runs}


def test_the_lean_budget_tries_the_same_examples_each_run(tmp_path: Path) -> None:
    first, second = (recorded(tmp_path / name, "lean") for name in ("first", "second"))
    assert first == second and len(set(first)) > 10


def test_an_unknown_budget_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
         str(tmp_path / "test_nothing.py")],
        capture_output=True, text=True, cwd=tmp_path, check=False,
        env={**os.environ, "DCX_HYPOTHESIS": "huge", "PYTHONPATH": str(REPO)})
    assert done.returncode == 4 and "DCX_HYPOTHESIS='huge'" in done.stderr
