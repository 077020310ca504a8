"""A container's start-up kept out of its run's figures, against the private daemon."""

from __future__ import annotations

from typing import Any

import edgeprof
from edgeprof import Limits, Termination
from edgeprof.backends.docker import DockerBackend


def test_wall_time_is_the_workload_s_not_the_container_s(docker_daemon: Any) -> None:
    be = DockerBackend(docker_daemon.images["busybox"], client=docker_daemon.engine)
    be.check()
    r = edgeprof.profile(["sleep", "0.3"], backend=be, limits=Limits(cpus=1.0))
    assert r.termination is Termination.EXITED
    # From StartedAt (stamped after the exec) to FinishedAt: the sleep, less what StartedAt
    # trails the exec by (a few ms).  The start call and the wait's answer (≈0.3 s more on
    # this tier) are not in it.
    assert r.wall_s >= 0.28, r.wall_s
    assert r.samples.count >= 1
