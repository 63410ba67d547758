"""A large OpenDC workload folder read a row group at a time (``formats/opendc_workload/
stream.py``, ``stream_source.OpendcWorkloadSource``) against the whole-folder reader: for
generated folders, valid or not, both files cut into row groups of a few rows (a task's
fragments cut between row groups, on rows apart, out of the tasks' order), ``dcx validate``
and ``dcx info`` say what they say of the folder read whole, and ``dcx convert`` to Parquet,
SWF, GWF, Batsim and osp-workload gives the same exit status, report and table or bytes."""

from __future__ import annotations

import contextlib
import io
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.cli.main import main
from dcx.converters import streaming
from dcx.converters.folders import folder_format
from dcx.converters.partitions import read_parts
from dcx.converters.stream_chunks import stream_pairs
from dcx.formats import opendc_workload as odc
from dcx.formats.opendc_workload import FORMAT
from dcx.formats.opendc_workload.stream_source import OpendcWorkloadSource

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("DCX_CORPUS", REPO.parent / "shared" / "corpus"))
TARGETS = tuple(sorted(to for source, to in stream_pairs() if source == FORMAT.name
                       and to != FORMAT.name))
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def run(args: list[str], parts: bool, slice_tasks: int = 3) -> tuple[int, str]:
    """``dcx ARGS`` in this process, the folder read in parts (slices of ``slice_tasks``
    tasks) or whole; exit code, and stderr followed by stdout."""
    err, out = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(out):
        patch.setattr(streaming, "STREAM_BYTES", 0 if parts else float("inf"))
        patch.setattr(OpendcWorkloadSource, "SLICE_TASKS", slice_tasks)
        code = main(args)
    return code, err.getvalue() + out.getvalue()


# ------------------------------------------------------------------------------ folders


def folder_tables(seed: int, tasks: int, broken: bool) -> dict[str, pa.Table]:
    """A tasks and a fragments table: ids counting up or not, optional columns (names, GPU
    capacities, deferrable, deadlines, parents or children, OpenDC's aliases), fragments of
    one to three rows per task, in the tasks' order or not; ``broken``: one of the faults
    the reader reports (a null, a negative amount, an id used again, a parent that is no
    task, a cycle, a task without fragments, fragments of no task, a wrong type)."""
    rng = random.Random(seed)
    ids = (rng.sample(range(-50, 200), tasks) if rng.random() < 0.1
           else rng.sample(range(1, 200), tasks) if rng.random() < 0.3
           else list(range(1, tasks + 1)))
    columns: dict[str, Any] = {
        "id": pa.array(ids, pa.int32()),
        rng.choice(("submission_time", "submissionTime")): pa.array(
            [1_700_000_000_000 + rng.randrange(0, 10 ** 7) for _ in ids],
            pa.timestamp("ms", tz="UTC")),
        "duration": pa.array([rng.choice((0, 1_000, 60_000)) for _ in ids], pa.int64()),
        rng.choice(("cpu_count", "maxCores")): pa.array([rng.randint(1, 4) for _ in ids],
                                                        pa.int32()),
        "cpu_capacity": pa.array([rng.choice((1000.0, 2000.0, 2500.0)) for _ in ids],
                                 pa.float64()),
        "mem_capacity": pa.array([rng.choice((0, 1_024_000)) for _ in ids], pa.int64()),
    }
    if rng.random() < 0.5:
        columns["name"] = pa.array([rng.choice(("a", None)) for _ in ids], pa.string())
    if rng.random() < 0.3:
        columns["gpu_count"] = pa.array([rng.choice((0, 1, None)) for _ in ids], pa.int32())
        columns["gpu_capacity"] = pa.array([rng.choice((None, 500.0)) for _ in ids],
                                          pa.float64())
    if rng.random() < 0.3:
        columns["deferrable"] = pa.array([rng.random() < 0.2 for _ in ids])
    if rng.random() < 0.3:
        columns["deadline"] = pa.array([rng.choice((-1, 1_800_000_000_000)) for _ in ids],
                                       pa.int64())
    many = rng.choice((1, 2))  # (SWF holds one dependency per task)
    lists = [sorted(rng.sample(ids[:row], min(row, rng.choice((0, 0, 1, many)))))
             for row in range(tasks)]
    if rng.random() < 0.3:  # the same dependencies, each task naming its children
        children: dict[int, list[int]] = {task: [] for task in ids}
        for row, parents in enumerate(lists):
            for parent in parents:
                children[parent].append(ids[row])
        columns["children"] = pa.array([children[task] for task in ids], pa.list_(pa.int32()))
    elif rng.random() < 0.9:
        columns["parents"] = pa.array(lists, pa.list_(pa.int32()))
    fragment_ids = [task for task in ids for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.4:
        rng.shuffle(fragment_ids)  # a task's fragments apart and out of the tasks' order
    fragments: dict[str, Any] = {
        "id": pa.array(fragment_ids, pa.int32()),
        "duration": pa.array([rng.choice((1_000, 60_000)) for _ in fragment_ids], pa.int64()),
        rng.choice(("cpu_usage", "cpuUsage")): pa.array(
            [rng.choice((1000.0, 2000.0, 1234.5)) for _ in fragment_ids], pa.float64()),
    }
    if rng.random() < 0.2:
        fragments["gpu_usage"] = pa.array([rng.choice((None, 10.0)) for _ in fragment_ids],
                                          pa.float64())
    tables = {"tasks": columns, "fragments": fragments}
    if broken:
        _break(rng, tables, ids)
    metadata = ({b"dcx:time_origin": b"2023-11-14T22:13:20Z"} if rng.random() < 0.3
                else None)
    tasks_table = pa.table(tables["tasks"])
    if metadata is not None:
        tasks_table = tasks_table.replace_schema_metadata(metadata)
    return {"tasks.parquet": tasks_table, "fragments.parquet": pa.table(tables["fragments"])}


def _break(rng: random.Random, tables: dict[str, dict[str, Any]], ids: list[int]) -> None:
    member = rng.choice(("tasks", "fragments"))
    columns = tables[member]
    rows = len(columns["id"])
    fault = rng.choice(("null", "negative", "again", "unknown", "cycle", "no-fragments",
                        "stray", "type"))
    if not rows and fault not in ("stray", "type"):
        fault = "stray"
    at = rng.randrange(rows) if rows else 0
    if fault in ("null", "negative"):
        name = rng.choice([name for name in columns if name not in ("name", "parents",
                                                                    "children", "deferrable")])
        values = columns[name].to_pylist()
        if fault == "negative" and values[at] is not None and name not in (
                "id", "submission_time", "submissionTime", "deadline"):
            values[at] = -values[at] - 1
        else:
            values[at] = None
        columns[name] = pa.array(values, columns[name].type)
    elif fault == "again" and rows > 1 and member == "tasks":
        values = columns["id"].to_pylist()
        values[at] = values[(at + 1) % rows]
        columns["id"] = pa.array(values, pa.int32())
    elif fault in ("unknown", "cycle") and "parents" in tables["tasks"]:
        parents = tables["tasks"]["parents"].to_pylist()
        wanted = 10_000 if fault == "unknown" else ids[-1]
        parents[rng.randrange(len(ids))] = [wanted]
        tables["tasks"]["parents"] = pa.array(parents, pa.list_(pa.int32()))
    elif fault == "no-fragments" and ids:
        kept = [row for row, task in enumerate(tables["fragments"]["id"].to_pylist())
                if task != rng.choice(ids)]
        tables["fragments"] = {name: column.take(pa.array(kept, pa.int64()))
                               for name, column in tables["fragments"].items()}
    elif fault == "type":
        columns["duration"] = columns["duration"].cast(pa.float64())
    else:  # fragments of no task
        fragments = tables["fragments"]
        extra = {name: pa.array([column.to_pylist()[0] if len(column) else 1], column.type)
                 for name, column in fragments.items()}
        extra["id"] = pa.array([9_999], pa.int32())
        tables["fragments"] = {name: pa.concat_arrays([fragments[name], extra[name]])
                               for name in fragments}


def write_folder(folder: Path, tables: dict[str, pa.Table], task_rows: int,
                 fragment_rows: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        pq.write_table(table, folder / name,
                       row_group_size=task_rows if name == "tasks.parquet" else fragment_rows)
    return folder


# ------------------------------------------------------------------------------ validate


def validated(folder: Path, *options: str, slice_tasks: int = 3) -> tuple[int, str]:
    """What ``dcx validate`` says of the folder read whole, held to what it says read in
    parts."""
    whole = run(["validate", str(folder), *options], parts=False)
    parted = run(["validate", str(folder), *options], parts=True, slice_tasks=slice_tasks)
    assert parted == whole
    return whole


@SETTINGS
@given(st.integers(0, 10_000), st.integers(0, 12), st.booleans(), st.integers(1, 5),
       st.integers(1, 7), st.sampled_from(((), ("--output", "json"), ("--strict",))))
def test_validate_in_parts_says_what_the_whole_folder_read_says(
        tmp_path_factory, seed, tasks, broken, task_rows, fragment_rows, options):
    folder = write_folder(tmp_path_factory.mktemp("w") / "w",
                          folder_tables(seed, tasks, broken), task_rows, fragment_rows)
    validated(folder, *options)
    for shown in ((), ("--output", "json")):
        whole = run(["info", str(folder), *shown], parts=False)
        assert run(["info", str(folder), *shown], parts=True) == whole


def test_the_part_reader_gives_the_whole_readers_diagnostics_and_counts(tmp_path):
    """``read_parts`` of the folder against ``read`` of its archive, for each fault."""
    from dcx.cli.main import workload_summary
    from dcx.converters.folders import read_folder

    for seed in range(40):
        folder = write_folder(tmp_path / str(seed), folder_tables(seed, 9, seed % 2 == 1),
                              2, 3)
        whole = odc.read(read_folder(str(folder), FORMAT))
        parted = read_parts(str(folder), FORMAT)
        assert parted.diagnostics == whole.diagnostics, seed
        if whole.document is not None:
            summary = workload_summary(whole.document.workload)
            assert (parted.jobs, parted.tasks, parted.dependencies) == (
                summary["jobs"], summary["tasks"], summary["dependencies"])


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A Dask cluster of two worker threads in this process: the partition path as it runs
    on workers, each opening the folder's files by their paths."""
    pytest.importorskip("distributed", reason="dask[distributed] is in the test extra")
    from dcx.converters.partitions import local_client

    cluster, client = local_client(2, processes=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.mark.enable_socket
def test_row_groups_checked_on_a_cluster_give_the_whole_readers_diagnostics(client, tmp_path):
    for seed in range(8):
        folder = write_folder(tmp_path / str(seed), folder_tables(seed, 7, seed % 2 == 1),
                              2, 3)
        assert read_parts(str(folder), FORMAT, client) == read_parts(str(folder), FORMAT)


@pytest.mark.parametrize("member", ["tasks.parquet", "fragments.parquet"])
def test_a_missing_or_damaged_member_is_reported_as_read_reports_it(tmp_path, member):
    folder = write_folder(tmp_path / "w", folder_tables(1, 5, False), 2, 2)
    (folder / member).unlink()
    assert validated(folder)[0] == 1
    (folder / member).write_bytes(b"PAR1 not a parquet file")
    assert validated(folder)[0] == 1
    (folder / member).write_bytes(b"PAR1")
    assert validated(folder)[0] == 1


def test_a_folder_below_the_threshold_is_read_whole(tmp_path, monkeypatch):
    """Below ``STREAM_BYTES`` the folder is packed whole, as before; from it, in parts."""
    folder = write_folder(tmp_path / "w", folder_tables(2, 6, False), 2, 2)
    size = sum(path.stat().st_size for path in folder.iterdir())
    monkeypatch.setattr(streaming, "STREAM_BYTES", size + 1)
    assert streaming.read_in_parts(str(folder), None, [FORMAT]) is None
    monkeypatch.setattr(streaming, "STREAM_BYTES", size)
    found = streaming.read_in_parts(str(folder), None, [FORMAT])
    assert found is not None and found[0] is FORMAT
    assert streaming.read_in_parts(str(folder), "parquet", [FORMAT]) is None


def test_the_folders_archive_above_the_threshold_is_read_whole(tmp_path, monkeypatch):
    """A tar archive of the folder's files (what a pipe carries) is no folder to read in
    parts: a file or a pipe of it above ``STREAM_BYTES`` is read whole, as before."""
    from dcx.converters.folders import read_folder

    folder = write_folder(tmp_path / "w", folder_tables(3, 6, False), 2, 2)
    archive = tmp_path / "w.tar"
    archive.write_bytes(read_folder(str(folder), FORMAT))
    monkeypatch.setattr(streaming, "STREAM_BYTES", 100)
    assert streaming.read_in_parts(str(archive), None, [FORMAT]) is None
    data, problem, streamed = streaming.read_or_stream(str(archive), None, [FORMAT])
    assert (data, problem, streamed) == (archive.read_bytes(), None, None)
    with archive.open("rb") as stream:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(stream))
        data, problem, streamed = streaming.read_or_stream("-", None, [FORMAT])
    assert (data, problem, streamed) == (archive.read_bytes(), None, None)
    data, problem, source = streaming.convert_input(str(archive), None, lambda spec: True)
    assert (data, problem, source) == (archive.read_bytes(), None, None)


# ------------------------------------------------------------------------------ convert


def converted(tables: dict[str, pa.Table], to: str, *options: str, task_rows: int = 2,
              fragment_rows: int = 3, slice_tasks: int = 3) -> str:
    """The whole-folder and the parted conversion of the folder to ``to`` agree, or the
    parted one refuses (``convert.not-streamable``) in one line and writes nothing; what
    happened."""
    with tempfile.TemporaryDirectory() as where:
        folder = write_folder(Path(where) / "in", tables, task_rows, fragment_rows)
        whole_out, parted_out = Path(where) / f"whole.{to}", Path(where) / f"parts.{to}"
        arguments = ["--to", to, *options]
        whole = run(["convert", str(folder), str(whole_out), *arguments], parts=False)
        parted = run(["convert", str(folder), str(parted_out), *arguments], parts=True,
                     slice_tasks=slice_tasks)
        if "cannot convert in chunks" in parted[1]:
            assert parted[0] == 1 and not parted_out.exists()
            assert parted[1].count("\n") == 1
            return "refused"
        assert parted == (whole[0], whole[1].replace(whole_out.name, parted_out.name))
        assert whole_out.exists() == parted_out.exists() == (whole[0] == 0)
        if whole[0] == 0 and to == "parquet":
            expected, found = pq.read_table(whole_out), pq.read_table(parted_out)
            assert found.equals(expected)
            assert found.schema.equals(expected.schema, check_metadata=True)
        elif whole[0] == 0:
            assert parted_out.read_bytes() == whole_out.read_bytes()
        return "converted" if whole[0] == 0 else "invalid"


@SETTINGS
@given(st.integers(0, 10_000), st.integers(0, 12), st.booleans(), st.integers(1, 5),
       st.integers(1, 7), st.integers(1, 6),
       st.sampled_from(((), ("--losses",), ("--strict",), ("--output", "json"))),
       st.sampled_from(TARGETS))
def test_conversion_in_parts_is_the_whole_folders_conversion(
        seed, tasks, broken, task_rows, fragment_rows, slice_tasks, options, to):
    converted(folder_tables(seed, tasks, broken), to, *options, task_rows=task_rows,
              fragment_rows=fragment_rows, slice_tasks=slice_tasks)


def _in_submit_order(tasks: pa.Table) -> pa.Table:
    """The tasks' submission times in ascending order, as SWF lines are (a folder converted
    to SWF in slices whose submits go back is refused, since the whole file sorts them)."""
    column = "submissionTime" if "submissionTime" in tasks.column_names else "submission_time"
    index = tasks.schema.get_field_index(column)
    return tasks.set_column(index, column, tasks.column(index).sort())


def _profiled(fragment_ids: list[int]) -> dict[str, pa.Table]:
    """Three tasks, each with a profile of several fragments, whose rows are as given."""
    tables = folder_tables(3, 3, False)
    tasks = _in_submit_order(tables["tasks.parquet"])
    tasks = tasks.set_column(0, "id", pa.array([1, 2, 3], pa.int32()))
    tasks = tasks.drop_columns([name for name in ("parents", "children")
                                if name in tasks.column_names])
    count = len(fragment_ids)
    fragments = pa.table({"id": pa.array(fragment_ids, pa.int32()),
                          "duration": pa.array([10 * (row + 1) for row in range(count)],
                                               pa.int64()),
                          "cpu_usage": pa.array([float(row) for row in range(count)])})
    return {"tasks.parquet": tasks, "fragments.parquet": fragments}


@pytest.mark.parametrize("order", [
    [1, 1, 2, 2, 2, 3, 3],  # in the tasks' order, contiguous
    [1, 2, 1, 3, 2, 3, 2],  # a task's fragments on rows apart
    [3, 3, 2, 2, 1, 1, 1],  # contiguous, against the tasks' order
])
def test_fragments_apart_or_out_of_order_are_joined_as_the_whole_reader_joins_them(order):
    """Each task's profile is its fragments in file order, wherever they are: the table and
    bytes of the whole folder, whatever the row groups and slices."""
    from dcx.formats.opendc_workload.codec import PROFILE

    tables = _profiled(order)
    for to in ("parquet", "swf"):
        for fragment_rows in (1, 2, 7):
            assert converted(tables, to, "--losses", task_rows=1, fragment_rows=fragment_rows,
                             slice_tasks=1) == "converted"
    with tempfile.TemporaryDirectory() as where:
        folder = write_folder(Path(where) / "in", tables, 1, 2)
        out = Path(where) / "out.parquet"
        assert run(["convert", str(folder), str(out)], parts=True, slice_tasks=1)[0] == 0
        profiles = pq.read_table(out).column(f"extras_json.{PROFILE}").to_pylist()
        expected = [[[10 * (row + 1), float(row)] for row, task in enumerate(order)
                     if task == wanted] for wanted in (1, 2, 3)]
        import json
        assert [json.loads(text) for text in profiles] == expected


def test_dependencies_across_slices_and_children_convert(tmp_path):
    """Every task depending on the one before (the previous slice's, often), given as
    parents and as children: the whole folder's bytes and tables."""
    tables = folder_tables(5, 30, False)
    tasks = tables["tasks.parquet"].drop_columns(
        [name for name in ("parents", "children") if name in tables["tasks.parquet"].column_names])
    ids = tasks.column("id").to_pylist()
    with_parents = tasks.append_column("parents", pa.array(
        [[ids[row - 1]] if row else [] for row in range(len(ids))], pa.list_(pa.int32())))
    with_children = tasks.append_column("children", pa.array(
        [[ids[row + 1]] if row + 1 < len(ids) else [] for row in range(len(ids))],
        pa.list_(pa.int32())))
    for table in (with_parents, with_children):
        for to in TARGETS:
            result = converted({**tables, "tasks.parquet": table}, to, "--losses",
                               task_rows=4, slice_tasks=3)
            assert result in ("converted", "refused"), to
        assert converted({**tables, "tasks.parquet": table}, "parquet") == "converted"


def test_an_empty_folder_and_an_invalid_one_are_refused_as_whole(tmp_path):
    assert converted(folder_tables(1, 0, False), "swf") == "invalid"
    for seed in range(10):
        assert converted(folder_tables(seed, 6, True), "parquet") in ("invalid", "converted")


# ------------------------------------------------------------------------------ the corpus


def _corpus_folders() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted({path.parent for path in CORPUS.rglob("tasks.parquet")
                   if folder_format(str(path.parent)) is FORMAT})


def test_corpus_folders_read_in_parts_say_what_they_say_whole():
    folders = _corpus_folders()
    if not folders:
        pytest.skip(f"no OpenDC workload folder (tasks.parquet) under {CORPUS}" + (
            "" if CORPUS.is_dir() else ": set DCX_CORPUS"))
    for folder in folders:
        validated(folder, "--output", "json", slice_tasks=1 << 16)


def test_a_value_path_changed_in_one_slice_counts_every_value_of_the_folder():
    """To SWF, memory per node changes only for the task with two cores (the second slice),
    yet the whole conversion counts every memory value of the folder, and its first place
    is the first task's: so does the conversion in slices (SWF's target counts a value path
    in every chunk and leaves it out when no chunk changes one)."""
    tables = folder_tables(4, 3, False)
    tasks = _in_submit_order(tables["tasks.parquet"])
    cores = "cpu_count" if "cpu_count" in tasks.column_names else "maxCores"
    tasks = tasks.set_column(tasks.schema.get_field_index(cores), cores,
                             pa.array([1, 2, 1], pa.int32()))
    tasks = tasks.set_column(tasks.schema.get_field_index("mem_capacity"), "mem_capacity",
                             pa.array([1_024_000] * 3, pa.int64()))
    assert converted({**tables, "tasks.parquet": tasks}, "swf", "--losses", task_rows=1,
                     slice_tasks=1) == "converted"


def test_workers_convert_a_folder_in_this_process(tmp_path):
    """``--workers`` converts a Parquet file's row groups on Dask; a folder's slices convert
    in this process, no cluster started (sockets are blocked here), with the same output."""
    folder = write_folder(tmp_path / "w", folder_tables(8, 9, False), 2, 3)
    alone, with_workers = tmp_path / "a.gwf", tmp_path / "b.gwf"
    first = run(["convert", str(folder), str(alone)], parts=True)
    second = run(["convert", str(folder), str(with_workers), "--workers", "2"], parts=True)
    assert first[0] == 0 and second == (0, first[1].replace("a.gwf", "b.gwf"))
    assert alone.read_bytes() == with_workers.read_bytes()


def _profiles_one_by_one(ids, duration, capacity, fragment_ids, spans, usage, gpu_usage):
    """``codec.profile_texts`` by its definition, a task at a time."""
    import json
    import math

    import numpy as np

    texts: dict[str, int] = {}
    codes = []
    for task, runtime, cores_capacity in zip(ids.tolist(), duration.tolist(),
                                            capacity.tolist(), strict=True):
        rows = np.flatnonzero(fragment_ids == task).tolist()
        pieces = [[int(spans[r]), float(usage[r])] if math.isnan(gpu_usage[r])
                  else [int(spans[r]), float(usage[r]), float(gpu_usage[r])] for r in rows]
        trivial = pieces == [[runtime, cores_capacity]]  # (no fragments: the profile [])
        codes.append(-1 if trivial else texts.setdefault(json.dumps(pieces), len(texts)))
    return (codes, tuple(texts)) if texts else None


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_profile_texts_are_each_tasks_fragments_in_file_order(data):
    """The profiles built a batch of tasks at a time (from Python numbers taken at once, each
    distinct profile once) are those built task by task, whatever the batch size."""
    import numpy as np

    from dcx.formats.opendc_workload import codec

    ids = np.array(data.draw(st.lists(st.integers(-5, 20), max_size=12, unique=True)),
                   dtype=np.int64)
    rows = data.draw(st.integers(0, 40))
    pick = st.sampled_from([*ids.tolist(), 99])
    fragment_ids = np.array([data.draw(pick) for _ in range(rows)], dtype=np.int64)
    amounts = st.sampled_from((0.0, 1000.0, 0.1 + 0.2, 1e300, float("inf"), float("nan")))
    spans = np.array([data.draw(st.sampled_from((0, 5))) for _ in range(rows)], dtype=np.int64)
    usage = np.array([data.draw(amounts) for _ in range(rows)])
    gpu_usage = np.array([data.draw(st.sampled_from((float("nan"), 3.5))) for _ in range(rows)])
    duration = np.array([data.draw(st.sampled_from((0, 5))) for _ in ids], dtype=np.int64)
    capacity = np.array([data.draw(st.sampled_from((0.0, 1000.0))) for _ in ids])
    expected = _profiles_one_by_one(ids, duration, capacity, fragment_ids, spans, usage,
                                    gpu_usage)
    for batch in (1, 3, 1 << 14):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(codec, "_PROFILES_AT_ONCE", batch)
            patch.setattr(codec, "_FRAGMENTS_AT_ONCE", batch)
            found = codec.profile_texts(ids, duration, capacity, fragment_ids, spans, usage,
                                        gpu_usage)
        assert (None if found is None else (found.codes.tolist(), found.values)) == expected


def test_a_profile_first_met_in_a_later_slice_is_written_in_one_reading(tmp_path):
    """The tasks of the first slices have one fragment of their runtime at their capacity
    (no profile), a later task several: the Parquet output's profile column is known from
    the fragments' counts before the first slice, so the folder's tasks are read once (the
    output written while it is checked), and the table is the whole conversion's."""
    from dcx.formats.opendc_workload import stream

    tables = _profiled([1, 2, 3, 3])
    tasks = tables["tasks.parquet"]
    tasks = tasks.set_column(tasks.schema.get_field_index("duration"), "duration",
                             pa.array([10, 20, 60], pa.int64()))
    fragments = tables["fragments.parquet"]
    capacity = tasks.column("cpu_capacity").to_pylist()
    fragments = fragments.set_column(2, "cpu_usage",
                                     pa.array([capacity[0], capacity[1], 1.0, 2.0]))
    tables = {"tasks.parquet": tasks, "fragments.parquet": fragments}
    readings = []
    slices = stream.task_slices

    def counted(*args, **kwargs):
        readings.append(1)
        return slices(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stream, "task_slices", counted)
        assert converted(tables, "parquet", task_rows=1, fragment_rows=1,
                         slice_tasks=1) == "converted"
    assert len(readings) == 1
