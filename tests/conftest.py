"""Shared fixtures: the shared corpus (skipped when absent), ``dcx convert --losses`` on a
small file, a socket-free suite, and every diagnostic code a test makes checked against the
declared catalogue."""

from __future__ import annotations

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
    from dcx.converters.cli import main

    monkeypatch.chdir(tmp_path)

    def run(text: str, target: str) -> dict[str, str]:
        Path("in.json").write_text(text, encoding="utf-8")
        assert main(["convert", "in.json", "out", "--to", target, "--losses"]) == 0
        listed = re.findall(r"^  (\S+): .*?\(first: ([^)]*)\)", capsys.readouterr().err, re.M)
        return dict(listed)

    return run


def pytest_configure(config: pytest.Config) -> None:
    diagnostics.on_diagnostic = _RECORDER
    # No test may touch the network; the few that serve on loopback re-enable it.
    try:
        from pytest_socket import disable_socket
    except ImportError:  # pragma: no cover - the test extra installs it
        return
    disable_socket(allow_unix_socket=True)


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
            from dcx.converters.catalogue import catalogue

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
        pytest.fail(f"diagnostic codes not in the catalogue (dcx.converters.catalogue): "
                    f"{listed}", pytrace=False)
    return result


# ------------------------------------------------------------------ corpus skips


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many tests skipped for want of the shared corpus, counted from this run (README
    points here rather than quoting a number that goes stale)."""
    skipped = terminalreporter.stats.get("skipped", [])
    absent = sum("corpus" in _skip_reason(report).lower() for report in skipped)
    if absent:
        terminalreporter.write_line(
            f"{absent} skipped for want of the shared corpus at {CORPUS} (set DCX_CORPUS; "
            "pytest -ra lists them)")


def _skip_reason(report: Any) -> str:
    longrepr = getattr(report, "longrepr", None)
    return str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
