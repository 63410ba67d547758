"""The ``dcx`` command line: validate, convert, formats, info, schedule.

Exit codes: 0 valid, 1 invalid input, 2 usage or internal error (never an error count).
Human output is one line per diagnostic, ``file:line:col: severity: pointer: message``;
``--output json`` prints exactly one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from dcx import __version__
from dcx.converters.registry import BY_NAME, FAMILIES, FORMATS, NAMES, claims
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Severity, error, has_errors
from dcx.core.limits import LIMITS

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or unusable files: exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit 2 with usage; keep that
        self.print_usage(sys.stderr)
        print(f"dcx: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


FORMAT_NAMES = list(NAMES)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dcx",
        description="Convert, validate and schedule datacenter descriptions and workloads. "
        f"Formats: {', '.join(FORMAT_NAMES)}.",
        epilog="Exit codes: 0 valid, 1 invalid input, 2 usage or internal error.",
    )
    parser.add_argument("--version", action="version", version=f"dcx {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    validate = commands.add_parser(
        "validate", help="validate files against dcx's schemas and semantic checks",
        description="Validate each FILE: its format is sniffed from its content (--format "
        "overrides), then it is checked against dcx's JSON Schema or XSD and the rules a "
        "schema cannot express.")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.add_argument("--format", choices=FORMAT_NAMES, help="read every FILE as this format")
    validate.add_argument("--family", choices=FAMILIES, action="append",
                          help="only check files of this format family (repeatable); "
                          "others are skipped")
    validate.add_argument("--hook", action="store_true",
                          help="pre-commit mode: silently skip files that are not a dcx format")
    validate.add_argument("--strict", action="store_true", help="treat warnings as errors")
    _output_option(validate)

    convert = commands.add_parser(
        "convert", help="convert a file to another format through the dcx model",
        description="Convert INPUT to OUTPUT. The input format is sniffed (--from overrides); "
        "the output format comes from --to or OUTPUT's extension. What the target cannot hold "
        "is reported as warnings; --strict makes that an error and writes nothing. The output "
        "is written atomically and only after it validates.")
    convert.add_argument("input", metavar="INPUT")
    convert.add_argument("output", metavar="OUTPUT")
    convert.add_argument("--from", dest="source", choices=FORMAT_NAMES, help="input format")
    convert.add_argument("--to", dest="target", choices=FORMAT_NAMES, help="output format")
    convert.add_argument("--strict", action="store_true",
                         help="fail (exit 1, write nothing) if the target cannot hold everything")
    _output_option(convert)

    formats = commands.add_parser(
        "formats", help="list formats: what each reads, writes and cannot hold",
        description="List every format dcx knows, with its extensions, schema and what it "
        "can hold. --matrix prints, for every ordered pair, what the target cannot hold.")
    formats.add_argument("--matrix", action="store_true", help="print the loss matrix")
    _output_option(formats)

    info = commands.add_parser("info", help="show the detected format and counts of a file",
                               description="Detect FILE's format and print what it holds.")
    info.add_argument("file", metavar="FILE")
    info.add_argument("--format", choices=FORMAT_NAMES, help="read FILE as this format")
    _output_option(info)

    from dcx.scheduler import cli as scheduler_cli  # light: imports the engine only in run()

    scheduler_cli.add_parser(commands)
    return parser


def _output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", dest="output_mode", choices=["text", "json"], default="text",
                        help="text: one line per diagnostic; json: one JSON object")


def _protect_file_names(argv: list[str]) -> list[str]:
    """pre-commit passes repository paths after the options; a file named ``-x.json`` would
    be taken for an option, so existing files that look like options get a ``./`` prefix."""
    if not argv or argv[0] != "validate":
        return argv
    return [f"./{arg}" if arg.startswith("-") and index and os.path.isfile(arg) else arg
            for index, arg in enumerate(argv)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_protect_file_names(list(sys.argv[1:] if argv is None else argv)))
    try:
        handler = {"validate": cmd_validate, "convert": cmd_convert, "formats": cmd_formats,
                   "info": cmd_info}.get(args.command)
        if handler is None:
            from dcx.scheduler import cli as scheduler_cli

            code: int = scheduler_cli.run(args)
            return code
        return handler(args)
    except UsageError as exc:
        print(f"dcx: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_USAGE
    except Exception as exc:  # a bug in dcx: say so in one line, never a traceback
        print(f"dcx: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if os.environ.get("DCX_DEBUG"):
            raise
        return EXIT_USAGE


# ------------------------------------------------------------------------------ helpers


def read_input(path: str) -> tuple[bytes, Diagnostic | None]:
    """The file's bytes, or an ``input.too-large`` error (located at ``path``) without
    reading a file over the limit. Missing or unreadable files are usage errors."""
    try:
        size = os.stat(path).st_size
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory")
        if size > LIMITS.max_input_bytes:
            return b"", error(f"file is {size:,} bytes; the limit is "
                              f"{LIMITS.max_input_bytes:,}", "input.too-large").at(path)
        with open(path, "rb") as stream:
            # size + 1, not the limit: a 500 MB address-space cap must hold
            return stream.read(size + 1), None
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None


def _file_entry(
    path: str, spec_name: str | None, diagnostics: Sequence[Diagnostic]
) -> dict[str, Any]:
    return {"path": path, "format": spec_name or "unknown",
            "valid": not has_errors(diagnostics),
            "diagnostics": [d.to_json() for d in diagnostics]}


def _emit(entries: list[dict[str, Any]], diagnostics: list[Diagnostic], output: str) -> None:
    if output == "json":
        print(json.dumps({"files": entries}, ensure_ascii=False))
    else:
        for diagnostic in diagnostics:
            print(diagnostic.render())


def _strict(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    return [replace(d, severity=Severity.ERROR) for d in diagnostics]


# ------------------------------------------------------------------------------ commands


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate each file; ``--hook`` skips files that are no dcx format (pre-commit)."""
    from dcx.converters.convert import read_any
    from dcx.converters.registry import detect, get

    families = set(args.family or ())
    scope = [spec for spec in FORMATS if not families or spec.family in families]

    entries: list[dict[str, Any]] = []
    shown: list[Diagnostic] = []
    failed = False
    for path in args.files:
        data, oversized = read_input(path)
        if oversized is not None:
            entries.append(_file_entry(path, None, [oversized]))
            shown.append(oversized)
            failed = True
            continue
        spec = get(args.format) if args.format else detect(data, path, scope)
        if spec is None and args.hook:
            continue
        if spec is None and families and detect(data, path) is not None:
            continue  # a dcx format of another family: --family skips it
        found_spec, result = read_any(data, path, spec.name if spec else None)
        diagnostics = [d.at(path) for d in result.diagnostics]
        if args.strict:
            diagnostics = _strict(diagnostics)
        failed = failed or has_errors(diagnostics) or (found_spec is not None and
                                                       result.document is None)
        entries.append(_file_entry(path, found_spec.name if found_spec else None, diagnostics))
        shown += diagnostics
    _emit(entries, shown, args.output_mode)
    return EXIT_INVALID if failed else EXIT_OK


def _target_for(args: argparse.Namespace,
                source: FormatDeclaration | None) -> FormatDeclaration:
    if args.target:
        return BY_NAME[args.target]
    candidates = claims(args.output)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise UsageError(f"{args.output}: cannot tell the output format from the extension; "
                         "say --to FORMAT")
    if source is not None:
        if source in candidates:
            return source
        same_kind = [c for c in candidates
                     if c.kind == source.kind or "both" in (c.kind, source.kind)]
        if len(same_kind) == 1:
            return same_kind[0]
    names = ", ".join(c.name for c in candidates)
    raise UsageError(f"{args.output}: the extension fits several formats ({names}); "
                     "say --to FORMAT")


def cmd_convert(args: argparse.Namespace) -> int:
    from dcx.converters.atomic import write_atomic
    from dcx.converters.convert import convert
    from dcx.converters.registry import detect

    data, oversized = read_input(args.input)
    if oversized is not None:
        _emit([_file_entry(args.input, None, [oversized])], [oversized], args.output_mode)
        return EXIT_INVALID
    source = BY_NAME[args.source] if args.source else detect(data, args.input)
    target = _target_for(args, source)
    result = convert(data, target.name, args.input, source.name if source else None,
                     strict=args.strict)
    read_diagnostics = [d.at(args.input) for d in (result.read.diagnostics if result.read else ())]
    conversion = [d.at(args.input) for d in result.diagnostics]
    entries = [_file_entry(args.input, result.source.name if result.source else None,
                           read_diagnostics + conversion)]
    if result.ok:
        try:
            write_atomic(args.output, result.data)
        except OSError as exc:
            raise UsageError(f"{args.output}: cannot write: {exc.strerror}") from None
        entries.append(_file_entry(args.output, target.name,
                                   [d.at(args.output) for d in result.output_diagnostics]))
    _emit(entries, read_diagnostics + conversion, args.output_mode)
    if result.internal_error:
        return EXIT_USAGE
    return EXIT_OK if result.ok else EXIT_INVALID


def cmd_formats(args: argparse.Namespace) -> int:
    from dcx.core.fields import FIELDS
    from dcx.core.restrict import with_parts

    rows = [{"name": spec.name, "title": spec.title, "family": spec.family,
             "kind": spec.kind, "extensions": list(spec.extensions),
             "schema": spec.schema, "reads": True, "writes": spec.writable,
             "cannot_hold": [path for path in FIELDS if path not in with_parts(spec.holds)],
             "description": spec.description} for spec in FORMATS]
    if args.matrix:
        from dcx.converters.losses import loss_matrix

        cells = loss_matrix()
        if args.output_mode == "json":
            print(json.dumps({"formats": rows, "matrix": [cell.to_json() for cell in cells]}))
        else:
            for cell in cells:
                print(cell.render())
        return EXIT_OK
    if args.output_mode == "json":
        print(json.dumps({"formats": rows}))
        return EXIT_OK
    for row in rows:
        status = "reads, writes" if row["writes"] else "reads"
        print(f"{row['name']:<14} {row['title']} [{', '.join(row['extensions'])}] ({status})")
        print(f"{'':<14} {row['description']}")
        if row["cannot_hold"]:
            print(f"{'':<14} cannot hold: {', '.join(row['cannot_hold'])}")
    return EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    from dcx.converters.convert import read_any

    data, oversized = read_input(args.file)
    if oversized is not None:
        print(oversized.render(), file=sys.stderr)
        return EXIT_INVALID
    spec, result = read_any(data, args.file, args.format)
    summary: dict[str, Any] = {"path": args.file, "format": spec.name if spec else "unknown",
                               "valid": result.ok}
    document = result.document
    if document is not None and document.environment is not None:
        environment = document.environment
        machines = list(environment.machines())
        summary["topology"] = {
            "datacenters": len(environment.datacenters),
            "rooms": sum(len(dc.rooms) for dc in environment.datacenters),
            "racks": sum(1 for _ in environment.racks()),
            "machines": len(machines),
            "cores": sum(m.core_count for m in machines),
            "gpus": sum(m.gpu_count for m in machines),
            "memory_mb": sum(m.memory_mb for m in machines),
            "events": len(environment.events),
        }
    if document is not None and document.workload is not None:
        workload = document.workload
        tasks = list(workload.tasks())
        summary["workload"] = {
            "jobs": len(workload.jobs), "tasks": len(tasks),
            "dependencies": sum(len(t.dependencies) for t in tasks),
            "annotations": len(workload.annotations),
        }
    errors = sum(d.is_error for d in result.diagnostics)
    summary["errors"] = errors
    summary["warnings"] = len(result.diagnostics) - errors
    if args.output_mode == "json":
        print(json.dumps(summary))
    else:
        for diagnostic in result.diagnostics:
            print(diagnostic.at(args.file).render())
        print(f"{args.file}: {summary['format']}, {'valid' if result.ok else 'invalid'}")
        for section in ("topology", "workload"):
            for key, value in summary.get(section, {}).items():
                print(f"  {key}: {value:,}" if isinstance(value, int) else f"  {key}: {value}")
    return EXIT_OK if result.ok else EXIT_INVALID


if __name__ == "__main__":
    raise SystemExit(main())
