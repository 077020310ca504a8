"""Readings that do not come from a cgroup file: the Docker stats API (stats mode, for a
daemon on another host) and a container's network counters from ``/proc``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model import Counters


def parse_net_dev(text: str) -> tuple[int, int]:
    """``/proc/<pid>/net/dev`` → (received, transmitted) bytes, loopback excluded."""
    rx = tx = 0
    for line in text.splitlines()[2:]:
        iface, _, data = line.partition(":")
        if iface.strip() == "lo" or not data:
            continue
        cols = data.split()
        rx += int(cols[0])
        tx += int(cols[8])
    return rx, tx


def stats_counters(s: Mapping[str, Any]) -> Counters | None:
    """One reply of the stats API (``stats(stream=False, one_shot=True)``) as counters;
    ``None`` when it holds no CPU usage (the container is gone: keep the last reading).

    The API has no high-water mark: ``memory_peak`` stays ``None`` and the peak is sampled.
    Block I/O is summed over every device listed: which of them pass their I/O on to another
    (:func:`~edgeprof.backends._disks.passed_on`) is in the daemon host's ``/sys``, not here.
    """
    cpu = s.get("cpu_stats") or {}
    usage = cpu.get("cpu_usage") or {}
    if not usage.get("total_usage"):
        return None
    mem = s.get("memory_stats") or {}
    stats = mem.get("stats") or {}
    thr = cpu.get("throttling_data") or {}
    rd = wr = 0
    for e in (s.get("blkio_stats") or {}).get("io_service_bytes_recursive") or []:
        op = str(e.get("op", "")).lower()
        rd += e.get("value", 0) if op == "read" else 0
        wr += e.get("value", 0) if op == "write" else 0
    nets = (s.get("networks") or {}).values()
    return Counters(
        cpu_usage_us=usage["total_usage"] // 1000,
        cpu_user_us=(usage.get("usage_in_usermode") or 0) // 1000,
        cpu_system_us=(usage.get("usage_in_kernelmode") or 0) // 1000,
        nr_periods=thr.get("periods"),
        nr_throttled=thr.get("throttled_periods"),
        throttled_us=None if thr.get("throttled_time") is None else thr["throttled_time"] // 1000,
        memory_current=mem.get("usage"),
        memory_inactive_file=stats.get("total_inactive_file", stats.get("inactive_file")),
        io_read_bytes=rd,
        io_write_bytes=wr,
        net_rx_bytes=sum(n.get("rx_bytes", 0) for n in nets) if nets else None,
        net_tx_bytes=sum(n.get("tx_bytes", 0) for n in nets) if nets else None,
        pids_current=(s.get("pids_stats") or {}).get("current"),
    )
