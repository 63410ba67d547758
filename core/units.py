"""SimGrid's speed units, the one rule for a speed written as text: a number and one of
``f``, ``kf``, ``Mf``, ``Gf``, ``Tf`` … (or ``flops``, ``kiloflops`` …), powers of 1000, case
sensitive, as SimGrid's ``xbt_parse_get_speed`` reads them. The SimGrid format reads its
hosts' speeds with it; ``dcx convert --fill speed=1Gf`` reads the speed it is given with it,
so that a speed means the same on the command line as in a platform file."""

from __future__ import annotations

import math
import re

_PREFIXES = ("", "k", "M", "G", "T", "P", "E", "Z", "Y")
_LONG_PREFIXES = ("", "kilo", "mega", "giga", "tera", "peta", "exa", "zeta", "yotta")
SPEED_UNITS: dict[str, float] = {
    **{f"{prefix}f": 1000.0**power for power, prefix in enumerate(_PREFIXES)},
    **{f"{prefix}flops": 1000.0**power for power, prefix in enumerate(_LONG_PREFIXES)},
}
"""SimGrid's speed units (``xbt_parse_get_speed``): powers of 1000, case-sensitive."""
SPEED = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([A-Za-z]*)\s*")
"""A speed as text: the number, then its unit (empty: none)."""


def speed_list(text: str) -> list[float] | None:
    """The speeds of a comma list in flop/s (``1Gf, 500Mf``), or ``None`` when one is not a
    finite non-negative number with one of SimGrid's units (or none)."""
    speeds = []
    for part in text.split(","):
        parsed = SPEED.fullmatch(part)
        if parsed is None or (parsed.group(2) and parsed.group(2) not in SPEED_UNITS):
            return None
        speed = float(parsed.group(1)) * SPEED_UNITS[parsed.group(2) or "f"]
        if not math.isfinite(speed) or speed < 0:
            return None
        speeds.append(speed)
    return speeds
