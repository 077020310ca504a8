"""A run that shares its core with another task on the real kernel: its waiting
(``cpu.pressure``, the unified group's on a hybrid host) and the other task's CPU time on
that core are measured, and the run is warned that its times are not the device's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import edgeprof
from edgeprof import Limits
from tests.conftest import require

SPIN = """
import time
start = time.process_time()
while time.process_time() - start < 0.5:
    pass
"""


def test_a_run_sharing_its_core_with_another_task_is_warned(mechanism: str) -> None:
    require(Path("/proc/pressure/cpu").exists(), "this kernel keeps no pressure (PSI) figures")
    core = sorted(os.sched_getaffinity(0))[-1]
    rival = subprocess.Popen(
        ["sh", "-c", "while :; do :; done"],
        preexec_fn=lambda: os.sched_setaffinity(0, {core}),
    )
    try:
        r = edgeprof.profile([sys.executable, "-c", SPIN], Limits(cpus=1, cpuset=[core]))
    finally:
        rival.kill()
        rival.wait()
    assert r.exit_code == 0, r.warnings
    assert r.cpu.wait_s is not None and r.cpu.others_s is not None, r.cpu
    # The scheduler shares the core between the two about evenly: each way at least a
    # quarter of the run's time (more where still other tasks run there).
    assert r.cpu.wait_s >= 0.25 * r.wall_s, r.cpu
    assert r.cpu.others_s >= 0.25 * r.wall_s, r.cpu
    # The run and the others together did not take more of the core than there was (the
    # readings' clock ticks, 10 ms each, and edgeprof's own time are the slack).
    assert r.cpu.total_s is not None
    assert r.cpu.total_s + r.cpu.others_s <= 1.05 * r.wall_s + 0.1, r.cpu
    [w] = [w for w in r.warnings if w.startswith("other tasks on this host took")]
    assert f"of the run's CPU {core} while it waited" in w, w
