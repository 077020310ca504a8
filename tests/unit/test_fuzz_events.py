"""Property tests of the events reader over hostile input: random bytes, over-long lines, lines
cut anywhere, protocol-looking lines with hostile names and numbers.  The reader never raises,
every line is counted (once, however the pipe cut it), the malformed ones among them, what it
keeps stays within its caps, and the figures it builds are finite JSON.

Deterministic (``derandomize``): the same inputs on every run."""

from __future__ import annotations

import dataclasses
import itertools
import json

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from edgeprof.measure.event_lines import KINDS, MAX_LINE, ProtocolError, parse_line
from edgeprof.measure.events import EventChannel
from edgeprof.model import EventCounts
from edgeprof.workload.instrument import MAX_NAME

CAPS = (2, 2, 4)
"""Small caps (phases, marks, iterations), so that a few dozen lines cross them."""

SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large]

NAMES = st.one_of(
    st.sampled_from(["a", "b", "c", "d", "e"]),  # repeats: begins and ends that match
    st.text(max_size=12),  # any character: controls, spaces, escapes, …
    st.text(alphabet="é☃x\x1b", min_size=MAX_NAME - 5, max_size=MAX_NAME + 5),
)
NUMBERS = st.one_of(
    st.floats(min_value=0, max_value=1e4).map(lambda v: f"{v:.9f}"),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["1e10", "1e11", "1e308", "1e10000", "-0", "0x10", "1_0", "٣", "9" * 4000]),
)
EVENT = st.builds(
    lambda kind, name, t: " ".join([kind, name, *t]),
    st.sampled_from([*KINDS[:3], "BEGIN", ""]),
    NAMES,
    st.lists(NUMBERS, max_size=2),
)
ITER = st.builds(lambda nums: " ".join(["iter", *nums]), st.lists(NUMBERS, max_size=4))
TIME = st.floats(min_value=0, max_value=1e4)
VALID = st.one_of(
    st.builds(
        lambda kind, name, t: f"{kind} {name}{t}",
        st.sampled_from(KINDS[:3]),
        st.sampled_from("abcdefgh"),  # more names than the cap
        st.one_of(st.just(""), TIME.map(lambda t: f" {t:.9f}")),
    ),
    st.builds(
        lambda a, b, items: f"iter {min(a, b):.9f} {max(a, b):.9f}{items}",
        TIME,
        TIME,
        st.one_of(st.just(""), st.integers(0, 64).map(lambda n: f" {n}")),
    ),
)
LINE = st.one_of(
    VALID.map(lambda s: s.encode()),
    EVENT.map(lambda s: s.encode()),
    ITER.map(lambda s: s.encode()),
    st.binary(max_size=64),  # anything, newlines included
    st.integers(MAX_LINE - 2, 3 * MAX_LINE).map(lambda n: b"y" * n),  # around the limit
)


def _expected_lines(payload: bytes) -> int:
    """Every newline ends a line; a last one without it is read at EOF."""
    *complete, last = payload.split(b"\n")
    return len(complete) + (1 if last else 0)


def _run(payload: bytes, cuts: list[int]) -> EventChannel:
    # A clock past TIME's range: the VALID lines are valid on a host up for any time (a real
    # clock refuses a stamp after "now", so which of them were malformed hung on uptime).
    ch = EventChannel(
        max_phases=CAPS[0], max_marks=CAPS[1], max_iterations=CAPS[2], clock=lambda: 2e4
    )
    edges = [0, *sorted(c % (len(payload) + 1) for c in cuts), len(payload)]
    for a, b in itertools.pairwise(edges):
        ch.feed(payload[a:b])
        assert len(ch._buf) <= MAX_LINE  # a line is held only up to the limit
    if ch._buf:
        ch.feed(b"\n")  # EOF, as the reading thread does
    ch.close()
    return ch


def _summary(ch: EventChannel) -> tuple[EventCounts, list[str], list[str], int]:
    phases, latency, marks, _ = ch.results(run_end=1.0)
    return (
        ch.counts(),
        [p.name for p in phases],
        [m.name for m in marks],
        0 if latency is None else latency.count,
    )


# deadline=None: a deadline is a timing, and would flake on a loaded machine.
@settings(derandomize=True, max_examples=1000, deadline=None, suppress_health_check=SLOW_IS_FINE)
@given(
    lines=st.lists(LINE, max_size=40),
    flood=st.lists(VALID.map(lambda s: s.encode()), min_size=5, max_size=60),
    trailing_newline=st.booleans(),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
)
def test_the_reader_never_raises_and_counts_every_line(
    lines: list[bytes], flood: list[bytes], trailing_newline: bool, cuts: list[int]
) -> None:
    mixed = [x for pair in itertools.zip_longest(lines, flood) for x in pair if x is not None]
    payload = b"\n".join(mixed) + (b"\n" if trailing_newline else b"")
    ch = _run(payload, cuts)
    phases, latency, marks, warnings = ch.results(run_end=1.0, termination="exited")
    c = ch.counts()
    for what, n in [
        ("phases", c.phases.over),
        ("marks", c.marks.over),
        ("iterations", c.iterations.over),
        ("malformed", c.malformed),
        ("kept phases", c.phases.kept),
        ("kept iterations", c.iterations.kept),
    ]:
        event(f"{what} > 0: {n > 0}")  # what the inputs reached (--hypothesis-show-statistics)
    assert c.lines == _expected_lines(payload)
    assert 0 <= c.malformed <= c.lines
    if c.malformed:
        assert any("malformed" in w for w in warnings)
    for kind in (c.phases, c.marks, c.iterations):
        assert 0 <= kind.kept <= kind.cap
    assert len(phases) == c.phases.kept and len(marks) == c.marks.kept
    assert (latency.count if latency else 0) == c.iterations.kept + c.iterations.over
    # The figures are JSON without NaN or infinities, whatever numbers came in.
    json.dumps([dataclasses.asdict(p) for p in phases], allow_nan=False)
    json.dumps([dataclasses.asdict(m) for m in marks], allow_nan=False)
    json.dumps(None if latency is None else dataclasses.asdict(latency), allow_nan=False)
    # How the pipe cut the bytes changes nothing that is counted or kept.
    assert _summary(_run(payload, [])) == _summary(ch)


@settings(derandomize=True, max_examples=1500, deadline=None, suppress_health_check=SLOW_IS_FINE)
@given(st.one_of(EVENT, ITER, st.text(max_size=200)))
def test_the_parser_raises_only_protocol_errors(line: str) -> None:
    try:
        ev = parse_line(line, 5.0)
    except ProtocolError:
        return
    assert ev.kind in KINDS and 0 <= ev.t <= 1e10
    if ev.kind == "iter":
        assert 0 <= ev.t0 <= ev.t and 0 <= ev.items < 2**63
    else:
        assert 0 < len(ev.name) <= MAX_NAME
        assert not any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in ev.name)
