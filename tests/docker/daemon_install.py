"""Installing Debian's ``docker.io`` (dockerd, containerd, runc) when it is missing.

apt-get runs as root with a ``policy-rc.d`` that denies service starts, so no system daemon
starts; ``apt-get update`` runs at most once per process.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.docker.daemon_common import (
    SBIN_PATH,
    DockerUnavailable,
    _timed,
    _which,
)

_apt_updated = False


def _apt_install(*packages: str) -> None:
    """``apt-get install`` as root, never starting a service (see module docstring)."""
    global _apt_updated
    if os.geteuid() != 0:
        raise DockerUnavailable(f"{' '.join(packages)} missing and not root: cannot install")
    if _which("apt-get") is None:
        raise DockerUnavailable(f"{' '.join(packages)} missing and no apt-get here")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "PATH": SBIN_PATH}
    policy = Path("/usr/sbin/policy-rc.d")
    made_policy = False
    if not policy.exists():
        policy.write_text(
            "#!/bin/sh\n# edgeprof tests: no service starts during install\nexit 101\n"
        )
        policy.chmod(0o755)
        made_policy = True
    try:
        cmds: list[list[str]] = []
        if not _apt_updated:
            cmds.append(["apt-get", "-q", "-o", "DPkg::Lock::Timeout=300", "update"])
        cmds.append(
            [
                "apt-get",
                "install",
                "-y",
                "-q",
                "--no-install-recommends",
                "-o",
                "DPkg::Lock::Timeout=300",
                *packages,
            ]
        )
        for cmd in cmds:
            r = subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=1800, check=False
            )
            if r.returncode != 0:
                tail = "\n".join((r.stdout + r.stderr).splitlines()[-15:])
                raise DockerUnavailable(f"{' '.join(cmd)} failed ({r.returncode}):\n{tail}")
            if cmd[-1] == "update":
                _apt_updated = True
    finally:
        if made_policy:
            policy.unlink(missing_ok=True)


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
