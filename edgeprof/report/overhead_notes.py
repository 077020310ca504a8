"""The note under a latency table whose throughput (IT/S, ITEMS/S) is marked :data:`OVERHEAD`:
edgeprof.iteration()'s own cost, its share of the loop, and the rates without it (apart
from :mod:`edgeprof.report.phases`, which was past the ~500-line guide)."""

from __future__ import annotations

from collections.abc import Iterable

from ..analysis.overhead import (
    items_per_iteration,
    overhead_marked,
    overhead_share,
    rate_without_overhead,
)
from ..model import LatencyStats
from ..units import format_seconds

OVERHEAD = "†"
"""A throughput (IT/S, ITEMS/S) of which edgeprof's own per-iteration cost is a noticeable
share (:func:`~edgeprof.analysis.overhead.overhead_marked`); the note under it gives the cost."""


def overhead_notes(rows: Iterable[tuple[str, LatencyStats]]) -> list[str]:
    """One line per marked ``(row name, latency)``: the cost measured in the run, its share of
    the loop's time per iteration, and the rate without it where that can be told."""
    out = []
    for name, lat in rows:
        share = overhead_share(lat)
        if not overhead_marked(lat) or share is None or lat.per_s is None:
            continue
        # Two decimals in the unit format_seconds picks, as the latency columns beside it.
        cost = format_seconds(lat.overhead_s, digits=2)
        period = format_seconds(1.0 / lat.per_s, digits=2)
        rest = rate_without_overhead(lat)
        # ITEMS/S is marked alike, so where items were counted the note gives both rates.
        per_item = items_per_iteration(lat)
        without = (
            f"; without it {_rates(rest, per_item, about='~')}" if rest is not None
            else "; the workload's own rate cannot be told from it "
            f"(1/MEAN: {_rates(1 / lat.mean_s, per_item)})" if lat.mean_s > 0 else ""
        )
        out.append(
            f"{OVERHEAD} {name}: edgeprof.iteration() itself took {cost} an iteration (timed in "
            f"the run), {share:.0%} of the loop's {period}: IT/S and ITEMS/S count it, no "
            f"latency does{without}"
        )
    return list(dict.fromkeys(out))


def _rates(per_s: float, per_item: float | None, about: str = "") -> str:
    """``N it/s``, and `` and M items/s`` where items were counted: the note's two rates,
    each with ``about`` (``~`` for an estimate)."""
    its = f"{about}{per_s:.0f} it/s"
    return its if per_item is None else f"{its} and {about}{per_s * per_item:.0f} items/s"
