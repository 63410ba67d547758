"""Reading, normal form and writing of OpenDC topology JSON; the package's docstring
(``dcx.formats.opendc_topology``) is the format's reference text."""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, overload

from dcx.core.declaration import ImportLoader, ImportRefused
from dcx.core.diagnostics import (
    Diagnostic,
    ReadResult,
    WriteResult,
    error,
    has_errors,
    warning,
)
from dcx.core.groups import (
    MachineGroup,
    Part,
    machine_parts,
    part_count,
    part_template,
    slot_parts,
    slots_of,
)
from dcx.core.ids import required_machine_name
from dcx.core.limits import LIMITS, paused_gc
from dcx.core.located import Place, run_holding
from dcx.core.memo import last_result
from dcx.core.model import (
    Datacenter,
    Document,
    Environment,
    Extras,
    Machine,
    ProcessingUnit,
    Rack,
    Room,
    StorageUnit,
)
from dcx.formats.opendc_topology import SCHEMA
from dcx.parsing.jsonio import JsonLocator, load_json_object, model_locator
from dcx.parsing.schemas import loaded_against, schema_diagnostics, serialised_against

PREFIX = "opendc-topology:"
DEFAULT_HOST_NAME = "Host"

MEMORY_MEMBERS = PREFIX + "memory"
GPU_MEMBERS = PREFIX + "gpu"
DIALECT = PREFIX + "dialect"
"""``Environment.extras`` key: ``SDK_FILE`` for a file in the SDK's spelling (see Dialects)."""
SDK_FILE = "sdk"
_GPU_MAPPED = frozenset({"count", "coreCount", "coreSpeed", "vendor", "modelName"})


@dataclass(frozen=True)
class Dialect:
    """The keys one of OpenDC's two topology readers reads."""

    name: str
    memory_size: str
    cpu_arch: str
    kept_host_keys: tuple[str, ...]
    """Host members kept as written under ``opendc-topology:<key>``."""
    kept_cluster_keys: tuple[str, ...]
    cluster: frozenset[str]
    host: frozenset[str]
    cpu: frozenset[str]
    memory: frozenset[str]
    gpu: frozenset[str]
    gpu_memory: str


def _dialect(name: str, memory_size: str, memory_speed: str, arch: str, policies: str,
             gpu_memory: str, gpu_overhead: str, counts_clusters: bool) -> Dialect:
    kept_host = ("cpuPowerModel", "gpuPowerModel", f"cpu{policies}", f"gpu{policies}")
    kept_cluster = ("powerSource", "battery") if counts_clusters else (
        "count", "powerSource", "battery")
    return Dialect(
        name=name, memory_size=memory_size, cpu_arch=arch, kept_host_keys=kept_host,
        kept_cluster_keys=kept_cluster, gpu_memory=gpu_memory,
        cluster=frozenset({"name", "hosts", "count", "powerSource", "battery"}),
        host=frozenset({"name", "count", "cpu", "memory", "gpu", *kept_host}),
        cpu=frozenset({"coreCount", "coreSpeed", "count", "modelName", "vendor", arch}),
        memory=frozenset({memory_size, memory_speed, "modelName", "vendor", arch}),
        gpu=frozenset({"count", "coreCount", "coreSpeed", gpu_memory, "memoryBandwidth",
                       "vendor", "modelName", "architecture", gpu_overhead}))


TOPOLOGY_READER = _dialect("topology reader", "memorySize", "memorySpeed", "arch",
                           "DistributionPolicy", "memorySize", "virtualizationOverHeadModel",
                           counts_clusters=False)
SDK = _dialect("SDK", "size", "speed", "architecture", "Distribution", "memory",
               "virtualizationOverhead", counts_clusters=True)
_ROOT_KEYS = frozenset({"clusters"})


# --------------------------------------------------------------------------- quantities

_QUANTITY = re.compile(r"\s*([0-9eE.-]+)\s*([A-Za-z]*)\s*")
_HERTZ = {"": 1.0, "k": 1e3, "kilo": 1e3, "m": 1e6, "mega": 1e6, "g": 1e9, "giga": 1e9}
_DECIMAL = {"": 1.0, "K": 1e3, "k": 1e3, "Kilo": 1e3, "kilo": 1e3, "M": 1e6, "m": 1e6,
            "Mega": 1e6, "mega": 1e6, "G": 1e9, "g": 1e9, "Giga": 1e9, "giga": 1e9,
            "T": 1e12, "t": 1e12, "Tera": 1e12, "tera": 1e12}
_BINARY = {"Ki": 2.0**10, "ki": 2.0**10, "Kibi": 2.0**10, "kibi": 2.0**10,
           "Mi": 2.0**20, "mi": 2.0**20, "Mebi": 2.0**20, "mebi": 2.0**20,
           "Gi": 2.0**30, "gi": 2.0**30, "Gibi": 2.0**30, "gibi": 2.0**30,
           "Ti": 2.0**40, "ti": 2.0**40, "Tebi": 2.0**40, "tebi": 2.0**40}
_BYTES = ("B", "byte", "Byte", "bytes", "Bytes")
_BITS = ("b", "bit", "Bit", "bits", "Bits")


def _number_and_unit(value: Any) -> tuple[float, str] | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value), ""
    match = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return None
    try:
        number = float(match.group(1))
    except ValueError:
        return None
    return (number, match.group(2)) if math.isfinite(number) else None


def hertz(value: Any) -> tuple[float | None, bool]:
    """A frequency in Hz and whether it was a bare number (MHz); ``None`` if unreadable."""
    parsed = _number_and_unit(value)
    if parsed is None:
        return None, False
    number, unit = parsed
    if not unit:
        return number * 1e6, True
    lowered = unit.lower()
    for suffix in ("hertz", "hz"):
        if lowered.endswith(suffix) and lowered[:-len(suffix)] in _HERTZ:
            return number * _HERTZ[lowered[:-len(suffix)]], False
    return None, False


def mebibytes(value: Any) -> tuple[float | None, bool]:
    """A size in MiB (the model's MB) and whether it was a bare number (MiB)."""
    parsed = _number_and_unit(value)
    if parsed is None:
        return None, False
    number, unit = parsed
    if not unit:
        return number, True
    for names, per in ((_BYTES, 1.0), (_BITS, 0.125)):
        for name in names:
            if unit.endswith(name):
                prefix = unit[:-len(name)]
                factor = _BINARY.get(prefix) or _DECIMAL.get(prefix)
                if factor is not None:
                    return number * (factor * per / 2.0**20), False
    return None, False


def _plain(number: float) -> str:
    """A number as OpenDC's unit syntax reads it back exactly (no ``+`` in exponents)."""
    number = float(number)
    if number.is_integer() and abs(number) < 2**63:
        return str(int(number))
    return repr(number)


def frequency_text(value_hz: float) -> str:
    for unit, factor in (("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3)):
        text = _plain(value_hz / factor)
        if "+" not in text and float(text) * factor == value_hz:
            return f"{text} {unit}"
    return f"{_plain(value_hz)} Hz"


def size_text(value_mb: float) -> str:
    value_mb = float(value_mb)
    for unit, factor in (("TiB", 2.0**20), ("GiB", 2.0**10)):
        if (value_mb / factor).is_integer() and value_mb:
            return f"{_plain(value_mb / factor)} {unit}"
    return f"{_plain(value_mb)} MiB"


# --------------------------------------------------------------------------- read


MAX_HOSTS = LIMITS.max_hostlist_range
"""Hosts the ``count`` of all entries may stand for together (the budget of a hostlist)."""
MAX_UNITS = 4 * MAX_HOSTS
"""CPUs and GPUs all those hosts may have together."""


def dialect_of(root: dict[str, Any]) -> Dialect:
    """The SDK's when some host's memory has the SDK's ``size``, else the topology
    reader's."""
    for cluster in root["clusters"]:
        for host in cluster["hosts"]:
            if SDK.memory_size in host["memory"]:
                return SDK
    return TOPOLOGY_READER


class HostNames(Sequence[str]):
    """The names OpenDC gives the ``count`` hosts of one entry named ``base``, not made until
    asked for: ``base`` itself first when the file has not used that name yet (``fresh``),
    then ``base-<first>``, ``base-<first + 1>``, …"""

    __slots__ = ("base", "first", "fresh", "length")

    def __init__(self, base: str, fresh: bool, first: int, count: int) -> None:
        self.base, self.fresh, self.first, self.length = base, fresh, first, count

    @property
    def numbers(self) -> range:
        """The numbers of the ``base-<number>`` names."""
        return range(self.first, self.first + self.length - self.fresh)

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(index)
        if self.fresh and index == 0:
            return self.base
        return f"{self.base}-{self.first + index - self.fresh}"

    def __iter__(self) -> Iterator[str]:
        if self.fresh:
            yield self.base
        base = self.base
        for number in self.numbers:
            yield f"{base}-{number}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HostNames):
            return (self.base, self.fresh, self.first, self.length) == (
                other.base, other.fresh, other.first, other.length) or list(self) == list(other)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to any sequence of the same names

    def __repr__(self) -> str:
        return f"HostNames({self.base!r}, {self.fresh}, {self.first}, {self.length})"


@dataclass
class _Reader:
    dialect: Dialect
    diagnostics: list[Diagnostic] = field(default_factory=list)
    uses: dict[str, int] = field(default_factory=dict)
    hosts_read: int = 0
    units_read: int = 0

    def entry_names(self, name: str, count: int) -> HostNames:
        """The names OpenDC gives the next ``count`` hosts of entry name ``name``: it counts
        the uses of each name across the file."""
        if name not in self.uses:
            self.uses[name] = count - 1
            return HostNames(name, True, 0, count)
        first = self.uses[name]
        self.uses[name] = first + count
        return HostNames(name, False, first, count)

    def unknown_keys(self, item: dict[str, Any], known: frozenset[str], pointer: str) -> None:
        for key in item:
            if key not in known:
                self.diagnostics.append(warning(
                    f"unknown key {key!r}: OpenDC ignores it (and its strict reader refuses "
                    "the file)", "opendc-topology.unknown-key",
                    pointer=f"{pointer}/{_escape(key)}"))

    def frequency(self, value: Any, pointer: str) -> float | None:
        found, bare = hertz(value)
        return self._quantity(found, bare, value, pointer, "MHz", "a frequency such as "
                              "\"2.4 GHz\"")

    def size(self, value: Any, pointer: str) -> float | None:
        found, bare = mebibytes(value)
        return self._quantity(found, bare, value, pointer, "MiB", "a size such as "
                              "\"192 GiB\"")

    def _quantity(self, found: float | None, bare: bool, value: Any, pointer: str,
                  assumed: str, example: str) -> float | None:
        if found is None:
            self.diagnostics.append(error(f"{value!r} is not {example}", "opendc-topology.unit",
                                          pointer=pointer))
        elif bare:
            self.diagnostics.append(warning(
                f"{value!r} has no unit; OpenDC reads it as {assumed}",
                "opendc-topology.bare-number", pointer=pointer,
                hint=f"write \"{_plain(float(found if assumed == 'MiB' else found / 1e6))} "
                f"{assumed}\""))
        return found

    def document(self, root: dict[str, Any]) -> Document:
        self.unknown_keys(root, _ROOT_KEYS, "")
        racks: list[Rack] = []
        for index, cluster in enumerate(root["clusters"]):
            racks.extend(self.clusters(cluster, f"/clusters/{index}"))
        extras = {DIALECT: SDK_FILE} if self.dialect is SDK else {}
        return Document(environment=Environment(datacenters=(Datacenter(rooms=(
            Room(racks=tuple(racks)),)),), extras=extras))

    def clusters(self, cluster: dict[str, Any], pointer: str) -> list[Rack]:
        """The racks of a cluster entry: ``count`` of them for the SDK, one for the
        topology reader (which ignores the count)."""
        dialect = self.dialect
        self.unknown_keys(cluster, dialect.cluster, pointer)
        written = cluster.get("count", 1)
        if written != 1 and dialect is TOPOLOGY_READER:
            self.diagnostics.append(warning(
                f"cluster count {written}: OpenDC's topology reader ignores it (the SDK "
                "repeats the cluster); dcx reads the cluster once",
                "opendc-topology.cluster-count", pointer=pointer + "/count"))
        copies = _copies(cluster, dialect)
        extras = {PREFIX + key: cluster[key] for key in dialect.kept_cluster_keys
                  if key in cluster}
        racks = []
        for _ in range(copies):
            parts: list[Part] = []
            for index, host in enumerate(cluster["hosts"]):
                parts.extend(self.hosts(host, f"{pointer}/hosts/{index}"))
            racks.append(Rack(name=cluster.get("name"), slots=slots_of(parts), extras=extras))
        return racks

    def within_budget(self, host: dict[str, Any], pointer: str) -> bool:
        copies = host.get("count", 1)
        units = host["cpu"].get("count", 1) + (host.get("gpu") or {}).get("count", 0)
        self.hosts_read += copies
        self.units_read += copies * units
        if self.hosts_read <= MAX_HOSTS and self.units_read <= MAX_UNITS:
            return True
        self.diagnostics.append(error(
            f"the counts so far stand for {self.hosts_read:,} hosts with {self.units_read:,} "
            f"CPUs and GPUs; dcx reads at most {MAX_HOSTS:,} hosts and {MAX_UNITS:,} CPUs and "
            "GPUs", "opendc-topology.too-large", pointer=pointer + "/count"))
        return False

    def hosts(self, host: dict[str, Any], pointer: str) -> list[Machine | MachineGroup]:
        """The machines of a host entry: one machine, or one group of ``count`` (its shape
        held once, its names made when asked for)."""
        dialect = self.dialect
        self.unknown_keys(host, dialect.host, pointer)
        if not self.within_budget(host, pointer):
            return []
        cpu, memory, gpu = host["cpu"], host["memory"], host.get("gpu")
        self.unknown_keys(cpu, dialect.cpu, pointer + "/cpu")
        self.unknown_keys(memory, dialect.memory, pointer + "/memory")
        clock = self.frequency(cpu["coreSpeed"], pointer + "/cpu/coreSpeed")
        unit = ProcessingUnit(cores=cpu["coreCount"], clock_rate_hz=clock,
                              manufacturer=cpu.get("vendor"), model=cpu.get("modelName"))
        size_key = dialect.memory_size
        if size_key not in memory:
            self.diagnostics.append(error(
                f"memory has no {size_key!r}: this file is in the {dialect.name}'s spelling "
                f"(memory {size_key!r}), and OpenDC reads a file in one spelling",
                "opendc-topology.dialect", pointer=pointer + "/memory"))
            return []
        capacity = self.size(memory[size_key], f"{pointer}/memory/{size_key}")
        extras: Extras = {PREFIX + key: host[key] for key in dialect.kept_host_keys
                          if key in host}
        rest = {key: value for key, value in memory.items() if key != size_key}
        if rest:
            extras[MEMORY_MEMBERS] = rest
        gpus: tuple[ProcessingUnit, ...] = ()
        if gpu is not None:
            self.unknown_keys(gpu, dialect.gpu, pointer + "/gpu")
            gpu_clock = self.frequency(gpu["coreSpeed"], pointer + "/gpu/coreSpeed")
            if dialect.gpu_memory in gpu:
                self.size(gpu[dialect.gpu_memory], f"{pointer}/gpu/{dialect.gpu_memory}")
            gpus = (ProcessingUnit(cores=gpu["coreCount"], clock_rate_hz=gpu_clock,
                                   manufacturer=gpu.get("vendor"),
                                   model=gpu.get("modelName")),) * gpu.get("count", 1)
            rest = {key: value for key, value in gpu.items() if key not in _GPU_MAPPED}
            if rest:
                extras[GPU_MEMBERS] = rest
        shape = Machine(
            cpus=(unit,) * cpu.get("count", 1), gpus=gpus,
            memory=(StorageUnit(capacity),) if capacity else (), arch=cpu.get(dialect.cpu_arch),
            extras=extras)
        count = host.get("count", 1)
        names = self.entry_names(host.get("name", DEFAULT_HOST_NAME), count)
        if count == 1:
            return [replace(shape, name=names[0])]
        return [MachineGroup(shape, count, names=names)]


def _copies(cluster: dict[str, Any], dialect: Dialect) -> int:
    """The racks a cluster entry stands for: its ``count`` for the SDK, one for the
    topology reader (which ignores the count)."""
    return cluster.get("count", 1) if dialect is SDK else 1


@dataclass
class _Sources:
    """The JSON Pointer a model object was read from: a rack is its cluster entry (each of
    an SDK cluster's copies too), a machine its host entry (each of a ``count`` of hosts
    too), the rest the document. The counts are read again on the first question, from the
    text."""

    locator: JsonLocator

    def __call__(self, place: Place) -> str | None:
        if place.part != "environment":
            return None
        rack, slot = place.index("racks"), place.index("slots")
        if rack is None:
            return ""
        clusters = self._counts
        cluster = run_holding((copies for copies, _ in clusters), rack)
        if cluster is None:
            return None
        if slot is None:
            return f"/clusters/{cluster}"
        host = run_holding(clusters[cluster][1], slot)
        return None if host is None else f"/clusters/{cluster}/hosts/{host}"

    @cached_property
    def _counts(self) -> list[tuple[int, list[int]]]:
        """Each cluster entry's racks and its host entries' machines."""
        root = self.locator.decoded()
        dialect = dialect_of(root)
        return [(_copies(cluster, dialect), [host.get("count", 1) for host in cluster["hosts"]])
                for cluster in root["clusters"]]




IMPORT_KEY = "importFrom"


def _imported(diagnostic: Diagnostic, root: Any) -> Diagnostic:
    """A host that still ``importFrom``s its definition (read from stdin, where no folder
    holds the file it names) lacks its cpu and memory: say so rather than that ``cpu`` is
    missing."""
    if diagnostic.code != "schema.required":
        return diagnostic
    found = _at(root, diagnostic.pointer)
    if not isinstance(found, dict) or IMPORT_KEY not in found:
        return diagnostic
    return replace(diagnostic, code="opendc-topology.import",
                   pointer=f"{diagnostic.pointer}/{IMPORT_KEY}",
                   message=f"this object is imported from {found[IMPORT_KEY]!r}; imports are "
                   "followed only for a topology read from a file (they are relative to its "
                   "folder), not from standard input",
                   hint="give the topology as a file path, or paste the imported host in")


def _at(root: Any, pointer: str) -> Any:
    """The value at a JSON Pointer of ``root`` (``None`` where there is none)."""
    node = root
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def read(data: bytes) -> ReadResult:
    # (an imported host lacks both cpu and memory: said once)
    decoded, problems = loaded_against(SCHEMA, data, "an OpenDC topology",
                                       "opendc-topology.root", _imported)
    if decoded is None:
        return ReadResult(None, tuple(problems))
    return _read_decoded(decoded.value, decoded.locator)


def read_with_imports(data: bytes, load: ImportLoader) -> ReadResult:
    """``read`` for a topology read from a file: each object's ``importFrom`` names a file
    of the topology's folder that gives the object's other keys (its own keys win, each
    whole), as OpenDC's command line composes its files; imported files may import too,
    relative to their own folder."""
    decoded, problems = load_json_object(data, "an OpenDC topology", "opendc-topology.root")
    if decoded is None:
        return ReadResult(None, tuple(problems))
    composer = _Composer(load)
    root = composer.value(decoded.value, "", (), "")
    if composer.problems:
        return ReadResult(None, tuple(decoded.locator.place(composer.problems)))
    found = schema_diagnostics(SCHEMA, root, decoded.locator)
    if found:
        return ReadResult(None, tuple(dict.fromkeys(_imported(d, root) for d in found)))
    return _read_decoded(root, decoded.locator)


def _read_decoded(root: dict[str, Any], locator: JsonLocator) -> ReadResult:
    reader = _Reader(dialect_of(root))
    document = reader.document(root)
    diagnostics = locator.place(reader.diagnostics)
    if has_errors(diagnostics):
        return ReadResult(None, tuple(diagnostics))
    return ReadResult(document, tuple(diagnostics),
                      locator=model_locator(locator, _Sources(locator)))


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass
class _Composer:
    """Objects with ``importFrom`` replaced by the imported object updated with their own
    keys. A problem is located at the ``importFrom`` of the topology file that leads to it
    (inside imported files, the message names the file and the place)."""

    load: ImportLoader
    problems: list[Diagnostic] = field(default_factory=list)

    def value(self, value: Any, folder: str, chain: tuple[str, ...], pointer: str,
              outer: str | None = None) -> Any:
        if isinstance(value, list):
            return [self.value(item, folder, chain, f"{pointer}/{index}", outer)
                    for index, item in enumerate(value)]
        if not isinstance(value, dict):
            return value
        local = {key: self.value(item, folder, chain, f"{pointer}/{_escape(key)}", outer)
                 for key, item in value.items() if key != IMPORT_KEY}
        if IMPORT_KEY not in value:
            return local
        here = outer if outer is not None else f"{pointer}/{IMPORT_KEY}"
        imported = self.imported(value[IMPORT_KEY], folder, chain, here)
        return local if imported is None else {**imported, **local}

    def imported(self, name: Any, folder: str, chain: tuple[str, ...],
                 here: str) -> dict[str, Any] | None:
        where = f" (in {chain[-1]})" if chain else ""
        if not isinstance(name, str) or not name:
            return self.refuse(f"importFrom{where} must be a file path", here)
        if name.startswith(("/", "\\")) or _SCHEME.match(name) or "\\" in name:
            return self.refuse(f"importFrom {name!r}{where} is not a path relative to the "
                               "topology's folder: dcx follows only those", here)
        target = posixpath.normpath(posixpath.join(folder, name))
        if target == ".." or target.startswith("../"):
            return self.refuse(f"importFrom {name!r}{where} leads out of the topology's "
                               "folder", here)
        if target in chain:
            return self.refuse(f"importFrom {name!r}{where} imports itself: "
                               f"{' -> '.join((*chain, target))}", here)
        try:
            data = self.load(target)
        except ImportRefused as refused:
            return self.refuse(f"importFrom {name!r}{where}: {refused}", here)
        decoded, problems = load_json_object(data, f"the imported file {target!r}",
                                             "opendc-topology.import")
        if decoded is None:
            first = problems[0]
            at = f"line {first.line}: " if first.line is not None else ""
            return self.refuse(f"importFrom {name!r}{where}: {at}{first.message}", here)
        composed = self.value(decoded.value, posixpath.dirname(target), (*chain, target), "",
                              here)
        return composed if isinstance(composed, dict) else None

    def refuse(self, message: str, pointer: str) -> dict[str, Any] | None:
        """Records why an import cannot be followed; the object then has no imported keys."""
        self.problems.append(error(message, "opendc-topology.import", pointer=pointer))
        return None


# --------------------------------------------------------------------------- normal form


def _writable(machine: Machine) -> bool:
    return bool(machine.cpus) and all(cpu.cores >= 1 and _clock(cpu) for cpu in machine.cpus)


def _clock(unit: ProcessingUnit) -> bool:
    clock = unit.clock_rate_hz
    return clock is not None and math.isfinite(clock) and clock > 0


def _kind(unit: ProcessingUnit) -> tuple[Any, ...]:
    return (unit.cores, unit.clock_rate_hz, unit.manufacturer, unit.model)


def _numbered(name: str) -> tuple[str, int] | None:
    """``(base, number)`` for a name OpenDC could give as ``base-<number>``."""
    base, dash, digits = name.rpartition("-")
    if not dash or not (digits.isascii() and digits.isdigit()) or (
            digits != "0" and digits.startswith("0")):
        return None
    return base, int(digits)


@dataclass
class _TakenNames:
    """The names given so far, runs of ``base-<number>`` names held as ranges: a group of a
    million hosts is checked and recorded without making its names."""

    names: set[str] = field(default_factory=set)
    numbered: dict[str, set[int]] = field(default_factory=dict)
    """The ``base-<number>`` names among ``names``, by base, as of the last ``free``."""
    pending: list[str] = field(default_factory=list)
    """Names added since: split only when a group asks (single hosts never do)."""
    runs: dict[str, list[range]] = field(default_factory=dict)

    def __contains__(self, name: str) -> bool:
        if name in self.names:
            return True
        if not self.runs:
            return False
        split = _numbered(name)
        return split is not None and any(split[1] in run for run in self.runs.get(split[0], ()))

    def add(self, name: str) -> None:
        self.names.add(name)
        self.pending.append(name)

    def free(self, names: HostNames) -> bool:
        """Whether none of ``names`` is taken (a name ``base-<n>`` has one base only)."""
        for name in self.pending:
            split = _numbered(name)
            if split is not None:
                self.numbered.setdefault(split[0], set()).add(split[1])
        self.pending.clear()
        numbers = names.numbers
        if names.fresh and names.base in self:
            return False
        if any(number in numbers for number in self.numbered.get(names.base, ())):
            return False
        return not any(max(run.start, numbers.start) < min(run.stop, numbers.stop)
                       for run in self.runs.get(names.base, ()))

    def add_run(self, names: HostNames) -> None:
        if names.fresh:
            self.add(names.base)
        if names.numbers:
            self.runs.setdefault(names.base, []).append(names.numbers)


@dataclass
class _Normalizer:
    lost: set[str] = field(default_factory=set)
    taken: _TakenNames = field(default_factory=_TakenNames)
    position: int = 0
    shapes: dict[tuple[int, int, int], tuple[Any, Machine | None]] = field(
        default_factory=dict)
    """Hardware normalised once per distinct (CPUs, GPUs, memory) tuples, by identity: the
    machines a reader makes of one shape share them (the tuples kept alive beside it)."""
    last_shape: tuple[Any, Machine | None] | None = None

    def changed(self, path: str, before: Any, after: Any) -> Any:
        if before != after:
            self.lost.add(path)
        return after

    def environment(self, environment: Environment) -> Environment:
        extras = environment.extras
        # a file without hosts reads the same in both spellings: it is the topology reader's
        if DIALECT in extras and (extras[DIALECT] != SDK_FILE or not any(
                _writable(part_template(part)) for part in machine_parts(environment))):
            extras = {key: value for key, value in extras.items() if key != DIALECT}
        return replace(environment, extras=extras, datacenters=tuple(replace(dc, rooms=tuple(
            replace(room, racks=tuple(self.rack(rack) for rack in room.racks))
            for room in dc.rooms)) for dc in environment.datacenters))

    def rack(self, rack: Rack) -> Rack:
        parts: list[Part] = []
        for part in slot_parts(rack.slots):
            if part is None:
                parts.append(None)
            elif isinstance(part, MachineGroup):
                parts.extend(self.group(part))
            else:
                single = self.single(part)
                if single is not None:
                    parts.append(single)
        return replace(rack, slots=slots_of(parts))

    def single(self, machine: Machine) -> Machine | None:
        """The machine as a host entry holds it; ``None``: a host cannot hold its CPUs."""
        self.position += 1
        hardware = self.shared_hardware(machine)
        if hardware is None:
            self.lost.add("machine.cpus")
            return None
        return self.machine(machine, hardware)

    def group(self, group: MachineGroup) -> list[Machine | MachineGroup]:
        """A group whose names are OpenDC's names of one entry, none taken yet, stays one
        group; any other is normalised member by member, as single machines are."""
        names = group.names
        if not (isinstance(names, HostNames) and names.base and self.taken.free(names)):
            if not _writable(group.template):
                self.position += group.count
                self.lost.add("machine.cpus")
                return []
            # the members share the template's hardware: normalised once, then each named
            hardware = self.hardware(group.template)
            named: list[Machine | MachineGroup] = []
            for member in group:
                self.position += 1
                named.append(self.machine(member, hardware))
            return named
        self.position += group.count
        if not _writable(group.template):
            self.lost.add("machine.cpus")
            return []
        self.taken.add_run(names)
        return [replace(group, template=self.hardware(group.template))]

    def machine(self, machine: Machine, hardware: Machine) -> Machine:
        """``machine`` named as OpenDC names it, with ``hardware``'s (normalised) units."""
        taken = self.taken
        # its own name when it has one (required_machine_name's first rule), inline: a call
        # per host is what named hosts cost
        name = machine.name or required_machine_name(machine, self.position, bool)
        if name in taken.names or (taken.runs and name in taken):
            suffix = 2
            while f"{name}-{suffix}" in taken:
                suffix += 1
            name = f"{name}-{suffix}"
        taken.names.add(name)
        taken.pending.append(name)
        if machine.name is not None and name != machine.name:
            self.lost.add("machine.name")
        if name == machine.name and hardware.cpus is machine.cpus and \
                hardware.gpus is machine.gpus and hardware.memory is machine.memory:
            return machine  # nothing to change: no copy per machine
        return replace(machine, name=name, cpus=hardware.cpus, gpus=hardware.gpus,
                       memory=hardware.memory)

    def shared_hardware(self, machine: Machine) -> Machine | None:
        """``hardware(machine)``, or ``None`` when a host cannot hold its CPUs, made once per
        shape (``shapes``); the losses it finds are the same for every machine of it."""
        last = self.last_shape
        if last is not None and machine.cpus is last[0][0] and machine.gpus is last[0][1] \
                and machine.memory is last[0][2]:
            return last[1]  # the previous machine's shape: the common case, no lookup
        key = (id(machine.cpus), id(machine.gpus), id(machine.memory))
        known = self.shapes.get(key)
        if known is None:
            known = self.shapes[key] = ((machine.cpus, machine.gpus, machine.memory),
                                        self.hardware(machine) if _writable(machine) else None)
        self.last_shape = known
        return known[1]

    def hardware(self, machine: Machine) -> Machine:
        """``machine`` with CPUs, GPUs and memory as a host entry holds them."""
        cpus = machine.cpus
        if len({_kind(cpu) for cpu in cpus}) > 1:  # merged as restrict merges sockets
            self.lost.add("machine.cpus.sockets")
            cpus = (replace(cpus[0], cores=machine.core_count,
                            clock_rate_hz=machine.clock_rate_hz),)
        cpus = tuple(self.unit(cpu, "cpu") for cpu in cpus)
        gpus = machine.gpus
        if gpus and not all(gpu.cores >= 1 and _clock(gpu) for gpu in gpus):
            gpus = self.changed("machine.gpus", gpus, ())
        if gpus:
            first = gpus[0]
            for gpu in gpus[1:]:
                for path, index in (("gpu.cores", 0), ("gpu.clock_rate_hz", 1)):
                    self.changed(path, _kind(gpu)[index], _kind(first)[index])
                self.changed("gpu.vendor", _kind(gpu)[2:], _kind(first)[2:])
            gpus = (self.unit(first, "gpu"),) * len(gpus)
        memory = machine.memory
        if memory:
            total = sum(unit.capacity_mb for unit in memory)
            if not (math.isfinite(total) and total > 0):
                memory = self.changed("machine.memory", memory, ())
        if cpus == machine.cpus and gpus == machine.gpus and memory is machine.memory:
            return machine  # the same units: the machine's own tuples, kept
        return replace(machine, cpus=cpus, gpus=gpus, memory=memory)

    def unit(self, unit: ProcessingUnit, kind: str) -> ProcessingUnit:
        """Family and generation have no key; the rest is written as it is."""
        if unit.family is None and unit.generation is None:
            return unit
        self.changed(f"{kind}.vendor", (unit.family, unit.generation), (None, None))
        return replace(unit, family=None, generation=None)


@last_result
def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    if document.environment is None:
        return document, frozenset()
    normalizer = _Normalizer()
    with paused_gc():  # a machine and a name per host, no cycles among them
        environment = normalizer.environment(document.environment)
    return replace(document, environment=environment), frozenset(normalizer.lost)


def normal_form(document: Document) -> Document:
    """What an OpenDC topology makes of ``document`` (see Writing)."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    """The held field paths ``normal_form`` changes in ``document``."""
    return _normalized(document)[1]


def leaves_out(document: Document) -> str:
    """Why an OpenDC topology cannot hold machines of ``document``, in one line."""
    parts = list(machine_parts(document.environment)) if document.environment else []
    left_out = [part for part in parts if not _writable(part_template(part))]
    if not left_out:
        return ""
    machine = left_out[0].member(0) if isinstance(left_out[0], MachineGroup) else left_out[0]
    first = machine.name or machine.id
    named = f" (first: {first})" if first is not None else ""
    return (f"an OpenDC host needs a CPU with a clock rate; "
            f"{sum(map(part_count, left_out))} of {sum(map(part_count, parts))} machines have "
            f"none{named}")


# --------------------------------------------------------------------------- write


def write(document: Document) -> WriteResult:
    """An OpenDC topology for ``normal_form(document)``: one cluster per rack."""
    with paused_gc():  # an entry and a dict per host with its own name, no cycles
        return _write(normal_form(document).environment or Environment())


def _write(environment: Environment) -> WriteResult:
    dialect = SDK if environment.extras.get(DIALECT) == SDK_FILE else TOPOLOGY_READER
    bases: set[str] = set()
    shapes = _Shapes(dialect)
    clusters = [_cluster(rack, bases, shapes) for datacenter in environment.datacenters
                for room in datacenter.rooms for rack in room.racks]
    if sum(len(entries) for _, entries in clusters) > _INDENTED_ENTRIES:
        return _one_line(clusters)
    root = {"clusters": [_with_hosts(cluster, entries) for cluster, entries in clusters]}
    data, problem = serialised_against(SCHEMA, root)
    return _unwritable(problem) if problem is not None else WriteResult(data)


def _with_hosts(cluster: dict[str, Any], entries: list[_Entry]) -> dict[str, Any]:
    """The cluster's object with its host entries, in the order the keys are written."""
    hosts: list[dict[str, Any]] = []
    for entry in entries:
        host: dict[str, Any] = {"name": entry.base}
        if entry.count > 1:
            host["count"] = entry.count
        host.update(entry.shape)
        hosts.append(host)
    return {**({"name": cluster["name"]} if "name" in cluster else {}), "hosts": hosts,
            **{key: value for key, value in cluster.items() if key != "name"}}


def _one_line(clusters: list[tuple[dict[str, Any], list[_Entry]]]) -> WriteResult:
    """Many host entries (hosts with their own names) as the one-line JSON the encoder would
    write for ``_with_hosts``' objects, each entry's text joined from its name and its
    shape's text made once. The schema is checked on the clusters with one entry per shape
    and count kind: an entry adds only its name (text) and count (above 1) to its shape's."""
    import json

    from dcx.parsing.jsonio import dumps_canonical

    texts: dict[int, str] = {}
    picked = [_with_hosts(cluster, list({(id(entry.shape), entry.count > 1): entry
                                         for entry in entries}.values()))
              for cluster, entries in clusters]
    _, problem = serialised_against(SCHEMA, {"clusters": picked}, indent=None)
    if problem is not None:
        return _unwritable(problem)
    name_text = json.encoder.encode_basestring
    parts: list[str] = []
    for (_, entries), sample in zip(clusters, picked, strict=True):
        hosts = []
        for entry in entries:
            shape = texts.get(id(entry.shape))
            if shape is None:
                shape = texts[id(entry.shape)] = dumps_canonical(
                    entry.shape, indent=None).decode()[1:-2]
            count = f', "count": {entry.count}' if entry.count > 1 else ""
            hosts.append(f'{{"name": {name_text(entry.base)}{count}, {shape}}}')
        whole = dumps_canonical({**sample, "hosts": []}, indent=None).decode()[:-1]
        cut = whole.index('"hosts": []') + len('"hosts": [')
        parts.append(whole[:cut] + ", ".join(hosts) + whole[cut:])
    return WriteResult(('{"clusters": [' + ", ".join(parts) + "]}\n").encode())


def _unwritable(reason: str) -> WriteResult:
    return WriteResult(b"", diagnostics=(error(f"cannot write an OpenDC topology: {reason}",
                                               "opendc-topology.unwritable"),))


@dataclass(slots=True)
class _Entry:
    """One host entry being written: ``count`` hosts of one shape from its name ``base``."""

    base: str
    shape: dict[str, Any]
    grows: bool
    """Whether later hosts may join: OpenDC names an entry's hosts ``base``, ``base-0``, …
    only when ``base`` is new in the file."""
    count: int = 1


_INDENTED_ENTRIES = 10_000
"""Indented output for readable small files; one line for more host entries than this
(hosts with their own names are an entry each: ``_one_line``)."""


@dataclass
class _Shapes:
    """Host entries without name and count (``_host``), made once per machine shape: the
    machines a reader makes of one shape share their CPU, GPU and memory tuples."""

    dialect: Dialect
    made: dict[tuple[Any, ...], tuple[Machine, dict[str, Any]]] = field(default_factory=dict)

    last: tuple[Machine, dict[str, Any]] | None = None

    def of(self, machine: Machine) -> dict[str, Any]:
        last = self.last
        if last is not None and machine.cpus is last[0].cpus and machine.gpus is \
                last[0].gpus and machine.memory is last[0].memory and machine.arch == \
                last[0].arch and not machine.extras and not last[0].extras:
            return last[1]  # the previous machine's shape: the common case, no lookup
        key = (id(machine.cpus), id(machine.gpus), id(machine.memory), machine.arch,
               id(machine.extras) if machine.extras else None)
        known = self.made.get(key)
        if known is None:  # the machine is kept beside its entry, so its ids stay its own
            known = self.made[key] = (machine, _host(machine, self.dialect))
        self.last = known
        return known[1]


def _cluster(rack: Rack, bases: set[str], shapes: _Shapes
             ) -> tuple[dict[str, Any], list[_Entry]]:
    """The cluster's own keys and its host entries."""
    cluster: dict[str, Any] = {}
    if rack.name is not None:
        cluster["name"] = rack.name
    entries: list[_Entry] = []
    for part in slot_parts(rack.slots):
        if isinstance(part, MachineGroup):
            # the normal form names every member
            names: Sequence[str] = part.names if part.names is not None else ()
            _add_hosts(entries, bases, shapes.of(part.template), names)
        elif part is not None:
            _add_host(entries, bases, shapes.of(part), part.name or "")
    for key in shapes.dialect.kept_cluster_keys:
        if PREFIX + key in rack.extras:
            cluster[key] = rack.extras[PREFIX + key]
    return cluster, entries


def _add_hosts(entries: list[_Entry], bases: set[str], shape: dict[str, Any],
               names: Sequence[str]) -> None:
    """Hosts of one shape named ``names``, in order: each joins the last entry when it is
    the next name OpenDC gives that entry (``cn``, ``cn-0``, ``cn-1``), else starts one."""
    start = 0
    while start < len(names):
        if entries and entries[-1].grows and (entries[-1].shape is shape
                                              or entries[-1].shape == shape):
            entry = entries[-1]
            joining = _continuing(names, start, entry.base, entry.count - 1)
            entry.count += joining
            start += joining
            if start == len(names):
                break
        base = names[start]
        entries.append(_Entry(base, shape, grows=base not in bases))
        bases.add(base)
        start += 1


def _add_host(entries: list[_Entry], bases: set[str], shape: dict[str, Any], name: str) -> None:
    """``_add_hosts`` of one host, without a names sequence (hosts with their own names)."""
    last = entries[-1] if entries else None
    if last is not None and last.grows and (last.shape is shape or last.shape == shape) \
            and name.startswith(last.base) and name == f"{last.base}-{last.count - 1}":
        last.count += 1
        return
    entries.append(_Entry(name, shape, grows=name not in bases))
    bases.add(name)


def _continuing(names: Sequence[str], start: int, base: str, number: int) -> int:
    """How many of ``names[start:]`` are ``base-<number>``, ``base-<number + 1>``, …; for
    OpenDC's own names of a group, without making them."""
    if isinstance(names, HostNames) and names.base == base and start >= names.fresh:
        follows = names.first + start - names.fresh == number
        return len(names) - start if follows else 0
    joining = 0
    for index in range(start, len(names)):
        if names[index] != f"{base}-{number + joining}":
            break
        joining += 1
    return joining


def _unit_object(unit: ProcessingUnit, count: int) -> dict[str, Any]:
    written: dict[str, Any] = {"coreCount": unit.cores,
                               "coreSpeed": frequency_text(unit.clock_rate_hz or 0.0)}
    if count != 1:
        written["count"] = count
    if unit.manufacturer is not None:
        written["vendor"] = unit.manufacturer
    if unit.model is not None:
        written["modelName"] = unit.model
    return written


def _host(machine: Machine, dialect: Dialect) -> dict[str, Any]:
    """A host entry without its name and count."""
    cpu = _unit_object(machine.cpus[0], len(machine.cpus))
    if machine.arch is not None:
        cpu[dialect.cpu_arch] = machine.arch
    memory: dict[str, Any] = {dialect.memory_size: size_text(machine.memory_mb)}
    kept = machine.extras.get(MEMORY_MEMBERS)
    if isinstance(kept, dict):
        memory.update({key: value for key, value in kept.items()
                       if key in dialect.memory and key != dialect.memory_size})
    host: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if machine.gpus:
        gpu = _unit_object(machine.gpus[0], len(machine.gpus))
        kept = machine.extras.get(GPU_MEMBERS)
        if isinstance(kept, dict):
            gpu.update({key: value for key, value in kept.items()
                        if key in dialect.gpu and key not in _GPU_MAPPED})
        host["gpu"] = gpu
    for key in dialect.kept_host_keys:
        if PREFIX + key in machine.extras:
            host[key] = machine.extras[PREFIX + key]
    return host
