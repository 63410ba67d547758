"""A task's request re-expressed for formats that count its processors one way only.

The model asks for ``nodes`` nodes of ``cores`` cores and ``memory_mb`` each. SWF and Batsim
count processors (``nodes x cores`` single-core nodes, memory per processor); GWF,
osp-workload and OpenDC count the cores of one node (memory for the whole node). Either way
the job keeps its total cores and its total memory: a 64-processor SWF job is a 64-core GWF
task, not a 1-core one. These functions are the rules, once, for one request and for columns
of them (``numpy`` arrays); both give the same numbers, float for float. A request for
cores anywhere (``Placement.CORES``) loses nothing when it is re-split so
(``only_resplit``): only its totals mean something.
"""

from __future__ import annotations

import math
from typing import Any

from dcx.core.columns import PLACEMENTS
from dcx.core.model import Placement


def whole_count(total: float) -> int:
    """A processor or core count as a whole number >= 1 (rounded up; 1 for what is not a
    positive finite number)."""
    if isinstance(total, int) and not isinstance(total, bool) and total >= 1:
        return total
    return math.ceil(total) if math.isfinite(total) and total > 1 else 1


def whole_counts(total: Any) -> Any:
    """``whole_count`` of every value of an array, as integers."""
    import numpy as np

    whole = np.ones(len(total), dtype=np.int64)
    with np.errstate(invalid="ignore"):
        large = np.isfinite(total) & (total > 1)
    whole[large] = np.ceil(total[large])
    return whole


def single_core_nodes(nodes: int, cores: float, memory_mb: float | None
                      ) -> tuple[int, float | None]:
    """The request as whole single-core nodes (SWF's processors) and the memory of each: the
    same total cores (rounded up) and the same total memory."""
    processors = whole_count(nodes * cores if cores != 1 else nodes)
    if memory_mb is None or cores == 1:
        return processors, memory_mb
    return processors, memory_mb * nodes / processors


def single_core_node_columns(nodes: Any, cores: Any, memory_mb: Any) -> tuple[Any, Any]:
    """``single_core_nodes`` of every row (memory ``NaN``: none)."""
    import numpy as np

    folded = cores != 1
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf stay what they are
        processors = whole_counts(np.where(folded, nodes * cores, nodes))
        return processors, np.where(folded, memory_mb * nodes / processors, memory_mb)


def one_node(nodes: int, cores: float, memory_mb: float | None
             ) -> tuple[float, float | None]:
    """The request as the cores of one node (GWF's processors, OpenDC's CPUs) and that
    node's memory: the same total cores and the same total memory."""
    if nodes == 1:
        return cores, memory_mb
    return nodes * cores, None if memory_mb is None else memory_mb * nodes


def one_node_columns(nodes: Any, cores: Any, memory_mb: Any) -> tuple[Any, Any]:
    """``one_node`` of every row (memory ``NaN``: none)."""
    import numpy as np

    single = nodes == 1
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf stay what they are
        return (np.where(single, cores, nodes * cores),
                np.where(single, memory_mb, memory_mb * nodes))


def only_resplit(placement: object, nodes: object, cores: object, total: float) -> bool:
    """Whether writing a request as ``total`` cores (SWF's or Batsim's processors, one
    node's cores in GWF, osp-workload and OpenDC) keeps all of it: a request for cores
    anywhere (``Placement.CORES``) means only its total cores and total memory, so how
    they are split into nodes is no information, as long as ``total`` is that total."""
    return (placement is Placement.CORES and isinstance(nodes, int)
            and type(nodes) is int and isinstance(cores, int | float)
            and type(cores) in (int, float) and nodes * cores == total)


def only_resplit_rows(placements: Any, nodes: Any, cores: Any, total: Any) -> Any:
    """``only_resplit`` of every row (``placements``: ``WorkloadColumns.placement`` codes,
    ``None`` for whole nodes everywhere)."""
    import numpy as np

    if placements is None:
        return np.zeros(len(nodes), dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        return (placements == PLACEMENTS.index(Placement.CORES)) & (nodes * cores == total)
