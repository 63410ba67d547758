"""SimGrid platform XML, DTD version 4.1: the platform file of SimGrid simulators (Batsim,
WRENCH, SMPI). ``<platform version="4.1">`` holds one root ``<zone>``; zones hold sub-zones and
``<cluster>`` elements, or ``<host>`` elements; links, routes and routers connect them. SimGrid
ships only a DTD (``simgrid.dtd``); ``xsd/simgrid.xsd`` describes the subset dcx reads, and a
``<!DOCTYPE platform SYSTEM "…simgrid.dtd">`` is accepted without ever being fetched, whatever
its URL (the old ``http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd`` too).

What dcx reads
--------------

The shapes of the files SimGrid and Batsim ship, read as SimGrid 3.32 reads them:

* version 4.1 (SimGrid 3.16 on): ``<zone>``, ``<zoneRoute>``, ``<actor>``;
* version 4 (SimGrid 3.13 on): the same with the older names SimGrid 4.1 still reads,
  ``<AS>`` for ``<zone>``, ``<ASroute>``, ``<bypassASroute>``, ``<process>``;
* version 3 (SimGrid 3.5 to 3.12): ``power`` where version 4 says ``speed``. SimGrid 3.13 and
  later refuse it until ``simgrid_update_xml`` upgrades it; dcx reads it as the upgrade would,
  with the warning ``simgrid.old-version``; its storage elements (removed in SimGrid 3.27) are
  not kept;
* hosts wherever they are declared: ``<host>``, the hosts of a ``<cluster>`` and of a
  ``<cabinet>`` (``prefix`` + number + ``suffix`` for each number of ``radical``, one core each:
  SimGrid's meta_cluster.xml, Batsim's cluster_locality platforms, whose cabinets share one
  id), and ``<peer>`` (one host of one core named by its id, in Vivaldi zones);
* whitespace or a blank line before the XML declaration (Batsim's platforms), which SimGrid's
  parser skips and XML forbids;
* the DOCTYPE: SimGrid's parser refuses a platform without ``<!DOCTYPE platform SYSTEM
  "https://simgrid.org/simgrid.dtd">`` or the older ``"http://simgrid.gforge.inria.fr/simgrid/
  simgrid.dtd"`` (SimGrid 3.11's ``…inria.fr/simgrid.dtd`` too); dcx reads such a file with
  the warning ``simgrid.doctype``.

Model mapping
-------------

==========================  ===================================================================
SimGrid                     model
==========================  ===================================================================
root ``zone``               one datacenter, one room; its ``id`` is kept in
                            ``Environment.extras["simgrid:root"]``, its routing (when not
                            ``Full``) in ``Environment.extras["simgrid:routing"]``
``cluster``                 a :class:`Rack` whose ``id`` is the cluster's; one machine per
                            number of ``radical``, named ``prefix`` + number + ``suffix``
                            (unpadded); ``prefix``, ``suffix``, ``bw``, ``lat`` and the other
                            attributes are kept as ``Rack.extras["simgrid:<attribute>"]``; the
                            cluster's props go onto every machine, as SimGrid puts them
a zone holding hosts         a :class:`Rack` whose ``id`` is the zone's (hosts, cabinets' and
                            peers' hosts, in document order) (its routing, when not
                            ``Full``, in ``Rack.extras["simgrid:routing"]``); hosts directly in
                            the root zone are one rack whose id is the root zone's
``host id``                 ``Machine.id`` (the integer when it is canonical decimal text) and
                            ``Machine.name`` (the text): SimGrid knows a host by one name
``host core``               one CPU of that many cores
``host speed``              the CPU's ``clock_rate_hz`` (see Speed); ``0f`` is no clock rate
``host prop``               ``Machine.extras["simgrid:prop:<id>"]`` (Batsim's ``role``,
                            energy plugins' ``wattage_per_state`` … mean something only to
                            SimGrid simulators, so other formats drop them, a reported loss)
==========================  ===================================================================

Speed. SimGrid speeds are flop/s per core; dcx's model has clock rates. dcx maps one flop per
cycle: a speed of ``2.4Gf`` is a 2.4 GHz clock and back. The round trip is exact, and the
simulated time of a compute profile is flops ÷ speed as if each core retired one flop per
cycle; scale the speeds of a written platform when the application's flops per cycle matter.
A comma list gives one speed per power state: the clock rate is the one of the host's
``pstate`` (default 0), and the list (and ``pstate``) are kept in
``Machine.extras["simgrid:speeds"]`` and ``["simgrid:pstate"]``. Power states are written
whole: the list when the clock is still its state's speed, and the energy plugin's
``wattage_per_state`` prop only with one entry per speed written (else it is a loss: SimGrid's
energy plugin aborts on "Found 3 energetic profiles for 1 pstates").

Validation judges the file: what the model cannot hold is no warning of ``dcx validate``
but a loss of ``dcx convert --losses``. The reader names it, with counts, in
``Environment.extras["simgrid:not-kept"]`` (``"<link> (3), <route> (8)"``), which no target
keeps: links, backbones, routes, routers, traces, configuration, actors, disks, zone props,
the links of cabinets and peers, per-host availability and state files, and zones nested
below the root's children (their hosts are kept, in racks of the innermost zones).

A host of speed ``0f`` draws the warning ``simgrid.no-speed`` (``validate --strict`` refuses
the file): work never finishes on it. Batsim's storage hosts (``<prop id="role"
value="storage"/>``) are meant so and are not warned of.

A written platform has no links or routes: it is a topology, and SimGrid needs a network
added before hosts in different racks communicate (clusters written from SimGrid files keep
their ``bw`` and ``lat``, so their own network is whole).

Writing: ``normal_form(document)`` and nothing else. A rack becomes a ``<cluster>`` when it
came from one (its ``simgrid:prefix``, ``suffix``, ``bw`` and ``lat`` extras are there) and
still fits one (identical machines named prefix + number + suffix). A rack of at least 1,024
such machines that came from no cluster (a Flux R of a million ranks, a Slurm host range)
becomes one too, with a network of dcx's (``bw="1.25GBps" lat="0s"``: SimGrid requires one):
one element instead of one ``<host>`` per machine. Otherwise a ``<zone routing="Full">`` of
hosts, written a line per host from a machine group's template and names (no machine object
each). A cluster reads back as one machine group whose names are made when asked.

Every machine needs an id (a machine without one gets its name, or ``node<N>``: the required-ids
normal form), every rack one too (``rack<N>``); ids are text, unique across hosts, zones and
clusters (SimGrid names them in one namespace). Value restrictions the normal form reports as
losses: ids that do not read back as themselves or clash (renamed ``node<N>`` / ``rack<N>``), a
name other than the id, a machine without CPUs (one core), several CPUs (one host of all
their cores: ``machine.cpus.sockets``), props XML cannot carry. A machine
without a positive clock rate is not written (SimGrid would get a host of speed ``0f``), unless
its ``role`` prop says Batsim stores on it: when some are left out, ``dcx convert`` says which
and hints at ``--fill clock-rate=…``. Memory, GPUs, states and the hierarchy above racks are not
held.

Checks: the XSD, then what it cannot say: version 4.0 to 4.1 (SimGrid rounds it to 1/100),
zone routings SimGrid knows (compared ignoring case, as SimGrid does), one root zone, no zone
holding both hosts and sub-zones or clusters, unique host ids, radicals of bounded size (at
most ``LIMITS.max_hostlist_range`` hosts, 32-bit numbers), known speed units (SimGrid's are
case-sensitive), a ``pstate`` inside the speed list. Errors carry line, column and the
element's XPath.

Peer
----

SimGrid 3.32 (Debian's ``python3-simgrid``) checks dcx's output: ``tests/peers/peer_simgrid.py``
loads each platform with SimGrid's own loader, compares host count, names, speeds and core
counts with what dcx reads, and runs one actor per host doing 10^9 flops, which must finish at
work ÷ speed; platforms with energy figures load with SimGrid's energy plugin. It accepts the
example and the SimGrid platforms dcx writes from every other example and from SimGrid's own
platforms (including version 3 files, which dcx's rewrite upgrades to 4.1).

Divergences
-----------

1. SimGrid's radical parser reads numbers with C's ``stoi``, which skips trailing garbage
   (``3x`` is 3); dcx requires digits. A range whose end is below its start yields no host in
   SimGrid; dcx reads it the same way with a warning. The documentation's ``a-b;step`` form
   does not exist in SimGrid's code and is an error here too.
2. SimGrid warns about a bare non-zero speed and reads it as flop/s; dcx does the same and
   always writes a unit.
3. SimGrid refuses version 3; dcx reads it (see What dcx reads). ``<include>`` is refused,
   as SimGrid has refused it since 3.18.
"""

from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded

__all__ = [
    "CLUSTER_KEYS", "CLUSTER_LEAST", "CLUSTER_OPTIONAL", "CLUSTER_REQUIRED", "CODES", "DCX_BW",
    "DCX_LAT", "DEFAULT_ROOT", "DOCTYPE", "FORMAT", "HOLDS", "HOST_FILES", "INT32_MAX",
    "NOT_KEPT_KEY", "PREFIX", "PROP_PREFIX", "REQUIRES", "ROOT_KEY", "ROUTINGS", "ROUTING_KEY",
    "SPEED_UNITS", "XSD_NAME", "AffixedNumbers", "leaves_out", "normal_form",
    "normal_form_losses", "radical_numbers", "read", "sniff", "write",
]

# The reader, the writer and what they import load on first use: the pre-commit hook imports
# every format's declaration to sniff, and most of its files are not this format's.
_LAZY = dict.fromkeys({
    "AffixedNumbers", "CLUSTER_KEYS", "CLUSTER_LEAST", "CLUSTER_OPTIONAL", "CLUSTER_REQUIRED",
    "DCX_BW", "DCX_LAT", "DEFAULT_ROOT", "DOCTYPE", "HOST_FILES",
    "INT32_MAX", "NOT_KEPT_KEY", "PREFIX", "PROP_PREFIX", "ROOT_KEY", "ROUTINGS", "ROUTING_KEY",
    "SPEED_UNITS", "radical_numbers",
}, "codec")


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


XSD_NAME = "simgrid.xsd"


HOLDS = frozenset({"rack", "rack.id", "machine.id", "machine.name", "machine.cpus",
                   "cpu.clock_rate_hz"})
REQUIRES = frozenset({"machine.id"})


def sniff(data: bytes) -> bool:
    from dcx.parsing.xmlio import root_name

    return root_name(data) == "platform"


read = deferred("dcx.formats.simgrid.codec", "read")


write = deferred("dcx.formats.simgrid.codec", "write")


normal_form = deferred("dcx.formats.simgrid.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.simgrid.codec", "normal_form_losses")


leaves_out = deferred("dcx.formats.simgrid.codec", "leaves_out")


CODES = (
    Code("simgrid.root", "error", "The root element is not <platform>."),
    Code("simgrid.version", "error", "The platform version is not 3, 4.0 or 4.1."),
    Code("simgrid.doctype", "warning",
         "The DOCTYPE is missing or names a DTD SimGrid's parser refuses (it takes "
         "https://simgrid.org/simgrid.dtd and http://simgrid.gforge.inria.fr/simgrid/simgrid.dtd)."),
    Code("simgrid.old-version", "warning",
         "Platform version 3: SimGrid refuses it until simgrid_update_xml upgrades it; dcx "
         "reads it as upgraded."),
    Code("simgrid.speed-attribute", "error",
         "An element lacks the speed attribute of the platform's version (power in version 3, "
         "speed from version 4)."),
    Code("simgrid.routing", "error", "A zone's routing is not one SimGrid knows (any case)."),
    Code("simgrid.root-zones", "error", "The platform has more than one root zone."),
    Code("simgrid.mixed-zone", "error",
         "A zone holds both hosts and sub-zones or clusters (SimGrid allows one or the other)."),
    Code("simgrid.duplicate-id", "error", "Two hosts (or cluster hosts) have the same id."),
    Code("simgrid.radical", "error",
         "A cluster radical is not comma-separated numbers and a-b ranges, or is too large."),
    Code("simgrid.radical-empty", "warning",
         "A radical range ends below its start; SimGrid makes no host of it."),
    Code("simgrid.unit", "error",
         "A speed has a unit SimGrid does not know (units are case-sensitive)."),
    Code("simgrid.unitless", "warning",
         "A speed has no unit (SimGrid reads flop/s and warns it is deprecated)."),
    Code("simgrid.pstate", "error", "A host's pstate is not an index into its speed list."),
    Code("simgrid.no-speed", "warning",
         "Hosts have speed 0: work never finishes on them (Batsim storage hosts, marked "
         "with the role prop, are not warned of); dcx writes no host without a speed."),
)

FIELD_NAMES: dict[str, str] = {
    "rack": "zone",
    "rack.id": "zone/@id",
    "machine.id": "host/@id",
    "machine.name": "host/@id (cluster prefix + radical + suffix)",
    "machine.cpus": "host/@core",
    "cpu.clock_rate_hz": "host/@speed",
}
"""SimGrid's platform elements and attributes for the fields (``FormatDeclaration.field_names``)."""

FORMAT = FormatDeclaration(
    name="simgrid",
    title="SimGrid platform XML 4.1",
    family="simulator",
    kind="topology",
    extensions=(".xml",),
    content=frozenset({"xml"}),
    schema=XSD_NAME,
    description=("SimGrid's platform: zones of clusters (prefix, radical, suffix) and hosts "
                 "with cores and speeds (one flop per cycle)."),
    holds=HOLDS,
    requires=REQUIRES,
    own_extras=frozenset({"environment.extras", "rack.extras", "machine.extras"}),
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    leaves_out=leaves_out,
    codes=CODES,
    field_names=FIELD_NAMES,
)
