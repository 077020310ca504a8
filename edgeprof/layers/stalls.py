"""Layer times under a fractional CPU share: whether their medians measure a slower core.

A ``cpus`` quota lets the run go at full speed until the period's share is spent, then stalls
it to the period's end.  A layer much shorter than the period (5 ms by default, and the
kernel charges the quota once per scheduler tick, 4 ms here) mostly runs at full speed, and
few of its iterations take the stalls, or many take short ones: ``small_cnn``'s stem had a
median of 0.27 ms at 1 CPU, 0.39 ms at 0.5 and 0.25 ms at 0.25, the sum of the layers'
medians 1.94 / 2.70 / 3.08 ms.
The worker reports each timed iteration in the phase ``layer:N`` (``--cpus`` given), so the
runner's check of how the stalls fell on them, ``edgeprof run``'s
(:class:`~edgeprof.model.Throttling`), judges each layer, and a layer whose ``p50`` it finds
to measure the stall pattern is named in one warning, with its median as the stalls spread
evenly would give it (as on a slower core).  So is every layer shorter than the quota's
period, whatever the check found: the stalls fall between such short iterations or not at
all (a loaded 2-core host, ``--cpus 0.5``: stem 1.31 ms, none of its 9 iterations with a
known stall throttled, the run throttled 872 times, mostly while torch imported).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..backends.helpers import sampled_phase_peaks
from ..measure.limits import quota_can_stall
from ..model import RunResult, Throttling
from .results import layer_ranges

PHASE = "layer:"
"""The worker's phase of layer N's timed iterations is ``layer:N``."""


def throttling_of(result: RunResult, layer: int) -> Throttling | None:
    """How the quota's stalls fell on the layer's timed iterations (``None``: not known)."""
    for p in result.phases:
        if p.name == f"{PHASE}{layer}" and p.latency is not None:
            return p.latency.throttling
    return None


@dataclass(frozen=True)
class QuotaStalls:
    """The layers whose median measures full speed between the quota's stalls."""

    flagged: tuple[int, ...]
    per_layer: Mapping[int, dict[str, Any]]
    """Per layer with a known stall: the file's ``quota_stalls`` entry."""
    warning: str | None


def quota_stalls(result: RunResult, records: Sequence[Mapping[str, Any]]) -> QuotaStalls:
    """The run's layers judged by ``edgeprof run``'s stall check (see the module)."""
    limits, period = result.limits, result.cpu.period_s
    if limits.cpus is None or not quota_can_stall(limits, result.host.cpus):
        return QuotaStalls((), {}, None)
    flagged: list[int] = []
    per_layer: dict[int, dict[str, Any]] = {}
    examples: list[str] = []
    for rec in records:
        i, median = int(rec["layer"]), statistics.median(rec["times_s"])
        t = throttling_of(result, i)
        if t is not None:
            per_layer[i] = {
                "iterations": t.iterations,
                "throttled": t.throttled,
                "stall_s": t.stall_s,
                "even_median_s": t.even_p50_s,
                "distorted": list(t.distorted),
            }
        if t is not None and "p50" in t.distorted:
            even = t.even_p50_s * 1000
            what = f"{median * 1000:.2f}ms, {even:.2f}ms with its stalls spread evenly"
        elif period is not None and median < period:
            what = f"{median * 1000:.2f}ms" + ("" if t is None else _stalled(t))
        else:
            continue
        flagged.append(i)
        if len(examples) < 3:
            examples.append(f"layer {i} ({rec['name']}) {what}")
    if not flagged:
        return QuotaStalls((), per_layer, None)
    period_text = "" if period is None else f" (CFS period {period * 1000:g}ms)"
    more = f"; {len(flagged) - len(examples)} more" if len(flagged) > len(examples) else ""
    warning = (
        f"under cpus={limits.cpus:g}{period_text} the median time of layer(s) "
        f"{layer_ranges(flagged)} measures the layer at full speed, not on a core "
        f"{limits.cpus:g}× as fast: a layer shorter than the period runs inside the quota, and "
        f"its median does not take the stalls' even share ({'; '.join(examples)}{more}); a "
        "larger --batch-size lengthens each iteration, and each layer's quota_stalls in the "
        "file says how the stalls fell"
    )
    return QuotaStalls(tuple(flagged), per_layer, warning)


def _stalled(t: Throttling) -> str:
    """How many of a layer's iterations stalled, and for how long each on average: "few, or
    none, take the stalls" had been said beside a tester's "8 of 10 iterations stalled",
    whose stalls were short (6.0 ms over 8, 0.75 ms each)."""
    text = f", {t.throttled} of {t.iterations} iterations stalled"
    if t.throttled:
        text += f", {t.stall_s / t.throttled * 1000:.2f}ms of stall each"
    return text


def own_warning(result: RunResult, warning: str) -> bool:
    """Whether ``warning`` of the run is about the worker's ``layer:N`` phases, which the
    user never named (said once, per layer, by :func:`quota_stalls` instead), or about the
    run's iterations, which are every layer's pooled (``latency p50, p95, p99 measure the
    CPU quota's stalls … 7 of the 56 iterations``: a conv's and a Flatten's together, a
    tester's): the run's latency is dropped with them."""
    pooled = warning.startswith("latency ") and any(p.name.startswith(PHASE) for p in result.phases)
    return (
        pooled
        or warning.startswith(f"phase '{PHASE}")
        or warning.startswith(f"phase peaks of '{PHASE}")
        or warning.startswith("the workload named more than")
        or warning in (sampled_phase_peaks(result.mechanism, b) for b in (True, False))
    )
