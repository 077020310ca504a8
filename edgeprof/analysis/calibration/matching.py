"""Matching device rows to profiled runs, and :func:`calibrate`: a fit per metric and setting
over the matched pairs."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...errors import ConfigError
from ...model import RunResult
from ...names import has_control, printable
from ...units import utc_timestamp
from ..cells import cells_by_setting, successful
from ..held import held_runs
from ..instrumentation import no_events
from ..metrics import stalled_percentiles
from .families import MIN_FAMILY_POINTS, Families, FamilyRule, label_stem, members
from .file import Calibration, MetricFit, metric_fit, slopes
from .fit import DEFAULT_LEVEL, DEFAULT_MIN_R2, fit
from .forms import FORMS
from .measurements import DeviceRow, Measurements
from .speed import implied_speed, used_cpus
from .units import METRICS, format_value


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
    stalled: tuple[str, ...] = ()
    """The latency percentiles that measured a CPU quota's stalls in its runs
    (:func:`~edgeprof.analysis.metrics.stalled_percentiles`)."""


STALL_PERCENTILE = {"latency": "p50"}
"""The calibration metrics that are a latency percentile, and which: one that measured the
quota's stalls is no point of the device's speed (a tester's --cpus 0.5 at a 100 ms period
gave full-speed p50s, and a slope that made the implied speed half the device's)."""


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
            stalled = stalled_percentiles(ok)
            out.append(
                Cell(label, setting, len(group), len(ok), values, lim.cpus, lim.memory, stalled)
            )
    return out


def _match(row: DeviceRow, cells: Sequence[Cell], path: str) -> tuple[Cell | None, str]:
    """The cell a device row belongs to, or why not: with ``None``, or with the cell where
    every run of it failed."""
    named = [c for c in cells if c.label == row.model]
    if not named:
        named = [c for c in cells if label_stem(c.label) == row.model]
        labels = sorted({c.label for c in named})
        if len(labels) > 1:
            raise ConfigError(
                f"{path} line {row.line}: model {row.model!r} matches runs labelled "
                f"{' and '.join(labels)}: use the full label"
            )
    if not named:
        # A row named by a file whose runs are labelled otherwise (`2.onnx`, runs labelled
        # `2`): named, not matched, since a stem may also be another model's label.
        near = sorted({c.label for c in cells if label_stem(c.label) == label_stem(row.model)})
        hint = f" (runs are labelled {' and '.join(map(repr, near))})" if near else ""
        return None, f"no profiled run of this model{hint}"
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
    if cell.ok == 0:  # the cell, with why it is no point
        return cell, f"every profiled run of it failed ({cell.setting})"
    return cell, ""


def _names(labels: Sequence[str], most: int = 3) -> str:
    """``a, b, c and 4 more``: labels in a one-line message, however many there are."""
    shown = ", ".join(labels[:most])
    return shown if len(labels) <= most else f"{shown} and {len(labels) - most} more"


MIN_SPREAD = 0.01
"""The least spread of a setting's profiled values, relative to the largest, that a line can
be fitted to.  Below it the differences between models are as small as a model's own from
one run to the next, and the slope is the noise's: a tester's five peaks of 56.34 to 56.62
MiB (0.28 MiB, 0.5 %) against device values rounded to 0.1 MiB gave two "outliers" at an
externally studentized residual of ±inf and a slope of 0.97 for a true 1.1.  Repeats of one
model on the 2-core test host varied by up to 0.35 % in peak memory (0.17 MiB of 49.5 MiB)
and 0.1-54 % in wall time; 1 % is above the first and far below the second, so it refuses
only values that cannot tell models apart."""


def _unfittable(
    metric: str, unit: str, pts: Sequence[tuple[str, float, float]], unprofiled: Sequence[str]
) -> str | None:
    """Why no line can be drawn through ``pts`` (label, profiler, device), in the user's
    terms, or ``None`` when one can.  Each case :func:`.fit.fit` refuses is named here, with
    what the data hold: "no matching models" was said for all of them, also when the models
    matched and only their profiled values were all alike.  ``unprofiled``: the models with a
    device value but no profiled one (dropped from ``pts``)."""
    title = METRICS[metric].title
    missing = f"; {_names(unprofiled)}: no profiled {title}" if unprofiled else ""
    if not pts and not unprofiled:
        return f"no matched device row under this setting has a {metric}_{unit} value"
    if not pts:
        n = len(unprofiled)
        # A figure of the workload's own iterations: a script that never calls edgeprof had
        # been told only that none was recorded (a user's busy loop).
        how = (
            ": the workload reports its iterations with edgeprof.iteration() (docs/phases.md)"
            if METRICS[metric].per_iteration
            else ""
        )
        return (
            f"the profiler recorded no {title} for the {n} model(s) measured on the device "
            f"({_names(unprofiled)}){how}"
        )
    if len(pts) == 1:
        return (
            f"only one model ({pts[0][0]}) has both a device and a profiled value: a line "
            f"needs at least two{missing}"
        )
    xs = {p[1] for p in pts}
    kind = METRICS[metric].kind
    if len(xs) == 1:
        shown = format_value(pts[0][1], unit, kind)
        return (
            f"the profiled values do not vary (all {shown}): a line needs at least two "
            f"different ones{missing}"
        )
    lo, hi = min(xs), max(xs)
    if hi - lo < MIN_SPREAD * max(abs(lo), abs(hi)):
        return (
            f"the profiled values hardly vary ({format_value(lo, unit, kind)} to "
            f"{format_value(hi, unit, kind)}, {(hi - lo) / max(abs(lo), abs(hi)):.2%} apart, "
            f"under the {MIN_SPREAD:.0%} a run repeated varies by): a line through them "
            f"fits their noise; measure models that differ more{missing}"
        )
    ys = {p[2] for p in pts}
    if len(ys) == 1:
        # A line through equal device values predicts that value for every model: an
        # all-zero column had been fitted, "LOO ERROR -0 ms" and a dominance warning of
        # "a = 0, b = 0 ms" (a user's).
        shown = format_value(pts[0][2], unit, kind)
        return (
            f"the device values do not vary (all {shown}): a line through them predicts that "
            f"for every model; check the {metric}_{unit} column{missing}"
        )
    return None


def calibrate(
    runs: Sequence[RunResult],
    measurements: Measurements,
    device: str,
    *,
    min_r2: float = DEFAULT_MIN_R2,
    level: float = DEFAULT_LEVEL,
    family_rules: Sequence[FamilyRule] = (),
    form: str | None = None,
) -> Calibration:
    """Match device rows to profiled cells and fit every metric under every setting: one
    pooled fit over every model, and one per family with :data:`.MIN_FAMILY_POINTS` points.
    ``form`` makes every fit take that form (:data:`.forms.FORMS`) instead of choosing."""
    if not device.strip():
        raise ConfigError("--device: empty device name")
    if has_control(device):
        # Printed in every table and warning, and saved: an escape had recoloured the terminal.
        raise ConfigError(f"--device {device!a} holds a control character: name it without one")
    if not 0 < level < 1:
        raise ConfigError(f"level {level}: must be between 0 and 1")
    if form is not None and form not in FORMS:
        raise ConfigError(f"--form {form!r}: one of auto, {', '.join(FORMS)}")
    cells = cells_of(runs)
    if not cells:
        raise ConfigError("no profiled runs given")
    unmatched = []
    pairs: list[tuple[DeviceRow, Cell]] = []
    used: dict[tuple[str, str], DeviceRow] = {}
    failed = set()
    for row in measurements.rows:
        cell, why = _match(row, cells, measurements.path)
        if cell is None or why:
            unmatched.append(f"line {row.line}: {row.describe()}: {why}")
            if cell is not None:
                failed.add((cell.label, cell.setting))
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
    # A row of a model whose every run failed is named among the unmatched (why its device
    # value is no point); "profiled, not measured on the device" contradicted it.
    unmeasured = [
        f"{c.label} [{c.setting}]"
        for c in cells
        if (c.label, c.setting) not in used and (c.label, c.setting) not in failed
    ]
    families = Families(
        tuple(family_rules), {c.label: r.family for r, c in pairs if r.family is not None}
    )
    silent = no_events(runs)
    fits: list[MetricFit] = []
    skipped = []
    left_out = []
    for setting in dict.fromkeys(c.setting for _, c in pairs):
        for metric, unit in measurements.units.items():
            measured = [(r, c) for r, c in pairs if c.setting == setting and metric in r.values]
            stall = STALL_PERCENTILE.get(metric)
            for _, c in measured:
                if stall is not None and stall in c.stalled and metric in c.values:
                    left_out.append(
                        f"{metric} [{setting}]: {c.label}: its {stall} measures the CPU quota's "
                        "stalls, not the workload (profile it with a shorter --cpu-period or "
                        "longer iterations)"
                    )
            measured = [(r, c) for r, c in measured if stall is None or stall not in c.stalled]
            pts = [
                (c.label, c.values[metric], r.values[metric])
                for r, c in measured
                if metric in c.values
            ]
            if not pts and METRICS[metric].reported and silent is not None:
                skipped.append(f"{metric} [{setting}]: {silent}")
                continue
            unprofiled = [c.label for r, c in measured if metric not in c.values]
            groups: list[tuple[str | None, list[tuple[str, float, float]]]] = [(None, pts)]
            by_family = members(families, [p[0] for p in pts])
            for name, labels in by_family.items():
                # A family that is every point would repeat the pooled fit.
                if MIN_FAMILY_POINTS <= len(labels) < len(pts):
                    groups.append((name, [p for p in pts if p[0] in labels]))
            for fam, group in groups:
                scope = "" if fam is None else f" family {fam}"
                reason = _unfittable(metric, unit, group, unprofiled if fam is None else [])
                if reason is not None:
                    skipped.append(f"{metric} [{setting}]{scope}: {reason}")
                    continue
                try:
                    line = fit([p[1] for p in group], [p[2] for p in group], [p[0] for p in group])
                except ConfigError as exc:  # _unfittable names every case fit() refuses
                    skipped.append(f"{metric} [{setting}]{scope}: {exc}")
                    continue
                fits.append(metric_fit(metric, setting, unit, line, min_r2, family=fam, form=form))
    setting_cpus = {c.setting: c.cpus for c in cells}
    hosts = [r.host for r in runs]
    # A run shorter than the peak's window has its average there, start-up included (a
    # 0.7 s single-threaded run at 60 % would have read as 0.6 CPUs): not counted.
    busiest = {
        setting: [
            r.cpu.peak_pct
            for g in by_label.values()
            for r in successful(g)
            if r.cpu.peak_pct is not None
            and r.cpu.peak_window_s is not None
            and r.wall_s >= r.cpu.peak_window_s
        ]
        for setting, by_label in cells_by_setting(runs).items()
    }
    speed = implied_speed(
        slopes(fits),
        setting_cpus,
        hosts[0] if hosts else None,
        {s: used_cpus(busiest.get(s, []), cpus) for s, cpus in setting_cpus.items()},
    )
    by_cell = cells_by_setting(runs)
    fitted = [r for _, c in pairs for r in successful(by_cell[c.setting][c.label])]
    return Calibration(
        device=device,
        # The CSV's path as given, its control characters escaped: the file is read back
        # as text without them.
        source=printable(measurements.path),
        fits=tuple(fits),
        min_r2=min_r2,
        level=level,
        created_at=utc_timestamp(),
        unmatched=tuple(unmatched),
        unmeasured=tuple(unmeasured),
        skipped=tuple(skipped),
        left_out=tuple(left_out),
        matched=len(pairs),
        speed=speed,
        families=families,
        form=form,
        contended=_contended(fitted),
    )


def _contended(runs: Sequence[RunResult]) -> str | None:
    """The warning when other tasks held the fitted runs off their CPUs as long as ``edgeprof
    run`` warns of.  Their times are longer than the host's own, so a time fit's slope
    (device / host) comes out small and the implied speed (CPUs / slope) high: the tutorial's
    half-core stand-in, fitted to runs held off about half their wall time, read as 1.15
    CPUs of the host, against 0.671 from an idle host's."""
    held = held_runs(runs)
    if held is None:
        return None
    return (
        f"other tasks on this host held {held.runs_text()} of the matched models off their "
        f"CPUs, {held.figure()}: their times are longer than this host's own, so a time fit's "
        "slope is too small and the implied speed too high (profile on an idle host, or on "
        "--cpuset CPUs nothing else uses)"
    )
