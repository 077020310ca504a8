"""A run's GPUs: their sampling thread, and the arithmetic from NVML's raw readings
(:mod:`edgeprof.backends.nvml`) to the result's ``gpu`` block (:class:`edgeprof.model.GpuStats`);
which GPUs a run may use is :mod:`edgeprof.measure.gpu_select`'s.

The run's memory on a GPU is the sum of NVML's per-process figures for the pids that were in
the run's group when (or before) it was read, so another job on the same GPU is not counted.
NVML reports pids as the initial PID namespace numbers them; an edgeprof inside a PID
namespace of its own (a container) sees other numbers for the same processes, so there the
run's memory is the device's used memory above its level at the start, and the result says
``memory_source: device``.
"""

from __future__ import annotations

import array
import collections
import contextlib
import dataclasses
import math
import os
import select
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..backends._process import leave_stops_to_main_thread
from ..backends.nvml import GpuInfo, Nvml, Reading, reason_names
from ..errors import EdgeprofError
from ..model import GpuDevice, GpuPhase, GpuStats
from .phases import Occurrence, interpolate, occurrence_spans
from .sampler import SampleWriter

MIN_INTERVAL_S = 0.01
"""GPUs are read no more often than this: each read is ~10 NVML calls, and the driver
refreshes utilisation once per sample period, between 1/6 s and 1 s by NVML's documentation
(``nvmlDeviceGetUtilizationRates``)."""

SAMPLE_COLUMNS = ("gpu_memory_bytes", "gpu_util_pct", "gpu_power_w", "gpu_energy_j")
"""Appended to ``samples.csv`` when a run measures GPUs: the GPUs' last reading at or before
the row's time (their own grid is :data:`MIN_INTERVAL_S` or coarser), summed over them
(the run's memory, power, energy since the start) or, for utilisation, their device-wide
mean.  ``gpu.csv`` has each GPU's readings."""

RECENT = 256
"""Readings kept for :meth:`GpuWatch.at`: the cgroup sampler's rows lag the present by at
most :data:`edgeprof.measure.sampler.DRAIN_S` (its native loop's batches), a few readings."""

COLUMNS = (
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
"""``gpu.csv``: one row per GPU per sample.  ``memory_bytes``: the run's (see the module's
docstring); ``energy_j``: since the run's start; ``throttle``: the reasons, ``|``-joined."""

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


class _Device:
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
        self.proc_util_supported = True
        self.power_sum = 0.0
        self.power_n = 0
        self.power_peak: int | None = None
        self.sm_min: int | None = None
        self.sm_max: int | None = None
        self.memclk_max: int | None = None
        self.temp_max: int | None = None
        self.reasons = 0
        self.pids: set[int] = set()

    def add(self, r: Reading, run_pids: set[int]) -> int | None:
        """Fold one reading in; returns the run's memory on this GPU then."""
        prev, self.last = self.last, r
        if self.first is None:
            self.first = r
            self.mem_base = r.memory_used
        mine: int | None
        if self.by_process and (
            r.processes is None or any(used is None for pid, used in r.processes if pid in run_pids)
        ):
            # No process list on this GPU, or one without the run's memory (MIG without
            # the rights, WDDM): the device's rise is all that can be said.
            self.by_process = False
        if self.by_process:
            ours = [(pid, used) for pid, used in r.processes or () if pid in run_pids]
            self.pids.update(pid for pid, _ in ours)
            mine = sum(used for _, used in ours if used is not None)
        elif r.memory_used is not None and self.mem_base is not None:
            mine = max(0, r.memory_used - self.mem_base)
        else:
            mine = None
        if mine is not None:
            self.memory_peak = mine if self.memory_peak is None else max(self.memory_peak, mine)
        if prev is not None and r.util_gpu is not None:
            dt = r.t - prev.t
            self.util_area += dt * r.util_gpu
            self.memutil_area += dt * (r.util_memory or 0)
            self.util_span += dt
        if r.util_gpu is not None:
            self.util_peak = _max(self.util_peak, r.util_gpu)
        if r.process_util is None:
            self.proc_util_supported = False
        elif self.by_process:
            for pid, ts, sm in r.process_util:
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
        if self.first is None or self.last is None:
            return None
        a, b = self.first.energy_mj, self.last.energy_mj
        return None if a is None or b is None else max(0, b - a)

    def result(self) -> GpuDevice:
        info = self.info
        energy = self.energy_mj()
        # The mean of the power readings, not energy over time: the two clocks differ (the
        # driver averages power over its own window), and an average above the peak reading
        # would read as an error.
        power_avg = self.power_sum / self.power_n / 1000.0 if self.power_n else None
        by_proc = self.by_process and self.proc_util_supported
        if by_proc:
            # No sample of the run's pids: n/a, not 0 (the driver samples every 1/6 s to 1 s,
            # and a short run may fall between two).
            values = list(self.proc_util.values())
            util_avg: float | None = sum(values) / len(values) if values else None
            util_peak: float | None = max(values) if values else None
        else:
            util_avg = self.util_area / self.util_span if self.util_span > 0 else None
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


def _max(a: int | None, b: int) -> int:
    return b if a is None or b > a else a


class GpuWatch:
    """The GPUs of one run: owns the NVML session (closed once by :meth:`close`) and the
    sampling thread (:meth:`start` … :meth:`stop`).

    ``members``: the run's pids now (``None``: the backend cannot list them; then, as in a
    nested PID namespace, the device's memory is what counts)."""

    def __init__(
        self,
        nvml: Nvml,
        gpus: Sequence[GpuInfo],
        selection: str | None,
        others: Sequence[GpuInfo] = (),
    ) -> None:
        self._nvml = nvml
        self.gpus = list(gpus)
        self.others = list(others)
        """The GPUs of this host the run was not given (their device files are denied it)."""
        self.selection = selection
        self.driver = nvml.driver()
        self._devices: list[_Device] = []
        self._pids: set[int] = set()
        self._members: Callable[[], list[int] | None] = lambda: None
        self._t0 = 0.0
        self.interval = MIN_INTERVAL_S
        self._writer: SampleWriter | None = None
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._running = False
        self.limit: int | None = None
        """The device's GPU memory the run is held to (``profile(gpu_memory=…)``)."""
        self.unified = False
        self.error: EdgeprofError | None = None
        self.samples = 0
        # Every reading's time, the run's memory and energy: 8 bytes each (an hour read every
        # 10 ms is 8.6 MB), for the phases' and iterations' shares after the run.
        self._t = array.array("d")
        self._energy = array.array("d")
        self._energy_known = True
        self._memory = array.array("d")
        self._recent: collections.deque[tuple[float, tuple[object, ...]]] = collections.deque(
            maxlen=RECENT
        )
        self._recent_lock = threading.Lock()

    def close(self) -> None:
        self.stop()
        if self._wake_r >= 0:
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1
        self._nvml.close()

    def start(
        self,
        t0: float,
        members: Callable[[], list[int] | None],
        interval: float,
        out: Path | None,
        by_process: bool | None = None,
        thread: bool = True,
    ) -> None:
        """Take the first reading and start sampling every ``interval`` (no more often than
        :data:`MIN_INTERVAL_S`).  ``by_process``: match the run's pids (default: where the
        backend lists them, and not from a nested PID namespace); ``thread=False``: the
        caller calls :meth:`sample` (tests)."""
        self._t0 = t0
        self._members = members
        self.interval = max(interval, MIN_INTERVAL_S)
        if by_process is None:
            listed = None
            with contextlib.suppress(OSError, EdgeprofError):
                listed = members()
            by_process = listed is not None and not nested_pid_namespace()
        self._devices = [_Device(g, by_process) for g in self.gpus]
        if out is not None:
            self._writer = SampleWriter(out / "gpu.csv", columns=COLUMNS)
        self._running = True
        try:
            self.sample()  # the state at the start, before the thread's first tick
        except EdgeprofError as exc:  # a GPU lost at the start: the run goes on without it
            self.error = exc
            return
        if thread:
            self._thread = threading.Thread(target=self._run, name="edgeprof-gpu", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread after one last reading (the state at the end).  Idempotent."""
        if not self._running:
            return
        self._running = False
        thread, self._thread = self._thread, None
        if thread is not None:
            os.write(self._wake_w, b"x")
            thread.join()
        if self.error is None:
            try:
                self.sample()
            except EdgeprofError as exc:
                self.error = exc
        if self._writer is not None:
            self._writer.close()

    def _run(self) -> None:
        leave_stops_to_main_thread()
        due = time.monotonic()
        try:
            while True:
                due += self.interval
                wait = due - time.monotonic()
                if wait < 0:  # fell behind: stay on the grid
                    due += math.ceil(-wait / self.interval) * self.interval
                    wait = due - time.monotonic()
                if select.select([self._wake_r], [], [], max(0.0, wait))[0]:
                    return
                self.sample()
        except EdgeprofError as exc:
            self.error = exc
        except Exception as exc:  # a bug must not vanish with the thread: report it
            self.error = EdgeprofError(f"{type(exc).__name__}: {exc}")

    def sample(self) -> None:
        pids = None
        with contextlib.suppress(OSError, EdgeprofError):  # a group going: the pids seen stand
            pids = self._members()
        if pids is not None:
            self._pids.update(pids)
        memory = 0
        energy = 0
        power: int | None = None
        utils: list[int] = []
        t = 0.0
        for d in self._devices:
            r = self._nvml.read(d.info.number)
            t = r.t - self._t0
            mine = d.add(r, self._pids)
            memory += mine or 0
            if r.energy_mj is None or d.first is None or d.first.energy_mj is None:
                self._energy_known = False
            else:
                energy += r.energy_mj - d.first.energy_mj
            if r.power_mw is not None:
                power = (power or 0) + r.power_mw
            if r.util_gpu is not None:
                utils.append(r.util_gpu)
            if self._writer is not None:
                self._writer.write(_row(t, r, mine, d))
        self.samples += 1
        self._t.append(t)
        self._memory.append(float(memory))
        self._energy.append(energy / 1000.0)
        totals = (
            memory,
            sum(utils) / len(utils) if utils else None,
            None if power is None else power / 1000.0,
            energy / 1000.0 if self._energy_known else None,
        )
        with self._recent_lock:
            self._recent.append((t, totals))

    def at(self, t: float) -> tuple[object, ...]:
        """:data:`SAMPLE_COLUMNS` for a ``samples.csv`` row at ``t`` (seconds since the
        spawn): the last reading at or before it, empty before the first."""
        with self._recent_lock:
            found = next((v for when, v in reversed(self._recent) if when <= t), None)
        return (None,) * len(SAMPLE_COLUMNS) if found is None else found

    def result(
        self,
        occurrences: Sequence[Occurrence] = (),
        iterations: Sequence[tuple[float, float, int]] = (),
        run_end: float | None = None,
        out: Path | None = None,
    ) -> GpuStats:
        devices = tuple(d.result() for d in self._devices)
        if self.error is not None:
            # Readings stopped before the run (a GPU lost): the energy since is unknown, not
            # 0 (with the NVML double, a run lost at 0.45 s of 0.85 s passed a 40 J budget).
            devices = tuple(dataclasses.replace(d, energy_j=None) for d in devices)
        energies = [d.energy_j for d in devices]
        energy = None if not devices or None in energies else math.fsum(e or 0.0 for e in energies)
        per_it = per_item = None
        phases: tuple[GpuPhase, ...] = ()
        if self._t:
            end = run_end if run_end is not None else self._t[-1]
            phases = self._phases(occurrences, end)
            if iterations and self._energy_known and energy is not None:
                inside = math.fsum(max(0.0, self._e(b) - self._e(a)) for a, b, _ in iterations)
                per_it = inside / len(iterations)
                items = sum(n for _, _, n in iterations)
                per_item = inside / items if items else None
        peak = max(self._memory) if self._memory and self._devices else None
        return GpuStats(
            driver=self.driver,
            selection=self.selection,
            devices=devices,
            memory_peak_bytes=None if peak is None else int(peak),
            energy_j=energy,
            samples=self.samples,
            interval_s=self.interval,
            energy_per_iteration_j=per_it,
            energy_per_item_j=per_item,
            phases=phases,
            path=None if out is None else str(out / "gpu.csv"),
        )

    def finish(
        self,
        occurrences: Sequence[Occurrence],
        iterations: Sequence[tuple[float, float, int]],
        run_end: float,
        out: Path | None,
        *,
        capped: bool,
    ) -> tuple[GpuStats, list[str]]:
        """The run's ``gpu`` block, with its limit (``capped``: the workload said it capped
        its GPU memory), and what the sampling has to say (warnings)."""
        stats = dataclasses.replace(
            self.result(occurrences, iterations, run_end, out),
            memory_limit_bytes=self.limit,
            memory_limit_enforced=capped,
            unified_memory=self.unified,
        )
        said = []
        if self.error is not None:
            said.append(f"GPU sampling stopped early: {self.error}")
        w = self._writer
        if w is not None and w.error is not None:
            said.append(
                f"{w.path} stops after {w.rows} rows: {w.error.strerror or w.error}; the "
                "GPU figures cover every reading"
            )
        if any(d.memory_source == "device" for d in stats.devices):
            said.append(
                "GPU memory is the device's used memory above its level at the start "
                "(anything else on the GPU counts too): the driver's pids could not be "
                "matched to the run's (edgeprof in a PID namespace of its own, a backend "
                "that cannot list them, or a GPU that gives no per-process memory)"
            )
        return stats, said

    def _e(self, t: float) -> float:
        return interpolate(self._t, self._energy, t) or 0.0

    def _phases(self, occurrences: Sequence[Occurrence], run_end: float) -> tuple[GpuPhase, ...]:
        by_name: dict[str, list[Occurrence]] = {}
        for o in sorted(occurrences, key=lambda o: o.start):
            by_name.setdefault(o.name, []).append(o)
        out = []
        for name, occs in by_name.items():
            energy: float | None = 0.0
            peak: float | None = None
            # Its stretches of time, as for its CPU: nested in itself (or open in 3 threads
            # at once) it had 3 times the energy, more than the run's.
            for start, end, _, _, _ in occurrence_spans(occs, run_end):
                if energy is not None and self.error is not None and end > self._t[-1]:
                    energy = None  # past the last reading: unknown (see result())
                if energy is not None:
                    energy += max(0.0, self._e(end) - self._e(start))
                inside = [
                    m for t, m in zip(self._t, self._memory, strict=True) if start <= t <= end
                ]
                if inside:
                    peak = max(inside) if peak is None else max(peak, *inside)
            out.append(
                GpuPhase(
                    name,
                    energy if self._energy_known and self._devices else None,
                    None if peak is None else int(peak),
                )
            )
        return tuple(out)


def _row(t: float, r: Reading, mine: int | None, d: _Device) -> tuple[object, ...]:
    first = d.first
    energy = (
        None
        if first is None or first.energy_mj is None or r.energy_mj is None
        else (r.energy_mj - first.energy_mj) / 1000.0
    )
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
