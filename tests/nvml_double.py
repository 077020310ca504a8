"""A small NVML double with real-shaped answers, for the GPU reader's tests.

It answers the calls :mod:`edgeprof.backends.nvml` makes the way ``pynvml`` (nvidia-ml-py)
does: structures with the same attribute names and units (bytes, mJ, mW, MHz, °C), and
``NVMLError`` with the library's codes where a GPU does not support a call (code 3), where no
per-process utilisation sample is new (code 6, "not found"), or where the GPU fell off the bus
(code 15).  Each GPU's state is plain attributes a test changes between reads, or a callable
(``processes``) asked at each read, so a test can follow a real run's pids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

NOT_SUPPORTED = 3
NOT_FOUND = 6
DRIVER_NOT_LOADED = 9
GPU_IS_LOST = 15

MiB = 2**20


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


@dataclass
class FakeGpu:
    uuid: str
    name: str = "NVIDIA H100 80GB HBM3"
    minor: int = 0
    total: int = 80 * 1024 * MiB
    used: int = 600 * MiB
    processes: dict[int, int | None] | Callable[[], dict[int, int | None]] = field(
        default_factory=dict
    )
    """pid → bytes (``None``: the driver does not say)."""
    util: int = 0
    memory_util: int = 0
    process_samples: list[tuple[int, int, int]] = field(default_factory=list)
    """(pid, timestamp µs, SM %): returned by a per-process read when newer than asked."""
    energy_mj: int = 1_000_000
    power_mw: int = 70_000
    sm_clock: int = 1980
    memory_clock: int = 2619
    temperature: int = 35
    reasons: int = 0x1
    unsupported: set[str] = field(default_factory=set)
    """Names of the ``nvml*`` calls this GPU answers with "not supported"."""
    lost: bool = False


class NvmlDouble:
    """Stands in for the ``pynvml`` module (pass it as ``Nvml(lib=…)``, or return it from a
    patched :func:`edgeprof.backends.nvml.load`)."""

    NVMLError = NVMLError
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    def __init__(
        self, gpus: list[FakeGpu], driver: str = "550.54.15", init_error: int | None = None
    ) -> None:
        self.gpus = gpus
        self.driver = driver
        self.init_error = init_error
        self.calls: list[str] = []
        self.initialised = 0
        self.on_read: Callable[[FakeGpu], None] | None = None
        """Called at each per-GPU memory read (to move a GPU's state as time goes)."""

    def _gpu(self, name: str, handle: int) -> FakeGpu:
        self.calls.append(name)
        g = self.gpus[handle]
        if g.lost:
            raise NVMLError(GPU_IS_LOST)
        if name in g.unsupported:
            raise NVMLError(NOT_SUPPORTED)
        return g

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")
        self.initialised -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        if not 0 <= i < len(self.gpus):
            raise NVMLError(2)  # INVALID_ARGUMENT
        return i

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self._gpu("nvmlDeviceGetUUID", h).uuid

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._gpu("nvmlDeviceGetName", h).name

    def nvmlDeviceGetMinorNumber(self, h: int) -> int:
        return self._gpu("nvmlDeviceGetMinorNumber", h).minor

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        g = self._gpu("nvmlDeviceGetMemoryInfo", h)
        if self.on_read is not None:
            self.on_read(g)
        return SimpleNamespace(total=g.total, free=g.total - g.used, used=g.used)

    def _procs(self, g: FakeGpu) -> list[Any]:
        procs = g.processes() if callable(g.processes) else g.processes
        return [
            SimpleNamespace(pid=pid, usedGpuMemory=used, gpuInstanceId=0xFFFFFFFF,
                            computeInstanceId=0xFFFFFFFF)
            for pid, used in procs.items()
        ]  # fmt: skip

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        return self._procs(self._gpu("nvmlDeviceGetComputeRunningProcesses", h))

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: int) -> list[Any]:
        self._gpu("nvmlDeviceGetGraphicsRunningProcesses", h)
        return []

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        g = self._gpu("nvmlDeviceGetUtilizationRates", h)
        return SimpleNamespace(gpu=g.util, memory=g.memory_util)

    def nvmlDeviceGetProcessUtilization(self, h: int, last_seen: int) -> list[Any]:
        g = self._gpu("nvmlDeviceGetProcessUtilization", h)
        new = [s for s in g.process_samples if s[1] > last_seen]
        if not new:
            raise NVMLError(NOT_FOUND)
        return [
            SimpleNamespace(pid=p, timeStamp=ts, smUtil=sm, memUtil=0, encUtil=0, decUtil=0)
            for p, ts, sm in new
        ]

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        return self._gpu("nvmlDeviceGetTotalEnergyConsumption", h).energy_mj

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self._gpu("nvmlDeviceGetPowerUsage", h).power_mw

    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int:
        g = self._gpu("nvmlDeviceGetClockInfo", h)
        return g.sm_clock if kind == self.NVML_CLOCK_SM else g.memory_clock

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return self._gpu("nvmlDeviceGetTemperature", h).temperature

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return self._gpu("nvmlDeviceGetCurrentClocksEventReasons", h).reasons
