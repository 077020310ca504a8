"""The workload's client (``edgeprof.phase``, ``edgeprof.iteration``, ``edgeprof.mark``): the
lines it sends are ones the runner takes, whatever the script passes it."""

from __future__ import annotations

import hashlib
import itertools
import threading
import time

import pytest

from edgeprof.measure.event_lines import parse_line
from edgeprof.measure.event_store import EventStore
from edgeprof.workload import instrument
from edgeprof.workload.instrument import MAX_NAME


class Lines:
    """A channel that keeps what is sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.held_kinds: list[str] = []  # the lines whose writer waited for the runner

    def ready(self) -> bool:
        return True

    def send(self, line: str, t: float) -> None:
        self.sent.append(line)

    def boundary(self, line: str, t: float) -> None:
        self.send(line + "\n", t)
        self.held_kinds.append(line.split()[0])


@pytest.fixture
def lines(monkeypatch: pytest.MonkeyPatch) -> Lines:
    channel = Lines()
    monkeypatch.setattr(instrument, "_channel", channel)
    monkeypatch.setattr(instrument._cost, "pending", False)  # its probes: test_phase_client's
    return channel


def test_a_decorated_iteration_times_each_call_even_when_calls_overlap(lines: Lines) -> None:
    """One instance for every call (contextlib's) let an inner call overwrite the outer's
    start: a 0.3 s call overlapped by another 0.1 s in was recorded as 0.2 s.  The inner
    calls of a recursion are nested in the outermost (sent as ``nested``, no iteration of
    the run), each with its own span."""

    @instrument.iteration(items=2)
    def descend(depth: int) -> int:
        time.sleep(0.001)  # the calls' starts a clock tick apart at least
        return depth if depth == 0 else descend(depth - 1)

    assert descend(3) == 0
    spans = [parse_line(line.rstrip("\n"), now=0.0) for line in lines.sent]
    assert [e.kind for e in spans] == ["nested"] * 3 + ["iter"]
    # Sent innermost first; each call's span holds the next one's.
    for inner, outer in itertools.pairwise(spans):
        assert outer.t0 < inner.t0 and inner.t < outer.t, (inner, outer)
    assert spans[-1].items == 2
    assert descend.__name__ == "descend"


@pytest.mark.parametrize("items", [-3, 2**63])
def test_an_item_count_the_runner_cannot_take_is_refused_at_once(items: int) -> None:
    with pytest.raises(ValueError, match=f"items {items} is not a count"):
        instrument.iteration(items=items)


@pytest.mark.parametrize("name", ["bell\x07", "esc\x1b[31m", "c1\x85x", "tab\tand space", "\x07"])
def test_any_name_becomes_one_the_runner_takes(lines: Lines, name: str) -> None:
    """A control character in a name had the runner drop the phase as malformed."""
    with instrument.phase(name):
        instrument.mark(name)
    events = [parse_line(line.rstrip("\n"), now=0.0) for line in lines.sent]  # no ProtocolError
    assert [e.kind for e in events] == ["begin", "mark", "end"]
    assert events[0].name == events[2].name and events[0].name.isprintable()


@pytest.mark.parametrize(
    ("items", "error", "words"),
    [
        ("x", TypeError, "items must be an int, got 'x' (str)"),
        ("3", TypeError, "items must be an int, got '3' (str)"),
        (2.7, TypeError, "items must be an int, got 2.7 (float)"),
        (True, TypeError, "items must be an int, got True (bool)"),
        (-1, ValueError, "items -1 is not a count from 0"),
    ],
)
def test_items_that_are_no_count_are_refused_in_edgeprofs_words(
    items: object, error: type[Exception], words: str
) -> None:
    """``items="x"`` raised int()'s bare ValueError; 2.7 counted 2, True 1 and "3" 3."""
    with pytest.raises(error) as raised:
        instrument.iteration(items=items)  # type: ignore[arg-type]
    assert str(raised.value) == f"edgeprof.iteration: {words}"


def test_a_bare_decorator_is_refused_saying_how_to_write_it() -> None:
    """``@edgeprof.iteration`` and ``@edgeprof.phase`` without their call had said "items
    must be an int, got <function f at 0x…>" and "name must be a str, got <function …>"."""

    def infer() -> None:
        pass

    with pytest.raises(TypeError) as raised:
        instrument.iteration(infer)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "edgeprof.iteration is called to decorate: @edgeprof.iteration() (or items=N), got "
        "the function 'test_a_bare_decorator_is_refused_saying_how_to_write_it.<locals>.infer' "
        "as items"
    )
    with pytest.raises(TypeError) as raised:
        instrument.phase(infer)  # type: ignore[arg-type]
    assert str(raised.value).startswith(
        'edgeprof.phase decorates with its name: @edgeprof.phase("NAME"), got the function '
        "'test_a_bare_decorator"
    )
    with pytest.raises(TypeError, match=r"^edgeprof.mark: name must be a str, got <function"):
        instrument.mark(infer)  # type: ignore[arg-type]


def test_one_iteration_shared_by_threads_times_each_threads_own_entry(lines: Lines) -> None:
    """One object entered by two threads at once had one stack: the first thread's exit took
    the second's start, and a 50 ms and a 150 ms iteration overlapping were sent as 100 ms
    each.  Each exit ends its own thread's entry."""
    shared = instrument.iteration(items=1)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    spans: dict[str, tuple[float, float]] = {}

    def first() -> None:
        with shared:
            t0 = time.monotonic()
            a_in.set()
            b_in.wait()
        spans["first"] = (t0, time.monotonic())
        a_out.set()

    def second() -> None:
        a_in.wait()
        with shared:
            t0 = time.monotonic()
            b_in.set()
            a_out.wait()
        spans["second"] = (t0, time.monotonic())

    threads = [threading.Thread(target=f) for f in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first_sent, second_sent = (parse_line(x.rstrip("\n"), now=0.0) for x in lines.sent)
    assert [first_sent.kind, second_sent.kind] == ["iter", "iter"]
    # Each span sent holds the one its thread measured inside it, and starts before it.
    for sent, name in ((first_sent, "first"), (second_sent, "second")):
        t0, t1 = spans[name]
        assert sent.t0 <= t0 and t1 >= sent.t, (name, sent, spans)
    assert first_sent.t0 < spans["second"][0]  # the first's start, not the second's
    assert shared._open == []


def test_an_integer_of_another_type_counts_as_itself(lines: Lines) -> None:
    class Count:  # what numpy's integers are to operator.index
        def __index__(self) -> int:
            return 7

    with instrument.iteration(items=Count()):  # type: ignore[arg-type]
        pass
    (line,) = lines.sent
    assert parse_line(line.rstrip("\n"), now=0.0).items == 7


@pytest.mark.parametrize(
    ("call", "name", "words"),
    [
        (instrument.mark, None, "edgeprof.mark: name must be a str, got None (NoneType)"),
        (instrument.phase, 3, "edgeprof.phase: name must be a str, got 3 (int)"),
        (instrument.phase, b"load", "edgeprof.phase: name must be a str, got b'load' (bytes)"),
    ],
)
def test_a_name_that_is_no_str_is_refused_in_or_out_of_edgeprof(
    lines: Lines, monkeypatch: pytest.MonkeyPatch, call: object, name: object, words: str
) -> None:
    """``mark(None)`` and ``phase(3)`` had been recorded as the names "None" and "3"."""
    for ready in (True, False):
        monkeypatch.setattr(lines, "ready", lambda ready=ready: ready)
        with pytest.raises(TypeError) as raised:
            call(name)  # type: ignore[operator]
        assert str(raised.value) == words
    assert lines.sent == []


@pytest.mark.parametrize("name", ["", " ", "\t\n", "\u00a0\u2003"])
def test_an_empty_or_blank_name_is_refused_in_or_out_of_edgeprof(
    lines: Lines, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """``phase("")`` had become the phase ``_``, merged with a real ``phase("_")``."""
    for ready in (True, False):
        monkeypatch.setattr(lines, "ready", lambda ready=ready: ready)
        for call, caller in ((instrument.phase, "phase"), (instrument.mark, "mark")):
            with pytest.raises(ValueError) as raised:
                call(name)
            assert str(raised.value) == (
                f"edgeprof.{caller}: name must have a character other than whitespace, "
                f"got {name!r}"
            )
    assert lines.sent == []


def test_names_the_protocol_cannot_carry_as_written_stay_apart(lines: Lines) -> None:
    """``phase("a b")`` and ``phase("a_b")`` had been sent as one phase ``a_b``."""
    names = ["a b", "a_b", "a\tb", "a\u00a0b", "a\x7fb", "naïve"]
    for name in names:
        with instrument.phase(name):
            pass
    events = [parse_line(line.rstrip("\n"), now=0.0) for line in lines.sent]
    begun = [e.name for e in events if e.kind == "begin"]
    assert begun == ["a\u2423b", "a_b", "a\u2409b", "a<U+00A0>b", "a\u2421b", "naïve"]


def test_two_long_names_that_differ_past_the_limit_stay_two_phases(lines: Lines) -> None:
    """Cut at 200 characters, ``…attention`` and ``…mlp`` (255 each) were one phase, N 2."""
    base = "encoder.layers." + "block." * 40
    for name in (base + "attention", base + "mlp", base + "attention", "short"):
        with instrument.phase(name):
            pass
    begins = [line.split()[1] for line in lines.sent if line.startswith("begin")]
    assert len(set(begins)) == 3 and begins[0] == begins[2]  # the same name, the same cut
    assert [len(n) for n in begins] == [MAX_NAME, MAX_NAME, MAX_NAME, 5]
    digest = hashlib.blake2s((base + "mlp").encode(), digest_size=4).hexdigest()
    assert begins[1] == (base + "mlp")[: MAX_NAME - 9] + "~" + digest
    assert begins[3] == "short"
    store = EventStore(clock=lambda: 1e9)
    store.feed("".join(lines.sent).encode())
    phases, _, _, _ = store.results(run_end=1e9)
    assert [p.count for p in phases] == [2, 1, 1]


def test_boundaries_wait_for_the_runner_and_iterations_do_not(lines: Lines) -> None:
    """A phase's begin and end and a mark are held until the runner read the counters there;
    an iteration's line is only written (its cost is per step)."""
    with instrument.phase("p"), instrument.iteration():
        pass
    instrument.mark("m")
    assert [ln.split()[0] for ln in lines.sent] == ["begin", "iter", "end", "mark"]
    assert lines.held_kinds == ["begin", "end", "mark"]
