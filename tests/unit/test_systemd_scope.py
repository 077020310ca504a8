"""Root's runs in a scope systemd delegates (edgeprof.backends._systemd_scope): the logic,
with a stand-in ``systemd-run`` on PATH.  systemd itself is exercised in the systemd guest
(tests/vm/guest_systemd.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from edgeprof.backends import _systemd_scope as sd
from edgeprof.backends.cgroup_v2 import CGROUP_ROOT, CgroupV2Backend
from edgeprof.backends.owner import owner_of
from edgeprof.errors import BackendError

from .conftest import FakeCgroupFs
from .test_backend_cgroup_v2 import ALL, RUN_GROUP, backend, spec, v2_tree

# Places itself as systemd would (the scope's directory under system.slice, named by
# --unit), says where, then holds until end-of-file, as the real holder does.
FAKE_SYSTEMD_RUN = """#!/bin/sh
for a; do case "$a" in --unit=*) unit="${a#--unit=}";; esac; done
case "$FAKE_MODE" in
  refuse) echo "Failed to connect to bus: No such file or directory" >&2; exit 1;;
  hang) exec cat;;  # never answers (stdin stays empty), output open
esac
leaf="$FAKE_ROOT/system.slice/$unit/holder"
mkdir -p "$leaf" && : > "$leaf/cgroup.procs"
echo "0::/system.slice/$unit"
exec cat >/dev/null
"""


@pytest.fixture
def fake_systemd_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "systemd-run"
    exe.write_text(FAKE_SYSTEMD_RUN)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_ROOT", str(root))
    return root


def test_systemd_is_pid_1_where_its_run_directory_exists(tmp_path: Path) -> None:
    assert not sd.systemd_manages(tmp_path / "absent")
    (tmp_path / "system").mkdir()
    assert sd.systemd_manages(tmp_path / "system")


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ("0::/system.slice/edgeprof-1-2.scope\n", "/system.slice/edgeprof-1-2.scope"),
        ("0::/\n", "/"),
        ("4:memory:/user.slice\n", None),  # a v1 hierarchy's line
        ("0::\n", None),
        ("garbage", None),
    ],
)
def test_the_unified_path_is_read_from_a_proc_cgroup_line(line: str, path: str | None) -> None:
    assert sd.parse_placement(line) == path


def test_the_scope_is_named_after_this_process_and_asked_with_delegation() -> None:
    unit = sd.unit_name()
    assert unit.startswith(f"edgeprof-{os.getpid()}-") and unit.endswith(".scope")
    argv = sd.holder_command("/usr/bin/systemd-run", unit)
    assert argv[:2] == ["/usr/bin/systemd-run", "--scope"]
    assert f"--unit={unit}" in argv and argv[argv.index("-p") + 1] == "Delegate=yes"
    # Run groups are named edgeprof-<pid>-<start>-<8 hex>: gc never takes the scope for one.
    assert owner_of(unit) is None and owner_of(unit.removesuffix(".scope")) is None


def test_a_scope_holds_its_holder_in_a_leaf_until_closed(fake_systemd_run: Path) -> None:
    scope = sd.start_scope(fake_systemd_run, timeout=30)
    try:
        assert scope.path == fake_systemd_run / "system.slice" / scope.unit
        leaf = scope.path / sd.HOLDER_LEAF / "cgroup.procs"
        assert leaf.read_text() == str(scope.holder.pid)
        assert scope.holder.poll() is None
    finally:
        scope.close()
    assert scope.holder.returncode == 0  # ended by end-of-file, not killed


def test_a_refusal_is_one_error_with_systemds_words(
    fake_systemd_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "refuse")
    with pytest.raises(BackendError) as e:
        sd.start_scope(fake_systemd_run, timeout=30)
    assert str(e.value) == (
        "systemd-run --scope failed (exit 1): Failed to connect to bus: No such file or directory"
    )


def test_no_answer_within_the_time_out_ends_the_holder(
    fake_systemd_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "hang")
    with pytest.raises(BackendError, match=r"did not start a scope within 0.2 s"):
        sd.start_scope(fake_systemd_run, timeout=0.2)
    assert list(fake_systemd_run.iterdir()) == []


def test_no_systemd_run_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BackendError, match="systemd-run is not on PATH"):
        sd.start_scope(tmp_path)


def test_only_the_real_hierarchy_asks_systemd(tmp_path: Path) -> None:
    """A fake tree never reaches the host's systemd, whoever runs the tests."""
    assert CgroupV2Backend(root=tmp_path)._delegate is None
    real = CgroupV2Backend(root=CGROUP_ROOT)
    assert (real._delegate is not None) == sd.systemd_manages()


def test_root_runs_go_in_the_delegated_scope(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    """Where systemd manages the tree, root's runs go below the scope it delegated, with the
    controllers enabled there, and nothing is written at the top of the tree."""
    root, psc = v2_tree(cgfs, tmp_path, root_subtree=ALL)
    cgfs.group(root / "system.slice", {"cgroup.subtree_control": ALL})
    scope = cgfs.group(root / "system.slice" / "edgeprof-1-2.scope", {})
    be = backend(root, psc, delegate=lambda r: r / "system.slice" / "edgeprof-1-2.scope")
    with be.launch(spec()):
        assert len([g for g in scope.iterdir() if RUN_GROUP.match(g.name)]) == 1
    assert be.parent() == scope and be.warnings() == []
    assert set(cgfs.read(scope / "cgroup.subtree_control").split()) == set(ALL.split())
    assert not (root / "edgeprof").exists()
    assert all(p.parent != root for p, _ in cgfs.writes), cgfs.writes


def test_a_scope_systemd_refuses_is_said_and_the_top_level_group_used(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    root, psc = v2_tree(cgfs, tmp_path)

    def refuse(_: Path) -> Path:
        raise BackendError("systemd-run --scope failed (exit 1): Access denied")

    be = backend(root, psc, delegate=refuse)
    assert be.parent() == root / "edgeprof"
    assert be.warnings() == [
        "systemd manages this host's cgroups but gave edgeprof no delegated scope "
        "(systemd-run --scope failed (exit 1): Access denied); its runs go in "
        f"{root / 'edgeprof'}, which systemd does not know"
    ]


def test_users_never_ask_for_a_scope(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    """An ordinary user works in the scope it was started in (systemd-run --user)."""
    root, psc = v2_tree(cgfs, tmp_path, own="/user.slice/app.scope", root_subtree=ALL)
    cgfs.group(root / "user.slice", {"cgroup.subtree_control": ALL})
    cgfs.group(root / "user.slice" / "app.scope", {"cgroup.procs": ""})
    asked: list[Path] = []

    def delegate(r: Path) -> Path:
        asked.append(r)
        return r

    be = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=1000, delegate=delegate)
    assert be.parent() == root / "user.slice" / "app.scope" and asked == []
