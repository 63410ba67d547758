"""Slurm node configuration: the ``NodeName=``, ``PartitionName=`` and ``DownNodes=`` lines of
``slurm.conf``.

Grammar (Slurm's ``parse_config.c``): a ``#`` ends the line unless an odd number of
backslashes precedes it; a line whose last non-blank characters are an odd number of
backslashes continues on the next; then every backslash escapes the character after it
(``\\#`` is ``#``, ``\\\\`` is ``\\``). A line is ``Key=Value`` pairs separated by blanks;
keys are case-insensitive, blanks may surround ``=``, and a value is a double-quoted string
(``Reason="bad DIMM"``) or runs to the next blank. Words Slurm reads case-insensitively
(``State``, ``Default``, ``MaxTime`` words) are upper-cased.

Each ``NodeName``, ``PartitionName`` and ``DownNodes`` line becomes a record of its pairs
(keys in the man page's spelling, ``Procs`` read as ``CPUs`` and ``Feature`` as
``Features``), validated by ``schemas/slurm.schema.json``; diagnostics point at
``/lines/<line number>/<Key>`` with the line and column of the value. ``NodeName=DEFAULT``
and ``PartitionName=DEFAULT`` set values for the lines after them and accumulate, as in
Slurm; ``NodeName=DEFAULT`` refuses ``NodeAddr``, ``NodeHostname`` and ``BcastAddr``.

Model mapping
-------------

One ``Machine`` per node, in the order the ``NodeName`` lines and their hostlists name them,
in one datacenter, room and rack (slurm.conf has no physical hierarchy). The nodes of one
``NodeName`` line that differ in their names alone (no ``NodeAddr``, ``NodeHostname``,
``BcastAddr`` or ``Port`` list with a value per node, no ``DownNodes`` line naming one) are
held as one machine group
(``dcx.core.groups``): the line's values once, with the names its hostlist gives; a
100,000-node line is one group, expanded only where a writer or the scheduler needs single
machines.

=====================================  ===================================================
Slurm                                  model
=====================================  ===================================================
``NodeName`` (hostlist)                ``Machine.name``, one machine per host
``Sockets`` x ``CoresPerSocket``       ``cpus``: one ``ProcessingUnit(cores=CoresPerSocket)``
                                       per socket; no CPU key at all: Slurm's default,
                                       one socket of one core (``slurm.default-cpus``,
                                       a warning: ``--strict`` refuses the file)
``Boards``, ``SocketsPerBoard``        sockets = Boards x SocketsPerBoard; ``Boards`` above 1
                                       in ``extras["slurm:Boards"]``
``ThreadsPerCore``                     ``extras["slurm:ThreadsPerCore"]`` when not 1
``CPUs`` (``Procs``)                   derived (Sockets x Cores x Threads); kept in
                                       ``extras["slurm:CPUs"]`` when it is Sockets or
                                       Sockets x Cores (hyper-threads not scheduled)
``RealMemory`` (MB = 2**20 bytes)      ``memory``: one ``StorageUnit``; absent: no
                                       ``memory`` (Slurm shows its default, 1 MB, which
                                       stands for "not configured")
``TmpDisk`` (MB)                       ``storage``: one ``StorageUnit``
``Gres`` ``gpu[:type]:n``              ``gpus``: n ``ProcessingUnit(cores=1, model=type)``
other ``Gres`` ``name[:type]:n``       ``resources``: ``NamedResource(name, n, type)``
``Features``                           ``features``, in order
``State``                              ``state`` and ``state_label`` (table below)
``DownNodes`` lines                    their nodes' ``state``, ``state_label`` and
                                       ``extras["slurm:Reason"]`` (below)
``NodeAddr``, ``NodeHostname``,        ``extras["slurm:<Key>"]``: per node, one host (or
``BcastAddr``, ``Port``                port) of the line's hostlist each, or the one value
                                       the list names for every node (IPv6 addresses too;
                                       a port list not in brackets is bracketed, as Slurm
                                       does: ``Port=7001-7004`` is 4 ports)
``Weight``, ``Reason``, ...            ``extras["slurm:<Key>"]``: the value as written
``ClusterName``                        ``Environment.name`` (double-quoted when it has
                                       blanks; Slurm lower-cases it for accounting)
``PartitionName`` lines                ``Environment.partitions``, defaults applied:
``PartitionName``                      ``Partition.name``
``Nodes``                              ``Partition.machines``: the node names of its
                                       hostlist, each once, in the order it names them
                                       (a ``NodeSet`` name: that set's nodes, from its
                                       ``Nodes`` or ``Feature``); ``ALL``: ``None``
                                       (every machine)
``AllowGroups``                        ``allow_groups``: the comma-separated names;
                                       absent or ``ALL``: ``None`` (everyone)
``AllowAccounts``, ``AllowQos``        ``allow_accounts``, ``allow_qos``: likewise
``DenyAccounts``, ``DenyQos``          ``deny_accounts``, ``deny_qos``
other partition keys                   ``Partition.extras["slurm:<Key>"]``: as written
                                       (``MaxTime``, ``Default``, ``State``, ...)
other lines (``SlurmctldHost``, ...)   ``Environment.extras["slurm:config"]``: each line as
                                       a list of ``[key, value]`` pairs, as written
=====================================  ===================================================

Partitions are not racks or datacenters: a node may belong to several partitions (and to
none), while a machine sits in exactly one rack, and a partition says who may use nodes,
not where they stand. They are the model's ``Environment.partitions``, which the
scheduler's R2 ``PARTITION`` policy reads; formats other than Slurm drop them (an
``environment.partitions`` loss). ``GresTypes`` is not kept: the writer derives it from the
generic resources the nodes have (types listed but used by no node are not kept). Global
parameters other than ``ClusterName`` and ``GresTypes`` are kept as written and not checked;
``Include`` lines are kept but not followed (dcx reads one file; ``slurm.include``) and not
written back.

Counts with a suffix (``mps:4K``) are multiplied by 1024 per step (K, M, G, T, P). The GRES
flag ``no_consume`` is not kept (``slurm.gres-flag``); the resource is read as consumable.

State table (``State`` is case-insensitive):

==================  ===========  =================
Slurm               model        written for it
==================  ===========  =================
(absent), UNKNOWN   ACTIVE       (nothing)
DOWN, FAIL          FAILURE      DOWN
DRAIN, FAILING      MAINTENANCE  DRAIN
FUTURE, CLOUD       HALT         FUTURE
==================  ===========  =================

The word is kept in ``state_label`` unless it is the one written for its state (or absent);
the writer writes ``state_label`` when it is a Slurm word of the same state.

A ``DownNodes=<hostlist> [State=<word>] [Reason=<text>]`` line sets the state and reason of
nodes its hostlist names, over what their ``NodeName`` line says, as slurmctld applies it
(``_handle_downnodes_line``) after building every node, so it may come before or after them
and later lines win. ``State`` is DOWN, DRAIN, FAIL, FAILING, FUTURE (the man page's words,
mapped as in the table) or UNKNOWN, which leaves the state as it was and only sets the
reason; without ``State`` the nodes are DOWN. Without ``Reason`` they get Slurm's own,
``Set in slurm.conf``, which is what ``scontrol show node`` then shows. Nodes no ``NodeName``
line defines are skipped with a warning (``slurm.down-node``), as Slurm does.

Checks (besides the schema): hostlists (Slurm's syntax, see below), ``NodeAddr``,
``NodeHostname``, ``BcastAddr`` and ``Port`` counts (``node_conf.c``: one per node of the
line, or one for all of them; without ``NodeAddr`` a node's address is its ``NodeHostname``,
and without that its name), ports from 1 to 65535, duplicate node and partition names,
``NodeName=ALL``, CPU counts Slurm would reset (``slurm.cpus-mismatch``,
``slurm.cpu-topology``) or default (``slurm.default-cpus``), numbers beyond the width Slurm
stores them in, ``Gres`` items, generic resources missing from ``GresTypes``,
partitions naming nodes no ``NodeName`` line defines (``ALL`` and ``NodeSet`` names are
allowed), ``DownNodes`` naming undefined nodes, unknown and repeated keys.

Writing
-------

The writer serialises ``normal_form(document)``: ``ClusterName``, the kept global lines,
``GresTypes``, then one ``NodeName`` line per run of consecutive nodes that differ only in
their names, addresses and ports (a compact hostlist; an address or port every node of
the line shares is written once; runs keep the machines' order; a machine group is part of
a run as a whole, never expanded), then the partitions. A machine's state
and reason are written on its ``NodeName`` line (``State=``, ``Reason=``), never as
``DownNodes``: ``NodeName``'s ``State`` takes every word the model keeps (CLOUD and UNKNOWN
too), and a ``NodeName`` line without ``Reason`` gives no reason, whereas ``DownNodes``
always gives one; so each machine reads back with its own state, label and reason. slurmctld
builds the same node table from either spelling; the price is that a node whose state
differs from its neighbours' ends their line, and a file's ``DownNodes`` lines come back
folded into its ``NodeName`` lines. Sockets of one core without threads are written as
``CPUs=<sockets>`` alone (Slurm infers one core per socket), others as ``Sockets`` and
``CoresPerSocket``. Machines without a name are named after their id, or ``node<N>``
(``requires``: ``machine.name``); names Slurm cannot take (characters other than letters,
digits and ``._+@-``; ``ALL``; ``DEFAULT``; a name already taken) are replaced the same way
(a ``machine.name`` loss).

slurmctld starts only with a partition ("No PartitionName information available"): nodes of
an environment without one (or whose partitions are all left out) are written into
``DEFAULT_PARTITION``, ``PartitionName=all Nodes=ALL Default=YES``, which the model then
holds (nothing is lost).

A node needs a CPU count: a machine without one (no CPU, or CPUs without cores) is left
out (a ``machine.cpus`` loss; a node line without CPUs would give it Slurm's default of 1
CPU, a value the model does not state), and a conversion that would keep none is refused;
both name ``--fill cores=N``, which gives each such machine one CPU of N cores.

Value restrictions of the normal form, each reported by the derived losses: sockets with
different core counts become one socket; CPUs without cores are left out; memory and disk
(all modules or devices together) become whole megabytes; GPUs are grouped by type (a type
is a GPU's ``model`` when it is a Slurm word; vendor fields other than ``model`` are
dropped; a machine mixing typed and untyped GPUs loses the types); resources need a Slurm
name, a whole amount and no unit; features need a Slurm word; ``slurm:`` extras, partitions
and global lines must read back as they are (a partition naming nodes that are gone, or
with a name or list item Slurm cannot take, is dropped; its nodes are named once, and its
extras keep only ``slurm:`` keys). A partition is written with its nodes as one hostlist
(``ALL`` for every machine), so a ``Nodes`` spelled with a ``NodeSet`` name comes back as
the hostlist of that set's nodes, and an allow list of ``ALL`` is left out (the default).

Hostlists
---------

Hostlists are decoded with ``dcx.parsing.hostlist`` (RFC 29), with Slurm's differences:
several bracket groups in one name expand as a product, the first group outermost
(``rack[0-1]-n[1-2]`` is ``rack0-n1,rack0-n2,rack1-n1,rack1-n2``); text after the last
bracket is an error, as in Slurm (``n[1-2].ib``; RFC 29 allows the suffix), so the writer
spells hosts with such a suffix one by one. Zero padding follows the low bound's digits in
both. A node name that is no valid Slurm word is refused with the character's position.

Accepted by Slurm
-----------------

``tests/peers/peer_slurm.py`` starts Slurm's own controller, ``slurmctld`` 22.05 (Debian
``slurmctld``, ``slurm-client``, ``munge``), on loopback for each file, with the controller
lines it needs around the file's node and partition lines, and compares every node's CPUs,
sockets, cores, threads, memory, GRES, features, state and partitions as ``scontrol show
nodes`` prints them with what dcx reads. It accepts ``examples/slurm``, Slurm's own example
and test configurations, and what dcx writes from every example topology. What it found:
slurmctld refuses a file without a partition (hence ``DEFAULT_PARTITION``).

Divergences
-----------

* Unknown keys on ``NodeName``/``PartitionName`` lines make Slurm refuse the file; on a
  ``DownNodes`` line Slurm logs an error and reads none of the keys after it. dcx warns
  (``slurm.unknown-key``) and ignores the key alone.
* Slurm's ``State`` parser accepts every node state name (``IDLE``, ``ALLOCATED``) and any word
  starting with ``DRAIN``, ``FAIL`` or ``CLOUD``; the partition ``State`` parser any word
  starting with ``UP``, ``DOWN``, ``DRAIN`` or ``INACTIVE``. dcx accepts the words the man
  page lists.
* Key operators (``Key+=value``) are a syntax error in dcx.
* ``Key=`` followed by a blank takes the next word as its value in Slurm and in dcx (the
  schema then usually refuses it).
* Empty hostlist elements (``a,,b``) are errors in dcx; Slurm skips them.
* ``DownNodes``: Slurm's state parser takes any node state name there too, and logs an
  error and skips the line for others; dcx accepts the man page's words and UNKNOWN and
  refuses the file for others (a schema error), as it does for ``NodeName``'s ``State``.
* ``gres.conf`` is a separate file, and dcx does not read it: a ``gres.conf`` line (one opening
  with ``Name=``, ``AutoDetect=``, ``File=`` or ``MultipleFiles=``, or a ``NodeName`` line
  holding one of them) is refused, once for the file (``slurm.gres-conf``), and the sniffer
  does not claim such a file (the hook leaves a cluster's ``gres.conf`` alone). What the model
  holds of a node's GRES, its GPUs and their type, its other resources and their counts,
  slurm.conf already states with ``Gres=``, and Slurm requires gres.conf to agree with it;
  what only gres.conf says (device files, core and GPU-link affinity, ``AutoDetect``, flags)
  has no place in the model. Reading it would need a second input file per conversion
  (dcx reads one file, and does not follow ``Include`` either) and a format of its own would
  produce nodes with GPUs and nothing else. So: convert ``slurm.conf``; where its nodes say
  ``Gres=gpu:4`` without a type and ``gres.conf`` gives ``Type=``, write the type into
  ``Gres=`` (``Gres=gpu:a100:4``) before converting.
"""

from __future__ import annotations

import re
from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded
from dcx.parsing.trace_codes import text_codes

__all__ = [
    "CODES", "CONFIG", "DEFAULT_PARTITION", "DOWN_DEFAULT_REASON", "DOWN_KEYS", "FORMAT",
    "HOLDS", "MAX_GPUS", "MAX_NODES", "NODE_KEYS", "PARTITION_KEYS", "PARTITION_LISTS", "PREFIX",
    "REQUIRES", "SCHEMA",
    "SNIFF_BYTES", "STATE_OF", "WORD_FOR",
    "encode_hostlist", "expand_hostlist", "is_node_name", "leaves_out", "normal_form",
    "normal_form_losses",
    "read", "sniff", "write",
]

# The reader, the writer and the parsing helpers they use load on first use: the pre-commit
# hook imports every format's declaration to sniff, and most of its files are not slurm.conf.
_LAZY = dict.fromkeys({
    "CONFIG", "DEFAULT_PARTITION", "DOWN_DEFAULT_REASON", "DOWN_KEYS", "MAX_GPUS", "MAX_NODES",
    "NODE_KEYS", "PARTITION_KEYS", "PARTITION_LISTS", "PREFIX",
    "STATE_OF", "WORD_FOR", "encode_hostlist", "expand_hostlist", "is_node_name",
}, "codec")


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


SCHEMA = "slurm.schema.json"

HOLDS = frozenset({
    "environment.name", "machine.name", "machine.state", "machine.state_label",
    "machine.cpus", "machine.cpus.sockets", "machine.gpus", "gpu.vendor", "machine.memory",
    "machine.storage", "machine.features", "machine.resources", "environment.partitions",
})
REQUIRES = frozenset({"machine.name"})


_FIRST_PAIR = re.compile(rb"[ \t]*[A-Za-z0-9_.]+[ \t]*=")
_SLURM_KEY = re.compile(
    rb"^[ \t]*(?:NodeName|PartitionName|ClusterName|ControlMachine|Slurm[A-Za-z]*|GresTypes"
    rb"|SelectType|SchedulerType|ProctrackType)[ \t]*=", re.IGNORECASE | re.MULTILINE)


_LINE_KEYS = re.compile(rb"([A-Za-z0-9_.]+)[ \t]*=")
_GRES_CONF_KEYS = frozenset({b"name", b"autodetect", b"file", b"multiplefiles"})


def _is_gres_conf_line(line: bytes) -> bool:
    """A line of gres.conf, which names NodeName too: it opens with, or its NodeName line
    holds, a key only gres.conf has."""
    keys = [key.lower() for key in _LINE_KEYS.findall(line)]
    return bool(keys) and (keys[0] in _GRES_CONF_KEYS or (
        keys[0] == b"nodename" and any(key in _GRES_CONF_KEYS for key in keys)))


SNIFF_BYTES = 65536
"""Annotated slurm.conf files open with long comment blocks (SchedMD's example has 9 KB)."""


def sniff(data: bytes) -> bool:
    """The first line that is not blank or a comment is ``Key=value`` and no gres.conf line
    (the hook leaves a cluster's gres.conf alone), and the first 64 KB name a key only
    slurm.conf has."""
    head = data[:SNIFF_BYTES].removeprefix(b"\xef\xbb\xbf")
    lines = head.split(b"\n")
    if len(data) > SNIFF_BYTES:
        lines = lines[:-1]  # the last line may be cut
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        return _FIRST_PAIR.match(line) is not None and not _is_gres_conf_line(line) \
            and _SLURM_KEY.search(head) is not None
    return False


read = deferred("dcx.formats.slurm.codec", "read")


write = deferred("dcx.formats.slurm.codec", "write")


normal_form = deferred("dcx.formats.slurm.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.slurm.codec", "normal_form_losses")


leaves_out = deferred("dcx.formats.slurm.codec", "leaves_out")


CODES: tuple[Code, ...] = (
    Code("slurm.syntax", "error",
         "A line is not Key=Value pairs (a value runs to the next blank or is double-quoted)."),
    Code("slurm.unknown-key", "warning",
         "A NodeName, PartitionName or DownNodes line has a key Slurm does not know (Slurm "
         "refuses the file, or the rest of a DownNodes line); ignored.", conformance=True),
    Code("slurm.repeated-key", "warning",
         "A key is given twice on one line; the last value is used.", conformance=True),
    Code("slurm.default-address", "error",
         "NodeName=DEFAULT sets NodeAddr, NodeHostname or BcastAddr, which Slurm refuses."),
    Code("slurm.reserved-name", "error", "NodeName=ALL: ALL is a reserved word."),
    Code("slurm.hostlist", "error",
         "A hostlist is malformed, names an invalid node name or has text after its last "
         "bracket."),
    Code("slurm.address-count", "error",
         "NodeAddr, NodeHostname, BcastAddr or Port names neither one value per node of the "
         "line nor one for all of them."),
    Code("slurm.duplicate-node", "error", "A node is defined on more than one NodeName line."),
    Code("slurm.cpus-mismatch", "warning",
         "CPUs is neither Sockets, Sockets*CoresPerSocket nor "
         "Sockets*CoresPerSocket*ThreadsPerCore; Slurm resets it.", conformance=True),
    Code("slurm.default-cpus", "warning",
         "A node line (defaults applied) gives no CPUs, Sockets, CoresPerSocket or other CPU "
         "key: Slurm gives its nodes its default of 1 CPU, read so; --strict refuses it."),
    Code("slurm.cpu-topology", "warning",
         "A CPU layout value Slurm resets: a zero, Sockets beside SocketsPerBoard, or fewer "
         "sockets than boards.", conformance=True),
    Code("slurm.range", "error",
         "A number exceeds the width Slurm stores it in (CPUs 16 bits, TmpDisk 32, "
         "RealMemory 64)."),
    Code("slurm.gres", "error", "A Gres item is not name[:type][:no_consume][:count]."),
    Code("slurm.gres-type", "warning",
         "A node's Gres name is not listed in GresTypes (Slurm refuses the node).",
         conformance=True),
    Code("slurm.gres-flag", "warning", "A Gres no_consume flag is not kept."),
    Code("slurm.too-large", "error",
         "More nodes in the file, or GPUs on one node, than dcx models one by one."),
    Code("slurm.partition-node", "error",
         "A partition names a node that no NodeName line defines."),
    Code("slurm.duplicate-partition", "error", "A partition is defined twice."),
    Code("slurm.gres-conf", "error",
         "gres.conf lines (Name=, AutoDetect=, File=, or a NodeName line holding one): dcx "
         "reads slurm.conf, whose Gres= keys give each node's GRES; convert that file."),
    Code("slurm.down-node", "warning",
         "A DownNodes line names a node no NodeName line defines; Slurm logs an error and "
         "skips it.", conformance=True),
    Code("slurm.include", "warning",
         "An Include line names another file, which dcx does not read."),
    *text_codes("slurm", "slurm.conf"),
)


FIELD_NAMES: dict[str, str] = {
    "environment.name": "ClusterName",
    "environment.partitions": "PartitionName lines",
    "machine.name": "NodeName",
    "machine.cpus": "CPUs",
    "machine.cpus.sockets": "Sockets / CoresPerSocket",
    "machine.memory": "RealMemory",
    "machine.storage": "TmpDisk",
    "machine.features": "Features",
    "machine.gpus": "Gres=gpu",
    "gpu.vendor": "Gres=gpu:<type>",
    "machine.resources": "Gres",
    "machine.state": "State",
    "machine.state_label": "Reason",
}
"""slurm.conf's keys for the fields (``FormatDeclaration.field_names``)."""

FORMAT = FormatDeclaration(
    name="slurm",
    title="Slurm node configuration (slurm.conf)",
    family="slurm",
    kind="topology",
    extensions=(".conf",),
    shared_extensions=frozenset({".conf"}),
    content=frozenset({"text"}),
    schema=SCHEMA,
    description=("NodeName, PartitionName and DownNodes lines of slurm.conf: hostlists, "
                 "sockets, cores, memory, GRES, features, states, partitions."),
    own_extras=frozenset({"environment.extras", "machine.extras", "environment.partitions"}),
    holds=HOLDS,
    requires=REQUIRES,
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    leaves_out=leaves_out,
    codes=CODES,
    field_names=FIELD_NAMES,
)
