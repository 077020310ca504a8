"""A storage request rate (``--read-iops``, ``--write-iops``): parsed once, labelled, kept in
result.json, asked of every disk as each backend's kernel interface takes it, read back, and
taken from a device entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgeprof.analysis.cells import in_setting, setting_spec
from edgeprof.backends._disks import buffered_writes, docker_rates, storage_limits
from edgeprof.backends.capabilities import UNLIMITED, LimitReading
from edgeprof.backends.cgroup_v1 import NO_THROTTLE_BPS
from edgeprof.cli import main
from edgeprof.errors import ConfigError, LimitError
from edgeprof.measure.io_stall import io_stall_warning
from edgeprof.measure.limit_changes import change_warning, limit_changes
from edgeprof.model import STORAGE, IoStats, LimitChange, Limits
from edgeprof.units import MAX_IOPS, parse_iops

from .conftest import FakeCgroupFs, make_result
from .test_backend_cgroup_v1 import spec as v1_spec
from .test_backend_cgroup_v1 import v1_tree
from .test_backend_cgroup_v2 import backend, only_run_group, spec, v2_tree
from .test_storage_speed import RUN, _board, _sys_block

MiB = 2**20


@pytest.mark.parametrize(
    ("text", "iops"),
    [("1500", 1500), ("1500/s", 1500), (" 500 /s ", 500), ("007", 7), (4000, 4000),
     (str(MAX_IOPS), MAX_IOPS)],
)  # fmt: skip
def test_an_iops_limit_is_requests_a_second(text: str | int, iops: int) -> None:
    assert parse_iops(text) == iops


@pytest.mark.parametrize(
    ("text", "said"),
    [("0", "must be between 1 and 4294967294"), (0, "must be between 1"),
     ("1.5k", "expected requests a second"), ("fast", "expected requests a second"),
     ("-3", "expected requests a second"), (True, "expected requests a second"),
     (str(2**32 - 1), "must be between 1 and 4294967294"), ("9" * 5000, "must be between"),
     ("١٥", "expected requests a second")],
)  # fmt: skip
def test_a_bad_iops_limit_says_why(text: str | int, said: str) -> None:
    with pytest.raises(ConfigError, match="invalid storage IOPS limit") as exc:
        parse_iops(text)
    assert said in str(exc.value)


def test_the_four_limits_name_themselves_in_every_layer() -> None:
    assert [(s.option, s.kernel, s.v1_file, s.docker, s.label) for s in STORAGE] == [
        ("--read-bps", "rbps", "blkio.throttle.read_bps_device", "BlkioDeviceReadBps", "read"),
        ("--write-bps", "wbps", "blkio.throttle.write_bps_device", "BlkioDeviceWriteBps",
         "write"),
        ("--read-iops", "riops", "blkio.throttle.read_iops_device", "BlkioDeviceReadIOps",
         "read-iops"),
        ("--write-iops", "wiops", "blkio.throttle.write_iops_device", "BlkioDeviceWriteIOps",
         "write-iops"),
    ]  # fmt: skip


def test_an_iops_limit_is_in_the_label_and_result_json() -> None:
    lim = Limits(read_bps="10m", read_iops="1500", write_iops=500)
    assert lim.describe() == "read=10.0MiB/s, read-iops=1500 IOPS, write-iops=500 IOPS"
    assert storage_limits(lim) == (
        "--read-bps 10.0MiB/s and --read-iops 1500 IOPS and --write-iops 500 IOPS"
    )
    r = make_result(limits=lim)
    d = r.to_dict()
    assert (d["limits"]["read_iops"], d["limits"]["write_iops"]) == (1500, 500)
    assert type(r).from_dict(json.loads(json.dumps(d))).limits == lim
    old = {**d, "limits": {k: v for k, v in d["limits"].items() if not k.endswith("_iops")}}
    assert type(r).from_dict(old).limits == Limits(read_bps="10m")  # a file from before
    # compare --setting picks the setting as its label spells it
    picked = setting_spec("read-iops=1500")
    assert picked == {"read-iops": "1500 IOPS"}
    assert in_setting(lim.describe(), picked)
    assert not in_setting(Limits(read_iops=4000).describe(), picked)


def test_v1_writes_the_iops_rules_beside_the_byte_rules(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    host = v1_tree(cgfs, tmp_path)
    with host.backend().launch(v1_spec(Limits(read_iops=1500, write_iops=500))) as run:
        # every disk with media (the fake host's nvme0n1 and sda); the byte rules stay the
        # never-reached ones that have the group's I/O counted
        assert cgfs.written("blkio.throttle.read_iops_device") == ["259:0 1500", "8:0 1500"]
        assert cgfs.written("blkio.throttle.write_iops_device") == ["259:0 500", "8:0 500"]
        assert cgfs.written("blkio.throttle.read_bps_device") == [
            f"259:0 {NO_THROTTLE_BPS}", f"8:0 {NO_THROTTLE_BPS}"]  # fmt: skip
        now = run.limits_now()
        assert now is not None
        assert (now.read_iops, now.write_iops, now.read_bps) == (1500, 500, None)
        # A workload running as root lifts its read rule on one disk.
        (rules,) = [g / "blkio.throttle.read_iops_device" for g in cgfs.run_groups()
                    if (g / "blkio.throttle.read_iops_device").exists()]  # fmt: skip
        rules.write_text("259:0 1500\n")
        now = run.limits_now()
        assert now is not None and (now.read_iops, now.write_iops) == (UNLIMITED, 500)
        run.wait(10)
        cgfs.processes_exited()
    assert run.warnings == [buffered_writes(Limits(write_iops=500))]
    assert run.warnings[0].startswith("--write-iops on cgroup v1 slows only the writes")


def test_v1_a_run_without_an_iops_limit_writes_no_iops_rule(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    host = v1_tree(cgfs, tmp_path)
    with host.backend().launch(v1_spec(Limits(read_bps="40m"))) as run:
        assert cgfs.written("blkio.throttle.read_iops_device") == []
        assert cgfs.written("blkio.throttle.write_iops_device") == []
        run.wait(10)
        cgfs.processes_exited()


def test_v2_writes_every_limit_in_one_io_max_line_a_disk(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    root, psc = v2_tree(cgfs, tmp_path)
    be = backend(root, psc, sys_block=_sys_block(tmp_path))
    run = be.launch(spec(Limits(write_bps="8m", read_iops=1500, write_iops=500)))
    try:
        rule = f"wbps={8 * MiB} riops=1500 wiops=500"
        assert cgfs.written("io.max") == [f"259:0 {rule}", f"8:0 {rule}"]
        now = run.limits_now()
        assert now is not None
        assert (now.read_bps, now.write_bps, now.read_iops, now.write_iops) == (
            UNLIMITED, 8 * MiB, 1500, 500)  # fmt: skip
        # The workload raises its read IOPS on one disk: the loosest rule is read back.
        io_max = only_run_group(cgfs) / "io.max"
        io_max.write_text(f"259:0 {rule}\n8:0 wbps={8 * MiB} riops=9000 wiops=500\n")
        now = run.limits_now()
        assert now is not None and (now.read_iops, now.write_iops) == (9000, 500)
        assert run.wait(10) == 0
    finally:
        cgfs.processes_exited()
        run.close()
    assert run.warnings == []


def test_v2_without_the_io_controller_names_the_iops_option(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    root, psc = v2_tree(cgfs, tmp_path, controllers="cpu memory pids")
    be = backend(root, psc, sys_block=_sys_block(tmp_path))
    with pytest.raises(LimitError, match="--read-iops needs the io controller"):
        be.launch(spec(Limits(read_iops=1500)))
    assert cgfs.run_groups() == []


def test_docker_asks_the_daemon_per_disk_node(tmp_path: Path) -> None:
    sys_block = _sys_block(tmp_path)
    assert docker_rates(Limits(read_iops=1500, write_bps="8m"), sys_block) == {
        "BlkioDeviceWriteBps": [{"Path": "/dev/nvme0n1", "Rate": 8 * MiB},
                                {"Path": "/dev/sda", "Rate": 8 * MiB}],
        "BlkioDeviceReadIOps": [{"Path": "/dev/nvme0n1", "Rate": 1500},
                                {"Path": "/dev/sda", "Rate": 1500}],
    }  # fmt: skip
    with pytest.raises(LimitError, match="--write-iops 500 IOPS: no disk here takes a throttle"):
        docker_rates(Limits(write_iops=500), tmp_path / "empty")


def test_a_lifted_iops_limit_is_a_change_named_in_a_warning() -> None:
    lim = Limits(read_iops=1500, write_iops=500)
    assert limit_changes(lim, 100_000, LimitReading(read_iops=1500, write_iops=500)) == ()
    changes = limit_changes(lim, 100_000, LimitReading(read_iops=UNLIMITED, write_iops=2000))
    assert changes == (LimitChange("read_iops", 1500, None), LimitChange("write_iops", 500, 2000))
    assert change_warning(changes[0], 100_000).startswith(
        "the workload changed its storage read IOPS from 1500 IOPS to unlimited during the run"
    )
    assert "write IOPS from 500 IOPS to 2000 IOPS" in change_warning(changes[1], 100_000)


def test_the_io_wait_under_an_iops_limit_is_the_limits() -> None:
    io = IoStats(read_bytes=4 * MiB, write_bytes=0, net_rx_bytes=None, net_tx_bytes=None,
                 stall_s=1.83, stall_full_s=1.83)  # fmt: skip
    said = io_stall_warning(io, 1.9, Limits(read_iops=500))
    assert said is not None and "with the storage at read 500 IOPS as asked" in said


@pytest.mark.parametrize(
    ("args", "said"),
    [(["fake", "--read-iops", "0"],
      "--read-iops: invalid read IOPS limit '0': must be between 1"),
     (["fake", "--write-iops", "5k"],
      "--write-iops: invalid write IOPS limit '5k': expected requests"),
     (["process", "--read-iops", "1500"],
      "--read-iops 1500 IOPS: the process backend cannot slow storage")],
)  # fmt: skip
def test_the_cli_refuses_a_bad_iops_limit_with_exit_2(
    capfd: pytest.CaptureFixture[str], args: list[str], said: str, tmp_path: Path
) -> None:
    rc = main(["run", "--out", str(tmp_path / "o"), "--backend", *args, "--", "true"])
    err = capfd.readouterr().err
    assert rc == 2 and said in err, err
    assert not (tmp_path / "o").exists()  # bad input changes nothing


def test_a_devices_iops_are_its_runs_and_an_option_replaces_them(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = _board(tmp_path, "    read_bps: 10m\n    read_iops: 1500\n    write_iops: 500/s\n")
    assert main([*RUN, "--device", "card", "--devices", str(cat), "--json", "--", "true"]) == 0
    d = json.loads(capfd.readouterr().out)
    assert (d["limits"]["read_bps"], d["limits"]["read_iops"], d["limits"]["write_iops"]) == (
        10 * MiB, 1500, 500)  # fmt: skip
    args = ["--device", "card", "--devices", str(cat), "--read-iops", "4000", "--json", "--"]
    assert main([*RUN, *args, "true"]) == 0
    out, err = capfd.readouterr()
    d = json.loads(out)
    assert (d["limits"]["read_iops"], d["limits"]["write_iops"]) == (4000, 500)
    assert "edgeprof: warning: --read-iops 4000 replaces card's 1500 IOPS" in err
    assert d["device_replaced"] == ["--read-iops"]
    assert main(["devices", "--devices", str(cat)]) == 0
    (row,) = [ln for ln in capfd.readouterr().out.splitlines() if ln.startswith("card ")]
    assert "read 10.0MiB/s, read 1500 IOPS, write 500 IOPS" in row
    assert main(["devices", "--devices", str(cat), "--json"]) == 0
    (card,) = [e for e in json.loads(capfd.readouterr().out) if e["name"] == "card"]
    assert (card["read_iops"], card["write_iops"]) == (1500, 500)


def test_a_bad_iops_limit_in_a_catalog_names_its_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = _board(tmp_path, "    write_iops: many\n")
    assert main([*RUN, "--device", "card", "--devices", str(cat), "--", "true"]) == 2
    err = capfd.readouterr().err
    assert "device 'card': key 'write_iops': invalid write IOPS limit 'many'" in err


def test_the_library_takes_iops_limits(tmp_path: Path) -> None:
    import edgeprof

    r = edgeprof.profile(["true"], Limits(read_iops=1500), backend="fake", interval=0.01)
    assert r.limits.read_iops == 1500
    with pytest.raises(ConfigError, match="invalid write IOPS limit"):
        Limits(write_iops="none")


def test_fit_takes_the_iops_options(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """fit's options reach the request (its refusal names the option, before any run)."""
    out = tmp_path / "fit"
    argv = ["fit", "--backend", "fake", "--out", str(out), "--write-iops", "none", "--", "true"]
    assert main(argv) == 2
    assert "--write-iops: invalid write IOPS limit 'none'" in capfd.readouterr().err
    assert not out.exists()
