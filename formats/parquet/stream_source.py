"""formats/parquet/stream_source.py (moved here whole; its imports follow in the next commit)."""

from __future__ import annotations


class ParquetSource(Source):
    """A Parquet file's row groups (``chunks`` gives the open file, once per reading): each
    checked by ``formats.parquet.stream.check_part`` and merged by its ``finish`` (the
    diagnostics of ``dcx validate``'s part reader, which are the whole reader's), and read
    into its document by ``read_part`` (the workload's header in the first one's), its
    dependencies on tasks of other row groups kept. Those are taken out and put back as
    GWF's are; to SWF, which holds one preceding job per task, such a dependency is the
    preceding job's extras value the writer writes as it writes a dependency, and a task
    with more than one dependency, one of them in another row group, stops the conversion.
    A job whose rows continue in the next row group is read with it (each document holds
    whole jobs)."""

    def __init__(self) -> None:
        import numpy as np

        from dcx.formats import parquet

        self.np = np
        self.spec = parquet.FORMAT
        self.checked = None
        self.found: Any = None
        self.header_read = Workload()

    def reads(self, chunks: Iterable[Any], check: bool) -> Iterator[Chunk]:
        for opened in chunks:
            yield from self._groups(opened, check)

    def _groups(self, opened: Any, check: bool) -> Iterator[Chunk]:
        from dcx.core.declaration import ChunkedRead
        from dcx.formats.parquet import stream

        parts, problems = stream.open_parts(opened)
        if parts is None:
            self.found = ChunkedRead(problems)
            return
        findings: list[Any] = []
        jobs, broken, carried = 0, False, None
        groups = len(parts.row_counts)
        for index in range(groups):
            if check:
                found = stream.check_part(opened, parts, index)
                if isinstance(found, Diagnostic):
                    self.found = ChunkedRead((found,))
                    return
                findings.append(found)
                broken = broken or self.stops_reading(found)
            if broken:
                continue  # an invalid file: finish says why
            # the header goes with the first document that has jobs (its losses once)
            read, carried = stream.read_part(opened, index, not jobs, carried,
                                             last=index == groups - 1)
            if read.document is None:
                broken = True
                continue
            workload = read.document.workload or Workload()
            count = len(_columns(workload).job_ids)
            if count and not jobs:
                from dataclasses import replace

                self.header_read = replace(workload, jobs=())
            if count:
                yield Chunk(read, 1, jobs)
                jobs += count
        if check:
            self.found = stream.finish(parts, findings,
                                       lambda index: stream.reread_dependencies(opened, index))

    @staticmethod
    def stops_reading(found: Any) -> bool:
        """Whether a row group's findings make the file invalid where its rows are read (a
        null, NaN, text that is not JSON): the row groups from there on are only checked."""
        return bool(found.nulls or found.null_dependencies or found.nan or found.extras_json
                    or found.null_feature is not None)

    def verdict(self) -> Any:
        return self.found

    def jobs(self, verdict: Any, rows: int) -> int:
        return int(verdict.jobs or 0)

    def _outside(self, columns: Any) -> Any:
        """Whether each dependency names a task of another row group."""
        np = self.np
        needed = columns.dependency_ids
        if needed.dtype.kind == "O" or columns.ids.dtype.kind == "O":
            own = set(columns.ids.tolist())
            return np.array([value not in own for value in needed.tolist()], dtype=bool)
        return ~np.isin(needed, columns.ids)

    def cross_chunk(self, document: Document, later: list[Any]
                    ) -> tuple[Document, dict[int, list[tuple[int, Any]]]]:


        np = self.np
        workload = document.workload
        columns = _columns(workload) if workload is not None else None
        if workload is None or columns is None or not len(columns.dependency_ids):
            return document, {}
        return _columns_taken_out(document, workload, columns, self._outside(columns), np)

    def own_chunk(self, document: Document) -> Document:
        """To SWF: each dependency on a task of another row group as the preceding job's
        extras value (see the class docstring)."""
        return _as_preceding(document, self._outside, "row group")

    def unstreamable(self, document: Document, target: FormatDeclaration) -> str | None:
        lost = _normal_form_losses(target, document)
        if "task.id" in lost or "job" in lost:
            return (f"ids that {target.name} renumbers (the whole file numbers them all "
                    "together)")
        return None

    def header(self, spec: FormatDeclaration) -> Workload:
        """The workload's header (the file's metadata), in ``spec``'s normal form."""
        document = Document(workload=self.header_read)
        if spec.normal_form is not None:
            document = spec.normal_form(document)
        return document.workload or Workload()
