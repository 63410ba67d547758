"""Shared fixtures: the shared corpus (skipped when absent), ``dcx convert --losses`` on a
small file, a socket-free suite, every diagnostic code a test makes checked against the
declared catalogue, and the hypothesis example budget (``DCX_HYPOTHESIS``)."""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dcx.core import diagnostics
from dcx.core.diagnostics import Diagnostic

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("DCX_CORPUS", REPO.parent / "shared" / "corpus"))


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """``../shared/corpus``; tests that need it skip when it is absent (a user's clone)."""
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS} (set DCX_CORPUS to point at it)")
    return CORPUS


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture
def first_losses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> Callable[[str, str], dict[str, str]]:
    """Runs ``dcx convert in.json OUT --to TARGET --losses`` on a text, in an empty folder:
    each listed field → where its first dropped value is (``in.json:4:3,
    /environment/…/slots/1``, or only the pointer when the reader cannot tell)."""
    from dcx.cli.main import main

    monkeypatch.chdir(tmp_path)

    def run(text: str, target: str) -> dict[str, str]:
        Path("in.json").write_text(text, encoding="utf-8")
        assert main(["convert", "in.json", "out", "--to", target, "--losses"]) == 0
        listed = re.findall(r"^  (\S+): .*?\(first: ([^)]*)\)", capsys.readouterr().err, re.M)
        return dict(listed)

    return run


def pytest_configure(config: pytest.Config) -> None:
    load_hypothesis_profile()  # before the test modules' decorators read the default
    diagnostics.on_diagnostic = _RECORDER
    # No test may touch the network; the few that serve on loopback re-enable it.
    try:
        from pytest_socket import disable_socket
    except ImportError:  # pragma: no cover - the test extra installs it
        return
    disable_socket(allow_unix_socket=True)


# ------------------------------------------------------------------ hypothesis budget

EXAMPLE_SCALES = {"lean": 0.25, "full": 1.0, "thorough": 4.0}
"""How many of the examples a property test asks for (its ``max_examples``, or hypothesis's
default) run: ``lean`` by default, so the suite runs before every commit with every property
still tried; ``thorough`` in ``nox -s fuzz``. Chosen with ``DCX_HYPOTHESIS=lean|full|thorough``."""
LEAN_FLOOR = 10
"""No property runs on fewer examples than this (or than it asks for, if fewer)."""


def load_hypothesis_profile() -> None:
    """The lean default run is derandomized: the same examples each run, so a commit's
    verdict does not depend on luck; ``full`` and ``thorough`` (``nox -s fuzz``) explore.
    Neither has a deadline."""
    from hypothesis import settings

    # no deadline: a test never asserts wall-clock time, and a loaded machine is no bug
    settings.register_profile("dcx-lean", derandomize=True, deadline=None)
    settings.register_profile("dcx-explore", derandomize=False, deadline=None)
    name, _ = example_budget()
    settings.load_profile("dcx-lean" if name == "lean" else "dcx-explore")


def example_budget() -> tuple[str, float]:
    name = os.environ.get("DCX_HYPOTHESIS", "lean")
    if name not in EXAMPLE_SCALES:
        raise pytest.UsageError(f"DCX_HYPOTHESIS={name!r}: choose one of "
                                f"{', '.join(EXAMPLE_SCALES)}")
    return name, EXAMPLE_SCALES[name]


def scaled_examples(asked: int, scale: float) -> int:
    return max(min(asked, LEAN_FLOOR), math.ceil(asked * scale))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scale_property_examples(items)


def scale_property_examples(items: list[pytest.Item]) -> None:
    """Scales each property test's ``max_examples``. Hypothesis reads a test's settings from
    the wrapper's ``_hypothesis_internal_use_settings`` when it runs (so that ``@settings``
    may come above or below ``@given``), and a profile cannot change a count the test states;
    ``test_the_example_budget_reaches_hypothesis`` fails if that ever stops holding."""
    _, scale = example_budget()
    if scale == 1.0:
        return
    from hypothesis import settings

    for item in items:
        test = getattr(item, "obj", None)
        if not getattr(test, "is_hypothesis_test", False) or hasattr(test, "dcx_examples_asked"):
            continue  # not a property, or one already scaled (a parametrized test's twin)
        current = test._hypothesis_internal_use_settings  # type: ignore[union-attr]
        test.dcx_examples_asked = current.max_examples  # type: ignore[union-attr]
        test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
            current, max_examples=scaled_examples(current.max_examples, scale))


def pytest_report_header(config: pytest.Config) -> str:
    name, scale = example_budget()
    return f"dcx: hypothesis examples {name} (x{scale:g} of what each property asks)"


# ------------------------------------------------------------------ declared codes


class CodeRecorder:
    """Every diagnostic dcx makes while a test runs; a code the catalogue does not declare
    fails that test. The catalogue imports every format, so it is loaded only once some
    test has made a diagnostic, and from then on a declared code costs one set lookup."""

    # Frames between the hook and the code that made the diagnostic: ``error()``, the
    # dataclass ``__init__`` (which runs with its module's globals) and ``replace()``.
    PLUMBING = frozenset({"dcx.core.diagnostics", "dataclasses"})

    def __init__(self) -> None:
        self.declared: frozenset[str] | None = None
        self.suspects: list[tuple[str, str]] = []
        """(code, module that made it) for codes not yet known to be declared."""

    def __call__(self, diagnostic: Diagnostic) -> None:
        if self.declared is not None and diagnostic.code in self.declared:
            return
        frame = sys._getframe(1)
        while frame.f_back is not None and frame.f_globals.get("__name__") in self.PLUMBING:
            frame = frame.f_back
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith("dcx."):  # tests may make diagnostics of their own
            self.suspects.append((diagnostic.code, module))

    def undeclared(self) -> list[tuple[str, str]]:
        if not self.suspects:
            return []
        if self.declared is None:
            from dcx.cli.catalogue import catalogue

            self.declared = frozenset(catalogue())
        found = sorted({item for item in self.suspects if item[0] not in self.declared})
        self.suspects.clear()
        return found


_RECORDER = CodeRecorder()


@pytest.fixture
def code_recorder() -> CodeRecorder:
    """The recorder the suite installs. A test takes it from here: pytest loads this file as
    ``conftest``, and ``from tests.conftest import …`` would run it again, making another."""
    return _RECORDER


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    _RECORDER.suspects.clear()  # made while collecting or by an earlier test's teardown
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    result = yield
    undeclared = _RECORDER.undeclared()
    if undeclared:
        listed = ", ".join(f"{code or '(empty code)'} from {module}"
                           for code, module in undeclared)
        pytest.fail(f"diagnostic codes not in the catalogue (dcx.cli.catalogue): "
                    f"{listed}", pytrace=False)
    return result


# ------------------------------------------------------------------ corpus skips


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many tests skipped for want of the shared corpus, counted from this run (README
    points here rather than quoting a number that goes stale)."""
    skipped = terminalreporter.stats.get("skipped", [])
    absent = sum("corpus" in _skip_reason(report).lower() for report in skipped)
    if absent and not CORPUS.is_dir():
        terminalreporter.write_line(
            f"{absent} skipped for want of the shared corpus at {CORPUS} (set DCX_CORPUS; "
            "pytest -ra lists them)")
    elif absent:
        terminalreporter.write_line(
            f"{absent} skipped for files the corpus at {CORPUS} does not have (pytest -ra "
            "lists them)")


def _skip_reason(report: Any) -> str:
    longrepr = getattr(report, "longrepr", None)
    return str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
