"""Imported at start-up by every dcx process the hostile suite runs (``PYTHONPATH`` points
here). An audit hook records, and refuses, any network use and any opening of a file under
the canary folder, so the suite can assert that neither was even attempted.

The record goes to the file named by ``DCX_HOSTILE_LOG`` (one line per attempt), because the
refusal itself could be swallowed by an over-broad ``except`` in the code under test.
"""

from __future__ import annotations

import os
import sys

_LOG = os.environ.get("DCX_HOSTILE_LOG")
_CANARY_DIR = os.environ.get("DCX_HOSTILE_CANARY_DIR")
_NETWORK_EVENTS = frozenset({
    "socket.connect", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "urllib.Request",
})


def _record(kind: str, detail: object) -> None:
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as stream:
            stream.write(f"{kind}\t{detail!r}\n")


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event in _NETWORK_EVENTS:
        # Unix sockets are local IPC, not network; nothing in dcx uses them either.
        if event == "socket.connect" and args and getattr(args[0], "family", None) == 1:
            return
        _record("network", (event, args[1:] if event == "socket.connect" else args))
        raise PermissionError(f"hostile-input sandbox: {event} refused")
    if event == "open" and _CANARY_DIR and args:
        target = args[0]
        if isinstance(target, bytes):
            target = os.fsdecode(target)
        if isinstance(target, str) and os.path.abspath(target).startswith(_CANARY_DIR):
            _record("canary-open", target)
            raise PermissionError("hostile-input sandbox: canary file opened")


if _LOG:
    sys.addaudithook(_hook)
