"""What a model list's rankings say under them where the first run was charged with the page
cache the later ones found cached (:mod:`edgeprof.analysis.first_reads` detects it)."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.cells import successful
from ..analysis.compare import ModelSummary, Rank
from ..analysis.first_reads import CACHE_COUNTED, FirstReads
from ..analysis.metrics import STAT_METRICS
from ..units import format_binary

FIRST_READ_TIMES = ("wall_s", "cpu_s")
FIRST_READ_MEMORY = CACHE_COUNTED
WARMUP_FIX = "--warmup 1 reads them before the measured runs"


def first_read_note(first_read: FirstReads | None, setting: str, key: str) -> str | None:
    """The line under a ranking of ``key`` that the first run's page cache inflates: its
    peak memory with the order no page cache is in, its average memory and times with only
    the fix (no figure of a run's average or times leaves the cache out: the peaks' figures
    under the average ranking read 43.8 MiB against its median of 32.3 MiB, in ``make
    demo``)."""
    if first_read is None or setting != first_read.setting:
        return None
    fr = first_read
    rest = _later(fr)
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
    without = _without(fr) if key == "peak_bytes" else ""
    return (
        f"{fr.label} ran first: its {title} {counts} {read} of page cache ({rest}), which "
        f"this ranking charges to it{without}; {WARMUP_FIX}"
    )


def _later(fr: FirstReads) -> str:
    """What the later runs held, and what it means: a later model holding none may never
    have read the files (``-m small,big``, only ``small`` reading them, had said "found them
    cached"); the first model's own later runs read them, so theirs is a cache hit."""
    most = f"the later runs held at most {format_binary(fr.rest_bytes)}"
    if fr.again_bytes is None:
        return f"{most}: if they read the same files, they found them cached"
    return (
        f"{fr.label}'s own later runs found them cached; {most}: if the other models read "
        "the same files, they found them cached too"
    )


def _without(fr: FirstReads) -> str:
    """Each model's peak without page cache (:func:`~edgeprof.analysis.first_reads.own_memory`),
    and the models it is not known for."""
    own = ", ".join(f"{label} {format_binary(int(v))}" for label, v in fr.own_bytes)
    said = f"; without page cache (the peak less its page cache, medians): {own}" if own else ""
    if fr.unknown:
        said += (
            f"; not known for {', '.join(fr.unknown)} (met its memory limit between samples, "
            "where the kernel drops page cache: a finer --interval reads it)"
        )
    return said


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
