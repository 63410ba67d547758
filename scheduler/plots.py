"""Figures of one or more runs, drawn with matplotlib (the optional ``plots`` extra) as SVG:

* empirical CDFs per scheduler of task response time (TRT), job makespan (JMS), waiting
  time and bounded slowdown (the paper's Figures 7 and 8 show TRT and JMS distributions);
* utilisation over time per scheduler (busy cores over all cores);
* scheduler time per stage (the paper's Figures 9 and 10);
* a Gantt chart of one run, for workloads of up to ``GANTT_MAX_TASKS`` tasks.

Every figure has a caption saying what is shown and over what; axes are fitted to the data
(a logarithmic x axis where the values span more than two decades).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

GANTT_MAX_TASKS = 400
"""Larger workloads get no Gantt chart: the bars would be thinner than a pixel."""
UTILISATION_POINTS = 4000
"""A utilisation series with more steps is averaged into this many equal time bins."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "dcx"  # the same input draws the same file
    plt.rcParams["svg.fonttype"] = "none"
    return plt


def _svg(figure: Any, caption: str) -> str:
    plt = _pyplot()
    figure.text(0.01, 0.01, caption, fontsize=8, ha="left", va="bottom", wrap=True)
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(figure)
    return buffer.getvalue()


def _finite(values: Sequence[float]) -> list[float]:
    return sorted(value for value in values if not math.isnan(value))


def cdf_svg(title: str, axis: str, series: Sequence[tuple[str, Sequence[float]]],
            caption: str) -> str:
    """One empirical CDF line per labelled series (NaN values left out)."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7.5, 4.2))
    everything: list[float] = []
    for label, values in series:
        ordered = _finite(values)
        if not ordered:
            continue
        everything.extend(ordered)
        fractions = [(index + 1) / len(ordered) for index in range(len(ordered))]
        axes.step(ordered, fractions, where="post", label=f"{label} (n={len(ordered):,})")
    positive = [value for value in everything if value > 0]
    if positive and max(positive) / min(positive) > 100:
        axes.set_xscale("symlog", linthresh=min(positive))
    axes.set_ylim(0, 1.02)
    axes.set_xlabel(axis)
    axes.set_ylabel("fraction of values ≤ x")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    if everything:
        axes.legend(fontsize=8, loc="best", framealpha=0.8)
    return _svg(figure, caption)


def utilisation_series(starts: Sequence[float], finishes: Sequence[float],
                       cores: Sequence[float], total_cores: float,
                       ) -> tuple[list[float], list[float]]:
    """``(times, utilisation)`` as a step function: busy cores over ``total_cores`` from
    each time to the next. Tasks that never started or never finished are left out."""
    changes: dict[float, float] = {}
    for begin, end, amount in zip(starts, finishes, cores, strict=True):
        if math.isnan(begin) or math.isnan(end) or end <= begin:
            continue
        changes[begin] = changes.get(begin, 0.0) + amount
        changes[end] = changes.get(end, 0.0) - amount
    times: list[float] = []
    levels: list[float] = []
    busy = 0.0
    for moment in sorted(changes):
        busy += changes[moment]
        times.append(moment)
        levels.append(busy / total_cores if total_cores else 0.0)
    return times, levels


def _binned(times: list[float], levels: list[float]) -> tuple[list[float], list[float]]:
    """The time-weighted mean of a step function over ``UTILISATION_POINTS`` bins."""
    if len(times) <= UTILISATION_POINTS:
        return times, levels
    first, last = times[0], times[-1]
    width = (last - first) / UTILISATION_POINTS
    sums = [0.0] * UTILISATION_POINTS
    for index in range(len(times) - 1):
        begin, end, level = times[index], times[index + 1], levels[index]
        while begin < end:
            slot = min(int((begin - first) / width), UTILISATION_POINTS - 1)
            edge = min(end, first + (slot + 1) * width)
            if edge <= begin:  # rounding at a bin edge
                edge = end
            sums[slot] += level * (edge - begin)
            begin = edge
    return ([first + slot * width for slot in range(UTILISATION_POINTS)],
            [total / width for total in sums])


def utilisation_svg(title: str, series: Sequence[tuple[str, list[float], list[float]]],
                    caption: str) -> str:
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7.5, 4.2))
    for label, times, levels in series:
        if not times:
            continue
        shown_times, shown_levels = _binned(times, levels)
        axes.step(shown_times, shown_levels, where="post", label=label, linewidth=0.9)
    axes.set_ylim(0, 1.02)
    axes.set_xlabel("time since the first arrival [s]")
    axes.set_ylabel("utilisation (busy cores / all cores)")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="best", framealpha=0.8)
    return _svg(figure, caption)


def stacked_bars_svg(title: str, axis: str, stages: Sequence[str],
                     rows: Sequence[tuple[str, Mapping[str, float]]], caption: str) -> str:
    """One horizontal bar per run, stacked by stage."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7.5, 0.9 + 0.35 * max(1, len(rows))))
    labels = [label for label, _ in rows]
    left = [0.0] * len(rows)
    for stage in stages:
        widths = [values.get(stage, 0.0) for _, values in rows]
        axes.barh(labels, widths, left=left, label=stage)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    axes.invert_yaxis()
    axes.set_xlabel(axis)
    axes.set_title(title)
    axes.legend(fontsize=8, ncols=len(stages), loc="lower right")
    axes.grid(axis="x", alpha=0.3)
    return _svg(figure, caption)


def gantt_svg(title: str, machine_labels: Sequence[str],
              bars: Sequence[tuple[int, float, float, int]], caption: str) -> str:
    """``bars``: ``(machine, start, finish, job index)``; one row per machine, a colour per
    job (cycling through the palette). Every bar is one rectangle of a single collection,
    drawn in one call: one artist per bar (``barh`` per task) cost about a second per
    hundred tasks."""
    from matplotlib.collections import PolyCollection

    plt = _pyplot()
    rows = sorted({machine for machine, _, _, _ in bars})
    height = min(12.0, 1.2 + 0.22 * len(rows))
    figure, axes = plt.subplots(figsize=(8.0, height))
    palette = plt.get_cmap("tab20").colors
    position = {machine: index for index, machine in enumerate(rows)}
    rectangles = []
    colours = []
    for machine, begin, end, job in bars:
        row = position[machine]
        end = max(end, begin)
        rectangles.append(((begin, row - 0.4), (begin, row + 0.4), (end, row + 0.4),
                           (end, row - 0.4)))
        colours.append(palette[job % len(palette)])
    axes.add_collection(PolyCollection(rectangles, facecolors=colours, edgecolors="black",
                                       linewidths=0.2))
    if bars:
        first = min(begin for _, begin, _, _ in bars)
        last = max(max(end, begin) for _, begin, end, _ in bars)
        margin = 0.02 * (last - first) or 1.0
        axes.set_xlim(first - margin, last + margin)
    axes.set_ylim(len(rows) - 0.5, -0.5)  # the first machine on top
    axes.set_yticks(range(len(rows)), [machine_labels[m] for m in rows],
                    fontsize=7 if len(rows) > 30 else 9)
    axes.set_xlabel("time [s]")
    axes.set_ylabel("machine")
    axes.set_title(title)
    axes.grid(axis="x", alpha=0.3)
    return _svg(figure, caption)
