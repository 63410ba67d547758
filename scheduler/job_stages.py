"""The job stages of the reference architecture: J2 (which jobs are eligible) and J3 (in
which order jobs are served). Both are components over the ``SchedulerState``; a new policy
is one class, one line in its registry (``JOB_ELIGIBILITY``, ``JOB_ORDERS``) and its name in
the ``J2``/``J3`` enum of ``schemas/scheduler.schema.json``.

* **J2** ``bind(state)`` returns ``None`` when every job is eligible (the event loop then
  skips the stage), or ``admit(job) -> bool``. The event loop asks it at every cycle for
  each job that has arrived tasks not yet admitted; a job refused returns to the incoming
  jobs and is asked again at the next cycle (the paper's wording). Once admitted, a job
  stays admitted, and its tasks join the task queue (T1 then waits for their parents).
  Eligibility may change only at an event (an arrival, a finish, a machine state change):
  nothing wakes the event loop for a policy whose answer changes with time alone.
* **J3** ``job_keys(state)`` returns a static sort key per job index, or ``None`` for no
  job-level order: then the task queue is ordered by T2 alone across all jobs, as the SC18
  simulator does. With a key, jobs are served in key order (ties: job order in the
  workload) and each job's eligible tasks in T2 order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Protocol

from dcx.scheduler.problem import CORE_UNITS, TaskTable
from dcx.scheduler.state import SchedulerState

Admission = Callable[[int], bool]
"""``job index -> whether the job is eligible now``."""


def job_count(tasks: TaskTable) -> int:
    return max(tasks.job, default=-1) + 1


def tasks_by_job(tasks: TaskTable) -> list[list[int]]:
    grouped: list[list[int]] = [[] for _ in range(job_count(tasks))]
    for task, job in enumerate(tasks.job):
        grouped[job].append(task)
    return grouped


# --------------------------------------------------------------------------- J2


class JobEligibility(Protocol):
    """J2: which jobs may have their tasks scheduled now."""

    def bind(self, state: SchedulerState) -> Admission | None: ...


class AllJobs:
    """Every job is eligible as soon as a task of it arrives (SC18: tasks are submitted one
    by one)."""

    def bind(self, state: SchedulerState) -> Admission | None:
        return None


class WholeJob:
    """A job is eligible once all its tasks have arrived: its tasks join the queue together,
    at the arrival of its last one."""

    def bind(self, state: SchedulerState) -> Admission | None:
        arrival, now_of = state.arrival_s, state
        last = [max(arrival[task] for task in members) if members else 0.0
                for members in tasks_by_job(state.tasks)]
        return lambda job: now_of.now >= last[job]


JOB_ELIGIBILITY: dict[str, type[JobEligibility]] = {
    "ALL": AllJobs,
    "WHOLE-JOB": WholeJob,
}


class JobGate:
    """The J2 mechanism of the event loop: arrived tasks of jobs not admitted yet wait
    here, and join the queue when their job is admitted."""

    def __init__(self, admit: Admission, tasks: TaskTable) -> None:
        self._admit = admit
        self._job_of = tasks.job
        self._admitted = bytearray(job_count(tasks))
        self._held: dict[int, list[int]] = {}

    def hold(self, task: int) -> bool:
        """Whether ``task`` must wait for its job to be admitted (it is then kept here)."""
        job = self._job_of[task]
        if self._admitted[job]:
            return False
        self._held.setdefault(job, []).append(task)
        return True

    def admit_waiting(self) -> list[int]:
        """The held tasks of every job J2 admits now: jobs in workload order, each job's
        tasks in arrival order."""
        if not self._held:
            return []
        released: list[int] = []
        for job in sorted(self._held):
            if self._admit(job):
                self._admitted[job] = 1
                released.extend(self._held.pop(job))
        return released


# --------------------------------------------------------------------------- J3


class JobOrder(Protocol):
    """J3: a static sort key per job index, or ``None`` for no job-level order."""

    def job_keys(self, state: SchedulerState) -> list[float] | None: ...


class NoJobOrder:
    """No job-level order: one task queue across all jobs, ordered by T2 (SC18)."""

    def job_keys(self, state: SchedulerState) -> list[float] | None:
        return None


class FcfsJobs:
    """Jobs by submit time (their first task's submission)."""

    def job_keys(self, state: SchedulerState) -> list[float] | None:
        submit = state.tasks.submit_s
        return [min((submit[task] for task in members), default=0.0)
                for members in tasks_by_job(state.tasks)]


def requested_work(state: SchedulerState) -> list[float]:
    """Per job, the core-seconds its tasks ask for: requested time x cores x nodes, summed
    (the runtime where the workload gives no requested time)."""
    tasks = state.tasks
    requested, need, nodes = tasks.requested_s, tasks.need, tasks.nodes
    return [sum(requested[t] * need[t] * nodes[t] for t in members) / CORE_UNITS
            for members in tasks_by_job(tasks)]


class ShortestJobFirst:
    """Least requested work (core-seconds over all the job's tasks) first."""

    def job_keys(self, state: SchedulerState) -> list[float] | None:
        return requested_work(state)


class LongestJobFirst:
    """Most requested work first."""

    def job_keys(self, state: SchedulerState) -> list[float] | None:
        return [-work for work in requested_work(state)]


JOB_ORDERS: dict[str, type[JobOrder]] = {
    "NONE": NoJobOrder,
    "FCFS": FcfsJobs,
    "SJF": ShortestJobFirst,
    "LJF": LongestJobFirst,
}


class ReadyQueueLike(Protocol):
    """What ``JobOrderedQueue`` needs of a T2 queue (``policies.ReadyQueue``)."""

    def add(self, task: int) -> None: ...

    def take(self) -> int: ...

    def __len__(self) -> int: ...


class JobOrderedQueue:
    """A ready queue (``policies.ReadyQueue``) serving jobs in J3 order and, inside a job,
    its tasks in the order of the T2 queue ``make_queue`` builds for each job."""

    def __init__(self, job_keys: Sequence[float], job_of: Sequence[int],
                 make_queue: Callable[[], ReadyQueueLike]) -> None:
        self._keys = job_keys
        self._job_of = job_of
        self._make_queue = make_queue
        self._queues: dict[int, ReadyQueueLike] = {}
        self._jobs: list[tuple[float, int]] = []
        """Jobs with waiting tasks, as a heap of (key, job index)."""
        self._size = 0

    def add(self, task: int) -> None:
        job = self._job_of[task]
        queue = self._queues.get(job)
        if queue is None:
            queue = self._queues[job] = self._make_queue()
            heapq.heappush(self._jobs, (self._keys[job], job))
        queue.add(task)
        self._size += 1

    def take(self) -> int:
        job = self._jobs[0][1]
        queue = self._queues[job]
        task = queue.take()
        self._size -= 1
        if not len(queue):
            heapq.heappop(self._jobs)
            del self._queues[job]
        return task

    def give_back(self, tasks: Sequence[int]) -> None:
        for task in tasks:
            self.add(task)

    def __len__(self) -> int:
        return self._size
