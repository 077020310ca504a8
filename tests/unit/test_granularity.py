"""Memory figures under the memory cgroup's charge batches (edgeprof.analysis.granularity): no
outlier, no runs asked to resolve them.  Figures from a tester's ``busy 5`` runs, whose peak
read 256 KiB or 512 KiB on a 2-CPU host."""

from __future__ import annotations

import dataclasses

from edgeprof import Limits
from edgeprof.analysis.compare import summarize
from edgeprof.analysis.difference import difference
from edgeprof.analysis.granularity import charge_granularity, within_granularity
from edgeprof.analysis.outliers import outliers, without_outliers
from edgeprof.analysis.repeats import Resolution, neighbour_pairs
from edgeprof.model import HostInfo, RunResult

from .conftest import make_result

KiB = 1024
HOST2 = HostInfo(kernel="6.18", cpus=2, cpu_model="x", hostname="h")


def _run(label: str, peak_kib: int, **over: object) -> RunResult:
    r = make_result(**{"name": label, "host": HOST2, "limits": Limits(), **over})
    return dataclasses.replace(r, memory=dataclasses.replace(r.memory, peak_bytes=peak_kib * KiB))


def test_the_granularity_is_a_charge_batch_per_cpu_of_memory_figures_only() -> None:
    runs = [_run("a", 256)]
    assert charge_granularity("peak_bytes", runs) == 512 * KiB  # 64 pages × 4 KiB × 2 CPUs
    assert charge_granularity("avg_memory", runs) == 512 * KiB
    pinned = [_run("a", 256, limits=Limits(cpuset="3"))]
    assert charge_granularity("peak_memory", pinned) == 256 * KiB
    assert charge_granularity("wall_s", runs) == 0.0
    assert charge_granularity("peak_bytes", [_run("a", 256, mechanism="process")]) == 0.0


def test_a_one_batch_step_is_no_outlier() -> None:
    peaks = [256 * KiB] * 5 + [512 * KiB]
    assert outliers(peaks) == [5]  # 100 % above the median: the rule alone flags it
    assert outliers(peaks, 512 * KiB) == []
    assert outliers([256 * KiB] * 5 + [1280 * KiB], 512 * KiB) == [5]  # 1 MiB more: real
    assert without_outliers(peaks, [256 * KiB] * 6, 512 * KiB) is None


def test_a_cells_warnings_call_no_batch_step_an_outlier() -> None:
    runs = [_run("b", k) for k in (256, 256, 256, 512, 256, 256)]
    (cell,) = summarize(runs)
    assert not any("outlier in peak memory" in w for w in cell.warnings())
    far = [_run("b", k) for k in (256, 256, 256, 4096, 256, 256)]
    (cell,) = summarize(far)
    assert any("run 4 is an outlier in peak memory: 4.0MiB" in w for w in cell.warnings())


def test_within_the_batches_either_way_is_equivalent_however_wide_the_ratio() -> None:
    # The tester's pair: +7.3% [-21.6%, +46.7%] of ~270 KiB, inside ±512 KiB.
    a = [256 * KiB] * 7 + [512 * KiB]
    b = [256 * KiB] * 8
    d = difference(a, b)
    assert not d.separated and not d.within(0.05)
    assert within_granularity(d, 512 * KiB)
    assert not within_granularity(d, 0.0)
    apart = difference([256 * KiB] * 4, [8192 * KiB] * 3 + [8193 * KiB])
    assert not within_granularity(apart, 512 * KiB)


def test_repeat_auto_asks_no_runs_for_a_pair_within_the_batches() -> None:
    runs = [_run("5", k) for k in (256, 256, 512, 256, 256, 256, 256, 512)]
    runs += [_run("5.0", k) for k in (256, 512, 256, 256, 256, 256, 256, 256)]
    (pair,) = neighbour_pairs(runs, 0.05, ["peak_bytes"])
    assert pair.resolution is Resolution.EQUIVALENT and pair.runs_needed is None
    assert pair.runs == (8, 8)
