"""The sources of ``dcx.converters.stream_convert``: what differs between the source formats
of a conversion a chunk at a time (its chunked checker, how a chunk is read as the whole-file
reader reads it, what the chunks say of one another, the header the output writes first), and
the rules for dependencies on tasks of other chunks. See the engine's module docstring."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, ReadResult, has_errors
from dcx.core.model import Document, Task, Workload


SOURCES: dict[str, Callable[[], Source]] = {"swf": SwfSource, "gwf": GwfSource,
                                              "parquet": ParquetSource,
                                              "opendc-workload": OpendcWorkloadSource}
