"""A run with no reading of its memory while it ran has no peak, not its start's reading.

The process backend had reported ``edgeprof run --backend process -- true`` at a peak of
"0B (sampled)" (a zombie's resident set) and ``python3 -S -c pass`` (72 ms, read every
0.1 s) at 472 KiB "(sampled)", the reading taken as it was exec'd, where ``/usr/bin/time``
read 8.1 MiB."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator

import edgeprof
from edgeprof.analysis.budget_checks import Status, check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.measure.assemble import _no_average, peak_read_in_phases
from edgeprof.measure.sampler import SeriesStats
from edgeprof.model import Counters, MemoryStats, SampleStats
from tests.fakes import FakeBackend, Script
from tests.unit.gating_helpers import run

MiB = 2**20


def started_then_gone(start_bytes: int) -> Script:
    """Memory read only at the first reading (the workload just exec'd); every later one
    finds no process of the run, as the process backend does once it has exited."""
    calls: Iterator[int] = iter(range(1_000_000))

    def script(t: float) -> Counters:
        first = next(calls) == 0
        return Counters(
            cpu_usage_us=1000,
            cpu_user_us=1000,
            cpu_system_us=0,
            memory_current=start_bytes if first else None,
            oom_kills=0,
            pids_current=1 if first else 0,
        )

    return script


def test_the_start_reading_is_no_sampled_peak() -> None:
    s = SeriesStats()
    s.add(0.005, Counters(memory_current=472 * 1024, memory_inactive_file=0))
    s.add(0.072, Counters(), final=True)
    m = s.maxima(0.07)
    assert (m.memory, m.working_set, m.at) == (None, None, None)
    assert s.memory_readings == 1


def test_a_later_reading_is_the_peak_even_below_the_start() -> None:
    s = SeriesStats()
    s.add(0.0, Counters(memory_current=5 * MiB))
    s.add(0.1, Counters(memory_current=3 * MiB))
    s.add(0.2, Counters(memory_current=4 * MiB), final=True)
    m = s.maxima(0.15)  # the reading at 0.2 s, after the exit, reads memory freed
    assert (m.memory, m.working_set) == (3 * MiB, 3 * MiB)
    m = s.maxima(0.2)
    assert (m.memory, m.working_set) == (4 * MiB, 4 * MiB)


def test_a_run_read_only_at_its_start_has_an_unknown_peak_and_says_why() -> None:
    r = edgeprof.profile(
        [sys.executable, "-c", "pass"], backend=FakeBackend(started_then_gone(MiB)), interval=60.0
    )
    assert r.samples.count == 2
    m = r.memory
    assert (m.peak_bytes, m.peak_source, m.at_peak, m.avg_bytes) == (None, None, None, None)
    assert m.peak_working_set_bytes is None
    (line,) = [w for w in r.warnings if "memory: n/a" in w]
    assert line.startswith(
        "peak and avg memory: n/a, none of its 2 samples (every 60s) fell while it ran: they "
        "are its start and the reading after its exit; --interval "
    ), line


def test_the_warning_names_the_peak_only_where_it_is_unknown() -> None:
    assert _no_average(2, 0, 0.1, 0.006, peak_too=True) == (
        "peak and avg memory: n/a, none of its 2 samples (every 0.1s) fell while it ran: they "
        "are its start and the reading after its exit; --interval 0.001 reads a short run finer"
    )
    assert _no_average(1, 0, 0.1, 0.006, peak_too=True) == (
        "peak and avg memory: n/a, none of its 1 sample (every 0.1s) fell while it ran: it is "
        "its start; --interval 0.001 reads a short run finer"
    )
    # At the finest interval already: no finer one advised (a verifier's `--interval 0.001`
    # had been told "--interval 0.001 reads a short run finer").
    assert _no_average(2, 0, 0.001, 0.0005, peak_too=True).endswith(
        "after its exit; a run this short is over before edgeprof's finest interval can read it"
    )


def test_a_peak_a_phase_read_leaves_the_warning_to_the_average() -> None:
    """A phase's reading at its events gives the peak the samples had not (the process
    backend's run of an instrumented script): its "peak and avg memory: n/a" no longer
    holds for the peak."""
    s = SeriesStats()
    s.add(0.005, Counters(memory_current=MiB))
    s.add(0.08, Counters(), final=True)
    unknown = _no_average(2, 0, 0.1, 0.07, peak_too=True)
    said = peak_read_in_phases(["other", unknown], s, 0.1, 0.07)
    assert said == ("other", _no_average(2, 0, 0.1, 0.07))
    assert said[1].startswith("avg memory: n/a, none of its 2 samples")


def _unread(name: str = "m.onnx") -> edgeprof.RunResult:
    """A process backend's run over before a reading: no peak, no average."""
    return dataclasses.replace(
        run(name=name),
        backend="process",
        memory=MemoryStats(None, None, None, None, 0, None, None),
        samples=SampleStats(count=2, interval_s=0.1, path=None),
        wall_s=0.006,
    )


def test_a_peak_budget_on_an_unknown_peak_is_not_measured_and_says_why() -> None:
    (check,) = check_budgets([_unread()], Budgets(overrides={"peak_memory": 100 * MiB}))
    assert check.status is Status.NOT_MEASURED and not check.ok
    assert check.describe() == (
        "m.onnx (cpus=1, memory=1.0GiB): peak memory not measured (none of each run's "
        "readings (every 0.1s) fell while it ran, only its start and after its exit: "
        "--interval 0.001 reads them finer); budget 100.0MiB"
    )


def test_a_peak_budget_passed_by_some_runs_names_those_that_had_none() -> None:
    runs = [run(peak_mib=50), _unread(), run(peak_mib=51)]
    (check,) = check_budgets(runs, Budgets(overrides={"peak_memory": 100 * MiB}))
    assert check.status is Status.PASS and check.value == 50.5 * MiB and check.runs == 2
    assert check.caveat == (
        "1 of the 3 runs did not measure it (none of each run's readings (every 0.1s) fell "
        "while it ran, only its start and after its exit: --interval 0.001 reads them finer)"
    )
