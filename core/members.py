"""Formats stored as a folder of several files (OpenDC's ``tasks.parquet`` and
``fragments.parquet``): their members held as one byte string, so every layer that passes a
format's bytes around (conversion, read-back checks, tests, stdin and stdout) handles them
as it handles a single file.

The byte form is an uncompressed POSIX tar archive of the members, in declaration order,
with fixed metadata (mode 0644, owner 0, time 0) so the same members always give the same
bytes. ``tar -C folder -cf - tasks.parquet fragments.parquet | dcx validate -`` reads a
folder from a pipe, and ``dcx convert in.swf - --to opendc-workload | tar -x`` writes one.
The format module reads and writes the mapping (``unpack``/``pack``), never the file system;
``dcx.converters.folders`` turns a folder into these bytes and back.

``tarfile`` is imported by the functions that use it: the pre-commit hook imports every
format's declaration, and through it this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import BinaryIO

_BLOCK = 512
_MAGIC_AT = 257


def pack(members: Mapping[str, bytes], order: Sequence[str]) -> bytes:
    """The tar bytes of ``members`` (name → content), in ``order``."""
    import io

    sink = io.BytesIO()
    pack_streams(sink, {name: (len(content), io.BytesIO(content))
                        for name, content in members.items()}, order)
    return sink.getvalue()


def pack_streams(sink: BinaryIO, members: Mapping[str, tuple[int, BinaryIO]],
                 order: Sequence[str]) -> None:
    """Write to ``sink`` the tar bytes ``pack`` gives for ``members`` (name → size and an
    open stream of that many bytes), copying each stream a buffer at a time: members too
    large to hold go out as they are read."""
    import tarfile

    with tarfile.open(fileobj=sink, mode="w|", format=tarfile.USTAR_FORMAT) as archive:
        for name in order:
            if name not in members:
                continue
            size, content = members[name]
            info = tarfile.TarInfo(name)
            info.size = size
            info.mode = 0o644
            info.mtime = 0
            archive.addfile(info, content)


def unpack(data: bytes, names: Sequence[str]) -> tuple[dict[str, bytes] | None, str]:
    """The members of tar bytes named in ``names`` (at the top level, ``./`` allowed), or
    ``None`` and why the bytes are not such an archive. Other entries (folders, files the
    format does not read) are ignored, as the program reading the folder ignores them."""
    import io
    import tarfile

    found: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for info in archive:
                name = info.name[2:] if info.name.startswith("./") else info.name
                if name not in names:
                    continue
                if not info.isreg():
                    return None, f"{name} is not a regular file in the archive"
                stream = archive.extractfile(info)
                if stream is None:
                    return None, f"{name} cannot be read from the archive"
                found[name] = stream.read()
    except (tarfile.TarError, OSError, ValueError, EOFError) as exc:
        return None, f"not a tar archive of the folder's files ({exc})"
    return found, ""


def sniff(data: bytes, names: Sequence[str]) -> bool:
    """Whether ``data`` starts as a tar archive whose first file is one of ``names`` (looks
    at the headers in the first 64 KB only)."""
    offset = 0
    while offset + _BLOCK <= min(len(data), 1 << 16):
        header = data[offset:offset + _BLOCK]
        if header[_MAGIC_AT:_MAGIC_AT + 5] != b"ustar":
            return False
        name = header[:100].split(b"\0", 1)[0].decode("utf-8", "replace")
        name = name[2:] if name.startswith("./") else name
        kind = header[156:157]
        if kind in (b"0", b"\0"):
            return name in names
        if kind not in (b"5", b"x", b"g"):  # folders and PAX headers come before files
            return False
        try:
            size = int(header[124:136].split(b"\0", 1)[0].strip() or b"0", 8)
        except ValueError:
            return False
        offset += _BLOCK + -(-size // _BLOCK) * _BLOCK
    return False
