"""The storage's limits as a sweep's settings (``run --read-bps 10m,40m``), as ``--cpus``
and ``--memory`` are: the product in the order given, refused one line at a time, replacing a
device's, and one setting to ``fit`` and ``bench``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.cli.runargs import parse, run_request
from edgeprof.errors import ConfigError
from edgeprof.model import Limits
from edgeprof.resultfiles import load_runs
from edgeprof.sweeps.labels import limit_settings
from edgeprof.sweeps.plan import SweepPlan
from edgeprof.sweeps.request import RunRequest, plan_run

from .test_storage_speed import RUN, _board

MiB = 2**20


def test_storage_lists_are_the_product_after_the_memory() -> None:
    got = limit_settings(
        ["2,1"], memory=["1g"], storage={"read_bps": ["10m,40m"], "read_iops": ["1500"]}
    )
    assert [lim.describe() for lim in got] == [
        "cpus=2, memory=1.0GiB, read=10.0MiB/s, read-iops=1500 IOPS",
        "cpus=2, memory=1.0GiB, read=40.0MiB/s, read-iops=1500 IOPS",
        "cpus=1, memory=1.0GiB, read=10.0MiB/s, read-iops=1500 IOPS",
        "cpus=1, memory=1.0GiB, read=40.0MiB/s, read-iops=1500 IOPS",
    ]
    both = {"write_bps": ["20m", "5m"], "write_iops": ["500,2000"]}
    assert [(s.write_bps, s.write_iops) for s in limit_settings(storage=both)] == [
        (20 * MiB, 500), (20 * MiB, 2000), (5 * MiB, 500), (5 * MiB, 2000)]  # fmt: skip
    # Repeating an option is a comma list; none given is no limit.
    assert limit_settings(storage={"read_bps": ["10m", "40m"]}) == limit_settings(
        storage={"read_bps": ["10m,40m"]}
    )
    assert limit_settings(storage={"read_bps": []}) == (Limits(),)


@pytest.mark.parametrize(
    ("storage", "said"),
    [({"read_bps": ["10m,,40m"]}, "^--read-bps '10m,,40m': empty value in the list$"),
     ({"read_iops": ["1500,0"]}, "^--read-iops: invalid read IOPS limit '0'"),
     ({"write_bps": ["fast"]}, "^--write-bps: invalid write rate 'fast'"),
     ({"read_bps": ["10m,10m"]}, "'read=10.0MiB/s' is listed twice")],
)  # fmt: skip
def test_a_bad_storage_list_names_its_option(storage: dict[str, list[str]], said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        SweepPlan(("true",), limits=limit_settings(storage=storage))


def test_the_fast_parser_reads_storage_lists_as_typer_does() -> None:
    words = ["--read-bps", "10m", "--read-bps", "40m", "--write-iops", "500,2000", "--", "true"]
    params = parse(words)
    assert params is not None  # the plain forms: the fast path reads them
    req = run_request(params)
    assert (req.read_bps, req.write_iops, req.read_iops) == (("10m", "40m"), ("500,2000",), ())
    plan = plan_run(req).plan
    assert [(s.read_bps, s.write_iops) for s in plan.limits] == [
        (10 * MiB, 500), (10 * MiB, 2000), (40 * MiB, 500), (40 * MiB, 2000)]  # fmt: skip


def test_a_process_limit_holds_in_every_storage_setting() -> None:
    plan = plan_run(RunRequest(command=("true",), pids="64", read_iops=("1500,4000",))).plan
    assert [(s.pids, s.read_iops) for s in plan.limits] == [(64, 1500), (64, 4000)]


def test_a_sweep_of_card_speeds_runs_each_setting(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cards"
    argv = [*RUN, "--read-bps", "10m,40m", "--read-iops", "1500", "--out", str(out), "--"]
    assert main([*argv, "true"]) == 0
    runs = load_runs([out])
    assert sorted((r.limits.read_bps, r.limits.read_iops) for r in runs) == [
        (10 * MiB, 1500), (40 * MiB, 1500)]  # fmt: skip
    shown = capfd.readouterr().out
    assert "read=10.0MiB/s, read-iops=1500 IOPS" in shown, shown
    assert "read=40.0MiB/s, read-iops=1500 IOPS" in shown, shown
    recorded = json.loads((out / "sweep.json").read_text())["limits"]
    assert recorded == [
        "read=10.0MiB/s, read-iops=1500 IOPS", "read=40.0MiB/s, read-iops=1500 IOPS"]  # fmt: skip


def test_a_list_replaces_a_devices_speed_in_each_setting(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = _board(tmp_path, "    read_bps: 40m\n    write_bps: 20m\n")
    out = tmp_path / "board"
    args = ["--device", "card", "--devices", str(cat), "--read-bps", "10m,40m", "--out", str(out)]
    assert main([*RUN, *args, "--", "true"]) == 0
    err = capfd.readouterr().err
    assert "--read-bps 10m,40m replaces card's 40.0MiB/s" in err, err
    runs = load_runs([out])
    # The device's write speed stays in every setting; its read speed is the list's.
    assert sorted((r.limits.read_bps, r.limits.write_bps) for r in runs) == [
        (10 * MiB, 20 * MiB), (40 * MiB, 20 * MiB)]  # fmt: skip
    assert {tuple(r.device_replaced) for r in runs} == {("--read-bps",)}


@pytest.mark.parametrize(
    ("command", "said"),
    [(["fit"], "--read-bps 10m,40m: edgeprof fit takes one storage read speed: fit once per "
      "value (--read-bps 10m, then --read-bps 40m)"),
     (["bench", "m.py:f"], "--read-bps 10m,40m: edgeprof bench takes one storage read speed: "
      "bench once per value (--read-bps 10m, then --read-bps 40m), or sweep them with "
      "edgeprof run --read-bps 10m,40m -- COMMAND")],
)  # fmt: skip
def test_one_setting_commands_refuse_a_storage_list(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], command: list[str], said: str
) -> None:
    out = tmp_path / "o"
    argv = [*command, "--backend", "fake", "--read-bps", "10m,40m", "--out", str(out)]
    assert main([*argv, *(["--", "true"] if command == ["fit"] else [])]) == 2
    err = capfd.readouterr().err
    assert said in err, err
    assert not out.exists()


def test_compare_takes_a_setting_as_the_limits_column_writes_it() -> None:
    """``read-iops=4000 IOPS``, copied from a table (or the hint below), had been refused as
    "invalid read IOPS limit '4000 IOPS'"; the hint had named two of a sweep's settings."""
    from edgeprof.analysis.cells import in_setting, setting_spec
    from edgeprof.analysis.regression import compare_results

    from .gating_helpers import run

    label = Limits(read_bps="9.5m", read_iops=4000).describe()
    assert in_setting(label, setting_spec("read=9.5MiB/s, read-iops=4000 IOPS"))
    assert not in_setting(label, setting_spec("read-iops=1500 IOPS"))
    sweep = [run(cpus=c) for c in (1, 2, 4)]
    with pytest.raises(ConfigError) as err:
        compare_results(sweep, [run(cpus=1)], match_limits=False)
    said = str(err.value)
    assert all(f"cpus={c}, memory=1.0GiB" in said for c in (1, 2, 4)), said
