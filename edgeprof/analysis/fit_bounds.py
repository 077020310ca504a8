"""The bracket of ``edgeprof fit``'s search: the floor and the peak of the unlimited runs,
and the room a limit must leave above the floor (:func:`allowance`).

Split from :mod:`edgeprof.analysis.need` (the search and its verdicts), which reads these."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import RunResult
from .headroom import charging_slack, stat_lag

PAGE = 4096
MIB = 1 << 20
MIN_LIMIT = 6 * MIB
"""The smallest memory limit edgeprof sets (Docker's floor)."""
DEFAULT_RESOLUTION_FRACTION = 0.02
"""Default resolution: 2 % of the unlimited peak, at least 1 MiB (7 probes for a script
whose floor is a quarter of its peak)."""


@dataclass(frozen=True)
class Bounds:
    floor: int
    peak: int
    ceiling: int | None
    """The most the device has (``--memory`` or the device's), ``None``: no ceiling."""
    resolution: int
    allowance: int = 0
    """Room a limit must leave above the floor (:func:`allowance`): a limit closer to what
    no limit can reclaim is met by the run's own memory, and the next run, holding a little
    more, is OOM-killed there."""

    @property
    def low(self) -> int:
        """The first limit worth asking for: the floor and the allowance above it."""
        return self.floor + self.allowance

    @property
    def top(self) -> int:
        """The highest limit worth asking for: the peak (or the floor and its allowance,
        where that is more), or a ceiling below it."""
        top = max(self.peak, self.low)
        return top if self.ceiling is None else min(top, self.ceiling // PAGE * PAGE)

    @property
    def top_passes(self) -> bool:
        """Whether a limit at the top passes without a run: the unlimited peak, with at least
        the allowance above the floor, so what a limit there takes back is page cache.  A
        peak that is the run's own memory (a floor within the allowance of it) is no such
        limit: ``model.py`` (anon 179.3 of a 180.5 MiB peak) was OOM-killed at 180.3 MiB in
        two runs of two."""
        return self.top == self.peak and self.peak >= self.low


def bounds(
    reference: Sequence[RunResult],
    ceiling: int | None,
    resolution: int | None,
    warmups: Sequence[RunResult] = (),
) -> Bounds:
    """The search's bracket from the unlimited runs (``warmups``: their discarded warm-ups,
    whose memory counts towards the :func:`allowance`)."""
    peaks = [r.memory.peak_bytes for r in reference if r.memory.peak_bytes is not None]
    peak = max(peaks) if peaks else 0
    floors = [r.memory.floor_bytes for r in reference if r.memory.floor_bytes is not None]
    if floors:
        floor = max(floors)
    else:  # no composition (the Docker stats API): the working set is the nearest thing
        ws = [
            r.memory.peak_working_set_bytes
            for r in reference
            if r.memory.peak_working_set_bytes is not None
        ]
        floor = max(ws) if ws else 0
    floor = max(MIN_LIMIT, min(page_up(floor), page_up(peak)))
    peak = max(floor, page_up(peak))
    if resolution is None:
        resolution = max(MIB, page_up(int(peak * DEFAULT_RESOLUTION_FRACTION)))
    # Whole pages: the midpoints are pages, and a step of a page and a half would cost the
    # bound one probe.
    return Bounds(floor, peak, ceiling, max(PAGE, page_up(resolution)),
                  allowance(reference, floor, warmups))


def allowance(
    reference: Sequence[RunResult], floor: int, warmups: Sequence[RunResult] = ()
) -> int:
    """The room a limit must leave above the floor to be an answer: the kernel's charging
    slack (:func:`slack`), what one unlimited run may hold more than the floor
    (:func:`held_over_floor`), and what one reading of the floor may lag the kernel's
    count (:func:`~edgeprof.analysis.headroom.stat_lag`), so that a run within that spread,
    read a little late or early, still leaves each run the slack
    :func:`~edgeprof.analysis.need.at_the_edge` asks of it.

    Measured: ``read_and_hold.py model.bin 48`` (floor 55.7 MiB, three unlimited floors
    within 16 KiB of each other) was OOM-killed in 5 of 9 runs at its floor, the answer one
    passing probe there had given.  With the larger of the two instead of their sum, a probe
    at the floor and its room whose own floor came 8 KiB higher left 1016 KiB, less than the
    slack, and failed for it.  With their sum and no lag, the same happened on floors 16 KiB
    apart (8 KiB over their spread): that first probe failed in one ``fit`` of two, and the
    search went on above it, answering 132.5 MiB where the other answered 55.1 (a tester's
    two runs), and 4 MiB (a step) above it in one of three fits of the kernel tier's script
    on this 2-CPU host."""
    cpus = max((r.host.cpus for r in [*warmups, *reference]), default=1)
    held = held_over_floor(reference, floor, warmups)
    return page_up(slack(floor) + held + stat_lag(cpus))


def held_over_floor(
    reference: Sequence[RunResult], floor: int, warmups: Sequence[RunResult] = ()
) -> int:
    """What one unlimited run may hold more than ``floor``: the spread of the runs' floors
    (max − min, the ``warmups``' among them), but no more than the kernel's highest peak of
    the measured runs lies above ``floor``.

    A floor is read at the samples, so its spread is one run's own memory over another's
    *and* how far sampling missed each run's highest: it says nothing of the memory the
    kernel did not count.  No run held more than its kernel peak (``memory.peak``, or v1's
    ``max_usage_in_bytes``: every page, counted as charged), so where every run has one,
    a room reaching past the highest of them is sampling's miss.  A tester's eager torch
    script (floors 311.5 / 353.6 / 369.3 MiB at 0.1 s, kernel peaks 373.4 / 369.4 / 369.5
    MiB) had been given 62.5 MiB of room, an answer of 431.7 MiB and "does not fit in
    512.0MiB: 5.3MiB short", where ``run --memory 380m`` completed 3 runs of 3; an ONNX
    model (floors 145.0 / 152.7 / 186.7, peaks 200.6–200.8 MiB) 231.2 MiB, where ``run
    --memory 206m`` completed 3 of 3.  Now 5.0 and 16.9 MiB (on the tester's 2 CPUs): the
    searches start at the measured runs' highest peak and the slack and lag over it, 374.2
    and 203.6 MiB.

    Not the peaks' spread: a run's peak also counts the page cache it charged, which one run
    may charge and the next find cached (a first run's model file: 111.7 MiB of a tester's
    sweep), while its floor is the same; and not where any run's peak is not the kernel's
    (sampled, it can miss as the floor does).  Nor a warm-up's peak: it is the run that read
    the workload's files cold, and its peak counts them (a verifier's eager fit: the warm-up's
    floor 351.0 MiB made an 18.3 MiB spread, and its peak of 454.7 MiB, 85 MiB over the
    measured runs' 370.6, let it all through as 23.0 MiB of room); its floor still counts
    in the spread, as one more run of the same command."""
    everyone = [*warmups, *reference]
    floors = [r.memory.floor_bytes for r in everyone if r.memory.floor_bytes is not None]
    if not floors:
        return 0
    spread = max(floors) - min(floors)
    measured = [r for r in reference if r.memory.floor_bytes is not None]
    peaks = [r.memory.peak_bytes for r in measured if r.memory.peak_source == "kernel"]
    known = [p for p in peaks if p is not None]
    if len(known) < len(measured):
        return spread
    return min(spread, max(0, max(known) - floor))


def slack(floor: int) -> int:
    """The kernel's charging slack at ``floor``
    (:func:`~edgeprof.analysis.headroom.charging_slack`, 1 % and at least 1 MiB, the rule
    ``run``'s verdict takes too): a run whose peak comes that close to its limit has met it.
    Each run must leave this much under its limit over its own anon + shmem + kernel
    (:func:`~edgeprof.analysis.need.at_the_edge`)."""
    return charging_slack(floor)


def page_up(n: int) -> int:
    """Rounded up to a whole page: the kernel keeps limits in pages."""
    return -(-n // PAGE) * PAGE
