"""The GPUs' raw counters over NVML (``nvidia-ml-py``, the ``gpu`` extra), read only.

Raw readings below, arithmetic above (:mod:`edgeprof.measure.gpu`), as for the cgroup files:
a :class:`Reading` holds what the driver said at one instant, in its own units (mJ, mW, MHz),
and ``None`` for a call this GPU does not support or that failed this once (``failed`` names
those: one error must not change how a whole run is measured).  NVML's errors are translated
here: a missing library or driver is :class:`NvmlUnavailable` (the run goes on without a
``gpu`` block; ``--gpus`` and ``doctor`` say why), a GPU lost mid-run a
:class:`~edgeprof.errors.BackendError`; a GPU this process may not open, or lost, when they
are listed is left out (:attr:`Nvml.skipped`), as NVML counts GPUs it then refuses.

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
GPU is idle) is no reason a run was slowed and is left out.  A bit a newer driver adds is
shown by its value (:func:`reason_names`), not dropped."""

_NOT_SUPPORTED = 3  # NVML_ERROR_NOT_SUPPORTED
_NO_PERMISSION = 4  # NVML_ERROR_NO_PERMISSION
_NOT_FOUND = 6  # NVML_ERROR_NOT_FOUND: "no data" for the sample queries
_FUNCTION_NOT_FOUND = 13  # the bindings have the call, this driver's library lacks it
_GPU_IS_LOST = 15
_UNAVAILABLE = {9, 12, 18}  # DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, LIB_RM_VERSION_MISMATCH
_UNSUPPORTED = {_NOT_SUPPORTED, _NO_PERMISSION, _FUNCTION_NOT_FOUND}
"""Answers that stand for the whole run: the call is not asked again."""
LOST = "it fell off the bus"
_SKIPPED = {_NO_PERMISSION: "this process may not open it", _GPU_IS_LOST: LOST}
"""Why a GPU NVML counts is left out when they are listed: ``nvmlDeviceGetCount_v2`` counts
GPUs whose handle the caller is then refused (NVML's documentation of it), as under a job
scheduler's device rules."""
_REASON_CALLS = {
    "reasons_event": "nvmlDeviceGetCurrentClocksEventReasons",
    "reasons_throttle": "nvmlDeviceGetCurrentClocksThrottleReasons",
}
PID_MAX = 1 << 22
"""``PID_MAX_LIMIT`` on 64-bit Linux: a larger pid in a process list is a misread structure."""


class NvmlUnavailable(EdgeprofError):
    """NVML cannot be used here; the message says why (no library, no driver, no GPU)."""


class NoNvidiaDriver(NvmlUnavailable):
    """No NVIDIA driver on this host: a CPU host, where a run has nothing of a GPU to say
    (where there is a driver, NVML's failure is worth a line: the GPUs go unmeasured)."""


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
    failed: frozenset[str] = frozenset()
    """The calls that failed this once (an error other than "not supported"): their fields
    are ``None`` for this reading only."""


_T = TypeVar("_T")


DRIVER_FILES = (Path("/dev/nvidiactl"), Path("/proc/driver/nvidia/version"))
"""Either is there wherever the NVIDIA driver is (a GPU container has the first)."""


def load(module: str = "pynvml", driver_files: Sequence[Path] | None = None) -> ModuleType:
    """The NVML bindings; tests replace this (``tests/nvml_double.py``).  Without the driver
    the bindings are not even imported: every run asks, and importing them took 19–36 ms
    here, which a run on a host without a GPU must not pay."""
    files = DRIVER_FILES if driver_files is None else driver_files
    if not any(p.exists() for p in files):
        raise NoNvidiaDriver(
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
        self._totals: dict[int, int | None] = {}
        self._unsupported: set[tuple[int, str]] = set()
        self._failed: set[str] = set()
        self._last_util_us: dict[int, int] = {}
        self.skipped: list[tuple[int, str]] = []
        """GPUs NVML counts but that could not be listed: (index, why)."""

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
        self.skipped = []
        for i in range(self._call(self._lib.nvmlDeviceGetCount)):
            try:
                out.append(self._device(i))
            except BackendError:  # lost: _call's translation of GPU_IS_LOST
                self.skipped.append((i, _SKIPPED[_GPU_IS_LOST]))
            except self._error as exc:
                if _code(exc) != _NO_PERMISSION:
                    raise
                self.skipped.append((i, _SKIPPED[_NO_PERMISSION]))
        return out

    def _device(self, i: int) -> GpuInfo:
        h = self._call(self._lib.nvmlDeviceGetHandleByIndex, i)
        self._handles[i] = h
        uuid = self._call(self._lib.nvmlDeviceGetUUID, h)
        name = self._call(self._lib.nvmlDeviceGetName, h)
        minor = self._optional(i, "minor", self._lib.nvmlDeviceGetMinorNumber, h)
        mem = self._optional(i, "memory", self._lib.nvmlDeviceGetMemoryInfo, h)
        self._totals[i] = None if mem is None else int(mem.total)
        return GpuInfo(
            i,
            uuid.decode() if isinstance(uuid, bytes) else str(uuid),
            name.decode() if isinstance(name, bytes) else str(name),
            minor,
            self._totals[i],
        )

    def _optional(self, index: int, what: str, fn: Callable[..., _T], *args: Any) -> _T | None:
        """``fn(*args)``, or ``None`` where this GPU does not support it (asked once: a GPU
        that said "not supported" is not asked again), did not permit it, or failed this
        once (named in the reading's ``failed``; the next reading asks again)."""
        if (index, what) in self._unsupported:
            return None
        try:
            return self._call(fn, *args)
        except EdgeprofError:  # lost, or NVML gone: _call's, for the caller
            raise
        except self._error as exc:
            if _code(exc) in _UNSUPPORTED:
                self._unsupported.add((index, what))
            else:
                self._failed.add(what)
            return None
        except Exception:
            # Not the bindings' NVMLError: their own check that the driver has the call's
            # version (pynvml's NVMLLibraryMismatchError), which no later reading changes.
            self._unsupported.add((index, what))
            return None

    def supported(self, index: int) -> dict[str, bool]:
        """What could be read from GPU ``index`` in the reads so far (for ``doctor``)."""
        names = ("processes", "graphics", "utilization", "process_utilization", "energy", "power",
                 "sm_clock", "memory_clock", "temperature", "reasons")  # fmt: skip
        can = {n: (index, n) not in self._unsupported for n in names}
        can["clocks"] = can.pop("sm_clock") and can.pop("memory_clock")
        return can

    def read(self, index: int) -> Reading:
        h = self._handles[index]
        lib = self._lib
        self._failed = set()
        before = time.monotonic()
        # Compute processes are the run's CUDA contexts; graphics ones are asked apart (a GPU
        # may give one list and not the other), and without the compute list there is none.
        compute = self._optional(index, "processes", lib.nvmlDeviceGetComputeRunningProcesses, h)
        graphics = self._optional(index, "graphics", lib.nvmlDeviceGetGraphicsRunningProcesses, h)
        procs = None
        if compute is not None:
            procs = self._processes(index, (*compute, *(graphics or ())))
        mem = self._optional(index, "memory", lib.nvmlDeviceGetMemoryInfo, h)
        util = self._optional(index, "utilization", lib.nvmlDeviceGetUtilizationRates, h)
        energy = self._optional(index, "energy", lib.nvmlDeviceGetTotalEnergyConsumption, h)
        power = self._optional(index, "power", lib.nvmlDeviceGetPowerUsage, h)
        clock = lib.nvmlDeviceGetClockInfo
        sm = self._optional(index, "sm_clock", clock, h, lib.NVML_CLOCK_SM)
        memclk = self._optional(index, "memory_clock", clock, h, lib.NVML_CLOCK_MEM)
        temp = self._optional(
            index, "temperature", lib.nvmlDeviceGetTemperature, h, lib.NVML_TEMPERATURE_GPU
        )
        reasons = self._reasons(index, h)
        util_samples = self._process_util(index, h)
        t = (before + time.monotonic()) / 2
        return Reading(
            t,
            index,
            procs,
            None if mem is None else int(mem.used),
            None if util is None else int(util.gpu),
            None if util is None else int(util.memory),
            util_samples,
            None if energy is None else int(energy),
            None if power is None else int(power),
            sm,
            memclk,
            temp,
            reasons,
            frozenset(self._failed),
        )

    def _processes(
        self, index: int, listed: Sequence[Any]
    ) -> tuple[tuple[int, int | None], ...] | None:
        """(pid, bytes) of the listed processes; ``None`` (for the run) where an entry cannot
        be one: bindings newer than the driver read its structures with another layout
        (R535 grew the process struct without a new version), giving pids past the
        kernel's and sizes past the GPU's."""
        total = self._totals.get(index)
        out = tuple(
            (int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory))
            for p in listed
        )
        if any(
            not 0 < pid <= PID_MAX or (used is not None and total is not None and used > total)
            for pid, used in out
        ):
            self._unsupported.add((index, "processes"))
            return None
        return out

    def _reasons(self, index: int, h: Any) -> int | None:
        """The clock event reasons.  The call was renamed in driver 535; bindings from then
        on have the new name, which an older driver's library lacks (FUNCTION_NOT_FOUND),
        and the old name then still answers.  ``reasons`` is unsupported once neither is."""
        for what in ("reasons_event", "reasons_throttle"):
            fn = getattr(self._lib, _REASON_CALLS[what], None)
            if fn is None:
                self._unsupported.add((index, what))
                continue
            value: int | None = self._optional(index, what, fn, h)
            if (index, what) not in self._unsupported:
                return value  # an answer, or a failure of this reading only
        self._unsupported.add((index, "reasons"))
        return None

    def _process_util(self, index: int, h: Any) -> tuple[tuple[int, int, int], ...] | None:
        """Per-process samples newer than the last ones seen.  NVML answers "not found" (and
        this binding raises on a plain success) when there are no new ones: an empty tuple,
        not "unsupported"."""
        if (index, "process_utilization") in self._unsupported:
            return None
        last = self._last_util_us.get(index, 0)
        try:
            samples: Sequence[Any] = self._call(self._lib.nvmlDeviceGetProcessUtilization, h, last)
        except EdgeprofError:
            raise
        except self._error as exc:
            if _code(exc) in (0, _NOT_FOUND):
                return ()
            if _code(exc) in _UNSUPPORTED:
                self._unsupported.add((index, "process_utilization"))
                return None
            # Failed this once (pynvml sizes its buffer by a first call, so a sample that
            # arrives between its two calls is INSUFFICIENT_SIZE): the samples since
            # ``last`` are asked again at the next reading.
            self._failed.add("process_utilization")
            return ()
        except Exception:  # the bindings' own mismatch check (see _optional)
            self._unsupported.add((index, "process_utilization"))
            return None
        out = tuple((int(s.pid), int(s.timeStamp), int(s.smUtil)) for s in samples)
        if out:
            self._last_util_us[index] = max(ts for _, ts, _ in out)
        return out


def reason_names(mask: int) -> tuple[str, ...]:
    """The reasons in ``mask``; a bit without a name here by its value (``0x400``)."""
    known = 0x1  # idle: no reason a run was slowed
    names = []
    for bit, name in THROTTLE_REASONS:
        known |= bit
        if mask & bit:
            names.append(name)
    rest = mask & ~known
    names += [hex(1 << b) for b in range(rest.bit_length()) if rest >> b & 1]
    return tuple(names)
