"""Whether a run's memory was still growing at its end: a leak, or a cache never evicted.

A run's peak and a limit's verdict hold for the run's length only when its memory levelled
off; one that rose to the end needs more the longer it runs.  The readings are of the memory
a limit cannot drop, anon + shmem + kernel (less the kernel memory the page cache brings,
:data:`~edgeprof.measure.sampler.KERNEL_PER_FILE`), where the backend splits the usage (both
cgroup versions, Docker's exact mode, the process backend): page cache is what the kernel drops at
a limit, and a run that reads or writes a file grows it at the disk's speed.  Of the usage,
the I/O tester's cold read of 500 MiB had warned "+256.1MiB/s, not levelled off" with its
anon flat at 5.8 MiB, while the same read under ``--memory 256m`` fit (stalled 1.3 %).
Where the backend gives no split (Docker's stats API) the usage is fitted and the warning
says that page cache is in it.  The readings of the run's
second half (after its start-up and warm-up) are fitted with a robust line (Theil–Sen: the
median of the pairwise slopes, which a few readings of a short free or a burst do not tip),
and the run is "still growing" where that line's rise over the window clears the readings'
scatter about it and a floor of a MiB, and where the peak itself kept rising: the highest
reading of the window's last quarter clears every earlier one in it.  A leak's line and its
peak rise together; a sawtooth's or a spike's line can be steep (the slopes within its
ramps), while its later peaks only reach its earlier ones, and a limit needs the peak.
Readings at the end that fell
well under the line (a cache cleared, the interpreter's teardown) are left out of the fit:
the memory rose with the run's length until then, and so did its peak.
"""

from __future__ import annotations

import array
import dataclasses
import math
import statistics
from collections.abc import Sequence

from ..model import MemoryGrowth, RunResult
from ..units import format_binary

TRACE_POINTS = 4096
"""Readings kept for the fit: past it every other one is dropped and the stride doubles, so
an hour read every millisecond costs 64 KiB, and the slope of the second half is still
fitted over 1024 to 2048 evenly spaced readings."""

FIT_POINTS = 200
"""Readings of the window the pairwise slopes are taken over (evenly chosen): 19 900 pairs,
a few milliseconds once at the run's end."""

MIN_READINGS = 6
"""Readings the window needs, the run twice as many: with fewer the median slope and the
scatter are guesses.  A run of 1.2 s or more read every 0.1 s has them (the tester's
1.0 to 1.2 s ``leak.py --iterations 40`` runs, 10 to 12 readings, are too short to tell)."""

MIN_WINDOW_S = 0.1
"""Nor a window (the second half of the readings) shorter than this, the run about twice as
long: the readings of an interpreter's start-up rise like a leak, and ``--interval 0.001``
(which a short run's hint suggests) gives them :data:`MIN_READINGS`.  Measured at 1 ms on
this busy 2-core host: ``python -c pass`` (50–80 ms) warned in 2 of 4 runs, its 19–20 ms
window rising 0.64–0.73 MiB (31–39 MiB/s); a tester's ``quick.py`` (a phase, an iteration
and a mark, 0.12–0.15 s) in 1 of 3, over a 61 ms window.  A leak of 1 MiB every 10 ms for
0.3 s still reads: its 150 ms window rose 13.0 MiB (87.0 MiB/s; at the default 0.1 s, 5
readings, too few); 1 MiB every 50 ms for 2 s, 1.0 s windows, 19.2–20.1 MiB/s at both
intervals."""

NOISE_FACTOR = 4.0
"""The rise over the window must be this many times the readings' scatter about the line
(1.4826 × the residuals' median absolute deviation).  Measured, read every 0.1 s on a busy
2-core host: the tester's ``leak.py --iterations 200`` (0.5 MiB a request) rose 56.8 MiB
over its second half with a scatter of 1.31 MiB (43×; again here: 60.6 and 1.43); its 35
runs of 1.6 s or more rose 5 to 80 times their scatter.  Not leaking: its ``--plateau 60``
run rose 0.00 (scatter 0.00), with ``--free-at-end`` too -0.92 MiB;
``examples/quickstart/infer.py --iterations 200`` 0.00 (0.00); a numpy loop allocating and
freeing 32 MiB an iteration -0.32 MiB (0.08)."""

MIN_RISE = 2**20
"""The rise over the window must be at least this many bytes: a guard against an
interpreter's or a runtime's arenas creeping up by a few pages, which no limit need be sized
for, while a leak's rise grows with the run's length (whatever the size of the model: a
share of the peak had missed a 200 KiB/s leak on a 200 MiB baseline).  Measured, read every
0.1 s: the largest rise of a run that was not leaking, yet cleared its scatter and kept its
peak rising, was 0.50 MiB (a 1.5 s script, 25.2 → 25.4 → 25.7 MiB in steps of pages; an
``examples/benchmark/infer.py`` SqueezeNet run 0.44 MiB); the smallest leak, ``svc.py leak``
at 200 KiB/s for 20 s (``fit``'s runs), rose 1.64 to 2.24 MiB over its 10 s window.  The
soak tester's 300 s and 90 s plateaus did not rise at all."""

PEAK_PARTS = 4
"""The peak's check compares the highest reading of the window's last 1/4 with the highest
before it in the window.  A cycle (a buffer filled and freed) shorter than the rest of the
window, 3/8 of the run, reaches its top before the last part, so its last part reaches no
higher: the soak tester's 30 s sawtooth over 90 s (a 45 s window) read 105.7 MiB at most in
its last 11 s against 105.9 before, while its line rose 83 MiB.  A cycle longer than that
cannot be told from growth within the run."""

PEAK_SHARE = 0.25
"""The last part's highest reading must clear the earlier highest by this share of the
line's rise over the part.  A leak's clears it by about the whole of it (0.85 to 1.3 times:
``svc.py leak`` at 200 KiB/s on a 200 MiB baseline, +2.27 MiB against 2.25 MiB of line; at
1000 KiB/s +6.17 against 6.20); a sawtooth's or a spike's not at all (-0.25 MiB against
20.8; a model's warm-up levelling off at 147.1 MiB, +0.00 against 4.56).  A quarter, not a
half, because a leak's last part can end in a flat tail (the interpreter's exit after the
last request): a tester's ``leak.py --sleep 0.002`` squeezed near its limit rose 2.50 MiB in
its last 0.3 s against 8.93 MiB of line."""


class MemoryTrace:
    """A run's memory readings (time since the spawn; the usage, and anon + shmem + kernel
    where the backend splits it), thinned to at most :data:`TRACE_POINTS` evenly spaced
    ones (96 KiB).  Not thread-safe: the sampler's thread alone adds."""

    def __init__(self, cap: int = TRACE_POINTS) -> None:
        self._cap = cap
        self._t = array.array("d")
        self._v = array.array("d")
        self._held = array.array("d")
        self._stride = 1
        self._seen = 0
        self._split = True
        """Whether every reading kept had the split (one without it: the usage is fitted)."""

    def add(self, t: float, v: int, held: int | None = None) -> None:
        """``v``: the usage; ``held``: its anon + shmem + kernel (``None``: no split)."""
        seen, self._seen = self._seen, self._seen + 1
        if seen % self._stride:
            return
        self._t.append(t)
        self._v.append(float(v))
        self._held.append(math.nan if held is None else float(held))
        self._split = self._split and held is not None
        if len(self._t) >= self._cap:
            self._t = self._t[::2]
            self._v = self._v[::2]
            self._held = self._held[::2]
            self._stride *= 2

    @property
    def page_cache(self) -> bool:
        """Whether :meth:`points` are the usage, page cache in it: a reading had no split."""
        return not self._split

    def points(self) -> list[tuple[float, float]]:
        """The anon + shmem + kernel readings, or the usage's where one had no split."""
        return list(zip(self._t, self._v if self.page_cache else self._held, strict=True))


def theil_sen(points: Sequence[tuple[float, float]]) -> float:
    """The median of the slopes between every two readings at different times."""
    step = max(1, len(points) // FIT_POINTS)
    pts = points[::step]
    slopes = [
        (v2 - v1) / (t2 - t1)
        for i, (t1, v1) in enumerate(pts)
        for t2, v2 in pts[i + 1 :]
        if t2 > t1
    ]
    return statistics.median(slopes) if slopes else 0.0


def memory_growth(
    points: Sequence[tuple[float, float]],
    end_s: float,
    iterations: Sequence[tuple[float, float]] | None = None,
    page_cache: bool = False,
) -> MemoryGrowth | None:
    """The growth of the readings taken up to ``end_s`` (the main process's exit) over the
    second half of them, or ``None`` where the memory levelled off, rose no more than its
    scatter or under :data:`MIN_RISE`, or its peak did not keep rising
    (:func:`_peak_rises`), or where that half is too short to tell (:data:`MIN_READINGS`,
    :data:`MIN_WINDOW_S`).  ``iterations``: (start, end) of every iteration the workload
    reported (``None``: not all are known), for the growth per iteration
    (:func:`_per_iteration`); ``page_cache``: the readings are the usage, page cache in it
    (the backend gave no split)."""
    pts = [(t, v) for t, v in points if t <= end_s]
    if len(pts) < 2 * MIN_READINGS:
        return None
    mid = (pts[0][0] + pts[-1][0]) / 2
    if iterations:
        first = min(s for s, _ in iterations)
        if first > mid:
            # The iterations began in the second half: what came before them (a model's
            # load) is no growth a longer run repeats, so their own span is judged, which a
            # span too short to tell leaves unwarned.  A model read at --read-bps 10m for
            # 6.4 s of a 7 s run had made its second half the load, and its 30 flat
            # iterations had been warned of as growing at the read's 10 MiB/s.
            own = [(t, v) for t, v in pts if t >= first]
            return memory_growth(own, end_s, iterations, page_cache)
    window = [(t, v) for t, v in pts if t >= mid]
    if window[-1][0] - window[0][0] < MIN_WINDOW_S:
        return None  # a start-up's rise, not a leak (MIN_WINDOW_S)
    fitted = _fit(window)
    if fitted is None:
        return None
    kept = _before_free(window, *fitted)
    if len(kept) < len(window):  # fitted again without the free: it had tilted the line
        fitted = _fit(kept)
        if fitted is None:
            return None
    slope, _, noise = fitted
    t0, t1 = kept[0][0], kept[-1][0]
    rise = slope * (t1 - t0)
    if rise <= NOISE_FACTOR * noise or rise < MIN_RISE or not _peak_rises(kept, slope):
        return None
    return MemoryGrowth(
        per_s=slope,
        per_iteration=None if not iterations else _per_iteration(kept, iterations),
        from_s=t0,
        to_s=t1,
        rise_bytes=round(rise),
        noise_bytes=round(noise),
        page_cache=page_cache,
    )


ITERATIONS_COVER = 0.75
"""The share of the growth window the iterations' span (the first one's start to the last
one's end) must cover for a growth per iteration: "most" of it, leaving a quarter for a
start-up before the first or a teardown after the last.  Chosen, not measured; what it
refuses was measured: the I/O tester's ``phased.py`` read 200 MiB in a ``load`` phase,
then ran 20 iterations that allocated nothing, from 2.016 s in a 1.108 to 2.111 s window
(9.5 % of it); the whole rise, before them, had been divided by the 16 iterations that
ended in it: "+6.02MiB/iteration" of a leak that did not exist."""


def _per_iteration(
    window: Sequence[tuple[float, float]], iterations: Sequence[tuple[float, float]]
) -> float | None:
    """The growth per iteration, measured over the iterations' own span within the window:
    the line fitted to the readings in it, times the span, over the iterations that ended
    in it.  ``None`` where the span covers under :data:`ITERATIONS_COVER` of the window,
    where the readings within it do not rise (:func:`_fit`: the growth came from outside the
    iterations), or where under two iterations ended in it."""
    t0, t1 = window[0][0], window[-1][0]
    a = max(t0, min(s for s, _ in iterations))
    b = min(t1, max(e for _, e in iterations))
    if b - a < ITERATIONS_COVER * (t1 - t0):
        return None
    fitted = _fit([(t, v) for t, v in window if a <= t <= b])
    n = sum(1 for _, e in iterations if a <= e <= b)
    if fitted is None or n < 2:
        return None
    return fitted[0] * (b - a) / n


def per_iteration(b: float) -> str:
    """``0.50MiB``: two decimals from 0.1 MiB, where a leak of half a MiB a request would
    read ``512.0KiB`` beside a rate in MiB a second; smaller ones in their own unit, so
    with two significant digits at least (``21.7KiB``: at 0.01 MiB and up, ``0.02MiB`` had
    stood for anything from 15 to 25 KiB)."""
    return f"{b / 2**20:.2f}MiB" if b >= 2**20 / 10 else format_binary(b)


def _fit(window: Sequence[tuple[float, float]]) -> tuple[float, float, float] | None:
    """(slope, intercept, scatter) of the robust line, ``None`` where it does not rise."""
    if len(window) < MIN_READINGS or window[-1][0] <= window[0][0]:
        return None
    slope = theil_sen(window)
    if slope <= 0:
        return None
    intercept = statistics.median(v - slope * t for t, v in window)
    residuals = [v - (intercept + slope * t) for t, v in window]
    centre = statistics.median(residuals)
    noise = 1.4826 * statistics.median(abs(r - centre) for r in residuals)
    return slope, intercept, noise


def _peak_rises(window: Sequence[tuple[float, float]], slope: float) -> bool:
    """Whether the highest reading of the window's last :data:`PEAK_PARTS`-th clears the
    highest before it by :data:`PEAK_SHARE` of the line's rise over that part: the peak, what
    a limit needs, kept rising with the line (not a sawtooth's or a spike's repeated top)."""
    t0, t1 = window[0][0], window[-1][0]
    cut = t1 - (t1 - t0) / PEAK_PARTS
    # Both parts hold a reading: the window's first is before the cut (t1 > t0), its last after.
    before = max(v for t, v in window if t < cut)
    last = max(v for t, v in window if t >= cut)
    return last - before >= PEAK_SHARE * slope * (t1 - cut)


def _before_free(
    window: Sequence[tuple[float, float]], slope: float, intercept: float, noise: float
) -> Sequence[tuple[float, float]]:
    """The window without its last readings that fell well under the line (more than
    half its rise and :data:`NOISE_FACTOR` × its scatter): memory freed at the end, by the
    workload or by the interpreter's teardown before its exit (a tester's ``leak.py``
    read 97.6, 63.9 and 16.9 MiB in its last 0.2 s).  Freed at the end, the memory still
    rose with the run's length until then, and its peak (a limit's need) with it."""
    rise = slope * (window[-1][0] - window[0][0])
    under = max(rise / 2, NOISE_FACTOR * noise)
    end = len(window)
    while end > 0 and window[end - 1][1] < intercept + slope * window[end - 1][0] - under:
        end -= 1
    return window[:end]


def rate(g: MemoryGrowth) -> str:
    """``+0.50MiB/iteration (+17.4MiB/s)``, or ``+17.4MiB/s`` without iterations; ``… of
    the usage, page cache included`` where the backend gave no split of it."""
    said = f"+{format_binary(g.per_s)}/s"
    if g.per_iteration is not None:
        said = f"+{per_iteration(g.per_iteration)}/iteration ({said})"
    return f"{said} of the usage, page cache included" if g.page_cache else said


def growth_warning(g: MemoryGrowth) -> str:
    """``memory grew through the run's second half: +0.50MiB/iteration (+17.4MiB/s), not
    levelled off: …``: one line for the run's warnings; of the usage (no split), it says
    that page cache, which a limit can drop, is in it."""
    of = f" ({NO_SPLIT})" if g.page_cache else ""
    return (
        f"memory grew through the run's second half: {rate(g)}{of}, not levelled off: a limit "
        "that fits this run's length may not fit a longer one"
    )


NO_SPLIT = "this backend does not split the usage, and a limit can drop page cache"


def with_growth(
    result: RunResult,
    points: Sequence[tuple[float, float]],
    end_s: float,
    iterations: Sequence[tuple[float, float]] | None,
    page_cache: bool = False,
) -> RunResult:
    """``result`` with its memory's growth (:func:`memory_growth`) and its warning."""
    g = memory_growth(points, end_s, iterations, page_cache)
    if g is None:
        return result
    return dataclasses.replace(
        result,
        memory=dataclasses.replace(result.memory, growth=g),
        warnings=(*result.warnings, growth_warning(g)),
    )
