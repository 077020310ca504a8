"""The cgroup v1 backend's kill on fake hybrid trees: the method it picks (the unified
hierarchy's ``cgroup.kill``, the freezer, the memory group's procs) and the kill itself."""

from __future__ import annotations

import signal
from pathlib import Path

from edgeprof.backends import CgroupV1Backend

from .conftest import IMPOSSIBLE_PID, FakeCgroupFs
from .test_backend_cgroup_v1 import run_group_in, spec, v1_tree


def kill_dirs(tmp_path: Path, *keys: str, unified_kill: bool = True) -> dict[str, Path]:
    dirs = {}
    for k in keys:
        d = tmp_path / (k or "unified") / "run"
        d.mkdir(parents=True)
        (d / "cgroup.procs").write_text("")
        if k == "" and unified_kill:
            (d / "cgroup.kill").write_text("")
        dirs[k] = d
    return dirs


def test_kill_method_prefers_unified_cgroup_kill(tmp_path: Path) -> None:
    dirs = kill_dirs(tmp_path, "memory", "freezer", "")
    k = CgroupV1Backend(mountinfo=tmp_path, proc_self_cgroup=tmp_path)._kill_method(dirs)
    assert (k.kill_file, k.members, k.freeze_file) == (
        dirs[""] / "cgroup.kill",
        dirs[""] / "cgroup.procs",
        None,
    )


def test_kill_method_freezer_when_no_cgroup_kill(tmp_path: Path) -> None:
    dirs = kill_dirs(tmp_path, "memory", "freezer", "", unified_kill=False)
    k = CgroupV1Backend(mountinfo=tmp_path, proc_self_cgroup=tmp_path)._kill_method(dirs)
    assert k.kill_file is None
    assert k.freeze_file == dirs["freezer"] / "freezer.state"
    assert k.freeze_values == ("FROZEN", "THAWED")
    assert k.members == dirs["freezer"] / "cgroup.procs"
    assert k.frozen_probe is not None
    (dirs["freezer"] / "freezer.state").write_text("FREEZING\n")
    assert not k.frozen_probe()
    (dirs["freezer"] / "freezer.state").write_text("FROZEN\n")
    assert k.frozen_probe()


def test_kill_method_memory_procs_as_last_resort(tmp_path: Path) -> None:
    dirs = kill_dirs(tmp_path, "memory", "cpuacct")
    k = CgroupV1Backend(mountinfo=tmp_path, proc_self_cgroup=tmp_path)._kill_method(dirs)
    assert (k.kill_file, k.freeze_file, k.members) == (None, None, dirs["memory"] / "cgroup.procs")


def test_disabled_cgroup_kill_skips_the_unified_hierarchy(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    host = v1_tree(cgfs, tmp_path)
    with host.backend(disable=frozenset({"cgroup.kill"})).launch(spec()) as run:
        assert not any(host.mounts[""] in g.parents for g in cgfs.run_groups())
        run.wait(10)
        fz = run_group_in(host.mounts["freezer"], cgfs)
        (fz / "cgroup.procs").write_text(f"{IMPOSSIBLE_PID}\n")
        run.kill()
        assert cgfs.written("freezer.state") == ["FROZEN", "THAWED"]
        assert cgfs.signals == [([IMPOSSIBLE_PID], signal.SIGKILL)]
        cgfs.processes_exited()
    assert cgfs.run_groups() == []


def test_kill_through_unified_cgroup_kill(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    host = v1_tree(cgfs, tmp_path)
    with host.backend().launch(spec()) as run:
        run.wait(10)
        run.kill()
        assert cgfs.written("cgroup.kill") == ["1"]
        assert cgfs.written("freezer.state") == []
        assert cgfs.signals == []
        cgfs.processes_exited()
    assert cgfs.run_groups() == []
