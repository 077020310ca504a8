"""The cgroup backend on the real kernel.

Runs on the host (cgroup v1 hybrid on our machines) and, unchanged, inside the VM tier
(cgroup v2), where EDGEPROF_EXPECT_MECHANISM=cgroup2 makes the mechanism part of the check.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import edgeprof
from edgeprof import Limits, Termination
from edgeprof.measure.sampler import PEAK_WINDOW_S
from tests.conftest import HANG_S

from .conftest import backend_for, ended_at_once, gone
from .lost_time import HALF_CORE_CEILING_PCT, lost
from .slower_core import quota_misses

PY = sys.executable
WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
REPO = Path(__file__).resolve().parents[2]
MiB = 2**20
REAL_TIME = os.environ.get("EDGEPROF_TEST_TIER") != "vm"
"""Not in the VM tier's TCG guest, whose clock is not a CPU's (see test_cpu_period_kernel.py)."""


def test_cpu_limit_is_held_and_throttling_reported(mechanism: str) -> None:
    """Half a core is never exceeded, and the quota is half a core's: the run's CPU time is at
    least a quota per throttled period (:func:`~tests.host.slower_core.quota_misses`), a floor
    that holds however much of the machine other tasks take.  (The floor was an unlimited
    spinner's share measured just before: a load that changed between the two runs failed
    it.)  Throttling is reported whenever the quota was what held the run back.

    The bounds: 55 % is the quota over the run plus one period's quota and a tick
    (:data:`~tests.host.lost_time.HALF_CORE_CEILING_PCT`); the peak is over 1 s
    windows (edgeprof.measure.sampler.PEAK_WINDOW_S), at most 55 % by the same reasoning, and
    5 points more for a window whose closing read came up to 50 ms late; the wall time is the
    timeout plus the SIGTERM of a spinner that does not catch it.  In the VM tier each bound
    is widened by the time the guest lost during this run (:mod:`tests.host.lost_time`: a TCG guest
    charges a host stall to the spinner, 150 ms a 1 s window's 15 points), and the wall time
    by as much."""
    # A shell loop spins at once; a Python one may spend much of a slow guest's 1 s window
    # starting.
    spin = ["sh", "-c", "while :; do :; done"]
    with lost() as stalls:
        r = edgeprof.profile(spin, Limits(cpus=0.5), timeout=3)
    assert r.mechanism == mechanism
    assert r.termination is Termination.TIMEOUT
    # A real kernel charges a preempted task nothing: only a guest's stalls widen a bound
    # (the meter on this loaded 2-core host read 0.99 s of a 3 s run: its own lateness).
    lost_s = 0.0 if REAL_TIME else stalls.s
    lost_pct = 100 * lost_s / r.wall_s
    assert r.cpu.avg_pct is not None, r.cpu
    assert 0 < r.cpu.avg_pct <= HALF_CORE_CEILING_PCT + lost_pct, (r.cpu, lost_s)
    if REAL_TIME:
        assert quota_misses(r, 0.5) == [], r.cpu
    else:
        # The cgroup v2 guest (TCG) runs nothing else, and its period timer fires late too
        # often for quota_misses' floor: there a stall while the spinner was throttled takes
        # its quota for every period the stall spans (36.8 % was seen), so the floor is 60 %
        # of half a core over the time the guest did not lose.  (It was 60 % of an unlimited
        # spinner's share measured in a run before this one, under another moment's stalls.)
        # Above a quarter core's 25 % wherever the guest lost under a sixth of the run.
        floor = 0.6 * 50 * max(0.0, r.wall_s - lost_s) / r.wall_s
        assert floor <= r.cpu.avg_pct, (r.cpu, lost_s)
    assert 2.9 <= r.wall_s <= 4 + lost_s, (r.wall_s, lost_s)
    peak_allowance = 100 * lost_s / PEAK_WINDOW_S
    assert r.cpu.peak_pct is not None and r.cpu.peak_pct <= 60 + peak_allowance, (r.cpu, lost_s)
    if r.cpu.avg_pct >= 45:  # the quota was what held it back
        assert r.cpu.nr_throttled, r.cpu  # how many: a steady neighbour sets that
        assert r.cpu.throttled_s and r.cpu.throttled_s > 0


def test_short_spike_peak_is_exact(mechanism: str) -> None:
    """200 MiB held 20 ms: the kernel's high-water mark sees it at the default interval."""
    r = edgeprof.profile([PY, str(WORKLOADS / "spike.py"), "200", "0.02", "1"])
    assert r.termination is Termination.EXITED and r.exit_code == 0
    assert r.memory.peak_source == "kernel"
    assert r.memory.peak_bytes is not None and r.memory.peak_bytes >= 200 * MiB
    assert r.memory.peak_bytes < 300 * MiB
    assert r.samples.interval_s == 0.1


def test_oom_kill_is_a_result(mechanism: str) -> None:
    r = edgeprof.profile([PY, str(WORKLOADS / "spike.py"), "200"], Limits(memory="64m"))
    assert r.termination is Termination.OOM
    assert r.memory.oom_kills is not None and r.memory.oom_kills >= 1
    assert r.exit_code == 137 and r.signal == signal.SIGKILL
    assert r.memory.limit_bytes == 64 * MiB
    assert r.memory.peak_bytes is not None and r.memory.peak_bytes <= 64 * MiB


def test_timeout_kills_a_workload_that_ignores_sigterm(mechanism: str, tmp_path: Path) -> None:
    """A shell loop: its trap is in place at once (a Python one may still be starting when
    SIGTERM comes under the VM tier's emulation).  A shell that said so (``ready``) only
    after the timeout had come tested nothing, and runs again with twice the timeout."""
    for timeout in (1, 2, 4, 8, 16):
        ready = tmp_path / f"ready{timeout}"
        trap = ["sh", "-c", f"trap '' TERM; : > {shlex.quote(str(ready))}; while :; do :; done"]
        r = edgeprof.profile(trap, timeout=timeout, kill_grace=0.5)
        if ready.exists():
            break
    assert r.termination is Termination.TIMEOUT
    assert r.signal == signal.SIGKILL and r.exit_code == 137
    assert timeout + 0.4 <= r.wall_s <= timeout + 2


def test_daemonized_grandchild_is_killed_and_counted(mechanism: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    r = edgeprof.profile([PY, str(WORKLOADS / "daemonize.py"), "cpu=0.9", str(pidfile)])
    assert r.termination is Termination.EXITED and r.exit_code == 0
    grandchild = int(pidfile.read_text())
    assert gone(grandchild)
    # The parent left only once the grandchild had spun 0.9 s of its own CPU: it is counted.
    assert r.cpu.total_s is not None and r.cpu.total_s >= 0.9


def test_freezer_path_kills_the_tree_without_cgroup_kill(
    make_backend: type, tmp_path: Path
) -> None:
    """Kernels before 5.14 have no cgroup.kill: freeze, SIGKILL, thaw must do the same.

    The parent leaves once the grandchild has spun 50 ms of its own CPU time (so it runs and
    has written its pid), not after a fixed 0.5 s that a loaded machine may not schedule it in.
    """
    pidfile = tmp_path / "grandchild.pid"
    be = backend_for(make_backend, "cgroup.kill")
    cmd = [PY, str(WORKLOADS / "daemonize.py"), "cpu=0.05", str(pidfile)]
    r = edgeprof.profile(cmd, backend=be)
    assert r.termination is Termination.EXITED
    assert gone(int(pidfile.read_text()))


@pytest.mark.parametrize("disabled", [(), ("cgroup.kill",)], ids=["cgroup.kill", "freezer"])
def test_groups_the_workload_made_under_its_own_are_killed_and_removed(
    make_backend: type, tmp_path: Path, disabled: tuple[str, ...]
) -> None:
    """A root workload made a group under each of its run's groups and moved a child there:
    the child is still the run's (killed), and its groups go with the run's (16 had been left
    behind, each removal retried for its full second)."""
    pidfile = tmp_path / "child.pid"
    be = backend_for(make_backend, *disabled)
    r = edgeprof.profile([PY, str(WORKLOADS / "own_subgroup.py"), str(pidfile)], backend=be)
    assert (r.termination, r.exit_code) == (Termination.EXITED, 0), r.warnings
    assert gone(int(pidfile.read_text()))
    assert not [w for w in r.warnings if "cannot remove cgroup" in w]


def test_sampled_peak_when_the_kernel_has_no_high_water_mark(make_backend: type) -> None:
    peak_file = (
        "memory.peak"
        if make_backend.__name__ == "CgroupV2Backend"
        else ("memory.max_usage_in_bytes")
    )
    be = backend_for(make_backend, peak_file)
    r = edgeprof.profile([PY, str(WORKLOADS / "spike.py"), "200", "1.0", "0.2"], backend=be)
    assert r.memory.peak_source == "sampled"
    assert r.memory.peak_bytes is not None and r.memory.peak_bytes >= 190 * MiB
    assert any("sampled" in w or "samples" in w for w in r.warnings)


def test_average_memory_is_time_weighted(mechanism: str, tmp_path: Path) -> None:
    """100 MiB held for 2 s of a run that holds little else: the average is the held share of
    the sampled span at 100 MiB, never above the peak.

    The bound comes from the run's own samples: a time-weighted average between samples can
    miss at most half the gap around each edge of the hold (the sample before the block was
    complete, and the one after it was freed), so the lower bound is the hold less the widest
    gap between two samples, over the sampled span (a fixed 0.95 of the held share assumed
    100 ms gaps, which a loaded machine's sampler does not keep)."""
    timeline = tmp_path / "held"
    out = tmp_path / "out"
    r = edgeprof.profile(
        [PY, str(WORKLOADS / "spike.py"), "100", "2", "0", str(timeline)], out_dir=out
    )
    held_from, held_until = map(float, timeline.read_text().split())
    with (out / "samples.csv").open(newline="") as f:
        times = [float(row["t_s"]) for row in csv.DictReader(f)]
    assert len(times) == r.samples.count >= 3
    widest_gap = max(b - a for a, b in itertools.pairwise(times))
    span = times[-1] - times[0]
    held = held_until - held_from
    assert r.memory.avg_bytes is not None and r.memory.peak_bytes is not None
    floor = max(0.0, held - widest_gap) / span * 100 * MiB
    assert floor <= r.memory.avg_bytes <= r.memory.peak_bytes, (held, widest_gap, span)
    # The hold was sampled: 2 s at the default 0.1 s.
    assert widest_gap < held / 2, times


def test_integer_cpus_pin_cores_and_size_thread_pools(mechanism: str, tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    code = (
        "import json, os, sys; json.dump({'cpus': sorted(os.sched_getaffinity(0)), "
        "'omp': os.environ.get('OMP_NUM_THREADS')}, open(sys.argv[1], 'w'))"
    )
    r = edgeprof.profile([PY, "-c", code, str(out)], Limits(cpus=1))
    seen = json.loads(out.read_text())
    assert r.limits.cpuset is not None and len(r.limits.cpuset) == 1
    assert seen == {"cpus": list(r.limits.cpuset), "omp": "1"}


def test_block_io_is_counted(mechanism: str, tmp_path: Path) -> None:
    target = tmp_path / "data"
    code = (
        "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_DIRECT); "
        "import mmap; buf = mmap.mmap(-1, 1 << 20); buf.write(b'x' * (1 << 20)); "
        "[os.write(fd, buf) for _ in range(16)]; os.close(fd)"
    )
    on_block_device = os.major(os.stat(tmp_path).st_dev) != 0
    r = edgeprof.profile([PY, "-c", code, str(target)])
    if on_block_device:
        assert r.exit_code == 0
        assert r.io.write_bytes is not None and r.io.write_bytes >= 16 * MiB
    else:  # tmpfs/overlay (the VM tier): no block device, so no block I/O — but measured
        assert r.io.write_bytes is not None
    assert r.io.net_rx_bytes is None  # host network namespace: no per-run figure


def test_samples_stream_to_disk_during_the_run(mechanism: str, tmp_path: Path) -> None:
    """20 rows are on disk while the workload still runs: it runs until the test has seen
    them (a go file), not for a fixed 2 s that a slow start or a loaded machine may use up."""
    go = tmp_path / "go"
    wait_for_go = (
        "import os, sys, time\n"
        "deadline = time.monotonic() + float(sys.argv[2])\n"
        "while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
    )
    out = tmp_path / "out"
    edgeprof_run = [PY, "-m", "edgeprof", "run", "--interval", "0.01", "--out", str(out)]
    workload = [PY, "-c", wait_for_go, str(go), str(2 * HANG_S)]
    proc = subprocess.Popen([*edgeprof_run, "--", *workload], stdout=subprocess.DEVNULL, cwd=REPO)
    try:
        csv_path = out / "samples.csv"
        deadline = time.monotonic() + HANG_S
        rows_mid_run = 0
        while time.monotonic() < deadline and proc.poll() is None:
            if csv_path.exists():
                rows_mid_run = len(csv_path.read_text().splitlines()) - 1
                if rows_mid_run >= 20:
                    break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before samples appeared"
        assert rows_mid_run >= 20
    finally:
        go.touch()
    assert proc.wait(HANG_S) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["samples"]["count"] == len(csv_path.read_text().splitlines()) - 1


def _defaults(sigs: list[int]) -> None:
    """In the edgeprof under test, before its exec: ``sigs`` at their default.  A signal the
    suite's caller ignores (nohup's SIGHUP) stays ignored in edgeprof, as it should."""
    for sig in sigs:
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize(
    "sigs",
    [
        [signal.SIGINT],
        [signal.SIGTERM],
        [signal.SIGHUP],  # a closed terminal: it had left the workload running, 8 groups
        [signal.SIGINT, signal.SIGINT, signal.SIGTERM],
        [signal.SIGUSR1],  # a script's own signal: it had ended edgeprof as SIGKILL would
        # RLIMIT_CPU's (`ulimit -t` in a CI job), a UPS daemon's: each had ended edgeprof at
        # once (exit 152), the workload and its daemon left running.
        [signal.SIGXCPU],
        [signal.SIGPWR],
    ],
    ids=["SIGINT", "SIGTERM", "SIGHUP", "burst", "SIGUSR1", "SIGXCPU", "SIGPWR"],
)
def test_interrupt_kills_the_tree_and_still_reports(
    mechanism: str, tmp_path: Path, sigs: list[int]
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "edgeprof",
            "run",
            "--json",
            "--out",
            str(tmp_path / "out"),
            "--",
            PY,
            str(WORKLOADS / "daemonize.py"),
            "600",
            str(pidfile),
            "0.15",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        preexec_fn=lambda: _defaults(sigs),
    )
    # Interrupt once the grandchild has spun 0.15 s of its own CPU (its marker file), not
    # after a fixed sleep that a loaded machine may not fill.
    deadline = time.monotonic() + HANG_S
    while not Path(f"{pidfile}.spun").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    for sig in sigs:  # a burst: impatient Ctrl-C, then a kill from a supervisor
        proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        proc.kill()  # edgeprof hung: leave nothing behind, then fail
        proc.wait()
        subprocess.run([PY, "-m", "edgeprof", "gc"], cwd=REPO, capture_output=True)
        raise
    # edgeprof dies by the first signal once its result is out, so that a shell loop stops
    # too; one whose default dumps core (SIGXCPU) ends with 130 instead.
    dies_by = 130 if sigs[0] in (signal.SIGQUIT, signal.SIGXCPU) else -sigs[0]
    assert proc.returncode == dies_by, err.decode()
    result = json.loads(out)
    assert result["termination"] == "interrupted"
    assert result["cpu"]["total_s"] > 0.1
    # The same result, but for where its samples (and on a GPU host its gpu.csv) are named
    # from: --json from where edgeprof ran, result.json from beside it.
    saved = json.loads((tmp_path / "out" / "result.json").read_text())
    assert saved["samples"]["path"] == "samples.csv"
    assert Path(result["samples"]["path"]) == tmp_path / "out" / "samples.csv"
    relative = {**result, "samples": {**result["samples"], "path": "samples.csv"}}
    if result["gpu"] is not None:
        assert (saved["gpu"]["path"], Path(result["gpu"]["path"])) == (
            "gpu.csv", tmp_path / "out" / "gpu.csv"
        )
        relative["gpu"] = {**result["gpu"], "path": "gpu.csv"}
    assert saved == relative
    assert gone(int(pidfile.read_text()))


def test_two_stop_signals_at_once_kill_at_once(mechanism: str, tmp_path: Path) -> None:
    """SIGTERM and SIGHUP together (a service manager's stop with ``SendSIGHUP=yes``): the
    second signal kills the run at once, not after the whole kill grace.  A tester's
    ``kill -TERM; kill -HUP`` had waited out ``--kill-grace 8``: Python runs handlers in
    signal-number order, and the SIGTERM's waited while the SIGHUP's grace ran.  In a
    session of its own, as under a service manager: the workload shares edgeprof's group,
    so the SIGHUP alone would give it the grace to end by itself first."""
    started = tmp_path / "started"
    workload = [PY, "-c", "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(600)"]
    proc = subprocess.Popen(
        [PY, "-m", "edgeprof", "run", "--kill-grace", str(HANG_S), "--", *workload, str(started)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        start_new_session=True,
        preexec_fn=lambda: _defaults([signal.SIGTERM, signal.SIGHUP]),
    )
    deadline = time.monotonic() + HANG_S
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGHUP)
    out = ended_at_once(proc, "the second stop signal waited for the kill grace")
    # Taken together, they are handled in signal-number order: SIGHUP is the first.
    assert proc.returncode in (-signal.SIGTERM, -signal.SIGHUP), out
    assert "then another stop signal: the run was killed" in out


@pytest.mark.parametrize(
    "args",
    [
        # One CPU past the highest we may use, and one more CPU than we have: whatever the
        # machine's size (8 vCPUs in the VM tier), never a 2-core assumption.
        ["--cpuset", str(max(os.sched_getaffinity(0)) + 1)],
        ["--cpus", str(len(os.sched_getaffinity(0)) + 1)],
        ["--memory", "12x"],
        ["--cpus", "-1"],
    ],
)
def test_bad_limits_start_nothing(mechanism: str, args: list[str], tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    proc = subprocess.run(
        [PY, "-m", "edgeprof", "run", *args, "--", "touch", str(marker)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=HANG_S,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("edgeprof: error:") and proc.stderr.count("\n") == 1
    assert not marker.exists()


def test_a_cpuset_past_the_machine_is_refused_before_any_lease(
    mechanism: str, tmp_path: Path
) -> None:
    """A CPU past every one the machine could have is no setting ``--allow-over-host`` can
    allow: one line naming ``--cpuset`` and the machine's CPUs, before any lease or group (a
    newcomer's ``--cpuset 5 --allow-over-host`` had reached the kernel's refusal and left
    ``/run/edgeprof/cores/cpu5`` behind)."""
    from edgeprof.measure.leases import lease_dir

    possible = Path("/sys/devices/system/cpu/possible").read_text().strip()
    past = max(int(part.split("-")[-1]) for part in possible.split(",")) + 1
    lease = lease_dir() / f"cpu{past}"
    assert not lease.exists()  # a leftover of an earlier run would hide the check
    marker = tmp_path / "ran"
    args = ["--cpuset", str(past), "--allow-over-host", "--", "touch", str(marker)]
    cmd = [PY, "-m", "edgeprof", "run", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=HANG_S)
    assert proc.returncode == 2 and not marker.exists(), proc.stderr
    assert proc.stderr == (
        f"edgeprof: error: --cpuset {past}: CPU {past} does not exist on this machine (its "
        f"CPUs: {possible})\n"
    )
    assert not lease.exists()
