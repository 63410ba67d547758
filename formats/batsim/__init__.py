"""Batsim JSON workload: the job input of Batsim (oar-team/batsim), the SimGrid-based
batch-scheduler simulator. One JSON object: ``nb_res`` (how many hosts the workload was made
for), ``jobs`` (each naming a profile) and ``profiles`` (what a job does when it runs; many jobs
may share one). There is no upstream schema: loading in Batsim is the test, so the checks here
follow its loader (v4.2.1, the last release, and v5.0.0-rc2, the head);
``schemas/batsim.schema.json`` holds what JSON Schema can say.

Model mapping
-------------

One Batsim job is one :class:`Task` in a :class:`Job` of its own with the same id.

=======================  ======================================================================
Batsim                   model
=======================  ======================================================================
``id``                   ``Task.id``: a JSON integer stays an ``int``, a string a ``str``
``subtime``              ``submit_time_s`` (seconds after the simulation starts)
``walltime``             ``requested_time_s``; absent (or 4.x's ``-1``) is ``None``
``res``                  ``request.nodes``: a Batsim resource is a host, and a workload's hosts
                         are processors (Batsim's SWF converters write the job's processors),
                         so several cores per node are that many hosts each: ``nodes x
                         cores`` (rounded up; the cores per node are a ``task.request.cores``
                         loss, but for a request for cores anywhere, whose split into nodes
                         means nothing); a job gets ``res`` whole hosts (``Placement.NODES``), so
                         cores anywhere (SWF's, GWF's) are a ``task.request.placement``
                         loss
``profile``              a ``delay`` profile is the runtime (``runtime_s`` = ``delay``); its
                         name is kept in ``extras["batsim:profile"]`` unless it is the name dcx
                         gives a delay (``delay<seconds>``, as ``delay120`` or ``delay20.25``).
                         A ``composed`` sequence whose members only wait (delays, or sequences
                         of them) is its ``repeat`` times their delays' sum (``runtime_s``;
                         its name kept). Any other profile (``parallel_homogeneous``, a
                         sequence with one …) depends on the platform's speeds: the runtime is
                         unknown (``None``) and the name is kept in ``extras["batsim:profile"]``
                         (so SWF, which has no column for it, writes no runtime for the job and
                         reports the profile as lost; a job without runtime or profile is left
                         out when written back to Batsim, a ``task`` loss). ``dcx convert
                         --fill speed=1Gf`` gives such a job the runtime its profile takes on
                         hosts of that speed where Batsim's semantics make it exact
                         (``runtimes_at_speed``, ``formats/batsim/work.py``: compute without
                         network traffic, sequences of it and of delays; not a trace
                         replayed), and ``--fill runtime=requested`` its walltime
other job members        ``extras["batsim:<member>"]`` (``extra_data`` and the rest), as written
``profiles``             profiles other than a plain delay (``type`` and ``delay`` only) used by
                         a job are kept whole, in file order, in
                         ``Workload.extras["batsim:profiles"]`` (unused profiles and those a
                         ``composed`` sequence names too)
``nb_res``               the machine's size: derived, the largest ``res`` (at least 1); a
                         file whose ``nb_res`` differs keeps it as the ``MaxProcs``
                         attribute (SWF's header field of the machine's size, so it goes
                         through SWF and back), or in ``Workload.extras["batsim:nb_res"]``
                         when the file also has a different ``MaxProcs`` member; written
                         from ``MaxProcs`` when that is at least the largest ``res`` (and
                         then not written again as a ``MaxProcs`` member)
other top-level members  ``Workload.attributes`` (``command``, ``date``, ``description`` of
                         Batsim's generated workloads); a member whose name has a ``:`` is not
                         kept (a warning)
=======================  ======================================================================

Profile names: 4.x names (``delay``, ``parallel``, ``parallel_homogeneous``,
``parallel_homogeneous_total``, ``composed``, ``parallel_homogeneous_pfs``, ``data_staging``,
``send``, ``recv``, ``smpi``, ``usage_trace``) or 5.x names (``DelayProfile``,
``ParallelTaskProfile``, ``ParallelTaskHomogeneousProfile``, ``SequentialCompositionProfile`` …),
never both in one file: each version refuses the other's. A file with 5.x names is marked with
``Workload.extras["batsim:version"] = 5`` and written with 5.x names; otherwise dcx writes 4.x
names, which both v4 releases and Batsim's own SWF converters use.

Writing: ``normal_form(document)`` and nothing else. A task with a runtime becomes a job with a
delay profile of that many seconds (jobs with equal runtimes share one); a task without a
runtime can be written only when it names a kept compute profile, and is otherwise left out (a
``task`` loss, counted, at the first task left out: Batsim runs a job only through its profile,
and dcx does not invent one), as is a task whose runtime is not a positive number (Batsim
refuses a delay of 0). ``leaves_out`` says why, by kind: jobs whose profile type dcx does not
write are named by type, with their count and first ids.
Values Batsim cannot hold are value restrictions of the normal form, reported by the derived
losses: ids that are neither 32-bit integers nor strings free of ``!`` and of workload names
(all tasks are then numbered 1, 2, …), a walltime that is not a positive number, node counts
that are not 32-bit counts, top-level members Batsim reserves, ``batsim:`` extras that do not
fit (a profile name that names another profile, a kept profile Batsim would refuse).

A workload held as columns (a large trace read whole, or a chunk of one) is put in normal form
and written column by column, each of the rules above asked once per distinct value, with the
bytes and losses of the task-by-task path (which workloads of objects take, and columnar ones
whose tasks keep ``batsim:`` data); a file whose jobs no check has anything to say about
(integer ids, delay profiles of dcx's names, no other member) is read into columns.

Time: Batsim has no wall clock, so ``Workload.time_origin`` is not held; submit times are
written as they are (seconds on the workload's own axis), not shifted to start at 0.

Checks (each located at line:column with a JSON Pointer): the schema, then what it cannot say:
integers written as JSON integers (Batsim refuses ``4.0``), 32-bit ids and counts, job ids
with ``!`` (only ``WORKLOAD!NAME``), duplicate ids, profiles that exist (for jobs and for
``composed`` sequences), ``parallel`` profiles sized for their jobs, a walltime above 0,
profile names of one Batsim version, known profile types.

Divergences
-----------

1. Batsim names the workloads of its command line ``w0``, ``w1`` … and treats any job id that
   contains its workload's name as ``WORKLOAD!NAME``, so an id such as ``w0x`` aborts when the
   file is the first workload. dcx cannot know a file's position: it reads such ids and
   ``w0!7`` forms with a conformance warning, and never writes them (the ids are renumbered).
   In 5.x profile names follow the same rule, and dcx warns about them in 5.x files.
2. Batsim accepts an empty string as a job id; dcx requires at least one character.
3. v4.2.1 tests ``type == "smpi" || "usage_trace"``, which is always true, so an unknown profile
   type fails there with "no 'trace' field"; dcx reports the unknown type itself (a
   conformance warning; the profile is kept as written).
4. 4.x reads ``walltime: -1`` as no walltime and 5.x refuses it; dcx reads it as none with a
   warning and writes no ``walltime`` member instead.
"""

from __future__ import annotations

from typing import Any

from dcx.core.codes import Code
from dcx.core.declaration import FormatDeclaration, deferred, forwarded

__all__ = [
    "CODES", "DELAY_TYPE", "FIELD_NAMES", "FORMAT", "HOLDS", "INT32_MAX", "INT32_MIN",
    "JOB_FIELDS", "NB_RES_KEY", "PREFIX", "PROFILES_KEY", "PROFILE_KEY", "SCHEMA",
    "TOP_FIELDS", "V4_TYPES", "V5_TYPES", "VERSION_KEY", "delay_profile_name", "leaves_out",
    "normal_form", "normal_form_losses", "read", "runtimes_at_speed", "sniff", "write",
]

# The reader, the writer and what they import load on first use: the pre-commit hook imports
# every format's declaration to sniff, and most of its files are not this format's.
_LAZY = dict.fromkeys({
    "DELAY_TYPE", "INT32_MAX", "INT32_MIN", "JOB_FIELDS", "NB_RES_KEY", "PREFIX",
    "PROFILES_KEY", "PROFILE_KEY", "TOP_FIELDS", "V4_TYPES", "V5_TYPES", "VERSION_KEY",
    "delay_profile_name",
}, "codec")


def __getattr__(name: str) -> Any:
    return forwarded(__name__, _LAZY, name)


SCHEMA = "batsim.schema.json"


HOLDS = frozenset({
    "task.id", "task.submit_time_s", "task.runtime_s", "task.requested_time_s",
    "task.request.nodes", "workload.attributes",
})

FIELD_NAMES: dict[str, str] = {
    "task.id": "id", "task.submit_time_s": "subtime", "task.runtime_s": "profile (delay)",
    "task.requested_time_s": "walltime", "task.request.nodes": "res",
    "workload.attributes": "top-level members", "batsim:profile": "profile",
    "batsim:profiles": "profiles", "batsim:extra_data": "extra_data", "batsim:nb_res": "nb_res",
}
"""Batsim's names of the fields (``FormatDeclaration.field_names``)."""


def sniff(data: bytes) -> bool:
    """``nb_res``, or jobs with ``subtime`` and ``profile`` (generated workloads put
    ``nb_res`` last)."""
    head = data[:4096]
    return b'"nb_res"' in head or (b'"subtime"' in head and b'"profile"' in head)


read = deferred("dcx.formats.batsim.codec", "read")


write = deferred("dcx.formats.batsim.codec", "write")


normal_form = deferred("dcx.formats.batsim.codec", "normal_form")


normal_form_losses = deferred("dcx.formats.batsim.codec", "normal_form_losses")


leaves_out = deferred("dcx.formats.batsim.codec", "leaves_out")


runtimes_at_speed = deferred("dcx.formats.batsim.work", "runtimes_at_speed")


CODES = (
    Code("batsim.not-object", "error", "The file is JSON but not an object."),
    Code("batsim.integer", "error",
         "nb_res, res or a numeric job id is not a JSON integer (Batsim refuses 4.0)."),
    Code("batsim.number", "error", "A time is too large for a finite double."),
    Code("batsim.job-id", "error", "A job id has a '!' but is not of the form WORKLOAD!NAME."),
    Code("batsim.qualified-id", "warning",
         "A job id is WORKLOAD!NAME: Batsim loads the file only as that workload.",
         conformance=True),
    Code("batsim.id-names-workload", "warning",
         "A job id (or a 5.x profile name) contains a workload name such as w0: Batsim aborts "
         "when the file is that workload.", conformance=True),
    Code("batsim.duplicate-id", "error", "Two jobs have the same id (compared as text)."),
    Code("batsim.unknown-profile", "error",
         "A job or a composed profile names a profile the file does not define."),
    Code("batsim.profile-size", "error",
         "A parallel profile's arrays do not fit: com is not n × n, or a job asks for another "
         "number of hosts than its cpu array has."),
    Code("batsim.walltime", "error", "A walltime is 0 or negative (other than 4.x's -1)."),
    Code("batsim.walltime-none", "warning",
         "walltime -1: no walltime in Batsim 4.x, refused by 5.x."),
    Code("batsim.unknown-profile-type", "warning",
         "A profile type Batsim does not know; the profile is kept as written.",
         conformance=True),
    Code("batsim.mixed-versions", "error",
         "Profile types mix 4.x and 5.x names; each Batsim version refuses the other's."),
    Code("batsim.prefixed-key", "warning",
         "A top-level member whose name has a ':' is not kept."),
)

FORMAT = FormatDeclaration(
    name="batsim",
    title="Batsim JSON workload",
    family="simulator",
    kind="workload",
    extensions=(".json",),
    content=frozenset({"json"}),
    schema=SCHEMA,
    description=("Batsim's jobs (id, subtime, walltime, res) and the profiles they run; a "
                 "task's runtime is a delay profile."),
    holds=HOLDS,
    own_extras=frozenset({"task.extras", "workload.extras"}),
    sniff=sniff,
    read=read,
    write=write,
    normal_form=normal_form,
    normal_form_losses=normal_form_losses,
    leaves_out=leaves_out,
    runtimes_at_speed=runtimes_at_speed,
    codes=CODES,
    stream_target=deferred("dcx.formats.batsim.stream_target", "BatsimTarget"),
    field_names=FIELD_NAMES,
)
