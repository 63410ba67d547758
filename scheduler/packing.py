"""How a cores-anywhere task (``Placement.CORES``: SWF and GWF processors) is laid onto
machines, one rule for every planner.

* When one machine the task may use can hold all its cores (and their share of every other
  resource), it goes on one machine, the one the R5 policy picks among those: exactly as a
  one-node task. A one-core task is therefore placed as the SC18 scheduler places it.
* Otherwise its cores are spread first fit over the machines in topology order: each
  machine, in turn, takes as many whole cores of what is left as it has free, until all
  are placed. A machine contributes whole cores only, except the last part of a task whose
  own count is not whole.
* Every core brings its share of the task's memory, GPUs and named resources
  (``memory_mb x nodes / (nodes x cores)`` per core): a machine takes only as many cores as
  its free amounts cover, and its share is ``units x its cores / all the cores``, rounded
  up, so no machine is ever short.

``spread`` is that second rule on any view of free cores (now, projected at a shadow, the
minimum over a reservation window), so the planners reserve exactly what they later start.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dcx.scheduler.problem import CORE_UNITS, share_limit

Demand = tuple[tuple[int, int], ...]

Spread = tuple[list[int], list[int], list[Demand]]
"""``(machines, core units on each, the other resources each takes)``; the last is empty for
a task asking for cores only."""


def spread(need: int, demand: Demand, machines: Iterable[int], free: Sequence[int],
           extra_free: Sequence[Sequence[int]] = ()) -> Spread | None:
    """``need`` core units spread first fit over ``machines`` (in the order given) by
    ``free`` cores (and ``extra_free`` of every dimension of ``demand``); ``None`` when
    they do not add up."""
    chosen: list[int] = []
    shares: list[int] = []
    remaining = need
    for machine in machines:
        available = free[machine]
        if demand:
            available = share_limit(available, need, demand, extra_free, machine)
        take = remaining if available >= remaining else available - available % CORE_UNITS
        if take <= 0:
            continue
        chosen.append(machine)
        shares.append(take)
        remaining -= take
        if remaining == 0:
            return chosen, shares, spread_demand(need, demand, shares)
    return None


def spread_demand(need: int, demand: Demand, shares: Sequence[int]) -> list[Demand]:
    """What each machine of a spread task gives of the resources beside cores: ``units x
    its cores / all the cores``, rounded up (empty for a task asking for cores only)."""
    if not demand:
        return []
    return [tuple((dimension, -(-units * cores // need)) for dimension, units in demand)
            for cores in shares]

