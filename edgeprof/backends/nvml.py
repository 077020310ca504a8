"""The GPUs' raw counters over NVML (``nvidia-ml-py``, the ``gpu`` extra), read only.

Raw readings below, arithmetic above (:mod:`edgeprof.measure.gpu`), as for the cgroup files:
a :class:`Reading` holds what the driver said at one instant, in its own units (mJ, mW, MHz),
and ``None`` for a call this GPU does not support.  NVML's errors are translated here: a
missing library or driver is :class:`NvmlUnavailable` (the run goes on without a ``gpu``
block; ``--gpus`` and ``doctor`` say why), a GPU lost mid-run a
:class:`~edgeprof.errors.BackendError`.

Only queries: no call here sets a clock, a power limit, persistence, MIG or ECC mode, or
resets a GPU (``tests/unit/test_nvml.py`` checks every ``nvml*`` name this module uses
against a list of getters).  ``pynvml`` is imported on first use, so a host without it pays
nothing.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple, TypeVar

from ..errors import BackendError, EdgeprofError

INSTALL_HINT = "pip install 'edgeprof[gpu]' (nvidia-ml-py)"

THROTTLE_REASONS: tuple[tuple[int, str], ...] = (
    (0x0000000000000002, "applications_clocks"),
    (0x0000000000000004, "sw_power_cap"),
    (0x0000000000000008, "hw_slowdown"),
    (0x0000000000000010, "sync_boost"),
    (0x0000000000000020, "sw_thermal"),
    (0x0000000000000040, "hw_thermal"),
    (0x0000000000000080, "hw_power_brake"),
    (0x0000000000000100, "display_clocks"),
)
"""NVML's clock event reasons (``nvmlClocksEventReason*``, ``nvml.h``), by bit; bit 0 (the
GPU is idle) is no reason a run was slowed and is left out."""

_NOT_SUPPORTED = 3  # NVML_ERROR_NOT_SUPPORTED
_NO_PERMISSION = 4  # NVML_ERROR_NO_PERMISSION
_NOT_FOUND = 6  # NVML_ERROR_NOT_FOUND: "no data" for the sample queries
_GPU_IS_LOST = 15
_UNAVAILABLE = {9, 12, 18}  # DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, FUNCTION_NOT_FOUND


class NvmlUnavailable(EdgeprofError):
    """NVML cannot be used here; the message says why (no library, no driver, no GPU)."""


class GpuInfo(NamedTuple):
    """A GPU as NVML lists it."""

    number: int
    uuid: str
    name: str
    minor: int | None
    """``/dev/nvidia<minor>``, the device file a run opens (``None``: not given)."""
    memory_total: int | None


class Reading(NamedTuple):
    """One GPU at one instant, in NVML's units; ``None``: not supported (or not permitted)."""

    t: float
    """``time.monotonic()`` at the read's midpoint."""
    gpu: int
    processes: tuple[tuple[int, int | None], ...] | None
    """Every compute and graphics process on the GPU: (pid as the driver sees it, bytes used
    or ``None`` where the driver does not say); ``None``: no process list on this GPU."""
    memory_used: int | None
    util_gpu: int | None
    """Device-wide %, over the driver's last sample period."""
    util_memory: int | None
    process_util: tuple[tuple[int, int, int], ...] | None
    """New per-process samples since the last read: (pid, timestamp µs, SM %); ``None``:
    the driver gives none on this GPU."""
    energy_mj: int | None
    power_mw: int | None
    sm_clock_mhz: int | None
    memory_clock_mhz: int | None
    temperature_c: int | None
    reasons: int | None


_T = TypeVar("_T")


DRIVER_FILES = (Path("/dev/nvidiactl"), Path("/proc/driver/nvidia/version"))
"""Either is there wherever the NVIDIA driver is (a GPU container has the first)."""


def load(module: str = "pynvml", driver_files: Sequence[Path] | None = None) -> ModuleType:
    """The NVML bindings; tests replace this (``tests/nvml_double.py``).  Without the driver
    the bindings are not even imported: every run asks, and importing them took 19–36 ms
    here, which a run on a host without a GPU must not pay."""
    files = DRIVER_FILES if driver_files is None else driver_files
    if not any(p.exists() for p in files):
        raise NvmlUnavailable(
            "no NVIDIA driver on this host (neither " + " nor ".join(map(str, files)) + " exists)"
        )
    try:
        return importlib.import_module(module)
    except ImportError:
        raise NvmlUnavailable(f"NVML's Python bindings are not installed: {INSTALL_HINT}") from None


def _code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


class Nvml:
    """An open NVML session: :meth:`devices`, then :meth:`read` per GPU.  Closed once
    (``nvmlShutdown``) by :meth:`close`; a ``with`` block does it."""

    def __init__(self, lib: Any = None) -> None:
        self._lib = lib if lib is not None else load()
        self._error: type[BaseException] = getattr(self._lib, "NVMLError", Exception)
        try:
            self._lib.nvmlInit()
        except self._error as exc:
            raise NvmlUnavailable(
                f"NVML did not start: {exc} (is the NVIDIA driver loaded?)"
            ) from None
        except OSError as exc:
            raise NvmlUnavailable(f"NVML did not start: {exc}") from None
        self._open = True
        self._handles: dict[int, Any] = {}
        self._unsupported: set[tuple[int, str]] = set()
        self._last_util_us: dict[int, int] = {}

    def __enter__(self) -> Nvml:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._open:
            self._open = False
            with contextlib.suppress(Exception):  # nothing to act on at shutdown
                self._lib.nvmlShutdown()

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        try:
            return fn(*args)
        except self._error as exc:
            if _code(exc) == _GPU_IS_LOST:
                raise BackendError(f"NVML: the GPU fell off the bus ({exc})") from None
            if _code(exc) in _UNAVAILABLE:
                raise NvmlUnavailable(f"NVML: {exc}") from None
            raise

    def driver(self) -> str | None:
        try:
            v = self._call(self._lib.nvmlSystemGetDriverVersion)
        except self._error:
            return None
        return v.decode() if isinstance(v, bytes) else str(v)

    def devices(self) -> list[GpuInfo]:
        """Every GPU NVML lists, in its order (an error listing them: NvmlUnavailable)."""
        try:
            return self._devices()
        except self._error as exc:
            raise NvmlUnavailable(f"NVML could not list the GPUs: {exc}") from None

    def _devices(self) -> list[GpuInfo]:
        out = []
        for i in range(self._call(self._lib.nvmlDeviceGetCount)):
            h = self._call(self._lib.nvmlDeviceGetHandleByIndex, i)
            self._handles[i] = h
            uuid = self._call(self._lib.nvmlDeviceGetUUID, h)
            name = self._call(self._lib.nvmlDeviceGetName, h)
            minor = self._optional(i, "minor", self._lib.nvmlDeviceGetMinorNumber, h)
            mem = self._optional(i, "memory", self._lib.nvmlDeviceGetMemoryInfo, h)
            out.append(
                GpuInfo(
                    i,
                    uuid.decode() if isinstance(uuid, bytes) else str(uuid),
                    name.decode() if isinstance(name, bytes) else str(name),
                    minor,
                    None if mem is None else int(mem.total),
                )
            )
        return out

    def _optional(self, index: int, what: str, fn: Callable[..., _T], *args: Any) -> _T | None:
        """``fn(*args)``, or ``None`` where this GPU does not support it (asked once: a GPU
        that said "not supported" is not asked again) or did not permit it."""
        if (index, what) in self._unsupported:
            return None
        try:
            return self._call(fn, *args)
        except self._error as exc:
            if _code(exc) in (_NOT_SUPPORTED, _NO_PERMISSION):
                self._unsupported.add((index, what))
            return None  # any other answer: this reading lacks it, the next one asks again

    def supported(self, index: int) -> dict[str, bool]:
        """What could be read from GPU ``index`` in the reads so far (for ``doctor``)."""
        names = ("processes", "graphics", "utilization", "process_utilization", "energy", "power",
                 "clocks", "temperature", "reasons")  # fmt: skip
        return {n: (index, n) not in self._unsupported for n in names}

    def read(self, index: int) -> Reading:
        h = self._handles[index]
        lib = self._lib
        before = time.monotonic()
        # Compute processes are the run's CUDA contexts; graphics ones are asked apart (a GPU
        # may give one list and not the other), and without the compute list there is none.
        compute = self._optional(index, "processes", lib.nvmlDeviceGetComputeRunningProcesses, h)
        graphics = self._optional(index, "graphics", lib.nvmlDeviceGetGraphicsRunningProcesses, h)
        procs = None
        if compute is not None:
            procs = tuple(
                (int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory))
                for p in (*compute, *(graphics or ()))
            )
        mem = self._optional(index, "memory", lib.nvmlDeviceGetMemoryInfo, h)
        util = self._optional(index, "utilization", lib.nvmlDeviceGetUtilizationRates, h)
        energy = self._optional(index, "energy", lib.nvmlDeviceGetTotalEnergyConsumption, h)
        power = self._optional(index, "power", lib.nvmlDeviceGetPowerUsage, h)
        sm = self._optional(index, "clocks", lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_SM)
        memclk = self._optional(index, "clocks", lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_MEM)
        temp = self._optional(
            index, "temperature", lib.nvmlDeviceGetTemperature, h, lib.NVML_TEMPERATURE_GPU
        )
        reasons = self._optional(index, "reasons", _reasons_fn(lib), h)
        t = (before + time.monotonic()) / 2
        return Reading(
            t,
            index,
            procs,
            None if mem is None else int(mem.used),
            None if util is None else int(util.gpu),
            None if util is None else int(util.memory),
            self._process_util(index, h),
            None if energy is None else int(energy),
            None if power is None else int(power),
            sm,
            memclk,
            temp,
            reasons,
        )

    def _process_util(self, index: int, h: Any) -> tuple[tuple[int, int, int], ...] | None:
        """Per-process samples newer than the last ones seen.  NVML answers "not found" (and
        this binding raises on a plain success) when there are no new ones: an empty tuple,
        not "unsupported"."""
        if (index, "process_utilization") in self._unsupported:
            return None
        last = self._last_util_us.get(index, 0)
        try:
            samples: Sequence[Any] = self._call(self._lib.nvmlDeviceGetProcessUtilization, h, last)
        except self._error as exc:
            if _code(exc) in (0, _NOT_FOUND):
                return ()
            if _code(exc) in (_NOT_SUPPORTED, _NO_PERMISSION):
                self._unsupported.add((index, "process_utilization"))
            return None
        out = tuple((int(s.pid), int(s.timeStamp), int(s.smUtil)) for s in samples)
        if out:
            self._last_util_us[index] = max(ts for _, ts, _ in out)
        return out


def _reasons_fn(lib: ModuleType) -> Callable[..., int]:
    # Renamed in driver 535 (clock "event" reasons); the old name stays for older bindings.
    fn = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if fn is None:
        fn = lib.nvmlDeviceGetCurrentClocksThrottleReasons
    return fn  # type: ignore[no-any-return]


def reason_names(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in THROTTLE_REASONS if mask & bit)
