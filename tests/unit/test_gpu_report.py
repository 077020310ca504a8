"""The text report's GPU notes: a phase that no GPU reading fell inside says why its GPU
memory peak is ``n/a`` and which interval would read it."""

from __future__ import annotations

from edgeprof.model import GpuPhase, GpuStats, PhaseStats
from edgeprof.report.gpu import gpu_notes

from .conftest import make_result


def _phase(name: str, wall_s: float) -> PhaseStats:
    return PhaseStats(name=name, count=1, start_s=0.0, wall_s=wall_s, cpu_s=None, cpu_pct=None,
                      peak_bytes=None, peak_source=None, avg_bytes=None)  # fmt: skip


def _run(infer_wall_s: float, interval_s: float) -> list[str]:
    phases = (GpuPhase("warmup", 89.1, 900 * 2**20), GpuPhase("infer", 1.6, None))
    gpu = GpuStats(driver="580.159.04", selection="all", devices=(), memory_peak_bytes=2**30,
                   energy_j=500.0, samples=60, interval_s=interval_s, phases=phases)  # fmt: skip
    return gpu_notes([make_result(name="cuda", gpu=gpu, phases=(
        _phase("warmup", 0.77), _phase("infer", infer_wall_s)))])  # fmt: skip


def test_a_phase_between_two_readings_names_the_interval_that_reads_it() -> None:
    # The H200's infer phase: 11.8 ms, read every 0.1 s; 10 readings of it want 1.2 ms,
    # but the GPU is read no faster than every 10 ms.
    (note,) = [n for n in _run(0.0118, 0.1) if "fell inside" in n]
    assert note == (
        "cuda: no GPU reading (every 0.1s) fell inside infer: its GPU memory peak is n/a; "
        "--interval 0.01 reads shorter phases"
    )
    (note,) = [n for n in _run(4.0, 1.0) if "fell inside" in n]
    assert note.endswith("--interval 0.1 reads shorter phases")  # a tenth of the interval


def test_at_the_finest_interval_it_says_the_phase_is_too_short() -> None:
    (note,) = [n for n in _run(0.004, 0.01) if "fell inside" in n]
    assert note.endswith(
        "infer: its GPU memory peak is n/a; a phase this short is over between two readings "
        "even at 0.01s"
    )


def test_every_phase_read_says_nothing() -> None:
    gpu = GpuStats(driver="d", selection=None, devices=(), memory_peak_bytes=1, energy_j=1.0,
                   samples=3, interval_s=0.1, phases=(GpuPhase("infer", 1.0, 2**20),))  # fmt: skip
    assert not [n for n in gpu_notes([make_result(gpu=gpu)]) if "fell inside" in n]
