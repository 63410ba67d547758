"""The ``nox -s convert`` pipeline: every input to every format that can hold it.

``python -m dcx.converters.pipeline --out build/converted examples [PATH...]``

Each input (the files a dcx format claims under the given folders, recursively, and the
folders of a format stored as one, plus files given directly) is read once in the format its
content shows; the document is written in every installed, writable
format that holds a part of it (its topology, its workload); every output is read back by the
target's reader, which validates it against our schema. Outputs go to
``<out>/<input>/<format><ext>`` (a folder ``<out>/<input>/<format>`` for a format stored as
one); ``<out>/report.md`` and ``<out>/report.json`` hold the
input × target matrix (ok, lossy with how many fields are lost, impossible; the fields are
listed below it) and the validation verdict of every file. Exit status: 0 when every output
is valid, 1 when any is not (or a writer failed), 2 for usage errors. Inputs whose content no
dcx format recognises are listed and skipped; inputs that do not read are listed with their
diagnostics.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from dcx.converters.atomic import write_atomic
from dcx.converters.convert import convert_document
from dcx.converters.folders import FolderError, folder_format, read_folder, write_folder
from dcx.converters.progress import Progress
from dcx.converters.registry import FORMATS, claims, detect
from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss, error, has_errors
from dcx.core.limits import LIMITS
from dcx.core.model import Document

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2

CellStatus = Literal["ok", "lossy", "impossible", "refused", "failed"]
IMPOSSIBLE = ("convert.nothing-in-common", "convert.nothing-held", "convert.unwritable",
              "convert.empty-input")
"""Refusals that say the pair cannot carry this input at all."""

CODES = (
    Code("pipeline.internal-error", "error",
         "Internal error: a reader or writer raised during a batch run; that file or "
         "conversion fails and the run goes on."),
)


@dataclass(frozen=True)
class Cell:
    target: str
    status: CellStatus
    lost: tuple[Loss, ...] = ()
    output: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    reason: str = ""

    @property
    def failed(self) -> bool:
        """dcx failed (wrote what it does not accept, or raised): never the input's fault."""
        return self.status == "failed"

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "status": self.status,
                "lost": [{"field": loss.field, "detail": loss.detail}
                         for loss in self.lost],
                "output": self.output, "valid": None if self.output is None else not self.failed,
                "diagnostics": [_diagnostic_json(d) for d in self.diagnostics],
                "reason": self.reason}


@dataclass
class InputResult:
    path: str
    name: str
    """Folder name under ``<out>`` for this input's outputs."""
    format: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    cells: list[Cell] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        return self.format is not None and not has_errors(self.diagnostics)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "format": self.format,
                "valid": self.readable,
                "diagnostics": [_diagnostic_json(d) for d in self.diagnostics],
                "conversions": [cell.to_json() for cell in self.cells]}


def _diagnostic_json(diagnostic: Diagnostic) -> dict[str, Any]:
    return {"code": diagnostic.code, **diagnostic.to_json()}


# ------------------------------------------------------------------------------ inputs


def format_files(folder: str) -> list[str]:
    """The inputs under ``folder``, recursively, in a stable order: every file whose extension
    a dcx format claims, and every folder of a format stored as one (an OpenDC workload
    folder: one input, its members not looked at again). Hidden files and folders
    (``.git``, editor swap files) and files no format claims (``notes.txt``, an experiment's
    YAML) are not inputs."""
    found: list[str] = []
    for parent, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in list(folders):
            if folder_format(os.path.join(parent, name)) is not None:
                folders.remove(name)  # one input, the folder
                found.append(os.path.join(parent, name))
        found += [os.path.join(parent, name) for name in files
                  if not name.startswith(".") and claims(name)]
    return sorted(found, key=lambda path: Path(path).parts)


def collect_inputs(paths: Sequence[str]) -> list[tuple[str, str]]:
    """``(path, output folder name)`` for every input under ``paths`` (``format_files``) and
    every file given directly, in a stable order.

    A file inside a folder argument is named by its path below that folder with ``/`` turned
    into ``__`` (``sss__cluster.xml``); a file argument by its base name. Clashes get ``~2``…
    A format stored as a folder (``w/tasks.parquet``) is one input, the folder.
    """
    found: list[tuple[str, str]] = []
    for given in paths:
        root = Path(given)
        if root.is_dir() and folder_format(str(root)) is not None:
            found.append((str(root), root.name))
        elif root.is_dir():
            found += [(path, "__".join(Path(path).relative_to(root).parts))
                      for path in format_files(str(root))]
        elif root.is_file():
            found.append((str(root), root.name))
        else:
            raise FileNotFoundError(given)
    used: dict[str, int] = {}
    named = []
    for path, name in found:
        used[name] = used.get(name, 0) + 1
        named.append((path, name if used[name] == 1 else f"{name}~{used[name]}"))
    return named


# ------------------------------------------------------------------------------ converting


def convert_input(path: str, name: str, targets: Sequence[FormatDeclaration],
                  out: Path) -> InputResult:
    result = InputResult(path, name)
    data = _read_bytes(path)
    if data is None:
        return result  # larger than any reader accepts: listed as not a dcx format
    spec = detect(data, path)
    if spec is None:
        return result
    result.format = spec.name
    try:
        read = spec.read(data)
    except Exception as exc:  # a reader must never raise; say so rather than stop the run
        result.diagnostics = (_internal(f"{spec.name} reader raised {type(exc).__name__}: {exc}"),)
        return result
    result.diagnostics = read.diagnostics
    if read.document is None or has_errors(read.diagnostics):
        return result
    for target in targets:
        result.cells.append(convert_cell(read.document, spec, target, out / name))
    return result


def convert_cell(document: Document, source: FormatDeclaration, target: FormatDeclaration,
                 folder: Path) -> Cell:
    """One conversion, exactly as ``dcx convert`` makes it; the output is written only when
    the conversion accepts it."""
    try:
        conversion = convert_document(document, source, target)
    except Exception as exc:  # a writer or reader bug: the cell fails, the run goes on
        return Cell(target.name, "failed",
                    diagnostics=(_internal(f"converting to {target.name} raised "
                                           f"{type(exc).__name__}: {exc}"),))
    if not conversion.ok:
        refusal = next(d for d in conversion.diagnostics if d.is_error)
        if refusal.code in IMPOSSIBLE:
            return Cell(target.name, "impossible", reason=refusal.message)
        return Cell(target.name, "failed" if conversion.internal_error else "refused",
                    conversion.losses, reason=refusal.message,
                    diagnostics=tuple(d for d in conversion.diagnostics if d.is_error))
    if target.members:
        output = folder / target.name
        write_folder(str(output), conversion.data, target)
    else:
        output = folder / f"{target.name}{target.extensions[0]}"
        write_atomic(output, conversion.data)
    return Cell(target.name, "lossy" if conversion.losses else "ok", conversion.losses,
                str(output), tuple(d.at(str(output)) for d in conversion.output_diagnostics))


def _internal(message: str) -> Diagnostic:
    return error(message, "pipeline.internal-error")


def _read_bytes(path: str) -> bytes | None:
    if os.path.isdir(path):
        spec = folder_format(path)
        try:
            return read_folder(path, spec) if spec is not None else None
        except FolderError:
            return None
    if os.path.getsize(path) > LIMITS.max_input_bytes:
        return None
    with open(path, "rb") as stream:
        return stream.read()


# ------------------------------------------------------------------------------ reports


_MARK = {"ok": "ok", "lossy": "lossy", "impossible": "–", "refused": "refused",
         "failed": "FAILED"}
"""How the matrix shows each status (impossible pairs, the most, as a dash)."""


def report_json(results: Sequence[InputResult],
                targets: Sequence[FormatDeclaration]) -> dict[str, Any]:
    cells = [cell for result in results for cell in result.cells]
    return {
        "formats": [{"name": t.name, "writable": t.writable} for t in targets],
        "inputs": [result.to_json() for result in results],
        "summary": {
            "inputs": len(results),
            "unrecognised": sum(result.format is None for result in results),
            "unreadable": sum(result.format is not None and not result.readable
                              for result in results),
            "outputs": sum(cell.output is not None for cell in cells),
            "invalid_outputs": sum(cell.failed for cell in cells),
            **{status: sum(cell.status == status for cell in cells) for status in _MARK},
        },
    }


def report_markdown(results: Sequence[InputResult], targets: Sequence[FormatDeclaration]) -> str:
    """The report a person reads: the verdict, a matrix of short cells (``lossy (31)``)
    that fits a screen, then the fields each lossy conversion drops and every file's
    validation verdict, as lists below it."""
    writable = [t.name for t in targets if t.writable]
    lines = ["# dcx conversion report", ""]
    summary = report_json(results, targets)["summary"]
    lines.append(f"{summary['inputs']} inputs, {summary['outputs']} outputs written, each "
                 f"read back accepted; {summary['refused']} conversions refused with a reason, "
                 f"{summary['failed']} failed.")
    missing = [t.name for t in targets if not t.writable]
    if missing:
        lines += ["", f"Formats dcx reads but does not write: {', '.join(missing)}."]
    lines += ["", "## Matrix", "",
              textwrap.fill("Rows are inputs (with their format), columns target formats: "
                            "`ok` (nothing lost), `lossy (N)` (N model fields the target "
                            "cannot hold, listed below), "
                            f"`{_MARK['impossible']}` (the pair shares no part: nothing to "
                            "write), `refused` (nothing written, for the reason given "
                            "below), `FAILED` (dcx wrote what it does not accept: a bug).",
                            width=100),
              "", "| input | format | " + " | ".join(writable) + " |",
              "| --- | --- | " + " | ".join("---" for _ in writable) + " |"]
    readable = [result for result in results if result.readable]
    for result in readable:
        by_target = {cell.target: cell for cell in result.cells}
        row = [_cell_text(by_target.get(name)) for name in writable]
        lines.append(f"| `{result.path}` | {result.format} | " + " | ".join(row) + " |")
    lines += _lost_fields(readable)
    lines += ["", "## Validation of every file", ""]
    for result in results:
        verdict = ("not a dcx format (skipped)" if result.format is None
                   else "valid" if result.readable else "INVALID")
        lines.append(f"- `{result.path}` ({result.format or 'unknown'}): {verdict}")
        lines += [f"    - {d.at(result.path).render()}" for d in result.diagnostics if d.is_error]
        for cell in result.cells:
            if cell.status == "impossible":
                continue
            where = f"`{cell.output}`" if cell.output else f"{cell.target} (no output)"
            warnings = sum(not d.is_error for d in cell.diagnostics)
            verdict = ("FAILED: dcx wrote what it does not accept; nothing written"
                       if cell.failed
                       else f"refused, nothing written: {cell.reason}" if cell.output is None
                       else "valid, accepted by dcx validate --strict" if not warnings
                       else f"valid; dcx validate --strict rejects it ({warnings} warning"
                       f"{'s' if warnings != 1 else ''})")
            lines.append(f"    - {where}: {verdict}")
            lines += [f"        - {d.render()}" for d in cell.diagnostics
                      if d.is_error or cell.output is not None]
    return "\n".join(lines) + "\n"


def _lost_fields(results: Sequence[InputResult]) -> list[str]:
    """Below the matrix: per input, the model fields each conversion cannot hold (named as
    on the loss matrix page)."""
    lines = ["", "## Fields each conversion cannot hold", ""]
    for result in results:
        lossy = [cell for cell in result.cells if cell.lost]
        if not lossy:
            continue
        lines.append(f"- `{result.path}` ({result.format})")
        lines += [textwrap.fill(f"{cell.target} ({len(cell.lost)}): "
                                + ", ".join(loss.field for loss in cell.lost),
                                width=100, initial_indent="    - ", subsequent_indent=" " * 6,
                                break_on_hyphens=False)
                  for cell in lossy]
    return lines


def _cell_text(cell: Cell | None) -> str:
    if cell is None:
        return ""
    text = _MARK[cell.status]
    return f"{text} ({len(cell.lost)})" if cell.lost else text


# ------------------------------------------------------------------------------ entry point


def run(paths: Sequence[str], out: Path, formats: Sequence[FormatDeclaration] = FORMATS,
        stream: TextIO = sys.stderr) -> tuple[int, dict[str, Any]]:
    """Convert, write outputs and reports; the exit status and the JSON report."""
    inputs = collect_inputs(paths)
    targets = [spec for spec in formats if spec.writable]
    results = []
    with Progress(len(inputs), "converting", stream=stream) as progress:
        for path, name in inputs:
            progress.describe(path)
            results.append(convert_input(path, name, targets, out))
            progress.advance()
    out.mkdir(parents=True, exist_ok=True)
    report = report_json(results, targets)
    write_atomic(out / "report.json",
                 (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode())
    write_atomic(out / "report.md", report_markdown(results, targets).encode())
    failed = [(result, cell) for result in results for cell in result.cells if cell.failed]
    for result, cell in failed:
        errors = [d for d in cell.diagnostics if d.is_error]
        first = errors[0].render() if errors else cell.status
        print(f"{result.path} -> {cell.target}: {_MARK[cell.status]}: {first}", file=stream)
    return (EXIT_INVALID if failed else EXIT_OK), report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dcx.converters.pipeline",
        description="Convert every input to every format that can hold it and validate every "
        "output; writes <out>/<input>/<format><ext> and <out>/report.{md,json}.")
    parser.add_argument("--out", required=True, help="output folder (build/converted)")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders")
    args = parser.parse_args(argv)
    try:
        code, report = run(args.paths, Path(args.out))
    except FileNotFoundError as exc:
        print(f"pipeline: error: {exc}: no such file or folder", file=sys.stderr)
        return EXIT_USAGE
    summary = report["summary"]
    print(f"{summary['inputs']} inputs, {summary['outputs']} outputs "
          f"({summary['ok']} ok, {summary['lossy']} lossy), {summary['impossible']} pairs "
          f"impossible, {summary['refused']} refused, {summary['failed']} failed; "
          f"report: {Path(args.out) / 'report.md'}",
          file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
