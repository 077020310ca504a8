"""The cgroup v2 tier: the kernel tests of tests/host, run inside cgroup v2 guests.

Guests for each kernel whose features edgeprof tells apart, and one whose PID 1 is
systemd, run side by side (the :func:`booked` fixture):

* Linux 6.12 (what most current hosts run; ``memory.peak`` resets per file descriptor, so
  phase peaks are the kernel's) with :func:`~tests.vm.guest.default_cpus` vCPUs (8): the
  whole kernel tier, on a machine larger than the 2-core ones the tests were written on,
  and :data:`GUEST_ONLY_TESTS` (edgeprof as an ordinary user in a delegated subtree), split
  between two guests (:data:`FIRST_PART` and the rest);
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
guest really ran, and this test asserts them.  ``EDGEPROF_VM_TESTS`` narrows every guest's
runs to given test paths while developing (``-k part-1`` / ``-k 6.1-`` picks one guest).
Each guest's JUnit file comes back through the out share as ``vm-guest-<label>.xml`` in
``$EDGEPROF_RESULTS_DIR``; tests/run_tiers.py reports each on its own row.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import IN_CI, require
from tests.host.memory_workload import DATA_ENV, data_size, write_data_file
from tests.run_tiers import compile_checkout

from .guest import default_cpus
from .harness import (
    GUEST_OUT_DIR,
    REPO_ROOT,
    GuestResult,
    VmUnavailable,
    ensure_assets,
    project_python,
    run_in_guest,
)
from .launch import host_cores

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

#: Time budget per collected test.  Measured on a quiet host, one guest at a time: 6.12 × 8
#: vCPUs ran the kernel tier's 62 tests in 987 s (15.9 s each; the four files of
#: :data:`FIRST_PART` 16.6 s each), 6.1 × 2 its 27 in 362 s (13.4 s each); the slowest
#: single test took 62 s.  About 2.5× the heaviest mean leaves room for a guest beside it
#: and a host shared with other jobs.
PER_TEST_BUDGET_S = 40.0


@dataclasses.dataclass(frozen=True)
class Guest:
    """One guest of the tier: its kernel series, vCPUs and the tests it runs."""

    kernel: str
    cpus: int
    tests: tuple[str, ...]
    init: str = "busybox"
    extra_start_s: float = 0.0
    """Start-up beyond :data:`START_BUDGET_S` (systemd's boot, a user manager)."""
    part: str = ""
    """Which share of a guest's tests, where they are split between guests (``part-1``)."""
    ignore: tuple[str, ...] = ()
    """Paths below :attr:`tests` left to another part (pytest's ``--ignore``)."""

    @property
    def id(self) -> str:
        return "-".join(filter(None, (self.kernel, f"{self.cpus}cpu", self.part, self.init_tag)))

    @property
    def label(self) -> str:
        """How its JUnit file and tests/run_tiers.py's row name it."""
        return "-".join(filter(None, (self.kernel, self.init_tag, self.part)))

    @property
    def init_tag(self) -> str:
        return "" if self.init == "busybox" else self.init

    @property
    def selection(self) -> tuple[str, ...]:
        """pytest's arguments that select this guest's tests."""
        return (*self.tests, *(f"--ignore={path}" for path in self.ignore), *PYTEST_SELECTION)


#: Tests only a cgroup v2 guest can run, named here (their module names keep the host's
#: pytest from collecting them): an ordinary user in a delegated subtree; the Kubernetes
#: recipe's part in a privileged pod's cgroup namespace.
GUEST_ONLY_TESTS = ("tests/vm/guest_rootless.py", "tests/vm/guest_pod.py")

#: Tests for a host systemd manages (systemd is PID 1): root's runs in a scope it delegates,
#: a user's in `systemd-run --user --scope`, Docker with the systemd cgroup driver.
SYSTEMD_TESTS = ("tests/vm/guest_systemd.py",)

#: The 6.12 × 8 guest's first part; the second runs the rest of tests/host (a new file lands
#: there) and :data:`GUEST_ONLY_TESTS`.  A guest is one host thread (single-threaded TCG):
#: the whole kernel tier in one guest took 987 s of a 1648 s tier on one of our 2 cores
#: while the other idled.  These four files took 399 s of those 987 (the guest's JUnit
#: times), the rest 555 s; side by side with the 6.1 and systemd guests the tier took
#: 562-643 s (three runs).
FIRST_PART = (
    "tests/host/test_faults.py",
    "tests/host/test_core_leases.py",
    "tests/host/test_privilege.py",
    "tests/host/test_gpu_run.py",
)


def guests(narrowed: tuple[str, ...] | None = None) -> tuple[Guest, ...]:
    """The tier's guests; ``narrowed`` (default: ``EDGEPROF_VM_TESTS``'s paths) gives every
    guest those tests instead, and the 6.12 × 8 guest its tests in one part."""
    if narrowed is None:
        narrowed = tuple(os.environ.get("EDGEPROF_VM_TESTS", "").split())
    cpus = default_cpus()
    kernel_tier: tuple[Guest, ...]
    if narrowed:
        kernel_tier = (Guest("6.12", cpus, narrowed),)
    else:
        kernel_tier = (
            Guest("6.12", cpus, FIRST_PART, part="part-1"),
            Guest("6.12", cpus, ("tests/host", *GUEST_ONLY_TESTS), part="part-2",
                  ignore=FIRST_PART),
        )  # fmt: skip
    return (
        *kernel_tier,
        Guest("6.1", 2, narrowed or KERNEL_FEATURE_TESTS),
        # systemd reached the command at 11-21 s of uptime; the four tests took 98-132 s in
        # the guest (a user manager starts in 5 s, dockerd in 1 s), 119-167 s of qemu's wall
        # time with another guest or a CI run beside it, measured.
        Guest("6.12", 2, narrowed or SYSTEMD_TESTS, init="systemd", extra_start_s=180.0),
    )


PYTEST_SELECTION = ("-m", "not not_in_vm")
GUESTS = guests()


def node_ids(selection: tuple[str, ...]) -> list[str]:
    """The tests pytest collects with ``selection`` here (≈ 0.3 s on the host)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *selection],
        cwd=REPO_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return [line for line in proc.stdout.splitlines() if "::" in line]


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


@dataclasses.dataclass(frozen=True)
class Booked:
    """A guest's run, prepared on the test's thread and started on a worker's."""

    n_tests: int
    run: Future[GuestResult]


def _argv(guest: Guest) -> list[str]:
    return [
        str(project_python()), "-m", "pytest", *guest.selection, "-q", "-rfEs",
        "-p", "no:cacheprovider", "-p", "tests.vm.guest_probe",
        f"--junitxml={GUEST_OUT_DIR}/junit.xml",
    ]  # fmt: skip


def _budget(guest: Guest, n_tests: int) -> float:
    """The guest's time-out: start-up, systemd's boot, and so much per test."""
    return START_BUDGET_S + guest.extra_start_s + PER_TEST_BUDGET_S * n_tests


def _book(
    guest: Guest,
    n_tests: int,
    data: Path,
    out_dir: Path,
    pool: ThreadPoolExecutor,
    cancel: threading.Event,
    cores: queue.SimpleQueue[int],
) -> Booked:
    """Prepare ``guest`` here (its assets, Docker for systemd: apt and the cache locks are
    not for threads racing) and start it on ``pool``."""
    timeout = _budget(guest, n_tests)
    env = {
        DATA_ENV: str(data),
        "EDGEPROF_EXPECT_MECHANISM": "cgroup2",
        "CI": os.environ.get("CI", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
        # Every interpreter in the guest (tests start edgeprof as `python -m edgeprof`)
        # imports this checkout's package, not the one the venv was installed from.
        "PYTHONPATH": str(REPO_ROOT),
    }
    run: Future[GuestResult] = Future()
    try:
        if n_tests < 1:
            raise AssertionError(f"nothing collected from {guest.selection}")
        if guest.init == "systemd":
            _prepare_docker_for_the_guest()
        assets = ensure_assets(kernel=guest.kernel)
    except (Exception, pytest.skip.Exception, pytest.fail.Exception) as exc:
        run.set_exception(exc)  # the guest's own test raises it (a skip or fail as it is)
    else:

        def on_a_core() -> GuestResult:
            core = cores.get()
            try:
                return run_in_guest(
                    _argv(guest), cwd=REPO_ROOT, env=env, timeout=timeout, cpus=guest.cpus,
                    kernel=guest.kernel, out_dir=out_dir, init=guest.init, assets=assets,
                    cancel=cancel, host_cpu=core,
                )  # fmt: skip
            finally:
                cores.put(core)

        run = pool.submit(on_a_core)
    return Booked(n_tests, run)


@pytest.fixture(scope="module")
def booked(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Booked]]:
    """The selected guests, run side by side, as many at once as this host has cores and
    CPU time for (:func:`~tests.vm.launch.host_cores`), each pinned to a core of its own
    while it runs: a guest is one host thread (single-threaded
    TCG), and one at a time left our second core idle for the tier's 1648 s.  Unpinned,
    two guests' qemus took turns on each other's core, and two tests of a quota's CPU share
    failed in one of them (36.8 % of a core at a half-core quota, where the floor was 38 %).
    The longest budget starts first."""
    require(os.geteuid() == 0, "the VM tier installs qemu and boots a guest: needs root")
    # Every interpreter a guest starts reads the checkout's bytecode through 9p, or compiles
    # what it imports from source under TCG (the guests cannot write it back): compiled here
    # too, for a run of this tier on its own.
    assert compile_checkout(REPO_ROOT), "the checkout does not compile"
    chosen = [
        guest
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.originalname == test_kernel_tier_passes_on_cgroup_v2.__name__
        and isinstance(guest := item.callspec.params["guest"], Guest)
    ]
    # The memory tests need a file whose reading fills the guest's page cache: the guest's
    # own /tmp is tmpfs-backed, the host root it reads through 9p (cache=loose) is not.
    # Each guest reads it through its own page cache; one file serves them all.
    shared = tmp_path_factory.mktemp("vm-data")
    data = write_data_file(shared, data_size(shared))
    cancel = threading.Event()
    at_once = host_cores(len(chosen))
    cores: queue.SimpleQueue[int] = queue.SimpleQueue()
    for core in at_once:
        cores.put(core)
    with ThreadPoolExecutor(len(at_once), thread_name_prefix="vm-guest") as pool:
        try:
            n_tests = {g.id: len(node_ids(g.selection)) for g in chosen}
            runs = {}
            for g in sorted(chosen, key=lambda g: _budget(g, n_tests[g.id]), reverse=True):
                out = tmp_path_factory.mktemp(g.id) / "out"
                runs[g.id] = _book(g, n_tests[g.id], data, out, pool, cancel, cores)
            yield runs
        finally:
            # Guests still queued or running (an interrupt, a failed preparation): none
            # starts, and qemu is killed within a second.
            cancel.set()
            pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize("guest", GUESTS, ids=lambda g: g.id)
def test_kernel_tier_passes_on_cgroup_v2(guest: Guest, booked: dict[str, Booked]) -> None:
    run = booked[guest.id]
    try:
        result = run.run.result()
    except VmUnavailable as exc:
        require(False, f"cannot set up the cgroup v2 VM: {exc}")
        raise
    timeout = _budget(guest, run.n_tests)
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
        Path(results_dir).mkdir(parents=True, exist_ok=True)
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
    assert tests == run.n_tests and failed == 0
    if IN_CI:
        assert skipped == 0, "no test may skip in CI"
