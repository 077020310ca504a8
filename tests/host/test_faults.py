"""Fault injection on the real kernel (cgroup v1 here, v2 in the VM tier), through the CLI.

Every workload carries a unique marker in its environment (``--env EDGEPROF_FAULT=<uuid>``,
inherited by every descendant), so "no process left" is checked by listing every process
on the host whose environment holds it.  Every case also lists the run groups left in every
hierarchy (the autouse fixture in conftest.py, and explicitly where edgeprof itself dies),
the temporary files in the output directory, and reads the result files back.

Covered elsewhere: SIGINT, SIGTERM and a burst of both to edgeprof
(test_cgroup_kernel.py::test_interrupt_kills_the_tree_and_still_reports), the double-forked
daemon (::test_daemonized_grandchild_is_killed_and_counted, and below after a SIGKILL).
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprof.backends import get_backend, owner
from edgeprof.backends._systemd_scope import HOLD_SCRIPT, parse_placement
from edgeprof.measure import gc
from edgeprof.model import Sample
from edgeprof.model.gpu import GPU_SAMPLE_COLUMNS
from tests.conftest import HANG_S

from .conftest import run_groups

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
WORKLOADS = REPO / "tests" / "workloads"
MiB = 2**20


@pytest.fixture
def marker() -> Iterator[str]:
    mark = uuid.uuid4().hex
    yield mark
    for pid in marked_processes(mark):  # a failed test must not leave its workload running
        os.kill(pid, signal.SIGKILL)


def marked_processes(mark: str) -> list[int]:
    """Every live (non-zombie) process whose environment holds ``EDGEPROF_FAULT=mark``."""
    needle = f"EDGEPROF_FAULT={mark}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if needle in (d / "environ").read_bytes().split(b"\0") and (
                (d / "stat").read_text().rpartition(")")[2].split()[0] != "Z"
            ):
                found.append(int(d.name))
        except OSError:
            continue
    return found


def edgeprof(*args: str, mark: str) -> list[str]:
    return [PY, "-m", "edgeprof", "run", "--env", f"EDGEPROF_FAULT={mark}", *args]


def temp_files(out: Path) -> list[Path]:
    """edgeprof's temporary files: the atomic write's and the writability probe's."""
    return [p for p in out.rglob(".*") if p.is_file()]


def check_samples(path: Path, gpu: bool | None) -> int:
    """Every line of samples.csv is a whole row; the number of rows.  A run that measured
    GPUs (any run on a GPU host: every GPU edgeprof was given is measured) has their
    columns too; ``gpu=None``: a run with no result.json to say which, either header."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    base, with_gpu = Sample.columns(), [*Sample.columns(), *GPU_SAMPLE_COLUMNS]
    assert rows[0] in ([base, with_gpu] if gpu is None else [with_gpu if gpu else base])
    assert all(len(r) == len(rows[0]) for r in rows), "a partial row"
    for r in rows[1:]:
        float(r[0])
    assert path.read_bytes().endswith(b"\r\n")
    return len(rows) - 1


def check_result(out: Path) -> dict:  # type: ignore[type-arg]
    result = json.loads((out / "result.json").read_text())
    gpu = result["gpu"] is not None
    assert result["samples"]["count"] == check_samples(out / "samples.csv", gpu)
    assert temp_files(out) == []
    return result  # type: ignore[no-any-return]


def test_oom_kill(mechanism: str, tmp_path: Path, marker: str) -> None:
    out = tmp_path / "out"
    p = subprocess.run(
        edgeprof(
            "--memory",
            "64m",
            "--out",
            str(out),
            "--",
            PY,
            str(WORKLOADS / "spike.py"),
            "200",
            mark=marker,
        ),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=HANG_S,
    )
    assert p.returncode == 137, p.stderr
    r = check_result(out)
    assert r["termination"] == "oom" and r["memory"]["oom_kills"] >= 1
    assert marked_processes(marker) == []


def test_timeout_of_a_workload_that_traps_sigterm(
    mechanism: str, tmp_path: Path, marker: str
) -> None:
    """A shell that ignores SIGTERM is killed after the 2 s grace.  The trap must be in place
    before the timeout's SIGTERM: a shell that said so (``ready``) only after the timeout had
    come tested nothing, and runs again with twice the timeout."""
    for timeout in (1, 2, 4, 8, 16):
        out, ready = tmp_path / f"out{timeout}", tmp_path / f"ready{timeout}"
        trap = ["sh", "-c", f"trap '' TERM; : > {shlex.quote(str(ready))}; while :; do :; done"]
        limits = ["--cpus", "0.5", "--timeout", str(timeout)]
        cmd = edgeprof(*limits, "--out", str(out), "--", *trap, mark=marker)
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=HANG_S)
        assert marked_processes(marker) == []
        if ready.exists():
            break
    assert p.returncode == 137, p.stderr  # SIGKILL after the 2 s grace
    r = check_result(out)
    assert r["termination"] == "timeout" and r["signal"] == signal.SIGKILL
    # The run's own wall time bounds the kill; edgeprof's start-up is not timed (it took
    # over 60 s in a loaded emulated guest), and HANG_S bounds a hang.
    assert timeout + 1.9 <= r["wall_s"] <= timeout + 4


FORK_BOMB = """
import os, sys, time
reached = False
while True:
    try:
        os.fork()
    except OSError:  # EAGAIN at pids.max
        if not reached:  # said once per process: the test's sign that the limit was met
            reached = True
            open(sys.argv[1], "a").close()
        time.sleep(0.01)
"""


def test_fork_bomb_stops_at_the_pids_limit(mechanism: str, tmp_path: Path, marker: str) -> None:
    """The bomb meets the limit, and the run ends at its timeout.  The timeout must outlast
    Python's start and the forks up to the limit under ``--cpus 1`` (seconds in the
    emulated v2 guest): an attempt whose bomb had not met the limit for a 20 ms sample to
    see it tested nothing, and runs again with twice the timeout."""
    for timeout in (8, 16, 32, 64):
        out, reached = tmp_path / f"out{timeout}", tmp_path / f"reached{timeout}"
        limits = ["--pids", "64", "--cpus", "1", "--memory", "512m", "--interval", "0.02"]
        bomb = [PY, "-c", FORK_BOMB, str(reached)]
        cmd = edgeprof(
            *limits, "--timeout", str(timeout), "--out", str(out), "--", *bomb, mark=marker
        )
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=HANG_S)
        assert (out / "result.json").exists(), (p.returncode, p.stderr)
        r = check_result(out)
        assert r["termination"] == "timeout", p.stderr
        assert marked_processes(marker) == []
        if reached.exists() and r["pids_peak"] >= 48:
            break
    assert p.returncode in (128 + signal.SIGTERM, 128 + signal.SIGKILL)
    assert r["limits"]["pids"] == 64
    # The bomb reached the limit and never passed it (pids_peak is sampled every 20 ms).
    assert reached.exists(), "the bomb never met the limit"
    assert 48 <= r["pids_peak"] <= 64
    assert "processes: peak" in p.stdout and "of 64" in p.stdout


def test_the_systemd_scopes_holder_forks_nothing(
    mechanism: str, tmp_path: Path, marker: str
) -> None:
    """The holder that keeps root's systemd scope says its group and waits with no child
    process: a child still exiting in the scope's group makes the kernel refuse its
    controllers (EBUSY).  Under a limit of one process, a fork fails and the script too."""
    out = tmp_path / "out"
    p = subprocess.run(
        edgeprof("--pids", "1", "--out", str(out), "--", "/bin/sh", "-c", HOLD_SCRIPT, mark=marker),
        stdin=subprocess.DEVNULL,  # end-of-file: the holder's cue to end
        capture_output=True, text=True, cwd=REPO, timeout=HANG_S,
    )  # fmt: skip
    r = check_result(out)
    assert p.returncode == 0 and r["termination"] == "exited", p.stdout + p.stderr
    assert r["limits"]["pids"] == 1
    placement = [ln for ln in p.stdout.splitlines() if parse_placement(ln) is not None]
    assert len(placement) == 1, p.stdout  # the unified hierarchy's line, as /proc says it
    assert marked_processes(marker) == []


@pytest.mark.not_in_vm  # pass-through of stdout: the same code on every cgroup version
def test_a_gigabyte_to_stdout(mechanism: str, tmp_path: Path, marker: str) -> None:
    """The workload's stdout is passed through, never buffered by edgeprof."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        edgeprof("--out", str(out), "--", "head", "-c", str(2**30), "/dev/zero", mark=marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None
    total = 0
    tail = b""
    while chunk := proc.stdout.read(1 << 20):
        total += len(chunk)
        tail = (tail + chunk)[-4096:]
    assert proc.wait(HANG_S) == 0, proc.stderr.read() if proc.stderr else ""
    r = check_result(out)
    assert r["termination"] == "exited"
    assert total > 2**30 and b"head" in tail  # the gigabyte, then edgeprof's table
    assert marked_processes(marker) == []


def test_full_disk_for_out(mechanism: str, tmp_path: Path, marker: str) -> None:
    """The disk of --out fills during the run: the run goes on and is measured, the CSV stops
    at its last whole row, result.json is not half-written, no temporary file stays.

    The workload fills the 16 KiB tmpfs itself once edgeprof has flushed 50 rows, so the
    disk is full whatever the machine's speed (a fixed ``sleep 2`` at 1 ms sampling let a
    slow guest's whole CSV fit, and the run exited 0)."""
    out = tmp_path / "full"
    out.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(out)], check=True)
    try:
        p = subprocess.run(
            edgeprof(
                "--interval", "0.001", "--out", str(out), "--",
                PY, "-c", FILL_AFTER_ROWS, str(out), "50", str(HANG_S),
                mark=marker,
            ),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=HANG_S,
        )
        assert p.returncode == 2, p.stderr
        # The measured run's table above the one error line: its figures are not lost.
        *table, error = p.stderr.splitlines()
        assert error.startswith("edgeprof: error: ") and "result.json could not be written" in error
        assert "No space left on device" in error and "the run ended (exited 0) but " in error
        assert table[0] == "Final Usage Stats" and table[3].split()[-1] == "exited"
        assert check_samples(out / "samples.csv", None) >= 50
        assert not (out / "result.json").exists()
        assert temp_files(out) == []
    finally:
        subprocess.run(["umount", str(out)], check=True)
    assert marked_processes(marker) == []


FILL_AFTER_ROWS = """
import os, sys, time
out, rows = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + float(sys.argv[3])
while time.monotonic() < deadline:
    try:
        with open(os.path.join(out, "samples.csv"), "rb") as f:
            if f.read().count(b"\\n") > rows:
                break
    except FileNotFoundError:
        pass
    time.sleep(0.01)
with open(os.path.join(out, "filler"), "wb", buffering=0) as f:
    try:
        while True:
            f.write(bytes(4096))
    except OSError:
        pass
"""


def _complete_rows(out: Path) -> int:
    """The whole rows of ``out``'s samples.csv so far (edgeprof writes whole rows only)."""
    try:
        return max(0, (out / "samples.csv").read_bytes().count(b"\n") - 1)
    except FileNotFoundError:
        return 0


def _stale_groups_of(pid: int) -> set[Path]:
    return {g for g in run_groups() if g.name.startswith(f"edgeprof-{pid}-")}


@pytest.mark.parametrize("collector", ["gc", "next-run"])
def test_sigkill_to_edgeprof_then_collection(
    mechanism: str, tmp_path: Path, marker: str, collector: str
) -> None:
    """edgeprof dies mid-run with a double-forked daemon in its group: the samples so far are
    readable, and `edgeprof gc` (or the next run, automatically) removes the group and kills
    what is left in it — and leaves a live run's group alone."""
    out = tmp_path / "out"
    pidfile = tmp_path / "daemon.pid"
    proc = subprocess.Popen(
        edgeprof(
            "--interval",
            "0.01",
            "--out",
            str(out),
            "--",
            PY,
            str(WORKLOADS / "daemonize.py"),
            "600",
            str(pidfile),
            mark=marker,
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    deadline = time.monotonic() + HANG_S
    # The daemon runs and edgeprof has flushed five rows (not a fixed 0.5 s of sampling).
    while not (pidfile.exists() and pidfile.read_text()) or _complete_rows(out) < 5:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    # A live run, to prove the collection leaves it alone.
    # (It sleeps long: a slow guest must not see it end on its own before the check; it is
    # interrupted at the end.)  Its workload marks that it runs: its wall time starts before.
    ready = tmp_path / "live.ready"
    live = subprocess.Popen(
        edgeprof("--out", str(tmp_path / "live"), "--", "sh", "-c",
                 f"touch {ready}; exec sleep {HANG_S:.0f}", mark=marker),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )  # fmt: skip
    while not ready.exists():
        assert time.monotonic() < deadline and live.poll() is None
        time.sleep(0.05)
    live_seen = time.monotonic()
    assert _stale_groups_of(live.pid), "a live run without its group"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = _stale_groups_of(proc.pid)
    assert left, "the killed run's groups should still be there"
    assert int(pidfile.read_text()) in marked_processes(marker)
    assert check_samples(out / "samples.csv", None) >= 5  # a readable partial log
    assert not (out / "result.json").exists() and temp_files(out) == []

    still = {str(g) for g in left if g.exists()}
    if collector == "gc":
        p = subprocess.run(
            [PY, "-m", "edgeprof", "gc"], capture_output=True, text=True, cwd=REPO, timeout=HANG_S
        )
        assert p.returncode == 0, p.stderr
        said = p.stdout.splitlines()
    else:
        nxt = tmp_path / "next"
        p = subprocess.run(
            edgeprof("--out", str(nxt), "--", "true", mark=marker),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=HANG_S,
        )
        assert p.returncode == 0, p.stderr
        # The host's, not this run's: on stderr, not in its result's warnings.
        assert not [w for w in check_result(nxt)["warnings"] if "cleaned up" in w]
        prefix = "edgeprof: cleaned up after a dead edgeprof run: "
        said = [ln.removeprefix(prefix) for ln in p.stderr.splitlines() if ln.startswith(prefix)]
    # `still`: another session's run may collect them first; what was there is gone now.
    # One line for the dead run: its groups counted, its orphaned workload killed.
    if still:
        [run] = {gc.run_of(Path(g)) for g in still}
        lines = [ln for ln in said if ln.startswith(f"removed dead run {run}: ")]
        if lines:
            [line] = lines
            assert f": {len(still)} cgroup" in line and ", killed " in line
            killed = line.partition("(pid ")[2].rstrip(")").split(", ")
            assert pidfile.read_text().strip() in killed  # the orphaned daemon, named
        else:  # another edgeprof's start collected it between the look and ours (CI beside
            # users' runs): gone all the same, its daemon too
            assert int(pidfile.read_text()) not in marked_processes(marker)
    assert {str(g) for g in left if g.exists()} == set()
    assert _stale_groups_of(proc.pid) == set()
    assert live.poll() is None and _stale_groups_of(live.pid), "a live run was collected"
    alive_for = time.monotonic() - live_seen
    live.send_signal(signal.SIGTERM)
    # It dies by the SIGTERM once its result is written (a CI job's cancel stops the job).
    assert live.wait(HANG_S) == -signal.SIGTERM, live.stderr.read() if live.stderr else ""
    kept = json.loads((tmp_path / "live" / "result.json").read_text())
    # Its wall time covers at least the span we watched it live: it starts at the spawn, before
    # the workload's ready file, and ends after our SIGTERM.  (A fixed floor failed when the
    # collection was quick, 0.45 s; a 0.2 s allowance for the spawn after the group appears
    # was a fact about a quiet machine.)
    assert kept["termination"] == "interrupted" and kept["wall_s"] >= alive_for
    assert marked_processes(marker) == []


def test_a_reused_pid_does_not_protect_a_dead_runs_group(mechanism: str) -> None:
    """A group named after a live pid with another start time is a dead run's: collected.
    The same pid with its real start time is a live run's: kept."""
    be = get_backend("cgroup")
    parent = _run_parent(be)
    me = owner.this_process()
    assert me.start is not None
    dead = parent / f"edgeprof-{me.pid}-{me.start + 1}-00c0ffee"
    live = parent / f"edgeprof-{me.pid}-{me.start}-00c0ffef"
    dead.mkdir()
    live.mkdir()
    try:
        sleeper = subprocess.Popen(["sleep", "60"])
        (dead / "cgroup.procs").write_text(str(sleeper.pid))
        out = gc.collect_before_run(be.cleanup_scope())
        line = f"removed dead run {dead.name}: 1 cgroup, killed 1 process (pid {sleeper.pid})"
        assert line in out
        assert not dead.exists() and live.is_dir()
        assert sleeper.wait(HANG_S) == -signal.SIGKILL
    finally:
        for g in (dead, live):
            if g.exists():
                g.rmdir()


def _run_parent(be: object) -> Path:
    """Where this backend creates run groups (v2: its parent; v1: the memory group)."""
    if hasattr(be, "parent"):
        return be.parent()  # type: ignore[no-any-return]
    return be.hierarchies()["memory"].own  # type: ignore[attr-defined,no-any-return]
