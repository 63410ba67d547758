"""A file whose format reads it a part at a time by seeking (``FormatDeclaration.read_parts``:
Parquet's row groups; those of an OpenDC workload folder's two files) checked part by part:
in this process one after the other, or as partitions on a Dask cluster, each worker opening
the file (the folder's files) by its path and checking one part, the client merging the
findings in part order into the diagnostics the whole-file reader gives.

The cluster is a ``LocalCluster`` of single-threaded worker processes on loopback, or an
existing one reached by its scheduler's address (``tcp://host:8786``), as ``dcx experiment``
connects; workers of an existing cluster must see the file at the same path (a shared file
system). Dask is imported inside the functions that use it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from dcx.core.declaration import ChunkedRead, FormatDeclaration, PartReader
from dcx.core.diagnostics import Diagnostic


def read_parts(path: str, spec: FormatDeclaration, client: Any = None) -> ChunkedRead:
    """``spec``'s diagnostics for the file (a folder format's folder) at ``path`` and its job
    count, its parts checked in this process (``client`` ``None``) or on the Dask cluster
    behind ``client``."""
    reader = _reader(spec)
    with opened(path, spec) as source:
        parts, problems = reader.open(source)
        if parts is None:
            return ChunkedRead(problems)
        count = len(parts.row_counts)
        if client is None:
            findings = []
            for index in range(count):
                found = reader.check(source, parts, index)
                if isinstance(found, Diagnostic):
                    return ChunkedRead((found,))
                findings.append(found)
        else:
            where = os.path.abspath(path)
            # the footer goes to the workers once, not with each of its row groups
            shared = client.scatter(parts, broadcast=True, hash=False)
            futures = client.map(check_part, [where] * count, [spec.name] * count,
                                 [shared] * count, range(count), pure=False)
            findings = client.gather(futures)
            unreadable = next((f for f in findings if isinstance(f, Diagnostic)), None)
            if unreadable is not None:
                return ChunkedRead((unreadable,))
        return reader.finish(parts, findings, lambda index: reader.reread(source, index))


def check_part(path: str, format_name: str, parts: Any, index: int) -> Any:
    """One part's findings, on a worker: the format is found by name, the file by path."""
    from dcx.converters.registry import get

    spec = get(format_name)
    assert spec is not None
    with opened(path, spec) as source:
        return _reader(spec).check(source, parts, index)


@contextlib.contextmanager
def opened(path: str, spec: FormatDeclaration) -> Iterator[Any]:
    """What ``spec``'s part reader reads: the file at ``path`` open, or for a format stored
    as a folder, its members present in the folder ``path``, by name, each open."""
    if not spec.members:
        with open(path, "rb") as source:
            yield source
        return
    with contextlib.ExitStack() as files:
        yield {name: files.enter_context(open(os.path.join(path, name), "rb"))
               for name in spec.members if os.path.isfile(os.path.join(path, name))}


def _reader(spec: FormatDeclaration) -> PartReader:
    assert spec.read_parts is not None, f"{spec.name} is not read in parts"
    return spec.read_parts


# ----------------------------------------------------------------------------- clusters


QUIET_CLUSTER = {
    "distributed.admin.tick.interval": "500ms",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.profile.enabled": False,
}
"""Dask's housekeeping of a local cluster, less often than its defaults (a tick every 20 ms
to detect a blocked event loop, memory checks every 100 ms): on a machine of few cores it
takes a tenth of a core from the workers (measured idle: this process 0.046 s of CPU per
second, each worker 0.018; with these 0.01 and 0.004). Nor does a worker run the
statistical profiler (it samples the running task's stack every 10 ms, taking the
interpreter lock from it). Workers get it when started."""


def local_client(workers: int, processes: bool = True) -> tuple[Any, Any]:
    """A ``LocalCluster`` of ``workers`` single-threaded workers (processes, or threads of
    this process), on loopback, without the dashboard, and a client of it that reaches its
    scheduler (in this process) in process, not through a socket."""
    import dask
    import distributed  # noqa: F401 - its config defaults first: set() restores what it found

    with dask.config.set(QUIET_CLUSTER):
        return _local_client(workers, processes)


def _local_client(workers: int, processes: bool) -> tuple[Any, Any]:
    from distributed import Client, LocalCluster

    if not processes:  # threads talk in process (inproc://): no port, no dashboard
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=False,
                               dashboard_address=None, silence_logs=40,
                               scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        return cluster, Client(cluster)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None,
                           # no dashboard; its health endpoints on any free loopback port
                           scheduler_kwargs={"dashboard_address": "127.0.0.1:0",
                                             # workers on loopback, this process in process
                                             "protocol": ["tcp://", "inproc://"],
                                             "host": ["127.0.0.1", None]},
                           silence_logs=40)  # logging.ERROR: worker chatter is not ours
    # direct to workers: calls to the sweep's runners (experiments.execute) go straight to
    # the worker, not through the scheduler; on loopback every worker can be reached
    return cluster, Client(_in_process_address(cluster), loop=cluster.loop,
                           direct_to_workers=True)


def _in_process_address(cluster: Any) -> str:
    """The address the scheduler of ``cluster`` (in this process) listens on in process: the
    client's messages to it (each task submitted, each result fetched) skip the socket and
    their serialisation, CPU the workers' cores would otherwise give this process."""
    [address] = [listener.contact_address for listener in cluster.scheduler.listeners
                 if listener.contact_address.startswith("inproc://")]
    return str(address)


def remote_client(address: str) -> Any:
    """A client of the existing Dask cluster whose scheduler is at ``address``."""
    from distributed import Client

    return Client(address)


def default_workers() -> int:
    """One worker per core this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


class ClusterUnavailable(Exception):
    """Dask is not installed, or its scheduler cannot be reached."""


class Cluster:
    """The Dask cluster a command was given (``--workers N``: a ``LocalCluster`` of N worker
    processes; ``--scheduler-address``: an existing one), started or reached on first use,
    so that a batch with no file read in parts starts none; closed on leaving."""

    def __init__(self, workers: int | None = None, address: str | None = None,
                 processes: bool = True) -> None:
        self.workers = workers
        self.address = address
        self.processes = processes
        self._cluster: Any = None
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            try:
                import distributed  # noqa: F401
            except ImportError as exc:
                raise ClusterUnavailable("Dask is not installed (pip install "
                                         "'dcx[experiments]')") from exc
            try:
                if self.address:
                    self._client = remote_client(self.address)
                else:
                    self._cluster, self._client = local_client(
                        self.workers or default_workers(), self.processes)
            except (OSError, TimeoutError) as exc:
                raise ClusterUnavailable(f"cannot reach the Dask scheduler: {exc}") from exc
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
