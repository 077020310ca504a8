"""The smallest memory a run needs: the bisection ``edgeprof fit`` drives, and its verdicts.

Pure logic over :class:`~edgeprof.model.RunResult` and a ``probe`` callable (one limit in,
one verdict out), so the search is tested without a kernel; :mod:`edgeprof.sweeps.fit`
makes the runs.

The search brackets the answer between two facts of the unlimited run:

* the **floor**: the highest anonymous + shared + kernel memory of any sample (swap off, no
  limit can take those back), below which nothing completes;
* the **peak**: the kernel's high-water mark; a limit at the peak changes nothing, so the
  run is known to complete there without trying it.

A probe passes when the run ends as the unlimited one did (same exit status) and its time
(the latency p50 when the workload reports iterations, else the wall time) is within the
tolerance of the unlimited run's.  The first probe is the floor (a script whose memory is
all its own finishes at once) or, with a ceiling below the peak, the ceiling (a script that
cannot fit it finishes at once); then bisection to the resolution.  So at most
⌈log2(range / resolution)⌉ + 1 probes: :func:`max_probes`; one more where a probe failed
for a reason other than memory, since the peak is then tried rather than assumed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model import RunResult, Termination

PAGE = 4096
MIB = 1 << 20
MIN_LIMIT = 6 * MIB
"""The smallest memory limit edgeprof sets (Docker's floor)."""
DEFAULT_TOLERANCE = 0.10
DEFAULT_MARGIN = 0.20
"""The answer plus 20 %: headroom for inputs larger than the one profiled and for the
allocator's variation between runs (a fitted limit is the edge, not a place to run)."""
DEFAULT_RESOLUTION_FRACTION = 0.02
"""Default resolution: 2 % of the unlimited peak, at least 1 MiB (7 probes for a script
whose floor is a quarter of its peak)."""
REPEAT_ON_DOUBT = 3
"""Runs of a probe whose time lies within the reference runs' spread of the threshold."""


@dataclass(frozen=True)
class Timing:
    """What a run is judged by: ``latency p50`` when it reports iterations, else ``wall``."""

    metric: str
    seconds: float


def timing(r: RunResult) -> Timing:
    if r.latency is not None and r.latency.count > 0:
        return Timing("latency p50", r.latency.p50_s)
    return Timing("wall", r.wall_s)


def median_time(runs: Sequence[RunResult]) -> Timing:
    """The runs' median time; no runs (a fit interrupted in its first warm-up): 0 s of wall."""
    if not runs:
        return Timing("wall", 0.0)
    metric = timing(runs[0]).metric
    return Timing(metric, statistics.median(timing(r).seconds for r in runs))


def spread(runs: Sequence[RunResult]) -> float:
    """(max − min) / min of the runs' times: the noise the verdicts allow for."""
    times = [timing(r).seconds for r in runs]
    return 0.0 if len(times) < 2 or min(times) <= 0 else (max(times) - min(times)) / min(times)


def noise_warning(noise: float, tolerance: float) -> str | None:
    """What a reference spread wider than the tolerance does to the search, and what to do
    about it (``None``: it does not).  The verdicts allow for the spread only near the
    threshold (:func:`in_doubt`): with a spread of 90 % against a 10 % tolerance, a probe's
    time says more about the run than about its limit."""
    if noise <= tolerance + 1e-9:
        return None
    return (
        f"the unlimited runs' times spread {100 * noise:.0f}%, more than the "
        f"{100 * tolerance:.0f}% tolerance: a probe's verdict may be that noise, not its "
        "limit; give more reference runs (--repeat N), a quieter host, or a larger --tolerance"
    )


@dataclass(frozen=True)
class Bounds:
    floor: int
    peak: int
    ceiling: int | None
    """The most the device has (``--memory`` or the device's), ``None``: no ceiling."""
    resolution: int

    @property
    def top(self) -> int:
        """The highest limit worth asking for: the peak, or a ceiling below it."""
        return self.peak if self.ceiling is None else min(self.peak, self.ceiling // PAGE * PAGE)


def bounds(reference: Sequence[RunResult], ceiling: int | None, resolution: int | None) -> Bounds:
    """The search's bracket from the unlimited runs."""
    peaks = [r.memory.peak_bytes for r in reference if r.memory.peak_bytes is not None]
    peak = max(peaks) if peaks else 0
    floors = [r.memory.floor_bytes for r in reference if r.memory.floor_bytes is not None]
    if floors:
        floor = max(floors)
    else:  # no composition (the Docker stats API): the working set is the nearest thing
        ws = [
            r.memory.peak_working_set_bytes
            for r in reference
            if r.memory.peak_working_set_bytes is not None
        ]
        floor = max(ws) if ws else 0
    floor = max(MIN_LIMIT, min(_page(floor), _page(peak)))
    peak = max(floor, _page(peak))
    if resolution is None:
        resolution = max(MIB, _page(int(peak * DEFAULT_RESOLUTION_FRACTION)))
    # Whole pages: the midpoints are pages, and a step of a page and a half would cost the
    # bound one probe.
    return Bounds(floor, peak, ceiling, max(PAGE, _page(resolution)))


def _page(n: int) -> int:
    """Rounded up to a whole page: the kernel keeps limits in pages."""
    return -(-n // PAGE) * PAGE


def max_probes(b: Bounds) -> int:
    """⌈log2(range / resolution)⌉ + 1: the most limited runs (probes) the search makes."""
    span = max(0, b.top - b.floor)
    return (math.ceil(math.log2(span / b.resolution)) if span > b.resolution else 0) + 1


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str
    """``fits``, ``oom``, ``timeout``, ``exit 1 (unlimited: 0)``, ``+35% slower``…"""
    memory: bool = True
    """A failure for want of memory (an OOM kill, or slower than the tolerance), which a
    limit at the unlimited peak cures; ``False``: it failed otherwise (an exit code, a
    signal, a timeout), which the peak need not cure (a script that refuses a limit under
    100 MiB exited 1 at every probe below its 27 MiB peak, and at the peak too)."""


def verdict(runs: Sequence[RunResult], reference: Timing, ref_end: RunResult,
            tolerance: float) -> Verdict:  # fmt: skip
    """Whether ``runs`` (one limit) did what the unlimited run did, in time."""
    for r in runs:
        if r.termination is not Termination.EXITED:
            return Verdict(False, r.termination.value, r.termination is Termination.OOM)
        if r.exit_code != ref_end.exit_code:
            return Verdict(False, f"exit {r.exit_code} (unlimited: {ref_end.exit_code})", False)
    t = median_time(runs).seconds
    slower = t / reference.seconds - 1 if reference.seconds > 0 else 0.0
    if slower > tolerance + 1e-9:  # exactly at the tolerance fits (1.1 / 1.0 - 1 > 0.1)
        return Verdict(False, f"{100 * slower:+.0f}% slower")
    return Verdict(True, f"fits ({100 * slower:+.0f}%)")


def in_doubt(runs: Sequence[RunResult], reference: Timing, tolerance: float,
             noise: float) -> bool:  # fmt: skip
    """A single run whose time lies within the reference's noise of the threshold: one more
    run could turn its verdict, so it is repeated (:data:`REPEAT_ON_DOUBT` in all)."""
    if len(runs) != 1 or runs[0].termination is not Termination.EXITED or noise <= 0:
        return False
    threshold = reference.seconds * (1 + tolerance)
    return abs(timing(runs[0]).seconds - threshold) <= noise * threshold


@dataclass(frozen=True)
class SearchResult:
    answer: int | None
    """The smallest limit that passed (``None``: nothing up to the ceiling did)."""
    tried: tuple[tuple[int, bool], ...]
    """(limit, passed), in the order tried."""


def search(b: Bounds, probe: Callable[[int], bool | Verdict]) -> SearchResult:
    """Bisect for the smallest passing limit in [floor, top], to ``b.resolution``.

    ``probe(limit)`` runs the workload under ``limit`` and says whether it passed (its
    :class:`Verdict`, or just ``True``/``False``: a failure then counts as for memory).
    The peak is taken as passing without a run only while every failure was for want of
    memory: after one that was not (:attr:`Verdict.memory`), the answer is probed before it
    is given, and ``None`` where it fails too.
    """
    tried: list[tuple[int, bool]] = []
    otherwise = False  # a probe failed for a reason other than memory

    def attempt(limit: int) -> bool:
        nonlocal otherwise
        got = probe(limit)
        ok = got if isinstance(got, bool) else got.ok
        if isinstance(got, Verdict) and not got.ok and not got.memory:
            otherwise = True
        tried.append((limit, ok))
        return ok

    if b.ceiling is not None and b.ceiling < b.peak:
        # Tried even when the floor is above it: "does not fit" is shown by a run, not
        # assumed from the floor.
        if not attempt(b.top):
            return SearchResult(None, tuple(tried))
        lo, hi = b.floor, b.top  # the floor is not tried: bisection ends within a step of it
    else:
        if attempt(b.floor):
            return SearchResult(b.floor, tuple(tried))
        lo, hi = b.floor, b.peak  # the peak passes without trying: nothing is reclaimed
    while hi - lo > b.resolution:
        mid = _page((lo + hi) // 2)
        if mid >= hi:
            break
        if attempt(mid):
            hi = mid
        else:
            lo = mid
    if otherwise and (hi, False) in tried:  # a floor at the peak: its one probe failed so
        return SearchResult(None, tuple(tried))
    if otherwise and all(limit != hi for limit, _ in tried) and not attempt(hi):
        return SearchResult(None, tuple(tried))
    return SearchResult(hi, tuple(tried))


def with_margin(answer: int, margin: float) -> int:
    return _page(math.ceil(answer * (1 + margin)))
