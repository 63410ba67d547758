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
})

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
