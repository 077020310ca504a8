"""Inline SVG charts for the HTML report: bars with error bars, time series, and a scatter
with a fitted curve.

Written by hand, a few primitives: the page must be one self-contained file that fetches
nothing (no chart library from a CDN), and matplotlib's SVG of the same chart is an optional
extra and ~30 times larger.  Every chart is an ``<svg>`` element with a ``<title>`` and
text labels, so it reads without colour and a browser's find sees its labels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 720
PALETTE = ("#2f6db5", "#d9822b", "#3a9a5b", "#b53a3a", "#7d5bb5", "#5b9ab5", "#a0a03a", "#777777")
"""Line colours, in turn; the first is the bars' (distinct in greyscale by their lightness)."""
NOISE = "#9db8dc"
"""A bar within noise of the one before it: the first colour, lighter."""


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    """The bar's length: the median the ranking sorts by."""
    low: float
    high: float
    """The error bar: mean ± standard deviation (equal to ``value`` for one run)."""
    note: str = ""
    within_noise: bool = False


def bars(title: str, rows: Sequence[Bar], fmt: Callable[[float], str]) -> str:
    """Horizontal bars, one per row, in the order given, with their error bars."""
    row_h, left, right = 26, 190, 150
    height = 30 + row_h * len(rows) + 10
    top = max([r.high for r in rows] + [r.value for r in rows] + [0.0])
    scale = (WIDTH - left - right) / top if top > 0 else 0.0
    parts = [_open(title, height), _text(8, 18, title, weight="bold")]
    for i, r in enumerate(rows):
        y = 30 + i * row_h
        w = max(r.value * scale, 0.0)
        fill = NOISE if r.within_noise else PALETTE[0]
        parts.append(_text(left - 8, y + 16, _clip(r.label, 26), anchor="end"))
        parts.append(f'<rect x="{left}" y="{y + 4}" width="{w:.1f}" height="16" fill="{fill}"/>')
        lo, hi = left + max(r.low, 0.0) * scale, left + r.high * scale
        if hi - lo >= 1:
            mid = y + 12
            parts.append(
                f'<path d="M{lo:.1f} {mid}H{hi:.1f}M{lo:.1f} {mid - 5}V{mid + 5}'
                f'M{hi:.1f} {mid - 5}V{mid + 5}" stroke="#222" stroke-width="1.2" fill="none"/>'
            )
        label = fmt(r.value) + (f"  {r.note}" if r.note else "")
        parts.append(_text(left + max(w, hi - left) + 6, y + 16, label, size=11))
    return "".join(parts) + "</svg>"


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[float, float]]
    """(x, y), x increasing; a gap in the data is simply no point."""


def lines(
    title: str,
    series: Sequence[Series],
    x_label: str,
    fmt_y: Callable[[float], str],
    *,
    y_floor: float = 0.0,
) -> str:
    """Lines on shared axes (x from 0), the legend under the title.  A point that is not
    finite is left out (a gap), so no coordinate is ever a nan or an inf."""
    series = [
        Series(s.label, [(x, y) for x, y in s.points if math.isfinite(x) and math.isfinite(y)])
        for s in series
    ]
    legend_rows = (len(series) + 3) // 4
    left, right, top_pad = 80, 20, 36 + 14 * legend_rows
    height = top_pad + 212
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    x_max = max(xs, default=1.0) or 1.0
    y_max = _nice(max([*ys, y_floor]) or 1.0)
    plot_w, plot_h = WIDTH - left - right, height - top_pad - 36

    def px(x: float) -> float:
        return left + x / x_max * plot_w

    def py(y: float) -> float:
        return top_pad + plot_h - y / y_max * plot_h

    parts = [_open(title, height), _text(8, 18, title, weight="bold")]
    for i, s in enumerate(series):  # the legend
        colour = PALETTE[i % len(PALETTE)]
        x = 8 + (i % 4) * 175
        y = 38 + (i // 4) * 14
        parts.append(f'<rect x="{x}" y="{y - 9}" width="12" height="4" fill="{colour}"/>')
        parts.append(_text(x + 16, y - 4, _clip(s.label, 22), size=11))
    for k in range(5):  # y grid and its labels
        v = y_max / 4 * k  # divided first: y_max * k may pass the largest float
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
            'stroke="#ddd"/>'
        )
        parts.append(_text(left - 6, py(v) + 4, fmt_y(v), anchor="end", size=11))
    parts.append(_text(left + plot_w, height - 8, f"{x_label}, 0 … {x_max:.3g}", anchor="end"))
    for i, s in enumerate(series):
        if not s.points:
            continue
        d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
        colour = PALETTE[i % len(PALETTE)]
        parts.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
    return "".join(parts) + "</svg>"


def scatter(
    title: str,
    points: Sequence[tuple[float, float, str]],
    curve: Callable[[float], float | None],
    x_label: str,
    y_label: str,
    fmt: Callable[[float], str],
) -> str:
    """Labelled points (x, y, label) and ``curve`` drawn across their x range, from 0."""
    left, right, top_pad, height = 90, 30, 36, 300
    x_max = _nice(max((x for x, _, _ in points), default=1.0) * 1.05)
    ys = [y for _, y, _ in points]
    on_curve = [curve(x_max * k / 40) for k in range(41)]
    y_max = _nice(max([*ys, *(y for y in on_curve if y is not None)], default=1.0) * 1.05)
    plot_w, plot_h = WIDTH - left - right, height - top_pad - 40

    def px(x: float) -> float:
        return left + x / x_max * plot_w

    def py(y: float) -> float:
        return top_pad + plot_h - max(0.0, min(y, y_max)) / y_max * plot_h

    parts = [_open(title, height), _text(8, 18, title, weight="bold")]
    for k in range(5):
        v = y_max * k / 4
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
            'stroke="#ddd"/>'
        )
        parts.append(_text(left - 6, py(v) + 4, fmt(v), anchor="end", size=11))
        parts.append(
            _text(px(x_max * k / 4), height - 22, fmt(x_max * k / 4), anchor="middle", size=11)
        )
    parts.append(_text(left + plot_w, height - 6, x_label, anchor="end"))
    parts.append(_text(12, top_pad - 8, y_label))
    d = " ".join(
        f"{px(x_max * k / 40):.1f},{py(y):.1f}" for k, y in enumerate(on_curve) if y is not None
    )
    parts.append(f'<polyline points="{d}" fill="none" stroke="{PALETTE[1]}" stroke-width="1.6"/>')
    for x, y, label in points:
        parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="{PALETTE[0]}"/>')
        parts.append(_text(px(x) + 6, py(y) - 6, _clip(label, 20), size=11))
    return "".join(parts) + "</svg>"


def _nice(v: float) -> float:
    """A round axis top at or above ``v``: 1, 1.2, 1.5, 2 … 8 times a power of ten."""
    if v <= 0 or not math.isfinite(v):
        return 1.0
    e = 10.0 ** math.floor(math.log10(v))
    steps = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
    # Near the largest float the round top overflows to inf (and 0 × inf is a nan
    # coordinate): ``v`` itself is the top there.
    return next((m * e for m in steps if v <= m * e < math.inf), v)


def _open(title: str, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">'
        f"<title>{escape(title)}</title>"
    )


def _text(
    x: float, y: float, text: str, *, anchor: str = "start", size: int = 12, weight: str = ""
) -> str:
    bold = f' font-weight="{weight}"' if weight else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{bold}>'
        f"{escape(text)}</text>"
    )


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
