"""The comparison as text: per limit setting, the rankings by each metric, with the intervals
and notes that say how far apart the models are (the numbers are
:mod:`edgeprof.analysis.compare`'s).  The statistics of each model's repeated runs, and what
``--repeat auto`` did: :mod:`.statistics_tables`."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from ..analysis.cells import ending, endings, measured, stopped, stopped_words
from ..analysis.compare import RANKED_METRICS, ModelSummary, Rank, format_stat, rank
from ..analysis.difference import DEFAULT_TARGET, runs_to_resolve
from ..analysis.first_reads import FirstReads
from ..analysis.granularity import charge_granularity, within_granularity
from ..analysis.hosts import mixed_hosts_note
from ..analysis.metrics import STAT_METRICS, Kind
from ..analysis.outliers import without_outliers
from ..model import Termination
from ..units import article, format_binary, format_factor
from .first_read_notes import first_read_note, inverts_lead
from .ratio_text import NO_LOWER_BOUND, factor_text, interval_bounds
from .table import TextTable


def _all_failed(m: ModelSummary) -> bool:
    """Every run of ``m`` failed: none succeeded, none ``--timeout`` stopped (whose
    per-iteration figures are ranked: :func:`~edgeprof.analysis.cells.measured`)."""
    return bool(m.runs) and not measured(m.runs, per_iteration=True)


def _close(r: Rank) -> list[str]:
    """Why ``r`` is not told apart from the model before it (the table's NOTE)."""
    return (["within noise"] if r.within_noise else []) + (
        ["< 10 MiB apart, may flip on the device"] if r.close_memory else []
    )


def _x(f: float | None, interval: tuple[float, float] | None) -> str:
    """A factor and, where tested, its interval (:func:`interval_name`) in brackets."""
    if f is None:
        return "n/a"
    if interval is None:
        return format_factor(f)
    lo, hi = interval_bounds(interval)
    return f"{factor_text(f, interval)} [{lo}, {hi}]"


def interval_name(base: str, log: bool = True) -> str:
    """What a ranking's bracketed interval is, said the one way in its legend and its summary
    line (:meth:`~edgeprof.analysis.difference.Difference.relative_interval`): on the
    logarithms (``log``), of the ratio of the geometric means; else of 1 + the difference of
    the means over ``base``'s mean (the summary had called that "the ratio of means", the
    legend below it "the difference of the means").  ``base``: whose figure it is over."""
    if log:
        return f"95% interval, Welch's t on the logarithms, of the geometric mean over {base}"
    return f"95% interval, Welch's t, of 1 + the difference of the means over {base} mean"


RANKING_LEGEND = (
    "× FIRST, × PREVIOUS: the ratio of the medians [the "
    + interval_name("the first's (the previous one's)")
    + ": it covers 1 exactly where ≈ says within noise]; ≈ marks a model not told from the "
    "previous one by either of two rules (its NOTE says which): within noise, or a memory "
    "figure < 10 MiB apart, which may rank the other way on the device whatever the bracket; "
    "MEAN ± SD: one standard deviation"
)
"""Both rules of the ≈ (:func:`_close`): the legend had given only the first, and a tester
read ``1.04× [1.02, 1.09]  ≈ 100: < 10 MiB apart`` as a ≈ the bracket contradicts."""

ON_THE_VALUES = (
    "a bracket beside a side with a figure of 0 (no logarithm) is the "
    + interval_name("the first's (the previous one's)", log=False)
)
"""The legend's exception, said under a ranking that has one (:func:`_on_the_values`)."""


def _on_the_values(ranks: Sequence[Rank]) -> bool:
    """Whether a tested step of ``ranks`` was tested on the values, not their logarithms."""
    return any(
        d is not None and d.tested and not d.log
        for r in ranks
        for d in (r.from_first, r.from_previous)
    )


def _lead(first: Rank, second: Rank, key: str) -> str | None:
    """The ranking's first line: the first model against the second.  Apart, it says by how
    much less, in percent of the second's median (``took 42% less CPU time than``; "1.00×
    less" had been said of two medians 0.4 % apart), with the ratio of the medians and its
    interval; within noise, no order: ``≈``, the ratio and the interval ("100 took 1.08× less
    wall time than 110 (…; within noise)" had asserted an order the test did not make).
    ``None`` where a median of 0 makes no ratio.  A figure of the runs' iterations (a latency,
    a throughput) is one they had, not took or used: ``had a 23% higher throughput than``."""
    metric = STAT_METRICS[key]
    title = metric.title
    verb = "had" if metric.reported else "took" if metric.kind is Kind.TIME else "used"
    if second.median == first.median:
        # "150 used 1.00 ± 0.00× less peak memory than 300" had said a tie as a lead.
        return (
            f"{first.name} and {second.name} {verb} the same {title} (median "
            f"{format_stat(key, first.median)})"
        )
    if not second.factor:  # None, or 0: the second's median is 0 (no throughput's 1/0)
        return None
    interval = second.factor_interval if second.from_first is not None else None
    why = [f"ratio of the medians {factor_text(second.factor, interval)}"]
    if interval is not None and second.from_first is not None:
        lo, hi = interval_bounds(interval)
        said = f"{lo} to {hi}×"
        if interval[0] <= 0:
            said += ", no lower bound at this n"
        why.append(interval_name("the first's", second.from_first.log) + f": {said}")
    if second.close_memory:
        why.append("< 10 MiB apart, may flip on the device")
    if not second.tested:
        # By their medians alone: "100 used 14% less avg memory than 200" had stood two
        # lines above "not tested … 100 vs 200" with nothing to say it was no test's.
        why.append("not tested: a side has one figure, so by the medians alone")
    if second.within_noise:
        return f"{first.name} ≈ {second.name} in {title}, within noise: {'; '.join(why)}"
    why_said = "; ".join(why)
    if metric.larger_is_better:  # the first's figure over the second's
        if 1 / second.factor >= 2:  # "a 274% higher throughput" read worse than "3.74×"
            times = f"{1 / second.factor:.2f}×"
            return f"{first.name} {verb} {times} the {title} of {second.name} ({why_said})"
        more = _percent(1 / second.factor - 1)
        a = article(more)
        return f"{first.name} {verb} {a} {more} higher {title} than {second.name} ({why_said})"
    less = _percent(1 - 1 / second.factor)
    if metric.reported:
        a = article(less)
        return f"{first.name} {verb} {a} {less} lower {title} than {second.name} ({why_said})"
    return f"{first.name} {verb} {less} less {title} than {second.name} ({why_said})"


def _percent(fraction: float) -> str:
    """``42%``, ``7.4%``, ``0.04%``: whole above 10 %, else the digits that show it above 0."""
    pct = fraction * 100
    digits = 0 if pct >= 10 else 1
    while digits < 6 and float(f"{pct:.{digits}f}") == 0:
        digits += 1
    return f"{pct:.{digits}f}%"


def _runs_to_tell(prev: Rank, r: Rank, floor: float = 0.0) -> str:
    """How many runs would tell two neighbours apart, or show them within the default
    precision, at the noise measured (:func:`edgeprof.analysis.difference.runs_to_resolve`);
    or that they are within it already (``--repeat auto`` counts such a pair resolved).  At
    one 95 % look: it had said "--repeat auto runs until they do" of a count auto's own
    per-look level (:func:`~edgeprof.analysis.repeats.look_confidence`) does not reach.
    ``floor``: the memory charge batches (:mod:`edgeprof.analysis.granularity`) within which
    no number of runs tells them apart: a 256 KiB peak against 256–512 KiB had been given
    "~51 runs each"."""
    pair = f"{prev.name} ≈ {r.name}"
    d = r.from_previous
    if d is not None and within_granularity(d, floor):
        return (
            f"{pair}: within the memory cgroup's charge batches ({format_binary(floor)} on "
            "these runs' CPUs), which no number of runs tells apart"
        )
    if d is not None and d.within(DEFAULT_TARGET):  # already resolved: no runs to ask for
        return (
            f"{pair}: the same within {DEFAULT_TARGET * 100:g}% (the 95% interval of the "
            "ratio lies inside it)"
        )
    n = runs_to_resolve(prev.stat.values, r.stat.values, DEFAULT_TARGET)
    if n is None:
        return f"{pair}: more than 1000 runs each would be needed to tell them apart"
    return (
        f"{pair}: ~{n} runs each would tell them apart or show them within "
        f"{DEFAULT_TARGET * 100:g}% at the noise measured, at one 95% look (--repeat auto, "
        "which looks after every round at a stricter level, needs more)"
    )


def _without_outliers(prev: Rank, r: Rank, key: str, floor: float = 0.0) -> str | None:
    """A sensitivity line beside a ≈ where a side has a flagged outlier: the test, the
    brackets and the runs-needed figure above include it (a ranking tests every run), and
    this says what the test gives without it
    (:func:`edgeprof.analysis.outliers.without_outliers`, ``floor`` its least distance);
    ``None``: no outlier."""
    s = without_outliers(prev.stat.values, r.stat.values, floor)
    if s is None:
        return None
    runs = [
        f"{name}'s run {i + 1} ({format_stat(key, values[i])})"
        for name, values, left in zip(
            (prev.name, r.name), (prev.stat.values, r.stat.values), s.left_out, strict=True
        )
        for i in left
    ]
    d = s.difference
    if d.p_value is None:
        said = "too few runs are left to test"
    else:
        verdict = "different" if d.separated else "still within noise"
        interval = d.relative_interval()
        bracket = (
            "" if interval is None else "; × PREVIOUS [{}, {}]".format(*interval_bounds(interval))
        )
        said = f"the test says {verdict} (p = {d.p_value:.2g}{bracket})"
    which = "it" if len(runs) == 1 else "them"
    return (
        f"{prev.name} ≈ {r.name}: the test, its brackets and the runs needed include "
        f"{' and '.join(runs)}, {'an outlier' if len(runs) == 1 else 'outliers'}: without "
        f"{which} {said}"
    )


def under(setting: str) -> str:
    """``under cpus=1, memory=1.0GiB``, or ``with no limits`` for the setting of none (a
    heading had read "Statistics under none")."""
    return "with no limits" if setting == "none" else f"under {setting}"


def ranking_title(key: str, setting: str) -> str:
    """The title of the ranking by the statistic ``key`` (the HTML report puts each
    ranking's chart after it)."""
    metric = STAT_METRICS[key]
    order = "largest" if metric.larger_is_better else "smallest"
    return f"Ranking by {metric.title} {under(setting)} ({order} first)"


def ranking_tables(
    cells: Mapping[str, Sequence[ModelSummary]],
    metrics: Sequence[str] = RANKED_METRICS,
    caveats: Mapping[str, str] | None = None,
    shard: tuple[int, int] | None = None,
    first_read: FirstReads | None = None,
) -> list[TextTable]:
    """A table per limit setting and metric: models smallest first by median, their factor
    relative to the first and to the previous one with the Welch interval behind ≈
    (:func:`interval_name`), and ≈ where two neighbours are not different at
    95 % (or, for memory, < 10 MiB apart).  ``caveats``: metric key → a note said under its
    ranking's lead line (a bench's first batch size's page cache, beside peak memory).
    ``shard``: the runs are part I of N of a sweep (``--shard``), whose rankings are the
    merged sweep's.  ``first_read``: the first run was charged with the page cache the
    later ones found cached (:mod:`edgeprof.analysis.first_reads`): said under its setting's
    time and memory rankings, in place of a lead it inverts."""
    out = []
    ranked = [setting for setting, summaries in cells.items() if len(summaries) > 1]
    for setting, summaries in cells.items():
        if (alone := _sole_survivor(setting, summaries)) is not None:
            out.append(alone)
            continue
        if (single := _alone_in_setting(setting, summaries, ranked)) is not None:
            out.append(single)
            continue
        for key in metrics:
            ranks = rank(summaries, key)
            metric = STAT_METRICS[key]
            title = metric.title
            unranked = [
                m for m in summaries if m.stat(key) is None and len(m.failures) < len(m.runs)
            ]
            if len(ranks) < 2 and not (ranks and unranked):
                continue  # one model, or none with the figure: nothing to rank or to say
            rows = [
                ["#", "MODEL", "MEDIAN", "MEAN ± SD", "× FIRST [95%]", "× PREVIOUS [95%]", "NOTE"]
            ]
            for r in ranks:
                prev = ranks[r.position - 2].name if r.position > 1 else ""
                why = _close(r)
                rows.append(
                    [
                        str(r.position),
                        r.name,
                        format_stat(key, r.median),
                        format_stat(key, r.stat.mean)
                        if r.stat.n == 1
                        else f"{format_stat(key, r.stat.mean)} ± "
                        f"{format_stat(key, r.stat.sd, r.stat.mean)}",
                        "1" if r.position == 1 else _x(r.factor, r.factor_interval),
                        "" if r.position == 1 else _x(r.step, r.step_interval),
                        f"≈ {prev}: {', '.join(why)}" if why else "",
                    ]
                )
            notes = []
            if len(ranks) < 2:
                # One model has the figure, its neighbours none (runs too short for an average
                # memory): the ranking had been left out without a word, as if not asked.
                notes.append(_unranked_note(title, unranked, key))
                out.append(TextTable(ranking_title(key, setting), rows, notes))
                continue
            cold = first_read_note(first_read, setting, key)
            if cold is not None and inverts_lead(first_read, ranks, summaries):
                notes.append(cold)  # in place of a verdict it had turned round
            elif metric.ranked and (said := _lead(ranks[0], ranks[1], key)):
                notes.append(said)
                if cold is not None:
                    notes.append(cold)
            if caveats and key in caveats:
                notes.append(caveats[key])
            notes.append(RANKING_LEGEND)
            if _on_the_values(ranks):
                notes.append(ON_THE_VALUES)
            if any(i is not None and i[0] <= 0 for r in ranks for i in r.intervals):
                notes.append(NO_LOWER_BOUND)
            for before, r in itertools.pairwise(ranks):
                if r.within_noise:
                    runs = [x for m in summaries if m.name in (before.name, r.name) for x in m.runs]
                    floor = charge_granularity(key, runs)
                    notes.append(_runs_to_tell(before, r, floor))
                    if (sensitivity := _without_outliers(before, r, key, floor)) is not None:
                        notes.append(sensitivity)
            mixed = mixed_hosts_note({m.name: m.runs for m in summaries})
            if mixed is not None:
                notes.append(mixed)
            if unranked:  # a run too short for an average memory (see the warnings)
                notes.append(_unranked_note(title, unranked, key))
            notes += _failed_notes(summaries, metric.per_iteration)
            if (untested := _untested_note(ranks, summaries, title, shard)) is not None:
                notes.append(untested)
            out.append(TextTable(ranking_title(key, setting), rows, notes))
    return out


def _sole_survivor(setting: str, summaries: Sequence[ModelSummary]) -> TextTable | None:
    """A setting where one model ran and every run of the others failed: no ranking by
    any metric (one model), and that one model is the setting's answer, said as such.  A
    tester's ``--memory 192m,512m`` sweep, fp32 OOM-killed under 192m, had got statistics
    alone there and no word that only int8 fits.  ``None``: another setting."""
    ran = [m for m in summaries if not _all_failed(m) and m.runs]
    failed = [m for m in summaries if _all_failed(m)]
    if len(ran) != 1 or not failed:
        return None
    (only,) = ran
    rows = [["MODEL", "RUNS"]] + [
        [m.name, f"{len(m.runs) - len(m.failures)} of {len(m.runs)} succeeded"
         + (f" ({endings(m.failures)})" if m.failures else "")]
        for m in (only, *failed)
    ]  # fmt: skip
    said = ", ".join(f"{m.name} ({endings(m.runs)})" for m in failed)
    # A service --timeout stopped is no failure, but no success either: "only sleep
    # succeeded" had sat over its row's "0 of 2 succeeded (timeout ×2)" (a user's).
    held = "succeeded" if len(only.failures) < len(only.runs) else "ran to its --timeout"
    if any(map(stopped, only.runs)) and held == "succeeded":
        held = "succeeded or ran to its --timeout"
    note = (
        f"only {only.name} {held} {under(setting)}: every run of {said} failed, so "
        "nothing is ranked against it"
    )
    oom = [m.name for m in failed if all(r.termination is Termination.OOM for r in m.runs)]
    if oom:
        note += f"; OOM-killed in every run, {', '.join(oom)} did not fit in its memory limit"
    return TextTable(f"Ranking {under(setting)}", rows, [note])


STOPPED_NOTE = (
    "not ranked, --timeout stopped every run: {} (its whole-run figures are of the time it "
    "ran, not of a run that ended by itself; its per-iteration figures are ranked)"
)
"""A cell whose runs ``--timeout`` stopped, under a whole-run figure's ranking: no failure
of the command (``run`` exits with the workload's own code, 0 for a service's clean
shutdown), so not said to have failed, as a soak tester's service had been ("every run
failed: … (timeout)")."""

STOPPED_RANKED = "ranked with runs --timeout stopped: {}"
"""Under a per-iteration figure's ranking, the cells whose figures include runs
``--timeout`` stopped (:func:`~edgeprof.analysis.cells.stopped_words`), so that nobody
takes them for finished runs."""


def _failed_notes(summaries: Sequence[ModelSummary], per_iteration: bool) -> list[str]:
    """The models none of whose runs is ranked by the figure: under a whole-run one those
    ``--timeout`` stopped (:data:`STOPPED_NOTE`); those whose every run failed.  Under a
    per-iteration one, the models it ranks with stopped runs (:data:`STOPPED_RANKED`)."""
    out = [m for m in summaries if not any(r.succeeded for r in m.runs)]
    cut = [m for m in out if all(map(stopped, m.runs))]
    failed = [f"{m.name} ({ending(m.runs[0])})" for m in out if m not in cut]
    if per_iteration:
        failed = [f"{m.name} ({ending(m.runs[0])})" for m in summaries if _all_failed(m)]
        said = [f"{m.name} ({w})" for m in summaries if (w := stopped_words(m.runs))]
        notes = [STOPPED_RANKED.format("; ".join(said))] if said else []
    else:
        notes = [STOPPED_NOTE.format(", ".join(m.name for m in cut))] if cut else []
    if failed:  # said nowhere but in each run's warning before
        notes.append(f"not ranked, every run failed: {', '.join(failed)}")
    return notes


def _alone_in_setting(
    setting: str, summaries: Sequence[ModelSummary], ranked: Sequence[str]
) -> TextTable | None:
    """A model alone under its setting, where other settings rank models: said, not left
    out.  A soak tester's run at ``memory=512m`` beside five at 256m was in no ranking and no
    note.  ``None``: the setting has other models, or no setting ranks any (a one-model
    sweep of several limits ranks nothing, by design)."""
    others = [s for s in ranked if s != setting]
    if len(summaries) != 1 or not others:
        return None
    (m,) = summaries
    ok = len(m.runs) - len(m.failures)
    rows = [["MODEL", "RUNS"], [m.name, f"{ok} of {len(m.runs)} succeeded"
                                + (f" ({endings(m.failures)})" if m.failures else "")]]  # fmt: skip
    note = (
        f"{m.name} alone ran {under(setting)}: nothing is ranked against it; the other "
        f"models are ranked {' and '.join(under(s) for s in others)}"
    )
    return TextTable(f"Ranking {under(setting)}", rows, [note])


def _unranked_note(title: str, unranked: Sequence[ModelSummary], key: str) -> str:
    """The models with no figure of ``key``, grouped by why: a cell whose runs reported no
    iterations at all had been told that "their iterations gave no items" (a soak tester's
    system ``python3``, which could not import edgeprof)."""
    by_why: dict[str, list[str]] = {}
    for m in unranked:
        by_why.setdefault(_why_none(key, m), []).append(m.name)
    said = "; ".join(f"{', '.join(names)} ({why})" for why, names in by_why.items())
    return f"not ranked, no figure of {title} in their runs: {said}"


def _why_none(key: str, m: ModelSummary) -> str:
    """Where to look for why ``m``'s runs have no figure of ``key``: their iterations' for
    a figure the workload reports (the runs' warnings say nothing of iterations); items only
    where its successful runs reported iterations."""
    if key == "items_per_s" and all(r.latency is not None for r in m.runs if r.succeeded):
        return "their iterations gave no items: edgeprof.iteration(items=N)"
    if STAT_METRICS[key].reported:
        return "they reported no iterations: edgeprof.iteration()"
    return "see the warnings"


FINER_INTERVAL = "a finer --interval: runs shorter than two readings have none"
MORE_REPEATS = "--repeat 3 or more, or --repeat auto"


def _in_a_part(shard: tuple[int, int]) -> str:
    """What gives a part's rankings more figures: the other parts.  "--repeat 3 or more, or
    --repeat auto" had been said to a part of --repeat 3 (auto is refused with --shard)."""
    return (
        f"this part, shard {shard[0]}/{shard[1]}, ran a share of the sweep's rounds: the "
        "rankings are the merged sweep's (edgeprof merge the parts)"
    )


def _untested_note(
    ranks: Sequence[Rank],
    summaries: Sequence[ModelSummary],
    title: str,
    shard: tuple[int, int] | None = None,
) -> str | None:
    """The neighbour pairs not tested, a side with one figure, and what would give it more:
    runs too short for the figure (average memory needs two readings) want a finer
    ``--interval``, one successful run wants repeats.  Each side is asked, not only the later
    one: a first model with its average memory in 1 of 2 runs had been told to repeat (its
    neighbour had 2 of 2), where the run's own warning said ``--interval 0.01``."""
    by_name = {m.name: m for m in summaries}
    pairs, hows = [], set()
    for prev, r in itertools.pairwise(ranks):
        if r.tested:
            continue
        pairs.append(f"{prev.name} vs {r.name}")
        for side in (prev, r):
            m = by_name[side.name]
            if side.stat.n < 2:
                made = len(m.runs) - len(m.failures)  # more successful runs than figures: short
                hows.add(FINER_INTERVAL if made > side.stat.n else MORE_REPEATS)
    if not pairs:
        return None
    more = MORE_REPEATS if shard is None else _in_a_part(shard)
    hows = {more if h == MORE_REPEATS else h for h in hows}
    how = "; ".join(h for h in (FINER_INTERVAL, more) if h in hows)
    return f"not tested, a side with 1 figure of {title}: {', '.join(pairs)} ({how})"


