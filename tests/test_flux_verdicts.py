"""Every file of the shared Flux corpus gets the verdict ``verdicts.json`` gives it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcx.converters.registry import detect

# The reason text in verdicts.json is prose; each maps to the diagnostic code (and a word of
# its message) that states it.
REASON_CODES: dict[str, tuple[str, str]] = {
    "R_lite is not an array": ("schema.type", "array"),
    "nodelist is not an array": ("schema.type", "array"),
    "version is not 1": ("schema.const", "1"),
    "not JSON (trailing comma), with line and column": ("json.syntax", ""),
    # the corpus's one rootless graph is a partial-cancel fragment (SOURCE.md)
    "no root vertex in the containment subsystem": ("jgf.partial-graph", "containment"),
    "an R_lite entry has no rank": ("schema.required", "'rank'"),
    "JSON followed by trailing text, with line and column": ("json.trailing-data", ""),
}
REASON_POINTERS: dict[str, str] = {
    "R_lite is not an array": "/execution/R_lite",
    "nodelist is not an array": "/execution/nodelist",
    "version is not 1": "/version",
    "an R_lite entry has no rank": "/execution/R_lite/0",
}
# Warnings the notes of verdicts.json (and SOURCE.md: "Legacy edges") name, by file.
NOTED_WARNINGS: dict[str, set[str]] = {
    "flux-core/t/shell/input/4r4c4r1c.json": {"flux-r.nodelist-missing"},
    "flux-sched/t/data/shell/corona-jgf.json": {"jgf.legacy-edge"},
    "flux-sched/t/data/shell/combined/R.json": {"flux-r.legacy-node-key", "jgf.legacy-edge"},
    "flux-sched/t/data/shell/cluster-local/R.json": {"flux-r.legacy-node-key",
                                                     "jgf.legacy-edge"},
    "flux-sched/t/data/resource/rv1exec/cancel/rank0_cancel-jgfgraph.json":
        {"flux-r.extra-child-type"},
}


def _verdicts(corpus_dir: Path) -> dict[str, dict[str, str]]:
    files: dict[str, dict[str, str]] = json.loads(
        (corpus_dir / "flux" / "verdicts.json").read_text())["files"]
    return files


def test_every_corpus_file_is_listed(corpus_dir: Path) -> None:
    """The walk below covers the whole corpus folder, not a selection."""
    root = corpus_dir / "flux"
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    listed = set(_verdicts(corpus_dir))
    assert on_disk - {"SOURCE.md", "verdicts.json"} == listed


@pytest.mark.corpus
def test_corpus_verdicts(corpus_dir: Path) -> None:
    failures = []
    for name, expected in _verdicts(corpus_dir).items():
        data = (corpus_dir / "flux" / name).read_bytes()
        spec = detect(data, name)
        verdict = expected["verdict"]
        if verdict == "unrecognised":
            if spec is not None:
                failures.append(f"{name}: detected as {spec.name}, expected unrecognised")
            continue
        if spec is None or spec.family != "flux":
            failures.append(f"{name}: detected as {spec and spec.name}, expected a Flux format")
            continue
        result = spec.read(data)
        if verdict == "valid":
            if not result.ok:
                failures.append(f"{name}: invalid: {[d.message for d in result.diagnostics]}")
            elif spec.name != expected["format"]:
                failures.append(f"{name}: read as {spec.name}, expected {expected['format']}")
            codes = {d.code for d in result.diagnostics}
            if codes != NOTED_WARNINGS.get(name, set()):
                failures.append(f"{name}: warnings {codes}, expected "
                                f"{NOTED_WARNINGS.get(name, set())}")
            continue
        errors = [d for d in result.diagnostics if d.is_error]
        code, word = REASON_CODES[expected["reason"]]
        matching = [d for d in errors if d.code == code and word in d.message]
        if result.ok or not matching:
            failures.append(f"{name}: expected {code} for {expected['reason']!r}, got "
                            f"{[(d.code, d.message) for d in errors]}")
            continue
        pointer = REASON_POINTERS.get(expected["reason"])
        if pointer is not None and matching[0].pointer != pointer:
            failures.append(f"{name}: pointer {matching[0].pointer}, expected {pointer}")
        if "line and column" in expected["reason"] and matching[0].line is None:
            failures.append(f"{name}: no line and column")
    assert not failures, "\n".join(failures)


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "line", "column"), [
    ("flux-core/src/modules/job-list/test/R/missing_nodelist.R", 14, 3),
    ("flux-sched/t/data/resource/expected/RV/R3.out", 2, 1),
])
def test_not_json_errors_are_located(corpus_dir: Path, name: str, line: int,
                                     column: int) -> None:
    data = (corpus_dir / "flux" / name).read_bytes()
    spec = detect(data, name)
    assert spec is not None and spec.name == "flux-r"
    diagnostic = spec.read(data).diagnostics[0]
    assert (diagnostic.line, diagnostic.column) == (line, column)
