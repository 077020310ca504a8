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
