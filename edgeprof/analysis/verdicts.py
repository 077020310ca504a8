"""The verdict on one compared metric of one cell, and what it must be read with: the rule
(:func:`judge`, :func:`judged`), the caveat of runs other tasks held off their CPUs
(:func:`held_caveat`) and the line on a side's outliers (:func:`outlier_note`).
:mod:`edgeprof.analysis.regression` pairs the cells and pools the values they are made of.

The verdict combines the change's 95 % interval (:mod:`edgeprof.analysis.regression`) with a
threshold so that noise alone does not fail a build:

* **regression**: the whole interval lies above ``+threshold`` (its lower bound does) — the
  change is, with 95 % confidence, larger than the threshold (not merely larger than 0 with a
  point estimate above the threshold: on a shared runner that rule failed an unchanged sweep
  at +14 % ± 14 % CPU time);
* **improvement**: the whole interval lies below ``−threshold`` (its upper bound does);

(for the throughput, larger is better, the other way round: a drop is the regression.  A
wider model's 2542 → 1443 items/s, and its latency p50's 24.2 → 42.2 ms, had not been
compared at all: only a p95 of 16 iterations a run, "+69.1% ± 141.7%");
* **not beyond the threshold**: the whole interval lies within ±threshold — the change is,
  with 95 % confidence, no larger than the threshold either way (the ranking's "the same
  within 5%");
* **inconclusive**: everything else — an interval that reaches past the threshold without
  lying beyond it (noise, or too few repeats to tell).  Both had read "not beyond the
  threshold": ``CPU time -0.7% ± 4.4%``, shown within 5 %, beside ``wall time +0.0% ±
  17.8%``, which cannot rule out a 17.8 % change (a tester's).  Neither fails the gate.  Not
  "no significant change" either: a +8 % ± 4 % change is significant (its interval excludes
  0) but neither shown beyond a 5 % threshold nor within it.

A baseline of 0 (every run) has no relative change: 0 against 0 is not beyond the threshold
(+0 %), a growth from 0 that the test shows is a regression whatever the threshold (its
change reads "from 0"), and one it does not show is inconclusive.

A regression of a wall-clock time (wall, a latency; not CPU time, which the kernel charges only
while the task runs) or of the CPU share whose current runs other tasks held off their CPUs
(as long as ``edgeprof run`` warns of, and long enough to account for it: without that time
the change would not be beyond the threshold) keeps its verdict and its exit code (3), and
carries a caveat that says so, with the worst run's share and the change with each run's
figure less its own held-off share, both sides' (:func:`held_caveat`; a throughput is
weighed so too): on its JUnit case,
in a note, and under the Markdown summary's verdict.  An improvement whose baseline runs were
held off so carries it too.  Not a pass: the runs record how
long they were held off, not what they would have taken on an idle host, so no verdict can be
made of them either way, and a gate that passed whenever its runner was busy would let a real
regression through on every busy runner.  A failed build that names its cause is rerun on an
idle host.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ..measure.contention import held_time
from ..measure.sketch import iterations_for
from ..model import RunResult
from ..units import format_binary
from . import rules
from .change import Change, Verdict
from .difference import Difference, difference
from .granularity import CHARGE_BATCH_BYTES, charge_granularity, within_granularity
from .held import (
    LOWERED_BY_HELD,
    SLOWED_BY_OTHERS,
    HeldApart,
    held_apart,
    held_runs,
    held_worsens,
    host_caveat,
    mean_held,
    weighed_figures,
)
from .metrics import Metric, few_iterations
from .outliers import without_outliers


def judged(
    label: str,
    setting: str,
    metric: Metric,
    b: tuple[float, ...],
    c: tuple[float, ...],
    threshold: float,
) -> Change:
    """``metric`` of one cell, the baseline's values ``b`` against the current's ``c``,
    compared and judged by the module docstring's rule."""
    if not c:
        return Change(label, setting, metric, b, c, Verdict.NOT_MEASURED)
    d = difference(b, c)
    ratio = d.ratio()
    if len(b) < 2 or len(c) < 2:  # untested: the change alone, on the test's scale
        change = None if ratio is None else ratio - 1
        return Change(label, setting, metric, b, c, Verdict.FEW_REPEATS, change, log=d.log)
    interval = d.relative_interval()
    if interval is None or ratio is None:  # a baseline of 0: no relative change
        return _from_zero(Change(label, setting, metric, b, c, Verdict.NO_CHANGE), d)
    change, low, high = ratio - 1, interval[0] - 1, interval[1] - 1
    # A throughput's regression is a drop: judged on the change's opposite, shown as it is.
    worse = (-high, -low) if metric.larger_is_better else (low, high)
    return Change(
        label, setting, metric, b, c, judge(*worse, threshold), change, low, high, d.log,
        d.p_value,
    )


def within_the_counter(change: Change, runs: Sequence[RunResult]) -> Change:
    """``change`` judged :attr:`Verdict.WITHIN_GRANULARITY` where it is :attr:`Verdict.
    INCONCLUSIVE` and the whole interval of its difference, in bytes, lies within the
    memory cgroup's charge batches on ``runs`` (both sides' runs of its values:
    :func:`~.granularity.charge_granularity`, 64 pages per CPU).  No number of runs resolves
    such a difference, so "inconclusive", which promises that more would, was no honest
    word; the rankings already call it no outlier and ``--repeat auto`` runs on for no such
    pair (a tester's ``busy 5``: 256 and 512 KiB).  A regression or an improvement keeps its
    verdict: ``charge_granularity`` counts every CPU the runs could charge from, not those
    they did, so on a many-CPU host it would pass a real growth of a small peak."""
    if change.verdict is not Verdict.INCONCLUSIVE:
        return change
    floor = charge_granularity(change.metric.key, runs)
    d = difference(change.base, change.current)
    rel = d.relative_interval()
    if floor <= 0 or rel is None or not within_granularity(d, floor):
        return change
    cpus = round(floor / CHARGE_BATCH_BYTES)
    lo, hi = sorted(d.base * (f - 1) for f in rel)
    why = (
        "the memory cgroup charges its counter in batches of 64 pages per CPU "
        f"({format_binary(floor)} on these runs' {cpus} CPU{'s' if cpus != 1 else ''}), and "
        f"the whole interval of the difference, {_signed(lo)} to {_signed(hi)}, lies within "
        f"±{format_binary(floor)}: no number of runs tells the two sides apart (counted as "
        "not beyond the threshold)"
    )
    return replace(change, verdict=Verdict.WITHIN_GRANULARITY, granularity=floor, why=why)


def _signed(n: float) -> str:
    return ("-" if n < 0 else "+") + format_binary(abs(n))


def not_judged(
    change: Change, base: Sequence[RunResult], current: Sequence[RunResult]
) -> Change:
    """``change`` not judged (:attr:`Verdict.NOT_JUDGED`, with the reason in
    :attr:`Change.why`) where it is of a percentile some of either side's runs ``base``,
    ``current`` (those whose values it pools) gave from fewer iterations than it needs:
    the latency tables' ``^`` rule, one rule (:func:`~.metrics.few_iterations`: fewer than
    ``1 / (1 − p)`` iterations, p50: 2, p90: 10, p95: 20, p99: 100), so that the rows marked
    ``^`` are the rows not judged.  Such a figure is a point near the run's maximum, not an
    estimate of the percentile: two unchanged sweeps of 40 iterations a run had their p99
    at 7.3 ms beside a max of 7.6 ms and 5.5 ms beside 6.0 ms (the max again, compared a
    second time), and a verdict on it would pass or fail a gate on the slowest frames while
    naming the p99.  Either side: the other's estimate held to a near-maximum is no
    comparison of that percentile either.  Any run of a side: its value is pooled into the
    side's mean like the others', as the ``^`` marks the side's figure when any run has too
    few.  The max is no percentile: it is what the runs reached, exactly, and is judged.
    A row the current runs have no value for keeps its verdict (not measured fails)."""
    if change.metric.percentile is None or not change.current:
        return change
    sides = [
        (side, few, len(values))
        for side, runs, values in (
            ("baseline", base, change.base),
            ("current", current, change.current),
        )
        if (few := few_iterations(change.metric, runs))
    ]
    if not sides:
        return change
    pct = change.metric.percentile
    said = [_too_few_side(side, pct if i == 0 else "", few, n) for i, (side, few, n) in
            enumerate(sides)]  # fmt: skip
    why = (
        f"{' and '.join(said)}: fewer than the {iterations_for(pct)} it needs, a point near "
        "the maximum, not an estimate of it (more iterations per run decide it)"
    )
    return replace(
        change, verdict=Verdict.NOT_JUDGED, low=None, high=None, p_value=None, why=why
    )


def _too_few_side(side: str, percentile: str, few: Sequence[RunResult], of: int) -> str:
    """``the baseline's p99 of 40 iterations``, ``the current's of 12 to 40 iterations in 2
    of its 3 runs``: a side of :func:`not_judged`'s reason."""
    counts = sorted({r.latency.count for r in few if r.latency is not None})
    each = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    runs = "" if len(few) == of else f" in {len(few)} of its {of} runs"
    return f"the {side}'s {percentile + ' ' if percentile else ''}of {each} iterations{runs}"


def _from_zero(row: Change, d: Difference) -> Change:
    """A baseline of 0 (every run: a CPU time or a GPU memory of nothing) has no relative
    change to hold to a threshold, and is tested on the values (no logarithm of 0).  Still
    0 is no change; a growth the test shows (its interval excludes 0) is beyond every
    threshold, infinitely many percent of nothing, and so a regression: a model that starts
    using the GPU must not pass a gate on a label.  A growth the test does not show is
    inconclusive: its relative interval is unbounded."""
    if d.diff == 0 and d.half == 0:
        return replace(row, change=0.0, low=0.0, high=0.0, p_value=d.p_value)
    shown = d.separated and d.diff > 0
    verdict = Verdict.INCONCLUSIVE
    if shown:  # a throughput from none is better, not worse
        verdict = Verdict.IMPROVEMENT if row.metric.larger_is_better else Verdict.REGRESSION
    return replace(row, verdict=verdict, p_value=d.p_value)


def judge(low: float, high: float, threshold: float) -> Verdict:
    """The module docstring's rule on the bounds of the change's 95 % interval (a fraction
    of the baseline, worse upwards): the whole interval beyond the threshold, either way;
    else within it, both ways; else inconclusive.  The bounds, not ``change ± half``: on
    the logarithms the interval is not symmetric about the change."""
    if _beyond(low, threshold):
        return Verdict.REGRESSION
    if _beyond(-high, threshold):
        return Verdict.IMPROVEMENT
    if _beyond(high, threshold) or _beyond(-low, threshold):
        return Verdict.INCONCLUSIVE
    return Verdict.NO_CHANGE


def _beyond(bound: float, threshold: float) -> bool:
    """``bound`` above ``threshold`` by more than float rounding.  A change computed as
    (mc − mb) / mb lands a few ulps either side of the threshold it equals (2.00 s → 2.10 s
    is 0.05000000000000004, 3.00 s → 3.15 s is 0.04999999999999997): a change equal to the
    threshold is not beyond it, whichever way it rounded."""
    return bound > threshold and not math.isclose(bound, threshold, rel_tol=1e-9, abs_tol=1e-12)


def held_caveat(
    change: Change, base: Sequence[RunResult], current: Sequence[RunResult], threshold: float
) -> str | None:
    """What a regression (an improvement) must be read with when other tasks held off their
    CPUs, as long as ``edgeprof run`` warns of (:func:`~edgeprof.analysis.held.held_runs`)
    and long enough to account for it, the side whose held-off time moves the figure the
    verdict's way: for a time or a throughput (:func:`~edgeprof.analysis.held.held_worsens`)
    the current runs' makes a regression, the baseline's an improvement, and neither the
    other way round.  ``None`` otherwise.  Long enough: the change with each run's figure
    less its own held-off share (:func:`~edgeprof.analysis.held.weighed_figures`, both sides,
    the interval tested anew on those values) is no longer beyond the threshold by its whole
    interval.  Every metric alike: the throughput's had been said whenever its side was held
    off at all, a tester's +479.6 % (baseline held off at most 43 % of its wall time, which
    can make a throughput at most 1.75× lower) reading "may be the host's", and the summary's
    headline saying it had been weighed.  Both sides: one side's alone had called a real
    regression possibly the host's, a tester's +71.9 % wall time (440.6 ms → 757.2 ms,
    baseline runs held off 0.276 s a run, current 0.526 s) reading "the change less that
    time: -47.5 %" where each side less its own gives +40.3 %, as its CPU time's +41.4 %; and
    a +61.3 % ± 33.9 % (156.5 ms → 252.4 ms; baseline held off 0.06 s and one current run of
    three 0.04 s) is still beyond 5 % so.  A growth from 0, or a side whose runs did not
    measure their held-off time, cannot be weighed: said whenever its side was held off."""
    if change.verdict not in (Verdict.REGRESSION, Verdict.IMPROVEMENT):
        return None
    metric = change.metric
    if metric.key not in SLOWED_BY_OTHERS:
        return None
    sides = (("baseline", base), ("current", current))
    # The side whose held-off time pushes the figure the verdict's way.
    held_first = (change.verdict is Verdict.REGRESSION) == held_worsens(metric)
    (side, runs), (other, others) = sides[::-1] if held_first else sides
    held = held_runs(runs)
    if held is None:
        return None
    less = ""
    b_of, c_of = (
        [r for r in rules.newest(metric.key, ok) if metric.get(r) is not None]
        for ok in (base, current)
    )
    b_less, c_less = weighed_figures(metric, b_of), weighed_figures(metric, c_of)
    if change.change is None:
        pass  # a growth from 0: no change to weigh
    elif b_less is None or c_less is None:
        # A run's figure cannot be taken less a time it did not measure (the process
        # backend's, an older file's).  Said, not weighed.
        which = side if (b_less is None) == (side == "baseline") else other
        less = (
            f", the {which} runs did not measure theirs (so no change less each run's own "
            "held-off time can be weighed)"
        )
    else:
        alt = judged(change.label, change.setting, metric, b_less, c_less, threshold)
        if alt.verdict is change.verdict or not _weakened(change, alt):
            return None  # beyond the threshold however long the host held them off
        theirs = mean_held(others) or 0.0
        taken = "time" if metric.key == "wall" else "share of its wall time"
        less = (
            f", the {other} runs for {held_time(theirs)}; the change less each run's own held-off "
            f"{taken}: {alt.change_text()}"
        )
    seconds = mean_held(runs) or 0.0
    return host_caveat(
        f"the {side} runs", held, seconds, less, "a difference this size", "compare"
    )


def _weakened(change: Change, alt: Change) -> bool:
    """Whether the change less each run's held-off time (``alt``) is smaller the verdict's
    way: only then can the host's time account for it.  One that grew is no smaller, only
    noisier: a tester's +62.6 % wall time whose baseline runs were held off 0.04–0.05 s
    (which only shrinks a regression) is +101.3 % less that time, its interval [-15.3 %,
    +378.0 %] on the logarithms of runs now 2× apart, and had been called "may be the
    host's" for that width."""
    if change.change is None or alt.change is None:
        return True
    sign = -1 if change.metric.larger_is_better else 1
    worse, worse_alt = sign * change.change, sign * alt.change
    return worse_alt < worse if change.verdict is Verdict.REGRESSION else worse_alt > worse


def outlier_note(
    change: Change, threshold: float, runs: tuple[Sequence[RunResult], Sequence[RunResult]]
) -> str | None:
    """A sensitivity line beside a change not beyond the threshold where a side has a
    flagged outlier (:func:`~edgeprof.analysis.outliers.without_outliers`): the verdict
    tests every run, and this says what it would be without the outliers.  One fast current
    run had turned a real CPU-time rise into "+4.0% ± 57.2% not beyond the threshold", with
    nothing said.  ``runs``: each side's runs of ``change``'s values, in their order.  An
    outlier that time held off the CPUs sets apart (:func:`~edgeprof.analysis.held.
    held_apart`) carries ``report``'s advice; where it is the least held-off run, the others
    were slowed, and the change without it is theirs: not offered.  A tester's fp32 bench
    (p50 15.48 and 15.49 ms in runs held off 42 and 58 % of their wall time, 7.52 ms in one
    held off 4 %) had been offered "without it, -78.1% ± 2.0%, improvement".  ``None``:
    another verdict, or no outlier."""
    untested = change.verdict not in (Verdict.NO_CHANGE, Verdict.INCONCLUSIVE)
    if untested or min(len(change.base), len(change.current)) < 2:
        return None
    floor = charge_granularity(change.metric.key, [*runs[0], *runs[1]])
    s = without_outliers(change.base, change.current, floor)
    if s is None:
        return None
    named, apart = [], []
    for side, values, of, left in zip(
        ("baseline", "current"), (change.base, change.current), runs, s.left_out, strict=True
    ):
        for i in left:
            named.append(f"{side} run {i + 1} ({change.metric.format(values[i])})")
            if (found := _held_apart(change.metric, values, of, i)) is not None:
                apart.append(found)
    one = len(named) == 1
    said = (
        f"{change.subject} {change.verdict.value} includes {' and '.join(named)}, "
        f"{'an outlier' if one else 'outliers'}: "
    )
    advice = "; ".join(dict.fromkeys(a.advice() for a in apart))
    if any(not a.slower for a in apart):
        return said + (
            f"the others were slowed, not {'it' if one else 'them'}, so no change without "
            f"{'it' if one else 'them'} is offered ({advice})"
        )
    alt = judged(change.label, change.setting, change.metric, *s.kept, threshold)
    return said + (
        f"without {'it' if one else 'them'}, {alt.change_text()}, {alt.verdict.value}"
        + (f" ({advice})" if advice else "")
    )


def _held_apart(
    metric: Metric, values: Sequence[float], runs: Sequence[RunResult], index: int
) -> HeldApart | None:
    """:func:`~edgeprof.analysis.held.held_apart` of a compared figure time held off moves."""
    if metric.key not in SLOWED_BY_OTHERS or len(runs) != len(values):
        return None
    return held_apart(metric.key in LOWERED_BY_HELD, values, runs, index)
