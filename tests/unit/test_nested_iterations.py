"""Only the outermost iteration of a thread (or asyncio task) is an iteration of the run: one
opened inside another is sent as ``nested``, counted in one warning and in no figure (the
tester's ``nest.py``: 5 frames of 10 ms, each holding a 5 ms sub-step, and 3 decorated calls
of 2 ms had been 13 iterations with a p50 of 5.08 ms)."""

from __future__ import annotations

import pytest

from edgeprof.measure.event_lines import ProtocolError, parse_line
from edgeprof.measure.events import EventChannel
from tests.unit.test_event_caps import T, _feed, after_every_stamp
from tests.unit.test_phase_client import _through_a_pipe

NEST = """
import edgeprof, time
for i in range(5):
    with edgeprof.iteration():
        time.sleep(0.01)
        with edgeprof.iteration():
            time.sleep(0.005)
@edgeprof.iteration()
def f(): time.sleep(0.002)
for i in range(3): f()
"""


def _lines(data: bytes) -> list[str]:
    """The events, without ``waited`` notes (a write preempted on a loaded host sends one) or
    the client's timing of its own cost (``probe``, ``cost``)."""
    own = ("waited ", "probe ", "cost ")
    return [ln for ln in data.decode().splitlines() if not ln.startswith(own)]


def _kinds(data: bytes) -> list[str]:
    return [ln.split()[0] for ln in _lines(data)]


def test_the_client_sends_an_iteration_inside_another_as_nested() -> None:
    proc, data = _through_a_pipe(NEST)
    assert proc.returncode == 0, proc.stderr
    assert _kinds(data) == ["nested", "iter"] * 5 + ["iter"] * 3
    events = [parse_line(ln, 0.0) for ln in _lines(data)]
    # Each outer frame holds its sub-step: 10 + 5 ms, the sub-step's 5 ms inside it.
    for inner, outer in zip(events[0:10:2], events[1:10:2], strict=True):
        assert outer.t0 <= inner.t0 <= inner.t <= outer.t
        assert outer.t - outer.t0 >= 0.015
        assert inner.t - inner.t0 >= 0.005


def test_a_nested_iteration_that_raised_is_nested_and_the_depth_comes_back() -> None:
    code = """
import edgeprof
with edgeprof.iteration():
    try:
        with edgeprof.iteration():
            raise KeyError("sub-step")
    except KeyError:
        pass
with edgeprof.iteration():  # outermost again: the raised one counted its depth down
    pass
"""
    proc, data = _through_a_pipe(code)
    assert proc.returncode == 0, proc.stderr
    assert _kinds(data) == ["nested", "iter", "iter"]


def test_threads_tasks_and_forked_children_have_their_own_outermost() -> None:
    """A thread, an asyncio task and a child forked inside an iteration each time their own
    iterations: none is a sub-step of the iteration it started in."""
    code = """
import asyncio, os, threading, edgeprof

async def request():
    with edgeprof.iteration():
        await asyncio.sleep(0.01)  # the other requests' iterations open meanwhile

async def serve():
    await asyncio.gather(*(request() for _ in range(3)))

with edgeprof.iteration():
    t = threading.Thread(target=lambda: edgeprof.iteration()(lambda: None)())
    t.start()
    t.join()
asyncio.run(serve())
with edgeprof.iteration():
    pid = os.fork()
    if pid == 0:
        with edgeprof.iteration():
            pass
        os._exit(0)
    os.waitpid(pid, 0)
"""
    proc, data = _through_a_pipe(code)
    assert proc.returncode == 0, proc.stderr
    # thread, the with around it, 3 concurrent requests, the child, the with around the fork
    assert _kinds(data) == ["iter"] * 7


def test_the_nested_line() -> None:
    e = parse_line("nested 1.0 1.25", 0.0)
    assert (e.kind, e.t0, e.t) == ("nested", 1.0, 1.25)
    for bad in ("nested 1", "nested 2 1", "nested 1 2 3", "nested a 2"):
        with pytest.raises(ProtocolError):
            parse_line(bad, 0.0)


def _nest_lines() -> list[str]:
    """The tester's run as the client sends it: 5 frames of 15 ms (10 ms, then a 5 ms
    sub-step inside), then 3 calls of 2 ms."""
    lines, t = [], T
    for _ in range(5):
        lines += [f"nested {t + 0.010:.3f} {t + 0.015:.3f}", f"iter {t:.3f} {t + 0.015:.3f}"]
        t += 0.015
    for _ in range(3):
        lines.append(f"iter {t:.3f} {t + 0.002:.3f}")
        t += 0.002
    return lines


def test_nested_iterations_are_in_no_figure_and_warned_about_once() -> None:
    ch = EventChannel(clock=after_every_stamp)
    _feed(ch, _nest_lines())
    _, lat, _, warnings = ch.results(run_end=1.0)
    assert lat is not None
    assert lat.count == 8  # the 8 real inferences, not 13
    assert lat.mean_s == pytest.approx((5 * 0.015 + 3 * 0.002) / 8, abs=1e-9)
    assert lat.p50_s == pytest.approx(0.015, abs=1e-9)  # a frame's time, no sub-step's
    assert lat.max_s == pytest.approx(0.015, abs=1e-9)
    assert lat.raised == 0
    assert warnings == [
        "5 iteration(s) ran inside another iteration of the same thread and are not "
        "counted: only the outermost is an iteration of the run (its latency holds theirs); "
        "time a sub-step with edgeprof.phase(NAME)"
    ]
    assert ch.counts().malformed == 0


def test_a_run_without_nested_iterations_has_no_such_warning() -> None:
    ch = EventChannel(clock=after_every_stamp)
    _feed(ch, [ln for ln in _nest_lines() if not ln.startswith("nested")])
    _, lat, _, warnings = ch.results(run_end=1.0)
    assert lat is not None and lat.count == 8
    assert not any("inside another iteration" in w for w in warnings)
