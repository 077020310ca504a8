"""A storage speed through Docker: ``--read-bps`` and ``--read-iops`` become the container's
device read rates on every disk, and a cold read of the data file through a bind mount
(direct 4 KiB reads, for the request rate) takes the time they allow.  Each rate is derived
from the same reads measured in the same image without one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgeprof.backends._disks import disks
from edgeprof.cli import main
from tests.docker.test_docker_memory_fit import _docker
from tests.host.memory_workload import READ_AND_HOLD, data_file
from tests.host.test_io_stall_kernel import on_block_device
from tests.host.test_storage_speed_kernel import DIRECT_4K, REQUESTS, SLACK, rate_for


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    yield from data_file(tmp_path)


@pytest.mark.parametrize(
    ("workload", "args", "option"),
    [(READ_AND_HOLD, ["0", "0"], "--read-bps"),  # a cold read of the file: its bytes
     (DIRECT_4K, [str(REQUESTS), "read"], "--read-iops")],  # direct 4 KiB reads: requests
)  # fmt: skip
def test_a_read_limit_slows_a_containers_reads_to_it(
    docker_daemon: Any,
    data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    workload: str,
    args: list[str],
    option: str,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_daemon.host)
    script = tmp_path / "w.py"
    script.write_text(workload)
    opts = _docker(docker_daemon, script, data)
    cmd = ["--", "python3", "/opt/w.py", "/data/d.bin", *args]
    amount = REQUESTS if option == "--read-iops" else data.stat().st_size
    assert disks() and on_block_device(data), "the Docker tier runs on a host with a disk"

    assert main(["run", *opts, "--json", *cmd]) == 0
    free = json.loads(capfd.readouterr().out)
    rate = rate_for(amount, free["wall_s"])
    given = str(rate) if option == "--read-iops" else f"{rate}b"
    code = main(["run", *opts, "--json", option, given, *cmd])
    captured = capfd.readouterr()
    assert code == 0, captured.err
    r = json.loads(captured.out)
    assert r["limits"][option[2:].replace("-", "_")] == rate
    assert r["wall_s"] >= SLACK * amount / rate, (r["wall_s"], amount, rate, free["wall_s"])
    assert r["wall_s"] > free["wall_s"], (r["wall_s"], free["wall_s"])


#: A cold read in phase ``load``, then a pause in ``idle``, in a container: the client, one
#: standard-library file, is mounted at /opt/edgeprof.
CLIENT = Path(__file__).resolve().parents[2] / "edgeprof" / "workload" / "instrument.py"
PHASED_READ = """\
import os, sys, time
sys.path.insert(0, "/opt/edgeprof")
import instrument as edgeprof
with edgeprof.phase("load"):
    fd = os.open("/data/d.bin", os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    while os.read(fd, 1 << 20):
        pass
with edgeprof.phase("idle"):
    time.sleep(0.3)
"""


def test_a_containers_phase_gets_the_block_io_it_made(
    docker_daemon: Any,
    data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_daemon.host)
    script = tmp_path / "w.py"
    script.write_text(PHASED_READ)
    opts = _docker(docker_daemon, script, data, f"-v {CLIENT}:/opt/edgeprof/instrument.py:ro")
    assert on_block_device(data), "the Docker tier runs on a host with a disk"
    size = data.stat().st_size
    # No boundary is held in a container: each is read when edgeprof polls its line, and a
    # phase's share is interpolated there (a 64 MiB read in 30 ms gave load 65.7 of 67.1
    # MB).  The file is read at its size a second, so that a line read late under load
    # moves a small part of it across the boundary.
    rate = ["--read-bps", f"{size}b"]
    assert main(["run", *opts, *rate, "--json", "--", "python3", "/opt/w.py"]) == 0
    r = json.loads(capfd.readouterr().out)
    load, idle = r["phases"]
    assert (load["name"], idle["name"]) == ("load", "idle")
    assert load["wall_s"] >= SLACK, load  # the second the rate allows
    # The run's bytes outlive the container's group (v1's parent had read 0 once it went).
    assert r["io"]["read_bytes"] >= size, r["io"]
    assert load["io_read_bytes"] + idle["io_read_bytes"] <= r["io"]["read_bytes"]
    assert load["io_read_bytes"] >= size // 2 and idle["io_read_bytes"] <= size // 4, (load, idle)
