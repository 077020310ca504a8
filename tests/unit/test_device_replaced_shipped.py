"""A user's catalog entry that replaces a shipped board's name is said wherever the device
is used (``run``, ``bench``, ``fit``, ``recipe``): ``rpi4-4gb`` as 2 cores and 1 GiB from a
team catalog had run as the board with no word (a tester's, finding 7 of round 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.analysis.devices import DEVICES_ENV, resolve_device
from edgeprof.cli import main
from edgeprof.measure.limits import THREAD_VARS
from edgeprof.model import HostInfo

HOST = HostInfo(kernel="6.1.0", cpus=4, cpu_model="Test CPU", hostname="h")
TEAM = (
    "devices:\n  rpi4-4gb:\n    cores: 2\n    memory: 1g\n"
    "  board:\n    cores: 1\n    memory: 256m\n"
)
NOTE = "rpi4-4gb: the entry in {}, 2 cores, 1.0GiB, replaces the shipped one (4 cores, 4.0GiB)"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEVICES_ENV, raising=False)
    for v in THREAD_VARS:
        monkeypatch.delenv(v, raising=False)


def _team(tmp_path: Path) -> Path:
    (tmp_path / "team.yml").write_text(TEAM)
    return tmp_path / "team.yml"


def test_a_replaced_shipped_entry_is_said_first_and_with_the_users_cpus(tmp_path: Path) -> None:
    team = _team(tmp_path)
    s = resolve_device("rpi4-4gb", team, HOST, {})
    assert s.replaces_shipped == NOTE.format(team)
    assert s.said_with(False)[0] == NOTE.format(team)
    # --cpus replaces the share, not the entry: its memory is still the team's 1 GiB; and, no
    # speed known, the times are this host's (a training user's read as the board's).
    assert s.said_with(True) == (
        NOTE.format(team),
        "rpi4-4gb: no speed known: --cpus runs at this host's speed, so the times are this "
        "host's, not the device's (edgeprof calibrate gives its speed)",
    )
    via_env = resolve_device("rpi4-4gb", None, HOST, {DEVICES_ENV: str(team)})
    assert via_env.replaces_shipped == NOTE.format(f"{team} (${DEVICES_ENV})")
    # The shipped entry itself, and a name the shipped catalog lacks: nothing to say.
    assert resolve_device("rpi4-4gb", None, HOST, {}).replaces_shipped is None
    assert resolve_device("board", team, HOST, {}).replaces_shipped is None


def test_run_says_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    team = _team(tmp_path)
    argv = ["run", "--backend", "fake", "--device", "rpi4-4gb", "--devices", str(team), "--",
            "true"]  # fmt: skip
    assert main(argv) == 0
    assert f"edgeprof: warning: {NOTE.format(team)}\n" in capsys.readouterr().err


def test_recipe_says_it_and_that_the_parts_need_the_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    team = _team(tmp_path)
    monkeypatch.setenv(DEVICES_ENV, str(team))
    argv = ["recipe", "slurm", "--shards", "2", "--out", str(tmp_path / "rec"), "--",
            "--device", "rpi4-4gb", "--repeat", "2", "--", "python3", "x.py"]  # fmt: skip
    assert main(argv) == 0
    said = NOTE.format(f"{team} (${DEVICES_ENV})")
    assert capsys.readouterr().err == (
        f"edgeprof: note: {said}; the parts use it only where they run with ${DEVICES_ENV} "
        "set so\n"
    )
    monkeypatch.delenv(DEVICES_ENV)
    assert main(argv) == 0
    assert capsys.readouterr().err == ""
