"""The caps on what a workload's events may make edgeprof keep: distinct phase names, marks,
stored iterations, and the bounds of one line; everything past a cap is counted exactly and
warned about once per kind (fed to the channel's reader directly, and once through the
runner with the fake backend)."""

from __future__ import annotations

import json
import math
import random
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprof import profile
from edgeprof.measure.event_lines import MAX_LINE, cap_warnings
from edgeprof.measure.events import MAX_ITERATIONS, MAX_MARKS, MAX_PHASES, EventChannel
from edgeprof.measure.latency import latency_stats
from edgeprof.measure.sketch import SKETCH_ALPHA, Sketch, percentile
from edgeprof.model import Capped, Counters, EventCounts, RunResult
from edgeprof.report.phases import render_sections
from edgeprof.workload.instrument import MAX_NAME
from tests.fakes import FakeBackend

from .conftest import make_result

REPO = Path(__file__).resolve().parents[2]
T = 1000.0  # a CLOCK_MONOTONIC time for the lines


def after_every_stamp() -> float:
    """The channel's clock: after every made-up stamp here (the 100 000 iterations' lines
    end near T + 480 s), whatever this host's uptime (a real clock refused them as after
    "now" on a host up for less than that)."""
    return T + 1e6


def _feed(ch: EventChannel, lines: list[str], chunk: int = 4096) -> None:
    """Lines as the pipe delivers them: cut anywhere, not at newlines."""
    data = "".join(line + "\n" for line in lines).encode()
    for i in range(0, len(data), chunk):
        ch.feed(data[i : i + chunk])
    ch.close()


def test_the_defaults() -> None:
    assert (MAX_PHASES, MAX_MARKS, MAX_ITERATIONS) == (256, 1024, 100_000)
    assert SKETCH_ALPHA == 0.01


# -- phases -----------------------------------------------------------------------------------


class _Peaks:
    """A per-phase peak reset that counts its windows."""

    def __init__(self) -> None:
        self.started = self.stopped = 0

    def start(self) -> object:
        self.started += 1
        return self.started

    def stop(self, token: object) -> int | None:
        self.stopped += 1
        return 1


def test_distinct_phase_names_past_the_cap_are_counted_and_cost_nothing() -> None:
    n = MAX_PHASES + 1000
    ch = EventChannel(clock=after_every_stamp)
    reads = 0

    def read() -> Counters:
        nonlocal reads
        reads += 1
        return Counters(cpu_usage_us=0, memory_current=0)

    peaks = _Peaks()
    ch._read, ch._peaks = read, peaks  # type: ignore[assignment]
    lines = [f"{kind} phase-{i} {T + i}" for i in range(n) for kind in ("begin", "end")]
    kept = 2 * MAX_PHASES
    ch.feed("".join(line + "\n" for line in lines[:kept]).encode())  # one pipe read
    _feed(ch, lines[kept:])
    phases, _, _, warnings = ch.results(run_end=T + n + 1)
    assert [p.name for p in phases] == [f"phase-{i}" for i in range(MAX_PHASES)]
    assert all(p.complete and p.count == 1 for p in phases)
    counts = ch.counts()
    assert counts.phases == Capped(cap=MAX_PHASES, kept=MAX_PHASES, over=1000)
    assert (counts.lines, counts.malformed) == (2 * n, 0)  # their end lines are not malformed
    # A name past the cap reads no counters and opens no peak window; the kept ones' 512
    # boundary lines, read at once, are one reading.
    assert reads == 1
    assert peaks.started == peaks.stopped == MAX_PHASES
    assert [w for w in warnings if "distinct phases" in w] == [
        "the workload named more than 256 distinct phases: the first 256 are kept, 1000 "
        "occurrence(s) of later names were counted, not recorded (events.phases in result.json)"
    ]
    assert not [w for w in warnings if "malformed" in w]


def test_kept_names_repeat_after_the_cap_and_an_unknown_end_before_it_is_malformed() -> None:
    ch = EventChannel(max_phases=2, clock=after_every_stamp)
    lines = ["end never-begun", "begin a", "end a", "begin b", "end b", "begin c", "end c"]
    lines += ["begin a", "end a", "begin c", "end c"]
    _feed(ch, lines)
    phases, _, _, _ = ch.results(run_end=5.0)
    assert [(p.name, p.count) for p in phases] == [("a", 2), ("b", 1)]
    assert ch.counts().phases == Capped(2, 2, 2)
    assert ch.malformed == 1  # the end before the cap was reached is still the protocol's error


# -- marks ------------------------------------------------------------------------------------


def test_marks_past_the_cap_are_counted_not_kept() -> None:
    ch = EventChannel(clock=after_every_stamp)
    _feed(ch, [f"mark m{i % 3} {T + i}" for i in range(MAX_MARKS + 77)])
    _, _, marks, warnings = ch.results(run_end=1.0)
    assert len(marks) == MAX_MARKS and marks[-1].name == f"m{(MAX_MARKS - 1) % 3}"
    assert ch.counts().marks == Capped(MAX_MARKS, MAX_MARKS, 77)
    assert [w for w in warnings if "marks" in w] == [
        "the workload sent more than 1024 marks: the first 1024 are kept, 77 later one(s) were "
        "counted, not recorded (events.marks in result.json)"
    ]


# -- iterations -------------------------------------------------------------------------------


def _iterations(n: int, seed: int = 7) -> Iterator[tuple[float, float, int]]:
    """Skewed durations (a log-normal body and a slow tail), printed as the client does."""
    rng = random.Random(seed)
    t = T
    for i in range(n):
        d = rng.lognormvariate(math.log(0.004), 0.4) * (10 if i % 97 == 0 else 1)
        t0, t1 = float(f"{t:.9f}"), float(f"{t + d:.9f}")
        yield t0, t1, 1 + i % 5
        t = t1 + 0.0001


def _lines(its: list[tuple[float, float, int]]) -> list[str]:
    return [f"iter {t0:.9f} {t1:.9f} {k}" for t0, t1, k in its]


def _assert_close_to_exact(got: float, exact: float) -> None:
    assert abs(got - exact) <= SKETCH_ALPHA * exact * (1 + 1e-9), (got, exact)


def test_iterations_past_the_store_keep_exact_counts_and_bounded_percentiles() -> None:
    cap, n = 2_000, 30_000
    its = list(_iterations(n))
    ch = EventChannel(max_iterations=cap, clock=after_every_stamp)
    _feed(ch, [f"begin infer {T}", *_lines(its), f"end infer {its[-1][1] + 1}"])
    phases, lat, _, warnings = ch.results(run_end=1e6)
    exact = latency_stats(its)  # the channel was not started: its clock's zero is 0.0
    assert lat is not None and exact is not None
    assert lat.count == n and lat.items == exact.items == sum(k for _, _, k in its)
    assert lat.min_s == exact.min_s and lat.max_s == exact.max_s
    assert lat.mean_s == pytest.approx(exact.mean_s, rel=1e-12)
    assert lat.per_s == pytest.approx(exact.per_s, rel=1e-12)
    assert lat.items_per_s == pytest.approx(exact.items_per_s, rel=1e-12)
    for name in ("p50_s", "p90_s", "p95_s", "p99_s"):
        _assert_close_to_exact(getattr(lat, name), getattr(exact, name))
    assert lat.percentiles_error == SKETCH_ALPHA and exact.percentiles_error is None
    # The phase open around them gets every one, past the store or not.
    [infer] = phases
    assert infer.latency is not None and infer.latency.count == n
    assert infer.latency.items == lat.items and infer.latency.max_s == lat.max_s
    assert ch.counts().iterations == Capped(cap, cap, n - cap)
    assert [w for w in warnings if "iterations" in w] == [
        "the workload reported more than 2000 iterations: 28000 past the first 2000 are in "
        "the counts, means, extremes and rates exactly, in the percentiles within ±1% "
        "(a sketch), and not in the throttling check (events.iterations in result.json)"
    ]


def test_the_default_store_and_a_phase_that_only_has_iterations_past_it() -> None:
    its = list(_iterations(MAX_ITERATIONS + 10))
    ch = EventChannel(clock=after_every_stamp)
    late = its[MAX_ITERATIONS:]
    _feed(
        ch,
        [
            *_lines(its[:MAX_ITERATIONS]),
            f"begin late {late[0][0]}",
            *_lines(late),
            f"end late {late[-1][1]}",
        ],
        chunk=65536,
    )
    phases, lat, _, _ = ch.results(run_end=1e6)
    assert lat is not None and lat.count == MAX_ITERATIONS + 10
    assert ch.counts().iterations == Capped(MAX_ITERATIONS, MAX_ITERATIONS, 10)
    [p] = phases
    assert p.latency is not None and p.latency.count == 10
    assert p.latency.max_s == max(t1 - t0 for t0, t1, _ in late)


def test_under_the_cap_everything_is_exact_and_nothing_is_said() -> None:
    its = list(_iterations(500))
    ch = EventChannel(max_iterations=500, clock=after_every_stamp)
    _feed(ch, _lines(its))
    _, lat, _, warnings = ch.results(run_end=1e6)
    assert lat == latency_stats(its)
    assert lat is not None and lat.percentiles_error is None
    assert ch.counts() == EventCounts(
        500, 0, Capped(MAX_PHASES, 0, 0), Capped(MAX_MARKS, 0, 0), Capped(500, 500, 0)
    )
    assert not ch.counts().over and cap_warnings(ch.counts()) == [] and warnings == []


def test_the_batch_that_reaches_the_store_leaves_its_stalls_unknown() -> None:
    """Its reading of the throttled time comes after lines that are not stored."""
    ch = EventChannel(max_iterations=3, clock=after_every_stamp)
    readings = iter([1_000, 5_000, 9_000])
    ch._read_throttled = lambda: next(readings)
    ch.feed(b"iter 1.0 1.01\n")  # the first reading: no stall known before it
    ch.feed(b"iter 1.01 1.02\n")  # 4 ms of stall
    ch.feed(b"iter 1.02 1.03\niter 1.03 1.04\n")  # reaches the cap: no reading taken
    ch.feed(b"iter 1.04 1.05\n")  # past it: no reading either
    ch.close()
    assert list(ch._throttled)[:2] == [0.001, 0.005] and math.isnan(ch._throttled[2])
    _, lat, _, _ = ch.results(run_end=10.0)
    assert lat is not None and lat.count == 5
    assert lat.throttling is not None and lat.throttling.iterations == 1


# -- the sketch -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        [0.005] * 1000,
        [random.Random(1).lognormvariate(-5, 2) for _ in range(20_000)],
        [0.001 * (1 + i % 2) * (1000 if i % 10 == 0 else 1) for i in range(5000)],
        [0.0, 5e-10, 2e-9, 1.0, 2e6, 3e6],
        [7.0],
    ],
    ids=["constant", "lognormal", "two-clusters", "outside-the-range", "one"],
)
def test_sketch_percentiles_are_within_alpha_of_the_exact_ones(values: list[float]) -> None:
    s = Sketch()
    s.extend(values)
    exact = sorted(values)
    ps = [0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0]
    for p, got in zip(ps, s.percentiles(ps), strict=True):
        want = percentile(exact, p)
        if exact[math.floor((len(exact) - 1) * p / 100)] >= 1e-9 and want <= 1e6:
            _assert_close_to_exact(got, want)
        else:  # outside the resolved range: clamped to the exact extremes
            assert exact[0] <= got <= exact[-1]
    assert (s.lo, s.hi, s.n) == (exact[0], exact[-1], len(values))
    assert len(s.counts) * s.counts.itemsize < 16_000  # the whole store, whatever the count


# -- one line ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("begin " + "n" * (MAX_NAME + 1), f"name longer than {MAX_NAME} characters"),
        ("mark a\x1b[2Jb", "name with a control character"),
        ("begin x 1e300", "not a time: '1e300'"),
        (f"iter 1 2 {2**63}", "iter: ITEMS over 2**63 - 1"),
        ("iter 1 2 " + "9" * 4000, "iter: ITEMS over 2**63 - 1"),
        ("x" * (MAX_LINE + 1), f"line longer than {MAX_LINE} bytes"),
        ("mark " + "é" * 2100, f"line longer than {MAX_LINE} bytes"),  # 2 105 chars, 4 205 B
    ],
)
def test_hostile_lines_are_counted_malformed_and_not_stored(line: str, why: str) -> None:
    ch = EventChannel(clock=after_every_stamp)
    _feed(ch, [line, "mark ok"])
    phases, lat, marks, warnings = ch.results(run_end=1.0)
    assert (ch.lines, ch.malformed) == (2, 1)
    assert phases == () and lat is None and [m.name for m in marks] == ["ok"]
    [w] = [w for w in warnings if "malformed" in w]
    assert w.endswith(f": {why}"), w
    assert len(w) < 200  # the first bad line is quoted by its first 60 characters


def test_an_over_long_line_in_many_pieces_is_one_malformed_line() -> None:
    ch = EventChannel(clock=after_every_stamp)
    for _ in range(10):  # 10 × 4 KiB without a newline
        ch.feed(b"y" * 4096)
    ch.feed(b"yyy\nmark after\n")
    ch.close()
    _, _, marks, _ = ch.results(run_end=1.0)
    assert (ch.lines, ch.malformed) == (2, 1)
    assert [m.name for m in marks] == ["after"]
    assert ch._buf == b""  # nothing of it held


# -- the result file, the report, the runner --------------------------------------------------


def _capped_result() -> RunResult:
    ch = EventChannel(max_phases=1, max_marks=1, max_iterations=10, clock=after_every_stamp)
    its = list(_iterations(50))
    _feed(ch, ["begin a", "begin b", "mark m", "mark n", *_lines(its), "end b", "end a"])
    phases, lat, marks, warnings = ch.results(run_end=1e6)
    return make_result(
        phases=phases, latency=lat, marks=marks, warnings=tuple(warnings), events=ch.counts()
    )


def test_counts_round_trip_through_json_and_older_files_have_none() -> None:
    r = _capped_result()
    d = json.loads(json.dumps(r.to_dict()))
    assert d["events"] == {
        "lines": 56,
        "malformed": 0,
        "phases": {"cap": 1, "kept": 1, "over": 1},
        "marks": {"cap": 1, "kept": 1, "over": 1},
        "iterations": {"cap": 10, "kept": 10, "over": 40},
    }
    assert d["latency"]["percentiles_error"] == SKETCH_ALPHA
    assert RunResult.from_dict(d) == r
    old = make_result().to_dict()
    del old["events"], old["latency"]
    back = RunResult.from_dict(old)
    assert back.events is None and back.latency is None


def test_the_report_marks_sketched_percentiles_and_says_what_was_left_out() -> None:
    text = render_sections([_capped_result()])
    assert "python3: 1 occurrence(s) of phase names past the first 1 are not in the table" in text
    assert "python3: 1 mark(s) past the first 1 not kept" in text
    latency = text[text.index("Latency") :].splitlines()
    row = next(line.split() for line in latency if line.split()[:2] == ["python3", "a"])
    assert [c.startswith("~") for c in row[3:8]] == [False, True, True, True, True]  # mean: exact
    assert (
        "~ within ±1%: past the iterations edgeprof stores, percentiles come from a sketch" in text
    )


def test_the_runner_puts_the_counts_and_the_warnings_in_the_result() -> None:
    workload = textwrap.dedent(
        f"""
        import edgeprof
        for i in range({MAX_PHASES} + 5):
            with edgeprof.phase(f"p{{i}}"):
                pass
        for i in range({MAX_MARKS} + 6):
            edgeprof.mark("m")
        """
    )
    r = profile(
        [sys.executable, "-c", workload],
        backend=FakeBackend(),
        interval=0.05,
        env={"PYTHONPATH": str(REPO)},
    )
    assert r.exit_code == 0
    assert r.events is not None
    assert r.events.phases == Capped(MAX_PHASES, MAX_PHASES, 5)
    assert r.events.marks == Capped(MAX_MARKS, MAX_MARKS, 6)
    assert r.events.lines == 2 * (MAX_PHASES + 5) + MAX_MARKS + 6
    assert len(r.phases) == MAX_PHASES and len(r.marks) == MAX_MARKS
    assert sum("distinct phases" in w for w in r.warnings) == 1
    assert sum("1024 marks" in w for w in r.warnings) == 1
    assert RunResult.from_dict(json.loads(json.dumps(r.to_dict()))).events == r.events


@pytest.mark.parametrize("cap", [100, 1])  # stored, and (past the first) in the tails
def test_items_are_counted_per_phase_only_where_its_lines_gave_them(cap: int) -> None:
    """Phase a's lines give no ITEMS, b's give 8: a has no items/s (it had had 2 items and
    items/s equal to its it/s, counted 1 each because b gave ITEMS); b has 24.  The run's
    iterations, some with ITEMS, count a's as 1 each (the protocol's default), 26."""
    ch = EventChannel(max_iterations=cap, clock=after_every_stamp)
    a_lines = [f"begin a {T}", f"iter {T} {T + 0.01}", f"iter {T + 0.01} {T + 0.02}"]
    b_lines = [f"iter {T + 0.1 + k / 10} {T + 0.15 + k / 10} 8" for k in range(3)]
    _feed(ch, [*a_lines, f"end a {T + 0.02}", f"begin b {T + 0.1}", *b_lines, f"end b {T + 0.4}"])
    (a, b), lat, _, _ = ch.results(run_end=1e6)
    assert a.latency is not None and a.latency.count == 2
    assert a.latency.items is None and a.latency.items_per_s is None
    assert b.latency is not None and b.latency.items == 24
    assert b.latency.items_per_s == pytest.approx(24 / 0.25)  # over the span 0.1 … 0.35 s
    assert lat is not None and lat.items == 26
