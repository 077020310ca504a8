"""The speed a calibration implies: how many CPUs of the profiling host the device is worth,
for the workloads it was fitted on.

What the fit gives.  A calibration fits ``device = a·profiler + b`` per metric and limit
setting.  For a time metric under a setting that gave the workload ``k`` CPUs of bandwidth
(``cpus=k``), the slope ``a`` is the device's seconds per profiler second *at the margin*
(the intercept ``b`` takes the fixed costs: start-up, I/O).  So ``k / a`` CPUs of this host
take as long as the device, for those workloads: that is the share a run needs to emulate
the device's speed (``--cpus k/a``), and ``k / (a·cores)`` is the speed of one device core
relative to one host core.  This is the honest quantity: a ratio fitted on *these*
workloads under *this* setting, not a property of the silicon.  It holds for a
CPU-bound workload whose time scales with its CPU bandwidth; it says nothing about a
different operator mix, memory-bound layers or the device's thermal state.

Why not a per-core speed from ``cpu_time`` (device CPU seconds over host CPU seconds, which
would not depend on the thread count): the device CSV rarely has CPU time (its tools report
latency), and it includes the device's own kernel and runtime overheads; the wall-clock
ratio is what the emulation has to reproduce.

Which CPUs: those the workloads used, not the setting's.  A single-threaded workload
profiled under ``cpus=2`` used one: ``2 / a`` made the device twice as fast as it is (a
tester's same models gave 0.504 CPUs profiled under ``cpus 1`` and 0.993 under ``cpus 2``).
So ``k`` is the CPUs the setting's runs had at their busiest second (their median CPU %
over its 1 s window), never more than the setting's.

Which slope: that of the form the predictions use (:mod:`.choice`), so that a calibration
says one speed: the line through the origin's where it was chosen (a constant factor, which
is what a CPU share reproduces), the line's, at the margin, where it was; a power law's
exponent says no one speed fits the workloads, which the report says, and its slope at the
margin is taken at the profiled values' geometric mean (:meth:`.forms.FormFit.margin`: a
tester's law gave 0.528 there, where the line's 0.479 had been quoted as the law's).

Which fit: the per-iteration latency (the inference itself, free of start-up), else its
mean, else the whole run's wall time; among a metric's fits (one per setting) the one with
the highest R².  A fit with ``a ≤ 0`` implies no speed (the device is not slower on the
larger workloads: nothing to scale), and neither does one whose least-squares line falls
(:func:`rises`), whatever form predicts: the line through the origin has a positive slope
on any positive data, and a tester's latency fit (R² 0.026, line slope -0.8143, under a
contended host) had given a board 0.179 CPUs from the origin's 2.633.  The host the runs
were profiled on is recorded (CPU model, kernel): the share is this host's, and means
nothing on another CPU model.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...model import HostInfo

SPEED_METRICS = ("latency", "latency_mean", "runtime")
"""Device CSV metric stems a speed may come from, most preferred first."""
FASTEST = 10.0
"""No edge device runs a workload more than this many times faster than the host CPUs the
workload used (:meth:`ImpliedSpeed.implausible`): a device core at a server core's speed
with 10 cores for each used one.  A tester's latency in seconds under a ``latency_ms``
column fitted with no warning at slope 0.003237, a Raspberry Pi "≈ 309 CPUs" of an EPYC."""
SLOWEST = 100.0
"""Nor more than this many times slower.  Wider than :data:`FASTEST`: boards 10 to 30 times
slower than a server core per core exist (a single-core Pi Zero), and a unit slip is a
factor of 1000."""


class Slope(NamedTuple):
    """What a speed needs of one fit: the slope of the form predictions use, that form, and
    the line's R² (which fit of a metric is best)."""

    a: float
    form: str
    r2: float | None
    line_a: float
    """The line's slope: what a file from before ``form`` was recorded used."""
    at: float | None = None
    """The profiler value a power law's slope is taken at (``None``: a line's, the same
    everywhere)."""


@dataclass(frozen=True)
class ImpliedSpeed:
    metric: str
    setting: str
    setting_cpus: float
    """The CPU bandwidth (``cpus``) of the setting the fit holds for."""
    slope: float
    """``a`` of the fit: device seconds per profiler second."""
    host_model: str | None
    host_kernel: str | None
    used_cpus: float | None = None
    """The CPUs the setting's runs used (see the module docstring); ``None``: not known (a
    file from before it was recorded): the setting's."""
    form: str = "line"
    """The form the slope is of (:data:`.forms.FORMS`)."""
    at: float | None = None
    """The profiler value (base unit) a power law's slope is taken at; ``None``: a line's,
    or a power law's file from before its own slope was quoted, which keeps the line's."""

    @property
    def cpus(self) -> float:
        """``k``: the CPUs the fitted workloads had."""
        return self.setting_cpus if self.used_cpus is None else self.used_cpus

    @property
    def host_cpus(self) -> float:
        """The device in CPUs of the profiling host, for the fitted workloads: ``k / a``."""
        return self.cpus / self.slope

    def implausible(self, column: str) -> str | None:
        """Why the slope cannot be a device's speed (``None``: it can): the device more than
        :data:`FASTEST` times faster, or :data:`SLOWEST` times slower, than the host CPUs
        the workloads used; ``column`` is the device CSV's column the slope was fitted to,
        where a unit slip would be."""
        k = f"{self.cpus:.3g} CPU{'' if self.cpus == 1 else 's'}"

        def times(v: float) -> str:
            return f"{v:.3g}" if v < 1000 else f"{v:,.0f}"

        if 1 / self.slope > FASTEST:
            how = f"{times(1 / self.slope)} times faster than"
        elif self.slope > SLOWEST:
            how = f"{times(self.slope)} times slower than"
        else:
            return None
        return (
            f"the implied speed is not a device's: slope {self.slope:.4g} makes the device "
            f"{how} the {k} of this host the workloads used ({self.metric} "
            f"[{self.setting}]); a unit slip does this (seconds or microseconds under "
            f"'{column}' give a factor of 1000): check that column's unit"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "setting": self.setting,
            "setting_cpus": self.setting_cpus,
            "used_cpus": self.used_cpus,
            "form": self.form,
            "slope": self.slope,
            "slope_at": self.at,
            "host_cpus": self.host_cpus,
            "host": {"cpu_model": self.host_model, "kernel": self.host_kernel},
        }


def rises(f: Slope) -> bool:
    """Both the predicting form's slope and the least-squares line's are above 0: a device
    cannot get faster as the host gets slower."""
    return f.a > 0 and f.line_a > 0


def implied_speed(
    fits: Mapping[tuple[str, str], Slope],
    setting_cpus: Mapping[str, float | None],
    host: HostInfo | None,
    used_cpus: Mapping[str, float | None] | None = None,
) -> ImpliedSpeed | None:
    """The speed of the best fit (see the module docstring) or ``None``.

    ``fits``: (metric stem, setting) → its slope; ``setting_cpus``: setting → its ``cpus``;
    ``used_cpus``: setting → the CPUs its runs used (:func:`used_cpus`)."""
    for metric in SPEED_METRICS:
        usable = [
            (setting, f)
            for (m, setting), f in fits.items()
            if m == metric and rises(f) and setting_cpus.get(setting) is not None
        ]
        if not usable:
            continue
        setting, best = max(usable, key=lambda sf: -1.0 if sf[1].r2 is None else sf[1].r2)
        cpus = setting_cpus[setting]
        assert cpus is not None  # filtered above
        used = None if used_cpus is None else used_cpus.get(setting)
        return ImpliedSpeed(
            metric,
            setting,
            cpus,
            best.a,
            None if host is None else host.cpu_model,
            None if host is None else host.kernel,
            None if used is None else min(used, cpus),
            best.form,
            best.at,
        )
    return None


def used_cpus(peaks_pct: Sequence[float], setting_cpus: float | None) -> float | None:
    """The CPUs a setting's runs used: the median of their busiest second's CPU %, never
    more than the setting's; ``None`` without a figure."""
    if not peaks_pct:
        return None
    used = statistics.median(peaks_pct) / 100.0
    return used if setting_cpus is None else min(used, setting_cpus)


def speed_from_dict(
    d: Mapping[str, Any], fits: Mapping[tuple[str, str], Slope]
) -> ImpliedSpeed | None:
    """Read back :meth:`ImpliedSpeed.to_dict`; the slope is the refitted one (the file never
    disagrees with the arithmetic), ``None`` when its fit is gone or does not rise."""
    metric, setting = str(d["metric"]), str(d["setting"])
    f = fits.get((metric, setting))
    if f is None or not rises(f):
        return None
    host = d.get("host") or {}
    model, kernel = host.get("cpu_model"), host.get("kernel")
    used = d.get("used_cpus")
    # A file from before the form was recorded keeps the speed it was made with (the
    # line's slope): a speed that changed with edgeprof's version would change a device's.
    old = d.get("form") is None
    # So does a power law's from before its own slope was quoted (no ``slope_at``).
    line = old or (f.form == "power" and d.get("slope_at") is None)
    return ImpliedSpeed(
        metric,
        setting,
        float(d["setting_cpus"]),
        f.line_a if line else f.a,
        None if model is None else str(model),
        None if kernel is None else str(kernel),
        None if used is None else float(used),
        "line" if old else f.form,
        None if line else f.at,
    )
