"""Baseline comparison for CI: per cell and metric, the change with its uncertainty and a verdict.

The test suits the few repeats a CI job can afford (3 to 10): Welch's t (unequal variances,
no normality of the *difference* assumed beyond the t approximation) on the logarithms of the
values gives a 95 % confidence interval of the ratio of the geometric means, the same test
rankings and budgets use (:mod:`edgeprof.analysis.difference`; on the values, the interval of
the difference of the means over the baseline's mean, where a side has a 0).  The change is
that ratio less 1, shown with its interval's bounds, which are not symmetric about it and
never below −100 % (``-83.0% [-92.5%, -61.3%]``: a tester's latency p50 had read ``-83.7% ±
88.1%``, inconclusive, reaching −171 %, beside its throughput's ``+479.6% ± 62.7%``,
improvement).  The verdict combines the interval with a threshold so that noise alone does
not fail a build (the rule: :mod:`edgeprof.analysis.verdicts`).

Three verdicts say that no test was possible: **not judged** (a latency percentile some
of a side's runs gave from fewer iterations than it needs, the ``^`` of the latency tables:
:func:`~edgeprof.analysis.verdicts.not_judged`; it does not fail), **not enough repeats**
(fewer than 2 values on a side: no variance to test against; it does not fail, and says to
repeat) and **not measured** (the baseline has the metric, the current cell has no value,
e.g. every run failed or latency is no longer reported; it fails, as a missing budget value
does).  Where the current runs
succeeded without the figure, the row says why (:attr:`Change.why`: a short run's average
memory, a finer ``--interval``), and against a baseline of one value it is not enough
repeats: that side could not have been tested either (a rerun of unchanged code had failed
on an average memory one baseline run of three happened to have).  A cell
missing from the current results altogether is the same case, every metric of it not
measured, unless the comparison allows it (``--allow-missing``: a model dropped on purpose,
or a part of a sweep held to the whole).

Runs that failed are left out of a side's figures, and said: a note per cell, on both sides
(:class:`Failed`).  Failed runs in the *current* results fail the gate (exit 3, as a cell whose
every run failed, "not measured", always did), whatever the verdicts of the runs that
succeeded: a tester's current cell of 5 runs, 3 of them exit 1, had passed as "0 regressions"
on the 2 left, whose interval (+115.9 % ± 216.9 %) could not have shown any.  A failed
baseline run is the baseline's affair: said, not failed.  ``--allow-missing`` is about cells,
not runs: it does not pass failed runs.

A regression (an improvement) whose runs other tasks held off their CPUs long enough to account
for it keeps its verdict and its exit code, and carries a caveat that says so
(:func:`~edgeprof.analysis.verdicts.held_caveat`).

This module pairs the cells of the two sides and pools each side's values of a metric; the
verdict on each pair, and what it must be read with, is :mod:`edgeprof.analysis.verdicts`'s.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..errors import ConfigError
from ..model import RunResult
from . import rules
from .apart import apart_sides, between_sides
from .budgets import METRICS
from .cells import cell_name, cells, ending, endings, measured, setting, stopped_words, successful
from .change import Change as Change  # re-exported: compare's API
from .change import Verdict as Verdict
from .failures import Failed, failed_notes, failed_of
from .hosts import same_runs_note, sides_note
from .metrics import (
    BY_KEY,
    FEW_NOTE,
    Metric,
    at_host_speed,
    few_iterations,
    in_phase,
    phases_apart,
    stalled_percentiles,
)
from .pairs import pair_hint, paired, resolve, taken
from .targets import check_targets, differing
from .unmeasured import why_unmeasured
from .verdicts import held_caveat, judged, not_judged, outlier_note, within_the_counter

COMPARED: tuple[Metric, ...] = (*METRICS.values(), BY_KEY["energy_per_item"])
"""What ``compare`` holds the current runs to: the budgetable metrics (the iterations'
latency p50 and throughput among them), and the energy per item (what a battery-powered
device is chosen by; a run reports it per inference, so no budget was needed for it to be
compared).  Not GPU utilisation: a lower share is no goal."""


def regressed(changes: Iterable[Change]) -> bool:
    """Whether ``edgeprof compare`` exits 3: a regression, a metric not measured, or a failed
    current run."""
    return any(c.verdict.fails or c.current_failed is not None for c in changes)


TESTED = frozenset(
    {
        Verdict.REGRESSION,
        Verdict.IMPROVEMENT,
        Verdict.NO_CHANGE,
        Verdict.INCONCLUSIVE,
        Verdict.WITHIN_GRANULARITY,
    }
)
"""The verdicts of a test made: not enough repeats and not measured are none."""


def untested(changes: Iterable[Change]) -> int:
    """How many of ``changes`` could not be tested for want of repeats (a side with fewer
    than 2 values): they pass the gate on no evidence."""
    return sum(c.verdict is Verdict.FEW_REPEATS for c in changes)


def tested(changes: Iterable[Change]) -> bool:
    """Whether any of ``changes`` was tested.  A baseline of 3 runs against one current run
    of +131.9 % peak memory (the baseline's SD 0.2 %) tested nothing, every metric "not
    enough repeats", and had read "passed" (a test author's ``assert not
    compare(BASELINE, profile(...)).regressed``, which could never fail)."""
    return any(c.verdict in TESTED for c in changes)


def failed_cells(changes: Iterable[Change]) -> dict[tuple[str, str], Failed]:
    """(label, setting) → the current runs that failed, per compared cell where some did."""
    return {(c.label, c.setting): c.current_failed for c in changes if c.current_failed}


def current_runs(changes: Iterable[Change]) -> int:
    """How many current runs the compared cells hold: a failed cell's every run, else the
    most values any of its metrics has (wall time: every successful run).  A headline's
    ``5 of 5 current runs failed`` had counted only the failed cell's, beside another's 5
    that succeeded (a user's)."""
    runs: dict[tuple[str, str], int] = {}
    for c in changes:
        n = c.current_failed.of if c.current_failed else len(c.current)
        runs[c.label, c.setting] = max(runs.get((c.label, c.setting), 0), n)
    return sum(runs.values())


def compare_results(
    baseline: Sequence[RunResult],
    current: Sequence[RunResult],
    threshold: float = 0.05,
    match_limits: bool = True,
    allow_missing: bool = False,
    match_targets: bool = True,
    phase: str = "",
    pairs: Sequence[str] = (),
) -> tuple[list[Change], list[str]]:
    """Every metric of every cell found in both, and notes on cells found in only one.

    ``pairs``: ``BASE=CUR`` each (``--pair``): the baseline's model ``BASE`` held against
    the current's ``CUR``, both named ``BASE → CUR`` (:mod:`edgeprof.analysis.pairs`).

    ``phase``: the phase whose iterations the latency and throughput metrics compare
    (``--latency-phase``); ``""``: every phase's, labelled so where they lie in several.

    ``match_limits=False`` pairs cells by model label alone (the same models measured under
    different limits, e.g. two devices); each side must then hold one setting per label.
    A cell whose sides bench different targets is refused, or with ``match_targets=False``
    paired and noted (:mod:`edgeprof.analysis.targets`).
    A cell only in the baseline has its metrics not measured (they fail), or with
    ``allow_missing`` a note only.  Raises :class:`ConfigError` when no cell is in both
    (comparing nothing must not pass).
    """
    # A side holding runs of one label that are not repeats (two benches' `infer bs=1`, two
    # scripts' `python`) had them pooled into one cell, as report had: named apart first,
    # as report names them.
    baseline, current, named_apart = apart_sides(baseline, current)
    base_cells, cur_cells = _keyed(baseline, match_limits), _keyed(current, match_limits)
    held = resolve(pairs, [k[0] for k in base_cells], [k[0] for k in cur_cells])
    base_cells, cur_cells = paired(base_cells, cur_cells, pairs)
    notes = list(named_apart)
    missing = []
    for k in (k for k in base_cells if k not in cur_cells):
        if (why := taken(k[0], "baseline", held)) is not None:
            notes.append(f"{cell_name(k)}: {why}")  # measured, in another pair: no failure
        else:
            missing.append(k)
            notes.append(missing_note(k, allow_missing))
    new_failed: list[Change] = []
    for k in (k for k in cur_cells if k not in base_cells):
        if (why := taken(k[0], "current", held)) is not None:
            notes.append(f"{cell_name(k)}: {why}")
            continue
        # A new cell's failed runs fail the gate as a compared cell's do (compare's help: "a
        # failed current run"): a model added that OOMed in every run had passed, "new" its
        # only word (a user's).  One row carries them, as a cell with no baseline run's does.
        runs = cur_cells[k]
        bad = failed_of(runs)
        ended = (
            "" if bad is None
            else f"; {len(successful(runs))} of {len(runs)} runs succeeded ({bad.endings})"
        )
        notes.append(f"{cell_name(k)}: new (not in the baseline{ended})")
        if bad is not None:
            wall = METRICS["wall"]
            values = tuple(v for r in successful(runs) if (v := wall.get(r)) is not None)
            new_failed.append(
                Change(k[0], setting(runs[0]), wall, (), values, Verdict.NOT_MEASURED,
                       why="new (not in the baseline)", current_failed=bad)
            )  # fmt: skip
    # The same runs on both sides still differ across a pair (``compare sw sw --pair
    # small=big`` holds small against big): "nothing was measured again" had been said there.
    same = None if held else same_runs_note(baseline, current)
    notes += [n for n in (sides_note(baseline, current), same) if n]
    common = [k for k in cur_cells if k in base_cells]
    if not common:
        shared = {k[0] for k in base_cells} & {k[0] for k in cur_cells}
        # The fix named: a tester's fp32 against int8 files had stopped here with none.
        raise ConfigError(
            "no model/limits cell is in both the baseline and the current results"
            + (
                " (use --ignore-limits to pair models measured under different limits)"
                if shared and match_limits
                else ": their models differ ("
                + ", ".join(sorted({k[0] for k in base_cells}))
                + " → "
                + ", ".join(sorted({k[0] for k in cur_cells}))
                + "): compare pairs cells by label; "
                + pair_hint(
                    [k[0] for k in base_cells],
                    [k[0] for k in cur_cells],
                    limits_differ=match_limits
                    and not {k[1] for k in base_cells} & {k[1] for k in cur_cells},
                )
            )
        )
    notes += ran_apart({cell_name(k): (base_cells[k], cur_cells[k]) for k in common})
    found = differing({cell_name(k): (base_cells[k], cur_cells[k]) for k in common})
    if (across := check_targets(found, ignore=not match_targets)) is not None:
        notes.append(across)
    changes: list[Change] = []
    failed: list[str] = []  # the common cells whose baseline has no successful run
    unjudged: dict[str, list[str]] = {}  # a "not judged" reason: the cells it is of
    for key in common:
        b_runs, c_runs = base_cells[key], cur_cells[key]
        label, where = key[0], _setting(b_runs, c_runs)
        for side, runs in (("baseline", b_runs), ("current", c_runs)):
            if stalled := stalled_percentiles(runs):
                notes.append(
                    f"{cell_name(key)}: latency {', '.join(stalled)} of the {side} runs measure "
                    "the CPU quota's stalls, not the workload: their change compares stall "
                    "patterns"
                )
            if fast := at_host_speed(runs):
                notes.append(
                    f"{cell_name(key)}: latency of {len(fast)} of the {len(runs)} {side} runs "
                    "is this host's core's speed, not the quota's (!): a core at the quota's "
                    "share of this one's speed is slower for CPU-bound iterations"
                )
        # Each side's runs of a whole-run figure, and of a per-iteration one, which counts the
        # runs --timeout stopped too (cells.measured: a service's sweep had compared nothing).
        b_ok, c_ok = successful(b_runs), successful(c_runs)
        b_it, c_it = measured(b_runs, True), measured(c_runs, True)
        first = len(changes)
        if not b_it:
            failed.append(f"{cell_name(key)}: {ending(b_runs[-1])}")
            notes.append(
                f"{cell_name(key)}: no successful run in the baseline ({endings(b_runs)}): "
                "nothing to hold the current runs to"
            )
        elif not c_it:
            # Every row reads "not measured"; this says why (an OOM under a smaller limit is
            # the usual cause), as a budget's "not judged (no successful run: oom)" does.
            notes.append(
                f"{cell_name(key)}: no successful run in the current results ({endings(c_runs)}): "
                "its metrics are not measured"
            )
        for side, runs in (("baseline", b_runs), ("current", c_runs)):
            if cut := stopped_words(runs):
                whole = "" if successful(runs) else "; its whole-run figures are not compared"
                notes.append(f"{cell_name(key)}: {side}: {cut}{whole}")
        unpaired: list[str] = []  # what only the current runs have
        whole_b, whole_c = b_ok, c_ok
        apart = phases_apart([*b_it, *c_it])
        for metric in COMPARED:
            b_ok, c_ok = (b_it, c_it) if metric.per_iteration else (whole_b, whole_c)
            rows = None
            if metric.of_iterations and phase:
                b_ok, c_ok = [in_phase(r, phase) for r in b_ok], [in_phase(r, phase) for r in c_ok]
                rows = phase
            elif metric.of_iterations and apart:
                rows = ""
            if (why := rules.apart(metric.key, metric.title, b_ok, c_ok)) is not None:
                notes.append(f"{cell_name(key)}: {why}")  # no row: nothing was held to it
                continue
            notes += _pooled(cell_name(key), metric, b_ok, c_ok)
            # Each side's runs whose figure this metric pools: one rule's (rules.newest).
            b_of, c_of = rules.newest(metric.key, b_ok), rules.newest(metric.key, c_ok)
            b = tuple(v for r in b_of if (v := metric.get(r)) is not None)
            c = tuple(v for r in c_of if (v := metric.get(r)) is not None)
            if not b:
                # The baseline never had it: nothing to hold the current run to.  Said where
                # the current runs have it: the row had gone without a word (an avg memory of
                # 3 current runs whose baseline runs were all too short for one).
                if c and b_of:
                    why = why_unmeasured(metric.key, b_runs, baseline)
                    unpaired.append(f"{metric.title} ({why})")
                continue
            change = replace(
                judged(label, where, metric, b, c, threshold),
                base_few=bool(few_iterations(metric, b_of)),
                current_few=bool(few_iterations(metric, c_of)),
                phase=rows,
            )
            if not c and c_of:
                change = _unmeasured(change, why_unmeasured(metric.key, c_runs, current))
            elif change.verdict is Verdict.FEW_REPEATS:
                change = _few_values(change, (b_of, baseline), (c_of, current))
            change = not_judged(change, b_of, c_of)  # a percentile marked ^: no verdict
            b_runs_of = [r for r in b_of if metric.get(r) is not None]
            c_runs_of = [r for r in c_of if metric.get(r) is not None]
            # A memory figure the counter's charge batches cannot resolve: not inconclusive.
            change = within_the_counter(change, [*b_runs_of, *c_runs_of])
            changes.append(change)
            if (said := outlier_note(change, threshold, (b_runs_of, c_runs_of))) is not None:
                notes.append(f"{cell_name(key)}: {said}")
        b_ok, c_ok = whole_b, whole_c
        if unpaired:
            notes.append(
                f"{cell_name(key)}: not compared, what the current runs measured and the "
                f"baseline's did not: {'; '.join(unpaired)}"
            )
        b_bad, c_bad = failed_of(b_runs), failed_of(c_runs)
        if not b_it and c_bad is not None:
            # Nothing to hold the current runs to, but failed ones fail the gate whatever the
            # baseline did: one row carries them (an OOM on both sides had exited 0, though
            # compare's help says a failed current run exits 3; a CI user's).
            wall = METRICS["wall"]
            values = tuple(v for r in c_ok if (v := wall.get(r)) is not None)
            changes.append(Change(label, where, wall, (), values, Verdict.NOT_MEASURED))
        # A side none of whose runs succeeded has its note above.
        notes += failed_notes(
            cell_name(key), b_bad if b_it else None, c_bad if b_it and c_it else None
        )
        for i in range(first, len(changes)):
            ch = changes[i] = replace(changes[i], base_failed=b_bad, current_failed=c_bad)
            if (said := ch.why or held_caveat(ch, b_ok, c_ok, threshold)) is not None:
                changes[i] = ch if ch.why else replace(ch, caveat=said)
                why = f"{ch.subject} {ch.verdict.value}: {said}"
                if ch.verdict is Verdict.NOT_JUDGED:
                    # One note for every cell of the same reason: a tutorial's sweep of four
                    # batch sizes had said the p99's 20 iterations four times over.
                    unjudged.setdefault(why, []).append(cell_name(key))
                else:
                    notes.append(f"{cell_name(key)}: {why}")
    notes += [f"{', '.join(cells)}: {why}" for why, cells in unjudged.items()]
    for key in [] if allow_missing else missing:
        where = setting(base_cells[key][0])  # the key's is "" under --ignore-limits
        for metric in COMPARED:
            b_ok = measured(base_cells[key], metric.per_iteration)
            if b := tuple(v for r in b_ok if (v := metric.get(r)) is not None):
                # Marked as a paired row's baseline is (a user's p99 of 30 iterations had
                # its ^ in the rows compared and none in the rows of a cell gone).
                few = bool(few_iterations(metric, b_ok))
                lost = Change(key[0], where, metric, b, (), Verdict.NOT_MEASURED, base_few=few)
                changes.append(lost)
    if any(c.few for c in changes):
        notes.append(FEW_NOTE)  # once, for the marks in the table above
    changes += new_failed
    if not changes:
        # Every baseline run failed: an empty table and exit 0 let any current result (a
        # crash too) pass the gate.
        raise ConfigError(
            "nothing to compare: every baseline run of the cells both hold failed ("
            + "; ".join(failed)
            + ")"
        )
    return changes, notes


def _pooled(
    cell: str, metric: Metric, base: Sequence[RunResult], current: Sequence[RunResult]
) -> list[str]:
    """A note per side some of whose runs' figures of ``metric`` an older edgeprof's rule
    computed beside others' of this one's (a resumed old sweep): those are left out
    (:func:`~edgeprof.analysis.rules.mixed`)."""
    out = []
    for side, runs in (("baseline", base), ("current", current)):
        old = len(runs) - len(rules.newest(metric.key, runs))
        what = f"{old} of the {side}'s {len(runs)} runs"
        if (said := rules.mixed(metric.key, metric.title, runs, what)) is not None:
            out.append(f"{cell}: {said}")
    return out


def ran_apart(sides: dict[str, tuple[Sequence[RunResult], Sequence[RunResult]]]) -> list[str]:
    """A note per difference of what the paired cells ran (:func:`~edgeprof.analysis.apart.
    between_sides`), naming the cells that share it: a sweep whose command changed says it
    once.  Paired, not refused: comparing two settings of a script is a question compare
    answers, but its verdicts are then the arguments' as much as the code's."""
    by_change: dict[str, list[str]] = {}
    for name, (base, current) in sides.items():
        if (said := between_sides(base, current)) is not None:
            by_change.setdefault(said, []).append(name)
    return [
        f"{', '.join(names)}: the baseline and the current runs ran different {said}: a "
        "change may be theirs, not the code's"
        for said, names in by_change.items()
    ]


def _unmeasured(change: Change, reason: str) -> Change:
    """A metric the current runs succeeded without: ``reason`` says why.  Against a baseline
    of one value it is not enough repeats, as a current value of one would be: neither side
    could have been tested (a baseline whose one short run's average memory a reading
    happened to catch had failed a rerun of unchanged code as "not measured")."""
    if len(change.base) < 2:
        why = (
            f"the current runs have none ({reason}), and the baseline's one value could not "
            "have been tested either"
        )
        return replace(change, verdict=Verdict.FEW_REPEATS, why=why)
    return replace(change, why=f"the current runs have none: {reason}")


def _few_values(
    change: Change,
    base: tuple[Sequence[RunResult], Sequence[RunResult]],
    current: tuple[Sequence[RunResult], Sequence[RunResult]],
) -> Change:
    """Not enough repeats where a side had the runs but too few of them had the figure:
    which side, how many lacked it and why (:func:`~edgeprof.analysis.unmeasured.
    why_unmeasured`).  A baseline of 3 runs, 2 of them too short for an average memory,
    had read "not enough repeats", which points to ``--repeat``, where a finer
    ``--interval`` was the fix (a tester's)."""
    said = []
    for side, (ok, results), values in (
        ("baseline", base, change.base),
        ("current", current, change.current),
    ):
        missing = [r for r in ok if change.metric.get(r) is None]
        if len(ok) >= 2 and len(values) < 2 and missing:
            said.append(
                f"{len(missing)} of the {side}'s {len(ok)} runs have no {change.metric.title}, "
                "so too few values, not too few runs: "
                + why_unmeasured(change.metric.key, missing, results)
            )
    return replace(change, why="; ".join(said)) if said else change


def missing_note(key: tuple[str, str], allowed: bool) -> str:
    if allowed:
        return f"{cell_name(key)}: only in the baseline (allowed: --allow-missing)"
    return (
        f"{cell_name(key)}: only in the baseline: not in the current results, so not measured "
        "(--allow-missing passes a model dropped on purpose)"
    )


def _keyed(
    results: Sequence[RunResult], match_limits: bool
) -> dict[tuple[str, str], list[RunResult]]:
    by_cell = cells(results)
    if match_limits:
        return by_cell
    out: dict[tuple[str, str], list[RunResult]] = {}
    for (label, key), runs in by_cell.items():
        if (label, "") in out:
            # Every one of them: the first two alone had left a sweep's other settings out.
            every = "; ".join(k for lab, k in by_cell if lab == label)
            raise ConfigError(
                f"--ignore-limits: {label} was measured under several limit settings "
                f"({every}): pick one with --setting "
                f"(e.g. --setting {shlex.quote(key)}; given twice, the first picks the "
                "baseline's, the second the current's)"
            )
        out[(label, "")] = runs
    return out


def _setting(base: Sequence[RunResult], current: Sequence[RunResult]) -> str:
    b, c = setting(base[0]), setting(current[0])
    return b if b == c else f"{b} → {c}"
