"""``edgeprof doctor`` on the real kernel (cgroup v1 hybrid here, pure cgroup v2 in the VM
tier's guests): the cgroup version the cgroup backend uses is ``ok``, and the other one is
information, never a ``MISS`` (a pure v2 host reported v1 as missing, and a hybrid host v2)."""

from __future__ import annotations

import subprocess
import sys

from edgeprof.backends import get_backend
from edgeprof.measure.doctor import Finding, diagnose
from tests.conftest import HANG_S


def test_the_version_in_use_is_ok_and_the_other_is_not_missing() -> None:
    mechanism = get_backend("auto").mechanism
    assert mechanism in ("cgroup1", "cgroup2")
    used, other = (
        ("cgroup v1", "cgroup v2") if mechanism == "cgroup1" else ("cgroup v2", "cgroup v1")
    )
    first: dict[str, Finding] = {}
    for f in diagnose():
        first.setdefault(f.topic, f)
    assert first[used].ok is True, first[used]
    assert first[other].ok is None, first[other]
    assert first["auto backend"].ok is True and first["auto backend"].detail.endswith(
        f"({mechanism})"
    )
    # The command prints them so.
    p = subprocess.run(
        [sys.executable, "-m", "edgeprof", "doctor"], capture_output=True, text=True, timeout=HANG_S
    )
    lines = p.stdout.splitlines()
    assert any(line.startswith(f"[ok  ] {used}: ") for line in lines), p.stdout
    assert not any(line.startswith(f"[MISS] {other}: ") for line in lines), p.stdout
