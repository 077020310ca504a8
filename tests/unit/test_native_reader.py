"""The native helper and the pure-Python reader give identical Counters on fake files."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from edgeprof.backends import cgroupfs as fs
from edgeprof.backends.cgroupfs import CounterSet, Field, Kind, Source
from edgeprof.model import Counters
from tests.conftest import require

V2_FILES = {
    "cpu.stat": "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n"
    "nr_periods 40\nnr_throttled 12\nthrottled_usec 345678\n",
    "memory.current": "209715200\n",
    "memory.peak": "314572800\n",
    "memory.stat": "anon 1\nfile 2\ninactive_anon 3\ninactive_file 4096\nactive_file 5\n",
    "memory.events.local": "low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\n",
    "io.stat": "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
    "254:0 rbytes=100 wbytes=200 rios=3 wios=4 dbytes=0 dios=0\n",
    "pids.current": "3\n",
}
V1_FILES = {
    "cpuacct.usage": "1500000000\n",
    "cpu.stat": "nr_periods 10\nnr_throttled 4\nthrottled_time 250000000\n",
    "memory.limit_in_bytes": "max\n",
    "blkio": "254:0 Read 4096\n254:0 Write 8192\n254:0 Sync 0\n254:0 Async 12288\n"
    "8:0 Read 1\n8:0 Write 2\nTotal 12291\n",
}


def v2_sources(d: Path) -> list[Source]:
    return [
        Source(
            d / "cpu.stat",
            Kind.KV,
            (
                Field("cpu_usage_us", "usage_usec"),
                Field("cpu_user_us", "user_usec"),
                Field("cpu_system_us", "system_usec"),
                Field("nr_periods", "nr_periods"),
                Field("nr_throttled", "nr_throttled"),
                Field("throttled_us", "throttled_usec"),
            ),
        ),
        Source(d / "memory.current", Kind.INT, (Field("memory_current"),)),
        Source(d / "memory.peak", Kind.INT, (Field("memory_peak"),), per_sample=False),
        Source(d / "memory.stat", Kind.KV, (Field("memory_inactive_file", "inactive_file"),)),
        Source(
            d / "memory.events.local", Kind.KV, (Field("oom_kills", "oom_kill"),), per_sample=False
        ),
        Source(d / "io.stat", Kind.IOSTAT, (Field("io_read_bytes"), Field("io_write_bytes"))),
        Source(d / "pids.current", Kind.INT, (Field("pids_current"),)),
        Source(d / "absent.file", Kind.INT, (Field("net_rx_bytes"),)),
    ]


def v1_sources(d: Path) -> list[Source]:
    return [
        Source(d / "cpuacct.usage", Kind.INT, (Field("cpu_usage_us", divisor=1000),)),
        Source(
            d / "cpu.stat",
            Kind.KV,
            (
                Field("nr_periods", "nr_periods"),
                Field("nr_throttled", "nr_throttled"),
                Field("throttled_us", "throttled_time", divisor=1000),
            ),
        ),
        Source(d / "memory.limit_in_bytes", Kind.INT, (Field("memory_current"),)),
        Source(d / "blkio", Kind.BLKIO, (Field("io_read_bytes"), Field("io_write_bytes"))),
    ]


@pytest.fixture(autouse=True)
def native_built() -> None:
    require(fs.NATIVE_AVAILABLE, "the native helper is not built in this installation")


def write(d: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (d / name).write_text(text)


def test_v2_layout_identical(tmp_path: Path) -> None:
    write(tmp_path, V2_FILES)
    native, python = CounterSet(v2_sources(tmp_path), True), CounterSet(v2_sources(tmp_path), False)
    a, b = native.read(), python.read()
    assert (
        a
        == b
        == Counters(
            cpu_usage_us=1234567,
            cpu_user_us=1000000,
            cpu_system_us=234567,
            nr_periods=40,
            nr_throttled=12,
            throttled_us=345678,
            memory_current=200 << 20,
            memory_peak=300 << 20,
            memory_inactive_file=4096,
            oom_kills=1,
            io_read_bytes=4196,
            io_write_bytes=8392,
            pids_current=3,
        )
    )
    # The per-sample set leaves the totals-only files out, identically.
    assert native.sample() == python.sample() == a._replace(memory_peak=None, oom_kills=None)


def test_v1_layout_identical_with_ns_and_max(tmp_path: Path) -> None:
    write(tmp_path, V1_FILES)
    a = CounterSet(v1_sources(tmp_path), True).read()
    b = CounterSet(v1_sources(tmp_path), False).read()
    assert a == b
    assert a.cpu_usage_us == 1_500_000 and a.throttled_us == 250_000
    assert a.memory_current == -1  # "max"
    assert (a.io_read_bytes, a.io_write_bytes) == (4097, 8194)  # Total and Sync not counted


@pytest.mark.parametrize(
    ("name", "kind", "skip", "want"),
    [
        ("io.stat", Kind.IOSTAT, (), (4196, 8392)),
        ("io.stat", Kind.IOSTAT, ("8:0",), (100, 200)),
        ("io.stat", Kind.IOSTAT, ("254:0",), (4096, 8192)),
        ("io.stat", Kind.IOSTAT, ("8:", "54:0", "8:01", "18:0"), (4196, 8392)),
        ("blkio", Kind.BLKIO, (), (4097, 8194)),
        ("blkio", Kind.BLKIO, ("8:0",), (4096, 8192)),
        ("blkio", Kind.BLKIO, ("254:0", "8:0"), (0, 0)),
        ("blkio", Kind.BLKIO, ("8:", "254:01"), (4097, 8194)),
    ],
)
def test_disks_left_out_identically(
    tmp_path: Path, name: str, kind: Kind, skip: tuple[str, ...], want: tuple[int, int]
) -> None:
    """A source's ``skip`` disks are left out of the I/O sums by both readers, v1 and v2;
    only a whole device number matches (``8:`` and ``18:0`` are not ``8:0``)."""
    write(tmp_path, {**V2_FILES, **V1_FILES})
    sources = [Source(tmp_path / name, kind, (Field("io_read_bytes"), Field("io_write_bytes")),
                      skip=skip)]  # fmt: skip
    native, python = CounterSet(sources, True), CounterSet(sources, False)
    a, b = native.read(), python.read()
    native.close()
    python.close()
    assert a == b
    assert (a.io_read_bytes, a.io_write_bytes) == want


def test_files_change_between_reads(tmp_path: Path) -> None:
    write(tmp_path, V2_FILES)
    native = CounterSet(v2_sources(tmp_path), True)
    first = native.read().memory_current
    (tmp_path / "memory.current").write_text("1\n")
    assert (first, native.read().memory_current) == (200 << 20, 1)


def test_missing_keys_and_empty_files_are_none(tmp_path: Path) -> None:
    write(tmp_path, {**V2_FILES, "cpu.stat": "usage_usec 5\n", "pids.current": ""})
    a = CounterSet(v2_sources(tmp_path), True).read()
    b = CounterSet(v2_sources(tmp_path), False).read()
    assert a == b
    assert a.cpu_usage_us == 5 and a.nr_throttled is None and a.pids_current is None


def test_native_sampling_loop_rows_match_reads(tmp_path: Path) -> None:
    write(tmp_path, V2_FILES)
    cs = CounterSet(v2_sources(tmp_path), True)
    assert cs.batch_reader is not None
    r, w = os.pipe()
    try:
        start = time.monotonic()
        rows, due, stopped, missed = cs.batch_reader.sample_batch(0.002, start, start + 0.05, r)
        end = time.monotonic()
        # Every tick of the grid read or counted missed, up to the first past its end (or
        # past a late last read: a fixed ceiling of 26 fails on one 2 ms late wake-up).
        assert not stopped and rows
        assert due == pytest.approx(start + 0.002 * (len(rows) + missed), abs=1e-6)
        assert start + 0.05 < due + 1e-6 and due <= end + 0.002 + 1e-6, (start, due, end)
        assert all(row == cs.sample() for _, row in rows)
        times = [t for t, _ in rows]
        # Read inside the call, on or after their ticks; the last tick is due by the end of
        # the grid (a late wake-up may read it later, so the bound is the call's return).
        assert times == sorted(times) and start <= times[0] and times[-1] <= end
        assert due >= times[-1]
        os.write(w, b"x")  # a stop request ends the loop at once: long before its next tick
        t = time.monotonic()
        rows, _, stopped, _ = cs.batch_reader.sample_batch(10.0, time.monotonic(), t + 60, r)
        assert stopped and time.monotonic() - t < 10
    finally:
        os.close(r)
        os.close(w)
