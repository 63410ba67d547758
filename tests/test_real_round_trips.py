"""Round trips on real files: SWF -> GWF -> SWF and GWF -> SWF -> GWF keep every field both
formats hold, value for value; Batsim -> SWF -> Batsim keeps every job it can run, with its
walltime and hosts, and names the ones it leaves out. On the examples and on the shared
corpus (``upstream/``, skipped when it is absent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dcx.converters.losses import conversion_losses
from dcx.core.model import Document
from dcx.core.restrict import LEFT_OUT, restrict, without_empty_parts
from dcx.formats import batsim, gwf, swf
from dcx.formats.swf import codec as swf_codec
from tests.test_losses import expected_back

REPO = Path(__file__).resolve().parent.parent


def _files(corpus: Path | None, folder: str, suffix: str) -> list[Path]:
    found = sorted((REPO / "examples" / folder).glob(f"*{suffix}"))
    if corpus is not None:
        found += sorted((corpus / "upstream" / folder).glob(f"*{suffix}"))
    return found


def _read(module: Any, data: bytes) -> Document | None:
    result = module.read(data)
    return result.document if result.ok else None


def _through(module: Any, document: Document) -> Document:
    back = _read(module, module.write(document).data)
    assert back is not None
    return back


@pytest.fixture(scope="module")
def corpus() -> Path | None:
    from tests.conftest import CORPUS

    return CORPUS if CORPUS.is_dir() else None


@pytest.mark.parametrize(("source", "target", "folder", "suffix"), [
    (swf, gwf, "swf", ".swf"), (gwf, swf, "gwf", ".gwf")], ids=["swf-gwf-swf", "gwf-swf-gwf"])
def test_traces_keep_what_both_formats_hold_value_for_value(
        corpus: Path | None, source: Any, target: Any, folder: str, suffix: str) -> None:
    files = _files(corpus, folder, suffix)
    assert files
    for path in files:
        original = _read(source, path.read_bytes())
        if original is None:
            continue  # (a file dcx rejects has its own tests)
        back = _through(source, _through(target, original))
        expected = expected_back(original, source.FORMAT, target.FORMAT)
        assert without_empty_parts(back, source.HOLDS) == without_empty_parts(
            expected, source.HOLDS), path.name
        shared = source.HOLDS & target.HOLDS
        assert restrict(back, shared) == restrict(original, shared) or restrict(
            back, shared) == restrict(expected, shared), path.name


def test_batsim_through_swf_keeps_every_job_it_can_run(corpus: Path | None) -> None:
    files = _files(corpus, "batsim", ".json")
    assert files
    for path in files:
        original = _read(batsim, path.read_bytes())
        if original is None or original.workload is None:
            continue
        as_swf = _through(swf, original)
        back = _through(batsim, as_swf)
        given = list(original.workload.tasks())
        kept = list(back.workload.tasks()) if back.workload is not None else []
        lost = {loss.field: loss for loss in conversion_losses(as_swf, batsim.FORMAT)}
        left = lost[LEFT_OUT].count if LEFT_OUT in lost else 0
        assert len(kept) + (left or 0) == len(given), path.name
        by_id = {str(task.id): task for task in given}  # (SWF reads "7" back as 7)
        renumbered = "task.id" in {loss.field for loss in conversion_losses(original,
                                                                            swf.FORMAT)}
        written = [given[index] for index in swf_codec._submit_order(given)]
        for task in kept:
            # ids SWF cannot write are numbered 1, 2, … in written (submit-time) order (a
            # task.id loss); its times are whole seconds (requested time rounded up)
            before = written[int(task.id) - 1] if renumbered else by_id[str(task.id)]
            assert (task.requested_time_s, task.request.nodes, task.runtime_s,
                    task.submit_time_s) == (
                swf_codec._whole_requested_time(before.requested_time_s),
                before.request.nodes, swf_codec._whole_runtime(before.runtime_s),
                swf_codec._whole_submit(before.submit_time_s)), path.name
