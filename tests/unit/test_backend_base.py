"""The backend interface: typed capabilities with defaults, the collection scope, and the
Docker backend's pure parsers.  (The layering is pyproject's import contract.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from edgeprof.backends._peak_reset import FdPeakReset, SharedPeakReset, apply_floor
from edgeprof.backends.base import Backend, RunHandle
from edgeprof.backends.capabilities import CleanupScope
from edgeprof.backends.host_resources import cpus_possible
from edgeprof.measure import gc
from edgeprof.measure.runner import profile
from edgeprof.model import Counters, RunSpec
from tests.fakes import FakeBackend, FakeRun


class Minimal(Backend):
    """An outside backend: only the abstract methods, no optional capability."""

    name = "minimal"

    @property
    def mechanism(self) -> str:
        return "minimal"

    def check(self) -> None:
        return None

    def available_cpus(self) -> tuple[int, ...]:
        return (0,)

    def launch(self, spec: RunSpec) -> RunHandle:
        return FakeRun(spec, lambda t: Counters(cpu_usage_us=int(t * 1e6)))


def test_an_outside_backend_gets_every_capability_default() -> None:
    be = Minimal()
    assert be.runs_on_host and be.image is None and not be.accepts_events_fifo
    assert be.cleanup_scope() == CleanupScope() and be.cleanup_scope().empty
    assert be.warnings() == []
    r = profile([sys.executable, "-c", "pass"], backend=be, interval=0.01)
    assert (r.backend, r.mechanism, r.exit_code) == ("minimal", "minimal", 0)
    with be.launch(RunSpec(command=("true",))) as run:
        assert run.batch_reader is None and run.peak_reset is None and run.warnings == []
        run.wait(10)


def test_a_backend_missing_part_of_the_contract_cannot_be_made() -> None:
    class Incomplete(Backend):
        name = "incomplete"

        def check(self) -> None:
            return None

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()  # type: ignore[abstract]


def test_the_fake_backend_is_a_backend() -> None:
    assert isinstance(FakeBackend(), Backend)


def test_an_empty_scope_collects_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def walk(*_a: object) -> list[object]:
        raise AssertionError("an empty scope must not search any hierarchy")

    monkeypatch.setattr(gc, "stale_groups", walk)
    assert gc.collect_before_run(CleanupScope()) == []


def test_a_scope_collects_the_dead_runs_groups_in_its_roots(tmp_path: Path) -> None:
    dead = tmp_path / "edgeprof-99999999-1-0000abcd"  # a pid above pid_max: no owner
    dead.mkdir()
    (tmp_path / "other").mkdir()
    out = gc.collect_before_run(CleanupScope(cgroup_roots=(tmp_path,)))
    # A plain directory stands in for the group: nothing to kill; rmdir removes it.
    assert out == [f"removed dead run {dead.name}: 1 cgroup"]
    assert not dead.exists() and (tmp_path / "other").is_dir()


def test_apply_floor() -> None:
    c = Counters(memory_peak=100)
    assert apply_floor(c, None) is c
    assert apply_floor(c, 50).memory_peak == 100
    assert apply_floor(c, 150).memory_peak == 150
    assert apply_floor(Counters(), 150).memory_peak is None  # no kernel mark: nothing to raise


def test_per_descriptor_resets_have_no_floor(tmp_path: Path) -> None:
    assert FdPeakReset(tmp_path / "memory.peak").floor is None
    assert SharedPeakReset(tmp_path / "memory.max_usage_in_bytes").floor is None  # no reset yet


# -- the Docker backend's pure parts (no daemon) ------------------------------------------------


def test_net_dev_excludes_loopback() -> None:
    from edgeprof.backends.docker.stats import parse_net_dev

    text = (
        "Inter-|   Receive                            |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes ...\n"
        "    lo:  500 5 0 0 0 0 0 0  500 5 0 0 0 0 0 0\n"
        "  eth0: 1200 9 0 0 0 0 0 0  3400 7 0 0 0 0 0 0\n"
    )
    assert parse_net_dev(text) == (1200, 3400)


def test_stats_reply_to_counters() -> None:
    from edgeprof.backends.docker.stats import stats_counters

    assert stats_counters({"cpu_stats": {"cpu_usage": {"total_usage": 0}}}) is None  # gone
    c = stats_counters(
        {
            "cpu_stats": {
                "cpu_usage": {
                    "total_usage": 3_000_000,
                    "usage_in_usermode": 2_000_000,
                    "usage_in_kernelmode": 1_000_000,
                },
                "throttling_data": {"periods": 4, "throttled_periods": 1, "throttled_time": 5000},
            },
            "memory_stats": {"usage": 4096, "stats": {"inactive_file": 1024}},
            "blkio_stats": {
                "io_service_bytes_recursive": [
                    {"op": "Read", "value": 10},
                    {"op": "Write", "value": 20},
                    {"op": "Total", "value": 30},
                ]
            },
            "networks": {"eth0": {"rx_bytes": 7, "tx_bytes": 8}},
            "pids_stats": {"current": 3},
        }
    )
    assert c == Counters(
        cpu_usage_us=3000,
        cpu_user_us=2000,
        cpu_system_us=1000,
        nr_periods=4,
        nr_throttled=1,
        throttled_us=5,
        memory_current=4096,
        memory_inactive_file=1024,
        io_read_bytes=10,
        io_write_bytes=20,
        net_rx_bytes=7,
        net_tx_bytes=8,
        pids_current=3,
    )


def test_cpus_possible_reads_the_kernels_list(tmp_path: Path) -> None:
    f = tmp_path / "possible"
    f.write_text("0-1\n")  # this 2-CPU host's
    assert cpus_possible(f) == frozenset({0, 1})
    f.write_text("0-3,8\n")
    assert cpus_possible(f) == frozenset({0, 1, 2, 3, 8})
    f.write_text("garbage\n")
    assert cpus_possible(f) is None  # unknown, not "no CPU"
    assert cpus_possible(tmp_path / "absent") is None
