"""Where the objects of a read Haizea document are in its text (``ReadResult.locator``),
found only when asked: the fast read of an LWF keeps no element and the checked read
deletes each request once read, so the start tags are found again in the text
(``xmlio.StartTags``), with their line and column.

A job is its ``<lease-request>`` (the ``<lease>`` of a file that is one lease), its task
the ``<lease>``; a machine is the ``<node-set>`` that makes it, the rack the ``<nodes>``
holding them, the environment the ``<site>`` (or the ``<nodes>`` of a nodes file); an
annotation is its ``<lease-annotation>``. A legacy text LWF's job is its line.
"""

from __future__ import annotations

from collections.abc import Callable

from dcx.core.groups import MachineGroup, slot_parts
from dcx.core.located import NOWHERE, Places, Where, run_holding
from dcx.core.model import Document
from dcx.parsing.xmlio import StartTags, StartTagsByName


def xml_places(data: bytes, root: str, document: Document) -> Places:
    """The places of a Haizea XML document whose root element is ``root``."""
    nth = StartTagsByName(data).place

    def workload() -> Where:
        return nth(root, 0)

    if root == "lease":
        return Places(workload=workload, job=lambda job: nth("lease", 0) if job == 0 else NOWHERE,
                      task=lambda job, task: nth("lease", 0) if (job, task) == (0, 0)
                      else NOWHERE)
    if root == "lease-annotations":
        return Places(workload=workload,
                      annotation=lambda index: nth("lease-annotation", index))
    environment = _NodeSets(data, document, "nodes" if root == "nodes" else "site")
    if root != "lease-workload":
        return Places(environment=environment.environment, rack=environment.rack,
                      slot=environment.slot)
    return Places(environment=environment.environment, rack=environment.rack,
                  slot=environment.slot, workload=workload,
                  job=lambda job: nth("lease-request", job),
                  task=lambda job, task: nth("lease", job) if task == 0 else NOWHERE)


class _NodeSets:
    """The site (or a nodes file): its ``<nodes>`` and the ``<node-set>`` of each machine or
    group of the one rack the reader made of them."""

    def __init__(self, data: bytes, document: Document, outer: str) -> None:
        self.data = data
        self.document = document
        self.outer = StartTags(data, outer)
        self._node_sets: StartTags | None = None

    def environment(self) -> Where:
        return self.outer.place(0)

    def _nodes(self) -> StartTags | None:
        """The ``<nodes>`` of the site: the first after ``<site`` (a site holds only its
        resource types and its nodes)."""
        start = self.outer.offset(0)
        if start is None:
            return None
        return StartTags(self.data, "nodes", start) if self.outer.tag != "nodes" else self.outer

    def rack(self, rack: int) -> Where:
        nodes = self._nodes()
        return nodes.place(0) if rack == 0 and nodes is not None else NOWHERE

    def slot(self, rack: int, slot: int) -> Where:
        environment = self.document.environment
        rooms = environment.datacenters[0].rooms if environment and \
            environment.datacenters else ()
        racks = rooms[0].racks if rooms else ()
        if rack != 0 or not racks:
            return NOWHERE
        part = run_holding((part.count if isinstance(part, MachineGroup) else 1
                            for part in slot_parts(racks[0].slots)), slot)
        if part is None:
            return NOWHERE
        if self._node_sets is None:
            nodes = self._nodes()
            start = nodes.offset(0) if nodes is not None else None
            if start is None:
                return NOWHERE
            self._node_sets = StartTags(self.data, "node-set", start)
        return self._node_sets.place(part)  # one node-set per part: numnodes is positive


def legacy_places(text_lines: Callable[[], list[str]]) -> Places:
    """A legacy text LWF: job ``j`` and its task are the ``j``-th line with a record (not
    blank or a comment), at its first field; lines are numbered as the reader numbers
    them."""
    def job(index: int) -> Where:
        found = 0
        for number, raw in enumerate(text_lines(), start=1):
            if not raw.split("#", 1)[0].strip():
                continue
            if found == index:
                return number, len(raw) - len(raw.lstrip()) + 1
            found += 1
        return NOWHERE

    return Places(job=job, task=lambda index, task: job(index) if task == 0 else NOWHERE)
