"""The process backend's logic: what it refuses, and when ``auto`` falls back to it.  Its
measurements are the host tier's (tests/host/test_process_backend.py)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

import edgeprof.backends as backends
from edgeprof import Limits
from edgeprof.backends import ProcessBackend, get_backend
from edgeprof.backends._own_group import OwnGroup, own_memory_group
from edgeprof.backends._process import Process
from edgeprof.backends._process_run import (
    counts_shared_pages,
    own_high_water_mark,
    rss_counter_slack,
    set_subreaper,
    shared_pages_caveat,
)
from edgeprof.backends.process import refusal
from edgeprof.cli.runargs import OPTIONS
from edgeprof.errors import BackendUnavailable, ConfigError
from edgeprof.model import RunSpec


@pytest.mark.parametrize(
    ("limits", "refused"),
    [
        (Limits(), None),
        (Limits(cpus=1, cpuset="0"), None),  # an integer --cpus as resolved: pinned
        (Limits(cpus=2, cpuset="0-1"), None),
        (Limits(cpuset="1"), None),
        (Limits(cpus=0.5), "--cpus 0.5: the process backend holds whole cores"),
        (Limits(cpus=1.5, cpuset="0-1"), "--cpus 1.5"),  # a share of two cores
        (Limits(cpus=4), "--cpus 4"),  # over the host with --allow-over-host: not pinned
        (Limits(memory="1g"), "RLIMIT_AS caps each process's address space"),
        (Limits(pids=10), "RLIMIT_NPROC counts every process of the user"),
        (Limits(read_bps="40m"), "--read-bps 40.0MiB/s: the process backend cannot slow"),
        (Limits(write_bps="1m"), "--write-bps 1.0MiB/s: the process backend cannot slow"),
    ],
)
def test_it_holds_whole_cores_and_refuses_what_it_cannot_enforce(
    limits: Limits, refused: str | None
) -> None:
    why = refusal(limits)
    assert ProcessBackend().limit_unavailable(limits) == why
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why and "\n" not in why


@pytest.mark.parametrize(
    "limits",
    [Limits(cpus=0.5), Limits(memory="1g"), Limits(pids=10), Limits(read_bps="4m")],
    ids=["cpus", "memory", "pids", "storage"],
)
def test_a_refusal_names_only_options_that_exist(limits: Limits) -> None:
    """The memory refusal once sent the user to a ``--max-memory`` that ``run`` lacks."""
    why = refusal(limits)
    assert why is not None
    named = set(re.findall(r"--[a-z][a-z-]*[a-z]", why))
    assert named and named <= set(OPTIONS)
    if limits.memory is not None:
        assert "--max-peak-memory" in named


def test_auto_falls_back_with_one_warning_naming_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_cgroup(parent: str | None = None) -> backends.Backend:
        raise BackendUnavailable("cannot create groups under /sys/fs/cgroup/memory/x")

    monkeypatch.setattr(backends, "cgroup_backend", no_cgroup)
    be = get_backend("auto")
    assert isinstance(be, ProcessBackend)
    (warning,) = be.warnings()
    # Its facts first, the reason after them (it had been nested in parentheses mid-line).
    assert warning == (
        "no cgroup can be created here, so the process backend measured: CPU time is exact, "
        "memory is the resident set size sampled, and no CPU share or memory limit can be "
        "set. Why: cannot create groups under /sys/fs/cgroup/memory/x. edgeprof doctor explains"
    )
    assert be.peak_source == "rss" and be.mechanism == "process"
    # Asked for by name, it says nothing; the cgroup backend's failure stays an error.
    assert get_backend("process").warnings() == []
    with pytest.raises(BackendUnavailable, match="cannot create groups"):
        get_backend("cgroup")
    with pytest.raises(BackendUnavailable):  # a cgroup parent was asked for: no fallback
        get_backend("auto", cgroup_parent="/mine")


def test_process_backend_takes_no_cgroup_parent() -> None:
    with pytest.raises(ConfigError, match="--cgroup-parent applies to the cgroup backend"):
        get_backend("process", cgroup_parent="/mine")


def _subreaper_now() -> int:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    flag = ctypes.c_int(-1)
    assert libc.prctl(37, ctypes.byref(flag), 0, 0, 0) == 0  # PR_GET_CHILD_SUBREAPER
    return flag.value


def test_subreaping_lasts_while_any_run_wants_it() -> None:
    """Runs in two threads of one process: the first to end must not turn it off under the
    other (orphans of that one would go to init and be lost to its run)."""
    assert _subreaper_now() == 0
    assert set_subreaper(True) and set_subreaper(True)
    assert _subreaper_now() == 1
    assert set_subreaper(False)
    assert _subreaper_now() == 1
    assert set_subreaper(False)
    assert _subreaper_now() == 0


def test_own_group_reads_oom_kills_and_limit_of_either_version(tmp_path: Path) -> None:
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    g1 = OwnGroup(v1, v1 / "memory.oom_control", v1 / "memory.limit_in_bytes")
    assert (g1.oom_kills(), g1.limit()) == (3, None)
    (v1 / "memory.limit_in_bytes").write_text("201326592\n")
    assert g1.limit() == 192 * 2**20
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    (v2 / "memory.max").write_text("max\n")
    g2 = OwnGroup(v2, v2 / "memory.events", v2 / "memory.max")
    assert (g2.oom_kills(), g2.limit()) == (1, None)
    # A kernel before 4.13 has no oom_kill line in v1's oom_control: nothing to count.
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\n")
    assert g1.oom_kills() is None
    assert OwnGroup(tmp_path, tmp_path / "gone", tmp_path / "gone").oom_kills() is None


def test_own_group_is_found_from_mountinfo_and_proc_self_cgroup(tmp_path: Path) -> None:
    """A container's view (cgroup v2 mounted with its group as the root, ``0::/``)."""
    mnt = tmp_path / "cgroup"
    mnt.mkdir()
    (mnt / "memory.events").write_text("oom_kill 0\n")
    (mnt / "memory.max").write_text("536870912\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"30 25 0:26 / {mnt} ro,nosuid - cgroup2 cgroup2 ro\n")
    psc = tmp_path / "cgroup.self"
    psc.write_text("0::/\n")
    g = own_memory_group(mountinfo, psc)
    assert g is not None and g.path == mnt and g.limit() == 512 * 2**20
    psc.write_text("")  # in no hierarchy at all
    assert own_memory_group(mountinfo, psc) is None


@pytest.mark.parametrize(
    ("text", "hwm"),
    [
        (
            "Name:\tpython3\nVmPeak:\t  900 kB\nVmHWM:\t   28712 kB\nVmRSS:\t 28000 kB\n",
            28712 * 1024,
        ),
        ("Name:\tpython3\nVmRSS:\t 28000 kB\n", None),  # a kernel thread's shape: no marks
        ("VmHWM:\tlots kB\n", None),
    ],
)
def test_own_high_water_mark_is_read_from_vmhwm(tmp_path: Path, text: str, hwm: int | None) -> None:
    status = tmp_path / "status"
    status.write_text(text)
    assert own_high_water_mark(str(status)) == hwm
    assert own_high_water_mark(str(tmp_path / "gone")) is None


@pytest.mark.parametrize(("cpus", "pages"), [(1, 32), (2, 64), (16, 16 * 32), (72, 72 * 144)])
def test_rss_counter_slack_is_one_batch_per_cpu(cpus: int, pages: int) -> None:
    import os

    assert rss_counter_slack(cpus) == pages * os.sysconf("SC_PAGE_SIZE")


def test_a_wait_longer_than_poll_takes_still_waits() -> None:
    """``--timeout 1e9`` (the parser's limit) once raised poll()'s OverflowError, a traceback
    after the workload had started: a wait beyond 2**31 ms is taken in parts."""
    done = Process(["true"], env=os.environ, cwd=None, stdout=None, stderr=None)
    assert done.wait(1e9) == 0
    slow = Process(["sleep", "30"], env=os.environ, cwd=None, stdout=None, stderr=None)
    try:
        assert slow.wait(0.05) is None
    finally:
        os.kill(slow.pid, signal.SIGKILL)
        assert slow.wait(1e9) == -signal.SIGKILL


@pytest.mark.parametrize("processes", [0, 1])
def test_one_process_has_no_shared_pages_to_count_twice(processes: int) -> None:
    assert shared_pages_caveat(processes) is None


def test_a_tree_is_told_its_shared_pages_count_once_per_process() -> None:
    """A 300 MiB array read by 4 forked workers read 1.5 GiB of RSS, 318.7 MiB in a cgroup."""
    assert shared_pages_caveat(5) == (
        "5 processes at once: memory they share (a fork's copy-on-write pages, libraries) is "
        "counted in each of them, so the memory figures can read up to 5x what the run used; "
        "the cgroup backend counts it once"
    )


def _warnings_after_a_sample(command: tuple[str, ...], processes: int) -> list[str]:
    """The run handle's warnings after one sample that read ``processes`` processes of the
    tree ``command`` starts, and its final reading."""
    be = ProcessBackend(own_group=None)
    with be.launch(RunSpec(command=command)) as run:
        deadline = time.monotonic() + 10
        while len(run.members()) < processes and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(run.members()) == processes
        assert run.sample().memory_current is not None
        run.kill()
        run.counters()
        run.counters()  # read twice (a caller's retry): still said once
        return list(run.warnings)


FORKED_WORKERS = """
import os, time
model = b"\\x01" * (32 << 20)  # resident in the parent, shared with each fork
for _ in range(2):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
time.sleep(30)
"""


def test_a_run_that_sampled_three_processes_says_their_shared_pages_count_thrice() -> None:
    warnings = _warnings_after_a_sample((sys.executable, "-c", FORKED_WORKERS), 3)
    assert [w for w in warnings if "at once" in w] == [shared_pages_caveat(3)]


def test_a_shell_and_its_small_children_have_no_shared_pages_caveat() -> None:
    """Three processes of a few MiB each: what they can count twice is under the floor."""
    warnings = _warnings_after_a_sample(("sh", "-c", "sleep 30 & sleep 30 & wait"), 3)
    assert not [w for w in warnings if "at once" in w]


@pytest.mark.parametrize(
    ("rss_mib", "largest_mib", "said"),
    [
        (1537, 318, True),  # the tester's 4 workers of a 300 MiB model
        (12, 10, False),  # sh -c around a small python: the shell's 2 MiB
        (108, 100, False),  # 8 MiB besides the largest, but 7 % of the sum
        (80, 72, True),  # 8 MiB and a tenth
        (79, 72, False),  # under the floor
        (500, 460, False),  # 40 MiB, but under a tenth of the sum
    ],
)
def test_which_sums_can_count_shared_pages(rss_mib: int, largest_mib: int, said: bool) -> None:
    assert counts_shared_pages(rss_mib << 20, largest_mib << 20) is said


def test_a_run_of_one_process_has_no_shared_pages_caveat() -> None:
    warnings = _warnings_after_a_sample(("sleep", "30"), 1)
    assert not [w for w in warnings if "at once" in w]


def test_a_zombie_main_process_is_no_reading_of_memory() -> None:
    """An exited main process not yet reaped has no address space (its statm reads 0): a
    sample then had read 0 bytes, reported as ``true``'s peak "0B (sampled)"."""
    be = ProcessBackend(own_group=None)
    with be.launch(RunSpec(command=("true",))) as run:
        os.waitid(os.P_PID, run.pid, os.WEXITED | os.WNOWAIT)  # exited, left a zombie
        assert run.members() == [run.pid]
        c = run.sample()
        assert (c.memory_current, c.memory_anon, c.memory_file) == (None, None, None)
        assert run.wait(None) == 0
        assert run.counters().memory_current is None


def test_a_caller_that_was_a_subreaper_stays_one() -> None:
    """A supervisor that made itself a child subreaper had it cleared by the end of a run
    (``PR_GET_CHILD_SUBREAPER`` read 1 before, 0 after)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    assert _subreaper_now() == 0
    assert libc.prctl(36, 1, 0, 0, 0) == 0  # the caller's own, before any run
    try:
        assert set_subreaper(True) and set_subreaper(True)
        assert set_subreaper(False) and set_subreaper(False)
        assert _subreaper_now() == 1
    finally:
        libc.prctl(36, 0, 0, 0, 0)
    # A caller that was none is none again after the next runs.
    assert set_subreaper(True)
    assert _subreaper_now() == 1
    assert set_subreaper(False)
    assert _subreaper_now() == 0
