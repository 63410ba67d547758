"""Runs of identical machines read as machine groups by the formats that list machines one
by one: SSS Node Object XML, OpenDC SC18 setup.json and Fluxion JGF.

For each format a file of ``--nodes`` machines of one kind (100,000 by default; JGF with
two four-core sockets and a memory vertex below each node) is generated with dcx's own
writer, then ``dcx validate FILE`` and ``dcx convert FILE out.json --to environment`` (with
``--fill clock-rate=2.4GHz`` where the format gives no clock rate) each run in a child
process of their own (wall, CPU, peak RSS): as read (runs are groups) and, as the baseline
measured in the same run, with the reader's run detection switched off, so that every
machine is read on its own (what the readers did before). JGF is also read by its checked
path alone ("vertex by vertex": every vertex decoded, runs grouped after), the baseline of
its fast path (``formats/jgf/text_runs.py``, which finds the runs in the text). Every way
must print the same verdict and write the same bytes.

JGF is also converted to SSS with ``--losses`` (it loses the sockets, clock rates and CPU
ids, each listed with the place of its first value): places found from what the fast
path's walk knows, against the baseline of a locator over the whole text (what the fast
path did before: the text decoded and walked again on the first place asked).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable

from child import run_code

from dcx.core.groups import MachineGroup, Slots
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

# In the child: switch a reader's run detection off for the baseline (or the JGF fast path's
# places from its walk, for the whole-text locator), then run the command.
CHILD = """
import contextlib, hashlib, io, sys
fmt, path, way, step, out = sys.argv[1:]
if way == "whole-text":
    from dcx.formats.jgf import codec, text_runs
    from dcx.parsing.jsonio import JsonLocator, model_locator
    def locate_in_whole_text(self, pointer):
        if not hasattr(self, "whole"):
            locator = JsonLocator(self.data.decode("ascii"))
            self.whole = model_locator(locator, codec._Sources(locator))
        return self.whole(pointer)
    text_runs._Places.locate = locate_in_whole_text
elif fmt == "jgf" and way != "grouped":
    from dcx.formats.jgf import text_runs
    text_runs.read = lambda data, min_bytes=0: None
if way == "baseline":
    if fmt == "sss":
        from dcx.formats.sss import reader, text_runs as sss_text_runs
        reader._Run.member = lambda self, node: None
        sss_text_runs.read = lambda data, min_bytes=0: None
    elif fmt == "opendc-setup":
        from dcx.core.model import Machine
        from dcx.formats.opendc_setup import codec
        codec._slots = lambda machines, kinds: tuple(
            Machine(cpus=tuple(codec.CPU_TYPES[cpu] for cpu in machine["cpus"]))
            for machine in machines)
    else:
        from dcx.formats.jgf import codec
        codec._Run.admits = lambda self, node, graph: False
from dcx.cli.main import main
argv = ["validate", path] if step == "validate" else [
    "convert", path, out + ".json", "--to", "environment" if step == "convert" else "sss"]
if step == "losses":
    argv.append("--losses")
if step != "validate" and fmt != "opendc-setup":
    argv += ["--fill", "clock-rate=2.4GHz"]
said = io.StringIO()
with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
    code = main(argv)
assert code == 0, said.getvalue()
digest = hashlib.sha256(said.getvalue().replace(out, "OUT").encode())
if step != "validate":
    with open(out + ".json", "rb") as handle:
        digest.update(handle.read())
with open(out, "w") as handle:
    handle.write(digest.hexdigest())
"""


def _document(template: Machine, racks: int, per_rack: int, named: bool) -> Document:
    """``racks`` racks of ``per_rack`` copies of ``template`` (ids and names numbered when
    ``named``), built as groups so that generating costs little."""
    built = []
    for index in range(racks):
        first = index * per_rack
        group = MachineGroup(template, per_rack,
                             ids=range(first, first + per_rack) if named else None,
                             names=tuple(f"node{n}" for n in range(first, first + per_rack))
                             if named else None)
        built.append(Rack(id=index, name=f"rack{index}", slots=Slots((group,))))
    return Document(environment=Environment(name="big", datacenters=(
        Datacenter(id=0, name="big0", rooms=(Room(racks=tuple(built)),)),)))


def sss_file(nodes: int) -> bytes:
    from dcx.formats import sss

    template = Machine(cpus=(ProcessingUnit(cores=64),), os="linux", arch="x86_64",
                       memory=(StorageUnit(capacity_mb=262144.0),))
    return sss.write(_document(template, 1, nodes, named=True)).data


def setup_file(nodes: int) -> bytes:
    from dcx.formats import opendc_setup

    template = Machine(cpus=(opendc_setup.CPU_TYPES[1],) * 2)
    return opendc_setup.write(_document(template, max(nodes // 100, 1), min(nodes, 100),
                                        named=False)).data


def jgf_file(nodes: int) -> bytes:
    from dcx.formats import jgf

    template = Machine(cpus=(ProcessingUnit(cores=4, id=0), ProcessingUnit(cores=4, id=1)),
                       memory=(StorageUnit(capacity_mb=65536.0),))
    return jgf.write(_document(template, max(nodes // 100, 1), min(nodes, 100),
                               named=True)).data


FILES: dict[str, tuple[str, Callable[[int], bytes]]] = {
    "sss": ("nodes.xml", sss_file), "opendc-setup": ("setup.json", setup_file),
    "jgf": ("graph.json", jgf_file)}


# Generated in a child too: a child's peak RSS counts the parent's at the fork (Linux keeps
# the larger of the two across exec), so the parent must stay small.
GENERATE = """
import sys
sys.path.insert(0, sys.argv[1])
from bench_read_runs import FILES
with open(sys.argv[4], "wb") as handle:
    handle.write(FILES[sys.argv[2]][1](int(sys.argv[3])))
"""


WAYS = (("baseline", "baseline: machine by machine"),
        ("checked", "vertex by vertex, runs as groups"),
        ("grouped", "as read: runs as groups"))
LOSSES_WAYS = (("whole-text", "baseline: whole-text locator"),
               ("grouped", "as read: places from the walk"))
LABELS = {"validate": "dcx validate", "convert": "-> environment JSON",
          "losses": "-> sss --losses"}


def measure(name: str, nodes: int, folder: str) -> None:
    path = os.path.join(folder, FILES[name][0])
    run_code(GENERATE, os.path.dirname(os.path.abspath(__file__)), name, str(nodes), path,
             what=f"generating the {name} file")
    print(f"{name}: {nodes:,} machines of one kind, {os.path.getsize(path) / 2**20:,.1f} MB "
          "(child processes)")
    for step in ("validate", "convert", "losses") if name == "jgf" else ("validate", "convert"):
        figures: dict[str, tuple[float, float, float]] = {}
        digests: dict[str, str] = {}
        ways = LOSSES_WAYS if step == "losses" else WAYS if name == "jgf" else (
            WAYS[0], WAYS[-1])
        for way, _ in ways:
            out = os.path.join(folder, f"{name}.{step}.{way}")
            figures[way] = run_code(CHILD, name, path, way, step, out,
                                    what=f"{name} {step} ({way})")
            with open(out) as handle:
                digests[way] = handle.read()
        assert len(set(digests.values())) == 1, f"{name} {step}: the ways differ"
        base_wall, base_cpu, _ = figures[ways[0][0]]
        label = LABELS[step]
        for way, what in ways:
            wall, cpu, rss = figures[way]
            print(f"  {label:<20} {what:<33} wall {wall:7.2f} s  CPU {cpu:7.2f} s  "
                  f"peak RSS {rss:6.0f} MB  ({base_wall / wall:5.1f}x / "
                  f"{base_cpu / cpu:5.1f}x faster than baseline)")
        if "checked" in figures:
            print(f"  {label:<20} text runs against vertex by vertex: "
                  f"{figures['checked'][0] / figures['grouped'][0]:.1f}x wall, "
                  f"{figures['checked'][1] / figures['grouped'][1]:.1f}x CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--formats", nargs="*", default=list(FILES), choices=list(FILES))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name in options.formats:
            measure(name, options.nodes, folder)


if __name__ == "__main__":
    main()
