"""Installing Debian's ``docker.io`` (dockerd, containerd, runc) when it is missing.

apt-get runs through :func:`tests.apt.apt_install`.
"""

from __future__ import annotations

from pathlib import Path

from tests.apt import AptUnavailable, apt_install
from tests.docker.daemon_common import (
    DockerUnavailable,
    _timed,
    _which,
)


def _apt_install(*packages: str) -> None:
    """:func:`tests.apt.apt_install`, its failure the tier's own."""
    try:
        apt_install(*packages)
    except AptUnavailable as exc:
        raise DockerUnavailable(str(exc)) from exc


@_timed("install")
def ensure_docker_installed() -> Path:
    """Path of ``dockerd``; installs Debian's ``docker.io`` first when dockerd, containerd,
    runc or the runc shim is missing (root only, else :class:`DockerUnavailable`)."""
    needed = ("dockerd", "containerd", "containerd-shim-runc-v2", "runc")
    if any(_which(n) is None for n in needed):
        _apt_install("docker.io")
    missing = [n for n in needed if _which(n) is None]
    if missing:
        raise DockerUnavailable(f"installed docker.io but still missing: {', '.join(missing)}")
    dockerd = _which("dockerd")
    assert dockerd is not None
    return dockerd
