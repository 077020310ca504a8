"""Where a Docker run's container goes (edgeprof.backends.docker.cgroups): both cgroup
drivers, on fake trees.  The cgroupfs driver runs for real in the Docker tier; the systemd
driver has no daemon here that uses it (tests/vm/README.md says why), so its placement and
the container group's naming are checked here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgeprof.backends._systemd_scope import stop_unit
from edgeprof.backends.docker import cgroups
from edgeprof.errors import BackendUnavailable

from .conftest import FakeCgroupFs
from .test_backend_cgroup_v1 import v1_tree
from .test_backend_cgroup_v2 import v2_tree

NAME = "edgeprof-123-456-0123abcd"


def test_systemd_driver_on_v2_gets_a_slice_of_its_own(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    """runc's systemd driver takes a slice name as the parent and asks systemd for it:
    nothing of edgeprof's own is prepared (no /edgeprof, no scope).  The name has no "-",
    which systemd would read as levels (edgeprof-1.slice is edgeprof.slice/edgeprof-1.slice);
    the slice is systemd's to remove, so no directory is edgeprof's to rmdir."""
    root, psc = v2_tree(cgfs, tmp_path)
    before = sorted(p.name for p in root.iterdir())
    p = cgroups.place(
        NAME, version=2, driver="systemd", cgroup_root=root,
        mountinfo=tmp_path / "unused", proc_self_cgroup=psc,
    )  # fmt: skip
    unit = "edgeprof_123_456_0123abcd.slice"
    assert p == cgroups.Placement(2, unit, {"": root / unit}, (root,), slice_unit=unit)
    assert p.path == f"/{unit}"
    assert cgroups.missing_dirs(p) == [] and cgroups.parents_everywhere(p) == [root / unit]
    assert sorted(p.name for p in root.iterdir()) == before
    # The container's group is systemd's scope in that slice, once runc made it.
    inner = root / unit / "docker-abc.scope"
    assert cgroups.find_inner(root / unit, "abc") is None
    inner.mkdir(parents=True)
    assert cgroups.find_inner(root / unit, "abc") == inner


SYSTEMCTL = """#!/bin/sh
echo "$@" >> "$0.calls"
[ "$2" = "edgeprof_gone.slice" ] || exit 0
echo "Failed to stop edgeprof_gone.slice: Unit edgeprof_gone.slice not loaded." >&2
exit 5
"""


def test_a_slice_is_stopped_and_a_refusal_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = tmp_path / "systemctl"
    exe.write_text(SYSTEMCTL)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert stop_unit("edgeprof_1_2_abcdef01.slice") == []
    assert stop_unit("edgeprof_gone.slice") == [
        "cannot stop edgeprof_gone.slice: Failed to stop edgeprof_gone.slice: "
        "Unit edgeprof_gone.slice not loaded."
    ]
    calls = (tmp_path / "systemctl.calls").read_text().splitlines()
    assert calls == ["stop edgeprof_1_2_abcdef01.slice", "stop edgeprof_gone.slice"]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert stop_unit("x.slice")[0].startswith("cannot stop x.slice: ")


def test_cgroupfs_driver_on_v2_nests_under_the_backends_parent(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    p = cgroups.place(
        NAME, version=2, driver="cgroupfs", cgroup_root=root,
        mountinfo=tmp_path / "unused", proc_self_cgroup=psc,
    )  # fmt: skip
    parent = p.parent_dirs[""].parent
    assert p.cgroup_parent == f"/{parent.relative_to(root)}/{NAME}"
    assert parent.is_dir()
    assert cgroups.missing_dirs(p) == [root / p.cgroup_parent.lstrip("/")]


def test_systemd_driver_on_v1_is_refused_with_the_fix(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    host = v1_tree(cgfs, tmp_path)
    with pytest.raises(BackendUnavailable, match=r"native\.cgroupdriver=cgroupfs"):
        cgroups.place(
            NAME, version=1, driver="systemd", cgroup_root=tmp_path / "unused",
            mountinfo=host.mountinfo, proc_self_cgroup=host.psc,
        )  # fmt: skip
