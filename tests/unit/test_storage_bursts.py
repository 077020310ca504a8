"""Iterations under a storage rate whose block I/O wait fell on a few of them: their
percentiles show blk-throttle's bursts, not a device's pace, and the run says so."""

from __future__ import annotations

from edgeprof.measure.io_stall import burst_warnings
from edgeprof.model import LatencyStats, Limits, PhaseStats


def _lat(p50: float, mean: float, count: int = 1500, longest: float = 0.0879) -> LatencyStats:
    return LatencyStats(
        count=count, mean_s=mean, p50_s=p50, p90_s=p50, p95_s=p50, p99_s=0.00112,
        max_s=longest, per_s=None,
    )  # fmt: skip


def _phase(lat: LatencyStats | None, stall: float | None) -> PhaseStats:
    return PhaseStats(
        name="infer", count=1, start_s=0.0, wall_s=0.9, cpu_s=0.1, cpu_pct=None,
        peak_bytes=None, peak_source=None, avg_bytes=None, latency=lat, io_stall_s=stall,
    )  # fmt: skip


IOPS = Limits(read_iops=1500)
BURSTS = _lat(p50=90.20e-6, mean=544.02e-6)
"""Measured here: 1500 cold 4 KiB page reads, one an iteration, under --read-iops 1500
waited 0.46 s on block I/O in their phase."""


def test_a_phases_bursty_wait_under_a_storage_rate_is_said() -> None:
    [w] = burst_warnings([_phase(BURSTS, 0.464)], None, 0.464, True, IOPS)
    assert w.startswith("phase 'infer': the iterations' percentiles show the storage limit's")
    assert "at read 1500 IOPS" in w
    assert "the longest iteration 87.90ms" in w
    assert "1500 iterations waited on block I/O 0.46s" in w
    assert "p50 90.20µs against a mean of 544.02µs" in w


def test_none_without_a_rate_or_where_the_wait_is_even_or_not_the_tails() -> None:
    assert burst_warnings([_phase(BURSTS, 0.464)], None, 0.464, True, Limits()) == []
    # The wait on every iteration alike (a device's pace): median near the mean.
    even = _lat(p50=520e-6, mean=544.02e-6)
    assert burst_warnings([_phase(even, 0.6)], None, 0.6, True, IOPS) == []
    # A long tail of the workload's own that waited little on storage: not the limit's.
    assert burst_warnings([_phase(BURSTS, 0.05)], None, 0.05, True, IOPS) == []
    # Too few iterations for a median, no latency, no wait measured.
    few = _lat(p50=90.20e-6, mean=544.02e-6, count=9)
    assert burst_warnings([_phase(few, 0.4)], None, 0.4, True, IOPS) == []
    assert burst_warnings([_phase(None, 0.4), _phase(BURSTS, None)], None, 0.4, True, IOPS) == []


def test_the_runs_own_iterations_only_where_they_span_its_time() -> None:
    [w] = burst_warnings([], BURSTS, 0.464, True, IOPS)
    assert w.startswith("the iterations' percentiles show the storage limit's bursts")
    # Spanning less of the run, its wait may be a load's before them.
    assert burst_warnings([], BURSTS, 0.464, False, IOPS) == []
    # With phases, each phase's own wait is judged, not the run's.
    assert burst_warnings([_phase(None, None)], BURSTS, 0.464, True, IOPS) == []
