"""Files a run leaves on a tmpfs (the kernel tier): the run group's ``shmem`` once its
processes are gone is memory no limit or swapless device drops, and stays after the run (a
user's 50 MiB left in /dev/shm had read "fits" with no word)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

import edgeprof
from edgeprof.model import Limits

WRITE = """\
import sys
with open(sys.argv[1], "wb") as f:
    f.write(b"\\1" * (int(sys.argv[2]) << 20))
if sys.argv[3] == "remove":
    import os
    os.unlink(sys.argv[1])
"""


@pytest.mark.parametrize(("ending", "said"), [("leave", True), ("remove", False)])
def test_a_file_left_in_dev_shm_is_said(ending: str, said: bool) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.fail("no /dev/shm on this host: the tier needs one")
    path = shm / f"edgeprof-test-{uuid.uuid4().hex}"
    try:
        r = edgeprof.profile(
            [sys.executable, "-c", WRITE, str(path), "8", ending], Limits(memory="256m")
        )
        assert r.succeeded, r.warnings
        found = [w for w in r.warnings if "on a tmpfs" in w]
        if said:
            assert path.exists()
            assert found and found[0].startswith("8.0MiB of files it wrote on a tmpfs"), found
        else:
            assert not path.exists() and found == [], found
    finally:
        path.unlink(missing_ok=True)
