"""Other tasks on the run's CPUs: a run limited to a device's CPUs measures the device only
while it has them.  A tester's ``--cpus 1`` runs on a host whose both cores another job kept
busy got 49 % of their core, with no throttling and no word: every time was about twice the
device's.

The run's group's ``cpu.pressure`` tells it (PSI; on a hybrid cgroup v1 host, its group on
the unified hierarchy, which the kernel's PSI follows).  ``some`` is time some task of the
run was runnable but not running; ``full``, time none of its tasks ran while one could.
``some`` also counts the run's own threads waiting for each other on too few cores, which
the device would do as well; ``full`` does not (one of them runs), so it is the measure:
the quota's stalls (throttled time, which the kernel counts in both) and other tasks holding
the run's CPUs.  Measured here with ``sh`` spinners on one core: one spinner and a rival,
``full`` 1.35 s of 2 s; two of the run's own, ``some`` 2.03 s and ``full`` 1.00 s (the
rest of the host's load on that core); a quarter-core quota, ``full`` 1.50 s with 0.99 s
throttled.  (The other tasks' CPU time from ``/proc/stat`` was tried first: in the TCG
guest its tick-sampled busy time came out below the run's own exact CPU time, 0 s of others
where a rival had half the core.)
"""

from __future__ import annotations

from collections.abc import Sequence

from ..cpu_units import format_cpuset
from ..model import CpuStats, RunResult
from ..units import format_seconds

HELD_SHARE = 0.1
"""The least share of the run's wall time held off its CPUs (beyond the quota's stalls)
that is warned of: under it the run's figures are within the noise of an idle host's."""

MIN_HELD_S = 0.004
"""Nor less than this: one scheduler tick at ``CONFIG_HZ=250`` (4 ms; 1 ms at 1000, 10 ms at
100, where a shorter hold is still a single tick's work), the granularity at which the
scheduler takes a CPU back from a task that does not block (``sched_tick`` →
``update_curr``/``resched_curr``), so a hold under it may be one other task's wake-up run to
the next tick.  It had been 20 ms, which no run of a few milliseconds can reach whatever its
share: a tester's A/A ``compare`` of ``busy 5`` × 6 twice, one batch held 4.6–9.8 ms of
12.2–17.2 ms (38–57 %) and the other 0.03–2.2 ms of 7.6–9.3 ms, gave wall time "+68.1 %
regression" with no held-off note.  Under this floor and :data:`HELD_SHARE` both, the quiet
batch's runs stay uncontended (its 2.2 ms is 24 % of 9.3 ms, but under a tick); the loaded
batch's are all contended."""


def held_time(s: float) -> str:
    """A held-off time as the warnings say it: ``0.25s`` from a tenth of a second, shorter
    ones in their unit (``7.6ms``): a ms-scale run held off 57 % had been said to be held
    "for 0.01s", and its baseline "for 0.00s", now that :data:`MIN_HELD_S` reaches them."""
    return f"{s:.2f}s" if s >= 0.1 else format_seconds(s)


def held_by_others(
    held_s: float | None, throttled_s: float | None, room_s: float | None = None
) -> float | None:
    """Time other tasks held the run off its CPUs: ``cpu.pressure``'s ``full`` less the
    throttled time (``None`` without a pressure file), at most ``room_s``
    (:func:`quota_room`).  A multi-threaded run's throttled time adds up each CPU's, so it
    can exceed ``full``: then 0, never a guess."""
    if held_s is None:
        return None
    # To the microsecond, both counters' unit: a difference of floats had written
    # 0.13917000000000002 into cells.csv.
    others = max(0.0, held_s - (throttled_s or 0.0))
    return round(others if room_s is None else min(others, room_s), 6)


def quota_room(wall_s: float, cpu_s: float | None, cpus: float | None) -> float | None:
    """The most other tasks can have slowed a run of ``cpus`` (its quota, or its whole
    cores): its wall time less the time those CPUs need for its CPU time (``cpu_s / cpus``);
    ``None`` without either.  Under a quota, ``full`` less the throttled time also holds
    time the quota would have stalled anyway (a task held off in a period leaves its quota
    for later in it), and the kernel's throttled time of identical ``--cpus 0.5`` runs spread
    from 0.19 to 1.02 s here: a run of 1.042 s of CPU in 2.289 s (2.084 s at half a CPU,
    0.205 s beyond it) had been "held … for 1.20s (52% of its wall time)", another at its
    quota's pace exactly "for 0.62s (30%)" (a user's, Linux 6.18)."""
    if cpus is None or cpus <= 0 or cpu_s is None:
        return None
    return max(0.0, wall_s - cpu_s / cpus)


def run_held(r: RunResult) -> float | None:
    """:func:`held_by_others` of a run's result, within its :func:`quota_room`: the one
    reading of a saved run's held-off time (``compare``, budgets, ``fit``, ``calibrate``)."""
    room = quota_room(r.wall_s, r.cpu.total_s, r.limits.cpus)
    return held_by_others(r.cpu.held_s, r.cpu.throttled_s, room)


def run_held_share(r: RunResult) -> float | None:
    """:func:`held_share` of a run's result, within its :func:`quota_room`."""
    room = quota_room(r.wall_s, r.cpu.total_s, r.limits.cpus)
    return held_share(r.wall_s, r.cpu.held_s, r.cpu.throttled_s, room)


def held_share(
    wall_s: float, held_s: float | None, throttled_s: float | None, room_s: float | None = None
) -> float | None:
    """The share of the run's wall time other tasks held it off its CPUs, when it is one
    :func:`contention_warning` warns of (:data:`HELD_SHARE` and :data:`MIN_HELD_S`);
    ``None`` under them or where it cannot be told.  The one test of "contended": the run's
    warning, ``compare``'s and ``calibrate``'s read it here."""
    others = held_by_others(held_s, throttled_s, room_s)
    if others is None or wall_s <= 0 or others < max(MIN_HELD_S, HELD_SHARE * wall_s):
        return None
    # ``full`` is time none of the run's tasks ran, so no more than its wall time: past it,
    # the counter spans more than the run (a container's set-up: busybox ``true`` read 6 ms
    # over a 2 ms wall), and the share cannot be told.
    return None if others > wall_s else others / wall_s


def contention_warning(
    wall_s: float,
    held_s: float | None,
    throttled_s: float | None,
    cpuset: Sequence[int] | None,
    *,
    quota: bool = True,
    limited: bool = True,
    device: str | None = None,
    room_s: float | None = None,
) -> str | None:
    """The run's warning when other tasks held it off its CPUs for a tenth of its time or
    more; ``None`` otherwise, or where it cannot be told.  Worded by what the run had:
    ``quota`` (a ``cpus`` quota: the held time is beyond its stalls), ``limited`` (CPU
    limits), ``device`` (the board its limits emulate).  A plain run on a busy host had been
    told of "the quota's stalls" and "the device's" times (a user's ``edgeprof run --
    python x.py``).  ``room_s``: :func:`quota_room`."""
    share = held_share(wall_s, held_s, throttled_s, room_s)
    others = held_by_others(held_s, throttled_s, room_s)
    if share is None or others is None:
        return None
    where = "its CPUs"
    if cpuset:
        where = f"its CPU{'s' if len(cpuset) > 1 else ''} {format_cpuset(sorted(cpuset))}"
    beyond = " beyond the quota's stalls" if quota else ""
    if device is not None:
        # Not "than device X's": a device of no known speed runs at this host's, and the
        # line read as a claim about the board (an onnxruntime tester's).
        than = f"its limits alone make them (device {device}'s cores here)"
    elif limited:
        than = "its limits alone make them"
    else:
        than = "on an idle host"
    return (
        f"other tasks on this host held the run off {where} for {held_time(others)} "
        f"({share:.0%} of its wall time){beyond}: its times are slower than {than} "
        "(run it on an idle host, or on --cpuset CPUs nothing else uses)"
    )



OWN_WAIT_SHARE = 0.1
"""The least share of the run's uncontended wall time (its wall time less the time other
tasks held it off its CPUs: :func:`held_by_others`) its own tasks waited for each other that
:func:`threads_warning` warns of.  Measured under ``--cpus 1`` (one pinned core): a tester's
onnxruntime model with ``intra_op_num_threads=4`` (5 tasks) waited 0.30–0.36 s of 0.40–0.45 s
(``some``) and was held 0.04 s at most (``full``): 58 % or more, its p95 12.48 ms against
605 µs with one thread (2 tasks).  Here, on a host whose other jobs held the core 72–81 % of
the time: ``torch.set_num_threads(4)`` (7 tasks), 2000 matmuls of 256², waited for itself
0.57 s of the 2.2–2.3 s it was not held off (25–26 %), p95 5.41 ms against 2.54 ms with 1
thread (1 task, 0 s); a pool of 4 threads hashing (``hashlib``, the GIL released) that
shared each of 100 iterations (5 tasks), 0.17 s of 0.24–0.25 s (67–69 %); the same work on
1 pool thread (2 tasks: the main thread waits on the pool), 0.009–0.012 s of 0.24 s (4–5 %).
A tenth, as :data:`HELD_SHARE`: twice the single pool thread's, under half the least
oversubscribed run's.  Of the whole wall time, the contended figures had been 7 % and
14–16 %: a busy host's holding hid the sign."""

MIN_OWN_WAIT_S = 0.02
"""Nor less than this: a few milliseconds of the run's threads waiting for each other are a
wake-up's worth.  (:data:`MIN_HELD_S`, once the same, is a tick now, for short runs held off
by other tasks; this floor was not measured again.)"""

SATURATED = 0.9
"""On more than one CPU, the least share of its CPUs (its quota, or their count) a run's CPU
time must fill over its uncontended wall time for :func:`threads_warning` to count its
``some`` as its own threads' waiting: threads that wait for each other keep the CPUs busy
meanwhile.  ``some`` on several CPUs also counts another task holding one CPU while the
run's thread runs on another: a verifier's onnxruntime model with one intra-op thread (3
tasks, one busy) under ``--cpus 2`` on a host at a load of 5 read 0.11 s of 0.25 s "waited
for each other" with 0.234 s of CPU time, 0.47 of its 2 CPUs, and was told to set 2
threads, slower than its 1.  On one CPU, ``some`` less ``full`` is the run's own waiting
alone (no other CPU to run on), and the check is not made."""


def own_wait(wait_s: float | None, held_s: float | None) -> float | None:
    """Time some of the run's tasks waited for a CPU while another of them ran:
    ``cpu.pressure``'s ``some`` less ``full`` (``None`` without a pressure file).  Other tasks
    holding all of the run's CPUs, and the quota's stalls, count in ``full`` too, so they are
    not in it; on several CPUs, another task holding one of them while the run's thread runs
    on another is (``some`` alone), which is why :func:`threads_warning` also asks for more
    tasks than CPUs."""
    if wait_s is None or held_s is None:
        return None
    return max(0.0, wait_s - held_s)


def threads_warning(
    tasks: int | None,
    cpus: int | None,
    wall_s: float,
    cpu: CpuStats,
    omp: str | None = None,
    share: float | None = None,
    processes: int | None = None,
    device_cores: int | None = None,
    busy: int | None = None,
) -> str | None:
    """The run's warning when it ran more tasks (processes and threads: ``pids_peak``; of
    them, ``busy`` wanted a CPU at once, where known: ``busy_tasks_peak``, which is then
    what is counted, as an idle pool thread waits for no CPU) than
    its ``cpus`` (the CPUs it was given; ``None``: no CPU limit) and they waited for each
    other for :data:`OWN_WAIT_SHARE` of its uncontended wall time or more
    (:func:`own_wait`), and on several CPUs kept them busy (:data:`SATURATED`; ``share``: its
    quota in CPUs, ``None``: none); ``None`` otherwise, or where it cannot be told (no
    pressure file: the process backend, Docker on cgroup v1).  ``omp``: the
    ``OMP_NUM_THREADS`` the run had; ``processes``: how many of its tasks were processes
    (``processes_at_peak``; ``None``: not counted), which words the advice (:func:`_advice`).

    The wait is the device's too (its cores are as few), so the figures are not wrong: the
    thread count is.  edgeprof sets ``OMP_NUM_THREADS`` to the CPU count, which torch starts
    from but onnxruntime's ``intra_op_num_threads`` does not read; choosing them is what a
    user tuning threads does (a tester's 4-thread model on 1 CPU: nothing said).

    ``device_cores``: the cores of the device a ``--device`` run's quota emulates.  The
    tasks are then counted against them, not against this host's ``cpus``: the quota
    time-shares the device's pool on fewer host CPUs by design (edgeprof sizes the pools to
    the device's cores), so tasks that wait for each other here but fit the device's cores
    would not wait there.  A tester's 4-core board at speed 0.15 (``cpus=0.6``, 1 CPU)
    peaked at 3 tasks that waited 0.81 s (23 %) and had been told "more threads than CPUs
    slow it here and on the device (set the framework's thread count to 1 …)", beside
    edgeprof's own ``OMP_NUM_THREADS=4`` and a warning that the run is faster than the
    device.  ``cpus`` still decides whether ``some`` on several CPUs is the run's own
    waiting (:data:`SATURATED`): that is about this host's counters."""
    own = own_wait(cpu.wait_s, cpu.held_s)
    limit = cpus if device_cores is None or cpus is None else device_cores
    counted = tasks if busy is None else busy
    if counted is None or limit is None or cpus is None or own is None or counted <= limit:
        return None
    room = quota_room(wall_s, cpu.total_s, share)  # as the run's own warning takes it
    others = held_by_others(cpu.held_s, cpu.throttled_s, room) or 0.0
    free = wall_s - others
    if free <= 0 or own < max(MIN_OWN_WAIT_S, OWN_WAIT_SHARE * free):
        return None
    if cpus > 1:  # several CPUs: only a run that kept them busy (SATURATED)
        filled = min(cpus, share if share is not None else cpus) * free
        if cpu.total_s is None or cpu.total_s < SATURATED * filled:
            return None
    # Said of the whole wall time unless other tasks held the run off long enough to be
    # warned of (the run's other warning): then of what they left, as tested.
    share, of = own / wall_s, "its wall time"
    if held_share(wall_s, cpu.held_s, cpu.throttled_s, room) is not None:
        share, of = own / free, f"the {free:.2f}s other tasks did not hold it off its CPUs"
    waited = f"{own:.2f}s ({share:.0%} of {of})"
    return _advice(
        counted, limit, processes, omp, waited, device=device_cores is not None,
        every=None if busy is None else tasks,
    )  # fmt: skip


def _advice(
    tasks: int,
    cpus: int,
    processes: int | None,
    omp: str | None,
    waited: str,
    *,
    device: bool = False,
    every: int | None = None,
) -> str:
    """:func:`threads_warning`'s line, its advice by what the ``tasks`` were: more
    ``processes`` than ``cpus``, a pool or workers to shrink; else threads of the few
    processes there were (or not counted), the framework's thread count.  A fork bomb's 32
    one-thread processes under ``--pids 32 --cpus 0.5`` had been told to set onnxruntime's
    ``intra_op_num_threads`` (a tester's): advice wrong for a multiprocessing pool or a
    DataLoader's workers too.  ``device``: ``cpus`` are the emulated device's cores, which
    the line names as such (the wait measured here is the quota's time-sharing of them, so
    it is not said to slow the run "here").

    Threads are said to slow the device only where the script set their count: a
    framework's default pool follows the cores of the host it runs on, which edgeprof's
    limits do not hide.  Measured here (2 cores, onnxruntime 1.32): a default session made a
    2-thread intra-op pool under ``--cpus 1``, ``--cpuset 0`` and a 1-core device alike
    (and under ``taskset -c 0`` or ``OMP_NUM_THREADS=1`` outside edgeprof), where a 1-core
    board's would have 1; its extra CPU time (0.582 s against 0.403 s with
    ``intra_op_num_threads=1``, the same 30 inferences) is the emulation's, and the advice
    had said "slow it on the device" (a tester's).  torch's inter-op pool is sized from the
    host's cores too (2 under ``--cpus 1``).

    ``every``: all the run's tasks where ``tasks`` are those busy at once.  Processes that
    take turns on too few CPUs stretch each task's time, not the work's total: a pool of 2
    workers on 1 CPU, 20 tasks of 50 ms, took 1.07–1.09 s of CPU and wall alike with 1
    worker (a user's), so the line says what stretches."""
    units = f"core{'s' if cpus > 1 else ''}" if device else f"CPU{'s' if cpus > 1 else ''}"
    on = f", more than the device's {cpus} {units}," if device else f" on {cpus} {units},"
    where = "on the device" if device else "here and on the device"
    if processes is not None and processes > cpus:
        if every is not None:
            made = f" ({tasks} of its tasks busy at once)"
        else:
            made = "" if tasks <= processes else f" ({tasks} tasks with their threads)"
        return (
            f"the run peaked at {processes} processes{made}{on} and they waited for each "
            f"other {waited}: processes that take turns on {cpus} {units} stretch each "
            f"one's time {where}, if not the work's total (set the pool or worker count: "
            "multiprocessing's Pool(processes=…), a DataLoader's num_workers)"
        )
    # onnxruntime's pool ignores OMP_NUM_THREADS (its PyPI builds use no OpenMP); torch starts
    # from it (OMP_NUM_THREADS=1: torch.get_num_threads() is 1), so it is said of the former
    # only: "they do not read OMP_NUM_THREADS" had been false of torch (a tester's).
    told = "" if omp is None else f", which does not read OMP_NUM_THREADS ({omp} in this run)"
    peaked = f"peaked at {tasks} tasks (processes and threads)"
    if every is not None:
        peaked = f"kept {tasks} tasks busy at once (of {every} processes and threads)"
    return (
        f"the run {peaked}{on} and they waited for "
        f"each other {waited}: more threads than {'cores' if device else 'CPUs'} slow it "
        f"{where} where the script sets that count itself, but a framework's default pool "
        "is sized from the host's cores, not the device's (onnxruntime's intra-op pool, "
        "torch's inter-op pool), so a device run needs its count set explicitly (to "
        f"{cpus}: onnxruntime's SessionOptions.intra_op_num_threads{told}; "
        f"torch.set_num_threads({cpus}) and torch.set_num_interop_threads({cpus}))"
    )
