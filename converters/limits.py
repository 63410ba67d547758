"""Budgets that bound what any reader will accept (documented on the security page)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_input_bytes: int = 512 * 1024 * 1024
    """Larger files are refused before parsing."""
    max_json_depth: int = 512
    """Deeper JSON is refused (Python's decoder would raise RecursionError near 1,000)."""
    max_xml_depth: int = 256
    """libxml2's own limit without ``huge_tree``; our formats need fewer than 10 levels."""
    max_xml_text_bytes: int = 10 * 1024 * 1024
    """libxml2's text-node limit without ``huge_tree``."""
    max_hostlist_range: int = 1 << 20
    """Hosts in one hostlist range (flux-core's MAX_RANGE)."""
    max_idset_id: int = (1 << 31) - 1
    """Largest id in an RFC 22 idset (flux-core's universe limit)."""


LIMITS = Limits()
