"""An iteration that raises is counted apart: out of ITER, the percentiles and the rates,
counted per phase and run (``latency.raised``), its exception unchanged (the tester's
``edge.py``: 2 of 10 decorated requests raised, and all 10 had been latency samples)."""

from __future__ import annotations

import json

import pytest

from edgeprof.measure.event_lines import ProtocolError, parse_line
from edgeprof.measure.events import EventChannel
from edgeprof.model import LatencyStats, PhaseStats, RunResult
from edgeprof.report.phases import latency_rows
from tests.unit.conftest import make_result
from tests.unit.test_event_caps import T, _feed, after_every_stamp
from tests.unit.test_phase_client import _through_a_pipe

RAISING = """
import edgeprof, sys

@edgeprof.iteration(items=3)
def req(fail):
    if fail:
        raise KeyError("bad request")

caught = []
for i in range(4):
    try:
        req(i == 1)
    except KeyError as e:
        caught.append(e)
try:
    with edgeprof.iteration():
        raise ValueError("in a with")
except ValueError as e:
    caught.append(e)
print(repr(caught), caught[0].__traceback__.tb_next.tb_frame.f_code.co_name)
"""


def test_the_client_sends_a_raised_line_and_the_exception_goes_on_unchanged() -> None:
    proc, data = _through_a_pipe(RAISING)
    assert proc.returncode == 0, proc.stderr
    # The very exceptions raised, their traceback down to the function that raised.
    assert proc.stdout == "[KeyError('bad request'), ValueError('in a with')] timed\n"
    kinds = [(ln.split()[0], len(ln.split())) for ln in data.decode().splitlines()]
    assert kinds == [("iter", 4), ("raised", 3), ("iter", 4), ("iter", 4), ("raised", 3)]
    events = [parse_line(ln, 0.0) for ln in data.decode().splitlines()]
    assert all(e.t0 <= e.t for e in events)


def test_the_raised_line() -> None:
    e = parse_line("raised 1.0 1.25", 0.0)
    assert (e.kind, e.t0, e.t) == ("raised", 1.0, 1.25)
    for bad in ("raised 1", "raised 2 1", "raised 1 2 3", "raised a 2"):
        with pytest.raises(ProtocolError):
            parse_line(bad, 0.0)


def _serve(ch: EventChannel) -> None:
    """A phase of 8 completed 10 ms iterations of 3 items and 2 raised ones of 5 s; one
    completed and one raised iteration after it."""
    lines = [f"begin serve {T}"]
    t = T
    for i in range(10):
        if i % 5 == 0:
            lines.append(f"raised {t:.3f} {t + 5:.3f}")
            t += 5
        else:
            lines.append(f"iter {t:.3f} {t + 0.01:.3f} 3")
            t += 0.01
    lines += [f"end serve {t:.3f}", f"iter {t + 1:.3f} {t + 1.02:.3f}", f"raised {t + 2} {t + 3}"]
    _feed(ch, lines)


def test_raised_iterations_are_counted_apart_per_phase_and_run() -> None:
    ch = EventChannel(clock=after_every_stamp)
    _serve(ch)
    phases, lat, _, warnings = ch.results(run_end=T + 100)
    (serve,) = phases
    s = serve.latency
    assert s is not None and lat is not None
    assert (s.count, s.raised, s.items) == (8, 2, 24)
    assert s.max_s == pytest.approx(0.01, abs=1e-6)  # the 5 s raised ones are no latency
    assert s.p99_s == pytest.approx(0.01, abs=1e-6)
    assert (lat.count, lat.raised, lat.items) == (9, 3, 25)
    assert lat.max_s == pytest.approx(0.02, abs=1e-6)
    assert not any("raised" in w for w in warnings)


def test_raised_iterations_past_the_store_are_counted_too() -> None:
    ch = EventChannel(max_iterations=1, clock=after_every_stamp)
    _serve(ch)
    phases, lat, _, _ = ch.results(run_end=T + 100)
    assert phases[0].latency is not None and lat is not None
    assert (phases[0].latency.raised, lat.raised) == (2, 3)


def test_a_run_whose_every_iteration_raised_says_how_many() -> None:
    ch = EventChannel(clock=after_every_stamp)
    _feed(ch, [f"begin serve {T}", f"raised {T} {T + 1}", f"end serve {T + 1}",
               f"raised {T + 2} {T + 3}"])  # fmt: skip
    phases, lat, _, warnings = ch.results(run_end=T + 10)
    assert lat is None and phases[0].latency is None
    assert warnings == [
        "all 2 iteration(s) raised: the run has no latency or throughput",
        "phase 'serve': all 1 of its iteration(s) raised: no latency",
    ]


def _lat(count: int, raised: int) -> LatencyStats:
    return LatencyStats(count, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 100.0, raised=raised)


def test_the_table_counts_them_beside_iter_and_old_files_load() -> None:
    r = make_result(latency=_lat(8, 2))
    assert latency_rows([r])[0][1:3] == ["(all)", "8 (+2 raised)"]
    assert latency_rows([make_result(latency=_lat(8, 0))])[0][2] == "8"
    # A phase that holds every completed iteration but not every raised one: the run's row
    # stays, or the third raised iteration would be in no row.
    serve = PhaseStats("serve", 1, 0.0, 1.0, None, None, None, None, None, latency=_lat(8, 2))
    rows = latency_rows([make_result(phases=(serve,), latency=_lat(8, 3))])
    assert [row[1:3] for row in rows] == [["serve", "8 (+2 raised)"], ["(all)", "8 (+3 raised)"]]
    d = json.loads(json.dumps(r.to_dict()))
    assert d["latency"]["raised"] == 2
    assert RunResult.from_dict(d) == r
    del d["latency"]["raised"]  # a file written before
    back = RunResult.from_dict(d).latency
    assert back is not None and back.raised == 0


def test_a_negative_raised_count_is_refused_as_other_counts_are() -> None:
    """A hand-edited ``"raised": -2`` had loaded and rendered ``ITER 10 (+-2 raised)``."""
    from edgeprof.errors import ConfigError

    d = make_result(latency=LatencyStats(count=10, mean_s=0.1, p50_s=0.1, p90_s=0.1,
                                         p95_s=0.1, p99_s=0.1, max_s=0.1, per_s=10.0,
                                         raised=2)).to_dict()  # fmt: skip
    d["latency"]["raised"] = -2
    with pytest.raises(ConfigError, match="raised"):
        RunResult.from_dict(d)
