"""The event loop's arrivals and dependencies: tasks handed out in the
order they join the queue as the clock reaches them, through J2 when a job gate holds some
back (T1's arrival half), and the children a finish makes eligible (T1's dependency half).
Where each planner queues them (its ready queue, its sorted queue) stays its own."""

from __future__ import annotations

from collections.abc import Sequence

from dcx.scheduler.job_stages import JobGate
from dcx.scheduler.problem import TaskTable

_INF = float("inf")


class Arrivals:
    """Arrivals in ``order`` at ``arrival_s`` (J2 through ``gate``), and dependencies."""

    def __init__(self, tasks: TaskTable, order: Sequence[int], arrival_s: Sequence[float],
                 gate: JobGate | None, arrived: bytearray | None = None) -> None:
        self.order, self.arrival_s, self.gate = order, arrival_s, gate
        self.next = 0
        """How many tasks have arrived (J2 may still hold some of them)."""
        self.unfinished = [len(parents) for parents in tasks.parents]
        """Per task, how many of its parents have not finished."""
        self.children = tasks.children
        self.arrived = arrived if arrived is not None else bytearray(len(tasks))
        """1 for a task that arrived and whose job J2 admitted: it waits for its parents
        only."""
        self.next_s = arrival_s[order[0]] if order else _INF
        """When the next task arrives (``inf`` when all have): asked at every cycle."""

    def next_time(self) -> float | None:
        """When the next task arrives, ``None`` when all have."""
        return None if self.next_s == _INF else self.next_s

    def joined(self, now: float) -> list[int]:
        """The tasks that join the queue by ``now``, in order: those arriving (unless J2
        holds their job back) and those J2 now admits. Each is marked arrived."""
        order, arrival_s, gate = self.order, self.arrival_s, self.gate
        count = len(order)
        joined: list[int] = []
        position = self.next
        while position < count and arrival_s[order[position]] <= now:
            task = order[position]
            position += 1
            if gate is None or not gate.hold(task):
                joined.append(task)
        self.next = position
        self.next_s = arrival_s[order[position]] if position < count else _INF
        if gate is not None:
            joined.extend(gate.admit_waiting())
        arrived = self.arrived
        for task in joined:
            arrived[task] = 1
        return joined

    def finished(self, task: int) -> list[int]:
        """``task`` finished: its children whose parents have now all finished and which
        have joined the queue (they become eligible)."""
        unfinished, arrived = self.unfinished, self.arrived
        ready: list[int] = []
        for child in self.children[task]:
            unfinished[child] -= 1
            if unfinished[child] == 0 and arrived[child]:
                ready.append(child)
        return ready
