"""The phases protocol's lines as the runner reads them: the parser, its bounds, and the caps
on what the runner keeps (the workload side is :mod:`edgeprof.workload.instrument`, whose
docstring is the protocol's reference; the attribution arithmetic is
:mod:`edgeprof.measure.phases`)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import NamedTuple

from ..model import EventCounts
from ..workload.instrument import MAX_ITEMS, MAX_NAME
from .sketch import SKETCH_ALPHA

MAX_LINE = 4096
"""Longer lines (in bytes) are malformed (a single ``write()`` of up to 4 KiB is atomic on a
pipe)."""

MAX_TIME = 1e10
"""Larger times are malformed: 317 years of ``CLOCK_MONOTONIC`` (seconds since boot), past
any uptime, and small enough that sums of durations stay finite (two durations of 1e308
overflow ``math.fsum``, which would fail the run's result)."""

CLOCK_SLACK_S = 1.0
"""How far an event's time may lie after the moment its line was read, or before the run
began, and still be the run's ``CLOCK_MONOTONIC``: neither can happen on that clock (a line
is written after its stamp, by a process the run started), so this only absorbs the
stamp's printed rounding and the spawn's own time; a wall-clock stamp (``time.time()``) is
~1.7e9 s ahead of it, and a made-up one (``iter 1 2``) hours behind."""


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""Control characters (C0, DEL, C1) have no place in a name the report prints to a terminal
(an escape sequence would be the terminal's to act on)."""

KINDS = ("begin", "end", "mark", "iter", "raised", "nested", "waited", "probe", "cost")
ALL_ROW = "(all)"
"""The Latency table's row of every iteration of a run, beside its phases' rows: a name a
phase may have too, which the run's warning then says."""
HELD = "held"
"""The word that ends a boundary's line whose writer waits for the runner's reading."""

# -- what the runner keeps of it ---------------------------------------------------------------

MAX_PHASES = 256
"""Distinct phase names kept (the first ones to begin).  A phase is a stage a person reads in
a table (the bench names 3); a per-layer profile has its own command (``edgeprof layers``).
Past it a name costs nothing: no counter read, no peak window, no record."""
MAX_OCCURRENCES = 10_000
"""Phase occurrences (begin … end) stored with a record, readings at their lines and a
kernel peak window each; later ones are aggregated per name
(:class:`~edgeprof.measure.phase_tail.PhaseTail`).  A stored occurrence costs ~740 bytes by
the end (7.4 MB for the store)."""
MAX_MARKS = 1024
"""Marks kept (the first ones), each a record in ``result.json``; a mark per step is what
``iteration`` is for."""
MAX_ITERATIONS = 100_000
"""Iterations whose start, end, items and stall are stored (32 bytes each: 3.2 MB); past it
every iteration is still in the counts, sums, extremes and rates exactly, and in the
percentiles within :data:`~edgeprof.measure.sketch.SKETCH_ALPHA` (the sketch's bound, which
does not depend on the count); the throttling check covers the stored ones."""


class FrequentNames:
    """The names past the cap begun most often, in bounded memory: the space-saving
    algorithm's :data:`SLOTS` counters (a name begun more than 1/SLOTS of the times is
    among them; one that took a counter over from another is said with the count it surely
    had, at least).  The cap's warning had not named what
    it dropped: after 3 000 layer phases, the 50 000-occurrence ``step`` was gone."""

    SLOTS = 32

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}  # name: (count, of it inherited)

    def add(self, name: str) -> None:
        counts = self._counts
        if name in counts:
            n, err = counts[name]
            counts[name] = (n + 1, err)
        elif len(counts) < self.SLOTS:
            counts[name] = (1, 0)
        else:  # O(SLOTS), only for a name not among them
            low = min(counts, key=lambda k: counts[k][0])
            n, _ = counts.pop(low)
            counts[name] = (n + 1, n)

    def most(self, few: int = 5) -> list[str]:
        """The ``few`` begun most, twice or more for sure, as ``'step' (50000)`` (the count
        exact) or ``'x' (at least 49990)``; none where each was begun about once."""
        ranked = sorted(self._counts.items(), key=lambda kv: -(kv[1][0] - kv[1][1]))[:few]
        return [
            f"{name!r} ({n})" if err == 0 else f"{name!r} (at least {n - err})"
            for name, (n, err) in ranked
            if n - err >= 2
        ]


def cap_warnings(c: EventCounts, dropped: Sequence[str] = ()) -> list[str]:
    """One warning per kind that went past its cap: the cap and the exact count past it;
    ``dropped``: the phase names past the cap begun most often
    (:meth:`FrequentNames.most`)."""
    out = []
    if c.phases.over:
        most = f", most often {', '.join(dropped)}" if dropped else ""
        out.append(
            f"the workload named more than {c.phases.cap} distinct phases: the first "
            f"{c.phases.cap} are kept, {c.phases.over} occurrence(s) of later names were "
            f"counted, not recorded{most} (events.phases in result.json)"
        )
    if c.marks.over:
        out.append(
            f"the workload sent more than {c.marks.cap} marks: the first {c.marks.cap} "
            f"are kept, {c.marks.over} later one(s) were counted, not recorded "
            "(events.marks in result.json)"
        )
    if c.iterations.over:
        out.append(
            f"the workload reported more than {c.iterations.cap} iterations: "
            f"{c.iterations.over} past the first {c.iterations.cap} are in the counts, means, "
            f"extremes and rates exactly, in the percentiles within ±{SKETCH_ALPHA:.0%} "
            "(a sketch), and not in the throttling check (events.iterations in result.json)"
        )
    return out


def nested_warning(nested: int) -> str:
    """The run's one warning for its ``nested`` lines: they are in no figure, and a sub-step
    has its own way to be timed."""
    return (
        f"{nested} iteration(s) ran inside another iteration of the same thread and are not "
        "counted: only the outermost is an iteration of the run (its latency holds theirs); "
        "time a sub-step with edgeprof.phase(NAME)"
    )


class ProtocolError(ValueError):
    """A malformed line; the runner ignores it and counts it in a warning."""


class Event(NamedTuple):
    """One parsed line.  A tuple, not a frozen dataclass: the reader makes one per line, and
    a frozen dataclass's ``__init__`` (``object.__setattr__`` per field) was 3.4 of the
    5.5 µs ``parse_line`` took per ``iter`` line (on a loaded 2-core host)."""

    kind: str
    """``begin``, ``end``, ``mark``, ``iter``, ``raised`` (an iteration that raised),
    ``nested`` (an iteration inside another of its thread), ``waited`` (the workload's
    write to the pipe was held up from T0 to T1), ``probe`` (an empty iteration the client
    timed: in no figure) or ``cost`` (the client's own time per iteration, in ``t0``)."""
    name: str = ""
    t: float = 0.0
    """Absolute ``CLOCK_MONOTONIC`` seconds (the iteration's end for ``iter``, ``raised`` and
    ``nested``)."""
    t0: float = 0.0
    """``iter``, ``raised``, ``nested``, ``waited`` and ``probe``: the span's start; ``cost``:
    the seconds of its S."""
    items: int = 1
    items_given: bool = False
    """``iter`` only: the line had an ITEMS field."""
    held: bool = False
    """``begin``, ``end`` and ``mark`` only: the writer waits until the runner has read the
    counters (its line ends with ``held``), so that reading is as at T."""


def _time(word: str) -> float:
    try:
        v = float(word)
    except ValueError:
        raise ProtocolError(f"not a time: {word[:40]!r}") from None
    if not math.isfinite(v) or v < 0 or v > MAX_TIME:
        raise ProtocolError(f"not a time: {word[:40]!r}")
    return v


def _name(word: str) -> str:
    if len(word) > MAX_NAME:
        raise ProtocolError(f"name longer than {MAX_NAME} characters")
    if _CONTROL.search(word):
        raise ProtocolError("name with a control character")
    return word


def parse_line(line: str, now: float) -> Event:
    """One line of the protocol (without its newline) → an :class:`Event`.

    ``now``: the monotonic time at which the runner read it, for lines without a time.
    Raises :class:`ProtocolError` for anything else.
    """
    if len(line) > MAX_LINE:
        raise ProtocolError(f"line longer than {MAX_LINE} characters")
    words = line.split()
    if not words:
        raise ProtocolError("empty line")
    kind, args = words[0], words[1:]
    if kind in ("begin", "end", "mark"):
        if not 1 <= len(args) <= 3:
            raise ProtocolError(f"{kind}: expected NAME [T [held]], got {len(args)} words")
        if len(args) == 3 and args[2] != HELD:
            raise ProtocolError(f"{kind}: expected {HELD!r} after T, got {args[2][:40]!r}")
        t = _time(args[1]) if len(args) >= 2 else now
        return Event(kind, name=_name(args[0]), t=t, held=len(args) == 3)
    if kind in ("raised", "nested", "waited"):
        if len(args) != 2:
            raise ProtocolError(f"{kind}: expected T0 T1, got {len(args)} words")
        t0, t1 = _time(args[0]), _time(args[1])
        if t1 < t0:
            raise ProtocolError(f"{kind}: ends before it starts")
        return Event(kind, t=t1, t0=t0)
    if kind == "cost":
        if len(args) != 2:
            raise ProtocolError(f"cost: expected S N, got {len(args)} words")
        return Event("cost", t=now, t0=_time(args[0]))
    if kind in ("iter", "probe"):
        if not 2 <= len(args) <= 3:
            raise ProtocolError(f"{kind}: expected T0 T1 [ITEMS], got {len(args)} words")
        t0, t1 = _time(args[0]), _time(args[1])
        if t1 < t0:
            raise ProtocolError(f"{kind}: ends before it starts")
        items = 1
        given = len(args) == 3
        if given:
            try:
                items = int(args[2])
            except ValueError:
                raise ProtocolError(f"{kind}: ITEMS {args[2][:40]!r} is not an integer") from None
            if items < 0:
                raise ProtocolError(f"{kind}: ITEMS is negative")
            if items > MAX_ITEMS:
                raise ProtocolError(f"{kind}: ITEMS over 2**63 - 1")
        return Event(kind, t=t1, t0=t0, items=items, items_given=given)
    raise ProtocolError(f"unknown event {kind[:40]!r} (expected one of {', '.join(KINDS)})")


def off_clock(ev: Event, now: float, start: float) -> str | None:
    """Why ``ev`` (a line read at monotonic ``now``, in a run spawned at ``start``) cannot be
    stamped with the run's ``CLOCK_MONOTONIC``, or ``None``.  Taken as they were, such
    stamps put a phase at the run's end with 0 ms of wall time and a latency of 1 000 ms
    with no word (a tester's ``time.time()`` and ``iter 1 2 3``)."""
    hint = "the protocol's times are CLOCK_MONOTONIC (time.monotonic()), the run's clock"
    if ev.t > now + CLOCK_SLACK_S:
        return f"{ev.kind}: time {ev.t:.3f} is after the line was read ({now:.3f}): {hint}"
    first = ev.t0 if ev.kind in ("iter", "raised", "nested", "waited", "probe") else ev.t
    if first < start - CLOCK_SLACK_S:
        return f"{ev.kind}: time {first:.3f} is before the run began ({start:.3f}): {hint}"
    return None


# -- statistics ---------------------------------------------------------------------------
