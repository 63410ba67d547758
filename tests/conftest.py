"""Shared fixtures: the shared corpus (skipped when absent) and a socket-free suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


def pytest_configure(config: pytest.Config) -> None:
    # No test may touch the network; the few that serve on loopback re-enable it.
    try:
        from pytest_socket import disable_socket
    except ImportError:  # pragma: no cover - the test extra installs it
        return
    disable_socket(allow_unix_socket=True)
