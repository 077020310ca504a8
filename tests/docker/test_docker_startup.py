"""A container's start-up kept out of its run's figures, against the private daemon."""

from __future__ import annotations

import re
from typing import Any

import edgeprof
from edgeprof import Limits, Termination
from edgeprof.backends.docker import DockerBackend


def test_wall_and_cpu_are_the_workload_s_not_the_container_s(docker_daemon: Any) -> None:
    be = DockerBackend(docker_daemon.images["busybox"], client=docker_daemon.engine)
    be.check()
    r = edgeprof.profile(["sleep", "0.3"], backend=be, limits=Limits(cpus=1.0))
    assert r.termination is Termination.EXITED
    # The CPU runc init used in the group is named and left out; the reading it comes from
    # is `lag` after StartedAt, and a sleeping workload uses next to none meanwhile.
    (line,) = [w for w in r.warnings if w.startswith("CPU time leaves out")]
    m = re.search(r"leaves out ([\d.]+) ms .*, (\d+) ms after the workload started", line)
    assert m is not None
    setup_ms, lag_ms = float(m.group(1)), int(m.group(2))
    assert r.cpu.total_s is not None and r.cpu.total_s * 1e3 < setup_ms
    # From StartedAt (stamped after the exec) to FinishedAt: the sleep, less what StartedAt
    # trails the exec by, at most the time to edgeprof's first reading after it.  The start
    # call and the wait's answer (≈0.3 s more on this tier) are not in it.
    assert 0.3 - (lag_ms + 1) / 1e3 <= r.wall_s
    assert r.samples.count >= 1
