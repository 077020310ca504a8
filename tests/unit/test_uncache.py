"""A fit run's page cache dropped at its end (``RunSpec.uncache``), on fake cgroupfs trees:
which file each cgroup version is written, with what, before the group goes; the kernel's
refusals that are results (EAGAIN, a missing file) and the one that is said."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from edgeprof.backends._uncache import drop_group_cache

from .conftest import FakeCgroupFs
from .test_backend_cgroup_v1 import spec as v1_spec
from .test_backend_cgroup_v1 import v1_tree
from .test_backend_cgroup_v2 import backend, only_run_group, spec, v2_tree

CACHED = {"memory.reclaim": "", "memory.current": "52428800\n"}


def _run_v2(cgfs: FakeCgroupFs, tmp_path: Path, uncache: bool) -> tuple[Path, list[str]]:
    root, psc = v2_tree(cgfs, tmp_path, overrides=CACHED)
    with backend(root, psc).launch(spec(uncache=uncache)) as run:
        group = only_run_group(cgfs)
        run.wait(10)
        cgfs.processes_exited()
    assert cgfs.run_groups() == []  # removed after the drop, as without it
    return group, run.warnings


def test_a_v2_run_reclaims_what_its_group_holds_before_the_group_goes(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    group, warnings = _run_v2(cgfs, tmp_path, uncache=True)
    assert (group / "memory.reclaim", "52428800") in cgfs.writes  # memory.current, at the end
    assert warnings == []


def test_a_run_not_asked_drops_nothing(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    _run_v2(cgfs, tmp_path, uncache=False)
    assert cgfs.written("memory.reclaim") == []


@pytest.mark.parametrize("code", [errno.EAGAIN, errno.ENOENT])
def test_what_could_not_be_reclaimed_or_a_kernel_without_the_file_is_no_warning(
    cgfs: FakeCgroupFs, tmp_path: Path, code: int
) -> None:
    cgfs.refuse["memory.reclaim"] = code
    _, warnings = _run_v2(cgfs, tmp_path, uncache=True)
    assert warnings == []


def test_a_refused_drop_is_said_and_the_group_still_goes(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    cgfs.refuse["memory.reclaim"] = errno.EBUSY
    _, warnings = _run_v2(cgfs, tmp_path, uncache=True)
    assert warnings == [
        "the run's page cache was not dropped (memory.reclaim: Device or resource busy): a "
        "later run may map what this one cached without being charged for it"
    ]


def test_a_v1_run_empties_its_memory_group(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    host = v1_tree(cgfs, tmp_path, overrides={"memory": {"memory.force_empty": ""}})
    with host.backend().launch(v1_spec(uncache=True)) as run:
        memory = [g for g in cgfs.run_groups() if host.mounts["memory"] in g.parents]
        run.wait(10)
        cgfs.processes_exited()
    assert cgfs.writes.count((memory[0] / "memory.force_empty", "0")) == 1
    assert [p.name for p, _ in cgfs.writes].count("memory.force_empty") == 1  # memory's only
    assert cgfs.run_groups() == []


def test_an_empty_v2_group_is_not_written(tmp_path: Path) -> None:
    (tmp_path / "memory.current").write_text("0\n")
    (tmp_path / "memory.reclaim").write_text("")
    assert drop_group_cache(tmp_path, 2) is None
    assert (tmp_path / "memory.reclaim").read_text() == ""
