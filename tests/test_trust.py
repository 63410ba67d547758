"""No success without an accepted output: every example converted to every format, as a user
runs it. Exit 0 means a non-empty output that ``dcx validate --strict`` accepts; exit 1 means
no output file at all; the loss matrix and each conversion's losses agree."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from dcx.cli.main import main
from dcx.converters.convert import convert
from dcx.converters.folders import folder_format, member_of, read_folder
from dcx.converters.losses import matrix_cell
from dcx.converters.registry import FORMATS, detect
from dcx.core.declaration import FormatDeclaration
from dcx.core.restrict import prefixed_extras_paths

REPO = Path(__file__).resolve().parent.parent
# examples/experiments/ holds experiment files (dcx experiment), not files of a format
# the files of a format stored as a folder (OpenDC's tasks.parquet) are one example, the folder
EXAMPLES = sorted({path.parent if member_of(str(path)) else path
                   for path in (REPO / "examples").rglob("*")
                   if path.is_file() and not path.name.startswith(".")
                   and "experiments" not in path.relative_to(REPO / "examples").parts[:1]})
TARGETS = [spec for spec in FORMATS if spec.writable]

# A matrix cell is made when a test first asks for it, not at collection (every xdist worker
# collects the whole suite).
cell_of = functools.cache(matrix_cell)


def _name(path: Path) -> str:
    return path.relative_to(REPO / "examples").as_posix()


def _bytes(path: Path) -> bytes:
    """A file's bytes, or a format folder's (its files as the format's tar archive)."""
    spec = folder_format(str(path))
    return read_folder(str(path), spec) if spec is not None else path.read_bytes()


@pytest.mark.parametrize("target", TARGETS, ids=lambda spec: spec.name)
@pytest.mark.parametrize("example", EXAMPLES, ids=_name)
def test_an_exit_0_conversion_writes_what_validate_strict_accepts(
        example: Path, target: FormatDeclaration, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    name = target.name
    members = target.members
    suffix = "" if members else target.extensions[0]
    output = tmp_path / f"out{suffix}"
    code = main(["convert", str(example), str(output), "--to", name])
    printed = capsys.readouterr()
    assert code in (0, 1), f"exit {code}: {printed.out}{printed.err}"
    if code == 1:
        assert not output.exists(), "a refused conversion wrote a file"
        return
    if members:  # a folder of the format's files, each non-empty
        assert sorted(p.name for p in output.iterdir()) == sorted(members)
        assert all((output / name).stat().st_size > 0 for name in members)
    else:
        assert output.stat().st_size > 0
    verdict = main(["validate", "--strict", "--format", name, str(output)])
    shown = capsys.readouterr()
    assert verdict == 0, shown.out + shown.err


@pytest.mark.parametrize("example", EXAMPLES, ids=_name)
def test_the_matrix_names_every_loss_a_conversion_reports(example: Path) -> None:
    data = _bytes(example)
    source = detect(data, str(example))
    assert source is not None
    for target in TARGETS:
        if target.name == source.name:
            continue
        conversion = convert(data, target.name, str(example))
        cell = cell_of(source, target)
        refused_for_nothing_in_common = any(
            d.code == "convert.nothing-in-common" for d in conversion.diagnostics)
        if cell.status == "impossible":
            assert refused_for_nothing_in_common, target.name
        elif refused_for_nothing_in_common:  # a format holding both parts, one used here
            assert source.kind == "both", target.name
        reported = {loss.field for loss in conversion.losses}
        assert reported <= set(cell.lost), (
            f"{source.name} -> {target.name}: {sorted(reported - set(cell.lost))} lost but "
            "not in the matrix")


CORPUS = Path(os.environ.get("DCX_CORPUS", REPO.parent / "shared" / "corpus"))


def _readable_files() -> list[Path]:
    corpus = sorted({path.parent if member_of(str(path)) else path
                     for path in CORPUS.rglob("*")
                     if path.is_file() and path.stat().st_size < 4_000_000}) \
        if CORPUS.is_dir() else []
    return EXAMPLES + corpus


def test_formats_keep_data_of_their_own_only_where_they_declare_it() -> None:
    """``own_extras`` is what the matrix assumes a source file can carry for its format
    alone; a reader that puts ``name:`` keys elsewhere would make the matrix understate."""
    for path in _readable_files():
        data = _bytes(path)
        spec = detect(data, str(path))
        if spec is None:
            continue
        document = spec.read(data).document
        if document is None:
            continue
        found = prefixed_extras_paths(document, spec.name) - {None}
        assert found <= spec.own_extras, f"{path}: {spec.name} keeps own data at " \
            f"{sorted(str(p) for p in found - spec.own_extras)}"
