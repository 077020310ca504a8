"""``edgeprof run --executor ray=ADDRESS`` on a local two-node Ray cluster: the parts run on
both measuring nodes, one at a time per node, on cores no other part holds; the merged
sweep is the local sweep's; a workload's failure is a result; a node killed under a part
runs that part again on the other node, says so, and leaves nothing behind."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil

from edgeprof.cli import main
from tests.conftest import HANG_S
from tests.docker.daemon_host import cgroup_hierarchies, own_cgroup
from tests.ray_tier.conftest import add_measuring_node, node_pids

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
PLAN = ["--backend", "cgroup", "--cpus", "1", "--memory", "256m", "--repeat", "4"]


def _edgeprof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgeprof", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _intervals(runs: list[dict[str, Any]]) -> list[tuple[float, float]]:
    out = []
    for r in runs:
        start = datetime.fromisoformat(r["started_at"]).timestamp()
        out.append((start, start + r["wall_s"]))
    return out


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_a_sweep_on_two_nodes_equals_the_local_sweep(ray_cluster: Any, tmp_path: Path) -> None:
    workload = ["-m", "small,big", "--", sys.executable, str(WORKLOADS / "two_models.py")]
    local = tmp_path / "local"
    assert main(["run", *PLAN, "--out", str(local), *workload]) == 0
    out = tmp_path / "ray"
    done = _edgeprof("run", "--executor", f"ray={ray_cluster.address}", *PLAN,
                     "--max-peak-memory", "1g", "--out", str(out), *workload)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "4 parts on 2 measuring slots" in done.stderr
    assert "Budgets (command line): 2 of 2 checks passed" in done.stdout
    merged = json.loads((out / "sweep.json").read_text())
    whole = json.loads((local / "sweep.json").read_text())
    assert [(c["label"], c["limits"], c["runs"]) for c in merged["cells"]] == [
        (c["label"], c["limits"], c["runs"]) for c in whole["cells"]
    ]
    assert [r["name"] for r in merged["runs"]] == [r["name"] for r in whole["runs"]]
    placement = json.loads((out / "parts" / "placement.json").read_text())
    assert [p["part"] for p in placement] == [1, 2, 3, 4]
    assert {p["tries"] for p in placement} == {1}
    nodes = {p["node_id"] for p in placement}
    assert len(nodes) == 2  # both measuring nodes took parts; the head none
    # One part at a time per node (its one slot); parts on different nodes ran at once,
    # on different cores (each run leased its core).
    runs = {p["part"]: json.loads((out / "parts" / f"part-{p['part']}" / "sweep.json")
                                  .read_text())["runs"] for p in placement}  # fmt: skip
    node_of = {p["part"]: p["node_id"] for p in placement}
    concurrent = 0
    for a in runs:
        for b in runs:
            if a >= b:
                continue
            for ra, ia in zip(runs[a], _intervals(runs[a]), strict=True):
                for rb, ib in zip(runs[b], _intervals(runs[b]), strict=True):
                    if not _overlap(ia, ib):
                        continue
                    assert node_of[a] != node_of[b], f"parts {a} and {b} shared a slot"
                    assert ra["limits"]["cpuset"] != rb["limits"]["cpuset"]
                    concurrent += 1
    assert concurrent > 0  # the two nodes did measure at the same time


def test_a_failed_workload_is_a_result_not_a_lost_part(ray_cluster: Any, tmp_path: Path) -> None:
    out = tmp_path / "ray"
    failing = "import sys; sys.exit(5 if sys.argv[1] == 'bad' else 0)"
    done = _edgeprof("run", "--executor", f"ray={ray_cluster.address}", *PLAN[:-1], "2",
                     "--out", str(out), "-m", "good,bad", "--", sys.executable, "-c",
                     failing)  # fmt: skip
    assert done.returncode == 5, done.stderr  # the workload's own code, as a local run's
    assert "lost" not in done.stderr
    merged = json.loads((out / "sweep.json").read_text())
    assert [(r["name"], r["exit_code"]) for r in merged["runs"]] == [
        ("good", 0), ("bad", 5), ("good", 0), ("bad", 5),
    ]  # fmt: skip


def test_a_part_no_node_can_take_is_refused_not_queued(ray_cluster: Any, tmp_path: Path) -> None:
    out = tmp_path / "ray"
    # Each measuring node has one CPU: Ray had queued the parts and waited without a word.
    done = _edgeprof("run", "--executor", f"ray={ray_cluster.address}", "--cpus", "2",
                     "--repeat", "2", "--out", str(out), "--", sys.executable, "-c",
                     "pass")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "no measuring node can take a part: each asks for 2 CPU and a slot" in done.stderr
    assert not out.exists()


def _groups_of(pid: int) -> list[Path]:
    """Run groups of edgeprof process ``pid`` below our own group, in every hierarchy."""
    mem = own_cgroup("memory")
    found = []
    for h in cgroup_hierarchies():
        d = h.dir_of(mem)
        if d is not None and d.is_dir():
            found += [p for p in d.rglob(f"edgeprof-{pid}-*") if p.is_dir()]
    return found


def _running(p: psutil.Process) -> bool:
    """Not exited: a zombie has ended (this host's init reaps orphans late)."""
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_nodes_lost_under_their_parts_run_them_again_elsewhere(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """Last in the file: it replaces both measuring nodes while each holds a part.  With
    every node but the head lost, whatever the driver placed on a measuring node is lost
    too (its progress queue was, once, in a busy-machine CI run: a crash)."""
    markers, go = tmp_path / "started", tmp_path / "go"
    markers.mkdir()
    # Each run says it started, then holds until the test says go (the backstop at most).
    hold = (
        "import os, pathlib, sys, time; "
        f"pathlib.Path({str(markers)!r}, str(os.getpid())).touch(); "
        f"end = time.monotonic() + {HANG_S}\n"
        f"while not os.path.exists({str(go)!r}) and time.monotonic() < end: time.sleep(0.02)"
    )
    out = tmp_path / "ray"
    driver = subprocess.Popen(
        [sys.executable, "-m", "edgeprof", "run", "--executor", f"ray={ray_cluster.address}",
         *PLAN[:-1], "2", "--out", str(out), "--", sys.executable, "-c", hold],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    old = list(ray_cluster.worker_nodes)  # the head measures nothing
    try:
        deadline = time.monotonic() + HANG_S
        while len(list(markers.iterdir())) < 2:  # both parts' first runs hold, one per node
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < deadline, "the parts' runs never started"
            time.sleep(0.05)
        victims = [psutil.Process(int(m.name)) for m in markers.iterdir()]
        chains = [{p.pid for p in v.parents()} for v in victims]
        assert sorted(sum(bool(node_pids(n) & c) for c in chains) for n in old) == [1, 1]
        part_edgeprofs = [
            next(p for p in v.parents() if "edgeprof" in " ".join(p.cmdline())) for v in victims
        ]
        # Their scratch directories are the nodes' temporary ones (the cluster's): a lost
        # node's worker dies before its clean-up, and /tmp kept one per lost part.
        outs = [Path(p.cmdline()[p.cmdline().index("--out") + 1]) for p in part_edgeprofs]
        assert all(o.is_relative_to(ray_cluster.edgeprof_tmp) for o in outs), outs
        for _ in old:  # the parts' second tries need somewhere to run
            add_measuring_node(ray_cluster)
        ray_cluster.wait_for_nodes()
        for node in old:
            ray_cluster.remove_node(node, allow_graceful=False)
        # Each part's edgeprof got SIGTERM when its raylet died: it ends its run and groups.
        watched = victims + part_edgeprofs
        end = time.monotonic() + HANG_S
        while any(map(_running, watched)) and time.monotonic() < end:
            time.sleep(0.05)  # a zombie never "exits" for psutil.wait_procs: poll the state
        alive = [p for p in watched if _running(p)]
        assert not alive, f"left running after its node died: {alive}"
        go.touch()
        stdout, stderr = driver.communicate(timeout=HANG_S)
    finally:
        go.touch()
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
        for _ in range(len(old) - len(ray_cluster.worker_nodes)):
            add_measuring_node(ray_cluster)  # a later test's cluster has two measuring nodes
    assert driver.returncode == 0, stderr
    assert stderr.count("was lost with its node") == 2, stderr
    assert stderr.count("running it again (try 2 of 3)") == 2, stderr
    assert "progress lines are lost" not in stderr  # the queue is on the driver's node
    placement = json.loads((out / "parts" / "placement.json").read_text())
    assert [p["tries"] for p in placement] == [2, 2]
    gone = {n.node_id for n in old}
    assert not gone & {p["node_id"] for p in placement}
    merged = json.loads((out / "sweep.json").read_text())
    assert len(merged["runs"]) == 2 and {r["exit_code"] for r in merged["runs"]} == {0}
    assert [g for p in part_edgeprofs for g in _groups_of(p.pid)] == []
    assert "merged 2 shards" in stderr and "merged 2 shards" not in stdout
