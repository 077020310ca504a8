"""Resolving requested limits against what the host offers, and the thread-pool variables."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence

from ..backends import Backend
from ..cpu_units import CFS_PERIOD_US, format_cpuset, format_period, shortest_period_us
from ..errors import CpusOverHost, LimitError
from ..model import CpuStats, Limits
from ..units import format_binary, format_seconds
from .sampler import TASK_SCAN_S

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

MKL_EXACT = {"MKL_DYNAMIC": "FALSE"}
"""Given with a device's pool sizes
(:attr:`~edgeprof.analysis.device_setting.DeviceSetting.thread_env`), which may be more threads
than this host has cores: MKL otherwise caps its count at the host's physical cores, and
PyTorch's x86 builds size their own pool from MKL's. Measured here (2 cores, torch 2.13.0+cpu,
MKL 2024.2): ``OMP_NUM_THREADS=4`` (with ``MKL_NUM_THREADS=4`` too, and under ``taskset -c 0``
or a 4-core board's 0.6-CPU quota) gave ``torch.get_num_threads()`` 2; with
``MKL_DYNAMIC=FALSE``, 4 (``torch.set_num_threads(4)`` gives 4 either way). OpenBLAS and
onnxruntime do not read it."""

OVER_HOST_HINT = "--allow-over-host to run anyway"
"""How a refusal of a limit beyond the host's names its way out (``run``, ``fit``, ``bench``,
``layers profile``)."""


def own_affinity() -> frozenset[int]:
    """The CPUs this process may run on (``taskset``, a Slurm or container allocation)."""
    return frozenset(os.sched_getaffinity(0))


def allowed_cpus(backend: Backend) -> tuple[int, ...]:
    """The CPUs a run of ``backend`` may be pinned to: its groups' effective cpuset and, for
    a workload that is this process's child, this process's own affinity.

    The affinity counts because it is the allocation edgeprof was given: joining a cpuset
    group replaces a task's affinity with the group's CPUs, so a run under ``taskset -c 3``
    would otherwise leave core 3 for core 0.  A container is the daemon's child, not ours:
    our affinity never bound it, and a remote daemon's CPUs are another machine's, so the
    Docker backend's list (the daemon's ``NCPU``) is used as it is.
    """
    available = backend.available_cpus()
    if not backend.runs_on_host:
        return available
    mine = own_affinity()
    allowed = tuple(c for c in available if c in mine)
    if not allowed:
        raise LimitError(
            f"no CPU is both in the run groups' cpuset ({format_cpuset(available)}) and in "
            f"edgeprof's own affinity ({format_cpuset(sorted(mine))})"
        )
    return allowed


def host_memory(backend: Backend) -> tuple[int | None, str]:
    """The most memory a run may be given here and where that figure comes from: the
    machine's ``MemTotal``, or a lower limit of a group the runs are made under (a CI
    container's ``--memory``: a run there was OOM-killed at 284 MiB under ``--memory 1g``,
    blamed on the 1 GiB)."""
    total, source = backend.memory_total(), "MemTotal"
    for c in backend.memory_ceilings():
        if total is None or c.limit < total:
            total, source = c.limit, c.source
    return total, source


def resolve(
    limits: Limits,
    available: tuple[int, ...],
    *,
    memory: int | None = None,
    allow_over_host: bool = False,
    memory_source: str = "MemTotal",
    possible: frozenset[int] | None = None,
) -> tuple[Limits, bool]:
    """Validate ``limits`` against the CPUs a run may use here and the host's ``memory``
    (bytes, :func:`host_memory`, named by ``memory_source``; ``None``: not checked).

    Returns the limits to apply and whether edgeprof chose the cpuset itself: an integer
    ``cpus`` is pinned to that many cores when the host has them, so a
    1-core device is simulated by one core, not by slices of two.  The cores given here are
    the first ones; :mod:`edgeprof.measure.leases` then takes free ones instead.

    ``allow_over_host`` (``--allow-over-host``) lets through a ``cpus`` above the CPUs there
    are, a ``cpuset`` naming others, and a memory limit above the host's memory: the user
    knows better than the figures (a CPU outside edgeprof's affinity, a quota meant as no
    limit); what the kernel refuses then fails the run's launch.  Such a ``cpus`` is not
    pinned (there are not as many cores to pin it to).

    A ``cpuset`` CPU outside ``possible`` (the machine's CPUs, :meth:`Backend.possible_cpus`;
    ``None``: unknown) is refused whatever ``allow_over_host``: no figure is wrong there, the
    CPU does not exist.  ``--cpuset 5`` on a 2-CPU host was told "--allow-over-host to run
    anyway", and that run failed at launch with the kernel's ERANGE (a tester's).
    """
    avail = format_cpuset(available)
    over_memory = memory is not None and limits.memory is not None and limits.memory > memory
    if over_memory and not allow_over_host:
        raise LimitError(
            f"--memory {format_binary(limits.memory)} exceeds the memory a run may have "
            f"here, {format_binary(memory)} ({memory_source}); {OVER_HOST_HINT}"
        )
    if limits.cpu_period_us is not None and limits.cpus is None:
        raise LimitError(
            f"--cpu-period {format_period(limits.cpu_period_us)} is the period of a --cpus "
            "quota: give --cpus too"
        )
    if limits.cpuset is not None:
        missing = [c for c in limits.cpuset if c not in available]
        _refuse_absent(limits.cpuset, missing, possible)
        if missing and not allow_over_host:
            raise LimitError(
                f"--cpuset {format_cpuset(limits.cpuset)}: CPU {format_cpuset(missing)} "
                f"is not available here (available: {avail}); {OVER_HOST_HINT}"
            )
    if limits.cpus is not None:
        if limits.cpuset is not None and limits.cpus > len(limits.cpuset):
            # Not the host's figure: the two options contradict each other anywhere.
            raise LimitError(
                f"--cpus {limits.cpus:g} exceeds the {len(limits.cpuset)} CPU(s) of "
                f"--cpuset {format_cpuset(limits.cpuset)}"
            )
        over = limits.cpuset is None and limits.cpus > len(available)
        if over and not allow_over_host:
            raise CpusOverHost(
                f"--cpus {limits.cpus:g} exceeds the {len(available)} CPU(s) available here "
                f"({avail}); {OVER_HOST_HINT}",
                limits.cpus,
                available,
            )
        if limits.cpuset is None and limits.cpus == int(limits.cpus) and not over:
            pinned = available[: int(limits.cpus)]
            return dataclasses.replace(limits, cpuset=pinned), True
    return limits, False


def _refuse_absent(
    cpuset: Sequence[int], missing: Sequence[int], possible: frozenset[int] | None
) -> None:
    """Refuse a ``cpuset`` whose ``missing`` CPUs (not available to the run) include one the
    machine does not have: no option makes such a CPU usable."""
    if possible is None:
        return
    absent = [c for c in missing if c not in possible]
    if absent:
        which = "CPUs" if len(absent) > 1 else "CPU"
        raise LimitError(
            f"--cpuset {format_cpuset(cpuset)}: {which} {format_cpuset(absent)} "
            f"{'do' if len(absent) > 1 else 'does'} not exist on this machine (its CPUs: "
            f"{format_cpuset(sorted(possible))})"
        )


def device_refusal(device: str, exc: LimitError, replaced: Sequence[str] = ()) -> LimitError:
    """``exc``, a limit this host cannot honour, as ``device``'s (``replaced``: the options
    that replaced the device's values).  A ``--cpus`` above the host's CPUs names ``--cpus
    N``, their count, before ``--allow-over-host``: it replaces the device's CPUs alone, and
    keeps its memory on CPUs the host has, as docs/usage.md does.  A tester's
    ``--device coral-dev-board`` on 2 CPUs was told only of ``--allow-over-host``, whose run is
    labelled ``cpus=4`` on 2 CPUs with ``OMP_NUM_THREADS=4``, and a library caller was not
    told the device at all."""
    if not isinstance(exc, CpusOverHost):
        return LimitError(f"--device {device}: {exc}")
    n = len(exc.available)
    whose = "" if "--cpus" in replaced else " (the device's)"
    return LimitError(
        f"--device {device}: --cpus {exc.cpus:g}{whose} exceeds the {n} CPU(s) available "
        f"here ({format_cpuset(exc.available)}); --cpus {n} replaces the device's CPUs and "
        f"keeps its memory, or {OVER_HOST_HINT}"
    )


def over_host(
    limits: Limits,
    available: tuple[int, ...],
    memory: int | None,
    memory_source: str = "MemTotal",
) -> list[str]:
    """What ``--allow-over-host`` let through, as the run's warnings: the report's
    ``cpus=4`` on a 2-CPU host is a quota the host cannot fill, so its figures are this
    host's, not those of a device of that size."""
    out = []
    if limits.cpus is not None and limits.cpuset is None and limits.cpus > len(available):
        out.append(
            f"--cpus {limits.cpus:g} is more than the {len(available)} CPU(s) this run may use "
            f"({format_cpuset(available)}): it had at most {len(available)}, whatever the "
            "quota (--allow-over-host)"
        )
    if memory is not None and limits.memory is not None and limits.memory > memory:
        out.append(
            f"--memory {format_binary(limits.memory)} is more than the "
            f"{format_binary(memory)} a run may have here ({memory_source}): that, not the "
            "limit, bounded the run (--allow-over-host)"
        )
    return out


def kernel_memory(memory: int, page: int | None) -> int:
    """The memory limit the kernel holds for ``memory`` bytes: whole ``page``-byte pages,
    rounded down, by cgroup v1's ``memory.limit_in_bytes`` and v2's ``memory.max`` alike (a
    container's too: Docker writes the bytes asked); ``memory`` as asked where the page is
    not known (``None``).  ``--memory 100000001`` reads back 99999744 on this host, and the
    result had recorded 100000001 and judged the fit against it (a researcher's)."""
    return memory if page is None else memory // page * page


def rounded_memory(limits: Limits, page: int | None) -> list[str]:
    """A ``--memory`` not in whole pages, as the run's warning (said once in a report, as every
    run of the setting has it): the limit the run had, and the one its result records and
    judges the fit against, is the kernel's (:func:`kernel_memory`)."""
    if limits.memory is None:
        return []
    held = kernel_memory(limits.memory, page)
    if held == limits.memory:
        return []
    return [
        f"--memory {limits.memory} is not a whole number of {page}-byte pages: the kernel "
        f"holds {held} bytes ({format_binary(held)}), which the result records as the limit "
        "and judges the fit against"
    ]


def outer_room(limits: Limits, backend: Backend) -> list[str]:
    """A ``--memory`` above the room an enclosing group leaves (its limit less what its
    processes, edgeprof's own among them, use now:
    :class:`~edgeprof.backends.host_resources.Ceiling`),
    as the run's warning: the kernel then OOM-kills the run below its limit, and a verdict
    read alone blames the limit.  Seen: ``--memory 298m`` in a 300 MiB group, OOM-killed
    at a peak of 286.1 MiB and called "does not fit" (a tester's); `fit` already caps its
    search at the room (``sweeps/fit.py``)."""
    want = limits.memory
    if want is None:
        return []
    for c in backend.memory_ceilings():
        if c.room is not None and c.room < want <= c.limit:
            return [
                f"--memory {format_binary(want)} is more than the {format_binary(c.room)} left "
                f"under {c.source} ({format_binary(c.limit)}, less what its processes use, "
                "edgeprof's own among them): an OOM kill below the limit can be that group's, "
                "not this limit's"
            ]
    return []


FRACTIONAL_PERIOD_US = 5000
"""The CFS period for a quota that can bind, unless asked otherwise (``--cpu-period``).

A quota is a share of each period: the group runs at full speed until the quota is spent,
then stalls for the rest of the period.  With Docker's 100 ms, ``--cpus 0.5`` is a full-speed
core that stops for 50 ms; an iteration shorter than that is either not slowed at all or
slowed by a whole stall, so percentiles measure the stall pattern, not a slower core.  A
period well under an iteration spreads the stalls evenly over it.  Measured with
``benchmarks/cpu_period.py`` (5 ms iterations on one core, table in
``benchmarks/README.md``): see there for the figures behind this value."""


def cpu_period_us(limits: Limits, allowed: int | None) -> int | None:
    """The period to apply with ``limits`` (resolved: the cpuset chosen) on ``allowed`` CPUs
    (:func:`quota_can_stall`), ``None`` without a ``cpus`` quota.

    The user's period if given; Docker's 100 ms where the quota cannot bind (a share of at
    least as many CPUs as the run can use: no stall ever happens, and a long period costs the
    fewest timer wake-ups); else :data:`FRACTIONAL_PERIOD_US`, lengthened where the quota
    would be under the kernel's 1 ms (a share below half a CPU).
    """
    if limits.cpus is None:
        return None
    if limits.cpu_period_us is not None:
        return limits.cpu_period_us
    if not quota_can_stall(limits, allowed):
        return CFS_PERIOD_US
    return max(FRACTIONAL_PERIOD_US, shortest_period_us(limits.cpus))


def quota_can_stall(limits: Limits, allowed: int | None) -> bool:
    """A ``cpus`` quota that the run can exhaust: a share of fewer CPUs than it can use, its
    cpuset's (resolved limits: the cpuset is known) or else the ``allowed`` CPUs
    (:func:`allowed_cpus`; ``None``: not known, taken as more than any quota).  An integer
    share on exactly as many cores never stalls, nor does a share of more CPUs than the host
    has (``--cpus 4 --allow-over-host`` on 2 CPUs): its tasks can never run on more CPUs than
    there are.  That run had been given the 5 ms period of a quota that can stall, and its
    warning spoke of held time "beyond the quota's stalls" (a researcher's)."""
    if limits.cpus is None:
        return False
    cores = len(limits.cpuset) if limits.cpuset is not None else allowed
    return cores is None or limits.cpus < cores


def thread_env(
    limits: Limits, inherited: Mapping[str, str], user: Mapping[str, str]
) -> dict[str, str]:
    """Thread-count variables for a limited run, unless the user set them; those not set are
    sized to the count the user gave for another of them (:func:`matched_threads`), else to
    the CPUs (:func:`thread_count`).

    Thread pools size themselves from the visible cores, not from the CPU quota; an 8-thread
    pool throttled to one CPU is not how a one-core device behaves.
    """
    n = thread_count(limits)
    if n is None:
        return {}
    return matched_threads(dict.fromkeys(THREAD_VARS, str(n)), inherited, user)


def given_count(inherited: Mapping[str, str], user: Mapping[str, str]) -> str | None:
    """The thread count the user gave in one of :data:`THREAD_VARS`: ``user``'s (``-E``)
    first, else the ``inherited`` environment's, each in :data:`THREAD_VARS`' order, as a
    whole number above 0; ``None`` where none is (an empty value, or OpenMP's per-level list
    ``4,2``, which MKL and OpenBLAS would not read)."""
    for source in (user, inherited):
        for v in THREAD_VARS:
            value = source.get(v, "").strip()
            if value.isascii() and value.isdigit() and int(value) > 0:
                return str(int(value))
    return None


def matched_threads(
    sized: Mapping[str, str], inherited: Mapping[str, str], user: Mapping[str, str]
) -> dict[str, str]:
    """``sized`` (edgeprof's variables and values), less those the user set (``user``:
    ``-E``; ``inherited``: the environment, kept), with each of :data:`THREAD_VARS` set to
    the count the user gave for another of them (:func:`given_count`) where there is one.

    Each had been sized on its own: ``-E OMP_NUM_THREADS=4 --cpus 1`` gave the workload
    ``MKL_NUM_THREADS=1`` beside it, and PyTorch's MKL build took MKL's count: a tester's
    ``torch.get_num_threads()`` was 1 in a run labelled ``OMP_NUM_THREADS=4``
    (``OMP_NUM_THREADS=2`` alone: 2; with ``MKL_NUM_THREADS=1`` added: 1)."""
    count = given_count(inherited, user)
    return {
        v: count if count is not None and v in THREAD_VARS else value
        for v, value in sized.items()
        if v not in inherited and v not in user
    }


def thread_count(limits: Limits) -> int | None:
    """The threads ``limits`` give CPUs for: ⌈cpus⌉, at most the cpuset's count (or that
    count alone); ``None`` without a CPU limit."""
    n: int | None = None
    if limits.cpus is not None:
        n = math.ceil(limits.cpus)
    if limits.cpuset is not None:
        n = len(limits.cpuset) if n is None else min(n, len(limits.cpuset))
    return n


def cpus_given(limits: Limits, allowed: Sequence[int]) -> int | None:
    """The CPUs a run under ``limits`` (resolved) had for its threads at once:
    :func:`thread_count`, at most the ``allowed`` CPUs (a ``--cpus 4`` allowed over a 2-CPU
    host had 2); ``None`` without a CPU limit."""
    n = thread_count(limits)
    return None if n is None else min(n, len(allowed))


def faster_than_device(
    cores: int,
    cpus: float,
    tasks: int | None,
    throttled: int | None,
    cpu: CpuStats | None = None,
    iteration_cpu_s: float | None = None,
) -> str | None:
    """Why a device run (``cores`` emulated by a quota of ``cpus``) was allowed to go faster
    than the device, as a warning; ``None`` where the measurements show no such thing.
    ``iteration_cpu_s``: the CPU time an iteration took (its phase's over its iterations),
    said as what a device core would take for it: a 4-core board at speed 0.25, pinned to
    one host core, had told a user its 18.5 ms iterations "can be faster than the device"
    with no figure, where one of its cores takes 40 ms for their 10 ms of CPU.

    A quota is one number for the group: it slows a task only once the group's share of a
    period is spent.  Measured signs that the quota did not hold the run's tasks to a device
    core (``cpus / cores`` of a host core):

    * ``throttled`` (periods the group was stalled in) is 0: the quota never slowed it;
    * ``cpu.task_speed_pct``, where the run's threads could be read: half of the run's
      thread CPU time ran faster than a device core while runnable, beyond one period's
      quota spread over the threads' 0.5 s readings (where a reading falls in a period)
      and 5 %;
    * else ``tasks`` (the samples' largest ``pids.current``: processes and threads) is under
      the device's cores: the quota allowed each running task at least ``min(1, cpus /
      tasks)`` of a host core.  Tasks that exist are not tasks that ran: ``import numpy``
      under ``OMP_NUM_THREADS=2`` starts an idle OpenBLAS thread, and a single busy loop
      showed 2 tasks under a 2-core device, no warning (a user's report), where its thread
      ran at 0.41 of a host core against the device core's 0.25.

    The average CPU use against the quota is no sign: on a busy host other jobs keep a run
    under its share (4 processes under a 1.2-CPU quota used 0.85 CPU here while the suite
    ran).  A single-threaded loop under a 4-core board at speed 0.3 (1.2 CPUs) ran at a full
    host core, 3.3 times a board core (a tester's measurement); a board whose cores × speed
    is a whole number is pinned to that many cores, where one thread runs at full speed too.
    A sampled peak can miss a short-lived task, so the bound holds for what was seen; extra
    tasks at start-up (a shell, a version manager's shim) only hide the sign."""
    per_core = cpus / cores
    if per_core >= 1:
        return None
    why = []
    if throttled == 0:
        why.append("the quota never stalled it")
    pct = None if cpu is None else cpu.task_speed_pct
    if pct is not None and cpu is not None:
        slack = cpus * (cpu.period_s or 0.0) / TASK_SCAN_S
        if pct / 100 > per_core * 1.05 + slack:
            why.append(
                f"half of its threads' CPU time ran at {pct / 100:.3g} of a host core or "
                "faster while they were runnable (each thread's CPU time and wait, read "
                "every 0.5s)"
            )
    elif tasks is not None and 1 <= tasks < cores and min(1.0, cpus / tasks) > per_core * 1.01:
        least = min(1.0, cpus / tasks)
        why.append(
            f"the samples saw at most {tasks} task(s) (processes and threads) against its "
            f"{cores} cores, and a share of {cpus:g} CPU(s) allowed each running task at "
            f"least {least:.3g} of a host core"
        )
    if not why:
        return None
    # One core has no other for the group's share to go to: what a quota lets through at
    # full speed there is work that idles within its period (the calibration docs' faithful
    # one-thread setting had been told of cores, a user's).
    reason = (
        "a quota slows only work that does not idle within its period"
        if cores == 1
        else "a quota is one number for the group, not a speed per core"
    )
    said = (
        f"this run can be faster than the device, whose cores each do {per_core:.3g} of a host "
        f"core's work: {'; '.join(why)} ({reason})"
    )
    if iteration_cpu_s is not None and iteration_cpu_s > 0:
        said += (
            f"; an iteration's {format_seconds(iteration_cpu_s)} of CPU time takes a core of "
            f"the device about {format_seconds(iteration_cpu_s / per_core)} (on one thread, "
            "waits left out: an estimate)"
        )
    return said
