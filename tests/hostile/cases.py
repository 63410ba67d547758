"""The hostile-input manifest: every case, what it attacks, and the diagnostic it must produce.

A case is either a small file committed next to this one (``xml/``, ``json/``, ``formats/``)
or, when it is large or generated, a builder function below; nothing over ~100 KB is
committed. Files may hold three placeholders, filled in when the case is materialised for a
run: ``@CANARY_PATH@`` (absolute path of the canary file), ``@CANARY_URL@`` (its
``file://`` URL) and ``@NET@`` (``http://127.0.0.1:<port>`` of a loopback listener that
counts connection attempts).

``python tests/hostile/cases.py --out DIR`` writes the whole corpus to DIR for inspection.

Each case runs as a user runs it (``dcx validate``, ``dcx convert``): see
``tests/test_hostile.py`` for the budgets every case must meet.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

CANARY_TEXT = "dcx-hostile-canary-5f1c0e9a-if-you-read-this-a-file-leaked"
"""Planted in the canary file; it must never appear in any output."""


@dataclass(frozen=True)
class Context:
    """What a materialised case may refer to."""

    canary_path: Path
    port: int

    @property
    def canary_url(self) -> str:
        return self.canary_path.as_uri()

    @property
    def net(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fill(self, data: bytes) -> bytes:
        return (data.replace(b"@CANARY_PATH@", str(self.canary_path).encode())
                .replace(b"@CANARY_URL@", self.canary_url.encode())
                .replace(b"@NET@", self.net.encode()))


Builder = Callable[[Context], bytes]


@dataclass(frozen=True)
class Case:
    """One hostile input and its expected verdict.

    ``stage`` is ``"read"`` (the reader must reject it: ``validate`` and ``convert`` both
    exit 1) or ``"write"`` (the input is valid; converting it to ``convert_to`` must fail
    before anything is written). ``code`` is the diagnostic's stable code and ``message`` a
    fragment of its text. ``line``, when set, is the line the diagnostic must name.
    ``format_flag`` passes ``--format`` (for inputs whose content no sniffer can recognise,
    such as gzip bytes, where a user has to name the format).
    """

    name: str
    format: str
    code: str
    message: str
    source: str | Builder
    suffix: str = ""
    convert_to: str = ""
    stage: str = "read"
    line: int | None = None
    format_flag: bool = False
    checklist: str = ""
    also_requires: tuple[str, ...] = field(default=())
    """Further format modules the case needs (a ``write`` case's target)."""
    known_issue: str = ""
    """Why dcx does not meet the expectation yet, and whose module it is; the CLI tests of
    the case are then expected failures (strict: fixing it makes them fail until this is
    cleared). The expectation itself stays what it should be."""

    @property
    def file_name(self) -> str:
        if isinstance(self.source, str):
            return f"{self.name}{Path(self.source).suffix}"
        return f"{self.name}{self.suffix}"

    @property
    def modules(self) -> tuple[str, ...]:
        return (self.format, *self.also_requires)

    def build(self, context: Context) -> bytes:
        if isinstance(self.source, str):
            return context.fill((HERE / self.source).read_bytes())
        return self.source(context)


# ------------------------------------------------------------------------------ builders

SSS_NODE = b"<Node>\n  <Id>n1</Id>\n"


def _nested_xml(depth: int) -> Builder:
    def build(_: Context) -> bytes:
        return (SSS_NODE + b"<Extension name='x'>" + b"<a>" * depth + b"</a>" * depth
                + b"</Extension>\n</Node>\n")
    return build


def _huge_text_node(_: Context) -> bytes:
    return SSS_NODE + b"  <Description>" + b"x" * (12 * 1024 * 1024) + b"</Description>\n</Node>\n"


def _million_siblings(_: Context) -> bytes:
    # 10^6 <Feature> siblings, then one element SSS does not have: the reader must get
    # through all of them within budget and point at the last line.
    features = b"  <Feature>f</Feature>\n" * 1_000_000
    return SSS_NODE + features + b"  <Bogus/>\n</Node>\n"


def _redefined_attribute_flood(_: Context) -> bytes:
    # 10^5 attributes on one element, the last repeating the first: a parser that checks
    # duplicates pairwise does 5 * 10^9 comparisons; the error names the last one.
    attributes = " ".join(f'a{index}="x"' for index in range(100_000))
    return f'<Node {attributes} a0="y"/>\n'.encode()


def _namespace_flood(_: Context) -> bytes:
    # 10^5 namespace declarations on a Haizea <nodes>, then one element it does not have.
    declarations = " ".join(f'xmlns:p{index}="urn:x{index}"' for index in range(100_000))
    return (f'<nodes {declarations}>\n<node-set numnodes="1"><res type="CPU" amount="100"/>'
            '<res type="Memory" amount="1"/></node-set>\n<bogus/>\n</nodes>\n').encode()


def _gzip_bomb(_: Context) -> bytes:
    # ~50 MB of XML compressed to ~50 KB; dcx must refuse it without inflating it.
    payload = (SSS_NODE + b"  <Description>" + b"A" * (50 * 1024 * 1024)
               + b"</Description>\n</Node>\n")
    return gzip.compress(payload, compresslevel=9, mtime=0)


def _quadratic_blowup(_: Context) -> bytes:
    entity = b"A" * 100_000
    return (b'<?xml version="1.0"?>\n<!DOCTYPE Node [<!ENTITY a "' + entity + b'">]>\n'
            + SSS_NODE + b"  <Description>" + b"&a;" * 2_000 + b"</Description>\n</Node>\n")


def _utf16(bom: bool) -> Builder:
    def build(_: Context) -> bytes:
        text = '<?xml version="1.0" encoding="UTF-16"?>\n<Node><Id>n1</Id></Node>\n'
        return ("\ufeff" + text).encode("utf-16-le") if bom else text.encode("utf-16-le")
    return build


def _environment(machines: str) -> str:
    return ('{"environment": {"datacenters": [{"id": 1, "rooms": [{"type": "SERVER", '
            '"objects": [{"type": "RACK", "units": [' + machines + ']}]}]}]}}\n')


def _deep_json(depth: int) -> Builder:
    def build(_: Context) -> bytes:
        return ('{"environment": {"datacenters": ' + "[" * depth + "]" * depth + "}}\n").encode()
    return build


def _huge_integer(_: Context) -> bytes:
    return _environment('{"type": "MACHINE", "id": 1, "cpus": [{"cores": '
                        + "9" * 5_000 + "}]}").encode()


def _base_fan_out(_: Context) -> bytes:
    # Each level lists the previous one twice: 2^40 values once expanded, a few hundred
    # bytes on disk. A resolver that copies instead of sharing never finishes.
    levels: dict[str, Any] = {
        "l0": {"type": "MACHINE", "cpus": [{"cores": 1, "clock-rate": 1e9}]}}
    for level in range(1, 41):
        previous = f"#/definitions/l{level - 1}"
        levels[f"l{level}"] = {"type": "MACHINE", "a": {"$base": previous},
                               "b": {"$base": previous}}
    document = json.loads(_environment('{"$base": "#/definitions/l40", "id": 1}'))
    document["definitions"] = levels
    return json.dumps(document, indent=1).encode()


def _base_chain(_: Context) -> bytes:
    # 5,000 objects each inheriting from the next: deep resolution without a cycle must not
    # exhaust the Python stack.
    count = 5_000
    chain: dict[str, Any] = {f"m{n}": {"$base": f"#/definitions/m{n + 1}"}
                             for n in range(count)}
    chain[f"m{count}"] = {"type": "MACHINE", "cpus": [{"cores": 1, "clock-rate": 1e9}]}
    document = json.loads(_environment('{"$base": "#/definitions/m0", "id": 1, '
                                       '"cpus": "not-an-array"}'))
    document["definitions"] = chain
    return json.dumps(document, indent=1).encode()


def _million_keys(_: Context) -> bytes:
    keys = ", ".join(f'"k{n}": {n}' for n in range(1_000_000))
    return ('{"environment": {"datacenters": []}, "definitions": {' + keys
            + ', "k7": 0}}\n').encode()


def _gwf_long_cycle(_: Context) -> bytes:
    # A 100,000-task dependency ring: cycle detection must be iterative and linear.
    count = 100_000
    lines = ["WorkflowID, JobID, SubmitTime, RunTime, NProcs, ReqNProcs, Dependencies"]
    lines += [f"1, {n}, 0, 10, 1, 1, {n % count + 1}" for n in range(1, count + 1)]
    return ("\n".join(lines) + "\n").encode()


def _swf_negative(_: Context) -> bytes:
    return (b"; Version: 2.2\n; MaxNodes: 4\n"
            b"1 0 0 10 -5 -1 -1 4 20 -1 1 1 1 1 1 -1 -1 -1\n")


# ------------------------------------------------------------------------------ the cases

XML = "sss"
"""The XML format the XML-layer cases are written in (``<Node>`` root)."""

CASES: tuple[Case, ...] = (
    # --- XML: entities and DTDs (tooling §6 items 1-4)
    Case("xml-xxe-file-absolute", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/xxe-file-absolute.xml", line=2, checklist="6.1"),
    Case("xml-xxe-file-relative", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/xxe-file-relative.xml", line=2, checklist="6.1"),
    Case("xml-xxe-network", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/xxe-network.xml", line=2, checklist="6.1"),
    Case("xml-parameter-entity-remote", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/parameter-entity-remote.xml", line=2, checklist="6.2"),
    Case("xml-parameter-entity-local", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/parameter-entity-local.xml", line=2, checklist="6.2"),
    Case("xml-external-dtd-remote", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/external-dtd-remote.xml", line=2, checklist="6.3"),
    Case("xml-external-dtd-local", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/external-dtd-local.xml", line=2, checklist="6.3"),
    Case("xml-public-id", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/public-id.xml", line=2, checklist="6.3"),
    Case("xml-internal-entity", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/internal-entity.xml", line=2, checklist="6.4"),
    Case("xml-billion-laughs", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/billion-laughs.xml", line=2, checklist="6.4"),
    Case("xml-quadratic-blowup", XML, "xml.dtd", "refuses DTDs and entities",
         _quadratic_blowup, ".xml", line=2, checklist="6.4"),
    Case("xml-doctype-late", XML, "xml.dtd", "refuses DTDs and entities",
         "xml/doctype-after-comment.xml", line=3, checklist="6.4"),
    # --- XML: things that must not be followed (5, 6)
    # An <Id> holding an XInclude is invalid; were the include followed, <Id> would hold the
    # canary text and validate.
    Case("xml-xinclude", XML, "xsd.invalid", "Element content is not allowed",
         "xml/xinclude.xml", line=3, checklist="6.5"),
    Case("xml-xinclude-text", XML, "xsd.invalid", "Element content is not allowed",
         "xml/xinclude-text.xml", line=3, checklist="6.5"),
    Case("xml-schema-location", XML, "xsd.invalid", "not expected",
         "xml/schema-location.xml", line=6, checklist="6.6"),
    # --- XML: depth and size (8, 9, 10)
    Case("xml-depth-257", XML, "xml.syntax", "nests deeper than 256", _nested_xml(257), ".xml",
         line=3, checklist="6.8"),
    Case("xml-depth-5000", XML, "xml.syntax", "nests deeper than 256", _nested_xml(5_000),
         ".xml", line=3, checklist="6.8"),
    Case("xml-text-12mb", XML, "xml.syntax", "text node larger than", _huge_text_node, ".xml",
         line=3, checklist="6.9"),
    Case("xml-million-siblings", XML, "xsd.invalid", "not expected", _million_siblings, ".xml",
         line=1_000_003, checklist="6.9"),
    Case("xml-100k-attributes", XML, "xml.syntax", "redefined", _redefined_attribute_flood,
         ".xml", line=1, checklist="6.9"),
    Case("xml-namespace-flood", "haizea", "xsd.invalid", "not expected", _namespace_flood,
         ".xml", line=3, checklist="6.9"),
    Case("xml-gzip-bomb", XML, "xml.compressed", "gzip-compressed", _gzip_bomb, ".xml",
         line=1, format_flag=True, checklist="6.10"),
    Case("xml-gzip-bomb-gz-suffix", XML, "xml.compressed", "gzip-compressed", _gzip_bomb,
         ".xml.gz", line=1, format_flag=True, checklist="6.10"),
    # --- XML: encodings and characters (11, 12)
    Case("xml-utf16-bom", XML, "xml.encoding", "UTF-16", _utf16(bom=True), ".xml", line=1,
         format_flag=True, checklist="6.11"),
    Case("xml-utf16-no-bom", XML, "xml.encoding", "UTF-16", _utf16(bom=False), ".xml", line=1,
         format_flag=True, checklist="6.11"),
    Case("xml-declared-latin1", XML, "xml.encoding", "ISO-8859-1",
         "xml/declared-latin1.xml", line=1, checklist="6.11"),
    Case("xml-declared-ebcdic", XML, "xml.encoding", "ebcdic",
         "xml/declared-ebcdic.xml", line=1, checklist="6.11"),
    Case("xml-invalid-utf8", XML, "xml.encoding", "invalid UTF-8 byte 0xff",
         "xml/invalid-utf8.xml", line=3,
         checklist="6.12"),
    Case("xml-char-ref-nul", XML, "xml.syntax", "xmlParseCharRef", "xml/char-ref-nul.xml",
         line=3, checklist="6.12"),
    Case("xml-raw-control-byte", XML, "xml.syntax", "invalid Char value 1",
         "xml/raw-control-byte.xml",
         line=3, checklist="6.12"),
    Case("xml-surrogate-char-ref", XML, "xml.syntax", "xmlParseCharRef",
         "xml/surrogate-char-ref.xml", line=3, checklist="6.12"),
    # --- XML: namespaces, structure (13, 17)
    Case("xml-undeclared-prefix", XML, "xml.syntax", "prefix", "xml/undeclared-prefix.xml",
         line=3, checklist="6.13"),
    Case("xml-trailing-garbage", XML, "xml.syntax", "Extra content", "xml/trailing-garbage.xml",
         line=4, checklist="6.17"),
    Case("xml-second-root", XML, "xml.syntax", "Extra content", "xml/second-root.xml",
         line=4, checklist="6.17"),
    Case("xml-empty", XML, "xml.syntax", "empty", "xml/empty.xml", line=1, format_flag=True,
         checklist="6.17"),
    Case("xml-only-bom", XML, "xml.syntax", "empty", "xml/only-bom.xml", line=1,
         format_flag=True, checklist="6.17"),

    # --- JSON layer, through the environment format (18-26)
    Case("json-duplicate-key", "environment", "json.duplicate-key", "duplicate key 'id'",
         "json/duplicate-key.json", line=5, checklist="6.18"),
    Case("json-duplicate-key-escaped", "environment", "json.duplicate-key",
         "duplicate key 'id'", "json/duplicate-key-escaped.json", line=5, checklist="6.18"),
    Case("json-nan", "environment", "json.number", "NaN", "json/nan.json", line=4,
         checklist="6.19"),
    Case("json-infinity", "environment", "json.number", "Infinity", "json/infinity.json",
         line=4, checklist="6.19"),
    Case("json-1e400", "environment", "json.number", "1e400", "json/1e400.json", line=4,
         checklist="6.19"),
    Case("json-huge-integer", "environment", "json.number", "4,300 digits", _huge_integer,
         ".json", line=1, checklist="6.19"),
    Case("json-int64-overflow", "environment", "schema.maximum", "maximum",
         "json/int64-overflow.json", line=4, checklist="6.19"),
    Case("json-depth-100000", "environment", "json.depth", "nests deeper than",
         _deep_json(100_000), ".json", line=1, checklist="6.20"),
    Case("json-bom", "environment", "json.bom", "byte order mark", "json/bom.json", line=1,
         checklist="6.21"),
    Case("json-utf16", "environment", "json.encoding", "UTF-16", "json/utf16.json", line=1,
         format_flag=True, checklist="6.21"),
    Case("json-invalid-utf8", "environment", "json.encoding", "invalid UTF-8",
         "json/invalid-utf8.json", line=4, checklist="6.21"),
    Case("json-overlong-utf8", "environment", "json.encoding", "invalid UTF-8",
         "json/overlong-utf8.json", line=4, checklist="6.21"),
    Case("json-lone-surrogate", "environment", "json.surrogate", "lone surrogate",
         "json/lone-surrogate.json", line=4, checklist="6.22"),
    Case("json-million-keys", "environment", "json.duplicate-key", "duplicate key 'k7'",
         _million_keys, ".json", line=1, checklist="6.23"),
    Case("json-trailing-comma", "environment", "json.syntax", "double quotes",
         "json/trailing-comma.json", line=5, checklist="6.24"),
    Case("json-comment", "environment", "json.syntax", "JSON has no comments",
         "json/comment.json", line=2, checklist="6.24"),
    Case("json-trailing-data", "environment", "json.trailing-data", "after the JSON document",
         "json/trailing-data.json", line=2, checklist="6.24"),
    Case("json-remote-schema", "environment", "schema.minimum", "minimum",
         "json/remote-schema.json", line=6, checklist="6.25"),
    Case("json-root-array", "environment", "environment.root", "array",
         "json/root-array.json", line=1, checklist="6.26"),
    Case("json-root-string", "environment", "environment.root", "string",
         "json/root-string.json", line=1, format_flag=True, checklist="6.26"),
    Case("json-empty", "environment", "json.syntax", "empty", "json/empty.json", line=1,
         format_flag=True, checklist="6.26"),
    # --- $base (environment)
    Case("base-cycle", "environment", "ref.cycle", "$base cycle", "formats/base-cycle.json",
         line=4, checklist="issue 9"),
    Case("base-self", "environment", "ref.cycle", "itself", "formats/base-self.json", line=4,
         checklist="issue 9"),
    Case("base-fan-out", "environment", "ref.expansion", "expands the document",
         _base_fan_out, ".json", checklist="issue 9"),
    Case("base-long-chain", "environment", "ref.chain", "chain is longer than", _base_chain,
         ".json", checklist="issue 9"),
    Case("base-external-file", "environment", "ref.external", "same-document",
         "formats/base-external-file.json", line=4, checklist="6.1 ($base form)"),
    Case("base-external-url", "environment", "ref.external", "same-document",
         "formats/base-external-url.json", line=4, checklist="6.1 ($base form)"),
    # --- JSON to XML: characters XML cannot carry (tooling §5.6, §6.22)
    Case("to-xml-control-char", "environment", "sss.write.unwritable-text", "U+0001",
         "formats/to-xml-control-char.json", stage="write", convert_to="sss",
         also_requires=("sss",), checklist="6.22"),
    Case("to-xml-nul", "environment", "sss.write.unwritable-text", "U+0000",
         "formats/to-xml-nul.json", stage="write", convert_to="sss", also_requires=("sss",),
         checklist="6.22"),
    Case("to-xml-fffe", "environment", "sss.write.unwritable-text", "U+FFFE",
         "formats/to-xml-fffe.json", stage="write", convert_to="sss", also_requires=("sss",),
         checklist="6.22"),
    # --- GWF
    Case("gwf-cycle", "gwf", "gwf.dependency-cycle", "dependency cycle", "formats/cycle.gwf",
         line=3, checklist="issue 9"),
    Case("gwf-unknown-task", "gwf", "gwf.unknown-dependency", "", "formats/unknown-task.gwf",
         line=2, checklist="issue 9"),
    Case("gwf-long-cycle", "gwf", "gwf.dependency-cycle", "dependency cycle", _gwf_long_cycle,
         ".gwf", checklist="issue 9"),
    # --- JGF
    Case("jgf-dangling-edge", "jgf", "jgf.edge-endpoint", "'999' is not a vertex id",
         "formats/dangling-edge.json", line=8, checklist="issue 9"),
    # --- Flux R: hostlists and idsets built to explode, nodelist/ranks disagreeing
    Case("r-hostlist-explode", "flux_r", "flux-r.hostlist", "more than 1,048,576 hosts",
         "formats/hostlist-explode.R", line=7, checklist="issue 9"),
    Case("r-idset-explode", "flux_r", "flux-r.idset", "exceeds the maximum 2147483647",
         "formats/idset-explode.R", line=4, checklist="issue 9"),
    Case("r-nodelist-ranks-disagree", "flux_r", "flux-r.nodelist-count",
         "nodelist names 3 hosts but R_lite has 4 ranks", "formats/nodelist-ranks-disagree.R",
         line=7, checklist="issue 9"),
    # --- OpenDC topology: a host count standing for billions of hosts
    Case("opendc-count-explode", "opendc_topology", "opendc-topology.too-large",
         "dcx reads at most 1,048,576 hosts", "formats/opendc-count-explode.json", line=6,
         checklist="issue 19"),
    # --- Slurm: a NodeName bracket product standing for 10^15 nodes
    Case("slurm-hostlist-explode", "slurm", "slurm.hostlist", "more than 1,048,576 hosts",
         "formats/hostlist-explode.conf", line=3, checklist="issue 19"),
    # --- SWF, Haizea LWF
    Case("swf-negative-fields", "swf", "schema.const", "AllocatedProcessors is -5",
         _swf_negative, ".swf", line=3, checklist="issue 9"),
    Case("lwf-zero-nodes", "haizea", "xsd.invalid", "'0' is not a valid value",
         "formats/zero-nodes.lwf", line=7, checklist="issue 9"),
    Case("lwf-no-node-sets", "haizea", "haizea.lease-no-nodes", "asks for no node-set",
         "formats/empty-nodes.lwf", line=5, checklist="issue 9"),
)

BY_NAME: dict[str, Case] = {case.name: case for case in CASES}


def module_available(name: str) -> bool:
    return importlib.util.find_spec(f"dcx.formats.{name}") is not None


def missing_modules(case: Case) -> list[str]:
    return [name for name in case.modules if not module_available(name)]


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the hostile-input corpus to a folder.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--port", type=int, default=9, help="port for @NET@ (default: discard)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    canary = args.out / "canary" / "canary.txt"
    canary.parent.mkdir(exist_ok=True)
    canary.write_text(CANARY_TEXT + "\n")
    context = Context(canary.resolve(), args.port)
    for case in CASES:
        (args.out / case.file_name).write_bytes(case.build(context))
    print(f"wrote {len(CASES)} cases to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
