"""The NVML reader (:mod:`edgeprof.backends.nvml`) against the NVML double: raw readings in
the driver's units, unsupported calls as ``None`` (asked once), no-sample answers as no
samples, a lost GPU as a backend error, and nothing but getters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from edgeprof.backends import nvml
from edgeprof.backends.nvml import Nvml, NvmlUnavailable, reason_names
from edgeprof.errors import BackendError
from tests.nvml_double import DRIVER_NOT_LOADED, FakeGpu, MiB, NvmlDouble


def _two() -> NvmlDouble:
    return NvmlDouble(
        [
            FakeGpu("GPU-aaaa", processes={100: 300 * MiB, 200: 1024 * MiB}),
            FakeGpu("GPU-bbbb", name="NVIDIA L4", minor=1, total=24 * 1024 * MiB),
        ]
    )


def test_devices_and_a_reading_in_the_drivers_units() -> None:
    lib = _two()
    with Nvml(lib) as n:
        gpus = n.devices()
        assert [(g.number, g.uuid, g.name, g.minor) for g in gpus] == [
            (0, "GPU-aaaa", "NVIDIA H100 80GB HBM3", 0),
            (1, "GPU-bbbb", "NVIDIA L4", 1),
        ]
        assert gpus[1].memory_total == 24 * 1024 * MiB
        assert n.driver() == "550.54.15"
        lib.gpus[0].process_samples = [(100, 5_000, 40), (200, 5_000, 30)]
        lib.gpus[0].reasons = 0x1 | 0x4 | 0x40
        r = n.read(0)
    assert r.gpu == 0
    assert dict(r.processes or ()) == {100: 300 * MiB, 200: 1024 * MiB}
    assert (r.memory_used, r.energy_mj, r.power_mw) == (600 * MiB, 1_000_000, 70_000)
    assert (r.sm_clock_mhz, r.memory_clock_mhz, r.temperature_c) == (1980, 2619, 35)
    assert r.process_util == ((100, 5_000, 40), (200, 5_000, 30))
    assert reason_names(r.reasons or 0) == ("sw_power_cap", "hw_thermal")
    assert lib.initialised == 0  # shut down once, by the with block


def test_per_process_samples_are_new_ones_only_and_none_new_is_no_samples() -> None:
    lib = _two()
    lib.gpus[0].process_samples = [(100, 1_000, 10)]
    with Nvml(lib) as n:
        n.devices()
        assert n.read(0).process_util == ((100, 1_000, 10),)
        assert n.read(0).process_util == ()  # NVML: "not found" (nothing newer)
        lib.gpus[0].process_samples.append((100, 2_000, 20))
        assert n.read(0).process_util == ((100, 2_000, 20),)


def test_an_unsupported_call_is_none_and_not_asked_again() -> None:
    lib = _two()
    g = lib.gpus[1]
    g.unsupported = {
        "nvmlDeviceGetTotalEnergyConsumption",
        "nvmlDeviceGetProcessUtilization",
        "nvmlDeviceGetCurrentClocksEventReasons",
    }
    with Nvml(lib) as n:
        n.devices()
        first = n.read(1)
        asked = lib.calls.count("nvmlDeviceGetTotalEnergyConsumption")
        second = n.read(1)
        support = n.supported(1)
    for r in (first, second):
        assert (r.energy_mj, r.process_util, r.reasons) == (None, None, None)
        assert r.power_mw == 70_000  # the rest still read
    assert asked == 1 and lib.calls.count("nvmlDeviceGetTotalEnergyConsumption") == 1
    assert support["energy"] is False and support["power"] is True
    assert support["process_utilization"] is False


def test_a_process_whose_memory_the_driver_does_not_give_is_none() -> None:
    lib = NvmlDouble([FakeGpu("GPU-a", processes={7: None, 8: 5 * MiB})])
    with Nvml(lib) as n:
        n.devices()
        assert dict(n.read(0).processes or ()) == {7: None, 8: 5 * MiB}


def test_a_lost_gpu_is_a_backend_error() -> None:
    lib = _two()
    with Nvml(lib) as n:
        n.devices()
        lib.gpus[0].lost = True
        with pytest.raises(BackendError, match="fell off the bus"):
            n.read(0)


def test_no_driver_is_nvml_unavailable_and_nothing_left_open() -> None:
    lib = NvmlDouble([], init_error=DRIVER_NOT_LOADED)
    with pytest.raises(NvmlUnavailable, match="driver"):
        Nvml(lib)
    assert lib.initialised == 0


def test_without_the_bindings_the_message_names_the_extra(tmp_path: Path) -> None:
    driver = tmp_path / "nvidiactl"
    driver.touch()
    with pytest.raises(NvmlUnavailable, match=r"edgeprof\[gpu\]"):
        nvml.load("edgeprof_no_such_module", driver_files=(driver,))


def test_without_the_driver_the_bindings_are_not_imported(tmp_path: Path) -> None:
    with pytest.raises(NvmlUnavailable, match="no NVIDIA driver on this host"):
        nvml.load("edgeprof_no_such_module", driver_files=(tmp_path / "absent",))


GETTERS = re.compile(r"nvml(Init|Shutdown|SystemGet\w+|DeviceGet\w+)")


def test_the_reader_only_reads() -> None:
    """Every NVML call the reader can make is a query: never a setter (clocks, power limit,
    persistence, MIG, ECC) or a reset."""
    source = Path(nvml.__file__).read_text()
    names = set(re.findall(r"[.\"](nvml[A-Z]\w*)", source))  # lib.nvmlX and "nvmlX"
    assert names, "the reader names no NVML call"
    assert {n for n in names if not GETTERS.fullmatch(n)} == set()


def test_the_real_bindings_have_every_name_the_reader_and_the_double_use() -> None:
    """The double stands in for nvidia-ml-py: each call and constant it offers, and each the
    reader uses, is in the real module (a renamed call would otherwise pass here and fail
    on a GPU host)."""
    import pynvml  # the test extra installs it: missing, this fails (never a skip in CI)
    source = Path(nvml.__file__).read_text()
    used = set(re.findall(r"[.\"](nvml[A-Z]\w*|NVML_[A-Z_]+)", source))
    offered = {n for n in dir(NvmlDouble) if n.startswith(("nvml", "NVML"))}
    assert used <= offered | {"nvmlDeviceGetCurrentClocksThrottleReasons"}
    assert {n for n in used | offered if not hasattr(pynvml, n)} == set()


def test_the_real_bindings_without_the_library_are_one_line(tmp_path: Path) -> None:
    """On this host the driver's library is missing: the real nvmlInit fails, and that is
    NvmlUnavailable, not NVML's exception."""
    import pynvml  # noqa: F401  (the test extra installs it: missing, this fails)
    present = tmp_path / "nvidiactl"
    present.touch()
    try:
        lib = nvml.load(driver_files=(present,))
        session = Nvml(lib)
    except NvmlUnavailable as exc:
        assert "NVML" in str(exc) and "\n" not in str(exc)
    else:  # a host with the driver: it opens, and lists its GPUs
        with session:
            assert isinstance(session.devices(), list)
