"""The memory limits of the groups runs are made under (a CI container's ``--memory``, a
Slurm job's group): read from fake v1 and v2 trees, and what ``run`` and ``fit`` make of
them.  The kernel's own, under a real limit: ``tests/host/test_memory_ceiling.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof import profile
from edgeprof.backends._cgroup_common import NO_LIMIT, ceilings
from edgeprof.backends.host_resources import Ceiling
from edgeprof.cli import main
from edgeprof.errors import LimitError
from edgeprof.measure.limits import host_memory, resolve
from edgeprof.model import Limits
from tests.fakes import FakeBackend

MIB = 1 << 20


def _group(
    path: Path, limit: str, usage: str | None, v1: bool = True, cache: int | None = None
) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / ("memory.limit_in_bytes" if v1 else "memory.max")).write_text(limit + "\n")
    if usage is not None:
        (path / ("memory.usage_in_bytes" if v1 else "memory.current")).write_text(usage + "\n")
    if cache is not None:
        key = "total_inactive_file" if v1 else "inactive_file"
        (path / "memory.stat").write_text(f"cache 1\n{key} {cache}\nrss 2\n")


V1 = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
V2 = ("memory.max", "memory.current", "inactive_file")


def test_v1_every_limited_group_up_to_the_mount_nearest_first(tmp_path: Path) -> None:
    top = tmp_path / "memory"
    _group(top, "9223372036854771712", "5000000000")  # a host's root: no limit
    _group(top / "ci", str(300 * MIB), str(100 * MIB))
    _group(top / "ci" / "job", str(NO_LIMIT + 4096), str(90 * MIB))  # v1's "no limit"
    _group(top / "ci" / "job" / "me", str(500 * MIB), None)  # usage unreadable: no room
    got = ceilings(top / "ci" / "job" / "me", top, *V1)
    assert got == [
        Ceiling(top / "ci" / "job" / "me", 500 * MIB, None),
        Ceiling(top / "ci", 300 * MIB, 200 * MIB),
    ]


def test_a_containers_own_group_is_its_mount_and_counts(tmp_path: Path) -> None:
    """In a container, the hierarchy's mount is the container's group: its limit is the
    container's --memory (leaving the mount out had found nothing there)."""
    top = tmp_path / "memory"
    _group(top, str(300 * MIB), str(100 * MIB))
    assert ceilings(top, top, *V1) == [Ceiling(top, 300 * MIB, 200 * MIB)]


def test_the_room_leaves_out_the_inactive_page_cache(tmp_path: Path) -> None:
    """400 MiB of cache in a 500 MiB group had left a run 73 MiB of room."""
    top = tmp_path / "memory"
    _group(top / "g", str(500 * MIB), str(420 * MIB), cache=400 * MIB)
    assert ceilings(top / "g", top, *V1) == [Ceiling(top / "g", 500 * MIB, 480 * MIB)]


def test_v2_max_is_no_limit_and_usage_over_the_limit_leaves_no_room(tmp_path: Path) -> None:
    top = tmp_path / "unified"
    _group(top / "a", "max", "1", v1=False)
    _group(top / "a" / "b", str(64 * MIB), str(70 * MIB), v1=False, cache=MIB)
    assert ceilings(top / "a" / "b", top, *V2) == [Ceiling(top / "a" / "b", 64 * MIB, 0)]
    assert ceilings(top, top, *V2) == []  # a host's root has no memory.max
    assert ceilings(tmp_path / "elsewhere", top, *V2) == []


def test_the_least_of_memtotal_and_the_limits_is_what_a_run_may_have(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    be = FakeBackend()
    total = be.memory_total()
    assert total is not None
    assert host_memory(be) == (total, "MemTotal")
    group = Path("/sys/fs/cgroup/memory/ci")
    monkeypatch.setattr(be, "memory_ceilings", lambda: [Ceiling(group, 300 * MIB, 10)])
    memory, source = host_memory(be)
    assert (memory, source) == (300 * MIB, f"the memory limit of {group}")
    with pytest.raises(LimitError) as e:
        resolve(Limits(memory="1g"), (0, 1), memory=memory, memory_source=source)
    assert str(e.value) == (
        f"--memory 1.0GiB exceeds the memory a run may have here, 300.0MiB (the memory limit "
        f"of {group}); --allow-over-host to run anyway"
    )
    big = Ceiling(group, total + MIB, 10)  # above MemTotal: MemTotal is the figure
    monkeypatch.setattr(be, "memory_ceilings", lambda: [big])
    assert host_memory(be) == (total, "MemTotal")


def test_run_refuses_a_limit_over_the_enclosing_one_before_anything_runs(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    group = Path("/sys/fs/cgroup/memory/ci")
    monkeypatch.setattr(
        FakeBackend, "memory_ceilings", lambda self: [Ceiling(group, 300 * MIB, 10)]
    )
    out = tmp_path / "out"
    argv = ["run", "--backend", "fake", "--memory", "1g", "--out", str(out), "--", "true"]
    assert main(argv) == 2
    assert capfd.readouterr().err == (
        f"edgeprof: error: --memory 1.0GiB exceeds the memory a run may have here, 300.0MiB "
        f"(the memory limit of {group}); --allow-over-host to run anyway\n"
    )
    assert not out.exists()


def test_a_limit_above_the_room_an_enclosing_group_leaves_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a 300 MiB group whose processes use 14 MiB, ``--memory 298m`` is OOM-killed by
    that group at 286 MiB: the run says so, so that its "does not fit" is not read as the
    limit's (a tester's ``run --memory 298m`` in a 300 MiB group)."""
    group = Path("/sys/fs/cgroup/memory/ci")
    room = 286 * MIB
    monkeypatch.setattr(
        FakeBackend, "memory_ceilings", lambda self: [Ceiling(group, 300 * MIB, room)]
    )
    r = profile(["true"], backend="fake", limits=Limits(memory="298m"))
    assert (
        f"--memory 298.0MiB is more than the 286.0MiB left under the memory limit of {group} "
        "(300.0MiB, less what its processes use, edgeprof's own among them): an OOM kill below "
        "the limit can be that group's, not this limit's"
    ) in r.warnings
    for fits in ("286m", "200m"):  # within the room: nothing to say
        r = profile(["true"], backend="fake", limits=Limits(memory=fits))
        assert not any("left under" in w for w in r.warnings)


def test_doctor_names_the_ceiling_only_where_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from edgeprof.measure.doctor import memory_ceiling

    be = FakeBackend()
    assert memory_ceiling(be) == []
    group = Path("/sys/fs/cgroup/memory/ci")
    monkeypatch.setattr(be, "memory_ceilings", lambda: [Ceiling(group, 300 * MIB, 10)])
    (finding,) = memory_ceiling(be)
    assert (finding.topic, finding.ok) == ("memory ceiling", None)
    assert finding.detail == (
        f"a run may have at most 300.0MiB here: the memory limit of {group} (a larger "
        "--memory is refused)"
    )
