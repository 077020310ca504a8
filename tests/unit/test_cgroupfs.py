"""_cgroupfs.py: the pure parsers, CounterFile re-reads, writes, own groups, remove_tree."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprof.backends import cgroup_parse
from edgeprof.backends import cgroupfs as fs
from edgeprof.backends.capabilities import BatchReader
from edgeprof.errors import BackendError
from edgeprof.model import Counters
from tests.conftest import require

from .conftest import READERS

CPU_STAT_V2 = """usage_usec 1234567
user_usec 1000000
system_usec 234567
core_sched.force_idle_usec 0
nr_periods 42
nr_throttled 7
throttled_usec 350000
nr_bursts 0
burst_usec 0
"""


def test_parse_kv_cpu_stat() -> None:
    kv = cgroup_parse.parse_kv(CPU_STAT_V2)
    assert kv["usage_usec"] == 1234567
    assert kv["user_usec"] == 1000000
    assert kv["system_usec"] == 234567
    assert kv["nr_periods"] == 42
    assert kv["nr_throttled"] == 7
    assert kv["throttled_usec"] == 350000
    assert kv["core_sched.force_idle_usec"] == 0
    assert len(kv) == 9


def test_parse_kv_skips_junk_lines() -> None:
    text = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n\nnot-a-pair\nname text\n"
    assert cgroup_parse.parse_kv(text) == {"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 3}
    assert cgroup_parse.parse_kv("") == {}


@pytest.mark.parametrize(
    ("text", "value"), [("123\n", 123), ("max\n", -1), ("max", -1), ("0", 0), (" 9 ", 9)]
)
def test_parse_int(text: str, value: int) -> None:
    assert cgroup_parse.parse_int(text) == value


def test_parse_int_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        cgroup_parse.parse_int("12 34")


def test_parse_io_stat_sums_devices() -> None:
    text = (
        "8:0 rbytes=1000 wbytes=2000 rios=3 wios=4 dbytes=5 dios=6\n"
        "259:0 rbytes=24 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n"
        "8:16 rbytes=0 wbytes=48 rios=0 wios=2 dbytes=99999 dios=1\n"
    )
    assert cgroup_parse.parse_io_stat(text) == (1024, 2048)


def test_parse_io_stat_empty() -> None:
    assert cgroup_parse.parse_io_stat("") == (0, 0)


def test_the_io_of_a_disk_that_passes_it_on_is_counted_once() -> None:
    """A loop device's (7:0) reads went on to the disk (254:0) below it, which counted them
    again: the sums leave the passing disk out, in both versions' files."""
    v2 = (
        "7:0 rbytes=33554432 wbytes=4096 rios=256 wios=1 dbytes=0 dios=0\n"
        "254:0 rbytes=33759232 wbytes=8192 rios=300 wios=2 dbytes=0 dios=0\n"
    )
    assert cgroup_parse.parse_io_stat(v2) == (67313664, 12288)
    assert cgroup_parse.parse_io_stat(v2, ("7:0",)) == (33759232, 8192)
    # A prefix of a device number is another device (7:0 is not 7:01 nor 27:0).
    assert cgroup_parse.parse_io_stat(v2, ("7:", "54:0")) == (67313664, 12288)
    v1 = "7:0 Read 33554432\n7:0 Write 4096\n254:0 Read 33759232\n254:0 Write 8192\nTotal 1\n"
    assert cgroup_parse.parse_blkio(v1) == (67313664, 12288)
    assert cgroup_parse.parse_blkio(v1, ("7:0",)) == (33759232, 8192)


def test_parse_blkio_sums_read_write_and_ignores_total() -> None:
    text = (
        "8:0 Read 4096\n"
        "8:0 Write 8192\n"
        "8:0 Sync 12288\n"
        "8:0 Async 0\n"
        "8:0 Discard 0\n"
        "8:0 Total 12288\n"
        "8:16 Read 100\n"
        "8:16 Write 1\n"
        "8:16 Total 101\n"
        "Total 12389\n"
    )
    assert cgroup_parse.parse_blkio(text) == (4196, 8193)
    assert cgroup_parse.parse_blkio("Total 0\n") == (0, 0)


def test_parse_pids() -> None:
    assert cgroup_parse.parse_pids("12\n345\n6\n") == [12, 345, 6]
    assert cgroup_parse.parse_pids("") == []
    assert cgroup_parse.parse_pids("\n") == []


def test_own_cgroups_v1_hybrid(tmp_path: Path) -> None:
    p = tmp_path / "cgroup"
    p.write_text(
        "12:name=systemd:/user.slice/session-1.scope\n"
        "9:pids:/user.slice\n"
        "4:memory:/process_api/37b1af9d\n"
        "3:cpu,cpuacct:/\n"
        "2:cpuset:/\n"
        "0::/user.slice/session-1.scope\n"
    )
    assert fs.own_cgroups(p) == {
        "name=systemd": "/user.slice/session-1.scope",
        "pids": "/user.slice",
        "memory": "/process_api/37b1af9d",
        "cpu,cpuacct": "/",
        "cpuset": "/",
        "": "/user.slice/session-1.scope",
    }


def test_own_cgroups_v2(tmp_path: Path) -> None:
    p = tmp_path / "cgroup"
    p.write_text("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n")
    assert fs.own_cgroups(p) == {
        "": "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope"
    }


def test_own_cgroups_path_with_colon(tmp_path: Path) -> None:
    p = tmp_path / "cgroup"
    p.write_text("0::/a:b\n")
    assert fs.own_cgroups(p) == {"": "/a:b"}


def test_own_cgroups_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="cannot read"):
        fs.own_cgroups(tmp_path / "nope")


def test_counter_file_rereads_changed_contents(tmp_path: Path) -> None:
    p = tmp_path / "memory.current"
    p.write_text("1000\n")
    f = fs.CounterFile(p)
    try:
        assert f.read_int() == 1000
        p.write_text("42\n")  # shorter than before: a stale tail would show as "42\n0"
        assert f.read() == "42\n"
        assert f.read_int() == 42
        p.write_text("usage_usec 5\nuser_usec 3\n")
        assert f.read_kv() == {"usage_usec": 5, "user_usec": 3}
        p.write_text("max\n")
        assert f.read_int() == -1
    finally:
        f.close()


def test_counter_file_keeps_one_descriptor(tmp_path: Path) -> None:
    p = tmp_path / "cpu.stat"
    p.write_text("usage_usec 1\n")
    before = len(os.listdir("/proc/self/fd"))
    f = fs.CounterFile(p)
    for _ in range(50):
        f.read()
    assert len(os.listdir("/proc/self/fd")) == before + 1
    f.close()
    f.close()  # idempotent
    assert len(os.listdir("/proc/self/fd")) == before
    with pytest.raises(BackendError, match="after close"):
        f.read()


def test_open_optional(tmp_path: Path) -> None:
    assert fs.open_optional(tmp_path / "memory.peak") is None
    (tmp_path / "memory.peak").write_text("7\n")
    f = fs.open_optional(tmp_path / "memory.peak")
    assert f is not None
    assert f.read_int() == 7
    fs.close_all([f])
    with pytest.raises(BackendError):
        f.read()


def test_open_optional_other_errors_are_backend_errors(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(BackendError, match="cannot open"):  # ENOTDIR, not "absent"
        fs.open_optional(tmp_path / "file" / "memory.peak")


def test_write_and_errors(tmp_path: Path) -> None:
    p = tmp_path / "cpu.max"
    p.write_text("")
    fs.write(p, "50000 100000")
    assert p.read_text() == "50000 100000"
    with pytest.raises(BackendError) as e:
        fs.write(tmp_path / "missing", "1")
    assert "'1'" in str(e.value) and "missing" in str(e.value)
    assert isinstance(e.value.__cause__, FileNotFoundError)


def test_read_text_and_optional(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_text("x\n")
    assert fs.read_text(p) == "x\n"
    assert fs.read_optional(p) == "x\n"
    assert fs.read_optional(tmp_path / "nope") is None
    with pytest.raises(BackendError):
        fs.read_text(tmp_path / "nope")


def test_a_group_removed_while_read_reads_as_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    """kernfs answers ENODEV for a node removed under an open (a container's scope at its
    end): optional reads see no file; a required read and any other error still fail."""

    def raising(code: int) -> object:
        def read_text(self: Path) -> str:
            raise OSError(code, os.strerror(code))

        return read_text

    monkeypatch.setattr(Path, "read_text", raising(errno.ENODEV))
    assert fs.read_optional(Path("/sys/fs/cgroup/gone.scope/cgroup.procs")) is None
    with pytest.raises(BackendError, match="No such device"):
        fs.read_text(Path("/sys/fs/cgroup/gone.scope/cgroup.procs"))
    monkeypatch.setattr(Path, "read_text", raising(errno.EACCES))
    with pytest.raises(BackendError, match="Permission denied"):
        fs.read_optional(Path("/sys/fs/cgroup/x/cgroup.procs"))


def test_remove_tree_deepest_first(tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = a / "b"
    b.mkdir(parents=True)
    assert fs.remove_tree([b, a, tmp_path / "already-gone"]) == []
    assert not a.exists()


def test_remove_tree_takes_the_groups_a_workload_made_under_its_own(tmp_path: Path) -> None:
    """A workload running as root made ``child/grandchild`` under its run's group, and put a
    process there: the removal takes them too (they had been left behind), and the run's
    members include that process (to be killed with the rest)."""
    top = tmp_path / "edgeprof-1-2-abc"
    deep = top / "child" / "grandchild"
    deep.mkdir(parents=True)
    (top / "other").mkdir()
    (top / "cgroup.procs").write_text("10\n")
    (deep / "cgroup.procs").write_text("12\n13\n")
    assert fs.subgroups(top)[0] == deep  # deepest first, as rmdir needs
    assert set(fs.subgroups(top)) == {deep, deep.parent, top / "other"}
    assert sorted(fs.procs_under(top / "cgroup.procs")) == [10, 12, 13]
    for f in (top / "cgroup.procs", deep / "cgroup.procs"):
        f.unlink()  # a real group's files go with it; a plain directory's do not
    assert fs.remove_tree([top]) == []
    assert not top.exists()


def test_remove_tree_reports_what_it_cannot_remove(tmp_path: Path) -> None:
    d = tmp_path / "busy"
    d.mkdir()
    (d / "a-file").write_text("")  # rmdir: not empty
    msgs = fs.remove_tree([d])
    assert len(msgs) == 1
    assert str(d) in msgs[0]
    assert d.exists()


def test_remove_tree_retries_while_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "g"
    d.mkdir()
    real = os.rmdir
    calls = []

    def rmdir(path: Path) -> None:
        calls.append(path)
        if len(calls) < 4:  # exiting tasks still pin the group for a moment
            raise OSError(errno.EBUSY, "Device or resource busy")
        real(path)

    monkeypatch.setattr(os, "rmdir", rmdir)
    assert fs.remove_tree([d]) == []
    assert len(calls) == 4
    assert not d.exists()


def test_remove_tree_gives_up_after_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def rmdir(path: Path) -> None:
        calls.append(path)
        raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(os, "rmdir", rmdir)
    msgs = fs.remove_tree([tmp_path / "g"], attempts=3)
    assert len(calls) == 3
    assert msgs == [f"cannot remove cgroup {tmp_path / 'g'}: Device or resource busy"]


# -- CounterSet: every counter file of a run, read together ----------------------------------


def counter_files(tmp_path: Path) -> list[fs.Source]:
    (tmp_path / "cpu.stat").write_text(
        "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\nthrottled_time 2500999\n"
    )
    (tmp_path / "memory.current").write_text("4096\n")
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "io.stat").write_text("8:0 rbytes=10 wbytes=20 rios=1 wios=1\n8:16 rbytes=5\n")
    (tmp_path / "blkio").write_text("8:0 Read 7\n8:0 Write 9\n8:0 Total 16\nTotal 16\n")
    F, K = fs.Field, fs.Kind
    return [
        fs.Source(
            tmp_path / "cpu.stat",
            K.KV,
            (
                F("cpu_usage_us", "usage_usec"),
                F("cpu_user_us", "user_usec"),
                F("nr_periods", "nr_periods"),  # not in the file: None
                F("throttled_us", "throttled_time", divisor=1000),
            ),
        ),
        fs.Source(tmp_path / "memory.current", K.INT, (F("memory_current"),)),
        fs.Source(tmp_path / "memory.max", K.INT, (F("memory_peak"),)),
        fs.Source(tmp_path / "memory.peak", K.INT, (F("pids_current"),)),  # absent file
        fs.Source(tmp_path / "io.stat", K.IOSTAT, (F("io_read_bytes"), F("io_write_bytes"))),
        fs.Source(tmp_path / "blkio", K.BLKIO, (F("net_rx_bytes"), F("net_tx_bytes"))),
    ]


@pytest.mark.parametrize("native", READERS)
def test_counter_set_reads_every_kind(tmp_path: Path, native: bool) -> None:
    cs = fs.CounterSet(counter_files(tmp_path), native=native)
    try:
        assert cs.read() == Counters(
            cpu_usage_us=1_500_000,
            cpu_user_us=1_000_000,
            nr_periods=None,
            throttled_us=2500,
            memory_current=4096,
            memory_peak=-1,  # "max"
            pids_current=None,
            io_read_bytes=15,
            io_write_bytes=20,
            net_rx_bytes=7,
            net_tx_bytes=9,
        )
        (tmp_path / "memory.current").write_text("12\n")  # shorter: no stale tail
        (tmp_path / "cpu.stat").write_text("usage_usec 2\n")
        c = cs.read()
        assert (c.memory_current, c.cpu_usage_us, c.cpu_user_us) == (12, 2, None)
    finally:
        cs.close()


def test_counter_set_native_and_python_agree(tmp_path: Path) -> None:
    results = []
    for native in READERS:
        cs = fs.CounterSet(counter_files(tmp_path), native=native)
        results.append(cs.read())
        cs.close()
    assert all(r == results[0] for r in results)


@pytest.mark.parametrize("native", READERS)
def test_counter_set_closes_its_files(tmp_path: Path, native: bool) -> None:
    before = len(os.listdir("/proc/self/fd"))
    cs = fs.CounterSet(counter_files(tmp_path), native=native)
    assert len(os.listdir("/proc/self/fd")) == before + 5  # the absent file is not open
    cs.close()
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("native", READERS)
def test_counter_set_read_error(tmp_path: Path, native: bool) -> None:
    d = tmp_path / "a-directory"
    d.mkdir()
    cs = fs.CounterSet([fs.Source(d, fs.Kind.INT, (fs.Field("memory_current"),))], native=native)
    try:
        with pytest.raises(BackendError, match="Is a directory"):
            cs.read()
    finally:
        cs.close()


def test_counter_set_rejects_unknown_fields(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("1\n")
    with pytest.raises(ValueError, match="not a Counters field"):
        fs.CounterSet([fs.Source(tmp_path / "f", fs.Kind.INT, (fs.Field("memory_bytes"),))])


def test_counter_set_native_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fs, "NATIVE_AVAILABLE", False)
    with pytest.raises(BackendError, match="not built"):
        fs.CounterSet([], native=True)
    assert fs.CounterSet([]).native is False  # default: Python when the helper is absent


@contextlib.contextmanager
def _native_batch(tmp_path: Path) -> Iterator[tuple[BatchReader, int, int]]:
    """The native batch reader over the test's counter files, and a stop pipe (read, write)."""
    cs = fs.CounterSet(counter_files(tmp_path), native=True)
    batch = cs.batch_reader
    assert batch is not None
    r, w = os.pipe()
    try:
        yield batch, r, w
    finally:
        os.close(r)
        os.close(w)
        cs.close()


def test_native_sampling_loop(tmp_path: Path) -> None:
    """cg_sample: samples on the grid in C until ``until``, or at once when stop_fd is ready.

    Where the helper is not built, the contract is that no batch loop is offered.
    """
    if not fs.NATIVE_AVAILABLE:
        cs = fs.CounterSet(counter_files(tmp_path))
        assert cs.batch_reader is None
        cs.close()
        return
    with _native_batch(tmp_path) as (batch, r, w):
        t = time.monotonic()
        rows, due, stopped, missed = batch.sample_batch(0.005, t, t + 0.05, r)
        end = time.monotonic()
        assert not stopped
        # The grid from t to t + 50 ms: every tick read or counted missed (one preemption of
        # 15 ms left a fixed 8-row floor short), and the next tick due is the first past the
        # grid's end, or past the last read when that was late (a late last read counts the
        # ticks it overslept: a fixed ceiling of 11 would fail on one 5 ms late wake-up).
        assert len(rows) >= 1
        assert due == pytest.approx(t + 0.005 * (len(rows) + missed), abs=1e-6)
        assert t + 0.05 < due + 1e-6 and due <= end + 0.005 + 1e-6, (t, due, end)
        times = [x for x, _ in rows]
        assert times == sorted(times) and t <= times[0] and times[-1] <= end
        assert rows[0][1].memory_current == 4096
        assert rows[0][1].io_read_bytes == 15
        (tmp_path / "memory.current").write_text("7\n")
        os.write(w, b"x")  # stop: the loop returns without waiting for ``until``
        t = time.monotonic()
        # The first tick far ahead: a tick already due is read before the stop is looked at
        # (10 ms ahead was past by the time a held-up call reached the loop: one row).
        rows, _, stopped, _ = batch.sample_batch(0.005, t + 10, t + 60, r)
        assert stopped and rows == []
        assert time.monotonic() - t < 30  # far less than the 60 s it would otherwise take


def test_native_loop_hands_rows_over_right_after_the_last_tick_before_the_hand_over(
    tmp_path: Path,
) -> None:
    """A tick at ``due``, the next one past ``until``: the loop returns after the read, not
    at ``until`` (one wake-up a tick at low rates, not two).  60 s is what the wait it no
    longer makes would take; half of it bounds a read on a loaded host (5 s had been both)."""
    require(fs.NATIVE_AVAILABLE, "the native helper is not built in this installation")
    with _native_batch(tmp_path) as (batch, r, _):
        t = time.monotonic()
        rows, due, stopped, missed = batch.sample_batch(100.0, t, t + 60.0, r)
        assert len(rows) == 1 and not stopped and missed == 0
        assert due == pytest.approx(t + 100.0, abs=1e-6)
        assert time.monotonic() - t < 30.0


def test_python_reader_has_no_batch_loop(tmp_path: Path) -> None:
    cs = fs.CounterSet(counter_files(tmp_path), native=False)
    assert cs.batch_reader is None
    cs.close()


def test_a_cpuset_the_kernel_refuses_is_said_of_the_option(tmp_path: Path) -> None:
    """The kernel's refusal of a run group's ``cpuset.cpus`` (a CPU that exists but the
    parent group cannot give, an offline one) names ``--cpuset`` and the parent's CPUs, not a
    control file's path and its errno alone.  (A CPU past the machine's is refused before
    this: ``test_a_cpuset_past_the_machine_is_refused_before_any_lease``.)"""
    from edgeprof.backends.cgroupfs import write_cpuset

    with pytest.raises(BackendError) as err:
        write_cpuset(tmp_path, [3], "0-1")  # a directory: the write fails as the kernel's would
    assert str(err.value) == (
        "--cpuset 3: the kernel refused these CPUs for the run's group (Is a directory); its "
        "parent group has CPUs 0-1"
    )
