"""A run's GPUs (:mod:`edgeprof.measure.gpu`): ``--gpus`` selections, the arithmetic from
NVML's readings to ``result.gpu`` (the run's own memory, not another job's; utilisation per
process or device-wide, and which; energy per run, phase and iteration), ``gpu.csv``, and the
block's round trip through ``result.json``."""

from __future__ import annotations

import array
import csv
import json
from pathlib import Path

import pytest

from edgeprof.backends.nvml import GpuInfo, Nvml
from edgeprof.errors import ConfigError
from edgeprof.measure.gpu import GpuWatch
from edgeprof.measure.gpu_device import nested_pid_namespace
from edgeprof.measure.gpu_select import (
    check_selection,
    given_gpus,
    inherited,
    open_watch,
    select_gpus,
    visible_devices,
)
from edgeprof.measure.phases import Occurrence
from edgeprof.model import GpuStats, RunResult
from edgeprof.model.gpu import GPU_CSV_COLUMNS as COLUMNS
from tests.nvml_double import DRIVER_NOT_LOADED, FakeGpu, MiB, NvmlDouble

from .conftest import make_result

GPUS = [
    GpuInfo(0, "GPU-aaaa", "H100", 0, 80 * 1024 * MiB),
    GpuInfo(1, "GPU-bbbb", "H100", 1, 80 * 1024 * MiB),
    GpuInfo(2, "GPU-cccc", "L4", 2, 24 * 1024 * MiB),
]


@pytest.mark.parametrize(
    ("text", "numbers"),
    [(None, [0, 1, 2]), ("all", [0, 1, 2]), ("none", []), ("2", [0, 1]), ("2,0", [2, 0]),
     ("GPU-bbbb", [1]), ("1,GPU-bbbb", [1]), ("device=1", [1]), ("device=2,0", [2, 0])],
)  # fmt: skip
def test_selections(text: str | None, numbers: list[int]) -> None:
    assert [g.number for g in select_gpus(text, GPUS)] == numbers


@pytest.mark.parametrize(
    ("text", "message"),
    [("4", "3 visible here"), ("0", "one GPU by its index is device=0"), ("7", "3 visible here"),
     ("0,9", "no GPU '9'"), ("device=5", "no GPU '5'"),
     ("GPU-zzzz", r"GPUs: 0 \(GPU-aaaa\)")],
)  # fmt: skip
def test_a_selection_this_host_cannot_give_is_one_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        select_gpus(text, GPUS)


@pytest.mark.parametrize(
    "text", ["", "0;1", "all,1", "$(x)", "0 1", "gpu0", "0,,1", "device=", "device=all"]
)
def test_a_malformed_selection_is_refused_before_anything(text: str) -> None:
    with pytest.raises(ConfigError, match="expected all, none, a count"):
        check_selection(text)


def test_the_workload_sees_only_the_chosen_gpus_in_their_order() -> None:
    assert visible_devices(None, GPUS) == {}  # not asked: the environment is left alone
    assert visible_devices("2,0", select_gpus("2,0", GPUS)) == {
        "CUDA_VISIBLE_DEVICES": "GPU-cccc,GPU-aaaa"
    }
    assert visible_devices("none", []) == {"CUDA_VISIBLE_DEVICES": ""}


def test_nested_pid_namespace_is_any_namespace_but_the_initial_one(tmp_path: Path) -> None:
    other = tmp_path / "ns"  # an inode that is not the initial namespace's
    other.touch()
    assert nested_pid_namespace(other)
    assert not nested_pid_namespace(tmp_path / "absent")  # unknown: the pids are tried


def _watch(lib: NvmlDouble, selection: str | None = None) -> GpuWatch:
    n = Nvml(lib)
    return GpuWatch(n, select_gpus(selection, n.devices()), selection)


RUN_PIDS = [4001, 4002]
OTHER = 9999  # another job on the same GPU


def test_the_runs_memory_is_its_own_processes_not_another_jobs(tmp_path: Path) -> None:
    g = FakeGpu("GPU-a", processes={OTHER: 20 * 1024 * MiB})
    lib = NvmlDouble([g])
    w = _watch(lib)
    w.start(0.0, lambda: RUN_PIDS, 0.01, tmp_path, by_process=True, thread=False)
    for used in (100, 300, 200):
        g.processes = {OTHER: 20 * 1024 * MiB, 4001: used * MiB, 4002: 50 * MiB}
        w.sample()
    g.processes = {OTHER: 20 * 1024 * MiB}
    w.stop()
    stats = w.result(out=tmp_path)
    w.close()
    assert lib.initialised == 0
    (d,) = stats.devices
    assert d.memory_peak_bytes == 350 * MiB
    assert d.memory_source == "processes" and d.processes == 2
    assert stats.memory_peak_bytes == 350 * MiB
    assert stats.samples == 5  # start, three, end
    rows = list(csv.DictReader((tmp_path / "gpu.csv").open()))
    assert list(rows[0]) == list(COLUMNS)
    assert [int(r["memory_bytes"]) // MiB for r in rows] == [0, 150, 350, 250, 0]
    assert stats.path == str(tmp_path / "gpu.csv")


def test_a_pid_that_left_the_group_still_counts_while_the_driver_lists_it() -> None:
    g = FakeGpu("GPU-a")
    w = _watch(NvmlDouble([g]))
    members = [[4001], []]  # the process exits; the driver frees its context a little later
    w.start(0.0, lambda: members.pop(0) if members else [], 0.01, None, by_process=True,
            thread=False)  # fmt: skip
    g.processes = {4001: 64 * MiB}
    w.sample()
    w.stop()
    assert w.result().memory_peak_bytes == 64 * MiB


def test_in_a_nested_pid_namespace_memory_is_the_devices_rise() -> None:
    g = FakeGpu("GPU-a", used=1000 * MiB, processes={123456: 5000 * MiB})
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=False, thread=False)
    g.used = 1400 * MiB
    w.sample()
    g.used = 1100 * MiB
    w.stop()
    (d,) = w.result().devices
    assert d.memory_source == "device" and d.memory_peak_bytes == 400 * MiB


def test_utilisation_per_process_where_the_driver_gives_it() -> None:
    g = FakeGpu("GPU-a", util=90)
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    # Two of the run's pids share a sample period; another job's samples are not the run's.
    g.process_samples = [(4001, 10, 30), (4002, 10, 20), (OTHER, 10, 40), (4001, 20, 70)]
    w.sample()
    w.stop()
    (d,) = w.result().devices
    assert d.utilization_source == "processes"
    # The device's 90 % over the run, times the run's share of every process's samples
    # (120 of 160); its peak, the busiest period's sum.
    assert d.utilization_avg_pct == pytest.approx(90.0 * 120 / 160)
    assert d.utilization_peak_pct == 70.0


def test_device_wide_utilisation_where_it_does_not_and_the_json_says_so() -> None:
    g = FakeGpu("GPU-a", util=80, memory_util=20,
                unsupported={"nvmlDeviceGetProcessUtilization"})  # fmt: skip
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    w.sample()
    w.stop()
    (d,) = w.result().devices
    assert d.utilization_source == "device"
    assert d.utilization_avg_pct == pytest.approx(80.0)
    assert d.memory_utilization_avg_pct == pytest.approx(20.0)


def test_energy_power_clocks_and_throttle_reasons_over_several_gpus() -> None:
    a, b = FakeGpu("GPU-a"), FakeGpu("GPU-b", energy_mj=5_000_000)
    w = _watch(NvmlDouble([a, b]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    a.energy_mj += 12_500
    a.power_mw, a.sm_clock, a.temperature, a.reasons = 350_000, 1410, 71, 0x1 | 0x20
    b.energy_mj += 500
    w.sample()
    w.stop()
    stats = w.result()
    da, db = stats.devices
    assert (da.energy_j, db.energy_j) == (12.5, 0.5)
    assert stats.energy_j == pytest.approx(13.0)
    assert da.power_peak_w == 350.0 and da.sm_clock_min_mhz == 1410
    assert da.sm_clock_max_mhz == 1980 and da.temperature_peak_c == 71
    assert da.throttle_reasons == ("sw_thermal",) and db.throttle_reasons == ()
    assert da.power_avg_w is not None and da.power_avg_w > 0


def test_a_gpu_without_an_energy_counter_leaves_energy_unknown_not_zero() -> None:
    a = FakeGpu("GPU-a", unsupported={"nvmlDeviceGetTotalEnergyConsumption"})
    w = _watch(NvmlDouble([a, FakeGpu("GPU-b")]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    w.sample()
    w.stop()
    stats = w.result(iterations=[(0.0, 1.0, 1)])
    assert stats.devices[0].energy_j is None
    assert stats.energy_j is None and stats.energy_per_iteration_j is None
    assert stats.devices[0].power_avg_w == 70.0  # from the power samples instead


def _gridded(*joules: int) -> GpuWatch:
    """A watch of one GPU read at the start and after each of ``joules`` (its energy since
    the start), its readings' times replaced by a known grid: 0, 1, 2, … s (the last
    reading, at stop, at the grid's end again)."""
    g = FakeGpu("GPU-a")
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    for j in joules:
        g.energy_mj = 1_000_000 + j * 1000
        w.sample()
    w.stop()
    w._t[:] = array.array("d", [*map(float, range(len(joules) + 1)), float(len(joules))])
    return w


def test_energy_per_phase_and_iteration_add_up_within_the_runs() -> None:
    """The counter is interpolated at each boundary: iterations that tile part of the run
    sum to the energy over that part, never more than the run's."""
    w = _gridded(10, 30, 60)  # energy 0, 10, 30, 60 J at 0, 1, 2, 3 s
    its = [(0.5, 1.5, 4), (1.5, 2.5, 4)]
    stats = w.result(
        [Occurrence("load", 0.0, 1.0), Occurrence("infer", 1.0, 3.0), Occurrence("infer", 2.5)],
        its,
        run_end=3.0,
    )
    assert stats.energy_j == 60.0
    # 5→20 J and 20→45 J: 15 J and 25 J.
    assert stats.energy_per_iteration_j == pytest.approx(20.0)
    assert stats.energy_per_item_j == pytest.approx(5.0)
    assert 20.0 * len(its) <= stats.energy_j
    load, infer = stats.phases
    assert load.name == "load" and load.energy_j == pytest.approx(10.0)
    # 1→3 s: 50 J; the second occurrence (2.5 s, still open) overlaps it: its time, and
    # energy, are the first's already.
    assert infer.name == "infer" and infer.energy_j == pytest.approx(50.0)


def test_a_phase_nested_in_itself_or_open_in_threads_counts_its_energy_once() -> None:
    """As its CPU time: three levels of a recursive phase (or three threads in one) had
    three times the energy, more than the run's."""
    w = _gridded(10, 20, 30)
    nested = [Occurrence("step", 0.0, 3.0), Occurrence("step", 0.5, 2.5)]
    nested.append(Occurrence("step", 1.0, 2.0))
    (step,) = w.result(nested, run_end=3.0).phases
    assert step.energy_j == pytest.approx(30.0)  # the run's, once


def test_energy_after_the_gpu_was_lost_is_unknown_not_nothing() -> None:
    """Held at the last reading, the energy past it counted as 0 J: a run lost at 0.45 s of
    0.85 s passed a 40 J budget on 30.5 J of some 127 J."""
    g = FakeGpu("GPU-a")
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    g.energy_mj += 10_000
    w.sample()
    g.lost = True
    w.stop()
    w._t[:] = array.array("d", [0.0, 1.0])
    phases = [Occurrence("load", 0.0, 0.5), Occurrence("infer", 0.5, 2.0)]
    stats, said = w.finish(phases, [(1.0, 2.0, 1)], 2.0, None, capped=False)
    assert stats.energy_j is None and stats.devices[0].energy_j is None
    assert stats.energy_per_iteration_j is None
    load, infer = stats.phases
    assert load.energy_j == pytest.approx(5.0)  # before the last reading: known
    assert infer.energy_j is None
    assert said == ["GPU sampling stopped early: NVML: the GPU fell off the bus (NVML error 15)"]
    w.close()


def test_open_watch_without_gpus_or_nvml_is_none_and_asked_for_is_one_line() -> None:
    def no_driver() -> Nvml:
        return Nvml(NvmlDouble([], init_error=DRIVER_NOT_LOADED))

    assert open_watch(None, lib_loader=no_driver) is None
    with pytest.raises(ConfigError, match="--gpus all: NVML did not start"):
        open_watch("all", lib_loader=no_driver)
    empty = NvmlDouble([])
    assert open_watch(None, lib_loader=lambda: Nvml(empty)) is None
    assert empty.initialised == 0  # opened and closed: nothing held
    with pytest.raises(ConfigError, match="no GPU is visible here"):
        open_watch("1", lib_loader=lambda: Nvml(empty))
    assert empty.initialised == 0
    two = NvmlDouble([FakeGpu("GPU-a"), FakeGpu("GPU-b")])
    with pytest.raises(ConfigError, match="2 visible here"):
        open_watch("3", lib_loader=lambda: Nvml(two))
    assert two.initialised == 0
    assert open_watch("none", lib_loader=lambda: Nvml(two)) is None


def test_the_gpu_block_round_trips_through_result_json(tmp_path: Path) -> None:
    g = FakeGpu("GPU-a", processes={4001: 64 * MiB})
    w = _watch(NvmlDouble([g]), "all")
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    g.energy_mj += 2_000
    g.reasons = 0x4
    w.stop()
    stats = w.result([Occurrence("infer", 0.0, 1.0)], [(0.0, 0.5, 1)], run_end=1.0)
    r = make_result(gpu=stats)
    back = RunResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.gpu == stats
    assert isinstance(back.gpu, GpuStats) and back.gpu.devices[0].throttle_reasons == (
        "sw_power_cap",
    )
    assert RunResult.from_dict(json.loads(json.dumps(make_result().to_dict()))).gpu is None


@pytest.mark.parametrize(
    "gpu",
    [FakeGpu("GPU-a", unsupported={"nvmlDeviceGetComputeRunningProcesses"}),
     FakeGpu("GPU-a", processes={4001: None})],
    ids=["no process list", "memory not given"],
)  # fmt: skip
def test_without_the_runs_memory_per_process_it_is_the_devices_rise_not_zero(
    gpu: FakeGpu,
) -> None:
    w = _watch(NvmlDouble([gpu]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    gpu.used += 300 * MiB
    w.sample()
    w.stop()
    (d,) = w.result().devices
    assert d.memory_source == "device" and d.memory_peak_bytes == 300 * MiB


def test_a_gpu_without_graphics_processes_still_lists_compute_ones() -> None:
    g = FakeGpu("GPU-a", processes={4001: 10 * MiB},
                unsupported={"nvmlDeviceGetGraphicsRunningProcesses"})  # fmt: skip
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    w.sample()
    w.stop()
    (d,) = w.result().devices
    assert d.memory_source == "processes" and d.memory_peak_bytes == 10 * MiB


@pytest.mark.parametrize(
    ("listed", "numbers"),
    [(None, [0, 1, 2]), ("", []), ("2", [2]), ("2,0", [2, 0]), ("GPU-bbbb", [1]),
     ("GPU-cc", [2]), ("1,9,2", [1]), ("1,1", [1])],
)  # fmt: skip
def test_the_gpus_edgeprof_was_given_are_its_cuda_visible_devices(
    listed: str | None, numbers: list[int]
) -> None:
    """A Ray task or a Slurm job given GPU 2 has CUDA_VISIBLE_DEVICES=2: its runs measure and
    choose among that GPU, not NVML's first (NVML ignores the variable); CUDA stops at the
    first entry that names no GPU, and so does this."""
    env = {} if listed is None else {"CUDA_VISIBLE_DEVICES": listed}
    assert [g.number for g in inherited(GPUS, env)] == numbers


def test_a_count_is_taken_among_the_inherited_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = NvmlDouble([FakeGpu("GPU-a"), FakeGpu("GPU-b"), FakeGpu("GPU-c")])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    w = open_watch("1", lib_loader=lambda: Nvml(lib))
    assert w is not None and [g.uuid for g in w.gpus] == ["GPU-c"]
    w.close()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert open_watch(None, lib_loader=lambda: Nvml(lib)) is None
    with pytest.raises(ConfigError, match="CUDA_VISIBLE_DEVICES=''"):
        open_watch("1", lib_loader=lambda: Nvml(lib))
    assert lib.initialised == 0


def test_a_count_of_zero_suggests_an_index_that_is_there() -> None:
    # Given GPU 1 only (CUDA_VISIBLE_DEVICES=1), --gpus 0 had suggested device=0, which the
    # next try refused.
    given = inherited(GPUS, {"CUDA_VISIBLE_DEVICES": "1,2"})
    hint = r"2 visible here\); one GPU by its index is device=1 or device=2$"
    with pytest.raises(ConfigError, match=hint):
        select_gpus("0", given)
    assert [g.number for g in select_gpus("device=1", given)] == [1]


def test_a_gpu_lost_mid_run_ends_its_sampling_not_the_run() -> None:
    g = FakeGpu("GPU-a", processes={4001: 64 * MiB})
    w = _watch(NvmlDouble([g]))
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    g.lost = True
    w.stop()  # the last reading fails: said, not raised
    stats, said = w.finish([], [], 1.0, None, capped=False)
    assert stats.memory_peak_bytes == 64 * MiB  # what was read before stands
    assert said == ["GPU sampling stopped early: NVML: the GPU fell off the bus (NVML error 15)"]
    w.close()


def test_a_gpu_lost_before_the_first_reading_leaves_no_figures_and_a_warning() -> None:
    g = FakeGpu("GPU-a", lost=False)
    lib = NvmlDouble([g])
    w = _watch(lib)
    g.lost = True
    w.start(0.0, lambda: RUN_PIDS, 0.01, None, by_process=True, thread=False)
    w.stop()
    stats, said = w.finish([], [], 1.0, None, capped=False)
    (d,) = stats.devices
    assert (d.memory_peak_bytes, d.energy_j, stats.energy_j) == (None, None, None)
    assert said and said[0].startswith("GPU sampling stopped early")
    w.close()
    assert lib.initialised == 0


def test_what_a_run_is_given_of_its_gpus() -> None:
    lib = NvmlDouble([FakeGpu("GPU-a", minor=0), FakeGpu("GPU-b", minor=1)])
    w = open_watch("device=1", lib_loader=lambda: Nvml(lib))
    assert w is not None
    # A host backend's workload: the chosen GPU's UUID, and the other GPU's device denied.
    assert given_gpus("device=1", w, on_host=True) == (
        {"CUDA_VISIBLE_DEVICES": "GPU-b"},
        ("GPU-b",),
        ("c 195:0",),
    )
    # A container: the daemon is asked for the GPU; its devices are the daemon's to give.
    assert given_gpus("device=1", w, on_host=False) == ({}, ("GPU-b",), ())
    w.close()
    assert given_gpus(None, None, on_host=True) == ({}, None, ())
    assert given_gpus("none", None, on_host=True) == (
        {"CUDA_VISIBLE_DEVICES": ""},
        (),
        ("c 195:*",),
    )


def test_a_run_without_a_gpu_leaves_no_earlier_runs_gpu_csv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same output directory, a GPU run then a run on a host without one: the second
    run's directory holds no ``gpu.csv`` that ``result.json`` does not name."""
    import edgeprof
    from edgeprof.backends import nvml as nvml_module

    out = tmp_path / "out"
    lib = NvmlDouble([FakeGpu("GPU-a")])
    with monkeypatch.context() as m:
        m.setattr(nvml_module, "load", lambda *a, **k: lib)
        first = edgeprof.profile(["true"], backend="fake", interval=0.01, out_dir=out)
    assert first.gpu is not None and first.gpu.path == str(out / "gpu.csv")
    assert (out / "gpu.csv").is_file()
    second = edgeprof.profile(["true"], backend="fake", interval=0.01, out_dir=out)
    assert second.gpu is None
    assert sorted(p.name for p in out.iterdir()) == ["result.json", "samples.csv"]


def test_a_driver_whose_nvml_failed_is_one_line_and_a_cpu_host_none(tmp_path: Path) -> None:
    """Without --gpus, a host with no NVIDIA driver says nothing of GPUs; one with a driver
    whose NVML did not start says that its GPUs went unmeasured (the run had been silent)."""
    from edgeprof.backends.nvml import load

    said: list[str] = []

    def no_driver() -> Nvml:  # the driver's files absent: the bindings are never imported
        return Nvml(load(driver_files=[tmp_path / "nvidiactl"]))

    assert open_watch(None, lib_loader=no_driver, said=said) is None
    assert said == []

    def failed() -> Nvml:  # the driver's files there, NVML's library not loaded
        return Nvml(NvmlDouble([], init_error=DRIVER_NOT_LOADED))

    assert open_watch(None, lib_loader=failed, said=said) is None
    (line,) = said
    assert line.startswith("no GPU was measured: an NVIDIA driver is here, but NVML did not start")
