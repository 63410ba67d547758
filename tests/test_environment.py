"""Environment JSON: resolution as the format guide says, validation, round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

from dcx.core.diagnostics import ReadResult, Severity
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    MachineState,
    MachineStateChange,
    ProcessingUnit,
    Rack,
    Room,
    SchedulerSpec,
    StorageUnit,
)
from dcx.formats import environment
from dcx.formats.environment.jsonref import resolve_document
from tests.strategies_environment import environments


def read_json(value: Any) -> ReadResult:
    return environment.read(json.dumps(value).encode())


def environment_of(result: ReadResult) -> Environment:
    """The environment of a read that must succeed."""
    assert result.ok, result.diagnostics
    assert result.document is not None and result.document.environment is not None
    return result.document.environment


def codes(result: Any) -> list[str]:
    return [d.code for d in result.diagnostics if d.severity is Severity.ERROR]


def minimal(units: list[Any], **extra: Any) -> dict[str, Any]:
    return {"environment": {"datacenters": [{"id": 0, "rooms": [{"type": "SERVER", "objects": [
        {"type": "RACK", "units": units}]}]}]}, **extra}


MACHINE = {"type": "MACHINE", "cpus": [{"clock-rate": 2.4e9, "cores": 8}]}

# ---------------------------------------------------------------- the guide's examples


def test_single_base_own_keys_win() -> None:
    resolved, _ = resolve_document({"test": {"a": 2, "$base": "#/definition"},
                                    "definition": {"a": 1, "b": 2}})
    assert resolved["test"] == {"a": 2, "b": 2}


def test_multiple_bases_in_ascending_precedence() -> None:
    # The guide's pointer typo "#/defintion-b" fixed; later bases override earlier ones.
    resolved, _ = resolve_document({
        "test": {"a": 2, "$base": ["#/definition-a", "#/definition-b"]},
        "definition-a": {"a": 1, "b": 2, "c": 3}, "definition-b": {"b": 3}})
    assert resolved["test"] == {"a": 2, "b": 3, "c": 3}


def test_guide_typo_pointer_is_a_located_error() -> None:
    result = read_json({**minimal([{"$base": ["#/definition-a", "#/defintion-b"]}]),
                        "definition-a": MACHINE})
    assert codes(result) == ["ref.missing"]
    assert result.diagnostics[0].pointer.endswith("/units/0/$base/1")
    assert result.diagnostics[0].line == 1


def test_merge_puts_own_items_first_as_the_guide_shows() -> None:
    resolved, _ = resolve_document({
        "test": {"array": [1, 2], "object": {"a": 1}, "$base": "#/definition",
                 "$merge": ["array", "object"]},
        "definition": {"array": [2, 3, 4], "object": {"a": 2, "b": 2}}})
    assert resolved["test"] == {"array": [1, 2, 2, 3, 4], "object": {"a": 1, "b": 2}}


def test_concrete_example_fixed_pointer_validates() -> None:
    document = minimal([{"id": 1, "name": "hostname-1.example.com", "state": "ACTIVE",
                         "$base": "#/definitions/machines/default"}])
    document["definitions"] = {"machines": {"default": {
        "type": "MACHINE",
        "cpus": [{"manufacturer": "Intel", "family": "Xeon", "generation": "v3",
                  "model": "E5-2630", "clock-rate": 2400000000, "cores": 8}],
        "memory": [{"capacity": 8000}]}}}
    machine = next(environment_of(read_json(document)).machines())
    assert machine.core_count == 8 and machine.memory_mb == 8000
    assert machine.cpus[0].model == "E5-2630"
    broken = json.loads(json.dumps(document).replace("machines/default", "machine/default"))
    assert codes(read_json(broken)) == ["ref.missing"]


def test_guide_rack_example_with_empty_cpus_is_invalid() -> None:
    result = read_json(minimal([{"type": "EMPTY"}, {"type": "MACHINE", "cpus": []}]))
    assert not result.ok
    assert any(d.code.startswith("schema.") for d in result.diagnostics)


def test_minimal_guide_document_is_valid() -> None:
    result = read_json({"environment": {"datacenters": []}, "events": [], "definitions": {}})
    assert environment_of(result).datacenters == ()


def test_nested_bases_resolve_and_each_target_once() -> None:
    document = minimal([{"id": i, "$base": "#/definitions/b"} for i in range(3)])
    document["definitions"] = {"a": MACHINE, "b": {"$base": "#/definitions/a", "name": "n"}}
    machines = list(environment_of(read_json(document)).machines())
    assert [m.name for m in machines] == ["n", "n", "n"]
    # shared definitions are built once: the CPU tuples are the same object
    assert machines[0].cpus is machines[1].cpus


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(("document", "code", "pointer"), [
    ({"a": {"$base": "#/b"}, "b": {"$base": "#/a"}, **minimal([])}, "ref.cycle", "/a/$base"),
    ({**minimal([{"id": 1, "$base": "#/environment"}])}, "ref.cycle",
     "/environment/datacenters/0/rooms/0/objects/0/units/0/$base"),
    ({**minimal([{"$base": "#/nowhere"}])}, "ref.missing", None),
    ({**minimal([{"$base": "other.json#/x"}])}, "ref.external", None),
    ({**minimal([{"$base": "#/definitions/x", "$merge": "cpus"}]),
      "definitions": {"x": MACHINE}}, "ref.merge-type", None),
    ({**minimal([{"$base": "#/definitions/x"}]), "definitions": {"x": [1]}}, "ref.not-object",
     None),
])
def test_reference_errors_name_the_offending_pointer(document: Any, code: str,
                                                     pointer: str | None) -> None:
    result = read_json(document)
    assert codes(result) == [code]
    diagnostic = result.diagnostics[0]
    assert diagnostic.line is not None and diagnostic.column is not None
    assert "$base" in diagnostic.pointer or "$merge" in diagnostic.pointer
    if pointer:
        assert diagnostic.pointer == pointer


def test_fan_out_bomb_is_refused() -> None:
    definitions: dict[str, Any] = {"d0": {"v": 1}}
    for level in range(1, 40):
        below = f"#/definitions/d{level - 1}"
        definitions[f"d{level}"] = {"x": {"$base": below}, "y": {"$base": below}}
    result = read_json({**minimal([]), "definitions": definitions,
                        "root": {"$base": "#/definitions/d39"}})
    assert codes(result) == ["ref.expansion"]


@pytest.mark.parametrize(("data", "code"), [
    (b"[1, 2]", "environment.root"),
    (b'{"environment": {"datacenters": []}, "environment": {}}', "json.duplicate-key"),
    (b'{"environment": {"datacenters": [NaN]}}', "json.number"),
    (b"[" * 10000 + b"]" * 10000, "json.depth"),
    (b'\xef\xbb\xbf{"environment": {"datacenters": []}}', "json.bom"),
])
def test_bad_json_is_one_located_error(data: bytes, code: str) -> None:
    result = environment.read(data)
    assert result.document is None
    assert [d.code for d in result.diagnostics] == [code]
    assert result.diagnostics[0].line is not None


def test_semantic_checks() -> None:
    document = minimal([dict(MACHINE, id=1), dict(MACHINE, id=1)])
    document["environment"]["datacenters"][0]["rooms"][0]["objects"][0]["capacity"] = 1
    document["events"] = [
        {"type": "MACHINE_STATE_CHANGE", "time": 5, "machine": 1, "state": "FAILURE"},
        {"type": "MACHINE_STATE_CHANGE", "time": 1, "machine": 7, "state": "ACTIVE"},
        {"type": "DATACENTER_SCHEDULER_CHANGE", "datacenter": 9, "scheduler": {"name": "x"}},
    ]
    result = read_json(document)
    assert sorted(codes(result)) == sorted([
        "environment.duplicate-id", "environment.rack-capacity", "environment.unknown-machine",
        "environment.unknown-datacenter"])
    warnings = {d.code for d in result.diagnostics if d.severity is Severity.WARNING}
    assert warnings == {"environment.event-order", "environment.event-untimed"}


def test_unknown_keys_warn_with_the_key_position_and_are_kept() -> None:
    data = json.dumps(minimal([dict(MACHINE, id=1, clockrate=3)]), indent=1).encode()
    result = environment.read(data)
    assert result.ok
    [diagnostic] = result.diagnostics
    assert diagnostic.code == "environment.unknown-key"
    line = data.decode().splitlines()[diagnostic.line - 1]
    assert line[diagnostic.column - 1:].startswith('"clockrate"')
    machine = next(result.document.environment.machines())
    assert machine.extras == {"clockrate": 3}
    assert b'"clockrate": 3' in environment.write(result.document).data


# ---------------------------------------------------------------- corpus


def test_corpus_example_validates_with_its_typo_warnings(corpus_dir: Path) -> None:
    result = environment.read((corpus_dir / "jsspp-osp/examples/environment.json").read_bytes())
    assert result.ok
    assert {d.code for d in result.diagnostics} == {"environment.unknown-key"}
    machines = list(result.document.environment.machines())
    assert [m.id for m in machines] == [1, 2, 3]
    assert [m.core_count for m in machines] == [13, 8, 8]  # own 5-core CPU first, then the base's
    assert result.document.environment.events[1].cause == "Hard-disk drive failed"


def upstream_validator(corpus_dir: Path) -> jsonschema.protocols.Validator:
    schema = json.loads((corpus_dir / "jsspp-osp/schemas/environment.schema.json").read_text())
    return jsonschema.Draft7Validator(schema)


def test_writer_output_validates_against_ours_and_upstream(corpus_dir: Path) -> None:
    source = environment.read((corpus_dir / "jsspp-osp/examples/environment.json").read_bytes())
    written = environment.write(source.document)
    resolved, _ = resolve_document(json.loads(written.data))
    errors = list(upstream_validator(corpus_dir).iter_errors(resolved))
    assert not errors, errors[0].message
    assert environment.read(written.data).document == source.document


# ---------------------------------------------------------------- round trips


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(environments())
def test_model_to_json_to_model_is_identity(env: Environment) -> None:
    written = environment.write(Document(environment=env))
    result = environment.read(written.data)
    assert result.ok, [d.render() for d in result.diagnostics]
    # identity for what the format holds: its normal form (options keep no $base/$merge key)
    assert result.document == environment.normal_form(Document(environment=env))


def test_reference_keywords_in_scheduler_options_are_a_reported_loss() -> None:
    """A ``$base`` key in free-form options would be read back as a reference: the normal
    form leaves it out, and the loss is reported at the scheduler's field path."""
    spec = SchedulerSpec(name="fcfs", options={"$base": 0, "queue": {"$merge": [], "n": 2}})
    env = Environment(datacenters=(Datacenter(id="dc-0", scheduler=spec),))
    document = Document(environment=env)
    assert environment.normal_form_losses(document) == {"datacenter.scheduler"}
    written = environment.write(document)
    read = environment.read(written.data)
    assert read.ok, [d.render() for d in read.diagnostics]
    assert read.document is not None and read.document.environment is not None
    assert read.document.environment.datacenters[0].scheduler == SchedulerSpec(
        name="fcfs", options={"queue": {"n": 2}})


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.function_scoped_fixture],
          deadline=None)
@given(env=environments())
def test_writer_output_validates_upstream(corpus_dir: Path, env: Environment) -> None:
    written = environment.write(Document(environment=env))
    resolved, _ = resolve_document(json.loads(written.data))
    assert not list(upstream_validator(corpus_dir).iter_errors(resolved))


def _one_rack(*slots: Machine | None) -> Environment:
    return Environment(datacenters=(Datacenter(id=0, rooms=(Room(racks=(Rack(slots=slots),)),)),))


def test_the_users_definition_names_survive_a_rewrite() -> None:
    source = minimal([{"id": 1, "$base": "#/definitions/machines/compute"},
                      {"id": 2, "$base": "#/definitions/machines/compute",
                       "memory": [{"capacity": 1024}]},
                      {"id": 3, **MACHINE}],
                     definitions={"machines": {"compute": {**MACHINE,
                                                           "memory": [{"capacity": 512}]}}})
    first = read_json(source)
    machines = list(environment_of(first).machines())
    assert [m.extras for m in machines] == [
        {environment.DEFINITION_EXTRA: "#/definitions/machines/compute"}] * 2 + [{}]
    written = environment.write(first.document)
    tree = json.loads(written.data)
    # the definition holds what its machines share; each machine adds what differs
    assert tree["definitions"] == {"machines": {"compute": MACHINE}}
    units = tree["environment"]["datacenters"][0]["rooms"][0]["objects"][0]["units"]
    assert units[0] == {"id": 1, "state": "ACTIVE", "$base": "#/definitions/machines/compute",
                        "memory": [{"capacity": 512}]}
    assert "$base" not in units[2]
    assert environment.read(written.data).document == first.document


def test_other_targets_report_the_definition_name_as_a_loss() -> None:
    from dcx.converters.losses import conversion_losses
    from dcx.converters.registry import get

    source = read_json(minimal([{"id": 1, "name": "n1", "$base": "#/definitions/m"}],
                               definitions={"m": MACHINE}))
    assert source.ok and source.document is not None
    lost = [loss.field for loss in conversion_losses(source.document, get("sss"))]
    assert "machine.extras" in lost


def test_definition_names_the_writer_cannot_place_are_dropped_and_reported() -> None:
    base = environment.DEFINITION_EXTRA
    cpu = (ProcessingUnit(cores=2, clock_rate_hz=1e9),)
    env = _one_rack(Machine(id=1, cpus=cpu, extras={base: "#/definitions/a"}),
                    Machine(id=2, cpus=cpu, extras={base: "#/definitions/a/b"}),
                    Machine(id=3, cpus=cpu, extras={base: "#/environment"}))
    document = Document(environment=env)
    assert environment.normal_form_losses(document) == {"machine.extras"}
    back = environment.read(environment.write(document).data).document
    assert [m.extras for m in back.environment.machines()] == [{base: "#/definitions/a"}, {}, {}]


def test_machines_the_upstream_schema_refuses_are_left_out_and_reported() -> None:
    clocked = Machine(id="ok", cpus=(ProcessingUnit(cores=2, clock_rate_hz=1e9),))
    unclocked = Machine(id="n1", cpus=(ProcessingUnit(cores=4),))
    no_cpus = Machine(id="n2")
    half_mb = Machine(id="n3", cpus=clocked.cpus, memory=(StorageUnit(capacity_mb=0.5),))
    env = _one_rack(clocked, unclocked, None, no_cpus, half_mb)
    env = Environment(datacenters=env.datacenters, events=(
        MachineStateChange(machine="n1", state=MachineState.HALT, time_s=1),))
    document = Document(environment=env)
    normalised = environment.normalise(env)
    assert normalised.left_out == ("n1", "n2", "n3")
    assert normalised.changed == {"machine.cpus", "machine.memory",
                                  "environment.events.machine_state"}
    written = environment.write(document)
    result = environment.read(written.data)
    assert result.ok and not result.diagnostics
    assert result.document == environment.normal_form(document)
    assert [slot and slot.id for slot in next(result.document.environment.racks()).slots] == [
        "ok", None]


def test_a_conversion_that_keeps_no_machine_is_refused() -> None:
    from dcx.converters.convert import convert_document
    from dcx.converters.registry import get

    document = Document(environment=_one_rack(Machine(id="n1", cpus=(ProcessingUnit(cores=4),))))
    conversion = convert_document(document, get("sss"), get("environment"))
    assert not conversion.ok
    assert [d.code for d in conversion.diagnostics] == ["convert.nothing-held"]


def test_ids_and_room_types_the_schema_refuses_are_normalised() -> None:
    cpu = (ProcessingUnit(cores=2, clock_rate_hz=1e9, id="7"),)
    env = Environment(datacenters=(Datacenter(id=0, rooms=(
        Room(id="r", type="LAB", racks=(Rack(id=5, slots=(Machine(id=-1, cpus=cpu),)),
                                        Rack(id=5, slots=(Machine(id=1, cpus=cpu),)))),)),))
    document = Document(environment=env)
    assert environment.normal_form_losses(document) == {"room.type", "rack.id", "machine.id",
                                                        "cpu.id"}
    result = environment.read(environment.write(document).data)
    assert result.ok, [d.render() for d in result.diagnostics]
    assert result.document == environment.normal_form(document)
    room = result.document.environment.datacenters[0].rooms[0]
    assert (room.type, [rack.id for rack in room.racks]) == ("SERVER", [5, None])


def test_writer_output_without_a_topology_reads_back() -> None:
    written = environment.write(Document())
    assert environment.sniff(written.data)
    assert environment.read(written.data).ok


def test_the_reader_locates_model_objects_when_asked() -> None:
    """``ReadResult.locate``: a model pointer to the line and column of the unit, rack,
    datacenter or event it was read from; nothing for what the file does not have."""
    lines = ['{"environment": {"datacenters": [',
             '  {"rooms": [{"type": "SERVER", "objects": [{"type": "RACK", "units": [',
             '    {"type": "MACHINE", "id": "m", "cpus": [{"cores": 4}]},',
             '    {"type": "MACHINE", "cpus": [{"cores": 8}]}]}]}]},',
             '  {"rooms": []}]},',
             ' "events": [{"type": "MACHINE_STATE_CHANGE", "machine": "m", "state": "HALT"}]}']
    result = environment.read("\n".join(lines).encode())
    assert result.document is not None, result.diagnostics
    rack = "/environment/datacenters/0/rooms/0/racks/0"
    assert result.locate(rack + "/slots/1") == (4, 5)
    assert result.locate(rack) == (2, lines[1].index('{"type": "RACK"') + 1)
    assert result.locate("/environment/datacenters/1") == (5, 3)
    assert result.locate("/environment/events/0") == (6, lines[5].index('{"type"') + 1)
    assert result.locate(rack + "/slots/2") == (None, None)
    assert result.locate("/workload/jobs/0") == (None, None)


MOVED_BY_NORMAL_FORM = """{
  "definitions": {"m": {"type": "MACHINE", "cpus": [{"cores": 8, "clock-rate": 2400000000},
                                                     {"cores": 8, "clock-rate": 2400000000}],
                        "memory": [{"capacity": 4096}]}},
  "environment": {"datacenters": [{"rooms": [{"type": "SERVER", "objects": [
    {"type": "RACK", "units": [
      {"id": "a", "$base": "#/definitions/m"},
      {"id": "b", "$base": "#/definitions/m"},
      {"type": "EMPTY"},
      {"id": "c", "state": "MAINTENANCE", "$base": "#/definitions/m"}]}]}]}]}}
"""


def test_losses_locate_machines_a_normal_form_expands_or_moves(first_losses: Any) -> None:
    # SimGrid's normal form expands the group of a and b, drops the empty slot (moving c
    # from slot 3 to 2) and rebuilds each machine's CPUs as one: the first dropped values
    # are still found where the source has them.
    firsts = first_losses(MOVED_BY_NORMAL_FORM, "simgrid")
    rack = "/environment/datacenters/0/rooms/0/racks/0"
    assert firsts["machine.memory"] == f"in.json:7:7, {rack}/slots/0"
    assert firsts["machine.state"] == f"in.json:10:7, {rack}/slots/3"
