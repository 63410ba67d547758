"""Reading, normal form and writing of slurm.conf node configuration; the package's docstring
(``dcx.formats.slurm``) is the format's reference text."""

from __future__ import annotations

import contextlib
import math
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import chain, repeat
from typing import Any

from dcx.core.diagnostics import ReadResult, WriteResult, error, warning
from dcx.core.groups import (
    MachineGroup,
    Slots,
    Window,
    machine_count,
    machine_parts,
    part_count,
    part_template,
    slots_of,
)
from dcx.core.ids import required_machine_name
from dcx.core.limits import paused_gc
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
    build,
)
from dcx.formats.slurm import SCHEMA
from dcx.parsing.hostlist import Hostlist, HostlistError, split_expressions
from dcx.parsing.traces import MAX_ERRORS, ErrorBudget, decode_text

PREFIX = "slurm:"
CONFIG = PREFIX + "config"

MAX_NODES = 1 << 20
"""Most nodes a file may define (they may be read back one by one); a hostlist naming more
is refused."""
MAX_GPUS = 1 << 16
"""GPUs per node become one model object each."""

_UINT16, _UINT32, _UINT64 = (1 << 16) - 1, (1 << 32) - 1, (1 << 64) - 1
_NODE_WIDTHS = {
    "Boards": _UINT16, "CoreSpecCount": _UINT16, "CoresPerSocket": _UINT16, "CPUs": _UINT16,
    "Sockets": _UINT16, "SocketsPerBoard": _UINT16, "ThreadsPerCore": _UINT16,
    "RealMemory": _UINT64, "MemSpecLimit": _UINT64, "TmpDisk": _UINT32, "Weight": _UINT32,
    "RestrictedCoresPerGPU": _UINT16,
}
"""The unsigned width Slurm stores each number in (``read_config.c``)."""

NODE_KEYS = (
    "NodeName", "NodeHostname", "NodeAddr", "BcastAddr", "CPUs", "Boards", "SocketsPerBoard",
    "Sockets", "CoresPerSocket", "ThreadsPerCore", "RealMemory", "TmpDisk", "Gres",
    "Features", "Weight", "State", "Reason", "CoreSpecCount", "CPUSpecList", "CpuBind",
    "MemSpecLimit", "Parameters", "Port", "RestrictedCoresPerGPU", "Topology", "TRESWeights",
)
"""Every NodeName key, in the order the writer writes them."""
PARTITION_KEYS = (
    "PartitionName", "Nodes", "Default", "MaxTime", "DefaultTime", "State", "MaxNodes",
    "MinNodes", "Hidden", "RootOnly", "ReqResv", "LLN", "DisableRootJobs", "ExclusiveUser",
    "ExclusiveTopo", "PowerDownOnIdle", "Priority", "PriorityJobFactor", "PriorityTier",
    "GraceTime", "MaxCPUsPerNode", "MaxCPUsPerSocket", "DefCPUPerGPU", "DefMemPerCPU",
    "DefMemPerGPU", "DefMemPerNode", "MaxMemPerCPU", "MaxMemPerNode", "ResumeTimeout",
    "SuspendTime", "SuspendTimeout", "AllocNodes", "AllowAccounts", "AllowGroups", "AllowQos",
    "Alternate", "CpuBind", "DenyAccounts", "DenyQos", "OverSubscribe", "OverTimeLimit",
    "PreemptMode", "QOS", "SelectTypeParameters", "Shared", "TRESBillingWeights",
)
PARTITION_LISTS = (("AllowGroups", "allow_groups"), ("AllowAccounts", "allow_accounts"),
                   ("DenyAccounts", "deny_accounts"), ("AllowQos", "allow_qos"),
                   ("DenyQos", "deny_qos"))
"""Partition keys that list who may use it, and the ``Partition`` field each fills."""
_MODELLED_PARTITION_KEYS = frozenset({"PartitionName", "Nodes"} | {
    key for key, _ in PARTITION_LISTS})
DOWN_KEYS = ("DownNodes", "Reason", "State")
"""The keys of a DownNodes line (``read_config.c`` knows no others)."""
DEFAULT_PARTITION = Partition(name="all", machines=None, extras={PREFIX + "Default": "YES"})
"""The partition written for nodes that belong to none: slurmctld starts only with one."""
DOWN_DEFAULT_REASON = "Set in slurm.conf"
"""The reason slurmctld gives the nodes of a DownNodes line that names none."""
_NODE_LOOKUP = {key.lower(): key for key in NODE_KEYS} | {"procs": "CPUs",
                                                           "feature": "Features"}
_PARTITION_LOOKUP = {key.lower(): key for key in PARTITION_KEYS}
_DOWN_LOOKUP = {key.lower(): key for key in DOWN_KEYS}
_NODE_UPPER = frozenset({"State"})
_GRES_CONF_KEYS = frozenset({"name", "autodetect", "file", "multiplefiles"})
"""Keys only gres.conf has: a line opening with one, or a NodeName line holding one, is a
gres.conf line."""
_PARTITION_UPPER = frozenset({
    "Default", "State", "MaxTime", "DefaultTime", "MaxNodes", "Hidden", "RootOnly", "ReqResv",
    "LLN", "DisableRootJobs", "ExclusiveUser", "ExclusiveTopo", "PowerDownOnIdle"})
_KINDS = {
    "node": ("NodeName", _NODE_LOOKUP, _NODE_UPPER),
    "partition": ("PartitionName", _PARTITION_LOOKUP, _PARTITION_UPPER),
    "down": ("DownNodes", _DOWN_LOOKUP, _NODE_UPPER),
}
"""Per kind of line: its first key, its keys by lower-case spelling, the keys whose words
are upper-cased. The kind also names the line's record in the schema's ``$defs``."""
_ADDRESS_KEYS = ("NodeHostname", "NodeAddr", "BcastAddr")
_PER_NODE_KEYS = (*_ADDRESS_KEYS, "Port")
"""Keys whose value is a list with one item per node of the line, or one item for all of
them (``node_conf.c``'s ``expand_nodeline_info``); kept per node."""
_MAX_PORT = 0xFFFF
_CPU_KEYS = frozenset({"CPUs", "Boards", "SocketsPerBoard", "Sockets", "CoresPerSocket",
                       "ThreadsPerCore"})
_MODELLED_NODE_KEYS = _CPU_KEYS | {"NodeName", "RealMemory", "TmpDisk", "Gres", "Features",
                                   "State"}
_EXTRA_NODE_KEYS = tuple(key for key in NODE_KEYS if key not in _MODELLED_NODE_KEYS)
"""Node keys kept verbatim in ``Machine.extras``."""
_PART_FIELDS = ("cpus", "gpus", "memory", "storage", "features", "resources", "state_label")
_RESERVED_CONFIG = frozenset({"nodename", "partitionname", "downnodes", "clustername",
                              "grestypes", "include"}) | _GRES_CONF_KEYS
"""First keys of lines the reader does not keep as written (``CONFIG``)."""

STATE_OF = {
    "UNKNOWN": MachineState.ACTIVE, "DOWN": MachineState.FAILURE,
    "FAIL": MachineState.FAILURE, "DRAIN": MachineState.MAINTENANCE,
    "FAILING": MachineState.MAINTENANCE, "FUTURE": MachineState.HALT,
    "CLOUD": MachineState.HALT,
}
WORD_FOR: dict[MachineState, str | None] = {
    MachineState.ACTIVE: None, MachineState.FAILURE: "DOWN",
    MachineState.MAINTENANCE: "DRAIN", MachineState.HALT: "FUTURE",
}

_PAIR = re.compile(r'[ \t\f\v]*([A-Za-z0-9_.]+)[ \t\f\v]*=[ \t\f\v]*(?:"([^"]*)"|(\S+))'
                   r'(?=[ \t\f\v]|$)')
_NODE_NAME = re.compile(r"[A-Za-z0-9._+@-]+")
_ADDRESS = re.compile(r"[A-Za-z0-9._+@:%-]+")
_DIGIT = re.compile(r"[0-9]")
_ONE_CORE = ProcessingUnit(cores=1)
"""Addresses may also be IPv6 (``fe80::1``, ``fe80::1%eth0``)."""
_WORD = re.compile(r'[^\s,"#=\\]+')
_GRES_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_GRES_TYPE = re.compile(r"[A-Za-z0-9_.+-]*[A-Za-z_.+-][A-Za-z0-9_.+-]*")
_GRES_COUNT = re.compile(r"([0-9]+)([KMGTP]?)")
_SUFFIX_POWER = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_CONFIG_KEY = re.compile(r"[A-Za-z0-9_.]+")


# --------------------------------------------------------------------------- lines


@dataclass(frozen=True)
class _Pair:
    key: str
    value: str
    line: int
    column: int
    """Of the value's first character (inside its quotes)."""
    key_column: int = 0


@dataclass
class _Logical:
    """One logical line (continuations joined, comments and escapes removed) and where each
    of its characters came from."""

    text: str
    starts: list[int]
    """Offsets in ``text`` where a run of characters from one physical place begins."""
    places: list[tuple[int, int]]
    """(line, column) of each run's first character."""

    def place(self, offset: int) -> tuple[int, int]:
        run = max(bisect_right(self.starts, offset) - 1, 0)
        line, column = self.places[run]
        return line, column + offset - self.starts[run]


def _logical_lines(text: str) -> Iterator[_Logical]:
    physical = text.split("\n")
    index = 0
    while index < len(physical):
        raw = physical[index].removesuffix("\r")
        number = index + 1
        index += 1
        if "\\" not in raw:
            cut = raw.find("#")
            body = raw if cut < 0 else raw[:cut]
            if body.strip():
                yield _Logical(body, [0], [(number, 1)])
            continue
        chars: list[tuple[str, int, int]] = []
        while True:
            kept = _strip_comment(raw)
            continued = _continues(kept)
            if continued is not None:
                kept = kept[:continued]
            chars.extend((char, number, column + 1) for column, char in enumerate(kept))
            if continued is None or index >= len(physical):
                break
            raw = physical[index].removesuffix("\r")
            number = index + 1
            index += 1
        unescaped = _unescape(chars)
        if "".join(char for char, _, _ in unescaped).strip():
            yield _Logical("".join(char for char, _, _ in unescaped),
                           list(range(len(unescaped))),
                           [(line, column) for _, line, column in unescaped])


def _strip_comment(raw: str) -> str:
    backslashes = 0
    for position, char in enumerate(raw):
        if char == "#" and backslashes % 2 == 0:
            return raw[:position]
        backslashes = backslashes + 1 if char == "\\" else 0
    return raw


def _continues(kept: str) -> int | None:
    """Where the continuation backslash starts when the line continues, else ``None``."""
    body = kept.rstrip()
    run = len(body) - len(body.rstrip("\\"))
    return len(body) - 1 if run % 2 == 1 else None


def _unescape(chars: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    kept: list[tuple[str, int, int]] = []
    position = 0
    while position < len(chars):
        if chars[position][0] == "\\" and position + 1 < len(chars):
            position += 1
        elif chars[position][0] == "\\":
            position += 1
            continue
        kept.append(chars[position])
        position += 1
    return kept


# --------------------------------------------------------------------------- hostlists


class _SlurmHostlistError(ValueError):
    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason


def expand_hostlist(text: str, limit: int = MAX_NODES,
                    characters: re.Pattern[str] = _NODE_NAME) -> list[str]:
    """The hosts of a Slurm hostlist, in order; ``_SlurmHostlistError`` names the position
    and the reason. Outside brackets, names consist of ``characters``."""
    hosts: list[str] = []
    for expression, offset in split_expressions(text):
        if expression == "":
            raise _SlurmHostlistError(offset, "empty host name (doubled, leading or trailing "
                                      "comma)")
        hosts.extend(_expand_expression(expression, offset, limit - len(hosts), characters))
        if len(hosts) > limit:
            raise _SlurmHostlistError(offset, f"more than {limit:,} hosts")
    return hosts


def _expand_expression(expression: str, offset: int, budget: int,
                       characters: re.Pattern[str]) -> list[str]:
    last_close = expression.rfind("]")
    if last_close >= 0 and last_close != len(expression) - 1 and "[" in expression:
        raise _SlurmHostlistError(offset + last_close + 1, "text after the last bracket "
                                  "(Slurm reads none)")
    if expression.count("[") <= 1:
        for position, char in enumerate(expression):
            if char not in "[],-" and not characters.fullmatch(char):
                raise _SlurmHostlistError(offset + position,
                                          f"character {char!r} cannot appear in a host name")
        try:
            decoded = Hostlist.decode(expression)
        except HostlistError as problem:
            raise _SlurmHostlistError(offset + problem.position, problem.reason) from None
        if len(decoded) > budget:
            raise _SlurmHostlistError(offset, f"more than {MAX_NODES:,} hosts")
        return list(decoded)
    # Several bracket groups: a product, the first group outermost (Slurm's prefix ranges).
    names = [""]
    position = 0
    while position < len(expression):
        opening = expression.find("[", position)
        if opening < 0:
            literal = expression[position:]
            names = [name + literal for name in names]
            break
        literal = expression[position:opening]
        closing = expression.find("]", opening)
        if closing < 0:
            raise _SlurmHostlistError(offset + opening, "'[' is never closed")
        for index, char in enumerate(literal):
            if not characters.fullmatch(char):
                raise _SlurmHostlistError(offset + position + index,
                                          f"character {char!r} cannot appear in a host name")
        try:
            labels = list(Hostlist.decode(expression[opening:closing + 1]))
        except HostlistError as problem:
            raise _SlurmHostlistError(offset + opening + problem.position,
                                      problem.reason) from None
        if len(names) * len(labels) > budget:
            raise _SlurmHostlistError(offset + opening, f"more than {MAX_NODES:,} hosts")
        names = [name + literal + label for name in names for label in labels]
        position = closing + 1
    return names


def encode_hostlist(hosts: Iterable[str]) -> str:
    """A hostlist Slurm reads back as ``hosts`` in order: ranges where the number ends the
    name, other hosts one by one (Slurm allows no text after the last bracket)."""
    parts: list[str] = []
    for group in Hostlist.from_hosts(hosts).groups:
        if group.suffix:
            parts.extend(group.hosts())
        else:
            parts.append(group.encode())
    return ",".join(parts)


_NODE_NAME_LINES = re.compile(r"[A-Za-z0-9._+@-]+(?:\n[A-Za-z0-9._+@-]+)*")
_RESERVED_NAME_LINE = re.compile(r"^(?:ALL|DEFAULT)$", re.IGNORECASE | re.MULTILINE)


def _all_node_names(names: list[str]) -> bool:
    """``all(map(is_node_name, names))``, matched as one text (a million names of a
    hostlist are checked at the speed of one regular expression)."""
    try:
        joined = "\n".join(names)
    except TypeError:  # a name that is no text
        return False
    return _NODE_NAME_LINES.fullmatch(joined) is not None \
        and joined.count("\n") == len(names) - 1 \
        and _RESERVED_NAME_LINE.search(joined) is None


def is_node_name(name: str) -> bool:
    """A name Slurm takes for a node: letters, digits and ``._+@-``, not ALL or DEFAULT."""
    return _NODE_NAME.fullmatch(name) is not None and name.upper() not in ("ALL", "DEFAULT")


# --------------------------------------------------------------------------- reading


@dataclass
class _Line:
    number: int
    column: int
    kind: str
    """``node``, ``partition``, ``down`` (DownNodes), ``gres`` (a gres.conf line) or
    ``config``."""
    pairs: list[_Pair]
    values: dict[str, _Pair] = field(default_factory=dict)
    """Canonical key → its pair (node and partition lines)."""


@dataclass
class _Node:
    """What one NodeName line (defaults applied) says about each of its nodes."""

    line: _Line
    names: tuple[str, ...]
    machine: Machine
    addresses: dict[str, list[str]]


class _Reader(ErrorBudget):
    def __init__(self) -> None:
        super().__init__()
        self.broken_lines: set[int] = set()

    def at(self, pair: _Pair, message: str, code: str, *, warn: bool = False,
           offset: int = 0) -> None:
        make = warning if warn else error
        self.report(make(message, code, line=pair.line, column=pair.column + offset,
                         pointer=f"/lines/{pair.line}/{pair.key}"))


def read(data: bytes) -> ReadResult:
    with paused_gc():
        return _read(data)


def _read(data: bytes) -> ReadResult:
    text, problem = decode_text(data, "slurm")
    if problem is not None:
        return ReadResult(None, (problem,))
    assert text is not None
    reader = _Reader()
    lines = _parse_lines(text, reader)
    records = {str(line.number): {key: pair.value for key, pair in line.values.items()}
               for line in lines if line.kind in _KINDS and line.values}
    _gres_conf_lines(lines, reader)
    _schema_errors(records, lines, reader)
    cluster_name: str | None = None
    gres_types: set[str] = set()
    config: list[list[list[str]]] = []
    node_sets: set[str] = set()
    node_set_lines: list[list[_Pair]] = []
    for line in lines:
        if line.kind != "config":
            continue
        kept: list[list[str]] = []
        for pair in line.pairs:
            lowered = pair.key.lower()
            if lowered == "clustername":
                cluster_name = pair.value
            elif lowered == "grestypes":
                gres_types.update(item.lower() for item in pair.value.split(",") if item)
            else:
                if lowered == "include":
                    reader.at(pair, "Include names another file; dcx reads this file alone "
                              "(kept, not followed, not written back)", "slurm.include",
                              warn=True)
                if lowered == "nodeset" and pair is line.pairs[0]:
                    node_sets.add(pair.value)
                    node_set_lines.append(line.pairs)
                kept.append([pair.key, pair.value])
        if kept:
            config.append(kept)
    nodes = _nodes([line for line in lines if line.kind == "node"], reader, gres_types)
    names: dict[str, _Pair] = {}
    for node in nodes:
        for name in node.names:
            if name in names:
                first = names[name]
                reader.at(node.line.values["NodeName"], f"node {name!r} is defined again "
                          f"(first on line {first.line})", "slurm.duplicate-node")
            else:
                names[name] = node.line.values["NodeName"]
    partitions = _partitions([line for line in lines if line.kind == "partition"], reader,
                             set(names), node_sets)
    down = _down_nodes([line for line in lines if line.kind == "down"], reader, names)
    if reader.stopped:
        reader.diagnostics.append(error(f"more than {MAX_ERRORS} errors; reading stopped",
                                        "slurm.too-many-errors"))
    if reader.errors:
        return ReadResult(None, tuple(reader.diagnostics))
    slots = _slots(nodes, down)
    extras: dict[str, Any] = {}
    if config:
        extras[CONFIG] = config
    members = _node_set_members(node_set_lines, slots) if node_set_lines else {}
    environment = Environment(
        datacenters=(Datacenter(rooms=(Room(racks=(Rack(slots=slots_of(slots)),)),)),),
        name=cluster_name, extras=extras,
        partitions=tuple(partition_of(values, members) for values in partitions))
    return ReadResult(Document(environment=environment), tuple(reader.diagnostics),
                      locator=_slot_locator(nodes))


def _slots(nodes: list[_Node], down: Mapping[str, tuple[MachineState | None, str | None,
                                                         str]]) -> list[Machine | MachineGroup]:
    """The machines of the NodeName lines in order: a line's nodes as one group when they
    differ in their names alone (no per-node addresses, no DownNodes line naming one)."""
    slots: list[Machine | MachineGroup] = []
    for node in nodes:
        if len(node.names) > 1 and not node.addresses and (
                not down or not any(name in down for name in node.names)):
            slots.append(MachineGroup(node.machine, len(node.names), names=node.names))
            continue
        for index, name in enumerate(node.names):
            own = dict(node.machine.extras)
            for key, hosts in node.addresses.items():
                own[PREFIX + key] = hosts[index]
            values = dict(node.machine.__dict__)
            if name in down:
                state, label, own[PREFIX + "Reason"] = down[name]
                if state is not None:
                    values["state"], values["state_label"] = state, label
            values["name"], values["extras"] = name, own
            slots.append(build(Machine, values))  # replace() costs 5x more per node
    return slots


_SLOT_POINTER = re.compile(r"/environment/datacenters/0/rooms/0/racks/0/slots/([0-9]+)")


def _slot_locator(nodes: list[_Node]) -> Callable[[str], tuple[int | None, int | None]]:
    """Where a slot's machine came from: its NodeName line (found from the slot's index
    when asked, rather than mapped for every node)."""
    firsts: list[int] = []
    places: list[tuple[int, int]] = []
    total = 0
    for node in nodes:
        firsts.append(total)
        places.append((node.line.number, node.line.column))
        total += len(node.names)

    def locate(pointer: str) -> tuple[int | None, int | None]:
        match = _SLOT_POINTER.fullmatch(pointer)
        if match is None or int(match.group(1)) >= total:
            return None, None
        return places[bisect_right(firsts, int(match.group(1))) - 1]

    return locate


def _parse_lines(text: str, reader: _Reader) -> list[_Line]:
    lines: list[_Line] = []
    for logical in _logical_lines(text):
        if reader.stopped:
            break
        pairs: list[_Pair] = []
        position = 0
        body = logical.text
        while True:
            while position < len(body) and body[position] in " \t\f\v\r":
                position += 1
            if position >= len(body):
                break
            match = _PAIR.match(body, position)
            if match is None:
                line, column = logical.place(position)
                reader.report(error("expected Key=Value (a key of letters, digits, '_' or '.', "
                                    "'=', then a value or a double-quoted string)",
                                    "slurm.syntax", line=line, column=column,
                                    pointer=f"/lines/{line}"))
                pairs = []
                break
            value = match.group(2) if match.group(2) is not None else match.group(3)
            line, column = logical.place(match.start(2) if match.group(2) is not None
                                         else match.start(3))
            pairs.append(_Pair(match.group(1), value, line, column,
                               logical.place(match.start(1))[1]))
            position = match.end()
        if not pairs:
            continue
        start_line, start_column = logical.place(0)
        entry = _Line(start_line, start_column, _kind(pairs), pairs)
        if entry.kind in _KINDS:
            _canonical_values(entry, reader)
        lines.append(entry)
    return lines


def _kind(pairs: list[_Pair]) -> str:
    first = pairs[0].key.lower()
    if first in _GRES_CONF_KEYS or (first == "nodename" and any(
            pair.key.lower() in _GRES_CONF_KEYS for pair in pairs)):
        return "gres"
    return next((kind for kind, (key, _, _) in _KINDS.items() if key.lower() == first),
                "config")


def _gres_conf_lines(lines: list[_Line], reader: _Reader) -> None:
    """One error for the gres.conf lines of the file, at the first: the file is refused."""
    found = [line for line in lines if line.kind == "gres"]
    if not found:
        return
    pair = next(pair for pair in found[0].pairs if pair.key.lower() in _GRES_CONF_KEYS)
    others = len(found) - 1
    more = f" (and {others} more gres.conf line{'s' * (others > 1)})" if others else ""
    reader.at(pair, f"{pair.key}= makes this a gres.conf line{more}; dcx reads slurm.conf, "
              "not gres.conf: convert slurm.conf, whose NodeName lines give each node's GPUs "
              "and other GRES with Gres= (Gres=gpu:a100:4); gres.conf's device files, core "
              "binding and links have no place in dcx's model", "slurm.gres-conf",
              offset=pair.key_column - pair.column)


def _canonical_values(line: _Line, reader: _Reader) -> None:
    what, lookup, upper = _KINDS[line.kind]
    for pair in line.pairs:
        key = lookup.get(pair.key.lower())
        if key is None:
            slurm_does = "ignores the rest of the line" if line.kind == "down" \
                else "refuses the file"
            reader.at(pair, f"unknown {what} key {pair.key!r} (Slurm {slurm_does}); "
                      "ignored", "slurm.unknown-key", warn=True,
                      offset=pair.key_column - pair.column)
            continue
        if key in line.values:
            reader.at(pair, f"{key} is given twice on this line; the last value is used",
                      "slurm.repeated-key", warn=True)
        value = pair.value.upper() if key in upper else pair.value
        line.values[key] = _Pair(key, value, pair.line, pair.column, pair.key_column)


def _schema_errors(records: dict[str, dict[str, str]], lines: list[_Line],
                   reader: _Reader) -> None:
    if not records:
        return
    from dcx.parsing.schemas import load_schema, schema_diagnostics

    found = schema_diagnostics(SCHEMA, {"lines": records})
    if not found:
        return
    by_number = {str(line.number): line for line in lines}
    if any(diagnostic.code == "schema.more-errors" for diagnostic in found):
        # Only the first errors are located; lines past them must not be read as valid.
        from dcx.parsing.schemas import schema_verdict

        reader.broken_lines.update(
            int(number) for number, record in records.items()
            if not schema_verdict(SCHEMA, {"lines": {number: record}}))
    definitions = load_schema(SCHEMA)["$defs"]
    for diagnostic in found:
        parts = diagnostic.pointer.split("/")
        line = by_number.get(parts[2]) if len(parts) > 2 else None
        if line is None:
            reader.report(diagnostic)
            continue
        reader.broken_lines.add(line.number)
        key = parts[3] if len(parts) > 3 else ""
        pair = line.values.get(key)
        if pair is None:
            reader.report(replace(diagnostic, line=line.number, column=line.column))
            continue
        rule = definitions[line.kind]["properties"].get(key, {})
        reference = rule.get("$ref", "").rsplit("/", 1)[-1]
        expected = rule.get("description") or definitions.get(reference, {}).get("description")
        if reference and definitions.get(reference, {}).get("description") and \
                rule.get("description"):
            expected = f"{rule['description']}: {definitions[reference]['description']}"
        message = (f"{key} is {pair.value!r}; expected {expected}" if expected
                   else diagnostic.message)
        reader.report(error(message, diagnostic.code, line=pair.line, column=pair.column,
                            pointer=diagnostic.pointer))


# -- nodes ---------------------------------------------------------------------------


def _nodes(lines: list[_Line], reader: _Reader, gres_types: set[str]) -> list[_Node]:
    defaults: dict[str, _Pair] = {}
    nodes: list[_Node] = []
    total = 0
    for line in lines:
        name = line.values["NodeName"]
        if name.value.upper() == "DEFAULT":
            for key in _ADDRESS_KEYS:
                if key in line.values:
                    reader.at(line.values[key], f"{key} is not allowed with NodeName=DEFAULT",
                              "slurm.default-address")
            if line.number not in reader.broken_lines:
                defaults.update({key: pair for key, pair in line.values.items()
                                 if key != "NodeName" and key not in _ADDRESS_KEYS})
            continue
        if line.number in reader.broken_lines:
            continue
        if name.value.upper() == "ALL":
            reader.at(name, "ALL is a reserved word, not a node name", "slurm.reserved-name")
            continue
        values = {**defaults, **line.values}
        node = _node(line, values, reader, gres_types)
        if node is None:
            continue
        total += len(node.names)
        if total > MAX_NODES:
            reader.at(name, f"more than {MAX_NODES:,} nodes in the file: beyond what dcx "
                      "models one by one", "slurm.too-large")
            break
        nodes.append(node)
    return nodes


def _hosts(pair: _Pair, reader: _Reader,
           characters: re.Pattern[str] = _NODE_NAME) -> list[str] | None:
    try:
        return expand_hostlist(pair.value, characters=characters)
    except _SlurmHostlistError as problem:
        reader.at(pair, f"invalid hostlist {pair.value!r}: {problem.reason} (character "
                  f"{problem.position + 1})", "slurm.hostlist", offset=problem.position)
        return None


def _ports(pair: _Pair, reader: _Reader) -> list[str] | None:
    """The ports of a ``Port`` value, as Slurm reads it: a list or range not already in
    brackets is bracketed, then expanded as a hostlist; each port is 1 to 65535."""
    text = pair.value
    if not text.startswith("[") and ("-" in text or "," in text):
        text = f"[{text}]"
    try:
        ports = expand_hostlist(text, characters=_DIGIT)
    except _SlurmHostlistError as problem:
        reader.at(pair, f"invalid Port {pair.value!r}: {problem.reason}", "slurm.hostlist")
        return None
    for port in ports:
        if not (port.isascii() and port.isdigit() and 0 < int(port) <= _MAX_PORT):
            reader.at(pair, f"Port {port!r} is not a port number (1 to {_MAX_PORT})",
                      "slurm.range")
            return None
    return [str(int(port)) for port in ports]


def _node(line: _Line, values: dict[str, _Pair], reader: _Reader,
          gres_types: set[str]) -> _Node | None:
    names = _hosts(values["NodeName"], reader)
    if names is None:
        return None
    for name in names if not _all_node_names(names) else ():
        if not is_node_name(name):
            reader.at(values["NodeName"], f"{name!r} is not a node name Slurm takes (letters, "
                      "digits and ._+@- only; not ALL or DEFAULT)", "slurm.hostlist")
            return None
    addresses: dict[str, list[str]] = {}
    extras: dict[str, Any] = {}
    for key in _PER_NODE_KEYS:
        if key not in values:
            continue
        hosts = _ports(values[key], reader) if key == "Port" \
            else _hosts(values[key], reader, _ADDRESS)
        if hosts is None:
            return None
        if len(hosts) not in (1, len(names)):
            noun = "ports" if key == "Port" else "hosts"
            reader.at(values[key], f"{key} names {len(hosts)} {noun} for {len(names)} nodes; "
                      "Slurm takes one per node, or one for all of them",
                      "slurm.address-count")
            return None
        if len(hosts) == 1:  # node_conf.c gives every node of the line the one value
            extras[PREFIX + key] = hosts[0]
        else:
            addresses[key] = hosts
    numbers: dict[str, int] = {}
    for key, width in _NODE_WIDTHS.items():
        if key in values:
            number = int(values[key].value)
            if number > width:
                reader.at(values[key], f"{key} is {number}; Slurm keeps it in "
                          f"{width.bit_length()} bits (at most {width})", "slurm.range")
                return None
            numbers[key] = number
    cpus = _cpus(numbers, values, reader, extras)
    gres = _gres(values.get("Gres"), reader, gres_types)
    if gres is None:
        return None
    gpus, resources = gres
    features = tuple(item for item in values["Features"].value.split(",") if item) \
        if "Features" in values else ()
    state, label = MachineState.ACTIVE, None
    if "State" in values:
        word = values["State"].value
        state = STATE_OF[word]
        label = None if word == WORD_FOR[state] else word
    for key in _EXTRA_NODE_KEYS:
        if key in values and key not in _PER_NODE_KEYS:
            extras[PREFIX + key] = values[key].value
    memory = (StorageUnit(capacity_mb=float(numbers["RealMemory"])),) \
        if "RealMemory" in numbers else ()
    storage = (StorageUnit(capacity_mb=float(numbers["TmpDisk"])),) \
        if "TmpDisk" in numbers else ()
    machine = Machine(state=state, state_label=label, cpus=cpus, gpus=gpus, memory=memory,
                      storage=storage, features=features, resources=resources, extras=extras)
    return _Node(line, tuple(names), machine, addresses)


def _cpus(numbers: dict[str, int], values: dict[str, _Pair], reader: _Reader,
          extras: dict[str, Any]) -> tuple[ProcessingUnit, ...]:
    """Sockets and cores as Slurm's ``_parse_nodename`` settles them, with a warning where
    it resets a value or gives its default (no CPU key at all: one CPU)."""
    if not _CPU_KEYS & values.keys():
        reader.at(values["NodeName"], "no CPUs, Sockets or CoresPerSocket: Slurm gives each "
                  "node its default of 1 CPU (one socket of one core); state CPUs= if the "
                  "nodes have more", "slurm.default-cpus", warn=True)
        return (_ONE_CORE,)

    def reset(key: str, message: str) -> None:
        reader.at(values[key], message, "slurm.cpu-topology", warn=True)

    for key in ("CoresPerSocket", "ThreadsPerCore", "SocketsPerBoard", "Sockets", "Boards"):
        if numbers.get(key) == 0:
            reset(key, f"{key}=0 is invalid; Slurm resets it to 1")
            numbers[key] = 1
    cores = numbers.get("CoresPerSocket", 1)
    threads = numbers.get("ThreadsPerCore", 1)
    boards = numbers.get("Boards", 1)
    given_cpus = numbers.get("CPUs")
    if given_cpus == 0:
        reset("CPUs", "CPUs=0 is invalid; Slurm resets it to 1")
        given_cpus = 1
    if "Sockets" in numbers and "SocketsPerBoard" in numbers:
        reset("Sockets", "Sockets and SocketsPerBoard are both given; Slurm uses "
              "SocketsPerBoard")
    if "SocketsPerBoard" in numbers:
        sockets = boards * numbers["SocketsPerBoard"]
    elif "Sockets" in numbers:
        sockets = numbers["Sockets"]
    elif given_cpus is not None and given_cpus // (cores * threads) and \
            not given_cpus % (cores * threads):
        sockets = given_cpus // (cores * threads)
    else:
        sockets = boards
    if sockets < boards:
        reset("Boards", f"Sockets ({sockets}) fewer than Boards ({boards}); Slurm resets "
              "Boards to 1")
        boards = 1
    full = sockets * cores * threads
    if given_cpus is not None and given_cpus not in (sockets, sockets * cores, full):
        reader.at(values["CPUs"], f"CPUs={given_cpus} is neither Sockets ({sockets}), "
                  f"Sockets*CoresPerSocket ({sockets * cores}) nor "
                  f"Sockets*CoresPerSocket*ThreadsPerCore ({full}); Slurm resets it to "
                  f"{full}", "slurm.cpus-mismatch", warn=True)
        given_cpus = full
    if full > _UINT16:
        reader.at(next(values[key] for key in values if key in _CPU_KEYS),
                  f"{full} CPUs; Slurm counts at most {_UINT16} per node", "slurm.range")
        return ()
    if threads != 1:
        extras[PREFIX + "ThreadsPerCore"] = str(threads)
    if given_cpus is not None and given_cpus != full:
        extras[PREFIX + "CPUs"] = str(given_cpus)
    if boards > 1:
        extras[PREFIX + "Boards"] = str(boards)
    unit = ProcessingUnit(cores=cores)
    return (unit,) * sockets


def _gres(pair: _Pair | None, reader: _Reader, gres_types: set[str]) -> tuple[
        tuple[ProcessingUnit, ...], tuple[NamedResource, ...]] | None:
    if pair is None or not pair.value:
        return (), ()
    gpus: list[ProcessingUnit] = []
    resources: list[NamedResource] = []
    offset = 0
    for item in pair.value.split(","):
        parts = item.split(":")
        name = parts[0]
        count = 1
        if len(parts) > 1 and _GRES_COUNT.fullmatch(parts[-1]):
            match = _GRES_COUNT.fullmatch(parts[-1])
            assert match is not None
            count = int(match.group(1)) * 1024 ** _SUFFIX_POWER[match.group(2)]
            parts = parts[:-1]
        flags = [part for part in parts[1:] if part.lower() == "no_consume"]
        if flags:
            reader.at(pair, f"Gres {item!r}: the no_consume flag is not kept (read as "
                      "consumable)", "slurm.gres-flag", warn=True, offset=offset)
        kinds = [part for part in parts[1:] if part.lower() != "no_consume"]
        if len(kinds) > 1 or not _GRES_NAME.fullmatch(name) or any(
                not _GRES_TYPE.fullmatch(kind) for kind in kinds):
            reader.at(pair, f"Gres {item!r} is not name[:type][:no_consume][:count] with a "
                      "count of digits and an optional K, M, G, T or P", "slurm.gres",
                      offset=offset)
            return None
        if name.lower() not in gres_types:
            reader.at(pair, f"Gres {name!r} is not listed in GresTypes (Slurm refuses the "
                      "node)", "slurm.gres-type", warn=True, offset=offset)
        kind = kinds[0] if kinds else None
        if name == "gpu":
            if len(gpus) + count > MAX_GPUS:
                reader.at(pair, f"more than {MAX_GPUS:,} GPUs on a node: beyond what dcx "
                          "models one by one", "slurm.too-large", offset=offset)
                return None
            gpus.extend([ProcessingUnit(cores=1, model=kind)] * count)
        elif count > _UINT64:
            reader.at(pair, f"Gres {item!r}: the count exceeds {_UINT64}", "slurm.range",
                      offset=offset)
            return None
        else:
            resources.append(NamedResource(name=name, amount=float(count), type=kind))
        offset += len(item) + 1
    return tuple(gpus), tuple(resources)


# -- down nodes ------------------------------------------------------------------------


def _down_nodes(lines: list[_Line], reader: _Reader, nodes: dict[str, _Pair]) -> dict[
        str, tuple[MachineState | None, str | None, str]]:
    """Node name → the state, state label and reason its DownNodes lines give it, applied in
    file order over the NodeName line's as slurmctld's ``_handle_downnodes_line`` does: State
    defaults to DOWN, UNKNOWN leaves the state as it was (``None`` here: the caller's), and
    a line without Reason gives Slurm's own. Undefined nodes are skipped, as in Slurm."""
    down: dict[str, tuple[MachineState | None, str | None, str]] = {}
    for line in lines:
        if line.number in reader.broken_lines:
            continue
        pair = line.values["DownNodes"]
        hosts = _hosts(pair, reader)
        if hosts is None:
            continue
        word = line.values["State"].value if "State" in line.values else "DOWN"
        state = None if word == "UNKNOWN" else STATE_OF[word]
        label = None if state is None or word == WORD_FOR[state] else word
        reason = line.values["Reason"].value if "Reason" in line.values \
            else DOWN_DEFAULT_REASON
        undefined = [host for host in hosts if host not in nodes]
        if undefined:
            reader.at(pair, f"DownNodes names {len(undefined)} node(s) no NodeName line "
                      f"defines ({', '.join(repr(host) for host in undefined[:3])}"
                      f"{', ...' if len(undefined) > 3 else ''}); Slurm logs an error and "
                      "skips them", "slurm.down-node", warn=True)
        for host in hosts:
            if host in nodes:
                before = down.get(host)
                if state is None and before is not None:
                    down[host] = (before[0], before[1], reason)
                else:
                    down[host] = (state, label, reason)
    return down


# -- partitions ------------------------------------------------------------------------


def _partitions(lines: list[_Line], reader: _Reader, nodes: set[str],
                node_sets: set[str]) -> list[dict[str, str]]:
    defaults: dict[str, _Pair] = {}
    seen: dict[str, int] = {}
    partitions: list[dict[str, str]] = []
    for line in lines:
        if line.number in reader.broken_lines:
            continue
        name = line.values["PartitionName"]
        if name.value.upper() == "DEFAULT":
            defaults.update({key: pair for key, pair in line.values.items()
                             if key != "PartitionName"})
            continue
        if name.value in seen:
            reader.at(name, f"partition {name.value!r} is defined again (first on line "
                      f"{seen[name.value]})", "slurm.duplicate-partition")
            continue
        seen[name.value] = line.number
        values = {**defaults, **line.values}
        if "Nodes" in values:
            _check_partition_nodes(values["Nodes"], name.value, reader, nodes, node_sets)
        partitions.append({key: values[key].value for key in PARTITION_KEYS if key in values})
    return partitions


def _check_partition_nodes(pair: _Pair, partition: str, reader: _Reader, nodes: set[str],
                           node_sets: set[str]) -> None:
    text = re.sub(r"\s+", ",", pair.value)
    if not text:
        return
    for expression, offset in split_expressions(text):
        if expression.upper() == "ALL" or expression in node_sets:
            continue
        try:
            hosts = expand_hostlist(expression)
        except _SlurmHostlistError as problem:
            reader.at(pair, f"invalid hostlist {expression!r}: {problem.reason}",
                      "slurm.hostlist", offset=offset + problem.position)
            return
        unknown = next((host for host in hosts if host not in nodes), None)
        if unknown is not None:
            reader.at(pair, f"partition {partition!r} names node {unknown!r}, which no "
                      "NodeName line defines", "slurm.partition-node", offset=offset)
            return


def partition_of(values: Mapping[str, str],
                 node_sets: Mapping[str, tuple[str, ...]]) -> Partition:
    """A ``PartitionName`` line's values (defaults applied) as the model's partition: its
    nodes (``ALL``: every machine; node set names resolved through ``node_sets``), its
    allow and deny lists (an allow list ``ALL``, in any case, is everyone), and its other
    keys as ``slurm:`` extras."""
    lists: dict[str, Any] = {}  # deny lists are never None: only an allow list is ALL
    for key, name in PARTITION_LISTS:
        if key in values:
            value = values[key]
            everyone = key.startswith("Allow") and value.upper() == "ALL"
            lists[name] = None if everyone else tuple(item for item in value.split(",") if item)
    return Partition(
        name=values["PartitionName"],
        machines=_partition_machines(values.get("Nodes", ""), node_sets), **lists,
        extras={PREFIX + key: value for key, value in values.items()
                if key not in _MODELLED_PARTITION_KEYS})


def _partition_machines(text: str, node_sets: Mapping[str, tuple[str, ...]],
                        ) -> tuple[str, ...] | None:
    """The node names of a partition's ``Nodes`` (checked by ``_check_partition_nodes``),
    each once, in the order it names them; ``None`` for ``ALL``."""
    names: dict[str, None] = {}
    for expression, _ in split_expressions(re.sub(r"\s+", ",", text)):
        if not expression:
            continue
        if expression.upper() == "ALL":
            return None
        hosts = node_sets.get(expression)
        names.update(dict.fromkeys(hosts if hosts is not None else expand_hostlist(expression)))
    return tuple(names)


def _node_set_members(lines: list[list[_Pair]], slots: list[Machine | MachineGroup],
                      ) -> dict[str, tuple[str, ...]]:
    """Each ``NodeSet`` line's nodes: those its ``Nodes`` hostlist names, or those with its
    ``Feature``, in node order (a hostlist Slurm would refuse names none)."""
    members: dict[str, tuple[str, ...]] = {}
    for pairs in lines:
        found: list[str] = []
        for pair in pairs[1:]:
            if pair.key.lower() == "nodes":
                with contextlib.suppress(_SlurmHostlistError):
                    found += expand_hostlist(re.sub(r"\s+", ",", pair.value))
            elif pair.key.lower() == "feature":
                for part in slots:
                    if pair.value not in part_template(part).features:
                        continue
                    if isinstance(part, MachineGroup):
                        found += part.names or ()
                    elif part.name is not None:
                        found.append(part.name)
        members[pairs[0].value] = tuple(dict.fromkeys(found))
    return members


def partition_pairs(partition: Partition) -> dict[str, str]:
    """The ``PartitionName`` line of ``partition``, key by key in the order the writer
    writes them: its ``slurm:`` extras, its nodes as a hostlist (``ALL`` for every
    machine; no ``Nodes`` for none), its lists comma-joined (an empty deny list left
    out)."""
    values = {key[len(PREFIX):]: value for key, value in partition.extras.items()
              if key.startswith(PREFIX)}
    values["PartitionName"] = partition.name
    if partition.machines is None:
        values["Nodes"] = "ALL"
    elif partition.machines:
        values["Nodes"] = encode_hostlist(partition.machines)
    for key, name in PARTITION_LISTS:
        items: tuple[str, ...] | None = getattr(partition, name)
        if items is not None and (items or key.startswith("Allow")):
            values[key] = ",".join(items)
    return {key: values[key] for key in PARTITION_KEYS if key in values}


# --------------------------------------------------------------------------- normal form


def _is_text(value: object) -> bool:
    """A value the writer can write so that it reads back as itself."""
    return isinstance(value, str) and '"' not in value and not any(
        ord(char) < 0x20 or ord(char) == 0x7F for char in value)


def _is_type_word(value: object) -> bool:
    return isinstance(value, str) and _GRES_TYPE.fullmatch(value) is not None \
        and value.lower() != "no_consume" and _GRES_COUNT.fullmatch(value) is None


def _whole(value: float, limit: int) -> int | None:
    if not math.isfinite(value) or value < 0:
        return None
    whole = math.floor(value)
    return whole if whole <= limit else None


@dataclass
class _Normalizer:
    """Builds the normal form and records the held field paths it changes. Machines read from
    one NodeName line share their parts (the same tuples), so a part set is normalised once
    (``_parts``)."""

    lost: set[str] = field(default_factory=set)
    taken: set[str] = field(default_factory=set)
    position: int = 0
    left_out: int = 0
    """Machines without a CPU count, left out."""
    memo: dict[tuple[str, int], tuple[object, Any, frozenset[str]]] = field(
        default_factory=dict)

    def machine(self, machine: Machine) -> Machine:
        self.position += 1
        name = required_machine_name(machine, self.position, is_node_name)
        if name in self.taken:
            name = f"node{self.position}"
            while name in self.taken:
                name += "_"
        self.taken.add(name)
        if machine.name is not None and name != machine.name:
            self.lost.add("machine.name")
        return self._shaped(machine, name)

    def group(self, group: MachineGroup) -> list[Machine | MachineGroup]:
        """A group stays one group, its template normalised once, when its members' names
        are node names not taken yet; otherwise its members are normalised one by one."""
        if group.names is None:
            return [self.machine(member) for member in group]
        names = list(group.names)  # once: a window of a decoded hostlist spells each name
        if not _all_node_names(names):
            return [self.machine(member) for member in group]
        fresh = set(names)
        if len(fresh) != group.count or not fresh.isdisjoint(self.taken):
            return [self.machine(member) for member in group]
        self.position += group.count
        self.taken |= fresh
        template = self._shaped(group.template, None)
        return [group if template is group.template else replace(group, template=template)]

    def slots(self, slots: Sequence[Machine | None]) -> Sequence[Machine | None]:
        if not isinstance(slots, Slots):
            return tuple(None if slot is None else self.machine(slot) for slot in slots
                         if slot is None or self.has_cpus(slot, 1))
        parts: list[Machine | MachineGroup | None] = []
        for part in slots.parts:
            if isinstance(part, MachineGroup):
                if self.has_cpus(part.template, part.count):
                    parts.extend(self.group(part))
            elif part is None or self.has_cpus(part, 1):
                parts.append(None if part is None else self.machine(part))
        return slots_of(parts)

    def has_cpus(self, machine: Machine, count: int) -> bool:
        """Whether ``machine`` keeps a CPU Slurm can count; if not, it is left out (a node
        line without one would give it Slurm's default of 1 CPU) with its ``count``
        members."""
        if self.cpus(machine.cpus):
            return True
        self.lost.add("machine.cpus")
        self.left_out += count
        return False

    def _shaped(self, machine: Machine, name: str | None) -> Machine:
        """``machine`` named ``name`` with its parts and extras in normal form."""
        parts = (machine.cpus, machine.gpus, machine.memory, machine.storage, machine.features,
                 machine.resources, machine.state, machine.state_label)
        normal = self._parts(parts)
        extras = self.extras(machine.extras, normal[0])
        # the part normalisers return the very objects they were given when nothing changes
        if name == machine.name and extras is machine.extras and normal[6] == parts[7] and all(
                after is before for after, before in zip(normal[:6], parts[:6], strict=True)):
            return machine
        values = dict(machine.__dict__)
        values.update(zip(_PART_FIELDS, normal, strict=True))
        values["name"], values["extras"] = name, extras
        return build(Machine, values)

    def _parts(self, parts: tuple[Any, ...]) -> tuple[Any, ...]:
        """The normal form of a machine's parts (all but its name and extras), once per part
        set: the machines of one NodeName line share the same part objects."""
        key = ("parts", hash(tuple(map(id, parts[:6])) + parts[6:]))
        hit = self.memo.get(key)
        if hit is not None and isinstance(hit[0], tuple) and hit[0][6:] == parts[6:] and all(
                a is b for a, b in zip(hit[0][:6], parts[:6], strict=True)):
            self.lost |= hit[2]
            result: tuple[Any, ...] = hit[1]
            return result
        saved, self.lost = self.lost, set()
        cpus, gpus, memory, storage, features, resources, state, label = parts
        result = (self.cpus(cpus), self.gpus(gpus),
                  self.capacity(memory, _UINT64, "machine.memory"),
                  self.capacity(storage, _UINT32, "machine.storage"),
                  self.features(features), self.resources(resources),
                  self.label(state, label))
        delta = frozenset(self.lost)
        self.lost = saved | delta
        self.memo[key] = (parts, result, delta)  # keeps the parts alive: their ids stay theirs
        return result

    def cpus(self, cpus: tuple[ProcessingUnit, ...]) -> tuple[ProcessingUnit, ...]:
        kept = tuple(cpu for cpu in cpus if cpu.cores > 0)
        if len(kept) != len(cpus):
            self.lost.add("machine.cpus")
        if len({cpu.cores for cpu in kept}) > 1:
            self.lost.add("machine.cpus.sockets")
            total = sum(cpu.cores for cpu in kept)
            rated = [(cpu.cores, cpu.clock_rate_hz) for cpu in kept if cpu.clock_rate_hz]
            weight = sum(cores for cores, _ in rated)
            clock = sum(c * (r or 0.0) for c, r in rated) / weight if weight else None
            kept = (replace(kept[0], cores=total, clock_rate_hz=clock),)
        if kept and (kept[0].cores > _UINT16 or len(kept) > _UINT16
                     or kept[0].cores * len(kept) > _UINT16):
            self.lost.add("machine.cpus")
            return ()
        return cpus if kept == cpus else kept

    def gpus(self, gpus: tuple[ProcessingUnit, ...]) -> tuple[ProcessingUnit, ...]:
        if not gpus:
            return gpus
        if len(gpus) > MAX_GPUS:
            self.lost.add("machine.gpus")
            gpus = gpus[:MAX_GPUS]
        types = [gpu.model if _is_type_word(gpu.model) else None for gpu in gpus]
        if None in types and any(types):
            types = [None] * len(gpus)
        normal = []
        for gpu, kind in zip(gpus, types, strict=True):
            vendor = (None, None, None, kind)
            if (gpu.manufacturer, gpu.family, gpu.generation, gpu.model) != vendor:
                self.lost.add("gpu.vendor")
                gpu = replace(gpu, manufacturer=None, family=None, generation=None, model=kind)
            normal.append(gpu)
        order = list(dict.fromkeys(types))
        grouped = tuple(sorted(normal, key=lambda gpu: order.index(gpu.model)))
        if grouped != tuple(normal):
            self.lost.add("machine.gpus")
        if any(key.startswith(PREFIX) for gpu in grouped for key in gpu.extras):
            self.lost.add("machine.extras")
            grouped = tuple(replace(gpu, extras=_without_own(gpu.extras)) for gpu in grouped)
        return gpus if grouped == gpus else grouped

    def capacity(self, units: tuple[StorageUnit, ...], limit: int,
                 path: str) -> tuple[StorageUnit, ...]:
        if not units:
            return units
        if any(key.startswith(PREFIX) for unit in units for key in unit.extras):
            self.lost.add("machine.extras")
            units = tuple(replace(unit, extras=_without_own(unit.extras)) for unit in units)
        total = sum(unit.capacity_mb for unit in units)
        whole = _whole(total, limit)
        if whole == total:
            return units
        self.lost.add(path)
        if whole is None:
            return ()
        return (replace(units[0], capacity_mb=float(whole)),)

    def features(self, features: tuple[str, ...]) -> tuple[str, ...]:
        kept = tuple(item for item in features
                     if isinstance(item, str) and _WORD.fullmatch(item) is not None)
        if kept != features:
            self.lost.add("machine.features")
            return kept
        return features

    def resources(self, resources: tuple[NamedResource, ...]) -> tuple[NamedResource, ...]:
        kept: list[NamedResource] = []
        seen: set[tuple[str, str | None]] = set()
        for resource in resources:
            key = (resource.name, resource.type)
            amount = _whole(resource.amount, _UINT64)
            if (_GRES_NAME.fullmatch(resource.name) is None or resource.name == "gpu"
                    or (resource.type is not None and not _is_type_word(resource.type))
                    or amount != resource.amount or resource.unit is not None
                    or resource.instances or key in seen):
                self.lost.add("machine.resources")
                continue
            seen.add(key)
            if resource.extras:
                self.lost.add("machine.resources")
                resource = replace(resource, extras={})
            kept.append(resource)
        return resources if tuple(kept) == resources else tuple(kept)

    def label(self, state: MachineState, label: str | None) -> str | None:
        if label is None:
            return None
        if STATE_OF.get(label) is state and label != WORD_FOR[state]:
            return label
        self.lost.add("machine.state_label")
        return None

    def extras(self, extras: dict[str, Any], cpus: tuple[ProcessingUnit, ...]) -> dict[str, Any]:
        if not any(key.startswith(PREFIX) for key in extras):
            return extras
        kept = {key: value for key, value in extras.items() if not key.startswith(PREFIX)}
        own = tuple((key, value) for key, value in extras.items() if key.startswith(PREFIX)
                    and key[len(PREFIX):] not in _PER_NODE_KEYS)
        try:
            hit = self.memo.get(("extras", hash((own, id(cpus)))))
        except TypeError:  # an unhashable value: not a string, so it is dropped below
            hit = None
        if hit is not None and hit[0] == (own, cpus):
            kept.update(hit[1])
        else:
            written = _kept_node_extras(dict(own), cpus)
            kept.update(written)
            if all(isinstance(value, str) for _, value in own):
                self.memo[("extras", hash((own, id(cpus))))] = ((own, cpus), written,
                                                                 frozenset())
        for key in _PER_NODE_KEYS:
            value = extras.get(PREFIX + key)
            if _is_per_node_value(key, value):
                kept[PREFIX + key] = value
        if len(kept) != len(extras):
            self.lost.add("machine.extras")
        return extras if kept == extras else kept


def _is_per_node_value(key: str, value: object) -> bool:
    """A node's own address or port, as the writer can spell it in a list of them."""
    if not isinstance(value, str):
        return False
    if key == "Port":
        return value.isascii() and value.isdigit() and str(int(value)) == value \
            and 0 < int(value) <= _MAX_PORT
    return _ADDRESS.fullmatch(value) is not None


def _kept_node_extras(own: dict[str, Any], cpus: tuple[ProcessingUnit, ...]) -> dict[str, str]:
    """The ``slurm:`` node extras (but addresses) that read back as they are on a machine with
    ``cpus``: values the schema takes, CPU counts consistent with the sockets."""
    kept: dict[str, str] = {}
    sockets = len(cpus)
    cores = cpus[0].cores if cpus else 0
    thread_count = 1
    for key in ("ThreadsPerCore", *_EXTRA_NODE_KEYS, "CPUs", "Boards"):
        value = own.get(PREFIX + key)
        if value is None or key in _PER_NODE_KEYS or not _node_value_reads_back(key, value):
            continue
        number = int(value) if key in ("CPUs", "Boards", "ThreadsPerCore") else 0
        if key == "ThreadsPerCore":
            if not cpus or number <= 1 or sockets * cores * number > _UINT16:
                continue
            thread_count = number
        if key == "CPUs" and (not cpus or number not in (sockets, sockets * cores)
                              or number == sockets * cores * thread_count):
            continue
        if key == "Boards" and (not cpus or number <= 1 or sockets % number):
            continue
        kept[PREFIX + key] = value
    return kept


def _without_own(extras: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in extras.items() if not key.startswith(PREFIX)}


def _node_value_reads_back(key: str, value: object) -> bool:
    if not isinstance(value, str):
        return False
    return _node_text_reads_back(key, value)


@lru_cache(maxsize=4096)
def _node_text_reads_back(key: str, value: str) -> bool:
    if not _is_text(value):
        return False
    if key in _NODE_WIDTHS and not (value.isascii() and value.isdigit()
                                    and int(value) <= _NODE_WIDTHS[key]):
        return False
    from dcx.parsing.schemas import schema_verdict

    record = {"NodeName": "n", key: value}
    return schema_verdict(SCHEMA, {"lines": {"1": record}})


def _normalized(document: Document) -> tuple[Document, frozenset[str]]:
    if any(key.startswith(PREFIX) for key in document.extras):
        document = replace(document, extras=_without_own(document.extras))
    environment = document.environment
    if environment is None:
        return document, frozenset()
    normalizer = _Normalizer()
    datacenters = tuple(replace(datacenter, rooms=tuple(
        replace(room, racks=tuple(replace(rack, slots=normalizer.slots(rack.slots))
                                  for rack in room.racks)) for room in datacenter.rooms))
        for datacenter in environment.datacenters)
    lost = normalizer.lost
    name = environment.name
    if name is not None and not (_is_text(name) and name):
        lost.add("environment.name")
        name = None
    extras = _environment_extras(environment.extras, lost)
    partitions = _normal_partitions(environment.partitions, normalizer.taken, lost)
    if not partitions and normalizer.taken:
        # slurmctld refuses a file without a partition ("No PartitionName information
        # available"): every node goes into one, the default
        partitions = (DEFAULT_PARTITION,)
    normal = replace(environment, datacenters=datacenters, name=name, extras=extras,
                     partitions=partitions)
    return replace(document, environment=normal), frozenset(lost)


def _environment_extras(extras: dict[str, Any], lost: set[str]) -> dict[str, Any]:
    if not any(key.startswith(PREFIX) for key in extras):
        return extras
    kept = _without_own(extras)
    config: list[list[list[str]]] = []
    for line in extras.get(CONFIG, []) if isinstance(extras.get(CONFIG), list) else []:
        pairs = [pair for pair in line if isinstance(pair, list) and len(pair) == 2
                 and isinstance(pair[0], str) and _CONFIG_KEY.fullmatch(pair[0])
                 and pair[0].lower() not in _RESERVED_CONFIG and _is_text(pair[1])
                 and "\n" not in pair[1]] if isinstance(line, list) else []
        if pairs:
            config.append(pairs)
    if config:
        kept[CONFIG] = config
    if kept != extras:
        lost.add("environment.extras")
    return kept


def _normal_partitions(partitions: tuple[Partition, ...], nodes: set[str],
                       lost: set[str]) -> tuple[Partition, ...]:
    """The partitions that read back as they are, each naming its nodes once and keeping
    only ``slurm:`` extras; a partition whose line would not read back as itself (a node
    that is gone, a value Slurm cannot take, a name already used) is left out."""
    kept: list[Partition] = []
    names: set[str] = set()
    for partition in partitions:
        machines = partition.machines
        normal = replace(
            partition, machines=None if machines is None else tuple(dict.fromkeys(machines)),
            extras={key: value for key, value in partition.extras.items()
                    if key.startswith(PREFIX)})
        if normal != partition:
            lost.add("environment.partitions")
        pairs = _written_partition(normal)
        if pairs is None or not _partition_reads_back(pairs, nodes, set(), names) \
                or partition_of(pairs, {}) != normal:
            lost.add("environment.partitions")
            continue
        kept.append(normal)
        names.add(normal.name)
    return tuple(kept)


def _written_partition(partition: Partition) -> dict[str, str] | None:
    """``partition_pairs``, or ``None`` when a value is no text the writer can write."""
    lists = [getattr(partition, field_name) or () for _, field_name in PARTITION_LISTS]
    if not (_is_text(partition.name)
            and all(_is_text(value) for value in partition.extras.values())
            and all(_is_text(name) for name in partition.machines or ())
            and all(_is_text(item) for items in lists for item in items)):
        return None
    return partition_pairs(partition)


def _partition_reads_back(partition: object, nodes: set[str], node_sets: set[str],
                          names: set[str]) -> bool:
    if not isinstance(partition, dict) or not all(
            key in _PARTITION_LOOKUP.values() and _is_text(value)
            for key, value in partition.items()):
        return False
    name = partition.get("PartitionName")
    if not isinstance(name, str) or name.upper() == "DEFAULT" or name in names:
        return False
    if any(partition[key] != partition[key].upper() for key in _PARTITION_UPPER
           if key in partition):
        return False
    from dcx.parsing.schemas import schema_verdict

    if not schema_verdict(SCHEMA, {"lines": {"1": partition}}):
        return False
    reader = _Reader()
    pair = _Pair("Nodes", partition.get("Nodes", ""), 1, 1)
    _check_partition_nodes(pair, name, reader, nodes, node_sets)
    return not reader.diagnostics


def normal_form(document: Document) -> Document:
    """What slurm.conf makes of ``document`` (see Writing): node names Slurm takes, equal
    sockets, whole megabytes, GPUs grouped by type, Slurm words for features, resources and
    labels, and ``slurm:`` data that reads back as it is."""
    return _normalized(document)[0]


def normal_form_losses(document: Document) -> frozenset[str]:
    """The field paths ``normal_form`` changes in ``document``."""
    return _normalized(document)[1]


def leaves_out(document: Document) -> str:
    """Why slurm.conf leaves out machines of ``document``, in one line: those without a CPU
    count (a node line without one gives the node Slurm's default of 1 CPU)."""
    if document.environment is None:
        return ""
    normalizer = _Normalizer()
    lacking = [part for part in machine_parts(document.environment)
               if not normalizer.cpus(part_template(part).cpus)]
    if not lacking:
        return ""
    first = lacking[0].member(0) if isinstance(lacking[0], MachineGroup) else lacking[0]
    name = first.name or first.id or "the first"
    every = machine_count(document.environment)
    return (f"slurm.conf needs a CPU count for every node (without one Slurm counts 1 CPU); "
            f"{sum(map(part_count, lacking)):,} of {every:,} machines lack it (first: {name})")


# --------------------------------------------------------------------------- writing


def write(document: Document) -> WriteResult:
    environment = normal_form(document).environment or Environment()
    parts = list(machine_parts(environment))
    templates = [part_template(part) for part in parts]
    lines: list[str] = []
    if environment.name is not None:
        lines.append(f"ClusterName={_quoted(environment.name)}")
    for pairs in environment.extras.get(CONFIG, []):
        lines.append(" ".join(f"{key}={_quoted(value)}" for key, value in pairs))
    gres_types = list(dict.fromkeys(
        ["gpu"] * any(machine.gpus for machine in templates)
        + [resource.name for machine in templates for resource in machine.resources]))
    if gres_types:
        lines.append("GresTypes=" + ",".join(gres_types))
    run: list[Machine | MachineGroup] = []
    shape: tuple[tuple[str, str], ...] | None = None
    shapes: dict[tuple[Any, ...], tuple[tuple[str, str], ...]] = {}
    for part, machine in zip(parts, templates, strict=True):
        # Machines of one NodeName line share their parts: their pairs are computed once.
        # The ids stay valid: every part is alive in the document while it is written.
        key = (id(machine.cpus), id(machine.gpus), id(machine.memory), id(machine.storage),
               id(machine.features), id(machine.resources), machine.state,
               machine.state_label, tuple(
                   (name, "" if name[len(PREFIX):] in _PER_NODE_KEYS else value)
                   for name, value in machine.extras.items() if name.startswith(PREFIX)))
        pairs = shapes.get(key)
        if pairs is None:
            pairs = shapes[key] = _node_pairs(machine)
        if shape is not None and pairs != shape:
            lines.append(_node_line(run, shape))
            run = []
        shape = pairs
        run.append(part)
    if run and shape is not None:
        lines.append(_node_line(run, shape))
    for partition in environment.partitions:
        lines.append(" ".join(f"{key}={_quoted(value)}"
                              for key, value in partition_pairs(partition).items()))
    return WriteResult(("\n".join(lines) + "\n").encode() if lines else b"")


def _quoted(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("#", "\\#")
    return f'"{escaped}"' if not escaped or any(char.isspace() for char in escaped) \
        else escaped


def _node_pairs(machine: Machine) -> tuple[tuple[str, str], ...]:
    """The NodeName keys of a machine in normal form, but its name and addresses, which the
    line spells as hostlists: machines with equal pairs share a line."""
    pairs: list[tuple[str, str]] = [(key, "") for key in _PER_NODE_KEYS
                                    if PREFIX + key in machine.extras]
    extras = machine.extras
    if machine.cpus:
        sockets, cores = len(machine.cpus), machine.cpus[0].cores
        threads = extras.get(PREFIX + "ThreadsPerCore", "1")
        boards = extras.get(PREFIX + "Boards")
        if PREFIX + "CPUs" in extras:
            pairs.append(("CPUs", extras[PREFIX + "CPUs"]))
        if boards is not None:
            pairs += [("Boards", boards), ("SocketsPerBoard", str(sockets // int(boards)))]
        elif cores == 1 and threads == "1" and PREFIX + "CPUs" not in extras:
            pairs.append(("CPUs", str(sockets)))  # Slurm infers one core per socket
        if boards is not None or not (cores == 1 and threads == "1"
                                      and PREFIX + "CPUs" not in extras):
            if boards is None:
                pairs.append(("Sockets", str(sockets)))
            pairs.append(("CoresPerSocket", str(cores)))
            if threads != "1":
                pairs.append(("ThreadsPerCore", threads))
    if machine.memory:
        pairs.append(("RealMemory", str(int(machine.memory_mb))))
    if machine.storage:
        pairs.append(("TmpDisk", str(int(machine.storage_mb))))
    gres = _gres_text(machine)
    if gres:
        pairs.append(("Gres", gres))
    if machine.features:
        pairs.append(("Features", ",".join(machine.features)))
    word = machine.state_label or WORD_FOR[machine.state]
    for key in _EXTRA_NODE_KEYS:
        if key == "State" or key in _PER_NODE_KEYS:
            continue
        if key == "Reason" and word is not None:
            pairs.append(("State", word))
            word = None
        if PREFIX + key in extras:
            pairs.append((key, extras[PREFIX + key]))
    if word is not None:
        pairs.append(("State", word))
    return tuple(pairs)


def _gres_text(machine: Machine) -> str:
    items: list[str] = []
    counts: dict[str | None, int] = {}
    for gpu in machine.gpus:
        counts[gpu.model] = counts.get(gpu.model, 0) + 1
    items += [f"gpu:{kind}:{count}" if kind else f"gpu:{count}"
              for kind, count in counts.items()]
    items += [f"{resource.name}:{resource.type}:{int(resource.amount)}" if resource.type
              else f"{resource.name}:{int(resource.amount)}" for resource in machine.resources]
    return ",".join(items)


def _spelled_range(run: list[Machine | MachineGroup]) -> str | None:
    """The hostlist of a run that is one group named by a whole decoded hostlist of one
    range without a suffix (``n[0-1048575]``): that range, spelled without expanding it;
    ``None`` for any other run (``encode_hostlist`` then compacts its names)."""
    if len(run) != 1 or not isinstance(run[0], MachineGroup):
        return None
    names = run[0].names
    if not isinstance(names, Window) or names.start != 0 or not isinstance(
            names.base, Hostlist) or names.stop != len(names.base):
        return None
    groups = names.base.groups
    if len(groups) != 1 or groups[0].suffix or len(groups[0].ranges) != 1:
        return None
    return groups[0].encode()


def _node_line(run: list[Machine | MachineGroup], pairs: tuple[tuple[str, str], ...]) -> str:
    """One NodeName line for the machines and groups of ``run`` (their pairs are equal), its
    names, addresses and ports spelled as hostlists (one value when all nodes share it)."""
    names = _spelled_range(run) or encode_hostlist(chain.from_iterable(
        part.names or () if isinstance(part, MachineGroup) else (part.name or "",)
        for part in run))
    words = [f"NodeName={names}"]
    for key, value in pairs:
        if key in _PER_NODE_KEYS:
            own = [(part.template if isinstance(part, MachineGroup) else part).extras[
                PREFIX + key] for part in run]
            # one value for every node when they share it, as Slurm reads one for all
            value = own[0] if len(set(own)) == 1 else encode_hostlist(chain.from_iterable(
                repeat(address, part.count) if isinstance(part, MachineGroup) else (address,)
                for address, part in zip(own, run, strict=True)))
        words.append(f"{key}={_quoted(value)}")
    return " ".join(words)
