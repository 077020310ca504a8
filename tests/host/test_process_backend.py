"""The process backend on the real kernel: a workload's process tree followed through psutil.

These runs need no cgroup, so they run as root here like the rest of the tier; the last test
runs edgeprof as an ordinary user (``nobody``), where ``auto`` must fall back to this backend.
Left out of the VM tier (``not_in_vm``): nothing here depends on the cgroup version.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import edgeprof
from edgeprof import Limits, Termination
from edgeprof.backends import ProcessBackend
from edgeprof.backends._process_run import own_high_water_mark, rss_counter_slack
from edgeprof.backends.cgroup_v2 import fix
from edgeprof.errors import LimitError

from .ordinary_user import NOBODY, AsUser
from .test_phases_kernel import edge_cpu

PY = sys.executable
WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
REPO = Path(__file__).resolve().parents[2]
MiB = 2**20
pytestmark = pytest.mark.not_in_vm

EXIT_SLACK_S = 0.1
"""CPU a process spends after it last read its own clock: finishing the interpreter and
exiting (a few ms each on our hosts; the tree has two)."""


def _spawned_pids_gone(pidfile: Path) -> None:
    """The process whose pid the workload wrote is gone (edgeprof reaped it: no zombie)."""
    assert not Path(f"/proc/{int(pidfile.read_text())}").exists()


def test_cpu_time_of_a_tree_with_an_orphan_is_exact(tmp_path: Path) -> None:
    """The tree's CPU time is what its processes used, the orphaned grandchild included (it
    is re-parented to edgeprof and reaped with wait4); the same workload under the cgroup
    backend in the same test agrees within the processes' exits."""
    figures = {}
    for backend in ("process", "cgroup"):
        out = tmp_path / backend
        out.mkdir()
        r = edgeprof.profile(
            [PY, str(WORKLOADS / "tree_cpu.py"), str(out), "0.4", "0.3"], backend=backend
        )
        assert r.termination is Termination.EXITED and r.exit_code == 0, r
        own = float((out / "main").read_text()) + float((out / "grandchild").read_text())
        assert r.cpu.total_s is not None
        # The main process's own clock counts from its fork, edgeprof's from its exec: the
        # spawn between (kept as spawn_s) is in the one and not the other.
        lo = own - (r.cpu.spawn_s or 0.0)
        assert lo <= r.cpu.total_s <= own + EXIT_SLACK_S, (backend, r.cpu, own)
        figures[backend] = r
    p = figures["process"]
    assert p.backend == "process" and p.mechanism == "process"
    assert p.cpu.user_s is not None and p.cpu.system_s is not None
    assert p.cpu.user_s + p.cpu.system_s == pytest.approx(p.cpu.total_s)
    assert figures["cgroup"].cpu.total_s == pytest.approx(p.cpu.total_s, abs=EXIT_SLACK_S)


def test_peak_of_one_process_is_its_own_high_water_mark(tmp_path: Path) -> None:
    """For one process the peak is the kernel's own high-water mark of its resident set
    (wait4's ru_maxrss), which the workload read (``VmHWM``) just before it exited.  Since
    Linux 6.2 a process's RSS is a per-CPU counter, and the two marks are taken from its
    approximate value: they differ by up to one counter batch per CPU (``mm_init`` →
    ``percpu_counter_batch``: max(32, 2 × CPUs) pages); 112 KiB apart seen here.  The
    workload holds 64 MiB more than this test's process has ever had resident, since exec
    folds the spawner's mark into the workload's (a 96 MiB workload read 340 MiB when the
    test process had grown to that)."""
    hwm = tmp_path / "hwm"
    mine = own_high_water_mark()
    assert mine is not None
    size = max(96 * MiB, mine + 64 * MiB)
    r = edgeprof.profile(
        [PY, str(WORKLOADS / "hold_memory.py"), str(size // MiB + 1), str(hwm)],
        backend="process",
    )
    assert r.termination is Termination.EXITED
    own = int(hwm.read_text())
    assert own >= size
    assert r.memory.peak_source == "rss"
    assert r.memory.peak_bytes is not None
    assert abs(r.memory.peak_bytes - own) <= max(MiB, rss_counter_slack()), (
        r.memory.peak_bytes,
        own,
    )


def test_shared_memory_is_shmem_and_in_the_floor(tmp_path: Path) -> None:
    """A /dev/shm mapping is shared memory, which no limit reclaims without swap: it had been
    read as ``file`` (statm's "shared" is RssFile + RssShmem) and left out of the floor
    (``memory: peak 114.1MiB = anon 7.4 + file 106.7``, floor 7.4 MiB, for 100 MiB written).
    Its size is the workload's own ``RssShmem``, within a counter batch per CPU."""
    from edgeprof.measure.memory import PartPeaks, split
    from edgeprof.model import RunSpec

    path = Path(f"/dev/shm/edgeprof-test-{os.getpid()}")
    out_r, out_w = os.pipe()
    hold_r, hold_w = os.pipe()
    command = (PY, str(WORKLOADS / "hold_shm.py"), str(path), "64", str(hold_r))
    spec = RunSpec(command=command, stdout=out_w, pass_fds=(hold_r,))
    try:
        with ProcessBackend().launch(spec) as run:
            os.close(out_w)
            os.close(hold_r)
            with os.fdopen(out_r) as said:
                own = int(said.readline())  # the workload has written every page
            c = run.sample()
            os.close(hold_w)
            assert run.wait(60) == 0
    finally:
        path.unlink(missing_ok=True)
    assert own >= 64 * MiB
    assert c.memory_shmem is not None and c.memory_file is not None
    assert abs(c.memory_shmem - own) <= max(MiB, rss_counter_slack()), (c, own)
    parts = split(c)
    assert parts is not None
    anon, file, shmem, _ = parts
    assert shmem == c.memory_shmem
    # The file cache left is the interpreter's mapped files, not the 64 MiB.
    assert file is not None and file < 32 * MiB, c
    peaks = PartPeaks()
    peaks.add(0.0, c, None)
    floor = peaks.floor()
    assert floor is not None
    assert abs(floor - (anon + own)) <= max(MiB, rss_counter_slack()), (floor, c)


def test_a_workload_smaller_than_edgeprof_is_not_given_edgeprofs_peak(tmp_path: Path) -> None:
    """Workloads far smaller than a spawner that holds 64 MiB more than it ever did: wait4's
    mark is the spawner's, not theirs, so it is not reported, and a warning says why.  A
    ``sleep`` that the samples see gets the largest sample; ``/bin/true``, gone before the
    first sample, gets none (n/a, not 0 and not the spawner's)."""
    ballast = bytearray((own_high_water_mark() or 0) + 64 * MiB)  # zero-filled: resident
    spawner = own_high_water_mark()
    assert spawner is not None and spawner >= len(ballast)
    seen = edgeprof.profile(["sleep", "0.3"], backend="process", interval=0.05)
    gone = edgeprof.profile(["/bin/true"], backend="process")
    del ballast
    for r in (seen, gone):
        assert r.termination is Termination.EXITED
        assert any("cannot be told from edgeprof's" in w for w in r.warnings), r.warnings
    assert seen.memory.peak_source == "sampled", seen.memory
    assert seen.memory.peak_bytes is not None and 0 < seen.memory.peak_bytes < 64 * MiB
    assert gone.memory.peak_bytes is None or gone.memory.peak_bytes < 64 * MiB, gone.memory


@pytest.mark.parametrize("children_files", [True, False], ids=["children-lists", "scan"])
def test_a_daemon_that_outlives_the_main_process_is_killed_and_counted(
    tmp_path: Path, children_files: bool
) -> None:
    """A double-forked, setsid grandchild still spinning when the main process exits is
    found (it is edgeprof's now), killed with the run, and its CPU time is the run's; the
    tree found through the kernel's children lists or through a scan of every process."""
    pidfile = tmp_path / "pid"
    r = edgeprof.profile(
        [PY, str(WORKLOADS / "daemonize.py"), "cpu=0.3", str(pidfile)],
        backend=ProcessBackend(children_files=children_files),
    )
    assert r.termination is Termination.EXITED
    assert r.cpu.total_s is not None and r.cpu.total_s >= 0.3, r.cpu
    _spawned_pids_gone(pidfile)


def test_the_workload_dies_with_a_killed_edgeprof(tmp_path: Path) -> None:
    """SIGKILL to edgeprof (no clean-up of its own can run) had left the process backend's
    workload running under init: it gets SIGKILL from the kernel (PR_SET_PDEATHSIG)."""
    import signal
    import time

    ready = tmp_path / "ready"
    code = f"import os, time; open({str(ready)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    cmd = [PY, "-m", "edgeprof", "run", "--backend", "process", "--", PY, "-c", code]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ep = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = None
    try:
        deadline = time.monotonic() + 120  # the workload's start, on a loaded host too
        while not (ready.exists() and ready.read_text()) and ep.poll() is None:
            assert time.monotonic() < deadline, "the workload never started"
            time.sleep(0.01)
        pid = int(ready.read_text())
        ep.send_signal(signal.SIGKILL)
        ep.wait()
        while Path(f"/proc/{pid}").exists():  # gone: killed, and reaped by init
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
            if state == "Z":
                break
            assert time.monotonic() < deadline, f"the workload {pid} outlived edgeprof"
            time.sleep(0.01)
    finally:
        ep.kill()
        ep.wait()
        if pid is not None and Path(f"/proc/{pid}").exists():  # a failed check leaves none
            os.kill(pid, signal.SIGKILL)


def test_timeout_kills_a_tree_that_ignores_sigterm(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    # The main process ignores SIGTERM; its daemonized grandchild spins: both must go.
    script = (
        f"import os, runpy, sys; sys.argv = ['d', 'cpu=0.05', {str(pidfile)!r}]; "
        f"pid = os.fork()\n"
        f"if pid == 0: runpy.run_path({str(WORKLOADS / 'daemonize.py')!r}); os._exit(0)\n"
        f"os.waitpid(pid, 0); runpy.run_path({str(WORKLOADS / 'ignore_term.py')!r})"
    )
    r = edgeprof.profile([PY, "-c", script], backend="process", timeout=1, kill_grace=0.2)
    assert r.termination is Termination.TIMEOUT
    _spawned_pids_gone(pidfile)


def test_whole_cores_are_held_by_affinity_for_every_descendant() -> None:
    """--cpus 1 pins the run to one core of edgeprof's own (leased), and a grandchild
    inherits it; the result records the core."""
    show = "import os; print(sorted(os.sched_getaffinity(0)))"
    r, out = _profile_output(
        ["sh", "-c", f"{PY} -c '{show}'; ({PY} -c '{show}') & wait"],
        Limits(cpus=1),
    )
    allowed = sorted(os.sched_getaffinity(0))
    assert r.limits.cpuset is not None and len(r.limits.cpuset) == 1
    assert r.limits.cpuset[0] in allowed
    assert out.split() == [str(list(r.limits.cpuset))] * 2, out
    assert r.cpu.period_s is None  # no quota, so no CFS period (0.1 had been recorded)


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        (Limits(cpus=0.5), "^cpus 0.5: the process backend holds whole cores"),
        (Limits(memory="256m"), "^memory: the process backend cannot limit memory"),
        (Limits(pids=64), "^pids: the process backend cannot limit"),
    ],
    ids=["cpu-share", "memory", "pids"],
)
def test_limits_it_cannot_hold_are_refused_before_anything_starts(
    tmp_path: Path, limits: Limits, said: str
) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(LimitError, match=said):
        edgeprof.profile(["touch", str(marker)], limits, backend="process", out_dir=tmp_path / "o")
    assert not marker.exists()
    assert not (tmp_path / "o").exists()


def test_phases_reach_the_process_backend(tmp_path: Path) -> None:
    """The events pipe is inherited as with the cgroup backends, and a phase's CPU is the
    tree's within the kernel tier's bound (test_phases_kernel.py)."""
    out = tmp_path / "stdout"
    with open(out, "w") as f:
        r = edgeprof.profile(
            [PY, str(WORKLOADS / "phases.py"), "32"],
            interval=0.02,
            env={"PYTHONPATH": str(REPO)},
            stdout=f.fileno(),
            backend="process",
            out_dir=tmp_path / "run",
        )
    assert r.termination is Termination.EXITED
    assert [p.name for p in r.phases][:2] == ["alloc", "busy"]
    own_busy = float(out.read_text().split("busy_cpu_s=")[1].split()[0])
    busy = r.phases[1]
    assert busy.cpu_s is not None
    # What the readings around the edges leave open, as measured; plus /proc's 10 ms tick
    # at each of the two edges (a fixed 0.02 s alone fails on one late reading).
    edges = edge_cpu(tmp_path / "run" / "samples.csv", busy.start_s, busy.start_s + busy.wall_s)
    assert abs(busy.cpu_s - own_busy) <= 0.05 * own_busy + 0.02 + edges, (
        busy.cpu_s, own_busy, edges,
    )  # fmt: skip


def _profile_output(command: list[str], limits: Limits) -> tuple[edgeprof.RunResult, str]:
    with tempfile.TemporaryFile() as f:
        r = edgeprof.profile(command, limits, backend="process", stdout=f.fileno())
        f.seek(0)
        return r, f.read().decode()


# -- as an ordinary user -------------------------------------------------------------------------


def test_ordinary_user_falls_back_to_the_process_backend() -> None:
    """As ``nobody`` no cgroup can be created (cgroup v1 has no delegation; an undelegated v2
    group is not the user's): ``edgeprof run`` with the auto backend measures with the
    process backend and says why in one warning; the figures are the tree's, and the outputs
    are the user's.  The cgroup backend asked for by name refuses in one line."""
    shared = Path(tempfile.mkdtemp(prefix="edgeprof-process-"))
    try:
        shared.chmod(0o777)
        user = AsUser(shared)
        env = user.env
        out = shared / "out"
        workload = str(user.path(WORKLOADS / "tree_cpu.py"))
        cmd = user.edgeprof(
            ["run", "--cpus", "1", "--out", str(out), "--",
             "python3", workload, str(shared), "0.3", "0.2"]
        )  # fmt: skip
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr + done.stdout
        warned = [ln for ln in done.stdout.splitlines() if "no cgroup can be created here" in ln]
        assert len(warned) == 1, done.stdout
        result = json.loads((out / "result.json").read_text())
        assert (result["backend"], result["mechanism"]) == ("process", "process")
        assert result["memory"]["peak_source"] == "rss"
        own = float((shared / "main").read_text()) + float((shared / "grandchild").read_text())
        lo = own - (result["cpu"]["spawn_s"] or 0.0)  # its clock counts from the fork
        assert lo <= result["cpu"]["total_s"] <= own + EXIT_SLACK_S
        assert (out / "result.json").stat().st_uid == NOBODY
        assert len(result["limits"]["cpuset"]) == 1
        for args, said in [
            (["--cpus", "0.5"], "holds whole cores (CPU affinity) but not a CPU share"),
            (["--backend", "cgroup"], _no_cgroup_for_users()),
        ]:
            refused = subprocess.run(
                user.edgeprof(["run", *args, "--", "true"]),
                env=env,
                capture_output=True,
                text=True,
            )
            assert refused.returncode == 2, refused
            assert refused.stderr.count("\n") == 1 and said in refused.stderr, refused.stderr
    finally:
        shutil.rmtree(shared)


def _no_cgroup_for_users() -> str:
    """What the cgroup backend says to an ordinary user here: cgroup v1 has no delegation;
    on cgroup v2 this test's user was given no group, and the delegated scope is offered
    only where systemd runs with the user's manager (``AsUser`` sets no
    ``XDG_RUNTIME_DIR``: the user's ``/run/user/UID``); a GPU host without systemd is told to
    run as root alone."""
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return f"is not delegated to this user; {fix(runtime_dir=Path(f'/run/user/{NOBODY}'))}"
    return "run edgeprof as root (cgroup v1 has no safe delegation to ordinary users)"
