"""A run's GPUs: their sampling thread, and the arithmetic from NVML's raw readings
(:mod:`edgeprof.backends.nvml`) to the result's ``gpu`` block (:class:`edgeprof.model.GpuStats`);
which GPUs a run may use is :mod:`edgeprof.measure.gpu_select`'s, and one GPU's aggregates
:mod:`edgeprof.measure.gpu_device`'s.
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

from ..backends.helpers import leave_stops_to_main_thread
from ..backends.nvml import GpuInfo, Nvml
from ..errors import EdgeprofError
from ..model import GpuPhase, GpuStats
from ..model.gpu import GPU_CSV_COLUMNS, GPU_MIN_INTERVAL_S, GPU_SAMPLE_COLUMNS
from .gpu_device import Device, nested_pid_namespace
from .phases import Occurrence, occurrence_spans
from .samplefile import SampleWriter
from .timeline import interpolate

RECENT = 256
"""Readings kept for :meth:`GpuWatch.at`: the cgroup sampler's rows lag the present by at
most :data:`edgeprof.measure.sampler.DRAIN_S` (its native loop's batches), a few readings."""


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
        self._devices: list[Device] = []
        self._pids: set[int] = set()
        self._members: Callable[[], list[int] | None] = lambda: None
        self._t0 = 0.0
        self.interval = GPU_MIN_INTERVAL_S
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
        :data:`GPU_MIN_INTERVAL_S`).  ``by_process``: match the run's pids (default: where the
        backend lists them, and not from a nested PID namespace); ``thread=False``: the
        caller calls :meth:`sample` (tests)."""
        self._t0 = t0
        self._members = members
        self.interval = max(interval, GPU_MIN_INTERVAL_S)
        if by_process is None:
            listed = None
            with contextlib.suppress(OSError, EdgeprofError):
                listed = members()
            by_process = listed is not None and not nested_pid_namespace()
        self._devices = [Device(g, by_process) for g in self.gpus]
        if out is not None:
            self._writer = SampleWriter(out / "gpu.csv", columns=GPU_CSV_COLUMNS)
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
        known = True
        power: int | None = None
        utils: list[int] = []
        t = 0.0
        for d in self._devices:
            r = self._nvml.read(d.info.number)
            t = r.t - self._t0
            mine = d.add(r, self._pids)
            memory += mine or 0
            # Since the GPU's first reading that had the counter, up to its latest: a reading
            # that failed holds the one before (one failed read had made the run's, its
            # phases' and its iterations' energy unknown).
            if d.energy_first is None or d.energy_last is None:
                known = False
            else:
                energy += d.energy_last - d.energy_first
            if r.power_mw is not None:
                power = (power or 0) + r.power_mw
            if r.util_gpu is not None:
                utils.append(r.util_gpu)
            if self._writer is not None:
                self._writer.write(d.row(t, r, mine))
        self.samples += 1
        self._t.append(t)
        self._memory.append(float(memory))
        self._energy.append(energy / 1000.0)
        totals = (
            memory,
            sum(utils) / len(utils) if utils else None,
            None if power is None else power / 1000.0,
            energy / 1000.0 if known else None,
        )
        with self._recent_lock:
            self._recent.append((t, totals))

    def at(self, t: float) -> tuple[object, ...]:
        """:data:`GPU_SAMPLE_COLUMNS` for a ``samples.csv`` row at ``t`` (seconds since the
        spawn): the last reading at or before it, empty before the first."""
        with self._recent_lock:
            found = next((v for when, v in reversed(self._recent) if when <= t), None)
        return (None,) * len(GPU_SAMPLE_COLUMNS) if found is None else found

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
            if iterations and energy is not None:
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
        said = [f"GPU {i} is not measured: {why}" for i, why in self._nvml.skipped]
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

    def _energy_known(self) -> bool:
        """Every GPU gave its energy counter in two readings or more."""
        return bool(self._devices) and all(d.energy_mj() is not None for d in self._devices)

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
                    energy if self._energy_known() else None,
                    None if peak is None else int(peak),
                )
            )
        return tuple(out)
