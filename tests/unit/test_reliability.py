"""Owners of run groups and containers, the stale-resource rules of gc, --pids, privilege."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from edgeprof.backends import owner
from edgeprof.backends.capabilities import CleanupScope
from edgeprof.backends.docker.engine import DaemonError
from edgeprof.errors import BackendError, ConfigError
from edgeprof.measure import gc
from edgeprof.measure.doctor import Finding
from edgeprof.measure.privilege import workload_user
from edgeprof.model import Limits, UserIds

from .conftest import IMPOSSIBLE_PID, make_result


def fake_proc(tmp_path: Path, pid: int, state: str, start: int) -> Path:
    proc = tmp_path / "proc"
    (proc / str(pid)).mkdir(parents=True, exist_ok=True)
    rest = " ".join(["0"] * 18)  # fields 4-21; the start time is field 22
    # field 2 with a space and a ")" in the name, as a hostile program name could be
    (proc / str(pid) / "stat").write_text(f"{pid} (a b) c) {state} {rest} {start} 0 0\n")
    return proc


def test_names_carry_pid_and_start_time_and_parse_back() -> None:
    name = owner.run_name()
    me = owner.this_process()
    assert me.start is not None and me.start > 0
    assert name.startswith(f"edgeprof-{os.getpid()}-{me.start}-")
    assert owner.owner_of(name) == me
    assert owner.alive(me)
    # the name before start times: judged by the pid alone
    assert owner.owner_of("edgeprof-42-0123abcd") == owner.Owner(42, None)
    assert owner.owner_of("edgeprof-42-7-12345678") == owner.Owner(42, 7)
    for not_ours in ("edgeprof-self", "edgeprof", "edgeprof-docker-12", "edgeprof-1-2-XYZ12345"):
        assert owner.owner_of(not_ours) is None


def test_a_reused_pid_is_not_the_owner(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, 300, "S", start=5000)
    assert owner.start_time(300, proc) == 5000
    assert owner.alive(owner.Owner(300, 5000), proc)
    assert not owner.alive(owner.Owner(300, 4999), proc)  # another process under that pid
    assert owner.alive(owner.Owner(300, None), proc)  # pid-only names: the pid decides
    fake_proc(tmp_path, 301, "Z", start=7)
    assert not owner.alive(owner.Owner(301, 7), proc)  # a zombie is dead
    assert not owner.alive(owner.Owner(302, 7), proc)


def test_stale_groups_are_found_in_every_hierarchy_and_live_ones_kept(tmp_path: Path) -> None:
    me = owner.this_process()
    root = tmp_path / "cg"
    dead = f"edgeprof-{IMPOSSIBLE_PID}-1-0000abcd"
    reused = f"edgeprof-{os.getpid()}-{(me.start or 0) + 1}-0000abce"  # our pid, not us
    live = owner.run_name(me)
    for h in ("memory/own", "cpu"):
        for n in (dead, reused, live, "other"):
            (root / h / n).mkdir(parents=True)
    (root / "memory/own" / dead / "0123container").mkdir()  # a Docker run's container group
    found = gc.stale_groups([root])
    names = {p.name for p in found}
    assert names == {dead, reused, "0123container"}
    assert len(found) == 5
    assert found[0].name == "0123container"  # deepest first, as rmdir needs


def test_doctor_names_the_leftovers_of_dead_runs(tmp_path: Path) -> None:
    from edgeprof.measure.doctor import dead_runs

    root = tmp_path / "cg"
    live = owner.run_name(owner.this_process())
    (root / "cpu" / live).mkdir(parents=True)
    none = Finding("dead runs", True, "no groups left by an edgeprof that died")
    assert dead_runs([root]) == none  # a live run's group is not a leftover
    dead = f"edgeprof-{IMPOSSIBLE_PID}-1-0000abcd"
    for h in ("memory", "cpu", "pids"):
        (root / h / dead).mkdir(parents=True)
    found = dead_runs([root])
    assert (found.topic, found.ok) == ("dead runs", False)
    assert found.detail == (
        f"3 cgroup(s) of 1 run(s) whose edgeprof died ({dead}); every run removes them as it "
        "starts"
    )
    assert found.fix is not None and found.fix.startswith("edgeprof gc")


def test_a_dead_docker_runs_slice_is_stopped_and_a_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The systemd cgroup driver's slice (a Docker run's parent) carries its run's name, its
    "-" as "_": gc stops a dead run's through systemctl (systemd then removes it) and
    leaves a live run's and systemd's own."""
    me = owner.this_process()
    live = owner.slice_unit(owner.run_name(me))
    assert live.startswith(f"edgeprof_{os.getpid()}_{me.start}_") and live.endswith(".slice")
    assert owner.slice_owner(live) == me
    dead = owner.slice_unit(f"edgeprof-{IMPOSSIBLE_PID}-1-0000abcd")
    root = tmp_path / "cg"
    for n in (live, dead, "system.slice", "edgeprof.slice", "edgeprof_1_2_3.slice"):
        (root / n).mkdir(parents=True)
    (root / "edgeprof_9_9_0000abcd.slice").write_text("")  # a file, not a group
    assert gc.stale_slices([root]) == [dead]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\n')
    (bin_dir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    assert gc.remove_slices([dead]) == [f"stopped slice {dead}"]
    assert (tmp_path / "calls").read_text() == f"stop {dead}\n"


def test_a_dead_runs_events_directory_is_collected_and_nothing_else(tmp_path: Path) -> None:
    """A container run's FIFO directory carries its owner: ``edgeprof gc`` removes a dead
    run's (its FIFO and itself) and leaves a live run's, a reused pid's owner's name taken
    by another process, and anything whose name is not an events directory's."""
    me = owner.this_process()
    assert owner.events_dir_owner(owner.events_dir_prefix() + "x1y2") == me
    dead = tmp_path / f"edgeprof-events-{IMPOSSIBLE_PID}-1-abc"
    live = tmp_path / (owner.events_dir_prefix(me) + "abc")
    for d in (
        dead,
        live,
        tmp_path / "edgeprof-events-abc",
        tmp_path / f"edgeprof-{IMPOSSIBLE_PID}-1-0000abcd",
    ):
        d.mkdir()
        os.mkfifo(d / "events")
    (tmp_path / f"edgeprof-events-{IMPOSSIBLE_PID}-1-file").write_text("not a directory")
    assert gc.stale_event_dirs(tmp_path) == [dead]
    assert gc.remove_event_dirs([dead]) == [f"removed events directory {dead}"]
    assert not dead.exists() and (live / "events").exists()
    # Something else in it was not edgeprof's: it stays, said in one line.
    dead.mkdir()
    (dead / "kept").write_text("")
    [line] = gc.remove_event_dirs(gc.stale_event_dirs(tmp_path))
    assert line.startswith(f"cannot remove events directory {dead}: ") and (dead / "kept").exists()


@pytest.mark.parametrize(
    ("labels", "stale"),
    [
        ({"org.edgeprof.owner": f"{IMPOSSIBLE_PID}:1"}, True),
        ({"org.edgeprof.owner": "garbage"}, True),
        ({"org.edgeprof.owner": owner.this_process().token()}, False),
        ({"org.edgeprof.owner": f"{os.getpid()}:1"}, True),  # a reused pid
        ({"org.edgeprof.owner": f"{IMPOSSIBLE_PID}:1", "org.edgeprof.host": "elsewhere"}, False),
        ({"org.edgeprof.owner": owner.this_process().token(), "org.edgeprof.boot": "x"}, True),
    ],
    ids=["dead", "unlabelled", "live", "reused-pid", "other-host", "rebooted"],
)
def test_container_staleness(labels: dict[str, str], stale: bool) -> None:
    assert gc._container_is_stale(labels, owner.hostname(), owner.boot_id()) is stale


class _RefusingDaemon:
    """A Docker daemon that lists one dead run's container and refuses what it is asked."""

    def __init__(self, list_fails: bool) -> None:
        self.list_fails = list_fails

    def containers(self, label: str) -> list[dict[str, Any]]:
        if self.list_fails:
            raise DaemonError("500 Server Error: the daemon is busy\nmore")
        labels = {"org.edgeprof.owner": f"{IMPOSSIBLE_PID}:1"}
        return [{"Id": "abc", "Names": ["/edgeprof-x"], "Labels": labels}]

    def remove(self, cid: str) -> None:
        raise DaemonError("409 Conflict: removal in progress")


def test_the_daemons_errors_reach_gc_as_edgeprofs() -> None:
    """The Docker client's DaemonError is translated in the Docker backend
    (backends/docker/daemon.py), not caught in edgeprof.measure: the same lines as before."""
    assert gc.remove_containers(_RefusingDaemon(list_fails=False)) == [
        "cannot remove container edgeprof-x: 409 Conflict: removal in progress"
    ]
    with pytest.raises(BackendError) as exc:
        gc.remove_containers(_RefusingDaemon(list_fails=True))
    assert str(exc.value) == (
        "cannot list the Docker daemon's containers: 500 Server Error: the daemon is busy"
    )
    scope = CleanupScope(docker_client=_RefusingDaemon(list_fails=True))
    assert gc.collect_before_run(scope) == [
        "could not collect a dead run's leftovers: cannot list the Docker daemon's "
        "containers: 500 Server Error: the daemon is busy"
    ]


def test_pids_limit_parses_describes_and_round_trips() -> None:
    lim = Limits(pids="64", memory="64m")
    assert lim.pids == 64
    assert lim.describe() == "memory=64.0MiB, pids=64"
    r = make_result(limits=lim)
    d = r.to_dict()
    assert d["limits"]["pids"] == 64
    assert type(r).from_dict(d).limits == lim
    del d["limits"]["pids"]  # results written before --pids existed
    assert type(r).from_dict(d).limits.pids is None
    for bad in ("0", "-1", "1.5", "lots", "4194305", ""):
        with pytest.raises(ConfigError, match="process limit"):
            Limits(pids=bad)


def test_workload_user_under_sudo() -> None:
    nobody = workload_user(environ={"SUDO_UID": "65534", "SUDO_GID": "65534"}, euid=0)
    assert nobody is not None and (nobody.uid, nobody.gid) == (65534, 65534)
    assert 65534 in nobody.groups
    assert workload_user(True, {"SUDO_UID": "65534"}, euid=0) is None  # --as-root
    assert workload_user(False, {"SUDO_UID": "65534"}, euid=1000) is None  # not root
    assert workload_user(False, {}, euid=0) is None  # root, not through sudo
    assert workload_user(False, {"SUDO_UID": "0"}, euid=0) is None  # sudo from root
    unknown = workload_user(False, {"SUDO_UID": "71234"}, euid=0)
    assert unknown == UserIds(71234, 71234, (71234,))  # no passwd entry: own group only
    with pytest.raises(ConfigError, match="SUDO_UID"):
        workload_user(False, {"SUDO_UID": "1000; rm -rf /"}, euid=0)


def test_a_dead_runs_groups_are_one_line_naming_what_was_killed(tmp_path: Path) -> None:
    """Two controllers' groups of one dead run (cgroup v1 has 8) and one of another: a line
    per run, its groups counted and its leftover processes (listed in each controller's
    cgroup.procs, so once) named."""
    run = f"edgeprof-{IMPOSSIBLE_PID}-1-0000abcd"
    groups = [tmp_path / "cpu" / run, tmp_path / "memory" / "x" / run, tmp_path / "pids" / run]
    other = tmp_path / "cpu" / f"edgeprof-{IMPOSSIBLE_PID}-2-0000abce"
    for g in [*groups, other]:
        g.mkdir(parents=True)
    # Plain directories stand in for the groups: no cgroup.procs, so nothing to kill.
    assert gc.remove_groups([*groups, other], timeout=0.1) == [
        f"removed dead run {run}: 3 cgroups",
        f"removed dead run {other.name}: 1 cgroup",
    ]
    assert gc.run_of(tmp_path / "cpu" / run / "docker" / "abc") == run


def test_a_dead_runs_collection_is_said_on_stderr_not_in_the_runs_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """About the host, not the run: in result.json its 8 lines had read as problems of the
    next, unrelated run's measurement (in report and compare too)."""
    from edgeprof.cli import main
    from edgeprof.measure import runner
    from edgeprof.resultfiles import load_runs

    line = "removed dead run edgeprof-20069-1-00c0ffee: 8 cgroups, killed 1 process (pid 18787)"
    monkeypatch.setattr(runner, "collect_before_run", lambda scope: [line])

    assert main(["run", "--backend", "fake", "--out", str(tmp_path / "o"), "--", "true"]) == 0
    err = capsys.readouterr().err
    assert f"edgeprof: cleaned up after a dead edgeprof run: {line}\n" in err
    warnings = load_runs([tmp_path / "o" / "result.json"])[0].warnings
    assert warnings and not [w for w in warnings if "dead" in w or "cleaned" in w]
