"""The cgroup v2 backend on fake cgroupfs trees (see conftest.FakeCgroupFs)."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from edgeprof.backends import CgroupV2Backend, cgroup_v2
from edgeprof.backends.cgroup_v2 import SELF_LEAF
from edgeprof.errors import BackendError, BackendUnavailable, ConfigError, LaunchError, LimitError
from edgeprof.measure.runner import profile
from edgeprof.model import Counters, Limits, RunSpec, Termination

from .conftest import (
    IMPOSSIBLE_PID,
    READERS,
    FakeCgroupFs,
    v2_template,
    write_proc_self_cgroup,
)

ALL = "cpuset cpu io memory pids"
RUN_GROUP = re.compile(rf"^edgeprof-{os.getpid()}-\d+-[0-9a-f]{{8}}$")

COUNTERS = {
    "cpu.stat": (
        "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n"
        "nr_periods 30\nnr_throttled 12\nthrottled_usec 640000\n"
    ),
    "memory.current": "104857600\n",
    "memory.peak": "209715200\n",
    # As Linux 6.12 prints it (abridged), every key the reader takes and some it does not.
    "memory.stat": (
        "anon 100\nfile 200\nkernel 64\nkernel_stack 16\npagetables 8\nsec_pagetables 0\n"
        "percpu 4\nsock 2\nvmalloc 0\nshmem 40\nzswap 0\nfile_mapped 30\n"
        "active_file 300\ninactive_file 4096\nslab 36\nworkingset_refault_anon 5\n"
        "workingset_refault_file 6\npgscan 70\npgsteal 60\npgfault 900\npgmajfault 7\n"
    ),
    "memory.pressure": (
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=678\n"
    ),
    # The totals only: a tester's cold read's 3.47 s of I/O wait, some and full alike (one task).
    "io.pressure": (
        "some avg10=12.50 avg60=3.10 avg300=0.70 total=3474106\n"
        "full avg10=12.50 avg60=3.10 avg300=0.70 total=3474106\n"
    ),
    "memory.events": "low 0\nhigh 0\nmax 9\noom 3\noom_kill 3\n",
    "memory.events.local": "low 0\nhigh 0\nmax 5\noom 0\noom_kill 0\n",
    "io.stat": (
        "8:0 rbytes=1000 wbytes=20 rios=2 wios=1 dbytes=0 dios=0\n"
        "8:16 rbytes=24 wbytes=4 rios=1 wios=1 dbytes=0 dios=0\n"
    ),
    "pids.current": "3\n",
}


def v2_tree(
    cgfs: FakeCgroupFs,
    tmp_path: Path,
    *,
    controllers: str = ALL,
    own: str = "/",
    omit: frozenset[str] = frozenset(),
    overrides: Mapping[str, str] | None = None,
    root_subtree: str = "",
) -> tuple[Path, Path]:
    """A v2 mount at tmp_path/cgroup and a fake /proc/self/cgroup placing us at ``own``."""
    root = cgfs.hierarchy(
        tmp_path / "cgroup",
        v2_template(omit, overrides),
        {
            "cgroup.controllers": controllers + "\n",
            "cgroup.subtree_control": root_subtree,
            "cgroup.procs": "1\n",
            "cpu.stat": "usage_usec 0\n",
        },
    )
    psc = write_proc_self_cgroup(tmp_path / "proc_self_cgroup", {"": own})
    return root, psc


def backend(root: Path, psc: Path, euid: int = 0, **kw: object) -> CgroupV2Backend:
    be = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=euid, **kw)  # type: ignore[arg-type]
    be.check()
    return be


def spec(limits: Limits | None = None, cmd: tuple[str, ...] = ("true",), **kw: object) -> RunSpec:
    return RunSpec(command=cmd, limits=limits or Limits(), **kw)  # type: ignore[arg-type]


def only_run_group(cgfs: FakeCgroupFs) -> Path:
    groups = cgfs.run_groups()
    assert len(groups) == 1, groups
    return groups[0]


def delegated_user_tree(cgfs: FakeCgroupFs, tmp_path: Path, procs: str) -> tuple[Path, Path, Path]:
    """A user's delegated scope (systemd-run --user --scope -p Delegate=yes)."""
    root, psc = v2_tree(cgfs, tmp_path, own="/user.slice/app.scope", root_subtree="cpu memory pids")
    cgfs.group(root / "user.slice", {"cgroup.subtree_control": "cpu memory pids"})
    own = cgfs.group(root / "user.slice" / "app.scope", {"cgroup.procs": procs})
    return root, psc, own


# -- check() ----------------------------------------------------------------------------------


def test_check_fails_without_cgroup_controllers(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    root.mkdir()
    psc = write_proc_self_cgroup(tmp_path / "psc", {"": "/"})
    with pytest.raises(BackendUnavailable, match="no cgroup v2 hierarchy mounted at"):
        CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0).check()


def test_check_fails_when_cpu_and_memory_are_bound_to_v1(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    root, psc = v2_tree(cgfs, tmp_path, controllers="io pids")
    with pytest.raises(BackendUnavailable, match="has no cpu, memory controller"):
        CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0).check()
    (root / "cgroup.controllers").write_text("cpu pids\n")
    with pytest.raises(BackendUnavailable, match="has no memory controller"):
        CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0).check()
    # A hybrid host: the auto backend goes on to cgroup v1.
    assert not CgroupV2Backend(root=root, proc_self_cgroup=psc).holds_controllers()


def test_a_v2_host_holds_the_controllers_whatever_this_user_may_do(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    """On a cgroup v2 host a failed check is about this process's group (not delegated):
    the auto backend does not go on to name cgroup v1 in its message."""
    root, psc, _ = delegated_user_tree(cgfs, tmp_path, procs="")
    assert CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=1000).holds_controllers()
    assert not CgroupV2Backend(root=tmp_path / "nothing").holds_controllers()


def test_check_fails_when_not_in_a_v2_hierarchy(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, _ = v2_tree(cgfs, tmp_path)
    psc = write_proc_self_cgroup(tmp_path / "v1only", {"memory": "/", "cpu,cpuacct": "/"})
    with pytest.raises(BackendUnavailable, match="not in a cgroup v2 hierarchy"):
        CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0).check()


def test_check_non_root_needs_a_delegated_group(
    cgfs: FakeCgroupFs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, psc, own = delegated_user_tree(cgfs, tmp_path, procs="")
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, m: False if str(p).startswith(str(own)) else real_access(p, m)
    )
    # systemd is PID 1 and the user's manager runs: the delegated scope is offered.
    monkeypatch.setattr(cgroup_v2, "systemd_manages", lambda: True)
    (tmp_path / "xdg" / "systemd").mkdir(parents=True)
    (tmp_path / "xdg" / "systemd" / "private").touch()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    with pytest.raises(BackendUnavailable) as e:
        CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=1000).check()
    assert str(e.value) == (
        f"cgroup {own} is not delegated to this user; run edgeprof as root, or in a delegated "
        "scope: systemd-run --user --scope -p Delegate=yes edgeprof …"
    )
    # Without systemd as PID 1 the scope cannot be had: root is the one route said.
    monkeypatch.setattr(cgroup_v2, "systemd_manages", lambda: False)
    with pytest.raises(BackendUnavailable) as e:
        CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=1000).check()
    assert str(e.value) == f"cgroup {own} is not delegated to this user; run edgeprof as root"
    # root does not need delegation: it uses a top-level group
    CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0).check()


@pytest.mark.parametrize(
    ("v2", "manager", "systemd", "offered"),
    [
        (True, True, True, True),
        (False, True, True, False),  # a v1 or hybrid host: no delegation to users there
        (True, False, True, False),  # no user manager for systemd-run --user to reach
        (True, True, False, False),  # PID 1 is not systemd ("Failed to connect to bus")
    ],
)
def test_the_delegated_scope_is_offered_only_where_it_can_work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    v2: bool,
    manager: bool,
    systemd: bool,
    offered: bool,
) -> None:
    monkeypatch.setattr(cgroup_v2, "systemd_manages", lambda: systemd)
    (tmp_path / "systemd").mkdir()
    if manager:
        (tmp_path / "systemd" / "private").touch()
    said = cgroup_v2.fix(v2=v2, runtime_dir=tmp_path)
    assert said == (cgroup_v2.FIX if offered else "run edgeprof as root")
    assert cgroup_v2.FIX == (
        "run edgeprof as root, or in a delegated scope: "
        "systemd-run --user --scope -p Delegate=yes edgeprof …"
    )


# -- the parent group ------------------------------------------------------------------------


def test_root_prepares_a_top_level_edgeprof_parent(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    be = backend(root, psc, euid=0)
    assert be.parent() == root / "edgeprof"
    assert (root / "edgeprof").is_dir()
    top = [v for p, v in cgfs.writes if p == root / "cgroup.subtree_control"]
    assert top == ["+cpu", "+memory", "+io", "+pids", "+cpuset"]
    mine = [v for p, v in cgfs.writes if p == root / "edgeprof" / "cgroup.subtree_control"]
    assert sorted(mine) == sorted(["+cpu", "+memory", "+io", "+pids", "+cpuset"])
    assert set(cgfs.read(root / "edgeprof" / "cgroup.subtree_control").split()) == set(ALL.split())
    assert be.warnings() == []
    assert be.available_cpus() == (0, 1, 2, 3)  # the parent's cpuset.cpus.effective
    assert be.parent() == root / "edgeprof"  # prepared once
    assert len(cgfs.writes) == 10


def test_root_parent_reused_without_rewriting(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    backend(root, psc).parent()
    n = len(cgfs.writes)
    assert backend(root, psc).parent() == root / "edgeprof"
    assert len(cgfs.writes) == n  # every controller already enabled


def test_undelegated_controllers_drop_features_with_warnings(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    root, psc = v2_tree(cgfs, tmp_path, controllers="cpu memory pids")
    be = backend(root, psc)
    be.parent()
    w = " | ".join(be.warnings())
    assert "'io'" in w and "block I/O is n/a" in w
    assert "'cpuset'" in w and "not pinned" in w
    assert "'cpu'" not in w and "'memory'" not in w
    # no cpuset.cpus.effective in the parent: the CPUs this process may use
    assert be.available_cpus() == tuple(sorted(os.sched_getaffinity(0)))


def test_non_root_moves_itself_into_a_leaf(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    me = os.getpid()
    root, psc, own = delegated_user_tree(cgfs, tmp_path, procs=f"{me}\n")
    be = backend(root, psc, euid=1000)
    assert be.parent() == own
    leaf = own / SELF_LEAF
    assert (leaf / "cgroup.procs", str(me)) in cgfs.writes
    assert cgfs.pids(leaf) == [me]
    assert cgfs.pids(own) == []  # the parent holds no process: controllers may be enabled
    assert set(cgfs.read(own / "cgroup.subtree_control").split()) == {"cpu", "memory", "pids"}
    # the leaf move came before any controller was enabled
    names = [p.name for p, _ in cgfs.writes]
    assert names.index("cgroup.procs") < names.index("cgroup.subtree_control")
    w = " | ".join(be.warnings())
    assert "'io'" in w and "'cpuset'" in w and str(own) in w


def test_non_root_group_with_other_processes_is_refused(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    me = os.getpid()
    root, psc, own = delegated_user_tree(cgfs, tmp_path, procs=f"{IMPOSSIBLE_PID}\n{me}\n")
    be = backend(root, psc, euid=1000)
    with pytest.raises(BackendUnavailable) as e:
        be.parent()
    assert "no-internal-process" in str(e.value)
    assert str(own) in str(e.value)


def test_cgroup_parent_option(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path, root_subtree=ALL)
    ci = cgfs.group(root / "ci" / "job", {"cgroup.controllers": ALL + "\n"})
    be = backend(root, psc, euid=1000, parent="/ci/job")
    assert be.parent() == ci
    assert not (ci / SELF_LEAF).exists()  # an explicit parent is used as it is
    missing = CgroupV2Backend(root=root, parent="/nope", proc_self_cgroup=psc, euid=0)
    with pytest.raises(ConfigError, match="--cgroup-parent /nope: no such cgroup"):
        missing.parent()


# -- launching -------------------------------------------------------------------------------


def test_launch_writes_the_limits(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    be = backend(root, psc)
    run = be.launch(spec(Limits(cpus=0.5, cpuset="1", memory="256m")))
    try:
        group = only_run_group(cgfs)
        assert group.parent == root / "edgeprof"
        assert RUN_GROUP.match(group.name)
        assert cgfs.read(group / "cpu.max") == "50000 100000"
        assert cgfs.read(group / "cpuset.cpus") == "1"
        assert cgfs.read(group / "memory.max") == str(256 * 2**20)
        assert cgfs.read(group / "memory.swap.max") == "0"
        assert cgfs.read(group / "memory.oom.group") == "1"
        assert cgfs.read(group / "cgroup.procs") == "0"  # the child joined itself before exec
        assert run.wait(10) == 0
    finally:
        cgfs.processes_exited()
        run.close()
    assert cgfs.run_groups() == []
    assert run.warnings == []


@pytest.mark.parametrize(
    ("cpus", "period", "quota"),
    [
        (1.5, None, "150000 100000"),
        (0.01, None, "1000 100000"),
        (0.5, 2000, "1000 2000"),
        (0.25, 4000, "1000 4000"),
        (0.75, 10_000, "7500 10000"),
    ],
)
def test_launch_cpu_max(
    cgfs: FakeCgroupFs, tmp_path: Path, cpus: float, period: int | None, quota: str
) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    with backend(root, psc).launch(spec(Limits(cpus=cpus), cpu_period_us=period)) as run:
        assert cgfs.read(only_run_group(cgfs) / "cpu.max") == quota
        run.wait(10)
        cgfs.processes_exited()
    assert cgfs.run_groups() == []


def test_launch_without_limits_touches_only_oom_group(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    be = backend(root, psc)
    be.parent()
    before = len(cgfs.writes)
    with be.launch(spec()) as run:
        group = only_run_group(cgfs)
        assert [(p.name, v) for p, v in cgfs.writes[before:]] == [("memory.oom.group", "1")]
        assert cgfs.read(group / "cpu.max") == "max 100000\n"
        assert cgfs.read(group / "memory.max") == "max\n"
        run.wait(10)
        cgfs.processes_exited()


@pytest.mark.parametrize("native", READERS)
def test_old_kernel_without_swap_oom_group_peak(
    cgfs: FakeCgroupFs, tmp_path: Path, native: bool
) -> None:
    old = frozenset({"memory.swap.max", "memory.oom.group", "memory.peak", "cgroup.kill"})
    root, psc = v2_tree(cgfs, tmp_path, omit=old)
    with backend(root, psc, native=native).launch(spec(Limits(memory="64m"))) as run:
        group = only_run_group(cgfs)
        assert cgfs.read(group / "memory.max") == str(64 * 2**20)
        assert not (group / "memory.swap.max").exists()
        assert cgfs.written("memory.swap.max") == [] and cgfs.written("memory.oom.group") == []
        c = run.counters()
        assert c.memory_peak is None  # Linux < 5.19: no high-water mark, not 0
        assert c.memory_current == 0
        run.wait(10)
        cgfs.processes_exited()


@pytest.mark.parametrize("native", READERS)
def test_reader_maps_the_v2_files(cgfs: FakeCgroupFs, tmp_path: Path, native: bool) -> None:
    root, psc = v2_tree(cgfs, tmp_path, overrides=COUNTERS)
    with backend(root, psc, native=native).launch(spec()) as run:
        assert run.counters() == Counters(
            cpu_usage_us=1_500_000,
            cpu_user_us=1_000_000,
            cpu_system_us=500_000,
            nr_periods=30,
            nr_throttled=12,
            throttled_us=640_000,
            memory_current=104_857_600,
            memory_peak=209_715_200,
            memory_inactive_file=4096,
            memory_anon=100,
            memory_file=200,
            memory_active_file=300,
            memory_shmem=40,
            memory_kernel=64,
            memory_slab=36,
            memory_kernel_stack=16,
            memory_pagetables=8,
            memory_percpu=4,
            memory_sock=2,
            refaults_anon=5,
            refaults_file=6,
            major_faults=7,
            pages_scanned=70,
            pages_reclaimed=60,
            memory_events_high=0,
            memory_events_max=5,
            memory_events_oom=0,
            memory_some_us=12345,
            memory_full_us=678,
            oom_kills=0,  # memory.events.local, not the hierarchical memory.events (3)
            io_read_bytes=1024,
            io_write_bytes=24,
            net_rx_bytes=None,
            net_tx_bytes=None,
            pids_current=3,
            io_some_us=3_474_106,
            io_full_us=3_474_106,
        )
        group = only_run_group(cgfs)
        (group / "memory.current").write_text("5\n")
        (group / "memory.events.local").write_text("oom 1\noom_kill 1\n")
        c = run.counters()  # the same open files, re-read
        assert (c.memory_current, c.oom_kills) == (5, 1)
        run.wait(10)
        cgfs.processes_exited()


@pytest.mark.parametrize("native", READERS)
def test_reader_falls_back_to_memory_events(
    cgfs: FakeCgroupFs, tmp_path: Path, native: bool
) -> None:
    root, psc = v2_tree(
        cgfs, tmp_path, overrides=COUNTERS, omit=frozenset({"memory.events.local", "io.stat"})
    )
    with backend(root, psc, native=native).launch(spec()) as run:
        c = run.counters()
        assert c.oom_kills == 3
        assert (c.io_read_bytes, c.io_write_bytes) == (None, None)  # no io controller file
        run.wait(10)
        cgfs.processes_exited()


@pytest.mark.parametrize("native", READERS)
def test_disabled_memory_peak_reads_none(cgfs: FakeCgroupFs, tmp_path: Path, native: bool) -> None:
    root, psc = v2_tree(cgfs, tmp_path, overrides=COUNTERS)
    be = backend(root, psc, disable=frozenset({"memory.peak"}), native=native)
    with be.launch(spec()) as run:
        assert run.counters().memory_peak is None
        assert run.counters().memory_current == 104_857_600
        run.wait(10)
        cgfs.processes_exited()


# -- limits that cannot be applied, failures -------------------------------------------------


def limited_parent(cgfs: FakeCgroupFs, tmp_path: Path, controllers: str) -> CgroupV2Backend:
    root, psc = v2_tree(cgfs, tmp_path, root_subtree=ALL)
    cgfs.group(root / "limited", {"cgroup.controllers": controllers + "\n"})
    return backend(root, psc, parent="/limited")


def test_cpus_without_cpu_controller(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    be = limited_parent(cgfs, tmp_path, "memory pids")
    with pytest.raises(LimitError, match="--cpus needs the cpu controller"):
        be.launch(spec(Limits(cpus=0.5)))
    assert cgfs.run_groups() == []  # created, then removed
    assert any("'cpu'" in w for w in be.warnings())


def test_memory_without_memory_controller(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    be = limited_parent(cgfs, tmp_path, "cpu pids")
    with pytest.raises(LimitError, match="--memory needs the memory controller"):
        be.launch(spec(Limits(memory="64m")))
    assert cgfs.run_groups() == []


def test_cpuset_without_cpuset_controller(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    be = limited_parent(cgfs, tmp_path, "cpu memory pids")
    with pytest.raises(LimitError, match="--cpuset needs the cpuset controller"):
        be.launch(spec(Limits(cpuset="0")))
    assert cgfs.run_groups() == []
    # the same cpuset chosen by edgeprof for an integer --cpus is dropped, not an error
    with be.launch(spec(Limits(cpus=1, cpuset="0"), cpuset_auto=True)) as run:
        group = only_run_group(cgfs)
        assert cgfs.read(group / "cpu.max") == "100000 100000"
        assert not (group / "cpuset.cpus").exists()
        assert cgfs.written("cpuset.cpus") == []
        run.wait(10)
        cgfs.processes_exited()
    assert cgfs.run_groups() == []


def test_refused_limit_leaves_no_group_and_no_fd(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    be = backend(root, psc)
    be.parent()
    cgfs.refuse["memory.max"] = errno.EINVAL
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(BackendError, match=r"memory\.max"):
        be.launch(spec(Limits(cpus=1, memory="64m")))
    assert cgfs.run_groups() == []
    assert len(os.listdir("/proc/self/fd")) == fds


def test_failed_join_leaves_no_group_and_no_fd(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path, omit=frozenset({"cgroup.procs"}), overrides=COUNTERS)
    be = backend(root, psc)
    be.parent()
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(LaunchError, match=r"cgroup\.procs"):
        be.launch(spec())  # counter files are open by then: they must be closed
    assert cgfs.run_groups() == []
    assert len(os.listdir("/proc/self/fd")) == fds


# -- the whole run loop on the fake tree -----------------------------------------------------


@pytest.mark.parametrize("native", READERS)
def test_profile_on_a_fake_v2_tree(cgfs: FakeCgroupFs, tmp_path: Path, native: bool) -> None:
    root, psc = v2_tree(cgfs, tmp_path, overrides=COUNTERS)
    be = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0, native=native)
    r = profile(["sleep", "0.1"], Limits(cpus=1, memory="64m"), backend=be, interval=0.01)
    assert (r.backend, r.mechanism) == ("cgroup", "cgroup2")
    assert r.termination is Termination.EXITED and r.exit_code == 0
    assert r.limits.cpuset == (0,)  # integer --cpus pinned to the first available CPU
    assert ("cpuset.cpus", "0") in [(p.name, v) for p, v in cgfs.writes]
    assert ("cpu.max", "100000 100000") in [(p.name, v) for p, v in cgfs.writes]
    assert cgfs.written("cgroup.kill") == ["1"]  # leftovers killed before the totals
    # The fake's counters hold still at 1.5 s; the spawn left out is the forked child's own
    # CPU time from its joining to its exec, on its own clock: a few ms at most.
    total, spawn = r.cpu.total_s, r.cpu.spawn_s
    assert spawn is not None and 0 <= spawn < 0.1
    assert total is not None and total == pytest.approx(1.5 - spawn)
    assert (r.cpu.user_s, r.cpu.system_s) == pytest.approx((total / 1.5, total / 3))
    assert r.cpu.throttled_s == pytest.approx(0.64)
    assert (r.cpu.nr_throttled, r.cpu.nr_periods) == (12, 30)
    assert r.memory.peak_bytes == 209_715_200 and r.memory.peak_source == "kernel"
    # An average takes two readings between the first and the exit (MIN_AVG_READINGS): the
    # final one comes after it, so fewer than 4 samples have none.
    assert r.memory.avg_bytes in (104_857_600, None)
    assert r.samples.count >= 4 or r.memory.avg_bytes is None
    assert r.memory.peak_working_set_bytes == 104_857_600 - 4096
    assert r.memory.limit_bytes == 64 * 2**20
    assert r.memory.oom_kills == 0
    assert (r.io.read_bytes, r.io.write_bytes) == (1024, 24)
    assert (r.io.net_rx_bytes, r.io.net_tx_bytes) == (None, None)
    assert r.pids_peak == 3
    assert r.samples.count >= 2
    assert cgfs.run_groups() == []


@pytest.mark.parametrize("native", READERS)
def test_profile_oom_from_memory_events_local(
    cgfs: FakeCgroupFs, tmp_path: Path, native: bool
) -> None:
    overrides = {**COUNTERS, "memory.events.local": "oom 1\noom_kill 1\n"}
    root, psc = v2_tree(cgfs, tmp_path, overrides=overrides)
    be = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0, native=native)
    r = profile(["true"], Limits(memory="64m"), backend=be, interval=0.01)
    assert r.termination is Termination.OOM  # even though the command exited 0
    assert r.exit_code == 0
    assert r.memory.oom_kills == 1


def test_a_sampled_pids_peak_above_the_limit_is_a_refused_fork(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    """The kernel charges a fork before checking pids.max and takes it back when refused, so
    pids.current can read above the limit for an instant (65 of 64 seen under a fork bomb):
    no process was ever over the limit, and the report says so."""
    root, psc = v2_tree(cgfs, tmp_path, overrides={**COUNTERS, "pids.current": "65\n"})
    be = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0)
    assert profile(["true"], Limits(pids=64), backend=be, interval=0.01).pids_peak == 64
    assert profile(["true"], Limits(), backend=be, interval=0.01).pids_peak == 65


@pytest.mark.parametrize("native", READERS)
def test_the_kernels_pids_peak_and_refused_forks_are_read(
    cgfs: FakeCgroupFs, tmp_path: Path, native: bool
) -> None:
    """pids.peak (Linux ≥ 6.1) and pids.events' max: a Pool(8) under --pids 4 had read a
    sampled peak of 1 of 4 and no word of its 5 refused forks."""
    overrides = {
        **COUNTERS,
        "pids.current": "1\n",
        "pids.peak": "4\n",
        "pids.events": "max 5\n",
    }
    root, psc = v2_tree(cgfs, tmp_path, overrides=overrides)
    be = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0, native=native)
    r = profile(["true"], Limits(pids=4), backend=be, interval=0.01)
    assert (r.pids_peak, r.pids_refused) == (4, 5)
