"""``edgeprof fit``'s answer is a limit the command runs in reliably, not one it passed once
at the edge: ``fit -- python model.py 1024`` had answered its floor, 180.3 MiB, after one
probe there, and two runs of two were OOM-killed at that limit.

A limit must leave room over what no limit can reclaim (:func:`fit_bounds.allowance`), a run whose
peak met its limit with its own memory does not fit (the run report's "at the edge"), and
the answer is confirmed by more runs before it is given."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator

import pytest

from edgeprof.analysis.fit_bounds import MIB, PAGE, Bounds, allowance, bounds, slack
from edgeprof.analysis.fit_times import Timing
from edgeprof.analysis.headroom import stat_lag
from edgeprof.analysis.need import (
    BISECTED,
    OVERTURNED,
    RAISED,
    REPEAT_ON_DOUBT,
    Verdict,
    search,
    verdict,
)
from edgeprof.backends import register_backend, unregister_backend
from edgeprof.cli import main
from edgeprof.model import Counters, MemoryParts, RunResult, RunSpec
from edgeprof.report.fit import render_fit
from edgeprof.sweeps.fit_outcome import FitOutcome, Probe
from tests.fakes import FakeBackend, FakeRun, Script

from .test_memory_need import WALL, mem, run

OWN = 100 * MIB
"""The fake workload's memory, all its own (anon): no limit can take any of it back."""
CPUS = 4
"""The fake results' host (``make_result``)."""


def test_the_allowance_is_the_charging_slack_the_spread_of_the_floors_and_a_readings_lag() -> None:
    lag = stat_lag(CPUS)  # one reading of memory.stat, on the fake host's CPUs
    assert lag == CPUS * 2 * 64 * PAGE == 2 * MIB
    # 1 % of the floor, at least 1 MiB: the slack within which a peak has met its limit.
    assert allowance([run(memory=mem(floor=OWN))], OWN) == slack(OWN) + lag == MIB + lag
    assert allowance([run(memory=mem(floor=400 * MIB))], 400 * MIB) == 4 * MIB + lag
    # The unlimited runs' floors 3 MiB apart, under peaks of page cache: a run may hold
    # that much more, and still leave the slack.
    runs = [run(memory=mem(peak=2 * OWN, floor=OWN)),
            run(memory=mem(peak=2 * OWN, floor=OWN + 3 * MIB))]  # fmt: skip
    assert allowance(runs, OWN + 3 * MIB) == slack(OWN + 3 * MIB) + 3 * MIB + lag


def test_a_first_probe_whose_floor_reads_a_little_over_the_spread_fits() -> None:
    """A tester's two fits of ``read_and_hold.py model.bin 48``: the unlimited floors 16 KiB
    apart, the first probe's 8 KiB over the highest of them + that spread; its 3 runs were
    1 % faster than unlimited, and it was "at the edge, leaves 1016.0KiB", so the search went
    on and answered 132.5 MiB (the other fit: 55.1 MiB, after that one probe).  A floor read
    that little over is within what one reading may lag: the first probe fits."""
    floors = [OWN, OWN + 16 * 1024]
    b = bounds([run(memory=mem(peak=3 * OWN, floor=f)) for f in floors], None, None)
    over = b.floor + 16 * 1024 + 8 * 1024  # the probe's floor: 8 KiB over max + spread
    probe = _edge_run(b.low, b.low, over, file=OWN)
    v = verdict([probe], Timing("wall", 1.0), run(), 0.10, slack(b.floor))
    assert v.ok, (v, b)
    # What one reading may lag is all it is allowed: a run that leaves a page less than the
    # slack under the limit is at the edge.
    worse = _edge_run(b.low, b.low, b.low - slack(b.floor) + PAGE, file=OWN)
    v = verdict([worse], Timing("wall", 1.0), run(), 0.10, slack(b.floor))
    assert (v.ok, v.reason) == (False, "at the edge, leaves 1.0MiB"), v  # 1020 KiB, rounded


def test_a_peak_that_is_the_runs_own_memory_is_no_answer_without_a_probe() -> None:
    """model.py: anon 179.3 MiB of a 180.5 MiB peak.  The old search answered the peak
    unprobed (or the floor after one pass); the first limit is now the floor and its room,
    above the peak, and it is probed."""
    b = bounds([run(memory=mem(peak=int(180.5 * MIB), floor=int(180.2 * MIB)))], None, None)
    assert b.allowance == _page(int(0.01 * b.floor)) + stat_lag(CPUS)
    assert b.low == b.floor + b.allowance > b.peak
    assert b.top == b.low and not b.top_passes
    asked: list[int] = []

    def probe(limit: int) -> bool:
        asked.append(limit)
        return limit >= b.peak + MIB  # a run a little over the unlimited peak OOMs

    r = search(b, probe)
    assert r.answer == b.low and asked == [b.low]


def test_a_top_that_fails_for_memory_is_raised_not_assumed() -> None:
    """The top itself fails (the runs hold more than the unlimited ones showed): limits
    above it are tried, each step twice the last, until one passes."""
    b = Bounds(OWN, OWN, None, MIB, allowance=MIB)
    need = OWN + 5 * MIB
    r = search(b, lambda limit: limit >= need)
    assert r.answer is not None and need <= r.answer <= need + b.resolution
    assert r.tried[:3] == ((OWN + MIB, False), (OWN + 2 * MIB, False), (OWN + 4 * MIB, False))
    # Nothing passes up to the ceiling: no answer, not the unlimited peak.
    capped = dataclasses.replace(b, ceiling=OWN + 8 * MIB)
    assert search(capped, lambda limit: False).answer is None


def test_a_pass_the_confirmation_overturns_is_no_answer() -> None:
    """One run passed at the low end; its repeats were OOM-killed: the search goes on above
    it and answers a limit whose repeats passed too."""
    b = Bounds(40 * MIB, 104 * MIB, None, 8 * MIB, allowance=MIB)
    flaky = {b.low}  # passes once, fails its confirmation
    confirmed: list[int] = []

    def confirm(limit: int) -> Verdict:
        confirmed.append(limit)
        return Verdict(limit not in flaky and limit >= 70 * MIB, "oom")

    r = search(b, lambda limit: limit in flaky or limit >= 70 * MIB, confirm)
    assert confirmed[0] == b.low and r.tried[:2] == ((b.low, True), (b.low, False))
    assert r.answer is not None and 70 * MIB <= r.answer <= 70 * MIB + b.resolution
    assert confirmed[-1] == r.answer and (r.answer, True) == r.tried[-1]


def _fitted(
    b: Bounds, passes: Callable[[int], bool], confirms: Callable[[int], bool]
) -> FitOutcome:
    """The search with scripted verdicts, its probes kept as ``fit`` keeps them (a
    confirmation's runs added to its probe)."""
    probes: list[Probe] = []

    def probe(limit: int) -> Verdict:
        v = Verdict(passes(limit), "fits (+0%)" if passes(limit) else "oom")
        probes.append(Probe(limit, (run(),), v))
        return v

    def confirm(limit: int) -> Verdict:
        v = Verdict(confirms(limit), "fits (+0%)" if confirms(limit) else "oom")
        i = next(i for i, p in enumerate(probes) if p.limit == limit)
        probes[i] = Probe(limit, (run(), run(), run()), v)
        return v

    r = search(b, probe, confirm)
    ref = (run(memory=mem(peak=b.peak, floor=b.floor)),)
    return FitOutcome("x", ref, WALL, 0.0, b, tuple(probes), r.answer, 0.10, 0.20, made=r.made)


def test_the_probe_count_says_why_each_probe_past_the_bisection_was_made() -> None:
    """fit's answer had called every probe past the bisection's bound one "above a limit
    that failed", those made after a pass its confirmation overturned too, and fit.json's
    bracket_bytes stayed the unlimited floor and peak where the probes went above the peak
    (a reviewer's reading).  Each is counted by why the search made it now, and
    searched_bytes is the range the probes went over."""
    # Passes from 70 MiB; the first pass, 72.5 MiB, is overturned by its confirmation.
    b = Bounds(40 * MIB, 104 * MIB, None, 8 * MIB, allowance=MIB)
    o = _fitted(b, lambda limit: limit >= 70 * MIB, lambda limit: limit >= 80 * MIB)
    assert [p.limit for p in o.probes][1] == int(72.5 * MIB)
    assert o.made == (BISECTED,) * 4 + (OVERTURNED,) * 2 and o.max_probes == 4
    assert o.beyond == {OVERTURNED: 2}
    text = render_fit([o])
    assert (
        "searched 41.0MiB (floor: anon + shmem + kernel 40.0MiB + 1.0MiB of room) to 104.0MiB "
        "(peak), resolution 8.0MiB: 6 probes (at most 4 to bisect; 2 of them after a pass its "
        "confirmation overturned)" in text
    )
    assert "above a top that failed" not in text
    d = o.to_dict()
    assert (d["bracket_bytes"], d["searched_bytes"]) == (
        [40 * MIB, 104 * MIB],
        [41 * MIB, 104 * MIB],
    )

    # All its own memory, 5 MiB more than the unlimited runs showed: the top (the floor and
    # its room) fails, and the limits above it are the search's too.
    b = Bounds(OWN, OWN, None, MIB, allowance=MIB)
    o = _fitted(b, lambda limit: limit >= OWN + 5 * MIB, lambda limit: limit >= OWN + 5 * MIB)
    assert [p.limit - OWN for p in o.probes] == [n * MIB for n in (1, 2, 4, 8, 6, 5)]
    assert o.made == (BISECTED,) + (RAISED,) * 5 and o.answer == OWN + 5 * MIB
    text = render_fit([o])
    assert (
        "searched from 101.0MiB (floor: anon + shmem + kernel 100.0MiB + 1.0MiB of room), "
        "above the peak (100.0MiB); 101.0MiB failed, so up to 108.0MiB: 6 probes (at most 1 "
        "to bisect; 5 more above a top that failed)" in text
    )
    d = o.to_dict()
    assert d["bracket_bytes"] == [OWN, OWN]  # the unlimited runs' floor and peak, as before
    assert d["searched_bytes"] == [OWN + MIB, OWN + 8 * MIB]
    # A search within its bound says no more than it did; no probe, no range.
    plain = dataclasses.replace(o, made=(BISECTED,) * 6)
    assert "6 probes (at most 1)\n" in render_fit([plain]) and plain.beyond == {}
    assert dataclasses.replace(o, probes=(), made=()).to_dict()["searched_bytes"] is None


def _edge_run(limit: int, peak: int, floor: int, file: int = 0) -> RunResult:
    memory = dataclasses.replace(
        mem(peak=peak, floor=floor),
        limit_bytes=limit,
        peaks=MemoryParts(total=peak, anon=floor, file=file, shmem=0, kernel=0),
    )
    return run(memory=memory)


def test_a_run_whose_own_memory_met_the_limit_does_not_fit() -> None:
    """The run report said "fits at the edge: its peak met the limit with no page cache …
    leaves 108.0KiB" while fit's table said "fits (-5%)"."""
    ref = run()
    limit = 189087744  # model.py's answer, 180.3 MiB
    edge = _edge_run(limit, limit, limit - 108 * 1024)
    v = verdict([edge], Timing("wall", 1.0), ref, 0.10)
    assert (v.ok, v.memory) == (False, True)
    assert v.reason == "at the edge: no page cache, leaves 108.0KiB"
    # Page cache dropped to make room (at the limit), but anon + shmem + kernel left less
    # than the room the fit asks: at the edge too; with the room, it fits.
    cached = _edge_run(limit, limit, limit - 512 * 1024, file=64 * MIB)
    v = verdict([cached], Timing("wall", 1.0), ref, 0.10, MIB)
    assert (v.ok, v.reason) == (False, "at the edge, leaves 512.0KiB")
    assert verdict([cached], Timing("wall", 1.0), ref, 0.10, 256 * 1024).ok


def _page(n: int) -> int:
    return -(-n // PAGE) * PAGE


# -- the fit, on the scripted backend ------------------------------------------------------


def own_memory(limit: int | None) -> Script:
    """:data:`OWN` of anon, peak and all; under a limit below it, the limit is the peak."""
    peak = OWN if limit is None else min(OWN, limit)

    def script(t: float) -> Counters:
        return Counters(
            cpu_usage_us=int(t * 1e6),
            memory_current=peak,
            memory_peak=peak,
            memory_anon=peak,
            memory_file=0,
            memory_shmem=0,
            memory_kernel=0,
            memory_inactive_file=0,
            oom_kills=0,
            pids_current=1,
        )

    return script


class OwnMemory(FakeBackend):
    def launch(self, spec: RunSpec) -> FakeRun:
        self.script = own_memory(spec.limits.memory)
        return super().launch(spec)


@pytest.fixture
def own() -> Iterator[str]:
    register_backend("fake-own-memory", OwnMemory)
    yield "fake-own-memory"
    unregister_backend("fake-own-memory")


def _fit(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object], str]:
    code = main(["fit", "--json", *args])
    out, err = capfd.readouterr()
    return code, json.loads(out), err


def test_fit_answers_a_limit_with_room_confirmed_by_repeats(
    capfd: pytest.CaptureFixture[str], own: str
) -> None:
    """All of the run's memory is its own: the old fit probed its floor (the peak), passed
    one run there and answered it.  Now the first limit leaves the allowance, and the
    answer's probe has :data:`REPEAT_ON_DOUBT` runs."""
    rc, doc, err = _fit(capfd, "--backend", own, "--tolerance", "1000%", "--", "sleep", "0.05")
    assert rc == 0, err
    probes: list[dict[str, object]] = doc["probes"]  # type: ignore[assignment]
    answer = doc["min_memory_bytes"]
    assert isinstance(answer, int)
    assert answer >= OWN + MIB  # the floor and the room over it
    (at,) = [p for p in probes if p["limit_bytes"] == answer]
    assert at["ok"] and len(at["wall_s"]) == REPEAT_ON_DOUBT  # type: ignore[arg-type]
    assert all(p["limit_bytes"] != OWN for p in probes)
    recommended = doc["recommended_bytes"]
    assert isinstance(recommended, int) and recommended >= answer * 1.2


def test_fits_text_names_the_cap_its_unlimited_runs_ran_under() -> None:
    """fit had said ``limits: none`` of the runs ``report`` of its directory shows as
    ``python (memory=21.6GiB)``: the cap fit set, the room the host had."""
    b = Bounds(OWN, OWN, None, MIB, allowance=MIB)
    o = _fitted(b, lambda limit: limit >= OWN + 5 * MIB, lambda limit: limit >= OWN + 5 * MIB)
    title = render_fit([o]).splitlines()[0]
    assert title == "x: cgroup/cgroup2, limits: cpus=1.5, cpuset=0-1"  # no cap, none said
    capped = dataclasses.replace(o, reference_cap=int(21.6 * 2**30))
    assert render_fit([capped]).splitlines()[0] == (
        f"{title}; its unlimited runs at memory=21.6GiB, the cap fit sets (the room this host "
        "had), not a device's limit"
    )


def test_the_report_says_the_reference_runs_were_noisier_than_the_tolerance() -> None:
    """The caveat on every verdict of the search is in the report, not only among the
    progress lines on stderr (a newcomer's report, kept alone, had lost it)."""
    b = Bounds(40 * MIB, 104 * MIB, None, 8 * MIB, allowance=MIB)
    o = _fitted(b, lambda limit: limit >= 70 * MIB, lambda limit: limit >= 70 * MIB)
    assert "warning: the unlimited runs' times spread" not in render_fit([o])
    noisy = dataclasses.replace(o, noise=0.36)
    assert (
        "warning: the unlimited runs' times spread 36%, more than the 10% tolerance: a probe's "
        "verdict may be that noise, not its limit; give more reference runs (--repeat N), a "
        "quieter host, or a larger --tolerance\n"
    ) in render_fit([noisy])
    # No search, no verdict to doubt.
    assert "spread 36%" not in render_fit([dataclasses.replace(noisy, probes=(), made=())])


@pytest.mark.parametrize(
    ("noise", "tolerance", "said"),
    [
        (0.36, 0.10, "spread 36%, more than the 10% tolerance"),
        # As many decimals as tell them apart: a user's --tolerance 0 had read "spread 0%,
        # more than the 0% tolerance".
        (0.004, 0.0, "spread 0.4%, more than the 0.0% tolerance"),
        (0.1049, 0.10, "spread 10.5%, more than the 10.0% tolerance"),
    ],
)
def test_the_noise_warning_tells_the_spread_from_the_tolerance(
    noise: float, tolerance: float, said: str
) -> None:
    from edgeprof.analysis.fit_times import noise_warning

    assert said in (noise_warning(noise, tolerance) or "")
    assert noise_warning(tolerance, tolerance) is None
