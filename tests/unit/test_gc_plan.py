"""``edgeprof gc``'s one plan, listed by ``--dry-run`` and done by gc; Docker said only where
it is expected or asked for; ``doctor``'s count of a dead run's live processes."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from edgeprof.backends import owner
from edgeprof.backends.docker import daemon
from edgeprof.backends.docker.engine import Engine
from edgeprof.errors import BackendUnavailable
from edgeprof.measure import gc
from edgeprof.measure.doctor import dead_runs

from .conftest import IMPOSSIBLE_PID

DEAD = f"edgeprof-{IMPOSSIBLE_PID}-1-0000abcd"


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Real processes to stand for a live edgeprof, its workload and a dead run's orphan."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _sleep(started: list[subprocess.Popen[bytes]], seconds: str) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(["sleep", seconds])
    started.append(p)
    cmdline = Path(f"/proc/{p.pid}/cmdline")
    deadline = time.monotonic() + 5
    while not cmdline.read_bytes().startswith(b"sleep") and time.monotonic() < deadline:
        time.sleep(0.001)  # until it has exec'd: before, it is a copy of this Python
    return p


def _group(path: Path, *pids: int) -> None:
    path.mkdir(parents=True)
    (path / "cgroup.procs").write_text("".join(f"{p}\n" for p in pids))


@pytest.fixture
def no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "expected", lambda: False)


def _host(
    tmp_path: Path, started: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, int, int, str]:
    """A v1-like tree: a live edgeprof's run (its workload in two controllers' groups) beside
    a dead one's (its orphan in both); the lease files name each edgeprof."""
    live_edgeprof, workload, orphan = (_sleep(started, s) for s in ("60", "61", "62"))
    start = owner.start_time(live_edgeprof.pid)
    live = owner.run_name(owner.Owner(live_edgeprof.pid, start))
    root = tmp_path / "cg"
    for controller in ("cpu", "memory"):
        _group(root / controller / live, workload.pid)
        _group(root / controller / DEAD, orphan.pid)
    leases = tmp_path / "leases"
    leases.mkdir()
    (leases / "cpu0").write_text(f"{IMPOSSIBLE_PID}\n")
    (leases / "cpu1").write_text(f"{live_edgeprof.pid}\n")
    monkeypatch.setenv("EDGEPROF_LEASE_DIR", str(leases))
    return root, workload.pid, orphan.pid, live


def test_the_dry_run_lists_the_dead_run_and_nothing_of_the_live_one(
    tmp_path: Path,
    sleepers: list[subprocess.Popen[bytes]],
    monkeypatch: pytest.MonkeyPatch,
    no_docker: None,
) -> None:
    root, workload, orphan, live = _host(tmp_path, sleepers, monkeypatch)
    found = gc.plan(roots=[root], tmp=tmp_path)
    assert [r.name for r in found.runs] == [DEAD]
    [run] = found.runs
    assert sorted(run.groups) == [root / "cpu" / DEAD, root / "memory" / DEAD]
    assert run.processes == (gc.Process(orphan, "sleep 62"),)
    assert gc.preview(found) == [
        f"would remove dead run {DEAD}: 2 cgroups, kill 1 process:",
        f"  pid {orphan}: sleep 62",
        f"  lease file {tmp_path / 'leases' / 'cpu0'} still names its edgeprof: free since it "
        "died, and kept (gc removes no lease file)",
        "dry run: nothing was removed or killed",
    ]
    # Nothing changed: both groups and every process are still there.
    assert (root / "cpu" / DEAD).is_dir() and (root / "memory" / live).is_dir()
    assert all(p.poll() is None for p in sleepers)
    assert live not in "\n".join(gc.preview(found)) and str(workload) not in str(found)


def test_gc_does_what_the_dry_run_listed_and_no_more(
    tmp_path: Path,
    sleepers: list[subprocess.Popen[bytes]],
    monkeypatch: pytest.MonkeyPatch,
    no_docker: None,
) -> None:
    root, _, orphan, live = _host(tmp_path, sleepers, monkeypatch)
    lines = gc.act(gc.plan(roots=[root], tmp=tmp_path), timeout=0.3)
    # The fake groups keep their cgroup.procs file, so rmdir refuses them; a real group
    # empties as its processes die.
    assert lines == [
        f"cannot remove cgroup {root / 'cpu' / DEAD}: Directory not empty",
        f"cannot remove cgroup {root / 'memory' / DEAD}: Directory not empty",
    ]
    [orphan_p] = [p for p in sleepers if p.pid == orphan]
    assert orphan_p.wait(timeout=5) == -9  # killed
    # The live edgeprof and its workload are untouched.
    assert [p.poll() for p in sleepers if p.pid != orphan] == [None, None]
    assert (root / "cpu" / live).is_dir() and (tmp_path / "leases" / "cpu0").exists()


def test_a_dead_run_with_nothing_left_running_lists_its_groups_alone(
    tmp_path: Path, no_docker: None
) -> None:
    for controller in ("cpu", "memory", "pids"):
        (tmp_path / "cg" / controller / DEAD).mkdir(parents=True)
    found = gc.plan(roots=[tmp_path / "cg"], tmp=tmp_path)
    assert gc.preview(found) == [
        f"would remove dead run {DEAD}: 3 cgroups",
        "dry run: nothing was removed or killed",
    ]
    assert gc.act(found) == [f"removed dead run {DEAD}: 3 cgroups"]
    assert gc.preview(gc.plan(roots=[tmp_path / "cg"], tmp=tmp_path)) == ["nothing to remove"]


def test_a_command_line_as_ps_shows_it(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    cases = ((1, b"python\0qs/kinfer.py\0--n\0\0", ""), (2, b"", "kworker\n"))
    for pid, cmdline, comm in (*cases, (4, b"python3\0-c\0import x\nx.go()\t\x1b\0", "")):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cmdline").write_bytes(cmdline)
        (proc / str(pid) / "comm").write_text(comm)
    assert gc.command_line(1, proc) == "python qs/kinfer.py --n"
    assert gc.command_line(2, proc) == "[kworker]"  # a zombie's cmdline is empty
    assert gc.command_line(3, proc) == "?"  # gone
    assert gc.command_line(4, proc) == "python3 -c import x\\nx.go()\\t?"  # one line
    assert gc.command_line(1, proc, limit=10) == "python qs…"


def _no_daemon(*_: object, **__: object) -> Engine:
    raise BackendUnavailable("cannot reach the Docker daemon (no socket)")


def _nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "make_client", _no_daemon)
    monkeypatch.setattr(gc, "find_dead_runs", lambda *a: ())
    for finder in ("stale_slices", "stale_event_dirs"):
        monkeypatch.setattr(gc, finder, lambda *a: [])


def test_docker_is_not_mentioned_where_no_daemon_is_expected(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A host without Docker had heard ``docker: skipped (… start dockerd …)`` from every gc."""
    _nothing(monkeypatch)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(daemon, "DEFAULT_SOCKET", str(tmp_path / "none.sock"))
    assert gc.collect() == ["nothing to remove"]
    assert gc.preview(gc.plan()) == ["nothing to remove"]


@pytest.mark.parametrize("configured", ["DOCKER_HOST", "socket"])
def test_an_expected_daemon_that_does_not_answer_is_said(
    configured: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """And the skipped daemon's line is not gc's whole answer."""
    _nothing(monkeypatch)
    sock = tmp_path / "docker.sock"
    if configured == "DOCKER_HOST":
        monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    else:
        monkeypatch.delenv("DOCKER_HOST", raising=False)
        sock.write_text("")  # a daemon installed and stopped leaves its socket
    monkeypatch.setattr(daemon, "DEFAULT_SOCKET", str(sock))
    skipped = "docker: skipped (cannot reach the Docker daemon (no socket))"
    assert gc.collect() == [skipped, "nothing to remove"]
    assert gc.preview(gc.plan()) == [skipped, "nothing to remove"]


def test_images_without_a_daemon_is_an_error_not_nothing_to_remove(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgeprof.cli import main

    _nothing(monkeypatch)
    monkeypatch.setattr(daemon, "expected", lambda: False)
    for argv in (["gc", "--images"], ["gc", "--images", "--dry-run"]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err == (
            "edgeprof: error: gc --images: no image can be removed: cannot reach the Docker "
            "daemon (no socket)\n"
        )


class _Daemon:
    """A daemon with a dead run's container, a live run's, and an image edgeprof built."""

    def __init__(self) -> None:
        self.removed: list[str] = []
        dead, live = f"{IMPOSSIBLE_PID}:1", owner.this_process().token()
        self.listed = [
            {"Id": "c1", "Names": ["/edgeprof-dead"], "Labels": {daemon.OWNER_LABEL: dead}},
            {"Id": "c2", "Names": ["/edgeprof-live"], "Labels": {daemon.OWNER_LABEL: live}},
        ]

    def containers(self, label: str) -> list[dict[str, Any]]:
        return self.listed

    def images(self, label: str) -> list[dict[str, Any]]:
        return [{"Id": "sha256:i1", "RepoTags": ["edgeprof/app:1a2b"]}]

    def remove(self, cid: str) -> None:
        self.removed.append(cid)

    def remove_image(self, image_id: str) -> None:
        self.removed.append(image_id)


def test_containers_and_images_are_listed_then_removed_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gc, "find_dead_runs", lambda *a: ())
    for finder in ("stale_slices", "stale_event_dirs"):
        monkeypatch.setattr(gc, finder, lambda *a: [])
    fake = _Daemon()
    found = gc.plan(images=True, client=cast(Engine, fake))
    assert gc.preview(found) == [
        "would remove container edgeprof-dead",
        "would remove image edgeprof/app:1a2b",
        "dry run: nothing was removed or killed",
    ]
    assert fake.removed == []
    assert gc.act(found) == ["removed container edgeprof-dead", "removed image edgeprof/app:1a2b"]
    assert fake.removed == ["c1", "sha256:i1"]


def test_the_cli_dry_run_prints_the_plan(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgeprof.cli import main

    run = gc.DeadRun(DEAD, (Path("/cg/cpu") / DEAD,), (gc.Process(7, "python kinfer.py"),))
    monkeypatch.setattr(gc, "plan", lambda images: gc.Plan(runs=(run,)))
    monkeypatch.setattr(gc, "act", lambda p: pytest.fail("--dry-run acted"))
    assert main(["gc", "--dry-run"]) == 0
    assert capsys.readouterr().out == (
        f"would remove dead run {DEAD}: 1 cgroup, kill 1 process:\n"
        "  pid 7: python kinfer.py\n"
        "dry run: nothing was removed or killed\n"
    )


def test_doctor_counts_a_dead_runs_live_processes_and_names_gc(
    tmp_path: Path, sleepers: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead run's orphan burnt 75 % of a core under a line that named only its groups."""
    root, _, orphan, _ = _host(tmp_path, sleepers, monkeypatch)
    found = dead_runs([root])
    assert (found.topic, found.ok) == ("dead runs", False)
    assert found.detail == (
        f"2 cgroup(s) of 1 run(s) whose edgeprof died ({DEAD}) with 1 process(es) still running "
        f"in them (pid {orphan}); every run removes them as it starts"
    )
    assert found.fix == (
        "edgeprof gc removes them now (edgeprof gc --dry-run lists them first; as the user "
        "that ran them)"
    )
