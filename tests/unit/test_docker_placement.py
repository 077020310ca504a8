"""Where a Docker run's container goes (edgeprof.backends.docker.cgroups): both cgroup
drivers, on fake trees.  The cgroupfs driver runs for real in the Docker tier; the systemd
driver has no daemon here that uses it (tests/vm/README.md says why), so its placement and
the container group's naming are checked here."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.backends.docker import cgroups
from edgeprof.errors import BackendUnavailable

from .conftest import FakeCgroupFs
from .test_backend_cgroup_v1 import v1_tree
from .test_backend_cgroup_v2 import v2_tree

NAME = "edgeprof-123-456-0123abcd"


def test_systemd_driver_on_v2_gets_a_slice_of_its_own(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    """runc's systemd driver takes a slice name as the parent and asks systemd for it:
    nothing of edgeprof's own is prepared (no /edgeprof, no scope)."""
    root, psc = v2_tree(cgfs, tmp_path)
    before = sorted(p.name for p in root.iterdir())
    p = cgroups.place(
        NAME, version=2, driver="systemd", cgroup_root=root,
        mountinfo=tmp_path / "unused", proc_self_cgroup=psc,
    )  # fmt: skip
    assert p == cgroups.Placement(2, f"{NAME}.slice", {"": root / f"{NAME}.slice"}, (root,))
    assert sorted(p.name for p in root.iterdir()) == before
    # The container's group is systemd's scope in that slice, once runc made it.
    inner = root / f"{NAME}.slice" / "docker-abc.scope"
    assert cgroups.find_inner(root / f"{NAME}.slice", "abc") is None
    inner.mkdir(parents=True)
    assert cgroups.find_inner(root / f"{NAME}.slice", "abc") == inner


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
