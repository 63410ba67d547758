"""Parquet's stream target (``FORMAT.stream_target``): each chunk's document a row group, all
with one Arrow schema (the columns any chunk has, in the order they first appear; an extras
column integer in one chunk and not in another a double), the metadata in the footer once
the input is read. See ``dcx.converters.stream_convert``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from dcx.core.model import Document, Workload
from dcx.core.streams import PRECEDING_KEY, NotStreamable, Source, Target, inserted


def _with_dependencies(table: Any, earlier: dict[int, list[tuple[int, Any]]]) -> Any:
    """``table`` whose rows in ``earlier`` also depend on the tasks given there, each put
    back at its place in the row's list."""
    import pyarrow as pa

    position = table.schema.get_field_index("dependencies")
    kind = table.schema.field(position).type
    lists = table.column(position).to_pylist()
    for row, insertions in earlier.items():
        lists[row] = inserted(lists[row], insertions)
    try:
        column = pa.array(lists, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise NotStreamable("a dependency's id is not of its chunk's kind") from None
    return table.set_column(position, table.schema.field(position), column)


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


class ParquetTarget(Target):
    reads_back = "parts"

    def __init__(self, source: Source, reopenable: bool) -> None:
        from dcx.formats import parquet

        self.spec = parquet.FORMAT
        self.dependencies_across = True
        self.observes = True
        self.plan = _Schema(not reopenable, source.pipe_extras())
        self.preceding_unknown = source.preceding_as_extras
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

        from dcx.formats import parquet

        writer = None
        rows = 0
        try:
            for table in parts:
                if writer is None:
                    schema = self.plan.schema(table)
                    writer = self.files.parquet_writer(
                        sink, schema, store_schema=False, **parquet.codec.writer_options(schema))
                writer.write_table(_conformed(table, schema), row_group_size=table.num_rows)
                rows += table.num_rows
            workload = at_end()
            if writer is None:
                schema = self.plan.schema(parquet.codec.rows_of(Workload()))
                writer = self.files.parquet_writer(
                    sink, schema, store_schema=False, **parquet.codec.writer_options(schema))
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
            self.early_writer = self.files.parquet_writer(
                self.early_path, schema, store_schema=False,
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
