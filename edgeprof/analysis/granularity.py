"""The kernel's granularity of a run's memory figures: differences under it are no evidence.

A memory cgroup charges pages to its counter in batches: a CPU that charges a page takes
``MEMCG_CHARGE_BATCH`` (64) pages from the group's counter at once and keeps the surplus in
its own stock for the group's next charges (mm/memcontrol.c, ``try_charge`` and
``refill_stock``; include/linux/memcontrol.h, ``#define MEMCG_CHARGE_BATCH 64U``).  The
counter, and so ``memory.peak``/``memory.max_usage_in_bytes`` and every reading of
``memory.current``/``memory.usage_in_bytes``, runs ahead of the pages in use by up to a
batch on each CPU the run charged from: 256 KiB with 4 KiB pages, per CPU.  A tester's
``touchkb K`` (K KiB touched) peaked at 256 KiB for 0 KiB, 500 KiB for both 100 and 300 KiB,
1268 KiB for 1000 and 1264 KiB for 1100; the same ``busy 5`` read 256 and 512 KiB, which had
been called a 100 % outlier ("measure on a quieter machine"), and ``--repeat auto`` had
asked for ~92 runs to resolve 256 KiB against 256 KiB.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import RunResult
from .difference import Difference

CHARGE_BATCH_BYTES = 64 * 4096
"""``MEMCG_CHARGE_BATCH`` pages of 4 KiB (x86-64's, and most arm64 kernels'; a 16 or 64 KiB
page kernel's batch is larger, so this errs small)."""

CHARGED = frozenset({"peak_memory", "avg_memory", "peak_bytes", "avg_bytes"})
"""The figures read from the memory cgroup's counter (metric keys and statistic names); not
the GPU's, which NVML counts."""


def within_granularity(d: Difference, floor: float) -> bool:
    """Whether the whole interval of ``d`` (``b`` less ``a``, in bytes: of the geometric
    means on the logarithms) lies within ``floor`` either way: two figures no further apart
    than the kernel's charge batches, however many runs (``--repeat auto``'s "equivalent")."""
    rel = d.relative_interval()
    if floor <= 0 or rel is None:
        return False
    lo, hi = (d.base * (f - 1) for f in rel)
    return -floor <= min(lo, hi) and max(lo, hi) <= floor


def charge_granularity(key: str, runs: Sequence[RunResult]) -> float:
    """The bytes under which two of ``runs``' figures of ``key`` (a metric key or statistic
    name) are not told apart: a charge batch per CPU the runs could charge from (their
    cpuset's, else their host's), the most of any run; 0 for another figure, and for the
    process backend's (resident pages, read page by page)."""
    if key not in CHARGED:
        return 0.0
    cpus = [
        len(r.limits.cpuset) if r.limits.cpuset else r.host.cpus
        for r in runs
        if r.mechanism != "process"
    ]
    return float(CHARGE_BATCH_BYTES * max(cpus)) if cpus else 0.0
