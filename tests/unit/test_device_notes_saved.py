"""What ``run --device`` says of the device is saved with each run, as the library saves it:
a device of no known speed (its times are this host's) had been said once on stderr, and
lost from ``result.json``, the table's notes and ``report`` (a user's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgeprof.cli import main

UNO = "uno: no speed known (a spec sheet gives none): its core runs at this host's speed"


def test_the_devices_notes_are_in_each_runs_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("boards.yml").write_text("devices:\n  uno:\n    cores: 1\n    memory: 512m\n")
    device = ["--devices", "boards.yml", "--device", "uno"]
    assert main(["run", "--backend", "fake", *device, "--out", "one", "--", "true"]) == 0
    said = capsys.readouterr()
    assert f"edgeprof: warning: {UNO}" in said.err  # before the run, as before
    assert f"  warning: {UNO}" in said.out  # and under the table, with the run's own
    warnings = json.loads(Path("one/result.json").read_text())["warnings"]
    assert warnings[0].startswith(UNO)
    sweep = ["run", "--backend", "fake", *device, "-m", "a,b", "--out", "sw", "--", "true"]
    assert main(sweep) == 0
    runs = json.loads(Path("sw/sweep.json").read_text())["runs"]
    assert [r["warnings"][0].startswith(UNO) for r in runs] == [True, True]
    capsys.readouterr()
    assert main(["report", "sw"]) == 0
    assert UNO in capsys.readouterr().out
