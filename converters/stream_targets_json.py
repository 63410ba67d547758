"""JSON targets of ``dcx.converters.stream_convert``: a Batsim workload and an osp-workload
file written a chunk of jobs at a time (see the engine's module docstring for what every
target shares), byte for byte what the whole-file conversion writes.

A Batsim workload writes ``nb_res`` (the largest ``res``) before its jobs and the profiles
they name after them, so neither is known when the first job is: each part's job lines go to
a temporary file beside OUTPUT (for standard output, in the temporary directory), and the
output is assembled once the input is all read (``nb_res`` and the header's attributes, the
jobs copied from that file, the delay profiles in the order the jobs first named them).
Memory holds one chunk and one profile per distinct runtime. An osp-workload file writes
the header's members (name, ``date_start``, which every ``ts_submit`` counts from) before
its workflows: they are known from the first chunk, so the workflows are written as they
come (a file whose later chunk holds a header line is read again; a pipe stops), a GWF
workflow cut between chunks kept one workflow. A file is read once either way, a pipe too.

Losses are counted on each chunk's document as the whole file has it: Batsim holds no
dependencies, so one on a task of another chunk is put back before they are (a
``task.dependencies`` loss there too); a held path whose values the normal form of some
chunk changes is counted in every chunk, as the whole file counts every value of it, and
left out at the end when no chunk changes one; the workload's fields are the header's.
What a chunk cannot decide alone stops the conversion (``convert.not-streamable``): ids the
whole file would renumber, ``batsim:`` data a Parquet trace kept (profile names, Batsim's
``nb_res``), keys osp-workload cannot write, and in a pipe a preceding job that comes later
in the trace. In a file, such a job is a dependency where its chunk kept an extras value:
the file is read again to measure the losses (and, to osp-workload, to write).

The output is read back under the target's reader, whole, as ``dcx validate`` reads it, when
it is within the input size limit (``dcx validate`` refuses a larger one); a larger output
is written without that check: each part is the codec's ``write_part``, the whole-file
writer's text, which the differential tests hold to it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator
from typing import Any

from dcx.converters.stream_sources import NotStreamable, Source
from dcx.converters.stream_targets import (
    Target,
    _restored,
    binary,
    judged,
    with_header_losses,
)
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss
from dcx.core.model import Document, Workload


def _read_back_whole(target: Target, path: str) -> Diagnostic | None:
    """Why the output at ``path`` is not accepted by its format's reader, read whole, if it
    is not; an output over the input size limit is not read (see the module docstring)."""
    from dcx.core.limits import LIMITS

    if os.path.getsize(path) > LIMITS.max_input_bytes:
        return None
    with open(path, "rb") as stream:
        found = target.spec.read(stream.read())
    return judged(target, found.diagnostics, found.document is None)
