"""The check shared by the CPU-share tests of the kernel and Docker tiers: a run at a share of
one core against the unlimited run on that core, judged as a slower core (its median slowed
by the share, its stalls spread over the iterations rather than a tail of them)."""

from __future__ import annotations

from edgeprof.model import LatencyStats, RunResult


def slower_core_misses(
    u: LatencyStats,
    r: RunResult,
    share: float,
    *,
    iterations: int,
    p50_high: float = 1.15,
    tail: float = 1.5,
    pattern: bool = True,
) -> list[str]:
    """How the run at ``share`` of the core is not a slower core than ``u``'s (none: it is).

    ``p50_high``: the median's upper bound, as a multiple of a slower core's; ``tail``: the
    most p99/p50 may exceed the unlimited run's by; ``pattern``: whether the tail and the
    spread of each stall are judged at all (not under an emulator, whose vCPU's turns make
    their own pattern).  The misses are a list so that a caller can retry all or nothing.
    """
    lat = r.latency
    assert lat is not None
    t = lat.throttling
    slower = u.p50_s / share
    misses = []
    if not slower * 0.85 <= lat.p50_s <= slower * p50_high:
        misses.append(f"p50 {lat.p50_s:.4f}s against a slower core's {slower:.4f}s")
    # Most iterations took a share of the stalls (Docker's own period: a few took them all).
    if t is None or t.throttled <= iterations // 2:
        misses.append(f"stalls not spread: {t}")
    elif pattern:
        if lat.p99_s / lat.p50_s > tail * max(1.0, u.p99_s / u.p50_s):
            misses.append(
                f"p99/p50 {lat.p99_s / lat.p50_s:.2f} (unlimited {u.p99_s / u.p50_s:.2f})"
            )
        # No iteration took twice its share of the stalls; no percentile is the stall pattern.
        if t.max_stall_s >= 2 * t.stall_s / t.iterations or t.distorted:
            misses.append(f"stalls not spread: {t}")
    return misses
