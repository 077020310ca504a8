"""What a run did on the GPUs it could see: the ``gpu`` block of a result (``null`` without one).

Read over NVML by :mod:`edgeprof.measure.gpu`: the driver's own counters, sampled at the run's
interval (no faster than :data:`GPU_MIN_INTERVAL_S`) and read once
more at the run's start and end.  Memory is the run's own: NVML's per-process list matched to
the pids in the run's group, so another job on the same GPU is not counted.  Where the pids
cannot be matched (edgeprof in a PID namespace of its own sees other numbers than the driver
reports) it is the device's used memory above its level at the start, and ``memory_source``
says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .memory import known_fields

GpuSource = Literal["processes", "device"]
"""Whose figure a device's memory or utilisation is: ``processes``, the run's own (its pids
on NVML's lists); ``device``, the whole GPU's, whoever used it (the reader and the schema
refuse any other word: ``"bogus"`` had loaded)."""


GPU_MIN_INTERVAL_S = 0.01
"""GPUs are read no more often than this: each read is ~10 NVML calls, and the driver
refreshes utilisation once per sample period, between 1/6 s and 1 s by NVML's documentation
(``nvmlDeviceGetUtilizationRates``).  Here, not in :mod:`edgeprof.measure.gpu`, because a
report names it (a phase shorter than it) without loading the sampler."""


GPU_CSV_COLUMNS = (
    "t_s",
    "gpu",
    "memory_bytes",
    "device_memory_bytes",
    "util_pct",
    "memory_util_pct",
    "power_w",
    "energy_j",
    "sm_clock_mhz",
    "memory_clock_mhz",
    "temperature_c",
    "throttle",
)
"""``gpu.csv``'s header, as :mod:`edgeprof.measure.gpu_device` writes it: one row per GPU per
sample.  ``memory_bytes``: the run's (see that module's docstring); ``energy_j``: since the
run's start; ``throttle``: the reasons, ``|``-joined.  Here, not in :mod:`edgeprof.measure`,
because a reader checks a file against it (:mod:`edgeprof.samplefiles`)."""

GPU_SAMPLE_COLUMNS = ("gpu_memory_bytes", "gpu_util_pct", "gpu_power_w", "gpu_energy_j")
"""Appended to ``samples.csv`` when a run measures GPUs: the GPUs' last reading at or before
the row's time (their own grid is :data:`GPU_MIN_INTERVAL_S` or
coarser), summed over them (the run's memory, power, energy since the start) or, for
utilisation, their device-wide mean.  ``gpu.csv`` has each GPU's readings."""


@dataclass(frozen=True)
class GpuDevice:
    """One GPU over one run.

    ``utilization_*``: percent of the time a kernel ran on the GPU (NVML's ``gpu``/``smUtil``),
    averaged over the samples (per process: over the driver's samples of the run's pids, i.e.
    while it held the GPU; device-wide: over time).  ``energy_j``: the driver's cumulative
    energy counter at the end less at the start (``None`` where the GPU has none, before
    Volta).  ``power_*``: board power samples (W).  ``throttle_reasons``: every reason the
    driver gave for holding the clocks down while the run ran (``sw_power_cap``,
    ``hw_thermal``…), idle left out.
    """

    index: int
    """NVML's index (the order ``nvidia-smi`` lists)."""
    uuid: str
    name: str
    memory_total_bytes: int | None
    memory_peak_bytes: int | None
    memory_source: GpuSource
    """``processes``: the run's own processes on NVML's list; ``device``: the device's used
    memory above its level at the run's start (anything else on the GPU counts too)."""
    utilization_avg_pct: float | None
    utilization_peak_pct: float | None
    utilization_source: GpuSource | None
    """``processes``: NVML's per-process samples of the run's pids; ``device``: the device's
    utilisation, whoever used it (the driver gave no per-process samples)."""
    memory_utilization_avg_pct: float | None
    energy_j: float | None
    power_avg_w: float | None
    power_peak_w: float | None
    sm_clock_min_mhz: int | None
    sm_clock_max_mhz: int | None
    memory_clock_max_mhz: int | None
    temperature_peak_c: int | None
    throttle_reasons: tuple[str, ...] = ()
    processes: int = 0
    """Distinct pids of the run seen on this GPU."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GpuDevice:
        kw = known_fields(cls, d)
        kw["throttle_reasons"] = tuple(kw.get("throttle_reasons") or ())
        return cls(**kw)


@dataclass(frozen=True)
class GpuPhase:
    """A phase's share of the GPUs (phases of the same name merged, as in ``phases``)."""

    name: str
    energy_j: float | None
    memory_peak_bytes: int | None
    """Largest sample of the run's GPU memory inside the phase (a lower bound: sampled)."""


@dataclass(frozen=True)
class GpuStats:
    """The run's GPUs (:class:`GpuDevice`) and what adds up over them.

    ``memory_peak_bytes``: the largest sample of the run's memory summed over its GPUs;
    ``energy_j``: the energy of every GPU the run could see, over the run.
    ``energy_per_iteration_j`` / ``energy_per_item_j``: the energy inside the reported
    iterations (the counter interpolated at each one's start and end) over their count /
    their items (a batch's inferences); ``None`` without iterations or energy.
    """

    driver: str | None
    selection: str | None
    """What ``--gpus`` asked for (``None``: every GPU NVML lists, none hidden from the run)."""
    devices: tuple[GpuDevice, ...]
    memory_peak_bytes: int | None
    energy_j: float | None
    samples: int
    interval_s: float
    energy_per_iteration_j: float | None = None
    energy_per_item_j: float | None = None
    phases: tuple[GpuPhase, ...] = ()
    path: str | None = None
    """``gpu.csv`` (one row per GPU per sample), relative to the directory of the file that
    records it, as ``samples.path``; or ``None``."""
    memory_limit_bytes: int | None = None
    """The device's GPU memory (``--gpu-memory``, a device's ``gpu_memory``): the run's GPU
    memory peak is held to it (``None``: none given).  With :attr:`unified_memory` it is the
    device's one memory, which the run's host and GPU memory share."""
    memory_limit_enforced: bool = False
    """The workload's PyTorch capped its own allocations to the limit (a per-process memory
    fraction, set by :mod:`edgeprof.workload.instrument`); otherwise the limit was only
    checked against the measured peak."""
    unified_memory: bool = False
    """The device shares one memory between CPU and GPU (Jetson-class boards): the run fits
    when its host peak and GPU peak together fit :attr:`memory_limit_bytes`."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GpuStats:
        kw = known_fields(cls, d)
        kw["devices"] = tuple(GpuDevice.from_dict(x) for x in kw.get("devices") or ())
        kw["phases"] = tuple(GpuPhase(**known_fields(GpuPhase, p)) for p in kw.get("phases") or ())
        return cls(**kw)
