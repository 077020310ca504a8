"""The smallest memory a run needs: the bisection ``edgeprof fit`` drives, and its verdicts.

Pure logic over :class:`~edgeprof.model.RunResult` and a ``probe`` callable (one limit in,
one verdict out), so the search is tested without a kernel; :mod:`edgeprof.sweeps.fit`
makes the runs.

The search brackets the answer between two facts of the unlimited run:

* the **floor**: the highest anonymous + shared + kernel memory of any sample (swap off, no
  limit can take those back), below which nothing completes;
* the **peak**: the kernel's high-water mark; a limit at the peak changes nothing, so the
  run is known to complete there without trying it.

The bracket, and the room a limit must leave above the floor, are
:mod:`edgeprof.analysis.fit_bounds`.

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

from ..measure.memory import STALL_WARN_FRACTION
from ..model import RunResult, Termination
from ..units import format_binary, signed_percent
from .fit_bounds import PAGE, Bounds
from .fit_bounds import page_up as _page
from .fit_times import UNCONTENDED, Timing, median_time, timing
from .headroom import Headroom, limit_fit

DEFAULT_TOLERANCE = 0.10
DEFAULT_MARGIN = 0.20
"""The answer plus 20 %: headroom for inputs larger than the one profiled and for the
allocator's variation between runs (a fitted limit is the edge, not a place to run)."""
REPEAT_ON_DOUBT = 3
"""Runs of a probe whose time lies within the reference runs' spread of the threshold."""


def max_probes(b: Bounds) -> int:
    """⌈log2(range / resolution)⌉ + 1: the most limited runs (probes) the bisection makes
    (a pass its confirmation overturns, and a top that fails, add to them: :func:`search`)."""
    span = max(0, b.top - b.low)
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
    slower: float | None = None
    stall: float | None = None
    """Where a slower run fits by its memory stalls (:func:`memory_slowdown`): how much
    slower it was and how much of that they were, as shares of the unlimited time; ``None``
    for every other verdict."""
    own: bool = False
    """Failed because its own memory met the limit (an OOM kill, or a run at the edge): the
    run's floor is at least this limit, whatever its unlimited runs' samples read."""
    unproven: bool = False
    """Failed on its time alone, with no sign of memory in any run (:func:`memory_evidence`):
    on a busy host, such a failure may be the host's, not the limit's (:attr:`FitOutcome
    .answer_in_doubt <edgeprof.sweeps.fit_outcome.FitOutcome.answer_in_doubt>` says so)."""


@dataclass(frozen=True)
class ReadBack:
    """The most pages one unlimited run read back (:func:`read_back`): what a probe's own
    counts are weighed against, not 0.  Without a limit a run still refaults the pages the
    host's reclaim evicted and major-faults files read for the first time (a torch script:
    1145 refaults unlimited), so a probe with as many shows nothing of its limit."""

    refaults_anon: int = 0
    refaults_file: int = 0
    major_faults: int = 0


def read_back(runs: Sequence[RunResult]) -> ReadBack:
    """The unlimited ``runs``' :class:`ReadBack`: each counter's most (0 where unknown)."""
    pressures = [r.memory.pressure for r in runs if r.memory.pressure is not None]

    def most(field: str) -> int:
        return max((getattr(p, field) or 0 for p in pressures), default=0)

    return ReadBack(most("refaults_anon"), most("refaults_file"), most("major_faults"))


def verdict(
    runs: Sequence[RunResult],
    reference: Timing,
    ref_end: RunResult,
    tolerance: float,
    room: int = 0,
    ref_stall: float | None = None,
    ref_read: ReadBack = ReadBack(),
) -> Verdict:
    """Whether ``runs`` (one limit) did what the unlimited run did, in time, each with
    ``room`` (the :attr:`Bounds.allowance`) to spare (:func:`at_the_edge`).  Slower than
    the tolerance fails where the kernel cannot say what the slowdown was (a v1-only host);
    where it can (``memory.pressure``, cgroup v2 and a hybrid v1 host's unified group;
    ``ref_stall``: the unlimited runs' median stall), only a slowdown the memory stalls
    account for (:func:`memory_slowdown`).  ``ref_read``: what the unlimited runs read
    back, which a probe's refaults and major faults must exceed to be the limit's."""
    for r in runs:
        if r.termination is not Termination.EXITED:
            oom = r.termination is Termination.OOM
            return Verdict(False, r.termination.value, oom, own=oom)
        if r.exit_code != ref_end.exit_code:
            return Verdict(False, f"exit {r.exit_code} (unlimited: {ref_end.exit_code})", False)
    for r in runs:
        edge = at_the_edge(r, room)
        if edge is not None:
            return Verdict(False, edge, own=True)
    for r in runs:
        said = slowed(r, ref_stall, max(STALL_WARN_FRACTION, tolerance / 2))
        if said is not None:
            return Verdict(False, said)
    t = median_time(runs).seconds
    slower = t / reference.seconds - 1 if reference.seconds > 0 else 0.0
    memory = memory_slowdown(runs, ref_stall, reference, ref_read)
    if slower > tolerance + 1e-9 and memory is not None and memory <= tolerance + 1e-9:
        # Slower, but not for memory: the kernel's own account of the stalls says so.
        reason = f"fits ({signed_percent(slower)}, memory stall {signed_percent(memory)})"
        return Verdict(True, reason, slower=slower, stall=memory)
    if slower > tolerance + 1e-9 and not all(map(untouched, runs)):
        # exactly at the tolerance fits (1.1 / 1.0 - 1 > 0.1)
        unproven = memory is None and not memory_evidence(runs, ref_stall, ref_read)
        return Verdict(False, f"{signed_percent(slower)} slower", unproven=unproven)
    if slower > tolerance + 1e-9:
        return Verdict(True, f"fits ({signed_percent(slower)}, limit not reached)")
    return Verdict(True, f"fits ({signed_percent(slower)})")


def slowed(r: RunResult, ref_stall: float | None, most: float) -> str | None:
    """``slowed (memory stall 8.2% of its wall time)`` where ``run`` would call the run
    slowed at this limit (:func:`~edgeprof.analysis.headroom.limit_fit`: more than
    :data:`~edgeprof.measure.memory.STALL_WARN_FRACTION` of its wall time stalled on
    memory, or waiting on what it re-read) and its stall beyond the unlimited runs' own
    (``ref_stall``: the host's, which no limit cures) is over ``most`` of its wall time;
    else ``None``.  Fit had accepted stalls up to its tolerance (10 %) that ``run`` calls
    slowed at 5 %, and ``run`` at fit's answer then sent the user back to fit (a tester's
    52.7 MiB: 5.4 % and 8.2 %).  ``most`` is half the tolerance, at least run's 5 %: the
    tolerance is for the run's whole time, noise and all, so the default (10 %) agrees
    with ``run``, and a wider one (``--tolerance 50%``: slower is fine) accepts more."""
    f = limit_fit(r)
    if f is None or f.status is not Headroom.SLOWED or r.wall_s <= 0:
        return None
    if f.reread_wait is not None:
        if f.reread_wait <= most:
            return None
        return f"slowed (waited {f.reread_wait:.1%} of its wall time re-reading)"
    p = r.memory.pressure
    own = None if p is None or p.stall_some_s is None else p.stall_some_s - (ref_stall or 0.0)
    if own is None or own <= most * r.wall_s:
        return None
    assert f.stall_share is not None
    return f"slowed (memory stall {f.stall_share:.1%} of its wall time)"


def stall(runs: Sequence[RunResult]) -> float | None:
    """The runs' median memory stall (PSI ``some``, seconds); ``None`` where any lacks it."""
    stalls = [r.memory.pressure.stall_some_s for r in runs if r.memory.pressure is not None]
    known = [s for s in stalls if s is not None]
    return statistics.median(known) if known and len(known) == len(runs) else None


def memory_slowdown(
    runs: Sequence[RunResult],
    ref_stall: float | None,
    reference: Timing,
    ref_read: ReadBack = ReadBack(),
) -> float | None:
    """How much longer the runs stalled on memory than the unlimited ones, as a share of the
    unlimited time: the part of a slowdown the limit caused (``None``: not measured, as on
    cgroup v1).  Other tasks on the CPUs, or on the disk, stall no task on memory.

    Not measured either where it would not be that share: against an iteration's latency
    (a whole run's stall over one p50 is no share of it: 5 ms over a 10 ms p50 read
    "+50 %"), or where a run read back file pages the limit evicted (``refaults_file``):
    PSI counts a refault as a memory stall only for pages the kernel marked as working set,
    so a model file streamed from disk again under the limit is I/O wait, not stall, and
    its slowdown is the limit's (a reviewer's reading of ``filemap_read_folio``).  Read
    back beyond what the unlimited runs read back (``ref_read``): those refaults are the
    host's, in every run, and had kept a torch script's probes from their stall."""
    probe = stall(runs)
    if probe is None or ref_stall is None or reference.seconds <= 0:
        return None
    if reference.metric not in ("wall", UNCONTENDED):
        return None
    pressures = [r.memory.pressure for r in runs]
    if any(p is None or p.refaults_file is None for p in pressures):
        return None
    if any((p.refaults_file or 0) > ref_read.refaults_file for p in pressures if p):
        return None
    return max(0.0, probe - ref_stall) / reference.seconds


def memory_evidence(
    runs: Sequence[RunResult], ref_stall: float | None, ref_read: ReadBack = ReadBack()
) -> bool:
    """Whether any run shows the limit in the kernel's memory counters: more pages read
    back (refaults, major faults) than an unlimited run read back (``ref_read``: those are
    the host's reclaim's and first reads, not the limit's), or more memory stall than the
    unlimited runs' where it is measured.  A slower probe without any (and no stall that
    :func:`memory_slowdown` could weigh) failed on its time alone: ``rh.py`` probes at
    154-176 MiB had been "+11 %" to "+28 % slower" with 0 refaults and 0 major faults on a
    busy v1 host, and that fit answered 177.8 MiB where the quiet one answered 59.5."""
    probe = stall(runs)
    if probe is not None and ref_stall is not None and probe > ref_stall:
        return True
    for r in runs:
        p = r.memory.pressure
        if p is None:
            continue
        counts = ((p.refaults_anon, ref_read.refaults_anon),
                  (p.refaults_file, ref_read.refaults_file),
                  (p.major_faults, ref_read.major_faults))  # fmt: skip
        if any((n or 0) > most for n, most in counts):
            return True
    return False


def untouched(r: RunResult) -> bool:
    """The run never reached its limit (:func:`~edgeprof.analysis.headroom.limit_fit`'s
    ``fits``: the peak stayed below it, so nothing was reclaimed to make room), and the limit
    cannot have slowed it: a slower time there is the host's (``true`` under 7 MiB, its peak
    0 B, had been "+48% slower", on a 7 ms run)."""
    f = limit_fit(r)
    return f is not None and f.status is Headroom.FITS


def at_the_edge(r: RunResult, room: int) -> str | None:
    """Why a run that completed under its limit is no answer (``None``: it is one): the run
    report's own verdict (:func:`~edgeprof.analysis.headroom.limit_fit`) that its peak met
    the limit with no page cache to drop, or that below the limit its own memory left less
    than the kernel's charging slack (:attr:`~edgeprof.analysis.headroom.LimitFit.at_edge`),
    or one at the limit whose anon + shmem + kernel memory left less than ``room`` under
    it.  Either way the run's own memory filled the limit,
    and a run holding a little more is OOM-killed there: ``model.py 1024`` passed one probe
    at 180.3 MiB ("fits at the edge … leaves 108.0KiB"), then was OOM-killed in two runs of
    two at that limit."""
    f = limit_fit(r)
    if f is None or f.status is Headroom.DOES_NOT_FIT:
        return None
    if f.status is Headroom.FITS:
        # Below the limit, the report's own rule (LimitFit.at_edge), so that fit's answer and
        # ``report`` of its probes agree.
        own = f.own_spare
        if not f.at_edge or own is None:
            return None
        return f"at the edge, leaves {format_binary(own)}"
    # At the limit: what it leaves over what no limit takes back, the report's own figure.
    spare = f.spare
    left = "" if spare is None else f", leaves {format_binary(max(0, spare))}"
    if f.status is Headroom.AT_LIMIT and f.cache is False:
        return f"at the edge: no page cache{left}"
    if spare is not None and spare < room:
        return f"at the edge{left}"
    return None


def in_doubt(runs: Sequence[RunResult], reference: Timing, tolerance: float,
             noise: float) -> bool:  # fmt: skip
    """A single run whose time lies within the reference's noise of the threshold: one more
    run could turn its verdict, so it is repeated (:data:`REPEAT_ON_DOUBT` in all)."""
    if len(runs) != 1 or runs[0].termination is not Termination.EXITED or noise <= 0:
        return False
    threshold = reference.seconds * (1 + tolerance)
    return abs(timing(runs[0]).seconds - threshold) <= noise * threshold


BISECTED = "bisected"
"""A probe of the bisection in [low, top] (:func:`max_probes` bounds them)."""
OVERTURNED = "overturned"
"""A probe made after a pass its confirmation overturned: the search went on above it."""
RAISED = "raised"
"""A probe above a top that failed for memory (:data:`MAX_RAISES`)."""


@dataclass(frozen=True)
class SearchResult:
    answer: int | None
    """The smallest limit that passed (``None``: nothing up to the ceiling did)."""
    tried: tuple[tuple[int, bool], ...]
    """(limit, passed), in the order tried."""
    made: tuple[str, ...] = ()
    """Why each probe was made (:data:`BISECTED`, :data:`OVERTURNED`, :data:`RAISED`), in
    the order made; a confirmation is no new probe.  ``fit`` had counted every probe past
    :func:`max_probes` as made "above a limit that failed", those after an overturned pass
    too (a reviewer's reading)."""


MAX_RAISES = 4
"""Probes above a top that failed for memory before the search gives up: the step is the
allowance (or the resolution) and doubles each time, so 15 of them above it in all."""


def search(
    b: Bounds,
    probe: Callable[[int], bool | Verdict],
    confirm: Callable[[int], bool | Verdict] | None = None,
    made: list[str] | None = None,
) -> SearchResult:
    """Bisect for the smallest passing limit in [low, top], to ``b.resolution``.

    ``probe(limit)`` runs the workload under ``limit`` and says whether it passed (its
    :class:`Verdict`, or just ``True``/``False``: a failure then counts as for memory).
    ``confirm(limit)``, where given, repeats a passing limit before it is the answer: one run
    is one draw of the run-to-run variation, and a pass that the repeats do not confirm is a
    failure, after which the search goes on above it.

    The top is taken as passing without a run only where it is the unlimited peak with the
    allowance above the floor (:attr:`Bounds.top_passes`) and every failure was for want
    of memory: after one that was not (:attr:`Verdict.memory`), the answer is probed before
    it is given, and ``None`` where it fails too.  A top that is probed and fails for memory
    is no answer either: limits above it are tried (:data:`MAX_RAISES`), up to the ceiling.

    ``made``, where given, is appended why each probe is made before it is (as
    :attr:`SearchResult.made`): a caller whose probe stops the search (an interrupted run)
    keeps it.
    """
    tried: list[tuple[int, bool]] = []
    why = made if made is not None else []
    now = BISECTED  # why the next probe is made
    otherwise = False  # a probe failed for a reason other than memory
    passed: set[int] = set()
    met = 0  # the highest limit the run's own memory met (an OOM kill, at the edge)

    def judged(got: bool | Verdict, limit: int) -> bool:
        nonlocal otherwise, met
        ok = got if isinstance(got, bool) else got.ok
        if isinstance(got, Verdict) and not got.ok and not got.memory:
            otherwise = True
        if isinstance(got, Verdict) and got.own:
            met = max(met, limit)
        tried.append((limit, ok))
        if ok:
            passed.add(limit)
        else:
            passed.discard(limit)
        return ok

    def attempt(limit: int) -> bool:
        why.append(now)
        return judged(probe(limit), limit)

    def result(answer: int | None) -> SearchResult:
        return SearchResult(answer, tuple(tried), tuple(why))

    def confirmed(limit: int) -> bool:
        return confirm is None or judged(confirm(limit), limit)

    top = b.top
    if b.ceiling is not None and b.ceiling < max(b.peak, b.low):
        # Tried even when the floor is above it: "does not fit" is shown by a run, not
        # assumed from the floor.
        if not attempt(top):
            return result(None)
        lo, hi = b.low, top  # the low end is not tried: bisection ends within a step of it
    elif attempt(b.low):
        lo = hi = b.low
    else:
        lo, hi = b.low, top
    raises = 0
    step = max(b.allowance, b.resolution)
    while True:
        while hi - lo > b.resolution:
            mid = _page((lo + hi) // 2)
            if mid >= hi:
                break
            if attempt(mid):
                hi = mid
            else:
                lo = mid
        if hi in passed:
            if confirmed(hi):
                return result(hi)
            lo = hi
            hi = min((p for p in passed if p > lo), default=top)
            now = RAISED if now == RAISED else OVERTURNED
            continue
        # The peak passes without trying where it leaves the room above the floor; a probe
        # whose own memory met a limit within the room below it shows the floor is higher
        # than the unlimited runs' samples read (a spike between them: a fit answered the
        # unprobed peak, 157.5 MiB, over OOM kills at 124-155 MiB, and a run there was "at
        # the edge, only 24.0KiB to spare", a user's): the peak is then probed.
        roomy = met + b.allowance <= top
        if hi == top and b.top_passes and roomy and not otherwise and (top, False) not in tried:
            return result(top)
        if otherwise and (hi, False) in tried:  # a floor at the peak: its one probe failed
            return result(None)
        if (hi, False) not in tried and hi not in passed:
            if attempt(hi):
                continue  # confirmed above
            if otherwise:
                return result(None)
        # The top failed for memory: the runs hold more than the unlimited ones showed.
        up = _page(hi + step)
        ceiling = None if b.ceiling is None else b.ceiling // PAGE * PAGE
        if raises >= MAX_RAISES or (ceiling is not None and up > ceiling) or otherwise:
            return result(None)
        raises += 1
        now = RAISED
        step *= 2
        lo, hi = hi, up
        top = up
        if attempt(up):
            continue
        lo = up


def with_margin(answer: int, margin: float) -> int:
    return _page(math.ceil(answer * (1 + margin)))


def recommended(answer: int, margin: float, b: Bounds, own: int | None = None) -> int:
    """The answer and its margin, but above the unlimited peak only as far as the margin on
    the run's own memory (the floor and its room, :attr:`Bounds.low`) reaches.  At the
    peak nothing is ever reclaimed, so the profiled input needs no more; what the margin is
    for, a larger input or the allocator's variation, grows the run's own memory, which the
    margin on it covers.  An answer of 177.8 MiB under a 185.7 MiB peak (floor 57.5) had been told
    "with a 20 % margin: 213.4 MiB"; now the peak, 185.7.  An answer that is itself the
    run's own memory above its peak (``model.py``: anon 179.3 of a 180.5 MiB peak, answered
    at its floor and room) keeps its whole margin.  ``own``: the run's own memory where the
    probes showed more than the floor (:attr:`~edgeprof.sweeps.fit_outcome.FitOutcome.
    own_memory`): a spike between the samples had left a 159.5 MiB answer no margin, on a
    floor read at 96.7 MiB."""
    mine = with_margin(max(b.low, own or 0), margin)
    return max(answer, min(with_margin(answer, margin), max(b.peak, mine)))
