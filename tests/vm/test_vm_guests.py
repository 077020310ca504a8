"""The vm tier's guests without a boot: which tests each runs, and a guest stopped at once."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from . import launch
from .guest import VmError
from .test_cgroup_v2 import (
    FIRST_PART,
    GUEST_ONLY_TESTS,
    PYTEST_SELECTION,
    SYSTEMD_TESTS,
    guests,
    node_ids,
)

pytestmark = pytest.mark.vm


def test_the_two_parts_run_the_kernel_tier_once_between_them() -> None:
    part_1, part_2 = (g for g in guests(()) if g.part)
    first, second = node_ids(part_1.selection), node_ids(part_2.selection)
    whole = node_ids(("tests/host", *GUEST_ONLY_TESTS, *PYTEST_SELECTION))
    assert first and second
    assert sorted(first + second) == sorted(whole)  # none twice, none left out
    assert {n.split("::")[0] for n in first} == set(FIRST_PART)
    assert (part_1.kernel, part_1.cpus, part_1.init) == (part_2.kernel, part_2.cpus, "busybox")
    assert part_1.label != part_2.label  # each part's JUnit file is its own


def test_a_narrowed_tier_runs_the_given_tests_in_one_guest_per_kernel_and_init() -> None:
    given = ("tests/host/test_device_kernel.py",)
    chosen = guests(given)
    assert [(g.kernel, g.init) for g in chosen] == [
        ("6.12", "busybox"), ("6.1", "busybox"), ("6.12", "systemd"),
    ]  # fmt: skip
    assert all(g.tests == given and not g.ignore and not g.part for g in chosen)
    assert guests(())[-1].tests == SYSTEMD_TESTS


def test_a_cancelled_guest_is_killed_and_says_so(tmp_path: Path) -> None:
    """A guest in a worker thread is out of an interrupt's reach: ``cancel`` stops it."""
    cancel = threading.Event()
    pid_file = tmp_path / "pid"
    stand_in = ["sh", "-c", f'echo $$ > {pid_file}; exec sleep 600']  # a qemu that never ends
    stopper = threading.Timer(0.5, cancel.set)
    stopper.start()
    started = time.monotonic()
    with pytest.raises(VmError, match="was cancelled"):
        launch._launch(stand_in, tmp_path / "console.log", tmp_path, 600.0, cancel)
    stopper.join()
    assert time.monotonic() - started < 300  # long before its time-out: it was the cancel
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped


def test_a_guest_past_its_time_out_is_killed(tmp_path: Path) -> None:
    with pytest.raises(VmError, match=r"timed out after 0\.5 s"):
        launch._launch(["sleep", "600"], tmp_path / "console.log", tmp_path, 0.5)


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_guests_at_once_are_bounded_by_the_cpu_quota_as_well_as_the_affinity(
    tmp_path: Path,
) -> None:
    """A container listing many cores but given less CPU time runs fewer guests at once."""
    affinity = sorted(os.sched_getaffinity(0))
    v2, v1, none = tmp_path / "v2", tmp_path / "v1", tmp_path / "none"
    _tree(v2, {
        "proc": "0::/ci/job\n",
        "fs/ci/cpu.max": "150000 100000\n",  # the container's: 1.5 CPUs
        "fs/ci/job/cpu.max": "max 100000\n",  # its own group: no limit of its own
    })  # fmt: skip
    _tree(v1, {
        "proc": "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/docker/abc\n",
        "fs/cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "350000\n",
        "fs/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
        "fs/cpu,cpuacct/docker/cpu.cfs_quota_us": "-1\n",
        "fs/cpu,cpuacct/docker/cpu.cfs_period_us": "100000\n",
    })  # fmt: skip
    _tree(none, {"proc": "0::/\n", "fs/cgroup.controllers": "cpu memory\n"})
    assert launch.cpu_quota(v2 / "proc", v2 / "fs") == 1.5
    assert launch.cpu_quota(v1 / "proc", v1 / "fs") == 3.5
    assert launch.cpu_quota(none / "proc", none / "fs") is None
    assert launch.host_cores(4, v2 / "proc", v2 / "fs") == affinity[:1]  # 1.5 CPUs: one guest
    assert launch.host_cores(4, none / "proc", none / "fs") == affinity[:4]
    assert launch.host_cores(1, none / "proc", none / "fs") == affinity[:1]
    assert launch.host_cores(4, v1 / "proc", v1 / "fs") == affinity[: min(3, len(affinity))]
