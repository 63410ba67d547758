"""R4, machine filtering: the machines whose free cores (and other free resources) cover what
a task asks of each. Below the policies and the resource stages, which both use it."""

from __future__ import annotations

from collections.abc import Sequence


def free_capacity(need: int, machines: Sequence[int], free: Sequence[int]) -> list[int]:
    """R4: machines (in topology order) whose free cores cover ``need``."""
    return [machine for machine in machines if free[machine] >= need]


def free_resources(need: int, demand: Sequence[tuple[int, int]], machines: Sequence[int],
                   free: Sequence[int], extra_free: Sequence[Sequence[int]]) -> list[int]:
    """R4 with resources beyond cores: machines (in topology order) whose free cores cover
    ``need`` and whose free units cover ``demand`` (``(dimension index, units)`` pairs, one
    column of ``extra_free`` per dimension)."""
    fitting = free_capacity(need, machines, free)
    for dimension, units in demand:
        column = extra_free[dimension]
        fitting = [machine for machine in fitting if column[machine] >= units]
    return fitting
