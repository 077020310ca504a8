"""What a model list's rankings say under them where the first run was charged with the page
cache the later ones found cached (:mod:`edgeprof.analysis.first_reads` detects it)."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.cells import successful
from ..analysis.compare import ModelSummary, Rank
from ..analysis.first_reads import FirstReads
from ..analysis.metrics import STAT_METRICS
from ..units import format_binary

FIRST_READ_TIMES = ("wall_s", "cpu_s")
FIRST_READ_MEMORY = ("peak_bytes", "avg_bytes")
WARMUP_FIX = "--warmup 1 reads them before the measured runs"


def first_read_note(first_read: FirstReads | None, setting: str, key: str) -> str | None:
    """The line under a ranking of ``key`` that the first run's page cache inflates:
    its memory with the order no page cache is in, its times with only the fix (no figure
    of a run's times leaves the reads out)."""
    if first_read is None or setting != first_read.setting:
        return None
    fr = first_read
    rest = f"the later runs, which found them cached, held at most {format_binary(fr.rest_bytes)}"
    read = format_binary(fr.file_bytes)
    if key in FIRST_READ_TIMES:
        return (
            f"{fr.label} ran first: its times count reading {read} of files into the page "
            f"cache ({rest}); {WARMUP_FIX}"
        )
    if key not in FIRST_READ_MEMORY:
        return None
    title = STAT_METRICS[key].title
    # The peak counts them whole; the average only over the time they were cached.
    counts = "counts" if key == "peak_bytes" else "counts up to"
    own = ", ".join(f"{label} {format_binary(int(v))}" for label, v in fr.own_bytes)
    without = f"; without page cache (anon + shmem + kernel, medians): {own}" if own else ""
    return (
        f"{fr.label} ran first: its {title} {counts} {read} of page cache ({rest}), which "
        f"this ranking charges to it{without}; {WARMUP_FIX}"
    )


def inverts_lead(
    first_read: FirstReads | None, ranks: Sequence[Rank], summaries: Sequence[ModelSummary]
) -> bool:
    """Whether the first run's cell is one of the lead's two and its median is that run's
    own or half of it (fewer than 3 successful runs): from 3 on the median is a later run's,
    which found the files cached as the others did."""
    if first_read is None or first_read.label not in (ranks[0].name, ranks[1].name):
        return False
    cell = next((m for m in summaries if m.name == first_read.label), None)
    return cell is not None and len(successful(cell.runs)) < 3
