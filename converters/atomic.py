"""Writing outputs the way Unix tools do.

A regular file (or a symlink to one, or a name that does not exist yet) is written whole or
not at all: a temporary file in the target's folder, flushed and synced, then renamed over
the target. The rename would replace anything else too, so a device, FIFO or socket, or a
symlink to one (``/dev/stdout`` is a symlink to ``/proc/self/fd/1``), is opened and written
directly instead: replacing ``/dev/stdout`` as root would turn it into a regular file.
``-`` is standard output.

Permissions: a new file gets ``0666 & ~umask`` like ``open(…, "w")``, not ``mkstemp``'s 0600;
a replaced file keeps its mode, and its owner and group where the process may set them.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

STDOUT = "-"

_DESCRIPTOR_NAMES = {"/dev/stdout": 1, "/dev/stderr": 2}
_DESCRIPTOR_PATH = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")


def open_descriptor(path: str) -> int | None:
    """The descriptor that ``path``, or a symlink on the way from it, names: ``/dev/stdout``,
    ``/dev/fd/3``, ``/proc/self/fd/1``. Such a name is written through the descriptor the
    process already has: reopening it would truncate a file the shell opened for appending,
    and replacing it would replace the symlink (or, through /proc, the shell's file)."""
    for _ in range(40):  # the kernel's own limit on symlink hops
        if path in _DESCRIPTOR_NAMES:
            return _DESCRIPTOR_NAMES[path]
        match = _DESCRIPTOR_PATH.fullmatch(path)
        if match:
            return int(match.group(1))
        try:
            link = os.readlink(path)
        except OSError:  # not a symlink, or nothing there
            return None
        path = os.path.normpath(os.path.join(os.path.dirname(path), link))
    return None


def current_umask() -> int:
    """The process umask. Linux shows it in /proc without changing it; elsewhere it can
    only be read by setting it, which is safe here because the CLI is single-threaded."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def is_special(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (after following symlinks) is something other than a regular file
    that exists: a character or block device, a FIFO or a socket."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def write_output(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path``: ``-`` is stdout, special files are written in place,
    regular files are replaced atomically."""
    name = os.fspath(path)
    descriptor = 1 if name == STDOUT else open_descriptor(name)
    if descriptor is not None:
        sys.stdout.flush()
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view):]
        return
    if is_special(path):
        # O_TRUNC is ignored by devices and FIFOs; no O_CREAT: the thing exists.
        with open(os.open(path, os.O_WRONLY | os.O_TRUNC), "wb") as stream:
            stream.write(data)
        return
    write_atomic(path, data)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace the regular file ``path`` (created when missing) with ``data`` atomically.
    A symlink to a regular file stays a symlink: its target is replaced."""
    with temporary_beside(path) as temporary, open(temporary, "wb") as stream:
        stream.write(data)


@contextlib.contextmanager
def temporary_beside(path: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary file beside the regular file ``path`` for an output written in parts:
    the caller writes it (by name) and, when the ``with`` block ends without an exception,
    it replaces ``path`` atomically as ``write_atomic`` would; otherwise it is removed."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        existing: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        existing = None
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                         dir=target.parent)
    os.close(handle)
    try:
        yield temporary
        with open(temporary, "rb+") as stream:
            _copy_permissions(stream.fileno(), existing)
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _copy_permissions(descriptor: int, existing: os.stat_result | None) -> None:
    if existing is None:
        os.fchmod(descriptor, 0o666 & ~current_umask())
        return
    own = os.fstat(descriptor)
    if (own.st_uid, own.st_gid) != (existing.st_uid, existing.st_gid):
        try:  # root may give the file back to its owner; others may change the group only
            os.fchown(descriptor, existing.st_uid, existing.st_gid)
        except PermissionError:
            # if not even the group can be kept, the file becomes ours, as with any editor
            # that saves by rename
            with contextlib.suppress(PermissionError):
                os.fchown(descriptor, -1, existing.st_gid)
    # after chown: chown clears the set-id bits
    os.fchmod(descriptor, stat.S_IMODE(existing.st_mode))
