"""The targets of ``dcx.converters.stream_convert``: what a target format makes of each chunk's
document (a Parquet row group, SWF job lines, GWF task lines), what it writes first, how it
writes during the first reading of a file, and how its output is read back. See the engine's
module docstring."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dcx.converters.stream_sources import (
    PRECEDING_KEY,
    NotStreamable,
    Source,
    SwfSource,
    cut_ends,
)
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss, error, warning
from dcx.core.fields import FIELDS
from dcx.core.model import Document, Workload

if TYPE_CHECKING:
    from dcx.formats.gwf.codec import Variant

def _with_dependencies(table: Any, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
    """``table`` whose rows in ``earlier`` also depend on the tasks given there, each put
    back at its place in the row's list."""
    import pyarrow as pa

    position = table.schema.get_field_index("dependencies")
    kind = table.schema.field(position).type
    lists = table.column(position).to_pylist()
    for row, insertions in earlier.items():
        lists[row] = _inserted(lists[row], insertions)
    try:
        column = pa.array(lists, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise NotStreamable("a dependency's id is not of its chunk's kind") from None
    return table.set_column(position, table.schema.field(position), column)


def _inserted(values: Sequence[Any], insertions: Sequence[tuple[int, Any]]) -> list[Any]:
    """``values`` with each ``(place, value)`` of ``insertions`` (places going up) put at
    that place of the list it makes."""
    result = list(values)
    for place, value in insertions:
        result.insert(place, value)
    return result


_REQUESTS = ("os", "arch", "features")
"""The columns the Parquet writer adds after the model's own where some task asks one."""


class _Schema:
    """The one Arrow schema of every row group (see the module docstring)."""

    def __init__(self, fixed: bool, pipe_extras: tuple[tuple[str, Any], ...]) -> None:
        self.fixed = fixed
        self.pipe_extras = pipe_extras
        self.types: dict[str, Any] = {}

    def add(self, table: Any) -> None:
        import pyarrow as pa

        for name, kind in zip(table.column_names, table.schema.types, strict=True):
            known = self.types.get(name)
            if known is None or known == kind:
                self.types.setdefault(name, kind)
            elif {known, kind} == {pa.int64(), pa.float64()}:
                self.types[name] = pa.float64()
            else:
                raise NotStreamable(f"column {name} is {known} in one chunk and {kind} in "
                                    "another")
        # the writer's order: the model's columns (os, arch, features where some task asks
        # one), then the extras columns in the order they first appear
        order = {name: index for index, name in enumerate(self.types)}
        self.types = dict(sorted(self.types.items(), key=lambda item: (
            2 if item[0].startswith("extras") else 1 if item[0] in _REQUESTS else 0,
            _REQUESTS.index(item[0]) if item[0] in _REQUESTS else order[item[0]])))

    def schema(self, first: Any) -> Any:
        """The schema, given the first table to write (a pipe's schema starts from it)."""
        import pyarrow as pa

        if self.fixed and not self.types:
            self.add(first)
            for key, wanted in self.pipe_extras:
                name = "extras." + key
                known = self.types.get(name)
                self.types[name] = wanted if known is None or known == pa.int64() else known
        return pa.schema(list(self.types.items()))


def _conformed(table: Any, schema: Any) -> Any:
    """``table`` with ``schema``'s columns: absent ones null (features: empty), integers
    widened to doubles."""
    import pyarrow as pa

    columns = []
    for column_field in schema:
        if column_field.name in table.column_names:
            column = table.column(column_field.name)
            if column.type != column_field.type:
                try:
                    column = column.cast(column_field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    raise NotStreamable(f"column {column_field.name} is {column.type} in one "
                                        f"chunk and {column_field.type} in another") from None
            columns.append(column)
        elif column_field.name == "features":  # a task that asks none: an empty list
            columns.append(pa.array([[]] * table.num_rows, column_field.type))
        else:
            columns.append(pa.nulls(table.num_rows, column_field.type))
    extra = set(table.column_names) - set(schema.names)
    if extra:
        raise NotStreamable(f"column {sorted(extra)[0]} is in a later chunk only")
    return pa.Table.from_arrays(columns, schema=schema)


class Target:
    """What a target does with the chunks' documents: one part each (a Parquet row group,
    SWF lines), written after what comes first (a header) and read back afterwards."""

    spec: FormatDeclaration
    source: Source
    """The input whose chunks it converts (set by each target's ``__init__``)."""
    sources: frozenset[str] = frozenset()
    """The source formats converted to this target a chunk at a time (``STREAM_PAIRS``)."""
    verdict: Any = None
    """The input's ``ChunkedRead``, once it is all read."""
    warned: tuple[Diagnostic, ...] = ()
    """``convert.output-warning``: what the output warns of and the input did not."""
    strict: bool = False
    observes: bool = False
    """The first reading of a file makes each part for ``observe`` (Parquet's schema)."""
    jobs_are_rows: bool = False
    """Each row the target writes is a job (an SWF line)."""
    dependencies_across: bool = False
    """A preceding job of an earlier chunk becomes a dependency in the part (``Source.cross_chunk``)
    rather than staying the extras value a chunk's document keeps (SWF writes both alike)."""

    def __init__(self, source: Source, reopenable: bool) -> None:
        """A target for ``source``'s chunks; ``reopenable``: the input is a file, read
        twice when the first reading cannot write the output."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        raise NotImplementedError

    def header(self, source: Source) -> Workload:
        """What the output writes first: the input's header read so far."""
        return source.header(self.spec)

    def cut_ends(self, document: Document, counted: bool) -> tuple[bool, bool, int]:
        """Whether the first and the last job of a chunk's ``document`` count a ``job``
        loss, and its number of jobs (``counted``: the chunk counted ``job`` losses), once
        its ``losses`` are measured: ``stream_sources.cut_ends``, in the document as given."""
        return cut_ends(document, counted)

    def refusal(self, source: FormatDeclaration, verdict: Any) -> Diagnostic | None:
        """Why the whole-file path would refuse the input (``verdict``, all read, with jobs)
        for what the target made of it, if it would (``convert.nothing-held``)."""
        return None

    def rows(self, part: Any) -> int:
        raise NotImplementedError

    def losses(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]
               ) -> dict[Any, tuple[Loss, ...]]:
        """A chunk's losses in each form the output may take, until the input says which
        (``measured_as``; GWF's variant): here the one the target's normal form gives."""
        from dcx.converters.losses import conversion_losses

        return {None: conversion_losses(document, self.spec)}

    def measured_as(self) -> Any:
        """Which of ``losses``' forms the output takes, once the input is read."""
        return None

    unknown_in_file: bool = False
    """After the first reading of a file: a preceding job some chunk did not know (no
    earlier chunk held it) is a job of the file after all (set by the engine)."""
    loses_unknown_otherwise: bool = False
    """Such a job is a dependency whose loss differs from that of the extras value its chunk
    kept (GWF, Batsim, osp-workload; Parquet and SWF hold both alike)."""

    def measures_again(self) -> bool:
        """After ``resolved``: the first reading's losses are not the whole file's, so a
        second reading measures them before the output is written."""
        return self.loses_unknown_otherwise and self.unknown_in_file

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        """The losses of the conversion, given ``losses``, those the chunks' losses in the
        output's form sum to, once the input is read (``counted``: the paths the chunks
        counted in a form)."""
        return losses

    def observe(self, part: Any, unknown: list[Any]) -> None:
        """A part of the first reading of a file (nothing is written then), and the
        preceding jobs its chunk did not know (yet)."""

    def resolved(self, in_file: Callable[[Any], bool]) -> None:
        """After the first reading of a file: which job numbers are in it (a preceding job
        a chunk did not know stays an extras value only when it is not)."""

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        raise NotImplementedError

    def read_back(self, path: str) -> Diagnostic | None:
        """Why the output at ``path`` is not accepted, if it is not."""
        raise NotImplementedError

    writes_early: bool = False
    """The first reading of a file may write its parts to ``start_early``'s path, so that
    the file is read only once when what is written first turns out right at the end."""
    early_rows: int = 0

    def start_early(self, path: str) -> None:
        raise NotImplementedError

    def write_early(self, part: Any, unknown: bool) -> None:
        """A part of the first reading (after ``observe``); ``unknown``: its chunk names a
        preceding job it did not know (yet), which the second reading may know."""
        raise NotImplementedError

    def finish_early(self, header: Workload) -> bool:
        """Whether what was written early is the output (then it is complete)."""
        raise NotImplementedError

    def close_early(self) -> None:
        """Let go of what was written early, if it is still open."""


class ParquetTarget(Target):
    sources = frozenset({"swf", "gwf", "parquet", "opendc-workload"})

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import parquet

        self.spec = parquet.FORMAT
        self.dependencies_across = True
        self.observes = True
        self.plan = _Schema(not reopenable, source.pipe_extras())
        self.preceding_unknown = isinstance(source, SwfSource)
        """A chunk's preceding-job extras column may be a dependency in the whole file."""
        self.preceding: list[tuple[int, list[Any], Any]] = []
        """Where the preceding-job extras column would go, per part that has it."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dcx.formats import parquet

        table = parquet.codec.rows_of(parquet.normal_form(document).workload or Workload())
        if table is None:
            raise NotStreamable("the Parquet writer cannot write a chunk's rows")
        return _with_dependencies(table, earlier) if earlier else table

    def rows(self, part: Any) -> int:
        return int(part.num_rows)

    def observe(self, part: Any, unknown: list[Any]) -> None:
        # the preceding-job extras column is the whole file's only where a job it names is
        # not in the file, known at the end: where it would go is kept until then
        name = "extras." + PRECEDING_KEY
        if name not in part.column_names or not self.preceding_unknown:
            self.plan.add(part)
            return
        new = [column for column in part.column_names if column not in self.plan.types]
        self.preceding.append((len(self.plan.types) + new.index(name), unknown,
                               part.schema.field(name).type))
        self.plan.add(part.drop_columns([name]))

    def resolved(self, in_file: Callable[[Any], bool]) -> None:
        for position, unknown, kind in self.preceding:
            if not all(map(in_file, unknown)):
                names = list(self.plan.types)
                names.insert(position, "extras." + PRECEDING_KEY)
                self.plan.types = {name: self.plan.types.get(name, kind) for name in names}
                return

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        import pyarrow.parquet as pq

        from dcx.formats import parquet

        writer = None
        rows = 0
        try:
            for table in parts:
                if writer is None:
                    schema = self.plan.schema(table)
                    writer = pq.ParquetWriter(sink, schema, store_schema=False,
                                              **parquet.codec.writer_options(schema))
                writer.write_table(_conformed(table, schema), row_group_size=table.num_rows)
                rows += table.num_rows
            workload = at_end()
            if writer is None:
                schema = self.plan.schema(parquet.codec.rows_of(Workload()))
                writer = pq.ParquetWriter(sink, schema, store_schema=False,
                                          **parquet.codec.writer_options(schema))
            # the metadata is known at the end; without a stored Arrow schema (whose own
            # copy of the metadata would be the one at the start) readers take the footer's
            writer.add_key_value_metadata(parquet.codec.header_metadata(workload))
        finally:
            if writer is not None:
                writer.close()
        return rows

    writes_early = True

    def start_early(self, path: str) -> None:
        self.early_path: str | None = path
        self.early_writer: Any = None
        self.early_schema: Any = None

    def write_early(self, part: Any, unknown: bool) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from dcx.formats import parquet

        if self.early_path is None or not part.num_rows:
            return
        schema = pa.schema(list(self.plan.types.items()))
        if unknown or (self.early_schema is not None and not schema.equals(self.early_schema)) \
                or not set(part.column_names) <= set(schema.names):
            self.close_early()  # the schema changes, or may: the second reading writes
            self.early_path = None
            return
        if self.early_writer is None:
            self.early_schema = schema
            self.early_writer = pq.ParquetWriter(self.early_path, schema, store_schema=False,
                                                 **parquet.codec.writer_options(schema))
        self.early_writer.write_table(_conformed(part, schema), row_group_size=part.num_rows)
        self.early_rows += part.num_rows

    def finish_early(self, header: Workload) -> bool:
        import pyarrow as pa

        from dcx.formats import parquet

        if self.early_writer is None or self.early_path is None or \
                not pa.schema(list(self.plan.types.items())).equals(self.early_schema):
            return False
        self.early_writer.add_key_value_metadata(parquet.codec.header_metadata(header))
        self.close_early()
        return True

    def close_early(self) -> None:
        writer, self.early_writer = getattr(self, "early_writer", None), None
        if writer is not None:
            writer.close()

    def read_back(self, path: str) -> Diagnostic | None:
        from dcx.converters.partitions import read_parts

        # the reader dcx validate runs on a large Parquet file, its row groups in turn
        problems = read_parts(path, self.spec).diagnostics
        return invalid_output("parquet", problems) if problems else None


class _LinesTarget(Target):
    """A text target written early as lines: what goes first once the first part gives it
    (``begin_early``), then each part's lines; nothing is written for a file that has
    no parts."""

    writes_early = True

    def start_early(self, path: str) -> None:
        self.early_path = path
        self.early_stream: Any = None

    def early_begun(self) -> bool:
        return getattr(self, "early_stream", None) is not None

    def begin_early(self, head: str) -> None:
        self.early_stream = open(self.early_path, "wb")  # noqa: SIM115 (close_early)
        self.early_stream.write(head.encode())

    def write_early_lines(self, data: bytes, rows: int) -> None:
        self.early_stream.write(data)
        self.early_rows += rows

    def close_early(self) -> None:
        stream, self.early_stream = getattr(self, "early_stream", None), None
        if stream is not None:
            stream.close()


def _after_written(lines: bytes, latest: float) -> float:
    """The last submit time of a chunk's SWF job lines (in submit-time order, as the normal
    form sorts each chunk), after checking that its first comes no earlier than ``latest``,
    the last one written: the whole file would sort such a chunk among earlier ones."""
    first = float(lines[:lines.index(b"\n")].split()[1])
    if first < latest:
        raise NotStreamable("a job submitted before a job of an earlier chunk (SWF lines are "
                            "in submit-time order)")
    last_line = lines[lines.rindex(b"\n", 0, len(lines) - 1) + 1:] \
        if lines.count(b"\n") > 1 else lines
    return float(last_line.split()[1])


class SwfTarget(_LinesTarget):
    """SWF lines: the header first (a pipe's: what its first chunk holds; a header line in a
    later chunk, which the whole file would write at the top, stops the conversion). A
    file's first reading writes them after the header its first chunk gives, kept when the
    whole file's header is the same (else the file is read again)."""

    sources = frozenset({"swf", "gwf", "parquet", "opendc-workload"})

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import swf

        self.spec = swf.FORMAT
        self.source = source
        self.jobs_are_rows = True
        self.value_paths = _VALUE_PATHS & self.spec.holds
        """The value paths SWF's normal form may change (the others it does not hold: its
        restriction drops every value of them, chunk by chunk as in the whole file)."""
        self.early_header: list[str] = []
        """The header lines written early (the first chunk's)."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dataclasses import replace

        from dcx.formats.swf import codec

        # a preceding job of an earlier chunk is written from extras as from a dependency
        normal, lost = codec._normalized(document)
        workload = normal.workload or Workload()
        if not len(workload.jobs):
            return b""
        if "task.id" in lost:  # the whole file numbers its jobs 1..n, not each chunk
            raise NotStreamable("job numbers SWF writes as a counter of the whole file "
                                "(text ids, or jobs the submit-time order moves)")
        jobs_only = Workload(jobs=workload.jobs)
        return codec.write(replace(document, workload=jobs_only)).data

    def rows(self, part: Any) -> int:
        return int(part.count(b"\n"))

    def losses(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]
               ) -> dict[Any, tuple[Loss, ...]]:
        """As GWF's: a value path the file's normal form changes somewhere counts every
        value of the file (``dropped_values``), so each chunk counts all of its own and says
        which it changes (the form ``_CHANGED``); ``reported`` leaves out those no chunk
        changes. (A chunk alone would count a path's values only where it changes one.)"""
        from dataclasses import replace

        from dcx.converters.losses import conversion_losses
        from dcx.core.restrict import recorded_use
        from dcx.formats.swf import codec

        normal, lost = codec._normalized(document)
        use = recorded_use(document, self.spec.name)
        claimed = lost | {path for path in self.value_paths if path in use.used}
        spec = replace(self.spec, normal_form_losses=_changing(claimed))
        return {None: conversion_losses(document, spec, normal),
                _CHANGED: tuple(Loss(path, 1, "", None)
                                for path in sorted(lost & self.value_paths))}

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        not_lost = self.value_paths - frozenset(counted(_CHANGED))
        return tuple(loss for loss in losses if loss.field not in not_lost)

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        from dcx.formats.swf import codec

        rows = 0
        written: list[str] | None = None
        latest = -math.inf
        with binary(sink) as stream:
            for data in parts:
                latest = _after_written(data, latest)
                if written is None:
                    written = codec._header(header())
                    stream.write("".join(line + "\n" for line in written).encode())
                stream.write(data)
                rows += data.count(b"\n")
            lines = codec._header(at_end())
            if written is None:
                stream.write("".join(line + "\n" for line in lines).encode())
            elif lines != written:
                raise NotStreamable("a header line after the first chunk")
        return rows

    def read_back(self, path: str) -> Diagnostic | None:
        return _read_back_in_chunks(self, path)

    def write_early(self, part: Any, unknown: bool) -> None:
        # (a preceding job a chunk did not know is written alike as extras or dependency)
        from dcx.formats.swf import codec

        if not part:
            return
        self.early_latest = _after_written(part, getattr(self, "early_latest", -math.inf)
                                           if self.early_begun() else -math.inf)
        if not self.early_begun():
            self.early_header = codec._header(self.source.header(self.spec))
            self.begin_early("".join(line + "\n" for line in self.early_header))
        self.write_early_lines(part, part.count(b"\n"))

    def finish_early(self, header: Workload) -> bool:
        from dcx.formats.swf import codec

        if not self.early_begun() or codec._header(header) != self.early_header:
            return False
        self.close_early()
        return True


def _read_back_in_chunks(target: Target, path: str) -> Diagnostic | None:
    """Why the text output at ``path`` is not accepted by its format's chunked reader, if it
    is not; what it warns of and the input did not goes to ``target.warned``."""
    from dcx.parsing import chunks

    spec = target.spec
    assert spec.read_chunks is not None
    with open(path, "rb") as stream:
        found = spec.read_chunks(chunks.line_chunks(stream.read, b"", chunks.CHUNK_BYTES))
    return judged(target, found.diagnostics)


def judged(target: Target, diagnostics: Sequence[Diagnostic], unread: bool = False
           ) -> Diagnostic | None:
    """Why an output whose reading back gave ``diagnostics`` (``unread``: and no document)
    is not accepted, if it is not; what it warns of and the input did not goes to
    ``target.warned``."""
    from dcx.converters.catalogue import conformance_codes

    spec = target.spec
    rejected = [d for d in diagnostics if d.is_error or d.code in conformance_codes()]
    if rejected or unread:
        return invalid_output(spec.name, rejected)
    inherited = {d.code for d in target.verdict.diagnostics} if target.verdict else set()
    severity = error if target.strict else warning
    target.warned = tuple(severity(f"the {spec.name} output will warn: {d.message}",
                                   "convert.output-warning")
                          for d in diagnostics if d.code not in inherited)
    refused = [d for d in target.warned if d.is_error]
    return refused[0] if refused else None


class GwfTarget(_LinesTarget):
    """GWF task lines, after the header line of the file's variant (``codec.write_part``):
    the variant ``codec.variant_for`` the unions of the chunks' ``codec.variant_fields``
    (a dependency on a task of another chunk counted with its chunk, as the whole file
    counts it), as the whole file's are one set. A file's is known from its first reading,
    which writes in its first chunk's variant and is kept when the whole file's turns out
    the same (else the file is read again); a pipe's is its first chunk's, and a later
    chunk that makes the file the other stops the conversion. A chunk's losses are measured
    in both variants until the file's is known (``losses``), with its dependencies on tasks
    of other chunks; a preceding job (SWF) the first reading did not know, which turns out
    to be a job of the file, is a dependency its chunk's losses did not have: a second
    reading measures them again (``measures_again``)."""

    sources = frozenset({"swf", "gwf", "parquet", "opendc-workload"})
    loses_unknown_otherwise = True

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import gwf

        self.spec = gwf.FORMAT
        self.source = source
        self.dependencies_across = True
        self.observes = True
        self.variant: Variant | None = None
        """The file's variant, once the first reading has seen every chunk."""
        self.only_archive: frozenset[str] = frozenset()
        self.only_workflow: frozenset[str] = frozenset()
        """The unions of the chunks' ``codec.variant_fields`` so far."""

    def part(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
        from dcx.core.columns import columns_of
        from dcx.formats.gwf import codec

        restored = _restored(document, earlier)
        workload = restored.workload or Workload()
        columns = columns_of(workload)
        tasks = len(columns) if columns is not None else sum(len(job.tasks)
                                                             for job in workload.jobs)
        return restored, codec.variant_fields(workload), tasks

    def rows(self, part: Any) -> int:
        return int(part[2])

    def losses(self, document: Document, earlier: dict[int, list[tuple[int, Any]]]
               ) -> dict[Any, tuple[Loss, ...]]:
        from dataclasses import replace

        from dcx.converters.losses import conversion_losses
        from dcx.core.restrict import recorded_use
        from dcx.formats.gwf import codec

        restored = _restored(document, earlier)
        use = recorded_use(restored, self.spec.name)
        value_paths = _VALUE_PATHS & self.spec.holds
        used = {path for path in value_paths if path in use.used or path in use.foreign}
        found: dict[Any, tuple[Loss, ...]] = {}
        for variant in (self.variant,) if self.variant is not None else ("workflow", "archive"):
            normal, lost = codec.part_normal_form(restored, variant)
            # a path whose values the file's normal form changes counts every value of it,
            # changed or not (``dropped_values``): each chunk counts its own, and says which
            # it changes (the form ``(_CHANGED, variant)``); those the file's normal form
            # changes nowhere are left out at the end (``reported``)
            claimed = lost | used
            spec = replace(self.spec, normal_form_losses=_changing(claimed))
            found[variant] = conversion_losses(restored, spec, normal)
            found[_CHANGED, variant] = tuple(Loss(path, 1, "", None)
                                             for path in sorted(lost & value_paths))
        return found

    def measured_as(self) -> Any:
        return self.variant

    def reported(self, losses: tuple[Loss, ...], counted: Callable[[Any], Collection[str]]
                 ) -> tuple[Loss, ...]:
        """Without the value paths the file's normal form changes nowhere, and with the
        workload's own fields as the header the whole input gives loses them (each chunk
        has the header lines it holds; the whole file one workload of them all)."""
        return with_header_losses(self, losses, (_VALUE_PATHS & self.spec.holds) - frozenset(
            counted((_CHANGED, self.variant))))

    def _add(self, fields: tuple[frozenset[str], frozenset[str]]) -> Variant:
        """The variant of the chunks so far, with one more chunk's ``fields``."""
        from dcx.formats.gwf import codec

        self.only_archive |= fields[0]
        self.only_workflow |= fields[1]
        return codec.variant_for(self.only_archive, self.only_workflow)

    def observe(self, part: Any, unknown: list[Any]) -> None:
        self._add(part[1])

    def resolved(self, in_file: Callable[[Any], bool]) -> None:
        from dcx.formats.gwf import codec

        # a preceding job the first reading did not know, a job of the file after all, is a
        # dependency (what only the workflow variant holds)
        if self.unknown_in_file:
            self.only_workflow |= {"task.dependencies"}
        self.variant = codec.variant_for(self.only_archive, self.only_workflow)

    def write(self, sink: Any, parts: Iterator[Any], header: Callable[[], Workload],
              at_end: Callable[[], Workload]) -> int:
        from dcx.formats.gwf import codec

        rows = 0
        variant: Variant | None = self.variant
        piped = variant is None
        with binary(sink) as stream:
            for document, fields, count in parts:
                if piped:  # a pipe: written in its first chunk's variant
                    so_far = self._add(fields)
                    variant = so_far if variant is None else variant
                assert variant is not None
                if not rows:
                    stream.write((codec.header_line(variant) + "\n").encode())
                stream.write(codec.write_part(document, variant))
                rows += count
            if piped:
                self.variant = codec.variant_for(self.only_archive, self.only_workflow)
                if variant is not None and self.variant != variant:
                    raise NotStreamable(
                        "a task that only the archive variant holds after the first chunk "
                        "(the whole file is written in that variant)" if variant == "workflow"
                        else "a dependency or a workflow of several tasks after the first "
                        "chunk, which make the file the workflow variant (the whole file "
                        "is written in that variant)")
            at_end()
            if not rows:
                stream.write((codec.header_line(self.variant or "workflow") + "\n").encode())
        return rows

    def read_back(self, path: str) -> Diagnostic | None:
        return _read_back_in_chunks(self, path)

    early_variant: Variant | None = None

    def write_early(self, part: Any, unknown: bool) -> None:
        from dcx.formats.gwf import codec

        document, _, count = part
        if not count:
            return
        if not self.early_begun():  # the variant of the chunks so far (observed)
            self.early_variant = codec.variant_for(self.only_archive, self.only_workflow)
            self.begin_early(codec.header_line(self.early_variant) + "\n")
        assert self.early_variant is not None
        self.write_early_lines(codec.write_part(document, self.early_variant), count)

    def finish_early(self, header: Workload) -> bool:
        # (a preceding job met before its line is a dependency the early lines lack)
        if not self.early_begun() or self.early_variant != self.variant \
                or self.unknown_in_file:
            return False
        self.close_early()
        return True


_CHANGED = "changed"
"""``GwfTarget.losses``' forms ``(_CHANGED, variant)`` (``SwfTarget.losses``': the form
itself): the value paths a chunk's normal form (in that variant) changes."""

_VALUE_PATHS = frozenset({
    "task.submit_time_s", "task.runtime_s", "task.requested_time_s", "task.request.cores",
    "task.request.memory_mb", "task.user", "task.group", "task.dependencies",
    "task.dependencies.multiple", "task.status", "task.wait_time_s", "task.used_memory_mb",
    "task.cpu_time_s", "task.application", "task.queue", "task.partition",
    "task.think_time_s"})
"""The task fields whose values GWF's and SWF's normal forms may change where they hold
them
(``codec._Normalizer``), which a chunk's losses count for the file (``GwfTarget.losses``,
``SwfTarget.losses``)."""


def _changing(paths: frozenset[str]) -> Callable[[Document], frozenset[str]]:
    """A ``normal_form_losses`` by which the normal form changes ``paths`` of any document."""
    return lambda _: paths


def _restored(document: Document, earlier: dict[int, list[tuple[int, Any]]]) -> Document:
    """``document`` whose tasks (by row) depend again on the tasks ``earlier`` gives, each
    at its place (what ``Source.cross_chunk`` took out)."""
    from dataclasses import replace

    from dcx.core.columns import JobRows, columns_of

    workload = document.workload
    if not earlier or workload is None:
        return document
    columns = columns_of(workload)
    if columns is not None:
        import numpy as np

        offsets, ids = columns.dependency_offsets, columns.dependency_ids
        counts = np.diff(offsets)
        pieces = []
        at = 0
        for row in sorted(earlier):
            pieces.append(ids[offsets[at]:offsets[row]])
            full = _inserted(ids[offsets[row]:offsets[row + 1]].tolist(), earlier[row])
            pieces.append(np.array(full, dtype=ids.dtype))
            counts[row] = len(full)
            at = row + 1
        pieces.append(ids[offsets[at]:])
        restored = replace(columns, dependency_ids=np.concatenate(pieces),
                           dependency_offsets=np.concatenate(([0], np.cumsum(counts))
                                                             ).astype(np.int64))
        return replace(document, workload=replace(workload, jobs=JobRows(restored)))
    row = 0
    jobs = []
    for job in workload.jobs:
        tasks = []
        for task in job.tasks:
            if row in earlier:
                task = replace(task, dependencies=tuple(_inserted(task.dependencies,
                                                                  earlier[row])))
            tasks.append(task)
            row += 1
        jobs.append(replace(job, tasks=tuple(tasks)))
    return replace(document, workload=replace(workload, jobs=tuple(jobs)))


class _Elsewhere:
    """A target of a module that imports this one (``stream_targets_json``), imported when
    first used."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def loaded(self) -> type[Target]:
        import importlib

        kind: type[Target] = getattr(importlib.import_module(self.module), self.name)
        return kind

    @property
    def sources(self) -> frozenset[str]:
        return self.loaded().sources

    def __call__(self, source: Source, reopenable: bool) -> Target:
        return self.loaded()(source, reopenable)


TARGETS: dict[str, type[Target] | _Elsewhere] = {
    "parquet": ParquetTarget, "swf": SwfTarget, "gwf": GwfTarget,
    "batsim": _Elsewhere("dcx.converters.stream_targets_json", "BatsimTarget"),
    "osp-workload": _Elsewhere("dcx.converters.stream_targets_json", "OspWorkloadTarget"),
    "opendc-workload": _Elsewhere("dcx.converters.stream_targets_opendc",
                                  "OpendcWorkloadTarget")}


def with_header_losses(target: Target, losses: tuple[Loss, ...], not_lost: frozenset[str]
                       ) -> tuple[Loss, ...]:
    """``Target.reported`` of a target whose chunks count value paths in every chunk:
    ``losses`` without the value paths ``not_lost`` (no chunk's normal form changes a value
    of them), and with the workload's own fields as the header the whole input gives loses
    them (each chunk has the header lines it holds; the whole file one workload of them
    all)."""
    from dataclasses import replace

    from dcx.converters.losses import conversion_losses

    header = target.source.header(replace(target.spec, normal_form=None))
    of_header = conversion_losses(Document(workload=replace(header, jobs=())), target.spec)
    kept = [loss for loss in losses if loss.field not in not_lost
            and not loss.field.startswith("workload.")]
    order = {path: index for index, path in enumerate(FIELDS)}
    return tuple(sorted((*kept, *(loss for loss in of_header
                                  if loss.field.startswith("workload."))),
                        key=lambda loss: order[loss.field]))


@contextlib.contextmanager
def binary(sink: Any) -> Iterator[Any]:
    """``sink`` (a path or an open binary stream) as an open binary stream."""
    if isinstance(sink, str):
        with open(sink, "wb") as stream:
            yield stream
    else:
        yield sink


def invalid_output(name: str, problems: Sequence[Diagnostic]) -> Diagnostic:
    reason = problems[0].render() if problems else "it does not read back"
    return error(f"internal error: dcx wrote {name} output that {name} does not accept "
                 f"({reason})", "convert.invalid-output")


@dataclass
class ChunkWork:
    """What one chunk's document becomes (``chunk_work``): in this process, or on a Dask
    worker, whence it goes back to the engine, which sums the losses in chunk order."""

    losses: dict[Any, tuple[Loss, ...]] | None = None
    """Its losses (pointers in the chunk) in each form the output may take
    (``Target.losses``), when measured."""
    ends: dict[Any, tuple[bool, bool, int]] = field(default_factory=dict)
    """Its ``cut_ends`` in each of those forms, when measured."""
    part: Any = None
    """The target's part, when made."""
    problem: str | None = None
    """Why it cannot be converted on its own (``NotStreamable``), if it cannot."""
    measured: bool = False
    made: bool = False
    """What it was asked for (``chunk_work``'s ``measure`` and ``make``)."""


def chunk_work(source: Source, target: Target, document: Document | None,
               problem: str | None, later: list[Any], measure: bool, make: bool) -> ChunkWork:
    """The chunk's document without what the source takes out of it (dependencies on tasks
    of other chunks), its losses (``measure``) and the target's part (``make``); stopped at
    the first step that finds it cannot be converted on its own."""
    work = ChunkWork(measured=measure, made=make)
    try:
        if problem is not None:
            raise NotStreamable(problem)
        assert document is not None
        document, earlier = (source.cross_chunk(document, later)
                             if target.dependencies_across
                             else (source.own_chunk(document), {}))
        if measure:
            work.losses = target.losses(document, earlier)
            work.ends = {form: target.cut_ends(document, any(loss.field == "job"
                                                             for loss in losses))
                         for form, losses in work.losses.items()}
        unstreamable = source.unstreamable(document, target.spec)
        if unstreamable is not None:
            raise NotStreamable(unstreamable)
        if make:
            work.part = target.part(document, earlier)
    except NotStreamable as exc:
        work.problem = str(exc)
    return work
