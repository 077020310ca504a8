"""The cgroup v2 tier: the kernel tests of tests/host, run inside a cgroup v2 guest.

One guest boots for the whole suite (Python start-up under TCG is slow); pytest runs inside
it with EDGEPROF_EXPECT_MECHANISM=cgroup2, so every test also checks that the v2 backend is
the one measuring.  Tests marked ``not_in_vm`` (edgeprof's own orchestration: bad input,
sweeps, load, stdout volume; nothing cgroup-version specific) are left out: under emulation
they cost six minutes.  ``EDGEPROF_VM_TESTS`` narrows the guest's run to given test paths
while developing.  The guest's JUnit file comes back through the out share; its counts are
reported per tier by tests/run_tiers.py.
"""

from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import IN_CI, require

from .harness import GUEST_OUT_DIR, REPO_ROOT, VmUnavailable, project_python, run_in_guest

pytestmark = pytest.mark.vm


def test_kernel_tier_passes_on_cgroup_v2(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "the VM tier installs qemu and boots a guest: needs root")
    argv = [
        str(project_python()),
        "-m",
        "pytest",
        *os.environ.get("EDGEPROF_VM_TESTS", "tests/host").split(),
        "-m",
        "not not_in_vm",
        "-q",
        "-rfEs",
        "-p",
        "no:cacheprovider",
        f"--junitxml={GUEST_OUT_DIR}/junit.xml",
    ]
    env = {
        "EDGEPROF_EXPECT_MECHANISM": "cgroup2",
        "CI": os.environ.get("CI", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    try:
        result = run_in_guest(argv, cwd=REPO_ROOT, env=env, timeout=1200, out_dir=tmp_path / "out")
    except VmUnavailable as exc:
        require(False, f"cannot set up the cgroup v2 VM: {exc}")
        raise
    print(result.output[-6000:])
    junit = result.out_dir / "junit.xml"
    assert junit.exists(), f"pytest wrote no JUnit file in the guest:\n{result.output[-3000:]}"
    results_dir = os.environ.get("EDGEPROF_RESULTS_DIR")
    if results_dir:
        shutil.copy(junit, Path(results_dir) / "vm-guest.xml")
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else next(suite.iter("testsuite"))
    tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    print(
        f"cgroup v2 guest: {tests - failed - skipped} passed, {failed} failed, "
        f"{skipped} skipped (boot {result.boot_seconds}s, wall {result.wall_seconds:.1f}s)"
    )
    assert result.exit_code == 0, result.output[-3000:]
    assert tests >= 15 and failed == 0
    if IN_CI:
        assert skipped == 0, "no test may skip in CI"
