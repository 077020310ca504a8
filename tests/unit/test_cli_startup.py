"""What a command loads: start-up is the fixed cost of every command, so ``--version`` loads
no parser and a plain ``run`` neither typer nor anything only other commands, sweeps,
budgets, predictions or CI reports use.  Each case runs in a fresh interpreter (``sys.modules`` of
this one holds everything the suite imported)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from edgeprof.backends import register_backend
from tests.fakes import FakeBackend
register_backend("fake", FakeBackend)
before = set(sys.modules)
from edgeprof.cli import main
rc = main(json.loads(sys.argv[1]))
report = {"rc": rc, "before": sorted(before), "after": sorted(sys.modules)}
print(json.dumps(report), file=sys.stderr)
"""

ONLY_OTHER_COMMANDS = (
    "edgeprof.cli.calibrate",
    "edgeprof.cli.fit",
    "edgeprof.cli.layers",
    "edgeprof.cli.results",
    "edgeprof.cli.tools",
    "edgeprof.analysis.calibration",
    "edgeprof.report.calibration",
    "edgeprof.report.junit",
    "edgeprof.report.ci_summary",
    "edgeprof.report.export",
    "edgeprof.report.auptimizer",
    "edgeprof.analysis.compare",
    "edgeprof.backends.process",
    "edgeprof.backends.docker",
    "yaml",
    "rich",
)


def _loaded(args: list[str]) -> tuple[int, set[str], set[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(p.stderr.strip().splitlines()[-1])
    return report["rc"], set(report["before"]), set(report["after"])


def test_version_loads_no_parser_and_no_model() -> None:
    rc, before, after = _loaded(["--version"])
    assert rc == 0
    for module in ("typer", "edgeprof.cli.app", "edgeprof.cli.run", "edgeprof.measure.runner"):
        assert module not in after - before, module


@pytest.mark.parametrize("args", [["run", "--backend", "fake", "--", "sleep", "0"]])
def test_a_plain_run_loads_only_what_it_uses(args: list[str]) -> None:
    rc, before, after = _loaded(args)
    assert rc == 0
    assert "edgeprof.measure.runner" in after  # it did run
    # Its own parser read the command line (edgeprof.cli.runargs): no typer, no click.
    assert not [m for m in ("typer", "click", "edgeprof.cli.run") if m in after]
    loaded = after - before
    assert not [m for m in ONLY_OTHER_COMMANDS if m in loaded]
    assert not [m for m in ONLY_OTHER_COMMANDS if m in before]  # else the test proves nothing


def test_the_docker_backend_loads_no_http_library() -> None:
    """The Docker backend speaks the Engine API on ``socket`` alone: the SDK's stack
    (requests, urllib3, http.client with the email package) took 88 ms to import."""
    probe = (
        "import sys; before = set(sys.modules)\n"
        "from edgeprof.backends.docker import DockerBackend, Engine\n"
        "import edgeprof.backends.docker.image, edgeprof.measure.gc\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    loaded = set(p.stdout.split())
    assert "edgeprof.backends.docker.engine" in loaded  # it did load the backend
    heavy = ("docker", "requests", "urllib3", "http.client", "email", "ssl")
    assert not [m for m in heavy if m in loaded], sorted(loaded)
