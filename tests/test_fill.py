"""``dcx convert --fill FIELD=VALUE``: values a target needs that the source does not state,
filled into every machine lacking them before the conversion's checks, groups kept whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcx.cli import main as cli
from dcx.converters.convert import convert
from dcx.converters.fill import FillError, apply_fills, parse_fill
from dcx.core.groups import MachineGroup, Slots, machine_count, machine_parts
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
)
from dcx.formats import environment, flux_r

REPO = Path(__file__).resolve().parent.parent


def flux_r_bytes(ranks: int, cores: int = 32) -> bytes:
    last = ranks - 1
    return json.dumps({"version": 1, "execution": {
        "R_lite": [{"rank": f"0-{last}", "children": {"core": f"0-{cores - 1}"}}],
        "starttime": 0, "expiration": 0, "nodelist": [f"node[0-{last}]"]}}).encode()


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(("text", "field", "value", "shown"), [
    ("clock-rate=2.4GHz", "clock-rate", 2.4e9, "2.4 GHz"),
    ("clock-rate=2400 MHz", "clock-rate", 2.4e9, "2400 MHz"),
    ("clock-rate=800khz", "clock-rate", 8e5, "800 kHz"),
    ("clock-rate=1e9Hz", "clock-rate", 1e9, "1000000000 Hz"),
    ("gpu-clock-rate=1.41GHz", "gpu-clock-rate", 1.41e9, "1.41 GHz"),
    ("memory=64GiB", "memory", 65536.0, "64 GiB"),
    ("memory=512MiB", "memory", 512.0, "512 MiB"),
    ("memory=.5TiB", "memory", 524288.0, "0.5 TiB"),
    ("speed=1Gf", "speed", 1e9, "1 Gf"),
    ("speed=2.5Mf", "speed", 2.5e6, "2.5 Mf"),
    ("runtime=requested", "runtime", "requested", "requested"),
    ("speed=1e3kf", "speed", 1e6, "1000 kf"),
    ("speed=3gigaflops", "speed", 3e9, "3 gigaflops"),
])
def test_a_fill_reads_its_value_in_the_models_unit(text, field, value, shown):
    fill = parse_fill(text)
    assert (fill.field, fill.text) == (field, shown)
    assert fill.value == pytest.approx(value)


@pytest.mark.parametrize(("text", "said"), [
    ("colour=red", "unknown field 'colour'"),
    ("speed=3GHz", "one of SimGrid's units (f, kf, Mf, Gf, Tf …; case matters)"),
    ("speed=1gf", "one of SimGrid's units"),
    ("speed=1", "one of SimGrid's units"),
    ("speed=-1Gf", "one of SimGrid's units"),
    ("speed=0Gf", "must be positive and finite"),
    ("runtime=60", "runtime takes the word requested"),
    ("runtime=", "runtime takes the word requested"),
    ("clock-rate", "expected FIELD=VALUE"),
    ("clock-rate=3", "takes a positive number with a unit (Hz, kHz, MHz, GHz)"),
    ("clock-rate=3GB", "takes a positive number with a unit"),
    ("memory=64GB", "takes a positive number with a unit (MiB, GiB, TiB)"),
    ("memory=-1GiB", "takes a positive number with a unit"),
    ("clock-rate=0GHz", "must be positive and finite"),
    ("clock-rate=1e400GHz", "must be positive and finite"),
])
def test_a_fill_the_command_line_cannot_use_says_why(text, said):
    with pytest.raises(FillError, match=said.replace("(", r"\(").replace(")", r"\)")):
        parse_fill(text)


# --------------------------------------------------------------------------- the transform


def test_a_fill_changes_only_what_lacks_the_value():
    rated = ProcessingUnit(cores=4, clock_rate_hz=3e9)
    machines = (Machine(name="a", cpus=(rated, ProcessingUnit(cores=2))),
                Machine(name="b", cpus=(rated,), memory=(StorageUnit(capacity_mb=8.0),)))
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(
        Room(racks=(Rack(slots=machines),)),)),)))
    filled, report = apply_fills(document, [parse_fill("clock-rate=2GHz"),
                                            parse_fill("memory=1GiB")])
    assert filled.environment is not None
    a, b = filled.environment.machines()
    assert [cpu.clock_rate_hz for cpu in a.cpus] == [3e9, 2e9]
    assert b.cpus == (rated,) and b.memory == (StorageUnit(capacity_mb=8.0),)
    assert a.memory == (StorageUnit(capacity_mb=1024.0),)
    assert [done.machines for done in report] == [1, 1]
    assert report[0].render() == "filled clock-rate=2 GHz into 1 machine"


def test_a_million_rank_group_is_filled_as_one_template_never_expanded():
    document = flux_r.read(flux_r_bytes(1_048_576)).document
    filled, (done,) = apply_fills(document, [parse_fill("clock-rate=2.4GHz")])
    assert done.machines == 1_048_576
    assert done.render() == "filled clock-rate=2.4 GHz into 1,048,576 machines"
    assert filled.environment is not None
    [part] = machine_parts(filled.environment)
    assert isinstance(part, MachineGroup) and part.count == 1_048_576
    assert part.template.cpus[0].clock_rate_hz == 2.4e9
    [rack] = filled.environment.racks()
    assert isinstance(rack.slots, Slots) and rack.slots._expanded is None
    assert machine_count(filled.environment) == 1_048_576


# --------------------------------------------------------------------------- converting


def test_flux_r_converts_to_environment_with_one_definition_its_machines_use(tmp_path, capsys):
    source = tmp_path / "r.json"
    source.write_bytes(flux_r_bytes(4))
    output = tmp_path / "env.json"
    assert cli.main(["convert", str(source), str(output), "--to", "environment",
                     "--fill", "clock-rate=2.4GHz"]) == cli.EXIT_OK
    summary = capsys.readouterr().err
    assert "filled clock-rate=2.4 GHz into 4 machines" in summary
    written = json.loads(output.read_text())
    definitions = written["definitions"]["dcx:machines"]
    assert len(definitions) == 1
    [(name, definition)] = definitions.items()
    assert definition["cpus"] == [{"clock-rate": 2.4e9, "cores": 32}]
    units = written["environment"]["datacenters"][0]["rooms"][0]["objects"][0]["units"]
    assert [unit["name"] for unit in units] == ["node0", "node1", "node2", "node3"]
    assert {unit["$base"] for unit in units} == {f"#/definitions/dcx:machines/{name}"}
    back = environment.read(output.read_bytes())
    assert back.ok and not any(d.is_error for d in back.diagnostics)
    assert machine_count(back.document.environment) == 4
    assert cli.main(["validate", "--strict", "--quiet", str(output)]) == cli.EXIT_OK


def test_the_json_report_lists_what_was_filled(tmp_path, capsys):
    source = tmp_path / "r.json"
    source.write_bytes(flux_r_bytes(2))
    assert cli.main(["convert", str(source), str(tmp_path / "env.json"), "--to",
                     "environment", "--fill", "clock-rate=2GHz", "--output", "json"]) == 0
    [entry, _] = json.loads(capsys.readouterr().out)["files"]
    assert entry["filled"] == [{"field": "clock-rate", "value": 2e9, "text": "2 GHz",
                                "machines": 2}]


def test_without_the_fill_the_refusal_says_which_fill_would_do(tmp_path, capsys):
    source = tmp_path / "r.json"
    source.write_bytes(flux_r_bytes(4))
    output = tmp_path / "env.json"
    assert cli.main(["convert", str(source), str(output), "--to", "environment"]) == 1
    said = capsys.readouterr().err
    assert "hint: give the values it lacks, such as --fill clock-rate=2.4GHz)" in said
    assert not output.exists()


def test_the_hint_names_every_fill_a_refusal_needs_and_no_other(tmp_path, capsys):
    # R with GPUs lacks both clock rates: either alone keeps no machine, so the hint names
    # the two together (and not memory, which the machines do not lack for this target).
    source = REPO / "examples" / "flux" / "2node.R.json"
    assert cli.main(["convert", str(source), str(tmp_path / "env.json"),
                     "--to", "environment"]) == 1
    said = capsys.readouterr().err
    assert ("such as --fill clock-rate=2.4GHz --fill gpu-clock-rate=1.4GHz)") in said


def test_a_refusal_no_fill_can_mend_has_no_fill_hint():
    conversion = convert((REPO / "examples" / "swf" / "small-cluster.swf").read_bytes(),
                         "environment")
    assert not conversion.ok
    assert all(d.hint is None for d in conversion.diagnostics)


@pytest.mark.parametrize("fill", ["colour=red", "clock-rate=2.4GB", "memory=64"])
def test_a_bad_fill_is_a_usage_error_in_one_line(fill, tmp_path, capsys):
    source = tmp_path / "r.json"
    source.write_bytes(flux_r_bytes(2))
    output = tmp_path / "env.json"
    assert cli.main(["convert", str(source), str(output), "--to", "environment",
                     "--fill", fill]) == cli.EXIT_USAGE
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dcx: error: --fill '{fill}'")
    assert not output.exists()


def test_machines_sharing_their_cpus_are_each_filled_and_keep_their_own_fields():
    shared = (ProcessingUnit(cores=1),) * 4
    memory = (StorageUnit(capacity_mb=4.0),)
    machines = (Machine(name="a", cpus=shared), Machine(name="b", cpus=shared),
                Machine(name="c", cpus=shared, memory=memory), Machine(name="d", cpus=shared))
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(
        Room(racks=(Rack(slots=machines),)),)),)))
    filled, (done,) = apply_fills(document, [parse_fill("clock-rate=1GHz")])
    assert done.machines == 4 and filled.environment is not None
    result = list(filled.environment.machines())
    assert [machine.name for machine in result] == ["a", "b", "c", "d"]
    assert all(cpu.clock_rate_hz == 1e9 for machine in result for cpu in machine.cpus)
    assert [machine.memory for machine in result] == [(), (), memory, ()]
    assert result[0].cpus is result[1].cpus  # one filled tuple for the machines sharing one


def test_machines_a_target_leaves_out_for_a_missing_value_get_a_fill_hint(tmp_path, capsys):
    source = REPO / "examples" / "slurm" / "cluster.conf"
    conversion = convert(source.read_bytes(), "environment", str(source),
                         fills=[parse_fill("clock-rate=2.6GHz")])
    assert conversion.ok
    assert conversion.fill_hint == ("environment keeps 7 of 9 machines; --fill "
                                    "gpu-clock-rate=1.4GHz would keep 9")
    output = tmp_path / "env.json"
    assert cli.main(["convert", str(source), str(output), "--to", "environment",
                     "--fill", "clock-rate=2.6GHz", "--fill", "gpu-clock-rate=1.4GHz"]) == 0
    said = capsys.readouterr().err
    assert "wrote" in said and "9 machines" in said and "hint" not in said
