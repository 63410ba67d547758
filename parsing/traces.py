"""What the trace formats (GWF, SWF, osp-workload) share: decoding a text trace, its number and
id tokens, the dependency checks every reader runs, and the value restrictions their writers
have in common (``dcx.core.restrict``, Value restrictions).

The codes of the diagnostics made here are the calling format's (``prefix``): each format
declares them with ``dependency_codes`` and ``text_codes`` (defined in the light
``dcx.parsing.trace_codes``, so a declaration can list them without importing this module).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dcx.core.columns import Strings
from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.core.limits import LIMITS
from dcx.core.model import Id, Job, Task, TaskStatus
from dcx.parsing.trace_codes import MAX_ERRORS
from dcx.parsing.trace_codes import dependency_codes as dependency_codes  # re-exported
from dcx.parsing.trace_codes import text_codes as text_codes  # re-exported
from dcx.parsing.trace_tokens import parse_int

# --------------------------------------------------------------------------- text


def decode_text(data: bytes, prefix: str) -> tuple[str | None, Diagnostic | None]:
    """UTF-8 text of a trace file, or the located reason why not."""
    if len(data) > LIMITS.max_input_bytes:
        return None, error(
            f"file is {len(data):,} bytes; the limit is {LIMITS.max_input_bytes:,}",
            "input.too-large",
        )
    text, problem = decoded_lines(data, prefix)
    if text is not None and text.startswith("\ufeff"):
        text = text[1:]
    return text, problem


def decoded_lines(data: bytes, prefix: str, first_line: int = 1
                  ) -> tuple[str | None, Diagnostic | None]:
    """UTF-8 text of whole lines, the first of them line ``first_line`` of the file (a
    chunk's), or the located reason why not; a byte order mark is left to the caller."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + first_line
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, error(
            f"invalid UTF-8 byte 0x{data[exc.start]:02x}", f"{prefix}.encoding",
            line=line, column=column,
        )


class ErrorBudget:
    """A reader's diagnostics, keeping at most ``MAX_ERRORS`` errors."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.errors = 0

    def report(self, diagnostic: Diagnostic) -> None:
        if diagnostic.is_error:
            self.errors += 1
        if self.errors <= MAX_ERRORS:
            self.diagnostics.append(diagnostic)

    @property
    def stopped(self) -> bool:
        return self.errors > MAX_ERRORS


_FLOAT_TEXT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def parse_number(token: str) -> int | float | None:
    """An integer, or a finite decimal/exponent float; ``None`` for anything else."""
    as_int = parse_int(token)
    if as_int is not None:
        return as_int
    if not _FLOAT_TEXT.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def format_number(value: float) -> str:
    """Integers without a decimal point; other floats as the shortest exact repr."""
    if isinstance(value, int):
        return str(int(value))
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def is_id_token(token: str) -> bool:
    """A text id: starts with an ASCII letter or ``_``; no whitespace, commas or semicolons."""
    return bool(token) and token[0] in _ID_START and _SEPARATOR.search(token) is None


def parse_id(token: str) -> Id | None:
    """An integer id >= 0, a text id token, or ``None``."""
    number = parse_int(token)
    if number is not None:
        return number if number >= 0 else None
    return token if is_id_token(token) else None


_ID_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_SEPARATOR = re.compile(r"[\s,;]")
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,17}")


# --------------------------------------------------------------------------- value restrictions


def written_number_id(value: object) -> int | None:
    """The integer a trace writes for an id and reads back: an integer >= 0 as it is, and
    the canonical decimal text of one (``"12"``, from a format whose ids are strings) as that
    integer (its type changes, its identity does not); ``None`` for any other id."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        return int(value)
    return None


def written_token_id(value: object) -> Id | None:
    """``written_number_id``, or a text id token kept as it is (formats that read them)."""
    number = written_number_id(value)
    if number is not None:
        return number
    return value if isinstance(value, str) and is_id_token(value) else None


def written_ids(ids: Sequence[Id], written: Callable[[object], Id | None],
                first: int = 1, keeps_integers: bool = False) -> tuple[dict[Id, Id], bool]:
    """Old id → written id, and whether they had to be renumbered.

    Ids are kept (as ``written`` writes them) when every one can be written and they stay
    unique; otherwise all are numbered ``first``, ``first + 1``, … in order, the model's normal
    form for ids a format cannot hold (``dcx.core.restrict``, Task ids). A repeated id keeps
    its first number. ``keeps_integers``: ``written`` returns every integer >= 0 as it is,
    so unique integer ids are kept without asking it."""
    integers = [old for old in ids if type(old) is int] if keeps_integers else []
    if keeps_integers and len(integers) == len(ids) and (not ids or min(integers) >= 0) \
            and len(set(ids)) == len(ids):
        return dict(zip(ids, ids, strict=True)), False  # the common case, checked in C
    kept: dict[Id, Id] = {}
    seen: set[Id] = set()
    for old in ids:
        new = written(old)
        if new is None or (new in seen and old not in kept):
            break
        kept[old] = new
        seen.add(new)
    else:
        if len(kept) == len(ids):
            return kept, False
    numbering: dict[Id, Id] = {}
    for old in ids:
        numbering.setdefault(old, first + len(numbering))
    return numbering, True


# --------------------------------------------------------------------------- status codes

STATUS_OF_CODE: dict[int, TaskStatus] = {
    0: TaskStatus.FAILED, 1: TaskStatus.COMPLETED, 2: TaskStatus.UNKNOWN,
    3: TaskStatus.COMPLETED, 4: TaskStatus.FAILED, 5: TaskStatus.CANCELLED}
"""SWF's Status codes (GWF's are SWF's): 1 completed, 0 failed, 5 cancelled; a job split
into partial executions (checkpointing, swapping) has 2 on a part that is continued, 3 on the
last part of a completed job and 4 on the last part of a failed one. Other codes (and -1)
say nothing the model knows: unknown."""

CODE_OF_STATUS: dict[TaskStatus, int] = {
    TaskStatus.UNKNOWN: -1, TaskStatus.COMPLETED: 1, TaskStatus.FAILED: 0,
    TaskStatus.CANCELLED: 5, TaskStatus.KILLED_AT_WALLTIME: 0}
"""The code a status is written as: a job killed at its limit is a failed one (the traces
have no code of their own for it)."""

PLAIN_CODES = (-1, 0, 1, 5)
"""The codes the status alone gives back; a file's other codes are kept beside it (the
format's own ``Status`` extras key) so that they are written back."""


def status_of_code(number: int) -> TaskStatus:
    """The status a Status code (``number``) says."""
    return STATUS_OF_CODE.get(number, TaskStatus.UNKNOWN)


def status_column(codes: Any) -> Any:
    """``WorkloadColumns.status`` of an integer column of Status codes (``None``: every one
    unknown)."""
    import numpy as np

    from dcx.core.columns import STATUSES

    table = np.zeros(7, dtype=np.int8)  # codes -1 to 5, at code + 1
    for code, status in STATUS_OF_CODE.items():
        table[code + 1] = STATUSES.index(status)
    inside = (codes >= -1) & (codes <= 5)
    found = np.where(inside, table[np.clip(codes, -1, 5) + 1], 0).astype(np.int8)
    return found if found.any() else None


def written_status_code(status: TaskStatus, kept: object) -> int:
    """The Status code of ``status``: ``kept`` (a file's own code, an int) when it reads
    back as that status, else the status's own code."""
    if isinstance(kept, int) and not isinstance(kept, bool) and kept >= 0 \
            and status_of_code(kept) is status and kept not in PLAIN_CODES:
        return kept
    return CODE_OF_STATUS[status]


def recorded_texts(task: Task, kept_status: object, seconds: Mapping[str, str],
                   codes: Mapping[str, str], values: dict[str, str]) -> None:
    """The texts of ``task``'s recorded fields (in its format's normal form) into
    ``values`` under the format's own names: ``Status`` (``kept_status``: the file's own
    code, kept where it reads back as the status), ``UsedMemory`` in KB, the ``seconds``
    and ``codes`` columns (name -> ``Task`` field) that have a value. SWF and GWF write
    them alike."""
    values["Status"] = str(written_status_code(task.status, kept_status))
    if task.used_memory_mb is not None:
        values["UsedMemory"] = format_number(task.used_memory_mb * 1024)
    for name, field in seconds.items():
        value = getattr(task, field)
        if value is not None:
            values[name] = format_number(value)
    for name, field in codes.items():
        code = getattr(task, field)
        if code is not None:
            values[name] = code


def lifted_recorded(task: Task, prefix: str, seconds: Mapping[str, str],
                    codes: Mapping[str, str]) -> Task:
    """``task`` with the recorded values an earlier dcx kept in its format's extras
    (``prefix`` + column: seconds, integer codes, ``UsedMemory`` in KB, ``Status``) moved
    into the ``Task`` fields that now hold them, where those are unset: a Parquet file
    written then converts to its trace format without losing them. A value of another kind
    stays (the normal form drops it, a loss)."""
    import dataclasses

    if not any(key.startswith(prefix) for key in task.extras):
        return task
    extras = dict(task.extras)
    fields: dict[str, Any] = {}

    def number(key: str) -> Any:
        value: Any = extras.get(key)
        return value if type(value) in (int, float) and math.isfinite(value) else None

    for name, field in seconds.items():
        value = number(prefix + name)
        if value is not None and getattr(task, field) is None:
            fields[field] = float(extras.pop(prefix + name))
    for name, field in codes.items():
        value = number(prefix + name)
        if type(value) is int and value >= 0 and getattr(task, field) is None:
            fields[field] = str(extras.pop(prefix + name))
    used = number(prefix + "UsedMemory")
    if used is not None and task.used_memory_mb is None:
        fields["used_memory_mb"] = extras.pop(prefix + "UsedMemory") / 1024
    status = number(prefix + "Status")
    if type(status) is int and task.status is TaskStatus.UNKNOWN:
        fields["status"] = status_of_code(status)
        if status in PLAIN_CODES:
            del extras[prefix + "Status"]  # (another code stays beside the status)
    if not fields:
        return task
    return dataclasses.replace(task, extras=extras, **fields)


CODE_TEXT = re.compile(r"0|[1-9][0-9]{0,17}")
"""An application, queue or partition a trace column of integer codes holds: what the
reader makes of the code (its decimal text)."""


def whole_seconds(value: float | None) -> float | None:
    """A recorded duration as a trace of whole seconds writes it: known (``known_time``)
    and rounded half up."""
    value = known_time(value)
    if value is None or float(value).is_integer():
        return value
    return float(math.floor(value + 0.5))


def known_time(value: float | None) -> float | None:
    """A duration a trace writes: finite and >= 0, else unknown (``None``)."""
    if value is None or (value >= 0 and math.isfinite(value)):
        return value
    return None


def known_submit(value: float) -> float:
    """A submit time a trace writes: finite and >= 0, else 0 (a trace has no unknown submit)."""
    return value if value >= 0 and math.isfinite(value) else 0.0


def renumbered_task(task: Task, numbering: dict[Id, Id]) -> tuple[Task, bool]:
    """``task`` with its id and dependencies written through ``numbering``; dependencies on
    tasks outside it are dropped. Returns the task and whether a dependency was dropped."""
    dependencies = tuple(numbering[d] for d in task.dependencies if d in numbering)
    dropped = len(dependencies) != len(task.dependencies)
    new_id = numbering[task.id]
    if new_id is task.id and not dropped and all(
            new is old for new, old in zip(dependencies, task.dependencies, strict=True)):
        return task, False
    return Task(**{**task.__dict__, "id": new_id, "dependencies": dependencies}), dropped


def workload_tasks(jobs: Iterable[Job]) -> list[Task]:
    return [task for job in jobs for task in job.tasks]


# --------------------------------------------------------------------------- dependency checks

Locate = Callable[[int, int | None], dict[str, Any]]
"""``locate(task_index, dependency_index_or_None)`` → ``line``/``column``/``pointer`` kwargs
for a diagnostic about the task's id (``None``) or one of its dependencies."""


def column_dependency_diagnostics(ids: Any, offsets: Any, dependency_ids: Any,
                                  locate: Locate, prefix: str) -> list[Diagnostic]:
    """``dependency_diagnostics`` for a workload held as columns (ids; each row's
    dependencies as ``dependency_ids[offsets[row]:offsets[row + 1]]``). Skipped, in one
    vectorised test, when ids are unique integers and every dependency names an earlier row:
    there it can find nothing."""
    import numpy as np

    count = len(ids)
    if ids.dtype.kind != "O" and dependency_ids.dtype.kind != "O":
        order = np.argsort(ids, kind="stable")
        ordered = ids[order]
        unique = count < 2 or not bool(np.any(ordered[1:] == ordered[:-1]))
        if unique and not len(dependency_ids):
            return []
        if unique and count:
            at = np.minimum(np.searchsorted(ordered, dependency_ids), count - 1)
            rows = np.repeat(np.arange(count), np.diff(offsets))
            if np.all(ordered[at] == dependency_ids) and np.all(order[at] < rows):
                return []
    needs = [dependency_ids[offsets[row]:offsets[row + 1]].tolist() for row in range(count)]
    return dependency_diagnostics(ids.tolist(), needs, locate, prefix)


def dependency_diagnostics(
    ids: Sequence[Id], dependencies: Sequence[Sequence[Id]], locate: Locate, prefix: str
) -> list[Diagnostic]:
    """Duplicate task ids, dependencies on unknown ids, and dependency cycles (one report per
    cycle found, naming its members), each at the place in the file that shows it."""
    found: list[Diagnostic] = []
    index_of: dict[Id, int] = {}
    for index, task_id in enumerate(ids):
        if task_id in index_of:
            first = locate(index_of[task_id], None).get("line")
            found.append(error(
                f"task id {task_id!r} is used again (first on line {first})",
                f"{prefix}.duplicate-id", **locate(index, None),
            ))
        else:
            index_of[task_id] = index
    resolved: list[list[int]] = []
    for index, needs in enumerate(dependencies):
        targets = []
        for position, needed in enumerate(needs):
            target = index_of.get(needed)
            if target is None:
                found.append(error(
                    f"task {ids[index]!r} depends on task {needed!r}, which is not in the file",
                    f"{prefix}.unknown-dependency", **locate(index, position),
                ))
            else:
                targets.append(target)
        resolved.append(targets)
    found.extend(_cycle_diagnostics(ids, resolved, locate, prefix))
    return found


_CYCLE_SHOWN = 6
"""Members of a cycle named in its message; a 100,000-task ring must not make a 700 KB line."""


def _cycle_text(members: list[Id]) -> str:
    if len(members) <= _CYCLE_SHOWN:
        return " → ".join(repr(member) for member in [*members, members[0]])
    shown = " → ".join(repr(member) for member in members[:_CYCLE_SHOWN - 1])
    return f"of {len(members):,} tasks {shown} → … → {members[-1]!r} → {members[0]!r}"


def _cycle_diagnostics(
    ids: Sequence[Id], resolved: list[list[int]], locate: Locate, prefix: str
) -> list[Diagnostic]:
    # Kahn's algorithm removes every task that can eventually run; what remains lies on a
    # cycle or waits on one. Iterative, so a 100,000-task chain costs no Python stack.
    # A repeated dependency is counted, and later released, once per occurrence.
    waiting = [len(targets) for targets in resolved]
    dependents: list[list[int]] = [[] for _ in resolved]
    for index, targets in enumerate(resolved):
        for target in targets:
            dependents[target].append(index)
    ready = [index for index, count in enumerate(waiting) if count == 0]
    while ready:
        done = ready.pop()
        for child in dependents[done]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    stuck = [index for index, count in enumerate(waiting) if count > 0]
    if not stuck:
        return []
    remaining = set(stuck)
    found: list[Diagnostic] = []
    on_cycles = 0
    for start in stuck:
        if start not in remaining:
            continue
        # Every stuck task has a stuck dependency, so following them must revisit a task.
        path: list[int] = []
        position: dict[int, int] = {}
        current: int | None = start
        while current is not None and current not in position:
            position[current] = len(path)
            path.append(current)
            # None: this task only waits on a cycle already reported.
            current = next((t for t in resolved[current] if t in remaining), None)
        if current is not None:
            cycle = path[position[current]:]
            names = _cycle_text([ids[i] for i in cycle])
            closing = cycle[-1]
            on_cycles += len(cycle)
            found.append(error(
                f"dependency cycle {names}: {'this task' if len(cycle) == 1 else 'these tasks'}"
                " can never start",
                f"{prefix}.dependency-cycle",
                **locate(closing, resolved[closing].index(cycle[0])),
            ))
        remaining.difference_update(path)
    blocked = len(stuck) - on_cycles
    if blocked > 0:
        found.append(warning(
            f"{blocked} more task(s) depend on a cycle and can never start",
            f"{prefix}.blocked-by-cycle",
        ))
    return found


# --------------------------------------------------------------------------- vectorised accept path


@dataclass(frozen=True)
class NumericColumns:
    """The job lines of a chunk of a whitespace-separated trace, as columns.

    ``numbers`` holds each numeric field (``int64`` for integer fields, ``float64`` for the
    others), ``texts`` each text field as written (``Strings``, ``-1`` included), ``lines``
    the 1-based line number of each row and ``integral``, for each float field, whether the
    row's token had no decimal point (the exact path reads it as an ``int``).
    ``flush_left``: no line starts with a blank (each first field is at column 1)."""

    numbers: dict[str, Any]
    texts: Mapping[str, Strings]
    lines: Any
    integral: dict[str, Any]
    flush_left: bool = False


@dataclass(frozen=True)
class FieldKinds:
    """What the vectorised accept path lets through in each field of a line: ``integers``
    are digits only, ``texts`` too (kept as written); other fields may also have one
    decimal point. ``minus_one`` fields may also be ``-1``. Every token is at most
    ``MAX_FAST_DIGITS`` characters long. Anything else is for the exact path."""

    names: tuple[str, ...]
    integers: frozenset[str]
    texts: frozenset[str]
    minus_one: frozenset[str]

    @property
    def floats(self) -> tuple[str, ...]:
        return tuple(name for name in self.names
                     if name not in self.integers and name not in self.texts)


class ColumnsBuilder:
    """Chunks of ``NumericColumns`` copied into arrays allocated once for at most
    ``capacity`` rows (a file's line count), so no chunk outlives its conversion."""

    def __init__(self, kinds: FieldKinds, capacity: int) -> None:
        import numpy as np

        self.kinds = kinds
        self.rows = 0
        self.capacity = capacity
        # a field that is -1 on every line so far has no array yet (most archive fields)
        self.numbers: dict[str, Any] = {name: None for name in kinds.names
                                        if name not in kinds.texts}
        self.integral = {name: np.empty(capacity, dtype=bool) for name in kinds.floats}
        self.lines = np.empty(capacity, dtype=np.int64)
        self.texts: dict[str, list[Strings]] = {name: [] for name in kinds.texts}

    def add(self, part: NumericColumns) -> None:
        start, end = self.rows, self.rows + len(part.lines)
        import numpy as np

        for name, values in part.numbers.items():
            if self.numbers[name] is None:
                if not np.any(values != -1):
                    continue
                self.numbers[name] = np.full(
                    self.capacity, -1, dtype=np.int64 if name in self.kinds.integers
                    else np.float64)
            self.numbers[name][start:end] = values
        for name, flags in part.integral.items():
            self.integral[name][start:end] = flags
        for name, texts in part.texts.items():
            self.texts[name].append(texts)
        self.lines[start:end] = part.lines
        self.rows = end

    def column(self, name: str) -> Any:
        """The field's values (an array the caller may change in place)."""
        import numpy as np

        values = self.numbers[name]
        if values is None:
            return np.full(self.rows, -1, dtype=np.int64 if name in self.kinds.integers
                           else np.float64)
        return values[:self.rows]

    def known(self, name: str) -> bool:
        """Whether any line has a value other than -1 in the field."""
        return self.numbers[name] is not None


MAX_FAST_DIGITS = 15
"""Longer tokens go to the exact path: a float64 holds every integer of 15 digits exactly."""

_TOKEN_BYTES = b"0123456789.-"
_MINUS_ZERO = re.compile(rb"-0")
_BLANK_BYTES = b" \t\r\n"


def numeric_records(data: bytes, position: int, first_line: int, kinds: FieldKinds,
                    chunk_bytes: int) -> ColumnsBuilder | None:
    """The whitespace-separated rows of ``data`` from ``position`` (line ``first_line``) on,
    read ``numeric_columns`` by chunk of whole lines; ``None`` as soon as one chunk is not
    for the vectorised path."""
    records = ColumnsBuilder(kinds, data.count(b"\n", position) + 1)
    line = first_line
    while position < len(data):
        end = data.rfind(b"\n", position, position + chunk_bytes)
        end = len(data) if end < 0 or position + chunk_bytes >= len(data) else end + 1
        chunk = data[position:end]
        found = numeric_columns(chunk, line, kinds)
        if found is None:
            return None
        records.add(found)
        line += chunk.count(b"\n")
        position = end
    return records


def numeric_columns(body: bytes, first_line: int, kinds: FieldKinds,
                    newlines: int | None = None) -> NumericColumns | None:
    """The job lines of ``body`` (whole lines; line ``first_line`` first) as columns, or
    ``None`` when anything in it is not plainly a job line the exact path would accept
    field by field: a byte other than digits, ``.``, ``-`` and blanks, a line with another
    number of fields, ``-`` other than in ``-1`` where a field allows it, a decimal point
    where only digits are allowed, two in one token or a token of ``.`` alone, a token
    longer than ``MAX_FAST_DIGITS``. It never reports: the caller runs the exact path.
    ``newlines``: the number of newlines in ``body``, when the caller has counted them."""
    import numpy as np

    if body.translate(None, _TOKEN_BYTES + _BLANK_BYTES):
        return None
    width = len(kinds.names)
    raw = np.frombuffer(body, dtype=np.uint8)
    if b"." not in body:
        return _integer_grid(raw, body, first_line, kinds, np, newlines)
    if not _whole_minus_ones(raw, np):
        return None
    token = (raw >= 45).view(np.int8)  # only blanks sort below '-' among the allowed bytes
    edges = np.flatnonzero(np.diff(token, prepend=np.int8(0), append=np.int8(0)))
    starts, ends = edges[0::2], edges[1::2]
    lengths = ends - starts
    if len(starts) and int(lengths.max()) > MAX_FAST_DIGITS:
        return None
    line_ends = np.flatnonzero(raw == 10)
    if not len(line_ends) or line_ends[-1] != len(raw) - 1:
        line_ends = np.append(line_ends, len(raw))
    per_line = np.diff(np.searchsorted(starts, line_ends), prepend=0)
    if np.any((per_line != 0) & (per_line != width)):
        return None
    lines = np.flatnonzero(per_line) + first_line
    first = raw[starts]
    minus = first == 45
    if int(minus.sum()) != body.count(b"-") or not np.all(lengths[minus] == 2) \
            or not np.all(raw[starts[minus] + 1] == 49):
        return None  # a '-' that is not a whole '-1' token
    grid_minus = minus.reshape(-1, width)
    forbidden = [column for column, name in enumerate(kinds.names)
                 if name not in kinds.minus_one]
    if grid_minus[:, forbidden].any():
        return None
    dotted = np.zeros(len(starts), dtype=bool)
    dots = np.flatnonzero(raw == 46)
    holder = np.searchsorted(starts, dots, side="right") - 1
    if len(np.unique(holder)) != len(holder) or np.any(lengths[holder] < 2):
        return None  # two decimal points in a token, or '.' alone
    dotted[holder] = True
    whole = [column for column, name in enumerate(kinds.names) if name not in kinds.floats]
    if dotted.reshape(-1, width)[:, whole].any():
        return None
    return _convert(raw, starts.reshape(-1, width), lengths.reshape(-1, width), grid_minus,
                    dotted.reshape(-1, width), lines, kinds, np)


def _whole_minus_ones(raw: Any, np: Any) -> bool:
    """Every ``-`` is a whole ``-1`` token: a blank (or the chunk's edge) before it, ``1``
    and then a blank (or the edge) after it."""
    # Shifted views of the chunk between newlines (the chunk's edges are line ends) compare
    # every byte with its neighbours at once: traces hold millions of -1 fields, and
    # gathering their positions costs more than these passes over the bytes.
    padded = np.concatenate((np.array([10], dtype=np.uint8), raw,
                             np.array([10, 10], dtype=np.uint8)))
    minus = padded[1:-2] == 45
    if not minus.any():
        return True
    whole = (padded[:-3] < 45) & (padded[2:-1] == 49) & (padded[3:] < 45)
    return not bool((minus & ~whole).any())


def _integer_grid(raw: Any, body: bytes, first_line: int, kinds: FieldKinds,
                  np: Any, newlines: int | None = None) -> NumericColumns | None:
    """``numeric_columns`` of a chunk of digits, ``-`` and blanks: Arrow's CSV reader
    converts each field as a 64-bit integer (text fields as written) once its blanks are
    one space each, and the values say the rest. Arrow reads a ``-`` only before digits;
    with no ``-0`` in the chunk, a value of -1 is a whole ``-1`` token and any other
    ``-`` gives a value below -1, or a text field whose ``-`` bytes are not all ``-1``."""
    if body.isspace() or not body:
        return _no_rows(raw, kinds, np)
    if _MINUS_ZERO.search(body):  # (faster than a two-byte `in` where '-' is frequent)
        return None  # '-0', '-01': read as numbers, not what the exact path would keep
    table: Any = None
    if b"\t" not in body and b"\r" not in body and _first_line_single_spaced(body):
        # what dcx and most tools write, read as it is: a blank at either end of a line or
        # next to another is an empty field, which Arrow refuses
        table = _read_grid(body, kinds)
        if table is None and _single_spaced(body, raw, np):
            return None  # a line with another number of fields, or a field Arrow refused
    direct = table is not None
    if direct:
        if newlines is None:
            newlines = body.count(b"\n")
        lines = _filled_lines(raw, body, table.num_rows, first_line, np, newlines)
    else:
        compact = _squeezed(raw, np)
        lines = _filled_lines(compact, None, -1, first_line, np)
        if not len(lines):
            return _no_rows(raw, kinds, np)
        table = _read_grid(compact.tobytes(), kinds)
        if table is None:
            return None
    if table.num_rows != len(lines):
        raise AssertionError("vectorised trace reader: rows and lines disagree")
    numbers: dict[str, Any] = {}
    text_arrays: dict[str, Any] = {}
    integral: dict[str, Any] = {}
    for name in kinds.names:
        values = table.column(name)
        if name in kinds.texts:
            values = values.combine_chunks()
            if not _digits_or_minus_one(values, np):
                return None
            text_arrays[name] = values
            continue
        integers = values.to_numpy()
        lowest = -1 if name in kinds.minus_one else 0
        if len(integers) and not (integers.min() >= lowest and integers.max() < 2 ** 53):
            return None  # the only negative value is a whole -1; floats must stay exact
        if name in kinds.integers:  # (an array of its own: callers may change it)
            numbers[name] = integers if integers.flags.writeable else integers.copy()
        else:
            numbers[name] = integers.astype(np.float64)
            integral[name] = np.ones(len(integers), dtype=bool)
    return NumericColumns(numbers, _ArrowTexts(text_arrays), lines, integral,
                          flush_left=direct)


def _no_rows(raw: Any, kinds: FieldKinds, np: Any) -> NumericColumns:
    empty = np.zeros((0, len(kinds.names)), dtype=np.int64)
    return _convert(raw, empty, empty, empty.astype(bool), empty.astype(bool),
                    np.zeros(0, dtype=np.int64), kinds, np)


def _first_line_single_spaced(body: bytes) -> bool:
    """The first line has no blank at either end and no two blanks together: the chunk is
    likely to be read as it is (``_single_spaced`` decides when Arrow refuses it)."""
    end = body.find(b"\n")
    line = body[:end] if end >= 0 else body
    return not (line.startswith(b" ") or line.endswith(b" ") or b"  " in line)


def _filled_lines(raw: Any, body: bytes | None, rows: int, first_line: int, np: Any,
                  newlines: int = 0) -> Any:
    """The numbers of the lines of ``raw`` that are not empty. ``body``: the same bytes, with
    ``newlines`` newlines, read into ``rows`` rows by Arrow, which leaves out empty lines
    only: as many rows as lines, and they follow one another."""
    if body is not None and rows == newlines + (not body.endswith(b"\n")):
        return np.arange(first_line, first_line + rows, dtype=np.int64)
    line_ends = np.flatnonzero(raw == 10)
    if not len(line_ends) or line_ends[-1] != len(raw) - 1:
        line_ends = np.append(line_ends, len(raw))
    lengths = np.diff(line_ends, prepend=-1)
    return np.flatnonzero(lengths > 1) + first_line


def _squeezed(raw: Any, np: Any) -> Any:
    """The bytes with one space between fields and no blank at either end of a line."""
    token = raw >= 45  # only blanks sort below '-' among the allowed bytes
    newline = raw == 10
    separator = ~token & ~newline
    keep = token | newline | (separator & np.concatenate(([False], token[:-1])))
    compact = np.where(separator, np.uint8(32), raw)[keep]
    trailing = (compact == 32) & np.concatenate((compact[1:] == 10, [True]))
    return compact[~trailing] if trailing.any() else compact


def _single_spaced(body: bytes, raw: Any, np: Any) -> bool:
    """Fields one space apart, no blank at either end of a line, no tab or carriage return."""
    if b"\t" in body or b"\r" in body or body.startswith(b" ") or body.endswith(b" "):
        return False
    # compared as arrays: a bytes search for a two-space needle crawls through text whose
    # every other byte is a space
    blank, newline = raw == 32, raw == 10
    return not (bool((blank[1:] & (blank[:-1] | newline[:-1])).any())
                or bool((blank[:-1] & newline[1:]).any()))


def _digits_or_minus_one(values: Any, np: Any) -> bool:
    """Every string of ``values`` (digits and ``-`` only) is digits or ``-1``, at most
    ``MAX_FAST_DIGITS`` long; read from Arrow's buffers, without a compute kernel."""
    if not len(values):
        return True
    _validity, offset_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offset_buffer, dtype=np.int32)[
        values.offset:values.offset + len(values) + 1]
    lengths = np.diff(offsets)
    if int(lengths.min()) < 1 or int(lengths.max()) > MAX_FAST_DIGITS:
        return False  # an empty field (two blanks together) or a long token
    data = np.frombuffer(data_buffer, dtype=np.uint8)
    minus_one = (data[offsets[:-1]] == 45) & (lengths == 2) & \
        (data[np.minimum(offsets[:-1] + 1, len(data) - 1)] == 49)
    return int(np.count_nonzero(data[offsets[0]:offsets[-1]] == 45)) == \
        int(np.count_nonzero(minus_one))


class _ArrowTexts(Mapping[str, Strings]):
    """Text fields as ``Strings``, made from Arrow's string arrays when first asked for
    (checking a trace needs none of them)."""

    def __init__(self, arrays: dict[str, Any]) -> None:
        self.arrays = arrays
        self.made: dict[str, Strings] = {}

    def __getitem__(self, name: str) -> Strings:
        if name not in self.made:
            import numpy as np

            self.made[name] = _arrow_strings(self.arrays[name], np)
        return self.made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.arrays)

    def __len__(self) -> int:
        return len(self.arrays)


def _arrow_strings(values: Any, np: Any) -> Strings:
    encoded = values.dictionary_encode()
    return Strings(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32),
                   tuple(encoded.dictionary.to_pylist()))


def _read_grid(compact: bytes, kinds: FieldKinds) -> Any:
    """The rows of single-space separated lines, integers and texts; ``None`` when Arrow
    refuses one (a line with another number of fields, a field that is no integer)."""
    import io

    import pyarrow as pa
    from pyarrow import csv

    types = {name: pa.string() if name in kinds.texts else pa.int64()
             for name in kinds.names}
    try:
        return csv.read_csv(
            io.BytesIO(compact), memory_pool=pa.system_memory_pool(),
            read_options=csv.ReadOptions(column_names=list(kinds.names), block_size=1 << 20,
                                         use_threads=False),
            parse_options=csv.ParseOptions(delimiter=" ", quote_char=False,
                                           double_quote=False, escape_char=False,
                                           newlines_in_values=False, ignore_empty_lines=True),
            convert_options=csv.ConvertOptions(column_types=types, null_values=[],
                                               strings_can_be_null=False,
                                               quoted_strings_can_be_null=False))
    except pa.ArrowInvalid:
        return None


def _convert(raw: Any, starts: Any, lengths: Any, minus: Any, dotted: Any, lines: Any,
             kinds: FieldKinds, np: Any) -> NumericColumns:
    numbers: dict[str, Any] = {}
    texts: dict[str, Strings] = {}
    integral: dict[str, Any] = {}
    for column, name in enumerate(kinds.names):
        start, length = starts[:, column], lengths[:, column]
        negative, has_dot = minus[:, column], dotted[:, column]
        value = np.zeros(len(start), dtype=np.int64)
        end = start + length
        for place in range(int(length.max()) if len(length) else 0):
            inside = place < length
            digit = raw[np.where(inside, end - 1 - place, 0)].astype(np.int64) - 48
            value += digit * inside * 10 ** place
        value[negative] = -1
        if name in kinds.texts:
            texts[name] = _token_texts(raw, start, length, value, np)
        elif name in kinds.integers:
            numbers[name] = value
        else:
            floats = value.astype(np.float64)
            for row in np.flatnonzero(has_dot):
                floats[row] = float(raw[start[row]:start[row] + length[row]].tobytes())
            numbers[name] = floats
            integral[name] = ~has_dot
    return NumericColumns(numbers, texts, lines, integral)


def _token_texts(raw: Any, start: Any, length: Any, value: Any, np: Any) -> Strings:
    """The tokens as written (``007`` is not ``7``): a digit token is its value and its
    length (leading zeros), so equal pairs are equal texts."""
    key = value * 16 + length
    _distinct, first, codes = np.unique(key, return_index=True, return_inverse=True)
    texts = tuple(raw[start[row]:start[row] + length[row]].tobytes().decode("ascii")
                  for row in first)
    return Strings(codes.astype(np.int32).reshape(-1), texts)
