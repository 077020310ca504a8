"""Memory fidelity through Docker: the composition at the peak read from the containers'
parent group, and ``edgeprof fit`` with ``--backend docker``, for the kernel tier's script
(an uncached file read through a bind mount, then anonymous memory held)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgeprof.analysis.headroom import stat_lag
from edgeprof.cli import main
from tests.host.memory_workload import (
    MAP_AND_HOLD,
    MEMORY_ONLY_TOLERANCE,
    MIB,
    READ_AND_HOLD,
    assert_each_fit_run_paid_for,
    data_file,
    fit_answer_range,
)

HOLD_MIB = 32
HOLD_S = "0.3"


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    yield from data_file(tmp_path)


def _docker(docker_daemon: Any, script: Path, data: Path, mounts: str = "") -> list[str]:
    """The options of a run of ``script`` at /opt/w.py reading ``data`` at /data/d.bin
    (``mounts``: more ``-v`` options)."""
    return ["--backend", "docker", "--image", docker_daemon.images["python3"],
            "--docker-args",
            f"-v {script}:/opt/w.py:ro -v {data}:/data/d.bin:ro {mounts} --network none",
            "--interval", "0.01"]  # fmt: skip


def test_composition_and_fit_through_docker(
    docker_daemon: Any,
    data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_daemon.host)
    script = tmp_path / "w.py"
    script.write_text(READ_AND_HOLD)
    opts = _docker(docker_daemon, script, data)
    size = data.stat().st_size

    # The bare interpreter in the same image: its own size bounds the anonymous memory.
    assert main(["run", *opts, "--json", "--", "python3", "/opt/w.py", "-", "0", HOLD_S]) == 0
    bare = json.loads(capfd.readouterr().out)["memory"]
    code = main(["run", *opts, "--json", "--",
                 "python3", "/opt/w.py", "/data/d.bin", str(HOLD_MIB), HOLD_S])  # fmt: skip
    captured = capfd.readouterr()
    assert code == 0, captured.err
    at = json.loads(captured.out)["memory"]["at_peak"]
    assert size * 0.9 <= at["file"] <= size + 8 * MIB, at
    own = bare["peaks"]["anon"] + stat_lag(os.cpu_count() or 1)  # as a reading may lag it
    assert HOLD_MIB * MIB <= at["anon"] <= HOLD_MIB * MIB + own + 4 * MIB, at

    # Under a limit halfway between the floor and the peak, the run report's verdict: it fits
    # at the limit (the file's cache dropped), its margin counted from the floor.
    memory = json.loads(captured.out)["memory"]
    middle = (memory["floor_bytes"] + (memory["peak_bytes"] - memory["floor_bytes"]) // 2) // MIB
    code = main(["run", *opts, "--memory", f"{middle}m", "--",
                 "python3", "/opt/w.py", "/data/d.bin", str(HOLD_MIB), HOLD_S])  # fmt: skip
    text = capfd.readouterr().out
    assert code == 0, text
    (line,) = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("memory limit")]
    assert line.startswith(f"memory limit {middle}.0MiB: "), line
    assert "fits at the limit" in line or ": slowed, stalled " in line, line
    assert "anon + shmem + kernel" in line, line

    code = main(["fit", *opts, "--json", "--resolution", "4m",
                 "--tolerance", MEMORY_ONLY_TOLERANCE, "--",
                 "python3", "/opt/w.py", "/data/d.bin", str(HOLD_MIB), HOLD_S])  # fmt: skip
    captured = capfd.readouterr()
    assert code == 0, captured.err
    d = json.loads(captured.out)
    assert d["backend"] == "docker"
    answer, peak = d["min_memory_bytes"], d["reference"]["peak_bytes"]
    floor = d["reference"]["floor_bytes"]
    assert HOLD_MIB * MIB <= floor <= peak - size * 0.8, d
    low, high = fit_answer_range(d)  # from its own figures, not the bare run's
    assert low <= answer <= high, d
    assert peak - answer >= size * 0.8, d
    assert len(d["probes"]) <= d["max_probes"], d


def test_each_container_of_a_fit_pays_for_the_file_it_maps(
    docker_daemon: Any,
    data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A container's group goes with it, its page cache charged on to nothing of the next
    container's: fit drops it from the parent group, and each container pays for the file
    (as the kernel tier's test of the cgroup backends)."""
    monkeypatch.setenv("DOCKER_HOST", docker_daemon.host)
    script = tmp_path / "m.py"
    script.write_text(MAP_AND_HOLD)
    opts = _docker(docker_daemon, script, data)
    bare_out = tmp_path / "bare"
    assert main(["run", *opts, "--out", str(bare_out), "--", "python3", "/opt/w.py", "-", "0"]) == 0
    bare = json.loads((bare_out / "result.json").read_text())["memory"]
    capfd.readouterr()
    out = tmp_path / "fit"
    code = main(["fit", *opts, "--json", "--out", str(out), "--resolution", "4m",
                 "--tolerance", MEMORY_ONLY_TOLERANCE, "--",
                 "python3", "/opt/w.py", "/data/d.bin", HOLD_S])  # fmt: skip
    captured = capfd.readouterr()
    assert code == 0, captured.err
    d = json.loads(captured.out)
    assert d["backend"] == "docker"
    size = data.stat().st_size
    assert_each_fit_run_paid_for(out, d, size, bare["mapped_elsewhere_bytes"] or 0)


def test_one_run_is_refused_through_docker_before_any_run(
    docker_daemon: Any,
    data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The Docker backend has no proactive reclaim: fit --one-run and run --squeeze are one
    line, exit 2, no container made."""
    monkeypatch.setenv("DOCKER_HOST", docker_daemon.host)
    script = tmp_path / "w.py"
    script.write_text(READ_AND_HOLD)
    before = docker_daemon.client.containers.list(all=True)
    out = tmp_path / "out"
    for command, option in (("fit", "--one-run"), ("run", "--squeeze")):
        workload = ["python3", "/opt/w.py", "/data/d.bin", str(HOLD_MIB), HOLD_S]
        code = main([command, *_docker(docker_daemon, script, data), option, "--out", str(out),
                     "--", *workload])  # fmt: skip
        err = capfd.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert f"{option}: the docker backend cannot reclaim" in err
        assert docker_daemon.client.containers.list(all=True) == before
        assert not out.exists()
