"""The cgroup v2 tier: the kernel tests of tests/host, run inside cgroup v2 guests.

Three guests: one per kernel whose features edgeprof tells apart, and one whose PID 1 is
systemd:

* Linux 6.12 (what most current hosts run; ``memory.peak`` resets per file descriptor, so
  phase peaks are the kernel's) with :func:`~tests.vm.guest.default_cpus` vCPUs (8): the
  whole kernel tier, on a machine larger than the 2-core ones the tests were written on,
  and :data:`GUEST_ONLY_TESTS` (edgeprof as an ordinary user in a delegated subtree);
* Linux 6.1 (``memory.peak`` read-only: phase peaks fall back to sampling) with 2 vCPUs:
  the tests whose expectations depend on the kernel (:data:`KERNEL_FEATURE_TESTS`);
* Linux 6.12 with 2 vCPUs booting the image's systemd as PID 1 (:data:`SYSTEMD_TESTS`):
  edgeprof as root in a scope systemd delegates, as a user under
  ``systemd-run --user --scope``, and a Docker daemon with the systemd cgroup driver.

Each guest boots once (Python start-up under TCG is slow) and runs pytest with
EDGEPROF_EXPECT_MECHANISM=cgroup2, so every test also checks that the v2 backend is the one
measuring.  Tests marked ``not_in_vm`` (edgeprof's own orchestration: bad input, sweeps,
load, stdout volume; nothing cgroup-version specific) are left out: under emulation they
cost minutes.  :mod:`tests.vm.guest_probe` records the kernel, CPU count and edgeprof the
guest really ran, and this test asserts them.  ``EDGEPROF_VM_TESTS`` narrows both guests'
runs to given test paths while developing (``-k 6.12`` / ``-k 6.1-`` picks one guest).
Each guest's JUnit file comes back through the out share as ``vm-guest-<kernel>.xml`` in
``$EDGEPROF_RESULTS_DIR``; tests/run_tiers.py reports each on its own row.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import IN_CI, require
from tests.host.memory_workload import DATA_ENV, data_size, write_data_file

from .guest import default_cpus
from .harness import GUEST_OUT_DIR, REPO_ROOT, VmUnavailable, project_python, run_in_guest

pytestmark = pytest.mark.vm

#: The tests whose outcome depends on the kernel version: phase peaks are the kernel's on
#: 6.12 and sampled on 6.1 (test_phases_kernel.py branches on the release), and the backend's
#: kernel features (memory.peak, cgroup.kill, the limits) are probed in test_cgroup_kernel.py;
#: an OOM or a timeout inside a phase stops a per-descriptor window on 6.12 and a sampled
#: phase on 6.1 (test_phase_termination_kernel.py); ``memory.stat``'s keys differ between
#: kernels (test_memory_fit_kernel.py).
KERNEL_FEATURE_TESTS = (
    "tests/host/test_phases_kernel.py",
    "tests/host/test_cgroup_kernel.py",
    "tests/host/test_phase_termination_kernel.py",
    "tests/host/test_memory_fit_kernel.py",
)

#: Time budget of a guest run up to its first test: the boot (guest uptime 1.8-4.6 s when
#: the command starts) and importing pytest and edgeprof under TCG (2.7-4.9 s measured),
#: with room for a loaded, shared host.
START_BUDGET_S = 120.0

#: Time budget per collected test.  Measured: 6.12 × 8 vCPUs ran the kernel tier's 29
#: tests in 124.7 s (4.3 s each), 6.1 × 2 its 19 in 51.7 s (2.7 s each); the slowest single
#: test took 37 s.  About 5× the mean leaves room for a host shared with other jobs.
PER_TEST_BUDGET_S = 20.0


@dataclasses.dataclass(frozen=True)
class Guest:
    """One guest of the tier: its kernel series, vCPUs and the tests it runs."""

    kernel: str
    cpus: int
    tests: tuple[str, ...]
    init: str = "busybox"
    extra_start_s: float = 0.0
    """Start-up beyond :data:`START_BUDGET_S` (systemd's boot, a user manager)."""

    @property
    def id(self) -> str:
        return f"{self.kernel}-{self.cpus}cpu" + ("" if self.init == "busybox" else f"-{self.init}")

    @property
    def label(self) -> str:
        """How its JUnit file and tests/run_tiers.py's row name it."""
        return self.kernel + ("" if self.init == "busybox" else f"-{self.init}")


def _tests(default: tuple[str, ...]) -> tuple[str, ...]:
    narrowed = os.environ.get("EDGEPROF_VM_TESTS", "").split()
    return tuple(narrowed) or default


#: Tests only a cgroup v2 guest can run, named here (their module names keep the host's
#: pytest from collecting them): an ordinary user in a delegated subtree; the Kubernetes
#: recipe's part in a privileged pod's cgroup namespace.
GUEST_ONLY_TESTS = ("tests/vm/guest_rootless.py", "tests/vm/guest_pod.py")

#: Tests for a host systemd manages (systemd is PID 1): root's runs in a scope it delegates,
#: a user's in `systemd-run --user --scope`, Docker with the systemd cgroup driver.
SYSTEMD_TESTS = ("tests/vm/guest_systemd.py",)

GUESTS = (
    Guest("6.12", default_cpus(), _tests(("tests/host", *GUEST_ONLY_TESTS))),
    Guest("6.1", 2, _tests(KERNEL_FEATURE_TESTS)),
    # systemd reached the command at 11-21 s of uptime; the four tests took 98-132 s in the
    # guest (a user manager starts in 5 s, dockerd in 1 s), 119-167 s of qemu's wall time
    # with another guest or a CI run beside it, measured.
    Guest("6.12", 2, _tests(SYSTEMD_TESTS), init="systemd", extra_start_s=180.0),
)

PYTEST_SELECTION = ("-m", "not not_in_vm")


def collected(tests: tuple[str, ...]) -> int:
    """Return how many tests pytest collects from ``tests`` here (≈ 0.3 s on the host)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *PYTEST_SELECTION, *tests],
        cwd=REPO_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return sum(1 for line in proc.stdout.splitlines() if "::" in line)


def _prepare_docker_for_the_guest() -> None:
    """The guest has no network: Docker's binaries and the busybox image's tarball come
    from the host, which installs and builds them here (cached; a no-op once done)."""
    from tests.docker.daemon_common import DockerUnavailable, default_cache_dir
    from tests.docker.daemon_images import build_busybox_tarball
    from tests.docker.daemon_install import ensure_docker_installed

    try:
        ensure_docker_installed()
        cache = default_cache_dir()
        cache.mkdir(parents=True, exist_ok=True)
        build_busybox_tarball(cache)
    except DockerUnavailable as exc:
        require(False, f"cannot prepare Docker for the systemd guest: {exc}")


@pytest.mark.parametrize("guest", GUESTS, ids=lambda g: g.id)
def test_kernel_tier_passes_on_cgroup_v2(guest: Guest, tmp_path: Path) -> None:
    require(os.geteuid() == 0, "the VM tier installs qemu and boots a guest: needs root")
    n_tests = collected(guest.tests)
    assert n_tests >= 1, f"nothing collected from {guest.tests}"
    timeout = START_BUDGET_S + guest.extra_start_s + PER_TEST_BUDGET_S * n_tests
    argv = [
        str(project_python()),
        "-m",
        "pytest",
        *guest.tests,
        *PYTEST_SELECTION,
        "-q",
        "-rfEs",
        "-p",
        "no:cacheprovider",
        "-p",
        "tests.vm.guest_probe",
        f"--junitxml={GUEST_OUT_DIR}/junit.xml",
    ]
    # The memory tests need a file whose reading fills the guest's page cache: the guest's
    # own /tmp is tmpfs-backed, the host root it reads through 9p (cache=loose) is not.
    data = write_data_file(tmp_path, data_size(tmp_path))
    if guest.init == "systemd":
        _prepare_docker_for_the_guest()
    env = {
        DATA_ENV: str(data),
        "EDGEPROF_EXPECT_MECHANISM": "cgroup2",
        "CI": os.environ.get("CI", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
        # Every interpreter in the guest (tests start edgeprof as `python -m edgeprof`)
        # imports this checkout's package, not the one the venv was installed from.
        "PYTHONPATH": str(REPO_ROOT),
    }
    try:
        result = run_in_guest(
            argv,
            cwd=REPO_ROOT,
            env=env,
            timeout=timeout,
            cpus=guest.cpus,
            kernel=guest.kernel,
            out_dir=tmp_path / "out",
            init=guest.init,
        )
    except VmUnavailable as exc:
        require(False, f"cannot set up the cgroup v2 VM: {exc}")
        raise
    print(result.output[-6000:])

    probe_file = result.out_dir / "guest.json"
    assert probe_file.exists(), f"pytest did not start in the guest:\n{result.output[-3000:]}"
    seen = json.loads(probe_file.read_text())
    assert str(seen["release"]).startswith(f"{guest.kernel}."), seen
    assert seen["cpu_count"] == guest.cpus, seen
    assert seen["edgeprof"] == str(REPO_ROOT / "edgeprof" / "__init__.py"), seen

    junit = result.out_dir / "junit.xml"
    assert junit.exists(), f"pytest wrote no JUnit file in the guest:\n{result.output[-3000:]}"
    results_dir = os.environ.get("EDGEPROF_RESULTS_DIR")
    if results_dir:
        shutil.copy(junit, Path(results_dir) / f"vm-guest-{guest.label}.xml")
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else next(suite.iter("testsuite"))
    tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    print(
        f"cgroup v2 guest {seen['release']} × {seen['cpu_count']} CPUs ({guest.init}): "
        f"{tests - failed - skipped} passed, {failed} failed, {skipped} skipped "
        f"(boot {result.boot_seconds}s, wall {result.wall_seconds:.1f}s of {timeout:.0f}s)"
    )
    assert result.exit_code == 0, result.output[-3000:]
    assert tests == n_tests and failed == 0
    if IN_CI:
        assert skipped == 0, "no test may skip in CI"
