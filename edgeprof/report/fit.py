"""``edgeprof fit`` rendered: the unlimited run's composition, the curve of probes (limit →
time, stalls, refaults, ending), the answer and the answer with its margin."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.cells import leased_cores
from ..analysis.fit_bounds import MIN_LIMIT, PAGE, slack
from ..analysis.fit_times import LATENCY, Timing, median_time, noise_warning
from ..analysis.need import OVERTURNED, RAISED, untouched, with_margin
from ..measure.growth import rate
from ..measure.io_stall import io_stall_warning, rates_held
from ..model import RunResult, Termination
from ..sweeps.fit_outcome import FitOutcome, Probe
from ..sweeps.fit_reference import setting
from ..units import counted, format_binary, format_seconds, signed_percent
from .memory import composition, spare
from .table import plain_table

_BEYOND = {
    OVERTURNED: "{n} of them after a pass its confirmation overturned",
    RAISED: "{n} more above a top that failed",
}
"""What the probes past the bisection were made for (:attr:`FitOutcome.beyond`).  Those after
an overturned pass bisect again below the bound's limits, and may be within its count: "7
probes (at most 7 to bisect; 6 more after …)" had read as 13 (a user's)."""

CURVE = ("LIMIT", "TIME", "VS UNLIMITED", "STALL", "REFAULTS", "MAJ FAULTS", "END", "VERDICT")


def format_time(t: Timing) -> str:
    """A fit's time in the unit the run report picks (:func:`~edgeprof.units.format_seconds`):
    a latency to two decimals, as ``run``'s latency table shows it, a wall time to one, as
    its statistics do.  Seconds to three decimals had shown a 1.04 ms p50 as ``0.001``
    beside the unlimited runs' ``0.002s`` and "-14%" (a tester's)."""
    return format_seconds(t.seconds, digits=2 if t.metric == LATENCY else 1)


def probe_row(p: Probe, reference_s: float, metric: str | None = None) -> list[str]:
    """A probe's row of the curve.  ``metric``: the unlimited runs' time (``latency p50``);
    a probe timed by another (an OOM-killed run reports no latency: its wall time) names its
    own, which the column had shown beside the others' p50 unnamed (a storage user's)."""
    last = p.runs[-1]
    t = p.to_dict()
    stall = "n/a" if t["stall_s"] is None else f"{t['stall_s']:.3f}s"
    rel = signed_percent(t["time_s"] / reference_s - 1) if reference_s > 0 else "n/a"
    time = median_time(p.runs)
    own = f" {time.metric}" if metric is not None and time.metric != metric else ""
    return [
        format_binary(p.limit),
        format_time(time) + own + (f" ({len(p.runs)} runs)" if len(p.runs) > 1 else ""),
        rel if last.termination.value == "exited" and not last.exit_code else "-",
        stall,
        "n/a" if t["refaults"] is None else str(t["refaults"]),
        "n/a" if t["major_faults"] is None else str(t["major_faults"]),
        _ends(p.runs),
        p.verdict.reason,
    ]


def _ends(runs: Sequence[RunResult]) -> str:
    """How the probe's runs ended: the one end they share, or the failure and how many of
    them had it (an OOM kill in 1 of 3 had read as the last run's plain ``oom``)."""
    ends = [r.end for r in runs if not r.succeeded]
    if not ends or (len(ends) == len(runs) and len(set(ends)) == 1):
        return runs[-1].end
    counts = {e: ends.count(e) for e in ends}  # each end with its own count, first seen first
    return ", ".join(f"{e} in {k} of {len(runs)}" for e, k in counts.items())


def render_fit(outcomes: Sequence[FitOutcome]) -> str:
    return "\n".join(
        _render_one(o) + _budget_line(o) + _noise(o) + _contention(o) + _io_wait(o)
        for o in outcomes
    )


def _noise(o: FitOutcome) -> str:
    """``warning: the unlimited runs' times spread 36%, more than the 10% tolerance: …``:
    the caveat on every verdict of the search, which the progress lines on stderr had
    alone said (a report kept without them lost it; a newcomer's)."""
    if o.method != "bisection" or o.stopped is not None or not o.probes:
        return ""
    said = noise_warning(o.noise, o.tolerance)
    return "" if said is None else f"warning: {said}\n"


def _io_wait(o: FitOutcome) -> str:
    """The unlimited runs' I/O wait line, as ``run`` says it under a run (read from the last
    one's counters): a fit whose workload waited on storage (a model read at ``--read-bps
    20m``, 80 % of its wall time) had shown its time and curve with nothing saying the time
    was the storage's."""
    ref = o.reference[-1] if o.reference else None
    if ref is None:
        return ""
    said = io_stall_warning(ref.io, ref.wall_s, rates_held(ref.limits, ref.limits_changed))
    return "" if said is None else f"warning: unlimited: {said}\n"


def _contention(o: FitOutcome) -> str:
    """``warning: other tasks on this host held 4 of its 6 runs off their CPUs …``: as a
    plain ``run`` warns of it (fit had said nothing)."""
    said = o.contention
    return "" if said is None else f"warning: {said}\n"


def _budget_line(o: FitOutcome) -> str:
    """``budget: memory need 58.0MiB within --max-memory-need 64.0MiB`` (or ``exceeds``)."""
    ok = o.within_budget
    if ok is None or o.budget is None:
        return ""
    budget = f"--max-memory-need {format_binary(o.budget)}"
    if o.answer is None:
        return f"budget: nothing up to the ceiling fits, so over {budget}\n"
    verb = "within" if ok else "exceeds"
    need = o.answer if o.device_need is None else o.device_need
    return f"budget: memory need {format_binary(need)} {verb} {budget}\n"


def _title(o: FitOutcome, r: RunResult) -> str:
    """``python3: cgroup/cgroup1, limits: cpus=1 (each run leased one core: 0 or 1)``: the
    setting as asked, and apart from it the cores edgeprof leased the fit's runs (the
    reference's and the probes')."""
    runs = [*o.reference, *(run for p in o.probes for run in p.runs)]
    return f"{o.label}: {r.backend}/{r.mechanism}, limits: {setting(r)}{leased_cores(runs)}" + (
        f", device {r.device}" if r.device else ""
    ) + _cap_said(o)


def _cap_said(o: FitOutcome) -> str:
    """The memory limit the unlimited runs had, the cap fit set (:attr:`reference_cap`),
    said as ``report`` of the fit's directory says it: fit had said ``limits: none`` of the
    runs ``report`` showed as ``python (memory=21.6GiB)``."""
    if o.reference_cap is None:
        return ""
    return (
        f"; its unlimited runs at memory={format_binary(o.reference_cap)}, the cap fit sets "
        "(the room this host had), not a device's limit"
    )


def _render_one(o: FitOutcome) -> str:
    if o.method == "one-run":
        return _render_squeezed(o)
    ref = o.reference[-1] if o.reference else None
    b = o.bounds
    measured = o.measured_peak
    lines = []
    if ref is not None:
        lines.append(_title(o, ref))
        # The parts of the run whose peak is shown: the last run's, whose samples had missed
        # its peak, read "peak 403.8MiB …; 335.6MiB = anon 334.3 …" beside a floor of 403.4
        # (a user's).
        highest = max(
            (r for r in o.reference if r.memory.peak_bytes is not None),
            key=lambda r: r.memory.peak_bytes or 0,
            default=ref,
        )
        lines.append(
            f"unlimited: {o.time.metric} {format_time(o.time)} ({counted(len(o.reference), 'run')}"
            + (f", spread {100 * o.noise:.0f}%); " if len(o.reference) > 1 else "); ")
            + (
                composition(
                    highest.memory.at_peak, measured, highest.host.cpus, highest.wall_s,
                    source=highest.memory.peak_source,
                )
                or f"peak {format_binary(b.peak if measured is None else measured)}"
            )
        )
    if o.stopped is not None and not o.probes:
        lines.append(f"no search: {o.stopped}")
        return "\n".join(lines) + "\n"
    least = "the least limit edgeprof sets"
    raised = measured is not None and measured < b.peak - PAGE  # lifted to the least limit
    low_is = least if b.floor == MIN_LIMIT else "floor: anon + shmem + kernel"
    high_is = "ceiling" if b.top < b.peak else least if raised else "peak"
    if b.allowance:
        low_is += f" {format_binary(b.floor)} + {format_binary(b.allowance)} of room"
    high_is = "above the peak" if b.top > b.peak else high_is
    low, high = f"{format_binary(b.low)} ({low_is})", f"{format_binary(b.top)} ({high_is})"
    probes = f"{counted(len(o.probes), 'probe')} (at most {o.max_probes}"
    # Each kind counted as the search made it: every probe past the bound had been "above
    # a limit that failed", those after a pass its confirmation overturned too.
    beyond = [_BEYOND[why].format(n=n) for why, n in o.beyond.items()]
    probes += f" to bisect; {', '.join(beyond)})" if beyond else ")"
    searched = o.searched
    # Above the top that failed: the range the probes went to, not only the bracket.
    above = (
        f"; {format_binary(b.top)} failed, so up to {format_binary(searched[1])}"
        if searched is not None and searched[1] > b.top
        else ""
    )
    if b.low > b.top:  # nothing between: the ceiling is below what no limit can reclaim
        # "the 136.0MiB (floor …) is above it" had lacked its noun (a user's).
        lines.append(f"searched only {high}: the search's start, {low}, is above it; {probes}")
    elif b.low >= b.peak:  # the run's memory is all its own: the first limit is past its peak
        peak_is = least if raised else "the peak"
        lines.append(
            f"searched from {low}, above {peak_is} ({format_binary(b.peak)}){above}: {probes}"
        )
    else:
        lines.append(
            f"searched {low} to {high}, resolution {format_binary(b.resolution)}{above}: "
            f"{probes}"
        )
    by_limit = sorted(o.probes, key=lambda p: p.limit)
    rows = [probe_row(p, o.time.seconds, o.time.metric) for p in by_limit]
    lines.append("")
    lines.append(plain_table(None, CURVE, rows).rstrip("\n"))
    lines.append("")
    unlimited = "the unlimited runs'" if len(o.reference) > 1 else "the unlimited run's"
    what = f"{o.time.metric} within {100 * o.tolerance:.0f}% of {unlimited}"
    at_peak = o.failed_at_peak
    if o.stopped is not None:  # interrupted after some probes: what they showed
        lines.append(o.stopped)
    elif at_peak is not None:
        other = "" if at_peak.verdict.memory else " for a reason other than memory"
        lines.append(
            f"no memory limit found: the command fails under a limit{other}: at "
            f"{format_binary(at_peak.limit)} ({'' if at_peak.limit == b.peak else 'above '}"
            f"the unlimited run's peak) it ended "
            f"{at_peak.verdict.reason}, where a limit takes nothing from it; without a limit "
            "it succeeds"
        )
    elif o.answer is None and (b.ceiling is None or max(p.limit for p in o.probes) < b.ceiling):
        top = max(p.limit for p in o.probes)
        lines.append(
            f"no memory limit found: each limit up to {format_binary(top)} failed (the "
            "table); the runs hold more than the unlimited ones showed, so no limit their "
            "peak suggests is one they run in"
        )
    elif o.answer is None:
        assert b.ceiling is not None
        # How the limits failed: a probe OOM-killed at each had been told "nothing completes
        # with wall within 10%", a reason of time (a user's).
        killed = all(r.termination is Termination.OOM for p in o.probes for r in p.runs)
        how = (
            "each limit up to it was OOM-killed (the table)"
            if killed
            else f"nothing up to it completes with {what}"
        )
        mapped = "" if o.elsewhere is None else (
            f"; {format_binary(b.floor + o.elsewhere)} on a device, with the "
            f"{format_binary(o.elsewhere)} of files it mapped that were cached before it"
        )
        lines.append(
            f"does not fit in {format_binary(b.ceiling)}: {how}; it needs at least "
            f"{format_binary(b.floor)} (its anonymous, shared and kernel memory, which no "
            f"limit can reclaim without swap){mapped}"
        )
    else:
        unprobed = o.answer == b.top and all(p.limit != o.answer for p in o.probes)
        answer = next((p for p in o.probes if p.limit == o.answer), None)
        if unprobed:
            # Never run at this limit: the unlimited run's peak, which a limit there
            # cannot reclaim from; "within 10%" would claim a run that was not made.
            tried = any(p.limit < o.answer for p in o.probes)
            why = "the unlimited run's peak, not probed" + (
                ": each limit below it that was tried failed" if tried else ""
            )
        else:
            why = what
            n = 1 if answer is None else len(answer.runs)
            if answer is not None and all(map(untouched, answer.runs)):
                # Its time was not the limit's to judge: "wall within 10%" beside "+38%"
                # had contradicted the table.
                each = f" in each of {n} runs" if n > 1 else ""
                why = f"its peak stayed below the limit{each}, so nothing was reclaimed"
            elif answer is not None and answer.verdict.stall is not None:
                # Passed by the memory-stall rule: "within 10%" beside "+30%" had
                # contradicted the table.
                slower, stall = answer.verdict.slower, answer.verdict.stall
                assert slower is not None
                why = (
                    f"{o.time.metric} {signed_percent(slower)}, memory stall "
                    f"{signed_percent(stall)}: slower than {100 * o.tolerance:.0f}%, but its "
                    "extra memory stalls are within it, so the slowdown is not the limit's"
                )
                if n > 1:
                    why += f" (the median of its {n} runs at this limit)"
            elif n > 1:
                # Its runs', not the unlimited ones' ("of the unlimited run's (the median
                # of 3 runs)" had read as 3 unlimited runs where there were 2).
                why += f" (the median of its {n} runs at this limit)"
            if b.allowance:
                # The answer's own room over the floor: the search's least room (the
                # "searched" line's) had been said here as if it were the answer's, and
                # "the unlimited runs' anon + shmem + kernel" of a floor that was the least
                # limit.  What each run was held to (need.at_the_edge) is the slack under
                # the limit over its own.
                floor = "the unlimited runs' anon + shmem + kernel"
                floor = least if b.floor == MIN_LIMIT else floor
                room, spare = format_binary(o.answer - b.floor), format_binary(slack(b.floor))
                each = "each run" if n > 1 else "the run"
                why += (
                    f", {room} over {floor} ({format_binary(b.floor)}); {each} left at least "
                    f"{spare} under the limit over its own"
                )
        doubt = o.answer_in_doubt
        lines.append(
            f"smallest memory: {format_binary(o.answer)} ({why}; "
            f"resolution {format_binary(b.resolution)})" + ("" if doubt is None else f"; {doubt}")
        )
        assert o.recommended is not None
        lines.extend(_answer_lines(o))
    return "\n".join(lines) + "\n"


def _answer_lines(o: FitOutcome) -> list[str]:
    """The margin, the peak against the need, and the ceiling: the last lines of both."""
    b = o.bounds
    assert o.answer is not None and o.recommended is not None
    # A squeezed run's own peak is not the unlimited one: no ratio for it.
    extra = ""
    if o.method == "bisection" and o.recommended < with_margin(o.answer, o.margin):
        # need.recommended held it at the peak, or at the margin on the run's own memory
        # above it: say which and why, not a "1.0×" ratio (a tester's 213.4 MiB recommended
        # over a 185.7 MiB peak).
        if o.recommended <= b.peak:
            extra = ", the unlimited peak: no limit at or above it reclaims anything"
        else:
            extra = (
                f", the margin on its own memory ({format_binary(o.own_memory)}): above the "
                f"unlimited peak, {format_binary(b.peak)}, no limit reclaims anything"
            )
        if b.peak > o.answer:
            extra += f" (the need is {100 * (1 - o.answer / b.peak):.0f}% under it)"
    elif b.peak > o.answer and o.method == "bisection":
        extra = f"; the peak, {format_binary(b.peak)}, is {b.peak / o.answer:.1f}× the need"
    lines = [f"with a {100 * o.margin:.0f}% margin: {format_binary(o.recommended)}{extra}"]
    need = o.device_need
    assert need is not None
    if o.gpu_bytes is not None:
        lines.append(
            f"with its GPU's {format_binary(o.gpu_bytes)} in the same memory (unified): "
            f"{format_binary(o.answer + o.gpu_bytes)}"
        )
    # The limits were set here, where files other groups had cached cost the runs nothing:
    # on a device they are its own, and the verdict below counts them, as `run`'s does.
    if o.elsewhere is not None:
        with_margin_too = o.device_recommended
        assert with_margin_too is not None
        lines.append(
            f"not in it: {format_binary(o.elsewhere)} of files the unlimited runs mapped that "
            "were cached before them, charged to other groups (e.g. shared libraries); on a "
            f"device they are its own: {format_binary(need)} with them, "
            f"{format_binary(with_margin_too)} with the margin too"
        )
    if b.ceiling is not None:
        lines.append(_ceiling_line(o, b.ceiling, need))
    grew = _growth_line(o)
    if grew is not None:
        lines.append(grew)
    return lines


def _growth_line(o: FitOutcome) -> str | None:
    """``warning: the need grows with run length: …``, where an unlimited run's memory was
    still growing at its end (:attr:`FitOutcome.growth`, fit.json's ``memory_growth``):
    the answer is this run length's.  A tester's ``leak.py --iterations 100`` (0.5 MiB a
    request) had read "fits in 512.0MiB with 424.4MiB to spare", its need 39.3 MiB at 40
    requests and 99.4 MiB at 160."""
    g = o.growth
    if g is None:
        return None
    return (
        f"warning: the need grows with run length: the unlimited run's memory was still "
        f"growing at its end ({rate(g)}), so this answer holds for this run's length only"
    )


def _ceiling_line(o: FitOutcome, ceiling: int, need: int) -> str:
    """``fits in 512.0MiB with 59.0MiB to spare``, or ``does not fit …: 21.1MiB short``,
    of what the device's memory must hold (:attr:`FitOutcome.device_need`); and where it
    fits without the margin only, that it does."""
    ceiling_s = format_binary(ceiling)
    if not o.fits:
        return f"does not fit in {ceiling_s}: {format_binary(need - ceiling)} short"
    said = f"fits in {ceiling_s} with {spare(ceiling, need)} to spare"
    if o.fits_with_margin is False:
        over = o.device_recommended
        assert over is not None
        said += (
            f", without the margin only: with it, {format_binary(over)} is "
            f"{format_binary(over - ceiling)} over"
        )
    return said


def _render_squeezed(o: FitOutcome) -> str:
    """``--one-run``: the squeezed run, what it was held at, and what that cost it."""
    lines = []
    r = o.reference[-1] if o.reference else None
    if r is not None:
        lines.append(_title(o, r))
        lines.append(
            f"squeezed run: wall {r.wall_s:.3f}s; "
            + (
                composition(
                    r.memory.at_peak, o.measured_peak, r.host.cpus, r.wall_s,
                    source=r.memory.peak_source,
                )
                or ""
            )
        )
    if o.stopped is not None or r is None:
        lines.append(f"no estimate: {o.stopped}")
        return "\n".join(lines) + "\n"
    q = r.memory.squeeze
    assert q is not None and o.answer is not None
    stall = "n/a" if q.stall_s is None else f"{q.stall_s:.3f}s"
    lines.append(
        f"reclaimed every {1000 * q.interval_s:.0f} ms while stalls stayed under "
        f"{100 * q.threshold:g}% of it: {q.steps} reclaims ({q.short} short), "
        f"{q.backoffs} stalled intervals, memory stall {stall} in all"
    )
    when = "" if q.held_t_s is None else f" at {q.held_t_s:.2f}s"
    lines.append(
        f"estimated need: {format_binary(o.answer)} (the most it was held at without a "
        f"stall{when}; one run, not bisected)"
    )
    lines.extend(_answer_lines(o))
    return "\n".join(lines) + "\n"
