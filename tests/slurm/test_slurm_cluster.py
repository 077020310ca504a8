"""The slurm tier's harness: a private cluster runs array tasks concurrently, one core each,
reports failures with their exit code, and cleans up after edgeprof's run groups below its own
task groups."""

from __future__ import annotations

import os
from pathlib import Path

from tests.slurm.cluster import SlurmCluster
from tests.slurm.host import CGROUP_ROOT, cgroup_mountpoints

#: Each task writes its allowed CPUs, says it started, and waits (bounded) until every task of
#: the array has started: it exits 0 only if all N ran at the same time.
CONCURRENT = r"""#!/bin/bash
set -eu
dir=$1 n=$2 t=$SLURM_ARRAY_TASK_ID
cpus=$(awk '/^Cpus_allowed_list:/ {print $2}' /proc/self/status)
echo "$t $cpus" > "$dir/cpus-$t"
touch "$dir/started-$t"
for _ in $(seq 1200); do  # at most 120 s
    started=$(find "$dir" -maxdepth 1 -name 'started-*' | wc -l)
    if [ "$started" -ge "$n" ]; then
        echo "task $t saw all $n tasks running"
        exit 0
    fi
    sleep 0.1
done
echo "task $t: only $started of $n tasks started within 120 s" >&2
exit 1
"""

FAILING = r"""#!/bin/bash
echo "task $SLURM_ARRAY_TASK_ID"
if [ "$SLURM_ARRAY_TASK_ID" = 2 ]; then exit 3; fi
exit 0
"""

#: edgeprof inside a task: its run groups go below the task's own (cpuset, freezer); the
#: workload prints its /proc/self/cgroup so the test sees where it ran.
EDGEPROF = r"""#!/bin/bash
set -u
out=$1 t=$SLURM_ARRAY_TASK_ID
cat /proc/self/cgroup > "$out/task-cgroup-$t"
edgeprof run --cpus 1 --memory 256m --out "$out/run-$t" -- \
    python3 -c 'print(1); print(open("/proc/self/cgroup").read())' > "$out/edgeprof-$t.log" 2>&1
rc=$?
echo "edgeprof exit $rc" >> "$out/edgeprof-$t.log"
exit $rc
"""


def _script(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    p.chmod(0o755)
    return p


def _cpu_list(text: str) -> set[int]:
    """``0-2,5`` → {0, 1, 2, 5}."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def _groups(text: str) -> dict[str, str]:
    """``/proc/<pid>/cgroup`` → {controller list: path}."""
    out = {}
    for line in text.splitlines():
        _, ctrls, path = line.split(":", 2)
        out[ctrls] = path
    return out


def test_array_tasks_run_concurrently_on_a_core_each(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """As many tasks as the node has cores, one CPU asked each: all run at once (each saw
    every other's start), each on exactly one core (CR_Core, ConstrainCores), all distinct."""
    n = slurm_cluster.cores
    assert n >= 1 and slurm_cluster.cpus == n * slurm_cluster.threads_per_core
    marks = tmp_path / "marks"
    marks.mkdir()
    script = _script(tmp_path, "concurrent.sh", CONCURRENT)
    job = slurm_cluster.sbatch(
        script,
        f"--array=1-{n}",
        "--cpus-per-task=1",
        "--output=task-%a.out",
        cwd=tmp_path,
        script_args=[str(marks), str(n)],
    )
    results = slurm_cluster.wait(job, timeout=180)
    logs = {t: (tmp_path / f"task-{t}.out").read_text(errors="replace") for t in range(1, n + 1)}
    assert sorted(results, key=str) == list(range(1, n + 1)), results
    assert {t: r.state for t, r in results.items()} == dict.fromkeys(
        range(1, n + 1), "COMPLETED"
    ), logs
    assert all(r.exit_code == 0 and r.signal == 0 for r in results.values()), results
    assert all(f"saw all {n} tasks running" in log for log in logs.values()), logs
    cpus = {}
    for t in range(1, n + 1):
        task, listed = (marks / f"cpus-{t}").read_text().split()
        assert int(task) == t
        cpus[t] = _cpu_list(listed)
    # One core each: threads_per_core CPUs (1 here), and no CPU shared between tasks.
    assert all(len(c) == slurm_cluster.threads_per_core for c in cpus.values()), cpus
    union = set().union(*cpus.values())
    assert len(union) == n * slurm_cluster.threads_per_core, cpus
    assert union <= os.sched_getaffinity(0), cpus  # the node's cores are this host's


def test_a_failing_task_is_failed_with_its_exit_code(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    """Task 2 exits 3: FAILED with exit code 3; its sibling COMPLETED with 0."""
    script = _script(tmp_path, "failing.sh", FAILING)
    job = slurm_cluster.sbatch(
        script, "--array=1-2", "--cpus-per-task=1", "--output=task-%a.out", cwd=tmp_path
    )
    results = slurm_cluster.wait(job, timeout=120)
    assert set(results) == {1, 2}, results
    assert (results[1].state, results[1].exit_code) == ("COMPLETED", 0), results
    assert (results[2].state, results[2].exit_code, results[2].signal) == ("FAILED", 3, 0), results
    assert results[2].reason == "NonZeroExitCode", results


def test_edgeprof_run_inside_array_tasks(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """``edgeprof run`` in each task: its run groups are made below Slurm's task groups and
    removed by edgeprof at its end; Slurm then removes the job's groups as usual (the leak
    check after the test), the tasks are COMPLETED, and nothing of edgeprof is left in any
    hierarchy.  slurmd logs no error while the jobs run and end."""
    n = slurm_cluster.cores
    out = tmp_path / "out"
    out.mkdir()
    log_start = slurm_cluster.slurmd_log.stat().st_size
    script = _script(tmp_path, "edgeprof.sh", EDGEPROF)
    job = slurm_cluster.sbatch(
        script,
        f"--array=1-{n}",
        "--cpus-per-task=1",
        "--output=task-%a.out",
        cwd=tmp_path,
        script_args=[str(out)],
    )
    results = slurm_cluster.wait(job, timeout=180)
    logs = {
        t: (out / f"edgeprof-{t}.log").read_text(errors="replace")
        for t in results
        if t is not None and (out / f"edgeprof-{t}.log").exists()
    }
    assert {t: r.state for t, r in results.items()} == dict.fromkeys(
        range(1, n + 1), "COMPLETED"
    ), logs
    run_groups = []
    for t, r in results.items():
        assert t is not None
        assert (out / f"run-{t}" / "result.json").is_file(), logs[t]
        task_groups = _groups((out / f"task-cgroup-{t}").read_text())
        # The workload's own cgroup lines, printed by python3 under edgeprof.
        lines = [ln for ln in logs[t].splitlines() if ln[:1].isdigit() and ln.count(":") >= 2]
        workload = _groups("\n".join(lines))
        task_cpuset = task_groups["cpuset"]
        assert task_cpuset.startswith(f"/slurm_{slurm_cluster.node}/uid_0/job_{r.job_id}/"), (
            task_groups
        )
        parent, _, name = workload["cpuset"].rpartition("/")
        assert parent == task_cpuset and name.startswith("edgeprof-"), (task_groups, workload)
        run_groups.append(name)
    # edgeprof removed its groups (in every hierarchy, not only Slurm's).
    left = [
        str(Path(top) / d)
        for mp in cgroup_mountpoints()
        for top, dirs, _ in os.walk(mp)
        for d in dirs
        if d in run_groups
    ]
    assert not left, left
    assert CGROUP_ROOT.is_dir()
    new_log = slurm_cluster.slurmd_log.read_bytes()[log_start:].decode(errors="replace")
    errors = [ln for ln in new_log.splitlines() if "error" in ln.lower()]
    assert not errors, errors
