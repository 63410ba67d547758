"""Any format to any format through the model, with loss accounting and a check that the
writer's output reads back valid in the target format."""

from __future__ import annotations

from dataclasses import dataclass

from dcx.converters.diagnostics import (
    Diagnostic,
    Loss,
    ReadResult,
    error,
    has_errors,
    warning,
)
from dcx.converters.registry import FormatSpec, detect, get


@dataclass(frozen=True)
class Conversion:
    source: FormatSpec | None
    target: FormatSpec
    read: ReadResult | None
    data: bytes
    losses: tuple[Loss, ...]
    diagnostics: tuple[Diagnostic, ...]
    """Problems of the conversion itself (unwritable, strict-mode losses, invalid output)."""
    output_diagnostics: tuple[Diagnostic, ...] = ()
    """What reading the output back in the target format reported."""

    @property
    def ok(self) -> bool:
        return bool(self.data) and not has_errors(self.diagnostics)


def read_any(
    data: bytes, path: str = "", format_name: str | None = None
) -> tuple[FormatSpec | None, ReadResult]:
    """Read ``data`` in the named format, or the one its content shows."""
    spec = get(format_name) if format_name else detect(data, path)
    if spec is None:
        unreadable = _unreadable(data)
        if unreadable is not None:
            return None, ReadResult(None, (unreadable,))
        return None, ReadResult(None, (error(
            "not a recognised dcx format (environment, haizea, sss, flux-r, jgf, gwf, swf, "
            "osp-workload, opendc-setup)", "format.unrecognised"),))
    result: ReadResult = spec.load().read(data)
    return spec, result


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


def convert(data: bytes, target_name: str, path: str = "", source_name: str | None = None,
            strict: bool = False) -> Conversion:
    target = get(target_name)
    source, result = read_any(data, path, source_name)
    if source is None or result.document is None or has_errors(result.diagnostics):
        return Conversion(source, target, result, b"", (), ())
    if not target.writable:
        return Conversion(source, target, result, b"", (), (
            error(f"dcx cannot write {target.name}", "convert.unwritable"),))
    written = target.load().write(result.document)
    problems = list(written.diagnostics)
    if written.losses:
        severity = error if strict else warning
        problems += [severity(f"{target.name} cannot hold {loss.render()}", "convert.loss")
                     for loss in written.losses]
    if has_errors(problems):
        return Conversion(source, target, result, b"", written.losses, tuple(problems))
    verdict = target.load().read(written.data)
    if has_errors(verdict.diagnostics):
        first = next(d for d in verdict.diagnostics if d.is_error)
        problems.append(error(
            f"internal error: dcx wrote {target.name} output that does not validate "
            f"({first.render()})", "convert.invalid-output"))
        return Conversion(source, target, result, b"", written.losses, tuple(problems),
                          verdict.diagnostics)
    return Conversion(source, target, result, written.data, written.losses, tuple(problems),
                      verdict.diagnostics)
