"""The ray tier: one local multi-node Ray cluster per test session
(``ray.cluster_utils.Cluster``): a head that measures nothing (no CPUs, no slot) and two
measuring nodes, one ``edgeprof_slot`` each, all on this machine.  Each node is its own
raylet with its own workers, so a part runs in a process tree of its node, and removing a
node kills that tree, as losing a machine would.

Nothing global is set (no ``RAY_ADDRESS``): tests pass ``cluster.address``.  At the end the
cluster is shut down and every process it started must be gone; its temporary directory is
removed.  Without Ray or root the tier skips with the reason, and fails when ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import require

SLOT = "edgeprof_slot"
NODE: dict[str, Any] = {"num_cpus": 1, "resources": {SLOT: 1}}
"""A measuring node: one slot, and one logical CPU for the part's task (``--cpus 1``)."""


def add_measuring_node(cluster: Any) -> Any:
    """A measuring node whose processes' temporary directory is the cluster's own: a part's
    scratch directory on a node removed under it (its worker killed before its clean-up)
    goes with the cluster's directory, not into /tmp."""
    return cluster.add_node(**NODE, env_vars={"TMPDIR": cluster.edgeprof_tmp})


def node_pids(node: Any) -> set[int]:
    """The processes Ray started for ``node`` (raylet, stores, …), as Ray recorded them."""
    return {
        info.process.pid
        for infos in node.all_processes.values()
        for info in infos
        if info.process is not None
    }


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    require(os.geteuid() == 0, "the parts use the cgroup backend: root")
    try:
        from ray.cluster_utils import Cluster
    except ImportError as exc:
        require(False, f"Ray is missing ({exc}): pip install '.[ray]'")
        raise
    # A short private directory: Ray's Unix sockets live below it (108 bytes at most).
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    cluster: Any = None
    started: set[int] = set()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("RAY_USAGE_STATS_ENABLED", "0")  # no network here, and none asked
            # Ray writes the head's address to $RAY_TMPDIR/ray/ray_current_cluster (default
            # /tmp/ray/…) whatever temp_dir says, and creates no directory for it: on a
            # machine where Ray never ran, /tmp/ray is missing and the head does not start
            # (seen in a fresh-clone CI run).  Inside our own directory, removed with it.
            (Path(temp) / "ray").mkdir()
            mp.setenv("RAY_TMPDIR", temp)
            cluster = Cluster(
                initialize_head=True,
                head_node_args={
                    "num_cpus": 0,
                    "include_dashboard": False,
                    "temp_dir": temp,
                    # A lost node is noticed in ~1.5 s instead of Ray's default ~15 s.
                    "_system_config": {
                        "health_check_period_ms": 500,
                        "health_check_failure_threshold": 3,
                    },
                },
            )
            cluster.edgeprof_tmp = str(Path(temp) / "parts")
            Path(cluster.edgeprof_tmp).mkdir()
            for _ in range(2):
                add_measuring_node(cluster)
            cluster.wait_for_nodes()
        yield cluster
    finally:
        if cluster is not None:
            for node in cluster.list_all_nodes():
                started |= node_pids(node)
            cluster.shutdown()
        _, alive = psutil.wait_procs([p for p in map(_proc, started) if p is not None], timeout=30)
        shutil.rmtree(temp, ignore_errors=True)  # also when the cluster did not come up
        assert not alive, f"Ray processes outlived the session: {alive}"


def _proc(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None
