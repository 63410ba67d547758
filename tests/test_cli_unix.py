"""``dcx`` as a Unix user meets it: a subprocess, real files, pipes, a FIFO and a pty.

Streams (``-``, ``/dev/stdout``, special files), permissions, which stream carries what,
exit codes, format names, hook mode and ``dcx info``.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dcx.converters.folders import member_of

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
CLUSTER = EXAMPLES / "environment" / "small-cluster.json"
SSS = EXAMPLES / "sss" / "cluster.xml"
SWF = EXAMPLES / "swf" / "small-cluster.swf"
GWF = EXAMPLES / "gwf" / "grid-archive.gwf"
SLURM = EXAMPLES / "slurm" / "cluster.conf"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix streams and modes")


def dcx_command() -> list[str]:
    """The installed ``dcx`` script next to this interpreter, or the module."""
    script = Path(sys.executable).parent / "dcx"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dcx.cli"]


def dcx(*args: str | Path, stdin: bytes | None = None, umask: int | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    def set_umask() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run([*dcx_command(), *map(str, args)], input=stdin,
                          capture_output=True, cwd=cwd, timeout=120,
                          preexec_fn=set_umask if umask is not None else None)


def text(done: subprocess.CompletedProcess[bytes]) -> str:
    return done.stdout.decode() + done.stderr.decode()


# ------------------------------------------------------------------------------ stdin, stdout


def test_dash_reads_stdin_with_the_format_from_the_content() -> None:
    done = dcx("validate", "-", stdin=CLUSTER.read_bytes())
    assert done.returncode == 0, text(done)
    assert done.stdout == b""
    assert done.stderr.decode().startswith("<stdin>: valid environment (4 machines)")


def test_dash_reads_stdin_with_from() -> None:
    done = dcx("info", "-", "--from", "SWF", stdin=SWF.read_bytes())
    assert done.returncode == 0, text(done)
    assert done.stdout.decode().startswith("<stdin>: swf")


def test_errors_on_stdin_are_located_at_stdin() -> None:
    done = dcx("validate", "-", stdin=b'{"environment": {"datacenters": 5}}\n')
    assert done.returncode == 1
    assert done.stdout == b""
    assert done.stderr.decode().startswith("<stdin>:1:")


def test_dash_writes_the_data_to_stdout_and_the_summary_to_stderr(tmp_path: Path) -> None:
    done = dcx("convert", "-", "-", "--to", "sss", stdin=CLUSTER.read_bytes(), cwd=tmp_path)
    assert done.returncode == 0, text(done)
    assert done.stdout.startswith(b"<?xml")
    assert not (tmp_path / "-").exists()
    assert re.fullmatch(r"wrote <stdout> \(sss\): 4 machines; \d+ fields not held, "
                        r"--losses lists them\n", done.stderr.decode())
    check = dcx("validate", "--strict", "--format", "sss", "-", stdin=done.stdout)
    assert check.returncode == 0, text(check)


def test_stdout_without_to_is_a_usage_error() -> None:
    done = dcx("convert", CLUSTER, "-")
    assert done.returncode == 2
    assert "say --to FORMAT" in done.stderr.decode() and done.stdout == b""


def test_a_broken_pipe_ends_quietly() -> None:
    big = CLUSTER.read_bytes()
    producer = subprocess.Popen([*dcx_command(), "convert", str(CLUSTER), "-", "--to",
                                 "environment"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert producer.stdout is not None and producer.stderr is not None
    producer.stdout.read(10)
    producer.stdout.close()
    errors = producer.stderr.read().decode()
    producer.wait(timeout=60)
    assert "Traceback" not in errors and len(big) > 10


# ------------------------------------------------------------------------------ special files


def test_a_symlink_to_dev_stdout_stays_a_symlink(tmp_path: Path) -> None:
    """``/dev/stdout`` itself is such a symlink; as root, replacing it broke the machine.
    The same path is taken for any symlink chain that ends at a descriptor."""
    link = tmp_path / "out.xml"
    link.symlink_to("/dev/stdout")
    done = dcx("convert", CLUSTER, link, "--to", "sss")
    assert done.returncode == 0, text(done)
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"
    assert done.stdout.startswith(b"<?xml")


@pytest.mark.skipif(not Path("/dev/stdout").is_symlink(), reason="/dev/stdout is no symlink")
def test_dev_stdout_is_written_through_and_not_replaced(tmp_path: Path) -> None:
    before = os.lstat("/dev/stdout")
    done = dcx("convert", CLUSTER, "/dev/stdout", "--to", "sss")
    assert done.returncode == 0, text(done)
    assert done.stdout.startswith(b"<?xml")
    after = os.lstat("/dev/stdout")
    assert stat.S_ISLNK(after.st_mode) and after.st_ino == before.st_ino


def test_dev_stdout_redirected_to_a_file_appends_when_the_shell_appends(tmp_path: Path) -> None:
    target = tmp_path / "log.xml"
    target.write_bytes(b"first line\n")
    with open(target, "ab") as stream:
        done = subprocess.run([*dcx_command(), "convert", str(CLUSTER), "/dev/stdout",
                               "--to", "sss"], stdout=stream, stderr=subprocess.PIPE,
                              timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    written = target.read_bytes()
    assert written.startswith(b"first line\n<?xml")


def _drain(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as stream:
            into.append(stream.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def test_a_fifo_output_is_written_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = _drain(fifo, received)
    done = dcx("convert", CLUSTER, fifo, "--to", "sss")
    reader.join(timeout=60)
    assert done.returncode == 0, text(done)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received and received[0].startswith(b"<?xml")


def test_a_fifo_input_is_read_to_its_end(tmp_path: Path) -> None:
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as stream:
            stream.write(CLUSTER.read_bytes())

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    done = dcx("validate", fifo)
    writer.join(timeout=60)
    assert done.returncode == 0, text(done)
    assert "valid environment (4 machines)" in done.stderr.decode()


# ------------------------------------------------------------------------------ permissions


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_0666_less_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    output = tmp_path / "out.xml"
    done = dcx("convert", CLUSTER, output, "--to", "sss", umask=umask)
    assert done.returncode == 0, text(done)
    assert stat.S_IMODE(output.stat().st_mode) == mode


def test_a_replaced_file_keeps_its_mode(tmp_path: Path) -> None:
    output = tmp_path / "out.xml"
    output.write_bytes(b"old")
    output.chmod(0o640)
    done = dcx("convert", CLUSTER, output, "--to", "sss", umask=0o022)
    assert done.returncode == 0, text(done)
    assert output.read_bytes().startswith(b"<?xml")
    assert stat.S_IMODE(output.stat().st_mode) == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may give a file to another owner")
def test_a_replaced_file_keeps_its_owner_when_root_writes_it(tmp_path: Path) -> None:
    output = tmp_path / "out.xml"
    output.write_bytes(b"old")
    os.chown(output, 1234, 5678)
    done = dcx("convert", CLUSTER, output, "--to", "sss")
    assert done.returncode == 0, text(done)
    assert (output.stat().st_uid, output.stat().st_gid) == (1234, 5678)


def test_a_symlink_to_a_regular_file_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.xml"
    real.write_bytes(b"old")
    link = tmp_path / "link.xml"
    link.symlink_to(real.name)
    done = dcx("convert", CLUSTER, link, "--to", "sss")
    assert done.returncode == 0, text(done)
    assert link.is_symlink() and real.read_bytes().startswith(b"<?xml")


# ------------------------------------------------------------------------------ messages


def test_convert_says_one_summary_line_and_losses_on_request(tmp_path: Path) -> None:
    output = tmp_path / "out.xml"
    done = dcx("convert", CLUSTER, output, "--to", "sss")
    assert done.stdout == b""
    [line] = done.stderr.decode().splitlines()
    match = re.fullmatch(rf"wrote {re.escape(str(output))} \(sss\): 4 machines; "
                         r"(\d+) fields not held, --losses lists them", line)
    assert match, line
    listed = dcx("convert", CLUSTER, output, "--to", "sss", "--losses")
    lines = listed.stderr.decode().splitlines()
    assert lines[0].endswith("fields not held")
    assert len(lines[1:]) == int(match.group(1))
    assert all(re.match(r"  [a-z_.]+: ", line) for line in lines[1:])
    assert any(line.startswith("  cpu.clock_rate_hz: 7 values (first: ") for line in lines[1:])


def test_losses_name_the_first_value_dropped_at_its_line_in_the_source(tmp_path: Path) -> None:
    """Each --losses line gives the count and where the first dropped value is: the source's
    line:col when the reader can tell, and always the model pointer."""
    done = dcx("convert", GWF, tmp_path / "out.swf", "--to", "swf", "--losses")
    assert done.returncode == 0, text(done)
    lines = done.stderr.decode().splitlines()
    assert any(line.startswith(
        f"  task.extras: 16 values (first: {GWF}:4:1, /workload/jobs/0/tasks/0): "
        "other task fields (") for line in lines), lines
    slurm = dcx("convert", SLURM, tmp_path / "out.lwf", "--to", "haizea", "--losses")
    gpus = next(line for line in slurm.stderr.decode().splitlines()
                if line.startswith("  machine.gpus: "))
    match = re.fullmatch(rf"  machine\.gpus: (\d+) values \(first: {re.escape(str(SLURM))}:"
                         r"(\d+):1, /environment/datacenters/0/rooms/0/racks/0/slots/(\d+)\): "
                         r".*", gpus)
    assert match, gpus
    source_line = SLURM.read_text().splitlines()[int(match.group(2)) - 1]
    assert source_line.startswith("NodeName=gpu[01-02] ")  # the first node line with GPUs


def test_a_regrouping_counts_the_jobs_it_changes(tmp_path: Path) -> None:
    """GWF renumbers a WfFormat workflow's four jobs (one task each) as its own: each job's
    grouping value (its id and its tasks') changes, four values."""
    workflow = EXAMPLES / "wfformat" / "blast-chameleon.json"
    done = dcx("convert", workflow, tmp_path / "out.gwf", "--losses")
    assert done.returncode == 0, text(done)
    assert f"  job: 4 values (first: {workflow}:11:9, /workload/jobs/0): grouping of " \
        "tasks into jobs/workflows (gwf: WorkflowID)" in done.stderr.decode().splitlines()


def test_convert_json_report_lists_the_losses(tmp_path: Path) -> None:
    done = dcx("convert", CLUSTER, tmp_path / "out.xml", "--to", "sss", "--output", "json")
    assert done.returncode == 0 and done.stderr == b""
    report = json.loads(done.stdout)
    losses = report["files"][0]["losses"]
    assert losses and {"field", "count", "detail", "first"} == set(losses[0])
    by_field = {loss["field"]: loss for loss in losses}
    assert by_field["cpu.clock_rate_hz"]["count"] == 7
    first = by_field["cpu.clock_rate_hz"]["first"]
    assert first["pointer"] == "/environment/datacenters/0/rooms/0/racks/0/slots/0"
    assert set(first) == {"line", "column", "pointer"}


def test_losses_of_an_environment_file_are_located_at_its_units(tmp_path: Path) -> None:
    """The environment reader finds a model object in the file again when asked: the first
    GPU's unit, by its line and column."""
    done = dcx("convert", CLUSTER, tmp_path / "out.xml", "--to", "sss", "--losses")
    gpus = next(line for line in done.stderr.decode().splitlines()
                if line.startswith("  gpu.cores: "))
    match = re.fullmatch(rf"  gpu\.cores: 2 values \(first: {re.escape(str(CLUSTER))}:(\d+):"
                         r"(\d+), /environment/datacenters/0/rooms/0/racks/1/slots/0\): .*", gpus)
    assert match, gpus
    line, column = int(match.group(1)), int(match.group(2))
    source = CLUSTER.read_text().splitlines()
    assert source[line - 1][column - 1] == "{" and '"id": "gpu001"' in source[line]


def test_losses_of_an_sss_file_are_located_at_its_node_lines(tmp_path: Path) -> None:
    done = dcx("convert", SSS, tmp_path / "out.lwf", "--to", "haizea", "--losses")
    state = next(line for line in done.stderr.decode().splitlines()
                 if line.startswith("  machine.state: "))
    match = re.fullmatch(rf"  machine\.state: \d+ values \(first: {re.escape(str(SSS))}:(\d+), "
                         r"/environment/datacenters/0/rooms/0/racks/0/slots/(\d+)\): .*", state)
    assert match, state
    nodes = [number for number, line in enumerate(SSS.read_text().splitlines(), 1)
             if line.strip().startswith("<Node")]
    assert int(match.group(1)) == nodes[int(match.group(2))]  # the slot's own <Node>


def test_convert_json_report_locates_the_first_dropped_value(tmp_path: Path) -> None:
    done = dcx("convert", SWF, tmp_path / "out.gwf", "--to", "gwf", "--output", "json")
    assert done.returncode == 0, text(done)
    losses = {loss["field"]: loss for loss in json.loads(done.stdout)["files"][0]["losses"]}
    first = losses["task.dependencies"]["first"]
    assert first["pointer"].startswith("/workload/jobs/")
    line = SWF.read_text().splitlines()[first["line"] - 1].split()
    assert first["column"] == 1 and line[16] != "-1"  # PrecedingJobNumber: a dependency


def test_quiet_and_verbose(tmp_path: Path) -> None:
    quiet = dcx("convert", "-q", CLUSTER, tmp_path / "a.xml", "--to", "sss")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, b"", b"")
    assert dcx("-q", "validate", CLUSTER).stderr == b""
    verbose = dcx("convert", "-v", CLUSTER, tmp_path / "b.xml", "--to", "sss")
    err = verbose.stderr.decode()
    assert f"{CLUSTER}: read as environment" in err and "  cpu.clock_rate_hz: " in err


def test_validate_says_what_it_checked_and_tallies_many_files() -> None:
    done = dcx("validate", CLUSTER, SSS)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 0 and done.stdout == b""
    assert lines[0] == (f"{CLUSTER}: valid environment (4 machines); checked against "
                        "environment.schema.json and dcx's environment rules")
    assert lines[1].startswith(f"{SSS}: valid sss (4 machines); checked against sss-node.xsd")
    assert lines[2] == "2 files valid"


def test_a_refused_conversion_prints_one_error_line_and_writes_nothing(tmp_path: Path) -> None:
    output = tmp_path / "out.xml"
    done = dcx("convert", CLUSTER, output, "--to", "sss", "--strict")
    assert done.returncode == 1 and not output.exists() and done.stdout == b""
    errors = [line for line in done.stderr.decode().splitlines() if ": error: " in line]
    assert errors and all("sss cannot hold" in line for line in errors)


# ------------------------------------------------------------------------------ exit codes, names


@pytest.mark.parametrize(("argv", "code"), [
    (["validate", str(CLUSTER)], 0),
    (["--version"], 0),
    (["validate", "/nonexistent/x.json"], 2),
    ([], 2),
    (["validate"], 2),
    (["convert", str(CLUSTER)], 2),
    (["convert", str(CLUSTER), "x.xml", "--bogus"], 2),
    (["convert", str(CLUSTER), "x.xml", "--to", "ssss"], 2),
    (["info", str(SSS), "--format", "SSS"], 0),
])
def test_exit_codes(argv: list[str], code: int, tmp_path: Path) -> None:
    done = dcx(*argv, cwd=tmp_path)
    assert done.returncode == code, text(done)


def test_version_is_printed() -> None:
    done = dcx("--version")
    assert re.fullmatch(r"dcx \d+\.\d+\.\S+\n", done.stdout.decode())


def test_an_unknown_format_gets_did_you_mean() -> None:
    done = dcx("convert", CLUSTER, "x.xml", "--to", "ssss")
    assert "unknown format 'ssss' (did you mean sss?)" in done.stderr.decode()


def test_format_names_ignore_case(tmp_path: Path) -> None:
    done = dcx("convert", CLUSTER, tmp_path / "out.xml", "--to", "SSS")
    assert done.returncode == 0, text(done)
    assert "(sss)" in done.stderr.decode()


# ------------------------------------------------------------------------------ hook mode


@pytest.mark.parametrize(("name", "content"), [
    ("garbage.gwf", b"this is no trace\n\x07 at all\n"),
    ("truncated.xml", SSS.read_bytes()[:300]),
    ("rooms.json", b'{"rooms": [}\n'),
    ("empty.json", b""),
    ("binary.swf", b"FWS\x0a\x00\x00\x00\x00"),
])
def test_hook_mode_fails_files_that_claim_a_dcx_extension(tmp_path: Path, name: str,
                                                          content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    done = dcx("validate", "--hook", path)
    assert done.returncode == 1, text(done)
    assert done.stderr.decode().startswith(f"{path}:")


@pytest.mark.parametrize(("name", "content"), [
    ("package.json", b'{"name": "left-pad", "version": "1.3.0"}\n'),
    ("tsconfig.json", b'[1, 2]\n'),
    ("analysis.R", b"x <- c(1, 2)\nprint(x)\n"),
    ("pom.xml", b"<project><modelVersion>4.0.0</modelVersion></project>\n"),
])
def test_hook_mode_skips_files_clearly_not_ours(tmp_path: Path, name: str,
                                                 content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    done = dcx("validate", "--hook", path)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), text(done)


def test_outside_hook_mode_malformed_json_is_located() -> None:
    done = dcx("validate", "-", stdin=b'{"rooms": [}\n')
    assert done.returncode == 1
    assert done.stderr.decode().startswith("<stdin>:1:12: error:")


# ------------------------------------------------------------------------------ info


def test_info_shows_units_and_only_the_levels_a_format_has() -> None:
    sss = dcx("info", SSS).stdout.decode()
    assert "racks" not in sss and "rooms" not in sss and "datacenters" not in sss
    assert re.search(r"memory: [\d,]+ MiB \([\d,.]+ GiB\)", sss), sss
    assert "cores: 224 cores" in sss
    environment = dcx("info", CLUSTER).stdout.decode()
    assert "datacenters: 1" in environment and "racks: 2" in environment
    assert "CPU clock: 2.4–3 GHz" in environment


def test_info_shows_each_file_and_exits_with_the_worst(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"rooms": [}\n')
    done = dcx("info", SSS, broken, SWF, SSS)
    assert done.returncode == 1
    shown = done.stdout.decode()
    assert [line.split(":")[0] for line in shown.splitlines() if not line.startswith(" ")] == [
        str(SSS), str(broken), str(SWF)]  # in order, the repeated file once
    assert "jobs: " in shown and "cores: 224 cores" in shown
    assert done.stderr.decode().startswith(f"{broken}:1:12: error:")
    lines = dcx("info", "--output", "json", SSS, "-", stdin=SWF.read_bytes()).stdout.splitlines()
    assert [json.loads(line)["format"] for line in lines] == ["sss", "swf"]
    assert dcx("info", SSS, SWF).returncode == 0


def test_info_says_unknown_for_what_the_file_does_not_give(tmp_path: Path) -> None:
    node = tmp_path / "node.xml"
    node.write_text('<?xml version="1.0"?>\n<Node><Id>n1</Id></Node>\n')
    done = dcx("info", node)
    assert done.returncode == 0, text(done)
    assert "memory: unknown" in done.stdout.decode()
    assert "cores: unknown" in done.stdout.decode()


# ------------------------------------------------------------------------------ terminal


def _run_with_pty_stderr(argv: list[str]) -> tuple[int, bytes]:
    import pty

    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=follower,
                                   stdin=subprocess.DEVNULL)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=120)
        return process.returncode, b"".join(chunks)
    finally:
        os.close(leader)


def test_a_progress_bar_on_a_terminal_and_none_in_a_log() -> None:
    files = [str(path) for path in sorted(EXAMPLES.rglob("*")) if path.is_file()
             and path.parent.name != "experiments"]  # experiment files: no format's
    code, terminal = _run_with_pty_stderr([*dcx_command(), "validate", *files])
    assert code == 0, terminal.decode(errors="replace")
    assert b"\x1b[" in terminal  # the bar draws with escape sequences (and clears itself)
    # the files of a format stored as a folder (OpenDC's tasks.parquet) are one input
    inputs = {os.path.dirname(name) if member_of(name) else name for name in files}
    assert f"{len(inputs)} files valid".encode() in terminal
    logged = dcx("validate", *files)
    assert logged.returncode == 0 and b"\x1b" not in logged.stderr


# ------------------------------------------------------------------------------ $base errors


def test_an_error_in_a_definition_is_reported_once_at_the_definition(tmp_path: Path) -> None:
    """small-cluster.json's three rack-1 machines inherit ``compute``: a bad ``cores`` there
    is one error at the definition's line, not three at pointers the file does not have."""
    lines = CLUSTER.read_text().splitlines(keepends=True)
    [index] = [n for n, line in enumerate(lines) if '"cores": 8' in line][1:2]
    lines[index] = lines[index].replace('"cores": 8', '"cores": "eight"')
    path = tmp_path / "bad-definition.json"
    path.write_text("".join(lines))
    done = dcx("validate", path)
    assert done.returncode == 1
    [line] = done.stderr.decode().splitlines()
    assert line.startswith(f"{path}:{index + 1}:")
    assert ": error: /definitions/machines/compute/cpus/1/cores: 'eight' is not of type" in line
    assert "(in definition /definitions/machines/compute, used by 3 machines)" in line


# ------------------------------------------------------------------------------ completion


def test_shell_completion_offers_format_names() -> None:
    pytest.importorskip("argcomplete", reason="argcomplete is not installed (completion extra)")
    line = "dcx convert in.json out.xml --to s"
    done = subprocess.run(
        dcx_command(), capture_output=True, timeout=60, pass_fds=(),
        env={**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": " ", "COMP_LINE": line,
             "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": "/dev/stdout"})
    assert done.returncode == 0, text(done)
    from dcx.converters.registry import NAMES

    assert set(done.stdout.decode().split()) == {name for name in NAMES if name.startswith("s")}


# ------------------------------------------------------------------------------ schedule


def test_schedule_reads_the_workload_from_stdin() -> None:
    done = dcx("schedule", "-", "--policy", "FCFS", stdin=SWF.read_bytes())
    assert done.returncode == 0, text(done)
    assert done.stdout.decode().splitlines()[1].startswith("FCFS ")
    assert done.stderr.decode().startswith("<stdin>: warning: /: no --env given")


def test_schedule_reads_the_environment_from_stdin() -> None:
    grid = EXAMPLES / "gwf" / "grid-archive.gwf"
    done = dcx("schedule", grid, "--env", "-", "-v", stdin=CLUSTER.read_bytes())
    assert done.returncode == 0, text(done)
    assert done.stderr.decode().splitlines()[0] == (
        f"{grid}: read as gwf with the machines of <stdin> (environment)")


def test_schedule_takes_one_stdin_only() -> None:
    done = dcx("schedule", "-", "--env", "-", stdin=b"")
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "dcx schedule: error: only one of WORKLOAD and --env can be '-' (stdin)\n")


def test_schedule_quiet_keeps_errors_only() -> None:
    loud = dcx("schedule", SWF, "--policy", "FCFS")
    quiet = dcx("schedule", SWF, "--policy", "FCFS", "-q")
    assert loud.returncode == quiet.returncode == 0
    assert b"warning" in loud.stderr and quiet.stderr == b""
    assert quiet.stdout == loud.stdout


def test_schedule_shows_progress_over_several_schedulers_on_a_terminal() -> None:
    argv = [*dcx_command(), "schedule", str(SWF), "--policy", "FCFS,FCFS-EASY,SJF-EASY"]
    code, terminal = _run_with_pty_stderr(argv)
    assert code == 0, terminal.decode(errors="replace")
    assert b"\x1b[" in terminal
    assert b"\x1b" not in dcx(*argv[len(dcx_command()):]).stderr


def test_two_errors_in_one_definition_are_two_diagnostics(tmp_path: Path) -> None:
    lines = CLUSTER.read_text().splitlines(keepends=True)
    first, second = [n for n, line in enumerate(lines) if '"cores": 8' in line][:2]
    lines[first] = lines[first].replace('"clock-rate": 2400000000', '"clock-rate": "fast"')
    lines[second] = lines[second].replace('"cores": 8', '"cores": "eight"')
    path = tmp_path / "two-bad-values.json"
    path.write_text("".join(lines))
    done = dcx("validate", path)
    assert done.returncode == 1
    found = done.stderr.decode().splitlines()
    assert [line.split(": error: ")[1].split(":")[0] for line in found] == [
        "/definitions/machines/compute/cpus/0/clock-rate",
        "/definitions/machines/compute/cpus/1/cores"]
    assert [line.split(":")[1] for line in found] == [str(first + 1), str(second + 1)]
