"""Minimal SVG charts for the paper's figures: per-policy distributions (Figures 7 and 8) and
per-stage scheduler time (Figures 9 and 10).

Hand-written SVG rather than a plotting library: two chart types with fixed layout are a
few dozen lines of text output, while matplotlib would add a heavy dependency (and a font
cache) to a converter package for the sake of static boxes and bars.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape, quoteattr

ROW_HEIGHT = 28
LABEL_WIDTH = 150
PLOT_WIDTH = 560
MARGIN = 20
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948")


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks."""
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _ticks(limit: float, count: int = 5) -> list[float]:
    if limit <= 0:
        return [0.0]
    raw = limit / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [step * i for i in range(int(limit / step) + 1)]


def _text(x: float, y: float, content: str, anchor: str = "start", size: int = 12) -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-family="sans-serif">{escape(content)}</text>')


def _frame(title: str, rows: int, body: list[str], axis: list[str]) -> str:
    height = MARGIN * 3 + rows * ROW_HEIGHT + 30
    width = LABEL_WIDTH + PLOT_WIDTH + MARGIN * 2
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label={quoteattr(title)}>',
        f"<title>{escape(title)}</title>",
        '<rect width="100%" height="100%" fill="white"/>',
        _text(width / 2, MARGIN, title, "middle", 14),
        *axis,
        *body,
        "</svg>",
        "",
    ])


def _axis(limit: float, rows: int, label: str) -> tuple[list[str], float]:
    """Gridlines and labels; returns them and the pixels per unit."""
    ticks = _ticks(limit)
    top = MARGIN * 2
    bottom = top + rows * ROW_HEIGHT
    scale = PLOT_WIDTH / (ticks[-1] or 1.0)
    parts = []
    for tick in ticks:
        x = LABEL_WIDTH + tick * scale
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" '
                     'stroke="#ddd"/>')
        parts.append(_text(x, bottom + 14, f"{tick:g}", "middle", 10))
    parts.append(_text(LABEL_WIDTH + PLOT_WIDTH / 2, bottom + 30, label, "middle"))
    return parts, scale


def distribution_svg(title: str, unit_label: str,
                     series: Sequence[tuple[str, Sequence[float]]]) -> str:
    """One horizontal box per series: box = quartiles, whiskers = 5th to 95th percentile,
    thick bar = mean (the paper's marker)."""
    finite = [(label, sorted(v for v in values if math.isfinite(v))) for label, values in series]
    limit = max((values[-1] for _, values in finite if values), default=1.0)
    axis, scale = _axis(limit, len(finite), unit_label)
    body: list[str] = []
    for row, (label, values) in enumerate(finite):
        middle = MARGIN * 2 + row * ROW_HEIGHT + ROW_HEIGHT / 2
        body.append(_text(LABEL_WIDTH - 8, middle + 4, label, "end"))
        if not values:
            continue
        p5, q1, median, q3, p95 = (_quantile(values, q) for q in (0.05, 0.25, 0.5, 0.75, 0.95))
        mean = math.fsum(values) / len(values)

        def x(value: float) -> float:
            return LABEL_WIDTH + value * scale

        colour = PALETTE[row // 3 % len(PALETTE)]
        body.append(f'<line x1="{x(p5):.1f}" y1="{middle}" x2="{x(p95):.1f}" y2="{middle}" '
                    'stroke="#555"/>')
        body.append(f'<rect x="{x(q1):.1f}" y="{middle - 8}" width="{max(1.0, x(q3) - x(q1)):.1f}"'
                    f' height="16" fill="{colour}" fill-opacity="0.6" stroke="#333"/>')
        body.append(f'<line x1="{x(median):.1f}" y1="{middle - 8}" x2="{x(median):.1f}" '
                    f'y2="{middle + 8}" stroke="#333"/>')
        body.append(f'<line x1="{x(mean):.1f}" y1="{middle - 11}" x2="{x(mean):.1f}" '
                    f'y2="{middle + 11}" stroke="black" stroke-width="3">'
                    f"<title>mean {mean:.1f}</title></line>")
    return _frame(title, len(finite), body, axis)


def stacked_bars_svg(title: str, unit_label: str, stages: Sequence[str],
                     series: Sequence[tuple[str, Mapping[str, float]]]) -> str:
    """One horizontal bar per series, split into its stages, with a legend row."""
    totals = [sum(values.get(stage, 0.0) for stage in stages) for _, values in series]
    rows = len(series) + 1
    axis, scale = _axis(max(totals, default=1.0), rows, unit_label)
    body: list[str] = []
    for row, (label, values) in enumerate(series):
        top = MARGIN * 2 + row * ROW_HEIGHT + 6
        body.append(_text(LABEL_WIDTH - 8, top + 12, label, "end"))
        x = float(LABEL_WIDTH)
        for index, stage in enumerate(stages):
            width = values.get(stage, 0.0) * scale
            body.append(f'<rect x="{x:.1f}" y="{top}" width="{width:.1f}" height="16" '
                        f'fill="{PALETTE[index % len(PALETTE)]}">'
                        f"<title>{escape(stage)}: {values.get(stage, 0.0):g}</title></rect>")
            x += width
    legend_y = MARGIN * 2 + len(series) * ROW_HEIGHT + 10
    for index, stage in enumerate(stages):
        x = LABEL_WIDTH + index * 80
        body.append(f'<rect x="{x}" y="{legend_y}" width="12" height="12" '
                    f'fill="{PALETTE[index % len(PALETTE)]}"/>')
        body.append(_text(x + 16, legend_y + 11, stage))
    return _frame(title, rows, body, axis)
