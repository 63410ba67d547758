"""WfCommons WfFormat 1.5: mapping, the validator's checks with located diagnostics, the
normal form, conversions and hypothesis round trips."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from dcx.converters.convert import convert
from dcx.converters.losses import conversion_losses
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Job,
    Machine,
    Placement,
    ProcessingUnit,
    Rack,
    ResourceRequest,
    Room,
    StorageUnit,
    Task,
    Workload,
)
from dcx.core.restrict import restrict
from dcx.formats import wfformat
from dcx.parsing.schemas import schema_diagnostics
from tests.strategies_wfformat import wfformat_documents

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples" / "wfformat").glob("*.json"))
DEMO: dict[str, Any] = {
    "name": "demo", "schemaVersion": "1.5",
    "workflow": {
        "specification": {
            "tasks": [
                {"name": "prep", "id": "t1", "parents": [], "children": ["t2"],
                 "outputFiles": ["f1"]},
                {"name": "sim", "id": "t2", "parents": ["t1"], "children": [],
                 "inputFiles": ["f1"]}],
            "files": [{"id": "f1", "sizeInBytes": 1048576}]},
        "execution": {
            "makespanInSeconds": 75, "executedAt": "2024-05-01T10:00:00+00:00",
            "tasks": [
                {"id": "t1", "runtimeInSeconds": 15, "coreCount": 1, "machines": ["cn001"]},
                {"id": "t2", "runtimeInSeconds": 60, "coreCount": 8, "machines": ["cn001"]}],
            "machines": [{"nodeName": "cn001", "memoryInBytes": 201326592000,
                          "cpu": {"coreCount": 32, "speedInMHz": 2400}}]}}}


def encoded(instance: dict[str, Any]) -> bytes:
    return json.dumps(instance, indent=1).encode()


def changed(edit: Any) -> bytes:
    instance = copy.deepcopy(DEMO)
    edit(instance)
    return encoded(instance)


def test_the_documented_example_maps_onto_tasks_and_machines() -> None:
    result = wfformat.read(encoded(DEMO))
    assert result.ok and result.diagnostics == ()
    workload = result.document.workload
    assert (workload.name, workload.time_origin) == ("demo", "2024-05-01T10:00:00+00:00")
    first, second = workload.tasks()
    assert [job.id for job in workload.jobs] == ["t1", "t2"]  # one job per task
    assert second.dependencies == ("t1",) and second.runtime_s == 60.0
    assert second.request == ResourceRequest(cores=8.0)
    assert first.extras[wfformat.TASK_NAME] == "prep"
    assert first.extras[wfformat.EXECUTION_MEMBERS] == {"machines": ["cn001"]}
    assert workload.extras[wfformat.SPECIFICATION_MEMBERS] == {
        "files": [{"id": "f1", "sizeInBytes": 1048576}]}
    assert workload.makespan_s is None  # 75 s is the critical path, 15 + 60
    (machine,) = result.document.environment.machines()
    assert machine.name == "cn001" and machine.memory_mb == 192000.0
    assert machine.cpus == (ProcessingUnit(cores=32, clock_rate_hz=2.4e9),)


def test_a_makespan_other_than_the_critical_path_is_kept() -> None:
    result = wfformat.read(changed(lambda i: i["workflow"]["execution"].update(
        makespanInSeconds=80.5)))
    assert result.ok
    assert result.document.workload.makespan_s == 80.5
    assert b'"makespanInSeconds": 80.5' in wfformat.write(result.document).data


def test_pegasus_month_day_year_timestamps_read_as_iso_with_a_conformance_warning() -> None:
    result = wfformat.read(changed(lambda i: i["workflow"]["execution"].update(
        executedAt="05-10-23T16:23:32Z")))
    assert result.ok and result.document.workload.time_origin == "2023-05-10T16:23:32Z"
    (found,) = result.diagnostics
    assert (found.code, found.pointer) == ("wfformat.pegasus-timestamp",
                                           "/workflow/execution/executedAt")
    written = wfformat.write(result.document)
    assert b'"executedAt": "2023-05-10T16:23:32Z"' in written.data
    assert wfformat.read(written.data).diagnostics == ()


def test_a_file_without_execution_has_no_runtimes_and_no_topology() -> None:
    result = wfformat.read(changed(lambda i: i["workflow"].pop("execution")))
    assert result.ok and result.document.environment is None
    assert [t.runtime_s for t in result.document.workload.tasks()] == [None, None]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_read_cleanly_and_rewrite_to_the_same_model(path: Path) -> None:
    result = wfformat.read(path.read_bytes())
    assert result.ok and result.diagnostics == ()
    assert wfformat.sniff(path.read_bytes())
    assert wfformat.normal_form(result.document) == result.document
    written = wfformat.write(result.document)
    assert written.diagnostics == ()
    again = wfformat.read(written.data)
    assert again.diagnostics == () and again.document == result.document


def test_children_add_dependencies_and_a_one_sided_edge_is_a_conformance_warning() -> None:
    def one_sided(instance: dict[str, Any]) -> None:
        instance["workflow"]["specification"]["tasks"][1]["parents"] = []

    result = wfformat.read(changed(one_sided))
    assert result.document is not None
    assert [t.dependencies for t in result.document.workload.tasks()] == [(), ("t1",)]
    (found,) = result.diagnostics
    assert (found.code, found.pointer) == ("wfformat.asymmetric-dependency",
                                           "/workflow/specification/tasks/0/children/0")
    assert found.line is not None and found.column is not None
    assert [c.conformance for c in wfformat.CODES if c.code == found.code] == [True]


@pytest.mark.parametrize(("edit", "code", "pointer"), [
    (lambda i: i.update(schemaVersion="1.6"), "wfformat.version", "/schemaVersion"),
    (lambda i: i["workflow"]["specification"]["tasks"][1].update(parents=["t9"]),
     "wfformat.unknown-dependency", "/workflow/specification/tasks/1/parents/0"),
    (lambda i: i["workflow"]["specification"]["tasks"][0].update(children=["nope"]),
     "wfformat.unknown-dependency", "/workflow/specification/tasks/0/children/0"),
    (lambda i: i["workflow"]["specification"]["tasks"][0].update(parents=["t2"],
                                                                children=["t2"]),
     "wfformat.dependency-cycle", "/workflow/specification/tasks/1/parents/0"),
    (lambda i: i["workflow"]["specification"]["tasks"].append(
        i["workflow"]["specification"]["tasks"][1]),
     "wfformat.duplicate-id", "/workflow/specification/tasks/2/id"),
    (lambda i: i["workflow"]["specification"]["tasks"][1].update(inputFiles=["f2"]),
     "wfformat.unknown-file", "/workflow/specification/tasks/1/inputFiles/0"),
    (lambda i: i["workflow"]["execution"]["tasks"][1].update(id="t7"),
     "wfformat.unknown-execution-task", "/workflow/execution/tasks/1/id"),
    (lambda i: i["workflow"]["execution"]["tasks"][1].update(id="t1"),
     "wfformat.duplicate-execution", "/workflow/execution/tasks/1/id"),
    (lambda i: i["workflow"]["execution"]["tasks"][1].update(machines=["cn009"]),
     "wfformat.unknown-machine", "/workflow/execution/tasks/1/machines/0"),
    (lambda i: i["workflow"]["execution"]["tasks"][1].update(coreCount=0.5),
     "schema.minimum", "/workflow/execution/tasks/1/coreCount"),
    (lambda i: i["workflow"]["specification"]["tasks"][1].pop("children"),
     "schema.required", "/workflow/specification/tasks/1"),
    (lambda i: i["workflow"]["execution"]["machines"][0]["cpu"].update(coreCount=1.5),
     "schema.type", "/workflow/execution/machines/0/cpu/coreCount"),
])
def test_bad_instances_are_refused_at_the_place_that_shows_it(edit: Any, code: str,
                                                               pointer: str) -> None:
    result = wfformat.read(changed(edit))
    assert result.document is None
    first = next(d for d in result.diagnostics if d.is_error)
    assert (first.code, first.pointer) == (code, pointer)
    assert first.line is not None and first.column is not None


def test_json_hazards_and_non_objects_are_refused() -> None:
    assert wfformat.read(b"[]").diagnostics[0].code == "wfformat.root"
    assert wfformat.read(b'{"name": "a", "name": "b"}').diagnostics[0].code == \
        "json.duplicate-key"


def test_the_schema_holds_the_required_members_of_each_version() -> None:
    assert schema_diagnostics(wfformat.SCHEMA, DEMO) == []
    assert schema_diagnostics(wfformat.SCHEMA, SHAPE_1_4) == []
    assert schema_diagnostics(wfformat.SCHEMA, SHAPE_1_3) == []
    assert schema_diagnostics(wfformat.SCHEMA, SHAPE_1_1) == []
    flat_as_1_5 = dict(SHAPE_1_4, schemaVersion="1.5")  # a 1.4 body under 1.5
    codes = {d.code for d in schema_diagnostics(wfformat.SCHEMA, flat_as_1_5)}
    assert codes == {"schema.required"}
    nested_as_1_4 = dict(DEMO, schemaVersion="1.4")  # a 1.5 body under 1.4
    codes = {d.code for d in schema_diagnostics(wfformat.SCHEMA, nested_as_1_4)}
    assert codes == {"schema.required"}


# The shapes of WfInstances' published files before 1.5 (Pegasus and Makeflow instances):
# tasks named <category>_ID<n>, parents and children by name, files inline with a link.
SHAPE_1_4: dict[str, Any] = {
    "name": "demo-1.4", "schemaVersion": "1.4",
    "wms": {"name": "Pegasus", "version": "5.0", "url": "https://pegasus.isi.edu"},
    "workflow": {
        "makespanInSeconds": 90, "executedAt": "20210510T162332+0000",
        "machines": [{"system": "linux", "architecture": "x86_64", "nodeName": "node-1",
                      "release": "5.4", "memoryInBytes": 2048000,
                      "cpu": {"count": 48, "speed": 1200, "vendor": "GenuineIntel"}}],
        "tasks": [
            {"name": "split_ID0000001", "id": "ID0000001", "category": "split",
             "type": "compute", "command": {"program": "split", "arguments": ["-n", "2"]},
             "parents": [], "children": ["merge_ID0000002"],
             "files": [{"link": "input", "name": "in.txt", "sizeInBytes": 100},
                       {"link": "output", "name": "part.txt", "sizeInBytes": 50}],
             "runtimeInSeconds": 30.5, "cores": 2, "avgCPU": 95.1, "readBytes": 100,
             "writtenBytes": 50, "memoryInBytes": 4096, "energy": 0.5, "avgPower": 11.2,
             "priority": 20, "machine": "node-1"},
            {"name": "merge_ID0000002", "id": "ID0000002", "category": "merge",
             "type": "compute", "parents": ["split_ID0000001"], "children": [],
             "files": [{"link": "input", "name": "part.txt", "sizeInBytes": 50}],
             "runtimeInSeconds": 40, "machine": "node-1"}]}}
SHAPE_1_3: dict[str, Any] = {
    "name": "demo-1.3", "schemaVersion": "1.3",
    "wms": {"name": "Makeflow", "version": "7.0"},
    "workflow": {
        "makespan": 12, "executedAt": "2020-01-01T00:00:00Z",
        "machines": [{"nodeName": "n1", "memory": 1024, "cpu": {"count": 4, "speed": 2600}}],
        "tasks": [
            {"name": "blastall_00000001", "id": "00000001", "type": "compute", "parents": [],
             "files": [{"link": "output", "name": "out", "size": 3}], "runtime": 10,
             "cores": 1, "memory": 2, "bytesRead": 4, "bytesWritten": 5, "machine": "n1"},
            {"name": "cat", "id": "00000002", "type": "compute",
             "parents": ["blastall_00000001"], "runtime": 2}]}}
SHAPE_1_1: dict[str, Any] = {
    "name": "demo-1.1", "schemaVersion": "1.1",
    "workflow": {
        "makespan": 5, "executedAt": "2019-01-01T00:00:00Z",
        "jobs": [{"name": "stage_in", "type": "transfer", "runtime": 1, "parents": []},
                 {"name": "run", "type": "compute", "runtime": 4, "cores": 3,
                  "parents": ["stage_in"], "arguments": ["-x"]}]}}


def test_a_1_4_instance_reads_as_the_migration_tool_moves_it() -> None:
    result = wfformat.read(encoded(SHAPE_1_4))
    assert result.ok and result.diagnostics == (), result.diagnostics
    workload = result.document.workload
    split, merge = workload.tasks()
    assert (split.id, merge.id) == ("split_ID0000001", "merge_ID0000002")
    assert merge.dependencies == ("split_ID0000001",)
    # memoryInBytes is the resident set size: memory used, here over 2 cores
    assert (split.runtime_s, split.request.cores, split.used_memory_mb) == (
        30.5, 2.0, 4096 / 2**20 / 2)
    assert split.request.memory_mb is None and split.application == "split"
    assert split.extras[wfformat.EXECUTION_MEMBERS] == {
        "command": {"arguments": ["-n", "2"]}, "avgCPU": 95.1,
        "readBytes": 100, "writtenBytes": 50, "energyInKWh": 0.5, "avgPowerInW": 11.2,
        "priority": 20, "machines": ["node-1"]}
    assert split.extras[wfformat.TASK_MEMBERS] == {
        "inputFiles": ["in.txt"], "outputFiles": ["part.txt"],
        "category": "split", "type": "compute"}
    assert merge.extras[wfformat.CORES_UNSTATED] is True
    assert workload.makespan_s == 90.0  # measured; the critical path is 70.5 s
    assert workload.extras[wfformat.INSTANCE_MEMBERS]["runtimeSystem"]["name"] == "Pegasus"
    (machine,) = result.document.environment.machines()
    assert machine.cpus == (ProcessingUnit(cores=48, clock_rate_hz=1.2e9,
                                           manufacturer="GenuineIntel"),)
    assert machine.memory_mb == 2048000 / 2**20


def test_a_legacy_instance_is_written_as_1_5_and_reads_back_the_same() -> None:
    for shape in (SHAPE_1_4, SHAPE_1_3, SHAPE_1_1):
        result = wfformat.read(encoded(shape))
        assert result.ok, result.diagnostics
        written = wfformat.write(result.document)
        root = json.loads(written.data)
        assert root["schemaVersion"] == "1.5"
        assert wfformat.read(written.data).document == result.document


def test_1_3_sizes_in_kilobytes_become_bytes_as_the_migration_tool_says() -> None:
    result = wfformat.read(encoded(SHAPE_1_3))
    assert result.ok, result.diagnostics
    first, cat = result.document.workload.tasks()
    assert first.id == "blastall_00000001" and cat.id == "cat_00000002"  # id not in the name
    assert cat.dependencies == ("blastall_00000001",)
    assert first.used_memory_mb == 2000 / 2**20
    assert first.extras[wfformat.EXECUTION_MEMBERS]["readBytes"] == 4000
    (machine,) = result.document.environment.machines()
    assert machine.memory_mb == 1024000 / 2**20
    assert result.document.workload.makespan_s is None  # 12 s is the critical path


def test_a_1_1_instance_names_its_jobs_by_name_and_keeps_their_members() -> None:
    result = wfformat.read(encoded(SHAPE_1_1))
    assert result.ok, result.diagnostics
    stage, run = result.document.workload.tasks()
    assert (stage.id, run.id, run.dependencies) == ("stage_in", "run", ("stage_in",))
    assert run.request.cores == 3.0 and run.extras[wfformat.TASK_MEMBERS] == {
        "type": "compute", "arguments": ["-x"]}


def test_a_legacy_error_is_located_in_the_legacy_file() -> None:
    shape = copy.deepcopy(SHAPE_1_4)
    shape["workflow"]["tasks"][1]["parents"] = ["nope"]
    result = wfformat.read(encoded(shape))
    assert not result.ok
    found = next(d for d in result.diagnostics if d.is_error)
    assert (found.code, found.pointer) == ("wfformat.unknown-dependency",
                                           "/workflow/tasks/1/parents/0")
    assert found.line is not None


def test_a_task_without_core_count_is_written_without_one() -> None:
    instance = copy.deepcopy(DEMO)
    del instance["workflow"]["execution"]["tasks"][0]["coreCount"]
    result = wfformat.read(encoded(instance))
    assert result.ok
    tasks = json.loads(wfformat.write(result.document).data)["workflow"]["execution"]["tasks"]
    assert "coreCount" not in tasks[0] and tasks[1]["coreCount"] == 8


def test_a_measured_makespan_dropped_by_a_target_is_a_loss_line() -> None:
    instance = copy.deepcopy(DEMO)
    instance["workflow"]["execution"]["makespanInSeconds"] = 10417
    there = convert(encoded(instance), "osp-workload", "in.json")
    assert there.ok and "workload.makespan_s" in {loss.field for loss in there.losses}
    instance["workflow"]["execution"]["makespanInSeconds"] = 75  # the critical path
    there = convert(encoded(instance), "osp-workload", "in.json")
    assert "workload.makespan_s" not in {loss.field for loss in there.losses}


def test_the_normal_form_fills_what_wfformat_requires_and_reports_what_it_changes() -> None:
    tasks = (Task(id="a b", runtime_s=5.0, request=ResourceRequest(cores=0.5)),
             Task(id=2, dependencies=("a b", "a b", 2), request=ResourceRequest(cores=4)))
    machines = (Machine(id="m1", cpus=(ProcessingUnit(cores=2, clock_rate_hz=2.45e9),
                                       ProcessingUnit(cores=2, clock_rate_hz=2.45e9,
                                                      family="Xeon")),
                        memory=(StorageUnit(1.5), StorageUnit(0.5)), os="plan9"),
                Machine(name="m1"))
    document = Document(
        environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
            Rack(slots=machines),)),)),)),
        workload=Workload(jobs=(Job(id="j", tasks=tasks),), time_origin="yesterday"))
    normal = wfformat.normal_form(document)
    first, second = normal.workload.tasks()
    assert (first.id, second.id, second.dependencies) == (1, 2, (1,))
    assert first.request.cores == 1.0 and second.request.cores == 1.0  # no runtime: no cores
    assert normal.workload.name == wfformat.NO_NAME and normal.workload.time_origin is None
    named = [m.name for m in normal.environment.machines()]
    assert named == ["m1", "m1-2"]
    merged = next(normal.environment.machines())
    assert merged.cpus[0].cores == 4 and merged.cpus[0].clock_rate_hz == 2.45e9
    assert merged.memory_mb == 2.0 and merged.os is None
    assert wfformat.normal_form_losses(document) == {
        "task.id", "task.dependencies", "task.request.cores", "workload.time_origin",
        "machine.name", "machine.os", "machine.cpus.sockets"}
    written = wfformat.write(document)
    assert written.diagnostics == ()
    assert wfformat.read(written.data).document == restrict(
        document, wfformat.HOLDS, "wfformat", target=wfformat.FORMAT)


def test_values_json_cannot_carry_are_normalised_not_written() -> None:
    tasks = (Task(id="a", runtime_s=float("inf")),
             Task(id="b", runtime_s=1.0, request=ResourceRequest(cores=float("nan")),
                  used_memory_mb=float("inf"), wait_time_s=float("nan")))
    document = Document(workload=Workload(jobs=(Job(id="j", tasks=tasks),)))
    assert wfformat.normal_form_losses(document) == {
        "task.runtime_s", "task.request.cores", "task.used_memory_mb", "task.wait_time_s"}
    written = wfformat.write(document)
    assert written.diagnostics == ()
    first, second = wfformat.read(written.data).document.workload.tasks()
    assert first.runtime_s is None and second.request == ResourceRequest()
    assert (second.used_memory_mb, second.wait_time_s) == (None, None)


def test_a_document_without_tasks_cannot_be_written_and_says_why() -> None:
    written = wfformat.write(Document(workload=Workload()))
    assert [d.code for d in written.diagnostics] == ["wfformat.unwritable"]
    machine = Machine(name="n", cpus=(ProcessingUnit(cores=1, clock_rate_hz=1e9),))
    topology = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=(machine,)),)),)),)))
    assert "no tasks" in wfformat.leaves_out(topology)
    assert "environment" in {loss.field for loss in conversion_losses(topology,
                                                                        wfformat.FORMAT)}


@pytest.mark.parametrize("source", [
    "osp-workload/genome-pipeline.json", "gwf/montage-workflow.gwf", "swf/small-cluster.swf"])
def test_seed_workloads_convert_to_wfformat_and_back(source: str) -> None:
    data = (REPO / "examples" / source).read_bytes()
    there = convert(data, "wfformat", source)
    assert there.ok, [d.render() for d in there.diagnostics]
    assert wfformat.read(there.data).diagnostics == ()
    origin = there.source.name if there.source is not None else ""
    back = convert(there.data, origin, "out.json")
    assert back.ok, [d.render() for d in back.diagnostics]


def test_a_topology_alone_is_refused_in_one_line() -> None:
    data = (REPO / "examples" / "environment" / "small-cluster.json").read_bytes()
    conversion = convert(data, "wfformat", "small-cluster.json")
    assert not conversion.ok and conversion.data == b""
    (refused,) = [d for d in conversion.diagnostics if d.is_error]
    assert refused.code == "convert.nothing-held" and "no tasks" in refused.message


@given(wfformat_documents())
@settings(max_examples=150, deadline=None)
def test_round_trip_is_identity_and_output_validates(document: Document) -> None:
    assert wfformat.normal_form_losses(document) == frozenset()
    written = wfformat.write(document)
    assert written.diagnostics == ()
    assert schema_diagnostics(wfformat.SCHEMA, json.loads(written.data)) == []
    result = wfformat.read(written.data)
    assert result.ok and result.diagnostics == (), result.diagnostics
    assert result.document == document


_PEGASUS_TIMESTAMPS = {"wfi15__helloworld-chain-5-chameleon.json",
                       "wfi15__helloworld-forkjoin-10-chameleon.json",
                       "wfi15__srasearch-chameleon-10a-001.json",
                       "wfi15__srasearch-chameleon-50a-005.json"}
"""Published WfInstances whose Pegasus timestamps dcx reads with its warning; every other one
reads without a diagnostic."""


@pytest.mark.corpus
def test_wfcommons_instances_in_the_corpus_read_without_errors(corpus_dir: Path) -> None:
    """WfInstances as published (corpus/upstream/wfformat, see its MANIFEST): each reads with
    exactly the diagnostics expected and is rewritten to the same model."""
    folder = corpus_dir / "upstream" / "wfformat"
    instances = sorted(folder.glob("*.json"))
    if not instances:
        pytest.skip(f"no upstream WfCommons instances under {folder}")
    for path in instances:
        data = path.read_bytes()
        result = wfformat.read(data)
        assert result.ok, (path, [d.render() for d in result.diagnostics][:3])
        expected = {"wfformat.pegasus-timestamp"} if path.name in _PEGASUS_TIMESTAMPS else set()
        assert {d.code for d in result.diagnostics} == expected, path.name
        written = wfformat.write(result.document)
        assert wfformat.read(written.data).document == result.document, path


@pytest.mark.corpus
def test_upstream_instances_rewrite_without_added_core_counts(corpus_dir: Path) -> None:
    folder = corpus_dir / "upstream" / "wfformat"
    instances = sorted(folder.glob("*.json"))
    if not instances:
        pytest.skip(f"no upstream WfFormat instances under {folder}")
    for path in instances:
        source = json.loads(path.read_bytes())
        result = wfformat.read(path.read_bytes())
        assert result.ok, (path, [d.render() for d in result.diagnostics][:3])
        written = json.loads(wfformat.write(result.document).data)
        execution, rewritten = source["workflow"]["execution"], written["workflow"]["execution"]
        for before, after in zip(execution["tasks"], rewritten["tasks"], strict=True):
            assert ("coreCount" in before) == ("coreCount" in after), (path, before["id"])
        assert rewritten["makespanInSeconds"] == execution["makespanInSeconds"], path


def test_losses_are_located_at_the_specification_task_and_the_machine(
        first_losses: Any) -> None:
    text = ('{"name": "w", "schemaVersion": "1.5", "workflow": {\n'
            ' "specification": {"tasks": [\n'
            '  {"name": "t1", "id": "t1", "parents": [], "children": ["t2"]},\n'
            '  {"name": "t2", "id": "t2", "parents": ["t1"], "children": [], "category": "x"}]},\n'
            ' "execution": {"makespanInSeconds": 15, "executedAt": "2024-05-01T10:00:00Z",\n'
            '  "tasks": [{"id": "t1", "runtimeInSeconds": 5, "coreCount": 1},'
            ' {"id": "t2", "runtimeInSeconds": 10, "coreCount": 1}],\n'
            '  "machines": [\n'
            '   {"nodeName": "m1"},\n'
            '   {"nodeName": "m2", "system": "linux"}]}}}\n')
    firsts = first_losses(text, "haizea")
    assert firsts["task.extras"] == "in.json:4:3, /workload/jobs/1/tasks/0"
    assert firsts["machine.os"] == "in.json:9:4, /environment/datacenters/0/rooms/0/racks/0/slots/1"


def test_a_regrouping_loss_is_located_at_the_first_job_it_changes(first_losses: Any) -> None:
    # GWF's normal form regroups the workflow's tasks: a value restriction that counts
    # nothing, placed at the first job the normal form changes (its specification task).
    text = (REPO / "examples" / "wfformat" / "blast-chameleon.json").read_text()
    firsts = first_losses(text, "gwf")
    assert firsts["job"] == "in.json:11:9, /workload/jobs/0"


def test_an_execution_task_records_its_start_program_and_memory_used() -> None:
    """A task's executedAt is its start (its wait since the workflow's), command.program its
    application, memoryInBytes the memory it used (the model's average per core); each is
    written back as it was read."""
    instance = copy.deepcopy(DEMO)
    first, second = instance["workflow"]["execution"]["tasks"]
    first.update(executedAt="2024-05-01T10:00:00+00:00", memoryInBytes=3 * 2**20,
                 command={"program": "prep", "arguments": ["-v"]})
    second.update(executedAt="2024-05-01T10:00:15.250000+00:00", memoryInBytes=8 * 2**20)
    result = wfformat.read(encoded(instance))
    assert result.ok and result.diagnostics == (), result.diagnostics
    prep, sim = result.document.workload.tasks()
    assert (prep.wait_time_s, prep.application, prep.used_memory_mb) == (0.0, "prep", 3.0)
    assert (sim.wait_time_s, sim.application, sim.used_memory_mb) == (15.25, None, 1.0)
    assert prep.request.memory_mb is None  # WfFormat asks for no memory
    assert prep.extras[wfformat.EXECUTION_MEMBERS] == {
        "machines": ["cn001"], "command": {"arguments": ["-v"]}}
    assert wfformat.normal_form_losses(result.document) == frozenset()
    written = json.loads(wfformat.write(result.document).data)["workflow"]["execution"]
    assert written["tasks"][0] | {"machines": ["cn001"]} == first
    assert written["tasks"][1] == second


@pytest.mark.parametrize("start", [
    "soon", "2024-05-01T09:59:59+00:00", "2024-05-01T10:00:05"])
def test_a_start_that_gives_no_wait_stays_a_member(start: str) -> None:
    """Not ISO 8601, before the workflow's start, or without the workflow's time zone: no
    wait, and the member is written back as it was."""
    instance = copy.deepcopy(DEMO)
    instance["workflow"]["execution"]["tasks"][0]["executedAt"] = start
    result = wfformat.read(encoded(instance))
    assert result.ok
    task = next(iter(result.document.workload.tasks()))
    assert task.wait_time_s is None
    assert task.extras[wfformat.EXECUTION_MEMBERS]["executedAt"] == start
    written = json.loads(wfformat.write(result.document).data)
    assert written["workflow"]["execution"]["tasks"][0]["executedAt"] == start


def test_a_trace_job_is_written_started_at_its_submit_plus_wait() -> None:
    """WfFormat submits every task when the workflow starts: an SWF job submitted at 100 s
    that waited 20 s starts at 120 s, which reads back as a wait of 120 s (a wait loss beside
    the submit one); its memory used goes across, its requested memory is lost."""
    swf_task = Task(id=1, submit_time_s=100.0, wait_time_s=20.0, runtime_s=5.0,
                    request=ResourceRequest(cores=2.0, memory_mb=512.0), used_memory_mb=64.0,
                    application="7")
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(swf_task,)),),
                                          time_origin="2024-05-01T10:00:00+00:00"))
    written = json.loads(wfformat.write(document).data)["workflow"]["execution"]["tasks"][0]
    assert written["executedAt"] == "2024-05-01T10:02:00+00:00"
    assert written["memoryInBytes"] == 128 * 2**20 and written["command"] == {"program": "7"}
    back = next(iter(wfformat.read(wfformat.write(document).data).document.workload.tasks()))
    assert (back.wait_time_s, back.used_memory_mb, back.application) == (120.0, 64.0, "7")
    lost = {loss.field for loss in conversion_losses(document, wfformat.FORMAT)}
    assert {"task.submit_time_s", "task.wait_time_s", "task.request.memory_mb"} <= lost
    assert not lost & {"task.used_memory_mb", "task.application"}


def test_a_multi_node_request_is_written_as_its_total_cores() -> None:
    """coreCount is the cores a task used in all (``len(machines)`` says over how many
    nodes): 64 SWF processors are 64 cores, not 1, and the memory used, an average per core,
    is the whole task's. Whole nodes (Batsim's hosts) give their cores too, with the node
    count a loss; cores anywhere lose no node count (only the total means something)."""
    processors = Task(id=1, runtime_s=10.0, used_memory_mb=2.0, request=ResourceRequest(
        nodes=64, placement=Placement.CORES))
    hosts = Task(id=2, runtime_s=10.0, request=ResourceRequest(nodes=8, cores=2.0))
    for task, cores in ((processors, 64), (hosts, 16)):
        document = Document(workload=Workload(jobs=(Job(id=task.id, tasks=(task,)),)))
        written = json.loads(wfformat.write(document).data)["workflow"]["execution"]["tasks"]
        assert written[0]["coreCount"] == cores
        back = next(iter(wfformat.read(wfformat.write(document).data).document.workload.tasks()))
        assert back.request.total_cores == task.request.total_cores
        lost = {loss.field for loss in conversion_losses(document, wfformat.FORMAT)}
        assert ("task.request.nodes" in lost) is (task is hosts), lost
        assert "task.request.cores" not in lost
    assert written[0].get("memoryInBytes") is None
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(processors,)),)))
    written = json.loads(wfformat.write(document).data)["workflow"]["execution"]["tasks"]
    assert written[0]["memoryInBytes"] == 128 * 2**20


@pytest.mark.parametrize(("source", "first_cores"), [
    ("swf/small-cluster.swf", 64), ("batsim/delays-and-compute.json", 8)])
def test_example_jobs_keep_their_cores_in_wfformat(source: str, first_cores: int) -> None:
    there = convert((REPO / "examples" / source).read_bytes(), "wfformat", source)
    assert there.ok, [d.render() for d in there.diagnostics]
    tasks = json.loads(there.data)["workflow"]["execution"]["tasks"]
    assert tasks[0]["coreCount"] == first_cores


def test_cpus_merged_into_one_are_a_sockets_loss() -> None:
    """A machine's CPUs become one (its cores and mean clock) in WfFormat's ``cpu``: a
    Haizea node of two CPU instances keeps its 8 cores and loses the split, with a line."""
    machine = Machine(name="n1", cpus=(ProcessingUnit(cores=4), ProcessingUnit(cores=4)))
    document = Document(
        environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
            Rack(slots=(machine,)),)),)),)),
        workload=Workload(jobs=(Job(id=1, tasks=(Task(id=1, runtime_s=1.0),)),)))
    assert "machine.cpus.sockets" in wfformat.normal_form_losses(document)
    lost = {loss.field: loss for loss in conversion_losses(document, wfformat.FORMAT)}
    assert lost["machine.cpus.sockets"].count == 1
    assert "machine.cpus" not in lost
    (written,) = json.loads(wfformat.write(document).data)["workflow"]["execution"]["machines"]
    assert written["cpu"]["coreCount"] == 8


def test_a_haizea_site_keeps_its_cores_and_names_the_merged_cpus() -> None:
    source = "haizea/mixed-site.lwf"
    there = convert((REPO / "examples" / source).read_bytes(), "wfformat", source)
    assert there.ok, [d.render() for d in there.diagnostics]
    machines = json.loads(there.data)["workflow"]["execution"]["machines"]
    assert [machine["cpu"]["coreCount"] for machine in machines] == [2, 2, 2, 2, 8, 8]
    assert "machine.cpus.sockets" in {loss.field for loss in there.losses}


def test_a_task_without_runtime_loses_all_its_cores_with_a_line() -> None:
    """No execution entry, no coreCount: 16 processors of a cancelled SWF job are a
    ``task.request.cores`` loss (the total WfFormat holds), not a node count."""
    cancelled = Task(id=1, request=ResourceRequest(nodes=16, placement=Placement.CORES))
    measured = Task(id=2, runtime_s=5.0)
    document = Document(workload=Workload(jobs=(Job(id=1, tasks=(cancelled,)),
                                                 Job(id=2, tasks=(measured,)))))
    lost = {loss.field for loss in conversion_losses(document, wfformat.FORMAT)}
    assert "task.request.cores" in lost and "task.request.nodes" not in lost
