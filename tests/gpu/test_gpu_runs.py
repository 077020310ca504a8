"""Runs of CUDA workloads (PyTorch) measured by edgeprof over NVML, checked against what
``nvidia-smi`` (the driver's own report, read by the workload while it holds its memory)
says: the run's GPU memory, its energy per run and per iteration, another job's memory on
the same GPU left out, and ``--gpus`` showing the workload only the chosen GPU.

Where edgeprof matches NVML's pids to the run's (``memory_source: processes``), the figure
to match is nvidia-smi's line for the workload's pid; where it cannot (a nested PID
namespace: the driver reports another namespace's pids) it is the devices' used memory above
their level before the run, which is what edgeprof then measures (``memory_source:
device``).  Both within 5 % or 8 MiB: the same driver counter read a few samples apart, the
footprint steady meanwhile (the workload records it once it is final and holds it until
edgeprof sampled it again).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import edgeprof
from edgeprof import Termination
from tests.conftest import schema_errors

from .conftest import HERE, GpuHost, MiB, device_used_mib, wait_for

PY = sys.executable
HOLD = HERE / "cuda_hold.py"
NEIGHBOUR = HERE / "cuda_neighbour.py"
VISIBLE = HERE / "cuda_visible.py"
HELD_MIB = 1024
ITERATIONS = 8
BATCH = 4
INTERVAL_S = 0.05

Spawn = Callable[..., "subprocess.Popen[str]"]


@dataclass(frozen=True)
class HoldRun:
    result: dict[str, Any]
    """Its result.json."""
    record: dict[str, Any]
    """What cuda_hold.py recorded while holding its memory (pids, nvidia-smi's figures)."""
    before: dict[str, int]
    """Every GPU's used memory (uuid → MiB) before the run."""
    out: Path


def run_hold(base: Path, *extra: str, gpus: str = "all") -> HoldRun:
    out, record = base / "run", base / "record.json"
    before = device_used_mib()
    command = [PY, str(HOLD), "--mib", str(HELD_MIB), "--iterations", str(ITERATIONS),
               "--batch", str(BATCH), "--record", str(record), "--gpu-csv", str(out / "gpu.csv"),
               *extra]  # fmt: skip
    r = edgeprof.profile(command, gpus=gpus, out_dir=out, interval=INTERVAL_S, timeout=300)
    assert (r.termination, r.exit_code) == (Termination.EXITED, 0), r.warnings
    result = json.loads((out / "result.json").read_text())
    assert result["gpu"] is not None, result["warnings"]
    return HoldRun(result, json.loads(record.read_text()), before, out)


def expected_bytes(run: HoldRun) -> int:
    """What nvidia-smi says the run held, as edgeprof's ``memory_source`` counts it."""
    gpu = run.result["gpu"]
    sources = {d["memory_source"] for d in gpu["devices"]}
    assert len(sources) == 1, gpu["devices"]
    rec = run.record
    if sources == {"processes"}:
        own = [mib for pid, mib in rec["apps"] if pid in rec["pids"]]
        assert own, (
            f"nvidia-smi lists none of the workload's pids {rec['pids']} (its compute apps: "
            f"{rec['apps']}): the driver reports another PID namespace's pids, yet edgeprof "
            f"matched pids (memory_source: processes; peak {gpu['memory_peak_bytes']} B): "
            "edgeprof.measure.gpu.nested_pid_namespace() did not see the namespace"
        )
        return int(sum(own)) * MiB
    measured = {d["uuid"] for d in gpu["devices"]}
    return sum(
        (mib - run.before[uuid]) * MiB
        for uuid, mib in rec["device_used_mib"].items()
        if uuid in measured
    )


def assert_close(measured: int | None, expected: int) -> None:
    assert measured is not None
    tolerance = max(0.05 * expected, 8 * MiB)
    assert abs(measured - expected) <= tolerance, (
        f"edgeprof {measured / MiB:.1f} MiB, nvidia-smi {expected / MiB:.1f} MiB"
    )


@pytest.fixture(scope="module")
def hold_run(gpu_host: GpuHost, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HoldRun]:
    """One run of cuda_hold.py, shared by the memory and energy checks (a run costs seconds
    of PyTorch and CUDA start-up)."""
    with pytest.MonkeyPatch.context() as mp:  # no lease outside the test's own directory
        mp.setenv("EDGEPROF_LEASE_DIR", str(tmp_path_factory.mktemp("leases")))
        yield run_hold(tmp_path_factory.mktemp("hold"))


Record = Callable[[str, object], None]
"""pytest's ``record_property``: the figures compared, kept in the tier's JUnit file."""


def test_the_runs_gpu_memory_is_what_nvidia_smi_says_it_held(
    hold_run: HoldRun, gpu_host: GpuHost, record_property: Record
) -> None:
    assert not schema_errors(hold_run.out / "result.json")
    gpu = hold_run.result["gpu"]
    want = "processes" if gpu_host.by_process else "device"
    assert [d["memory_source"] for d in gpu["devices"]] == [want] * len(gpu_host.gpus)
    expected = expected_bytes(hold_run)
    record_property("memory_source", want)
    record_property("edgeprof_peak_mib", gpu["memory_peak_bytes"] / MiB)
    record_property("nvidia_smi_mib", expected / MiB)
    assert expected >= HELD_MIB * MiB  # at least its tensor: the figure is the workload's
    assert_close(gpu["memory_peak_bytes"], expected)
    infer = {p["name"]: p for p in gpu["phases"]}["infer"]
    assert infer["memory_peak_bytes"] >= HELD_MIB * MiB  # held through the whole phase
    assert (hold_run.out / "gpu.csv").exists() and gpu["samples"] >= 3


def test_energy_per_run_and_per_iteration(hold_run: HoldRun, record_property: Record) -> None:
    """The driver's energy counter grows while the GPU works: the run's energy is positive,
    and so is each iteration's; the iterations are disjoint parts of the run, so their sum
    is at most the run's (the same counter, interpolated, is non-decreasing)."""
    gpu, latency = hold_run.result["gpu"], hold_run.result["latency"]
    assert (latency["count"], latency["items"]) == (ITERATIONS, ITERATIONS * BATCH)
    energy = gpu["energy_j"]
    assert energy is not None and energy > 0
    assert energy == pytest.approx(sum(d["energy_j"] for d in gpu["devices"]))
    per_iteration = gpu["energy_per_iteration_j"]
    assert per_iteration is not None and per_iteration > 0
    assert per_iteration * ITERATIONS <= energy * (1 + 1e-9)
    assert gpu["energy_per_item_j"] == pytest.approx(per_iteration / BATCH)
    infer = {p["name"]: p for p in gpu["phases"]}["infer"]
    for name, value in [("run_j", energy), ("infer_phase_j", infer["energy_j"]),
                        ("per_iteration_j", per_iteration), ("iterations", ITERATIONS),
                        ("wall_s", hold_run.result["wall_s"])]:  # fmt: skip
        record_property(name, value)
    assert per_iteration * ITERATIONS <= infer["energy_j"] * (1 + 1e-9) + 1e-9
    assert infer["energy_j"] <= energy * (1 + 1e-9)


def test_another_jobs_memory_on_the_same_gpu_is_not_counted(
    gpu_host: GpuHost, spawn: Spawn, tmp_path: Path, record_property: Record
) -> None:
    """A neighbour on GPU 0 holds 512 MiB from before the run and, where edgeprof matches
    pids, allocates 1 GiB more while the run holds its own: neither is the run's.  (Where it
    cannot match pids, the device's memory above its level at the start is the run's, and
    only the memory held from before can be left out: the neighbour does not grow there.)"""
    ready, trigger, ack = tmp_path / "ready", tmp_path / "trigger", tmp_path / "ack"
    grows = gpu_host.by_process
    args = [PY, str(NEIGHBOUR), "--mib", "512", "--ready", str(ready)]
    if grows:
        args += ["--grow-mib", "1024", "--trigger", str(trigger), "--ack", str(ack)]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu_host.gpus[0].uuid}
    neighbour = spawn(args, env=env)
    wait_for(ready, neighbour)
    run = run_hold(tmp_path, *(["--trigger", str(trigger), "--ack", str(ack)] if grows else []))
    assert neighbour.poll() is None  # it held its memory all through the run
    gpu, expected = run.result["gpu"], expected_bytes(run)
    assert_close(gpu["memory_peak_bytes"], expected)
    theirs = [mib for pid, mib in run.record["apps"] if pid == neighbour.pid]
    record_property("edgeprof_peak_mib", gpu["memory_peak_bytes"] / MiB)
    record_property("nvidia_smi_run_mib", expected / MiB)
    record_property("nvidia_smi_neighbour_mib", theirs)
    if theirs:  # nvidia-smi names it: the run's peak is well below the two together
        assert gpu["memory_peak_bytes"] < expected + theirs[0] * MiB // 2
    if grows:
        assert ack.exists()
        assert sum(d["processes"] for d in gpu["devices"]) == 1  # the workload, not it


@pytest.mark.parametrize("how", ["uuid", "count"])
def test_a_selection_shows_the_workload_only_the_chosen_gpu(
    how: str, gpu_host: GpuHost, tmp_path: Path
) -> None:
    """``gpus=<uuid>`` (the last GPU NVML lists) or ``gpus="1"`` (the first one): the
    workload's ``CUDA_VISIBLE_DEVICES`` is that GPU's UUID, CUDA shows it one device, that
    device is the chosen GPU, and the result measures that GPU alone."""
    chosen = gpu_host.gpus[-1] if how == "uuid" else gpu_host.gpus[0]
    selection = chosen.uuid if how == "uuid" else "1"
    seen_file, out = tmp_path / "seen.json", tmp_path / "run"
    r = edgeprof.profile([PY, str(VISIBLE), str(seen_file)], gpus=selection, out_dir=out,
                         interval=INTERVAL_S, timeout=300)  # fmt: skip
    assert (r.termination, r.exit_code) == (Termination.EXITED, 0), r.warnings
    seen = json.loads(seen_file.read_text())
    assert (seen["env"], seen["count"]) == (chosen.uuid, 1)

    def hex_digits(uuid: str) -> str:
        return re.sub("[^0-9a-f]", "", uuid.lower().removeprefix("gpu-"))

    assert hex_digits(seen["uuid"]) == hex_digits(chosen.uuid)
    gpu = json.loads((out / "result.json").read_text())["gpu"]
    assert gpu["selection"] == selection
    assert [d["uuid"] for d in gpu["devices"]] == [chosen.uuid]


def test_gpu_memory_is_enforced_in_a_pytorch_workload(gpu_host: GpuHost, tmp_path: Path) -> None:
    """``gpu_memory="256m"``: the workload client caps PyTorch's allocator once CUDA is in use,
    so a 1 GiB allocation fails in the workload (as on a 256 MiB device), and the result says
    the limit was enforced."""
    out = tmp_path / "run"
    r = edgeprof.profile([PY, str(HERE / "cuda_cap.py")], gpus="1", gpu_memory="256m",
                         out_dir=out, interval=INTERVAL_S, timeout=300)  # fmt: skip
    assert (r.termination, r.exit_code) == (Termination.EXITED, 0), r.warnings
    assert r.gpu is not None and r.gpu.memory_limit_bytes == 256 * MiB
    assert r.gpu.memory_limit_enforced
