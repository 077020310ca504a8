"""How much of a loop's throughput is ``edgeprof.iteration()``'s own cost.

The client times its own per-iteration cost in the run (:attr:`LatencyStats.overhead_s`).
No latency holds it, but IT/S and ITEMS/S are counted over the loop's span, which does: for
short iterations they measure edgeprof, not the workload (a tester's empty bench function:
MEAN 117 ns beside IT/S 318 888, 3.1 µs an iteration; a bs=8 against bs=64 matmul ranked
4.5× apart by ITEMS/S where a plain loop gave 2.7×).
"""

from __future__ import annotations

from ..model import LatencyStats

MARK_SHARE = 0.1
"""From this share of the loop's time per iteration the throughput is marked: a tenth moves
a ranking by more than a run's noise on a quiet host."""
ESTIMATE_SHARE = 0.9
"""Past this share the rest is within the cost's own spread: no rate without it is given."""


def overhead_share(lat: LatencyStats) -> float | None:
    """The share of the loop's time per iteration (``1 / per_s``) that is the client's own
    cost, at most 1; ``None`` where either is unknown."""
    if lat.overhead_s is None or not lat.per_s:
        return None
    return min(1.0, lat.overhead_s * lat.per_s)


def overhead_marked(lat: LatencyStats) -> bool:
    """Whether ``lat``'s throughput is marked as counting a noticeable share of edgeprof."""
    share = overhead_share(lat)
    return share is not None and share >= MARK_SHARE


def rate_without_overhead(lat: LatencyStats) -> float | None:
    """IT/S with the client's cost taken out of each iteration's share of the span (what the
    loop would run at without edgeprof's lines); ``None`` where that is not known or the cost
    is past :data:`ESTIMATE_SHARE` of it."""
    share = overhead_share(lat)
    if share is None or lat.per_s is None or share > ESTIMATE_SHARE:
        return None
    return lat.per_s / (1.0 - share)


def items_per_iteration(lat: LatencyStats) -> float | None:
    """The items an iteration carried, over the loop's span (``items_per_s / per_s``): what
    turns a rate without the cost into ITEMS/S without it, which is marked alike (the
    verifier's ``iteration(items=8)`` around ``pass``: 63 % of a 6.73 µs loop, and the note
    gave ~405 306 it/s but no items/s beside ITEMS/S 1 189 190†).  ``None`` where no items
    were counted."""
    if lat.items_per_s is None or not lat.per_s:
        return None
    return lat.items_per_s / lat.per_s
