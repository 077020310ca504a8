"""Under sudo the workload runs as the invoking user (SUDO_UID/SUDO_GID) unless --as-root.

The suite's conftest removes SUDO_* from the environment; these tests set them for the
edgeprof they start.  65534 is ``nobody``/``nogroup`` on Debian.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import HANG_S

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("as_root", [False, True], ids=["dropped", "as-root"])
def test_sudo_user_runs_the_workload(mechanism: str, as_root: bool) -> None:
    # pytest's tmp_path is under a 0700 directory of root's: nobody could not write there.
    shared = Path(tempfile.mkdtemp(prefix="edgeprof-privilege-"))
    try:
        shared.chmod(0o777)
        _check(shared / "ids", as_root)
    finally:
        shutil.rmtree(shared)


def _check(ids: Path, as_root: bool) -> None:
    # The workload forks a child that spins, so the run is measured and killed as nobody too;
    # it ends once the spinner has 30 clock ticks (0.3 s) of CPU, whatever the machine's load.
    script = (
        f"id -u > {ids}; id -g >> {ids}; id -G >> {ids}; (while :; do :; done) & "
        "while [ $(awk '{print $14 + $15}' /proc/$!/stat) -lt 30 ]; do sleep 0.05; done"
    )
    p = subprocess.run(
        [PY, "-m", "edgeprof", "run", "--json", *(["--as-root"] if as_root else []),
         "--", "sh", "-c", script],
        env={**os.environ, "SUDO_UID": "65534", "SUDO_GID": "65534", "SUDO_USER": "nobody"},
        capture_output=True, text=True, cwd=REPO, timeout=HANG_S,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    uid, gid, groups = ids.read_text().splitlines()
    if as_root:
        assert (uid, gid) == ("0", "0")
    else:
        assert (uid, gid) == ("65534", "65534")
        assert "0" not in groups.split()  # root's supplementary groups are gone too
    r = json.loads(p.stdout)
    assert r["termination"] == "exited" and r["cpu"]["total_s"] > 0.2


def test_the_workload_enters_cwd_as_its_user(mechanism: str) -> None:
    """The backend had changed into --cwd as root, before dropping to the user: a file under
    a root-only (0700) directory was read by nobody.  Refused before anything runs now; a
    directory the user can enter works as before, and the workload starts in it."""
    top = Path(tempfile.mkdtemp(prefix="edgeprof-privilege-"))
    try:
        top.chmod(0o755)
        priv = top / "priv"
        (priv / "inner").mkdir(parents=True)
        priv.chmod(0o700)
        (priv / "inner" / "secret.txt").write_text("TOPSECRET\n")
        open_dir = top / "open"
        open_dir.mkdir()
        sudo = {**os.environ, "SUDO_UID": "65534", "SUDO_GID": "65534", "SUDO_USER": "nobody"}

        def run(cwd: Path) -> subprocess.CompletedProcess[str]:
            script = "pwd; cat secret.txt 2>/dev/null || true"
            argv = [PY, "-m", "edgeprof", "run", "--cwd", str(cwd), "--", "sh", "-c", script]
            return subprocess.run(
                argv, env=sudo, capture_output=True, text=True, cwd=REPO, timeout=HANG_S
            )

        p = run(priv / "inner")
        assert p.returncode == 2 and "TOPSECRET" not in p.stdout, p.stdout
        assert p.stderr == (
            f"edgeprof: error: --cwd {priv / 'inner'}: user 65534, whom the workload runs as, "
            f"cannot enter {priv}\n"
        )
        p = run(open_dir)
        assert p.returncode == 0, p.stderr
        assert p.stdout.splitlines()[0] == str(open_dir)
        # Behind the check, the child itself enters it as the user: the kernel refuses.
        from edgeprof.backends._process import Process
        from edgeprof.errors import LaunchError
        from edgeprof.model import UserIds

        nobody = UserIds(65534, 65534, (65534,))
        with pytest.raises(LaunchError, match="as user 65534"):
            Process(["true"], env={}, cwd=priv / "inner", stdout=None, stderr=None, run_as=nobody)
        done = Process(["true"], env={}, cwd=open_dir, stdout=None, stderr=None, run_as=nobody)
        assert done.wait(HANG_S) == 0
        done.close()
    finally:
        shutil.rmtree(top)
