"""Calibration: fit on-device measurements to profiler results, check the fit, apply it.

A few models are measured on the real device with its native tool (a CSV, one row per model
and optionally per setting); the same models are profiled by edgeprof.  Per metric and per
limit setting, :func:`fit` finds ``device = a·profiler + b`` by least squares, with what a
reader needs to judge it: standard errors, R², residuals, leverage and Cook's distance of
every point, the leave-one-out prediction error, and Kendall's τ-b and Spearman's ρ between
the two rankings.  :func:`calibrate` does the matching and the fits and attaches warnings
when a fit should not be trusted; the :class:`Calibration` is saved as YAML together with the
data it came from, and :func:`predict` applies it to new runs with prediction intervals,
marking extrapolations.

The statistics use the standard library only (no numpy in edgeprof's core dependencies).

Measurement CSV (comma-separated, a header row, ``#`` lines are comments):

* ``model`` (required): the run label (``RunResult.label``); a label's file extension may be
  left out (``mobilenet_v2_0.5`` matches runs labelled ``mobilenet_v2_0.5.onnx``);
* ``cpus``, ``memory`` (optional): the profiler setting the row belongs to (``--cpus`` and
  ``--memory`` of the runs; memory in Docker's spelling, ``1g``);
* ``notes`` (optional, ignored);
* one or more metric columns ``METRIC_UNIT``: the unit is part of the name and required,
  e.g. ``runtime_ms``, ``peak_mem_mb``.  See :data:`METRICS` and :data:`UNITS`; ``kb``,
  ``mb``, ``gb`` are decimal (10³, 10⁶, 10⁹ bytes), ``kib``, ``mib``, ``gib`` binary.
  An empty cell is a value not measured.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..model import RunResult
from ..units import parse_size
from .cells import cells_by_setting, successful
from .metrics import CALIBRATION_METRICS, Metric
from .stats import t_critical

# -- metrics and units --------------------------------------------------------------------

UNITS: dict[str, dict[str, float]] = {
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6},
    "memory": {
        "b": 1.0,
        "kb": 1e3,
        "mb": 1e6,
        "gb": 1e9,
        "kib": 2.0**10,
        "mib": 2.0**20,
        "gib": 2.0**30,
    },
    "percent": {"pct": 1.0},
}
"""Accepted units per kind → factor to the base unit (seconds, bytes, percent of one CPU)."""


METRICS: dict[str, Metric] = CALIBRATION_METRICS
"""Calibratable metrics by device CSV column stem (a new one is one more entry in
:mod:`edgeprof.analysis.metrics`)."""

SETTING_COLUMNS = ("cpus", "memory")
IGNORED_COLUMNS = ("notes",)

DEFAULT_MIN_R2 = 0.9
DEFAULT_LEVEL = 0.95
MAX_LEVERAGE = 0.9
"""Leverage above which one point is said to fix the line, whatever n (see
:func:`leverage_limit`)."""
MAX_COOKS_D = 1.0
"""Influential: removing the point moves the fit by more than this Cook's distance (the
conventional cut, Cook & Weisberg 1982)."""
COOKS_MIN_N = 10
"""Below this many points Cook's distance is not a warning of its own (see
:func:`fit_warnings`)."""

CALIBRATION_SCHEMA = "edgeprof-calibration/1"


def base_unit(kind: str) -> str:
    return {"time": "s", "memory": "b", "percent": "pct"}[kind]


UNIT_LABELS = {"kb": "kB", "mb": "MB", "gb": "GB", "kib": "KiB", "mib": "MiB", "gib": "GiB"}


def format_value(v: float | None, unit: str, kind: str) -> str:
    """A base-unit value in ``unit``, 4 significant digits (whole above 1000): ``412.3 ms``."""
    if v is None or not math.isfinite(v):
        return "n/a"
    x = v / UNITS[kind][unit]
    text = f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"
    return f"{text}%" if unit == "pct" else f"{text} {unit_label(unit)}"


def unit_label(unit: str) -> str:
    """How a CSV unit is printed: ``mb`` → ``MB``, ``mib`` → ``MiB``, ``pct`` → ``%``."""
    return {"b": "B", "pct": "%", **UNIT_LABELS}.get(unit, unit)


# -- statistics ----------------------------------------------------------------------------


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's ρ: Pearson's correlation of the ranks (ties at their average rank);
    ``None`` when either side has no spread."""
    if len(x) != len(y):
        raise ValueError("x and y differ in length")
    if len(x) < 2:
        return None
    return _pearson(_ranks(x), _ranks(y))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's τ-b (ties in either ranking corrected for); ``None`` when undefined."""
    if len(x) != len(y):
        raise ValueError("x and y differ in length")
    n = len(x)
    conc = disc = tie_x = tie_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                tie_x += 1
                tie_y += 1
            elif dx == 0:
                tie_x += 1
            elif dy == 0:
                tie_y += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    n0 = n * (n - 1) // 2
    denom = math.sqrt((n0 - tie_x) * (n0 - tie_y))
    return None if denom == 0 else (conc - disc) / denom


def discordant_pairs(
    labels: Sequence[str], x: Sequence[float], y: Sequence[float]
) -> list[tuple[str, str]]:
    """Pairs ranked one way by the profiler and the other way on the device."""
    out = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if (x[i] - x[j]) * (y[i] - y[j]) < 0:
                a, b = (i, j) if x[i] < x[j] else (j, i)
                out.append((labels[a], labels[b]))
    return out


@dataclass(frozen=True)
class LinearFit:
    """``y = a·x + b`` by ordinary least squares, with its diagnostics.

    Values that need more points than there are are ``None``: standard errors, the residual
    standard error, Cook's distance and intervals need n ≥ 3 (a line through two points has
    no residual degrees of freedom); a leave-one-out error is ``None`` for a point without
    which no line can be drawn (leverage 1).
    """

    x: tuple[float, ...]
    y: tuple[float, ...]
    labels: tuple[str, ...]
    a: float
    b: float
    se_a: float | None
    se_b: float | None
    s: float | None
    """Residual standard error, √(SSE / (n − 2))."""
    r2: float | None
    """``None`` when every y is the same (nothing to explain)."""
    fitted: tuple[float, ...]
    residuals: tuple[float, ...]
    """y − fitted."""
    leverage: tuple[float, ...]
    cooks_d: tuple[float, ...] | None
    loo_errors: tuple[float | None, ...]
    """y_i minus the prediction of a line fitted without point i: e_i / (1 − h_i)."""
    loo_rmse: float | None
    tau: float | None
    rho: float | None
    x_mean: float
    sxx: float

    @property
    def n(self) -> int:
        return len(self.x)

    @property
    def dof(self) -> int:
        return self.n - 2

    @property
    def x_range(self) -> tuple[float, float]:
        return min(self.x), max(self.x)

    def predict(self, x: float, level: float = DEFAULT_LEVEL) -> tuple[float, float | None]:
        """The predicted y at ``x`` and the half-width of its prediction interval at
        ``level`` (``None`` with fewer than 3 points)."""
        y = self.a * x + self.b
        if self.s is None:
            return y, None
        se = self.s * math.sqrt(1 + 1 / self.n + (x - self.x_mean) ** 2 / self.sxx)
        return y, t_critical(level, self.dof) * se

    def without(self, i: int) -> LinearFit | None:
        """The fit without point ``i`` (``None`` when the rest cannot make a line)."""
        keep = [k for k in range(self.n) if k != i]
        try:
            return fit(
                [self.x[k] for k in keep],
                [self.y[k] for k in keep],
                [self.labels[k] for k in keep],
            )
        except ConfigError:
            return None


def fit(x: Sequence[float], y: Sequence[float], labels: Sequence[str] | None = None) -> LinearFit:
    """Least squares ``y = a·x + b`` with diagnostics.  Needs two distinct x values."""
    n = len(x)
    if len(y) != n:
        raise ValueError("x and y differ in length")
    names = tuple(labels) if labels is not None else tuple(str(i + 1) for i in range(n))
    if len(names) != n:
        raise ValueError("labels and x differ in length")
    if n < 2:
        raise ConfigError(f"cannot fit a line to {n} point(s)")
    xs, ys = tuple(float(v) for v in x), tuple(float(v) for v in y)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((v - mx) ** 2 for v in xs)
    if sxx == 0:
        raise ConfigError(f"cannot fit a line: all {n} profiler values are equal")
    sxy = sum((u - mx) * (v - my) for u, v in zip(xs, ys, strict=True))
    syy = sum((v - my) ** 2 for v in ys)
    a = sxy / sxx
    b = my - a * mx
    fitted = tuple(a * u + b for u in xs)
    res = tuple(v - f for v, f in zip(ys, fitted, strict=True))
    sse = sum(e * e for e in res)
    lev = tuple(1 / n + (u - mx) ** 2 / sxx for u in xs)
    s = se_a = se_b = None
    cooks: tuple[float, ...] | None = None
    if n >= 3:
        s2 = sse / (n - 2)
        if s2 <= (1e-12 * max(abs(v) for v in ys)) ** 2:
            s2 = 0.0  # rounding noise of an exact line: no scatter to compare influence with
        s = math.sqrt(s2)
        se_a = s / math.sqrt(sxx)
        se_b = s * math.sqrt(1 / n + mx * mx / sxx)
        cooks = tuple(
            0.0 if s2 == 0 else e * e / (2 * s2) * h / (1 - h) ** 2 if h < 1 else math.inf
            for e, h in zip(res, lev, strict=True)
        )
    # A leverage within rounding of 1: the other points share one x, so no line without it.
    loo = tuple(None if 1 - h < 1e-9 else e / (1 - h) for e, h in zip(res, lev, strict=True))
    loo_known = [e for e in loo if e is not None]
    loo_rmse = (
        math.sqrt(sum(e * e for e in loo_known) / len(loo_known))
        if n >= 3 and len(loo_known) == n
        else None
    )
    return LinearFit(
        x=xs,
        y=ys,
        labels=names,
        a=a,
        b=b,
        se_a=se_a,
        se_b=se_b,
        s=s,
        r2=None if syy == 0 else max(0.0, 1 - sse / syy),
        fitted=fitted,
        residuals=res,
        leverage=lev,
        cooks_d=cooks,
        loo_errors=loo,
        loo_rmse=loo_rmse,
        tau=kendall_tau(xs, ys),
        rho=spearman_rho(xs, ys),
        x_mean=mx,
        sxx=sxx,
    )


def leverage_limit(n: int) -> float:
    """High leverage: above twice the average leverage 2p/n (p = 2 parameters), the usual
    rule, capped at :data:`MAX_LEVERAGE` so that the rule can fire for n ≤ 4 too."""
    return min(4 / n, MAX_LEVERAGE)


def fit_warnings(
    f: LinearFit,
    unit: str,
    kind: str,
    min_r2: float = DEFAULT_MIN_R2,
) -> list[str]:
    """Why ``f`` should not be trusted for numbers, each as one sentence (empty: none)."""

    def fmt(v: float) -> str:
        return format_value(v, unit, kind)

    out = []
    if f.n < 3:
        out.append(
            f"only {f.n} points: a line through two points always fits; no standard errors, "
            "no prediction intervals, no leave-one-out check (measure at least 3 models)"
        )
    limit = leverage_limit(f.n)
    # Cook's distance is bounded by (n − 2)/2 · h/(1 − h): with few points it mirrors the
    # leverage (2.3 for any evenly spread 4 points, whatever the data), so its usual cut
    # "D > 1" is only applied from COOKS_MIN_N points on; the table shows it always.
    d_limit = MAX_COOKS_D if f.n >= COOKS_MIN_N else math.inf
    for i in range(f.n):
        h = f.leverage[i]
        d = f.cooks_d[i] if f.cooks_d is not None else None
        high_h = f.n >= 3 and h > limit
        high_d = d is not None and d > d_limit
        if not (high_h or high_d):
            continue
        why = []
        if high_h:
            why.append(f"leverage {h:.2f} > {limit:.2f}")
        if d is not None:
            why.append(f"Cook's distance {d:.2f}" + (f" > {d_limit:g}" if high_d else ""))
        rest = f.without(i)
        moved = (
            f"; without it a = {rest.a:.4g}, b = {fmt(rest.b)} (with it a = {f.a:.4g}, "
            f"b = {fmt(f.b)})"
            if rest is not None
            else "; the other points alone cannot make a line"
        )
        if high_h:
            out.append(
                f"{f.labels[i]} dominates the fit ({', '.join(why)}){moved}: "
                "measure models between it and the others"
            )
        else:
            out.append(
                f"{f.labels[i]} is influential ({', '.join(why)}){moved}: check its measurements"
            )
    lo, hi = f.x_range
    for x in (lo, hi):
        y = f.a * x + f.b
        if y < 0:
            out.append(
                f"the line predicts a negative value ({fmt(y)}) at profiler {fmt(x)}, "
                "inside the calibrated range"
            )
            break
    if f.a <= 0:
        out.append(f"slope a = {f.a:.4g} ≤ 0: the device does not grow with the profiler")
    if f.r2 is not None and f.r2 < min_r2:
        rank = "" if f.tau is None else f" (rankings agree at τ = {f.tau:.2f})"
        out.append(
            f"R² = {f.r2:.3f} < {min_r2:g}: the numbers are not predictable from this fit" + rank
        )
    return out


# -- the measurement CSV -------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceRow:
    line: int
    model: str
    cpus: float | None
    memory: int | None
    values: Mapping[str, float]
    """Metric name → value in the base unit (only the cells that were filled in)."""

    def setting(self) -> str:
        parts = []
        if self.cpus is not None:
            parts.append(f"cpus={self.cpus:g}")
        if self.memory is not None:
            from ..units import format_binary

            parts.append(f"memory={format_binary(self.memory)}")
        return ", ".join(parts)

    def describe(self) -> str:
        s = self.setting()
        return f"{self.model} ({s})" if s else self.model


@dataclass(frozen=True)
class Measurements:
    path: str
    units: Mapping[str, str]
    """Metric name → the unit its column used (how values are shown back)."""
    rows: tuple[DeviceRow, ...]


def _parse_column(name: str, path: str) -> tuple[str, str] | None:
    """``peak_mem_mb`` → (``peak_mem``, ``mb``); ``None`` for model/setting/ignored columns."""
    key = name.strip().lower()
    if key in ("model", *SETTING_COLUMNS, *IGNORED_COLUMNS):
        return None
    if key in METRICS:
        units = ", ".join(f"{key}_{u}" for u in UNITS[METRICS[key].kind])
        raise ConfigError(f"{path}: column {name!r} needs its unit in the name: {units}")
    for metric in sorted(METRICS, key=len, reverse=True):
        if key.startswith(metric + "_"):
            unit = key[len(metric) + 1 :]
            allowed = UNITS[METRICS[metric].kind]
            if unit not in allowed:
                raise ConfigError(
                    f"{path}: column {name!r}: unknown unit {unit!r} for {metric} "
                    f"(use one of {', '.join(allowed)})"
                )
            return metric, unit
    raise ConfigError(
        f"{path}: unknown column {name!r} (expected model, cpus, memory, notes, or "
        f"METRIC_UNIT with METRIC one of {', '.join(METRICS)}, e.g. runtime_ms, peak_mem_mb)"
    )


def read_measurements(path: Path) -> Measurements:
    """Read and validate a device CSV (module docstring); any problem is one
    :class:`ConfigError` naming the file, and the line where there is one."""
    p = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read measurements {p}: {exc}") from exc
    numbered = [
        (i + 1, ln)
        for i, ln in enumerate(text.splitlines())
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not numbered:
        raise ConfigError(f"{p}: empty (expected a header row such as model,runtime_ms)")
    records = list(csv.reader(ln for _, ln in numbered))
    header = [h.strip() for h in records[0]]
    lowered = [h.lower() for h in header]
    dup = next((h for h in lowered if lowered.count(h) > 1), None)
    if dup is not None:
        raise ConfigError(f"{p}: column {dup!r} appears twice")
    if "model" not in lowered:
        raise ConfigError(f"{p}: no 'model' column (header: {','.join(header)})")
    columns: dict[int, tuple[str, str]] = {}
    for i, h in enumerate(header):
        parsed = _parse_column(h, p)
        if parsed is None:
            continue
        if any(m == parsed[0] for m, _ in columns.values()):
            raise ConfigError(f"{p}: metric {parsed[0]} has two columns")
        columns[i] = parsed
    if not columns:
        raise ConfigError(
            f"{p}: no metric column (expected METRIC_UNIT with METRIC one of "
            f"{', '.join(METRICS)}, e.g. runtime_ms, peak_mem_mb)"
        )
    idx = {name: lowered.index(name) for name in ("model", *SETTING_COLUMNS) if name in lowered}
    rows: list[DeviceRow] = []
    seen: dict[tuple[str, float | None, int | None], int] = {}
    for (line, _), rec in zip(numbered[1:], records[1:], strict=True):
        where = f"{p} line {line}"
        if len(rec) != len(header):
            raise ConfigError(f"{where}: {len(rec)} fields, the header has {len(header)}")
        model = rec[idx["model"]].strip()
        if not model:
            raise ConfigError(f"{where}: empty model name")
        cpus = _number(rec[idx["cpus"]], where, "cpus") if "cpus" in idx else None
        memory = None
        if "memory" in idx and rec[idx["memory"]].strip():
            try:
                memory = parse_size(rec[idx["memory"]])
            except ConfigError as exc:
                raise ConfigError(f"{where}, column memory: {exc}") from None
        values = {}
        for i, (metric, unit) in columns.items():
            v = _number(rec[i], where, header[i])
            if v is not None:
                values[metric] = v * UNITS[METRICS[metric].kind][unit]
        key = (model, cpus, memory)
        if key in seen:
            row = DeviceRow(line, model, cpus, memory, values)
            raise ConfigError(
                f"{where}: duplicate row for {row.describe()} (first on line {seen[key]})"
            )
        seen[key] = line
        rows.append(DeviceRow(line, model, cpus, memory, values))
    if not rows:
        raise ConfigError(f"{p}: a header but no rows")
    return Measurements(p, {m: u for m, u in columns.values()}, tuple(rows))


def _number(text: str, where: str, column: str) -> float | None:
    t = text.strip()
    if not t:
        return None
    try:
        v = float(t)
    except ValueError:
        raise ConfigError(f"{where}, column {column}: {t!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise ConfigError(f"{where}, column {column}: {t!r} must be a finite number ≥ 0")
    return v


# -- matching and calibrating --------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """The profiled runs of one model under one setting, reduced to medians."""

    label: str
    setting: str
    runs: int
    ok: int
    values: Mapping[str, float]
    """Metric name → median over the successful runs (base unit)."""
    cpus: float | None = None
    memory: int | None = None


def cells_of(runs: Sequence[RunResult]) -> list[Cell]:
    """Group runs into cells (label, ``Limits.describe()``) with per-metric medians over the
    successful runs (one disturbed run cannot move a calibration point)."""
    out = []
    for setting, by_label in cells_by_setting(runs).items():
        for label, group in by_label.items():
            ok = successful(group)
            values = {}
            for name, metric in METRICS.items():
                vs = [float(v) for r in ok if (v := metric.get(r)) is not None]
                if vs:
                    values[name] = statistics.median(vs)
            lim = group[0].limits
            out.append(Cell(label, setting, len(group), len(ok), values, lim.cpus, lim.memory))
    return out


def _stem(label: str) -> str:
    return Path(label).stem if "." in label else label


def _match(row: DeviceRow, cells: Sequence[Cell], path: str) -> tuple[Cell | None, str]:
    """The cell a device row belongs to, or ``None`` and why not."""
    named = [c for c in cells if c.label == row.model]
    if not named:
        named = [c for c in cells if _stem(c.label) == row.model]
        labels = sorted({c.label for c in named})
        if len(labels) > 1:
            raise ConfigError(
                f"{path} line {row.line}: model {row.model!r} matches runs labelled "
                f"{' and '.join(labels)}: use the full label"
            )
    if not named:
        return None, "no profiled run of this model"
    hits = [
        c
        for c in named
        if (row.cpus is None or c.cpus == row.cpus)
        and (row.memory is None or c.memory == row.memory)
    ]
    if not hits:
        have = "; ".join(sorted({c.setting for c in named}))
        return None, f"no profiled run under this setting (profiled: {have})"
    if len(hits) > 1:
        settings = "; ".join(c.setting for c in hits)
        raise ConfigError(
            f"{path} line {row.line}: {row.describe()} matches runs under {len(hits)} "
            f"settings ({settings}): add a cpus or memory column to tell them apart"
        )
    cell = hits[0]
    if cell.ok == 0:
        return None, f"every profiled run of it failed ({cell.setting})"
    return cell, ""


@dataclass(frozen=True)
class MetricFit:
    metric: str
    setting: str
    """The profiler's limit setting (``Limits.describe()``) the fit holds for."""
    unit: str
    """The device CSV's unit of the metric: how values are shown."""
    fit: LinearFit
    warnings: tuple[str, ...]

    @property
    def kind(self) -> str:
        return METRICS[self.metric].kind


@dataclass(frozen=True)
class Calibration:
    device: str
    source: str
    """The measurements file the fits came from."""
    fits: tuple[MetricFit, ...]
    min_r2: float = DEFAULT_MIN_R2
    level: float = DEFAULT_LEVEL
    created_at: str = ""
    unmatched: tuple[str, ...] = ()
    """Device rows without profiled runs, each with the reason."""
    unmeasured: tuple[str, ...] = ()
    """Profiled cells without a device row."""
    skipped: tuple[str, ...] = ()
    """(metric, setting) pairs that could not be fitted, with the reason."""
    matched: int = 0

    def fits_for(self, setting: str) -> list[MetricFit]:
        return [f for f in self.fits if f.setting == setting]

    def settings(self) -> list[str]:
        return list(dict.fromkeys(f.setting for f in self.fits))

    # -- the YAML file ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The calibration file: summary figures for readers, and the points the fits are
        recomputed from on load (values in base units: seconds, bytes, percent)."""
        return {
            "schema": CALIBRATION_SCHEMA,
            "device": self.device,
            "created_at": self.created_at,
            "source": self.source,
            "min_r2": self.min_r2,
            "level": self.level,
            "matched_rows": self.matched,
            "unmatched": list(self.unmatched),
            "unmeasured": list(self.unmeasured),
            "skipped": list(self.skipped),
            "fits": [_fit_dict(f) for f in self.fits],
        }

    def save(self, path: Path) -> None:
        import yaml

        text = yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            tmp.write_text(text)
            tmp.replace(path)
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc.strerror}") from exc


def _fit_dict(m: MetricFit) -> dict[str, Any]:
    f = m.fit
    return {
        "metric": m.metric,
        "setting": m.setting,
        "unit": m.unit,
        "base_unit": base_unit(m.kind),
        "n": f.n,
        "a": f.a,
        "b": f.b,
        "se_a": f.se_a,
        "se_b": f.se_b,
        "residual_se": f.s,
        "r2": f.r2,
        "loo_rmse": f.loo_rmse,
        "kendall_tau": f.tau,
        "spearman_rho": f.rho,
        "profiler_range": list(f.x_range),
        "warnings": list(m.warnings),
        "points": [
            {
                "model": f.labels[i],
                "profiler": f.x[i],
                "device": f.y[i],
                "residual": f.residuals[i],
                "leverage": f.leverage[i],
                "cooks_d": None if f.cooks_d is None else f.cooks_d[i],
                "loo_error": f.loo_errors[i],
            }
            for i in range(f.n)
        ],
    }


def load_calibration(path: Path) -> Calibration:
    """Read a calibration file; each fit is recomputed from its points."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read calibration {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != CALIBRATION_SCHEMA:
        raise ConfigError(f"{path} is not an edgeprof calibration ({CALIBRATION_SCHEMA})")
    try:
        min_r2 = float(data.get("min_r2", DEFAULT_MIN_R2))
        fits = []
        for fd in data["fits"]:
            metric = fd["metric"]
            if metric not in METRICS or fd["unit"] not in UNITS[METRICS[metric].kind]:
                raise ConfigError(f"{path}: unknown metric or unit {metric!r} {fd['unit']!r}")
            pts = fd["points"]
            try:
                f = fit(
                    [float(p["profiler"]) for p in pts],
                    [float(p["device"]) for p in pts],
                    [str(p["model"]) for p in pts],
                )
            except ConfigError as exc:
                raise ConfigError(f"{path}: {metric} [{fd['setting']}]: {exc}") from None
            warns = fit_warnings(f, fd["unit"], METRICS[metric].kind, min_r2)
            fits.append(MetricFit(metric, str(fd["setting"]), fd["unit"], f, tuple(warns)))
        return Calibration(
            device=str(data["device"]),
            source=str(data.get("source", "")),
            fits=tuple(fits),
            min_r2=min_r2,
            level=float(data.get("level", DEFAULT_LEVEL)),
            created_at=str(data.get("created_at", "")),
            unmatched=tuple(data.get("unmatched") or ()),
            unmeasured=tuple(data.get("unmeasured") or ()),
            skipped=tuple(data.get("skipped") or ()),
            matched=int(data.get("matched_rows", 0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: malformed calibration: bad or missing {exc}") from exc


def calibrate(
    runs: Sequence[RunResult],
    measurements: Measurements,
    device: str,
    *,
    min_r2: float = DEFAULT_MIN_R2,
    level: float = DEFAULT_LEVEL,
) -> Calibration:
    """Match device rows to profiled cells and fit every metric under every setting."""
    if not device.strip():
        raise ConfigError("--device: empty device name")
    if not 0 < level < 1:
        raise ConfigError(f"level {level}: must be between 0 and 1")
    cells = cells_of(runs)
    if not cells:
        raise ConfigError("no profiled runs given")
    unmatched = []
    pairs: list[tuple[DeviceRow, Cell]] = []
    used: dict[tuple[str, str], DeviceRow] = {}
    for row in measurements.rows:
        cell, why = _match(row, cells, measurements.path)
        if cell is None:
            unmatched.append(f"line {row.line}: {row.describe()}: {why}")
            continue
        key = (cell.label, cell.setting)
        if key in used:
            raise ConfigError(
                f"{measurements.path} line {row.line}: {row.describe()} and line "
                f"{used[key].line} ({used[key].describe()}) both match {cell.label} "
                f"[{cell.setting}]"
            )
        used[key] = row
        pairs.append((row, cell))
    unmeasured = [f"{c.label} [{c.setting}]" for c in cells if (c.label, c.setting) not in used]
    fits = []
    skipped = []
    for setting in dict.fromkeys(c.setting for _, c in pairs):
        for metric, unit in measurements.units.items():
            pts = [
                (c.label, c.values[metric], r.values[metric])
                for r, c in pairs
                if c.setting == setting and metric in r.values and metric in c.values
            ]
            try:
                f = fit([p[1] for p in pts], [p[2] for p in pts], [p[0] for p in pts])
            except ConfigError as exc:
                skipped.append(f"{metric} [{setting}]: {exc}")
                continue
            warns = fit_warnings(f, unit, METRICS[metric].kind, min_r2)
            fits.append(MetricFit(metric, setting, unit, f, tuple(warns)))
    return Calibration(
        device=device,
        source=measurements.path,
        fits=tuple(fits),
        min_r2=min_r2,
        level=level,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        unmatched=tuple(unmatched),
        unmeasured=tuple(unmeasured),
        skipped=tuple(skipped),
        matched=len(pairs),
    )


# -- applying ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    label: str
    setting: str
    metric: str
    unit: str
    profiler: float
    predicted: float
    half_width: float | None
    """Half-width of the prediction interval (``None``: a fit with fewer than 3 points)."""
    extrapolated: bool
    x_range: tuple[float, float]
    fit_warnings: int = 0
    runs: int = 1

    @property
    def kind(self) -> str:
        return METRICS[self.metric].kind


@dataclass(frozen=True)
class Predictions:
    calibration: Calibration
    items: list[Prediction] = field(default_factory=list)
    uncalibrated: list[str] = field(default_factory=list)
    """Cells whose setting the calibration does not cover."""


def predict(calibration: Calibration, runs: Iterable[RunResult]) -> Predictions:
    """Predicted device values for every cell of ``runs`` whose setting was calibrated (the
    median of a cell's successful runs, as in the fit)."""
    out = Predictions(calibration)
    for cell in cells_of(list(runs)):
        if cell.ok == 0:
            out.uncalibrated.append(f"{cell.label} [{cell.setting}]: every run failed")
            continue
        fits = calibration.fits_for(cell.setting)
        if not fits:
            known = "; ".join(calibration.settings()) or "none"
            out.uncalibrated.append(
                f"{cell.label} [{cell.setting}]: no calibration for this setting "
                f"(calibrated: {known})"
            )
            continue
        for mf in fits:
            x = cell.values.get(mf.metric)
            if x is None:
                continue
            y, hw = mf.fit.predict(x, calibration.level)
            lo, hi = mf.fit.x_range
            out.items.append(
                Prediction(
                    cell.label,
                    cell.setting,
                    mf.metric,
                    mf.unit,
                    x,
                    y,
                    hw,
                    not lo <= x <= hi,
                    (lo, hi),
                    len(mf.warnings),
                    cell.ok,
                )
            )
    return out
