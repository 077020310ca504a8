"""The VM tier's launcher leaves no guest behind a harness that was killed.

qemu runs in a session of its own, so a tier stopped by SIGTERM or SIGKILL (a CI job's
timeout, ``kill`` of ``make test``) had left its guests running under init.  A stand-in for
qemu here: any program the launcher starts is treated alike."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import HANG_S

REPO = Path(__file__).resolve().parents[2]

HARNESS = """
import sys, threading
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.vm.launch import _launch
ready, work = sys.argv[2], Path(sys.argv[3])
guest = [sys.executable, "-c",
         f"import os, time; open({ready!r}, 'w').write(str(os.getpid())); time.sleep(600)"]
thread = threading.Thread(target=_launch, args=(guest, work / "console", work, 600.0))
thread.start()
thread.join()
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def test_a_killed_harness_takes_its_guest_with_it(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    argv = [sys.executable, "-c", HARNESS, str(REPO), str(ready), str(tmp_path)]
    harness = subprocess.Popen(argv)
    try:
        deadline = time.monotonic() + HANG_S
        while not (ready.exists() and ready.read_text()):
            assert harness.poll() is None, "the harness ended before its guest started"
            assert time.monotonic() < deadline, "the guest never started"
            time.sleep(0.01)
        guest = int(ready.read_text())
        assert not _gone(guest)
        harness.send_signal(signal.SIGKILL)
        harness.wait()
        while not _gone(guest):
            assert time.monotonic() < deadline, f"the guest {guest} outlived its harness"
            time.sleep(0.01)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        if ready.exists() and ready.read_text() and not _gone(int(ready.read_text())):
            os.kill(int(ready.read_text()), signal.SIGKILL)
