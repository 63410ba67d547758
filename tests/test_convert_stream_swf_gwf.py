"""``dcx convert`` of a GWF trace to SWF a chunk at a time (``dcx.converters.stream_convert``'s
``_GwfSource`` to ``_SwfTarget``) against the whole-file path: for generated workflow and
archive files, valid or not, with chunks small enough to cut between any two lines (a
workflow cut between chunks, a dependency on a task of an earlier or later chunk, which SWF
writes as the preceding job), the same exit status, the same stderr and stdout lines (the
``job`` losses of a workflow cut between chunks counted once) and the same bytes, or
nothing written; a task with several dependencies, one of them in another chunk, is refused
with one line and writes nothing (SWF holds one); and a pipe."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.converters.stream_chunks import stream_pairs
from dcx.formats.gwf import codec
from tests.test_convert_stream_gwf import grouped_workflow, interleaved, run, sample, text_ids
from tests.test_gwf_fast import HEADER


def out_of_submit_order(data: bytes) -> bool:
    """Whether SWF's normal form moves some task of the GWF ``data`` (not in submit-time
    order), which the whole file sorts and a chunk at a time cannot."""
    from dcx.formats.swf import codec as swf_codec

    read = codec._read(data)
    assert read.document is not None and read.document.workload is not None
    order = swf_codec._submit_order(list(read.document.workload.tasks()))
    return order != sorted(order)


def several_dependencies(data: bytes) -> bool:
    """Whether some task of the GWF ``data`` has more than one dependency."""
    read = codec._read(data)
    assert read.document is not None and read.document.workload is not None
    return any(len(task.dependencies) > 1 for job in read.document.workload.jobs
               for task in job.tasks)


def both(data: bytes, chunk_bytes: int, *options: str) -> str:
    """The whole-file and the streamed conversion of the GWF ``data`` to SWF agree, or the
    streamed one refuses (``convert.not-streamable``) in one line for a reason the file has
    and writes nothing; what happened."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.gwf"
        source.write_bytes(data)
        whole_out, streamed_out = Path(folder) / "whole.swf", Path(folder) / "s.swf"
        whole = run(["convert", str(source), str(whole_out), "--to", "swf", *options],
                    stream=False)
        streamed = run(["convert", str(source), str(streamed_out), "--to", "swf", *options],
                       stream=True, chunk_bytes=chunk_bytes)
        if "cannot convert in chunks" in streamed[1]:
            assert streamed[0] == 1 and not streamed_out.exists()
            assert streamed[1].count("\n") == 1
            assert ("a task with several dependencies" in streamed[1]
                    and several_dependencies(data)) or (
                "workflow whose tasks are not on consecutive lines" in streamed[1]
                and interleaved(data)) or ("ids that are text" in streamed[1]
                                           and text_ids(data)) or (
                "submit" in streamed[1] and out_of_submit_order(data))
            assert sorted(os.listdir(folder)) == ["in.gwf", *([whole_out.name]
                                                              if whole[0] == 0 else [])]
            return "refused"
        assert streamed == (whole[0], whole[1].replace(whole_out.name, streamed_out.name))
        assert whole_out.exists() == streamed_out.exists() == (whole[0] == 0)
        if whole[0] == 0:
            assert streamed_out.read_bytes() == whole_out.read_bytes()
        return "converted" if whole[0] == 0 else "invalid"


def one_dependency_workflow(seed: int, tasks: int) -> str:
    """``grouped_workflow`` with each task's dependencies cut to its first: every
    dependency on a task of another chunk is one SWF writes as the preceding job."""
    lines = []
    for line in grouped_workflow(seed, tasks).split("\n"):
        values = line.split(",")
        if len(values) == 7 and not line.startswith("#"):
            needs = values[6].split()
            values[6] = " " + needs[0] if needs else values[6]
        lines.append(",".join(values))
    return "\n".join(lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 60), st.sampled_from((1, 60, 300, 2000)),
       st.sampled_from(((), ("--losses",), ("--strict",), ("-v",), ("--output", "json"))),
       st.booleans(), st.booleans())
def test_streamed_gwf_to_swf_is_the_whole_file_conversion(seed, tasks, chunk_bytes, options,
                                                          fast, one_dependency):
    data = one_dependency_workflow(seed, tasks).encode() if one_dependency \
        else sample(seed, tasks)
    with pytest.MonkeyPatch.context() as patch:
        if fast:  # every chunk tries the vectorised accept path (columns)
            patch.setattr(codec, "FAST_READ_BYTES", 0)
        both(data, chunk_bytes, *options)


def test_workflows_cut_between_chunks_and_dependencies_across_them():
    """Workflows cut between chunks (their ``job`` loss counted once) and a dependency on
    a task many chunks back or ahead (the preceding job): the whole file's bytes and report,
    read line by line or as columns."""
    data = one_dependency_workflow(5, 200).encode()
    assert not several_dependencies(data)
    for fast in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            if fast:
                patch.setattr(codec, "FAST_READ_BYTES", 0)
            for chunk_bytes in (1, 90, 700):
                assert both(data, chunk_bytes, "--losses") == "converted"
    # one workflow of three tasks, one a chunk: one job lost, as in the whole file
    lines = [HEADER, "7, 1, 0, 10, 1, 1, ", "7, 2, 0, 10, 1, 1, 1", "7, 3, 0, 10, 1, 1, 2"]
    data = ("\n".join(lines) + "\n").encode()
    assert both(data, 1, "--losses") == "converted"
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.gwf"
        source.write_bytes(data)
        code, said = run(["convert", str(source), str(Path(folder) / "s.swf"), "--losses"],
                         stream=True, chunk_bytes=1)
    assert code == 0 and "  job: 1 value (" in said


def test_an_archive_file_converts_to_swf_in_chunks():
    from tests.test_gwf_fast import archive_text

    assert both(archive_text(3, 300).encode(), 500, "--losses") == "converted"


def test_several_dependencies_one_in_another_chunk_are_refused_and_nothing_is_written():
    """SWF holds one preceding job: a task that needs two tasks, one of them in an earlier
    chunk, is refused in one line, OUTPUT left as it was; the whole file converts (losing
    the second dependency)."""
    lines = [HEADER, "1, 1, 0, 10, 1, 1, ", "1, 2, 0, 10, 1, 1, 1", "1, 3, 0, 10, 1, 1, 1 2"]
    data = ("\n".join(lines) + "\n").encode()
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "in.gwf", Path(folder) / "out.swf"
        source.write_bytes(data)
        out.write_bytes(b"before")
        code, said = run(["convert", str(source), str(out)], stream=True, chunk_bytes=1)
        assert code == 1
        assert said == (f"{source}: error: /: cannot convert in chunks: a task with several "
                        "dependencies, one of them on a task of another chunk (SWF holds "
                        "one); convert a file under the input size limit\n")
        assert out.read_bytes() == b"before"
        assert sorted(os.listdir(folder)) == ["in.gwf", "out.swf"]
        assert run(["convert", str(source), str(out)], stream=False)[0] == 0
        # the same task with both dependencies in its chunk converts in chunks
        assert both(data, 1 << 20) == "converted"


def test_a_gwf_pipe_converts_to_swf_in_chunks():
    """``cat big.gwf | dcx convert - - --from gwf --to swf`` beyond the streaming threshold
    (lowered here): the whole file's bytes."""
    data = one_dependency_workflow(11, 3000).encode()
    program = ("import sys\nfrom dcx.converters import streaming\nfrom dcx.parsing import "
               "chunks\nfrom dcx.cli.main import main\nstreaming.STREAM_BYTES = 1 << 12\n"
               "chunks.CHUNK_BYTES = 1 << 11\nsys.exit(main(sys.argv[1:]))\n")
    assert len(data) > 1 << 13
    read_whole = codec.read(data).document
    assert read_whole is not None
    from dcx.formats.swf import codec as swf_codec

    expected = swf_codec.write(swf_codec.normal_form(read_whole)).data
    done = subprocess.run([sys.executable, "-c", program, "convert", "-", "-", "--from", "gwf",
                           "--to", "swf"], input=data, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


def test_the_pair_streams():
    assert ("gwf", "swf") in stream_pairs()
