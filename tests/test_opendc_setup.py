"""OpenDC SC18 setup.json: CPU type table, machine order, located errors, round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from dcx.converters.convert import convert_document
from dcx.converters.losses import conversion_losses
from dcx.converters.registry import detect, get
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Job,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    Workload,
)
from dcx.formats import opendc_setup
from dcx.parsing.schemas import schema_diagnostics
from tests.strategies_traces import setup_environments

REPO = Path(__file__).resolve().parent.parent


def setup(*machines: list[object], name: str = "s") -> bytes:
    racks = [{"type": "RACK", "machines": [{"cpus": cpus} for cpus in machines]}]
    return json.dumps({"name": name, "rooms": [{"type": "SERVER", "objects": racks}]},
                      indent=1).encode()


@pytest.mark.corpus
def test_paper_setup_is_16_i5_then_16_i7(corpus_dir: Path):
    data = (corpus_dir / "gwf" / "setup.json").read_bytes()
    assert opendc_setup.sniff(data)
    result = opendc_setup.read(data)
    assert result.ok and result.diagnostics == ()
    environment = result.document.environment
    assert environment.name == "Experimental Setup 2"
    machines = list(environment.machines())
    assert [m.cpus[0].family for m in machines] == ["i5"] * 16 + ["i7"] * 16
    assert sum(m.core_count for m in machines) == 96
    assert machines[0].clock_rate_hz == 3.5e9 and machines[-1].clock_rate_hz == 4.1e9
    written = opendc_setup.write(result.document)
    assert written.diagnostics == ()
    assert opendc_setup.read(written.data).document == result.document


@pytest.mark.corpus
def test_lab_setup_is_64_i7(corpus_dir: Path):
    result = opendc_setup.read((corpus_dir / "gwf" / "setup-64xi7-lab2019.json").read_bytes())
    assert result.ok
    machines = list(result.document.environment.machines())
    assert len(machines) == 64 and {m.core_count for m in machines} == {4}


@pytest.mark.parametrize("path", sorted((REPO / "examples" / "opendc-setup").glob("*.json")),
                         ids=lambda p: p.name)
def test_examples_read_cleanly_and_rewrite_exactly(path: Path):
    data = path.read_bytes()
    result = opendc_setup.read(data)
    assert result.ok and result.diagnostics == ()
    assert opendc_setup.write(result.document).data == data


def test_cpu_types_are_the_sc18_table():
    result = opendc_setup.read(setup([1], [2], [1, 2]))
    first, second, third = result.document.environment.machines()
    assert first.cpus == (ProcessingUnit(cores=4, clock_rate_hz=4.1e9, id=1,
                                         manufacturer="Intel", family="i7", generation="v6",
                                         model="6700k", energy_consumption_w=70.0),)
    assert (second.core_count, second.cpus[0].energy_consumption_w) == (2, 50.0)
    assert third.core_count == 6 and third.clock_rate_hz == (4 * 4.1e9 + 2 * 3.5e9) / 6


def test_unknown_cpu_id_is_an_error_at_its_position():
    result = opendc_setup.read(setup([1], [1, 3]))
    assert result.document is None
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "opendc-setup.unknown-cpu"
    assert diagnostic.pointer == "/rooms/0/objects/0/machines/1/cpus/1"
    assert (diagnostic.line, diagnostic.column) == (18, 9)
    assert "1 = i7" in diagnostic.message and "2 = i5" in diagnostic.message


@pytest.mark.parametrize(("data", "code", "pointer"), [
    (b'{"name": "x", "rooms": [{"type": "SERVER", "objects": [{"type": "ROW", "machines": []}]}]}',
     "schema.const", "/rooms/0/objects/0/type"),
    (b'{"name": "x", "rooms": [{"type": "SERVER"}]}', "schema.required", "/rooms/0"),
    (b'{"rooms": []}', "schema.required", ""),
    (b'{"name": "x", "rooms": [], "name": "y"}', "json.duplicate-key", "/name"),
    (b'{"name": "x", "rooms": [{"type": "SERVER", "objects": [{"type": "RACK", "machines": '
     b'[{"cpus": "1"}]}]}]}', "schema.type", "/rooms/0/objects/0/machines/0/cpus"),
    (b"[]", "schema.type", ""),
    (b"", "json.syntax", ""),
])
def test_structural_errors_are_located(data: bytes, code: str, pointer: str):
    result = opendc_setup.read(data)
    assert result.document is None
    assert (result.diagnostics[0].code, result.diagnostics[0].pointer) == (code, pointer)
    assert result.diagnostics[0].line is not None


def test_an_empty_setup_reads_with_a_warning():
    result = opendc_setup.read(b'{"name": "empty", "rooms": []}')
    assert result.ok
    assert [d.code for d in result.diagnostics] == ["opendc-setup.no-machines"]


def test_sniff_tells_setup_from_environment_json():
    assert opendc_setup.sniff(setup([1]))
    assert not opendc_setup.sniff(b'{"environment": {"datacenters": [{"rooms": [{"objects": '
                                  b'[{"units": [{"cpus": [{"cores": 4}]}]}]}]}]}}')
    assert not opendc_setup.sniff(b"WorkflowID, JobID")


@given(setup_environments())
@settings(max_examples=100, deadline=None)
def test_round_trip_is_identity_and_output_validates(environment: Environment):
    written = opendc_setup.write(Document(environment=environment))
    assert written.diagnostics == ()
    assert schema_diagnostics(opendc_setup.SCHEMA, json.loads(written.data)) == []
    result = opendc_setup.read(written.data)
    assert result.document == Document(environment=environment)


def test_machines_with_other_cpus_are_left_out_and_reported():
    odd = Machine(id="m7", cpus=(ProcessingUnit(cores=8, clock_rate_hz=2.0e9),))
    renamed = Machine(name="n1", cpus=(ProcessingUnit(cores=4, clock_rate_hz=4.1e9,
                                                      manufacturer="AMD",
                                                      energy_consumption_w=65.0),))
    rack = Rack(id=3, slots=(odd, None, renamed))
    environment = Environment(
        datacenters=(Datacenter(name="dc", rooms=(Room(racks=(rack,)),)), Datacenter()),
        description="d")
    document = Document(environment=environment, workload=Workload(jobs=(Job(id=1),)))
    written = opendc_setup.write(document)
    assert written.ok  # the writer serialises; losses are derived
    lost = {loss.field for loss in conversion_losses(document, get("opendc-setup"))}
    assert lost == {"environment.description", "datacenter", "datacenter.name", "rack.id",
                    "rack.empty_slots", "workload", "machine.cpus", "machine.name",
                    "cpu.vendor", "cpu.energy_consumption_w", "cpu.id"}
    (machine,) = opendc_setup.read(written.data).document.environment.machines()
    assert machine.cpus == (opendc_setup.CPU_TYPES[1],)


def test_a_rack_left_without_machines_is_not_written_but_an_empty_one_is():
    odd = Machine(cpus=(ProcessingUnit(cores=8, clock_rate_hz=2.0e9),))
    i7 = Machine(cpus=(opendc_setup.CPU_TYPES[1],))
    racks = (Rack(slots=(odd,)), Rack(slots=(i7,)), Rack(), Rack(slots=(None,)))
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(
        Room(racks=racks),)),)))
    written = json.loads(opendc_setup.write(document).data)
    assert [len(rack["machines"]) for rack in written["rooms"][0]["objects"]] == [1, 0, 0]


def test_a_setup_that_keeps_no_machine_is_refused():
    odd = Machine(id="m7", cpus=(ProcessingUnit(cores=8, clock_rate_hz=2.0e9),))
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(
        Room(racks=(Rack(slots=(odd,)),)),)),)))
    conversion = convert_document(document, get("environment"), get("opendc-setup"))
    assert [d.code for d in conversion.diagnostics] == ["convert.nothing-held"]


@pytest.mark.parametrize("environment", [
    None, Environment(), Environment(datacenters=(Datacenter(rooms=(Room(racks=(Rack(),)),)),))])
def test_what_dcx_writes_without_machines_is_recognised_as_a_setup(environment):
    written = opendc_setup.write(Document(environment=environment))
    assert detect(written.data, "out.json") is get("opendc-setup")
    assert opendc_setup.read(written.data).document is not None


def test_normal_form_leaves_out_odd_machines_and_makes_cpus_canonical():
    odd = Machine(id="m7", cpus=(ProcessingUnit(cores=8, clock_rate_hz=2.0e9),))
    i5 = Machine(id="m8", cpus=(ProcessingUnit(cores=2, clock_rate_hz=3.5e9, id="x"),))
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=(odd, None, i5)),)),)),)))
    normal = opendc_setup.normal_form(document)
    assert normal.environment.datacenters[0].rooms[0].racks[0].slots == (
        None, Machine(id="m8", cpus=(opendc_setup.CPU_TYPES[2],)))
    assert opendc_setup.normal_form_losses(document) == {"machine.cpus", "cpu.vendor",
                                                         "cpu.energy_consumption_w", "cpu.id"}
    assert opendc_setup.normal_form(normal) == normal
    assert opendc_setup.normal_form_losses(normal) == frozenset()


@settings(max_examples=40, deadline=None)
@given(setup_environments())
def test_normal_form_is_identity_on_what_the_format_reads(environment: Environment):
    document = opendc_setup.read(opendc_setup.write(Document(environment=environment)).data)
    assert opendc_setup.normal_form(document.document) == document.document


def test_losses_are_located_at_the_machine_object(first_losses: Any) -> None:
    text = ('{"name": "s", "rooms": [\n'
            ' {"type": "SERVER", "objects": [\n'
            '  {"type": "RACK", "machines": [{"cpus": [1]}, {"cpus": [1]}]},\n'
            '  {"type": "RACK", "machines": [{"cpus": [1]},\n'
            '                                {"cpus": [1, 2]}]}]}]}\n')
    firsts = first_losses(text, "opendc-topology")
    assert firsts["environment.name"] == "in.json:1:1, /environment"
    assert firsts["machine.cpus.sockets"] == (
        "in.json:5:33, /environment/datacenters/0/rooms/0/racks/1/slots/1")
