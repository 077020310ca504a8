"""Rendering of calibrations (the fit tables) and of predictions, and the optional plot."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

from ..analysis.calibration import (
    FORM_NAMES,
    FORMS,
    SPEED_METRICS,
    UNITS,
    WITHIN_PCT,
    Calibration,
    ImpliedSpeed,
    MetricFit,
    Prediction,
    Predictions,
    discordant_pairs,
    format_value,
    unit_label,
)
from ..errors import ConfigError
from ..names import as_word
from .plots import save_figure
from .table import plain_lines


def _table(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    return plain_lines(rows[0], rows[1:], indent=indent)


def _num(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _signed(v: float | None) -> str:
    """A studentized residual: its sign says whether the device value lies above the line;
    ``above``/``below`` where the other points lie on it exactly (no finite figure)."""
    if v is not None and math.isinf(v):
        return "above" if v > 0 else "below"
    return "n/a" if v is None else f"{v:+.2f}"


def _over(fmt: Callable[[float | None], str], v: float | None) -> str:
    """A prediction error in the metric's unit, signed as the held-out ``+2.3 %`` beside it
    (``+12.35 ms``: the prediction is over), so the two columns read alike."""
    return fmt(v) if v is None or not v > 0 or math.isinf(v) else "+" + fmt(v)


def _pm(v: float, se: float | None) -> str:
    return f"{v:.4g}" if se is None else f"{v:.4g} ± {se:.2g}"


def equation(mf: MetricFit) -> str:
    """The plain line."""
    f = mf.fit
    sign = "−" if f.b < 0 else "+"
    return f"device = {f.a:.4g} × profiler {sign} {format_value(abs(f.b), mf.unit, mf.kind)}"


def form_equation(mf: MetricFit) -> str:
    """The chosen form; a power law in the CSV's unit (``device = c × profiler^k``, both in
    ms: c carries the unit's scale to the power 1 − k)."""
    f = mf.choice.fit
    if f.form == "line":
        return equation(mf)
    if f.form == "origin":
        return f"device = {f.a:.4g} × profiler"
    scale = UNITS[mf.kind][mf.unit]
    c = math.exp(f.b) * scale ** (f.a - 1)
    return f"device = {c:.4g} × profiler^{f.a:.4g} ({unit_label(mf.unit)})"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f} %"


def heldout_table(fits: Sequence[MetricFit]) -> list[str]:
    """Per fit: the form used and its held-out figures, then every form's mean error."""
    head = ["METRIC", "FIT", "N", "FORM USED", "MEAN |ERROR|", "MEDIAN |ERROR|"]
    head += [f"WITHIN ±{WITHIN_PCT:g} %", "WORST", *(f.upper() for f in FORMS)]
    rows = [head]
    for mf in fits:
        ho = mf.choice.heldout
        worst = None if ho is None else ho.worst
        means = {c.form: None if c.heldout is None else c.heldout.mean_abs_pct
                 for c in mf.choice.candidates}  # fmt: skip
        rows.append(
            [
                f"{mf.metric} ({unit_label(mf.unit)})",
                mf.scope,
                str(mf.fit.n),
                FORM_NAMES[mf.choice.form],
                _pct(None if ho is None else ho.mean_abs_pct),
                _pct(None if ho is None else ho.median_abs_pct),
                "n/a" if ho is None else f"{ho.within} of {ho.counted}",
                "n/a" if worst is None else f"{worst[0]} ({worst[1]:+.1f} %)",
                *(_pct(means.get(f)) for f in FORMS),
            ]
        )
    return _table(rows)


def render_calibration(cal: Calibration) -> str:
    """The fit table per setting, then each fit's points and warnings."""
    # Quoted as the notes below quote it: "device mÿ board from" had read as two words.
    lines = [
        f"Calibration for device {as_word(cal.device)} from {cal.source}: "
        f"{cal.matched} device row(s) matched, {len(cal.unmatched)} unmatched"
    ]
    lines += [f"  unmatched {u}" for u in cal.unmatched]
    lines += [f"  profiled, not measured on the device: {u}" for u in cal.unmeasured]
    lines += [f"  not fitted: {s}" for s in cal.skipped]
    lines += [f"  left out: {s}" for s in cal.left_out]
    if cal.contended is not None:
        lines.append(f"  warning: {cal.contended}")
    for setting in cal.settings():
        fits = cal.fits_for(setting)
        lines.append("")
        lines.append(f"Setting: {setting}")
        rows = [
            [
                "METRIC",
                "FIT",
                "N",
                "SLOPE a",
                "INTERCEPT b",
                "R²",
                "LOO RMSE",
                "KENDALL τ",
                "SPEARMAN ρ",
                "WARNINGS",
            ]
        ]
        for mf in fits:
            f = mf.fit
            b = format_value(f.b, mf.unit, mf.kind)
            if f.se_b is not None:
                b += " ± " + format_value(f.se_b, mf.unit, mf.kind)
            rows.append(
                [
                    f"{mf.metric} ({unit_label(mf.unit)})",
                    mf.scope,
                    str(f.n),
                    _pm(f.a, f.se_a),
                    b,
                    _num(f.r2),
                    format_value(f.loo_rmse, mf.unit, mf.kind),
                    _num(f.tau, 2),
                    _num(f.rho, 2),
                    str(len(mf.warnings)),
                ]
            )
        lines += _table(rows)
        lines.append("")
        lines.append(
            "Held-out accuracy: each model predicted by the fit made without it, its error "
            "(prediction − device) relative to the device's value (ORIGIN, LINE, POWER: each "
            "form's mean |error|)"
        )
        lines += heldout_table(fits)
        for mf in fits:
            lines.append("")
            lines += _fit_detail(mf)
    if cal.speed is not None:
        sp = cal.speed
        lines.append("")
        used = (
            f"cpus {sp.setting_cpus:g}"
            if sp.used_cpus is None
            else f"{sp.used_cpus:.3g} CPU{'' if sp.used_cpus == 1 else 's'} used"
        )
        shape = FORM_NAMES[sp.form] if sp.form != "power" else _power_slope(cal, sp)
        lines.append(
            f"Implied speed: the device ≈ {sp.host_cpus:.3g} CPUs of the profiling host "
            f"({sp.host_model or 'CPU model unknown'}) for these workloads: {sp.metric} "
            f"[{sp.setting}], {used} / slope {sp.slope:.3g} ({shape}; a device entry with "
            "'speed: calibration' runs at that share)"
        )
        if cal.contended is not None:  # the figure the busy host moves most, said beside it
            lines.append("  warning: from runs other tasks held off their CPUs (above): too high")
        odd = cal.speed_warning()
        if odd is not None:
            lines.append(f"  warning: {odd}")
    elif any(mf.metric in SPEED_METRICS for mf in cal.fits):
        # Said here, as the catalog and run would say it later: a falling time fit had been
        # written with no word, and refused only by `run` of a 'speed: calibration' entry.
        lines += ["", f"Implied speed: none: {cal.why_no_speed()}"]
    lines.append("")
    lines.append(
        "a ± standard error; LOO: each model predicted by the line fitted without it; "
        "ERROR, LOO ERROR and WORST are prediction − device (+: the prediction is over the "
        "device's value), RESIDUAL device − line (+: the device is above the line); "
        "t: a model's externally studentized residual, device − the line of the other "
        "points weighted as the intervals are (1/device²: relative errors), in standard "
        "errors, so its sign may differ from RESIDUAL's (beyond the Bonferroni limit a "
        "warning names it an outlier); "
        "τ, ρ: agreement of the two rankings (1 = same order); predictions use the form "
        "that predicts held-out models best (the simplest unless clearly worse)"
    )
    return "\n".join(lines) + "\n"


def _power_slope(cal: Calibration, sp: ImpliedSpeed) -> str:
    """Which slope a power law's implied speed quotes: its own at a profiler value, or the
    line's, in a file made before the law's own was quoted."""
    head = "power law: the device is not one factor slower on these workloads, this is "
    mf = next(
        (m for m in cal.fits if (m.metric, m.setting, m.family) == (sp.metric, sp.setting, None)),
        None,
    )
    if sp.at is None or mf is None:
        return head + "the line's slope, as this file was made"
    at = format_value(sp.at, mf.unit, mf.kind)
    return head + f"its slope at the margin at {at}, the profiled values' geometric mean"


def _fit_detail(mf: MetricFit) -> list[str]:
    f = mf.fit
    r2 = "n/a" if f.r2 is None else f"{f.r2:.3f}"
    scope = "" if mf.family is None else f" [family {mf.family}]"
    lines = [f"{mf.metric}{scope}: {equation(mf)}   (R² = {r2}, n = {f.n})"]
    chosen = mf.choice.fit
    lines.append(f"  predictions: {form_equation(mf)}   ({mf.choice.reason})")

    def v(x: float | None) -> str:
        return format_value(x, mf.unit, mf.kind)

    ho = mf.choice.heldout
    errors = mf.choice.errors_pct
    head = ["MODEL", "PROFILER", "DEVICE", "FITTED", "RESIDUAL", "LOO ERROR", "LEVERAGE"]
    rows = [[*head, "COOK'S D", "t", f"HELD-OUT ({chosen.form})", "ERROR"]]
    for i in range(f.n):
        rows.append(
            [
                f.labels[i],
                v(f.x[i]),
                v(f.y[i]),
                v(f.fitted[i]),
                v(f.residuals[i]),
                _over(v, f.loo_prediction_errors[i]),
                f"{f.leverage[i]:.2f}",
                "n/a" if f.cooks_d is None else f"{f.cooks_d[i]:.2f}",
                _signed(f.studentized[i]),
                v(chosen.heldout[i]) if ho is not None else "n/a",
                "n/a" if errors[i] is None else f"{errors[i]:+.1f} %",
            ]
        )
    lines += _table(rows, "  ")
    for lo, hi in discordant_pairs(f.labels, f.x, f.y):
        lines.append(f"  ranking differs: {lo} < {hi} on the profiler, not on the device")
    lines += [f"  warning: {w}" for w in mf.warnings]
    return lines


def predicted_text(p: Prediction) -> str:
    """``32.74 ms ± 1.88 ms (±5.7 %)``; a power law's asymmetric interval as
    ``32.7 ms (28.1 ms–38.0 ms, −14.0 %/+16.2 %)``; one clipped at 0 as its upper bound,
    ``901.3 ms (≤ 2322 ms, +157.6 %)`` (it had read ``± 1421 ms``, below 0)."""

    def v(x: float) -> str:
        return format_value(x, p.unit, p.kind)

    pred = v(p.predicted)
    pct = p.pct
    if p.low is None or p.high is None:
        return pred
    if p.clipped is not None:  # 0 to high: said as an upper bound, as ≤ elsewhere
        return f"{pred} (≤ {v(p.high)}" + ("" if pct is None else f", {pct[1]:+.1f} %") + ")"
    if p.form != "power":
        hw = p.half_width
        assert hw is not None
        return f"{pred} ± {v(hw)}" + ("" if pct is None else f" (±{pct[1]:.1f} %)")
    span = f"{v(p.low)}–{v(p.high)}"
    return f"{pred} ({span}" + ("" if pct is None else f", {pct[0]:+.1f} %/{pct[1]:+.1f} %") + ")"


def prediction_notes(p: Prediction) -> list[str]:
    """The NOTE column of one prediction, as sentences."""
    notes = []
    if p.measured:
        v = p.device_value
        measured = "" if v is None else f" {format_value(v, p.unit, p.kind)}"
        notes.append(f"measured on the device:{measured} (one of the fit's points)")
    if p.held is not None:
        # As run warns of it: the profiler value, and so the prediction, is inflated.
        notes.append(f"held off its CPUs by other tasks ({p.held}): predicted from a slowed run")
    if p.extrapolated:
        lo, hi = p.x_range
        notes.append(
            f"extrapolation: profiler range {format_value(lo, p.unit, p.kind)}–"
            f"{format_value(hi, p.unit, p.kind)}"
        )
    if p.widened is not None:
        model, pct = p.widened
        notes.append(f"interval widened to the held-out worst error (±{pct:.1f} %, {model})")
    if p.family_note:
        notes.append(p.family_note)
    if p.clipped is not None:
        lowest = format_value(p.clipped, p.unit, p.kind)
        notes.append(f"interval's lower end {lowest}, below 0: clipped to 0")
    if p.low is None:
        notes.append("no interval: too few points")
    if p.predicted < 0:
        notes.append("negative: not a usable value")
    if p.fit_warnings:
        notes.append(f"fit has {p.fit_warnings} warning(s)")
    return notes


def used_fit_warnings(preds: Predictions) -> list[str]:
    """The warnings of the fits that made a prediction, each as ``(METRIC [SETTING] SCOPE):
    WARNING``."""
    used = {(p.metric, p.setting, p.used) for p in preds.items}
    out = []
    for mf in preds.calibration.fits:
        if (mf.metric, mf.setting, mf.scope) in used:
            scope = "" if mf.family is None else f" {mf.scope}"
            out += [f"({mf.metric} [{mf.setting}]{scope}): {w}" for w in mf.warnings]
    return out


def render_predictions(preds: Predictions, source: str | None = None) -> str:
    """Predicted device values beside the profiler's, with prediction intervals in the
    metric's units and in percent, the fit each came from, and which models to measure on
    the device next."""
    cal = preds.calibration
    where = f" (calibration {source})" if source else ""
    lines = [
        f"Predicted on {cal.device}{where}: the {cal.level * 100:g}% prediction interval "
        "in units and in percent"
    ]
    rows = [["MODEL", "SETTING", "METRIC", "PROFILER", "PREDICTED ON DEVICE", "FIT", "NOTE"]]
    for p in preds.items:
        rows.append(
            [
                p.label,
                p.setting,
                p.metric,
                format_value(p.profiler, p.unit, p.kind),
                predicted_text(p),
                f"{FORM_NAMES[p.form]}, {p.used}",
                "; ".join(prediction_notes(p)),
            ]
        )
    if preds.items:
        lines += _table(rows)
    lines += [f"  {u}" for u in preds.uncalibrated]
    if preds.other_host is not None:
        lines.append(f"  warning: {preds.other_host}")
    if preds.other_device is not None:
        lines.append(f"  warning: {preds.other_device}")
    lines += [f"  fit warning {w}" for w in used_fit_warnings(preds)]
    nxt = preds.measure_next()
    if len(nxt) > 1 or (nxt and len({p.label for p in preds.items if not p.measured}) == 1):
        lines.append("")
        lines.append(
            f"Measure next on {cal.device}: the least certain predictions (widest interval) "
            "first, where a device measurement narrows the calibration most"
        )
        for label, p in nxt:
            spread = p.spread_pct
            assert spread is not None  # measure_next keeps predictions with an interval
            why = "outside the measured range" if p.extrapolated else "inside the measured range"
            lines.append(f"  {label}: {p.metric} ±{spread:.0f} %, {why}")
    elif preds.items and all(p.low is None for p in preds.items):
        # Two points: no interval anywhere, and no ranking of what to measure; the section
        # had been left out, as if nothing were to be measured.
        lines += [
            "",
            f"Measure next on {cal.device}: any model not measured yet (no prediction has an "
            "interval: a fit of two points has no residual; a third model gives one)",
        ]
    return "\n".join(lines) + "\n"


def plot_calibration(cal: Calibration, path: Path) -> None:
    """Device vs profiler per fit: the form the predictions use, and the least-squares line
    with its equation and R² where that form is another (needs matplotlib: ``pip install
    'edgeprof[plot]'``).  The format follows the file's suffix."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'edgeprof[plot]'") from None
    from ..analysis.calibration import UNITS

    fits = list(cal.fits)
    if not fits:
        raise ConfigError("--plot: no fit to plot")
    cols = min(3, len(fits))
    rows = (len(fits) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 4 * rows), squeeze=False)
    for ax, mf in zip([a for r in axes for a in r], fits, strict=False):
        f = mf.fit
        scale = UNITS[mf.kind][mf.unit]
        xs = [x / scale for x in f.x]
        ys = [y / scale for y in f.y]
        ax.scatter(xs, ys, color="tab:blue", zorder=3)
        for label, x, y in zip(f.labels, xs, ys, strict=True):
            ax.annotate(label, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        lo, hi = min(f.x), max(f.x)
        # The form the predictions use, drawn as a curve: the straight line alone had been
        # drawn where a power law made every prediction (and ran below 0 under the points).
        chosen = mf.choice.fit
        grid = [lo + (hi - lo) * i / 100 for i in range(101)]
        curve = [(x / scale, v / scale) for x in grid if (v := chosen.value(x)) is not None]
        ax.plot(
            [x for x, _ in curve], [y for _, y in curve], color="tab:red",
            label=f"{chosen.name} (predicts)",
        )  # fmt: skip
        if mf.choice.form != "line":
            ax.plot(
                [lo / scale, hi / scale], [(f.a * lo + f.b) / scale, (f.a * hi + f.b) / scale],
                color="tab:gray", linestyle="--", linewidth=0.8, label="least-squares line",
            )  # fmt: skip
        ax.legend(fontsize=7, loc="lower right")
        r2 = "n/a" if f.r2 is None else f"{f.r2:.4f}"
        ax.set_title(f"{mf.metric} [{mf.setting}]", fontsize=8)
        ax.text(
            0.03,
            0.95,
            f"y = {f.a:.4g}x {'−' if f.b < 0 else '+'} {abs(f.b) / scale:.4g}\nR² = {r2}",
            transform=ax.transAxes,
            va="top",
            fontsize=8,
        )
        ax.set_xlabel(f"profiler ({unit_label(mf.unit)})")
        ax.set_ylabel(f"{cal.device} ({unit_label(mf.unit)})")
    for ax in [a for r in axes for a in r][len(fits) :]:
        ax.set_visible(False)
    fig.tight_layout()
    try:
        save_figure(fig, path, dpi=plt.rcParams["figure.dpi"])
    finally:
        plt.close(fig)
