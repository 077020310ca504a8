"""doctor.py: the pure parts (mount listing, rendering); diagnose() probes the host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.measure import doctor
from edgeprof.measure.doctor import Finding, _mounts, render, storage_speed


def test_mounts_lists_cgroup_mounts_with_their_controllers(tmp_path: Path) -> None:
    mi = tmp_path / "mountinfo"
    mi.write_text(
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "30 24 0:26 / /sys/fs/cgroup/unified rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
        "31 24 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:5 "
        "- cgroup cgroup rw,cpu,cpuacct\n"
        "32 24 0:28 / /sys/fs/cgroup/memory rw,relatime shared:6 - cgroup cgroup rw,memory\n"
        "33 24 0:29 / /sys/fs/cgroup/x rw,relatime shared:7 - cgroup2 cgroup2 rw,relatime\n"
    )
    assert _mounts(mi) == [
        "/sys/fs/cgroup/unified (cgroup2: nsdelegate)",
        "/sys/fs/cgroup/cpu,cpuacct (cgroup: cpu,cpuacct)",
        "/sys/fs/cgroup/memory (cgroup: memory)",
        "/sys/fs/cgroup/x (cgroup2)",
    ]


def test_mounts_none(tmp_path: Path) -> None:
    mi = tmp_path / "mountinfo"
    mi.write_text("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n")
    assert _mounts(mi) == []


def test_render_marks_and_fixes() -> None:
    text = render(
        [
            Finding("kernel", None, "Linux 6.1"),
            Finding("cgroup v2", True, "run groups under /sys/fs/cgroup/edgeprof"),
            Finding("memory.peak", False, "no memory.peak", "a newer kernel"),
        ]
    )
    assert text == (
        "[info] kernel: Linux 6.1\n"
        "[ok  ] cgroup v2: run groups under /sys/fs/cgroup/edgeprof\n"
        "[MISS] memory.peak: no memory.peak\n"
        "       fix: a newer kernel\n"
    )


def test_storage_speed_names_the_disks_a_rate_slows(tmp_path: Path) -> None:
    assert storage_speed(tmp_path).detail == (
        f"{tmp_path} lists no disk with media (files on a share or tmpfs): --read-bps, "
        "--write-bps, --read-iops and --write-iops are refused here"
    )
    for name, dev, size in (("vda", "254:0", "8"), ("loop0", "7:0", "0"), ("sda", "8:0", "2")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "dev").write_text(dev + "\n")
        (tmp_path / name / "size").write_text(size + "\n")
    found = storage_speed(tmp_path)
    assert (found.topic, found.ok) == ("storage speed", None)
    assert found.detail == (
        "--read-bps, --write-bps, --read-iops and --write-iops slow every disk: sda (8:0), "
        "vda (254:0)"
    )


def test_json_lists_every_finding_with_its_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``doctor --json``: the findings the text report shows, in its order, each with its
    state (true, false: missing, null: information) and fix, for a CI step to check one."""
    found = [
        Finding("kernel", None, "Linux 6.1"),
        Finding("cgroup v2", True, "run groups under /sys/fs/cgroup/edgeprof"),
        Finding("docker", False, "cannot reach the Docker daemon", "start dockerd"),
    ]
    monkeypatch.setattr(doctor, "diagnose", lambda python=None: found[:2])
    monkeypatch.setattr(
        "edgeprof.analysis.environment.environment_findings", lambda: found[2:]
    )
    assert main(["doctor", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == [
        {"topic": "kernel", "ok": None, "detail": "Linux 6.1", "fix": None},
        {"topic": "cgroup v2", "ok": True, "detail": found[1].detail, "fix": None},
        {"topic": "docker", "ok": False, "detail": found[2].detail, "fix": "start dockerd"},
    ]
    assert main(["doctor"]) == 0
    text = capsys.readouterr().out
    assert [line[7:].split(":")[0] for line in text.splitlines() if line.startswith("[")] == [
        "kernel", "cgroup v2", "docker"
    ]


def test_an_unreachable_docker_daemon_has_its_fix_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's error ends in what to do; ``doctor --json`` had left ``fix`` null with
    it inside ``detail`` (a user's)."""
    from edgeprof.measure.doctor import _docker

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'none.sock'}")
    (found,) = _docker()
    assert (found.topic, found.ok) == ("docker", False)
    assert found.detail.startswith("cannot reach the Docker daemon (") and ";" not in found.detail
    assert found.fix is not None and found.fix.startswith("start dockerd, or point DOCKER_HOST")
