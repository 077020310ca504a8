"""The cgroup v2 backend's kill and terminate on fake cgroupfs trees: ``cgroup.kill``, the
freezer, signals to the members, and what a refused write or a survivor is."""

from __future__ import annotations

import errno
import signal
from pathlib import Path

import pytest

from edgeprof.backends import CgroupV2Backend, _cgroup_run
from edgeprof.errors import BackendError

from .conftest import IMPOSSIBLE_PID, FakeCgroupFs
from .test_backend_cgroup_v2 import backend, only_run_group, spec, v2_tree


def test_kill_method_selection(tmp_path: Path) -> None:
    g = tmp_path / "g"
    g.mkdir()
    for f in ("cgroup.procs", "cgroup.kill", "cgroup.freeze", "cgroup.events"):
        (g / f).write_text("")

    def method(*disabled: str):  # type: ignore[no-untyped-def]
        be = CgroupV2Backend(
            root=tmp_path, proc_self_cgroup=tmp_path / "x", euid=0, disable=frozenset(disabled)
        )
        return be._kill_method(g)

    k = method()
    assert (k.kill_file, k.freeze_file, k.members) == (g / "cgroup.kill", None, g / "cgroup.procs")
    k = method("cgroup.kill")
    assert (k.kill_file, k.freeze_file) == (None, g / "cgroup.freeze")
    assert k.freeze_values == ("1", "0") and k.frozen_probe is not None
    (g / "cgroup.events").write_text("populated 1\nfrozen 1\n")
    assert k.frozen_probe()
    k = method("cgroup.kill", "cgroup.freeze")
    assert (k.kill_file, k.freeze_file, k.members) == (None, None, g / "cgroup.procs")
    (g / "cgroup.kill").unlink()  # Linux < 5.14: the file is absent
    k = method()
    assert (k.kill_file, k.freeze_file) == (None, g / "cgroup.freeze")


def test_kill_writes_cgroup_kill(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    with backend(root, psc).launch(spec()) as run:
        assert run.wait(10) == 0
        run.kill()
        assert cgfs.written("cgroup.kill") == ["1"]
        assert cgfs.signals == []  # the kernel kills: no pid list is read and signalled
        assert run.members() == []
    assert cgfs.run_groups() == []


def test_kill_with_the_freezer(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    be = backend(root, psc, disable=frozenset({"cgroup.kill"}))
    with be.launch(spec()) as run:
        assert run.wait(10) == 0
        group = only_run_group(cgfs)
        (group / "cgroup.procs").write_text(f"{IMPOSSIBLE_PID}\n")  # a leftover to kill
        run.kill()
        assert cgfs.written("cgroup.freeze") == ["1", "0"]  # frozen, killed, thawed
        assert cgfs.signals == [([IMPOSSIBLE_PID], signal.SIGKILL)]
        assert cgfs.written("cgroup.kill") == []
        assert fs_events_frozen(group) == 0
    assert cgfs.run_groups() == []


def fs_events_frozen(group: Path) -> int:
    for line in (group / "cgroup.events").read_text().splitlines():
        k, _, v = line.partition(" ")
        if k == "frozen":
            return int(v)
    raise AssertionError("no frozen line")


def test_kill_without_freezer_or_kill_file(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    be = backend(root, psc, disable=frozenset({"cgroup.kill", "cgroup.freeze"}))
    with be.launch(spec()) as run:
        run.wait(10)
        (only_run_group(cgfs) / "cgroup.procs").write_text(f"{IMPOSSIBLE_PID}\n")
        run.kill()
        assert cgfs.signals == [([IMPOSSIBLE_PID], signal.SIGKILL)]
        assert cgfs.written("cgroup.freeze") == []


def test_terminate_sends_sigterm_to_members(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    with backend(root, psc).launch(spec()) as run:
        run.wait(10)
        group = only_run_group(cgfs)
        (group / "cgroup.procs").write_text(f"{IMPOSSIBLE_PID}\n")
        run.terminate()
        # Then SIGCONT, as coreutils' timeout: a stopped member acts on its SIGTERM.
        assert cgfs.signals == [
            ([IMPOSSIBLE_PID], signal.SIGTERM),
            ([IMPOSSIBLE_PID], signal.SIGCONT),
        ]
        assert cgfs.pids(group) == [IMPOSSIBLE_PID]  # SIGTERM is a request
        run.kill()
    assert cgfs.run_groups() == []


def test_refused_kill_write_is_a_backend_error(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    run = backend(root, psc).launch(spec())
    run.wait(10)
    group = only_run_group(cgfs)
    cgfs.refuse["cgroup.kill"] = errno.EPERM
    cgfs.processes_exited()
    with pytest.raises(BackendError, match="cannot write '1'"):
        run.kill()
    del cgfs.refuse["cgroup.kill"]
    run.close()
    assert not group.exists()


def test_kill_gives_up_on_survivors(
    cgfs: FakeCgroupFs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cgroup_run, "KILL_TIMEOUT_S", 0.05)
    root, psc = v2_tree(cgfs, tmp_path)
    run = backend(root, psc, disable=frozenset({"cgroup.kill", "cgroup.freeze"})).launch(spec())
    run.wait(10)
    group = only_run_group(cgfs)
    (group / "cgroup.procs").write_text("0\n")  # a member no signal removes
    with pytest.raises(BackendError, match=r"processes \[0\] survived SIGKILL"):
        run.kill()
    cgfs.processes_exited()
    run.close()
    assert cgfs.run_groups() == []
