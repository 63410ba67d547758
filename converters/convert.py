"""Any format to any format through the model, and nothing but an accepted output.

A conversion succeeds only when:

1. the source and the target share a part (topology, workload): otherwise one line says the
   pair has nothing in common;
2. the target keeps something of that part: a target that would drop every machine or every
   job is an error, not an empty container;
3. with ``strict``, the target loses nothing;
4. the writer can serialise the document (a writer that cannot says why, as an error);
5. the output, read back in the target format, carries no error and no warning about
   conformance to the target's own specification (``Code.conformance``). Any other warning
   the output would carry and the input did not is reported as a warning of the conversion
   (an error with ``strict``), so a clean input converts to an output ``dcx validate
   --strict`` accepts or says why not.

The losses are derived, not counted: ``conversion_losses`` compares the document with what the
target makes of it (``dcx.core.restrict.dropped_fields``); the loss matrix uses the same
function on a document that uses every field (``dcx.converters.losses``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from dcx.converters.fill import (
    FIELDS,
    Fill,
    Filled,
    apply_fills,
    left_out_hint,
    tasks_refused_hint,
    work_hint,
)
from dcx.converters.registry import (
    FORMATS,
    conformance_codes,
    detect,
    get,
    unrecognised_message,
)
from dcx.core.codes import Code
from dcx.core.columns import columns_of
from dcx.core.declaration import FormatDeclaration, ImportLoader, ImportRefused
from dcx.core.diagnostics import (
    Diagnostic,
    Loss,
    ReadResult,
    error,
    has_errors,
    warning,
)
from dcx.core.groups import machine_count
from dcx.core.limits import LIMITS
from dcx.core.model import Document

CODES = (
    Code("format.unrecognised", "error", "No dcx format recognises the file's content."),
    Code("input.empty", "error", "The file is empty (or only white space)."),
    Code("input.compressed", "error", "The file is gzip-compressed; dcx reads plain text."),
    Code("input.encoding", "error", "The file is UTF-16, UTF-32 or binary; dcx reads UTF-8."),
    Code("convert.nothing-in-common", "error",
         "The source describes a part (topology or workload) the target cannot hold at all."),
    Code("convert.nothing-held", "error",
         "The target would keep none of the source's machines or jobs."),
    Code("convert.empty-input", "error",
         "The input describes no machines and no jobs: there is nothing to convert."),
    Code("convert.output-warning", "warning",
         "The output will carry a warning (not about conformance) its input did not; an "
         "error with --strict."),
    Code("convert.loss", "warning",
         "A field the source uses that the target cannot hold (an error with --strict)."),
    Code("convert.unwritable", "error", "dcx reads the target format but cannot write it."),
    Code("convert.invalid-output", "error",
         "Internal error: the output does not read back accepted in the target format."),
)

PART_NOUNS = {"environment": ("a topology", "machines"),
              "workload": ("a workload", "jobs")}


@dataclass(frozen=True)
class Conversion:
    source: FormatDeclaration | None
    target: FormatDeclaration
    read: ReadResult | None
    data: bytes
    losses: tuple[Loss, ...]
    diagnostics: tuple[Diagnostic, ...]
    """Problems of the conversion itself (nothing in common, strict-mode losses, a writer's
    refusal, an output that does not read back accepted)."""
    output_diagnostics: tuple[Diagnostic, ...] = ()
    """What reading the output back in the target format reported."""
    output_document: Document | None = None
    """The output as the target format reads it back (what a summary should count)."""
    filled: tuple[Filled, ...] = ()
    """What each ``--fill`` put into the document before it was converted."""
    fill_hint: str | None = None
    """Which ``--fill`` would keep machines the target left out (it lacked their values), or
    tasks (``fill.left_out_hint``)."""

    @property
    def ok(self) -> bool:
        return bool(self.data) and not has_errors(self.diagnostics)

    @property
    def internal_error(self) -> bool:
        return any(d.code == "convert.invalid-output" for d in self.diagnostics)


def read_any(
    data: bytes, path: str = "", format_name: str | None = None
) -> tuple[FormatDeclaration | None, ReadResult]:
    """Read ``data`` in the named format, or the one its content shows."""
    spec = get(format_name) if format_name else detect(data, path)
    if spec is None:
        unreadable = _unreadable(data)
        if unreadable is not None:
            return None, ReadResult(None, (unreadable,))
        return None, ReadResult(None, (error(unrecognised_message(), "format.unrecognised"),))
    if spec.read_with_imports is not None and path not in ("", "-"):
        return spec, spec.read_with_imports(data, folder_loader(Path(path).parent))
    return spec, spec.read(data)


def folder_loader(folder: Path) -> ImportLoader:
    """An ``ImportLoader`` for the files under ``folder``: a name that leads out of it (by
    a symbolic link too), or to no regular file, or to one over the input size limit, is
    refused."""
    base = folder.resolve()

    def load(name: str) -> bytes:
        target = (base / name).resolve()
        if not target.is_relative_to(base):
            raise ImportRefused(f"{name!r} leads out of the topology's folder ({base})")
        if not target.is_file():
            raise ImportRefused(f"{name!r} does not exist (looked for {target})")
        if target.stat().st_size > LIMITS.max_input_bytes:
            raise ImportRefused(f"{name!r} is larger than the input size limit "
                                f"({LIMITS.max_input_bytes:,} bytes)")
        return target.read_bytes()

    return load


def _unreadable(data: bytes) -> Diagnostic | None:
    """Why no format could even look at ``data``, for inputs that are not text at all."""
    if not data.strip(b" \t\r\n\xef\xbb\xbf"):
        return error("file is empty", "input.empty", line=1, column=1)
    if data[:2] == b"\x1f\x8b":
        return error("file is gzip-compressed; dcx does not decompress input",
                     "input.compressed", line=1, column=1, hint="decompress it first")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in data[:64]:
        return error("file is UTF-16/UTF-32 or binary; dcx reads UTF-8 text", "input.encoding",
                     line=1, column=1)
    return None


# ------------------------------------------------------------------------------ losses


def parts_of(document: Document) -> tuple[str, ...]:
    """The parts a document describes: a topology with machines, a workload with jobs or
    annotations. An empty part describes nothing."""
    parts = []
    if document.environment is not None and machine_count(document.environment):
        parts.append("environment")
    workload = document.workload
    if workload is not None and (workload.jobs or workload.annotations):
        parts.append("workload")
    return tuple(parts)


def refusal(document: Document, normalized: Document, source_name: str,
            target: FormatDeclaration) -> Diagnostic | None:
    """Why converting ``document`` to ``target`` cannot give a useful output, if it cannot:
    no part in common, or a target that would keep nothing of what the document describes
    (every machine, every job dropped). ``normalized`` is the document after the target's
    normal form: field paths never drop machines or jobs, value restrictions may."""
    from dcx.core.restrict import with_parts

    parts = parts_of(document)
    target_parts = with_parts(target.holds)
    shared = [part for part in parts if part in target_parts]
    if parts and not shared:
        what = " and ".join(PART_NOUNS[part][0] for part in parts)
        nouns = " or ".join(PART_NOUNS[part][1] for part in parts)
        return error(f"{source_name} holds {what}; {target.name} holds no {nouns}: "
                     "nothing to convert", "convert.nothing-in-common")
    if not parts:
        return error(f"this {source_name} file describes no machines and no jobs: nothing "
                     "to convert", "convert.empty-input")
    if not any(_keeps(normalized, part, target) for part in shared):
        noun = " or ".join(PART_NOUNS[part][1] for part in shared)
        why = target.leaves_out(document) if target.leaves_out is not None else ""
        return error(f"{target.name} can hold none of the {noun} of this {source_name} "
                     f"file{': ' + why if why else ''}: nothing to convert",
                     "convert.nothing-held",
                     hint=tasks_refused_hint(target) if "workload" in shared else None)
    return None


def _keeps(normalized: Document, part: str, target: FormatDeclaration) -> bool:
    if part == "environment":
        return "environment" in parts_of(normalized)
    workload = normalized.workload
    columns = columns_of(workload)
    has_tasks = (len(columns) > 0 if columns is not None
                 else workload is not None and any(job.tasks for job in workload.jobs))
    return workload is not None and (has_tasks or (
        bool(workload.annotations) and "workload.annotations" in target.holds))


# ------------------------------------------------------------------------------ converting


def convert(data: bytes, target_name: str, path: str = "", source_name: str | None = None,
            strict: bool = False, fills: Sequence[Fill] = ()) -> Conversion:
    """``data`` written as the target format; ``fills`` (``dcx.converters.fill``) put the
    values the user gave into the document first, so the target's checks see them."""
    target = get(target_name)
    source, result = read_any(data, path, source_name)
    if source is None or result.document is None or has_errors(result.diagnostics):
        return Conversion(source, target, result, b"", (), ())
    document, filled = apply_fills(result.document, fills, FORMATS)
    conversion = convert_document(document, source, target, strict, result)
    if filled:
        conversion = replace(conversion, filled=filled)
    if any(d.code == "convert.nothing-held" for d in conversion.diagnostics):
        hint = _fill_hint(document, target, 0)
        if hint is not None:
            return replace(conversion, diagnostics=tuple(
                replace(d, hint=hint) if d.code == "convert.nothing-held" else d
                for d in conversion.diagnostics))
    written = conversion.output_document
    if conversion.ok and written is not None and written.environment is not None \
            and document.environment is not None:
        kept = machine_count(written.environment)
        if kept < machine_count(document.environment):
            return replace(conversion, fill_hint=_fill_hint(document, target, kept))
    if conversion.ok:
        hint = left_out_hint(conversion.losses, target) or work_hint(document, target,
                                                                      FORMATS)
        if hint is not None:
            return replace(conversion, fill_hint=hint)
    return conversion


def _kept_with(document: Document, target: FormatDeclaration) -> int:
    """How many of the document's machines ``target``'s normal form keeps."""
    from dcx.core.restrict import normalized_for

    environment = normalized_for(document, target).environment
    return 0 if environment is None else machine_count(environment)


def _fill_hint(document: Document, target: FormatDeclaration, kept: int) -> str | None:
    """How ``--fill`` would let ``target`` keep more than ``kept`` of the document's
    machines: fields in ``FIELDS`` order whose values some machines lack, added until the
    target keeps them all or no field is left (a field that helps only with a later one
    counts too), then each dropped again if the rest keep as many; ``None`` when no fill
    keeps more."""
    if document.environment is None:
        return None  # a workload: no fill gives jobs what they lack
    every = machine_count(document.environment)
    needed: list[str] = []
    pending: list[str] = []
    best = kept
    probed = document
    for name in (name for name, field in FIELDS.items() if field.part == "machine"):
        probed, filled = apply_fills(probed, [Fill(name, 1.0, "")])
        if not filled[0].machines:
            continue
        pending.append(name)
        count = _kept_with(probed, target)
        if count > best:
            needed += pending
            pending, best = [], count
        if best == every:
            break
    for name in list(needed):
        rest = [Fill(other, 1.0, "") for other in needed if other != name]
        if _kept_with(apply_fills(document, rest)[0], target) == best:
            needed.remove(name)
    if not needed:
        return None
    examples = " ".join(f"--fill {name}={FIELDS[name].example}" for name in needed)
    if kept == 0:
        return f"give the values it lacks, such as {examples}"
    return (f"{target.name} keeps {kept:,} of {every:,} machines; {examples} would keep "
            f"{best:,}")


def convert_document(document: Document, source: FormatDeclaration, target: FormatDeclaration,
                     strict: bool = False, read: ReadResult | None = None) -> Conversion:
    """``document`` (read from a ``source`` file) written as ``target``, or why not."""
    # the loss derivation loads here, not at start-up: validating (the pre-commit hook)
    # reads through this module and does not need it
    from dcx.converters.losses import conversion_losses
    from dcx.core.restrict import normalized_for

    def refused(*problems: Diagnostic, losses: tuple[Loss, ...] = (),
                output: tuple[Diagnostic, ...] = ()) -> Conversion:
        return Conversion(source, target, read, b"", losses, problems, output)

    if target.write is None:
        return refused(error(f"dcx cannot write {target.name}", "convert.unwritable"))
    normalized = normalized_for(document, target)
    refused_because = refusal(document, normalized, source.name, target)
    if refused_because is not None:
        return refused(refused_because)
    losses = conversion_losses(document, target, normalized)
    severity = error if strict else warning
    problems = [severity(f"{target.name} cannot hold {loss.render()}", "convert.loss")
                for loss in losses]
    if has_errors(problems):
        return refused(*problems, losses=losses)
    written = target.write(document)
    problems += written.diagnostics
    if has_errors(problems) or not written.data:
        if not has_errors(problems):
            problems.append(error(f"internal error: the {target.name} writer wrote nothing",
                                  "convert.invalid-output"))
        return refused(*problems, losses=losses)
    verdict = target.read(written.data)
    rejected = [d for d in verdict.diagnostics if d.is_error or d.code in conformance_codes()]
    inherited = {d.code for d in read.diagnostics} if read is not None else set()
    problems += [severity(f"the {target.name} output will warn: {d.message}",
                          "convert.output-warning")
                 for d in verdict.diagnostics if not d.is_error and d.code not in inherited
                 and d not in rejected]
    if has_errors(problems):
        return refused(*problems, losses=losses)
    if rejected or verdict.document is None:
        reason = rejected[0].render() if rejected else "it does not read back"
        problems.append(error(f"internal error: dcx wrote {target.name} output that "
                              f"{target.name} does not accept ({reason})",
                              "convert.invalid-output"))
        return refused(*problems, losses=losses, output=verdict.diagnostics)
    return Conversion(source, target, read, written.data, losses, tuple(problems),
                      verdict.diagnostics, verdict.document)
