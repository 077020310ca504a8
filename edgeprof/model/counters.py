"""What a run's counters are read as: the raw cumulative counters a backend reads of a run's
group (:class:`Counters`), and the row of the time series the sampler makes of them
(:class:`Sample`, one line of ``samples.csv``).  Named tuples in base units; the result they
are summed into is :mod:`.results`."""

from __future__ import annotations

from typing import NamedTuple


class Counters(NamedTuple):
    """Raw cumulative counters of one run's group at one instant, in base units.

    Backends fill what their kernel offers and leave the rest ``None``.  A named tuple, not a
    dataclass: one is built per sample, at up to 10 kHz, and a tuple costs a fifth as much.
    """

    cpu_usage_us: int | None = None
    cpu_user_us: int | None = None
    cpu_system_us: int | None = None
    nr_periods: int | None = None
    nr_throttled: int | None = None
    throttled_us: int | None = None
    memory_current: int | None = None
    memory_peak: int | None = None
    """The kernel's own high-water mark (v2 ``memory.peak`` ≥ 5.19, v1 ``max_usage_in_bytes``)."""
    memory_inactive_file: int | None = None
    memory_anon: int | None = None
    memory_file: int | None = None
    """Page cache including tmpfs and shared memory (v2 ``file``, v1 ``total_cache``)."""
    memory_active_file: int | None = None
    memory_shmem: int | None = None
    memory_kernel: int | None = None
    """v2 ``kernel`` (where a kernel lacks the key: the sum of the parts below), v1
    ``memory.kmem.usage_in_bytes``."""
    memory_slab: int | None = None
    memory_kernel_stack: int | None = None
    memory_pagetables: int | None = None
    memory_percpu: int | None = None
    memory_sock: int | None = None
    memory_dirty: int | None = None
    """Page cache of the group's dirtied and not yet written back (v1 ``total_dirty``)."""
    memory_writeback: int | None = None
    """Page cache of the group's being written back now (v1 ``total_writeback``).  Read on
    cgroup v1 only, where the block I/O written leaves out the kernel's writeback of them
    (:class:`~edgeprof.measure.dirtied.Dirtied`); v2 charges it to the group."""
    refaults_anon: int | None = None
    refaults_file: int | None = None
    major_faults: int | None = None
    pages_scanned: int | None = None
    pages_reclaimed: int | None = None
    memory_events_high: int | None = None
    memory_events_max: int | None = None
    memory_events_oom: int | None = None
    memory_some_us: int | None = None
    """cgroup v2 ``memory.pressure``: cumulative µs some / all tasks stalled on memory."""
    memory_full_us: int | None = None
    oom_kills: int | None = None
    io_read_bytes: int | None = None
    io_write_bytes: int | None = None
    net_rx_bytes: int | None = None
    net_tx_bytes: int | None = None
    pids_current: int | None = None
    pids_peak: int | None = None
    """The kernel's high-water mark of the group's processes and threads (``pids.peak``,
    Linux ≥ 6.1; read only for the totals)."""
    pids_refused: int | None = None
    """Forks and thread starts the kernel refused at the group's ``pids.max`` (the ``max``
    line of ``pids.events``, cgroup v1 and v2)."""
    cpu_some_us: int | None = None
    """``cpu.pressure`` (PSI, the group's on the unified hierarchy): cumulative µs some / all
    of its tasks were runnable but not running (waiting for a CPU, or held by the quota)."""
    cpu_full_us: int | None = None
    io_some_us: int | None = None
    """``io.pressure`` (PSI, the group's on the unified hierarchy): cumulative µs some / all
    of its tasks waited on block I/O (in ``io_schedule``, which psi counts as ``TSK_IOWAIT``: a
    read from storage, a page still under writeback)."""
    io_full_us: int | None = None


class Sample(NamedTuple):
    """One row of the time series (also one row of ``samples.csv``, in this order).  A named
    tuple, not a dataclass: one is made per sample, and a frozen dataclass of these ten fields
    took 3.1 µs to build against 0.7 µs (``timeit`` here; at 1 kHz, a quarter of a percent
    of a core)."""

    t_s: float
    """Seconds since the workload was spawned (same monotonic clock as ``wall_s``)."""
    cpu_usage_s: float | None
    cpu_pct: float | None
    """CPU % over the interval since the previous sample (100 = one CPU)."""
    memory_bytes: int | None
    working_set_bytes: int | None
    io_read_bytes: int | None
    io_write_bytes: int | None
    net_rx_bytes: int | None
    net_tx_bytes: int | None
    pids: int | None

    @staticmethod
    def columns() -> list[str]:
        return list(Sample._fields)
