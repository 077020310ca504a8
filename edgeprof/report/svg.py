"""Inline SVG charts for the HTML report: bars with whiskers, time series, and a scatter
with a fitted curve.

Written by hand, a few primitives: the page must be one self-contained file that fetches
nothing (no chart library from a CDN), and matplotlib's SVG of the same chart is an optional
extra and ~30 times larger.  Every chart is an ``<svg>`` element with a ``<title>`` and
text labels, so it reads without colour and a browser's find sees its labels.  Each has a
``viewBox``: the page's style scales it down to the width it has (a phone's 400 px), and a
chart whose labels need more than :data:`WIDTH` is drawn wider rather than cut (a bar's
``149.7MiB  ≈ previous: within noise`` had been cut at the 720th pixel).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 720
"""A chart's usual width in user units (CSS pixels at full size)."""
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#999999")
"""Line colours, in turn: Okabe and Ito's colour-blind-safe set (yellow left out: it does not
read on white).  The former palette's green, red and orange became three olive tones under
deuteranopia, and its blue and red one grey in print; :data:`DASHES` tells lines apart
without colour at all."""
DASHES = ("", "7 3", "2 2", "9 3 2 3", "4 4", "1 3", "12 3 3 3", "5 2 1 2")
"""Each line's dash pattern, in turn with :data:`PALETTE` (solid first)."""
NOISE = "#8FC1E3"
"""A bar within noise of the one before it: the first colour, lighter."""
REFERENCE = "#B00020"
"""A limit or budget drawn across a chart (dashed, and named at its end)."""


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    """The bar's length: the median the ranking sorts by."""
    low: float
    high: float
    """The whisker: the runs' range, min … max (equal to ``value`` for one run).  Chosen
    over mean ± sd, which the bars had drawn: that whisker was not centred on the bar's end
    (a median), and the ``--plots`` PNGs draw min … max: one glyph, one meaning.  The range
    holds the median, and each end is a run that was measured."""
    note: str = ""
    within_noise: bool = False


@dataclass(frozen=True)
class Reference:
    """A horizontal line across a chart at ``value``: a limit or a budget."""

    value: float
    label: str


def text_width(text: str, size: float) -> float:
    """About how wide ``text`` is in a sans-serif face at ``size``, a little over rather than
    under (a label laid out by it must not be cut): by character class, from DejaVu Sans's
    advance widths (digits 0.64 em, lower case ~0.6, capitals ~0.7, ``i l . ,`` ~0.3)."""
    narrow, wide = set("ilj.,:;|!'()[] "), set("mwMW%@")
    em = 0.0
    for c in text:
        if c in narrow:
            em += 0.34
        elif c in wide:
            em += 0.95
        elif c.isupper():
            em += 0.72
        else:
            em += 0.64
    return em * size


def ticks(top: float, count: int = 5) -> list[float]:
    """Round axis ticks from 0 to at least ``top``: steps of 1, 2 or 5 times a power of ten
    (Heckbert's "nice numbers", Graphics Gems 1990), about ``count`` of them: 0, 10, 20, 30
    for a top of 30 (the axes had read ``0% 8% 15% 22% 30%``).  The last tick is the axis's
    top.  Where the step or the top would not be a finite float (a top near the largest
    float), ``top`` in quarters."""
    if not math.isfinite(top) or top <= 0:
        top = 1.0
    step = _nice_step(top / max(count - 1, 1))
    n = math.ceil(top / step - 1e-9) if math.isfinite(step) and step > 0 else 0
    if n <= 0 or not math.isfinite(n * step):
        return [top / 4 * k for k in range(5)]
    digits = max(0, -math.floor(math.log10(step)) + 1)
    return [round(k * step, digits) for k in range(n + 1)]


def _nice_step(raw: float) -> float:
    """1, 2, 5 or 10 times a power of ten, the nearest to ``raw`` (Heckbert's rounding)."""
    e = 10.0 ** math.floor(math.log10(raw))
    f = raw / e
    return e * (1.0 if f < 1.5 else 2.0 if f < 3.0 else 5.0 if f < 7.0 else 10.0)


def bars(
    title: str, rows: Sequence[Bar], fmt: Callable[[float], str], key: str = ""
) -> str:
    """Horizontal bars, one per row, in the order given, with their whiskers; ``key`` (what
    bar and whisker are) under the title.  The margins are as wide as the longest name and
    the longest value label: the chart grows wider rather than cut them."""
    row_h, gap, size = 26, 16, 11
    head = 30 + (16 if key else 0)
    left = max(60.0, max((text_width(r.label, 12) for r in rows), default=0.0) + 14)
    labels = [fmt(r.value) + (f"  {r.note}" if r.note else "") for r in rows]
    right = max((text_width(t, size) for t in labels), default=0.0) + gap
    plot_w = max(WIDTH - left - right, 240.0)
    width = max(left + plot_w + right, text_width(title, 13) + 16, text_width(key, size) + 16)
    height = head + row_h * len(rows) + 10
    top = max([r.high for r in rows] + [r.value for r in rows] + [0.0])
    scale = plot_w / top if top > 0 and math.isfinite(top) else 0.0
    parts = [_open(title, width, height), _text(8, 18, title, weight="bold")]
    if key:
        parts.append(_text(8, 36, key, size=size, fill="#444"))
    for i, (r, label) in enumerate(zip(rows, labels, strict=True)):
        y = head + i * row_h
        w = max(r.value * scale, 0.0)
        fill = NOISE if r.within_noise else PALETTE[0]
        parts.append(_text(left - 8, y + 16, r.label, anchor="end"))
        parts.append(
            f'<rect x="{left:.1f}" y="{y + 4}" width="{w:.1f}" height="16" fill="{fill}"/>'
        )
        lo, hi = left + max(r.low, 0.0) * scale, left + r.high * scale
        if hi - lo >= 1:
            mid = y + 12
            parts.append(
                f'<path d="M{lo:.1f} {mid}H{hi:.1f}M{lo:.1f} {mid - 5}V{mid + 5}'
                f'M{hi:.1f} {mid - 5}V{mid + 5}" stroke="#222" stroke-width="1.2" fill="none"/>'
            )
        parts.append(_text(left + max(w, hi - left) + 6, y + 16, label, size=size))
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
    references: Sequence[Reference] = (),
) -> str:
    """Lines on shared axes (x from 0), each its own colour and dash (the first 64 a pair
    of their own), the legend under the title (whole names, wrapped into rows), round ticks
    on both axes, and ``references`` (a limit, a budget) as dashed lines named at their
    end.  A point that is not finite is left out (a gap), so no coordinate is ever a nan or
    an inf."""
    series = [
        Series(s.label, [(x, y) for x, y in s.points if math.isfinite(x) and math.isfinite(y)])
        for s in series
    ]
    refs = [r for r in references if math.isfinite(r.value) and r.value >= 0]
    left, right = 80, 20 + max((text_width(r.label, 11) for r in refs), default=0.0)
    legend, legend_h = _legend(series, WIDTH - 16)
    top_pad = 40 + legend_h
    height = top_pad + 212
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points] + [r.value for r in refs]
    x_ticks = ticks(max(xs, default=1.0))
    y_ticks = ticks(max([*ys, y_floor]))
    x_max, y_max = x_ticks[-1], y_ticks[-1]
    plot_w, plot_h = WIDTH - left - right, height - top_pad - 40

    def px(x: float) -> float:
        return left + x / x_max * plot_w

    def py(y: float) -> float:
        return top_pad + plot_h - y / y_max * plot_h

    parts = [_open(title, WIDTH, height), _text(8, 18, title, weight="bold"), *legend]
    for v in y_ticks:  # y grid and its labels
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w:.1f}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
            'stroke="#ddd"/>'
        )
        parts.append(_text(left - 6, py(v) + 4, fmt_y(v), anchor="end", size=11))
    base = top_pad + plot_h
    for v in x_ticks:  # x ticks and their labels
        parts.append(
            f'<line x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{base}" y2="{base + 4}" stroke="#888"/>'
        )
        parts.append(_text(px(v), base + 16, f"{v:g}", anchor="middle", size=11))
    parts.append(_text(left + plot_w, height - 4, x_label, anchor="end", size=11))
    for r in refs:
        y = py(r.value)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{REFERENCE}" stroke-width="1.2" stroke-dasharray="5 4"/>'
        )
        parts.append(_text(left + plot_w + 4, y + 4, r.label, size=11, fill=REFERENCE))
    for i, s in enumerate(series):
        if not s.points:
            continue
        d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
        parts.append(f'<polyline points="{d}" fill="none" {_stroke(i)} stroke-width="1.8"/>')
    return "".join(parts) + "</svg>"


def _stroke(i: int) -> str:
    """Line ``i``'s colour and dash (:data:`PALETTE`, :data:`DASHES`): the dash moves on by
    one each time the colours come round again, so the first 64 lines each have a pair of
    their own (the two had cycled together: a sweep's 9th and 10th lines were drawn as its
    1st and 2nd, both #0072B2 solid and #E69F00 "7 3")."""
    n = len(PALETTE)
    dash = DASHES[(i % n + i // n) % len(DASHES)]
    return f'stroke="{PALETTE[i % len(PALETTE)]}"' + (
        f' stroke-dasharray="{dash}"' if dash else ""
    )


def _legend(series: Sequence[Series], width: float) -> tuple[list[str], int]:
    """Each series' sample of line (colour and dash) and whole name, laid left to right and
    wrapped into as many rows as they need (names had been cut at 22 characters: "4
    [cpus=0.5, memory=2…"); the parts and their height."""
    parts, x, row = [], 8.0, 0
    for i, s in enumerate(series):
        w = 28 + text_width(s.label, 11) + 18
        if x > 8 and x + w > width:
            x, row = 8.0, row + 1
        y = 38 + row * 16
        parts.append(
            f'<line x1="{x:.1f}" x2="{x + 24:.1f}" y1="{y - 4}" y2="{y - 4}" {_stroke(i)} '
            'stroke-width="2"/>'
        )
        parts.append(_text(x + 28, y, s.label, size=11))
        x += w
    return parts, (row + 1) * 16 if series else 0


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
    x_ticks = ticks(max((x for x, _, _ in points), default=1.0) * 1.05)
    x_max = x_ticks[-1]
    ys = [y for _, y, _ in points]
    on_curve = [curve(x_max * k / 40) for k in range(41)]
    y_ticks = ticks(max([*ys, *(y for y in on_curve if y is not None)], default=1.0) * 1.05)
    y_max = y_ticks[-1]
    plot_w, plot_h = WIDTH - left - right, height - top_pad - 40

    def px(x: float) -> float:
        return left + x / x_max * plot_w

    def py(y: float) -> float:
        return top_pad + plot_h - max(0.0, min(y, y_max)) / y_max * plot_h

    parts = [_open(title, WIDTH, height), _text(8, 18, title, weight="bold")]
    for v in y_ticks:
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
            'stroke="#ddd"/>'
        )
        parts.append(_text(left - 6, py(v) + 4, fmt(v), anchor="end", size=11))
    for v in x_ticks:
        parts.append(_text(px(v), height - 22, fmt(v), anchor="middle", size=11))
    parts.append(_text(left + plot_w, height - 6, x_label, anchor="end"))
    parts.append(_text(12, top_pad - 8, y_label))
    d = " ".join(
        f"{px(x_max * k / 40):.1f},{py(y):.1f}" for k, y in enumerate(on_curve) if y is not None
    )
    parts.append(f'<polyline points="{d}" fill="none" {_stroke(1)} stroke-width="1.6"/>')
    for x, y, label in points:
        parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="{PALETTE[0]}"/>')
        parts.append(_text(px(x) + 6, py(y) - 6, label, size=11))
    return "".join(parts) + "</svg>"


def _open(title: str, width: float, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0f}" '
        f'height="{height}" viewBox="0 0 {width:.0f} {height}" font-family="sans-serif" '
        f'font-size="12"><title>{escape(title)}</title>'
    )


def _text(
    x: float,
    y: float,
    text: str,
    *,
    anchor: str = "start",
    size: int = 12,
    weight: str = "",
    fill: str = "",
) -> str:
    bold = f' font-weight="{weight}"' if weight else ""
    colour = f' fill="{fill}"' if fill else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{bold}{colour}>'
        f"{escape(text)}</text>"
    )
