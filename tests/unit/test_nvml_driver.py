"""What a real driver and nvidia-ml-py do that the plain double does not, each modelled on
NVML's documentation or the bindings' source (nvidia-ml-py 13.615): GPUs counted but
refused, errors that hold for one reading only, bindings newer than the driver, per-process
samples only for busy periods, MIG slices.  Each failed on the reader before it handled it."""

from __future__ import annotations

import itertools
import types
from typing import Any

import pytest

from edgeprof.backends import nvml as nvml_module
from edgeprof.backends.nvml import Nvml, reason_names
from edgeprof.errors import ConfigError
from edgeprof.measure.gpu import GpuWatch
from edgeprof.measure.gpu_select import check_selection, open_watch
from tests.nvml_double import FakeGpu, MiB, NvmlDouble, NVMLError

RUN = [4001]
OTHER = 9999


def _watch(lib: NvmlDouble) -> GpuWatch:
    n = Nvml(lib)
    return GpuWatch(n, n.devices(), None)


class Refusing(NvmlDouble):
    """``nvmlDeviceGetCount_v2`` counts GPUs whose handle is then refused: NO_PERMISSION (4)
    under a scheduler's device rules, GPU_IS_LOST (15) for one that fell off the bus."""

    def __init__(self, gpus: list[FakeGpu], refused: dict[int, int]) -> None:
        super().__init__(gpus)
        self.refused = refused

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        if i in self.refused:
            raise NVMLError(self.refused[i])
        return super().nvmlDeviceGetHandleByIndex(i)


def test_a_gpu_counted_but_refused_is_left_out_and_named() -> None:
    gpus = [FakeGpu("GPU-a"), FakeGpu("GPU-b", minor=1), FakeGpu("GPU-c", minor=2)]
    with Nvml(Refusing(gpus, {1: 4})) as n:
        listed = n.devices()
        assert [(g.number, g.uuid) for g in listed] == [(0, "GPU-a"), (2, "GPU-c")]
        assert n.skipped == [(1, "this process may not open it")]


def test_a_gpu_lost_at_listing_does_not_fail_a_run_that_did_not_ask_for_it() -> None:
    lib = Refusing([FakeGpu("GPU-a"), FakeGpu("GPU-b", minor=1)], {1: 15})
    w = open_watch(None, lib_loader=lambda: Nvml(lib))
    assert w is not None
    try:
        assert [g.uuid for g in w.gpus] == ["GPU-a"]
        w.start(0.0, lambda: RUN, 0.01, None, by_process=True, thread=False)
        w.stop()
        stats, said = w.finish((), (), 1.0, None, capped=False)
    finally:
        w.close()
    assert [d.uuid for d in stats.devices] == ["GPU-a"]
    assert "GPU 1 is not measured: it fell off the bus" in said


class OldDriver(NvmlDouble):
    """Bindings ≥ 12.535 have the 535 name of the reasons call, which an older driver's
    library lacks: FUNCTION_NOT_FOUND (13); the old name still answers."""

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        raise NVMLError(13)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: int) -> int:
        return self._gpu("nvmlDeviceGetCurrentClocksThrottleReasons", h).reasons


def test_new_bindings_on_an_older_driver_read_the_reasons_by_the_old_name() -> None:
    lib = OldDriver([FakeGpu("GPU-a", reasons=0x1 | 0x4)])
    with Nvml(lib) as n:
        n.devices()
        assert [n.read(0).reasons for _ in range(2)] == [0x5, 0x5]
        assert n.supported(0)["reasons"] is True
    assert lib.calls.count("nvmlDeviceGetCurrentClocksThrottleReasons") == 2


class MismatchError(Exception):
    """pynvml's NVMLLibraryMismatchError: a plain Exception, not an NVMLError, raised by its
    version check when the driver lacks the call's versioned symbol."""


class NoV3(NvmlDouble):
    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        raise MismatchError("Unversioned function called and the pyNVML version does not match")


def test_a_bindings_mismatch_is_an_unsupported_call_not_a_crash() -> None:
    g = FakeGpu("GPU-a", used=1000 * MiB)
    lib = NoV3([g])
    w = _watch(lib)
    w.start(0.0, lambda: RUN, 0.01, None, by_process=True, thread=False)
    g.used += 300 * MiB
    w.sample()
    w.stop()
    (d,) = w.result().devices
    w.close()
    assert w.error is None
    assert (d.memory_source, d.memory_peak_bytes) == ("device", 300 * MiB)


def test_a_process_list_read_with_another_layout_is_not_trusted() -> None:
    """R535 grew the process structure without a new version: newer bindings on an older
    driver read pids past the kernel's limit and sizes past the GPU's."""
    g = FakeGpu("GPU-a", used=1000 * MiB, processes={4001: 2**62, 0xFFFFFFFF: 5})
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN, 0.01, None, by_process=True, thread=False)
    g.used += 200 * MiB
    w.stop()
    (d,) = w.result().devices
    w.close()
    assert (d.memory_source, d.memory_peak_bytes) == ("device", 200 * MiB)


def _flaky(lib: NvmlDouble, name: str, code: int, on_calls: set[int]) -> None:
    real = getattr(lib, name)
    count = itertools.count(1)

    def call(*args: Any) -> Any:
        if next(count) in on_calls:
            raise NVMLError(code)
        return real(*args)

    setattr(lib, name, call)


def test_one_failed_process_utilisation_read_keeps_the_source() -> None:
    """pynvml sizes the sample buffer by a first call: a sample arriving before its second
    is INSUFFICIENT_SIZE (7), for that reading only."""
    g = FakeGpu("GPU-a", util=90)
    lib = NvmlDouble([g])
    _flaky(lib, "nvmlDeviceGetProcessUtilization", 7, {1})
    w = _watch(lib)
    w.start(0.0, lambda: RUN, 0.01, None, by_process=True, thread=False)  # fails here
    g.process_samples = [(4001, 10, 30), (OTHER, 10, 60)]
    w.sample()
    w.stop()
    (d,) = w.result().devices
    w.close()
    assert d.utilization_source == "processes"
    assert d.utilization_avg_pct == pytest.approx(30.0)  # 90 % of the device, a third


def test_one_failed_process_list_does_not_count_another_jobs_memory() -> None:
    procs: dict[int, int | None] = {4001: 100 * MiB, OTHER: 1000 * MiB}
    g = FakeGpu("GPU-a", used=2000 * MiB, processes=procs)
    lib = NvmlDouble([g])
    _flaky(lib, "nvmlDeviceGetComputeRunningProcesses", 999, {2})  # UNKNOWN, once
    w = _watch(lib)
    w.start(0.0, lambda: RUN, 0.01, None, by_process=True, thread=False)
    w.sample()  # the failed reading
    procs[OTHER] = 9000 * MiB  # the other job grows by 8000 MiB
    g.used += 8000 * MiB
    w.sample()
    w.stop()
    (d,) = w.result().devices
    w.close()
    assert (d.memory_source, d.memory_peak_bytes) == ("processes", 100 * MiB)


def test_a_failed_first_energy_reading_keeps_the_runs_energy() -> None:
    g = FakeGpu("GPU-a", energy_mj=1_000_000)
    lib = NvmlDouble([g])
    _flaky(lib, "nvmlDeviceGetTotalEnergyConsumption", 10, {1})  # TIMEOUT, at the start
    w = _watch(lib)
    w.start(0.0, lambda: RUN, 0.01, None, by_process=True, thread=False)
    for _ in range(3):
        g.energy_mj += 10_000
        w.sample()
    w.stop()
    stats = w.result(iterations=[(0.0, 10.0, 1)])
    w.close()
    # From the first reading that had it (after the first 10 J) to the last.
    assert stats.energy_j == pytest.approx(20.0)
    assert stats.energy_per_iteration_j is not None


def test_utilisation_per_process_counts_the_periods_the_run_was_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NVML gives a process a sample only for a period it was busy in: a run busy in 1 of
    10 readings' periods had averaged its one 100 % sample."""
    clock = itertools.count(0.0, 0.05)  # two calls a reading: one reading every 0.1 s
    monkeypatch.setattr(nvml_module, "time", types.SimpleNamespace(monotonic=lambda: next(clock)))
    g = FakeGpu("GPU-a", util=0)
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN, 0.01, None, by_process=True, thread=False)
    for period in range(10):
        g.util = 100 if period == 4 else 0
        if period == 4:
            g.process_samples.append((4001, 1_000_000, 100))
        w.sample()
    w.stop()
    (d,) = w.result().devices
    w.close()
    assert d.utilization_source == "processes"
    assert d.utilization_avg_pct == pytest.approx(100 / 11)  # 1 of 11 intervals
    assert d.utilization_peak_pct == 100.0


def test_a_reason_this_reader_has_no_name_for_is_shown_by_its_bit() -> None:
    assert reason_names(0x1 | 0x4 | 0x400) == ("sw_power_cap", "0x400")


@pytest.mark.parametrize("given", ["MIG-5e3f0b7a-1c2d-5e6f-8a9b-0c1d2e3f4a5b", "0,MIG-1"])
def test_a_mig_slice_is_refused_by_its_form_with_why(given: str) -> None:
    with pytest.raises(ConfigError, match=r"a MIG slice .* cannot be measured"):
        check_selection(given)


def test_samples_from_before_the_run_do_not_shrink_its_share() -> None:
    """The first reading asks for every sample the driver still holds: another job's busy
    samples from before the run had counted against the run's share (a review's case:
    models run back to back on one GPU)."""
    g = FakeGpu("GPU-a", util=80, process_samples=[(OTHER, 5, 100), (OTHER, 6, 100)])
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN, 0.01, None, by_process=True, thread=False)
    g.process_samples += [(4001, 10, 80), (4001, 20, 80)]
    w.sample()
    w.stop()
    (d,) = w.result().devices
    w.close()
    assert d.utilization_avg_pct == pytest.approx(80.0)  # the run alone since it started


def test_a_failed_first_memory_reading_keeps_the_devices_rise() -> None:
    """The base of the device-wide figure is the first reading that had it."""
    g = FakeGpu("GPU-a", used=1000 * MiB)
    lib = NvmlDouble([g])
    _flaky(lib, "nvmlDeviceGetMemoryInfo", 999, {2})  # call 1 lists the GPU, 2 is the start
    w = _watch(lib)
    w.start(0.0, lambda: RUN, 0.01, None, by_process=False, thread=False)
    w.sample()  # the base: 1000 MiB
    g.used += 250 * MiB
    w.stop()
    (d,) = w.result().devices
    w.close()
    assert (d.memory_source, d.memory_peak_bytes) == ("device", 250 * MiB)


def test_a_failed_process_list_holds_the_runs_memory_in_the_series() -> None:
    """A reading without the list had put 0 in the run's memory series (samples.csv, the
    phases' GPU peaks): it holds the reading before."""
    g = FakeGpu("GPU-a", processes={4001: 300 * MiB})
    lib = NvmlDouble([g])
    _flaky(lib, "nvmlDeviceGetComputeRunningProcesses", 999, {2})
    w = _watch(lib)
    w.start(0.0, lambda: RUN, 0.01, None, by_process=True, thread=False)
    w.sample()  # the failed reading
    w.stop()
    w.close()
    assert list(w._memory) == [300 * MiB] * 3
