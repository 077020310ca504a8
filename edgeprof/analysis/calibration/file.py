"""A calibration (the fits of one device) and its YAML file: saved with the points it was
fitted on, and refitted from them on load, so the file never disagrees with the arithmetic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError, one_line
from ...storage import read_capped, why_unreadable, write_output
from ..cells import setting_spec, without_chosen_cores
from .choice import WITHIN_PCT, Candidate, Choice, choose, heldout_warning, predicts_poorly
from .families import Families, check_family, parse_rule
from .fields import Fields
from .fit import DEFAULT_LEVEL, DEFAULT_MIN_R2, LinearFit, fit, fit_warnings, r2_poor
from .forms import FORMS
from .speed import SPEED_METRICS, ImpliedSpeed, Slope, speed_from_dict
from .units import METRICS, UNITS, base_unit

CALIBRATION_SCHEMA = "edgeprof-calibration/1"


@dataclass(frozen=True)
class MetricFit:
    metric: str
    setting: str
    """The profiler's limit setting (``Limits.describe()``) the fit holds for."""
    unit: str
    """The device CSV's unit of the metric: how values are shown."""
    fit: LinearFit
    """The plain line and its diagnostics (leverage, Cook's distance, rankings)."""
    warnings: tuple[str, ...]
    choice: Choice
    """The form predictions use, chosen by held-out error (:mod:`.choice`)."""
    family: str | None = None
    """``None``: the pooled fit over every model; else one family's own fit."""

    @property
    def kind(self) -> str:
        return METRICS[self.metric].kind

    @property
    def scope(self) -> str:
        return "pooled" if self.family is None else f"family {self.family}"


def metric_fit(
    metric: str,
    setting: str,
    unit: str,
    line: LinearFit,
    min_r2: float,
    *,
    family: str | None = None,
    form: str | None = None,
) -> MetricFit:
    """The line's diagnostics, the form chosen by held-out error, and every warning: one
    place, so a fresh calibration and a loaded file agree."""
    choice = choose(line.x, line.y, line.labels, form)
    warns = fit_warnings(line, unit, METRICS[metric].kind, min_r2)
    held = heldout_warning(choice, line.r2, min_r2)
    if held is not None:
        warns.append(held)
    return MetricFit(metric, setting, unit, line, tuple(warns), choice, family)


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
    left_out: tuple[str, ...] = ()
    """Profiled points kept out of a fit, with the reason (a p50 that measured a CPU quota's
    stalls, not the workload)."""
    matched: int = 0
    speed: ImpliedSpeed | None = None
    """The device in CPUs of the profiling host (:mod:`.speed`); ``None``: no time fit
    implies one, or a file from before it was stored."""
    families: Families = field(default_factory=Families)
    form: str | None = None
    """The form every fit was made to take (``--form``); ``None``: chosen per fit."""
    contended: str | None = None
    """Other tasks held the matched models' profiled runs off their CPUs (the warning, with
    the worst run's share): their times, and so the slopes and the implied speed, are the
    busy host's.  ``None``: none was, or none measured it."""

    def fits_for(self, setting: str) -> list[MetricFit]:
        return [f for f in self.fits if f.setting == setting]

    def speed_warning(self) -> str | None:
        """Why the implied speed cannot be the device's, most often a unit slip in the
        column it was fitted to (:meth:`.speed.ImpliedSpeed.implausible`); ``None``: no
        speed, or a plausible one."""
        sp = self.speed
        if sp is None:
            return None
        mf = self.speed_fit()
        return sp.implausible(f"{sp.metric}_{mf.unit}" if mf is not None else sp.metric)

    def speed_fit(self) -> MetricFit | None:
        """The pooled fit the implied speed was taken from (``None``: no speed)."""
        sp = self.speed
        if sp is None:
            return None
        return next((f for f in self.pooled_for(sp.setting) if f.metric == sp.metric), None)

    def speed_doubts(self) -> list[str]:
        """Why the implied speed may be far from the device's, by the criteria the fit's own
        warnings use (:func:`.fit.r2_poor`, :func:`.choice.predicts_poorly`) and the
        contended profiling :attr:`contended` records; each a short phrase, empty where
        none applies.  A board's ``speed: calibration`` had run at 0.043 CPUs from a fit of
        R² 0.541 whose held-out error was 61.9 %, without a word (a tester's)."""
        mf = self.speed_fit()
        out = []
        if mf is not None and r2_poor(mf.fit, self.min_r2):
            assert mf.fit.r2 is not None  # r2_poor says so
            out.append(f"R² = {mf.fit.r2:.3f} < {self.min_r2:g}")
        ho = None if mf is None else mf.choice.heldout
        if ho is not None and predicts_poorly(ho):
            med = ho.median_abs_pct
            assert med is not None  # some point was counted
            out.append(
                f"{ho.within} of {ho.counted} held-out predictions within ±{WITHIN_PCT:g} % "
                f"(median error {med:.1f} %)"
            )
        if self.contended is not None:
            out.append("other tasks held its profiled runs off their CPUs, which makes it too high")
        return out

    def why_no_speed(self) -> str:
        """Why no speed is implied and what would give one, in one phrase: the time fits
        under a ``cpus`` setting whose line falls (:func:`.speed.rises`), or no fit of a
        metric a speed is read from (:data:`.speed.SPEED_METRICS`: a calibration of CPU time
        alone had been told "no positive time fit" beside its ``cpu_time`` slope of 2.96, and
        to calibrate again on an idle host, a user's), or none under a ``cpus`` setting."""
        falling = [
            f"{mf.metric} [{mf.setting}] {mf.fit.a:.4g}"
            for mf in self.fits
            if mf.family is None and mf.metric in SPEED_METRICS and mf.fit.a <= 0
        ]
        if falling:
            return (
                f"its time fits' slopes are not above 0 ({'; '.join(falling)}): a device cannot "
                "get faster as the host gets slower; calibrate again from runs under --cpus on "
                "an idle host"
            )
        if not any(mf.metric in SPEED_METRICS for mf in self.fits):
            fitted = ", ".join(dict.fromkeys(mf.metric for mf in self.fits)) or "none"
            return (
                "a speed is read from a latency, mean latency or runtime fit, and it has none "
                f"(its fits: {fitted}); calibrate again with a latency_* or runtime_* column"
            )
        return (
            "no rising latency or runtime fit under a cpus setting; calibrate again from runs "
            "under --cpus on an idle host"
        )

    def pooled_for(self, setting: str) -> list[MetricFit]:
        return [f for f in self.fits if f.setting == setting and f.family is None]

    def family_fit(self, metric: str, setting: str, family: str) -> MetricFit | None:
        return next(
            (f for f in self.fits if (f.metric, f.setting, f.family) == (metric, setting, family)),
            None,
        )

    def settings(self) -> list[str]:
        return list(dict.fromkeys(f.setting for f in self.fits))

    def why_no_fit(self, most: int = 3) -> str:
        """Why nothing was fitted, in one line: the device rows that matched no run, or each
        metric's reason (:attr:`skipped`), the first ``most`` of them.  Said from what the
        calibration recorded, never guessed: a metric whose models matched but whose
        profiled values were all alike used to be reported as "no matching models"."""

        def first(items: tuple[str, ...]) -> str:
            more = len(items) - most
            return "; ".join(items[:most]) + (f"; and {more} more" if more > 0 else "")

        if self.matched == 0:
            return f"no device row matched a profiled run ({first(self.unmatched)})"
        if self.skipped:
            # The rows that matched no run are often why too few models remain (a tester's
            # `2.onnx` beside the run labelled `2`): named after the metrics' reasons.
            unmatched = f"; unmatched rows: {first(self.unmatched)}" if self.unmatched else ""
            return f"no metric could be fitted: {first(self.skipped)}{unmatched}"
        return "no metric could be fitted"  # not reached: every unfitted pair is in skipped

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
            "left_out": list(self.left_out),
            "form": self.form or "auto",
            "family_rules": [str(r) for r in self.families.rules],
            "families": dict(self.families.named),
            "fits": [_fit_dict(f) for f in self.fits],
            **({} if self.speed is None else {"implied_speed": self.speed.to_dict()}),
            **({} if self.contended is None else {"contended": self.contended}),
        }

    def save(self, path: Path) -> None:
        import yaml

        text = yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)
        write_output(path, text)


def _fit_dict(m: MetricFit) -> dict[str, Any]:
    f = m.fit
    chosen = m.choice.fit
    held = m.choice.heldout
    errors = m.choice.errors_pct
    return {
        "metric": m.metric,
        "setting": m.setting,
        "family": m.family,
        "unit": m.unit,
        "form": m.choice.form,
        "form_reason": m.choice.reason,
        **({} if held is None else held.to_dict()),
        "forms": [_form_dict(c) for c in m.choice.candidates],
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
                "loo_prediction_error": f.loo_prediction_errors[i],  # renamed with its sign
                "heldout_prediction": chosen.heldout[i],
                "heldout_pct_error": errors[i],
            }
            for i in range(f.n)
        ],
    }


def _form_dict(c: Candidate) -> dict[str, Any]:
    if c.fit is None:
        return {"form": c.form, "fitted": False, "why_not": c.why_not}
    return {
        "form": c.form,
        "fitted": True,
        "a": c.fit.a,
        "b": c.fit.b,
        "residual_se": c.fit.s,
        **({} if c.heldout is None else c.heldout.to_dict()),
    }


def load_calibration(path: Path) -> Calibration:
    """Read a calibration file; each fit is recomputed from its points.  Anything wrong with
    the file is one :class:`ConfigError` line naming it, and the key and what it should hold
    where the shape is wrong (:class:`~.fields.Fields`)."""
    from ...yamlfile import parse

    try:
        text = read_capped(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read calibration {path}: {why_unreadable(exc)}") from exc
    # A fault of the YAML: ``calibration bad.yml:2: expected the node content, ...``, one
    # line as the budget file says it (PyYAML's text had been printed whole).
    data = parse(text, f"calibration {path}")
    schema = data.get("schema") if isinstance(data, dict) else None
    ours = isinstance(schema, str) and schema.startswith("edgeprof-calibration/")
    if ours and schema != CALIBRATION_SCHEMA:  # another edgeprof's: said so, not "none"
        raise ConfigError(
            f"{path} is a calibration of another layout ({schema}) than this edgeprof "
            f"reads ({CALIBRATION_SCHEMA}): calibrate again with this edgeprof, or use "
            "the one that wrote it"
        )
    if not isinstance(data, dict) or schema != CALIBRATION_SCHEMA:
        raise ConfigError(f"{path} is not an edgeprof calibration ({CALIBRATION_SCHEMA})")
    try:
        return _calibration(Fields(path, data))
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        # Not reached: Fields checks every value before it is used.  Kept so that a shape
        # it misses is still one line naming the file, not a traceback.
        raise ConfigError(f"{path}: malformed calibration: {one_line(exc)}") from exc


def _calibration(doc: Fields) -> Calibration:
    path = doc.path
    min_r2 = doc.number("min_r2", "an R² from 0 to 1", lambda v: 0 <= v <= 1, DEFAULT_MIN_R2)
    level = doc.number("level", "a level between 0 and 1", lambda v: 0 < v < 1, DEFAULT_LEVEL)
    form = doc.get("form", "", None)
    if form is None:  # absent from older files: chosen per fit
        form = "auto"
    if not isinstance(form, str) or (form != "auto" and form not in FORMS):
        raise doc.bad("form", f"one of auto, {', '.join(FORMS)}", form)
    families = Families(
        tuple(
            parse_rule(r, f"{path}: {doc.key('family_rules')}[{i}]")
            for i, r in enumerate(doc.texts("family_rules", "a list of PATTERN=FAMILY rules"))
        ),
        {
            label: check_family(family, f"{path}: {doc.key('families')}.{label}")
            for label, family in doc.text_map("families", "a mapping of model label: family")
        },
    )
    fits = [_metric_fit(fd, min_r2, form) for fd in doc.records("fits", "a list of fits")]
    by_key = slopes(fits)
    speed_d = doc.record("implied_speed", "the implied speed (metric, setting, setting_cpus)")
    return Calibration(
        device=doc.text("device"),
        source=doc.text("source", ""),
        fits=tuple(fits),
        min_r2=min_r2,
        level=level,
        created_at=doc.text("created_at", ""),
        unmatched=tuple(doc.texts("unmatched", "a list of lines")),
        unmeasured=tuple(doc.texts("unmeasured", "a list of lines")),
        skipped=tuple(doc.texts("skipped", "a list of lines")),
        left_out=tuple(doc.texts("left_out", "a list of lines")),
        matched=doc.count("matched_rows"),
        speed=None if speed_d is None else _speed(speed_d, by_key),
        families=families,
        form=None if form == "auto" else form,
        contended=doc.optional_text("contended"),
    )


def _metric_fit(fd: Fields, min_r2: float, form: str) -> MetricFit:
    path = fd.path
    known = f"a metric: one of {', '.join(METRICS)}"
    metric = fd.text("metric", expected=known)
    if metric not in METRICS:
        raise fd.bad("metric", known, metric)
    units = f"a unit of {metric}: one of {', '.join(UNITS[METRICS[metric].kind])}"
    unit = fd.text("unit", expected=units)
    if unit not in UNITS[METRICS[metric].kind]:
        raise fd.bad("unit", units, unit)
    settings = "a profiler setting such as 'cpus=1, memory=1.0GiB'"
    setting = fd.text("setting", expected=settings)
    try:  # a setting no run can have: its fit had gone from the predictions in silence
        setting_spec(setting)
    except ConfigError:
        raise fd.bad("setting", settings, setting) from None
    pts = fd.records("points", "a list of points (model, profiler, device)")
    xs = [p.value("profiler") for p in pts]
    ys = [p.value("device") for p in pts]
    labels = [p.text("model") for p in pts]
    for i, label in enumerate(labels):
        # As the device CSV refuses a model's second row: one model is one point of a fit
        # (a hand-edited file's duplicate had loaded in silence, a user's).
        if label in labels[:i]:
            first = labels.index(label)
            raise pts[i].bad("model", f"a model not already at points[{first}]", label)
    try:
        f = fit(xs, ys, labels)
    except ConfigError as exc:
        shown_setting = " ".join(setting.split())  # one line, whatever it holds
        raise ConfigError(f"{path}: {metric} [{shown_setting}]: {exc}") from None
    family = fd.optional_text("family")
    if family is not None:
        check_family(family, f"{path}: {fd.key('family')}")
    return metric_fit(
        metric,
        without_chosen_cores(setting),  # a file from before leases
        unit,
        f,
        min_r2,
        family=family,
        form=None if form == "auto" else form,
    )


def _speed(d: Fields, fits: Mapping[tuple[str, str], Slope]) -> ImpliedSpeed | None:
    host = d.record("host", "a mapping of cpu_model and kernel")
    cpu_model = None if host is None else host.optional_text("cpu_model")
    kernel = None if host is None else host.optional_text("kernel")
    clean = {
        "metric": d.text("metric"),
        "setting": d.text("setting"),
        "setting_cpus": d.number("setting_cpus", "a CPU count above 0", lambda v: v > 0),
        # Absent from files made before it was recorded: the setting's CPUs, as then.
        "used_cpus": None
        if d.get("used_cpus", "a CPU count above 0", None) is None
        else d.number("used_cpus", "a CPU count above 0", lambda v: v > 0),
        "form": d.optional_text("form"),
        # Absent from a power law's file from before its own slope was quoted: the line's.
        "slope_at": None
        if d.get("slope_at", "a profiler value above 0", None) is None
        else d.number("slope_at", "a profiler value above 0", lambda v: v > 0),
        "host": {"cpu_model": cpu_model, "kernel": kernel},
    }
    return speed_from_dict(clean, fits)


def slopes(fits: Sequence[MetricFit]) -> dict[tuple[str, str], Slope]:
    """The pooled fits' slopes for :func:`.speed.implied_speed`: of the form predictions
    use, a power law's at the profiled values' geometric mean (:meth:`.FormFit.margin`)."""
    out = {}
    for m in fits:
        if m.family is None:
            a, at = m.choice.fit.margin()
            out[(m.metric, m.setting)] = Slope(a, m.choice.form, m.fit.r2, m.fit.a, at)
    return out
