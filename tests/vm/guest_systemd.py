"""edgeprof on a host systemd manages: as root, as a user in the scope systemd delegates,
and through a Docker daemon that uses the systemd cgroup driver.

Runs inside the systemd guest only (test_cgroup_v2.py boots the image's systemd 252 as
PID 1 for it and names this file; its name keeps the host's pytest from collecting it).
The tests run as root in a oneshot service of that guest, as a CI job's sudo would.  The
guest has no network: Docker and the busybox image's tarball were prepared on the host.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require
from tests.host.lost_time import LostTime, most_avg_pct
from tests.host.ordinary_user import AsUser

CGROUP = Path("/sys/fs/cgroup")
WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
REPO = Path(__file__).resolve().parents[2]
MiB = 2**20
USER = "edgeprof-vm-user"
#: Where a run group sits: root's in this process's scope, a user's in a scope of its own.
ROOT_GROUP = re.compile(r"^/system\.slice/(edgeprof-(\d+)-\d+\.scope)/edgeprof-\2-\d+-[0-9a-f]{8}$")
USER_GROUP = re.compile(
    r"^/user\.slice/user-(\d+)\.slice/user@\1\.service/app\.slice/(run-\w+\.scope)"
    r"/edgeprof-\d+-\d+-[0-9a-f]{8}$"
)
#: Prints the workload's own group, holds 48 MiB and spins 0.6 s of CPU time.
WORKLOAD = (
    "import time; print('group', open('/proc/self/cgroup').read().strip()[3:], flush=True); "
    "block = bytearray(48 << 20); block[::4096] = b'x' * len(block[::4096]); "
    "t = time.process_time()\nwhile time.process_time() - t < 0.6: pass"
)


@pytest.fixture(autouse=True)
def _systemd_is_pid_1() -> None:
    """Only the systemd guest names this file; run elsewhere it fails in CI rather than skip."""
    require(Path("/run/systemd/system").is_dir(), "a guest that boots systemd")
    require((CGROUP / "cgroup.controllers").exists(), "cgroup v2")
    require(os.geteuid() == 0, "root, as the guest's service runs")


def units(pattern: str) -> list[str]:
    out = subprocess.run(
        ["systemctl", "list-units", "--all", "--plain", "--no-legend", pattern],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def gone(path: Path, unit: str, timeout: float = 60.0) -> bool:
    """systemd stops an empty scope when its cgroup says so (an inotify event on
    ``cgroup.events``) and then removes the directory: wait for that, not a fixed time."""
    deadline = time.monotonic() + timeout
    while path.exists() or units(unit):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def group_of(stdout: str) -> str:
    return next(ln.split(None, 1)[1] for ln in stdout.splitlines() if ln.startswith("group "))


def edgeprof(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "edgeprof", *args]


EMULATOR_WARNINGS = (
    "the sampler fell behind",
    "other tasks on this host held",
    "memory grew through the run's second half",
)
"""Warnings this emulated guest's timing may give, which say nothing of delegation or
clean-up: a sampler held up past a tenth of its ticks; the run held off its CPUs by other
tasks (``cpu.pressure``'s, edgeprof.measure.contention) in 2 vCPUs that also run systemd,
dockerd, the sampler and qemu's stalls; the workload's memory still rising in the run's
second half (edgeprof.measure.growth: under TCG a Python workload's start-up and its
allocations stretch over seconds, +985.2KiB/s and +17.2MiB/s in two of these runs)."""


def unexpected_warnings(stdout: str) -> list[str]:
    """The report's warnings, less :data:`EMULATOR_WARNINGS`."""
    return [
        line
        for line in stdout.splitlines()
        if "warning" in line and not any(w in line for w in EMULATOR_WARNINGS)
    ]


def test_root_runs_in_a_scope_systemd_delegates(tmp_path: Path) -> None:
    """As root, edgeprof asks systemd for a scope with Delegate=yes and runs below it: the
    limits hold, the peak is the kernel's, nothing is written at the top of systemd's tree,
    and when edgeprof exits systemd removes the scope with everything in it."""
    out = tmp_path / "run"
    stalls = LostTime.start()
    done = subprocess.run(
        [*edgeprof(["run", "--cpus", "0.5", "--memory", "160m", "--out", str(out), "--",
                    "python3", "-c", WORKLOAD])],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    lost_s = stalls.stop()
    assert done.returncode == 0, done.stderr + done.stdout
    assert unexpected_warnings(done.stdout) == [], done.stdout
    group = group_of(done.stdout)
    m = ROOT_GROUP.match(group)
    assert m, group
    scope = m.group(1)
    r = json.loads((out / "result.json").read_text())
    assert (r["mechanism"], r["termination"]) == ("cgroup2", "exited")
    assert r["memory"]["peak_source"] == "kernel"
    assert 48 * MiB <= r["memory"]["peak_bytes"] <= 160 * MiB, r["memory"]
    assert r["cpu"]["nr_throttled"] > 0, r["cpu"]
    assert 0 < r["cpu"]["avg_pct"] <= most_avg_pct(r, lost_s), (r["cpu"], lost_s)
    assert not (CGROUP / "edgeprof").exists()
    assert gone(CGROUP / "system.slice" / scope, scope), units("edgeprof-*")


def test_root_scope_serves_every_run_and_an_oom_is_a_result(tmp_path: Path) -> None:
    """A sweep of runs, one of them OOM-killed, all in the one scope systemd gave this
    edgeprof (its unit says Delegate=yes while it lives), gone afterwards."""
    hold = WORKLOADS / "hold_memory.py"
    probe = tmp_path / "probe.sh"
    probe.write_text(
        'unit=$(basename "$(dirname "$(cut -d: -f3 /proc/self/cgroup)")")\n'
        'echo "unit $unit $(systemctl show -P Delegate "$unit")"\n'
        f'exec python3 "{hold}" "$1" "{tmp_path}/hwm"\n'
    )
    outs = {mib: tmp_path / f"hold{mib}" for mib in (16, 96)}
    seen = set()
    for mib, out in outs.items():
        done = subprocess.run(
            edgeprof(["run", "--memory", "64m", "--out", str(out), "--", "sh", str(probe),
                      str(mib)]),
            capture_output=True, text=True, timeout=600, cwd=REPO,
        )  # fmt: skip
        said = [ln.split() for ln in done.stdout.splitlines() if ln.startswith("unit ")]
        assert said and said[0][2] == "yes", done.stdout + done.stderr
        seen.add(said[0][1])
        r = json.loads((out / "result.json").read_text())
        assert r["termination"] == ("exited" if mib == 16 else "oom"), (mib, r["termination"])
        assert r["memory"]["peak_bytes"] <= 64 * MiB
    assert all(gone(CGROUP / "system.slice" / unit, unit) for unit in seen), units("edgeprof-*")


@pytest.fixture(scope="module")
def user_manager() -> Iterator[int]:
    """An account with its systemd user manager running (user@<uid>.service, as a login
    starts it), in this throwaway guest."""
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", USER], check=True)
    uid = pwd.getpwnam(USER).pw_uid
    subprocess.run(["systemctl", "start", f"user@{uid}.service"], check=True, timeout=300)
    yield uid
    subprocess.run(["systemctl", "stop", f"user@{uid}.service"], check=False, timeout=300)


def test_a_user_runs_in_the_scope_systemd_run_user_delegates(
    user_manager: int, tmp_path: Path
) -> None:
    """docs/backends.md's path for a workstation: `systemd-run --user --scope -p Delegate=yes
    edgeprof …`.  Debian's user@.service delegates cpu, memory and pids to the user: the CPU
    and memory limits hold with the kernel's peak, io and cpuset are said to be missing,
    and the scope is gone when edgeprof is."""
    uid = user_manager
    home = Path(pwd.getpwuid(uid).pw_dir)
    user = AsUser(home, uid=uid)
    env = {**user.env, "XDG_RUNTIME_DIR": f"/run/user/{uid}"}
    out = home / "run"
    argv = user.command(
        ["systemd-run", "--user", "--scope", "-p", "Delegate=yes", "--quiet", "--",
         user.python, "-m", "edgeprof", "run", "--cpus", "0.5", "--memory", "160m",
         "--out", str(out), "--", "python3", "-c", WORKLOAD]
    )  # fmt: skip
    stalls = LostTime.start()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    lost_s = stalls.stop()
    assert done.returncode == 0, done.stderr + done.stdout
    group = group_of(done.stdout)
    m = USER_GROUP.match(group)
    assert m, group
    r = json.loads((out / "result.json").read_text())
    assert (r["mechanism"], r["termination"]) == ("cgroup2", "exited")
    assert r["memory"]["peak_source"] == "kernel"
    assert 48 * MiB <= r["memory"]["peak_bytes"] <= 160 * MiB, r["memory"]
    assert r["cpu"]["nr_throttled"] > 0, r["cpu"]
    assert 0 < r["cpu"]["avg_pct"] <= most_avg_pct(r, lost_s), (r["cpu"], lost_s)
    assert (out / "result.json").stat().st_uid == uid
    scope_dir = CGROUP / Path(group).parent.relative_to("/")
    missing = {ln.split("'")[1] for ln in done.stdout.splitlines() if "is not delegated" in ln}
    assert missing == {"io", "cpuset"}, done.stdout
    assert gone(scope_dir, m.group(2))


BUSYBOX = "edgeprof-test/busybox:latest"
#: Holds 19 MiB of text in a shell variable, then spins for 2 s of wall time.
BUSYBOX_SCRIPT = (
    'x=$(yes | head -c 20000000); timeout 2 sh -c "while :; do :; done"; echo "held ${#x}"'
)


@pytest.fixture(scope="module")
def systemd_dockerd() -> Iterator[str]:
    """A private dockerd with the systemd cgroup driver (its containers' groups are systemd
    units), its layers on the guest's tmpfs (``vfs``: overlay2 cannot stack on the guest's
    overlay root), the busybox image imported from the host's cached tarball."""
    import docker

    from tests.docker.daemon_images import ensure_base_images

    require(shutil.which("dockerd") is not None, "dockerd (installed on the host before boot)")
    state = Path(tempfile.mkdtemp(prefix="edgeprof-dockerd-", dir="/run"))
    host = f"unix://{state}/docker.sock"
    with open(state / "dockerd.log", "wb") as log:
        daemon = subprocess.Popen(
            ["dockerd", f"--data-root={state}/data", f"--exec-root={state}/exec",
             f"--host={host}", f"--pidfile={state}/dockerd.pid",
             "--exec-opt", "native.cgroupdriver=systemd", "--storage-driver=vfs",
             "--bridge=none", "--iptables=false", "--ip-forward=false", "--ip-masq=false"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180  # 1 s in the guest, measured
        while True:
            try:  # the client asks the daemon's version as it is made
                client = docker.DockerClient(base_url=host)
                break
            except docker.errors.DockerException:
                assert daemon.poll() is None, (state / "dockerd.log").read_text()[-3000:]
                assert time.monotonic() < deadline, (state / "dockerd.log").read_text()[-3000:]
                time.sleep(0.2)
        assert client.info()["CgroupDriver"] == "systemd"
        ensure_base_images(host, names=["busybox"])
        yield host
        client.close()
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        shutil.rmtree(state, ignore_errors=True)


def test_docker_with_the_systemd_driver_is_exact_and_leaves_no_slice(
    systemd_dockerd: str, tmp_path: Path
) -> None:
    """A CI runner's Docker uses the systemd cgroup driver: the container goes in a slice of
    its own that systemd makes for runc, whose kernel counters give the exact totals; the
    limits hold; and once the run is over, no container, no slice unit and no group is
    left (systemd removes the slice when edgeprof stops it)."""
    import docker

    out = tmp_path / "docker"
    stalls = LostTime.start()
    done = subprocess.run(
        edgeprof(["run", "--backend", "docker", "--image", BUSYBOX, "--cpus", "0.5",
                  "--memory", "96m", "--out", str(out), "--", "sh", "-c", BUSYBOX_SCRIPT]),
        env={**os.environ, "DOCKER_HOST": systemd_dockerd},
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    lost_s = stalls.stop()
    assert done.returncode == 0, done.stderr + done.stdout
    assert "held 19999999" in done.stdout, done.stdout  # $(…) drops the last newline
    assert unexpected_warnings(done.stdout) == [], done.stdout
    r = json.loads((out / "result.json").read_text())
    assert (r["mechanism"], r["termination"]) == ("docker+cgroup2", "exited")
    assert r["memory"]["peak_source"] == "kernel"
    assert 19 * MiB <= r["memory"]["peak_bytes"] <= 96 * MiB, r["memory"]
    # Throttling is the container's own group's (the slice has no quota): it is found even
    # where systemd makes the scope after the container's start returned (a CI run saw none).
    throttled = r["cpu"]["nr_throttled"]
    assert throttled is not None and throttled > 0, (r["cpu"], done.stdout)
    assert 0 < r["cpu"]["avg_pct"] <= most_avg_pct(r, lost_s), (r["cpu"], lost_s)
    assert units("edgeprof_*") == []
    assert [p.name for p in CGROUP.glob("edgeprof*")] == []
    client = docker.DockerClient(base_url=systemd_dockerd)
    try:
        assert client.containers.list(all=True) == []
    finally:
        client.close()
