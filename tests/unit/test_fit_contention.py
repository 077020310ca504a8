"""``edgeprof fit``'s verdicts are the memory limit's, not the host's: a fit of
``read_and_hold.py model.bin 48`` answered 55.7, 170.0 and 55.7 MiB in three invocations on a
host where other tasks held its runs off their CPUs (``cpu.held_s`` 0.25 to 0.41 s of 1.1 s):
probes judged "+25 %" slower on their wall time, for CPU the limit does not take.

A probe is judged by its wall time less the time other tasks held it off its CPUs, where the
kernel says (cgroup v2 ``memory.pressure``) only by the slowdown its memory stalls account
for, and the contention is said in fit's output as ``run`` says it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator

import pytest

from edgeprof.analysis.fit_times import UNCONTENDED, Timing, contended, median_time, timing
from edgeprof.analysis.headroom import stat_lag
from edgeprof.analysis.need import ReadBack, Verdict, memory_slowdown, read_back, verdict
from edgeprof.backends import register_backend, unregister_backend
from edgeprof.cli import main
from edgeprof.model import Counters, MemoryPressure, RunResult, RunSpec
from tests.fakes import FakeBackend, FakeRun, Script

from .conftest import FAKE_HOST_CPUS
from .test_memory_need import WALL, mem, run

MIB = 1 << 20
SLEEP_S = 0.2
"""The workload's own time; under a limit the fake host holds it off its CPUs as long again."""


def held_run(wall: float, held: float, stall: float | None = None) -> RunResult:
    r = run(wall=wall, memory=mem(pressure=_pressure(stall)))
    # Its CPU time what the others left it: no more than its CPUs give in the rest.
    cpu = dataclasses.replace(r.cpu, held_s=held, throttled_s=0.0, total_s=wall - held)
    return dataclasses.replace(r, cpu=cpu)


def _pressure(stall: float | None, refaults_file: int = 0) -> MemoryPressure | None:
    if stall is None:
        return None
    return MemoryPressure(
        stall_some_s=stall,
        stall_full_s=None,
        refaults_anon=None,
        refaults_file=refaults_file,
        major_faults=None,
    )


def test_a_probe_is_timed_less_the_time_others_held_it() -> None:
    # 1.1 s of wall, 0.4 s of it held off the CPUs: 0.7 s, as fast as the unlimited 0.7 s.
    ref = held_run(0.7, 0.0)
    probe = held_run(1.1, 0.4)
    t = timing(probe)
    assert t.metric == UNCONTENDED and abs(t.seconds - 0.7) < 1e-9
    v = verdict([probe], median_time([ref]), ref, 0.10)
    assert v.ok, v
    # Without a pressure file (no held figure) the wall time is all there is.
    bare = run(wall=1.1)
    assert timing(bare) == Timing("wall", 1.1)
    assert not verdict([bare], Timing("wall", 0.7), ref, 0.10).ok


def test_where_the_kernel_counts_memory_stalls_a_slowdown_they_do_not_explain_fits() -> None:
    ref = held_run(1.0, 0.0, stall=0.01)
    # +30 % slower, 0.02 s more stalled on memory (+2 %): not the limit's.
    slow = held_run(1.3, 0.0, stall=0.03)
    assert memory_slowdown([slow], 0.01, Timing(UNCONTENDED, 1.0)) == pytest.approx(0.02)
    v = verdict([slow], Timing(UNCONTENDED, 1.0), ref, 0.10, ref_stall=0.01)
    assert (v.ok, v.reason) == (True, "fits (+30%, memory stall +2%)")
    # +30 % slower and 0.25 s more stalled: the limit's.
    thrashing = held_run(1.3, 0.0, stall=0.26)
    v = verdict([thrashing], Timing(UNCONTENDED, 1.0), ref, 0.10, ref_stall=0.01)
    assert (v.ok, v.reason) == (False, "+30% slower")


def test_the_stall_exemption_needs_a_whole_runs_time_and_no_file_read_back() -> None:
    """A reviewer's reading: a whole run's extra stall over one iteration's p50 is no share
    of it, and a file the limit evicted and the run read back from disk is I/O wait, which
    PSI does not count as a memory stall (only pages marked as working set): both slowdowns
    are the limit's."""
    ref = held_run(1.0, 0.0, stall=0.01)
    slow = held_run(1.3, 0.0, stall=0.03)
    assert memory_slowdown([slow], 0.01, Timing("latency p50", 0.01)) is None
    v = verdict([slow], Timing("latency p50", 1.0), ref, 0.10, ref_stall=0.01)
    assert (v.ok, v.reason) == (False, "+30% slower")
    streamed = dataclasses.replace(
        slow, memory=dataclasses.replace(slow.memory, pressure=_pressure(0.03, refaults_file=900))
    )
    assert memory_slowdown([streamed], 0.01, Timing(UNCONTENDED, 1.0)) is None
    v = verdict([streamed], Timing(UNCONTENDED, 1.0), ref, 0.10, ref_stall=0.01)
    assert (v.ok, v.reason) == (False, "+30% slower")


def test_contention_is_said_as_run_says_it() -> None:
    runs = [held_run(1.0, 0.0), held_run(1.1, 0.41), held_run(1.2, 0.25)]
    said = contended(runs)
    assert said == (
        "other tasks on this host held 2 of its 3 runs off their CPUs, up to 0.41s (37% of a "
        "run's wall time): each run is judged by its wall time less that; fit again when the "
        "host is quieter, or on --cpuset CPUs nothing else uses"
    )
    assert contended([held_run(1.0, 0.05)]) is None  # under a tenth of its wall time


def held_under_a_limit(limited: bool) -> Script:
    """8 MiB of memory, a 64 MiB peak (so a limit below it is reached); a limited run is
    held off its CPUs for all but its first :data:`SLEEP_S` (its workload sleeps twice as
    long), as other tasks on a busy host would hold it."""

    def script(t: float) -> Counters:
        return Counters(
            cpu_usage_us=int(t * 1e5),
            memory_current=8 * MIB,
            memory_peak=64 * MIB,
            memory_inactive_file=0,
            oom_kills=0,
            pids_current=1,
            cpu_full_us=int(max(0.0, t - SLEEP_S) * 1e6) if limited else 0,
            throttled_us=0,
        )

    return script


def slower_when_limited(scripted: Callable[[bool], Script]) -> type[FakeBackend]:
    """A fake backend whose limited runs (a probe's limit is below the 64 MiB peak; the
    unlimited runs are capped at what the host has, far above it) sleep twice as long, their
    counters scripted by ``scripted(limited)``."""

    class SlowerWhenLimited(FakeBackend):
        def launch(self, spec: RunSpec) -> FakeRun:
            limited = spec.limits.memory is not None and spec.limits.memory <= 64 * MIB
            self.script = scripted(limited)
            env = {**spec.env, "FAKE_SLEEP": str(2 * SLEEP_S if limited else SLEEP_S)}
            return super().launch(dataclasses.replace(spec, env=env))

    return SlowerWhenLimited


def registered(name: str, scripted: Callable[[bool], Script]) -> Iterator[str]:
    """:func:`slower_when_limited` of ``scripted`` registered as backend ``name``, for a
    fixture's life."""
    register_backend(name, slower_when_limited(scripted))
    yield name
    unregister_backend(name)


@pytest.fixture
def held_backend() -> Iterator[str]:
    yield from registered("fake-held", held_under_a_limit)


def test_fit_is_not_decided_by_contention(
    capfd: pytest.CaptureFixture[str], held_backend: str
) -> None:
    """Every limited run is twice the unlimited one's wall time, all of it held off its CPUs
    by others: the old fit judged each probe "+100% slower" and answered the untried peak.
    Now the first limit fits, and the output says the runs were held."""
    command = ["sh", "-c", 'sleep "$FAKE_SLEEP"']
    code = main(["fit", "--json", "--backend", held_backend, "--", *command])
    out, err = capfd.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    # The 8 MiB floor and its room: 1 MiB of slack, and what a reading may lag on the fake
    # host's CPUs.
    assert doc["room_bytes"] == MIB + stat_lag(FAKE_HOST_CPUS) == 2 * MIB
    assert doc["min_memory_bytes"] == 10 * MIB
    assert all(p["ok"] for p in doc["probes"]), doc["probes"]
    assert doc["metric"] == UNCONTENDED
    said = doc["contention"]
    assert said.startswith("other tasks on this host held 3 of its 5 runs off their CPUs")
    code = main(["fit", "--backend", held_backend, "--", *command])
    out, _ = capfd.readouterr()
    assert code == 0 and out.splitlines()[-1].startswith("warning: other tasks on this host")


def host_refaulted(limited: bool) -> Script:
    """Every run, limited or not, reads back 1145 file pages and major-faults 33 times (the
    host's reclaim evicted them before: a tester's unlimited torch run had these counts) and
    stalls 10 ms on memory; a limited run takes twice the time, none of it on memory."""

    def script(t: float) -> Counters:
        return Counters(
            cpu_usage_us=int(t * 1e5),
            memory_current=8 * MIB,
            memory_peak=64 * MIB,
            memory_inactive_file=0,
            oom_kills=0,
            pids_current=1,
            memory_some_us=10_000,
            refaults_file=1145,
            refaults_anon=0,
            major_faults=33,
        )

    return script


@pytest.fixture
def refaulted_backend() -> Iterator[str]:
    yield from registered("fake-refaulted", host_refaulted)


def test_fit_weighs_a_probes_refaults_against_the_unlimited_runs(
    capfd: pytest.CaptureFixture[str], refaulted_backend: str
) -> None:
    """The unlimited runs read back as many pages as the probes: those are the host's, not
    the limit's.  Compared with 0, they had kept each probe from its stall (memory_slowdown:
    "a file read back") and made a slowdown the stall does not explain "+100% slower", the
    search answering the peak; against the unlimited runs' 1145, each probe is judged by its
    stall, no more than the unlimited runs' (+0 %), and fits."""
    command = ["sh", "-c", 'sleep "$FAKE_SLEEP"']
    code = main(["fit", "--json", "--backend", refaulted_backend, "--", *command])
    out, err = capfd.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert [p["refaults"] for p in doc["probes"]] == [1145] * len(doc["probes"])
    assert doc["probes"] and all(p["ok"] for p in doc["probes"]), doc["probes"]
    assert doc["probes"][0]["verdict"].endswith("memory stall 0%)"), doc["probes"][0]
    assert doc["min_memory_bytes"] == 10 * MIB


def test_read_back_sets_the_bar_a_probes_counts_must_pass() -> None:
    """need.memory_evidence and memory_slowdown against the unlimited runs' counts."""
    ref = run(memory=mem(pressure=MemoryPressure(stall_some_s=0.01, refaults_anon=0,
                                                 refaults_file=1145, major_faults=33)))  # fmt: skip
    bar = read_back([ref, run()])
    assert bar == ReadBack(refaults_anon=0, refaults_file=1145, major_faults=33)

    def probe(refaults: int, faults: int) -> RunResult:
        p = MemoryPressure(stall_some_s=None, refaults_anon=0, refaults_file=refaults,
                           major_faults=faults)  # fmt: skip
        return run(wall=1.3, memory=mem(pressure=p))

    # As many as the unlimited runs: no evidence of the limit, a time-only failure.
    v = verdict([probe(1145, 33)], WALL, ref, 0.10, ref_read=bar)
    assert v == Verdict(False, "+30% slower", unproven=True)
    # Compared with 0 (no reference counts), the same probe had been the limit's evidence.
    assert verdict([probe(1145, 33)], WALL, ref, 0.10).unproven is False
    # More than they read back: the limit's.
    assert verdict([probe(1146, 33)], WALL, ref, 0.10, ref_read=bar).unproven is False
    assert verdict([probe(0, 34)], WALL, ref, 0.10, ref_read=bar).unproven is False
    # The stall is weighed where the file pages read back are no more than the unlimited's.
    stalled = dataclasses.replace(probe(1145, 33), memory=mem(pressure=_pressure(0.03, 1145)))
    ref_time = Timing(UNCONTENDED, 1.0)
    assert memory_slowdown([stalled], 0.01, ref_time, bar) == pytest.approx(0.02)
    assert memory_slowdown([stalled], 0.01, ref_time) is None


def test_a_probe_run_calls_slowed_does_not_fit() -> None:
    """A tester's memmap fit answered 52.7 MiB, whose probe stalled 5.4 % of its wall time
    (within fit's 10 % tolerance), and ``run`` at that limit said "slowed, stalled 8.2 %
    … edgeprof fit finds the limit that does not slow it".  A probe ``run`` calls slowed
    fails; the unlimited runs' own stall (the host's) is no limit's."""
    from edgeprof.model import Limits

    def limited(stall: float) -> RunResult:
        r = held_run(1.0, 0.0, stall=stall)
        m = dataclasses.replace(r.memory, limit_bytes=100 * MIB, peak_bytes=100 * MIB)
        return dataclasses.replace(r, memory=m, limits=Limits(memory=100 * MIB))

    ref = held_run(1.0, 0.0, stall=0.0)
    v = verdict([limited(0.08)], Timing(UNCONTENDED, 1.0), ref, 0.10, ref_stall=0.0)
    assert (v.ok, v.reason) == (False, "slowed (memory stall 8.0% of its wall time)")
    # As stalled without a limit: the host's, and within the tolerance.
    v = verdict([limited(0.08)], Timing(UNCONTENDED, 1.0), ref, 0.10, ref_stall=0.07)
    assert v.ok, v
    # Under run's 5 %: fits.
    assert verdict([limited(0.04)], Timing(UNCONTENDED, 1.0), ref, 0.10, ref_stall=0.0).ok
    # A wider tolerance (slower is fine) accepts stalls up to half of it.
    assert verdict([limited(0.08)], Timing(UNCONTENDED, 1.0), ref, 0.50, ref_stall=0.0).ok
    assert not verdict([limited(0.30)], Timing(UNCONTENDED, 1.0), ref, 0.50, ref_stall=0.0).ok
