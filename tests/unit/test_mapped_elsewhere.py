"""Files a run mapped from page cache charged to other groups (shared libraries): the raw
reading (backends/_mapped.py), its arithmetic (measure/memory.MappedTracker), and what the
memory line and the limit verdict say of it (analysis/headroom.py, report/memory.py).

The case: torch's libraries (80 MiB of ``RssFile``) were cached by another group, so a run
under ``--memory 256m`` peaked at 184.7 MiB and was told "fits, 71.3MiB to spare" while its
processes' resident set was over the limit."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from edgeprof.analysis.fit_bounds import Bounds
from edgeprof.analysis.fit_times import Timing
from edgeprof.analysis.headroom import (
    Headroom,
    limit_fit,
    mapped_elsewhere,
    over_device,
    worst_fit,
)
from edgeprof.backends import _mapped
from edgeprof.backends.capabilities import MappedReading
from edgeprof.measure.memory import MAPPED_PERIOD_S, MappedTracker
from edgeprof.model import MemoryStats, RunResult
from edgeprof.report.memory import headroom
from edgeprof.report.results import render_plain
from edgeprof.sweeps.fit_outcome import FitOutcome

from .test_headroom import limited

MIB = 1 << 20


def still() -> float:
    """A clock that stands still."""
    return 0.0


def test_tracker_keeps_the_most_rss_file_beyond_the_group_and_reads_at_a_coarse_cadence() -> None:
    now = [0.0]
    readings = iter(
        [
            MappedReading(rss_file=10 * MIB, group_mapped=12 * MIB, read=1, listed=1),  # < 0
            MappedReading(rss_file=90 * MIB, group_mapped=10 * MIB, read=2, listed=2),
            MappedReading(rss_file=50 * MIB, group_mapped=10 * MIB, read=1, listed=3),
        ]
    )
    calls = []

    def read() -> MappedReading | None:
        calls.append(now[0])
        return next(readings)

    t = MappedTracker(read, period_s=0.001, clock=lambda: now[0])
    assert t.elsewhere is None  # not measured: not 0
    t.tick()
    assert t.elsewhere == 0  # floored: the group had more mapped than the processes
    for step in range(1, 30):  # a sample every 10 ms: at most one reading a period
        now[0] = step / 100
        t.tick()
    assert calls == [0.0, 0.25]  # MAPPED_PERIOD_S, not the 1 ms samples
    assert MAPPED_PERIOD_S == 0.25
    assert t.elsewhere == 80 * MIB
    now[0] = 0.6
    t.tick()
    assert t.elsewhere == 80 * MIB and t.readings == 3 and t.cut_short == 1  # the max
    # Samples rarer than the period: one reading per sample, no more.
    assert MappedTracker(read, period_s=2.0)._period == 2.0


def test_a_tracker_without_readings_leaves_the_figure_unmeasured() -> None:
    t = MappedTracker(lambda: None, period_s=0.1)
    t.tick()
    assert t.elsewhere is None and t.readings == 0


def _proc(tmp: Path, rss_kb: dict[int, int]) -> Path:
    for pid, kb in rss_kb.items():
        (tmp / str(pid)).mkdir()
        (tmp / str(pid) / "status").write_text(f"Name:\tx\nRssAnon:\t 1 kB\nRssFile:\t{kb} kB\n")
    return tmp


def test_read_mapped_takes_the_largest_rss_file_and_the_groups_own_mapped_bytes(
    tmp_path: Path,
) -> None:
    """Not the processes' sum: 4 workers forked from a parent that imported torch share its
    libraries' pages, and a sum read them as 4 times the libraries (a reviewer's reading)."""
    proc = tmp_path / "proc"
    proc.mkdir()
    _proc(proc, {11: 81920, 12: 2048, 14: 81920})
    stat = tmp_path / "memory.stat"
    stat.write_text("cache 1000\ntotal_mapped_file 299008\ntotal_rss 5\n")
    # A clock that stands still: the time budget (MAX_READ_S, 5 ms) is not what is tested
    # here, and a loaded host had taken longer than it over these reads (read: 1, not 3).
    r = _mapped.read_mapped(
        lambda: [11, 12, 13, 14], stat, "total_mapped_file", proc=proc, clock=still
    )
    # 13 exited between the listing and its read: not counted, not an error.
    assert r == MappedReading(rss_file=81920 * 1024, group_mapped=299008, read=3, listed=4)
    # A stat file without the key (an old kernel), or a group gone: no reading.
    assert _mapped.read_mapped(lambda: [11], stat, "file_mapped", proc=proc) is None
    assert _mapped.read_mapped(lambda: [11], tmp_path / "gone", "file_mapped", proc=proc) is None
    assert _mapped.read_mapped(lambda: [13], stat, "total_mapped_file", proc=proc) is None


def test_read_mapped_reads_at_most_the_cap_of_processes(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    n = _mapped.MAX_PROCESSES + 8
    _proc(proc, {pid: 4 for pid in range(1, n + 1)})
    stat = tmp_path / "memory.stat"
    stat.write_text("file_mapped 0\n")
    r = _mapped.read_mapped(
        lambda: list(range(1, n + 1)), stat, "file_mapped", proc=proc, clock=still
    )  # the cap, not the time budget (a loaded host had read 27 of 32 in it)
    assert r is not None and (r.read, r.listed) == (_mapped.MAX_PROCESSES, n)
    # Out of time after the first process: the rest are skipped.
    ticks = iter(range(100))
    r = _mapped.read_mapped(
        lambda: list(range(1, n + 1)), stat, "file_mapped", proc=proc,
        clock=lambda: float(next(ticks)),
    )  # fmt: skip
    assert r is not None and r.read == 1


def _torch_run(elsewhere: int | None, peak: int = round(184.7 * MIB)) -> RunResult:
    r = limited(peak=peak, floor=round(180.1 * MIB), limit=256 * MIB)
    mem: MemoryStats = dataclasses.replace(r.memory, mapped_elsewhere_bytes=elsewhere)
    return dataclasses.replace(r, memory=mem)


def test_a_cells_worst_run_is_one_that_fits_only_because_of_others_cache() -> None:
    """Over the limit on a device: worse than a run that fits at the limit, whatever the
    order ("fits at the limit … leaves 106.0MiB (the worst of 2 runs)" had been said)."""
    warm = _torch_run(round(79.8 * MIB))
    at = limited(peak=256 * MIB, floor=150 * MIB, events_max=1, limit=256 * MIB)
    at_fit = limit_fit(at)
    assert at_fit is not None and at_fit.status is Headroom.AT_LIMIT and not at_fit.warm_only
    for runs in ([warm, at], [at, warm], [at, warm, at]):
        f, n = worst_fit(runs)
        assert f is not None and f.warm_only and n == len(runs)
        assert (headroom(f, n) or "").startswith("memory limit 256.0MiB: fits here only because")
    oom = limited(peak=256 * MIB, oom_kills=1, exit_code=137, limit=256 * MIB)
    f, _ = worst_fit([warm, oom])
    assert f is not None and f.status is Headroom.DOES_NOT_FIT  # an OOM is worse still


def test_a_run_that_fits_only_because_its_libraries_were_cached_elsewhere_is_told_so() -> None:
    r = _torch_run(round(79.8 * MIB))
    f = limit_fit(r)
    assert f is not None and f.status is Headroom.FITS and f.warm_only
    assert f.elsewhere == round(79.8 * MIB)
    assert headroom(f) == (
        "memory limit 256.0MiB: fits here only because 79.8MiB of the files it mapped were "
        "cached before it, charged to other groups (e.g. shared libraries): peak 184.7MiB + "
        "those = 264.5MiB, 8.5MiB over the limit; on a device they are its own"
    )
    text = render_plain([r])
    assert "fits, peak" not in text
    assert (
        "(at the sample whose parts add up highest); not in it: 79.8MiB of files it mapped "
        "that were cached before it, charged to other groups (e.g. shared libraries), which "
        "a device charges to the run"
    ) in text


def test_files_mapped_elsewhere_within_the_limit_leave_less_to_spare() -> None:
    f = limit_fit(_torch_run(40 * MIB))
    assert f is not None and not f.warm_only
    assert headroom(f) == (
        "memory limit 256.0MiB: fits, peak 184.7MiB, 71.3MiB to spare (28%); it also mapped "
        "40.0MiB of files cached before it, charged to other groups (e.g. shared libraries): "
        "its own on a device, which leaves 31.3MiB"
    )
    # Left under the kernel's charging slack with them: at the edge on a device, as fit says
    # (run had said "fits … which leaves 1012.0KiB" beside fit's "972.0KiB short").
    f = limit_fit(_torch_run(int(70.8 * MIB)))
    assert f is not None
    assert (headroom(f) or "").endswith(
        "which leaves 512.0KiB, under the 2.6MiB the kernel may charge ahead: at the edge on "
        "a device (edgeprof fit finds a limit with room)"
    )


def test_a_few_mib_mapped_elsewhere_is_not_said_and_unmeasured_is_not_zero() -> None:
    # A bare interpreter maps ~6 MiB of cached code: below the threshold, the old line.
    for small in (None, 0, 6 * MIB):
        r = _torch_run(small)
        assert mapped_elsewhere(r) is None
        assert headroom(limit_fit(r)) == (
            "memory limit 256.0MiB: fits, peak 184.7MiB, 71.3MiB to spare (28%)"
        )
        assert "not in it" not in render_plain([r])
    # The threshold follows the kernel's batching on a large host (2 × 64 pages a CPU).
    big = dataclasses.replace(
        _torch_run(20 * MIB), host=dataclasses.replace(_torch_run(0).host, cpus=64)
    )
    assert mapped_elsewhere(big) is None and mapped_elsewhere(_torch_run(20 * MIB)) == 20 * MIB


def _checkpointing_run() -> RunResult:
    """The tester's ``train.py --hidden 4096`` under 420 MiB: its peak met the limit, the
    kernel dropping the checkpoints' page cache; floor 355.6 MiB, 99.9 MiB of torch's
    libraries mapped elsewhere (455.5 MiB on a device)."""
    r = limited(peak=420 * MIB, floor=round(355.6 * MIB), limit=420 * MIB, events_max=3)
    mem = dataclasses.replace(r.memory, mapped_elsewhere_bytes=round(99.9 * MIB))
    return dataclasses.replace(r, memory=mem)


def test_a_run_at_the_limit_that_fits_only_because_of_its_libraries_is_not_told_it_fits() -> None:
    r = _checkpointing_run()
    f = limit_fit(r)
    assert f is not None and f.status is Headroom.AT_LIMIT and f.warm_only
    assert over_device(round(355.6 * MIB), round(99.9 * MIB), 420 * MIB) == round(35.5 * MIB)
    assert headroom(f) == (
        "memory limit 420.0MiB: fits here only because 99.9MiB of the files it mapped were "
        "cached before it, charged to other groups (e.g. shared libraries): anon + shmem + "
        "kernel 355.6MiB + those = 455.5MiB, 35.5MiB over the limit; on a device they are "
        "its own"
    )
    text = render_plain([r])
    assert "fits at the limit" not in text and "leaves" not in text
    # fit holds the same job to the same rule: its answer (the floor, here) and the files
    # mapped elsewhere against the same 420 MiB do not fit either.
    ref = (dataclasses.replace(r, memory=dataclasses.replace(r.memory, limit_bytes=None)),)
    o = FitOutcome(
        "train.py", ref, Timing("wall", 2.0), 0.0,
        Bounds(round(355.6 * MIB), 420 * MIB, 420 * MIB, 2 * MIB), (), round(355.6 * MIB),
        0.10, 0.20,
    )  # fmt: skip
    assert o.elsewhere == round(99.9 * MIB)
    assert o.device_need == round(455.5 * MIB) and not o.fits


def test_a_run_at_the_limit_whose_libraries_fit_too_is_told_what_they_leave() -> None:
    r = _checkpointing_run()
    mem = dataclasses.replace(r.memory, mapped_elsewhere_bytes=40 * MIB)
    r = dataclasses.replace(r, memory=mem)
    f = limit_fit(r)
    assert f is not None and f.status is Headroom.AT_LIMIT and not f.warm_only
    assert headroom(f) == (
        "memory limit 420.0MiB: fits at the limit: the kernel dropped page cache to make room "
        "without slowing it (stalled 0.0% of the wall time); anon + shmem + kernel 355.6MiB "
        "leaves 64.4MiB; it also mapped 40.0MiB of files cached before it, charged to other "
        "groups (e.g. shared libraries): its own on a device, which leaves 24.4MiB"
    )


def test_the_page_cache_at_the_peak_is_no_part_of_what_the_files_mapped_elsewhere_add_to() -> None:
    """A user's numpy script: peak 223.0 MiB of which 8.0 MiB page cache, 12.6 MiB mapped
    elsewhere, under the 230.3 MiB fit answered for it: ``run`` had said "peak 223.0MiB +
    those = 235.6MiB, 5.3MiB over", where a device's limit drops the cache (fit's probes did)."""
    from edgeprof.model.memory import MemoryParts

    r = limited(peak=round(223.0 * MIB), floor=round(214.8 * MIB), limit=round(230.3 * MIB))
    peaks = MemoryParts(None, round(214.2 * MIB), 8 * MIB, 0, round(0.6 * MIB), None)
    mem = dataclasses.replace(r.memory, peaks=peaks, mapped_elsewhere_bytes=round(12.6 * MIB))
    f = limit_fit(dataclasses.replace(r, memory=mem))
    assert f is not None and f.status is Headroom.FITS and not f.warm_only
    assert (headroom(f) or "").endswith(
        "it also mapped 12.6MiB of files cached before it, charged to other groups (e.g. shared "
        "libraries): its own on a device, which leaves 2.7MiB beside the peak less its page cache"
    )
    # Under a limit the run's own memory and those exceed, it is still told.
    mem = dataclasses.replace(mem, limit_bytes=227 * MIB)
    f = limit_fit(dataclasses.replace(r, memory=mem))
    assert f is not None and f.warm_only
    assert "peak 223.0MiB less its page cache, 215.0MiB, + those = 227.6MiB, 614.4KiB over" in (
        headroom(f) or ""
    )
