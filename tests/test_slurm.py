"""Slurm node configuration (slurm.conf): grammar, hostlists, checks, model mapping, round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcx.converters.convert import convert_document
from dcx.converters.losses import conversion_losses
from dcx.converters.registry import FORMATS, detect
from dcx.core.declaration import FormatDeclaration
from dcx.core.groups import MachineGroup, compact, slot_parts, slots_of
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Machine,
    MachineState,
    NamedResource,
    Partition,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
)
from dcx.core.restrict import restrict
from dcx.formats import slurm
from dcx.formats.slurm import codec as slurm_codec
from tests.strategies import Domain, documents

REPO = Path(__file__).resolve().parent.parent
_ONE = (ProcessingUnit(cores=1),)
_DEFAULT_PARTITION_LINE = "PartitionName=all Nodes=ALL Default=YES"
"""One CPU of one core: Slurm's default, and what a node needs to be written."""
EXAMPLE = REPO / "examples" / "slurm" / "cluster.conf"


def _read(text: str) -> slurm.ReadResult:
    return slurm.read(text.encode())


def _codes(text: str) -> list[tuple[str, int | None, int | None]]:
    """The diagnostics of reading ``text`` but Slurm's default CPU count (tests of other
    checks leave CPUs out; ``test_a_node_without_cpus_has_slurm_s_default_of_one`` tests
    it)."""
    return [(d.code, d.line, d.column) for d in _read(text).diagnostics
            if d.code != "slurm.default-cpus"]


def _machines(text: str) -> list[Machine]:
    result = _read(text)
    assert result.ok, [d.render() for d in result.diagnostics]
    assert result.document is not None and result.document.environment is not None
    return list(result.document.environment.machines())


# ------------------------------------------------------------------------------ example


def test_the_example_reads_without_a_diagnostic_and_writes_back_the_same_model() -> None:
    result = slurm.read(EXAMPLE.read_bytes())
    assert result.ok and result.diagnostics == ()
    assert result.document is not None and result.document.environment is not None
    environment = result.document.environment
    machines = list(environment.machines())
    assert [m.name for m in machines] == [
        "cn001", "cn002", "cn003", "cn004", "cn005", "cn006", "gpu01", "gpu02", "bigmem01"]
    assert environment.name == "ridge"
    cn001, gpu01, bigmem = machines[0], machines[6], machines[8]
    assert cn001.cpus == (ProcessingUnit(cores=16),) * 2
    assert cn001.memory == (StorageUnit(capacity_mb=192000.0),)
    assert cn001.storage == (StorageUnit(capacity_mb=400000.0),)
    assert cn001.features == ("ib", "cpu2400mhz")
    assert cn001.extras == {"slurm:ThreadsPerCore": "2", "slurm:Weight": "10",
                            "slurm:NodeAddr": "10.1.1.1"}
    assert machines[4].state is MachineState.MAINTENANCE
    assert machines[4].extras["slurm:Reason"] == "DIMM errors, waiting for repair"
    assert gpu01.gpus == (ProcessingUnit(cores=1, model="a100"),) * 4
    assert (machines[7].state, machines[7].state_label) == (MachineState.FAILURE, "FAIL")
    assert machines[7].extras["slurm:Reason"] == "GPU 3 fell off the bus"  # a DownNodes line
    assert gpu01.cpus == (ProcessingUnit(cores=24),) * 2  # the DEFAULT line's Sockets
    assert bigmem.cpus == (ProcessingUnit(cores=18),) * 4 and bigmem.extras == {
        "slurm:Boards": "2"}
    partitions = environment.partitions
    assert [p.name for p in partitions] == ["batch", "gpu", "debug"]
    assert partitions[0].machines == (
        "cn001", "cn002", "cn003", "cn004", "cn005", "cn006", "bigmem01")
    assert partitions[0].extras["slurm:MaxTime"] == "2-00:00:00"  # from PartitionName=DEFAULT
    assert partitions[1].extras["slurm:MaxTime"] == "1-00:00:00"
    assert partitions[2].allow_groups is None and partitions[2].deny_accounts == ()
    written = slurm.write(result.document)
    again = slurm.read(written.data)
    assert again.diagnostics == () and again.document == result.document
    assert b"NodeName=cn[001-004] NodeAddr=10.1.1.[1-4] " in written.data
    assert b'Weight=50 State=FAIL Reason="GPU 3 fell off the bus"\n' in written.data  # folded in


def test_sniffing_claims_slurm_conf_and_no_other_text_format_claims_it() -> None:
    data = EXAMPLE.read_bytes()
    assert slurm.sniff(data)
    claimed = [spec.name for spec in FORMATS if "text" in spec.content and spec.sniff(data)]
    assert claimed == ["slurm"]
    assert detect(data, str(EXAMPLE)) is slurm.FORMAT
    for other in ("swf/small-cluster.swf", "gwf/grid-archive.gwf", "gwf/montage-workflow.gwf",
                  "haizea/legacy-text.lwf"):
        assert not slurm.sniff((REPO / "examples" / other).read_bytes()), other
    assert not slurm.sniff(b"# just a comment\n")
    assert not slurm.sniff(b"server {\n  listen 80;\n}\n")
    assert not slurm.sniff(b"Key=value\nOther=1\n")  # key=value, but nothing Slurm's


# ------------------------------------------------------------------------------ grammar


def test_keys_are_case_insensitive_and_comments_continuations_and_escapes_follow_slurm() -> None:
    text = ("nodename=n[1-2] cpus=4 \\\n"
            "   realmemory=1024   # a comment\n"
            "NodeName=x1 Features=a,c Reason = \"two \\#words\"\n")
    first, _, third = _machines(text)
    assert first.cpus == (ProcessingUnit(cores=1),) * 4  # CPUs alone: one core per socket
    assert first.memory == (StorageUnit(capacity_mb=1024.0),)
    assert third.features == ("a", "c")
    assert third.extras == {"slurm:Reason": "two #words"}


def test_defaults_accumulate_and_apply_to_later_lines_only() -> None:
    text = ("NodeName=a1 CPUs=2\n"
            "NodeName=DEFAULT RealMemory=100\n"
            "NodeName=DEFAULT Features=x\n"
            "NodeName=b1\n"
            "NodeName=c1 RealMemory=200\n")
    a1, b1, c1 = _machines(text)
    assert a1.memory == () and a1.features == ()
    assert b1.memory == (StorageUnit(capacity_mb=100.0),) and b1.features == ("x",)
    assert c1.memory == (StorageUnit(capacity_mb=200.0),) and c1.features == ("x",)


def test_a_line_that_is_not_key_value_pairs_is_an_error_at_its_column() -> None:
    assert _codes("NodeName=a1 CPUs\n") == [("slurm.syntax", 1, 13)]


def test_unknown_and_repeated_keys_are_conformance_warnings_at_their_column() -> None:
    codes = _codes("NodeName=a1 Colour=red CPUs=2 CPUs=4\n")
    assert codes == [("slurm.unknown-key", 1, 13), ("slurm.repeated-key", 1, 36)]
    declared = {code.code: code for code in slurm.CODES}
    assert declared["slurm.unknown-key"].conformance
    assert _machines("NodeName=a1 CPUs=2 CPUs=4\n")[0].cpus == (ProcessingUnit(cores=1),) * 4


# ------------------------------------------------------------------------------ hostlists


def test_hostlists_keep_padding_and_expand_several_brackets_as_a_product() -> None:
    assert slurm.expand_hostlist("n[001-003],x[8-10]") == [
        "n001", "n002", "n003", "x8", "x9", "x10"]
    assert slurm.expand_hostlist("rack[0-1]-node[01-02]") == [
        "rack0-node01", "rack0-node02", "rack1-node01", "rack1-node02"]
    names = [m.name for m in _machines("NodeName=rack[0-1]-n[1-2] CPUs=1\n")]
    assert names == ["rack0-n1", "rack0-n2", "rack1-n1", "rack1-n2"]


def test_bad_hostlists_are_errors_at_the_faulty_character() -> None:
    assert _codes("NodeName=n[1-2].ib\n") == [("slurm.hostlist", 1, 16)]
    assert _codes("NodeName=n[3-1]\n") == [("slurm.hostlist", 1, 12)]
    assert _codes("NodeName=n[1-2\n") == [("slurm.hostlist", 1, 11)]
    assert _codes("NodeName=ALL\n") == [("slurm.reserved-name", 1, 10)]


def test_the_writer_spells_hosts_with_a_suffix_one_by_one() -> None:
    assert slurm.encode_hostlist(["n1.ib", "n2.ib", "c01", "c02"]) == "n1.ib,n2.ib,c[01-02]"
    assert slurm.expand_hostlist(slurm.encode_hostlist(["n9", "n10", "n010"])) == [
        "n9", "n10", "n010"]


def test_addresses_map_one_to_one_and_are_refused_on_default_lines() -> None:
    machines = _machines("NodeName=n[1-2] NodeAddr=10.0.0.[7-8] NodeHostname=h1,h2\n")
    assert [m.extras for m in machines] == [
        {"slurm:NodeAddr": "10.0.0.7", "slurm:NodeHostname": "h1"},
        {"slurm:NodeAddr": "10.0.0.8", "slurm:NodeHostname": "h2"}]
    assert _codes("NodeName=n[1-3] NodeAddr=a1,a2\n") == [("slurm.address-count", 1, 26)]
    assert _codes("NodeName=n[1-2] Port=1-3\n") == [("slurm.address-count", 1, 22)]
    assert _codes("NodeName=DEFAULT NodeAddr=a1\n") == [("slurm.default-address", 1, 27)]


def test_one_address_or_port_serves_every_node_of_the_line_as_in_node_conf() -> None:
    # the shape of Slurm's own test configurations: every node on localhost, a port each
    text = ("ClusterName=t\nGresTypes=gpu\n"
            "NodeName=sn[1-32] NodeHostname=head NodeAddr=127.0.0.1 Port=6818 CPUs=4\n"
            "Nodename=DEFAULT Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 gres=gpu:8\n"
            "NodeName=tn[0-9] nodeaddr=localhost port=27001-27010\n")
    result = _read(text)
    assert result.diagnostics == (), [d.render() for d in result.diagnostics]
    machines = _machines(text)
    assert len(machines) == 42
    assert {m.extras["slurm:NodeHostname"] for m in machines[:32]} == {"head"}
    assert isinstance(_parts(result.document)[0], MachineGroup)  # names differ, nothing else
    assert [m.extras for m in machines[32:34]] == [
        {"slurm:ThreadsPerCore": "2", "slurm:NodeAddr": "localhost", "slurm:Port": "27001"},
        {"slurm:ThreadsPerCore": "2", "slurm:NodeAddr": "localhost", "slurm:Port": "27002"}]
    written = slurm.write(result.document).data.decode().splitlines()
    assert written[-3:] == [
        "NodeName=sn[1-32] NodeHostname=head NodeAddr=127.0.0.1 Port=6818 CPUs=4",
        "NodeName=tn[0-9] NodeAddr=localhost Port=[27001-27010] Sockets=2 CoresPerSocket=4 "
        "ThreadsPerCore=2 Gres=gpu:8", _DEFAULT_PARTITION_LINE]
    assert _read("\n".join(written)).document == slurm.normal_form(result.document)


def test_ports_are_slurm_s_port_numbers() -> None:
    assert _codes("NodeName=n[1-2] Port=0,7\n") == [("slurm.range", 1, 22)]
    assert _codes("NodeName=n1 Port=70000\n") == [("slurm.range", 1, 18)]
    assert [m.extras["slurm:Port"] for m in _machines("NodeName=n[1-3] Port=[6818,7000-7001]"
                                                       " CPUs=1\n")] == ["6818", "7000", "7001"]


def test_a_node_without_cpus_has_slurm_s_default_of_one() -> None:
    result = _read("NodeName=DEFAULT RealMemory=100\nNodeName=peta[10000-10399]\n"
                   "NodeName=x1 CoresPerSocket=4\n")
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [
        ("slurm.default-cpus", 2, 10)]
    assert not result.diagnostics[0].is_error
    machines = _machines("NodeName=peta[10000-10399]\nNodeName=x1 CoresPerSocket=4\n")
    assert machines[0].cpus == (ProcessingUnit(cores=1),) and machines[0].memory == ()
    assert machines[-1].cpus == (ProcessingUnit(cores=4),)
    assert slurm.write(result.document).data.decode().splitlines()[0] == \
        "NodeName=peta[10000-10399] CPUs=1 RealMemory=100"


def test_validate_strict_flags_a_node_without_cpus(tmp_path: Path) -> None:
    from dcx.cli.main import main

    path = tmp_path / "slurm.conf"
    path.write_text("ClusterName=c\nNodeName=n[1-4]\n")
    assert main(["validate", str(path)]) == 0
    assert main(["validate", "--strict", str(path)]) == 1
    path.write_text("ClusterName=c\nNodeName=n[1-4] CPUs=1\n")
    assert main(["validate", "--strict", str(path)]) == 0


def test_machines_without_a_cpu_count_are_refused_with_the_fill_hint(tmp_path: Path) -> None:
    from dcx.converters.convert import convert

    sss = (b"<Data><Node><Id>a1</Id><Configured><Processors>8</Processors></Configured></Node>"
           b"<Node><Id>a2</Id><Configured><Memory units='MB'>512</Memory></Configured></Node>"
           b"</Data>")
    partly = convert(sss, "slurm", "c.xml")
    assert partly.ok and partly.fill_hint == "slurm keeps 1 of 2 machines; --fill cores=32 " \
        "would keep 2"
    assert "machine.cpus" in {loss.field for loss in partly.losses}
    none = convert(sss.replace(b"<Processors>8</Processors>", b""), "slurm", "c.xml")
    (refusal,) = none.diagnostics
    assert refusal.code == "convert.nothing-held" and "2 of 2 machines lack it (first: a1)" \
        in refusal.message and refusal.hint == "give the values it lacks, such as --fill cores=32"
    from dcx.converters.fill import FillError, parse_fill

    for wrong in ("cores=8GHz", "cores=2.5", "cores=0"):
        with pytest.raises(FillError, match="cores"):
            parse_fill(wrong)
    filled = convert(sss, "slurm", "c.xml", fills=[parse_fill("cores=16")])
    assert filled.ok and filled.fill_hint is None
    assert filled.data.decode().splitlines() == [
        "NodeName=a1 Sockets=1 CoresPerSocket=8", "NodeName=a2 Sockets=1 CoresPerSocket=16 "
        "RealMemory=512", _DEFAULT_PARTITION_LINE]


def test_slurm_s_own_test_configurations_read_as_slurm_reads_them(corpus_dir: Path) -> None:
    counts = {"etc__slurm.conf.example.conf": 32, "man5__slurm.conf.5__EXAMPLE.conf": 26,
              "python__tests__test_133_1_testcases__testcase1__slurm.conf": 10_000,
              "python__tests__test_133_1_testcases__testcase5__slurm.conf": 401,
              "giovtorres__old__slurm.conf": 2, "cc-docker__slurm.conf": 1}
    for name, count in counts.items():
        result = slurm.read((corpus_dir / "upstream" / "slurm" / name).read_bytes())
        assert result.ok, (name, [d.render() for d in result.diagnostics])
        assert result.document is not None and result.document.environment is not None
        machines = list(result.document.environment.machines())
        assert len(machines) == count and all(m.cpus for m in machines), name


def test_duplicate_nodes_and_partitions_are_errors() -> None:
    assert _codes("NodeName=n[1-2]\nNodeName=n2\n") == [("slurm.duplicate-node", 2, 10)]
    text = "NodeName=n1\nPartitionName=p Nodes=n1\nPartitionName=p Nodes=n1\n"
    assert _codes(text) == [("slurm.duplicate-partition", 3, 15)]


# ------------------------------------------------------------------------------ values


def test_cpus_slurm_would_reset_are_warned_and_the_full_product_is_used() -> None:
    text = "NodeName=n1 CPUs=10 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2\n"
    assert _codes(text) == [("slurm.cpus-mismatch", 1, 18)]
    (machine,) = _machines(text)
    assert machine.cpus == (ProcessingUnit(cores=4),) * 2
    assert machine.extras == {"slurm:ThreadsPerCore": "2"}
    (kept,) = _machines("NodeName=n1 CPUs=8 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2\n")
    assert kept.extras == {"slurm:ThreadsPerCore": "2", "slurm:CPUs": "8"}
    assert _codes("NodeName=n1 CoresPerSocket=0\n") == [("slurm.cpu-topology", 1, 28)]


def test_bad_memory_values_are_errors_at_the_value() -> None:
    (diagnostic,) = _read("NodeName=n1 RealMemory=64G\n").diagnostics
    assert (diagnostic.code, diagnostic.line, diagnostic.column) == ("schema.pattern", 1, 24)
    assert "RealMemory is '64G'" in diagnostic.message and "megabytes" in diagnostic.message
    assert diagnostic.pointer == "/lines/1/RealMemory"
    assert _codes("NodeName=n1 TmpDisk=4294967296\n") == [("slurm.range", 1, 21)]
    assert _codes("NodeName=n1 State=idle\n")[0][0] == "schema.enum"


def test_gres_become_gpus_and_named_resources() -> None:
    text = ("GresTypes=gpu,mps,bandwidth\n"
            "NodeName=n1 Gres=gpu:v100:2,gpu:a100:1,mps:4K,bandwidth:lustre:1G\n")
    (machine,) = _machines(text)
    assert machine.gpus == (ProcessingUnit(cores=1, model="v100"),) * 2 + (
        ProcessingUnit(cores=1, model="a100"),)
    assert machine.resources == (NamedResource(name="mps", amount=4096.0),
                                 NamedResource(name="bandwidth", amount=2.0**30,
                                               type="lustre"))
    assert _codes("NodeName=n1 Gres=gpu:2\n") == [("slurm.gres-type", 1, 18)]
    assert _codes("GresTypes=gpu\nNodeName=n1 Gres=gpu:a:b:2\n") == [("slurm.gres", 2, 18)]


def test_states_map_onto_the_model_and_keep_their_word() -> None:
    text = "".join(f"NodeName=n{i} State={word}\n" for i, word in enumerate(
        ["UNKNOWN", "down", "FAIL", "DRAIN", "FAILING", "FUTURE", "CLOUD"]))
    text += "NodeName=n9\n"
    got = [(m.state, m.state_label) for m in _machines(text)]
    assert got == [(MachineState.ACTIVE, "UNKNOWN"), (MachineState.FAILURE, None),
                   (MachineState.FAILURE, "FAIL"), (MachineState.MAINTENANCE, None),
                   (MachineState.MAINTENANCE, "FAILING"), (MachineState.HALT, None),
                   (MachineState.HALT, "CLOUD"), (MachineState.ACTIVE, None)]


def test_down_nodes_set_state_and_reason_over_the_node_line_as_slurmctld_does() -> None:
    text = ("DownNodes=n1\n"  # before the nodes it names: applied after all of them
            "NodeName=n[1-5] State=FUTURE Reason=new\n"
            "DownNodes=n[2-3] state=drain Reason=\"fan gone\"\n"
            "DownNodes=n3 State=UNKNOWN Reason=checked\n"
            "DownNodes=n4 State=UNKNOWN\n"
            "DownNodes=n5 State=FAILING Reason=a\nDownNodes=n5 State=FAIL Reason=b\n")
    got = [(m.state, m.state_label, m.extras["slurm:Reason"]) for m in _machines(text)]
    assert got == [
        (MachineState.FAILURE, None, slurm.DOWN_DEFAULT_REASON),  # State defaults to DOWN
        (MachineState.MAINTENANCE, None, "fan gone"),
        (MachineState.MAINTENANCE, None, "checked"),  # UNKNOWN keeps the state, sets a reason
        (MachineState.HALT, None, slurm.DOWN_DEFAULT_REASON),
        (MachineState.FAILURE, "FAIL", "b")]  # the last line wins


def test_down_nodes_name_defined_nodes_and_slurm_s_states() -> None:
    text = "NodeName=n[1-2]\nDownNodes=n[2-4] Reason=x\n"
    assert _codes(text) == [("slurm.down-node", 2, 11)]
    assert [m.state for m in _machines(text)] == [MachineState.ACTIVE, MachineState.FAILURE]
    assert _codes("NodeName=n1\nDownNodes=n1 State=IDLE\n") == [("schema.enum", 2, 20)]
    assert _codes("NodeName=n1\nDownNodes=n1 State=CLOUD\n")[0][0] == "schema.enum"
    assert _codes("NodeName=n1\nDownNodes=n[1-\n") == [("slurm.hostlist", 2, 12)]
    assert _codes("NodeName=n1\nDownNodes=n1 Weight=3\n") == [("slurm.unknown-key", 2, 14)]


def test_down_nodes_read_back_from_the_node_lines_the_writer_writes() -> None:
    text = ("GresTypes=gpu\nNodeName=n[1-4] CPUs=4 Gres=gpu:2\n"
            "DownNodes=n[2-3] State=DRAIN Reason=\"bad fan\"\nDownNodes=n4\n")
    result = _read(text)
    assert result.document is not None
    written = slurm.write(result.document).data.decode()
    assert "DownNodes" not in written
    assert written.splitlines()[1:] == [
        "NodeName=n1 CPUs=4 Gres=gpu:2",
        'NodeName=n[2-3] CPUs=4 Gres=gpu:2 State=DRAIN Reason="bad fan"',
        'NodeName=n4 CPUs=4 Gres=gpu:2 State=DOWN Reason="Set in slurm.conf"',
        _DEFAULT_PARTITION_LINE]
    again = _read(written)
    assert again.diagnostics == () and again.document == slurm.normal_form(result.document)


def test_partitions_name_defined_nodes_node_sets_or_all() -> None:
    text = ("NodeSet=fat Feature=bigmem\nNodeName=n[1-2]\n"
            "PartitionName=a Nodes=ALL\nPartitionName=b Nodes=fat,n1\n"
            "PartitionName=c Nodes=n[2-3]\n")
    assert _codes(text) == [("slurm.partition-node", 5, 23)]


def test_other_lines_are_kept_and_include_is_not_followed() -> None:
    result = _read("ClusterName=c1\nInclude /etc/slurm/nodes.conf\nSlurmUser=slurm\n")
    assert [d.code for d in result.diagnostics] == ["slurm.syntax"]
    result = _read("ClusterName=c1\nInclude=nodes.conf\nSlurmUser=slurm\nNodeName=n1 CPUs=1\n")
    assert [d.code for d in result.diagnostics] == ["slurm.include"]
    assert result.document is not None and result.document.environment is not None
    assert result.document.environment.extras["slurm:config"] == [
        [["Include", "nodes.conf"]], [["SlurmUser", "slurm"]]]
    assert b"Include" not in slurm.write(result.document).data  # not written back


def test_invalid_utf8_is_an_error_not_a_traceback() -> None:
    assert [d.code for d in slurm.read(b"NodeName=n\xff1\n").diagnostics] == ["slurm.encoding"]


# ------------------------------------------------------------------------------ groups


def _parts(document: Document | None) -> tuple[Machine | MachineGroup | None, ...]:
    assert document is not None and document.environment is not None
    return slot_parts(next(document.environment.racks()).slots)


def test_a_node_line_is_one_group_named_by_its_hostlist() -> None:
    result = _read("NodeName=n[0-99999] CPUs=64 RealMemory=256000\nNodeName=x1 CPUs=2\n"
                   "PartitionName=half Nodes=n[0-49999]\n")
    assert result.ok
    group, single = _parts(result.document)
    assert isinstance(group, MachineGroup) and isinstance(single, Machine)
    assert group.count == 100_000 and group.names is not None
    assert (group.names[0], group.names[-1]) == ("n0", "n99999")
    assert group.template.name is None and len(group.template.cpus) == 64
    assert group.member(7) == Machine(name="n7", cpus=(ProcessingUnit(cores=1),) * 64,
                                      memory=(StorageUnit(capacity_mb=256000.0),))
    assert result.document is not None and result.document.environment is not None
    assert result.document.environment.partitions[0].machines == tuple(
        f"n{index}" for index in range(50_000))
    written = slurm.write(result.document).data.decode()
    assert written.splitlines() == [
        "NodeName=n[0-99999] CPUs=64 RealMemory=256000", "NodeName=x1 CPUs=2",
        "PartitionName=half Nodes=n[0-49999]"]


def test_lines_with_addresses_or_down_nodes_are_single_machines() -> None:
    result = _read("NodeName=a[1-2] NodeAddr=10.0.0.[1-2]\nNodeName=b[1-3]\n"
                   "NodeName=c[1-2]\nDownNodes=b2\n")
    assert result.ok
    kinds = [type(part).__name__ for part in _parts(result.document)]
    assert kinds == ["Machine"] * 5 + ["MachineGroup"]
    assert result.locate("/environment/datacenters/0/rooms/0/racks/0/slots/5") == (3, 1)
    assert result.locate("/environment/datacenters/0/rooms/0/racks/0/slots/6") == (3, 1)
    assert result.locate("/environment/datacenters/0/rooms/0/racks/0/slots/1") == (1, 1)
    assert result.locate("/environment/datacenters/0/rooms/0/racks/0/slots/7") == (None, None)


def test_a_node_set_by_feature_names_a_group_s_members() -> None:
    result = _read("NodeSet=fat Feature=bigmem\nNodeName=n[1-3] Features=bigmem\n"
                   "NodeName=m1 Features=bigmem\nPartitionName=p Nodes=fat\n")
    assert result.ok and result.document is not None and result.document.environment
    assert result.document.environment.partitions[0].machines == ("n1", "n2", "n3", "m1")


def test_a_group_with_names_slurm_cannot_take_is_normalised_member_by_member() -> None:
    template = Machine(cpus=(ProcessingUnit(cores=2),) * 2)
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=slots_of([Machine(name="a2", cpus=_ONE), MachineGroup(template, 3, names=(
            "a1", "a2", "a3")), MachineGroup(template, 2, names=("ok1", "ok2"))])),)),)),)))
    normal = slurm.normal_form(document)
    parts = _parts(normal)
    assert [type(part).__name__ for part in parts] == ["Machine"] * 4 + ["MachineGroup"]
    assert normal.environment is not None
    assert [machine.name for machine in normal.environment.machines()] == [
        "a2", "a1", "node3", "a3", "ok1", "ok2"]
    assert slurm.normal_form_losses(document) == {"machine.name"}


# ------------------------------------------------------------------------------ writing


def _environment(*machines: Machine, partitions: tuple[Partition, ...] = (),
                 **extras: object) -> Document:
    rack = Rack(slots=machines)
    return Document(environment=Environment(
        datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),), extras=dict(extras),
        partitions=partitions))


def test_identical_consecutive_nodes_share_one_line_and_order_is_kept() -> None:
    def node(name: str, cores: int) -> Machine:
        return Machine(name=name, cpus=(ProcessingUnit(cores=cores),) * 2)

    document = _environment(node("a1", 4), node("a2", 4), node("b1", 8), node("a3", 4))
    text = slurm.write(document).data.decode()
    assert text.splitlines() == [
        "NodeName=a[1-2] Sockets=2 CoresPerSocket=4",
        "NodeName=b1 Sockets=2 CoresPerSocket=8",
        "NodeName=a3 Sockets=2 CoresPerSocket=4", _DEFAULT_PARTITION_LINE]
    assert slurm.read(text.encode()).document == slurm.normal_form(document)


def test_the_normal_form_names_machines_and_reports_what_it_changes() -> None:
    document = _environment(
        Machine(id=7, cpus=(ProcessingUnit(cores=2), ProcessingUnit(cores=6))),
        Machine(name="has space", memory=(StorageUnit(capacity_mb=1.5),), cpus=_ONE,
                gpus=(ProcessingUnit(cores=1, manufacturer="NVIDIA", model="V100"),)),
        Machine(name="7", features=("ok", "not ok"), cpus=_ONE),
    )
    normal = slurm.normal_form(document)
    assert normal.environment is not None
    names = [m.name for m in normal.environment.machines()]
    assert names == ["7", "node2", "node3"]
    assert slurm.normal_form_losses(document) == {
        "machine.name", "machine.cpus.sockets", "machine.memory", "gpu.vendor",
        "machine.features"}
    losses = {loss.field for loss in conversion_losses(document, slurm.FORMAT)}
    assert {"machine.name", "machine.memory", "gpu.vendor"} <= losses
    written = slurm.write(document)
    assert slurm.read(written.data).ok


def test_partitions_naming_nodes_that_are_gone_are_left_out() -> None:
    document = _environment(
        Machine(name="n1", cpus=_ONE),
        partitions=(Partition("p", ("n1", "n2")),
                    Partition("q", ("n1",), extras={"slurm:State": "UP"})))
    normal = slurm.normal_form(document)
    assert normal.environment is not None
    assert normal.environment.partitions == (
        Partition("q", ("n1",), extras={"slurm:State": "UP"}),)
    assert "environment.partitions" in slurm.normal_form_losses(document)


def test_partition_lists_read_as_who_may_use_it_and_write_back() -> None:
    text = ("NodeSet=fat Feature=bigmem\nNodeName=n[1-2] CPUs=1 Features=bigmem\n"
            "NodeName=n3 CPUs=1\n"
            "PartitionName=DEFAULT AllowGroups=staff\n"
            "PartitionName=a Nodes=ALL AllowGroups=all DenyAccounts=guest,lab2 MaxTime=60\n"
            "PartitionName=b Nodes=fat,n3,n1 AllowAccounts=phys AllowQos=high DenyQos=low\n")
    result = _read(text)
    assert result.diagnostics == () and result.document is not None
    environment = result.document.environment
    assert environment is not None
    assert environment.partitions == (
        Partition("a", None, allow_groups=None, deny_accounts=("guest", "lab2"),
                  extras={"slurm:MaxTime": "60"}),
        Partition("b", ("n1", "n2", "n3"), allow_groups=("staff",), allow_accounts=("phys",),
                  allow_qos=("high",), deny_qos=("low",)))
    written = slurm.write(result.document).data.decode().splitlines()
    assert written[-2:] == [
        "PartitionName=a Nodes=ALL MaxTime=60 DenyAccounts=guest,lab2",
        "PartitionName=b Nodes=n[1-3] AllowAccounts=phys AllowGroups=staff AllowQos=high "
        "DenyQos=low"]
    assert _read("\n".join(written)).document == result.document


@pytest.mark.parametrize("partition", [
    Partition("p", ("n1", "n1")), Partition("p", ("n1",), allow_groups=("a,b",)),
    Partition("p", ("n1",), allow_groups=()), Partition("p", ("n1",), allow_groups=("ALL",)),
    Partition("p", ("n1",), extras={"note": 1}), Partition("DEFAULT", ("n1",)),
    Partition("p q", ("n1",)), Partition("p", ("n1",), extras={"slurm:Nodes": "n1"})])
def test_partitions_that_would_not_read_back_as_themselves_are_normalised_or_dropped(
        partition: Partition) -> None:
    document = _environment(Machine(name="n1", cpus=_ONE), partitions=(partition,))
    assert "environment.partitions" in slurm.normal_form_losses(document)
    normal = slurm.normal_form(document)
    result = slurm.read(slurm.write(document).data)
    assert result.diagnostics == () and result.document == normal


# ------------------------------------------------------------------------------ round trips

_NAMES = st.builds(lambda prefix, number, width: prefix + str(number).zfill(width),
                   st.sampled_from(["cn", "gpu", "node-", "r1n", "x.y"]),
                   st.integers(0, 300), st.integers(1, 3))
_WORDS = st.text(alphabet="abcdefxyz0123_-.", min_size=1, max_size=6)


@st.composite
def slurm_environments(draw: st.DrawFn) -> Environment:
    """Environments slurm.conf holds exactly: unique node names, equal sockets, whole
    megabytes, GPUs grouped by type, Slurm words everywhere."""
    names = draw(st.lists(_NAMES, unique=True, max_size=10))
    shapes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    machines: list[Machine] = []
    for name in names:
        shape = draw(st.sampled_from(shapes))
        sockets = draw(st.integers(1, 4)) if shape else 1
        cores = draw(st.integers(1, 64))
        types: list[str | None] = draw(st.sampled_from([[None], ["a100"], ["a100", "v100"]]))
        gpus = tuple(ProcessingUnit(cores=1, model=kind) for kind in types
                     for _ in range(draw(st.integers(0, 2))))
        state = draw(st.sampled_from(MachineState))
        labels = [word for word, of in slurm.STATE_OF.items()
                  if of is state and word != slurm.WORD_FOR[state]]
        extras: dict[str, object] = {}
        if sockets and draw(st.booleans()):
            extras["slurm:ThreadsPerCore"] = "2"
        if draw(st.booleans()):
            extras["slurm:Weight"] = str(draw(st.integers(0, 100)))
        if draw(st.booleans()):  # its own address, or one it shares with other nodes
            extras["slurm:NodeAddr"] = draw(st.sampled_from([
                f"10.0.{draw(st.integers(0, 9))}.{len(machines)}", "localhost"]))
        if draw(st.booleans()):
            extras["slurm:Port"] = str(draw(st.sampled_from([6818, 7000 + len(machines)])))
        if draw(st.booleans()):
            extras["slurm:Reason"] = draw(st.sampled_from(["bad fan", "x#y", "a\\b"]))
        machines.append(Machine(
            name=name, state=state, state_label=draw(st.sampled_from([None, *labels])),
            cpus=(ProcessingUnit(cores=cores),) * sockets, gpus=gpus,
            memory=(StorageUnit(capacity_mb=float(draw(st.integers(0, 10**7)))),)
            if draw(st.booleans()) else (),
            storage=(StorageUnit(capacity_mb=float(draw(st.integers(0, 10**6)))),)
            if draw(st.booleans()) else (),
            features=tuple(draw(st.lists(_WORDS, max_size=3))),
            resources=tuple(NamedResource(name=gres, amount=float(draw(st.integers(0, 10**6))))
                            for gres in draw(st.lists(st.sampled_from(["mps", "nic"]),
                                                      unique=True))),
            extras=extras))
    own: dict[str, object] = {}
    partitions: list[Partition] = []
    if len(machines) > 0:  # slurmctld needs a partition: the writer adds one if there is none
        if draw(st.booleans()):
            partitions.append(slurm.DEFAULT_PARTITION)
        chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=4))
        lists = {name: draw(st.one_of(st.none(), st.lists(_WORDS, min_size=1, max_size=2)
                                      .map(tuple))) for name in ("allow_groups",
                                                                 "allow_accounts", "allow_qos")}
        partitions.append(Partition(
            "first", tuple(chosen), **lists,
            deny_accounts=tuple(draw(st.lists(_WORDS, max_size=2))),
            deny_qos=tuple(draw(st.lists(_WORDS, max_size=2))),
            extras={"slurm:MaxTime": "1-00:00:00"} if draw(st.booleans()) else {}))
    if draw(st.booleans()):
        own["slurm:config"] = [[["SlurmctldHost", "head"]], [["SchedulerType",
                                                                "sched/backfill"]]]
    rack = Rack(slots=tuple(machines))
    return Environment(datacenters=(Datacenter(rooms=(Room(racks=(rack,)),)),),
                       name=draw(st.sampled_from([None, "ridge", "c-1"])), extras=own,
                       partitions=tuple(partitions))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slurm_environments())
def test_model_to_slurm_to_model_is_identity(environment: Environment) -> None:
    document = Document(environment=environment)
    assert conversion_losses(document, slurm.FORMAT) == ()
    written = slurm.write(document)
    result = slurm.read(written.data)
    assert result.diagnostics == (), [d.render() for d in result.diagnostics]
    assert result.document == document
    assert slurm.write(result.document).data == written.data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slurm_environments())
def test_groups_write_and_lose_as_their_machines_do(environment: Environment) -> None:
    document = Document(environment=environment)
    grouped = Document(environment=compact(environment))
    assert slurm.write(grouped).data == slurm.write(document).data
    assert slurm.normal_form(grouped) == slurm.normal_form(document)
    assert slurm.normal_form_losses(grouped) == slurm.normal_form_losses(document)
    assert conversion_losses(grouped, slurm.FORMAT) == conversion_losses(document, slurm.FORMAT)
    result = slurm.read(slurm.write(grouped).data)
    assert result.document == document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(Domain(holds=slurm.HOLDS, own_prefix="slurm")))
def test_any_document_reads_back_as_its_normal_form_without_a_warning(
        document: Document) -> None:
    written = slurm.write(document)
    result = slurm.read(written.data)
    assert result.diagnostics == (), [d.render() for d in result.diagnostics]
    expected = restrict(slurm.normal_form(document), slurm.HOLDS, "slurm")
    if expected.environment is None:
        return
    assert result.document is not None
    assert result.document.environment == expected.environment


@pytest.mark.parametrize("example", ["environment/small-cluster.json", "flux/2node.R.json",
                                     "sss/cluster.xml"])
def test_seed_examples_convert_to_slurm_and_read_back(example: str) -> None:
    data = (REPO / "examples" / example).read_bytes()
    source = detect(data, example)
    assert source is not None
    document = source.read(data).document
    assert document is not None
    written = slurm.write(document)
    result = slurm.read(written.data)
    assert result.ok and result.diagnostics == ()


def test_hook_mode_skips_other_tools_conf_files_and_fails_a_broken_slurm_conf(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dcx.cli.main import main

    other = tmp_path / "nginx.conf"
    other.write_text("server {\n  listen 80;\n}\n")
    broken = tmp_path / "slurm.conf"
    broken.write_text("ClusterName=c\nNodeName=n[1-2 CPUs=2\n")
    assert main(["validate", "--hook", str(other)]) == 0
    assert main(["validate", "--hook", str(broken)]) == 1
    assert "slurm.conf:2:11: error" in capsys.readouterr().err
    empty = tmp_path / "placeholder.conf"
    empty.write_text("")
    assert main(["validate", "--hook", str(empty)]) == 0


def test_a_gres_conf_file_is_refused_once_with_what_to_convert_instead() -> None:
    assert _codes("NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n") == [
        ("slurm.gres-conf", 1, 21)]
    text = ("# gres.conf\nAutoDetect=nvml\nName=gpu Type=a100 File=/dev/nvidia[0-3]\n"
            "NodeName=gpu01 Name=mps Count=400\n")
    (diagnostic,) = _read(text).diagnostics
    assert (diagnostic.code, diagnostic.line, diagnostic.column) == ("slurm.gres-conf", 2, 1)
    assert "and 2 more gres.conf lines" in diagnostic.message
    assert "convert slurm.conf" in diagnostic.message and "Gres=gpu:a100:4" in \
        diagnostic.message
    assert not slurm.sniff(text.encode())  # the hook leaves a cluster's gres.conf alone
    assert not slurm.sniff(b"NodeName=g[1-2] Name=gpu File=/dev/nvidia[0-1]\n")
    assert slurm.sniff(b"NodeName=g[1-2] Gres=gpu:2\n")
    # config lines a model carries that would read back as gres.conf or DownNodes are dropped
    document = Document(environment=Environment(extras={"slurm:config": [
        [["Name", "gpu"]], [["DownNodes", "n1"]], [["SlurmUser", "slurm"]]]}))
    assert slurm.normal_form(document).environment.extras == {
        "slurm:config": [[["SlurmUser", "slurm"]]]}


def test_a_long_comment_header_does_not_hide_the_format() -> None:
    header = b"".join(b"# %05d explains a setting at length, as annotated files do\n" % n
                      for n in range(200))
    assert len(header) > 10_000
    assert slurm.sniff(header + b"SlurmctldHost=head\nNodeName=n1\n")
    assert not slurm.sniff(header + b"listen 80;\n")


def test_more_bad_lines_than_the_schema_locates_are_still_not_read() -> None:
    text = "".join(f"NodeName=n{i} RealMemory=64G\n" for i in range(80))
    result = _read(text)
    assert result.document is None
    assert "schema.more-errors" in {d.code for d in result.diagnostics}


def test_hostlists_built_to_explode_are_refused_before_they_are_expanded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    (diagnostic,) = _read("NodeName=r[0-99999]-n[0-99999]\n").diagnostics
    assert diagnostic.code == "slurm.hostlist" and "more than 1,048,576 hosts" in \
        diagnostic.message
    monkeypatch.setattr(slurm_codec, "MAX_NODES", 10)  # the file-wide budget, small for the test
    text = "".join(f"NodeName=l{line}n[0-5]\n" for line in range(2))
    assert _codes(text) == [("slurm.too-large", 2, 10)]


def test_addresses_may_be_ipv6() -> None:
    machines = _machines("NodeName=n[1-2] NodeAddr=fe80::1,fe80::2%eth0\n")
    assert [m.extras["slurm:NodeAddr"] for m in machines] == ["fe80::1", "fe80::2%eth0"]
    document = Document(environment=Environment(datacenters=(Datacenter(rooms=(Room(racks=(
        Rack(slots=tuple(machines)),)),)),), partitions=(slurm.DEFAULT_PARTITION,)))
    assert slurm.read(slurm.write(document).data).document == document


def _expanded(document: Document) -> Document:
    assert document.environment is not None
    rack = next(document.environment.racks())
    environment = document.environment
    single = Rack(slots=tuple(rack.slots))
    return Document(environment=Environment(
        datacenters=(Datacenter(rooms=(Room(racks=(single,)),)),), name=environment.name,
        extras=environment.extras, partitions=environment.partitions))


@pytest.mark.parametrize("target", [declaration for declaration in FORMATS
                                    if declaration.write is not None],
                         ids=lambda declaration: declaration.name)
def test_a_group_converts_and_loses_in_every_target_as_its_machines_do(
        target: FormatDeclaration) -> None:
    result = _read("ClusterName=c\nNodeName=n[1-40] CPUs=8 RealMemory=1000 Gres=gpu:a100:2 "
                   "Features=ib Weight=3\nNodeName=x1 CPUs=2\nPartitionName=p Nodes=n[1-5]\n")
    assert result.ok and result.document is not None
    assert isinstance(_parts(result.document)[0], MachineGroup)
    expanded = _expanded(result.document)
    assert expanded == result.document
    assert conversion_losses(result.document, target) == conversion_losses(expanded, target)
    grouped_output = convert_document(result.document, slurm.FORMAT, target, read=result)
    expanded_output = convert_document(expanded, slurm.FORMAT, target, read=result)
    assert grouped_output.data == expanded_output.data
    assert grouped_output.diagnostics == expanded_output.diagnostics


def test_nodes_in_no_partition_are_written_into_one_because_slurmctld_needs_one() -> None:
    # found by tests/peers/peer_slurm.py: slurmctld 22.05 stops with "No PartitionName
    # information available!" on a file with nodes and no partition
    document = _environment(Machine(name="n1", cpus=_ONE), Machine(name="n2", cpus=_ONE))
    written = slurm.write(document).data.decode().splitlines()
    assert written == ["NodeName=n[1-2] CPUs=1", _DEFAULT_PARTITION_LINE]
    assert conversion_losses(document, slurm.FORMAT) == ()
    kept = _environment(Machine(name="n1", cpus=_ONE),
                        partitions=(Partition("p", ("n1",)),))
    assert slurm.write(kept).data.decode().splitlines()[-1] == "PartitionName=p Nodes=n1"
    gone = _environment(Machine(name="n1", cpus=_ONE), partitions=(Partition("p", ("x",)),))
    assert slurm.write(gone).data.decode().splitlines()[-1] == _DEFAULT_PARTITION_LINE
    assert slurm.write(_environment()).data == b""
