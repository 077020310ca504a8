"""A Docker run whose parent group is gone when its totals are read (ENODEV: "No such
device", after the workload had finished) is still a result, from its last reading."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgeprof.backends.docker.cgroups import Placement
from edgeprof.backends.docker.options import DockerOptions
from edgeprof.backends.docker.run import DockerRun, _missing_command
from edgeprof.errors import BackendError
from edgeprof.model import Counters, Limits, RunSpec


class FakeEngine:
    """The calls a container's life makes, answered at once: it exits 0."""

    local = True

    def create(self, name: str, config: dict[str, Any]) -> str:
        return "c0ffee"

    def attach(self, cid: str) -> Iterator[tuple[int, bytes]]:
        return iter(())

    def start(self, cid: str) -> None:
        pass

    def inspect(self, cid: str) -> dict[str, Any]:
        return {"State": {"Pid": 0, "OOMKilled": False}}

    def wait(self, cid: str, timeout: float) -> int:
        return 0

    def remove(self, cid: str) -> None:
        pass


def gone() -> Counters:
    raise BackendError("cannot read cgroup counters: No such device")


def open_run(tmp_path: Path) -> DockerRun:
    parent = tmp_path / "p"
    parent.mkdir(exist_ok=True)
    (parent / "cpu.stat").write_text("usage_usec 30000\nuser_usec 20000\nsystem_usec 10000\n")
    (parent / "memory.current").write_text(f"{8 << 20}\n")
    (parent / "memory.peak").write_text(f"{9 << 20}\n")
    placement = Placement(2, "/p", {"": parent}, (tmp_path,))
    spec = RunSpec(command=("true",), limits=Limits())
    return DockerRun(
        FakeEngine(),  # type: ignore[arg-type]
        spec,
        "img",
        name="p",
        options=DockerOptions(),
        placement=placement,
        native=False,
    )


def test_a_group_gone_at_the_final_read_gives_the_last_sample_s_counters(
    tmp_path: Path,
) -> None:
    run = open_run(tmp_path)
    (tmp_path / "p" / "cpu.stat").write_text("usage_usec 42000\n")
    assert run.sample().cpu_usage_us == 42_000
    assert run.wait(1) == 0
    run._outer.read = gone  # type: ignore[method-assign,union-attr]
    c = run.counters()
    assert c.cpu_usage_us == 42_000 and c.memory_current == 8 << 20
    assert c.memory_peak is None  # the kernel's mark is a total: not in a sample
    assert run.totals_lost  # the result adds no other reason for its sampled peak
    assert c.oom_kills == 0
    (line,) = run.warnings
    assert line.startswith(
        "the run's group was gone before its totals were read (cannot read cgroup counters: "
        "No such device): its figures are its last sample's, "
    ), line
    run.close()


def test_without_a_sample_the_reading_after_the_start_is_the_last(tmp_path: Path) -> None:
    run = open_run(tmp_path)
    assert run.wait(1) == 0
    run._outer.read = gone  # type: ignore[method-assign,union-attr]
    assert not run.totals_lost
    c = run.counters()
    assert c.cpu_usage_us == 30_000 and c.memory_peak == 9 << 20
    assert run.totals_lost
    run.close()


def test_no_reading_at_all_is_a_result_with_nothing_measured(tmp_path: Path) -> None:
    run = open_run(tmp_path)
    run._outer_last = None
    run._outer.read = gone  # type: ignore[method-assign,union-attr]
    assert run.wait(1) == 0
    assert run.counters() == Counters(oom_kills=0)
    assert run.totals_lost
    assert run.warnings == [
        "the run's group was gone before it could be read (cannot read cgroup counters: No "
        "such device): its CPU and memory were not measured"
    ]
    run.close()


def test_a_command_the_image_lacks_is_named_as_the_cgroup_backend_names_it() -> None:
    dump = (
        "failed to create shim task: OCI runtime create failed: runc create failed: unable to "
        'start container process: exec: "nosuchcmd": executable file not found in $PATH: '
        "unknown"
    )
    assert _missing_command(dump) == "nosuchcmd"
    assert _missing_command('exec: "/opt/x": stat /opt/x: no such file or directory') == "/opt/x"
    assert _missing_command("OCI runtime create failed: permission denied") is None


def test_block_io_a_sample_read_is_a_floor_of_the_totals(tmp_path: Path) -> None:
    """cgroup v1's blkio ``_recursive`` files sum the descendants alive now: once runc has
    removed the container's group, the parent's (and the samples taken after the exit) read
    0, and a container's cold read of 64 MiB had read ``0B / 0B``."""
    io = tmp_path / "p" / "io.stat"
    io.parent.mkdir()
    io.write_text("")  # as the parent's reads before the container starts
    run = open_run(tmp_path)
    io.write_text(f"8:0 rbytes={64 << 20} wbytes=4096 rios=512 wios=1 dbytes=0 dios=0\n")
    c = run.sample()
    assert (c.io_read_bytes, c.io_write_bytes) == (64 << 20, 4096)
    io.write_text("")  # the container's group is gone: nothing left to sum
    assert run.sample().io_read_bytes == 0
    assert run.wait(1) == 0
    c = run.counters()
    assert (c.io_read_bytes, c.io_write_bytes) == (64 << 20, 4096)
    assert not run.totals_lost and run.warnings == []
    run.close()
