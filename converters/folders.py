"""Formats stored as a folder of files (``FormatDeclaration.members``): reading the folder
into the format's bytes (a tar archive of its members, ``dcx.core.members``) and writing
those bytes back as a folder.

A folder is written whole or not at all: its members go into a temporary folder beside it,
each flushed and synced, and the temporary folder is renamed into place. An existing folder
is replaced only when it holds nothing but the format's members (so ``dcx convert`` never
deletes other files): it is first renamed aside, then the new folder takes its name, then
the old one is removed; if the second rename fails, the old folder is put back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from dcx.converters.registry import FORMATS
from dcx.core.declaration import FormatDeclaration
from dcx.core.limits import LIMITS


class FolderError(Exception):
    """A folder that cannot be read or replaced (the message says why)."""


def folder_formats() -> tuple[FormatDeclaration, ...]:
    return tuple(spec for spec in FORMATS if spec.members)


def folder_format(path: str) -> FormatDeclaration | None:
    """The folder format whose files ``path`` (a folder) holds, or ``None``: a folder holding
    any member of a format is that format (a missing member is the reader's to report)."""
    if not os.path.isdir(path):
        return None
    return next((spec for spec in folder_formats()
                 if any(os.path.isfile(os.path.join(path, name))
                        for name in spec.members + spec.read_members)), None)


def member_of(path: str) -> FormatDeclaration | None:
    """The folder format that a file named like ``path`` is a member of (``tasks.parquet``)."""
    name = os.path.basename(path)
    return next((spec for spec in folder_formats() if name in spec.members), None)


def members_size(path: str, spec: FormatDeclaration) -> int:
    """The bytes of the members the folder ``path`` holds: a folder of a format read in
    parts (``FormatDeclaration.read_parts``) from ``streaming.STREAM_BYTES`` is read a part
    at a time, not packed whole."""
    return sum(os.path.getsize(os.path.join(path, name)) for name in spec.members
               if os.path.isfile(os.path.join(path, name)))


def read_folder(path: str, spec: FormatDeclaration) -> bytes:
    """The format's bytes for the folder ``path``: the members it has (one it lacks is left
    out, for the reader to report)."""
    from dcx.core.members import pack

    members: dict[str, bytes] = {}
    total = 0
    names = spec.members + spec.read_members  # an older layout's files are read too
    for name in names:
        member = os.path.join(path, name)
        if not os.path.isfile(member):
            continue
        total += os.path.getsize(member)
        if total > LIMITS.max_input_bytes:
            raise FolderError(f"{path}: its files are more than {LIMITS.max_input_bytes:,} "
                              "bytes, the input limit")
        with open(member, "rb") as stream:
            members[name] = stream.read()
    return pack(members, names)


def write_folder(path: str, data: bytes, spec: FormatDeclaration) -> None:
    """Write the folder ``path`` from the format's bytes, atomically (see the module
    docstring)."""
    from dcx.core.members import unpack

    members, why = unpack(data, spec.members)
    if members is None:
        raise FolderError(f"{path}: {why}")
    with folder_beside(path, spec) as temporary:
        for name in spec.members:
            with open(os.path.join(temporary, name), "wb") as stream:
                stream.write(members.get(name, b""))


@contextlib.contextmanager
def folder_beside(path: str, spec: FormatDeclaration) -> Iterator[str]:
    """A temporary folder beside the folder ``path`` for the caller to write ``spec``'s
    members into (by name; anything else it puts there it removes itself): when the
    ``with`` block ends without an exception, the members are synced and the folder
    replaces ``path`` (see the module docstring); otherwise it is removed. A ``path`` dcx
    may not replace is a ``FolderError`` before anything is written."""
    target = Path(os.path.realpath(path))
    if target.exists():
        if not target.is_dir():
            raise FolderError(f"{path} exists and is not a folder; {spec.name} is written "
                              "as a folder")
        foreign = sorted(entry.name for entry in target.iterdir()
                         if entry.name not in spec.members)
        if foreign:
            raise FolderError(f"{path} holds {foreign[0]}, which is no {spec.name} file: "
                              "dcx replaces only a folder holding nothing but "
                              f"{' and '.join(spec.members)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp",
                                      dir=target.parent))
    try:
        yield str(temporary)
        for name in spec.members:
            with open(temporary / name, "rb+") as stream:
                os.fsync(stream.fileno())
        os.chmod(temporary, 0o777 & ~_umask())
        _replace(temporary, target)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def _replace(new: Path, target: Path) -> None:
    if not target.exists():
        os.rename(new, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)
    try:
        os.rename(new, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    from dcx.converters.atomic import current_umask

    return current_umask()
