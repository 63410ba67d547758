"""Sniffing JSON by its head: the object keys near the top of a document, read from its first
bytes without parsing it (the bytes may be cut anywhere, or not be JSON at all). Standard
library only: every JSON sniffer of the pre-commit hook may call it."""

from __future__ import annotations

import re

# A string (its closing quote, then a colon when it is a key; or cut off by the end of the
# head), or a bracket. Everything else between tokens is skipped.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"(\s*:)?|\\?\Z)|[{}\[\]]', re.DOTALL)
_OPENING = frozenset("{[")


def top_level_keys(data: bytes, limit: int = 65536) -> dict[str, set[str]]:
    """Object keys at depth 1 and 2 of the first ``limit`` bytes, tolerant of bad JSON:
    enough to tell an R or a graph from a map of them or from a JSON Schema."""
    text = data[:limit].decode("utf-8", errors="replace")
    found: dict[str, set[str]] = {"1": set(), "2": set()}
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            if match.group(1) is not None and 1 <= depth <= 2:
                found[str(depth)].add(token[1:token.rindex('"')])
        elif token in _OPENING:
            depth += 1
        else:
            depth -= 1
    return found
