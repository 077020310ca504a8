"""The squeeze's steering (``fit --one-run``) with scripted readings: what it asks the kernel
to reclaim, when it backs off, and which levels count as held."""

from __future__ import annotations

import threading

import pytest

from edgeprof.backends.capabilities import ReclaimReading
from edgeprof.errors import BackendError
from edgeprof.measure.squeeze import (
    BACKOFF_INTERVALS,
    PROBE_FRACTION,
    STALL_THRESHOLD,
    Controller,
    Squeezer,
)

MIB = 1 << 20
DT = 0.02


def page(n: float) -> int:
    return int(n) // 4096 * 4096


def reading(current_mib: float, file_mib: float, stall_us: int | None = 0) -> ReclaimReading:
    return ReclaimReading(int(current_mib * MIB), int(file_mib * MIB), stall_us)


def test_a_quiet_group_is_asked_for_its_new_cache_and_a_probe_of_the_rest() -> None:
    c = Controller()
    # First interval: no base yet, only the probe.
    assert c.ask(0.0, reading(50, 20)) == page(PROBE_FRACTION * 20 * MIB)
    c.done(0.0, reading(50, 20), MIB, True, reading(49, 19))
    # 10 MiB of cache streamed in since: all of it, plus the probe of what there is.
    assert c.ask(DT, reading(59, 29)) == page(10 * MIB + PROBE_FRACTION * 29 * MIB)
    # The level the first reclaim left was followed by a quiet interval: held.
    assert c.held == (0.0, 49 * MIB)


def test_a_stall_drops_the_level_backs_off_and_starts_from_what_came_back() -> None:
    c = Controller()
    c.ask(0.0, reading(50, 20))
    c.done(0.0, reading(50, 20), 10 * MIB, True, reading(40, 10))
    # 2 ms stalled in 20 ms (10 %): the 40 MiB level was too low.
    assert c.ask(DT, reading(45, 15, stall_us=2000)) == 0
    assert c.held is None and c.backoffs == 1
    for i in range(2, BACKOFF_INTERVALS + 1):  # no reclaim while the pages come back
        assert c.ask(i * DT, reading(48, 18, stall_us=2000)) == 0
    # The first step after the back-off asks for nothing beyond the level that came back
    # but the probe, scaled down by what stall there still was.
    t = (BACKOFF_INTERVALS + 1) * DT
    assert c.ask(t, reading(48, 18, stall_us=2000)) == page(PROBE_FRACTION * 18 * MIB)
    c.done(t, reading(48, 18, stall_us=2000), MIB, False, reading(47, 17, stall_us=2000))
    c.end()  # no stall seen after it: held
    assert c.held == (t, 47 * MIB)
    assert (c.steps, c.short, c.reclaimed) == (2, 1, 11 * MIB)


def test_the_probe_shrinks_as_the_stall_nears_the_threshold() -> None:
    c = Controller()
    c.ask(0.0, reading(50, 20))
    half = int(STALL_THRESHOLD / 2 * DT * 1e6)  # half the threshold's stall in the interval
    assert c.ask(DT, reading(50, 20, stall_us=half)) == page(PROBE_FRACTION * 20 * MIB / 2)


def test_the_highest_level_held_is_kept() -> None:
    c = Controller()
    for i, level in enumerate([30, 60, 45]):
        c.ask(i * DT, reading(level + 1, 10))
        c.done(i * DT, reading(level + 1, 10), MIB, True, reading(level, 9))
    c.end()
    assert c.held == (DT, 60 * MIB)


def test_without_pressure_readings_it_never_backs_off() -> None:
    c = Controller()
    c.ask(0.0, reading(50, 20, None))
    c.done(0.0, reading(50, 20, None), 10 * MIB, True, reading(40, 10, None))
    assert c.ask(DT, reading(41, 11, None)) > 0
    assert c.backoffs == 0 and c.held == (0.0, 40 * MIB)


class ScriptedReclaim:
    """A group whose cache grows 1 MiB per interval (at the interval's first read) and loses
    what is reclaimed."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.anon, self.file = 30 * MIB, 0
        self.asked: list[int] = []
        self.reads = 0
        self.fail_after = fail_after
        self.enough = threading.Event()
        self._after_reclaim = False

    def read(self) -> ReclaimReading:
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise BackendError("cannot read memory.current: No such file or directory")
        if not self._after_reclaim:
            self.file += MIB
        self._after_reclaim = False
        return ReclaimReading(self.anon + self.file, self.file, 0)

    def reclaim(self, nbytes: int) -> bool:
        self.asked.append(nbytes)
        self._after_reclaim = True
        self.file -= min(self.file, nbytes)
        if len(self.asked) >= 5:
            self.enough.set()
        return True

    def close(self) -> None:
        pass


def test_the_squeezer_thread_holds_the_group_near_what_it_cannot_drop() -> None:
    rec = ScriptedReclaim()
    s = Squeezer(rec, t0=0.0, interval=0.001)
    s.start()
    assert rec.enough.wait(10)
    s.stop()
    q = s.result(floor=None, stall_s=0.0)
    assert s.error is None and q.steps == len(rec.asked) >= 5
    # Every reclaim takes the cache that grew since the last: held at the anonymous memory
    # and the first interval's cache, of which the probe took 5 %.
    assert 30 * MIB <= q.held_bytes <= 31 * MIB and q.held_t_s is not None
    assert q.interval_s == 0.001 and q.threshold == STALL_THRESHOLD


def test_the_estimate_is_never_below_the_runs_floor() -> None:
    s = Squeezer(ScriptedReclaim(), t0=0.0)
    q = s.result(floor=100 * MIB, stall_s=None)  # never started: nothing held
    assert (q.held_bytes, q.held_t_s, q.steps) == (100 * MIB, None, 0)


@pytest.mark.parametrize("stopped", [False, True])
def test_a_group_gone_under_the_squeezer_is_an_error_only_before_the_stop(stopped: bool) -> None:
    rec = ScriptedReclaim(fail_after=3)
    s = Squeezer(rec, t0=0.0, interval=0.001)
    if stopped:
        s._stop.set()
    s.start()
    s._thread.join(10)
    s.stop()
    assert (s.error is None) == stopped


def test_cache_added_during_a_reclaim_is_asked_for_next_time() -> None:
    c = Controller()
    c.ask(0.0, reading(50, 20))
    # Asked for 8 MiB of 20; 3 MiB more streamed in while the kernel reclaimed.
    c.done(0.0, reading(50, 20), 8 * MIB, True, reading(45, 15))
    assert c.ask(DT, reading(45, 15)) == page(3 * MIB + PROBE_FRACTION * 15 * MIB)


def test_a_group_with_nothing_left_to_drop_is_held_where_it_is() -> None:
    c = Controller()
    assert c.ask(0.0, reading(40, 0)) == 0
    assert c.ask(DT, reading(70, 0)) == 0
    assert c.held == (DT, 70 * MIB) and c.steps == 0
    # Not while stalled.
    assert c.ask(2 * DT, reading(90, 0, stall_us=10_000)) == 0
    assert c.held == (DT, 70 * MIB)
