"""Flux resource set R version 1 (RFC 20): read, validate and write.

Structure is checked by ``schemas/flux-r.schema.json``; this module checks what a schema
cannot: the RFC 22 idsets and RFC 29 hostlists (with the character position of a fault),
nodelist hosts mapping one to one onto the sorted union of ranks, duplicate ranks (merged
when their children are disjoint, an error when they overlap), property targets, and
expiration after starttime. A Fluxion graph in ``scheduling`` is validated as JGF
(``dcx.parsing.fluxion``) and must describe the same hosts, cores and GPUs as R_lite (for a
``jgf_shorthand`` graph, only the same hosts).

Model mapping: one ``Machine`` per rank in rank order, in one datacenter, room and rack;
``name`` from the nodelist host, ``rank``, one CPU with the core count (none for an empty
core idset, so CPUs without cores are a ``machine.cpus`` loss), one GPU per GPU id
(``id`` = the logical id), properties → features (a property covering only some ranks is a
feature of those machines). Logical core ids other than ``0..n-1`` are kept in
``Machine.extras["flux-r:core"]``. ``starttime`` and ``expiration`` are
``Environment.validity`` (``0`` is unset; JGF keeps the window too, so R → JGF → R keeps
it). ``nslots``, ``scheduling`` and the legacy ``attributes`` are kept verbatim in
``Environment.extras`` under ``flux-r:<key>``.

When no two R_lite entries list the same rank, each run of consecutive ranks of one entry
with the same properties is one machine group (``dcx.core.groups``): its ranks a range, its
names a window of the decoded nodelist. A million ranks of one entry are then one object, and
validating, counting, deriving losses and writing R back never make single machines. Entries
that share ranks (their children merge rank by rank) and legacy R take one machine per rank.

The writer is canonical: R_lite entries grouped by identical children, ranked in order, and
one compressed nodelist entry. Machines without a rank get ranks ``0..n-1`` in topology
order (as ``flux R encode`` numbers them).

Required host names
-------------------
RFC 20 requires the nodelist, so the writer always writes one and every machine needs a host
name (``requires``: ``machine.name``): its name when a hostlist can spell it (printable ASCII
without ``,[]``), else its id when that can be spelled, else ``node<N>`` (``N`` its 1-based
position among the document's machines), by ``dcx.core.ids.required_machine_name``. A
machine without a name gains one, which adds what the source did not say and is no loss; a
name replaced because a hostlist cannot spell it is a ``machine.name`` loss
(``normal_form``).

Child types beyond core and gpu
-------------------------------
RFC 20 defines only ``core`` and ``gpu`` children; this reader warns about any other type
(``flux-r.extra-child-type``) and keeps its idset in ``Machine.extras["flux-r:children"]``,
so R → R keeps it and a conversion to another format reports it lost (``machine.extras``).
The model's named resources (a Haizea ``Disk`` of 100,000 MB, a JGF ``ssd``) are capacities
or devices R has no child type for: R does not hold ``machine.resources``, so a conversion
reports them lost instead of writing children that dcx's own reader would flag.

What dcx reads
--------------
* **R version 1, RFC 20 as of 2026** (flux-framework/rfc, flux-core v0.88 ``librlist``):
  ``R_lite`` with ``rank``/``children`` idsets, ``nodelist`` hostlists (RFC 29),
  ``properties``, ``nslots``, ``starttime``/``expiration`` (integers as Fluxion writes them
  or fractional seconds as flux-core does; ``0`` is unset; kept through JGF, see
  ``Environment.validity``), ``scheduling`` with a Fluxion graph (``writer``
  ``fluxion:jgf`` or ``fluxion:jgf_shorthand``).
* **R before the nodelist** (flux-core before 2020-09): R_lite ``node`` keys, read with
  ``flux-r.legacy-node-key``; R with ``attributes.system.scheduler`` (removed from RFC 20 in
  2025-09), read with ``flux-r.legacy-attributes``.
* **R without a nodelist** (flux-core accepts it): hosts named ``node1`` … ``nodeN`` by
  every writer (see Required host names).
* **Child types beyond core and gpu** (flux-sched's ``memory`` child): kept (see above).

Divergences
-----------
* ``nodelist`` missing: RFC 20 requires it, flux-core accepts it; dcx warns.
* ``children.core`` missing: RFC 20 requires it, flux-core accepts it; dcx warns.
* Property names containing ``!``: forbidden by RFC 20, accepted by librlist; dcx rejects.
* ``expiration`` not after ``starttime``: invalid by RFC 20, unchecked by flux-core; dcx
  rejects. Negative times, ``nslots`` below 1 and a non-object ``scheduling`` are rejected
  (flux-core drops or keeps them silently).
* Legacy R (R_lite ``node`` key, top-level ``attributes``) is read with a warning.
* R_lite entries without ``rank`` (Fluxion's rv1 writer on rank -1 graphs) are invalid, as
  in flux-core.
* Unknown keys in ``execution`` are rejected: RFC 20 reserves them.
"""

from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded

__all__ = ["CHILDREN", "CODES", "FORBIDDEN_PROPERTY_CHARACTERS", "FORMAT", "HOLDS",
           "MAX_DEVICES", "MAX_RANKS", "PREFIX", "REQUIRES", "SCHEMA", "SPLIT_HOSTLIST_RUNS",
           "normal_form", "normal_form_losses", "read", "sniff", "write"]

# The reader, the normal form, the writer and the parsing layer (hostlists, Fluxion graphs,
# JSON, schemas) load on first use: the pre-commit hook imports every format's declaration
# to sniff.
_LAZY = {
    "SCHEMA": "vocabulary", "PREFIX": "vocabulary", "FORBIDDEN_PROPERTY_CHARACTERS": "vocabulary",
    "CHILDREN": "vocabulary", "MAX_RANKS": "vocabulary", "MAX_DEVICES": "vocabulary",
    "SPLIT_HOSTLIST_RUNS": "reader",
}


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


HOLDS = frozenset({
    "machine.name", "machine.cpus", "machine.gpus", "gpu.id", "machine.features",
    "machine.rank", "environment.validity",
})
REQUIRES = frozenset({"machine.name"})


def sniff(data: bytes) -> bool:
    """One R object: ``execution`` (or ``scheduling`` next to ``version``) at the top level.
    Tolerates broken JSON so that an invalid R is reported as an invalid R."""
    head = data[:65536]
    if b'"execution"' not in head and b'"scheduling"' not in head:
        return False
    from dcx.parsing.json_head import top_level_keys

    keys = top_level_keys(data)
    top = keys["1"]
    if "$schema" in top or "graph" in top:
        return False
    return "execution" in top or {"version", "scheduling"} <= top


read = deferred("dcx.formats.flux_r.reader", "read")


write = deferred("dcx.formats.flux_r.writer", "write")


normal_form = deferred("dcx.formats.flux_r.normaliser", "normal_form")


normal_form_losses = deferred("dcx.formats.flux_r.normaliser", "normal_form_losses")


CODES: tuple[Code, ...] = (
    Code("flux-r.not-object", "error", "The file is not one JSON object."),
    Code("flux-r.idset", "error", "An idset (ranks, children, property targets) breaks RFC 22."),
    Code("flux-r.hostlist", "error", "A nodelist entry breaks RFC 29 (or a flux-core limit)."),
    Code("flux-r.nodelist-count", "error",
         "The nodelist names a different number of hosts than R_lite has ranks."),
    Code("flux-r.nodelist-missing", "warning",
         "The nodelist is missing (RFC 20 requires it; flux-core accepts it).",
         conformance=True),
    Code("flux-r.core-missing", "warning",
         "An R_lite entry has no core child (RFC 20 requires it; flux-core accepts it).",
         conformance=True),
    Code("flux-r.extra-child-type", "warning",
         "An R_lite child type other than core and gpu (reserved by RFC 20); kept."),
    Code("flux-r.legacy-node-key", "warning",
         "R_lite entries carry the legacy node key (R before the nodelist, 2020)."),
    Code("flux-r.legacy-attributes", "warning",
         "Top-level attributes is legacy (removed from RFC 20 in 2025)."),
    Code("flux-r.too-large", "error",
         "More ranks, or more GPUs per rank, than dcx models one by one."),
    Code("flux-r.rank-overlap", "error",
         "A rank appears in several R_lite entries whose children overlap."),
    Code("flux-r.property-rank", "error", "A property targets a rank R_lite does not list."),
    Code("flux-r.expiration", "error", "The expiration is not after the starttime."),
    Code("flux-r.scheduling-mismatch", "error",
         "The scheduling graph describes other hosts, cores or GPUs than R_lite."),
)


FIELD_NAMES: dict[str, str] = {
    "environment.validity": "execution starttime / expiration",
    "machine.name": "execution nodelist",
    "machine.rank": "R_lite rank",
    "machine.cpus": "R_lite children core",
    "machine.gpus": "R_lite children gpu",
    "gpu.id": "R_lite children gpu ids",
    "machine.features": "execution properties",
}
"""Flux R's keys for the fields (``FormatDeclaration.field_names``)."""

FORMAT = FormatDeclaration(
    name="flux-r",
    title="Flux R version 1 (RFC 20)",
    family="flux",
    kind="topology",
    extensions=(".R", ".json"),
    content=frozenset({"json"}),
    schema="flux-r.schema.json",
    description=("Flux resource set: R_lite rank/core/gpu idsets, an RFC 29 nodelist, "
                 "properties, optional Fluxion scheduling graph."),
    own_extras=frozenset({"environment.extras", "machine.extras"}),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    requires=REQUIRES,
    codes=CODES,
    field_names=FIELD_NAMES,
)
