"""The workload client around ``async def``, ``async with``, generator functions and one
iteration object entered inside itself (a library user's: an ``async def`` under
``@edgeprof.phase`` had been timed over the making of its coroutine, 941 µs for a 200 ms
``asyncio.sleep``; ``@edgeprof.iteration`` 2.3 µs for 50 ms)."""

from __future__ import annotations

from edgeprof.measure.event_lines import parse_line
from tests.unit.test_nested_iterations import _kinds, _lines
from tests.unit.test_phase_client import _through_a_pipe

SLEEP_S = 0.05

ASYNC = f"""
import asyncio, edgeprof
@edgeprof.phase("infer")
async def infer():
    await asyncio.sleep({SLEEP_S})
    return 7
@edgeprof.iteration(items=2)
async def step():
    await asyncio.sleep({SLEEP_S})
async def main():
    assert await infer() == 7
    await step()
    async with edgeprof.phase("ctx"):
        async with edgeprof.iteration():
            await asyncio.sleep({SLEEP_S})
asyncio.run(main())
"""


def test_an_async_phase_and_iteration_hold_the_awaited_run() -> None:
    proc, data = _through_a_pipe(ASYNC)
    assert proc.returncode == 0, proc.stderr
    lines = _lines(data)
    assert _kinds(data) == ["begin", "end", "iter", "begin", "iter", "end"]
    events = [parse_line(ln, 0.0) for ln in lines]
    infer = events[1].t - events[0].t
    step, inner = (e.t - e.t0 for e in (events[2], events[4]))
    ctx = events[5].t - events[3].t
    assert min(infer, step, inner, ctx) >= SLEEP_S, (infer, step, inner, ctx)
    assert lines[2].split()[3] == "2"  # the decorator's items


def test_a_generator_function_is_refused_with_what_to_do() -> None:
    for what in ("phase('g')", "iteration()"):
        for kind in ("def g():\n    yield 1", "async def g():\n    yield 1"):
            code = f"import edgeprof\n@edgeprof.{what}\n{kind}\n"
            proc, _ = _through_a_pipe(code)
            assert proc.returncode == 1
            assert "g is a generator function, whose body runs as it is iterated" in (
                proc.stderr
            ), proc.stderr


def test_one_iteration_entered_inside_itself_counts_the_outer_entry() -> None:
    """``with it: … with it:``: the inner entry had overwritten the outer's nesting, and 3
    frames holding 3 sub-steps were 6 nested iterations and no latency."""
    code = """
import edgeprof, time
it = edgeprof.iteration()
for _ in range(3):
    with it:
        time.sleep(0.01)
        with it:
            time.sleep(0.005)
with it:
    pass
"""
    proc, data = _through_a_pipe(code)
    assert proc.returncode == 0, proc.stderr
    assert _kinds(data) == ["nested", "iter"] * 3 + ["iter"]
    events = [parse_line(ln, 0.0) for ln in _lines(data)]
    for inner, outer in zip(events[0:6:2], events[1:6:2], strict=True):
        assert outer.t0 <= inner.t0 <= inner.t <= outer.t and outer.t - outer.t0 >= 0.015


THREADS_FIRST = """
import threading, time, edgeprof
go = threading.Barrier(8)
def work(k):
    go.wait()
    with edgeprof.phase(f"w{k}"):
        time.sleep(0.01)
ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
"""


def test_threads_first_events_at_once_are_all_sent() -> None:
    """The channel's lookup had marked itself done before its descriptor was set: threads
    arriving meanwhile sent nothing (a user's 4 threads: 5 runs of 6 lost phases, "end of
    phase 'worker1', which is not open")."""
    for _ in range(5):
        proc, data = _through_a_pipe(THREADS_FIRST)
        assert proc.returncode == 0, proc.stderr
        begun = sorted(ln.split()[1] for ln in _lines(data) if ln.startswith("begin "))
        assert begun == [f"w{k}" for k in range(8)], _lines(data)


def test_a_forked_child_leaving_its_parents_phase_and_iteration_sends_no_end() -> None:
    """``sys.exit()`` in a forked child unwinds the ``with`` blocks it inherited: its ``end
    serve`` had closed the parent's 300 ms phase at 54 ms (a user's)."""
    code = """
import edgeprof, os, sys, time
with edgeprof.phase("serve"):
    with edgeprof.iteration():
        pid = os.fork()
        if pid == 0:
            sys.exit(0)
        os.waitpid(pid, 0)
"""
    proc, data = _through_a_pipe(code)
    assert proc.returncode == 0, proc.stderr
    assert _kinds(data) == ["begin", "iter", "end"]
