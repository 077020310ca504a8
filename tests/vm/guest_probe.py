"""A pytest plugin for suites run in a guest: record what the guest really is.

Loaded with ``-p tests.vm.guest_probe``, it writes ``guest.json`` into the out share
(``$EDGEPROF_VM_OUT``) when pytest starts: the kernel release, the CPUs Python sees and the
edgeprof package imported.  The host then asserts the guest booted the kernel and vCPU count
it asked for and tested this checkout's code, so a wrong boot cannot pass silently.  It
costs no extra Python start-up (seconds under TCG).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

import pytest


def probe() -> dict[str, object]:
    """Return what this process sees of the machine and the code it tests."""
    import edgeprof

    return {
        "release": platform.release(),
        "cpu_count": os.cpu_count(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "edgeprof": str(Path(edgeprof.__file__).resolve()),
        "python": sys.executable,
    }


def pytest_configure(config: pytest.Config) -> None:
    """Write ``guest.json`` to the out share (nothing outside a guest)."""
    out = os.environ.get("EDGEPROF_VM_OUT")
    if out and os.path.isdir(out):
        Path(out, "guest.json").write_text(json.dumps(probe(), indent=1) + "\n")
