"""A container's start-up left out of its run's figures: the workload's own start and end
(``RunHandle.ended``, Docker's ``State.StartedAt``/``FinishedAt``), and a peak no higher
than its group's mark before the workload (``RunHandle.before_start``, runc init's)."""

from __future__ import annotations

import sys
import time

import edgeprof
from edgeprof import Limits
from edgeprof.backends.docker.clock import engine_time, on_monotonic, span
from edgeprof.measure.assemble import _no_average
from edgeprof.measure.cpu_time import own_window
from edgeprof.model import Counters, RunSpec
from tests.fakes import FakeBackend, FakeRun, Script

MiB = 2**20


def constant(cpu_us: int, peak: int) -> Script:
    def script(t: float) -> Counters:
        return Counters(
            cpu_usage_us=cpu_us,
            cpu_user_us=cpu_us * 3 // 4,
            cpu_system_us=cpu_us // 4,
            memory_current=MiB,
            memory_peak=peak,
            oom_kills=0,
        )

    return script


class SetupRun(FakeRun):
    """Reports the workload's end 0.25 s after ``started`` (as Docker's FinishedAt would)."""

    def wait(self, timeout: float | None) -> int | None:
        status = super().wait(timeout)
        if status is not None:
            self.ended = self.started + 0.25
        return status


class SetupBackend(FakeBackend):
    def __init__(self, script: Script, before: Counters) -> None:
        super().__init__(script)
        self.before = before

    def launch(self, spec: RunSpec) -> FakeRun:
        run = SetupRun(spec, self.script)
        run.before_start = (run.started + 0.006, self.before)
        self.runs.append(run)
        return run


def test_wall_time_ends_where_the_backend_saw_the_workload_end() -> None:
    before = Counters(cpu_usage_us=40_000, cpu_user_us=30_000, cpu_system_us=10_000)
    be = SetupBackend(constant(100_000, 8 * MiB), before)
    r = edgeprof.profile([sys.executable, "-c", "import time; time.sleep(0.4)"], backend=be)
    assert r.wall_s == 0.25  # not the 0.4 s and more until the reap
    # The group's whole CPU time: the set-up's is not subtracted (it would take the
    # workload's first milliseconds with it).
    assert r.cpu.total_s is not None and abs(r.cpu.total_s - 0.100) < 1e-9
    # AVG CPU % is of the window from the reading after the set-up to the exit: the 60 ms
    # of CPU since it over 0.244 s (not 100 ms over 0.25 s, two windows' quotient).
    assert r.cpu.avg_pct is not None and abs(r.cpu.avg_pct - 100 * 0.060 / 0.244) < 1e-6
    assert not any("set-up's" in w for w in r.warnings)  # the workload's peak is above it


class ShortSetupRun(FakeRun):
    """A container over 2 ms into its run, read 12 ms into it (a busybox ``true``)."""

    def wait(self, timeout: float | None) -> int | None:
        status = super().wait(timeout)
        if status is not None:
            self.ended = self.started + 0.002
        return status


def test_a_run_over_before_its_first_reading_has_no_cpu_percent_and_says_why() -> None:
    """The tester's busybox ``true`` under ``--cpus 1`` on one core: 23.6 ms of CPU (runc
    init's) over a 1.8 ms wall had read AVG CPU % 1340.3 and "held … off its CPU 0 for 0.10s
    (5451% of its wall time)"."""
    before = Counters(cpu_usage_us=23_000, cpu_full_us=90_000, cpu_some_us=95_000)

    def script(t: float) -> Counters:
        return Counters(cpu_usage_us=23_600, cpu_full_us=96_000, cpu_some_us=101_000)

    class Short(SetupBackend):
        def launch(self, spec: RunSpec) -> FakeRun:
            run = ShortSetupRun(spec, self.script)
            run.before_start = (run.started + 0.012, self.before)
            return run

    r = edgeprof.profile(["true"], backend=Short(script, before), limits=Limits(cpuset=(0,)))
    assert abs(r.wall_s - 0.002) < 1e-9
    assert r.cpu.total_s == 0.0236  # the group's whole CPU time, as before
    assert r.cpu.avg_pct is None and r.cpu.peak_pct is None
    assert r.cpu.held_s == 0.006 and r.cpu.wait_s == 0.006  # since the reading, not 0.096
    assert not any("held the run off" in w for w in r.warnings)
    assert (
        "avg CPU %: n/a, the container exited 2ms into its run, before its group's first "
        "reading after runc init's set-up: its CPU TIME (23.6ms) is mostly that set-up's "
        "(docs/method.md)"
    ) in r.warnings


def test_rates_share_their_window_and_stay_within_the_cpus() -> None:
    before = Counters(cpu_usage_us=20_000, cpu_full_us=50_000)
    final = Counters(cpu_usage_us=30_000, cpu_full_us=60_000)
    windowed, window = own_window(final, before, 0.010, 0.030)
    assert abs(window - 0.020) < 1e-12 and windowed.cpu_usage_us == 10_000
    assert windowed.cpu_full_us == 10_000 and windowed.cpu_some_us is None
    assert own_window(final, None, None, 0.030) == (final, 0.030)  # a group that began empty


def test_a_peak_no_higher_than_the_setup_s_is_named() -> None:
    before = Counters(cpu_usage_us=1_000, memory_peak=4 * MiB)
    be = SetupBackend(constant(100_000, 4 * MiB), before)
    r = edgeprof.profile([sys.executable, "-c", "pass"], backend=be)
    assert r.memory.peak_bytes == 4 * MiB
    assert any(w.startswith("peak memory 4.0MiB is the container's set-up's") for w in r.warnings)


def test_engine_times() -> None:
    assert engine_time("0001-01-01T00:00:00Z") is None
    assert engine_time(None) is None and engine_time("yesterday") is None
    assert engine_time("1970-01-01T00:00:01.5Z") == 1.5
    assert abs((engine_time("1970-01-01T01:00:01.000000001+01:00") or 0) - 1.000000001) < 1e-12
    state = {
        "StartedAt": "2026-11-29T21:40:01.123456789Z",
        "FinishedAt": "2026-11-29T21:40:01.623456789Z",
    }
    s = span(state)
    assert s is not None and abs(s - 0.5) < 1e-6
    assert span({"StartedAt": state["FinishedAt"], "FinishedAt": state["StartedAt"]}) is None
    now = time.monotonic()
    m = on_monotonic(time.time() - 10, now - 1, now + 100)
    assert m == now - 1  # kept within the call that saw it
    assert on_monotonic(None, 0, 1) is None


def test_a_run_too_short_for_an_average_counts_its_samples_as_its_heading_does() -> None:
    """ "2 samples every 0.1s" had been followed by "avg memory: n/a, the run ended before its
    second reading": the two are its start and the reading after its exit."""
    r = edgeprof.profile([sys.executable, "-c", "pass"], backend=FakeBackend(), interval=60.0)
    assert r.samples.count == 2 and r.memory.avg_bytes is None
    (line,) = [w for w in r.warnings if w.startswith("avg memory: n/a")]
    assert line.startswith(
        "avg memory: n/a, none of its 2 samples (every 60s) fell while it ran: they are its "
        "start and the reading after its exit; --interval "
    ), line
    assert "second reading" not in line


def test_a_run_with_one_reading_while_it_ran_says_it_is_too_few() -> None:
    """One reading between the start and the exit had made an average (395.4 KiB against a
    56 MiB peak when it fell as the run exited): the warning says how many fell, and why."""
    assert _no_average(4, 1, 0.1, 0.25) == (
        "avg memory: n/a, 1 of its 4 samples (every 0.1s) fell while it ran, too few to "
        "average it over the run (it takes 2); --interval 0.01 reads a short run finer"
    )
    assert _no_average(3, 0, 0.1, 0.102) == (
        "avg memory: n/a, none of its 3 samples (every 0.1s) fell while it ran: they are its "
        "start and the 2 readings after its exit; --interval 0.01 reads a short run finer"
    )
