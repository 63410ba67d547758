"""SSS's vocabulary shared by the reader and the writer: state words, byte and network
units, element names, and node references (List, Pattern, Range).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from dcx.core.model import MachineState
from dcx.parsing.hostlist import Hostlist, HostlistError

STATE_TABLE: dict[str, MachineState] = {
    "idle": MachineState.ACTIVE,
    "busy": MachineState.ACTIVE,
    "running": MachineState.ACTIVE,
    "reserved": MachineState.ACTIVE,
    "offline": MachineState.HALT,
    "configured": MachineState.HALT,
    "drained": MachineState.MAINTENANCE,
    "draining": MachineState.MAINTENANCE,
    "flush": MachineState.MAINTENANCE,
    "down": MachineState.FAILURE,
    "unknown": MachineState.FAILURE,
}
"""SSS state word (case-folded) → model state. Words not listed read as ACTIVE."""

STATE_WORD: dict[MachineState, str] = {
    MachineState.ACTIVE: "Idle",
    MachineState.HALT: "Offline",
    MachineState.MAINTENANCE: "Drained",
    MachineState.FAILURE: "Down",
}
"""The word the writer uses for a state when the machine has no usable ``state_label``."""

_BYTE_PREFIXES = ("", "K", "M", "G", "T", "P", "E", "Z", "Y")
BYTE_UNIT_EXPONENTS: dict[str, int] = {
    **{f"{prefix}B": power for power, prefix in enumerate(_BYTE_PREFIXES)},
    **{f"{prefix}iB": power for power, prefix in enumerate(_BYTE_PREFIXES) if prefix},
    "NB": 9,
    "DB": 10,
}
"""Byte-unit abbreviation → power of 2^10 (Appendix A). Case-sensitive."""

_BYTE_UNIT_NAMES: dict[str, int] = {
    "byte": 0, "kilobyte": 1, "megabyte": 2, "gigabyte": 3, "terabyte": 4, "petabyte": 5,
    "exabyte": 6, "zettabyte": 7, "aettabyte": 7, "yottabyte": 8, "nonabyte": 9,
    "doggabyte": 10,
}
_MB_EXPONENT = 2

NETWORK_UNITS: dict[str, int] = {
    "bit/s": -6, "bps": -6,
    "kbit/s": -3, "Kbit/s": -3, "kbps": -3, "Kbps": -3,
    "Mbit/s": 0, "Mbps": 0,
    "Gbit/s": 3, "Gbps": 3,
    "Tbit/s": 6, "Tbps": 6,
}
"""Network unit → power of ten relative to Mbit/s (decimal, as bit rates are quoted)."""

DCX_NAMESPACE = "urn:dcx:sss"
"""Namespace of the GPU vendor attributes SSS has no element for (see the mapping table)."""
GPU_VENDOR_ATTRIBUTES = ("manufacturer", "family", "generation")
_LABEL_ATTRIBUTE = f"{{{DCX_NAMESPACE}}}label"
FLOAT32_MAX = 3.4028234663852886e38
CONSUMABLES = ("Processors", "Memory", "Disk", "Swap", "Network")
SINGLE_PROPERTIES = ("Id", "Name", "Opsys", "Arch", "Description", "State")
CATEGORIES = ("Configured", "Available", "Utilized")
AGGREGATIONS = ("List", "Pattern", "Range")
GPU_RESOURCE = "GPU"
SSS_ATTRIBUTES = ("metric", "wallDuration", "consumptionRate")
_EXTRA_KEYS = {"metric": "sss:metric", "wallDuration": "sss:wallDuration",
               "consumptionRate": "sss:consumptionRate", "units": "sss:units"}
_MACHINE_EXTRAS = ("sss:extensions", "sss:configured")
_SMART_QUOTES = "\u201c\u201d\u2018\u2019"
_SMART_QUOTE_HINT = ("replace the typographic quotes \u201c \u201d \u2018 \u2019 with ASCII "
                     "quotes; the SSS 3.1.0 spec prints every example attribute that way")
_WALL_DURATION = re.compile(
    r"-?P(?=\d|T\d)(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?"
    r"|(\d+(\.\d*)?|\.\d+)"
)


class UnitError(ValueError):
    """A ``units`` value dcx cannot convert; ``hint`` suggests a fix when there is one."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def megabytes(value: float, units: str | None) -> float:
    """``value`` in ``units`` (Appendix A, powers of two) as MB; ``None`` means MB."""
    exponent = _MB_EXPONENT if units is None else _byte_exponent(units)
    return math.ldexp(value, 10 * (exponent - _MB_EXPONENT))


def _byte_exponent(units: str) -> int:
    text = units.strip()
    if text in BYTE_UNIT_EXPONENTS:
        return BYTE_UNIT_EXPONENTS[text]
    word = text.casefold().removesuffix("s")
    if word in _BYTE_UNIT_NAMES:
        return _BYTE_UNIT_NAMES[word]
    hint = None
    if any(quote in units for quote in _SMART_QUOTES):
        hint = _SMART_QUOTE_HINT
    elif text.upper() in BYTE_UNIT_EXPONENTS:
        hint = f"unit abbreviations are case-sensitive; did you mean {text.upper()!r}?"
    raise UnitError(f"unknown unit {units!r}; Appendix A byte units are "
                    "B, KB, MB, GB, TB, PB, EB, ZB, YB (or KiB … YiB)", hint)


def megabits_per_second(value: float, units: str | None) -> float:
    """A Network amount in Mbit/s; ``None`` means Mbit/s."""
    if units is None:
        return value
    text = units.strip()
    if text not in NETWORK_UNITS:
        hint = _SMART_QUOTE_HINT if any(q in units for q in _SMART_QUOTES) else None
        raise UnitError(f"unknown network unit {units!r}; dcx reads "
                        f"{', '.join(sorted(set(NETWORK_UNITS)))}", hint)
    power = NETWORK_UNITS[text]
    return value * 10**power if power >= 0 else value / 10**-power


def state_for_word(word: str) -> MachineState | None:
    """The model state of an SSS state word, or ``None`` when the table does not list it."""
    return STATE_TABLE.get(word.strip().casefold())


# ------------------------------------------------------------------------ node references


@dataclass(frozen=True)
class NodeReference:
    """A ``<Node>`` whose text names one or more nodes (spec §4.4)."""

    node: str
    aggregation: str | None = None
    delimiter: str | None = None
    count: int | None = None

    def to_extras(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"node": self.node}
        for key in ("aggregation", "delimiter", "count"):
            value = getattr(self, key)
            if value is not None:
                entry[key] = value
        return entry


def reference_problem(reference: NodeReference) -> tuple[str, int | None] | None:
    """Why a reference is invalid (message and 0-based text offset), or ``None``."""
    text = reference.node
    if reference.count is not None and reference.count < 1:
        return f"count is {reference.count}; an instance count must be at least 1", None
    if reference.delimiter == "":
        return "delimiter is empty", None
    if reference.aggregation is None:
        if not text.strip():
            return "a node reference needs a node id as its text", None
        return None
    if reference.aggregation == "List":
        items = text.split(reference.delimiter or ",")
        for index, item in enumerate(items):
            if not item.strip():
                return f"list item {index + 1} is empty", None
        return None
    if reference.aggregation == "Pattern":
        try:
            re.compile(text)
        except re.error as exc:
            return f"invalid regular expression: {exc.msg}", exc.pos
        return None
    if reference.aggregation == "Range":
        try:
            hosts = Hostlist.decode(text)
        except HostlistError as exc:
            return f"invalid RFC 29 hostlist: {exc.reason}", exc.position
        if not hosts:
            return "the range names no nodes", None
        return None
    return f"unknown aggregation {reference.aggregation!r}", None


def reference_nodes(reference: NodeReference) -> tuple[str, ...]:
    """The node ids a List, Range or plain reference names (a Pattern names none: it is a
    filter, see ``reference_matches``). Raises ``ValueError`` for an invalid reference."""
    problem = reference_problem(reference)
    if problem is not None:
        raise ValueError(problem[0])
    if reference.aggregation == "List":
        return tuple(item.strip() for item in reference.node.split(reference.delimiter or ","))
    if reference.aggregation == "Range":
        return tuple(Hostlist.decode(reference.node))
    if reference.aggregation == "Pattern":
        return ()
    return (reference.node.strip(),)


def reference_matches(reference: NodeReference, node_id: str) -> bool:
    """Whether ``node_id`` is one of the nodes the reference selects."""
    if reference.aggregation == "Pattern":
        return re.search(reference.node, node_id) is not None
    if reference.aggregation == "Range":
        return node_id in Hostlist.decode(reference.node)
    return node_id in reference_nodes(reference)
