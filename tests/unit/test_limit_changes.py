"""A workload that wrote its own group's limits (as root it can): the backends read the
limits back at the run's end, the result records the change with a warning, and the memory
verdict gives way to a line that says so (a tester's ``--memory 64m`` run raised its limit
to unlimited and had been told it "fits at the edge … peak 207.6MiB")."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from edgeprof.analysis.headroom import limit_fit, over_limit
from edgeprof.backends import CgroupV2Backend
from edgeprof.backends.capabilities import UNLIMITED, LimitReading
from edgeprof.measure.limit_changes import change_warning, limit_changes
from edgeprof.measure.limits import kernel_memory, rounded_memory
from edgeprof.measure.runner import profile
from edgeprof.model import LimitChange, Limits, MemoryStats, RunResult, Termination
from edgeprof.report.results import render_plain
from edgeprof.units import format_binary

from .conftest import FakeCgroupFs, make_result
from .test_backend_cgroup_v2 import COUNTERS, v2_tree

MIB = 1 << 20
V1_UNLIMITED = 9223372036854771712  # what v1's memory.limit_in_bytes reads after "-1"
PERIOD = 100_000


def test_v1_memory_raised_to_unlimited_is_a_change() -> None:
    read = LimitReading(memory=V1_UNLIMITED, memory_swap=V1_UNLIMITED)
    assert limit_changes(Limits(memory="64m"), PERIOD, read) == (
        LimitChange("memory_bytes", 64 * MIB, None),
    )


def test_v1_memory_lowered_binds_at_the_lower_of_memory_and_memsw() -> None:
    lowered = LimitReading(memory=32 * MIB, memory_swap=512 * MIB)
    swap_lowered = LimitReading(memory=512 * MIB, memory_swap=32 * MIB)
    for read in (lowered, swap_lowered):
        assert limit_changes(Limits(memory="512m"), PERIOD, read) == (
            LimitChange("memory_bytes", 512 * MIB, 32 * MIB),
        )
    # memsw raised alone: the memory limit still binds, nothing changed.
    raised = LimitReading(memory=512 * MIB, memory_swap=V1_UNLIMITED)
    assert limit_changes(Limits(memory="512m"), PERIOD, raised) == ()


def test_unchanged_and_unread_limits_are_no_change() -> None:
    lim = Limits(cpus=0.5, memory="100000000", pids=32)
    # The kernel keeps the limit in whole pages: 100000000 reads back 99999744.
    read = LimitReading(memory=99_999_744, cpu_quota_us=50_000, cpu_period_us=PERIOD, pids=32)
    assert limit_changes(lim, PERIOD, read) == ()
    assert limit_changes(lim, PERIOD, LimitReading()) == ()
    assert limit_changes(lim, PERIOD, None) == ()
    # No limit set, none read: the files say "max".
    assert limit_changes(Limits(), PERIOD, LimitReading(UNLIMITED, None, UNLIMITED, PERIOD,
                                                        UNLIMITED)) == ()  # fmt: skip


def test_cpu_quota_period_and_pids_changes() -> None:
    lim = Limits(cpus=0.5, pids=32)
    read = LimitReading(cpu_quota_us=UNLIMITED, cpu_period_us=PERIOD, pids=UNLIMITED)
    assert limit_changes(lim, PERIOD, read) == (
        LimitChange("cpu_quota_us", 50_000, None),
        LimitChange("pids", 32, None),
    )
    # The period doubled with the quota kept: a quarter of a CPU, per the period set.
    longer = LimitReading(cpu_quota_us=50_000, cpu_period_us=200_000)
    assert limit_changes(lim, PERIOD, longer) == (LimitChange("cpu_quota_us", 50_000, 25_000),)
    # A limit the workload gave itself where edgeprof set none is a change too.
    assert limit_changes(Limits(), PERIOD, LimitReading(pids=8)) == (LimitChange("pids", None, 8),)


def test_the_warnings_name_both_values() -> None:
    assert change_warning(LimitChange("memory_bytes", 64 * MIB, None), PERIOD) == (
        "the workload changed its memory limit from 64.0MiB to unlimited during the run (it "
        "can write its own group's files as root): the result records the limit edgeprof "
        "set, and gives no verdict against it"
    )
    assert change_warning(LimitChange("cpu_quota_us", 50_000, 200_000), PERIOD) == (
        "the workload changed its CPU quota from 0.5 CPUs to 2 CPUs during the run (it can "
        "write its own group's files as root): the result records the limit edgeprof set"
    )


def _raised(**changes: object) -> RunResult:
    """The tester's run: 64 MiB set, a 207.6 MiB peak after the workload raised its limit."""
    memory = MemoryStats(int(207.6 * MIB), "kernel", 86 * MIB, 64 * MIB, 0, None, None)
    fields: dict[str, object] = {
        "limits": Limits(memory="64m"),
        "memory": memory,
        "warnings": (),
        "limits_changed": (LimitChange("memory_bytes", 64 * MIB, None),),
    }
    return make_result(**{**fields, **changes})


def test_a_changed_memory_limit_has_no_verdict_but_a_line() -> None:
    r = _raised()
    assert limit_fit(r) is None
    within = dataclasses.replace(r.memory, peak_bytes=60 * MIB)
    assert limit_fit(dataclasses.replace(r, limits_changed=(), memory=within)) is not None
    text = render_plain([r])
    assert (
        "memory limit 64.0MiB: the workload changed its memory limit from 64.0MiB to "
        "unlimited: no verdict"
    ) in text
    assert not any(v in text for v in (": fits", "fits at the edge", "does not fit")), text
    # An OOM kill at a lowered limit is no "does not fit" against the one set either.
    to_32 = (LimitChange("memory_bytes", 512 * MIB, 32 * MIB),)
    lowered = _raised(termination=Termination.OOM, exit_code=137, signal=9, limits_changed=to_32)
    assert limit_fit(lowered) is None
    assert "from 512.0MiB to 32.0MiB: no verdict" in render_plain([lowered])
    assert "needs more than" not in render_plain([lowered])


def test_the_change_is_written_and_read_back() -> None:
    r = _raised()
    d = r.to_dict()
    assert d["limits_changed"] == [{"limit": "memory_bytes", "asked": 64 * MIB, "now": None}]
    assert d["limits"]["memory_bytes"] == 64 * MIB  # the limit edgeprof set
    assert RunResult.from_dict(json.loads(json.dumps(d))) == r
    assert "limits_changed" not in dataclasses.replace(r, limits_changed=()).to_dict()


def test_profile_reads_the_limit_the_workload_wrote(cgfs: FakeCgroupFs, tmp_path: Path) -> None:
    """On a fake v2 tree the workload writes "max" to its group's memory.max, as a root
    workload can: the result keeps 64 MiB as its limit, says the change, and has no
    verdict."""
    root, psc = v2_tree(cgfs, tmp_path, overrides=COUNTERS)
    be = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0)
    write = f"for g in {root}/edgeprof/edgeprof-*; do echo max > $g/memory.max; done"
    r = profile(["sh", "-c", write], Limits(memory="64m"), backend=be, interval=0.01)
    assert r.limits.memory == 64 * MIB
    assert r.limits_changed == (LimitChange("memory_bytes", 64 * MIB, None),)
    assert any(w.startswith("the workload changed its memory limit from 64.0MiB to unlimited")
               for w in r.warnings)  # fmt: skip
    assert limit_fit(r) is None
    untouched = profile(["true"], Limits(memory="64m"), backend=be, interval=0.01)
    assert untouched.limits_changed == ()


@pytest.mark.parametrize("quota", ["max 100000", "200000 100000"])
def test_profile_reads_cpu_max_back(cgfs: FakeCgroupFs, tmp_path: Path, quota: str) -> None:
    root, psc = v2_tree(cgfs, tmp_path, overrides=COUNTERS)
    be = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0)
    write = f"for g in {root}/edgeprof/edgeprof-*; do echo {quota} > $g/cpu.max; done"
    lim = Limits(cpus=0.5, cpu_period_us=PERIOD)
    r = profile(["sh", "-c", write], lim, backend=be, interval=0.01)
    now = None if quota.startswith("max") else 200_000
    assert r.limits_changed == (LimitChange("cpu_quota_us", 50_000, now),)


def test_a_limit_put_back_before_the_end_is_told_by_a_peak_above_it() -> None:
    """The tester's ``restore.py``: raised, 200 MiB allocated and freed, 64 MiB written back:
    the end's read-back finds the limit as set, but a 207.5 MiB peak under 64 MiB cannot be."""
    r = _raised(limits_changed=())
    r = dataclasses.replace(r, memory=dataclasses.replace(r.memory, peak_bytes=round(207.5 * MIB)))
    assert over_limit(r) == round(207.5 * MIB)
    assert limit_fit(r) is None
    text = render_plain([r])
    assert (
        "memory limit 64.0MiB: its peak, 207.5MiB, is above the limit, which the kernel does "
        "not allow: the workload changed its memory limit during the run and put it back (it "
        "can write its own group's files as root): no verdict"
    ) in text
    assert not any(v in text for v in (": fits", "fits at the edge", "does not fit")), text
    # Within the kernel's batching above the limit (768 KiB a CPU: 3 MiB on this result's
    # 4), a peak is the kernel's own charging, not a change: the verdict stands.
    assert r.host.cpus == 4
    for peak, over in ((64 * MIB + 3 * MIB, None), (67 * MIB + 4096, 67 * MIB + 4096)):
        at = dataclasses.replace(r, memory=dataclasses.replace(r.memory, peak_bytes=peak))
        assert over_limit(at) == over
        assert (limit_fit(at) is None) == (over is not None)


def test_a_memory_limit_in_part_of_a_page_is_recorded_as_the_kernel_holds_it(
    cgfs: FakeCgroupFs, tmp_path: Path
) -> None:
    """A researcher's ``--memory 100000001``: the group read 99999744 (the kernel keeps whole
    pages, rounded down), but ``memory.limit_bytes`` said 100000001 and the fit was judged
    against it.  The setting stays as asked; the limit is the kernel's, said once, and the
    rounding is no change the workload made (the fake kernel rounds as the real one; the
    limit is over the fake group's 200 MiB peak, so that the run has a verdict)."""
    root, psc = v2_tree(cgfs, tmp_path, overrides=COUNTERS)
    be = CgroupV2Backend(root=root, proc_self_cgroup=psc, euid=0)
    r = profile(["true"], Limits(memory=300_000_001), backend=be, interval=0.01)
    # This host's page: 299999232 bytes of 4 KiB pages (299958272 of an arm64 kernel's 64 KiB).
    page = os.sysconf("SC_PAGESIZE")
    held = 300_000_001 // page * page
    assert r.limits.memory == 300_000_001 and r.memory.limit_bytes == held
    assert r.limits_changed == ()  # the group read back the kernel's figure: not a change
    said = [w for w in r.warnings if w.startswith("--memory 300000001")]
    assert said == [
        f"--memory 300000001 is not a whole number of {page}-byte pages: the kernel holds "
        f"{held} bytes ({format_binary(held)}), which the result records as the limit and "
        "judges the fit against"
    ]
    fit = limit_fit(r)  # the fake group's 200 MiB peak
    assert fit is not None and fit.limit == held
    whole = profile(["true"], Limits(memory="64m"), backend=be, interval=0.01)
    assert whole.memory.limit_bytes == 64 * MIB and not any("pages" in w for w in whole.warnings)


def test_the_kernels_limit_where_the_page_is_known() -> None:
    assert kernel_memory(100_000_001, 4096) == 99_999_744
    assert kernel_memory(100_000_001, 65536) == 99_942_400  # a 64 KiB-page arm64 kernel's
    assert kernel_memory(64 * MIB, 4096) == 64 * MIB
    # A remote Docker daemon's page is not known: the limit as asked, and nothing said.
    assert kernel_memory(100_000_001, None) == 100_000_001
    assert rounded_memory(Limits(memory=100_000_001), None) == []
    assert rounded_memory(Limits(memory="64m"), 4096) == []
    assert rounded_memory(Limits(), 4096) == []


def test_docker_knows_the_page_of_a_local_daemon_only() -> None:
    from edgeprof.backends.docker.backend import DockerBackend

    class Client:
        local = True

    be = DockerBackend(client=Client())  # type: ignore[arg-type]
    assert be.page_size() == os.sysconf("SC_PAGESIZE")
    Client.local = False
    assert be.page_size() is None
