"""Installing Debian packages a tier needs when they are missing (the docker tier's
``docker.io`` and ``debootstrap``, the browser test's ``chromium``).

apt-get runs as root with a ``policy-rc.d`` that denies service starts, so no system daemon
starts; ``apt-get update`` runs at most once per process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class AptUnavailable(RuntimeError):
    """The packages cannot be installed here (not root, no apt-get, apt-get failed)."""


_apt_updated = False


def apt_install(*packages: str) -> None:
    """``apt-get install`` as root, never starting a service (see the module docstring)."""
    global _apt_updated
    if os.geteuid() != 0:
        raise AptUnavailable(f"{' '.join(packages)} missing and not root: cannot install")
    if shutil.which("apt-get", path=SBIN_PATH) is None:
        raise AptUnavailable(f"{' '.join(packages)} missing and no apt-get here")
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
                raise AptUnavailable(f"{' '.join(cmd)} failed ({r.returncode}):\n{tail}")
            if cmd[-1] == "update":
                _apt_updated = True
    finally:
        if made_policy:
            policy.unlink(missing_ok=True)
