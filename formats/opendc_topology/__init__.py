"""OpenDC topology JSON: clusters of hosts as current OpenDC reads them (format
``opendc-topology``; not the SC18 ``setup.json``, which is ``opendc-setup``).

Shape: ``{"clusters": [{"name", "hosts": [{"name", "count", "cpu": {"coreCount",
"coreSpeed", "count", "vendor", "modelName", "arch"}, "memory": {"memorySize", …},
"gpu": {…}, "cpuPowerModel": {…}}], "powerSource": {…}, "battery": {…}}]}``. The
reference is the code (opendc-compute-topology ``specs/TopologySpecs.kt`` and
``TopologyFactories.kt``); OpenDC's documentation pages and its bundled
``TopologySchema.json`` are stale.

What dcx reads
--------------

* **Topology reader files** (opendc-compute-topology ``TopologySpecs.kt``, OpenDC 2.x and
  the ``opendc-experiments-base`` test topologies): clusters of hosts with ``cpu``,
  ``memory.memorySize``, ``gpu``, power models, ``powerSource`` and ``battery``.
* **SDK files** (opendc-sdk, the demo and ``opendc-cli`` legacy topologies): the same with
  ``memory.size``, ``cpu.architecture`` and cluster ``count`` (see Dialects).
* **Composed files** (opendc-cli ``ExperimentImports.kt``): any object (a cluster, a host,
  a CPU) may take its other keys from a file named by ``importFrom``, relative to the
  importing file's folder; its own keys override the imported ones, each key whole (no
  deep merge), and imported files may import in turn, relative to their own folder. dcx
  reads them from a file path only (``dcx validate topology.json``), confined to the
  topology's folder; a missing file, a path out of the folder, an absolute path or a URL,
  a cycle or an imported file that is not a JSON object is an ``opendc-topology.import``
  error at the ``importFrom`` that leads to it. From standard input, an ``importFrom`` is
  that error too (no folder holds its file).

Mapping
-------

* **Clusters** are racks, in one room of one datacenter: ``name`` → ``Rack.name`` (absent:
  none; OpenDC calls it ``Cluster``). ``powerSource``, ``battery`` and ``count`` are kept
  under ``opendc-topology:`` keys of the rack.
* **Host entries** are ``count`` machines each: an entry with a ``count`` above 1 is one
  ``MachineGroup`` (``dcx.core.groups``), its shape held once and its names made when asked
  for, so a ``"count": 1000000`` costs what one host costs. A machine's name is the one
  OpenDC gives it: the entry's ``name`` (default ``Host``) the first time that name is used
  in the file, then ``name-0``, ``name-1``, … (OpenDC counts uses per name across all
  clusters).
* **CPU**: ``count`` CPUs of ``coreCount`` cores at ``coreSpeed`` (``vendor`` →
  manufacturer, ``modelName`` → model); ``arch`` → ``Machine.arch``.
* **Memory**: ``memorySize`` → one memory module (MiB, which is the model's MB); a size of 0
  is no memory. ``memorySpeed`` and the memory's vendor fields are kept under
  ``opendc-topology:memory``.
* **GPU**: ``count`` GPUs of ``coreCount`` cores at ``coreSpeed`` (``vendor``,
  ``modelName``); the rest (``memorySize``, ``memoryBandwidth``, ``architecture``, the
  virtualization model) under ``opendc-topology:gpu``.
* **Power models and distribution policies** (``cpuPowerModel``, ``gpuPowerModel``,
  ``cpuDistributionPolicy``, ``gpuDistributionPolicy``) are kept as written under
  ``opendc-topology:<key>`` of the machine; the model's CPU power draw is not a power model,
  so it is not mapped onto one.

Dialects
--------

OpenDC has two topology readers with different spellings: opendc-compute-topology's
(``memory.memorySize``, ``cpu.arch``, power models with ``modelType``,
``cpuDistributionPolicy``) and the SDK's (``memory.size``, ``cpu.architecture``, power models
with ``type``, ``cpuDistribution``; a cluster's ``count`` repeats it). dcx reads both: a
file whose hosts spell memory ``size`` is an SDK file (its clusters are repeated ``count``
times, and ``Environment.extras["opendc-topology:dialect"]`` is ``"sdk"``, so that the
writer spells it the same way); any other file is the topology reader's, which other
formats are written as.

Units: a quantity is a number with a unit (``"2.4 GHz"``, ``"192 GiB"``, ``"128 GB"``:
``K M G T`` are powers of 1,000, ``Ki Mi Gi Ti`` of 1,024; ``b``/``bit`` bits, ``B``/
``byte`` bytes; frequency units in any case) or a bare number, which OpenDC takes as MHz or
MiB with a warning, and so does dcx. The writer always writes units: clocks in the largest
of GHz, MHz, kHz, Hz that gives the exact value back, memory in the largest of TiB, GiB
that gives a whole number, else in MiB.

Writing
-------

``normal_form`` is what a topology file can hold; the writer serialises it, grouping
consecutive machines of a cluster that differ only in name into one entry with ``count``
when their names are those OpenDC gives such an entry (``cn``, ``cn-0``, ``cn-1``). A group
read from an entry stays a group through both, and is written as that entry without making
its machines; a group whose names collide with others, or that came from another format
with names of its own, is normalised and written machine by machine, with the same result. A host
needs a CPU with a clock: a machine without a CPU, or with a CPU without a clock rate or
cores, is left out (``machine.cpus``; SSS, Haizea, Flux R and JGF give no clock rates, so
converting them here is refused). CPUs of different kinds merge into one kind
(``machine.cpus.sockets``) and GPUs take the first GPU's kind (a GPU without a clock drops
the machine's GPUs, ``machine.gpus``); family and generation have no key
(``cpu.vendor``/``gpu.vendor``). Machines are named as OpenDC names them: a machine without
a name gains one (``dcx.core.ids``), a name used twice is made unique (``machine.name``).

Divergences
-----------

1. OpenDC's topology reader declares a cluster ``count`` and never uses it (the SDK's
   reader repeats the cluster); in a file of the topology reader's spelling, dcx reads a
   cluster once, warns, and keeps the count.
2. Unknown keys: OpenDC's lenient reader ignores them with one warning and its strict
   reader fails; dcx warns about each (a conformance warning) and does not keep them.
3. A host or CPU ``count`` of 0 (or below) is accepted by the topology reader (no host, or
   an exception); dcx requires at least 1, as the SDK does.
4. OpenDC's command line takes ``importFrom`` paths as written, absolute ones too, relative
   to the importing file's folder and out of it with ``..``; dcx follows only relative paths
   that stay inside the topology's folder (a symbolic link that leads out is refused too),
   never a URL, and not at all for a topology read from standard input.
"""

from __future__ import annotations

import re
from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded

__all__ = [
    "CODES", "DEFAULT_HOST_NAME", "DIALECT", "FORMAT", "GPU_MEMBERS", "HOLDS", "MAX_HOSTS",
    "MAX_UNITS", "MEMORY_MEMBERS", "OWN_EXTRAS", "PREFIX", "REQUIRES", "SCHEMA", "SDK", "SDK_FILE",
    "TOPOLOGY_READER", "Dialect", "dialect_of", "frequency_text", "hertz", "leaves_out",
    "mebibytes", "normal_form", "normal_form_losses", "read", "read_with_imports", "size_text",
    "sniff", "write",
]

# The reader, the writer and what they import load on first use: the pre-commit hook imports
# every format's declaration to sniff, and most of its files are not this format's.
_LAZY = dict.fromkeys({
    "DEFAULT_HOST_NAME", "DIALECT", "Dialect", "GPU_MEMBERS", "MAX_HOSTS", "MAX_UNITS",
    "MEMORY_MEMBERS", "PREFIX", "SDK", "SDK_FILE", "TOPOLOGY_READER", "dialect_of",
    "frequency_text", "hertz", "mebibytes", "size_text",
}, "codec")


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


SCHEMA = "opendc-topology.schema.json"


HOLDS = frozenset({
    "rack", "rack.name", "machine.name", "machine.cpus", "machine.cpus.sockets",
    "cpu.clock_rate_hz", "cpu.vendor", "machine.gpus", "gpu.cores", "gpu.clock_rate_hz",
    "gpu.vendor", "machine.memory", "machine.arch",
})
OWN_EXTRAS = frozenset({"environment.extras", "rack.extras", "machine.extras"})
REQUIRES = frozenset({"machine.name"})


def sniff(data: bytes) -> bool:
    head = data[:4096].lstrip()
    return head.startswith(b"{") and re.search(rb'"clusters"\s*:\s*\[', head) is not None


read = deferred("dcx.formats.opendc_topology.codec", "read")


write = deferred("dcx.formats.opendc_topology.codec", "write")


normal_form = deferred("dcx.formats.opendc_topology.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.opendc_topology.codec", "normal_form_losses")


leaves_out = deferred("dcx.formats.opendc_topology.codec", "leaves_out")


read_with_imports = deferred("dcx.formats.opendc_topology.codec", "read_with_imports")


CODES = (
    Code("opendc-topology.root", "error", "The document is not a JSON object."),
    Code("opendc-topology.unit", "error",
         "A quantity is not a number with a unit OpenDC reads (\"2.4 GHz\", \"192 GiB\")."),
    Code("opendc-topology.bare-number", "warning",
         "A quantity has no unit; OpenDC reads it as MHz or MiB (and warns)."),
    Code("opendc-topology.unknown-key", "warning",
         "A key OpenDC does not read: its lenient reader ignores it, its strict reader refuses "
         "the file.", conformance=True),
    Code("opendc-topology.cluster-count", "warning",
         "A cluster count other than 1, which OpenDC's topology reader ignores."),
    Code("opendc-topology.too-large", "error",
         "The host and CPU counts stand for more hosts or CPUs than dcx reads (a budget of "
         "`dcx.core.limits`)."),
    Code("opendc-topology.import", "error",
         "An object's importFrom cannot be followed: the topology came from standard input, "
         "or the path is absolute, a URL, out of the topology's folder, missing, a cycle, "
         "or not a JSON object."),
    Code("opendc-topology.dialect", "error",
         "A host's memory is spelt for the other of OpenDC's two topology readers "
         "(memorySize vs the SDK's size) than the rest of the file."),
    Code("opendc-topology.unwritable", "error",
         "The model has a value an OpenDC topology cannot carry (writing only)."),
)

FIELD_NAMES: dict[str, str] = {
    "rack": "clusters",
    "rack.name": "cluster name",
    "machine.name": "host name",
    "machine.cpus": "host cpu coreCount",
    "machine.cpus.sockets": "host cpu count",
    "cpu.clock_rate_hz": "host cpu coreSpeed",
    "cpu.vendor": "host cpu vendor / modelName",
    "machine.arch": "host cpu arch",
    "machine.memory": "host memory memorySize",
    "machine.gpus": "host gpu count",
    "gpu.cores": "host gpu coreCount",
    "gpu.clock_rate_hz": "host gpu coreSpeed",
    "gpu.vendor": "host gpu vendor / modelName",
}
"""The topology's keys for the fields (``FormatDeclaration.field_names``)."""

FORMAT = FormatDeclaration(
    name="opendc-topology",
    title="OpenDC topology JSON",
    family="opendc",
    kind="topology",
    extensions=(".json",),
    content=frozenset({"json"}),
    schema=SCHEMA,
    description=("Current OpenDC's clusters of host entries (count, CPU cores and clock, "
                 "memory, GPUs, power models) with units such as \"2.4 GHz\"."),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    leaves_out=leaves_out,
    own_extras=OWN_EXTRAS,
    requires=REQUIRES,
    codes=CODES,
    read_with_imports=read_with_imports,
    field_names=FIELD_NAMES,
)
