"""Figures of one metric computed by different rules (:mod:`edgeprof.model.rules`): never
weighed against each other.

An older edgeprof averaged a run's memory from its first sample to its last; this one from
its spawn to its exit, with the readings taken at the workload's events.  The same workload
(``infer.py --batch 2``, 6 runs each) averaged 0.2 to 19.1 MiB by the old rule and 19.5 to
26.8 MiB by the new, and ``compare`` called that "+233.1% ± 119.8% regression" (exit 3) of
unchanged code; a resumed old sweep pooled both into one cell's "33.3MiB ± 4.7MiB".  Where
figures of two rules meet, the older rule's are left out as a figure the runs did not
measure is, and one line says why (:func:`apart`, :func:`mixed`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..model import RunResult

RULED: dict[str, str] = {"avg_memory": "avg_memory", "peak_memory": "sampled_maxima"}
"""Metric key → the rule (a :class:`~edgeprof.model.Rules` field) its figure depends on."""

SAID: dict[tuple[str, int], str] = {
    ("avg_memory", 1): "from the first sample to the last, the samples alone",
    ("avg_memory", 2): "from the spawn to the exit, with the readings at the workload's events",
    ("sampled_maxima", 1): "over readings that could count the start and those after the exit",
    ("sampled_maxima", 2): "over the readings after the start, up to the exit",
}
"""Each rule's revisions, as the notes say them (docs/results.md, ``rules``)."""


def revision(key: str, r: RunResult) -> int | None:
    """The revision of the rule that computed ``r``'s figure of the metric ``key``; ``None``:
    no rule that changed made it (a metric no rule changed; a peak that is the kernel's
    high-water mark, which every sampled maximum is at most)."""
    rule = RULED.get(key)
    if rule is None or (rule == "sampled_maxima" and r.memory.peak_source == "kernel"):
        return None
    return int(getattr(r.rules, rule))


def newest(key: str, runs: Sequence[RunResult]) -> list[RunResult]:
    """``runs`` less those whose figure of ``key`` an older rule than another's computed: the
    runs whose figures may be pooled."""
    revs = [rev for r in runs if (rev := revision(key, r)) is not None]
    if len(set(revs)) < 2:
        return list(runs)
    top = max(revs)
    return [r for r in runs if revision(key, r) in (None, top)]


def mixed(key: str, title: str, runs: Sequence[RunResult], what: str) -> str | None:
    """Why the runs :func:`newest` leaves out of ``runs`` (``what``: ``runs 1 and 2``) are
    left out of their ``title``; ``None``: none is."""
    kept = newest(key, runs)
    if len(kept) == len(runs):
        return None
    rule, top = RULED[key], _rev(key, kept)
    old = min(rev for r in runs if (rev := revision(key, r)) is not None)
    return (
        f"{what} left out of {title}: computed by an older edgeprof's rule "
        f"({SAID[(rule, old)]}; the others' {SAID[(rule, top)]}), not pooled with this one's"
    )


def apart(key: str, title: str, base: Sequence[RunResult], cur: Sequence[RunResult]) -> str | None:
    """Why ``compare`` holds no ``title`` of the ``base`` runs to the ``cur`` runs' (each side
    its :func:`newest`): an older edgeprof's rule computed one side's, another the other's.
    ``None``: one rule computed both."""
    b, c = _rev(key, newest(key, base)), _rev(key, newest(key, cur))
    if b == 0 or c == 0 or b == c:
        return None
    rule = RULED[key]
    older, newer = ("baseline", "current") if b < c else ("current", "baseline")
    return (
        f"{title} not compared: the {older} runs' was computed by an older edgeprof's rule "
        f"({SAID[(rule, min(b, c))]}), the {newer} runs' {SAID[(rule, max(b, c))]}"
    )


def _rev(key: str, runs: Sequence[RunResult]) -> int:
    """The one revision of ``runs`` (pooled by :func:`newest`); 0: none."""
    return max((rev for r in runs if (rev := revision(key, r)) is not None), default=0)
