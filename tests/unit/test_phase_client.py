"""Phases, iterations and marks from the workload's side: the client (``edgeprof.phase``,
``iteration``, ``mark``) over the inherited pipe, a FIFO or nothing, and the line protocol it
speaks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprof.measure.event_lines import ProtocolError, off_clock, parse_line
from edgeprof.measure.events import EventChannel
from edgeprof.model import Counters
from tests.conftest import HANG_S

REPO = Path(__file__).resolve().parents[2]


def _python(code: str, env: dict[str, str], **kw: object) -> subprocess.CompletedProcess[str]:
    proc: subprocess.CompletedProcess[str] = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=HANG_S,  # a backstop: start-up on a loaded machine is slow
        **kw,  # type: ignore[call-overload]
    )
    return proc


# -- the client ------------------------------------------------------------------------------

USE_API = """
    import sys, edgeprof
    with edgeprof.phase("load"):
        x = 1
    @edgeprof.phase("decorated")
    def f():
        return 2
    for _ in range(3):
        with edgeprof.iteration(items=8):
            f()
    edgeprof.mark("done")
    print("active", edgeprof.active())
    heavy = [m for m in ("typer", "rich", "psutil", "edgeprof.measure.runner", "edgeprof.model")
             if m in sys.modules]
    print("heavy", heavy)
"""


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("EDGEPROF_EVENTS")}


def test_the_api_is_a_silent_no_op_outside_edgeprof() -> None:
    proc = _python(USE_API, _clean_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "active False\nheavy []\n"
    assert proc.stderr == ""


def test_the_api_ignores_a_descriptor_that_is_not_its_pipe(tmp_path: Path) -> None:
    """A grandchild inherits the variable but not the pipe: fd 3 is then some other file,
    which must stay untouched."""
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    with open(victim, "a") as f:
        env = {**_clean_env(), "EDGEPROF_EVENTS_FD": str(f.fileno())}
        proc = _python(USE_API, env, pass_fds=(f.fileno(),))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("active False")
    assert victim.read_text() == "keep\n"
    # A pipe, but not the one named by the inode: ignored as well.
    r, w = os.pipe()
    try:
        env = {**_clean_env(), "EDGEPROF_EVENTS_FD": str(w), "EDGEPROF_EVENTS_INODE": "1"}
        proc = _python(USE_API, env, pass_fds=(w,))
        os.set_blocking(r, False)
        with pytest.raises(BlockingIOError):
            os.read(r, 100)
    finally:
        os.close(r)
        os.close(w)
    assert proc.stdout.startswith("active False")


def _through_a_pipe(
    code: str, probes: bool = False
) -> tuple[subprocess.CompletedProcess[str], bytes]:
    """Run ``code`` with an events pipe as the runner passes it (the write end inherited,
    named with its inode); returns the process and all it wrote to the pipe but its
    ``waited`` notes: a write the scheduler held up over 0.1 ms on a loaded host sends one
    (``instrument.HELD_UP_S``), which these tests of the events' lines must not count; nor,
    unless ``probes``, the client's timing of its own cost (``probe`` and ``cost`` lines)."""
    r, w = os.pipe()
    try:
        env = {
            **_clean_env(),
            "EDGEPROF_EVENTS_FD": str(w),
            "EDGEPROF_EVENTS_INODE": str(os.fstat(w).st_ino),
        }
        proc = _python(code, env, pass_fds=(w,))
        os.close(w)
        w = -1
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    own = (b"waited ",) if probes else (b"waited ", b"probe ", b"cost ")
    kept = [ln for ln in data.splitlines(keepends=True) if not ln.startswith(own)]
    return proc, b"".join(kept)


def test_the_api_writes_protocol_lines_to_its_pipe() -> None:
    before = time.monotonic()
    proc, data = _through_a_pipe(USE_API, probes=True)
    after = time.monotonic()
    assert proc.stdout.startswith("active True"), proc.stderr
    lines = data.decode().splitlines()
    # Before its first iteration the client times 32 empty ones and sends their cost, once.
    assert [ln.split()[0] for ln in lines[2:35]] == ["probe"] * 32 + ["cost"]
    assert lines[34].split()[2] == "32" and 0 < float(lines[34].split()[1]) < 0.01
    lines = lines[:2] + lines[35:]
    kinds = [
        ln.split()[0] + (" " + ln.split()[1] if ln.split()[0] != "iter" else "") for ln in lines
    ]
    assert kinds == [
        "begin load",
        "end load",
        "begin decorated",
        "end decorated",
        "iter",
        "begin decorated",
        "end decorated",
        "iter",
        "begin decorated",
        "end decorated",
        "iter",
        "mark done",
    ]
    events = [parse_line(ln, 0.0) for ln in lines]
    # The sampler's clock: CLOCK_MONOTONIC, comparable across processes.
    assert all(before <= e.t <= after for e in events)
    iters = [e for e in events if e.kind == "iter"]
    assert all(e.items == 8 and e.items_given and e.t0 <= e.t for e in iters)


def test_the_docker_case_warns_once_and_runs_on() -> None:
    env = {**_clean_env(), "EDGEPROF_EVENTS_UNAVAILABLE": "docker backend: no pipe"}
    proc = _python(USE_API, env)
    assert proc.returncode == 0
    assert proc.stderr == (
        "edgeprof: phases, iterations and marks are not recorded: docker backend: no pipe\n"
    )


# -- the line protocol ------------------------------------------------------------------------


def test_protocol_lines() -> None:
    assert parse_line("begin load 12.5", 0) == parse_line("begin  load\t12.5", 0)
    e = parse_line("begin load 12.5", 99.0)
    assert (e.kind, e.name, e.t) == ("begin", "load", 12.5)
    assert parse_line("end load", 99.0).t == 99.0  # no time: when the runner read it
    assert parse_line("mark x 1", 0).kind == "mark"
    it = parse_line("iter 1.0 1.25 32", 0)
    assert (it.t0, it.t, it.items, it.items_given) == (1.0, 1.25, 32, True)
    assert parse_line("iter 1 2", 0).items_given is False


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "begin",
        "begin a b c",
        "begin load soon",
        "begin load nan",
        "begin load -1",
        "begin load inf",
        "iter 1",
        "iter 2 1",
        "iter 1 2 many",
        "iter 1 2 -3",
        "iter 1 2 3 4",
        "start load 1",
        "x" * 5000,
    ],
)
def test_malformed_lines_raise_protocol_errors(line: str) -> None:
    with pytest.raises(ProtocolError):
        parse_line(line, 0.0)


def _channel_run(payload: bytes, t0: float, read: object = None) -> EventChannel:
    """``payload`` through a channel whose run began at ``t0``: the test's own clock reading,
    taken before it stamped the payload, so that no stamp is before the run however long a
    loaded host took between the two."""
    ch = EventChannel()
    w = os.dup(ch.pass_fds[0])
    ch.start(t0, read or (lambda: Counters(cpu_usage_us=0, memory_current=0)))  # type: ignore[arg-type]
    try:
        os.write(w, payload)
    finally:
        os.close(w)
    assert ch._thread is not None
    ch._thread.join(HANG_S)  # it ends at EOF: every line read
    ch.stop()
    ch.close()
    return ch


def test_the_runner_ignores_malformed_lines_with_one_warning_and_keeps_the_rest() -> None:
    """Flaky before under load (1 loaded run in 1): its last phase began unstamped, so at the
    moment the runner read it, and held its iteration (ended at the stamp + 10 ms) only where
    that read came within 10 ms; now stamped, and the run begins at the test's clock."""
    now = time.monotonic()
    good = f"begin load {now}\nend load {now + 0.5}\n".encode()
    junk = (
        b"garbage\n"
        b"\xff\xfe not utf-8\n"
        b"end never-begun\n"
        b"iter 3 1\n"
        + b"y" * 10_000
        + b"\n"  # over-long, then a good line after it
        + f"iter {now} {now + 0.01} 4\n".encode()
        + f"mark m {now}\n".encode()
        + f"begin unterminated {now}".encode()  # no newline before EOF: still read
    )
    ch = _channel_run(good + junk, now)
    phases, latency, marks, warnings = ch.results(run_end=5.0)
    assert ch.malformed == 5
    y = "y" * 60
    assert [w for w in warnings if "malformed" in w] == [
        "5 malformed event line(s) ignored: "
        "1 like 'garbage': unknown event 'garbage' "
        "(expected one of begin, end, mark, iter, raised, nested, waited, probe, cost); "
        "1 like '\ufffd\ufffd not utf-8': not UTF-8; "
        "1 like 'end never-begun': end of phase 'never-begun', which is not open; "
        "1 like 'iter 3 1': iter: ends before it starts; "
        f"1 like '{y}': line longer than 4096 bytes"
    ]
    assert [p.name for p in phases] == ["load", "unterminated"]
    assert phases[0].complete and not phases[1].complete
    assert any("unterminated (1 iteration completed) still open" in w for w in warnings)
    assert latency is not None and latency.count == 1 and latency.items == 4
    assert [m.name for m in marks] == ["m"]


def test_stamps_off_the_runs_clock_are_malformed_and_say_which_clock() -> None:
    """A wall-clock stamp (time.time(), ~1.7e9 s ahead of CLOCK_MONOTONIC) had put a phase
    at the run's end with 0 ms of wall time, and ``iter 1 2 3`` (hours before the run) a
    latency of 1 000 ms, with no word (a tester's)."""
    now = time.monotonic()
    wall = time.time()
    payload = (
        f"begin a {wall:.6f}\n"
        f"iter {wall:.6f} {wall + 0.01:.6f} 1\n"
        f"end a {wall + 0.02:.6f}\n"
        "iter 1 2 3\n"
        # Half the clock's reading: before the run, and still a time (positive) on a host
        # booted minutes ago (``now - 3600`` read "not a time" under an hour of uptime).
        f"mark early {now / 2:.6f}\n"
        f"iter {now:.6f} {now + 0.01:.6f}\n"  # on the clock: kept
    ).encode()
    ch = _channel_run(payload, now)
    phases, latency, marks, warnings = ch.results(run_end=5.0)
    assert ch.malformed == 5 and phases == () and marks == ()
    assert latency is not None and latency.count == 1
    [w] = [w for w in warnings if "malformed" in w]
    # by kind, most first: 3 after the line was read (begin, iter, end), 2 before the run
    assert w.startswith(f"5 malformed event line(s) ignored: 3 like 'begin a {wall:.6f}': begin: ")
    assert "is after the line was read" in w
    assert "; 2 like 'iter 1 2 3': iter: time 1.000 is before the run began" in w
    assert w.endswith("times are CLOCK_MONOTONIC (time.monotonic()), the run's clock")
    assert off_clock(parse_line("iter 1 2 3", now), now, now - 0.5) == (
        f"iter: time 1.000 is before the run began ({now - 0.5:.3f}): the protocol's times are "
        "CLOCK_MONOTONIC (time.monotonic()), the run's clock"
    )


def test_a_forked_child_reports_through_the_inherited_pipe() -> None:
    code = """
        import os, edgeprof
        edgeprof.mark("parent")
        pid = os.fork()
        if pid == 0:
            edgeprof.mark("child")
            os._exit(0)
        os.waitpid(pid, 0)
    """
    proc, data = _through_a_pipe(code)
    assert proc.returncode == 0, proc.stderr
    assert [ln.split()[1] for ln in data.decode().splitlines()] == ["parent", "child"]


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_spawned_child_reports_through_its_parents_pipe(tmp_path: Path, method: str) -> None:
    """A multiprocessing child started by spawn or forkserver (Python 3.14's default) has
    the variables but not the descriptor: its events had been dropped in silence."""
    script = tmp_path / "spawner.py"
    script.write_text(
        textwrap.dedent(f"""
        import multiprocessing as mp, edgeprof
        def child():
            edgeprof.mark("child")
        if __name__ == "__main__":
            mp.set_start_method({method!r})
            edgeprof.mark("parent")
            p = mp.Process(target=child)
            p.start()
            p.join()
        """)
    )
    run = f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')"
    proc, data = _through_a_pipe(run)
    assert proc.returncode == 0, proc.stderr
    assert [ln.split()[1] for ln in data.decode().splitlines()] == ["parent", "child"]


def test_the_fifo_channel_for_containers(tmp_path: Path) -> None:
    """What a container gets: a FIFO named in EDGEPROF_EVENTS (here written from this host)."""
    ch = EventChannel(fifo=True)
    assert ch.fifo is not None and ch.pass_fds == ()
    assert ch.env == {"EDGEPROF_EVENTS": "/run/edgeprof/events"}
    ch.start(time.monotonic(), lambda: Counters(cpu_usage_us=0, memory_current=0))
    try:
        proc = _python(USE_API, {**_clean_env(), "EDGEPROF_EVENTS": ch.fifo})
        assert proc.stdout.startswith("active True"), proc.stderr
        deadline = time.monotonic() + 5
        while not ch._marks and time.monotonic() < deadline:
            time.sleep(0.01)  # the reader never sees EOF on a FIFO it holds open itself
    finally:
        ch.stop()
        directory = os.path.dirname(ch.fifo)
        ch.close()
    phases, latency, marks, _ = ch.results(run_end=10.0)
    assert [p.name for p in phases] == ["load", "decorated"]
    assert latency is not None and latency.count == 3 and [m.name for m in marks] == ["done"]
    assert not os.path.exists(directory)  # the FIFO and its directory are removed
    # Not under edgeprof: a FIFO without a reader, or a regular file, is left alone.
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_text("keep\n")
    for name in ("fifo", "file"):
        proc = _python(USE_API, {**_clean_env(), "EDGEPROF_EVENTS": str(tmp_path / name)})
        assert proc.stdout.startswith("active False"), proc.stderr
    assert (tmp_path / "file").read_text() == "keep\n"


# -- boundaries held until the runner read them ----------------------------------------------

HELD = """
    import time, edgeprof
    # Every boundary held, whatever the runner's answers took: the 20 ms credit of holds is
    # the client's policy (tested on a hand-moved clock below), and one slow answer on a
    # loaded host spent it, the later boundaries read unheld (with no credit: a CPU time of
    # 0.3 ms from 1 reading for the 1 ms from 2 held).
    import edgeprof.workload.instrument as instrument
    instrument.HOLD_CREDIT_S = float("inf")
    with edgeprof.phase("p"):
        print("entered", repr(time.monotonic()))
    edgeprof.mark("m")
"""


def test_a_boundary_waits_until_the_runner_read_the_counters_at_its_stamp() -> None:
    """The workload is held at each boundary until the runner has read the counters, so the
    reading is of the boundary itself and is stamped with the line's time.  Read when the
    poll came to the line (up to 10 ms late), a tester's sleeping phase got the next
    phase's 150 MiB allocation in its kernel peak, and a busy phase's CPU time leaked into
    the next (7.9 ms for a 0.1 ms sleep)."""
    reads: list[float] = []

    def read() -> Counters:  # each reading 1 ms of CPU and 1 MiB more than the one before
        reads.append(time.monotonic())
        return Counters(cpu_usage_us=1000 * len(reads), memory_current=len(reads) << 20)

    ch = EventChannel()
    assert set(ch.env) == {"EDGEPROF_EVENTS_FD", "EDGEPROF_EVENTS_INODE", "EDGEPROF_EVENTS_SYNC"}
    assert len(ch.pass_fds) == 2
    t0 = time.monotonic()
    proc = subprocess.Popen(  # spawned first, as the runner does: start() closes its ends
        [sys.executable, "-c", textwrap.dedent(HELD)],
        env={**_clean_env(), **ch.env, "PYTHONPATH": str(REPO)},
        pass_fds=ch.pass_fds,
        stdout=subprocess.PIPE,
        text=True,
    )
    ch.start(t0, read)
    try:
        out, _ = proc.communicate(timeout=HANG_S)
    finally:
        ch.stop()
        ch.close()
    assert proc.returncode == 0
    entered = float(out.split()[1])
    assert len(reads) == 3 and reads[0] < entered  # read before the phase's body ran
    (p,), _, (m,), _ = ch.results(run_end=10.0)
    # Readings stamped at the begin and end lines: the phase's CPU is their difference,
    # exactly (stamped when read, the end's would have been interpolated below 1 ms).
    assert (p.cpu_s, p.cpu_readings) == (0.001, 2)
    assert (m.cpu_s, m.memory_bytes) == (0.003, 3 << 20)


def test_a_boundary_stops_waiting_for_a_runner_that_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A runner held off its CPU past ``SYNC_TIMEOUT_S`` (or gone) must not hold every later
    boundary: the process stops waiting and its lines still go out."""
    from edgeprof.workload import instrument

    monkeypatch.setattr(instrument, "SYNC_TIMEOUT_S", 0.05)
    r, w = os.pipe()
    ours, theirs = socket.socketpair()
    try:
        c = instrument._Channel()
        c.fd, c.sync, c.since = w, theirs.fileno(), time.monotonic()
        start = time.monotonic()
        c.boundary("mark a", time.monotonic())  # nobody answers: waits the timeout once
        waited = time.monotonic() - start
        assert c.sync is None and waited >= 0.05
        c.boundary("mark b", time.monotonic())  # no longer waits, nor says it does
        sent = [ln for ln in os.read(r, 1000).splitlines() if not ln.startswith(b"waited")]
        assert sent == [b"mark a held", b"mark b"]
        assert ours.recv(10) == b"s"  # one byte asked, once
        # A runner gone: the socket's EOF ends the waiting at once.
        c.sync, c.held_s = theirs.fileno(), 0.0
        ours.close()
        c.boundary("mark c", time.monotonic())
        assert c.sync is None
    finally:
        os.close(r)
        os.close(w)
        theirs.close()


class _Clock:
    """``instrument``'s monotonic clock, moved by hand and by each wait for the runner."""

    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def held_channel(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[_Clock, socket.socket, int]]:
    """A channel whose runner answers every boundary at once and whose each wait lasts 4 ms
    of a hand-moved clock (from 100 s, the process's first event): (the clock, the runner's
    end of the socket, the pipe's read end)."""
    from edgeprof.workload import instrument

    clock = _Clock(100.0)

    def select(r: list[int], w: list[int], x: list[int], timeout: float) -> tuple[list[int], ...]:
        clock.now += 0.004
        return r, w, x

    monkeypatch.setattr(instrument, "time", clock)
    monkeypatch.setattr(instrument, "select", types.SimpleNamespace(select=select))
    monkeypatch.setattr(instrument, "_thread_held", {})
    r, w = os.pipe()
    ours, theirs = socket.socketpair()
    ours.sendall(b"a" * 100)  # the answers, ahead
    c = instrument._Channel()
    c.fd, c.sync, c.since, c._looked = w, theirs.fileno(), 100.0, True
    monkeypatch.setattr(instrument, "_channel", c)
    try:
        yield clock, ours, r
    finally:
        os.close(r)
        os.close(w)
        ours.close()
        theirs.close()


def test_boundaries_are_held_within_a_share_of_the_time_since_the_first_event(
    held_channel: tuple[_Clock, socket.socket, int],
) -> None:
    """Held at each boundary, a phase per step had cost 757-1 275 µs a step (10-45 µs not
    held): the client holds one only while its waits stay within 1 % of its time since its
    first event plus 20 ms, so a run's first boundaries (its stages) are held and a phase
    per step is held rarely."""
    from edgeprof.workload import instrument

    clock, ours, r = held_channel
    for i in range(7):
        instrument.mark(f"m{i}")
    # Waits of 4 ms from 100 s: 0, 4, …, 20 ms waited are within 20 ms + 1 % of the 0-20 ms
    # gone (the sixth: 20 <= 20.2), the seventh's 24 is past 20.24.
    assert instrument._channel.held_s == pytest.approx(0.024)
    clock.now = 101.024  # a second on: 20 + 10.24 ms allowed, 24 waited
    instrument.mark("late")
    sent = os.read(r, 4096).decode().splitlines()
    assert [ln.split()[-1] == "held" for ln in sent] == [True] * 6 + [False, True]
    assert ours.recv(100) == b"s" * 7  # one byte asked per held boundary
    assert instrument._channel.held_s == pytest.approx(0.028)


def test_an_iterations_latency_leaves_out_its_threads_holds(
    held_channel: tuple[_Clock, socket.socket, int],
) -> None:
    """Two held boundaries inside an iteration waited 8 ms for edgeprof: its line starts
    8 ms later, so its latency is the workload's 10 ms, not 18 (the wall time keeps them)."""
    from edgeprof.workload import instrument

    clock, _, r = held_channel
    with instrument.iteration(), instrument.phase("infer"):
        clock.now += 0.010  # the work
    with instrument.iteration():  # no hold inside: as timed
        clock.now += 0.002
    raw = os.read(r, 4096).decode().splitlines()
    # The first iteration's process times its own cost first (probe and cost lines).
    lines = [parse_line(ln, 0.0) for ln in raw if ln.split()[0] not in ("probe", "cost")]
    assert [(ev.kind, ev.held) for ev in lines[:2]] == [("begin", True), ("end", True)]
    it, plain = lines[2:]
    assert [it.t0, it.t] == pytest.approx([100.008, 100.018])
    assert it.t - it.t0 == pytest.approx(0.010)
    assert plain.t - plain.t0 == pytest.approx(0.002)


def test_a_boundary_line_may_end_with_held() -> None:
    """``held`` after T: the writer waits for the runner's reading; any other third word,
    or ``held`` without T, is malformed."""
    assert parse_line("begin a 1.5 held", 0.0) == parse_line("begin a 1.5", 0.0)._replace(
        held=True
    )
    assert (parse_line("mark m 2 held", 0.0).held, parse_line("end a 2", 0.0).held) == (True, False)
    for bad in ("mark m 2 late", "begin a held", "end a 1 held x"):
        with pytest.raises(ProtocolError):
            parse_line(bad, 0.0)
