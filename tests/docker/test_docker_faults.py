"""Fault injection on the Docker backend, through the CLI, against a private real dockerd.

Covered in test_docker_backend.py: OOM (test_oom_is_a_result), a SIGTERM-trapping workload
past its timeout (test_timeout_of_a_workload_that_ignores_sigterm), Ctrl-C
(test_interrupt_removes_the_container).  Here: SIGKILL to edgeprof mid-run then `edgeprof gc`
or the next run, a fork bomb under --pids 64, and the daemon killed mid-run.  Every case
lists what is left: containers (the autouse leak check in conftest.py, and below for the
second daemon), cgroup directories below this process's group (same check), processes
(by a marker in the container's environment) and temporary files in the output directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HANG_S
from tests.docker.daemon import BUSYBOX_IMAGE, ensure_base_images, start_daemon
from tests.host.test_faults import FORK_BOMB, check_samples, marked_processes, temp_files

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]


def edgeprof_cmd(
    host: str, mark: str, *args: str, image: str = BUSYBOX_IMAGE
) -> tuple[list[str], dict[str, str]]:
    argv = [PY, "-m", "edgeprof", "run", "--backend", "docker", "--image", image,
            "--env", f"EDGEPROF_FAULT={mark}", *args]  # fmt: skip
    return argv, {**os.environ, "DOCKER_HOST": host}


def wait_for_rows(csv_path: Path, proc: subprocess.Popen[Any], rows: int) -> None:
    deadline = time.monotonic() + HANG_S
    while not (csv_path.exists() and len(csv_path.read_bytes().splitlines()) > rows):
        assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
        time.sleep(0.05)


def wait_for_processes(mark: str, proc: subprocess.Popen[Any], n: int) -> None:
    """Until ``n`` processes carry ``mark``: the workload has started all of them (a shell
    forks its background job some time after the container's first samples)."""
    deadline = time.monotonic() + HANG_S
    while len(marked_processes(mark)) < n:
        assert proc.poll() is None and time.monotonic() < deadline, "the workload did not start"
        time.sleep(0.05)


def events_dirs(pid: int) -> list[Path]:
    """The events directories (a container run's FIFO) of the edgeprof with ``pid``."""
    return list(Path(tempfile.gettempdir()).glob(f"edgeprof-events-{pid}-*"))


def edgeprof_containers(client: Any) -> list[Any]:
    return list(client.containers.list(all=True, filters={"label": "org.edgeprof.managed=1"}))


@pytest.mark.parametrize("collector", ["gc", "next-run"])
def test_sigkill_to_edgeprof_then_collection(
    docker_daemon: Any, tmp_path: Path, collector: str
) -> None:
    mark = uuid.uuid4().hex
    out = tmp_path / "out"
    argv, env = edgeprof_cmd(
        docker_daemon.host, mark, "--interval", "0.02", "--out", str(out), "--",
        "sh", "-c", "sleep 300 & sleep 300",
    )  # fmt: skip
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
    wait_for_rows(out / "samples.csv", proc, 5)
    wait_for_processes(mark, proc, 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    [c] = edgeprof_containers(docker_daemon.client)
    assert c.labels["org.edgeprof.owner"].startswith(f"{proc.pid}:")
    assert len(marked_processes(mark)) == 2  # the two sleeps (busybox sh execs the last)
    assert check_samples(out / "samples.csv", None) >= 5 and temp_files(out) == []
    assert not (out / "result.json").exists()
    # The dead run's FIFO directory, named after it (the first run of the test as a whole
    # left two per tier run behind before it was).
    [fifo_dir] = events_dirs(proc.pid)

    if collector == "gc":
        p = subprocess.run(
            [PY, "-m", "edgeprof", "gc"], env=env, cwd=REPO, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr
        assert f"removed container {c.name}" in p.stdout.splitlines()
        assert f"removed events directory {fifo_dir}" in p.stdout.splitlines()
    else:
        argv, env = edgeprof_cmd(docker_daemon.host, mark, "--out", str(tmp_path / "n"), "--",
                                 "true")  # fmt: skip
        p = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        warnings = json.loads((tmp_path / "n" / "result.json").read_text())["warnings"]
        said = f"edgeprof: cleaned up after a dead edgeprof run: removed container {c.name}"
        assert said in p.stderr.splitlines()  # the host's, not this run's: not in its warnings
        assert not [w for w in warnings if "cleaned up" in w]
    assert edgeprof_containers(docker_daemon.client) == []
    assert events_dirs(proc.pid) == []
    assert marked_processes(mark) == []
    # The parent groups runc made for the dead run (every hierarchy): gone too.
    assert not [g for g in _run_groups() if g.name.startswith(f"edgeprof-{proc.pid}-")]


def _run_groups() -> list[Path]:
    from tests.host.conftest import run_groups

    return sorted(run_groups())


def test_fork_bomb_stops_at_the_pids_limit(docker_daemon: Any, tmp_path: Path) -> None:
    """(busybox sh gives up at the first failed fork, so the bomb is Python's, which retries.)
    The timeout counts from the container's start and must cover the interpreter's start and
    64 forks under half a core: 6 s, twice the 3 s that sufficed on a quiet machine."""
    mark = uuid.uuid4().hex
    out = tmp_path / "out"
    argv, env = edgeprof_cmd(
        docker_daemon.host, mark, "--pids", "64", "--cpus", "0.5", "--timeout", "6",
        "--interval", "0.02", "--out", str(out), "--", "python3", "-c", FORK_BOMB,
        "/tmp/reached",  # the bomb's sign that it met the limit, in the container: unread
        image=docker_daemon.images["python3"],
    )  # fmt: skip
    p = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    r = json.loads((out / "result.json").read_text())
    assert r["termination"] == "timeout", p.stderr
    assert p.returncode in (128 + signal.SIGTERM, 128 + signal.SIGKILL)
    assert r["limits"]["pids"] == 64
    assert 48 <= r["pids_peak"] <= 64
    assert check_samples(out / "samples.csv", r["gpu"] is not None) == r["samples"]["count"]
    assert temp_files(out) == [] and marked_processes(mark) == []


def test_daemon_killed_mid_run(docker_daemon: Any, tmp_path: Path) -> None:
    """dockerd dies (SIGKILL) while a container runs: edgeprof says so in one line (exit 2),
    kills the orphaned container's processes itself and removes its groups; the samples
    taken so far stay readable."""
    d2 = start_daemon(tmp_path / "second")
    mark = uuid.uuid4().hex
    out = tmp_path / "out"
    try:
        ensure_base_images(d2.host, names=["busybox"])
        argv, env = edgeprof_cmd(d2.host, mark, "--interval", "0.02", "--out", str(out), "--",
                                 "sh", "-c", "sleep 300 & sleep 300")  # fmt: skip
        proc = subprocess.Popen(
            argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_for_rows(out / "samples.csv", proc, 5)
        wait_for_processes(mark, proc, 2)
        assert len(marked_processes(mark)) == 2
        os.kill(d2.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, err
        assert err.startswith("edgeprof: error: ") and err.count("\n") == 1, err
        assert "Docker daemon" in err
        assert marked_processes(mark) == [], "the orphaned container still runs"
        assert not [g for g in _run_groups() if g.name.startswith(f"edgeprof-{proc.pid}-")]
        assert check_samples(out / "samples.csv", None) >= 5 and temp_files(out) == []
    finally:
        d2.stop()
    assert d2.leftovers() == []
