"""A storage speed (``--read-bps``, ``--write-bps``): parsed once, labelled, kept in
result.json, and asked of every disk as each backend's kernel interface takes it."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

import edgeprof
from edgeprof.backends._disks import _mount_source, buffered_writes, disks, docker_rates, passed_on
from edgeprof.backends.capabilities import UNLIMITED, LimitReading
from edgeprof.backends.cgroup_parse import parse_throttle_rules
from edgeprof.backends.cgroup_v1 import NO_THROTTLE_BPS
from edgeprof.backends.docker import DockerBackend
from edgeprof.cli import main
from edgeprof.errors import ConfigError, LimitError
from edgeprof.measure.io_stall import io_stall_warning
from edgeprof.measure.limit_changes import change_warning, limit_changes
from edgeprof.model import IoStats, LimitChange, Limits
from edgeprof.units import parse_bandwidth

from .conftest import FakeCgroupFs, make_result
from .test_backend_cgroup_v1 import spec as v1_spec
from .test_backend_cgroup_v1 import v1_tree
from .test_backend_cgroup_v2 import backend, only_run_group, spec, v2_tree

MiB = 2**20


@pytest.mark.parametrize(
    ("text", "bps"),
    [("40m", 40 * MiB), ("40m/s", 40 * MiB), ("40MiB/s", 40 * MiB), (" 1.5g ", 3 * 2**29),
     ("512k", 512 * 1024), ("100b", 100), (4096, 4096)],
)  # fmt: skip
def test_a_rate_is_a_size_a_second(text: str | int, bps: int) -> None:
    assert parse_bandwidth(text) == bps


@pytest.mark.parametrize(
    ("text", "said"),
    [("40", "'40' has no unit (it would be 40 bytes): write a size such as 40m"),
     ("0m", "must be at least 1 byte"), ("fast", "'fast': expected a size a second with its unit"),
     (0, "must be at least 1 byte a second"), (True, "expected a size a second"),
     ("9000000t", "must be below 8 EiB"), (2**63, "and below 8 EiB")],
)  # fmt: skip
def test_a_bad_rate_says_why(text: str | int, said: str) -> None:
    with pytest.raises(ConfigError, match="invalid storage rate") as exc:
        parse_bandwidth(text)
    assert said in str(exc.value)


def test_a_rate_is_in_the_label_and_result_json() -> None:
    lim = Limits(memory="64m", read_bps="40m", write_bps="20m/s")
    assert lim.describe() == "memory=64.0MiB, read=40.0MiB/s, write=20.0MiB/s"
    r = make_result(limits=lim)
    d = r.to_dict()
    assert (d["limits"]["read_bps"], d["limits"]["write_bps"]) == (40 * MiB, 20 * MiB)
    assert type(r).from_dict(json.loads(json.dumps(d))).limits == lim
    old = {**d, "limits": {k: v for k, v in d["limits"].items() if not k.endswith("_bps")}}
    assert type(r).from_dict(old).limits == Limits(memory="64m")  # a file from before


def test_disks_are_the_whole_disks_with_media(tmp_path: Path) -> None:
    for name, dev, size in (("vda", "254:0", "100"), ("loop0", "7:0", "0"), ("sr0", "11:0", "0"),
                            ("cciss!c0d0", "104:0", "8")):  # fmt: skip
        (tmp_path / name).mkdir()
        (tmp_path / name / "dev").write_text(dev + "\n")
        (tmp_path / name / "size").write_text(size + "\n")
    assert [(d.name, d.dev) for d in disks(tmp_path)] == [("cciss!c0d0", "104:0"), ("vda", "254:0")]
    rates = docker_rates(Limits(read_bps="40m"), tmp_path)
    assert rates == {"BlkioDeviceReadBps": [{"Path": "/dev/cciss/c0d0", "Rate": 40 * MiB},
                                            {"Path": "/dev/vda", "Rate": 40 * MiB}]}  # fmt: skip


def test_disks_that_pass_their_io_on_are_named(tmp_path: Path) -> None:
    """Device mapper and md list the disks below them in ``slaves/``; a loop device whose
    backing file is on a block device passes its reads to it; one whose file is on no disk
    (tmpfs), whose file is gone, or that has none attached is the bottom of its own I/O."""
    sys_block, sys_dev_block = tmp_path / "block", tmp_path / "dev-block"
    on_disk, on_tmpfs = tmp_path / "on-disk.img", tmp_path / "on-tmpfs.img"
    on_disk.write_bytes(b"")
    on_tmpfs.write_bytes(b"")
    st = os.stat(on_disk)
    (sys_dev_block / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").mkdir(parents=True)
    tmpfs = tmp_path / "tmpfs"  # a file system on no block device: not in /sys/dev/block
    for name, dev, slaves, backing in (
        ("vda", "254:0", (), None),
        ("dm-0", "253:0", ("vda",), None),  # LUKS on vda
        ("dm-1", "253:1", ("dm-0",), None),  # LVM on it
        ("md0", "9:0", ("sda", "sdb"), None),
        ("loop0", "7:0", (), str(on_disk)),
        ("loop1", "7:1", (), str(tmpfs / "x.img")),
        ("loop2", "7:2", (), ""),
    ):
        d = sys_block / name
        (d / "slaves").mkdir(parents=True)
        (d / "dev").write_text(dev + "\n")
        for s in slaves:
            (d / "slaves" / s).write_text("")
        if backing is not None:
            (d / "loop").mkdir()
            (d / "loop" / "backing_file").write_text(backing + "\n")
    no_mounts = tmp_path / "mountinfo"
    no_mounts.write_text("")
    assert passed_on(sys_block, sys_dev_block, no_mounts) == ("253:0", "253:1", "7:0", "9:0")
    # The same file on a file system of no disk's: its loop device is counted.
    sys_dev_block.rename(tmp_path / "elsewhere")
    assert passed_on(sys_block, sys_dev_block, no_mounts) == ("253:0", "253:1", "9:0")


def test_a_files_mount_is_the_longest_mount_point_above_it() -> None:
    """btrfs gives its files an anonymous device number: the mount's source says which
    disk they are on (the longest mount point above the file; a space is \\040)."""
    mountinfo = (
        "22 1 0:21 / / rw - overlay overlay rw\n"
        "30 22 0:33 / /home rw,relatime - btrfs /dev/nvme0n1p3 rw\n"
        "31 30 0:34 / /home/a\\040b rw - tmpfs tmpfs rw\n"
        "32 22 0:35 / /homework rw - ext4 /dev/sdb1 rw\n"
    )
    assert _mount_source("/home/me/model.img", mountinfo) == "/dev/nvme0n1p3"
    assert _mount_source("/home/a b/x.img", mountinfo) == "tmpfs"
    assert _mount_source("/homework/x.img", mountinfo) == "/dev/sdb1"
    assert _mount_source("/tmp/x.img", mountinfo) == "overlay"
    assert _mount_source("/tmp/x.img", "") is None


def test_a_host_with_no_disk_is_refused_not_run_unslowed(tmp_path: Path) -> None:
    with pytest.raises(LimitError, match=r"--read-bps 1\.0MiB/s: no disk here takes a throttle"):
        docker_rates(Limits(read_bps="1m"), tmp_path)


def test_a_remote_docker_daemon_is_refused_a_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its disks are another machine's: this host's /sys/block names none of them."""
    be = DockerBackend.__new__(DockerBackend)  # no daemon: launch refuses before asking one
    be._exact, be.image = False, "img"
    monkeypatch.setattr(be, "_local_socket", lambda: False)
    with pytest.raises(LimitError, match=r"--write-bps 8\.0MiB/s: the Docker daemon is on an"):
        be.launch(v1_spec(Limits(write_bps="8m")))


def test_v1_writes_the_rates_and_warns_of_buffered_writes(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    host = v1_tree(cgfs, tmp_path)
    with host.backend().launch(v1_spec(Limits(read_bps="40m", write_bps="8m"))) as run:
        # every disk with media, in name order (the fake host's nvme0n1 and sda)
        assert cgfs.written("blkio.throttle.read_bps_device") == [
            f"259:0 {40 * MiB}", f"8:0 {40 * MiB}"]  # fmt: skip
        assert cgfs.written("blkio.throttle.write_bps_device") == [
            f"259:0 {8 * MiB}", f"8:0 {8 * MiB}"]  # fmt: skip
        now = run.limits_now()
        assert now is not None and (now.read_bps, now.write_bps) == (40 * MiB, 8 * MiB)
        # A workload running as root lifts its read rule on one disk ("8:0 0" removes it).
        (rules,) = [g / "blkio.throttle.read_bps_device" for g in cgfs.run_groups()
                    if (g / "blkio.throttle.read_bps_device").exists()]  # fmt: skip
        rules.write_text(f"259:0 {40 * MiB}\n")
        now = run.limits_now()
        assert now is not None and (now.read_bps, now.write_bps) == (UNLIMITED, 8 * MiB)
        run.wait(10)
        cgfs.processes_exited()
    assert run.warnings == [buffered_writes(Limits(write_bps="8m"))]
    assert run.warnings[0].startswith("--write-bps on cgroup v1 slows only the writes the run")


def test_v1_a_read_rate_alone_leaves_writes_unthrottled(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    host = v1_tree(cgfs, tmp_path)
    with host.backend().launch(v1_spec(Limits(read_bps="40m"))) as run:
        assert cgfs.written("blkio.throttle.write_bps_device") == [
            f"259:0 {NO_THROTTLE_BPS}", f"8:0 {NO_THROTTLE_BPS}"]  # fmt: skip
        now = run.limits_now()  # the 1 TiB/s rule is no limit asked: not read back
        assert now is not None and (now.read_bps, now.write_bps) == (40 * MiB, None)
        run.wait(10)
        cgfs.processes_exited()
    assert run.warnings == []  # no write rate: nothing about writes to say


def test_v1_no_disk_taking_a_rule_is_refused(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    host = v1_tree(cgfs, tmp_path)
    cgfs.refuse["blkio.throttle.read_bps_device"] = errno.ENODEV
    cgfs.refuse["blkio.throttle.write_bps_device"] = errno.ENODEV
    with pytest.raises(LimitError, match="no disk here takes a throttle rule"):
        host.backend().launch(v1_spec(Limits(read_bps="40m")))
    assert cgfs.run_groups() == []  # created, then removed


def test_v1_without_blkio_is_refused(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    host = v1_tree(cgfs, tmp_path, comount=False, without=("blkio",))
    with pytest.raises(LimitError, match="--write-bps needs the blkio controller"):
        host.backend().launch(v1_spec(Limits(write_bps="8m")))
    assert cgfs.run_groups() == []


def _sys_block(tmp_path: Path) -> Path:
    sys_block = tmp_path / "sys_block"
    for name, dev in (("nvme0n1", "259:0"), ("sda", "8:0")):
        (sys_block / name).mkdir(parents=True)
        (sys_block / name / "dev").write_text(dev + "\n")
        (sys_block / name / "size").write_text("2048\n")
    return sys_block


def test_v2_writes_io_max_for_every_disk(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    be = backend(root, psc, sys_block=_sys_block(tmp_path))
    run = be.launch(spec(Limits(read_bps="40m", write_bps="8m")))
    try:
        only_run_group(cgfs)
        rule = f"rbps={40 * MiB} wbps={8 * MiB}"
        assert cgfs.written("io.max") == [f"259:0 {rule}", f"8:0 {rule}"]
        now = run.limits_now()
        assert now is not None and (now.read_bps, now.write_bps) == (40 * MiB, 8 * MiB)
        # The workload raises its write rate on one disk: the loosest rule is read back.
        io_max = only_run_group(cgfs) / "io.max"
        io_max.write_text(f"259:0 {rule}\n8:0 rbps={40 * MiB} wbps={64 * MiB}\n")
        now = run.limits_now()
        assert now is not None and (now.read_bps, now.write_bps) == (40 * MiB, 64 * MiB)
        assert run.wait(10) == 0
    finally:
        cgfs.processes_exited()
        run.close()
    assert run.warnings == []  # v2 slows buffered writes too: nothing to warn of


def test_v2_without_the_io_controller_or_a_disk_is_refused(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    root, psc = v2_tree(cgfs, tmp_path, controllers="cpu memory pids")
    be = backend(root, psc, sys_block=_sys_block(tmp_path))
    with pytest.raises(LimitError, match="--read-bps needs the io controller"):
        be.launch(spec(Limits(read_bps="40m")))
    root, psc = v2_tree(cgfs, tmp_path / "b")
    be = backend(root, psc, sys_block=tmp_path / "empty")
    with pytest.raises(LimitError, match=r"--write-bps 8\.0MiB/s: no disk here"):
        be.launch(spec(Limits(write_bps="8m")))
    assert cgfs.run_groups() == []


def test_v2_a_run_without_a_rate_writes_no_rule(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    run = backend(root, psc, sys_block=_sys_block(tmp_path)).launch(spec())
    try:
        assert cgfs.written("io.max") == []
        now = run.limits_now()
        assert now is not None and (now.read_bps, now.write_bps) == (None, None)
        assert run.wait(10) == 0
    finally:
        cgfs.processes_exited()
        run.close()


def test_the_io_wait_under_a_rate_is_the_rates() -> None:
    io = IoStats(
        read_bytes=24 * MiB, write_bytes=0, net_rx_bytes=None, net_tx_bytes=None,
        stall_s=2.74, stall_full_s=2.74,
    )
    plain = io_stall_warning(io, 3.11)
    assert plain is not None and "this host's storage's" in plain
    slowed = io_stall_warning(io, 3.11, Limits(read_bps="8m"))
    assert slowed is not None and "with the storage at read 8.0MiB/s as asked" in slowed
    assert "this host's storage's" not in slowed


@pytest.mark.parametrize(
    ("args", "said"),
    [(["--read-bps", "40"], "--read-bps: invalid read rate '40': '40' has no unit"),
     (["--write-bps", "0m"], "--write-bps: invalid write rate '0m'")],
)  # fmt: skip
def test_the_cli_refuses_a_bad_rate_with_exit_2(
    capfd: pytest.CaptureFixture[str], args: list[str], said: str, tmp_path: Path
) -> None:
    rc = main(["run", "--backend", "fake", "--out", str(tmp_path / "o"), *args, "--", "true"])
    err = capfd.readouterr().err
    assert rc == 2 and said in err, err
    assert not (tmp_path / "o").exists()  # bad input changes nothing


def test_the_rules_are_parsed_per_disk() -> None:
    v2 = (f"254:0 rbps={MiB} wbps=max riops=max wiops=max\n"
          "8:0 rbps=max wbps=4096 riops=9 wiops=max\n")  # fmt: skip
    assert parse_throttle_rules(v2, "rbps") == {"254:0": MiB}
    assert parse_throttle_rules(v2, "wbps") == {"8:0": 4096}
    assert parse_throttle_rules(f"254:0 {MiB}\n8:0 1099511627776\n") == {
        "254:0": MiB, "8:0": 2**40}  # fmt: skip
    assert parse_throttle_rules("") == {}


def test_a_lifted_or_raised_rate_is_a_change_named_in_a_warning() -> None:
    lim = Limits(read_bps="8m", write_bps="4m")
    held = LimitReading(read_bps=8 * MiB, write_bps=4 * MiB)
    assert limit_changes(lim, 100_000, held) == ()
    lifted = LimitReading(read_bps=UNLIMITED, write_bps=16 * MiB)
    changes = limit_changes(lim, 100_000, lifted)
    assert changes == (LimitChange("read_bps", 8 * MiB, None),
                       LimitChange("write_bps", 4 * MiB, 16 * MiB))  # fmt: skip
    assert change_warning(changes[0], 100_000).startswith(
        "the workload changed its storage read speed from 8.0MiB/s to unlimited during the run"
    )
    assert "write speed from 4.0MiB/s to 16.0MiB/s" in change_warning(changes[1], 100_000)
    # Not read (no rate asked, or no file): unchanged.
    assert limit_changes(Limits(), 100_000, LimitReading()) == ()


def _board(tmp_path: Path, rates: str = "    read_bps: 40m\n    write_bps: 20m/s\n") -> Path:
    tmp_path.mkdir(exist_ok=True)
    cat = tmp_path / "boards.yml"
    cat.write_text("devices:\n  card:\n    cores: 2\n    memory: 64m\n" + rates)
    return cat


RUN = ["run", "--backend", "fake", "--interval", "0.01"]


def test_a_devices_storage_speed_is_its_runs(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = _board(tmp_path)
    assert main([*RUN, "--device", "card", "--devices", str(cat), "--json", "--", "true"]) == 0
    d = json.loads(capfd.readouterr().out)
    assert (d["limits"]["read_bps"], d["limits"]["write_bps"]) == (40 * MiB, 20 * MiB)
    assert main(["devices", "--devices", str(cat)]) == 0
    (row,) = [ln for ln in capfd.readouterr().out.splitlines() if ln.startswith("card ")]
    assert "read 40.0MiB/s, write 20.0MiB/s" in row
    assert main(["devices", "--devices", str(cat), "--json"]) == 0
    (card,) = [e for e in json.loads(capfd.readouterr().out) if e["name"] == "card"]
    assert (card["read_bps"], card["write_bps"]) == (40 * MiB, 20 * MiB)


def test_an_option_replaces_the_devices_rate_and_says_so(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = _board(tmp_path)
    args = ["--device", "card", "--devices", str(cat), "--read-bps", "8m", "--json", "--", "true"]
    assert main([*RUN, *args]) == 0
    out, err = capfd.readouterr()
    d = json.loads(out)
    assert (d["limits"]["read_bps"], d["limits"]["write_bps"]) == (8 * MiB, 20 * MiB)
    assert "edgeprof: warning: --read-bps 8m replaces card's 40.0MiB/s" in err
    assert d["device_replaced"] == ["--read-bps"]
    # The library's device= takes the caller's Limits the same way.
    r = edgeprof.profile(["true"], Limits(write_bps="4m"), backend="fake", device="card",
                         devices=cat, interval=0.01)  # fmt: skip
    assert (r.limits.read_bps, r.limits.write_bps) == (40 * MiB, 4 * MiB)
    assert "--write-bps 4.0MiB/s replaces card's 20.0MiB/s" in r.warnings
    assert r.device_replaced == ("--write-bps",)
    # A rate where the entry has none replaces nothing, and is not recorded as replacing.
    bare = _board(tmp_path / "bare", "")
    args = ["--device", "card", "--devices", str(bare), "--write-bps", "8m", "--json", "--", "true"]
    assert main([*RUN, *args]) == 0
    out, err = capfd.readouterr()
    d = json.loads(out)
    assert (d["limits"]["read_bps"], d["limits"]["write_bps"]) == (None, 8 * MiB)
    assert d.get("device_replaced", []) == [] and "replaces card's" not in err


def test_a_bad_rate_in_a_catalog_names_its_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = _board(tmp_path, "    read_bps: fast\n")
    assert main([*RUN, "--device", "card", "--devices", str(cat), "--", "true"]) == 2
    err = capfd.readouterr().err
    assert f"device catalog {cat}: device 'card': key 'read_bps': invalid read rate" in err


def test_compare_picks_a_setting_by_its_rate() -> None:
    """``compare --setting read=40m`` names the setting as its label spells it."""
    from edgeprof.analysis.cells import in_setting, setting_spec

    spec = setting_spec("read=40m,write=20m/s")
    assert spec == {"read": "40.0MiB/s", "write": "20.0MiB/s"}
    label = Limits(memory="64m", read_bps="40m", write_bps="20m").describe()
    assert in_setting(label, spec)
    assert not in_setting(Limits(memory="64m", read_bps="8m").describe(), spec)
