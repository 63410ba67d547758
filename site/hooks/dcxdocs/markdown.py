"""Small Markdown builders shared by the generators."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_CELL_SPECIALS = re.compile(r"([|<>])")


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: pipes and angle brackets escaped, one line."""
    flat = " ".join(str(text).split())
    return _CELL_SPECIALS.sub(lambda m: {"|": "\\|", "<": "&lt;", ">": "&gt;"}[m.group(1)], flat)


def code(text: str) -> str:
    """Inline code that survives backticks and pipes inside the text (for table cells)."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    fence = "``" if "`" in flat else "`"
    padding = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{padding}{flat}{padding}{fence}"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A pipe table; cells must already be escaped (``cell``/``code``)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def fenced(text: str, language: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run inside ``text``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{language}\n{body}{fence}\n"


def indent(text: str, prefix: str = "    ") -> str:
    """Indent every non-empty line (content of a tab or admonition)."""
    return "".join(prefix + line if line.strip() else line for line in text.splitlines(True))


def tabs(items: Sequence[tuple[str, str]]) -> str:
    """A pymdownx.tabbed block (alternate style) from (label, markdown) pairs."""
    parts = []
    for label, body in items:
        parts.append(f'=== "{label}"\n\n{indent(body)}\n')
    return "\n".join(parts)


def admonition(kind: str, title: str, body: str) -> str:
    return f'!!! {kind} "{title}"\n\n{indent(body)}\n'


def rst_to_markdown(text: str) -> str:
    """The reStructuredText subset used in module docstrings: ``literal`` becomes `literal`."""
    return re.sub(r"``(.+?)``", r"`\1`", text)
