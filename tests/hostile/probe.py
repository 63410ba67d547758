"""Read hostile cases in-process and print each reader's (or writer's) diagnostics as JSON
lines, codes included (the CLI's text output has no codes). Run by ``tests/test_hostile.py``
as one bounded subprocess for all cases.

Input: a file (the only argument) with one JSON object per line,
``{"path", "format", "stage", "convert_to"}``.
Output: ``{"path", "started": true}`` before each case (so a crash names its case), then
``{"path", "diagnostics": [{"code", "severity", "line", "column", "message"}]}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from dcx.converters.convert import convert, read_any
from dcx.core.diagnostics import Diagnostic


def _describe(diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> list[dict[str, Any]]:
    return [{"code": d.code, "severity": d.severity.value, "line": d.line, "column": d.column,
             "message": d.message} for d in diagnostics]


def probe(request: dict[str, str]) -> list[dict[str, Any]]:
    data = Path(request["path"]).read_bytes()
    if request["stage"] == "write":
        result = convert(data, request["convert_to"], request["path"], request["format"])
        return _describe(list(result.read.diagnostics if result.read else ())
                         + list(result.diagnostics))
    _, read = read_any(data, request["path"], request["format"])
    return _describe(read.diagnostics)


def main() -> None:
    for line in Path(sys.argv[1]).read_text().splitlines():
        request = json.loads(line)
        print(json.dumps({"path": request["path"], "started": True}), flush=True)
        print(json.dumps({"path": request["path"], "diagnostics": probe(request)}), flush=True)


if __name__ == "__main__":
    main()
