"""The workload's client (``edgeprof.phase``, ``edgeprof.iteration``, ``edgeprof.mark``): the
lines it sends are ones the runner takes, whatever the script passes it."""

from __future__ import annotations

import itertools
import time

import pytest

from edgeprof.measure.phases import parse_line
from edgeprof.workload import instrument


class Lines:
    """A channel that keeps what is sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def ready(self) -> bool:
        return True

    def send(self, line: str) -> None:
        self.sent.append(line)


@pytest.fixture
def lines(monkeypatch: pytest.MonkeyPatch) -> Lines:
    channel = Lines()
    monkeypatch.setattr(instrument, "_channel", channel)
    return channel


def test_a_decorated_iteration_times_each_call_even_when_calls_overlap(lines: Lines) -> None:
    """One instance for every call (contextlib's) let an inner call overwrite the outer's
    start: a 0.3 s call overlapped by another 0.1 s in was recorded as 0.2 s."""

    @instrument.iteration(items=2)
    def descend(depth: int) -> int:
        time.sleep(0.001)  # the calls' starts a clock tick apart at least
        return depth if depth == 0 else descend(depth - 1)

    assert descend(3) == 0
    spans = [parse_line(line.rstrip("\n"), now=0.0) for line in lines.sent]
    assert [e.kind for e in spans] == ["iter"] * 4
    # Sent innermost first; each call's span holds the next one's.
    for inner, outer in itertools.pairwise(spans):
        assert outer.t0 < inner.t0 and inner.t < outer.t, (inner, outer)
    assert all(e.items == 2 for e in spans)
    assert descend.__name__ == "descend"


@pytest.mark.parametrize("items", [-3, 2**63])
def test_an_item_count_the_runner_cannot_take_is_refused_at_once(items: int) -> None:
    with pytest.raises(ValueError, match=f"items {items} is not a count"):
        instrument.iteration(items=items)


@pytest.mark.parametrize("name", ["bell\x07", "esc\x1b[31m", "c1\x85x", "tab\tand space", ""])
def test_any_name_becomes_one_the_runner_takes(lines: Lines, name: str) -> None:
    """A control character in a name had the runner drop the phase as malformed."""
    with instrument.phase(name):
        instrument.mark(name)
    events = [parse_line(line.rstrip("\n"), now=0.0) for line in lines.sent]  # no ProtocolError
    assert [e.kind for e in events] == ["begin", "mark", "end"]
    assert events[0].name == events[2].name and events[0].name.isprintable()
