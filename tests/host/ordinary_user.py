"""Running edgeprof as an ordinary user (``nobody``) from tests that run as root.

Two things of root's may be out of the user's reach: the venv's interpreter (pyenv keeps it
under root's 0700 home) and the checkout itself (a clone under ``/root``).  The system's
interpreter of the same version runs the same edgeprof with the same packages, given the
checkout and the venv's packages on ``PYTHONPATH``; a checkout the user cannot reach is
bind-mounted, in a mount namespace of the user's command only, at a directory the user can.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534


def drop(uid: int = NOBODY) -> list[str]:
    """The command prefix that runs what follows as ``uid`` (its own group, no others)."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


class AsUser:
    """edgeprof (or anything) started as ``uid``, with ``home`` its writable directory.

    :meth:`path` gives a checkout path as the user sees it; :meth:`command` the argv that
    runs ``args`` as the user, optionally started inside a cgroup first (root moves the
    shell there, then drops privileges, as a login session starts in its scope)."""

    def __init__(self, home: Path, uid: int = NOBODY) -> None:
        require(shutil.which("setpriv") is not None, "needs setpriv (util-linux)")
        self.home = home
        self.uid = uid
        marker = REPO / "edgeprof" / "__init__.py"
        reachable = subprocess.run([*drop(uid), "test", "-r", str(marker)]).returncode == 0
        self.view = REPO if reachable else home / "checkout"
        if not reachable:
            self.view.mkdir(mode=0o755)
        paths = sysconfig.get_paths()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "PYTHONPATH": os.pathsep.join(
                str(self.path(Path(p))) for p in (REPO, paths["purelib"], paths["platlib"])
            ),
            "PYTHONDONTWRITEBYTECODE": "1",
            "EDGEPROF_LEASE_DIR": str(home / "cores"),
        }
        self.python = self._python()

    def path(self, p: Path) -> Path:
        """``p`` as the user's processes see it (inside the bound checkout where there is one)."""
        if self.view == REPO or not p.is_relative_to(REPO):
            return p
        return self.view / p.relative_to(REPO)

    def command(self, args: list[str], cgroup: Path | None = None) -> list[str]:
        steps = []
        if cgroup is not None:
            steps.append(f'echo $$ > "{cgroup / "cgroup.procs"}"')
        if self.view != REPO:
            steps.append(f'mount --bind "{REPO}" "{self.view}"')
        if not steps:
            return [*drop(self.uid), *args]
        script = " && ".join([*steps, 'exec "$@"'])
        shell = ["sh", "-c", script, "sh", *drop(self.uid), *args]
        if self.view != REPO:
            return ["unshare", "--mount", "--propagation", "private", *shell]
        return shell

    def edgeprof(self, args: list[str], cgroup: Path | None = None) -> list[str]:
        return self.command([self.python, "-m", "edgeprof", *args], cgroup)

    def _python(self) -> str:
        """An interpreter of this Python's version with which the user can import edgeprof:
        this one, or the system's; :func:`tests.conftest.require` fails (CI) or skips."""
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        probe = "import os, sys; os.stat(sys.executable); import edgeprof.cli, psutil"
        why = []
        for cand in (os.path.realpath(sys.executable), shutil.which(version, path="/usr/bin")):
            if cand is None:
                continue
            tried = subprocess.run(
                self.command([cand, "-c", probe]), env=self.env, capture_output=True, text=True
            )
            if tried.returncode == 0:
                return cand
            why.append(f"{cand}: {(tried.stderr.strip().splitlines() or ['?'])[-1]}")
        require(
            False,
            f"no {version} with which uid {self.uid} can import edgeprof ({'; '.join(why)}; "
            f"PYTHONPATH={self.env['PYTHONPATH']})",
        )
        raise AssertionError("unreachable")
