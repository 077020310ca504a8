"""The CPU figures' corrections to the counters as read: the window the rates over time are
taken over (:data:`WINDOW`, :func:`own_window`), edgeprof's own spawn taken out of the CPU
time (:data:`SPAWN`, :func:`without_spawn`), and the user/system split of the exact total
(:func:`cpu_split`).  :func:`~edgeprof.measure.assemble.build_result` applies them."""

from __future__ import annotations

from ..model import Counters
from ..units import us_to_s

WINDOW = """Docker's counters and its wall time cover different windows: the group's CPU time
and pressure count runc init's set-up in it, before the workload, while the wall time is
``StartedAt`` → ``FinishedAt`` (the workload's).  On the docker tier (cgroup v1, busybox,
``--cpus 1`` on one core) ``true`` read 20.8–23.8 ms of CPU in 0–2.7 ms of wall time: AVG CPU %
869–1809 %, and 0.06–0.11 s "held off its CPUs" (PSI over the set-up) against that wall time.

The two are made one window, the rates' only: from the group's reading just after the start
call returned (``RunHandle.before_start``) to the exit, both ends measured, so AVG CPU % is
at most the CPUs the run may use and the time held off at most its wall time, by
construction.  Not the other way round (a wall time that covers the set-up): the set-up's
CPU begins somewhere inside the start call, which took 153–231 ms before ``StartedAt`` there
(runc create, the shim), so such a "wall" would be mostly the daemon's and the rate a
fifth of the workload's.  The reading comes 2–38 ms after ``StartedAt`` (5–12 ms idle), so
the rates leave out the workload's first milliseconds, and a run over before it has no AVG
CPU % (``n/a``, said); the CPU time itself stays the group's whole (see
:func:`~edgeprof.measure.assemble.build_result`)."""


SPAWN = """edgeprof's own start-up of the workload works inside the run's group: the child
it forks joins the group before the exec, so that no instruction of the workload runs
outside it, and what that child does next (the rest of its Python ``preexec_fn``, then the
exec's teardown of its copy of edgeprof's address space) is charged to the group.  Counted
as the workload's, it had made every run's CPU time 1.5 ms high and its wall time 3 ms
long (a tester's 2-core cgroup v1 host, loaded): ``run -- true`` read 1.9–2.4 ms of CPU
against ``perf stat``'s 0.46–0.62 ms, a C program spinning 1, 2 and 20 ms read 3.1, 4.2 and
22.1 ms (2 vs 1 as 1.33×), a single thread's 5 ms spin read AVG CPU 104.6 %, and
``--max-cpu-time 1500us -- true`` failed at 2.0 ms.

The forked child now measures itself (:func:`~edgeprof.backends._process.take_exec`): it
reads its own thread CPU clock once it has joined and again just before the exec, the run's
CPU time leaves out the difference, and the wall time starts at its stamp just before the
exec; both are kept in the result (``cpu.spawn_s``, ``cpu.spawn_wall_s``), not hidden.  The
exec's teardown of the child's copy of edgeprof comes after that stamp and stays in
(docs/method.md).  A first version read the group in the parent after the exec instead,
which under load took in the workload's own CPU (a 2 ms spin read 1.35 ms) and started the
wall time late (``true`` at 113 % of one CPU).  Docker cannot say when runc's exec
happened: its figures keep their own window (:data:`WINDOW`)."""


def without_spawn(final: Counters, spawn_cpu_us: int | None) -> Counters:
    """``final`` with the CPU time of edgeprof's spawn (:data:`SPAWN`) taken out of the
    total, never below 0.  The user and system times are left: the result splits the
    total by their ratio (:func:`cpu_split`), and on cgroup v1 they are tick-sampled,
    too coarse to hold a millisecond's spawn."""
    if spawn_cpu_us is None or final.cpu_usage_us is None:
        return final
    return final._replace(cpu_usage_us=max(0, final.cpu_usage_us - spawn_cpu_us))


def own_window(
    final: Counters, before: Counters | None, before_at: float | None, wall: float
) -> tuple[Counters, float]:
    """(the counters of the rates over time — CPU time, CPU and I/O pressure — and the window's
    length in s): the whole run's and its wall time where the group began empty (``before``
    is ``None``); from ``before`` (read ``before_at`` s into the wall time) to the exit where
    the group held a set-up first (:data:`WINDOW`)."""
    if before is None or before_at is None:
        return final, wall

    def since(now: int | None, then: int | None) -> int | None:
        return None if now is None or then is None else max(0, now - then)

    windowed = final._replace(
        cpu_usage_us=since(final.cpu_usage_us, before.cpu_usage_us),
        cpu_some_us=since(final.cpu_some_us, before.cpu_some_us),
        cpu_full_us=since(final.cpu_full_us, before.cpu_full_us),
        io_some_us=since(final.io_some_us, before.io_some_us),
        io_full_us=since(final.io_full_us, before.io_full_us),
    )
    return windowed, wall - before_at


SPLIT_TICKS = 5
"""A run with less CPU time than this many scheduler ticks has no user/system split.  The
kernel splits a task's exact runtime by the user and system ticks it sampled
(``cputime_adjust`` in kernel/sched/cputime.c: cgroup v2's ``cpu.stat``, v1's
``cpuacct.usage_user``/``_sys`` as edgeprof scales them, ``/proc/PID/stat``), so a run of a
few ticks has a split in steps of a fifth or coarser: a tester's ``busy`` runs of 17 ms of
mostly system time read ``user_s 0.0`` beside a tick-sampled ``system_s``, stored as if
exact."""


def cpu_split(
    total_us: int | None, user_us: int | None, system_us: int | None, hz: int | None
) -> tuple[float | None, float | None]:
    """The user and system seconds of the exact ``total_us``, split by the ratio of the
    tick-sampled ``user_us``/``system_us`` (cgroup v1's ``cpuacct.usage_user``/``_sys`` and
    Docker's on v1 come unscaled; v2's ``cpu.stat`` is already scaled this way), in whole
    microseconds, the counters' unit, that add up to the total (a float ratio had written
    ``system_s: 0.016858500000000002``).  ``None`` (not measured, never 0) where no tick
    fell in the run (``run -- true``: 0 + 0 beside 2186 µs) or its CPU time is under
    :data:`SPLIT_TICKS` ticks of ``hz`` (of 100 Hz, the coarsest, where it is unknown)."""
    if total_us is None or user_us is None or system_us is None:
        return us_to_s(user_us), us_to_s(system_us)  # no total to scale, or no split
    if total_us == 0:
        return 0.0, 0.0  # no CPU time at all: 0 is measured
    few = total_us < SPLIT_TICKS * 1_000_000 / (hz or 100)
    if user_us + system_us == 0 or few:
        return None, None
    user = round(total_us * user_us / (user_us + system_us))
    return user / 1e6, (total_us - user) / 1e6


UNTIMED_SHARE = 0.1
"""A quota's stalls timed at under this share of the least they take (:func:`untimed_stalls`)
are not the kernel's measure of them."""


def untimed_stalls(
    nr_throttled: int | None, throttled_us: int | None, period_us: int, cpus: float | None
) -> str | None:
    """Why THROTTLED understates the quota's stalls, where the kernel counted them but timed
    them at under :data:`UNTIMED_SHARE` of what a stall of a busy run takes (the period less
    the quota, under a share of one CPU, where one thread stalls so); ``None`` where it
    timed them, there were too few (3) to say, or the share is a CPU or more.  Measured on
    a Linux 6.18 cgroup v1 host: 15 of 30 runs of a 50 ms C spin under ``--cpus 0.5`` read
    ``throttled_time`` 0 with 4-13 stalls, the run's wall time twice its CPU time; a raw
    group read 4.9 ms for 34 stalls of 2.5 ms each (a verifier's)."""
    if nr_throttled is None or throttled_us is None or cpus is None or nr_throttled < 3:
        return None
    if cpus >= 1:  # a stall's length then depends on how many threads shared the quota
        return None
    least_us = nr_throttled * period_us * (1 - cpus)  # a busy thread stalls the rest of it
    if least_us <= 0 or throttled_us >= UNTIMED_SHARE * least_us:
        return None
    return (
        f"the kernel counted {nr_throttled} stalls of the CPU quota but timed them at "
        f"{throttled_us / 1000:.1f}ms in all, under a tenth of the {least_us / 1000:.0f}ms "
        "that many take at this quota: THROTTLED understates them here (the kernel's "
        "throttled_time); the wall time against the CPU time shows the slowdown"
    )
