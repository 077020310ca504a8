"""Core leases on the real kernel: real ``flock``, real edgeprof processes, real cpusets.

Nothing here assumes a core count: the cores a run may use are the cgroup backend's cpuset
within this process's affinity (what edgeprof computes), and every test works from 1 core up
(the host tier has 2, the cgroup v2 guest 8).  Concurrency is made deterministic with
events, never sleeps: each workload writes a ready file (its affinity and its open
descriptors) and then holds its core until the test creates a go file; a waiting edgeprof is
seen waiting by its message on stderr.  Every test leases in a directory of its own
(``EDGEPROF_LEASE_DIR``, set by the autouse fixture of tests/conftest.py), so neither the
host's other edgeprof runs nor other tests can hold its cores.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgeprof.backends import get_backend
from edgeprof.cpu_units import format_cpuset
from edgeprof.measure.limits import allowed_cpus
from tests.conftest import HANG_S

from .conftest import groups_since, run_groups

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]

GATED = """
import json, os, sys, time
ready, go, hold_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
fds = []
for fd in os.listdir("/proc/self/fd"):
    try:
        fds.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
with open(ready + ".tmp", "w") as f:
    json.dump({"cpus": sorted(os.sched_getaffinity(0)), "fds": fds}, f)
os.rename(ready + ".tmp", ready)
deadline = time.monotonic() + hold_s
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.01)
"""
"""Reports its affinity and descriptors, then holds its core until ``go`` exists (the ``go``
fixture makes it at every test's end; :data:`HOLD_S` bounds a test that never ends)."""
HOLD_S = 4 * HANG_S
"""Outlasts the test's waits for each of up to three runs' ready files, and the run after."""


def allowed() -> tuple[int, ...]:
    return allowed_cpus(get_backend("cgroup"))


def edgeprof(*args: str) -> list[str]:
    return [PY, "-m", "edgeprof", "run", "--backend", "cgroup", *args]


class Gated:
    """An edgeprof run of :data:`GATED` under ``opts``, writing into ``tmp/<name>``."""

    def __init__(self, tmp: Path, name: str, go: Path, *opts: str, prefix: tuple[str, ...] = ()):
        self.out = tmp / name
        self.ready = tmp / f"{name}.ready"
        self.proc = subprocess.Popen(
            [*prefix, *edgeprof(*opts, "--out", str(self.out), "--", PY, "-c", GATED,
                                str(self.ready), str(go), str(HOLD_S))],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )  # fmt: skip

    def seen(self) -> dict[str, Any]:
        """What the workload reported once it runs (edgeprof has leased and launched): waits
        for its ready file or edgeprof's end, :data:`~tests.conftest.HANG_S` at most."""
        deadline = time.monotonic() + HANG_S
        while not self.ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.send_signal(signal.SIGINT)  # a no-op once it ended; else it reports
                _, err = self.proc.communicate(timeout=HANG_S)
                pytest.fail(f"the run never started its workload: {err}")
            time.sleep(0.01)
        data: dict[str, Any] = json.loads(self.ready.read_text())
        return data

    def result(self) -> dict[str, Any]:
        _, err = self.proc.communicate(timeout=HANG_S)
        assert self.proc.returncode == 0, err
        data: dict[str, Any] = json.loads((self.out / "result.json").read_text())
        return data


@pytest.fixture
def go(tmp_path: Path) -> Iterator[Path]:
    """The go file; created at the end whatever happens, so no workload outlives a test."""
    path = tmp_path / "go"
    yield path
    path.touch()


def waiting_line(proc: subprocess.Popen[str]) -> str:
    """The first ``waiting for`` line of a waiting edgeprof's stderr (blocks until it)."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("edgeprof: waiting for "):
            return line
    pytest.fail(f"edgeprof ended without waiting (exit {proc.wait()})")


def test_concurrent_runs_take_different_cores(
    mechanism: str, tmp_path: Path, go: Path, isolated_core_leases: Path
) -> None:
    """min(3, allowed) concurrent ``--cpus 1`` runs, each holding its core: pairwise
    different cores (they were all core 0 before leases).  When that is every allowed core,
    one more ``--cores-busy fail`` run is refused: on a 1-core machine that is the proof."""
    cores = allowed()
    n = min(3, len(cores))
    runs = [Gated(tmp_path, f"r{i}", go, "--cpus", "1") for i in range(n)]
    seen = [r.seen() for r in runs]  # all n workloads run at once now
    pinned = [tuple(s["cpus"]) for s in seen]
    assert all(len(p) == 1 and p[0] in cores for p in pinned), pinned
    assert len(set(pinned)) == n, f"runs shared a core: {pinned}"
    for s in seen:  # a lease's descriptor never reaches the workload
        assert not [fd for fd in s["fds"] if fd.startswith(str(isolated_core_leases))], s
    if n == len(cores):
        p = subprocess.run(
            edgeprof("--cpus", "1", "--cores-busy", "fail", "--", "true"),
            capture_output=True, text=True, cwd=REPO, timeout=HANG_S,
        )  # fmt: skip
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
        assert p.stderr.startswith("edgeprof: error: cores busy: ")
    go.touch()
    for r, core in zip(runs, pinned, strict=True):
        result = r.result()
        assert result["lease"] == {"cores": list(core), "waited_s": 0.0, "chosen": True}
        assert result["limits"]["cpuset"] == list(core)


def test_a_run_under_taskset_pins_that_core(mechanism: str, tmp_path: Path) -> None:
    """``taskset -c K edgeprof run --cpus 1`` runs on K (the last allowed core, so not
    trivially core 0), and an explicit ``--cpuset`` outside K is refused."""
    cores = allowed()
    k = cores[-1]
    taskset = ("taskset", "-c", str(k))
    code = "import os; print('affinity', sorted(os.sched_getaffinity(0)))"
    p = subprocess.run(
        [*taskset, *edgeprof("--cpus", "1", "--json", "--", PY, "-c", code)],
        capture_output=True, text=True, cwd=REPO, timeout=HANG_S,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["limits"]["cpuset"] == [k] and r["lease"]["cores"] == [k]
    assert f"affinity [{k}]" in p.stderr  # --json: the workload's stdout goes to stderr
    if len(cores) > 1:
        other = cores[0]
        p = subprocess.run(
            [*taskset, *edgeprof("--cpuset", str(other), "--out", str(tmp_path / "x"), "--",
                                 "true")],
            capture_output=True, text=True, cwd=REPO, timeout=HANG_S,
        )  # fmt: skip
        assert p.returncode == 2 and p.stderr == (
            f"edgeprof: error: --cpuset {other}: CPU {other} is not available here "
            f"(available: {k}); --allow-over-host to run anyway\n"
        )
        assert not (tmp_path / "x").exists()


def test_busy_cores_fail_wait_or_are_interrupted(
    mechanism: str, tmp_path: Path, go: Path
) -> None:
    """One run holds every allowed core.  Meanwhile: ``fail`` is one line, exit 2, with no
    group and no output directory; an explicit ``--cpuset`` is leased too; a waiting run
    names the holder, and Ctrl-C ends its wait (dying by it) with nothing behind; a waiting run
    runs once the holder ends."""
    cores = allowed()
    holder = Gated(tmp_path, "holder", go, "--cpus", str(len(cores)))
    assert holder.seen()["cpus"] == list(cores)
    groups = run_groups()

    refused = tmp_path / "refused"
    p = subprocess.run(
        edgeprof("--cpus", "1", "--cores-busy", "fail", "--out", str(refused), "--", "true"),
        capture_output=True, text=True, cwd=REPO, timeout=HANG_S,
    )  # fmt: skip
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(
        f"edgeprof: error: cores busy: needs 1 free core of {format_cpuset(cores)}: "
        f"core {cores[0]} is held by pid {holder.proc.pid}"
    )
    p = subprocess.run(
        edgeprof("--cpuset", str(cores[-1]), "--cores-busy", "fail", "--", "true"),
        capture_output=True, text=True, cwd=REPO, timeout=HANG_S,
    )  # fmt: skip
    assert p.returncode == 2 and f"needs core {cores[-1]}: core {cores[-1]} is held" in p.stderr

    interrupted = tmp_path / "interrupted"
    waiter = subprocess.Popen(
        edgeprof("--cpus", "1", "--out", str(interrupted), "--", "true"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    assert f"held by pid {holder.proc.pid}" in waiting_line(waiter)
    waiter.send_signal(signal.SIGINT)
    assert waiter.wait(HANG_S) == -signal.SIGINT  # dies by it: a shell loop stops too
    assert not refused.exists() and not interrupted.exists()
    assert groups_since(groups) == set()  # only the holder's (another session's may end)

    waited = tmp_path / "waited"
    waiter = subprocess.Popen(
        edgeprof("--cpus", "1", "--out", str(waited), "--", "true"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    waiting_line(waiter)
    go.touch()  # the holder's workload ends, its edgeprof releases the cores
    assert holder.result()["lease"]["cores"] == list(cores)
    _, err = waiter.communicate(timeout=HANG_S)
    assert waiter.returncode == 0, err
    assert "edgeprof: leased core " in err
    lease = json.loads((waited / "result.json").read_text())["lease"]
    assert lease["waited_s"] > 0 and len(lease["cores"]) == 1 and lease["cores"][0] in cores


def test_a_killed_edgeprofs_cores_are_free_at_once(
    mechanism: str, tmp_path: Path, go: Path
) -> None:
    """SIGKILL to an edgeprof holding every allowed core, its workload still running: the
    kernel dropped its locks with its descriptors (the workload inherited none), so a
    ``fail`` run gets them all, and, as every run does, collects the dead run's group."""
    cores = allowed()
    holder = Gated(tmp_path, "holder", go, "--cpus", str(len(cores)))
    holder.seen()
    holder.proc.send_signal(signal.SIGKILL)
    holder.proc.wait(HANG_S)  # not communicate(): its orphaned workload holds the stderr pipe
    nxt = tmp_path / "next"
    p = subprocess.run(
        edgeprof("--cpus", str(len(cores)), "--cores-busy", "fail", "--out", str(nxt), "--",
                 "true"),
        capture_output=True, text=True, cwd=REPO, timeout=HANG_S,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    r = json.loads((nxt / "result.json").read_text())
    assert r["lease"]["cores"] == list(cores)
    # The dead run's group is gone: collected by this run, or by another session's first.
    assert not [g for g in run_groups() if g.name.startswith(f"edgeprof-{holder.proc.pid}-")]
    assert holder.proc.stderr is not None
    holder.proc.stderr.close()
