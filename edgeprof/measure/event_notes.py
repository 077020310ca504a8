"""The warnings a run's events come with (:class:`~edgeprof.measure.event_store.EventStore`
builds them after the run): the workload's writes held up on the events pipe
(:func:`waited_warning`), the malformed lines by kind of mistake (:class:`MalformedKinds`),
the phases the run's end cut short (:func:`cut_short_warning`), the occurrences aggregated
past the store (:func:`aggregated_warning`) and why phases' peaks are sampled
(:func:`sampled_peaks_warnings`), and the stalls and host speed the CPU quota gave the
iterations' latency (:func:`throttling_warnings`).  Pure functions of the figures, so tests
give them numbers.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from ..backends.helpers import sampled_phase_peaks
from ..model import LatencyStats, PhaseStats
from ..names import shown_name
from ..units import counted
from .phase_tail import PhaseTail
from .phases import Occurrence, first_few, missed_windows_warning, window_missed
from .throttling import host_speed_warning, stall_warning

WAITED_WARN_S = 0.01
WAITED_WARN_SHARE = 0.01
WAITED_WARN_WRITES = 3
"""The workload's writes held up (``waited`` lines) are warned about from this much, this
share of the run and this many writes: a write the scheduler preempted (a few ms on a loaded
host) is not a full pipe; a tester's 100 000 steps of three events each waited 43 s of 47.7
s, while one write held up 0.01 s of a 0.98 s run held off 75 % by other tasks had been
warned about as events sent too fast."""

READER_BOUND_SHARE = 0.5
"""The pipe's waits are put down to edgeprof's reading where the workload, while it was not
waiting, sent its lines at more than this share of the rate edgeprof's reader reads them on
its CPU (said "faster than edgeprof reads them" from the reader's rate up, "at over half
the rate" below it: a tester's ``loop.py`` at 204 283 lines/s against 351 388/s had been
called faster).  ph.py's 15 000 phases sent ~200 000 lines/s to a reader of ~64 000/s; a tester's
~140 lines a second (read at ~140 000/s) had been said to out-send the reader when the
host's other tasks had held the run off 75 %."""

_MALFORMED_VALUES = re.compile(r"^[a-z]+: |'[^']*'|\([^()]*\)|\d+(?:\.\d+)?")
"""What a malformed line's reason quotes of the line (its event, a word, a time, a count):
left out, the rest is the kind of mistake (:meth:`MalformedKinds.warning`), so that
wall-clock stamps on ``begin``, ``end`` and ``iter`` lines are one kind."""
_MALFORMED_KINDS = 16
"""Kinds of mistake told apart; more are counted as ``other``."""


class MalformedKinds:
    """The malformed lines by kind of mistake, each with its first line (bounded:
    :data:`_MALFORMED_KINDS` kinds)."""

    def __init__(self) -> None:
        self._kinds: dict[str, tuple[int, str]] = {}  # reason's kind: (count, first)

    def add(self, raw: bytes, why: str) -> None:
        kind = _MALFORMED_VALUES.sub("…", why)
        if kind not in self._kinds and len(self._kinds) >= _MALFORMED_KINDS:
            kind = "other"
        n, first = self._kinds.get(kind, (0, ""))
        if not n:
            first = f"{raw[:60].decode('utf-8', 'replace')!r}: {why}"
        self._kinds[kind] = (n + 1, first)

    def warning(self, malformed: int) -> str:
        """The ``malformed`` lines by kind of mistake, most first, each with its first line: a
        tester's 200 001 of three kinds (wall-clock stamps, free text, one 10 000-byte line)
        were said as the first kind's alone."""
        kinds = sorted(self._kinds.values(), key=lambda kind: -kind[0])  # stable: first seen
        each = "; ".join(f"{n} like {first}" for n, first in kinds)
        return f"{malformed} malformed event line(s) ignored: {each}"


def waited_warning(
    waited: float, waits: int, run_end: float, lines: int, reading_s: float
) -> str | None:
    """The workload's writes held up on the events pipe (``waited`` seconds over ``waits``
    writes of a ``run_end`` s run), with the cause the figures support: its sending rate
    while not waiting against edgeprof's reading rate (``lines`` over ``reading_s`` of the
    reader's CPU, :data:`READER_BOUND_SHARE`); ``None`` under the floors
    (:data:`WAITED_WARN_WRITES`)."""
    if waits < WAITED_WARN_WRITES or waited < max(WAITED_WARN_S, WAITED_WARN_SHARE * run_end):
        return None
    sent = lines / max(run_end - waited, 1e-6)
    read = lines / max(reading_s, 1e-6)
    rates = f"{sent:,.0f} lines/s while not waiting; edgeprof reads {read:,.0f}/s of its CPU"
    if sent >= read:
        cause = f"it sent events faster than edgeprof reads them ({rates})"
    elif sent >= READER_BOUND_SHARE * read:
        # Not "faster": a tester's 204,283 lines/s against 351,388/s had been said to be.
        cause = (
            f"it sent events at over half the rate edgeprof reads them ({rates}), so the pipe "
            "filled whenever the reader fell behind (off its CPU, or in a burst)"
        )
    else:
        cause = (
            f"edgeprof's reading kept pace ({rates}), so the pipe filled while the reader was "
            "off its CPU (other tasks on this host) or in a burst of events"
        )
    return (
        f"the workload waited {waited:.2f}s of its {run_end:.2f}s on edgeprof's events pipe "
        f"({waits} write(s) held up over 0.1 ms, timed by the workload): {cause} "
        "(docs/phases.md, \"What it costs\"), so its phases' wall times and IT/S include that "
        "wait"
    )


def cut_short_warning(
    phases: Sequence[PhaseStats], termination: str | None, run_end: float
) -> str | None:
    """The phases still open at the run's end (``termination``: what ended it), each named
    by :func:`_cut_short`; ``None`` where every phase ended."""
    unfinished = [_cut_short(p) for p in phases if not p.complete]
    if not unfinished:
        return None
    why = {
        "oom": "cut short by the OOM kill",
        "timeout": "cut short by the timeout",
        "interrupted": "cut short by the interrupt",
        "signaled": "cut short by a signal",
    }.get(termination or "", "still open when the workload exited")
    # The run's end, not the moment of that ending: a child process that died inside its
    # phase (an OOM kill of it alone, its exit) had read "cut short by the OOM kill at
    # 2.016s", the run's end, 1.5 s after the kill (a user's).  The protocol's lines carry no
    # process, so edgeprof cannot tell when such a phase's holder went.
    return (
        f"phase(s) {', '.join(unfinished)} {why}: counted to the run's end ({run_end:.3f}s; "
        "a phase a child process held when it died is counted so too: edgeprof cannot tell "
        "when it went)"
    )


def _cut_short(p: PhaseStats) -> str:
    """A phase the run's end cut short, as its warning names it: with the iterations it
    completed, where it had any (``infer (125 iterations completed)``): how far a leak got
    before its OOM kill had been said by the Latency table's ITER column alone."""
    if p.latency is None:
        return shown_name(p.name)
    return f"{shown_name(p.name)} ({counted(p.latency.count, 'iteration')} completed)"


def aggregated_warning(past: Mapping[str, PhaseTail], max_occurrences: int) -> str | None:
    """The occurrences past the first ``max_occurrences`` (``past``: by name), aggregated and
    what that did to their figures; ``None`` where there were none."""
    if not past:
        return None
    over = sum(rest.count for rest in past.values())
    most = sorted(past, key=lambda n: -past[n].count)
    return (
        f"{over} phase occurrence(s) past the first {max_occurrences} were "
        f"aggregated ({first_few(most)}): "
        "their count and wall time are exact, their CPU time and memory shared out "
        "of the readings by 10 ms slices, their peak sampled (no kernel window)"
    )


def sampled_peaks_warnings(
    phases: Sequence[PhaseStats],
    occurrences: Sequence[Occurrence],
    past: Collection[str],
    mechanism: str | None,
    resets: bool,
) -> list[str]:
    """Why phases' peaks are sampled: a window that opened after its phase ended
    (:func:`~edgeprof.measure.phases.window_missed`), or the backend's reason (its
    ``mechanism``; ``resets``: whether it resets the peak per phase)."""
    # Past the store (``past``: the names) a phase's peak is sampled by design (said in its
    # own warning).
    sampled = [p.name for p in phases if p.peak_source == "sampled" and p.name not in past]
    missed = Counter(o.name for o in occurrences if window_missed(o))
    stored = Counter(o.name for o in occurrences)
    late = [n for n in sampled if n in missed]
    counts = {n: (missed[n], stored[n]) for n in late}
    out = [missed_windows_warning(late, counts)] if late else []
    if len(late) < len(sampled):
        out.append(sampled_phase_peaks(mechanism, resets))
    return out


def throttling_warnings(
    phases: Sequence[PhaseStats], latency: LatencyStats | None, period_s: float | None = None
) -> list[str]:
    """The stall and host-speed warnings of the phases' latency and the run's (``latency``),
    each said where it was measured; ``period_s``: the quota's period."""
    warnings = []
    # The run's own only where no phase holds all its iterations (as the latency table's
    # "(all)" row): the same warning had been printed twice, for the run and its phase.
    counts = {p.latency.count for p in phases if p.latency is not None}
    measured = [(f"phase {shown_name(p.name)!r}: ", p.latency, p.cpu_s) for p in phases]
    if latency is not None and latency.count not in counts:
        measured.insert(0, ("", latency, None))  # the run's CPU holds its start-up too
    # The run's host-speed verdict is its phases' (as_its_phases), each said on its own.
    judged = any(p.latency is not None and p.latency.throttling for p in phases)
    for where, lat, cpu_s in measured:
        t = None if lat is None else lat.throttling
        if lat is not None and t is not None and t.distorted:
            warnings.append(stall_warning(lat, where))
        if lat is not None and t is not None and t.at_host_speed and (where or not judged):
            warnings.append(host_speed_warning(lat, where, period_s, cpu_s))
    return warnings


TICK_S = 0.01
"""A process's CPU time in ``/proc/PID/stat``: clock ticks of ``USER_HZ`` 100."""


def tick_cpu_warning(phases: Sequence[PhaseStats], mechanism: str | None) -> str | None:
    """The process backend's phase CPU times are differences of readings in 10 ms ticks: a
    phase of a few ticks reads 0 or a tick (a user's six 13 ms busy phases read 0.0 ms, or
    10.0 ms at 62 %, with no word; the cgroup backend's counter is in ns).  Said where a
    phase is shorter than ten ticks; ``None`` otherwise."""
    if mechanism != "process":
        return None
    short = [p for p in phases if p.cpu_s is not None and p.wall_s < 10 * TICK_S]
    if not short:
        return None
    names = first_few([p.name for p in short])
    return (
        f"phase CPU times are read in clock ticks of {TICK_S * 1000:g}ms on the process "
        f"backend: those of phases shorter than {10 * TICK_S * 1000:g}ms ({names}) are "
        f"within a tick or two of the truth at best (a cgroup backend counts in ns)"
    )
