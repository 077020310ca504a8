"""Other tasks holding the run's CPUs (edgeprof.measure.contention): when the run is warned
of them, from its group's ``cpu.pressure`` ``full`` less its throttled time."""

from __future__ import annotations

import pytest

from edgeprof import Limits, profile
from edgeprof.backends._tasks import TaskScan
from edgeprof.measure.contention import (
    contention_warning,
    held_by_others,
    held_time,
    threads_warning,
)
from edgeprof.model import Counters, CpuStats
from tests.fakes import FakeBackend, Script, linear


@pytest.mark.parametrize(
    ("wall", "held", "throttled", "warned"),
    [
        (3.0, 2.0, 0.0, True),  # a tester's --cpus 1 on a busy core
        (3.0, 2.0, None, True),  # no quota: no throttled time
        (3.0, 0.2, 0.0, False),  # under a tenth of its time
        (3.0, 2.2, 2.0, False),  # the quota's stalls, not others
        (3.0, 1.0, 2.5, False),  # a multi-threaded run's throttled time adds up its CPUs'
        (0.1, 0.015, 0.0, True),  # 15 % of a short run: over three ticks
        # A tester's A/A busy 5 (measure.contention.MIN_HELD_S): the quiet batch's most held
        # run, 24 % but under a 4 ms tick (one wake-up); the loaded batch's least held, 38 %.
        (0.009345, 0.002201, 0.0, False),
        (0.012206, 0.004602, 0.0, True),
        (0.012206, 0.003999, 0.0, False),  # just under the tick
        (0.002, 0.006, 0.0, False),  # held past its wall: a container's set-up counted
        (0.1, 0.05, 0.0, True),  # half of a short run
        (3.0, None, 0.0, False),  # no pressure file
    ],
)
def test_a_run_is_warned_when_others_held_it_off_its_cpus(
    wall: float, held: float | None, throttled: float | None, warned: bool
) -> None:
    w = contention_warning(wall, held, throttled, [0])
    assert (w is not None) == warned, w


def test_the_held_time_is_never_below_zero_nor_a_guess() -> None:
    assert held_by_others(1.0, 2.5) == 0.0
    assert held_by_others(1.0, None) == 1.0
    assert held_by_others(None, 0.0) is None


def test_the_warning_says_how_long_and_where() -> None:
    w = contention_warning(3.28, 2.05, 0.0, [3])
    assert w == (
        "other tasks on this host held the run off its CPU 3 for 2.05s (62% of its wall "
        "time) beyond the quota's stalls: its times are slower than its limits alone make "
        "them (run it on an idle host, or on --cpuset CPUs nothing else uses)"
    )
    assert "held the run off its CPUs 0-1 for 1.50s" in (
        contention_warning(3.0, 2.0, 0.5, [0, 1]) or ""
    )
    assert "held the run off its CPUs for" in (contention_warning(3.0, 2.0, 0.0, None) or "")


def test_the_warning_says_what_the_run_had() -> None:
    """``edgeprof run -- python x.py`` on a busy host: no quota and no device, and it was told
    of "the quota's stalls" and of "the device's" times."""
    plain = contention_warning(3.0, 2.0, None, None, quota=False, limited=False)
    assert plain is not None and "quota" not in plain and "device" not in plain
    assert "for 2.00s (67% of its wall time): its times are slower than on an idle host" in plain
    pinned = contention_warning(3.0, 2.0, None, [0, 1], quota=False, limited=True)
    assert pinned is not None and "quota" not in pinned
    assert "its times are slower than its limits alone make them" in pinned
    board = contention_warning(3.0, 2.0, 0.5, None, device="rpi4")
    assert board is not None
    assert (
        "beyond the quota's stalls: its times are slower than its limits alone make them "
        "(device rpi4's cores here)"
    ) in board


def test_a_repeats_warning_names_the_runs_it_is_about() -> None:
    import dataclasses

    from edgeprof.report.results import render_plain

    from .conftest import make_result

    runs = [make_result(warnings=("a warning",)) for _ in range(3)]
    runs[1] = dataclasses.replace(runs[1], warnings=("a warning", "held off, run 2's"))
    runs[2] = dataclasses.replace(runs[2], warnings=("a warning", "held off, 2 and 3"))
    runs[1] = dataclasses.replace(runs[1], warnings=(*runs[1].warnings, "held off, 2 and 3"))
    text = render_plain(runs)
    assert "  warning: a warning\n" in text  # every run's: no number
    assert "  warning (run 2): held off, run 2's\n" in text
    assert "  warning (runs 2, 3): held off, 2 and 3\n" in text


def _cpu(
    wait: float | None,
    held: float | None,
    throttled: float | None = 0.0,
    total: float | None = None,
) -> CpuStats:
    return CpuStats(None, None, total, None, None, None, throttled, None, None, None, wait, held)


# A tester's onnxruntime model with intra_op_num_threads=4 under --cpus 1: 5 tasks, some
# 0.32 s and full 0.04 s of 0.42 s.
ORT_T4 = (5, 1, 0.42, _cpu(0.32, 0.04))


def test_more_threads_than_cpus_waiting_for_each_other_is_warned_with_the_fix() -> None:
    w = threads_warning(*ORT_T4, omp="1")
    assert w == (
        "the run peaked at 5 tasks (processes and threads) on 1 CPU, and they waited for each "
        "other 0.28s (67% of its wall time): more threads than CPUs slow it here and on the "
        "device where the script sets that count itself, but a framework's default pool is "
        "sized from the host's cores, not the device's (onnxruntime's intra-op pool, torch's "
        "inter-op pool), so a device run needs its count set explicitly (to 1: onnxruntime's "
        "SessionOptions.intra_op_num_threads, which does not read OMP_NUM_THREADS (1 in this "
        "run); torch.set_num_threads(1) and torch.set_num_interop_threads(1))"
    )
    two = threads_warning(7, 2, 1.0, _cpu(0.5, 0.05, total=1.8))
    assert two is not None and two.startswith("the run peaked at 7 tasks (processes and threads)")
    assert "on 2 CPUs, and they waited for each other 0.45s (45% of its wall time)" in two
    # OMP_NUM_THREADS unknown: not named
    assert two.endswith("torch.set_num_threads(2) and torch.set_num_interop_threads(2))")


def test_more_processes_than_cpus_are_told_to_shrink_the_pool_not_the_threads() -> None:
    """A tester's fork bomb under --pids 32 --cpus 0.5: 32 one-thread processes waited for
    each other 0.38 s of its 0.54 s (71 %) and had been told to set onnxruntime's
    intra_op_num_threads."""
    bomb = (32, 1, 0.535, _cpu(0.40, 0.02))
    w = threads_warning(*bomb, omp="1", processes=32)
    assert w == (
        "the run peaked at 32 processes on 1 CPU, and they waited for each other 0.38s (71% "
        "of its wall time): processes that take turns on 1 CPU stretch each one's time here "
        "and on the device, if not the work's total (set the pool or worker count: "
        "multiprocessing's Pool(processes=…), a DataLoader's num_workers)"
    )
    # A Pool(4) on 2 CPUs whose parent runs its pool's threads: the processes, with them.
    pool = threads_warning(9, 2, 1.0, _cpu(0.5, 0.05, total=1.8), processes=5)
    assert pool is not None
    assert pool.startswith("the run peaked at 5 processes (9 tasks with their threads) on 2 CPUs")
    assert "peaked at 5 processes (9 tasks with their threads) on 2 CPUs" in pool
    assert "intra_op" not in pool
    # Threads of as many processes as CPUs (or fewer), or not counted: the threads' advice.
    for processes in (1, 2, None):
        threads = threads_warning(7, 2, 1.0, _cpu(0.5, 0.05, total=1.8), processes=processes)
        assert threads is not None and "torch.set_num_threads(2)" in threads, processes
        assert threads.startswith("the run peaked at 7 tasks (processes and threads) on 2 CPUs")


# A tester's run of a 4-core board at speed 0.15 (cpus=0.6: 1 CPU here): 3 tasks waited for
# each other 0.81 s of the 3.48 s other tasks did not hold it off (23 %).
BOARD = (3, 1, 5.17, _cpu(2.50, 1.69))


def test_a_devices_tasks_are_counted_against_its_cores() -> None:
    """The tester had been told to set 1 thread ("more threads than CPUs slow it here and on
    the device") where edgeprof had set OMP_NUM_THREADS=4 for the board: 3 threads do not
    crowd a 4-core device, and the quota's time-sharing of them is the emulation."""
    assert threads_warning(*BOARD, omp="4", share=0.6) is not None  # a plain --cpus 0.6
    assert threads_warning(*BOARD, omp="4", share=0.6, device_cores=4) is None
    assert threads_warning(*BOARD, omp="4", share=0.6, device_cores=3) is None  # as many
    # More tasks than the device's cores: said of the device, with its count to set.
    w = threads_warning(6, 1, 5.17, _cpu(2.50, 1.69), omp="4", share=0.6, device_cores=4)
    assert w == (
        "the run peaked at 6 tasks (processes and threads), more than the device's 4 cores, "
        "and they waited for each other 0.81s (23% of the 3.48s other tasks did not hold it "
        "off its CPUs): more threads than cores slow it on the device where the script sets "
        "that count itself, but a framework's default pool is sized from the host's cores, "
        "not the device's (onnxruntime's intra-op pool, torch's inter-op pool), so a device "
        "run needs its count set explicitly (to 4: onnxruntime's "
        "SessionOptions.intra_op_num_threads, which does not read OMP_NUM_THREADS (4 in this "
        "run); torch.set_num_threads(4) and torch.set_num_interop_threads(4))"
    )
    pool = threads_warning(6, 1, 5.17, _cpu(2.50, 1.69), processes=5, device_cores=1)
    assert pool is not None and pool.startswith(
        "the run peaked at 5 processes (6 tasks with their threads), more than the device's "
        "1 core, and they waited"
    )
    assert "take turns on 1 core stretch each one's time on the device, if not the work's " \
        "total (set the pool" in pool


def test_a_busy_hosts_holding_is_taken_out_of_the_share() -> None:
    """Measured here: torch.set_num_threads(4) under --cpus 1 while other jobs held the core
    6.17 s of 8.43 s; its own threads' 0.57 s was 7 % of the wall, 25 % of the rest."""
    w = threads_warning(7, 1, 8.432, _cpu(6.746, 6.173), omp="1")
    assert w is not None
    assert "waited for each other 0.57s (25% of the 2.26s other tasks did not hold it off" in w


@pytest.mark.parametrize(
    ("tasks", "cpus", "wall", "cpu"),
    [
        (2, 1, 1.036, _cpu(0.803, 0.791)),  # 1 pool thread, here: 0.012 s of 0.245 s (5 %)
        (1, 1, 8.169, _cpu(6.036, 6.036)),  # single-threaded torch: never waited for itself
        (1, 1, 0.42, _cpu(0.32, 0.04)),  # one task: whatever waited, it was not its threads
        (5, None, 0.42, _cpu(0.32, 0.04)),  # no CPU limit
        (5, 1, 0.42, _cpu(None, None)),  # the process backend
        (5, 1, 0.42, _cpu(0.05, 0.04)),  # 0.01 s: under the least warned of
        (5, 1, 0.42, _cpu(0.40, 0.40, 0.40)),  # the quota's stalls count in full too
        (5, 1, 0.42, _cpu(0.42, 0.42)),  # held off the whole time: nothing left to share
    ],
)
def test_no_warning_without_crowded_threads_or_the_figures(
    tasks: int, cpus: int | None, wall: float, cpu: CpuStats
) -> None:
    assert threads_warning(tasks, cpus, wall, cpu) is None


def test_on_several_cpus_only_a_run_that_kept_them_busy_is_warned() -> None:
    """A verifier's onnxruntime model with one intra-op thread (3 tasks) under --cpus 2 on a
    busy host: some 0.119 s, full 0.014 s of 0.25 s, with 0.234 s of CPU time (0.47 of its 2
    CPUs): told to set 2 threads, slower than its 1.  Another task holding one CPU while its
    thread ran on the other is "some" too."""
    assert threads_warning(3, 2, 0.25, _cpu(0.119, 0.014, total=0.234)) is None
    assert threads_warning(3, 2, 0.25, _cpu(0.119, 0.014)) is None  # CPU time unknown
    # 90 % of its 2 CPUs over the 0.236 s it was not held off: busy, its threads crowded.
    assert threads_warning(5, 2, 0.25, _cpu(0.119, 0.014, total=0.425)) is not None
    assert threads_warning(5, 2, 0.25, _cpu(0.119, 0.014, total=0.420)) is None
    # Under a 1.5-CPU quota on 2 CPUs, busy is 90 % of 1.5.
    assert threads_warning(5, 2, 0.25, _cpu(0.119, 0.014, total=0.32), share=1.5) is not None
    # One CPU: "some" less "full" is its own waiting alone; no CPU time needed.
    assert threads_warning(*ORT_T4) is not None


def test_the_threshold_is_a_tenth_of_the_uncontended_wall() -> None:
    assert threads_warning(5, 1, 1.0, _cpu(0.30, 0.20, 0.0)) is not None  # 0.10 of 0.80
    assert threads_warning(5, 1, 1.0, _cpu(0.27, 0.20, 0.0)) is None  # 0.07 of 0.80
    # The quota's stalls are not others': they stay in the wall it is a share of.
    assert threads_warning(5, 1, 1.0, _cpu(0.29, 0.20, 0.20)) is None  # 0.09 of 1.00
    assert threads_warning(5, 1, 0.1, _cpu(0.035, 0.02, 0.0)) is None  # 0.015 s: too short


def crowded(tasks: int, cpu_pct: float = 50.0) -> Script:
    """A run of ``tasks`` tasks on too few CPUs: some task waits 70 % of the time, none of
    them can run 5 % of it (other tasks), pids.peak ``tasks``; its CPU time at ``cpu_pct``
    of one CPU (on several CPUs, busy is 90 % of them: :data:`SATURATED`)."""
    base = linear(cpu_pct)

    def script(t: float) -> Counters:
        return base(t)._replace(
            pids_current=tasks,
            pids_peak=tasks,
            cpu_some_us=int(t * 7e5),
            cpu_full_us=int(t * 5e4),
        )

    return script


def test_a_run_is_told_the_cpus_it_had_and_the_omp_it_was_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    r = profile(["sleep", "0.2"], Limits(cpus=1), backend=FakeBackend(crowded(5)), interval=0.05)
    (w,) = [w for w in r.warnings if "waited for each other" in w]
    assert w.startswith("the run peaked at 5 tasks (processes and threads) on 1 CPU, and")
    # onnxruntime's pool ignores OMP_NUM_THREADS; torch starts from it (it had been told
    # "they do not read OMP_NUM_THREADS", a tester's).
    assert w.endswith(
        "onnxruntime's SessionOptions.intra_op_num_threads, which does not read "
        "OMP_NUM_THREADS (1 in this run); torch.set_num_threads(1) and "
        "torch.set_num_interop_threads(1))"
    )
    # --cpus 4 allowed over a 2-CPU host had 2 CPUs: the thread count to set is 2.
    r = profile(
        ["sleep", "0.2"],
        Limits(cpus=4),
        backend=FakeBackend(crowded(5, 190.0), cpus=(0, 1)),
        interval=0.05,
        allow_over_host=True,
    )
    (w,) = [w for w in r.warnings if "waited for each other" in w]
    assert " on 2 CPUs, and " in w and "torch.set_num_threads(2)" in w
    assert "does not read OMP_NUM_THREADS (4 in this run)" in w
    r = profile(
        ["sleep", "0.2"],
        Limits(cpus=2),
        backend=FakeBackend(crowded(5, 190.0), cpus=(0, 1)),
        interval=0.05,
        env={"OMP_NUM_THREADS": "3"},
    )
    assert any("OMP_NUM_THREADS (3 in this run)" in w for w in r.warnings), r.warnings


def test_a_run_without_cpu_limits_or_with_as_many_cpus_as_tasks_is_not_warned() -> None:
    for limits, tasks in ((Limits(), 5), (Limits(cpus=2), 2)):
        be = FakeBackend(crowded(tasks), cpus=(0, 1))
        r = profile(["sleep", "0.1"], limits, backend=be, interval=0.05)
        assert not [w for w in r.warnings if "waited for each other" in w], r.warnings


def test_the_runs_process_count_words_its_advice_and_is_kept() -> None:
    """The sampler's task scans count the run's processes: the most at once is the result's
    ``processes_at_peak``, and more of them than CPUs get the pool's advice."""
    be = FakeBackend(crowded(8), tasks=TaskScan(processes=8, threads=8))
    r = profile(["sleep", "0.2"], Limits(cpus=1), backend=be, interval=0.05)
    assert r.processes_at_peak == 8
    (w,) = [w for w in r.warnings if "waited for each other" in w]
    assert w.startswith("the run peaked at 8 processes on 1 CPU, and they waited")
    assert "Pool(processes=…)" in w
    assert be.runs[0].scans and all(be.runs[0].scans)  # a quota's scans read the times too
    one = FakeBackend(crowded(8), tasks=TaskScan(processes=1, threads=8))
    r = profile(["sleep", "0.2"], Limits(cpus=1), backend=one, interval=0.05)
    assert r.processes_at_peak == 1
    (w,) = [w for w in r.warnings if "waited for each other" in w]
    assert "torch.set_num_threads(1)" in w


def test_a_cpuset_alone_counts_processes_without_reading_each_threads_times() -> None:
    be = FakeBackend(crowded(6), cpus=(0, 1), tasks=TaskScan(processes=6, threads=6))
    r = profile(["sleep", "0.2"], Limits(cpuset=(0,)), backend=be, interval=0.05)
    assert r.processes_at_peak == 6
    assert be.runs[0].scans and not any(be.runs[0].scans)  # a listing per process only
    assert any("peaked at 6 processes on 1 CPU" in w for w in r.warnings), r.warnings
    plain = FakeBackend(crowded(6), tasks=TaskScan(processes=6, threads=6))
    r = profile(["sleep", "0.1"], Limits(), backend=plain, interval=0.05)
    assert r.processes_at_peak is None and plain.runs[0].scans == []  # no CPU limit: no scan


def test_a_device_run_counts_its_tasks_against_the_devices_cores() -> None:
    """Through ``profile``: a device's quota (``device_cores``) under which 5 tasks crowd 1
    CPU here is warned of only where they outnumber the device's cores, with that count;
    the user's own ``--cpus`` (no device cores) against its CPUs."""
    from edgeprof.measure.runner import profile as measure  # the device as run resolved it

    for cores, said in ((8, ""), (4, "more than the device's 4 cores")):
        r = measure(
            ["sleep", "0.2"],
            Limits(cpus=0.6),
            backend=FakeBackend(crowded(5)),
            interval=0.05,
            device="board",
            device_cores=cores,
        )
        crowd = [w for w in r.warnings if "waited for each other" in w]
        assert [said in w for w in crowd] == ([True] if said else []), r.warnings
        assert not any("on 1 CPU" in w for w in crowd)
    r = profile(["sleep", "0.2"], Limits(cpus=0.6), backend=FakeBackend(crowded(5)), interval=0.05)
    assert any(" on 1 CPU, and they waited" in w for w in r.warnings), r.warnings


def test_a_short_runs_held_time_is_said_in_its_unit() -> None:
    """A tester's ``busy 5`` run held off 9.8 ms of 17.2 ms: warned now that the floor is a
    tick (``MIN_HELD_S``), and not "for 0.01s"."""
    w = contention_warning(0.017221, 0.009809, 0.0, None, quota=False, limited=False)
    assert w is not None and "held the run off its CPUs for 9.8ms (57% of its wall time):" in w
    assert held_time(0.25) == "0.25s"
    assert held_time(0.1) == "0.10s"
    assert held_time(0.0999) == "99.9ms"
    assert held_time(0.0005715) == "571.5µs"


def test_under_a_quota_only_the_time_beyond_its_pace_is_held_off() -> None:
    """A user's ``--cpus 0.5 --cpuset 1`` run beside a spinner: 1.042 s of CPU in 2.289 s
    (2.084 s at half a CPU), ``full`` 1.245 s, throttled 0.048 s: it had been "held … for
    1.20s (52% of its wall time)", where the quota's pace leaves 0.205 s (9 %) to others,
    under the tenth that is warned of."""
    from edgeprof.measure.contention import contention_warning, held_by_others, quota_room

    room = quota_room(2.289, 1.042, 0.5)
    assert room == pytest.approx(0.205)
    assert held_by_others(1.245, 0.048, room) == pytest.approx(0.205)
    assert contention_warning(2.289, 1.245, 0.048, (1,), room_s=room) is None
    assert contention_warning(2.289, 1.245, 0.048, (1,)) is not None  # uncapped: 1.20 s
    # A run at its quota's pace exactly: nothing left to others, however full reads.
    assert held_by_others(0.62, 0.0, quota_room(2.075, 1.0395, 0.5)) == 0.0
    # No quota or no CPU time: no cap.
    assert quota_room(2.0, None, 0.5) is None and quota_room(2.0, 1.0, None) is None


def test_idle_threads_are_not_counted_against_the_cores() -> None:
    """A user's torch script with set_num_threads(4) on a 4-core board: 7 tasks, 3 of them
    idle (0 CPU ticks), and it had been told to set 4 threads.  The threads busy at once are
    what waits for a core."""
    from edgeprof.measure.sampler import SeriesStats

    s = SeriesStats()
    ms = 1_000_000
    # 4 threads each runnable the whole 0.5 s (a quarter on the CPU), 3 idle ones.
    s.add_tasks(1.0, {t: (0, 0) for t in range(1, 8)})
    busy = {t: (125 * ms, 375 * ms) for t in range(1, 5)}
    s.add_tasks(1.5, {**busy, **{t: (10_000, 0) for t in range(5, 8)}})
    assert s.busy_tasks_peak == 4
    cpu = _cpu(3.0, 0.5)
    assert threads_warning(7, 1, 4.0, cpu, device_cores=4, busy=4) is None
    assert threads_warning(7, 1, 4.0, cpu, device_cores=4) is not None  # as before: counted 7
    w = threads_warning(7, 1, 4.0, cpu, device_cores=4, busy=6)
    assert w is not None and w.startswith(
        "the run kept 6 tasks busy at once (of 7 processes and threads), more than the "
        "device's 4 cores, and they waited"
    )
    # No run delay read: not known, so not counted.
    s2 = SeriesStats()
    s2.add_tasks(1.0, {1: (0, None)})
    s2.add_tasks(1.5, {1: (400 * ms, None)})
    assert s2.busy_tasks_peak is None
