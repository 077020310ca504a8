"""limits.py: resolving limits against the host's CPUs, and the thread-pool variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.cpu_units import CFS_PERIOD_US, MIN_QUOTA_US
from edgeprof.errors import ConfigError, LimitError
from edgeprof.measure.limits import (
    FRACTIONAL_PERIOD_US,
    THREAD_VARS,
    cpu_period_us,
    faster_than_device,
    given_count,
    quota_can_stall,
    resolve,
    thread_env,
)
from edgeprof.model import CpuStats, LatencyStats, Limits, PhaseStats

FOUR = (0, 1, 2, 3)


def test_integer_cpus_pinned_to_first_n_available() -> None:
    applied, auto = resolve(Limits(cpus=2, memory="64m"), FOUR)
    assert auto is True
    assert applied.cpuset == (0, 1)
    assert applied.cpus == 2.0
    assert applied.memory == 64 * 2**20


def test_pinning_follows_the_available_list_not_cpu_numbers() -> None:
    applied, auto = resolve(Limits(cpus=2), (2, 5, 7))
    assert (applied.cpuset, auto) == ((2, 5), True)
    applied, auto = resolve(Limits(cpus=3), (2, 5, 7))
    assert (applied.cpuset, auto) == ((2, 5, 7), True)


@pytest.mark.parametrize("cpus", [0.5, 1.5, 2.25, 3.99])
def test_fractional_cpus_not_pinned(cpus: float) -> None:
    applied, auto = resolve(Limits(cpus=cpus), FOUR)
    assert auto is False
    assert applied.cpuset is None
    assert applied == Limits(cpus=cpus)


def test_explicit_cpuset_is_kept_and_not_auto() -> None:
    applied, auto = resolve(Limits(cpus=1, cpuset="2-3"), FOUR)
    assert (applied.cpuset, auto) == ((2, 3), False)
    applied, auto = resolve(Limits(cpuset="1"), FOUR)
    assert (applied.cpuset, applied.cpus, auto) == ((1,), None, False)


def test_no_limits_unchanged() -> None:
    assert resolve(Limits(), FOUR) == (Limits(), False)


def test_cpus_above_available() -> None:
    with pytest.raises(LimitError) as e:
        resolve(Limits(cpus=3), (0, 1))
    msg = str(e.value)
    assert "--cpus 3" in msg and "2 CPU(s)" in msg and "0-1" in msg
    with pytest.raises(LimitError):
        resolve(Limits(cpus=2.5), (0, 1))
    resolve(Limits(cpus=2), (0, 1))  # exactly all of them is fine


def test_cpuset_outside_available_names_the_cpu() -> None:
    with pytest.raises(LimitError) as e:
        resolve(Limits(cpuset="0,7"), FOUR)
    msg = str(e.value)
    assert "CPU 7 " in msg
    assert "available: 0-3" in msg
    with pytest.raises(LimitError, match="CPU 5-6 is not available"):
        resolve(Limits(cpuset="1,5-6"), FOUR)


def test_a_cpu_the_machine_lacks_is_refused_even_over_the_host() -> None:
    """``--cpuset 5`` on a 2-CPU host: no --allow-over-host hint, and that option does not
    let it through (the kernel refused it at launch, ERANGE)."""
    two = frozenset({0, 1})
    for over in (False, True):
        with pytest.raises(LimitError) as e:
            resolve(Limits(cpuset="5"), (0, 1), allow_over_host=over, possible=two)
        assert str(e.value) == "--cpuset 5: CPU 5 does not exist on this machine (its CPUs: 0-1)"
    with pytest.raises(LimitError, match=r"^--cpuset 1,5-6: CPUs 5-6 do not exist on "):
        resolve(Limits(cpuset="1,5-6"), (0, 1), allow_over_host=True, possible=two)
    # A CPU that exists but is not this run's (outside the affinity) keeps the way round it.
    with pytest.raises(LimitError, match=r"CPU 1 is not available here .*--allow-over-host"):
        resolve(Limits(cpuset="1"), (0,), possible=two)
    applied, _ = resolve(Limits(cpuset="1"), (0,), allow_over_host=True, possible=two)
    assert applied.cpuset == (1,)


def test_cpus_above_cpuset_size() -> None:
    with pytest.raises(LimitError) as e:
        resolve(Limits(cpus=2, cpuset="3"), FOUR)
    assert "--cpus 2 exceeds the 1 CPU(s) of --cpuset 3" in str(e.value)
    with pytest.raises(LimitError):
        resolve(Limits(cpus=1.5, cpuset="0"), FOUR)


def test_limit_error_is_a_config_error() -> None:
    assert issubclass(LimitError, ConfigError)


def test_thread_env_for_cpus() -> None:
    assert thread_env(Limits(cpus=1), {}, {}) == {v: "1" for v in THREAD_VARS}
    assert thread_env(Limits(cpus=1.5), {}, {}) == {v: "2" for v in THREAD_VARS}
    assert thread_env(Limits(cpus=0.25), {}, {}) == {v: "1" for v in THREAD_VARS}
    assert set(THREAD_VARS) == {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}


def test_thread_env_cpuset_and_min() -> None:
    assert thread_env(Limits(cpuset="0-2"), {}, {}) == {v: "3" for v in THREAD_VARS}
    assert thread_env(Limits(cpus=2, cpuset="0-3"), {}, {})["OMP_NUM_THREADS"] == "2"
    assert thread_env(Limits(cpus=0.5, cpuset="0-3"), {}, {})["OMP_NUM_THREADS"] == "1"


def test_thread_env_none_without_cpu_limits() -> None:
    assert thread_env(Limits(memory="64m"), {}, {}) == {}


def test_thread_env_does_not_override_user_or_inherited() -> None:
    got = thread_env(Limits(cpus=2), {"OMP_NUM_THREADS": "8"}, {"MKL_NUM_THREADS": "4"})
    assert got == {"OPENBLAS_NUM_THREADS": "4"}  # -E's count before the inherited one
    # an inherited empty value is still the user's choice, and gives no count
    empty = thread_env(Limits(cpus=2), {"OMP_NUM_THREADS": ""}, {})
    assert empty == {"OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}


def test_a_count_given_for_one_thread_variable_sizes_the_others() -> None:
    """A tester's ``-E OMP_NUM_THREADS=4 --cpus 1`` had been given ``MKL_NUM_THREADS=1``
    beside it, and torch (MKL's count) ran 1 thread in a run labelled 4."""
    got = thread_env(Limits(cpus=1), {}, {"OMP_NUM_THREADS": "4"})
    assert got == {"OPENBLAS_NUM_THREADS": "4", "MKL_NUM_THREADS": "4"}
    inherited = thread_env(Limits(cpus=1), {"OMP_NUM_THREADS": " 2 "}, {})
    assert inherited == {"OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    # OpenMP's per-level list, 0 or text is no count for MKL or OpenBLAS: the CPUs' count.
    for odd in ("4,2", "0", "max"):
        got = thread_env(Limits(cpus=1), {}, {"OMP_NUM_THREADS": odd})
        assert got == {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}, odd
    assert given_count({"MKL_NUM_THREADS": "3"}, {"OPENBLAS_NUM_THREADS": "5"}) == "5"
    assert given_count({}, {}) is None


@pytest.mark.parametrize(
    ("limits", "period"),
    [
        (Limits(), None),  # no quota, no period
        (Limits(cpuset="0"), None),
        (Limits(cpus=0.5), FRACTIONAL_PERIOD_US),
        (Limits(cpus=0.75), FRACTIONAL_PERIOD_US),
        (Limits(cpus=1.5), FRACTIONAL_PERIOD_US),
        # Under a fifth of a CPU the default period would hold a quota under the kernel's 1 ms.
        (Limits(cpus=0.25), FRACTIONAL_PERIOD_US),
        (Limits(cpus=0.1), 10_000),
        (Limits(cpus=0.15), 6667),
        (Limits(cpus=0.01), 100_000),
        # An integer share on exactly as many cores never stalls: Docker's period.
        (Limits(cpus=2, cpuset="0-1"), CFS_PERIOD_US),
        # ... but on more cores than its share it does.
        (Limits(cpus=1, cpuset="0-1"), FRACTIONAL_PERIOD_US),
        (Limits(cpus=0.5, cpu_period_us="100ms"), 100_000),
        (Limits(cpus=1, cpuset="0", cpu_period_us="10ms"), 10_000),
    ],
)
def test_cpu_period_chosen(limits: Limits, period: int | None) -> None:
    applied, _ = resolve(limits, FOUR)
    assert cpu_period_us(applied, len(FOUR)) == period
    if period is not None and applied.cpus is not None:
        assert applied.cpus * period >= MIN_QUOTA_US  # always a quota the kernel accepts


@pytest.mark.parametrize(
    ("cpus", "period"),
    [
        (4, CFS_PERIOD_US),  # a researcher's --cpus 4 --allow-over-host on 2 CPUs
        (2.5, CFS_PERIOD_US),  # more than 2 CPUs: it can never use its share
        (1.5, FRACTIONAL_PERIOD_US),  # fewer than 2: it can
    ],
)
def test_a_quota_of_the_cpus_a_run_can_use_or_more_never_stalls(cpus: float, period: int) -> None:
    """``--cpus 4 --allow-over-host`` on 2 CPUs had the 5 ms period of a quota that can stall
    (``cfs_quota_us 20000 / cfs_period_us 5000``), and its held-off warning spoke of "the
    quota's stalls": its tasks never run on more than the 2 CPUs there are."""
    applied, auto = resolve(Limits(cpus=cpus), (0, 1), allow_over_host=True)
    assert not auto and applied.cpuset is None
    assert quota_can_stall(applied, 2) is (period == FRACTIONAL_PERIOD_US)
    assert cpu_period_us(applied, 2) == period
    # Where the CPUs are not known (a RunSpec a caller built), any quota may stall.
    assert quota_can_stall(applied, None) and cpu_period_us(applied, None) == FRACTIONAL_PERIOD_US
    # A cpuset is what the run can use, whatever the host's count.
    assert quota_can_stall(Limits(cpus=1, cpuset="0-1"), 1)
    assert not quota_can_stall(Limits(cpus=2, cpuset="0-1"), 8)


def test_an_over_host_quota_run_is_warned_without_the_quotas_stalls() -> None:
    """The run itself: Docker's period recorded, and other tasks' holding said as of a run
    with no stalls of its own (``crowded``: held 5 % of its time, here 20 % by a busier
    script)."""
    from edgeprof import profile
    from edgeprof.model import Counters
    from tests.fakes import FakeBackend, linear

    base = linear(100.0)

    def held(t: float) -> Counters:
        return base(t)._replace(cpu_some_us=int(t * 2e5), cpu_full_us=int(t * 2e5))

    be = FakeBackend(held, cpus=(0, 1))
    r = profile(["sleep", "0.2"], Limits(cpus=4), backend=be, interval=0.05, allow_over_host=True)
    assert r.cpu.period_s == CFS_PERIOD_US / 1e6
    (w,) = [w for w in r.warnings if w.startswith("other tasks on this host held the run")]
    assert "quota" not in w and "its times are slower than its limits alone make them" in w
    pinned = profile(["sleep", "0.2"], Limits(cpus=1.5), backend=be, interval=0.05)
    assert pinned.cpu.period_s == FRACTIONAL_PERIOD_US / 1e6
    (w,) = [w for w in pinned.warnings if w.startswith("other tasks on this host held the run")]
    assert "beyond the quota's stalls" in w


def test_integer_cpus_keep_docker_period_once_pinned() -> None:
    applied, auto = resolve(Limits(cpus=2), FOUR)
    assert auto and cpu_period_us(applied, len(FOUR)) == CFS_PERIOD_US


def test_cpu_period_without_cpus_is_refused() -> None:
    with pytest.raises(LimitError, match="--cpu-period 2ms is the period of a --cpus quota"):
        resolve(Limits(cpuset="0", cpu_period_us=2000), FOUR)


@pytest.mark.parametrize(
    ("cpus", "period", "fix"), [(0.5, "1ms", "2ms"), (0.25, "2ms", "4ms"), (0.3, "3ms", "3334us")]
)
def test_quota_under_a_millisecond_is_refused_naming_the_period(
    cpus: float, period: str, fix: str
) -> None:
    with pytest.raises(ConfigError, match=f"at least {fix}$"):
        Limits(cpus=cpus, cpu_period_us=period)


def test_cpu_period_is_part_of_the_label_only_when_asked() -> None:
    assert Limits(cpus=0.5).describe() == "cpus=0.5"
    assert Limits(cpus=0.5, cpu_period_us=20_000).describe() == "cpus=0.5, cpu-period=20ms"


# -- a device run that the quota let go faster than the device ---------------------------------


@pytest.mark.parametrize(
    ("cores", "cpus", "tasks", "throttled", "said"),
    [
        # One thread under a 4-core board at speed 0.3 (1.2 CPUs): a full host core each.
        (4, 1.2, 1, 5, ["at most 1 task(s)", "at least 1 of a host core"]),
        # Two under it: 0.6 each, still twice a board core.
        (4, 1.2, 2, 5, ["at most 2 task(s)", "at least 0.6 of a host core"]),
        # Never stalled: nothing held its tasks to the board's speed, whatever their number.
        (4, 1.2, 8, 0, ["the quota never stalled it"]),
        (4, 1.2, 1, 0, ["the quota never stalled it", "at most 1 task(s)"]),
        # A whole-number share pinned to a core (4 × 0.25): no stall is expected there.
        (4, 1.0, 1, None, ["at most 1 task(s)", "each do 0.25 of a host core"]),
        (4, 1.2, 1, 0, ["(a quota is one number for the group, not a speed per core)"]),
        # One core (speed 0.5): no other core for the share to go to; what ran at full
        # speed idled within its periods (it had been told of cores, a user's).
        (1, 0.5, 1, 0, ["the quota never stalled it (a quota slows only work that does not "
                        "idle within its period)"]),
    ],
)
def test_a_device_run_allowed_to_go_faster_than_the_device_is_said(
    cores: int, cpus: float, tasks: int, throttled: int | None, said: list[str]
) -> None:
    w = faster_than_device(cores, cpus, tasks, throttled)
    assert w is not None and w.startswith("this run can be faster than the device")
    assert all(s in w for s in said), w


def test_a_devices_cores_are_judged_only_under_its_own_share(tmp_path: Path) -> None:
    """Under the user's ``--cpus`` the share says nothing of the device's speed per core: the
    warning had made one up (0.125 of a host core for a 4-core board under ``--cpus 0.5``)."""
    from edgeprof.analysis.device_limits import device_limits, run_device

    cat = tmp_path / "devices.yml"
    cat.write_text("devices:\n  board:\n    cores: 4\n    memory: 96m\n    speed: 0.3\n")
    assert device_limits("board", cat).cores == 4
    assert device_limits("board", cat, cpus="0.5").cores is None

    def cores(*cpus: str) -> int | None:
        return run_device(
            "board",
            cat,
            cpus=cpus,
            memory=(),
            cpu_period=None,
            calibration=None,
            env=(),
            gpu_memory=None,
            on_host=True,
        ).cores

    assert cores() == 4
    assert cores("0.5", "1") is None


@pytest.mark.parametrize(
    ("cores", "cpus", "tasks", "throttled"),
    [
        (4, 1.2, 4, 9),  # as many tasks as cores, stalled: each held to its share
        (4, 1.0, 5, None),  # 5 tasks on one pinned core: 0.2 each, under a board core
        (4, 1.2, None, None),  # nothing measured: nothing claimed
        (2, 2.0, 1, 0),  # a device as fast as the host: nothing to emulate
        (1, 0.5, 1, 12),  # one core at half speed, stalled: as the device
    ],
)
def test_a_device_run_held_to_the_device_says_nothing(
    cores: int, cpus: float, tasks: int | None, throttled: int | None
) -> None:
    assert faster_than_device(cores, cpus, tasks, throttled) is None


def _cpu(task_speed_pct: float | None, period_s: float | None = 0.005) -> CpuStats:
    return CpuStats(
        user_s=1.0,
        system_s=0.0,
        total_s=1.0,
        avg_pct=50.0,
        peak_pct=50.0,
        peak_window_s=1.0,
        throttled_s=0.5,
        nr_throttled=100,
        nr_periods=200,
        period_s=period_s,
        task_speed_pct=task_speed_pct,
    )


def test_an_idle_thread_does_not_hide_a_busy_task_faster_than_a_device_core() -> None:
    """A user's report: ``import numpy`` starts an idle OpenBLAS thread, so a single busy loop
    under a 2-core board at speed 0.25 (0.5 CPUs) showed 2 tasks and no warning, while its
    thread ran at 0.41 of a host core.  The speed half the threads' CPU time ran at decides
    where it was read; the count of tasks that exist only where it was not."""
    w = faster_than_device(2, 0.5, 2, 100, _cpu(41.0))
    assert w is not None
    assert "half of its threads' CPU time ran at 0.41 of a host core or faster" in w
    assert "task(s)" not in w
    assert faster_than_device(2, 0.5, 2, 100, _cpu(None)) is None  # the count alone: 2 tasks
    # Two busy tasks, each held to a board core (0.25; a period's quota over a reading's
    # 0.5 s span, 0.5 × 5 ms / 0.5 s, and 5 % are within measurement): nothing said.
    assert faster_than_device(2, 0.5, 2, 100, _cpu(25.0 * 1.05 + 0.49)) is None
    assert faster_than_device(2, 0.5, 2, 100, _cpu(25.0 * 1.05 + 0.51)) is not None
    # One task that stayed at a board core's speed, with one thread: the count says nothing
    # once the threads' times were read.
    assert faster_than_device(2, 0.5, 1, 100, _cpu(20.0)) is None


def test_a_device_run_faster_than_its_cores_says_what_a_core_takes_for_an_iteration() -> None:
    """A 4-core board at 0.25, pinned to one host core, had told a user's 18.5 ms iterations
    "can be faster than the device" with no figure; one of its cores takes 40 ms for their
    10 ms of CPU."""
    from edgeprof.measure.runner import iteration_cpu
    from tests.unit.conftest import make_result

    w = faster_than_device(4, 1.0, 1, 0, _cpu(None), 0.0101)
    assert w is not None and w.endswith(
        "; an iteration's 10.1ms of CPU time takes a core of the device about 40.4ms (on one "
        "thread, waits left out: an estimate)"
    )
    assert "an iteration's" not in (faster_than_device(4, 1.0, 1, 0, _cpu(None)) or "")
    # The CPU time an iteration: of the phase holding every iteration, over their count.
    lat = LatencyStats(count=50, mean_s=0.02, p50_s=0.02, p90_s=0.02, p95_s=0.02,
                       p99_s=0.02, max_s=0.02, per_s=None)  # fmt: skip
    infer = PhaseStats("infer", 1, 0.2, 1.0, 0.505, 50.0, None, None, None, latency=lat)
    load = PhaseStats("load", 1, 0.0, 0.2, 0.1, 50.0, None, None, None)
    assert iteration_cpu(make_result(latency=lat, phases=(load, infer))) == pytest.approx(0.0101)
    assert iteration_cpu(make_result(latency=lat, phases=(load,))) is None


def test_a_devices_pools_are_its_cores_with_mkl_held_to_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a 4-core board at 0.3 (1.2 CPUs), torch 2.13 on this 2-core host took 2 threads
    from ``OMP_NUM_THREADS=4``: MKL caps at the host's physical cores unless
    ``MKL_DYNAMIC=FALSE`` (then 4).  A value the user gave, or exported, is theirs."""
    from edgeprof.analysis.device_limits import device_limits, run_device

    for v in (*THREAD_VARS, "MKL_DYNAMIC"):
        monkeypatch.delenv(v, raising=False)
    cat = tmp_path / "devices.yml"
    cat.write_text("devices:\n  board:\n    cores: 4\n    memory: 96m\n    speed: 0.3\n")
    pools = {**dict.fromkeys(THREAD_VARS, "4"), "MKL_DYNAMIC": "FALSE"}
    assert device_limits("board", cat).env == pools
    given = device_limits("board", cat, env={"MKL_DYNAMIC": "TRUE"}).env
    assert given == {**pools, "MKL_DYNAMIC": "TRUE"}
    assert device_limits("board", cat, cpus="0.5").env == {}  # the user's share: the runner's

    def env(items: tuple[str, ...]) -> tuple[str, ...]:
        return run_device(
            "board",
            cat,
            cpus=(),
            memory=(),
            cpu_period=None,
            calibration=None,
            env=items,
            gpu_memory=None,
            on_host=True,
        ).env

    assert env(()) == tuple(f"{k}={v}" for k, v in pools.items())
    monkeypatch.setenv("MKL_DYNAMIC", "TRUE")  # exported: kept, not overridden
    assert "MKL_DYNAMIC=FALSE" not in env(())
    # A count given for one pool sizes the device's others (they had stayed 4 beside it).
    assert env(("OMP_NUM_THREADS=1",)) == (
        "OMP_NUM_THREADS=1",
        "OPENBLAS_NUM_THREADS=1",
        "MKL_NUM_THREADS=1",
    )
    one = device_limits("board", cat, env={"MKL_NUM_THREADS": "2"}).env
    assert one == dict.fromkeys(THREAD_VARS, "2")  # MKL_DYNAMIC: exported above, kept
