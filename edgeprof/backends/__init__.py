"""Backend registry and auto-detection.

The interface (:class:`Backend`, :class:`RunHandle` and their typed capabilities) is in
:mod:`edgeprof.backends.base`; the Docker backend, an optional dependency, is the
:mod:`edgeprof.backends.docker` package, imported only when asked for.
"""

from __future__ import annotations

from ..errors import BackendUnavailable, ConfigError
from ..names import check_cgroup_parent
from .base import Backend, BatchReader, CleanupScope, PeakReset, RunHandle
from .cgroup_v1 import CgroupV1Backend
from .cgroup_v2 import CgroupV2Backend
from .fake import FakeBackend

NAMES = ("auto", "cgroup", "docker", "fake")

__all__ = [
    "NAMES",
    "Backend",
    "BatchReader",
    "CgroupV1Backend",
    "CgroupV2Backend",
    "CleanupScope",
    "FakeBackend",
    "PeakReset",
    "RunHandle",
    "get_backend",
]


def cgroup_backend(cgroup_parent: str | None = None) -> Backend:
    """cgroup v2 if this host has it with controllers, else cgroup v1 (hybrid hosts)."""
    if cgroup_parent is not None:
        check_cgroup_parent(cgroup_parent)
    v2 = CgroupV2Backend(parent=cgroup_parent)
    try:
        v2.check()
        return v2
    except BackendUnavailable as e2:
        v1 = CgroupV1Backend()
        try:
            v1.check()
        except BackendUnavailable as e1:
            raise BackendUnavailable(f"cgroup backend unavailable: {e2}; and {e1}") from e1
        if cgroup_parent is not None:
            raise ConfigError(
                "--cgroup-parent applies to cgroup v2; this host uses cgroup v1"
            ) from None
        return v1


def get_backend(
    name: str | Backend = "auto",
    *,
    cgroup_parent: str | None = None,
    image: str | None = None,
    docker_args: str | None = None,
) -> Backend:
    """A ready backend by name (``auto`` picks the best one this host supports).

    An object that already implements :class:`Backend` is checked and returned as is.
    """
    if not isinstance(name, str):
        name.check()
        return name
    if name in ("auto", "cgroup"):
        return cgroup_backend(cgroup_parent)
    if name == "docker":
        from .docker import DockerBackend, DockerOptions, parse_docker_args

        opts = parse_docker_args(docker_args) if docker_args else DockerOptions()
        be = DockerBackend(image, options=opts)
        be.check()
        return be
    if name == "fake":
        return FakeBackend()
    raise ConfigError(f"unknown backend {name!r}: choose one of {', '.join(NAMES)}")
