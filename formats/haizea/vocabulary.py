"""The names the Haizea readers and the writer share: root elements and their XSDs, resource
types, the ``haizea:`` extras keys, and what the format holds."""

from __future__ import annotations

import re
from typing import TypeAlias

ROOT_SCHEMAS: dict[str, str] = {
    "lease-workload": "haizea-lease-workload.xsd",
    "lease-annotations": "haizea-lease-annotations.xsd",
    "site": "haizea-site.xsd",
    "nodes": "haizea-nodes.xsd",
    "lease": "haizea-lease.xsd",
}
REQUEST_SCHEMA = "haizea-lease-request.xsd"
"""One ``<lease-request>``, validated on its own while a large LWF streams past."""

HOLDS: frozenset[str] = frozenset({
    "machine.cpus",
    "machine.cpus.sockets",
    "machine.memory",
    "machine.memory.modules",
    "machine.resources",
    "workload.name",
    "workload.description",
    "workload.attributes",
    "workload.annotations",
    "task.id",
    "task.submit_time_s",
    "task.runtime_s",
    "task.requested_time_s",
    "task.request.nodes",
    "task.request.cores",
    "task.request.memory_mb",
    "task.request.resources",
    "task.deadline_s",
    "task.start",
    "task.preemptible",
    "task.user",
    "task.image",
    "task.extras",
    "task.group",
    "task.wait_time_s",
    "task.cpu_time_s",
    "task.queue",
    "task.application",
})

FIELD_NAMES: dict[str, str] = {
    "machine.cpus": "site <res type=\"CPU\"> (100 = one core)",
    "machine.cpus.sockets": "site CPU <instance>s",
    "machine.memory": "site <res type=\"Memory\"> (MB)",
    "machine.memory.modules": "site Memory <instance>s",
    "machine.resources": "site <res> of other types",
    "workload.name": "<lease-workload name>",
    "workload.description": "<description>",
    "workload.attributes": "<attributes>",
    "workload.annotations": "<lease-annotations> (.lwfa)",
    "task.id": "lease id",
    "task.submit_time_s": "lease-request arrival",
    "task.runtime_s": "realduration",
    "task.requested_time_s": "duration",
    "task.request.nodes": "node-set numnodes",
    "task.request.cores": "<res type=\"CPU\"> (100 = one core)",
    "task.request.memory_mb": "<res type=\"Memory\"> (MB)",
    "task.request.resources": "<res> of other types",
    "task.deadline_s": "deadline",
    "task.start": "<start> (<now/>, <exact>)",
    "task.preemptible": "preemptible",
    "task.user": "lease user",
    "task.image": "<disk-image>",
    "task.extras": "<extra> attrs",
    "task.group": "SWF_group attr",
    "task.wait_time_s": "SWF_waittime attr",
    "task.cpu_time_s": "SWF_avgcputime attr",
    "task.queue": "SWF_queue attr",
    "task.application": "SWF_execnumber attr",
    "haizea:resource-types": "site <resource-types> beyond the nodes' types",
    "haizea:node-sets": "node-sets of different shapes",
    "haizea:id-assigned": "lease without an id",
    "haizea:state": "lease state",
    "haizea:submit-time": "lease submit-time",
    "haizea:extra-attrs": "<extra> attrs with ':' in their names",
}
"""Haizea's names of the fields (``FormatDeclaration.field_names``): elements and
attributes of an LWF; the trace fields are haizea-swf2lwf's ``SWF_*`` ``<extra>`` attrs."""

Amount: TypeAlias = int | tuple[int, ...]
"""A per-node amount: a scalar, or one value per ``<instance>``."""
Capacity: TypeAlias = tuple[tuple[str, Amount], ...]
"""A node's resources in document order, one entry per type."""

CPU = "CPU"
MEMORY = "Memory"
CPU_PER_CORE = 100
EXTRA_PREFIX = "haizea:"
RESOURCE_TYPES_KEY = "haizea:resource-types"
NODE_SETS_KEY = "haizea:node-sets"
ID_ASSIGNED_KEY = "haizea:id-assigned"
STATE_KEY = "haizea:state"
SUBMIT_TIME_KEY = "haizea:submit-time"
PREFIXED_EXTRA_KEY = "haizea:extra-attrs"
"""``<extra>`` attrs whose names contain ':', which as plain keys would read as another
format's (or shadow dcx's own ``haizea:`` keys)."""
TASK_KEYS = frozenset({NODE_SETS_KEY, ID_ASSIGNED_KEY, STATE_KEY, SUBMIT_TIME_KEY,
                       PREFIXED_EXTRA_KEY})
"""The ``haizea:`` task extras the writer puts back into the lease."""
TYPE_NAME = re.compile(r"\S+")
"""A resource type name as the XSD takes it."""


_LEGACY_LINE = re.compile(
    rb"[ \t]*(?:[+-]?\d+(?:\.\d+)?[ \t]+){8}\S+[ \t]+[+-]?\d+(?:\.\d+)?[ \t]*\r?"
)


def looks_legacy(head: bytes) -> bool:
    lines = head.split(b"\n")
    if len(head) == 4096:
        lines = lines[:-1]  # the last line may be cut
    content = [line for line in lines if line.strip() and not line.lstrip().startswith(b"#")]
    return bool(content) and _LEGACY_LINE.fullmatch(content[0]) is not None
