"""A model list's first run charged with the page cache the later runs found cached
(:mod:`edgeprof.analysis.first_reads`): said under the rankings it inverts."""

from __future__ import annotations

import dataclasses

from edgeprof.analysis.first_reads import first_reads
from edgeprof.model import Limits, MemoryParts, RunResult, Termination
from edgeprof.report.summary import summary_tables
from edgeprof.report.table import TextTable

from .conftest import make_result

MIB = 1 << 20


def run(
    label: str, own: int, file: int, wall: float = 1.0, memory: str = "1g", ok: bool = True
) -> RunResult:
    """A run of ``label`` holding ``own`` MiB of anon + kernel and ``file`` MiB of page
    cache at its peak (a tester's: a 20 MiB model read a shared 200 MiB file first)."""
    r = make_result(name=label, limits=Limits(memory=memory), wall_s=wall)
    parts = MemoryParts(total=None, anon=(own - 1) * MIB, file=file * MIB, shmem=0, kernel=MIB)
    mem = dataclasses.replace(
        r.memory,
        peaks=parts,
        peak_bytes=(own + file) * MIB,
        avg_bytes=(own + file // 2) * MIB,
        floor_bytes=own * MIB,
    )
    ended = {} if ok else {"termination": Termination.OOM, "exit_code": None}
    return dataclasses.replace(r, memory=mem, **ended)  # type: ignore[arg-type]


def tables(results: list[RunResult]) -> dict[str, TextTable]:
    return {t.title.split(" under")[0]: t for t in summary_tables(results)}


def test_the_first_runs_page_cache_is_found_with_every_models_own_memory() -> None:
    fr = first_reads([run("a", 28, 200), run("b", 68, 0), run("c", 48, 1)])
    assert fr is not None
    assert (fr.label, fr.setting) == ("a", "memory=1.0GiB")
    assert (fr.file_bytes, fr.rest_bytes) == (200 * MIB, 1 * MIB)
    assert fr.own_bytes == (("a", 28 * MIB), ("c", 48 * MIB), ("b", 68 * MIB))


def test_no_first_read_within_16_mib_alone_or_failed() -> None:
    assert first_reads([run("a", 28, 16), run("b", 68, 1)]) is None  # 15 MiB apart: own reads
    assert first_reads([run("a", 28, 17), run("b", 68, 1)]) is not None  # 16 MiB apart
    assert first_reads([run("a", 28, 200)]) is None  # nothing to compare with
    assert first_reads([run("a", 28, 200, ok=False), run("b", 68, 0)]) is None  # not ranked


def test_the_rankings_it_inverts_say_so_in_place_of_their_lead() -> None:
    """``run -m a,b``: "b used 71% less peak memory than a (ratio of the medians 3.42×)"
    where a held 20 MiB and b 60 MiB; now the line says why and gives the order without page
    cache, and the fix."""
    t = tables([run("a", 28, 200, wall=1.63), run("b", 68, 0, wall=0.92)])
    peak = t["Ranking by peak memory"]
    assert [row[1] for row in peak.rows[1:]] == ["b", "a"]  # the peaks, as measured
    assert peak.notes[0] == (
        "a ran first: its peak memory counts 200.0MiB of page cache (the later runs held at "
        "most 0B: if they read the same files, they found them cached), which this ranking "
        "charges to it; without page cache (the peak less its page cache, medians): a 28.0MiB, "
        "b 68.0MiB; --warmup 1 reads them before the measured runs"
    )
    assert not any("less peak memory" in n for n in peak.notes)  # no inverted verdict
    # An average is not corrected by peaks (43.8 MiB under a median of 32.3 MiB, in `make
    # demo`): the fix alone.
    assert t["Ranking by avg memory"].notes[0] == (
        "a ran first: its avg memory counts up to 200.0MiB of page cache (the later runs held "
        "at most 0B: if they read the same files, they found them cached), which this ranking "
        "charges to it; --warmup 1 reads them before the measured runs"
    )
    wall = t["Ranking by wall time"]
    assert wall.notes[0] == (
        "a ran first: its times count reading 200.0MiB of files into the page cache (the "
        "later runs held at most 0B: if they read the same files, they found them cached); "
        "--warmup 1 reads them before the measured runs"
    )
    assert t["Ranking by CPU time"].notes[0] == wall.notes[0]


def test_a_lead_it_does_not_inverts_stays_with_the_note_after_it() -> None:
    t = tables([run("a", 28, 200), run("b", 68, 0), run("c", 48, 1)])
    notes = t["Ranking by peak memory"].notes
    assert notes[0].startswith("c used 28% less peak memory than b")  # 49 against 68 MiB
    assert notes[1].startswith("a ran first: its peak memory counts 200.0MiB")
    assert notes[1].endswith(
        "a 28.0MiB, c 48.0MiB, b 68.0MiB; --warmup 1 reads them before the measured runs"
    )


def test_from_three_runs_the_median_is_a_warm_runs_and_the_lead_stays() -> None:
    """Rounds outermost: a's first run is cold, its next two found the files cached.  The
    order is the warm runs' (their medians); the test of the means still has the cold run in
    it, which the note after it says."""
    runs = [run("a", 28, 200), run("b", 68, 0)] + [run("a", 28, 0), run("b", 68, 0)] * 2
    notes = tables(runs)["Ranking by peak memory"].notes
    assert notes[0].startswith("a ≈ b in peak memory, within noise: ratio of the medians 2.43×")
    assert notes[1].startswith("a ran first: its peak memory counts 200.0MiB")
    runs2 = [run("a", 28, 200), run("b", 68, 0), run("a", 28, 0), run("b", 68, 0)]
    notes2 = tables(runs2)["Ranking by peak memory"].notes
    assert notes2[0].startswith("a ran first")  # a median of 2 is half the cold run's


def test_only_under_the_first_runs_setting_and_not_without_it() -> None:
    later = [run("a", 28, 0, memory="2g"), run("b", 68, 0, memory="2g")]
    runs = [run("a", 28, 200), run("b", 68, 0), *later]
    by_title = {t.title: t for t in summary_tables(runs)}
    cold = by_title["Ranking by peak memory under memory=1.0GiB (smallest first)"]
    warm = by_title["Ranking by peak memory under memory=2.0GiB (smallest first)"]
    assert cold.notes[0].startswith("a ran first")
    assert not any("ran first" in n for n in warm.notes)
    assert warm.notes[0].startswith("a used 59% less peak memory than b")
    even = [run("a", 28, 10), run("b", 68, 0)]
    assert not any("ran first" in n for t in summary_tables(even) for n in t.notes)


def missed(r: RunResult, sampled_own: float, limit: int | None = None) -> RunResult:
    """``r`` as the default 0.1 s samples saw it: none fell at its peak, so their highest anon
    + shmem + kernel is ``sampled_own`` MiB and their highest total falls short of the peak."""
    m = r.memory
    assert m.peaks is not None and m.peak_bytes is not None
    file = m.peaks.file or 0
    at = MemoryParts(total=int(sampled_own * MIB) + file, anon=int(sampled_own * MIB),
                     file=file, shmem=0, kernel=0)  # fmt: skip
    limit_bytes = m.limit_bytes if limit is None else limit * MIB
    mem = dataclasses.replace(m, at_peak=at, floor_bytes=int(sampled_own * MIB),
                              limit_bytes=limit_bytes)  # fmt: skip
    return dataclasses.replace(r, memory=mem)


def test_samples_that_missed_the_peaks_do_not_give_the_order() -> None:
    """``-m a,b`` at 0.1 s: the samples' anon + shmem + kernel read a 18.3 MiB, b 41.0 MiB (a
    tester's 7.9 and 6.8: b below a) where the kernel's peaks were 217.6 and 72.0 MiB with
    189.1 and 3.7 MiB of page cache; the peak less it gives 28.5 and 68.3 MiB, as 0.01 s."""
    a = missed(run("a", 28, 189), 18.3)
    b = missed(run("b", 68, 4), 41.0)
    fr = first_reads([a, b])
    assert fr is not None
    assert fr.own_bytes == (("a", 28 * MIB), ("b", 68 * MIB))
    assert fr.unknown == ()
    # A sample's anon + shmem + kernel above the peak less the most page cache: that sample's.
    c = missed(run("c", 30, 20), 33.0)
    assert dict(first_reads([a, b, c]).own_bytes)["c"] == 33 * MIB  # type: ignore[union-attr]


def test_a_run_that_met_its_limit_between_samples_has_no_figure_and_is_named() -> None:
    """At its limit the kernel drops page cache, so the cache at the peak may be more than
    any sample held: b's peak less it is not its own, and the note says so."""
    a = missed(run("a", 28, 200), 18.3)
    b = missed(run("b", 68, 4), 41.0, limit=72)  # the peak, 72 MiB, is the limit
    fr = first_reads([a, b])
    assert fr is not None
    assert (fr.own_bytes, fr.unknown) == ((("a", 28 * MIB),), ("b",))
    note = tables([a, b])["Ranking by peak memory"].notes[0]
    assert note.endswith(
        "without page cache (the peak less its page cache, medians): a 28.0MiB; not known "
        "for b (met its memory limit between samples, where the kernel drops page cache: a "
        "finer --interval reads it); --warmup 1 reads them before the measured runs"
    )


def test_the_first_models_own_later_runs_are_the_cache_hit_it_asserts() -> None:
    """``-m small,big`` where only small reads a 100 MiB file: big holding none says nothing
    of whether it read them, so the note says "if"; small's own second run held none of
    it, which is a cache hit of the same files."""
    runs = [run("small", 20, 100), run("big", 68, 0), run("small", 20, 0), run("big", 68, 0)]
    fr = first_reads(runs)
    assert fr is not None and fr.again_bytes == 0
    assert tables(runs)["Ranking by peak memory"].notes[0].startswith(
        "small ran first: its peak memory counts 100.0MiB of page cache (small's own later "
        "runs found them cached; the later runs held at most 0B: if the other models read "
        "the same files, they found them cached too), which this ranking charges to it"
    )
    # -m big,small: big ran first with no page cache, so no run was charged for another's.
    assert first_reads([run("big", 68, 0), run("small", 20, 100)]) is None


def outlier_warnings(runs: list[RunResult], warmup: int | None = 0) -> list[str]:
    from edgeprof.analysis.compare import summarize

    (cell,) = summarize(runs, warmup=warmup)
    return [w for w in cell.warnings() if "is an outlier" in w]


def test_a_first_run_outlier_made_of_its_page_cache_is_said_so_with_the_fix() -> None:
    """A tester's ``--repeat 3`` of a script reading a 200 MiB file cold, then holding 50
    MiB: peaks 258 / 58 / 58 MiB, file 200 / 0 / 0 MiB.  Run 1 had been "an outlier …
    (re-run the cell, add repeats, or measure on a quieter machine)", none of which changes
    it; now the advice names the page cache and --warmup 1, for the peak and the average."""
    runs = [run("p", 58, 200), run("p", 58, 0), run("p", 58, 0)]
    peak, avg = outlier_warnings(runs)
    assert peak == (
        "run 1 is an outlier in peak memory: 258.0MiB, 345% above the median 58.0MiB; the "
        "median and the ranking's order discount it; the mean ± sd, the ranking's ≈ test, its "
        "[95%] brackets and compare's change include it, and a note says the test without it "
        "beside a ≈ or a compare verdict of no change (not noise: it held 200.0MiB of page "
        "cache, the later runs at most 0B; the first run to read a file is charged its page "
        "cache and the later ones find it cached, so consider --warmup 1)"
    )
    assert avg.startswith("run 1 is an outlier in avg memory: 158.0MiB, 172% above")
    assert avg.endswith("(not noise: it held 200.0MiB of page cache, the later runs at most "
                        "0B; the first run to read a file is charged its page cache and the "
                        "later ones find it cached, so consider --warmup 1)")  # fmt: skip
    # Where warm-ups ran and the cache still came, the advice says more of them.
    (peak, _) = outlier_warnings(runs, warmup=1)
    assert peak.endswith("so the 1 warm-up run(s) before it did not remove it: consider "
                         "--warmup 2 or more)")  # fmt: skip


def test_an_outlier_the_page_cache_does_not_account_for_keeps_the_noise_advice() -> None:
    noise = "(re-run the cell, add repeats, or measure on a quieter machine)"
    # Run 1 held 50 MiB of page cache, but its peak is 150 MiB above the median: the cache
    # (plus the rule's 10 % of the median, 5.8 MiB) does not explain it.
    (peak, *_) = outlier_warnings([run("p", 158, 50), run("p", 58, 0), run("p", 58, 0)])
    assert peak.startswith("run 1 is an outlier in peak memory: 208.0MiB") and peak.endswith(noise)
    # Within the cache and the slack it is the cache's: 50 + 5.8 MiB against 55 MiB.
    (peak, *_) = outlier_warnings([run("p", 63, 50), run("p", 58, 0), run("p", 58, 0)])
    assert "not noise: it held 50.0MiB of page cache" in peak
    # The outlier is not the first run (the first, with its own peak, held 17 MiB): noise.
    (peak, *_) = outlier_warnings(
        [run("p", 41, 17), run("p", 57, 0), run("p", 258, 0), run("p", 59, 0), run("p", 58, 0)]
    )
    assert peak.startswith("run 3 is an outlier in peak memory") and peak.endswith(noise)
    # No page cache told apart (under 16 MiB more than the later runs'): noise.
    (peak, *_) = outlier_warnings([run("p", 243, 15), run("p", 58, 0), run("p", 58, 0)])
    assert peak.endswith(noise)
