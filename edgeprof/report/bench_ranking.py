"""The ranking of a bench's batch sizes: by the ``infer`` phase, the one a bench measures.

A bench's run is its ``load``, ``warmup`` and ``infer`` phases; its wall and CPU time are
those of the whole run, load included, and a batch size of 8 does eight times the work of
one.  ``report`` of a bench's directory had ranked its batch sizes by those (``infer bs=1
took 2.06× less wall time than infer bs=8``), which says nothing of which batch size serves
best.  A bench's runs are ranked here by the throughput of their timed calls (items/s,
largest first, the bench table's ITEMS/S), with their p50 and p95 beside it; the whole-run
time rankings are left out, the memory rankings stay (the model stays loaded while it
infers).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

from ..analysis.cells import cells_by_setting, measured, stopped_words
from ..analysis.difference import difference
from ..analysis.overhead import overhead_marked
from ..model import LatencyStats, RunResult
from ..units import format_factor, format_seconds
from .comparison import STOPPED_RANKED, under
from .latency_cells import HELD, HOST_SPEED, STALLED, held, latency_notes, rate_cell
from .overhead_notes import OVERHEAD
from .table import TextTable

PHASE = "infer"
"""The phase a bench times (:mod:`edgeprof.workload.bench`)."""

TIME_RANKINGS = ("wall_s", "cpu_s")
"""The whole-run rankings a bench's report leaves out: they count the load."""

_LABEL = re.compile(r"[A-Za-z_]\w* bs=\d+")


def is_bench(r: RunResult) -> bool:
    """A bench's run: its target recorded, or (a file from before targets) a ``FUNC bs=N``
    label with an ``infer`` phase."""
    if r.target is not None:
        return True
    return _LABEL.fullmatch(r.label) is not None and any(p.name == PHASE for p in r.phases)


def infer_latency(r: RunResult) -> LatencyStats | None:
    """The ``infer`` phase's iterations (the run's own where the phase has none)."""
    for p in r.phases:
        if p.name == PHASE and p.latency is not None:
            return p.latency
    return r.latency


def _ms(values: Sequence[float]) -> str:
    """The median, as the latency table shows a latency (µs under a millisecond)."""
    return format_seconds(statistics.median(values), digits=2) if values else "n/a"


OVERHEAD_RANKING_NOTE = (
    f"{OVERHEAD} counts edgeprof.iteration()'s own cost, a noticeable share of each call here "
    "(the latency table's note gives it): × FIRST is then not the workload's ratio; compare "
    "the P50s"
)
"""A fixed cost per call narrows the gap between batch sizes' ITEMS/S: a tester's bs=8
against bs=64 matmul read 4.5× apart, 2.7× in a plain loop, 2.5× by their P50s."""


HOST_SPEED_RANKED = (
    f"a batch size whose figures are marked {HOST_SPEED} ran at this host's core's speed, the "
    "others under the quota's stalls: its rank may not hold on the device"
)
"""A tester's bs=1 (49 µs P50 at this host's speed) ranked first by 17.6k items/s over
bs=4 (12.6k, stalled): at half this core's speed it would give about 8.8k, below bs=4; the
ranking had shown neither mark of the bench's own table."""


def _marks(lat: Sequence[LatencyStats], name: str, off: bool) -> str:
    """The bench table's ``*``, ``!`` and ``#`` of a percentile, where any run's has it (as
    a cell's latency table marks its medians); ``off``: other tasks held a run off its
    CPUs (:func:`~.latency_cells.held`)."""
    ts = [s.throttling for s in lat if s.throttling is not None]
    return (
        (STALLED if any(name in t.distorted for t in ts) else "")
        + (HOST_SPEED if any(t.at_host_speed for t in ts) else "")
        + (HELD if off else "")
    )


def bench_rankings(results: Sequence[RunResult]) -> list[TextTable]:
    """Per limit setting with two batch sizes or more: the ranking by the ``infer`` phase's
    items/s (median over each batch size's successful runs and those ``--timeout`` stopped,
    said in a note: :func:`~edgeprof.analysis.cells.measured`), ≈ where a step is within noise
    (Welch's t on the logarithms at 95 %, :mod:`edgeprof.analysis.difference`)."""
    out = []
    for setting, by_label in cells_by_setting(results).items():
        rows = []
        said = []  # the batch sizes ranked with runs --timeout stopped
        for label, runs in by_label.items():
            # Items/s and percentiles of the timed calls: per-iteration figures, which a run
            # --timeout stopped counts in (cells.measured), as compare and report's do.
            ran = measured(runs, per_iteration=True)
            lat = [s for r in ran if (s := infer_latency(r)) is not None]
            if lat and (cut := stopped_words(runs)):
                said.append(f"{label} ({cut})")
            rate = [s.items_per_s for s in lat if s.items_per_s is not None]
            if rate:
                marked = any(overhead_marked(s) for s in lat)
                rows.append(
                    (label, rate, [s.p50_s for s in lat], [s.p95_s for s in lat], marked, lat,
                     held(ran))
                )  # fmt: skip
        if len(rows) < 2:
            continue
        rows.sort(key=lambda row: -statistics.median(row[1]))
        best = statistics.median(rows[0][1])
        table = [["#", "NAME", "ITEMS/S", "× FIRST", "P50", "P95", "NOTE"]]
        shown: list[str] = []
        for i, (label, rate, p50, p95, marked, lat, off) in enumerate(rows):
            note = ""
            if i:
                d = difference(rows[i - 1][1], rate)
                if d.tested and not d.separated:
                    note = f"≈ {rows[i - 1][0]}: within noise"
            mid = statistics.median(rate)
            table.append(
                [
                    str(i + 1),
                    label,
                    rate_cell(mid, marked),
                    "1" if i == 0 else format_factor(mid / best),
                    _ms(p50) + _marks(lat, "p50", off),
                    _ms(p95) + _marks(lat, "p95", off),
                    note,
                ]
            )
            shown += table[-1][4:6]
        notes = [
            f"ranked by the {PHASE} phase (the timed calls; load and warm-up left out): "
            "ITEMS/S, P50, P95 are the medians over each batch size's runs; the wall- and "
            "CPU-time rankings of whole runs, load included, are not shown for a bench"
        ]
        if any(row[4] for row in rows):
            notes.append(OVERHEAD_RANKING_NOTE)
        notes += [n for n in latency_notes(shown, []) if n[0] in (STALLED, HOST_SPEED, HELD)]
        if any(HOST_SPEED in c for c in shown):
            notes.append(HOST_SPEED_RANKED)
        if said:
            notes.append(STOPPED_RANKED.format("; ".join(said)))
        title = f"Ranking by {PHASE} throughput {under(setting)} (largest first)"
        out.append(TextTable(title, table, notes))
    return out
