"""A run's memory in words: what its peak was made of, what its limit cost it, and
whether it fits that limit."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from ..analysis.gpu_headroom import GpuFit
from ..analysis.headroom import (
    Headroom,
    LimitFit,
    changed_limit,
    charging_slack,
    over_limit,
    unattributed,
)
from ..analysis.rereads import Reread
from ..measure.growth import rate
from ..model import MemoryGrowth, MemoryParts, MemoryPressure, RunResult
from ..units import counted, format_binary, format_share

KIB, MIB = 1024, 1024**2


def _tenths(n: int, unit: int) -> int:
    """``n`` bytes in tenths of ``unit``, rounded as ``f"{n / unit:.1f}"`` rounds (half to
    even, exact: ``n / unit`` is a binary fraction), so a figure printed from it reads as
    :func:`~edgeprof.units.format_binary` prints the same bytes."""
    return round(Fraction(10 * n, unit))


def _unit(n: int) -> tuple[int, str]:
    """KiB for what :func:`~edgeprof.units.format_binary` prints in bytes or KiB, else MiB:
    a 256 KiB peak's parts had all read ``0.0`` or ``0.1 MiB``."""
    return (KIB, "KiB") if _tenths(n, KIB) < 10 * KIB else (MIB, "MiB")


def _figure(tenths: int | None) -> str:
    return "n/a" if tenths is None else f"{tenths // 10}.{tenths % 10}"


def _apportioned(values: list[int | None], unit: int) -> list[int | None]:
    """``values`` in tenths of ``unit``, each within a tenth of its own and together exactly
    their sum's (largest remainder): rounded one by one, ``53.84 + 128.04 + 0.24`` prints
    ``53.8 + 128.0 + 0.2``, a tenth short of the 182.1 they add up to.  ``None`` stays."""
    known = [i for i, v in enumerate(values) if v is not None]
    out: list[int | None] = [None if v is None else 10 * v // unit for v in values]
    short = _tenths(sum(values[i] or 0 for i in known), unit) - sum(out[i] or 0 for i in known)
    # The largest remainders first; a tie to the earlier term.
    for i in sorted(known, key=lambda i: -(10 * (values[i] or 0) % unit))[:short]:
        out[i] = (out[i] or 0) + 1
    return out


def composition(
    parts: MemoryParts | None,
    peak: int | None,
    cpus: int = 1,
    exit_s: float | None = None,
    name_sample: bool = False,
    source: str | None = "kernel",
) -> str | None:
    """``peak 184.1MiB = anon 55.7 + file 128.0 + kernel 0.2 MiB`` (shmem when there is
    any), the parts as at the sample whose parts add up highest (``MemoryStats.at_peak``);
    ``None`` without a composition.
    The "=" is written only where the terms add up to the peak at the precision printed:
    the terms are rounded so that they add up to their own sum (:func:`_apportioned`), in
    KiB under a MiB.  Elsewhere both are said, each with its own figure: ``peak 256.0KiB
    (the kernel's); at the sample whose parts add up highest, 104.0KiB = anon 0.0 + file
    48.0 + kernel 56.0 KiB``.  The kernel's peak and a sample's ``memory.stat`` rarely
    agree to a tenth of a MiB (the kernel batches both a CPU at a time; a peak is reached
    between samples; an OOM kill): ``run -- true`` had printed ``peak 256.0KiB = anon 0.0
    + file 0.0 + kernel 0.1 MiB`` for parts of 104 KiB, and the README ``peak 66.1MiB =
    anon 65.5 + file 0.0 + kernel 0.2 MiB``.  ``name_sample``: the equation names its
    sample too.  A sample read after the main process's exit at ``exit_s`` (only where
    none was read before it) is said to be: its memory is freed (``anon 0.0``).
    ``source``: the peak's (``MemoryStats.peak_source``): only the kernel's mark is called
    the kernel's (a process backend's peak raised to a phase's reading had been)."""
    if parts is None or peak is None:
        return None
    after = exit_s is not None and parts.t_s is not None and parts.t_s > exit_s
    whose = "the kernel's" if source == "kernel" else "its highest reading"
    return _composition(parts, peak, cpus, after, name_sample, whose)


def not_in_peak(elsewhere: int | None) -> str:
    """What the memory line adds of files the run mapped that were cached before it,
    charged to other groups (:func:`~edgeprof.analysis.headroom.mapped_elsewhere`): in no
    peak here, its own memory on a device; ``""`` for ``None``."""
    if elsewhere is None:
        return ""
    return (
        f"; not in it: {format_binary(elsewhere)} of files it mapped that were cached before "
        "it, charged to other groups (e.g. shared libraries), which a device charges to the run"
    )


def _composition(
    parts: MemoryParts, peak: int, cpus: int, after: bool, name_sample: bool, whose: str
) -> str:
    names = ["anon", "file", *(["shmem"] if parts.shmem else []), "kernel"]
    values: list[int | None] = [getattr(parts, n) for n in names]
    # The stat file lagged the usage: a term of its own, not an equation off by it.
    gap = unattributed(parts, cpus)
    if gap is not None:
        values.append(gap)
    # What the printed terms add up to; a part not measured ("n/a": the process backend's
    # kernel memory, which its resident-set peak leaves out too) adds nothing.
    made = sum(v for v in values if v is not None)
    # One saying of which sample the parts are of (a line had said "at the highest
    # sample" and "(at the sample whose parts add up highest)" of one sample).
    which = "read after it exited" if after else "at the sample whose parts add up highest"
    unit, name = _unit(peak)
    if _tenths(peak, unit) == _tenths(made, unit) and format_binary(peak) == format_binary(made):
        named = f" ({which})" if after or name_sample else ""
        return f"peak {format_binary(peak)} = {_terms(names, values, unit, name)}{named}"
    # The parts add up to something else at the precision printed (a peak reached between
    # samples, the kernel's batching of its counters, an OOM kill): both figures, each
    # with its own, and no "=" between the peak and parts that do not make it.
    unit, name = _unit(made)
    sampled = _figure(_tenths(made, unit)) + name
    return (
        f"peak {format_binary(peak)} ({whose}); {which}, {sampled} = "
        + _terms(names, values, unit, name)
    )


def _terms(names: list[str], values: list[int | None], unit: int, name: str) -> str:
    """``anon 55.7 + file 128.0 + kernel 0.2 MiB`` (``+ 21.5MiB not yet in memory.stat``
    for a value past ``names``), rounded so that they add up to their sum as printed."""
    shown = _apportioned(values, unit)
    made_of = " + ".join(f"{n} {_figure(t)}" for n, t in zip(names, shown, strict=False))
    made_of += f" {name}"
    if len(values) > len(names):
        made_of += f" + {_figure(shown[-1])}{name} not yet in memory.stat"
    return made_of


def cost(p: MemoryPressure | None, below: int | None = None) -> str | None:
    """``stalled 0.012s, refaults 0, major faults 3, reclaimed 1520 pages, OOM events 0``:
    what the kernel reports of it (a v1-only host has no stall figure).  ``below``: the
    peak of a run that stayed clearly below its limit
    (:func:`~edgeprof.analysis.headroom.below_limit`), whose refaults are said not to be
    the limit's: "refaults 9138" under 512 MiB at a 315 MiB peak had read as thrashing."""
    if p is None:
        return None
    parts = []
    if p.stall_some_s is not None:
        parts.append(f"stalled {p.stall_some_s:.3f}s")
    if p.refaults_anon is not None or p.refaults_file is not None:
        n = (p.refaults_anon or 0) + (p.refaults_file or 0)
        parts.append(f"refaults {n}" + (_not_the_limits(below) if n else ""))
    if p.major_faults is not None:
        parts.append(f"major faults {p.major_faults}")
    if p.reclaimed is not None:
        parts.append(f"reclaimed {p.reclaimed} pages")
    if p.events_oom is not None:
        parts.append(f"OOM events {p.events_oom}")
    return ", ".join(parts) or None


def _not_the_limits(below: int | None) -> str:
    """Why a run's refaults are not its limit's, where its peak stayed below the limit."""
    if below is None:
        return ""
    return (
        f" (not the limit's: the peak, {format_binary(below)}, stayed below it; a page the "
        "host evicted is a refault when read back, without a limit too)"
    )


def gpu_headroom(f: GpuFit | None) -> str | None:
    """``GPU memory 2.0GiB: fits, peak 1.3GiB, 716.8MiB to spare (enforced in-process)``, or
    on a device with one memory for CPU and GPU, their sum against it."""
    if f is None:
        return None
    device = f" (device {f.device})" if f.device else ""
    if f.unified:
        head = f"memory {format_binary(f.limit)} shared by CPU and GPU{device}"
        parts = f"host {format_binary(f.host)} + GPU {format_binary(f.gpu)}"
        amount = f"{parts} = {format_binary(f.used)}"
    else:
        head = f"GPU memory {format_binary(f.limit)}{device}"
        amount = f"peak {format_binary(f.used)}"
    how = (
        "enforced in-process by PyTorch's per-process memory fraction"
        if f.enforced
        else "checked against the measured peak, not enforced"
    )
    if f.fits:
        said = f"fits, {amount}, {format_binary(f.limit - f.used)} to spare"
    else:
        said = f"does not fit: {amount}, {format_binary(f.used - f.limit)} over"
    return f"{head}: {said} ({how})"


def spare(whole: int, used: int) -> str:
    """``whole - used`` in binary units, or ``all but USED`` where rounding would print it as
    ``whole`` itself (``fits in 100.0GiB with 100.0GiB to spare`` for a 20 MiB need)."""
    rest = format_binary(whole - used)
    if used > 0 and rest == format_binary(whole):
        return f"all but {format_binary(used)}"
    return rest


def _share(part: int, whole: int) -> str:
    """``40%``; ``>99%`` where a part short of the whole would round to 100 %."""
    pct = 100 * part / whole
    return ">99%" if part < whole and round(pct) >= 100 else f"{pct:.0f}%"


def headroom(f: LimitFit | None, runs: int = 1) -> str | None:
    """``memory limit 2.0GiB (device rpi4-2gb): fits, peak 184.3MiB, 1.8GiB to spare (91%)``:
    the run's verdict against its limit (:mod:`edgeprof.analysis.headroom`)."""
    if f is None:
        return None
    source = ""
    if f.device and f.replaced:  # the option's limit, not the device's
        source = f" (--memory, replacing device {f.device}'s)"
    elif f.device:
        source = f" (device {f.device})"
    head = f"memory limit {format_binary(f.limit)}{source}"
    stall = ""
    if f.stall_share is not None:
        stall = f"stalled {format_share(f.stall_share)} of the wall time"
    floor = "" if f.used is None else f"anon + shmem + kernel {format_binary(f.used)}"
    if f.warm_only:
        whole = f.on_device
        assert f.used is not None and f.elsewhere is not None and whole is not None
        # At the limit the peak is the limit's: what the run holds is its floor (fit's rule);
        # below it, the peak less the page cache a device's limit would drop.
        held = f.held
        assert held is not None
        own = (
            floor
            if f.status is Headroom.AT_LIMIT
            else f"peak {format_binary(f.used)}"
            if held == f.used
            else f"peak {format_binary(f.used)} less its page cache, {format_binary(held)},"
        )
        said = (
            f"fits here only because {format_binary(f.elsewhere)} of the files it mapped were "
            "cached before it, charged to other groups (e.g. shared libraries): "
            f"{own} + those = {format_binary(whole)}, "
            f"{format_binary(whole - f.limit)} over the limit; on a device they are its own"
        )
        if f.status is Headroom.AT_LIMIT:
            said += _missed(f)
    elif f.status is Headroom.FITS:
        assert f.used is not None and f.spare is not None
        said = (
            f"fits, peak {format_binary(f.used)}, {spare(f.limit, f.used)} to spare "
            f"({_share(f.spare, f.limit)})"
        )
        if f.timed_out is not None:  # no share: it would read as the service's for good
            said = (
                f"{_held(f.timed_out, f.interrupted)}, peak {format_binary(f.used)}, "
                f"{spare(f.limit, f.used)} to spare"
            )
        if f.at_edge:  # fit's rule (headroom.charging_slack): no limit to run at
            said = (
                f"fits at the edge, peak {format_binary(f.used)}, only "
                f"{spare(f.limit, f.used)} to spare, under the "
                f"{format_binary(charging_slack(f.limit))} the kernel may charge ahead: a run "
                "holding a little more is OOM-killed here (edgeprof fit finds a limit with room)"
            )
        if f.elsewhere is not None:
            held = f.held
            assert held is not None
            left = f.limit - held - f.elsewhere
            beside = "" if held == f.used else " beside the peak less its page cache"
            said += (
                f"; it also mapped {format_binary(f.elsewhere)} of files cached before it, "
                "charged to other groups (e.g. shared libraries): its own on a device, "
                f"which leaves {format_binary(max(0, left))}{beside}"
            )
            if left < charging_slack(f.limit) and not f.at_edge:
                # fit's rule on a device: "fits" here had sat beside fit's "does not fit
                # in 122.0MiB: 972.0KiB short" for the same script (a user's).
                said += (
                    f", under the {format_binary(charging_slack(f.limit))} the kernel may "
                    "charge ahead: at the edge on a device (edgeprof fit finds a limit with "
                    "room)"
                )
    elif f.status is Headroom.AT_LIMIT:
        no_stall = (  # v1 without the unified hierarchy, where PSI would follow the run
            " (no stall figure on a cgroup v1 host without the unified hierarchy: "
            "edgeprof fit times the limit)"
        )
        if f.cache is False:  # nothing to drop: the run's own memory met the limit
            said = "fits at the edge: its peak met the limit with no page cache at any sample" + (
                f" ({stall})" if stall else no_stall
            )
        else:
            said = "fits at the limit: the kernel dropped page cache to make room" + (
                f" without slowing it ({stall})" if stall else no_stall
            )
        if f.used is not None and f.spare is not None:
            said += f"; {floor} leaves {format_binary(f.spare)}{_missed(f)}"
    elif f.status is Headroom.REREAD and f.reread is not None:
        unseen = f" and no memory stall counts ({stall})" if stall else ""
        said = (
            f"fits at the limit only by re-reading: {_reread(f.reread)}, which costs time on "
            f"the device's storage that this host's disk may hide{unseen}: edgeprof fit "
            "times the limit"
        ) + (f"; {floor}{_missed(f)}" if floor else "")
    elif f.status is Headroom.SLOWED and f.reread_wait is not None and f.reread is not None:
        said = (
            f"slowed by re-reading: {_reread(f.reread)}, at the storage read speed asked: "
            f"about {format_share(f.reread_wait)} of its wall time waiting on them, which no "
            "memory stall counts" + (f" ({stall})" if stall else "")
        )
        said += f"; {floor}{_missed(f)}" if floor else ""
        said += "; edgeprof fit finds the limit that does not slow it"
    elif f.status is Headroom.SLOWED:
        said = f"slowed, {stall}" + (f"; {_reread(f.reread)}" if f.reread else "")
        said += f"; {floor}{_missed(f)}" if floor else ""
        said += "; edgeprof fit finds the limit that does not slow it"
    else:
        said = f"does not fit: {_killed(f)}"
    if f.timed_out is not None and not said.startswith(_held(f.timed_out, f.interrupted)):
        said = f"{_held(f.timed_out, f.interrupted)}: {said}"
    if f.elsewhere is not None and f.status in (Headroom.AT_LIMIT, Headroom.REREAD,
                                                 Headroom.SLOWED):  # fmt: skip
        if not f.warm_only:
            said += (
                f"; it also mapped {format_binary(f.elsewhere)} of files cached before it, "
                "charged to other groups (e.g. shared libraries): its own on a device"
            )
        if f.status is Headroom.AT_LIMIT and not f.warm_only and f.spare is not None:
            said += f", which leaves {format_binary(f.spare - f.elsewhere)}"
    if f.growth is not None:
        said += f"; for this run's length only: {growing(f.growth, f.grew, runs)}"
    return f"{head}: {said}" + (f" (the worst of {runs} runs)" if runs > 1 else "")


def growing(g: MemoryGrowth, grew: int = 0, runs: int = 1) -> str:
    """``its memory was still growing (+20.2MiB/s)``; of a cell's runs, in how many, and
    the fastest: ``… growing in 2 of 3 runs (the fastest +20.2MiB/s)``."""
    if runs <= 1 or grew == 0:
        return f"its memory was still growing ({rate(g)})"
    which = "every run" if grew == runs else f"{grew} of {runs} runs"
    return f"its memory was still growing in {which} (the fastest {rate(g)})"


def _held(stopped_s: float, interrupted: bool = False) -> str:
    """The verdict of a run ``--timeout`` stopped is scoped to the time it ran: ``held 4.06s
    until --timeout stopped it, peak 137.2MiB, 374.8MiB to spare`` (a service's run, whose
    end the timeout is, had had no verdict); an interrupted one's alike, ``held 6.20s until
    an interrupt stopped it``."""
    by = "an interrupt" if interrupted else "--timeout"
    return f"held {stopped_s:.2f}s until {by} stopped it"


def changed(runs: Sequence[RunResult]) -> str | None:
    """``memory limit 64.0MiB: the workload changed its memory limit from 64.0MiB to
    unlimited: no verdict``: said in place of the verdict a run whose workload wrote its own
    limit has none of (:func:`~edgeprof.analysis.headroom.changed_limit`); of a cell's
    runs, the first such, and how many."""
    found = [(r, _change_said(r)) for r in runs]
    found = [(r, said) for r, said in found if said is not None]
    if not found:
        return None
    r, said = found[0]
    said = f"memory limit {format_binary(r.memory.limit_bytes)}: {said}: no verdict"
    return said + (f" ({len(found)} of {len(runs)} runs)" if len(runs) > 1 else "")


def _change_said(r: RunResult) -> str | None:
    """How the workload changed its memory limit: as read back at the end, or, where it
    had put the limit back, as its peak above the limit proves
    (:func:`~edgeprof.analysis.headroom.over_limit`)."""
    if (c := changed_limit(r)) is not None:
        asked = "unlimited" if c.asked is None else format_binary(c.asked)
        now = "unlimited" if c.now is None else format_binary(c.now)
        return f"the workload changed its memory limit from {asked} to {now}"
    if (peak := over_limit(r)) is None:
        return None
    return (
        f"its peak, {format_binary(peak)}, is above the limit, which the kernel does not "
        "allow: the workload changed its memory limit during the run and put it back (it "
        "can write its own group's files as root)"
    )


def _killed(f: LimitFit) -> str:
    """Who the OOM killer ended, and the next step: the run needs more than its limit, and
    ``fit`` finds how much (the "slowed" verdict names it too).  A kill of a process other
    than the main one is said: ``forkers.py``'s parent exited 0 after one of its 3 workers
    was killed, and "OOM-killed" had read as the whole run's.  Where the run reported
    iterations, how many it completed (``after 125 iterations``), and fit's answer is said
    to hold for the command's own length."""
    at = "" if f.used is None else f" at a peak of {format_binary(f.used)}"
    if f.iterations is not None:
        at += f" after {counted(f.iterations, 'iteration')}"
    if f.main_exit is None:
        who = f"OOM-killed{at}"
    else:
        n = f.oom_kills or 0
        which = f"{n} of its other processes" if n > 1 else "another of its processes"
        who = f"the OOM killer ended {which}{at} (not the main one, which exited {f.main_exit})"
    needs = f"{who}; it needs more than {format_binary(f.limit)}"
    if f.iterations is None:
        return f"{needs}: edgeprof fit finds how much"
    # Cut short mid-stream: what it needs may grow with its iterations (a leak), and fit
    # measures the command as given, so its answer holds for that many iterations only.
    return (
        f"{needs}: edgeprof fit finds how much for the iterations this command runs "
        "(a run longer than that may need more)"
    )


def _reread(r: Reread) -> str:
    """``it re-read 500.0MiB it had been made to drop (refaults 128000; 1000.0MiB read from
    storage in all)``: the figures behind "only by re-reading" (:mod:`~edgeprof.analysis.rereads`),
    which the memory stall share does not show (a tester's two epochs under 256 MiB had read
    "without slowing it (stalled 2.1% of the wall time)" at 1.9x the unlimited wall)."""
    read = ""
    if r.read_bytes is not None:
        read = f"; {format_binary(r.read_bytes)} read from storage in all"
    return (
        f"it re-read {format_binary(r.bytes)} it had been made to drop "
        f"(refaults {r.refaults}{read})"
    )


def _missed(f: LimitFit) -> str:
    """What a floor read at samples that all missed the peak is worth."""
    if not f.floor_between:
        return ""
    finer = (
        "at edgeprof's finest interval, 1ms: edgeprof fit times the limit"
        if f.finest
        else "--interval finer"
    )
    return f" (read at samples that missed the peak: the run may have held more; {finer})"
