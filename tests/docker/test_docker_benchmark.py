"""benchmarks/docker_overhead.py in its short form against the tier's private daemon: every
row printed, each ratio a number (the figures are the table's in benchmarks/README.md, not
asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.docker.daemon import DockerSession

REPO = Path(__file__).resolve().parents[2]


def test_docker_overhead_benchmark_prints_its_rows(docker_daemon: DockerSession) -> None:
    proc = subprocess.run(
        [
            sys.executable, str(REPO / "benchmarks" / "docker_overhead.py"),
            "--image", docker_daemon.images["busybox"],
            "--base-image", docker_daemon.images["python3"], "-n", "2",
        ],
        env={**os.environ, "DOCKER_HOST": docker_daemon.host},
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for row in (
        "docker run --rm IMAGE true",
        "edgeprof run --backend docker",
        "a sweep of 2 in one edgeprof, per run",
        "environment run, unchanged (no build)",
    ):
        assert row in proc.stdout, proc.stdout
    ratios = re.findall(r"ratio to docker run --rm\s+([0-9.]+)", proc.stdout)
    assert len(ratios) == 2 and all(float(r) > 0 for r in ratios), proc.stdout
