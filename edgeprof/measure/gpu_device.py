"""One GPU over a run: the running aggregates from NVML's raw readings
(:mod:`edgeprof.backends.nvml`) to the result's :class:`~edgeprof.model.GpuDevice`, and its
``gpu.csv`` rows; the sampling thread that feeds them is :mod:`edgeprof.measure.gpu`'s.

The run's memory on a GPU is the sum of NVML's per-process figures for the pids that were in
the run's group when (or before) it was read, so another job on the same GPU is not counted.
NVML reports pids as the initial PID namespace numbers them; an edgeprof inside a PID
namespace of its own (a container) sees other numbers for the same processes, so there the
run's memory is the device's used memory above its level at the start, and the result says
``memory_source: device``.

A call that failed for one reading (:attr:`~edgeprof.backends.nvml.Reading.failed`) leaves
that reading out of its figure; only a GPU that does not give a figure at all changes where
it comes from.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..backends.nvml import GpuInfo, Reading, reason_names
from ..model import GpuDevice

PID_NS = Path("/proc/self/ns/pid")
INIT_PID_NS_INO = 0xEFFFFFFC
"""The initial PID namespace's inode number (``PROC_PID_INIT_INO``, ``include/linux/
proc_ns.h``): fixed by the kernel, so any other number is a namespace below it."""


def nested_pid_namespace(ns: Path = PID_NS) -> bool:
    """edgeprof runs in a PID namespace below the initial one (a container), where NVML's
    pids (the initial namespace's) are not the ones ``cgroup.procs`` shows.  Asked of the
    namespace's inode, not of ``NSpid``: a container mounts its own ``/proc``, whose
    ``NSpid`` then lists one number, as on the host (seen with ``unshare --mount-proc``)."""
    try:
        return os.stat(ns).st_ino != INIT_PID_NS_INO
    except OSError:
        return False


class Device:
    """Running aggregates of one GPU over a run."""

    def __init__(self, info: GpuInfo, by_process: bool) -> None:
        self.info = info
        self.by_process = by_process
        self.first: Reading | None = None
        self.last: Reading | None = None
        self.memory_peak: int | None = None
        self.mem_base: int | None = None
        self.util_area = 0.0
        self.util_span = 0.0
        self.util_peak: int | None = None
        self.memutil_area = 0.0
        self.proc_util: dict[int, int] = {}
        """SM % of the run's processes per driver timestamp (summed over its pids)."""
        self.proc_util_all = 0
        """SM % of every process's samples, summed: the run's share of the GPU's work is its
        samples' sum over this."""
        self.proc_util_supported = True
        self.energy_first: int | None = None
        self.energy_last: int | None = None
        """The first and the latest energy readings the driver gave (mJ)."""
        self.energy_n = 0
        self.power_sum = 0.0
        self.power_n = 0
        self.power_peak: int | None = None
        self.sm_min: int | None = None
        self.sm_max: int | None = None
        self.memclk_max: int | None = None
        self.temp_max: int | None = None
        self.reasons = 0
        self.pids: set[int] = set()
        self.mine: int | None = None
        """The run's memory on this GPU at the latest reading."""

    def add(self, r: Reading, run_pids: set[int]) -> int | None:
        """Fold one reading in; returns the run's memory on this GPU then."""
        prev, self.last = self.last, r
        if self.first is None:
            self.first = r
        if self.mem_base is None:  # the first reading that had it (one may have failed)
            self.mem_base = r.memory_used
        mine: int | None
        if r.energy_mj is not None:
            if self.energy_first is None:
                self.energy_first = r.energy_mj
            self.energy_last = r.energy_mj
            self.energy_n += 1
        lost = "processes" in r.failed  # this reading only: the next one has the list again
        if self.by_process and not lost and (
            r.processes is None or any(used is None for pid, used in r.processes if pid in run_pids)
        ):
            # No process list on this GPU, or one without the run's memory (MIG without
            # the rights, WDDM): the device's rise is all that can be said.
            self.by_process = False
        if self.by_process and lost:
            mine = self.mine  # as at the reading before: the series holds no false 0
        elif self.by_process:
            ours = [(pid, used) for pid, used in r.processes or () if pid in run_pids]
            self.pids.update(pid for pid, _ in ours)
            mine = sum(used for _, used in ours if used is not None)
        elif r.memory_used is not None and self.mem_base is not None:
            mine = max(0, r.memory_used - self.mem_base)
        else:
            mine = None
        if mine is not None:
            self.memory_peak = mine if self.memory_peak is None else max(self.memory_peak, mine)
        self.mine = mine
        if prev is not None and r.util_gpu is not None:
            dt = r.t - prev.t
            self.util_area += dt * r.util_gpu
            self.memutil_area += dt * (r.util_memory or 0)
            self.util_span += dt
        if r.util_gpu is not None:
            self.util_peak = _max(self.util_peak, r.util_gpu)
        if r.process_util is None:
            self.proc_util_supported = False
        elif self.by_process and prev is not None:
            # Not the first reading's: asked for every sample the driver still holds, it
            # has other processes' from before the run, which would shrink the run's share.
            for pid, ts, sm in r.process_util:
                self.proc_util_all += sm
                if pid in run_pids:
                    self.proc_util[ts] = self.proc_util.get(ts, 0) + sm
        if r.power_mw is not None:
            self.power_sum += r.power_mw
            self.power_n += 1
            self.power_peak = _max(self.power_peak, r.power_mw)
        if r.sm_clock_mhz is not None:
            self.sm_min = (
                r.sm_clock_mhz if self.sm_min is None else min(self.sm_min, r.sm_clock_mhz)
            )
            self.sm_max = _max(self.sm_max, r.sm_clock_mhz)
        if r.memory_clock_mhz is not None:
            self.memclk_max = _max(self.memclk_max, r.memory_clock_mhz)
        if r.temperature_c is not None:
            self.temp_max = _max(self.temp_max, r.temperature_c)
        if r.reasons is not None:
            self.reasons |= r.reasons
        return mine

    def energy_mj(self) -> int | None:
        """Between the first and the latest readings that had the counter (a reading that
        failed is left out); ``None`` until two readings gave it."""
        a, b = self.energy_first, self.energy_last
        return None if a is None or b is None or self.energy_n < 2 else max(0, b - a)

    def result(self) -> GpuDevice:
        info = self.info
        energy = self.energy_mj()
        # The mean of the power readings, not energy over time: the two clocks differ (the
        # driver averages power over its own window), and an average above the peak reading
        # would read as an error.
        power_avg = self.power_sum / self.power_n / 1000.0 if self.power_n else None
        by_proc = self.by_process and self.proc_util_supported
        device_avg = self.util_area / self.util_span if self.util_span > 0 else None
        if by_proc:
            # The driver gives a process a sample only for a period it was busy in (NVML's
            # nvmlDeviceGetProcessUtilization), so the samples' mean leaves the idle periods
            # out: a run busy in 1 of 10 had averaged 100 %.  The device's time-weighted
            # figure counts them; the run's share of every process's samples takes another
            # job's work out of it.  No sample of any process: n/a, not 0 (the driver
            # samples every 1/6 s to 1 s, and a short run may fall between two).
            values = list(self.proc_util.values())
            mine = sum(values)
            util_avg: float | None
            if not self.proc_util_all:
                util_avg = None
            elif device_avg is not None:
                util_avg = device_avg * mine / self.proc_util_all
            else:  # no device-wide figure on this GPU: the busy periods' mean, all there is
                util_avg = mine / len(values) if values else 0.0
            util_peak: float | None = max(values) if values else None
        else:
            util_avg = device_avg
            util_peak = self.util_peak
        return GpuDevice(
            index=info.number,
            uuid=info.uuid,
            name=info.name,
            memory_total_bytes=info.memory_total,
            memory_peak_bytes=self.memory_peak,
            memory_source="processes" if self.by_process else "device",
            utilization_avg_pct=util_avg,
            utilization_peak_pct=None if util_peak is None else float(util_peak),
            utilization_source=None if util_avg is None else ("processes" if by_proc else "device"),
            memory_utilization_avg_pct=(
                self.memutil_area / self.util_span if self.util_span > 0 else None
            ),
            energy_j=None if energy is None else energy / 1000.0,
            power_avg_w=power_avg,
            power_peak_w=None if self.power_peak is None else self.power_peak / 1000.0,
            sm_clock_min_mhz=self.sm_min,
            sm_clock_max_mhz=self.sm_max,
            memory_clock_max_mhz=self.memclk_max,
            temperature_peak_c=self.temp_max,
            throttle_reasons=reason_names(self.reasons),
            processes=len(self.pids),
        )

    def row(self, t: float, r: Reading, mine: int | None) -> tuple[object, ...]:
        """``r`` as a :data:`~edgeprof.model.gpu.GPU_CSV_COLUMNS` row of ``gpu.csv`` (``mine``:
        the run's memory then)."""
        base = self.energy_first
        energy = None if base is None or r.energy_mj is None else (r.energy_mj - base) / 1000.0
        return (
            t,
            r.gpu,
            mine,
            r.memory_used,
            r.util_gpu,
            r.util_memory,
            None if r.power_mw is None else r.power_mw / 1000.0,
            energy,
            r.sm_clock_mhz,
            r.memory_clock_mhz,
            r.temperature_c,
            "|".join(reason_names(r.reasons or 0)),
        )


def _max(a: int | None, b: int) -> int:
    return b if a is None or b > a else a
