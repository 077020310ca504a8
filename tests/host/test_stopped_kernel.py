"""A run whose every process is stopped, on the real kernel: the run loop reads each
process's state (``/proc/PID/stat``: ``T``) once a second while it waits, says so once on
stderr, and a timeout that ends it so says in the result that it was not running.  A
tester's ``sh -c 'kill -STOP $$'`` had waited forever without a word, and under
``--timeout 1`` ended "timeout (137)" with no mention of it, its SIGTERM left pending on a
stopped process for the whole grace.

A stopped child whose parent still runs is not a stopped run: the parent may resume it.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

import edgeprof
from edgeprof import Limits, Termination
from tests.conftest import HANG_S

from .conftest import ended_at_once

SAID = "edgeprof: every process of the run is stopped"


@pytest.mark.parametrize("backend", ["cgroup", "process"])
def test_a_stopped_run_is_told_once_and_its_timeout_says_it_was_not_running(
    backend: str, mechanism: str, capfd: pytest.CaptureFixture[str]
) -> None:
    r = edgeprof.profile(
        ["sh", "-c", "kill -STOP $$; echo resumed"],
        Limits(),
        backend=backend,
        interval=0.1,
        timeout=2.5,
        kill_grace=0.5,
    )
    assert r.termination is Termination.TIMEOUT
    # The SIGTERM comes with a SIGCONT, as coreutils' timeout sends it: the stopped shell
    # acts on it (143), and is not left stopped for the grace's SIGKILL (137).
    assert r.exit_code == 143
    assert not [w for w in r.warnings if "it had not exited after" in w]
    (w,) = [w for w in r.warnings if "was stopped" in w]
    # Found stopped from the first check on; it began after the watch's start: the range.
    m = re.search(r"for (\d\.\d)s to (\d\.\d)s \(checked every 1s\) when its --timeout 2.5s", w)
    assert m is not None and 1.0 <= float(m.group(1)) <= 1.5, w
    assert float(m.group(1)) <= float(m.group(2)) <= 2.5, w
    out = capfd.readouterr()
    assert out.err.count(SAID) == 1, out.err
    assert "resumed" not in out.out


def test_a_stopped_child_of_a_running_parent_is_not_a_stopped_run(
    mechanism: str, capfd: pytest.CaptureFixture[str]
) -> None:
    r = edgeprof.profile(
        ["sh", "-c", 'sh -c "kill -STOP \\$\\$" & sleep 2.5; kill -CONT $!; wait'],
        Limits(),
        interval=0.1,
        timeout=30,
    )
    assert r.termination is Termination.EXITED and r.exit_code == 0
    assert not [w for w in r.warnings if "stopped" in w]
    assert SAID not in capfd.readouterr().err


def test_a_terminals_signal_to_a_stopped_run_stops_it_at_once(mechanism: str) -> None:
    """Ctrl-C leaves a workload in edgeprof's process group the kill grace to end by itself;
    a stopped one cannot, and had waited out the whole ``--kill-grace 8`` (a verifier's): it
    is sent its SIGTERM, with a SIGCONT, at once."""
    command = ["sh", "-c", "kill -STOP $$; sleep 600"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgeprof", "run", "--kill-grace", str(HANG_S), "--", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the workload shares its group: the terminal's case
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # said once the run has been stopped for a second
        if SAID in line:
            break
    proc.send_signal(signal.SIGINT)
    out = ended_at_once(proc, "a stopped run waited out the kill grace")
    assert proc.returncode == -signal.SIGINT
    assert "which killed it" in out and "after the" not in out, out
