"""Our JSON Schemas: loaded from the wheel, built once per process, errors located.

The verdict comes from jsonschema-rs (compiled, fast on 100,000-machine files); only when a
document fails do we run the pure-Python ``jsonschema`` validator for its detailed errors,
and only then do we look up line and column for each error's JSON Pointer.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the pure-Python validator loads only when a document fails
    import jsonschema

from dcx.core.codes import Code
from dcx.core.diagnostics import Diagnostic, error
from dcx.parsing.jsonio import (
    JsonLocator,
    JsonText,
    dumps_canonical,
    load_json_object,
    pointer_from_path,
)

MAX_SCHEMA_ERRORS = 50

SCHEMA_KEYWORD_CODES = {
    "additionalProperties": "schema.additionalProperties",
    "const": "schema.const",
    "enum": "schema.enum",
    "exclusiveMinimum": "schema.exclusiveMinimum",
    "maximum": "schema.maximum",
    "minItems": "schema.minItems",
    "minLength": "schema.minLength",
    "minProperties": "schema.minProperties",
    "minimum": "schema.minimum",
    "not": "schema.not",
    "oneOf": "schema.oneOf",
    "pattern": "schema.pattern",
    "required": "schema.required",
    "type": "schema.type",
}
"""The code of each failing JSON Schema keyword our schemas use, written out so that each
code is declared (and greppable) once; ``tests/test_codes.py`` checks that every keyword of
``schemas/`` that can fail is here."""

UNLISTED_KEYWORD_CODE = "schema.invalid"
"""For a keyword missing from ``SCHEMA_KEYWORD_CODES`` (a schema edited since), so the
document is still refused with a declared code while the test above fails."""

CODES = (
    Code("schema.additionalProperties", "error",
         "An object has a member its schema does not allow (often a misspelt key)."),
    Code("schema.const", "error", "A value differs from the one its schema fixes."),
    Code("schema.enum", "error", "A value is not one of those its schema lists."),
    Code("schema.exclusiveMinimum", "error",
         "A number is not greater than its schema's exclusive minimum."),
    Code("schema.maximum", "error", "A number is above its schema's maximum."),
    Code("schema.minItems", "error", "An array has fewer items than its schema requires."),
    Code("schema.minLength", "error", "A string is shorter than its schema allows."),
    Code("schema.minProperties", "error",
         "An object has fewer members than its schema requires."),
    Code("schema.minimum", "error", "A number is below its schema's minimum."),
    Code("schema.not", "error", "A value has a shape its schema forbids."),
    Code("schema.oneOf", "error",
         "A value matches none, or more than one, of its schema's alternatives."),
    Code("schema.pattern", "error", "A string does not match its schema's pattern."),
    Code("schema.required", "error", "An object lacks a member its schema requires."),
    Code("schema.type", "error", "A value has the wrong JSON type."),
    Code("schema.invalid", "error",
         "A schema rule without a code of its own failed; the message says which."),
    Code("schema.more-errors", "error",
         "More schema errors than are listed (the first 50 are located, the rest counted)."),
)


@cache
def load_schema(name: str) -> dict[str, Any]:
    text = resources.files("dcx.schemas").joinpath(name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _fast_validator(name: str) -> Any:
    # imported on first use: it costs more start-up than the rest of dcx's parsing layer, and
    # the pre-commit hook starts a process per batch whether or not a file needs a schema
    import jsonschema_rs

    return jsonschema_rs.validator_for(load_schema(name))


@cache
def _detailed_validator(name: str) -> jsonschema.protocols.Validator:
    import jsonschema

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator: jsonschema.protocols.Validator = cls(
        schema, format_checker=cls.FORMAT_CHECKER
    )
    return validator


def schema_verdict(name: str, instance: Any) -> bool:
    """Whether ``instance`` is valid against ``schemas/<name>`` (the compiled validator only;
    ``False`` also when it cannot take a value, so callers then ask for diagnostics)."""
    try:
        return bool(_fast_validator(name).is_valid(instance))
    except (ValueError, OverflowError):
        return False


def loaded_against(name: str, data: bytes, what: str, code: str,
                   reworded: Callable[[Diagnostic, Any], Diagnostic] | None = None
                   ) -> tuple[JsonText | None, list[Diagnostic]]:
    """A reader's JSON object document, decoded (``load_json_object``: ``what`` names the
    document, ``code`` is the format's code for a root of another type) and valid against
    ``schemas/<name>``; otherwise ``None`` and the located diagnostics that refuse it, each as
    ``reworded`` says it given the decoded root (a format's own words for a schema error it
    can explain better), a repeated one once."""
    loaded, problems = load_json_object(data, what, code)
    if loaded is None:
        return None, problems
    found = schema_diagnostics(name, loaded.value, loaded.locator)
    if reworded is not None:
        found = list(dict.fromkeys(reworded(d, loaded.value) for d in found))
    return (None, found) if found else (loaded, [])


def serialised_against(name: str, root: Any, indent: int | None = 2
                       ) -> tuple[bytes, str | None]:
    """A writer's JSON ``root`` as canonical bytes (on one line with ``indent=None``), or
    why it cannot be written: a value with no JSON form, or an output that
    ``schemas/<name>`` would refuse (the first reason)."""
    try:
        data = dumps_canonical(root, indent=indent)
    except (TypeError, ValueError) as exc:  # extras a hand-built model gave no JSON value
        return b"", f"a value has no JSON form ({exc})"
    if not schema_verdict(name, root):
        found = schema_diagnostics(name, root)
        reason = found[0].render() if found else "the schema refuses it"
        return b"", f"the output would not match the format's schema: {reason}"
    return data, None


def schema_diagnostics(
    name: str, instance: Any, locator: JsonLocator | None = None, base_pointer: str = ""
) -> list[Diagnostic]:
    """Validate ``instance`` against ``schemas/<name>``; located errors, best first."""
    try:
        if _fast_validator(name).is_valid(instance):
            return []
    except (ValueError, OverflowError):
        pass  # jsonschema-rs refuses some Python values (huge ints); fall through
    validator = _detailed_validator(name)
    try:
        # Detailed errors cost far more than the verdict; a broken 100,000-machine file
        # gets the first MAX_SCHEMA_ERRORS and a count, not 100,000 located messages.
        errors = list(itertools.islice(validator.iter_errors(instance), MAX_SCHEMA_ERRORS + 1))
    except RecursionError:
        return [error("document nests too deeply to validate", "json.depth")]
    truncated = len(errors) > MAX_SCHEMA_ERRORS
    errors = sorted(errors[:MAX_SCHEMA_ERRORS], key=_error_rank)
    found: list[Diagnostic] = []
    for detail in (detail for item in errors for detail in _specific(item)):
        pointer = base_pointer + pointer_from_path(detail.absolute_path)
        code = SCHEMA_KEYWORD_CODES.get(str(detail.validator), UNLISTED_KEYWORD_CODE)
        found.append(error(_message(detail), code, pointer=pointer))
    if truncated:
        found.append(error(f"more schema errors follow; only the first {MAX_SCHEMA_ERRORS} "
                           "are listed", "schema.more-errors"))
    return locator.place(found) if locator is not None else found


def _error_rank(item: jsonschema.ValidationError) -> tuple[int, ...]:
    return (*(len(item.absolute_path),),)


def _specific(item: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """For a oneOf/anyOf failure, every error of the branch the author meant (check-jsonschema's
    "best deep match" picks the branch; all of its errors are kept, so two bad values in one
    machine are two diagnostics); the error itself when no branch says more."""
    import jsonschema

    if not item.context:
        return [item]
    # The branch that got furthest into the instance is the one the author meant
    # (a machine with a bad core count, not "extra keys for an EMPTY slot").
    depth = max(len(sub.absolute_path) for sub in item.context)
    best = jsonschema.exceptions.best_match(
        sub for sub in item.context if len(sub.absolute_path) == depth)
    if best is None or len(best.absolute_path) < len(item.absolute_path):
        return [item]
    branch = best.relative_schema_path[0] if best.relative_schema_path else None
    chosen = [sub for sub in item.context
              if (sub.relative_schema_path[0] if sub.relative_schema_path else None) == branch]
    return [found for sub in chosen for found in _specific(sub)]


def _message(item: jsonschema.ValidationError) -> str:
    message = item.message
    if len(message) > 300:
        message = message[:297] + "..."
    return message
