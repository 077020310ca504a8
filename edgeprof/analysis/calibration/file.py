"""A calibration (the fits of one device) and its YAML file: saved with the points it was
fitted on, and refitted from them on load, so the file never disagrees with the arithmetic."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ..cells import without_chosen_cores
from .fit import DEFAULT_LEVEL, DEFAULT_MIN_R2, LinearFit, fit, fit_warnings
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
    speed: ImpliedSpeed | None = None
    """The device in CPUs of the profiling host (:mod:`.speed`); ``None``: no time fit
    implies one, or a file from before it was stored."""

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
            **({} if self.speed is None else {"implied_speed": self.speed.to_dict()}),
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
            setting = without_chosen_cores(str(fd["setting"]))  # a file from before leases
            fits.append(MetricFit(metric, setting, fd["unit"], f, tuple(warns)))
        by_key = {(m.metric, m.setting): m.fit for m in fits}
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
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: malformed calibration: bad or missing {exc}") from exc
