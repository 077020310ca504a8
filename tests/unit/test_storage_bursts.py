"""Iterations under a storage rate whose block I/O wait fell on a few of them: their
percentiles show blk-throttle's bursts, not a device's pace, and the run says so."""

from __future__ import annotations

from edgeprof.measure.io_stall import burst_warnings
from edgeprof.model import IoStats, LatencyStats, Limits, PhaseStats


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
WAITED = IoStats(None, None, None, None, stall_s=0.464)
SPANNED = [(0.05, 0.1), (0.85, 0.9)]
"""The run's iterations from 0.05 s to 0.9 s: 85 % of a 1.0 s run, 94 % of a 0.9 s one."""


def test_a_phases_bursty_wait_under_a_storage_rate_is_said() -> None:
    [w] = burst_warnings([_phase(BURSTS, 0.464)], None, WAITED, SPANNED, 0.9, IOPS)
    assert w.startswith("phase 'infer': the iterations' percentiles show the storage limit's")
    assert "at read 1500 IOPS" in w
    assert "the longest iteration 87.90ms" in w
    assert "1500 iterations waited on block I/O 0.46s" in w
    assert "p50 90.20µs against a mean of 544.02µs" in w


def test_none_without_a_rate_or_where_the_wait_is_even_or_not_the_tails() -> None:
    assert burst_warnings([_phase(BURSTS, 0.464)], None, WAITED, SPANNED, 0.9, Limits()) == []
    # The wait on every iteration alike (a device's pace): median near the mean.
    even = _lat(p50=520e-6, mean=544.02e-6)
    assert burst_warnings([_phase(even, 0.6)], None, WAITED, SPANNED, 0.9, IOPS) == []
    # A long tail of the workload's own that waited little on storage: not the limit's.
    assert burst_warnings([_phase(BURSTS, 0.05)], None, WAITED, SPANNED, 0.9, IOPS) == []
    # Too few iterations for a median, no latency, no wait measured.
    few = _lat(p50=90.20e-6, mean=544.02e-6, count=9)
    assert burst_warnings([_phase(few, 0.4)], None, WAITED, SPANNED, 0.9, IOPS) == []
    unmeasured = [_phase(None, 0.4), _phase(BURSTS, None)]
    assert burst_warnings(unmeasured, None, WAITED, SPANNED, 0.9, IOPS) == []


def test_the_runs_own_iterations_only_where_they_span_its_time() -> None:
    [w] = burst_warnings([], BURSTS, WAITED, SPANNED, 0.9, IOPS)
    assert w.startswith("the iterations' percentiles show the storage limit's bursts")
    # Spanning less of the run (85 % of 1.0 s), its wait may be a load's before them; past
    # the stored iterations there are no spans to tell.
    assert burst_warnings([], BURSTS, WAITED, SPANNED, 1.0, IOPS) == []
    assert burst_warnings([], BURSTS, WAITED, None, 0.9, IOPS) == []
    # With phases, each phase's own wait is judged, not the run's.
    assert burst_warnings([_phase(None, None)], BURSTS, WAITED, SPANNED, 0.9, IOPS) == []
