"""A calibration (the fits of one device) and its YAML file: saved with the points it was
fitted on, and refitted from them on load, so the file never disagrees with the arithmetic."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...storage import write_output
from ..cells import without_chosen_cores
from .choice import Candidate, Choice, choose, heldout_warning
from .families import Families, check_family, parse_rule
from .fit import DEFAULT_LEVEL, DEFAULT_MIN_R2, LinearFit, fit, fit_warnings
from .forms import FORMS
from .measurements import MAX_VALUE
from .speed import ImpliedSpeed, speed_from_dict
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
    matched: int = 0
    speed: ImpliedSpeed | None = None
    """The device in CPUs of the profiling host (:mod:`.speed`); ``None``: no time fit
    implies one, or a file from before it was stored."""
    families: Families = field(default_factory=Families)
    form: str | None = None
    """The form every fit was made to take (``--form``); ``None``: chosen per fit."""

    def fits_for(self, setting: str) -> list[MetricFit]:
        return [f for f in self.fits if f.setting == setting]

    def pooled_for(self, setting: str) -> list[MetricFit]:
        return [f for f in self.fits if f.setting == setting and f.family is None]

    def family_fit(self, metric: str, setting: str, family: str) -> MetricFit | None:
        return next(
            (f for f in self.fits if (f.metric, f.setting, f.family) == (metric, setting, family)),
            None,
        )

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
            "form": self.form or "auto",
            "family_rules": [str(r) for r in self.families.rules],
            "families": dict(self.families.named),
            "fits": [_fit_dict(f) for f in self.fits],
            **({} if self.speed is None else {"implied_speed": self.speed.to_dict()}),
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
                "loo_error": f.loo_errors[i],
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
    """Read a calibration file; each fit is recomputed from its points."""
    import yaml

    from ...yamlfile import safe_load as strict_yaml

    try:
        data = strict_yaml(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError, RecursionError) as exc:
        # ValueError: an integer of 4300+ digits; RecursionError: nested deeper than Python
        # recurses.  A YAML error's text spans lines (it draws the spot): one line here.
        why = "nested too deeply" if isinstance(exc, RecursionError) else _one_line(exc)
        raise ConfigError(f"cannot read calibration {path}: {why}") from exc
    if not isinstance(data, dict) or data.get("schema") != CALIBRATION_SCHEMA:
        raise ConfigError(f"{path} is not an edgeprof calibration ({CALIBRATION_SCHEMA})")
    try:
        min_r2 = float(data.get("min_r2", DEFAULT_MIN_R2))
        form = str(data.get("form") or "auto")  # absent from older files: chosen per fit
        if form != "auto" and form not in FORMS:
            raise ConfigError(f"{path}: unknown form {form!r}")
        families = Families(
            tuple(
                parse_rule(str(r), f"{path}: family rule") for r in data.get("family_rules") or ()
            ),
            {
                str(k): check_family(str(v), str(path))
                for k, v in (data.get("families") or {}).items()
            },
        )
        fits = []
        for fd in data["fits"]:
            metric = fd["metric"]
            if metric not in METRICS or fd["unit"] not in UNITS[METRICS[metric].kind]:
                raise ConfigError(f"{path}: unknown metric or unit {metric!r} {fd['unit']!r}")
            pts = fd["points"]
            try:
                f = fit(
                    [_value(p["profiler"]) for p in pts],
                    [_value(p["device"]) for p in pts],
                    [str(p["model"]) for p in pts],
                )
            except ConfigError as exc:
                shown = " ".join(str(fd["setting"]).split())  # one line, whatever it holds
                raise ConfigError(f"{path}: {metric} [{shown}]: {exc}") from None
            setting = without_chosen_cores(str(fd["setting"]))  # a file from before leases
            family = fd.get("family")
            fits.append(
                metric_fit(
                    metric,
                    setting,
                    fd["unit"],
                    f,
                    min_r2,
                    family=None if family is None else check_family(str(family), str(path)),
                    form=None if form == "auto" else form,
                )
            )
        by_key = {(m.metric, m.setting): m.fit for m in fits if m.family is None}
        speed_d = data.get("implied_speed")  # absent from older files
        speed = None if speed_d is None else speed_from_dict(speed_d, by_key)
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
            speed=speed,
            families=families,
            form=None if form == "auto" else form,
        )
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise ConfigError(
            f"{path}: malformed calibration: bad or missing {_one_line(exc)}"
        ) from exc


def _value(v: object) -> float:
    """A point's value: a number within the device CSV's bounds (:data:`MAX_VALUE`), so the
    refit's arithmetic stays finite; a ``ValueError`` (said as malformed) otherwise."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not abs(v) <= MAX_VALUE:
        raise ValueError(f"point value {repr(v)[:40]}: expected a number up to {MAX_VALUE:g}")
    return float(v)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
