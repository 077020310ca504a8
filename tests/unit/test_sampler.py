"""sampler.py: per-interval CPU %, windowed peak CPU, time-weighted averages, CSV, the thread."""

from __future__ import annotations

import csv
import errno
import os
import select
import threading
import time
from pathlib import Path

import pytest

from edgeprof.errors import BackendError
from edgeprof.measure.integral import RECENT_READINGS
from edgeprof.measure.memory import SampledMaxima
from edgeprof.measure.samplefile import SampleWriter
from edgeprof.measure.sampler import (
    MIN_AVG_READINGS,
    PEAK_WINDOW_S,
    Sampler,
    SeriesStats,
)
from edgeprof.model import Counters, Sample
from tests.conftest import HANG_S


def feed(stats: SeriesStats, rows: list[tuple[float, Counters]]) -> list[Sample]:
    return [stats.add(t, c) for t, c in rows]


def throttled_usage_us(ms: int, on_ms: int = 50, period_ms: int = 100) -> int:
    """CPU time of a task running ``on_ms`` of every ``period_ms`` (a 0.5-CPU quota)."""
    full, part = divmod(ms, period_ms)
    return 1000 * (full * on_ms + min(part, on_ms))


def test_cpu_pct_per_interval() -> None:
    s = SeriesStats()
    out = feed(
        s,
        [
            (0.0, Counters(cpu_usage_us=0)),
            (0.1, Counters(cpu_usage_us=50_000)),
            (0.3, Counters(cpu_usage_us=250_000)),
            (0.4, Counters(cpu_usage_us=250_000)),
            (0.5, Counters(cpu_usage_us=450_000)),
        ],
    )
    assert out[0].cpu_pct is None  # no interval before the first sample
    assert [o.cpu_pct for o in out[1:]] == pytest.approx([50.0, 100.0, 0.0, 200.0])
    assert [o.cpu_usage_s for o in out] == pytest.approx([0.0, 0.05, 0.25, 0.25, 0.45])
    assert s.count == 5
    assert s.last_t == 0.5


def test_cpu_pct_zero_interval_gives_none() -> None:
    s = SeriesStats()
    feed(s, [(1.0, Counters(cpu_usage_us=0))])
    assert s.add(1.0, Counters(cpu_usage_us=10)).cpu_pct is None


@pytest.mark.parametrize("window", [0.1, PEAK_WINDOW_S])
def test_peak_cpu_of_throttled_series_is_its_quota(window: float) -> None:
    """1 ms samples of a group running 50 ms on / 50 ms off: 50 %, not the 100 % bursts."""
    s = SeriesStats(peak_window_s=window)
    pcts = [
        s.add(ms / 1000, Counters(cpu_usage_us=throttled_usage_us(ms))).cpu_pct
        for ms in range(0, 3001)
    ]
    assert max(p for p in pcts if p is not None) == pytest.approx(100.0)  # the raw bursts
    peak = s.cpu_peak_pct()
    assert peak is not None
    assert peak == pytest.approx(50.0, abs=1.0)


def test_peak_cpu_window_shorter_than_the_bursts_sees_them() -> None:
    s = SeriesStats(peak_window_s=0.01)
    for ms in range(0, 1001):
        s.add(ms / 1000, Counters(cpu_usage_us=throttled_usage_us(ms)))
    assert s.cpu_peak_pct() == pytest.approx(100.0, abs=1.0)


def test_peak_cpu_finds_a_burst_in_a_longer_run() -> None:
    """150 ms at 2 CPUs inside 2 s of 0.25 CPU: a 100 ms window sees 200 %, 1 s sees ~47.5 %."""

    def usage(ms: int) -> int:
        burst = min(max(ms - 1000, 0), 150)  # 1000..1150 ms at 200 %
        return 250 * ms + 1750 * burst

    fine, coarse = SeriesStats(peak_window_s=0.1), SeriesStats(peak_window_s=1.0)
    for ms in range(0, 2001, 10):
        c = Counters(cpu_usage_us=usage(ms))
        fine.add(ms / 1000, c)
        coarse.add(ms / 1000, c)
    assert fine.cpu_peak_pct() == pytest.approx(200.0, abs=0.5)
    # Best 1 s window holds the whole burst: 0.25 s + 0.15 s·1.75 = 0.5125 s of CPU.
    assert coarse.cpu_peak_pct() == pytest.approx(51.25, abs=0.5)


def test_run_shorter_than_one_window_has_no_windowed_peak() -> None:
    """The runner then reports the exact average (see test_runner)."""
    s = SeriesStats(peak_window_s=1.0)
    feed(s, [(t / 100, Counters(cpu_usage_us=t * 5000)) for t in range(0, 50)])
    assert s.cpu_peak_pct() is None
    s.add(1.0, Counters(cpu_usage_us=500_000))  # now one full window: 50 %
    assert s.cpu_peak_pct() == pytest.approx(50.0)


def test_peak_cpu_window_uses_exact_window_edges() -> None:
    s = SeriesStats(peak_window_s=0.1)
    feed(
        s,
        [
            (0.0, Counters(cpu_usage_us=0)),
            (0.1, Counters(cpu_usage_us=30_000)),  # 30 %
            (0.2, Counters(cpu_usage_us=100_000)),  # 70 %
            (0.3, Counters(cpu_usage_us=110_000)),  # 10 %
        ],
    )
    assert s.cpu_peak_pct() == pytest.approx(70.0)


def test_time_weighted_average_memory_is_trapezoidal() -> None:
    s = SeriesStats()
    rows = [
        (0.0, Counters(memory_current=100, memory_inactive_file=40)),
        (1.0, Counters(memory_current=300, memory_inactive_file=100)),
        (3.0, Counters(memory_current=300, memory_inactive_file=0)),
        (4.0, Counters(memory_current=60, memory_inactive_file=80)),
    ]
    out = feed(s, rows)
    # To the exit at 5 s, the last reading held: ((100+300)/2·1 + (300+300)/2·2 +
    # (300+60)/2·1 + 60·1) / 5 = (200 + 600 + 180 + 60) / 5
    assert s.avg_memory(5.0) == 208
    # working set = current − inactive_file, never negative: 60, 200, 300, 0
    assert [o.working_set_bytes for o in out] == [60, 200, 300, 0]
    # ((60+200)/2 + (200+300)/2·2 + (300+0)/2 + 0·1) / 5 = (130 + 500 + 150) / 5
    assert s.avg_working_set(5.0) == 156
    peaks = s.maxima(5.0)
    assert (peaks.memory, peaks.working_set) == (300, 300)
    assert [o.memory_bytes for o in out] == [100, 300, 300, 60]


def test_average_weights_by_time_not_by_sample_count() -> None:
    s = SeriesStats()
    feed(
        s,
        [(0.0, Counters(memory_current=1000))]
        + [(0.001 * i, Counters(memory_current=1000)) for i in range(1, 10)]  # dense burst
        + [(0.01, Counters(memory_current=0)), (10.0, Counters(memory_current=0))],
    )
    # area 9 (9 ms at 1000) + 0.5 (the 1 ms ramp down) over 10 s = 0.95; a per-sample mean: 833
    assert s.avg_memory(10.0) == 1


def test_an_average_needs_two_readings_while_the_run_lived() -> None:
    """The first reading is the workload starting, the ones at or after the exit are of its
    memory freed: an average takes MIN_AVG_READINGS (2) between them.  One had been enough
    (a reviewer's run got 776 KiB for a script that averaged 21.0 MiB read every 1 ms)."""
    assert MIN_AVG_READINGS == 2
    s = SeriesStats()
    s.add(0.5, Counters(memory_current=1234, memory_inactive_file=None))
    assert s.avg_memory(0.55) is None and s.avg_working_set(0.55) is None
    s.add(0.6, Counters(memory_current=1234, memory_inactive_file=None), final=True)
    assert s.readings_within(0.55) == 0 and s.avg_memory(0.55) is None
    s = SeriesStats()
    for t in (0.5, 0.6):
        s.add(t, Counters(memory_current=1234, memory_inactive_file=None))
    s.add(0.7, Counters(memory_current=1234, memory_inactive_file=None), final=True)
    assert s.readings_within(0.65) == 1 and s.avg_memory(0.65) is None  # one: too few
    s = SeriesStats()
    for t in (0.5, 0.6, 0.62):
        s.add(t, Counters(memory_current=1234, memory_inactive_file=None))
    s.add(0.7, Counters(memory_current=1234, memory_inactive_file=None), final=True)
    assert s.readings_within(0.65) == 2
    assert s.avg_memory(0.65) == 1234
    assert s.avg_working_set(0.65) == 1234  # no inactive_file: the whole usage
    assert s.cpu_peak_pct() is None


def test_a_reading_between_the_exit_and_the_stop_is_not_of_the_run() -> None:
    """The tester's 0.10 s run read every 0.1 s: its start (1.3 MB), a reading 0.3 ms after
    its main process's exit (401 KiB, no task left) and the final one.  Counted as a reading
    of the run, it made the average 395.4 KiB against a 56 MiB peak: now the run has none."""
    s = SeriesStats()
    s.add(0.002151, Counters(memory_current=1_298_432))
    s.add(0.102304, Counters(memory_current=401_408))
    s.add(0.102873, Counters(memory_current=401_408), final=True)
    assert s.readings_within(0.102) == 0
    assert s.avg_memory(0.102) is None
    # A longer run: the reading after its exit at 2.4 s had pulled its last interval down
    # ((500 + 1000 + 250) / 3 = 583); the run's memory is held from 2 s to the exit instead.
    s = SeriesStats()
    feed(s, [(0.0, Counters(memory_current=0)), (1.0, Counters(memory_current=1000)),
             (2.0, Counters(memory_current=1000)), (2.5, Counters(memory_current=0))])  # fmt: skip
    s.add(3.0, Counters(memory_current=0), final=True)
    assert s.readings_within(2.4) == 2
    assert s.avg_memory(2.4) == 792  # (500 + 1000 + 0.4 · 1000) / 2.4


def test_the_sampler_takes_its_last_reading_as_the_final_one() -> None:
    class Recording(SeriesStats):
        def __init__(self) -> None:
            super().__init__()
            self.finals: list[bool] = []

        def add(self, t: float, c: Counters, final: bool = False) -> Sample:
            self.finals.append(final)
            return super().add(t, c, final)

    stats = Recording()
    sp = Sampler(Counters, interval=0.001, t0=time.monotonic(), stats=stats)
    sp.start()
    deadline = time.monotonic() + HANG_S
    while stats.count < 3 and sp.error is None:  # on the grid, whatever ticks it gets
        assert time.monotonic() < deadline
        time.sleep(0.001)
    sp.stop()
    assert sp.error is None
    assert stats.finals == [False] * (len(stats.finals) - 1) + [True]


def test_none_fields_stay_none() -> None:
    s = SeriesStats()
    out = feed(s, [(0.0, Counters()), (0.5, Counters()), (1.5, Counters())])
    for o in out:
        assert o.cpu_usage_s is None
        assert o.cpu_pct is None
        assert o.memory_bytes is None
        assert o.working_set_bytes is None
        assert o.io_read_bytes is None
        assert o.net_rx_bytes is None
        assert o.pids is None
    assert s.cpu_peak_pct() is None
    assert s.avg_memory(1.5) is None
    assert s.avg_working_set(1.5) is None
    assert s.maxima(1.5) == SampledMaxima(None, None, None, None, None)
    assert s.peak_pids is None
    assert s.count == 3


def test_usage_gap_does_not_invent_a_rate() -> None:
    s = SeriesStats()
    out = feed(
        s,
        [
            (0.0, Counters(cpu_usage_us=0)),
            (0.1, Counters(cpu_usage_us=None)),
            (0.2, Counters(cpu_usage_us=100_000)),
            (0.3, Counters(cpu_usage_us=150_000)),
        ],
    )
    assert [o.cpu_pct for o in out[:3]] == [None, None, None]
    assert out[3].cpu_pct == pytest.approx(50.0)


def test_peaks_of_pids_and_io_passthrough() -> None:
    s = SeriesStats()
    out = feed(
        s,
        [
            (0.0, Counters(pids_current=1, io_read_bytes=0, io_write_bytes=5)),
            (0.1, Counters(pids_current=7, io_read_bytes=10, io_write_bytes=5)),
            (0.2, Counters(pids_current=2, io_read_bytes=20, io_write_bytes=9)),
        ],
    )
    assert s.peak_pids == 7
    assert [(o.io_read_bytes, o.io_write_bytes, o.pids) for o in out] == [
        (0, 5, 1),
        (10, 5, 7),
        (20, 9, 2),
    ]


def test_sample_writer_header_and_rows(tmp_path: Path) -> None:
    path = tmp_path / "samples.csv"
    w = SampleWriter(path)
    s = SeriesStats()
    w.write(s.add(0.0, Counters(cpu_usage_us=0, memory_current=4096, pids_current=1)))
    w.write(s.add(0.1, Counters(cpu_usage_us=25_000, memory_current=8192, io_read_bytes=7)))
    w.write(s.add(0.2, Counters()))
    w.close()
    w.close()  # idempotent
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == Sample.columns()
    assert rows[0] == [
        "t_s",
        "cpu_usage_s",
        "cpu_pct",
        "memory_bytes",
        "working_set_bytes",
        "io_read_bytes",
        "io_write_bytes",
        "net_rx_bytes",
        "net_tx_bytes",
        "pids",
    ]
    assert len(rows) == 4
    first = dict(zip(rows[0], rows[1], strict=True))
    assert first["t_s"] == "0.000000"
    assert first["cpu_pct"] == ""  # None → empty cell
    assert first["memory_bytes"] == "4096"
    assert first["pids"] == "1"
    second = dict(zip(rows[0], rows[2], strict=True))
    assert float(second["cpu_pct"]) == pytest.approx(25.0)
    assert second["cpu_usage_s"] == "0.025000"
    assert second["io_read_bytes"] == "7"
    assert rows[3][1:] == [""] * 9


def test_sample_writer_flushes_during_the_run(tmp_path: Path) -> None:
    path = tmp_path / "samples.csv"
    w = SampleWriter(path, flush_s=0.0)
    w.write(SeriesStats().add(0.0, Counters(memory_current=1)))
    assert len(path.read_text().splitlines()) == 2  # visible before close: a crash keeps it
    w.close()


@pytest.mark.parametrize("spoil", ["remove", "truncate", "append"])
def test_a_samples_file_another_process_spoils_is_given_up(tmp_path: Path, spoil: str) -> None:
    """The workload removed or emptied its run's samples.csv (a tester's): the removed one had
    still been announced as written, the emptied one went on at the writer's offset (NUL
    bytes, no header).  The writer stops at the first flush that finds the file changed."""
    path = tmp_path / "samples.csv"
    w = SampleWriter(path, flush_s=0.0)
    w.write(SeriesStats().add(0.0, Counters(memory_current=1)))
    written = path.stat().st_size
    if spoil == "remove":
        path.unlink()
    elif spoil == "truncate":
        path.write_bytes(b"")
    else:
        with path.open("ab") as f:
            f.write(b"x")
    w.write(SeriesStats().add(0.1, Counters(memory_current=2)))
    w.close()
    said = {
        "remove": "removed or replaced",
        "truncate": f"changed (0 bytes where edgeprof had written {written})",
        "append": f"changed ({written + 1} bytes where edgeprof had written {written})",
    }
    assert w.spoiled == said[spoil]
    if spoil != "remove":
        assert path.stat().st_size == (0 if spoil == "truncate" else written + 1)  # no more


def test_a_change_after_the_last_flush_is_seen_at_close(tmp_path: Path) -> None:
    path = tmp_path / "samples.csv"
    w = SampleWriter(path, flush_s=0.0)
    w.write(SeriesStats().add(0.0, Counters(memory_current=1)))
    path.unlink()
    w.close()
    assert w.spoiled == "removed or replaced"


def test_a_full_disk_keeps_every_whole_row_a_partial_write_put_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush that runs out of space part-way has written whole rows a reader may have seen:
    the file is cut at the last of them, not back to where the flush began."""
    samples = [SeriesStats().add(i * 0.1, Counters(memory_current=4096 * i)) for i in range(20)]
    whole = SampleWriter(tmp_path / "whole.csv")
    for s in samples:
        whole.write(s)
    whole.close()
    full = (tmp_path / "whole.csv").read_bytes()

    header = len(full.split(b"\r\n", 1)[0]) + 2
    w = SampleWriter(tmp_path / "s.csv", flush_s=3600.0)  # the header now, the rows at close
    room = [150]
    real = os.write

    def write(fd: int, data: bytes) -> int:  # the disk as a tmpfs fills: what fits, then ENOSPC
        n = min(len(data), room[0])
        if n == 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        room[0] -= n
        return real(fd, data[:n])

    for s in samples:
        w.write(s)
    monkeypatch.setattr(os, "write", write)
    w.close()
    monkeypatch.undo()
    got = (tmp_path / "s.csv").read_bytes()
    cut = full.rfind(b"\r\n", 0, header + 150) + 2
    assert got == full[:cut] and got.endswith(b"\r\n")
    assert w.rows == got.count(b"\r\n") - 1 >= 2  # the header is no row
    assert w.error is not None and w.error.errno == errno.ENOSPC


def test_sampler_sample_stamps_the_midpoint_of_the_read() -> None:
    ticks = iter([100.0, 100.004, 100.010, 100.012])
    reads = []

    def read() -> Counters:
        reads.append(1)
        return Counters(cpu_usage_us=len(reads) * 1000)

    stats = SeriesStats()
    sp = Sampler(read, interval=0.01, t0=99.0, stats=stats, clock=lambda: next(ticks))
    sp.sample()
    sp.sample()
    sp.stop()  # never started: only releases the wake-up pipe
    assert stats.count == 2
    assert stats.last_t == pytest.approx(1.011)
    assert stats._prev is not None and stats._prev[0] == pytest.approx(1.011)


def test_sampler_thread_takes_about_the_expected_samples(tmp_path: Path) -> None:
    """On the 1 ms grid, every tick between the first sample and the last one on the grid is
    either taken or counted as missed, whatever the machine's load: the bounds come from the
    samples' own times, not from the test's sleep (a floor of half the ticks of the test's
    0.3 s, then of 0.9 of them, failed when the thread started late or was preempted before
    stop(): neither is a tick the sampler skipped)."""
    lock = threading.Lock()
    calls = 0

    def read() -> Counters:
        nonlocal calls
        with lock:
            calls += 1
        return Counters(cpu_usage_us=calls * 500, memory_current=calls)

    stats = SeriesStats()
    writer = SampleWriter(tmp_path / "s.csv")
    start = time.monotonic()
    sp = Sampler(read, interval=0.001, t0=start, stats=stats, writer=writer)
    sp.start()
    while stats.count < 20 and time.monotonic() - start < 60:
        time.sleep(0.01)
    time.sleep(0.1)  # more ticks, however many the machine gives the thread
    sp.stop()
    elapsed = time.monotonic() - start
    writer.close()
    assert not sp._thread.is_alive()
    assert sp.error is None
    assert stats.count == calls  # including the final sample taken at stop()
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert len(lines) == stats.count + 1
    times = [float(line.split(",")[0]) for line in lines[1:]]
    assert times == sorted(times)
    # Never more than the grid allows over the whole run.
    assert 20 <= stats.count <= elapsed / 0.001 + 2
    # The grid from the first sample to the last one on it (the final sample at stop() is
    # off the grid): each tick taken or missed, ±1 for the read stamped at its midpoint.  The
    # ticks missed after the last grid sample are counted before the thread sleeps.
    on_grid = stats.count - 1
    ticks_to_last = (times[-2] - times[0]) / 0.001 + 1
    ticks_to_stop = (times[-1] - times[0]) / 0.001 + 1
    counted = on_grid + sp.missed
    assert ticks_to_last - 2 <= counted <= ticks_to_stop + 2, (sp.missed, times[-2:], times[0])
    after = calls
    time.sleep(0.02)
    assert calls == after  # stopped means stopped


def test_sampler_skips_missed_ticks_instead_of_bursting() -> None:
    """A read that takes 5 ms on a 1 ms grid: at most one sample per 5 ms, and each sample
    on the grid skips the four or more ticks its read took (counted against the samples
    taken and the time that passed, not a fixed 0.2 s that a loaded machine may not give
    the thread)."""

    def read() -> Counters:
        time.sleep(0.005)  # slower than the 1 ms interval
        return Counters()

    stats = SeriesStats()
    start = time.monotonic()
    sp = Sampler(read, interval=0.001, t0=start, stats=stats)
    sp.start()
    while stats.count < 10 and time.monotonic() - start < 60:
        time.sleep(0.01)
    sp.stop()
    elapsed = time.monotonic() - start
    assert 10 <= stats.count <= elapsed / 0.005 + 2
    # Every sample but the final one (at stop) skipped at least 5 ms - 1 ms of ticks.
    assert sp.missed >= 3 * (stats.count - 1), (sp.missed, stats.count)


def test_sampler_records_a_read_error_and_stops() -> None:
    n = 0

    def read() -> Counters:
        nonlocal n
        n += 1
        if n == 3:
            raise BackendError("counter file vanished")
        return Counters()

    stats = SeriesStats()
    sp = Sampler(read, interval=0.001, t0=time.monotonic(), stats=stats)
    sp.start()
    sp._thread.join(timeout=HANG_S)  # it stops on its own; the limit only ends a hang
    assert not sp._thread.is_alive()
    sp.stop()
    assert isinstance(sp.error, BackendError)
    assert stats.count == 2


def test_sampler_releases_its_descriptors() -> None:
    before = len(os.listdir("/proc/self/fd"))
    sp = Sampler(Counters, interval=0.001, t0=time.monotonic(), stats=SeriesStats())
    sp.start()
    time.sleep(0.01)
    sp.stop()
    sp.stop()  # idempotent
    assert len(os.listdir("/proc/self/fd")) == before


class FakeBatch:
    """A pure-Python stand-in for the native loop: the grid from ``due`` to ``until``."""

    def __init__(self, missed_per_batch: int = 0) -> None:
        self.calls: list[tuple[float, float, float]] = []
        self.returned_due: list[float] = []
        self.missed_per_batch = missed_per_batch
        self.usage = 0

    def sample_batch(
        self, interval: float, due: float, until: float, stop_fd: int
    ) -> tuple[list[tuple[float, Counters]], float, bool, int]:
        self.calls.append((interval, due, until))
        rows = []
        while due <= until:
            self.usage += 1000
            rows.append((due, Counters(cpu_usage_us=self.usage, memory_current=len(self.calls))))
            due += interval
        stopped = bool(select.select([stop_fd], [], [], max(0.0, until - time.monotonic()))[0])
        self.returned_due.append(due)
        return rows, due, stopped, self.missed_per_batch


def test_sampler_batch_path_drains_rows_and_stops(tmp_path: Path) -> None:
    batch = FakeBatch(missed_per_batch=2)
    finals = []

    def read() -> Counters:  # only the final sample after stop() comes from read()
        finals.append(1)
        return Counters(cpu_usage_us=10**9)

    stats = SeriesStats()
    writer = SampleWriter(tmp_path / "s.csv")
    t0 = time.monotonic()
    sp = Sampler(read, interval=0.01, t0=t0, stats=stats, writer=writer, batch=batch)
    sp.start()
    time.sleep(0.22)
    sp.stop()
    elapsed = time.monotonic() - t0
    writer.close()
    assert sp.error is None
    assert len(finals) == 1
    n_batches = len(batch.calls)
    # Drained every DRAIN_S (50 ms), not every sample: at most one batch per 50 ms that
    # passed (a late wake-up only makes fewer, longer batches).
    assert 1 <= n_batches <= elapsed / 0.05 + 2, (n_batches, elapsed)
    assert all(until > due for _, due, until in batch.calls)
    assert sp.missed == 2 * n_batches
    rows = sum(round((u - d) / 0.01 + 0.5) for _, d, u in batch.calls)
    assert stats.count == pytest.approx(rows + 1, abs=n_batches)
    # the batches continue one grid: each starts where the previous one left off
    assert [due for _, due, _ in batch.calls[1:]] == batch.returned_due[:-1]
    assert {interval for interval, _, _ in batch.calls} == {0.01}
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert len(lines) == stats.count + 1
    assert float(lines[1].split(",")[0]) == pytest.approx(batch.calls[0][1] - t0, abs=1e-5)


def test_the_average_takes_the_readings_at_the_events_between_the_samples() -> None:
    """The tutorial's batch-2 run (0.232 s, read every 0.1 s): its grid read 0.3, 7.5 and
    7.6 MB around its ``load`` and ``infer`` phases (at 0.107-0.152 and 0.152-0.190 s), whose
    readings at their begin and end lines read 7.5 to 52.3 MB.  From the grid alone its
    average was 5.91 MB; its phases alone (26.8 MB for 45 ms, 51.1 MB for 37 ms) hold 13.4 MB
    of the run's 0.232 s.  The readings as the sampler and the events thread took them (the
    events' came before the grid's row stamped 0.2158 s, drained with its batch)."""
    s = SeriesStats()
    s.add(0.005922, Counters(memory_current=262_144))
    s.add(0.107788, Counters(memory_current=7_487_488))
    for t, v in ((0.112281, 7_487_488), (0.152394, 52_314_112), (0.152594, 52_314_112),
                 (0.1903, 49_848_320)):  # fmt: skip
        s.add_event(t, Counters(memory_current=v))
    s.add(0.215831, Counters(memory_current=7_634_944))
    s.add(0.232546, Counters(memory_current=159_744), final=True)
    # Trapezoids over the seven readings (4 298 097.8 byte·s), the last held to the exit
    # (124 724.4) and the first back to the spawn (1 552.4), over the 0.232167 s.
    assert s.avg_memory(0.232167) == 19_056_863
    assert s.avg_working_set(0.232167) == 19_056_863
    # What the warnings count are samples: the start's and the after-exit one left out.
    assert (s.readings_within(0.232167), s.memory_readings) == (2, 4)


def test_a_reading_at_an_event_takes_its_place_among_the_samples_drained_after_it() -> None:
    """The sampler's rows come in batches: a row stamped after an event's reading can be
    added before it.  Here the event (1000 at 0.5 s) comes after the row at 0.75 s."""
    s = SeriesStats()
    for t in (0.0, 0.25, 0.75):
        s.add(t, Counters(memory_current=0))
    assert s.avg_memory(1.0) == 0
    s.add_event(0.5, Counters(memory_current=1000, memory_inactive_file=400))
    assert s.avg_memory(1.0) == 250  # the triangle from 0.25 to 0.75 s: 0.5 · 1000 / 2
    assert s.avg_working_set(1.0) == 150
    assert s.readings_within(1.0) == 2  # samples: the event's is not one
    assert s.maxima(1.0).memory == 0  # nor a peak (the phases' raise the run's: loop.py)


def test_an_events_reading_makes_the_second_one_an_average_takes() -> None:
    s = SeriesStats()
    s.add(0.0, Counters(memory_current=100))
    s.add(0.4, Counters(memory_current=100))
    assert s.avg_memory(1.0) is None  # one reading while it ran
    s.add_event(0.6, Counters(memory_current=300))
    # (0.4 · 100 + 0.2 · 200 + 0.4 · 300) / 1.0
    assert s.avg_memory(1.0) == 200


def test_the_average_is_over_the_run_from_its_spawn() -> None:
    """Its first reading, 0.1 s after the spawn, held back to it: the average is the byte·s
    of the run over its wall time.  Begun at the first reading, a first reading 16 ms into a
    0.218 s run weighted the rest 8 % more."""
    s = SeriesStats()
    for t, v in ((0.1, 0), (0.2, 1000), (0.3, 1000)):
        s.add(t, Counters(memory_current=v))
    assert s.avg_memory(0.4) == 625  # (0.1 · 0 + 0.1 · 500 + 0.1 · 1000 + 0.1 · 1000) / 0.4


def test_more_readings_than_are_kept_apart_fold_into_the_same_average() -> None:
    s = SeriesStats()
    n = RECENT_READINGS * 3
    for i in range(n + 1):
        s.add(i * 0.01, Counters(memory_current=1000 * (i % 2)))
    # A saw-tooth between 0 and 1000: 500 over each of the n intervals, then the last
    # reading (0: n is even) held for 0.01 s to the exit.
    end = n * 0.01 + 0.01
    assert s.avg_memory(end) == round(n * 0.01 * 500 / end) == 499
    assert s.readings_within(end) == n
