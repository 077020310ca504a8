"""``--gpus`` on the Docker backend against the private, real dockerd, which has no NVIDIA
Container Toolkit: the device request reaches the daemon, and its refusal is one line that
names what is missing, with no container left behind.  The GPU itself is the NVML double's
(this host has none); the daemon's answer is real."""

from __future__ import annotations

from typing import Any

import pytest

import edgeprof
from edgeprof.backends import nvml
from edgeprof.backends.docker import DockerBackend
from edgeprof.backends.docker.daemon import MANAGED_LABEL
from edgeprof.errors import LaunchError
from tests.nvml_double import FakeGpu, NvmlDouble


def test_gpus_without_the_nvidia_toolkit_is_one_line_and_leaves_nothing(
    docker_daemon: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = NvmlDouble([FakeGpu("GPU-0000")])
    monkeypatch.setattr(nvml, "load", lambda *a, **k: lib)
    be = DockerBackend(docker_daemon.images["busybox"], client=docker_daemon.engine)
    be.check()
    before = {c["Id"] for c in docker_daemon.engine.containers(MANAGED_LABEL)}
    with pytest.raises(LaunchError, match="NVIDIA Container Toolkit") as caught:
        edgeprof.profile(["true"], backend=be, gpus="all")
    assert "could not select device driver" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert {c["Id"] for c in docker_daemon.engine.containers(MANAGED_LABEL)} == before
    assert lib.initialised == 0
