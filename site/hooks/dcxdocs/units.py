"""Units named in schema descriptions and model field names."""

from __future__ import annotations

import re

# Longer spellings first so "MB/s" wins over "MB" at the same position.
_UNIT_WORDS: tuple[tuple[str, str], ...] = (
    ("MB/s", "MB/s"), ("Mbit/s", "Mbit/s"), ("Gbit/s", "Gbit/s"),
    ("milliseconds", "ms"), ("microseconds", "µs"), ("seconds", "s"), ("second", "s"),
    ("KiB", "KiB"), ("MiB", "MiB"), ("GiB", "GiB"), ("KB", "KB"), ("kB", "kB"), ("MB", "MB"),
    ("GB", "GB"), ("TB", "TB"), ("bytes", "bytes"),
    ("GHz", "GHz"), ("MHz", "MHz"), ("Hz", "Hz"), ("watts", "W"), ("W", "W"),
    ("1U", "rack units (1U)"), ("percent", "%"),
)
_UNIT_PATTERN = re.compile(
    r"(?<![\w/])(" + "|".join(re.escape(word) for word, _ in _UNIT_WORDS) + r")(?![\w/])"
)
_UNIT_BY_WORD = dict(_UNIT_WORDS)

_SUFFIX_UNITS: tuple[tuple[str, str], ...] = (
    ("_hz", "Hz"), ("_mhz", "MHz"), ("_mb", "MB"), ("_kb", "KB"), ("_s", "s"), ("_w", "W"),
    ("_mbit_s", "Mbit/s"), ("_units", "rack units (1U)"),
)


def unit_in_text(text: str) -> str:
    """The first unit a description names ("Submit time, seconds" → "s"), or ""."""
    match = _UNIT_PATTERN.search(text or "")
    return _UNIT_BY_WORD[match.group(1)] if match else ""


def unit_of_field(name: str) -> str:
    """The unit a dcx model field name carries in its suffix (``clock_rate_hz`` → Hz)."""
    lowered = name.lower()
    for suffix, unit in sorted(_SUFFIX_UNITS, key=lambda pair: -len(pair[0])):
        if lowered.endswith(suffix):
            return unit
    return ""
