"""Whether a run fits the memory it was given (a ``--device``'s, or ``--memory``), and with
what margin: the device-language verdict of ``edgeprof run``.

A limited run is itself the evidence; this reads it, it does not predict.  Five outcomes:

* **fits**: the peak stayed below the limit, so nothing was reclaimed to make room; the
  margin is the limit less the peak;
* **fits at the limit**: the peak reached the limit and the run still completed without
  stalling on memory: the kernel dropped page cache the run could spare.  The peak says
  nothing then (it is the limit); the margin is the limit less what no limit can take back,
  the anon + shmem + kernel floor;
* **fits at the limit only by re-reading**: it reached the limit without stalling on
  memory, but read back from storage what the kernel had dropped, at least
  :data:`~edgeprof.analysis.rereads.REREAD_SHARE` of the limit (refaults): PSI counts that
  I/O wait as no memory stall, and its cost is the device's storage's, which this host's
  disk may hide (:mod:`edgeprof.analysis.rereads`);
* **slowed**: it completed, but stalled on memory (PSI) for more than
  :data:`~edgeprof.measure.memory.STALL_WARN_FRACTION` of its wall time: it runs in the
  limit, not comfortably;
* **does not fit**: the kernel's OOM killer ended it (or one of its processes).

"Reached the limit" is ``memory.events`` ``max`` > 0 (cgroup v2) or a peak within
:data:`AT_LIMIT_SLACK` of the limit: v1 charges cache up to the limit and then reclaims,
so a peak that comes that close has met it, unless no sample held page cache to reclaim
(then it is the run's own peak, and "fits" with what it left).  A v1-only host (no unified
hierarchy, whose ``memory.pressure`` a hybrid host's runs read) has no stall figure: a run
that reached its limit there is "fits at the limit" with the stall unknown, and says so.
A run that ``--timeout`` or an interrupt stopped gets the verdict of what it held until then.
A run that ended otherwise (a non-zero exit without an OOM kill, a signal) gets no verdict:
its memory is not what stopped it, or cannot be told apart from what did.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from ..measure.inputs import MIN_INTERVAL_S
from ..measure.limit_changes import memory_change
from ..measure.memory import STALL_WARN_FRACTION
from ..model import LimitChange, MemoryGrowth, MemoryParts, RunResult, Termination
from .rereads import Reread, reread, reread_wait

MIB = 1 << 20
PAGE = 4096
AT_LIMIT_SLACK = 0.01
"""A peak within 1 % of the limit (at least 1 MiB) has reached it: cgroup v1 has no
``memory.events``, and its page counter charges in per-CPU batches, so the peak that met
the limit need not equal it to the page (measured: 100.0 MiB under 100 MiB here)."""


MEMCG_CHARGE_BATCH = 64
"""Pages: the kernel's per-CPU batch for a memory group's charges and statistics
(``include/linux/memcontrol.h``; 32 before Linux 6.1)."""

STAT_LAG_PER_CPU = 2 * MEMCG_CHARGE_BATCH * PAGE
"""How far one reading of a group's ``memory.stat`` may lag what it counts, per CPU of the
host (the second point of :data:`BATCH_PER_CPU`): 512 KiB a CPU."""

BATCH_PER_CPU = MEMCG_CHARGE_BATCH * PAGE + STAT_LAG_PER_CPU
"""How far a group's usage counter and the sum of its ``memory.stat`` parts may be apart at
one instant, per CPU of the host, with nothing reached between them:

* the usage counter holds pages charged ahead of use: ``try_charge`` charges
  ``MEMCG_CHARGE_BATCH`` pages at a time and ``refill_stock`` keeps what is not yet used on
  the CPU, up to a batch a CPU;
* ``memory.stat`` lags what it counts: ``memcg_rstat_updated`` keeps a CPU's changes until
  they reach a batch, and a read flushes them only once the group's pending changes pass a
  batch a CPU (``memcg_vmstats_needs_flush``): up to two batches a CPU not yet counted.

768 KiB a CPU: 1.5 MiB on this 2-CPU host, 12 MiB on 16.  Not a share of the peak: a fixed
5 % had let ``peak 262.3MiB = anon 249.4 + file 0.0 + kernel 0.7 MiB`` (a sum of 250.1)
pass as an equation, in a tester's report."""

MAPPED_ELSEWHERE_MIN = 8 * MIB
"""The least ``memory.mapped_elsewhere_bytes`` worth saying (:func:`mapped_elsewhere`), or
twice the kernel's batching (:data:`BATCH_PER_CPU` a CPU) where that is more: the figure is
the difference of two batched counters (the group's statistics, and each process's resident
set counters, read per CPU since Linux 6.2).  8 MiB clears what every Python run maps of
cached code, the interpreter and libc (``RssFile`` 5.8–6.0 MiB for ``python3 -S``, 6.0 MiB
for this venv's interpreter, measured here), so a plain script is not told of it; torch's
libraries are ~80 MiB (a tester's ``RssFile``)."""


def charging_slack(n: int) -> int:
    """The kernel's charging slack at ``n`` bytes (:data:`AT_LIMIT_SLACK`: 1 %, at least
    1 MiB), in whole pages: a peak that comes this close to its limit has met it, and a run
    must leave this much under its limit to be an answer.  ``run``'s verdict
    (:func:`limit_fit`) and ``fit``'s (:func:`~edgeprof.analysis.fit_bounds.slack`) both take it:
    ``run --memory 59m -- python3 leak.py 5 11`` had said "fits, 828.0KiB to spare (1%)"
    where fit counts such a run at the edge."""
    return -(-max(MIB, int(AT_LIMIT_SLACK * n)) // PAGE) * PAGE


def with_mapped(used: int, elsewhere: int | None) -> int:
    """What a run holds on a device: ``used`` here and the files it mapped that other groups
    had cached (:func:`mapped_elsewhere`), which no peak here counts and which are its own
    memory there.  ``run``'s verdict (:attr:`LimitFit.warm_only`) and ``fit``'s
    (:attr:`~edgeprof.sweeps.fit_outcome.FitOutcome.device_need`) both take it: fit had
    said "fits in 512.0MiB with 59.0MiB to spare" for ``torchmodel.py 3072`` (an answer of
    453.0 MiB, 80.1 MiB of torch's libraries mapped elsewhere: 533.1 MiB) where ``run`` at
    512 MiB said "8.3MiB over the limit" (a tester's)."""
    return used + (elsewhere or 0)


def over_device(used: int, elsewhere: int | None, limit: int) -> int | None:
    """How far what a run holds on a device (:func:`with_mapped`) exceeds ``limit``; ``None``
    where it fits.  The one rule of ``run``'s verdict (:attr:`LimitFit.warm_only`, from the
    peak below the limit or the anon + shmem + kernel floor at it) and ``fit``'s
    (:attr:`~edgeprof.sweeps.fit_outcome.FitOutcome.fits`, from its answer): ``run --memory
    420m`` of a checkpointing torch script had said "fits at the limit … anon + shmem + kernel
    355.6MiB leaves 64.4MiB" (exit 0) beside 99.9 MiB of torch's libraries mapped elsewhere,
    455.5 MiB on a device, where ``fit --memory 420m`` said "does not fit" (a tester's)."""
    over = with_mapped(used, elsewhere) - limit
    return over if over > 0 else None


def sampled_total(parts: MemoryParts | None) -> int | None:
    """The highest sample's usage (its parts' sum where the usage was not read)."""
    if parts is None:
        return None
    known = (parts.anon, parts.file, parts.shmem or 0, parts.kernel)
    if parts.total is None and None not in known:
        return sum(n for n in known if n is not None)
    return parts.total


def stat_lag(cpus: int) -> int:
    """How far one reading of ``memory.stat`` may lag the kernel's count
    (:data:`STAT_LAG_PER_CPU` a CPU): two readings of the same memory may differ by this."""
    return STAT_LAG_PER_CPU * max(1, cpus)


def batching(cpus: int) -> int:
    """How far a reading of ``memory.stat`` may be from its group's usage with nothing
    between them: the kernel's per-CPU batching (:data:`BATCH_PER_CPU`)."""
    return BATCH_PER_CPU * max(1, cpus)


def between_samples(parts: MemoryParts | None, peak: int | None, cpus: int) -> bool:
    """The peak was reached (and left) between two samples: the highest sample lies well
    below it, more than the kernel's batching of its statistics allows."""
    sampled = sampled_total(parts)
    if sampled is None or peak is None:
        return False
    return peak - sampled > batching(cpus)


def split_unknown(parts: MemoryParts | None, peak: int | None) -> bool:
    """The peak's anon + shmem + kernel share is unknown: no sample reached the kernel's
    peak (by more than a page) while page cache was there to fill the gap.  Under a limit,
    a heap spike between samples displaces cache and leaves the total where it was, so
    the floor read at the samples can be short of what the run held: an 80 MiB heap held
    for 10 ms under 100 MiB, after a 128 MiB read, gave floors of 68.7, 71.8 and 88.0 MiB
    (it needs ~88 MiB: ``--memory 75m`` is OOM-killed), with the highest sample 99.9 MiB
    against a 100 MiB peak, within :func:`between_samples`' allowance."""
    sampled = sampled_total(parts)
    if parts is None or sampled is None or peak is None or not parts.file:
        return False
    return peak - sampled > PAGE


def unattributed(parts: MemoryParts | None, cpus: int) -> int | None:
    """How much of a sample's usage its ``memory.stat`` parts leave out, where that is more
    than the kernel's batching of the statistics allows (``None`` otherwise): the stat file
    can lag the usage counter, and "peak 190.9MiB = anon 169.0 + …" had been an equation
    off by 21.5 MiB (a tester's 1 run in 6)."""
    if parts is None or parts.total is None or None in (parts.anon, parts.file, parts.kernel):
        return None
    made = (parts.anon or 0) + (parts.file or 0) + (parts.shmem or 0) + (parts.kernel or 0)
    gap = parts.total - made
    return gap if gap > batching(cpus) else None


class Headroom(str, enum.Enum):
    FITS = "fits"
    AT_LIMIT = "fits at the limit"
    REREAD = "fits at the limit only by re-reading"
    SLOWED = "slowed"
    DOES_NOT_FIT = "does not fit"

    @property
    def ok(self) -> bool:
        # Not REREAD: what its re-reads cost on the device's storage is untimed here.
        return self in (Headroom.FITS, Headroom.AT_LIMIT)


_WORST_FIRST = (Headroom.DOES_NOT_FIT, Headroom.SLOWED, Headroom.REREAD, Headroom.AT_LIMIT,
                Headroom.FITS)  # fmt: skip


@dataclass(frozen=True)
class LimitFit:
    """One run (or the worst of a cell's runs) against the memory limit it ran under."""

    status: Headroom
    limit: int
    used: int | None
    """What the margin is taken from: the peak (``FITS``), the anon + shmem + kernel floor
    (``AT_LIMIT``/``REREAD``/``SLOWED``; ``None`` without a composition), or the peak at the
    OOM."""
    stall_share: float | None
    """Memory stall (PSI ``some``) as a share of the wall time; ``None``: not measured."""
    device: str | None = None
    floor_between: bool = False
    """The floor (``AT_LIMIT``/``REREAD``/``SLOWED``) was read at samples that all missed the
    peak: the run may have held more than it (a 64 MiB read then 24 MiB held, under 50 MiB:
    floors of 5.9, 8.0 and 18.0 MiB in a tester's three runs at 0.1 s)."""
    cache: bool | None = None
    """At the limit: whether a sample held page cache to drop (at least the slack of
    :data:`AT_LIMIT_SLACK`); ``False``: none at any sample, so the peak met the limit with
    what the run itself held (150 MiB of anon under 158 MiB, ``file`` 0 at every sample, had
    read "the kernel dropped page cache to make room"); ``None``: not known."""
    replaced: bool = False
    """``--memory`` replaced the ``device``'s memory: the limit is the option's, not the
    device's."""
    elsewhere: int | None = None
    """Files the run had mapped that were cached before it, charged to other groups
    (:func:`mapped_elsewhere`): its own memory on a device, in no peak here."""
    main_exit: int | None = None
    """``DOES_NOT_FIT``: the main process's own exit code where it exited by itself, so the
    OOM killer ended another of the run's processes (``forkers.py``: 1 of 3 workers killed,
    the parent exited 0); ``None``: the main process was killed, or it is not known."""
    oom_kills: int | None = None
    """``DOES_NOT_FIT``: the kernel's count of the group's OOM kills, where it gives one."""
    reread: Reread | None = None
    """``REREAD`` (or ``SLOWED``): what it read back of the cache the limit made it drop."""
    reread_wait: float | None = None
    """``SLOWED`` by its re-reads rather than by a memory stall: the share of its wall time
    it waited on them at the device's read speed (:func:`.rereads.reread_wait`)."""
    growth: MemoryGrowth | None = None
    """It fits (or fits at the limit) with its memory still growing at the end
    (``memory.growth``): the verdict holds for this run's length only.  A tester's
    ``leak.py`` at 0.5 MiB a request had read "fits, peak 97.7MiB, 414.3MiB to spare (81%)"
    under 512 MiB, and was OOM-killed there at 1 MiB a request after 491 of them."""
    grew: int = 0
    """Of a cell's runs (:func:`worst_fit`), how many grew; :attr:`growth` is then the
    fastest of them, not only the worst run's (a tester's three runs under 69.6 MiB all
    grew, the verdict's +20.2 MiB/s beside two warnings of +20.0 MiB/s).  0: one run's
    verdict, whose :attr:`growth` is its own."""
    iterations: int | None = None
    """``DOES_NOT_FIT``: the iterations the run completed before the kill, where it reported
    any (``latency.count``): ``leak.py`` under 80 MiB was killed after 125, which only the
    Latency table's ITER column had said; ``None``: none reported."""
    timed_out: float | None = None
    """The wall time at which ``--timeout`` stopped the run, whose verdict is then of what it
    held until that stop; ``None``: it ended by itself.  A service has no end of its own: a
    tester's ``run --timeout 4 --memory 512m`` of one (peak 137.2 MiB) had had no verdict at
    all, where every other run under a memory limit gets one."""
    interrupted: bool = False
    """The stop at :attr:`timed_out` was an interrupt of edgeprof (Ctrl-C, SIGTERM), not
    ``--timeout``: a soak tester's ``kill -TERM`` 6 s into a service's run under ``--memory
    256m`` had had no verdict, where the same service stopped by ``--timeout`` had one."""

    @property
    def held(self) -> int | None:
        """What the run itself held, which the files mapped ``elsewhere`` add to on a device:
        its own memory at the peak (:attr:`own`: the peak less its page cache, which a
        device's limit drops) where it fits below the limit, else ``used``.  The peak had
        been taken whole: 8 MiB of a numpy script's page cache made ``run`` say "5.3MiB over"
        a limit that ``fit`` had answered for the same script (its probes dropped that cache)."""
        if self.status is Headroom.FITS and self.own is not None and self.cache_known:
            return self.own
        return self.used

    @property
    def on_device(self) -> int | None:
        """:attr:`held` with the files mapped ``elsewhere`` (:func:`with_mapped`)."""
        held = self.held
        return None if held is None else with_mapped(held, self.elsewhere)

    @property
    def warm_only(self) -> bool:
        """It fits here (below the limit, or at it) only because of ``elsewhere``:
        :attr:`held` (the run's own memory at the peak, or the floor at the limit) and those
        exceed the limit (:func:`over_device`, ``fit``'s rule too)."""
        held = self.held
        return (
            self.status.ok
            and self.elsewhere is not None
            and held is not None
            and over_device(held, self.elsewhere, self.limit) is not None
        )

    own: int | None = None
    """``FITS``: the run's own memory at its peak (:func:`own_at_peak`), which
    :attr:`at_edge` judges; ``None``: not known, and ``used`` (the peak) is judged."""
    cache_known: bool = False
    """``FITS``: the samples read the run's page cache, so :attr:`own` is the peak less it
    (not the floor alone, which samples can read below the peak): :attr:`held` takes it."""
    finest: bool = False
    """Its samples were at edgeprof's finest interval: no ``--interval`` reads finer (a user
    at 0.001 s had been told "--interval finer")."""

    @property
    def at_edge(self) -> bool:
        """It fits, but its own memory (:attr:`own`) left less than the kernel's charging
        slack under the limit (:func:`charging_slack`), so a run holding a little more is
        OOM-killed there.  The one rule of ``run``'s and ``report``'s verdict and of ``fit``'s
        probes (:func:`~edgeprof.analysis.need.at_the_edge`): ``leak.py 5 11`` (peak 58.2 MiB
        under 59 MiB, 828 KiB to spare) had fitted here where fit refused it, and ``fit`` of
        ``leak.py 0 20480 3`` answered 68.2 MiB ("each run left at least 1.0MiB", from floors
        of 66.2 MiB read at samples) where ``report`` of its probes said "fits at the edge …
        only 792.0KiB to spare" (kernel peaks of 67.3-67.4 MiB with no page cache at any
        sample)."""
        mine = self.used if self.own is None else self.own
        return (
            self.status is Headroom.FITS
            and mine is not None
            and self.limit - mine < charging_slack(self.limit)
        )

    @property
    def own_spare(self) -> int | None:
        """The limit less the run's own memory (:attr:`own`, else ``used``), never negative."""
        mine = self.used if self.own is None else self.own
        return None if mine is None else max(0, self.limit - mine)

    @property
    def spare(self) -> int | None:
        """The limit less ``used`` (never negative), ``None`` when ``used`` is unknown."""
        return None if self.used is None else max(0, self.limit - self.used)


def limit_fit(r: RunResult) -> LimitFit | None:
    """The verdict for one run, ``None`` without a memory limit or a memory-telling end."""
    f = _limit_fit(r)
    if f is not None and r.device is not None and "--memory" in r.device_replaced:
        f = dataclasses.replace(f, replaced=True)
    if f is not None and f.status is not Headroom.DOES_NOT_FIT:
        f = dataclasses.replace(f, elsewhere=mapped_elsewhere(r))
    if f is not None and f.status.ok and r.memory.growth is not None:
        f = dataclasses.replace(f, growth=r.memory.growth)
    if f is not None and f.floor_between and r.samples.interval_s <= MIN_INTERVAL_S:
        f = dataclasses.replace(f, finest=True)
    return f


def mapped_elsewhere(r: RunResult) -> int | None:
    """``memory.mapped_elsewhere_bytes`` where it is worth saying
    (:data:`MAPPED_ELSEWHERE_MIN`), else ``None``."""
    m = r.memory.mapped_elsewhere_bytes
    least = max(MAPPED_ELSEWHERE_MIN, 2 * BATCH_PER_CPU * max(1, r.host.cpus))
    return m if m is not None and m >= least else None


def changed_limit(r: RunResult) -> LimitChange | None:
    """The run's memory limit as the workload changed it (it can write its group's files as
    root), which leaves the run no verdict against the limit edgeprof set: a ``--memory
    64m`` run that raised it to unlimited had "fitted at the edge" with a 207.6 MiB peak."""
    return memory_change(r.limits_changed)


def over_limit(r: RunResult) -> int | None:
    """The run's peak where it lies above the memory limit edgeprof set by more than the
    kernel's batching (:func:`batching`) allows, ``None`` otherwise: the kernel charges no
    more than the limit, so such a peak means the workload changed its limit during the run
    and put it back before the end, where :func:`changed_limit` reads it (a ``--memory 64m``
    run that raised it, allocated 200 MiB and wrote 64 MiB back had "fitted at the edge"
    with a 207.5 MiB peak, a tester's)."""
    limit, peak = r.memory.limit_bytes, r.memory.peak_bytes
    if limit is None or limit <= 0 or peak is None:
        return None
    return peak if peak - limit > batching(r.host.cpus) else None


def _limit_fit(r: RunResult) -> LimitFit | None:
    limit = r.memory.limit_bytes
    if limit is None or limit <= 0 or changed_limit(r) is not None or over_limit(r) is not None:
        return None
    p = r.memory.pressure
    stall = None
    if p is not None and p.stall_some_s is not None and r.wall_s > 0:
        stall = p.stall_some_s / r.wall_s
    if r.termination is Termination.OOM or (r.memory.oom_kills or 0) > 0:
        # No signal and an exit code: the main process exited by itself, so the kill was
        # another process's.
        exited = r.exit_code if r.signal is None else None
        return LimitFit(Headroom.DOES_NOT_FIT, limit, r.memory.peak_bytes, stall, r.device,
                        main_exit=exited, oom_kills=r.memory.oom_kills,
                        iterations=None if r.latency is None else r.latency.count)  # fmt: skip
    if r.termination in (Termination.TIMEOUT, Termination.INTERRUPTED):
        # Stopped from outside, not by its memory: a verdict of what it held until then.
        fit = _held(r, limit, stall)
        interrupted = r.termination is Termination.INTERRUPTED
        return None if fit is None else dataclasses.replace(
            fit, timed_out=r.wall_s, interrupted=interrupted
        )
    if r.termination is not Termination.EXITED or r.exit_code != 0:
        return None
    return _held(r, limit, stall)


def _held(r: RunResult, limit: int, stall: float | None) -> LimitFit | None:
    """The verdict of a run that the limit did not kill, from its peak, its floor, its
    memory stalls and what it re-read (:func:`~edgeprof.analysis.rereads.reread`)."""
    p = r.memory.pressure
    between = between_samples(r.memory.at_peak, r.memory.peak_bytes, r.host.cpus)
    between = between or split_unknown(r.memory.at_peak, r.memory.peak_bytes)
    back = reread(r)
    if stall is not None and stall > STALL_WARN_FRACTION:
        return LimitFit(Headroom.SLOWED, limit, r.memory.floor_bytes, stall, r.device, between,
                        reread=back)  # fmt: skip
    peak = r.memory.peak_bytes
    if peak is None:  # nothing to tell the margin by
        return None
    slack = charging_slack(limit)
    # Near the limit with no page cache at any sample, nothing was there to drop: the peak
    # is the run's own (seen: 99.4 MiB of anon under 100 MiB, as under 1 GiB), and the
    # margin is what it left.
    cache = None if r.memory.peaks is None else r.memory.peaks.file
    if cache is not None and cache < slack and _had_cache(r, slack):
        cache = slack  # between the samples: the counters saw it charged and dropped
    reached = (
        (p is not None and (p.events_max or 0) > 0)
        or peak >= limit - PAGE  # at the limit to the page: met it, whatever the samples saw
        or (peak >= limit - slack and (cache is None or cache >= slack))
    )
    if reached:
        had = None if cache is None else cache >= slack
        # Re-reads are I/O wait, which no memory stall counts (analysis/rereads.py); with no
        # page cache at any sample, "fits at the edge" (cache False) is the stricter verdict.
        if back is not None and had is not False:
            waited = reread_wait(r, back)
            if waited is not None and waited > STALL_WARN_FRACTION:
                # Timed at the device's read speed: the wait is the limit's cost, measured.
                return LimitFit(Headroom.SLOWED, limit, r.memory.floor_bytes, stall, r.device,
                                between, had, reread=back, reread_wait=waited)  # fmt: skip
            return LimitFit(Headroom.REREAD, limit, r.memory.floor_bytes, stall, r.device,
                            between, had, reread=back)  # fmt: skip
        return LimitFit(Headroom.AT_LIMIT, limit, r.memory.floor_bytes, stall, r.device,
                        between, had)
    return LimitFit(Headroom.FITS, limit, peak, stall, r.device, own=own_at_peak(r),
                    cache_known=cache is not None)  # fmt: skip


def _had_cache(r: RunResult, slack: int) -> bool:
    """Whether the run had page cache to drop though no sample held it: it read at least the
    slack from storage (through the page cache, unless with ``O_DIRECT``), the kernel
    reclaimed as much from its group (``pgsteal``: cgroup v2; without swap, only cache is
    reclaimed), or it read evicted file pages back.  ``read_and_hold.py`` read 128 MiB under
    56.1 MiB in runs that sampled no cache: one of 6 had been "at the edge: no page cache at
    any sample", and made ``fit`` refuse the limit the other fits answered (a user's)."""
    p = r.memory.pressure
    reclaimed = 0 if p is None else (p.reclaimed or 0) * PAGE
    refaulted = 0 if p is None else p.refaults_file or 0
    return (r.io.read_bytes or 0) >= slack or reclaimed >= slack or refaulted > 0


def own_at_peak(r: RunResult) -> int | None:
    """The run's own memory at its peak, which no limit takes back: the kernel's peak less
    the most page cache any sample held, or the anon + shmem + kernel floor where that is
    higher; the floor alone where the cache is unknown, the peak where both are.  Not the
    floor alone: it is read at the samples, which can miss the peak (a leak's floors of
    66.2 MiB beside kernel peaks of 67.3-67.4 MiB, with no page cache at any sample)."""
    m = r.memory
    cache = None if m.peaks is None else m.peaks.file
    known = [n for n in (m.floor_bytes,) if n is not None]
    if m.peak_bytes is not None and cache is not None:
        known.append(m.peak_bytes - cache)
    return max(known) if known else m.peak_bytes


def below_limit(r: RunResult) -> bool:
    """The run's memory stayed clearly below its limit: no OOM kill, no ``memory.events``
    ``max``, and the kernel's own peak more than :func:`charging_slack` under the limit.
    The limit then reclaimed nothing, so the refaults the run counted are not its: a page any
    reclaim evicted (the host's, before or during the run) is a refault when the run reads
    it back (a torch script had 1145 without a limit, 320 under 1 GiB at a 155 MiB peak,
    9138 under 512 MiB at a 315 MiB peak, in a tester's runs).  ``False`` where it cannot be
    told (no limit, a peak the kernel did not give)."""
    limit, peak, p = r.memory.limit_bytes, r.memory.peak_bytes, r.memory.pressure
    if limit is None or peak is None or r.memory.peak_source != "kernel":
        return False
    if r.termination is Termination.OOM or (r.memory.oom_kills or 0) > 0:
        return False
    if p is not None and (p.events_max or 0) > 0:
        return False
    return peak < limit - charging_slack(limit)


def worst_fit(runs: list[RunResult]) -> tuple[LimitFit | None, int]:
    """The worst verdict of a cell's runs (a gate trusts its worst run), and how many runs
    had a verdict.  Among equal verdicts, the one with the least to spare."""
    judged = [(r, f) for r in runs if (f := limit_fit(r)) is not None]
    fits = [f for _, f in judged]
    if not fits:
        return None, 0

    def badness(f: LimitFit) -> tuple[float, float, int]:
        # At the edge (its own memory met the limit) is worse than any other fit: "fits at
        # the limit" by dropped cache had been "the worst of 6 runs" beside a run at the
        # edge, which fit refuses as an answer (a user's).
        edge = f.at_edge or (f.status is Headroom.AT_LIMIT and f.cache is False)
        rank = _WORST_FIRST.index(Headroom.AT_LIMIT) - 0.5 if edge else _WORST_FIRST.index(f.status)
        if f.warm_only:
            # Over the limit on a device, with the files it mapped from others' cache: next
            # to an OOM.  "fits at the limit … leaves 106.0MiB (the worst of 2 runs)" had
            # been said beside a run that fitted only because of 79.8 MiB of them.
            rank = _WORST_FIRST.index(Headroom.DOES_NOT_FIT) + 0.5
        # Slowed, the most slowed: "stalled 6.4% … (the worst of 3 runs)" had been said beside
        # runs of 7.5 and 8.4 % (a tester's).
        slowed = (f.reread_wait or f.stall_share or 0.0) if f.status is Headroom.SLOWED else 0.0
        # Files mapped from others' cache are the run's own on a device: they count.
        return rank, -slowed, -with_mapped(f.used or 0, f.elsewhere)

    worst = min(fits, key=badness)
    fastest, grew = cell_growth([r for r, _ in judged])  # of the runs counted beside it
    if worst.status.ok and fastest is not None and len(fits) > 1:
        # A gate trusts its worst run, but a leak is the cell's: said of every run that grew.
        worst = dataclasses.replace(worst, growth=fastest, grew=grew)
    return worst, len(fits)


def cell_growth(runs: Sequence[RunResult]) -> tuple[MemoryGrowth | None, int]:
    """The fastest growth among a cell's runs (``memory.growth``) and how many runs grew;
    ``(None, 0)`` where every one levelled off."""
    grown = [g for r in runs if (g := r.memory.growth) is not None]
    return max(grown, key=lambda g: g.per_s, default=None), len(grown)
