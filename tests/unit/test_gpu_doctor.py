"""``edgeprof doctor``'s GPU section (:func:`edgeprof.measure.doctor.gpu_findings`) against
the NVML double: a finding per GPU (what it is, what a run can measure on it), a GPU that
lacks the energy counter and per-process samples, two GPUs, a nested PID namespace, and no
bindings, no driver or no GPU as information, never as missing.

NVML is reached through :func:`edgeprof.backends.nvml.load`, patched here for every test of
this file, so the result is the same on a host with a GPU and one without."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from edgeprof.backends import nvml
from edgeprof.measure.doctor import NESTED_PID_NS, Finding, diagnose, gpu_findings, render
from tests.nvml_double import DRIVER_NOT_LOADED, GPU_IS_LOST, FakeGpu, MiB, NvmlDouble

H100 = "NVIDIA H100 80GB HBM3"
ALL = (
    "per-process memory, per-process utilisation, energy counter, power, clocks, "
    "temperature, throttle reasons"
)


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch) -> Callable[[NvmlDouble], NvmlDouble]:
    """Make ``lib`` what ``Nvml()`` opens."""

    def install(lib: NvmlDouble) -> NvmlDouble:
        monkeypatch.setattr(nvml, "load", lambda: lib)
        return lib

    return install


def test_one_gpu_that_measures_everything(use: Callable[[NvmlDouble], NvmlDouble]) -> None:
    lib = use(NvmlDouble([FakeGpu("GPU-aaaa")]))
    assert gpu_findings(nested=lambda: False) == [
        Finding("gpu 0", True, f"{H100} (GPU-aaaa), 80.0GiB, driver 550.54.15; measures {ALL}")
    ]
    assert lib.initialised == 0  # the session doctor opened is shut down


def test_a_gpu_without_energy_or_per_process_samples_says_so(
    use: Callable[[NvmlDouble], NvmlDouble],
) -> None:
    """An older or consumer GPU: no energy counter (before Volta), no per-process samples
    (utilisation is then the device's, whoever used it)."""
    use(
        NvmlDouble(
            [
                FakeGpu(
                    "GPU-tttt",
                    name="Tesla P4",
                    total=8 * 1024 * MiB,
                    unsupported={
                        "nvmlDeviceGetTotalEnergyConsumption",
                        "nvmlDeviceGetProcessUtilization",
                    },
                )
            ],
            driver="470.256.02",
        )
    )
    [f] = gpu_findings(nested=lambda: False)
    assert f.ok is True and f.topic == "gpu 0"
    assert f.detail == (
        "Tesla P4 (GPU-tttt), 8.0GiB, driver 470.256.02; measures per-process memory, "
        "utilisation (device-wide only), power, clocks, temperature, throttle reasons; "
        "not given: energy counter"
    )


def test_a_gpu_with_no_utilisation_at_all(use: Callable[[NvmlDouble], NvmlDouble]) -> None:
    unsupported = {"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetProcessUtilization",
                   "nvmlDeviceGetComputeRunningProcesses"}  # fmt: skip
    use(NvmlDouble([FakeGpu("GPU-aaaa", unsupported=unsupported)]))
    [f] = gpu_findings(nested=lambda: False)
    assert f.detail.endswith("; not given: per-process memory, utilisation")


def test_two_gpus_one_finding_each_in_nvmls_order(
    use: Callable[[NvmlDouble], NvmlDouble],
) -> None:
    use(
        NvmlDouble(
            [
                FakeGpu("GPU-aaaa"),
                FakeGpu(
                    "GPU-bbbb",
                    name="NVIDIA L4",
                    minor=1,
                    total=24 * 1024 * MiB,
                    unsupported={"nvmlDeviceGetTotalEnergyConsumption"},
                ),
            ]
        )
    )
    found = gpu_findings(nested=lambda: False)
    assert [(f.topic, f.ok) for f in found] == [("gpu 0", True), ("gpu 1", True)]
    assert found[0].detail.endswith(f"measures {ALL}")
    assert found[1].detail.startswith("NVIDIA L4 (GPU-bbbb), 24.0GiB, driver 550.54.15;")
    assert found[1].detail.endswith("; not given: energy counter")


def test_a_nested_pid_namespace_is_noted(use: Callable[[NvmlDouble], NvmlDouble]) -> None:
    use(NvmlDouble([FakeGpu("GPU-aaaa")]))
    found = gpu_findings(nested=lambda: True)
    assert found[-1] == Finding("gpu memory", None, NESTED_PID_NS)
    assert "device's used memory" in found[-1].detail


def test_no_bindings_is_information_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A driver (its device file stands in) but no ``pynvml`` to reach it."""
    real_load = nvml.load
    bindings = "edgeprof_test_no_such_module"
    monkeypatch.setattr(nvml, "load", lambda: real_load(bindings, driver_files=(tmp_path,)))
    [f] = gpu_findings()
    assert f.ok is None and f.topic == "gpu"
    assert "pip install 'edgeprof[gpu]'" in f.detail
    assert f.detail.startswith("not measured (a run's result has no gpu block): ")


def test_no_driver_files_is_information(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A host without the NVIDIA driver at all (most): said, not missing."""
    real_load = nvml.load
    monkeypatch.setattr(nvml, "load", lambda: real_load(driver_files=(tmp_path / "absent",)))
    [f] = gpu_findings()
    assert (f.topic, f.ok, f.fix) == ("gpu", None, None)
    assert "no NVIDIA driver" in f.detail


def test_no_driver_is_information(use: Callable[[NvmlDouble], NvmlDouble]) -> None:
    use(NvmlDouble([], init_error=DRIVER_NOT_LOADED))
    [f] = gpu_findings()
    assert f.ok is None and f.topic == "gpu"
    assert "NVML did not start" in f.detail and "driver loaded" in f.detail
    assert f.fix is None


def test_no_gpu_is_information_and_no_namespace_note(
    use: Callable[[NvmlDouble], NvmlDouble],
) -> None:
    lib = use(NvmlDouble([]))
    assert gpu_findings(nested=lambda: True) == [
        Finding("gpu", None, "NVML (driver 550.54.15) lists no GPU")
    ]
    assert lib.initialised == 0


def test_a_lost_gpu_is_missing_with_a_fix(use: Callable[[NvmlDouble], NvmlDouble]) -> None:
    lib = use(NvmlDouble([FakeGpu("GPU-aaaa"), FakeGpu("GPU-bbbb", minor=1)]))
    real_devices = nvml.Nvml.devices

    def listed_then_lost(self: nvml.Nvml) -> list[nvml.GpuInfo]:
        got = real_devices(self)
        lib.gpus[1].lost = True  # between the listing and the reading
        return got

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nvml.Nvml, "devices", listed_then_lost)
        found = gpu_findings(nested=lambda: False)
    assert [(f.topic, f.ok) for f in found] == [("gpu 0", True), ("gpu 1", False)]
    assert f"NVML: the GPU fell off the bus (NVML error {GPU_IS_LOST})" in found[1].detail
    assert found[1].fix is not None and "Xid" in found[1].fix


def test_diagnose_includes_the_gpu_section_and_doctor_prints_it(
    use: Callable[[NvmlDouble], NvmlDouble],
) -> None:
    use(NvmlDouble([FakeGpu("GPU-aaaa")]))
    # Not "gpu memory": whether this host's edgeprof is in a nested PID namespace is its own.
    gpu = [f for f in diagnose() if f.topic in ("gpu", "gpu 0")]
    assert [(f.topic, f.ok) for f in gpu] == [("gpu 0", True)]
    assert render(gpu) == (
        f"[ok  ] gpu 0: {H100} (GPU-aaaa), 80.0GiB, driver 550.54.15; measures {ALL}\n"
    )
