"""Every way a run can end while a phase is open leaves a whole result (issue: an OOM inside
``edgeprof.phase("load")`` under ``--memory`` once crashed edgeprof with EBADF, a phase peak
window's descriptor closed twice).

The workload is a shell speaking the line protocol.  Its phase's peak window is real
(:class:`FdPeakReset` or :class:`SharedPeakReset`) over a plain file that plays the kernel's
mark: the workload waits until the runner has opened the window (its reset changed the
file: ``reset`` written over it, or ``0`` for the shared mark), writes a new high-water mark
into it, then ends the run in one of the five ways.  Nothing waits on a clock: the
timeout's deadline and the interrupt start when the workload says it is ready.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from edgeprof.backends import CgroupV2Backend
from edgeprof.backends._peak_reset import FdPeakReset
from edgeprof.backends.base import Backend
from edgeprof.cli.app import exit_code
from edgeprof.measure.runner import profile
from edgeprof.model import Limits, RunResult, RunSpec, Termination
from tests.fakes import FakeBackend, FakeRun

from .conftest import FakeCgroupFs
from .test_backend_cgroup_v1 import v1_tree
from .test_backend_cgroup_v2 import v2_tree

SPIKE = 314_572_800
"""The high-water mark the workload leaves in its phase's window (300 MiB)."""

WORKLOAD = r"""
ev=/proc/self/fd/$EDGEPROF_EVENTS_FD
echo "begin load" > $ev
n=0  # a bound on the wait turns a bug into a failure (exit 99), not a hang
until [ "$(head -n 1 "$PEAK")" != "$INITIAL" ]; do n=$((n+1)); [ $n -lt 20000 ] || exit 99; done
printf '%s\n' "$SPIKE" > "$PEAK"
case "$MODE" in
  oom) : > "$OOM"; kill -9 $$ ;;
  signaled) kill -9 $$ ;;
  exited) exit 3 ;;
  *) : > "$READY"; exec sleep 600 ;;
esac
"""

ENDINGS = {
    "oom": Termination.OOM,
    "timeout": Termination.TIMEOUT,
    "interrupted": Termination.INTERRUPTED,
    "signaled": Termination.SIGNALED,
    "exited": Termination.EXITED,
}


def wait_for(path: Path, limit: float = 60.0) -> None:
    """The workload's own signal; the limit only turns a hang into a failure."""
    deadline = time.monotonic() + limit
    while not path.exists():
        assert time.monotonic() < deadline, f"the workload never wrote {path}"
        time.sleep(0.002)


class ReadyFirst(FakeBackend):
    """The runner's deadline starts once the workload is inside its phase: a timeout test
    that no slow start-up can turn into a different ending."""

    def __init__(self, ready: Path | None, **kw: object) -> None:
        """``ready``: the file the workload writes inside its phase, waited for by a wait
        with a timeout (``None``: a run with no timeout; its waits are the run loop's
        steps between stop checks, and no ready file comes)."""
        super().__init__(**kw)  # type: ignore[arg-type]
        self._ready = ready

    def launch(self, spec: RunSpec) -> FakeRun:
        run = super().launch(spec)
        real_wait = run.wait

        def wait(timeout: float | None) -> int | None:
            if timeout is not None and self._ready is not None:
                wait_for(self._ready)
            return real_wait(timeout)

        run.wait = wait  # type: ignore[method-assign]
        return run


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def end_in_phase(tmp_path: Path, mode: str, shared: bool) -> tuple[RunResult, FakeBackend]:
    peak, oom, ready = tmp_path / "peak", tmp_path / "oom", tmp_path / "ready"
    peak.write_text("1048576\n")
    be = ReadyFirst(
        ready if mode == "timeout" else None, peak_file=peak, shared_peak=shared, oom_file=oom
    )
    env = {
        "PEAK": str(peak),
        "INITIAL": "1048576",
        "SPIKE": str(SPIKE),
        "MODE": mode,
        "OOM": str(oom),
        "READY": str(ready),
    }
    interrupter = None
    if mode == "interrupted":  # Ctrl-C once the workload is inside its phase

        def interrupt() -> None:
            wait_for(ready)
            os.kill(os.getpid(), signal.SIGINT)

        interrupter = threading.Thread(target=interrupt)
        interrupter.start()
    r = profile(
        ["sh", "-c", WORKLOAD],
        backend=be,
        env=env,
        interval=0.01,
        timeout=0.001 if mode == "timeout" else None,
        kill_grace=5.0,
        out_dir=tmp_path / "out",
    )
    if interrupter is not None:
        interrupter.join()
    return r, be


@pytest.mark.parametrize("shared", [False, True], ids=["per-fd-peak", "shared-peak"])
@pytest.mark.parametrize("mode", list(ENDINGS))
def test_every_ending_inside_an_open_phase_is_a_result(
    tmp_path: Path, mode: str, shared: bool
) -> None:
    before = open_fds()
    r, be = end_in_phase(tmp_path, mode, shared)

    assert r.termination is ENDINGS[mode]
    [load] = r.phases
    assert load.name == "load" and not load.complete
    assert load.cut_short_by == mode
    # Closed at the end of the run: counted from its start to the run's wall time.
    assert load.wall_s == pytest.approx(r.wall_s - load.start_s)
    # The window was read once, before the group went: the spike the workload left in it.
    assert (load.peak_bytes, load.peak_source) == (SPIKE, "kernel")
    why = {
        "oom": "cut short by the OOM kill",
        "timeout": "cut short by the timeout",
        "interrupted": "cut short by the interrupt",
        "signaled": "cut short by a signal",
        "exited": "still open when the workload exited",
    }[mode]
    said = f"phase(s) load {why}: counted to the run's end ("
    assert any(w.startswith(said) for w in r.warnings), r.warnings

    # The usual exit code of that ending, and a whole result file that says the same.
    expected_code = {"oom": 137, "signaled": 137, "exited": 3, "timeout": 143, "interrupted": 130}[
        mode
    ]
    assert exit_code(r) == expected_code
    saved = json.loads((tmp_path / "out" / "result.json").read_text())
    assert saved["termination"] == mode
    assert saved["phases"][0]["cut_short_by"] == mode
    assert RunResult.from_dict(saved).phases == r.phases

    # Every descriptor and window closed exactly once.
    [run] = be.runs
    assert run.closed == 1
    assert open_fds() <= before, "a descriptor of the run was left open"


def test_a_window_stopped_twice_is_stopped_once(tmp_path: Path) -> None:
    """The rule the EBADF crash broke: a second stop of the same token (and a close after
    it) closes nothing, so a reused descriptor number is never closed behind its owner."""
    peak = tmp_path / "peak"
    peak.write_text("0\n")
    windows = FdPeakReset(peak)
    token = windows.start()
    assert isinstance(token, int)
    assert windows.stop(token) is None  # a plain file reads "reset": no number in it
    reused = os.open(peak, os.O_RDONLY)  # the kernel hands out the lowest free number
    try:
        assert reused == token
        assert windows.stop(token) is None
        windows.close()
        os.fstat(reused)  # still ours: not closed by the second stop or the close
    finally:
        os.close(reused)


def test_close_closes_the_windows_still_open(tmp_path: Path) -> None:
    peak = tmp_path / "peak"
    peak.write_text("0\n")
    windows = FdPeakReset(peak)
    tokens = [windows.start(), windows.start()]
    for t in tokens:
        assert isinstance(t, int)
        os.fstat(t)  # open until the close
    windows.close()
    for t in tokens:
        assert isinstance(t, int)
        with pytest.raises(OSError):
            os.fstat(t)
    assert windows.stop(tokens[0]) is None


# -- the same through the cgroup backends' own handles, on fake trees --------------------------

TREE_WORKLOAD = r"""
ev=/proc/self/fd/$EDGEPROF_EVENTS_FD
g=$(find "$ROOT" -mindepth 1 -type d -name 'edgeprof-*-*' | head -n 1)
echo "begin load" > $ev
n=0
until [ "$(head -n 1 "$g/$PEAK_FILE")" != "$INITIAL" ]; do
  n=$((n+1)); [ $n -lt 20000 ] || exit 99
done
printf '%s\n' "$SPIKE" > "$g/$PEAK_FILE"
printf '%s' "$OOM_TEXT" > "$g/$OOM_FILE"
kill -9 $$
"""


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_an_oom_inside_a_phase_on_a_cgroup_tree(
    cgfs: FakeCgroupFs, tmp_path: Path, version: str
) -> None:
    """The cgroup handles own their windows (closed with the group); the v2 one per
    descriptor, the v1 one shared."""
    initial = "1048576"
    if version == "v2":
        root, psc = v2_tree(cgfs, tmp_path, overrides={"memory.peak": initial + "\n"})
        be: Backend = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0)
        env = {
            "ROOT": str(root),
            "PEAK_FILE": "memory.peak",
            "OOM_FILE": "memory.events.local",
            "OOM_TEXT": "oom 1\noom_kill 1\n",
        }
    else:
        host = v1_tree(
            cgfs,
            tmp_path,
            overrides={"memory": {"memory.max_usage_in_bytes": initial + "\n"}},
        )
        be = host.backend()
        env = {
            "ROOT": str(host.mounts["memory"]),
            "PEAK_FILE": "memory.max_usage_in_bytes",
            "OOM_FILE": "memory.oom_control",
            "OOM_TEXT": "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
        }
    before = open_fds()
    r = profile(
        ["sh", "-c", TREE_WORKLOAD],
        Limits(memory="64m"),
        backend=be,
        env={**env, "INITIAL": initial, "SPIKE": str(SPIKE)},
        interval=0.01,
        out_dir=tmp_path / "out",
    )
    assert r.termination is Termination.OOM and r.exit_code == 137
    [load] = r.phases
    assert (load.complete, load.cut_short_by) == (False, "oom")
    assert (load.peak_bytes, load.peak_source) == (SPIKE, "kernel")
    assert json.loads((tmp_path / "out" / "result.json").read_text())["termination"] == "oom"
    assert cgfs.run_groups() == []
    assert open_fds() <= before
