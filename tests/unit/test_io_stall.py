"""Time a run waited on block I/O (``io.pressure``): read into ``result.io``, and said when
it is a notable share of the wall time, beside (not instead of) the CPU-contention warning.
A tester's 500 MiB cold read at 100 MiB/s took 5.15 s with 0.32 s of CPU time and was told
only that other tasks held it off its CPUs for 0.61 s; its I/O wait was 3.47 s."""

from __future__ import annotations

from edgeprof import Limits, profile
from edgeprof.measure.contention import held_time
from edgeprof.measure.io_stall import IO_STALL_WARN_FRACTION, io_stall_share, io_stall_warning
from edgeprof.measure.memory import STALL_WARN_FRACTION
from edgeprof.model import Counters, IoStats, RunResult
from tests.fakes import FakeBackend, Script, linear


def _io(stall_s: float | None) -> IoStats:
    return IoStats(read_bytes=524_288_000, write_bytes=0, net_rx_bytes=None, net_tx_bytes=None,
                   stall_s=stall_s, stall_full_s=stall_s)  # fmt: skip


def test_the_line_says_the_wait_and_its_share_of_the_wall_time() -> None:
    # The tester's figures: 3.474106 s of a 5.15 s run.
    w = io_stall_warning(_io(3.474106), 5.15)
    assert w == (
        "the run waited on block I/O at least 3.47s (67.5% of its wall time): that part of its "
        "times is this host's storage's, not its CPU's (--read-bps, --write-bps, --read-iops "
        "and --write-iops set a device's storage speed)"
    )


def test_the_threshold_is_the_memory_stalls() -> None:
    """A run whose time went to storage is told so at the share a run its memory limit
    slowed is: over 5 % of the wall time, not at it."""
    assert IO_STALL_WARN_FRACTION == STALL_WARN_FRACTION == 0.05
    assert io_stall_share(_io(0.05), 1.0) is None
    assert io_stall_share(_io(0.051), 1.0) == 0.051
    assert io_stall_warning(_io(0.05), 1.0) is None
    assert io_stall_warning(_io(0.051), 1.0) is not None


def test_a_short_wait_is_said_in_its_unit() -> None:
    """A 200 MiB cold read from this host's disk waited 68.7 ms of 290 ms."""
    w = io_stall_warning(_io(0.068697), 0.290195)
    assert w is not None
    assert w.startswith("the run waited on block I/O at least 68.7ms (23.7% of its")


def test_no_pressure_file_or_no_wall_time_is_not_a_share() -> None:
    assert io_stall_share(_io(None), 5.0) is None  # a v1-only host, the process backend
    assert io_stall_share(_io(0.5), 0.0) is None
    # ``some`` cannot exceed the wall time: a counter that spans more (a container's
    # set-up) is no share of the run's.
    assert io_stall_share(_io(2.0), 1.0) is None


def waits_on_storage(share: float, held: float) -> Script:
    """A run at 6 % CPU that waits on block I/O ``share`` of its time and is held off its
    CPUs ``held`` of it by other tasks (``cpu.pressure``'s ``full``)."""
    base = linear(6.0)

    def script(t: float) -> Counters:
        return base(t)._replace(
            io_some_us=int(t * share * 1e6),
            io_full_us=int(t * share * 1e6),
            cpu_some_us=int(t * held * 1e6),
            cpu_full_us=int(t * held * 1e6),
        )

    return script


def _said(r: RunResult) -> str:
    assert r.io.stall_s is not None
    share = 100 * r.io.stall_s / r.wall_s
    return f"the run waited on block I/O at least {held_time(r.io.stall_s)} ({share:.1f}%"


def test_a_run_slowed_by_storage_on_a_busy_host_is_told_both() -> None:
    be = FakeBackend(waits_on_storage(0.65, 0.12))
    r = profile(["sleep", "0.2"], Limits(), backend=be, interval=0.05)
    assert r.io.stall_s is not None and r.io.stall_full_s == r.io.stall_s
    assert r.io.stall_s > IO_STALL_WARN_FRACTION * r.wall_s
    (io,) = [w for w in r.warnings if "block I/O" in w]
    assert io.startswith(_said(r))
    # The CPU-contention warning is not the only explanation offered: both are said.
    assert [w for w in r.warnings if w.startswith("other tasks on this host held the run")]


def test_a_run_that_barely_waited_on_storage_is_not_told() -> None:
    r = profile(["sleep", "0.2"], Limits(), backend=FakeBackend(waits_on_storage(0.01, 0.0)),
                interval=0.05)  # fmt: skip
    assert r.io.stall_s is not None and r.io.stall_s <= IO_STALL_WARN_FRACTION * r.wall_s
    assert not [w for w in r.warnings if "block I/O" in w], r.warnings


def test_a_backend_without_the_file_has_no_figure() -> None:
    r = profile(["sleep", "0.1"], Limits(), backend=FakeBackend(linear(6.0)), interval=0.05)
    assert (r.io.stall_s, r.io.stall_full_s) == (None, None)
    assert not [w for w in r.warnings if "block I/O" in w]


def test_an_older_file_reads_without_the_keys() -> None:
    io = IoStats(read_bytes=1, write_bytes=2, net_rx_bytes=None, net_tx_bytes=None)
    assert (io.stall_s, io.stall_full_s) == (None, None)
