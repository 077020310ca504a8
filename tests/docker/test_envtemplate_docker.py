"""An Auptimizer env.template driving the Docker backend, end to end through the CLI: the
image built from the template, the models as arguments, the limits, the old output files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgeprof.backends.docker.daemon import MANAGED_LABEL
from edgeprof.cli import main

TEMPLATE = """\
# Auptimizer's env.template, unchanged in form: shell assignments, read as data.
IMAGEREPO={image}
APTREQUIREMENTS=""
PIPREQUIREMENTS=""
PRERUN="echo built > m"
DIR=app
SCRIPT=infer.py
COMMAND=python3
SAMPLETIME=0.2
OUTPUTFILE=out.txt
DOCFILE=Dockerfile
DOCKCPUS=1
DOCKMEMORY=256m
DOCKER_ARGS="-e GREETING=hi"
"""

INFER = """\
import os, sys, time
data = b"\\x01" * ((48 if sys.argv[1].startswith("Mobile") else 16) << 20)
print("model", repr(sys.argv[1:]), os.environ.get("GREETING"), open("m").read().strip())
time.sleep(0.6)
"""


def _managed_images(client: Any) -> set[str]:
    return {i.id for i in client.images.list(filters={"label": f"{MANAGED_LABEL}=1"})}


def test_template_run_on_docker(
    docker_daemon: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_daemon.host)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "infer.py").write_text(INFER)
    (tmp_path / "env.template").write_text(
        TEMPLATE.format(image=docker_daemon.images["python3"])
    )
    before = _managed_images(docker_daemon.client)
    # Bad input builds nothing: the template is checked before the image build.
    (tmp_path / "bad.template").write_text(
        TEMPLATE.format(image=docker_daemon.images["python3"]).replace("256m", "abc")
    )
    assert main(["run", "-e", "bad.template", "-m", "x"]) == 2
    assert "bad.template:13: DOCKMEMORY: invalid size 'abc'" in capfd.readouterr().err
    assert _managed_images(docker_daemon.client) == before
    try:
        # The old command line with only the program name changed (plus --out to inspect).
        code = main(["run", "-e", "env.template", "-m", "Mobile.Net_v2.tflite,noext",
                     "--out", "res"])  # fmt: skip
        out, err = capfd.readouterr()
        assert code == 0, err
        sweep = json.loads((tmp_path / "res" / "sweep.json").read_text())
        runs = {r["name"]: r for r in sweep["runs"]}
        assert set(runs) == {"Mobile.Net_v2.tflite", "noext"}
        for r in runs.values():
            assert r["backend"] == "docker" and r["termination"] == "exited"
            assert r["limits"]["cpus"] == 1 and r["limits"]["memory_bytes"] == 256 << 20
            assert r["samples"]["interval_s"] == 0.2  # SAMPLETIME
        big, small = runs["Mobile.Net_v2.tflite"], runs["noext"]
        assert big["memory"]["peak_bytes"] - small["memory"]["peak_bytes"] > 24 << 20
        # The model reached the script as one argument; DOCKER_ARGS and PRERUN applied.
        assert "model ['Mobile.Net_v2.tflite'] hi built" in out
        assert "model ['noext'] hi built" in out
        summary = (tmp_path / "out.txt").read_text().splitlines()
        assert summary[0].startswith("Usage stats for Experiment ran on : ")
        assert [ln.split()[0] for ln in summary[3:5]] == ["Mobile.Net_v2", "noext"]
        assert all("256.0 MiB" in ln for ln in summary[3:5])
        log = (tmp_path / "Mobile.Net_v2_out.txt").read_text()
        assert log.startswith("Profiling script: infer.py Mobile.Net_v2.tflite\n")
        # A row per sample the run took, then the Usage Stats row (how many samples a 0.6 s
        # run gets at 0.2 s depends on the machine's load; that each has its row does not).
        rows = sum(1 for ln in log.splitlines() if ln.startswith("Mobile.Net_v2 "))
        assert rows == big["samples"]["count"] + 1 >= 3, (rows, big["samples"])
        assert (tmp_path / "noext_out.txt").exists()
    finally:
        for image in _managed_images(docker_daemon.client) - before:
            docker_daemon.client.images.remove(image, force=True)
