"""The format table: one row per format, the single source for the CLI, the hook, the loss
matrix and the docs. Modules are imported only when a row is used, so a hook run over JSON
files never imports the XML machinery.

Every format module provides::

    def sniff(data: bytes) -> bool            # cheap content check on the first bytes
    def read(data: bytes) -> ReadResult        # parse, validate, build the model
    def write(document: Document) -> WriteResult   # bytes plus what could not be held
    HOLDS: frozenset[str]                      # model field paths it can carry (see fields.py)

A format that cannot be written sets ``writable=False`` in its row and has no ``write``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

Kind = Literal["topology", "workload", "both"]


@dataclass(frozen=True)
class FormatSpec:
    name: str
    title: str
    module: str
    family: str
    kind: Kind
    extensions: tuple[str, ...]
    schema: str
    """File name under ``schemas/`` (JSON Schema) or ``xsd/`` (XSD) that validates it."""
    description: str
    writable: bool = True

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)

    @property
    def holds(self) -> frozenset[str]:
        holds: frozenset[str] = self.load().HOLDS
        return holds


FORMATS: tuple[FormatSpec, ...] = (
    FormatSpec(
        name="environment",
        title="Environment JSON (jsspp-osp)",
        module="dcx.formats.environment",
        family="environment",
        kind="topology",
        extensions=(".json",),
        schema="environment.schema.json",
        description="Datacenters, rooms, racks and machines with timed events and "
        "$base/$merge definitions (jsspp-osp v1).",
    ),
    FormatSpec(
        name="haizea",
        title="Haizea XML (nodes, site, lease, LWF, LWFA)",
        module="dcx.formats.haizea",
        family="haizea",
        kind="both",
        extensions=(".lwf", ".lwfa", ".xml"),
        schema="haizea-lease-workload.xsd",
        description="Haizea 1.1 lease workloads with their site, single leases, node sets "
        "and lease annotations; legacy 10-field text LWF is read too.",
    ),
    FormatSpec(
        name="sss",
        title="SSS Node Object XML 3.1.0",
        module="dcx.formats.sss",
        family="sss",
        kind="topology",
        extensions=(".xml",),
        schema="sss-node.xsd",
        description="One <Node> or many inside an SSSRMAP <Data> element, with Configured, "
        "Available and Utilized resources.",
    ),
    FormatSpec(
        name="flux-r",
        title="Flux R version 1 (RFC 20)",
        module="dcx.formats.flux_r",
        family="flux",
        kind="topology",
        extensions=(".R", ".json"),
        schema="flux-r.schema.json",
        description="Flux resource set: R_lite rank/core/gpu idsets, an RFC 29 nodelist, "
        "properties, optional Fluxion scheduling graph.",
    ),
    FormatSpec(
        name="jgf",
        title="Fluxion JSON Graph Format (RFC 40)",
        module="dcx.formats.jgf",
        family="flux",
        kind="topology",
        extensions=(".json",),
        schema="jgf.schema.json",
        description="Fluxion resource graph: typed vertices in a containment tree.",
    ),
    FormatSpec(
        name="gwf",
        title="Grid Workloads Format (GWA and simplified 7-column)",
        module="dcx.formats.gwf",
        family="trace",
        kind="workload",
        extensions=(".gwf",),
        schema="gwf.schema.json",
        description="Grid Workloads Archive traces: the 29-column archive format and the "
        "comma-separated 7-column workflow variant the SC18 simulator reads.",
    ),
    FormatSpec(
        name="swf",
        title="Standard Workload Format (Parallel Workloads Archive)",
        module="dcx.formats.swf",
        family="trace",
        kind="workload",
        extensions=(".swf",),
        schema="swf.schema.json",
        description="18-field job traces with ';' header comments.",
    ),
    FormatSpec(
        name="osp-workload",
        title="jsspp-osp workload JSON",
        module="dcx.formats.osp_workload",
        family="trace",
        kind="workload",
        extensions=(".json",),
        schema="osp-workload.schema.json",
        description="Workflows of tasks with ISO 8601 timestamps (jsspp-osp v1).",
    ),
    FormatSpec(
        name="opendc-setup",
        title="OpenDC SC18 setup.json",
        module="dcx.formats.opendc_setup",
        family="trace",
        kind="topology",
        extensions=(".json",),
        schema="opendc-setup.schema.json",
        description="The SC18 simulator's topology: rooms of racks of machines listing "
        "hard-coded CPU type ids (1 = i7, 2 = i5).",
    ),
)

BY_NAME: dict[str, FormatSpec] = {spec.name: spec for spec in FORMATS}


def get(name: str) -> FormatSpec:
    try:
        return BY_NAME[name]
    except KeyError:
        known = ", ".join(BY_NAME)
        raise KeyError(f"unknown format {name!r}; known formats: {known}") from None


def available() -> tuple[FormatSpec, ...]:
    """Rows whose module is installed (all of them in a complete build)."""
    found = []
    for spec in FORMATS:
        try:
            spec.load()
        except ModuleNotFoundError:
            continue
        found.append(spec)
    return tuple(found)


def _suffix(path: str) -> str:
    dot = path.rfind(".")
    return path[dot:] if dot > path.rfind("/") else ""


def _content_kind(data: bytes) -> str:
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    return "json" if head[:1] in (b"{", b"[") else "xml" if head[:1] == b"<" else "text"


_JSON_SUFFIXES, _XML_SUFFIXES = {".json", ".R"}, {".xml", ".lwf", ".lwfa"}


def _could_be(spec: FormatSpec, kind: str) -> bool:
    """Whether a format can have content whose first byte says ``kind``; this keeps a batch
    of JSON files from importing the XML machinery (start-up is paid per hook batch)."""
    suffixes = set(spec.extensions)
    if kind == "json":
        return bool(_JSON_SUFFIXES & suffixes)
    if kind == "xml":
        return bool(_XML_SUFFIXES & suffixes)
    return bool(suffixes - _JSON_SUFFIXES - {".xml"})


def detect(data: bytes, path: str = "",
           candidates: Iterable[FormatSpec] | None = None) -> FormatSpec | None:
    """The format of ``data``, from its content; the extension only breaks ties.
    ``candidates`` narrows the formats considered (a pre-commit hook for one family)."""
    suffix = _suffix(path)
    kind = _content_kind(data)
    matches = []
    for spec in FORMATS if candidates is None else candidates:
        if not _could_be(spec, kind):
            continue
        try:
            module = spec.load()
        except ModuleNotFoundError:
            continue
        if module.sniff(data):
            matches.append(spec)
    return next((spec for spec in matches if suffix in spec.extensions),
                matches[0] if matches else None)


def for_output_path(path: str) -> list[FormatSpec]:
    """Formats whose extensions match an output file name (several for .json/.xml)."""
    suffix = _suffix(path)
    return [spec for spec in FORMATS if suffix in spec.extensions]
