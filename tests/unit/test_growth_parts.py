"""What the memory's growth is fitted to (anon + shmem + kernel, not the page cache a limit
drops) and when it is given per iteration (measure/growth.py, measure/sampler.py), on
synthetic readings fed through the sampler's aggregates."""

from __future__ import annotations

import dataclasses
import json

import pytest

from edgeprof.measure.growth import (
    ITERATIONS_COVER,
    growth_warning,
    memory_growth,
    rate,
    with_growth,
)
from edgeprof.measure.sampler import SeriesStats
from edgeprof.model import Counters, MemoryGrowth, RunResult
from edgeprof.report.memory import growing
from edgeprof.report.saved_notes import fit_growth

from .conftest import make_result

MiB = 2**20


def read_through(parts: object, n: int = 60) -> SeriesStats:
    """A sampler's aggregates fed a reading every 0.1 s from 0 to ``n`` / 10 s; ``parts``
    gives each reading's counters from its time."""
    assert callable(parts)
    s = SeriesStats()
    for i in range(n + 1):
        s.add(i / 10, parts(i / 10))
    return s


def reading(anon: float, file: float = 0, shmem: float = 0, kernel: float = MiB / 4) -> Counters:
    """A cgroup's reading: the usage is the parts' sum, ``file`` including ``shmem`` as both
    kernels count it."""
    return Counters(
        memory_current=round(anon + file + shmem + kernel), memory_anon=round(anon),
        memory_file=round(file + shmem), memory_shmem=round(shmem), memory_kernel=round(kernel),
    )  # fmt: skip


def test_a_file_read_into_page_cache_is_no_growth() -> None:
    """The I/O tester's cold read of 500 MiB: the usage rose with ``file`` at the disk's
    speed while anon stayed at 5.8 MiB, and the run was warned "+256.1MiB/s, not levelled
    off" (the same read under ``--memory 256m`` fit).  Here 64 MiB read over the run: the
    usage's own readings are growth; what a limit cannot drop is flat."""
    s = read_through(lambda t: reading(5.8 * MiB, file=64 * MiB * t / 6))
    usage = [(t, float(64 * MiB * t / 6 + 6.05 * MiB)) for t, _ in s.trace.points()]
    assert memory_growth(usage, 6.0) is not None  # what had been fitted: the usage
    assert not s.trace.page_cache
    # anon, and the kernel part less what the page cache brings with it (4 % of it).
    assert [v for _, v in s.trace.points()][-1] == round(5.8 * MiB)
    assert memory_growth(s.trace.points(), 6.0, page_cache=s.trace.page_cache) is None


def test_a_written_files_kernel_memory_is_no_growth() -> None:
    """A user's 400 MiB file written and fsynced: anon flat at 7.7 MiB, the kernel part
    rising with the page cache to 11.1 MiB (buffer heads, 2.8 % of it), which a limit
    reclaims with the cache; the run had been warned "memory grew … +5.0MiB/s"."""
    def written(t: float) -> Counters:
        file = 400 * MiB * t / 6
        return reading(7.7 * MiB, file=file, kernel=0.4 * MiB + 0.028 * file)

    s = read_through(written)
    assert memory_growth(s.trace.points(), 6.0, page_cache=s.trace.page_cache) is None
    # A kernel part that grows with no page cache (handles, sockets) still counts.
    s = read_through(lambda t: reading(7.7 * MiB, kernel=0.4 * MiB + 2 * MiB * t))
    g = memory_growth(s.trace.points(), 6.0)
    assert g is not None and g.per_s == pytest.approx(2 * MiB)


def test_an_anon_leak_beside_page_cache_is_growth_of_the_leak_alone() -> None:
    """The last round's slow leak (0.5 MiB/s on a 200 MiB baseline) while 64 MiB of a file
    is read: still caught, at its own rate, the page cache's left out of it."""
    s = read_through(lambda t: reading(MiB * (200 + t / 2), file=64 * MiB * t / 6))
    g = memory_growth(s.trace.points(), 6.0, page_cache=s.trace.page_cache)
    assert g is not None and not g.page_cache
    assert g.per_s == pytest.approx(MiB / 2)
    assert g.rise_bytes == round(MiB / 2 * 2.9)


def test_tmpfs_and_shared_memory_growth_counts() -> None:
    """A file written to /dev/shm is in ``file`` too, but no limit can drop it (no swap):
    16 MiB/s of it is growth."""
    s = read_through(lambda t: reading(6 * MiB, shmem=16 * MiB * t))
    g = memory_growth(s.trace.points(), 6.0, page_cache=s.trace.page_cache)
    assert g is not None and g.per_s == pytest.approx(16 * MiB)
    assert growth_warning(g) == (
        "memory grew through the run's second half: +16.0MiB/s, not levelled off: a limit "
        "that fits this run's length may not fit a longer one"
    )


def test_kernel_memory_growth_counts() -> None:
    s = read_through(lambda t: reading(6 * MiB, kernel=MiB * (1 + 4 * t)))
    g = memory_growth(s.trace.points(), 6.0)
    assert g is not None and g.per_s == pytest.approx(4 * MiB)


def test_without_a_split_the_usage_is_fitted_and_the_warning_says_page_cache_is_in_it() -> None:
    """Docker's stats API gives the usage alone: fitted as before, said to include page
    cache, here and in the verdict's words."""
    s = read_through(lambda t: Counters(memory_current=round(MiB * (6 + 16 * t))))
    assert s.trace.page_cache
    r = with_growth(make_result(warnings=()), s.trace.points(), 6.0, None, s.trace.page_cache)
    g = r.memory.growth
    assert g is not None and g.page_cache and g.per_s == pytest.approx(16 * MiB)
    assert r.warnings == (
        "memory grew through the run's second half: +16.0MiB/s of the usage, page cache "
        "included (this backend does not split the usage, and a limit can drop page cache), "
        "not levelled off: a limit that fits this run's length may not fit a longer one",
    )
    assert growing(g) == (
        "its memory was still growing (+16.0MiB/s of the usage, page cache included)"
    )


def test_page_cache_is_kept_in_result_json_and_an_older_file_reads_as_the_usage() -> None:
    """A file written before the field fitted the usage (page cache in it): read so."""
    g = MemoryGrowth(per_s=MiB, per_iteration=None, from_s=3.0, to_s=6.0, rise_bytes=3 * MiB,
                     noise_bytes=0)  # fmt: skip
    r = make_result()
    r = dataclasses.replace(r, memory=dataclasses.replace(r.memory, growth=g))
    d = json.loads(json.dumps(r.to_dict()))
    assert d["memory"]["growth"]["page_cache"] is False
    assert RunResult.from_dict(d).memory.growth == g
    del d["memory"]["growth"]["page_cache"]
    older = RunResult.from_dict(d).memory.growth
    assert older == dataclasses.replace(g, page_cache=True)
    fit_doc = {"memory_growth": dataclasses.asdict(g)}
    assert fit_growth(fit_doc) == g
    assert fit_growth({"memory_growth": {**fit_doc["memory_growth"], "page_cache": 1}}) is None


def leak(t: float) -> float:
    """2 MiB at the start, 16 MiB more a second."""
    return MiB * (2 + 16 * t)


def series(f: object, n: int = 60) -> list[tuple[float, float]]:
    """Readings every 0.1 s from 0.1 s to ``n`` / 10 s."""
    assert callable(f)
    return [(i / 10, float(f(i / 10))) for i in range(1, n + 1)]


def test_iterations_after_the_rise_give_no_growth_per_iteration() -> None:
    """The I/O tester's ``phased.py``: a ``load`` phase's rise, then 20 iterations that
    allocated nothing in the window's last tenth; the rise had been divided by the 16 that
    ended in the window: "+6.02MiB/iteration".  Here the rise runs to 5.7 s of a 3.1 to
    6.0 s window, then 30 iterations of 10 ms: the memory stopped rising when they began,
    so a longer run (more of them) needs no more, and there is no growth to warn of
    (:func:`_before_iterations`).  Where the iterations are not known, the rise is all
    there is to read: growth per second alone."""
    spans = [(5.7 + k / 100, 5.7 + (k + 1) / 100) for k in range(30)]
    assert memory_growth(series(lambda t: leak(min(t, 5.7))), 6.0, spans) is None
    g = memory_growth(series(lambda t: leak(min(t, 5.7))), 6.0, None)
    assert g is not None and g.per_s == pytest.approx(16 * MiB)
    assert g.per_iteration is None
    assert rate(g) == "+16.0MiB/s"


def test_growth_per_iteration_needs_the_iterations_to_cover_most_of_the_window() -> None:
    """ITERATIONS_COVER (3/4) of the 3.1 to 6.0 s window: iterations of 0.1 s from the start
    that end at 5.2 s cover 2.1 s of it (72 %), at 5.3 s 2.2 s (76 %).  (Iterations that
    begin in the second half are judged over their own span: see the next test.)"""
    assert ITERATIONS_COVER == 0.75

    def to(last: int) -> list[tuple[float, float]]:
        return [(i / 10, (i + 1) / 10) for i in range(last)]

    g = memory_growth(series(leak), 6.0, to(52))
    assert g is not None and g.per_iteration is None
    g = memory_growth(series(leak), 6.0, to(53))
    # The line over 3.1 to 5.3 s, over the 23 iterations that ended in it.
    assert g is not None and g.per_iteration == pytest.approx(16 * MiB * 2.2 / 23)


def test_growth_per_iteration_is_measured_over_the_iterations_own_span() -> None:
    """A 40 MiB load from 3.1 to 3.6 s, then iterations of 0.1 s leaking 0.4 MiB each to
    6.0 s: they began in the run's second half, so their own span is judged (its second
    half, 4.8 to 6.0 s): 0.4 MiB an iteration and 4 MiB a second, not the load's tilt."""

    def load_then_leak(t: float) -> float:
        return MiB * (10 + 80 * min(max(t - 3.1, 0.0), 0.5) + 4 * max(t - 3.6, 0.0))

    spans = [(i / 10, (i + 1) / 10) for i in range(36, 60)]
    g = memory_growth(series(load_then_leak), 6.0, spans)
    assert g is not None
    assert g.per_s == pytest.approx(4 * MiB)
    assert (g.from_s, g.to_s) == (4.8, 6.0)
    # 1.2 s of the line over the 13 iterations that ended in it, one of them begun before
    # it: within a tenth of the 0.4 MiB each leaked.
    assert g.per_iteration == pytest.approx(4 * MiB * 1.2 / 13)
    assert g.per_iteration == pytest.approx(0.4 * MiB, rel=0.1)



def test_tmpfs_files_left_after_the_run_are_said() -> None:
    """A user's 50 MiB left in /dev/shm read "fits" with no word: the group's shmem once
    its processes are gone is files on a tmpfs that outlive the run."""
    from edgeprof.measure.assemble import _shm_left

    said = _shm_left(Counters(memory_shmem=50 * MiB), on_host=True)
    assert said is not None and said.startswith("50.0MiB of files it wrote on a tmpfs")
    assert _shm_left(Counters(memory_shmem=64 * 1024), on_host=True) is None  # a lock file
    assert _shm_left(Counters(memory_shmem=50 * MiB), on_host=False) is None  # a container's
    assert _shm_left(Counters(), on_host=True) is None
