"""Applying a calibration: predicted device values for new runs, each with its interval in
the metric's units and in percent, the fit that made it (a family's or the pooled one), and
what makes it less trustworthy (extrapolation, an unseen family); then which of the
candidates to measure on the device next."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from ...model import RunResult
from ..cells import cells_by_setting
from ..held import SLOWED_BY_OTHERS, held_runs
from .families import MIN_FAMILY_POINTS
from .file import Calibration, MetricFit
from .matching import cells_of
from .units import METRICS


@dataclass(frozen=True)
class Prediction:
    label: str
    setting: str
    metric: str
    unit: str
    profiler: float
    predicted: float
    low: float | None
    high: float | None
    """The prediction interval at the calibration's level (``None``: no residual degrees of
    freedom); asymmetric for a power law."""
    extrapolated: bool
    x_range: tuple[float, float]
    form: str = "line"
    family: str | None = None
    """The run's family (``None``: it has none)."""
    used: str = "pooled"
    """Which fit made the prediction: ``pooled`` or ``family NAME``."""
    family_note: str = ""
    """Why the pooled fit predicted a model that has a family (empty: nothing to say)."""
    fit_warnings: int = 0
    runs: int = 1
    measured: bool = False
    """The model is one of the fit's own points (not a prediction of an unmeasured model)."""
    device_value: float | None = None
    """The device's own measurement of a :attr:`measured` model (the fit's point): a
    tester's batch 8, measured at 395 ms, was shown only as predicted 901 ms ± 26 ms."""
    held: str | None = None
    """How far other tasks held this cell's runs off their CPUs, where as far as ``run``
    warns of (:func:`~edgeprof.analysis.held.held_runs`): its profiler value is inflated
    by it, and so is the prediction made from it."""
    widened: tuple[str, float] | None = None
    """The held-out model and its |error| in percent that an extrapolation's interval was
    widened to (:func:`heldout_floor`; ``None``: not widened)."""
    clipped: float | None = None
    """The interval's own lower end where it was below 0 and :attr:`low` was clipped to 0
    (:func:`clip_at_zero`; ``None``: not clipped)."""

    @property
    def kind(self) -> str:
        return METRICS[self.metric].kind

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (the ± of a symmetric interval)."""
        return None if self.low is None or self.high is None else (self.high - self.low) / 2

    @property
    def pct(self) -> tuple[float, float] | None:
        """The interval's ends relative to the prediction, in percent (−12.0, +13.6)."""
        if self.low is None or self.high is None or self.predicted <= 0:
            return None
        return (
            (self.low - self.predicted) / self.predicted * 100,
            (self.high - self.predicted) / self.predicted * 100,
        )

    @property
    def spread_pct(self) -> float | None:
        """The interval's larger side in percent: how uncertain the prediction is."""
        p = self.pct
        return None if p is None else max(-p[0], p[1])


@dataclass(frozen=True)
class Predictions:
    calibration: Calibration
    items: list[Prediction] = field(default_factory=list)
    uncalibrated: list[str] = field(default_factory=list)
    """Cells whose setting the calibration does not cover."""
    other_host: str | None = None
    """The runs were profiled on another CPU model than the calibration's: why its
    predictions do not transfer (``None``: the same, or not known)."""
    other_device: str | None = None
    """The runs emulated another catalog device than the one the calibration was measured
    on: both named (``None``: the same, a device whose entry names this calibration, or
    runs made without ``--device``)."""

    def measure_next(self, count: int = 3) -> list[tuple[str, Prediction]]:
        """The unmeasured models whose device measurement would teach the calibration most:
        those with the widest relative interval (a model far from the measured range, or
        one the fit is least sure of; an extrapolation first among equals), each with its
        least certain prediction."""
        worst: dict[str, Prediction] = {}
        for p in self.items:
            s = p.spread_pct
            if p.measured or s is None:
                continue
            held = worst.get(p.label)
            if held is None or s > (held.spread_pct or 0):
                worst[p.label] = p
        # Ties (a line through the origin is equally sure in percent everywhere): the
        # extrapolation first, the model the calibration knows least about.
        ranked = sorted(
            worst.items(), key=lambda kv: (-(kv[1].spread_pct or 0), not kv[1].extrapolated)
        )
        return ranked[:count]


def _pick(cal: Calibration, pooled: MetricFit, family: str | None) -> tuple[MetricFit, str]:
    """The family's own fit when it has one, else the pooled fit and why."""
    if family is None:
        return pooled, "no family: pooled fit" if cal.families.all() else ""
    own = cal.family_fit(pooled.metric, pooled.setting, family)
    if own is not None:
        return own, ""
    n = sum(cal.families.of(label) == family for label in pooled.fit.labels)
    if n == 0:
        return pooled, f"family {family} never measured on the device: pooled fit"
    if n >= MIN_FAMILY_POINTS:  # every measured model is of this family: the pooled fit is its
        return pooled, ""
    return pooled, f"family {family}: {n} measured (< {MIN_FAMILY_POINTS}): pooled fit"


def _other_device(
    cal: Calibration, runs: Sequence[RunResult], linked: Collection[str]
) -> str | None:
    """``run --device jetson-nano --calibration rpi4.yml`` had printed "Predicted on
    rpi4-4gb" without a word on the jetson-nano the runs emulated."""
    other = sorted({r.device for r in runs if r.device} - {cal.device, *linked})
    if not other:
        return None
    names = " and ".join(other)
    return (
        f"these runs emulated {names}, the calibration was measured on {cal.device}: its "
        f"predictions are {cal.device}'s, not {names}'s (run with --device {cal.device}, or "
        f"calibrate with measurements made on {other[0]})"
    )


def heldout_floor(
    mf: MetricFit, y: float, low: float | None, high: float | None
) -> tuple[float | None, float | None, tuple[str, float] | None]:
    """An extrapolation's interval, widened to at least ±the worst held-out error of the
    fit's form, and that model and error (``None``: not widened).

    The interval is the fit's own account of its uncertainty and assumes the form holds out
    there; the held-out check measured how far off the same form was on models it had not
    seen.  An extrapolation is never said to be surer than that: on a tester's 8 models
    (3 % scatter, held-out errors up to 8.4 %) the relative interval gave ±6.2 % and ±6.3 %
    at 1.5 and 2 times the largest profiler value, and these become ±8.4 %."""
    ho = mf.choice.heldout
    worst = None if ho is None else ho.worst
    if worst is None or low is None or high is None or y <= 0:
        return low, high, None
    w = abs(worst[1]) / 100
    if low <= y * (1 - w) and high >= y * (1 + w):
        return low, high, None
    return min(low, y * (1 - w)), max(high, y * (1 + w)), (worst[0], abs(worst[1]))


def clip_at_zero(
    low: float | None, high: float | None
) -> tuple[float | None, float | None, float | None]:
    """The interval with its ends at 0 or above, and its own lower end where that was below 0
    (``None``: not clipped).  Every calibrated metric is a time, a size or a CPU share, never
    negative; a relative σ of 1.58 had given a tester's 901.3 ms ± 1421 ms, a lower end of
    −520 ms, and a JSON ``low`` of −0.01309 s."""
    if low is None or low >= 0:
        return low, high, None
    return 0.0, None if high is None else max(high, 0.0), low


def predict(
    calibration: Calibration, runs: Iterable[RunResult], linked: Collection[str] = ()
) -> Predictions:
    """Predicted device values for every cell of ``runs`` whose setting was calibrated (the
    median of a cell's successful runs, as in the fit), by the chosen form of the run's
    family fit where there is one, else of the pooled fit.  ``linked``: the catalog devices
    whose entry names this calibration (runs as them are runs as its device, whatever name
    the file records)."""
    runs = list(runs)
    learned = None if calibration.speed is None else calibration.speed.host_model
    models = {r.host.cpu_model for r in runs if r.host is not None and r.host.cpu_model}
    other = sorted(models - {learned}) if learned is not None else []
    out = Predictions(
        calibration,
        other_host=(
            f"the calibration was learned on a {learned}, these runs were profiled on a "
            f"{' and a '.join(other)}: its predictions do not transfer (calibrate on this host)"
            if other
            else None
        ),
        other_device=_other_device(calibration, runs, linked),
    )
    groups = cells_by_setting(runs)
    for cell in cells_of(runs):
        held = held_runs(groups[cell.setting][cell.label])
        if cell.ok == 0:
            out.uncalibrated.append(f"{cell.label} [{cell.setting}]: every run failed")
            continue
        pooled = calibration.pooled_for(cell.setting)
        if not pooled:
            known = "; ".join(calibration.settings()) or "none"
            out.uncalibrated.append(
                f"{cell.label} [{cell.setting}]: no calibration for this setting "
                f"(calibrated: {known}; a fit holds under the limits it was profiled with, "
                "CPUs and memory alike)"
            )
            continue
        family = calibration.families.of(cell.label)
        for base in pooled:
            x = cell.values.get(base.metric)
            if x is None:
                continue
            mf, note = _pick(calibration, base, family)
            form = mf.choice.fit
            if not mf.choice.rising:
                out.uncalibrated.append(
                    f"{cell.label} [{cell.setting}] {mf.metric}: no form of the {mf.scope} fit "
                    "has a slope above 0 (a device is not faster on a workload the host runs "
                    "slower): nothing to predict from"
                )
                continue
            got = form.predict(x, calibration.level)
            if got is None:
                out.uncalibrated.append(
                    f"{cell.label} [{cell.setting}] {mf.metric}: profiler value {x:g} ≤ 0, "
                    f"where the {form.name} has no value"
                )
                continue
            lo, hi = mf.fit.x_range
            outside = not lo <= x <= hi
            low, high, widened = (
                heldout_floor(mf, got[0], got[1], got[2]) if outside else (got[1], got[2], None)
            )
            low, high, clipped = clip_at_zero(low, high)
            out.items.append(
                Prediction(
                    cell.label,
                    cell.setting,
                    mf.metric,
                    mf.unit,
                    x,
                    got[0],
                    low,
                    high,
                    outside,
                    (lo, hi),
                    form=form.form,
                    family=family,
                    used=mf.scope,
                    family_note=note,
                    fit_warnings=len(mf.warnings),
                    runs=cell.ok,
                    measured=cell.label in mf.fit.labels,
                    widened=widened,
                    clipped=clipped,
                    device_value=(
                        mf.fit.y[mf.fit.labels.index(cell.label)]
                        if cell.label in mf.fit.labels
                        else None
                    ),
                    # Only of a figure other tasks slow: a peak memory's prediction had read
                    # "predicted from a slowed run" (a user's).
                    held=(
                        None
                        if held is None or METRICS[mf.metric].key not in SLOWED_BY_OTHERS
                        else f"{held.runs_text()}, {held.figure()}"
                    ),
                )
            )
    return out
