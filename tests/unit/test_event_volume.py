"""A workload that sends many events: a phase entered once per step, its occurrences past
the stored ones aggregated per name; one counter reading per pipe read, not per line; the
workload's own writes held up by a full pipe, timed by the workload and warned about."""

from __future__ import annotations

import os
import time

import pytest

from edgeprof.measure.event_lines import FrequentNames
from edgeprof.measure.event_notes import MalformedKinds, waited_warning
from edgeprof.measure.event_store import EventStore
from edgeprof.measure.events import MAX_OCCURRENCES, EventChannel
from edgeprof.measure.past_store import PastStore
from edgeprof.measure.phase_tail import SLICE_S, PhaseTail
from edgeprof.measure.phases import missed_windows_warning
from edgeprof.measure.timeline import Timeline
from edgeprof.model import Counters
from edgeprof.workload import instrument

T = 1000.0


def _clock() -> float:
    return T + 1e6


class _Peaks:
    def __init__(self) -> None:
        self.started = 0

    def start(self) -> object:
        self.started += 1
        return self.started

    def stop(self, token: object) -> int | None:
        return 7


def _store(max_occurrences: int) -> tuple[EventStore, list[int]]:
    store = EventStore(max_occurrences=max_occurrences, clock=_clock)
    reads = [0]

    def read() -> Counters:
        reads[0] += 1
        return Counters(cpu_usage_us=0, memory_current=0)

    store._read, store._peaks = read, _Peaks()  # type: ignore[assignment]
    return store, reads


def _lines(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def test_the_default_store() -> None:
    assert MAX_OCCURRENCES == 10_000


def test_occurrences_past_the_store_are_counted_and_timed_exactly_without_records() -> None:
    store, reads = _store(max_occurrences=3)
    lines = []
    for i in range(10):  # "step" 0.25 s each, an iteration of 0.1 s inside, every second
        s = T + i
        lines += [f"begin step {s}", f"iter {s + 0.1} {s + 0.2} 2", f"end step {s + 0.25}"]
    store.feed(_lines(lines))
    phases, latency, _, warnings = store.results(run_end=T + 20)
    (step,) = phases
    assert (step.name, step.count, step.complete) == ("step", 10, True)
    assert step.wall_s == pytest.approx(2.5, abs=1e-9)
    assert step.start_s == pytest.approx(T)  # _t0 is 0 here: times are the stamps
    assert step.peak_source == "sampled"  # no kernel window past the store
    assert step.latency is not None and latency is not None
    # the 7 past the store hold their iterations too, counted once each
    assert (step.latency.count, step.latency.items, latency.count) == (10, 20, 10)
    assert len(store._occurrences) == 3
    assert store._peaks.started == 3  # type: ignore[union-attr]
    assert reads == [1]  # one pipe read, one reading
    assert (
        "7 phase occurrence(s) past the first 3 were aggregated ('step'): their count and "
        "wall time are exact, their CPU time and memory shared out of the readings by 10 ms "
        "slices, their peak sampled (no kernel window)"
    ) in warnings
    assert not [w for w in warnings if "sampled (largest sample" in w]


def test_an_occurrence_past_the_store_nested_in_its_name_or_cut_short() -> None:
    store, _ = _store(max_occurrences=1)
    store.feed(_lines([
        f"begin a {T}", f"begin a {T + 1}", f"end a {T + 2}", f"end a {T + 3}",  # 1 stored
        f"begin a {T + 4}", f"begin a {T + 5}", f"end a {T + 6}", f"end a {T + 7}",
        f"begin a {T + 8}",  # open at the end
    ]))
    (a,), _, _, _ = store.results(run_end=T + 10, termination="timeout")
    # time once per outermost stretch: 3 + 3 + 2 (to the run's end)
    assert (a.count, a.wall_s, a.complete, a.cut_short_by) == (5, 8.0, False, "timeout")
    assert store.malformed == 0


def test_the_phase_first_begun_past_the_store_comes_in_order() -> None:
    store, _ = _store(max_occurrences=2)
    store.feed(_lines([f"begin a {T}", f"end a {T + 1}", f"begin b {T + 2}", f"end b {T + 3}",
                       f"begin c {T + 4}", f"end c {T + 5.5}"]))
    phases, _, _, _ = store.results(run_end=T + 10)
    assert [(p.name, p.count, p.wall_s) for p in phases] == [
        ("a", 1, 1.0), ("b", 1, 1.0), ("c", 1, 1.5)
    ]


def test_a_phase_tail_shares_each_slices_cpu_and_memory_by_the_time_it_held() -> None:
    # CPU rises 0.5 s a second; memory 100 bytes flat
    tl = Timeline(t=[0.0, 1.0], cpu=[0.0, 0.5], mem=[100, 100])
    tail = PhaseTail()
    tail.begin(0.2)
    tail.cover(0.2, 0.2 + 3 * SLICE_S)  # three slices' worth, across four slices
    tail.cover(0.5, 0.5 + SLICE_S / 2)
    cpu, readings, area, peak = tail.figures(tl)
    assert tail.wall == pytest.approx(3.5 * SLICE_S)
    assert cpu == pytest.approx(0.5 * 3.5 * SLICE_S)
    assert area == pytest.approx(100 * 3.5 * SLICE_S)
    assert (readings, peak) == (0, 100)


def test_one_reading_per_pipe_read_however_many_boundaries() -> None:
    store, reads = _store(max_occurrences=1000)
    store.feed(_lines([f"{k} s {T + i}" for i in range(100) for k in ("begin", "end")]))
    assert reads == [1]
    store.feed(_lines([f"mark m {T + 200}"]))  # a mark still reads at its line
    assert reads == [2]
    store.feed(_lines([f"iter {T + 300} {T + 301}"]))
    assert reads == [2]


def test_the_workloads_waits_on_the_pipe_are_summed_and_warned_about() -> None:
    store, _ = _store(max_occurrences=10)
    store.feed(_lines([f"iter {T} {T + 0.001}", f"waited {T + 1} {T + 3.5}",
                       f"waited {T + 4} {T + 4.25}", f"waited {T + 5} {T + 5.25}"]))
    _, _, _, warnings = store.results(run_end=10.0)
    assert store.counts().lines == 1  # the notes are not events
    # One line in 7 s of not waiting, read in microseconds of CPU: no full pipe is claimed.
    (w,) = warnings
    assert w.startswith(
        "the workload waited 3.00s of its 10.00s on edgeprof's events pipe (3 write(s) held "
        "up over 0.1 ms, timed by the workload): edgeprof's reading kept pace (0 lines/s "
        "while not waiting; edgeprof reads "
    )


def test_the_pipes_waits_are_put_down_to_the_reader_only_where_it_was_outsent() -> None:
    """ph.py's 15 000 phases (measured here: 30 004 lines, 0.469 s of the reader's CPU,
    1.67 s of 1.82 waited) are events sent too fast; a tester's ~140 lines a second on a
    host holding the run off 75 % were not."""
    fast = waited_warning(1.67, 17, 1.82, 30_004, 0.469)
    assert fast == (
        "the workload waited 1.67s of its 1.82s on edgeprof's events pipe (17 write(s) held up "
        "over 0.1 ms, timed by the workload): it sent events faster than edgeprof reads them "
        "(200,027 lines/s while not waiting; edgeprof reads 63,974/s of its CPU) "
        "(docs/phases.md, \"What it costs\"), so its phases' wall times and IT/S include that "
        "wait"
    )
    held = waited_warning(0.05, 3, 0.98, 140, 0.001)
    assert held == (
        "the workload waited 0.05s of its 0.98s on edgeprof's events pipe (3 write(s) held up "
        "over 0.1 ms, timed by the workload): edgeprof's reading kept pace (151 lines/s while "
        "not waiting; edgeprof reads 140,000/s of its CPU), so the pipe filled while the "
        "reader was off its CPU (other tasks on this host) or in a burst of events "
        "(docs/phases.md, \"What it costs\"), so its phases' wall times and IT/S include that "
        "wait"
    )
    # loop.py 150000 0 (a tester's: 0.64 s of 1.38 s waited, 177 writes): sent at over half
    # the reader's rate but under it, which had been called "faster than edgeprof reads them".
    near = waited_warning(0.64, 177, 1.38, 150_000, 0.4)
    assert near is not None and "faster" not in near
    assert (
        "timed by the workload): it sent events at over half the rate edgeprof reads them "
        "(202,703 lines/s while not waiting; edgeprof reads 375,000/s of its CPU), so the pipe "
        "filled whenever the reader fell behind (off its CPU, or in a burst) (docs/phases.md"
    ) in near
    # The rule's edges (202,703 lines/s sent): a reader of 404,313/s is outsent by half,
    # one of 406,504/s keeps pace; one of 200,000/s is outsent ("faster").
    assert "at over half the rate" in (waited_warning(0.64, 177, 1.38, 150_000, 0.371) or "")
    assert "kept pace" in (waited_warning(0.64, 177, 1.38, 150_000, 0.369) or "")
    assert "faster than" in (waited_warning(0.64, 177, 1.38, 150_000, 0.75) or "")
    # The floors: 2 writes, or under 1 % of the run, say nothing.
    assert waited_warning(0.5, 2, 1.0, 140, 0.001) is None
    assert waited_warning(0.09, 5, 10.0, 140, 0.001) is None


def test_a_wait_under_a_hundredth_of_the_run_is_not_warned_about() -> None:
    store, _ = _store(max_occurrences=10)
    store.feed(_lines([f"waited {T} {T + 0.09}"]))
    _, _, _, warnings = store.results(run_end=10.0)
    assert warnings == []


def test_the_client_sends_how_long_a_held_up_write_waited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r, w = os.pipe()
    ch = instrument._Channel()
    ch._looked, ch.fd = True, w
    ticks = iter([5.0 + instrument.HELD_UP_S / 2, 7.25])
    monkeypatch.setattr(time, "monotonic", lambda: next(ticks))
    ch.send("iter 4 5\n", 5.0)  # returned in time: nothing more
    ch.send("iter 6 7\n", 7.0)  # returned 0.25 s after its stamp
    os.close(w)
    assert os.read(r, 4096).decode() == (
        "iter 4 5\niter 6 7\nwaited 7.000000000 7.250000000\n"
    )
    os.close(r)


def test_a_channel_is_an_event_store_with_the_same_cap() -> None:
    ch = EventChannel(max_occurrences=5, clock=_clock)
    assert ch._max_occurrences == 5
    ch.close()


def test_the_cap_warning_names_the_phase_it_dropped_most() -> None:
    """After 3 000 layer phases the 50 000-occurrence ``step`` was gone, unnamed."""
    store = EventStore(max_phases=4, clock=_clock)
    lines = [f"{k} layer{i} {T + i}" for i in range(300) for k in ("begin", "end")]
    lines += [f"{k} step {T + 300 + i}" for i in range(5000) for k in ("begin", "end")]
    store.feed(_lines(lines))
    _, _, _, warnings = store.results(run_end=T + 6000)
    assert warnings == [
        "the workload named more than 4 distinct phases: the first 4 are kept, 5296 "
        "occurrence(s) of later names were counted, not recorded, most often 'step' (at "
        "least 5000) (events.phases in result.json)"
    ]


def test_frequent_names_are_exact_while_they_fit() -> None:
    names = FrequentNames()
    for name in ["a", "b", "a", "c", "a", "b"]:
        names.add(name)
    assert names.most() == ["'a' (3)", "'b' (2)"]  # 'c' once: not named


def test_the_sampled_peaks_warning_counts_and_names_a_few() -> None:
    w = missed_windows_warning([f"layer{i:05d}" for i in range(256)])
    assert w.startswith(
        "phase peaks of 256 phases ('layer00000', 'layer00001', 'layer00002', "
        "'layer00003', 'layer00004' and 251 more) are sampled: each ended before"
    )
    assert len(w) < 300
    assert missed_windows_warning(["a", "b"]).startswith("phase peaks of 'a', 'b' are sampled")


def test_malformed_lines_are_counted_by_kind_with_the_first_of_each() -> None:
    """The tester's 200 001 lines of three kinds were said as the first kind's alone."""
    store = EventStore(clock=lambda: T + 10)
    wall = 1796093104.857163
    lines = []
    for _ in range(1000):
        lines += [f"iter {wall} {wall}", "hello world this is not protocol"]
    store.feed(_lines(lines) + b"Z" * 10_000 + b"\n")
    _, _, _, warnings = store.results(run_end=10.0)
    assert warnings == [
        "2001 malformed event line(s) ignored: "
        f"1000 like 'iter {wall} {wall}': iter: time {wall:.3f} is after the line was read "
        f"({T + 10:.3f}): the protocol's times are CLOCK_MONOTONIC (time.monotonic()), the "
        "run's clock; "
        "1000 like 'hello world this is not protocol': unknown event 'hello' (expected one of "
        "begin, end, mark, iter, raised, nested, waited, probe, cost); "
        f"1 like '{'Z' * 60}': line longer than 4096 bytes"
    ]


def test_a_phase_cut_short_names_the_iterations_it_completed() -> None:
    """``leak.py`` under 80 MiB: killed after 125 iterations of ``infer``, which only the
    Latency table's ITER column had said; a phase with no iteration is named alone."""
    store = EventStore(clock=_clock)
    lines = [f"begin load {T}", f"end load {T + 0.5}", f"begin infer {T + 1}"]
    lines += [f"iter {T + 1 + i} {T + 1.5 + i}" for i in range(3)]
    lines.append(f"begin save {T + 5}")  # open, with no iteration in it
    store.feed(_lines(lines))
    _, latency, _, warnings = store.results(run_end=T + 10, termination="oom")
    assert latency is not None and latency.count == 3
    assert [w for w in warnings if w.startswith("phase(s) ")] == [
        "phase(s) infer (3 iterations completed), save cut short by the OOM kill: counted to "
        f"the run's end ({T + 10:.3f}s; a phase a child process held when it died is "
        "counted so too: edgeprof cannot tell when it went)"
    ]


def test_the_past_store_counts_a_nested_occurrence_once_and_closes_the_open_one() -> None:
    past = PastStore(recent=4)
    past.begin("step", 1.0, inside=False)
    past.begin("step", 1.5, inside=False)  # nested in the first: its time is the outer one's
    assert past.at(1.7) == {"step"}
    assert past.end("step", 2.0) is None
    outer = past.end("step", 3.0)
    assert outer is not None and outer.end == 3.0
    assert not past.is_open("step")
    assert past.at(2.5) == {"step"}  # closed, but it held an iteration ending then
    assert past.at(3.5) == set()
    past.begin("step", 4.0, inside=False)
    past.close(4.5)
    tail = past.tails["step"]
    assert (tail.count, tail.cut_short) == (3, True)
    assert tail.wall == pytest.approx(2.5)  # 1.0 to 3.0, and 4.0 held to the end at 4.5


def test_malformed_kinds_tell_the_mistakes_apart_most_first() -> None:
    kinds = MalformedKinds()
    kinds.add(b"hello", "not an event")
    kinds.add(b"begin 12 a", "begin: time 12 is not CLOCK_MONOTONIC")
    kinds.add(b"begin 13 b", "begin: time 13 is not CLOCK_MONOTONIC")
    assert kinds.warning(3) == (
        "3 malformed event line(s) ignored: 2 like 'begin 12 a': begin: time 12 is not "
        "CLOCK_MONOTONIC; 1 like 'hello': not an event"
    )


def test_a_phase_named_as_the_latency_tables_row_of_all_is_said() -> None:
    """A phase ``(all)`` had shown two Latency rows alike, with other figures (a user's)."""
    store = EventStore(clock=_clock)
    lines = [f"begin (all) {T}", f"iter {T} {T + 0.1}", f"end (all) {T + 0.2}"]
    store.feed(_lines(lines))
    *_, warnings = store.results(run_end=T + 1, termination="exited")
    assert (
        "a phase is named '(all)', as the Latency table's last row, of all the run's "
        "iterations, is: --latency-phase '(all)' gates the phase's, none the run's"
    ) in warnings
    store = EventStore(clock=_clock)
    store.feed(_lines([f"begin all {T}", f"end all {T + 0.2}"]))
    *_, warnings = store.results(run_end=T + 1, termination="exited")
    assert not any("Latency table's last row" in w for w in warnings)
