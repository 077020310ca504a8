"""The docker tier's own infrastructure: the private daemon, its cgroups and base images."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import HANG_S
from tests.docker import daemon_images
from tests.docker.daemon import (
    BUSYBOX_IMAGE,
    PYTHON3_IMAGE,
    DockerSession,
    _mounts_under,
    cgroup_hierarchies,
    ensure_base_images,
    own_cgroup,
    reap_stale_daemons,
    start_daemon,
)

REPO = Path(__file__).resolve().parents[2]
CRASHING_SESSION = """
import json, sys, time
from pathlib import Path
import docker
from tests.docker.daemon import BUSYBOX_IMAGE, ensure_base_images, own_cgroup, start_daemon
d = start_daemon(Path(sys.argv[1]))
ensure_base_images(d.host, names=["busybox"])
client = docker.DockerClient(base_url=d.host)
c = client.containers.run(BUSYBOX_IMAGE, ["sleep", "300"], detach=True)
# As the backend does: a container under a parent of its own, outside the daemon's.
run_parent = own_cgroup("memory").rstrip("/") + "/edgeprof-crashrun-" + str(d.pid)
c2 = client.containers.run(BUSYBOX_IMAGE, ["sleep", "300"], detach=True,
                           cgroup_parent=run_parent)
c.reload()
c2.reload()
print(json.dumps({"parent": d.cgroup_parent, "state_dir": str(d.state_dir),
                  "run_dir": str(d.run_dir), "data_root": str(d.data_root),
                  "pids": [d.pid, d.containerd_pid, c.attrs["State"]["Pid"]],
                  "run_parent": run_parent, "run_id": c2.id,
                  "run_pid": c2.attrs["State"]["Pid"],
                  "shims": [str(s) for s in d._shim_sockets()]}), flush=True)
time.sleep(600)
"""

CGROUP_ROOT = Path("/sys/fs/cgroup")
V2_ONLY = (CGROUP_ROOT / "cgroup.controllers").exists()
"""A cgroup v2-only host: one unified hierarchy, no per-controller ones."""
MEMORY = "unified" if V2_ONLY else "memory"
"""The hierarchy of the memory controller, as ``_proc_cgroups`` names it."""
HIERARCHIES = [
    h
    for h in ("memory", "cpu", "name=systemd", "unified")
    if any(h in m.name.split(",") for m in cgroup_hierarchies())
]
"""The hierarchies a daemon's parent must map into, of those this host mounts (all four on
our v1 hybrid hosts; ``unified`` alone on a v2-only one)."""


def _proc_cgroups(pid: int) -> dict[str, str]:
    """{hierarchy (controllers, ``name=systemd``, or ``unified``): group} of ``pid``."""
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        out[ctrls or "unified"] = path
    return out


def _alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _hierarchy(dirs: dict[str, Path], controller: str) -> Path:
    """The directory of the hierarchy that has ``controller`` (``cpu`` may be ``cpu,cpuacct``)."""
    for name, d in dirs.items():
        if controller in name.split(","):
            return d
    raise AssertionError(f"no {controller} hierarchy among {sorted(dirs)}")


def _wait_gone(paths: list[Path], timeout: float = 10.0) -> list[Path]:
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in paths if p.exists()]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def test_daemon_answers_ping_with_the_cgroupfs_driver(docker_daemon: DockerSession) -> None:
    d = docker_daemon.daemon
    assert docker_daemon.client.ping()
    info = docker_daemon.client.info()
    assert info["CgroupDriver"] == "cgroupfs"
    assert info["CgroupVersion"] == ("2" if V2_ONLY else "1")
    assert Path(info["DockerRootDir"]) == d.data_root
    assert float(docker_daemon.client.version()["ApiVersion"]) >= 1.41
    # Our own containerd, not a system one; the daemons stay in our memory group.
    cmdline = Path(f"/proc/{d.pid}/cmdline").read_bytes().split(b"\0")
    assert d.containerd_address.encode() in cmdline
    assert cmdline[cmdline.index(b"--cgroup-parent") + 1] == d.cgroup_parent.encode()
    for pid in (d.pid, d.containerd_pid):
        assert own_cgroup("memory", pid) == own_cgroup("memory")
    assert d.cgroup_parent.startswith(own_cgroup("memory").rstrip("/") + "/")


def test_busybox_output_and_exit_code_come_back(docker_daemon: DockerSession) -> None:
    client = docker_daemon.client
    img = docker_daemon.images["busybox"]
    assert img == BUSYBOX_IMAGE
    assert client.containers.run(img, ["echo", "hi"], remove=True) == b"hi\n"
    c = client.containers.run(img, ["sh", "-c", "echo out; echo err >&2; exit 3"], detach=True)
    try:
        assert c.wait(timeout=60)["StatusCode"] == 3
        assert c.logs(stdout=True, stderr=False) == b"out\n"
        assert c.logs(stdout=False, stderr=True) == b"err\n"
    finally:
        c.remove(force=True)


def test_memory_limit_oom_kills_the_container(docker_daemon: DockerSession) -> None:
    c = docker_daemon.client.containers.run(
        docker_daemon.images["busybox"],
        ["sh", "-c", "head -c 200m /dev/zero | tail"],
        mem_limit="64m",
        memswap_limit="64m",
        detach=True,
    )
    try:
        assert c.wait(timeout=60)["StatusCode"] == 137
        c.reload()
        assert c.attrs["State"]["OOMKilled"] is True
        assert c.attrs["HostConfig"]["Memory"] == 64 * 2**20
    finally:
        c.remove(force=True)


def test_container_groups_nest_under_our_memory_group(docker_daemon: DockerSession) -> None:
    """In every hierarchy the container's group is <daemon's cgroup parent>/<id>, and the
    parent is below our own memory group; runc removes the container's groups with it."""
    d = docker_daemon.daemon
    own_mem = own_cgroup("memory")
    c = docker_daemon.client.containers.run(
        docker_daemon.images["busybox"], ["sleep", "300"], mem_limit="96m", detach=True
    )
    try:
        c.reload()
        pid = int(c.attrs["State"]["Pid"])
        assert pid > 0
        expected = f"{d.cgroup_parent}/{c.id}"
        groups = _proc_cgroups(pid)
        assert groups[MEMORY] == expected
        assert groups[MEMORY].startswith(own_mem.rstrip("/") + "/")
        # Every hierarchy, the named systemd one and the unified one included.
        assert set(groups.values()) == {expected}, groups
        assert len(groups) == len(cgroup_hierarchies())
        dirs = d.group_dirs(expected)
        assert len(dirs) == len(cgroup_hierarchies())
        for name, g in dirs.items():
            assert pid in {int(x) for x in (g / "cgroup.procs").read_text().split()}, name
        mem_dir = _hierarchy(dirs, "unified" if V2_ONLY else "memory")
        limit_file = "memory.max" if V2_ONLY else "memory.limit_in_bytes"
        assert int((mem_dir / limit_file).read_text()) == 96 * 2**20
    finally:
        c.remove(force=True)
    assert _wait_gone(list(dirs.values())) == []
    assert not _alive(pid)


def test_python3_image_runs_python(docker_daemon: DockerSession) -> None:
    img = docker_daemon.images["python3"]
    assert img == PYTHON3_IMAGE
    out = docker_daemon.client.containers.run(img, ["python3", "-c", "print(1+1)"], remove=True)
    assert out == b"2\n"
    sources = docker_daemon.client.containers.run(
        img, ["cat", "/etc/apt/sources.list"], remove=True
    ).decode()
    assert "deb http://deb.debian.org/debian bookworm main" in sources


def test_apt_works_in_the_python3_image(docker_daemon: DockerSession) -> None:
    """Environments with apt requirements are built from this image: apt-get must reach
    deb.debian.org (host network: the private daemon has no bridge)."""
    out = docker_daemon.client.containers.run(
        docker_daemon.images["python3"],
        ["sh", "-c", "apt-get -q update >/dev/null && apt-cache policy busybox-static"],
        network_mode="host",
        remove=True,
    ).decode()
    assert "Candidate:" in out and "(none)" not in out.split("Candidate:")[1].split()[0]


def test_base_images_are_idempotent(
    docker_daemon: DockerSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second call builds and imports nothing: any build fails the test (not "it took
    under 5 s", which a loaded daemon or disk need not keep), and the images are the same."""
    client = docker_daemon.client
    ids = {k: client.images.get(v).id for k, v in docker_daemon.images.items()}

    def no_build(cache: Path) -> Path:
        raise AssertionError(f"a base image was rebuilt (cache {cache})")

    for short, spec in daemon_images._SPECS.items():
        monkeypatch.setitem(daemon_images._SPECS, short, dataclasses.replace(spec, build=no_build))
    assert ensure_base_images(docker_daemon.host) == docker_daemon.images
    assert {k: client.images.get(v).id for k, v in docker_daemon.images.items()} == ids


def test_stop_cleans_up_after_a_dead_dockerd(docker_daemon: DockerSession, tmp_path: Path) -> None:
    """A second, fresh daemon: dockerd is SIGKILLed with a container running; stop() must
    still remove the container's processes, shim, mounts and groups, and the daemon's own."""
    import docker

    d2 = start_daemon(tmp_path / "second")
    try:
        assert d2.cgroup_parent != docker_daemon.daemon.cgroup_parent
        assert not d2.shared_data_root
        ensure_base_images(d2.host, names=["busybox"])
        client = docker.DockerClient(base_url=d2.host)
        try:
            c = client.containers.run(BUSYBOX_IMAGE, ["sleep", "300"], detach=True)
            c.reload()
            pid = int(c.attrs["State"]["Pid"])
        finally:
            client.close()
        assert _proc_cgroups(pid)[MEMORY] == f"{d2.cgroup_parent}/{c.id}"
        assert _mounts_under(d2.data_root), "the container's rootfs should be mounted"
        shim_socks = d2._shim_sockets()
        assert len(shim_socks) == 1 and all(s.is_socket() for s in shim_socks)
        os.kill(d2.pid, signal.SIGKILL)
    finally:
        d2.stop()
    assert d2.leftovers() == []
    for p in (d2.pid, d2.containerd_pid, pid):
        assert not _alive(p), p
    assert _mounts_under(d2.state_dir, d2.run_dir) == []
    assert [g for g in d2.group_dirs().values() if g.exists()] == []
    assert not d2.run_dir.exists() and not d2.data_root.exists()
    assert [s for s in shim_socks if s.exists()] == []


@pytest.mark.parametrize("hierarchy", HIERARCHIES)
def test_daemon_parent_maps_into_each_hierarchy(
    docker_daemon: DockerSession, hierarchy: str
) -> None:
    d = _hierarchy(docker_daemon.daemon.group_dirs(), hierarchy)
    assert str(d).endswith(docker_daemon.daemon.cgroup_parent)


def test_a_crashed_session_is_reaped_by_the_next(
    docker_daemon: DockerSession, tmp_path: Path
) -> None:
    """The test process is SIGKILLed with a container running: dockerd and containerd die
    with it, the container's shim (and often the container) do not; the next start_daemon()
    (here: the reaper it calls) removes them and everything else the dead daemon made."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHING_SESSION, str(tmp_path / "crash")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, "the crashing session did not start its daemon"
        info = json.loads(line)
    finally:
        proc.kill()
        proc.wait()
    dockerd, containerd, container = info["pids"]
    deadline = time.monotonic() + HANG_S
    while _alive(containerd) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(containerd), "no PR_SET_PDEATHSIG?"
    # dockerd got SIGTERM too; its shutdown may wait up to 15 s for the containers it can
    # no longer reach, or stop one first: the reaper kills it in any case.
    parent = info["parent"]
    assert parent in reap_stale_daemons()
    assert not _alive(container) and not _alive(dockerd)
    dirs = [h.dir_of(parent) for h in cgroup_hierarchies()]
    assert [d for d in dirs if d is not None and d.exists()] == []
    assert _mounts_under(Path(info["state_dir"])) == []
    assert not Path(info["run_dir"]).exists() and not Path(info["data_root"]).exists()
    assert len(info["shims"]) == 2
    assert [s for s in info["shims"] if Path(s).exists()] == []
    # The container under its own parent: killed, its group removed (as runc does); the
    # parent is its creator's to remove (here: the test's).
    assert not _alive(info["run_pid"])
    run_dirs = [h.dir_of(info["run_parent"]) for h in cgroup_hierarchies()]
    for d in run_dirs:
        assert d is not None and not (d / info["run_id"]).exists()
        d.rmdir()
