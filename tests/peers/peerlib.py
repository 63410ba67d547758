"""What the peer scripts of this folder share: the peer contract's command line, pip installs,
reading a file the way dcx reads it, and the verdict line.

The contract (``tests/peers/run.py`` relies on it):

* ``python peer_NAME.py --install`` installs what the peer needs and exits 0, or prints one
  line saying why it cannot and exits 3;
* ``python peer_NAME.py FILE...`` checks each file and prints, as the last line of stdout,
  ``{"peer", "version", "checked", "accepted", "failures": [{"path", "reason"}]}``; exit 0
  when every file is accepted, 1 otherwise, 3 when the peer is unavailable.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from dcx.converters.registry import get
from dcx.core.diagnostics import has_errors
from dcx.core.model import Document

EXIT_ACCEPTED, EXIT_DISAGREED, EXIT_UNAVAILABLE = 0, 1, 3
PIP_TIMEOUT_S = 900


@dataclass(frozen=True)
class Peer:
    """One peer: its name, the pip requirements it needs (``name==version``), how to check
    one file (``None`` when the peer accepts it and agrees with dcx, else the reason), and
    the version of the peer's software actually installed (``None`` when it is not)."""

    name: str
    requirements: tuple[str, ...]
    check: Callable[[str], str | None]
    version: Callable[[], str | None]
    install: Callable[[], str | None] | None = None
    """Installs what pip cannot; ``None`` when done, else why it cannot."""


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def pip_install(requirements: Sequence[str]) -> str | None:
    """Installs the pinned requirements not installed yet into this interpreter; ``None``
    when all are there, else pip's last line of complaint."""
    missing = [req for req in requirements
               if installed_version(req.partition("==")[0]) != req.partition("==")[2]]
    if not missing:
        return None
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing],
                              capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"pip install {' '.join(missing)} took more than {PIP_TIMEOUT_S} s"
    if done.returncode != 0:
        complaint = [line for line in done.stderr.splitlines()
                     if line.strip() and not line.startswith("WARNING")]
        return f"pip install {' '.join(missing)} failed: " + (complaint[-1] if complaint
                                                               else f"exit {done.returncode}")
    return None


def read_with_dcx(path: str, format_name: str) -> Document:
    """The document dcx reads from ``path`` as ``format_name``; ``ValueError`` naming the
    first error when dcx does not accept it."""
    with open(path, "rb") as stream:
        result = get(format_name).read(stream.read())
    if result.document is None or has_errors(result.diagnostics):
        first = next((d for d in result.diagnostics if d.is_error), None)
        raise ValueError(f"dcx does not read it: {first.render() if first else 'no document'}")
    return result.document


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Sends what a peer library prints to stderr: the verdict must be stdout's last line."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def check_files(peer: Peer, paths: Sequence[str]) -> list[dict[str, str]]:
    """``{"path", "reason"}`` for each file the peer rejects or reads otherwise than dcx."""
    failures = []
    for path in paths:
        try:
            with quiet_stdout():
                reason = peer.check(path)
        except Exception as exc:  # the peer's own software rejecting the file
            reason = f"{type(exc).__name__}: {exc}"
        if reason is not None:
            failures.append({"path": path, "reason": reason})
    return failures


def main(peer: Peer, argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--install"]:
        reason = pip_install(peer.requirements) if peer.requirements else None
        if reason is None and peer.install is not None:
            reason = peer.install()
        if reason is not None:
            print(f"cannot install: {reason}")
            return EXIT_UNAVAILABLE
        print(f"{peer.name}: installed ({peer.name} {peer.version()})")
        return EXIT_ACCEPTED
    if not args or any(arg.startswith("-") for arg in args):
        print(f"usage: peer_{peer.name}.py --install | FILE...", file=sys.stderr)
        return 2
    if peer.version() is None:
        print("unavailable: not installed (run with --install first)")
        return EXIT_UNAVAILABLE
    failures = check_files(peer, args)
    for failure in failures:
        print(f"{failure['path']}: {failure['reason']}", file=sys.stderr)
    print(json.dumps({"peer": peer.name, "version": peer.version(), "checked": len(args),
                      "accepted": len(args) - len(failures), "failures": failures}))
    return EXIT_DISAGREED if failures else EXIT_ACCEPTED
