"""Phases, iterations and marks: percentiles, the attribution arithmetic, the runner's events
pipe (fake backend) and the result/report.  The workload's client and the line protocol are
tests/unit/test_phase_client.py."""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprof import profile
from edgeprof.backends._peak_reset import SharedPeakReset, sampled_phase_peaks
from edgeprof.measure.event_store import EventStore
from edgeprof.measure.events import EventChannel
from edgeprof.measure.latency import latency_stats
from edgeprof.measure.phases import (
    Occurrence,
    missed_windows_warning,
    peak_with_phases,
    phase_stats,
)
from edgeprof.measure.sketch import percentile
from edgeprof.measure.timeline import Timeline, interpolate
from edgeprof.model import Counters, LatencyStats, Mark, PhaseStats, RunResult, Termination
from edgeprof.report.phases import MAX_OF_RUNS_NOTE, unheld_notes, unread_cpu_notes
from edgeprof.report.results import render_markdown, render_plain
from tests.conftest import require_module
from tests.fakes import FakeBackend, linear

from .conftest import make_result

REPO = Path(__file__).resolve().parents[2]
MiB = 2**20


# -- percentiles and latency ------------------------------------------------------------------


def test_percentiles_by_linear_interpolation_against_hand_values() -> None:
    x = [1.0, 2.0, 3.0, 4.0]
    # h = (n-1)·p/100: p50 → 1.5 → 2 + 0.5·1; p90 → 2.7 → 3 + 0.7·1; p99 → 2.97
    assert percentile(x, 50) == pytest.approx(2.5)
    assert percentile(x, 90) == pytest.approx(3.7)
    assert percentile(x, 95) == pytest.approx(3.85)
    assert percentile(x, 99) == pytest.approx(3.97)
    assert percentile(x, 0) == 1.0 and percentile(x, 100) == 4.0
    y = [15.0, 20.0, 35.0, 40.0, 50.0]
    assert percentile(y, 40) == pytest.approx(29.0)  # h = 1.6 → 20 + 0.6·15
    assert percentile(y, 75) == pytest.approx(40.0)  # h = 3 exactly
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_percentiles_match_numpys_default() -> None:
    np = require_module("numpy", "examples")
    rng = np.random.default_rng(1)
    for n in (2, 3, 10, 101):
        v = sorted(rng.random(n).tolist())
        for p in (50, 90, 95, 99):
            assert percentile(v, p) == pytest.approx(float(np.percentile(v, p)), abs=1e-12)


def test_latency_stats_by_hand() -> None:
    # Four iterations of 10, 20, 30, 40 ms from t = 0 to t = 1.0, eight items each.
    its = [(0.0, 0.01, 8), (0.3, 0.32, 8), (0.6, 0.63, 8), (0.96, 1.0, 8)]
    s = latency_stats(its)
    assert s is not None
    assert s.count == 4
    assert s.mean_s == pytest.approx(0.025)
    assert s.p50_s == pytest.approx(0.025)
    assert s.p90_s == pytest.approx(0.037)
    assert s.p95_s == pytest.approx(0.0385)
    assert s.p99_s == pytest.approx(0.0397)
    assert s.max_s == pytest.approx(0.04) and s.min_s == pytest.approx(0.01)
    assert s.per_s == pytest.approx(4.0)  # 4 iterations over the 1 s span
    assert s.items == 32 and s.items_per_s == pytest.approx(32.0)
    no_items = latency_stats([(a, b, None) for a, b, _ in its])  # no line gave ITEMS
    assert no_items is not None and no_items.items is None and no_items.items_per_s is None
    # A line without ITEMS among lines with it counts 1 (the protocol's default)
    mixed = latency_stats([*its[:3], (its[3][0], its[3][1], None)])
    assert mixed is not None and mixed.items == 25
    assert latency_stats([]) is None


# -- attribution ------------------------------------------------------------------------------


def test_a_sampled_phase_peak_is_never_under_its_average() -> None:
    """A load phase read once early, its memory rising through its end (the process backend
    at 0.1 s had shown peak 13.1 MiB, average 37.0 MiB): the peak is its average."""
    rising = Timeline(t=[0.0, 0.01, 0.1], cpu=[0.0] * 3, mem=[0, 13 * MiB, 113 * MiB])
    peak, area = rising.memory_in(0.005, 0.06)
    assert peak is not None and area is not None
    assert peak == round(area / 0.055) > 13 * MiB


@given(
    st.lists(st.integers(0, 2**30), min_size=2, max_size=12),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_a_sampled_phase_peak_lies_between_its_average_and_its_curve(
    mem: list[int], x: float, y: float
) -> None:
    """At least the largest reading inside and the phase's mean (a mean never exceeds the
    maximum), at most the largest value of the curve the mean is taken over."""
    tl = Timeline(t=[i / 10 for i in range(len(mem))], cpu=[0.0] * len(mem), mem=list(mem))
    a, b = sorted((x * (len(mem) - 1) / 10, y * (len(mem) - 1) / 10))
    peak, area = tl.memory_in(a, b)
    assert peak is not None and area is not None
    inside = [m for i, m in enumerate(mem) if a < i / 10 < b]
    curve = max([*inside, *(interpolate(tl.t, [float(m) for m in mem], e) or 0 for e in (a, b))])
    assert max(inside, default=0) <= peak <= round(curve) + 1
    if b > a:
        assert peak >= area / (b - a) - 1


def test_a_phase_nested_in_itself_counts_its_time_once() -> None:
    """A recursive function under ``@phase``: six levels in a 0.26 s run had given the phase
    0.83 s of CPU time.  Its stretches are joined; a later repeat still adds its own."""
    tl = Timeline(t=[0.0, 1.0, 2.0, 3.0], cpu=[0.0, 1.0, 2.0, 3.0], mem=[MiB] * 4)
    occ = [
        Occurrence("solve", 0.0, 1.0, kernel_peak=3 * MiB),
        Occurrence("solve", 0.2, 0.8, kernel_peak=2 * MiB),
        Occurrence("solve", 0.4, 0.6, kernel_peak=2 * MiB),
        Occurrence("solve", 2.0, 2.5, kernel_peak=MiB),
    ]
    its = [(0.4, 0.5, 1), (0.7, 0.75, 1), (2.1, 2.2, 1)]
    (p,) = phase_stats(occ, tl, its, run_end=3.0)
    assert p.count == 4
    assert (p.wall_s, p.cpu_s, p.cpu_pct) == pytest.approx((1.5, 1.5, 100.0))
    assert p.latency is not None and p.latency.count == 3  # each iteration once
    assert (p.peak_bytes, p.peak_source) == (3 * MiB, "kernel")


def test_a_phase_cut_short_by_the_exit_holds_its_last_reading_to_it() -> None:
    """A phase that held 64 MiB until ``os._exit`` at 0.35 s: the reading after the exit is
    of the memory freed, and had pulled its average to 55.5 MiB of 63.8 (a user's)."""
    tl = Timeline(
        t=[0.0, 0.1, 0.2, 0.3, 0.36],
        cpu=[0.0, 0.1, 0.2, 0.3, 0.35],
        mem=[64 * MiB, 64 * MiB, 64 * MiB, 64 * MiB, MiB // 4],
    )
    (p,) = phase_stats([Occurrence("work", 0.0, None)], tl, [], run_end=0.35)
    assert p.complete is False and p.wall_s == pytest.approx(0.35)
    assert p.avg_bytes == 64 * MiB and p.peak_bytes == 64 * MiB
    # A phase that ends before the exit interpolates between readings as before.
    (q,) = phase_stats([Occurrence("q", 0.25, 0.33)], tl, [], run_end=0.35)
    assert q.avg_bytes is not None and q.avg_bytes < 64 * MiB


def test_phase_attribution_by_timestamp() -> None:
    # CPU grows at 1 s/s until t=2, then stops; memory 100 MiB at t ≤ 1, 300 at t=2, 100 after.
    tl = Timeline(
        t=[0.0, 1.0, 2.0, 3.0, 4.0],
        cpu=[0.0, 1.0, 2.0, 2.0, 2.0],
        mem=[100 * MiB, 100 * MiB, 300 * MiB, 100 * MiB, 100 * MiB],
    )
    occ = [
        Occurrence("a", 0.5, 1.5),
        Occurrence("b", 2.5, 4.0, kernel_peak=120 * MiB),
        Occurrence("a", 3.0, 3.5),
        Occurrence("open", 3.5, None),
    ]
    its = [(0.6, 0.7, 1), (1.0, 1.2, 1), (3.0, 3.1, 1), (3.6, 3.9, 1)]
    a, b, open_ = phase_stats(occ, tl, its, run_end=4.0)
    # a: [0.5, 1.5] has 1.0 s CPU; [3, 3.5] none.  Wall 1.5 s.
    assert a.count == 2
    assert (a.wall_s, a.cpu_s) == pytest.approx((1.5, 1.0))
    assert a.cpu_pct == pytest.approx(100 / 1.5)
    # Memory of a: [0.5,1]=100, [1,1.5] 100→200 (avg 150) → 0.5·100+0.5·150 = 125 MiB·s,
    # plus [3, 3.5] at 100 → 50 MiB·s; 175 / 1.5 s.
    assert a.avg_bytes == round(175 * MiB / 1.5)
    # Its one reading inside, 100 at t=1, is under its first stretch's mean (125: the memory
    # rose through its end): the peak is that mean, never under the average.
    assert a.peak_bytes == 125 * MiB and a.peak_source == "sampled"
    assert a.latency is not None and a.latency.count == 3  # ends at 0.7, 1.2 and 3.1
    # b: kernel mark (120) above its samples (100): kernel, but never below a sample.
    assert b.peak_bytes == 120 * MiB and b.peak_source == "kernel"
    assert b.cpu_s == pytest.approx(0.0)
    # [2.5, 3] falls 200→100, under the mark: 0.4 s at 120 and 0.1 s from 120 to 100
    # (59 MiB·s, not the 75 above it), [3, 4] 100 (100 MiB·s): 159 / 1.5 s, 106 MiB.
    assert b.avg_bytes == 106 * MiB
    assert open_.complete is False and open_.wall_s == pytest.approx(0.5)
    assert a.complete and b.complete


def test_the_first_phase_keeps_the_reading_before_its_start() -> None:
    """The sampler hands its rows over in batches: rows stamped after the first phase's start
    can come before its begin line is read.  The reading before that start is still its
    left edge (only the latest reading was kept: the phase lost its CPU up to that row)."""
    ch = EventChannel()
    t0 = time.monotonic() - 1.0  # the run started a second ago; CPU grows 1 s a second
    ch._t0 = t0
    ch._read = lambda: Counters(cpu_usage_us=int((time.monotonic() - t0) * 1e6))
    for t in (0.5, 0.9, 0.95, 0.99):  # a batch of rows, all before the lines are read
        ch.record(t, t, None)
    ch.feed(f"begin a {t0 + 0.92}\nend a {t0 + 0.99}\n".encode())
    ch.close()
    (a,) = ch.results(run_end=2.0)[0]
    assert a.cpu_s == pytest.approx(0.07, abs=1e-6)


def test_no_phase_outlasts_its_run() -> None:
    """An untimed ``end`` read after the main process exited is stamped past the run's end:
    the phase ends with the run (its CPU and memory too), its iterations stay its own."""
    tl = Timeline(t=[0.0, 1.0, 2.0], cpu=[0.0, 1.0, 2.0], mem=[MiB, MiB, MiB])
    late, after = phase_stats(
        [Occurrence("late", 1.0, 2.5), Occurrence("after", 2.2, 2.4)],
        tl, [(1.5, 1.9, 1)], run_end=2.0,
    )  # fmt: skip
    assert (late.start_s, late.wall_s, late.cpu_s) == pytest.approx((1.0, 1.0, 1.0))
    assert late.latency is not None and late.latency.count == 1
    assert (after.start_s, after.wall_s) == pytest.approx((2.0, 0.0))


def test_a_kernel_peak_is_not_raised_to_a_reading_stamped_inside() -> None:
    """A reading stamped just inside a phase can have been read before its start (the stamp
    is the read's midpoint): where the kernel kept the phase's mark, that mark is the peak."""
    tl = Timeline(
        t=[0.0, 1.0, 1.01, 2.0], cpu=[0.0] * 4, mem=[134 * MiB, 134 * MiB, 134 * MiB, 12 * MiB]
    )
    (kernel,) = phase_stats(
        [Occurrence("busy", 1.0, 2.0, kernel_peak=13 * MiB)], tl, [], run_end=2.0
    )
    assert (kernel.peak_bytes, kernel.peak_source) == (13 * MiB, "kernel")
    # Its average is taken under that mark: 13 MiB to where the fall from 134 to 12 MiB
    # crosses it, the fall's last 1/122 of 0.99 s below (it had been 73.6 MiB).
    under = 0.01 * 13 + 0.99 * 121 / 122 * 13 + 0.99 / 122 * 12.5
    assert kernel.avg_bytes == pytest.approx(under * MiB, abs=1)
    assert kernel.avg_bytes is not None and kernel.avg_bytes <= 13 * MiB
    (sampled,) = phase_stats([Occurrence("busy", 1.0, 2.0)], tl, [], run_end=2.0)
    assert (sampled.peak_bytes, sampled.peak_source) == (134 * MiB, "sampled")


# The bench's shape, to scale: a reading at 0 s during ``load`` (20 MiB, its temporaries),
# the next at 1 s (15 MiB, freed); ``infer`` runs [0.5, 0.75] between them.
BENCH_GAP = Timeline(t=[0.0, 1.0], cpu=[0.0, 1.0], mem=[20 * MiB, 15 * MiB])


def test_a_phase_average_is_never_above_its_kernel_peak() -> None:
    """A tester's bench: ``infer`` had a kernel peak of 6 672 384 and an average of 6 889 331
    (here 16 423 882 over 15 351 808): the average interpolated toward the reading before
    ``load`` freed its temporaries, which the kernel's window, opened later, never saw.
    Under the mark, the whole curve (17.5 → 16.25 MiB) is above it: the average is it."""
    occ = Occurrence("infer", 0.5, 0.75, kernel_peak=15 * MiB, opened=0.6)
    (p,) = phase_stats([occ], BENCH_GAP, [], run_end=1.0)
    assert (p.peak_bytes, p.peak_source, p.avg_bytes) == (15 * MiB, "kernel", 15 * MiB)


@pytest.mark.parametrize("mem", [[0, 16 * MiB], [16 * MiB, 0]])
def test_a_phase_curve_crossing_its_kernel_peak_is_cut_where_it_crosses(
    mem: list[int | None],
) -> None:
    """0 → 16 MiB over the phase, mark 8 MiB: half a second rising to 8 (2 MiB·s) and half
    at 8 (4 MiB·s), 6 MiB on average, either way round (not 8, the mean of the cut ends)."""
    tl = Timeline(t=[0.0, 1.0], cpu=[0.0, 0.0], mem=mem)
    (p,) = phase_stats([Occurrence("p", 0.0, 1.0, kernel_peak=8 * MiB)], tl, [], run_end=1.0)
    assert (p.peak_bytes, p.peak_source, p.avg_bytes) == (8 * MiB, "kernel", 6 * MiB)


def test_a_kernel_window_opened_after_its_phase_ended_is_not_its_peak() -> None:
    """The bench's 0.1 ms ``infer`` was over 3 ms before its begin line was read: the mark
    (the memory after it) is none of the phase's.  Its peak is sampled: the larger edge
    of the curve it is averaged over (17.5 MiB; the average 16.875 MiB)."""
    occ = Occurrence("infer", 0.5, 0.75, kernel_peak=15 * MiB, opened=0.8)
    (p,) = phase_stats([occ], BENCH_GAP, [], run_end=1.0)
    assert (p.peak_bytes, p.peak_source) == (round(17.5 * MiB), "sampled")
    assert p.avg_bytes == round(16.875 * MiB)


class _Peaks:
    """A kernel that keeps every window's mark at 15 MiB."""

    def start(self) -> object | None:
        return 1

    def stop(self, token: object | None) -> int | None:
        return 15 * MiB

    def close(self) -> None:
        pass


def test_the_runner_says_which_phases_ended_before_their_window() -> None:
    """The events' side: ``infer``'s lines are read at 1 s, after its end (0.75 s), so its
    window opened too late and its peak is sampled, with that reason, not the backend's
    (the kernel did reset); ``serve``, whose end is read after its begin, keeps its mark."""
    now = [1.0]
    store = EventStore(clock=lambda: now[0])
    store._read = lambda: Counters(memory_current=15 * MiB)
    store._peaks = _Peaks()
    store.record(0.0, 0.0, 20 * MiB)
    store.feed(b"begin infer 0.5\nend infer 0.75\nbegin serve 1.0\n")
    now[0] = 2.0
    store.feed(b"end serve 2.0\n")
    phases, _, _, warnings = store.results(run_end=2.0)
    infer, serve = phases
    assert (infer.peak_bytes, infer.peak_source) == (round(17.5 * MiB), "sampled")
    assert infer.avg_bytes == round(16.875 * MiB)
    assert (serve.peak_bytes, serve.peak_source, serve.avg_bytes) == (15 * MiB, "kernel", 15 * MiB)
    assert missed_windows_warning(["infer"]) in warnings
    assert not [w for w in warnings if w.startswith("phase peaks are sampled")]
    assert missed_windows_warning(["infer"]) == (
        "phase peaks of 'infer' are sampled: each ended before edgeprof read its begin line, "
        "so no kernel window covered it; their memory is interpolated between the readings "
        "around them"
    )


def test_shared_peak_reset_keeps_the_run_peak_and_nested_windows(tmp_path: Path) -> None:
    """cgroup v1's one mark: each reset reads it first (here a plain file stands for it)."""
    f = tmp_path / "memory.max_usage_in_bytes"
    f.write_text("500\n")
    pr = SharedPeakReset(f)
    outer = pr.start()  # reads 500, resets (a plain file keeps the tail of the old text)
    assert pr.floor == 500 and f.read_text().startswith("0")
    f.write_text("300\n")  # the kernel's mark since the reset
    inner = pr.start()  # reads 300 into the outer window, resets
    f.write_text("200\n")
    assert pr.stop(inner) == 200
    f.write_text("250\n")
    assert pr.stop(outer) == 300  # the highest mark seen in its window
    assert pr.floor == 500


# -- the runner, with the scripted backend -----------------------------------------------------


WORKLOAD = """
    import sys, time, edgeprof
    holds = []  # how long each boundary waited for edgeprof's reading
    def held(f):
        t = time.monotonic(); f(); holds.append(time.monotonic() - t)
    time.sleep(0.05)
    first = edgeprof.phase("first")
    held(first.__enter__)
    time.sleep(0.3)
    held(lambda: first.__exit__(None, None, None))
    second = edgeprof.phase("second")
    held(second.__enter__)
    for _ in range(5):
        with edgeprof.iteration(items=4):
            time.sleep(0.02)
    held(lambda: second.__exit__(None, None, None))
    edgeprof.mark("end")
    if len(sys.argv) > 1:
        open(sys.argv[1], "w").write(repr(max(holds)))
"""


def test_runner_attributes_scripted_counters_to_phases(tmp_path: Path) -> None:
    be = FakeBackend(linear(cpu_pct=50, memory_bytes=64 * MiB))
    holds = tmp_path / "holds"
    r = profile(
        [sys.executable, "-c", textwrap.dedent(WORKLOAD), str(holds)],
        backend=be,
        interval=0.02,
        env={"PYTHONPATH": str(REPO)},
        out_dir=tmp_path,
    )
    assert r.exit_code == 0
    first, second = r.phases
    # A boundary's reading is stamped with its line's time, the workload held till it is
    # read: a real counter stands still then, this fake one grows on, by half the hold.
    hold = float(holds.read_text())
    assert (first.name, second.name) == ("first", "second")
    # The workload's own timestamps around a 0.3 s sleep: never shorter, and never as long as
    # the run less the sleeps outside the phase (a fixed 0.6 s ceiling stood for an idle host).
    assert 0.3 <= first.wall_s <= r.wall_s - 0.05 - 5 * 0.02
    # The script's CPU grows at exactly 50 % of a CPU: interpolation of a straight line, off
    # only by how far a reading's stamp (the read's midpoint) is from the instant the script
    # was read at, which a thread switch inside the read moves (a GIL turn is 5 ms): that
    # spread is measured from the rows themselves (a straight line has t - 2 x CPU fixed).
    with open(tmp_path / "samples.csv") as f:
        offsets = [float(r["t_s"]) - 2 * float(r["cpu_usage_s"]) for r in csv.DictReader(f)]
    spread = max(offsets) - min(offsets)
    for p in (first, second):
        slack = 1 + 100 * (spread + hold) / p.wall_s
        assert p.cpu_pct == pytest.approx(50, abs=slack), (p, spread, hold)
    assert first.peak_bytes == 64 * MiB and first.avg_bytes == 64 * MiB
    assert first.peak_source == "sampled"  # the fake backend cannot reset a kernel mark
    assert second.start_s >= first.start_s + first.wall_s
    assert r.latency is not None and r.latency.count == 5 and r.latency.items == 20
    # Five iterations of at least 20 ms each fit in "second", three of them at least the median.
    assert 0.02 <= r.latency.p50_s <= (second.wall_s - 2 * 0.02) / 3
    assert second.latency == r.latency
    assert [m.name for m in r.marks] == ["end"] and r.marks[0].memory_bytes == 64 * MiB
    assert any("phase peaks are sampled" in w for w in r.warnings)


class _ProcessLikeBackend(FakeBackend):
    """The fake backend under the process backend's mechanism (no run group, no mark)."""

    @property
    def mechanism(self) -> str:
        return "process"


def test_sampled_phase_peaks_are_warned_about_with_the_backends_reason() -> None:
    """The process backend's phase peaks were put down to the kernel (Linux 6.12), on 6.18."""
    be = _ProcessLikeBackend(linear(memory_bytes=MiB))
    script = "import edgeprof\nwith edgeprof.phase('p'):\n    pass\n"
    r = profile([sys.executable, "-c", script], backend=be, env={"PYTHONPATH": str(REPO)})
    (warning,) = [w for w in r.warnings if "phase peaks are sampled" in w]
    assert "the process backend has no kernel high-water mark" in warning, warning
    assert "kernel cannot" not in warning and "6.12" not in warning


@pytest.mark.parametrize(
    ("mechanism", "reset_given", "reason"),
    [
        ("process", False, "the process backend has no kernel high-water mark"),
        ("docker+cgroup2", False, "the docker backend (docker+cgroup2) does not restart"),
        ("docker+stats", False, "the docker backend (docker+stats) does not restart"),
        ("cgroup2", True, "this kernel cannot restart its high-water mark per phase (cgroup v2"),
        ("cgroup2", False, "(cgroup v2 needs Linux 6.12)"),  # memory.peak absent: < 5.19
        ("cgroup1", True, "the kernel refused to reset this group's memory.max_usage_in_bytes"),
        ("fake", False, "this backend cannot restart a memory high-water mark per phase"),
        (None, False, "this backend cannot restart"),
    ],
)
def test_the_reason_phase_peaks_are_sampled(
    mechanism: str | None, reset_given: bool, reason: str
) -> None:
    warning = sampled_phase_peaks(mechanism, reset_given)
    assert warning.startswith("phase peaks are sampled (largest sample inside each phase): ")
    assert reason in warning, warning


def test_a_run_without_events_has_no_phases_and_no_extra_warnings() -> None:
    be = FakeBackend(linear(peak_bytes=MiB))
    r = profile([sys.executable, "-c", "pass"], backend=be, env={"PYTHONPATH": str(REPO)})
    assert r.phases == () and r.latency is None and r.marks == ()
    # (A run this short may end before its second reading: its average memory says so.)
    others = [w for w in r.warnings if not w.startswith("avg memory: n/a")]
    assert others == ["fake backend: counters are scripted, not measured"]


def test_a_shell_workload_uses_the_line_protocol() -> None:
    be = FakeBackend()
    # /proc/self/fd/N: any shell (dash's >&N takes only descriptors 0-9).
    script = (
        'ev=/proc/self/fd/$EDGEPROF_EVENTS_FD; echo "begin setup" > $ev; sleep 0.2; '
        'echo "end setup" > $ev; echo "nonsense" > $ev'
    )
    r = profile(["sh", "-c", script], backend=be, interval=0.02)
    assert [p.name for p in r.phases] == ["setup"]
    # Untimed lines are stamped as edgeprof reads them: a late read of "end" lengthens the
    # phase, a late read of "begin" shortens it, which only the run's own length bounds.
    assert 0 < r.phases[0].wall_s <= r.wall_s
    assert any("1 malformed event line(s) ignored" in w for w in r.warnings)


def test_a_phases_rate_is_over_its_own_time_not_the_phases_between() -> None:
    """10 × (20 ms in ``pre``, then one 5 ms iteration in ``infer``): infer's rate had been
    counted over the whole loop, ``pre`` included (43 it/s for a phase doing ~195)."""
    import sys

    script = (
        "import time, edgeprof\n"
        "for _ in range(10):\n"
        "    with edgeprof.phase('pre'):\n"
        "        time.sleep(0.02)\n"
        "    with edgeprof.phase('infer'), edgeprof.iteration():\n"
        "        time.sleep(0.005)\n"
    )
    r = profile([sys.executable, "-c", script], backend=FakeBackend(), interval=0.02)
    infer = next(p for p in r.phases if p.name == "infer")
    assert infer.latency is not None and infer.latency.count == 10
    assert infer.latency.per_s == pytest.approx(10 / infer.wall_s)  # its own 10 occurrences
    assert r.latency is not None and r.latency.per_s is not None
    assert infer.latency.per_s is not None
    assert r.latency.per_s < infer.latency.per_s  # the run's loop rate counts pre's time


# -- the result file and the report ------------------------------------------------------------


def _with_phases() -> RunResult:
    lat = LatencyStats(
        count=50,
        mean_s=0.004,
        p50_s=0.0039,
        p90_s=0.0045,
        p95_s=0.005,
        p99_s=0.0061,
        max_s=0.0065,
        per_s=240.0,
        min_s=0.0035,
        items=400,
        items_per_s=1920.0,
    )
    return make_result(
        phases=(
            PhaseStats("load", 1, 0.1, 0.25, 0.24, 96.0, 40 * MiB, "kernel", 30 * MiB),
            PhaseStats(
                "infer", 1, 0.4, 0.21, 0.2, 95.2, 44 * MiB, "sampled", 43 * MiB, latency=lat
            ),
        ),
        latency=lat,
        marks=(Mark("ready", 0.35, 0.3, 41 * MiB),),
    )


def test_phases_round_trip_through_json_and_old_files_still_load() -> None:
    r = _with_phases()
    d = json.loads(json.dumps(r.to_dict()))
    assert d["latency"]["p95_s"] == 0.005 and d["latency"]["p50_s"] == 0.0039
    assert RunResult.from_dict(d) == r
    old = make_result().to_dict()
    for k in ("phases", "latency", "marks"):
        del old[k]
    back = RunResult.from_dict(old)
    assert back.phases == () and back.latency is None and back.marks == ()


def test_tables_show_phases_and_latency() -> None:
    text = render_plain([_with_phases()])
    lines = text.splitlines()
    i = lines.index("Phases")
    assert lines[i + 3].split() == [
        "python3",
        "load",
        "1",
        "250.0ms",
        "240.0ms",
        "96.0%",
        "40.0MiB",
        "30.0MiB",
    ]
    assert lines[i + 4].split()[6:] == ["44.0MiB", "(sampled)", "43.0MiB"]
    j = lines.index("Latency")
    assert lines[j + 3].split() == [
        "python3",
        "infer",
        "50",
        "4.00ms",
        "3.90ms",
        "4.50ms",
        "5.00ms",
        "6.10ms^",  # 50 iterations: a p99 needs 100
        "6.50ms",
        "240.0",
        "1920",
    ]
    assert len(lines) == j + 6  # no "(all)" row: the infer phase holds every iteration
    assert lines[j + 5] == (
        "^ from fewer iterations than the percentile needs (p50: 2, p90: 10, p95: 20, "
        "p99: 100): a point near the maximum, not an estimate of that percentile"
    )
    md = render_markdown([_with_phases()])
    assert "\n### Phases\n" in md and "| python3 | infer | 50 | 4.00ms |" in md
    plain = render_plain([make_result()])
    assert "Phases" not in plain and "Latency" not in plain


def test_a_one_iteration_runs_legend_lists_the_p50_it_marks() -> None:
    """A tester's one-iteration run: ``331ns^`` in P50 under a legend of p90/p95/p99."""
    from edgeprof.report.latency_cells import latency_notes, percentile_cell

    one = latency_stats([(0.0, 331e-9, None)])
    assert one is not None
    cells = [percentile_cell(one, p) for p in ("p50", "p90", "p95", "p99")]
    assert cells == ["331ns^"] * 4
    assert latency_notes(cells, [one]) == [
        "^ from fewer iterations than the percentile needs (p50: 2, p90: 10, p95: 20, "
        "p99: 100): a point near the maximum, not an estimate of that percentile"
    ]


def test_repeats_show_one_row_per_phase_with_the_medians_of_the_runs() -> None:
    base = _with_phases()
    runs = []
    for k in (1.0, 3.0, 2.0):  # medians: the k = 2 run's figures
        assert base.latency is not None
        lat = dataclasses.replace(base.latency, p95_s=0.005 * k, max_s=0.0065 * k)
        phases = tuple(
            dataclasses.replace(
                p,
                wall_s=p.wall_s * k,
                peak_bytes=int(40 * MiB * k),
                latency=lat if p.latency else None,
            )
            for p in base.phases
        )
        runs.append(dataclasses.replace(base, phases=phases, latency=lat))
    lines = render_plain(runs).splitlines()
    i = lines.index("Phases (median over each model's runs)")
    assert [ln.split()[:4] for ln in lines[i + 3 : i + 5]] == [
        ["python3", "load", "1", "500.0ms"],
        ["python3", "infer", "1", "420.0ms"],
    ]
    assert lines[i + 3].split()[6] == "80.0MiB"
    j = lines.index("Latency (median over each model's runs)")
    assert lines[j + 3].split()[6] == "10.00ms" and len(lines) == j + 7
    # MAX is the runs' largest (the k = 3 run's), not the median run's 13.00ms: the median
    # of three runs' maxima had hidden the one that missed its deadlines (a tester's).
    assert lines[j + 3].split()[8] == "19.50ms"
    assert lines[j + 5].startswith("^ from fewer iterations than the percentile needs")
    assert lines[j + 6] == MAX_OF_RUNS_NOTE
    # A run cut short (Ctrl-C, OOM, an exit code) is no figure of the model's phases, as it
    # is none of its statistics: the medians stay the successful runs'.
    cut = dataclasses.replace(
        runs[0],
        termination=Termination.INTERRUPTED,
        phases=tuple(dataclasses.replace(p, wall_s=0.001) for p in runs[0].phases),
    )
    lines = render_plain([*runs, cut]).splitlines()
    i = lines.index("Phases (median over each model's runs)")
    assert [ln.split()[:4] for ln in lines[i + 3 : i + 5]] == [
        ["python3", "load", "1", "500.0ms"],
        ["python3", "infer", "1", "420.0ms"],
    ]
    # A cell with no successful run shows its runs' phases: how far they got.
    lines = render_plain([cut, dataclasses.replace(cut, exit_code=1)]).splitlines()
    i = lines.index("Phases (median over each model's runs)")
    assert lines[i + 3].split()[:4] == ["python3", "load", "1", "1.0ms"]


def test_a_phase_entered_again_while_open_counts_each_entry_and_its_time_once() -> None:
    """docs/phases.md: a recursive ``@edgeprof.phase("rec")`` four calls deep shows N 4 (the
    entries) and the outermost call's wall time, not the sum of the nested spans."""
    ch = EventChannel()
    ch.feed(
        b"begin rec 1.0\nbegin rec 1.1\nbegin rec 1.2\nbegin rec 1.3\n"
        b"end rec 1.35\nend rec 1.4\nend rec 1.5\nend rec 1.8\n"
    )
    ch.close()
    (rec,) = ch.results(run_end=5.0)[0]
    assert rec.count == 4
    assert rec.wall_s == pytest.approx(0.8)


def _phase(name: str, peak: int | None, source: str | None) -> PhaseStats:
    return PhaseStats(name, 1, 0.0, 0.1, 0.1, 100.0, peak, source, peak)


@pytest.mark.parametrize(
    ("run_peak", "run_source", "want", "want_source"),
    [
        (int(7.7 * MiB), "sampled", 57 * MiB, "sampled"),  # the tester's: below its phase
        (None, None, 57 * MiB, "sampled"),  # no periodic sample saw it; its phases did
        (int(7.7 * MiB), "rss", 57 * MiB, "rss"),  # a tree's RSS, raised by a reading of it
        (60 * MiB, "sampled", 60 * MiB, "sampled"),  # above every phase: as it was
        (30 * MiB, "kernel", 30 * MiB, "kernel"),  # a kernel mark is never raised
    ],
)
def test_a_runs_peak_is_never_below_its_sampled_phases(
    run_peak: int | None, run_source: str | None, want: int, want_source: str
) -> None:
    """Without a kernel high-water mark a run's peak is its largest reading, and its phases'
    readings include those taken at their events: the process backend had reported 7.7 MiB
    for a run whose ``infer`` phase peaked at 56.8 MiB (a non-root ``run --plots``)."""
    memory = dataclasses.replace(
        make_result().memory, peak_bytes=run_peak, peak_source=run_source
    )
    phases = [_phase("load", 35 * MiB, "sampled"), _phase("infer", 57 * MiB, "sampled")]
    phases.append(_phase("kernel-marked", 90 * MiB, "kernel"))  # never a reading of the sum
    got = peak_with_phases(memory, phases)
    if run_source == "kernel":
        assert got is memory
    assert (got.peak_bytes, got.peak_source) == (want, want_source)
    assert peak_with_phases(memory, []) is memory


@pytest.mark.parametrize(
    ("count", "marked"),
    [
        (1, ["p50", "p90", "p95", "p99"]),
        (7, ["p90", "p95", "p99"]),
        (10, ["p95", "p99"]),
        (20, ["p99"]),
        (99, ["p99"]),
        (100, []),
    ],
)
def test_a_percentile_from_fewer_iterations_than_it_needs_is_marked(
    count: int, marked: list[str]
) -> None:
    """p from fewer than 1/(1 − p) iterations is a point near the maximum (7 iterations:
    p99 6.94 ms, max 7 ms): the cell is marked ``^``, the value kept."""
    from edgeprof.analysis.metrics import FEW
    from edgeprof.model import LatencyStats
    from edgeprof.report.latency_cells import latency_notes, percentile_cell

    lat = LatencyStats(count, 0.004, 0.004, 0.005, 0.006, 0.00694, 0.007, 250.0)
    cells = {p: percentile_cell(lat, p) for p in ("p50", "p90", "p95", "p99")}
    assert [p for p, c in cells.items() if c.endswith(FEW)] == marked
    assert cells["p99"] == "6.94ms" + (FEW if "p99" in marked else "")
    assert bool(latency_notes(cells.values(), [lat])) == bool(marked)


def test_a_rows_cpu_pct_is_its_own_cpu_time_over_its_own_wall() -> None:
    """The tester's three runs' ``load`` (41.2 ms, 8.5 ms, 20.6 %; 55.4 ms, 26.5 ms, 47.7 %;
    24.4 ms, 9.6 ms, 39.4 %): the row had read ``41.2ms 9.6ms 39.4%``, each column another
    run's median; CPU % is now the medians' 9.6 / 41.2 = 23.3 %, in every rendering."""
    base = make_result()
    load = ((0.0412, 0.0085, 20.6), (0.0554, 0.0265, 47.7), (0.0244, 0.0096, 39.4))
    runs = [
        dataclasses.replace(
            base,
            phases=(PhaseStats("load", 1, 0.0, wall, cpu, pct, 25 * MiB, "kernel", 14 * MiB),),
        )
        for wall, cpu, pct in load
    ]
    lines = render_plain(runs).splitlines()
    i = lines.index("Phases (median over each model's runs)")
    assert lines[i + 3].split()[1:6] == ["load", "1", "41.2ms", "9.6ms", "23.3%"]
    assert lines[i + 4] == "" and lines[i + 5] == (
        "each figure is the median over the model's runs, and CPU % that of the medians: "
        "CPU TIME over WALL (each run's own phases are in its result.json)"
    )
    md = render_markdown(runs)
    assert "| load | 1 | 41.2ms | 9.6ms | 23.3% |" in md
    assert "CPU % that of the medians" in md
    from edgeprof.report.html import render_html

    page = render_html(runs)
    assert "<td class=\"num\">23.3%</td>" in page or ">23.3%<" in page
    assert ">39.4%<" not in page and "CPU % that of the medians" in page
    # One run: its own row, and no note of medians.
    lines = render_plain(runs[:1]).splitlines()
    i = lines.index("Phases")
    assert lines[i + 3].split()[1:6] == ["load", "1", "41.2ms", "8.5ms", "20.6%"]
    assert "CPU % that of the medians" not in render_plain(runs[:1])


def test_a_phase_no_reading_fell_inside_has_no_cpu_time() -> None:
    """``infer`` runs [0.5, 0.75] between the readings at 0 and 1 s: its CPU time had been
    the readings' 1 s shared out by time (0.25 s, 100 %), the stretch's, not the phase's (a
    90 µs warmup had read 1.1 µs).  It is n/a, and the readings inside say why."""
    occ = [Occurrence("load", 0.0, 0.5), Occurrence("infer", 0.5, 0.75)]
    load, infer = phase_stats(occ, BENCH_GAP, [], run_end=1.0)
    assert (infer.cpu_s, infer.cpu_pct, infer.cpu_readings) == (None, None, 0)
    assert infer.wall_s == 0.25
    assert (load.cpu_s, load.cpu_pct, load.cpu_readings) == (0.5, 100.0, 1)  # the one at 0 s
    # A reading on a boundary is inside: the phase's CPU is read there, not shared out.
    (edge,) = phase_stats([Occurrence("x", 0.25, 1.0)], BENCH_GAP, [], run_end=1.0)
    assert (edge.cpu_s, edge.cpu_readings) == (0.75, 1)


def test_the_phases_table_says_which_phases_no_reading_fell_inside() -> None:
    ph = PhaseStats("warmup", 1, 0.01, 41.1e-6, None, None, 8 * MiB, "sampled", 8 * MiB,
                    cpu_readings=0)  # fmt: skip
    read = PhaseStats("load", 1, 0.02, 0.3125, 0.0149, 4.8, 26 * MiB, "kernel", 24 * MiB,
                      cpu_readings=6)  # fmt: skip
    r = make_result(phases=(ph, read))
    text = render_plain([r])
    assert (
        "CPU n/a: no reading of the CPU counter (every 0.1s) fell inside warmup (41.1µs); "
        "a finer --interval reads a short phase"
    ) in text
    assert unread_cpu_notes([make_result(phases=(read,))]) == []
    # At the finest interval no finer one is advised.
    finest = make_result(phases=(ph,))
    finest = dataclasses.replace(
        finest, samples=dataclasses.replace(finest.samples, interval_s=0.001)
    )
    assert unread_cpu_notes([finest]) == [
        "CPU n/a: no reading of the CPU counter (every 0.001s) fell inside warmup (41.1µs); "
        "a phase this short is over between two readings at edgeprof's finest interval"
    ]
    # Files written before the count (None) say nothing.
    old = dataclasses.replace(ph, cpu_readings=None)
    assert unread_cpu_notes([make_result(phases=(old,))]) == []


def test_a_held_boundarys_reading_is_stamped_at_its_line_and_counted() -> None:
    """A line ending ``held`` has its writer waiting until the reading after its batch, so
    that reading is as at its stamp; a batch whose latest boundary is not held is read as
    when it was read (its writer went on).  Each phase counts its held and unheld begins
    and ends, and a mark says whether it was held."""
    now = [1.0]
    reads: list[float] = []

    def read() -> Counters:  # 1 ms more CPU at each reading
        reads.append(now[0])
        return Counters(cpu_usage_us=1000 * len(reads), memory_current=MiB)

    store = EventStore(clock=lambda: now[0])
    store._read = read
    for at, data in [
        (1.0, b"begin a 0.5 held\n"),
        (2.0, b"end a 1.5 held\n"),  # a: read at 0.5 and 1.5, 1 ms apart
        (3.2, b"begin b 2.5\nend b 3.0 held\n"),  # one reading, as at 3.0
        (4.0, b"begin c 3.5 held\nend c 3.6\n"),  # its latest not held: as at 4.0
        (5.0, b"mark m 4.5 held\nmark n 4.6\n"),
    ]:
        now[0] = at
        store.feed(data)
    assert len(reads) == 6
    timeline = store._timeline.timeline()
    assert [timeline.cpu_at(t) for t in (0.5, 1.5, 3.0, 4.0, 4.5, 5.0)] == [
        0.001, 0.002, 0.003, 0.004, 0.005, 0.006
    ]
    phases, _, marks, _ = store.results(run_end=6.0)
    a, b, c = phases
    # a's readings are at its lines; b's begin is shared out between the readings at 1.5
    # and 3.0 (2.667 ms); c, its end not held, has no reading inside it (one at 4.0).
    assert [a.cpu_s, b.cpu_s] == pytest.approx([0.001, 0.001 / 3])
    assert (a.cpu_readings, b.cpu_readings, c.cpu_readings, c.cpu_s) == (2, 1, 0, None)
    assert [(p.held_boundaries, p.unheld_boundaries) for p in phases] == [(2, 0), (1, 1), (1, 1)]
    assert [(m.name, m.t_s, m.cpu_s, m.held) for m in marks] == [
        ("m", 4.5, 0.005, True), ("n", 4.6, 0.006, False)
    ]


def test_the_phases_table_says_which_phases_had_boundaries_not_held() -> None:
    """A phase some of whose begins and ends were read late: its peak and CPU may take in a
    neighbour's (a sleeping phase's "kernel" peak of 11.8-16.8 MiB for its own 5.3-5.6,
    when no boundary was held); every boundary held, or a file from before, says nothing."""
    step = PhaseStats("step", 2000, 0.0, 0.1, 0.05, 50.0, MiB, "kernel", MiB,
                      held_boundaries=12, unheld_boundaries=3988)  # fmt: skip
    load = PhaseStats("load", 1, 0.0, 0.3, 0.1, 33.3, MiB, "kernel", MiB,
                      held_boundaries=2, unheld_boundaries=0)  # fmt: skip
    two = [make_result(phases=(step, load)), make_result(phases=(step,))]
    assert unheld_notes(two) == [
        "boundaries not held: step (7976 of 8000) begins and ends were read when edgeprof's "
        "poll came to them (past the Python client's budget of waits, 1 % of its time, or "
        "from a writer that does not wait), up to 1 ms late (10 ms after a pause): their "
        "PEAK MEM and CPU TIME may take in that much of the next or previous phase's"
    ]
    (one,) = unheld_notes(two[1:])
    assert one.startswith("boundaries not held: step (3988 of 4000) begins and ends")
    assert one in render_plain(two[1:]).splitlines()
    old = dataclasses.replace(step, held_boundaries=None, unheld_boundaries=None)
    assert unheld_notes([make_result(phases=(load, old))]) == []


def test_the_readings_at_a_phases_lines_feed_the_runs_average_memory() -> None:
    """The channel's stats take the readings it makes at the begin and end lines (a phase
    between two samples had been left out of the run's average: the tutorial's batch-2 run
    averaged 5.91 MB beside its phases' 13.4 MB)."""
    now = 1000.0
    ch = EventChannel(clock=lambda: now)
    ch._t0 = now - 0.5  # the lines are read, and the counters read, 0.5 s into the run
    ch._read = lambda: Counters(memory_current=1000)
    stats = ch.stats()
    for t in (0.0, 0.25, 0.75):
        stats.add(t, Counters(memory_current=0))
    ch.feed(f"begin a {now - 0.01}\nend a {now}\n".encode())
    ch.close()
    assert stats.avg_memory(1.0) == 250  # both at 0.5 s: 1000 there, 0 at 0.25 and 0.75 s
    assert stats.readings_within(1.0) == 2


def _loop_with_cost(costs: list[float]) -> tuple[tuple[PhaseStats, ...], LatencyStats | None, int]:
    """10 iterations of 1 µs every 10 µs in ``infer`` (items 8), a client's probes and its
    ``cost`` lines: (phases, latency, the lines counted)."""
    store = EventStore(clock=lambda: 10.0)
    lines = ["begin infer 1.000000000"]
    lines += [f"probe {1 - 1e-5:.9f} {1 - 9e-6:.9f} 1"] * 32
    lines += [f"cost {c:.9f} 32" for c in costs]
    lines += [f"iter {1 + k * 1e-5:.9f} {1 + k * 1e-5 + 1e-6:.9f} 8" for k in range(10)]
    lines.append("end infer 1.000100000")
    store.feed(("\n".join(lines) + "\n").encode())
    phases, latency, _, _ = store.results(run_end=2.0)
    return phases, latency, store.lines


def test_the_clients_cost_is_beside_the_latency_and_marks_the_throughput() -> None:
    """A tester's empty bench function: MEAN 117 ns beside IT/S 318 888 (3.1 µs an iteration,
    ~96 % edgeprof's own), with no word: the cost the client timed is the latency's, the
    throughput is marked, and the note gives the cost, its share and the rates without it
    (items/s too, where items were counted)."""
    from edgeprof.analysis.overhead import (
        items_per_iteration,
        overhead_share,
        rate_without_overhead,
    )
    from edgeprof.report.overhead_notes import overhead_notes
    from edgeprof.report.phases import latency_rows

    phases, latency, lines = _loop_with_cost([4e-6, 2e-6, 3e-6])  # two processes' and a third
    assert lines == 12  # the probes and costs are the client's, not the run's events
    assert latency is not None and phases[0].latency is not None
    assert latency.overhead_s == phases[0].latency.overhead_s == 3e-6  # their median
    assert latency.count == 10 and latency.per_s == pytest.approx(10 / 91e-6)
    assert overhead_share(latency) == pytest.approx(3e-6 * 10 / 91e-6)  # 33 %
    assert rate_without_overhead(latency) == pytest.approx(10 / 61e-6)  # 163 934 it/s
    run = dataclasses.replace(make_result(), phases=phases, latency=latency)
    (row,) = latency_rows([run])
    assert row[-2:] == ["109890†", "879121†"]
    # ITEMS/S is marked too, so the note gives its rate without the cost beside IT/S's: 8
    # items an iteration (the verifier's iteration(items=8) had got ~405306 it/s alone).
    assert items_per_iteration(latency) == pytest.approx(8.0)
    assert overhead_notes([("python3 infer", latency)]) == [
        "† python3 infer: edgeprof.iteration() itself took 3.00µs an iteration (timed in the "
        "run), 33% of the loop's 9.10µs: IT/S and ITEMS/S count it, no latency does; without "
        "it ~163934 it/s and ~1311475 items/s"
    ]
    no_items = dataclasses.replace(latency, items=None, items_per_s=None)
    assert items_per_iteration(no_items) is None
    assert overhead_notes([("python3 infer", no_items)]) == [
        "† python3 infer: edgeprof.iteration() itself took 3.00µs an iteration (timed in the "
        "run), 33% of the loop's 9.10µs: IT/S and ITEMS/S count it, no latency does; without "
        "it ~163934 it/s"
    ]
    text = render_plain([run])
    assert "109890†" in text and overhead_notes([("python3 infer", latency)])[0] in text


def test_a_small_cost_is_not_marked_and_a_dominant_one_gives_no_rate_without_it() -> None:
    from edgeprof.analysis.overhead import overhead_marked, rate_without_overhead
    from edgeprof.report.overhead_notes import overhead_notes
    from edgeprof.report.phases import latency_rows

    _, small, _ = _loop_with_cost([0.5e-6])  # 5.5 % of the 9.1 µs loop
    assert small is not None and not overhead_marked(small)
    run = dataclasses.replace(make_result(), phases=(), latency=small)
    assert latency_rows([run])[0][-2:] == ["109890", "879121"]
    assert overhead_notes([("x", small)]) == []
    _, big, _ = _loop_with_cost([8.5e-6])  # 93 %: the rest is within the cost's spread
    assert big is not None and rate_without_overhead(big) is None
    assert overhead_notes([("x", big)]) == [
        "† x: edgeprof.iteration() itself took 8.50µs an iteration (timed in the run), 93% of "
        "the loop's 9.10µs: IT/S and ITEMS/S count it, no latency does; the workload's own "
        "rate cannot be told from it (1/MEAN: 1000000 it/s and 8000000 items/s)"
    ]
    _, none, _ = _loop_with_cost([])  # another language's client: no cost, no mark
    assert none is not None and none.overhead_s is None and not overhead_marked(none)


def test_a_phase_some_of_whose_windows_missed_says_how_many() -> None:
    """'step', 13 of whose 40 boundaries were held, had read "each ended before edgeprof
    read its begin line" (a user's): the count of those that did."""
    w = missed_windows_warning(["step", "sub"], {"step": (3, 20), "sub": (10, 10)})
    assert w.startswith(
        "phase peaks of 'step': 3 of 20 occurrences; 'sub' are sampled: an occurrence that "
        "ended before edgeprof read its begin line had no kernel window"
    )
    # Every occurrence missed: the sentence as before.
    assert missed_windows_warning(["sub"], {"sub": (10, 10)}) == missed_windows_warning(["sub"])
