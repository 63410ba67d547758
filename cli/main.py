# PYTHON_ARGCOMPLETE_OK
"""The ``dcx`` command line: validate, convert, formats, info, schedule, experiment.

Exit codes: 0 valid, 1 invalid input, 2 usage or internal error (never an error count).
Human output is one line per diagnostic, ``file:line:col: severity: pointer: message``;
``--output json`` prints exactly one JSON object.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dcx import __version__
from dcx.converters.inputs import (
    UsageError,
    label,
    size_of,
)
from dcx.converters.registry import (
    BY_NAME,
    FAMILIES,
    FORMATS,
    NAMES,
    claims,
    content_kind,
    lookup,
    unknown_format_message,
)
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import Diagnostic, Loss, ReadResult, Severity, has_errors

if TYPE_CHECKING:
    from dcx.converters.fill import Fill
    from dcx.core.model import Document

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit 2 with usage; keep that
        self.print_usage(sys.stderr)
        print(f"dcx: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


FORMAT_NAMES = list(NAMES)
STDOUT_LABEL = "<stdout>"


def format_name(text: str) -> str:
    """An argparse ``type``: a format name in any case (``SSS``), or "did you mean"."""
    spec = lookup(text)
    if spec is None:
        raise argparse.ArgumentTypeError(unknown_format_message(text))
    return spec.name


def family_name(text: str) -> str:
    if text.lower() in FAMILIES:
        return text.lower()
    close = difflib.get_close_matches(text.lower(), FAMILIES, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise argparse.ArgumentTypeError(
        f"unknown family {text!r}{hint}; known families: {', '.join(FAMILIES)}")


def _format_option(parser: argparse.ArgumentParser, *flags: str, dest: str, help: str) -> None:
    option = parser.add_argument(*flags, dest=dest, type=format_name, metavar="FORMAT",
                                 help=f"{help} (any case; one of {', '.join(FORMAT_NAMES)})")
    # no argparse choices (they would refuse SSS); argcomplete reads this attribute instead
    option.completer = lambda **_: FORMAT_NAMES  # type: ignore[attr-defined]


def _verbosity_options(parser: argparse.ArgumentParser, top: bool = False) -> None:
    # On the top parser and on each subcommand, so `dcx -q validate` and `dcx validate -q`
    # both work; a subcommand's SUPPRESS default leaves the top parser's value alone.
    default: Any = 0 if top else argparse.SUPPRESS
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", default=default,
                       help="only errors: no warnings, no summary lines")
    group.add_argument("-v", "--verbose", action="count", default=default,
                       help="more detail: every loss, the format each input was read as")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dcx",
        description="Convert, validate and schedule datacenter descriptions and workloads. "
        f"Formats: {', '.join(FORMAT_NAMES)}. A FILE of '-' is standard input (its format "
        "is read from its content); an OUTPUT of '-' is standard output. Data goes to "
        "stdout, diagnostics and summaries to stderr.",
        epilog="Exit codes: 0 valid, 1 invalid input (or a conversion refused), "
        "2 usage or internal error.")
    parser.add_argument("--version", action="version", version=f"dcx {__version__}")
    _verbosity_options(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    _add_validate(commands)
    _add_convert(commands)
    _add_formats(commands)
    _add_info(commands)

    from dcx.cli import schedule as scheduler_cli  # light: imports the engine only in run()

    _verbosity_options(scheduler_cli.add_parser(commands))
    from dcx.cli import experiment as experiment_cli  # light: Dask and pyarrow load in run()

    experiment_cli.add_parser(commands)
    return parser


def _add_validate(commands: Any) -> None:
    """``dcx validate``: files checked against the schemas and semantic rules."""
    validate = commands.add_parser(
        "validate", help="validate files against dcx's schemas and semantic checks",
        description="Validate each FILE ('-' for stdin): its format is sniffed from its "
        "content (--format overrides), then it is checked against dcx's JSON Schema or XSD "
        "and the rules a schema cannot express. Says what it checked on stderr unless -q. "
        "A FILE that is a folder is validated as the format it holds when it is one (an "
        "OpenDC workload folder), and otherwise stands for every file under it, recursively, "
        "whose extension a dcx format claims, and every such format folder (hidden ones "
        "left out); of those, files that are clearly someone else's (valid JSON or XML no "
        "dcx format recognises, such as package.json) are skipped as with --hook. "
        "An SWF or GWF input from 16 MB (a file, or stdin that outgrows it) is checked in "
        "chunks as it is read, in bounded memory and without the input size limit; a Parquet "
        "file from 16 MB (or stdin that outgrows it, first copied to a temporary file in "
        "TMPDIR, removed after) is checked a row group at a time, with the same diagnostics, "
        "as is a folder of a format stored as one (opendc-workload) whose files total 16 MB "
        "or more, and with --workers or --scheduler-address their row groups are checked as "
        "partitions on a Dask cluster.")
    validate.add_argument("files", nargs="+", metavar="FILE")
    _format_option(validate, "--format", "--from", dest="format",
                   help="read every FILE as this format")
    validate.add_argument("--family", type=family_name, action="append",
                          help="only check files of this format family (repeatable; one of "
                          f"{', '.join(FAMILIES)}); others are skipped")
    validate.add_argument("--hook", action="store_true",
                          help="pre-commit mode: skip files that are clearly not a dcx format "
                          "(valid JSON or XML no dcx format recognises, or content of a kind "
                          "the formats claiming the extension never have); a file whose "
                          "extension a dcx format claims but that is empty, binary or "
                          "malformed fails")
    validate.add_argument("--strict", action="store_true", help="treat warnings as errors")
    _cluster_options(validate, "check")
    _output_option(validate)
    _verbosity_options(validate)


def _add_convert(commands: Any) -> None:
    """``dcx convert``: one file to another format, its losses said."""
    convert = commands.add_parser(
        "convert", help="convert a file to another format through the dcx model",
        description="Convert INPUT to OUTPUT ('-' for stdin or stdout; OUTPUT's folder must "
        "exist: dcx creates no folders). The input format is "
        "sniffed (--from overrides); the output format comes from --to or OUTPUT's "
        "extension. One summary line on stderr says what was written and how many fields "
        "the target cannot hold (--losses lists them); --strict makes any loss an error and "
        "writes nothing. A regular OUTPUT file is replaced atomically, and only after the "
        "output reads back accepted; a device, FIFO or socket is written directly. A "
        "conversion that cannot give an accepted output (the formats share no part, the "
        "target keeps none of the machines or jobs, the writer refuses) exits 1 with one "
        "line saying why and writes nothing. An SWF input to Parquet, SWF or GWF, or a GWF input "
        "to Parquet, GWF or SWF, from 16 MB (a file, or stdin that outgrows it) is converted in "
        "chunks as it is read (a Parquet row group each), in bounded memory and without the "
        "input size limit, as is a Parquet file (not a pipe) from 16 MB to Parquet, SWF or "
        "GWF, a row group at a time; a file output is "
        "still replaced only after it reads back accepted, while stdout gets the chunks as "
        "they are written. Such SWF, GWF and Parquet inputs also convert to Batsim or "
        "osp-workload JSON in chunks (Batsim's jobs wait in a temporary file beside OUTPUT, "
        "or in TMPDIR for stdout, until nb_res, written first, is known), and to an OpenDC "
        "workload folder (opendc-workload: both files written a chunk at a time, the tasks' "
        "children filled in at the end; to stdout the tar archive, its files first made in "
        "TMPDIR); that output is read back whole when it is within the input size limit, "
        "beyond it an OpenDC folder a part at a time and JSON not at all. "
        + _folder_help())
    convert.add_argument("input", metavar="INPUT")
    convert.add_argument("output", metavar="OUTPUT")
    _format_option(convert, "--from", dest="source", help="input format")
    _format_option(convert, "--to", dest="target", help="output format")
    convert.add_argument("--strict", action="store_true",
                         help="fail (exit 1, write nothing) if the target cannot hold everything")
    convert.add_argument("--losses", action="store_true",
                         help="list each field the target cannot hold, with how many values "
                         "and where the first one is: INPUT:line[:col] where the reader can tell, "
                         "and its model pointer (/workload/jobs/0/tasks/3)")
    convert.add_argument("--fill", action="append", default=[], metavar="FIELD=VALUE",
                         help="give a value the target needs and INPUT does not state, put "
                         "into every machine or task that lacks it before the target's "
                         "checks, never over a value INPUT states (repeatable): "
                         "clock-rate=2.4GHz (Hz, kHz, MHz, GHz; each CPU "
                         "without one), gpu-clock-rate=1.4GHz (each GPU without one), "
                         "memory=64GiB (MiB, GiB, TiB; each machine without memory), "
                         "cores=32 (a whole number; each machine without a CPU gets one CPU "
                         "of that many cores), speed=1Gf (flop/s per host in SimGrid's units "
                         "f, kf, Mf, Gf, Tf …; each task without a runtime whose Batsim "
                         "compute profile makes one exact on such hosts: no network traffic, "
                         "no trace replayed), runtime=requested (each task without a runtime "
                         "runs for its requested time, its walltime; after speed); the "
                         "summary says how many machines or tasks each filled. An input "
                         "given a task fill is converted whole (within the input size limit), "
                         "never in chunks")
    convert.add_argument("--workers", type=int, metavar="N",
                         help="convert a Parquet INPUT file from 16 MB with its row groups "
                         "checked, read and converted on a Dask LocalCluster of N worker "
                         "processes, this process writing OUTPUT in order (the same output "
                         "and report; 0, the default: all in this process); other inputs "
                         "are converted as without it")
    convert.add_argument("--scheduler-address", metavar="ADDRESS",
                         help="the same on an existing Dask cluster (tcp://host:8786) whose "
                         "workers see INPUT at the same path; a Parquet pipe from 16 MB, "
                         "which is converted whole in this process, is refused (exit 2)")
    convert.add_argument("--id-map", metavar="FILE",
                         help="also write FILE, a CSV of each task's id as read and the id "
                         "the output gives it, in the order written, for a target that "
                         "numbers tasks itself (swf: integer job numbers); the input is "
                         "then read whole")
    _output_option(convert)
    _verbosity_options(convert)


def _add_formats(commands: Any) -> None:
    """``dcx formats``: the formats, their families and the loss matrix."""
    formats = commands.add_parser(
        "formats", help="list formats: what each reads, writes and cannot hold",
        description="List every format dcx knows, with its extensions, schema and what it "
        "can hold. --matrix prints, for every ordered pair, what the target cannot hold.")
    formats.add_argument("--matrix", action="store_true", help="print the loss matrix")
    _output_option(formats)
    _verbosity_options(formats)


def _add_info(commands: Any) -> None:
    """``dcx info``: the detected format and what a file holds."""
    info = commands.add_parser(
        "info", help="show the detected format and what a file holds",
        description="Detect each FILE's format ('-' for stdin) and print what it holds, "
        "with units; values the file does not give are shown as unknown, and only the levels "
        "(datacenters, rooms, racks) the format has are listed. With --output json, one "
        "JSON object per FILE, a line each. Large inputs are read as validate reads them, "
        "and their jobs, tasks and dependencies counted without building the model: an SWF "
        "or GWF input from 16 MB (a file, or stdin that outgrows it) in chunks as it is read, "
        "in bounded memory and without the input size limit; a Parquet file from 16 MB (or "
        "stdin that outgrows it, first copied to a temporary file in TMPDIR, removed after) "
        "a row group at a time, on a Dask cluster with --workers or --scheduler-address. "
        "Other inputs are read whole. A FILE that is a folder stands for what validate "
        "finds in it: the format it holds (an OpenDC workload folder), or every file under "
        "it, recursively, that a dcx format claims, those clearly someone else's skipped.")
    info.add_argument("files", metavar="FILE", nargs="+")
    _format_option(info, "--format", "--from", dest="format", help="read each FILE as this "
                   "format")
    _cluster_options(info, "read")
    _output_option(info)
    _verbosity_options(info)


def _folder_help() -> str:
    """What --help says about formats stored as a folder (from their declarations)."""
    folders = [spec for spec in FORMATS if spec.members]
    if not folders:
        return ""
    names = ", ".join(f"{spec.name} ({' and '.join(spec.members)})" for spec in folders)
    parted = ", ".join(spec.name for spec in folders if spec.read_parts is not None)
    return (f"Formats stored as a folder ({names}): an INPUT folder holding their files is "
            "read as that format; OUTPUT is written as a folder, its files first in a "
            "temporary folder beside it that is then renamed into place, and an existing "
            "OUTPUT folder is replaced only when it holds nothing but those files; an "
            "OUTPUT of '-' gets them as a tar archive."
            + (f" An INPUT folder ({parted}) whose files total 16 MB or more is read a row "
               "group at a time, as a large Parquet file is, without the input size limit, "
               "and converted in slices of tasks to the formats a large Parquet file "
               "converts to in chunks (in this process, also with --workers)."
               if parted else ""))


def _output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", dest="output_mode", choices=["text", "json"], default="text",
                        help="text: one line per diagnostic on stderr; json: one JSON object "
                        "on stdout")


def _protect_file_names(argv: list[str]) -> list[str]:
    """pre-commit passes repository paths after the options; a file named ``-x.json`` would
    be taken for an option, so existing files that look like options get a ``./`` prefix."""
    if not argv or argv[0] != "validate":
        return argv
    return [f"./{arg}" if arg.startswith("-") and arg != "-" and index and os.path.isfile(arg)
            else arg for index, arg in enumerate(argv)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # a shell asking for completions: only then import it
        _complete(parser)
    args = parser.parse_args(_protect_file_names(list(sys.argv[1:] if argv is None else argv)))
    try:
        handler = {"validate": cmd_validate, "convert": cmd_convert, "formats": cmd_formats,
                   "info": cmd_info}.get(args.command)
        if args.command == "experiment":
            from dcx.cli import experiment as experiment_cli

            status: int = experiment_cli.run(args)
            return status
        if handler is None:
            from dcx.cli import schedule as scheduler_cli

            code: int = scheduler_cli.run(args)
            return code
        return handler(args)
    except UsageError as exc:
        print(f"dcx: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # the reader went away (`dcx convert x - | head`): nothing more to say to it, and
        # Python's own flush at exit must not print a traceback about the closed pipe
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_INVALID
    except KeyboardInterrupt:
        return EXIT_USAGE
    except Exception as exc:  # a bug in dcx: say so in one line, never a traceback
        print(f"dcx: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if os.environ.get("DCX_DEBUG"):
            raise
        return EXIT_USAGE


def _complete(parser: argparse.ArgumentParser) -> None:
    """Tab completion through argcomplete (the ``completion`` extra), which answers the shell
    and exits; without it installed there is nothing to complete with."""
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(parser)


# ------------------------------------------------------------------------------ helpers


def _file_entry(
    path: str, spec_name: str | None, diagnostics: Sequence[Diagnostic]
) -> dict[str, Any]:
    return {"path": path, "format": spec_name or "unknown",
            "valid": not has_errors(diagnostics),
            "diagnostics": [d.to_json() for d in diagnostics]}


def _quiet(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "quiet", False))


def _verbose(args: argparse.Namespace) -> int:
    return int(getattr(args, "verbose", 0) or 0)


def _shown(diagnostics: Sequence[Diagnostic], args: argparse.Namespace) -> list[Diagnostic]:
    """What the text output shows: everything, or only the errors with ``-q``."""
    return [d for d in diagnostics if d.is_error or not _quiet(args)]


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def _strict(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    return [replace(d, severity=Severity.ERROR) for d in diagnostics]


def _counts(document: Any, spec: FormatDeclaration | None = None) -> str:
    """``4 machines, 2 jobs``: what a document describes, for summary lines."""
    from dcx.core.groups import machine_count
    from dcx.core.restrict import with_parts

    parts = []
    if document is not None and document.environment is not None and (
            spec is None or "environment" in with_parts(spec.holds)):
        parts.append(_plural(machine_count(document.environment), "machine"))
    if document is not None and document.workload is not None and (
            spec is None or "workload" in with_parts(spec.holds)):
        parts.append(_plural(len(document.workload.jobs), "job"))
    return ", ".join(parts) or "nothing"


def _left_out(losses: Sequence[Loss]) -> str:
    """`` (2 tasks left out)`` when the target leaves tasks out: the summary line says so
    even without ``--losses``, whose ``task`` line says which and why."""
    left = next((loss for loss in losses if loss.field == "task"), None)
    if left is None:
        return ""
    count = f"{left.count:,} " if left.count is not None else ""
    return f" ({count}task{'' if left.count == 1 else 's'} left out)"


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


# ------------------------------------------------------------------------------ hook mode


def hook_skips(data: bytes, path: str, scope: Sequence[FormatDeclaration]) -> bool:
    """Whether pre-commit mode skips a file no format in ``scope`` recognised.

    A file is skipped only when it is clearly someone else's:

    - no format in scope claims its extension (pre-commit's ``files`` pattern lets none
      through; a file named on the command line might be), or
    - its content is of a kind none of the formats claiming the extension ever has (an R
      script in ``analysis.R``, where the claiming Flux R is JSON), or
    - it is well-formed JSON or XML that no dcx format recognises (``package.json``,
      ``pom.xml``), or
    - it is text, or empty, in an extension every claiming format shares with other tools
      (``nginx.conf``, where Slurm's ``slurm.conf`` is also a ``.conf``).

    Everything else whose extension a dcx format claims fails: an empty file, binary
    content, malformed JSON or XML (``{"rooms": [}``, a truncated ``.xml``), and any text
    in an extension only text formats claim (garbage in a ``.gwf``).
    """
    claimed = [spec for spec in claims(path) if spec in scope]
    if not claimed:
        return True
    shared = all(path.endswith(tuple(spec.shared_extensions)) for spec in claimed)
    if not data.strip(b" \t\r\n\xef\xbb\xbf"):
        return shared
    kind = content_kind(data)
    if not any(kind in spec.content for spec in claimed):
        return not _looks_binary(data)
    if kind == "text" and shared:
        return not _looks_binary(data)
    return kind in ("json", "xml") and not _malformed(data, kind)


def _looks_binary(data: bytes) -> bool:
    head = data[:1024]
    return b"\x00" in head or head[:2] == b"\x1f\x8b"


def _malformed(data: bytes, kind: str) -> list[Diagnostic]:
    """Why ``data`` is not well-formed JSON or XML (nothing when it is)."""
    if kind == "json":
        from dcx.parsing.jsonio import load_json

        _, problems = load_json(data)
        return problems
    if kind == "xml":
        from dcx.core.diagnostics import InputError
        from dcx.parsing.xmlio import parse_xml

        try:
            parse_xml(data)
        except InputError as exc:
            return [exc.diagnostic]
    return []


# ------------------------------------------------------------------------------ commands


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate each file; ``--hook`` skips files that are clearly no dcx format."""
    from dcx.converters.partitions import ClusterUnavailable

    cluster = _cluster(args)
    try:
        return _validate(args, cluster)
    except ClusterUnavailable as exc:
        raise UsageError(str(exc)) from None
    finally:
        if cluster is not None:
            cluster.close()


def _validate(args: argparse.Namespace, cluster: Any) -> int:
    from dcx.converters.progress import LARGE_INPUT_BYTES, Progress
    from dcx.converters.registry import detect, get
    from dcx.converters.streaming import read_or_stream

    families = set(args.family or ())
    scope = [spec for spec in FORMATS if not families or spec.family in families]
    text = args.output_mode == "text"
    # pre-commit shows a hook's output only when it fails: success lines would bury errors
    tell_success = text and not _quiet(args) and (not args.hook or _verbose(args) > 0)

    entries: list[dict[str, Any]] = []
    valid = skipped = 0
    failed = False
    # a folder format's files: one input; another folder: the files under it
    inputs, walked = _validation_inputs(args.files, args.format)
    long_run = len(inputs) > 1 or size_of(inputs[0]) >= LARGE_INPUT_BYTES
    with Progress(len(inputs), "validating", enabled=long_run and text
                  and not _quiet(args)) as progress:
        for path in inputs:
            name = label(path)
            progress.describe(name)
            # a large input of a format with a chunked reader is checked as it is read
            data, oversized, streamed = read_or_stream(path, args.format, scope, cluster)
            if oversized is not None:
                entries.append(_file_entry(name, None, [oversized]))
                if text:
                    progress.say(oversized.render())
                failed = True
                progress.advance()
                continue
            spec = (streamed[0] if streamed else get(args.format) if args.format
                    else detect(data, path, scope))
            if spec is None and families and detect(data, path) is not None:
                skipped += 1  # a dcx format of another family: --family skips it
                progress.advance()
                continue
            if spec is None and (args.hook or path in walked) and hook_skips(data, path, scope):
                skipped += 1
                progress.advance()
                continue
            malformed = _malformed(data, content_kind(data)) if spec is None else []
            counts = None
            document: Any  # the document read, or what the chunked reader found
            if malformed:  # say where JSON or XML breaks, not only "not recognised"
                found_spec, diagnostics = None, [d.at(name) for d in malformed]
                document = None
            elif streamed:
                found_spec, diagnostics = spec, [d.at(name) for d in streamed[1].diagnostics]
                document, counts = streamed[1], _plural(streamed[1].jobs, "job")
            else:
                # here, not above: a hook batch of foreign files never loads the model
                from dcx.converters.convert import read_any

                found_spec, result = read_any(data, path, spec.name if spec else None)
                diagnostics = [d.at(name) for d in result.diagnostics]
                document = result.document
            if args.strict:
                diagnostics = _strict(diagnostics)
            bad = has_errors(diagnostics) or found_spec is None or document is None
            failed = failed or bad
            entries.append(_file_entry(name, found_spec.name if found_spec else None,
                                       diagnostics))
            if text:
                for diagnostic in _shown(diagnostics, args):
                    progress.say(diagnostic.render())
            if not bad:
                valid += 1
                if tell_success and found_spec is not None:
                    progress.say(_checked_line(name, found_spec, document, diagnostics,
                                               counts))
            progress.advance()
    if not text:
        print(json.dumps({"files": entries}, ensure_ascii=False))
    elif tell_success and len(inputs) > 1:
        invalid = len(entries) - valid
        _say(f"{_plural(valid, 'file')} valid" + (f", {invalid:,} invalid" if invalid else "")
             + (f", {skipped:,} skipped (no dcx format)" if skipped else ""))
    return EXIT_INVALID if failed else EXIT_OK


def _validation_inputs(paths: Sequence[str], format_name: str | None) -> tuple[list[str],
                                                                             set[str]]:
    """``paths`` with each member of a format stored as a folder (``w/tasks.parquet``,
    which pre-commit passes) replaced by its folder, once: the folder is what is valid; and
    each folder that is no such format replaced by the files under it that a dcx format
    claims, recursively (``pipeline.format_files``). Also which inputs were found in a folder
    rather than named: those are skipped, as in hook mode, when clearly someone else's."""
    from dcx.converters.folders import folder_format, member_of

    inputs: dict[str, None] = {}
    found: set[str] = set()
    for path in paths:
        if path != "-" and os.path.isdir(path) and folder_format(path) is None:
            from dcx.converters.pipeline import format_files

            under = format_files(path)
            if not under:
                raise UsageError(f"{path}: is a directory holding no file a dcx format "
                                 "claims (by extension) and no format folder")
            found.update(under)
            inputs.update(dict.fromkeys(under))
            continue
        spec = member_of(path) if path != "-" else None
        if spec is not None and format_name in (None, spec.name):
            path = os.path.dirname(path) or "."
        inputs.setdefault(path, None)
    return list(inputs), found - set(paths)


def _checked_line(name: str, spec: FormatDeclaration, document: Any,
                  diagnostics: Sequence[Diagnostic], counts: str | None = None) -> str:
    """``x.json: valid environment (4 machines); checked against environment.schema.json and
    dcx's environment rules`` (``counts``: what a chunked read counted, without a document)."""
    warnings = sum(not d.is_error for d in diagnostics)
    note = f", {_plural(warnings, 'warning')}" if warnings else ""
    said = counts if counts is not None else _counts(document, spec)
    return (f"{name}: valid {spec.name} ({said}{note}); checked against "
            f"{spec.schema or 'its grammar'} and dcx's {spec.name} rules")


def _target_for(args: argparse.Namespace,
                source: FormatDeclaration | None) -> FormatDeclaration:
    if args.target:
        return BY_NAME[args.target]
    if args.output == "-":
        raise UsageError("standard output has no extension to tell the format by; "
                         "say --to FORMAT")
    candidates = claims(args.output)
    if not candidates:
        from dcx.converters.folders import folder_format

        candidates = [spec] if (spec := folder_format(args.output)) is not None else []
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
    from dcx.converters.atomic import write_output
    from dcx.converters.convert import convert
    from dcx.converters.folders import FolderError, write_folder
    from dcx.converters.progress import LARGE_INPUT_BYTES, Progress
    from dcx.converters.registry import detect
    from dcx.converters.stream_chunks import stream_pairs
    from dcx.converters.streaming import convert_input

    text = args.output_mode == "text"
    if args.output == "-" and not text:
        raise UsageError("--output json prints the report on stdout; it cannot share stdout "
                         "with the converted data (write OUTPUT to a file)")
    fills = _fills(args.fill)
    _output_folder_exists(args.output)
    if args.id_map is not None:
        _output_folder_exists(args.id_map)
    name = label(args.input)
    cluster = _cluster(args)  # started only for a Parquet file converted by row groups
    try:
        # (an id map needs the whole document: the chunked path renumbers nothing anyway)
        # (so do task fills: they change the document before the target sees it)
        data, oversized, streamed = convert_input(
            args.input, args.source,
            lambda spec: args.id_map is None and not any(fill.part == "task" for fill in fills)
            and (spec.name, _target_for(args, spec).name) in stream_pairs(), cluster)
        if streamed is not None:
            return _convert_streamed(args, streamed, fills, cluster)
    finally:
        if cluster is not None:
            cluster.close()
    if oversized is not None:
        if text:
            _say(oversized.render())
        else:
            print(json.dumps({"files": [_file_entry(name, None, [oversized])]}))
        return EXIT_INVALID
    source = BY_NAME[args.source] if args.source else detect(data, args.input)
    target = _target_for(args, source)
    if args.id_map is not None and target.written_ids is None:
        raise UsageError(f"--id-map: {target.name} writes every task id as it is read "
                         "(only a target that numbers tasks itself has a map: swf)")
    with Progress(3, f"converting {name} to {target.name}",
                  enabled=len(data) >= LARGE_INPUT_BYTES and text and not _quiet(args)
                  ) as progress:
        result = convert(data, target.name, args.input, source.name if source else None,
                         strict=args.strict, fills=fills)
        progress.advance(f"writing {label(args.output)}")
        if result.ok:
            try:
                if target.members and args.output != "-":
                    write_folder(args.output, result.data, target)
                else:
                    write_output(args.output, result.data)
            except BrokenPipeError:
                raise
            except FolderError as exc:  # not a folder dcx may replace
                raise UsageError(str(exc)) from None
            except OSError as exc:
                raise UsageError(f"{args.output}: cannot write: {exc.strerror}") from None
            if args.id_map is not None and result.read is not None:
                _write_id_map(args.id_map, target, result.read.document)
        progress.advance()
    return _report_conversion(args, target, _Converted(
        ok=result.ok, internal_error=result.internal_error,
        source=result.source.name if result.source else None,
        read_diagnostics=result.read.diagnostics if result.read else (),
        diagnostics=result.diagnostics, losses=result.losses, places=result.read,
        filled=result.filled, fill_hint=result.fill_hint,
        written=lambda: _counts(result.output_document, target),
        output_diagnostics=result.output_diagnostics))


def _write_id_map(path: str, target: FormatDeclaration, document: Document | None) -> None:
    """``--id-map``: a CSV of each task's id as read and the id ``target`` wrote for it."""
    import csv
    import io

    from dcx.converters.atomic import write_output

    assert target.written_ids is not None and document is not None
    text = io.StringIO()
    rows = csv.writer(text, lineterminator="\n")
    rows.writerow(("id", f"{target.name}_id"))
    rows.writerows(target.written_ids(document))
    try:
        write_output(path, text.getvalue().encode())
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror}") from None


def _output_folder_exists(output: str) -> None:
    """OUTPUT's folder must exist: dcx creates no folders (a mistyped path would otherwise
    leave a new tree behind); a usage error, said before anything is read."""
    if output == "-":
        return
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        shown = os.path.dirname(output.rstrip(os.sep)) or folder
        raise UsageError(f"{output}: cannot write: no such folder {shown} (dcx creates no "
                         "folders)")


@dataclass(frozen=True)
class _Converted:
    """What ``dcx convert`` reports of a conversion, whole or a chunk at a time."""

    ok: bool
    internal_error: bool
    source: str | None
    """The format the input was read as."""
    read_diagnostics: Sequence[Diagnostic]
    diagnostics: Sequence[Diagnostic]
    losses: Sequence[Loss]
    places: Any
    """Where the losses' first values were read from (``_first_dropped``)."""
    filled: Sequence[Any]
    fill_hint: str | None
    written: Callable[[], str]
    """What the output holds, for the summary line (``4 machines``)."""
    output_diagnostics: Sequence[Diagnostic]


def _report_conversion(args: argparse.Namespace, target: FormatDeclaration,
                       done: _Converted) -> int:
    """The report of a conversion: a JSON object on stdout, or the diagnostics, a summary
    line and the losses on stderr; the exit code."""
    text = args.output_mode == "text"
    name = label(args.input)
    read_diagnostics = [d.at(name) for d in done.read_diagnostics]
    conversion = [d.at(name) for d in done.diagnostics]
    if not text:
        entries = [_file_entry(name, done.source, read_diagnostics + conversion)]
        if done.ok:
            entries[0]["losses"] = [
                {"field": loss.field, "count": loss.count, "detail": loss.detail,
                 "first": _first_dropped(loss, done.places)} for loss in done.losses]
            if done.filled:
                entries[0]["filled"] = [fill.to_json() for fill in done.filled]
            if done.fill_hint:
                entries[0]["fill_hint"] = done.fill_hint
            entries.append(_file_entry(args.output, target.name,
                                       [d.at(args.output) for d in done.output_diagnostics]))
        print(json.dumps({"files": entries}, ensure_ascii=False))
    else:
        # the losses are the summary line (and --losses), not one warning each, unless they
        # are why the conversion was refused (--strict)
        listed = [d for d in read_diagnostics + conversion
                  if not (d.code == "convert.loss" and not d.is_error)]
        for diagnostic in _shown(listed, args):
            _say(diagnostic.render())
        if done.ok and not _quiet(args):
            where = STDOUT_LABEL if args.output == "-" else args.output
            lost = len(done.losses)
            tail = ("nothing lost" if not lost else
                    f"{_plural(lost, 'field')} not held" + (
                        "" if args.losses or _verbose(args) else ", --losses lists them"))
            if _verbose(args) and done.source is not None:
                _say(f"{name}: read as {done.source}")
            filled = "".join(f"{fill.render()}; " for fill in done.filled)
            _say(f"wrote {where} ({target.name}): {done.written()}{_left_out(done.losses)}; "
                 f"{filled}{tail}")
            if done.fill_hint:
                _say(f"{name}: hint: {done.fill_hint}")
        if done.ok and (args.losses or _verbose(args)):
            for loss in done.losses:
                _say(_loss_line(loss, done.places, name))
    if done.internal_error:
        return EXIT_USAGE
    return EXIT_OK if done.ok else EXIT_INVALID


def _convert_streamed(args: argparse.Namespace, streamed: Any, fills: Sequence[Fill],
                      cluster: Any = None) -> int:
    """``cmd_convert`` of an input converted a chunk at a time (``stream_convert``): the
    same report, from what the chunks added up to. A file read in parts (Parquet) is
    converted on ``cluster`` when one is given."""
    from dcx.converters.fill import apply_fills, left_out_hint
    from dcx.converters.folders import FolderError
    from dcx.converters.partitions import ClusterUnavailable
    from dcx.converters.stream_convert import convert_chunks
    from dcx.core.model import Document, Workload

    target = _target_for(args, streamed.spec)
    client = None
    # (a Parquet file only: a folder format read in parts converts in this process)
    if cluster is not None and streamed.spec.read_parts is not None and streamed.reopenable \
            and not streamed.spec.members:
        try:
            client = cluster.client()
        except ClusterUnavailable as exc:
            raise UsageError(str(exc)) from None
    try:
        result = convert_chunks(streamed.spec.name, streamed.chunks, streamed.reopenable,
                                args.output, target.name, args.strict, client, args.input)
    except FolderError as exc:  # not a folder dcx may replace
        raise UsageError(str(exc)) from None
    # a trace has no machines: what each --fill says it filled (none), as the whole path says
    filled = apply_fills(Document(workload=Workload()), fills)[1] if result.ok else ()
    return _report_conversion(args, target, _Converted(
        ok=result.ok, internal_error=result.internal_error, source=streamed.spec.name,
        read_diagnostics=result.read_diagnostics, diagnostics=result.diagnostics,
        losses=result.losses, places=result.places, filled=filled,
        fill_hint=left_out_hint(result.losses, target) if result.ok else None,
        written=lambda: _plural(result.jobs, "job"), output_diagnostics=()))


def _fills(given: Sequence[str]) -> list[Fill]:
    """The ``--fill`` options, or a usage error in one line."""
    from dcx.converters.fill import FillError, parse_fill

    try:
        return [parse_fill(text) for text in given]
    except FillError as exc:
        raise UsageError(str(exc)) from None


def _first_dropped(loss: Loss, read: ReadResult | None) -> dict[str, Any] | None:
    """Where the first value a loss drops is: its model pointer and, where the reader can
    tell, the line and column it was read from."""
    if loss.first is None:
        return None
    line, column = read.locate(loss.first) if read is not None else (None, None)
    return {"line": line, "column": column, "pointer": loss.first}


def _loss_line(loss: Loss, read: ReadResult | None, name: str) -> str:
    """``  machine.os: 4 values (first: in.json:12:7, /environment/…/slots/3): meaning``;
    ``values changed`` where the target changes values without a count (its normal form)."""
    said = ["values changed" if loss.count is None else _plural(loss.count, "value")]
    place = loss.first_place(read, name)
    if place is not None:
        said.append(f"(first: {place})")
    return ": ".join(part for part in (f"  {loss.field}", " ".join(said), loss.detail) if part)


def cmd_formats(args: argparse.Namespace) -> int:
    from dcx.core.fields import FIELDS
    from dcx.core.restrict import with_parts

    rows: list[dict[str, Any]] = [{"name": spec.name, "title": spec.title, "family": spec.family,
             "kind": spec.kind, "extensions": list(spec.extensions),
             "members": list(spec.members),
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
        files = ", ".join(row["extensions"]) or "a folder of " + ", ".join(row["members"])
        print(f"{row['name']:<14} {row['title']} [{files}] ({status})")
        print(f"{'':<14} {row['description']}")
        if row["cannot_hold"]:
            print(f"{'':<14} cannot hold: {', '.join(row['cannot_hold'])}")
    return EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    """What each file holds, with units; data on stdout, diagnostics on stderr. The exit
    code is the worst of the files'; a FILE given twice is shown once, as validate does."""
    inputs, walked = _validation_inputs(args.files, args.format)
    cluster = _cluster(args)
    try:
        return max(_info(path, args, cluster, path in walked) for path in inputs)
    finally:
        if cluster is not None:
            cluster.close()


def _cluster(args: argparse.Namespace) -> Any:
    """The Dask cluster ``--workers N`` or ``--scheduler-address`` asks for (started on first
    use), or ``None``."""
    from dcx.converters.partitions import Cluster

    if args.workers is not None and args.workers < 0:
        raise UsageError("--workers must be 0 or more")
    if args.workers and args.scheduler_address:
        raise UsageError("--workers sizes a local cluster; an existing cluster "
                         "(--scheduler-address) has its own workers")
    return Cluster(args.workers, args.scheduler_address) \
        if args.workers or args.scheduler_address else None


def _cluster_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--workers", type=int, metavar="N",
                        help=f"{what} a Parquet FILE's (an OpenDC workload folder's) row "
                        "groups as partitions on a Dask LocalCluster of N worker processes "
                        "(any size; 0, the default: in this process)")
    parser.add_argument("--scheduler-address", metavar="ADDRESS",
                        help=f"{what} a Parquet FILE's (an OpenDC workload folder's) row groups "
                        "on an existing Dask cluster (tcp://host:8786) whose workers see FILE "
                        "at the same path; a Parquet "
                        "pipe from 16 MB, copied to a temporary file on this machine, is "
                        "refused (exit 2)")


def _info(path: str, args: argparse.Namespace, cluster: Any = None,
          walked: bool = False) -> int:
    """One input's summary; one ``walked`` (found in a folder, not named) that is clearly
    someone else's file is skipped, as validate skips it."""
    from dcx.converters.convert import read_any
    from dcx.converters.partitions import ClusterUnavailable
    from dcx.converters.registry import detect
    from dcx.converters.streaming import read_or_stream

    name = label(path)
    try:  # a large input counted as validate checks it: in chunks, or in parts on a cluster
        data, oversized, streamed = read_or_stream(path, args.format, FORMATS, cluster)
    except ClusterUnavailable as exc:
        raise UsageError(str(exc)) from None
    if oversized is not None:
        _say(oversized.render())
        return EXIT_INVALID
    if (walked and streamed is None and args.format is None
            and detect(data, path, FORMATS) is None and hook_skips(data, path, FORMATS)):
        return EXIT_OK
    spec: FormatDeclaration | None
    if streamed is not None:
        spec, found = streamed
        ok, diagnostics = found.ok, found.diagnostics
        summary: dict[str, Any] = {"path": name, "format": spec.name, "valid": ok}
        if ok:
            summary["workload"] = parted_summary(found, spec)
    else:
        found_spec, result = read_any(data, path, args.format)
        spec, ok, diagnostics = found_spec, result.ok, result.diagnostics
        summary = {"path": name, "format": spec.name if spec else "unknown", "valid": ok}
        document = result.document
        holds = spec.holds if spec is not None else frozenset()
        if document is not None and document.environment is not None:
            summary["topology"] = topology_summary(document.environment, holds)
        if document is not None and document.workload is not None:
            summary["workload"] = workload_summary(document.workload)
    errors = sum(d.is_error for d in diagnostics)
    summary["errors"] = errors
    summary["warnings"] = len(diagnostics) - errors
    if args.output_mode == "text":
        for diagnostic in _shown([d.at(name) for d in diagnostics], args):
            _say(diagnostic.render())
    if args.output_mode == "json":
        print(json.dumps(summary))
    else:
        title = f" ({spec.title})" if spec is not None else ""
        print(f"{name}: {summary['format']}{title}, {'valid' if ok else 'invalid'}")
        for key, value in summary.get("topology", {}).items():
            print(f"  {INFO_LABELS.get(key, key)}: {_with_unit(key, value)}")
        for key, value in summary.get("workload", {}).items():
            print(f"  {key}: {'unknown' if value is None else f'{value:,}'}")
    return EXIT_OK if ok else EXIT_INVALID


def parted_summary(found: Any, spec: FormatDeclaration) -> dict[str, int | None]:
    """``workload_summary``'s counts from what a chunked reader or a reader of parts
    counted (``ChunkedRead``); annotations are 0 where the format cannot hold any (none
    of those readers' formats can)."""
    summary = {"jobs": found.jobs, "tasks": found.tasks, "dependencies": found.dependencies}
    if "workload.annotations" not in spec.holds:
        summary["annotations"] = 0
    return summary


def workload_summary(workload: Any) -> dict[str, int]:
    """Jobs, tasks, dependencies and annotations of a workload (from its columns when it
    has them: no task object is built)."""
    from dcx.core.columns import columns_of

    columns = columns_of(workload)
    if columns is not None:
        tasks, dependencies = len(columns), columns.dependency_count
    else:
        tasks = dependencies = 0
        for task in workload.tasks():
            tasks += 1
            dependencies += len(task.dependencies)
    return {"jobs": len(workload.jobs), "tasks": tasks, "dependencies": dependencies,
            "annotations": len(workload.annotations)}


LEVELS = ("datacenter", "room", "rack")
"""Topology levels a format may or may not have; ``dcx info`` lists only those it has."""


def topology_summary(environment: Any, holds: frozenset[str]) -> dict[str, Any]:
    """Counts and totals of a topology, with ``None`` for what the file does not say.

    Levels the format has no notion of (SSS has no racks) are left out rather than counted
    as the one container the model puts its machines in. A total is unknown when no machine
    gives it; ``*_known`` says on how many machines it is based when only some give it.
    """
    from dcx.core.groups import machine_parts, part_count, part_template

    # a group counts as its members without being expanded
    kinds = [(part_template(part), part_count(part)) for part in machine_parts(environment)]
    machines = sum(count for _, count in kinds)
    found: dict[str, Any] = {}
    if "datacenter" in holds:
        found["datacenters"] = len(environment.datacenters)
    if "room" in holds:
        found["rooms"] = sum(len(dc.rooms) for dc in environment.datacenters)
    if "rack" in holds:
        found["racks"] = sum(1 for _ in environment.racks())
    found["machines"] = machines
    # a quantity the format cannot hold is left out; one it holds but the file does not
    # give is None (shown as unknown)
    if "machine.cpus" in holds:
        with_cores = [(m, count) for m, count in kinds if m.cpus]
        found["cores"] = (sum(m.core_count * count for m, count in with_cores)
                          if with_cores else None)
        known = sum(count for _, count in with_cores)
        if known not in (0, machines):
            found["cores_known"] = known
    if "cpu.clock_rate_hz" in holds:
        clocks = [rate for m, _ in kinds if (rate := m.clock_rate_hz)]
        found["cpu_clock_ghz"] = (min(clocks) / 1e9, max(clocks) / 1e9) if clocks else None
    if "machine.gpus" in holds:
        found["gpus"] = sum(m.gpu_count * count for m, count in kinds)
    if "machine.memory" in holds:
        with_memory = [(m, count) for m, count in kinds if m.memory]
        found["memory_mib"] = (sum(m.memory_mb * count for m, count in with_memory)
                               if with_memory else None)
        known = sum(count for _, count in with_memory)
        if known not in (0, machines):
            found["memory_known"] = known
    if "environment.events.machine_state" in holds or environment.events:
        found["events"] = len(environment.events)
    return found


INFO_LABELS = {"cpu_clock_ghz": "CPU clock", "memory_mib": "memory",
               "cores_known": "cores given by", "memory_known": "memory given by"}


def _with_unit(key: str, value: Any) -> str:
    if value is None:
        return "unknown"
    if key == "memory_mib":
        mib = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
        gib = f" ({value / 1024:,.1f} GiB)" if value >= 1024 else ""
        return f"{mib} MiB{gib}"
    if key == "cpu_clock_ghz":
        low, high = value
        return f"{low:.3g} GHz" if low == high else f"{low:.3g}–{high:.3g} GHz"
    if key in ("cores_known", "memory_known"):
        return f"{value:,} machines (the others do not say)"
    if key == "cores":
        return f"{value:,} cores"
    return f"{value:,}"


if __name__ == "__main__":
    raise SystemExit(main())
