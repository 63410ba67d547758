"""SSS Node Object XML 3.1.0: spec examples, mapping rules, diagnostics and round trips."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from dcx.converters.losses import conversion_losses
from dcx.core.fields import FIELDS
from dcx.core.ids import id_from_text
from dcx.core.model import (
    Consumables,
    Datacenter,
    Document,
    Environment,
    Job,
    Machine,
    MachineState,
    NamedResource,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
    Task,
    Workload,
)
from dcx.formats import sss
from dcx.parsing.xmlio import load_xsd
from tests import strategies_environment, strategies_sss

# The spec's two examples (§1.2), typed from seed 002. The elaborate one is given as printed,
# with U+201D around every attribute value, and normalised where a test needs it.
SIMPLE_EXAMPLE = """<Node>
  <Id>Node64</Id>
  <Configured>
    <Processors>2</Processors>
    <Memory>512</Memory>
  </Configured>
</Node>
"""

ELABORATE_EXAMPLE_AS_PRINTED = """<Node>
  <Id>64</Id>
  <Name>Netpipe2</Name>
  <Feature>BigMem</Feature>
  <Feature>NetOC12</Feature>
  <Opsys>AIX</Opsys>
  <Arch>Power4</Arch>
  <Configured>
    <Processors>16</Processors>
    <Memory units=\u201dMB\u201d>512</Memory>
    <Swap>512</Swap>
  </Configured>
  <Available>
    <Processors>7</Processors>
    <Memory metric=\u201dInstantaneous\u201d>143</Memory>
  </Available>
  <Utilized>
    <Processors wallDuration=\u201d3576\u201d>8</Processors>
    <Memory metric=\u201dAverage\u201d wallDuration=\u201d3576\u201d>400</Memory>
  </Utilized>
</Node>
"""
ELABORATE_EXAMPLE = ELABORATE_EXAMPLE_AS_PRINTED.replace("\u201d", '"')

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "sss"


def read_ok(text: str | bytes) -> Environment:
    data = text.encode() if isinstance(text, str) else text
    result = sss.read(data)
    assert result.ok, [d.render() for d in result.diagnostics]
    assert result.document is not None and result.document.environment is not None
    return result.document.environment


def only_machine(text: str) -> Machine:
    (machine,) = read_ok(text).machines()
    return machine


def codes(text: str | bytes) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [d.code for d in sss.read(data).diagnostics]


def node(body: str, configured: str = "") -> str:
    category = f"<Configured>{configured}</Configured>" if configured else ""
    return f"<Node><Id>n1</Id>{body}{category}</Node>"


def validates(data: bytes) -> bool:
    return bool(load_xsd(sss.XSD_NAME).validate(etree.fromstring(data).getroottree()))


def single_rack(*machines: Machine, extras: dict | None = None) -> Environment:
    rack = Rack(slots=machines)
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),),
                       extras=extras or {})


# --------------------------------------------------------------------------- spec examples


def test_simple_example_maps_to_one_machine() -> None:
    environment = read_ok(SIMPLE_EXAMPLE)
    assert environment == single_rack(Machine(
        id="Node64", cpus=(ProcessingUnit(cores=2),), memory=(StorageUnit(capacity_mb=512),)))


def test_elaborate_example_maps_every_property() -> None:
    machine = only_machine(ELABORATE_EXAMPLE)
    assert (machine.id, machine.name, machine.os, machine.arch) == (64, "Netpipe2", "AIX",
                                                                   "Power4")
    assert machine.features == ("BigMem", "NetOC12")
    assert machine.core_count == 16 and machine.memory_mb == 512 and machine.swap_mb == 512
    assert machine.available == Consumables(
        processors=7, memory_mb=143,
        extras={"sss:attributes": {"Memory": {"metric": "Instantaneous"}}})
    assert machine.utilized == Consumables(
        processors=8, memory_mb=400,
        extras={"sss:attributes": {"Processors": {"wallDuration": "3576"},
                                   "Memory": {"metric": "Average", "wallDuration": "3576"}}})
    assert machine.state is MachineState.ACTIVE and machine.state_label is None


@pytest.mark.parametrize("example", [SIMPLE_EXAMPLE, ELABORATE_EXAMPLE])
def test_spec_examples_validate_and_round_trip(example: str) -> None:
    assert validates(example.encode())
    environment = read_ok(example)
    written = sss.write(Document(environment=environment))
    assert written.ok
    assert validates(written.data)
    assert read_ok(written.data) == environment


def test_elaborate_example_as_printed_gets_a_smart_quote_diagnostic_with_a_hint() -> None:
    result = sss.read(ELABORATE_EXAMPLE_AS_PRINTED.encode())
    assert result.document is None
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "sss.smart-quotes"
    assert (diagnostic.line, diagnostic.column) == (10, 19)
    assert "U+201D" in diagnostic.message
    assert diagnostic.hint is not None and "ASCII quotes" in diagnostic.hint


def test_smart_quotes_inside_ascii_quotes_fail_the_unit_with_the_same_hint() -> None:
    result = sss.read(node("", '<Memory units="\u201cMB\u201d">512</Memory>').encode())
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "sss.units.unknown"
    assert diagnostic.pointer == "/Node/Configured/Memory/@units"
    assert diagnostic.hint is not None and "typographic quotes" in diagnostic.hint


def test_spec_extension_and_resource_examples() -> None:
    machine = only_machine(node(
        '<Extension type="Chemistry" name="Software">NWChem</Extension>',
        '<Resource name="License" type="MATLAB">1</Resource>'
        '<Resource name="Telescope" type="Zoom2000" wallDuration="750" metric="KX">10</Resource>'
        '<Memory metric="Max" units="GB">483</Memory>'
        '<Processors wallDuration="1234" consumptionRate="0.63">4</Processors>'))
    assert machine.extras == {
        "sss:extensions": [{"name": "Software", "type": "Chemistry", "value": "NWChem"}],
        "sss:configured": {"Memory": {"metric": "Max"},
                           "Processors": {"wallDuration": "1234", "consumptionRate": 0.63}}}
    assert machine.resources == (
        NamedResource("License", 1.0, type="MATLAB"),
        NamedResource("Telescope", 10.0, type="Zoom2000",
                      extras={"sss:metric": "KX", "sss:wallDuration": "750"}))
    assert machine.memory_mb == 483 * 1024


def test_gpu_resources_become_gpus_with_their_type_as_model() -> None:
    machine = only_machine(node("", '<Resource name="GPU" type="A100">2</Resource>'
                                    '<Resource name="GPU">1</Resource>'))
    assert machine.gpus == (ProcessingUnit(cores=1, model="A100"),) * 2 + (
        ProcessingUnit(cores=1),)
    assert machine.resources == ()


def test_gpu_count_must_be_whole() -> None:
    assert codes(node("", '<Resource name="GPU">1.5</Resource>')) == ["sss.gpu.not-integer"]


def test_gpu_in_available_is_a_named_resource() -> None:
    machine = only_machine(node('<Available><Resource name="GPU">3</Resource></Available>'))
    assert machine.available == Consumables(resources=(NamedResource("GPU", 3.0),))


# --------------------------------------------------------------------------- units


@pytest.mark.parametrize(("units", "megabytes"), [
    (None, 512.0), ("MB", 512.0), ("B", 512 / 2**20), ("KB", 0.5), ("GB", 512 * 1024.0),
    ("TB", 512 * 2.0**20), ("KiB", 0.5), ("GiB", 512 * 1024.0), ("megabytes", 512.0),
    ("Gigabyte", 512 * 1024.0), ("Aettabyte", 512 * 2.0**50), ("ZB", 512 * 2.0**50),
    ("DB", 512 * 2.0**80), ("NB", 512 * 2.0**70),
])
def test_memory_units_convert_exactly_by_powers_of_two(units: str | None,
                                                       megabytes: float) -> None:
    attribute = f' units="{units}"' if units else ""
    machine = only_machine(node("", f"<Memory{attribute}>512</Memory>"))
    assert machine.memory_mb == megabytes


def test_conversion_is_exact_for_values_float_decimal_would_round() -> None:
    # 0.1 GB is not 102.4 in binary floating point unless the scaling is exact.
    assert sss.megabytes(0.1, "GB") == 0.1 * 1024
    assert sss.megabytes(sss.megabytes(0.1, "GB"), "B") * 2**20 == sss.megabytes(0.1, "GB")


@pytest.mark.parametrize(("units", "hint_part"), [
    ("mb", "did you mean 'MB'"), ("Mb", "did you mean 'MB'"), ("furlongs", None),
    ("", None),
])
def test_unknown_units_are_errors(units: str, hint_part: str | None) -> None:
    result = sss.read(node("", f'<Disk units="{units}">1</Disk>').encode())
    (diagnostic,) = result.diagnostics
    assert result.document is None and diagnostic.code == "sss.units.unknown"
    assert (hint_part in (diagnostic.hint or "")) if hint_part else diagnostic.hint is None


def test_network_units_and_processor_units() -> None:
    machine = only_machine(node("", '<Network units="Gbit/s">10</Network>'))
    assert machine.network_mbit_s == 10_000
    assert only_machine(node("", "<Network>100</Network>")).network_mbit_s == 100
    assert codes(node("", '<Network units="GB">1</Network>')) == ["sss.units.unknown"]
    assert codes(node("", '<Processors units="cores">1</Processors>')) == ["sss.units.unknown"]


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize(("content", "code"), [
    ("<Memory>-1</Memory>", "sss.value.negative"),
    ("<Processors>-2</Processors>", "sss.value.negative"),
    ("<Memory>NaN</Memory>", "sss.value.out-of-range"),
    ("<Memory>INF</Memory>", "sss.value.out-of-range"),
    ("<Memory>1e39</Memory>", "sss.value.out-of-range"),
    ('<Memory units="DB">1e30</Memory>', "sss.value.out-of-range"),
    ('<Memory consumptionRate="NaN">1</Memory>', "sss.value.out-of-range"),
    ("<Processors/>", "xsd.invalid"),
    ("<Processors>1.5</Processors>", "xsd.invalid"),
    ('<Processors wallDuration="soon">1</Processors>', "xsd.invalid"),
    ("<Resource>1</Resource>", "xsd.invalid"),
])
def test_bad_amounts(content: str, code: str) -> None:
    result = sss.read(node("", content).encode())
    assert result.document is None
    assert [d.code for d in result.diagnostics] == [code]


def test_numeric_whitespace_is_collapsed_and_wall_duration_takes_both_forms() -> None:
    machine = only_machine(node("<Utilized><Processors wallDuration='PT3576S'> 8 </Processors>"
                                "</Utilized>", "<Processors> 16 </Processors>"))
    assert machine.core_count == 16
    assert machine.utilized == Consumables(
        processors=8, extras={"sss:attributes": {"Processors": {"wallDuration": "PT3576S"}}})


# --------------------------------------------------------------------------- structure


@pytest.mark.parametrize(("text", "code", "pointer"), [
    ("<Node><Id>a</Id><Id>b</Id></Node>", "sss.cardinality", "/Node/Id[2]"),
    ("<Node><Id>a</Id><State>Idle</State><State>Busy</State></Node>", "sss.cardinality",
     "/Node/State[2]"),
    ("<Node><Id>a</Id><Configured/><Configured/></Node>", "sss.cardinality",
     "/Node/Configured[2]"),
    ("<Node><Id>a</Id><Utilized><Memory>1</Memory><Memory>2</Memory></Utilized></Node>",
     "sss.cardinality", "/Node/Utilized/Memory[2]"),
    ("<Node><Name>a</Name></Node>", "sss.id.missing", "/Node"),
    ("<Node><Id> </Id></Node>", "sss.id.empty", "/Node/Id"),
    ("<Node><Id>a</Id>stray</Node>", "sss.node.mixed-content", "/Node"),
    ('<Node count="2"><Id>a</Id></Node>', "sss.node.reference-attribute", "/Node/@count"),
    ("<Data><Node><Id>a</Id></Node><Node><Id>a</Id></Node></Data>", "sss.id.duplicate",
     "/Data/Node[2]"),
])
def test_checks_xsd_cannot_make(text: str, code: str, pointer: str) -> None:
    result = sss.read(text.encode())
    assert result.document is None
    (diagnostic,) = result.diagnostics
    assert (diagnostic.code, diagnostic.pointer) == (code, pointer)
    assert diagnostic.line == 1


@pytest.mark.parametrize("text", [
    "<Node><Id>a</Id><Memory>1</Memory></Node>",  # consumable outside a category
    "<Node><Id>a</Id><Extension>x</Extension></Node>",  # Extension without name
    "<Node><Id>a</Id><Cpu>1</Cpu></Node>",  # not in the spec: use <Extension>
    '<Node><Id>a</Id><Configured foo="1"/></Node>',
    "<Data><Other/></Data>",
    '<Node aggregation="Hash">n1</Node>',
])
def test_xsd_rejects(text: str) -> None:
    result = sss.read(text.encode())
    assert result.document is None and result.diagnostics
    assert {d.code for d in result.diagnostics} == {"xsd.invalid"}
    assert all(d.line == 1 and d.pointer.startswith("/") for d in result.diagnostics)


def test_children_in_any_order_and_foreign_namespaces_warned() -> None:
    text = ('<Node xmlns:x="urn:x" x:a="1"><Configured><Processors>1</Processors><x:gpu/>'
            '</Configured><Feature>f</Feature><x:note>n</x:note><Id>a</Id></Node>')
    result = sss.read(text.encode())
    assert result.ok
    assert [d.code for d in result.diagnostics] == ["sss.foreign-element"] * 2 + [
        "sss.foreign-attribute"]
    assert all(not d.is_error for d in result.diagnostics)


def test_namespaced_root_is_refused_with_a_hint() -> None:
    result = sss.read(b'<Node xmlns="urn:sss"><Id>a</Id></Node>')
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "sss.root" and diagnostic.hint is not None


@pytest.mark.parametrize(("data", "code"), [
    (b"", "xml.syntax"),
    (b'<!DOCTYPE Node [<!ENTITY x SYSTEM "file:///etc/passwd">]><Node><Id>&x;</Id></Node>',
     "xml.dtd"),
    (b"<Node><Id>a</Id></Node><Node/>", "xml.syntax"),
    (b"<Lease/>", "sss.root"),
])
def test_hostile_or_foreign_input_is_one_diagnostic(data: bytes, code: str) -> None:
    result = sss.read(data)
    assert result.document is None
    assert [d.code for d in result.diagnostics] == [code]


def test_features_repeated_and_comma_delimited() -> None:
    machine = only_machine(node("<Feature>a, b</Feature><Feature>c</Feature>"))
    assert machine.features == ("a", "b", "c")
    result = sss.read(node("<Feature>a,,b</Feature>").encode())
    assert [d.code for d in result.diagnostics] == ["sss.feature.empty"] and result.ok


def test_data_of_nodes_keeps_document_order_in_one_rack() -> None:
    environment = read_ok("<Data>" + "".join(f"<Node><Id>n{i}</Id></Node>" for i in range(5))
                          + "</Data>")
    assert [machine.id for machine in environment.machines()] == [f"n{i}" for i in range(5)]
    assert len(list(environment.racks())) == 1
    assert read_ok("<Data/>") == single_rack()


def test_sniff() -> None:
    assert sss.sniff(SIMPLE_EXAMPLE.encode())
    assert sss.sniff(b"<?xml version='1.0'?>\n<Data>\n  <Node><Id>a</Id></Node></Data>")
    assert not sss.sniff(b"<Data><Row/></Data>")
    assert not sss.sniff(b'{"environment": {}}')


# --------------------------------------------------------------------------- states


@pytest.mark.parametrize(("word", "state", "label"), [
    ("Idle", MachineState.ACTIVE, None),
    ("Busy", MachineState.ACTIVE, "Busy"),
    ("Running", MachineState.ACTIVE, "Running"),
    ("Offline", MachineState.HALT, None),
    ("Configured", MachineState.HALT, "Configured"),
    ("Drained", MachineState.MAINTENANCE, None),
    ("draining", MachineState.MAINTENANCE, "draining"),
    ("Down", MachineState.FAILURE, None),
    ("Unknown", MachineState.FAILURE, "Unknown"),
])
def test_state_table(word: str, state: MachineState, label: str | None) -> None:
    machine = only_machine(node(f"<State>{word}</State>"))
    assert (machine.state, machine.state_label) == (state, label)
    written = sss.write(Document(environment=single_rack(machine)))
    assert f"<State>{word}</State>".encode() in written.data


def test_unlisted_state_warns_and_reads_active_with_its_label() -> None:
    result = sss.read(node("<State>Floating</State>").encode())
    assert result.ok and [d.code for d in result.diagnostics] == ["sss.state.unlisted"]
    assert result.document is not None and result.document.environment is not None
    (machine,) = result.document.environment.machines()
    assert (machine.state, machine.state_label) == (MachineState.ACTIVE, "Floating")


@pytest.mark.parametrize("label", ["Idle", "Down", " ", "Floating"])
def test_a_label_that_cannot_be_the_state_text_travels_in_dcx_label(label: str) -> None:
    # The contract holds machine.state_label exactly: a label of another state, the state's
    # own word (read back as no label) or a blank one go beside the state's word.
    machine = Machine(id="a", state=MachineState.FAILURE, state_label=label)
    written = sss.write(Document(environment=single_rack(machine)))
    assert f'<State dcx:label="{label}">Down</State>'.encode() in written.data
    assert validates(written.data)
    assert read_ok(written.data) == single_rack(machine)


def test_missing_state_reads_active_and_is_written_as_idle() -> None:
    machine = only_machine(SIMPLE_EXAMPLE)
    assert (machine.state, machine.state_label) == (MachineState.ACTIVE, None)
    assert b"<State>Idle</State>" in sss.write(Document(environment=single_rack(machine))).data


# --------------------------------------------------------------------------- references


def test_node_references_are_validated_and_kept() -> None:
    environment = read_ok(
        '<Data><Node><Id>n1</Id></Node>'
        '<Node aggregation="Range" count="2">node[5-23,77]</Node>'
        '<Node aggregation="Pattern">node[1-5]</Node>'
        '<Node aggregation="List" delimiter=";">a;b</Node>'
        "<Node> node9 </Node></Data>")
    assert environment.extras["sss:references"] == [
        {"node": "node[5-23,77]", "aggregation": "Range", "count": 2},
        {"node": "node[1-5]", "aggregation": "Pattern"},
        {"node": "a;b", "aggregation": "List", "delimiter": ";"},
        {"node": "node9"}]
    written = sss.write(Document(environment=environment))
    assert validates(written.data)
    assert read_ok(written.data) == environment


@pytest.mark.parametrize(("text", "fragment"), [
    ('<Node aggregation="Range">node[3-1]</Node>', "RFC 29"),
    ('<Node aggregation="Range">rack[1-2]node[1-3]</Node>', "RFC 29"),
    ('<Node aggregation="Pattern">node[1-5</Node>', "regular expression"),
    ('<Node aggregation="List">a,,b</Node>', "list item 2 is empty"),
    ('<Node count="0">n1</Node>', "at least 1"),
    ("<Node/>", "needs a node id"),
])
def test_invalid_references(text: str, fragment: str) -> None:
    result = sss.read(text.encode())
    (diagnostic,) = result.diagnostics
    assert result.document is None and diagnostic.code == "sss.reference.invalid"
    assert fragment in diagnostic.message


def test_delimiter_without_list_is_a_warning() -> None:
    result = sss.read(b'<Node aggregation="Range" delimiter=";">n[1-2]</Node>')
    assert result.ok and [d.code for d in result.diagnostics] == [
        "sss.reference.delimiter-ignored"]


def test_reference_expansion_and_matching() -> None:
    ranged = sss.NodeReference("node[5-7,77]", "Range")
    assert sss.reference_nodes(ranged) == ("node5", "node6", "node7", "node77")
    assert sss.reference_matches(ranged, "node77") and not sss.reference_matches(ranged, "node8")
    listed = sss.NodeReference("a; b", "List", delimiter=";")
    assert sss.reference_nodes(listed) == ("a", "b")
    # The spec's own Pattern example is an unanchored character class (notes §4 item 5).
    pattern = sss.NodeReference("node[1-5]", "Pattern")
    assert sss.reference_matches(pattern, "node15") and not sss.reference_matches(pattern, "n6")
    with pytest.raises(ValueError, match="RFC 29"):
        sss.reference_nodes(sss.NodeReference("n[2-1]", "Range"))


# --------------------------------------------------------------------------- writer


def lost(document: Document) -> set[str]:
    """The field paths converting ``document`` to SSS loses (derived, not counted)."""
    return {loss.field for loss in conversion_losses(document, sss.FORMAT)}



def test_writer_losses_name_every_dropped_field() -> None:
    machine = Machine(
        id=7, rank=3,
        cpus=(ProcessingUnit(cores=4, clock_rate_hz=2e9, model="Xeon"),
              ProcessingUnit(cores=4)),
        gpus=(ProcessingUnit(cores=80, manufacturer="NVIDIA"),),
        memory=(StorageUnit(capacity_mb=1024), StorageUnit(capacity_mb=1024, read_speed_mb_s=1)),
        features=("has,comma",),
        resources=(NamedResource("GPU", 1), NamedResource("license", 2, instances=(1, 1))),
        extras={"foo": 1})
    environment = Environment(
        name="cluster", datacenters=(
            Datacenter(id="dc", rooms=(Room(racks=(Rack(id="r1", slots=(machine, None)),)),)),))
    written = sss.write(Document(environment=environment))
    assert written.ok and validates(written.data)
    assert lost(Document(environment=environment)) == {
        "environment.name", "datacenter.id", "rack.id", "rack.empty_slots",
        "machine.rank", "machine.cpus.sockets", "cpu.clock_rate_hz", "cpu.vendor",
        "gpu.cores", "machine.memory.modules", "memory.details",
        "machine.features", "machine.resources", "machine.extras"}
    (back,) = read_ok(written.data).machines()
    assert (back.id, back.core_count, back.memory_mb, back.gpu_count) == (7, 8, 2048, 1)


@pytest.mark.parametrize(("machine", "code"), [
    (Machine(id=" "), "sss.write.missing-id"),
    (Machine(id="a\x00b"), "sss.write.unwritable-text"),
    (Machine(id="a", memory=(StorageUnit(capacity_mb=-1),)), "sss.write.negative"),
    (Machine(id="a", swap_mb=math.inf), "sss.write.out-of-range"),
    (Machine(id="a", network_mbit_s=1e300), "sss.write.out-of-range"),
])
def test_unwritable_models_are_write_errors(machine: Machine, code: str) -> None:
    written = sss.write(Document(environment=single_rack(machine)))
    assert written.data == b"" and [d.code for d in written.diagnostics] == [code]


def test_duplicate_ids_are_a_write_error() -> None:
    written = sss.write(Document(environment=single_rack(Machine(id=1), Machine(id="1"))))
    assert [d.code for d in written.diagnostics] == ["sss.write.duplicate-id"]


def test_machines_without_ids_are_written_under_their_name_or_position() -> None:
    # A Flux R or OpenDC inventory names hosts (or nothing) but numbers nothing.
    environment = single_rack(Machine(name="node1"), Machine(), Machine(name="7"))
    written = sss.write(Document(environment=environment))
    assert written.ok and validates(written.data)
    assert lost(Document(environment=environment)) == set()  # filling ids loses nothing
    ids = [(m.id, m.name) for m in read_ok(written.data).machines()]
    assert ids == [("node1", "node1"), ("node2", None), (7, "7")]


def test_decimal_ids_read_as_integers_and_text_ids_that_look_decimal_are_a_loss() -> None:
    environment = single_rack(Machine(id=64), Machine(id="064"), Machine(id="9"))
    written = sss.write(Document(environment=environment))
    assert [m.id for m in read_ok(written.data).machines()] == [64, "064", 9]
    assert lost(Document(environment=environment)) == {"machine.id"}


def test_gpu_vendor_fields_travel_in_the_dcx_namespace() -> None:
    a100 = ProcessingUnit(cores=1, manufacturer="NVIDIA", family="Ampere", model="A100")
    environment = single_rack(Machine(id="g", gpus=(a100, a100, ProcessingUnit(cores=1))))
    written = sss.write(Document(environment=environment))
    assert validates(written.data)
    text = written.data.decode()
    assert f'xmlns:dcx="{sss.DCX_NAMESPACE}"' in text
    assert 'type="A100" dcx:manufacturer="NVIDIA" dcx:family="Ampere">2<' in text
    result = sss.read(written.data)
    assert result.diagnostics == ()  # dcx's own attributes draw no foreign-attribute warning
    assert read_ok(written.data) == environment


def test_a_workload_is_one_loss_and_an_absent_topology_an_empty_data() -> None:
    workload = Workload(jobs=(Job(id=1, tasks=(Task(id=1),)),))
    written = sss.write(Document(workload=workload))
    assert lost(Document(workload=workload)) == {"workload"}
    assert written.data.endswith(b"<Data/>\n")
    assert sss.sniff(written.data) and sss.read(written.data).ok  # dcx reads what it writes
    assert lost(Document(workload=Workload())) == set()


def test_control_whitespace_survives_in_text_and_attributes() -> None:
    machine = Machine(id="a\tb", description="line1\r\nline2\n",
                      extras={"sss:extensions": [{"name": "k\n", "value": " v\r"}]})
    written = sss.write(Document(environment=single_rack(machine)))
    assert read_ok(written.data) == single_rack(machine)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies_sss.environments())
def test_model_to_sss_to_model_is_identity(environment: Environment) -> None:
    written = sss.write(Document(environment=environment))
    assert written.ok
    assert validates(written.data)
    assert read_ok(written.data) == environment


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies_environment.environments())
def test_any_environment_writes_valid_sss_and_keeps_what_sss_holds(
    environment: Environment,
) -> None:
    written = sss.write(Document(environment=environment))
    assert written.ok and validates(written.data)
    back = read_ok(written.data)
    assert list(back.machines()) == [held_by_sss(m) for m in environment.machines()]
    dropped = lost(Document(environment=environment))
    assert dropped <= set(FIELDS)
    assert "machine.id" not in dropped  # integer ids read back as integers


def held_by_sss(machine: Machine) -> Machine:
    """What an SSS round trip is specified to keep of a machine (module docstring)."""
    def one_cpu(units: tuple[ProcessingUnit, ...]) -> tuple[ProcessingUnit, ...]:
        return (ProcessingUnit(cores=sum(u.cores for u in units)),) if units else ()

    def one_store(units: tuple[StorageUnit, ...]) -> tuple[StorageUnit, ...]:
        return (StorageUnit(capacity_mb=sum(u.capacity_mb for u in units)),) if units else ()

    return Machine(
        id=id_from_text(str(machine.id)), name=machine.name, state=machine.state,
        cpus=one_cpu(machine.cpus),
        gpus=tuple(ProcessingUnit(cores=1, manufacturer=gpu.manufacturer, family=gpu.family,
                                  generation=gpu.generation, model=gpu.model)
                   for gpu in machine.gpus),
        memory=one_store(machine.memory), storage=one_store(machine.storage))


# --------------------------------------------------------------------------- via environment JSON


def environment_json_round_trip(environment: Environment) -> Environment:
    from dcx.formats import environment as environment_json

    written = environment_json.write(Document(environment=environment))
    assert written.ok, [d.render() for d in written.diagnostics]
    result = environment_json.read(written.data)
    assert result.ok, [d.render() for d in result.diagnostics[:3]]
    assert result.document is not None and result.document.environment is not None
    return result.document.environment


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies_environment.environments())
def test_environment_json_to_sss_and_back_keeps_no_machine_without_a_clock_rate(
    environment: Environment,
) -> None:
    # SSS holds no clock rate and the upstream jsspp-osp schema requires one on every CPU:
    # environment JSON leaves such machines out rather than invent a rate.
    original = environment_json_round_trip(environment)
    via_sss = read_ok(sss.write(Document(environment=original)).data)
    assert [held_by_sss(m) for m in original.machines()] == [
        replace(m, state_label=None) for m in via_sss.machines()]
    assert list(environment_json_round_trip(via_sss).machines()) == []


def test_sss_to_environment_json_is_refused_with_a_reason() -> None:
    from dcx.converters.convert import convert_document
    from dcx.converters.registry import get

    document = Document(environment=single_rack(Machine(id="n1", cpus=(ProcessingUnit(4),))))
    conversion = convert_document(document, sss.FORMAT, get("environment"))
    assert [d.code for d in conversion.diagnostics] == ["convert.nothing-held"]


# --------------------------------------------------------------------------- examples and scale


def test_examples_read_cleanly_and_round_trip() -> None:
    paths = sorted(EXAMPLES.glob("*.xml"))
    assert len(paths) >= 2
    for path in paths:
        data = path.read_bytes()
        assert sss.sniff(data) and validates(data)
        environment = read_ok(data)
        assert read_ok(sss.write(Document(environment=environment)).data) == environment


@pytest.mark.slow
def test_ten_thousand_node_data_round_trips() -> None:
    environment = read_ok(strategies_sss.generated_cluster(10_000))
    machines = list(environment.machines())
    assert len(machines) == 10_000 and sum(m.gpu_count for m in machines) == 1250 * 4
    written = sss.write(Document(environment=environment))
    assert validates(written.data)
    assert read_ok(written.data) == environment


@pytest.mark.slow
def test_ten_thousand_node_data_converts_to_environment_json_and_back() -> None:
    from dcx.formats.environment import upstream_problems

    # SSS carries no clock rate; given one, the nodes the upstream schema accepts survive.
    environment = strategies_sss.with_clock_rate(
        read_ok(strategies_sss.generated_cluster(10_000)), 2e9)
    accepted = [m for m in environment.machines() if not upstream_problems(m)]
    assert len(accepted) > 9_000
    again = environment_json_round_trip(environment)
    assert [m.id for m in again.machines()] == [m.id for m in accepted]


def test_generated_cluster_is_small_enough_for_a_quick_check() -> None:
    environment = read_ok(strategies_sss.generated_cluster(50))
    assert [m.state for m in environment.machines()][:5] == [
        MachineState.ACTIVE, MachineState.ACTIVE, MachineState.FAILURE,
        MachineState.MAINTENANCE, MachineState.ACTIVE]


def test_schema_errors_are_capped_per_document() -> None:
    from dcx.parsing import xmlio

    attributes = " ".join(f'a{index}="x"' for index in range(10_000))
    result = sss.read(f"<Node {attributes}/>".encode())
    assert len(result.diagnostics) == xmlio.MAX_XSD_ERRORS + 1
    assert result.diagnostics[-1].code == "xsd.more-errors"


# ------------------------------------------------------------------------------ groups

_MEMBER_NAMES = st.text(alphabet="ab1&<>\r\n é", min_size=1, max_size=5).filter(str.strip)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=strategies_sss.machines("x"),
       names=st.lists(_MEMBER_NAMES, unique=True, min_size=1, max_size=4),
       with_ids=st.booleans(), named_template=st.booleans())
def test_a_group_writes_the_bytes_of_its_members_one_by_one(
        template: Machine, names: list[str], with_ids: bool, named_template: bool) -> None:
    """The writer serialises a group's node once and puts each member's id and name into its
    text; the bytes are those of one element per member (the whole tree through lxml)."""
    from dcx.core.groups import MachineGroup, Slots

    template = replace(template, id=None, name="shared" if named_template else None)
    ids = tuple(f"id{index}&" for index in range(len(names))) if with_ids else None
    group = MachineGroup(template, len(names), ids=ids,
                         names=None if named_template else tuple(names))
    first = Machine(id="first", cpus=(ProcessingUnit(cores=2),))

    def document(slots: object) -> Document:
        rack = Rack(slots=slots)  # type: ignore[arg-type]
        return Document(environment=Environment(
            datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),)))

    grouped = document(Slots([first, group]))
    expanded = document((first, *group))
    written = sss.write(grouped)
    assert written == sss.write(expanded)
    if not written.ok:  # one name for every member: their ids repeat, which SSS refuses
        assert named_template and not with_ids and len(names) > 1
        return
    assert sss.normal_form_losses(grouped) == sss.normal_form_losses(expanded)
    from dcx.formats.sss import writer

    members = (first, *group)
    texts, _ = writer._node_ids(list(members), False, set())
    nodes = [writer._SingleNode(m, t, "", set()) for m, t in zip(members, texts, strict=True)]
    whole = writer._tree_bytes(nodes, [], False, any(node.namespaced for node in nodes))
    assert written.data == whole


def test_a_million_rank_allocation_is_written_as_text_not_elements() -> None:
    from dcx.formats import flux_r

    count = 200_000
    data = (b'{"version": 1, "execution": {"R_lite": [{"rank": "0-%d", "children": '
            b'{"core": "0-31"}}], "nodelist": ["n[0-%d]"]}}' % (count - 1, count - 1))
    document = flux_r.read(data).document
    assert document is not None
    written = sss.write(document).data
    assert written.count(b"<Node>") == count
    assert b"<Id>n199999</Id>\n    <Name>n199999</Name>" in written
