"""Haizea 1.1 XML: ``<lease-workload>`` (LWF), ``<lease-annotations>`` (.lwfa), ``<site>``,
``<nodes>`` and ``<lease>``, plus the legacy pre-1.0 10-field text LWF (read only; written
back as XML).

Mapping to the model
--------------------

* A ``<site>`` (or a bare ``<nodes>``) becomes ``Environment(one Datacenter, one Room, one
  Rack)`` whose slots are the expanded machines in document order. Haizea numbers nodes by
  position only, so ``Machine.id`` is not held: the reader leaves it ``None`` and the writer
  reports any id as a loss. Per machine: ``CPU`` amount 100 = one core, so a
  scalar ``CPU 400`` is one ``ProcessingUnit(cores=4)``; a multi-instance ``CPU`` (one
  ``<instance>`` per CPU) is one ``ProcessingUnit`` per instance, which is how the model says
  "sockets". CPU amounts that are not whole cores stay a ``NamedResource("CPU")`` in Haizea
  units. ``Memory`` (MB) becomes one ``StorageUnit`` per instance. Every other type is a
  ``NamedResource(name=type, amount, instances)``. A ``resource-types`` list that says more
  than the nodes use is kept in ``Environment.extras["haizea:resource-types"]``.
* On write, consecutive machines with identical capacities form one ``<node-set>`` (order is
  kept, so a round trip restores the machines in the same order).
* A ``<lease-request>`` becomes a ``Job`` holding one ``Task``: ``arrival`` ->
  ``submit_time_s``, ``<duration>`` -> ``requested_time_s``, ``<realduration>`` ->
  ``runtime_s`` (without one a lease runs for its duration, in Haizea's simulator as in real
  mode, so ``runtime_s = requested_time_s``; the writer writes ``<realduration>`` only when
  the two differ), the node-set -> ``request.nodes`` whole nodes (``Placement.NODES``) x
  per-node amounts (``cores`` = CPU/100,
  ``memory_mb``, other types in ``request.resources``; multi-instance CPU and Memory are kept
  there too, with their ``instances``), ``<start/>``/``<now/>``/``<exact>`` -> ``start_mode``
  (+ ``start_time_s``), ``<deadline>`` -> ``deadline_s``, ``<disk-image>`` -> ``image`` and
  ``image_size_mb`` (``<none/>`` -> ``image=None``), ``preemptible``, ``user`` (kept as the
  integer's text), ``<extra>`` attrs -> ``Task.extras`` (unprefixed: it is Haizea's own
  key/value mechanism; names with ':' are set aside together in
  ``extras["haizea:extra-attrs"]``, since prefixed keys belong to formats), except the
  ``SWF_*`` attrs haizea-swf2lwf writes, which are the trace's own columns: ``SWF_waittime``
  -> ``wait_time_s``, ``SWF_avgcputime`` -> ``cpu_time_s`` (seconds, not negative),
  ``SWF_group`` -> ``group``, ``SWF_queue`` -> ``queue``, ``SWF_execnumber`` ->
  ``application`` (text); ``-1`` (SWF's "not recorded") is no value, and a value of another
  kind stays an attr. The writer writes them back from the fields, so SWF -> LWF -> SWF
  keeps them; ``SWF_runtime`` stays an attr (the runtime is ``<realduration>``, which
  haizea-swf2lwf makes 1 s where SWF says 0). ``state`` and
  ``submit-time`` go to ``extras["haizea:state"]`` and
  ``extras["haizea:submit-time"]``. A lease whose node-sets differ keeps the first one as its
  request and all of them in ``extras["haizea:node-sets"]``, which the writer prefers. A lease
  without ``id`` gets its 1-based request position (or, when another lease of the file uses
  that id, the next number above every id of the file) and ``extras["haizea:id-assigned"]``.
* ``normal_form`` (``dcx.core.restrict``, Value restrictions) is what the writer makes of a
  document, and what a conversion's losses are derived from. Nodes: one resource per type
  (the first given survives), types that are not single words dropped, amounts whole and not
  negative, no resource type, unit or own extras; a ``CPU`` resource replaces the machine's
  CPUs (CPUs of whole cores when it has them, else it stays a resource) and a ``Memory``
  resource its memory; memory in whole MB. Leases: in arrival order (stable; the consecutive
  tasks of one job stay one job), as Haizea runs leases in file order and an LWF whose
  arrivals go back draws ``haizea.arrival-order``; times on the 0.01 s grid; a
  deadline before start + duration (which Haizea rejects) left out; every lease has
  a duration, the requested time, else the runtime (what a user expects of the converted
  lease), else 0.01 s (either a ``task.requested_time_s`` loss: SWF or Batsim read the
  duration back as the requested time); every
  lease has a runtime, its duration when it has none (a ``task.runtime_s`` change: the LWF
  says how long a lease runs); ``preemptible`` when unknown as haizea-lwf2xml sets it
  (best-effort leases are); leases numbered 1..n in workload order unless every task id is a
  distinct integer; users that are not integers dropped; requests as their node-set reads
  back (at least one node, whole amounts, CPU in hundredths of a core, a ``CPU`` or
  ``Memory`` resource in place of the cores or memory; whole nodes, so a request for cores
  anywhere is a ``task.request.placement`` loss); image sizes in whole MB; ``<extra>``
  and ``<attributes>`` values as text; annotations kept only in a ``.lwfa`` (no leases, no
  site), which has no name or description, with ids all integers or all positional.
* LWF times are seconds from the workload start (``time_origin`` is ``None``); the writer uses
  Haizea's own ``[D:]HH:MM:SS.ss`` form, so times round-trip at 0.01 s.
* A standalone ``<lease>`` (XML-RPC) has absolute times: ``submit-time``, else the first
  absolute ``<exact>``/``<deadline>``, becomes ``Workload.time_origin``; ``+`` times are
  relative to submission (t = 0).
* ``.lwfa`` becomes ``Workload(annotations=...)``; its times are offsets from each lease's
  submission and are written with a ``+`` prefix, as Haizea does.
* The lease type is derived as Haizea does: empty start = best-effort, ``<now/>`` =
  immediate, ``<exact>`` = AR, ``<exact>`` + ``<deadline>`` = deadline.

Reading an LWF
--------------

An LWF is read by streaming, never as a whole-file tree, in one of three ways with the same
result. The fast path (``fast``) comes first; it gives up at the first thing that would be
reported (a rule of ``rules``, an XSD error, or a description, site or attributes element
after the requests) and then the checked path (``checked``) reads the document from the
start: elements, each request validated against its own XSD, every diagnostic with its line,
column and XPath. Both paths call the same rules. The fast path reads the requests one of
two ways:

* the text scan (``scan``), for plain text (the usual case): each distinct request skeleton
  (the text with attribute values left out) is parsed once into a recipe, and every request
  is read from its values. The document is judged by the factored verdict (``verdict``):
  libxml2 checks the whole document is well-formed, validates it with one request per
  skeleton, and each value is checked against its attribute's type; where that proves
  nothing, libxml2 validates the whole document.
* an lxml parser target, while libxml2 validates the whole document, for what the scan
  declines (comments, references or single-quoted values among the requests, tabs or line
  breaks in values, a few hundred distinct request skeletons).

``benchmarks/bench_haizea.py`` measures the three against a bare lxml parse.

Writing
-------

The writer serialises ``normal_form(document)`` (``writer``); what Haizea cannot hold is
derived from the normal form (``dcx.converters.losses``), not counted by the writer. Its
output reads back without a diagnostic.

Divergences
-----------

* Times: Haizea (mx.DateTime) searches a substring and silently turns a bare number, an ISO
  timestamp or free text into 0 s or the time of day; dcx accepts only the whole string in
  the forms ``[+-][D:]H:M:S[.ss]``, ``[+-][Nd ]H:M[:S[.ss]]`` and ``NdNhNmNs`` (fractions on
  the last colon field or on any unit), and reports anything else as ``haizea.time-syntax``.
  The manual's "DD:HH:MM.SS" is read as Haizea really reads it: ``HH:MM:SS.ss``.
* ``preemptible``: Haizea keeps anything but true/false (any case) as a truthy string; dcx
  reads ``yes``/``no`` (the manual's and OpenNebula's spelling) as booleans with a warning and
  rejects other values.
* Element order is free, as in Haizea (``xs:all``), but unknown elements and attributes are
  errors, where Haizea ignores them; ``numnodes`` must be positive and amounts whole and not
  negative, as the manual says (the code takes 0 and negative numbers).
* Checks Haizea does not make (or makes only in simulated mode) are diagnostics: resource
  types against the site, CPU and Memory in the site, positive durations, deadline not before
  start + duration, unique lease ids (errors); arrivals out of order, a deadline without an
  exact start (Haizea ignores it), a realduration longer than the duration (1.1 ignores it;
  an equal one changes nothing either way, so it passes) (warnings).
* A misplaced XML declaration after leading whitespace (``traces/sample.lwf``) is a warning,
  not a syntax error; Python's ElementTree, which Haizea uses, accepts it.
* The legacy text LWF: ``cpu`` is read as a CPU count (``haizea-lwf2xml`` handles only 1), a
  ``disk`` amount above 0 becomes a ``Disk`` resource, start -1 is best-effort and preemptible,
  anything else an AR that is not preemptible (as ``haizea-lwf2xml``); image names keep their
  quotes.
"""

from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded
from dcx.formats.haizea.vocabulary import FIELD_NAMES, HOLDS, ROOT_SCHEMAS, looks_legacy

__all__ = ["FIELD_NAMES", "FORMAT", "HOLDS", "LOSS_NOTES", "ROOT_SCHEMAS", "TimeSyntaxError",
           "format_time", "loss_notes", "normal_form", "normal_form_losses", "parse_time",
           "parse_time_uncached", "read", "sniff", "write"]

# The readers, the writer and lxml load on first use: the pre-commit hook imports every
# format's declaration to sniff, and most of its files are not Haizea's.
_LAZY = {
    "TimeSyntaxError": "times", "format_time": "times", "parse_time": "times",
    "parse_time_uncached": "times",
}


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


def sniff(data: bytes) -> bool:
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"<"):
        from dcx.parsing.xmlio import root_name

        return root_name(data) in ROOT_SCHEMAS
    return looks_legacy(head)


read = deferred("dcx.formats.haizea.reader", "read")


write = deferred("dcx.formats.haizea.writer", "write")


normal_form = deferred("dcx.formats.haizea.normalise", "normal_form")


normal_form_losses = deferred("dcx.formats.haizea.normalise", "normal_form_losses")


LOSS_NOTES: dict[str, str] = {
    "task.requested_time_s": ("a lease without a requested time gets its runtime as its "
                              "duration (else 0.01 s): Haizea requires one"),
    "task.request.placement": ("a request for cores anywhere is written as whole nodes, "
                               "its node count and cores per node as they were"),
}
"""What the normal form does at these paths, said on their loss lines (the same words for
every document, so a conversion in slices says what the whole one says)."""


def loss_notes(document: object) -> dict[str, str]:
    """``FormatDeclaration.loss_notes`` (``LOSS_NOTES``)."""
    return LOSS_NOTES


CODES = (
    Code("haizea.root", "error", "The root element is not a Haizea element (lease-workload, "
         "lease-annotations, site, nodes, lease), or an LWF has no <lease-workload> root."),
    Code("haizea.xml-declaration", "warning", "The XML declaration does not start the file "
         "(whitespace comes first); Haizea's ElementTree takes it, strict XML parsers do not.",
         conformance=True),
    Code("haizea.time-syntax", "error", "A time is outside Haizea's grammar ([+-][D:]H:M:S[.ss], "
         "H:M, NdNhNmNs; absolute YYYY-MM-DD HH:MM:SS), which Haizea would silently misread."),
    Code("haizea.amount-ignored", "warning", "A <res> has both an amount and <instance> "
         "children; Haizea ignores the amount."),
    Code("haizea.res-missing-amount", "error", "A <res> has neither an amount nor <instance> "
         "children."),
    Code("haizea.duplicate-resource", "warning", "A resource type appears twice in one "
         "node-set; Haizea keeps the last."),
    Code("haizea.duplicate-resource-type", "warning", "A site lists a resource type twice in "
         "<resource-types>."),
    Code("haizea.site-missing-cpu-memory", "error", "A site does not declare CPU and Memory, "
         "which Haizea's simulator requires."),
    Code("haizea.undeclared-resource-type", "error", "A site node uses a resource type its "
         "<resource-types> does not list (Haizea raises)."),
    Code("haizea.site-empty", "warning", "The site has no nodes."),
    Code("haizea.unknown-resource-type", "error", "Leases ask for a resource type the site does "
         "not declare (Haizea's slot table fails)."),
    Code("haizea.duplicate-lease-id", "error", "Two leases of the file have the same id."),
    Code("haizea.preemptible-yes-no", "warning", "preemptible is yes/no (the manual's "
         "spelling); Haizea understands only true/false and keeps it as a truthy string.",
         conformance=True),
    Code("haizea.preemptible", "error", "preemptible is neither true nor false."),
    Code("haizea.duration-not-positive", "error", "A duration or realduration is zero or "
         "negative."),
    Code("haizea.realduration-ignored", "warning", "A realduration is longer than the "
         "duration; Haizea 1.1 ignores it and the lease ends at its duration."),
    Code("haizea.deadline-ignored", "warning", "A deadline without an <exact> start, which "
         "Haizea ignores."),
    Code("haizea.deadline-too-early", "error", "A deadline before start + duration."),
    Code("haizea.lease-no-nodes", "error", "A lease asks for no node-set."),
    Code("haizea.duplicate-attr", "warning", "An <attr> name is given twice in one <extra> or "
         "<attributes>; the last one wins."),
    Code("haizea.arrival-order", "warning", "Lease requests arrive out of order; Haizea runs "
         "them in file order and does not sort them.", conformance=True),
    Code("haizea.empty-workload", "warning", "The workload has no lease requests."),
    Code("haizea.annotation-ids-mixed", "error", "Some lease annotations have an id and some "
         "do not; Haizea needs all or none."),
    Code("haizea.legacy-encoding", "error", "A legacy text LWF is not valid UTF-8."),
    Code("haizea.legacy-fields", "error", "A legacy text LWF line does not have its ten "
         "fields."),
    Code("haizea.legacy-number", "error", "A legacy text LWF field is not a number (or "
         "numnodes is not a positive integer)."),
    Code("haizea.write.character", "error", "A text holds a character XML 1.0 cannot carry, "
         "so the Haizea writer cannot write it."),
)


FORMAT = FormatDeclaration(
    name="haizea",
    title="Haizea XML (nodes, site, lease, LWF, LWFA)",
    family="haizea",
    kind="both",
    extensions=(".lwf", ".lwfa", ".xml"),
    content=frozenset({"xml", "text"}),
    schema="haizea-lease-workload.xsd",
    description=("Haizea 1.1 lease workloads with their site, single leases, node sets "
                 "and lease annotations; legacy 10-field text LWF is read too."),
    own_extras=frozenset({"environment.extras", "task.extras"}),
    holds=HOLDS,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    loss_notes=loss_notes,
    codes=CODES,
    field_names=FIELD_NAMES,
)
