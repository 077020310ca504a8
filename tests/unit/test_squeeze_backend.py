"""A squeezed run's plumbing on fake cgroupfs trees: the v2 backend's ``memory.reclaim``
handle, swap off, the refusals where there is no proactive reclaim, and the runner's record
of the squeeze in the result."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from edgeprof.backends import CgroupV1Backend
from edgeprof.cli import main
from edgeprof.errors import BackendError, ConfigError
from edgeprof.measure.runner import profile
from edgeprof.model import Limits, RunResult

from .conftest import FakeCgroupFs
from .test_backend_cgroup_v2 import backend, only_run_group, spec, v2_tree

RECLAIM = {
    "memory.reclaim": "",
    "memory.current": "52428800\n",
    "memory.stat": "anon 31457280\nfile 20971520\nshmem 1048576\ninactive_file 4096\n",
    "memory.pressure": (
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1500\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=700\n"
    ),
}


def test_a_squeezed_run_gets_memory_reclaim_and_no_swap(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path, overrides=RECLAIM)
    be = backend(root, psc)
    assert be.reclaim_unavailable() is None
    with be.launch(spec(reclaim=True)) as run:
        group = only_run_group(cgfs)
        assert cgfs.read(group / "memory.swap.max") == "0"  # swap off with no limit set
        assert cgfs.read(group / "memory.max") == "max\n"
        rec = run.reclaim
        assert rec is not None
        r = rec.read()
        assert tuple(r) == (50 << 20, 20 << 20, 1500, 1 << 20)  # raw, as memory.stat says
        # file less shmem: tmpfs pages are not dropped without swap
        assert r.reclaimable == 19 << 20
        assert rec.reclaim(4096) is True
        assert cgfs.read(group / "memory.reclaim") == "4096"
        run.wait(10)
        cgfs.processes_exited()
    assert run.reclaim is not None
    with pytest.raises(BackendError, match="after close"):
        run.reclaim.reclaim(4096)  # closed with the handle, before the group went


def test_an_unsqueezed_run_has_no_reclaim_and_keeps_swap(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    root, psc = v2_tree(cgfs, tmp_path, overrides=RECLAIM)
    with backend(root, psc).launch(spec()) as run:
        group = only_run_group(cgfs)
        assert run.reclaim is None and cgfs.written("memory.swap.max") == []
        assert cgfs.read(group / "memory.reclaim") == ""
        run.wait(10)
        cgfs.processes_exited()


@pytest.mark.parametrize(("code", "outcome"), [(errno.EAGAIN, False), (errno.EBUSY, BackendError)])
def test_the_kernels_refusal_to_reclaim(
    cgfs: FakeCgroupFs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int,
    outcome: object,
) -> None:  # fmt: skip
    root, psc = v2_tree(cgfs, tmp_path, overrides=RECLAIM)
    with backend(root, psc).launch(spec(reclaim=True)) as run:
        rec = run.reclaim
        assert rec is not None

        def refuse(fd: int, data: bytes) -> int:
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(os, "write", refuse)
        if outcome is False:
            assert rec.reclaim(1 << 20) is False  # EAGAIN: could not reclaim it all
        else:
            with pytest.raises(BackendError, match=r"memory\.reclaim"):
                rec.reclaim(1 << 20)
        monkeypatch.undo()
        run.wait(10)
        cgfs.processes_exited()


def test_a_kernel_without_memory_reclaim_is_refused_before_a_group_exists(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    root, psc = v2_tree(cgfs, tmp_path)  # the template has no memory.reclaim: Linux < 5.19
    be = backend(root, psc)
    why = be.reclaim_unavailable()
    assert why is not None and "no memory.reclaim" in why and "5.19" in why
    with pytest.raises(ConfigError, match="cannot squeeze"):
        be.launch(spec(reclaim=True))
    assert cgfs.run_groups() == []
    with pytest.raises(ConfigError, match="cannot squeeze"):
        profile(["true"], backend=be, squeeze=True)
    assert cgfs.run_groups() == []


def test_cgroup_v1_and_other_backends_say_why_not() -> None:
    v1 = CgroupV1Backend.reclaim_unavailable(CgroupV1Backend.__new__(CgroupV1Backend))
    assert v1 is not None and "cgroup v1" in v1 and "memory.reclaim" in v1


def test_run_squeeze_where_no_reclaim_names_the_search_that_needs_none(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """``--squeeze`` on cgroup v1 said why not and no next step (a tester's): fit's bisection
    sets memory limits, which need no reclaim."""
    from edgeprof.cli import main

    assert main(["run", "--backend", "fake", "--squeeze", "--", "true"]) == 2
    assert capfd.readouterr().err == (
        "edgeprof: error: --squeeze: the fake backend cannot reclaim a run's memory while it "
        "runs; edgeprof fit (without --one-run) bisects with limited runs instead\n"
    )


def test_the_runner_records_the_squeeze(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path, overrides=RECLAIM)
    out = tmp_path / "out"
    r = profile(["sleep", "0.2"], backend=backend(root, psc), squeeze=True, interval=0.01,
                out_dir=out)  # fmt: skip
    q = r.memory.squeeze
    assert q is not None
    # The fake group's 19 MiB of cache never shrinks: every 20 ms the squeeze asks for a
    # tenth of it, and the level it holds is the group's 50 MiB.
    assert q.steps >= 1 and q.held_bytes == 50 << 20 and q.interval_s == 0.02
    assert q.stall_s == pytest.approx(0.0015)
    assert not any("stopped early" in w for w in r.warnings)
    # Its times are not an unsqueezed run's, and the result says so.
    assert any("times are slower than an unsqueezed run's" in w for w in r.warnings)
    again = RunResult.from_dict(json.loads((out / "result.json").read_text()))
    assert again.memory.squeeze == q
    assert profile(["true"], backend=backend(root, psc), interval=0.01).memory.squeeze is None


def test_fit_one_run_is_refused_where_the_backend_cannot_reclaim(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "fit"
    code = main(["fit", "--one-run", "--backend", "fake", "--out", str(out), "--", "true"])
    err = capfd.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--one-run: the fake backend cannot reclaim" in err
    assert "without --one-run, fit bisects" in err
    assert not out.exists()


@pytest.mark.parametrize("extra", [["--repeat", "2"], ["--resolution", "4m"]])
def test_fit_one_run_takes_no_bisection_options(
    capfd: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    code = main(["fit", "--one-run", "--backend", "fake", *extra, "--", "true"])
    err = capfd.readouterr().err
    assert code == 2 and "--one-run makes one run" in err


def test_limits_and_a_squeeze_go_together(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path, overrides=RECLAIM)
    r = profile(["true"], Limits(memory="64m"), backend=backend(root, psc), squeeze=True,
                interval=0.01)  # fmt: skip
    assert r.memory.squeeze is not None and r.limits.memory == 64 << 20
