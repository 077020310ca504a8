"""Fixtures of the slurm tier: one private single-node Slurm cluster per test session.

``slurm_cluster`` installs Slurm when it is missing, starts slurmctld and slurmd from a private
directory (see ``cluster.py``) and yields a :class:`SlurmCluster`; at the end of the session
both daemons are stopped by pid and every cgroup directory the cluster made is removed; a
leftover (process or directory) fails the session's teardown.

Every test that uses the fixture is also checked for leaks: no job of it may still be running
at its end (they are cancelled, and the test fails), and Slurm must have removed every job's
cgroup directories (``slurm_<node>/uid_*/job_*``), whatever ran inside the jobs.

If Slurm cannot be set up here (no root, no apt-get, no network for the first install, no
cgroup v1), the tests skip with the reason, or fail when ``CI=true``: no tier may skip in CI.
A cluster that is installed but does not come up is a failure everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.conftest import require
from tests.slurm.cluster import SlurmCluster, start_cluster
from tests.slurm.host import TIMINGS, SlurmUnavailable, cgroup_v1_here, ensure_slurm_installed


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A private single-node Slurm cluster, for the whole session."""
    require(os.geteuid() == 0, "the slurm tier starts its own slurmctld and slurmd: needs root")
    require(cgroup_v1_here(), "the slurm tier's cluster uses cgroup v1 (cpuset, freezer)")
    try:
        ensure_slurm_installed()
    except SlurmUnavailable as exc:
        require(False, f"cannot install Slurm: {exc}")
        raise
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(autouse=True)
def _slurm_leak_check(request: pytest.FixtureRequest) -> Iterator[None]:
    """For tests that use ``slurm_cluster``: no job left running, no job cgroup left."""
    if "slurm_cluster" not in request.fixturenames:
        yield
        return
    cluster: SlurmCluster = request.getfixturevalue("slurm_cluster")
    yield
    cancelled = cluster.cancel_all()
    cluster.wait_idle(timeout=60)
    left = cluster.wait_job_cgroups_gone(timeout=30)
    assert not cancelled, f"jobs still running at the end of the test (cancelled): {cancelled}"
    assert not left, f"Slurm left job cgroup directories: {[str(d) for d in left]}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how long the slurm tier's set-up steps took in this session."""
    if TIMINGS:
        steps = ", ".join(f"{k} {v:.2f} s" for k, v in TIMINGS.items())
        terminalreporter.write_line(f"slurm tier set-up: {steps}")
